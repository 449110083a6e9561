/*
 * lesson_read.c: a lesson file (lessons/FORMAT.md, formats 1 and 2) turned
 * into a checked Lesson: the text parsed, the top-level keys, the tokens,
 * the "compare" variant, and lesson_from_json, which runs the passes.
 *
 * Loading runs in four passes, so that nothing large is allocated before
 * the lesson is known to fit the documented limits:
 *   1. parse the JSON (jr_parse) and report syntax errors as FILE:LINE:COL;
 *   2. read every scalar and the *shape* of every matrix from the tree
 *      (MatSrc: a literal array or a generator, not yet filled in;
 *      lesson_matrices.c);
 *   3. check the shapes against each other and against the limits
 *      (li_check_shapes, shared with lesson_validate; lesson_shapes.c),
 *      then the steps (lesson_steps.c);
 *   4. allocate and fill the matrices, and load the "compare" variant.
 * Every content error names the JSON path of the value at fault.
 */
#include "lesson/lesson_internal.h"
#include "model/ropefreq.h"
#include "base/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------ */
/* Tokens                                                              */
/* ------------------------------------------------------------------ */

/* Labels from an array of strings, or generated prefix0 … when arr is NULL. */
static int read_tokens(Ctx *c, const cJSON *arr, int n, const char *prefix, char ***out)
{
	const cJSON *it;
	char **t, label[32];
	int i = 0;

	t = calloc((size_t)n + 1, sizeof *t);
	*out = t;
	if (t == NULL)
		return fail_oom(c);
	if (arr == NULL) {
		for (i = 0; i < n; i++) {
			snprintf(label, sizeof label, "%s%d", prefix, i);
			t[i] = strdup(label);
			if (t[i] == NULL)
				return fail_oom(c);
		}
		return 0;
	}
	cJSON_ArrayForEach(it, arr) {
		size_t old = path_index(c, i);
		if (read_string(c, it, &t[i]) != 0)
			return -1;
		path_set(c, old);
		i++;
	}
	return 0;
}
/* Count the labels of the tokens array at key (path key), or -1 when absent. */
static int count_tokens(Ctx *c, const cJSON *obj, const char *key, const cJSON **arr)
{
	const cJSON *v = get(obj, key), *it;
	size_t old;
	int n = 0;

	*arr = v;
	if (v == NULL)
		return -1;
	old = path_key(c, key);
	if (!cJSON_IsArray(v)) {
		fail(c, _("expected an array of labels (strings), got %s"), got(v).s);
		return -2;
	}
	cJSON_ArrayForEach(it, v)
		n++;
	if (n == 0) {
		fail(c, _("expected at least one label, got an empty array"));
		return -2;
	}
	if (n > LESSON_MAX_TOKENS) {
		fail(c, _("%d labels is over the limit of %d tokens (LESSON_MAX_TOKENS)"), n, LESSON_MAX_TOKENS);
		return -2;
	}
	path_set(c, old);
	return n;
}

/* ------------------------------------------------------------------ */
/* The whole lesson                                                    */
/* ------------------------------------------------------------------ */

static const char *const v2_keys[] = { "b_q", "b_k", "b_v", "b_o", "block", "layers", "backward", "encoder",
	                               "kv_heads", "vocab", "unembed", "ids", "logits_row", "PE",
	                               "gated_deltanet", "mla", "diff_attn", "embed_scale", NULL }; /* and every table's (lesson_keys.h) */

/* A version-2 key in a version-1 file, or a key this build does not read yet. */
static int check_version_keys(Ctx *c, const cJSON *root, int version)
{
	size_t old;

	const char *keys[LK_MAX_NAMES];

	li_key_list(v2_keys, LK_TOP, keys, LK_MAX_NAMES);
	for (int i = 0; keys[i] != NULL; i++) {
		if (get(root, keys[i]) == NULL)
			continue;
		old = path_key(c, keys[i]);
		if (version < 2)
			fail(c, _("needs format version 2: start the lesson with \"attnviz\": 2"));
		path_set(c, old);
		if (c->err != NULL)
			return -1;
	}
	return 0;
}

