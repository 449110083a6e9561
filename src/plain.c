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

static void plain_message(void *ctx, CmdMsg kind, const char *title, const char *text)
{
	(void)ctx;
	if (kind == MSG_ERROR) {
		fprintf(stderr, "error: %s\n", text);
		return;
	}
	if (kind == MSG_TEXT && title != NULL)
		printf("-- %s --\n", title);
	fputs(text, stdout);
	if (text[0] == '\0' || text[strlen(text) - 1] != '\n')
		fputc('\n', stdout);
}

static void plain_show(void *ctx, AttnMatrix which, int head)
{
	PlainCtx *c = ctx;
	textfmt_matrix(stdout, c->s->attn, which, head, c->opt->color, c->opt->utf8);
}

int plain_run(Session *s, FILE *in, const PlainOptions *opt)
{
	PlainCtx ctx = { s, opt };
	CmdOut out = { &ctx, plain_message, plain_show, NULL, opt->color, opt->utf8, opt->interactive };
	char *line = NULL;
	size_t cap = 0;

	textfmt_step(stdout, s, opt->color, opt->utf8);
	s->dirty = 0;
	while (!s->quit) {
		if (opt->interactive) {
			fputs("attnviz> ", stdout);
			fflush(stdout);
		}
		if (getline(&line, &cap, in) < 0)
			break;
		cmd_run(s, line, &out);
		/* Whatever moved or changed the numbers, show the step again. */
		if (!s->quit && (s->dirty & (DIRTY_LESSON | DIRTY_VALUES | DIRTY_PLACE | DIRTY_LANG))) {
			fputc('\n', stdout);
			textfmt_step(stdout, s, opt->color, opt->utf8);
		}
		s->dirty = 0;
		fflush(stdout);
	}
	free(line);
	return 0;
}
