/* cmd.c: every command, one table. The TUI's `:` line, the plain REPL and demo
 * scripts all come through cmd_run(); `help` is printed from the table. */
#include "cmd/cmd.h"
#include "cmd/cmd_internal.h"
#include "base/i18n.h"
#include "engine/backward.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "inspect/explain.h"
#include "base/paths.h"
#include "app/progress.h"
#include "base/strbuf.h"
#include "base/text.h"
#include "out/export.h"
#include "lesson/lesson_write.h"
#include "base/fileio.h"
#include "base/jsonread.h"
#include "inspect/stats.h"
#include "inspect/labels.h"
#include "out/textfmt.h"
#include "out/themefile.h"

/* ------------------------------------------------------------ output */

void cmd_say(CmdOut *out, CmdMsg kind, const char *title, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = str_vprintf(fmt, ap);
	va_end(ap);
	if (s == NULL)
		return;
	/* Messages quote what was typed and what lessons say: never let a control character through. */
	if (out != NULL && out->message != NULL) {
		/* errors may have lines too: a JSON syntax error shows the line and a caret */
		char *safe = text_escape(s, kind == MSG_INFO ? "" : "\n\t");
		out->message(out->ctx, kind, title, safe ? safe : "");
		free(safe);
	}
	free(s);
}

/* Report a heap error string from the session layer and free it; returns -1. */
static int fail(CmdOut *out, char *err)
{
	cmd_say(out, MSG_ERROR, NULL, "%s", err ? err : _("out of memory"));
	free(err);
	return -1;
}

/* A text composed in b, shown under title and freed (out of memory: the error instead). */
static int say_text(CmdOut *out, const char *title, StrBuf *b)
{
	if (b->oom) {
		free(b->s);
		return fail(out, NULL);
	}
	cmd_say(out, MSG_TEXT, title, "%s", b->s ? b->s : "");
	free(b->s);
	return 0;
}

/* ------------------------------------------------------------ moving */

static int cmd_next(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL, *said = NULL;
	(void)a;
	/* past an open question a person is asked once, then it counts as skipped; a script moves on */
	if (!out->interactive)
		return session_next(s, &err) == 0 ? 0 : fail(out, err);
	if (session_next_asking(s, &said, &err) < 0)
		return fail(out, err);
	if (said != NULL)
		cmd_say(out, MSG_INFO, NULL, "%s", said);
	free(said);
	return 0;
}

static int cmd_prev(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL;
	(void)a;
	return session_prev(s, &err) == 0 ? 0 : fail(out, err);
}

static int cmd_first(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL;
	(void)a;
	return session_goto_step(s, 0, &err) == 0 ? 0 : fail(out, err);
}

static int cmd_last(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL;
	(void)a;
	return session_goto_step(s, s->nwalk - 1, &err) == 0 ? 0 : fail(out, err);
}

static int cmd_step(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL;
	return session_goto_step(s, (int)a->v[0].whole - 1, &err) == 0 ? 0 : fail(out, err);
}

static int cmd_goto(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL;
	return session_goto_stage(s, (Stage)a->v[0].stage, &err) == 0 ? 0 : fail(out, err);
}

static int cmd_layer(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL;
	const int k = session_layer_lookup(s, a->argv[1], &err);
	if (k < 0)
		return fail(out, err);
	return session_set_layer(s, k, &err) == 0 ? 0 : fail(out, err);
}

static int cmd_head(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL;
	return session_set_head(s, (int)a->v[0].whole, &err) == 0 ? 0 : fail(out, err);
}

/* ------------------------------------------------------------ lessons */

static int cmd_load(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL, *warn = NULL;
	if (session_load(s, a->argv[1], &err, &warn) != 0) {
		free(warn);
		return fail(out, err);
	}
	if (warn != NULL)
		cmd_say(out, MSG_TEXT, _("warnings"), "%s", warn);
	free(warn);
	{
		char *title = text_escape(session_text(s, &s->lesson->title), "");
		cmd_say(out, MSG_INFO, NULL, _("loaded %s: %s"), s->source, title ? title : "");
		free(title);
	}
	return 0;
}

static int cmd_reload(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *source = s->source ? strdup(s->source) : NULL, *err = NULL, *warn = NULL;
	(void)a;
	if (s->source != NULL && source == NULL)
		return fail(out, NULL);
	if (session_load(s, source, &err, &warn) != 0) {
		free(source);
		free(warn);
		return fail(out, err);
	}
	free(warn); /* said when the lesson was first loaded */
	cmd_say(out, MSG_INFO, NULL, _("reloaded %s"), source ? source : _("the built-in lesson"));
	free(source);
	return 0;
}

/* The teaching order (session_lesson_order); other lesson files follow alphabetically. */
static int order_of(const char *name)
{
	int i;
	for (i = 0; session_lesson_order[i] != NULL; i++)
		if (strcmp(session_lesson_order[i], name) == 0)
			return i;
	return i;
}

static int compare_names(const void *x, const void *y)
{
	const char *a = *(const char *const *)x, *b = *(const char *const *)y;
	int oa = order_of(a), ob = order_of(b);
	return oa != ob ? oa - ob : strcmp(a, b);
}

/*
 * The title of a lesson file, read cheaply (no computation) with the JSON
 * kit the loader reads lessons with; heap string, or NULL when the file is
 * not a lesson one can read (the list then says so).
 */
static char *lesson_title(const char *path, const char *lang)
{
	/* fileio: a FIFO named x.json must not hang `lessons` */
	char *err = NULL, *title = NULL;
	size_t len;
	char *buf = fileio_read_all(path, LESSON_MAX_BYTES, &len, &err);
	cJSON *root = buf != NULL ? jr_parse(path, buf, len, 1, _("lesson"), "{\"attnviz\": 1, …}", &err) : NULL;
	const cJSON *t = jr_get(root, "title");

	free(err);
	if (cJSON_IsObject(t)) {
		const cJSON *v = jr_get(t, lang);
		t = cJSON_IsString(v) ? v : jr_get(t, "en");
	}
	if (cJSON_IsString(t))
		title = text_escape(t->valuestring, "");
	cJSON_Delete(root);
	free(buf);
	return title;
}

/* Names (without .json) of the lessons in the first search directory that has any. */
static int list_lessons(char ***names, const char **dir_out)
{
	const char *dirs[PATHS_MAX];
	int i, count = 0, n = paths_search("ATTNVIZ_LESSONS", "lessons", "lessons", dirs);

	*names = NULL;
	for (i = 0; i < n && count == 0; i++) {
		DIR *d;
		struct dirent *e;
		if ((d = opendir(dirs[i])) == NULL)
			continue;
		while ((e = readdir(d)) != NULL) {
			size_t len = strlen(e->d_name);
			char **grown;
			if (len <= 5 || strcmp(e->d_name + len - 5, ".json") != 0 || e->d_name[0] == '.')
				continue;
			grown = realloc(*names, (size_t)(count + 1) * sizeof **names);
			if (grown == NULL)
				break;
			*names = grown;
			(*names)[count++] = strndup(e->d_name, len - 5);
		}
		closedir(d);
		*dir_out = dirs[i];
	}
	if (count > 1)
		qsort(*names, (size_t)count, sizeof **names, compare_names);
	return count;
}

