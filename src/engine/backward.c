/* backward.c: the backward pass, stage by stage in reverse, and plain gradient descent.
 *
 * Every gradient dM = ∂L/∂M has M's shape. The passes mirror the forward
 * ones in attention.c, last first; each says what it reads and writes.
 * The products run on the matrix kernels, each cell summed in the order
 * the naive loops would (mat_mul_acc): the chain rule is the point, and a
 * learner should not wait for it.
 */
#include "engine/backward.h"
#include "engine/variants/variants.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

/* ---------------------------------------------------------------- products on views */

/*
 * The products run on the matrix kernels (mat_mul_acc), each cell summed
 * in the order of the naive loops they replace, so the gradients keep
 * their bits:
 *   mm     C (r × c, ldc) += A (r × k, lda) · B (k × c, ldb), term by term into C
 *   mm_bt  C (r × c) += A (r × k) · Bᵀ, where B is c × k: each sum from 0, then added
 *   mm_at  C (r × c) += Aᵀ · B, where A is k × r and B is k × c: term by term into C
 * lower (mm, mm_at): A, as stored, is 0 past its diagonal (a causal mask's
 * weights and dscores), and the terms that are those exact zeros are skipped,
 * the same bits (base/matrix.h: mat_mul_continue).
 */
static void mm(int r, int k, int c, const double *A, size_t lda, const double *B, size_t ldb, double *C, size_t ldc,
               int lower)
{
	mat_mul_continue(r, k, c, A, lda, 0, B, ldb, 0, C, ldc, lower);
}

static void mm_bt(int r, int k, int c, const double *A, size_t lda, const double *B, size_t ldb, double *C, size_t ldc)
{
	mat_mul_acc(r, k, c, A, lda, 0, B, ldb, 1, C, ldc, MAT_ADD_SUM);
}

static void mm_at(int r, int k, int c, const double *A, size_t lda, const double *B, size_t ldb, double *C, size_t ldc,
                  int lower)
{
	mat_mul_continue(r, k, c, A, lda, 1, B, ldb, 0, C, ldc, lower);
}

/* Whole matrices: C += A·B, C += A·Bᵀ, C += Aᵀ·B. */
#define MM(A, B, C) mm((A)->rows, (A)->cols, (B)->cols, (A)->a, (size_t)(A)->cols, (B)->a, (size_t)(B)->cols, (C)->a, (size_t)(C)->cols, 0)
#define MM_BT(A, B, C) mm_bt((A)->rows, (A)->cols, (B)->rows, (A)->a, (size_t)(A)->cols, (B)->a, (size_t)(B)->cols, (C)->a, (size_t)(C)->cols)
#define MM_AT(A, B, C) mm_at((A)->cols, (A)->rows, (B)->cols, (A)->a, (size_t)(A)->cols, (B)->a, (size_t)(B)->cols, (C)->a, (size_t)(C)->cols, 0)

/* A bias's gradient: the column sums of the gradient it was added to. */
static void colsum(const Mat *d, Mat *db)
{
	for (int i = 0; i < d->rows; i++)
		for (int j = 0; j < d->cols; j++)
			db->a[j] += MAT_AT(*d, i, j);
}

static void add_into(Mat *dst, const Mat *src)
{
	for (size_t i = 0; i < (size_t)dst->rows * (size_t)dst->cols; i++)
		dst->a[i] += src->a[i];
}

/* A zeroed gradient of m's shape (nothing when m is empty). */
static int like(Mat *d, const Mat *m)
{
	return mat_empty(m) ? 0 : mat_alloc(d, m->rows, m->cols);
}

/* ---------------------------------------------------------------- gated attention */

/*
 * Gated attention (variants/gated.c): W_o read gated = concat ⊙ σ(gate),
 * gate = x·W_gate + b_gate, so what attention_backward made of doutput·W_oᵀ
 * in g->concat is dgated. Turned back, cell by cell (σ′ = σ(1 − σ)):
 *   dconcat = dgated ⊙ σ(gate)      dgate = dgated ⊙ concat ⊙ σ(gate)(1 − σ(gate))
 *   dW_gate = xᵀ·dgate, db_gate = Σ_rows dgate, dX += dgate·W_gateᵀ (x: the rows the queries are made from)
 */
