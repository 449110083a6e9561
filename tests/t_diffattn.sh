#!/bin/sh
# t_diffattn.sh: differential attention (issue 24 §4) in the plain REPL — each
# explanation says the arithmetic with the lesson's own numbers (which head a
# map is, λ's exponentials, λ_init from depth, A1 − λ·A2 and its row sum, the
# pair's O over both heads' value columns, the RMS, the output), an edit of a
# λ vector recomputes everything after it, and what concat takes. The numbers
# themselves are PyTorch's (t_golden.sh: tests/golden/diffattn).
# Run from the repository root; $ATTNVIZ is the binary.
. "$(dirname "$0")/lib.sh"

export LC_ALL=C
L=lessons/diffattn.json
G=tests/golden/diffattn/diff_causal_two_pairs.json

explains "diff_a1, diff_a2: which head of the pair each map is" $L \
	'goto diff\nskip\nexplain diff_a1 3 1\nexplain diff_a2 3 1\n' \
	"pair 0 = heads 0 and 1: this is head 0's softmax weight of key 1 for query 3" \
	"this is head 1's softmax weight of key 1 for query 3"
explains "diff_lambda: the exponentials, lambda_init from depth, lambda" $L \
	'goto diff\nskip\nexplain diff_lambda 0 0\nexplain diff_lambda 0 2\nexplain diff_lambda 0 3\n' \
	'lambda_q1*lambda_k1 = 0.5*1' 'e^0.5 = 1.64872' \
	'lambda_init = 0.8 - 0.6*e^(-0.3*0) = 0.2 (depth 0, the 0-based index of the layer)' \
	'lambda = 1.64872 - 1 + 0.2 = 0.848721'
explains "diff_lambda: depth 3" $G 'goto diff\nexplain diff_lambda 0 2\n' 'lambda_init = 0.8 - 0.6*e^(-0.3*3) = 0.556058'
explains "diff_lambda: a lambda_init of the lesson's own" tests/golden/diffattn/diff_three_pairs_init.json \
	'goto diff\nexplain diff_lambda 0 2\n' "lambda_init = 0.5, the lesson's own (\"lambda_init\")"
explains "diff_weights: A1 - lambda*A2 with the cell's numbers, the row sum 1 - lambda" $L \
	'goto diff\nskip\nexplain diff_weights 3 3\n' 'A1 - lambda*A2 = 0.224515 - 0.848721*0.475367 = -0.178939' \
	'row 3 sums to 1 - lambda = 0.151279'
explains "diff_o, diff_rms, diff_out: both heads' value columns, the RMS, subln and 1 - lambda_init" $L \
	'goto diff_out\nexplain diff_o 3 0\nexplain diff_rms 3 0\nexplain diff_out 3 1\n' \
	"sum_k A_3k v_k0 (column 0 of V, head 0's value column 0) = -0.0658279*0 + 0.461873*2" '= 0.744808' \
	'sqrt(sum_c O_3c^2 / 2 + eps) = sqrt(0.586758 / 2 + 1e-05) = 0.541654' \
	'O_31 / rms_3 * subln_1 * (1 - lambda_init) = -0.178939 / 0.541654 * 1 * 0.8 = -0.264285' \
	"(concat takes it as head 1's column 0)"
explains "diff_o: the second pair reads heads 2 and 3's value columns" $G \
	'goto diff_out\nhead 3\nexplain diff_o 1 4\n' "(column 10 of V, head 3's value column 1)"
explains "diff_o with GQA: a pair reads kv heads 2q and 2q + 1, shared by n_rep pairs (the reference's repeat_kv)" \
	tests/golden/diffattn/diff_gqa_rope.json 'goto diff_out\nhead 4\nexplain diff_o 2 3\n' \
	"(column 7 of V, kv head 3's value column 1: pair 2 reads kv heads 2 and 3, as 2 pairs share them)"
explains "an edit of lambda_q1 recomputes lambda, the weights and concat" $L \
	'set lambda_q1[0][0] 0\ngoto diff\nskip\nexplain diff_lambda 0 3\nexplain diff_weights 3 3\nexplain concat 3 1\n' \
	'lambda = 1 - 1 + 0.2 = 0.2' 'A1 - lambda*A2 = 0.224515 - 0.2*0.475367 = 0.129442' 'concat[3][1] = 0.113823'
explains "the stages' formulas" $L 'goto diff_out\n' \
	'out = O / sqrt(mean(O^2) + eps) * subln * (1 - lambda_init)'
printf 'decode on\n' | "$ATTNVIZ" --plain $L >/dev/null 2>"$err"
expect "decode on is refused: decoding would not compute the pairs" \
	'grep -qF "decode: not with differential attention" "$err"'
# --dump: one object per pair of heads
"$ATTNVIZ" --dump $G >"$tmp/dump" 2>"$err"
expect "--dump: diff_attn has one object per pair" '[ "$(grep -o "\"a1\"" "$tmp/dump" | wc -l)" -eq 2 ]'
finish
