/* compute.c: a lesson's whole computation — the chain of layers (and an
 * encoder's first), each link's passes run in the stage table's order with
 * progress told and overflow checked; attn_update, which reruns only the
 * passes an edit reaches (keeping copies of what it remakes); the backward
 * pass when the lesson asks for it; and training. The top of the engine:
 * it calls the forward passes (attention.c) and the backward pass
 * (backward.c), which call nothing here.
 */
#include "engine/backward.h"
#include "engine/kernels.h"
#include "engine/variants/variants.h"
#include "base/clock.h"
#include "base/i18n.h"
#include "base/strbuf.h"
#include "base/ttyguard.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/*
 * The first cell, in the order the stages are computed, that is not a finite
 * number: NaN, or ±∞ anywhere but a cell a −∞ mask hid on purpose. Doubles
 * overflow past about 1.8e308, and one overflow turns everything after it
 * into NaN, which would be shown as if it meant something. Returns 1 and
 * the place, or 0 when every number is finite.
 */
static int find_overflow(const Attn *a, const unsigned char *only, AttnMatrix *which, int *head, int *row, int *col)
{
	const ModelConfig *cfg = attn_config(a);
	int w, h, i, j;

	for (w = 0; w < AM_COUNT; w++)
		for (h = 0; (only == NULL || only[w]) && h < (matrix_per_head((AttnMatrix)w) ? a->heads : 1); h++) {
			const Mat *m = attn_matrix(a, (AttnMatrix)w, h);
			for (i = 0; m != NULL && i < m->rows; i++)
				for (j = 0; j < m->cols; j++) {
					const double x = MAT_AT(*m, i, j);
					const int hidden = ((matrix_kinds[w].flags & MF_MASKED) && cfg->mask_fill_inf &&
					                    !a->visible[(size_t)i * cfg->m + j]) || (matrix_kinds[w].flags & MF_NEG_INF);
					if (!isfinite(x) && !(hidden && x == -INFINITY) &&
					    !((matrix_kinds[w].flags & MF_NOT_CHOSEN) && isnan(x))) {
						*which = (AttnMatrix)w;
						*head = h;
						*row = i;
						*col = j;
						return 1;
					}
				}
		}
	return 0;
}

/* m is rows × cols and holds its numbers. */
static int mat_is(const Mat *m, int rows, int cols)
{
	return m->rows == rows && m->cols == cols && m->a != NULL;
}

/* Weight m of lp is rows × cols and holds its numbers, or keeps them in the model's file (made doubles when read). */
static int weight_is(const LayerParams *lp, const Mat *m, int rows, int cols)
{
	if (layer_params_dormant_slot(lp, m) >= 0)
		return m->rows == rows && m->cols == cols;
	return mat_is(m, rows, cols);
}

/*
 * The engine's own guard: every pass indexes the matrices by the lesson's
 * sizes (n, m, d_model, d_src, heads, d_k, d_v, d_out), so a lesson whose
 * matrices do not have those shapes, or whose mask does not fit them, is
 * refused before anything is allocated or read. lesson_validate gives the
 * learner's message first; this only makes sure that no caller, whatever
 * it passes, makes the engine read or write past a matrix. Returns the
 * first part at fault, or NULL.
 */
static const char *shape_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	int hdk, hdv, gdk, gdv;

	if (lp->heads < 1 || lp->heads > LESSON_MAX_HEADS || cfg->n < 1 || cfg->n > LESSON_MAX_TOKENS || cfg->m < 1 ||
	    cfg->m > LESSON_MAX_TOKENS || lp->d_k < 1 || lp->d_k > LESSON_MAX_DIM || lp->d_v < 1 || lp->d_v > LESSON_MAX_DIM ||
	    lp->d_out < 1 || lp->d_out > LESSON_MAX_DIM)
		return "sizes";
	const char *shared = attn_heads_fault(cfg, lp); /* a variant's sharing of heads (kv_heads) */
	if (shared != NULL)
		return shared;
	hdk = lp->heads * lp->d_k;
	hdv = lp->heads * lp->d_v;
	gdk = lp->kv_heads * lp->d_k;
	gdv = lp->kv_heads * lp->d_v;
	if (!mat_is(&cfg->input, cfg->n, cfg->d_model))
		return "X";
	if (cfg->has_source ? !mat_is(&cfg->source_input, cfg->m, cfg->d_src) : (cfg->m != cfg->n || cfg->d_src != cfg->d_model))
		return "source.X";
	/* multi-head latent attention has no W_k, W_v (and W_q only without q_lora_rank): its variant's fault checks it */
	if (!lp->mla.on && !weight_is(lp, &lp->W_q, cfg->d_model, hdk))
		return "W_q";
	if (!lp->mla.on && !weight_is(lp, &lp->W_k, cfg->d_src, gdk))
		return "W_k";
	if (!lp->mla.on && !weight_is(lp, &lp->W_v, cfg->d_src, gdv))
		return "W_v";
	if ((!mat_empty(&lp->b_q) && !mat_is(&lp->b_q, 1, hdk)) || (!mat_empty(&lp->b_k) && !mat_is(&lp->b_k, 1, gdk)) ||
	    (!mat_empty(&lp->b_v) && !mat_is(&lp->b_v, 1, gdv)) || (!mat_empty(&lp->b_o) && !mat_is(&lp->b_o, 1, lp->d_out)))
		return "biases";
	for (int v = 0; v < attn_variant_count; v++) {
		const char *fault = attn_variants[v]->fault != NULL ? attn_variants[v]->fault(cfg, lp) : NULL;
		if (fault != NULL)
			return fault;
	}
	if (mat_empty(&lp->W_o) ? lp->d_out != hdv : !weight_is(lp, &lp->W_o, hdv, lp->d_out))
		return "W_o";
	if (cfg->score == SCORE_ADDITIVE && !mat_is(&lp->w_e, 1, hdk))
		return "w_e";
	if (cfg->vocab < 0 || (cfg->vocab > 0 && !model_unembed_is(cfg, cfg->vocab, cfg->d_model)))
		return "unembed";
	if ((cfg->mask == MASK_CAUSAL && cfg->n != cfg->m) || (cfg->mask == MASK_PADDING && !mat_is(&cfg->mask_matrix, 1, cfg->m)) ||
	    (cfg->mask == MASK_MATRIX && !mat_is(&cfg->mask_matrix, cfg->n, cfg->m)) || attn_mask_fault(cfg, -1) ||
	    (cfg->mask == MASK_LIST && (cfg->nmasks < 1 || cfg->masks == NULL)))
		return "mask";
	for (int k = 0; cfg->mask == MASK_LIST && k < cfg->nmasks; k++) {
		const MaskPart *p = &cfg->masks[k];
		if ((p->kind == MASK_CAUSAL && cfg->n != cfg->m) || (p->kind == MASK_PADDING && !mat_is(&p->matrix, 1, cfg->m)) ||
		    (p->kind == MASK_MATRIX && !mat_is(&p->matrix, cfg->n, cfg->m)) || attn_mask_fault(cfg, k) ||
		    p->kind == MASK_NONE || p->kind == MASK_LIST)
			return "mask";
	}
	return NULL;
}


