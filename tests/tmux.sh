# tests/tmux.sh — the house way to drive the full-screen view in a real terminal
# (tmux on a private socket), sourced after tests/lib.sh by t_tui.sh, t_teach.sh and t_render.sh,
# and for their last part by t_files.sh and t_safety.sh:
# start, begin, cap, snap, wait_for, wait_gone, shows, keys, cmd, quits, plays, leaves_demo, attnviz_pid.
# Without tmux the rest of the script is one skip; a suite with nothing before it
# has skipped whole, which tests/run.sh counts as a failure (tmux is one of the
# tests' dependencies).

SRCDIR=${ATTNVIZ_SRCDIR:-$(pwd)}
SOCK="attnviz-test-$$"
STATE="$tmp/state"

tm() { tmux -L "$SOCK" -f /dev/null "$@"; }
# (the panes' programs may still be writing into $tmp as the server goes: a second try)
trap 'tm kill-server >/dev/null 2>&1; rm -rf "$tmp" 2>/dev/null || { sleep 1; rm -rf "$tmp"; }' EXIT

if ! command -v tmux >/dev/null 2>&1; then
	skip "$(basename "$0" .sh)" "tmux not installed"
	finish
fi
[ -x "$ATTNVIZ" ] || bail "no binary at $ATTNVIZ"
# A session that stays until the end: a tmux server exits with its last session, and a
# new-session sent while it exits fails ("server exited unexpectedly": 25 times in 300
# kill-session/new-session pairs on a quiet machine), so a test that kills its session
# and starts the next would now and then find no server at all.
tm new-session -d -s tmux-sh-keep -x 20 -y 5 'exec sleep 86400' || bail "tmux cannot start a session"

# start NAME COLS LINES LANG EXTRA_ENV [ARGS…] — a session NAME running attnviz.
# The shell runs attnviz as a job (set -m), so Ctrl-Z stops it for real; after
# a stop it waits for the file resume-NAME and brings it back with fg.
start() {
	st_name=$1 st_cols=$2 st_lines=$3 st_lang=$4 st_extra=$5
	shift 5
	cat >"$tmp/run-$st_name.sh" <<EOF
cd "$SRCDIR" || exit 1
set -m
before=\$(stty -g)
"$ATTNVIZ" $*
rc=\$?
while [ "\$rc" = 148 ]; do
	echo SUSPENDED
	while [ ! -e "$tmp/resume-$st_name" ]; do sleep 0.05; done
	rm -f "$tmp/resume-$st_name"
	fg >/dev/null
	rc=\$?
done
if [ "\$(stty -g)" = "\$before" ]; then r=TTY-RESTORED; else r=TTY-CHANGED; fi
echo "EXITED \$rc \$r"
exec sleep 600
EOF
	tm new-session -d -s "$st_name" -x "$st_cols" -y "$st_lines" \
		"env -u NO_COLOR TERM=xterm-256color LANG=$st_lang LC_ALL=$st_lang XDG_STATE_HOME=$STATE $st_extra sh $tmp/run-$st_name.sh"
}

cap() { tm capture-pane -p -t "$1" 2>/dev/null; }
# snap SESSION [-e]: the screen as it is now in $tmp/screen (-e: with its escapes)
snap() { tm capture-pane -p $2 -t "$1" >"$tmp/screen" 2>/dev/null; }

# wait_for SESSION PATTERN [SECONDS] — poll until the screen matches (grep -E).
wait_for() {
	w_s=$1 w_pat=$2 w_secs=${3:-5}
	w_i=0
	while [ "$w_i" -lt $((w_secs * 20)) ]; do
		if cap "$w_s" | grep -Eq -- "$w_pat"; then return 0; fi
		sleep 0.05
		w_i=$((w_i + 1))
	done
	cap "$w_s" >"$tmp/last-screen"
	return 1
}

# wait_gone SESSION PATTERN [SECONDS] — poll until the screen no longer matches
# (an empty capture is a session that is gone, not a screen without the pattern).
wait_gone() {
	g_s=$1 g_pat=$2 g_secs=${3:-5}
	g_i=0
	while [ "$g_i" -lt $((g_secs * 20)) ]; do
		cap "$g_s" >"$tmp/last-screen"
		if [ -s "$tmp/last-screen" ] && ! grep -Eq -- "$g_pat" "$tmp/last-screen"; then return 0; fi
		sleep 0.05
		g_i=$((g_i + 1))
	done
	return 1
}

# screen_not_ok NAME: a failed check, with the last screen wait_for or wait_gone saw
screen_not_ok() { not_ok "$1" "$(head -n 30 "$tmp/last-screen" 2>/dev/null)"; }
# shows NAME SESSION PATTERN [SECONDS]: ok when the screen comes to match
shows() {
	if wait_for "$2" "$3" "${4:-5}"; then ok "$1"; else screen_not_ok "$1"; fi
}

keys() { k_s=$1; shift; tm send-keys -t "$k_s" "$@"; }
# quits SESSION NAME — q quits with status 0 and the tty restored; the session goes.
quits() {
	keys "$1" q
	shows "$2: q quits" "$1" 'EXITED 0 TTY-RESTORED'
	tm kill-session -t "$1"
}
# plays SESSION SCRIPT — the demo SCRIPT (a printf format: \n between lines) in a session at 100×30
plays() {
	printf "$2" >"$tmp/$1.txt"
	start "$1" 100 30 C.UTF-8 "" --demo "$tmp/$1.txt"
}
# leaves_demo SESSION NAME — q leaves the demo playing, then q quits as quits does.
leaves_demo() {
	keys "$1" q
	wait_for "$1" 'demo left' >/dev/null
	quits "$1" "$2"
}
# cmd SESSION LINE — type a `:` command and Enter.
cmd() {
	tm send-keys -t "$1" ':'
	tm send-keys -t "$1" -l "$2"
	tm send-keys -t "$1" Enter
	# The command line closes when the command ran.
	wait_gone "$1" "^:" 3 >/dev/null
}


# begin SESSION COLSxLINES [ARGS…] — start attnviz at that size in C.UTF-8 and wait for its first stage
begin() {
	b_s=$1 b_sz=$2
	shift 2
	start "$b_s" "${b_sz%x*}" "${b_sz#*x}" C.UTF-8 "" "$@"
	wait_for "$b_s" 'stage: input' >/dev/null
}

attnviz_pid() { # the attnviz process under a session's shell
	p_pp=$(tm display-message -p -t "$1" '#{pane_pid}')
	ps -o pid= -o comm= --ppid "$p_pp" 2>/dev/null | awk '$2 ~ /attnviz/ { print $1; exit }'
}
