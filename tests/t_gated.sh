#!/bin/sh
# t_gated.sh: gated attention (issue 23 §6, Qwen3-Next) and QK-norm over the
# whole projection (issue 23 §1, OLMo 2), and a block whose norms follow each sublayer (OLMo 2), in the plain REPL — each explanation
# says the arithmetic with the lesson's own numbers, an edit of W_gate reruns
# the gate, and a compare without the gate keeps concat. The numbers
# themselves are PyTorch's (t_golden.sh: tests/golden/gated).
# Run from the repository root; $ATTNVIZ is the binary.
. "$(dirname "$0")/lib.sh"

export LC_ALL=C

explains "gate: x . W_gate term by term, and whose column it gates" lessons/gated.json \
	'goto gate\nexplain gate 2 2\n' '= X row 2 . W_gate column 2' '= 1*-4 + 1*0 + 0*4 + 0*0' \
	"(the gate of column 2 of concat: head 1's column 0"
explains "gated: sigmoid of the gate times concat's cell" lessons/gated.json \
	'goto gate\nskip\nexplain gated 2 2\n' 'sigmoid(-4) = 1 / (1 + e^(4)) = 0.0179862' \
	'gated = concat * sigmoid(gate) = 1.66667 * 0.0179862 = 0.029977' "times token 2's own gate"
explains "output reads gated, not concat" lessons/gated.json \
	'goto output\nexplain output 2 2\n' '= gated row 2 . W_o column 2' 'output = gated.W_o'
explains "an edit of W_gate reruns the gate" lessons/gated.json \
	'goto gate\nskip\nset W_gate[1][2] 10\nexplain gated 2 2\n' 'sigmoid(6) = 1 / (1 + e^(-6)) = 0.997527' \
	'= 1.66667 * 0.997527 = 1.66255'
explains "the gate stage's formula" lessons/gated.json 'goto gate\n' \
	'gate = x.W_gate   gated = concat * sigmoid(gate)'
# the compare variant has no gate: its output is concat . W_o
printf 'compare on\ngoto output\n' | "$ATTNVIZ" --plain lessons/gated.json >"$tmp/cmp.out" 2>"$err"
expect "the compare without the gate shows its output beside" 'grep -q "without the gate" "$tmp/cmp.out"'
expect "--dump's compare has no gated" \
	'"$ATTNVIZ" --dump lessons/gated.json | grep -c "\"gated\"" | grep -qx 1'
explains "QK-norm over the projection: the whole row's RMS" tests/golden/gated/qknorm_projection.json \
	'goto qk_norm\nexplain Q_norm 1 5\n' \
	'QK-norm of row 1 of Q over the whole projection (OLMo 2): all 8 numbers of the row' \
	'= x_5 / rms * q_norm[5] = 1.36794 / 5.79961 * 0.533825 = 0.125912' 'the whole row now has root mean square 1'
explains "QK-norm over the projection: its formula" tests/golden/gated/qknorm_projection.json 'goto qk_norm\n' \
	'QK-norm over the projection (OLMo 2): each whole row x of Q (and K), all heads at once'
explains "a block with its norms after each sublayer (OLMo 2): norm1 of the attention's output, then the residual" \
	tests/golden/gated/olmo2_after_qknorm.json 'goto residual1\nexplain norm1 1 0\nexplain residual1 1 0\n' \
	'residual1 = x + norm1' '= X + norm1 = ' ': the residual keeps the rows it started from'
finish
