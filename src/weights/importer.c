/*
 * importer.c: a model folder and a prompt into a Lesson (importer.h).
 *
 * Where each matrix comes from (attnviz multiplies X·W, W d_in × d_out):
 *   gpt2   X = wte[ids] + wpe[0 … n−1] (POS_LEARNED); per layer h.i.:
 *          ln_1 → ln1 (LayerNorm, γ and β); attn.c_attn (Conv1D [in, 3·D],
 *          already d_in × d_out) split into W_q | W_k | W_v, its bias into
 *          b_q | b_k | b_v; attn.c_proj → W_o, b_o; ln_2 → ln2; mlp.c_fc →
 *          W_1, b_1; mlp.c_proj → W_2, b_2 (gelu_new); ln_f → the final
 *          norm; the head tied to wte.
 *   llama, qwen2, qwen3   X = embed_tokens[ids]; RoPE (half) with
 *          rope_theta; per layer model.layers.i.: input_layernorm → ln1
 *          (RMSNorm); q/k/v/o_proj (nn.Linear [out, in], transposed) →
 *          W_q, W_k, W_v, W_o (qwen2: q/k/v biases); qwen3: q_norm, k_norm;
 *          post_attention_layernorm → ln2; mlp.gate_proj → W_1 (through
 *          SiLU), up_proj → W_3, down_proj → W_2 (SwiGLU); model.norm → the
 *          final norm; the head lm_head, or embed_tokens when tied.
 *   olmo2  as llama, but the norms after each sublayer (NORM_AFTER: no
 *          input_layernorm; post_attention_layernorm → ln1 on the
 *          attention's output, post_feedforward_layernorm → ln2 on the
 *          FFN's) and q_norm, k_norm over the whole projection (h·head_dim
 *          and g·head_dim: QK_NORM_PROJ).
 *   deepseek_v3  as llama's block, its attention multi-head latent
 *          attention (LayerParams.mla: deepseek_layer); its sparse layers a
 *          mixture with DeepSeek's sigmoid router and shared experts
 *          (deepseek_moe: mlp.gate, its e_score_correction_bias,
 *          mlp.experts.E.*, mlp.shared_experts.*).
 *   deepseek_v32 the same, and DeepSeek Sparse Attention's indexer (LayerParams.dsa: indexer_layer).
 *   gpt_oss  as llama with q/k/v/o biases, each layer's sinks
 *          (self_attn.sinks → sinks), its "sliding_attention" layers'
 *          window, and its mixture (layer_gptoss: the router with its bias,
 *          gate_up_proj's interleaved columns split into W_1 and W_3).
 *   smollm3  as llama; a NoPE layer (hfconfig.h's nope: no_rope_layers or
 *          every no_rope_layer_interval-th) has rope_off, as a lesson
 *          layer's "rope": false.
 *   qwen3_next  the norms (1 + w) (Qwen3NextRMSNorm, QK-norm's and the
 *          final one's too); a "linear_attention" layer's mixer Gated
 *          DeltaNet (qwen3next_layer: in_proj_qkvz and in_proj_ba split as
 *          fix_query_key_value_ordering splits them), a "full_attention"
 *          layer's q_proj split into W_q and W_gate; a sparse layer's
 *          mixture with its shared expert and shared_expert_gate.
 */
#include "weights/importer.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/i18n.h"
#include "base/jsonread.h"
#include "base/strbuf.h"
#include "base/text.h"
#include "weights/hfconfig.h"
#include "weights/tokenizer.h"

/* The pages of the mapping a converted tensor was read from go back to the file (read-only: nothing is lost). */
static void give_back(const StTensor *t)
{
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	const uintptr_t b = (uintptr_t)t->data, e = b + (t->end - t->begin);
	const uintptr_t lo = b & ~(page - 1);

	if (page > 0 && e > lo)
		(void)madvise((void *)lo, e - lo, MADV_DONTNEED);
}

/* The tensor NAME (w->prefix before it) as rows × cols doubles, its pages given back. 0, or -1 with *err. */
static int load(const HfWeights *w, const char *name, int transpose, int rows, int cols, Mat *out, char **err)
{
	char full[160];
	const StTensor *t;

	if (hfweights_mat(w, name, transpose, rows, cols, out, err) != 0)
		return -1;
	snprintf(full, sizeof full, "%s%s", w->prefix, name);
	if ((t = hfweights_find(w, full, NULL)) != NULL)
		give_back(t);
	return 0;
}

/* The weights, closed when the last reference to a view kept in them goes (matview_of's release). */
static void weights_release(void *w)
{
	hfweights_close(w);
}

/*
 * The open weights of the model import_model is reading, as a view of none
 * of their numbers whose last reference closes them (weights_release):
 * every view kept in the file (the head's, the layers' weights) holds one
 * (kept_view), so the file stays mapped while any of them is read. Empty
 * outside import_model (a view is then not made: the tensor is read as doubles).
 */
static MatView weights_anchor;

static void kept_release(void *ref)
{
	matview_free(ref);
	free(ref);
}

/* view: rows × cols numbers of dtype d at data (in a tensor's), holding weights_anchor. 0, or -1 out of memory (view empty). */
static int kept_view(const unsigned char *data, MatDtype d, int rows, int cols, MatView *view)
{
	MatView *ref = malloc(sizeof *ref);

	*view = (MatView){ 0 };
	if (ref == NULL)
		return -1;
	matview_share(ref, &weights_anchor);
	if (matview_of(view, d, rows, cols, data, kept_release, ref) != 0) {
		kept_release(ref);
		return -1;
	}
	return 0;
}

/* The dtype a view keeps t in (F64, F32, F16, BF16), or -1. */
static int kept_dtype(const StTensor *t)
{
	static const StDtype kept[] = { [MAT_F64] = ST_F64, [MAT_F32] = ST_F32, [MAT_F16] = ST_F16, [MAT_BF16] = ST_BF16 };

	for (int d = MAT_F64; d <= MAT_BF16; d++)
		if (t->dtype == kept[d])
			return d;
	return -1;
}

/*
 * The head's tensor NAME (rows × cols, not transposed) kept in its own dtype
 * (F64, F32, F16, BF16) where the file maps it: a view that holds w open
 * (w's owner then leaves closing it to the view: weights_release) and reads
 * a row when it is needed, 57 MB of file for a BF16 vocabulary of 49152 ×
 * 576 where doubles take 226 MB of memory. Any other tensor (another dtype
 * or shape) goes through load, and its messages, into out. 0, or -1 with *err.
 */
static int load_head(HfWeights *w, const char *name, int rows, int cols, MatView *view, Mat *out, char **err)
{
	char full[160];
	const StTensor *t;

	*err = NULL;
	snprintf(full, sizeof full, "%s%s", w->prefix, name);
	if (!matview_empty(&weights_anchor) && (t = hfweights_find(w, full, NULL)) != NULL && t->ndim == 2 &&
	    t->shape[0] == rows && t->shape[1] == cols && kept_dtype(t) >= 0) {
		if (kept_view(t->data, (MatDtype)kept_dtype(t), rows, cols, view) != 0) {
			*err = strdup(_("out of memory"));
			return -1;
		}
		give_back(t);
		return 0;
	}
	return load(w, name, 0, rows, cols, out, err);
}

/* Layer L's tensor: "h.L.NAME" (gpt2) or "model.layers.L.NAME". */
static int load_layer(const HfConfig *c, const HfWeights *w, int layer, const char *name, int transpose, int rows,
                      int cols, Mat *out, char **err)
{
	char full[128];

	snprintf(full, sizeof full, c->arch == HF_GPT2 ? "h.%d.%s" : "model.layers.%d.%s", layer, name);
	return load(w, full, transpose, rows, cols, out, err);
}

/* Layer i's tensor NAME's full name: "h.i.NAME" (gpt2) or "model.layers.i.NAME", w->prefix before it. */
static void layer_name(const HfConfig *c, const HfWeights *w, int i, const char *name, char full[HF_NAME_SIZE])
{
	snprintf(full, HF_NAME_SIZE, c->arch == HF_GPT2 ? "%sh.%d.%s" : "%smodel.layers.%d.%s", w->prefix, i, name);
}

/*
 * The tensor FULL when a view can keep it in the file (model.h:
 * LayerParams.file): import_model is reading, its dtype is one a view
 * reads, its last dimension cols and its numbers rows × cols (the first
 * dimensions, e.g. gpt-oss's experts, as rows). Else NULL: it is read as
 * doubles, with the messages of that path.
 */