const char *const li_top_keys[] = {
	"attnviz", "title", "summary", "tokens", "X", "positional", "source", "heads",
	"W_q", "W_k", "W_v", "W_o", "score", "w_e", "scale", "mask", "mask_fill", "steps", "compare",
	"b_q", "b_k", "b_v", "b_o", "block", "layers", "backward", "encoder", "self", "cross",
	"kv_heads", "vocab", "unembed", "ids",
	"logits_row", "PE", "model", "gated_deltanet", "mla", "diff_attn", "embed_scale",
	NULL /* and every table's (lesson_keys.h): li_warn_unknown_top */
};
static const char *const source_keys[] = { "tokens", "X", NULL };
/* The top-level keys a "compare" may not change. */
static const char *const compare_fixed[] = { "attnviz", "title", "summary", "steps", "compare", NULL };

static int is_top_key(const char *key)
{
	int k;

	for (k = 0; li_top_keys[k] != NULL; k++)
		if (strcmp(key, li_top_keys[k]) == 0)
			return 1;
	return li_key_known(key, LK_TOP);
}

void li_warn_unknown_top(Ctx *c, const cJSON *root)
{
	const char *known[LK_MAX_NAMES];

	li_key_list(li_top_keys, LK_TOP, known, LK_MAX_NAMES);
	warn_unknown_keys(c, root, known);
}

/* "self" and "cross" belong to an encoder–decoder: without "encoder" they would be ignored, so they are refused. */
static int refuse_stray_parts(Ctx *c, const cJSON *root)
{
	static const char *const parts[] = { "self", "cross" };

	if (!cJSON_IsObject(root) || get(root, "encoder") != NULL)
		return 0;
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		if (get(root, parts[i]) != NULL) {
			size_t old = path_key(c, parts[i]);
			fail(c, _("only in an encoder\u2013decoder lesson (one with \"encoder\"): the decoder's %s-attention; "
			        "a lesson without an encoder gives its attention's keys at the top level"),
			     parts[i]);
			path_set(c, old);
			return -1;
		}
	return 0;
}

/* "compare": the same lesson with some top-level keys replaced. */
int li_read_compare(Ctx *c, const cJSON *root, Lesson *l)
{
	const cJSON *cmp = get(root, "compare"), *it;
	cJSON *variant = NULL;
	StrBuf *saved_warn;
	size_t old;
	int i, nchanged = 0, r = -1;

	if (cmp == NULL)
		return 0;
	old = path_key(c, "compare");
	if (!cJSON_IsObject(cmp)) {
		fail(c, _("expected an object {\"label\": …, KEY: VALUE, …}, got %s"), got(cmp).s);
		goto out;
	}
	if (li_key_text(c, cmp, "label", &l->compare_label) != 0)
		goto out;
	/* Which keys it changes: a fixed key is an error, an unknown one a warning (and ignored). */
	cJSON_ArrayForEach(it, cmp) {
		if (strcmp(it->string, "label") == 0)
			continue;
		for (i = 0; compare_fixed[i] != NULL; i++)
			if (strcmp(it->string, compare_fixed[i]) == 0)
				break;
		if (compare_fixed[i] != NULL) {
			size_t old2 = path_key(c, it->string);
			fail(c, _("a comparison cannot change \"%s\" (it changes the computation: keys such as "
			        "\"mask\", \"scale\" or \"W_q\")"), it->string);
			path_set(c, old2);
			goto out;
		}
		if (!is_top_key(it->string)) {
			const char *cands[LK_MAX_NAMES];
			const int nc = li_key_list(li_top_keys, LK_TOP, cands, LK_MAX_NAMES);
			warnf(c, _("unknown key %s%s"), quoted(it->string).s, did_you_mean(it->string, cands, nc).s);
			continue;
		}
		nchanged++;
	}
	/*
	 * The variant is the lesson with those keys replaced, made of references
	 * to the values already parsed: the numbers of a large lesson are not
	 * copied (cJSON_Delete of the variant frees only the references).
	 */
	variant = cJSON_CreateObject();
	if (variant == NULL) {
		fail_oom(c);
		goto out;
	}
	cJSON_ArrayForEach(it, root) {
		const cJSON *over = strcmp(it->string, "label") != 0 ? get(cmp, it->string) : NULL;
		if (strcmp(it->string, "compare") == 0 || strcmp(it->string, "steps") == 0)
			continue;
		if (!cJSON_AddItemReferenceToObject(variant, it->string, (cJSON *)(over != NULL ? over : it))) {
			fail_oom(c);
			goto out;
		}
	}
	cJSON_ArrayForEach(it, cmp)
		if (strcmp(it->string, "label") != 0 && get(root, it->string) == NULL && is_top_key(it->string) &&
		    !cJSON_AddItemReferenceToObject(variant, it->string, (cJSON *)it)) {
			fail_oom(c);
			goto out;
		}
	if (nchanged == 0)
		warnf(c, _("changes nothing (give the keys whose values differ, e.g. \"mask_fill\": 0)"));
	/* The variant's own warnings would only repeat this lesson's. */
	saved_warn = c->warn;
	c->warn = NULL;
	l->compare = li_lesson_from_json(c, variant, 1);
	c->warn = saved_warn;
	if (l->compare == NULL)
		goto out;
	r = 0;
out:
	cJSON_Delete(variant);
	path_set(c, old);
	return r;
}

