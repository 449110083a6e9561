#!/bin/sh
# tests/t_lens.sh — what a real model's dump says about its heads (issue 22):
# `--model DIR --dump` gains "head_scores" (previous_token, first_token,
# diagonal, induction per head), compared with PyTorch's numbers of the same
# definitions on the committed test model (tests/lens/make_head_scores_model.py);
# the logit lens (`lens`, `lens LAYER POSITION`) in the plain REPL, its ids and
# probabilities PyTorch's (tests/lens/make_lens_model.py; tests/unit_lens.c
# checks every cell to 1e-9); in the full-screen view, e on a model's thumbnail
# gives its induction score's numbers and :lens opens the table (tmux, 80×24); L in
# the model view opens the lens screen (80×24 and 200×50).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"
JSONCMP=$BUILD/tests/jsoncmp
GOLD=tests/lens

"$ATTNVIZ" --model tests/models/gpt2 --ids 5,17,3,250,17,3,9 --dump >"$tmp/gpt2.json" 2>"$err"
check "--model --dump: head_scores agree with PyTorch's" \
	"$JSONCMP" --rtol 1e-9 --atol 1e-12 --ignore about --only-expected-keys "$GOLD/head_scores_model.json" "$tmp/gpt2.json"
"$ATTNVIZ" --dump lessons/gqa.json >"$tmp/gqa.json" 2>"$err"
check "a lesson's dump has no head_scores (lesson dumps stay as they were)" sh -c '! grep -q "\"head_scores\"" "$1"' - "$tmp/gqa.json"

# the logit lens in the plain REPL: lens_model.json's top ids of layer 1, position 6 (186, 172, 70, 76, 203)
printf 'lens\nlens 1 6\nlens 2 0\nlens 1\n' | LC_ALL=C "$ATTNVIZ" --model tests/models/gpt2 --ids 5,17,3,250,17,3,9 --plain >"$tmp/lens.txt" 2>&1
check "lens: a header row of the prompt's positions and tokens" grep -q '^      0:&       1:2       2:\$       3:<0x9C>  4:2       5:\$       6:\*$' "$tmp/lens.txt"
check "lens: a row per layer, each position's top token as the tokenizer shows it (never raw bytes)" \
	grep -q '^L1    9         {         \\x1c      ' "$tmp/lens.txt"
check "lens: the last layer's top token at the last position is the model's next token (#186)" grep -q '<0xFE>$' "$tmp/lens.txt"
check "lens 1 6: the top token and its probability (PyTorch: 0.62670715...)" grep -q '1\. <0xFE> (#186)  p = 0\.626707  z = 11\.3997' "$tmp/lens.txt"
check "lens 1 6: the top few in PyTorch's order" sh -c 'grep -A6 "layer 1, position 6" "$1" | grep -o "(#[0-9]*)" | tr -d "\n" | grep -qx "(#186)(#172)(#70)(#76)(#203)"' - "$tmp/lens.txt"
check "lens 2 0: a layer out of range said with its range" grep -q 'lens (layer): expected a whole number from 0 to 1, got "2"' "$tmp/lens.txt"
check "lens 1: a cell needs both numbers" grep -q 'lens: expected 2 words, got 1' "$tmp/lens.txt"
printf 'lens\n' | "$ATTNVIZ" --plain lessons/gqa.json >"$tmp/lens-lesson.txt" 2>&1
check "lens on a lesson without a vocabulary: says what it needs" grep -q 'the logit lens needs a vocabulary' "$tmp/lens-lesson.txt"

