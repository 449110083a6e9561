/* plain.c: the text REPL — commands in, aligned tables out; errors to stderr. */
#include "cmd/plain.h"
#include "base/i18n.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <time.h>

#include "cmd/cmd.h"
#include "app/demo.h"
#include "base/strbuf.h"
#include "out/textfmt.h"

/* How deep `source` may nest (a script that sources itself stops here). */
#define PLAIN_MAX_SOURCE 8

typedef struct PlainCtx {
	Session *s;
	const PlainOptions *opt;
	FILE *in;       /* where `pause` reads its Enter */
	CmdOut *out;
	int depth;      /* `source` nesting */
	struct stat running[PLAIN_MAX_SOURCE]; /* the scripts being run, outermost first */
	long ran;       /* lines the outermost `source` has run, with what it sourced */
} PlainCtx;

static void plain_message_to(FILE *f, CmdMsg kind, const char *title, const char *text)
{
	if (kind == MSG_ERROR) {
		fputs(_("error: "), f);
		textfmt_put_wrapped(f, text, 7);
		fputc('\n', f);
		return;
	}
	if (kind == MSG_TEXT && title != NULL)
		fprintf(f, "-- %s --\n", title);
	textfmt_put_wrapped(f, text, 0);
	if (text[0] == '\0' || text[strlen(text) - 1] != '\n')
		fputc('\n', f);
}

static void plain_message(void *ctx, CmdMsg kind, const char *title, const char *text)
{
	PlainCtx *c = ctx;
	plain_message_to(kind == MSG_ERROR ? stderr : stdout, kind, title, text);
	if (c->opt->transcript != NULL)
		plain_message_to(c->opt->transcript, kind, title, text);
}

static void plain_show(void *ctx, AttnMatrix which, int head)
{
	PlainCtx *c = ctx;
	textfmt_matrix(stdout, c->s->attn, which, head, c->opt->color, c->opt->utf8);
	if (c->opt->transcript != NULL)
		textfmt_matrix(c->opt->transcript, c->s->attn, which, head, 0, c->opt->utf8);
}

/* The current step, on stdout and (without colour) in the transcript. */
static void plain_step(PlainCtx *c, int blank_line)
{
	if (blank_line)
		fputc('\n', stdout);
	textfmt_step(stdout, c->s, c->opt->color, c->opt->utf8);
	if (c->opt->transcript != NULL) {
		if (blank_line)
			fputc('\n', c->opt->transcript);
		textfmt_step(c->opt->transcript, c->s, 0, c->opt->utf8);
	}
}

/* One command, then the step again when it moved or changed anything. */
static void plain_line(PlainCtx *c, const char *line)
{
	Session *s = c->s;

	cmd_run(s, line, c->out);
	if (!s->quit && (s->dirty & (DIRTY_LESSON | DIRTY_VALUES | DIRTY_PLACE | DIRTY_LANG | DIRTY_QUIZ)))
		plain_step(c, 1);
	s->dirty = 0;
	fflush(stdout);
}

static void plain_error(PlainCtx *c, const char *text)
{
	plain_message(c, MSG_ERROR, NULL, text);
}

