/* session_edit.c: the session's edits (session.h, "Edits"): a value of a
 * given matrix changed in place (only that matrix copied, the computation
 * updated, what was kept put back on a refusal), and settings and shapes
 * changed on a copy of the lesson computed afresh. */
#include "app/session.h"
#include "app/session_internal.h"
#include "base/i18n.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backward.h"
#include "engine/variants/variants.h"
#include "base/strbuf.h"

/* ------------------------------------------------------------ edits */


/*
 * The learner's edit wins over the lesson's walk: a step on a stage the edit
 * removed shows the stage before it, a step on a head that no longer exists
 * shows head 0, and a focus or question on a cell that is gone is dropped
 * (the question is counted as not asked). Judged from the shapes, before
 * anything is computed.
 */
static void adapt_steps(Lesson *l)
{
	int i;

	for (i = 0; i < l->nsteps; i++) {
		Step *st = &l->steps[i];
		const Model *stk = lesson_step_stack(l, st); /* the encoder's, or the lesson's own layers */
		/* a stage an edit removed (heads 1: no split; mask none: no mask) gives way to the table's stand-in */
		const int heads = model_layer_params_const(stk, st->layer)->heads;
		LessonShape sh;
		lesson_layer_shape(stk, st->layer, &sh);
		st->stage = stage_shown(&sh, st->stage);
		if (st->head >= heads)
			st->head = 0;
		if (st->has_focus && st->focus.head >= heads)
			st->focus.head = 0;
		if (st->has_focus && !lesson_cell_exists(stk, st->layer, &st->focus))
			st->has_focus = 0;
		if (st->has_quiz && st->quiz.nchoices == 0) {
			if (st->quiz.answer_cell.head >= heads)
				st->quiz.answer_cell.head = 0;
			if (!lesson_cell_exists(stk, st->layer, &st->quiz.answer_cell))
				st->has_quiz = 0;
		}
	}
}

/* A copy of the lesson with the edit made (to its compare variant too), checked; NULL with *err when refused. */
static Lesson *edited_copy(const Session *s, SessionEdit edit, void *arg, char **err)
{
	Lesson *copy = lesson_clone(s->lesson);

	if (copy == NULL) {
		*err = str_printf(_("out of memory"));
		return NULL;
	}
	if (edit(copy, arg, err) != 0) {
		lesson_free(copy);
		return NULL;
	}
	/* Edits apply to the compare variant too; a refusal there refuses the edit. */
	if (copy->compare != NULL) {
		char *e = NULL;
		if (edit(copy->compare, arg, &e) != 0) {
			*err = str_printf(_("compare: %s"), e ? e : "the variant refuses this edit");
			free(e);
			lesson_free(copy);
			return NULL;
		}
	}
	/*
	 * The loader's own checks, before anything is computed: an edit that
	 * leaves the shapes disagreeing (a causal mask on cross-attention, where
	 * n ≠ m) is refused here with the loader's message.
	 */
	adapt_steps(copy);
	if (lesson_validate(copy, err) != 0) {
		lesson_free(copy);
		return NULL;
	}
	return copy;
}

