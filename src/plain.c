/* plain.c: the text REPL — commands in, aligned tables out; errors to stderr. */
#include "plain.h"

#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "textfmt.h"

typedef struct PlainCtx {
	Session *s;
	const PlainOptions *opt;
} PlainCtx;

static void plain_message_to(FILE *f, CmdMsg kind, const char *title, const char *text)
{
	if (kind == MSG_ERROR) {
		fprintf(f, "error: %s\n", text);
		return;
	}
	if (kind == MSG_TEXT && title != NULL)
		fprintf(f, "-- %s --\n", title);
	fputs(text, f);
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

int plain_run(Session *s, FILE *in, const PlainOptions *opt)
{
	PlainCtx ctx = { s, opt };
	CmdOut out = { &ctx, plain_message, plain_show, NULL, opt->color, opt->utf8, opt->interactive };
	char *line = NULL;
	size_t cap = 0;

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
		cmd_run(s, line, &out);
		/* Whatever moved or changed the numbers, show the step again. */
		if (!s->quit && (s->dirty & (DIRTY_LESSON | DIRTY_VALUES | DIRTY_PLACE | DIRTY_LANG)))
			plain_step(&ctx, 1);
		s->dirty = 0;
		fflush(stdout);
		if (opt->transcript != NULL)
			fflush(opt->transcript);
	}
	free(line);
	return 0;
}
