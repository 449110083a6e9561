/*
 * pane.c: a matrix pane of the full-screen view: what the current stage
 * shows (built from the stage table), each pane measured (shape, widths,
 * value range, title), and drawn as a heatmap with its labels, the cursor,
 * the operands of the cursor's cell, the cells an edit changed, the cells
 * that differ from the compare variant, and its legend; zoomed out, a
 * down-sampled heatmap.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/i18n.h"
#include "engine/kernels.h"
#include "inspect/explain.h"
#include "inspect/heatmap.h"
#include "inspect/labels.h"
#include "inspect/stats.h"
#include "tui/theme.h"
#include "tui/tuistate.h"

/* A bar pane (PANE_BARS): the token column's width, and the longest bar the pane asks for. */
#define PANE_BAR_LABEL 14
#define PANE_BAR_WIDTH 30

/* ------------------------------------------------------------------ */
/* Panes: what the current stage shows                                  */
/* ------------------------------------------------------------------ */

/* The computation a pane shows: the lesson's, or its compare variant's. */
const Attn *
pane_attn(const Tui *t, const Pane *p)
{
	return p->variant ? t->s->compare_attn : t->s->attn;
}

const Mat *
pane_mat(const Tui *t, const Pane *p)
{
	const Attn *a = pane_attn(t, p);

	if (a == NULL || (matrix_per_head(p->which) && p->head >= a->heads))
		return NULL;
	return attn_matrix_shown(a, p->which, p->head);
}

double
pane_at(const Tui *t, const Pane *p, const Mat *m, int R, int C)
{
	return m->a != NULL ? MAT_AT(*m, R, C) : attn_cell(pane_attn(t, p), p->which, p->head, R, C);
}

/* View (r, c) → source (row, col). */
void
pane_src(const Pane *p, int r, int c, int *R, int *C)
{
	if (p->transpose) {
		*R = c;
		*C = p->col0 + r;
	} else {
		*R = r;
		*C = p->col0 + c;
	}
}

static double
pane_value(const Tui *t, const Mat *m, const Pane *p, int r, int c)
{
	int R, C;
	pane_src(p, r, c, &R, &C);
	return pane_at(t, p, m, R, C);
}

/* A masked cell: −∞ anywhere, or a hidden key in the masked matrix and the weights. */
static int
pane_masked(const Tui *t, const Pane *p, int R, int C, double v)
{
	const Attn *a = pane_attn(t, p);

	if (isinf(v) && v < 0)
		return 1;
	if ((matrix_kind(p->which)->flags & MF_MASKED) && a->visible && attn_config(a)->mask != MASK_NONE)
		return !a->visible[(size_t)R * (size_t)attn_config(a)->m + (size_t)C];
	return 0;
}

/* A cell's number in at most `width` columns (2 decimals, fewer when it would not fit). */
static void
fmt_cell(char *buf, size_t size, double v, int width, int utf8)
{
	if (isinf(v) || isnan(v)) {
		/* NaN: only an expert a token did not choose (MF_NOT_CHOSEN): no number */
		snprintf(buf, size, "%s", isnan(v) ? (utf8 ? "\u00b7" : "--") : v < 0 ? (utf8 ? "-\u221e" : "-inf") : (utf8 ? "\u221e" : "inf"));
		return;
	}
	for (int prec = 2; prec >= 0; prec--) {
		int n = snprintf(buf, size, "%.*f", prec, v);
		if (n <= width)
			return;
	}
	snprintf(buf, size, "%.0e", v);
	if ((int)strlen(buf) > width)
		snprintf(buf, size, "%s", v < 0 ? "-#" : "#");
}

/* A view row is a source row, or a source column when transposed; likewise for columns. */
static char *
pane_row_label(const Tui *t, const Pane *p, int r)
{
	int R, C;
	pane_src(p, r, 0, &R, &C);
	return p->transpose ? labels_col(pane_attn(t, p), p->which, C - p->col0 + p->label0)
	                    : labels_row(pane_attn(t, p), p->which, R);
}

static char *
pane_col_label(const Tui *t, const Pane *p, int c)
{
	int R, C;
	pane_src(p, 0, c, &R, &C);
	return p->transpose ? labels_row(pane_attn(t, p), p->which, R)
	                    : labels_col(pane_attn(t, p), p->which, C - p->col0 + p->label0);
}

/*
 * The head part of a pane's title: " head 1", " kv 0" for a key/value head's
 * columns, " head 1→kv 0" for a query head grouped under the one it shares.
 */
static void
pane_head_title(const Tui *t, const Pane *p, char *buf, size_t size)
{
	const LessonShape *sh = &pane_attn(t, p)->shape;

	if (p->kv_head >= 0)
		snprintf(buf, size, " kv %d", p->kv_head);
	else if (sh->kv_heads < sh->heads && p->grouped)
		snprintf(buf, size, _(" head %d%skv %d"), p->head, t->utf8 ? "\u2192" : ">", shape_kv_head(sh, p->head));
	else if (sh->kv_heads > 0 && sh->kv_heads < sh->heads && matrix_kind(p->which) != NULL &&
	         (matrix_kind(p->which)->flags & MF_KV)) {
		/* K or V of the query head shown holds its key/value head: say which, and who shares it (not "head 3") */
		const int kv = shape_kv_head(sh, p->head), per = sh->heads / sh->kv_heads;
		snprintf(buf, size, _(" (kv head %d, heads %d%s%d)"), kv, kv * per, t->utf8 ? "\u2013" : "-",
		         kv * per + per - 1);
	} else
		snprintf(buf, size, _(" head %d"), p->head);
}

/*
 * The range of the numbers pane p shows of m (and m's mean and σ when the
 * catalogue gives it them): looked up among those kept for this computation,
 * else found by looking at each number, and kept.
 */
static const PaneRange *
pane_range(Tui *t, const Pane *p, const Mat *m)
{
	const unsigned long version = pane_attn(t, p)->version;
	PaneRange *e;

	for (int k = 0; k < TUI_PANE_RANGES; k++) {
		e = &t->ranges[k];
		if (e->version == version && version != 0 && e->which == p->which && e->head == p->head &&
		    e->col0 == p->col0 && e->ncols == p->ncols)
			return e;
	}
	e = &t->ranges[t->ranges_next];
	t->ranges_next = (t->ranges_next + 1) % TUI_PANE_RANGES;
	memset(e, 0, sizeof *e);
	if (matrix_kind(p->which)->flags & MF_STATS) {
		MatStats ms;
		stats_matrix(m, &ms);
		e->finite = ms.finite;
		e->mean = ms.mean;
		e->std = ms.std;
		if (p->col0 == 0 && p->ncols == m->cols) { /* the pane shows the whole matrix: its range is the matrix's */
			e->any = ms.finite > 0;
			e->has_masked = ms.finite < (size_t)m->rows * (size_t)m->cols;
			e->minv = e->any ? ms.min : 0;
			e->maxv = e->any ? ms.max : 0;
			e->maxabs = fmax(fabs(e->minv), fabs(e->maxv));
			goto keep;
		}
	}
	/* the columns [col0, col0 + ncols) of every row (the set of numbers is the same transposed) */
	for (int R = 0; R < m->rows; R++)
		for (int C = p->col0; C < p->col0 + p->ncols; C++) {
			const double v = pane_at(t, p, m, R, C);
			if (isfinite(v)) {
				if (fabs(v) > e->maxabs)
					e->maxabs = fabs(v);
				if (!e->any || v < e->minv)
					e->minv = v;
				if (!e->any || v > e->maxv)
					e->maxv = v;
				e->any = 1;
			} else {
				e->has_masked = 1;
			}
		}
keep:
	e->version = version;
	e->which = p->which;
	e->head = p->head;
	e->col0 = p->col0;
	e->ncols = p->ncols;
	return e;
}