/* The edited lesson and its computation take the place of the current ones; the walk follows, keeping the place. */
static int take_edit(Session *s, Lesson *copy, Attn *model, Attn *before, char **err)
{
	sn_drop_prev(s);
	/* the lesson before stays while the flash needs it, with its copies (lesson_free takes NULL) */
	if (before != NULL)
		s->prev_lesson = s->lesson;
	else
		lesson_free(s->lesson);
	s->prev_model = before;
	s->lesson = copy;
	s->model = model;
	sn_point_layer(s);
	/* The walk copies steps by value; re-point it at the new lesson's, keeping the place. */
	{
		const int step = s->step, head = s->head;
		const Stage stage = s->stage;
		QuizState *quiz = s->quiz;
		const int right = s->quiz_right, asked = s->quiz_asked, cls = s->quiz_class, nwalk = s->nwalk;
		s->quiz = NULL;
		if (sn_build_walk(s) != 0) {
			*err = str_printf(_("out of memory"));
			free(quiz);
			return -1;
		}
		if (s->nwalk == nwalk) {
			memcpy(s->quiz, quiz, (size_t)nwalk * sizeof *quiz);
			s->quiz_right = right;
			s->quiz_asked = asked;
			s->quiz_class = cls;
		}
		free(quiz);
		const int t = s->dec_t, tq = s->tile_q, tk = s->tile_k;
		s->step = step < s->nwalk ? step : 0;
		s->stage = stage_present(&s->attn->shape, stage) ? stage : s->walk[s->step].stage;
		s->head = head < s->attn->heads ? head : 0;
		sn_enter_substeps(s, 0);
		sn_restore_substeps(s, t, tq, tk);
	}
	s->edited = 1;
	s->dirty |= DIRTY_VALUES | DIRTY_PLACE;
	return 0;
}

/* The edited lesson computed afresh beside the current one, then in its place. */
static int edit_afresh(Session *s, Lesson *copy, char **err)
{
	Attn *a, *b = NULL;

	/*
	 * The edited lesson is computed beside the current one, so both count
	 * against LESSON_MAX_NUMBERS; the computation kept for the flash is
	 * dropped first (the current one becomes it).
	 */
	sn_drop_prev(s);
	if (lesson_budget_numbers(copy) + lesson_budget_numbers(s->lesson) > (double)LESSON_MAX_NUMBERS) {
		*err = str_printf(_("this lesson is too large to edit: the edited copy and the lesson together would hold "
		                    "%.0f numbers, over the limit of %ld (LESSON_MAX_NUMBERS)"),
		                  lesson_budget_numbers(copy) + lesson_budget_numbers(s->lesson), (long)LESSON_MAX_NUMBERS);
		lesson_free(copy);
		return -1;
	}
	if ((a = attn_compute_all(copy, err)) == NULL) {
		lesson_free(copy);
		return -1;
	}
	if (sn_compute_compare(copy, &b, err) != 0) {
		attn_free(a);
		lesson_free(copy);
		return -1;
	}
	attn_free(s->compare_model);
	s->compare_model = b;
	return take_edit(s, copy, a, s->model, err);
}

int session_edit(Session *s, SessionEdit edit, void *arg, char **err)
{
	Lesson *copy = edited_copy(s, edit, arg, err);

	return copy == NULL ? -1 : edit_afresh(s, copy, err);
}

/*
 * How many numbers the copies kept for the flash may hold during an edit:
 * a tenth of the computation (an edit of W_o or W_v at n = 1024 keeps its
 * few n × d matrices; one of W_q remakes every head's n × n scores and keeps
 * none), or any small lesson's whole.
 */
static double keep_limit(const Lesson *l)
{
	const double tenth = lesson_count_numbers(l) / 10;
	return tenth > (double)(1 << 20) ? tenth : (double)(1 << 20);
}

/* ------------------------------------------------------------ edits of settings and shapes */

typedef struct HeadsArg {
	int heads, layer;
} HeadsArg;

/* heads N: the layer shown (a lesson without layers is its own); d_k and d_v follow from the columns. */
static int edit_heads(Lesson *top, void *arg, char **err)
{
	const HeadsArg *ha = arg;
	const int h = ha->heads;
	int i;
	Model *stk = lesson_walk_stack(top, ha->layer, &i);
	LayerParams *p = model_layer_params(stk, i);
	/* key/value heads follow the query heads unless the lesson set them ("kv_heads") */
	const int g = p->kv_heads_given ? p->kv_heads : h;
	const Mat *bad = p->W_q.cols % h != 0 ? &p->W_q : p->W_v.cols % g != 0 ? &p->W_v : NULL;

	if (bad != NULL) {
		*err = str_printf(_("heads: %d does not divide the %d columns of %s"), bad == &p->W_q ? h : g, bad->cols,
		                  bad == &p->W_q ? "W_q" : "W_v");
		return -1;
	}
	if (h % g != 0) {
		*err = str_printf(_("heads: %d is not a multiple of the lesson's %d key/value heads (\"kv_heads\")"), h, g);
		return -1;
	}
	if (stk->cfg.alibi && !mat_empty(&p->alibi_slopes)) {
		*err = str_printf(_("heads: the lesson gives ALiBi %d slopes, one per head; it cannot have %d heads"),
		                  p->alibi_slopes.cols, h);
		return -1;
	}
	p->heads = h;
	p->kv_heads = g;
	p->d_k = p->W_q.cols / h;
	p->d_v = p->W_v.cols / g;
	return 0;
}