static int cmd_lessons(Session *s, const CmdArgv *a, CmdOut *out)
{
	char **names;
	const char *dir = NULL;
	int i, count = list_lessons(&names, &dir);
	StrBuf text = { 0 };
	(void)a;

	if (count == 0) {
		free(names);
		cmd_say(out, MSG_ERROR, NULL, _("no lessons found (looked in $ATTNVIZ_LESSONS, ./lessons, beside the program and in %s/lessons)"),
		    ATTNVIZ_SHARE);
		return -1;
	}
	/* the learner's progress beside each: ✓ finished, ▶ here, the step and the quiz score */
	char *ppath = progress_default_path(), *warn = NULL, here[PROGRESS_NAME_MAX];
	Progress prog;
	progress_load(&prog, ppath, &warn);
	free(ppath);
	if (warn != NULL)
		cmd_say(out, MSG_ERROR, NULL, "%s", warn);
	free(warn);
	if (session_lesson_name(s, here, sizeof here) != 0)
		here[0] = '\0';
	for (i = 0; i < count; i++) {
		char *path = str_printf("%s/%s.json", dir, names[i]);
		char *title = path != NULL ? lesson_title(path, s->lang) : NULL;
		char *name = text_escape(names[i], ""), mark[8], score[40];
		progress_marks(&prog, names[i], here, out->utf8, mark, score);
		strbuf_printf(&text, "%s %2d. %-11s %s%s%s\n", mark, i + 1, name ? name : "", title ? title : "(unreadable)",
		              score[0] ? "  " : "", score);
		free(name);
		free(title);
		free(path);
		free(names[i]);
	}
	free(names);
	progress_free(&prog);
	return say_text(out, out->utf8 ? _("lessons (load NAME; \u2713 finished, \u25b6 here)") : _("lessons (load NAME; + finished, > here)"),
	                &text);
}

/* Where the learner left off (progress.h): that lesson, at that step. */
static int cmd_continue(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *ppath = progress_default_path(), *warn = NULL, *err = NULL, here[PROGRESS_NAME_MAX];
	Progress prog;
	int rc = 0;
	(void)a;

	progress_load(&prog, ppath, &warn);
	free(ppath);
	if (warn != NULL)
		cmd_say(out, MSG_ERROR, NULL, "%s", warn);
	free(warn);
	const ProgressLesson *e = prog.last[0] != '\0' ? progress_find(&prog, prog.last) : NULL;
	if (e == NULL) {
		progress_free(&prog);
		cmd_say(out, MSG_INFO, NULL, _("nothing to continue yet: this is the start (lessons lists the course)"));
		return 0;
	}
	if (session_lesson_name(s, here, sizeof here) != 0 || strcmp(here, e->name) != 0) {
		char *lwarn = NULL;
		/* progress.json is a file anyone may have written: only a lesson of the course is loaded from it */
		if (session_lesson_index(e->name) < 0) {
			char *name = text_escape(e->name, "");
			cmd_say(out, MSG_ERROR, NULL, _("continue: %s is not a lesson of the course; open it with load FILE"),
			    name ? name : "");
			free(name);
			progress_free(&prog);
			return -1;
		}
		rc = session_load(s, e->name, &err, &lwarn);
		free(lwarn);
	}
	if (rc == 0 && e->step > 0 && e->step < s->nwalk)
		rc = session_goto_step(s, e->step, &err);
	if (rc == 0) {
		char *name = text_escape(e->name, "");
		cmd_say(out, MSG_INFO, NULL, _("back in %s at step %d of %d"), name ? name : "", s->step + 1, s->nwalk);
		free(name);
	}
	progress_free(&prog);
	return rc == 0 ? 0 : fail(out, err);
}

/* ------------------------------------------------------------ looking */

/* While a question is open, the matrix that answers it stays hidden. */
static int hidden(const Session *s, int which, CmdOut *out)
{
	char how[32];

	if (which >= 0 && session_hides(s, which, s->head)) {
		cmd_say(out, MSG_ERROR, NULL, _("%s stays hidden until you answer the question (%s, skip, hint)"),
		    matrix_name((AttnMatrix)which), session_quiz_usage(s, how, sizeof how));
		return 1;
	}
	return 0;
}

/* The head a command names (its value i), else the one shown. */
static int head_arg(const Session *s, const CmdArgv *a, int i)
{
	return a->n > i ? (int)a->v[i].whole : s->head;
}

static int cmd_show(Session *s, const CmdArgv *a, CmdOut *out)
{
	const int w = a->v[0].matrix;

	if (hidden(s, w, out))
		return -1;
	if (out->show != NULL)
		out->show(out->ctx, (AttnMatrix)w, head_arg(s, a, 1));
	return 0;
}

static int cmd_explain(Session *s, const CmdArgv *a, CmdOut *out)
{
	const int w = a->v[0].matrix;
	char *text, *err = NULL;

	if (hidden(s, w, out))
		return -1;
	text = explain_cell(s->attn, (AttnMatrix)w, head_arg(s, a, 3), (int)a->v[1].whole, (int)a->v[2].whole, out->utf8, &err);
	if (text == NULL)
		return fail(out, err);
	cmd_say(out, MSG_TEXT, _("explain"), "%s", text);
	free(text);
	return 0;
}

static int cmd_lang(Session *s, const CmdArgv *a, CmdOut *out)
{
	strcpy(s->lang, a->argv[1]);
	s->dirty |= DIRTY_LANG;
	if (i18n_set_lang(a->argv[1]))
		cmd_say(out, MSG_INFO, NULL, "%s", _("language: English"));
	else if (out->interactive && !out->utf8) /* a terminal that shows ASCII only: session_screen_text */
		cmd_say(out, MSG_INFO, NULL, "%s", _("Chinese needs a UTF-8 terminal (LANG=zh_CN.UTF-8): narration in English"));
	else /* a file or a pipe keeps the narration as it is */
		cmd_say(out, MSG_INFO, NULL, "%s", _("narration in Chinese; the program's own words stay English (the terminal is not UTF-8)"));
	return 0;
}

/* ------------------------------------------------------------ edits */

/* set MATRIX[ROW][COL] VALUE: the numbers of one given matrix (app/session.h: session_set_cell). */
static int cmd_set(Session *s, const CmdArgv *a, CmdOut *out)
{
	const CmdVal *c = &a->v[0];
	char *err = NULL;

	if (session_set_cell(s, (AttnMatrix)c->matrix, c->row, c->col, a->v[1].number, &err) != 0)
		return fail(out, err);
	cmd_say(out, MSG_INFO, NULL, _("%s[%ld][%ld] = %s; everything after it is recomputed"), matrix_name((AttnMatrix)c->matrix),
	    (long)c->row, (long)c->col, a->v[1].word);
	return 0;
}

/* The padding mask's words ("1,1,0" or "1 1 0", from word 2 on) into a 1 × m row; -1 with the message. */
static int read_padding(const CmdArgv *a, int m, Mat *padding, CmdOut *out)
{
	/* every value counted, whatever the count, before any is kept */
	int i, j = 0, bad = 0;

	if (mat_alloc(padding, 1, m) != 0)
		return fail(out, NULL);
	for (i = 2; i < a->argc; i++) {
		const char *p = a->argv[i];
		while (*p != '\0') {
			size_t len = strcspn(p, ",");
			if (len > 0) {
				if (len != 1 || (p[0] != '0' && p[0] != '1'))
					bad = 1;
				else if (j < m)
					padding->a[j] = p[0] == '1';
				j++;
			}
			p += len + (p[len] == ',');
		}
	}
	if (!bad && j == m)
		return 0;
	mat_free(padding);
	if (bad)
		cmd_say(out, MSG_ERROR, NULL, _("mask padding: each value is 0 or 1 (1 = may attend), e.g. mask padding %s"),
		    m >= 3 ? "1,1,0" : "1,0");
	else
		cmd_say(out, MSG_ERROR, NULL, _("mask padding: expected %d values (one per key), got %d"), m, j);
	return -1;
}

