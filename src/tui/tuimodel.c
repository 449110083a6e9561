/*
 * tuimodel.c: the model view (issue 22) — every layer × head of the lesson
 * (or model) as a small heatmap of its attention weights, down-sampled with
 * shade glyphs when the tokens outnumber the thumbnail's cells, its scores
 * under it (headscores.h), the selected one marked. Arrows move, Enter opens
 * that layer and head in the walk at its softmax stage, e explains its
 * scores, s sorts by one of them, L opens the logit lens (tuilens.c, a screen over this one),
 * PgUp/PgDn page the layers, Esc or q
 * returns. It opens with `v` or the `heads [sort SCORE]` command, and lies
 * over the main view: keys go to it while it is open (t->model_open). It
 * reads the session and changes it only by opening a head (session_*).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curses.h>

#include "base/i18n.h"
#include "base/strbuf.h"
#include "base/text.h"
#include "out/textfmt.h"
#include "tui/theme.h"
#include "tui/tuistate.h"

/* Thumbnails: columns each (with a gap), at least and at most; heatmap rows at most. */
#define MODEL_PITCH_MIN 4
#define MODEL_PITCH_MAX 20
#define MODEL_THUMB_ROWS_MAX 6

/* Where things are on the screen now: measured from the rows and the screen each time (draw and mouse). */
typedef struct ModelGeo {
	int lw;              /* the layer labels' column (unsorted), or a margin */
	int gcols, grows;    /* the grid's columns and rows (of slots) */
	int pw, ph;          /* a slot's columns and lines: caption, th heatmap rows, the score lines */
	int th, score_lines; /* score_lines: 1 with every score on it (wide), 2 (two each), or 1 with one score */
	int all_scores;      /* the score lines carry every score (else only the sort's, or prev's) */
	int vis_cols, vis_rows;
	int y0;              /* the first slot's line */
} ModelGeo;

/* The slot of row k: unsorted, its layer and head; sorted, its place in the order. */
static void
slot_of(const Tui *t, const ModelGeo *g, int k, int *r, int *c)
{
	if (t->model_sort < 0) {
		*r = t->model_rows[k].layer;
		*c = t->model_rows[k].head;
	} else {
		*r = k / g->gcols;
		*c = k % g->gcols;
	}
}

/* The row at slot (r, c), or -1. */
static int
item_at(const Tui *t, const ModelGeo *g, int r, int c)
{
	if (t->model_sort >= 0) {
		const int k = r * g->gcols + c;
		return r >= 0 && c >= 0 && c < g->gcols && k < t->model_n ? k : -1;
	}
	for (int k = 0; k < t->model_n; k++)
		if (t->model_rows[k].layer == r && t->model_rows[k].head == c)
			return k;
	return -1;
}

static void
model_geo(const Tui *t, ModelGeo *g)
{
	int maxh = 1, maxn = 1;

	memset(g, 0, sizeof *g);
	g->grows = 1;
	for (int k = 0; k < t->model_n; k++) {
		const Attn *a = session_walk_link(t->s, t->model_rows[k].layer);
		if (t->model_rows[k].head + 1 > maxh)
			maxh = t->model_rows[k].head + 1;
		if (a != NULL && attn_config(a)->n > maxn)
			maxn = attn_config(a)->n;
		if (t->model_sort < 0 && t->model_rows[k].layer + 1 > g->grows)
			g->grows = t->model_rows[k].layer + 1;
	}
	/* the layer labels: "L" and the longest word ("12", "e1"), and a space */
	g->lw = 1;
	if (t->model_sort < 0)
		for (int l = 0; l < session_layers(t->s); l++) {
			char w[16];
			if (session_layer_word(t->s, l, w, sizeof w) == 0 && (int)strlen(w) + 2 > g->lw)
				g->lw = (int)strlen(w) + 2;
		}
	g->pw = (COLS - g->lw) / maxh;
	if (g->pw > MODEL_PITCH_MAX)
		g->pw = MODEL_PITCH_MAX;
	if (g->pw < MODEL_PITCH_MIN)
		g->pw = MODEL_PITCH_MIN;
	const int fit = (COLS - g->lw) / g->pw > 0 ? (COLS - g->lw) / g->pw : 1;
	g->gcols = t->model_sort < 0 ? maxh : (t->model_n < fit ? (t->model_n > 0 ? t->model_n : 1) : fit);
	if (t->model_sort >= 0)
		g->grows = (t->model_n + g->gcols - 1) / g->gcols;
	g->vis_cols = g->gcols < fit ? g->gcols : fit;
	/* the scores: all on one line ("p.52 f.31 d.10 i.04"), on two, or only one */
	g->all_scores = g->pw - 1 >= 9;
	g->score_lines = g->pw - 1 >= 19 || !g->all_scores ? 1 : 2;
	g->th = (g->pw - 1) / 2;
	if (g->th > MODEL_THUMB_ROWS_MAX)
		g->th = MODEL_THUMB_ROWS_MAX;
	if (g->th < 3)
		g->th = 3;
	if (g->th > maxn)
		g->th = maxn;
	/* the title line above, the selected head's line and the key line below */
	const int room = LINES - 3;
	while (g->th > 1 && 1 + g->th + g->score_lines > room)
		g->th--;
	g->ph = 1 + g->th + g->score_lines;
	g->vis_rows = room / g->ph > 0 ? room / g->ph : 1;
	g->y0 = 1;
}

