/*
 * lesson_encdec.c: an encoder–decoder lesson ("encoder", "self", "cross"):
 * the encoder read as a stack of its own, and each decoder layer as two
 * links of the chain (its self-attention, then its cross-attention over
 * the encoder's memory), with messages at the file's own paths.
 */
#include "lesson/lesson_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Version 2: the encoder–decoder                                      */
/* ------------------------------------------------------------------ */

static const char *const encoder_keys[] = { "tokens", "X", "positional", "mask", "heads", "kv_heads", "W_q", "W_k",
	                                    "W_v", "W_o", "w_e", "b_q", "b_k", "b_v", "b_o", "block", "layers", NULL };
static const char *const attn_part_keys[] = { "heads", "kv_heads", "W_q", "W_k", "W_v", "W_o", "w_e",
	                                      "b_q", "b_k", "b_v", "b_o", "mask", NULL };
static const char *const dec_layer_keys[] = { "self", "cross", "block", NULL };
/* The top level's attention keys: an encoder–decoder gives them in "self", "cross" and "encoder". */
static const char *const encdec_refused[] = { "heads", "kv_heads", "W_q", "W_k", "W_v", "W_o", "w_e", "b_q", "b_k",
	                                      "b_v", "b_o", "source", "rope", "alibi", "decode", "flash", NULL };
/* Settings that apply to every attention of the lesson, the encoder's too. */
static const char *const encdec_shared[] = { "mask_fill", "scale", "score", NULL };
/* What each decoder link takes from the top level. */
static const char *const link_keys[] = { "attnviz", "title", "summary", "tokens", "X", "positional",
	                                 "mask_fill", "scale", "score", NULL };

/* A reference to v under key in obj (nothing copied; nothing when v is NULL). 0, or -1 out of memory. */
static int add_ref(cJSON *obj, const char *key, const cJSON *v)
{
	return v == NULL || cJSON_AddItemReferenceToObject(obj, key, (cJSON *)v) ? 0 : -1;
}

/* "encoder": read as a lesson of its own (a stack when it has "layers") at the path "encoder"; its model kept. */
static Model *read_encoder(Ctx *c, const cJSON *root)
{
	const cJSON *e = get(root, "encoder"), *it;
	cJSON *j = NULL;
	Lesson *read = NULL;
	Model *enc = NULL;
	const size_t saved_root = c->root_len;
	size_t old = path_key(c, "encoder");

	if (!cJSON_IsObject(e)) {
		fail(c, _("expected an object {\"X\": …, \"W_q\": …, \"block\": …, \"layers\": […]}, got %s"), got(e).s);
		goto out;
	}
	warn_unknown_keys(c, e, encoder_keys);
	j = cJSON_CreateObject();
	if (j == NULL || add_ref(j, "attnviz", get(root, "attnviz")) != 0) {
		fail_oom(c);
		goto out;
	}
	cJSON_ArrayForEach(it, e)
		if (add_ref(j, it->string, it) != 0) {
			fail_oom(c);
			goto out;
		}
	for (int i = 0; encdec_shared[i] != NULL; i++)
		if (get(e, encdec_shared[i]) == NULL && add_ref(j, encdec_shared[i], get(root, encdec_shared[i])) != 0) {
			fail_oom(c);
			goto out;
		}
	c->root_len = c->pathlen;
	li_stack(c)->encoder_out = 1;
	read = li_lesson_from_json(c, j, 1);
	li_stack(c)->encoder_out = 0;
	c->root_len = saved_root;
	if (read != NULL) { /* the model moves out of the lesson it was read as */
		if ((enc = malloc(sizeof *enc)) == NULL)
			fail_oom(c);
		else {
			*enc = read->model;
			memset(&read->model, 0, sizeof read->model);
		}
		lesson_free(read);
	}
out:
	cJSON_Delete(j);
	path_set(c, old);
	return enc;
}