/* ------------------------------------------------------------------ */
/* A lesson on a real model ("model")                                  */
/* ------------------------------------------------------------------ */

/* The top-level keys a lesson on a real model gives: the rest comes from the model. */
static const char *const on_model_keys[] = { "attnviz", "title", "summary", "steps", "model", NULL };
static const char *const model_ref_keys[] = { "path", "prompt", NULL };

/* "model"'s KEY as a string (*out, heap); what: what is expected. */
static int model_ref_string(Ctx *c, const cJSON *m, const char *key, const char *what, char **out)
{
	const cJSON *v = get(m, key);
	size_t old = path_key(c, key);

	if (v == NULL)
		return fail(c, _("missing: %s"), what);
	if (!cJSON_IsString(v) || v->valuestring[0] == '\0')
		return fail(c, _("expected a string (%s), got %s"), what, got(v).s);
	if ((*out = strdup(v->valuestring)) == NULL)
		return fail_oom(c);
	path_set(c, old);
	return 0;
}

/*
 * A lesson whose computation is a real model's: its title, summary and the
 * reference ("model": {"path", "prompt"}); the steps are read once the
 * model is there (lesson_on_model). Every key that would give the
 * computation itself (X, the weights, "layers", …) is refused.
 */
static Lesson *read_on_model(Ctx *c, const cJSON *root)
{
	const cJSON *m = get(root, "model"), *it;
	Lesson *l = calloc(1, sizeof *l);
	size_t base = c->pathlen, old;

	if (l == NULL || (l->path = strdup(c->name)) == NULL) {
		fail_oom(c);
		goto fail;
	}
	li_warn_unknown_top(c, root);
	warn_duplicate_keys(c, root);
	if (li_read_version(c, root, &l->version) != 0)
		goto fail;
	cJSON_ArrayForEach(it, root) {
		int allowed = !is_top_key(it->string);
		for (int k = 0; on_model_keys[k] != NULL; k++)
			allowed |= strcmp(it->string, on_model_keys[k]) == 0;
		if (!allowed) {
			path_key(c, it->string);
			fail(c, _("not with \"model\": a lesson on a real model takes its tokens, X and weights from the model "
			        "(leave %s out)"), it->string);
			goto fail;
		}
	}
	old = path_key(c, "model");
	if (l->version < 2) {
		fail(c, _("needs format version 2: start the lesson with \"attnviz\": 2"));
		goto fail;
	}
	if (!cJSON_IsObject(m)) {
		fail(c, _("expected an object {\"path\": \"DIR\", \"prompt\": \"TEXT\"}, got %s"), got(m).s);
		goto fail;
	}
	warn_unknown_keys(c, m, model_ref_keys);
	if (model_ref_string(c, m, "path", _("a model folder, ORG/NAME or the name of a model that ships with attnviz"),
	                     &l->model_path) != 0 ||
	    model_ref_string(c, m, "prompt", _("the text the model reads"), &l->model_prompt) != 0)
		goto fail;
	path_set(c, old);
	if (li_key_text(c, root, "title", &l->title) != 0 || li_key_text(c, root, "summary", &l->summary) != 0)
		goto fail;
	path_set(c, base);
	return l;
fail:
	path_set(c, base);
	lesson_free(l);
	return NULL;
}

/* The matrix src will fill, as rows and columns alone (no numbers yet: li_fill_mat makes them). */
static void shape_only(Mat *m, const MatSrc *src)
{
	m->rows = src->kind == SRC_ABSENT ? 0 : src->rows;
	m->cols = src->kind == SRC_ABSENT ? 0 : src->cols;
	m->a = NULL;
}

/*
 * The output's width where another attention reads it: a stack's layer
 * before the last feeds the next layer, an encoder's last layer the
 * decoder's cross-attention; each reads rows of d_model numbers.
 */