/* attn_update's copies of the matrices it remakes: a computation shaped like the one updated. */
typedef struct Keep {
	Attn *first;  /* NULL once over budget or out of memory */
	double left;  /* numbers it may still hold */
} Keep;

static void keep_drop(Keep *k)
{
	attn_free(k->first);
	k->first = NULL;
}

/* How many numbers matrix w of head h holds (a derived one: would hold, when made). */
static double kept_numbers(Attn *a, AttnMatrix w, int h)
{
	const Mat *m = attn_slot(a, w, h);

	if (attn_derived(w))
		return matrix_present(&a->shape, w, NULL) && !mat_empty(&a->head[h].scores) ? (double)attn_config(a)->n * attn_config(a)->m
		                                                                            : 0;
	return (double)m->rows * m->cols;
}

/* A copy of derived matrix w of head h, as it is now, into to (empty). Returns 0 or -1. */
static int derived_copy(Attn *a, AttnMatrix w, int h, Mat *to)
{
	if (mat_alloc_whole(to, attn_config(a)->n, attn_config(a)->m) != 0)
		return -1;
	for (int i = 0; i < attn_config(a)->n; i++)
		attn_derived_row(a, w, h, i, &to->a[(size_t)i * attn_config(a)->m], attn_config(a)->m);
	return 0;
}

/* Copy into the keep's link ka the matrices of a marked in redo (all when redo is NULL), unless copied already. */
static void keep_before(Keep *k, Attn *ka, Attn *a, const unsigned char *redo)
{
	for (int w = 0; k->first != NULL && w < AM_COUNT; w++) {
		/* a derived matrix is made from the scores: copied before they are remade, while it is still the old one */
		const int remade = redo == NULL || redo[w] || (attn_derived((AttnMatrix)w) && redo[AM_SCORES]);
		if (!remade || (matrix_kinds[w].flags & (MF_GIVEN | MF_GRAD)))
			continue;
		for (int h = 0; k->first != NULL && h < ((matrix_kinds[w].flags & MF_PER_HEAD) ? a->heads : 1); h++) {
			const Mat *m = attn_derived((AttnMatrix)w) ? NULL : attn_slot(a, (AttnMatrix)w, h);
			Mat *to = attn_slot(ka, (AttnMatrix)w, h);
			const double count = kept_numbers(a, (AttnMatrix)w, h);
			if (count == 0 || !mat_empty(to))
				continue;
			k->left -= count;
			if (k->left < 0 || (m != NULL ? mat_copy(to, m) : derived_copy(a, (AttnMatrix)w, h, to)) != 0)
				keep_drop(k);
		}
	}
}

/*
 * The passes that note in a->nonfinite, as they write, whether they wrote a
 * number that is not finite (outside the cells a −∞ mask hides); after any
 * other pass the matrices it writes (its rules' and those it makes) are
 * looked over, a cheap scan next to what such a pass computes.
 */
static const unsigned char stage_checks_itself[STAGE_COUNT] = {
	[STAGE_PROJECT] = 1, [STAGE_SCORES] = 1, [STAGE_SCALE] = 1, [STAGE_MASK] = 1,
	[STAGE_SOFTMAX] = 1, [STAGE_WEIGHTED] = 1, [STAGE_CONCAT] = 1, [STAGE_OUTPUT] = 1,
};

/* Pass st notes its own non-finite numbers (the core's table, or its variant's word). */
static int checks_itself(int st)
{
	const AttnVariant *v = attn_variant_of_stage((Stage)st);

	return v != NULL ? v->checks_itself : stage_checks_itself[st];
}

int attn_matrix_nonfinite(Attn *a, AttnMatrix w)
{
	for (int h = 0; h < ((matrix_kinds[w].flags & MF_PER_HEAD) ? a->heads : 1); h++) {
		const Mat *m = attn_slot(a, w, h);
		const size_t count = (size_t)m->rows * (size_t)m->cols;
		if (mat_empty(m))
			continue;
		if (matrix_kinds[w].flags & MF_NOT_CHOSEN) { /* NaN: an expert not chosen (a mixture of experts) */
			for (size_t i = 0; i < count; i++)
				if (isinf(m->a[i]))
					return 1;
		} else if (!(matrix_kinds[w].flags & MF_NEG_INF)) {
			if (mat_nonfinite(m->a, count))
				return 1;
		} else
			for (size_t i = 0; i < count; i++)
				if (!(m->a[i] < INFINITY)) /* NaN or +∞ */
					return 1;
	}
	return 0;
}

/* 1 when a matrix pass st writes holds a number that is not finite (attn_matrix_nonfinite). */
static int stage_nonfinite(Attn *a, int st)
{
	const StageRule *rules = attn_stage_rules((Stage)st);

	for (int w = 0; w < AM_COUNT; w++) {
		int writes = matrix_kinds[w].made_by == (Stage)st;
		for (int r = 0; r < ATTN_STAGE_RULES && rules[r].from != NULL; r++)
			writes |= rules[r].out == (AttnMatrix)w;
		if (writes && !(matrix_kinds[w].flags & (MF_GIVEN | MF_GRAD)) && attn_matrix_nonfinite(a, (AttnMatrix)w))
			return 1;
	}
	return 0;
}

static AttnProgress progress_fn;
static void *progress_ctx;
static double progress_t0; /* when the computation being told about began */
static int progress_depth; /* attn_compute calls itself for an encoder: the outermost call starts the clock */

void attn_set_progress(AttnProgress fn, void *ctx)
{
	progress_fn = fn;
	progress_ctx = ctx;
}

/* A pass of a runs: tell the progress function, if any. */
static void progress_tell(const Attn *a, int st)
{
	int index = 0, count = 0;

	if (progress_fn == NULL)
		return;
	for (int s = 0; s < STAGE_COUNT; s++)
		if (attn_stage_runs(a, (Stage)s)) {
			count++;
			if (s <= st)
				index++;
		}
	progress_fn(progress_ctx, a, (Stage)st, index, count, clock_ms() - progress_t0);
}