/* mask none|causal|window W|padding 1,1,0: the mask of the layer shown (session_set_mask). */
static int cmd_mask(Session *s, const CmdArgv *a, CmdOut *out)
{
	/* the words each kind takes after its name: none and causal none, a window one, padding any */
	static const MaskKind kinds[] = { MASK_CAUSAL, MASK_NONE, MASK_WINDOW, MASK_PADDING };
	static const int words[][2] = { { 1, 1 }, { 1, 1 }, { 2, 2 }, { 2, CMD_MANY } };
	const int k = (int)a->v[0].whole;
	Mat padding = { 0, 0, NULL };
	char *err = NULL;
	long window = 0;

	if (a->argc - 1 < words[k][0] || a->argc - 1 > words[k][1])
		return cmd_count_error(out, a->entry, words[k][0], words[k][1], a->argc - 1);
	if (kinds[k] == MASK_WINDOW &&
	    cmd_read_whole(a->argv[2], 1, LESSON_MAX_TOKENS, &window, out, a->entry, N_("window: the keys a query sees, itself included")) != 0)
		return -1;
	/* the keys of the attention shown */
	if (kinds[k] == MASK_PADDING && read_padding(a, attn_config(s->attn)->m, &padding, out) != 0)
		return -1;
	if (session_set_mask(s, kinds[k], (int)window, &padding, &err) != 0) {
		mat_free(&padding);
		return fail(out, err);
	}
	mat_free(&padding);
	if (kinds[k] == MASK_WINDOW)
		cmd_say(out, MSG_INFO, NULL, _("mask is now a window of %d (each query sees at most the last %d tokens, itself included)"),
		    (int)window, (int)window);
	else
		cmd_say(out, MSG_INFO, NULL, _("mask is now %s"), a->argv[1]);
	return 0;
}

/*
 * jacobian ROW [HEAD]: softmax's Jacobian for one row of the weights,
 * J = diag(w) − w wᵀ (∂w_j/∂s_k): w_j(1 − w_j) on the diagonal, −w_j w_k off it;
 * every row sums to 0, since the weights always sum to 1.
 */
static int cmd_jacobian(Session *s, const CmdArgv *a, CmdOut *out)
{
	const Attn *at = s->attn;
	const int m = attn_config(at)->m, head = head_arg(s, a, 1);
	const long row = a->v[0].whole;
	StrBuf b = { 0 };
	const double *w;

	if (session_quiz_pending(s) && session_hidden_matrix(s) == AM_WEIGHTS) {
		cmd_say(out, MSG_ERROR, NULL, _("jacobian: answer this step's question first (it asks about the weights)"));
		return -1;
	}
	w = &at->head[head].weights.a[(size_t)row * (size_t)m];
	strbuf_printf(&b, _("J = diag(w) %s w w%s for row %ld: J_jk = %s w_j/%s s_k\n"), out->utf8 ? "\u2212" : "-",
	              out->utf8 ? "\u1d40" : "^T", row, out->utf8 ? "\u2202" : "d", out->utf8 ? "\u2202" : "d");
	for (int j = 0; j < m; j++) {
		double sum = 0.0;
		char *lab = labels_col(at, AM_WEIGHTS, j);
		strbuf_printf(&b, "%-8.8s", lab ? lab : "?");
		free(lab);
		for (int k = 0; k < m; k++) {
			const double x = (j == k ? w[j] : 0.0) - w[j] * w[k];
			sum += x;
			strbuf_printf(&b, " %9.4f", x);
		}
		strbuf_printf(&b, "   %s %.3g\n", out->utf8 ? "\u03a3" : "sum", sum);
	}
	strbuf_printf(&b, _("the diagonal is w(1 %s w): at most 0.25, and near 0 when a weight is near 0 or 1\n"),
	              out->utf8 ? "\u2212" : "-");
	return say_text(out, "jacobian", &b);
}

/* train STEPS [LR]: STEPS steps of gradient descent on every weight and bias; `reload` undoes it. */
static int cmd_train(Session *s, const CmdArgv *a, CmdOut *out)
{
	static const char *const bars[] = { "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588" };
	const int steps = (int)a->v[0].whole;
	const double lr = a->n > 1 ? a->v[1].number : 0.1;
	StrBuf curve = { 0 };
	char *err = NULL;
	double lo, hi, *losses;

	if (!(lr > 0)) {
		cmd_say(out, MSG_ERROR, NULL, _("train: the learning rate must be > 0, got %s"), a->argv[2]);
		return -1;
	}
	losses = calloc((size_t)steps + 1, sizeof *losses);
	if (losses == NULL)
		return fail(out, NULL);
	if (session_train(s, steps, lr, losses, &err) != 0) {
		free(losses);
		return fail(out, err);
	}
	/* the loss curve, a bar a step (at most 60, sampled), from its lowest to its highest */
	lo = hi = losses[0];
	for (int i = 0; i <= steps; i++) {
		lo = losses[i] < lo ? losses[i] : lo;
		hi = losses[i] > hi ? losses[i] : hi;
	}
	for (int k = 0, n = steps + 1 < 60 ? steps + 1 : 60; k < n; k++) {
		const double x = losses[(size_t)k * (size_t)steps / (size_t)(n > 1 ? n - 1 : 1)];
		const int b = text_bar_level(x, lo, hi, 8); /* 0 … 7 whatever the losses (no overflow, no NaN) */
		strbuf_printf(&curve, "%s", out->utf8 ? bars[b] : (const char *[]){ "_", ".", "-", "~", "=", "+", "*", "#" }[b]);
	}
	cmd_say(out, MSG_INFO, NULL,
	    ngettext("trained %d step at lr %g: loss %.6g %s %.6g  %s  (reload undoes it)",
	             "trained %d steps at lr %g: loss %.6g %s %.6g  %s  (reload undoes it)", (unsigned long)steps),
	    steps, lr, losses[0], out->utf8 ? "\u2192" : "->", losses[steps], curve.s ? curve.s : "");
	free(curve.s);
	free(losses);
	return 0;
}

static int cmd_scale(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL;

	if (session_set_scale(s, a->v[0].scale, a->v[0].number, &err) != 0)
		return fail(out, err);
	cmd_say(out, MSG_INFO, NULL, _("scale factor is now %.6g"), s->attn->factor);
	return 0;
}

/* decode on|off: the lesson's tokens one at a time with a KV cache (session_set_decode), the decode stage shown. */
static int cmd_decode(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL;

	if (session_set_decode(s, (int)a->v[0].whole, &err) != 0)
		return fail(out, err);
	if (a->v[0].whole)
		cmd_say(out, MSG_INFO, NULL, _("decode on: each of the %d tokens computed in turn with a KV cache "
		                               "(:goto decode walks them; n moves to the next token)"), s->lesson->cfg.n);
	else
		cmd_say(out, MSG_INFO, NULL, "%s", _("decode off"));
	return 0;
}

/* heads N: the layer shown split into N heads (session_set_heads works out d_k and d_v). */
/*
 * heads N: the layer shown split into N heads. heads [sort SCORE]: every
 * head's scores (headscores.h), by layer and head or by SCORE, highest
 * first: the full-screen view opens its model view (out->frontend takes
 * "heads"), the plain REPL prints the table.
 */