/* The source a cross-attention link is read with: the encoder's tokens, and m × d rows the engine replaces by the memory. */
static cJSON *memory_source(const Model *enc)
{
	cJSON *s = cJSON_CreateObject(), *toks, *x;

	if (s == NULL || (toks = cJSON_AddArrayToObject(s, "tokens")) == NULL || (x = cJSON_AddObjectToObject(s, "X")) == NULL)
		goto oom;
	for (int i = 0; i < enc->cfg.n; i++)
		if (!cJSON_AddItemToArray(toks, cJSON_CreateString(enc->cfg.tokens[i])))
			goto oom;
	if (cJSON_AddStringToObject(x, "random", "uniform") == NULL || cJSON_AddNumberToObject(x, "rows", enc->cfg.n) == NULL ||
	    cJSON_AddNumberToObject(x, "cols", enc->cfg.d_model) == NULL || cJSON_AddNumberToObject(x, "seed", 0) == NULL)
		goto oom;
	return s;
oom:
	cJSON_Delete(s);
	return NULL;
}

/*
 * One link of decoder layer k: its self-attention (PART_SELF: the "self"
 * object, the layer's block without its FFN) or its cross-attention
 * (PART_CROSS: the "cross" object with the memory as its source, the block's
 * ln2, ln3 and FFN), each the layer's own object or the top level's, whole.
 */
/* The top level (link 0) is read as the lesson (*top: its steps, its comparison), every other link as its model alone (*m). 0, or -1. */
static int read_link(Ctx *c, const cJSON *root, const cJSON *lobj, int k, LinkPart part, const Model *enc,
                     int last, int with_steps, Lesson **top, Model *m)
{
	const char *name = part == PART_SELF ? "self" : "cross";
	const cJSON *own = lobj != NULL ? get(lobj, name) : NULL, *at = own != NULL ? own : get(root, name);
	const cJSON *ownb = lobj != NULL ? get(lobj, "block") : NULL, *blk = ownb != NULL ? ownb : get(root, "block");
	const cJSON *it, *mask = NULL;
	cJSON *j = NULL, *src = NULL;
	LayerParams *lp = NULL;
	size_t old;

	if (at == NULL || !cJSON_IsObject(at)) {
		old = lobj != NULL ? path_append(c, "layers[%d].%s", k, name) : path_key(c, name);
		if (at == NULL)
			fail(c, _("missing: decoder layer %d's %s-attention {\"heads\": …, \"W_q\": …, …} (in the layer, or at "
			        "the top level for every layer)"), k, name);
		else
			fail(c, _("expected an object {\"heads\": …, \"W_q\": …, \"W_k\": …, \"W_v\": …}, got %s"), got(at).s);
		path_set(c, old);
		return -1;
	}
	old = own != NULL ? path_append(c, "layers[%d].%s", k, name) : path_key(c, name);
	warn_unknown_keys(c, at, attn_part_keys);
	path_set(c, old);
	j = cJSON_CreateObject();
	if (j == NULL)
		goto oom;
	for (int i = 0; link_keys[i] != NULL; i++)
		if (add_ref(j, link_keys[i], get(root, link_keys[i])) != 0)
			goto oom;
	if (with_steps && add_ref(j, "steps", get(root, "steps")) != 0)
		goto oom;
	cJSON_ArrayForEach(it, at)
		if (strcmp(it->string, "mask") != 0 && add_ref(j, it->string, it) != 0)
			goto oom;
	/* self-attention: its own mask, else the top level's, else causal; cross-attention: its own, else none */
	mask = get(at, "mask");
	if (mask == NULL && part == PART_SELF)
		mask = get(root, "mask");
	if (mask != NULL ? add_ref(j, "mask", mask) != 0
	                 : part == PART_SELF && cJSON_AddStringToObject(j, "mask", "causal") == NULL)
		goto oom;
	if (add_ref(j, "block", blk) != 0)
		goto oom;
	if (part == PART_CROSS && ((src = memory_source(enc)) == NULL || !cJSON_AddItemToObject(j, "source", src))) {
		cJSON_Delete(src);
		goto oom;
	}
	c->alias_obj[0] = at;
	if (own != NULL)
		snprintf(c->alias_prefix[0], sizeof c->alias_prefix[0], "layers[%d].%s", k, name);
	else
		snprintf(c->alias_prefix[0], sizeof c->alias_prefix[0], "%s", name);
	c->alias_obj[1] = ownb != NULL ? lobj : NULL;
	snprintf(c->alias_prefix[1], sizeof c->alias_prefix[1], "layers[%d]", k);
	li_stack(c)->part = part;
	li_stack(c)->link_final = last && cJSON_IsObject(get(root, "block")) && get(get(root, "block"), "final_norm") != NULL;
	li_stack(c)->outer_compare = with_steps && get(root, "compare") != NULL;
	if (top != NULL)
		lp = (*top = li_lesson_from_json(c, j, !with_steps)) != NULL ? &(*top)->lp : NULL;
	else
		lp = li_read_layer(c, j, m) == 0 ? &m->lp : NULL;
	li_stack(c)->part = PART_LAYER;
	li_stack(c)->link_final = 0;
	li_stack(c)->outer_compare = 0;
	c->alias_obj[0] = c->alias_obj[1] = NULL;
	cJSON_Delete(j);
	if (lp == NULL)
		return -1;
	lp->part = part;
	lp->dec_layer = k;
	return 0;
oom:
	cJSON_Delete(j);
	return fail_oom(c);
}