/* `wait SECONDS`: sleeps only when a person is watching (scripted runs stay fast). */
static void plain_wait(PlainCtx *c, double sec)
{
	struct timespec ts;

	if (!c->opt->interactive || sec <= 0)
		return;
	ts.tv_sec = (time_t)sec;
	ts.tv_nsec = (long)((sec - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* `pause`: waits for Enter only when a person is typing (prompt: what Enter does). */
static void plain_pause(PlainCtx *c, const char *prompt)
{
	char buf[256];

	if (!c->opt->interactive)
		return;
	fputs(prompt, stdout);
	fflush(stdout);
	if (fgets(buf, sizeof buf, c->in) == NULL)
		clearerr(c->in);
}

/* `quiz`: the class votes on the open question (Enter, when a person is there), then its answer. */
static void plain_quiz(PlainCtx *c, const Demo *d, const DemoLine *e)
{
	if (!session_quiz_pending(c->s)) {
		char *safe = text_escape(d->path, ""), *msg;
		msg = str_printf(_("%s:%d: quiz: this step has no open question"), safe ? safe : "", e->lineno);
		plain_error(c, msg ? msg : _("quiz: no open question"));
		free(msg);
		free(safe);
		return;
	}
	plain_pause(c, _("-- the class votes: press Enter for the answer --"));
	/* "Answer: …" with its numbers, as the full-screen view reveals it (not :skip's "Skipped") */
	char *feedback = NULL, *err = NULL;
	if (session_reveal(c->s, &feedback, &err) == 0) {
		plain_message(c, MSG_INFO, NULL, feedback != NULL ? feedback : _("answer shown"));
		/* what the step says once its question is answered */
		if (session_then(c->s) != NULL && *session_then(c->s) != '\0') {
			char *then = text_escape(session_then(c->s), "\n\t");
			plain_message(c, MSG_TEXT, NULL, then != NULL ? then : "");
			free(then);
		}
	} else
		plain_error(c, err != NULL ? err : _("out of memory"));
	free(feedback);
	free(err);
}

/* `source FILE`: the script's lines in order; an error is shown and the script goes on. */
static void plain_source(PlainCtx *c, const char *path)
{
	char *err = NULL;
	struct stat st;
	Demo *d;
	int i;

	if (c->depth >= PLAIN_MAX_SOURCE) {
		plain_error(c, _("source: scripts nested too deep"));
		return;
	}
	/* A script that is already running (it sources itself, or two source each other) would loop. */
	for (i = 0; i < c->depth && stat(path, &st) == 0; i++)
		if (st.st_dev == c->running[i].st_dev && st.st_ino == c->running[i].st_ino) {
			char *safe = text_escape(path, ""), *msg;
			msg = str_printf(_("source: %s is already running (a script may not source itself, directly or "
			                 "through another)"), safe ? safe : "");
			plain_error(c, msg ? msg : _("source: the script is already running"));
			free(msg);
			free(safe);
			return;
		}
	if ((d = demo_load(path, &err)) == NULL) {
		char *safe = text_escape(err ? err : _("out of memory"), "");
		plain_error(c, safe ? safe : _("source: cannot read the script"));
		free(safe);
		free(err);
		return;
	}
	if (c->depth == 0)
		c->ran = 0;
	if (stat(path, &c->running[c->depth]) != 0)
		memset(&c->running[c->depth], 0, sizeof c->running[c->depth]);
	c->depth++;
	for (i = 0; i < d->n && !c->s->quit; i++) {
		const DemoLine *e = &d->line[i];
		if (c->ran >= DEMO_MAX_LINES) {
			if (c->ran++ == DEMO_MAX_LINES) { /* said once, by the innermost script */
				char *msg = str_printf(_("source: stopped after %d lines (DEMO_MAX_LINES), counting every "
				                       "script sourced"), DEMO_MAX_LINES);
				plain_error(c, msg ? msg : _("source: stopped (DEMO_MAX_LINES)"));
				free(msg);
			}
			break;
		}
		c->ran++;
		if (c->opt->transcript != NULL) {
			char *shown = text_escape(e->text, "");
			fprintf(c->opt->transcript, "attnviz> %s\n", shown ? shown : "");
			free(shown);
		}
		if (e->kind == DEMO_PAUSE)
			plain_pause(c, _("-- paused: press Enter --"));
		else if (e->kind == DEMO_QUIZ)
			plain_quiz(c, d, e);
		else if (e->kind == DEMO_WAIT)
			plain_wait(c, e->seconds);
		else
			plain_line(c, e->text);
	}
	c->depth--;
	demo_free(d);
}

/* The front-end commands the REPL knows: source, pause, wait (others: "works only in the full-screen view"). */
static int plain_frontend(void *ctx, const char *name, int argc, char **argv)
{
	PlainCtx *c = ctx;

	if (strcmp(name, "source") == 0 && argc >= 2) {
		plain_source(c, argv[1]);
		return 1;
	}
	if (strcmp(name, "pause") == 0) {
		plain_pause(c, _("-- paused: press Enter --"));
		return 1;
	}
	if (strcmp(name, "wait") == 0 && argc >= 2) {
		char *end;
		double sec = strtod(argv[1], &end);
		if (end == argv[1] || *end != '\0' || !(sec >= 0 && sec <= DEMO_MAX_WAIT)) {
			char *safe = text_escape(argv[1], "");
			char *msg = str_printf(_("wait: expected seconds from 0 to %g, got \"%.80s\""), DEMO_MAX_WAIT,
			                       safe ? safe : "");
			free(safe);
			plain_error(c, msg ? msg : _("wait: expected seconds"));
			free(msg);
			return 1;
		}
		plain_wait(c, sec);
		return 1;
	}
	return 0;
}

/* The learner's place kept (progress.h); at the end of the course, its summary. */
static void plain_progress(PlainCtx *c)
{
	char *err = NULL;
	int r = c->opt->progress != NULL ? progress_track(c->opt->progress, c->s, &err) : 0;

	if (r < 0)
		plain_message(c, MSG_ERROR, NULL, err ? err : _("cannot keep your progress"));
	else if (r & PROGRESS_COURSE_DONE) {
		char *sum = progress_report(c->opt->progress, c->opt->utf8);
		plain_message(c, MSG_TEXT, _("the course is finished"), sum ? sum : "");
		free(sum);
	}
	free(err);
}

int plain_run(Session *s, FILE *in, const PlainOptions *opt)
{
	PlainCtx ctx = { .s = s, .opt = opt, .in = in };
	CmdOut out = { &ctx, plain_message, plain_show, plain_frontend, opt->color, opt->utf8, opt->interactive };
	char *line = NULL;
	size_t cap = 0;

	ctx.out = &out;
	plain_step(&ctx, 0);
	s->dirty = 0;
	while (!s->quit) {
		if (opt->interactive) {
			fputs("attnviz> ", stdout);
			fflush(stdout);
		}
		if (getline(&line, &cap, in) < 0)
			break;
		if (opt->transcript != NULL) {
			/* the command as typed, like a prompt line in a terminal session */
			size_t n = strlen(line);
			char *shown;
			while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
				n--;
			line[n] = '\0';
			shown = text_escape(line, "");
			fprintf(opt->transcript, "attnviz> %s\n", shown ? shown : "");
			free(shown);
		}
		/* Whatever moved or changed the numbers, show the step again. */
		plain_line(&ctx, line);
		plain_progress(&ctx);
		if (opt->interactive) { /* the result is out: an edit's gradients while the learner reads it */
			fflush(stdout);
			session_idle(s);
		}
		/* stdio forgets why a write failed: keep the first reason for the message at the end */
		if (opt->transcript != NULL && fflush(opt->transcript) != 0 && opt->transcript_errno != NULL &&
		    *opt->transcript_errno == 0)
			*opt->transcript_errno = errno;
	}
	free(line);
	if (opt->progress != NULL) {
		char *err = NULL;
		if (progress_flush(opt->progress, &err) != 0)
			plain_message(&ctx, MSG_ERROR, NULL, err ? err : _("cannot keep your progress"));
		free(err);
	}
	return 0;
}