static const StTensor *keepable(const HfWeights *w, const char *full, long long rows, long long cols)
{
	const StTensor *t;

	if (matview_empty(&weights_anchor) || (t = hfweights_find(w, full, NULL)) == NULL || t->ndim < 2 ||
	    kept_dtype(t) < 0 || t->shape[t->ndim - 1] != cols || t->count != rows * cols)
		return NULL;
	return t;
}

/*
 * Rows [r0, r0 + count) of t (t's last dimension, vcols, a row) as one more
 * piece of p's slot k (model.h: FilePiece: transpose, columns first, first +
 * step, … cols of them, at row0, col0). 0, or -1 with *err out of memory.
 */
static int keep_piece(const StTensor *t, long long r0, int count, int vcols, LayerParams *p, int k,
                      const FilePiece *where, char **err)
{
	const MatDtype d = (MatDtype)kept_dtype(t);
	const unsigned char *data = t->data + (size_t)r0 * (size_t)vcols * (size_t)mat_dtype_size(d);
	MatView v;

	if (kept_view(data, d, count, vcols, &v) != 0 || layer_params_keep(p, k, &v, where->transpose, where->first,
	                                                                    where->step, where->cols, where->row0, where->col0) != 0) {
		matview_free(&v);
		*err = strdup(_("out of memory"));
		return -1;
	}
	matview_free(&v); /* the slot holds its own reference */
	return 0;
}

/*
 * Layer i's nn.Linear weight NAME ([cols, rows] as stored) as p's rows × cols
 * matrix of file slot k (model.h: LayerParams.file), kept in the file where
 * its dtype and shape allow: dormant, made doubles when the layer is
 * computed (issue 21, "Memory": 849 MB of SmolLM2-135M's layers as doubles,
 * 28 MB at a time). Else read as doubles (load_layer, with its messages).
 * 0, or -1 with *err.
 */
static int load_kept(const HfConfig *c, const HfWeights *w, int i, const char *name, int rows, int cols, LayerParams *p,
                     int k, char **err)
{
	static const FilePiece whole_t = { .transpose = 1 };
	char full[HF_NAME_SIZE];
	const StTensor *t;

	*err = NULL;
	layer_name(c, w, i, name, full);
	if ((t = keepable(w, full, cols, rows)) != NULL && t->ndim == 2) {
		if (keep_piece(t, 0, cols, rows, p, k, &whole_t, err) != 0)
			return -1;
		*layer_params_file_mat(p, k) = (Mat){ rows, cols, NULL };
		return 0;
	}
	return load_layer(c, w, i, name, 1, rows, cols, layer_params_file_mat(p, k), err);
}

/* Layer i's SwiGLU MLP (mlp.gate_proj, up_proj, down_proj: W_1, W_3, W_2 of d_model D, d_ff F), each load_kept. */
static int load_mlp_kept(const HfConfig *c, const HfWeights *w, int i, int D, int F, LayerParams *p, char **err)
{
	return load_kept(c, w, i, "mlp.gate_proj.weight", D, F, p, LP_FILE_W_1, err) ||
	               load_kept(c, w, i, "mlp.up_proj.weight", D, F, p, LP_FILE_W_3, err) ||
	               load_kept(c, w, i, "mlp.down_proj.weight", F, D, p, LP_FILE_W_2, err)
	           ? -1
	           : 0;
}

/*
 * Layer i's Conv1D weight NAME (GPT-2: [in, out] as stored, the matrix as it
 * lies; in = rows, out = width) kept as slot k: its columns [from, from +
 * cols) (c_attn's third for W_q, W_k or W_v; the whole for the others).
 * 1 kept, 0 not keepable (nothing done), -1 with *err.
 */
static int keep_conv(const HfConfig *c, const HfWeights *w, int i, const char *name, int rows, int width, int from,
                     int cols, LayerParams *p, int k, char **err)
{
	const FilePiece part = { .first = from, .step = 1, .cols = cols };
	char full[HF_NAME_SIZE];
	const StTensor *t;

	*err = NULL;
	layer_name(c, w, i, name, full);
	if ((t = keepable(w, full, rows, width)) == NULL || t->ndim != 2)
		return 0;
	if (keep_piece(t, 0, rows, width, p, k, &part, err) != 0)
		return -1;
	*layer_params_file_mat(p, k) = (Mat){ rows, cols, NULL };
	return 1;
}

/* keep_conv of a whole Conv1D weight, else read as doubles (load_layer). 0, or -1 with *err. */
static int load_conv(const HfConfig *c, const HfWeights *w, int i, const char *name, int rows, int cols, LayerParams *p,
                     int k, char **err)
{
	const int r = keep_conv(c, w, i, name, rows, cols, 0, cols, p, k, err);

	return r < 0 ? -1 : r > 0 ? 0 : load_layer(c, w, i, name, 0, rows, cols, layer_params_file_mat(p, k), err);
}

/* Columns [from, from + cols) of m as a new matrix. 0, or -1 out of memory. */
static int columns(const Mat *m, int from, int cols, Mat *out)
{
	if (mat_alloc_whole(out, m->rows, cols) != 0)
		return -1;
	for (int i = 0; i < m->rows; i++)
		memcpy(&MAT_AT(*out, i, 0), &MAT_AT(*m, i, from), (size_t)cols * sizeof(double));
	return 0;
}

/*
 * Rows rows[0 … n−1] of the tensor NAME (vocab or positions × D) as n × D
 * doubles: only those rows are read (the embedding's others stay on disk).
 */
static int rows_of(const HfWeights *w, const char *name, const long long *rows, int n, int D, Mat *out, char **err)
{
	char full[160];
	const StTensor *t;

	*err = NULL;
	snprintf(full, sizeof full, "%s%s", w->prefix, name);
	if ((t = hfweights_find(w, full, NULL)) == NULL || t->ndim != 2 || t->shape[1] != D) {
		*err = str_printf(_("%s: no tensor %s of %d columns"), w->name, jr_quoted(full).s, D);
		return -1;
	}
	if (t->dtype >= ST_DTYPE_NUMERIC) {
		*err = str_printf(_("%s: tensor %s is %s: attnviz reads F64, F32, F16, BF16 and integer tensors"), w->name,
		                  jr_quoted(full).s, st_dtype_name(t->dtype));
		return -1;
	}
	if (mat_alloc_whole(out, n, D) != 0) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (rows[i] < 0 || rows[i] >= t->shape[0]) {
			*err = str_printf(_("%s: tensor %s has %lld rows, no row %lld"), w->name, jr_quoted(full).s, t->shape[0],
			                  rows[i]);
			mat_free(out);
			return -1;
		}
		for (int j = 0; j < D; j++)
			MAT_AT(*out, i, j) = st_value(t, rows[i] * D + j);
	}
	return 0;
}

/* ---- the layers: the one place they are built ---- */

/*
 * Sparse layer i's mixture of experts (Mixtral's block_sparse_moe, Qwen3-MoE's
 * mlp): the router's [E, D] as W_r (D × E), each expert's gate, up and down
 * projections transposed into its columns (rows for W_2) of the stack
 * (model.h: MoeParams). 0, or -1 with *err.
 */