/* The file slot (model.h: LP_FILE_W_Q …) of given matrix w, or -1. */
static int file_slot(AttnMatrix w)
{
	static const AttnMatrix slot[LP_FILE_COUNT] = { AM_W_Q, AM_W_K, AM_W_V, AM_W_O, AM_W_1, AM_W_3, AM_W_2,
		                                        AM_MOE_W_1, AM_MOE_W_3, AM_MOE_W_2 };

	for (int k = 0; k < LP_FILE_COUNT; k++)
		if (slot[k] == w)
			return k;
	return -1;
}

/* The file slots of the given matrices stage st's rules read (all of them for a pass without rules). */
static unsigned stage_file_slots(Stage st)
{
	const StageRule *rules = attn_stage_rules(st);
	unsigned bits = 0;

	if (rules[0].from == NULL)
		return ~0u;
	for (int r = 0; r < ATTN_STAGE_RULES && rules[r].from != NULL; r++)
		for (const AttnMatrix *f = rules[r].from; *f != AM_COUNT; f++)
			if (file_slot(*f) >= 0)
				bits |= 1u << file_slot(*f);
	return bits;
}

/*
 * Run the passes of a layer's model (its settings c, its parameters p) into a, in the table's order:
 * every one (changed NULL), or only those whose rules read a matrix marked
 * in changed, marking what they remake in turn. ka (may be NULL): the link
 * of k that gets a copy of each matrix before it is remade. Each pass's time
 * goes to a->stage_ms.
 */
static void run_passes(Attn *a, const ModelConfig *c, const LayerParams *p, unsigned char *changed, Keep *k, Attn *ka,
                       double *plan)
{
	unsigned char redo[AM_COUNT], before_it[AM_COUNT];
	/*
	 * A whole computation of a real model's layer: each weight kept in the file made doubles just before
	 * the first stage that reads it and dropped after the last (later[st]: the slots the stages from st on
	 * read), so that a layer holds its largest one or two at a time, not all seven (SmolLM2's 28 MB, a
	 * 1B model's 480 MB), and fewer new pages are touched.
	 */
	const int by_stage = changed == NULL && plan == NULL && a->lp.files != 0;
	unsigned later[STAGE_COUNT + 1] = { 0 };

	if (plan == NULL) {
		attn_derived_forget(a);
		attn_touch(a);
	}
	for (int st = STAGE_COUNT - 1; by_stage && st >= 0; st--)
		later[st] = later[st + 1] | (attn_stage_runs(a, (Stage)st) ? stage_file_slots((Stage)st) : 0);
	for (int st = 0; st < STAGE_COUNT; st++) {
		const StageKernel kernel = attn_stage_kernel((Stage)st);
		const StageRule *rules = attn_stage_rules((Stage)st);
		double t0;
		a->stage_ms[st] = 0.0;
		if (!attn_stage_runs(a, (Stage)st))
			continue;
		if (plan == NULL && ttyguard_stop_pending()) /* a computation or an update: stopped between passes */
			break;
		a->redo = NULL;
		if (changed != NULL) {
			int any = 0;
			if (rules[0].from == NULL) { /* a pass without rules: anything before it changes it all */
				for (int w = 0; w < AM_COUNT; w++)
					any |= changed[w];
				if (!any)
					continue;
				if (plan == NULL) { /* what changed before it, for the pass to read (a->changed), then all */
					memcpy(before_it, changed, sizeof before_it);
					a->changed = before_it;
				}
				memset(changed, 1, AM_COUNT);
				if (ka != NULL)
					keep_before(k, ka, a, NULL);
			} else {
				memset(redo, 0, sizeof redo);
				for (int r = 0; r < ATTN_STAGE_RULES && rules[r].from != NULL; r++)
					for (const AttnMatrix *f = rules[r].from; *f != AM_COUNT; f++)
						if (changed[*f]) {
							redo[rules[r].out] = 1;
							any = 1;
							break;
						}
				if (!any)
					continue;
				if (ka != NULL)
					keep_before(k, ka, a, redo);
				for (int w = 0; w < AM_COUNT; w++)
					changed[w] |= redo[w];
				a->redo = redo;
			}
		}
		if (plan != NULL) { /* only count the numbers it would remake */
			for (int w = 0; w < AM_COUNT; w++)
				for (int h = 0; (a->redo == NULL || a->redo[w]) && h < ((matrix_kinds[w].flags & MF_PER_HEAD) ? a->heads : 1) &&
				                !(matrix_kinds[w].flags & (MF_GIVEN | MF_GRAD)); h++)
					*plan += kept_numbers(a, (AttnMatrix)w, h);
			a->redo = NULL;
			continue;
		}
		progress_tell(a, st);
		if (by_stage) {
			unsigned made;
			if (attn_weights_make_some(a, stage_file_slots((Stage)st) & a->lp.files, &made) != 0) {
				a->failed = 1;
				break;
			}
		}
		t0 = clock_ms();
		kernel(a, c, p);
		if (by_stage)
			attn_weights_drop_some(a, a->file_made & ~later[st + 1]);
		if (!checks_itself(st))
			a->nonfinite |= stage_nonfinite(a, st);
		a->stage_ms[st] = clock_ms() - t0;
		a->redo = NULL;
		a->changed = NULL;
	}
}

/*
 * The message for the first cell that is not a finite number among the
 * matrices marked in only (all: NULL); NULL when none. The passes noted
 * whether they wrote one (a->nonfinite); the gradients, and the given
 * matrices an edit changed (only), are looked over here. Only when one of
 * them says so is the first such cell looked for. A whole computation
 * (only NULL) does not look over the given matrices again: the lesson
 * reader refused any number in them that is not finite, an edit's are
 * looked over after it, and a training step's reach the products of the
 * computation after it, which say so (x·±∞ and x·NaN are not finite); it
 * cost a sixth of a 16-layer lesson's time, reading every weight.
 */
static char *overflow_error(Attn *a, const unsigned char *only)
{
	AttnMatrix w;
	int oh, i, j, found, suspect = a->nonfinite;
	double t0 = clock_ms(), x = 0.0;

	for (int g = 0; !suspect && g < AM_COUNT; g++)
		for (int h = 0; !suspect && (matrix_kinds[g].flags & (only != NULL ? MF_GIVEN | MF_GRAD : MF_GRAD)) &&
		                (only == NULL || only[g]) &&
		                h < (matrix_per_head((AttnMatrix)g) ? a->heads : 1); h++) {
			/* a real model's unembedding and layer weights kept in the file are not looked over: one number not
			 * finite in them makes their products so */
			const int k = file_slot((AttnMatrix)g);
			const Mat *m = (g == AM_UNEMBED && !matview_empty(&a->cfg.unembed_view)) || (k >= 0 && (a->lp.files >> k & 1))
			                   ? NULL
			                   : attn_matrix(a, (AttnMatrix)g, h);
			suspect = m != NULL && mat_nonfinite(m->a, (size_t)m->rows * (size_t)m->cols);
		}
	found = suspect && find_overflow(a, only, &w, &oh, &i, &j);
	if (found)
		x = MAT_AT(*attn_matrix(a, w, oh), i, j);
	a->check_ms = clock_ms() - t0;
	if (!found)
		return NULL;
	const char *what = isnan(x) ? _("not a number") : x > 0 ? "+inf" : "-inf";
	if (matrix_per_head((AttnMatrix)w) && a->heads > 1)
		return str_printf(_("the numbers grow too large to compute: %s[%d][%d] of head %d is %s (doubles overflow "
		                    "past about 1.8e308); use smaller inputs or weights"),
		                  matrix_name(w), i, j, oh, what);
	return str_printf(_("the numbers grow too large to compute: %s[%d][%d] is %s (doubles overflow "
	                    "past about 1.8e308); use smaller inputs or weights"),
	                  matrix_name(w), i, j, what);
}