int session_set_heads(Session *s, int heads, char **err)
{
	HeadsArg ha = { heads, s->layer };

	return session_edit(s, edit_heads, &ha, err);
}

typedef struct MaskArg {
	MaskKind kind;
	int window;
	const Mat *padding;
	int layer; /* the walk layer shown: whose mask is edited */
} MaskArg;

/* A mask (a model's, or a layer's own: the same fields) replaced by a's. */
#define set_mask(holder, a, err) set_mask_of(&(holder)->mask, &(holder)->window, &(holder)->mask_matrix, &(holder)->nmasks, &(holder)->masks, a, err)
static int set_mask_of(MaskKind *mask, int *window, Mat *matrix, int *nmasks, MaskPart **masks, const MaskArg *a, char **err)
{
	mat_free(matrix);
	for (int i = 0; i < *nmasks; i++)
		mat_free(&(*masks)[i].matrix);
	free(*masks);
	*masks = NULL;
	*nmasks = 0;
	*mask = a->kind;
	*window = a->window;
	/* Copied, not moved: the compare variant gets the same edit. */
	if (a->kind == MASK_PADDING && mat_copy(matrix, a->padding) != 0) {
		*err = strdup("out of memory");
		return -1;
	}
	return 0;
}

/*
 * The mask of the layer shown: a stack's layers (an encoder's too) share
 * their stack's, unless they keep their own (local and global layers:
 * mask_own); each attention of an encoder–decoder's decoder keeps its own
 * (link 0's is the top level's as well).
 */
static int edit_mask(Lesson *top, void *arg, char **err)
{
	const MaskArg *a = arg;
	int i;
	Model *stk = lesson_walk_stack(top, a->layer, &i);

	if ((stk == &top->model && top->encoder != NULL) || (i < stk->nlayers && stk->layer[i].own.mask_own))
		return set_mask(&stk->layer[i].own, a, err) != 0 || (i == 0 && set_mask(&stk->cfg, a, err) != 0) ? -1 : 0;
	return set_mask(&stk->cfg, a, err);
}

int session_set_mask(Session *s, MaskKind kind, int window, const Mat *padding, char **err)
{
	MaskArg a = { kind, window, padding, s->layer };

	return session_edit(s, edit_mask, &a, err);
}

typedef struct ScaleArg {
	ScaleKind kind;
	double value;
} ScaleArg;

/* The scale is a setting of every attention of the lesson: an encoder–decoder's encoder too. */
static void scale_model(Model *m, const ScaleArg *a)
{
	m->cfg.scale = a->kind;
	m->cfg.scale_value = a->value;
	m->cfg.scale_explicit = 1;
	if (m->encoder != NULL)
		scale_model(m->encoder, a);
}

static int edit_scale(Lesson *l, void *arg, char **err)
{
	(void)err;
	scale_model(&l->model, arg);
	return 0;
}

int session_set_scale(Session *s, ScaleKind kind, double value, char **err)
{
	ScaleArg a = { kind, kind == SCALE_VALUE ? value : 0.0 };

	return session_edit(s, edit_scale, &a, err);
}

/*
 * decode on|off: the lesson's tokens (a model's prompt and what generate
 * appended) computed one at a time with a KV cache, the decode stage's walk
 * (issue 21). Refused where a cache cannot be kept: without a causal −∞
 * mask over the lesson's own tokens, or with dynamic NTK
 * (each a message that says what to change).
 */
