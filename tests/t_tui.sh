#!/bin/sh
# tests/t_tui.sh — the full-screen visualizer end to end: the real binary ($ATTNVIZ)
# in a real terminal (tmux on a private socket), at 80×24 and 200×60, UTF-8 and C
# locales, with and without colour. Prints "ok - NAME" / "not ok - NAME" and ends
# with "N passed, N failed, N skipped" (tests/lib.sh).
#
# Each scenario starts attnviz inside `sh -c`, which prints "EXITED <status>" and
# whether the tty modes came back ("TTY-RESTORED") after attnviz returns.
# Screens are polled with capture-pane until a pattern shows or a timeout passes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

# ---------------------------------------------------------------------------
# Scenarios at a given size: start-up, every step and stage, explain, load,
# a bad load, set, resize, quit.
scenarios() {
	tag=$1 cols=$2 lines=$3
	s="main$cols"
	start "$s" "$cols" "$lines" C.UTF-8 ""

	shows "$tag: start-up shows the default lesson's title" "$s" 'Self-attention: I saw a saw'
	shows "$tag: start-up shows the stage line" "$s" 'step 1/[0-9]+ +stage: input'

	# Step with n until the last step, collecting the stage names seen.
	seen=" "
	last=0
	i=0
	while [ "$i" -lt 80 ]; do
		line=$(cap "$s" | grep -E 'step [0-9]+/[0-9]+' | head -n 1)
		k=$(echo "$line" | sed -n 's/.*step \([0-9]*\)\/\([0-9]*\).*/\1/p')
		n=$(echo "$line" | sed -n 's/.*step \([0-9]*\)\/\([0-9]*\).*/\2/p')
		st=$(echo "$line" | sed -n 's/.*stage: \([a-z]*\).*/\1/p')
		case "$seen" in *" $st "*) ;; *) seen="$seen$st " ;; esac
		if [ -n "$k" ] && [ "$k" = "$n" ]; then last=1; break; fi
		prev="step $k/$n"
		keys "$s" n
		wait_gone "$s" "$prev " 3 >/dev/null 2>&1
		i=$((i + 1))
	done
	if [ "$last" = 1 ]; then ok "$tag: n steps to the last step"; else screen_not_ok "$tag: n steps to the last step"; fi
	# The walk of the default lesson visits these stages.
	missing=""
	for st in input project scores softmax weighted; do
		case "$seen" in *" $st "*) ;; *) missing="$missing $st" ;; esac
	done
	if [ -z "$missing" ]; then ok "$tag: stepping shows every stage of the walk"; else not_ok "$tag: stepping misses:$missing (saw:$seen)"; fi
	keys "$s" n
	shows "$tag: n at the last step says so and stays" "$s" 'last step'

	keys "$s" g
	shows "$tag: g goes back to the first step" "$s" 'step 1/[0-9]+ +stage: input'

	# Every stage the lesson has, by :goto.
	for st in $(stages_of "$SRCDIR/lessons/selfattn.json"); do
		cmd "$s" "goto $st"
		shows "$tag: goto $st shows stage $st" "$s" "stage: $st( |\$)"
	done

	# Explain the cell under the cursor (the first step focuses input[1][1]).
	keys "$s" g
	wait_for "$s" 'stage: input' >/dev/null
	keys "$s" Enter
	shows "$tag: Enter explains the cell under the cursor" "$s" 'input\[[0-9]+\]\[[0-9]+\] = '
	keys "$s" Escape
	wait_gone "$s" 'close' 3 >/dev/null

	# Cursor moves and operands: scores after the quiz.
	cmd "$s" "goto scores"
	cmd "$s" "skip"
	keys "$s" Right
	shows "$tag: arrows move the cell cursor" "$s" 'scores\[[0-9]+\]\[[0-9]+\] = '
	snap "$s" -e
	check "$tag: operands of the cursor cell are highlighted" grep -q '4m' "$tmp/screen"

	# An edit recomputes: W_q row 1 of the default lesson is 2 1 2, Q's rows "saw" follow it
	# (the step is about the two saws: at 80x24 its panes show rows 1-3)
	cmd "$s" "goto project"
	shows "$tag: project shows Q" "$s" 'saw +2\.00 +1\.00 +2\.00'
	cmd "$s" "set W_q[1][0] 3"
	shows "$tag: set W_q[1][0] 3 recomputes Q" "$s" 'saw +3\.00 +1\.00 +2\.00'

	# A lesson by file.
	cmd "$s" "load lessons/mask.json"
	shows "$tag: :load lessons/mask.json shows its title" "$s" 'Masked attention'
	# A bad file: the error in the status line, the lesson kept.
	printf '{ "attnviz": 1, nope\n' >"$tmp/bad.json"
	cmd "$s" "load $tmp/bad.json"
	shows "$tag: :load of a bad file shows the error" "$s" 'bad\.json:[0-9]+'
	snap "$s"
	check "$tag: :load of a bad file keeps the lesson" grep -q 'Masked attention' "$tmp/screen"
	# the error's line of the file and its caret are shown too, the caret under the column at fault
	printf '{"attnviz": 1, "title": "bad",\n "W_q": [[1,0],[0,1]],}\n' >"$tmp/comma.json"
	cmd "$s" "load $tmp/comma.json"
	shows "$tag: :load's error shows the file's line" "$s" '^  "W_q": \[\[1,0\],\[0,1\]\],\}$'
	shows "$tag: and the caret under the trailing comma" "$s" '^                      \^$'
	cmd "$s" "goto nowhere"
	shows "$tag: a bad command argument is reported" "$s" 'unknown stage|nowhere'
	cmd "$s" "frobnicate"
	shows "$tag: an unknown command is reported" "$s" 'unknown command'

	# Help overlay from the command table.
	keys "$s" '?'
	shows "$tag: ? shows the keys" "$s" 'where did this number come from'
	keys "$s" G
	shows "$tag: ? lists the commands (scrolled to the end)" "$s" 'quit +leave attnviz|help \[COMMAND\]'
	keys "$s" q
	wait_gone "$s" 'where did this number|leave attnviz' 3 >/dev/null

	# Resize below the minimum and back.
	tm resize-window -t "$s" -x 30 -y 10
	shows "$tag: a 30x10 terminal says too small" "$s" 'too small'
	tm resize-window -t "$s" -x "$cols" -y "$lines"
	shows "$tag: growing back redraws the lesson" "$s" 'Masked attention.*step'

	keys "$s" q
	shows "$tag: q quits with status 0" "$s" 'EXITED 0'
	shows "$tag: the terminal modes are restored" "$s" 'TTY-RESTORED'
	alt=$(tm display-message -p -t "$s" '#{alternate_on}')
	if [ "$alt" = 0 ]; then ok "$tag: the alternate screen is left"; else not_ok "$tag: the alternate screen is left (alternate_on=$alt)"; fi
	snap "$s"
	check "$tag: the shell's screen is back" hasnt "$tmp/screen" 'stage:'
	tm kill-session -t "$s"
}

scenarios "80x24" 80 24
scenarios "200x60" 200 60

# ---------------------------------------------------------------------------
# The command line: show focuses a matrix of a head, H/L change head, Tab completes,
# history comes back with Up, Esc cancels.
s=cmdline
start "$s" 100 30 C.UTF-8 "" multihead
shows "cmdline: a lesson by name" "$s" 'Multi-head attention'
cmd "$s" "show weights 1"
shows "cmdline: show weights 1 goes to its stage" "$s" 'stage: softmax +head 1 of 2'
shows "cmdline: show weights 1 shows head 1's weights" "$s" 'weights head 1'
keys "$s" H
shows "cmdline: H goes to the previous head" "$s" 'head 0 of 2'
keys "$s" L
shows "cmdline: L goes to the next head" "$s" 'head 1 of 2'
keys "$s" : g o t
keys "$s" Tab
shows "cmdline: Tab completes a command name" "$s" '^:goto( |$)'
keys "$s" -l "sca"
keys "$s" Tab
shows "cmdline: Tab completes a stage name" "$s" '^:goto scale'
keys "$s" Escape
wait_gone "$s" '^:goto' 3 >/dev/null
keys "$s" : Up
shows "cmdline: Up brings back the last command" "$s" '^:show weights 1'
keys "$s" Escape
shows "cmdline: Esc cancels the line" "$s" 'Enter: where from'
keys "$s" q
shows "cmdline: q quits" "$s" 'EXITED 0 TTY-RESTORED'

# ---------------------------------------------------------------------------
# C locale: ASCII only (-inf, x), lesson text that is not ASCII shown as '?'.
s=clocale
start "$s" 80 24 C "" lessons/mask.json
shows "C locale: starts" "$s" 'Masked attention'
cmd "$s" "goto mask"
cmd "$s" "skip"
shows "C locale: masked cells show -inf" "$s" '-inf'
snap "$s"
check "C locale: no UTF-8 -∞" hasnt "$tmp/screen" '∞'
keys "$s" q
shows "C locale: q quits and restores" "$s" 'EXITED 0 TTY-RESTORED'

# C locale and --lang zh: Chinese cannot be spelled in ASCII, so the narration is English, and the status says why.
s=clocalezh
start "$s" 80 24 C "" --lang zh lessons/dot.json
shows "C locale, --lang zh: the status line says Chinese needs UTF-8" "$s" 'Chinese needs a UTF-8 terminal \(LANG=zh_CN.UTF-8\): narration in English'
snap "$s"
check "C locale, --lang zh: the narration is English, not question marks" has "$tmp/screen" 'The words now have small dense embeddings'
check "C locale, --lang zh: no run of question marks" sh -c "! grep -q '[?][?][?][?]' '$tmp/screen'"
keys "$s" q
shows "C locale, --lang zh: q quits" "$s" 'EXITED 0 TTY-RESTORED'