/* One layer: every stage of its model (a->cfg, a->lp), into a (zeroed but for its model and chain fields). */
static Attn *compute_one(Attn *a, char **err)
{
	const ModelConfig *c = &a->cfg;
	const LayerParams *p = &a->lp;
	const char *fault, *unmapped = attn_storage_fault();

	*err = NULL;
	/* a real model's layer weights: made doubles by run_passes, each for the stages that read it */
	fault = shape_fault(c, p);
	if (unmapped != NULL || (unmapped = attn_grad_storage_fault()) != NULL) {
		*err = str_printf("cannot compute: the catalogue's matrix %s has no storage in the engine (attention.c, "
		                  "matrices.c: its field tables); nothing was computed", unmapped);
		attn_free(a);
		return NULL;
	}
	if (fault != NULL) {
		*err = str_printf("cannot compute: the lesson's %s does not fit its sizes (n = %d, m = %d, heads = %d); "
		                  "nothing was computed", fault, c->n, c->m, p->heads);
		attn_free(a);
		return NULL;
	}
	lesson_model_shape(c, p, &a->shape);
	if (lesson_model_count_numbers(c, p) > (double)LESSON_MAX_NUMBERS ||
	    (c->score == SCORE_ADDITIVE && (double)c->n * c->m * p->heads * p->d_k > (double)LESSON_MAX_ADDITIVE_TERMS)) {
		*err = str_printf("the lesson with its computation would hold %.0f numbers (limit %ld, LESSON_MAX_NUMBERS), "
		                  "or its additive scores take over %ld tanh terms (LESSON_MAX_ADDITIVE_TERMS)",
		                  lesson_model_count_numbers(c, p), (long)LESSON_MAX_NUMBERS, (long)LESSON_MAX_ADDITIVE_TERMS);
		attn_free(a);
		return NULL;
	}
	switch (c->scale) {
	case SCALE_SQRT_DK: a->factor = 1.0 / sqrt((double)p->d_k); break;
	case SCALE_NONE: a->factor = 1.0; break;
	case SCALE_VALUE: a->factor = c->scale_value; break;
	}
	a->heads = p->heads;
	a->kv_heads = p->kv_heads > 0 ? p->kv_heads : p->heads;
	for (int v = 0; v < attn_variant_count; v++)
		if (attn_variants[v]->setup != NULL && attn_variant_on(a, attn_variants[v]) && attn_variants[v]->setup(a, c, p) != 0)
			goto oom;
	a->head = calloc((size_t)p->heads, sizeof *a->head);
	a->cache = calloc(1, sizeof *a->cache);
	a->visible = malloc((size_t)c->n * (size_t)c->m);
	a->row_all_masked = calloc((size_t)c->n, 1);
	if (a->head == NULL || a->cache == NULL || a->visible == NULL || a->row_all_masked == NULL ||
	    attn_alloc_matrices(a) != 0)
		goto oom;
	run_passes(a, c, p, NULL, NULL, NULL, NULL);
	if (ttyguard_stop_pending()) {
		*err = str_printf("%s", _("stopped (Ctrl-C): nothing was computed"));
		attn_free(a);
		return NULL;
	}
	if (a->failed)
		goto oom;
	if ((*err = overflow_error(a, NULL)) != NULL) {
		attn_free(a);
		return NULL;
	}
	return a;
oom:
	*err = str_printf("out of memory computing the lesson");
	attn_free(a);
	return NULL;
}

/*
 * Layer i's model as the engine computes it: the layer's own parameters
 * (heads, weights, biases, block) into p, and into c the lesson's shared
 * settings (tokens, mask, scale, score) with its input rows: the lesson's
 * X for layer 0 (with positional encoding), the layer before's output
 * after that. A lesson without layers is its own: its cfg and lp. Every
 * matrix is borrowed.
 */
static void layer_model(const Model *l, int i, const Mat *input, const Mat *memory, ModelConfig *c, LayerParams *p)
{
	*p = *model_layer_params_const(l, i);
	if (l->nlayers == 0) {
		*c = l->cfg;
		return;
	}
	model_config_of_layer(l, i, input, c);
	if (p->part == PART_CROSS && memory != NULL) /* cross-attention: its source is the encoder's output */
		c->source_input = *memory;
}

static Attn *compute_chain(const Lesson *top, const Model *l, char **err);

Attn *attn_compute_model(const Model *m, const Lesson *course, char **err)
{
	Attn *a;

	if (progress_depth++ == 0)
		progress_t0 = clock_ms();
	ttyguard_work_begin();
	a = compute_chain(course, m, err);
	ttyguard_work_end();
	progress_depth--;
	/* every link's gradients are made by the first link's backward pass, the encoder's too */
	for (Attn *x = a != NULL ? a->next : NULL; x != NULL; x = x->next)
		x->root = a;
	for (Attn *x = a != NULL ? a->encoder : NULL; x != NULL; x = x->next)
		x->root = a;
	return a;
}

Attn *attn_compute(const Lesson *l, char **err)
{
	return attn_compute_model(&l->model, l, err);
}

