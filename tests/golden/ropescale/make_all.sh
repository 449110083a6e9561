#!/bin/sh
# Remake the lessons of tests/golden/ropescale and their PyTorch references
# (run from the repository root with Debian's python3-torch).
set -e
dir=tests/golden/ropescale
OPENBLAS_CORETYPE= /usr/bin/python3 tests/golden/make_reference_ropescale.py --lessons "$dir"
for f in "$dir"/*.json; do
	case $f in *.ref.json) continue ;; esac
	OPENBLAS_CORETYPE= /usr/bin/python3 tests/golden/make_reference_ropescale.py "$f" >"${f%.json}.ref.json"
done
