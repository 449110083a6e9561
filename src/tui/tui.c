/* tui.c: the ncurses visualizer — start, wait for a key, handle it, stop.
 *
 * The screen, top to bottom (layout.h computes the rectangles):
 *   stage line   title, step k/N, stage: NAME, head, quiz score
 *   panes        the current stage's matrices (operands, then the result)
 *   narration    the step's text wrapped by display width, then the formula
 *   key line     the main keys (hidden in presenter mode)
 *   status line  messages, the cursor cell's value, or the `:` command line
 *
 * Here: the loop (tui_run: tui_start, tui_wait, tui_key, tui_stop), what a
 * key goes to in each mode, the commands' answers (CmdOut) and the session's
 * changes brought to the view (tui_sync). Drawn elsewhere: the stage line,
 * the narration and the status line in tuidraw.c, the matrix panes in
 * pane.c, text and pop-ups in screen.c; the keys are one table in tuikeys.c
 * (tui_main_keys, and tui_demo_keys while a demo plays: tuidemo.c).
 *
 * The view never writes the model: it changes the session only through
 * session_* and cmd_run(), reads Session.dirty to know what to redraw, and
 * keeps its own state (focus, cursors, scroll: tuistate.h). Drawing happens once per
 * loop turn with wnoutrefresh()/doupdate(); signal handlers only set a flag.
 */
#include <langinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curses.h>

#include "app/demo.h"
#include "base/clock.h"
#include "base/i18n.h"
#include "base/paths.h"
#include "base/text.h"
#include "base/ttyguard.h"
#include "cmd/cmd.h"
#include "out/record.h"
#include "out/textfmt.h"
#include "tui/lineedit.h"
#include "tui/theme.h"
#include "tui/tuistate.h"

/* ------------------------------------------------------------------ */
/* State                                                                */
/* ------------------------------------------------------------------ */

static volatile sig_atomic_t tui_signal;
static volatile sig_atomic_t tui_rendering; /* a --render: every signal ends it */
static int tui_curses_on;

/* ------------------------------------------------------------------ */
/* Time, signals, leaving                                               */
/* ------------------------------------------------------------------ */

/* --render's virtual clock (ms), or -1: the monotonic clock. */
static long long tui_clock = -1;

int
tui_signalled(void)
{
	return tui_signal;
}

void
tui_clock_set(long long ms)
{
	tui_clock = ms;
}

long long
tui_now_ms(void)
{
	if (tui_clock >= 0)
		return tui_clock;
	return (long long)clock_ms();
}

/* The `:` line's completion (lineedit.h): the command table's. */
static char **
tui_complete(void *ctx, const char *line, size_t start, const char *word, int *files)
{
	return cmd_complete_line(ctx, line, start, word, files);
}

/* A computation in the view (:load, an edit) slower than ATTN_PROGRESS_MS says where it is on the status line. */
static void
tui_progress(void *ctx, const Attn *a, Stage st, int index, int count, double elapsed_ms)
{
	Tui *t = ctx;
	char buf[96];

	if (elapsed_ms < ATTN_PROGRESS_MS || t->w_status == NULL || t->lay.too_small)
		return;
	textfmt_progress(buf, sizeof buf, a, st, index, count, t->utf8);
	werase(t->w_status);
	wattrset(t->w_status, theme_attr(ROLE_INFO));
	mvwaddstr(t->w_status, 0, 0, buf);
	wattrset(t->w_status, A_NORMAL);
	wnoutrefresh(t->w_status);
	doupdate();
	t->redraw |= R_STATUS;
}

static void
tui_on_signal(int sig)
{
	/* Ctrl-C during a computation or training stops that work alone (ttyguard.h); TERM and HUP stop it and
	 * leave, and so does any signal while a --render runs */
	if (ttyguard_note_stop(sig) && sig == SIGINT && !tui_rendering)
		return;
	tui_signal = sig;
}