/* Every layer of model l (and its encoder first), each link computed by compute_one; top: the course, carried (a->top). */
static Attn *compute_chain(const Lesson *top, const Model *l, char **err)
{
	Attn *first = NULL, **link = &first, *enc = NULL;
	const Mat *input = &l->cfg.input, *dec_input = NULL, *memory = NULL;

	if (l->nlayers == 0) {
		Attn *a = calloc(1, sizeof *a);
		if (a == NULL) {
			*err = str_printf("out of memory computing the lesson");
			return NULL;
		}
		a->top = top;
		layer_model(l, 0, &l->cfg.input, NULL, &a->cfg, &a->lp);
		return compute_one(a, err);
	}
	if (l->encoder != NULL) {
		enc = compute_chain(top, l->encoder, err);
		if (enc == NULL) {
			char *e = str_printf("encoder: %s", *err);
			free(*err);
			*err = e;
			return NULL;
		}
		memory = attn_final_output(enc);
		/* the decoder's loss reaches the encoder through the memory: its links have gradients (and backward stages) too */
		if (l->cfg.backward != BACKWARD_NONE)
			for (Attn *e = enc; e != NULL; e = e->next)
				e->shape.features |= FEAT_BACKWARD;
	}
	for (int i = 0; i < l->nlayers; i++) {
		Attn *a = calloc(1, sizeof *a);
		if (a == NULL) {
			attn_free(first);
			attn_free(enc);
			*err = str_printf("out of memory computing the lesson");
			return NULL;
		}
		a->layer = i;
		a->nlayers = l->nlayers;
		a->top = top;
		a->dec_input = dec_input;
		layer_model(l, i, input, memory, &a->cfg, &a->lp);
		*link = a;
		if (i == 0) {
			a->encoder = enc;
			enc = NULL;
		}
		if (compute_one(a, err) == NULL) {
			*link = NULL;
			attn_free(enc);
			attn_free(first);
			if (*err != NULL && l->nlayers > 1) {
				char *e = str_printf("layer %d: %s", i, *err);
				free(*err);
				*err = e;
			}
			return NULL;
		}
		attn_weights_drop(a); /* a real model's layer weights: doubles again when something reads them */
		input = attn_layer_output(a);
		dec_input = mat_empty(&a->dec_layer_out) ? NULL : &a->dec_layer_out;
		link = &a->next;
	}
	return first;
}

int attn_same_bits(const Mat *x, const Mat *y)
{
	return x->rows == y->rows && x->cols == y->cols &&
	       (mat_empty(x) || memcmp(x->a, y->a, (size_t)x->rows * (size_t)x->cols * sizeof *x->a) == 0);
}

/* Everything the passes read of a lesson but its given matrices' numbers is the same in x and y. */
/* The same list of masks (the single mask's kind and matrix are compared with the other settings, a window by its variant). */
static int same_masks(const ModelConfig *x, const ModelConfig *y)
{
	if (x->nmasks != y->nmasks)
		return 0;
	for (int k = 0; k < x->nmasks; k++)
		if (x->masks[k].kind != y->masks[k].kind || !attn_same_bits(&x->masks[k].matrix, &y->masks[k].matrix))
			return 0;
	return 1;
}

/* Every variant's settings are the same in x and y. */
static int same_variants(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	for (int k = 0; k < attn_variant_count; k++)
		if (attn_variants[k]->same != NULL && !attn_variants[k]->same(xc, xp, yc, yp))
			return 0;
	return 1;
}

static int same_settings(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	LessonShape sx, sy;
	const Block *bx = &xp->block, *by = &yp->block;

	lesson_model_shape(xc, xp, &sx);
	lesson_model_shape(yc, yp, &sy);
	return memcmp(&sx, &sy, sizeof sx) == 0 && xc->n == yc->n && xc->m == yc->m && xc->d_model == yc->d_model &&
	       xc->d_src == yc->d_src && xp->heads == yp->heads && xp->d_k == yp->d_k && xp->d_v == yp->d_v &&
	       xp->d_out == yp->d_out && xc->has_source == yc->has_source && xc->positional == yc->positional &&
	       xc->score == yc->score && xc->scale == yc->scale && xc->embed_scale == yc->embed_scale && attn_same_bits(&(Mat){ 1, 1, (double *)&xc->scale_value },
	                                                                 &(Mat){ 1, 1, (double *)&yc->scale_value }) &&
	       xc->mask == yc->mask && xc->mask_fill_inf == yc->mask_fill_inf && xc->mask_fill == yc->mask_fill &&
	       attn_same_bits(&xc->mask_matrix, &yc->mask_matrix) && xc->backward == yc->backward && bx->present == by->present &&
	       bx->norm == by->norm && bx->norm_kind == by->norm_kind && bx->eps == by->eps && bx->sandwich == by->sandwich &&
	       bx->has_ffn == by->has_ffn && bx->activation == by->activation && bx->d_ff == by->d_ff &&
	       xc->has_final_norm == yc->has_final_norm && xc->final_kind == yc->final_kind && xc->final_eps == yc->final_eps &&
	       same_masks(xc, yc) && same_variants(xc, xp, yc, yp);
}

/* The link of a keep for layer a: its shape, heads and place, its lesson the one a was computed from. */
static Attn *keep_link(const Attn *a)
{
	Attn *k = calloc(1, sizeof *k);

	if (k == NULL || (k->head = calloc((size_t)a->heads, sizeof *k->head)) == NULL) {
		free(k);
		return NULL;
	}
	k->shape = a->shape;
	k->factor = a->factor;
	k->heads = a->heads;
	k->kv_heads = a->kv_heads;
	k->layer = a->layer;
	k->nlayers = a->nlayers;
	k->cfg = a->cfg;
	k->lp = a->lp;
	layer_params_dormant(&k->lp); /* a's doubles of a real model's weights are a's: made again when read */
	k->top = a->top;
	return k;
}

/*
 * Given matrix w the same in x as in y because both keep it in the same file
 * (model.h: LayerParams.file): unchanged without a number read.
 */
static int same_file(const LayerParams *x, const LayerParams *y, AttnMatrix w)
{
	const int k = file_slot(w);

	return k >= 0 && layer_params_same_file(x, y, k);
}

/*
 * When the only given matrix of layer a that changed is its input (an edit of
 * X's cells), the rows of it that differ, [a->rows_lo, a->rows_hi), for the
 * passes that can remake those rows alone (pass_project); else 0, 0.
 */
static void changed_rows(Attn *a, const ModelConfig *old_c, const LayerParams *old_p, const unsigned char *changed)
{
	const Mat *was = lesson_model_matrix(old_c, old_p, AM_INPUT), *now = lesson_model_matrix(&a->cfg, &a->lp, AM_INPUT);
	int lo = 0, hi;

	a->rows_lo = a->rows_hi = 0;
	for (int w = 0; w < AM_COUNT; w++)
		if ((matrix_kinds[w].flags & MF_GIVEN) && changed[w] && w != AM_INPUT)
			return;
	if (!changed[AM_INPUT] || was == NULL || now == NULL || was->rows != now->rows || was->cols != now->cols)
		return;
	const size_t bytes = (size_t)now->cols * sizeof *now->a; /* a row's bits */
	hi = now->rows;
	while (lo < hi && memcmp(&MAT_AT(*was, lo, 0), &MAT_AT(*now, lo, 0), bytes) == 0)
		lo++;
	while (hi > lo && memcmp(&MAT_AT(*was, hi - 1, 0), &MAT_AT(*now, hi - 1, 0), bytes) == 0)
		hi--;
	if (hi > lo && hi - lo < now->rows) /* some rows: all of them is a whole pass */
		a->rows_lo = lo, a->rows_hi = hi;
}

