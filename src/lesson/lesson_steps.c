/*
 * lesson_steps.c: a lesson's texts (a string, or one per language), its
 * steps (stage, layer, head, focus) and their quizzes (choices, or a
 * number read from a cell of the computation), each checked against the
 * shapes of the layer it points into.
 */
#include "lesson/lesson_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Texts: a string (English) or {"en": …, "zh": …}                    */
/* ------------------------------------------------------------------ */

/* "en", "zh", "pt-BR", "zh_TW": 2–3 letters, optionally - or _ and 2–3 letters or digits. */
static int lang_code_ok(const char *s)
{
	size_t i = 0, j;

	while (isalpha((unsigned char)s[i]))
		i++;
	if (i < 2 || i > 3)
		return 0;
	if (s[i] == '\0')
		return 1;
	if (s[i] != '-' && s[i] != '_')
		return 0;
	for (j = i + 1; isalnum((unsigned char)s[j]); j++)
		;
	return s[j] == '\0' && j - i - 1 >= 2 && j - i - 1 <= 3;
}

static int read_text(Ctx *c, const cJSON *v, Text *t)
{
	const cJSON *it;
	size_t old;
	int n = 0, r = 0;

	t->count = 0;
	t->v = NULL;
	if (cJSON_IsString(v)) {
		t->v = calloc(1, sizeof *t->v);
		if (t->v == NULL)
			return fail_oom(c);
		strcpy(t->v[0].lang, "en");
		if (read_string(c, v, &t->v[0].s) != 0) {
			text_free(t);
			return -1;
		}
		t->count = 1;
		return 0;
	}
	if (!cJSON_IsObject(v))
		return fail(c, _("expected a text (a string, or an object such as {\"en\": \"…\", \"zh\": \"…\"}), got %s"),
		            got(v).s);
	cJSON_ArrayForEach(it, v)
		n++;
	if (n == 0)
		return fail(c, _("expected a text, got an empty object (give at least {\"en\": \"…\"})"));
	t->v = calloc((size_t)n, sizeof *t->v);
	if (t->v == NULL)
		return fail_oom(c);
	cJSON_ArrayForEach(it, v) {
		if (!lang_code_ok(it->string)) {
			r = fail(c, _("%s is not a language code (expected a short code such as \"en\" or \"zh\")"),
			         quoted(it->string).s);
			break;
		}
		if (text_has(t, it->string)) {
			warnf(c, _("language \"%s\" given twice; the first is used"), it->string);
			continue;
		}
		old = path_key(c, it->string);
		r = read_string(c, it, &t->v[t->count].s);
		path_set(c, old);
		if (r != 0)
			break;
		snprintf(t->v[t->count].lang, sizeof t->v[t->count].lang, "%s", it->string);
		t->count++;
	}
	if (r != 0)
		text_free(t);
	return r;
}

int li_key_text(Ctx *c, const cJSON *obj, const char *key, Text *t)
{
	const cJSON *v = get(obj, key);
	size_t old;
	int r;

	t->count = 0;
	t->v = NULL;
	if (v == NULL)
		return 0;
	old = path_key(c, key);
	r = read_text(c, v, t);
	path_set(c, old);
	return r;
}

/* ------------------------------------------------------------------ */
/* Steps and quizzes                                                   */
/* ------------------------------------------------------------------ */

static const char *const step_keys[] = { "stage", "layer", "encoder", "head", "text", "then", "focus", "quiz", "compare",
	                                 "t", "tile", NULL };
static const char *const cell_keys[] = { "matrix", "head", "row", "col", NULL };
static const char *const quiz_keys[] = { "question", "choices", "answer", "tolerance", "hint", "hides", NULL };

void li_step_free(Step *st)
{
	int i;

	/* The quiz's texts whether or not it is still asked: an edit may turn a question off (has_quiz = 0). */
	text_free(&st->text);
	text_free(&st->then);
	text_free(&st->quiz.question);
	for (i = 0; i < st->quiz.nchoices; i++)
		text_free(&st->quiz.choices[i]);
	free(st->quiz.choices);
	text_free(&st->quiz.hint);
	memset(st, 0, sizeof *st);
}

