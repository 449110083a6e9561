#!/bin/sh
# t_head_scores.sh: the head scores of the shipped `induction` model (issue 22 §4):
# `attnviz --model induction --ids IDS --dump`'s "head_scores" (previous-token,
# first-token, diagonal on the prompt; induction on random tokens repeated twice)
# agree to 1e-9 with tests/golden/head_scores_models.tsv, computed by
# tests/golden/head_scores_models.py with PyTorch's reference forward
# (tests/models/make_models.py) from the committed weights, never from attnviz;
# and the circuit is in them: a layer-0 previous-token score and a layer-1
# induction score above 0.5 on every prompt. (The sentences model's scores:
# t_sentences.sh.) No Python: everything compared is committed.
. "$(dirname "$0")/lib.sh"

JSONCMP=$BUILD/tests/jsoncmp
gold=tests/golden/head_scores_models.tsv
unset ATTNVIZ_MODELS

# at_least A B: A >= B for decimals
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }
# best KEY LAYER FILE: the highest KEY score of LAYER's heads in a dump's head_scores
best() {
	tr -d ' \t\n' <"$3" | sed 's/.*"head_scores":\[\[//; s/\]\].*//; s/\],\[/\n/g' | sed -n "$(($2 + 1))p" |
		grep -o "\"$1\":[0-9.e-]*" | sed 's/.*://' | sort -g | tail -n 1
}

n=0
while IFS='	' read -r ids exp; do
	case $ids in '#'*|'') continue ;; esac
	n=$((n + 1))
	printf '%s\n' "$exp" >"$tmp/exp.json"
	what="induction --ids $ids: head_scores as PyTorch's to 1e-9"
	if ! "$ATTNVIZ" --model induction --ids "$ids" --dump >"$tmp/dump.json" 2>"$err" </dev/null; then
		not_ok "$what" "--dump failed: $(head -c 200 "$err")"
		continue
	elif "$JSONCMP" --rtol 1e-9 --atol 1e-12 --only-expected-keys "$tmp/exp.json" "$tmp/dump.json" >"$tmp/cmp" 2>&1; then
		ok "$what"
	else
		not_ok "$what" "$(head -n 5 "$tmp/cmp")"
	fi
	prev=$(best previous_token 0 "$tmp/dump.json")
	ind=$(best induction 1 "$tmp/dump.json")
	expect "induction --ids $ids: a layer-0 previous-token score above 0.5 ($prev)" 'at_least "$prev" 0.5'
	expect "induction --ids $ids: a layer-1 induction score above 0.5 ($ind)" 'at_least "$ind" 0.5'
done <"$gold"
check "the golden file has 3 prompts" [ "$n" -eq 3 ]

finish