static int gate_backward(const Attn *a, AttnGrad *g, const Mat *x)
{
	const LayerParams *lp = attn_params(a);
	const size_t cells = (size_t)a->gate.rows * (size_t)a->gate.cols;

	if (mat_copy(&g->gated, &g->concat) || like(&g->gate, &a->gate) || like(&g->W_gate, &lp->W_gate) ||
	    like(&g->b_gate, &lp->b_gate))
		return -1;
	for (size_t k = 0; k < cells; k++) {
		const double s = a->gate_sig.a[k];
		g->concat.a[k] = g->gated.a[k] * s;
		g->gate.a[k] = g->gated.a[k] * a->concat.a[k] * s * (1.0 - s);
	}
	MM_AT(x, &g->gate, &g->W_gate);
	if (!mat_empty(&lp->b_gate))
		colsum(&g->gate, &g->b_gate);
	MM_BT(&g->gate, &lp->W_gate, &g->X);
	return 0;
}

/* ---------------------------------------------------------------- the attention */

/*
 * From g->output (n × d_out) back to the attention's input rows:
 *   output = concat·W_o + b_o      dconcat = doutput·W_oᵀ, dW_o = concatᵀ·doutput, db_o = Σ_rows doutput
 *   weighted = weights·V_h         dweights = dweighted·V_hᵀ, dV_h = weightsᵀ·dweighted
 *   weights = softmax(masked)      dmasked_ij = w_ij (dweights_ij − Σ_k w_ik dweights_ik)
 *     (with sinks: the sink's column has no dweights, so dsink_h = −Σ_i sink_i Σ_k w_ik dweights_ik,
 *      sink_i its share of row i: the sinks' gradient, which training follows like any weight's)
 *   masked = scaled where visible  dscaled = dmasked where visible, 0 where hidden
 *     (soft-capped: masked = c·tanh(scaled/c)  dscaled = dmasked · (1 − tanh²(scaled/c)))
 *   scaled = scores × factor       dscores = dscaled × factor
 *   scores = Q_h·K_hᵀ              dQ_h = dscores·K_h, dK_h = dscoresᵀ·Q_h
 *   Q = X·W_q + b_q                dW_q = Xᵀ·dQ, db_q = Σ_rows dQ, dX = dQ·W_qᵀ (K, V from S likewise)
 */
