/* lens.c: the logit lens (lens.h): every layer's output through the final
 * norm and the unembedding, its top tokens a position, as a table and in words. */
#include "inspect/lens.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/i18n.h"
#include "base/matrix.h"
#include "base/strbuf.h"
#include "base/text.h"
#include "engine/celltext.h"
#include "inspect/labels.h"

/*
 * logits (n × V) = normed (n × d) · unembedᵀ, LENS_BLOCK rows of the unembedding at a time as doubles
 * (model_unembed_row: the one place the lens reads it, a real model's kept in its file's dtype): each
 * cell is its own sum over d, so the bits are those of one product over the whole matrix. 0, or -1.
 */
enum { LENS_BLOCK = 512 };

static int unembed_logits(const ModelConfig *c, int n, int d, const double *normed, double *logits)
{
	const int V = c->vocab;
	double *rows = malloc((size_t)LENS_BLOCK * (size_t)d * sizeof *rows), *buf = malloc((size_t)d * sizeof *buf);

	if (rows == NULL || buf == NULL) {
		free(rows);
		free(buf);
		return -1;
	}
	for (int v0 = 0; v0 < V; v0 += LENS_BLOCK) {
		const int count = V - v0 < LENS_BLOCK ? V - v0 : LENS_BLOCK;
		for (int k = 0; k < count; k++)
			memcpy(&rows[(size_t)k * (size_t)d], model_unembed_row(c, v0 + k, buf), (size_t)d * sizeof *rows);
		(void)mat_mul_view(n, d, count, normed, (size_t)d, rows, (size_t)d, 1, &logits[v0], (size_t)V, 0);
	}
	free(rows);
	free(buf);
	return 0;
}

const LensCell *lens_cell(const Lens *l, int layer, int i)
{
	if (l == NULL || l->cell == NULL || layer < 0 || layer >= l->layers || i < 0 || i >= l->n)
		return NULL;
	return &l->cell[(size_t)layer * (size_t)l->n + (size_t)i];
}

void lens_free(Lens *l)
{
	if (l == NULL)
		return;
	free(l->cell);
	l->cell = NULL;
	l->layers = l->n = 0;
}

/* The cells of one layer: its output x (n × d) normed, times unembedᵀ, each row's softmax and top entries. */
static int lens_layer(const ModelConfig *c, const Mat *x, double *normed, double *logits, double *p, LensCell *cells)
{
	const int n = x->rows, d = x->cols, V = c->vocab;
	int idx[LENS_TOP];

	for (int i = 0; i < n; i++) {
		const double *row = &x->a[(size_t)i * (size_t)d];
		if (c->has_final_norm)
			attn_norm_row(row, &normed[(size_t)i * (size_t)d], d, (int)c->final_kind, c->final_eps,
			              c->final_gamma.a, mat_empty(&c->final_beta) ? NULL : c->final_beta.a, NULL);
		else
			memcpy(&normed[(size_t)i * (size_t)d], row, (size_t)d * sizeof *row);
	}
	if (unembed_logits(c, n, d, normed, logits) != 0)
		return -1;
	for (int i = 0; i < n; i++) {
		const double *z = &logits[(size_t)i * (size_t)V];
		LensCell *cell = &cells[i];
		attn_softmax_row(z, p, V);
		cell->ntop = attn_top_entries(z, V, V < LENS_TOP ? V : LENS_TOP, idx);
		for (int k = 0; k < cell->ntop; k++) {
			cell->id[k] = idx[k];
			cell->p[k] = p[idx[k]];
			cell->logit[k] = z[idx[k]];
		}
	}
	return 0;
}

/* The last link of a's chain (whose configuration has the LM head), and how many links there are (links may be NULL). */
static const Attn *last_link(const Attn *a, int *links)
{
	int k = 1;

	for (; a->next != NULL; a = a->next)
		k++;
	if (links != NULL)
		*links = k;
	return a;
}