static int check_out_width(Ctx *c, const ModelConfig *cfg, const LayerParams *lp)
{
	const int has_wo = !mat_empty(&lp->W_o);
	const Stack *st = li_stack(c);
	const int in_stack = c->layer_obj != NULL && st->part == PART_LAYER;
	const int next = in_stack && c->layer_index < st->nlayers - 1;
	const int memory = st->encoder_out && (!in_stack || c->layer_index == st->nlayers - 1);
	size_t old;

	if ((!next && !memory) || lp->d_out == cfg->d_model)
		return 0;
	old = path_key(c, has_wo ? "W_o" : "W_v");
	if (next)
		fail(c, _("layer %d's output has %d columns, but layer %d reads rows of d_model = %d numbers: %s"),
		     c->layer_index, lp->d_out, c->layer_index + 1, cfg->d_model,
		     has_wo ? _("give W_o d_model columns") : _("give W_o (heads × d_v rows, d_model columns)"));
	else
		fail(c, _("the encoder's output has %d columns, but the decoder's cross-attention reads rows of the "
		          "encoder's d_model = %d numbers: %s"),
		     lp->d_out, cfg->d_model,
		     has_wo ? _("give W_o d_model columns") : _("give W_o (heads × d_v rows, d_model columns)"));
	path_set(c, old);
	return -1;
}

/*
 * One layer's model read from root into m (zeroed): the settings it is
 * read with (m->cfg) and its parameters (m->lp). l: the lesson root is the
 * top level of (its version, title and summary, steps and comparison), or
 * NULL for a stack's layer or a decoder's link, which is a model alone
 * (is_variant then 1). 0, or -1 with c->err set (m then holds what the
 * caller frees).
 */
