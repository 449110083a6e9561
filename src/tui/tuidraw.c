/*
 * tuidraw.c: what the view draws besides the panes (pane.c) and the key line
 * (tuikeys.c) — the narration built from the step, the layout and its
 * windows, the stage line, the narration, the status line, "terminal too
 * small", and tui_draw, which draws what changed once a loop turn.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curses.h>

#include "base/i18n.h"
#include "base/text.h"
#include "inspect/heatmap.h"
#include "inspect/labels.h"
#include "inspect/stats.h"
#include "out/textfmt.h"
#include "tui/layout.h"
#include "tui/lineedit.h"
#include "tui/theme.h"
#include "tui/tuistate.h"

/* ------------------------------------------------------------------ */
/* Narration                                                            */
/* ------------------------------------------------------------------ */

/* Append lesson text (escaped, newlines kept) to a growing heap string. */
static void
sb_add(char **sb, const char *s, int escape)
{
	char *e = escape ? screen_text(s) : NULL;
	const char *src = escape ? e : s;
	size_t old = *sb ? strlen(*sb) : 0, add = src ? strlen(src) : 0;
	char *n = realloc(*sb, old + add + 1);

	if (n != NULL) {
		memcpy(n + old, src ? src : "", add);
		n[old + add] = '\0';
		*sb = n;
	}
	free(e);
}

void
tui_build_narr(Tui *t)
{
	const Session *s = t->s;
	const Step *st = session_step(s);
	char *sb = NULL;
	const char *text = s->stage == st->stage ? session_screen_text(s, &st->text, !t->utf8) : "";

	if (text == NULL || *text == '\0')
		text = stage_blurb(s->stage, session_screen_lang(s, !t->utf8));
	/* An open question comes first: on a small screen the narration scrolls, the question must not. */
	const int open = st->has_quiz && s->stage == st->stage && s->quiz[s->step] == QUIZ_OPEN;
	/* the decode step or tile shown and what it holds (our own text, tokens escaped): first, after an open question */
	char *caption = textfmt_caption(s, t->utf8);
	/* a message too wide for the status line (a wrong answer's feedback) heads the narration of its place */
	const int place = (s->step + 1) * (STAGE_COUNT + 1) + (int)s->stage;
	if (t->note != NULL && t->note_place == 0)
		t->note_place = place;
	if (t->note != NULL && t->note_place != place) {
		free(t->note);
		t->note = NULL;
	}
	if (t->note != NULL) {
		sb_add(&sb, t->note, 0);
		sb_add(&sb, "\n\n", 0);
	}
	t->narr_must = 0;
	/* the lesson's own words after the learner changed the lesson: say they were written for it as it was */
	if (session_edited_note(s) != NULL && s->stage == st->stage && (st->has_quiz || *session_text(s, &st->text))) {
		sb_add(&sb, session_edited_note(s), 0);
		sb_add(&sb, "\n", 0);
	}
	/* a question a demo revealed to the class: its answer stays said, first */
	if (st->has_quiz && s->stage == st->stage && s->quiz[s->step] == QUIZ_REVEALED) {
		char *said = session_revealed_answer(s);
		if (said != NULL) {
			sb_add(&sb, said, 1);
			sb_add(&sb, "\n", 0);
		}
		free(said);
	}
	/*
	 * An answered question's "then" (the answer and why) first: on a small
	 * screen it is what the learner reads next, the text was read before.
	 */
	if (st->has_quiz && session_then(s) != NULL && *session_then(s) != '\0') {
		sb_add(&sb, session_then(s), 1);
		sb_add(&sb, "\n\n", 0);
	}
	if (!open && caption != NULL)
		sb_add(&sb, caption, 0);
	if (!open)
		sb_add(&sb, text ? text : "", 1);

	if (st->has_quiz && s->stage == st->stage) {
		const Quiz *q = &st->quiz;
		char buf[96];
		if (!open)
			sb_add(&sb, "\n\n", 0);
		/* TRANSLATORS: each starts with the word of the msgid "Quiz" (the narration colours such lines) */
		sb_add(&sb, s->quiz[s->step] == QUIZ_OPEN ? _("Quiz: ") : s->quiz[s->step] == QUIZ_RIGHT ? _("Quiz (right): ")
		            : s->quiz[s->step] == QUIZ_WRONG ? _("Quiz (wrong): ")
		            : s->quiz[s->step] == QUIZ_REVEALED ? _("Quiz (the class's): ") : _("Quiz (skipped): "), 0);
		sb_add(&sb, session_screen_text(s, &q->question, !t->utf8), 1);
		for (int i = 0; i < q->nchoices; i++) {
			snprintf(buf, sizeof buf, "\n  %d) ", i + 1);
			sb_add(&sb, buf, 0);
			sb_add(&sb, session_screen_text(s, &q->choices[i], !t->utf8), 1);
		}
		if (s->quiz[s->step] == QUIZ_OPEN) {
			if (tui_clean(t)) /* a frame for slides: the question and its choices, not the keys */
				buf[0] = '\0';
			else if (q->nchoices > 0 && q->nchoices <= 9)
				snprintf(buf, sizeof buf, _("\nPress 1-%d, or :answer N, :skip, :hint"), q->nchoices);
			else
				snprintf(buf, sizeof buf, "\n%s", _("Type :answer VALUE, :skip or :hint"));
			sb_add(&sb, buf, 0);
			t->narr_must = sb != NULL ? (int)strlen(sb) : 0;
			sb_add(&sb, "\n\n", 0);
			if (caption != NULL)
				sb_add(&sb, caption, 0);
			sb_add(&sb, text ? text : "", 1);
		}
	}
	/* what the step says without a question: after its text (with one, "then" came first) */
	if (!st->has_quiz && session_then(s) != NULL && *session_then(s) != '\0') {
		sb_add(&sb, "\n\n", 0);
		sb_add(&sb, session_then(s), 1);
	}
	free(caption);
	if (!t->utf8 && sb != NULL) {
		/* a terminal that cannot show UTF-8: "exp(−∞) = 0" reads "exp(-inf) = 0", not "exp(???) = 0" */
		char *a = text_ascii(sb);
		if (a != NULL) {
			free(sb);
			sb = a;
		}
	}
	free(t->narr);
	t->narr = sb ? sb : strdup("");
	if (t->narr == NULL || t->narr_must > (int)strlen(t->narr))
		t->narr_must = 0;
	t->narr_top = 0;
}

