/*
 * lesson_diff.c: a lesson's "diff_attn" (issue 24 §4): differential attention
 * (model.h: DiffParams; engine/variants/diffattn.c).
 *
 *   "diff_attn": true, or {"depth": 0, "lambda_init": 0.2 (instead of depth),
 *                "lambda_q1": d_k numbers, "lambda_k1", "lambda_q2", "lambda_k2" (0 when absent),
 *                "subln": 2·d_v numbers (1 when absent), "eps": 1e-5}
 * with the lesson's "heads" an even number: heads 2p and 2p + 1 are pair p's
 * two maps (and "kv_heads", when given, even: GQA's pairs of key/value heads).
 * RoPE and a causal mask act on the core's heads as they do without it. One row of this file's table
 * (lesson_keys.h): the settings are read before the shapes, the vectors after (their widths are the layer's d_k and d_v).
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const diff_keys[] = { "depth", "lambda_init", "lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2",
	                                 "subln", "eps", NULL };

/* Top-level keys a differential-attention lesson may not have (not computed with it yet). */
static const char *const diff_not[] = { "alibi", "decode", "flash", "backward", "source", "qk_norm",
	                                "sinks", "attn_logit_softcapping", "linear_attention", "gated_deltanet", "mla",
	                                "compare", "block", "b_q", "b_k", "b_v", "b_o", "vocab", "w_e", NULL };

static int read_diff_settings(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *o = get(root, "diff_attn");
	DiffParams *p = &l->lp.diff;
	size_t old;

	if (o == NULL || cJSON_IsFalse(o))
		return 0;
	old = path_key(c, "diff_attn");
	if (c->layer_obj != NULL || li_stack(c)->part != PART_LAYER || get(root, "layers") != NULL) {
		fail(c, "%s", _("differential attention is a single layer's for now: not in \"layers\" or an encoder\u2013decoder "
		                "(give the layer's index as \"depth\")"));
		goto bad;
	}
	if (!cJSON_IsTrue(o) && !cJSON_IsObject(o)) {
		fail(c, _("expected true or an object {\"depth\": 0, \"lambda_q1\": [\u2026], \u2026}, got %s"), got(o).s);
		goto bad;
	}
	if (cJSON_IsObject(o) && refuse_unknown_keys(c, o, diff_keys, _("key")) != 0)
		goto bad;
	path_set(c, old);
	for (int k = 0; diff_not[k] != NULL; k++)
		if (get(root, diff_not[k]) != NULL && !cJSON_IsFalse(get(root, diff_not[k]))) {
			path_key(c, diff_not[k]);
			fail(c, "%s", _("not with differential attention (\"diff_attn\") yet: it is computed forward, on one layer of "
			                "paired heads, without it"));
			goto bad;
		}
	if (l->cfg.score == SCORE_ADDITIVE) {
		path_key(c, "score");
		fail(c, "%s", _("differential attention's scores are dot products, q\u00b7k/\u221ad_k"));
		goto bad;
	}
	if (l->lp.heads < 2 || l->lp.heads % 2 != 0) {
		path_key(c, get(root, "heads") != NULL ? "heads" : "diff_attn");
		fail(c, _("differential attention pairs the heads (head 2p's map minus \u03bb times head 2p + 1's): it needs an even "
		          "number of heads, got %d"),
		     l->lp.heads);
		goto bad;
	}
	/* GQA: the reference's k has 2·kv pairs' heads and v kv heads of 2·d_v, each repeated heads/kv_heads times */
	if (l->lp.kv_heads != l->lp.heads && l->lp.kv_heads % 2 != 0) {
		path_key(c, "kv_heads");
		fail(c, _("differential attention pairs the key/value heads too (a pair's values are kv heads 2q and 2q + 1): it "
		          "needs an even number of kv_heads, got %d"),
		     l->lp.kv_heads);
		goto bad;
	}
	path_key(c, "diff_attn");
	p->depth = 0.0;
	p->eps = 1e-5;
	if (cJSON_IsObject(o)) {
		const cJSON *d = get(o, "depth"), *li = get(o, "lambda_init");
		if (d != NULL && li != NULL) {
			path_key(c, "lambda_init");
			fail(c, "%s", _("give \"depth\" (\u03bb_init = 0.8 \u2212 0.6\u00b7e^(\u22120.3\u00b7depth)) or \"lambda_init\", not both"));
			goto bad;
		}
		if (d != NULL) {
			const size_t old2 = path_key(c, "depth");
			if (!cJSON_IsNumber(d) || !isfinite(d->valuedouble) || d->valuedouble < 0 || d->valuedouble > 1000 ||
			    d->valuedouble != floor(d->valuedouble)) {
				fail(c, _("expected the layer's 0-based index, a whole number from 0 to 1000, got %s"), got(d).s);
				goto bad;
			}
			p->depth = d->valuedouble;
			path_set(c, old2);
		}
		if (li != NULL) {
			if (key_finite(c, o, "lambda_init", &p->lambda_init) != 0)
				goto bad;
			p->depth = -1.0;
		}
		if (li_key_eps(c, o, &p->eps) != 0)
			goto bad;
	}
	if (p->depth >= 0)
		p->lambda_init = 0.8 - 0.6 * exp(-0.3 * p->depth);
	p->on = 1;
	path_set(c, old);
	return 0;
bad:
	path_set(c, old);
	return -1;
}