static int read_model(Ctx *c, const cJSON *root, Model *m, Lesson *l, int is_variant)
{
	const cJSON *src = NULL, *tok_arr = NULL, *src_tok_arr = NULL, *we;
	MatSrc ms_x, ms_s, ms_q, ms_k, ms_v, ms_o, ms_e;
	MaskSrc parts[LESSON_MAX_MASKS];
	Text title = { 0 }, summary = { 0 };
	int nparts = 0, version = 0;
	TokenCounts tc;
	size_t base = c->pathlen, old;
	int ok = 0;

	memset(&ms_s, 0, sizeof ms_s);
	memset(&ms_e, 0, sizeof ms_e);
	if (!is_variant) {
		li_warn_unknown_top(c, root);
		warn_duplicate_keys(c, root);
	}
	if (li_read_version(c, root, &version) != 0 || check_version_keys(c, root, version) != 0)
		goto out;
	if (l != NULL)
		l->version = version;
	/* a layer's or a link's title and summary are the lesson's (read for their errors, in the order they come) */
	if (li_key_text(c, root, "title", l != NULL ? &l->title : &title) != 0 ||
	    li_key_text(c, root, "summary", l != NULL ? &l->summary : &summary) != 0)
		goto out;
	if (li_read_scalars(c, root, m) != 0 || li_read_modern(c, root, m) != 0 || li_read_block_settings(c, root, m) != 0 ||
	    li_read_mla_settings(c, root, m) != 0 || li_read_diff_settings(c, root, m) != 0)
		goto out;

	/* Shapes of every matrix, nothing allocated yet. */
	if (get(root, "X") == NULL) {
		old = path_key(c, "X");
		fail(c, _("missing: the input rows, one per token (an n × d_model matrix or a generator)"));
		path_set(c, old);
		goto out;
	}
	if (li_read_matsrc(c, root, "X", &LIM_TOKENS_DIM, &ms_x) != 0)
		goto out;
	src = get(root, "source");
	if (src != NULL) {
		old = path_key(c, "source");
		if (!cJSON_IsObject(src)) {
			fail(c, _("expected an object {\"tokens\": […], \"X\": […]}, got %s"), got(src).s);
			goto out;
		}
		warn_unknown_keys(c, src, source_keys);
		if (get(src, "X") == NULL) {
			path_key(c, "X");
			fail(c, _("missing: the source rows (an m × d_src matrix or a generator)"));
			goto out;
		}
		if (li_read_matsrc(c, src, "X", &LIM_TOKENS_DIM, &ms_s) != 0)
			goto out;
		path_set(c, old);
	}
	{
		static const char *const need[] = { "W_q", "W_k", "W_v" };
		int i;
		for (i = 0; i < 3 && !m->lp.mla.on; i++) /* MLA: its own (lesson_mla.c) */
			if (get(root, need[i]) == NULL) {
				old = path_key(c, need[i]);
				fail(c, _("missing (every lesson gives W_q, W_k and W_v)"));
				path_set(c, old);
				goto out;
			}
	}
	if (li_read_matsrc(c, root, "W_q", &LIM_DIM_DIM, &ms_q) != 0 ||
	    li_read_matsrc(c, root, "W_k", &LIM_DIM_DIM, &ms_k) != 0 ||
	    li_read_matsrc(c, root, "W_v", &LIM_DIM_DIM, &ms_v) != 0 ||
	    li_read_matsrc(c, root, "W_o", &LIM_DIM_DIM, &ms_o) != 0)
		goto out;
	we = get(root, "w_e");
	if (we != NULL && m->cfg.score != SCORE_ADDITIVE) {
		old = path_key(c, "w_e");
		warnf(c, _("not used: w_e is for \"score\": \"additive\""));
		path_set(c, old);
	} else if (li_read_matsrc(c, root, "w_e", &LIM_VECTOR, &ms_e) != 0) {
		goto out;
	}
	if (li_read_mask(c, root, m, parts, &nparts) != 0)
		goto out;

	/* Tokens: counted now, read once the shapes agree. */
	tc.ntokens = count_tokens(c, root, "tokens", &tok_arr);
	if (tc.ntokens == -2)
		goto out;
	if (tc.ntokens < 0 && !li_is_generated(&ms_x)) {
		old = path_key(c, "tokens");
		fail(c, _("missing: one label per row of X (only a generated X may leave them out)"));
		path_set(c, old);
		goto out;
	}
	tc.nsource_tokens = -1;
	if (src != NULL) {
		old = path_key(c, "source");
		tc.nsource_tokens = count_tokens(c, src, "tokens", &src_tok_arr);
		if (tc.nsource_tokens == -2)
			goto out;
		if (tc.nsource_tokens < 0 && !li_is_generated(&ms_s)) {
			path_key(c, "tokens");
			fail(c, _("missing: one label per row of source.X (only a generated source.X may leave them out)"));
			goto out;
		}
		path_set(c, old);
	}

	/*
	 * The model takes every matrix's rows and columns now, its numbers later
	 * (li_fill_mat): the shape rules read the model itself. So do the
	 * stages' rules, which the steps are checked with before the rest is
	 * read: the LM head's size, the tables' matrices, Gated DeltaNet, the final norm
	 * and the loss stand in as the file gives them.
	 */
	m->cfg.has_source = src != NULL;
	shape_only(&m->cfg.input, &ms_x);
	shape_only(&m->cfg.source_input, &ms_s);
	shape_only(&m->lp.W_q, &ms_q);
	shape_only(&m->lp.W_k, &ms_k);
	shape_only(&m->lp.W_v, &ms_v);
	shape_only(&m->lp.W_o, &ms_o);
	shape_only(&m->lp.w_e, &ms_e);
	if (m->cfg.mask == MASK_LIST) {
		if ((m->cfg.masks = calloc((size_t)nparts, sizeof *m->cfg.masks)) == NULL) {
			fail_oom(c);
			goto out;
		}
		m->cfg.nmasks = nparts;
		for (int i = 0; i < nparts; i++) {
			m->cfg.masks[i].kind = parts[i].kind;
			m->cfg.masks[i].window = parts[i].window;
			shape_only(&m->cfg.masks[i].matrix, &parts[i].ms);
		}
	} else if (nparts == 1)
		shape_only(&m->cfg.mask_matrix, &parts[0].ms);
	/* the LM head's size now, so that steps may point at it (its numbers are read with the others) */
	m->cfg.vocab = li_lm_carrier(c) && cJSON_IsArray(get(root, "vocab")) ? cJSON_GetArraySize(get(root, "vocab")) : 0;
	li_keys_given_shapes(root, m); /* the tables' matrices (lesson_keys.h): the sinks, W_gate, … */
	if (cJSON_IsObject(get(root, "gated_deltanet"))) /* issue 24 §3 */
		m->lp.gdn_A_log.rows = 1, m->lp.gdn_A_log.cols = m->lp.heads, li_deltanet_shape(get(root, "gated_deltanet"), m);
	if (m->lp.mla.on) { /* MLA: W_k and W_v have no matrix (nor W_q with q_lora_rank): the shapes they stand for */
		const int hq = m->lp.heads * m->lp.d_k;
		if (m->lp.mla.q_lora_rank == 0 && (ms_q.rows != ms_x.cols || ms_q.cols != hq)) {
			old = path_key(c, "W_q");
			fail(c, _("expected %d × %d (d_model × heads·(qk_nope_head_dim + qk_rope_head_dim)), got %d × %d"),
			     ms_x.cols, hq, ms_q.rows, ms_q.cols);
			path_set(c, old);
			goto out;
		}
	}
	if (li_stack(c)->part != PART_LAYER)
		m->cfg.has_final_norm = li_stack(c)->link_final;
	else if (c->layer_obj != NULL)
		m->cfg.has_final_norm = li_stack(c)->stack_final && c->layer_index == li_stack(c)->nlayers - 1;
	else
		m->cfg.has_final_norm = cJSON_IsObject(get(root, "block")) && get(get(root, "block"), "final_norm") != NULL;
	m->cfg.backward = get(root, "backward") != NULL ? BACKWARD_TARGET : BACKWARD_NONE; /* which: li_read_backward */
	if (li_check_shapes(c, &m->cfg, &m->lp, &tc) != 0)
		goto out;
	if (check_out_width(c, &m->cfg, &m->lp) != 0)
		goto out;
	if (li_stack(c)->count_only) { /* a stack's layer counted, nothing filled (li_lesson_with_layers) */
		li_stack(c)->counted += lesson_model_count_numbers(&m->cfg, &m->lp);
		if (m->cfg.score == SCORE_ADDITIVE)
			li_stack(c)->counted_terms += (double)m->cfg.n * m->cfg.m * m->lp.heads * m->lp.d_k;
		ok = 1;
		goto out;
	}

	old = path_key(c, "tokens");
	if (read_tokens(c, tok_arr, m->cfg.n, "t", &m->cfg.tokens) != 0)
		goto out;
	path_set(c, old);
	if (src != NULL) {
		old = path_key(c, "source.tokens");
		if (read_tokens(c, src_tok_arr, m->cfg.m, "s", &m->cfg.source_tokens) != 0)
			goto out;
		path_set(c, old);
	}
	if (!is_variant && li_read_steps(c, &m->cfg, &m->lp, root, l) != 0)
		goto out;
	/* what stood in for the steps is read with the numbers (or, for a stack's layer, by the stack) */
	m->cfg.vocab = 0;
	m->cfg.has_final_norm = 0;
	m->cfg.backward = BACKWARD_NONE;

	/* Now the numbers. */
	if (li_fill_mat(c, &ms_x, &m->cfg.input) != 0 || li_fill_mat(c, &ms_s, &m->cfg.source_input) != 0 ||
	    li_fill_mat(c, &ms_q, &m->lp.W_q) != 0 || li_fill_mat(c, &ms_k, &m->lp.W_k) != 0 ||
	    li_fill_mat(c, &ms_v, &m->lp.W_v) != 0 || li_fill_mat(c, &ms_o, &m->lp.W_o) != 0 ||
	    li_fill_mat(c, &ms_e, &m->lp.w_e) != 0)
		goto out;
	if (m->cfg.mask == MASK_LIST) {
		for (int i = 0; i < nparts; i++)
			if (li_fill_mat(c, &parts[i].ms, &m->cfg.masks[i].matrix) != 0)
				goto out;
	} else if (nparts == 1 && li_fill_mat(c, &parts[0].ms, &m->cfg.mask_matrix) != 0)
		goto out;
	if (li_read_v2_matrices(c, root, m) != 0 || li_read_mla_matrices(c, root, m) != 0 || li_read_dsa_matrices(c, root, m) != 0 ||
	    li_read_diff_vectors(c, root, m) != 0 ||
	    (c->layer_obj == NULL && li_stack(c)->part == PART_LAYER && li_read_final_norm(c, root, m) != 0) ||
	    (c->layer_obj == NULL && li_read_backward(c, root, m) != 0))
		goto out;

	if (!is_variant) {
		int r;
		li_stack(c)->numbers_before = lesson_model_count_numbers(&m->cfg, &m->lp); /* the variant counts with this lesson */
		r = li_read_compare(c, root, l);
		li_stack(c)->numbers_before = 0;
		if (r != 0)
			goto out;
	}
	ok = 1;
out:
	path_set(c, base);
	text_free(&title);
	text_free(&summary);
	/* on failure m->cfg.n and m are set before the token arrays are made: the caller's free can count them */
	return ok ? 0 : -1;
}


