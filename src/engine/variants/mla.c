/* mla.c: multi-head latent attention as DeepSeek-V2/V3 compute it (issue 24 §1).
 *
 * Following transformers' models/deepseek_v3/modeling_deepseek_v3.py,
 * DeepseekV3Attention.forward: the query from a compressed c_Q =
 * RMSNorm(x·W_qa) (q_a_layernorm), q = c_Q·W_qb (or x·W_q), split per head
 * into q_nope and q_pe; [c_KV | k_pe] = x·W_kva (kv_a_proj_with_mqa);
 * [k_nope | v] = RMSNorm(c_KV)·W_kvb per head (kv_a_layernorm, kv_b_proj);
 * q_pe and the one k_pe every head shares turned by RoPE in DeepSeek's
 * interleaved pairs (apply_rotary_pos_emb_interleave: pair (2i, 2i+1) turns
 * by p·θ^(−2i/d_rope), the turned evens written first, then the odds);
 * scores q_nope·k_nope + q_pe·k_pe scaled by 1/√(d_nope + d_rope), a causal
 * mask, softmax, the weighted sum of v, W_o. Then the absorbed form that
 * the cache makes possible: W^K folded into the query (q̃ = q_nope·W^Kᵀ),
 * scores q̃·c_KV + q_pe·k_pe, and W^V applied after the sum over c_KV.
 */
#include "engine/variants/mla.h"
#include "base/i18n.h"
#include "base/strbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- reading "mla" */

/* obj[key] as rows × cols numbers (vec: a vector [a, b, …] of 1 × cols; else [[…], …]). 0, 1 absent, -1 an error. */
static int read_mat(JrCtx *c, const cJSON *obj, const char *key, int vec, int rows, int cols, const char *why, Mat *out)
{
	size_t old;
	const cJSON *v = jr_enter(c, obj, key, &old);

	if (v == NULL)
		return 1;
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != (vec ? cols : rows)) {
		if (vec)
			jr_fail(c, _("expected %d numbers (%s), got %s"), cols, why, jr_got(v).s);
		else
			jr_fail(c, _("expected %d rows (%s), got %s"), rows, why, jr_got(v).s);
		return jr_leave(c, old, -1);
	}
	if (mat_alloc(out, rows, cols) != 0)
		return jr_leave(c, old, jr_fail_oom(c));
	for (int i = 0; i < rows; i++) {
		const cJSON *row = vec ? v : cJSON_GetArrayItem(v, i);
		size_t old2 = vec ? c->pathlen : jr_path_index(c, i);
		if (!cJSON_IsArray(row) || cJSON_GetArraySize(row) != cols) {
			jr_fail(c, _("expected a row of %d numbers (%s), got %s"), cols, why, jr_got(row).s);
			return jr_leave(c, old, -1);
		}
		for (int j = 0; j < cols; j++) {
			size_t old3 = jr_path_index(c, j);
			if (jr_read_finite(c, cJSON_GetArrayItem(row, j), &MAT_AT(*out, i, j)) != 0)
				return jr_leave(c, old, -1);
			jr_path_set(c, old3);
		}
		jr_path_set(c, old2);
		if (vec)
			break;
	}
	return jr_leave(c, old, 0);
}

/* A weight the settings need: absent is an error at its key. */
static int need_mat(JrCtx *c, const cJSON *obj, const char *key, int rows, int cols, const char *why, Mat *out)
{
	const int r = read_mat(c, obj, key, 0, rows, cols, why, out);

	if (r == 1) {
		size_t old = jr_path_key(c, key);
		jr_fail(c, _("missing: %d × %d numbers (%s)"), rows, cols, why);
		jr_path_set(c, old);
		return -1;
	}
	return r;
}

static const char *const mla_keys[] = { "heads", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
	                                "v_head_dim", "rope_theta", "eps", "W_q", "W_qa", "q_a_norm", "W_qb", "W_kva",
	                                "kv_a_norm", "W_kvb", "W_o", NULL };

