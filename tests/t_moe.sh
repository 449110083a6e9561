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

for lesson in tests/golden/moe/*.json tests/golden/gptoss/*.json lessons/moe.json; do # gptoss: gpt-oss's mixture
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
for dir in moe gptoss; do # gptoss/bad: gpt-oss's keys (make_reference_gptoss.py)
grep -v '^#' tests/golden/$dir/bad/expected.tsv >"$tmp/bad.tsv"
while IFS="$tab" read -r bad_name bad_path bad_msg; do
	bad=tests/golden/$dir/bad/$bad_name.json
	if "$ATTNVIZ" --check "$bad" >/dev/null 2>"$err"; then
		not_ok "$dir/bad/$bad_name is refused" "--check accepted it"
	elif grep -qF "$bad: $bad_msg" "$err"; then
		ok "$dir/bad/$bad_name is refused at $bad_path"
	else
		not_ok "$dir/bad/$bad_name is refused at $bad_path" "expected \"$bad: $bad_msg\", got: $(cat "$err")"
	fi
done <"$tmp/bad.tsv"
done

# The loader (issue 23's Loader): small mixtral and qwen3_moe folders (tests/models, made by
# make_moe_models.py following modeling_mixtral.py and modeling_qwen3_moe.py in float64), every
# stage of every prompt as PyTorch's within 1e-9, and generate 1 appending the largest logit.
for name in mixtral_moe qwen3_moe_dense0 qwen3_moe_step2; do
	ref=tests/models/$name.ref.json
	k=0
	while row=$(sed -e 's/.*"prompts":\[//' -e 's/\],"tensors":.*//' "$ref" | sed 's/},{"X":/}\n{"X":/g' |
		sed -n "$((k + 1))p") && [ -n "$row" ]; do
		printf '%s\n' "$row" >"$tmp/exp.json"
		id=$(grep -o '"ids":\[[0-9,]*\]' "$tmp/exp.json" | head -n 1 | sed 's/.*\[//; s/\]//')
		"$ATTNVIZ" --model "tests/models/$name" --ids "$id" --dump >"$tmp/dump" 2>"$err"
		expect "model $name prompt $k ($id): every stage as PyTorch's to 1e-9" \
			'"$JSONCMP" --only-expected-keys "$tmp/exp.json" "$tmp/dump" >"$tmp/diff" 2>&1' '"$(head -n 8 "$tmp/diff" "$err")"'
		next=$(sed 's/.*"logits":\[\[//; s/\]\]}.*//' "$tmp/exp.json" | awk -F'\\],\\[' '{ print $NF }' | tr ',' '\n' |
			awk 'NR == 1 || $1 + 0 > m { m = $1 + 0; i = NR - 1 } END { print i }')
		printf 'generate 1\n' | "$ATTNVIZ" --model "tests/models/$name" --ids "$id" --plain >"$tmp/gen" 2>"$err"
		expect "model $name prompt $k: generate 1 appends $next" 'grep -q "^generate: .* (ids $id,$next)\$" "$tmp/gen"' \
			'"$(cat "$tmp/gen" "$err" | tail -n 5)"'
		k=$((k + 1))
	done
	expect "model $name: the reference has prompts" '[ "$k" -ge 2 ]'
done

# the loader's refusals: a folder above with one key of its config.json edited
# bad NAME FOLDER SED WORDS: the copy is refused with WORDS, the file and key named
bad() {
	rm -rf "$tmp/$1"
	cp -r "tests/models/$2" "$tmp/$1"
	sed -i "$3" "$tmp/$1/config.json"
	if "$ATTNVIZ" --model "$tmp/$1" --ids 1,2 --check >/dev/null 2>"$err"; then
		not_ok "model config $1 is refused" "--check accepted it"
	elif grep -qF -- "$tmp/$1/$4" "$err"; then
		ok "model config $1 is refused"
	else
		not_ok "model config $1 is refused" "expected \"$tmp/$1/$4\", got: $(cat "$err")"
	fi
}
bad topk mixtral_moe 's/"num_experts_per_tok": 2/"num_experts_per_tok": 5/' \
	'config.json: num_experts_per_tok: 5 is more than the experts (num_local_experts: 4)'