/* ------------------------------------------------------------------ */
/* Layout and windows                                                   */
/* ------------------------------------------------------------------ */

void
tui_free_windows(Tui *t)
{
	WINDOW **ws[] = { &t->w_stage, &t->w_narr, &t->w_keys, &t->w_status, &t->w_popup };

	for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
		if (*ws[i]) {
			delwin(*ws[i]);
			*ws[i] = NULL;
		}
	for (int i = 0; i < LAYOUT_MAX_PANES; i++)
		if (t->pane[i].win) {
			delwin(t->pane[i].win);
			t->pane[i].win = NULL;
		}
}

static WINDOW *
win_for(const LayoutRect *r)
{
	if (r->h <= 0 || r->w <= 0)
		return NULL;
	return newwin(r->h, r->w, r->y, r->x);
}

/* Count narration lines at width w. */
static int
narr_count(const Tui *t, int w)
{
	TextLine *lines = NULL;
	int n = text_wrap(t->narr ? t->narr : "", w, &lines);
	free(lines);
	return n < 1 ? 1 : n;
}

/* The formula's lines at width w (it wraps at its blanks), 1 without one. */
static int
formula_count(const Tui *t, int w)
{
	TextLine *lines = NULL;
	const char *f = i18n_msg(stage_formula(&t->s->attn->shape, t->s->stage, t->utf8));
	int n = f != NULL && *f ? text_wrap(f, w, &lines) : 1;
	free(lines);
	return n < 1 ? 1 : n;
}

/* Narration lines at width w that must be in view (an open question and its choices; 0 when none). */
static int
narr_must_count(const Tui *t, int w)
{
	TextLine *lines = NULL;
	char *head;
	int n;

	if (t->narr == NULL || t->narr_must <= 0 || (head = strndup(t->narr, (size_t)t->narr_must)) == NULL)
		return 0;
	n = text_wrap(head, w, &lines);
	free(lines);
	free(head);
	return n < 0 ? 0 : n;
}

