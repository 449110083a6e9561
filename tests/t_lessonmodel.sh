#!/bin/sh
# t_lessonmodel.sh: lessons on a real model ("model": {"path", "prompt"},
# lessons/FORMAT.md): how the folder is found (relative to the lesson file,
# ORG/NAME in $ATTNVIZ_MODELS and the Hugging Face cache's snapshots, a shipped
# name), each error at its JSON path, and the session on such a lesson (a
# model: :prompt and generate). The numbers of lessons/realmodel.json are
# t_golden.sh's (tests/golden/lessons/realmodel.ref.json). Then two things of
# how a learner reads a model and writes with it: tokenizer_config.json as
# transformers applies it, and generate N, greedy against PyTorch's greedy
# continuation (tests/models/generate.ref.json) and sampled with a seed.
# Run from the repository root; $ATTNVIZ is the binary. Prints "ok - NAME" /
# "not ok - NAME" lines and ends with "N passed, N failed" (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

out=$tmp/out
tiny=$(pwd)/assets/models/tiny-gpt2
lesson() { # FILE PATH [MORE]: a lesson on the model PATH with the prompt "The cat", MORE its further keys
	printf '{"attnviz": 2, "title": {"en": "t", "zh": "t"}, "model": {"path": "%s", "prompt": "The cat"}%s}\n' "$2" "${3:-}" >"$1"
}
# bad LABEL MESSAGE FILE: --check FILE exits 1 with MESSAGE (the file named) on stderr, nothing on stdout
bad() {
	run --check "$3"
	want="$(basename "$3"): $2"
	expect "$1" '[ "$rc" -eq 1 ] && [ ! -s "$out" ] && has "$err" "$want"'
}

# where the folder is found
mkdir -p "$tmp/course/models/m" "$tmp/elsewhere"
cp "$tiny"/config.json "$tiny"/model.safetensors "$tiny"/tokenizer.json "$tmp/course/models/m/"
lesson "$tmp/course/rel.json" models/m
(cd "$tmp/elsewhere" && "$ATTNVIZ" --check ../course/rel.json) >"$out" 2>"$err"
expect "a relative path is the lesson file's folder's, from any folder" 'grep -q "rel.json: ok, n=3, d_model=64, heads=4, 0 steps" "$out"'
lesson "$tmp/abs.json" "$tmp/course/models/m"
run --check "$tmp/abs.json"
expect "an absolute path" '[ "$rc" -eq 0 ] && grep -q ": ok, n=3" "$out"'
lesson "$tmp/shipped.json" tiny-gpt2
(cd "$tmp/elsewhere" && "$ATTNVIZ" --check ../shipped.json) >"$out" 2>"$err"
expect "a shipped model's bare name" 'grep -q "shipped.json: ok, n=3" "$out"'
mkdir -p "$tmp/zoo/acme/tiny"
cp "$tiny"/config.json "$tiny"/model.safetensors "$tiny"/tokenizer.json "$tmp/zoo/acme/tiny/"
lesson "$tmp/org.json" acme/tiny
ATTNVIZ_MODELS=$tmp/zoo HF_HUB_CACHE=$tmp/none "$ATTNVIZ" --check "$tmp/org.json" >"$out" 2>"$err"
expect "ORG/NAME in \$ATTNVIZ_MODELS" 'grep -q "org.json: ok, n=3" "$out"'
# the Hugging Face cache: refs/main's snapshot; without it the newest (older ones may be broken)
hub=$tmp/hub/models--acme--tiny
mkdir -p "$hub/snapshots/0000old" "$hub/snapshots/ffffnew" "$hub/refs"
cp "$tiny"/config.json "$hub/snapshots/0000old/"
cp "$tiny"/config.json "$tiny"/model.safetensors "$tiny"/tokenizer.json "$hub/snapshots/ffffnew/"
touch -d '2020-01-01' "$hub/snapshots/0000old"
touch -d '2024-01-01' "$hub/snapshots/ffffnew"
HF_HUB_CACHE=$tmp/hub "$ATTNVIZ" --check "$tmp/org.json" >"$out" 2>"$err"
expect "ORG/NAME in the Hugging Face cache: the newest snapshot" 'grep -q "org.json: ok, n=3" "$out"'
printf '0000old\n' >"$hub/refs/main"
HF_HUB_CACHE=$tmp/hub "$ATTNVIZ" --check "$tmp/org.json" >"$out" 2>"$err"
expect "ORG/NAME in the Hugging Face cache: the snapshot refs/main names" 'grep -q "model.safetensors" "$err"'
rm "$hub/refs/main"
mkdir -p "$tmp/home/.cache/huggingface"
mv "$tmp/hub" "$tmp/home/.cache/huggingface/hub"
(unset HF_HUB_CACHE HF_HOME; HOME=$tmp/home "$ATTNVIZ" --check "$tmp/org.json") >"$out" 2>"$err"
expect "ORG/NAME in ~/.cache/huggingface/hub" 'grep -q "org.json: ok, n=3" "$out"'

