#!/bin/sh
# tests/golden/v2/make_all.sh: regenerate every version-2 reference in this
# folder with PyTorch (Debian's python3-torch). CI never runs this; it compares
# `attnviz --dump` with the committed files.
#
#   NAME.json -> NAME.ref.json                  make_reference_v2.py NAME.json
#   training references, with their command lines (attnviz --dump --train STEPS --lr LR NAME.json):
#   learn_shift.json      -> learn_shift.train20.ref.json       --train 20 --lr 0.5
#   block_post_relu.json  -> block_post_relu.train20.ref.json   --train 20 --lr 0.1
#   block_two_layers.json -> block_two_layers.train20.ref.json  --train 20 --lr 0.02
#
# Each run cross-checks its numbers (see make_reference_v2.py) and aborts on a
# disagreement; the checks that ran are printed, one line per reference.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-/usr/bin/python3}
script=$here/../make_reference_v2.py

make() {   # make OUT.ref.json ARGS...
	out=$1
	shift
	"$py" "$script" "$@" >"$out.tmp" || { rm -f "$out.tmp"; echo "make_all.sh: failed: $*" >&2; exit 1; }
	mv "$out.tmp" "$out"
}

for lesson in "$here"/*.json; do
	case $lesson in *.ref.json) continue ;; esac
	make "${lesson%.json}.ref.json" "$lesson"
done
make "$here/learn_shift.train20.ref.json" --train 20 --lr 0.5 "$here/learn_shift.json"
make "$here/block_post_relu.train20.ref.json" --train 20 --lr 0.1 "$here/block_post_relu.json"
make "$here/block_two_layers.train20.ref.json" --train 20 --lr 0.02 "$here/block_two_layers.json"
