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
# (two "gated" keys: the forward's and its gradient's under grad, the lesson having a loss; none in the compare)
expect "--dump's compare has no gated" \
	'"$ATTNVIZ" --dump lessons/gated.json | grep -c "\"gated\"" | grep -qx 2'
explains "QK-norm over the projection: the whole row's RMS" tests/golden/gated/qknorm_projection.json \
	'goto qk_norm\nexplain Q_norm 1 5\n' \
	'QK-norm of row 1 of Q over the whole projection (OLMo 2): all 8 numbers of the row' \
	'= x_5 / rms * q_norm[5] = 1.36794 / 5.79961 * 0.533825 = 0.125912' 'the whole row now has root mean square 1'
explains "QK-norm over the projection: its formula" tests/golden/gated/qknorm_projection.json 'goto qk_norm\n' \
	'QK-norm over the projection (OLMo 2): each whole row x of Q (and K), all heads at once'
explains "a block with its norms after each sublayer (OLMo 2): norm1 of the attention's output, then the residual" \
	tests/golden/gated/olmo2_after_qknorm.json 'goto residual1\nexplain norm1 1 0\nexplain residual1 1 0\n' \
	'residual1 = x + norm1' '= X + norm1 = ' ': the residual keeps the rows it started from'
# the olmo2 loader (tests/models/olmo2_qknorm_after; its numbers: t_models.sh): errors name the key or the tensor
cp -r tests/models/olmo2_qknorm_after "$tmp/olmo"
sed 's/"model_type": "olmo2"/"model_type": "olmo"/' tests/models/olmo2_qknorm_after/config.json >"$tmp/olmo/config.json"
expect "olmo2 loader: an unknown model_type is refused at model_type, olmo2 suggested" \
	'"$ATTNVIZ" --model "$tmp/olmo" --ids 7 --dump 2>&1 >/dev/null | grep -qF "config.json: model_type: \"olmo\" is not a model attnviz computes yet (it computes gpt2, llama, qwen2, qwen3, olmo2, mixtral, qwen3_moe, deepseek_v3, gemma2, gemma3_text, smollm3, gpt_oss, deepseek_v32 and qwen3_next) (did you mean \"olmo2\"?)"'
sed 's/"num_key_value_heads": 2/"num_key_value_heads": 4/' tests/models/olmo2_qknorm_after/config.json >"$tmp/olmo/config.json"
expect "olmo2 loader: a config that contradicts the weights names the tensor and the keys" \
	'"$ATTNVIZ" --model "$tmp/olmo" --ids 7 --dump 2>&1 >/dev/null | grep -qF "tensor \"model.layers.0.self_attn.k_proj.weight\" has shape [12, 24], but config.json'"'"'s sizes (num_key_value_heads, head_dim, hidden_size) make it [24, 24]"'
cp tests/models/olmo2_qknorm_after/config.json "$tmp/olmo/config.json"
printf 'goto norm1\n' | "$ATTNVIZ" --model "$tmp/olmo" --ids 7,20,30 --plain >"$tmp/olmo.out" 2>"$err"
expect "olmo2 loader: its layers' norm1 is N1 of the attention's output, before the residual" \
	'grep -qF "norm1 = N1(output)   RMSNorm" "$tmp/olmo.out" && grep -qF "x -> attention -> [N1] -> + -> FFN -> N2 -> +" "$tmp/olmo.out"'
finish
