/* cmdargs.c: the words after a command's name read as the kinds its table
 * entry declares (cmd.h: CmdArgs), before the command runs, with one message
 * for a wrong count or a word of the wrong kind. */
#include "cmd/cmd.h"
#include "cmd/cmd_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/i18n.h"
#include "base/jsonread.h"
#include "base/strbuf.h"
#include "base/text.h"
/*
 * The one message for an argument that is not what its entry says, or a
 * wrong count of words: "WHAT: expected KIND, got WORD (usage: USAGE)".
 * WHAT is the command's name, with the argument's name when the entry gives
 * one ("explain (row)").
 */
static int arg_error(CmdOut *out, const CmdEntry *e, const char *name, const char *expected, const char *got)
{
	if (name != NULL)
		cmd_say(out, MSG_ERROR, NULL, _("%s (%s): expected %s, got %s (usage: %s)"), e->name, _(name), expected, got, e->usage);
	else
		cmd_say(out, MSG_ERROR, NULL, _("%s: expected %s, got %s (usage: %s)"), e->name, expected, got, e->usage);
	return -1;
}

/* A word as the message quotes it: "x", cut to a readable length. */
static int word_error(CmdOut *out, const CmdEntry *e, const char *name, const char *expected, const char *word)
{
	char *got = str_printf("\"%.60s%s\"", word, strlen(word) > 60 ? "..." : "");
	arg_error(out, e, name, expected, got ? got : "?");
	free(got);
	return -1;
}

/* A count of words not in [min, max]: "set: expected 2 to 4 words, got 1 (usage: …)". */
int cmd_count_error(CmdOut *out, const CmdEntry *e, int min, int max, int got)
{
	char *want = min == max ? str_printf(ngettext("%d word", "%d words", (unsigned long)min), min)
	             : max >= CMD_MANY ? str_printf(ngettext("at least %d word", "at least %d words", (unsigned long)min), min)
	                               : str_printf(_("%d to %d words"), min, max);
	char *have = str_printf("%d", got);
	arg_error(out, e, NULL, want ? want : "?", have ? have : "?");
	free(want);
	free(have);
	return -1;
}

/* A whole number in [lo, hi]; -1 and the message otherwise. */
int cmd_read_whole(const char *w, long lo, long hi, long *v, CmdOut *out, const CmdEntry *e, const char *name)
{
	char *end;

	errno = 0;
	*v = strtol(w, &end, 10);
	if (end == w || *end != '\0' || errno != 0 || *v < lo || *v > hi) {
		char *want = str_printf(_("a whole number from %ld to %ld"), lo, hi);
		word_error(out, e, name, want ? want : "?", w);
		free(want);
		return -1;
	}
	return 0;
}

/* A finite number. */
static int read_number(const char *w, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(w, &end);
	return end == w || *end != '\0' || errno == ERANGE || !isfinite(*v) ? -1 : 0;
}

/* A matrix by name, present in the layer shown; -1 with the message otherwise. */
static int parse_matrix(const Session *s, const char *name, CmdOut *out)
{
	int w = matrix_find(name);

	if (w < 0) {
		StrBuf list = { 0 };
		int i;
		for (i = 0; i < AM_COUNT; i++)
			if (attn_has(s->attn, (AttnMatrix)i, 0))
				strbuf_printf(&list, "%s%s", list.len ? " " : "", matrix_name((AttnMatrix)i));
		cmd_say(out, MSG_ERROR, NULL, _("unknown matrix: %s (this lesson has: %s)"), name, list.s ? list.s : "");
		free(list.s);
		return -1;
	}
	if (!attn_has(s->attn, (AttnMatrix)w, 0)) {
		cmd_say(out, MSG_ERROR, NULL, _("%s is not part of this lesson"), matrix_name((AttnMatrix)w));
		return -1;
	}
	return w;
}

/* A stage of the lesson shown; -1 with a typo's one name, or the lesson's stages. */
static int parse_stage(const Session *s, const char *word, CmdOut *out)
{
	int st = stage_lookup(&s->attn->shape, word);

	if (st >= 0)
		return st;
	/* a typo gets the one name it meant (a message that fits one line); else the lesson's stages */
	const char *names[STAGE_COUNT];
	int n = 0;
	for (int i = 0; i < STAGE_COUNT; i++)
		if (stage_present(&s->attn->shape, (Stage)i))
			names[n++] = stage_kinds[i].name;
	JrHint hint = jr_did_you_mean(word, names, n);
	if (hint.s[0] != '\0') {
		cmd_say(out, MSG_ERROR, NULL, _("unknown stage: %.40s%s"), word, hint.s);
		return -1;
	}
	char *list = stage_list(&s->attn->shape);
	cmd_say(out, MSG_ERROR, NULL, _("unknown stage: %s (this lesson's stages: %s)"), word, list ? list : "?");
	free(list);
	return -1;
}

