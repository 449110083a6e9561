/* dump.c: every stage as JSON, every number exact (base/jsonwrite.h: read back, it is the same double). */
#include "inspect/dump.h"
#include "engine/backward.h"
#include "base/jsonwrite.h"
#include "base/i18n.h"
#include "base/strbuf.h"
#include "engine/variants/variants.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cJSON *dump_strings(char *const *s, int count)
{
	return cJSON_CreateStringArray((const char *const *)s, count);
}

/*
 * For dump_write: instead of one cJSON item per number (about 100 bytes
 * each: 4.9 GB for the dump of an n = 1024 lesson), a matrix in the tree is
 * an empty array that stands for it (its valueint is its index in the Lazy
 * table, plus one), and dump_write's printer writes the matrix there,
 * straight from the computed Attn. The compare variant's Attn is kept here
 * until then. NULL: build the whole tree (dump_attn).
 */
typedef struct {
	const Mat *mat;     /* the matrix, or NULL: derived matrix `which` of head `head` of attn, made when printed */
	const Attn *attn;
	AttnMatrix which;
	int head;
} LazyMat;

typedef struct {
	LazyMat *mat;
	int nmat, capmat;
	Attn *owned[4];
	int nowned;
} Lazy;

static int lazy_add(Lazy *lz, LazyMat m)
{
	if (lz->nmat == lz->capmat) {
		int ncap = lz->capmat ? lz->capmat * 2 : 64;
		LazyMat *nm = realloc(lz->mat, sizeof *nm * (size_t)ncap);
		if (nm == NULL)
			return -1;
		lz->mat = nm;
		lz->capmat = ncap;
	}
	lz->mat[lz->nmat] = m;
	return lz->nmat++;
}

static void lazy_free(Lazy *lz)
{
	int i;

	for (i = 0; i < lz->nowned; i++)
		attn_free(lz->owned[i]);
	free(lz->mat);
}

static Lazy *lazy_ctx; /* set only while dump_write builds its tree */

/* Add a matrix (m, or derived matrix which of head h of a: made only when it is printed) under key; 0 or -1. */
static int add_lazy(cJSON *obj, const char *key, const Mat *m, const Attn *a, AttnMatrix which, int h)
{
	cJSON *j;

	if (lazy_ctx != NULL) {
		int idx = lazy_add(lazy_ctx, (LazyMat){ m, a, which, h });
		if (idx < 0)
			return -1;
		j = cJSON_CreateArray();
		if (j != NULL)
			j->valueint = idx + 1;
	} else {
		if (m == NULL)
			m = attn_matrix(a, which, h);
		j = m != NULL ? jw_matrix(m) : NULL;
	}
	if (j == NULL || !cJSON_AddItemToObject(obj, key, j)) {
		cJSON_Delete(j);
		return -1;
	}
	return 0;
}

/* Add a matrix under key; returns 0, or -1 when out of memory. */
static int add_matrix(cJSON *obj, const char *key, const Mat *m)
{
	return add_lazy(obj, key, m, NULL, AM_COUNT, 0);
}

/* Add a derived stage's matrix (attention.h) of head h under key. */
static int add_derived(cJSON *obj, const char *key, const Attn *a, AttnMatrix which, int h)
{
	return add_lazy(obj, key, NULL, a, which, h);
}

/* A variant's term on the scaled scores of head h and the biased scores (derived), under their catalogue names. */
static int add_score_bias(cJSON *obj, const Attn *a, int h)
{
	const AttnVariant *v = attn_score_bias(a);

	return v != NULL && (add_derived(obj, matrix_name(v->bias_matrix), a, v->bias_matrix, h) ||
	                     add_derived(obj, matrix_name(v->biased_matrix), a, v->biased_matrix, h));
}

/* A variant's map of the scores before the mask (soft-capping's capped), derived, under its catalogue name. */
static int add_score_map(cJSON *obj, const Attn *a, int h)
{
	const AttnVariant *v = attn_score_map(a);

	return v != NULL && add_derived(obj, matrix_name(v->mapped_matrix), a, v->mapped_matrix, h);
}

static int add_number(cJSON *obj, const char *key, double x);

/* Scaled or partial RoPE (issue 23 §2): the angle tables and the factor cos and sin are multiplied by. */
static int add_rope_table(cJSON *obj, const Attn *a)
{
	if (mat_empty(&a->angles))
		return 0;
	return add_matrix(obj, "angles_plain", &a->angles_plain) || add_matrix(obj, "angles", &a->angles) ||
	       add_number(obj, "rope_attention_factor", a->rope_af);
}

/* What a variant made of Q and K for the scores to read (variants.h: reads), under their catalogue names. */
static int add_reads(cJSON *obj, const Attn *a)
{
	const AttnMatrix q = attn_reads(a, AM_Q), k = attn_reads(a, AM_K);

	if ((q != AM_Q && add_matrix(obj, matrix_name(q), attn_matrix(a, q, 0))) ||
	    (k != AM_K && add_matrix(obj, matrix_name(k), attn_matrix(a, k, 0))))
		return -1;
	/* and what the variants before the scores' made of them first (QK-norm's Q_norm under RoPE's Q_rot) */
	for (int v = 0; v < attn_variant_count; v++) {
		const AttnVariant *var = attn_variants[v];
		if (var->reads == NULL || !attn_variant_on(a, var))
			continue;
		for (const AttnMatrix(*r)[2] = var->reads; (*r)[0] != AM_COUNT; r++)
			if (((*r)[0] == AM_Q || (*r)[0] == AM_K) && (*r)[1] != q && (*r)[1] != k &&
			    add_matrix(obj, matrix_name((*r)[1]), attn_matrix(a, (*r)[1], 0)))
				return -1;
	}
	return add_rope_table(obj, a);
}

static int add_number(cJSON *obj, const char *key, double x)
{
	cJSON *j = jw_number(x);
	if (j == NULL || !cJSON_AddItemToObject(obj, key, j)) {
		cJSON_Delete(j);
		return -1;
	}
	return 0;
}

/* A block of a matrix (rows r0 … r0+rows−1, columns c0 … c0+cols−1) as a matrix of its own. */
/* The cells of m at rows rows[0 … nrows) and columns cols[0 … ncols) (NULL: r0 … r0 + nrows − 1, c0 …) as obj[key]. */
static int add_cells(cJSON *obj, const char *key, const Mat *m, const int *rows, int nrows, int r0, const int *cols,
                     int ncols, int c0)
{
	Mat v = { 0, 0, NULL };
	cJSON *j;

	if (mat_alloc(&v, nrows, ncols) != 0)
		return -1;
	for (int i = 0; i < nrows; i++)
		for (int k = 0; k < ncols; k++)
			MAT_AT(v, i, k) = MAT_AT(*m, rows != NULL ? rows[i] : r0 + i, cols != NULL ? cols[k] : c0 + k);
	j = jw_matrix(&v);
	mat_free(&v);
	if (j == NULL || !cJSON_AddItemToObject(obj, key, j)) {
		cJSON_Delete(j);
		return -1;
	}
	return 0;
}

static int add_block(cJSON *obj, const char *key, const Mat *m, int r0, int rows, int c0, int cols)
{
	return add_cells(obj, key, m, NULL, rows, r0, NULL, cols, c0);
}

/* keep[0 … count) as obj[key], a list of row numbers. */
static int add_rows(cJSON *obj, const char *key, const int *keep, int count)
{
	cJSON *list = cJSON_CreateIntArray(keep, count);

	if (list == NULL || !cJSON_AddItemToObject(obj, key, list)) {
		cJSON_Delete(list);
		return -1;
	}
	return 0;
}

/*
 * StreamingLLM's comparison at step t: "window": {"cache_rows": the plain
 * window's rows, "weights": each head's row over them, "output"}.
 */