/*
 * Every link's shapes read and counted, with the encoder's numbers, before
 * any link is filled: over LESSON_MAX_NUMBERS or LESSON_MAX_ADDITIVE_TERMS,
 * an error at "layers" (as a stack's, lesson_block.c).
 */
static int count_links(Ctx *c, const cJSON *root, const cJSON *layers, int nlinks, const Model *enc)
{
	Stack *st = li_stack(c);
	const Stack saved = *st;
	StrBuf *saved_warn = c->warn;
	Lesson whole;
	int r = -1;

	memset(&whole, 0, sizeof whole);
	whole.model = *enc; /* borrowed, to count it */
	st->count_only = 1;
	st->counted = lesson_count_numbers(&whole);
	st->counted_terms = 0;
	st->layers = NULL;
	st->nlayers = nlinks;
	st->encoder = enc;
	c->warn = NULL; /* the real reading warns */
	for (int i = nlinks - 1; i >= 0; i--) {
		const cJSON *lobj = layers != NULL ? cJSON_GetArrayItem(layers, i / 2) : NULL;
		Model m = { 0 };
		const int bad = read_link(c, root, lobj, i / 2, i % 2 ? PART_CROSS : PART_SELF, enc, i == nlinks - 1, 0, NULL, &m);
		model_free(&m);
		if (bad)
			goto out;
	}
	r = li_check_counted(c, nlinks / 2, saved.numbers_before);
out:
	c->warn = saved_warn;
	*st = saved;
	return r;
}

/*
 * An encoder–decoder: "encoder" read as a lesson of its own, then each
 * decoder layer (the objects of "layers", or one layer made of the top
 * level's "self", "cross" and "block") as two links. The top level is link 0
 * with the steps, the comparison, the decoder's final norm and "backward".
 */
