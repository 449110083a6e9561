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
/* Freeing and copying                                                */
/* ------------------------------------------------------------------ */

static void tokens_free(char **t, int n)
{
	int i;

	if (t == NULL)
		return;
	for (i = 0; i < n; i++)
		free(t[i]);
	free(t);
}

static void block_free(Block *b)
{
	mat_free(&b->ln1_gamma);
	mat_free(&b->ln1_beta);
	mat_free(&b->ln2_gamma);
	mat_free(&b->ln2_beta);
	mat_free(&b->W_1);
	mat_free(&b->b_1);
	mat_free(&b->W_3);
	mat_free(&b->b_3);
	mat_free(&b->W_2);
	mat_free(&b->b_2);
}

void lesson_free(Lesson *l)
{
	int i;

	if (l == NULL)
		return;
	free(l->path);
	text_free(&l->title);
	text_free(&l->summary);
	tokens_free(l->cfg.tokens, l->cfg.n);
	tokens_free(l->cfg.source_tokens, l->cfg.m);
	mat_free(&l->cfg.input);
	mat_free(&l->cfg.source_input);
	mat_free(&l->lp.W_q);
	mat_free(&l->lp.W_k);
	mat_free(&l->lp.W_v);
	mat_free(&l->lp.W_o);
	mat_free(&l->lp.w_e);
	mat_free(&l->lp.b_q);
	mat_free(&l->lp.b_k);
	mat_free(&l->lp.b_v);
	mat_free(&l->lp.b_o);
	block_free(&l->lp.block);
	mat_free(&l->cfg.final_gamma);
	mat_free(&l->cfg.final_beta);
	mat_free(&l->cfg.target);
	mat_free(&l->lp.q_norm);
	mat_free(&l->lp.k_norm);
	mat_free(&l->cfg.unembed);
	mat_free(&l->cfg.pe_learned);
	tokens_free(l->cfg.vocab_tokens, l->cfg.vocab);
	free(l->cfg.ids);
	for (i = 0; i < l->nlayers; i++)
		lesson_free(l->layer[i]);
	free(l->layer);
	mat_free(&l->cfg.mask_matrix);
	for (i = 0; i < l->cfg.nmasks; i++)
		mat_free(&l->cfg.masks[i].matrix);
	free(l->cfg.masks);
	mat_free(&l->lp.alibi_slopes);
	for (i = 0; i < l->nsteps; i++)
		li_step_free(&l->steps[i]);
	free(l->steps);
	lesson_free(l->compare);
	lesson_free(l->encoder);
	text_free(&l->compare_label);
	free(l);
}

static char **tokens_copy(char *const *t, int n)
{
	char **out;
	int i;

	if (t == NULL)
		return NULL;
	out = calloc((size_t)n + 1, sizeof *out);
	if (out == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		out[i] = strdup(t[i]);
		if (out[i] == NULL) {
			tokens_free(out, n);
			return NULL;
		}
	}
	return out;
}