static int layer_moe(const HfConfig *c, const HfWeights *w, int i, LayerParams *p, char **err)
{
	const int D = c->hidden_size, F = c->moe_intermediate_size, E = c->num_experts;
	Block *b = &p->block;
	MoeParams *m = &b->moe;
	char name[HF_NAME_SIZE], full[HF_NAME_SIZE];
	int keep = 1;

	m->experts = E;
	m->top_k = c->experts_per_tok;
	m->norm_topk_prob = c->norm_topk_prob;
	b->d_ff = F;
	if (load(w, hfconfig_moe_tensor(c, i, -1, 0, name), 1, D, E, &m->W_r, err) != 0)
		return -1;
	/* kept in the file when every expert's tensor can be: expert e's gate and up ([F, D]) transposed into columns
	 * e·F … of W_1 and W_3, its down ([D, F]) into rows e·F … of W_2 */
	for (int e = 0; e < E && keep; e++)
		for (int k = 0; k < 3 && keep; k++) {
			const StTensor *t;
			snprintf(full, sizeof full, "%s%s", w->prefix, hfconfig_moe_tensor(c, i, e, k, name));
			keep = (t = keepable(w, full, k < 2 ? F : D, k < 2 ? D : F)) != NULL && t->ndim == 2;
		}
	for (int e = 0; e < E && keep; e++)
		for (int k = 0; k < 3; k++) {
			const FilePiece at = { .transpose = 1, .row0 = k < 2 ? 0 : e * F, .col0 = k < 2 ? e * F : 0 };
			snprintf(full, sizeof full, "%s%s", w->prefix, hfconfig_moe_tensor(c, i, e, k, name));
			if (keep_piece(keepable(w, full, k < 2 ? F : D, k < 2 ? D : F), 0, k < 2 ? F : D, k < 2 ? D : F, p,
			               LP_FILE_MOE_W_1 + k, &at, err) != 0)
				return -1;
		}
	if (keep) {
		m->W_1 = m->W_3 = (Mat){ D, E * F, NULL };
		m->W_2 = (Mat){ E * F, D, NULL };
		return 0;
	}
	if (mat_alloc_whole(&m->W_1, D, E * F) != 0 || mat_alloc_whole(&m->W_3, D, E * F) != 0 ||
	    mat_alloc_whole(&m->W_2, E * F, D) != 0) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	for (int e = 0; e < E; e++)
		for (int k = 0; k < 3; k++) {
			Mat one = { 0 };
			if (load(w, hfconfig_moe_tensor(c, i, e, k, name), 1, k < 2 ? D : F, k < 2 ? F : D, &one, err) != 0)
				return -1;
			for (int r = 0; r < one.rows; r++)
				for (int j = 0; j < one.cols; j++) {
					if (k < 2)
						MAT_AT(k == 0 ? m->W_1 : m->W_3, r, e * F + j) = MAT_AT(one, r, j);
					else
						MAT_AT(m->W_2, e * F + r, j) = MAT_AT(one, r, j);
				}
			mat_free(&one);
		}
	return 0;
}

/*
 * DeepseekV3MoE of layer i (deepseek_v3, a sparse layer): the router and the
 * routed experts as layer_moe reads Qwen3-MoE's (the same names), the gate's
 * e_score_correction_bias [E] as e_bias, the shared experts
 * (mlp.shared_experts.gate_proj, up_proj, down_proj: one SwiGLU of
 * moe_intermediate_size · n_shared_experts) as S_1, S_3, S_2 without a gate,
 * and the sigmoid router's settings (moe_router_deepseek_v3). 0, or -1 with *err.
 */
static int deepseek_moe(const HfConfig *c, const HfWeights *w, int i, LayerParams *p, char **err)
{
	Block *b = &p->block;
	const int D = c->hidden_size, E = c->num_experts, S = c->shared_ff;
	const MoeRouterV3 r = { c->n_group, c->topk_group, c->norm_topk_prob, c->routed_scaling };
	MoeParams *m = &b->moe;

	if (layer_moe(c, w, i, p, err) != 0 ||
	    load_layer(c, w, i, "mlp.gate.e_score_correction_bias", 0, 1, E, &m->e_bias, err) != 0)
		return -1;
	if (S > 0 && (load_layer(c, w, i, "mlp.shared_experts.gate_proj.weight", 1, D, S, &m->S_1, err) ||
	              load_layer(c, w, i, "mlp.shared_experts.up_proj.weight", 1, D, S, &m->S_3, err) ||
	              load_layer(c, w, i, "mlp.shared_experts.down_proj.weight", 1, S, D, &m->S_2, err)))
		return -1;
	m->shared_ff = S;
	if (moe_router_deepseek_v3(m, &r) != 0) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	return 0;
}

/*
 * DeepseekV3DecoderLayer i (deepseek_v3): its multi-head latent attention
 * (q_a_proj → W_qa, q_a_layernorm → q_a_norm, q_b_proj → W_qb, or q_proj →
 * W_q; kv_a_proj_with_mqa → W_kva, kv_a_layernorm → kv_a_norm, kv_b_proj →
 * W_kvb; o_proj → W_o; both norms DeepseekV3RMSNorm's default eps 1e-6, q_pe
 * and k_pe turned by rope_theta) and its dense MLP or its mixture of experts
 * (deepseek_moe). 0, or -1 with *err.
 */
static int deepseek_layer(const HfConfig *c, const HfWeights *w, int i, LayerParams *p, char **err)
{
	const int D = c->hidden_size, F = c->intermediate_size, H = c->num_heads, r = c->q_lora_rank, kc = c->kv_lora_rank;
	const int dr = c->qk_rope_head_dim, dq = c->qk_nope_head_dim + dr, dv = c->v_head_dim;
	MlaParams *m = &p->mla;
	Block *b = &p->block;

	p->d_k = dq;
	p->d_v = dv;
	m->on = 1;
	m->q_lora_rank = r;
	m->kv_lora_rank = kc;
	m->d_nope = c->qk_nope_head_dim;
	m->d_rope = dr;
	m->rope_theta = c->rope_theta;
	m->eps = 1e-6;
	b->activation = ACT_SWIGLU;
	return load_layer(c, w, i, "input_layernorm.weight", 0, 1, D, &b->ln1_gamma, err) ||
	               load_layer(c, w, i, "post_attention_layernorm.weight", 0, 1, D, &b->ln2_gamma, err) ||
	               (r > 0 ? load_layer(c, w, i, "self_attn.q_a_proj.weight", 1, D, r, &m->W_qa, err) ||
	                                load_layer(c, w, i, "self_attn.q_a_layernorm.weight", 0, 1, r, &m->q_a_norm, err) ||
	                                load_layer(c, w, i, "self_attn.q_b_proj.weight", 1, r, H * dq, &m->W_qb, err)
	                      : load_layer(c, w, i, "self_attn.q_proj.weight", 1, D, H * dq, &p->W_q, err)) ||
	               load_layer(c, w, i, "self_attn.kv_a_proj_with_mqa.weight", 1, D, kc + dr, &m->W_kva, err) ||
	               load_layer(c, w, i, "self_attn.kv_a_layernorm.weight", 0, 1, kc, &m->kv_a_norm, err) ||
	               load_layer(c, w, i, "self_attn.kv_b_proj.weight", 1, kc, H * (dq - dr + dv), &m->W_kvb, err) ||
	               load_kept(c, w, i, "self_attn.o_proj.weight", H * dv, D, p, LP_FILE_W_O, err) ||
	               (c->num_experts > 0 && c->sparse[i]
	                        ? deepseek_moe(c, w, i, p, err)
	                        : load_mlp_kept(c, w, i, D, F, p, err))
	           ? -1
	           : 0;
}

/*
 * DeepSeek-V3.2's lightning indexer of layer i (deepseek_v32; DeepSeek-V3.2-Exp's
 * Indexer): indexer.wq_b → W_iq, wk → W_ik, k_norm's weight and bias → ik_norm,
 * ik_norm_bias (LayerNorm, eps 1e-6), weights_proj → W_iw. 0, or -1 with *err.
 */
static int indexer_layer(const HfConfig *c, const HfWeights *w, int i, LayerParams *p, char **err)
{
	const int D = c->hidden_size, IH = c->index_n_heads, Id = c->index_head_dim;
	DsaParams *d = &p->dsa;

	d->on = 1;
	d->heads = IH;
	d->dim = Id;
	d->topk = c->index_topk;
	d->eps = 1e-6;
	return load_layer(c, w, i, "self_attn.indexer.wq_b.weight", 1, c->q_lora_rank, IH * Id, &d->W_iq, err) ||
	               load_layer(c, w, i, "self_attn.indexer.wk.weight", 1, D, Id, &d->W_ik, err) ||
	               load_layer(c, w, i, "self_attn.indexer.k_norm.weight", 0, 1, Id, &d->k_norm, err) ||
	               load_layer(c, w, i, "self_attn.indexer.k_norm.bias", 0, 1, Id, &d->k_norm_b, err) ||
	               load_layer(c, w, i, "self_attn.indexer.weights_proj.weight", 1, D, IH, &d->W_iw, err)
	           ? -1
	           : 0;
}

/* ---- gpt-oss (issue 23): its sinks and its mixture ---- */