static int cmd_heads(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *err = NULL;
	int sort = -1;

	if (a->argc >= 2 && strcmp(a->argv[1], "sort") != 0) {
		long h;
		if (a->argc > 2)
			return cmd_count_error(out, a->entry, 1, 1, a->argc - 1);
		if (cmd_read_whole(a->argv[1], 1, LESSON_MAX_HEADS, &h, out, a->entry, NULL) != 0)
			return -1;
		if (session_set_heads(s, (int)h, &err) != 0)
			return fail(out, err);
		cmd_say(out, MSG_INFO, NULL, ngettext("%d head: d_k = %d, d_v = %d", "%d heads: d_k = %d, d_v = %d", (unsigned long)h),
		    (int)h, attn_params(s->attn)->d_k, attn_params(s->attn)->d_v);
		return 0;
	}
	if (a->argc == 2) {
		cmd_say(out, MSG_ERROR, NULL, _("heads sort: expected %s after it (usage: %s)"), "prev, first, diag, induction",
		    a->entry->usage);
		return -1;
	}
	if (a->argc == 3)
		sort = (int)a->v[1].whole;
	/* the thumbnails and the scores are the weights: an open question about them keeps them hidden */
	if (hidden(s, AM_WEIGHTS, out))
		return -1;
	if (session_induction(s, &err) != 0) /* a model's induction scores: its run on random tokens repeated twice */
		return fail(out, err);
	if (out->frontend != NULL && out->frontend(out->ctx, "heads", a->argc, a->argv))
		return 0;
	char *text = textfmt_heads(s, sort, out->utf8);
	if (text == NULL)
		return fail(out, NULL);
	cmd_say(out, MSG_TEXT, sort >= 0 ? _("every head's scores, highest first") : _("every head's scores"), "%s", text);
	free(text);
	return 0;
}

/* temp T, topk K, nextrow ROW: the LM head's next-token settings; only the next stage is computed again. */
static int next_setting(Session *s, double temperature, int top_k, int row, CmdOut *out)
{
	char *err = NULL;
	const ModelConfig *c = &s->lesson->cfg;

	if (session_set_next(s, temperature, top_k, row, &err) != 0)
		return fail(out, err);
	cmd_say(out, MSG_INFO, NULL, _("next token after position %d: temperature %.6g, the top %d shown"), c->logits_row,
	        c->temperature, c->top_k);
	return 0;
}

static int cmd_temp(Session *s, const CmdArgv *a, CmdOut *out)
{
	if (!(a->v[0].number > 0))
		return fail(out, str_printf(_("the temperature must be a number > 0 (the logits are divided by it)")));
	return next_setting(s, a->v[0].number, -1, -1, out);
}

static int cmd_topk(Session *s, const CmdArgv *a, CmdOut *out)
{
	return next_setting(s, -1, (int)a->v[0].whole, -1, out);
}

static int cmd_nextrow(Session *s, const CmdArgv *a, CmdOut *out)
{
	return next_setting(s, -1, -1, (int)a->v[0].whole, out);
}

/* ------------------------------------------------------------ quizzes */

static int cmd_answer(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *feedback = NULL, *err = NULL;
	const int rc = session_answer(s, a->argv[1], &feedback, &err);

	if (rc < 0)
		return fail(out, err);
	cmd_say(out, MSG_INFO, NULL, _("%s  (score %d/%d)"), feedback ? feedback : "", s->quiz_right, s->quiz_asked);
	free(feedback);
	return 0;
}

static int cmd_skip(Session *s, const CmdArgv *a, CmdOut *out)
{
	char *feedback = NULL, *err = NULL;
	(void)a;
	if (session_skip(s, &feedback, &err) != 0)
		return fail(out, err);
	cmd_say(out, MSG_INFO, NULL, "%s", feedback ? feedback : _("skipped"));
	free(feedback);
	return 0;
}

static int cmd_hint(Session *s, const CmdArgv *a, CmdOut *out)
{
	const Step *st = session_step(s);
	char *hint;
	(void)a;
	if (!st->has_quiz) {
		cmd_say(out, MSG_ERROR, NULL, _("no question on this step"));
		return -1;
	}
	if (text_empty(&st->quiz.hint)) {
		cmd_say(out, MSG_INFO, NULL, _("no hint for this question"));
		return 0;
	}
	hint = text_escape(session_text(s, &st->quiz.hint), "\n\t");
	cmd_say(out, MSG_TEXT, _("hint"), "%s", hint ? hint : "");
	free(hint);
	return 0;
}

/* ------------------------------------------------------------ compare and stats */

static int cmd_compare(Session *s, const CmdArgv *a, CmdOut *out)
{
	if (s->compare_attn == NULL) {
		cmd_say(out, MSG_ERROR, NULL, _("this lesson has no compare variant"));
		return -1;
	}
	s->compare_on = (int)a->v[0].whole;
	s->dirty |= DIRTY_PLACE;
	if (s->compare_on) {
		char *label = text_escape(session_text(s, &s->lesson->compare_label), "");
		cmd_say(out, MSG_INFO, NULL, _("compare on: each stage's result is shown beside the variant \"%s\", differing cells marked *"),
		    label && label[0] ? label : "compare");
		free(label);
	} else
		cmd_say(out, MSG_INFO, NULL, _("compare off"));
	return 0;
}

/* "mean 2.5  std 1.2  min 0  max 5 (9 finite of 9 cells)" of m, then a newline. */
static void stats_line(StrBuf *b, const Mat *m)
{
	MatStats st;
	stats_matrix(m, &st);
	strbuf_printf(b, _("mean %.6g  std %.6g  min %.6g  max %.6g  (%zu finite of %d cells)\n"), st.mean, st.std, st.min,
	              st.max, st.finite, m->rows * m->cols);
}

/*
 * The row sums, one line a row; past STATS_ROWS_LISTED rows, a run of rows
 * with the same sum is one line ("rows 0-122 (t0 … t122)  1"), so a large
 * lesson's weights say 1 once rather than 123 times.
 */
#define STATS_ROWS_LISTED 16
static void row_sum_lines(StrBuf *text, const Attn *a, AttnMatrix w, const double *sums, int rows, int utf8)
{
	for (int i = 0, j; i < rows; i = j) {
		char a_num[32], b_num[32];
		snprintf(a_num, sizeof a_num, "%.6g", sums[i]);
		for (j = i + 1; rows > STATS_ROWS_LISTED && j < rows; j++) {
			snprintf(b_num, sizeof b_num, "%.6g", sums[j]);
			if (strcmp(a_num, b_num) != 0)
				break;
		}
		if (rows <= STATS_ROWS_LISTED)
			j = i + 1;
		char *first = labels_row(a, w, i), *last = j - 1 > i ? labels_row(a, w, j - 1) : NULL;
		if (last != NULL)
			strbuf_printf(text, _("  rows %d-%d (%.40s %s %.40s)  %s\n"), i, j - 1, first ? first : "",
			              utf8 ? "\u2026" : "...", last, a_num);
		else
			strbuf_printf(text, "  %d %.40s  %s\n", i, first ? first : "", a_num);
		free(first);
		free(last);
	}
}

