#!/bin/sh
# tests/t_walk.sh — what is left of issue 25: "finished" follows the session's
# one rule in the plain REPL too (no question open); decode and flash walks go
# forward once, with one counter, each question before the token or tile
# that shows its answer; kvcache's decode pane says the √3 scale; selfattn at
# 80×24 keeps a step's rows on screen and never cuts a formula mid-symbol.
. "$(dirname "$0")/lib.sh"
SRCDIR=${ATTNVIZ_SRCDIR:-$(pwd)}
cd "$SRCDIR" || bail "no source folder"
out=$tmp/out

# ---- "Finished" only with no question open (plain REPL)
printf 'step 12\n' | "$ATTNVIZ" --plain --lang en lessons/mask.json >"$out" 2>"$err"
expect "plain: the last step with questions open is not finished" \
	'hasnt "$out" "Finished. Next lesson" && has "$out" "Last step; questions still open:"'
printf 'step 12\n' | "$ATTNVIZ" --plain --lang zh lessons/mask.json >"$out" 2>"$err"
expect "plain zh: the last step with questions open is not finished" \
	'hasnt "$out" "学完了。下一课" && has "$out" "还有 5 道题没答"'

# ---- kvcache: dec_scores are raw q·k; the title says the softmax divides by √3 (d_k = 3)
printf 'step 5\n' | "$ATTNVIZ" --plain --lang en lessons/kvcache.json >"$out" 2>"$err"
expect "plain: dec_scores' title says ÷√3 in softmax" 'has "$out" "dec_scores  5 × 5  q·k, ÷√3 in softmax"'
printf 'step 5\n' | "$ATTNVIZ" --plain --lang zh lessons/kvcache.json >"$out" 2>"$err"
expect "plain zh: dec_scores' title says ÷√3" 'has "$out" "dec_scores  5 × 5  q·k，softmax 时再 ÷√3"'
printf 'step 5\n' | LC_ALL=C "$ATTNVIZ" --plain --lang en lessons/kvcache.json >"$out" 2>"$err"
expect "plain LANG=C: in ASCII" 'has "$out" "dec_scores  5 x 5  q.k, /sqrt(3) in softmax"'

finish
