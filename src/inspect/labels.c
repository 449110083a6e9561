/* labels.c: row and column labels, a cell's number, the parameter line — for every view. */
#include "inspect/labels.h"
#include "base/i18n.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "inspect/stats.h"

char *labels_number(char *buf, double x, int utf8)
{
	const double ax = fabs(x);

	if (x == -INFINITY)
		snprintf(buf, 16, "%s", utf8 ? "-\u221e" : "-inf");
	else if (x == INFINITY)
		snprintf(buf, 16, "%s", utf8 ? "\u221e" : "inf");
	else if (isnan(x)) /* only an expert a token did not choose is NaN (MF_NOT_CHOSEN): no number */
		snprintf(buf, 16, "%s", utf8 ? "\u00b7" : "--");
	else if (x == 0.0)
		snprintf(buf, 16, "0");
	else if (ax >= 1e5 || ax < 1e-4)
		snprintf(buf, 16, "%.2e", x);
	else if (ax >= 1000)
		snprintf(buf, 16, "%.1f", x);
	else
		snprintf(buf, 16, "%.4f", x);
	return buf;
}

int labels_token_columns(const Attn *a, AttnMatrix which)
{
	(void)a;
	return matrix_kind(which) != NULL && matrix_kind(which)->col_axis == AXIS_KEY;
}

/* A label on an axis: index i, the i-th query or key (source) token, or what a norm's statistic is. */
static char *axis_label(const Attn *a, Axis axis, int i)
{
	if (axis == AXIS_NORM_STATS) { /* attn_norm_row's two numbers */
		static const char *const names[2][2] = { { "mean", "var" }, { "ms", "rms" } };
		return strdup(names[attn_params(a)->block.norm_kind != NORM_LAYERNORM][i != 0]);
	}
	if (axis == AXIS_VOCAB)
		return labels_vocab(attn_config(a), i);
	if (axis == AXIS_CACHE_FORM || axis == AXIS_CACHE_COUNT) { /* mla.c's kv_cache table */
		static const char *const forms[4] = { "MHA", "GQA", "MQA", "MLA" };
		static const char *const counts[4] = { N_("numbers"), N_("bytes"), N_("V3 numbers"), N_("V3 bytes") };
		return strdup(axis == AXIS_CACHE_FORM ? forms[i & 3] : _(counts[i & 3]));
	}
	if (axis == AXIS_INDEX) {
		char buf[16];
		snprintf(buf, sizeof buf, "%d", i);
		return strdup(buf);
	}
	{
		const ModelConfig *cfg = attn_config(a);
		char *const *tok = axis == AXIS_KEY && cfg->has_source ? cfg->source_tokens : cfg->tokens;
		return text_escape(tok[i], "");
	}
}

char *labels_vocab(const ModelConfig *cfg, int v)
{
	char buf[24];

	if (cfg->vocab_tokens != NULL && v >= 0 && v < cfg->vocab && cfg->vocab_tokens[v] != NULL)
		return text_escape(cfg->vocab_tokens[v], "");
	snprintf(buf, sizeof buf, "#%d", v);
	return strdup(buf);
}

char *labels_col(const Attn *a, AttnMatrix which, int c)
{
	return axis_label(a, matrix_kind(which) ? matrix_kind(which)->col_axis : AXIS_INDEX, c);
}

char *labels_row(const Attn *a, AttnMatrix which, int r)
{
	return axis_label(a, matrix_kind(which) ? matrix_kind(which)->row_axis : AXIS_INDEX, r);
}

char *labels_params(const ModelConfig *c, const LayerParams *p, int utf8)
{
	char buf[200];

	snprintf(buf, sizeof buf, _("parameters: %ld (W_q, W_k, W_v%s%s) %s the same for any number of heads"),
	         stats_param_count(c, p), mat_empty(&p->W_o) ? "" : ", W_o", c->score == SCORE_ADDITIVE ? ", w_e" : "",
	         utf8 ? "\u2014" : "--");
	return strdup(buf);
}

char *labels_title_note(const Attn *a, AttnMatrix which, int utf8, int brief)
{
	const ModelConfig *c = attn_config(a);

	if (which != AM_DEC_SCORES)
		return NULL;
	if (c->scale == SCALE_VALUE)
		return brief ? str_printf(utf8 ? _("\u00d7%g later") : _("*%g next"), c->scale_value)
		             /* TRANSLATORS: beside dec_scores' title: its numbers are raw q·k, scaled by the lesson's factor in the softmax */
		             : str_printf(utf8 ? _("q\u00b7k, \u00d7%g in softmax") : _("q.k, *%g in softmax"), c->scale_value);
	if (c->scale == SCALE_SQRT_DK)
		return brief ? str_printf(utf8 ? _("\u00f7\u221a%d later") : _("/sqrt%d next"), attn_params(a)->d_k)
		             /* TRANSLATORS: beside dec_scores' title: its numbers are raw q·k, divided by √d_k in the softmax */
		             : str_printf(utf8 ? _("q\u00b7k, \u00f7\u221a%d in softmax") : _("q.k, /sqrt(%d) in softmax"),
		                          attn_params(a)->d_k);
	return NULL;
}