MAT_WIDE static int attention_backward(const Attn *a, AttnGrad *g)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const int n = cfg->n, m = cfg->m, dk = lp->d_k, dv = lp->d_v;
	const Mat *Xa = lp->block.present && lp->block.norm == NORM_PRE ? &a->norm1 : &a->X;
	const Mat *S = cfg->has_source ? &a->S : Xa;
	/* the scores read what a variant made of q and k (variants.h: reads): its backward turns their gradient back below */
	const Mat *Qs = attn_slot_const(a, attn_reads(a, AM_Q), 0), *Ks = attn_slot_const(a, attn_reads(a, AM_K), 0);
	const AttnVariant *map = attn_score_map(a), *bias = attn_score_bias(a);
	/* a causal −∞ mask: weights, dscaled and dscores are 0 past the diagonal, and dV, dQ, dK skip those terms */
	const int tri = attn_weights_lower(cfg);
	double *row; /* a row of what the map read (biased or scaled), for its slope */

	if (mat_alloc(&g->concat, n, a->concat.cols) || like(&g->W_o, &lp->W_o) || like(&g->b_o, &lp->b_o) ||
	    mat_alloc(&g->Q, n, a->Q.cols) || mat_alloc(&g->K, m, a->K.cols) || mat_alloc(&g->V, m, a->V.cols) ||
	    like(&g->W_q, &lp->W_q) || like(&g->W_k, &lp->W_k) || like(&g->W_v, &lp->W_v) || like(&g->b_q, &lp->b_q) ||
	    like(&g->b_k, &lp->b_k) || like(&g->b_v, &lp->b_v) || like(&g->w_e, &lp->w_e) || like(&g->sinks, &lp->sinks) ||
	    mat_alloc(&g->X, n, Xa->cols) || (cfg->has_source && mat_alloc(&g->S, m, S->cols)))
		return -1;
	g->head = calloc((size_t)a->heads, sizeof *g->head);
	if (g->head == NULL)
		return -1;

	/* output = concat·W_o + b_o (a copy of concat without W_o); gated attention: W_o reads gated, turned back below */
	if (mat_empty(&lp->W_o)) {
		add_into(&g->concat, &g->output);
	} else {
		MM_BT(&g->output, &lp->W_o, &g->concat);
		MM_AT(attn_slot_const(a, attn_reads(a, AM_CONCAT), 0), &g->output, &g->W_o);
		if (!mat_empty(&lp->b_o))
			colsum(&g->output, &g->b_o);
	}
	if (!mat_empty(&lp->W_gate) && gate_backward(a, g, Xa))
		return -1;

	if ((row = malloc((size_t)m * sizeof *row)) == NULL)
		return -1;
	for (int h = 0; h < a->heads; h++) {
		const AttnHead *hd = &a->head[h];
		GradHead *gh = &g->head[h];
		/* grouped-query attention: the heads of a group add their gradients into the key/value head they share */
		const size_t kc = (size_t)attn_kv_head(a, h) * dk, vc = (size_t)attn_kv_head(a, h) * dv;
		/* dweights is summed into (mm_bt); the other four are written whole below, so not zeroed first */
		if (mat_alloc_whole(&gh->weighted, n, dv) || mat_alloc(&gh->weights, n, m) || mat_alloc_whole(&gh->masked, n, m) ||
		    mat_alloc_whole(&gh->scaled, n, m) || mat_alloc_whole(&gh->scores, n, m)) {
			free(row);
			return -1;
		}
		/* concat: head h filled columns [h·d_v, (h+1)·d_v) */
		for (int i = 0; i < n; i++)
			memcpy(&gh->weighted.a[(size_t)i * dv], &g->concat.a[(size_t)i * g->concat.cols + (size_t)h * dv],
			       (size_t)dv * sizeof(double));
		/* weighted = weights · V_h */
		mm_bt(n, dv, m, gh->weighted.a, (size_t)dv, &a->V.a[vc], (size_t)a->V.cols, gh->weights.a, (size_t)m);
		mm_at(m, n, dv, hd->weights.a, (size_t)m, gh->weighted.a, (size_t)dv, &g->V.a[vc], (size_t)g->V.cols, tri);
		/* softmax, row by row: the Jacobian diag(w) − w wᵀ times dweights */
		for (int i = 0; i < n; i++) {
			const double *w = &hd->weights.a[(size_t)i * m], *dw = &gh->weights.a[(size_t)i * m];
			double dot = 0.0;
			for (int j = 0; j < (tri && i < m ? i + 1 : m); j++) /* causal: the terms past i are w = 0 */
				dot += w[j] * dw[j];
			for (int j = 0; j < m; j++)
				gh->masked.a[(size_t)i * m + j] = w[j] * (dw[j] - dot);
			if (!mat_empty(&g->sinks))
				g->sinks.a[h] -= MAT_AT(hd->sink, i, 0) * dot;
		}
		/* mask: a hidden cell's value is the fill, a constant (a variant's bias on the scores is a constant too);
		 * a variant's map of the scores before the mask (soft-capping): × its slope f'(biased or scaled); scale: × factor */
		for (int i = 0; i < n; i++) {
			const int slopes = map != NULL && map->score_map_grad_row != NULL; /* row: f' of each cell, made at once */
			if (map != NULL)
				attn_derived_row(a, bias != NULL ? bias->biased_matrix : AM_SCALED, h, i, row, m);
			if (slopes)
				map->score_map_grad_row(a, row, m);
			for (int j = 0; j < m; j++) {
				const size_t ij = (size_t)i * m + j;
				gh->scaled.a[ij] = !a->visible[ij] ? 0.0
				                   : slopes       ? gh->masked.a[ij] * row[j]
				                   : map != NULL  ? gh->masked.a[ij] * map->score_map_grad(a, row[j])
				                                  : gh->masked.a[ij];
				gh->scores.a[ij] = gh->scaled.a[ij] * a->factor;
			}
		}
		if (cfg->score == SCORE_ADDITIVE) {
			/* s_ij = Σ_c w_e[c] tanh(q_ic + k_jc): ∂s/∂q_ic = ∂s/∂k_jc = w_e[c](1 − tanh²), ∂s/∂w_e[c] = tanh */
			const double *w_e = &lp->w_e.a[h * dk];
			for (int i = 0; i < n; i++)
				for (int j = 0; j < m; j++) {
					const double ds = gh->scores.a[(size_t)i * m + j];
					for (int c = 0; c < dk; c++) {
						const double t = tanh(MAT_AT(*Qs, i, h * dk + c) + Ks->a[(size_t)j * Ks->cols + kc + (size_t)c]);
						MAT_AT(g->Q, i, h * dk + c) += ds * w_e[c] * (1.0 - t * t);
						g->K.a[(size_t)j * g->K.cols + kc + (size_t)c] += ds * w_e[c] * (1.0 - t * t);
						g->w_e.a[h * dk + c] += ds * t;
					}
				}
		} else {
			mm(n, m, dk, gh->scores.a, (size_t)m, &Ks->a[kc], (size_t)Ks->cols, &g->Q.a[(size_t)h * dk], (size_t)g->Q.cols,
			   tri);
			mm_at(m, n, dk, gh->scores.a, (size_t)m, &Qs->a[(size_t)h * dk], (size_t)Qs->cols, &g->K.a[kc],
			      (size_t)g->K.cols, tri);
		}
	}
	free(row);
	/* what the scores read instead of Q and K (variants.h: reads): its gradient back to dQ, dK by the variant */
	for (int v = 0; v < attn_variant_count; v++)
		if (attn_variants[v]->backward != NULL && attn_variant_on(a, attn_variants[v]))
			attn_variants[v]->backward(a, &g->Q, &g->K);

	/* the projections */
	MM_AT(Xa, &g->Q, &g->W_q);
	MM_AT(S, &g->K, &g->W_k);
	MM_AT(S, &g->V, &g->W_v);
	if (!mat_empty(&lp->b_q))
		colsum(&g->Q, &g->b_q);
	if (!mat_empty(&lp->b_k))
		colsum(&g->K, &g->b_k);
	if (!mat_empty(&lp->b_v))
		colsum(&g->V, &g->b_v);
	MM_BT(&g->Q, &lp->W_q, &g->X);
	MM_BT(&g->K, &lp->W_k, cfg->has_source ? &g->S : &g->X);
	MM_BT(&g->V, &lp->W_v, cfg->has_source ? &g->S : &g->X);
	return 0;
}