int mla_read(JrCtx *c, const cJSON *obj, int d_model, MlaWeights *w)
{
	long long v[6] = { 1, 0, 0, 0, 0, 0 };
	static const char *const whole[] = { "heads", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
		                             "v_head_dim" };
	static const char *const expect[] = { N_("a count of heads from 1 to 64"), N_("a rank from 1 to 4096"),
		                              N_("a rank from 1 to 4096"), N_("a width from 1 to 4096"),
		                              N_("an even width from 2 to 4096"), N_("a width from 1 to 4096") };
	static const double lo[] = { 1, 1, 1, 1, 2, 1 }, hi[] = { 64, 4096, 4096, 4096, 4096, 4096 };
	int hq, hkv;

	memset(w, 0, sizeof *w);
	w->rope_theta = 10000.0;
	w->eps = 1e-6;
	if (!cJSON_IsObject(obj))
		return jr_fail(c, _("expected an object {\"kv_lora_rank\": …, \"W_kva\": …, …}, got %s"), jr_got(obj).s);
	if (jr_refuse_unknown_keys(c, obj, mla_keys, "\"mla\"") != 0)
		return -1;
	for (int k = 0; k < 6; k++) {
		if (jr_get(obj, whole[k]) == NULL) {
			if (k == 0 || k == 1)
				continue; /* heads 1, and no query compression, when left out */
			size_t old = jr_path_key(c, whole[k]);
			jr_fail(c, _("missing: %s"), _(expect[k]));
			jr_path_set(c, old);
			return -1;
		}
		if (jr_key_whole(c, obj, whole[k], lo[k], hi[k], _(expect[k]), &v[k]) != 0)
			return -1;
	}
	if (v[4] % 2 != 0) {
		size_t old = jr_path_key(c, "qk_rope_head_dim");
		jr_fail(c, _("needs an even width (k_pe and q_pe turn in pairs of columns), got %lld"), v[4]);
		jr_path_set(c, old);
		return -1;
	}
	w->heads = (int)v[0];
	w->q_lora_rank = (int)v[1];
	w->kv_lora_rank = (int)v[2];
	w->d_nope = (int)v[3];
	w->d_rope = (int)v[4];
	w->d_v = (int)v[5];
	if (jr_key_finite(c, obj, "rope_theta", &w->rope_theta) != 0 || jr_key_finite(c, obj, "eps", &w->eps) != 0)
		goto bad;
	if (!(w->rope_theta > 1) || !(w->eps > 0)) {
		const int t = !(w->rope_theta > 1);
		size_t old = jr_path_key(c, t ? "rope_theta" : "eps");
		jr_fail(c, t ? _("expected a base > 1, got %g") : _("expected a number > 0 (it keeps the norm from dividing by 0), got %g"),
		        t ? w->rope_theta : w->eps);
		jr_path_set(c, old);
		goto bad;
	}
	hq = w->heads * (w->d_nope + w->d_rope);
	hkv = w->heads * (w->d_nope + w->d_v);
	if (w->q_lora_rank == 0) {
		if (jr_get(obj, "W_qa") != NULL || jr_get(obj, "q_a_norm") != NULL || jr_get(obj, "W_qb") != NULL) {
			size_t old = jr_path_key(c, jr_get(obj, "W_qa") != NULL ? "W_qa" : jr_get(obj, "W_qb") != NULL ? "W_qb" : "q_a_norm");
			jr_fail(c, _("needs \"q_lora_rank\" (the compressed query's width); without it the query is x\u00b7W_q"));
			jr_path_set(c, old);
			goto bad;
		}
		if (need_mat(c, obj, "W_q", d_model, hq, _("d_model \u00d7 heads\u00b7(qk_nope_head_dim + qk_rope_head_dim)"),
		             &w->W_q) != 0)
			goto bad;
	} else {
		if (jr_get(obj, "W_q") != NULL) {
			size_t old = jr_path_key(c, "W_q");
			jr_fail(c, _("not with \"q_lora_rank\": the query is RMSNorm(x\u00b7W_qa)\u00b7W_qb"));
			jr_path_set(c, old);
			goto bad;
		}
		if (need_mat(c, obj, "W_qa", d_model, w->q_lora_rank, _("d_model \u00d7 q_lora_rank"), &w->W_qa) != 0 ||
		    need_mat(c, obj, "W_qb", w->q_lora_rank, hq, _("q_lora_rank \u00d7 heads\u00b7(qk_nope_head_dim + qk_rope_head_dim)"),
		             &w->W_qb) != 0)
			goto bad;
		if (read_mat(c, obj, "q_a_norm", 1, 1, w->q_lora_rank, _("q_lora_rank, the norm's weights"), &w->q_a_norm) == -1)
			goto bad;
	}
	if (need_mat(c, obj, "W_kva", d_model, w->kv_lora_rank + w->d_rope, _("d_model \u00d7 (kv_lora_rank + qk_rope_head_dim)"),
	             &w->W_kva) != 0 ||
	    need_mat(c, obj, "W_kvb", w->kv_lora_rank, hkv, _("kv_lora_rank \u00d7 heads\u00b7(qk_nope_head_dim + v_head_dim)"),
	             &w->W_kvb) != 0 ||
	    read_mat(c, obj, "kv_a_norm", 1, 1, w->kv_lora_rank, _("kv_lora_rank, the norm's weights"), &w->kv_a_norm) == -1 ||
	    need_mat(c, obj, "W_o", w->heads * w->d_v, d_model, _("heads\u00b7v_head_dim \u00d7 d_model"), &w->W_o) != 0)
		goto bad;
	/* a norm left out has weights 1, as DeepseekV3RMSNorm starts */
	if (w->q_lora_rank > 0 && mat_empty(&w->q_a_norm)) {
		if (mat_alloc(&w->q_a_norm, 1, w->q_lora_rank) != 0)
			goto oom;
		for (int j = 0; j < w->q_lora_rank; j++)
			w->q_a_norm.a[j] = 1.0;
	}
	if (mat_empty(&w->kv_a_norm)) {
		if (mat_alloc(&w->kv_a_norm, 1, w->kv_lora_rank) != 0)
			goto oom;
		for (int j = 0; j < w->kv_lora_rank; j++)
			w->kv_a_norm.a[j] = 1.0;
	}
	return 0;
oom:
	jr_fail_oom(c);
bad:
	mla_weights_free(w);
	return -1;
}

