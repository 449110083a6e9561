/*
 * tuikeys.c: the main view's keys — one table (tui_main_keys) gives each key
 * its action, its line in the `?` help and its place on the key line; the
 * actions themselves; the key line; the `?` text.
 *
 * An action changes the session only through session_* and the command
 * table (tui_run_line), and the view's own state (focus, cursors, scroll).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curses.h>

#include "base/i18n.h"
#include "base/strbuf.h"
#include "base/text.h"
#include "cmd/cmd.h"
#include "inspect/explain.h"
#include "tui/lineedit.h"
#include "tui/theme.h"
#include "tui/tuistate.h"

/* ------------------------------------------------------------------ */
/* Keys                                                                 */
/* ------------------------------------------------------------------ */

/* The entry of table for key, or NULL. */
const KeyEntry *
key_find(const KeyEntry *table, int key)
{
	for (const KeyEntry *e = table; e->run != NULL; e++)
		for (int i = 0; i < (int)(sizeof e->key / sizeof e->key[0]) && e->key[i] != 0; i++)
			if (e->key[i] == key)
				return e;
	return NULL;
}

/* A session call's error, if any, in the status line (error: as an error, not as information). */
static void
tui_report(Tui *t, int rc, char *err, int error)
{
	if (rc != 0)
		tui_set_msg(t, error, err ? err : _("cannot move"));
	free(err);
}

/* q: the view asks; the command table changes the session. */
static int
key_quit(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	tui_run_line(t, "quit");
	return 1;
}

/* [, ]: the layer before (arg -1) or after this one, round the layers (a lesson with layers). */
static int
key_layer(Tui *t, int key, int arg)
{
	char *err = NULL;
	const int n = session_layers(t->s), k = t->s->layer + arg;

	(void)key;
	if (n <= 1) {
		tui_set_msg(t, 0, _("this lesson has one layer"));
		return 1;
	}
	if (session_set_layer(t->s, k < 0 ? n - 1 : k >= n ? 0 : k, &err) != 0) {
		tui_set_msg(t, 1, err);
		free(err);
	}
	return 1;
}

/* n, p: the next (arg 1) or the previous step. */
static int
key_step(Tui *t, int key, int arg)
{
	char *err = NULL, *said = NULL;
	/* n at an open question asks once, then counts it as skipped (session_next_asking) */
	int rc = arg > 0 ? session_next_asking(t->s, &said, &err) : session_prev(t->s, &err);

	(void)key;
	if (said != NULL && rc >= 0)
		tui_set_msg(t, 0, said);
	free(said);
	tui_report(t, rc < 0 ? rc : 0, err, 0);
	return 1;
}

/* g, G: the first (arg 0) or the last step. */
static int
key_ends(Tui *t, int key, int arg)
{
	char *err = NULL;
	int rc = session_goto_step(t->s, arg ? t->s->nwalk - 1 : 0, &err);

	(void)key;
	tui_report(t, rc, err, 0);
	return 1;
}

/* H, L: the previous (arg -1) or next head, round the heads. */
static int
key_head(Tui *t, int key, int arg)
{
	char *err = NULL;
	int h = t->s->head + arg, n = t->s->attn->heads, rc;

	(void)key;
	if (n <= 1) {
		tui_set_msg(t, 0, _("this lesson has one head"));
		return 1;
	}
	if (h < 0)
		h = n - 1;
	if (h >= n)
		h = 0;
	rc = session_set_head(t->s, h, &err);
	tui_report(t, rc, err, 1);
	return 1;
}