/* Turn a parsed lesson object into a Lesson, or NULL with c->err set. */
Lesson *li_lesson_from_json(Ctx *c, const cJSON *root, int is_variant)
{
	Lesson *l;

	if (!is_variant && cJSON_IsObject(root) && get(root, "model") != NULL)
		return read_on_model(c, root);
	if (cJSON_IsObject(root) && get(root, "encoder") != NULL && cJSON_IsNumber(get(root, "attnviz")) &&
	    get(root, "attnviz")->valuedouble == 2)
		return li_lesson_encdec(c, root, is_variant);
	if (cJSON_IsObject(root) && get(root, "layers") != NULL && cJSON_IsNumber(get(root, "attnviz")) &&
	    get(root, "attnviz")->valuedouble == 2)
		return li_lesson_with_layers(c, root, get(root, "layers"), is_variant);
	l = calloc(1, sizeof *l);
	if (l == NULL) {
		fail_oom(c);
		return NULL;
	}
	if ((l->path = strdup(c->name)) == NULL)
		fail_oom(c);
	else if (!cJSON_IsObject(root))
		fail(c, _("a lesson is one JSON object {\"attnviz\": 1, …}, but this file holds %s"), got(root).s);
	if (c->err != NULL || read_model(c, root, &l->model, l, is_variant) != 0) {
		/* l->cfg.n and m are set before the token arrays are made: lesson_free can count them. */
		lesson_free(l);
		return NULL;
	}
	return l;
}