static int cmd_stats(Session *s, const CmdArgv *a, CmdOut *out)
{
	const Lesson *l = s->lesson;
	StrBuf text = { 0 }, title = { 0 };
	const Mat *m;
	char *t;
	const int w = a->v[0].matrix, head = head_arg(s, a, 1);

	/* params and cache take no head */
	if (w < 0 && a->argc > 2)
		return cmd_count_error(out, a->entry, 1, 1, a->argc - 1);
	if (w < 0 && a->v[0].whole == 0) { /* params */
		/* the count is hidden where a question on the project or output stage may ask for it */
		if (session_quiz_pending(s) && (stage_kinds[s->stage].flags & SF_PARAMS)) {
			cmd_say(out, MSG_ERROR, NULL, _("the parameter count stays hidden until you answer the question (answer VALUE, skip, hint)"));
			return -1;
		}
		t = labels_params(attn_config(s->attn), attn_params(s->attn), out->utf8);
		if (t == NULL)
			return fail(out, NULL);
		cmd_say(out, MSG_INFO, NULL, "%s", t);
		free(t);
		return 0;
	}
	if (w < 0) { /* cache */
		if (!(s->attn->shape.features & FEAT_DECODE) && !(s->attn->shape.features & FEAT_GQA))
			cmd_say(out, MSG_INFO, NULL, _("this lesson does not decode with a KV cache; were it to:"));
		t = textfmt_cache_lines(s, out->utf8);
		if (t == NULL)
			return fail(out, NULL);
		strbuf_puts(&text, t);
		free(t);
		return say_text(out, _("stats: the KV cache"), &text);
	}
	if (hidden(s, w, out))
		return -1;
	m = attn_matrix(s->attn, (AttnMatrix)w, head);
	stats_line(&text, m);
	if (matrix_kinds[w].flags & MF_GRAD) {
		/* how big a gradient is: "the gradient vanishes" is this number */
		double norm = 0.0, largest = 0.0;
		for (size_t k = 0; k < (size_t)m->rows * (size_t)m->cols; k++) {
			norm += m->a[k] * m->a[k];
			largest = fabs(m->a[k]) > largest ? fabs(m->a[k]) : largest;
		}
		strbuf_printf(&text, _("norm %.6g  largest |entry| %.6g\n"), sqrt(norm), largest);
	}
	if (s->compare_on && s->compare_attn != NULL) {
		const Mat *c = attn_matrix(s->compare_attn, (AttnMatrix)w, head < s->compare_attn->heads ? head : 0);
		char *label = text_escape(session_text(s, &l->compare_label), "");
		if (c != NULL) {
			strbuf_printf(&text, _("compare (%s): "), label && label[0] ? label : _("variant"));
			stats_line(&text, c);
		}
		free(label);
	}
	if (matrix_kinds[w].flags & MF_SUMS) {
		double *sums = malloc((size_t)m->rows * sizeof *sums);
		if (sums == NULL)
			text.oom = 1;
		else {
			stats_row_sums(m, sums);
			strbuf_puts(&text, _("row sums (1, or 0 for a row with no visible key):\n"));
			row_sum_lines(&text, s->attn, (AttnMatrix)w, sums, m->rows, out->utf8);
		}
		free(sums);
	}
	strbuf_printf(&title, _("stats: %s"), matrix_name((AttnMatrix)w));
	if (matrix_per_head((AttnMatrix)w) && s->attn->heads > 1)
		strbuf_printf(&title, _(" (head %d)"), head);
	if (title.oom) {
		free(text.s);
		free(title.s);
		return fail(out, NULL);
	}
	say_text(out, title.s, &text);
	free(title.s);
	return 0;
}

/* ------------------------------------------------------------ files out */

/* PATH for export and save: a file; "-" would write into the screen. */
static int check_out_path(const char *path, const char *cmd, CmdOut *out)
{
	if (path[0] == '\0' || strcmp(path, "-") == 0) {
		cmd_say(out, MSG_ERROR, NULL, _("%s: give a file name to write (attnviz --export … -o - prints to stdout)"), cmd);
		return -1;
	}
	return 0;
}

/* export FORMAT [MATRIX|STAGE] PATH: the current stage (or the one named) as a figure or table. */
static int cmd_export(Session *s, const CmdArgv *a, CmdOut *out)
{
	const char *path = a->argv[a->argc - 1];
	char *err = NULL, *data, *safe;
	ExportTarget t;
	int fmt = export_format_find(a->argv[1]);

	if (fmt < 0) {
		safe = text_escape(a->argv[1], "");
		cmd_say(out, MSG_ERROR, NULL, _("export: unknown format \"%s\" (svg, csv, md, tex, json)"), safe ? safe : "");
		free(safe);
		return -1;
	}
	if (check_out_path(path, "export", out) != 0)
		return -1;
	if (export_target_parse(s->attn, a->argc == 4 ? a->argv[2] : NULL, s->stage, s->head, &t, &err) != 0)
		return fail(out, err);
	/* An open question's answer is not written out either. */
	if (hidden(s, !t.whole_stage ? (int)t.matrix : t.stage == s->stage ? session_hidden_matrix(s) : -1, out))
		return -1;
	data = export_render(s->attn, s, (ExportFormat)fmt, &t, themefile_current(), &err);
	if (data == NULL)
		return fail(out, err);
	if (fileio_write_atomic(path, data, strlen(data), &err) != 0) {
		free(data);
		return fail(out, err);
	}
	free(data);
	safe = text_escape(path, "");
	if (fmt == EXPORT_CSV && t.whole_stage) {
		AttnMatrix panes[STAGE_MAX_PANES];
		int n = attn_stage_matrices(s->attn, t.stage, panes);
		cmd_say(out, MSG_INFO, NULL, _("wrote %s (the result of stage %s) as csv to %s"), matrix_name(panes[n - 1]),
		    stage_name(t.stage), safe ? safe : "");
	} else
		cmd_say(out, MSG_INFO, NULL, t.whole_stage ? _("wrote stage %s as %s to %s") : _("wrote matrix %s as %s to %s"),
		    t.whole_stage ? stage_name(t.stage) : matrix_name(t.matrix), export_format_name((ExportFormat)fmt),
		    safe ? safe : "");
	free(safe);
	return 0;
}

/* save PATH: the lesson with the learner's edits, every matrix written out (format v1). */
static int cmd_save(Session *s, const CmdArgv *a, CmdOut *out)
{
	const char *path = a->argv[1];
	char *err = NULL, *data, *safe;

	if (check_out_path(path, "save", out) != 0)
		return -1;
	data = lesson_write_json(s->lesson, &err);
	if (data == NULL)
		return fail(out, err);
	if (fileio_write_atomic(path, data, strlen(data), &err) != 0) {
		free(data);
		return fail(out, err);
	}
	free(data);
	safe = text_escape(path, "");
	cmd_say(out, MSG_INFO, NULL, _("saved the lesson with your edits to %s (attnviz %s opens it)"), safe ? safe : "",
	    safe ? safe : "");
	free(safe);
	return 0;
}

/* ------------------------------------------------------------ the rest */

static int cmd_help(Session *s, const CmdArgv *a, CmdOut *out);

static int cmd_quit(Session *s, const CmdArgv *a, CmdOut *out)
{
	(void)a;
	(void)out;
	s->quit = 1;
	return 0;
}

/*
 * The table. usage: the words after the name (UPPER = a value, [optional], a|b = one of);
 * args: how many words, and each one's kind (cmd.h), which cmd_run reads and
 * checks before exec runs. An ARG_CELL is one word or three.
 */
