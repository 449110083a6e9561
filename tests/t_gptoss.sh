#!/bin/sh
# t_gptoss.sh: the smollm3 and gpt_oss loaders' refusals (issue 23's Loader):
# a small folder of tests/models (made by make_smollm3_models.py and
# make_gptoss_models.py) copied with one key of its config.json edited, each
# refused with its message at its JSON path (or tensor), the copy's file
# named; a quantised gpt-oss (gptoss_mxfp4) by its tensor. Their numbers
# against PyTorch's are t_models.sh's; generate on gpt-oss decodes its
# mixture row by row.
# Run from the repository root; $ATTNVIZ is the binary.
. "$(dirname "$0")/lib.sh"

export LC_ALL=C
tab=$(printf '\t')
out=$tmp/out

# CASE<TAB>FOLDER<TAB>SED<TAB>WHAT THE MESSAGE SAYS AFTER "$tmp/CASE/"
while IFS="$tab" read -r bad folder edit words; do
	rm -rf "${tmp:?}/$bad"
	cp -r "tests/models/$folder" "$tmp/$bad"
	sed -i "$edit" "$tmp/$bad/config.json"
	"$ATTNVIZ" --model "$tmp/$bad" --ids 1,2 --check >"$out" 2>"$err"
	expect "smollm3/gpt_oss config $bad is refused at its key" \
		'[ ! -s "$out" ] && grep -qF -- "$tmp/$bad/$words" "$err"' '"want $words, got: $(cat "$out" "$err")"'
