#!/bin/sh
# t_trained.sh: the models that ship with attnviz (assets/models, made by
# assets/models/train.py). Their tokenizer, read by attnviz's own C
# tokenizer, gives for every string of assets/models/goldens.tsv the ids that
# tokenizers.js (the npm package @huggingface/tokenizers) gave
# (assets/models/make_goldens.mjs): English, Chinese, runs of spaces, tabs,
# newlines, <|endoftext|>. The folder holds what the loader reads, and
# heads.json keeps what the training made (previous-token heads in layer 0; the
# induction head did not form), so a retrained model that lost them fails
# here. No Python, no node: the goldens are committed.
# Run from the repository root; $ATTNVIZ is the binary. Prints "ok - NAME" /
# "not ok - NAME" lines and ends with "N passed, N failed" (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

out=$tmp/out
models=assets/models
unset ATTNVIZ_MODELS
TAB=$(printf '\t')

# ------------------------------------------------------------ the tokenizer's ids

n=0
while IFS="$TAB" read -r esc ids; do
	n=$((n + 1))
	text=$(printf '%b' "$esc")
	name=$(printf '%s' "$esc" | tr '\\' '/') # echo (tests/lib.sh) would read the escapes
	LC_ALL=C.UTF-8 "$ATTNVIZ" --tokenize "$text" --model $models/tiny-gpt2 >"$out" 2>"$err" </dev/null
	rc=$?
	got=$(awk '{ printf "%s%s", sep, $2; sep = " " }' "$out")
	if [ "$rc" -eq 0 ] && [ "$got" = "$ids" ] && [ ! -s "$err" ]; then
		ok "tokenize golden $n ($name)"
	else
		not_ok "tokenize golden $n ($name)" "exit $rc; ids [$got], want [$ids]; stderr: $(head -c 200 "$err")"
	fi
done <$models/goldens.tsv
check "goldens: at least 20 strings" [ "$n" -ge 20 ]

# ------------------------------------------------------------ the folders

for m in tiny-gpt2; do
	for f in config.json model.safetensors tokenizer.json heads.json; do
		check "$m: $f is there" [ -s "$models/$m/$f" ]
	done
	size=$(cat "$models/$m"/* | wc -c)
	check "$m: under 2 MB ($size bytes)" [ "$size" -lt 2000000 ]
	check "$m: its reference numbers are committed" [ -s "tests/models/$m.ref.json" ]
done
expect "tiny-gpt2 is a gpt2" 'grep -q "\"model_type\": \"gpt2\"" $models/tiny-gpt2/config.json'

# ------------------------------------------------------------ the heads the training made

# heads.json's "best" block: the best score of each kind and where it is ("L0H2")
best() { sed -n "s/^  \"$2\": \\[\\([0-9.]*\\), \"\\(L[0-9]H[0-9]\\)\"\\].*/\\1 \\2/p" "$models/$1/heads.json"; }
# at_least A B: A >= B for decimals
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }
# The previous-token heads that formed (about 0.5: README.md); the induction head did
# not form yet, so nothing is asserted of it here (it is reported, in the test's name).
read -r score head <<EOF
$(best tiny-gpt2 previous_token)
EOF
expect "tiny-gpt2: a previous-token head in layer 0 above 0.45 ($score $head)" 'at_least "$score" 0.45 && [ "${head#L0}" != "$head" ]'
read -r score head <<EOF
$(best tiny-gpt2 induction)
EOF
expect "tiny-gpt2: heads.json reports the best induction head of layer 1 ($score $head)" '[ -n "$score" ] && [ "${head#L1}" != "$head" ]'

finish