# errors at their JSON path
lesson "$tmp/nowhere.json" no/such-model
(unset HF_HUB_CACHE HF_HOME; HOME=$tmp/home "$ATTNVIZ" --check "$tmp/nowhere.json") >"$out" 2>"$err"
expect "model.path: no folder" '[ ! -s "$out" ] && has "$err" "nowhere.json: model.path: no model folder at no/such-model"'
printf '{"attnviz": 2, "model": {"path": "tiny-gpt2", "prompt": 3}}\n' >"$tmp/prompt.json"
bad "model.prompt: not a string" 'model.prompt: expected a string (the text the model reads), got 3' "$tmp/prompt.json"
printf '{"attnviz": 2, "model": {"prompt": "a"}}\n' >"$tmp/nopath.json"
bad "model.path: missing" 'model.path: missing: a model folder' "$tmp/nopath.json"
printf '{"attnviz": 2, "model": "tiny-gpt2"}\n' >"$tmp/notobj.json"
bad "model: not an object" 'model: expected an object {"path": "DIR", "prompt": "TEXT"}, got "tiny-gpt2"' "$tmp/notobj.json"
lesson "$tmp/withx.json" tiny-gpt2 ', "X": [[1, 2]]'
bad "model together with X" 'X: not with "model": a lesson on a real model takes its tokens, X and weights from the model (leave X out)' "$tmp/withx.json"
lesson "$tmp/withlayers.json" tiny-gpt2 ', "layers": []'
bad "model together with layers" 'layers: not with "model"' "$tmp/withlayers.json"
printf '{"attnviz": 1, "model": {"path": "tiny-gpt2", "prompt": "a"}}\n' >"$tmp/v1.json"
bad "model in format 1" 'model: needs format version 2' "$tmp/v1.json"
lesson "$tmp/layer.json" tiny-gpt2 ', "steps": [{"stage": "softmax", "layer": 2}]'
bad "a step's layer against the model's" "steps[0].layer: 2 is outside the model's 2 layers (they count from 0)" "$tmp/layer.json"
lesson "$tmp/head.json" tiny-gpt2 ', "steps": [{"stage": "softmax", "layer": 1, "head": 4}]'
bad "a step's head against the model's" "steps[0].head: 4 is outside the 4 heads" "$tmp/head.json"
lesson "$tmp/cell.json" tiny-gpt2 ', "steps": [{"stage": "next", "layer": 1, "focus": {"matrix": "next", "row": 0, "col": 1024}}]'
bad "a focus against the model's vocabulary" "steps[0].focus.col: 1024 is outside" "$tmp/cell.json"
lesson "$tmp/stage.json" tiny-gpt2 ', "steps": [{"stage": "next", "layer": 0}]'
bad "the LM head's stages on the last layer only" "steps[0].stage:" "$tmp/stage.json"
mkdir -p "$tmp/broken"
cp "$tiny/config.json" "$tmp/broken/"
lesson "$tmp/broken.json" broken
bad "a model folder the importer refuses: named under model" "model: " "$tmp/broken.json"
lesson "$tmp/warn.json" tiny-gpt2 ', "steps": [{"stage": "softmax", "layer": 1, "colour": 1}]'
run --check "$tmp/warn.json"
expect "a step's unknown key: a warning once the model is read" '[ "$rc" -eq 0 ] && has "$err" "warn.json: warning: steps[0]: unknown key \"colour\""'