#define NO_ARGS { 0, 0, { ARG_NONE }, { NULL }, 0, 0, NULL }
/* clang-format off */
const CmdEntry cmd_table[] = {
	{ .name = "load", .args = { .min = 1, .max = 1, .kind = { ARG_LESSON } }, .exec = cmd_load,
	  .usage = "load FILE|NAME",
	  .help = N_("open a lesson file, or a lesson by name (see lessons)") },
	{ .name = "model", .args = { .min = 1, .max = CMD_MANY, .kind = { ARG_FILE, ARG_WORD } }, .exec = cmd_model,
	  .usage = "model DIR [TEXT]",
	  .help = N_("open a real model (a Hugging Face folder) on TEXT, or on \"The cat sat on the mat\"") },
	{ .name = "prompt", .args = { .min = 1, .max = CMD_MANY, .kind = { ARG_WORD } }, .exec = cmd_prompt,
	  .usage = "prompt TEXT",
	  .help = N_("the model on another text, through its tokenizer.json (you stay where you are)") },
	{ .name = "ids", .args = { .min = 1, .max = CMD_MANY, .kind = { ARG_WORD } }, .exec = cmd_ids,
	  .usage = "ids ID,ID,...",
	  .help = N_("the model on these token ids (a folder without a tokenizer)") },
	{ .name = "generate", .args = { .min = 1, .max = 1, .kind = { ARG_WHOLE }, .name = { NULL }, .lo = 1, .hi = 64 },
	  .exec = cmd_generate, .usage = "generate N",
	  .help = N_("append the model's N next tokens and compute again: each its most likely (greedy), or drawn from the next stage's top k at its temperature after seed S") },
	{ .name = "lens", .args = { .min = 0, .max = 2, .kind = { ARG_WORD, ARG_WORD } }, .exec = cmd_lens,
	  .usage = "lens [LAYER POSITION]",
	  .help = N_("the logit lens: each layer's output through the final norm and the unembedding, its most probable token at each position; LAYER POSITION: that cell's probabilities") },
	{ .name = "lessons", .args = NO_ARGS, .exec = cmd_lessons,
	  .usage = "lessons",
	  .help = N_("list the lessons in teaching order: titles, \u2713 finished, quiz scores, where you are") },
	{ .name = "continue", .args = NO_ARGS, .exec = cmd_continue,
	  .usage = "continue",
	  .help = N_("go back to where you left off (the lesson and step of your last run)") },
	{ .name = "reload", .args = NO_ARGS, .exec = cmd_reload,
	  .usage = "reload",
	  .help = N_("load the current lesson again from its file (drops your edits)") },
	{ .name = "next", .alias = "n", .args = NO_ARGS, .exec = cmd_next,
	  .usage = "next",
	  .help = N_("go to the next step") },
	{ .name = "prev", .alias = "p", .args = NO_ARGS, .exec = cmd_prev,
	  .usage = "prev",
	  .help = N_("go back one step") },
	{ .name = "first", .args = NO_ARGS, .exec = cmd_first,
	  .usage = "first",
	  .help = N_("go to the first step") },
	{ .name = "last", .args = NO_ARGS, .exec = cmd_last,
	  .usage = "last",
	  .help = N_("go to the last step") },
	{ .name = "step", .args = { .min = 1, .max = 1, .kind = { ARG_STEP } }, .exec = cmd_step,
	  .usage = "step N",
	  .help = N_("go to step N of the walk") },
	{ .name = "goto", .args = { .min = 1, .max = 1, .kind = { ARG_STAGE } }, .exec = cmd_goto,
	  .usage = "goto STAGE",
	  .help = N_("show a stage (help goto lists them)") },
	/* any head a lesson may have: the session says which this one has */
	{ .name = "head", .args = { .min = 1, .max = 1, .kind = { ARG_WHOLE }, .name = { NULL }, .lo = 0, .hi = LESSON_MAX_HEADS }, .exec = cmd_head,
	  .usage = "head N",
	  .help = N_("show head N (from 0)") },
	{ .name = "layer", .args = { .min = 1, .max = 1, .kind = { ARG_WORD } }, .exec = cmd_layer,
	  .usage = "layer N|eN",
	  .help = N_("show layer N (from 0) of a lesson with layers; eN: the encoder's layer N of an encoder\u2013decoder") },
	{ .name = "show", .args = { .min = 1, .max = 2, .kind = { ARG_MATRIX, ARG_HEAD }, .name = { NULL, N_("head") } }, .exec = cmd_show,
	  .usage = "show MATRIX [HEAD]",
	  .help = N_("show a matrix (e.g. show weights 1)") },
	{ .name = "explain", .alias = "ex",
	  .args = { .min = 3, .max = 4, .kind = { ARG_MATRIX, ARG_ROW, ARG_COL, ARG_HEAD }, .name = { NULL, N_("row"), N_("column"), N_("head") } },
	  .exec = cmd_explain,
	  .usage = "explain MATRIX ROW COL [HEAD]",
	  .help = N_("show the arithmetic behind one cell") },
	{ .name = "set", .args = { .min = 2, .max = 4, .kind = { ARG_CELL, ARG_NUMBER }, .name = { NULL, N_("value") } }, .exec = cmd_set,
	  .usage = "set MATRIX[ROW][COL] VALUE",
	  .help = N_("edit an input or a weight; everything after it is recomputed") },
	{ .name = "mask", .args = { .min = 1, .max = CMD_MANY, .kind = { ARG_CHOICE }, .name = { NULL }, .lo = 0, .hi = 0, .choices = "causal|none|window|padding" }, .exec = cmd_mask,
	  .usage = "mask causal|none|window W|padding 1,1,0",
	  .help = N_("change the mask") },
	{ .name = "scale", .args = { .min = 1, .max = 1, .kind = { ARG_SCALE } }, .exec = cmd_scale,
	  .usage = "scale on|off|VALUE",
	  .help = N_("scale scores by 1/sqrt(d_k) (on), 1 (off) or a number") },
	/* heads N (a whole number, read by the command) or heads [sort SCORE] */
	{ .name = "heads", .args = { .min = 0, .max = 2, .kind = { ARG_WORD, ARG_CHOICE }, .name = { NULL, N_("score") }, .lo = 0, .hi = 0, .choices = HEADSCORE_CHOICES },
	  .exec = cmd_heads,
	  .usage = "heads [N|sort SCORE]",
	  .help = N_("every head's scores (previous-token, first-token, diagonal, induction), in the view as the model view; sort SCORE: prev, first, diag or induction, highest first; N: split Q, K and V into N heads (N must divide their columns)") },
	{ .name = "temp", .args = { .min = 1, .max = 1, .kind = { ARG_NUMBER } }, .exec = cmd_temp,
	  .usage = "temp T",
	  .help = N_("the next token's temperature: softmax(logits / T) (T > 1 flatter, T < 1 sharper)") },
	{ .name = "topk", .args = { .min = 1, .max = 1, .kind = { ARG_WHOLE }, .name = { NULL }, .lo = 1, .hi = LESSON_MAX_TOP_K }, .exec = cmd_topk,
	  .usage = "topk K",
	  .help = N_("how many of the likeliest next tokens the next stage shows as bars") },
	{ .name = "nextrow", .args = { .min = 1, .max = 1, .kind = { ARG_WHOLE }, .name = { NULL }, .lo = 0, .hi = LESSON_MAX_TOKENS - 1 }, .exec = cmd_nextrow,
	  .usage = "nextrow ROW",
	  .help = N_("the position whose next token the next stage shows (a row of the logits)") },
	{ .name = "jacobian", .args = { .min = 1, .max = 2, .kind = { ARG_ROW, ARG_HEAD }, .name = { N_("row"), N_("head") } }, .exec = cmd_jacobian,
	  .usage = "jacobian ROW [HEAD]",
	  .help = N_("softmax's Jacobian diag(w) - w w^T for one row of the weights") },
	{ .name = "train", .args = { .min = 1, .max = 2, .kind = { ARG_WHOLE, ARG_NUMBER }, .name = { N_("steps"), N_("learning rate") }, .lo = 1, .hi = 10000 },
	  .exec = cmd_train,
	  .usage = "train STEPS [LR]",
	  .help = N_("gradient descent on every weight and bias (lesson with \"backward\"; LR default 0.1)") },
	{ .name = "answer", .alias = "a", .args = { .min = 1, .max = 1, .kind = { ARG_WORD } }, .exec = cmd_answer,
	  .usage = "answer VALUE",
	  .help = N_("answer this step's question (a choice number or letter, or a number)") },
	{ .name = "skip", .args = NO_ARGS, .exec = cmd_skip,
	  .usage = "skip",
	  .help = N_("skip this step's question and see the answer") },
	{ .name = "seed", .args = { .min = 0, .max = 1, .kind = { ARG_WORD } }, .exec = cmd_seed,
	  .usage = "seed [S|off]",
	  .help = N_("generate samples from here on, its draws from the generator seeded with S (the same S, the same tokens); off: greedy again; alone: which") },
	{ .name = "hint", .args = NO_ARGS, .exec = cmd_hint,
	  .usage = "hint",
	  .help = N_("a hint for this step's question") },
	{ .name = "decode", .args = { .min = 1, .max = 1, .kind = { ARG_ONOFF } }, .exec = cmd_decode,
	  .usage = "decode on|off",
	  .help = N_("compute the tokens one at a time with a KV cache (a model's prompt and what generate appended): the decode stage walks them") },
	{ .name = "compare", .args = { .min = 1, .max = 1, .kind = { ARG_ONOFF } }, .exec = cmd_compare,
	  .usage = "compare on|off",
	  .help = N_("show the lesson's compare variant beside each result, differing cells marked") },
	{ .name = "stats", .args = { .min = 1, .max = 2, .kind = { ARG_MATRIX, ARG_HEAD }, .name = { NULL, N_("head") }, .lo = 0, .hi = 0, .choices = "params|cache" }, .exec = cmd_stats,
	  .usage = "stats MATRIX|params|cache [HEAD]",
	  .help = N_("mean, std, min, max of a matrix (weights: row sums); params: the parameter count; cache: the KV cache's bytes") },
	{ .name = "lang", .args = { .min = 1, .max = 1, .kind = { ARG_LANG } }, .exec = cmd_lang,
	  .usage = "lang en|zh",
	  .help = N_("the language of the narration and the program's words: English or Chinese") },
	/* the format and the target are export.c's words (export_format_find, export_target_parse) */
	{ .name = "export", .args = { .min = 2, .max = 3, .kind = { ARG_WORD, ARG_WORD, ARG_FILE } }, .exec = cmd_export,
	  .usage = "export FORMAT [MATRIX|STAGE] PATH",
	  .help = N_("write this stage (or a matrix, or another stage) as svg, csv, md, tex or json") },
	{ .name = "save", .args = { .min = 1, .max = 1, .kind = { ARG_FILE } }, .exec = cmd_save,
	  .usage = "save PATH",
	  .help = N_("write this lesson with your edits as a lesson file") },
	/* Front-end commands (exec NULL: out->frontend runs them; seconds and themes are theirs to read). */
	{ .name = "source", .args = { .min = 1, .max = 1, .kind = { ARG_FILE } },
	  .usage = "source FILE",
	  .help = N_("run a demo script: one command a line, # comments, pause, wait SECONDS") },
	{ .name = "pause", .args = NO_ARGS,
	  .usage = "pause",
	  .help = N_("in a demo script: wait for a key (the REPL: for Enter)") },
	{ .name = "wait", .args = { .min = 1, .max = 1, .kind = { ARG_WORD } },
	  .usage = "wait SECONDS",
	  .help = N_("in a demo script: wait SECONDS (at most 600)") },
	{ .name = "play", .args = { .min = 0, .max = 1, .kind = { ARG_WORD } },
	  .usage = "play [SECONDS]",
	  .help = N_("step through the lesson every SECONDS (default 2); any key stops") },
	{ .name = "present", .args = { .min = 1, .max = 1, .kind = { ARG_ONOFF } },
	  .usage = "present on|off",
	  .help = N_("presenter mode: larger cells, bigger narration, no key line") },
	{ .name = "theme", .args = { .min = 1, .max = 1, .kind = { ARG_WORD } },
	  .usage = "theme NAME",
	  .help = N_("colours: default projector light viridis blue-orange mono") },
	{ .name = "help", .alias = "?", .args = { .min = 0, .max = 1, .kind = { ARG_COMMAND } }, .exec = cmd_help,
	  .usage = "help [COMMAND]",
	  .help = N_("list the commands, or explain one") },
	{ .name = "quit", .alias = "q", .args = NO_ARGS, .exec = cmd_quit,
	  .usage = "quit",
	  .help = N_("leave attnviz") },
	{ .name = NULL }
};
/* clang-format on */