static int edit_decode(Lesson *l, void *arg, char **err)
{
	(void)err;
	l->cfg.decode = *(const int *)arg;
	return 0;
}

int session_set_decode(Session *s, int on, char **err)
{
	const ModelConfig *c = &s->lesson->cfg;

	if (on && (c->has_source || s->lesson->encoder != NULL)) {
		*err = str_printf(_("decode: the KV cache is for a lesson's own tokens, not for cross-attention or an "
		                    "encoder-decoder"));
		return -1;
	}
	if (on && (!model_mask_causal(c) || !c->mask_fill_inf)) {
		*err = str_printf(_("decode: a KV cache needs the causal mask with -inf (each token sees only those before "
		                    "it): mask causal first"));
		return -1;
	}
	if ((c->decode != 0) == (on != 0))
		return 0;
	return session_edit(s, edit_decode, &on, err);
}

/* The next-token settings of one lesson (the lesson, then its compare variant). */
static void set_next(ModelConfig *c, double temperature, int top_k, int row)
{
	if (temperature > 0)
		c->temperature = temperature;
	if (top_k > 0)
		c->top_k = top_k;
	if (row >= 0)
		c->logits_row = row;
}

int session_set_next(Session *s, double temperature, int top_k, int row, char **err)
{
	const ModelConfig *c = &s->lesson->cfg;

	if (c->vocab <= 0) {
		*err = str_printf(_("this lesson has no LM head (no \"vocab\" and \"unembed\"): no next token to show"));
		return -1;
	}
	if (temperature == 0 || !isfinite(temperature)) {
		*err = str_printf(_("the temperature must be a number > 0 (the logits are divided by it)"));
		return -1;
	}
	if (top_k > c->vocab || top_k > LESSON_MAX_TOP_K) {
		*err = str_printf(_("top-k must be from 1 to %d (the vocabulary's size, at most %d)"), c->vocab, LESSON_MAX_TOP_K);
		return -1;
	}
	if (row >= c->n) {
		*err = str_printf(_("the position must be from 0 to %d (a row of the logits)"), c->n - 1);
		return -1;
	}
	/* the edit changes no number a pass before next reads: no copy, no recomputation but its softmax */
	sn_drop_prev(s);
	set_next(&s->lesson->cfg, temperature, top_k, row);
	attn_redo_next(s->model, &s->lesson->cfg);
	if (s->lesson->compare != NULL && s->compare_model != NULL) {
		set_next(&s->lesson->compare->cfg, temperature, top_k, row);
		attn_redo_next(s->compare_model, &s->lesson->compare->cfg);
	}
	s->edited = 1;
	s->dirty |= DIRTY_VALUES;
	return 0;
}

typedef struct TrainArg {
	int steps;
	double lr;
	double *losses; /* steps + 1: the main lesson's losses (the variant's are not kept) */
	int variant;    /* 0 for the first call (the lesson), 1 after (its compare variant) */
} TrainArg;

/* train: gradient descent on the copy (the lesson's losses kept, not the variant's). */
static int edit_train(Lesson *l, void *arg, char **err)
{
	TrainArg *t = arg;
	double *losses = t->variant ? NULL : t->losses;

	if (l->cfg.backward == BACKWARD_NONE) {
		*err = str_printf(_("train: this lesson has no \"backward\" (a target or a dOutput) to learn from"));
		return -1;
	}
	t->variant = 1; /* session_edit edits the lesson first, then its compare variant */
	return attn_train(l, t->steps, t->lr, losses, err);
}

int session_train(Session *s, int steps, double lr, double *losses, char **err)
{
	TrainArg t = { steps, lr, losses, 0 };

	if (session_edit(s, edit_train, &t, err) != 0)
		return -1;
	losses[steps] = s->model->loss; /* the session computed the trained lesson's gradients */
	return 0;
}

