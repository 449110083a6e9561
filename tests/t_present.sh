#!/bin/sh
# tests/t_present.sh — presenter mode and demos in class (issue 26 §6, §1's zoom rule
# for the terminal): the real binary in tmux (tests/tmux.sh) at 200×50 and 80×24.
# Prints "ok - NAME" / "not ok - NAME" and ends with "N passed, N failed, N skipped".
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

# measure SESSION COLS: "ROWS COLS", the percent of the panes' area (the lines
# between the stage line and the narration's rule) down to the last line with
# text, and of the screen's width out to the last column with text.
measure() {
	cap "$1" >"$tmp/m"
	m_rule=$(grep -n -m1 -E '^(─|-){20}' "$tmp/m" | cut -d: -f1)
	m_last=$(sed -n "2,$((m_rule - 1))p" "$tmp/m" | grep -n '[^ ]' | tail -n 1 | cut -d: -f1)
	m_wide=$(sed -n "2,$((m_rule - 1))p" "$tmp/m" | sed 's/ *$//' | wc -L)
	echo "$((m_last * 100 / (m_rule - 2))) $((m_wide * 100 / $2))"
}

# ---------------------------------------------------------------------------
# 200×50: the cells grow until the panes fill the screen (a 4×3 and a 4×4
# lesson filled 20-40% of it, the rest black).
s=big
begin "$s" 200x50 --present lessons/selfattn.json
measure "$s" 200 >"$tmp/pct"
read -r pr pc <"$tmp/pct"
expect "present 200x50: selfattn's input fills the panes' rows (${pr}%)" '[ "$pr" -ge 75 ]'
expect "present 200x50: and their columns (${pc}%)" '[ "$pc" -ge 50 ]'
# a row is a block: the line above "I"'s numbers carries the cells' colour (a background)
cmd "$s" "goto scores"
cmd "$s" "skip"
wait_for "$s" 'Skipped' >/dev/null
above=$(cap "$s" | grep -n -m1 '^I ' | cut -d: -f1)
snap "$s" -e
expect "present 200x50: cells are coloured blocks of several lines" \
	'[ -n "$above" ] && sed -n "$((above - 1))p" "$tmp/screen" | grep -q "48;5;"'
cmd "$s" "load multihead"
cmd "$s" "goto weighted"
measure "$s" 200 >"$tmp/pct"
read -r pr pc <"$tmp/pct"
expect "present 200x50: multihead's weighted (4×4, 6 panes) fills the rows (${pr}%)" '[ "$pr" -ge 75 ]'
expect "present 200x50: and the columns (${pc}%)" '[ "$pc" -ge 75 ]'
snap "$s"
expect "present 200x50: every pane whole (no r0-3 c0-1 cut in a title)" 'hasnt "$tmp/screen" " r0-"'
quits "$s" "present 200x50"

# ---------------------------------------------------------------------------
# 80×24: what the step is about is on screen: its focused pane whole, the
# formula, the text (it cut mask step 6's panes to r0-4 c0-5, showed flash's
# V and flash_m only, the opening text needed PgDn).
s=small
begin "$s" 80x24 --present lessons/selfattn.json
snap "$s"
expect "present 80x24: selfattn's opening text needs no PgDn" 'hasnt "$tmp/screen" PgDn'
expect "present 80x24: its four rows" 'grep -c "^saw " "$tmp/screen" | grep -qx 2'
cmd "$s" "load mask"
cmd "$s" "step 6"
keys "$s" 2
shows "present 80x24: mask step 6 answered" "$s" 'Right: 2\)'
snap "$s"
expect "present 80x24: mask step 6's focused pane whole (no r0-4 c0-5)" 'has "$tmp/screen" "masked head 0  7×7" && hasnt "$tmp/screen" " r0-"'
expect "present 80x24: its seven rows, 机 to 玩" 'grep -q "^机 " "$tmp/screen" && grep -q "^玩 " "$tmp/screen"'
expect "present 80x24: its formula" 'grep -q "^ masked_ij = scaled_ij" "$tmp/screen"'
cmd "$s" "load flash"
cmd "$s" "step 3"
shows "present 80x24: flash step 3" "$s" 'tile \(0, 0\)'
snap "$s"
for p in masked 'V ' flash_m flash_l flash_O flash_out; do
	expect "present 80x24: flash step 3 shows $p" 'grep -q "$p" "$tmp/screen"'
done
expect "present 80x24: flash's formula whole" 'grep -q "^ per tile S: .*rowsum P" "$tmp/screen"'
quits "$s" "present 80x24"

# Chinese at 80×24: the same step whole, the formula and the question.
s=smallzh
begin "$s" 80x24 --present --lang zh lessons/mask.json
cmd "$s" "step 6"
snap "$s"
expect "present 80x24 zh: mask step 6's question is on screen" 'grep -q "^ 测验" "$tmp/screen"'
keys "$s" 2
shows "present 80x24 zh: answered" "$s" '2\)'
snap "$s"
expect "present 80x24 zh: the focused pane whole" 'hasnt "$tmp/screen" " r0-" && grep -q "^玩 " "$tmp/screen"'
quits "$s" "present 80x24 zh"

