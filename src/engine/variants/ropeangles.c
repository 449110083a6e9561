/* ropeangles.c: RoPE's angle tables (issue 23 §2), the variant "ropeangles".
 *
 * A lesson whose RoPE is scaled for long context ("scaling": linear,
 * dynamic, yarn, llama3) or partial ("partial_rotary_factor") gets the stage
 * STAGE_ANGLES ("angles" in catalog.c) before rotate: angles_plain, the angle
 * p·base^(−2i/rd) unscaled RoPE turns column c's pair i by at position p
 * (rd: the turned columns, d_k without partial RoPE), and angles, the one this
 * layer turns by (model/ropefreq.h: transformers' inv_freq); both 0 where a
 * column passes through, angles 0 on a NoPE layer. Column by column the two
 * show which dimensions the scaling stretched.
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"
#include "model/ropefreq.h"

#include <math.h>
#include <stdlib.h>

/* The pair column c of a head belongs to over rd turned columns, or −1 when it passes through. */
static int pair_of(const ModelConfig *cfg, int rd, int c)
{
	if (c >= rd)
		return -1;
	return cfg->rope_style == ROPE_INTERLEAVED ? c / 2 : c % (rd / 2);
}

/* angles_plain (n × d_k) and angles (n × d_k). */
static void pass_angles(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const int dk = lp->d_k, rd = rope_rotary_dim(cfg, dk);
	const double *inv = a->rope_inv; /* the layer's frequencies, made once (rope.c's setup) */
	double *plain = malloc(((size_t)dk / 2 + 1) * sizeof *plain);

	if (plain != NULL && inv != NULL) {
		rope_inv_freq_plain(cfg->rope_base, rd, plain);
		for (int p = 0; p < a->angles.rows; p++)
			for (int c = 0; c < dk; c++) {
				const int i = pair_of(cfg, rd, c);
				MAT_AT(a->angles_plain, p, c) = i < 0 ? 0.0 : (double)p * plain[i];
				MAT_AT(a->angles, p, c) = i < 0 || lp->rope_off ? 0.0 : (double)p * inv[i];
			}
	}
	free(plain);
}