/* {"matrix": NAME, "head": H, "row": R, "col": C} at the current path; head defaults to def_head. */
static int read_cellref(Ctx *c, const LessonShape *s, const cJSON *v, int def_head, CellRef *ref)
{
	const cJSON *name;
	long long head = def_head, row = 0, col = 0;
	size_t old;

	if (!cJSON_IsObject(v))
		return fail(c, _("expected a cell {\"matrix\": \"weights\", \"head\": 0, \"row\": 1, \"col\": 0}, got %s"),
		            got(v).s);
	warn_unknown_keys(c, v, cell_keys);
	name = get(v, "matrix");
	if (name == NULL)
		return fail(c, _("missing \"matrix\" (the name of a matrix, such as \"weights\")"));
	if (get(v, "row") == NULL)
		return fail(c, _("missing \"row\""));
	if (get(v, "col") == NULL)
		return fail(c, _("missing \"col\""));
	old = path_key(c, "matrix");
	if (!cJSON_IsString(name))
		return fail(c, _("expected a matrix name, got %s"), got(name).s);
	path_set(c, old);
	if (key_whole(c, v, "head", 0, 1e9, _("a whole number ≥ 0"), &head) != 0 ||
	    key_whole(c, v, "row", -1e9, 1e9, _("a whole number ≥ 0"), &row) != 0 ||
	    key_whole(c, v, "col", -1e9, 1e9, _("a whole number ≥ 0"), &col) != 0)
		return -1;
	memset(ref, 0, sizeof *ref);
	if (strlen(name->valuestring) >= sizeof ref->matrix || matrix_find(name->valuestring) < 0) {
		const char *names[AM_COUNT];
		int i;
		for (i = 0; i < AM_COUNT; i++)
			names[i] = matrix_name((AttnMatrix)i);
		old = path_key(c, "matrix");
		return fail(c, _("unknown matrix %s%s"), got(name).s, did_you_mean(name->valuestring, names, AM_COUNT).s);
	}
	/* The canonical spelling, whatever case the file used. */
	snprintf(ref->matrix, sizeof ref->matrix, "%s",
	         matrix_name((AttnMatrix)matrix_find(name->valuestring)));
	ref->head = (int)head;
	ref->row = (int)row;
	ref->col = (int)col;
	return li_check_cellref(c, s, ref);
}

/* "hides": a matrix name or an array of them, kept hidden until the question is answered. */
static int read_hides(Ctx *c, const cJSON *v, Quiz *q)
{
	const cJSON *h = get(v, "hides"), *it;
	size_t old;

	if (h == NULL)
		return 0;
	old = path_key(c, "hides");
	if (!cJSON_IsString(h) && !cJSON_IsArray(h))
		return fail(c, _("expected a matrix name or an array of them (such as [\"K\", \"V\"]), got %s"), got(h).s);
	if (cJSON_IsArray(h) && cJSON_GetArraySize(h) > LESSON_MAX_HIDES)
		return fail(c, _("%d matrices is over the limit of %d"), cJSON_GetArraySize(h), LESSON_MAX_HIDES);
	for (it = cJSON_IsString(h) ? h : h->child; it != NULL; it = cJSON_IsString(h) ? NULL : it->next) {
		/* in an array, an element's own place: "steps[2].quiz.hides[1]" */
		const size_t old2 = cJSON_IsString(h) ? old : path_index(c, q->nhides);
		if (!cJSON_IsString(it))
			return fail(c, _("expected a matrix name, got %s"), got(it).s);
		if (matrix_find(it->valuestring) < 0) {
			const char *names[AM_COUNT];
			for (int i = 0; i < AM_COUNT; i++)
				names[i] = matrix_name((AttnMatrix)i);
			return fail(c, _("unknown matrix %s%s"), got(it).s, did_you_mean(it->valuestring, names, AM_COUNT).s);
		}
		snprintf(q->hides[q->nhides], sizeof q->hides[0], "%s", matrix_name((AttnMatrix)matrix_find(it->valuestring)));
		q->nhides++;
		if (!cJSON_IsString(h))
			path_set(c, old2);
	}
	path_set(c, old);
	return 0;
}