/* ---------------------------------------------------------------- the block */

/*
 * y = N(x) row by row, back to x. LayerNorm: x̂ = (x − μ)/σ, σ = √(σ² + ε),
 * y = x̂γ + β: dγ += dy ⊙ x̂, dβ += dy, dx = (dx̂ − mean(dx̂) − x̂·mean(dx̂ ⊙ x̂))/σ
 * with dx̂ = dy ⊙ γ. RMSNorm: r = √(mean x² + ε), y = xγ/r:
 * dγ += dy ⊙ x/r, dx = dz/r − x·Σ(dz ⊙ x)/(d·r³) with dz = dy ⊙ γ (Gemma's (1 + γ): dz = dy ⊙ (1 + γ),
 * dγ the same). dx is added to.
 */
MAT_WIDE static void norm_backward(const Mat *x, const Mat *dy, const Mat *gamma, NormKind kind, double eps, Mat *dx,
                          Mat *dgamma, Mat *dbeta)
{
	const int d = x->cols;

	for (int i = 0; i < x->rows; i++) {
		const double *xi = &x->a[(size_t)i * d], *dyi = &dy->a[(size_t)i * d];
		double *dxi = &dx->a[(size_t)i * d];
		double mean = 0.0, var = 0.0, s1 = 0.0, s2 = 0.0, sigma;
		if (kind != NORM_LAYERNORM) {
			const double one = kind == NORM_RMSNORM_1P ? 1.0 : 0.0;
			for (int j = 0; j < d; j++)
				var += xi[j] * xi[j];
			sigma = sqrt(var / d + eps);
			for (int j = 0; j < d; j++) {
				dgamma->a[j] += dyi[j] * xi[j] / sigma;
				s1 += dyi[j] * (one + gamma->a[j]) * xi[j];
			}
			for (int j = 0; j < d; j++)
				dxi[j] += dyi[j] * (one + gamma->a[j]) / sigma - xi[j] * s1 / (d * sigma * sigma * sigma);
			continue;
		}
		for (int j = 0; j < d; j++)
			mean += xi[j];
		mean /= d;
		for (int j = 0; j < d; j++)
			var += (xi[j] - mean) * (xi[j] - mean);
		sigma = sqrt(var / d + eps);
		for (int j = 0; j < d; j++) {
			const double xhat = (xi[j] - mean) / sigma, dxhat = dyi[j] * gamma->a[j];
			dgamma->a[j] += dyi[j] * xhat;
			if (dbeta != NULL && !mat_empty(dbeta))
				dbeta->a[j] += dyi[j];
			s1 += dxhat;
			s2 += dxhat * xhat;
		}
		for (int j = 0; j < d; j++) {
			const double xhat = (xi[j] - mean) / sigma;
			dxi[j] += (dyi[j] * gamma->a[j] - s1 / d - xhat * s2 / d) / sigma;
		}
	}
}