static int add_decode_window(cJSON *o, const Attn *a, int t, int *keep)
{
	const int count = attn_cache_rows(attn_config(a), t, 1, keep);
	cJSON *w = cJSON_AddObjectToObject(o, "window"), *heads;

	if (w == NULL || add_rows(w, "cache_rows", keep, count) || (heads = cJSON_AddArrayToObject(w, "weights")) == NULL)
		return -1;
	for (int h = 0; h < a->heads; h++) {
		cJSON *ho = cJSON_CreateObject();
		if (ho == NULL || !cJSON_AddItemToArray(heads, ho)) {
			cJSON_Delete(ho);
			return -1;
		}
		if (add_cells(ho, "weights", &a->head[h].win_weights, NULL, 1, t, keep, count, 0))
			return -1;
	}
	return add_block(w, "output", &a->win_output, t, 1, 0, a->win_output.cols);
}

/*
 * "decode": one object per position t, what step t reads and makes: its
 * query, the cache rows it attends to (oldest first), each head's scores,
 * weights and weighted row over them, the output row (and in a block the
 * layer's output row). With StreamingLLM's cache also the rows it keeps
 * ("cache_rows") and the plain window's ("window": add_decode_window).
 */
static cJSON *dump_decode(const Attn *a)
{
	const ModelConfig *cfg = attn_config(a);
	const int win = !mat_empty(&a->win_output);
	cJSON *list = cJSON_CreateArray();
	int *keep = calloc((size_t)(cfg->n > 0 ? cfg->n : 1), sizeof *keep);

	for (int t = 0; list != NULL && keep != NULL && t < cfg->n; t++) {
		const int len = attn_cache_rows(cfg, t, 0, keep);
		cJSON *o = cJSON_CreateObject(), *heads;
		if (o == NULL || !cJSON_AddItemToArray(list, o)) {
			cJSON_Delete(o);
			goto fail;
		}
		if (add_number(o, "t", t) || (win && add_rows(o, "cache_rows", keep, len)) ||
		    add_block(o, "q", &a->dec_q, t, 1, 0, a->dec_q.cols) ||
		    add_cells(o, "K_cache", &a->cache_K, keep, len, 0, NULL, a->cache_K.cols, 0) ||
		    add_cells(o, "V_cache", &a->cache_V, keep, len, 0, NULL, a->cache_V.cols, 0) ||
		    (heads = cJSON_AddArrayToObject(o, "heads")) == NULL)
			goto fail;
		for (int h = 0; h < a->heads; h++) {
			const AttnHead *hd = &a->head[h];
			cJSON *ho = cJSON_CreateObject();
			if (ho == NULL || !cJSON_AddItemToArray(heads, ho)) {
				cJSON_Delete(ho);
				goto fail;
			}
			if (add_cells(ho, "scores", &hd->dec_scores, NULL, 1, t, keep, len, 0) ||
			    add_cells(ho, "weights", &hd->dec_weights, NULL, 1, t, keep, len, 0) ||
			    add_block(ho, "weighted", &hd->dec_weighted, t, 1, 0, hd->dec_weighted.cols))
				goto fail;
		}
		if (add_block(o, "output", &a->dec_output, t, 1, 0, a->dec_output.cols) ||
		    (!mat_empty(&a->dec_layer_out) && add_block(o, "layer_output", &a->dec_layer_out, t, 1, 0, cfg->d_model)) ||
		    (win && add_decode_window(o, a, t, keep)))
			goto fail;
	}
	if (keep == NULL)
		goto fail;
	free(keep);
	return list;
fail:
	free(keep);
	cJSON_Delete(list);
	return NULL;
}

/*
 * "flash": each head's tiles in the order they are processed (query block
 * by query block, key blocks in order; a tile the mask hides is skipped and
 * has no record), each with the state m, l, O of its rows after it.
 */
