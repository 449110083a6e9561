/* mla.h: multi-head latent attention (DeepSeek-V2/V3, issue 24 §1), the
 * forward pass in both of its forms and what its cache keeps.
 *
 * Not yet a lesson variant (no FEAT_ bit, stage or pane): the numbers, the
 * reader of its "mla" object with errors at JSON paths, and the cache table,
 * checked against PyTorch (tests/golden/mla/, tests/unit_mla.c), for the
 * stages that will show them. Row convention (x·W, W = d_in × d_out), as the
 * rest of the engine.
 */
#ifndef ATTNVIZ_MLA_H
#define ATTNVIZ_MLA_H

#include "base/jsonread.h"
#include "base/matrix.h"

/*
 * One MLA layer's settings and weights ("mla" in a lesson):
 *   q_lora_rank r (0: no query compression, W_q instead), kv_lora_rank c,
 *   d_nope = qk_nope_head_dim, d_rope = qk_rope_head_dim, d_v = v_head_dim.
 */
typedef struct MlaWeights {
	int heads, q_lora_rank, kv_lora_rank, d_nope, d_rope, d_v;
	double rope_theta, eps;
	Mat W_q;              /* d_model × h·(d_nope + d_rope), when q_lora_rank is 0 */
	Mat W_qa, q_a_norm;   /* d_model × r, 1 × r */
	Mat W_qb;             /* r × h·(d_nope + d_rope) */
	Mat W_kva;            /* d_model × (c + d_rope): [c_KV | k_pe] before the norm */
	Mat kv_a_norm;        /* 1 × c */
	Mat W_kvb;            /* c × h·(d_nope + d_v): per head [W^K (d_nope) | W^V (d_v)] */
	Mat W_o;              /* h·d_v × d_model */
} MlaWeights;

/*
 * Everything a causal MLA layer computes on X (n × d_model); head h's
 * columns of a per-head matrix are [h·w, (h+1)·w).
 *   c_Q      n × r        RMSNorm(X·W_qa)·q_a_norm (empty without q_lora_rank)
 *   c_KV     n × c        RMSNorm(X·W_kva[:, :c])·kv_a_norm: the latent the cache keeps
 *   k_pe     n × d_rope   X·W_kva[:, c:], before RoPE;  k_pe_rot after it (one for every head)
 *   q_nope   n × h·d_nope;  q_pe  n × h·d_rope (turned)
 *   Q, K     n × h·(d_nope + d_rope): per head [q_nope | q_pe], [k_nope | k_pe_rot]
 *   V        n × h·d_v
 *   scores   h matrices n × n: q·k, unscaled;  weights: softmax(scores/√(d_nope + d_rope) + causal mask)
 *   concat   n × h·d_v;  output n × d_model
 * The absorbed form: q_tilde n × h·c (q_nope_h · W^K_hᵀ), absorbed[h] = q_tilde_h·c_KVᵀ + q_pe_h·k_pe_rotᵀ,
 * absorbed_concat per head (Σ_j p_ij c_KV_j)·W^V_h; max_*_diff the largest distance between the forms.
 */
typedef struct MlaResult {
	int n, heads;
	Mat c_Q, c_KV, k_pe, k_pe_rot, q_nope, q_pe, Q, K, V;
	Mat *scores, *weights; /* heads of them */
	Mat concat, output;
	Mat q_tilde;
	Mat *absorbed;         /* heads of them */
	Mat absorbed_concat;
	double max_score_diff, max_concat_diff;
} MlaResult;

/* Read "mla" (obj) for inputs of d_model columns into w (zeroed first): 0, or -1 with the error at its JSON path. */
int mla_read(JrCtx *c, const cJSON *obj, int d_model, MlaWeights *w);
void mla_weights_free(MlaWeights *w);
/* The part of w that does not fit X's d_model columns or itself, or NULL (the engine's own guard). */
const char *mla_fault(const MlaWeights *w, int d_model);
/* Both forms on X (n × d_model), causal: 0, or -1 out of memory or on a fault (r then holds nothing). */
int mla_forward(const MlaWeights *w, const Mat *X, MlaResult *r);
void mla_result_free(MlaResult *r);

/*
 * What a layer's KV cache keeps per token, in numbers: MHA every head's k
 * and v, h·(d_k + d_v); GQA g heads' of them, g·(d_k + d_v); MQA one head's,
 * d_k + d_v; MLA the latent and the shared RoPE key, c + d_rope
 * (d_k = d_nope + d_rope).
 */
typedef struct MlaCache {
	long long mha, gqa, mqa, mla;
	int groups;
} MlaCache;
MlaCache mla_cache(int heads, int d_nope, int d_rope, int d_v, int kv_lora_rank, int groups);
/* DeepSeek-V3's sizes (its config.json): 61 layers, 128 heads, c 512, d_rope 64, d_nope 128, d_v 128; GQA with 8 groups. */
enum { MLA_V3_LAYERS = 61, MLA_V3_HEADS = 128, MLA_V3_KV_LORA = 512, MLA_V3_ROPE = 64, MLA_V3_NOPE = 128, MLA_V3_V = 128,
       MLA_V3_GROUPS = 8 };
/*
 * The table of what MHA, GQA, MQA and MLA keep per token: per layer in
 * numbers and in bytes at bytes_per_number, and over layers layers, one
 * line each, with a heading (words translated). Heap string, NULL out of memory.
 */
char *mla_cache_table(const MlaCache *t, int layers, int bytes_per_number);

#endif