/* Layer i's tensor NAME of `count` numbers (any shape the checks passed), as doubles into out[]. 0, or -1 with *err. */
static int numbers_of(const HfWeights *w, int i, const char *name, long long count, double *out, char **err)
{
	char full[HF_NAME_SIZE];
	const StTensor *t;

	snprintf(full, sizeof full, "%smodel.layers.%d.%s", w->prefix, i, name);
	if ((t = hfweights_find(w, full, NULL)) == NULL || t->dtype >= ST_DTYPE_NUMERIC) {
		*err = t == NULL ? str_printf(_("%s: no tensor %s"), w->name, jr_quoted(full).s)
		                 : str_printf(_("%s: tensor %s is %s: attnviz reads F64, F32, F16, BF16 and integer tensors"),
		                              w->name, jr_quoted(full).s, st_dtype_name(t->dtype));
		return -1;
	}
	for (long long k = 0; k < count; k++)
		out[k] = st_value(t, k);
	give_back(t);
	return 0;
}

/*
 * Layer i's GptOssMLP into b->moe: the router's weight [E, D] as W_r (D × E)
 * and its bias; gate_up_proj [E, D, 2F] split, its even columns (the gate)
 * into W_1's and its odd ones (up) into W_3's columns e·F … (e + 1)·F − 1,
 * gate_up_proj_bias [E, 2F] likewise into b_1 and b_3; down_proj [E, F, D]
 * into W_2's rows, down_proj_bias [E, D] as b_2. 0, or -1 with *err.
 */
static int layer_gptoss(const HfConfig *c, const HfWeights *w, int i, LayerParams *p, char **err)
{
	const int D = c->hidden_size, F = c->intermediate_size, E = c->num_experts;
	Block *b = &p->block;
	MoeParams *m = &b->moe;
	char full[HF_NAME_SIZE];
	const StTensor *gut, *dt;
	double *gu = NULL, *gub = malloc((size_t)E * 2 * F * sizeof *gub);
	int r = -1, keep;

	m->experts = E;
	m->top_k = c->experts_per_tok;
	m->gptoss = 1;
	m->swiglu_alpha = c->swiglu_alpha;
	m->swiglu_limit = c->swiglu_limit;
	b->d_ff = F;
	*err = NULL;
	/* kept in the file: gate_up_proj's expert e (D rows of 2F) its even columns into W_1's e·F …, its odd ones
	 * into W_3's; down_proj [E, F, D] W_2 as it lies */
	layer_name(c, w, i, "mlp.experts.gate_up_proj", full);
	gut = keepable(w, full, (long long)E * D, 2LL * F);
	layer_name(c, w, i, "mlp.experts.down_proj", full);
	dt = keepable(w, full, (long long)E * F, D);
	keep = gut != NULL && gut->ndim == 3 && dt != NULL && dt->ndim == 3;
	if (gub == NULL || mat_alloc_whole(&m->b_1, 1, E * F) != 0 || mat_alloc_whole(&m->b_3, 1, E * F) != 0 ||
	    (!keep && ((gu = malloc((size_t)E * D * 2 * F * sizeof *gu)) == NULL || mat_alloc_whole(&m->W_1, D, E * F) != 0 ||
	               mat_alloc_whole(&m->W_3, D, E * F) != 0 || mat_alloc_whole(&m->W_2, E * F, D) != 0)))
		goto out;
	if (load_layer(c, w, i, "mlp.router.weight", 1, D, E, &m->W_r, err) ||
	    load_layer(c, w, i, "mlp.router.bias", 0, 1, E, &m->b_r, err) ||
	    load_layer(c, w, i, "mlp.experts.down_proj_bias", 0, E, D, &m->b_2, err) ||
	    (!keep && numbers_of(w, i, "mlp.experts.gate_up_proj", (long long)E * D * 2 * F, gu, err)) ||
	    numbers_of(w, i, "mlp.experts.gate_up_proj_bias", (long long)E * 2 * F, gub, err))
		goto out;
	for (int e = 0; e < E; e++)
		for (int f = 0; f < F; f++) {
			for (int d = 0; !keep && d < D; d++) {
				MAT_AT(m->W_1, d, e * F + f) = gu[((size_t)e * D + d) * 2 * F + 2 * f];
				MAT_AT(m->W_3, d, e * F + f) = gu[((size_t)e * D + d) * 2 * F + 2 * f + 1];
			}
			MAT_AT(m->b_1, 0, e * F + f) = gub[(size_t)e * 2 * F + 2 * f];
			MAT_AT(m->b_3, 0, e * F + f) = gub[(size_t)e * 2 * F + 2 * f + 1];
		}
	if (keep) {
		static const FilePiece down = { .step = 1 };
		FilePiece at = { .step = 2 };
		at.cols = F;
		for (int e = 0; e < E; e++)
			for (int k = 0; k < 2; k++) {
				at.first = k, at.col0 = e * F;
				if (keep_piece(gut, (long long)e * D, D, 2 * F, p, k == 0 ? LP_FILE_MOE_W_1 : LP_FILE_MOE_W_3, &at, err) != 0)
					goto out;
			}
		at = down;
		at.cols = D;
		if (keep_piece(dt, 0, E * F, D, p, LP_FILE_MOE_W_2, &at, err) != 0)
			goto out;
		m->W_1 = m->W_3 = (Mat){ D, E * F, NULL };
		m->W_2 = (Mat){ E * F, D, NULL };
		r = 0;
		goto out;
	}
	/* down_proj [E, F, D] is W_2's E·F rows of D as they are */
	r = numbers_of(w, i, "mlp.experts.down_proj", (long long)E * F * D, m->W_2.a, err);
out:
	if (r != 0 && *err == NULL)
		*err = strdup(_("out of memory"));
	free(gu);
	free(gub);
	return r;
}

/* ---- end of gpt-oss's ---- */

/* ---- Qwen3-Next (issue 24): its two kinds of layer and its shared expert ---- */

#define QWEN3NEXT_CHUNK 64 /* torch_chunk_gated_delta_rule's chunk_size (fewer when the prompt is shorter) */

/* cols columns of src from column `from` into dst's from column `to`. */
static void copy_cols(const Mat *src, int from, int cols, Mat *dst, int to)
{
	for (int r = 0; r < src->rows; r++)
		memcpy(&MAT_AT(*dst, r, to), &MAT_AT(*src, r, from), (size_t)cols * sizeof(double));
}

/*
 * A "linear_attention" layer (Qwen3NextGatedDeltaNet) as Gated DeltaNet, the layer's mixer, with h = num_k_heads
 * heads of d_k = head_k_dim, d_v = r·head_v_dim (r = num_v_heads / num_k_heads value heads to a head: "v_heads").
 * fix_query_key_value_ordering views in_proj_qkvz's output per key head as [q (d_k) | k (d_k) | v (r·d_v′) |
 * z (r·d_v′)] and in_proj_ba's as [b (r) | a (r)]: those columns go to W_q, W_k, W_v, W_z, W_b and W_a at the
 * head's place (value head h·r + s at column h·r + s, its v and z at (h·r + s)·d_v′: the reference's reshape).
 * conv1d.weight [C, 1, K] at conv1d[s][c]; dt_bias, A_log, norm (the gated RMSNorm's plain weight); out_proj → W_o.
 * The softmax attention attnviz computes beside the mixer for comparison reads the same W_q, W_k, W_v, with QK-norm
 * weights of 0 (1 + 0: the model has none here). 0, or -1 with *err.
 */