void mla_weights_free(MlaWeights *w)
{
	Mat *all[] = { &w->W_q, &w->W_qa, &w->q_a_norm, &w->W_qb, &w->W_kva, &w->kv_a_norm, &w->W_kvb, &w->W_o };

	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		mat_free(all[i]);
}

static int mat_is(const Mat *m, int rows, int cols)
{
	return m->rows == rows && m->cols == cols && m->a != NULL;
}

const char *mla_fault(const MlaWeights *w, int d_model)
{
	const int hq = w->heads * (w->d_nope + w->d_rope), hkv = w->heads * (w->d_nope + w->d_v);

	if (w->heads < 1 || w->kv_lora_rank < 1 || w->d_nope < 1 || w->d_rope < 2 || w->d_rope % 2 != 0 || w->d_v < 1 ||
	    w->q_lora_rank < 0 || d_model < 1 || !(w->rope_theta > 1) || !(w->eps > 0))
		return "sizes";
	if (w->q_lora_rank == 0 ? !mat_is(&w->W_q, d_model, hq)
	                        : !mat_is(&w->W_qa, d_model, w->q_lora_rank) || !mat_is(&w->q_a_norm, 1, w->q_lora_rank) ||
	                                  !mat_is(&w->W_qb, w->q_lora_rank, hq))
		return w->q_lora_rank == 0 ? "W_q" : "W_qa";
	if (!mat_is(&w->W_kva, d_model, w->kv_lora_rank + w->d_rope) || !mat_is(&w->kv_a_norm, 1, w->kv_lora_rank))
		return "W_kva";
	if (!mat_is(&w->W_kvb, w->kv_lora_rank, hkv))
		return "W_kvb";
	if (!mat_is(&w->W_o, w->heads * w->d_v, d_model))
		return "W_o";
	return NULL;
}

/* ---------------------------------------------------------------- the forward pass */

/* C (r × c) = A (r × k, row stride lda) · B (k × c, row stride ldb), one sum a cell in order. */
static void mul(int r, int k, int c, const double *A, size_t lda, const double *B, size_t ldb, double *C, size_t ldc)
{
	for (int i = 0; i < r; i++)
		for (int j = 0; j < c; j++) {
			double s = 0.0;
			for (int t = 0; t < k; t++)
				s += A[(size_t)i * lda + (size_t)t] * B[(size_t)t * ldb + (size_t)j];
			C[(size_t)i * ldc + (size_t)j] = s;
		}
}

/* Each row of x (rows × len, stride ld) := x / √(mean(x²) + eps) · g, as DeepseekV3RMSNorm. */
static void rmsnorm_rows(double *x, int rows, int len, size_t ld, const double *g, double eps)
{
	for (int i = 0; i < rows; i++) {
		double *row = &x[(size_t)i * ld], ms = 0.0;
		for (int j = 0; j < len; j++)
			ms += row[j] * row[j];
		const double inv = 1.0 / sqrt(ms / len + eps);
		for (int j = 0; j < len; j++)
			row[j] = g[j] * (row[j] * inv);
	}
}

