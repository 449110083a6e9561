/* flash.c: FlashAttention's tiles (Dao et al.), the variant "flash".
 *
 * The same head outputs as softmax · V without the n × m weights: query
 * blocks of block_q rows against key blocks of block_k columns, each row
 * keeping a running maximum, sum and unnormalised output (an online
 * softmax). Its stage is STAGE_FLASH ("flash" in catalog.c), which keeps
 * each row's state after each key block (flash_m, flash_l, flash_O) and the
 * output (flash_out, equal to weighted); a tile a −∞ mask hides is skipped.
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int attn_flash_skipped(const Attn *a, int qb, int kb)
{
	const ModelConfig *cfg = attn_config(a);
	const int bq = cfg->flash_bq, bk = cfg->flash_bk;

	if (!cfg->mask_fill_inf)
		return 0;
	for (int i = qb * bq; i < cfg->n && i < (qb + 1) * bq; i++)
		for (int j = kb * bk; j < cfg->m && j < (kb + 1) * bk; j++)
			if (a->visible[(size_t)i * cfg->m + j])
				return 0;
	return 1;
}

/*
 * FlashAttention, for each head: the same weighted sums without the n × m
 * weights. Query blocks of block_q rows; for each, key blocks of block_k
 * columns in order, each tile S = masked[rows][cols] (scale, bias and mask
 * already in it). Per row, with m the running maximum, l the running sum
 * and O (1 × d_v) the running unnormalised output (m = −∞, l = 0, O = 0
 * before the first tile):
 *   m' = max(m, rowmax S)   P = exp(S − m')   l' = e^(m − m')·l + rowsum P
 *   O' = e^(m − m')·O + P·V_tile
 * A row whose m' is still −∞ keeps its state. out = O / l (0 where l = 0).
 * With attention sinks (sinks.c) the sink's term joins the sum at the end,
 * as gpt-oss's kernel adds it (gpt_oss/triton/attention.py: after the key
 * blocks, z = l + e^(sink − m), acc / z): out = O / (l + e^(sink_h − m)), and
 * the tiles' m, l and O are those without a sink.
 * A tile the −∞ mask hides entirely is skipped. After key block c each row's
 * state is kept in column c of flash_m and flash_l and columns [c·d_v, (c+1)·d_v) of flash_O.
 */
/*
 * Query rows taken together: each tile's P·V is one product of FLASH_ROWS rows (V's tile read where it
 * lies, as a product of few rows does), and their sums' chains of adds run side by side. 16: at n = 1024
 * the stage took 70 ms with 8, about 55 with 16 or 32 (V's tiles then packed for each product, an eighth
 * of it with 8), more again with 64. Tried and measured slower (2026-11-28): V's head copied side by
 * side first, and each row's O kept in flash_O itself (C's rows 8 KiB apart there) instead of a row copied
 * out after each key block.
 */
enum { FLASH_ROWS = 16 };

