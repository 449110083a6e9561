/*
 * lesson.c: what a loaded Lesson is asked after loading: freeing and deep
 * copies, its layers and the order a learner walks them, the mask's rules,
 * ALiBi's slopes, the given matrices by catalogue id, and the bilingual
 * check of `--check --strict`.
 *
 * Reading a lesson file is lesson_read.c and the files beside it
 * (lesson_internal.h says which does what); writing one back,
 * lesson_write.c.
 */
#include "lesson/lesson_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Freeing and copying (the model's fields: model.c)                  */
/* ------------------------------------------------------------------ */

void lesson_free_steps(Step *steps, int n)
{
	for (int i = 0; i < n; i++)
		li_step_free(&steps[i]);
	free(steps);
}

void lesson_free(Lesson *l)
{
	if (l == NULL)
		return;
	free(l->path);
	text_free(&l->title);
	text_free(&l->summary);
	model_free(&l->model);
	lesson_free_steps(l->steps, l->nsteps);
	lesson_free(l->compare);
	text_free(&l->compare_label);
	free(l->model_path);
	free(l->model_prompt);
	free(l->model_src);
	free(l->model_dir);
	free(l);
}

static int step_copy(Step *dst, const Step *src)
{
	int i;

	*dst = *src;
	memset(&dst->text, 0, sizeof dst->text);
	memset(&dst->then, 0, sizeof dst->then);
	memset(&dst->quiz.question, 0, sizeof dst->quiz.question);
	memset(&dst->quiz.hint, 0, sizeof dst->quiz.hint);
	dst->quiz.choices = NULL;
	dst->quiz.nchoices = 0;
	if (text_copy(&dst->text, &src->text) != 0 || text_copy(&dst->then, &src->then) != 0)
		return -1;
	if (!src->has_quiz)
		return 0;
	if (text_copy(&dst->quiz.question, &src->quiz.question) != 0 ||
	    text_copy(&dst->quiz.hint, &src->quiz.hint) != 0)
		return -1;
	if (src->quiz.nchoices > 0) {
		dst->quiz.choices = calloc((size_t)src->quiz.nchoices, sizeof *dst->quiz.choices);
		if (dst->quiz.choices == NULL)
			return -1;
		for (i = 0; i < src->quiz.nchoices; i++) {
			if (text_copy(&dst->quiz.choices[i], &src->quiz.choices[i]) != 0)
				return -1;
			dst->quiz.nchoices = i + 1;
		}
	}
	return 0;
}

/* *dst = a copy of src (NULL stays NULL); -1 out of memory. */
static int str_copy(char **dst, const char *src)
{
	*dst = src != NULL ? strdup(src) : NULL;
	return src != NULL && *dst == NULL ? -1 : 0;
}

int lesson_needs_model(const Lesson *l)
{
	return l != NULL && l->model_src != NULL;
}

Lesson *lesson_clone(const Lesson *l)
{
	Lesson *c;
	int i, ok = 0;

	if (l == NULL || (c = calloc(1, sizeof *c)) == NULL)
		return NULL;
	c->version = l->version;
	if (model_copy(&c->model, &l->model) != 0)
		goto out;
	if (l->path != NULL && (c->path = strdup(l->path)) == NULL)
		goto out;
	if (text_copy(&c->title, &l->title) != 0 || text_copy(&c->summary, &l->summary) != 0 ||
	    text_copy(&c->compare_label, &l->compare_label) != 0)
		goto out;
	if (l->nsteps > 0) {
		c->steps = calloc((size_t)l->nsteps, sizeof *c->steps);
		if (c->steps == NULL)
			goto out;
		for (i = 0; i < l->nsteps; i++) {
			c->nsteps = i + 1;
			if (step_copy(&c->steps[i], &l->steps[i]) != 0)
				goto out;
		}
	}
	if (l->compare != NULL && (c->compare = lesson_clone(l->compare)) == NULL)
		goto out;
	if (str_copy(&c->model_path, l->model_path) != 0 || str_copy(&c->model_prompt, l->model_prompt) != 0 ||
	    str_copy(&c->model_src, l->model_src) != 0 || str_copy(&c->model_dir, l->model_dir) != 0)
		goto out;
	ok = 1;
out:
	if (!ok) {
		lesson_free(c);
		return NULL;
	}
	return c;
}

