#!/bin/sh
# t_softcap.sh: soft-capping and attention sinks (issue 23 §5, §4) in the plain
# REPL — each explanation says the arithmetic with the lesson's own numbers
# (c·tanh(s/c) and its slope, the final cap, the backward pass's slope, the
# sink's term of the softmax and its share). The numbers themselves are
# PyTorch's (t_golden.sh); these are the words around them.
# Run from the repository root; $ATTNVIZ is the binary.
. "$(dirname "$0")/lib.sh"

export LC_ALL=C

explains "capped: c*tanh(s/c) with the cell's numbers, and the slope" lessons/softcap.json \
	'goto softcap\nskip\nexplain capped 4 2\n' \
	'c*tanh(s / c) = 5 * tanh(8 / 5) = 5 * tanh(1.6) = 4.60834' \
	'(s = 8 is the scaled score; the cap moved it by -3.39166: it can never pass +-5)' \
	'slope d/ds = 1 - tanh^2(s / c) = 0.150527'
explains "masked reads the capped score" lessons/softcap.json \
	'goto mask\nexplain masked 4 2\n' 'so the capped score passes through unchanged'
explains "logits: the final cap over logits_raw" lessons/softcap.json \
	'goto logits\nskip\nexplain logits 4 0\n' \
	'c*tanh(logits_raw / c) = 3 * tanh(6.80876 / 3) = 2.93658' \
	'logits_raw, the product before the cap: vocabulary entry the'
explains "dscaled: the gradient times the cap's slope" tests/golden/softcap/softcap_backward.json \
	'goto back_mask\nexplain dscaled 3 1\n' \
	"the cell was soft-capped, so the gradient is scaled by the cap's slope" 'dscaled = dmasked * (1 - tanh^2(s / c)) = '
explains "weights: the sink is one more term of the sum" lessons/sinks.json \
	'goto softmax\nskip\nexplain weights 0 0\n' \
	'max of row 0 and the sink = 1.5' "sink (head 0's logit, no value): exp(1.5 - 1.5) = 1" 'weight = 0.317764 / 1.31776 = 0.241139'
explains "sink: its share, and what the row's weights lack of 1" lessons/sinks.json \
	'goto sinks\nskip\nexplain sink 3 0\n' \
	"head 0's sink logit is 1.5" 'sink = exp(1.5 - 1.5) / (exp(1.5 - 1.5) + sum_k exp(s_k - max))' \
	"the row's weights sum to 0.559676 = 1 - 0.440324" '= 1 / (1 + 1.27106) = 0.440324'
explains "set sinks: the sink logit is a given matrix (the compare without sinks keeps none)" lessons/sinks.json \
	'goto sinks\nskip\nset sinks[0][0] 5\nexplain sink 0 0\n' \
	'sinks[0][0] = 5; everything after it is recomputed' '= 1 / (1 + 0.00959564) = 0.990496'
explains "the stages' formulas" lessons/sinks.json 'goto sinks\nskip\n' \
	'sink_i = e^(sink_h) / (e^(sink_h) + sum_k e^(s_ik)) = 1 - sum_j weights_ij'
explains "flash_out with a sink: its term joins the sum after the last tile" tests/golden/sinksflash/sinks_flash_causal.json \
	'goto flash\nexplain flash_out 4 1\n' \
	"out = O / (l + e^(sink - m)) after the last tile: head 0's sink logit 2 joins the sum" \
	'= 0.0974133 / (2.35098 + exp(2 - 0.558344)) = 0.0974133 / (2.35098 + 4.22769) = 0.0148074  (weighted[4][1] = 0.0148074)'
explains "dsinks: each row's -sink_i times its weighted pull, summed" tests/golden/sinksflash/sinks_backward.json \
	'goto back_softmax\nexplain dsinks 0 0\n' \
	'row 0: -0.702648 * 3.11382 = -2.18792' 'row 3: -0.433361 * 5.34081 = -2.3145' \
	'dsinks[0][0] = the sum of the rows = -7.19275'
finish
