# tests/lib.sh: what every tests/t_*.sh shares. Each script, run from the
# repository root, sources it after its opening comment:
#   . "$(dirname "$0")/lib.sh"
#
# A script prints "ok - NAME" or "not ok - NAME" per check ("ok - NAME # SKIP
# WHY" for one it could not run: `skip`), and ends with `finish`, whose line
# "N passed, N failed, N skipped" tests/run.sh reads. A script that stops
# before `finish`, or runs no check, has failed; one whose every check was
# skipped has tested nothing, and tests/run.sh fails it unless each skip was
# on purpose (`skip_on_purpose`; tests/run.sh says when that may be).
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
skipped=0

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
# skip NAME WHY: a check this machine cannot run (a missing tool). It is not a
# pass: counted apart, and a suite of nothing but skips fails (tests/run.sh).
skip() {
	skipped=$((skipped + 1))
	echo "ok - $1 # SKIP $2"
}
# skip_on_purpose NAME WHY: a check left out on purpose, by the tests' own
# choice rather than this machine's lack (ATTNVIZ_TEST_EXTERNAL=0, a tool of
# OPTIONAL_TOOLS): "ok - NAME # SKIP on purpose: WHY". Still a skip, shown as
# one, but a suite made only of these is not a failure.
skip_on_purpose() {
	skip "$1" "on purpose: $2"
}
# The tools the tests may lack on purpose: CI does not install TeX Live, pandoc
# or poppler-utils (they would take it past its time), so their checks skip
# there. Any other missing tool (tmux, xmllint, rsvg-convert, msgfmt: CI
# installs them) is a plain skip.
OPTIONAL_TOOLS="pdflatex xelatex lualatex pandoc pdftoppm pdfinfo"
# skip_missing NAME TOOL WHY: TOOL is not installed; on purpose when OPTIONAL_TOOLS names it
skip_missing() {
	case " $OPTIONAL_TOOLS " in
	*" $2 "*) skip_on_purpose "$1" "$3" ;;
	*) skip "$1" "$3" ;;
	esac
}
# check NAME COMMAND [ARG...]: ok when the command succeeds. One command:
# for `a && b`, pipes or `!`, use expect.
check() {
	ck_name=$1
	shift
	if "$@"; then ok "$ck_name"; else not_ok "$ck_name"; fi
}
# expect NAME 'CONDITION' [NOTE...]: ok when the shell condition, evaluated
# here, is true; else not ok with the notes (not_ok's). The condition is
# evaluated first, so its $? is still the status of the command before expect.
expect() {
	if eval "$2"; then
		ok "$1"
	else
		ex_name=$1
		shift 2
		not_ok "$ex_name" "$@"
	fi
}
# finish: the result line; exit 0 only when no check failed and there was one
# (passed or skipped: whether a suite of skips fails is tests/run.sh's rule)
finish() {
	echo "$passed passed, $failed failed, $skipped skipped"
	if [ "$failed" -eq 0 ] && [ $((passed + skipped)) -gt 0 ]; then exit 0; fi
	exit 1
}
# bail WHY: the script cannot go on; that is a failure
bail() {
	not_ok "$(basename "$0" .sh): $1"
	finish
}

# run ARGS…: attnviz with ARGS and no input, stdout into $out (the script names it), stderr into $err; its exit status in $rc
run() { "$ATTNVIZ" "$@" >"$out" 2>"$err" </dev/null; rc=$?; }
# lines FILE: how many lines FILE has
lines() { wc -l <"$1" | tr -d ' '; }
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
# to the first run); skip_external NAME TOOLS: the matching skip line (on purpose under
# ATTNVIZ_TEST_EXTERNAL=0; a plain skip when the tools are missing)
external() {
	[ "${ATTNVIZ_TEST_EXTERNAL:-1}" != 0 ] || return 1
	for e_t; do command -v "$e_t" >/dev/null 2>&1 || return 1; done
}
skip_external() {
	if [ "${ATTNVIZ_TEST_EXTERNAL:-1}" = 0 ]; then skip_on_purpose "$1" "ATTNVIZ_TEST_EXTERNAL=0 (the first run checks it)"
	else skip "$1" "$2 not installed"; fi
}
# count_re FILE REGEX: the same for a basic regular expression
count_re() { [ -r "$1" ] && grep -o -e "$2" "$1" | wc -l | tr -d ' '; }
# explains NAME LESSON INPUT TEXT...: the plain REPL on LESSON, fed INPUT (a printf format: \n),
# prints every TEXT (fixed strings); else not ok with the explanations it printed
explains() {
	e_name=$1 e_lesson=$2
	# shellcheck disable=SC2059 # the input is a printf format on purpose (\n)
	printf "$3" | "$ATTNVIZ" --plain "$e_lesson" >"$tmp/explains.out" 2>"$err"
	shift 3
	for e_text in "$@"; do
		if ! grep -qF -- "$e_text" "$tmp/explains.out"; then
			not_ok "$e_name" "no \"$e_text\" in: $(grep -A6 '^-- explain' "$tmp/explains.out")"
			return
		fi
	done
	ok "$e_name"
}
# stages_of LESSON: the stages its --dump lists (a lesson with layers: its first layer's)
stages_of() {
	"$ATTNVIZ" --dump "$1" 2>/dev/null | sed -n 's/^[[:space:]]*"stages":[[:space:]]*\[\(.*\)\],$/\1/p' | head -n 1 | tr -d '",'
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnviz-$(basename "$0" .sh).XXXXXX") || bail "no temporary directory"
err=$tmp/err
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