/* The first and one past the last column in which x and y (the same shape) differ, into *c0, *c1; nothing when none. */
static void differing_columns(const Mat *x, const Mat *y, int *c0, int *c1)
{
	for (int i = 0; i < x->rows; i++)
		for (int j = 0; j < x->cols; j++)
			if (memcmp(&MAT_AT(*x, i, j), &MAT_AT(*y, i, j), sizeof(double)) != 0) {
				*c0 = j < *c0 ? j : *c0;
				*c1 = j + 1 > *c1 ? j + 1 : *c1;
			}
}

/*
 * When the only given matrices of layer a that changed are W_q, W_k, W_v or
 * their biases, and only in the columns of some heads (an edit of one cell
 * reaches one head, or the query heads that share a key/value head), and
 * a's variants keep heads apart up to concat (attn_heads_apart): those query
 * heads, [a->heads_lo, a->heads_hi), for the passes that can remake them
 * alone; else 0, 0. Q's column c is head c / d_k's; K's and V's, key/value
 * head c / d_k's (c / d_v's), which the query heads reading it share.
 */
static void changed_heads(Attn *a, const ModelConfig *old_c, const LayerParams *old_p, const unsigned char *changed)
{
	static const AttnMatrix qkv[] = { AM_W_Q, AM_B_Q, AM_W_K, AM_B_K, AM_W_V, AM_B_V };
	const LayerParams *lp = &a->lp;
	int lo = a->heads, hi = 0, any = 0;

	a->heads_lo = a->heads_hi = 0;
	if (lp->d_k <= 0 || lp->d_v <= 0 || a->kv_heads <= 0 || !attn_heads_apart(a))
		return;
	for (int w = 0; w < AM_COUNT; w++)
		if ((matrix_kinds[w].flags & MF_GIVEN) && changed[w]) {
			size_t k = 0;
			while (k < sizeof qkv / sizeof qkv[0] && qkv[k] != (AttnMatrix)w)
				k++;
			if (k == sizeof qkv / sizeof qkv[0])
				return; /* another matrix changed too */
		}
	for (size_t k = 0; k < sizeof qkv / sizeof qkv[0]; k++) {
		const Mat *was = lesson_model_matrix(old_c, old_p, qkv[k]), *now = lesson_model_matrix(&a->cfg, lp, qkv[k]);
		const int width = qkv[k] == AM_W_V || qkv[k] == AM_B_V ? lp->d_v : lp->d_k;
		int c0 = INT_MAX, c1 = 0;
		if (!changed[qkv[k]])
			continue;
		if (was == NULL || now == NULL || was->a == NULL || now->a == NULL || was->rows != now->rows ||
		    was->cols != now->cols)
			return;
		differing_columns(was, now, &c0, &c1);
		if (c1 == 0)
			continue;
		any = 1;
		for (int h = 0; h < a->heads; h++) { /* the query heads whose columns (or key/value head's) differ */
			const int g = qkv[k] == AM_W_Q || qkv[k] == AM_B_Q ? h : attn_kv_head(a, h);
			if (g * width < c1 && (g + 1) * width > c0) {
				lo = h < lo ? h : lo;
				hi = h + 1 > hi ? h + 1 : hi;
			}
		}
	}
	if (any && hi > lo && hi - lo < a->heads)
		a->heads_lo = lo, a->heads_hi = hi;
}

static int update_chain(Attn *first, const Lesson *l, Attn **before, double keep_numbers, char **err)
{
	unsigned char changed[AM_COUNT];
	Keep k = { NULL, keep_numbers };
	Attn **klink = &k.first;
	const Attn *prev = NULL;
	int prev_changed = 0;
	double plan = 0;
	Attn *a;

	*err = NULL;
	progress_t0 = clock_ms();
	if (before != NULL)
		*before = NULL;
	if (l->encoder != NULL) /* an encoder–decoder is computed afresh */
		return 1;
	if (first->nlayers != l->nlayers)
		return 1;
	for (a = first; a != NULL; prev = a, a = a->next) {
		ModelConfig vc;
		LayerParams vp;
		layer_model(&l->model, a->layer, a->layer == 0 ? &l->cfg.input : attn_layer_output(prev), NULL, &vc, &vp);
		if (!same_settings(&a->cfg, &a->lp, &vc, &vp))
			return 1;
		/* a real model's weight an edit made the model's own: the numbers it had, to compare with */
		if (vp.files != a->lp.files && attn_weights_make(a) != 0) {
			*err = str_printf("out of memory computing the lesson");
			return -1;
		}
	}
	/*
	 * Twice when copies are asked for: first only counting the numbers the
	 * passes would remake (the copies are made only when all of them fit),
	 * then running them.
	 */
	for (int pass = before != NULL ? 0 : 1; pass < 2; pass++) {
		prev_changed = 0;
		for (a = first, prev = NULL; a != NULL; prev = a, a = a->next) {
			/* the model it computed from, and (pass 0) the one it would compute from now */
			const ModelConfig old_c = a->cfg;
			LayerParams old_p = a->lp;
			const unsigned old_made = a->file_made;
			int any = 0;
			ModelConfig plan_c;
			LayerParams plan_p;
			Attn *ka = NULL;
			if (pass == 1 && before != NULL && plan <= keep_numbers && (klink == &k.first || k.first != NULL)) {
				if ((ka = keep_link(a)) == NULL)
					keep_drop(&k);
				else {
					*klink = ka;
					klink = &ka->next;
				}
			}
			layer_model(&l->model, a->layer, a->layer == 0 ? &l->cfg.input : attn_layer_output(prev), NULL,
			            pass == 0 ? &plan_c : &a->cfg, pass == 0 ? &plan_p : &a->lp);
			if (pass == 1)
				a->top = l;
			/* what changed: the given matrices whose bits differ; a later layer's input when the one before changed */
			memset(changed, 0, sizeof changed);
			for (int w = 0; w < AM_COUNT; w++)
				if (matrix_kinds[w].flags & MF_GIVEN) {
					changed[w] = a->layer > 0 && w == AM_INPUT
					                 ? prev_changed
					                 : !same_file(&old_p, pass == 0 ? &plan_p : &a->lp, (AttnMatrix)w) &&
					                       !attn_same_bits(lesson_model_matrix(&old_c, &old_p, (AttnMatrix)w),
					                                       pass == 0 ? lesson_model_matrix(&plan_c, &plan_p, (AttnMatrix)w)
					                                                 : lesson_model_matrix(&a->cfg, &a->lp, (AttnMatrix)w));
					any |= changed[w];
				}
			/* a real model's weights: the doubles a made before freed; made again for the passes that run */
			if (pass == 1) {
				layer_params_unmake(&old_p, old_made);
				a->file_made = 0;
				if (any && attn_weights_make(a) != 0) {
					*err = str_printf("out of memory computing the lesson");
					keep_drop(&k);
					return -1;
				}
			}
			a->nonfinite = 0;
			a->failed = 0;
			if (pass == 1 && a->layer == 0)
				changed_rows(a, &old_c, &old_p, changed);
			if (pass == 1)
				changed_heads(a, &old_c, &old_p, changed);
			run_passes(a, pass == 0 ? &plan_c : &a->cfg, pass == 0 ? &plan_p : &a->lp, changed, &k, k.first != NULL ? ka : NULL,
			           pass == 0 ? &plan : NULL);
			a->rows_lo = a->rows_hi = a->heads_lo = a->heads_hi = 0;
			prev_changed = 0;
			for (int w = 0; w < AM_COUNT; w++)
				prev_changed |= changed[w];
			if (pass == 1 && a->failed) { /* a pass ran out of memory (a variant's rows): its results are stale */
				*err = str_printf("out of memory computing the lesson");
				keep_drop(&k);
				return -1;
			}
			if (pass == 1 && (*err = overflow_error(a, changed)) != NULL) {
				keep_drop(&k);
				return -1;
			}
			if (pass == 1 && ttyguard_stop_pending()) { /* Ctrl-C: half remade, the caller puts it back */
				*err = str_printf("%s", _("stopped (Ctrl-C): the edit was not made"));
				keep_drop(&k);
				return -1;
			}
			if (pass == 1)
				attn_weights_drop(a);
		}
	}
	if (l->cfg.backward != BACKWARD_NONE) {
		double loss;
		/* the loss now, the gradients when first read (none yet: made now), so an edit shows its forward pass at once */
		const int later = first->grad != NULL;
		if ((later ? attn_loss(first, &loss, err) : attn_backward(first, &loss, err)) != 0) {
			keep_drop(&k);
			return -1;
		}
		first->grad_stale |= later;
	}
	if (before != NULL)
		*before = k.first;
	else
		keep_drop(&k);
	return 0;
}


