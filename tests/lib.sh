# tests/lib.sh: what every tests/t_*.sh shares. Each script, run from the
# repository root, sources it after its opening comment:
#   . "$(dirname "$0")/lib.sh"
#
# A script prints "ok - NAME" or "not ok - NAME" per check, and ends with
# `finish`, whose line "N passed, N failed" tests/run.sh reads. A script that
# stops before `finish`, or runs no check, has failed.
#
# Gives: $ATTNVIZ and $BUILD (absolute), $tmp (a private directory, removed at
# exit), $err (a file for a command's stderr: a failed check prints its first
# lines) and $ESC.

ATTNVIZ=${ATTNVIZ:-$(pwd)/build/attnviz}
BUILD=${BUILD:-$(pwd)/build}
ESC=$(printf '\033')
# Tests must not depend on the person's environment.
unset NO_COLOR ATTNVIZ_LESSONS ATTNVIZ_THEMES

passed=0
failed=0

ok() {
	passed=$((passed + 1))
	echo "ok - $1"
}
# not_ok NAME [NOTE...]: each line of the notes, then of $err, as a "# " line
not_ok() {
	failed=$((failed + 1))
	echo "not ok - $1"
	shift
	if [ $# -gt 0 ]; then printf '%s\n' "$@" | sed 's/^/# /'; fi
	if [ -s "$err" ]; then sed -n '1,5s/^/# stderr: /p' "$err"; fi
}
# skip NAME WHY: a check this machine cannot run (a missing tool)
skip() {
	ok "$1 # SKIP $2"
}
# check NAME COMMAND [ARG...]: ok when the command succeeds. One command:
# for `a && b`, pipes or `!`, use expect.
check() {
	ck_name=$1
	shift
	if "$@"; then ok "$ck_name"; else not_ok "$ck_name"; fi
}
# expect NAME 'CONDITION': ok when the shell condition, evaluated here, is true
expect() {
	if eval "$2"; then ok "$1"; else not_ok "$1"; fi
}
# finish: the result line; exit 0 only when every check passed and there was one
finish() {
	echo "$passed passed, $failed failed"
	if [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]; then exit 0; fi
	exit 1
}
# bail WHY: the script cannot go on; that is a failure
bail() {
	not_ok "$(basename "$0" .sh): $1"
	finish
}

# has FILE TEXT: FILE has a line containing TEXT (a fixed string)
has() { grep -q -F -e "$2" "$1"; }
# hasnt FILE TEXT: FILE has lines, none containing TEXT; an empty or missing file proves nothing
hasnt() {
	[ -s "$1" ] || return 1
	grep -q -F -e "$2" "$1"
	[ $? -eq 1 ]
}
# count FILE TEXT: how many times TEXT (a fixed string) stands in FILE; nothing when FILE is missing
count() { [ -r "$1" ] && grep -o -F -e "$2" "$1" | wc -l | tr -d ' '; }
# external TOOL…: every TOOL is on PATH and external checks are wanted (ATTNVIZ_TEST_EXTERNAL=0,
# set by .ci/run for its second and third runs, leaves what a browser or ffmpeg makes of our files
# to the first run); skip_external NAME TOOLS: the matching skip line
external() {
	[ "${ATTNVIZ_TEST_EXTERNAL:-1}" != 0 ] || return 1
	for e_t; do command -v "$e_t" >/dev/null 2>&1 || return 1; done
}
skip_external() {
	if [ "${ATTNVIZ_TEST_EXTERNAL:-1}" = 0 ]; then skip "$1" "ATTNVIZ_TEST_EXTERNAL=0 (the first run checks it)"
	else skip "$1" "$2 not installed"; fi
}
# count_re FILE REGEX: the same for a basic regular expression
count_re() { [ -r "$1" ] && grep -o -e "$2" "$1" | wc -l | tr -d ' '; }
# stages_of LESSON: the stages its --dump lists (a lesson with layers: its first layer's)
stages_of() {
	"$ATTNVIZ" --dump "$1" 2>/dev/null | sed -n 's/^[[:space:]]*"stages":[[:space:]]*\[\(.*\)\],$/\1/p' | head -n 1 | tr -d '",'
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnviz-$(basename "$0" .sh).XXXXXX") || bail "no temporary directory"
err=$tmp/err
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
