#!/bin/sh
# tests/bench.sh BIN — `make bench`: speed and memory figures for attnviz.
# A benchmark, not a test: it prints figures and never fails on speed.
#   (a) whole-process wall time of `BIN --dump lessons/selfattn.json`, median of 20 runs
#   (b) start-up to the first full frame of the TUI: `BIN` on a pseudo-terminal (script(1))
#       answered with q at once: start, first frame, quit; median of $RUNS (target: under 30 ms)
#   (c) `BIN --bench` on a generated lesson: n = 1024, d_model = 512, h = 8, causal
#   (d) the same computation in PyTorch (float64, one thread) when /usr/bin/python3 has torch
#   (e) peak resident memory of each
# Target: faster than PyTorch on one core on lesson (c).
#
# PyTorch's time depends mostly on the BLAS under it. Debian's python3-torch
# uses the system libblas.so.3, the slow netlib reference unless OpenBLAS or
# BLIS is installed; pip wheels bring MKL. The BLAS in use is printed. To set
# an optimised BLAS beside it without changing the system, point
# BENCH_TORCH_LIBPATH at a directory holding its libblas.so.3, e.g. from
#   apt-get download libopenblas0-pthread && dpkg -x libopenblas0-pthread_*.deb ob
#   BENCH_TORCH_LIBPATH=$PWD/ob/usr/lib/x86_64-linux-gnu/openblas-pthread make bench

