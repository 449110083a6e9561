#!/bin/sh
# t_dumps.sh: refactoring the engine must not change a single byte of --dump.
# tests/golden/dumps.sha256 holds the sha256 of `attnviz --dump FILE` for every
# shipped and golden lesson, made before the stage table replaced the switches;
# each must still match. (A change that means to change the numbers updates the
# file in the same commit and says why.)
ATTNVIZ=${ATTNVIZ:-build/attnviz}
sums=tests/golden/dumps.sha256
pass=0
fail=0
while read -r sum file; do
	case $sum in '#'*|'') continue ;; esac
	got=$("$ATTNVIZ" --dump "$file" 2>/dev/null | sha256sum | cut -c1-64)
	if [ "$got" = "$sum" ]; then
		echo "ok - dump unchanged $file"; pass=$((pass + 1))
	else
		echo "not ok - dump unchanged $file"; fail=$((fail + 1))
	fi
done <"$sums"
[ $((pass + fail)) -gt 0 ] || { echo "not ok - no dump checksums read from $sums"; fail=1; }
echo "$pass passed, $fail failed"