# NO_COLOR: no colour escapes, glyph shading instead.
s=nocolor
start "$s" 80 24 C.UTF-8 "NO_COLOR=1"
shows "NO_COLOR: starts" "$s" 'stage: input'
cmd "$s" "goto softmax"
cmd "$s" "skip"
wait_for "$s" 'weights' >/dev/null
snap "$s" -e
expect "NO_COLOR: no colours" '[ -s "$tmp/screen" ] && ! grep -Eq "\[(3|4)8;5;|\[3[0-7]m|\[4[0-7]m" "$tmp/screen"'
snap "$s"
check "NO_COLOR: cells carry shade glyphs" grep -q '[░▒▓█]' "$tmp/screen"
keys "$s" q
shows "NO_COLOR: q quits" "$s" 'EXITED 0'

# Signals: SIGTERM restores the terminal; Ctrl-Z suspends and SIGCONT redraws.
s=sigterm
start "$s" 80 24 C.UTF-8 ""
wait_for "$s" 'stage: input' >/dev/null
pid=$(attnviz_pid "$s")
if [ -n "$pid" ]; then
	kill -TERM "$pid"
	shows "SIGTERM: exits" "$s" 'EXITED 143'
	shows "SIGTERM: terminal restored" "$s" 'TTY-RESTORED'
else
	not_ok "SIGTERM: no attnviz process found"
fi

s=sigint
start "$s" 80 24 C.UTF-8 ""
wait_for "$s" 'stage: input' >/dev/null
keys "$s" : g o
shows "Ctrl-C: the command line is open" "$s" '^:go'
keys "$s" C-c
shows "Ctrl-C on the command line cancels it" "$s" 'Enter: where from'
snap "$s"
check "Ctrl-C on the command line keeps attnviz running" hasnt "$tmp/screen" 'EXITED'
keys "$s" C-c
shows "Ctrl-C quits (status 130)" "$s" 'EXITED 130 TTY-RESTORED'

s=suspend
start "$s" 80 24 C.UTF-8 ""
wait_for "$s" 'stage: input' >/dev/null
keys "$s" n
wait_for "$s" 'step 2/' >/dev/null
keys "$s" C-z
shows "Ctrl-Z: suspends and gives the terminal back" "$s" 'SUSPENDED'
alt=$(tm display-message -p -t "$s" '#{alternate_on}')
if [ "$alt" = 0 ]; then ok "Ctrl-Z: the alternate screen is left while stopped"; else not_ok "Ctrl-Z: the alternate screen is left while stopped"; fi
: >"$tmp/resume-$s"
shows "Ctrl-Z: resuming redraws the same step" "$s" 'step 2/[0-9]+ +stage: project'
keys "$s" q
shows "Ctrl-Z: quits normally after resuming" "$s" 'EXITED 0 TTY-RESTORED'

# A signal that ends attnviz (issue 27, finding 6): the terminal's modes, the
# main screen, the keypad and the mouse are all given back.
for sigrc in USR1:138 USR2:140 PIPE:141 ALRM:142; do
	sig=${sigrc%:*}
	s=sig$sig
	start "$s" 80 24 C.UTF-8 ""
	wait_for "$s" 'stage: input' >/dev/null
	pid=$(attnviz_pid "$s")
	if [ -z "$pid" ]; then
		not_ok "SIG$sig: no attnviz process found"
		continue
	fi
	expect "SIG$sig: the mouse is on before" '[ "$(tm display-message -p -t "$s" "#{mouse_any_flag}#{mouse_standard_flag}#{mouse_button_flag}")" != 000 ]'
	kill -"$sig" "$pid"
	shows "SIG$sig: ends attnviz with the terminal modes restored" "$s" "EXITED ${sigrc#*:} TTY-RESTORED"
	flags=$(tm display-message -p -t "$s" '#{alternate_on}#{mouse_any_flag}#{mouse_standard_flag}#{mouse_button_flag}#{mouse_sgr_flag}#{keypad_flag}')
	expect "SIG$sig: no alternate screen, mouse or keypad mode left on (got $flags)" '[ "$flags" = 000000 ]'
done

# A crash (SIGABRT; no core file: ulimit -c 0): the mouse is off too, so clicks type nothing into the shell
s=sigABRT
tm new-session -d -s "$s" -x 80 -y 24 \
	"ulimit -c 0; env -u NO_COLOR TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 XDG_STATE_HOME=$STATE $ATTNVIZ; echo EXITED \$?; sleep 600"
wait_for "$s" 'stage: input' >/dev/null
pid=$(attnviz_pid "$s")
if [ -n "$pid" ]; then
	kill -ABRT "$pid"
	shows "SIGABRT: ends attnviz" "$s" 'EXITED 134'
	flags=$(tm display-message -p -t "$s" '#{alternate_on}#{mouse_any_flag}#{mouse_standard_flag}#{mouse_button_flag}#{mouse_sgr_flag}#{keypad_flag}')
	expect "SIGABRT: no alternate screen, mouse or keypad mode left on (got $flags)" '[ "$flags" = 000000 ]'
else
	not_ok "SIGABRT: no attnviz process found"
fi

# SIGSTOP from outside, the terminal put in the shell's modes meanwhile, then
# SIGCONT: attnviz puts its own modes back (keys work without Enter).
s=sigstop
tm new-session -d -s "$s" -x 80 -y 24 \
	"env -u NO_COLOR TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 XDG_STATE_HOME=$STATE $ATTNVIZ; echo EXITED \$?; sleep 600"
wait_for "$s" 'stage: input' >/dev/null
pid=$(attnviz_pid "$s")
ptty=$(tm display-message -p -t "$s" '#{pane_tty}')
if [ -n "$pid" ] && [ -n "$ptty" ]; then
	kill -STOP "$pid"
	sleep 0.3
	stty -F "$ptty" sane 2>/dev/null
	kill -CONT "$pid"
	sleep 0.5
	expect "SIGSTOP, SIGCONT: the terminal is in attnviz's modes again" 'stty -F "$ptty" -a 2>/dev/null | grep -q -- "-icanon"'
	keys "$s" n
	shows "SIGSTOP, SIGCONT: a key works without Enter" "$s" 'step 2/'
	keys "$s" q
	shows "SIGSTOP, SIGCONT: q quits" "$s" 'EXITED 0'
else
	not_ok "SIGSTOP: no attnviz process or pane tty found"
fi
tm kill-session -t "$s" 2>/dev/null

