/* tuirender.c: --render — a demo played in the full-screen view with no terminal and no keys, kept as frames.
 *
 * tui_start gave curses a virtual terminal (xterm-256color, the size asked,
 * writing to /dev/null). Each loop turn runs what is due, draws as the live
 * view does, and reads the screen curses believes it drew (curscr: character,
 * attributes, colour pair per cell) into a frame (render.h). Time is the
 * demo's: a virtual clock (tui_clock_set) jumps to whatever is due next — a
 * demo line after its `wait`, a :play step, the end of an edit's glow — and where the
 * live view would wait for a key (a `pause`, a line that failed, anything else
 * that waits for the class), the clock moves on by the pause and space is
 * pressed, as a teacher would.
 *
 * --record-plain reads the same screen after each frame of the live view and
 * records the rows that changed (render_cast_rows) instead of curses' bytes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "base/i18n.h"
#include "out/render.h"
#include "base/strbuf.h"
#include "tui/theme.h"
#include "out/themefile.h"
#include "tui/tuistate.h"

/* A demo longer than this (virtual time) is a loop, not a lecture. */
#define RENDER_MAX_MS (24LL * 3600 * 1000)

/* Spaces pressed at one demo line (a question: one shows the answer, the next goes on) before it is stuck. */
#define RENDER_MAX_PRESSES 8

/* Loop turns at one time before the demo is taken to be stuck (each command takes one turn). */
#define RENDER_MAX_TURNS (DEMO_MAX_LINES * 4)

/* The terminal's own colours (a cell of colour -1): dark, or light when the theme's narration is dark text. */
static void
render_defaults(uint32_t *fg, uint32_t *bg)
{
	const ThemeFile *tf = themefile_current();
	int narr = tf != NULL ? tf->role[ROLE_NARR].fg : THEMEFILE_DEFAULT_COLOR;
	unsigned long c = themefile_rgb(narr, 0xe5e5e5);

	if (narr != THEMEFILE_DEFAULT_COLOR && themefile_contrast(c, 0xffffff) > themefile_contrast(c, 0x000000)) {
		*fg = 0x000000;
		*bg = 0xffffff;
	} else {
		*fg = 0xe5e5e5;
		*bg = 0x000000;
	}
}

/* A colour number of this terminal as RGB. */
static uint32_t
render_rgb(int colour, uint32_t dflt)
{
	return (uint32_t)themefile_rgb_on(colour, theme_colors() == 8 ? 8 : 256, dflt);
}

/* Halfway from c to bg: A_DIM as most terminals draw it. */
static uint32_t
render_dim(uint32_t c, uint32_t bg)
{
	uint32_t out = 0;

	for (int s = 0; s < 24; s += 8)
		out |= ((((c >> s) & 255) + ((bg >> s) & 255)) / 2) << s;
	return out;
}

/* The screen as curses last drew it. */
static void
render_read(RenderCell *cells, int w, int h, uint32_t dfg, uint32_t dbg)
{
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			RenderCell *c = &cells[(size_t)y * (size_t)w + (size_t)x];
			cchar_t cc;
			wchar_t wch[CCHARW_MAX + 1] = { 0 };
			attr_t a = 0;
			short spair = 0;
			int pair = 0, fg = -1, bg = -1;

			memset(c, 0, sizeof *c);
			c->ch = ' ';
			c->fg = dfg;
			c->bg = dbg;
			if (x > 0 && (c[-1].flags & RENDER_WIDE)) {
				/* the second half of a double-width character: its colours, no character of its own */
				c->fg = c[-1].fg;
				c->bg = c[-1].bg;
				c->flags = RENDER_CONT;
				continue;
			}
			if (mvwin_wch(curscr, y, x, &cc) == ERR || getcchar(&cc, wch, &a, &spair, &pair) == ERR)
				continue;
			if (wch[0] != L'\0' && wch[0] != L' ')
				c->ch = (uint32_t)wch[0];
			if (pair > 0 && extended_pair_content(pair, &fg, &bg) != ERR) {
				c->fg = render_rgb(fg, dfg);
				c->bg = render_rgb(bg, dbg);
			}
			if (a & (A_REVERSE | A_STANDOUT)) {
				uint32_t t = c->fg;
				c->fg = c->bg;
				c->bg = t;
			}
			if (a & A_DIM)
				c->fg = render_dim(c->fg, c->bg);
			if (a & A_BOLD)
				c->flags |= RENDER_BOLD;
			if (a & A_UNDERLINE)
				c->flags |= RENDER_UNDERLINE;
#ifdef A_ITALIC
			if (a & A_ITALIC)
				c->flags |= RENDER_ITALIC;
#endif
			if (wcwidth((wchar_t)c->ch) == 2 && x + 1 < w)
				c->flags |= RENDER_WIDE;
		}
}

