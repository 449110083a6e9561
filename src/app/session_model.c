/*
 * session_model.c: a session on a real model (weights/importer.h): open a
 * model folder (:model DIR), give it another prompt (:prompt TEXT, :ids),
 * and let it write its next tokens (generate N, greedily).
 */
#include "app/session.h"
#include "app/session_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/i18n.h"
#include "base/strbuf.h"
#include "base/text.h"

/* What :model DIR reads without a prompt: this text through the folder's tokenizer, or token id 0 without one. */
static const char default_prompt[] = "The cat sat on the mat";

int session_is_model(const Session *s)
{
	return s->lesson != NULL && import_is_model(s->lesson);
}

/* DIR on p in place of the session's lesson, only once it is made and computed (p is read before s changes). */
static int open_on(Session *s, const char *dir, const ImportPrompt *p, char **err)
{
	Session fresh;
	Lesson *l;

	sn_drop_prev(s); /* the model is made beside the current lesson: only the two are held */
	if ((l = import_model(dir, p, err)) == NULL)
		return -1;
	if (session_init(&fresh, l, dir, err) != 0) {
		lesson_free(l);
		return -1;
	}
	strcpy(fresh.lang, s->lang);
	session_free(s);
	*s = fresh;
	s->dirty = DIRTY_ALL;
	return 0;
}

int session_open_model(Session *s, const char *dir, const char *text, char **err)
{
	char *tok = str_printf("%s/tokenizer.json", dir);
	const long long zero = 0;
	ImportPrompt p = { text, NULL, 0 };

	*err = NULL;
	if (tok == NULL) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	if (text == NULL) {
		if (access(tok, F_OK) == 0) {
			p.text = default_prompt;
		} else {
			p.ids = &zero;
			p.n = 1;
		}
	}
	free(tok);
	return open_on(s, dir, &p, err);
}

int session_is_model_dir(const char *path)
{
	char *cfg = str_printf("%s/config.json", path);
	struct stat st;
	int yes = cfg != NULL && stat(path, &st) == 0 && S_ISDIR(st.st_mode) && access(cfg, F_OK) == 0;

	free(cfg);
	return yes;
}

int session_load_model(Session *s, const char *dir, char **err)
{
	ImportPrompt p = { NULL, NULL, 0 };

	if (!session_is_model(s) || s->source == NULL || strcmp(s->source, dir) != 0)
		return session_open_model(s, dir, NULL, err);
	/* the same folder again (reload): read afresh, on the same ids */
	p.ids = s->lesson->cfg.ids;
	p.n = s->lesson->cfg.n;
	return open_on(s, dir, &p, err);
}

/* The session on its lesson computed afresh, at the same layer, step, stage and head where they still are. */
static int recompute(Session *s, char **err)
{
	const int layer = s->layer, step = s->step, head = s->head;
	const Stage stage = s->stage;
	Lesson *l = s->lesson;
	Session fresh;
	char *e = NULL;
	HeadScore *induction = s->induction; /* the same model: its induction scores hold for any prompt */
	const int ind_layers = s->ind_layers, ind_heads = s->ind_heads, ind_half = s->ind_half;

	attn_free(s->model);
	attn_free(s->compare_model);
	s->model = s->attn = s->compare_model = s->compare_attn = NULL;
	if (session_init(&fresh, l, s->source, err) != 0)
		return -1;
	strcpy(fresh.lang, s->lang);
	fresh.quiz_right = s->quiz_right;
	fresh.quiz_asked = s->quiz_asked;
	s->lesson = NULL;
	s->induction = NULL;
	session_free(s);
	*s = fresh;
	s->induction = induction;
	s->ind_layers = ind_layers;
	s->ind_heads = ind_heads;
	s->ind_half = ind_half;
	if (layer < session_layers(s))
		(void)session_set_layer(s, layer, &e);
	free(e);
	e = NULL;
	if (step < s->nwalk)
		(void)session_goto_step(s, step, &e);
	free(e);
	e = NULL;
	(void)session_goto_stage(s, stage, &e);
	free(e);
	e = NULL;
	if (head < s->attn->heads)
		(void)session_set_head(s, head, &e);
	free(e);
	s->edited = 1;
	s->dirty = DIRTY_ALL;
	return 0;
}

/*
 * The model on its prompt before (ids, n) again and computed: 0, or -1 when
 * not even that works (out of memory) and the session holds the built-in
 * lesson instead, rather than no computation at all.
 */
static int back_to(Session *s, const long long *ids, int n)
{
	ImportPrompt back = { NULL, ids, n };
	char *e = NULL, *w = NULL;

	if (import_reprompt(s->lesson, &back, &e) == 0 && recompute(s, &e) == 0)
		return 0;
	free(e);
	e = NULL;
	if (session_load(s, NULL, &e, &w) != 0)
		abort();
	free(w);
	free(e);
	return -1;
}

int session_prompt(Session *s, const ImportPrompt *p, char **err)
{
	long long *before, *old;
	int n, rc;

	*err = NULL;
	if (!session_is_model(s)) {
		*err = strdup(_("this is a lesson, not a model: open one with :model DIR"));
		return -1;
	}
	before = s->lesson->cfg.ids;
	n = s->lesson->cfg.n;
	if ((old = malloc((size_t)n * sizeof *old)) == NULL) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	memcpy(old, before, (size_t)n * sizeof *old);
	sn_drop_prev(s);
	rc = import_reprompt(s->lesson, p, err);
	if (rc != 0 && s->lesson->cfg.ids == before) {
		free(old); /* refused before anything changed: the learner is where they were */
		return -1;
	}
	if (rc == 0 && recompute(s, err) == 0) {
		free(old);
		return 0;
	}
	/* changed, then failed (out of memory, numbers that overflow): back to the prompt before */
	(void)back_to(s, old, n);
	free(old);
	return -1;
}