# the shipped lesson, and a session on it: a model (:prompt, generate), its steps on the model's layers
run --check --strict lessons/realmodel.json
expect "realmodel.json: --check --strict" '[ "$rc" -eq 0 ] && grep -q "^lessons/realmodel.json: ok, n=11, d_model=64, heads=4, 6 steps$" "$out"'
printf 'step 2\nprompt The cat sat\ngenerate 1\n' | "$ATTNVIZ" --plain lessons/realmodel.json >"$out" 2>"$err"
expect "a lesson on a model: its step at layer 0, head 2" 'grep -q "step 2/6, layer 0/2, stage: softmax, head 2/4" "$out"'
expect "a lesson on a model: :prompt reads the model again" 'grep -q "^prompt: 5 tokens: The | ·c | at | ·s | at" "$out"'
expect "a lesson on a model: its steps leave with its prompt" 'grep -q "step 9/37, layer 0/2, stage: softmax, head 2/4" "$out"'
expect "a lesson on a model: generate appends a token" 'grep -q "^generate: 6 tokens: The | ·c | at | ·s | at | " "$out"'
printf 'load lessons/realmodel.json\nstep 6\n' | "$ATTNVIZ" --plain lessons/selfattn.json >"$out" 2>"$err"
expect ":load of a lesson on a model" 'grep -q "step 6/6, layer 1/2, stage: next" "$out"'
# tokenizer_config.json beside tokenizer.json, as transformers applies it by default
# (src/weights/tokenizer_config.c: LlamaTokenizerFast.update_post_processor puts
# [bos if add_bos_token, default true] TEXT [eos if add_eos_token, default false] in
# place of tokenizer.json's post-processor; other classes keep it). tokenizers.js does
# not read this file, so the expected ids are tokenizer.json's own (tests/weights'
# goldens: "The cat" is <s> ·The · cat = 1 658 397 847 in the sp tokenizer) with <s> (1)
# taken off or </s> (2) put on, as that code says.
tc=$tmp/tc
mkdir -p "$tc"
cp tests/weights/tokenizers/sp/tokenizer.json "$tc/"
ids_of() { "$ATTNVIZ" --tokenize "The cat" --model "$tc" 2>"$err" | awk '{ printf "%s%s", (NR > 1 ? "," : ""), $2 }'; }
# tokids LABEL CONFIG IDS: with CONFIG as tokenizer_config.json (none when empty), "The cat" is IDS
tokids() {
	rm -f "$tc/tokenizer_config.json"
	[ -z "$2" ] || printf '%s\n' "$2" >"$tc/tokenizer_config.json"
	got=$(ids_of)
	want=$3
	expect "$1" '[ "$got" = "$want" ]'
}
tokids "tokenizer.json alone: its template's <s>" '' 1,658,397,847
tokids "LlamaTokenizerFast's defaults: <s>, no </s>" '{"tokenizer_class": "LlamaTokenizerFast"}' 1,658,397,847
tokids "add_bos_token false, add_eos_token true: no <s>, </s> at the end" \
	'{"tokenizer_class": "LlamaTokenizer", "add_bos_token": false, "add_eos_token": true}' 658,397,847,2
tokids "bos_token and eos_token named by the file (a string or an AddedToken)" \
	'{"tokenizer_class": "LlamaTokenizerFast", "add_eos_token": true, "bos_token": {"content": "</s>"}, "eos_token": "<unk>"}' 2,658,397,847,0
