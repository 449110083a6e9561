/* headscores.c: a head's previous-token, first-token, diagonal and induction
 * scores (headscores.h), and their words for explain and `help heads`. */
#include "inspect/headscores.h"

#include <stdlib.h>

#include "base/i18n.h"
#include "base/prng.h"
#include "base/strbuf.h"
#include "engine/celltext.h"

const char *const headscore_words[HS_COUNT] = { "prev", "first", "diag", "induction" };
const char *const headscore_names[HS_COUNT] = { N_("previous-token"), N_("first-token"), N_("diagonal"),
	                                        N_("induction") };

int headscore_key(HeadScoreKind k, int i)
{
	switch (k) {
	case HS_PREV:
		return i >= 1 ? i - 1 : -1;
	case HS_FIRST:
		return i >= 1 ? 0 : -1; /* row 0 sees only key 0: its weight there is 1 under a causal mask */
	case HS_DIAG:
		return i;
	default:
		return -1;
	}
}

/* Row i's weight on key j counted into s when row i may see it. */
static void count(HeadScore *s, const Mat *w, const unsigned char *visible, int i, int j)
{
	if (j < 0 || j >= w->cols || (visible != NULL && !visible[(size_t)i * (size_t)w->cols + (size_t)j]))
		return;
	s->sum += MAT_AT(*w, i, j);
	s->rows++;
}

static HeadScore finish(HeadScore s)
{
	s.mean = s.rows > 0 ? s.sum / s.rows : 0.0;
	return s;
}

HeadScore headscore_pattern(HeadScoreKind k, const Mat *w, const unsigned char *visible)
{
	HeadScore s = { 0, 0.0, 0.0 };

	for (int i = 0; w != NULL && i < w->rows; i++)
		count(&s, w, visible, i, headscore_key(k, i));
	return finish(s);
}

int headscore_induction_key(const long long *ids, int p)
{
	for (int q = 0; q < p; q++)
		if (ids[q] == ids[p])
			return q + 1;
	return -1;
}

HeadScore headscore_induction(const Mat *w, const unsigned char *visible, const long long *ids, int from)
{
	HeadScore s = { 0, 0.0, 0.0 };

	for (int p = from > 0 ? from : 0; w != NULL && ids != NULL && p < w->rows; p++)
		count(&s, w, visible, p, headscore_induction_key(ids, p));
	return finish(s);
}

int headscore_repeat_ids(long long *ids, long long bos, int half, long long vocab, uint64_t seed)
{
	Prng g;
	int k = 0;

	prng_seed(&g, seed);
	if (bos >= 0)
		ids[k++] = bos;
	const int from = k + half;
	for (int i = 0; i < half; i++) {
		long long v = vocab > 0 ? (long long)(prng_uniform(&g) * (double)vocab) : 0;
		ids[k + i] = v < vocab ? v : vocab - 1;
		ids[from + i] = ids[k + i];
	}
	return from;
}

HeadScore headscores_induction_run(const Attn *run, int layer, int h, const long long *ids, int from)
{
	const Attn *a = run != NULL ? attn_layer(run, layer) : NULL;
	const Mat *w = a != NULL && h >= 0 && h < a->heads && !attn_config(a)->has_source ? attn_matrix(a, AM_WEIGHTS, h)
	                                                                                 : NULL;

	if (w == NULL)
		return (HeadScore){ 0, 0.0, 0.0 };
	return headscore_induction(w, a->visible, ids, from);
}

const char *headscores_why(const Attn *a, HeadScoreKind k)
{
	const ModelConfig *c = attn_config(a);

	if (c->has_source)
		return _("cross-attention: its keys are the source's tokens, so position i of a query and of a key "
		         "are not the same token");
	if (k == HS_INDUCTION && (c->vocab <= 0 || c->ids == NULL))
		return _("a lesson has no vocabulary: the induction score needs a run of the model on random tokens "
		         "repeated twice, which only a model with token ids can make");
	if (k == HS_INDUCTION)
		return _("computed on random tokens repeated twice: the model's run on them is made by its importer");
	return NULL;
}

void headscores_of(const Attn *a, int h, HeadScores *out)
{
	const Mat *w = attn_matrix(a, AM_WEIGHTS, h);

	for (int k = 0; k < HS_COUNT; k++)
		out->s[k] = (HeadScore){ 0, 0.0, 0.0 };
	if (w == NULL || attn_config(a)->has_source)
		return;
	for (int k = HS_PREV; k <= HS_DIAG; k++)
		out->s[k] = headscore_pattern((HeadScoreKind)k, w, a->visible);
}

