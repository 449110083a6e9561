#!/bin/sh
# tests/t_tui.sh — the full-screen visualizer end to end: the real binary ($ATTNVIZ)
# in a real terminal (tmux on a private socket), at 80×24 and 200×60, UTF-8 and C
# locales, with and without colour. Prints "ok - NAME" / "not ok - NAME"; exits 0.
#
# Each scenario starts attnviz inside `sh -c`, which prints "EXITED <status>" and
# whether the tty modes came back ("TTY-RESTORED") after attnviz returns.
# Screens are polled with capture-pane until a pattern shows or a timeout passes.

ATTNVIZ=${ATTNVIZ:-$(pwd)/build/attnviz}
SRCDIR=${ATTNVIZ_SRCDIR:-$(pwd)}
SOCK="attnviz-test-$$"
TMPD=$(mktemp -d "${TMPDIR:-/tmp}/attnviz-tui.XXXXXX")
STATE="$TMPD/state"

tm() { tmux -L "$SOCK" -f /dev/null "$@"; }

cleanup() {
	tm kill-server >/dev/null 2>&1
	rm -rf "$TMPD"
}
trap cleanup EXIT INT TERM

ok() { echo "ok - $1"; }
notok() {
	echo "not ok - $1"
	if [ -n "$2" ] && [ -f "$2" ]; then sed 's/^/    | /' "$2" | head -n 30; fi
}

if ! command -v tmux >/dev/null 2>&1; then
	echo "ok - tui: tmux not installed, skipped # SKIP"
	exit 0
fi
if [ ! -x "$ATTNVIZ" ]; then
	echo "not ok - tui: no binary at $ATTNVIZ"
	exit 0
fi

# start NAME COLS LINES LANG EXTRA_ENV [ARGS…] — a session NAME running attnviz.
# The shell runs attnviz as a job (set -m), so Ctrl-Z stops it for real; after
# a stop it waits for the file resume-NAME and brings it back with fg.
start() {
	st_name=$1 st_cols=$2 st_lines=$3 st_lang=$4 st_extra=$5
	shift 5
	cat >"$TMPD/run-$st_name.sh" <<EOF
cd "$SRCDIR" || exit 1
set -m
before=\$(stty -g)
"$ATTNVIZ" $*
rc=\$?
while [ "\$rc" = 148 ]; do
	echo SUSPENDED
	while [ ! -e "$TMPD/resume-$st_name" ]; do sleep 0.05; done
	rm -f "$TMPD/resume-$st_name"
	fg >/dev/null
	rc=\$?
done
if [ "\$(stty -g)" = "\$before" ]; then r=TTY-RESTORED; else r=TTY-CHANGED; fi
echo "EXITED \$rc \$r"
exec sleep 600
EOF
	tm new-session -d -s "$st_name" -x "$st_cols" -y "$st_lines" \
		"env -u NO_COLOR TERM=xterm-256color LANG=$st_lang LC_ALL=$st_lang XDG_STATE_HOME=$STATE $st_extra sh $TMPD/run-$st_name.sh"
}

cap() { tm capture-pane -p -t "$1" 2>/dev/null; }
cape() { tm capture-pane -p -e -t "$1" 2>/dev/null; }

# wait_for SESSION PATTERN [SECONDS] — poll until the screen matches (grep -E).
wait_for() {
	w_s=$1 w_pat=$2 w_secs=${3:-5}
	w_i=0
	while [ "$w_i" -lt $((w_secs * 20)) ]; do
		if cap "$w_s" | grep -Eq -- "$w_pat"; then return 0; fi
		sleep 0.05
		w_i=$((w_i + 1))
	done
	cap "$w_s" >"$TMPD/last-screen"
	return 1
}

# wait_gone SESSION PATTERN [SECONDS] — poll until the screen no longer matches.
wait_gone() {
	g_s=$1 g_pat=$2 g_secs=${3:-5}
	g_i=0
	while [ "$g_i" -lt $((g_secs * 20)) ]; do
		if ! cap "$g_s" | grep -Eq -- "$g_pat"; then return 0; fi
		sleep 0.05
		g_i=$((g_i + 1))
	done
	cap "$g_s" >"$TMPD/last-screen"
	return 1
}