static int cmd_help(Session *s, const CmdArgv *a, CmdOut *out)
{
	const CmdEntry *e;
	StrBuf text = { 0 };
	char *err = NULL;
	if (a->argc > 1) {
		e = cmd_find(a->argv[1], &err);
		if (e == NULL)
			return fail(out, err);
		{
			/* A command that takes a stage or a matrix lists them, from the tables. */
			StrBuf b = { 0 };
			strbuf_printf(&b, "%s\n  %s%s%s\n", e->usage, _(e->help), e->alias ? _("\n  also: ") : "", e->alias ? e->alias : "");
			if (e->args.kind[0] == ARG_STAGE)
				for (int i = 0; i < STAGE_COUNT; i++) {
					/* one line a name: the entry this lesson has where two share it (norm1 pre and post) */
					const int k = s != NULL ? stage_lookup(&s->attn->shape, stage_name((Stage)i)) : stage_find(stage_name((Stage)i));
					if (stage_find(stage_name((Stage)i)) != i)
						continue;
					strbuf_printf(&b, "  %-13s %s%s\n", stage_name((Stage)k), _(stage_kinds[k].what),
					              s != NULL && !stage_present(&s->attn->shape, (Stage)k) ? _(" (not in this lesson)") : "");
				}
			if (e->args.kind[0] == ARG_MATRIX || e->args.kind[0] == ARG_CELL)
				for (int i = 0; i < AM_COUNT; i++)
					if (s == NULL || attn_has(s->attn, (AttnMatrix)i, 0))
						strbuf_printf(&b, "  %-12s %s%s\n", matrix_name((AttnMatrix)i), _(matrix_kinds[i].meaning),
						              matrix_per_head((AttnMatrix)i) ? _(" (per head)") : "");
			if (e->exec == cmd_model)
				strbuf_printf(&b, "%s\n", _("once open: heads (the key v) shows every layer's heads with the "
				                            "scores below, lens the logit lens (each layer's most probable next token)"));
			if (e->exec == cmd_heads || e->exec == cmd_model) {
				char *defs = headscore_definitions(out->utf8);
				strbuf_printf(&b, "%s", defs ? defs : "");
				free(defs);
			}
			return say_text(out, e->name, &b);
		}
	}
	/*
	 * A description wraps under its own column, never under the commands: at
	 * 80 columns a pop-up shows 72, so 39 of them after the 33 of a command
	 * (Chinese descriptions wrap too, at the places Chinese allows).
	 */
	enum { HELP_COL = 33, HELP_ROOM = 72 - HELP_COL };
	for (e = cmd_table; e->name != NULL; e++) {
		const char *help = _(e->help);
		TextLine *lines = NULL;
		const int n = text_wrap(help, HELP_ROOM, &lines);
		if (n < 1) {
			strbuf_printf(&text, "%-32s %s\n", e->usage, help);
			continue;
		}
		for (int i = 0; i < n; i++)
			strbuf_printf(&text, "%-32s %.*s\n", i == 0 ? e->usage : "", lines[i].len, help + lines[i].off);
		free(lines);
	}
	return say_text(out, _("commands (a unique prefix is enough)"), &text);
}

/* ------------------------------------------------------------ dispatch */