int session_next_token(const Session *s, long long *id, double *logit, char **err)
{
	const Attn *last = s->model;
	const ModelConfig *c = &s->lesson->cfg;
	const Mat *h;
	long long best = -1;
	double top = -INFINITY;

	double *buf;

	*err = NULL;
	if (!session_is_model(s) || !model_unembed_is(c, c->vocab, c->d_model)) {
		*err = strdup(_("this is a lesson, not a model: open one with :model DIR"));
		return -1;
	}
	if ((buf = malloc((size_t)c->d_model * sizeof *buf)) == NULL) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	while (last->next != NULL)
		last = last->next;
	h = !mat_empty(&last->final) ? &last->final : attn_final_output(last);
	/* logits of the last position: final_norm[n − 1] · unembedᵀ; the greedy choice is the largest (the first of equals) */
	for (int v = 0; v < c->vocab; v++) {
		const double *u = model_unembed_row(c, v, buf);
		double z = 0.0;
		for (int j = 0; j < h->cols; j++)
			z += MAT_AT(*h, h->rows - 1, j) * u[j];
		if (z > top) {
			top = z;
			best = v;
		}
	}
	free(buf);
	if (best < 0) {
		*err = strdup(_("the logits are not finite numbers"));
		return -1;
	}
	*id = best;
	if (logit != NULL)
		*logit = top;
	return 0;
}

int session_generate(Session *s, int count, char **err)
{
	for (int k = 0; k < count; k++) {
		const int n = s->lesson->cfg.n;
		long long *ids, next;
		ImportPrompt p = { NULL, NULL, n + 1 };
		int rc;
		if (session_next_token(s, &next, NULL, err) != 0)
			return -1;
		if ((ids = malloc((size_t)(n + 1) * sizeof *ids)) == NULL) {
			*err = strdup(_("out of memory"));
			return -1;
		}
		memcpy(ids, s->lesson->cfg.ids, (size_t)n * sizeof *ids);
		ids[n] = next;
		p.ids = ids;
		rc = session_prompt(s, &p, err);
		free(ids);
		if (rc != 0)
			return -1;
	}
	return 0;
}

const HeadScore *session_induction_score(const Session *s, int layer, int h)
{
	if (s->induction == NULL || layer < 0 || layer >= s->ind_layers || h < 0 || h >= s->ind_heads)
		return NULL;
	return &s->induction[(size_t)layer * (size_t)s->ind_heads + (size_t)h];
}

int session_induction(Session *s, char **err)
{
	const Lesson *l = s->lesson;
	const int nl = lesson_layers(l), edited = s->edited;
	int heads = 0, n, from, rc, moved;
	long long *ids, *old;
	HeadScore *sc;
	Attn *run;

	*err = NULL;
	if (!session_is_model(s) || s->induction != NULL)
		return 0;
	for (int i = 0; i < nl; i++)
		if (lesson_layer_params_const(l, i)->heads > heads)
			heads = lesson_layer_params_const(l, i)->heads;
	n = l->cfg.n;
	ids = malloc(2 * SESSION_INDUCTION_HALF * sizeof *ids);
	old = malloc((size_t)n * sizeof *old);
	sc = calloc((size_t)nl * (size_t)(heads > 0 ? heads : 1), sizeof *sc);
	if (ids == NULL || old == NULL || sc == NULL) {
		free(ids), free(old), free(sc);
		*err = strdup(_("out of memory"));
		return -1;
	}
	memcpy(old, l->cfg.ids, (size_t)n * sizeof *old);
	/* the model on the random tokens, scored, then on its prompt again; fewer tokens when its positions are fewer */
	int half = SESSION_INDUCTION_HALF;
	sn_drop_prev(s);
	for (;;) {
		from = headscore_repeat_ids(ids, -1, half, l->cfg.vocab, 1);
		ImportPrompt rnd = { NULL, ids, 2 * half };
		rc = import_reprompt(s->lesson, &rnd, err);
		if (rc == 0 || half <= 4)
			break;
		free(*err);
		*err = NULL;
		half /= 2;
	}
	moved = rc == 0;
	if (rc == 0) {
		run = attn_compute_all(s->lesson, err);
		if (run == NULL)
			rc = -1;
		for (int i = 0; run != NULL && i < nl; i++)
			for (int h = 0; h < lesson_layer_params_const(s->lesson, i)->heads; h++)
				sc[(size_t)i * (size_t)heads + (size_t)h] = headscores_induction_run(run, i, h, ids, from);
		attn_free(run);
	}
	if (moved && back_to(s, old, n) != 0) {
		rc = -1;
		if (*err == NULL)
			*err = strdup(_("out of memory"));
	}
	free(ids);
	free(old);
	if (rc != 0 || !session_is_model(s)) {
		free(sc);
		return -1;
	}
	s->edited = edited;
	free(s->induction);
	s->induction = sc;
	s->ind_layers = nl;
	s->ind_heads = heads;
	s->ind_half = half;
	return 0;
}
