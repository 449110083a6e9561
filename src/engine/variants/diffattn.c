/* diffattn.c: differential attention (Ye et al., "Differential Transformer", ICLR 2025; issue 24 §4),
 * the variants "diff_attn" (the diff stage) and "diff_out" (the diff_out stage).
 *
 * The layer's heads come in pairs: head 2p's softmax is A1, head 2p + 1's
 * A2 (the reference's q.view(bsz, n, 2·num_heads, head_dim): Q1 and Q2 of a
 * differential head are two neighbouring heads of the core, and so are K1,
 * K2; the pair's values are the 2·d_v columns of both, v.view(…, num_heads,
 * 2·head_dim)). The core computes Q, K, V, the scores, the mask and both
 * softmaxes unchanged; then, following microsoft/unilm
 * Diff-Transformer/multihead_diffattn.py (commit 768a3c8):
 *
 *   l. 26–27, 61  λ_init = 0.8 − 0.6·e^(−0.3·depth), depth the 0-based layer index
 *   l. 109–111    λ = e^(Σ λ_q1·λ_k1) − e^(Σ λ_q2·λ_k2) + λ_init (one λ for the layer)
 *   l. 112–113    A = A1 − λ·A2                                     (diff stage)
 *   l. 115        O = A·[V_2p | V_2p+1]                              (diff_out stage)
 *   l. 67, 116    subln = RMSNorm(2·head_dim, eps=1e-5, elementwise_affine=True):
 *                 O / √(mean(O²) + eps) · weight (rms_norm.py)
 *   l. 117        · (1 − λ_init)
 *
 * and concat takes each pair's output in place of its two heads' weighted
 * (head_row), so W_o and what follows read differential attention's output.
 * RoPE (the reference's apply_rotary_emb on q and k, l. 87-88) and GQA
 * (repeat_kv, l. 91-92) act on the core's heads: see diff_v0 for which
 * values a pair reads. Forward only, one layer: the loader refuses what it
 * does not compute (lesson_diff.c).
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>
#include <string.h>

/* Row-vector dot product of two 1 × d vectors. */
static double dot(const Mat *x, const Mat *y)
{
	double s = 0.0;

	for (int c = 0; c < x->cols; c++)
		s += x->a[c] * y->a[c];
	return s;
}

/* λ_1 = e^(λ_q1·λ_k1), λ_2 = e^(λ_q2·λ_k2), λ_init, λ = λ_1 − λ_2 + λ_init. */
static void diff_lambda(const DiffParams *p, double out[4])
{
	out[0] = exp(dot(&p->lq1, &p->lk1));
	out[1] = exp(dot(&p->lq2, &p->lk2));
	out[2] = p->lambda_init;
	out[3] = out[0] - out[1] + out[2];
}

/* λ, and for every head its pair's A1, A2 and A1 − λ·A2. */
static void pass_diff(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const size_t nm = (size_t)cfg->n * (size_t)cfg->m;
	double l[4];

	diff_lambda(&lp->diff, l);
	memcpy(a->diff_lambda.a, l, sizeof l);
	for (int h = 0; h < a->heads; h++) {
		AttnHead *hd = &a->head[h];
		const Mat *w1 = &a->head[h & ~1].weights, *w2 = &a->head[h | 1].weights;
		memcpy(hd->diff_a1.a, w1->a, nm * sizeof(double));
		memcpy(hd->diff_a2.a, w2->a, nm * sizeof(double));
		if (h & 1) /* the pair's second head: the first one's A, made of the same A1 and A2 */
			memcpy(hd->diff_a.a, a->head[h - 1].diff_a.a, nm * sizeof(double));
		else
			for (size_t k = 0; k < nm; k++)
				hd->diff_a.a[k] = w1->a[k] - l[3] * w2->a[k];
	}
}

/*
 * The first column of V that head h's pair reads: pair p = h/2 reads the
 * reference's value head p / n_rep of 2·d_v columns (v.view(…, num_kv_heads,
 * 2·head_dim), repeat_kv by n_rep = heads / kv_heads), our kv heads 2q and
 * 2q + 1 with q = p / n_rep — 2p and 2p + 1 without GQA. (Its keys are the
 * core's: k.view(…, 2·num_kv_heads, head_dim) repeated n_rep times, the
 * query head's kv head i / n_rep, as GQA has it.)
 */
static int diff_v0(const Attn *a, const LayerParams *lp, int h)
{
	return 2 * ((h / 2) / (a->heads / a->kv_heads)) * lp->d_v;
}