/* Shape, widths and the value range of a pane whose which/head/block/transpose are set. */
static void
pane_measure(Tui *t, Pane *p)
{
	const Mat *m = pane_mat(t, p);
	const char *times = t->utf8 ? "\u00d7" : "x";

	if (m == NULL) {
		p->rows = p->cols = 0;
		snprintf(p->title, sizeof p->title, _("%s (absent)"), matrix_name(p->which));
		p->lw = p->cw = 1;
		return;
	}
	if (p->ncols < 0 || p->col0 + p->ncols > m->cols) {
		p->label0 -= p->col0;
		p->col0 = 0;
		p->ncols = m->cols;
	}
	p->rows = p->transpose ? p->ncols : m->rows;
	p->cols = p->transpose ? m->rows : p->ncols;
	p->diverging = matrix_kind(p->which)->diverging;
	if (p->bars) /* the next token's top k, as the LM head's settings say now */
		p->bars = p->transpose || m->rows != 1 ? 0 : attn_top_k(attn_config(pane_attn(t, p)));

	int numw = 4, lw = 1, labw = 1;
	char buf[32];
	const PaneRange *rg = pane_range(t, p, m);
	const int any = rg->any;
	p->has_masked = rg->has_masked;
	p->minv = rg->minv;
	p->maxv = rg->maxv;
	p->maxabs = rg->maxabs;
	/* The widest number is the smallest or the largest one ("-12.35", "103.20"): two
	 * snprintf calls, not one per cell, so a step on a large lesson stays instant. */
	if (any) {
		int n = snprintf(buf, sizeof buf, "%.2f", p->minv);
		if (n > numw)
			numw = n;
		n = snprintf(buf, sizeof buf, "%.2f", p->maxv);
		if (n > numw)
			numw = n;
	}
	/* Row sums beside the weights (1, or 0 for a fully masked row). */
	p->sums = (matrix_kind(p->which)->flags & MF_SUMS) && !p->transpose && p->ncols == m->cols;
	/* Score-like matrices carry their mean and standard deviation in the title. */
	p->stats[0] = '\0';
	if ((matrix_kind(p->which)->flags & MF_STATS) && rg->finite > 1)
		snprintf(p->stats, sizeof p->stats, t->utf8 ? "\u03bc %.2f \u03c3 %.2f" : _("mean %.2f sd %.2f"), rg->mean,
		         rg->std);
	p->legend = any;
	if (numw > 7)
		numw = 7;
	for (int r = 0; r < p->rows && r < 512; r++) {
		char *l = pane_row_label(t, p, r);
		int w = l ? text_width(l, -1) : 1;
		if (w > lw)
			lw = w;
		free(l);
	}
	for (int c = 0; c < p->cols && c < 512; c++) {
		char *l = pane_col_label(t, p, c);
		int w = l ? text_width(l, -1) : 1;
		if (w > labw)
			labw = w;
		free(l);
	}
	if (lw > 10)
		lw = 10;
	if (labw > 8)
		labw = 8;
	p->lw = lw + 1;
	/* A gap, the number; without colour a shade glyph after it. */
	p->cw = (numw > labw ? numw : labw) + 1 + (theme_mono() ? 1 : 0) + (p->other >= 0 ? 1 : 0);

	/* Title: name, ᵀ, head, shape — our own text only (the variant's label is escaped). */
	const char *name = matrix_name(p->which);
	char head[32] = "";
	if (attn_params(pane_attn(t, p))->heads > 1 && (matrix_per_head(p->which) || p->ncols != m->cols))
		pane_head_title(t, p, head, sizeof head);
	char *label = NULL;
	if (p->variant) {
		const char *l = session_screen_text(t->s, &t->s->lesson->compare_label, !t->utf8);
		char *a = t->utf8 ? NULL : text_ascii(l && *l ? l : "compare");
		label = text_escape(a ? a : l && *l ? l : "compare", "");
		free(a);
	}
	char *note = labels_title_note(pane_attn(t, p), p->which, t->utf8, 0),
	     *brief = labels_title_note(pane_attn(t, p), p->which, t->utf8, 1);
	snprintf(p->note, sizeof p->note, "%s", note != NULL ? note : "");
	snprintf(p->note_brief, sizeof p->note_brief, "%s", brief != NULL ? brief : "");
	free(note);
	free(brief);
	snprintf(p->title, sizeof p->title, "%s%s%s%s%s  %d%s%d", label ? label : "", label ? ": " : "", name,
	         p->transpose ? (t->utf8 ? "\u1d40" : "^T") : "", head, p->rows, times, p->cols);
	free(label);
	if (p->bars) { /* which next token, at what temperature */
		const ModelConfig *c = attn_config(pane_attn(t, p));
		const size_t len = strlen(p->title);
		snprintf(p->title + len, sizeof p->title - len, _("  top %d, T %.3g, after row %d"), p->bars,
		         attn_temperature(c), attn_logits_row(c));
	}
}

/* A heatmap cell: two columns, one line (the smallest that reads as a square of colour). */
#define PANE_HEAT_CW 2

/* A number for the legend: 2 decimals, or %.3g when large. */
static void
fmt_legend(char *buf, size_t size, double v)
{
	if (fabs(v) >= 1e5)
		snprintf(buf, size, "%.3g", v);
	else
		snprintf(buf, size, "%.2f", v);
}

#define LEGEND_STEPS 7

/* The legend's width: "lo ▁▂▃▄▅▆▇ hi" (0 without one). */
static int
pane_legend_width(const Pane *p)
{
	char lo[32], hi[32];

	if (!p->legend)
		return 0;
	fmt_legend(lo, sizeof lo, p->minv);
	fmt_legend(hi, sizeof hi, p->maxv);
	return text_width(lo, -1) + text_width(hi, -1) + LEGEND_STEPS + 2;
}