static cJSON *dump_flash(const Attn *a)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const int bq = cfg->flash_bq, bk = cfg->flash_bk, nkb = (cfg->m + bk - 1) / bk, dv = lp->d_v;
	cJSON *o = cJSON_CreateObject(), *heads;

	if (o == NULL || add_number(o, "block_q", bq) || add_number(o, "block_k", bk) ||
	    (heads = cJSON_AddArrayToObject(o, "heads")) == NULL)
		goto fail;
	for (int h = 0; h < a->heads; h++) {
		const AttnHead *hd = &a->head[h];
		cJSON *ho = cJSON_CreateObject(), *tiles;
		if (ho == NULL || !cJSON_AddItemToArray(heads, ho)) {
			cJSON_Delete(ho);
			goto fail;
		}
		if ((tiles = cJSON_AddArrayToObject(ho, "tiles")) == NULL)
			goto fail;
		for (int qb = 0; qb * bq < cfg->n; qb++)
			for (int kb = 0; kb < nkb; kb++) {
				const int q0 = qb * bq, rows = q0 + bq <= cfg->n ? bq : cfg->n - q0;
				cJSON *t;
				if (attn_flash_skipped(a, qb, kb))
					continue;
				t = cJSON_CreateObject();
				if (t == NULL || !cJSON_AddItemToArray(tiles, t)) {
					cJSON_Delete(t);
					goto fail;
				}
				if (add_number(t, "q0", q0) || add_number(t, "k0", kb * bk))
					goto fail;
				for (int k = 0; k < 2; k++) {
					const Mat *src = k ? &hd->flash_l : &hd->flash_m;
					cJSON *arr = cJSON_AddArrayToObject(t, k ? "l" : "m");
					if (arr == NULL)
						goto fail;
					for (int i = 0; i < rows; i++) {
						cJSON *x = jw_number(MAT_AT(*src, q0 + i, kb));
						if (x == NULL || !cJSON_AddItemToArray(arr, x)) {
							cJSON_Delete(x);
							goto fail;
						}
					}
				}
				if (add_block(t, "O", &hd->flash_O, q0, rows, kb * dv, dv))
					goto fail;
			}
		if (add_matrix(ho, "output", &hd->flash_out))
			goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* Linear attention's and Gated DeltaNet's matrices of one head (issue 24 §3), under their catalogue names, when present. */
static int add_linear_head(cJSON *o, const AttnHead *hd)
{
	const AttnMatrix w[] = { AM_PHI_Q, AM_PHI_K, AM_LIN_SCORES, AM_LIN_Z, AM_LIN_OUT, AM_LIN_STATE, AM_LIN_KSUM, AM_LIN_OUT_STATE,
		                 AM_GDN_Q, AM_GDN_K, AM_GDN_BETA, AM_GDN_G, AM_GDN_RECALL, AM_GDN_DELTA, AM_GDN_OUT,
		                 AM_GDN_OUT_CHUNK, AM_GDN_STATE, AM_GDN_STATES, AM_GDN_RMS, AM_GDN_GATED };
	const Mat *m[] = { &hd->phi_q, &hd->phi_k, &hd->lin_scores, &hd->lin_z, &hd->lin_out, &hd->lin_state, &hd->lin_ksum,
		           &hd->lin_out_state, &hd->gdn_q, &hd->gdn_k, &hd->gdn_beta, &hd->gdn_g, &hd->gdn_recall,
		           &hd->gdn_delta, &hd->gdn_out, &hd->gdn_out_chunk, &hd->gdn_state, &hd->gdn_states, &hd->gdn_rms,
		           &hd->gdn_gated };

	for (size_t k = 0; k < sizeof w / sizeof w[0]; k++)
		if (!mat_empty(m[k]) && add_matrix(o, matrix_name(w[k]), m[k]))
			return 1;
	return 0;
}

/* Gated attention (issue 23 §6; nothing without it): W_gate, gate, gate_sig and gated, after concat. */
static int add_gated(cJSON *o, const Attn *a)
{
	static const AttnMatrix mats[] = { AM_W_GATE, AM_B_GATE, AM_GATE, AM_GATE_SIG, AM_GATED };

	if (mat_empty(&attn_params(a)->W_gate))
		return 0;
	for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
		if (attn_matrix(a, mats[i], 0) != NULL && add_matrix(o, matrix_name(mats[i]), attn_matrix(a, mats[i], 0)))
			return 1;
	return 0;
}

/* "gated_deltanet" and "linear_attention": settings and the largest difference between each one's two ways (when present). */
static int add_linear(cJSON *o, const Attn *a)
{
	const ModelConfig *cfg = attn_config(a);
	cJSON *l = NULL;

	if (!mat_empty(&attn_params(a)->gdn_A_log) &&
	    ((l = cJSON_AddObjectToObject(o, "gated_deltanet")) == NULL ||
	     add_number(l, "chunk_size", attn_params(a)->gdn_chunk) || add_number(l, "max_gap", a->gdn_gap)))
		return 1;
	if (l != NULL && attn_params(a)->gdn_mixer && /* as the layer's mixer: [Q | K | V] after the conv, and z */
	    (cJSON_AddTrueToObject(l, "mixer") == NULL || add_number(l, "eps", attn_params(a)->gdn_eps) ||
	     add_matrix(o, matrix_name(AM_GDN_CONV), &a->gdn_conv) || add_matrix(o, matrix_name(AM_GDN_Z), &a->gdn_z) ||
	     add_matrix(o, matrix_name(AM_GDN_CACHE), &a->gdn_cache)))
		return 1;
	if (l != NULL && attn_params(a)->gdn_v_heads > 0 && add_number(l, "v_heads", attn_params(a)->gdn_v_heads))
		return 1; /* Qwen3-Next's value heads, r to each head */
	if (!cfg->linear)
		return 0;
	l = cJSON_AddObjectToObject(o, "linear_attention");
	return l == NULL || cJSON_AddStringToObject(l, "feature_map", "elu+1") == NULL ||
	       cJSON_AddBoolToObject(l, "causal", cfg->linear_causal) == NULL || add_number(l, "eps", cfg->linear_eps) ||
	       add_number(l, "max_gap", a->linear_gap);
}

static cJSON *dump_heads(const Attn *a)
{
	cJSON *heads = cJSON_CreateArray();
	int h;

	for (h = 0; heads != NULL && h < a->heads; h++) {
		const AttnHead *hd = &a->head[h];
		cJSON *o = cJSON_CreateObject();
		if (o == NULL || !cJSON_AddItemToArray(heads, o)) {
			cJSON_Delete(o);
			goto fail;
		}
		if ((model_kv_named(attn_params(a)) && add_number(o, "kv_head", attn_kv_head(a, h))) ||
		    add_matrix(o, "scores", &hd->scores) || add_derived(o, "scaled", a, AM_SCALED, h) ||
		    add_score_bias(o, a, h) || add_score_map(o, a, h) ||
		    add_derived(o, "masked", a, AM_MASKED, h) || add_matrix(o, "weights", &hd->weights) ||
		    (!mat_empty(&hd->sink) && add_matrix(o, "sink", &hd->sink)) ||
		    add_matrix(o, "output", &hd->weighted) || add_linear_head(o, hd))
			goto fail;
	}
	return heads;
fail:
	cJSON_Delete(heads);
	return NULL;
}

/* The stages a's layer has, as its model says (not a->shape: an encoder's links add the backward features). */
static int add_stages(cJSON *o, const Attn *a)
{
	cJSON *st = cJSON_AddArrayToObject(o, "stages");
	LessonShape sh;
	int s;

	if (st == NULL)
		return -1;
	lesson_model_shape(attn_config(a), attn_params(a), &sh);
	for (s = 0; s < STAGE_COUNT; s++)
		if (stage_present(&sh, (Stage)s) && !cJSON_AddItemToArray(st, cJSON_CreateString(stage_name((Stage)s))))
			return -1;
	return 0;
}

static int add_compare(cJSON *o, const Lesson *l, char **err)
{
	Attn *b;
	cJSON *j;

	if (l->compare == NULL)
		return 0;
	b = attn_compute_all(l->compare, err);
	if (b == NULL)
		return -1;
	j = dump_attn(b, err);
	if (lazy_ctx != NULL && j != NULL && lazy_ctx->nowned < (int)(sizeof lazy_ctx->owned / sizeof lazy_ctx->owned[0]))
		lazy_ctx->owned[lazy_ctx->nowned++] = b; /* its matrices are printed later */
	else if (lazy_ctx != NULL && j != NULL) {
		cJSON_Delete(j);
		attn_free(b);
		*err = strdup("out of memory writing the dump");
		return -1;
	} else
		attn_free(b);
	if (j == NULL)
		return -1;
	if (!text_empty(&l->compare_label) && !cJSON_AddStringToObject(j, "label", text_get(&l->compare_label, "en"))) {
		cJSON_Delete(j);
		return -1;
	}
	if (!cJSON_AddItemToObject(o, "compare", j)) {
		cJSON_Delete(j);
		return -1;
	}
	return 0;
}

/* A vector (1 × len: a bias, γ, β) as a flat array under key, when present. */
static int add_vector(cJSON *o, const char *key, const Mat *v)
{
	return !mat_empty(v) && !cJSON_AddItemToObject(o, key, jw_numbers(v->a, v->rows * v->cols));
}

static int dump_weights = 1; /* a model's dump leaves its weights out (dump_set_weights) */

/*
 * "mla" (multi-head latent attention, issue 24 §1; nothing without it): its
 * weights, latents, heads, the absorbed form (q_tilde, "absorbed" a list of
 * one n × m matrix per head, absorbed_out), mla_diff and kv_cache.
 */
static int add_mla(cJSON *o, const Attn *a)
{
	static const struct { const char *key; AttnMatrix m; } mats[] = {
		{ "W_qa", AM_W_QA }, { "q_a_norm", AM_Q_A_NORM }, { "W_qb", AM_W_QB }, { "W_kva", AM_W_KVA },
		{ "kv_a_norm", AM_KV_A_NORM }, { "W_kvb", AM_W_KVB }, { "c_Q", AM_C_Q }, { "c_KV", AM_C_KV },
		{ "k_pe", AM_K_PE }, { "q_nope", AM_Q_NOPE }, { "q_pe", AM_Q_PE }, { "k_pe_rot", AM_K_PE_ROT },
		{ "q_tilde", AM_Q_TILDE }, { "absorbed_out", AM_ABSORBED_OUT }, { "mla_diff", AM_MLA_DIFF },
		{ "kv_cache", AM_KV_CACHE },
	};
	cJSON *m, *heads;

	if (!attn_params(a)->mla.on)
		return 0;
	if ((m = cJSON_AddObjectToObject(o, "mla")) == NULL || (heads = cJSON_AddArrayToObject(m, "absorbed")) == NULL)
		return -1;
	for (size_t i = dump_weights ? 0 : 6; i < sizeof mats / sizeof mats[0]; i++) /* the first 6 are weights */
		if (attn_matrix(a, mats[i].m, 0) != NULL && add_matrix(m, mats[i].key, attn_matrix(a, mats[i].m, 0)))
			return -1;
	for (int h = 0; h < a->heads; h++) {
		cJSON *one = cJSON_CreateObject();
		if (one == NULL || !cJSON_AddItemToArray(heads, one) || add_matrix(one, "scores", &a->head[h].absorbed))
			return -1;
	}
	return 0;
}

/*
 * "dsa" (DeepSeek Sparse Attention, issue 24 §2; nothing without it): its
 * settings and weights, the indexer's q, k and weights, the index scores, the
 * kept set, and "heads", each head's dense_weights (index_mask and sparse are
 * in "heads" beside scaled, as every score bias is).
 */
static int add_dsa(cJSON *o, const Attn *a)
{
	static const struct { const char *key; AttnMatrix m; } mats[] = {
		{ "W_iq", AM_DSA_W_IQ }, { "W_ik", AM_DSA_W_IK }, { "ik_norm", AM_DSA_K_NORM }, { "ik_norm_bias", AM_DSA_K_BIAS },
		{ "W_iw", AM_DSA_W_IW }, { "index_q", AM_INDEX_Q }, { "index_k", AM_INDEX_K }, { "index_w", AM_INDEX_W },
		{ "index_scores", AM_INDEX_SCORES }, { "index_kept", AM_INDEX_KEPT },
	};
	const DsaParams *p = &attn_params(a)->dsa;
	cJSON *d, *heads;

	if (!p->on)
		return 0;
	if ((d = cJSON_AddObjectToObject(o, "dsa")) == NULL || add_number(d, "index_n_heads", p->heads) ||
	    add_number(d, "index_head_dim", p->dim) || add_number(d, "index_topk", p->topk) || add_number(d, "eps", p->eps))
		return -1;
	for (size_t i = dump_weights ? 0 : 5; i < sizeof mats / sizeof mats[0]; i++) /* the first 5 are weights */
		if (attn_matrix(a, mats[i].m, 0) != NULL && add_matrix(d, mats[i].key, attn_matrix(a, mats[i].m, 0)))
			return -1;
	if ((heads = cJSON_AddArrayToObject(d, "heads")) == NULL)
		return -1;
	for (int h = 0; h < a->heads; h++) {
		cJSON *one = cJSON_CreateObject();
		if (one == NULL || !cJSON_AddItemToArray(heads, one) || add_matrix(one, "dense_weights", &a->head[h].dense_weights))
			return -1;
	}
	return 0;
}

/*
 * "diff_attn" (differential attention, issue 24 §4; nothing without it): λ's
 * parts, eps, and "pairs", one object per pair of heads (head 2p's copy:
 * both heads of a pair hold the same) with its A1, A2, weights (A1 − λ·A2),
 * O, rms and out.
 */
static int add_diff(cJSON *o, const Attn *a)
{
	static const struct { const char *key; AttnMatrix m; } mats[] = {
		{ "a1", AM_DIFF_A1 }, { "a2", AM_DIFF_A2 }, { "weights", AM_DIFF_A }, { "o", AM_DIFF_O },
		{ "rms", AM_DIFF_RMS }, { "out", AM_DIFF_OUT },
	};
	const DiffParams *p = &attn_params(a)->diff;
	cJSON *d, *pairs;

	if (!p->on)
		return 0;
	if ((d = cJSON_AddObjectToObject(o, "diff_attn")) == NULL || add_number(d, "lambda_1", MAT_AT(a->diff_lambda, 0, 0)) ||
	    add_number(d, "lambda_2", MAT_AT(a->diff_lambda, 0, 1)) || add_number(d, "lambda_init", p->lambda_init) ||
	    add_number(d, "lambda", MAT_AT(a->diff_lambda, 0, 3)) || add_number(d, "eps", p->eps) ||
	    add_matrix(d, "lambda_q1", &p->lq1) || add_matrix(d, "lambda_k1", &p->lk1) || add_matrix(d, "lambda_q2", &p->lq2) ||
	    add_matrix(d, "lambda_k2", &p->lk2) || add_matrix(d, "subln", &p->subln) ||
	    (pairs = cJSON_AddArrayToObject(d, "pairs")) == NULL)
		return -1;
	for (int h = 0; h < a->heads; h += 2) {
		cJSON *one = cJSON_CreateObject();
		if (one == NULL || !cJSON_AddItemToArray(pairs, one))
			return -1;
		for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++)
			if (add_matrix(one, mats[k].key, attn_slot_const(a, mats[k].m, h)))
				return -1;
	}
	return 0;
}

