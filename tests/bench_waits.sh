# tests/bench_waits.sh: `make bench` (i), sourced by tests/bench.sh (it uses
# bench.sh's BIN, tmp, field, have_torch, torch_run, pt_core and install_note).
# Issue 28's workloads, where a learner waits: forward, forward + backward, one
# and six blocks, 10 training steps, KV-cache decoding and flash tiles, each at
# n = 128, 256, 512 and 1024 (d_model = n up to 512), and 16 LLaMA-shaped
# layers at n = 32 and 128, each beside
# PyTorch doing the same (tests/bench_torch.py), in CPU time (attnviz's cpu_ms,
# PyTorch's process time after one warm-up run), median of $BENCH_REPEAT_28
# (default 3); goal: attnviz at most 0.5x PyTorch's time. Beside it, the row's
# floor: the multiply-adds of attnviz's products in it (--bench's madds, counted
# by the kernels: mat_madds) at the best dgemm speed of (c) (bench.sh's
# dgemm_gflops), and attnviz's time over it (issue 28: within 3x). Where half
# PyTorch's time is under that floor, no kernel on this machine meets the 0.5x
# goal with attnviz's multiply-adds: the row says so.
# BENCH_ONLY=waits make bench runs this section alone; BENCH_ROWS=REGEX only
# the rows whose lesson matches it (i_fwd1024, i_fb128 … i_llama128).