/* The selection's slot kept in view (top: the first slot row shown, left: the first column). */
static void
model_scroll(Tui *t, const ModelGeo *g)
{
	int r, c;

	if (t->model_n == 0)
		return;
	slot_of(t, g, t->model_sel, &r, &c);
	if (r < t->model_top)
		t->model_top = r;
	if (r >= t->model_top + g->vis_rows)
		t->model_top = r - g->vis_rows + 1;
	if (c < t->model_left)
		t->model_left = c;
	if (c >= t->model_left + g->vis_cols)
		t->model_left = c - g->vis_cols + 1;
	if (t->model_top < 0)
		t->model_top = 0;
	if (t->model_left < 0)
		t->model_left = 0;
}

/* Gather the heads and their scores again (a new lesson, an edit), keeping the selected layer and head. */
void
tui_model_refresh(Tui *t)
{
	int layer = t->s->layer, head = t->s->head, n;

	if (t->model_rows != NULL && t->model_sel < t->model_n) {
		layer = t->model_rows[t->model_sel].layer;
		head = t->model_rows[t->model_sel].head;
	}
	HeadRow *rows = textfmt_head_rows(t->s, t->model_sort, &n);
	if (rows == NULL) {
		tui_set_msg(t, 1, _("out of memory"));
		return;
	}
	free(t->model_rows);
	t->model_rows = rows;
	t->model_n = n;
	t->model_sel = 0;
	for (int k = 0; k < n; k++)
		if (rows[k].layer == layer && rows[k].head == head)
			t->model_sel = k;
	t->redraw |= R_POPUP;
	tui_lens_refresh(t);
}

int
tui_model_open(Tui *t, int sort)
{
	char *err = NULL;

	t->model_sort = sort >= 0 && sort < HS_COUNT ? sort : -1;
	tui_lens_close(t); /* `heads` typed in the lens: the heads it asks for */
	if (session_induction(t->s, &err) != 0) { /* a model's induction scores: its run on random tokens repeated twice */
		tui_set_msg(t, 1, err);
		free(err);
	}
	if (!t->model_open) {
		free(t->model_rows);
		t->model_rows = NULL;
		t->model_n = t->model_sel = 0;
	}
	t->model_top = t->model_left = 0;
	tui_model_refresh(t);
	if (t->model_rows == NULL)
		return 1;
	if (t->model_sort >= 0)
		t->model_sel = 0; /* sorted: the highest first, selected */
	t->model_open = 1;
	t->redraw |= R_ALL & ~R_LAYOUT;
	return 1;
}

void
tui_model_close(Tui *t)
{
	tui_lens_close(t);
	free(t->model_rows);
	t->model_rows = NULL;
	t->model_n = 0;
	if (t->w_model != NULL) {
		delwin(t->w_model);
		t->w_model = NULL;
	}
	if (t->model_open) {
		t->model_open = 0;
		/* the main view comes back: its windows made afresh, every line drawn */
		touchwin(stdscr);
		wnoutrefresh(stdscr);
		t->redraw |= R_ALL;
	}
}

/* A score in four columns at most: ".52", "1.0", "0" for nothing at all, or "—" ("-") undefined. */
static const char *
short_score(char buf[16], const HeadScore *sc, int utf8)
{
	if (sc->rows == 0)
		snprintf(buf, 16, "%s", utf8 ? "\u2014" : "-");
	else if (sc->mean >= 0.995)
		snprintf(buf, 16, "1.0");
	else
		snprintf(buf, 16, ".%02d", (int)(sc->mean * 100 + 0.5));
	return buf;
}