/*
 * The lines a row's cells are painted over: one, or presenting with rgap ≥ 2
 * (rows far apart), all but the last of the row's 1 + rgap lines, so the
 * cells grow into coloured blocks with one blank line between rows.
 */
static int
pane_block(const Pane *p)
{
	return p->rgap >= 2 ? p->rgap : 1;
}

/* The natural size of a pane (for the layout): its cells, its title and its legend. */
void
pane_want(const Pane *p, int *w, int *h)
{
	/* the title, and what only one of a compared pair has ("  rows 3-4 only here") beside it */
	int tw = text_width(p->title, -1) + 2 + (p->only[0] ? 15 + text_width(p->only, -1) : 0) +
	         (p->note[0] ? 2 + text_width(p->note, -1) : 0);

	if (p->bars && !p->zoom) {
		/* a line per entry of the top k: its token, its bar, its probability */
		*w = PANE_BAR_LABEL + PANE_BAR_WIDTH + 10;
		*h = 2 + p->bars + 1;
	} else if (p->zoom == PANE_ZOOM_AUTO) {
		/* a heatmap because presenting: every cell, the room decides the reduction */
		*w = p->lw + PANE_HEAT_CW * p->cols;
		*h = 2 + p->rows + p->legend;
	} else if (p->zoom) {
		/* Zoomed out, a pane takes what it is given: ask for little. */
		*w = p->lw + 2 * (p->cols < 24 ? p->cols : 24);
		*h = 2 + (p->rows < 10 ? p->rows : 10);
	} else {
		/* a row is a block of pane_block(p) lines, then the rest of its 1 + rgap lines blank */
		*w = p->lw + (p->cw + p->pad) * (p->cols + p->sums);
		*h = 2 + (p->rows > 0 ? (p->rows - 1) * (1 + p->rgap) + pane_block(p) : 0) + p->legend;
	}
	if (*w < tw)
		*w = tw;
	/* a narrow pane (two columns) is widened for its legend rather than lose it */
	if (!p->zoom && !p->hidden && *w < pane_legend_width(p))
		*w = pane_legend_width(p);
	/*
	 * A pane hidden by a quiz shows its title and one short line ("press 1-4
	 * first" or ":answer VALUE", at most 15 columns; the narration says the
	 * rest): it needs that much and no more, so the lines go to the question.
	 * Asking for more pushed the hidden result onto a second grid row at 80
	 * columns, which hid the quiz question itself below the fold.
	 */
	if (p->hidden) {
		*h = 2;
		if (*w < 17)
			*w = 17;
	}
	if (*w < 12)
		*w = 12;
}

static int
pane_same(const Pane *a, const Pane *b)
{
	return a->which == b->which && a->head == b->head && a->transpose == b->transpose && a->col0 == b->col0;
}

/* The pane an open quiz hides: the one with the answer's matrix, else the result (last). */
static int
quiz_hidden_pane(const Tui *t)
{
	const int w = session_hidden_matrix(t->s);

	for (int i = 0; w >= 0 && i < t->npanes; i++)
		if ((int)t->pane[i].which == w && !t->pane[i].variant)
			return i;
	return -1;
}

/* Put the cursor of pane i on source cell (R, C) if it is in view. */
static void
pane_put_cursor(Pane *p, int R, int C)
{
	int r = p->transpose ? C - p->col0 : R, c = p->transpose ? R : C - p->col0;

	if (r >= 0 && r < p->rows && c >= 0 && c < p->cols) {
		p->cur_r = r;
		p->cur_c = c;
	}
}

/* 1 when matrix m is one the stage shown makes `which` from (its rules). */
static int
pane_made_from(const Tui *t, int which, AttnMatrix m)
{
	const StageRule *rules = attn_stage_rules(t->s->stage);

	for (int r = 0; rules != NULL && r < ATTN_STAGE_RULES && rules[r].from != NULL; r++)
		for (const AttnMatrix *f = rules[r].from; (int)rules[r].out == which && *f != AM_COUNT; f++)
			if (*f == m)
				return 1;
	return 0;
}

/*
 * A shown pane of what `which` is made from, when a question hides it: a
 * learned weight's first (c_KV: W_kva), else any operand's; -1 without one.
 */
static int
pane_operand(const Tui *t, int which)
{
	int any = -1;

	for (int i = 0; i < t->npanes; i++) {
		const Pane *p = &t->pane[i];
		if (p->hidden || p->variant || !pane_made_from(t, which, p->which))
			continue;
		if (matrix_kind(p->which)->flags & MF_PARAM)
			return i;
		if (any < 0)
			any = i;
	}
	return any;
}

/* The stage's panes cut per head (stage_cut_panes) into t->pane; returns the count, *each_head 1 when cut per head. */
static int
tui_cut_panes(Tui *t, const StagePane *ms, int k, int *each_head)
{
	const Session *s = t->s;
	PaneCut cuts[LAYOUT_MAX_PANES];
	const int n = stage_cut_panes(&s->attn->shape, ms, k, s->head, cuts, LAYOUT_MAX_PANES);

	for (int i = 0; i < n; i++) {
		Pane *p = &t->pane[i];
		p->which = cuts[i].matrix;
		p->kv_head = (cuts[i].flags & PANE_EACH_KV_HEAD) ? cuts[i].head : -1;
		p->head = p->kv_head >= 0 ? s->head : cuts[i].head;
		p->col0 = cuts[i].ncols < 0 ? 0 : cuts[i].col0;
		p->label0 = cuts[i].label0 - cuts[i].col0 + p->col0;
		p->ncols = cuts[i].ncols;
		p->transpose = (cuts[i].flags & PANE_TRANSPOSE) != 0;
		p->grouped = (cuts[i].flags & PANE_EACH_HEAD) != 0;
		p->bars = (cuts[i].flags & PANE_BARS) != 0;
		if (cuts[i].flags & (PANE_EACH_HEAD | PANE_EACH_KV_HEAD))
			*each_head = 1;
	}
	return n;
}

