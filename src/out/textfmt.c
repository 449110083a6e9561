/* textfmt.c: matrices as aligned text tables, stages as text (plain REPL, batch). */
#include "out/textfmt.h"
#include "base/i18n.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <wchar.h>

#include "engine/variants/variants.h"
#include "inspect/explain.h"
#include "inspect/labels.h"
#include "out/themefile.h"
#include "inspect/stats.h"
#include "base/strbuf.h"

/*
 * A row or column label cut to TEXTFMT_LABEL_MAX columns, ending in "…":
 * a 10 000-character token would otherwise widen every column of a
 * matrix to 10 000. Takes s (heap) and returns a heap string.
 */
#define TEXTFMT_LABEL_MAX 24
static char *fit_label(char *s, int utf8)
{
	size_t len, used = 0;
	int w = 0;
	char *out;

	if (s == NULL || text_width(s, -1) <= TEXTFMT_LABEL_MAX)
		return s;
	len = strlen(s);
	while (used < len) {
		wchar_t wc;
		int cw, k = text_char(s + used, len - used, &wc, &cw);
		if (w + cw > TEXTFMT_LABEL_MAX - 1)
			break;
		w += cw;
		used += (size_t)k;
	}
	out = malloc(used + 4);
	if (out == NULL)
		return s;
	memcpy(out, s, used);
	strcpy(out + used, utf8 ? "\u2026" : "~");
	free(s);
	return out;
}

static void put_padded(FILE *f, const char *s, int width, int right)
{
	int pad = width - text_width(s, -1);
	if (right)
		for (; pad > 0; pad--)
			fputc(' ', f);
	fputs(s, f);
	if (!right)
		for (; pad > 0; pad--)
			fputc(' ', f);
}

/*
 * An xterm-256 background for value x on the matrix's scale, from the
 * theme's ramps (the ones the full-screen view and SVG exports use):
 * diverging around 0 for scores, sequential from min to max for weights.
 */
static int heat_color(double x, double lo, double hi, int diverging)
{
	const ThemeFile *th = themefile_current();
	double bound = fmax(fabs(lo), fabs(hi));

	if (!isfinite(x))
		return th->masked;
	if (diverging && th->ndiv > 0)
		return th->div[themefile_ramp_index(bound > 0 ? x / bound : 0.0, 1, th->ndiv)];
	if (th->nseq > 0)
		return th->seq[themefile_ramp_index(hi > lo ? (x - lo) / (hi - lo) : 0.0, 0, th->nseq)];
	return -1;
}


/* What textfmt_step adds to a table: a title prefix, cells marked against another matrix, row sums. */
typedef struct MatrixExtra {
	const char *prefix; /* before the title (escaped), or NULL */
	const Mat *ref;     /* mark with '*' the cells that differ from ref (the common rows and columns), or NULL */
	int sums;           /* a Σ column: each row's sum */
	long ndiff;         /* out: how many cells differ from ref (cells outside ref count too) */
	const Session *s;   /* the decode step or tile shown marks cells (session_cell_state), or NULL */
	int col0, ncols;    /* only these columns (ncols 0: all) */
	int lshift;         /* added to the column labels (a head's output labelled where it lands: PaneCut.label0) */
	const char *head;   /* the title's head part for a cut pane ("kv head 0"), or NULL */
} MatrixExtra;


static void print_matrix(FILE *f, const Attn *a, AttnMatrix which, int h, int color, int utf8, MatrixExtra *extra);

void textfmt_matrix(FILE *f, const Attn *a, AttnMatrix which, int h, int color, int utf8)
{
	print_matrix(f, a, which, h, color, utf8, NULL);
}

/*
 * How much of a large matrix a text table prints: a real model's unembedding
 * is 49152 × 576 and its logits n × 49152, scale.json's scores 456 × 456 —
 * whole, they are megabytes of lines thousands of columns wide. Past
 * TEXTFMT_ROWS_MAX rows the table keeps the first TEXTFMT_ROWS_HEAD and the
 * last TEXTFMT_ROWS_TAIL with a "⋮" line between; past TEXTFMT_COLS_MAX
 * columns likewise the first and last few with a "…" column; a note under it
 * says what was left out and how to get every number (`export csv`).
 */
#define TEXTFMT_ROWS_MAX 32
#define TEXTFMT_ROWS_HEAD 24
#define TEXTFMT_ROWS_TAIL 4
#define TEXTFMT_COLS_MAX 24
#define TEXTFMT_COLS_HEAD 16
#define TEXTFMT_COLS_TAIL 4

/* Keeps the first head and last tail of idx[0..*n) when *n is over max; the index where the gap goes, or -1. */
static int keep_ends(int *idx, int *n, int max, int head, int tail)
{
	if (*n <= max)
		return -1;
	memmove(idx + head, idx + *n - tail, (size_t)tail * sizeof *idx);
	*n = head + tail;
	return head;
}