/* The heatmap of one head: gr × gc glyphs at (y, x), each a block's mean over its rows of their weight on its keys. */
static void
draw_thumb(Tui *t, WINDOW *w, int y, int x, const ModelGeo *g, const HeadRow *hr)
{
	const Attn *a = session_walk_link(t->s, hr->layer);
	const Mat *m = a != NULL ? attn_matrix(a, AM_WEIGHTS, hr->head) : NULL;

	if (m == NULL || m->rows == 0 || m->cols == 0)
		return;
	const int avail = g->pw - 1, wide = 2 * m->cols <= avail;
	const int gc = wide ? m->cols : (m->cols < avail ? m->cols : avail), gr = m->rows < g->th ? m->rows : g->th;
	for (int bi = 0; bi < gr; bi++) {
		const int r0 = (int)((long)bi * m->rows / gr), r1 = (int)((long)(bi + 1) * m->rows / gr);
		for (int bj = 0; bj < gc; bj++) {
			const int c0 = (int)((long)bj * m->cols / gc), c1 = (int)((long)(bj + 1) * m->cols / gc);
			int seen, lv = 0;
			const double sum = headscore_block_sum(a, m, r0, r1, c0, c1, &seen);
			const char *glyph;
			attr_t at;
			if (!seen) {
				at = theme_attr(ROLE_MASKED);
				glyph = t->utf8 ? "\u00b7" : ".";
			} else {
				at = theme_heat(RAMP_SEQUENTIAL, sum / (r1 - r0), &lv);
				glyph = theme_shade(lv, t->utf8);
			}
			wattrset(w, at);
			for (int k = 0; k < (wide ? 2 : 1); k++)
				mvwaddstr(w, y + bi, x + bj * (wide ? 2 : 1) + k, glyph);
		}
	}
	wattrset(w, A_NORMAL);
}

/* The score lines under a thumbnail. */
static void
draw_scores(Tui *t, WINDOW *w, int y, int x, const ModelGeo *g, const HeadRow *hr, attr_t at)
{
	static const char letter[HS_COUNT] = { 'p', 'f', 'd', 'i' };
	char v[HS_COUNT][16], line[96];

	for (int k = 0; k < HS_COUNT; k++)
		short_score(v[k], &hr->sc.s[k], t->utf8);
	if (!g->all_scores) {
		const int k = t->model_sort >= 0 ? t->model_sort : HS_PREV;
		screen_put(w, y, x, at, v[k], g->pw - 1);
		return;
	}
	if (g->score_lines == 1) {
		snprintf(line, sizeof line, "%c%s %c%s %c%s %c%s", letter[0], v[0], letter[1], v[1], letter[2], v[2],
		         letter[3], v[3]);
		screen_put(w, y, x, at, line, g->pw - 1);
		return;
	}
	snprintf(line, sizeof line, "%c%s %c%s", letter[0], v[0], letter[1], v[1]);
	screen_put(w, y, x, at, line, g->pw - 1);
	snprintf(line, sizeof line, "%c%s %c%s", letter[2], v[2], letter[3], v[3]);
	screen_put(w, y + 1, x, at, line, g->pw - 1);
}

/* "layer 1 head 2:  prev 0.368  first 0.527  diag 0.524  induction —" */
static void
selected_line(const Tui *t, char *buf, size_t size)
{
	const HeadRow *hr = &t->model_rows[t->model_sel];
	char word[16], v[HS_COUNT][16];

	if (session_layer_word(t->s, hr->layer, word, sizeof word) != 0)
		snprintf(word, sizeof word, "%d", hr->layer);
	for (int k = 0; k < HS_COUNT; k++)
		textfmt_score(v[k], &hr->sc.s[k], 3, t->utf8);
	snprintf(buf, size, _("layer %s head %d:  prev %s  first %s  diag %s  induction %s"), word,
	         hr->head, v[HS_PREV], v[HS_FIRST], v[HS_DIAG], v[HS_INDUCTION]);
}