/* The panes laid out with the narration: all of them, or (solo) only the focused one in the place of all. */
static void
tui_layout_panes(Tui *t, LayoutIn *in, Layout *lay, int solo)
{
	if (!solo) {
		layout_compute(in, lay);
		return;
	}
	/* the focused pane, and beside it the one line of a pane a question hides (it says how to answer) */
	LayoutIn one = *in;
	int idx[2] = { t->focus, -1 };
	one.npanes = t->npanes > 0 ? 1 : 0;
	/* of the panes a question hides, the one holding what it asks (others may hold equal numbers) */
	const int asked = session_hidden_matrix(t->s);
	for (int i = 0; i < t->npanes; i++)
		if (t->pane[i].hidden && i != t->focus && (idx[1] < 0 || (int)t->pane[i].which == asked))
			idx[1] = i;
	if (idx[1] >= 0)
		one.npanes = 2;
	for (int k = 0; k < one.npanes; k++) {
		one.want_w[k] = in->want_w[idx[k]];
		one.want_h[k] = in->want_h[idx[k]];
	}
	layout_compute(&one, lay);
	LayoutRect r[2] = { lay->pane[0], lay->pane[1] };
	memset(lay->pane, 0, sizeof lay->pane);
	lay->npanes = t->npanes;
	for (int k = 0; k < one.npanes; k++)
		lay->pane[idx[k]] = r[k];
}

/* Presenting, the most a cell grows: columns added to its width, lines between rows. */
#define PRESENT_MAX_PAD 40
#define PRESENT_MAX_RGAP 8

/*
 * The panes laid out with cells pad columns wider and rows rgap lines apart.
 * solo 0: all of them; 1: the focused one alone when the narration's must
 * lines (an open question) leave some pane short of its rows; 2: the focused
 * one alone. Returns 1 when every pane laid out shows whole (zoomed ones
 * take what they get).
 */
static int
tui_layout_try(Tui *t, LayoutIn *in, Layout *lay, int pad, int rgap, int solo)
{
	for (int i = 0; i < t->npanes; i++) {
		t->pane[i].pad = pad;
		t->pane[i].rgap = rgap;
		pane_want(&t->pane[i], &in->want_w[i], &in->want_h[i]);
	}
	t->solo = 0;
	if (solo == 2 && t->npanes > 1)
		t->solo = 1;
	tui_layout_panes(t, in, lay, t->solo);
	/*
	 * The narration took the room an open question needs: rather than crop
	 * every pane's rows, the panes give way, and the focused one (the
	 * result, else the pane Tab brings) has their room alone.
	 */
	if (solo == 1 && t->npanes > 1 && !lay->too_small) {
		for (int i = 0; i < t->npanes && !t->solo; i++)
			if (!t->pane[i].zoom && lay->pane[i].h < in->want_h[i])
				t->solo = 1;
		if (t->solo)
			tui_layout_panes(t, in, lay, 1);
	}
	if (lay->too_small)
		return 0;
	for (int i = 0; i < t->npanes; i++)
		if (!t->pane[i].zoom && (!t->solo || i == t->focus) &&
		    (lay->pane[i].w < in->want_w[i] || lay->pane[i].h < in->want_h[i]))
			return 0;
	return 1;
}

/*
 * The largest cells (pad, rgap) at which tui_layout_try(…, solo) shows every
 * pane whole, the narration keeping the lines it has with the smallest
 * cells (up to a third of the screen, at least 12: the cells grow into the
 * room the text does not need, so the step's words stay without PgDn).
 * Returns 0 with *pad, *rgap, or -1 when not even the smallest fit.
 */
static int
tui_present_search(Tui *t, LayoutIn *in, Layout *lay, int solo, int *best_pad, int *best_rgap)
{
	const int narr_most = LINES / 3 > 12 ? LINES / 3 : 12;
	int narr_floor = -1;
	long best = -1;

	for (int rgap = 0; rgap <= PRESENT_MAX_RGAP; rgap++) {
		int fit_any = 0;
		/* a cell at most about three times as wide as it is tall (a line is two columns high) */
		for (int pad = 0; pad <= PRESENT_MAX_PAD && pad <= 4 + 5 * rgap; pad++) {
			if (!tui_layout_try(t, in, lay, pad, rgap, solo))
				break;
			if (narr_floor < 0)
				narr_floor = lay->narr.h < narr_most ? lay->narr.h : narr_most;
			if (lay->narr.h < narr_floor)
				break;
			fit_any = 1;
			long area = 0; /* what the panes draw on: each its size, within its room */
			for (int i = 0; i < t->npanes; i++)
				if (lay->pane[i].w > 0)
					area += (long)(lay->pane[i].w < in->want_w[i] ? lay->pane[i].w : in->want_w[i]) *
					        (lay->pane[i].h < in->want_h[i] ? lay->pane[i].h : in->want_h[i]);
			if (area > best) {
				best = area;
				*best_pad = pad;
				*best_rgap = rgap;
			}
		}
		if (!fit_any)
			break;
	}
	return best < 0 ? -1 : 0;
}