/* relu′ = [h > 0]; gelu′ = Φ(h) + h·φ(h); silu′ = σ(h)(1 + h(1 − σ(h))). */
static double act_grad(Activation act, double h)
{
	switch (act) {
	case ACT_RELU: return h > 0 ? 1.0 : 0.0;
	case ACT_GELU: return 0.5 * (1.0 + erf(h / sqrt(2.0))) + h * exp(-0.5 * h * h) / sqrt(2.0 * M_PI);
	case ACT_SWIGLU: {
		/* σ(h) for SiLU's alone: a ReLU's cells took an exp each for nothing (4 % of a training step) */
		const double sig = 1.0 / (1.0 + exp(-h));
		return sig * (1.0 + h * (1.0 - sig));
	}
	case ACT_GELU_TANH:
	case ACT_GEGLU: {
		/* d/dh ½h(1 + tanh u), u = c(h + 0.044715h³): ½(1 + tanh u) + ½h(1 − tanh²u)·c(1 + 3·0.044715h²) */
		const double c = sqrt(2.0 / M_PI), t = tanh(c * (h + 0.044715 * h * h * h));
		return 0.5 * (1.0 + t) + 0.5 * h * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * h * h);
	}
	}
	return 0.0;
}

/*
 * The FFN, from g->ffn_out back to its input rows `in` (added to din):
 *   ffn_out = act·W_2 + b_2     dact = dffn_out·W_2ᵀ, dW_2 = actᵀ·dffn_out
 *   act = f(hidden) (⊙ gate)    dhidden = dact ⊙ f′(hidden) (⊙ gate), dgate = dact ⊙ f(hidden) (silu, gelu_tanh)
 *   hidden = in·W_1 + b_1       dW_1 = inᵀ·dhidden, din += dhidden·W_1ᵀ (gate: W_3 likewise)
 * A mixture of experts instead: backward_moe.c.
 */
MAT_WIDE static int ffn_backward(const Attn *a, AttnGrad *g, const Mat *in, Mat *din)
{
	const Block *b = &attn_params(a)->block;
	const int swiglu = b->activation == ACT_SWIGLU || b->activation == ACT_GEGLU; /* gated: W_3 */

	if (b->moe.experts > 0)
		return moe_backward(a, g, in, din);
	if (like(&g->ffn_act, &a->ffn_act) || like(&g->ffn_hidden, &a->ffn_hidden) || like(&g->ffn_gate, &a->ffn_gate) ||
	    like(&g->W_2, &b->W_2) || like(&g->b_2, &b->b_2) || like(&g->W_1, &b->W_1) || like(&g->b_1, &b->b_1) ||
	    like(&g->W_3, &b->W_3) || like(&g->b_3, &b->b_3))
		return -1;
	MM_BT(&g->ffn_out, &b->W_2, &g->ffn_act);
	MM_AT(&a->ffn_act, &g->ffn_out, &g->W_2);
	colsum(&g->ffn_out, &g->b_2);
	for (size_t i = 0; i < (size_t)a->ffn_hidden.rows * (size_t)a->ffn_hidden.cols; i++) {
		const double h = a->ffn_hidden.a[i], dact = g->ffn_act.a[i];
		g->ffn_hidden.a[i] = dact * act_grad(b->activation, h) * (swiglu ? a->ffn_gate.a[i] : 1.0);
		if (swiglu)
			g->ffn_gate.a[i] = dact * (b->activation == ACT_GEGLU ? attn_gelu_tanh(h) : attn_silu(h));
	}
	MM_AT(in, &g->ffn_hidden, &g->W_1);
	colsum(&g->ffn_hidden, &g->b_1);
	MM_BT(&g->ffn_hidden, &b->W_1, din);
	if (swiglu) {
		MM_AT(in, &g->ffn_gate, &g->W_3);
		colsum(&g->ffn_gate, &g->b_3);
		MM_BT(&g->ffn_gate, &b->W_3, din);
	}
	return 0;
}

