#!/bin/sh
# t_golden.sh: --dump against the PyTorch reference numbers in tests/golden.
# Each tests/golden/NAME.json has a NAME.ref.json (made by
# tests/golden/make_reference.py, committed); it must pass --check and give a
# --dump equal to the reference within jsoncmp's default tolerance
# (|a - e| <= 1e-12 + 1e-9 |e|); keys the reference lacks are ignored.
# Run from the repository root; $ATTNVIZ is the binary, $BUILD the build dir.
# Prints "ok - NAME" / "not ok - NAME" lines and ends with "N passed, N failed, N skipped"
# (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

JSONCMP=$BUILD/tests/jsoncmp
dump=$tmp/dump
diff=$tmp/diff

# golden NAME LESSON REF [JSONCMP OPTION...]: LESSON's --dump equals REF
golden() {
	g_name=$1 g_lesson=$2 g_ref=$3
	shift 3
	if [ ! -f "$g_ref" ]; then
		not_ok "$g_name" "no $g_ref: run /usr/bin/python3 tests/golden/make_reference.py (--lessons)"
	elif ! "$ATTNVIZ" --dump "$g_lesson" >"$dump" 2>"$err"; then
		not_ok "$g_name" "--dump failed"
	elif "$JSONCMP" "$@" --only-expected-keys "$g_ref" "$dump" >"$diff" 2>&1; then
		ok "$g_name"
	else
		not_ok "$g_name" "$(cat "$diff")"
	fi
}

