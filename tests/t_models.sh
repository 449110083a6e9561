#!/bin/sh
# t_models.sh: `attnviz --model DIR --ids … --dump` on the six small model
# folders of tests/models, every stage compared with the float64 PyTorch
# reference beside each (NAME.ref.json, made by tests/models/make_models.py)
# to 1e-9 relative; each folder of tests/models/bad refused with its message
# (exit 1, the folder named); --check; the prompt's errors.
# Run from the repository root; $ATTNVIZ is the binary. Prints "ok - NAME" /
# "not ok - NAME" lines and ends with "N passed, N failed" (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

models=tests/models
out=$tmp/out
JSONCMP=$BUILD/tests/jsoncmp


# prompts NAME: NAME.ref.json's prompts, one JSON object a file ($tmp/NAME.K.json). The
# reference is one line with its keys sorted: "prompts":[{"X":…},{"X":…}],"tensors":…
prompts() {
	sed -e 's/.*"prompts":\[//' -e 's/\],"tensors":.*//' "$models/$1.ref.json" | sed 's/},{"X":/}\n{"X":/g' |
		awk -v pre="$tmp/$1." '{ f = pre (NR - 1) ".json"; print > f; close(f) }'
}
# ids FILE: the prompt's "ids" as 1,2,3
ids() { grep -o '"ids":\[[0-9, ]*\]' "$1" | head -n 1 | sed 's/.*\[//; s/\]//; s/ //g'; }

# argmax FILE: the greedy next token of the prompt: the largest of its last row of logits (the first of equals)
argmax() {
	sed 's/.*"logits":\[\[//; s/\]\]}.*//' "$1" | awk -F'\\],\\[' '{ print $NF }' | tr ',' '\n' |
		awk 'NR == 1 || $1 + 0 > m { m = $1 + 0; i = NR - 1 } END { print i }'
}

# and the scaled or partial RoPE of make_ropescale_models.py (issue 23 §2), the local and
# global layers of make_localglobal_models.py (issue 23 §3), OLMo 2 of make_olmo2_models.py (its norms
# after each sublayer, QK-norm over the whole projection), DeepSeek-V3 of make_deepseek_models.py (multi-head
# latent attention in dense layers, with and without q_lora_rank, and with YaRN's mscale and mscale_all_dim;
# its mixture of experts: the sigmoid router's groups, e_score_correction_bias and shared experts, moe_layer_freq),
# DeepSeek-V3.2 of make_deepseek_v32_models.py (the same with DeepSeek Sparse Attention's indexer and top-k),
# Gemma 2 and Gemma 3 of make_gemma_models.py (sandwich (1 + w) norms, the scaled embedding,
# query_pre_attn_scalar, the caps, local layers with their own RoPE base), and Gemma 3 of
# make_gemma3rope_models.py (rope_scaling on the global layers alone; rope_parameters per layer type), Qwen3-Next of
# make_qwen3next_models.py (Gated DeltaNet and gated full-attention layers, the gated shared expert)
for name in gpt2 gpt2_prefix_f16 llama_gqa_sharded llama_tied_bf16 qwen2_bias_f16 qwen3_qknorm_bf16 \
	llama_yarn_partial qwen3_llama3_params qwen2_dynamic llama_linear_params \
	qwen2_layer_types qwen3_window_layers olmo2_qknorm_after deepseek_v3_qlora deepseek_v3_noqlora_bf16 \
	deepseek_v3_yarn deepseek_v3_moe deepseek_v3_moe_freq2_bf16 gemma2_caps gemma3_local_global gemma3_rope_scaling gemma3_rope_params smollm3_nope_interval smollm3_nope_list gptoss_yarn_window gptoss_clamped \
	deepseek_v32_dense qwen3next_hybrid qwen3next_types_bf16; do
	prompts "$name"
	k=0
	while [ -f "$tmp/$name.$k.json" ]; do
		exp=$tmp/$name.$k.json
		id=$(ids "$exp")
		next=$(argmax "$exp")
		printf 'generate 1\n' | "$ATTNVIZ" --model "$models/$name" --ids "$id" --plain >"$out" 2>"$err"
		expect "$name prompt $k: generate 1 appends $next, the reference's largest logit" 'grep -q "^generate: .* (ids $id,$next)\$" "$out"'
		what="every stage (ids, X, each layer, final_norm, logits)"
		run --model "$models/$name" --ids "$id" --dump
		if [ "$rc" -ne 0 ]; then
			not_ok "$name prompt $k ($id): --dump exits 0" "exit $rc"
		elif "$JSONCMP" --only-expected-keys "$exp" "$out" >"$tmp/cmp" 2>&1; then
			ok "$name prompt $k ($id): $what as PyTorch's to 1e-9"
		else
			not_ok "$name prompt $k ($id): $what as PyTorch's to 1e-9" "$(head -n 8 "$tmp/cmp")"
		fi
		k=$((k + 1))
	done
	expect "$name: the reference has prompts" '[ "$k" -ge 2 ]'