/* endwin() once, from any way out (atexit, signals, fatal errors, q). */
static void
tui_end(void)
{
	if (tui_curses_on) {
		tui_curses_on = 0;
		curs_set(1);
		endwin();
	}
}

/* ------------------------------------------------------------------ */
/* Commands: what the table says back (CmdOut)                        */
/* ------------------------------------------------------------------ */

static void
out_message(void *ctx, CmdMsg kind, const char *title, const char *text)
{
	Tui *t = ctx;

	if (t->replaying)
		return; /* p in a demo: the script replays quietly */
	if (kind == MSG_TEXT)
		tui_popup(t, title, text);
	else
		tui_set_msg(t, kind == MSG_ERROR, text);
}

/* The stage that shows a matrix: where it is the result, else the first that shows it. */
static int
stage_showing(const Session *s, AttnMatrix which)
{
	AttnMatrix ms[STAGE_MAX_PANES];
	int first = -1;

	for (int st = 0; st < STAGE_COUNT; st++) {
		if (!stage_present(&s->attn->shape, (Stage)st))
			continue;
		int k = attn_stage_matrices(s->attn, (Stage)st, ms);
		for (int i = 0; i < k; i++) {
			if (ms[i] != which)
				continue;
			if (i == k - 1)
				return st;
			if (first < 0)
				first = st;
		}
	}
	return first;
}

static void
out_show(void *ctx, AttnMatrix which, int head)
{
	Tui *t = ctx;
	Session *s = t->s;
	char *err = NULL;
	int st = stage_showing(s, which);

	if (st < 0) {
		tui_msgf(t, 1, _("%s is not shown in any stage of this lesson"), matrix_name(which));
		return;
	}
	/* The stage first: going to a stage may bring its step's head. */
	if ((Stage)st != s->stage && session_goto_stage(s, (Stage)st, &err) != 0) {
		tui_set_msg(t, 1, err);
		free(err);
		return;
	}
	if (head != s->head && session_set_head(s, head, &err) != 0) {
		tui_set_msg(t, 1, err);
		free(err);
		return;
	}
	t->want_focus = (int)which + 1;
	t->want_head = head;
	tui_msgf(t, 0, _("%s (stage %s)"), matrix_name(which), stage_name((Stage)st));
}

static void tui_present(Tui *t, int on);
static void tui_theme(Tui *t, const char *name);

/* Seconds for play (positive) and wait (0 too), at most DEMO_MAX_WAIT; -1 with a message otherwise. */
static double
tui_seconds(Tui *t, const char *cmd, const char *arg, int positive)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end != '\0' || !(v >= 0 && v <= DEMO_MAX_WAIT) || (positive && v <= 0)) {
		char *safe = text_escape(arg, "");
		tui_msgf(t, 1, positive ? _("%s: expected seconds above 0 up to %g, got \"%.60s\"")
		                        : _("%s: expected seconds from 0 up to %g, got \"%.60s\""),
		         cmd, DEMO_MAX_WAIT, safe ? safe : "");
		free(safe);
		return -1;
	}
	return v;
}