/* For every head its pair's O = A·[V_2q | V_2q+1], each row's RMS, and O / rms · subln · (1 − λ_init). */
static void pass_diff_out(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const int dv = lp->d_v, w = 2 * dv;
	const double keep = 1.0 - lp->diff.lambda_init;

	for (int h = 0; h < a->heads; h++) {
		AttnHead *hd = &a->head[h];
		const int v0 = diff_v0(a, lp, h);
		if (h & 1) { /* the pair's second head: the same A and values, so the first one's numbers (half the stage) */
			const AttnHead *first = &a->head[h - 1];
			memcpy(hd->diff_o.a, first->diff_o.a, (size_t)cfg->n * (size_t)w * sizeof(double));
			memcpy(hd->diff_rms.a, first->diff_rms.a, (size_t)cfg->n * sizeof(double));
			memcpy(hd->diff_out.a, first->diff_out.a, (size_t)cfg->n * (size_t)w * sizeof(double));
			continue;
		}
		/* O = A·V_pair on the kernels, each cell's terms in the order of j from 0 (matrix.h: mat_mul_chain); A is
		 * A1 − λ·A2, exactly 0 past the diagonal where both are (a causal mask), and those terms are skipped */
		mat_mul_chain(cfg->n, cfg->m, w, hd->diff_a.a, (size_t)cfg->m, &a->V.a[v0], (size_t)a->V.cols, 0, hd->diff_o.a,
		              (size_t)w, attn_weights_lower(cfg));
		for (int i = 0; i < cfg->n; i++) {
			double ss = 0.0, rms;
			for (int c = 0; c < w; c++) {
				const double o = MAT_AT(hd->diff_o, i, c);
				ss += o * o;
			}
			rms = sqrt(ss / w + lp->diff.eps);
			MAT_AT(hd->diff_rms, i, 0) = rms;
			for (int c = 0; c < w; c++)
				MAT_AT(hd->diff_out, i, c) = MAT_AT(hd->diff_o, i, c) / rms * lp->diff.subln.a[c] * keep;
			a->nonfinite |= !isfinite(rms);
		}
	}
}

/* Head h's d_v numbers of row i in concat: its half of the pair's output. */
static const double *diff_head_row(const Attn *a, int h, int i)
{
	const int dv = attn_params(a)->d_v;

	return &MAT_AT(a->head[h].diff_out, i, (h & 1) * dv);
}

static int vec_is(const Mat *m, int cols)
{
	return m->a != NULL && m->rows == 1 && m->cols == cols;
}

/* The pairs and vectors fit the layer (the loader says so at its paths; this is the engine's own guard). */
static const char *diff_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	const DiffParams *p = &lp->diff;

	(void)cfg;
	if (!p->on)
		return NULL;
	if (lp->heads < 2 || lp->heads % 2 != 0 || lp->kv_heads < 1 || lp->heads % lp->kv_heads != 0 ||
	    (lp->kv_heads != lp->heads && lp->kv_heads % 2 != 0) || !(p->eps > 0) || !isfinite(p->lambda_init))
		return "diff_attn";
	if (!vec_is(&p->lq1, lp->d_k) || !vec_is(&p->lk1, lp->d_k) || !vec_is(&p->lq2, lp->d_k) || !vec_is(&p->lk2, lp->d_k))
		return "diff_attn.lambda_q1";
	return vec_is(&p->subln, 2 * lp->d_v) ? NULL : "diff_attn.subln";
}

static int diff_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xc; (void)yc;
	return xp->diff.on == yp->diff.on && xp->diff.lambda_init == yp->diff.lambda_init && xp->diff.eps == yp->diff.eps &&
	       xp->diff.depth == yp->diff.depth;
}

/* ---------------------------------------------------------------- explain */

#define MUL_SYM(u) celltext_sym(u, "\u00b7", "*")
#define LAMBDA(u) celltext_sym(u, "\u03bb", "lambda")

/* "e^(λ_qN·λ_kN) = e^(terms) = e^x = y" for N = 1, 2. */
static void explain_exp(StrBuf *b, const Mat *q, const Mat *k, int n, int utf8)
{
	char x1[32], x2[32];
	double s;

	strbuf_printf(b, "e^(%s_q%d%s%s_k%d): %s_q%d%s%s_k%d ", LAMBDA(utf8), n, MUL_SYM(utf8), LAMBDA(utf8), n, LAMBDA(utf8), n,
	              MUL_SYM(utf8), LAMBDA(utf8), n);
	s = celltext_terms(b, q->a, 1, k->a, 1, q->cols, utf8);
	strbuf_printf(b, "e^%s = %s\n", celltext_num(x1, s, utf8), celltext_num(x2, exp(s), utf8));
}