/*
 * x (d numbers) at position pos turned as apply_rotary_pos_emb_interleave:
 * pair (x[2i], x[2i+1]) by θ_i = pos / theta^(2i/d); out[i] = x[2i]·cos θ_i
 * − x[2i+1]·sin θ_i, out[d/2 + i] = x[2i+1]·cos θ_i + x[2i]·sin θ_i.
 */
static void rope_interleave(const double *x, double *out, int d, int pos, double theta)
{
	for (int i = 0; i < d / 2; i++) {
		const double inv_freq = 1.0 / pow(theta, (double)(2 * i) / d), ang = pos * inv_freq;
		const double c = cos(ang), s = sin(ang), e = x[2 * i], o = x[2 * i + 1];
		out[i] = e * c - o * s;
		out[d / 2 + i] = o * c + e * s;
	}
}

/* Row i of p (n × n): softmax of scores·f over keys j ≤ i (the causal mask), 0 after. */
static void causal_softmax(const Mat *scores, Mat *p, double f)
{
	const int n = scores->rows;

	for (int i = 0; i < n; i++) {
		double mx = -INFINITY, sum = 0.0;
		for (int j = 0; j <= i; j++)
			mx = fmax(mx, MAT_AT(*scores, i, j) * f);
		for (int j = 0; j < n; j++) {
			const double e = j <= i ? exp(MAT_AT(*scores, i, j) * f - mx) : 0.0;
			MAT_AT(*p, i, j) = e;
			sum += e;
		}
		for (int j = 0; j <= i; j++)
			MAT_AT(*p, i, j) /= sum;
	}
}

void mla_result_free(MlaResult *r)
{
	Mat *all[] = { &r->c_Q, &r->c_KV, &r->k_pe, &r->k_pe_rot, &r->q_nope, &r->q_pe, &r->Q, &r->K, &r->V,
		       &r->concat, &r->output, &r->q_tilde, &r->absorbed_concat };

	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		mat_free(all[i]);
	for (int h = 0; h < r->heads; h++) {
		if (r->scores != NULL)
			mat_free(&r->scores[h]);
		if (r->weights != NULL)
			mat_free(&r->weights[h]);
		if (r->absorbed != NULL)
			mat_free(&r->absorbed[h]);
	}
	free(r->scores);
	free(r->weights);
	free(r->absorbed);
	memset(r, 0, sizeof *r);
}

static int alloc_all(const MlaWeights *w, int n, MlaResult *r)
{
	const int H = w->heads, c = w->kv_lora_rank, dq = w->d_nope + w->d_rope;
	int bad = 0;

	r->n = n;
	r->heads = H;
	r->scores = calloc((size_t)H, sizeof *r->scores);
	r->weights = calloc((size_t)H, sizeof *r->weights);
	r->absorbed = calloc((size_t)H, sizeof *r->absorbed);
	if (r->scores == NULL || r->weights == NULL || r->absorbed == NULL)
		return -1;
	if (w->q_lora_rank > 0)
		bad |= mat_alloc(&r->c_Q, n, w->q_lora_rank);
	bad |= mat_alloc(&r->c_KV, n, c) | mat_alloc(&r->k_pe, n, w->d_rope) | mat_alloc(&r->k_pe_rot, n, w->d_rope) |
	       mat_alloc(&r->q_nope, n, H * w->d_nope) | mat_alloc(&r->q_pe, n, H * w->d_rope) |
	       mat_alloc(&r->Q, n, H * dq) | mat_alloc(&r->K, n, H * dq) | mat_alloc(&r->V, n, H * w->d_v) |
	       mat_alloc(&r->concat, n, H * w->d_v) | mat_alloc(&r->output, n, w->W_o.cols) |
	       mat_alloc(&r->q_tilde, n, H * c) | mat_alloc(&r->absorbed_concat, n, H * w->d_v);
	for (int h = 0; h < H; h++)
		bad |= mat_alloc(&r->scores[h], n, n) | mat_alloc(&r->weights[h], n, n) | mat_alloc(&r->absorbed[h], n, n);
	return bad ? -1 : 0;
}