/* The front-end commands of the table (exec NULL): theme, present, play, source, pause, wait. */
static int
out_frontend(void *ctx, const char *name, int argc, char **argv)
{
	Tui *t = ctx;

	if (strcmp(name, "theme") == 0 && argc >= 2) {
		tui_theme(t, argv[1]);
		return 1;
	}
	if (strcmp(name, "present") == 0 && argc >= 2) {
		if (strcmp(argv[1], "on") != 0 && strcmp(argv[1], "off") != 0) {
			tui_set_msg(t, 1, _("usage: present on|off"));
			return 1;
		}
		tui_present(t, strcmp(argv[1], "on") == 0);
		return 1;
	}
	if (strcmp(name, "play") == 0) {
		double sec = argc >= 2 ? tui_seconds(t, "play", argv[1], 1) : 2.0;
		if (sec < 0 || t->replaying)
			return 1;
		t->play_ms = (long long)(sec * 1000 + 0.5);
		if (t->play_ms < 1)
			t->play_ms = 1;
		t->play_due = tui_now_ms() + t->play_ms;
		tui_msgf(t, 0, _("playing: the next step every %gs; any key stops"), sec);
		t->redraw |= R_STATUS;
		return 1;
	}
	if (strcmp(name, "source") == 0 && argc >= 2) {
		if (t->demo != NULL && t->demo_running)
			tui_demo_source(t, argv[1]); /* a demo's own `source`: the script plays next */
		else if (t->demo != NULL)
			tui_set_msg(t, 1, _("source: a demo is already playing (q leaves it)"));
		else
			tui_demo_start(t, argv[1]);
		return 1;
	}
	if (strcmp(name, "heads") == 0) {
		/* heads [sort SCORE]: the model view (the plain REPL prints the table instead) */
		int sort = -1;
		for (int k = 0; argc >= 3 && k < HS_COUNT; k++)
			if (strcmp(argv[2], headscore_words[k]) == 0)
				sort = k;
		if (!t->replaying)
			tui_model_open(t, sort);
		return 1;
	}
	if (strcmp(name, "pause") == 0 || strcmp(name, "wait") == 0) {
		/* In a script these are entries of their own (demo.c); typed here, there is nothing to wait for. */
		if (strcmp(name, "wait") == 0 && argc >= 2 && tui_seconds(t, "wait", argv[1], 0) < 0)
			return 1;
		tui_msgf(t, 0, _("%s works in demo scripts (source FILE)"), name);
		return 1;
	}
	return 0;
}

/* Run one command line; returns cmd_run's status (0, or -1 when it failed). */
int
tui_run_line(Tui *t, const char *line)
{
	CmdOut out;

	memset(&out, 0, sizeof out);
	out.ctx = t;
	out.message = out_message;
	out.show = out_show;
	out.frontend = out_frontend;
	out.color = 0;
	out.utf8 = t->utf8;
	out.interactive = 1;
	return cmd_run(t->s, line, &out);
}

/* ------------------------------------------------------------------ */
/* Themes, presenter mode                                               */
/* ------------------------------------------------------------------ */

static void
tui_theme(Tui *t, const char *name)
{
	const char *nc = getenv("NO_COLOR");
	char *err = NULL;

	/* A theme that does not load leaves the default in use (theme_init says why). */
	if (theme_init(name, nc != NULL && *nc != '\0', &err) != 0)
		tui_msgf(t, 1, _("using the default theme: %s"), err ? err : _("cannot load the theme"));
	else
		tui_msgf(t, 0, _("theme %s (%d colours)"), theme_name(), theme_colors());
	free(err);
	/* Pane widths depend on colour (glyphs without it). */
	tui_build_panes(t, 1, 0);
	t->redraw |= R_ALL;
}

static void
tui_present(Tui *t, int on)
{
	t->opt.present = on;
	tui_set_msg(t, 0, on ? _("presenter mode on") : _("presenter mode off"));
	tui_build_panes(t, 1, 0);
	t->redraw |= R_ALL;
}

/* ------------------------------------------------------------------ */
/* Session changes → view                                               */
/* ------------------------------------------------------------------ */

/* At a decode step or tile: each pane's cursor on its first new cell (the new row, the tile), so it scrolls into view. */
static void
tui_cursor_to_new(Tui *t)
{
	/* only a decode step or a tile has new cells: elsewhere this would look at every cell for nothing */
	if (t->s->dec_t < 0 && t->s->tile_q < 0)
		return;
	for (int i = 0; i < t->npanes; i++) {
		Pane *p = &t->pane[i];
		const Attn *a = pane_attn(t, p);
		int found = 0;
		if (p->hidden || pane_mat(t, p) == NULL)
			continue;
		/* the first row with a new cell, at its last one (a decode row's newest key, a tile's right edge) */
		for (int r = 0; r < p->rows && !found; r++)
			for (int c = 0; c < p->cols; c++) {
				int R, C;
				pane_src(p, r, c, &R, &C);
				const CellState cs = session_cell_state(t->s, a, p->which, R, C);
				if (cs == CELL_NEW || cs == CELL_AFTER) {
					p->cur_r = r;
					p->cur_c = c;
					found = 1;
				}
			}
	}
}