/* Enter: where the cell under the cursor came from, in a pop-up. */
static int
key_explain(Tui *t, int key, int arg)
{
	char *err = NULL, title[64];

	(void)key;
	(void)arg;
	if (t->npanes == 0)
		return 1;
	Pane *p = &t->pane[t->focus];
	if (p->hidden) {
		tui_answer_first(t);
		return 1;
	}
	if (p->rows == 0 || p->cols == 0)
		return 1;
	int R, C;
	pane_src(p, p->cur_r, p->cur_c, &R, &C);
	char *text = explain_cell(pane_attn(t, p), p->which, p->head, R, C, t->utf8, &err);
	if (text == NULL) {
		tui_set_msg(t, 1, err ? err : _("nothing to explain"));
		free(err);
		return 1;
	}
	if (matrix_per_head(p->which) && t->s->attn->heads > 1)
		snprintf(title, sizeof title, _("%s[%d][%d] head %d"), matrix_name(p->which), R, C, p->head);
	else
		snprintf(title, sizeof title, "%s[%d][%d]", matrix_name(p->which), R, C);
	tui_popup(t, title, text);
	free(text);
	return 1;
}

/* The arrows and h j k l: arg 0 left, 1 right, 2 up, 3 down (zoomed out: by one block). */
static int
key_move(Tui *t, int key, int arg)
{
	static const int step_r[4] = { 0, 0, -1, 1 }, step_c[4] = { -1, 1, 0, 0 };
	int dr = step_r[arg], dc = step_c[arg];

	(void)key;
	if (t->npanes == 0)
		return 1;
	Pane *p = &t->pane[t->focus];
	if (p->rows == 0 || p->hidden)
		return 1;
	if (p->zoom) {
		const int f = pane_zoom_factor(p);
		dr *= f;
		dc *= f;
	}
	p->cur_r += dr;
	p->cur_c += dc;
	if (p->cur_r < 0) p->cur_r = 0;
	if (p->cur_c < 0) p->cur_c = 0;
	if (p->cur_r >= p->rows) p->cur_r = p->rows - 1;
	if (p->cur_c >= p->cols) p->cur_c = p->cols - 1;
	t->redraw |= R_PANES | R_STATUS;
	return 1;
}

/* Tab, Shift-Tab: the next (arg 1) or previous pane that is not hidden. */
static int
key_pane(Tui *t, int key, int arg)
{
	(void)key;
	if (t->npanes == 0)
		return 1;
	for (int i = 0; i < t->npanes; i++) {
		t->focus = (t->focus + arg + t->npanes) % t->npanes;
		if (!t->pane[t->focus].hidden)
			break;
	}
	if (t->solo) {
		/* the panes gave way to the narration: Tab brings the next one into the room */
		tui_layout(t, 0);
		tui_msgf(t, 0, _("pane %d of %d (Tab: the next; the question below keeps its room)"), t->focus + 1, t->npanes);
	}
	t->redraw |= R_PANES | R_STATUS;
	return 1;
}

/* z: the focused pane zoomed out to a heatmap, or back. */
static int
key_zoom(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	if (t->npanes > 0) {
		t->pane[t->focus].zoom = !t->pane[t->focus].zoom;
		t->pane[t->focus].zoom_set = 1;
		tui_layout(t, 0);
		t->redraw |= R_PANES;
	}
	return 1;
}

/* PgDn, PgUp: the narration by a page (its text lines less one, kept for context) in arg's direction. */
static int
key_scroll(Tui *t, int key, int arg)
{
	const int H = t->w_narr != NULL ? getmaxy(t->w_narr) : 5;
	const int text_h = t->narr_text_h > 0 ? t->narr_text_h : H - 2 - (t->opt.present && H >= 5 ? 1 : 0);
	const int page = text_h > 2 ? text_h - 1 : 1;

	(void)key;
	arg = arg < 0 ? -page : page;
	t->narr_top = t->narr_top + arg > 0 ? t->narr_top + arg : 0;
	t->redraw |= R_NARR;
	return 1;
}

static int key_command(Tui *t, int key, int arg);

/*
 * 1-9: a choice of the open question, as :answer N. At a question that asks
 * for a number, a digit (or - or .) starts the answer: the command line
 * opens with ":answer " and the key, to finish with Enter.
 */