/*
 * Presenting, cells grow to fill the screen: wider (pad), and rows further
 * apart (rgap; from 2, tall blocks) as far as every pane still shows whole;
 * of those, the largest. When no size shows every pane whole, the same with
 * the narration down to its formula and two lines; failing that, the layout
 * of the smallest cells if the focused pane is whole in it (the others as
 * the view shows them), else the focused pane (and a question's) alone, as
 * large as it fits: what the step is about is never cut.
 */
static void
tui_layout_present(Tui *t, LayoutIn *in, Layout *lay)
{
	int pad = 0, rgap = 0;

	if (tui_present_search(t, in, lay, 0, &pad, &rgap) == 0) {
		tui_layout_try(t, in, lay, pad, rgap, 0);
		return;
	}
	/* every pane whole beside the formula and two lines of text (PgDn for the rest) */
	LayoutIn brief = *in;
	const int narr_min = formula_count(t, COLS - 2) + 1 + 2;
	if (brief.narr_lines > narr_min)
		brief.narr_lines = narr_min;
	if (tui_present_search(t, &brief, lay, 0, &pad, &rgap) == 0) {
		*in = brief;
		tui_layout_try(t, in, lay, pad, rgap, 0);
		return;
	}
	tui_layout_try(t, in, lay, 0, 0, in->narr_need > 0 ? 1 : 0);
	const int f = t->focus;
	if (lay->too_small || t->npanes < 2 || f < 0 || f >= t->npanes || t->pane[f].zoom ||
	    (lay->pane[f].w >= in->want_w[f] && lay->pane[f].h >= in->want_h[f]))
		return;
	if (tui_present_search(t, in, lay, 2, &pad, &rgap) == 0)
		tui_layout_try(t, in, lay, pad, rgap, 2);
	else
		tui_layout_try(t, in, lay, 0, 0, in->narr_need > 0 ? 1 : 0);
}

/* Compute the layout for the current panes; recreate windows when it changed. */
void
tui_layout(Tui *t, int force)
{
	LayoutIn in;
	Layout lay;

	memset(&in, 0, sizeof in);
	in.cols = COLS;
	in.lines = LINES;
	in.present = t->opt.present;
	in.no_keys = tui_clean(t);
	in.npanes = t->npanes;
	/* The formula has a line of its own; presenting, a blank line too. */
	in.narr_lines = narr_count(t, COLS - 2) + (t->opt.present ? formula_count(t, COLS - 2) + 1 : 1);
	in.narr_need = narr_must_count(t, COLS - 2);
	if (in.narr_need > 0 && t->opt.present)
		in.narr_need += formula_count(t, COLS - 2); /* presenting, the formula's lines after its first, and a blank line */
	/*
	 * Presenting, a matrix too large to read as numbers from the back of a
	 * room (past HEAT_NUMBERS_SIDE a side: the exports' --numbers auto) is a
	 * heatmap, unless z chose otherwise for its pane.
	 */
	for (int i = 0; i < t->npanes; i++)
		if (!t->pane[i].zoom_set && !t->pane[i].bars && !t->pane[i].hidden)
			t->pane[i].zoom = t->opt.present && !heat_numbers_shown(HEAT_NUMBERS_AUTO, t->pane[i].rows, t->pane[i].cols)
			                          ? PANE_ZOOM_AUTO : 0;
	if (t->opt.present)
		tui_layout_present(t, &in, &lay);
	else
		tui_layout_try(t, &in, &lay, 0, 0, in.narr_need > 0 ? 1 : 0);

	if (!force && t->have_layout && memcmp(&lay, &t->lay, sizeof lay) == 0 && t->w_status != NULL)
		return;
	tui_free_windows(t);
	t->lay = lay;
	t->have_layout = 1;
	werase(stdscr);
	wnoutrefresh(stdscr);
	t->redraw |= R_ALL;
	if (lay.too_small)
		return;
	t->w_stage = win_for(&lay.stage);
	t->w_narr = win_for(&lay.narr);
	t->w_keys = win_for(&lay.keys);
	t->w_status = win_for(&lay.status);
	for (int i = 0; i < t->npanes; i++)
		t->pane[i].win = win_for(&lay.pane[i]);
	if (t->w_status)
		keypad(t->w_status, TRUE);
}