# ---------------------------------------------------------------------------
# Presenter mode: the key line hidden, the formula on the narration's first line,
# at 80x24 (it degrades) and 200x60 (wider cells, blank lines between rows).
for size in 80x24 200x60; do
	c=${size%x*} l=${size#*x}
	s="present$c"
	start "$s" "$c" "$l" C.UTF-8 "" --present
	shows "present $size: starts" "$s" 'stage: input'
	snap "$s"
	check "present $size: no key line" hasnt "$tmp/screen" 'n/spc next'
	cmd "$s" "goto softmax"
	cmd "$s" "skip"
	shows "present $size: the formula is on the narration's first line" "$s" '^ weights = softmax\(scaled\)'
	if cap "$s" | grep -A1 '^ weights = softmax' | tail -n 1 | grep -q '^ *$'; then ok "present $size: a blank line under the formula"; else not_ok "present $size: a blank line under the formula"; fi
	if [ "$size" = 200x60 ]; then
		# the rows of the matrices with blank lines between them, and wider cells
		if cap "$s" | grep -A1 '^I  ' | tail -n 1 | grep -q '^ *$'; then ok "present $size: blank lines between rows"; else not_ok "present $size: blank lines between rows"; fi
		snap "$s"
		check "present $size: wider cells" grep -Eq '5\.00 {5,}2\.00' "$tmp/screen"
	fi
	cmd "$s" "present off"
	shows "present $size: :present off brings the key line back" "$s" 'n/spc next'
	cmd "$s" "present on"
	if wait_gone "$s" 'n/spc next' 3; then ok "present $size: :present on hides it again"; else not_ok "present $size: :present on hides it again"; fi
	keys "$s" q
	shows "present $size: q quits" "$s" 'EXITED 0 TTY-RESTORED'
	tm kill-session -t "$s"
done

# Operands in presenter mode: reverse + bold.
s=presentops
start "$s" 100 30 C.UTF-8 "" --present
cmd "$s" "goto scores"
cmd "$s" "skip"
wait_for "$s" 'scores' >/dev/null
snap "$s" -e
check "present: operands in reverse video" grep -Eq '\[([0-9]+;)*7(;[0-9]+)*m' "$tmp/screen"
keys "$s" q
tm kill-session -t "$s"

# ---------------------------------------------------------------------------
# Demo scripts: one that plays to the end by itself (wait 0.1, no pause), one
# with a pause answered with space; p goes back one command, q leaves.
s=demo1
plays "$s" '# a tiny demo\ngoto scores\nwait 0.1\ngoto softmax\nwait 0.1\n\ngoto weighted\n'
shows "demo: plays to the end by itself" "$s" 'stage: weighted'
shows "demo: the status line says where the demo is" "$s" 'demo 5/5, line [0-9]+'
keys "$s" p
shows "demo: p goes back one command" "$s" 'stage: softmax'
shows "demo: p shows the line" "$s" 'demo 4/5, line [0-9]+'
keys "$s" p
shows "demo: p again goes back to the command before" "$s" 'stage: scores'
keys "$s" n
shows "demo: n runs the next command by hand" "$s" 'stage: softmax'
keys "$s" q
shows "demo: q leaves the demo" "$s" 'demo left'
snap "$s"
check "demo: attnviz runs on after leaving the demo" hasnt "$tmp/screen" 'EXITED'
keys "$s" q
shows "demo: a second q quits" "$s" 'EXITED 0 TTY-RESTORED'
tm kill-session -t "$s"

printf 'goto scores\npause\n# the class talks\ngoto softmax\nbogus-command\ngoto weighted\n' >"$tmp/pause.txt"
s=demo2
start "$s" 100 30 C.UTF-8 "" --present --demo "$tmp/pause.txt"
shows "demo pause: stops at the pause" "$s" 'demo 2/5, line [0-9]+ +paused'
sleep 0.3
snap "$s"
check "demo pause: stays at the pause" grep -q 'stage: scores' "$tmp/screen"
keys "$s" Space
shows "demo pause: a bad line pauses the demo on its error" "$s" 'bogus-command.*paused'
keys "$s" Space
shows "demo pause: space goes on, past the bad line, to the end" "$s" 'stage: weighted'
shows "demo pause: the end of the script" "$s" 'demo 5/5, line [0-9]+'
keys "$s" q
wait_for "$s" 'demo left' >/dev/null
keys "$s" q
shows "demo pause: quits" "$s" 'EXITED 0 TTY-RESTORED'
tm kill-session -t "$s"

# A bad line in a demo is shown, the demo pauses there, and space goes on (:source).
printf 'goto nowhere\nwait 1\ngoto softmax\n' >"$tmp/bad.txt"
s=demo3
start "$s" 100 30 C.UTF-8 ""
cmd "$s" "source $tmp/bad.txt"
shows "demo: an error in a line is shown" "$s" 'unknown stage|nowhere'
shows "demo: and the demo pauses on it" "$s" 'paused'
keys "$s" Space
shows "demo: space goes on" "$s" 'stage: softmax'
keys "$s" q
wait_for "$s" 'demo left' >/dev/null
keys "$s" q
shows "demo: :source, then quit" "$s" 'EXITED 0'
tm kill-session -t "$s"

# A demo whose lesson does not load pauses there instead of going on with the wrong numbers.
printf 'load nosuchlesson\ngoto softmax\n' >"$tmp/noload.txt"
s=demo4
start "$s" 100 30 C.UTF-8 ""
cmd "$s" "source $tmp/noload.txt"
shows "demo: a failed load pauses the demo" "$s" 'paused'
shows "demo: and says why" "$s" 'no lesson named'
keys "$s" ' '
shows "demo: space goes on after a failed load" "$s" 'stage: softmax'
keys "$s" q
wait_for "$s" 'demo left' >/dev/null
keys "$s" q
shows "demo: failed load, then quit" "$s" 'EXITED 0'
tm kill-session -t "$s"

# The shipped demos play in the TUI (q after their first pause).
for d in masking multihead; do
	s="ship$d"
	start "$s" 100 30 C.UTF-8 "" --present --demo "lessons/demos/$d.txt"
	# (beside a long message, such as load's, the place is the short "demo k/N paused";
	# at a `quiz` line, "demo k/N  question": multihead.txt asks its first question there)
	shows "lessons/demos/$d.txt: plays to its first pause" "$s" 'demo [0-9]+/[0-9]+(, line [0-9]+)? +(paused|question)'
	snap "$s"
	expect "lessons/demos/$d.txt: no error on the way" 'hasnt "$tmp/screen" unknown && hasnt "$tmp/screen" error'
	keys "$s" q
	wait_for "$s" 'demo left' >/dev/null
	keys "$s" q
	shows "lessons/demos/$d.txt: quits" "$s" 'EXITED 0 TTY-RESTORED'
	tm kill-session -t "$s"
done

# :play 0.2 advances by itself; a key stops it (mask.json: no question before step 5, where play stops: t_teach.sh).
s=play
start "$s" 100 30 C.UTF-8 "" lessons/mask.json
wait_for "$s" 'stage: input' >/dev/null
cmd "$s" "play 0.2"
shows ":play 0.2 advances" "$s" 'step 3/' 5
keys "$s" x
shows ":play: a key stops it" "$s" 'play stopped'
st1=$(cap "$s" | grep -Eo 'step [0-9]+/' | head -n 1)
sleep 0.6
st2=$(cap "$s" | grep -Eo 'step [0-9]+/' | head -n 1)
if [ "$st1" = "$st2" ]; then ok ":play: stopped stays"; else not_ok ":play: stopped stays ($st1 then $st2)"; fi
cmd "$s" "play 0"
shows ":play 0 is refused" "$s" 'play: expected seconds'
keys "$s" q
shows ":play: quits" "$s" 'EXITED 0'
tm kill-session -t "$s"

# ---------------------------------------------------------------------------
# --record: an asciicast v2 file (unit_record checks the format closely).
s=record
start "$s" 90 25 C.UTF-8 "" --record "$tmp/rec.cast" lessons/mask.json
shows "record: starts" "$s" 'Masked attention'
keys "$s" n
shows "record: steps" "$s" 'step 2/'
tm resize-window -t "$s" -x 100 -y 30
# (at 90 columns X is cut, "X  7×4  r0-6 c0-2": whole, it shows attnviz has redrawn at 100)
shows "record: redraws at the new size" "$s" 'X  7×4 +W_q  4×4'
keys "$s" q
shows "record: quits and restores the terminal" "$s" 'EXITED 0 TTY-RESTORED'
expect "record: the file is in place" '[ -s "$tmp/rec.cast" ] && [ ! -e "$tmp/rec.cast.part" ]'
head -n 1 "$tmp/rec.cast" >"$tmp/rec-header.json"
printf '{"version": 2, "width": 90, "height": 25, "idle_time_limit": 3, "env": {"TERM": "xterm-256color"}, "title": "Masked attention: the decoder may not look ahead"}\n' >"$tmp/rec-want.json"
check "record: asciicast v2 header (the lesson's title, idle_time_limit 3)" \
	"$BUILD/tests/jsoncmp" --only-expected-keys "$tmp/rec-want.json" "$tmp/rec-header.json"
check "record: a timestamp in the header" grep -q '"timestamp": [0-9]' "$tmp/rec-header.json"
sed -n '2,$p' "$tmp/rec.cast" >"$tmp/events"
if [ -s "$tmp/events" ] && ! grep -qv '^\[[0-9]*\.[0-9]*, "[or]", ".*"\]$' "$tmp/events"; then ok "record: every event is [time, code, data]"; else not_ok "record: every event is [time, code, data]"; fi
if grep -q '"r", "100x30"' "$tmp/rec.cast"; then ok "record: the resize is an r event"; else not_ok "record: the resize is an r event"; fi
if grep -q 'Masked attention' "$tmp/rec.cast"; then ok "record: the screen's text is in the events"; else not_ok "record: the screen's text is in the events"; fi
if [ -s "$tmp/events" ] && sed 's/^\[\([0-9.]*\),.*/\1/' "$tmp/events" | sort -n -c 2>/dev/null; then ok "record: times never go back"; else not_ok "record: times never go back"; fi
tm kill-session -t "$s"
"$ATTNVIZ" --record "$tmp/x.cast" --plain </dev/null >/dev/null 2>"$err"
rc=$?
expect "record: refused with --plain (exit 2)" '[ "$rc" -eq 2 ] && [ ! -e "$tmp/x.cast" ]'

# ---------------------------------------------------------------------------
# Themes: every theme file loads with :theme; a malformed one is an error and
# the default comes back.
s=themes
start "$s" 100 30 C.UTF-8 ""
wait_for "$s" 'stage: input' >/dev/null
for f in "$SRCDIR"/assets/themes/*.json; do
	name=$(basename "$f" .json)
	cmd "$s" "theme $name"
	shows ":theme $name loads" "$s" "theme $name \\([0-9]+ colours\\)"
done
printf '{ "name": "broken", "roles": { "stage": { "fg": "purplish" } } }\n' >"$tmp/broken.json"
cmd "$s" "theme $tmp/broken.json"
shows ":theme of a malformed file is an error" "$s" 'using the default theme: .*broken\.json'
cmd "$s" "theme nosuchtheme"
shows ":theme of a missing theme is an error" "$s" 'using the default theme: .*nosuchtheme'
cmd "$s" "goto softmax"
shows ":theme: after a bad theme attnviz goes on" "$s" 'stage: softmax'
keys "$s" q
shows ":theme: quits" "$s" 'EXITED 0'
tm kill-session -t "$s"
# --theme light paints its own white background (on a dark terminal it drew grey text on black);
# :theme default gives the terminal its own colours back
s=themelight
start "$s" 100 30 C.UTF-8 "" --theme light
wait_for "$s" 'stage: input' >/dev/null
sleep 0.2
snap "$s" -e
check "--theme light paints its background (colour 231)" grep -q '48;5;231m' "$tmp/screen"
cmd "$s" "theme default"
wait_for "$s" "theme default" >/dev/null
cmd "$s" "goto softmax"
wait_for "$s" 'stage: softmax' >/dev/null
sleep 0.2
snap "$s" -e
check ":theme default after light: the terminal's own background again" hasnt "$tmp/screen" '48;5;231m'
keys "$s" q
tm kill-session -t "$s"
s=themeopt
start "$s" 100 30 C.UTF-8 "" --theme projector
shows "--theme projector starts" "$s" 'stage: input'
keys "$s" q
shows "--theme projector: quits" "$s" 'EXITED 0'
tm kill-session -t "$s"

# ---------------------------------------------------------------------------
# Comparison view on scale.json: both variants, the differing cells marked;
# mean and σ in the title of score panes; the parameter count on the stage line.
s=compare
start "$s" 200 60 C.UTF-8 "" lessons/scale.json
wait_for "$s" 'stage: input' >/dev/null
cmd "$s" "compare on"
cmd "$s" "goto softmax"
cmd "$s" "skip"
shows "compare: the variant's pane, with its label" "$s" 'scaled by 1/√d_k: weights'
shows "compare: the cells that differ are counted" "$s" '[0-9]+ differ \(\*\)'
snap "$s"
check "compare: differing cells carry a *" grep -Eq '\*0\.[0-9][0-9]' "$tmp/screen"
shows "stats: mean and sigma in a score pane's title" "$s" 'μ -?[0-9.]+ σ [0-9.]+'
cmd "$s" "compare off"
if wait_gone "$s" 'differ \(\*\)' 3; then ok "compare off: one variant again"; else screen_not_ok "compare off: one variant again"; fi
cmd "$s" "goto project"
shows "stats: the parameter count on the stage line" "$s" 'stage: project.*params [0-9]+'
keys "$s" q
tm kill-session -t "$s"

# Row sums and the legend (UTF-8), then the legend in the C locale.
s=sums
start "$s" 100 30 C.UTF-8 ""
cmd "$s" "goto softmax"
cmd "$s" "skip"
shows "stats: a Σ column beside the weights" "$s" 'Σ'
if cap "$s" | grep -E '^I ' | grep -Eq '1\.00 *$'; then ok "stats: row sums are 1"; else not_ok "stats: row sums are 1"; fi
shows "legend: the value range and the ramp under a pane" "$s" '[0-9.]+ ▁▂▃▄▅▆▇ [0-9.]+'
keys "$s" q
tm kill-session -t "$s"

s=legendc
start "$s" 100 30 C "" lessons/mask.json
cmd "$s" "goto softmax"
cmd "$s" "skip"
shows "legend: ASCII in the C locale" "$s" '[0-9.]+ \.:-=\+\*# [0-9.]+'
keys "$s" q
tm kill-session -t "$s"

# The last step offers the next lesson once no question is open (issue 25 §2):
# G jumps there past five open questions; n walks there, asked once and
# skipping each (n n at a question).
s=nextlesson
start "$s" 100 30 C.UTF-8 ""
wait_for "$s" 'stage: input' >/dev/null
keys "$s" G
shows "the last step with questions open says how many, not finished!" "$s" 'questions still open: 5'
keys "$s" g n n n n n n n n n n n n n
shows "the last step offers the next lesson" "$s" 'finished! next: :load [a-z]+'
keys "$s" q
tm kill-session -t "$s"

# ---------------------------------------------------------------------------
# The Transformer block at 80x24: block.json's stage line names the stage, the
# block's map on the narration's rule brackets the current sublayer, and :goto
# norm1 shows the rows' statistics beside the norm; rmsnorm.json (two
# pre-norm layers): ] moves to layer 1.
s=block
start "$s" 80 24 C.UTF-8 "" lessons/block.json
shows "block: the stage line says the stage" "$s" 'step 1/[0-9]+ +stage: input'
shows "block: the map brackets x at the input" "$s" '── \[x\] → attention → \+ → N1 → FFN → \+ → N2 ─'
keys "$s" n
shows "block: n goes to attention's softmax" "$s" 'step 2/[0-9]+ +stage: softmax'
shows "block: the map brackets attention" "$s" '── x → \[attention\] → \+ → N1'
cmd "$s" "goto residual1"
shows "block: :goto residual1 says residual1" "$s" 'stage: residual1'
shows "block: the map brackets the first +" "$s" 'x → attention → \[\+\] → N1'
cmd "$s" "goto norm1"
shows "block: :goto norm1 says norm1" "$s" 'stage: norm1'
shows "block: :goto norm1 shows norm1_stats" "$s" 'norm1_stats +4×2'
shows "block: the map brackets N1" "$s" '→ \+ → \[N1\] → FFN'
cmd "$s" "goto ffn_out"
shows "block: the map brackets the FFN" "$s" 'N1 → \[FFN\] → \+ → N2'
quits "$s" block

s=layers
start "$s" 80 24 C.UTF-8 "" lessons/rmsnorm.json
shows "rmsnorm: starts at layer 0" "$s" 'layer 0 of 2 +stage: input'
shows "rmsnorm: the pre-norm map" "$s" '── \[x\] → N1 → attention → \+ → N2 → FFN → \+'
keys "$s" ']'
shows "rmsnorm: ] moves to layer 1" "$s" 'layer 1 of 2 +stage: input'
shows "rmsnorm: the last layer's map ends with the final norm" "$s" '→ FFN → \+ → final N ─'
keys "$s" '['
shows "rmsnorm: [ moves back to layer 0" "$s" 'layer 0 of 2 +stage: input'
quits "$s" rmsnorm

# encdec.json at 80x24: the walk starts in the encoder (its two layers, each
# with its question), n goes on into the decoder and p back; the decoder's
# map shows its three sublayers, lit on both of its links; then its
# cross-attention with scores of decoder tokens × encoder tokens (the quiz on
# the shape answered with its key), and the §3.4 comparison: the variant with
# two decoder tokens has the same two rows, no cell marked.
s=encdec
start "$s" 80 24 C.UTF-8 "" lessons/encdec.json
shows "encdec: starts in the encoder's first layer" "$s" 'layer 0/2 · encoder · self-attention +stage: input'
shows "encdec: the encoder's map is a post-norm layer's" "$s" '── \[x\] → attention → \+ → N1 → FFN → \+ → N2 ─'
shows "encdec: the encoder's tokens" "$s" '^ *I +1\.00'
keys "$s" n
shows "encdec: the encoder's mask question" "$s" '3\) all three'
keys "$s" 3
shows "encdec: the encoder's weights, 3 × 3 and unmasked" "$s" 'weights +3×3'
keys "$s" n n
shows "encdec: n reaches the encoder's second layer" "$s" 'layer 1/2 · encoder · self-attention +stage: norm2'
shows "encdec: the memory's shape question" "$s" '2\) 3 × 4'
keys "$s" 2
shows "encdec: the memory is 3 × 4" "$s" 'norm2 +3×4'
keys "$s" n
shows "encdec: n goes from the encoder into the decoder" "$s" 'layer 0/1 · decoder · self-attention +stage: input'
shows "encdec: the decoder's map has its three sublayers" "$s" '── \[x\] → self-attn → \+ → N1 → cross-attn → \+ → N2 → FFN → \+ → N3 ─'
keys "$s" p
shows "encdec: p goes back into the encoder" "$s" 'layer 1/2 · encoder · self-attention +stage: norm2'
cmd "$s" "layer e0"
shows "encdec: layer e0 shows the encoder's first layer" "$s" 'layer 0/2 · encoder · self-attention +stage: norm2'
cmd "$s" "step 9"
shows "encdec: step 9 is cross-attention" "$s" 'layer 0/1 · decoder · cross-attention +stage: input'
shows "encdec: the cross link's map is the same layer's, its input lit" "$s" '→ \+ → \[N1\] → cross-attn → \+ → N2 →'
shows "encdec: the source is the encoder's output" "$s" 'source_input +3×4'
keys "$s" n
shows "encdec: the shape quiz" "$s" '2\) 4 × 3'
keys "$s" 2
shows "encdec: K has the encoder's 3 rows" "$s" 'K +3×4'
keys "$s" n
shows "encdec: cross-attention's scores are 4 × 3" "$s" 'scores +4×3'
cmd "$s" "step 14"
keys "$s" 1
shows "encdec: the variant has 2 rows" "$s" '2 tokens: norm2 +2×4'
shows "encdec: the variant's rows are the first two" "$s" '^我 .* -0\.01 +-1\.14 +-0\.43 +我 +-0\.01 +-1\.14 +-0\.43'
snap "$s"
expect "encdec: no cell is marked as differing" '! grep -Eq "^(<s>|我|爱|你) .*\*" "$tmp/screen"'
quits "$s" encdec

# An encoder–decoder with a loss (tests/golden/v2/encdec_post.json): the walk ends in the encoder's first layer's
# back_project, its gradient explained with PyTorch's number (encdec_post.ref.json, grad.encoder.layers[0]);
# p goes back from the encoder's last layer into the decoder's self-attention; scale off changes the
# formula line; without UTF-8 the map's gradients are "d".
s=encback
start "$s" 100 30 C.UTF-8 "" tests/golden/v2/encdec_post.json
shows "encback: starts in the encoder" "$s" 'layer 0/2 · encoder · self-attention +stage: input'
cmd "$s" "last"
shows "encback: the walk ends in the encoder's first layer" "$s" 'step 93/93 +layer 0/2 · encoder · self-attention +stage: back_project'
shows "encback: the encoder's map lights its gradients" "$s" '── x → attention → \+ → N1 → FFN → \+ → N2 → \[∂\] ─'
cmd "$s" "explain dW_q 0 0"
shows "encback: the encoder's dW_q as PyTorch computes it" "$s" 'dW_q\[0\]\[0\] = -1\.02821'
keys "$s" Escape
cmd "$s" "step 80"
shows "encback: the encoder's last layer's gradients" "$s" 'layer 1/2 · encoder · self-attention +stage: back_output'
shows "encback: its doutput comes from its block" "$s" '\(doutput: what the block sends back\)'
keys "$s" p
shows "encback: p goes back to the decoder's self-attention" "$s" 'layer 0/1 · decoder · self-attention +stage: back_project'
cmd "$s" "goto scale"
cmd "$s" "scale off"
shows "encback: scale off changes the formula" "$s" 'scaled = scores   \(scale off: × 1\)'
quits "$s" encback
s=encbackc
start "$s" 100 30 C "" tests/golden/v2/encdec_post.json
cmd "$s" "last"
shows "encback: without UTF-8 the map's gradients are d" "$s" '-- x -> attention -> \+ -> N1 -> FFN -> \+ -> N2 -> \[d\] -'
quits "$s" encbackc

# ---------------------------------------------------------------------------
# The modern-attention lessons at 80x24: each walked with n from the first
# step to the last, the first multiple-choice question answered with its key
# (every one of these lessons has the right choice first, so 1) and the others
# skipped with :skip; the walk must reach the stage the lesson is about, and
# the stage line must count the right answer.
# walk_lesson NAME STAGE: lessons/NAME.json passes through stage STAGE
walk_lesson() {
	wl_name=$1 wl_stage=$2
	s=wl$wl_name
	start "$s" 80 24 C.UTF-8 "" "lessons/$wl_name.json"
	if ! wait_for "$s" 'step 1/[0-9]+'; then
		screen_not_ok "$wl_name: starts at step 1"
		tm kill-session -t "$s"
		return
	fi
	seen=" " answered=0 last=0 i=0
	while [ "$i" -lt 160 ]; do
		cap "$s" >"$tmp/wl-screen"
		line=$(grep -E 'step [0-9]+/[0-9]+' "$tmp/wl-screen" | head -n 1)
		k=$(echo "$line" | sed -n 's/.*step \([0-9]*\)\/\([0-9]*\).*/\1/p')
		n=$(echo "$line" | sed -n 's/.*step \([0-9]*\)\/\([0-9]*\).*/\2/p')
		st=$(echo "$line" | sed -n 's/.*stage: \([a-z_0-9]*\).*/\1/p')
		case "$seen" in *" $st "*) ;; *) seen="$seen$st " ;; esac
		if grep -q '^ Quiz: ' "$tmp/wl-screen"; then
			if [ "$answered" = 0 ] && grep -Eq '^ +1\) ' "$tmp/wl-screen"; then
				keys "$s" 1
				shows "$wl_name: step $k's question answered with 1 is right" "$s" 'quiz 1/[0-9]+'
				answered=1
			else
				cmd "$s" "skip"
			fi
			wait_gone "$s" '^ Quiz: ' 3 >/dev/null 2>&1
		fi
		if [ -n "$k" ] && [ "$k" = "$n" ]; then last=1; break; fi
		keys "$s" n
		# inside decode and flash, n moves the token or tile: the stage line changes, not "step k/N"
		wl_pat=$(printf '%s' "$line" | sed 's/[][\\.*^$()+?{}|]/\\&/g')
		wait_gone "$s" "$wl_pat" 3 >/dev/null 2>&1
		i=$((i + 1))
	done
	if [ "$last" = 1 ]; then ok "$wl_name: n walks to the last step"; else screen_not_ok "$wl_name: n walks to the last step"; fi
	check "$wl_name: a multiple-choice question was answered" test "$answered" = 1
	case "$seen" in
	*" $wl_stage "*) ok "$wl_name: the walk shows stage $wl_stage" ;;
	*) not_ok "$wl_name: the walk shows stage $wl_stage" "saw:$seen" ;;
	esac
	# the course's last lesson (a third argument "last"), every question answered or skipped: its summary first (Esc closes it)
	if [ "${3:-}" = last ]; then
		shows "$wl_name: the course's last lesson ends with its summary" "$s" 'The course is finished'
		keys "$s" Escape
		wait_gone "$s" 'The course is finished' 3 >/dev/null 2>&1
	fi
	quits "$s" "$wl_name"
}
walk_lesson rope rotate
walk_lesson ropescale angles
walk_lesson alibi bias
walk_lesson kvcache decode
walk_lesson gqa decode
walk_lesson window decode
walk_lesson flash flash
walk_lesson llama decode
walk_lesson nexttoken next
walk_lesson qknorm qk_norm
walk_lesson softcap softcap
walk_lesson sinks sinks
walk_lesson linear deltanet
walk_lesson hybrid deltanet_cache
walk_lesson diffattn diff_out
walk_lesson gated gate
walk_lesson moe experts
walk_lesson modern decode last

