#!/bin/sh
# tests/run.sh BUILD — run every unit test binary and every tests/t_*.sh script
# against the attnviz in BUILD, and end with one line "N passed, N failed".
#   unit_*:  cmocka binaries; each test case counts once
#   t_*.sh:  scripts printing "ok - NAME" / "not ok - NAME" lines and, last,
#            "N passed, N failed" with the same counts (tests/lib.sh)
# A program that crashes, exits early or runs no test counts one failure more.
build=${1:-build}
ATTNVIZ=$(cd "$build" && pwd)/attnviz
BUILD=$(cd "$build" && pwd)
export ATTNVIZ BUILD ATTNVIZ_SRCDIR=$(pwd)
# Tests must not depend on the person's environment.
unset NO_COLOR ATTNVIZ_LESSONS
export XDG_STATE_HOME="${TMPDIR:-/tmp}/attnviz-test-state-$$"
passed=0
failed=0
log="${TMPDIR:-/tmp}/attnviz-test-$$.log"
# A sanitizer build (make test SAN=1) writes every report to a file here,
# whoever ran the process: a tmux pane's stderr is a screen no one reads, and
# a test may throw stderr away. Any report is a failure. Other builds ignore these.
sandir="${TMPDIR:-/tmp}/attnviz-test-san-$$"
mkdir -p "$sandir"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$sandir/asan"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$sandir/ubsan"
# ncurses' own allocations are not ours (tests/lsan.supp says which)
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0"

for t in "$BUILD"/tests/unit_*; do
	[ -x "$t" ] || continue
	name=$(basename "$t")
	"$t" >"$log" 2>&1
	rc=$?
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$log" | tail -n 1)
	p=${p:-0}
	f=${f:-0}
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] || [ $((p + f)) -eq 0 ]; then f=$((f + 1)); fi   # crashed, or no test
	if [ "$f" -ne 0 ]; then
		echo "FAIL $name"
		sed -n '/\[  FAILED  \]\|\[  ERROR   \]\|Failure\|failure\|error/p' "$log" | head -n 40 | sed 's/^/    /'
	else
		echo "ok   $name ($p)"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
done

for t in tests/t_*.sh; do
	[ -f "$t" ] || continue
	name=$(basename "$t" .sh)
	sh "$t" >"$log" 2>&1
	rc=$?
	p=$(grep -c '^ok - ' "$log")
	f=$(grep -c '^not ok - ' "$log")
	why=
	if [ "$(tail -n 1 "$log")" != "$p passed, $f failed" ]; then
		why="its last line is not \"$p passed, $f failed\": it stopped early (exit $rc) or miscounted"
	elif [ $((p + f)) -eq 0 ]; then
		why="it ran no check"
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		why="exit $rc"
	fi
	if [ -n "$why" ]; then f=$((f + 1)); fi
	if [ "$f" -ne 0 ]; then
		echo "FAIL $name${why:+: $why}"
		grep -A 8 '^not ok - ' "$log" | head -n 60 | sed 's/^/    /'
		if [ -n "$why" ]; then tail -n 5 "$log" | sed 's/^/    | /'; fi
	else
		echo "ok   $name ($p)"
	fi
	passed=$((passed + p))
	failed=$((failed + f))
done
reports=$(ls "$sandir" | wc -l)
if [ "$reports" -ne 0 ]; then
	echo "FAIL sanitizer reports: $reports"
	for r in "$sandir"/*; do grep -m 12 -E 'ERROR|SUMMARY|runtime error|^    #[0-9] ' "$r" | sed 's/^/    /'; done | head -n 60
	failed=$((failed + reports))
fi
rm -rf "$log" "$XDG_STATE_HOME" "$sandir"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