tokids "another class keeps tokenizer.json's post-processor" '{"tokenizer_class": "GPT2Tokenizer", "add_bos_token": false}' 1,658,397,847
# tokcfg LABEL CONFIG MESSAGE: --tokenize exits 1 with MESSAGE
tokcfg() {
	printf '%s\n' "$2" >"$tc/tokenizer_config.json"
	"$ATTNVIZ" --tokenize "The cat" --model "$tc" >"$out" 2>"$err"
	rc=$?
	want=$3
	expect "$1" '[ "$rc" -eq 1 ] && [ ! -s "$out" ] && has "$err" "$want"'
}
tokcfg "tokenizer_config.json: add_eos_token not a boolean" '{"tokenizer_class": "LlamaTokenizer", "add_eos_token": 1}' 'tokenizer_config.json: add_eos_token: expected true or false, got 1'
tokcfg "tokenizer_config.json: a bos_token the vocabulary lacks" '{"tokenizer_class": "LlamaTokenizer", "bos_token": "<bos>"}' 'tokenizer_config.json: bos_token: "<bos>" is not a token of tokenizer.json'
tokcfg "tokenizer_config.json: add_prefix_space refused by name" '{"tokenizer_class": "LlamaTokenizer", "add_prefix_space": true}' 'tokenizer_config.json: add_prefix_space: transformers rebuilds this tokenizer'
tokcfg "tokenizer_config.json: not JSON" '{"tokenizer_class": ' 'tokenizer_config.json:2:1: JSON syntax error'
# … and a model folder's prompt goes through it too
mkdir -p "$tmp/g2"
cp tests/models/gpt2/* "$tmp/g2/"
"$ATTNVIZ" --model "$tmp/g2" --prompt "The cat" --check >"$out" 2>"$err"
before=$(sed -n 's/.*ok, n=\([0-9]*\),.*/\1/p' "$out")
printf '{"tokenizer_class": "LlamaTokenizerFast", "add_bos_token": false, "add_eos_token": true, "eos_token": "<|endoftext|>"}\n' >"$tmp/g2/tokenizer_config.json"
"$ATTNVIZ" --model "$tmp/g2" --prompt "The cat" --check >"$out" 2>"$err"
after=$(sed -n 's/.*ok, n=\([0-9]*\),.*/\1/p' "$out")
expect "--model DIR: the prompt's ids through tokenizer_config.json ($before tokens, then $after)" '[ -n "$before" ] && [ "$after" = $((before + 1)) ]'

# generate N (the engine's logits and next stages): greedy against PyTorch's greedy continuation
# (tests/models/generate.ref.json, made by tests/models/make_generate_ref.py), and sampled with a seed
gen_ids() { sed -n 's/^generate: .*(ids \([0-9,]*\))$/\1/p' "$out" | tail -n 1; }
for name in $(sed -n 's/^"\([a-z0-9_]*\)": {"greedy".*/\1/p' tests/models/generate.ref.json); do
	line=$(grep "^\"$name\": " tests/models/generate.ref.json)
	prompt=$(printf '%s\n' "$line" | sed 's/.*"prompt": \[\([0-9, ]*\)\].*/\1/; s/ //g')
	greedy=$(printf '%s\n' "$line" | sed 's/.*"greedy": \[\([0-9, ]*\)\].*/\1/; s/ //g')
	printf 'generate 5\n' | "$ATTNVIZ" --model "tests/models/$name" --ids "$prompt" --plain >"$out" 2>"$err"
	got=$(gen_ids)
	want="$prompt,$greedy"
	expect "generate 5 on $name: PyTorch's greedy tokens ($greedy)" '[ "$got" = "$want" ]'