static int read_diff_vectors(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *o = get(root, "diff_attn");
	DiffParams *p = &l->lp.diff;
	const char *const names[] = { "lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2" };
	Mat *vec[] = { &p->lq1, &p->lk1, &p->lq2, &p->lk2 };
	const cJSON *empty = NULL;
	size_t old;
	int r = 0;

	if (!p->on)
		return 0;
	if (!cJSON_IsObject(o))
		o = empty = cJSON_CreateObject();
	if (o == NULL) {
		fail_oom(c);
		return -1;
	}
	old = path_key(c, "diff_attn");
	for (int k = 0; k < 4 && r == 0; k++)
		r = li_read_shaped(c, o, names[k], 1, l->lp.d_k, NULL, _("d_k, a head's query/key width"), 0.0, vec[k]);
	if (r == 0)
		r = li_read_shaped(c, o, "subln", 1, 2 * l->lp.d_v, NULL, _("2\u00b7d_v, a pair of heads' value width"), 1.0, &p->subln);
	path_set(c, old);
	cJSON_Delete((cJSON *)empty);
	return r != 0 ? -1 : 0;
}

/* Depth or lambda_init, eps, the λ vectors and subln, as the loader reads them. */
static int write_diff(cJSON *o, const Model *m, const Model *top)
{
	const DiffParams *p = &m->lp.diff;
	cJSON *d;

	(void)top; /* a lesson with differential attention has no "compare" */
	if (!p->on)
		return 0;
	d = cJSON_CreateObject();
	if (li_put(o, "diff_attn", d) != 0 ||
	    (p->depth >= 0 ? li_put(d, "depth", jw_number(p->depth)) : li_put(d, "lambda_init", jw_number(p->lambda_init))) != 0)
		return -1;
	return li_put(d, "eps", jw_number(p->eps)) != 0 || li_put(d, "lambda_q1", jw_flat(&p->lq1)) != 0 ||
	               li_put(d, "lambda_k1", jw_flat(&p->lk1)) != 0 || li_put(d, "lambda_q2", jw_flat(&p->lq2)) != 0 ||
	               li_put(d, "lambda_k2", jw_flat(&p->lk2)) != 0 || li_put(d, "subln", jw_flat(&p->subln)) != 0
	               ? -1
	               : 0;
}

/* Differential attention's key, one table (lesson_keys.h): the settings before the shapes, the vectors after. A
 * layer may name it (so that it is refused there with its reason, not warned about as unknown). */
const LessonKey li_diff_keys[] = {
	{ .name = "diff_attn", .kind = LK_CUSTOM, .where = LK_TOP | LK_LAYER, .read = read_diff_settings,
	  .weights = read_diff_vectors, .write = write_diff },
	{ .name = NULL },
};