static int copy_of(Mat *dst, const Mat *src)
{
	return mat_copy(dst, src);
}

/*
 * One layer, from g->block_out (the gradient at what the block makes) back
 * to g->input, its input rows. The sublayers in reverse, as lesson.h's
 * Block gives their order.
 */
static int layer_backward(const Attn *a, AttnGrad *g)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const Block *b = &lp->block;
	const int n = cfg->n, d = cfg->d_model;

	if (mat_alloc(&g->input, a->X.rows, a->X.cols))
		return -1;
	if (!b->present) {
		if (copy_of(&g->output, &g->block_out) || attention_backward(a, g))
			return -1;
		add_into(&g->input, &g->X);
		return 0;
	}
	if (mat_alloc(&g->residual1, n, d) || (b->norm != NORM_NONE && mat_alloc(&g->norm1, n, d)) ||
	    (b->norm != NORM_NONE && (like(&g->ln1_gamma, &b->ln1_gamma) || like(&g->ln1_beta, &b->ln1_beta))))
		return -1;
	if (b->has_ffn && (mat_alloc(&g->residual2, n, d) || mat_alloc(&g->ffn_out, n, d) ||
	                   (b->norm != NORM_NONE && (mat_alloc(&g->norm2, n, d) || like(&g->ln2_gamma, &b->ln2_gamma) ||
	                                             like(&g->ln2_beta, &b->ln2_beta)))))
		return -1;
	switch (b->norm) {
	case NORM_POST:
		/* residual1 = x + attn(x); norm1 = N1(residual1); residual2 = norm1 + ffn(norm1); norm2 = N2(residual2) */
		if (b->has_ffn) {
			add_into(&g->norm2, &g->block_out);
			norm_backward(&a->residual2, &g->norm2, &b->ln2_gamma, b->norm_kind, b->eps, &g->residual2,
			              &g->ln2_gamma, &g->ln2_beta);
			add_into(&g->norm1, &g->residual2);
			add_into(&g->ffn_out, &g->residual2);
			if (ffn_backward(a, g, &a->norm1, &g->norm1))
				return -1;
		} else {
			add_into(&g->norm1, &g->block_out);
		}
		norm_backward(&a->residual1, &g->norm1, &b->ln1_gamma, b->norm_kind, b->eps, &g->residual1, &g->ln1_gamma,
		              &g->ln1_beta);
		if (copy_of(&g->output, &g->residual1) || attention_backward(a, g))
			return -1;
		add_into(&g->input, &g->residual1);
		add_into(&g->input, &g->X);
		return 0;
	case NORM_PRE:
		/* norm1 = N1(x); residual1 = x + attn(norm1); norm2 = N2(residual1); residual2 = residual1 + ffn(norm2) */
		if (b->has_ffn) {
			add_into(&g->residual2, &g->block_out);
			add_into(&g->residual1, &g->residual2);
			add_into(&g->ffn_out, &g->residual2);
			if (ffn_backward(a, g, &a->norm2, &g->norm2))
				return -1;
			norm_backward(&a->residual1, &g->norm2, &b->ln2_gamma, b->norm_kind, b->eps, &g->residual1,
			              &g->ln2_gamma, &g->ln2_beta);
		} else {
			add_into(&g->residual1, &g->block_out);
		}
		if (copy_of(&g->output, &g->residual1) || attention_backward(a, g))
			return -1;
		add_into(&g->norm1, &g->X);
		add_into(&g->input, &g->residual1);
		norm_backward(&a->X, &g->norm1, &b->ln1_gamma, b->norm_kind, b->eps, &g->input, &g->ln1_gamma, &g->ln1_beta);
		return 0;
	case NORM_NONE:
		/* residual1 = x + attn(x); residual2 = residual1 + ffn(residual1) */
		if (b->has_ffn) {
			add_into(&g->residual2, &g->block_out);
			add_into(&g->residual1, &g->residual2);
			add_into(&g->ffn_out, &g->residual2);
			if (ffn_backward(a, g, &a->residual1, &g->residual1))
				return -1;
		} else {
			add_into(&g->residual1, &g->block_out);
		}
		if (copy_of(&g->output, &g->residual1) || attention_backward(a, g))
			return -1;
		add_into(&g->input, &g->residual1);
		add_into(&g->input, &g->X);
		return 0;
	case NORM_AFTER:
		/* norm1 = N1(attn(x)); residual1 = x + norm1; norm2 = N2(ffn(residual1)); residual2 = residual1 + norm2 */
		if (b->has_ffn) {
			add_into(&g->residual2, &g->block_out);
			add_into(&g->residual1, &g->residual2);
			add_into(&g->norm2, &g->residual2);
			norm_backward(&a->ffn_out, &g->norm2, &b->ln2_gamma, b->norm_kind, b->eps, &g->ffn_out, &g->ln2_gamma,
			              &g->ln2_beta);
			if (ffn_backward(a, g, &a->residual1, &g->residual1))
				return -1;
		} else {
			add_into(&g->residual1, &g->block_out);
		}
		add_into(&g->norm1, &g->residual1);
		if (like(&g->output, &a->output))
			return -1;
		norm_backward(&a->output, &g->norm1, &b->ln1_gamma, b->norm_kind, b->eps, &g->output, &g->ln1_gamma,
		              &g->ln1_beta);
		if (attention_backward(a, g))
			return -1;
		add_into(&g->input, &g->residual1);
		add_into(&g->input, &g->X);
		return 0;
	}
	return 0;
}