int mla_forward(const MlaWeights *w, const Mat *X, MlaResult *r)
{
	const int n = X->rows, D = X->cols, H = w->heads, c = w->kv_lora_rank, dn = w->d_nope, dr = w->d_rope, dv = w->d_v;
	const int dq = dn + dr, kvw = c + dr, hkv = H * (dn + dv);
	const double f = 1.0 / sqrt((double)dq);
	Mat q = { 0 }, kva = { 0 }, kv = { 0 }, lat = { 0 };

	memset(r, 0, sizeof *r);
	if (mla_fault(w, D) != NULL || n < 1 || alloc_all(w, n, r) != 0 || mat_alloc(&q, n, H * dq) != 0 ||
	    mat_alloc(&kva, n, kvw) != 0 || mat_alloc(&kv, n, hkv) != 0 || mat_alloc(&lat, n, c) != 0)
		goto fail;

	/* the query: c_Q = RMSNorm(X·W_qa), q = c_Q·W_qb; or q = X·W_q */
	if (w->q_lora_rank > 0) {
		mul(n, D, w->q_lora_rank, X->a, (size_t)D, w->W_qa.a, (size_t)w->q_lora_rank, r->c_Q.a, (size_t)w->q_lora_rank);
		rmsnorm_rows(r->c_Q.a, n, w->q_lora_rank, (size_t)w->q_lora_rank, w->q_a_norm.a, w->eps);
		mul(n, w->q_lora_rank, H * dq, r->c_Q.a, (size_t)w->q_lora_rank, w->W_qb.a, (size_t)(H * dq), q.a, (size_t)(H * dq));
	} else {
		mul(n, D, H * dq, X->a, (size_t)D, w->W_q.a, (size_t)(H * dq), q.a, (size_t)(H * dq));
	}
	/* [c_KV | k_pe] = X·W_kva; c_KV normalised; [k_nope | v] = c_KV·W_kvb */
	mul(n, D, kvw, X->a, (size_t)D, w->W_kva.a, (size_t)kvw, kva.a, (size_t)kvw);
	for (int i = 0; i < n; i++) {
		memcpy(&MAT_AT(r->c_KV, i, 0), &MAT_AT(kva, i, 0), (size_t)c * sizeof(double));
		memcpy(&MAT_AT(r->k_pe, i, 0), &MAT_AT(kva, i, c), (size_t)dr * sizeof(double));
		rope_interleave(&MAT_AT(r->k_pe, i, 0), &MAT_AT(r->k_pe_rot, i, 0), dr, i, w->rope_theta);
	}
	rmsnorm_rows(r->c_KV.a, n, c, (size_t)c, w->kv_a_norm.a, w->eps);
	mul(n, c, hkv, r->c_KV.a, (size_t)c, w->W_kvb.a, (size_t)hkv, kv.a, (size_t)hkv);

	/* per head: q_nope, q_pe turned; Q = [q_nope | q_pe], K = [k_nope | k_pe_rot], V */
	for (int i = 0; i < n; i++)
		for (int h = 0; h < H; h++) {
			const double *qh = &MAT_AT(q, i, h * dq), *kvh = &MAT_AT(kv, i, h * (dn + dv));
			double *Qh = &MAT_AT(r->Q, i, h * dq), *Kh = &MAT_AT(r->K, i, h * dq);
			memcpy(&MAT_AT(r->q_nope, i, h * dn), qh, (size_t)dn * sizeof(double));
			rope_interleave(qh + dn, &MAT_AT(r->q_pe, i, h * dr), dr, i, w->rope_theta);
			memcpy(Qh, qh, (size_t)dn * sizeof(double));
			memcpy(Qh + dn, &MAT_AT(r->q_pe, i, h * dr), (size_t)dr * sizeof(double));
			memcpy(Kh, kvh, (size_t)dn * sizeof(double));
			memcpy(Kh + dn, &MAT_AT(r->k_pe_rot, i, 0), (size_t)dr * sizeof(double));
			memcpy(&MAT_AT(r->V, i, h * dv), kvh + dn, (size_t)dv * sizeof(double));
		}

	for (int h = 0; h < H; h++) {
		/* the naive form: scores = Q_h·K_hᵀ, weights, head output */
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++) {
				double s = 0.0;
				for (int t = 0; t < dq; t++)
					s += MAT_AT(r->Q, i, h * dq + t) * MAT_AT(r->K, j, h * dq + t);
				MAT_AT(r->scores[h], i, j) = s;
			}
		causal_softmax(&r->scores[h], &r->weights[h], f);
		for (int i = 0; i < n; i++)
			for (int e = 0; e < dv; e++) {
				double s = 0.0;
				for (int j = 0; j < n; j++)
					s += MAT_AT(r->weights[h], i, j) * MAT_AT(r->V, j, h * dv + e);
				MAT_AT(r->concat, i, h * dv + e) = s;
			}

		/* the absorbed form: q̃ = q_nope·W^Kᵀ (c numbers), scores q̃·c_KV + q_pe·k_pe, (Σ p·c_KV)·W^V */
		for (int i = 0; i < n; i++)
			for (int a = 0; a < c; a++) {
				double s = 0.0;
				for (int t = 0; t < dn; t++)
					s += MAT_AT(r->q_nope, i, h * dn + t) * MAT_AT(w->W_kvb, a, h * (dn + dv) + t);
				MAT_AT(r->q_tilde, i, h * c + a) = s;
			}
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++) {
				double s = 0.0, pe = 0.0;
				for (int a = 0; a < c; a++)
					s += MAT_AT(r->q_tilde, i, h * c + a) * MAT_AT(r->c_KV, j, a);
				for (int t = 0; t < dr; t++)
					pe += MAT_AT(r->q_pe, i, h * dr + t) * MAT_AT(r->k_pe_rot, j, t);
				MAT_AT(r->absorbed[h], i, j) = s + pe;
				r->max_score_diff = fmax(r->max_score_diff, fabs(s + pe - MAT_AT(r->scores[h], i, j)));
			}
	}
	for (int h = 0; h < H; h++) {
		Mat p = { 0 };
		if (mat_alloc(&p, n, n) != 0)
			goto fail;
		causal_softmax(&r->absorbed[h], &p, f);
		mul(n, n, c, p.a, (size_t)n, r->c_KV.a, (size_t)c, lat.a, (size_t)c); /* Σ_j p_ij c_KV_j */
		mat_free(&p);
		mul(n, c, dv, lat.a, (size_t)c, &w->W_kvb.a[h * (dn + dv) + dn], (size_t)hkv, &r->absorbed_concat.a[h * dv],
		    (size_t)(H * dv));
	}
	for (int i = 0; i < n; i++)
		for (int e = 0; e < H * dv; e++)
			r->max_concat_diff = fmax(r->max_concat_diff, fabs(MAT_AT(r->absorbed_concat, i, e) - MAT_AT(r->concat, i, e)));
	mul(n, H * dv, w->W_o.cols, r->concat.a, (size_t)(H * dv), w->W_o.a, (size_t)w->W_o.cols, r->output.a,
	    (size_t)w->W_o.cols);
	mat_free(&q);
	mat_free(&kva);
	mat_free(&kv);
	mat_free(&lat);
	return 0;
