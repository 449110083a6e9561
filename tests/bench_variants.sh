# tests/bench_variants.sh: `make bench` (k), sourced by tests/bench.sh (it uses
# bench.sh's BIN, tmp, field, have_torch and torch_run). The variants of issues
# 23 and 24 at n = 1024 (d_model 512, 8 heads of 64, causal: (i)'s forward row
# with one change each), generated here, each beside PyTorch doing the same
# (tests/bench_torch_variants.py; float64, one thread, CPU time after one
# warm-up run, the minimal graph, huge pages, as issue 28 measures), and the
# goal (issue 28's): attnviz at most 0.5x PyTorch's time; beside it each row's
# floor, as (i) has it (bench.sh: speed_row): the kernels' multiply-adds,
# so Gated DeltaNet's is its softmax half's (its recurrence and chunks are loops
# of their own, which the count does not see).
#   QK-norm (Qwen3's, per head, before RoPE), RoPE scaled by YaRN (factor 4 over
#   256 positions), local and global layers (a window of 128, then a causal
#   layer), gpt-oss's sinks, Gemma 2's soft cap (50), Qwen3-Next's gated
#   attention, DeepSeek-V3's mixture of experts (a pre-norm block: 8 experts of
#   256 in 4 groups, 2 kept, top 2, a shared expert of 256), multi-head latent
#   attention (q_lora_rank 192, kv_lora_rank 128, d_nope 32, d_rope 32, d_v
#   64: the naive form and the absorbed one, which the lesson computes both),
#   linear attention (elu + 1, causal, the n × n way and the state way, beside
#   softmax), Gated DeltaNet (token by token and in chunks of 64, beside
#   softmax), differential attention (4 pairs of maps).
# BENCH_ONLY=variants make bench runs (c) and this section alone.

# vrnd ROWS COLS SEED [STD]: a generator of normal numbers
vrnd() { printf '{"random": "normal", "rows": %s, "cols": %s, "seed": %s%s}' "$1" "$2" "$3" "${4:+, \"std\": $4}"; }
# vlist N VALUE: [VALUE, VALUE, …] of N numbers
vlist() { awk -v n="$1" -v v="$2" 'BEGIN { printf "["; for (i = 0; i < n; i++) printf "%s%s", (i ? ", " : ""), v; printf "]" }'; }
# vlesson FILE [KEY-VALUE ...]: n = 1024, d_model = 512, 8 heads, causal, plus the keys given
# (a key given twice: the parser keeps the first, so the variant's keys come first)
vlesson() {
	f=$1
	shift
	{
		printf '{"attnviz": 2'
		for kv in "$@"; do printf ',\n%s' "$kv"; done
		printf ',\n"X": %s, "heads": 8, "mask": "causal",\n' "$(vrnd 1024 512 1)"
		case $f in # MLA makes its own queries, keys and values
		*mla.json) ;;
		*) printf '"W_q": %s, "W_k": %s, "W_v": %s,\n' "$(vrnd 512 512 2 0.044)" "$(vrnd 512 512 3 0.044)" "$(vrnd 512 512 4 0.044)" ;;
		esac
		printf '"W_o": %s}\n' "$(vrnd 512 512 5 0.044)"
	} >"$f"
}
# an expert of d_ff 256 (seeds from $1)
vexpert() { printf '{"W_1": %s, "W_3": %s, "W_2": %s}' "$(vrnd 512 256 "$1" 0.044)" "$(vrnd 512 256 $(($1 + 1)) 0.044)" "$(vrnd 256 512 $(($1 + 2)) 0.06)"; }

REPEAT_K=${BENCH_REPEAT_VARIANTS:-3}