/* An update is work that Ctrl-C stops between passes (issue 27 §5): refused, the caller's way back runs. */
int attn_update(Attn *first, const Lesson *l, Attn **before, double keep_numbers, char **err)
{
	int r;

	ttyguard_work_begin();
	r = update_chain(first, l, before, keep_numbers, err);
	ttyguard_work_end();
	return r;
}

void attn_redo_next(Attn *first, const ModelConfig *cfg)
{
	const StageKernel kernel = attn_stage_kernel(STAGE_NEXT);

	for (Attn *a = first; a != NULL; a = a->next) {
		a->cfg.temperature = cfg->temperature;
		a->cfg.top_k = cfg->top_k;
		a->cfg.logits_row = cfg->logits_row;
		if (stage_present(&a->shape, STAGE_NEXT)) {
			kernel(a, &a->cfg, &a->lp);
			attn_touch(a);
		}
	}
}

int attn_check_quiz_answers(const Attn *a, char **err)
{
	const Lesson *l = a->top; /* the course's steps: the lesson's, not the model's */

	for (int i = 0; i < l->nsteps; i++) {
		const Step *st = &l->steps[i];
		const CellRef *c = &st->quiz.answer_cell;
		const int which = matrix_find(c->matrix);
		const Attn *la = attn_layer(st->encoder && a->encoder != NULL ? a->encoder : a, st->layer);
		const Mat *m = which < 0 || la == NULL ? NULL : attn_matrix(la, (AttnMatrix)which, c->head);

		if (!st->has_quiz || st->quiz.nchoices > 0 || m == NULL || c->row >= m->rows || c->col >= m->cols)
			continue;
		if (!isinf(MAT_AT(*m, c->row, c->col)))
			continue;
		*err = str_printf("steps[%d].quiz.answer: %s[%d][%d] (head %d) is %s\u221e, which no one can type as an answer; "
		                  "ask about a cell the mask keeps, or give \"choices\"",
		                  i, c->matrix, c->row, c->col, c->head, MAT_AT(*m, c->row, c->col) < 0 ? "\u2212" : "");
		return -1;
	}
	return 0;
}


static pthread_mutex_t weights_lock = PTHREAD_MUTEX_INITIALIZER; /* a view's thread may read while another makes */

int attn_weights_make(Attn *a)
{
	int r;

	pthread_mutex_lock(&weights_lock);
	r = layer_params_make(&a->lp, &a->file_made);
	pthread_mutex_unlock(&weights_lock);
	return r;
}

int attn_weights_make_some(Attn *a, unsigned want, unsigned *made)
{
	int r;

	*made = 0;
	pthread_mutex_lock(&weights_lock);
	r = layer_params_make_some(&a->lp, want, made);
	a->file_made |= *made;
	pthread_mutex_unlock(&weights_lock);
	return r;
}

void attn_weights_drop_some(Attn *a, unsigned bits)
{
	pthread_mutex_lock(&weights_lock);
	layer_params_unmake(&a->lp, bits & a->file_made);
	a->file_made &= ~bits;
	pthread_mutex_unlock(&weights_lock);
}

void attn_weights_drop(Attn *a)
{
	pthread_mutex_lock(&weights_lock);
	layer_params_unmake(&a->lp, a->file_made);
	a->file_made = 0;
	pthread_mutex_unlock(&weights_lock);
}

void attn_free(Attn *a)
{
	if (a == NULL)
		return;
	attn_weights_drop(a);
	attn_free(a->next);
	attn_free(a->encoder);
	attn_grad_free(a->grad, a->heads);
	free(a->train_loss);
	attn_free_matrices(a);
	free(a);
}

Attn *attn_compute_model_all(const Model *m, const Lesson *course, char **err)
{
	Attn *a = attn_compute_model(m, course, err);
	double loss;

	if (a != NULL && m->cfg.backward != BACKWARD_NONE && attn_backward(a, &loss, err) != 0) {
		attn_free(a);
		return NULL;
	}
	return a;
}

Attn *attn_compute_all(const Lesson *l, char **err)
{
	return attn_compute_model_all(&l->model, l, err);
}

/* ---------------------------------------------------------------- training */

