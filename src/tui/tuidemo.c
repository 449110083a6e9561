/* tuidemo.c: demo scripts playing in the full-screen view (--demo, :source), their keys, and :play. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/i18n.h"
#include "base/strbuf.h"
#include "base/text.h"
#include "tui/theme.h"
#include "tui/tuistate.h"

/* ------------------------------------------------------------------ */
/* Demo scripts                                                         */
/* ------------------------------------------------------------------ */

/*
 * A demo runs its entries one per loop turn when due: a command at once, a
 * `wait` sets the time of the next, a `pause` waits for space or Enter.
 * Space pauses and resumes; n runs the next command by hand; p goes back one
 * command by replaying the script quietly, up to the command before, on a
 * clone of the lesson the demo started from (commands are cheap; states of
 * the session are not copyable, and a replay is always right); q leaves.
 */

void
tui_demo_free(Tui *t)
{
	demo_free(t->demo);
	t->demo = NULL;
	session_mark_free(&t->demo_mark);
	t->demo_at_pause = t->demo_paused = t->demo_at_quiz = 0;
	t->redraw |= R_STATUS;
}

void
tui_demo_start(Tui *t, const char *path)
{
	char *err = NULL;
	Demo *d = demo_load(path, &err);
	Session *s = t->s;

	if (d == NULL) {
		tui_set_msg(t, 1, err ? err : _("cannot read the demo"));
		free(err);
		return;
	}
	tui_demo_free(t);
	if (session_mark(s, &t->demo_mark, &err) != 0) {
		demo_free(d);
		tui_set_msg(t, 1, err ? err : _("demo: out of memory"));
		free(err);
		return;
	}
	t->demo = d;
	t->demo_present = t->opt.present;
	snprintf(t->demo_theme, sizeof t->demo_theme, "%s", theme_name());
	t->demo_pos = 0;
	t->demo_due = tui_now_ms();
	t->demo_paused = t->demo_at_pause = t->demo_at_quiz = 0;
	t->play_ms = 0;
	tui_msgf(t, 0, _("demo: %d lines; space pauses, n/p step, q leaves"), d->n);
}

/*
 * `source FILE` on a line of the playing demo: FILE's lines play next, in
 * its place (p replays them without sourcing again: they are in the demo now).
 */
void
tui_demo_source(Tui *t, const char *path)
{
	char *err = NULL;
	Demo *sub;

	if (t->replaying)
		return;
	if ((sub = demo_load(path, &err)) == NULL || demo_splice(t->demo, t->demo_pos, sub, &err) != 0) {
		tui_set_msg(t, 1, err ? err : "source: out of memory");
		free(err);
		demo_free(sub);
		t->demo_paused = 1;
		return;
	}
	demo_free(sub);
	t->redraw |= R_STATUS;
}

/* Reveal the open question's answer with its numbers (the `quiz` line's second key): "Answer: …", not :skip's words. */
static void
tui_demo_reveal(Tui *t)
{
	char *feedback = NULL, *err = NULL;

	if (session_quiz_pending(t->s)) {
		/* the question's keys ("the class votes …; space reveals"), if they went to the narration, are said */
		free(t->note);
		t->note = NULL;
		t->redraw |= R_NARR | R_LAYOUT;
		if (session_reveal(t->s, &feedback, &err) == 0)
			tui_set_msg(t, 0, feedback != NULL ? feedback : _("answer shown"));
		else
			tui_set_msg(t, 1, err != NULL ? err : _("out of memory"));
		free(feedback);
		free(err);
	}
	t->demo_at_quiz = 0;
}

/* A failed line's message says which line of the demo (or of a script it sourced) it was. */
static void
tui_demo_name_line(Tui *t, const DemoLine *e)
{
	const char *said = t->msg != NULL ? t->msg : t->note;
	char *named, *file = e->file != NULL ? text_escape(e->file, "") : NULL;

	named = said == NULL ? NULL
	        : file != NULL ? str_printf("demo %s line %d: %s", file, e->lineno, said)
	                       : str_printf("demo line %d: %s", e->lineno, said);
	free(file);
	if (named == NULL)
		return;
	tui_set_msg(t, 1, named);
	free(named);
}