/* The definition of score k, one sentence. */
static const char *definition(HeadScoreKind k)
{
	switch (k) {
	case HS_PREV:
		return _("previous-token: the mean, over the rows i >= 1 that can see key i - 1, of the weight on key "
		         "i - 1 (a head that reads the token before)");
	case HS_FIRST:
		return _("first-token (the sink): the mean, over the rows i >= 1 that can see key 0, of the weight on "
		         "key 0 (a head with nothing to do parks its weight there; row 0 is left out: under a causal "
		         "mask it sees only key 0, so its weight there is always 1)");
	case HS_DIAG:
		return _("diagonal: the mean, over the rows i that can see key i, of the weight on key i (a head that "
		         "reads its own token)");
	default:
		return _("induction: on random tokens repeated twice, the mean, over the tokens of the second copy, of "
		         "the weight on the token after the same token's first occurrence (a head that copies what "
		         "came next last time)");
	}
}

char *headscore_definitions(int utf8)
{
	StrBuf b = { 0 };

	(void)utf8;
	strbuf_printf(&b, "%s\n", _("Head scores (each a number from 0 to 1; - when no row can have it):"));
	for (int k = 0; k < HS_COUNT; k++)
		strbuf_printf(&b, "  %s\n", definition((HeadScoreKind)k));
	return b.oom ? (free(b.s), NULL) : b.s;
}

char *headscore_explain(const Attn *a, int h, HeadScoreKind k, const char *label, int utf8)
{
	StrBuf b = { 0 };
	HeadScores sc;
	char n1[32], n2[32], n3[32];
	const char *why = headscores_why(a, k);
	const Mat *w = attn_matrix(a, AM_WEIGHTS, h);

	headscores_of(a, h, &sc);
	strbuf_printf(&b, _("%s, head %d: %s score\n"), label, h, _(headscore_names[k]));
	strbuf_printf(&b, "%s\n", definition(k));
	if (why != NULL && (k == HS_INDUCTION || attn_config(a)->has_source)) {
		strbuf_printf(&b, _("not computed here (%s): %s\n"), celltext_sym(utf8, "\u2014", "-"), why);
		return b.oom ? (free(b.s), NULL) : b.s;
	}
	const HeadScore *s = &sc.s[k];
	if (w == NULL || s->rows == 0) {
		strbuf_printf(&b, "%s\n", _("no row can see that key here, so the score is undefined (-)"));
		return b.oom ? (free(b.s), NULL) : b.s;
	}
	/* the rows counted, each with its weight; then the sum and the mean */
	strbuf_printf(&b, ngettext("%d row counted:\n", "%d rows counted:\n", (unsigned long)s->rows), s->rows);
	int shown = 0;
	for (int i = 0; i < w->rows; i++) {
		const int j = headscore_key(k, i);
		if (j < 0 || j >= w->cols || (a->visible != NULL && !a->visible[(size_t)i * (size_t)w->cols + (size_t)j]))
			continue;
		if (shown++ < CELLTEXT_MAX_TERMS)
			strbuf_printf(&b, "  weights[%d][%d] = %s\n", i, j, celltext_num(n1, MAT_AT(*w, i, j), utf8));
	}
	if (shown > CELLTEXT_MAX_TERMS)
		strbuf_printf(&b, _("  ... and %d more\n"), shown - CELLTEXT_MAX_TERMS);
	strbuf_printf(&b, _("sum = %s\nmean = %s / %d = %s\n"), celltext_num(n1, s->sum, utf8),
	              celltext_num(n2, s->sum, utf8), s->rows, celltext_num(n3, s->mean, utf8));
	return b.oom ? (free(b.s), NULL) : b.s;
}

char *headscore_explain_induction(const HeadScore *s, int half, int h, const char *label, int utf8)
{
	StrBuf b = { 0 };
	char n1[32], n2[32], n3[32];

	strbuf_printf(&b, _("%s, head %d: %s score\n"), label, h, _(headscore_names[HS_INDUCTION]));
	strbuf_printf(&b, "%s\n", definition(HS_INDUCTION));
	strbuf_printf(&b, _("computed on %d random tokens, then the same %d again (the model run once on them)\n"), half,
	              half);
	if (s->rows == 0) {
		strbuf_printf(&b, "%s\n", _("no row can see that key here, so the score is undefined (-)"));
		return b.oom ? (free(b.s), NULL) : b.s;
	}
	strbuf_printf(&b, ngettext("%d row counted:\n", "%d rows counted:\n", (unsigned long)s->rows), s->rows);
	strbuf_printf(&b, _("sum = %s\nmean = %s / %d = %s\n"), celltext_num(n1, s->sum, utf8),
	              celltext_num(n2, s->sum, utf8), s->rows, celltext_num(n3, s->mean, utf8));
	return b.oom ? (free(b.s), NULL) : b.s;
}

double headscore_block_sum(const Attn *a, const Mat *w, int r0, int r1, int c0, int c1, int *seen)
{
	double sum = 0;

	*seen = 0;
	for (int i = r0; i < r1; i++)
		for (int j = c0; j < c1; j++) {
			if (a->visible != NULL && !a->visible[(size_t)i * (size_t)w->cols + (size_t)j])
				continue;
			sum += MAT_AT(*w, i, j);
			*seen = 1;
		}
	return sum;
}