static int
key_answer(Tui *t, int key, int arg)
{
	char line[32];

	(void)arg;
	if (!session_quiz_pending(t->s))
		return 0;
	if (session_step(t->s)->quiz.nchoices == 0) {
		char *ignored = NULL;
		if (t->le == NULL)
			return 0;
		key_command(t, ':', 0);
		snprintf(line, sizeof line, "answer %c", key);
		for (const char *c = line; *c != '\0'; c++)
			if (lineedit_feed(t->le, (unsigned char)*c, &ignored) != 0)
				break;
		free(ignored);
		return 1;
	}
	if (key < '1' || key > '9')
		return 0;
	snprintf(line, sizeof line, "answer %c", key);
	tui_run_line(t, line);
	return 1;
}

/* :, the command line. */
static int
key_command(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	if (t->le) {
		t->mode = TUI_CMD;
		lineedit_start(t->le, ":");
		free(t->msg);
		t->msg = NULL;
		t->redraw |= R_STATUS | R_PANES;
	}
	return 1;
}

static char *tui_help_text(void);

/* ?: the keys and the commands. */
static int
key_help(Tui *t, int key, int arg)
{
	char *h = tui_help_text();

	(void)key;
	(void)arg;
	tui_popup(t, _("attnviz: keys and commands"), h ? h : "");
	free(h);
	return 1;
}

/* Ctrl-L: the whole screen drawn again. */
static int
key_redraw(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	clearok(curscr, TRUE);
	t->redraw |= R_ALL;
	return 1;
}

/* m: the course, with the learner's progress; Enter opens a lesson (tuicourse.c). */
static int
key_menu(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	return tui_menu_open(t);
}

/* c: back to where the learner left off, as :continue. */
static int
key_continue(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	tui_run_line(t, "continue");
	return 1;
}

/* v: the model view, every layer and head at a glance (tuimodel.c). */
static int
key_model(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	/* the thumbnails are the weights: an open question about them keeps them hidden (as :heads does) */
	if (session_hidden_matrix(t->s) == AM_WEIGHTS) {
		tui_answer_first(t);
		return 1;
	}
	return tui_model_open(t, -1);
}