# ---------------------------------------------------------------------------
# the full-screen view at 80×24: e on layer 0, head 0's thumbnail, and :lens
s=lens80
begin "$s" 80x24 --model tests/models/gpt2 --ids 5,17,3,250,17,3,9
keys "$s" v
shows "80x24: v opens the model's heads" "$s" 'every head at a glance'
keys "$s" e
wait_for "$s" 'previous-token score' >/dev/null
keys "$s" NPage NPage NPage
shows "80x24: e gives the induction score's numbers (PyTorch: 0.061254148...)" "$s" 'mean = 0\.735050 / 12 = 0\.0612541|= 0\.0612541'
shows "80x24: ... computed on random tokens repeated twice" "$s" 'computed on 12 random tokens, then the same 12 again'
keys "$s" Escape
wait_gone "$s" 'computed on 12 random' 3 >/dev/null
keys "$s" Escape
cmd "$s" "lens"
shows "80x24: :lens shows the table, a row per layer" "$s" 'L1    9         \{         \\x1c'
keys "$s" Escape
wait_gone "$s" 'logit lens' 3 >/dev/null
quits "$s" "80x24"

# L in the model view: the logit lens, a screen of its own (src/tui/tuilens.c): a row per
# layer, a column per position (12 columns each: 6 fit at 80 columns, every one of the 7 at
# 200), the last layer's last position selected first; arrows and < > move, e explains the
# cell with PyTorch's probability (tests/lens/make_lens_model.py: #186 p = 0.62670715...),
# Esc closes the pop-up, then goes back to the model view, then to the walk
for size in 80x24 200x50; do
	s=lensL${size%x*}
	begin "$s" "$size" --model tests/models/gpt2 --ids 5,17,3,250,17,3,9
	keys "$s" v
	wait_for "$s" 'every head at a glance' >/dev/null
	keys "$s" L
	case $size in
	80x24)
		shows "80x24: L opens the lens screen, the last 6 positions in view" "$s" 'logit lens: layers 0-1 of 2, positions 1-6 of 7'
		shows "80x24: ... the positions' tokens over the columns" "$s" '^ +1:2 +2:\$ +3:<0x9C> +4:2 +5:\$ +6:\*' ;;
	*)
		shows "200x50: L: every position fits" "$s" 'logit lens: layers 0-1 of 2, positions 0-6 of 7'
		shows "200x50: ... a row per layer, each cell the top token and its probability" "$s" '^L1 +9 .* <0xFE> +\.63' ;;
	esac
	shows "$size: the selected cell in full (layer 1, position 6: #186, 0.6267)" "$s" 'layer 1, position 6 \(\*\): <0xFE> p = 0\.6267; then'
	keys "$s" e
	shows "$size: e explains the cell with its probability (PyTorch: 0.62670715...)" "$s" '1\. <0xFE> \(#186\)  p = 0\.626707  z = 11\.3997'
	keys "$s" Escape
	wait_gone "$s" 'z = 11\.3997' 3 >/dev/null
	keys "$s" Up '<'
	shows "$size: Up and < move to layer 0, position 0" "$s" 'layer 0, position 0 \(&\):'
	[ "$size" = 80x24 ] && shows "80x24: ... the columns page back to position 0" "$s" 'positions 0-5 of 7'
	keys "$s" '>'
	shows "$size: > pages the positions" "$s" 'layer 0, position [56] '
	keys "$s" x
	shows "$size: a key it does not take is said, with the way back" "$s" 'key x does nothing in the logit lens'
	keys "$s" Escape
	shows "$size: Esc goes back to the model view" "$s" 'every head at a glance'
	wait_gone "$s" 'logit lens:' 3 >/dev/null
	keys "$s" Escape
	wait_gone "$s" 'every head at a glance' 3 >/dev/null
	quits "$s" "$size (lens)"
done
# a command typed in the lens: `heads sort prev` shows the heads it asks for
s=lensH
begin "$s" 80x24 --model tests/models/gpt2 --ids 5,17,3,250,17,3,9
keys "$s" v
wait_for "$s" 'every head at a glance' >/dev/null
keys "$s" L
wait_for "$s" 'logit lens: layers' >/dev/null
cmd "$s" "heads sort prev"
shows "80x24: heads sort typed in the lens closes it for the sorted heads" "$s" 'by previous-token score, highest first'
keys "$s" q
wait_gone "$s" 'every head at a glance' 3 >/dev/null
quits "$s" "80x24 (heads from the lens)"

finish