static void pass_flash(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const int n = cfg->n, m = cfg->m, dv = lp->d_v, bq = cfg->flash_bq, bk = cfg->flash_bk, nkb = a->shape.dim[DIM_NKB];
	const int nqb = (n + bq - 1) / bq;
	/* which tiles the mask hides, found once (not once per row and head) */
	unsigned char *skip = malloc((size_t)nqb * (size_t)nkb);
	/* rows i0 … of masked, and each one's P = exp(S − m') for the tile (FLASH_ROWS × bk) */
	double *rows = attn_scratch_row(a, FLASH_ROWS * m), *P = attn_scratch_row(a, FLASH_ROWS * bk);

	if (skip == NULL || rows == NULL || P == NULL) {
		a->failed = 1;
		free(skip);
		free(rows);
		free(P);
		return;
	}
	for (int qb = 0; qb < nqb; qb++)
		for (int kb = 0; kb < nkb; kb++)
			skip[(size_t)qb * nkb + kb] = (unsigned char)attn_flash_skipped(a, qb, kb);
	const AttnVariant *sink = attn_sink(a);
	for (int h = 0; h < a->heads; h++) {
		AttnHead *hd = &a->head[h];
		const size_t vcol = (size_t)attn_kv_head(a, h) * dv;
		const double sink_h = sink != NULL ? sink->sink_logit(a, h) : 0.0;
		for (int qb = 0; qb < nqb; qb++) {
			const int qend = n < (qb + 1) * bq ? n : (qb + 1) * bq;
			int seen = 0; /* the keys up to the end of the last tile the mask does not hide: the rows' part that is read */
			for (int kb = 0; kb < nkb; kb++)
				if (!skip[(size_t)qb * nkb + kb])
					seen = (kb + 1) * bk < m ? (kb + 1) * bk : m;
			/* the query block's rows FLASH_ROWS at a time; each row's numbers are as if it were alone */
			for (int i0 = qb * bq; i0 < qend; i0 += FLASH_ROWS) {
				const int nr = qend - i0 < FLASH_ROWS ? qend - i0 : FLASH_ROWS;
				double mx[FLASH_ROWS], sum[FLASH_ROWS];
				int live[FLASH_ROWS]; /* the rows whose m' is finite in this tile */
				for (int r = 0; r < nr; r++) {
					mx[r] = -INFINITY, sum[r] = 0.0;
					memset(&MAT_AT(hd->flash_out, i0 + r, 0), 0, (size_t)dv * sizeof(double));
					attn_derived_row(a, AM_MASKED, h, i0 + r, &rows[(size_t)r * m], seen);
				}
				for (int kb = 0; kb < nkb; kb++) {
					const int k0 = kb * bk, k1 = k0 + bk < m ? k0 + bk : m;
					if (!skip[(size_t)qb * nkb + kb]) {
						int any = 0;
						for (int r = 0; r < nr; r++) {
							const double *row = &rows[(size_t)r * m];
							double m2 = mx[r], *O = &MAT_AT(hd->flash_out, i0 + r, 0);
							const double top = mat_max(k1 - k0, row + k0); /* the keys' one at a time */
							live[r] = 0;
							if (top > m2)
								m2 = top;
							if (m2 == -INFINITY)
								continue;
							{
								const double alpha = exp(mx[r] - m2); /* 0 while mx is −∞ */
								sum[r] *= alpha;
								for (int c = 0; c < dv; c++)
									O[c] *= alpha;
							}
							mat_exp_shifted(k1 - k0, row + k0, m2, &P[(size_t)r * bk]);
							mx[r] = m2;
							live[r] = any = 1;
						}
						/* l' = l + rowsum P, each row's terms in the order of j, the rows side by side (one chain of adds each) */
						for (int j = 0; j < k1 - k0; j++)
							for (int r = 0; r < nr; r++)
								if (live[r])
									sum[r] += P[(size_t)r * bk + (size_t)j];
						/* O += P·V_tile: each O[c] summed on from what it holds in the order of j (mat_axpy's terms) */
						int all = any;
						for (int r = 0; r < nr; r++)
							all &= live[r];
						if (all) { /* every row: one product on the kernels */
							mat_mul_acc(nr, k1 - k0, dv, P, (size_t)bk, 0, &a->V.a[(size_t)k0 * a->V.cols + vcol],
							            (size_t)a->V.cols, 0, &MAT_AT(hd->flash_out, i0, 0), (size_t)hd->flash_out.cols,
							            MAT_CONTINUE);
							any = 0;
						}
						for (int j = k0; j < k1 && any; j++) {
							const double *v = &a->V.a[(size_t)j * a->V.cols + vcol];
							for (int r = 0; r < nr; r++) {
								const double p = P[(size_t)r * bk + (size_t)(j - k0)];
								double *O = &MAT_AT(hd->flash_out, i0 + r, 0);
								if (!live[r])
									continue;
								mat_axpy(dv, p, v, O);
							}
						}
					}
					for (int r = 0; r < nr; r++) {
						MAT_AT(hd->flash_m, i0 + r, kb) = mx[r];
						MAT_AT(hd->flash_l, i0 + r, kb) = sum[r];
						memcpy(&MAT_AT(hd->flash_O, i0 + r, (size_t)kb * dv), &MAT_AT(hd->flash_out, i0 + r, 0),
						       (size_t)dv * sizeof(double));
					}
				}
				for (int r = 0; r < nr; r++) {
					double *O = &MAT_AT(hd->flash_out, i0 + r, 0);
					/* the sink's term (e^(sink − m) is +∞ for a row that saw no key: its O is 0, and 0 it stays) */
					double z = sum[r];
					if (sink != NULL) { /* e^(sink − m) as the tiles' own P, by mat_exp_shifted */
						double es;
						mat_exp_shifted(1, &sink_h, mx[r], &es);
						z += es;
					}
					for (int c = 0; c < dv; c++)
						O[c] = z > 0 ? O[c] / z : 0.0;
				}
			}
		}
	}
	free(skip);
	free(rows);
	free(P);
}