# ---------------------------------------------------------------------------
# A demo's revealed answer is the class's: "Answer: …" on the screen and its
# own count, not "Quiz (skipped)" with "quiz 0/1" on the projector.
for lang in en zh; do
	s="reveal$lang"
	start "$s" 80 24 C.UTF-8 "" --present --lang "$lang" --demo lessons/demos/masking.txt
	i=0
	while [ "$i" -lt 12 ] && ! cap "$s" | grep -q '1-4'; do
		keys "$s" Space
		wait_for "$s" 'paused|question|暂停|提问' 2 >/dev/null
		i=$((i + 1))
	done
	snap "$s"
	expect "demo reveal $lang: the question is asked, nothing counted yet" 'hasnt "$tmp/screen" "quiz 0/" && hasnt "$tmp/screen" "测验 0/"'
	keys "$s" Space
	if [ "$lang" = en ]; then
		shows "demo reveal en: the narration says Answer: …" "$s" '^ Answer: 1\) 习, 真, 好, 玩'
		snap "$s"
		expect "demo reveal en: the count is the class's" 'has "$tmp/screen" "class 1 answered"'
		expect "demo reveal en: not skipped, not quiz 0/1" 'hasnt "$tmp/screen" "skipped" && hasnt "$tmp/screen" "quiz 0/"'
		expect "demo reveal en: the question stays, as the class's" 'has "$tmp/screen" "Quiz (the class'"'"'s): Which keys"'
	else
		shows "demo reveal zh: the narration says the answer" "$s" '^ 答案：1\) 习'
		snap "$s"
		expect "demo reveal zh: the count is the class's" 'has "$tmp/screen" "全班答了 1 题"'
		expect "demo reveal zh: not skipped" 'hasnt "$tmp/screen" "跳过" && hasnt "$tmp/screen" "测验 0/"'
	fi
	leaves_demo "$s" "demo reveal $lang"
done

# ---------------------------------------------------------------------------
# A demo shows what its script says at each pause: a question is on the
# screen only at a `quiz` line (multihead.txt's first pause had V hidden
# behind "press 1-4 first" and the h = 1 question open while it said Q, K
# and V are computed as with one head). Every stop of the script, at 200×50.
s=mhdemo
start "$s" 200 50 C.UTF-8 "" --present --demo lessons/demos/multihead.txt
wait_for "$s" 'demo [0-9]+/[0-9]+.*(paused|question)' 5 >/dev/null
bad="" stops=0 last=""
while [ "$stops" -lt 40 ]; do
	cap "$s" >"$tmp/stop"
	st=$(tail -n 1 "$tmp/stop")
	[ "$st" = "$last" ] && break
	last=$st
	stops=$((stops + 1))
	if grep -Eq '^ (Press 1-|Type :answer)' "$tmp/stop" && ! grep -q 'space reveals' "$tmp/stop"; then
		bad="$bad $(echo "$st" | grep -Eo 'line [0-9]+')"
	fi
	if [ "$stops" = 1 ]; then
		cp "$tmp/stop" "$tmp/first"
	fi
	keys "$s" Space
	wait_gone "$s" "$(printf '%s' "$st" | sed 's/[][().*+?^$|\\]/./g')" 3 >/dev/null
	wait_for "$s" 'paused|question|at the end|demo ([0-9]+)/\1' 3 >/dev/null
done
expect "multihead.txt: stops at its pauses ($stops)" '[ "$stops" -ge 10 ]'
expect "multihead.txt: a question is open only at a quiz line (open at:$bad)" '[ -z "$bad" ]'
expect "multihead.txt: its first stop asks the project step's question" 'grep -q "space reveals" "$tmp/first" && grep -q "How many do they hold with h = 1" "$tmp/first"'
tm kill-session -t "$s"
s=mhfirst
start "$s" 200 50 C.UTF-8 "" --present --demo lessons/demos/multihead.txt
wait_for "$s" 'space reveals' 5 >/dev/null
keys "$s" Space
shows "multihead.txt: at its first pause, the answer" "$s" '^ Answer: 1\) 64'
snap "$s"
expect "multihead.txt: first pause: Q, K and V shown, none behind press 1-4" \
	'grep -q "^Q  4×4\|  Q  4×4" "$tmp/screen" && grep -q "K  4×4" "$tmp/screen" && grep -q "V  4×4" "$tmp/screen" && hasnt "$tmp/screen" "press 1-4 first"'
leaves_demo "$s" "multihead.txt first pause"

# ---------------------------------------------------------------------------
# The terminal's zoom rule (inspect/heatmap.h, the exports' --numbers auto):
# presenting, a matrix past 16 a side is a heatmap without numbers, down-
# sampled past its room with the reduction said under the title; z brings
# the numbers back; a 7×7 keeps its numbers.
for size in 200x50 80x24; do
	s="heat${size%x*}"
	begin "$s" "$size" --present lessons/scale.json
	cmd "$s" "goto scores"
	cmd "$s" "skip"
	shows "zoom rule $size: scale's 123×123 scores are a heatmap" "$s" 'scores  123×123  heatmap'
	snap "$s"
	expect "zoom rule $size: the reduction said under the title" 'grep -Eq "(each cell the strongest of|each: strongest of) [0-9]+×[0-9]+" "$tmp/screen"'
	expect "zoom rule $size: no numbers in its cells (no r0-… c0-… window of them)" 'hasnt "$tmp/screen" " r0-"'
	keys "$s" z
	if wait_gone "$s" 'scores  123×123  heatmap' 3; then ok "zoom rule $size: z shows the numbers"; else screen_not_ok "zoom rule $size: z shows the numbers"; fi
	shows "zoom rule $size: the numbers scroll" "$s" 'scores  123×123  r0-'
	quits "$s" "zoom rule $size"
done
s=heatplain
begin "$s" 100x30 lessons/scale.json
cmd "$s" "goto scores"
cmd "$s" "skip"
snap "$s"
expect "zoom rule: the normal view keeps the numbers" 'has "$tmp/screen" "scores  123×123  r0-"'
keys "$s" z
shows "zoom rule: z's heatmap says its reduction as presenting does" "$s" 'each cell the strongest of [0-9]+×[0-9]+ \([0-9]+×[0-9]+ drawn\)'
quits "$s" "zoom rule 100x30"

finish