/* A `quiz` line: ask the step's open question and wait while the class votes. */
static void
tui_demo_quiz(Tui *t, const DemoLine *e, int live)
{
	const Step *st = session_step(t->s);

	if (!live) {
		/* p replays what the class saw: the question was asked and answered */
		t->replaying = 1;
		tui_demo_reveal(t);
		t->replaying = 0;
		return;
	}
	if (session_quiz_pending(t->s)) {
		char how[32];
		t->demo_at_quiz = t->demo_at_pause = 1;
		if (!tui_clean(t)) /* --render --clean: the question and its choices, no keys to press */
			tui_msgf(t, 0, _("question: the class votes (%s); space reveals the answer"),
			         session_quiz_usage(t->s, how, sizeof how));
	} else if (st->has_quiz && st->stage == t->s->stage) {
		tui_msgf(t, 0, _("quiz: this step's question is already answered"));
	} else {
		tui_msgf(t, 1, _("quiz: this step (stage %s) asks no question"), stage_name(t->s->stage));
		tui_demo_name_line(t, e);
		t->demo_paused = 1;
	}
}

/* Run entry i. live: waits and pauses count; otherwise (replaying) only commands (and the answers of questions asked) run. */
static void
tui_demo_exec(Tui *t, int i, int live)
{
	const DemoLine *e = &t->demo->line[i];

	if (e->kind == DEMO_QUIZ) {
		tui_demo_quiz(t, e, live);
	} else if (e->kind == DEMO_CMD) {
		if (t->mode == TUI_POPUP)
			tui_popup_close(t);
		int failed;
		if (!live)
			t->replaying = 1;
		t->demo_running = 1;
		failed = tui_run_line(t, e->text) != 0;
		t->demo_running = 0;
		t->replaying = 0;
		e = &t->demo->line[i]; /* a `source` may have moved the entries (before i nothing moves) */
		if (live)
			t->demo_due = tui_now_ms();
		/* A line that fails (a lesson that did not load, a stage this lesson lacks) would
		 * leave the projector showing something the teacher did not plan: the demo pauses
		 * on the error (space goes on, q leaves). */
		if (failed && live) {
			t->demo_paused = 1;
			tui_demo_name_line(t, e);
		}
	} else if (live && e->kind == DEMO_WAIT) {
		t->demo_due = tui_now_ms() + (long long)(e->seconds * 1000 + 0.5);
	} else if (live && e->kind == DEMO_PAUSE) {
		t->demo_at_pause = 1;
	}
	t->redraw |= R_STATUS;
}

/* Run the entries that are due (one per loop turn, so each command is drawn). */
void
tui_demo_tick(Tui *t)
{
	if (t->demo == NULL || t->demo_paused || t->demo_at_pause || t->mode == TUI_CMD ||
	    t->demo_pos >= t->demo->n || tui_now_ms() < t->demo_due)
		return;
	tui_demo_exec(t, t->demo_pos++, 1);
	if (t->demo_pos >= t->demo->n && !t->demo_at_pause)
		t->redraw |= R_STATUS;
}

/* n: the next command (or question) now, by hand (waits and pauses on the way are passed). */
static void
tui_demo_next(Tui *t)
{
	t->demo_paused = 1;
	t->demo_at_pause = 0;
	if (t->demo_at_quiz && session_quiz_pending(t->s)) {
		tui_demo_reveal(t);
		return;
	}
	t->demo_at_quiz = 0;
	while (t->demo_pos < t->demo->n) {
		int i = t->demo_pos++;
		if (t->demo->line[i].kind == DEMO_CMD || t->demo->line[i].kind == DEMO_QUIZ) {
			tui_demo_exec(t, i, 1);
			return;
		}
	}
	tui_set_msg(t, 0, _("demo: at the end (p goes back, q leaves)"));
}

/* The session as the demo found it (session_restore), and the view's own state. */
static int
tui_demo_restore(Tui *t)
{
	char *err = NULL;

	if (session_restore(t->s, &t->demo_mark, &err) != 0) {
		tui_set_msg(t, 1, err ? err : _("demo: out of memory"));
		free(err);
		return -1;
	}
	if (t->opt.present != t->demo_present)
		t->opt.present = t->demo_present;
	if (strcmp(theme_name(), t->demo_theme) != 0) {
		const char *nc = getenv("NO_COLOR");
		err = NULL;
		theme_init(t->demo_theme, nc != NULL && *nc != '\0', &err);
		free(err);
	}
	t->redraw |= R_ALL;
	return 0;
}