void
tui_draw_model(Tui *t)
{
	ModelGeo g;
	char buf[256];

	if (t->w_model != NULL && (getmaxy(t->w_model) != LINES || getmaxx(t->w_model) != COLS)) {
		delwin(t->w_model);
		t->w_model = NULL;
	}
	if (t->w_model == NULL && (t->w_model = newwin(LINES, COLS, 0, 0)) == NULL)
		return;
	WINDOW *w = t->w_model;
	werase(w);
	if (t->lens_open) {
		tui_draw_lens(t, w);
		wnoutrefresh(w);
		return;
	}
	if (t->model_n == 0) {
		wnoutrefresh(w);
		return;
	}
	model_geo(t, &g);
	model_scroll(t, &g);

	/* the title: what is shown, which layers, the order */
	const int nl = session_layers(t->s);
	if (t->model_sort < 0) {
		const int last = t->model_top + g.vis_rows < g.grows ? t->model_top + g.vis_rows : g.grows;
		snprintf(buf, sizeof buf, _("every head at a glance: layers %d-%d of %d, a thumbnail of each head's weights"),
		         t->model_top, last - 1, nl);
	} else {
		snprintf(buf, sizeof buf, _("every head at a glance, by %s score, highest first"),
		         _(headscore_names[t->model_sort]));
	}
	screen_put_fit(w, 0, 0, theme_attr(ROLE_STAGE) | A_BOLD, buf, COLS, t->utf8);

	for (int k = 0; k < t->model_n; k++) {
		int r, c;
		slot_of(t, &g, k, &r, &c);
		if (r < t->model_top || r >= t->model_top + g.vis_rows || c < t->model_left ||
		    c >= t->model_left + g.vis_cols)
			continue;
		const HeadRow *hr = &t->model_rows[k];
		const int y = g.y0 + (r - t->model_top) * g.ph, x = g.lw + (c - t->model_left) * g.pw;
		const int sel = k == t->model_sel;
		char cap[32], word[16];
		if (session_layer_word(t->s, hr->layer, word, sizeof word) != 0)
			snprintf(word, sizeof word, "%d", hr->layer);
		/* the caption: the head (sorted: its layer too), the selected one marked so it shows without colour */
		if (t->model_sort < 0)
			snprintf(cap, sizeof cap, "%sh%d%s", sel ? "[" : " ", hr->head, sel ? "]" : "");
		else
			snprintf(cap, sizeof cap, "%sL%sh%d%s", sel ? "[" : " ", word, hr->head, sel ? "]" : "");
		screen_put(w, y, x, theme_attr(sel ? ROLE_PANE_FOCUS : ROLE_PANE_TITLE) | (sel ? A_REVERSE : 0), cap,
		           g.pw - 1);
		if (t->model_sort < 0 && c == t->model_left) {
			char lab[24];
			snprintf(lab, sizeof lab, "L%s", word);
			screen_put(w, y + 1, 0, theme_attr(hr->layer == t->model_rows[t->model_sel].layer ? ROLE_LABEL_HI
			                                                                                    : ROLE_LABEL),
			           lab, g.lw - 1);
		}
		draw_thumb(t, w, y + 1, x, &g, hr);
		draw_scores(t, w, y + 1 + g.th, x, &g, hr, theme_attr(sel ? ROLE_LABEL_HI : ROLE_LABEL) | (sel ? A_BOLD : 0));
	}

	/* the selected head's scores in full, and the keys */
	selected_line(t, buf, sizeof buf);
	screen_put_fit(w, LINES - 2, 0, theme_attr(ROLE_INFO), buf, COLS, t->utf8);
	wattrset(w, theme_attr(ROLE_KEYS));
	mvwhline(w, LINES - 1, 0, ' ', COLS);
	snprintf(buf, sizeof buf, "%s",
	         _(" arrows  Enter open  e explain  s sort  L lens  PgUp/PgDn  ? scores  Esc back"));
	screen_put_fit(w, LINES - 1, 0, theme_attr(ROLE_KEYS), buf, COLS, t->utf8);
	wattrset(w, A_NORMAL);
	wnoutrefresh(w);
}

/* Enter: the selected layer and head in the walk, at its softmax stage, its weights in focus. */
static void
model_enter(Tui *t)
{
	const HeadRow hr = t->model_rows[t->model_sel];
	Session *s = t->s;
	char *err = NULL;

	tui_model_close(t);
	if (hr.layer != s->layer && session_set_layer(s, hr.layer, &err) != 0)
		goto fail;
	if (s->stage != STAGE_SOFTMAX && session_goto_stage(s, STAGE_SOFTMAX, &err) != 0)
		goto fail;
	if (hr.head != s->head && session_set_head(s, hr.head, &err) != 0)
		goto fail;
	t->want_focus = (int)AM_WEIGHTS + 1;
	t->want_head = hr.head;
	return;
fail:
	tui_set_msg(t, 1, err != NULL ? err : _("out of memory"));
	free(err);
}

