#!/bin/sh
# t_layers: the folders of src/ are layers and their #includes only run down
# (src/README.md, "Layers"), checked by tests/layers.sh; and the checker
# itself fails when an arrow runs up.
. "$(dirname "$0")/lib.sh"

sh tests/layers.sh src >"$tmp/out" 2>&1
expect "every #include of src/ runs down the layers of src/README.md" '[ $? -eq 0 ]'
[ -s "$tmp/out" ] && sed 's/^/# /' "$tmp/out" | head -n 20

# A copy with arrows that run up: each must be named.
cp -R src "$tmp/src"
printf '#include "tui/theme.h"\n' >>"$tmp/src/engine/attention.c"
printf '#include "cmd/cmd.h"\n' >>"$tmp/src/tui/lineedit.h"
printf '#include "matrix.h"\n' >>"$tmp/src/base/gemm.c"
printf 'int x;\n' >"$tmp/src/stray.c"
sh tests/layers.sh "$tmp/src" >"$tmp/bad" 2>&1
expect "the checker fails on an arrow that runs up" '[ $? -eq 1 ]'
expect "…and names it: engine may not depend on tui" 'has "$tmp/bad" "engine/attention.c: includes tui/theme.h: engine may not depend on tui"'
expect "…a rule of its own: the line editor never includes cmd" 'has "$tmp/bad" "tui/lineedit.h: includes cmd/cmd.h: never tui/lineedit -> cmd"'
expect "…a header named without its folder" 'has "$tmp/bad" "base/gemm.c: includes matrix.h without its folder"'
expect "…a file outside the folders" 'has "$tmp/bad" "stray.c: only main.c stands in"'

finish