static int qwen3next_layer(const HfConfig *c, const HfWeights *w, int i, LayerParams *p, char **err)
{
	const int D = c->hidden_size, H = c->lin_k_heads, Hv = c->lin_v_heads, r = Hv / H, dk = c->lin_k_dim;
	const int dv = c->lin_v_dim, bw = 2 * dk + 2 * r * dv, K = c->lin_conv, C = 2 * H * dk + Hv * dv;
	Mat qkvz = { 0 }, ba = { 0 };
	double *conv = malloc((size_t)C * K * sizeof *conv);
	int ret = -1;

	p->heads = p->kv_heads = H;
	p->d_k = dk;
	p->d_v = r * dv;
	p->gdn_mixer = 1;
	p->gdn_v_heads = Hv;
	p->gdn_chunk = QWEN3NEXT_CHUNK; /* min(64, n): layers_build */
	p->gdn_eps = c->norm_eps;       /* Qwen3NextGatedDeltaNet: self.layer_norm_epsilon = config.rms_norm_eps */
	*err = NULL;
	if (conv == NULL || mat_alloc_whole(&p->W_q, D, H * dk) || mat_alloc_whole(&p->W_k, D, H * dk) ||
	    mat_alloc_whole(&p->W_v, D, Hv * dv) || mat_alloc_whole(&p->gdn_W_z, D, Hv * dv) ||
	    mat_alloc_whole(&p->gdn_W_a, D, Hv) || mat_alloc_whole(&p->gdn_W_b, D, Hv) ||
	    mat_alloc_whole(&p->gdn_conv, K, C) || mat_alloc_whole(&p->q_norm, 1, dk) || mat_alloc_whole(&p->k_norm, 1, dk))
		goto out;
	if (load_layer(c, w, i, "linear_attn.in_proj_qkvz.weight", 1, D, H * bw, &qkvz, err) ||
	    load_layer(c, w, i, "linear_attn.in_proj_ba.weight", 1, D, 2 * Hv, &ba, err) ||
	    numbers_of(w, i, "linear_attn.conv1d.weight", (long long)C * K, conv, err) ||
	    load_layer(c, w, i, "linear_attn.dt_bias", 0, 1, Hv, &p->gdn_dt_bias, err) ||
	    load_layer(c, w, i, "linear_attn.A_log", 0, 1, Hv, &p->gdn_A_log, err) ||
	    load_layer(c, w, i, "linear_attn.norm.weight", 0, 1, dv, &p->gdn_norm, err) ||
	    load_kept(c, w, i, "linear_attn.out_proj.weight", Hv * dv, D, p, LP_FILE_W_O, err))
		goto out;
	for (int h = 0; h < H; h++) {
		copy_cols(&qkvz, h * bw, dk, &p->W_q, h * dk);
		copy_cols(&qkvz, h * bw + dk, dk, &p->W_k, h * dk);
		copy_cols(&qkvz, h * bw + 2 * dk, r * dv, &p->W_v, h * r * dv);
		copy_cols(&qkvz, h * bw + 2 * dk + r * dv, r * dv, &p->gdn_W_z, h * r * dv);
		copy_cols(&ba, h * 2 * r, r, &p->gdn_W_b, h * r);
		copy_cols(&ba, h * 2 * r + r, r, &p->gdn_W_a, h * r);
	}
	for (int ch = 0; ch < C; ch++)
		for (int s = 0; s < K; s++)
			MAT_AT(p->gdn_conv, s, ch) = conv[(size_t)ch * K + s];
	memset(p->q_norm.a, 0, (size_t)dk * sizeof(double));
	memset(p->k_norm.a, 0, (size_t)dk * sizeof(double));
	ret = 0;
out:
	if (ret != 0 && *err == NULL)
		*err = strdup(_("out of memory"));
	mat_free(&qkvz);
	mat_free(&ba);
	free(conv);
	return ret;
}

/* A "full_attention" layer's q_proj: per head [query (head_dim) | gate (head_dim)] (Qwen3NextAttention.forward's
 * torch.chunk of the view (…, -1, head_dim * 2)) into W_q and W_gate. 0, or -1 with *err. */
static int qwen3next_q_gate(const HfConfig *c, const HfWeights *w, int i, LayerParams *p, char **err)
{
	const int D = c->hidden_size, H = c->num_heads, hd = c->head_dim;
	Mat q2 = { 0 };

	if (load_layer(c, w, i, "self_attn.q_proj.weight", 1, D, 2 * H * hd, &q2, err))
		return -1;
	if (mat_alloc_whole(&p->W_q, D, H * hd) || mat_alloc_whole(&p->W_gate, D, H * hd)) {
		mat_free(&q2);
		*err = strdup(_("out of memory"));
		return -1;
	}
	for (int h = 0; h < H; h++) {
		copy_cols(&q2, 2 * h * hd, hd, &p->W_q, h * hd);
		copy_cols(&q2, 2 * h * hd + hd, hd, &p->W_gate, h * hd);
	}
	mat_free(&q2);
	return 0;
}

/* A sparse layer's shared expert (Qwen3NextMLP of shared_expert_intermediate_size) and its gate [1, D] as S_gate. */
static int qwen3next_shared(const HfConfig *c, const HfWeights *w, int i, MoeParams *m, char **err)
{
	const int D = c->hidden_size, S = c->shared_expert_ff;

	m->shared_ff = S;
	return load_layer(c, w, i, "mlp.shared_expert.gate_proj.weight", 1, D, S, &m->S_1, err) ||
	               load_layer(c, w, i, "mlp.shared_expert.up_proj.weight", 1, D, S, &m->S_3, err) ||
	               load_layer(c, w, i, "mlp.shared_expert.down_proj.weight", 1, S, D, &m->S_2, err) ||
	               load_layer(c, w, i, "mlp.shared_expert_gate.weight", 1, D, 1, &m->S_gate, err)
	           ? -1
	           : 0;
}

/* Qwen3NextDecoderLayer i: (1 + w) norms, its token mixer of either kind, its MLP or mixture. 0, or -1 with *err. */
static int qwen3next_decoder_layer(const HfConfig *c, const HfWeights *w, int i, LayerParams *p, char **err)
{
	const int D = c->hidden_size, F = c->intermediate_size, KV = c->num_kv_heads * c->head_dim;
	Block *b = &p->block;

	b->norm_kind = NORM_RMSNORM_1P;
	b->activation = ACT_SWIGLU;
	if (load_layer(c, w, i, "input_layernorm.weight", 0, 1, D, &b->ln1_gamma, err) ||
	    load_layer(c, w, i, "post_attention_layernorm.weight", 0, 1, D, &b->ln2_gamma, err))
		return -1;
	if (c->linear[i] ? qwen3next_layer(c, w, i, p, err)
	                 : qwen3next_q_gate(c, w, i, p, err) ||
	                           load_kept(c, w, i, "self_attn.k_proj.weight", D, KV, p, LP_FILE_W_K, err) ||
	                           load_kept(c, w, i, "self_attn.v_proj.weight", D, KV, p, LP_FILE_W_V, err) ||
	                           load_kept(c, w, i, "self_attn.o_proj.weight", c->num_heads * c->head_dim, D, p, LP_FILE_W_O, err) ||
	                           load_layer(c, w, i, "self_attn.q_norm.weight", 0, 1, c->head_dim, &p->q_norm, err) ||
	                           load_layer(c, w, i, "self_attn.k_norm.weight", 0, 1, c->head_dim, &p->k_norm, err))
		return -1;
	if (c->num_experts > 0 && c->sparse[i])
		return layer_moe(c, w, i, p, err) || qwen3next_shared(c, w, i, &b->moe, err) ? -1 : 0;
	return load_mlp_kept(c, w, i, D, F, p, err);
}

/* ---- end of Qwen3-Next's ---- */