void
tui_record_frame(Tui *t)
{
	const int w = COLS, h = LINES;
	const size_t n = (size_t)w * (size_t)h;
	uint32_t dfg, dbg;
	StrBuf b = { 0 };

	if (w != t->plain_w || h != t->plain_h) {
		/* a new size: everything is drawn again */
		free(t->plain_cells);
		free(t->plain_prev);
		t->plain_cells = calloc(n, sizeof *t->plain_cells);
		t->plain_prev = calloc(n, sizeof *t->plain_prev);
		t->plain_w = w;
		t->plain_h = h;
		t->plain_have = 0;
		if (t->plain_cells == NULL || t->plain_prev == NULL) {
			t->plain_w = t->plain_h = 0;
			return;
		}
	}
	render_defaults(&dfg, &dbg);
	render_read(t->plain_cells, w, h, dfg, dbg);
	if (t->plain_have && memcmp(t->plain_cells, t->plain_prev, n * sizeof *t->plain_cells) == 0)
		return;
	render_cast_rows(&b, w, h, t->plain_cells, t->plain_have ? t->plain_prev : NULL);
	if (!b.oom)
		record_output(t->rec, b.s, b.len);
	free(b.s);
	memcpy(t->plain_prev, t->plain_cells, n * sizeof *t->plain_cells);
	t->plain_have = 1;
}

/* The demo line last run (1-based line in the script), or 0 before the first. */
static int
render_line(const Tui *t)
{
	if (t->demo == NULL || t->demo_pos == 0)
		return 0;
	return t->demo->line[t->demo_pos - 1].lineno;
}

/* Nothing more will happen by itself: the demo is over and nothing else runs. */
static int
render_done(const Tui *t)
{
	return (t->demo == NULL || (t->demo_pos >= t->demo->n && !t->demo_at_pause && !t->demo_paused)) &&
	       t->play_ms <= 0 && !t->edit_glow;
}

/* The live view waits for a key here (a pause, a failed line, a question). */
static int
render_waits(const Tui *t)
{
	return t->demo != NULL && (t->demo_at_pause || t->demo_paused) && t->play_ms <= 0 && !t->edit_glow;
}

/* The next time something is due without a key; -1 when nothing is. */
static long long
render_next_due(const Tui *t)
{
	long long due = -1;

	if (t->demo != NULL && !t->demo_paused && !t->demo_at_pause && t->demo_pos < t->demo->n)
		due = t->demo_due;
	if (t->play_ms > 0 && (due < 0 || t->play_due < due))
		due = t->play_due;
	if (t->edit_glow && (due < 0 || t->edit_glow_until < due))
		due = t->edit_glow_until;
	return due;
}

/* "attnviz: --render: …" on stderr, escaped (file names and lesson text are in it). */
static void render_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void
render_say(const char *fmt, ...)
{
	va_list ap;
	char *m, *e;

	va_start(ap, fmt);
	m = str_vprintf(fmt, ap);
	va_end(ap);
	e = m != NULL ? text_escape(m, "") : NULL;
	fprintf(stderr, "attnviz: --render: %s\n", e ? e : "out of memory");
	free(e);
	free(m);
}

/* Write the frames to the file out names, by its ending; 0, or -1 (said on stderr). */
static int
render_write(Tui *t, const Render *r)
{
	const TuiRender *o = t->opt.render;
	const char *dot = strrchr(o->out, '.');
	char *err = NULL;
	int rc = 0;

	if (dot != NULL && strcmp(dot, ".svg") == 0) {
		rc = render_write_svg(r, o->out, &err);
	} else if (dot != NULL && strcmp(dot, ".cast") == 0) {
		/* idle_time_limit: no stillness the script asked for is cut, none longer is kept */
		double idle = o->pause_s;
		for (int i = 0; t->demo != NULL && i < t->demo->n; i++)
			if (t->demo->line[i].kind == DEMO_WAIT && t->demo->line[i].seconds > idle)
				idle = t->demo->line[i].seconds;
		rc = render_write_cast(r, o->out, session_text(t->s, &t->s->lesson->title), idle > 0 ? idle : 1, &err);
	} else if (render_is_video(o->out)) {
		rc = render_write_video(r, o->out, o->zoom, &err);
	} else {
		err = str_printf("cannot write %s: expected a file ending in .svg, .cast, .gif or .mp4", o->out);
		rc = -1;
	}
	if (rc != 0)
		render_say("%s", err ? err : "out of memory");
	free(err);
	return rc;
}