/* ------------------------------------------------------------------ */
/* Layers, and the order a learner walks them                         */
/* ------------------------------------------------------------------ */

int lesson_layers(const Lesson *l)
{
	return model_layers(&l->model);
}

LayerParams *lesson_layer_params(Lesson *l, int i)
{
	return model_layer_params(&l->model, i);
}

const LayerParams *lesson_layer_params_const(const Lesson *l, int i)
{
	return model_layer_params_const(&l->model, i);
}

LayerOwn *lesson_layer_own(Lesson *l, int i)
{
	return model_layer_own(&l->model, i);
}

int lesson_set_layers(Lesson *l, int n)
{
	return model_set_layers(&l->model, n);
}

const Model *lesson_step_stack(const Lesson *l, const Step *st)
{
	return st->encoder && l->encoder != NULL ? l->encoder : &l->model;
}

int lesson_walk_encoder(const Lesson *l)
{
	return l->encoder != NULL ? model_layers(l->encoder) : 0;
}

int lesson_walk_layers(const Lesson *l)
{
	return lesson_walk_encoder(l) + lesson_layers(l);
}

Model *lesson_walk_stack(Lesson *l, int k, int *i)
{
	const int e = lesson_walk_encoder(l);

	*i = k < e ? k : k - e;
	return k < e ? l->encoder : &l->model;
}

/* ------------------------------------------------------------------ */
/* The mask, ALiBi's slopes, the given matrices                       */
/* ------------------------------------------------------------------ */

int lesson_kv_named(const Lesson *l)
{
	return model_kv_named(&l->lp);
}