done
m=tests/models/gpt2_prefix_f16
# gen CMDS [OPTION…]: CMDS (a printf format) in the REPL on gpt2_prefix_f16 and 299,150,42,42: the ids after the last generate
gen() {
	g_cmds=$1
	shift
	# shellcheck disable=SC2059 # the commands are a printf format on purpose (\n)
	printf "$g_cmds" | "$ATTNVIZ" "$@" --model $m --ids 299,150,42,42 --plain >"$out" 2>"$err"
	gen_ids
}
first=$(gen 'seed 11\ntopk 3\ngenerate 4\n')
expect "seed S: generate says it samples" 'grep -q "^generate samples from the next stage.s top 10 at temperature 1, seed 11$" "$out"'
again=$(gen 'seed 11\ntopk 3\ngenerate 2\ngenerate 2\n')
expect "seed S: the same tokens for the same seed, in one go or two ($first)" '[ -n "$first" ] && [ "$first" = "$again" ]'
cli=$(gen 'topk 3\ngenerate 4\n' --seed 11)
expect "--seed S on the command line is seed S" '[ "$cli" = "$first" ]'
others=
for seed in 1 2 3 4 5; do
	others="$others $(gen "seed $seed\ntopk 3\ngenerate 4\n")"
done
expect "other seeds draw other tokens" '[ "$(printf "%s\n" $others $first | sort -u | wc -l)" -gt 1 ]'
# every drawn token among the top 3 of the next stage of the prompt before it (its dump's "top", likeliest first)
outside=
for seq in $first $others; do
	n=4
	while [ "$n" -lt 8 ]; do
		prefix=$(printf '%s\n' "$seq" | cut -d, -f1-$n)
		tok=$(printf '%s\n' "$seq" | cut -d, -f$((n + 1)))
		top3=$("$ATTNVIZ" --model $m --ids "$prefix" --dump 2>/dev/null | sed -n 's/^[[:space:]]*"top":[[:space:]]*\[\([0-9]*\), \([0-9]*\), \([0-9]*\).*/,\1,\2,\3,/p')
		case $top3 in *",$tok,"*) ;; *) outside="$outside $prefix>$tok($top3)" ;; esac
		n=$((n + 1))
	done
done
expect "sampled tokens are always among the top k${outside:+ (not:$outside)}" '[ -z "$outside" ]'
greedy=$(grep '^"gpt2_prefix_f16": ' tests/models/generate.ref.json | sed 's/.*"greedy": \[\([0-9, ]*\)\].*/\1/; s/ //g' | cut -d, -f1-4)
got=$(gen 'seed 99\ntopk 1\ngenerate 4\n')
expect "sampling from the top 1 is greedy" '[ "$got" = "299,150,42,42,$greedy" ]'
got=$(gen 'seed 11\ntemp 0.001\ngenerate 4\n')
expect "sampling at the session's temperature: T = 0.001 leaves only the likeliest (the gaps are 0.15 or more)" '[ "$got" = "299,150,42,42,$greedy" ]'
got=$(gen 'seed 11\nseed off\ngenerate 4\n')
expect "seed off: greedy again" '[ "$got" = "299,150,42,42,$greedy" ] && grep -q "^generate takes the most likely token (greedy)" "$out"'
got=$(gen 'nextrow 1\ngenerate 1\n')
expect "generate after nextrow: the next token of the last position" '[ "$got" = "299,150,42,42,$(printf %s "$greedy" | cut -d, -f1)" ]'
printf 'seed x1\n' | "$ATTNVIZ" --model $m --ids 1 --plain >"$out" 2>"$err"
expect "seed: a word that is not a number" 'grep -q "seed: expected a whole number from 0 (or off), got x1" "$out" "$err"'
run --seed -1 --model $m --ids 1 --plain
expect "--seed: a negative number is a usage error" '[ "$rc" -eq 2 ] && has "$err" "--seed: expected a whole number from 0 to 2^64 - 1, got \"-1\""'