static int read_quiz(Ctx *c, const LessonShape *s, const cJSON *v, int def_head, Quiz *q)
{
	const cJSON *choices = NULL, *answer, *it;
	size_t old;
	long long idx;
	int n = 0;

	memset(q, 0, sizeof *q);
	q->tolerance = 0.01;
	if (!cJSON_IsObject(v))
		return fail(c, _("expected an object {\"question\": …, \"answer\": …}, got %s"), got(v).s);
	warn_unknown_keys(c, v, quiz_keys);
	if (get(v, "question") == NULL)
		return fail(c, _("missing \"question\""));
	if (li_key_text(c, v, "question", &q->question) != 0 || li_key_text(c, v, "hint", &q->hint) != 0 ||
	    read_hides(c, v, q) != 0)
		return -1;
	answer = get(v, "answer");
	if (answer == NULL)
		return fail(c, _("missing \"answer\" (the index of the right choice, or a cell {\"matrix\": …})"));
	choices = get(v, "choices");
	if (choices != NULL) {
		old = path_key(c, "choices");
		if (!cJSON_IsArray(choices)) {
			fail(c, _("expected an array of texts, got %s"), got(choices).s);
			goto out;
		}
		cJSON_ArrayForEach(it, choices)
			n++;
		if (n < 2) {
			fail(c, _("expected at least 2 choices, got %d"), n);
			goto out;
		}
		q->choices = calloc((size_t)n, sizeof *q->choices);
		if (q->choices == NULL) {
			fail_oom(c);
			goto out;
		}
		cJSON_ArrayForEach(it, choices) {
			size_t old2 = path_index(c, q->nchoices);
			if (read_text(c, it, &q->choices[q->nchoices]) != 0)
				goto out;
			q->nchoices++;
			path_set(c, old2);
		}
		path_set(c, old);
		old = path_key(c, "answer");
		if (!cJSON_IsNumber(answer)) {
			fail(c, _("expected the index of the right choice, from 0 (0 to %d; the screen numbers them 1 to %d), got %s"),
			     n - 1, n, got(answer).s);
			goto out;
		}
		if (read_whole(c, answer, -1e9, 1e9, _("a whole number (the index of the right choice, from 0: the screen's choice 1 is 0)"), &idx) != 0)
			goto out;
		if (idx < 0 || idx >= n) {
			fail(c, _("%lld is outside the %d choices (0 to %d: the file counts from 0, the screen numbers them 1 to %d)"),
			     idx, n, n - 1, n);
			goto out;
		}
		q->answer_choice = (int)idx;
		path_set(c, old);
		if (get(v, "tolerance") != NULL)
			warnf(c, _("\"tolerance\" is not used by a question with choices"));
	} else {
		old = path_key(c, "answer");
		if (!cJSON_IsObject(answer)) {
			fail(c, _("expected a cell {\"matrix\": …, \"row\": …, \"col\": …} (or give \"choices\" and "
			        "the index of the right one), got %s"), got(answer).s);
			goto out;
		}
		if (read_cellref(c, s, answer, def_head, &q->answer_cell) != 0)
			goto out;
		path_set(c, old);
		if (key_finite(c, v, "tolerance", &q->tolerance) != 0)
			goto out;
		if (!(q->tolerance > 0)) {
			old = path_key(c, "tolerance");
			fail(c, _("expected a number > 0, got %s"), got(get(v, "tolerance")).s);
			goto out;
		}
	}
	return 0;
out:
	return -1;
}

/* "t" on a decode step (the generation step shown), "tile": [query block, key block] on a flash step. */
static int read_step_place(Ctx *c, const LessonShape *s, const cJSON *v, Step *st)
{
	const cJSON *tile = get(v, "tile");
	long long t = -1;
	size_t old;

	if (get(v, "t") != NULL) {
		if (st->stage != STAGE_DECODE) {
			old = path_key(c, "t");
			fail(c, _("\"t\" (a generation step) belongs to a \"decode\" step, not %s"), stage_name(st->stage));
			path_set(c, old);
			return -1;
		}
		char expect[64];
		snprintf(expect, sizeof expect, _("a position from 0 to %d (n − 1)"), s->dim[DIM_N] - 1);
		if (key_whole(c, v, "t", 0, s->dim[DIM_N] - 1, expect, &t) != 0)
			return -1;
		st->t = (int)t;
	}
	if (tile == NULL)
		return 0;
	old = path_key(c, "tile");
	if (st->stage != STAGE_FLASH) {
		fail(c, _("\"tile\" belongs to a \"flash\" step, not %s"), stage_name(st->stage));
	} else if (!cJSON_IsArray(tile) || cJSON_GetArraySize(tile) != 2 || !cJSON_IsNumber(tile->child) ||
	           !cJSON_IsNumber(tile->child->next)) {
		fail(c, _("expected [query block, key block], got %s"), got(tile).s);
	} else {
		const int nqb = (s->dim[DIM_N] + s->block_q - 1) / s->block_q, nkb = (s->dim[DIM_M] + s->block_k - 1) / s->block_k;
		const double q = tile->child->valuedouble, k = tile->child->next->valuedouble;
		if (q != floor(q) || q < 0 || q >= nqb || k != floor(k) || k < 0 || k >= nkb)
			fail(c, _("expected [query block 0 … %d, key block 0 … %d] (block_q %d, block_k %d), got [%g, %g]"), nqb - 1,
			     nkb - 1, s->block_q, s->block_k, q, k);
		else {
			st->tile_q = (int)q;
			st->tile_k = (int)k;
		}
	}
	path_set(c, old);
	return c->err != NULL ? -1 : 0;
}