check() { # check NAME SESSION PATTERN [SECONDS]
	if wait_for "$2" "$3" "${4:-5}"; then ok "$1"; else notok "$1" "$TMPD/last-screen"; fi
}

keys() { k_s=$1; shift; tm send-keys -t "$k_s" "$@"; }
# cmd SESSION LINE — type a `:` command and Enter.
cmd() {
	tm send-keys -t "$1" ':'
	tm send-keys -t "$1" -l "$2"
	tm send-keys -t "$1" Enter
	# The command line closes when the command ran.
	wait_gone "$1" "^:" 3 >/dev/null
}

stages_of() { # the stages --dump lists for a lesson
	"$ATTNVIZ" --dump "$1" 2>/dev/null | grep '"stages"' | sed 's/.*\[//; s/\].*//; s/[",]/ /g'
}

attnviz_pid() { # the attnviz process under a session's shell
	p_pp=$(tm display-message -p -t "$1" '#{pane_pid}')
	ps -o pid= -o comm= --ppid "$p_pp" 2>/dev/null | awk '$2 ~ /attnviz/ { print $1; exit }'
}

# ---------------------------------------------------------------------------
# Scenarios at a given size: start-up, every step and stage, explain, load,
# a bad load, set, resize, quit.
scenarios() {
	tag=$1 cols=$2 lines=$3
	s="main$cols"
	start "$s" "$cols" "$lines" C.UTF-8 ""

	check "$tag: start-up shows the default lesson's title" "$s" 'Self-attention: I saw a saw'
	check "$tag: start-up shows the stage line" "$s" 'step 1/[0-9]+ +stage: input'

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
	if [ "$last" = 1 ]; then ok "$tag: n steps to the last step"; else notok "$tag: n steps to the last step" "$TMPD/last-screen"; fi
	# The walk of the default lesson visits these stages.
	missing=""
	for st in input project scores softmax weighted; do
		case "$seen" in *" $st "*) ;; *) missing="$missing $st" ;; esac
	done
	if [ -z "$missing" ]; then ok "$tag: stepping shows every stage of the walk"; else notok "$tag: stepping misses:$missing (saw:$seen)"; fi
	keys "$s" n
	check "$tag: n at the last step says so and stays" "$s" 'last step'

	keys "$s" g
	check "$tag: g goes back to the first step" "$s" 'step 1/[0-9]+ +stage: input'

	# Every stage the lesson has, by :goto.
	for st in $(stages_of "$SRCDIR/lessons/selfattn.json"); do
		cmd "$s" "goto $st"
		check "$tag: goto $st shows stage $st" "$s" "stage: $st( |\$)"
	done

	# Explain the cell under the cursor (the first step focuses input[1][1]).
	keys "$s" g
	wait_for "$s" 'stage: input' >/dev/null
	keys "$s" Enter
	check "$tag: Enter explains the cell under the cursor" "$s" 'input\[[0-9]+\]\[[0-9]+\] = '
	keys "$s" Escape
	wait_gone "$s" 'close' 3 >/dev/null

	# Cursor moves and operands: scores after the quiz.
	cmd "$s" "goto scores"
	cmd "$s" "skip"
	keys "$s" Right
	check "$tag: arrows move the cell cursor" "$s" 'scores\[[0-9]+\]\[[0-9]+\] = '
	if cape "$s" | grep -q '4m'; then ok "$tag: operands of the cursor cell are highlighted"; else notok "$tag: operands of the cursor cell are highlighted"; fi

	# An edit recomputes: W_q row 0 of the default lesson is 5 2 1, Q row "I" follows it.
	cmd "$s" "goto project"
	check "$tag: project shows Q" "$s" 'I +5\.00 +2\.00 +1\.00'
	cmd "$s" "set W_q[0][0] 2"
	check "$tag: set W_q[0][0] 2 recomputes Q" "$s" 'I +2\.00 +2\.00 +1\.00'

	# A lesson by file.
	cmd "$s" "load lessons/mask.json"
	check "$tag: :load lessons/mask.json shows its title" "$s" 'Masked attention'
	# A bad file: the error in the status line, the lesson kept.
	printf '{ "attnviz": 1, nope\n' >"$TMPD/bad.json"
	cmd "$s" "load $TMPD/bad.json"
	check "$tag: :load of a bad file shows the error" "$s" 'bad\.json:[0-9]+'
	if cap "$s" | grep -q 'Masked attention'; then ok "$tag: :load of a bad file keeps the lesson"; else notok "$tag: :load of a bad file keeps the lesson"; fi
	cmd "$s" "goto nowhere"
	check "$tag: a bad command argument is reported" "$s" 'unknown stage|nowhere'
	cmd "$s" "frobnicate"
	check "$tag: an unknown command is reported" "$s" 'unknown command'

	# Help overlay from the command table.
	keys "$s" '?'
	check "$tag: ? shows the keys" "$s" 'where did this number come from'
	keys "$s" G
	check "$tag: ? lists the commands (scrolled to the end)" "$s" 'quit +leave attnviz|help \[COMMAND\]'
	keys "$s" q
	wait_gone "$s" 'where did this number|leave attnviz' 3 >/dev/null

	# Resize below the minimum and back.
	tm resize-window -t "$s" -x 30 -y 10
	check "$tag: a 30x10 terminal says too small" "$s" 'too small'
	tm resize-window -t "$s" -x "$cols" -y "$lines"
	check "$tag: growing back redraws the lesson" "$s" 'Masked attention.*step'

	keys "$s" q
	check "$tag: q quits with status 0" "$s" 'EXITED 0'
	check "$tag: the terminal modes are restored" "$s" 'TTY-RESTORED'
	alt=$(tm display-message -p -t "$s" '#{alternate_on}')
	if [ "$alt" = 0 ]; then ok "$tag: the alternate screen is left"; else notok "$tag: the alternate screen is left (alternate_on=$alt)"; fi
	if cap "$s" | grep -q 'stage:'; then notok "$tag: the shell's screen is back" ; else ok "$tag: the shell's screen is back"; fi
	tm kill-session -t "$s"
}