done

# a prompt compared must fail when it is wrong: the same reference against another prompt's dump
prompts gpt2
run --model $models/gpt2 --ids 5,17,242,3,98 --dump
expect "a different prompt does not pass" '! "$JSONCMP" --only-expected-keys "$tmp/gpt2.1.json" "$out" >/dev/null 2>&1'

# heads on a model (issue 22): the induction column from its run on random tokens repeated twice,
# the learner's prompt computed again afterwards (the same numbers and place)
printf 'heads sort induction\n' | "$ATTNVIZ" --model $models/gpt2 --ids 5,17,242 --plain >"$out" 2>"$err"
expect "heads on a model: an induction score for every head" '[ "$(grep -cE "^ +[01] +[0-3]( +[01]\.[0-9]{3}){4}\$" "$out")" -eq 8 ]'
expect "heads on a model: says what the induction score was computed on" 'grep -q "^induction: on 12 random tokens, then the same 12 again" "$out"'
expect "heads sort induction: highest first" 'grep -E "^ +[01] +[0-3]( +[01]\.[0-9]{3}){4}\$" "$out" | awk "{ print \$6 }" | sort -rc'
printf 'goto softmax\nexplain weights 2 1\n' | "$ATTNVIZ" --model $models/gpt2 --ids 5,17,242 --plain 2>&1 | sed -n '/^-- explain/,$p' >"$tmp/before"
printf 'goto softmax\nheads\nexplain weights 2 1\n' | "$ATTNVIZ" --model $models/gpt2 --ids 5,17,242 --plain 2>&1 | sed -n '/^-- explain/,$p' >"$tmp/after"
expect "heads on a model: the prompt's numbers and the place kept" 'grep -q "weights\[2\]\[1\] (head 0) = 0.0548951" "$tmp/after" && cmp -s "$tmp/before" "$tmp/after"'

# a model that ships with attnviz, by its name ($ATTNVIZ_MODELS first), from any folder (the line names where it was found)
(cd "$tmp" && ATTNVIZ_MODELS="$ATTNVIZ_SRCDIR/assets/models" "$ATTNVIZ" --model tiny-gpt2 --ids 1,2 --check) >"$out" 2>"$err"
expect "--model NAME: a shipped model by its name" 'grep -q "^\(.*/\)\?tiny-gpt2: ok, n=2, d_model=64, 2 layers" "$out"'
(cd "$tmp" && "$ATTNVIZ" --model no-such-model --ids 1 --check) >"$out" 2>"$err"
expect "--model NAME that is neither a folder nor a shipped model: the folder's missing config.json" 'grep -q "no-such-model/config.json" "$err"'

# a model's dump leaves its weights out unless --dump-weights asks (issue 21 §4)
run --model $models/gpt2 --ids 5,17 --dump
expect "--dump of a model: no weights" '[ "$rc" -eq 0 ] && ! grep -q "\"W_q\"\|\"ffn_W_1\"\|\"ln1_gamma\"" "$out" && grep -q "\"logits\"" "$out"'
run --model $models/gpt2 --ids 5,17 --dump --dump-weights
expect "--dump-weights: every layer's weights" '[ "$rc" -eq 0 ] && [ "$(grep -c "\"W_q\"" "$out")" -eq 2 ] && grep -q "\"ffn_W_1\"" "$out"'
run --dump-weights lessons/dot.json
expect "--dump-weights without --model DIR --dump is a usage error" '[ "$rc" -eq 2 ] && grep -q "dump-weights goes with --model DIR --dump" "$err"'

# ------------------------------------------------------------ text through the gpt2 folder's tokenizer.json