int
tui_render_loop(Tui *t)
{
	const TuiRender *o = t->opt.render;
	const long long pause_ms = (long long)(o->pause_s * 1000 + 0.5);
	long long clock = 0;
	uint32_t dfg, dbg;
	RenderCell *cells;
	Render *r;
	int failed_said = -1, failed = 0, rc = 0, presses = 0, pressed_at = -1;

	render_defaults(&dfg, &dbg);
	r = render_new(COLS, LINES, dfg, dbg);
	cells = calloc((size_t)COLS * (size_t)LINES, sizeof *cells);
	if (r == NULL || cells == NULL) {
		render_say("out of memory");
		free(cells);
		render_free(r);
		return 1;
	}
	if (t->demo == NULL) {
		/* tui_start said why on the status line; a render has no status line to read */
		render_say("%s", t->msg ? t->msg : "cannot read the demo");
		free(cells);
		render_free(r);
		return 1;
	}
	for (int still = 0;; still++) {
		long long was = clock;
		if (tui_signalled()) {
			rc = 128 + tui_signalled(); /* nothing is written */
			break;
		}
		tui_expire(t);
		if (tui_turn(t) != 0)
			break;
		render_read(cells, COLS, LINES, dfg, dbg);
		const int fr = render_frame(r, clock, render_line(t), cells);
		if (fr == RENDER_TOO_BIG) {
			render_say(_("more than %d frames of %d×%d: past the %d MiB a render's frames may take; stopped at line %d "
			             "(a smaller --size or a shorter demo; nothing written)"),
			           render_count(r), COLS, LINES, (int)(RENDER_MAX_BYTES >> 20), render_line(t));
			rc = 1;
			break;
		}
		if (fr != 0) {
			render_say("out of memory");
			rc = 1;
			break;
		}
		if (render_done(t)) {
			render_end(r, clock + pause_ms); /* the last screen holds for a pause */
			break;
		}
		long long due = render_next_due(t);
		/* waiting for a key: a pause, a failed line, or whatever else waits for the class (nothing is due) */
		if (render_waits(t) || due < 0) {
			if (t->demo_paused && t->msg_error && failed_said != t->demo_pos) {
				/* a line that failed: said here too, as the live view would show it */
				failed_said = t->demo_pos;
				failed++;
				/* which command, and why: a long message was moved to the narration's head (t->note) */
				const DemoLine *e = t->demo_pos > 0 ? &t->demo->line[t->demo_pos - 1] : NULL;
				const char *why = t->msg != NULL ? t->msg : t->note != NULL ? t->note : _("failed");
				if (e != NULL && e->kind == DEMO_CMD && e->text != NULL)
					render_say("%s:%d: %s: %s", t->demo->path, render_line(t), e->text, why);
				else
					render_say("%s:%d: %s", t->demo->path, render_line(t), why);
			}
			presses = t->demo != NULL && t->demo_pos == pressed_at ? presses + 1 : 0;
			pressed_at = t->demo != NULL ? t->demo_pos : -1;
			if (presses > RENDER_MAX_PRESSES) {
				render_say("the demo waits for something space does not give; stopped at line %d", render_line(t));
				rc = 1;
				break;
			}
			clock += pause_ms;
			tui_clock_set(clock);
			tui_key(t, ' ');
			continue;
		}
		if (due > clock)
			clock = due;
		if (clock != was)
			still = 0;
		else if (still > RENDER_MAX_TURNS) {
			render_say("the demo runs on without time passing; stopped at line %d", render_line(t));
			rc = 1;
			break;
		}
		if (clock > RENDER_MAX_MS) {
			render_say("longer than %d hours: stopped at line %d", (int)(RENDER_MAX_MS / 3600000), render_line(t));
			rc = 1;
			break;
		}
		tui_clock_set(clock);
	}
	if (rc == 0 && tui_signalled())
		rc = 128 + tui_signalled(); /* INT, TERM or HUP came as the last frame was made: nothing is written */
	if (rc == 0 && render_write(t, r) != 0)
		rc = tui_signalled() ? 128 + tui_signalled() : 1; /* a signal stops a video: its status */
	if (rc == 0)
		render_say("%d frames, %.1f s, written to %s", render_count(r), (double)clock / 1000 + o->pause_s, o->out);
	if (rc == 0 && failed > 0) {
		/* written all the same (the demo went on, as in class), but a script with a broken line is not a success */
		render_say(ngettext("%d demo line failed (said above): exit 1", "%d demo lines failed (said above): exit 1",
		                    (unsigned long)failed),
		           failed);
		rc = 1;
	}
	free(cells);
	render_free(r);
	return rc;
}