/* Rebuild the pane list from the session's stage and head, keeping the view state of panes that stay. */
void
tui_build_panes(Tui *t, int keep, int refocus)
{
	const Session *s = t->s;
	const Attn *a = s->attn;
	Pane old[LAYOUT_MAX_PANES];
	int nold = keep ? t->npanes : 0;
	StagePane ms[STAGE_MAX_PANES];
	int k, n = 0, each_head = 0;

	memcpy(old, t->pane, sizeof old);
	k = attn_stage_panes(a, s->stage, ms);
	memset(t->pane, 0, sizeof t->pane);
	/* The windows belong to the layout's slots, not to the matrices. */
	for (int i = 0; i < LAYOUT_MAX_PANES; i++)
		t->pane[i].win = old[i].win;

	/* What the stage table says to show, cut as it says (heads grouped under their key/value head). */
	n = tui_cut_panes(t, ms, k, &each_head);
	for (int i = 0; i < LAYOUT_MAX_PANES; i++)
		t->pane[i].other = -1;
	/* The comparison view: the stage's result in the compare variant, beside the lesson's. */
	if (s->compare_on && s->compare_attn != NULL && n > 0 && n < LAYOUT_MAX_PANES && !each_head) {
		Pane *r = &t->pane[n - 1], *p = &t->pane[n];
		WINDOW *keepw = p->win;
		*p = *r;
		p->win = keepw;
		p->variant = 1;
		p->col0 = 0;
		p->label0 = 0;
		p->ncols = -1;
		p->transpose = 0;
		if (pane_mat(t, p) != NULL) {
			p->other = n - 1;
			r->other = n;
			n++;
		}
	}
	t->npanes = n;
	for (int i = 0; i < n; i++) {
		Pane *p = &t->pane[i];
		pane_measure(t, p);
		for (int j = 0; j < nold; j++) {
			if (!pane_same(&old[j], p))
				continue;
			p->cur_r = old[j].cur_r < p->rows ? old[j].cur_r : 0;
			p->cur_c = old[j].cur_c < p->cols ? old[j].cur_c : 0;
			p->top = old[j].top;
			p->left = old[j].left;
			p->zoom = old[j].zoom;
			p->zoom_set = old[j].zoom_set;
			break;
		}
	}
	/* Count the cells that differ between a result and its variant. */
	for (int i = 0; i < n; i++) {
		Pane *p = &t->pane[i];
		const Mat *ma = pane_mat(t, p), *mb = p->other >= 0 ? pane_mat(t, &t->pane[p->other]) : NULL;
		p->ndiff = 0;
		p->only[0] = '\0';
		if (ma == NULL || mb == NULL || ma->a == NULL || mb->a == NULL) /* a head kept in its file: not compared */
			continue;
		/* the cells only one of them has are not compared: say which rows those are */
		char here[40], there[40];
		stats_only_in(ma, mb, here, sizeof here);
		stats_only_in(mb, ma, there, sizeof there);
		if (here[0])
			snprintf(p->only, sizeof p->only, _("  %s only here"), here);
		else if (there[0])
			snprintf(p->only, sizeof p->only, p->variant ? _("  %s only in the lesson") : _("  %s only in the variant"), there);
		for (int r = 0; r < p->rows; r++)
			for (int c = 0; c < p->cols; c++) {
				int R, C;
				pane_src(p, r, c, &R, &C);
				p->ndiff += stats_cell_differs(ma, mb, R, C, STATS_DIFF_RTOL, STATS_DIFF_ATOL);
			}
	}
	int hid = quiz_hidden_pane(t);
	if (hid >= 0)
		t->pane[hid].hidden = 1;
	/* every other pane holding what the question is about (its "hides", the same numbers) */
	for (int i = 0; i < n; i++)
		if (!t->pane[i].variant && session_hides(s, (int)t->pane[i].which, t->pane[i].head))
			t->pane[i].hidden = 1;
	for (int i = 0; i < n; i++) {
		Pane *p = &t->pane[i];
		/* The variant would give the answer away too. */
		if (p->hidden && p->other >= 0)
			t->pane[p->other].hidden = 1;
	}
	for (int i = 0; i < n; i++) {
		/* a hidden pane's title keeps its name, not its shape (a question may ask for the shape) */
		char *shape = t->pane[i].hidden ? strrchr(t->pane[i].title, ' ') : NULL;
		if (shape != NULL && shape > t->pane[i].title && shape[-1] == ' ')
			shape[-1] = '\0';
	}
	if (t->focus >= n || t->focus < 0 || refocus)
		t->focus = n > 0 ? n - 1 : 0;
	/* a stage cut per head: the shown head's pane of the result */
	if (refocus && each_head && n > 0)
		tui_focus_matrix(t, (int)t->pane[n - 1].which, s->head, -1, -1);
	if (n > 0 && t->pane[t->focus].hidden) {
		int op = pane_operand(t, session_hidden_matrix(s));
		t->focus = op >= 0 ? op : 0;
	}
}

/* 1 when pane p shows source cell (row, col) of its matrix (-1: any). */
static int
pane_has_cell(const Pane *p, int row, int col)
{
	const int c = p->transpose ? row : col;

	(void)row;
	return c < 0 || p->ncols < 0 || (c >= p->col0 && c < p->col0 + p->ncols);
}

/*
 * Focus a matrix's pane (after `show`, or a step's focus); returns 1 when
 * found. Where a matrix is cut into several panes (heads, key/value heads),
 * the one holding the cell's column, else the head's own.
 */
int
tui_focus_matrix(Tui *t, int which, int head, int row, int col)
{
	int best = -1;

	for (int i = 0; i < t->npanes; i++) {
		Pane *p = &t->pane[i];
		if ((int)p->which != which || p->hidden || p->variant)
			continue;
		if (matrix_per_head((AttnMatrix)which) && p->head != head)
			continue;
		if (!pane_has_cell(p, row, col))
			continue;
		if (best < 0 || (col < 0 && (p->kv_head >= 0 ? p->kv_head == shape_kv_head(&t->s->attn->shape, head)
		                                               : p->head == head)))
			best = i;
	}
	/*
	 * The matrix is hidden by a question: the same cell of a pane of its shape
	 * that it is made from (scaled beside the weights), else the pane of what
	 * it is made from (c_KV: W_kva, not W_qa of the same shape), else (a stage
	 * without rules for it: decode's) the same cell of any pane of its shape.
	 */
	int same_cell = 1;
	for (int pass = 0; pass < 3 && best < 0 && row >= 0 && col >= 0; pass++)
		for (int i = 0; best < 0 && i < t->npanes; i++) {
			const Pane *h = &t->pane[i];
			if ((int)h->which != which || !h->hidden || h->variant || h->transpose || h->ncols != h->cols)
				continue;
			if (pass == 1) {
				best = pane_operand(t, which);
				same_cell = best < 0;
				continue;
			}
			for (int j = 0; best < 0 && j < t->npanes; j++) {
				const Pane *q = &t->pane[j];
				if (!q->hidden && !q->variant && !q->transpose && q->rows == h->rows && q->cols == h->cols &&
				    q->ncols == q->cols && (pass == 2 || pane_made_from(t, which, q->which)))
					best = j;
			}
		}
	if (best < 0)
		return 0;
	t->focus = best;
	if (row >= 0 && col >= 0 && same_cell)
		pane_put_cursor(&t->pane[best], row, col);
	return 1;
}

/* ------------------------------------------------------------------ */
/* Drawing a pane                                                     */
/* ------------------------------------------------------------------ */

/* Operands of the focused cell, for highlighting. */
typedef struct Ops {
	int n;
	int variant;  /* the operands are in this computation (Pane.variant) */
	ExplainOperand op[4];
} Ops;

