# tests/tmux.sh: a real terminal for the tests that need one — tmux on a
# private socket. Sourced after lib.sh (it uses $tmp, skip, finish, not_ok):
#   . "$(dirname "$0")/tmux.sh"
# Gives tm (tmux on the socket; the server goes at exit), cap, snap, wait_for,
# wait_gone, screen_not_ok, shows and keys. Without tmux the script ends
# here with one SKIP.

SOCK="attnviz-test-$$"
tm() { tmux -L "$SOCK" -f /dev/null "$@"; }
# (the panes' programs may still be writing into $tmp as the server goes: a second try)
trap 'tm kill-server >/dev/null 2>&1; rm -rf "$tmp" 2>/dev/null || { sleep 1; rm -rf "$tmp"; }' EXIT

if ! command -v tmux >/dev/null 2>&1; then
	skip "$(basename "$0" .sh)" "tmux not installed"
	finish
fi

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