/* Where each given matrix lives in a model (the catalogue's MF_GIVEN kinds). */
static const size_t given_field[AM_COUNT] = {
	[AM_INPUT] = offsetof(Model, cfg.input), [AM_SOURCE_INPUT] = offsetof(Model, cfg.source_input),
	[AM_W_Q] = offsetof(Model, lp.W_q), [AM_W_K] = offsetof(Model, lp.W_k), [AM_W_V] = offsetof(Model, lp.W_v),
	[AM_W_O] = offsetof(Model, lp.W_o), [AM_W_E] = offsetof(Model, lp.w_e),
	[AM_B_Q] = offsetof(Model, lp.b_q), [AM_B_K] = offsetof(Model, lp.b_k), [AM_B_V] = offsetof(Model, lp.b_v),
	[AM_B_O] = offsetof(Model, lp.b_o),
	[AM_LN1_GAMMA] = offsetof(Model, lp.block.ln1_gamma), [AM_LN1_BETA] = offsetof(Model, lp.block.ln1_beta),
	[AM_LN2_GAMMA] = offsetof(Model, lp.block.ln2_gamma), [AM_LN2_BETA] = offsetof(Model, lp.block.ln2_beta),
	[AM_LN1_AFTER_GAMMA] = offsetof(Model, lp.block.ln1_after_gamma),
	[AM_LN2_AFTER_GAMMA] = offsetof(Model, lp.block.ln2_after_gamma),
	[AM_W_1] = offsetof(Model, lp.block.W_1), [AM_B_1] = offsetof(Model, lp.block.b_1),
	[AM_W_3] = offsetof(Model, lp.block.W_3), [AM_B_3] = offsetof(Model, lp.block.b_3),
	[AM_W_2] = offsetof(Model, lp.block.W_2), [AM_B_2] = offsetof(Model, lp.block.b_2),
	[AM_FINAL_GAMMA] = offsetof(Model, cfg.final_gamma), [AM_FINAL_BETA] = offsetof(Model, cfg.final_beta),
	[AM_Q_NORM_W] = offsetof(Model, lp.q_norm), [AM_K_NORM_W] = offsetof(Model, lp.k_norm),
	[AM_UNEMBED] = offsetof(Model, cfg.unembed), [AM_SINKS] = offsetof(Model, lp.sinks),
	[AM_GDN_W_A] = offsetof(Model, lp.gdn_W_a), [AM_GDN_W_B] = offsetof(Model, lp.gdn_W_b),
	[AM_GDN_A_LOG] = offsetof(Model, lp.gdn_A_log), [AM_GDN_DT_BIAS] = offsetof(Model, lp.gdn_dt_bias),
	[AM_GDN_CONV_W] = offsetof(Model, lp.gdn_conv), [AM_GDN_W_Z] = offsetof(Model, lp.gdn_W_z),
	[AM_GDN_NORM_W] = offsetof(Model, lp.gdn_norm),
	[AM_W_QA] = offsetof(Model, lp.mla.W_qa), [AM_Q_A_NORM] = offsetof(Model, lp.mla.q_a_norm),
	[AM_W_QB] = offsetof(Model, lp.mla.W_qb), [AM_W_KVA] = offsetof(Model, lp.mla.W_kva),
	[AM_KV_A_NORM] = offsetof(Model, lp.mla.kv_a_norm), [AM_W_KVB] = offsetof(Model, lp.mla.W_kvb),
	[AM_DIFF_LQ1] = offsetof(Model, lp.diff.lq1), [AM_DIFF_LK1] = offsetof(Model, lp.diff.lk1),
	[AM_DIFF_LQ2] = offsetof(Model, lp.diff.lq2), [AM_DIFF_LK2] = offsetof(Model, lp.diff.lk2),
	[AM_DIFF_SUBLN] = offsetof(Model, lp.diff.subln),
	[AM_W_GATE] = offsetof(Model, lp.W_gate), [AM_B_GATE] = offsetof(Model, lp.b_gate),
	[AM_MOE_W_R] = offsetof(Model, lp.block.moe.W_r), [AM_MOE_W_1] = offsetof(Model, lp.block.moe.W_1),
	[AM_MOE_W_3] = offsetof(Model, lp.block.moe.W_3), [AM_MOE_W_2] = offsetof(Model, lp.block.moe.W_2),
	[AM_SHARED_W_1] = offsetof(Model, lp.block.moe.S_1), [AM_SHARED_W_3] = offsetof(Model, lp.block.moe.S_3),
	[AM_SHARED_W_2] = offsetof(Model, lp.block.moe.S_2), [AM_SHARED_GATE_W] = offsetof(Model, lp.block.moe.S_gate),
	[AM_MOE_E_BIAS] = offsetof(Model, lp.block.moe.e_bias),
	[AM_DSA_W_IQ] = offsetof(Model, lp.dsa.W_iq), [AM_DSA_W_IK] = offsetof(Model, lp.dsa.W_ik),
	[AM_DSA_K_NORM] = offsetof(Model, lp.dsa.k_norm), [AM_DSA_K_BIAS] = offsetof(Model, lp.dsa.k_norm_b),
	[AM_DSA_W_IW] = offsetof(Model, lp.dsa.W_iw),
};

Mat *lesson_matrix(Lesson *l, AttnMatrix which)
{
	if ((unsigned)which >= AM_COUNT || !(matrix_kinds[which].flags & MF_GIVEN))
		return NULL;
	return (Mat *)((char *)&l->model + given_field[which]);
}

/* 1 when the given matrix `which` is one of a layer's parameters (else a shared setting's). */
static int given_in_layer(AttnMatrix which)
{
	return given_field[which] >= offsetof(Model, lp) && given_field[which] < offsetof(Model, lp) + sizeof(LayerParams);
}