# gpt2.tokens.txt: "IDS<TAB>TEXT", the ids from tokenizers.js (make_model_tokens.mjs)
while IFS="$(printf '\t')" read -r want text; do
	got=$(LC_ALL=C.UTF-8 "$ATTNVIZ" --tokenize "$text" --model $models/gpt2 2>"$err" | awk '{ print $2 }' | paste -sd, -)
	expect "gpt2 tokenizer: \"$text\" as tokenizers.js" '[ "$got" = "$want" ]' "got $got, want $want"
	LC_ALL=C.UTF-8 "$ATTNVIZ" --model $models/gpt2 --prompt "$text" --dump >"$tmp/text.json" 2>"$err"
	LC_ALL=C.UTF-8 "$ATTNVIZ" --model $models/gpt2 --ids "$want" --dump >"$tmp/ids.json" 2>>"$err"
	expect "gpt2 --prompt \"$text\": the dump of its ids" 'cmp -s "$tmp/text.json" "$tmp/ids.json" && [ -s "$tmp/ids.json" ]'
done <$models/gpt2.tokens.txt
LC_ALL=C.UTF-8 run --model $models/gpt2 "The cat sat on the mat" --check
expect "--model DIR TEXT: the text is the prompt" '[ "$rc" -eq 0 ] && has "$out" "ok, n=7,"'
LC_ALL=C.UTF-8 run --model $models/gpt2 --prompt "The cat" --dump
expect "the dump's tokens as people read them" '[ "$rc" -eq 0 ] && grep -q "\"·cat\"" "$out"'

# ------------------------------------------------------------ --check

run --model $models/llama_gqa_sharded --ids 1,2,3 --check
expect "--check: one line, the sizes" '[ "$rc" -eq 0 ] && grep -q "^tests/models/llama_gqa_sharded: ok, n=3, d_model=.*2 layers.*kv 2" "$out"'

# ------------------------------------------------------------ bad folders: exit 1, one message naming the folder

tab=$(printf '\t')
while IFS="$tab" read -r bad words; do
	run --model "$models/bad/$bad" --ids 1 --dump
	if [ "$rc" -eq 1 ] && [ ! -s "$out" ] && grep -qF -- "$words" "$err" && grep -qF "bad/$bad" "$err" && hasnt "$err" "$ESC"; then
		ok "bad/$bad: refused"
	else
		not_ok "bad/$bad: refused" "exit $rc (want 1), want: $words"
	fi
done <"$models/bad/expected.txt"
# DeepSeek-V3's configs attnviz refuses (make_deepseek_models.py): each at its key; Qwen3-Next's folders
# (make_qwen3next_models.py): layer types against the weights, a missing in_proj_qkvz, its config's keys
for set in bad_deepseek bad_qwen3next; do
	grep -v '^#' "$models/$set/expected.txt" >"$tmp/$set.txt"
	while IFS="$tab" read -r bad words; do
		run --model "$models/$set/$bad" --ids 1 --dump
		if [ "$rc" -eq 1 ] && [ ! -s "$out" ] && grep -qF -- "$words" "$err" && grep -qF "$set/$bad" "$err"; then
			ok "$set/$bad: refused"
		else
			not_ok "$set/$bad: refused" "exit $rc (want 1), want: $words, got: $(cat "$err")"
		fi
	done <"$tmp/$set.txt"
done
# DeepSeek-V3.2's configs attnviz refuses (make_deepseek_v32_models.py): each at its key
grep -v '^#' "$models/bad_deepseek_v32/expected.txt" >"$tmp/bad_deepseek_v32.txt"
while IFS="$tab" read -r bad words; do
	run --model "$models/bad_deepseek_v32/$bad" --ids 1 --dump
	if [ "$rc" -eq 1 ] && [ ! -s "$out" ] && grep -qF -- "$words" "$err"; then
		ok "bad_deepseek_v32/$bad: refused"
	else
		not_ok "bad_deepseek_v32/$bad: refused" "exit $rc (want 1), want: $words, got: $(cat "$err")"
	fi
done <"$tmp/bad_deepseek_v32.txt"
# a deepseek_v3 model generates without the K/V cache (MLA's would keep c_KV and k_pe), and `decode on` is refused
printf 'generate 2\n' | "$ATTNVIZ" --model $models/deepseek_v3_qlora --ids 7,20 --plain >"$out" 2>"$err"
expect "deepseek_v3: generate 2 computes each longer prompt again" 'grep -q "^generate: 4 tokens: .* (ids 7,20,[0-9]*,[0-9]*)\$" "$out"'
printf 'decode on\n' | "$ATTNVIZ" --model $models/deepseek_v3_qlora --ids 7,20 --plain >"$out" 2>"$err"
expect "deepseek_v3: decode on is refused" 'grep -q "decode: not with MLA yet" "$err" "$out"'
# a qwen3_next model too (its Gated DeltaNet layers would cache the conv's rows and the state): the second token
# is the largest logit of the longer prompt computed whole (3,14,15,184 -> 257, make_qwen3next_models.py's weights)
printf 'generate 2\n' | "$ATTNVIZ" --model $models/qwen3next_hybrid --ids 3,14,15 --plain >"$out" 2>"$err"
expect "qwen3_next: generate 2 computes each longer prompt again" 'grep -q "^generate: 5 tokens: .* (ids 3,14,15,184,257)\$" "$out"'

