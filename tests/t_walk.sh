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

# ---- one walk forward (§3): kvcache's decode steps, one token a step, one counter
printf 'step 4\nn\n' | "$ATTNVIZ" --plain --lang en lessons/kvcache.json >"$out" 2>"$err"
expect "walk: n at kvcache step 4 (token 0) goes to step 5 (token 1), not to a token inside step 4" \
	'grep -q "step 4/9, stage: decode, token 0 (机), cache 1 row\$" "$out" && grep -q "step 5/9, stage: decode, token 1 (器)\$" "$out" && [ "$(grep -c "^== " "$out")" -eq 3 ]'
expect "walk: one counter (no 'step 1 of 5', no 'Step 1 of 5:')" 'hasnt "$out" " of 5" && has "$out" "Token 1 (器) makes its q, k and v"'
# every n to the end: the tokens shown never go back, and each question's step comes before its token is shown
printf 'step 4\nn\nn\nn\nn\nn\nn\nn\nn\nn\nn\n' | "$ATTNVIZ" --plain --lang en lessons/kvcache.json >"$out" 2>"$err"
sed -n 's/^== .* step \([0-9]*\)\/9, stage: decode, token \([0-9]\).*/\1 \2/p' "$out" >"$tmp/walk"
expect "walk: kvcache's steps 4-9 show tokens 0 1 2 3 4 4, each once, in order" \
	'[ "$(awk "\$1 != p { printf \"%s \", \$2; p = \$1 }" "$tmp/walk")" = "0 1 2 3 4 4 " ] && [ "$(awk "{ print \$1 }" "$tmp/walk" | uniq | wc -l)" -eq 6 ] && awk "\$2 < last { exit 1 } { last = \$2 }" "$tmp/walk"'
printf 'step 5\np\n' | "$ATTNVIZ" --plain --lang en lessons/kvcache.json >"$out" 2>"$err"
expect "walk: p at step 5 goes back to step 4 at token 0" 'tail -n +2 "$out" | grep -q "step 4/9, stage: decode, token 0 (机)"'
printf 'step 5\n' | "$ATTNVIZ" --plain --lang zh lessons/kvcache.json >"$out" 2>"$err"
# (step 5 asks a question: the cache's size, which may be an answer, waits until it is answered)
expect "walk zh: one counter, the token named" 'has "$out" "第 5/9 步，阶段：decode，词元 1（器）" && hasnt "$out" "缓存 2 行" && hasnt "$out" "共 5 步"'
# flash: a step without a tile goes on from the tile before it (not back to the first); p goes back a step at a time
printf 'step 6\nskip\nn\n' | "$ATTNVIZ" --plain --lang en lessons/flash.json >"$out" 2>"$err"
expect "walk: flash step 7 stays at the last tile, (1, 1)" 'grep -q "step 7/8, stage: flash, tile (1, 1)\$" "$out" && hasnt "$out" "tile (0, 0)"'
printf 'step 4\np\n' | "$ATTNVIZ" --plain --lang en lessons/flash.json >"$out" 2>"$err"
expect "walk: p at flash step 4 (tile (0, 1)) goes to step 3 (tile (0, 0))" 'grep -q "step 3/8, stage: flash, tile (0, 0)\$" "$out"'

# ---- --check --strict (§1): a choice answered by the order of a pane shown beside it
# selfattn step 6 asks which word row 2 weighs most; without "hides": "scaled", scaled's row 2 is largest at saw too
sed 's/"answer": 1, "hides": "scaled"/"answer": 1/' lessons/selfattn.json >"$tmp/order.json"
"$ATTNVIZ" --check --strict "$tmp/order.json" >"$out" 2>"$err"
rc=$?
expect "strict: a softmax question beside its scores' order warns" \
	'[ "$rc" -eq 1 ] && has "$err" "order.json: steps[5]: warning: the answer can be read before it is answered: scaled[2] is largest at saw, as weights[2], a pane shown beside the question (name it in \"hides\")"'