int lens_compute(const Attn *a, Lens *out, char **err)
{
	int layers;
	const Attn *last = last_link(a, &layers);
	double *normed, *logits, *p;

	*err = NULL;
	memset(out, 0, sizeof *out);
	const ModelConfig *c = attn_config(last); /* the LM head's: its vocabulary, final norm and unembedding */
	if (c->vocab <= 0 || !model_unembed_is(c, c->vocab, attn_layer_output(last)->cols)) {
		*err = strdup(_("the logit lens needs a vocabulary and an unembedding: open a model (--model DIR) or a "
		                "lesson with \"vocab\""));
		return -1;
	}
	const int n = c->n, d = c->d_model, V = c->vocab;
	normed = malloc((size_t)n * (size_t)d * sizeof *normed);
	logits = malloc((size_t)n * (size_t)V * sizeof *logits);
	p = malloc((size_t)V * sizeof *p);
	out->cell = calloc((size_t)layers * (size_t)n, sizeof *out->cell);
	if (normed == NULL || logits == NULL || p == NULL || out->cell == NULL) {
		free(normed), free(logits), free(p);
		lens_free(out);
		*err = strdup(_("out of memory"));
		return -1;
	}
	out->layers = layers;
	out->n = n;
	out->vocab = V;
	int L = 0, r = 0;
	for (const Attn *x = a; x != NULL && r == 0; x = x->next, L++)
		r = lens_layer(c, attn_block_output(x), normed, logits, p, &out->cell[(size_t)L * (size_t)n]);
	free(normed);
	free(logits);
	free(p);
	if (r != 0) {
		lens_free(out);
		*err = strdup(_("out of memory"));
	}
	return r;
}

/* t (heap, escaped) cut to whole characters that fit width columns. */
static char *cut_to(char *t, int width)
{
	if (t != NULL)
		t[text_fit(t, width)] = '\0';
	return t;
}

char *lens_token(const Attn *a, int id, int width)
{
	return cut_to(labels_vocab(attn_config(last_link(a, NULL)), id), width);
}

#define LENS_COL 10 /* a column: 9 for the token, 1 between */

char *lens_table(const Attn *a, const Lens *l, int width, int utf8)
{
	StrBuf b = { 0 };
	const ModelConfig *c = attn_config(a);
	const int head = 6, per = width - head > LENS_COL ? (width - head) / LENS_COL : 1;

	(void)utf8;
	strbuf_printf(&b, "%s\n", _("logit lens: each layer's output through the final norm and the unembedding, the "
	                            "most probable token at each position (lens L I explains a cell)"));
	for (int from = 0; from < l->n; from += per) {
		const int to = from + per < l->n ? from + per : l->n;
		strbuf_printf(&b, "\n%*s", head, "");
		for (int i = from; i < to; i++) {
			char *t = text_escape(c->tokens[i], "");
			char *cut = cut_to(t != NULL ? str_printf("%d:%s", i, t) : NULL, LENS_COL - 1);
			strbuf_printf(&b, "%s%*s", cut != NULL ? cut : "",
			              i + 1 < to ? LENS_COL - (cut != NULL ? text_width(cut, -1) : 0) : 0, "");
			free(t);
			free(cut);
		}
		strbuf_puts(&b, "\n");
		for (int L = 0; L < l->layers; L++) {
			char word[16];
			snprintf(word, sizeof word, "L%d", L);
			strbuf_printf(&b, "%-*s", head, word);
			for (int i = from; i < to; i++) {
				const LensCell *cell = lens_cell(l, L, i);
				char *t = cell->ntop > 0 ? lens_token(a, cell->id[0], LENS_COL - 1) : strdup("-");
				strbuf_printf(&b, "%s%*s", t != NULL ? t : "",
				              i + 1 < to ? LENS_COL - (t != NULL ? text_width(t, -1) : 0) : 0, "");
				free(t);
			}
			strbuf_puts(&b, "\n");
		}
	}
	return b.oom ? (free(b.s), NULL) : b.s;
}

char *lens_explain(const Attn *a, const Lens *l, int layer, int i, int utf8)
{
	StrBuf b = { 0 };
	const LensCell *cell = lens_cell(l, layer, i);
	char n1[32], n2[32];

	if (cell == NULL)
		return str_printf(_("no such cell: layer 0 to %d, position 0 to %d"), l->layers - 1, l->n - 1);
	strbuf_printf(&b, _("logit lens, layer %d, position %d:\n"), layer, i);
	strbuf_printf(&b, _("z = final_norm(the layer's output at the position) %s unembed%s (a logit per vocabulary token); "
	                    "p = softmax(z)\n"), celltext_sym(utf8, "\u00b7", "*"), celltext_sym(utf8, "\u1d40", "^T"));
	for (int k = 0; k < cell->ntop; k++) {
		char *t = labels_vocab(attn_config(last_link(a, NULL)), cell->id[k]);
		strbuf_printf(&b, "  %d. %s (#%d)  p = %s  z = %s\n", k + 1, t != NULL ? t : "", cell->id[k],
		              celltext_num(n1, cell->p[k], utf8), celltext_num(n2, cell->logit[k], utf8));
		free(t);
	}
	return b.oom ? (free(b.s), NULL) : b.s;
}