static void explain_diff(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const DiffParams *p = &lp->diff;
	const AttnHead *hd = &a->head[h];
	const int h1 = h & ~1, h2 = h | 1, dv = lp->d_v;
	char x1[32], x2[32], x3[32], x4[32], x5[32];

	switch (which) {
	case AM_DIFF_A1:
	case AM_DIFF_A2:
		strbuf_printf(b, _("pair %d = heads %d and %d: this is head %d's softmax weight of key %d for query %d (its q%sk over "
		                   "d_k = %d columns, like any head's)\n"),
		              h / 2, h1, h2, which == AM_DIFF_A1 ? h1 : h2, j, i, MUL_SYM(utf8), lp->d_k);
		break;
	case AM_DIFF_LAMBDA:
		if (j == 0)
			explain_exp(b, &p->lq1, &p->lk1, 1, utf8);
		else if (j == 1)
			explain_exp(b, &p->lq2, &p->lk2, 2, utf8);
		else if (j == 2 && p->depth >= 0)
			strbuf_printf(b, _("%s_init = 0.8 %s 0.6%se^(%s0.3%s%s) = %s (depth %s, the 0-based index of the layer)\n"),
			              LAMBDA(utf8), celltext_sym(utf8, "\u2212", "-"), MUL_SYM(utf8), celltext_sym(utf8, "\u2212", "-"),
			              MUL_SYM(utf8), celltext_num(x1, p->depth, utf8), celltext_num(x2, p->lambda_init, utf8),
			              celltext_num(x3, p->depth, utf8));
		else if (j == 2)
			strbuf_printf(b, _("%s_init = %s, the lesson's own (\"lambda_init\")\n"), LAMBDA(utf8),
			              celltext_num(x1, p->lambda_init, utf8));
		else
			strbuf_printf(b, "%s = %s %s %s + %s = %s\n", LAMBDA(utf8), celltext_num(x1, MAT_AT(a->diff_lambda, 0, 0), utf8),
			              celltext_sym(utf8, "\u2212", "-"), celltext_num(x2, MAT_AT(a->diff_lambda, 0, 1), utf8),
			              celltext_num(x3, MAT_AT(a->diff_lambda, 0, 2), utf8), celltext_num(x4, MAT_AT(a->diff_lambda, 0, 3), utf8));
		break;
	case AM_DIFF_A:
		strbuf_printf(b, "A1 %s %s%sA2 = %s %s %s%s%s = %s\n", celltext_sym(utf8, "\u2212", "-"), LAMBDA(utf8), MUL_SYM(utf8),
		              celltext_num(x1, MAT_AT(hd->diff_a1, i, j), utf8), celltext_sym(utf8, "\u2212", "-"),
		              celltext_num(x2, MAT_AT(a->diff_lambda, 0, 3), utf8), MUL_SYM(utf8),
		              celltext_num(x3, MAT_AT(hd->diff_a2, i, j), utf8), celltext_num(x4, MAT_AT(hd->diff_a, i, j), utf8));
		strbuf_printf(b, _("(%s times A2's weight of key %d is taken from A1's: what both maps give a key cancels; row %d sums to "
		                   "1 %s %s = %s)\n"),
		              LAMBDA(utf8), j, i,
		              celltext_sym(utf8, "\u2212", "-"), LAMBDA(utf8),
		              celltext_num(x5, 1.0 - MAT_AT(a->diff_lambda, 0, 3), utf8));
		break;
	case AM_DIFF_O: {
		const int col = diff_v0(a, lp, h) + j;
		if (a->kv_heads == a->heads)
			strbuf_printf(b, _("%s_k A_%dk v_k%d (column %d of V, head %d's value column %d) "),
			              celltext_sym(utf8, "\u03a3", "sum"), i, j, col, col / dv, j % dv);
		else
			strbuf_printf(b, _("%s_k A_%dk v_k%d (column %d of V, kv head %d's value column %d: pair %d reads kv heads %d "
			                   "and %d, as %d pairs share them) "),
			              celltext_sym(utf8, "\u03a3", "sum"), i, j, col, col / dv, j % dv, h / 2, diff_v0(a, lp, h) / dv,
			              diff_v0(a, lp, h) / dv + 1, a->heads / a->kv_heads);
		celltext_terms(b, &MAT_AT(hd->diff_a, i, 0), 1, &MAT_AT(a->V, 0, col), (size_t)a->V.cols, cfg->m, utf8);
		break;
	}
	case AM_DIFF_RMS: {
		double ss = 0.0;
		for (int c = 0; c < 2 * dv; c++)
			ss += MAT_AT(hd->diff_o, i, c) * MAT_AT(hd->diff_o, i, c);
		strbuf_printf(b, "%s(%s_c O_%dc%s / %d + eps) = %s(%s / %d + %s) = %s\n", celltext_sym(utf8, "\u221a", "sqrt"),
		              celltext_sym(utf8, "\u03a3", "sum"), i, celltext_sym(utf8, "\u00b2", "^2"), 2 * dv,
		              celltext_sym(utf8, "\u221a", "sqrt"), celltext_num(x1, ss, utf8), 2 * dv, celltext_num(x2, p->eps, utf8),
		              celltext_num(x3, MAT_AT(hd->diff_rms, i, 0), utf8));
		strbuf_printf(b, _("(subln: one RMSNorm over the pair's 2%sd_v = %d columns, eps %s as in the reference)\n"), MUL_SYM(utf8),
		              2 * dv, celltext_num(x4, p->eps, utf8));
		break;
	}
	case AM_DIFF_OUT:
		strbuf_printf(b, "O_%d%d / rms_%d %s subln_%d %s (1 %s %s_init) = %s / %s %s %s %s %s = %s\n", i, j, i, MUL_SYM(utf8), j,
		              MUL_SYM(utf8), celltext_sym(utf8, "\u2212", "-"), LAMBDA(utf8), celltext_num(x1, MAT_AT(hd->diff_o, i, j), utf8),
		              celltext_num(x2, MAT_AT(hd->diff_rms, i, 0), utf8), MUL_SYM(utf8), celltext_num(x3, p->subln.a[j], utf8),
		              MUL_SYM(utf8), celltext_num(x4, 1.0 - p->lambda_init, utf8), celltext_num(x5, MAT_AT(hd->diff_out, i, j), utf8));
		strbuf_printf(b, _("(concat takes it as head %d's column %d)\n"), h1 + j / dv, j % dv);
		break;
	default:
		break;
	}
}

