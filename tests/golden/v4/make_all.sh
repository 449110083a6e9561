#!/bin/sh
# tests/golden/v4/make_all.sh: write issue 21's lessons (QK-norm, the LM head,
# learned positions, gelu_tanh) and their references with PyTorch (Debian's
# python3-torch). CI never runs this; it compares `attnviz --dump` with the
# committed files (tests/t_golden.sh). bad/expected.tsv is written by hand.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-/usr/bin/python3}
script=$here/../make_reference_v4.py

"$py" "$script" --lessons "$here"
for lesson in "$here"/*.json; do
	case $lesson in *.ref.json) continue ;; esac
	out=${lesson%.json}.ref.json
	"$py" "$script" "$lesson" >"$out.tmp" || { rm -f "$out.tmp"; echo "make_all.sh: failed: $lesson" >&2; exit 1; }
	mv "$out.tmp" "$out"
done