bad only_layers qwen3_moe_dense0 's/"mlp_only_layers": \[/"mlp_only_layers": [7, /' \
	'config.json: mlp_only_layers[0]: expected a layer number from 0 to num_hidden_layers - 1, got 7'
bad sliding qwen3_moe_dense0 's/"use_sliding_window": false/"use_sliding_window": true/' \
	'config.json: use_sliding_window: true: attnviz computes sliding windows of qwen2 and qwen3 models only'
bad experts5 mixtral_moe 's/"num_local_experts": 4/"num_local_experts": 5/' \
	"model.safetensors: tensor \"model.layers.0.block_sparse_moe.gate.wei…\" has shape [4, 16], but config.json's sizes (num_local_experts, hidden_size) make it [5, 16]"
bad llama_experts llama_tied_bf16 's/"model_type": "llama",/"model_type": "llama", "num_local_experts": 8,/' \
	'config.json: num_local_experts: 8: attnviz computes the mixtures of experts of mixtral, qwen3_moe, gpt_oss and qwen3_next models only'
bad expert_width qwen3_moe_dense0 's/"moe_intermediate_size": 6/"moe_intermediate_size": 7/' \
	"model.safetensors: tensor \"model.layers.1.mlp.experts.0.gate_proj.w…\" has shape [6, 16], but config.json's sizes (moe_intermediate_size, hidden_size) make it [7, 16]"
bad deepseek_key qwen3_moe_dense0 's/"moe_intermediate_size": 6/"moe_intermediate_size": 6, "n_routed_experts": 4/' \
	'config.json: n_routed_experts: 4: attnviz computes the mixtures of experts of mixtral, qwen3_moe, gpt_oss and qwen3_next models only'
bad norm_topk_prob qwen3_moe_dense0 's/"norm_topk_prob": false/"norm_topk_prob": "no"/' \
	'config.json: norm_topk_prob: expected true or false, got "no"'

L=tests/golden/moe/moe_top1_nonorm.json
explains "router_probs: the softmax of the row with its numbers" $L 'goto router\nexplain router_probs 0 2\n' \
	"softmax over token 0's 3 expert scores" 'p = exp(' '= 0.948673'
# every number of the line its own (the sum and the probability were once printed from one reused buffer)
explains "router_probs: the logit, the max, e^(logit - max), the sum and p, each itself" $L 'goto router\nexplain router_probs 0 0\n' \
	'p = exp(-0.265733 - 2.69563) / sum = 0.0517482 / 1.0541 = 0.0490921'
explains "moe_weights: a chosen cell without norm_topk_prob" $L 'goto top_k\nexplain moe_weights 0 2\n' \
	"token 0's top 1 experts: 2 (p = 0.948673)" 'without norm_topk_prob the weight is the probability itself: w = 0.948673'
explains "moe_weights: a cell not chosen is shown and explained as such" $L 'goto top_k\nexplain moe_weights 0 0\n' \
	't0     --     -- 0.9487' 'moe_weights[0][0] = not chosen' \
	'expert 0 is number 2 of 3 by probability (p = 0.0490921), so token 0 did not choose it'
explains "expert_act: silu(h) * g with the cell's numbers" $L 'goto experts\nexplain expert_act 0 8\n' \
	'silu(h) * g = 0.31937 * 0.907556 = 0.289846'
explains "ffn_out: the weighted sum of the chosen experts" $L 'goto experts\nexplain ffn_out 0 1\n' \
	'= 0.948673*-0.0875676' '= -0.083073'
explains "shared expert: its sigmoid gate, its SwiGLU and its term of ffn_out" tests/golden/moe/qwen2moe_shared.json \
	'goto experts\nexplain shared_gate 1 0\nexplain ffn_out 1 2\n' 'sigmoid(z) = 1 / (1 + exp(-4.56942)) = 0.989742' \
	'= 0.97964*1.11866 + 0.0187686*-0.23241 + 0.989742*-0.162801' "(the last term is the shared expert's"
explains "norm_topk_prob: the chosen probabilities divided by their sum" tests/golden/moe/mixtral_top2.json \
	'goto top_k\nexplain moe_weights 0 0\nexplain moe_weights 0 1\n' 'norm_topk_prob: the chosen probabilities are divided by their sum'
finish