/* The attention of one layer: Q, K, V, heads, concat, output. */
static int add_attention(cJSON *o, const Attn *a)
{
	return add_matrix(o, "Q", &a->Q) || add_matrix(o, "K", &a->K) || add_matrix(o, "V", &a->V) ||
	       add_reads(o, a) ||
	       !cJSON_AddItemToObject(o, "heads", dump_heads(a)) || add_mla(o, a) || add_dsa(o, a) ||
	       add_matrix(o, "concat", &a->concat) ||
	       add_gated(o, a) ||
	       add_matrix(o, "output", &a->output) ||
	       (attn_config(a)->flash_bq > 0 && !cJSON_AddItemToObject(o, "flash", dump_flash(a))) || add_linear(o, a);
}

/*
 * One layer of a block lesson: its sizes and parameters (lesson keys; the
 * block's as ln1_gamma, ffn_W_1, …), "attn", then the block's matrices in
 * the order they are computed, and the layer's "output".
 */

void dump_set_weights(int on)
{
	dump_weights = on;
}

/* The head scores a model's dump adds (dump_set_head_scores): off for lessons, so their dumps stay as they were. */
static struct {
	int on, layers, heads;
	const HeadScore *induction;
} dump_hs;

void dump_set_head_scores(int on, const HeadScore *induction, int layers, int heads)
{
	dump_hs.on = on;
	dump_hs.induction = induction;
	dump_hs.layers = layers;
	dump_hs.heads = heads;
}

/* One score: its mean, or null when no row can have it. */
static int add_score(cJSON *o, const char *key, const HeadScore *s)
{
	return (s != NULL && s->rows > 0 ? add_number(o, key, s->mean) : cJSON_AddNullToObject(o, key) == NULL) ? -1 : 0;
}

/* "head_scores": a list per layer, an object per head with its four scores (headscores.h). */
static int add_head_scores(cJSON *o, const Attn *a)
{
	static const char *const keys[HS_COUNT] = { "previous_token", "first_token", "diagonal", "induction" };
	cJSON *all;
	int i = 0;

	if (!dump_hs.on)
		return 0;
	if ((all = cJSON_AddArrayToObject(o, "head_scores")) == NULL)
		return -1;
	for (const Attn *x = a; x != NULL; x = x->next, i++) {
		cJSON *layer = cJSON_CreateArray();
		if (layer == NULL || !cJSON_AddItemToArray(all, layer)) {
			cJSON_Delete(layer);
			return -1;
		}
		for (int h = 0; h < x->heads; h++) {
			HeadScores sc;
			cJSON *head = cJSON_CreateObject();
			if (head == NULL || !cJSON_AddItemToArray(layer, head)) {
				cJSON_Delete(head);
				return -1;
			}
			headscores_of(x, h, &sc);
			if (dump_hs.induction != NULL && i < dump_hs.layers && h < dump_hs.heads)
				sc.s[HS_INDUCTION] = dump_hs.induction[(size_t)i * (size_t)dump_hs.heads + (size_t)h];
			for (int k = 0; k < HS_COUNT; k++)
				if (add_score(head, keys[k], &sc.s[k]) != 0)
					return -1;
		}
	}
	return 0;
}