# The LM head (issue 21): the next stage's pane draws the top-k tokens as bars
# with their probabilities; :temp and :topk recompute them (the title says T).
s=nextbars
start "$s" 100 30 C.UTF-8 "" lessons/nexttoken.json
cmd "$s" "goto next"
cmd "$s" "skip"
shows "next: the bars name the likeliest token with its probability" "$s" 'mat █+ 0\.3475'
cmd "$s" "temp 2"
shows "next: temp 2 flattens the bars (mat 0.2479) and says T 2" "$s" 'T 2, after row 4'
shows "next: mat's bar after temp 2" "$s" 'mat █+ 0\.2479'
cmd "$s" "topk 2"
shows "next: topk 2 keeps two bars" "$s" 'top 2, T 2'
quits "$s" nextbars

# Modern attention's stages (issue 11). Decoding at 80x24: n/p walk the decode
# steps t = 0 … n−1 inside the stage; the stage line says the step and the
# cache's rows, rows after t are blank, the window's dropped rows are marked
# (x without colour), the new row #; the caption gives the cache's bytes.
s=decode
start "$s" 80 24 C.UTF-8 "NO_COLOR=1" tests/golden/v3/decode_window_rolling.json
wait_for "$s" 'stage: input' >/dev/null
cmd "$s" "goto decode"
shows "decode: goto starts at step 0" "$s" 'stage: decode, token 0 \(the\), cache 1 row +head 0 of 2'
shows "decode: the caption says the bytes per token" "$s" '32 bytes per token per layer'
if cap "$s" | grep -Eq '^cat +-?[0-9]'; then not_ok "decode: rows after step 0 are blank"; else ok "decode: rows after step 0 are blank"; fi
keys "$s" n n n n
shows "decode: n moves to step 4" "$s" 'stage: decode, token 4 \(a\), cache 3 rows'
shows "decode: the new row is marked #" "$s" '^a +# ?-?[0-9.]+[^ ]? *# ?-?[0-9]'
shows "decode: the caption says which rows the window dropped" "$s" 'dropped rows 0-1'
keys "$s" p
shows "decode: p moves back to step 3" "$s" 'stage: decode, token 3 \(on\), cache 3 rows'
keys "$s" n n n n
shows "decode: n leaves the stage after its last step" "$s" 'stage: decode, token 6 \(mat\)'
keys "$s" n
shows "decode: the last step says so" "$s" 'this is the last step'
snap "$s"
expect "decode: 80x24 shows the key line whole" 'has "$tmp/screen" "n/spc next  p prev"'
expect "decode: 80x24 keeps the stage line's place" 'has "$tmp/screen" "step 11/11  stage: decode, token 6 (mat), cache 3 rows  head 0 of 2"'
quits "$s" decode