Lesson *li_lesson_encdec(Ctx *c, const cJSON *root, int is_variant)
{
	const cJSON *layers = get(root, "layers"), *it;
	Lesson *top = NULL;
	Model *link = NULL, *enc = NULL; /* links 1 … as read, until link 0's steps are read against them */
	Model *saved_layers = li_stack(c)->layers;
	const int saved_n = li_stack(c)->nlayers;
	const Model *saved_enc = li_stack(c)->encoder;
	int nl = 1, nlinks = 0, i, ok = 0;
	size_t old;

	if (!is_variant) {
		li_warn_unknown_top(c, root);
		warn_duplicate_keys(c, root);
	}
	for (i = 0; encdec_refused[i] != NULL; i++) {
		const char *key = encdec_refused[i];
		if (get(root, key) == NULL)
			continue;
		old = path_key(c, key);
		if (strcmp(key, "source") == 0)
			fail(c, _("an encoder\u2013decoder's cross-attention reads the encoder's output: it has no \"source\""));
		else if (strcmp(key, "rope") == 0 || strcmp(key, "alibi") == 0 || strcmp(key, "decode") == 0 ||
		         strcmp(key, "flash") == 0)
			fail(c, _("not available in an encoder\u2013decoder lesson (use it in a lesson of layers)"));
		else
			fail(c, _("an encoder\u2013decoder gives its attentions' keys in \"self\" and \"cross\" (the decoder's) "
			        "and in \"encoder\", not at the top level"));
		path_set(c, old);
		return NULL;
	}
	if (layers != NULL) {
		old = path_key(c, "layers");
		if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) == 0) {
			fail(c, _("expected a list of decoder layers [{\"self\": …, \"cross\": …, \"block\": …}, …] (each may be {} "
			        "to repeat the top level), got %s"), cJSON_IsArray(layers) ? _("an empty list") : got(layers).s);
			path_set(c, old);
			return NULL;
		}
		nl = cJSON_GetArraySize(layers);
		if (2 * nl > LESSON_MAX_LAYERS) {
			fail(c, _("%d decoder layers (two links each) is over the limit of %d links (LESSON_MAX_LAYERS)"), nl,
			     LESSON_MAX_LAYERS);
			path_set(c, old);
			return NULL;
		}
		i = 0;
		cJSON_ArrayForEach(it, layers) {
			size_t old2 = path_index(c, i++);
			if (!cJSON_IsObject(it)) {
				fail(c, _("expected a decoder layer {\"self\": …, \"cross\": …, \"block\": …} (or {}), got %s"), got(it).s);
				path_set(c, old);
				return NULL;
			}
			warn_unknown_keys(c, it, dec_layer_keys);
			if (cJSON_IsObject(get(it, "block")) && get(get(it, "block"), "final_norm") != NULL) {
				path_key(c, "block.final_norm");
				warnf(c, _("ignored: \"final_norm\" goes in the top-level \"block\" (it follows the last layer)"));
			}
			path_set(c, old2);
		}
		path_set(c, old);
	}
	enc = read_encoder(c, root);
	if (enc == NULL)
		goto out;
	nlinks = 2 * nl;
	if (count_links(c, root, layers, nlinks, enc) != 0)
		goto out;
	link = calloc((size_t)nlinks, sizeof *link);
	if (link == NULL) {
		fail_oom(c);
		goto out;
	}
	li_stack(c)->layers = link;
	li_stack(c)->nlayers = nlinks;
	li_stack(c)->encoder = enc;
	/* the links from the last, so that link 0's steps can name any of them */
	for (i = nlinks - 1; i >= 0; i--) {
		const cJSON *lobj = layers != NULL ? cJSON_GetArrayItem(layers, i / 2) : NULL;
		if (read_link(c, root, lobj, i / 2, i % 2 ? PART_CROSS : PART_SELF, enc, i == nlinks - 1, i == 0 && !is_variant,
		              i == 0 ? &top : NULL, &link[i]) != 0)
			goto out;
	}
	/* the top level is link 0 (with the steps; its parameters are the model's lp); each other link's parameters and own
	 * settings move into the model */
	top->layer = calloc((size_t)nlinks, sizeof *top->layer);
	if (top->layer == NULL) {
		fail_oom(c);
		goto out;
	}
	top->encoder = enc;
	enc = NULL;
	for (i = 0; i < nlinks; i++) {
		top->nlayers = i + 1; /* what was copied, freed with top */
		if (i > 0)
			li_layer_take(&top->layer[i], &link[i]);
		else if (li_layer_own_from(c, &top->layer[i], top) != 0)
			goto out;
	}
	if (li_read_final_norm(c, root, &top->model) != 0 || li_read_backward(c, root, &top->model) != 0 || li_check_layers_limit(c, top) != 0)
		goto out;
	if (!is_variant) {
		int r;
		li_stack(c)->numbers_before = lesson_count_numbers(top);
		r = li_read_compare(c, root, top);
		li_stack(c)->numbers_before = 0;
		if (r != 0)
			goto out;
	}
	ok = 1;
out:
	li_stack(c)->layers = saved_layers;
	li_stack(c)->nlayers = saved_n;
	li_stack(c)->encoder = saved_enc;
	for (i = 0; link != NULL && i < nlinks; i++)
		model_free(&link[i]);
	free(link);
	if (enc != NULL) {
		model_free(enc);
		free(enc);
	}
	if (!ok) {
		lesson_free(top);
		return NULL;
	}
	return top;
}
