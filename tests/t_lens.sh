#!/bin/sh
# tests/t_lens.sh — what a real model's dump says about its heads (issue 22):
# `--model DIR --dump` gains "head_scores" (previous_token, first_token,
# diagonal, induction per head), compared with PyTorch's numbers of the same
# definitions on the committed test model (tests/golden/make_head_scores_model.py).
. "$(dirname "$0")/lib.sh"
JSONCMP=$BUILD/tests/jsoncmp
GOLD=tests/golden

"$ATTNVIZ" --model tests/models/gpt2 --ids 5,17,3,250,17,3,9 --dump >"$tmp/gpt2.json" 2>"$err"
check "--model --dump: head_scores agree with PyTorch's" \
	"$JSONCMP" --rtol 1e-9 --atol 1e-12 --ignore about --only-expected-keys "$GOLD/head_scores_model.json" "$tmp/gpt2.json"
"$ATTNVIZ" --dump lessons/gqa.json >"$tmp/gqa.json" 2>"$err"
check "a lesson's dump has no head_scores (lesson dumps stay as they were)" sh -c '! grep -q "\"head_scores\"" "$1"' - "$tmp/gqa.json"

finish