static int read_step(Ctx *c, const ModelConfig *top, const LayerParams *top_lp, const cJSON *v, int has_compare, Step *st)
{
	const cJSON *stage, *focus, *quiz, *cmp;
	long long head = 0, layer = 0;
	ModelConfig layer_cfg = *top; /* the step's layer's settings (borrowed), its parameters lp, its shape */
	const LayerParams *lp = top_lp;
	LessonShape lsh;
	const LessonShape *s = &lsh;
	size_t old;
	int k;

	memset(st, 0, sizeof *st);
	st->compare = -1;
	st->t = st->tile_q = st->tile_k = -1;
	if (!cJSON_IsObject(v))
		return fail(c, _("expected a step {\"stage\": …, \"text\": …}, got %s"), got(v).s);
	warn_unknown_keys(c, v, step_keys);
	stage = get(v, "stage");
	if (stage == NULL)
		return fail(c, _("missing \"stage\" (one of input, positional, project, split, scores, scale, mask, "
		               "softmax, weighted, concat, output)"));
	/* The layer first: the stage and the cells are that layer's. */
	if (key_whole(c, v, "layer", 0, 1e9, _("a whole number ≥ 0"), &layer) != 0)
		return -1;
	if (get(v, "encoder") != NULL) {
		const cJSON *e = get(v, "encoder");
		old = path_key(c, "encoder");
		if (!cJSON_IsBool(e))
			return fail(c, _("expected true (the step shows a layer of the encoder) or false, got %s"), got(e).s);
		if (cJSON_IsTrue(e) && li_stack(c)->encoder == NULL)
			return fail(c, _("only in an encoder\u2013decoder lesson (one with \"encoder\"): this lesson has no encoder"));
		path_set(c, old);
		st->encoder = cJSON_IsTrue(e);
	}
	if (st->encoder || li_stack(c)->model != NULL) { /* a layer of the encoder (read in full before the decoder's links), or of a real model */
		const Model *stk = st->encoder ? li_stack(c)->encoder : li_stack(c)->model;
		const unsigned long nl = (unsigned long)model_layers(stk);
		if (layer >= model_layers(stk)) {
			old = path_key(c, "layer");
			return fail(c, st->encoder ? ngettext("%lld is outside the encoder's %d layer (they count from 0)",
			                                      "%lld is outside the encoder's %d layers (they count from 0)", nl)
			                           : ngettext("%lld is outside the model's %d layer (they count from 0)",
			                                      "%lld is outside the model's %d layers (they count from 0)", nl),
			            layer, model_layers(stk));
		}
		st->layer = (int)layer;
		li_layer_config(stk, st->layer, &layer_cfg);
		lp = model_layer_params_const(stk, st->layer);
	} else if (layer >= (li_stack(c)->nlayers > 0 ? li_stack(c)->nlayers : 1)) {
		old = path_key(c, "layer");
		return fail(c, ngettext("%lld is outside the %d layer of this lesson (they count from 0)",
		                        "%lld is outside the %d layers of this lesson (they count from 0)",
		                        (unsigned long)(li_stack(c)->nlayers > 0 ? li_stack(c)->nlayers : 1)),
		            layer, li_stack(c)->nlayers > 0 ? li_stack(c)->nlayers : 1);
	} else if ((st->layer = (int)layer) > 0) {
		layer_cfg = li_stack(c)->layers[layer].cfg;
		lp = &li_stack(c)->layers[layer].lp;
		layer_cfg.positional = POS_NONE; /* positions are added once, before layer 0 */
		layer_cfg.has_final_norm = li_stack(c)->stack_final && layer == li_stack(c)->nlayers - 1;
		layer_cfg.backward = top->backward; /* the stack's loss: every layer has its backward stages, as computed */
	} else if (li_stack(c)->nlayers > 1)
		layer_cfg.has_final_norm = 0;
	lesson_model_shape(&layer_cfg, lp, &lsh);
	old = path_key(c, "stage");
	if (!cJSON_IsString(stage))
		return fail(c, _("expected a stage name, got %s"), got(stage).s);
	k = stage_lookup(&lsh, stage->valuestring);
	if (k < 0) {
		const char *names[STAGE_COUNT];
		for (k = 0; k < STAGE_COUNT; k++)
			names[k] = stage_name((Stage)k);
		return fail(c, _("unknown stage %s%s"), got(stage).s, did_you_mean(stage->valuestring, names, STAGE_COUNT).s);
	}
	path_set(c, old);
	st->stage = (Stage)k;
	if (key_whole(c, v, "head", 0, 1e9, _("a whole number ≥ 0"), &head) != 0)
		return -1;
	st->head = (int)head;
	if (li_check_step_stage(c, s, st) != 0)
		return -1;
	if (li_key_text(c, v, "text", &st->text) != 0 || read_step_place(c, s, v, st) != 0)
		return -1;
	focus = get(v, "focus");
	if (focus != NULL) {
		old = path_key(c, "focus");
		if (read_cellref(c, s, focus, st->head, &st->focus) != 0)
			return -1;
		path_set(c, old);
		st->has_focus = 1;
	}
	cmp = get(v, "compare");
	if (cmp != NULL) {
		old = path_key(c, "compare");
		if (!cJSON_IsBool(cmp))
			return fail(c, _("expected true (show the compare variant beside the results) or false, got %s"),
			            got(cmp).s);
		if (!has_compare)
			return fail(c, _("this lesson has no \"compare\" variant to show"));
		st->compare = cJSON_IsTrue(cmp);
		path_set(c, old);
	}
	quiz = get(v, "quiz");
	if (quiz != NULL) {
		old = path_key(c, "quiz");
		st->has_quiz = 1; /* so li_step_free frees what read_quiz made, even on failure */
		if (read_quiz(c, s, quiz, st->head, &st->quiz) != 0)
			return -1;
		path_set(c, old);
	}
	/* "then": what is said once the question is answered; a step without one shows it after its text */
	if (li_key_text(c, v, "then", &st->then) != 0)
		return -1;
	if (get(v, "then") != NULL && quiz == NULL) {
		old = path_key(c, "then");
		warnf(c, _("\"then\" is said once a question is answered, and this step has no \"quiz\": it is shown after the text"));
		path_set(c, old);
	}
	return 0;
}

