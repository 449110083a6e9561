#!/bin/sh
# t_moe.sh: a mixture-of-experts FFN (issue 23 §7). Every matrix of each
# lesson of tests/golden/moe equals PyTorch's float64 reference (made by
# tests/golden/make_reference_moe.py following modeling_mixtral.py and
# modeling_qwen3_moe.py) within 1e-12, the cells of experts not chosen null
# on both sides; every loader error of moe/bad at its JSON path; `save`
# writes the mixture back; the explanations say the arithmetic with the
# lesson's numbers, and a cell not chosen says so.
# Run from the repository root; $ATTNVIZ is the binary, $BUILD the build dir.
. "$(dirname "$0")/lib.sh"

export LC_ALL=C
JSONCMP=$BUILD/tests/jsoncmp

for lesson in tests/golden/moe/*.json lessons/moe.json; do
	case $lesson in *.ref.json) continue ;; esac
	ref=${lesson%.json}.ref.json
	[ "$lesson" = lessons/moe.json ] && ref=tests/golden/lessons/moe.ref.json
	name=$(basename "$lesson" .json)
	"$ATTNVIZ" --dump "$lesson" >"$tmp/dump" 2>"$err"
	expect "moe $name equals PyTorch within 1e-12" \
		'"$JSONCMP" --rtol 0 --atol 1e-12 --only-expected-keys "$ref" "$tmp/dump" >"$tmp/diff" 2>&1' '"$(cat "$tmp/diff" "$err")"'
	printf 'save %s\nquit\n' "$tmp/saved.json" | "$ATTNVIZ" --plain "$lesson" >/dev/null 2>"$err"
	expect "moe $name round-trips through save" '"$ATTNVIZ" --dump "$tmp/saved.json" 2>>"$err" | cmp -s - "$tmp/dump"'
done

tab=$(printf '\t')
grep -v '^#' tests/golden/moe/bad/expected.tsv >"$tmp/bad.tsv"
while IFS="$tab" read -r bad_name bad_path bad_msg; do
	bad=tests/golden/moe/bad/$bad_name.json
	if "$ATTNVIZ" --check "$bad" >/dev/null 2>"$err"; then
		not_ok "moe/bad/$bad_name is refused" "--check accepted it"
	elif grep -qF "$bad: $bad_msg" "$err"; then
		ok "moe/bad/$bad_name is refused at $bad_path"
	else
		not_ok "moe/bad/$bad_name is refused at $bad_path" "expected \"$bad: $bad_msg\", got: $(cat "$err")"
	fi
done <"$tmp/bad.tsv"

L=tests/golden/moe/moe_top1_nonorm.json
explains "router_probs: the softmax of the row with its numbers" $L 'goto router\nexplain router_probs 0 2\n' \
	"softmax over token 0's 3 expert scores" 'p = exp(' '= 0.948673'
explains "moe_weights: a chosen cell without norm_topk_prob" $L 'goto top_k\nexplain moe_weights 0 2\n' \
	"token 0's top 1 experts: 2 (p = 0.948673)" 'without norm_topk_prob the weight is the probability itself: w = 0.948673'
explains "moe_weights: a cell not chosen is shown and explained as such" $L 'goto top_k\nexplain moe_weights 0 0\n' \
	't0     --     -- 0.9487' 'moe_weights[0][0] = not chosen' \
	'expert 0 is number 2 of 3 by probability (p = 0.0490921), so token 0 did not choose it'
explains "expert_act: silu(h) * g with the cell's numbers" $L 'goto experts\nexplain expert_act 0 8\n' \
	'silu(h) * g = 0.31937 * 0.907556 = 0.289846'
explains "ffn_out: the weighted sum of the chosen experts" $L 'goto experts\nexplain ffn_out 0 1\n' \
	'= 0.948673*-0.0875676' '= -0.083073'
explains "norm_topk_prob: the chosen probabilities divided by their sum" tests/golden/moe/mixtral_top2.json \
	'goto top_k\nexplain moe_weights 0 0\nexplain moe_weights 0 1\n' 'norm_topk_prob: the chosen probabilities are divided by their sum'
finish
