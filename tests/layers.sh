#!/bin/sh
# tests/layers.sh SRCDIR — the rule of src/README.md's "Layers" section,
# checked over every #include "…" of SRCDIR (default src). The section's
#   layers: A B C …     the folders from the bottom up: a file may include
#                       its own folder's headers and those of folders below
#   never: PREFIX -> FOLDER   files whose path starts with PREFIX may not
#                       include FOLDER's headers even where the order allows
# Also: every header of ours is named with its folder ("base/matrix.h"),
# every folder is in the list, and only main.c stands in SRCDIR itself.
# Prints one line per broken rule ("src/x/a.c: includes y/b.h: …") and exits 1
# when there is one.
src=${1:-src}
readme=$src/README.md
layers=$(sed -n 's/^ *layers: *//p' "$readme" | head -n 1)
[ -n "$layers" ] || { echo "$readme: no \"layers:\" line"; exit 1; }
nevers=$(sed -n 's/^ *never: *//p' "$readme")
bad=0
rank() { # FOLDER: its place in the list (1-based), or 0
	r=1
	for l in $layers; do [ "$l" = "$1" ] && { echo $r; return; }; r=$((r + 1)); done
	echo 0
}
for f in $(cd "$src" && find . -name '*.[ch]' | sed 's#^\./##' | sort); do
	case $f in
	*/*) dir=${f%%/*} ;;
	main.c) dir=main ;;
	*) echo "$src/$f: only main.c stands in $src itself"; bad=1; continue ;;
	esac
	if [ "$dir" = main ]; then own=999; else own=$(rank "$dir"); fi
	if [ "$own" -eq 0 ]; then echo "$src/$f: folder $dir is not in the layers line of $readme"; bad=1; continue; fi
	for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$src/$f"); do
		case $inc in
		*/*) to=${inc%%/*} ;;
		*) [ -n "$(find "$src" -name "$inc" | head -n 1)" ] || continue   # not ours: a generated file in the build directory
		   echo "$src/$f: includes $inc without its folder"; bad=1; continue ;;
		esac
		tr=$(rank "$to")
		if [ "$tr" -eq 0 ]; then echo "$src/$f: includes $inc from a folder not in the layers line"; bad=1
		elif [ "$tr" -gt "$own" ]; then echo "$src/$f: includes $inc: $dir may not depend on $to, a layer above it"; bad=1
		fi
		echo "$nevers" | while read -r from arrow target; do
			[ "$arrow" = "->" ] || continue
			case $f in "$from"*) [ "$to" = "$target" ] && echo "$src/$f: includes $inc: never $from -> $target" ;; esac
		done | grep . && bad=1
	done
done
exit $bad