int li_read_steps(Ctx *c, const ModelConfig *cfg, const LayerParams *lp, const cJSON *root, Lesson *l)
{
	const cJSON *steps = get(root, "steps"), *it;
	size_t old;
	int n = 0;

	if (steps == NULL)
		return 0;
	old = path_key(c, "steps");
	if (!cJSON_IsArray(steps))
		return fail(c, _("expected an array of steps, got %s"), got(steps).s);
	cJSON_ArrayForEach(it, steps)
		n++;
	if (n > LESSON_MAX_STEPS)
		return fail(c, _("%d steps is over the limit of %d (LESSON_MAX_STEPS)"), n, LESSON_MAX_STEPS);
	if (n == 0) {
		path_set(c, old);
		return 0;
	}
	l->steps = calloc((size_t)n, sizeof *l->steps);
	if (l->steps == NULL)
		return fail_oom(c);
	cJSON_ArrayForEach(it, steps) {
		size_t old2 = path_index(c, l->nsteps);
		int r = read_step(c, cfg, lp, it, get(root, "compare") != NULL || li_stack(c)->outer_compare, &l->steps[l->nsteps]);
		l->nsteps++; /* counted even on failure: lesson_free frees its parts */
		if (r != 0)
			return -1;
		path_set(c, old2);
	}
	path_set(c, old);
	return 0;
}