/* The keys of the main view, in the order `?` lists them. */
/* clang-format off */
static const KeyEntry tui_main_keys[] = {
	{ .key = { 'n', ' ', KEY_SRIGHT }, .keys = "n  space  Shift-Right", .does = N_("next step (in decode: the next token;\nin flash: the next tile)"),
	  .bar = 1, .bar_key = "n/spc", .bar_does = N_("next"), .run = key_step, .arg = 1 },
	{ .key = { 'p', KEY_BACKSPACE, 127, 8, KEY_SLEFT }, .keys = "p  Backspace  Shift-Left", .does = N_("previous step (token, tile)"),
	  .bar = 2, .bar_key = "p", .bar_does = N_("prev"), .run = key_step, .arg = -1 },
	{ .key = { 'g', KEY_HOME }, .keys = "g  G", .does = N_("first / last step"),
	  .bar = 12, .bar_key = "g/G", .bar_does = N_("first/last"), .run = key_ends, .arg = 0 },
	{ .key = { 'G', KEY_END }, .run = key_ends, .arg = 1 },
	{ .key = { KEY_LEFT, 'h' }, .keys = "arrows  h j k l", .does = N_("move the cell cursor"),
	  .bar = 3, .bar_key = "\u2190\u2191\u2193\u2192", .bar_ascii = "hjkl", .bar_does = N_("cell"), .run = key_move, .arg = 0 },
	{ .key = { KEY_RIGHT, 'l' }, .run = key_move, .arg = 1 },
	{ .key = { KEY_UP, 'k' }, .run = key_move, .arg = 2 },
	{ .key = { KEY_DOWN, 'j' }, .run = key_move, .arg = 3 },
	{ .key = { '\t' }, .keys = "Tab  Shift-Tab", .does = N_("next / previous pane"),
	  .bar = 5, .bar_key = "Tab", .bar_does = N_("pane"), .run = key_pane, .arg = 1 },
	{ .key = { KEY_BTAB }, .run = key_pane, .arg = -1 },
	{ .key = { '\r', '\n', KEY_ENTER }, .keys = "Enter", .does = N_("where did this number come from?"),
	  .bar = 4, .bar_key = "Enter", .bar_does = N_("explain"), .run = key_explain },
	{ .key = { 'H' }, .keys = "H  L", .does = N_("previous / next head"),
	  .bar = 6, .bar_key = "H/L", .bar_does = N_("head"), .when = KEY_HEADS, .run = key_head, .arg = -1 },
	{ .key = { 'L' }, .run = key_head, .arg = 1 },
	/* not listed in `?` */
	{ .key = { '[' }, .bar = 7, .bar_key = "[/]", .bar_does = N_("layer"), .when = KEY_LAYERS, .run = key_layer, .arg = -1 },
	{ .key = { ']' }, .run = key_layer, .arg = 1 },
	{ .key = { 'v' }, .keys = "v", .does = N_("the model view: every layer and head at a glance, with its\nscores; Enter opens one, e explains, s sorts, L the logit lens,\nEsc returns"),
	  .bar = 14, .bar_key = "v", .bar_does = N_("heads"), .when = KEY_HEADS, .run = key_model },
	{ .key = { 'z' }, .keys = "z", .does = N_("zoom the pane out to a heatmap"),
	  .bar = 11, .bar_key = "z", .bar_does = N_("zoom"), .run = key_zoom },
	{ .key = { KEY_PPAGE }, .keys = "PgUp  PgDn", .does = N_("scroll the narration"), .run = key_scroll, .arg = -3 },
	{ .key = { KEY_NPAGE }, .run = key_scroll, .arg = 3 },
	{ .key = { '1', '2', '3', '4', '5', '6', '7', '8', '9' }, .keys = "1-9", .does = N_("answer a multiple-choice quiz\n(a number asked for: digits start :answer)"),
	  .run = key_answer },
	{ .key = { '0', '-', '.' }, .run = key_answer },
	{ .key = { 'm' }, .keys = "m", .does = N_("the course: \u2713 finished, quiz scores, where you are;\nEnter opens a lesson"),
	  .bar = 13, .bar_key = "m", .bar_does = N_("course"), .run = key_menu },
	{ .key = { 'c' }, .keys = "c", .does = N_("continue where you left off last time"), .run = key_continue },
	{ .key = { ':' }, .keys = ":", .does = N_("command line: Tab completes,\nUp/Down history, Esc cancels"),
	  .bar = 8, .bar_key = ":", .bar_does = N_("command"), .run = key_command },
	{ .key = { '?' }, .keys = "?", .does = N_("this help (arrows scroll)"),
	  .bar = 9, .bar_key = "?", .bar_does = N_("help"), .run = key_help },
	{ .key = { 'q' }, .keys = "q", .does = N_("quit"), .bar = 10, .bar_key = "q", .bar_does = N_("quit"), .run = key_quit },
	{ .key = { 12 }, .run = key_redraw },
	{ .run = NULL }
};
/* clang-format on */

/* A key of the key line: "KEY what  ", when it fits; returns the next column. */
static int
key_item(WINDOW *w, int x, int W, const char *key, const char *what)
{
	int need = text_width(key, -1) + 1 + text_width(what, -1) + 2;

	if (x + need > W)
		return x;
	x += screen_put(w, 0, x, theme_attr(ROLE_KEY), key, W - x);
	x += screen_put(w, 0, x, theme_attr(ROLE_KEYS), " ", W - x);
	x += screen_put(w, 0, x, theme_attr(ROLE_KEYS), what, W - x);
	x += screen_put(w, 0, x, theme_attr(ROLE_KEYS), "  ", W - x);
	return x;
}

/*
 * The key line: tui_main_keys by their place on it, as many as fit. With w, it
 * is drawn; either way, the entry whose columns hold column at (-1: none)
 * is returned, so a click finds what the line shows.
 */
