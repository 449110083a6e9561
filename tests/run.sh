#!/bin/sh
# tests/run.sh BUILD — run every unit test binary and every tests/t_*.sh script
# against the attnviz in BUILD, and end with one line
# "N passed, N failed, N skipped" (.ci/run reads its "N passed, N failed").
#   unit_*:  cmocka binaries; each test case counts once (cmocka's skip(): skipped)
#   t_*.sh:  scripts printing "ok - NAME" / "not ok - NAME" lines, "ok - NAME
#            # SKIP WHY" for a check they could not run, and, last,
#            "N passed, N failed, N skipped" with the same counts (tests/lib.sh)
# A program that crashes, exits early or runs no test counts one failure more.
#
# Skips. A skipped check is not a pass: it is counted apart, each suite's line
# says how many ("ok   t_tex (4, 16 skipped: 16 on purpose)"), and so does
# the last line.
# A suite whose every check was skipped (t_tui without tmux) tested nothing:
# it FAILS, unless each of its skips was on purpose — "# SKIP on purpose: WHY"
# (tests/lib.sh's skip_on_purpose) — which the tests say in two cases only:
#   - ATTNVIZ_TEST_EXTERNAL=0: .ci/run's second and third runs leave what
#     Chromium and ffmpeg make of our files to its first (skip_external);
#   - a tool of tests/lib.sh's OPTIONAL_TOOLS (TeX Live, pandoc, poppler-utils)
#     is missing: CI does not install them, on purpose (skip_missing).
# Any other skip (tmux, xmllint, rsvg-convert missing: CI installs them) is
# shown and counted, and a suite of nothing else fails.
build=${1:-build}
ATTNVIZ=$(cd "$build" && pwd)/attnviz
BUILD=$(cd "$build" && pwd)
export ATTNVIZ BUILD ATTNVIZ_SRCDIR=$(pwd)
# Tests must not depend on the person's environment.
unset NO_COLOR ATTNVIZ_LESSONS
export XDG_STATE_HOME="${TMPDIR:-/tmp}/attnviz-test-state-$$"
passed=0
failed=0
skipped=0
# A sanitizer build (make test SAN=1) writes every report to a file here,
# whoever ran the process: a tmux pane's stderr is a screen no one reads, and
# a test may throw stderr away. Any report is a failure. Other builds ignore these.
sandir="${TMPDIR:-/tmp}/attnviz-test-san-$$"
mkdir -p "$sandir"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$sandir/asan"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$sandir/ubsan"
# ncurses' own allocations are not ours (tests/lsan.supp says which)
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0"

# shown P S K: what a suite's line shows of P passed and S skipped, K of them on purpose
shown() {
	if [ "$2" -eq 0 ]; then echo "$1"
	elif [ "$3" -eq 0 ]; then echo "$1, $2 skipped"
	else echo "$1, $2 skipped: $3 on purpose"; fi
}

# The suites run side by side, $ATTNVIZ_TEST_JOBS at a time (default: the
# processors, at most 4), each with a log and a state folder of its own; the
# results are then read in the order below, so the report is the same as a run
# one at a time (ATTNVIZ_TEST_JOBS=1). The longest scripts start first.
jobs=${ATTNVIZ_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$jobs" -gt 4 ] && jobs=4
logs="${TMPDIR:-/tmp}/attnviz-test-logs-$$"
mkdir -p "$logs"
{
	ls -S tests/t_*.sh 2>/dev/null
	for t in "$BUILD"/tests/unit_*; do [ -x "$t" ] && echo "$t"; done
} | xargs -P "$jobs" -I '{}' sh -c '
	t=$1 logs=$2
	name=$(basename "$t" .sh)
	mkdir -p "$logs/$name.state"
	case $t in
	*.sh) XDG_STATE_HOME="$logs/$name.state" sh "$t" >"$logs/$name.log" 2>&1 ;;
	*) XDG_STATE_HOME="$logs/$name.state" "$t" >"$logs/$name.log" 2>&1 ;;
	esac
	echo $? >"$logs/$name.rc"
' sh '{}' "$logs"

for t in "$BUILD"/tests/unit_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	log="$logs/$name.log"
	rc=$(cat "$logs/$name.rc" 2>/dev/null || echo 127)
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	p=${p:-0}
	f=${f:-0}
	s=${s:-0}
	why=
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then why="exit $rc"       # crashed
	elif [ $((p + f + s)) -eq 0 ]; then why="it ran no test"
	elif [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then why="skipped whole: it tested nothing"
	fi
	if [ -n "$why" ]; then f=$((f + 1)); fi
	if [ "$f" -ne 0 ]; then
		echo "FAIL $name${why:+: $why}"
		sed -n '/\[  FAILED  \]\|\[  ERROR   \]\|\[  SKIPPED \]\|Failure\|failure\|error\|Skipped/p' "$log" | head -n 40 | sed 's/^/    /'
	else
		echo "ok   $name ($(shown "$p" "$s" 0))"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
done

for t in tests/t_*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	log="$logs/$name.log"
	rc=$(cat "$logs/$name.rc" 2>/dev/null || echo 127)
	s=$(grep -c '^ok - .* # SKIP ' "$log")
	k=$(grep -c '^ok - .* # SKIP on purpose: ' "$log")
	p=$(($(grep -c '^ok - ' "$log") - s))
	f=$(grep -c '^not ok - ' "$log")
	last=$(tail -n 1 "$log")
	why=
	if [ "$last" != "$p passed, $f failed, $s skipped" ] && { [ "$s" -ne 0 ] || [ "$last" != "$p passed, $f failed" ]; }; then
		why="its last line is not \"$p passed, $f failed, $s skipped\": it stopped early (exit $rc) or miscounted"
	elif [ $((p + f + s)) -eq 0 ]; then
		why="it ran no check"
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		why="exit $rc"
	elif [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$k" -lt "$s" ]; then
		why="skipped whole: it tested nothing ($(sed -n 's/^ok - .* # SKIP //p' "$log" | grep -v '^on purpose: ' | head -n 1))"
	fi
	if [ -n "$why" ]; then f=$((f + 1)); fi
	if [ "$f" -ne 0 ]; then
		echo "FAIL $name${why:+: $why}"
		grep -A 8 '^not ok - ' "$log" | head -n 60 | sed 's/^/    /'
		if [ -n "$why" ]; then tail -n 5 "$log" | sed 's/^/    | /'; fi
	else
		echo "ok   $name ($(shown "$p" "$s" "$k"))"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
done
reports=$(ls "$sandir" | wc -l)
if [ "$reports" -ne 0 ]; then
	echo "FAIL sanitizer reports: $reports"
	for r in "$sandir"/*; do grep -m 12 -E 'ERROR|SUMMARY|runtime error|^    #[0-9] ' "$r" | sed 's/^/    /'; done | head -n 60
	failed=$((failed + reports))
fi
rm -rf "$logs" "$XDG_STATE_HOME" "$sandir"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