/* The attention's and the block's weights of layer i into *p. 0, or -1 with *err. */
static int layer_weights(const HfConfig *c, const HfWeights *w, int i, LayerParams *p, char **err)
{
	const int D = c->hidden_size, F = c->intermediate_size, hd = c->head_dim;
	const int Q = c->num_heads * hd, KV = c->num_kv_heads * hd;
	Block *b = &p->block;

	p->heads = c->num_heads;
	p->kv_heads = c->num_kv_heads;
	p->kv_heads_given = 1;
	p->d_k = p->d_v = hd;
	p->d_out = D;
	p->rope_off = c->nope[i]; /* SmolLM3's NoPE layers: q and k not turned */
	b->present = 1;
	b->norm = c->arch == HF_OLMO2 ? NORM_AFTER : NORM_PRE; /* Olmo2DecoderLayer: each sublayer's output normalised */
	b->norm_kind = c->arch == HF_GPT2 ? NORM_LAYERNORM : NORM_RMSNORM;
	b->eps = c->norm_eps;
	b->has_ffn = 1;
	b->d_ff = F;
	if (hf_deepseek(c->arch))
		return deepseek_layer(c, w, i, p, err) || (c->arch == HF_DEEPSEEK_V32 && indexer_layer(c, w, i, p, err)) ? -1 : 0;
	if (c->arch == HF_QWEN3_NEXT)
		return qwen3next_decoder_layer(c, w, i, p, err);
	if (c->arch == HF_GPT2) {
		Mat qkv = { 0 }, bias = { 0 };
		int r;
		b->activation = ACT_GELU_TANH;
		/* c_attn kept in the file, W_q, W_k and W_v its thirds (keep_conv); else read as doubles and split */
		r = keep_conv(c, w, i, "attn.c_attn.weight", D, 3 * D, 0, D, p, LP_FILE_W_Q, err);
		if (r > 0 && (keep_conv(c, w, i, "attn.c_attn.weight", D, 3 * D, D, D, p, LP_FILE_W_K, err) <= 0 ||
		              keep_conv(c, w, i, "attn.c_attn.weight", D, 3 * D, 2 * D, D, p, LP_FILE_W_V, err) <= 0))
			r = -1;
		if (r < 0)
			return -1;
		r = (r == 0 && load_layer(c, w, i, "attn.c_attn.weight", 0, D, 3 * D, &qkv, err) != 0) ||
		    load_layer(c, w, i, "attn.c_attn.bias", 0, 1, 3 * D, &bias, err) != 0;
		if (!r && ((!mat_empty(&qkv) && (columns(&qkv, 0, D, &p->W_q) || columns(&qkv, D, D, &p->W_k) ||
		                                 columns(&qkv, 2 * D, D, &p->W_v))) ||
		           columns(&bias, 0, D, &p->b_q) || columns(&bias, D, D, &p->b_k) || columns(&bias, 2 * D, D, &p->b_v))) {
			*err = strdup(_("out of memory"));
			r = 1;
		}
		mat_free(&qkv);
		mat_free(&bias);
		if (r)
			return -1;
		return load_layer(c, w, i, "ln_1.weight", 0, 1, D, &b->ln1_gamma, err) ||
		               load_layer(c, w, i, "ln_1.bias", 0, 1, D, &b->ln1_beta, err) ||
		               load_conv(c, w, i, "attn.c_proj.weight", D, D, p, LP_FILE_W_O, err) ||
		               load_layer(c, w, i, "attn.c_proj.bias", 0, 1, D, &p->b_o, err) ||
		               load_layer(c, w, i, "ln_2.weight", 0, 1, D, &b->ln2_gamma, err) ||
		               load_layer(c, w, i, "ln_2.bias", 0, 1, D, &b->ln2_beta, err) ||
		               load_conv(c, w, i, "mlp.c_fc.weight", D, F, p, LP_FILE_W_1, err) ||
		               load_layer(c, w, i, "mlp.c_fc.bias", 0, 1, F, &b->b_1, err) ||
		               load_conv(c, w, i, "mlp.c_proj.weight", F, D, p, LP_FILE_W_2, err) ||
		               load_layer(c, w, i, "mlp.c_proj.bias", 0, 1, D, &b->b_2, err)
		           ? -1
		           : 0;
	}
	b->activation = ACT_SWIGLU;
	if (c->arch == HF_GEMMA2 || c->arch == HF_GEMMA3) { /* Gemma: sandwich (1 + w) norms and a gelu_tanh gate */
		b->sandwich = 1;
		b->norm_kind = NORM_RMSNORM_1P;
		b->activation = ACT_GEGLU;
		if (load_layer(c, w, i, "input_layernorm.weight", 0, 1, D, &b->ln1_gamma, err) ||
		    load_layer(c, w, i, "post_attention_layernorm.weight", 0, 1, D, &b->ln1_after_gamma, err) ||
		    load_layer(c, w, i, "pre_feedforward_layernorm.weight", 0, 1, D, &b->ln2_gamma, err) ||
		    load_layer(c, w, i, "post_feedforward_layernorm.weight", 0, 1, D, &b->ln2_after_gamma, err))
			return -1;
	} else if (c->arch == HF_OLMO2 ? load_layer(c, w, i, "post_attention_layernorm.weight", 0, 1, D, &b->ln1_gamma, err) ||
	                                  load_layer(c, w, i, "post_feedforward_layernorm.weight", 0, 1, D, &b->ln2_gamma, err)
	                        : load_layer(c, w, i, "input_layernorm.weight", 0, 1, D, &b->ln1_gamma, err) ||
	                                  load_layer(c, w, i, "post_attention_layernorm.weight", 0, 1, D, &b->ln2_gamma, err))
		return -1;
	if (
	    load_kept(c, w, i, "self_attn.q_proj.weight", D, Q, p, LP_FILE_W_Q, err) ||
	    load_kept(c, w, i, "self_attn.k_proj.weight", D, KV, p, LP_FILE_W_K, err) ||
	    load_kept(c, w, i, "self_attn.v_proj.weight", D, KV, p, LP_FILE_W_V, err) ||
	    load_kept(c, w, i, "self_attn.o_proj.weight", Q, D, p, LP_FILE_W_O, err) ||
	    (c->gptoss ? layer_gptoss(c, w, i, p, err) || load_layer(c, w, i, "self_attn.sinks", 0, 1, c->num_heads, &p->sinks, err)
	     : c->num_experts > 0 && c->sparse[i] ? layer_moe(c, w, i, p, err)
	                                        : load_mlp_kept(c, w, i, D, F, p, err)))
		return -1;
	if (c->qkv_bias && (load_layer(c, w, i, "self_attn.q_proj.bias", 0, 1, Q, &p->b_q, err) ||
	                    load_layer(c, w, i, "self_attn.k_proj.bias", 0, 1, KV, &p->b_k, err) ||
	                    load_layer(c, w, i, "self_attn.v_proj.bias", 0, 1, KV, &p->b_v, err)))
		return -1;
	if (c->o_bias && load_layer(c, w, i, "self_attn.o_proj.bias", 0, 1, D, &p->b_o, err))
		return -1;
	/* Qwen3's over head_dim; OLMo 2's over the whole projection (Q, KV numbers) */
	if (c->qk_norm && (load_layer(c, w, i, "self_attn.q_norm.weight", 0, 1, c->qk_norm == 2 ? Q : hd, &p->q_norm, err) ||
	                   load_layer(c, w, i, "self_attn.k_norm.weight", 0, 1, c->qk_norm == 2 ? KV : hd, &p->k_norm, err)))
		return -1;
	return 0;
}

static void tokens_drop(char **t, int n)
{
	for (int i = 0; t != NULL && i < n; i++)
		free(t[i]);
	free(t);
}

/*
 * Every layer of l, built through lesson.h's accessors alone: with c and w,
 * its weights (layer 0's are l's own lp: model.h); always, what each layer keeps
 * of its own (model.h's LayerOwn: the keys' count m, d_model, the mask), as
 * lesson_validate checks each layer against the prompt. 0, or -1 with *err.
 */
static int layers_build(Lesson *l, const HfConfig *c, const HfWeights *w, char **err)
{
	const int nl = lesson_layers(l);

	*err = NULL;
	if (c != NULL) {
		if (lesson_set_layers(l, c->num_layers) != 0) {
			*err = strdup(_("out of memory"));
			return -1;
		}
		for (int i = 0; i < c->num_layers; i++)
			if (layer_weights(c, w, i, lesson_layer_params(l, i), err) != 0)
				return -1;
		if (layers_build(l, NULL, NULL, err) != 0) {
			*err = *err ? *err : strdup(_("out of memory"));
			return -1;
		}
		/* local and global layers: a "sliding_attention" layer's causal window of W, the others causal */
		for (int i = 0; c->sliding_window > 0 && i < c->num_layers; i++) {
			LayerOwn *own = lesson_layer_own(l, i);
			own->mask_own = 1;
			own->mask = c->sliding[i] ? MASK_WINDOW : l->cfg.mask;
			own->window = c->sliding[i] ? c->sliding_window : 0;
			/* Gemma's local layers turn with their own base (Gemma 3's rope_local_base_freq) and scaling (none,
			 * or rope_parameters' sliding_attention's), the global ones with the model's */
			if ((c->arch == HF_GEMMA2 || c->arch == HF_GEMMA3) && c->sliding[i]) {
				own->rope_own = 1;
				own->rope_base = c->rope_local_base;
				own->rope_scaling = c->rope_local_scaling;
			}
		}
		return 0;
	}
	for (int i = 0; i < nl; i++) {
		LayerOwn *own = lesson_layer_own(l, i);
		if (own == NULL)
			continue;
		own->m = l->cfg.n;
		own->d_model = own->d_src = l->cfg.d_model;
		if (lesson_layer_params(l, i)->gdn_mixer) /* Qwen3-Next's chunks of 64, or the prompt's tokens when fewer */
			lesson_layer_params(l, i)->gdn_chunk = l->cfg.n < QWEN3NEXT_CHUNK ? l->cfg.n : QWEN3NEXT_CHUNK;
		if (!own->mask_own) /* a sliding layer keeps its window on another prompt */
			own->mask = l->cfg.mask;
	}
	return 0;
}

/* ---- the prompt ---- */

