#!/bin/sh
# t_dumps.sh: refactoring the engine must not change a single byte of --dump.
# tests/golden/dumps.sha256 holds the sha256 of `attnviz --dump FILE` for every
# shipped and golden lesson, made before the stage table replaced the switches;
# each must still match. (A change that means to change the numbers updates the
# file in the same commit and says why.)
# Prints "ok - NAME" / "not ok - NAME" lines and ends with "N passed, N failed, N skipped"
# (tests/lib.sh); no checksum read is a failure.
. "$(dirname "$0")/lib.sh"

# The sums were made with an exact kernel (each product rounded before it is
# added, src/base/gemm.c); the fused ones, the default where the processor has
# one, differ in the last bits, so the portable (exact) kernel computes here.
ATTNVIZ_KERNEL=portable
export ATTNVIZ_KERNEL
sums=tests/golden/dumps.sha256
while read -r sum file; do
	case $sum in '#'*|'') continue ;; esac
	got=$("$ATTNVIZ" --dump "$file" 2>"$err" | sha256sum | cut -c1-64)
	check "dump unchanged $file" [ "$got" = "$sum" ]
done <"$sums"
finish