/* ------------------------------------------------------------------ */
/* Drawing                                                              */
/* ------------------------------------------------------------------ */

/* ", step 3 of 7, cache 3 rows" or ", tile (0, 1) of 3×3" after the stage's name, at a decode step or tile. */
static void
tui_stage_substep(const Tui *t, char *stage, size_t size)
{
	char *sub = textfmt_substep(t->s, t->utf8);
	const size_t len = strlen(stage);

	if (sub != NULL && len < size)
		/* TRANSLATORS: joins the decode step or tile to the stage line */
		snprintf(stage + len, size - len, _(", %s"), sub);
	free(sub);
}

static void
tui_draw_stage(Tui *t)
{
	const Session *s = t->s;
	WINDOW *w = t->w_stage;
	int W = getmaxx(w);
	char right[160], stage[160];
	attr_t base = theme_attr(ROLE_STAGE);

	werase(w);
	wbkgdset(w, ' ' | base);
	wattrset(w, base);
	wmove(w, 0, 0);
	for (int i = 0; i < W; i++)
		waddch(w, ' ');

	/* "TITLE  step k/N  stage: NAME  head h of H  quiz r/a": the title gives way first. */
	char step[32];
	/* TRANSLATORS: the stage line; keep the two blanks on each side */
	snprintf(step, sizeof step, _("  step %d/%d  "), s->step + 1, s->nwalk);
	if (s->lesson->encoder != NULL) {
		char *place = session_place(s, t->utf8);
		snprintf(stage, sizeof stage, _("%s  stage: %s"), place != NULL ? place : "", stage_name(s->stage));
		free(place);
	} else if (session_is_model(s)) {
		/* "layer 3/30 · head 5/9 (kv 1/3)": from 0, as `layer N` and `head N` count (and session_place) */
		const LayerParams *p = attn_params(s->attn);
		const int g = p->kv_heads > 0 ? p->kv_heads : s->attn->heads;
		snprintf(stage, sizeof stage, _("layer %d/%d %s head %d/%d (kv %d/%d)  stage: %s"), s->layer,
		         session_layers(s), t->utf8 ? "\u00b7" : "-", s->head, s->attn->heads,
		         s->head / (s->attn->heads / g), g, stage_name(s->stage));
	} else if (session_layers(s) > 1)
		snprintf(stage, sizeof stage, _("layer %d of %d  stage: %s"), s->layer, session_layers(s), stage_name(s->stage));
	else
		snprintf(stage, sizeof stage, _("stage: %s"), stage_name(s->stage));
	tui_stage_substep(t, stage, sizeof stage);
	char heads[40] = "", quiz[96] = "", params[40] = "";
	if (s->attn->heads > 1 && !session_is_model(s))
		snprintf(heads, sizeof heads, _("  head %d of %d"), s->head, s->attn->heads);
	if (s->quiz_asked > 0)
		snprintf(quiz, sizeof quiz, _("  quiz %d/%d"), s->quiz_right, s->quiz_asked);
	/* a demo's questions, answered by the class: their own count, not the learner's 0/N */
	if (s->quiz_class > 0) {
		const size_t len = strlen(quiz);
		/* TRANSLATORS: the stage line: how many questions a demo has put to the class and answered; keep the two blanks */
		snprintf(quiz + len, sizeof quiz - len, _("  class %d answered"), s->quiz_class);
	}
	/* The learned numbers of the layer, where they are used (not while a question may ask for them). */
	if ((stage_kinds[s->stage].flags & SF_PARAMS) && !session_quiz_pending(s))
		snprintf(params, sizeof params, _("  params %ld"), stats_param_count(attn_config(s->attn), attn_params(s->attn)));
	snprintf(right, sizeof right, "%s%s%s", heads, quiz, params);

	int need = text_width(step, -1) + text_width(stage, -1) + text_width(right, -1);
	int title_max = W - 2 - need;
	int x = 1;
	if (title_max >= 8) {
		/*
		 * A title that does not fit ends in an ellipsis, so it reads as cut
		 * rather than as a title that really ends in "may not lo"; the
		 * room left varies with the step and stage names.
		 */
		const char *raw = session_screen_text(s, &s->lesson->title, !t->utf8);
		/* lesson text: escaped, never a format; spelled in ASCII where UTF-8 cannot be shown */
		char *a = t->utf8 ? NULL : text_ascii(raw ? raw : "");
		char *e = text_escape(a ? a : raw ? raw : "", "");
		free(a);
		const char *title = e ? e : "";
		x += screen_put_fit(w, 0, x, base | A_BOLD, title, title_max, t->utf8);
		free(e);
	}
	x += screen_put(w, 0, x, base, step, W - x);
	x += screen_put(w, 0, x, theme_attr(ROLE_STAGE_NAME), stage, W - x);
	screen_put(w, 0, x, base, right, W - x);
	wbkgdset(w, ' ');
	wnoutrefresh(w);
}

