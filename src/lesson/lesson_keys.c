/*
 * lesson_keys.c: the walk over the lesson keys' tables (lesson_keys.h): each
 * kind read with the loader's kit (jsonread.h: every error at its JSON path),
 * its shape as the file gives it, written back, and the names the loader
 * knows. The tables themselves live in their variants' files.
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

#include <math.h>
#include <string.h>

const LessonKey *const li_key_tables[] = {
#define X(t) t,
	LESSON_KEY_TABLES
#undef X
	NULL
};

/* Each row of every table, in order. */
#define FOR_EACH_KEY(k) \
	for (const LessonKey *const *t_ = li_key_tables; *t_ != NULL; t_++) \
		for (const LessonKey *k = *t_; k->name != NULL; k++)

static double *cfg_double(ModelConfig *cfg, const LessonKey *k)
{
	return (double *)(void *)((char *)cfg + k->at);
}

static double cfg_double_of(const ModelConfig *cfg, const LessonKey *k)
{
	return *(const double *)(const void *)((const char *)cfg + k->at);
}

static Mat *lp_mat(LayerParams *lp, const LessonKey *k)
{
	return (Mat *)(void *)((char *)lp + k->at);
}

static const Mat *lp_mat_of(const LayerParams *lp, const LessonKey *k)
{
	return (const Mat *)(const void *)((const char *)lp + k->at);
}

int li_key_list(const char *const *base, unsigned where, const char **out, int cap)
{
	int n = 0;

	for (int i = 0; base != NULL && base[i] != NULL && n < cap - 1; i++)
		out[n++] = base[i];
	FOR_EACH_KEY(k)
		if ((k->where & where) == where && n < cap - 1)
			out[n++] = k->name;
	out[n] = NULL;
	return n;
}

int li_key_known(const char *name, unsigned where)
{
	FOR_EACH_KEY(k)
		if ((k->where & where) == where && strcmp(k->name, name) == 0)
			return 1;
	return 0;
}

/* LK_CAP: a number ≥ 0, or false for none. */
static int read_cap(Ctx *c, const cJSON *root, const LessonKey *k, Model *m)
{
	const cJSON *v = get(root, k->name);
	size_t old;
	int r = 0;

	if (v == NULL)
		return 0;
	old = path_key(c, k->name);
	if (cJSON_IsFalse(v))
		*cfg_double(&m->cfg, k) = 0.0;
	else if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
		r = fail(c, _("expected the cap c, a number > 0 (Gemma 2: %s), or 0 or false for none, got %s"), k->hint,
		         got(v).s);
	else if (k->check != NULL && k->check(c, root, v) != 0)
		r = -1;
	else
		*cfg_double(&m->cfg, k) = v->valuedouble;
	path_set(c, old);
	return r != 0 ? -1 : 0;
}

int li_keys_read_settings(Ctx *c, const cJSON *root, Model *m)
{
	FOR_EACH_KEY(k) {
		int r = 0;
		if (k->kind == LK_CAP)
			r = read_cap(c, root, k, m);
		else if (k->kind == LK_CUSTOM && k->read != NULL)
			r = k->read(c, root, m);
		if (r != 0)
			return -1;
	}
	return 0;
}

void li_keys_given_shapes(const cJSON *root, Model *m)
{
	FOR_EACH_KEY(k) {
		const cJSON *v = get(root, k->name);
		int rows = 0, cols = 0;
		if (k->kind == LK_CUSTOM && k->shapes != NULL && v != NULL && !cJSON_IsFalse(v))
			k->shapes(v, m);
		if (k->kind != LK_MATRIX || k->given == NULL || v == NULL || cJSON_IsFalse(v))
			continue;
		k->given(v, m, &rows, &cols);
		if (rows > 0) {
			Mat *x = lp_mat(&m->lp, k);
			x->rows = rows;
			x->cols = cols;
		}
	}
}

int li_keys_read_weights(Ctx *c, const cJSON *root, Model *m)
{
	FOR_EACH_KEY(k) {
		int rows = 0, cols = 0;
		if (k->kind == LK_CUSTOM) {
			if (k->weights != NULL && k->weights(c, root, m) != 0)
				return -1;
			continue;
		}
		/* false: none (a compare variant's, dropping its lesson's) */
		if (k->kind != LK_MATRIX || cJSON_IsFalse(get(root, k->name)))
			continue;
		if (k->check != NULL && get(root, k->name) != NULL) { /* one more rule (b_gate: only with W_gate) */
			const size_t old = path_key(c, k->name);
			const int r = k->check(c, root, get(root, k->name));
			if (r < 0)
				return -1;
			path_set(c, old);
			if (r > 0) /* read as absent */
				continue;
		}
		k->shape(m, &rows, &cols);
		if (li_read_shaped(c, root, k->name, rows, cols, k->hint != NULL ? _(k->hint) : NULL, _(k->hint2), -1,
		                   lp_mat(&m->lp, k)) != 0)
			return -1;
	}
	return 0;
}

int li_put(cJSON *o, const char *key, cJSON *item)
{
	if (item == NULL || !cJSON_AddItemToObject(o, key, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

int li_keys_write_layer(cJSON *o, const LayerParams *lp, const Model *m, LkAt at)
{
	FOR_EACH_KEY(k) {
		const Mat *x;
		if (k->kind == LK_CUSTOM && k->write_layer != NULL && k->write_layer(o, lp, m, at) != 0)
			return -1;
		if (k->kind != LK_MATRIX || mat_empty(x = lp_mat_of(lp, k)))
			continue;
		if (li_put(o, k->name, k->hint == NULL ? jw_flat(x) : jw_matrix(x)) != 0)
			return -1;
	}
	return 0;
}

int li_keys_write_model(cJSON *o, const Model *m, const Model *top)
{
	FOR_EACH_KEY(k) {
		int r = 0;
		if (k->kind == LK_CAP) {
			const double x = cfg_double_of(&m->cfg, k);
			if (x > 0.0 || (top != NULL && cfg_double_of(&top->cfg, k) > 0.0))
				r = li_put(o, k->name, jw_number(x));
		} else if (k->kind == LK_MATRIX) {
			if (top != NULL && !mat_empty(lp_mat_of(&top->lp, k)) && mat_empty(lp_mat_of(&m->lp, k)))
				r = cJSON_AddFalseToObject(o, k->name) == NULL ? -1 : 0;
		} else if (k->write != NULL)
			r = k->write(o, m, top);
		if (r != 0)
			return -1;
	}
	return 0;
}

int li_key_size(Ctx *c, const cJSON *obj, const char *key, long long lo, long long hi, long long dflt, int *out)
{
	long long v = dflt;
	char expect[96];

	snprintf(expect, sizeof expect, _("a whole number from %lld to %lld"), lo, hi);
	if (get(obj, key) == NULL && dflt < 0) {
		size_t old = path_key(c, key);
		fail(c, _("missing: %s"), expect);
		path_set(c, old);
		return -1;
	}
	if (key_whole(c, obj, key, (double)lo, (double)hi, expect, &v) != 0)
		return -1;
	*out = (int)v;
	return 0;
}

int li_key_eps(Ctx *c, const cJSON *obj, double *eps)
{
	size_t old;

	if (key_finite(c, obj, "eps", eps) != 0)
		return -1;
	if (*eps > 0)
		return 0;
	old = path_key(c, "eps");
	fail(c, _("expected a number > 0 (it keeps the norm from dividing by 0), got %g"), *eps);
	path_set(c, old);
	return -1;
}