static void print_matrix(FILE *f, const Attn *a, AttnMatrix which, int h, int color, int utf8, MatrixExtra *extra)
{
	const Mat *m = attn_matrix(a, which, h);
	char num[16];
	int i, j, r, k, lw = 1, cw = 6, c0 = 0, c1, marks = 0, seen[CELL_AFTER + 1] = { 0 };
	int nrows = 0, ncols = 0, rgap, cgap, *rows = NULL, *cols = NULL;
	double lo = INFINITY, hi = -INFINITY;
	const Mat *ref = extra != NULL ? extra->ref : NULL;
	const Session *ses = extra != NULL ? extra->s : NULL;
	const char *ellipsis = utf8 ? "\u2026" : "...";

	if (m == NULL) {
		fprintf(f, _("%s: not in this lesson\n"), matrix_name(which));
		return;
	}
	c1 = m->cols;
	if (extra != NULL && extra->ncols > 0 && extra->col0 >= 0 && extra->col0 + extra->ncols <= m->cols) {
		c0 = extra->col0;
		c1 = c0 + extra->ncols;
	}
	rows = malloc(((size_t)m->rows + 1) * sizeof *rows);
	cols = malloc(((size_t)(c1 - c0) + 1) * sizeof *cols);
	if (rows == NULL || cols == NULL) {
		free(rows);
		free(cols);
		fprintf(f, _("%s: out of memory\n"), matrix_name(which));
		return;
	}
	/* the range of the colours, the marks' legend and the cells that differ: over every cell */
	if (extra != NULL)
		extra->ndiff = 0;
	for (i = 0; i < m->rows; i++) {
		int any = ses == NULL;
		for (j = c0; j < c1; j++) {
			const double x = MAT_AT(*m, i, j);
			if (isfinite(x)) {
				lo = fmin(lo, x);
				hi = fmax(hi, x);
			}
			if (ses != NULL) {
				const CellState st = session_cell_state(ses, a, which, i, j);
				seen[st] = 1;
				any |= st != CELL_UNSEEN;
			}
			if (ref != NULL)
				extra->ndiff += stats_cell_differs(m, ref, i, j, STATS_DIFF_RTOL, STATS_DIFF_ATOL);
		}
		/* a decode step's rows after it are not computed yet: not printed */
		if (any || !(matrix_kind(which)->flags & MF_DECODE))
			rows[nrows++] = i;
	}
	for (j = c0; j < c1; j++)
		cols[ncols++] = j;
	const int rows_all = nrows, cols_all = ncols;
	rgap = keep_ends(rows, &nrows, TEXTFMT_ROWS_MAX, TEXTFMT_ROWS_HEAD, TEXTFMT_ROWS_TAIL);
	cgap = keep_ends(cols, &ncols, TEXTFMT_COLS_MAX, TEXTFMT_COLS_HEAD, TEXTFMT_COLS_TAIL);
	marks = seen[CELL_NEW] || seen[CELL_AFTER] || seen[CELL_BEFORE] || seen[CELL_DROPPED];
	for (r = 0; r < nrows; r++) {
		for (k = 0; k < ncols; k++)
			cw = fmax(cw, text_width(labels_number(num, MAT_AT(*m, rows[r], cols[k]), utf8), -1));
		char *s = fit_label(labels_row(a, which, rows[r]), utf8);
		lw = fmax(lw, text_width(s, -1));
		free(s);
	}
	const int lshift = extra != NULL ? extra->lshift : 0;
	for (k = 0; k < ncols; k++) {
		char *s = fit_label(labels_col(a, which, cols[k] + lshift), utf8);
		cw = fmax(cw, text_width(s, -1));
		free(s);
	}
	/* on a terminal, no wider than it: fewer columns kept at each end (a pipe or a file gets them all) */
	const int width = textfmt_columns(f), per = cw + 1 + (ref != NULL || marks);
	if (width > 0 && lw + ncols * per + (cgap >= 0 ? 4 : 0) > width) {
		const int fit = (int)fmax(2, (width - lw - 4) / per), tail = fit >= 8 ? 2 : 1;
		const int head = fit - tail;
		if (fit < ncols) {
			/* cols[] is the first columns then (after cgap) the last: keep head of the first, tail of the last */
			memmove(cols + head, cols + ncols - tail, (size_t)tail * sizeof *cols);
			ncols = fit;
			cgap = head;
		}
	}
	if (extra != NULL && extra->prefix != NULL)
		fputs(extra->prefix, f);
	if (extra != NULL && extra->head != NULL)
		fprintf(f, "%s (%s, columns %d-%d)  %d %s %d", matrix_name(which), extra->head, c0 + lshift, c1 - 1 + lshift, m->rows,
		        utf8 ? "\u00d7" : "x", c1 - c0);
	else if (matrix_per_head(which) && a->heads > 1)
		fprintf(f, "%s (head %d)  %d %s %d", matrix_name(which), h, m->rows, utf8 ? "\u00d7" : "x", m->cols);
	else
		fprintf(f, "%s  %d %s %d", matrix_name(which), m->rows, utf8 ? "\u00d7" : "x", m->cols);
	char *note = labels_title_note(a, which, utf8, 0); /* dec_scores: raw q·k, scaled in the softmax */
	fprintf(f, "%s%s\n", note != NULL ? "  " : "", note != NULL ? note : "");
	free(note);
	put_padded(f, "", lw, 0);
	for (k = 0; k < ncols; k++) {
		if (k == cgap) {
			fputc(' ', f);
			put_padded(f, ellipsis, 3, 1);
		}
		char *s = fit_label(labels_col(a, which, cols[k] + lshift), utf8);
		fputc(' ', f);
		put_padded(f, s, cw, 1);
		free(s);
		if (ref != NULL || marks)
			fputc(' ', f);
	}
	if (extra != NULL && extra->sums) {
		fputc(' ', f);
		put_padded(f, utf8 ? "\u03a3" : "sum", cw, 1);
	}
	fputc('\n', f);
	for (r = 0; r < nrows; r++) {
		i = rows[r];
		if (r == rgap) {
			put_padded(f, utf8 ? "\u22ee" : ":", lw, 0);
			fputc('\n', f);
		}
		char *s = fit_label(labels_row(a, which, i), utf8);
		put_padded(f, s, lw, 0);
		free(s);
		for (k = 0; k < ncols; k++) {
			j = cols[k];
			if (k == cgap) {
				fputc(' ', f);
				put_padded(f, ellipsis, 3, 1);
			}
			const double x = MAT_AT(*m, i, j);
			const CellState st = ses != NULL ? session_cell_state(ses, a, which, i, j) : CELL_PLAIN;
			fputc(' ', f);
			if (st == CELL_UNSEEN) {
				put_padded(f, "", cw, 1);
				if (ref != NULL || marks)
					fputc(' ', f);
				continue;
			}
			const int bg = color ? heat_color(x, lo, hi, matrix_kind(which)->diverging) : -1;
			if (bg >= 0)
				fprintf(f, "\033[38;5;%d;48;5;%dm", themefile_text_on(bg), bg);
			put_padded(f, labels_number(num, x, utf8), cw, 1);
			if (bg >= 0)
				fputs("\033[0m", f);
			if (ref != NULL)
				fputc(stats_cell_differs(m, ref, i, j, STATS_DIFF_RTOL, STATS_DIFF_ATOL) ? '*' : session_cell_mark(st), f);
			else if (marks)
				fputc(session_cell_mark(st), f);
		}
		if (extra != NULL && extra->sums) {
			double sum = 0.0;
			for (j = 0; j < m->cols; j++)
				sum += MAT_AT(*m, i, j);
			fputc(' ', f);
			put_padded(f, labels_number(num, sum, utf8), cw, 1);
		}
		fputc('\n', f);
	}
	if (rgap >= 0 || cgap >= 0) {
		char *what;
		if (rgap >= 0 && cgap >= 0)
			what = str_printf(_("(%d of %d rows and %d of %d columns shown; `export csv %s FILE` writes every number)"),
			                   nrows, rows_all, ncols, cols_all, matrix_name(which));
		else if (rgap >= 0)
			what = str_printf(_("(%d of %d rows shown; `export csv %s FILE` writes every number)"), nrows, rows_all,
			                   matrix_name(which));
		else
			what = str_printf(_("(%d of %d columns shown; `export csv %s FILE` writes every number)"), ncols, cols_all,
			                   matrix_name(which));
		if (what != NULL)
			fprintf(f, "%s\n", what);
		free(what);
	}
	if (marks) {
		fputs("(", f);
		if (seen[CELL_NEW])
			fputs((matrix_kind(which)->flags & MF_DECODE) ? _("# this step's row") : _("# this tile"), f);
		if (seen[CELL_AFTER])
			fprintf(f, _("%s# after this tile"), seen[CELL_NEW] ? ", " : "");
		if (seen[CELL_BEFORE])
			fputs(_(", ~ before it"), f);
		if (seen[CELL_DROPPED])
			fprintf(f, _("%sx dropped from the cache"), seen[CELL_NEW] || seen[CELL_AFTER] ? ", " : "");
		fputs(")\n", f);
	}
	free(rows);
	free(cols);
}