static void
tui_draw_narr(Tui *t)
{
	WINDOW *w = t->w_narr;
	int H = getmaxy(w), W = getmaxx(w);
	TextLine *lines = NULL;
	int present = t->opt.present && H >= 5;
	int n, text_h = H - 2 - (present ? 1 : 0), text_y = present ? 3 : 1;
	const char *formula = i18n_msg(stage_formula(&t->s->attn->shape, t->s->stage, t->utf8));
	/*
	 * Presenting, the formula comes first, bold, with a blank line under it;
	 * else it is the last lines. Either way a formula wider than the window
	 * wraps at its blanks, never cut mid-symbol.
	 */
	TextLine *flines = NULL;
	int nf = formula && *formula ? text_wrap(formula, W - 2, &flines) : 0;
	if (nf > H - 3)
		nf = H - 3 > 1 ? H - 3 : 1;
	if (nf > 1) {
		text_h -= nf - 1;
		if (present)
			text_y += nf - 1;
	}
	t->narr_text_h = text_h;

	werase(w);
	wattrset(w, theme_attr(ROLE_RULE));
	wmove(w, 0, 0);
	if (t->utf8)
		whline_set(w, WACS_HLINE, W);
	else
		whline(w, '-', W);
	{
		/* Where in the block the numbers are: its map on the rule, the current sublayer in brackets. */
		char *map = session_stage_map(t->s, t->utf8);
		if (map != NULL && text_width(map, -1) + 4 < W) {
			screen_put(w, 0, 2, theme_attr(ROLE_RULE), " ", W);
			screen_put(w, 0, 3, theme_attr(ROLE_STAGE_NAME), map, W - 3);
			screen_put(w, 0, 3 + text_width(map, -1), theme_attr(ROLE_RULE), " ", W);
		}
		free(map);
	}
	n = text_wrap(t->narr ? t->narr : "", W - 2, &lines);
	if (t->narr_top > n - text_h)
		t->narr_top = n - text_h > 0 ? n - text_h : 0;
	if (n > text_h) {
		char more[48];
		snprintf(more, sizeof more, " %d-%d/%d PgUp/PgDn ", t->narr_top + 1,
		         t->narr_top + text_h < n ? t->narr_top + text_h : n, n);
		screen_put(w, 0, W - text_width(more, -1) - 1, theme_attr(ROLE_RULE), more, W);
	}
	for (int i = 0; i < text_h && t->narr_top + i < n; i++) {
		const TextLine *l = &lines[t->narr_top + i];
		const char *p = t->narr + l->off;
		attr_t at = theme_attr(ROLE_NARR);
		if (strncmp(p, _("Quiz"), strlen(_("Quiz"))) == 0 || (l->len > 2 && p[0] == ' ' && p[1] == ' ' && p[2] >= '1' && p[2] <= '9'))
			at = theme_attr(ROLE_QUIZ);
		wattrset(w, at);
		wmove(w, text_y + i, 1);
		screen_draw(w, p, l->len, W - 2, 0);
	}
	free(lines);
	for (int i = 0; i < nf; i++) {
		wattrset(w, theme_attr(ROLE_FORMULA) | (present ? A_BOLD : 0));
		wmove(w, present ? 1 + i : H - nf + i, 1);
		screen_draw(w, formula + flines[i].off, flines[i].len, W - 2, 0);
	}
	free(flines);
	wattrset(w, A_NORMAL);
	wnoutrefresh(w);
}