# ------------------------------------------------------------ the prompt

run --model $models/gpt2 --ids 1,320 --dump
expect "an id outside the vocabulary: exit 1, named" '[ "$rc" -eq 1 ] && [ ! -s "$out" ] && has "$err" "tests/models/gpt2: token id 320 (token 1 of the prompt) is outside the vocabulary: 0 to 319"'
run --model $models/gpt2 --ids "$(seq -s, 0 32)" --dump
expect "more tokens than positions: exit 1" '[ "$rc" -eq 1 ] && has "$err" "33 tokens is over the limit of 32"'
run --model $models/llama_gqa_sharded --prompt "the cat" --dump
expect "text without a tokenizer.json: exit 1, say --ids" '[ "$rc" -eq 1 ] && has "$err" "no tokenizer.json" && has "$err" "--ids"'
run --model $models/gpt2 --ids 1,x --dump
expect "--ids that are not ids: usage error" '[ "$rc" -eq 2 ] && [ ! -s "$out" ] && has "$err" "--ids: expected token ids"'
run --model $models/gpt2 --ids 99999999999999999999 --dump
expect "--ids past a long long: an error, not a wrap" '[ "$rc" -ne 0 ] && [ ! -s "$out" ]'
run --ids 1,2 --dump lessons/dot.json
expect "--ids without --model: usage error" '[ "$rc" -eq 2 ] && has "$err" "--ids goes with --model"'
run --model $models/gpt2 --dump
expect "--model without a prompt: usage error" '[ "$rc" -eq 2 ] && has "$err" "needs one prompt"'

# ------------------------------------------------------------ the full-screen view on a model (tmux)

. "$(dirname "$0")/tmux.sh"
s=model
start "$s" 120 35 C.UTF-8 "" --model tests/models/gpt2 --ids 5,17,242
shows "view: opens on the model, its layer and head from 0 (as layer N, head N)" "$s" 'layer 0/2 · head 0/4 \(kv 0/4\)  stage: input'
cmd "$s" "layer 1"
cmd "$s" "goto softmax"
shows "view: layer 1's softmax" "$s" 'layer 1/2 · head 0/4 \(kv 0/4\)  stage: softmax'
keys "$s" L
shows "view: L: the next head" "$s" 'layer 1/2 · head 1/4 \(kv 1/4\)  stage: softmax'
cmd "$s" "generate 1"
shows "view: generate 1 adds the greedy token" "$s" 'generate: 4 tokens: .* \(ids 5,17,242,[0-9]+\)'
shows "view: generate keeps the place" "$s" 'layer 1/2 · head 1/4 \(kv 1/4\)  stage: softmax'
cmd "$s" "prompt I saw a saw"
shows "view: :prompt TEXT through the tokenizer" "$s" 'prompt: 4 tokens: I \| ·saw \| ·a \| ·saw'
shows "view: :prompt keeps the place" "$s" 'layer 1/2 · head 1/4 \(kv 1/4\)  stage: softmax'
cmd "$s" "ids 7,8"
shows "view: :ids gives another prompt" "$s" 'ids: 2 tokens: .* \(ids 7,8\)'
cmd "$s" "ids 7,400"
shows "view: an id outside the vocabulary says so" "$s" 'token id 400 .* is outside the vocabulary'
cmd "$s" "model tests/models/nowhere"
shows "view: a failed :model says why" "$s" 'nowhere/config.json'
shows "view: and keeps the place" "$s" 'layer 1/2 · head 1/4 \(kv 1/4\)  stage: softmax'
cmd "$s" "model tests/models/llama_tied_bf16"
shows "view: :model DIR opens another (no tokenizer: token id 0)" "$s" 'layer 0/2 · head 0/4 \(kv 0/1\)  stage: input'
# its head stays BF16 in the file: the logits stage's unembed pane reads its cells there (unembed[0][0] is 0.5)
cmd "$s" "layer 1"
cmd "$s" "goto logits"
shows "view: the head's pane, its cells read from the file" "$s" '^0 +0\.50 +1\.78 +-0\.88'
quits "$s" "view"

finish