int li_read_layer(Ctx *c, const cJSON *root, Model *m)
{
	return read_model(c, root, m, NULL, 1);
}

/* ------------------------------------------------------------------ */
/* Loading: text to cJSON (jr_parse), then to a Lesson                 */
/* ------------------------------------------------------------------ */

/* The warnings the caller already has (*warn_out), to append to. */
static void warn_take(StrBuf *w, char **warn_out)
{
	if (warn_out != NULL && *warn_out != NULL) {
		w->s = *warn_out;
		w->len = strlen(w->s);
		w->cap = w->len + 1;
		*warn_out = NULL;
	}
}

/* The error (e; "NAME: out of memory" when failed without one) and the warnings to the caller. */
static void hand_back(const char *name, int failed, char *e, char **err, StrBuf *w, char **warn_out)
{
	if (e == NULL && failed)
		e = str_printf(_("%s: out of memory"), name);
	if (err != NULL)
		*err = e;
	else
		free(e);
	if (warn_out != NULL && w->len > 0 && !w->oom)
		*warn_out = w->s;
	else
		free(w->s);
}

/* A lesson on a real model keeps its file's text until its steps are read on the model. */
static int keep_text(Lesson *l, const char *buf, size_t len)
{
	if ((l->model_src = malloc(len + 1)) == NULL)
		return -1;
	memcpy(l->model_src, buf, len);
	l->model_src[len] = '\0';
	return 0;
}

Lesson *lesson_on_model(Lesson *course, Lesson *model, char **err, char **warn_out)
{
	StrBuf w = { 0 };
	Stack st = { 0 };
	cJSON *root;
	ModelConfig c0;
	char *e = NULL;
	Lesson *r = NULL;
	Ctx c;

	warn_take(&w, warn_out);
	root = jr_parse(course->path, course->model_src, strlen(course->model_src), 1, _("lesson"), "{\"attnviz\": 2, …}", &e);
	if (root != NULL) {
		ctx_init(&c, course->path, &w);
		st.model = &model->model;
		c.reader = &st;
		li_layer_config(&model->model, 0, &c0);
		if (li_read_steps(&c, &c0, &model->lp, root, model) == 0) {
			/* the model with the course's words: its path the lesson file's, the folder kept as model_dir */
			text_free(&model->title);
			text_free(&model->summary);
			model->title = course->title;
			model->summary = course->summary;
			memset(&course->title, 0, sizeof course->title);
			memset(&course->summary, 0, sizeof course->summary);
			free(model->model_dir);
			model->model_dir = model->path;
			model->path = course->path;
			model->model_path = course->model_path;
			model->model_prompt = course->model_prompt;
			course->path = course->model_path = course->model_prompt = NULL;
			r = model;
			model = NULL;
		}
		e = c.err;
		cJSON_Delete(root);
	}
	hand_back(course->path, r == NULL, e, err, &w, warn_out);
	lesson_free(course);
	lesson_free(model);
	return r;
}