/* ------------------------------------------------------------ edits of values */

/* The cell of l's matrix, or -1 with *err when l has no such cell (the compare variant may have other shapes). */
static Mat *cell_matrix(Lesson *l, AttnMatrix which, int layer, int row, int col, char **err)
{
	Mat *m = lesson_walk_matrix(l, layer, which);

	if (m == NULL || row >= m->rows || col >= m->cols) {
		*err = str_printf(_("%s[%d][%d] is outside its %d × %d"), matrix_name(which), row, col, m ? m->rows : 0,
		                  m ? m->cols : 0);
		return NULL;
	}
	return m;
}

/* l has none of a feature's given matrix (a compare variant with "sinks": false): an edit of it leaves l alone. */
static int lacks_matrix(Lesson *l, AttnMatrix which, int layer)
{
	const Mat *m = lesson_walk_matrix(l, layer, which);

	return m != NULL && mat_empty(m) && matrix_kinds[which].requires != 0;
}

typedef struct CellArg {
	AttnMatrix which;
	int layer, row, col;
	double value;
} CellArg;

/* The cell set on a copy: when attn_update finds the shapes or settings are not the same after all. */
static int edit_cell(Lesson *l, void *arg, char **err)
{
	const CellArg *a = arg;
	Mat *m;

	if (lacks_matrix(l, a->which, a->layer))
		return 0;
	if ((m = cell_matrix(l, a->which, a->layer, a->row, a->col, err)) == NULL)
		return -1;
	MAT_AT(*m, a->row, a->col) = a->value;
	return 0;
}

/*
 * What a values edit keeps of the lessons before it, to go back and for
 * the flash: the matrix each one (the lesson, its compare variant) held
 * where the edited copy now is. A computation reads its model through its
 * own copies (Attn.cfg, Attn.lp), which borrow the matrix they were made
 * with: the old one until attn_update remakes them from the edited lesson.
 */
typedef struct KeptMatrix {
	Mat *slot;      /* in the lesson: now the edited copy */
	Mat old;        /* owned: the matrix before */
} KeptMatrix;

struct SessionKept {
	KeptMatrix lesson, compare;
};

static void kept_matrix_free(KeptMatrix *k)
{
	mat_free(&k->old);
	memset(k, 0, sizeof *k);
}

void sn_kept_free(SessionKept *k)
{
	if (k == NULL)
		return;
	kept_matrix_free(&k->lesson);
	kept_matrix_free(&k->compare);
	free(k);
}

/*
 * The lesson's matrix m replaced by a copy with cell (row, col) = value,
 * the old one kept in k (a computation of the lesson still reads it, through
 * its own copy of the model, until attn_update remakes that). Returns 0, or
 * -1 out of memory (nothing changed).
 */
static int swap_in(KeptMatrix *k, Mat *m, int row, int col, double value)
{
	Mat copy = { 0, 0, NULL };

	if (mat_copy(&copy, m) != 0)
		return -1;
	MAT_AT(copy, row, col) = value;
	k->slot = m;
	k->old = *m;
	*m = copy;
	return 0;
}

/* The edit undone in the lesson: the old matrix back in its place (the copy freed). */
static void swap_out(KeptMatrix *k)
{
	if (k->slot != NULL) {
		mat_free(k->slot);
		*k->slot = k->old;
		memset(&k->old, 0, sizeof k->old);
	}
	kept_matrix_free(k);
}

/*
 * The computation back to the lesson as it was when no copies of what it
 * remade were kept (attn_update keeps none when it fails): its own
 * documented way back, updated again from the edited lesson to the old one.
 */
static void update_back(Attn *a, KeptMatrix *k, Lesson *l)
{
	Mat edited = *k->slot; /* read by the half-updated computation: freed after */
	char *e = NULL;

	*k->slot = k->old;
	memset(&k->old, 0, sizeof k->old);
	if (attn_update(a, l, NULL, 0, &e) != 0)
		free(e);
	mat_free(&edited);
	kept_matrix_free(k);
}