int import_tokenize(const char *dir, const char *text, long long **ids, int *n, char **err)
{
	char *path = str_printf("%s/tokenizer.json", dir);
	Tokenizer *t = NULL;
	int *got = NULL, r = -1;

	*ids = NULL;
	*n = 0;
	*err = NULL;
	if (path == NULL)
		goto out;
	if (access(path, F_OK) != 0) {
		char *d = text_escape(dir, "");
		*err = str_printf(_("%s: no tokenizer.json in this folder: give the prompt as token ids (--ids 1,2,3)"),
		                  d ? d : "");
		free(d);
		goto out;
	}
	if ((t = tok_load_folder(path, err)) == NULL || tok_encode(t, text, strlen(text), &got, n, err) != 0)
		goto out;
	if (*n < 1) {
		char *p = text_escape(path, "");
		*err = str_printf(_("%s: the prompt has no tokens"), p ? p : "");
		free(p);
		goto out;
	}
	if ((*ids = malloc((size_t)*n * sizeof **ids)) == NULL)
		goto out;
	for (int i = 0; i < *n; i++)
		(*ids)[i] = got[i];
	r = 0;
out:
	if (r != 0 && *err == NULL)
		*err = strdup(_("out of memory"));
	free(got);
	free(path);
	tok_free(t);
	return r;
}

/* The model's vocabulary as people read it: the tokenizer's tokens, or "#ID" without one. NULL with *err. */
static char **vocab_shown(const char *dir, int vocab, char **err)
{
	char *path = str_printf("%s/tokenizer.json", dir);
	Tokenizer *t = NULL;
	char **v = calloc((size_t)vocab, sizeof *v);
	int ok = path != NULL && v != NULL;

	*err = NULL;
	if (ok && access(path, F_OK) == 0 && (t = tok_load(path, err)) == NULL)
		ok = 0;
	for (int i = 0; ok && i < vocab; i++) {
		v[i] = t != NULL && i < tok_vocab_size(t) ? tok_display(t, i, i18n_utf8()) : str_printf("#%d", i);
		ok = v[i] != NULL;
	}
	free(path);
	tok_free(t);
	if (!ok) {
		tokens_drop(v, vocab);
		if (*err == NULL)
			*err = strdup(_("out of memory"));
		return NULL;
	}
	return v;
}

/* The ids of p (tokenized through DIR's tokenizer.json for text), checked against c. */
static int prompt_ids(const char *dir, const HfConfig *c, const ImportPrompt *p, long long **ids, int *n, char **err)
{
	char *d;
	int limit = c->max_positions < LESSON_MAX_TOKENS ? c->max_positions : LESSON_MAX_TOKENS;

	/* RoPE scaled for long context (issue 23 §2) is there to read past max_position_embeddings */
	if (c->rope_scaling.type != ROPE_SCALE_NONE)
		limit = LESSON_MAX_TOKENS;
	*err = NULL;
	if (p->text != NULL) {
		if (import_tokenize(dir, p->text, ids, n, err) != 0)
			return -1;
	} else {
		if (p->n < 1 || (*ids = malloc((size_t)p->n * sizeof **ids)) == NULL) {
			*err = strdup(p->n < 1 ? _("the prompt has no tokens") : _("out of memory"));
			return -1;
		}
		memcpy(*ids, p->ids, (size_t)p->n * sizeof **ids);
		*n = p->n;
	}
	d = text_escape(dir, "");
	for (int i = 0; i < *n && *err == NULL; i++)
		if ((*ids)[i] < 0 || (*ids)[i] >= c->vocab_size)
			*err = str_printf(_("%s: token id %lld (token %d of the prompt) is outside the vocabulary: 0 to %d "
			                    "(config.json's vocab_size)"),
			                  d ? d : "", (*ids)[i], i, c->vocab_size - 1);
	if (*err == NULL && *n > limit)
		*err = str_printf(_("%s: %d tokens is over the limit of %d (config.json's max_position_embeddings, or "
		                    "LESSON_MAX_TOKENS)"),
		                  d ? d : "", *n, limit);
	free(d);
	if (*err != NULL) {
		free(*ids);
		*ids = NULL;
		return -1;
	}
	return 0;
}

/* X (and GPT-2's position rows) and the tokens of the ids into l->cfg, replacing what was there. */
static int embed(Lesson *l, const HfConfig *c, const HfWeights *w, long long *ids, int n, char **err)
{
	ModelConfig *m = &l->cfg;
	Mat x = { 0 }, pe = { 0 };
	char **tokens = calloc((size_t)n, sizeof *tokens);
	long long *pos = malloc((size_t)n * sizeof *pos);
	int r = -1;

	*err = NULL;
	if (tokens == NULL || pos == NULL)
		goto out;
	for (int i = 0; i < n; i++) {
		pos[i] = i;
		if ((tokens[i] = strdup(m->vocab_tokens[ids[i]])) == NULL)
			goto out;
	}
	if (rows_of(w, c->arch == HF_GPT2 ? "wte.weight" : "model.embed_tokens.weight", ids, n, c->hidden_size, &x, err) ||
	    (c->arch == HF_GPT2 && rows_of(w, "wpe.weight", pos, n, c->hidden_size, &pe, err)))
		goto out;
	tokens_drop(m->tokens, m->n);
	mat_free(&m->input);
	mat_free(&m->pe_learned);
	free(m->ids);
	m->tokens = tokens;
	tokens = NULL;
	m->input = x;
	m->pe_learned = pe;
	x = pe = (Mat){ 0 };
	m->ids = ids;
	m->n = m->m = n;
	m->logits_row = n - 1;
	r = 0;
out:
	if (r != 0) {
		tokens_drop(tokens, n);
		free(ids);
		if (*err == NULL)
			*err = strdup(_("out of memory"));
	}
	free(pos);
	mat_free(&x);
	mat_free(&pe);
	return r;
}

/* ---- the model ---- */

/* The settings every layer shares, the final norm and the head (which may keep w open: load_head). */
static int model_settings(Lesson *l, const char *dir, const HfConfig *c, HfWeights *w, char **err)
{
	ModelConfig *m = &l->cfg;
	const int D = c->hidden_size;

	m->d_model = m->d_src = D;
	m->positional = c->arch == HF_GPT2 ? POS_LEARNED : POS_NONE;
	m->score = SCORE_DOT;
	m->scale = SCALE_SQRT_DK; /* 1/sqrt(head_dim): GPT-2's value.size(-1) ** 0.5, LLaMA's head_dim ** -0.5 */
	m->mask = MASK_CAUSAL;
	m->mask_fill_inf = 1;
	m->rope = c->arch != HF_GPT2 && !hf_deepseek(c->arch); /* DeepSeek's MLA turns its own q_pe and k_pe */
	m->rope_base = c->rope_theta;
	m->rope_style = ROPE_HALF;
	m->rope_partial = c->partial_rotary_factor; /* rope_scaling / rope_parameters (weights/hfrope.c) */
	m->rope_scaling = c->rope_scaling;
	m->qk_norm = c->qk_norm == 2 ? QK_NORM_PROJ : c->qk_norm ? QK_NORM_HEAD : QK_NORM_NONE;
	m->qk_norm_eps = c->norm_eps;
	m->has_final_norm = 1;
	m->final_kind = c->arch == HF_GPT2 ? NORM_LAYERNORM : NORM_RMSNORM;
	if (c->arch == HF_GEMMA2 || c->arch == HF_GEMMA3) {
		/* Gemma: the scores times query_pre_attn_scalar**-0.5 (Gemma2Attention.scaling), its caps, the (1 + w)
		 * norms (QK-norm's too), and the embedding times hidden_size**0.5 (in float64, the double nearest it) */
		m->scale = SCALE_VALUE;
		m->scale_value = pow(c->query_pre_attn_scalar, -0.5);
		m->attn_softcap = c->attn_softcap;
		m->final_softcap = c->final_softcap;
		m->qk_norm_plus1 = 1;
		m->final_kind = NORM_RMSNORM_1P;
		m->embed_scale = sqrt((double)D);
	}
	if (c->arch == HF_QWEN3_NEXT) /* Qwen3NextRMSNorm: x · rsqrt(mean(x²) + eps) · (1 + w), QK-norm's and the final one too */
		m->qk_norm_plus1 = 1, m->final_kind = NORM_RMSNORM_1P;
	m->final_eps = c->norm_eps;
	m->vocab = c->vocab_size;
	m->temperature = 1.0;
	m->top_k = 10;
	if (c->arch == HF_GPT2) {
		if (load(w, "ln_f.weight", 0, 1, D, &m->final_gamma, err) || load(w, "ln_f.bias", 0, 1, D, &m->final_beta, err) ||
		    load_head(w, "wte.weight", c->vocab_size, D, &m->unembed_view, &m->unembed, err))
			return -1;
	} else if (load(w, "model.norm.weight", 0, 1, D, &m->final_gamma, err) ||
	           load_head(w, c->tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight", c->vocab_size, D,
	                     &m->unembed_view, &m->unembed, err))
		return -1;
	if (hf_deepseek(c->arch) && c->rope_scaling.type == ROPE_SCALE_YARN && c->rope_scaling.mscale_all_dim > 0 &&
	    c->rope_scaling.factor > 1) {
		/* DeepseekV3Attention: self.scaling = qk_head_dim ** -0.5 * mscale * mscale, mscale = yarn_get_mscale(factor,
		 * mscale_all_dim) = 0.1 * mscale_all_dim * ln(factor) + 1 */
		const double ms = 0.1 * c->rope_scaling.mscale_all_dim * log(c->rope_scaling.factor) + 1.0;
		m->scale = SCALE_VALUE;
		m->scale_value = 1.0 / sqrt((double)(c->qk_nope_head_dim + c->qk_rope_head_dim)) * ms * ms;
	}
	return (m->vocab_tokens = vocab_shown(dir, c->vocab_size, err)) == NULL ? -1 : 0;
}