static int operands_diff(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	switch (which) {
	case AM_DIFF_A1:
		out[0] = (ExplainOperand){ AM_WEIGHTS, h & ~1, i, j };
		return 1;
	case AM_DIFF_A2:
		out[0] = (ExplainOperand){ AM_WEIGHTS, h | 1, i, j };
		return 1;
	case AM_DIFF_LAMBDA:
		if (j > 1)
			return 0;
		out[0] = (ExplainOperand){ j == 0 ? AM_DIFF_LQ1 : AM_DIFF_LQ2, 0, 0, -1 };
		out[1] = (ExplainOperand){ j == 0 ? AM_DIFF_LK1 : AM_DIFF_LK2, 0, 0, -1 };
		return 2;
	case AM_DIFF_A:
		out[0] = (ExplainOperand){ AM_DIFF_A1, h, i, j };
		out[1] = (ExplainOperand){ AM_DIFF_A2, h, i, j };
		out[2] = (ExplainOperand){ AM_DIFF_LAMBDA, 0, 0, 3 };
		return 3;
	case AM_DIFF_O:
		out[0] = (ExplainOperand){ AM_DIFF_A, h, i, -1 };
		out[1] = (ExplainOperand){ AM_V, h, -1, diff_v0(a, attn_params(a), h) + j };
		return 2;
	case AM_DIFF_RMS:
		out[0] = (ExplainOperand){ AM_DIFF_O, h, i, -1 };
		return 1;
	case AM_DIFF_OUT:
		out[0] = (ExplainOperand){ AM_DIFF_O, h, i, j };
		out[1] = (ExplainOperand){ AM_DIFF_RMS, h, i, 0 };
		out[2] = (ExplainOperand){ AM_DIFF_SUBLN, 0, 0, j };
		return 3;
	default:
		return 0;
	}
}

const AttnVariant variant_diffattn = {
	.name = "diff_attn",
	.feature = FEAT_DIFF,
	.stage = STAGE_DIFF,
	.kernel = pass_diff, /* no rules: rerun after any change (it reads every head's weights) */
	.explain = explain_diff,
	.operands = operands_diff,
	.fault = diff_fault,
	.same = diff_same,
	.head_row = diff_head_row,
	.head_row_of = AM_DIFF_OUT,
};

const AttnVariant variant_diffattn_out = {
	.name = "diff_out",
	.feature = FEAT_DIFF,
	.stage = STAGE_DIFF_OUT,
	.kernel = pass_diff_out,
	.explain = explain_diff,
	.operands = operands_diff,
};
