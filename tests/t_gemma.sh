#!/bin/sh
# t_gemma.sh: Gemma's pieces (issue 23) in the plain REPL — the (1 + w)
# RMSNorm of the block and of QK-norm, sandwich norms (a norm before AND after
# each sublayer), the embedding scaled by sqrt(d_model): each explanation
# says the arithmetic with the lesson's own numbers, the map marks the norms
# after the sublayers N1' and N2', and an edit of ln1_after_gamma reruns the
# norm after the attention. The numbers themselves are PyTorch's (t_golden.sh:
# tests/golden/gemma, made by make_reference_gemma.py).
# Run from the repository root; $ATTNVIZ is the binary.
. "$(dirname "$0")/lib.sh"

export LC_ALL=C
stack=tests/golden/gemma/gemma3_stack.json

explains "embed_scale: X = input * sqrt(d_model)" $stack 'explain X 1 2\n' \
	'X = input * s   (Gemma: s = sqrt(d_model), the embedding' '= input * s = 1.52584 * 2.82843'
explains "embed_scale with PE: X = input * s + PE" tests/golden/gemma/embed_scale_positional.json \
	'goto positional\nexplain X 2 1\n' 'X = input*s + PE' '= input * s + PE = '
explains "(1 + w) RMSNorm of the block: its formula and a cell" $stack 'goto norm1\nexplain norm1 1 0\n' \
	'norm1 = N1(x)   RMSNorm (Gemma): x/sqrt(mean(x^2) + eps)*(1 + gamma), each row' \
	'= -5.51413 / sqrt(7.25938 + 1e-06) * (1 + -0.270299)' '= -1.49339'
explains "(1 + w) QK-norm: its formula and a cell" $stack 'goto qk_norm\nexplain Q_norm 1 1\n' \
	'QK-norm (Gemma 3): each head' 'x/sqrt(mean(x^2) + eps)*(1 + q_norm)' \
	'= x_1 / rms * (1 + q_norm[1]) = -1.14437 / 2.08116 * (1 + 0.261445) = -0.69363'
explains "sandwich: the norm after the attention, then the residual adds it" $stack \
	'goto norm1_after\nexplain norm1_after 1 0\ngoto residual1\nexplain residual1 1 0\n' \
	"norm1_after = N1'(output)   RMSNorm (Gemma)" 'RMSNorm of row 1 of output' '= -0.683366' \
	'residual1 = x + norm1_after' '= X + norm1_after = -5.51413 + -0.683366'
explains "sandwich: the norm after the FFN, then the second residual" $stack \
	'goto norm2_after\nexplain norm2_after 2 3\ngoto residual2\nexplain residual2 0 0\n' \
	'RMSNorm of row 2 of ffn_out' '= 1.032' 'residual2 = residual1 + norm2_after' '= residual1 + norm2_after = '
explains "sandwich: the map marks the norms after the sublayers" $stack 'goto norm2_after\n' \
	"block: x -> N1 -> attention -> N1' -> + -> N2 -> FFN -> [N2'] -> +"
explains "an edit of ln1_after_gamma reruns the norm after the attention" $stack \
	'goto norm1_after\nset ln1_after_gamma[0][0] 1\nexplain norm1_after 1 0\n' '(1 + 1)' '= -1.33378'
expect "a sandwich block's stages, in Gemma's order" \
	'[ "$(stages_of $stack)" = "input norm1 project qk_norm rotate split scores scale softcap mask softmax weighted concat output norm1_after residual1 norm2 ffn_hidden activation ffn_out norm2_after residual2" ]'
finish