/* DIR's config and weights, opened and checked. */
static HfWeights *open_model(const char *dir, HfConfig *c, char **err)
{
	HfWeights *w;
	char *d;

	if (hfconfig_read(dir, c, err) != 0)
		return NULL;
	if (c->num_layers > IMPORT_MAX_LAYERS || c->hidden_size > LESSON_MAX_DIM ||
	    (long long)c->num_heads * c->head_dim > LESSON_MAX_DIM || c->num_heads > LESSON_MAX_HEADS) {
		d = text_escape(dir, "");
		*err = str_printf(_("%s/config.json: %d layers, hidden size %d, %d heads of %d: over attnviz's limits for a "
		                    "model (%d layers, %d columns, %d heads)"),
		                  d ? d : "", c->num_layers, c->hidden_size, c->num_heads, c->head_dim, IMPORT_MAX_LAYERS,
		                  LESSON_MAX_DIM, LESSON_MAX_HEADS);
		free(d);
		return NULL;
	}
	if ((w = hfweights_open(dir, err)) == NULL)
		return NULL;
	if (hfconfig_check_shapes(c, w, err) != 0) {
		hfweights_close(w);
		return NULL;
	}
	return w;
}

static int set_title(Lesson *l, const char *dir)
{
	const char *base = strrchr(dir, '/');
	size_t len = strlen(dir);

	while (len > 1 && dir[len - 1] == '/')
		len--;
	base = NULL;
	for (size_t k = 0; k + 1 < len; k++)
		if (dir[k] == '/')
			base = dir + k + 1;
	if ((l->title.v = calloc(1, sizeof *l->title.v)) == NULL)
		return -1;
	l->title.count = 1;
	snprintf(l->title.v[0].lang, sizeof l->title.v[0].lang, "en");
	l->title.v[0].s = base ? strndup(base, len - (size_t)(base - dir)) : strndup(dir, len);
	return l->title.v[0].s == NULL ? -1 : 0;
}

/* DIR is a folder: a name is resolved by the caller first (session_find_model, one lookup for every way in). */
Lesson *import_model(const char *dir, const ImportPrompt *p, char **err)
{
	HfConfig c;
	HfWeights *w;
	Lesson *l = NULL;
	long long *ids = NULL;
	int n = 0;

	*err = NULL;
	if ((w = open_model(dir, &c, err)) == NULL)
		return NULL;
	/* the views kept in the file hold w open (weights_anchor): closed when the last of them goes */
	if (matview_of(&weights_anchor, MAT_F64, 0, 0, NULL, weights_release, w) != 0) {
		hfweights_close(w);
		*err = strdup(_("out of memory"));
		return NULL;
	}
	if (prompt_ids(dir, &c, p, &ids, &n, err) != 0)
		goto fail;
	if ((l = calloc(1, sizeof *l)) == NULL || (l->path = strdup(dir)) == NULL || set_title(l, dir) != 0)
		goto oom;
	l->version = 2;
	if (model_settings(l, dir, &c, w, err) != 0)
		goto fail;
	if (embed(l, &c, w, ids, n, err) != 0) {
		ids = NULL;
		goto fail;
	}
	ids = NULL;
	if (layers_build(l, &c, w, err) != 0)
		goto fail;
	matview_free(&weights_anchor);
	w = NULL;
	if (lesson_validate(l, err) != 0) {
		char *d = text_escape(dir, ""), *e = *err;
		*err = str_printf("%s: %s", d ? d : "", e ? e : _("out of memory"));
		free(d);
		free(e);
		goto fail;
	}
	return l;
oom:
	*err = strdup(_("out of memory"));
fail:
	free(ids);
	if (w != NULL)
		matview_free(&weights_anchor);
	lesson_free(l);
	return NULL;
}

/* The folder l was imported from: a lesson on a model (lesson_on_model) keeps it as model_dir, its path the lesson file's. */
static const char *folder_of(const Lesson *l)
{
	return l->model_dir != NULL ? l->model_dir : l->path;
}

int import_is_model(const Lesson *l)
{
	return l != NULL && l->cfg.vocab > 0 && l->cfg.ids != NULL && folder_of(l) != NULL;
}

int import_reprompt(Lesson *l, const ImportPrompt *p, char **err)
{
	HfConfig c;
	HfWeights *w;
	long long *ids = NULL;
	int n = 0, r = -1;

	*err = NULL;
	if (!import_is_model(l)) {
		*err = strdup(_("this lesson is not a model (open one with :model DIR)"));
		return -1;
	}
	if ((w = open_model(folder_of(l), &c, err)) == NULL)
		return -1;
	/*
	 * In place, not on a copy (a copy of a real model is its size again):
	 * everything that can be refused is checked before l changes (the ids),
	 * embed replaces X, the positions and the tokens at once; after it, only
	 * running out of memory can fail.
	 */
	if (prompt_ids(folder_of(l), &c, p, &ids, &n, err) == 0 && embed(l, &c, w, ids, n, err) == 0 &&
	    layers_build(l, NULL, NULL, err) == 0)
		r = lesson_validate(l, err);
	hfweights_close(w);
	return r;
}


int import_embed_tail(const Lesson *l, const long long *ids, int n, int from, Mat *x, char **err)
{
	HfConfig c;
	HfWeights *w;
	long long *checked = NULL, *pos = NULL;
	int count = 0, r = -1;
	const ImportPrompt p = { NULL, ids, n };
	Mat pe = { 0 };

	*err = NULL;
	*x = (Mat){ 0 };
	if (!import_is_model(l) || from < 0 || from >= n) {
		*err = strdup(_("this lesson is not a model (open one with :model DIR)"));
		return -1;
	}
	if ((w = open_model(folder_of(l), &c, err)) == NULL)
		return -1;
	/* the whole list checked as a prompt is (the same messages), then only the rows from `from` read */
	if (prompt_ids(folder_of(l), &c, &p, &checked, &count, err) != 0)
		goto out;
	if ((pos = malloc((size_t)(n - from) * sizeof *pos)) == NULL) {
		*err = strdup(_("out of memory"));
		goto out;
	}
	for (int i = from; i < n; i++)
		pos[i - from] = i;
	if (rows_of(w, c.arch == HF_GPT2 ? "wte.weight" : "model.embed_tokens.weight", ids + from, n - from, c.hidden_size,
	            x, err) ||
	    (c.arch == HF_GPT2 && rows_of(w, "wpe.weight", pos, n - from, c.hidden_size, &pe, err)))
		goto out;
	/* X = the token's row + its position's (pass_positional's sum) */
	for (size_t k = 0; !mat_empty(&pe) && k < (size_t)x->rows * (size_t)x->cols; k++)
		x->a[k] += pe.a[k];
	r = 0;
out:
	if (r != 0)
		mat_free(x);
	mat_free(&pe);
	free(checked);
	free(pos);
	hfweights_close(w);
	return r;
}