s=decodebig
start "$s" 200 60 C.UTF-8 "NO_COLOR=1" tests/golden/v3/decode_window_rolling.json
wait_for "$s" 'stage: input' >/dev/null
cmd "$s" "goto decode"
keys "$s" n n n n
shows "decode 200x60: step 4" "$s" 'stage: decode, token 4 \(a\), cache 3 rows'
shows "decode 200x60: the window's dropped rows are marked x" "$s" '^cat .*cat +x ?1\.33[^ ]? *x ?-0\.94'
if cap "$s" | grep -Eq '^warm +-?[0-9]'; then not_ok "decode 200x60: rows after step 4 are blank"; else ok "decode 200x60: rows after step 4 are blank"; fi
shows "decode 200x60: the caption's GQA saving" "$s" 'grouped-query attention keeps 1/2 of it'
quits "$s" decodebig

# FlashAttention's tiles: n walks them, passing the ones the causal mask hides.
s=flash
start "$s" 80 24 C.UTF-8 "NO_COLOR=1" tests/golden/v3/flash_causal.json
wait_for "$s" 'stage: input' >/dev/null
cmd "$s" "goto flash"
shows "flash: goto starts at the first tile" "$s" 'stage: flash, tile \(0, 0\)'
shows "flash: the caption counts the numbers held at once" "$s" '= 12 numbers, against'
keys "$s" n
shows "flash: n passes the hidden tiles" "$s" 'stage: flash, tile \(1, 0\)'
shows "flash: and says so" "$s" 'Skipped 2 tiles from \(0, 1\)'
keys "$s" n
shows "flash: the next tile" "$s" 'tile \(1, 1\)'
shows "flash: the tile is lit in the masked scores" "$s" '^sat .*# *0\.11'
shows "flash: m after this tile is marked #, before it ~" "$s" '^sat .*~ *0\.06[^ ]? *# *0\.11'
keys "$s" p
shows "flash: p goes back a tile" "$s" 'tile \(1, 0\)'
quits "$s" flash

# Grouped-query attention: the split stage puts each key/value head's K and V
# before the query heads that read it; H/L move between heads; a step's focus
# on K lands on the pane with that column.
sed '2a\
  "steps": [{"stage": "input"}, {"stage": "split", "focus": {"matrix": "K", "row": 1, "col": 3}}, {"stage": "scores", "head": 2, "focus": {"matrix": "K", "row": 2, "col": 2}}],' \
	tests/golden/v3/gqa_groups_bias.json >"$tmp/gqa-steps.json"