fails=""
for f in lessons/*.json; do
	"$ATTNVIZ" --check --strict "$f" >/dev/null 2>"$tmp/strict.err" || fails="$fails $f: $(head -n 1 "$tmp/strict.err")"
done
expect "strict: every shipped lesson passes --check --strict" '[ -z "$fails" ] || { echo "$fails"; false; }'

# ---- the screen at 80×24 (§4): what a step is about is on it, whole
. "$(dirname "$0")/tmux.sh"
s=walk1
start "$s" 80 24 C.UTF-8 "XDG_STATE_HOME=$tmp/w-state" --lang en lessons/kvcache.json
wait_for "$s" 'step 1/' >/dev/null
cmd "$s" "step 6"
shows "80x24: kvcache's dec_scores title, in a third of the width, says ÷√3 later" "$s" '^dec_scores  5×5  ÷√3 later  '
shows "80x24: the stage line's one counter names the token" "$s" 'step 6/9  stage: decode, token 2 \(学\), cache 3 rows'
snap "$s"
expect "80x24: the decode formula wraps at a blank, whole (not cut at K_cac)" \
	'grep -q "^ softmax(q_t·K_cacheᵀ × factor); out_t = w·V_cache *\$" "$tmp/screen" && ! grep -q "K_cac *\$" "$tmp/screen"'
cmd "$s" "step 5"
shows "80x24: in a wider pane, q·k, ÷√3 in softmax" "$s" '^dec_scores  5×5  q·k, ÷√3 in softmax  '
quits "$s" walk1
# selfattn step 2 at 80×24: once answered, seven panes of three rows each; the rows shown are
# the ones the question was about, the two saws (rows 1 and 3), not rows 0-2
s=walk2
start "$s" 80 24 C.UTF-8 "XDG_STATE_HOME=$tmp/w-state" --lang en
wait_for "$s" 'step 1/' >/dev/null
keys "$s" n
wait_for "$s" 'step 2/' >/dev/null
cmd "$s" "answer 2"
shows "80x24: selfattn step 2 answered shows X, Q, K and V rows 1-3" "$s" '^X  4×3  r1-3 c0-2 .*Q  4×3  r1-3 c0-2'
snap "$s"
expect "80x24: ... both saws on screen in V" '[ "$(sed -n "/^V  4×3/,/^───/p" "$tmp/screen" | grep -c "^saw ")" -eq 2 ]'
quits "$s" walk2

# mla step 2 at 80×24: the panes give way to the open question, and the one hidden pane shown
# beside the focused one is the matrix it asks about (c_KV), not another holding equal numbers (c_Q)
s=walk3
start "$s" 80 24 C.UTF-8 "XDG_STATE_HOME=$tmp/w-state" --lang en lessons/mla.json
wait_for "$s" 'step 1/' >/dev/null
keys "$s" n
wait_for "$s" 'step 2/' >/dev/null
shows "80x24: mla step 2 shows the weight c_KV is made from (W_kva), beside the asked matrix's pane (c_KV)" "$s" '^W_kva  4×4  *c_KV$'
quits "$s" walk3

# sparse step 5 at 80×24: "which keys will the indexer keep?" hides the kept set (index_kept, and
# sparse, the stage's result) beside the index scores until it is answered; then shows them
s=walk4
start "$s" 80 24 C.UTF-8 "XDG_STATE_HOME=$tmp/w-state" --lang en lessons/sparse.json
wait_for "$s" 'step 1/' >/dev/null
cmd "$s" "step 5"
wait_for "$s" 'step 5/' >/dev/null
shows "80x24: sparse step 5 shows the index scores and hides the kept set" "$s" '^index_scores  6×6 .* index_kept$'
keys "$s" 3
shows "80x24: sparse step 5 answered shows the kept set, row 4 keeping keys 0, 3, 4" "$s" \
	'the  +0\.93 +-1\.34 +-6\.78 +2\.79 +4\.73 +-∞ +the +1\.00 +0\.00 +0\.00 +1\.00 +1\.00 +0\.00'
quits "$s" walk4

# modern (the course's capstone) at 80×24: each question's answer hidden until it is answered.
# Step 8 asks the sink's weight of row 0, head 0 (0.7679): no pane and no text says it before;
# step 15 asks the sliding layer's cache at the last token (2 rows) while it shows token 0.
s=walk5
start "$s" 80 24 C.UTF-8 "XDG_STATE_HOME=$tmp/w-state" --lang en lessons/modern.json
wait_for "$s" 'step 1/' >/dev/null
cmd "$s" "step 8"
wait_for "$s" 'Quiz: What weight does row 0 of head 0 give the sink' >/dev/null
snap "$s"
expect "80x24: modern step 8 hides the sink's weight before the answer" \
	'grep -q "^sink head 0" "$tmp/screen" && ! grep -Eq "0\.76|0\.77" "$tmp/screen" && ! grep -q "three quarters" "$tmp/screen"'
cmd "$s" "answer 0.768"
shows "80x24: ... and shows it (and the then text) once answered" "$s" 'the sink takes more than three quarters'
cmd "$s" "step 15"
wait_for "$s" 'Quiz: When the last token, mat, is decoded' >/dev/null
snap "$s"
expect "80x24: modern step 15 asks at token 0, the cache's size unsaid until it is answered" \
	'grep -q "stage: decode, token 0 (the)" "$tmp/screen" && ! grep -q "cache [0-9] row" "$tmp/screen" && ! grep -q "a sliding layer.s cache rolls" "$tmp/screen"'
keys "$s" 1
shows "80x24: ... answered, the then text says 2" "$s" "^ 2: a sliding layer's cache rolls"
quits "$s" walk5

# qknorm at 80×24: step 3 asks Q_norm[4][0] (1.897): no pane (Q_norm, Q_rot), title, status line
# or text shows it before the answer; step 6 asks what doubling W_q does to the scores: both
# the scores and the compare variant's ("no QK-norm") wait for the answer.
s=walk6
start "$s" 80 24 C.UTF-8 "XDG_STATE_HOME=$tmp/w-state" --lang en lessons/qknorm.json
wait_for "$s" 'step 1/' >/dev/null
cmd "$s" "step 3"
wait_for "$s" "Quiz: What is Q_norm\[4\]\[0\]" >/dev/null
snap "$s"
expect "80x24: qknorm step 3 hides Q_norm[4][0] before the answer" \
	'grep -q "^Q_norm head 0\|  Q_norm head 0" "$tmp/screen" && ! grep -Eq "1\.89|1\.90|0\.94|0\.95" "$tmp/screen" && ! grep -q "Q_rot" "$tmp/screen"'
cmd "$s" "answer 1.897"
shows "80x24: ... and shows it once answered" "$s" 'mat +1\.90 +0\.95'
cmd "$s" "step 6"
wait_for "$s" 'Quiz: If every entry of W_q were doubled' >/dev/null
snap "$s"
expect "80x24: qknorm step 6 hides the scores with and without QK-norm" \
	'[ "$(grep -o "press 1-4 first" "$tmp/screen" | wc -l)" -eq 2 ] && ! grep -q "40\.00" "$tmp/screen" && ! grep -q "factor cancels" "$tmp/screen"'
keys "$s" 1
shows "80x24: ... answered, both shown (40.00 without the norm)" "$s" 'sat .*2\.94 .*40\.00'
quits "$s" walk6

finish