/*
 * Lesson text: control characters escaped; spelled in ASCII on a terminal
 * that cannot show UTF-8 (a file or a pipe keeps the text as it is).
 */
int textfmt_columns(FILE *f)
{
	struct winsize ws;

	if (!isatty(fileno(f)) || ioctl(fileno(f), TIOCGWINSZ, &ws) != 0 || ws.ws_col < 8)
		return 0;
	return ws.ws_col;
}

void textfmt_put_wrapped(FILE *f, const char *s, int lead)
{
	const int cols = textfmt_columns(f);
	char *padded, *wrapped;

	if (cols <= 0 || lead < 0 || lead >= cols || (padded = str_printf("%*s%s", lead, "", s)) == NULL) {
		fputs(s, f);
		return;
	}
	wrapped = text_wrap_lines(padded, cols);
	/* the lead columns are already on the line: skip them (a first line that broke at once keeps its break) */
	fputs(wrapped == NULL ? s : strncmp(wrapped, padded, (size_t)lead) == 0 ? wrapped + lead : wrapped, f);
	free(wrapped);
	free(padded);
}

/* Lesson text s escaped (keep: the controls kept), wrapped on a terminal after `lead` columns already used. */
static void put_escaped(FILE *f, const char *s, const char *keep, int utf8, int lead)
{
	char *a = utf8 || !isatty(fileno(f)) ? NULL : text_ascii(s);
	char *e = text_escape(a ? a : s, keep);
	if (e != NULL)
		textfmt_put_wrapped(f, e, lead);
	free(e);
	free(a);
}