static const KeyEntry *
keyline_walk(const Tui *t, WINDOW *w, int W, int at)
{
	int x = 1;

	for (int place = 1;; place++) {
		const KeyEntry *e = tui_main_keys;
		while (e->run != NULL && e->bar != place)
			e++;
		if (e->run == NULL)
			break;
		if ((e->when == KEY_HEADS && t->s->attn->heads <= 1) || (e->when == KEY_LAYERS && session_layers(t->s) <= 1))
			continue;
		const char *key = t->utf8 || e->bar_ascii == NULL ? e->bar_key : e->bar_ascii, *does = _(e->bar_does);
		int need = text_width(key, -1) + 1 + text_width(does, -1) + 2;
		if (x + need > W)
			continue;
		if (at >= x && at < x + need - 2)
			return e;
		if (w != NULL)
			key_item(w, x, W, key, does);
		x += need;
	}
	return NULL;
}

void
tui_draw_keys(Tui *t)
{
	WINDOW *w = t->w_keys;

	if (w == NULL)
		return;
	werase(w);
	wbkgdset(w, ' ' | theme_attr(ROLE_KEYS));
	werase(w);
	keyline_walk(t, w, getmaxx(w), -1);
	wbkgdset(w, ' ');
	wnoutrefresh(w);
}

/* The entry of the key line at column x of it, or NULL. */
const KeyEntry *
tui_keyline_at(const Tui *t, int x)
{
	return t->w_keys != NULL ? keyline_walk(t, NULL, getmaxx(t->w_keys), x) : NULL;
}

/* A `?` line: "  LEFT  RIGHT", RIGHT starting at column 2 + cols + 1 however wide LEFT's characters are. */
static void
help_row(StrBuf *b, const char *left, int cols, const char *right)
{
	int w = text_width(left, -1);

	strbuf_printf(b, "  %s%*s %s\n", left, w < cols ? cols - w : 0, "", right);
}

/* `?` lines for a key table: "  KEYS  DOES" ('\n' in DOES: its second line under the first). */
static void
help_keys(StrBuf *b, const KeyEntry *table)
{
	for (const KeyEntry *e = table; e->run != NULL; e++) {
		if (e->keys == NULL)
			continue;
		strbuf_printf(b, "  %-26s", e->keys);
		for (const char *d = _(e->does); *d != '\0'; d++) {
			if (*d == '\n')
				strbuf_printf(b, "\n  %-26s", "");
			else
				strbuf_add(b, d, 1);
		}
		strbuf_add(b, "\n", 1);
	}
}

static char *
tui_help_text(void)
{
	StrBuf b = { 0 };

	strbuf_printf(&b, "%s\n", _("Keys"));
	help_keys(&b, tui_main_keys);
	strbuf_printf(&b, "\n%s\n", _("While a demo plays (--demo FILE, :source FILE)"));
	help_keys(&b, tui_demo_keys);
	static const char *const mouse[][2] = {
		{ N_("click a cell"), N_("the cursor goes there, its operands light up") },
		{ N_("double-click, click again"), N_("where did this number come from?") },
		{ N_("click a pane"), N_("it takes the focus") },
		{ N_("wheel"), N_("scrolls the narration or the pane under it") },
		{ N_("click the key line"), N_("runs that key") },
		{ N_("Shift-drag"), N_("selects text (the terminal's own selection)") },
	};
	strbuf_printf(&b, "\n%s\n", _("The mouse (unless --no-mouse)"));
	for (size_t i = 0; i < sizeof mouse / sizeof mouse[0]; i++)
		help_row(&b, _(mouse[i][0]), 26, _(mouse[i][1]));
	strbuf_printf(&b, "\n%s\n%s\n\n%s\n", _(":play [SECONDS] steps on by itself; any key stops it."),
	              _("--present or :present on: larger cells, bigger narration."),
	              _("Commands (after :, unique prefixes work)"));
	for (const CmdEntry *e = cmd_table; e->name != NULL; e++)
		strbuf_printf(&b, "  %-30s %s\n", e->usage, _(e->help));
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* A key in the main view (the mouse acts through here too); 1 when its entry took it. */
int
tui_key_main(Tui *t, int key)
{
	const KeyEntry *e = key_find(tui_main_keys, key);

	if (e != NULL && e->run(t, key, e->arg))
		return 1;
	if (key < 256 && key > 32)
		tui_msgf(t, 0, _("key %c does nothing here; ? shows the keys"), key);
	return 0;
}