/* ---------------------------------------------------------------- the whole chain */

static int chain_backward(Attn *first, const Mat *dy_in);

/*
 * The loss at the chain's final output y, and into dy (when not NULL) its
 * gradient ∂L/∂y. 0, or -1 with *err (no "backward" for y's shape, out of memory).
 */
static int final_loss(Attn *first, Mat *dy, double *loss, char **err)
{
	const Mat *y = attn_final_output(first);
	const ModelConfig *top = attn_config(first); /* the first link's settings: the lesson's backward and target */
	double L = 0.0;

	*err = NULL;
	if (top->backward == BACKWARD_NONE || mat_empty(&top->target) || top->target.rows != y->rows ||
	    top->target.cols != y->cols) {
		*err = str_printf("this lesson has no \"backward\" for the output's shape");
		return -1;
	}
	if (dy != NULL && mat_alloc(dy, y->rows, y->cols)) {
		*err = str_printf("out of memory computing the gradients");
		return -1;
	}
	for (size_t i = 0; i < (size_t)y->rows * (size_t)y->cols; i++) {
		if (top->backward == BACKWARD_TARGET) {
			const double d = y->a[i] - top->target.a[i];
			if (dy != NULL)
				dy->a[i] = d;
			L += 0.5 * d * d;
		} else {
			if (dy != NULL)
				dy->a[i] = top->target.a[i];
			L += top->target.a[i] * y->a[i];
		}
	}
	*loss = L;
	first->loss = L;
	return 0;
}

int attn_loss(Attn *first, double *loss, char **err)
{
	return final_loss(first, NULL, loss, err);
}