/* ---- decode steps, tiles, key/value groups ---- */

char *textfmt_substep(const Session *s, int utf8)
{
	int nqb, nkb;

	/* where the walk is, by name: the lesson's step is the one counter (issue 25 §3) */
	if (s->dec_t >= 0 && session_decode_steps(s) > 0) {
		char *tok = text_escape(attn_config(s->attn)->tokens[s->dec_t], ""), *a = utf8 || tok == NULL ? NULL : text_ascii(tok);
		/* the cache's size may be what an open question asks: it comes once the question is answered */
		char *r = session_quiz_pending(s)
		              ? str_printf(_("token %d (%s)"), s->dec_t, a ? a : tok ? tok : "")
		              : str_printf(ngettext("token %d (%s), cache %d row", "token %d (%s), cache %d rows",
		                                    (unsigned long)session_cache_rows(s, s->dec_t)),
		                           s->dec_t, a ? a : tok ? tok : "", session_cache_rows(s, s->dec_t));
		free(a);
		free(tok);
		return r;
	}
	if (s->tile_q >= 0 && session_tiles(s, &nqb, &nkb) > 0)
		return str_printf(_("tile (%d, %d)"), s->tile_q, s->tile_k);
	return NULL;
}

char *textfmt_cache_lines(const Session *s, int utf8)
{
	const char *dot = utf8 ? "\u00b7" : "*";
	const LessonShape *sh = &s->attn->shape;
	const int g = sh->kv_heads, h = sh->heads, n = attn_config(s->attn)->n, w = model_mask_window(attn_config(s->attn));
	const long tok = stats_kv_bytes_per_token(sh, g), full = stats_kv_bytes_per_token(sh, h);
	long all = 0;
	int layers = 0, local = 0;
	StrBuf b = { 0 };

	/* each layer's own window: local and global layers keep a rolling window and every token (issue 23 §3) */
	for (const Attn *a = s->model; a != NULL; a = a->next, layers++) {
		const int wa = model_mask_window(attn_config(a));
		all += stats_kv_bytes_per_token(&a->shape, a->shape.kv_heads) * (wa > 0 && wa < n ? wa : n);
		local += wa > 0 && wa < n;
	}
	strbuf_printf(&b, _("KV cache: kv_heads%s(d_k + d_v)%s8 = %d%s(%d + %d)%s8 = %ld bytes per token per layer\n"), dot, dot,
	              g, dot, sh->dim[DIM_DK], sh->dim[DIM_DV], dot, tok);
	if (g < h)
		strbuf_printf(&b, _("  a key and a value for each of the %d query heads would take %ld: grouped-query attention keeps %d/%d of it\n"),
		              h, full, g, h);
	else if (h > 1)
		strbuf_printf(&b, _("  each of the %d heads keeps its own key and value; one shared key/value head would take %ld\n"), h,
		              stats_kv_bytes_per_token(sh, 1));
	if (w > 0 && w < n)
		strbuf_printf(&b,
		              ngettext("  the window of %d keeps at most %d tokens: %ld bytes per layer, %ld in %d layer\n",
		                       "  the window of %d keeps at most %d tokens: %ld bytes per layer, %ld in %d layers\n",
		                       (unsigned long)layers),
		              w, w, tok * w, all, layers);
	else
		strbuf_printf(&b,
		              ngettext("  %d tokens: %ld bytes per layer, %ld in %d layer\n",
		                       "  %d tokens: %ld bytes per layer, %ld in %d layers\n", (unsigned long)layers),
		              n, tok * n, all, layers);
	if (local > 0 && local < layers)
		strbuf_printf(&b, _("  local and global layers: %d keep a rolling window, %d keep every token (%ld bytes in all)\n"),
		              local, layers - local, all);
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* "0-1", or "2" for one. */
static void range_into(char *buf, size_t size, int lo, int hi)
{
	if (hi > lo)
		snprintf(buf, size, "%d-%d", lo, hi);
	else
		snprintf(buf, size, "%d", lo);
}

/* The rows 0 … t the cache at step t holds (want 1) or has let go (want 0), as ranges: "0, 2-4". */
static void cache_rows_into(char *buf, size_t size, const ModelConfig *c, int t, int want)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int j = 0; j <= t; j++) {
		int hi = j;
		char one[32];
		if (attn_cache_has(c, t, j, 0) != want)
			continue;
		while (hi < t && attn_cache_has(c, t, hi + 1, 0) == want)
			hi++;
		range_into(one, sizeof one, j, hi);
		len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%s", len ? ", " : "", one);
		j = hi;
	}
}