/* The index of word among choices ("causal|none|window"), or -1. */
static int choice_index(const char *choices, const char *word)
{
	const size_t len = strlen(word);
	int i = 0;

	for (const char *p = choices; p != NULL && *p != '\0'; i++) {
		const size_t n = strcspn(p, "|");
		if (n == len && strncmp(p, word, len) == 0)
			return i;
		p += n + (p[n] == '|');
	}
	return -1;
}

/* "causal, none, window or padding" from "causal|none|window|padding" (heap). */
static char *choice_list(const char *choices)
{
	StrBuf b = { 0 };
	const char *last = strrchr(choices, '|');

	for (const char *p = choices; *p != '\0';) {
		const size_t n = strcspn(p, "|");
		strbuf_printf(&b, "%s%.*s", p == choices ? "" : p == last + 1 ? _(" or ") : ", ", (int)n, p);
		p += n + (p[n] == '|');
	}
	return b.oom ? (free(b.s), NULL) : b.s;
}

/*
 * A cell of a given matrix: "W_q[0][1]" (one word) or "W_q 0 1" (three).
 * Returns the words it took, or -1 with the message.
 */
static int parse_cell(const Session *s, char **words, int nwords, CmdVal *v, CmdOut *out, const CmdEntry *e)
{
	char name[32], rowbuf[24], colbuf[24];
	const char *p = words[0], *br = strchr(p, '['), *rs, *cs;
	int took, w;
	long row, col;
	const Mat *m;

	if (br != NULL) {
		const char *close1 = strchr(br, ']');
		const char *br2 = close1 ? strchr(close1, '[') : NULL;
		const char *close2 = br2 ? strchr(br2, ']') : NULL;
		if (close2 == NULL || close2[1] != '\0' || (size_t)(br - p) >= sizeof name ||
		    (size_t)(close1 - br) >= sizeof rowbuf || (size_t)(close2 - br2) >= sizeof colbuf)
			return word_error(out, e, NULL, _("a cell MATRIX[ROW][COL]"), p);
		snprintf(name, sizeof name, "%.*s", (int)(br - p), p);
		snprintf(rowbuf, sizeof rowbuf, "%.*s", (int)(close1 - br - 1), br + 1);
		snprintf(colbuf, sizeof colbuf, "%.*s", (int)(close2 - br2 - 1), br2 + 1);
		rs = rowbuf;
		cs = colbuf;
		took = 1;
	} else {
		if (strlen(p) >= sizeof name)
			return word_error(out, e, NULL, _("a cell MATRIX[ROW][COL]"), p);
		if (nwords < 3)
			return -2; /* the count is wrong: the caller says so */
		snprintf(name, sizeof name, "%s", p);
		rs = words[1];
		cs = words[2];
		took = 3;
	}
	if ((w = parse_matrix(s, name, out)) < 0)
		return -1;
	if (!matrix_editable((AttnMatrix)w)) {
		cmd_say(out, MSG_ERROR, NULL, _("%s is computed, not given: edit an input or a weight (input, W_q, W_k, W_v, W_o%s)"),
		    matrix_name((AttnMatrix)w), s->lesson->cfg.has_source ? ", source_input" : "");
		return -1;
	}
	m = attn_matrix(s->attn, (AttnMatrix)w, 0);
	if (m == NULL) {
		cmd_say(out, MSG_ERROR, NULL, "%s", _("out of memory"));
		return -1;
	}
	if (cmd_read_whole(rs, 0, m->rows - 1, &row, out, e, N_("row")) != 0 ||
	    cmd_read_whole(cs, 0, m->cols - 1, &col, out, e, N_("column")) != 0)
		return -1;
	v->matrix = w;
	v->row = (int)row;
	v->col = (int)col;
	return took;
}

/*
 * One word (or a cell's three) read as kind k of entry e into v; matrix is
 * the matrix named before it (-1: none), whose rows and columns a row or a
 * column counts. Returns the words taken, -1 with the message, or -2 when
 * words ran out (a cell's three).
 */
