/*
 * tuimouse.c: the mouse in the full-screen view. A click on a cell puts the
 * cursor there (its operands light up as for the keys); a double click, or
 * a click on the cell already under the cursor, explains it; a click on a
 * pane focuses it; the wheel scrolls the narration or the pane under it; a
 * click on the key line runs that entry of the key table. Everything a
 * click does goes through the key table (tui_key_main) or the view's own
 * state, never the model. --no-mouse leaves the mouse to the terminal.
 */
#include <curses.h>

#include "base/i18n.h"
#include "tui/tuistate.h"

/* The wheel: buttons 4 and 5 (ncurses 6 has BUTTON5; version 1 reports wheel-down as button 2 moving). */
#if NCURSES_MOUSE_VERSION > 1
#define WHEEL_UP BUTTON4_PRESSED
#define WHEEL_DOWN BUTTON5_PRESSED
#else
#define WHEEL_UP BUTTON4_PRESSED
#define WHEEL_DOWN (BUTTON2_PRESSED | REPORT_MOUSE_POSITION)
#endif

/* How many lines a notch of the wheel scrolls the narration. */
#define WHEEL_LINES 3

void
tui_mouse_start(Tui *t)
{
	if (t->opt.no_mouse)
		return;
	mousemask(BUTTON1_CLICKED | BUTTON1_DOUBLE_CLICKED | WHEEL_UP | WHEEL_DOWN, NULL);
	/* a double click within this many milliseconds; a single click waits as long to be sure */
	mouseinterval(200);
}

/* The window's coordinates of a screen position: 1 when (y, x) is inside w. */
static int
in_win(WINDOW *w, int y, int x, int *wy, int *wx)
{
	if (w == NULL || !wenclose(w, y, x))
		return 0;
	*wy = y - getbegy(w);
	*wx = x - getbegx(w);
	return 1;
}

/* The wheel over a pane: its rows scroll by one, the cursor along (the view keeps the cursor in sight). */
static void
wheel_pane(Tui *t, Pane *p, int dir)
{
	if (p->hidden || p->rows == 0)
		return;
	int r = p->cur_r + dir;
	if (r < 0 || r >= p->rows)
		return;
	p->cur_r = r;
	p->top += dir;
	if (p->top < 0)
		p->top = 0;
	/* the panes of its shape scroll with it: the focused one leads them */
	Pane *f = &t->pane[t->focus];
	if (f != p && pane_same_shape(f, p)) {
		f->cur_r = p->cur_r;
		f->top = p->top;
	}
	t->redraw |= R_PANES | R_STATUS;
}

/* A click or double click on pane i at (y, x) of its window. */
static void
click_pane(Tui *t, int i, int y, int x, int twice)
{
	Pane *p = &t->pane[i];
	int r, c;

	if (p->hidden) {
		/* the placeholder says how to answer; a click on it says it again */
		tui_answer_first(t);
		return;
	}
	const int was = t->focus == i;
	t->focus = i;
	t->redraw |= R_PANES | R_STATUS;
	if (!pane_cell_at(p, y, x, &r, &c))
		return;
	const int again = was && p->cur_r == r && p->cur_c == c;
	p->cur_r = r;
	p->cur_c = c;
	if (twice || again)
		tui_key_main(t, '\n'); /* Enter: where did this number come from? */
}

/* The main view. */
static void
mouse_main(Tui *t, const MEVENT *ev)
{
	const int wheel = ev->bstate & WHEEL_UP ? -1 : ev->bstate & WHEEL_DOWN ? 1 : 0;
	const int twice = (ev->bstate & BUTTON1_DOUBLE_CLICKED) != 0;
	int y, x;

	if (!wheel && !(ev->bstate & (BUTTON1_CLICKED | BUTTON1_DOUBLE_CLICKED)))
		return;
	for (int i = 0; i < t->npanes; i++) {
		if (!in_win(t->pane[i].win, ev->y, ev->x, &y, &x))
			continue;
		if (wheel)
			wheel_pane(t, &t->pane[i], wheel);
		else
			click_pane(t, i, y, x, twice);
		return;
	}
	if (in_win(t->w_narr, ev->y, ev->x, &y, &x)) {
		if (wheel) {
			t->narr_top += wheel * WHEEL_LINES;
			if (t->narr_top < 0)
				t->narr_top = 0;
			t->redraw |= R_NARR;
		}
		return;
	}
	if (!wheel && in_win(t->w_keys, ev->y, ev->x, &y, &x)) {
		const KeyEntry *e = tui_keyline_at(t, x);
		if (e != NULL)
			e->run(t, e->key[0], e->arg);
	}
}

void
tui_mouse(Tui *t)
{
	MEVENT ev;

	if (getmouse(&ev) != OK)
		return;
	switch (t->mode) {
	case TUI_MAIN:
		if (t->model_open)
			tui_model_mouse(t, ev.y, ev.x, (ev.bstate & (BUTTON1_CLICKED | BUTTON1_DOUBLE_CLICKED)) != 0,
			                (ev.bstate & BUTTON1_DOUBLE_CLICKED) != 0,
			                ev.bstate & WHEEL_UP ? -1 : ev.bstate & WHEEL_DOWN ? 1 : 0);
		else
			mouse_main(t, &ev);
		break;
	case TUI_POPUP:
		/* the wheel scrolls the pop-up, a click closes it (as a key does) */
		if (ev.bstate & (WHEEL_UP | WHEEL_DOWN)) {
			t->popup_top += ev.bstate & WHEEL_UP ? -WHEEL_LINES : WHEEL_LINES;
			if (t->popup_top < 0)
				t->popup_top = 0;
			t->redraw |= R_POPUP;
		} else if (ev.bstate & (BUTTON1_CLICKED | BUTTON1_DOUBLE_CLICKED)) {
			tui_popup_close(t);
		}
		break;
	case TUI_MENU:
		if (ev.bstate & (WHEEL_UP | WHEEL_DOWN))
			tui_menu_key(t, ev.bstate & WHEEL_UP ? KEY_UP : KEY_DOWN);
		else if (ev.bstate & (BUTTON1_CLICKED | BUTTON1_DOUBLE_CLICKED))
			tui_menu_click(t, ev.y, ev.x, (ev.bstate & BUTTON1_DOUBLE_CLICKED) != 0);
		break;
	case TUI_CMD:
		break; /* the line being typed keeps the keys */
	}
}