/* 1 when operand e is in the matrix pane p shows (same computation, matrix and head). */
static int
ops_in_pane(const Ops *o, const ExplainOperand *e, const Pane *p)
{
	return p->variant == o->variant && e->which == p->which &&
	       (!matrix_per_head(p->which) || e->head == p->head);
}

static int
ops_hit(const Ops *o, const Pane *p, int R, int C)
{
	for (int i = 0; i < o->n; i++) {
		const ExplainOperand *e = &o->op[i];
		if (!ops_in_pane(o, e, p))
			continue;
		if ((e->row < 0 || e->row == R) && (e->col < 0 || e->col == C))
			return 1;
	}
	return 0;
}

/* A whole row (row == 1) or column of the view that an operand covers. */
static int
ops_line(const Ops *o, const Pane *p, int row, int idx)
{
	/* A view row is a source row, or a source column when transposed. */
	int src_row = row != p->transpose;
	int src = src_row ? idx : p->col0 + idx;

	for (int i = 0; i < o->n; i++) {
		const ExplainOperand *e = &o->op[i];
		if (!ops_in_pane(o, e, p))
			continue;
		if (src_row && e->col < 0 && e->row == src)
			return 1;
		if (!src_row && e->row < 0 && e->col == src)
			return 1;
	}
	return 0;
}

static void
tui_ops(const Tui *t, Ops *o)
{
	o->n = 0;
	if (t->npanes == 0 || t->mode == TUI_CMD)
		return;
	const Pane *p = &t->pane[t->focus];
	if (p->hidden || p->rows == 0 || p->cols == 0)
		return;
	int R, C;
	pane_src(p, p->cur_r, p->cur_c, &R, &C);
	o->variant = p->variant;
	o->n = explain_operands(pane_attn(t, p), p->which, p->head, R, C, o->op);
	if (o->n < 0)
		o->n = 0;
	if (o->n > 4)
		o->n = 4;
}

/* The previous computation's matrix for a pane, when an edit just changed it (same shape). */
static const Mat *
pane_prev(const Tui *t, const Pane *p, const Mat *cur)
{
	const Attn *pa = t->s->prev_attn;

	if (!t->edit_glow || pa == NULL)
		return NULL;
	if (matrix_per_head(p->which) && p->head >= pa->heads)
		return NULL;
	const Mat *m = attn_matrix_shown(pa, p->which, p->head);
	if (m == NULL || m->a == NULL || cur->a == NULL || m->rows != cur->rows || m->cols != cur->cols)
		return NULL;
	return m;
}

static void
keep_cursor_visible(Pane *p, int vis_r, int vis_c)
{
	if (vis_r < 1)
		vis_r = 1;
	if (vis_c < 1)
		vis_c = 1;
	if (p->cur_r < p->top)
		p->top = p->cur_r;
	if (p->cur_r >= p->top + vis_r)
		p->top = p->cur_r - vis_r + 1;
	/* a decode step's rows: the newest at the bottom, as much of the cache above it as fits */
	if ((matrix_kind(p->which)->flags & MF_DECODE) && !p->transpose && p->top > 0 && p->cur_r - p->top < vis_r - 1)
		p->top = p->cur_r - vis_r + 1 > 0 ? p->cur_r - vis_r + 1 : 0;
	if (p->cur_c < p->left)
		p->left = p->cur_c;
	if (p->cur_c >= p->left + vis_c)
		p->left = p->cur_c - vis_c + 1;
	if (p->top > p->rows - vis_r)
		p->top = p->rows - vis_r > 0 ? p->rows - vis_r : 0;
	if (p->left > p->cols - vis_c)
		p->left = p->cols - vis_c > 0 ? p->cols - vis_c : 0;
	if (p->top < 0)
		p->top = 0;
	if (p->left < 0)
		p->left = 0;
}

/* Draw a label right-aligned (or left) in a field of width fw. */
static void
put_label(WINDOW *w, int y, int x, int fw, attr_t attr, char *label, int right)
{
	int lw = label ? text_width(label, -1) : 0;
	int pad = right && lw < fw ? fw - lw : 0;

	screen_put(w, y, x + pad, attr, label ? label : "", fw - pad);
	free(label);
}

static void
pane_draw_title(Tui *t, Pane *p, int vis_r, int vis_c)
{
	WINDOW *w = p->win;
	int W = getmaxx(w);
	attr_t at = theme_attr(t->focus == (int)(p - t->pane) && t->mode != TUI_CMD ? ROLE_PANE_FOCUS : ROLE_PANE_TITLE);
	int x = screen_put(w, 0, 0, at, p->title, W);
	char more[64] = "";

	if (p->note[0]) { /* before the rest: what the numbers are (raw q·k) matters more than where the view is */
		const char *note = x + 2 + text_width(p->note, -1) <= W ? p->note : p->note_brief;
		x += screen_put(w, 0, x, theme_attr(ROLE_LABEL), "  ", W - x);
		x += screen_put_fit(w, 0, x, theme_attr(ROLE_LABEL), note, W - x, t->utf8);
	}
	if (p->hidden || p->rows == 0)
		return;
	if (p->zoom)
		snprintf(more, sizeof more, "%s", _("  heatmap"));
	else if (vis_r < p->rows || vis_c < p->cols)
		snprintf(more, sizeof more, "  r%d-%d c%d-%d", p->top, p->top + vis_r - 1, p->left, p->left + vis_c - 1);
	x += screen_put(w, 0, x, theme_attr(ROLE_LABEL), more, W - x);
	/* What fits of: the cells that differ from the variant, then mean and σ. */
	if (p->other >= 0) {
		char d[48];
		snprintf(d, sizeof d, _("  %d differ (*)"), p->ndiff);
		if (x + text_width(d, -1) <= W)
			x += screen_put(w, 0, x, theme_attr(ROLE_LABEL_HI), d, W - x);
		if (p->only[0] && x + text_width(p->only, -1) <= W)
			x += screen_put(w, 0, x, theme_attr(ROLE_LABEL), p->only, W - x);
	}
	if (p->stats[0] && x + 2 + text_width(p->stats, -1) <= W) {
		x += screen_put(w, 0, x, theme_attr(ROLE_LABEL), "  ", W - x);
		screen_put(w, 0, x, theme_attr(ROLE_LABEL), p->stats, W - x);
	}
}

/*
 * The legend under a pane: "-2.31 ▁▂▃▄▅▆▇ 4.07", each step drawn in the ramp
 * colour of the value it stands for, and how masked cells look.
 */