for lesson in tests/golden/*.json; do
	case $lesson in *.ref.json) continue ;; esac
	name=$(basename "$lesson" .json)
	expect "golden check $name" '"$ATTNVIZ" --check "$lesson" >/dev/null 2>"$err"'
	golden "golden $name" "$lesson" "${lesson%.json}.ref.json"
done

# golden_dir VERSION [JSONCMP OPTION...]: every lesson of tests/golden/VERSION passes --check and dumps its NAME.ref.json
golden_dir() {
	g_dir=$1
	shift
	for lesson in tests/golden/$g_dir/*.json; do
		case $lesson in *.ref.json) continue ;; esac
		name=$g_dir/$(basename "$lesson" .json)
		expect "golden check $name" '"$ATTNVIZ" --check "$lesson" >/dev/null 2>"$err"'
		golden "golden $name" "$lesson" "${lesson%.json}.ref.json" "$@"
	done
}
# Version 2 (tests/golden/v2, made by make_reference_v2.py): the Transformer
# block, biases and layers, the backward pass ("loss", "grad") and 20 steps of
# training, against PyTorch's autograd; the encoder–decoder (encdec_*) with
# the encoder's gradients under grad.encoder.
golden_dir v2
# Version 2's modern attention (tests/golden/v3, made by make_reference_v3.py):
# RoPE, grouped-query attention, ALiBi, windows and lists of masks, decoding
# with a KV cache and FlashAttention's tiles; and every loader error of bad/
# at the JSON path and with the words of bad/expected.tsv.
golden_dir v3
tab=$(printf '\t')
# bad_lessons VERSION: every lesson of tests/golden/VERSION/bad is refused with the words of its expected.tsv
bad_lessons() {
	grep -v '^#' "tests/golden/$1/bad/expected.tsv" >"$tmp/bad.tsv"
	while IFS="$tab" read -r bad_name bad_path bad_msg; do
		bad=tests/golden/$1/bad/$bad_name.json
		if "$ATTNVIZ" --check "$bad" >/dev/null 2>"$err"; then
			not_ok "$1/bad/$bad_name is refused" "--check accepted it"
		elif grep -qF "$bad: $bad_msg" "$err"; then
			ok "$1/bad/$bad_name is refused at $bad_path"
		else
			not_ok "$1/bad/$bad_name is refused at $bad_path" "expected \"$bad: $bad_msg\", got: $(cat "$err")"
		fi
	done <"$tmp/bad.tsv"
}
bad_lessons v3
# Issue 21's keys (tests/golden/v4, made by make_reference_v4.py): QK-norm with
# RoPE and GQA (and its gradients), the LM head (logits, next with a
# temperature), learned positions, gelu_tanh; and the loader's errors of v4/bad.
golden_dir v4
bad_lessons v4
# Issue 23's soft-capping and attention sinks (tests/golden/softcap, made by
# make_reference_softcap.py): Gemma 2's caps on the scores and the logits, and
# the gradients through them; the loader's errors of softcap/bad.
golden_dir softcap
bad_lessons softcap
# ... and `save` writes their keys back: the saved lesson dumps the same bytes
# saved_dir DIR: every lesson of tests/golden/DIR, saved by the REPL, dumps the bytes it dumped
saved_dir() {
	for lesson in tests/golden/$1/*.json; do
		case $lesson in *.ref.json) continue ;; esac
		printf 'save %s\nquit\n' "$tmp/saved.json" | "$ATTNVIZ" --plain "$lesson" >/dev/null 2>"$err"
		"$ATTNVIZ" --dump "$lesson" >"$tmp/dump.a" 2>>"$err"
		expect "$1/$(basename "$lesson" .json) round-trips through save" \
			'"$ATTNVIZ" --dump "$tmp/saved.json" 2>>"$err" | cmp -s - "$tmp/dump.a"'
	done
}
saved_dir softcap
# Local and global layers (tests/golden/localglobal, made by
# make_reference_localglobal.py following transformers' masking_utils.py):
# each layer's own "mask", a sliding window here and full attention there; the
# loader's errors at layers[i].mask; and `save` writes each layer's mask back.
golden_dir localglobal
bad_lessons localglobal
saved_dir localglobal
# RoPE's variants (tests/golden/ropescale, made by make_reference_ropescale.py
# following transformers' modeling_rope_utils.py): partial RoPE, NoPE layers,
# linear, dynamic NTK, YaRN and llama3 scaling with GQA, causal masks and decode;
# and the loader's errors of ropescale/bad.
golden_dir ropescale
bad_lessons ropescale
# Issue 24 §3's linear attention (tests/golden/linear, made by make_reference_linear.py
# following fast-transformers): both forms, their max_gap 0 within 1e-12 in each
# reference, the loader's errors of linear/bad, and `save` writing the key back.
golden_dir linear
bad_lessons linear
saved_dir linear
# Gated DeltaNet as the layer's mixer (tests/golden/deltanet2, made by
# make_reference_deltanet2.py following modeling_qwen3_next.py): the conv1d,
# both forms of the recurrence, the gated RMSNorm, concat and W_o within 1e-12;
# the loader's errors of deltanet2/bad; and `save` writing the keys back.
golden_dir deltanet2 --rtol 0 --atol 1e-12
bad_lessons deltanet2
saved_dir deltanet2
# Qwen3-Next's value heads, r to each key head ("v_heads"; tests/golden/deltanet3, made by
# make_reference_deltanet3.py following Qwen3NextGatedDeltaNet.forward's repeat_interleave), its errors, save.
golden_dir deltanet3 --rtol 0 --atol 1e-12
bad_lessons deltanet3
saved_dir deltanet3
# Issue 24 §4's differential attention (tests/golden/diffattn, made by
# make_reference_diffattn.py following unilm's multihead_diffattn.py): every
# matrix within 1e-12 (absolute), the loader's errors of diffattn/bad, and
# `save` writing "diff_attn" back.
for lesson in tests/golden/diffattn/*.json; do
	case $lesson in *.ref.json) continue ;; esac
	golden "golden diffattn/$(basename "$lesson" .json) within 1e-12" "$lesson" "${lesson%.json}.ref.json" --rtol 0 --atol 1e-12
done
bad_lessons diffattn
saved_dir diffattn
# Issue 23 §4's sinks in FlashAttention's tiles (the sink's term after the last
# key block, as gpt-oss's kernel adds it) and the sinks' own gradient and
# training (tests/golden/sinksflash, made by make_reference_sinksflash.py).
golden_dir sinksflash
# Issue 23 §6's gated attention and §1's QK-norm over the whole projection (tests/golden/gated,
# made by make_reference_gated.py following modeling_qwen3_next.py and modeling_olmo2.py):
# every matrix within 1e-12, the loader's errors of gated/bad, and `save` writing the keys back.
golden_dir gated --rtol 0 --atol 1e-12
bad_lessons gated
saved_dir gated
# Multi-head latent attention in the block and in layers (tests/golden/mla2, made by
# make_reference_mla2.py following DeepseekV3DecoderLayer and DeepseekV3MLP): every matrix
# of every layer within 1e-12, the loader's errors at layers[i], and `save` writing each layer's "mla" back.
golden_dir mla2 --rtol 0 --atol 1e-12
bad_lessons mla2
saved_dir mla2
# DeepSeek Sparse Attention, MLA with DeepSeek-V3.2's lightning indexer (tests/golden/dsa, made by
# make_reference_dsa.py following DeepSeek-V3.2-Exp's inference/model.py, Indexer and MLA.forward):
# the indexer's q, k, weights, index scores, the kept set, the sparse and dense weights within 1e-12;
# the loader's errors of dsa/bad at their paths; and `save` writing "dsa" back.
golden_dir dsa --rtol 0 --atol 1e-12
bad_lessons dsa
saved_dir dsa
# Gemma's pieces of issue 23 (tests/golden/gemma, made by make_reference_gemma.py following
# modeling_gemma3.py and modeling_gemma2.py): the (1 + w) RMSNorm of the block and of QK-norm,
# sandwich norms, the embedding scaled by sqrt(d_model), query_pre_attn_scalar as "scale", decoding
# and the gradients through the (1 + w) norms, every matrix within 1e-12; the loader's errors of
# gemma/bad; and `save` writing the keys back.
golden_dir gemma --rtol 0 --atol 1e-12
bad_lessons gemma
saved_dir gemma
# Issue 23 §4's StreamingLLM cache (tests/golden/streaming, made by make_reference_streaming.py
# following mit-han-lab/streaming-llm's StartRecentKVCache): every decoding step within 1e-12, the
# plain window beside it, the loader's errors of streaming/bad, and `save` writing the cache back.
golden_dir streaming --rtol 0 --atol 1e-12
bad_lessons streaming
saved_dir streaming
# Gated attention decoded token by token (tests/golden/gated_decode, make_reference_gated_decode.py
# laying out make_reference_gated.py's rows): each decoded row, and a block's layer row, within 1e-12.
golden_dir gated_decode --rtol 0 --atol 1e-12
# ... and its bias (tests/golden/gatebias, make_reference_gatebias.py: q_proj twice as wide with a bias,
# chunked as Qwen3NextAttention does): within 1e-12, the loader's errors, `save` writing "b_gate" back.
golden_dir gatebias --rtol 0 --atol 1e-12
bad_lessons gatebias
saved_dir gatebias
# Issue 23 §1's last QK-norm form, Llama 4's weightless L2 norm after RoPE (tests/golden/l2qknorm,
# made by make_reference_l2qknorm.py following modeling_llama4.py): Q_l2, K_l2 and every matrix after
# them within 1e-12 (a NoPE layer without it, decoding, the gradients), its loader errors, and `save`.
golden_dir l2qknorm --rtol 0 --atol 1e-12
bad_lessons l2qknorm
saved_dir l2qknorm
# A layer's own RoPE base and scaling (tests/golden/layerrope, made by make_reference_layerrope.py following
# Gemma 3's rope_parameters per layer type): the global layer scaled and the local one not, or each its own
# scaling, decoded; the loader's errors at layers[i].rope; and `save` writes each layer's RoPE back.
golden_dir layerrope --rtol 0 --atol 1e-12
bad_lessons layerrope
saved_dir layerrope
# StreamingLLM's cache with RoPE (tests/golden/streamrope, made by make_reference_streamrope.py following
# mit-han-lab/streaming-llm's pos_shift/modify_llama.py): positions within the cache, every decoded row and
# the plain window's within 1e-12; its loader error; `save` writes the lesson back.
golden_dir streamrope --rtol 0 --atol 1e-12
bad_lessons streamrope
saved_dir streamrope
# The backward pass through gated attention and the mixtures of experts (tests/golden/moeback, made by
# make_reference_moeback.py with torch.autograd): every gradient within 1e-12, and 5 steps of training
# (NAME.train5.ref.json, the learning rate in the script's TRAIN) whose losses move with W_gate's and the router's updates.
golden_dir moeback --rtol 0 --atol 1e-12
bad_lessons moeback
for t in "gate_backward 0.05" "gate_block_backward 0.002" "mixtral_backward 0.002" "deepseek_backward 0.002" \
         "gptoss_backward 0.001"; do
	set -- $t
	if "$ATTNVIZ" --dump --train 5 --lr "$2" "tests/golden/moeback/$1.json" >"$dump" 2>"$err" &&
	   "$JSONCMP" --rtol 0 --atol 1e-12 --only-expected-keys "tests/golden/moeback/$1.train5.ref.json" "$dump" >"$diff" 2>&1; then
		ok "golden moeback/$1 trained 5 steps at lr $2"
	else
		not_ok "golden moeback/$1 trained 5 steps at lr $2" "$(cat "$err" "$diff")"
	fi
done
# the training references: the command line each was made with (tests/golden/v2/README.md,
# tests/golden/sinksflash/README.md)
for t in "v2/learn_shift 0.5" "v2/block_post_relu 0.1" "v2/block_two_layers 0.02" "sinksflash/sinks_backward 0.05"; do
	set -- $t
	if "$ATTNVIZ" --dump --train 20 --lr "$2" "tests/golden/$1.json" >"$dump" 2>"$err" &&
	   "$JSONCMP" --only-expected-keys "tests/golden/$1.train20.ref.json" "$dump" >"$diff" 2>&1; then
		ok "golden $1 trained 20 steps at lr $2"
	else
		not_ok "golden $1 trained 20 steps at lr $2" "$(cat "$err" "$diff")"
	fi
done

# Every shipped lesson: --check --strict (both languages everywhere), and its
# --dump (with the "compare" variant) against tests/golden/lessons/NAME.ref.json,
# or, for a lesson whose reference would be over 1 MB, against the summary
# NAME.summary.json (shapes, mean/std/min/max per matrix and sampled cells),
# all made by `make_reference.py --lessons`; the lessons whose variants it
# does not compute by their own scripts: gptoss.json by make_reference_gptoss.py,
# qknorm.json by make_reference_qknorm.py (make_reference_v4.py's Qwen3 attention,
# its compare "qk_norm": false read as none; it also checks the lesson's claims),
# the capstone modern.json by `make_reference_modern.py --lesson` (gpt-oss's
# layer: GQA, YaRN, a sliding and a full layer, sinks, its mixture, decoded).
for lesson in lessons/*.json; do
	name=$(basename "$lesson" .json)
	expect "lesson check --strict $name" '"$ATTNVIZ" --check --strict "$lesson" >/dev/null 2>"$err"'
	ref=tests/golden/lessons/$name
	if [ ! -f "$ref.ref.json" ] && [ -f "$ref.summary.json" ]; then
		golden "lesson golden $name (summary)" "$lesson" "$ref.summary.json" --rtol 1e-9 --summary
	else
		golden "lesson golden $name" "$lesson" "$ref.ref.json" --rtol 1e-9
	fi
done
finish