/* 1 when the place is still the step last arrived at (n/p inside its decode steps or tiles); notes the arrival. */
static int
tui_arrived(Tui *t)
{
	const int was = t->arrived, now = (t->s->step + 1) * (STAGE_COUNT + 1) + (int)t->s->stage;
	const int inside = t->s->dec_t >= 0 || t->s->tile_q >= 0;

	t->arrived = now;
	return inside && was == now;
}

static void
tui_sync(Tui *t)
{
	Session *s = t->s;
	unsigned d = s->dirty;

	if (d == 0 && !t->want_focus)
		return;
	s->dirty = 0;
	/* another language: the panes' titles, the stage, status and key lines are words too */
	if (d & (DIRTY_LESSON | DIRTY_VALUES | DIRTY_PLACE | DIRTY_QUIZ | DIRTY_LANG)) {
		int keep = !(d & DIRTY_LESSON);
		int place = (d & (DIRTY_LESSON | DIRTY_PLACE)) != 0;
		tui_build_panes(t, keep, place);
		if (place) {
			const Step *st = session_step(s);
			tui_cursor_to_new(t);
			if (!tui_arrived(t) && st->has_focus && st->stage == s->stage)
				tui_focus_matrix(t, matrix_find(st->focus.matrix), st->focus.head, st->focus.row,
				                 st->focus.col);
		} else if (d & DIRTY_QUIZ) {
			/* The answer is out: look at the pane that was hidden (the stage's result), at the step's cell. */
			const Step *st = session_step(s);
			for (int i = t->npanes - 1; i >= 0; i--)
				if (!t->pane[i].variant && !t->pane[i].hidden) {
					t->focus = i;
					break;
				}
			if (st->has_focus && st->stage == s->stage)
				tui_focus_matrix(t, matrix_find(st->focus.matrix), st->focus.head, st->focus.row,
				                 st->focus.col);
		}
		t->redraw |= R_PANES | R_STAGE | R_STATUS | R_KEYS;
	}
	if (d & (DIRTY_LESSON | DIRTY_PLACE | DIRTY_LANG | DIRTY_VALUES | DIRTY_QUIZ)) {
		tui_build_narr(t);
		t->redraw |= R_NARR | R_STAGE;
	}
	if (d & DIRTY_STATUS)
		t->redraw |= R_STATUS;
	if ((d & DIRTY_VALUES) && !(d & DIRTY_LESSON) && s->prev_attn) {
		t->edit_glow = 1;
		t->edit_glow_until = tui_now_ms() + EDIT_GLOW_MS;
	}
	if (t->want_focus) {
		tui_focus_matrix(t, t->want_focus - 1, t->want_head, -1, -1);
		t->want_focus = 0;
		t->redraw |= R_PANES | R_STATUS;
	}
	if (t->model_open && (d & (DIRTY_LESSON | DIRTY_VALUES | DIRTY_LANG)))
		tui_model_refresh(t);
	if (d & (DIRTY_LESSON | DIRTY_PLACE | DIRTY_QUIZ))
		tui_track(t);
	if (d)
		tui_layout(t, 0);
}

/* ------------------------------------------------------------------ */
/* A key in each mode                                                 */
/* ------------------------------------------------------------------ */