fail:
	mat_free(&q);
	mat_free(&kva);
	mat_free(&kv);
	mat_free(&lat);
	mla_result_free(r);
	return -1;
}

/* ---------------------------------------------------------------- the cache */

MlaCache mla_cache(int heads, int d_nope, int d_rope, int d_v, int kv_lora_rank, int groups)
{
	const long long dk = (long long)d_nope + d_rope;

	return (MlaCache){ .mha = (long long)heads * (dk + d_v), .gqa = (long long)groups * (dk + d_v), .mqa = dk + d_v,
		           .mla = (long long)kv_lora_rank + d_rope, .groups = groups };
}

char *mla_cache_table(const MlaCache *t, int layers, int bytes_per_number)
{
	const char *const kind[] = { "MHA", "GQA", "MQA", "MLA" };
	const long long num[] = { t->mha, t->gqa, t->mqa, t->mla };
	StrBuf b = { 0 };

	strbuf_printf(&b, _("kept per token: numbers and bytes (%d bytes a number) in one layer, bytes in %d layers\n"),
	              bytes_per_number, layers);
	for (int k = 0; k < 4; k++) {
		const long long bytes = num[k] * bytes_per_number;
		strbuf_printf(&b, "  %s  %10lld  %12lld B  %14lld B  (%.1f%%)", kind[k], num[k], bytes, bytes * layers,
		              100.0 * (double)num[k] / (double)t->mha);
		if (k == 1)
			strbuf_printf(&b, _("  with %d key/value heads"), t->groups);
		strbuf_printf(&b, "\n");
	}
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