bench_variants() {
	vd=$tmp/variants
	mkdir -p "$vd"
	vlesson "$vd/qknorm.json" "\"rope\": true, \"qk_norm\": {\"q\": $(vlist 64 1.1), \"k\": $(vlist 64 0.9), \"eps\": 1e-6}"
	vlesson "$vd/yarn.json" '"rope": {"base": 10000, "scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": 256}}'
	vlesson "$vd/localglobal.json" '"layers": [{"mask": {"window": 128}}, {}]'
	vlesson "$vd/sinks.json" "\"sinks\": [0.5, -1.2, 0.3, 2.0, -0.4, 1.1, 0.0, -2.5]"
	vlesson "$vd/softcap.json" '"attn_logit_softcapping": 50'
	vlesson "$vd/gated.json" "\"W_gate\": $(vrnd 512 512 6 0.044)"
	experts=$(vexpert 10)
	for e in 1 2 3 4 5 6 7; do experts="$experts, $(vexpert $((10 + 3 * e)))"; done
	moe_block="\"block\": {\"norm\": \"pre\", \"norm_kind\": \"rmsnorm\", \"ffn\": {\"kind\": \"moe\",
  \"router\": $(vrnd 512 8 40 0.044), \"top_k\": 2, \"scoring_func\": \"sigmoid\", \"n_group\": 4, \"topk_group\": 2,
  \"routed_scaling_factor\": 2.5, \"experts\": [$experts],
  \"shared_expert\": {\"W_1\": $(vrnd 512 256 41 0.044), \"W_3\": $(vrnd 512 256 42 0.044), \"W_2\": $(vrnd 256 512 43 0.06)}}}"
	vlesson "$vd/moe.json" "$moe_block"
	# the same with a loss: its backward pass too (every weight's gradient and X's), as PyTorch's autograd
	vlesson "$vd/moeback.json" "$moe_block" "\"backward\": {\"target\": $(vrnd 1024 512 9)}"
	vlesson "$vd/mla.json" "\"mla\": {\"q_lora_rank\": 192, \"kv_lora_rank\": 128, \"qk_nope_head_dim\": 32,
  \"qk_rope_head_dim\": 32, \"v_head_dim\": 64, \"W_qa\": $(vrnd 512 192 50 0.044), \"W_qb\": $(vrnd 192 512 51 0.07),
  \"W_kva\": $(vrnd 512 160 52 0.044), \"W_kvb\": $(vrnd 128 768 53 0.09)}"
	vlesson "$vd/linear.json" '"linear_attention": {"feature_map": "elu+1", "causal": true}'
	vlesson "$vd/deltanet.json" "\"gated_deltanet\": {\"W_a\": $(vrnd 512 8 60 0.044), \"W_b\": $(vrnd 512 8 61 0.044),
  \"A_log\": $(vlist 8 0.0), \"dt_bias\": $(vlist 8 1.0), \"chunk_size\": 64}"
	vlesson "$vd/diff.json" '"diff_attn": true'
	cat >"$vd/rows" <<'EOF'
qknorm|QK-norm (per head, before RoPE)
yarn|RoPE scaled by YaRN (factor 4)
localglobal|local (window 128) + global layer
sinks|attention sinks (gpt-oss)
softcap|soft-capped scores (50)
gated|gated attention (Qwen3-Next)
moe|pre-norm block, DeepSeek-V3 MoE (8 + 1)
moeback|the same block with a loss (backward pass)
mla|MLA, naive and absorbed
linear|linear attention beside softmax
deltanet|Gated DeltaNet + softmax (floor: softmax, chunk dots)
diff|differential attention (4 pairs)
EOF
	echo "(k) the 2025-26 variants (issues 23, 24) at n=1024 d=512 h=8 causal: CPU time, median of $REPEAT_K;"
	echo "    PyTorch float64, one thread, one warm-up run, the minimal graph (tests/bench_torch_variants.py)"
	speed_head variant
	while IFS='|' read -r name label; do
		"$BIN" --bench "$vd/$name.json" --repeat "$REPEAT_K" >"$vd/$name.av" 2>"$vd/$name.err"
		av=$(field cpu_ms <"$vd/$name.av")
		pt=
		if [ "$have_torch" = 1 ]; then
			torch_run --variants "$vd/$name.json" --repeat "$REPEAT_K" >"$vd/$name.pt" 2>"$vd/$name.pterr"
			pt=$(field compute_ms <"$vd/$name.pt")
		fi
		[ -n "$av" ] || label="$label (attnviz: $(head -n 1 "$vd/$name.err" | cut -c 1-60))"
		speed_row "$label" "${av:-n/a}" "${pt:-n/a}" "$(field madds <"$vd/$name.av")" | tee -a "$vd/rows.out"
		if [ "$name" = mla ]; then
			# the absorbed form is attnviz's stage absorb; PyTorch's two forms timed apart
			# attnviz's CPU time split in the proportion of its stages' times: absorb against the rest
			ab=$(sed -n 's/^stage=absorb ms=\([0-9.]*\)$/\1/p' "$vd/mla.av")
			tot=$(sed -n 's/^stage=.* ms=\([0-9.]*\)$/\1/p' "$vd/mla.av" | awk '{ s += $1 } END { print s + 0 }')
			split=$(echo "${av:-0} $tot ${ab:-0}" | awk '{ if ($2 > 0 && $1 > 0) printf "%.1f %.1f", $1 * ($2 - $3) / $2, $1 * $3 / $2; else print "n/a n/a" }')
			speed_row "  of which the naive form" "${split% *}" "$(field naive_ms 2>/dev/null <"$vd/mla.pt")" n/a
			speed_row "  of which the absorbed form" "${split#* }" "$(field absorbed_ms 2>/dev/null <"$vd/mla.pt")" n/a
		fi
	done <"$vd/rows"
	speed_foot "$vd/rows.out"
	echo "  MLA's two forms: attnviz's CPU time split as its stage times (--bench) split, PyTorch's each form"
	echo "  timed alone (the absorbed form from the naive one's latents and weights)."
	echo
}