static void
tui_key_popup(Tui *t, int key)
{
	if (tui_list_key(key == ' ' ? KEY_NPAGE : key, &t->popup_top, LINES - 6, t->popup_lines)) {
		t->redraw |= R_POPUP;
		return;
	}
	tui_popup_close(t);
	/*
	 * ':' closes the pop-up and opens the command line at once. It used
	 * to be swallowed, so typing ":answer 21" right after reading a
	 * :hint ran "answer 21" as keys: n and space stepped twice and 1
	 * answered another step's question.
	 */
	if (key == ':')
		tui_key_main(t, key);
}

static void
tui_key_cmd(Tui *t, int key)
{
	char *line = NULL;
	int r = lineedit_feed(t->le, key, &line);

	t->redraw |= R_STATUS;
	if (r == 0)
		return;
	t->mode = TUI_MAIN;
	t->redraw |= R_PANES;
	if (r == 1 && line)
		tui_run_line(t, line);
	free(line);
}

/* ------------------------------------------------------------------ */
/* Start and the loop                                                   */
/* ------------------------------------------------------------------ */

/* $XDG_STATE_HOME/attnviz/history (default ~/.local/state/attnviz/history); the directory is created. */
static char *
tui_history_path(void)
{
	char *path = paths_state_file("history");

	if (path != NULL && paths_make_parent(path) != 0) {
		free(path);
		return NULL;
	}
	return path;
}

static int
locale_utf8(void)
{
	const char *cs = nl_langinfo(CODESET);
	return cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
}

/* --render's terminal: a type every player knows, of the size asked; what curses writes goes nowhere. */
#define TUI_RENDER_TERM "xterm-256color"

static int
tui_render_term(Tui *t, FILE **out, FILE **in)
{
	char n[16];

	tui_clock_set(0); /* the demo's time starts here (tui_demo_start reads it) */
	/* ncurses takes the size from LINES and COLUMNS when the output is no terminal */
	snprintf(n, sizeof n, "%d", t->opt.render->height);
	setenv("LINES", n, 1);
	snprintf(n, sizeof n, "%d", t->opt.render->width);
	setenv("COLUMNS", n, 1);
	t->render_out = fopen("/dev/null", "w");
	t->render_in = fopen("/dev/null", "r");
	if (t->render_out == NULL || t->render_in == NULL) {
		fprintf(stderr, "attnviz: --render: cannot open /dev/null\n");
		t->rc = 1;
		return -1;
	}
	*out = t->render_out;
	*in = t->render_in;
	return 0;
}