/* FlashAttention's running state of row i after key block c, and its output. */
static void explain_flash(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const AttnHead *hd = &a->head[h];
	const int bq = cfg->flash_bq, bk = cfg->flash_bk, dv = lp->d_v;
	const int kb = which == AM_FLASH_O ? j / dv : which == AM_FLASH_OUT ? (cfg->m + bk - 1) / bk - 1 : j;
	const int k0 = kb * bk, k1 = k0 + bk < cfg->m ? k0 + bk : cfg->m;
	char x1[32], x2[32], x3[32], x4[32];

	strbuf_printf(b, _("row %d is in query block %d (rows %d..%d); key block %d is keys %d..%d\n"), i, i / bq, i / bq * bq,
	              (i / bq + 1) * bq < cfg->n ? (i / bq + 1) * bq - 1 : cfg->n - 1, kb, k0, k1 - 1);
	if (which == AM_FLASH_OUT) {
		const double ll = MAT_AT(hd->flash_l, i, kb), O = MAT_AT(hd->flash_O, i, kb * dv + j);
		const AttnVariant *sink = attn_sink(a);
		if (sink != NULL) {
			/* the sink's term joins the sum after the last tile */
			const double s = sink->sink_logit(a, h), mm = MAT_AT(hd->flash_m, i, kb), e = exp(s - mm);
			if (mm == -INFINITY) {
				strbuf_printf(b, _("row %d saw no key (l = 0, m = %s): its output is 0\n"), i, celltext_sym(utf8, "\u2212\u221e", "-inf"));
				return;
			}
			strbuf_printf(b, _("out = O / (l + e^(sink %s m)) after the last tile: head %d's sink logit %s joins the sum\n"),
			              celltext_sym(utf8, "\u2212", "-"), h, celltext_num(x1, s, utf8));
			char x5[32], x6[32], x7[32];
			strbuf_printf(b, "= %s / (%s + exp(%s %s %s)) = %s / (%s + %s) = %s  (weighted[%d][%d] = %s)\n",
			              celltext_num(x1, O, utf8), celltext_num(x2, ll, utf8), celltext_num(x3, s, utf8),
			              celltext_sym(utf8, "\u2212", "-"), celltext_num(x4, mm, utf8), x1, x2,
			              celltext_num(x5, e, utf8), celltext_num(x6, MAT_AT(hd->flash_out, i, j), utf8),
			              i, j, celltext_num(x7, MAT_AT(hd->weighted, i, j), utf8));
			return;
		}
		if (ll > 0)
			strbuf_printf(b, _("out = O / l after the last tile = %s / %s = %s  (weighted[%d][%d] = %s)\n"), celltext_num(x1, O, utf8),
			              celltext_num(x2, ll, utf8), celltext_num(x3, O / ll, utf8), i, j, celltext_num(x4, MAT_AT(hd->weighted, i, j), utf8));
		else
			strbuf_printf(b, _("row %d saw no key (l = 0): its output is 0\n"), i);
		return;
	}
	if (attn_flash_skipped(a, i / bq, kb)) {
		strbuf_printf(b, _("the mask hides this whole tile, so it is skipped: the state is what it was before\n"));
		return;
	}
	{
		const double m_before = kb > 0 ? MAT_AT(hd->flash_m, i, kb - 1) : -INFINITY, m_after = MAT_AT(hd->flash_m, i, kb);
		const double l_before = kb > 0 ? MAT_AT(hd->flash_l, i, kb - 1) : 0.0;
		const double alpha = m_after == -INFINITY ? 0.0 : exp(m_before - m_after);
		strbuf_printf(b, "m' = max(m, rowmax S) = max(%s, ", celltext_num(x1, m_before, utf8));
		for (int k = k0; k < k1; k++)
			strbuf_printf(b, "%s%s", k > k0 ? ", " : "", celltext_num(x2, attn_cell(a, AM_MASKED, h, i, k), utf8));
		strbuf_printf(b, ") = %s\n", celltext_num(x3, m_after, utf8));
		if (which == AM_FLASH_M)
			return;
		strbuf_printf(b, _("rescale by e^(m %s m') = %s\n"), celltext_sym(utf8, "\u2212", "-"), celltext_num(x1, alpha, utf8));
		if (which == AM_FLASH_L) {
			strbuf_printf(b, "l' = %s %s %s", celltext_num(x1, alpha, utf8), celltext_sym(utf8, "\u00b7", "*"), celltext_num(x2, l_before, utf8));
			for (int k = k0; k < k1 && m_after != -INFINITY; k++)
				strbuf_printf(b, " + exp(%s %s %s)", celltext_num(x1, attn_cell(a, AM_MASKED, h, i, k), utf8), celltext_sym(utf8, "\u2212", "-"),
				              celltext_num(x2, m_after, utf8));
			strbuf_printf(b, " = %s\n", celltext_num(x3, MAT_AT(hd->flash_l, i, kb), utf8));
		} else {
			const int c = j % dv;
			strbuf_printf(b, "O' = %s %s %s", celltext_num(x1, alpha, utf8), celltext_sym(utf8, "\u00b7", "*"),
			              celltext_num(x2, kb > 0 ? MAT_AT(hd->flash_O, i, (kb - 1) * dv + c) : 0.0, utf8));
			for (int k = k0; k < k1 && m_after != -INFINITY; k++)
				strbuf_printf(b, " + exp(%s %s %s)%s%s", celltext_num(x1, attn_cell(a, AM_MASKED, h, i, k), utf8),
				              celltext_sym(utf8, "\u2212", "-"), celltext_num(x2, m_after, utf8), celltext_sym(utf8, "\u00b7", "*"),
				              celltext_num(x3, a->V.a[(size_t)k * a->V.cols + (size_t)attn_kv_head(a, h) * dv + c], utf8));
			strbuf_printf(b, " = %s\n", celltext_num(x3, MAT_AT(hd->flash_O, i, j), utf8));
		}
	}
}

/* The blocks fit the lesson's sizes (0 and 0: no tiles). */
static const char *flash_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	(void)lp;
	if ((cfg->flash_bq != 0 || cfg->flash_bk != 0) &&
	    (cfg->flash_bq < 1 || cfg->flash_bq > cfg->n || cfg->flash_bk < 1 || cfg->flash_bk > cfg->m))
		return "flash";
	return NULL;
}

static int flash_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xp; (void)yp;
	return xc->flash_bq == yc->flash_bq && xc->flash_bk == yc->flash_bk;
}

const AttnVariant variant_flash = {
	.name = "flash",
	.heads_apart = 1,
	.feature = FEAT_FLASH,
	.stage = STAGE_FLASH,
	.kernel = pass_flash,
	.rules = { { AM_FLASH_M, ATTN_MADE(AM_MASKED, AM_V) }, { AM_FLASH_L, ATTN_MADE(AM_MASKED, AM_V) },
	           { AM_FLASH_O, ATTN_MADE(AM_MASKED, AM_V) }, { AM_FLASH_OUT, ATTN_MADE(AM_MASKED, AM_V, AM_SINKS) } },
	.explain = explain_flash,
	.fault = flash_fault,
	.same = flash_same,
};
