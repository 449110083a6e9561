#!/bin/sh
# t_gptoss.sh: the smollm3 and gpt_oss loaders' refusals (issue 23's Loader):
# a small folder of tests/models (made by make_smollm3_models.py and
# make_gptoss_models.py) copied with one key of its config.json edited, each
# refused with its message at its JSON path, the copy's file named. Their
# numbers against PyTorch's are t_models.sh's.
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
TABLE

# the NoPE layer says so where RoPE would be explained (rope.c's explain on a layer with rope_off)
printf 'layer 1\ngoto rope\nexplain Q_rot 1 0\n' | "$ATTNVIZ" --model tests/models/smollm3_nope_interval --ids 1,40,41 --plain >"$out" 2>"$err"
expect "smollm3: layer 1 is a NoPE layer (no_rope_layer_interval 2)" 'grep -q "This layer has no RoPE" "$out"' '"$(tail -n 5 "$out" "$err")"'
printf 'goto rope\nexplain Q_rot 1 0\n' | "$ATTNVIZ" --model tests/models/smollm3_nope_interval --ids 1,40,41 --plain >"$out" 2>"$err"
expect "smollm3: layer 0 turns q and k" 'grep -q "Q_rot\[1\]\[0\]" "$out" && ! grep -q "This layer has no RoPE" "$out"' '"$(tail -n 5 "$out" "$err")"'
finish
