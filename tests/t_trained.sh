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

for m in tiny-gpt2 induction; do
	for f in config.json model.safetensors tokenizer.json heads.json; do
		check "$m: $f is there" [ -s "$models/$m/$f" ]
	done
	size=$(cat "$models/$m"/* | wc -c)
	check "$m: under 2 MB ($size bytes)" [ "$size" -lt 2000000 ]
	check "$m: its reference numbers are committed" [ -s "tests/models/$m.ref.json" ]
done
expect "tiny-gpt2 is a gpt2" 'grep -q "\"model_type\": \"gpt2\"" $models/tiny-gpt2/config.json'
expect "induction is a llama whose MLP is one unit (attention only: its weights are zero)" \
	'grep -q "\"model_type\": \"llama\"" $models/induction/config.json && grep -q "\"intermediate_size\": 1," $models/induction/config.json'

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

# ------------------------------------------------------------ the induction model (assets/models/train_induction.py)

JSONCMP=$BUILD/tests/jsoncmp
ref=tests/models/induction.ref.json
# its prompts as text and as ids, one a line: "prompt_text":["A B C D A B C",…] and "prompts":[{…"ids":[…]…},…]
sed 's/.*"prompt_text":\[//; s/\],.*//; s/","/"\n"/g; s/"//g' "$ref" >"$tmp/texts"
grep -o '"ids":\[[0-9,]*\]' "$ref" | sed 's/.*\[//; s/\]//' >"$tmp/ids"
sed 's/.*"prompts":\[//; s/\],"tensors":.*//' "$ref" | sed 's/},{"X":/}\n{"X":/g' >"$tmp/exps"
check "induction: the reference has 3 prompts" [ "$(wc -l <"$tmp/ids")" -eq 3 ]
k=0
while read -r id; do
	k=$((k + 1))
	text=$(sed -n "${k}p" "$tmp/texts")
	"$ATTNVIZ" --tokenize "$text" --model $models/induction >"$out" 2>"$err" </dev/null
	got=$(awk '{ printf "%s%s", sep, $2; sep = "," }' "$out")
	expect "induction prompt $k: \"$text\" is the reference's ids ($id)" '[ "$got" = "$id" ] && [ ! -s "$err" ]' "[$got]"
	sed -n "${k}p" "$tmp/exps" >"$tmp/exp.json"
	what="induction prompt $k: every stage (X, each layer, final_norm, logits) as PyTorch's to 1e-9"
	if ! "$ATTNVIZ" --model $models/induction --ids "$id" --dump >"$out" 2>"$err" </dev/null; then
		not_ok "$what" "--dump failed"
	elif "$JSONCMP" --only-expected-keys "$tmp/exp.json" "$out" >"$tmp/cmp" 2>&1; then
		ok "$what"
	else
		not_ok "$what" "$(head -n 5 "$tmp/cmp")"
	fi
done <"$tmp/ids"

# the circuit as attnviz scores it (`heads`: prev, first and diag on the prompt, induction on
# random tokens repeated twice): a previous-token head in layer 0, an induction head in layer 1
printf 'heads\n' | "$ATTNVIZ" --model $models/induction --plain "x 3 q . 7 K x 3 q . 7" >"$out" 2>"$err"
awk '$1 ~ /^[01]$/ && $2 ~ /^[0-9]$/ && NF == 6 { print $1, $2, $3, $6 }' "$out" >"$tmp/scores"
check "induction: heads scores its 4 heads" [ "$(wc -l <"$tmp/scores")" -eq 4 ]
prev=$(awk '$1 == 0 && $3 > m { m = $3 } END { print m + 0 }' "$tmp/scores")
ind=$(awk '$1 == 1 && $4 > m { m = $4 } END { print m + 0 }' "$tmp/scores")
expect "induction: a layer-0 head's previous-token score above 0.5 ($prev)" 'at_least "$prev" 0.5'
expect "induction: a layer-1 head's induction score above 0.5 ($ind)" 'at_least "$ind" 0.5'
read -r score head <<EOF
$(best induction induction)
EOF
expect "induction: heads.json's best induction head is in layer 1, above 0.5 ($score $head)" 'at_least "$score" 0.5 && [ "${head#L1}" != "$head" ]'
# the induction head predicts the repeat: after "A B C D A B" the next token is "C" (id 67)
printf 'generate 1\n' | "$ATTNVIZ" --model $models/induction --plain "A B C D A B" >"$out" 2>"$err"
expect "induction: after A B C D A B it generates C" 'grep -q "^generate: .* (ids 65,66,67,68,65,66,67)\$" "$out"' "$(grep generate "$out")"

# the demo that walks the circuit (lessons/demos/induction.txt) plays in the plain REPL with no error
printf 'source lessons/demos/induction.txt\n' | "$ATTNVIZ" --plain >"$out" 2>"$err"
expect "induction demo: no error on the way" '! grep -qiE "^error|unknown" "$out" && [ ! -s "$err" ]' "$(grep -iE "^error|unknown" "$out" | head -n 3)"
expect "induction demo: the previous-token head, row 5 on column 4" 'grep -q "^weights\[5\]\[4\] (head 0) = 0.98649" "$out"'
expect "induction demo: the induction head, row 5 on column 2" 'grep -q "^weights\[5\]\[2\] (head 0) = 0.99998" "$out"'
expect "induction demo: generate 4 continues the pattern" 'grep -q "^generate: 11 tokens: .* (ids 65,66,67,68,65,66,67,68,65,66,67)\$" "$out"'

finish