/* Set up: the line editor, the signals, --record, curses and the theme. 0, or -1 (t->rc 1) when there is no terminal. */
static int
tui_start(Tui *t, Session *s, const TuiOptions *opt)
{
	static int atexit_done;
	struct sigaction sa;
	char *hist;

	memset(t, 0, sizeof *t);
	t->s = s;
	if (opt)
		t->opt = *opt;
	t->utf8 = locale_utf8();
	const char *kt = getenv("ATTNVIZ_KEY_TIMES");
	if (kt != NULL && *kt != '\0')
		t->key_times = fopen(kt, "a"); /* a benchmark's file: without it, keys are simply not timed */

	/* The line editor first: readline must not touch the terminal set-up ncurses owns. */
	hist = tui_history_path();
	t->le = lineedit_new(hist, tui_complete, s);
	free(hist);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = tui_on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: a blocked read returns so the loop sees the flag */
	sigaction(SIGINT, &sa, &t->old_int);
	sigaction(SIGTERM, &sa, &t->old_term);
	sigaction(SIGHUP, &sa, &t->old_hup);
	sigaction(SIGQUIT, &sa, &t->old_quit); /* Ctrl-\ leaves like Ctrl-C on the main screen */
	tui_signal = 0;
	tui_rendering = t->opt.render != NULL;
	ttyguard_save(STDIN_FILENO, STDOUT_FILENO);

	FILE *tout = stdout;
	if (t->opt.record != NULL) {
		/* --record: ncurses writes to a pseudo-terminal; a thread copies to the screen and the file. */
		int w, h;
		char *rerr = NULL;
		record_tty_size(STDOUT_FILENO, &w, &h);
		t->rec = record_open(t->opt.record, w, h, session_text(s, &s->lesson->title), RECORD_IDLE_LIMIT, &rerr);
		if (t->rec != NULL && t->opt.record_plain)
			record_relay_quiet(t->rec); /* tui_record_frame records the screen instead */
		if (t->rec == NULL || record_tty_start(t->rec, STDOUT_FILENO, &tout, &rerr) != 0) {
			fprintf(stderr, "attnviz: %s\n", rerr ? rerr : _("cannot record"));
			free(rerr);
			record_abort(t->rec); /* the old recording, if any, stays */
			t->rec = NULL;
			t->rc = 1;
			return -1;
		}
	}
	FILE *tin = stdin;
	if (t->opt.render != NULL && tui_render_term(t, &tout, &tin) != 0)
		return -1;
	t->scr = newterm(t->opt.render != NULL ? TUI_RENDER_TERM : NULL, tout, tin);
	if (t->scr == NULL) {
		char *term = text_escape(getenv("TERM"), ""); /* the environment is outside text too */
		fprintf(stderr, "attnviz: cannot start the terminal interface (TERM=%s); try --plain\n", term ? term : "");
		free(term);
		t->rc = 1;
		return -1;
	}
	tui_curses_on = 1;
	ttyguard_arm();
	if (t->rec != NULL)
		record_tty_signals(t->rec);
	if (!atexit_done) {
		atexit(tui_end);
		atexit_done = 1;
	}
	cbreak();
	noecho();
	nonl();
	intrflush(stdscr, FALSE);
	keypad(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	const char *nc = getenv("NO_COLOR");
	char *terr = NULL;
	if (theme_init(t->opt.theme, nc != NULL && *nc != '\0', &terr) != 0)
		tui_set_msg(t, 1, terr ? terr : _("cannot load the theme; using the default"));
	free(terr);

	s->dirty |= DIRTY_ALL;
	t->redraw = R_ALL;
	if (t->msg == NULL && t->opt.notice != NULL)
		tui_set_msg(t, 1, t->opt.notice);
	else if (t->msg == NULL && t->opt.offer != NULL)
		tui_set_msg(t, 0, t->opt.offer);
	if (t->msg == NULL && !t->utf8 && strcmp(s->lang, session_screen_lang(s, 1)) != 0)
		tui_set_msg(t, 1, _("Chinese needs a UTF-8 terminal (LANG=zh_CN.UTF-8): narration in English"));
	if (t->msg == NULL)
		tui_set_msg(t, 0, _("attnviz: n next, Enter explains a cell, : commands, ? help, q quit"));
	tui_mouse_start(t);
	attn_set_progress(tui_progress, t);

	if (t->opt.demo != NULL)
		tui_demo_start(t, t->opt.demo);
	return 0;
}

#define TUI_LEAVE (-2) /* tui_wait: leave the loop */

void
tui_expire(Tui *t)
{
	if (t->edit_glow && tui_now_ms() >= t->edit_glow_until) {
		t->edit_glow = 0;
		t->redraw |= R_PANES;
	}
}

int
tui_turn(Tui *t)
{
	tui_demo_tick(t);
	tui_play_tick(t);
	tui_watch_tick(t);
	if (t->s->quit)
		return 1;
	tui_sync(t);
	tui_draw(t);
	if (t->rec != NULL && t->opt.record_plain)
		tui_record_frame(t);
	if (t->rec != NULL)
		record_tty_sync(t->rec);
	return 0;
}

/*
 * One turn of the loop up to a key: run what is due (the demo, :play), draw
 * what changed, and wait for a key until the next thing is due (a glow
 * ends, a demo line, a :play step). Returns the key; ERR when there is none
 * (a timer, a signal that was handled); TUI_LEAVE when attnviz should stop
 * (quit, a signal, the input gone).
 */
static int
tui_wait(Tui *t)
{
	if (tui_turn(t) != 0)
		return TUI_LEAVE;
	if (t->key_times != NULL && !t->key_ready) { /* the first frame is out: keys may come */
		fprintf(t->key_times, "ready\n");
		fflush(t->key_times);
		t->key_ready = 1;
	}
	if (t->key_times != NULL && t->key_t0 > 0) { /* the key is answered: its screen is out */
		fprintf(t->key_times, "key=%d ms=%.3f cpu_ms=%.3f\n", t->key_code, clock_ms() - t->key_t0,
		        clock_cpu_ms() - t->key_cpu0);
		fflush(t->key_times);
		t->key_t0 = 0;
	}
	session_idle(t->s); /* the screen is out: what the next keys will need, while the learner reads */

	WINDOW *in = t->lay.too_small || t->w_status == NULL ? stdscr : t->w_status;
	long long wait = 1000, now = tui_now_ms();
	if (t->edit_glow && t->edit_glow_until - now < wait)
		wait = t->edit_glow_until - now;
	if (t->demo && !t->demo_paused && !t->demo_at_pause && t->demo_pos < t->demo->n && t->mode != TUI_CMD &&
	    t->demo_due - now < wait)
		wait = t->demo_due - now;
	if (t->play_ms > 0 && t->mode != TUI_CMD && t->play_due - now < wait)
		wait = t->play_due - now;
	if (wait < 0 || tui_signal) /* a signal that came during work: seen now, not after a key */
		wait = 0;
	wtimeout(in, (int)wait);
	long long before = tui_now_ms();
	int key = wgetch(in);

	if (ttyguard_continued() && t->opt.render == NULL) {
		/* stopped from outside (SIGSTOP) and continued: the shell may have put its own modes on the terminal;
		 * leaving and refreshing puts back ours (raw, keypad, the alternate screen, the mouse) and redraws */
		endwin();
		clearok(curscr, TRUE);
		doupdate();
		t->redraw |= R_ALL;
	}
	if (tui_signal) {
		int sig = tui_signal;
		tui_signal = 0;
		if (sig == SIGINT && t->mode == TUI_CMD) {
			char *line = NULL;
			lineedit_feed(t->le, 3, &line); /* Ctrl-C cancels the line */
			free(line);
			t->mode = TUI_MAIN;
			t->redraw |= R_STATUS | R_PANES;
			return ERR;
		}
		if (sig == SIGINT && t->mode == TUI_POPUP) {
			tui_popup_close(t);
			return ERR;
		}
		if (sig == SIGINT && t->mode == TUI_MENU) {
			tui_menu_close(t);
			return ERR;
		}
		t->rc = 128 + sig;
		return TUI_LEAVE;
	}
	if (key == ERR) {
		tui_expire(t);
		/* Returning at once without a key, again and again: the input is gone. */
		if (tui_now_ms() - before < wait / 2 && wait > 50) {
			if (++t->errs > 50)
				return TUI_LEAVE;
		} else {
			t->errs = 0;
		}
		return ERR;
	}
	t->errs = 0;
	if (key == 27) {
		/*
		 * An escape sequence curses did not know (\e[1~ for Home where the
		 * terminfo says \eOH) comes as Esc and its bytes: swallowed whole.
		 * It once cancelled the : line and its "1" answered a question.
		 */
		wtimeout(in, 0);
		int c = wgetch(in);
		if (c == '[' || c == 'O') {
			wtimeout(in, 10);
			for (int n = 0; n < 32 && (c = wgetch(in)) != ERR; n++)
				if (c >= 0x40 && c <= 0x7e) /* a CSI's final byte; SS3's one byte */
					break;
			return ERR;
		}
		if (c != ERR)
			ungetch(c);
	}
	return key;
}

/* One key: to the demo, or to the mode's handler. Returns 1 when attnviz should stop. */
int
tui_key(Tui *t, int key)
{
	if (t->edit_glow) {
		t->edit_glow = 0;
		t->redraw |= R_PANES;
	}
	if (key == KEY_RESIZE) {
		t->redraw |= R_LAYOUT;
		if (t->rec != NULL)
			record_resize(t->rec, COLS, LINES);
		return 0;
	}
	/* Any key stops :play (and does nothing else). */
	if (t->play_ms > 0 && t->mode != TUI_CMD) {
		t->play_ms = 0;
		tui_set_msg(t, 0, _("play stopped"));
		return 0;
	}
	if (t->lay.too_small)
		return key == 'q';
	/* a key or a click replaces the message (the start-up hint, a skip's answer): the cell clicked is said at once */
	if (t->mode == TUI_MAIN && t->msg && key != ':') {
		free(t->msg);
		t->msg = NULL;
		t->redraw |= R_STATUS;
	}
	if (key == KEY_MOUSE) {
		tui_mouse(t);
		return 0;
	}
	if (t->mode != TUI_CMD && tui_demo_key(t, key))
		return 0;
	switch (t->mode) {
	case TUI_MAIN:
		if (t->model_open)
			tui_model_key(t, key);
		else
			tui_key_main(t, key);
		break;
	case TUI_POPUP:
		tui_key_popup(t, key);
		break;
	case TUI_CMD:
		tui_key_cmd(t, key);
		break;
	case TUI_MENU:
		tui_menu_key(t, key);
		break;
	}
	return 0;
}

/* Put back what tui_start set up (as far as it got); returns the exit status. */
static int
tui_stop(Tui *t)
{
	char *perr = NULL;
	/* the last moves inside a lesson are kept once, here, not at every keypress (said once the screen is back) */
	const int pfail = progress_flush(t->opt.progress, &perr) != 0;

	attn_set_progress(NULL, NULL);
	tui_demo_free(t);
	tui_watch_free(t);
	tui_menu_close(t);
	tui_model_close(t);
	tui_free_windows(t);
	tui_end();
	ttyguard_disarm();
	if (t->scr)
		delscreen(t->scr);
	if (t->render_out != NULL)
		fclose(t->render_out);
	if (t->render_in != NULL)
		fclose(t->render_in);
	free(t->plain_cells);
	free(t->plain_prev);
	if (pfail)
		fprintf(stderr, "attnviz: cannot keep your progress: %s\n", perr ? perr : _("out of memory"));
	free(perr);
	if (t->rec != NULL) {
		char *rerr = NULL;
		/* the lesson the recording ended on, not the one it began with (a demo loads its own) */
		record_set_title(t->rec, session_text(t->s, &t->s->lesson->title));
		if (record_close(t->rec, &rerr) != 0) {
			fprintf(stderr, "attnviz: %s\n", rerr ? rerr : _("cannot write the recording"));
			if (t->rc == 0)
				t->rc = 1;
		}
		free(rerr);
		t->rec = NULL;
	}
	lineedit_free(t->le);
	sigaction(SIGINT, &t->old_int, NULL);
	sigaction(SIGTERM, &t->old_term, NULL);
	sigaction(SIGHUP, &t->old_hup, NULL);
	sigaction(SIGQUIT, &t->old_quit, NULL);
	free(t->narr);
	free(t->note);
	free(t->msg);
	free(t->popup_title);
	free(t->popup_text);
	if (t->key_times != NULL)
		fclose(t->key_times);
	return t->rc;
}

int
tui_run(Session *s, const TuiOptions *opt)
{
	Tui t;
	int key;

	if (tui_start(&t, s, opt) == 0) {
		if (t.opt.render != NULL)
			t.rc = tui_render_loop(&t);
		else
			while (!s->quit && (key = tui_wait(&t)) != TUI_LEAVE) {
				if (key == ERR)
					continue;
				t.key_t0 = clock_ms();
				t.key_cpu0 = clock_cpu_ms();
				t.key_code = key;
				if (tui_key(&t, key))
					break;
			}
	}
	return tui_stop(&t);
}