char *textfmt_caption(const Session *s, int utf8)
{
	const ModelConfig *c = attn_config(s->attn);
	const LayerParams *p = attn_params(s->attn);
	const LessonShape *sh = &s->attn->shape;
	const char *dot = utf8 ? "\u00b7" : "*";
	StagePane ps[STAGE_MAX_PANES];
	StrBuf b = { 0 };
	int nqb, nkb, kvpane = 0;

	if (s->dec_t >= 0 && session_decode_steps(s) > 0) {
		const int t = s->dec_t, rows = session_cache_rows(s, t);
		char *tok = text_escape(c->tokens[t], "");
		const int dropped = t - rows + 1;
		char held[64], gone[64];
		range_into(held, sizeof held, t - rows + 1, t);
		range_into(gone, sizeof gone, 0, t - rows);
		/* one whole sentence each: how many rows the cache holds, and whether the window dropped one or more; none of it
		 * while a question is open (its size may be the answer), and StreamingLLM's kept rows by name (not one run) */
		if (session_quiz_pending(s)) {
			strbuf_printf(&b, _("Token %d (%s) makes its q, k and v; k and v join the cache.\n"), t, tok ? tok : "");
		} else if (c->cache_sink > 0 && dropped > 0) {
			cache_rows_into(held, sizeof held, c, t, 1);
			cache_rows_into(gone, sizeof gone, c, t, 0);
			strbuf_printf(&b,
			              ngettext("Token %d (%s) makes its q, k and v; k and v join the cache, which keeps rows %s (the first %d "
			                       "and the last %d) and has evicted row %s.\n",
			                       "Token %d (%s) makes its q, k and v; k and v join the cache, which keeps rows %s (the first %d "
			                       "and the last %d) and has evicted rows %s.\n",
			                       (unsigned long)dropped),
			              t, tok ? tok : "", held, c->cache_sink, c->cache_window, gone);
		} else if (dropped <= 0)
			strbuf_printf(&b,
			              ngettext("Token %d (%s) makes its q, k and v; k and v join the cache, which holds row %s.\n",
			                       "Token %d (%s) makes its q, k and v; k and v join the cache, which holds rows %s.\n",
			                       (unsigned long)rows),
			              t, tok ? tok : "", held);
		else if (dropped == 1)
			strbuf_printf(&b,
			              ngettext("Token %d (%s) makes its q, k and v; k and v join the cache, which holds row %s (the window of %d has dropped row %s).\n",
			                       "Token %d (%s) makes its q, k and v; k and v join the cache, which holds rows %s (the window of %d has dropped row %s).\n",
			                       (unsigned long)rows),
			              t, tok ? tok : "", held, rows, gone);
		else
			strbuf_printf(&b,
			              ngettext("Token %d (%s) makes its q, k and v; k and v join the cache, which holds row %s (the window of %d has dropped rows %s).\n",
			                       "Token %d (%s) makes its q, k and v; k and v join the cache, which holds rows %s (the window of %d has dropped rows %s).\n",
			                       (unsigned long)rows),
			              t, tok ? tok : "", held, rows, gone);
		free(tok);
		/* the cache's size may be what an open question asks: it comes once the question is answered */
		char *cache = session_quiz_pending(s) ? NULL : textfmt_cache_lines(s, utf8);
		if (cache != NULL)
			strbuf_puts(&b, cache);
		free(cache);
	}
	if (s->tile_q >= 0 && session_tiles(s, &nqb, &nkb) > 0) {
		const int bq = c->flash_bq, bk = c->flash_bk, q0 = s->tile_q * bq, k0 = s->tile_k * bk;
		const int q1 = q0 + bq < c->n ? q0 + bq - 1 : c->n - 1, k1 = k0 + bk < c->m ? k0 + bk - 1 : c->m - 1;
		char qr[32], kr[32];
		range_into(qr, sizeof qr, q0, q1);
		range_into(kr, sizeof kr, k0, k1);
		/* one sentence a translation can reorder: the key columns are V's rows too */
		if (s->tile_k > 0)
			strbuf_printf(&b, _("Tile (%d, %d): query rows %s against key columns %s and V's rows %s; m, l and O before it: column %d, after it: column %d.\n"),
			              s->tile_q, s->tile_k, qr, kr, kr, s->tile_k - 1, s->tile_k);
		else
			strbuf_printf(&b, _("Tile (%d, %d): query rows %s against key columns %s and V's rows %s; before it m = %s, l = 0, O = 0; after it: column 0.\n"),
			              s->tile_q, s->tile_k, qr, kr, kr, utf8 ? "\u2212\u221e" : "-inf");
		if (s->nskipped > 0)
			strbuf_printf(&b,
			              ngettext("Skipped %d tile from (%d, %d): the mask hides every cell of it.\n",
			                       "Skipped %d tiles from (%d, %d): the mask hides every cell of them.\n",
			                       (unsigned long)s->nskipped),
			              s->nskipped, s->skipped_q, s->skipped_k);
		strbuf_printf(&b, _("Held at once: Bq%sBk + Bq%s(2 + d_v) = %d%s%d + %d%s(2 + %d) = %ld numbers, against n%sm = %ld for the score matrix.\n"),
		              dot, dot, bq, dot, bk, bq, dot, p->d_v, stats_flash_numbers(sh), dot, (long)c->n * c->m);
	}
	/* the key/value heads the query heads share (a stage that cuts panes per key/value head) */
	for (int i = 0, np = stage_panes(sh, s->stage, ps); i < np; i++)
		kvpane |= (ps[i].flags & PANE_EACH_KV_HEAD) != 0;
	/* which key/value head a query head reads may be what an open question asks: said once it is answered */
	if (kvpane && sh->kv_heads < sh->heads && !session_quiz_pending(s)) {
		const int per = sh->heads / sh->kv_heads;
		for (int j = 0; j < sh->kv_heads; j++) {
			strbuf_printf(&b, "%s", j ? "; " : "");
			char qh[32];
			range_into(qh, sizeof qh, j * per, (j + 1) * per - 1);
			strbuf_printf(&b, per > 1 ? _("query heads %s read kv head %d") : _("query head %s read kv head %d"), qh, j);
		}
		strbuf_puts(&b, _(".\n"));
	}
	if (b.oom || b.s == NULL) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* "mean … std …" under a table of scores (they are what scale.json is about). */
static void print_mean_std(FILE *f, const Attn *a, AttnMatrix which, int h)
{
	const Mat *m = attn_matrix(a, which, h);
	MatStats st;

	if (m == NULL || !(matrix_kind(which)->flags & MF_STATS))
		return;
	stats_matrix(m, &st);
	fprintf(f, _("mean %.4g  std %.4g\n"), st.mean, st.std);
}

/* A stage's matrix as the step shows it: weights with row sums, scores with mean and std. */
static void print_pane(FILE *f, const Attn *a, AttnMatrix which, int h, int color, int utf8, MatrixExtra *extra)
{
	extra->sums = (matrix_kind(which)->flags & MF_SUMS) != 0;
	print_matrix(f, a, which, h, color, utf8, extra);
	print_mean_std(f, a, which, h);
}

/* With compare on: the variant's matrix of the same name, cells that differ from the main one marked. */
static void print_compare(FILE *f, const Session *s, AttnMatrix which, int color, int utf8)
{
	const Attn *b = s->compare_attn;
	const int h = s->head < b->heads ? s->head : 0;
	const Mat *main_m = attn_matrix(s->attn, which, s->head), *m = attn_matrix(b, which, h);
	MatrixExtra extra = { .ref = main_m };
	char *label, *prefix;

	if (m == NULL) {
		fprintf(f, _("\n(the compare variant has no %s)\n"), matrix_name(which));
		return;
	}
	label = text_escape(session_text(s, &s->lesson->compare_label), "");
	prefix = str_printf("%s: ", label && label[0] ? label : "compare");
	extra.prefix = prefix;
	fputc('\n', f);
	print_pane(f, b, which, h, color, utf8, &extra);
	if (main_m != NULL && (main_m->rows != m->rows || main_m->cols != m->cols)) {
		/* a prefix of the tokens has fewer rows: the cells both have are compared, the others named */
		char here[48], there[48];
		const long common = (long)(m->rows < main_m->rows ? m->rows : main_m->rows) *
		                    (m->cols < main_m->cols ? m->cols : main_m->cols);
		stats_only_in(main_m, m, here, sizeof here);
		stats_only_in(m, main_m, there, sizeof there);
		fprintf(f, _("%ld of the %ld cells both have differ"), extra.ndiff, common);
		if (here[0])
			fprintf(f, _("; %s only in the lesson"), here);
		if (there[0])
			fprintf(f, _("; %s only in the variant"), there);
		fputc('\n', f);
	} else
		fprintf(f, _("%ld of %ld cells differ\n"), extra.ndiff, (long)m->rows * m->cols);
	free(prefix);
	free(label);
}

void textfmt_step(FILE *f, const Session *s, int color, int utf8)
{
	const Step *step = session_step(s);
	const int ascii_screen = !utf8 && isatty(fileno(f)); /* a terminal that cannot show Chinese */
	const char *text = session_screen_text(s, &step->text, ascii_screen);
	int k, count;
	char *sub = textfmt_substep(s, utf8), *caption = textfmt_caption(s, utf8);

	{
		/* the header line, wrapped as one on a terminal */
		StrBuf head = { 0 };
		char *a = utf8 || !isatty(fileno(f)) ? NULL : text_ascii(session_screen_text(s, &s->lesson->title, ascii_screen));
		char *title = text_escape(a ? a : session_text(s, &s->lesson->title), "");
		char *place = session_place(s, utf8);
		strbuf_printf(&head, "== %s", title ? title : "");
		strbuf_printf(&head, _(" == step %d/%d, "), s->step + 1, s->nwalk);
		if (place != NULL)
			strbuf_printf(&head, "%s, ", place);
		strbuf_printf(&head, _("stage: %s"), stage_name(s->stage));
		if (sub != NULL)
			strbuf_printf(&head, _(", %s"), sub);
		if (s->attn->heads > 1)
			strbuf_printf(&head, _(", head %d/%d"), s->head, s->attn->heads);
		textfmt_put_wrapped(f, head.s ? head.s : "", 0);
		fputc('\n', f);
		free(head.s);
		free(place);
		free(title);
		free(a);
	}
	if ((text[0] != '\0' || step->has_quiz) && session_edited_note(s) != NULL) {
		put_escaped(f, session_edited_note(s), "", utf8, 0);
		fputc('\n', f);
	}
	if (text[0] == '\0')
		text = stage_blurb(s->stage, session_screen_lang(s, ascii_screen));
	put_escaped(f, text, "\n\t", utf8, 0);
	fputc('\n', f);
	/* what the step says once its question is answered (or at once, without one) */
	if (session_then(s) != NULL && *session_then(s) != '\0') {
		put_escaped(f, session_then(s), "\n\t", utf8, 0);
		fputc('\n', f);
	}
	{
		char *map = session_stage_map(s, utf8);
		if (map != NULL)
			fprintf(f, _("  block: %s\n"), map);
		free(map);
	}
	fprintf(f, "  %s\n", i18n_msg(stage_formula(&s->attn->shape, s->stage, utf8)));
	/* the decode step or tile, and what it holds (our own text; tokens in it are escaped) */
	for (const char *line = caption; line != NULL && *line != '\0';) {
		const char *nl = strchr(line, '\n');
		const int len = nl != NULL ? (int)(nl - line) : (int)strlen(line);
		fprintf(f, "  %.*s\n", len, line);
		line = nl != NULL ? nl + 1 : line + len;
	}
	free(sub);
	free(caption);
	{
		StagePane sp[STAGE_MAX_PANES];
		PaneCut cuts[64];
		const int np = attn_stage_panes(s->attn, s->stage, sp);
		count = stage_cut_panes(&s->attn->shape, sp, np, s->head, cuts, 64);
		for (k = 0; k < count; k++) {
			const AttnMatrix w = cuts[k].matrix;
			char head[48];
			if (session_hides(s, (int)w, matrix_per_head(w) ? cuts[k].head : s->head)) {
				char how[32];
				if (k == 0 || cuts[k - 1].matrix != w) {
					char *line = str_printf(_("%s: hidden until you answer (%s, skip, hint)"), matrix_name(w),
					                        session_quiz_usage(s, how, sizeof how));
					fputc('\n', f);
					textfmt_put_wrapped(f, line ? line : "", 0);
					fputc('\n', f);
					free(line);
				}
				continue;
			}
			fputc('\n', f);
			{
				MatrixExtra extra = { .s = s };
				/* a pane cut per head (the split stage) prints that head's columns */
				if (cuts[k].flags & (PANE_EACH_HEAD | PANE_EACH_KV_HEAD)) {
					if (cuts[k].flags & PANE_EACH_KV_HEAD)
						snprintf(head, sizeof head, _("kv head %d"), cuts[k].head);
					else if (s->attn->shape.kv_heads < s->attn->heads)
						snprintf(head, sizeof head, _("head %d, reads kv head %d"), cuts[k].head,
						         shape_kv_head(&s->attn->shape, cuts[k].head));
					else if (cuts[k].flags & PANE_RESULT_COLS)
						snprintf(head, sizeof head, "head %d, into %s", cuts[k].head,
						         matrix_name(cuts[count - 1].matrix));
					else
						snprintf(head, sizeof head, "head %d", cuts[k].head);
					extra.head = head;
					extra.col0 = cuts[k].col0;
					extra.ncols = cuts[k].ncols;
					extra.lshift = cuts[k].label0 - cuts[k].col0;
				}
				print_pane(f, s->attn, w, matrix_per_head(w) ? cuts[k].head : s->head, color, utf8, &extra);
			}
			if (k == count - 1 && s->compare_on && s->compare_attn != NULL)
				print_compare(f, s, w, color, utf8);
		}
	}
	/* the parameter count, unless a question open here may be asking for it */
	if ((stage_kinds[s->stage].flags & SF_PARAMS) && !session_quiz_pending(s)) {
		char *params = labels_params(attn_config(s->attn), attn_params(s->attn), utf8); /* the layer shown */
		if (params != NULL) {
			fputc('\n', f);
			textfmt_put_wrapped(f, params, 0);
			fputc('\n', f);
		}
		free(params);
	}
	if (step->has_quiz && s->quiz[s->step] == QUIZ_OPEN) {
		const Quiz *q = &step->quiz;
		fputs(_("\nQuestion: "), f);
		put_escaped(f, session_screen_text(s, &q->question, ascii_screen), "\n\t", utf8, 10);
		fputc('\n', f);
		for (k = 0; k < q->nchoices; k++) {
			const int lead = fprintf(f, "  %d) ", k + 1);
			put_escaped(f, session_screen_text(s, &q->choices[k], ascii_screen), "", utf8, lead);
			fputc('\n', f);
		}
	}
	/* finished only with every question answered or skipped (session_finished) */
	if (session_finished(s) && session_next_lesson(s) != NULL)
		fprintf(f, _("\nFinished. Next lesson: load %s\n"), session_next_lesson(s));
	else if (s->step == s->nwalk - 1 && session_questions_open(s) > 0)
		fprintf(f, _("\nLast step; questions still open: %d (answer or skip them to finish)\n"),
		        session_questions_open(s));
}

void textfmt_progress(char *buf, size_t size, const Attn *a, Stage st, int index, int count, int utf8)
{
	char layer[32] = "";

	if (a->nlayers > 1)
		snprintf(layer, sizeof layer, _("layer %d/%d: "), a->layer + 1, a->nlayers);
	/* TRANSLATORS: "computing…", the layer ("layer 2/3: " or nothing), the stage's name, its place among the stages */
	snprintf(buf, size, _("computing%s %s%s (%d/%d)"), utf8 ? "\u2026" : "...", layer, stage_kinds[st].name, index,
	         count);
}

/* ------------------------------------------------------------ the heads and their scores */

static int head_sort_key;

/* Highest score first, an undefined one last, ties by layer and head. */
static int head_row_cmp(const void *x, const void *y)
{
	const HeadRow *a = x, *b = y;
	const HeadScore *sa = &a->sc.s[head_sort_key], *sb = &b->sc.s[head_sort_key];

	if ((sa->rows > 0) != (sb->rows > 0))
		return sa->rows > 0 ? -1 : 1;
	if (sa->rows > 0 && sa->mean != sb->mean)
		return sa->mean > sb->mean ? -1 : 1;
	return a->layer != b->layer ? a->layer - b->layer : a->head - b->head;
}

HeadRow *textfmt_head_rows(const Session *s, int sort, int *count)
{
	const int nl = session_layers(s);
	int n = 0;

	for (int l = 0; l < nl; l++) {
		const Attn *a = session_walk_link(s, l);
		n += a != NULL ? a->heads : 0;
	}
	HeadRow *rows = calloc(n > 0 ? (size_t)n : 1, sizeof *rows);
	*count = 0;
	if (rows == NULL)
		return NULL;
	for (int l = 0; l < nl; l++) {
		const Attn *a = session_walk_link(s, l);
		for (int h = 0; a != NULL && h < a->heads; h++) {
			rows[*count].layer = l;
			rows[*count].head = h;
			headscores_of(a, h, &rows[*count].sc);
			const HeadScore *ind = session_induction_score(s, l, h); /* a model's, from its run on repeated tokens */
			if (ind != NULL)
				rows[*count].sc.s[HS_INDUCTION] = *ind;
			(*count)++;
		}
	}
	if (sort >= 0 && sort < HS_COUNT) {
		head_sort_key = sort;
		qsort(rows, (size_t)*count, sizeof *rows, head_row_cmp);
	}
	return rows;
}

const char *textfmt_score(char buf[16], const HeadScore *sc, int decimals, int utf8)
{
	if (sc->rows == 0)
		snprintf(buf, 16, "%s", utf8 ? "\u2014" : "-");
	else
		snprintf(buf, 16, "%.*f", decimals, sc->mean);
	return buf;
}

char *textfmt_heads(const Session *s, int sort, int utf8)
{
	StrBuf b = { 0 };
	int n;
	HeadRow *rows = textfmt_head_rows(s, sort, &n);

	if (rows == NULL)
		return NULL;
	/* the headings are words of ours; the columns keep their width in any language (numbers right-aligned) */
	strbuf_printf(&b, "%5s %4s %9s %9s %9s %9s\n", "layer", "head", headscore_words[HS_PREV],
	              headscore_words[HS_FIRST], headscore_words[HS_DIAG], headscore_words[HS_INDUCTION]);
	for (int i = 0; i < n; i++) {
		char word[16], v[HS_COUNT][16];
		if (session_layer_word(s, rows[i].layer, word, sizeof word) != 0)
			snprintf(word, sizeof word, "%d", rows[i].layer);
		strbuf_printf(&b, "%5s %4d", word, rows[i].head);
		for (int k = 0; k < HS_COUNT; k++) {
			textfmt_score(v[k], &rows[i].sc.s[k], 3, utf8);
			/* "—" is one column but three bytes: pad by columns */
			strbuf_printf(&b, " %*s%s", 9 - text_width(v[k], -1), "", v[k]);
		}
		strbuf_printf(&b, "\n");
	}
	/* why a cross-attention layer has no scores, and why the induction column is empty */
	for (int l = 0; l < session_layers(s); l++) {
		const Attn *a = session_walk_link(s, l);
		char word[16];
		if (a != NULL && attn_config(a)->has_source && session_layer_word(s, l, word, sizeof word) == 0) {
			strbuf_printf(&b, _("layer %s %s: %s\n"), word, utf8 ? "\u2014" : "-", headscores_why(a, HS_PREV));
			break;
		}
	}
	if (s->induction != NULL)
		strbuf_printf(&b, _("induction: on %d random tokens, then the same %d again (the model run once on them)\n"),
		              s->ind_half, s->ind_half);
	for (int l = 0; s->induction == NULL && l < session_layers(s); l++) {
		const Attn *a = session_walk_link(s, l);
		const char *why = a != NULL && !attn_config(a)->has_source ? headscores_why(a, HS_INDUCTION) : NULL;
		if (why != NULL) {
			strbuf_printf(&b, _("induction %s: %s\n"), utf8 ? "\u2014" : "-", why);
			break;
		}
	}
	free(rows);
	return b.oom ? (free(b.s), NULL) : b.s;
}