/* e: the selected head's four scores explained, with their numbers. */
static void
model_explain(Tui *t)
{
	const HeadRow *hr = &t->model_rows[t->model_sel];
	const Attn *a = session_walk_link(t->s, hr->layer);
	char word[16], label[32], title[64];
	StrBuf b = { 0 };

	if (a == NULL)
		return;
	if (session_layer_word(t->s, hr->layer, word, sizeof word) != 0)
		snprintf(word, sizeof word, "%d", hr->layer);
	snprintf(label, sizeof label, _("layer %s"), word);
	for (int k = 0; k < HS_COUNT; k++) {
		/* a model's induction score: from its run on random tokens repeated twice, with its numbers */
		const HeadScore *ind = k == HS_INDUCTION ? session_induction_score(t->s, hr->layer, hr->head) : NULL;
		char *e = ind != NULL ? headscore_explain_induction(ind, t->s->ind_half, hr->head, label, t->utf8)
		                      : headscore_explain(a, hr->head, (HeadScoreKind)k, label, t->utf8);
		strbuf_printf(&b, "%s%s", k > 0 ? "\n" : "", e != NULL ? e : "");
		free(e);
	}
	snprintf(title, sizeof title, _("the scores of layer %s, head %d"), word, hr->head);
	tui_popup(t, title, b.s != NULL && !b.oom ? b.s : "");
	free(b.s);
}

/* Move the selection by (dr, dc) slots: to the nearest head of the row reached. */
static void
model_move(Tui *t, int dr, int dc)
{
	ModelGeo g;
	int r, c;

	model_geo(t, &g);
	slot_of(t, &g, t->model_sel, &r, &c);
	if (dc != 0) {
		const int k = item_at(t, &g, r, c + dc);
		if (k >= 0)
			t->model_sel = k;
	} else {
		int nr = r + dr;
		if (nr < 0)
			nr = 0;
		if (nr >= g.grows)
			nr = g.grows - 1;
		for (int cc = c; cc >= 0; cc--) {
			const int k = item_at(t, &g, nr, cc);
			if (k >= 0) {
				t->model_sel = k;
				break;
			}
		}
	}
	t->redraw |= R_POPUP;
}

void
tui_model_key(Tui *t, int key)
{
	ModelGeo g;

	if (t->lens_open) {
		tui_lens_key(t, key);
		return;
	}
	if (t->model_n == 0) {
		tui_model_close(t);
		return;
	}
	model_geo(t, &g);
	switch (key) {
	case KEY_LEFT: case 'h': model_move(t, 0, -1); break;
	case KEY_RIGHT: case 'l': model_move(t, 0, 1); break;
	case KEY_UP: case 'k': model_move(t, -1, 0); break;
	case KEY_DOWN: case 'j': model_move(t, 1, 0); break;
	case KEY_PPAGE: model_move(t, -g.vis_rows, 0); break;
	case KEY_NPAGE: model_move(t, g.vis_rows, 0); break;
	case KEY_HOME: case 'g': t->model_sel = 0; t->redraw |= R_POPUP; break;
	case KEY_END: case 'G': t->model_sel = t->model_n - 1; t->redraw |= R_POPUP; break;
	case '\r': case '\n': case KEY_ENTER: model_enter(t); break;
	case 'e': model_explain(t); break;
	case 'L': tui_lens_open(t); break;
	case 's': {
		/* by layer and head, then by each score in turn */
		const int next = t->model_sort + 1 >= HS_COUNT ? -1 : t->model_sort + 1;
		tui_model_open(t, next);
		if (next >= 0)
			tui_msgf(t, 0, _("sorted by the %s score, highest first"), _(headscore_names[next]));
		else
			tui_set_msg(t, 0, _("by layer and head"));
		break;
	}
	case '?': {
		char *defs = headscore_definitions(t->utf8);
		tui_popup(t, _("the head scores"), defs != NULL ? defs : "");
		free(defs);
		break;
	}
	case ':': tui_key_main(t, key); break;
	case 27: case 'q': case 'v': tui_model_close(t); break;
	case 12: tui_key_main(t, key); break;
	default:
		if (key > 32 && key < 256)
			tui_msgf(t, 0, _("key %c does nothing in the model view; Esc returns"), key);
		break;
	}
}

/* A click selects a thumbnail; on the selected one (or a double click), it opens it. The wheel pages. */
void
tui_model_mouse(Tui *t, int y, int x, int click, int twice, int wheel)
{
	ModelGeo g;

	if (t->model_n == 0 || t->lens_open)
		return;
	model_geo(t, &g);
	if (wheel != 0) {
		model_move(t, wheel, 0);
		return;
	}
	if (!click || y < g.y0 || x < g.lw)
		return;
	const int r = t->model_top + (y - g.y0) / g.ph, c = t->model_left + (x - g.lw) / g.pw;
	if ((y - g.y0) / g.ph >= g.vis_rows || (x - g.lw) / g.pw >= g.vis_cols)
		return;
	const int k = item_at(t, &g, r, c);
	if (k < 0)
		return;
	if (twice || k == t->model_sel) {
		t->model_sel = k;
		model_enter(t);
		return;
	}
	t->model_sel = k;
	t->redraw |= R_POPUP;
}
