#!/bin/sh
# t_linear.sh: linear attention and Gated DeltaNet (issue 24 §3) in the plain
# REPL — each explanation says the arithmetic with the lesson's own numbers
# (φ = elu + 1, φ(q)·φ(k) and why softmax cannot factor, the row sum, the
# output both ways and their difference; β, g, the delta rule, token by token
# and in chunks), and an edit recomputes both ways alike. The numbers
# themselves are PyTorch's (t_golden.sh: tests/golden/linear).
# Run from the repository root; $ATTNVIZ is the binary.
. "$(dirname "$0")/lib.sh"

export LC_ALL=C

explains "lin_scores: phi(q).phi(k) term by term, and why softmax needs its n x n matrix" lessons/linear.json \
	'goto linear\nexplain lin_scores 3 2\n' 'phi(q_3).phi(k_2) = 0.367879*2 + 1.5*2' '= 3.73576' \
	'that is why softmax must make this n x n matrix, and linear attention need not'
explains "lin_scores: a key after the query is left out (causal)" lessons/linear.json \
	'goto linear\nexplain lin_scores 1 3\n' 'causal: key 3 comes after query 1, so the product is left out (0)'
explains "lin_z and lin_out: the row sum, then the weighted values over it" lessons/linear.json \
	'goto linear\nexplain lin_z 2 0\nexplain lin_out 2 0\n' 'z_2 = sum_j lin_scores_2j + eps = 20 + 0 = 20' \
	'sum_k lin_scores_2k v_k0 = 6*1 + 6*0 + 8*1 + 0*-1' '/ z_2 = 14 / 20 = 0.7'
explains "phi_k: elu + 1 below 0 is e^x" tests/golden/linear/linear_causal_heads.json \
	'goto linear\nexplain phi_k 1 0\n' 'phi(-6.56838) = e^-6.56838 = 0.00140407'
explains "lin_state and lin_out_state: the state, read by a causal row, equal to the n x n way" \
	tests/golden/linear/linear_causal_heads.json \
	'goto linear_state\nexplain lin_state 0 0\nexplain lin_out_state 2 0\n' \
	'(d_k x d_v numbers, however many tokens there are' 'causal: the state after token 2' \
	'phi(q_2)^TS[:, 0] / (phi(q_2).sum phi(k) + eps) = 2.82098 / 5.22625 = 0.539773' 'they differ by'
explains "an edit of V recomputes both ways alike" tests/golden/linear/linear_causal_heads.json \
	'goto linear_state\nset W_v[0][0] 3\nexplain lin_out_state 2 0\nexplain lin_out 2 0\n' \
	'= 11.8452 / 5.22625 = 2.26648' '/ z_2 = 11.8452 / 5.22625 = 2.26648'
explains "the stages' formulas" lessons/linear.json 'goto linear_state\n' \
	'out_i = phi(q_i)^T.S / (phi(q_i).sum_j phi(k_j) + eps)'
explains "gdn_beta, gdn_g: the write strength and the decay with the cell's numbers" tests/golden/linear/deltanet_plain.json \
	'goto deltanet\nexplain gdn_beta 2 0\nexplain gdn_g 2 0\n' 'beta = sigma(b) = 1 / (1 + e^(0.186558)) = 0.453495' \
	'g = -e^0.477319 * softplus(0.962081) = -1.61175 * 1.28568 = -2.0722' 'the state is multiplied by e^g = 0.125909 at token 2'
explains "gdn_delta: the delta rule writes the error" tests/golden/linear/deltanet_plain.json \
	'goto deltanet\nexplain gdn_delta 2 1\n' 'beta(v - S^Tk) = 0.453495 * (0.512795 - 0.0257477) = 0.220874' \
	'only what the state got wrong about v_2 is written'
explains "gdn_out and gdn_out_chunk: token by token and in chunks, the same" tests/golden/linear/deltanet_plain.json \
	'goto deltanet\nexplain gdn_out 3 0\nexplain gdn_out_chunk 3 0\n' 'the chunked form gives -0.116089' \
	'token 3 is in chunk 1 (tokens 2 to 3)' 'token by token gives -0.116089'
finish