Mat *lesson_model_given(Model *m, int i, AttnMatrix which)
{
	if ((unsigned)which >= AM_COUNT || !(matrix_kinds[which].flags & MF_GIVEN))
		return NULL;
	if (i < 0 || m->nlayers == 0)
		return (Mat *)((char *)m + given_field[which]);
	if (i >= m->nlayers)
		return NULL;
	if (which == AM_SOURCE_INPUT) /* a layer's own source */
		return &m->layer[i].own.source_input;
	/* the shared settings' other matrices (X, the final norm) are not a layer's */
	if (!given_in_layer(which))
		return NULL;
	return (Mat *)((char *)model_layer_params(m, i) + (given_field[which] - offsetof(Model, lp)));
}

Mat *lesson_walk_matrix(Lesson *l, int k, AttnMatrix which)
{
	int i;
	Model *stk = lesson_walk_stack(l, k, &i);

	if (which == AM_SOURCE_INPUT) /* the lesson's source */
		return lesson_matrix(l, which);
	/* a real model's weight kept in its file becomes the model's own doubles, to be written (model.h) */
	if (which != AM_INPUT && stk != NULL && layer_params_own(model_layer_params(stk, i)) != 0)
		return NULL;
	/* its stack's X; a layer's own parameters */
	return lesson_model_given(stk, which == AM_INPUT ? -1 : i, which);
}

const Mat *lesson_model_matrix(const ModelConfig *c, const LayerParams *p, AttnMatrix which)
{
	const size_t off = (unsigned)which < AM_COUNT ? given_field[which] : 0;

	if ((unsigned)which >= AM_COUNT || !(matrix_kinds[which].flags & MF_GIVEN))
		return NULL;
	if (off >= offsetof(Model, lp) && off < offsetof(Model, lp) + sizeof(LayerParams))
		return (const Mat *)((const char *)p + (off - offsetof(Model, lp)));
	return (const Mat *)((const char *)c + (off - offsetof(Model, cfg)));
}

/* ------------------------------------------------------------------ */
/* Languages (`--check --strict`)                                     */
/* ------------------------------------------------------------------ */

/* One text against every language; path is its place in the file. */
static int text_languages(const Lesson *l, const Text *t, const char *const *langs, StrBuf *b, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int text_languages(const Lesson *l, const Text *t, const char *const *langs, StrBuf *b, const char *fmt, ...)
{
	char path[PATH_SIZE];
	va_list ap;
	int i, missing = 0;

	if (text_empty(t))
		return 0;
	va_start(ap, fmt);
	vsnprintf(path, sizeof path, fmt, ap);
	va_end(ap);
	for (i = 0; langs[i] != NULL; i++)
		if (!text_has(t, langs[i])) {
			strbuf_printf(b, "%s: %s: no \"%s\" text\n", l->path ? l->path : "(lesson)", path, langs[i]);
			missing = 1;
		}
	return missing;
}

int lesson_check_languages(const Lesson *l, const char *const *langs, char **report)
{
	StrBuf b = { 0 };
	int count = 0, i, j;

	if (report != NULL && *report != NULL) {
		b.s = *report;
		b.len = strlen(b.s);
		b.cap = b.len + 1;
		*report = NULL;
	}
	if (l != NULL && langs != NULL) {
		count += text_languages(l, &l->title, langs, &b, "title");
		count += text_languages(l, &l->summary, langs, &b, "summary");
		for (i = 0; i < l->nsteps; i++) {
			const Step *st = &l->steps[i];
			count += text_languages(l, &st->text, langs, &b, "steps[%d].text", i);
			count += text_languages(l, &st->then, langs, &b, "steps[%d].then", i);
			if (!st->has_quiz)
				continue;
			count += text_languages(l, &st->quiz.question, langs, &b, "steps[%d].quiz.question", i);
			for (j = 0; j < st->quiz.nchoices; j++)
				count += text_languages(l, &st->quiz.choices[j], langs, &b, "steps[%d].quiz.choices[%d]", i, j);
			count += text_languages(l, &st->quiz.hint, langs, &b, "steps[%d].quiz.hint", i);
		}
		count += text_languages(l, &l->compare_label, langs, &b, "compare.label");
	}
	if (report != NULL && b.len > 0 && !b.oom)
		*report = b.s;
	else
		free(b.s);
	return count;
}