BIN=${1:-build/attnviz}
RUNS=${BENCH_RUNS:-20}
REPEAT=${BENCH_REPEAT:-3}
PY=${BENCH_PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

if [ ! -x "$BIN" ]; then
	echo "bench.sh: $BIN is not an executable (build it first: make)" >&2
	exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnviz-bench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Nanoseconds since some point: GNU date, else perl, else python.
if [ "$(date +%N)" != "N" ] && [ -n "$(date +%N)" ]; then
	now_ns() { date +%s%N; }
elif command -v perl >/dev/null 2>&1; then
	now_ns() { perl -MTime::HiRes=time -e 'printf "%.0f\n", time * 1e9'; }
else
	now_ns() { python3 -c 'import time; print(time.time_ns())'; }
fi

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { sed -n "s/.*$1=\\([0-9.]*\\).*/\\1/p"; }

# ------------------------------------------------------------ (a) --dump, whole process
lesson=$root/lessons/selfattn.json
: >"$tmp/dump_ms"
i=0
while [ "$i" -lt "$RUNS" ]; do
	t0=$(now_ns)
	"$BIN" --dump "$lesson" >/dev/null 2>&1
	t1=$(now_ns)
	echo "$t0 $t1" | awk '{ printf "%.3f\n", ($2 - $1) / 1e6 }' >>"$tmp/dump_ms"
	i=$((i + 1))
done
dump_ms=$(median <"$tmp/dump_ms")
dump_min=$(sort -n "$tmp/dump_ms" | head -n 1)
dump_rss=n/a
if [ -x /usr/bin/time ]; then
	/usr/bin/time -f '%M' -o "$tmp/dump_rss" "$BIN" --dump "$lesson" >/dev/null 2>&1 && dump_rss=$(tail -n 1 "$tmp/dump_rss")
fi

# ------------------------------------------------------------ (b) start-up to the first frame
# The TUI draws its first frame before it reads a key, so a run answered by
# an immediate q measures start-up + first frame + leaving (an upper bound).
frame_ms=n/a
if command -v script >/dev/null 2>&1; then
	: >"$tmp/frame_ms"
	i=0
	while [ "$i" -lt "$RUNS" ]; do
		# timed inside the pseudo-terminal: script(1) itself adds a delay of its own
		printf q | TERM=xterm-256color script -qec \
			"sh -c 't0=\$(date +%s%N); \"$BIN\"; t1=\$(date +%s%N); echo \$t0 \$t1 >\"$tmp/frame_t\"'" \
			/dev/null >/dev/null 2>&1
		awk '{ printf "%.3f\n", ($2 - $1) / 1e6 }' "$tmp/frame_t" >>"$tmp/frame_ms" 2>/dev/null
		i=$((i + 1))
	done
	frame_ms=$(median <"$tmp/frame_ms")
fi

# ------------------------------------------------------------ (c) the big generated lesson
big=$tmp/big_causal.json
cat >"$big" <<'EOF'
{
  "attnviz": 1,
  "title": "bench: n = 1024, d_model = 512, h = 8, causal",
  "X":   {"random": "normal", "rows": 1024, "cols": 512, "seed": 1},
  "heads": 8,
  "W_q": {"random": "normal", "rows": 512, "cols": 512, "seed": 2, "std": 0.044},
  "W_k": {"random": "normal", "rows": 512, "cols": 512, "seed": 3, "std": 0.044},
  "W_v": {"random": "normal", "rows": 512, "cols": 512, "seed": 4, "std": 0.044},
  "W_o": {"random": "normal", "rows": 512, "cols": 512, "seed": 5, "std": 0.044},
  "mask": "causal"
}
EOF
if "$BIN" --bench "$big" --repeat "$REPEAT" >"$tmp/bench" 2>"$tmp/bench.err"; then
	av_line=$(tail -n 1 "$tmp/bench")
	av_ms=$(echo "$av_line" | field compute_ms)
	av_min=$(echo "$av_line" | field min_ms)
	av_rss=$(echo "$av_line" | field peak_rss_kb)
else
	av_line="failed: $(head -n 1 "$tmp/bench.err")"
	av_ms=n/a av_min=n/a av_rss=n/a
fi

# ------------------------------------------------------------ (d) PyTorch, one thread, float64
pt_ms=n/a pt_min=n/a pt_rss=n/a pt_note="not run: $PY has no torch"
if [ -x "$PY" ] && "$PY" -c 'import torch' >/dev/null 2>&1; then
	if OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 "$PY" "$here/bench_torch.py" "$big" --repeat "$REPEAT" >"$tmp/torch" 2>"$tmp/torch.err"; then
		pt_line=$(tail -n 1 "$tmp/torch")
		pt_ms=$(echo "$pt_line" | field compute_ms)
		pt_min=$(echo "$pt_line" | field min_ms)
		pt_rss=$(echo "$pt_line" | field peak_rss_kb)
		pt_note="torch $(echo "$pt_line" | sed -n 's/.*torch=\([^ ]*\).*/\1/p'), 1 thread, BLAS: $(echo "$pt_line" | sed -n 's/.*blas=\([^ ]*\).*/\1/p'); same shapes filled with torch.randn (time does not depend on the values)"
	else
		pt_note="failed: $(tail -n 1 "$tmp/torch.err")"
	fi
fi

# the same with an optimised BLAS, when given one (one thread too)
pt2_ms=n/a pt2_blas=
if [ -n "${BENCH_TORCH_LIBPATH:-}" ] && [ "$pt_ms" != n/a ]; then
	if OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 BLIS_NUM_THREADS=1 \
		LD_LIBRARY_PATH="$BENCH_TORCH_LIBPATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		"$PY" "$here/bench_torch.py" "$big" --repeat "$REPEAT" >"$tmp/torch2" 2>"$tmp/torch2.err"; then
		pt2_line=$(tail -n 1 "$tmp/torch2")
		pt2_ms=$(echo "$pt2_line" | field compute_ms)
		pt2_blas=$(echo "$pt2_line" | sed -n 's/.*blas=\([^ ]*\).*/\1/p')
	fi
fi
pt_blas=$(echo "${pt_line:-}" | sed -n 's/.*blas=\([^ ]*\).*/\1/p')

# ------------------------------------------------------------ the table
cpu=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
echo "attnviz benchmark: $BIN${cpu:+ on $cpu}"
echo
printf '%-58s %12s %12s\n' "measure" "attnviz" "PyTorch"
printf '%-58s %12s %12s\n' "----------------------------------------------------------" "------------" "------------"
printf '%-58s %9s ms %12s\n' "(a) --dump selfattn.json, whole process, median of $RUNS" "$dump_ms" "-"
printf '%-58s %9s ms %12s\n' "    fastest of $RUNS" "$dump_min" "-"
printf '%-58s %9s ms %12s\n' "(b) TUI start-up to first frame and quit, median (< 30 ms)" "$frame_ms" "-"
printf '%-58s %9s ms %9s ms\n' "(c,d) compute n=1024 d=512 h=8 causal, median of $REPEAT" "$av_ms" "$pt_ms"
printf '%-58s %9s ms %9s ms\n' "      fastest of $REPEAT" "$av_min" "$pt_min"
if [ "$pt2_ms" != n/a ]; then
	printf '%-58s %12s %9s ms\n' "      PyTorch with $pt2_blas (BENCH_TORCH_LIBPATH), median" "" "$pt2_ms"
fi
printf '%-58s %9s kB %12s\n' "(e) peak RSS, --dump selfattn.json" "$dump_rss" "-"
printf '%-58s %9s kB %9s kB\n' "(e) peak RSS, n=1024 lesson (whole process)" "$av_rss" "$pt_rss"
echo
echo "attnviz --bench: $av_line"
echo "PyTorch: $pt_note"
target() { # ATTNVIZ_MS TORCH_MS LABEL
	echo "$1 $2" | awk -v label="$3" '{
		printf "target: faster than PyTorch (%s) on one core: %s (attnviz %.2fx the speed of PyTorch)\n", label, ($1 < $2 ? "met" : "NOT met"), $2 / $1
	}'
}
if [ "$av_ms" != n/a ] && [ "$pt_ms" != n/a ]; then
	target "$av_ms" "$pt_ms" "${pt_blas:-its} BLAS"
	[ "$pt2_ms" != n/a ] && target "$av_ms" "$pt2_ms" "$pt2_blas BLAS"
	if [ "$pt_blas" = reference ] && [ "$pt2_ms" = n/a ]; then
		echo "note: this PyTorch runs on the netlib reference BLAS, which is slow; with OpenBLAS or MKL"
		echo "      it is several times faster (see BENCH_TORCH_LIBPATH at the top of tests/bench.sh)."
	fi
else
	echo "target: faster than PyTorch on one core: not measured"
fi
echo "(PyTorch's RSS includes the torch library itself.)"
exit 0