scenarios "80x24" 80 24
scenarios "200x60" 200 60

# ---------------------------------------------------------------------------
# The command line: show focuses a matrix of a head, H/L change head, Tab completes,
# history comes back with Up, Esc cancels.
s=cmdline
start "$s" 100 30 C.UTF-8 "" multihead
check "cmdline: a lesson by name" "$s" 'Multi-head attention'
cmd "$s" "show weights 1"
check "cmdline: show weights 1 goes to its stage" "$s" 'stage: softmax +head 1 of 2'
check "cmdline: show weights 1 shows head 1's weights" "$s" 'weights head 1'
keys "$s" H
check "cmdline: H goes to the previous head" "$s" 'head 0 of 2'
keys "$s" L
check "cmdline: L goes to the next head" "$s" 'head 1 of 2'
keys "$s" : g o t
keys "$s" Tab
check "cmdline: Tab completes a command name" "$s" '^:goto( |$)'
keys "$s" -l "sca"
keys "$s" Tab
check "cmdline: Tab completes a stage name" "$s" '^:goto scale'
keys "$s" Escape
wait_gone "$s" '^:goto' 3 >/dev/null
keys "$s" : Up
check "cmdline: Up brings back the last command" "$s" '^:show weights 1'
keys "$s" Escape
check "cmdline: Esc cancels the line" "$s" 'Enter: where from'
keys "$s" q
check "cmdline: q quits" "$s" 'EXITED 0 TTY-RESTORED'

# ---------------------------------------------------------------------------
# C locale: ASCII only (-inf, x), lesson text that is not ASCII shown as '?'.
s=clocale
start "$s" 80 24 C "" lessons/mask.json
check "C locale: starts" "$s" 'Masked attention'
cmd "$s" "goto mask"
cmd "$s" "skip"
check "C locale: masked cells show -inf" "$s" '-inf'
if cap "$s" | grep -q '∞'; then notok "C locale: no UTF-8 -∞"; else ok "C locale: no UTF-8 -∞"; fi
keys "$s" q
check "C locale: q quits and restores" "$s" 'EXITED 0 TTY-RESTORED'