/* How many numbers the copies an update kept hold. */
static double kept_numbers(const Attn *before)
{
	double n = 0;

	for (const Attn *k = before; k != NULL; k = k->next)
		for (int w = 0; w < AM_COUNT; w++)
			for (int h = 0; !(matrix_kinds[w].flags & MF_GIVEN) && h < ((matrix_kinds[w].flags & MF_PER_HEAD) ? k->heads : 1); h++) {
				const Mat *m = attn_matrix(k, (AttnMatrix)w, h);
				n += m != NULL ? (double)m->rows * m->cols : 0;
			}
	return n;
}

/*
 * The computation back as it was before attn_update remade it, from the
 * copies that update kept (before, link for link): every matrix it remade
 * swapped back, each link given the model it read before (its kept cfg
 * and lp). before then holds the edited numbers, for the caller to free.
 * The gradients are not kept: the caller works them out again once the
 * lesson is back too.
 */
static void restore_kept(Attn *first, Attn *before, const Lesson *l)
{
	const Attn *prev = NULL;

	for (Attn *a = first, *k = before; a != NULL && k != NULL; prev = a, a = a->next, k = k->next) {
		for (int w = 0; w < AM_COUNT; w++) {
			/* given matrices are the lesson's, gradients are not kept, derived ones are not held */
			if ((matrix_kinds[w].flags & (MF_GIVEN | MF_GRAD)) || attn_derived((AttnMatrix)w))
				continue;
			for (int h = 0; h < ((matrix_kinds[w].flags & MF_PER_HEAD) ? a->heads : 1); h++) {
				Mat *was = (Mat *)attn_matrix(k, (AttnMatrix)w, h), *now = (Mat *)attn_matrix(a, (AttnMatrix)w, h);
				if (was != NULL && now != NULL) {
					const Mat t = *now;
					*now = *was;
					*was = t;
				}
			}
		}
		/* the model it read, its input rows the layer before's output: those are the kept numbers now */
		a->cfg = k->cfg;
		attn_weights_drop(a); /* a real model's weights made since: a's own, freed (the kept lp's are dormant) */
		a->lp = k->lp;
		if (prev != NULL)
			a->cfg.input = *attn_layer_output(prev);
		a->top = l;
		attn_touch(a);
	}
}

/* A values edit taken: the computation before and the old matrix it reads (kept) stay for the flash. */
static int values_taken(Session *s, Attn *before, SessionKept *kept)
{
	s->prev_model = before;
	s->prev_kept = kept;
	sn_point_layer(s);
	s->edited = 1;
	s->dirty |= DIRTY_VALUES | DIRTY_PLACE;
	return 0;
}

/*
 * A cell set in the lesson (kept: its old matrices) computed afresh beside
 * the computation before, which still reads the old matrix: kept with it
 * for the flash. Refused (over the limit, a number the loader refuses, the
 * computation or its variant's fails): the matrices back as they were.
 */
static int set_cell_afresh(Session *s, SessionKept *kept, char **err)
{
	Lesson *l = s->lesson;
	const double budget = 2 * lesson_budget_numbers(l); /* the edited lesson's computation beside the one before */
	Attn *a = NULL, *variant = NULL, *before;

	if (budget > (double)LESSON_MAX_NUMBERS)
		*err = str_printf(_("this lesson is too large to edit: the edited copy and the lesson together would hold "
		                    "%.0f numbers, over the limit of %ld (LESSON_MAX_NUMBERS)"),
		                  budget, (long)LESSON_MAX_NUMBERS);
	else if (lesson_validate(l, err) == 0 && (a = attn_compute_all(l, err)) != NULL &&
	         sn_compute_compare(l, &variant, err) == 0) {
		attn_free(s->compare_model);
		s->compare_model = variant;
		kept_matrix_free(&kept->compare); /* the variant's computation before is gone: nothing reads its old matrix */
		before = s->model;
		s->model = a;
		return values_taken(s, before, kept);
	}
	attn_free(a);
	swap_out(&kept->lesson);
	swap_out(&kept->compare);
	sn_kept_free(kept);
	return -1;
}