# rnd ROWS COLS SEED [STD]: a generator of normal numbers
rnd() { printf '{"random": "normal", "rows": %s, "cols": %s, "seed": %s%s}' "$1" "$2" "$3" "${4:+, \"std\": $4}"; }
# lesson28 FILE N D_MODEL HEADS [KEY-VALUE ...]: (d)'s causal attention, plus the keys given (a "mask" among
# them in place of the causal one: a key given twice is read the first time by attnviz, the last by Python)
lesson28() {
	f=$1 n=$2 d=$3 h=$4
	shift 4
	mask='"mask": "causal", '
	for kv in "$@"; do case $kv in '"mask"'*) mask= ;; esac; done
	{
		printf '{"attnviz": 2, "X": %s, "heads": %s, %s\n' "$(rnd "$n" "$d" 1)" "$h" "$mask"
		printf '"W_q": %s, "W_k": %s,\n' "$(rnd "$d" "$d" 2 0.044)" "$(rnd "$d" "$d" 3 0.044)"
		printf '"W_v": %s, "W_o": %s' "$(rnd "$d" "$d" 4 0.044)" "$(rnd "$d" "$d" 5 0.044)"
		for kv in "$@"; do printf ',\n%s' "$kv"; done
		printf '}\n'
	} >"$f"
}
# block28 NORM D: a block with a ReLU FFN of 4·D
block28() { printf '"block": {"norm": "%s", "ffn": {"W_1": %s, "W_2": %s}}' "$1" "$(rnd "$2" $(($2 * 4)) 6 0.044)" "$(rnd $(($2 * 4)) "$2" 7 0.022)"; }
layers28() { printf '"layers": [{}'; i=1; while [ "$i" -lt "$1" ]; do printf ', {}'; i=$((i + 1)); done; printf ']'; }
# llama28 FILE N: 16 LLaMA-shaped layers (SmolLM2-135M's: d = 576, 9 query and 3 key/value heads, RoPE, RMSNorm, SwiGLU 1536)
llama28() {
	{
		printf '{"attnviz": 2, "X": %s, "heads": 9, "kv_heads": 3, "rope": true, "mask": "causal",\n' "$(rnd "$2" 576 1)"
		printf '"W_q": %s, "W_k": %s, "W_v": %s, "W_o": %s,\n' "$(rnd 576 576 2 0.04)" "$(rnd 576 192 3 0.04)" \
			"$(rnd 576 192 4 0.04)" "$(rnd 576 576 5 0.04)"
		printf '"block": {"norm": "pre", "norm_kind": "rmsnorm", "ffn": {"activation": "swiglu", "W_1": %s, "W_3": %s, "W_2": %s}},\n' \
			"$(rnd 576 1536 6 0.04)" "$(rnd 576 1536 8 0.04)" "$(rnd 1536 576 7 0.025)"
		printf '%s}\n' "$(layers28 16)"
	} >"$1"
}
back28() { printf '"backward": {"target": %s}' "$(rnd "$1" "$2" 9)"; }
bench_waits() {
	lesson28 "$tmp/i_fwd1024n.json" 1024 512 8 '"mask": "none"'
	# every workload at n = 128, 256, 512 and 1024 (issue 28's goals), d_model = n up to 512
	for n in 128 256 512 1024; do
		d=$n
		[ "$d" -gt 512 ] && d=512
		lesson28 "$tmp/i_fwd$n.json" "$n" "$d" 8
		lesson28 "$tmp/i_fb$n.json" "$n" "$d" 8 "$(back28 "$n" "$d")"
		lesson28 "$tmp/i_blk$n.json" "$n" "$d" 8 "$(block28 post "$d")"
		lesson28 "$tmp/i_six$n.json" "$n" "$d" 8 "$(block28 post "$d")" "$(layers28 6)"
		lesson28 "$tmp/i_train$n.json" "$n" "$d" 8 "$(block28 pre "$d")" "$(back28 "$n" "$d")"
		lesson28 "$tmp/i_dec$n.json" "$n" "$d" 8 '"decode": true'
		lesson28 "$tmp/i_flash$n.json" "$n" "$d" 8 '"flash": {"block_q": 64, "block_k": 64}'
	done
	llama28 "$tmp/i_llama32.json" 32
	llama28 "$tmp/i_llama128.json" 128
	# the rows: lesson|label|extra arguments (the same for attnviz and bench_torch.py); training's learning
	# rate smaller where its loss, a sum over n·d numbers, is larger (at n = 512, 1e-4 and 1e-5 diverge)
	cat >"$tmp/rows28" <<-'EOF'
	i_fwd1024|forward n=1024 d=512 h=8 causal|
	i_fwd1024n|forward n=1024 d=512 h=8 no mask|
	i_fwd128|forward n=128 d=128 h=8 causal|
	i_fwd256|forward n=256 d=256 h=8 causal|
	i_fwd512|forward n=512 d=512 h=8 causal|
	i_fb128|forward + backward n=128 d=128 h=8|
	i_fb256|forward + backward n=256 d=256 h=8|
	i_fb512|forward + backward n=512 d=512 h=8|
	i_fb1024|forward + backward n=1024 d=512 h=8|
	i_blk128|one post-norm block n=128 d=128|
	i_blk256|one post-norm block n=256 d=256|
	i_blk512|one post-norm block n=512 d=512|
	i_blk1024|one post-norm block n=1024 d=512|
	i_six128|six post-norm blocks n=128 d=128|
	i_six256|six post-norm blocks n=256 d=256|
	i_six512|six post-norm blocks n=512 d=512|
	i_six1024|six post-norm blocks n=1024 d=512|
	i_train128|10 training steps, pre-norm block n=128 d=128|--train 10 --lr 0.0001
	i_train256|10 training steps, pre-norm block n=256 d=256|--train 10 --lr 0.0001
	i_train512|10 training steps, pre-norm block n=512 d=512|--train 10 --lr 0.000002
	i_train1024|10 training steps, pre-norm block n=1024 d=512|--train 10 --lr 0.000001
	i_dec128|KV-cache decode n=128 d=128 h=8|
	i_dec256|KV-cache decode n=256 d=256 h=8|
	i_dec512|KV-cache decode n=512 d=512 h=8|
	i_dec1024|KV-cache decode n=1024 d=512 h=8|
	i_flash128|flash tiles 64x64 n=128 d=128 h=8|
	i_flash256|flash tiles 64x64 n=256 d=256 h=8|
	i_flash512|flash tiles 64x64 n=512 d=512 h=8|
	i_flash1024|flash tiles 64x64 n=1024 d=512 h=8|
	i_llama32|16 LLaMA-shaped layers n=32|
	i_llama128|16 LLaMA-shaped layers n=128|
	EOF
	echo "(i) where a learner waits (issue 28): CPU time, median of $REPEAT_28; PyTorch float64, one thread,"
	echo "    one warm-up run first, the minimal graph (autograd for the backward pass and training)"
	speed_head workload
	while IFS='|' read -r name label extra; do
		# BENCH_ROWS=REGEX: only the rows whose lesson name matches (e.g. 'fb|train')
		if [ -n "${BENCH_ROWS:-}" ] && ! echo "$name" | grep -Eq "$BENCH_ROWS"; then continue; fi
		# shellcheck disable=SC2086 # extra is words
		"$BIN" --bench "$tmp/$name.json" --repeat "$REPEAT_28" $extra >"$tmp/$name.av28" 2>"$tmp/$name.err28"
		av=$(field cpu_ms <"$tmp/$name.av28")
		# a warning (a key given twice, say) would mean the two sides computed different lessons
		if [ -s "$tmp/$name.err28" ]; then echo "  $name: attnviz: $(head -n 1 "$tmp/$name.err28")"; fi
		madds=$(field madds <"$tmp/$name.av28")
		pt=
		if [ "$have_torch" = 1 ]; then
			# shellcheck disable=SC2086
			pt=$(torch_run "$tmp/$name.json" --repeat "$REPEAT_28" $extra 2>"$tmp/$name.pterr28" | field compute_ms)
		fi
		speed_row "$label" "${av:-n/a}" "${pt:-n/a}" "${madds:-n/a}" | tee -a "$tmp/waits28"
	done <"$tmp/rows28"
	speed_foot "$tmp/waits28"
	if [ -n "${BENCH_OPENBLAS_CORETYPE:-}" ]; then
		echo "  PyTorch: OPENBLAS_L2_SIZE unset and OPENBLAS_CORETYPE=$BENCH_OPENBLAS_CORETYPE (BENCH_OPENBLAS_CORETYPE) for its command only"
		echo "  (kernels${pt_core:+: $pt_core}), GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (huge pages, as attnviz's large matrices have);"
	else
		echo "  PyTorch: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset for its command only (OpenBLAS picks its own"
		echo "  kernels${pt_core:+: $pt_core}), GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (huge pages, as attnviz's large matrices have);"
	fi
	echo "  the decode and flash rows do the full forward pass too, as attnviz's lessons compute both."
	case $pt_core in
	Prescott | Core2 | Nehalem | Katmai | Northwood | Atom | Penryn | Dunnington)
		echo "  note: OpenBLAS took this processor for $pt_core (its CPUID names no model it knows), so PyTorch"
		echo "  runs on old kernels and these ratios flatter attnviz; BENCH_OPENBLAS_CORETYPE=SkylakeX (or the"
		echo "  processor's family) makes bench.sh choose for it."
		;;
	esac
	if [ -n "$install_note" ]; then echo "  $install_note"; fi
	echo
	bench_edits28
}