static cJSON *dump_layer(const Attn *a)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = dump_weights ? attn_weights(a) : attn_params(a); /* a real model's weights made doubles to be written */
	const Block *b = &lp->block;
	cJSON *o = cJSON_CreateObject(), *at;
	static const struct { const char *key; AttnMatrix m; } params[] = {
		{ "W_q", AM_W_Q }, { "W_k", AM_W_K }, { "W_v", AM_W_V }, { "W_o", AM_W_O },
	};
	static const struct { const char *key; AttnMatrix m; } vectors[] = {
		{ "b_q", AM_B_Q }, { "b_k", AM_B_K }, { "b_v", AM_B_V }, { "b_o", AM_B_O },
		{ "ln1_gamma", AM_LN1_GAMMA }, { "ln1_beta", AM_LN1_BETA }, { "ln2_gamma", AM_LN2_GAMMA },
		{ "ln2_beta", AM_LN2_BETA }, { "ffn_b_1", AM_B_1 }, { "ffn_b_3", AM_B_3 }, { "ffn_b_2", AM_B_2 },
		{ "final_gamma", AM_FINAL_GAMMA }, { "final_beta", AM_FINAL_BETA }, { "q_norm", AM_Q_NORM_W },
		{ "k_norm", AM_K_NORM_W }, { "sinks", AM_SINKS }, { "ln1_after_gamma", AM_LN1_AFTER_GAMMA },
		{ "ln2_after_gamma", AM_LN2_AFTER_GAMMA },
		{ "k_norm", AM_K_NORM_W }, { "sinks", AM_SINKS }, { "e_score_correction_bias", AM_MOE_E_BIAS },
	};
	static const struct { const char *key; AttnMatrix m; } results[] = {
		{ "norm1", AM_NORM1 }, { "residual1", AM_RESIDUAL1 }, { "ffn_hidden", AM_FFN_HIDDEN },
		{ "ffn_gate", AM_FFN_GATE }, { "ffn_act", AM_FFN_ACT }, { "ffn_out", AM_FFN_OUT },
		{ "norm2", AM_NORM2 }, { "residual2", AM_RESIDUAL2 }, { "final", AM_FINAL },
		/* a mixture of experts (NaN, written null: an expert the token did not choose) */
		{ "router_logits", AM_ROUTER_LOGITS }, { "router_probs", AM_ROUTER_PROBS }, { "moe_weights", AM_MOE_WEIGHTS },
		{ "expert_act", AM_EXPERT_ACT }, { "expert_out", AM_EXPERT_OUT }, { "shared_gate", AM_SHARED_GATE },
		{ "shared_out", AM_SHARED_OUT },
		/* sandwich norms (Gemma): each sublayer's output normalised before its residual */
		{ "norm1_after", AM_NORM1_AFTER }, { "norm2_after", AM_NORM2_AFTER },
		{ "shared_out", AM_SHARED_OUT }, { "router_scores", AM_ROUTER_SCORES }, { "group_scores", AM_GROUP_SCORES },
		{ "scores_for_choice", AM_SCORES_CHOICE },
	};
	size_t i;

	if (o == NULL || add_number(o, "h", lp->heads) || (model_kv_named(lp) && add_number(o, "kv_heads", a->kv_heads)) ||
	    add_number(o, "d_k", lp->d_k) || add_number(o, "d_v", lp->d_v) ||
	    add_number(o, "scale_factor", a->factor) || add_stages(o, a))
		goto fail;
	for (i = 0; dump_weights && i < sizeof params / sizeof params[0]; i++)
		if (attn_matrix(a, params[i].m, 0) != NULL && add_matrix(o, params[i].key, attn_matrix(a, params[i].m, 0)))
			goto fail;
	if (dump_weights && cfg->score == SCORE_ADDITIVE && add_vector(o, "w_e", &lp->w_e))
		goto fail;
	if (dump_weights && b->has_ffn && b->moe.experts == 0 &&
	    (add_matrix(o, "ffn_W_1", &b->W_1) || add_matrix(o, "ffn_W_2", &b->W_2) ||
	     (!mat_empty(&b->W_3) && add_matrix(o, "ffn_W_3", &b->W_3))))
		goto fail;
	if (dump_weights && b->moe.experts > 0 &&
	    (add_matrix(o, "W_router", &b->moe.W_r) || add_matrix(o, "experts_W_1", &b->moe.W_1) ||
	     add_matrix(o, "experts_W_3", &b->moe.W_3) || add_matrix(o, "experts_W_2", &b->moe.W_2) ||
	     (b->moe.shared_ff > 0 &&
	      (add_matrix(o, "shared_W_1", &b->moe.S_1) || add_matrix(o, "shared_W_3", &b->moe.S_3) ||
	       add_matrix(o, "shared_W_2", &b->moe.S_2) ||
	       (!mat_empty(&b->moe.S_gate) && add_matrix(o, "shared_W_gate", &b->moe.S_gate))))))
		goto fail;
	for (i = 0; dump_weights && i < sizeof vectors / sizeof vectors[0]; i++)
		if (attn_matrix(a, vectors[i].m, 0) != NULL && add_vector(o, vectors[i].key, attn_matrix(a, vectors[i].m, 0)))
			goto fail;
	if (add_matrix(o, "input", &cfg->input))
		goto fail;
	at = cJSON_AddObjectToObject(o, "attn");
	if (at == NULL || add_attention(at, a))
		goto fail;
	for (i = 0; i < sizeof results / sizeof results[0]; i++)
		if (attn_matrix(a, results[i].m, 0) != NULL && add_matrix(o, results[i].key, attn_matrix(a, results[i].m, 0)))
			goto fail;
	if (add_matrix(o, "output", attn_block_output(a)))
		goto fail;
	if (cfg->decode && !cJSON_AddItemToObject(o, "decode", dump_decode(a)))
		goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}


/*
 * An encoder–decoder's layer k, from the dumps of its two links (each as
 * dump_layer or dump_layer_grad makes it): the self link's "attn" becomes
 * "self_attn", the cross link's "cross_attn", each with its attention's
 * parameters and sizes; the cross link's block matrices are the layer's
 * second and third sublayers (residual1 → residual2, norm2 → norm3, ln1 →
 * ln2, …), and the layer's output is the cross link's.
 */
static const char *const attn_param_keys[] = { "h", "kv_heads", "d_k", "d_v", "scale_factor", "stages", "W_q", "W_k",
	                                       "W_v", "W_o", "w_e", "b_q", "b_k", "b_v", "b_o", NULL };
static const char *const cross_renames[][2] = {
	{ "residual1", "residual2" }, { "norm1", "norm2" }, { "residual2", "residual3" }, { "norm2", "norm3" },
	{ "ln1_gamma", "ln2_gamma" }, { "ln1_beta", "ln2_beta" }, { "ln2_gamma", "ln3_gamma" }, { "ln2_beta", "ln3_beta" },
};

static int is_attn_param(const char *key)
{
	for (int i = 0; attn_param_keys[i] != NULL; i++)
		if (strcmp(key, attn_param_keys[i]) == 0)
			return 1;
	return 0;
}

/* Move link's items into layer: "attn" (with the attention's parameters) as attn_key, the rest renamed for cross. */
static int move_link(cJSON *layer, cJSON *link, const char *attn_key, int cross)
{
	cJSON *at = cJSON_DetachItemFromObjectCaseSensitive(link, "attn"), *it;

	if (at == NULL || !cJSON_AddItemToObject(layer, attn_key, at)) {
		cJSON_Delete(at);
		return -1;
	}
	while ((it = link->child) != NULL) {
		const char *key = it->string;
		cJSON_DetachItemViaPointer(link, it);
		if (is_attn_param(key)) {
			if (!cJSON_AddItemToObject(at, key, it))
				goto fail;
			continue;
		}
		if ((!cross && strcmp(key, "output") == 0) || (cross && strcmp(key, "input") == 0)) {
			cJSON_Delete(it); /* the self link's output is the cross link's input: the layer's matrices say it */
			continue;
		}
		for (size_t r = 0; cross && r < sizeof cross_renames / sizeof cross_renames[0]; r++)
			if (strcmp(key, cross_renames[r][0]) == 0) {
				key = cross_renames[r][1];
				break;
			}
		if (!cJSON_AddItemToObject(layer, key, it))
			goto fail;
	}
	return 0;
fail:
	cJSON_Delete(it);
	return -1;
}