static void
pane_draw_legend(Tui *t, Pane *p, int y)
{
	WINDOW *w = p->win;
	int W = getmaxx(w), x = 0, steps = LEGEND_STEPS;
	char lo[32], hi[32];
	static const char *const bars[] = { "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587" };
	static const char *const ascii[] = { ".", ":", "-", "=", "+", "*", "#" };

	fmt_legend(lo, sizeof lo, p->minv);
	fmt_legend(hi, sizeof hi, p->maxv);
	if (pane_legend_width(p) > W)
		return;
	x += screen_put(w, y, x, theme_attr(ROLE_LABEL), lo, W - x);
	x += screen_put(w, y, x, theme_attr(ROLE_LABEL), " ", W - x);
	for (int i = 0; i < steps; i++) {
		double v = p->minv + (p->maxv - p->minv) * i / (steps - 1);
		double tv = p->diverging ? (p->maxabs > 0 ? v / p->maxabs : 0) : v;
		int lv = 0;
		attr_t at = theme_heat(p->diverging ? RAMP_DIVERGING : RAMP_SEQUENTIAL, tv, &lv);
		/*
		 * Without colour the cells carry shade glyphs (░▒▓█ or ' : * #), so
		 * the legend shows those same glyphs: bars of another shape would not
		 * tell a monochrome reader which glyph means which value.
		 */
		const char *g = theme_mono() ? theme_shade(lv, t->utf8) : t->utf8 ? bars[i] : ascii[i];
		x += screen_put(w, y, x, at, g, W - x);
	}
	x += screen_put(w, y, x, theme_attr(ROLE_LABEL), " ", W - x);
	x += screen_put(w, y, x, theme_attr(ROLE_LABEL), hi, W - x);
	if (p->has_masked) {
		const char *m = t->utf8 ? _("-\u221e masked") : _("-inf masked");
		if (x + 2 + text_width(m, -1) <= W) {
			x += screen_put(w, y, x, theme_attr(ROLE_LABEL), "  ", W - x);
			screen_put(w, y, x, theme_attr(ROLE_MASKED), m, W - x);
		}
	}
}

/* A pane's cell for heat_block_peak. */
typedef struct PaneCells {
	const Tui *t;
	const Mat *m;
	const Pane *p;
} PaneCells;

static double
pane_cell_value(const void *ctx, int r, int c)
{
	const PaneCells *pc = ctx;
	return pane_value(pc->t, pc->m, pc->p, r, c);
}

/* The rows and columns of heatmap cells a zoomed pane of H × W has room for. */
static void
pane_heat_room(const Pane *p, int H, int W, int *most_r, int *most_c)
{
	*most_r = H - 2 > 1 ? H - 2 : 1;
	*most_c = (W - p->lw) / PANE_HEAT_CW > 1 ? (W - p->lw) / PANE_HEAT_CW : 1;
}

int
pane_zoom_factor(const Pane *p)
{
	int most_r = 1, most_c = 1;

	if (p->win != NULL)
		pane_heat_room(p, getmaxy(p->win), getmaxx(p->win), &most_r, &most_c);
	return heat_factor(p->rows, p->cols, most_r, most_c);
}

/*
 * The zoomed-out heatmap, no numbers (inspect/heatmap.h, the exports' rule):
 * each cell PANE_HEAT_CW columns by a line; past the room, down-sampled by
 * the same f both ways, each drawn cell its f × f block's strongest cell,
 * the reduction said on the line under the title.
 */
static void
pane_draw_zoom(Tui *t, Pane *p, const Mat *m)
{
	WINDOW *w = p->win;
	int H = getmaxy(w), W = getmaxx(w), most_r, most_c;

	pane_heat_room(p, H, W, &most_r, &most_c);
	if (H < 3 || W - p->lw < PANE_HEAT_CW)
		return;
	const int f = heat_factor(p->rows, p->cols, most_r, most_c);
	const int nr = (p->rows + f - 1) / f, nc = (p->cols + f - 1) / f;
	const int cr = p->cur_r / f, cc = p->cur_c / f;
	const int focused = t->focus == (int)(p - t->pane);
	const PaneCells cells = { t, m, p };
	char cap[96];

	pane_draw_title(t, p, nr, nc);
	const char *x = t->utf8 ? "\u00d7" : "x";
	if (f > 1) {
		/* TRANSLATORS: under a zoomed pane's title: each drawn cell stands for f × f cells; then how many are drawn */
		snprintf(cap, sizeof cap, _("each cell the strongest of %d%s%d (%d%s%d drawn)"), f, x, f, nr, x, nc);
		if (text_width(cap, -1) > W)
			/* TRANSLATORS: the same, brief, for a narrow pane */
			snprintf(cap, sizeof cap, _("each: strongest of %d%s%d"), f, x, f);
	} else
		snprintf(cap, sizeof cap, "%s", _("no numbers (z shows them)"));
	screen_put(w, 1, 0, theme_attr(ROLE_LABEL), cap, W);
	for (int i = 0; i < nr; i++) {
		char *l = pane_row_label(t, p, i * f);
		put_label(w, 2 + i, 0, p->lw - 1, theme_attr(focused && i == cr ? ROLE_LABEL_HI : ROLE_LABEL), l, 0);
		for (int j = 0; j < nc; j++) {
			const int r1 = (i + 1) * f < p->rows ? (i + 1) * f : p->rows;
			const int c1 = (j + 1) * f < p->cols ? (j + 1) * f : p->cols;
			const double peak = heat_block_peak(pane_cell_value, &cells, i * f, r1, j * f, c1);
			const int masked = isinf(peak) && peak < 0;
			int lv = 0;
			attr_t at;
			if (isnan(peak))
				at = A_NORMAL;
			else if (masked)
				at = theme_attr(ROLE_MASKED);
			else {
				double tv = p->diverging ? (p->maxabs > 0 ? peak / p->maxabs : 0) : peak;
				at = theme_heat(p->diverging ? RAMP_DIVERGING : RAMP_SEQUENTIAL, tv, &lv);
			}
			if (focused && i == cr && j == cc)
				at = theme_attr(ROLE_CURSOR);
			wattrset(w, at);
			wmove(w, 2 + i, p->lw + PANE_HEAT_CW * j);
			if (masked)
				waddstr(w, t->utf8 ? "\u00b7\u00b7" : "..");
			else if (theme_mono() && !isnan(peak)) {
				const char *g = theme_shade(lv, t->utf8);
				waddstr(w, g);
				waddstr(w, g);
			} else
				waddstr(w, "  ");
		}
	}
	wattrset(w, A_NORMAL);
	/* the legend under the rows, when a line is left */
	if (p->legend && 2 + nr < H)
		pane_draw_legend(t, p, 2 + nr);
}

/*
 * A distribution over the vocabulary (the next token's probabilities) as
 * bars: its top k entries, likeliest first, each its token (escaped), a bar
 * as long as its probability, the number; the cursor's entry lit (and shown
 * under them when it is not among the k).
 */