static void
tui_draw_status(Tui *t)
{
	WINDOW *w = t->w_status;
	int W = getmaxx(w);

	werase(w);
	if (tui_clean(t)) { /* --render --clean: a frame for slides says nothing of keys or commands */
		wnoutrefresh(w);
		return;
	}
	if (t->mode == TUI_CMD && t->le) {
		LineView v;
		lineedit_view(t->le, &v);
		int pw = text_width(v.prompt ? v.prompt : "", -1);
		int skip = pw + v.cursor_col - (W - 2);
		if (skip < 0)
			skip = 0;
		wattrset(w, theme_attr(ROLE_CMDLINE));
		wmove(w, 0, 0);
		int used = 0;
		if (skip < pw)
			used = screen_draw(w, v.prompt, -1, W - 1, skip);
		int tskip = skip > pw ? skip - pw : 0;
		char *e = text_escape(v.text ? v.text : "", "");
		screen_draw(w, e ? e : "", -1, W - 1 - used, tskip);
		free(e);
		wattrset(w, A_NORMAL);
		wmove(w, 0, pw + v.cursor_col - skip);
		wnoutrefresh(w);
		return;
	}
	/* At the right: the demo's place, or :play. */
	char right[96] = "";
	if (t->demo != NULL) {
		/* TRANSLATORS: the demo's state; the words before the colon are shown alone where room is short */
		const char *state = t->demo_at_quiz && session_quiz_pending(t->s) ? _("  question: space reveals")
		                  : t->demo_at_pause ? _("  paused: space goes on")
		                  : t->demo_pos >= t->demo->n ? _("  end: p back, q leaves")
		                  : t->demo_paused ? _("  paused: space plays, n/p step") : "";
		/* k/N counts the script's entries; the line is where the last one ran in the file */
		const int lineno = t->demo_pos > 0 ? t->demo->line[t->demo_pos - 1].lineno : 0;
		snprintf(right, sizeof right, _("demo %d/%d, line %d%s "), t->demo_pos, t->demo->n, lineno, state);
		/* at 80 columns, or beside a long message, the indicator stays, shorter: the state's first word */
		if (text_width(right, -1) > W / 2 ||
		    (t->msg != NULL && text_width(t->msg, -1) + text_width(right, -1) > W - 1)) {
			char shortstate[24] = "";
			/* a colon, or a full-width one (：) */
			const char *colon = strchr(state, ':'), *wide = strstr(state, "\uff1a");
			if (wide != NULL && (colon == NULL || wide < colon))
				colon = wide;
			if (colon != NULL && colon - state < (long)sizeof shortstate)
				snprintf(shortstate, sizeof shortstate, "%.*s", (int)(colon - state), state);
			snprintf(right, sizeof right, _("demo %d/%d%s "), t->demo_pos, t->demo->n, shortstate);
		}
	} else if (t->play_ms > 0) {
		snprintf(right, sizeof right, _("play %.3gs: any key stops "), (double)t->play_ms / 1000.0);
	}
	int rw = text_width(right, -1);
	if (rw > W / 2 && t->demo == NULL)
		rw = 0;
	else if (rw > 0)
		screen_put(w, 0, W - rw, theme_attr(ROLE_KEY), right, rw);
	int left = W - 1 - (rw > 0 ? rw + 1 : 0);
	if (t->msg) {
		/* A message wider than the line (a long path, the list of themes) ends in "…". */
		screen_put_fit(w, 0, 0, theme_attr(t->msg_error ? ROLE_ERROR : ROLE_INFO), t->msg, left, t->utf8);
	} else {
		int x = 0;
		const int at_end = t->s->step == t->s->nwalk - 1, open = at_end ? session_questions_open(t->s) : 0;
		const char *next = session_finished(t->s) ? session_next_lesson(t->s) : NULL;
		char offer[96];
		/* finished only with every question answered or skipped */
		if (next != NULL)
			snprintf(offer, sizeof offer, _("finished! next: :load %s   "), next);
		else if (open > 0)
			snprintf(offer, sizeof offer, _("last step; questions still open: %d   "), open);
		if (next != NULL || open > 0)
			x += screen_put(w, 0, 0, theme_attr(ROLE_INFO) | A_BOLD, offer, left);
		if (t->npanes > 0 && !t->pane[t->focus].hidden && t->pane[t->focus].rows > 0) {
			const Pane *p = &t->pane[t->focus];
			const Mat *m = pane_mat(t, p);
			int R, C;
			char num[16], line[160];
			pane_src(p, p->cur_r, p->cur_c, &R, &C);
			if (m && session_cell_state(t->s, pane_attn(t, p), p->which, R, C) == CELL_UNSEEN) {
				snprintf(line, sizeof line, _("%s[%d][%d]: not computed at this step (or not in its cache)"),
				         matrix_name(p->which), R, C);
				screen_put(w, 0, x, theme_attr(ROLE_LABEL), line, left - x);
			} else if (m) {
				labels_number(num, pane_at(t, p, m, R, C), t->utf8);
				if (matrix_per_head(p->which) && attn_params(pane_attn(t, p))->heads > 1)
					snprintf(line, sizeof line, _("%s%s[%d][%d] (head %d) = %s   Enter: where from?"),
					         p->variant ? _("variant ") : "", matrix_name(p->which), R, C, p->head, num);
				else
					snprintf(line, sizeof line, _("%s%s[%d][%d] = %s   Enter: where from?"),
					         p->variant ? _("variant ") : "", matrix_name(p->which), R, C, num);
				/* a cell the compared pane lacks (a prefix has fewer rows) is not compared: say so */
				const Mat *o = p->other >= 0 ? pane_mat(t, &t->pane[p->other]) : NULL;
				if (o != NULL && (R >= o->rows || C >= o->cols))
					snprintf(line, sizeof line,
					         p->variant ? _("%s%s[%d][%d] = %s   only in the variant: not compared")
					                    : _("%s%s[%d][%d] = %s   only in the lesson: not compared"),
					         p->variant ? _("variant ") : "", matrix_name(p->which), R, C, num);
				screen_put(w, 0, x, theme_attr(ROLE_LABEL), line, left - x);
			}
		}
	}
	wnoutrefresh(w);
}