static cJSON *dump_dec_layer(cJSON *self, cJSON *cross)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL || self == NULL || cross == NULL || move_link(o, self, "self_attn", 0) != 0 ||
	    move_link(o, cross, "cross_attn", 1) != 0) {
		cJSON_Delete(o);
		o = NULL;
	}
	cJSON_Delete(self);
	cJSON_Delete(cross);
	return o;
}

/* The layers of a chain: one object per link, or per decoder layer (two links) in an encoder–decoder. */
static int add_layers(cJSON *layers, const Attn *a, cJSON *(*one)(const Attn *))
{
	for (const Attn *x = a; x != NULL; x = x->next) {
		cJSON *j;
		if (attn_params(x)->part == PART_SELF && x->next != NULL) {
			j = dump_dec_layer(one(x), one(x->next));
			x = x->next;
		} else {
			j = one(x);
		}
		if (j == NULL || !cJSON_AddItemToArray(layers, j)) {
			cJSON_Delete(j);
			return -1;
		}
	}
	return 0;
}

/*
 * The LM head of a lesson with a vocabulary, at the top level: the ids (when
 * given), final_norm (the rows the head reads: the final norm, or the last
 * layer's output), logits (n × vocab, every position) and next (the
 * probabilities of one position's next token, with its row, temperature and
 * top-k entries). Nothing without a vocabulary.
 */
static int add_lm_head(cJSON *o, const Attn *a)
{
	const Attn *last = a;
	const Mat *u;
	cJSON *next, *top, *ids;
	int idx[LESSON_MAX_TOP_K];

	while (last->next != NULL)
		last = last->next;
	const ModelConfig *cfg = attn_config(last);
	if (cfg->vocab <= 0 || mat_empty(&last->logits))
		return 0;
	if (cfg->ids != NULL) {
		if ((ids = cJSON_AddArrayToObject(o, "ids")) == NULL)
			return -1;
		for (int i = 0; i < cfg->n; i++)
			if (!cJSON_AddItemToArray(ids, cJSON_CreateNumber((double)cfg->ids[i])))
				return -1;
	}
	/* a model's dump with its weights (dump_set_weights(2)): the unembedding too (a real model's made doubles) */
	if (dump_weights == 2 && ((u = attn_matrix(last, AM_UNEMBED, 0)) == NULL || add_matrix(o, "unembed", u)))
		return -1;
	if (add_matrix(o, "final_norm", attn_layer_output(last)) ||
	    (!mat_empty(&last->logits_raw) && add_matrix(o, "logits_raw", &last->logits_raw)) ||
	    add_matrix(o, "logits", &last->logits) ||
	    (next = cJSON_AddObjectToObject(o, "next")) == NULL || add_number(next, "row", attn_logits_row(cfg)) ||
	    add_number(next, "temperature", attn_temperature(cfg)) ||
	    !cJSON_AddItemToObject(next, "probs", jw_numbers(last->next_p.a, cfg->vocab)) ||
	    (top = cJSON_AddArrayToObject(next, "top")) == NULL)
		return -1;
	const int k = attn_top_entries(last->next_p.a, cfg->vocab, attn_top_k(cfg) < LESSON_MAX_TOP_K ? attn_top_k(cfg) : LESSON_MAX_TOP_K, idx);
	for (int i = 0; i < k; i++)
		if (!cJSON_AddItemToArray(top, cJSON_CreateNumber(idx[i])))
			return -1;
	return 0;
}

/* A lesson with a block or layers: the input, every layer, and the last layer's output (an encoder's: no title). */
static cJSON *dump_block(const Attn *a, int encoder, char **err)
{
	const Lesson *l = a->top; /* the course: its version and title */
	const ModelConfig *cfg = attn_config(a);
	cJSON *o = cJSON_CreateObject(), *layers, *rows;
	if (o == NULL || add_number(o, "attnviz", l->version) ||
	    !cJSON_AddStringToObject(o, "title", encoder ? "" : text_get(&l->title, "en")) || add_number(o, "n", cfg->n) ||
	    add_number(o, "d_model", cfg->d_model) || add_number(o, "layers_count", a->nlayers > 0 ? a->nlayers : 1) ||
	    !cJSON_AddItemToObject(o, "tokens", dump_strings(cfg->tokens, cfg->n)) || add_matrix(o, "input", &cfg->input) ||
	    (!mat_empty(&a->PE) && add_matrix(o, "PE", &a->PE)) || add_matrix(o, "X", &a->X))
		goto oom;
	layers = cJSON_AddArrayToObject(o, "layers");
	if (layers == NULL)
		goto oom;
	if (add_layers(layers, a, dump_layer) != 0)
		goto oom;
	if (add_matrix(o, "output", attn_final_output(a)) || add_lm_head(o, a) || (!encoder && add_head_scores(o, a)))
		goto oom;
	if (a->encoder != NULL) {
		cJSON *e = dump_block(a->encoder, 1, err);
		if (e == NULL || !cJSON_AddItemToObject(o, "encoder", e)) {
			cJSON_Delete(e);
			goto oom;
		}
	}
	rows = cJSON_AddArrayToObject(o, "row_all_masked");
	if (rows == NULL)
		goto oom;
	for (int i = 0; i < cfg->n; i++)
		if (a->row_all_masked[i] && !cJSON_AddItemToArray(rows, cJSON_CreateNumber(i)))
			goto oom;
	return o;
oom:
	cJSON_Delete(o);
	*err = strdup("out of memory writing the dump");
	return NULL;
}

/* Each head's gradients: weighted, weights, masked, scaled, scores. */
static cJSON *dump_grad_heads(const Attn *a)
{
	cJSON *heads = cJSON_CreateArray();

	for (int h = 0; heads != NULL && h < a->heads; h++) {
		const GradHead *gh = &a->grad->head[h];
		cJSON *o = cJSON_CreateObject();
		if (o == NULL || !cJSON_AddItemToArray(heads, o) || add_matrix(o, "weighted", &gh->weighted) ||
		    add_matrix(o, "weights", &gh->weights) || add_matrix(o, "masked", &gh->masked) ||
		    add_matrix(o, "scaled", &gh->scaled) || add_matrix(o, "scores", &gh->scores)) {
			cJSON_Delete(heads);
			return NULL;
		}
	}
	return heads;
}

/* A gradient under key when the lesson has that matrix: a matrix, or flat like its parameter (vectors). */
static int add_grad(cJSON *o, const char *key, const Mat *g, int flat)
{
	if (mat_empty(g))
		return 0;
	return flat ? add_vector(o, key, g) : add_matrix(o, key, g);
}

/* The attention's gradients, keys as in its forward dump: output … w_e, sinks, and gated attention's. */
static int add_attention_grad(cJSON *o, const Attn *a)
{
	const AttnGrad *g = a->grad;

	return add_matrix(o, "output", &g->output) || add_matrix(o, "concat", &g->concat) ||
	       add_grad(o, "W_o", &g->W_o, 0) || add_grad(o, "b_o", &g->b_o, 1) ||
	       !cJSON_AddItemToObject(o, "heads", dump_grad_heads(a)) || add_matrix(o, "Q", &g->Q) ||
	       add_matrix(o, "K", &g->K) || add_matrix(o, "V", &g->V) || add_matrix(o, "W_q", &g->W_q) ||
	       add_matrix(o, "W_k", &g->W_k) || add_matrix(o, "W_v", &g->W_v) || add_grad(o, "b_q", &g->b_q, 1) ||
	       add_grad(o, "b_k", &g->b_k, 1) || add_grad(o, "b_v", &g->b_v, 1) || add_grad(o, "w_e", &g->w_e, 1) ||
	       add_grad(o, "sinks", &g->sinks, 1) || add_grad(o, "gated", &g->gated, 0) ||
	       add_grad(o, "gate", &g->gate, 0) || add_grad(o, "W_gate", &g->W_gate, 0) ||
	       add_grad(o, "b_gate", &g->b_gate, 0);
}