# NO_COLOR: no colour escapes, glyph shading instead.
s=nocolor
start "$s" 80 24 C.UTF-8 "NO_COLOR=1"
check "NO_COLOR: starts" "$s" 'stage: input'
cmd "$s" "goto softmax"
cmd "$s" "skip"
wait_for "$s" 'weights' >/dev/null
if cape "$s" | grep -Eq '\[(3|4)8;5;|\[3[0-7]m|\[4[0-7]m'; then notok "NO_COLOR: no colours"; else ok "NO_COLOR: no colours"; fi
if cap "$s" | grep -q '[░▒▓█]'; then ok "NO_COLOR: cells carry shade glyphs"; else notok "NO_COLOR: cells carry shade glyphs"; fi
keys "$s" q
check "NO_COLOR: q quits" "$s" 'EXITED 0'

# Signals: SIGTERM restores the terminal; Ctrl-Z suspends and SIGCONT redraws.
s=sigterm
start "$s" 80 24 C.UTF-8 ""
wait_for "$s" 'stage: input' >/dev/null
pid=$(attnviz_pid "$s")
if [ -n "$pid" ]; then
	kill -TERM "$pid"
	check "SIGTERM: exits" "$s" 'EXITED 143'
	check "SIGTERM: terminal restored" "$s" 'TTY-RESTORED'
else
	notok "SIGTERM: no attnviz process found"
fi

s=sigint
start "$s" 80 24 C.UTF-8 ""
wait_for "$s" 'stage: input' >/dev/null
keys "$s" : g o
check "Ctrl-C: the command line is open" "$s" '^:go'
keys "$s" C-c
check "Ctrl-C on the command line cancels it" "$s" 'Enter: where from'
if cap "$s" | grep -q 'EXITED'; then notok "Ctrl-C on the command line keeps attnviz running"; else ok "Ctrl-C on the command line keeps attnviz running"; fi
keys "$s" C-c
check "Ctrl-C quits (status 130)" "$s" 'EXITED 130 TTY-RESTORED'

s=suspend
start "$s" 80 24 C.UTF-8 ""
wait_for "$s" 'stage: input' >/dev/null
keys "$s" n
wait_for "$s" 'step 2/' >/dev/null
keys "$s" C-z
check "Ctrl-Z: suspends and gives the terminal back" "$s" 'SUSPENDED'
alt=$(tm display-message -p -t "$s" '#{alternate_on}')
if [ "$alt" = 0 ]; then ok "Ctrl-Z: the alternate screen is left while stopped"; else notok "Ctrl-Z: the alternate screen is left while stopped"; fi
: >"$TMPD/resume-$s"
check "Ctrl-Z: resuming redraws the same step" "$s" 'step 2/[0-9]+ +stage: project'
keys "$s" q
check "Ctrl-Z: quits normally after resuming" "$s" 'EXITED 0 TTY-RESTORED'

