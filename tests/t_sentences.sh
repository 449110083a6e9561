#!/bin/sh
# t_sentences.sh: the shipped `sentences` model (assets/models/sentences, made by
# assets/models/train_sentences.py): a small LLaMA-style language model whose heads
# a learner can find, a previous-token head and an attention sink on <s>.
#   - attnviz's C tokenizer gives the reference's ids for its prompts (<s> first);
#   - `--model sentences --ids IDS --dump` agrees with the float64 PyTorch reference
#     the training script committed (tests/models/sentences.ref.json) to 1e-9:
#     every stage of every layer, the logits, and "head_scores" (its prompts' own
#     "head_scores", computed there with attnviz's definitions);
#   - the heads are still there: on each prompt a previous-token score and a
#     first-token (sink) score above THRESHOLDS in --dump's head_scores, so a
#     retrained model that lost either head fails here.
# No Python: everything compared is committed. Run from the repository root.
. "$(dirname "$0")/lib.sh"

JSONCMP=$BUILD/tests/jsoncmp
models=assets/models
m=$models/sentences
ref=tests/models/sentences.ref.json
unset ATTNVIZ_MODELS
out=$tmp/out
PREV_MIN=0.2   # the best previous-token score of a prompt's heads (0.28, 0.41, 0.36 now: a weak head, README.md)
SINK_MIN=0.5   # the best first-token (sink) score, over rows i >= 1 (0.51, 0.61, 0.51 now)

for f in config.json model.safetensors tokenizer.json heads.json README.md; do
	check "sentences: $f is there" [ -s "$m/$f" ]
done
size=$(cat "$m"/* | wc -c)
check "sentences: under 2 MB ($size bytes)" [ "$size" -lt 2000000 ]

# at_least A B: A >= B for decimals
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }

# the reference's prompts as text, as ids, and each prompt's expected dump, one a line
sed 's/.*"prompt_text":\[//; s/\],.*//; s/","/"\n"/g; s/"//g' "$ref" >"$tmp/texts"
grep -o '"ids":\[[0-9,]*\]' "$ref" | sed 's/.*\[//; s/\]//' >"$tmp/ids"
sed 's/.*"prompts":\[//; s/\],"tensors":.*//' "$ref" | sed 's/},{"X":/}\n{"X":/g' >"$tmp/exps"
check "sentences: the reference has 3 prompts" [ "$(wc -l <"$tmp/ids")" -eq 3 ]
k=0
while read -r id; do
	k=$((k + 1))
	text=$(sed -n "${k}p" "$tmp/texts")
	"$ATTNVIZ" --tokenize "$text" --model sentences >"$out" 2>"$err" </dev/null
	got=$(awk '{ printf "%s%s", sep, $2; sep = "," }' "$out")
	expect "sentences prompt $k: \"$text\" is the reference's ids, <s> first ($id)" \
		'[ "$got" = "$id" ] && [ "${id%%,*}" = 1 ] && [ ! -s "$err" ]' "[$got]"
	sed -n "${k}p" "$tmp/exps" >"$tmp/exp.json"
	what="sentences prompt $k: what the reference holds (every stage of prompt 1; X, the logits, head_scores) as PyTorch's to 1e-9"
	if ! "$ATTNVIZ" --model sentences --ids "$id" --dump >"$tmp/dump.json" 2>"$err" </dev/null; then
		not_ok "$what" "--dump failed: $(head -c 200 "$err")"
		continue
	elif "$JSONCMP" --only-expected-keys "$tmp/exp.json" "$tmp/dump.json" >"$tmp/cmp" 2>&1; then
		ok "$what"
	else
		not_ok "$what" "$(head -n 5 "$tmp/cmp")"
	fi
	# the heads, from attnviz's own dump: "previous_token":0.9,... one head a match
	prev=$(grep -o '"previous_token":[[:space:]]*[0-9.e-]*' "$tmp/dump.json" | sed 's/.*:[[:space:]]*//' | sort -g | tail -n 1)
	sink=$(grep -o '"first_token":[[:space:]]*[0-9.e-]*' "$tmp/dump.json" | sed 's/.*:[[:space:]]*//' | sort -g | tail -n 1)
	expect "sentences prompt $k: a previous-token head above $PREV_MIN ($prev)" 'at_least "$prev" $PREV_MIN'
	expect "sentences prompt $k: a sink head (first-token) above $SINK_MIN ($sink)" 'at_least "$sink" $SINK_MIN'
done <"$tmp/ids"

finish