done <<TABLE
nope_value${tab}smollm3_nope_list${tab}s/"no_rope_layers": \[/"no_rope_layers": [2, /${tab}config.json: no_rope_layers[0]: expected 1 (the layer turns q and k) or 0 (a NoPE layer), got 2
nope_short${tab}smollm3_nope_list${tab}s/"no_rope_layers": \[/"no_rope_layers": [1], "unused": [/${tab}config.json: no_rope_layers: 1 numbers for 2 layers (num_hidden_layers): each layer needs its 1 (RoPE) or 0 (NoPE)
nope_interval${tab}smollm3_nope_interval${tab}s/"no_rope_layer_interval": 2/"no_rope_layer_interval": 0/${tab}config.json: no_rope_layer_interval: expected a size from 1 to 1024, got 0
smollm3_window${tab}smollm3_nope_interval${tab}s/"use_sliding_window": false/"use_sliding_window": true/${tab}config.json: use_sliding_window: true: attnviz computes sliding windows of qwen2 and qwen3 models only
nope_list_kind${tab}smollm3_nope_list${tab}s/"no_rope_layers": \[/"no_rope_layers": "all", "unused": [/${tab}config.json: no_rope_layers: expected a list of at least 2 numbers (num_hidden_layers), 1 for a layer with RoPE and 0 for a NoPE layer, got "all"
smollm3_typo${tab}smollm3_nope_interval${tab}s/"model_type": "smollm3"/"model_type": "smollm4"/${tab}config.json: model_type: "smollm4" is not a model attnviz computes yet
gptoss_quantised${tab}gptoss_clamped${tab}s/"model_type": "gpt_oss"/"model_type": "gpt_oss", "quantization_config": {"quant_method": "mxfp4"}/${tab}config.json: quantization_config: "mxfp4": a quantised checkpoint (MXFP4's experts are stored as *_blocks and *_scales)
gptoss_layer_type${tab}gptoss_clamped${tab}s/"sliding_attention"/"chunked_attention"/${tab}config.json: layer_types[1]: "chunked_attention": attnviz computes "full_attention" and "sliding_attention" layers
gptoss_topk${tab}gptoss_clamped${tab}s/"num_experts_per_tok": 1/"num_experts_per_tok": 5/${tab}config.json: num_experts_per_tok: 5 is more than the experts (num_local_experts: 3)
gptoss_limit${tab}gptoss_clamped${tab}s/"swiglu_limit": 0.8/"swiglu_limit": -1/${tab}config.json: swiglu_limit: expected a number > 0, got -1
gptoss_no_window${tab}gptoss_clamped${tab}s/"sliding_window": 2/"sliding_window": null/${tab}config.json: sliding_window: a "sliding_attention" layer needs a window: sliding_window a size
gptoss_experts${tab}gptoss_clamped${tab}s/"num_local_experts": 3/"num_local_experts": 4/${tab}model.safetensors: tensor "model.layers.0.mlp.router.weight" has shape [3, 16], but config.json's sizes (num_local_experts, hidden_size) make it [4, 16]
gptoss_mxfp4${tab}gptoss_mxfp4${tab}s/^//${tab}model.safetensors: tensor "model.layers.0.mlp.experts.gate_up_proj_blocks" is MXFP4-quantised (blocks and scales)
TABLE

# the NoPE layer says so where RoPE would be explained (rope.c's explain on a layer with rope_off)
printf 'layer 1\ngoto rope\nexplain Q_rot 1 0\n' | "$ATTNVIZ" --model tests/models/smollm3_nope_interval --ids 1,40,41 --plain >"$out" 2>"$err"
expect "smollm3: layer 1 is a NoPE layer (no_rope_layer_interval 2)" 'grep -q "This layer has no RoPE" "$out"' '"$(tail -n 5 "$out" "$err")"'
printf 'goto rope\nexplain Q_rot 1 0\n' | "$ATTNVIZ" --model tests/models/smollm3_nope_interval --ids 1,40,41 --plain >"$out" 2>"$err"
expect "smollm3: layer 0 turns q and k" 'grep -q "Q_rot\[1\]\[0\]" "$out" && ! grep -q "This layer has no RoPE" "$out"' '"$(tail -n 5 "$out" "$err")"'

# generate 2 decodes row by row through gpt-oss's mixture (decode_row's one-row pass): the greedy tokens of the
# whole computation again each time
printf 'generate 2\n' | "$ATTNVIZ" --model tests/models/gptoss_yarn_window --ids 1,40,41 --plain >"$out" 2>"$err"
ids=$(sed -n 's/^generate: .* (ids \(.*\))$/\1/p' "$out" | tail -n 1)
"$ATTNVIZ" --model tests/models/gptoss_yarn_window --ids "$ids" --dump >"$tmp/gen.json" 2>>"$err"
expect "gpt_oss: generate 2 appends tokens and the result computes" '[ -n "$ids" ] && [ "$(echo "$ids" | tr , "\n" | wc -l)" -eq 5 ] && [ -s "$tmp/gen.json" ]' '"$(tail -n 3 "$out" "$err")"'

# gpt-oss's mixture (make_reference_gptoss.py's lessons; their numbers are t_moe.sh's): the explanations
# say its arithmetic with the lesson's numbers
L=tests/golden/gptoss/gptoss_clamped.json
explains "gpt-oss router_logits: the router's bias added" $L 'goto router\nexplain router_logits 0 1\n' \
	"+ the router's bias -0.342944" '-2.31185 + -0.342944 = -2.6548'
explains "gpt-oss router_probs: the top 2 logits first, then a softmax over them" $L 'goto router\nexplain router_probs 0 2\n' \
	"top 2 logits FIRST, then a softmax over those 2 alone" 'p = exp(-0.740944 - 6.22045) / sum = 0.000947772 / 1.00095 = 0.000946875'
explains "gpt-oss router_probs: an expert outside the top k has probability 0" $L 'goto router\nexplain router_probs 0 1\n' \
	"expert 1's logit -2.6548 is number 3 of 3, not among the top 2: its probability is 0"
explains "gpt-oss moe_weights: nothing renormalised" $L 'goto top_k\nexplain moe_weights 0 0\n' \
	'their weights add to 1 already: w = p = 0.999053'
explains "gpt-oss expert_act: gate and up clamped at the limit, (up + 1) * gate * sigmoid(alpha * gate)" $L \
	'goto experts\nexplain expert_act 0 0\nexplain expert_act 1 9\n' \
	"gate_up_proj's column 0" 'with the biases: gate = 5.57719, up = 2.55809' \
	'gate = min(gate, 1.5) = 1.5, up = clamp(up, -1.5, 1.5) = 1.5' '(up + 1) * gate * sigmoid(1.702 * gate) = 2.5 * 1.5 * sigmoid(2.553) = 3.47916' \
	'gate = min(gate, 1.5) = -4.5614'
explains "gpt-oss expert_out: its down bias added" $L 'goto experts\nexplain expert_out 0 0\n' \
	'+ its bias 0.654287' '-0.820668 + 0.654287 = -0.166381'
finish