const CmdEntry *cmd_find(const char *name, char **err)
{
	const CmdEntry *e, *found = NULL;
	StrBuf list = { 0 };
	int matches = 0;
	const size_t len = strlen(name);

	*err = NULL;
	for (e = cmd_table; e->name != NULL; e++)
		if (strcmp(e->name, name) == 0 || (e->alias != NULL && strcmp(e->alias, name) == 0))
			return e;
	for (e = cmd_table; e->name != NULL && len > 0; e++)
		if (strncmp(e->name, name, len) == 0) {
			found = e;
			matches++;
			strbuf_printf(&list, "%s%s", list.len ? ", " : "", e->name);
		}
	if (matches == 1) {
		free(list.s);
		return found;
	}
	{
		/* the typed word, cut to a readable length */
		char *cut = str_printf("%.40s%s", name, len > 40 ? "..." : "");
		char *safe = cut != NULL ? text_escape(cut, "") : NULL;
		if (matches == 0)
			*err = str_printf(_("unknown command: %s (try help)"), safe ? safe : "");
		else
			*err = str_printf(_("ambiguous command: %s, could be: %s"), safe ? safe : "", list.s ? list.s : "");
		free(safe);
		free(cut);
	}
	free(list.s);
	return NULL;
}

int cmd_split(const char *line, char ***argv_out)
{
	char **argv = NULL;
	int argc = 0;
	const char *p = line;

	*argv_out = NULL;
	for (;;) {
		char *word, **grown;
		size_t len = 0, cap;
		while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
			p++;
		if (*p == '\0' || *p == '#')
			break;
		cap = strlen(p) + 1;
		word = malloc(cap);
		if (word == NULL)
			goto oom;
		while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
			if (*p == '"' || *p == '\'') {
				const char q = *p++;
				while (*p != '\0' && *p != q)
					word[len++] = *p++;
				if (*p == q)
					p++;
			} else
				word[len++] = *p++;
		}
		word[len] = '\0';
		grown = realloc(argv, (size_t)(argc + 2) * sizeof *argv);
		if (grown == NULL) {
			free(word);
			goto oom;
		}
		argv = grown;
		argv[argc++] = word;
		argv[argc] = NULL;
	}
	*argv_out = argv;
	return argc;
oom:
	cmd_free_words(argc, argv);
	return -1;
}

void cmd_free_words(int argc, char **argv)
{
	int i;
	for (i = 0; i < argc; i++)
		free(argv[i]);
	free(argv);
}

int cmd_run(Session *s, const char *line, CmdOut *out)
{
	const CmdEntry *e;
	char **argv, *err = NULL;
	int argc, rc;

	while (*line == ' ' || *line == '\t')
		line++;
	if (*line == ':')
		line++;
	argc = cmd_split(line, &argv);
	if (argc < 0)
		return fail(out, NULL);
	if (argc == 0) {
		free(argv);
		return 0;
	}
	e = cmd_find(argv[0], &err);
	if (e == NULL) {
		cmd_free_words(argc, argv);
		return fail(out, err);
	}
	{
		CmdArgv a = { .entry = e, .argc = argc, .argv = argv };
		if (cmd_parse_args(s, e, &a, out) != 0)
			rc = -1;
		else if (e->exec != NULL)
			rc = e->exec(s, &a, out);
		else if (out->frontend != NULL && out->frontend(out->ctx, e->name, argc, argv))
			rc = 0;
		else {
			cmd_say(out, MSG_ERROR, NULL, _("%s works only in the full-screen view"), e->name);
			rc = -1;
		}
	}
	cmd_free_words(argc, argv);
	return rc;
}
/* ------------------------------------------------------------ completion */

static int add_candidate(char ***list, int *count, const char *word, const char *cand)
{
	char **grown;
	if (strncmp(cand, word, strlen(word)) != 0)
		return 0;
	grown = realloc(*list, (size_t)(*count + 2) * sizeof **list);
	if (grown == NULL)
		return -1;
	*list = grown;
	(*list)[(*count)++] = strdup(cand);
	(*list)[*count] = NULL;
	return 0;
}

/* File names starting with word ("lessons/mu" → "lessons/multihead.json"; directories end in '/'). */
static void complete_paths(char ***list, int *count, const char *word)
{
	const char *slash = strrchr(word, '/');
	char *dir = slash ? strndup(word, (size_t)(slash - word + 1)) : strdup("");
	const char *base = slash ? slash + 1 : word;
	DIR *d = dir != NULL ? opendir(dir[0] ? dir : ".") : NULL;
	struct dirent *e;

	while (d != NULL && (e = readdir(d)) != NULL) {
		struct stat st;
		char *path;
		if (strncmp(e->d_name, base, strlen(base)) != 0 || strcmp(e->d_name, ".") == 0 ||
		    strcmp(e->d_name, "..") == 0 || (e->d_name[0] == '.' && base[0] != '.'))
			continue;
		path = str_printf("%s%s", dir, e->d_name);
		if (path == NULL)
			break;
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			char *with_slash = str_printf("%s/", path);
			free(path);
			path = with_slash;
		}
		if (path != NULL)
			add_candidate(list, count, word, path);
		free(path);
	}
	if (d != NULL)
		closedir(d);
	free(dir);
}

char **cmd_complete(const Session *s, CmdArg kind, const char *word)
{
	char **list = NULL;
	int count = 0, i;

	switch (kind) {
	case ARG_COMMAND: {
		const CmdEntry *e;
		for (e = cmd_table; e->name != NULL; e++)
			add_candidate(&list, &count, word, e->name);
		break;
	}
	case ARG_STAGE:
		for (i = 0; i < STAGE_COUNT; i++)
			if (s == NULL || stage_present(&s->attn->shape, (Stage)i))
				add_candidate(&list, &count, word, stage_name((Stage)i));
		break;
	case ARG_MATRIX:
		for (i = 0; i < AM_COUNT; i++)
			if (s == NULL || attn_has(s->attn, (AttnMatrix)i, 0))
				add_candidate(&list, &count, word, matrix_name((AttnMatrix)i));
		break;
	case ARG_FILE:
		complete_paths(&list, &count, word);
		break;
	case ARG_LESSON: {
		/* a lesson's name, else (or with a '/') a file's path */
		char **names;
		const char *dir = NULL;
		int n = strchr(word, '/') != NULL ? 0 : list_lessons(&names, &dir);
		for (i = 0; i < n; i++) {
			add_candidate(&list, &count, word, names[i]);
			free(names[i]);
		}
		if (n > 0)
			free(names);
		if (count == 0)
			complete_paths(&list, &count, word);
		break;
	}
	default:
		break;
	}
	return list;
}

char **cmd_complete_line(const Session *s, const char *line, size_t start, const char *word, int *files)
{
	size_t fs = 0, fe;
	CmdArg kind = ARG_COMMAND;
	char **cands;

	*files = 0;
	/* The first word (after blanks and a ':') is the command. */
	while (line[fs] == ' ' || line[fs] == '\t' || line[fs] == ':')
		fs++;
	if (start > fs) {
		char *first, *err = NULL;
		const CmdEntry *e;
		int i = -1; /* the index of the word being completed among the arguments */

		fe = fs;
		while (line[fe] && line[fe] != ' ' && line[fe] != '\t')
			fe++;
		first = strndup(line + fs, fe - fs);
		e = first ? cmd_find(first, &err) : NULL;
		free(first);
		free(err);
		if (e == NULL)
			return NULL;
		/* each word is completed as its kind: the words before it are counted */
		for (size_t p = fe; p < start && line[p] != '\0'; p++)
			if ((line[p] == ' ' || line[p] == '\t') && line[p + 1] != ' ' && line[p + 1] != '\t')
				i++;
		kind = i >= 0 && i < CMD_MAX_ARGS ? e->args.kind[i] : ARG_NONE;
		if (kind == ARG_CELL)
			kind = ARG_MATRIX;
	}
	cands = cmd_complete(s, kind, word);
	if (kind == ARG_FILE || (kind == ARG_LESSON && (cands == NULL || cands[0] == NULL)))
		*files = 1;
	return cands;
}