/* A parameter in a layer's lesson and its gradient in AttnGrad. */
static const struct {
	size_t param, grad;
} params[] = {
	{ offsetof(LayerParams, W_q), offsetof(AttnGrad, W_q) },
	{ offsetof(LayerParams, W_k), offsetof(AttnGrad, W_k) },
	{ offsetof(LayerParams, W_v), offsetof(AttnGrad, W_v) },
	{ offsetof(LayerParams, W_o), offsetof(AttnGrad, W_o) },
	{ offsetof(LayerParams, w_e), offsetof(AttnGrad, w_e) },
	{ offsetof(LayerParams, b_q), offsetof(AttnGrad, b_q) },
	{ offsetof(LayerParams, b_k), offsetof(AttnGrad, b_k) },
	{ offsetof(LayerParams, b_v), offsetof(AttnGrad, b_v) },
	{ offsetof(LayerParams, b_o), offsetof(AttnGrad, b_o) },
	{ offsetof(LayerParams, sinks), offsetof(AttnGrad, sinks) },
	{ offsetof(LayerParams, block.ln1_gamma), offsetof(AttnGrad, ln1_gamma) },
	{ offsetof(LayerParams, block.ln1_beta), offsetof(AttnGrad, ln1_beta) },
	{ offsetof(LayerParams, block.ln2_gamma), offsetof(AttnGrad, ln2_gamma) },
	{ offsetof(LayerParams, block.ln2_beta), offsetof(AttnGrad, ln2_beta) },
	{ offsetof(LayerParams, block.W_1), offsetof(AttnGrad, W_1) },
	{ offsetof(LayerParams, block.b_1), offsetof(AttnGrad, b_1) },
	{ offsetof(LayerParams, block.W_3), offsetof(AttnGrad, W_3) },
	{ offsetof(LayerParams, block.b_3), offsetof(AttnGrad, b_3) },
	{ offsetof(LayerParams, block.W_2), offsetof(AttnGrad, W_2) },
	{ offsetof(LayerParams, block.b_2), offsetof(AttnGrad, b_2) },
	{ offsetof(LayerParams, W_gate), offsetof(AttnGrad, W_gate) },
	{ offsetof(LayerParams, b_gate), offsetof(AttnGrad, b_gate) },
	{ offsetof(LayerParams, block.moe.W_r), offsetof(AttnGrad, W_r) },
	{ offsetof(LayerParams, block.moe.b_r), offsetof(AttnGrad, b_r) },
	{ offsetof(LayerParams, block.moe.W_1), offsetof(AttnGrad, moe_W_1) },
	{ offsetof(LayerParams, block.moe.W_3), offsetof(AttnGrad, moe_W_3) },
	{ offsetof(LayerParams, block.moe.W_2), offsetof(AttnGrad, moe_W_2) },
	{ offsetof(LayerParams, block.moe.b_1), offsetof(AttnGrad, moe_b_1) },
	{ offsetof(LayerParams, block.moe.b_3), offsetof(AttnGrad, moe_b_3) },
	{ offsetof(LayerParams, block.moe.b_2), offsetof(AttnGrad, moe_b_2) },
	{ offsetof(LayerParams, block.moe.S_1), offsetof(AttnGrad, S_1) },
	{ offsetof(LayerParams, block.moe.S_3), offsetof(AttnGrad, S_3) },
	{ offsetof(LayerParams, block.moe.S_2), offsetof(AttnGrad, S_2) },
	{ offsetof(LayerParams, block.moe.S_gate), offsetof(AttnGrad, S_gate) },
};
_Static_assert(sizeof params / sizeof params[0] <= ATTN_GRAD_PARAMS, "ATTN_GRAD_PARAMS counts every parameter");

/* p ← p − lr·dp, where both exist with the same shape. */
static void descend(Mat *p, const Mat *dp, double lr)
{
	if (mat_empty(p) || mat_empty(dp) || p->rows * p->cols != dp->rows * dp->cols)
		return;
	for (size_t i = 0; i < (size_t)p->rows * (size_t)p->cols; i++)
		p->a[i] -= lr * dp->a[i];
}

int attn_grad_pairs(LayerParams *p, const AttnGrad *g, Mat **param, const Mat **grad, int max)
{
	int n = 0;

	for (size_t i = 0; i < sizeof params / sizeof params[0] && n < max; i++) {
		Mat *m = (Mat *)((char *)p + params[i].param);
		if (mat_empty(m))
			continue;
		param[n] = m;
		grad[n++] = (const Mat *)((const char *)g + params[i].grad);
	}
	return n;
}

/* One step: every layer's parameters, and the stack's final norm. */
static void step_params(Model *l, const Attn *first, double lr)
{
	for (const Attn *a = first; a != NULL; a = a->next) {
		Mat *param[ATTN_GRAD_PARAMS];
		const Mat *grad[ATTN_GRAD_PARAMS];
		const int n = attn_grad_pairs(model_layer_params(l, a->layer), a->grad, param, grad, ATTN_GRAD_PARAMS);
		for (int i = 0; i < n; i++)
			descend(param[i], grad[i], lr);
		if (a->next == NULL) {
			descend(&l->cfg.final_gamma, &a->grad->final_gamma, lr);
			descend(&l->cfg.final_beta, &a->grad->final_beta, lr);
		}
	}
	if (l->encoder != NULL && first->encoder != NULL)
		step_params(l->encoder, first->encoder, lr);
}

static int train_steps(Lesson *l, int steps, double lr, double *losses, char **err);

/* losses[s] is the loss after step s (losses[0] before the first); the one after the last step is checked too. */
int attn_train(Lesson *l, int steps, double lr, double *losses, char **err)
{
	int r = 0;

	ttyguard_work_begin(); /* Ctrl-C stops it between steps (and passes): an error, the caller's lesson kept */
	r = train_steps(l, steps, lr, losses, err);
	ttyguard_work_end();
	return r;
}

static int train_steps(Lesson *l, int steps, double lr, double *losses, char **err)
{
	for (int s = 0; s <= steps; s++) {
		Attn *a;
		double loss;
		a = attn_compute(l, err);
		if (a == NULL) {
			if (ttyguard_stop_pending()) { /* attn_compute stops at once (it looks before every pass) */
				free(*err);
				*err = str_printf(_("stopped (Ctrl-C) before step %d of %d"), s + 1, steps);
			}
			return -1;
		}
		/* the loss after the last step is all that step's computation is for: no gradients */
		if ((s == steps ? attn_loss(a, &loss, err) : attn_backward(a, &loss, err)) != 0) {
			attn_free(a);
			return -1;
		}
		if (losses != NULL)
			losses[s] = loss;
		if (!isfinite(loss)) {
			attn_free(a);
			*err = s == 0 ? str_printf("the loss is %g before step 1 (try a smaller learning rate)", loss)
			              : str_printf("the loss is %g after step %d: training diverged (try a smaller learning rate)",
			                           loss, s);
			return -1;
		}
		if (s == steps) { /* the loss after the last step: checked, not stepped from */
			attn_free(a);
			break;
		}
		step_params(&l->model, a, lr);
		attn_free(a);
	}
	return 0;
}
