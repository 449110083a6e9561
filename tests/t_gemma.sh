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

# the gemma2 and gemma3_text loaders (tests/models/gemma2_caps, gemma3_local_global; their numbers: t_models.sh):
# a bad config is refused at its key, with what was expected
# config_error DIR 'SED' WORDS: the folder with its config.json edited by SED is refused with WORDS
config_error() {
	rm -rf "$tmp/m"
	cp -r "tests/models/$1" "$tmp/m"
	sed "$2" "tests/models/$1/config.json" >"$tmp/m/config.json"
	expect "$1 loader: $3" '"$ATTNVIZ" --model "$tmp/m" --ids 2 --check 2>&1 >/dev/null | grep -qF "$3"'
}
config_error gemma2_caps 's/"query_pre_attn_scalar": 8/"query_pre_attn_scalar": 0/' \
	'config.json: query_pre_attn_scalar: expected a number above 0, got 0'
config_error gemma2_caps 's/"attn_logit_softcapping": 4.0/"attn_logit_softcapping": "big"/' \
	'config.json: attn_logit_softcapping: expected a cap c > 0 (c*tanh(x/c)) or null, got "big"'
config_error gemma2_caps 's/"hidden_activation": "gelu_pytorch_tanh"/"hidden_activation": "silu"/' \
	'config.json: hidden_activation: "silu": attnviz computes gemma2 models with "gelu_pytorch_tanh"'
config_error gemma2_caps 's/"sliding_window": 3/"sliding_window": null/' \
	"config.json: sliding_window: null, but Gemma's layers i with (i + 1) % 2 != 0 slide: give a size"
config_error gemma3_local_global 's/"rope_scaling": null/"rope_parameters": {"chunked_attention": {"rope_type": "default"}}/' \
	'config.json: rope_parameters.chunked_attention: expected the layer types "full_attention" and "sliding_attention" (Gemma 3'"'"'s)'
config_error gemma3_local_global 's/"rope_scaling": null/"rope_parameters": {"full_attention": {"rope_type": "default"}, "sliding_attention": {"rope_type": "default", "partial_rotary_factor": 0.5}}/' \
	'config.json: rope_parameters.sliding_attention.partial_rotary_factor: 0.5, but 1 on the full-attention layers'
config_error gemma3_local_global 's/"model_type": "gemma3_text"/"model_type": "gemma3"/' \
	'config.json: model_type: "gemma3" is Gemma 3 with its vision tower: attnviz computes its text model'
config_error gemma3_local_global 's/"head_dim": 16/"head_dim": 8/' \
	'tensor "model.layers.0.self_attn.q_proj.weight" has shape [32, 24], but config.json'"'"'s sizes (num_attention_heads, head_dim, hidden_size) make it [16, 24]'
config_error gemma3_local_global 's/"sliding_window_pattern": 3/"sliding_window_pattern": 0/' \
	'config.json: sliding_window_pattern: expected a size from 1 to 1024, got 0'
# the model's layers as the lessons say them: sandwich (1 + w) norms, the caps, each layer's own mask and RoPE base
printf 'goto norm2_after\n' | "$ATTNVIZ" --model tests/models/gemma2_caps --ids 2,20,30 --plain >"$tmp/g2.out" 2>"$err"
expect "gemma2 loader: sandwich norms on the map, the (1 + w) norm after the FFN" \
	'grep -qF "x -> N1 -> attention -> N1'"'"' -> + -> N2 -> FFN -> [N2'"'"'] -> +" "$tmp/g2.out" && grep -qF "RMSNorm (Gemma): x/sqrt(mean(x^2) + eps)*(1 + gamma'"'"')" "$tmp/g2.out"'
printf 'goto activation\nexplain ffn_act 1 2\n' | "$ATTNVIZ" --model tests/models/gemma2_caps --ids 2,20,30 --plain >"$tmp/g2.out" 2>"$err"
expect "gemma2 loader: the FFN's gate is gelu_tanh's (GeGLU), explained with its numbers" \
	'grep -qF "gelu_tanh(z) * gate = z/2 * (1 + tanh(sqrt(2/pi) * (z + 0.044715 z^3))) * gate" "$tmp/g2.out"'
"$ATTNVIZ" --model tests/models/gemma3_local_global --ids 2,11,12,13,14,15 --dump >"$tmp/g3.json" 2>"$err"
expect "gemma3_text loader: the scale is query_pre_attn_scalar^-1/2, 16 ** -0.5" 'grep -q "\"scale_factor\":[[:space:]]*0.25," "$tmp/g3.json"'
finish