/* One layer's gradients in a block lesson: "attn", the block's matrices and parameters. */
static cJSON *dump_layer_grad(const Attn *a)
{
	const AttnGrad *g = a->grad;
	cJSON *o = cJSON_CreateObject(), *at;
	static const struct { const char *key; size_t off; int flat; } block[] = {
		{ "residual1", offsetof(AttnGrad, residual1), 0 }, { "norm1", offsetof(AttnGrad, norm1), 0 },
		{ "ffn_hidden", offsetof(AttnGrad, ffn_hidden), 0 }, { "ffn_gate", offsetof(AttnGrad, ffn_gate), 0 },
		{ "ffn_act", offsetof(AttnGrad, ffn_act), 0 }, { "ffn_out", offsetof(AttnGrad, ffn_out), 0 },
		{ "residual2", offsetof(AttnGrad, residual2), 0 }, { "norm2", offsetof(AttnGrad, norm2), 0 },
		{ "output", offsetof(AttnGrad, block_out), 0 },
		{ "ln1_gamma", offsetof(AttnGrad, ln1_gamma), 1 }, { "ln1_beta", offsetof(AttnGrad, ln1_beta), 1 },
		{ "ln2_gamma", offsetof(AttnGrad, ln2_gamma), 1 }, { "ln2_beta", offsetof(AttnGrad, ln2_beta), 1 },
		{ "ffn_W_1", offsetof(AttnGrad, W_1), 0 }, { "ffn_b_1", offsetof(AttnGrad, b_1), 1 },
		{ "ffn_W_3", offsetof(AttnGrad, W_3), 0 }, { "ffn_b_3", offsetof(AttnGrad, b_3), 1 },
		{ "ffn_W_2", offsetof(AttnGrad, W_2), 0 }, { "ffn_b_2", offsetof(AttnGrad, b_2), 1 },
		/* a mixture of experts (keys as its forward dump's; gpt-oss's biases as the lesson's ffn keys) */
		{ "router_logits", offsetof(AttnGrad, router_logits), 0 }, { "moe_weights", offsetof(AttnGrad, moe_weights), 0 },
		{ "W_router", offsetof(AttnGrad, W_r), 0 }, { "router_bias", offsetof(AttnGrad, b_r), 0 },
		{ "experts_W_1", offsetof(AttnGrad, moe_W_1), 0 }, { "experts_W_3", offsetof(AttnGrad, moe_W_3), 0 },
		{ "experts_W_2", offsetof(AttnGrad, moe_W_2), 0 }, { "experts_b_1", offsetof(AttnGrad, moe_b_1), 0 },
		{ "experts_b_3", offsetof(AttnGrad, moe_b_3), 0 }, { "experts_b_2", offsetof(AttnGrad, moe_b_2), 0 },
		{ "shared_W_1", offsetof(AttnGrad, S_1), 0 }, { "shared_W_3", offsetof(AttnGrad, S_3), 0 },
		{ "shared_W_2", offsetof(AttnGrad, S_2), 0 }, { "shared_W_gate", offsetof(AttnGrad, S_gate), 0 },
	};

	at = o != NULL ? cJSON_AddObjectToObject(o, "attn") : NULL;
	if (at == NULL || add_attention_grad(at, a))
		goto fail;
	for (size_t i = 0; i < sizeof block / sizeof block[0]; i++)
		if (add_grad(o, block[i].key, (const Mat *)((const char *)g + block[i].off), block[i].flat))
			goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* A stack's gradients: output, X, layers, the final norm's, and the encoder's (grad.encoder). */
static int add_stack_grad(cJSON *g, const Attn *a)
{
	const Attn *last = a;
	cJSON *layers, *e;

	while (last->next != NULL)
		last = last->next;
	if (add_matrix(g, "output", mat_empty(&last->grad->final) ? &last->grad->block_out : &last->grad->final) ||
	    add_matrix(g, "X", &a->grad->input) || (layers = cJSON_AddArrayToObject(g, "layers")) == NULL ||
	    add_layers(layers, a, dump_layer_grad) != 0)
		return -1;
	if (add_grad(g, "final_norm_gamma", &last->grad->final_gamma, 1) ||
	    add_grad(g, "final_norm_beta", &last->grad->final_beta, 1))
		return -1;
	if (a->encoder != NULL && a->encoder->grad != NULL &&
	    ((e = cJSON_AddObjectToObject(g, "encoder")) == NULL || add_stack_grad(e, a->encoder) != 0))
		return -1;
	return 0;
}

/*
 * "loss" and "grad" (and "train" after --train): the gradient of the loss
 * with respect to every matrix, keys as in the forward dump.
 */
static int add_backward(cJSON *o, const Attn *a)
{
	const LayerParams *lp = attn_params(a);
	const Attn *last = a;
	char *e = NULL;
	cJSON *g;

	if (a->grad == NULL)
		return 0;
	if (attn_grads_ready(a, &e) != 0) { /* left by an edit for their first reader: made now */
		free(e);
		return -1;
	}
	while (last->next != NULL)
		last = last->next;
	if (add_number(o, "loss", a->loss) || (g = cJSON_AddObjectToObject(o, "grad")) == NULL)
		return -1;
	if (lp->block.present || a->nlayers > 0) {
		if (add_stack_grad(g, a) != 0)
			return -1;
	} else if (add_attention_grad(g, a) || add_matrix(g, "X", &a->grad->X) || add_grad(g, "S", &a->grad->S, 0)) {
		return -1;
	}
	if (a->train_loss != NULL) {
		cJSON *t = cJSON_AddObjectToObject(o, "train");
		if (t == NULL || add_number(t, "steps", a->train_steps) || add_number(t, "lr", a->train_lr) ||
		    !cJSON_AddItemToObject(t, "loss", jw_numbers(a->train_loss, a->train_steps + 1)))
			return -1;
	}
	return 0;
}

cJSON *dump_attn(const Attn *a, char **err)
{
	const Lesson *l = a->top; /* the course: its version, title and compare */
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	cJSON *o, *rows;
	int i;

	*err = NULL;
	if (lp->block.present || a->nlayers > 0) {
		o = dump_block(a, 0, err);
		if (o != NULL && add_backward(o, a) != 0) {
			cJSON_Delete(o);
			*err = strdup("out of memory writing the dump");
			return NULL;
		}
		if (o != NULL && add_compare(o, l, err) != 0) {
			cJSON_Delete(o);
			return NULL;
		}
		return o;
	}
	o = cJSON_CreateObject();
	if (o == NULL)
		goto oom;
	if (add_number(o, "attnviz", l->version > 0 ? l->version : 1) || !cJSON_AddStringToObject(o, "title", text_get(&l->title, "en")) ||
	    add_number(o, "n", cfg->n) || add_number(o, "m", cfg->m) || add_number(o, "d_model", cfg->d_model) ||
	    add_number(o, "h", lp->heads) || (model_kv_named(lp) && add_number(o, "kv_heads", a->kv_heads)) ||
	    add_number(o, "d_k", lp->d_k) || add_number(o, "d_v", lp->d_v) ||
	    add_number(o, "scale_factor", a->factor) || add_stages(o, a) ||
	    !cJSON_AddItemToObject(o, "tokens", dump_strings(cfg->tokens, cfg->n)))
		goto oom;
	if (cfg->has_source && !cJSON_AddItemToObject(o, "source_tokens", dump_strings(cfg->source_tokens, cfg->m)))
		goto oom;
	if ((!lp->mla.on || !mat_empty(&lp->W_q)) && add_matrix(o, "W_q", &lp->W_q))
		goto oom;
	if (!lp->mla.on && (add_matrix(o, "W_k", &lp->W_k) || add_matrix(o, "W_v", &lp->W_v))) /* MLA has none */
		goto oom;
	if (!mat_empty(&lp->W_o) && add_matrix(o, "W_o", &lp->W_o))
		goto oom;
	if (cfg->score == SCORE_ADDITIVE &&
	    !cJSON_AddItemToObject(o, "w_e", jw_numbers(lp->w_e.a, lp->w_e.cols)))
		goto oom;
	if (add_vector(o, "b_q", &lp->b_q) || add_vector(o, "b_k", &lp->b_k) || add_vector(o, "b_v", &lp->b_v) ||
	    add_vector(o, "b_o", &lp->b_o))
		goto oom;
	if (add_matrix(o, "input", &cfg->input))
		goto oom;
	if (!mat_empty(&a->PE) && add_matrix(o, "PE", &a->PE))
		goto oom;
	if (add_matrix(o, "X", &a->X))
		goto oom;
	if (cfg->has_source) {
		if (add_matrix(o, "source_input", &cfg->source_input) ||
		    (!mat_empty(&a->PE_src) && add_matrix(o, "PE_src", &a->PE_src)) || add_matrix(o, "S", &a->S))
			goto oom;
	}
	if (add_matrix(o, "Q", &a->Q) || add_matrix(o, "K", &a->K) || add_matrix(o, "V", &a->V))
		goto oom;
	if (add_reads(o, a))
		goto oom;
	if (!cJSON_AddItemToObject(o, "heads", dump_heads(a)))
		goto oom;
	if (add_mla(o, a) || add_dsa(o, a))
		goto oom;
	if (add_diff(o, a))
		goto oom;
	if (add_matrix(o, "concat", &a->concat) || add_gated(o, a) ||
	    add_matrix(o, "output", mat_empty(&a->output) ? &a->concat : &a->output))
		goto oom;
	if (cfg->flash_bq > 0 && !cJSON_AddItemToObject(o, "flash", dump_flash(a)))
		goto oom;
	if (add_linear(o, a))
		goto oom;
	if (cfg->decode && !cJSON_AddItemToObject(o, "decode", dump_decode(a)))
		goto oom;
	if (add_lm_head(o, a))
		goto oom;
	rows = cJSON_AddArrayToObject(o, "row_all_masked");
	if (rows == NULL)
		goto oom;
	for (i = 0; i < cfg->n; i++)
		if (a->row_all_masked[i] && !cJSON_AddItemToArray(rows, cJSON_CreateNumber(i)))
			goto oom;
	if (add_backward(o, a) != 0)
		goto oom;
	if (add_compare(o, l, err) != 0) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
oom:
	cJSON_Delete(o);
	*err = strdup("out of memory writing the dump");
	return NULL;
}

/* s as cJSON prints a string (its print_string_ptr): ", \\ and control characters escaped, the rest as it is. */
static void write_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
	static const char esc[] = { ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't' };

	fputc('"', f);
	for (; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < sizeof esc && esc[*p] != 0)
			fprintf(f, "\\%c", esc[*p]);
		else if (*p < 32)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/*
 * The dump's tree printed to f byte for byte as cJSON_Print (or, compact,
 * cJSON_PrintUnformatted) prints it, at the depth cJSON would be at: objects
 * one key a line, indented by tabs; arrays on one line. A matrix the tree
 * stands in for (add_lazy) is printed from the Attn. -1 when out of memory.
 */
static int write_item(FILE *f, const cJSON *it, int depth, int compact, Lazy *lz)
{
	const cJSON *c;
	char num[64];

	switch (it->type & 0xFF) {
	case cJSON_NULL: fputs("null", f); return 0;
	case cJSON_False: fputs("false", f); return 0;
	case cJSON_True: fputs("true", f); return 0;
	case cJSON_Raw: fputs(it->valuestring, f); return 0;
	case cJSON_String: write_string(f, it->valuestring); return 0;
	case cJSON_Number:
		if (!cJSON_PrintPreallocated((cJSON *)it, num, sizeof num, 0))
			return -1;
		fputs(num, f);
		return 0;
	case cJSON_Array:
		if (it->child == NULL && it->valueint > 0 && it->valueint <= lz->nmat) {
			const LazyMat *lm = &lz->mat[it->valueint - 1];
			const Mat *m = lm->mat != NULL ? lm->mat : attn_matrix(lm->attn, lm->which, lm->head);
			if (m == NULL)
				return -1;
			jw_fput_matrix(f, m, compact);
			return 0;
		}
		fputc('[', f);
		for (c = it->child; c != NULL; c = c->next) {
			if (write_item(f, c, depth + 1, compact, lz) != 0)
				return -1;
			if (c->next != NULL)
				fputs(compact ? "," : ", ", f);
		}
		fputc(']', f);
		return 0;
	case cJSON_Object:
		fputs(compact ? "{" : "{\n", f);
		for (c = it->child; c != NULL; c = c->next) {
			for (int i = 0; !compact && i <= depth; i++)
				fputc('\t', f);
			write_string(f, c->string);
			fputs(compact ? ":" : ":\t", f);
			if (write_item(f, c, depth + 1, compact, lz) != 0)
				return -1;
			if (c->next != NULL)
				fputc(',', f);
			if (!compact)
				fputc('\n', f);
		}
		for (int i = 0; !compact && i < depth; i++)
			fputc('\t', f);
		fputc('}', f);
		return 0;
	default:
		return -1;
	}
}

double dump_count_numbers(const Attn *first)
{
	double total = 0;

	for (const Attn *a = first; a != NULL; a = a->next) {
		const ModelConfig *cfg = attn_config(a);
		const LayerParams *lp = attn_params(a);
		const double n = cfg->n, m = cfg->m, h = a->heads;
		total += lesson_model_count_numbers(cfg, lp);
		if (cfg->flash_bq > 0 && cfg->flash_bk > 0) /* each tile's m, l (bq each) and O (bq × d_v); each head's output */
			total += h * (ceil(n / cfg->flash_bq) * ceil(m / cfg->flash_bk) * cfg->flash_bq * (2.0 + lp->d_v) + n * lp->d_v);
		if (cfg->decode) /* row t: q, up to t + 1 rows of K and V, per head scores, weights, weighted; the outputs */
			total += n * ((double)a->dec_q.cols + a->dec_output.cols + cfg->d_model) +
			         n * (n + 1) / 2 * ((double)a->cache_K.cols + a->cache_V.cols) + h * (n * (n + 1) + n * lp->d_v);
		if (a->encoder != NULL)
			total += dump_count_numbers(a->encoder);
	}
	return total;
}

int dump_write(FILE *f, const Attn *a, int compact, char **err)
{
	Lazy lz = { NULL, 0, 0, { NULL }, 0 };
	const double count = dump_count_numbers(a);
	cJSON *o;
	int r = -1;

	*err = NULL;
	if (count > (double)DUMP_MAX_NUMBERS) {
		*err = str_printf(_("the dump would write about %.0f numbers, over the limit of %ld (DUMP_MAX_NUMBERS); "
		                    "nothing was written (a smaller n, or no \"decode\" or \"flash\", makes it fit)"),
		                  count, (long)DUMP_MAX_NUMBERS);
		return -1;
	}
	lazy_ctx = &lz;
	o = dump_attn(a, err);
	lazy_ctx = NULL;
	if (o != NULL)
		r = write_item(f, o, 0, compact, &lz);
	cJSON_Delete(o);
	if (r != 0 && *err == NULL)
		*err = strdup("out of memory writing the dump");
	lazy_free(&lz);
	return r;
}
