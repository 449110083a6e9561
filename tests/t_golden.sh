#!/bin/sh
# t_golden.sh: --dump against the PyTorch reference numbers in tests/golden.
# Each tests/golden/NAME.json with a NAME.ref.json (made by
# tests/golden/make_reference.py, committed) must pass --check and give a
# --dump equal to the reference within jsoncmp's default tolerance
# (|a - e| <= 1e-12 + 1e-9 |e|); keys the reference lacks are ignored.
# Run from the repository root; $ATTNVIZ is the binary, $BUILD the build dir.

ATTNVIZ=${ATTNVIZ:-build/attnviz}
BUILD=${BUILD:-build}
JSONCMP=$BUILD/tests/jsoncmp

tmp=$(mktemp "${TMPDIR:-/tmp}/attnviz-golden.XXXXXX") || exit 0
trap 'rm -f "$tmp" "$tmp.err" "$tmp.diff"' EXIT INT TERM

for lesson in tests/golden/*.json; do
	case $lesson in *.ref.json) continue ;; esac
	ref=${lesson%.json}.ref.json
	[ -f "$ref" ] || continue
	name=$(basename "$lesson" .json)

	if "$ATTNVIZ" --check "$lesson" >/dev/null 2>"$tmp.err"; then
		echo "ok - golden check $name"
	else
		echo "not ok - golden check $name"
		sed -n '1,5s/^/# /p' "$tmp.err"
	fi

	if ! "$ATTNVIZ" --dump "$lesson" >"$tmp" 2>"$tmp.err"; then
		echo "not ok - golden $name"
		echo "# --dump failed:"
		sed -n '1,5s/^/# /p' "$tmp.err"
		continue
	fi
	if "$JSONCMP" --only-expected-keys "$ref" "$tmp" >"$tmp.diff" 2>&1; then
		echo "ok - golden $name"
	else
		echo "not ok - golden $name"
		sed 's/^/# /' "$tmp.diff"
	fi
done

# Every shipped lesson: --check --strict (both languages everywhere), and its
# --dump (with the "compare" variant) against tests/golden/lessons/NAME.ref.json,
# or, for a lesson whose reference would be over 1 MB, against the summary
# NAME.summary.json (shapes, mean/std/min/max per matrix and sampled cells),
# all made by `make_reference.py --lessons`.
for lesson in lessons/*.json; do
	name=$(basename "$lesson" .json)
	if "$ATTNVIZ" --check --strict "$lesson" >/dev/null 2>"$tmp.err"; then
		echo "ok - lesson check --strict $name"
	else
		echo "not ok - lesson check --strict $name"
		sed -n '1,5s/^/# /p' "$tmp.err"
	fi
	ref=tests/golden/lessons/$name.ref.json
	summary=
	if [ ! -f "$ref" ]; then
		ref=tests/golden/lessons/$name.summary.json
		summary=--summary
	fi
	if [ ! -f "$ref" ]; then
		echo "not ok - lesson golden $name"
		echo "# no tests/golden/lessons/$name.ref.json: run /usr/bin/python3 tests/golden/make_reference.py --lessons"
		continue
	fi
	if ! "$ATTNVIZ" --dump "$lesson" >"$tmp" 2>"$tmp.err"; then
		echo "not ok - lesson golden $name"
		sed -n '1,5s/^/# /p' "$tmp.err"
		continue
	fi
	if "$JSONCMP" --rtol 1e-9 --only-expected-keys $summary "$ref" "$tmp" >"$tmp.diff" 2>&1; then
		echo "ok - lesson golden $name${summary:+ (summary)}"
	else
		echo "not ok - lesson golden $name${summary:+ (summary)}"
		sed 's/^/# /' "$tmp.diff"
	fi
done
exit 0
