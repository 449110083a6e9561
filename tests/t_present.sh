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

finish