int attn_backward(Attn *first, double *loss, char **err)
{
	Attn *a;
	Mat dy = { 0 };
	int n = 0;

	*err = NULL;
	for (a = first; a != NULL && n <= LESSON_MAX_LAYERS; a = a->next) {
		n++;
		attn_touch(a); /* its gradients are remade */
	}
	/* the loss at the final output y */
	if (final_loss(first, &dy, loss, err) != 0)
		return -1;
	if (chain_backward(first, &dy) != 0)
		goto oom;
	/* an encoder–decoder: the memory's gradient is the sum of every cross-attention's dS, and flows into the encoder */
	if (first->encoder != NULL) {
		const Mat *memory = attn_final_output(first->encoder);
		mat_free(&dy);
		if (mat_alloc(&dy, memory->rows, memory->cols))
			goto oom;
		for (a = first; a != NULL; a = a->next)
			if (attn_params(a)->part == PART_CROSS)
				add_into(&dy, &a->grad->S);
		if (chain_backward(first->encoder, &dy) != 0)
			goto oom;
	}
	mat_free(&dy);
	first->grad_stale = 0;
	return 0;
oom:
	mat_free(&dy);
	*err = str_printf("out of memory computing the gradients");
	return -1;
}

int attn_grads_ready(const Attn *a, char **err)
{
	/* the computation is the caller's own (heap, not const): its gradients are written through the const pointer */
	Attn *root = (Attn *)(a->root != NULL ? a->root : a);
	double loss;

	*err = NULL;
	if (!root->grad_stale)
		return 0;
	return attn_backward(root, &loss, err);
}

/* From dy, the gradient at the chain's final output, back through every link (a->grad on each). 0, or -1 out of memory. */
static int chain_backward(Attn *first, const Mat *dy_in)
{
	Attn *layers[LESSON_MAX_LAYERS + 1], *a;
	const Mat dy = *dy_in;
	int n = 0;

	for (a = first; a != NULL && n <= LESSON_MAX_LAYERS; a = a->next)
		layers[n++] = a;
	for (int k = n - 1; k >= 0; k--) {
		Attn *la = layers[k];
		AttnGrad *g;
		attn_grad_free(la->grad, la->heads);
		la->grad = g = calloc(1, sizeof *g);
		if (g == NULL)
			goto oom;
		if (k == n - 1 && !mat_empty(&la->final)) {
			/* the final norm: final = N(block output) */
			const ModelConfig *v = attn_config(la);
			if (copy_of(&g->final, &dy) || mat_alloc(&g->block_out, la->final.rows, la->final.cols) ||
			    like(&g->final_gamma, &v->final_gamma) || like(&g->final_beta, &v->final_beta))
				goto oom;
			norm_backward(attn_block_output(la), &dy, &v->final_gamma, v->final_kind, v->final_eps, &g->block_out,
			              &g->final_gamma, &g->final_beta);
		} else if (copy_of(&g->block_out, k == n - 1 ? &dy : &layers[k + 1]->grad->input)) {
			goto oom;
		}
		if (layer_backward(la, g) != 0)
			goto oom;
	}
	return 0;
oom:
	return -1;
}

void attn_grad_free(AttnGrad *g, int heads)
{
	if (g == NULL)
		return;
	Mat *all[] = { &g->output, &g->concat, &g->W_o, &g->b_o, &g->Q, &g->K, &g->V, &g->W_q, &g->W_k, &g->W_v,
	               &g->b_q, &g->b_k, &g->b_v, &g->w_e, &g->sinks, &g->gated, &g->gate, &g->W_gate, &g->b_gate, &g->X, &g->S, &g->residual1, &g->norm1, &g->ffn_hidden,
	               &g->ffn_gate, &g->ffn_act, &g->ffn_out, &g->residual2, &g->norm2, &g->block_out, &g->final,
	               &g->ln1_gamma, &g->ln1_beta, &g->ln2_gamma, &g->ln2_beta, &g->W_1, &g->b_1, &g->W_3, &g->b_3,
	               &g->W_2, &g->b_2, &g->final_gamma, &g->final_beta, &g->input, &g->router_logits,
	               &g->moe_weights, &g->W_r, &g->b_r, &g->moe_W_1, &g->moe_W_3, &g->moe_W_2, &g->moe_b_1,
	               &g->moe_b_3, &g->moe_b_2, &g->S_1, &g->S_3, &g->S_2, &g->S_gate };

	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		mat_free(all[i]);
	for (int h = 0; g->head != NULL && h < heads; h++) {
		mat_free(&g->head[h].weighted);
		mat_free(&g->head[h].weights);
		mat_free(&g->head[h].masked);
		mat_free(&g->head[h].scaled);
		mat_free(&g->head[h].scores);
	}
	free(g->head);
	free(g);
}