# ---------------------------------------------------------------------------
# Presenter mode: the key line hidden, the formula on the narration's first line,
# at 80x24 (it degrades) and 200x60 (wider cells, blank lines between rows).
for size in 80x24 200x60; do
	c=${size%x*} l=${size#*x}
	s="present$c"
	start "$s" "$c" "$l" C.UTF-8 "" --present
	check "present $size: starts" "$s" 'stage: input'
	if cap "$s" | grep -q 'n/spc next'; then notok "present $size: no key line"; else ok "present $size: no key line"; fi
	cmd "$s" "goto softmax"
	cmd "$s" "skip"
	check "present $size: the formula is on the narration's first line" "$s" '^ weights = softmax\(masked\)'
	if cap "$s" | grep -A1 '^ weights = softmax' | tail -n 1 | grep -q '^ *$'; then ok "present $size: a blank line under the formula"; else notok "present $size: a blank line under the formula"; fi
	if [ "$size" = 200x60 ]; then
		# the rows of the matrices with blank lines between them, and wider cells
		if cap "$s" | grep -A1 '^I  ' | tail -n 1 | grep -q '^ *$'; then ok "present $size: blank lines between rows"; else notok "present $size: blank lines between rows"; fi
		if cap "$s" | grep -Eq '5\.00 {5,}2\.00'; then ok "present $size: wider cells"; else notok "present $size: wider cells"; fi
	fi
	cmd "$s" "present off"
	check "present $size: :present off brings the key line back" "$s" 'n/spc next'
	cmd "$s" "present on"
	if wait_gone "$s" 'n/spc next' 3; then ok "present $size: :present on hides it again"; else notok "present $size: :present on hides it again"; fi
	keys "$s" q
	check "present $size: q quits" "$s" 'EXITED 0 TTY-RESTORED'
	tm kill-session -t "$s"
done

# Operands in presenter mode: reverse + bold.
s=presentops
start "$s" 100 30 C.UTF-8 "" --present
cmd "$s" "goto scores"
cmd "$s" "skip"
wait_for "$s" 'scores' >/dev/null
if cape "$s" | grep -Eq '\[([0-9]+;)*7(;[0-9]+)*m'; then ok "present: operands in reverse video"; else notok "present: operands in reverse video"; fi
keys "$s" q
tm kill-session -t "$s"

# ---------------------------------------------------------------------------
# Demo scripts: one that plays to the end by itself (wait 0.1, no pause), one
# with a pause answered with space; p goes back one command, q leaves.
printf '# a tiny demo\ngoto scores\nwait 0.1\ngoto softmax\nwait 0.1\n\ngoto weighted\n' >"$TMPD/auto.txt"
s=demo1
start "$s" 100 30 C.UTF-8 "" --demo "$TMPD/auto.txt"
check "demo: plays to the end by itself" "$s" 'stage: weighted'
check "demo: the status line says where the demo is" "$s" 'demo 5/5, line [0-9]+'
keys "$s" p
check "demo: p goes back one command" "$s" 'stage: softmax'
check "demo: p shows the line" "$s" 'demo 4/5, line [0-9]+'
keys "$s" p
check "demo: p again goes back to the command before" "$s" 'stage: scores'
keys "$s" n
check "demo: n runs the next command by hand" "$s" 'stage: softmax'
keys "$s" q
check "demo: q leaves the demo" "$s" 'demo left'
if cap "$s" | grep -q 'EXITED'; then notok "demo: attnviz runs on after leaving the demo"; else ok "demo: attnviz runs on after leaving the demo"; fi
keys "$s" q
check "demo: a second q quits" "$s" 'EXITED 0 TTY-RESTORED'
tm kill-session -t "$s"

printf 'goto scores\npause\n# the class talks\ngoto softmax\nbogus-command\ngoto weighted\n' >"$TMPD/pause.txt"
s=demo2
start "$s" 100 30 C.UTF-8 "" --present --demo "$TMPD/pause.txt"
check "demo pause: stops at the pause" "$s" 'demo 2/5, line [0-9]+ +paused'
sleep 0.3
if cap "$s" | grep -q 'stage: scores'; then ok "demo pause: stays at the pause"; else notok "demo pause: stays at the pause"; fi
keys "$s" Space
check "demo pause: a bad line pauses the demo on its error" "$s" 'bogus-command.*paused'
keys "$s" Space
check "demo pause: space goes on, past the bad line, to the end" "$s" 'stage: weighted'
check "demo pause: the end of the script" "$s" 'demo 5/5, line [0-9]+'
keys "$s" q
wait_for "$s" 'demo left' >/dev/null
keys "$s" q
check "demo pause: quits" "$s" 'EXITED 0 TTY-RESTORED'
tm kill-session -t "$s"

# A bad line in a demo is shown, the demo pauses there, and space goes on (:source).
printf 'goto nowhere\nwait 1\ngoto softmax\n' >"$TMPD/bad.txt"
s=demo3
start "$s" 100 30 C.UTF-8 ""
cmd "$s" "source $TMPD/bad.txt"
check "demo: an error in a line is shown" "$s" 'unknown stage|nowhere'
check "demo: and the demo pauses on it" "$s" 'paused'
keys "$s" Space
check "demo: space goes on" "$s" 'stage: softmax'
keys "$s" q
wait_for "$s" 'demo left' >/dev/null
keys "$s" q
check "demo: :source, then quit" "$s" 'EXITED 0'
tm kill-session -t "$s"

# A demo whose lesson does not load pauses there instead of going on with the wrong numbers.
printf 'load nosuchlesson\ngoto softmax\n' >"$TMPD/noload.txt"
s=demo4
start "$s" 100 30 C.UTF-8 ""
cmd "$s" "source $TMPD/noload.txt"
check "demo: a failed load pauses the demo" "$s" 'paused'
check "demo: and says why" "$s" 'no lesson named'
keys "$s" ' '
check "demo: space goes on after a failed load" "$s" 'stage: softmax'
keys "$s" q
wait_for "$s" 'demo left' >/dev/null
keys "$s" q
check "demo: failed load, then quit" "$s" 'EXITED 0'
tm kill-session -t "$s"

# The shipped demos play in the TUI (q after their first pause).
for d in masking multihead; do
	s="ship$d"
	start "$s" 100 30 C.UTF-8 "" --present --demo "lessons/demos/$d.txt"
	check "lessons/demos/$d.txt: plays to its first pause" "$s" 'demo [0-9]+/[0-9]+, line [0-9]+ +paused'
	if cap "$s" | grep -Eq 'unknown|error'; then notok "lessons/demos/$d.txt: no error on the way"; else ok "lessons/demos/$d.txt: no error on the way"; fi
	keys "$s" q
	wait_for "$s" 'demo left' >/dev/null
	keys "$s" q
	check "lessons/demos/$d.txt: quits" "$s" 'EXITED 0 TTY-RESTORED'
	tm kill-session -t "$s"
done

# :play 0.2 advances by itself; a key stops it.
s=play
start "$s" 100 30 C.UTF-8 ""
wait_for "$s" 'stage: input' >/dev/null
cmd "$s" "play 0.2"
check ":play 0.2 advances" "$s" 'step 3/' 5
keys "$s" x
check ":play: a key stops it" "$s" 'play stopped'
st1=$(cap "$s" | grep -Eo 'step [0-9]+/' | head -n 1)
sleep 0.6
st2=$(cap "$s" | grep -Eo 'step [0-9]+/' | head -n 1)
if [ "$st1" = "$st2" ]; then ok ":play: stopped stays"; else notok ":play: stopped stays ($st1 then $st2)"; fi
cmd "$s" "play 0"
check ":play 0 is refused" "$s" 'play: expected seconds'
keys "$s" q
check ":play: quits" "$s" 'EXITED 0'
tm kill-session -t "$s"

# ---------------------------------------------------------------------------
# --record: an asciicast v2 file (unit_record checks the format closely).
s=record
start "$s" 90 25 C.UTF-8 "" --record "$TMPD/rec.cast" lessons/mask.json
check "record: starts" "$s" 'Masked attention'
keys "$s" n
check "record: steps" "$s" 'step 2/'
tm resize-window -t "$s" -x 100 -y 30
check "record: redraws at the new size" "$s" 'Masked attention.*step 2/'
keys "$s" q
check "record: quits and restores the terminal" "$s" 'EXITED 0 TTY-RESTORED'
if [ -s "$TMPD/rec.cast" ] && [ ! -e "$TMPD/rec.cast.part" ]; then ok "record: the file is in place"; else notok "record: the file is in place"; fi
if head -n 1 "$TMPD/rec.cast" | grep -q '^{"version": 2, "width": 90, "height": 25, "timestamp": [0-9]*, "env": {"TERM": "xterm-256color"'; then
	ok "record: asciicast v2 header"; else notok "record: asciicast v2 header"; fi
if sed -n '2,$p' "$TMPD/rec.cast" | grep -vq '^\[[0-9]*\.[0-9]*, "[or]", ".*"\]$'; then notok "record: every event is [time, code, data]"; else ok "record: every event is [time, code, data]"; fi
if grep -q '"r", "100x30"' "$TMPD/rec.cast"; then ok "record: the resize is an r event"; else notok "record: the resize is an r event"; fi
if grep -q 'Masked attention' "$TMPD/rec.cast"; then ok "record: the screen's text is in the events"; else notok "record: the screen's text is in the events"; fi
if sed -n '2,$p' "$TMPD/rec.cast" | sed 's/^\[\([0-9.]*\),.*/\1/' | sort -n -c 2>/dev/null; then ok "record: times never go back"; else notok "record: times never go back"; fi
tm kill-session -t "$s"
if "$ATTNVIZ" --record "$TMPD/x.cast" --plain </dev/null >/dev/null 2>&1; then notok "record: refused with --plain"; else ok "record: refused with --plain"; fi

# ---------------------------------------------------------------------------
# Themes: every theme file loads with :theme; a malformed one is an error and
# the default comes back.
s=themes
start "$s" 100 30 C.UTF-8 ""
wait_for "$s" 'stage: input' >/dev/null
for f in "$SRCDIR"/assets/themes/*.json; do
	name=$(basename "$f" .json)
	cmd "$s" "theme $name"
	check ":theme $name loads" "$s" "theme $name \\([0-9]+ colours\\)"
done
printf '{ "name": "broken", "roles": { "stage": { "fg": "purplish" } } }\n' >"$TMPD/broken.json"
cmd "$s" "theme $TMPD/broken.json"
check ":theme of a malformed file is an error" "$s" 'using the default theme: .*broken\.json'
cmd "$s" "theme nosuchtheme"
check ":theme of a missing theme is an error" "$s" 'using the default theme: .*nosuchtheme'
cmd "$s" "goto softmax"
check ":theme: after a bad theme attnviz goes on" "$s" 'stage: softmax'
keys "$s" q
check ":theme: quits" "$s" 'EXITED 0'
tm kill-session -t "$s"
s=themeopt
start "$s" 100 30 C.UTF-8 "" --theme projector
check "--theme projector starts" "$s" 'stage: input'
keys "$s" q
check "--theme projector: quits" "$s" 'EXITED 0'
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
check "compare: the variant's pane, with its label" "$s" 'scaled by 1/√d_k: weights'
check "compare: the cells that differ are counted" "$s" '[0-9]+ differ \(\*\)'
if cap "$s" | grep -Eq '\*0\.[0-9][0-9]'; then ok "compare: differing cells carry a *"; else notok "compare: differing cells carry a *"; fi
check "stats: mean and sigma in a score pane's title" "$s" 'μ -?[0-9.]+ σ [0-9.]+'
cmd "$s" "compare off"
if wait_gone "$s" 'differ \(\*\)' 3; then ok "compare off: one variant again"; else notok "compare off: one variant again" "$TMPD/last-screen"; fi
cmd "$s" "goto project"
check "stats: the parameter count on the stage line" "$s" 'stage: project.*params [0-9]+'
keys "$s" q
tm kill-session -t "$s"

# Row sums and the legend (UTF-8), then the legend in the C locale.
s=sums
start "$s" 100 30 C.UTF-8 ""
cmd "$s" "goto softmax"
cmd "$s" "skip"
check "stats: a Σ column beside the weights" "$s" 'Σ'
if cap "$s" | grep -E '^I ' | grep -Eq '1\.00 *$'; then ok "stats: row sums are 1"; else notok "stats: row sums are 1"; fi
check "legend: the value range and the ramp under a pane" "$s" '[0-9.]+ ▁▂▃▄▅▆▇ [0-9.]+'
keys "$s" q
tm kill-session -t "$s"

s=legendc
start "$s" 100 30 C "" lessons/mask.json
cmd "$s" "goto softmax"
cmd "$s" "skip"
check "legend: ASCII in the C locale" "$s" '[0-9.]+ \.:-=\+\*# [0-9.]+'
keys "$s" q
tm kill-session -t "$s"

# The last step offers the next lesson.
s=nextlesson
start "$s" 100 30 C.UTF-8 ""
wait_for "$s" 'stage: input' >/dev/null
keys "$s" G
check "the last step offers the next lesson" "$s" 'finished! next: :load [a-z]+'
keys "$s" q
tm kill-session -t "$s"

exit 0