int session_set_cell(Session *s, AttnMatrix which, int row, int col, double value, char **err)
{
	CellArg arg = { which, s->layer, row, col, value };
	Lesson *l = s->lesson, *c = l->compare;
	SessionKept *kept;
	Attn *before = NULL, *variant = NULL;
	Mat *m, *cm = NULL;
	char *e = NULL;
	int r;

	*err = NULL;
	sn_drop_prev(s); /* the last edit's copies go first */
	if (!matrix_editable(which)) {
		*err = str_printf(_("%s is computed, not given"), matrix_name(which));
		return -1;
	}
	if ((m = cell_matrix(l, which, s->layer, row, col, err)) == NULL)
		return -1;
	/* Edits apply to the compare variant too; a refusal there refuses the edit. */
	if (c != NULL && !lacks_matrix(c, which, s->layer) && (cm = cell_matrix(c, which, s->layer, row, col, &e)) == NULL) {
		*err = str_printf(_("compare: %s"), e ? e : "the variant refuses this edit");
		free(e);
		return -1;
	}
	if ((kept = calloc(1, sizeof *kept)) == NULL || swap_in(&kept->lesson, m, row, col, value) != 0 ||
	    (cm != NULL && swap_in(&kept->compare, cm, row, col, value) != 0)) {
		if (kept != NULL)
			swap_out(&kept->lesson);
		sn_kept_free(kept);
		*err = str_printf(_("out of memory"));
		return -1;
	}
	if (l->encoder != NULL) /* attn_update computes an encoder–decoder afresh: so is its edit, the lesson not copied */
		return set_cell_afresh(s, kept, err);
	/*
	 * The computation updated in place: only the passes the matrix reaches
	 * run again. With a variant, every matrix remade is kept, so that a
	 * variant that refuses the edit can have them put back. With a loss,
	 * the loss now and the gradients when first read: the edit's forward
	 * pass shows at once, in every front end.
	 */
	r = attn_update(s->model, l, &before, c != NULL ? INFINITY : keep_limit(l), err);
	if (r == 1) { /* not the same shapes and settings after all: computed afresh, on a copy */
		swap_out(&kept->lesson);
		swap_out(&kept->compare);
		sn_kept_free(kept);
		return session_edit(s, edit_cell, &arg, err);
	}
	/* The variant computed afresh beside the one it has (a variant is small): that one stays until this one is made. */
	if (r == 0 && c != NULL && sn_compute_compare(l, &variant, err) != 0)
		r = -1;
	if (r < 0) {
		/*
		 * Refused (the numbers overflow, in the lesson or its variant):
		 * everything back as it was, from what was kept when the lesson's
		 * update kept it (its variant refused), else its own way back.
		 */
		if (before != NULL) {
			double loss;
			restore_kept(s->model, before, l);
			swap_out(&kept->lesson);
			/* the gradients (never kept) again, from the numbers put back */
			if (l->cfg.backward != BACKWARD_NONE && attn_backward(s->model, &loss, &e) != 0)
				free(e);
		} else
			update_back(s->model, &kept->lesson, l);
		attn_free(before);
		swap_out(&kept->compare);
		sn_kept_free(kept);
		sn_point_layer(s);
		return -1;
	}
	if (variant != NULL) {
		attn_free(s->compare_model);
		s->compare_model = variant;
	}
	/* copies past what the flash may hold are not kept (a variant asked for all of them) */
	if (before != NULL && c != NULL && kept_numbers(before) > keep_limit(l)) {
		attn_free(before);
		before = NULL;
	}
	kept_matrix_free(&kept->compare); /* no computation reads the variant's old matrix now */
	if (before == NULL) {             /* nor the lesson's, without the flash's copies */
		sn_kept_free(kept);
		kept = NULL;
	}
	return values_taken(s, before, kept);
}