/* A cell: the angle, its frequency, and what the scaling did to it. */
static void explain_angles(StrBuf *b, const Attn *a, AttnMatrix which, int h, int p, int c, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const RopeScaling *s = &cfg->rope_scaling;
	const int dk = lp->d_k, rd = rope_rotary_dim(cfg, dk), i = pair_of(cfg, rd, c);
	const char *times = celltext_sym(utf8, "\u00d7", "*");
	const double *inv = a->rope_inv, af = a->rope_af; /* the layer's frequencies (rope.c's setup) */
	char x1[32], x2[32], x3[32], x4[32], x5[32], x6[32], x7[32], x8[32];
	double plain;

	(void)h;
	if (inv == NULL)
		return;
	if (i < 0) {
		strbuf_printf(b, _("Partial RoPE: only the first %d of a head's %d columns turn; column %d passes through (angle 0)\n"),
		              rd, dk, c);
		return;
	}
	plain = pow(cfg->rope_base, -2.0 * i / rd);
	if (which == AM_ANGLES_PLAIN) {
		strbuf_printf(b, _("Unscaled RoPE: column %d is in pair %d, whose frequency is %s^(-2%s%d/%d) = %s; at position %d it has turned %d %s %s = %s rad (wavelength 2%s/freq = %s positions)\n"),
		              c, i, celltext_num(x1, cfg->rope_base, utf8), celltext_sym(utf8, "\u00b7", "*"), i, rd,
		              celltext_num(x2, plain, utf8), p, p, times, celltext_num(x3, plain, utf8),
		              celltext_num(x4, p * plain, utf8), celltext_sym(utf8, "\u03c0", "pi"),
		              celltext_num(x1, 2 * M_PI / plain, utf8));
		return;
	}
	if (lp->rope_off) {
		strbuf_printf(b, _("This layer has no RoPE (a NoPE layer): nothing turns, every angle is 0\n"));
		return;
	}
	strbuf_printf(b, _("Column %d is in pair %d of the %d turned columns; its frequency is %s, so at position %d it has turned %d %s %s = %s rad\n"),
	              c, i, rd, celltext_num(x1, inv[i], utf8), p, p, times, celltext_num(x2, inv[i], utf8),
	              celltext_num(x3, p * inv[i], utf8));
	switch (s->type) {
	case ROPE_SCALE_LINEAR:
		strbuf_printf(b, _("linear: every frequency divided by the factor %s (positions %s %s)\n"),
		              celltext_num(x1, s->factor, utf8), celltext_sym(utf8, "\u00f7", "/"), celltext_num(x2, s->factor, utf8));
		break;
	case ROPE_SCALE_DYNAMIC: {
		const int L = cfg->n > cfg->m ? cfg->n : cfg->m;
		if (L > s->orig_max)
			strbuf_printf(b, _("dynamic NTK: the sequence (%d) is longer than original_max_position_embeddings (%d), so the base grows to %s\n"),
			              L, s->orig_max, celltext_num(x1, rope_dynamic_base(cfg, rd, L), utf8));
		else
			strbuf_printf(b, _("dynamic NTK: the sequence (%d) fits in original_max_position_embeddings (%d): the base stays %s\n"),
			              L, s->orig_max, celltext_num(x1, cfg->rope_base, utf8));
		break;
	}
	case ROPE_SCALE_YARN: {
		double low, high, unscaled = plain;
		const double ramp = rope_yarn_ramp(cfg, rd, i, &low, &high);
		strbuf_printf(b, _("YaRN: pairs up to %s keep their frequency (they turn many times within %d positions), pairs from %s on are divided by %s; pair %d's ramp is %s, so its frequency is %s of the interpolated %s plus %s of the original %s\n"),
		              celltext_num(x1, low, utf8), s->orig_max, celltext_num(x2, high, utf8),
		              celltext_num(x3, s->factor, utf8), i, celltext_num(x4, ramp, utf8),
		              celltext_num(x5, ramp, utf8), celltext_num(x6, unscaled / s->factor, utf8),
		              celltext_num(x7, 1 - ramp, utf8), celltext_num(x8, unscaled, utf8));
		strbuf_printf(b, _("YaRN also multiplies cos and sin by its attention factor %s (0.1%sln %s + 1), so every score grows by its square\n"),
		              celltext_num(x1, af, utf8), celltext_sym(utf8, "\u00b7", "*"), celltext_num(x2, s->factor, utf8));
		break;
	}
	case ROPE_SCALE_LLAMA3: {
		const double wl = 2 * M_PI / plain;
		strbuf_printf(b, _("llama3: this pair's wavelength is %s positions; above %s (L%s/low_freq_factor) a frequency is divided by %s, below %s (L%s/high_freq_factor) it is kept, between the two it is blended\n"),
		              celltext_num(x1, wl, utf8), celltext_num(x2, s->orig_max / s->low_freq, utf8),
		              celltext_sym(utf8, "\u2080", "0"), celltext_num(x3, s->factor, utf8),
		              celltext_num(x4, s->orig_max / s->high_freq, utf8), celltext_sym(utf8, "\u2080", "0"));
		break;
	}
	default:
		break;
	}
	strbuf_printf(b, _("unscaled RoPE would turn it by %s rad here (angles_plain)\n"), celltext_num(x1, p * plain, utf8));
}

const AttnVariant variant_ropeangles = {
	.name = "ropeangles",
	.heads_apart = 1,
	.feature = FEAT_ROPE_TABLE,
	.stage = STAGE_ANGLES,
	.kernel = pass_angles,
	.explain = explain_angles,
	.same = NULL,
};
