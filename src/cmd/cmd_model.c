/*
 * cmd_model.c: the commands of a real model (cmd.c's table lists them):
 * model DIR [TEXT], prompt TEXT, ids ID…, generate N, seed [S|off], lens [LAYER POSITION].
 */
#include "cmd/cmd.h"
#include "cmd/cmd_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/i18n.h"
#include "base/strbuf.h"
#include "base/text.h"
#include "inspect/lens.h"

/* The lens table's width: a pop-up of the full-screen view at 80 columns holds it. */
#define LENS_WIDTH 76

static int fail(CmdOut *out, char *err)
{
	cmd_say(out, MSG_ERROR, NULL, "%s", err ? err : _("out of memory"));
	free(err);
	return -1;
}

/* Words from, … of the line joined by one space (what was quoted keeps its spaces); heap, or NULL. */
static char *words_text(const CmdArgv *a, int from)
{
	StrBuf b = { 0 };

	for (int i = from; i < a->argc; i++)
		strbuf_printf(&b, "%s%s", i > from ? " " : "", a->argv[i]);
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s != NULL ? b.s : strdup("");
}

/* "WHAT: n tokens: … (ids …)" once the prompt changed: the tokens as people read them, and their ids. */
static void say_tokens(const Session *s, CmdOut *out, const char *what)
{
	StrBuf b = { 0 };
	const ModelConfig *c = &s->lesson->cfg;

	StrBuf ids = { 0 };

	for (int i = 0; i < c->n; i++) {
		strbuf_printf(&b, "%s%s", i ? " | " : "", c->tokens[i]);
		strbuf_printf(&ids, "%s%lld", i ? "," : "", c->ids[i]);
	}
	cmd_say(out, MSG_INFO, NULL, ngettext("%s: %d token: %s (ids %s)", "%s: %d tokens: %s (ids %s)", (unsigned long)c->n),
	        what, c->n, b.s ? b.s : "", ids.s ? ids.s : "");
	free(b.s);
	free(ids.s);
}

int cmd_model(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL, *text = a->argc > 2 ? words_text(a, 2) : NULL;

	if (a->argc > 2 && text == NULL)
		return fail(out, NULL);
	if (session_open_model(s, a->argv[1], text, &err) != 0) {
		free(text);
		return fail(out, err);
	}
	free(text);
	say_tokens(s, out, a->argv[1]);
	return 0;
}

int cmd_prompt(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL, *text = words_text(a, 1);
	ImportPrompt p = { text, NULL, 0 };

	if (text == NULL)
		return fail(out, NULL);
	if (session_prompt(s, &p, &err) != 0) {
		free(text);
		return fail(out, err);
	}
	free(text);
	say_tokens(s, out, "prompt");
	return 0;
}

int cmd_ids(Session *s, const CmdArgv *a, CmdOut *out)
{
	long long *ids = calloc((size_t)LESSON_MAX_TOKENS + 1, sizeof *ids);
	ImportPrompt p = { NULL, ids, 0 };
	char *err = NULL;

	if (ids == NULL)
		return fail(out, NULL);
	for (int i = 1; i < a->argc; i++)
		for (const char *q = a->argv[i]; *q != '\0';) {
			char *end;
			errno = 0;
			long long v = strtoll(q, &end, 10);
			if (end == q || errno != 0 || v < 0 || (*end != ',' && *end != '\0') || p.n > LESSON_MAX_TOKENS) {
				free(ids);
				cmd_say(out, MSG_ERROR, NULL, _("ids: expected token ids from 0 (1,2,3 or 1 2 3), got %s"), a->argv[i]);
				return -1;
			}
			ids[p.n++] = v;
			q = *end == ',' ? end + 1 : end;
		}
	if (session_prompt(s, &p, &err) != 0) {
		free(ids);
		return fail(out, err);
	}
	free(ids);
	say_tokens(s, out, "ids");
	return 0;
}

int cmd_generate(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL;
	const int count = (int)a->v[0].whole;
	int made = 0;

	if (session_generate(s, count, &made, &err) != 0)
		return fail(out, err);
	say_tokens(s, out, "generate");
	/* last: the line the full-screen view's status keeps */
	if (made < count)
		cmd_say(out, MSG_INFO, NULL, _("generate: stopped (Ctrl-C) after %d of %d tokens, which are kept"), made, count);
	return 0;
}

/* A seed as typed: a whole number from 0 to 2^64 − 1 (decimal), into *seed; 0, or -1. */
int cmd_parse_seed(const char *w, uint64_t *seed)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (w[0] < '0' || w[0] > '9')
		return -1;
	v = strtoull(w, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	*seed = (uint64_t)v;
	return 0;
}

int cmd_seed(Session *s, const CmdArgv *a, CmdOut *out)
{
	uint64_t seed;

	if (a->argc > 1 && strcmp(a->argv[1], "off") == 0)
		session_set_seed(s, 0, 0);
	else if (a->argc > 1 && cmd_parse_seed(a->argv[1], &seed) == 0)
		session_set_seed(s, 1, seed);
	else if (a->argc > 1) {
		cmd_say(out, MSG_ERROR, NULL, _("seed: expected a whole number from 0 (or off), got %s"), a->argv[1]);
		return -1;
	}
	if (s->sampling)
		cmd_say(out, MSG_INFO, NULL, _("generate samples from the next stage's top %d at temperature %.6g, seed %llu"),
		        attn_top_k(&s->lesson->cfg), attn_temperature(&s->lesson->cfg), (unsigned long long)s->seed);
	else
		cmd_say(out, MSG_INFO, NULL, "%s", _("generate takes the most likely token (greedy): seed S samples instead"));
	return 0;
}

/* lens: the logit lens table (inspect/lens.h); lens LAYER POSITION: one cell's token, probability and top few. */
int cmd_lens(Session *s, const CmdArgv *a, CmdOut *out)
{
	Lens l;
	char *err = NULL, *text;
	long layer = 0, pos = 0;

	if (a->argc != 1 && a->argc != 3)
		return cmd_count_error(out, a->entry, a->argc == 2 ? 2 : 0, 2, a->argc - 1);
	if (lens_compute(s->model, &l, &err) != 0)
		return fail(out, err);
	if (a->argc == 3 && (cmd_read_whole(a->argv[1], 0, l.layers - 1, &layer, out, a->entry, N_("layer")) != 0 ||
	                     cmd_read_whole(a->argv[2], 0, l.n - 1, &pos, out, a->entry, N_("position")) != 0)) {
		lens_free(&l);
		return -1;
	}
	text = a->argc == 3 ? lens_explain(s->model, &l, (int)layer, (int)pos, out->utf8)
	                    : lens_table(s->model, &l, LENS_WIDTH, out->utf8);
	lens_free(&l);
	if (text == NULL)
		return fail(out, NULL);
	cmd_say(out, MSG_TEXT, _("logit lens"), "%s", text);
	free(text);
	return 0;
}