# --model, --tokenize and :model take a bare ORG/NAME too
hf=$tmp/hf2/models--acme--tiny/snapshots/abc
mkdir -p "$hf"
cp "$tiny"/config.json "$tiny"/model.safetensors "$tiny"/tokenizer.json "$hf/"
(cd "$tmp" && HF_HUB_CACHE=$tmp/hf2 "$ATTNVIZ" --model acme/tiny --prompt "The cat" --check) >"$out" 2>"$err"
expect "--model ORG/NAME from the Hugging Face cache" 'grep -q "snapshots/abc: ok, n=3, d_model=64, 2 layers" "$out"'
(cd "$tmp" && HF_HUB_CACHE=$tmp/hf2 "$ATTNVIZ" --tokenize "The cat" --model acme/tiny) >"$out" 2>"$err"
expect "--tokenize --model ORG/NAME" '[ "$(wc -l <"$out")" -eq 3 ] && grep -q "·c" "$out"'
(cd "$tmp" && printf 'model acme/tiny The cat\n' | HF_HUB_CACHE=$tmp/hf2 "$ATTNVIZ" --plain) >"$out" 2>"$err"
expect ":model ORG/NAME" 'grep -q "^acme/tiny: 3 tokens: The | ·c | at" "$out"'
# ... and a shipped model's bare NAME, the same lookup (--tokenize used to miss it: "induction: No such file")
(cd "$tmp" && "$ATTNVIZ" --tokenize "A B" --model induction) >"$out" 2>"$err"
expect "--tokenize --model NAME of a shipped model" '[ "$(wc -l <"$out")" -eq 2 ] && grep -q "^1 *66 *·B" "$out"'
(cd "$tmp" && "$ATTNVIZ" --tokenize "A B" induction) >"$out" 2>"$err"
expect "--tokenize TEXT NAME (the folder as a word, looked up alike)" '[ "$(wc -l <"$out")" -eq 2 ] && grep -q "^1 *66 *·B" "$out"'
(cd "$tmp" && printf 'model induction A B\n' | "$ATTNVIZ" --plain) >"$out" 2>"$err"
expect ":model NAME of a shipped model" 'grep -q "^induction: 2 tokens: ·A | ·B" "$out"'
# decode on|off: a model's tokens (the prompt and what generate appended) one at a time with a KV cache;
# each step's row is the full computation's (explain says both), the setting kept through generate
printf 'decode on\ngenerate 1\ngoto decode\nexplain dec_output 7 3\nexplain output 7 3\ndecode off\n' |
	"$ATTNVIZ" --plain --model induction "A B C D A B C" >"$out" 2>"$err"
dec=$(sed -n 's/^dec_output\[7\]\[3\] = //p' "$out")
full=$(sed -n 's/^output\[7\]\[3\] = //p' "$out")
expect "decode on: the model's tokens through the KV cache, generate's token too" 'grep -q "^decode on: each of the 7 tokens computed in turn with a KV cache" "$out" && grep -q "stage: decode, token 0 (·A), cache 1 row" "$out" && grep -q "^decode off" "$out"'
expect "decode: the generated token's cached row equals the full computation's ($dec, $full)" '[ -n "$dec" ] && [ "$dec" = "$full" ] && grep -q "the full computation.s row 7 holds $dec" "$out"'
# with QK-norm (Qwen3): each step's q and k normalised head by head, then turned (tests/unit_generate.c checks the rows against PyTorch)
printf 'decode on\ngoto decode\nexplain dec_q 2 3\nexplain dec_output 2 3\nexplain output 2 3\n' |
	"$ATTNVIZ" --plain --model tests/models/qwen3_qknorm_bf16 --ids 1,2,3 >"$out" 2>"$err"
dec=$(sed -n 's/^dec_output\[2\]\[3\] = //p' "$out")
full=$(sed -n 's/^output\[2\]\[3\] = //p' "$out")
expect "decode on with QK-norm: each step normalised then turned, its row the full computation's ($dec, $full)" 'grep -q "^decode on: each of the 3 tokens computed in turn with a KV cache" "$out" && grep -q "alone, then RMS-normalised head by head (QK-norm), then turned by RoPE at its position" "$out" && [ -n "$dec" ] && [ "$dec" = "$full" ]'
printf 'decode on\nshow weights\n' | "$ATTNVIZ" --plain lessons/selfattn.json >"$out" 2>"$err"
expect "decode on without a causal mask: refused, saying what to do" 'grep -q "decode: a KV cache needs the causal mask with -inf (each token sees only those before it): mask causal first" "$out" "$err"'
finish