static void
tui_draw_small(Tui *t)
{
	char size[64];
	const char *lines[3];

	(void)t;
	werase(stdscr);
	snprintf(size, sizeof size, _("%dx%d, need %dx%d"), COLS, LINES, LAYOUT_MIN_COLS, LAYOUT_MIN_LINES);
	lines[0] = _("terminal too small");
	lines[1] = size;
	lines[2] = _("q quits");
	int y = (LINES - 3) / 2;
	if (y < 0)
		y = 0;
	for (int i = 0; i < 3 && y + i < LINES; i++) {
		int x = (COLS - (int)strlen(lines[i])) / 2;
		screen_put(stdscr, y + i, x > 0 ? x : 0, theme_attr(i == 0 ? ROLE_NOTICE : ROLE_LABEL), lines[i], COLS);
	}
	wnoutrefresh(stdscr);
}

/* Draw what changed, then update the screen once. */
void
tui_draw(Tui *t)
{
	if (t->redraw & R_LAYOUT)
		tui_layout(t, 1);
	if (t->lay.too_small) {
		if (t->redraw)
			tui_draw_small(t);
		t->redraw = 0;
		curs_set(0);
		doupdate();
		return;
	}
	if (t->model_open) {
		/* the model view lies over the main view; the status line over its key line, for a message or a command */
		if (t->redraw)
			tui_draw_model(t);
		if (t->msg == NULL && t->mode != TUI_CMD)
			t->redraw &= ~(unsigned)R_STATUS;
	} else {
		if (t->redraw & R_STAGE)
			tui_draw_stage(t);
		if (t->redraw & R_PANES)
			tui_draw_panes(t);
		if (t->redraw & R_NARR)
			tui_draw_narr(t);
		if (t->redraw & R_KEYS)
			tui_draw_keys(t);
	}
	if (t->mode == TUI_POPUP && t->redraw)
		tui_draw_popup(t);
	if (t->mode == TUI_MENU && t->redraw)
		tui_draw_menu(t);
	if (t->redraw & R_STATUS || t->mode == TUI_CMD)
		tui_draw_status(t);
	t->redraw = 0;
	curs_set(t->mode == TUI_CMD ? 1 : 0);
	doupdate();
}