/*
 * lesson_load_string; terminated = 1 promises buf[len] == '\0', so the text
 * is parsed where it is, without a copy (a 64 MiB file is not held twice).
 */
static Lesson *load_text(const char *name, const char *buf, size_t len, int terminated, char **err,
                         char **warn_out)
{
	Lesson *l = NULL;
	cJSON *root = NULL;
	char *e = NULL;
	StrBuf w = { 0 };
	Stack st = { 0 };
	Ctx c;

	if (name == NULL)
		name = "(lesson)";
	warn_take(&w, warn_out);
	if (len > (size_t)LESSON_MAX_BYTES) {
		e = str_printf(_("%s: the file is %zu bytes, over the limit of %ld bytes (LESSON_MAX_BYTES)"), name, len,
		           (long)LESSON_MAX_BYTES);
		goto out;
	}
	root = jr_parse(name, buf, len, terminated, _("lesson"), "{\"attnviz\": 1, …}", &e);
	if (root == NULL)
		goto out;
	ctx_init(&c, name, &w);
	c.reader = &st;
	l = refuse_stray_parts(&c, root) != 0 ? NULL : li_lesson_from_json(&c, root, 0);
	cJSON_Delete(root);
	e = c.err;
	if (l != NULL && l->model_path != NULL && keep_text(l, buf, len) != 0) { /* its steps: read on the model */
		lesson_free(l);
		l = NULL;
	}
out:
	hand_back(name, l == NULL, e, err, &w, warn_out);
	return l;
}

Lesson *lesson_load_string(const char *name, const char *buf, size_t len, char **err, char **warn_out)
{
	return load_text(name, buf, len, 0, err, warn_out);
}

Lesson *lesson_load(const char *path, char **err, char **warn_out)
{
	/* The name as messages show it: a file name may hold control characters too. */
	char *shown = text_escape(path, "");
	struct stat st;
	Lesson *l = NULL;
	char *buf = NULL, *p;
	size_t len = 0, cap;
	ssize_t got_bytes;
	const char *kind;
	int fd;

	if (err != NULL)
		*err = NULL;
	if (shown == NULL) {
		if (err != NULL)
			*err = str_printf("%s", _("out of memory"));
		return NULL;
	}
	/* Regular files only: a FIFO or a device is refused at once, never waited on (fileio.h). */
	fd = fileio_open_regular(path, &st, &kind);
	if (fd < 0) {
		if (err != NULL)
			*err = kind != NULL ? str_printf(_("%s: is %s, not a lesson file"), shown, kind)
			                    : str_printf(_("%s: cannot open: %s"), shown, strerror(errno));
		free(shown);
		return NULL;
	}
	if (st.st_size > (off_t)LESSON_MAX_BYTES) {
		if (err != NULL)
			*err = str_printf(_("%s: the file is %lld bytes, over the limit of %ld bytes (LESSON_MAX_BYTES)"), shown,
			              (long long)st.st_size, (long)LESSON_MAX_BYTES);
		goto out;
	}
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap);
	if (buf == NULL) {
		if (err != NULL)
			*err = str_printf(_("%s: out of memory"), shown);
		goto out;
	}
	for (;;) {
		if (len == cap) {
			if (cap > (size_t)LESSON_MAX_BYTES)
				break; /* over the limit: lesson_load_string says so */
			cap *= 2;
			p = realloc(buf, cap);
			if (p == NULL) {
				if (err != NULL)
					*err = str_printf(_("%s: out of memory"), shown);
				goto out;
			}
			buf = p;
		}
		got_bytes = read(fd, buf + len, cap - len);
		if (got_bytes < 0) {
			if (errno == EINTR)
				continue;
			if (err != NULL)
				*err = str_printf(_("%s: cannot read: %s"), shown, strerror(errno));
			goto out;
		}
		if (got_bytes == 0)
			break;
		len += (size_t)got_bytes;
	}
	if (len == cap) { /* room for the NUL that lets the parser read the text in place */
		p = realloc(buf, cap + 1);
		if (p == NULL) {
			if (err != NULL)
				*err = str_printf(_("%s: out of memory"), shown);
			goto out;
		}
		buf = p;
	}
	buf[len] = '\0';
	l = load_text(shown, buf, len, 1, err, warn_out);
out:
	free(buf);
	free(shown);
	close(fd);
	return l;
}