/* p: back one command — the state after every command before the last one run. */
static void
tui_demo_prev(Tui *t)
{
	int last = -1;

	t->demo_paused = 1;
	t->demo_at_pause = t->demo_at_quiz = 0;
	for (int i = t->demo_pos - 1; i >= 0; i--)
		if (t->demo->line[i].kind == DEMO_CMD) {
			last = i;
			break;
		}
	if (last < 0) {
		t->demo_pos = 0;
		tui_set_msg(t, 0, _("demo: at the start"));
		return;
	}
	if (tui_demo_restore(t) != 0)
		return;
	for (int i = 0; i < last; i++)
		tui_demo_exec(t, i, 0);
	t->demo_pos = last;
	if (t->mode == TUI_POPUP)
		tui_popup_close(t);
	tui_msgf(t, 0, _("demo: back before line %d: %.60s"), t->demo->line[last].lineno, t->demo->line[last].text);
}

/* space, Enter: pause or go on (Enter only at a `pause`: elsewhere it explains). */
static int
demo_key_go(Tui *t, int key, int arg)
{
	(void)arg;
	if (key != ' ' && !t->demo_at_pause)
		return 0;
	if (t->mode == TUI_POPUP)
		tui_popup_close(t);
	if (t->demo_at_quiz && session_quiz_pending(t->s)) {
		tui_demo_reveal(t); /* the class has voted: the answer, and the demo waits at it */
	} else if (t->demo_at_pause) {
		t->demo_at_pause = t->demo_at_quiz = 0;
		t->demo_paused = 0;
		t->demo_due = tui_now_ms();
	} else if (t->demo_pos >= t->demo->n) {
		tui_set_msg(t, 0, _("demo: at the end (p goes back, q leaves)"));
	} else {
		t->demo_paused = !t->demo_paused;
		t->demo_due = tui_now_ms();
	}
	return 1;
}

/* n, p: the next or previous command by hand. */
static int
demo_key_step(Tui *t, int key, int arg)
{
	(void)arg;
	if (key == 'n') {
		if (t->mode == TUI_POPUP)
			tui_popup_close(t);
		tui_demo_next(t);
	} else {
		tui_demo_prev(t);
	}
	return 1;
}

/* q: leave the demo (a pop-up is closed first, by the pop-up's own keys). */
static int
demo_key_leave(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	if (t->mode == TUI_POPUP)
		return 0;
	tui_demo_free(t);
	tui_set_msg(t, 0, _("demo left (q again quits)"));
	return 1;
}

/* The keys while a demo plays, before the others. */
/* clang-format off */
const KeyEntry tui_demo_keys[] = {
	{ .key = { ' ', '\r', '\n', KEY_ENTER }, .keys = "space", .does = N_("pause / go on (at a pause: go on)"),
	  .run = demo_key_go },
	{ .key = { 'n', 'p' }, .keys = "n  p", .does = N_("next / previous command by hand"), .run = demo_key_step },
	{ .key = { 'q' }, .keys = "q", .does = N_("leave the demo (q again quits)"), .run = demo_key_leave },
	{ .run = NULL }
};
/* clang-format on */

/* A key while a demo plays: 1 when the demo took it. */
int
tui_demo_key(Tui *t, int key)
{
	const KeyEntry *e = t->demo != NULL ? key_find(tui_demo_keys, key) : NULL;

	if (e == NULL || !e->run(t, key, e->arg))
		return 0;
	t->redraw |= R_STATUS;
	return 1;
}

/* :play — the next step every play_ms; stops at the last step and at a question not answered. */
void
tui_play_tick(Tui *t)
{
	char *err = NULL;

	if (t->play_ms <= 0 || t->mode == TUI_CMD || tui_now_ms() < t->play_due)
		return;
	if (session_quiz_pending(t->s)) {
		char how[32];
		t->play_ms = 0;
		tui_msgf(t, 0, _("play: stopped at a question (%s, skip; then :play again)"),
		         session_quiz_usage(t->s, how, sizeof how));
		return;
	}
	if (session_next(t->s, &err) != 0) {
		free(err);
		t->play_ms = 0;
		tui_set_msg(t, 0, _("play: at the last step"));
		return;
	}
	t->play_due = tui_now_ms() + t->play_ms;
	t->redraw |= R_STATUS;
}
