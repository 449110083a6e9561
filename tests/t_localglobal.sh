#!/bin/sh
# t_localglobal.sh: local and global layers (issue 23 §3) in the plain REPL —
# each layer's own mask in its explanations, the KV cache each kind keeps, an
# edit of the mask reaching the layer shown only, and a Qwen2 folder's
# layer_types. The numbers themselves are PyTorch's (t_golden.sh, t_models.sh).
# Run from the repository root; $ATTNVIZ is the binary.
. "$(dirname "$0")/lib.sh"

out=$tmp/out
export LC_ALL=C.UTF-8
lesson=lessons/localglobal.json

# says NAME INPUT ARGS TEXT: the REPL on INPUT (printf format) with ARGS prints TEXT
says() {
	s_name=$1 s_input=$2 s_args=$3 s_text=$4
	# shellcheck disable=SC2059,SC2086 # the input is a printf format, ARGS words on purpose
	printf "$s_input" | "$ATTNVIZ" --plain $s_args >"$out" 2>"$err"
	if grep -qF -- "$s_text" "$out"; then
		ok "$s_name"
	else
		not_ok "$s_name" "no \"$s_text\" in: $(tail -n 8 "$out" "$err")"
	fi
}

says "the local layer's mask: too far back" 'layer 0\ngoto mask\nskip\nexplain masked 5 3\n' "$lesson" \
	'query 5 may not see key 3 (window mask: too far back)'
says "the global layer's mask: the same cell is seen" 'layer 1\ngoto mask\nexplain masked 5 3\n' "$lesson" \
	'query 5 may see key 3'
says "stats cache: each layer's own cache, rolling and whole" 'stats cache\n' "$lesson" \
	'local and global layers: 1 keep a rolling window, 1 keep every token (384 bytes in all)'
says "the decode step of the global layer keeps every row" 'layer 1\ngoto decode\nskip\n' "$lesson" \
	'cache 6 rows'

# mask … edits the layer shown; save writes each layer's own mask back
printf 'layer 1\nmask window 3\nsave %s\nquit\n' "$tmp/edited.json" | "$ATTNVIZ" --plain "$lesson" >"$out" 2>"$err"
expect "mask window 3 on layer 1 changes layer 1's mask alone" \
	'tr -d " \t\n" <"$tmp/edited.json" | grep -qF "\"mask\":{\"window\":2}},{" &&
	 tr -d " \t\n" <"$tmp/edited.json" | grep -qF "\"mask\":{\"window\":3}}]"'

# a Qwen2 folder's layer_types: layer 0 slides (window 3), layer 1 is causal
model=tests/models/qwen2_layer_types
says "layer_types: a sliding_attention layer's window" 'layer 0\ngoto mask\nexplain masked 7 2\n' \
	"--model $model --ids 400,12,13,14,15,16,17,401" 'query 7 may not see key 2 (window mask: too far back)'
says "layer_types: a full_attention layer is causal" 'layer 1\ngoto mask\nexplain masked 7 2\n' \
	"--model $model --ids 400,12,13,14,15,16,17,401" 'query 7 may see key 2'
says "layer_types: the window survives another prompt" 'ids 400 12 13 14 15\nlayer 0\ngoto mask\nexplain masked 4 0\n' \
	"--model $model --ids 400,12,13" 'query 4 may not see key 0 (window mask: too far back)'
finish