s=gqa
start "$s" 200 60 C.UTF-8 "" "$tmp/gqa-steps.json"
wait_for "$s" 'stage: input' >/dev/null
keys "$s" n
shows "gqa: the split stage groups the heads" "$s" 'K kv 0 .*V kv 0 .*Q head 0→kv 0 .*Q head 1→kv 0'
shows "gqa: the second group" "$s" 'K kv 1 .*V kv 1 .*Q head 2→kv 1 .*Q head 3→kv 1'
shows "gqa: the caption names the groups" "$s" 'query heads 0-1 read kv head 0; query heads 2-3 read kv head 1'
shows "gqa: the step's focus on K lands on kv head 1's pane" "$s" 'K\[1\]\[3\] = '
keys "$s" L
shows "gqa: L moves to head 1" "$s" 'head 1 of 4'
keys "$s" n
shows "gqa: the scores step's focus on K" "$s" 'K\[2\]\[2\] = '
quits "$s" gqa

s=gqa80
start "$s" 80 24 C.UTF-8 "" tests/golden/v3/gqa_groups_bias.json
wait_for "$s" 'stage: input' >/dev/null
cmd "$s" "goto split"
shows "gqa 80x24: the split stage's K, V and first query head" "$s" 'K kv 0 .*V kv 0 .*Q head 0→kv 0'
shows "gqa 80x24: the stage line" "$s" 'stage: split +head 0 of 4'
keys "$s" L L L
shows "gqa 80x24: L moves to head 3" "$s" 'stage: split +head 3 of 4'
shows "gqa 80x24: head 3's group" "$s" 'K kv 1 .*V kv 1'
quits "$s" gqa80


# ---------------------------------------------------------------------------
# The mouse (issue 12 §3), through the bytes a terminal sends for it (SGR,
# as xterm and tmux do once attnviz asks for the mouse): a click moves the
# cursor, a double click explains, a click focuses a pane, the wheel scrolls,
# a click on the key line runs that key; --no-mouse leaves the mouse alone.
# mouse SESSION BUTTON X Y [release]: one SGR event at 1-based column X, line Y
mouse() {
	if [ "${5:-}" = release ]; then
		tm send-keys -t "$1" -l "${ESC}[<$2;$3;$4M${ESC}[<$2;$3;$4m"
	else
		tm send-keys -t "$1" -l "${ESC}[<$2;$3;$4M"
	fi
}
click() { mouse "$1" 0 "$2" "$3" release; }
# dblclick SESSION X Y: two clicks as quick as a hand's
dblclick() { tm send-keys -t "$1" -l "${ESC}[<0;$2;$3M${ESC}[<0;$2;$3m${ESC}[<0;$2;$3M${ESC}[<0;$2;$3m"; }
s=mouse
start "$s" 100 30 C.UTF-8 "XDG_STATE_HOME=$tmp/mouse-state"
wait_for "$s" 'stage: input' >/dev/null
expect "mouse: attnviz asks the terminal for the mouse (SGR)" '[ "$(tm display-message -p -t "$s" "#{mouse_sgr_flag}")" = 1 ]'
# (n n at each of steps 2 and 3's questions: asked once, then skipped)
keys "$s" n n n n n
wait_for "$s" 'stage: scores' >/dev/null
# Kᵀ's column "saw" (1), row 2 sits at column 30, line 6 of the screen
click "$s" 30 6
shows "mouse: a click puts the cursor on the cell" "$s" 'K\[1\]\[2\] = 0 '
click "$s" 30 6
shows "mouse: a click on the cursor's cell explains it" "$s" 'X row 1 · W_k column 2'
keys "$s" Escape
wait_gone "$s" 'W_k column 2' >/dev/null
dblclick "$s" 8 5
shows "mouse: a double click explains the cell" "$s" '┌─ Q\[1\]\[0\]'
keys "$s" Escape
wait_gone "$s" '┌─ Q' >/dev/null
click "$s" 60 2
shows "mouse: a click on a pane's title focuses it" "$s" 'scores\[0\]\[0\] = '
# "p prev" comes before the arrows, so a byte's index is its column
col=$(cap "$s" | grep 'n/spc next' | awk '{ print index($0, "p prev") }')
click "$s" "$col" 29
shows "mouse: a click on the key line runs that key" "$s" 'step 3/9 +stage'

quits "$s" mouse

s=wheel
start "$s" 80 24 C.UTF-8 "XDG_STATE_HOME=$tmp/mouse-state"
wait_for "$s" 'stage: input' >/dev/null
# a step whose narration is longer than the room it has
i=0
while [ "$i" -lt 8 ] && ! cap "$s" | grep -q 'PgUp/PgDn'; do keys "$s" n; sleep 0.2; i=$((i + 1)); done
row=$(cap "$s" | grep -n 'PgUp/PgDn' | head -n 1 | cut -d: -f1)
if [ -z "$row" ]; then
	not_ok "wheel: the narration at 80x24 scrolls" "$(cap "$s")"
else
	shows "wheel: the narration starts at its first line" "$s" ' 1-[0-9]+/[0-9]+ PgUp/PgDn'
	mouse "$s" 65 10 $((row + 2))
	shows "wheel: the wheel scrolls the narration down" "$s" ' 4-[0-9]+/[0-9]+ PgUp/PgDn'
	mouse "$s" 64 10 $((row + 2))
	shows "wheel: and up" "$s" ' 1-[0-9]+/[0-9]+ PgUp/PgDn'
fi
cmd "$s" "goto scores"
click "$s" 8 4
shows "wheel: a pane's cursor at row 0 after a click" "$s" 'Q\[0\]\[0\] = '
mouse "$s" 65 8 4
shows "wheel: the wheel over a pane scrolls it (the cursor goes along)" "$s" 'Q\[1\]\[0\] = '
quits "$s" wheel

s=nomouse
start "$s" 100 30 C.UTF-8 "XDG_STATE_HOME=$tmp/mouse-state" --no-mouse
wait_for "$s" 'stage: input' >/dev/null
expect "--no-mouse: the terminal keeps its mouse (its own selection)" '[ "$(tm display-message -p -t "$s" "#{mouse_any_flag}")" = 0 ]'
keys "$s" '?'
wait_for "$s" 'keys and commands' >/dev/null
i=0
while [ "$i" -lt 6 ] && ! cap "$s" | grep -q 'Shift-drag'; do keys "$s" NPage; sleep 0.2; i=$((i + 1)); done
shows "?: the help says how to select text with the mouse on" "$s" 'Shift-drag +selects text'
keys "$s" Escape
quits "$s" nomouse

# ---------------------------------------------------------------------------
# Progress through the course (issue 12 §4), across runs, in a fresh
# XDG_STATE_HOME: kept as the learner moves, offered back, shown by
# `lessons`, the m menu and --progress; a damaged file is said once and set aside.
P=$tmp/progress-state
s=prog1
start "$s" 100 30 C.UTF-8 "XDG_STATE_HOME=$P" dot
wait_for "$s" 'step 1/' >/dev/null
keys "$s" n n
shows "progress: moving in a lesson" "$s" 'step 3/'
quits "$s" progress
expect "progress: kept in XDG_STATE_HOME/attnviz/progress.json" 'grep -q "\"last\":[[:space:]]*\"dot\"" "$P/attnviz/progress.json"'
XDG_STATE_HOME=$P "$ATTNVIZ" --progress >"$tmp/progress.out" 2>"$err"
expect "--progress prints the course and where the learner is" 'grep -q "dot .*step 3/" "$tmp/progress.out" && grep -q "Last: dot, step 3" "$tmp/progress.out"'

s=prog2
start "$s" 100 30 C.UTF-8 "XDG_STATE_HOME=$P"
shows "progress: a run without a lesson offers to continue" "$s" 'welcome back: c or :continue goes on with dot at step 3'
keys "$s" c
shows "progress: c continues in the lesson, at the step" "$s" 'back in dot at step 3'
shows "progress: ... and the stage line agrees" "$s" 'step 3/'
# to the end, each question skipped (n n): finished only with none open
keys "$s" n n n n n n
wait_for "$s" 'finished! next' >/dev/null
keys "$s" m
shows "progress: m opens the course menu" "$s" ' the course '
shows "progress: the menu marks where the learner is" "$s" '▶ +2\. dot'
keys "$s" j Enter
shows "progress: Enter in the menu opens the next lesson" "$s" 'loaded .*softmax'
quits "$s" prog2
printf 'lessons\n' | XDG_STATE_HOME=$P "$ATTNVIZ" --plain >"$tmp/lessons.out" 2>"$err"
expect "lessons: ✓ for a finished lesson" 'grep -Eq "^✓ +2\. dot" "$tmp/lessons.out"'

s=prog3
start "$s" 100 30 C.UTF-8 "XDG_STATE_HOME=$P" modern
wait_for "$s" 'step 1/' >/dev/null
# sixteen steps on, a second n at each of its four questions (skipped), and five at
# its first decode step (tokens 1-5); arriving at the last step finishes the course
keys "$s" n n n n n n n n n n n n n n n n n n n n n n n n n
shows "progress: finishing the last lesson shows a summary of the course" "$s" 'The course is finished'
shows "progress: the summary counts the lessons" "$s" '[0-9]+ of [0-9]+ lessons finished'
keys "$s" q
quits "$s" prog3

