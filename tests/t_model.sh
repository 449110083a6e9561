#!/bin/sh
# tests/t_model.sh — the model view (issue 22) in a real terminal (tmux, tests/tmux.sh):
# v and `heads` open every layer × head of lessons/gqa.json as thumbnails with their
# scores, arrows move the selection, e explains its scores, s and `heads sort` order
# them, Enter opens the head in the walk at its softmax stage, Esc returns; at 80×24
# and 200×50, UTF-8 and the C locale (ASCII), NO_COLOR; a click selects and opens.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

# ---------------------------------------------------------------------------
s=m80
begin "$s" 80x24 lessons/gqa.json
keys "$s" v
shows "80x24: v opens the model view" "$s" 'every head at a glance: layers 0-2 of 3'
shows "80x24: each head a thumbnail, the first selected" "$s" '^L0 .*\[h0\]|^ +\[h0\] +h1 +h2 +h3'
shows "80x24: the scores under the thumbnails" "$s" 'p\.36 f\.39'
shows "80x24: the selected head's scores in full" "$s" 'layer 0 head 0:  prev 0\.361  first 0\.392  diag 0\.513  induction —'
snap "$s"
check "80x24: shade glyphs in the thumbnails" grep -q '[░▒▓█]' "$tmp/screen"
check "80x24: the causal mask's hidden keys dotted" grep -q '··' "$tmp/screen"
keys "$s" Down Right Right
shows "80x24: arrows move the selection (layer 1, head 2)" "$s" 'layer 1 head 2:  prev 0\.364'
keys "$s" e
shows "80x24: e explains the scores with their numbers" "$s" 'mean = 1\.09267 / 3 = 0\.364222'
keys "$s" Escape
wait_gone "$s" 'mean = ' 3 >/dev/null
shows "80x24: the pop-up closes back to the model view" "$s" 'every head at a glance'
keys "$s" Enter
shows "80x24: Enter opens layer 1, head 2 at its softmax stage" "$s" 'layer 1 of 3 +stage: softmax +head 2 of 4'
shows "80x24: ... with its weights in view" "$s" 'weights head 2'
cmd "$s" "heads sort diag"
shows "80x24: heads sort diag orders by the diagonal" "$s" 'by diagonal score, highest first'
shows "80x24: ... the highest first and selected (layer 1 head 0)" "$s" 'layer 1 head 0:  prev 0\.368  first 0\.369  diag 0\.524'
keys "$s" s
shows "80x24: s sorts by the next score" "$s" 'by induction score'
keys "$s" q
wait_gone "$s" 'every head at a glance' 3 >/dev/null
shows "80x24: q returns to the walk" "$s" 'stage: softmax'
keys "$s" '?'
shows "80x24: ? lists the v key" "$s" 'the model view: every layer and head'
keys "$s" q
quits "$s" "80x24"

# ---------------------------------------------------------------------------
s=m200
begin "$s" 200x50 lessons/gqa.json
keys "$s" v
shows "200x50: a large screen shows every score on one line" "$s" 'p\.36 f\.39 d\.51 i—'
# a click (SGR mouse bytes, as in t_tui.sh) on layer 2, head 3's thumbnail (line 16,
# column 65: 3 label columns, 20 a thumbnail, 6 lines a layer) selects it; a second click opens it
tm send-keys -t "$s" -l "${ESC}[<0;65;16M${ESC}[<0;65;16m"
shows "200x50: a click selects a thumbnail" "$s" 'layer 2 head 3:  prev'
sleep 0.3
tm send-keys -t "$s" -l "${ESC}[<0;65;16M${ESC}[<0;65;16m"
shows "200x50: a click on the selected thumbnail opens it" "$s" 'layer 2 of 3 +stage: softmax +head 3 of 4'
quits "$s" "200x50"

# ---------------------------------------------------------------------------
s=mC
start "$s" 80 24 C "NO_COLOR=1" lessons/gqa.json
wait_for "$s" 'stage: input' >/dev/null
cmd "$s" "heads"
shows "C locale: heads opens the model view" "$s" 'every head at a glance'
snap "$s"
check "C locale: ASCII shades, no UTF-8" sh -c "grep -q '[#*:]' '$tmp/screen' && ! grep -q '[░▒▓█·—]' '$tmp/screen'"
shows "C locale: an undefined score is -" "$s" 'induction -'
keys "$s" Escape
wait_gone "$s" 'every head at a glance' 3 >/dev/null
# an open question about the weights keeps the thumbnails hidden
cmd "$s" "load selfattn"
cmd "$s" "step 6"
keys "$s" v
shows "C locale: v waits for an open question about the weights" "$s" 'answer the quiz first'
quits "$s" "C locale"

finish
