#!/bin/sh
# t_deltanet.sh: Gated DeltaNet as the layer's token mixer (issue 24 §3) in the
# plain REPL — the conv1d, the gated RMSNorm and concat say their arithmetic
# with the lesson's own numbers, and an edit of conv1d reaches them. The
# numbers themselves are PyTorch's (t_golden.sh: tests/golden/deltanet2).
# Run from the repository root; $ATTNVIZ is the binary.
. "$(dirname "$0")/lib.sh"

export LC_ALL=C
mix=tests/golden/deltanet2/mixer_gqa_chunk3.json

explains "gdn_conv: SiLU of the causal conv over the tokens before" $mix \
	'goto deltanet_conv\nexplain gdn_conv 3 4\n' 'SiLU(-0.815057) = -0.815057 * sigmoid(-0.815057) = -0.250071' \
	'column 4 of [Q | K | V] at tokens 1 to 3 times column 4 of conv1d'
explains "gdn_gated and gdn_rms: RMSNorm(o)*w times SiLU(z)" $mix \
	'goto deltanet_norm\nexplain gdn_gated 2 1\nexplain gdn_rms 2 0\n' \
	'o / rms * w * SiLU(z) = -0.0353783 / 0.0530357 * 1.47864 * -0.0459917 = 0.0453641' \
	'sqrt(mean of gdn_out row 2 squared + eps) = 0.0530357 (eps = 1e-05)'
explains "concat takes the mixer's output, not softmax's" $mix \
	'goto deltanet_norm\nexplain concat 2 1\n' "it is gdn_gated[2][1], head 0's"
explains "an edit of conv1d reaches gdn_conv" $mix \
	'set conv1d[2][4] 0\ngoto deltanet_conv\nexplain gdn_conv 3 4\n' \
	'SiLU(-0.000432073) = -0.000432073 * sigmoid(-0.000432073) = -0.00021599'
explains "gdn_states: the state after each token" $mix \
	'goto deltanet\nexplain gdn_states 3 4\n' 'S[1][1] after token 3 wrote its correction: 2 x 3 numbers'
explains "the mixer's stages" $mix 'help goto\n' 'deltanet_conv Gated DeltaNet'"'"'s short causal conv1d' 'deltanet_norm Gated DeltaNet'"'"'s output RMS-normalised'
# Qwen3-Next's value heads ("v_heads": r = 2 to a head, tests/golden/deltanet3): β column s is value head s's,
# from W_b's column h·r + s, and a correction at column c reads β of value head c / (d_v / r).
vh=tests/golden/deltanet3/vheads_r2.json
explains "v_heads: gdn_beta's column is a value head's" $vh 'goto deltanet\nexplain gdn_beta 2 1\n' \
	'beta = sigma(b) = 1 / (1 + e^(-0.447026)) = 0.609932' '(b = x_2.W_b[:, 1]:'
explains "v_heads: gdn_delta reads its value head's beta" $vh 'goto deltanet\nexplain gdn_delta 2 3\n' \
	'beta(v - S^Tk) = 0.609932 * (-0.128154 - -0.0424599) = -0.0522677'
finish
