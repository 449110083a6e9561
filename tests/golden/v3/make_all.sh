#!/bin/sh
# tests/golden/v3/make_all.sh: regenerate every reference for issue 11's keys
# (RoPE, kv_heads, ALiBi, windows and lists of masks, decode, flash) with
# PyTorch (Debian's python3-torch), and check that every lesson in bad/ is
# refused at the place bad/expected.tsv names. CI never runs this; it compares
# `attnviz --dump` with the committed files.
#
#   NAME.json -> NAME.ref.json      make_reference_v3.py NAME.json
#   bad/NAME.json                   make_reference_v3.py --expect-error PATH bad/NAME.json
#
# Each run cross-checks its numbers (see make_reference_v3.py) and aborts on a
# disagreement; the checks that ran are printed, one line per reference.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-/usr/bin/python3}
script=$here/../make_reference_v3.py

for lesson in "$here"/*.json; do
	case $lesson in *.ref.json) continue ;; esac
	out=${lesson%.json}.ref.json
	"$py" "$script" "$lesson" >"$out.tmp" || { rm -f "$out.tmp"; echo "make_all.sh: failed: $lesson" >&2; exit 1; }
	mv "$out.tmp" "$out"
done

tab=$(printf '\t')
nbad=0
while IFS=$tab read -r name path message; do
	case $name in '#'* | '') continue ;; esac
	"$py" "$script" --expect-error "$path" "$here/bad/$name.json" ||
		{ echo "make_all.sh: bad/$name.json is not refused at $path" >&2; exit 1; }
	nbad=$((nbad + 1))
done <"$here/bad/expected.tsv"
for f in "$here"/bad/*.json; do
	grep -q "^$(basename "$f" .json)$tab" "$here/bad/expected.tsv" ||
		{ echo "make_all.sh: $f is not in bad/expected.tsv" >&2; exit 1; }
done
echo "make_all.sh: $nbad bad lessons refused where expected" >&2