D=$tmp/damaged-state
mkdir -p "$D/attnviz"
printf '{"version": 1, "lessons": {"dot": ' >"$D/attnviz/progress.json"
s=damaged
start "$s" 100 30 C.UTF-8 "XDG_STATE_HOME=$D"
shows "progress: a damaged file is reported" "$s" 'progress file .* is damaged'
expect "progress: a damaged file is set aside" '[ -f "$D/attnviz/progress.json.damaged" ]'
quits "$s" damaged
s=damaged2
start "$s" 100 30 C.UTF-8 "XDG_STATE_HOME=$D"
shows "progress: ... once (the next run starts afresh)" "$s" 'attnviz: n next, Enter explains'
quits "$s" damaged2
# ---------------------------------------------------------------------------
# Issue 12 §1: every screen right at 80x24 (and at a large size).
# §1.9: a multiple-choice question's hidden pane says press 1-N, on one line;
# a question about PE on the input stage leaves the input shown.
for sz in 80x24 200x60; do
	s=i9q$sz
	start "$s" "${sz%x*}" "${sz#*x}" C.UTF-8 "" lessons/weighting.json
	wait_for "$s" 'stage: input' >/dev/null
	keys "$s" n
	shows "$sz weighting step 2: the hidden V says press 1-4" "$s" ' press 1-4 first'
	if cap "$s" | grep -q ':answer VALUE'; then not_ok "$sz weighting step 2: no :answer VALUE for choices"; else ok "$sz weighting step 2: no :answer VALUE for choices"; fi
	quits "$s" "i9q$sz"
done
s=i9pe
start "$s" 80 24 C.UTF-8 "" lessons/positional.json
shows "positional step 1: the question about PE" "$s" 'Quiz: .*predict PE'
shows "positional step 1: the input stays shown" "$s" '^saw +[0-9-]'
if cap "$s" | grep -q '^ :answer VALUE'; then not_ok "positional step 1: nothing hidden on the input stage"; else ok "positional step 1: nothing hidden on the input stage"; fi
quits "$s" i9pe

# §1.2: at 80x24 a question and all its choices are in view (the panes give
# way: the focused one alone, Tab brings the others), the hidden pane's
# placeholder is one line, PgDn moves a page, a wrong answer's feedback is
# never cut (it heads the narration), the demo indicator stays at 80 columns,
# and `?` hangs a wrapped line under its text.
for sz in 80x24 200x60; do
	s=i2w$sz
	start "$s" "${sz%x*}" "${sz#*x}" C.UTF-8 "" lessons/weighting.json
	wait_for "$s" 'stage: input' >/dev/null
	keys "$s" n
	shows "$sz weighting step 2: the question" "$s" 'Quiz: The four words are one-hot'
	shows "$sz weighting step 2: choice 4 in view" "$s" '^ +4\) 4 × 5'
	shows "$sz weighting step 2: the prompt in view" "$s" 'Press 1-4, or :answer N'
	quits "$s" "i2w$sz"
	s=i2p$sz
	start "$s" "${sz%x*}" "${sz#*x}" C.UTF-8 "" lessons/padding.json
	wait_for "$s" 'stage: input' >/dev/null
	cmd "$s" "step 4"
	shows "$sz padding step 4: choice 3 in view" "$s" '^ +3\) rows 2–3 and columns 2–3'
	shows "$sz padding step 4: choice 4 in view" "$s" '^ +4\) the cells above the diagonal'
	keys "$s" 2
	shows "$sz padding step 4: the wrong answer's feedback, whole" "$s" 'the answer is 1\) columns 2 and 3,'
	shows "$sz padding step 4: the feedback's end" "$s" 'in every row\.  \(score 0/1\)'
	quits "$s" "i2p$sz"
done
s=i2m
start "$s" 80 24 C.UTF-8 "" lessons/multihead.json
wait_for "$s" 'stage: input' >/dev/null
keys "$s" n
shows "80x24 multihead step 2: every choice in view" "$s" '^ +4\) 48: without heads'
shows "80x24 multihead step 2: the focused pane whole" "$s" '^saw +2\.00 0\.50 2\.00 1\.00$'
snap "$s"
expect "80x24 multihead step 2: the other panes gave way" 'hasnt "$tmp/screen" "W_k  4×4"'
keys "$s" Tab
shows "80x24 multihead step 2: Tab brings the next pane" "$s" '^W_k  4×4'
quits "$s" i2m
s=i2pg
start "$s" 80 24 C.UTF-8 "" lessons/weighting.json
wait_for "$s" 'stage: input' >/dev/null
cmd "$s" "step 6"
shows "80x24 weighting step 6: the narration starts at line 1" "$s" ' 1-[0-9]+/[0-9]+ PgUp/PgDn'
keys "$s" NPage
shows "80x24 weighting step 6: PgDn moves a page" "$s" ' ([6-9]|1[0-9])-[0-9]+/[0-9]+ PgUp/PgDn'
shows "80x24 weighting step 6: the summary's last line after one PgDn" "$s" '6\. bⁱ = Σ_j'
keys "$s" '?'
shows "80x24 ?: a wrapped line hangs under its text" "$s" '│ {20,}in flash: the next tile'
keys "$s" q
wait_gone "$s" 'in flash: the next tile' >/dev/null
quits "$s" i2pg
printf 'goto scores\nwait 30\ngoto softmax\n' >"$tmp/slow.txt"
s=i2d
start "$s" 80 24 C.UTF-8 "" --present --demo "$tmp/slow.txt"
wait_for "$s" 'stage: scores' >/dev/null
keys "$s" Space
shows "80x24 presenting: the demo indicator stays when paused" "$s" 'demo 2/3  paused'
keys "$s" q
wait_for "$s" 'demo left' >/dev/null
quits "$s" i2d

# §1.1: prefix.json's comparison has fewer rows: 0 cells differ, and the rows only one has are named
for sz in 80x24 200x60; do
	s=i1$sz
	start "$s" "${sz%x*}" "${sz#*x}" C.UTF-8 "" lessons/prefix.json
	wait_for "$s" 'stage: input' >/dev/null
	cmd "$s" "compare on"
	cmd "$s" "step 6"
	shows "$sz prefix step 6: the weights, 0 differ" "$s" 'weights  5×5  0 differ \(\*\)'
	shows "$sz prefix step 6: the variant, 0 differ" "$s" 'weights  3×3  0 differ \(\*\)'
	if [ "$sz" = 200x60 ]; then
		shows "$sz prefix step 6: the title names the rows only the lesson has" "$s" 'weights  5×5  0 differ \(\*\)  rows 3-4, columns 3-4 only here'
	fi
	keys "$s" End Down Down Down Down
	shows "$sz prefix step 6: a row only the lesson has is not compared" "$s" 'weights\[4\]\[[0-9]\] = [0-9.]+   only in the lesson: not compared'
	quits "$s" "i1$sz"
done


# Issue 12 §2: the interface in Chinese (lang zh), and English again (lang en); a Chinese locale starts in Chinese
for sz in 80x24 200x50; do
	s=zh$sz
	begin "$s" "$sz" lessons/mask.json
	cmd "$s" "lang zh"
	shows "$sz lang zh: the status message is Chinese" "$s" '语言：中文'
	shows "$sz lang zh: the key line is Chinese" "$s" 'n/spc 下一步  p 上一步'
	shows "$sz lang zh: the stage line is Chinese" "$s" '第 1/12 步  阶段：input'
	keys "$s" '?'
	shows "$sz lang zh: ? help is Chinese" "$s" '这个数是从哪来的？'
	keys "$s" q
	wait_gone "$s" '按键和命令' >/dev/null
	cmd "$s" "nosuchcommand"
	shows "$sz lang zh: an error at the : line is Chinese" "$s" '没有这个命令：nosuchcommand（试试 help）'
	cmd "$s" "step 7"
	shows "$sz lang zh: the quiz is Chinese" "$s" '测验：'
	keys "$s" Enter
	shows "$sz lang zh: the explain pop-up is Chinese" "$s" '查询 机，键 机'
	shows "$sz lang zh: the pop-up's foot is Chinese" "$s" 'q/Esc/回车 关闭'
	keys "$s" q
	wait_gone "$s" '查询 机，键 机' >/dev/null
	cmd "$s" "lang en"
	shows "$sz lang en: English again" "$s" 'n/spc next  p prev'
	shows "$sz lang en: the status message is English" "$s" 'language: English'
	quits "$s" "zh$sz"
done
s=zhloc
start "$s" 80 24 zh_CN.UTF-8 ""
shows "LANG=zh_CN.UTF-8: starts with Chinese words" "$s" 'n/spc 下一步'
quits "$s" zhloc
# the C locale cannot show Chinese: lang zh leaves the program's words and the narration in English, and says why
s=zhc
start "$s" 80 24 C ""
wait_for "$s" 'stage: input' >/dev/null
cmd "$s" "lang zh"
shows "LANG=C lang zh: the words stay English" "$s" "n/spc next"
shows "LANG=C lang zh: the status line says why (and that the narration is English)" "$s" "Chinese needs a UTF-8 terminal"
quits "$s" zhc