static int parse_arg(const Session *s, const CmdEntry *e, int i, char **words, int nwords, int matrix, CmdVal *v,
                     CmdOut *out)
{
	const CmdArgs *spec = &e->args;
	const CmdArg k = spec->kind[i];
	const char *name = spec->name[i], *w = words[0];

	memset(v, 0, sizeof *v);
	v->word = w;
	v->kind = k;
	switch (k) {
	case ARG_STEP:
		return cmd_read_whole(w, 1, s->nwalk, &v->whole, out, e, name) == 0 ? 1 : -1;
	case ARG_HEAD:
		return cmd_read_whole(w, 0, s->attn->heads - 1, &v->whole, out, e, name) == 0 ? 1 : -1;
	case ARG_ROW:
	case ARG_COL: {
		/* of the matrix named before (a head's own: they are all one shape), or the weights */
		const Mat *m = attn_matrix(s->attn, matrix >= 0 ? (AttnMatrix)matrix : AM_WEIGHTS, 0);
		if (m == NULL) {
			cmd_say(out, MSG_ERROR, NULL, "%s", _("out of memory"));
			return -1;
		}
		return cmd_read_whole(w, 0, (k == ARG_ROW ? m->rows : m->cols) - 1, &v->whole, out, e, name) == 0 ? 1 : -1;
	}
	case ARG_WHOLE:
		return cmd_read_whole(w, spec->lo, spec->hi, &v->whole, out, e, name) == 0 ? 1 : -1;
	case ARG_NUMBER:
		return read_number(w, &v->number) == 0 ? 1 : word_error(out, e, name, _("a finite number"), w);
	case ARG_ONOFF:
		if (strcmp(w, "on") != 0 && strcmp(w, "off") != 0)
			return word_error(out, e, name, _("on or off"), w);
		v->whole = strcmp(w, "on") == 0;
		return 1;
	case ARG_SCALE:
		if (strcmp(w, "on") == 0 || strcmp(w, "true") == 0)
			v->scale = SCALE_SQRT_DK;
		else if (strcmp(w, "off") == 0 || strcmp(w, "false") == 0)
			v->scale = SCALE_NONE;
		else if (read_number(w, &v->number) == 0)
			v->scale = SCALE_VALUE;
		else
			return word_error(out, e, name, _("on, off or a finite number"), w);
		return 1;
	case ARG_LANG:
		return strcmp(w, "en") == 0 || strcmp(w, "zh") == 0 ? 1 : word_error(out, e, name, _("en or zh"), w);
	case ARG_CHOICE:
		if ((v->whole = choice_index(spec->choices, w)) < 0) {
			char *list = choice_list(spec->choices);
			word_error(out, e, name, list ? list : "?", w);
			free(list);
			return -1;
		}
		return 1;
	case ARG_STAGE:
		return (v->stage = parse_stage(s, w, out)) >= 0 ? 1 : -1;
	case ARG_MATRIX:
		/* stats: its own words beside the matrices */
		if (spec->choices != NULL && (v->whole = choice_index(spec->choices, w)) >= 0) {
			v->matrix = -1;
			return 1;
		}
		return (v->matrix = parse_matrix(s, w, out)) >= 0 ? 1 : -1;
	case ARG_CELL:
		return parse_cell(s, words, nwords, v, out, e);
	default: /* a word, a file, a lesson, a command, a layer: the command reads it */
		return 1;
	}
}

/* Every word after the name read as its kind into a; 0, or -1 with the message. */
int cmd_parse_args(const Session *s, const CmdEntry *e, CmdArgv *a, CmdOut *out)
{
	const int nwords = a->argc - 1;
	int used = 0, matrix = -1;

	a->n = 0;
	if (nwords < e->args.min || nwords > e->args.max)
		return cmd_count_error(out, e, e->args.min, e->args.max, nwords);
	while (used < nwords && a->n < CMD_MAX_ARGS && e->args.kind[a->n] != ARG_NONE) {
		const int took = parse_arg(s, e, a->n, a->argv + 1 + used, nwords - used, matrix, &a->v[a->n], out);
		if (took == -2) /* a cell of three words without the three: "set W_q 0 1" takes four in all */
			return cmd_count_error(out, e, e->args.max, e->args.max, nwords);
		if (took < 0)
			return -1;
		used += took;
		if (a->v[a->n].kind == ARG_MATRIX)
			matrix = a->v[a->n].matrix;
		a->n++;
	}
	/* a value missing after a cell of three words: "set W_q 0 1" takes four in all */
	if (a->n < e->args.min && a->n < CMD_MAX_ARGS && e->args.kind[a->n] != ARG_NONE)
		return cmd_count_error(out, e, e->args.max, e->args.max, nwords);
	/* words no kind takes: one too many ("set W_q[0][1] 0.5 1": a cell of one word makes two in all) */
	if (used < nwords && e->args.max < CMD_MANY)
		return cmd_count_error(out, e, e->args.min, e->args.min, nwords);
	return 0;
}