static void
pane_draw_bars(Tui *t, Pane *p, const Mat *m)
{
	WINDOW *w = p->win;
	const int H = getmaxy(w), W = getmaxx(w), focused = t->focus == (int)(p - t->pane);
	int idx[LESSON_MAX_TOP_K + 1];
	const int k = attn_top_entries(m->a, m->cols, p->bars < LESSON_MAX_TOP_K ? p->bars : LESSON_MAX_TOP_K, idx);
	const int lw = PANE_BAR_LABEL, bw = W - lw - 9 > 4 ? W - lw - 9 : 4;
	int n = 0, seen = 0;

	pane_draw_title(t, p, p->rows, p->cols);
	for (int i = 0; i < k; i++)
		seen |= idx[i] == p->cur_c;
	if (!seen && p->cur_c >= 0 && p->cur_c < m->cols)
		idx[n = k] = p->cur_c;
	for (int i = 0; i < k + (n > 0) && 1 + i + (i == k) < H; i++) {
		const int y = 1 + i + (i == k), v = idx[i], lit = focused && v == p->cur_c && t->mode != TUI_CMD;
		const double pv = m->a[v];
		const int len = (int)(pv * bw + 0.5);
		char num[16];
		put_label(w, y, 0, lw - 1, theme_attr(lit ? ROLE_LABEL_HI : ROLE_LABEL), labels_vocab(attn_config(pane_attn(t, p)), v), 1);
		wattrset(w, theme_attr(lit ? ROLE_CURSOR : ROLE_LABEL_HI));
		wmove(w, y, lw);
		for (int c = 0; c < len && lw + c < W; c++)
			waddstr(w, t->utf8 ? "\u2588" : "#");
		wattrset(w, A_NORMAL);
		snprintf(num, sizeof num, " %.4f", pv);
		if (lw + len < W)
			screen_put(w, y, lw + len, theme_attr(lit ? ROLE_LABEL_HI : ROLE_LABEL), num, W - lw - len);
	}
	wattrset(w, A_NORMAL);
}

/* A cell at the decode step or tile shown: the new row and the tile lit, the state before it underlined, dropped rows dim. */
static attr_t
cell_state_attr(CellState cs, attr_t heat)
{
	switch (cs) {
	case CELL_NEW: case CELL_AFTER:
		return theme_overlay(ROLE_OPERAND, heat) | A_BOLD;
	case CELL_BEFORE:
		return heat | A_UNDERLINE;
	case CELL_DROPPED:
		return theme_attr(ROLE_MASKED);
	default:
		return heat;
	}
}

/* Where a pane's cells are in its window of H × W: drawing and a click read the same grid. */
typedef struct PaneGrid {
	int lw, cw, step;   /* the label column's width, a cell's width with its gap, lines a row takes */
	int block, mid;     /* lines a row's cells are painted over, and the one of them with the numbers */
	int vis_r, vis_c;   /* rows and columns in view */
	int sums;           /* the Σ column is drawn (every column in view) */
} PaneGrid;

static void
pane_grid(const Pane *p, int H, int W, PaneGrid *g)
{
	g->lw = p->lw < W ? p->lw : W - 1;
	g->cw = p->cw + p->pad;
	g->step = 1 + p->rgap;
	g->block = pane_block(p);
	g->mid = (g->block - 1) / 2;
	/* k rows take 2 + (k - 1)·step + block lines */
	g->vis_r = H - 2 - g->block >= 0 ? (H - 2 - g->block) / g->step + 1 : 0;
	g->vis_c = g->cw > 0 ? (W - g->lw) / g->cw : 1;
	if (g->vis_r < 1)
		g->vis_r = 1;
	if (g->vis_c < 1)
		g->vis_c = 1;
	/* The Σ column takes a cell's room when every column is in view. */
	g->sums = p->sums && g->vis_c > p->cols;
	if (g->sums)
		g->vis_c = p->cols;
}

/* block lines from (y, x), w columns wide, in attribute at (a tall cell's colour, or blank) */
static void
pane_fill_block(WINDOW *w, int y, int x, int width, int block, attr_t at)
{
	wattrset(w, at);
	for (int k = 0; k < block; k++) {
		wmove(w, y + k, x);
		for (int c = 0; c < width; c++)
			waddch(w, ' ');
	}
	wattrset(w, A_NORMAL);
}