static int step_copy(Step *dst, const Step *src)
{
	int i;

	*dst = *src;
	memset(&dst->text, 0, sizeof dst->text);
	memset(&dst->quiz.question, 0, sizeof dst->quiz.question);
	memset(&dst->quiz.hint, 0, sizeof dst->quiz.hint);
	dst->quiz.choices = NULL;
	dst->quiz.nchoices = 0;
	if (text_copy(&dst->text, &src->text) != 0)
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

static int block_copy(Block *dst, const Block *src)
{
	*dst = *src;
	dst->ln1_gamma = dst->ln1_beta = dst->ln2_gamma = dst->ln2_beta = (Mat){ 0 };
	dst->W_1 = dst->b_1 = dst->W_3 = dst->b_3 = dst->W_2 = dst->b_2 = (Mat){ 0 };
	return mat_copy(&dst->ln1_gamma, &src->ln1_gamma) | mat_copy(&dst->ln1_beta, &src->ln1_beta) |
	       mat_copy(&dst->ln2_gamma, &src->ln2_gamma) | mat_copy(&dst->ln2_beta, &src->ln2_beta) |
	       mat_copy(&dst->W_1, &src->W_1) | mat_copy(&dst->b_1, &src->b_1) | mat_copy(&dst->W_3, &src->W_3) |
	       mat_copy(&dst->b_3, &src->b_3) | mat_copy(&dst->W_2, &src->W_2) | mat_copy(&dst->b_2, &src->b_2);
}

Lesson *lesson_clone(const Lesson *l)
{
	Lesson *c;
	int i, ok = 0;

	if (l == NULL)
		return NULL;
	c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	/* Scalars first; every owned pointer is then replaced by a copy (or NULL). */
	*c = *l;
	c->path = NULL;
	memset(&c->title, 0, sizeof c->title);
	memset(&c->summary, 0, sizeof c->summary);
	memset(&c->compare_label, 0, sizeof c->compare_label);
	c->cfg.tokens = c->cfg.source_tokens = NULL;
	memset(&c->cfg.input, 0, sizeof c->cfg.input);
	memset(&c->cfg.source_input, 0, sizeof c->cfg.source_input);
	memset(&c->lp.W_q, 0, sizeof c->lp.W_q);
	memset(&c->lp.W_k, 0, sizeof c->lp.W_k);
	memset(&c->lp.W_v, 0, sizeof c->lp.W_v);
	memset(&c->lp.W_o, 0, sizeof c->lp.W_o);
	memset(&c->lp.w_e, 0, sizeof c->lp.w_e);
	memset(&c->cfg.mask_matrix, 0, sizeof c->cfg.mask_matrix);
	c->lp.b_q = c->lp.b_k = c->lp.b_v = c->lp.b_o = c->cfg.final_gamma = c->cfg.final_beta = c->cfg.target = (Mat){ 0 };
	c->lp.alibi_slopes = c->lp.q_norm = c->lp.k_norm = c->cfg.unembed = c->cfg.pe_learned = (Mat){ 0 };
	c->cfg.vocab_tokens = NULL;
	c->cfg.ids = NULL;
	c->cfg.nmasks = 0;
	c->cfg.masks = NULL;
	c->nlayers = 0;
	c->layer = NULL;
	c->nsteps = 0;
	c->steps = NULL;
	c->compare = NULL;
	c->encoder = NULL;
	if (block_copy(&c->lp.block, &l->lp.block) != 0)
		goto out;

	if (l->path != NULL && (c->path = strdup(l->path)) == NULL)
		goto out;
	if (text_copy(&c->title, &l->title) != 0 || text_copy(&c->summary, &l->summary) != 0 ||
	    text_copy(&c->compare_label, &l->compare_label) != 0)
		goto out;
	if (l->cfg.tokens != NULL && (c->cfg.tokens = tokens_copy(l->cfg.tokens, l->cfg.n)) == NULL)
		goto out;
	if (l->cfg.source_tokens != NULL && (c->cfg.source_tokens = tokens_copy(l->cfg.source_tokens, l->cfg.m)) == NULL)
		goto out;
	if (mat_copy(&c->cfg.input, &l->cfg.input) != 0 || mat_copy(&c->cfg.source_input, &l->cfg.source_input) != 0 ||
	    mat_copy(&c->lp.W_q, &l->lp.W_q) != 0 || mat_copy(&c->lp.W_k, &l->lp.W_k) != 0 ||
	    mat_copy(&c->lp.W_v, &l->lp.W_v) != 0 || mat_copy(&c->lp.W_o, &l->lp.W_o) != 0 ||
	    mat_copy(&c->lp.w_e, &l->lp.w_e) != 0 || mat_copy(&c->cfg.mask_matrix, &l->cfg.mask_matrix) != 0 ||
	    mat_copy(&c->lp.b_q, &l->lp.b_q) != 0 || mat_copy(&c->lp.b_k, &l->lp.b_k) != 0 || mat_copy(&c->lp.b_v, &l->lp.b_v) != 0 ||
	    mat_copy(&c->lp.b_o, &l->lp.b_o) != 0 || mat_copy(&c->cfg.final_gamma, &l->cfg.final_gamma) != 0 ||
	    mat_copy(&c->cfg.final_beta, &l->cfg.final_beta) != 0 || mat_copy(&c->cfg.target, &l->cfg.target) != 0 ||
	    mat_copy(&c->lp.alibi_slopes, &l->lp.alibi_slopes) != 0 || mat_copy(&c->lp.q_norm, &l->lp.q_norm) != 0 ||
	    mat_copy(&c->lp.k_norm, &l->lp.k_norm) != 0 || mat_copy(&c->cfg.unembed, &l->cfg.unembed) != 0 ||
	    mat_copy(&c->cfg.pe_learned, &l->cfg.pe_learned) != 0)
		goto out;
	if (l->cfg.vocab_tokens != NULL && (c->cfg.vocab_tokens = tokens_copy(l->cfg.vocab_tokens, l->cfg.vocab)) == NULL)
		goto out;
	if (l->cfg.ids != NULL) {
		if ((c->cfg.ids = malloc((size_t)l->cfg.n * sizeof *c->cfg.ids)) == NULL)
			goto out;
		memcpy(c->cfg.ids, l->cfg.ids, (size_t)l->cfg.n * sizeof *c->cfg.ids);
	}
	if (l->cfg.nmasks > 0) {
		c->cfg.masks = calloc((size_t)l->cfg.nmasks, sizeof *c->cfg.masks);
		if (c->cfg.masks == NULL)
			goto out;
		for (i = 0; i < l->cfg.nmasks; i++) {
			c->cfg.masks[i].kind = l->cfg.masks[i].kind;
			c->cfg.masks[i].window = l->cfg.masks[i].window;
			c->cfg.nmasks = i + 1;
			if (mat_copy(&c->cfg.masks[i].matrix, &l->cfg.masks[i].matrix) != 0)
				goto out;
		}
	}
	if (l->nlayers > 0) {
		c->layer = calloc((size_t)l->nlayers, sizeof *c->layer);
		if (c->layer == NULL)
			goto out;
		for (i = 0; i < l->nlayers; i++) {
			c->nlayers = i + 1;
			if ((c->layer[i] = lesson_clone(l->layer[i])) == NULL)
				goto out;
		}
	}
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
	if (l->encoder != NULL && (c->encoder = lesson_clone(l->encoder)) == NULL)
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
	return l->nlayers > 0 ? l->nlayers : 1;
}

Lesson *lesson_layer(Lesson *l, int i)
{
	return l->nlayers > 0 && i >= 0 && i < l->nlayers ? l->layer[i] : l;
}

const Lesson *lesson_layer_const(const Lesson *l, int i)
{
	return lesson_layer((Lesson *)l, i);
}

LayerParams *lesson_layer_params(Lesson *l, int i)
{
	return &lesson_layer(l, i)->lp;
}

const LayerParams *lesson_layer_params_const(const Lesson *l, int i)
{
	return &lesson_layer_const(l, i)->lp;
}

ModelConfig *lesson_layer_own(Lesson *l, int i)
{
	return &lesson_layer(l, i)->cfg;
}

int lesson_set_layers(Lesson *l, int n)
{
	int i;

	if (l->nlayers != 0 || n < 1 || (l->layer = calloc((size_t)n, sizeof *l->layer)) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if ((l->layer[i] = calloc(1, sizeof *l->layer[i])) == NULL) {
			l->nlayers = i;
			return -1;
		}
	}
	l->nlayers = n;
	return 0;
}

const Lesson *lesson_step_stack(const Lesson *l, const Step *st)
{
	return st->encoder && l->encoder != NULL ? l->encoder : l;
}

int lesson_walk_encoder(const Lesson *l)
{
	return l->encoder != NULL ? lesson_layers(l->encoder) : 0;
}

int lesson_walk_layers(const Lesson *l)
{
	return lesson_walk_encoder(l) + lesson_layers(l);
}

Lesson *lesson_walk_stack(Lesson *l, int k, int *i)
{
	const int e = lesson_walk_encoder(l);

	*i = k < e ? k : k - e;
	return k < e ? l->encoder : l;
}

/* ------------------------------------------------------------------ */
/* The mask, ALiBi's slopes, the given matrices                       */
/* ------------------------------------------------------------------ */

int lesson_kv_named(const Lesson *l)
{
	return model_kv_named(&l->lp);
}

/* Where each given matrix lives in a lesson (the catalogue's MF_GIVEN kinds). */
static const size_t given_field[AM_COUNT] = {
	[AM_INPUT] = offsetof(Lesson, cfg.input), [AM_SOURCE_INPUT] = offsetof(Lesson, cfg.source_input),
	[AM_W_Q] = offsetof(Lesson, lp.W_q), [AM_W_K] = offsetof(Lesson, lp.W_k), [AM_W_V] = offsetof(Lesson, lp.W_v),
	[AM_W_O] = offsetof(Lesson, lp.W_o), [AM_W_E] = offsetof(Lesson, lp.w_e),
	[AM_B_Q] = offsetof(Lesson, lp.b_q), [AM_B_K] = offsetof(Lesson, lp.b_k), [AM_B_V] = offsetof(Lesson, lp.b_v),
	[AM_B_O] = offsetof(Lesson, lp.b_o),
	[AM_LN1_GAMMA] = offsetof(Lesson, lp.block.ln1_gamma), [AM_LN1_BETA] = offsetof(Lesson, lp.block.ln1_beta),
	[AM_LN2_GAMMA] = offsetof(Lesson, lp.block.ln2_gamma), [AM_LN2_BETA] = offsetof(Lesson, lp.block.ln2_beta),
	[AM_W_1] = offsetof(Lesson, lp.block.W_1), [AM_B_1] = offsetof(Lesson, lp.block.b_1),
	[AM_W_3] = offsetof(Lesson, lp.block.W_3), [AM_B_3] = offsetof(Lesson, lp.block.b_3),
	[AM_W_2] = offsetof(Lesson, lp.block.W_2), [AM_B_2] = offsetof(Lesson, lp.block.b_2),
	[AM_FINAL_GAMMA] = offsetof(Lesson, cfg.final_gamma), [AM_FINAL_BETA] = offsetof(Lesson, cfg.final_beta),
	[AM_Q_NORM_W] = offsetof(Lesson, lp.q_norm), [AM_K_NORM_W] = offsetof(Lesson, lp.k_norm),
	[AM_UNEMBED] = offsetof(Lesson, cfg.unembed),
};

Mat *lesson_matrix(Lesson *l, AttnMatrix which)
{
	if ((unsigned)which >= AM_COUNT || !(matrix_kinds[which].flags & MF_GIVEN))
		return NULL;
	return (Mat *)((char *)l + given_field[which]);
}

const Mat *lesson_model_matrix(const ModelConfig *c, const LayerParams *p, AttnMatrix which)
{
	const size_t off = (unsigned)which < AM_COUNT ? given_field[which] : 0;

	if ((unsigned)which >= AM_COUNT || !(matrix_kinds[which].flags & MF_GIVEN))
		return NULL;
	if (off >= offsetof(Lesson, lp) && off < offsetof(Lesson, lp) + sizeof(LayerParams))
		return (const Mat *)((const char *)p + (off - offsetof(Lesson, lp)));
	return (const Mat *)((const char *)c + (off - offsetof(Lesson, cfg)));
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
