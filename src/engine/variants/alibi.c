/* alibi.c: ALiBi (Press et al., "Train Short, Test Long"), the variant "alibi".
 *
 * No positions are added to the rows: each head h subtracts a penalty that
 * grows with the distance between query and key, bias_ij = −slope_h·|i − j|,
 * from the scaled scores; biased = scaled + bias is what the mask reads. Both
 * are derived matrices (attention.h): made when asked for, never kept. The
 * slopes are the lesson's, or the paper's geometric ones (model/model.c:
 * model_alibi_slope). Its stage is STAGE_BIAS ("bias" in catalog.c).
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>
#include <stdlib.h>

/* bias_ij = −slope_h·|i − j| (decoding: t − j, never negative, the same number). */
static double alibi_bias(const Attn *a, int h, int i, int j)
{
	return -a->slopes[h] * fabs((double)(i - j));
}

/* bias (n × m) = −slope_h·|i − j| for every cell; biased = scaled + bias (derived: checked, not kept). */
static void pass_bias(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	double *row = attn_scratch_row(a, cfg->m);

	(void)lp;
	for (int h = 0; row != NULL && h < a->heads; h++)
		for (int i = 0; i < cfg->n; i++) {
			attn_derived_row(a, AM_BIAS, h, i, row, cfg->m);
			a->nonfinite |= mat_nonfinite(row, (size_t)cfg->m);
			attn_derived_row(a, AM_BIASED, h, i, row, cfg->m);
			a->nonfinite |= mat_nonfinite(row, (size_t)cfg->m);
		}
	free(row);
}

/* Each head's slope: the lesson's, or the geometric sequence of the paper. */
static int alibi_setup(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	a->slopes = malloc((size_t)lp->heads * sizeof *a->slopes);
	if (a->slopes == NULL)
		return -1;
	for (int h = 0; h < lp->heads; h++)
		a->slopes[h] = mat_empty(&lp->alibi_slopes) ? model_alibi_slope(lp->heads, h) : lp->alibi_slopes.a[h];
	return 0;
}

static void alibi_release(Attn *a)
{
	free(a->slopes);
	a->slopes = NULL;
}

static const char *alibi_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	if (cfg->alibi && !mat_empty(&lp->alibi_slopes) && lp->alibi_slopes.rows * lp->alibi_slopes.cols != lp->heads)
		return "alibi.slopes";
	return NULL;
}

static int alibi_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	return xc->alibi == yc->alibi && attn_same_bits(&xp->alibi_slopes, &yp->alibi_slopes);
}

/* bias and biased: −slope·|i − j|, added to the scaled score. */
static void explain_alibi(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const int d = i > j ? i - j : j - i;
	const double bias = attn_cell(a, AM_BIAS, h, i, j);
	char x1[32], x2[32], x3[32];

	strbuf_printf(b, _("bias = %sslope %s |i %s j| = %s%s %s %d = %s  (head %d's slope; keys %d apart)\n"),
	              celltext_sym(utf8, "\u2212", "-"), celltext_sym(utf8, "\u00b7", "*"), celltext_sym(utf8, "\u2212", "-"),
	              celltext_sym(utf8, "\u2212", "-"), celltext_num(x1, a->slopes[h], utf8),
	              celltext_sym(utf8, "\u00d7", "*"), d, celltext_num(x2, bias, utf8), h, d);
	if (which == AM_BIASED)
		strbuf_printf(b, "biased = scaled + bias = %s + %s = %s\n",
		              celltext_num(x1, attn_cell(a, AM_SCALED, h, i, j), utf8), celltext_num(x2, bias, utf8),
		              celltext_num(x3, attn_cell(a, AM_BIASED, h, i, j), utf8));
}

/* biased[i][j]: the same cell of scaled and of bias; bias[i][j]: the cell of biased it goes into. */
static int operands_alibi(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	(void)a;
	out[0] = (ExplainOperand){ which == AM_BIASED ? AM_SCALED : AM_BIASED, h, i, j };
	if (which != AM_BIASED)
		return 1;
	out[1] = (ExplainOperand){ AM_BIAS, h, i, j };
	return 2;
}

const AttnVariant variant_alibi = {
	.name = "alibi",
	.heads_apart = 1,
	.feature = FEAT_ALIBI,
	.stage = STAGE_BIAS,
	.kernel = pass_bias,
	.rules = { { AM_BIAS, ATTN_MADE(AM_SCALED) }, { AM_BIASED, ATTN_MADE(AM_SCALED) } },
	.checks_itself = 1,
	.explain = explain_alibi,
	.operands = operands_alibi,
	.score_bias = alibi_bias,
	.bias_matrix = AM_BIAS,
	.biased_matrix = AM_BIASED,
	.setup = alibi_setup,
	.release = alibi_release,
	.fault = alibi_fault,
	.same = alibi_same,
	.decode_adj = N_(", biased"),
};