# §1.3: formulas follow what the lesson computes: additive scores, cross and additive
# keys and values from the source S, softmax(scaled) where there is no mask.
for sz in 80x24 200x60; do
	s=i3$sz
	begin "$s" "$sz" lessons/additive.json
	cmd "$s" "step 2"
	shows "$sz additive step 2: K and V from S" "$s" 'Q = X·W_q   K = S·W_k   V = S·W_v'
	cmd "$s" "step 3"
	shows "$sz additive step 3: the additive score" "$s" 'scores: s_ij = w_e · tanh\(q_i \+ k_j\)'
	cmd "$s" "step 6"
	shows "$sz additive step 6: softmax of scaled, no mask" "$s" 'weights = softmax\(scaled\)'
	snap "$s"
	expect "$sz additive step 6: no masked operand" 'hasnt "$tmp/screen" "masked"'
	quits "$s" "i3$sz"
done

# §1.4: the split stage shows Q, K and V cut into heads, and a step's focus
# (matrix, row, column) is honoured on arrival by step N, n and p.
for sz in 80x24 200x60; do
	s=i4$sz
	begin "$s" "$sz" lessons/mask.json
	cmd "$s" "step 3"
	shows "$sz mask step 3: K, V and Q cut into heads" "$s" 'K kv 0  7×2 +V kv 0  7×2 +Q head 0  7×2'
	shows "$sz mask step 3: the focus on K" "$s" '^K\[0\]\[2\] = 0\.5000'
	cmd "$s" "step 4"
	keys "$s" p
	shows "$sz mask step 3 by p: the focus on K" "$s" '^K\[0\]\[2\] = 0\.5000'
	quits "$s" "i4$sz"
	s=i4m$sz
	begin "$s" "$sz" lessons/multihead.json
	cmd "$s" "step 2"
	cmd "$s" "skip"
	keys "$s" n
	shows "$sz multihead step 3 by n: the focus's column" "$s" '^Q\[1\]\[2\] = 2\.0000'
	quits "$s" "i4m$sz"
done

# §1.5: concat shows every head's output beside it, labelled with the columns it fills.
# §1.10: a two-column pane keeps its colour legend.
for sz in 80x24 200x60; do
	s=i5$sz
	begin "$s" "$sz" lessons/multihead.json
	cmd "$s" "step 11"
	# concat is hidden by the open question: its title without its shape (the question may ask for it)
	shows "$sz multihead step 11: both heads' outputs beside concat" "$s" 'weighted head 0  4×2 +weighted head 1  4×2 +concat *$'
	shows "$sz multihead step 11: head 1's columns are concat's 2 and 3" "$s" '^ +0 +1 +2 +3 +press 1-4 first'
	shows "$sz multihead step 11: head 1's numbers" "$s" '^saw +0\.52 0\.36 +saw +0\.64 0\.23'
	cmd "$s" "step 3"
	shows "$sz multihead step 3: legends under the two-column panes" "$s" '^0\.00 ▁▂▃▄▅▆▇ 1\.00 +0\.00 ▁▂▃▄▅▆▇ 1\.00 +0\.00 ▁▂▃▄▅▆▇ 2\.00'
	quits "$s" "i5$sz"
done
s=i5zh
start "$s" 80 24 C.UTF-8 "" --lang zh lessons/multihead.json
wait_for "$s" '阶段：input' >/dev/null
cmd "$s" "step 11"
shows "80x24 zh multihead step 11: both heads' outputs beside concat" "$s" 'weighted 头 0  4×2 +weighted 头 1  4×2 +concat *$'
shows "80x24 zh multihead step 11: head 1's columns are concat's 2 and 3" "$s" '^ +0 +1 +2 +3 +先按 1-4 作答'
shows "80x24 zh multihead step 11: the last choice in view" "$s" '^ +4\) W_o'
quits "$s" i5zh

# §1.6: panes of the same shape scroll together, to the focus cell: scale's
# question about column 95 shows column 95 in the scores, then in the weights
# and in the compare variant.
inview95='c([0-8]?[0-9]|9[0-5])-(9[5-9]|1[0-2][0-9])'
for sz in 80x24 200x60; do
	s=i6$sz
	begin "$s" "$sz" lessons/scale.json
	cmd "$s" "step 7"
	shows "$sz scale step 7: the hidden weights' cell, in the scores" "$s" '^scaled\[0\]\[95\] = '
	shows "$sz scale step 7: the scores show column 95" "$s" "^scaled  123×123  r0-[0-9]+ $inview95"
	cmd "$s" "skip"
	shows "$sz scale step 7 answered: the weights show column 95" "$s" "(^|  )weights  123×123  r0-[0-9]+ $inview95"
	cmd "$s" "compare on"
	cmd "$s" "step 8"
	shows "$sz scale step 8: the weights at column 95" "$s" "(^|  )weights  123×123  r0-[0-9]+ $inview95"
	shows "$sz scale step 8: the compare pane follows" "$s" "scaled by 1/√d_k: weights  123×123  r0-[0-9]+ $inview95"
	shows "$sz scale step 8: the scores follow" "$s" "^scaled  123×123  r0-[0-9]+ $inview95"
	quits "$s" "i6$sz"
done

# §1.8: after an edit the titles follow the lesson as it now is, and the
# lesson's own narration says it was written for the lesson before; reload
# takes the note away.
for sz in 80x24 200x60; do
	s=i8$sz
	begin "$s" "$sz" lessons/multihead.json
	cmd "$s" "step 3"
	cmd "$s" "heads 4"
	shows "$sz heads 4: the titles follow" "$s" 'Q head 0  4×1'
	shows "$sz heads 4: the narration is marked" "$s" '^ \(written for the lesson before your edits — `reload` restores it\)'
	cmd "$s" "reload"
	cmd "$s" "step 3"
	shows "$sz reload: two heads again" "$s" 'Q head 0  4×2'
	if wait_gone "$s" 'written for the lesson before' 3; then ok "$sz reload: the note is gone"; else screen_not_ok "$sz reload: the note is gone"; fi
	quits "$s" "i8$sz"
done

# §1.10: the plain REPL on a terminal wraps at its width between words (and
# Chinese never before closing punctuation): joined, no line is wider than the
# terminal, so the terminal never had to cut one.
s=i10p
start "$s" 44 40 C.UTF-8 "" --plain lessons/multihead.json
wait_for "$s" 'attnviz> ' >/dev/null
keys "$s" -l "step 2"
keys "$s" Enter
wait_for "$s" 'Question: ' >/dev/null
tm capture-pane -p -J -S -200 -t "$s" >"$tmp/plain-en"
expect "plain 44 columns: no line wider than the terminal" '[ "$(LC_ALL=C.UTF-8 wc -L <"$tmp/plain-en")" -le 44 ]'
keys "$s" -l "lang zh"
keys "$s" Enter
keys "$s" -l "step 2"
keys "$s" Enter
wait_for "$s" '有 2 个头时' >/dev/null
tm capture-pane -p -J -S -200 -t "$s" >"$tmp/plain-zh"
expect "plain 44 columns, Chinese: no line wider than the terminal" '[ "$(LC_ALL=C.UTF-8 wc -L <"$tmp/plain-zh")" -le 44 ]'
expect "plain 44 columns, Chinese: no line starts with closing punctuation" '! grep -q "^[，。、；：！？）」』”]" "$tmp/plain-zh"'
keys "$s" -l "quit"
keys "$s" Enter
shows "plain: quit" "$s" 'EXITED 0'
tm kill-session -t "$s"
# What the view keeps about a pane's numbers (its range, in the legend under it) belongs to one head
# of one computation: another head, or an edit, shows its own; and ATTNVIZ_KEY_TIMES (make bench)
# has each key's time once the first frame is out.
s=ikt
cat >"$tmp/twoheads.json" <<'EOF'
{"attnviz": 1, "title": "two heads", "X": {"random": "normal", "rows": 4, "cols": 4, "seed": 1}, "heads": 2,
 "W_q": {"random": "normal", "rows": 4, "cols": 4, "seed": 2}, "W_k": {"random": "normal", "rows": 4, "cols": 4, "seed": 3},
 "W_v": {"random": "normal", "rows": 4, "cols": 4, "seed": 4}}
EOF
start "$s" 120 30 C.UTF-8 "ATTNVIZ_KEY_TIMES=$tmp/keytimes" "$tmp/twoheads.json"
wait_for "$s" 'stage: input' >/dev/null
cmd "$s" "goto scale"
# the legends of the scores and scaled panes of head $1: "0.00 ▁▂▃▄▅▆▇ 2.00  0.00 ▁▂▃▄▅▆▇ 1.41"
legends() { wait_for "$s" "scaled head $1 " >/dev/null; sleep 0.2; cap "$s" | grep '▁▂▃▄▅▆▇' | head -n 1 | tr -s ' '; }
r0=$(legends 0)
keys "$s" L
r1=$(legends 1)
keys "$s" H
r0b=$(legends 0)
check "scale: head 1's ranges are its own, and head 0's come back ($r0 / $r1)" \
	sh -c "[ -n '$r0' ] && [ -n '$r1' ] && [ '$r0' != '$r1' ] && [ '$r0' = '$r0b' ]"
cmd "$s" "set W_q[0][0] 9"
r0e=$(legends 0)
check "scale: after an edit the ranges are the new numbers' ($r0 -> $r0e)" sh -c "[ -n '$r0e' ] && [ '$r0e' != '$r0' ]"
quits "$s" ikt
check "ATTNVIZ_KEY_TIMES: ready after the first frame, then each key's wall and CPU time" \
	sh -c "head -n 1 '$tmp/keytimes' | grep -qx ready && grep -Eq '^key=76 ms=[0-9.]+ cpu_ms=[0-9.]+\$' '$tmp/keytimes' &&
	       grep -Eq '^key=72 ms=[0-9.]+ cpu_ms=[0-9.]+\$' '$tmp/keytimes'"

finish