# The issue's edits at n = 1024 (goal: under 100 ms), on the forward lesson, with a loss, six blocks and decoding:
# `--bench --edits`, wall time, median of REPEAT_28 each; with a loss, the gradients an edit leaves until they are
# read or the learner reads (grads_ms=) apart
bench_edits28() {
	echo "(i) edits at n=1024 (set of one cell, recomputed in place; --bench --edits, median of $REPEAT_28, wall time)"
	printf '  %-34s %9s %9s %9s %9s %9s  %s\n' "lesson" "W_o" "W_v" "W_q" "W_k" "input" "goal: under 100 ms"
	for name in i_fwd1024 i_fb1024 i_six1024 i_dec1024; do
		if [ -n "${BENCH_ROWS:-}" ] && ! echo "$name" | grep -Eq "$BENCH_ROWS"; then continue; fi
		"$BIN" --bench "$tmp/$name.json" --edits --repeat "$REPEAT_28" >"$tmp/$name.ed28" 2>&1
		# each edit's time, then its floor (its products' multiply-adds at the best dgemm of (c)); NOT met* where
		# every edit over 100 ms has a floor over 100 ms: no kernel meets them with those multiply-adds
		sed -n "s/^edit=\([^ ]*\) ms=\([0-9.]*\) madds=\([0-9]*\).*/\2 \3/p" "$tmp/$name.ed28" | tr '\n' ' ' |
			awk -v l="$name" -v g="${dgemm_gflops:-0}" '{
				k = NF / 2; bad = 0; over = 0; m = 0
				printf "  %-34s", l
				for (i = 1; i <= k; i++) {
					t = $(2 * i - 1); f = g > 0 ? 2 * $(2 * i) / g / 1e6 : -1
					printf " %6.1f ms", t
					if (t > m) m = t
					if (t >= 100) { bad++; if (f >= 100) over++ }
				}
				printf "  %s\n", (k > 0 && m < 100 ? "met" : bad == over ? "NOT met*" : "NOT met")
				if (g > 0) {
					printf "  %-34s", "  floor"
					for (i = 1; i <= k; i++) printf " %6.1f ms", 2 * $(2 * i) / g / 1e6
					printf "\n"
				} }'
		if grep -q '^edit=.* grads_ms=' "$tmp/$name.ed28"; then
			sed -n 's/^edit=.* grads_ms=\([0-9.]*\).*/\1/p' "$tmp/$name.ed28" | tr '\n' ' ' |
				awk '{ printf "  %-34s", "  then its gradients (session_idle)"; for (i = 1; i <= NF; i++) printf " %6.1f ms", $i; printf "\n" }'
		fi
	done
	echo "  with a loss, an edit shows its forward pass and loss at once and its gradients are made once the result is"
	echo "  out (the view's screen, the plain REPL's prompt), or at once when something shows them; a stack or"
	echo "  decoding reruns what the edit reaches. floor: the edit's multiply-adds (--bench --edits's madds) at"
	echo "  ${dgemm_gflops:-n/a} GFLOP/s; NOT met*: every edit over 100 ms has a floor over it too: no kernel could meet them."
	echo
}