static void
pane_draw(Tui *t, Pane *p, const Ops *ops)
{
	WINDOW *w = p->win;
	const Mat *m;
	int focused = t->focus == (int)(p - t->pane);

	if (w == NULL)
		return;
	werase(w);
	int H = getmaxy(w), W = getmaxx(w);
	m = pane_mat(t, p);
	if (p->hidden) {
		pane_draw_title(t, p, 0, 0);
		/* one line: how to answer (the narration under it has the question, :skip and :hint) */
		const Step *st = session_step(t->s);
		char msg[32];
		if (st->quiz.nchoices > 0)
			snprintf(msg, sizeof msg, _("press 1-%d first"), st->quiz.nchoices);
		else
			snprintf(msg, sizeof msg, ":answer VALUE");
		if (H > 1 && !tui_clean(t)) /* --render --clean: no keys in a frame for slides */
			screen_put(w, 1, 1, theme_attr(ROLE_PLACEHOLDER), msg, W - 1);
		wnoutrefresh(w);
		return;
	}
	if (m == NULL || p->rows == 0 || p->cols == 0) {
		pane_draw_title(t, p, 0, 0);
		wnoutrefresh(w);
		return;
	}
	if (p->zoom) {
		pane_draw_zoom(t, p, m);
		wnoutrefresh(w);
		return;
	}
	if (p->bars) {
		pane_draw_bars(t, p, m);
		wnoutrefresh(w);
		return;
	}

	PaneGrid g;
	pane_grid(p, H, W, &g);
	const int lw = g.lw, cw = g.cw, step = g.step, sums = g.sums;
	int vis_r = g.vis_r, vis_c = g.vis_c;
	keep_cursor_visible(p, vis_r, vis_c);
	pane_draw_title(t, p, vis_r < p->rows ? vis_r : p->rows, vis_c < p->cols ? vis_c : p->cols);

	const Mat *prev = pane_prev(t, p, m);
	const Mat *cmp = p->other >= 0 ? pane_mat(t, &t->pane[p->other]) : NULL;
	int present = t->opt.present;
	if (cmp != NULL && (cmp->a == NULL || m->a == NULL)) /* a head kept in its file: its cells not compared */
		cmp = NULL;
	attr_t lab_bold = present ? A_BOLD : 0;

	/* Column labels. */
	for (int j = 0; j < vis_c && p->left + j < p->cols; j++) {
		int c = p->left + j, R, C;
		pane_src(p, 0, c, &R, &C);
		int hi = (focused && c == p->cur_c) || ops_line(ops, p, 0, c);
		put_label(w, 1, lw + j * cw, cw - p->pad / 2, theme_attr(hi ? ROLE_LABEL_HI : ROLE_LABEL) | lab_bold,
		          pane_col_label(t, p, c), 1);
	}
	if (sums)
		put_label(w, 1, lw + vis_c * cw, cw - p->pad / 2, theme_attr(ROLE_LABEL) | lab_bold,
		          strdup(t->utf8 ? "\u03a3" : "sum"), 1);
	/* Rows. */
	int y = 2;
	for (int i = 0; i < vis_r && p->top + i < p->rows; i++, y += step) {
		int r = p->top + i, row_new = 0, row_seen = 0;
		int hi = (focused && r == p->cur_r) || ops_line(ops, p, 1, r);
		for (int j = 0; j < vis_c && p->left + j < p->cols; j++) {
			int c = p->left + j, R, C, lv = 0;
			char num[32];
			pane_src(p, r, c, &R, &C);
			double v = pane_at(t, p, m, R, C);
			attr_t at;
			/* at a decode step or tile: cells not computed yet are blank, the new ones lit */
			const CellState cs = session_cell_state(t->s, pane_attn(t, p), p->which, R, C);
			row_new |= cs == CELL_NEW && !p->transpose;
			row_seen |= cs != CELL_UNSEEN;
			if (cs == CELL_UNSEEN && !(focused && r == p->cur_r && c == p->cur_c && t->mode != TUI_CMD)) {
				pane_fill_block(w, y, lw + j * cw, cw, g.block, A_NORMAL);
				continue;
			}

			int differs = cmp != NULL && stats_cell_differs(m, cmp, R, C, STATS_DIFF_RTOL, STATS_DIFF_ATOL);
			if (focused && r == p->cur_r && c == p->cur_c && t->mode != TUI_CMD)
				at = theme_attr(ROLE_CURSOR);
			else if (prev && !(MAT_AT(*prev, R, C) == v) && !(isnan(v) && isnan(MAT_AT(*prev, R, C))))
				at = theme_attr(ROLE_FLASH);
			else if (pane_masked(t, p, R, C, v))
				at = theme_attr(ROLE_MASKED);
			else {
				double tv = p->diverging ? (p->maxabs > 0 ? v / p->maxabs : 0) : v;
				at = theme_heat(p->diverging ? RAMP_DIVERGING : RAMP_SEQUENTIAL, tv, &lv);
				/* Operands: from the back of a room, reverse and bold. */
				if (ops_hit(ops, p, R, C))
					at = theme_overlay(ROLE_OPERAND, at) | (present ? A_REVERSE | A_BOLD : 0);
				at = cell_state_attr(cs, at);
			}
			if (differs)
				at |= A_BOLD;
			int mono = theme_mono();
			int numw = p->cw - 1 - mono, trail = p->pad / 2;
			fmt_cell(num, sizeof num, v, numw, t->utf8);
			int x = lw + j * cw;
			int nw = text_width(num, -1);
			/* a tall cell: its colour over the block's lines, the number on the middle one */
			if (g.block > 1)
				pane_fill_block(w, y, x, cw, g.block, at);
			wattrset(w, at);
			wmove(w, y + g.mid, x);
			/* A cell that differs from the variant carries a '*' in its gap (not colour alone). */
			int lead = 1 + p->pad - trail + numw - nw;
			for (int k = 0; k < lead; k++)
				waddch(w, differs && k == lead - 1 && lead > 1 ? '*' : k == 0 && mono ? session_cell_mark(cs) : ' ');
			screen_draw(w, num, -1, numw, 0);
			if (mono)
				waddstr(w, theme_shade(lv, t->utf8));
			for (int k = 0; k < trail; k++)
				waddch(w, ' ');
			wattrset(w, A_NORMAL);
		}
		put_label(w, y + g.mid, 0, lw - 1, theme_attr(hi || row_new ? ROLE_LABEL_HI : ROLE_LABEL) | lab_bold | (row_new ? A_BOLD : 0),
		          pane_row_label(t, p, r), 0);
		if (sums && row_seen) { /* the sums of the rows in view only, not of all n */
			char sbuf[32];
			fmt_cell(sbuf, sizeof sbuf, stats_row_sum(m, r), p->cw - 1, t->utf8);
			int sw = text_width(sbuf, -1);
			screen_put(w, y + g.mid, lw + vis_c * cw + (cw - p->pad / 2 - sw), theme_attr(ROLE_LABEL) | lab_bold, sbuf, sw);
		}
	}
	/* The legend, when every row is in view and a line is left under them. */
	y += g.block - step; /* the line under the last row's block */
	if (p->legend && p->top == 0 && vis_r >= p->rows && y < H)
		pane_draw_legend(t, p, y);
	wnoutrefresh(w);
}

/*
 * Panes of the focused pane's shape scroll with it: the same cell under
 * their cursor, the same rows and columns in view (the 123 × 123 scores
 * beside the weights, the compare variant beside the lesson's).
 */
int
pane_same_shape(const Pane *a, const Pane *b)
{
	return !a->hidden && !b->hidden && !a->zoom && !b->zoom && a->rows > 0 && a->rows == b->rows &&
	       a->cols == b->cols && a->transpose == b->transpose;
}

static void
panes_follow_focus(Tui *t)
{
	const Pane *f = &t->pane[t->focus];

	for (int i = 0; i < t->npanes; i++) {
		Pane *p = &t->pane[i];
		if (i == t->focus || !pane_same_shape(p, f))
			continue;
		p->cur_r = f->cur_r;
		p->cur_c = f->cur_c;
		p->top = f->top;
		p->left = f->left;
	}
}

void
tui_draw_panes(Tui *t)
{
	Ops ops;

	tui_ops(t, &ops);
	/* the focused pane first: it scrolls to its cursor, and those of its shape follow */
	if (t->focus >= 0 && t->focus < t->npanes) {
		pane_draw(t, &t->pane[t->focus], &ops);
		panes_follow_focus(t);
	}
	for (int i = 0; i < t->npanes; i++)
		if (i != t->focus)
			pane_draw(t, &t->pane[i], &ops);
}

/*
 * The cell of a pane at (y, x) of its window, as pane_draw lays it out
 * (title, column labels, then rows of cells after the row labels): 1 with
 * the view's (*r, *c), 0 elsewhere (a label, a gap, a hidden or zoomed pane).
 */
int
pane_cell_at(const Pane *p, int y, int x, int *r, int *c)
{
	WINDOW *w = p->win;

	if (w == NULL || p->hidden || p->zoom || p->rows == 0 || p->cols == 0)
		return 0;
	PaneGrid g;
	pane_grid(p, getmaxy(w), getmaxx(w), &g);
	if (y < 2 || (y - 2) % g.step >= g.block || x < g.lw || g.cw <= 0)
		return 0;
	int i = (y - 2) / g.step, j = (x - g.lw) / g.cw;
	if (i >= g.vis_r || j >= g.vis_c || p->top + i >= p->rows || p->left + j >= p->cols)
		return 0;
	*r = p->top + i;
	*c = p->left + j;
	return 1;
}
