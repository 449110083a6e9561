/* unit_update.c: an edit recomputed in place (attn_update) gives the same
 * bits as the edited lesson computed afresh, for every given matrix of every
 * shipped lesson (layers, blocks, cross-attention, gradients included), and
 * reruns only the passes the edit reaches. An encoder–decoder is not updated
 * in place: attn_update declines it, and the session's edit computes it afresh,
 * encoder included (checked the same way, matrix by matrix). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/backward.h"
#include "engine/compute.h"
#include "engine/kernels.h"
#include "inspect/dump.h"
#include "inspect/explain.h"
#include "lesson/lesson.h"
#include "app/session.h"
#include "base/ttyguard.h"
#include "unit_common.h"

static int same_mat(const Mat *x, const Mat *y)
{
	if (x == NULL || y == NULL)
		return x == y;
	return x->rows == y->rows && x->cols == y->cols &&
	       memcmp(x->a, y->a, (size_t)x->rows * (size_t)x->cols * sizeof *x->a) == 0;
}

/* Every matrix (gradients too), mask, factor and loss of every layer: the same bits. */
static void assert_same_computation(const Attn *x, const Attn *y, const char *what)
{
	for (; x != NULL || y != NULL; x = x->next, y = y->next) {
		assert_non_null(x);
		assert_non_null(y);
		assert_true((x->encoder == NULL) == (y->encoder == NULL));
		if (x->encoder != NULL)
			assert_same_computation(x->encoder, y->encoder, what);
		assert_int_equal(x->heads, y->heads);
		assert_true(memcmp(&x->factor, &y->factor, sizeof x->factor) == 0);
		assert_true(memcmp(&x->loss, &y->loss, sizeof x->loss) == 0);
		assert_true(memcmp(x->visible, y->visible, (size_t)attn_config(x)->n * (size_t)attn_config(x)->m) == 0);
		assert_true(memcmp(x->row_all_masked, y->row_all_masked, (size_t)attn_config(x)->n) == 0);
		assert_true((x->grad == NULL) == (y->grad == NULL));
		for (int w = 0; w < AM_COUNT; w++)
			for (int h = 0; h < x->heads; h++) {
				const Mat *mx = attn_matrix(x, (AttnMatrix)w, h), *my = attn_matrix(y, (AttnMatrix)w, h);
				if (!same_mat(mx, my))
					fail_msg("%s: layer %d, %s of head %d differs from a fresh computation", what, x->layer,
					         matrix_name((AttnMatrix)w), h);
			}
	}
}

/*
 * What holds the given matrices an edit can reach: holder 0 is the lesson,
 * 1 + i its layer i, then (an encoder–decoder) its encoder and the encoder's layers.
 */
static int holders(const Lesson *l)
{
	return 1 + l->nlayers + (l->encoder != NULL ? 1 + l->encoder->nlayers : 0);
}

static Mat *holder_matrix(Lesson *l, int hd, AttnMatrix w)
{
	if (hd == 0)
		return lesson_matrix(l, w);
	if (hd <= l->nlayers)
		return lesson_model_given(&l->model, hd - 1, w);
	hd -= 1 + l->nlayers;
	return lesson_model_given(l->encoder, hd - 1, w);
}

/* Holder hd's matrix w, when the lesson gives it. */
static Mat *given(Lesson *l, int hd, AttnMatrix w)
{
	Mat *m = holder_matrix(l, hd, w);
	return m != NULL && !mat_empty(m) ? m : NULL;
}

/* "PATH: W_q of layer 1, cell 3", for a failure. */
static void describe(char *what, size_t size, const char *path, const Lesson *l, int hd, AttnMatrix w, size_t cell)
{
	char where[64];

	if (hd == 0)
		snprintf(where, sizeof where, "the lesson");
	else if (hd <= l->nlayers)
		snprintf(where, sizeof where, "layer %d", hd - 1);
	else if (hd == 1 + l->nlayers)
		snprintf(where, sizeof where, "the encoder");
	else
		snprintf(where, sizeof where, "encoder layer %d", hd - 2 - l->nlayers);
	snprintf(what, size, "%s: %s of %s, cell %zu", path, matrix_name(w), where, cell);
}

/* An edit of one cell, as `set` makes it (SessionEdit): the compare variant, of other shapes, may refuse it. */
typedef struct CellEdit {
	int holder;
	AttnMatrix w;
	int row, col;
	double value;
} CellEdit;

static int edit_cell(Lesson *l, void *arg, char **err)
{
	const CellEdit *e = arg;
	Mat *m = e->holder < holders(l) ? given(l, e->holder, e->w) : NULL;

	if (m == NULL || e->row >= m->rows || e->col >= m->cols) {
		*err = strdup("outside");
		return -1;
	}
	MAT_AT(*m, e->row, e->col) = e->value;
	return 0;
}

/*
 * An encoder–decoder: for each given matrix of the decoder and of the
 * encoder, one cell changed. attn_update declines it (1) and leaves the
 * computation as it was; the session's values edit then computes the edited
 * lesson afresh: the same bits as computing it here, encoder and compare
 * variant included.
 */
static void check_encdec(const char *path)
{
	Session s;
	char *err = NULL;
	int edits = 0;

	assert_int_equal(session_init(&s, load_file(path), path, &err), 0);
	for (int hd = 0; hd < holders(s.lesson); hd++)
		for (int w = 0; w < AM_COUNT; w++) {
			CellEdit e = { hd, (AttnMatrix)w, 0, 0, 0.0 };
			Attn *fresh, *before = NULL;
			Lesson *copy;
			const Mat *m, *v = NULL;
			char what[400];
			unsigned long version;
			int rows, cols;

			if ((matrix_kinds[w].flags & MF_GIVEN) == 0 || (m = given(s.lesson, hd, (AttnMatrix)w)) == NULL)
				continue;
			/* a cell the compare variant has too (encdec.json's gives the decoder fewer tokens) */
			rows = m->rows;
			cols = m->cols;
			if (s.lesson->compare != NULL && hd < holders(s.lesson->compare) &&
			    (v = given(s.lesson->compare, hd, (AttnMatrix)w)) != NULL) {
				rows = v->rows < rows ? v->rows : rows;
				cols = v->cols < cols ? v->cols : cols;
			}
			e.row = (int)(((size_t)edits * 7919u) % (size_t)rows);
			e.col = (int)(((size_t)edits * 104729u) % (size_t)cols);
			e.value = MAT_AT(*m, e.row, e.col) * 0.5 + 0.25;
			describe(what, sizeof what, path, s.lesson, hd, (AttnMatrix)w, (size_t)e.row * (size_t)m->cols + (size_t)e.col);
			copy = lesson_clone(s.lesson);
			assert_non_null(copy);
			assert_int_equal(edit_cell(copy, &e, &err), 0);
			version = s.model->version;
			assert_int_equal(attn_update(s.model, copy, &before, 1e12, &err), 1);
			assert_null(err);
			assert_null(before);
			assert_true(s.model->version == version && s.model->top == s.lesson);
			fresh = compute_all(s.lesson);
			assert_same_computation(s.model, fresh, what);
			attn_free(fresh);
			lesson_free(copy);

			edits++;
		}
	/*
	 * The session's values edit (session_set_cell) on each layer of the walk,
	 * the encoder's first: an encoder–decoder's is computed afresh, and gives
	 * the same bits as computing the edited lesson here, variant included.
	 */
	int sets = 0;
	for (int k = 0; k < session_layers(&s); k++) {
		assert_int_equal(session_set_layer(&s, k, &err), 0);
		for (int w = 0; w < AM_COUNT; w++) {
			char what[512];
			if (!matrix_editable((AttnMatrix)w))
				continue;
			if (session_set_cell(&s, (AttnMatrix)w, 0, 0, 0.375, &err) != 0) { /* not given at this layer */
				free(err);
				err = NULL;
				continue;
			}
			snprintf(what, sizeof what, "%s: set %s 0 0 at walk layer %d", path, matrix_name((AttnMatrix)w), k);
			Attn *fresh = compute_all(s.lesson);
			assert_same_computation(s.model, fresh, what);
			attn_free(fresh);
			if (s.lesson->compare != NULL) {
				fresh = compute_all(s.lesson->compare);
				assert_same_computation(s.compare_model, fresh, what);
				attn_free(fresh);
			}
			sets++;
		}
	}
	assert_true(sets > 0);
	assert_true(edits > 0);
	session_free(&s);
}

/*
 * For each given matrix of each layer: change one cell of a copy, update the
 * computation in place, and compare it with the copy computed afresh; the
 * copies kept of what was remade are the numbers before the edit.
 */
static void check_lesson(const char *path)
{
	Lesson *cur = load_file(path);
	Attn *a;
	if (cur->encoder != NULL) {
		lesson_free(cur);
		check_encdec(path);
		return;
	}
	a = compute_all(cur);
	int edits = 0;

	for (int hd = 0; hd < holders(cur); hd++)
		for (int w = 0; w < AM_COUNT; w++) {
			Lesson *copy;
			Mat *m;
			Attn *fresh, *before = NULL, *old;
			char *err = NULL, what[400];
			size_t cell;
			if ((matrix_kinds[w].flags & MF_GIVEN) == 0 || given(cur, hd, (AttnMatrix)w) == NULL)
				continue;
			copy = lesson_clone(cur);
			assert_non_null(copy);
			m = given(copy, hd, (AttnMatrix)w);
			cell = ((size_t)edits * 7919u) % ((size_t)m->rows * (size_t)m->cols);
			m->a[cell] = m->a[cell] * 0.5 + 0.25;
			describe(what, sizeof what, path, cur, hd, (AttnMatrix)w, cell);
			old = compute_all(cur);
			const unsigned long version = a->version;
			/* the gradients left for their first reader */
			assert_int_equal(attn_update(a, copy, &before, 1e12, &err), 0);
			assert_null(err);
			if (a->grad != NULL) {
				const Attn *last = a;
				char *e = NULL;
				while (last->next != NULL)
					last = last->next;
				/* left, and the loss already the edited lesson's (assert_same_computation compares it) */
				assert_int_equal(a->grad_stale, 1);
				/* the last layer's first gradient read makes every layer's */
				for (int x = 0; x < AM_COUNT && a->grad_stale; x++)
					if (matrix_kinds[x].flags & MF_GRAD)
						(void)attn_matrix(last, (AttnMatrix)x, 0);
				assert_int_equal(a->grad_stale, 0);
				assert_int_equal(attn_grads_ready(last, &e), 0);
				assert_null(e);
			}
			/* what views keep about its numbers is kept under its version: a new one, and no other computation's */
			assert_true(a->version != version && a->version != old->version);
			fresh = compute_all(copy);
			assert_same_computation(a, fresh, what);
			/* what was kept is what was there before the edit */
			assert_non_null(before);
			for (const Attn *k = before, *o = old; k != NULL; k = k->next, o = o->next)
				for (int x = 0; x < AM_COUNT; x++)
					for (int h = 0; h < k->heads; h++)
						if ((matrix_kinds[x].flags & (MF_GIVEN | MF_GRAD)) == 0 && attn_matrix(k, (AttnMatrix)x, h) &&
						    !same_mat(attn_matrix(k, (AttnMatrix)x, h), attn_matrix(o, (AttnMatrix)x, h)))
							fail_msg("%s: layer %d, the copy of %s of head %d kept is not the one before the edit", what,
							         k->layer, matrix_name((AttnMatrix)x), h);
			attn_free(before);
			attn_free(old);
			attn_free(fresh);
			lesson_free(cur);
			cur = copy;
			edits++;
		}
	assert_true(edits > 0);
	attn_free(a);
	lesson_free(cur);
}

/* Every lesson of a folder (not the .ref.json references beside them); returns how many. */
static int check_folder(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		const size_t len = strlen(e->d_name);
		char path[300];
		if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0 ||
		    (len > 9 && strcmp(e->d_name + len - 9, ".ref.json") == 0))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		Lesson *probe = lesson_load(path, NULL, NULL);
		const int on_model = lesson_needs_model(probe); /* a lesson on a real model: t_lessonmodel.sh's */
		lesson_free(probe);
		if (on_model)
			continue;
		check_lesson(path);
		n++;
	}
	closedir(d);
	return n;
}

static void test_every_lesson_every_edit(void **state)
{
	(void)state;
	assert_true(check_folder("lessons") >= 20);
	/* RoPE, shared key/value heads, ALiBi, windows, decoding and tiles: their passes follow an edit too */
	assert_true(check_folder("tests/golden/v3") >= 30);
	/* the backward pass's lessons (stacks, blocks, cross-attention, an encoder–decoder, experts): each edit's
	 * gradients left for their first reader, then the same bits as a fresh computation's */
	assert_true(check_folder("tests/golden/v2") >= 20);
	assert_true(check_folder("tests/golden/moeback") >= 5);
}

/*
 * Decoding follows an edit by what it reaches (decode.c: decode_redo, the values on, the output on, or the
 * rest of the block), beside every variant a step reads: a gate and its bias, QK-norm, RoPE's scalings, sinks
 * and soft caps, local and global layers, experts, Gemma's sandwich norms.
 */
static void test_decoding_every_edit(void **state)
{
	static const char *const dirs[] = { "gatebias", "gated", "gated_decode", "gemma", "l2qknorm", "layerrope",
		                            "localglobal", "moe2", "ropescale", "softcap" };
	(void)state;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		char dir[64];
		snprintf(dir, sizeof dir, "tests/golden/%s", dirs[i]);
		assert_true(check_folder(dir) >= 2);
	}
}

/*
 * A pass with rules names every matrix it writes in one of them: attn_update copies what a rule names before
 * the pass remakes it (the flash of what changed, and the way back from a refused edit), and a matrix left out
 * was copied later, by a pass without rules, already remade (a mixture's shared_gate, found by decoding).
 */
static void test_rules_name_every_matrix_written(void **state)
{
	(void)state;
	for (int st = 0; st < STAGE_COUNT; st++) {
		const StageRule *rules = attn_stage_rules((Stage)st);
		if (attn_stage_kernel((Stage)st) == NULL || rules[0].from == NULL)
			continue;
		for (int w = 0; w < AM_COUNT; w++) {
			int named = 0;
			/* made from the settings alone, the same numbers whenever the pass runs: a positional table, MLA's cache sizes */
			if (w == AM_PE || w == AM_PE_SRC || w == AM_KV_CACHE)
				continue;
			if (matrix_kinds[w].made_by != (Stage)st || (matrix_kinds[w].flags & (MF_GIVEN | MF_GRAD)))
				continue;
			for (int r = 0; r < ATTN_STAGE_RULES && rules[r].from != NULL; r++)
				named |= rules[r].out == (AttnMatrix)w;
			if (!named)
				fail_msg("stage %d writes %s, which none of its rules names", st, matrix_name((AttnMatrix)w));
		}
	}
}

/*
 * An edit of one input cell far down a causal lesson: the passes from the scores on keep the rows before
 * it, the scores' but for the edited key's column (attention.c: rows_kept_before); decoding past its first
 * chunk of 64 steps starts at that row's chunk and projects only that row (decode.c); an edit of W_o or W_v
 * remakes only what it reaches. Each the same bits as a fresh computation. A plain layer, a two-layer
 * pre-norm block with RoPE, shared key/value heads and a window (the second's input the first's decoded
 * rows), and additive scores.
 */
static void test_edit_of_late_rows(void **state)
{
	static const char *const lessons[] = {
		"{\"attnviz\": 2, \"X\": {\"random\": \"normal\", \"rows\": 150, \"cols\": 8, \"seed\": 1}, \"heads\": 2,"
		" \"mask\": \"causal\", \"decode\": true,"
		" \"W_q\": {\"random\": \"normal\", \"rows\": 8, \"cols\": 8, \"seed\": 2, \"std\": 0.3},"
		" \"W_k\": {\"random\": \"normal\", \"rows\": 8, \"cols\": 8, \"seed\": 3, \"std\": 0.3},"
		" \"W_v\": {\"random\": \"normal\", \"rows\": 8, \"cols\": 8, \"seed\": 4, \"std\": 0.3},"
		" \"W_o\": {\"random\": \"normal\", \"rows\": 8, \"cols\": 8, \"seed\": 5, \"std\": 0.3}}",
		"{\"attnviz\": 2, \"X\": {\"random\": \"normal\", \"rows\": 140, \"cols\": 8, \"seed\": 1}, \"heads\": 4,"
		" \"kv_heads\": 2, \"rope\": true, \"mask\": {\"window\": 40}, \"decode\": true,"
		" \"W_q\": {\"random\": \"normal\", \"rows\": 8, \"cols\": 8, \"seed\": 2, \"std\": 0.3},"
		" \"W_k\": {\"random\": \"normal\", \"rows\": 8, \"cols\": 4, \"seed\": 3, \"std\": 0.3},"
		" \"W_v\": {\"random\": \"normal\", \"rows\": 8, \"cols\": 4, \"seed\": 4, \"std\": 0.3},"
		" \"W_o\": {\"random\": \"normal\", \"rows\": 8, \"cols\": 8, \"seed\": 5, \"std\": 0.3},"
		" \"block\": {\"norm\": \"pre\", \"norm_kind\": \"rmsnorm\", \"ffn\": {"
		" \"W_1\": {\"random\": \"normal\", \"rows\": 8, \"cols\": 16, \"seed\": 6, \"std\": 0.3},"
		" \"W_2\": {\"random\": \"normal\", \"rows\": 16, \"cols\": 8, \"seed\": 7, \"std\": 0.3}}},"
		" \"layers\": [{}, {}]}",
		"{\"attnviz\": 2, \"X\": {\"random\": \"normal\", \"rows\": 90, \"cols\": 6, \"seed\": 1}, \"heads\": 2,"
		" \"mask\": \"causal\", \"score\": \"additive\", \"w_e\": [0.5, -0.25, 1, 0.75, -1, 0.125],"
		" \"W_q\": {\"random\": \"normal\", \"rows\": 6, \"cols\": 6, \"seed\": 2, \"std\": 0.3},"
		" \"W_k\": {\"random\": \"normal\", \"rows\": 6, \"cols\": 6, \"seed\": 3, \"std\": 0.3},"
		" \"W_v\": {\"random\": \"normal\", \"rows\": 6, \"cols\": 6, \"seed\": 4, \"std\": 0.3},"
		" \"W_o\": {\"random\": \"normal\", \"rows\": 6, \"cols\": 6, \"seed\": 5, \"std\": 0.3}}",
	};
	static const struct {
		AttnMatrix w;
		int row, col;
	} edits[] = { { AM_INPUT, 80, 3 }, { AM_INPUT, 64, 0 }, { AM_INPUT, 89, 5 }, { AM_INPUT, 5, 1 },
		      { AM_W_O, 2, 5 }, { AM_W_V, 1, 3 }, { AM_W_Q, 0, 0 } };

	(void)state;
	for (size_t i = 0; i < sizeof lessons / sizeof lessons[0]; i++) {
		Lesson *cur = load(lessons[i]);
		Attn *a = compute_all(cur);
		for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
			Lesson *copy = lesson_clone(cur);
			Mat *m;
			Attn *fresh;
			char *err = NULL, what[160];
			assert_non_null(copy);
			m = lesson_matrix(copy, edits[e].w);
			assert_non_null(m);
			MAT_AT(*m, edits[e].row, edits[e].col) += 0.75;
			snprintf(what, sizeof what, "lesson %zu, %s[%d][%d]", i, matrix_name(edits[e].w), edits[e].row, edits[e].col);
			assert_int_equal(attn_update(a, copy, NULL, 0, &err), 0);
			assert_null(err);
			assert_true(a->stage_ms[STAGE_DECODE] > 0 || !attn_config(a)->decode); /* it ran, not skipped */
			fresh = compute_all(copy);
			assert_same_computation(a, fresh, what);
			attn_free(fresh);
			lesson_free(cur);
			cur = copy;
		}
		attn_free(a);
		lesson_free(cur);
	}
}

/* Set cell (0, 0) of a given matrix of the top lesson to value, then update a in place. */
static Lesson *edited(const Lesson *l, AttnMatrix w, double value)
{
	Lesson *copy = lesson_clone(l);
	assert_non_null(copy);
	lesson_matrix(copy, w)->a[0] = value;
	return copy;
}

/* Only the passes an edit reaches run again. */
static void test_only_what_depends(void **state)
{
	Lesson *l = load_file("lessons/multihead.json"), *c;
	Attn *a = compute_all(l);
	char *err = NULL;
	static const struct {
		AttnMatrix w;
		Stage first, skipped;
	} cases[] = {
		{ AM_W_O, STAGE_OUTPUT, STAGE_CONCAT },
		{ AM_W_V, STAGE_PROJECT, STAGE_SOFTMAX },
		{ AM_W_Q, STAGE_PROJECT, STAGE_INPUT },
		{ AM_W_K, STAGE_PROJECT, STAGE_POSITIONAL },
		{ AM_INPUT, STAGE_INPUT, STAGE_COUNT },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		c = edited(l, cases[i].w, 0.75 + (double)i);
		assert_int_equal(attn_update(a, c, NULL, 0, &err), 0);
		assert_true(a->stage_ms[cases[i].first] > 0.0);
		if (cases[i].skipped != STAGE_COUNT)
			assert_true(a->stage_ms[cases[i].skipped] == 0.0);
		for (int st = 0; st < (int)cases[i].first; st++)
			assert_true(a->stage_ms[st] == 0.0);
		assert_true(a->stage_ms[STAGE_OUTPUT] > 0.0);
		lesson_free(l);
		l = c;
	}
	/* an edit that changes a setting is not an update */
	c = lesson_clone(l);
	c->cfg.mask = c->cfg.mask == MASK_NONE ? MASK_CAUSAL : MASK_NONE;
	assert_int_equal(attn_update(a, c, NULL, 0, &err), 1);
	assert_true(a->top == l);
	assert_true(attn_config(a)->mask == l->cfg.mask);
	lesson_free(c);
	attn_free(a);
	lesson_free(l);
}

/* An edit that overflows is refused, and updating back restores the computation bit for bit. */
static void test_overflow_then_back(void **state)
{
	Lesson *l = load_file("lessons/selfattn.json"), *c = edited(l, AM_W_Q, 1e200);
	Attn *a = compute_all(l), *fresh;
	char *err = NULL;

	(void)state;
	lesson_matrix(c, AM_INPUT)->a[0] = 1e200;
	assert_int_equal(attn_update(a, c, NULL, 0, &err), -1);
	assert_non_null(err);
	assert_non_null(strstr(err, "too large"));
	free(err);
	err = NULL;
	assert_int_equal(attn_update(a, l, NULL, 0, &err), 0);
	fresh = compute_all(l);
	assert_same_computation(a, fresh, "back after an overflow");
	attn_free(fresh);
	attn_free(a);
	lesson_free(c);
	lesson_free(l);
}

/* The session's `set` path (session_set_cell): the same as an edit computed afresh, the flash's copies in prev. */
static int set_wv(Lesson *l, void *arg, char **err)
{
	(void)err;
	MAT_AT(lesson_layer_params(l, 0)->W_v, 0, 1) = *(double *)arg;
	return 0;
}

static void test_session_values(void **state)
{
	const char *files[] = { "lessons/block.json", "lessons/gradient.json", "lessons/prefix.json" };

	(void)state;
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		Session s, t;
		char *err = NULL;
		double v = -0.375;
		assert_int_equal(session_init(&s, load_file(files[i]), files[i], &err), 0);
		assert_int_equal(session_init(&t, load_file(files[i]), files[i], &err), 0);
		assert_int_equal(session_set_cell(&s, AM_W_V, 0, 1, v, &err), 0);
		assert_int_equal(session_edit(&t, set_wv, &v, &err), 0);
		assert_same_computation(s.model, t.model, files[i]);
		if (t.compare_model != NULL)
			assert_same_computation(s.compare_model, t.compare_model, files[i]);
		assert_non_null(s.prev_attn);
		assert_true(same_mat(attn_matrix(s.prev_attn, AM_V, 0), attn_matrix(t.prev_attn, AM_V, 0)));
		assert_null(attn_matrix(s.prev_attn, AM_SCORES, 0)); /* not remade, not kept */
		session_free(&s);
		session_free(&t);
	}
}

/*
 * A session's edits: `set` leaves the gradients for their first reader, the loss is the edited
 * lesson's at once, and a cell's explanation, the dump and session_idle's making of them (the view's
 * once its screen is out, the plain REPL's at its prompt) give what gradients made right after the
 * edit give.
 */
static void set_then_idle(Session *t, double v)
{
	char *err = NULL;

	assert_int_equal(session_set_cell(t, AM_W_V, 0, 1, v, &err), 0);
	session_idle(t);
	assert_int_equal(t->model->grad_stale, 0);
}

static void test_edit_gradients_on_read(void **state)
{
	const char *files[] = { "lessons/gradient.json", "tests/golden/v2/block_three_mixed.json",
		                "tests/golden/v2/encdec_pre_gelu.json" };

	(void)state;
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		Session s, t;
		char *err = NULL, *ex, *et, *ds, *dt;
		double v = -0.375;
		cJSON *js, *jt;
		assert_int_equal(session_init(&s, load_file(files[i]), files[i], &err), 0);
		assert_int_equal(session_init(&t, load_file(files[i]), files[i], &err), 0);
		assert_int_equal(session_set_cell(&s, AM_W_V, 0, 1, v, &err), 0);
		set_then_idle(&t, v);
		assert_true(memcmp(&s.model->loss, &t.model->loss, sizeof s.model->loss) == 0);
		/* an encoder–decoder is computed afresh (attn_update declines it): nothing is left for later */
		assert_int_equal(s.model->grad_stale, s.lesson->encoder == NULL);
		ex = explain_cell(s.model, AM_D_W_V, 0, 0, 1, 1, &err);
		et = explain_cell(t.model, AM_D_W_V, 0, 0, 1, 1, &err);
		assert_non_null(ex), assert_non_null(et);
		assert_string_equal(ex, et);
		assert_int_equal(s.model->grad_stale, 0);
		free(ex), free(et);
		/* again, then the dump (its first reader) and session_idle (the view's) */
		assert_int_equal(session_set_cell(&s, AM_W_V, 0, 1, v / 2, &err), 0);
		set_then_idle(&t, v / 2);
		js = dump_attn(s.model, &err), jt = dump_attn(t.model, &err);
		assert_non_null(js), assert_non_null(jt);
		ds = cJSON_PrintUnformatted(js), dt = cJSON_PrintUnformatted(jt);
		assert_string_equal(ds, dt);
		free(ds), free(dt), cJSON_Delete(js), cJSON_Delete(jt);
		assert_int_equal(session_set_cell(&s, AM_W_V, 0, 1, v / 4, &err), 0);
		set_then_idle(&t, v / 4);
		session_idle(&s);
		assert_int_equal(s.model->grad_stale, 0);
		assert_same_computation(s.model, t.model, files[i]);
		session_free(&s);
		session_free(&t);
	}
	/* after a load too (a fresh session replaced the view's, which once lost its setting) */
	{
		Session s;
		char *err = NULL, *warn = NULL;
		assert_int_equal(session_init(&s, load_file("lessons/selfattn.json"), "lessons/selfattn.json", &err), 0);
		assert_int_equal(session_load(&s, "lessons/gradient.json", &err, &warn), 0);
		free(warn);
		assert_int_equal(session_set_cell(&s, AM_W_V, 0, 1, 0.5, &err), 0);
		assert_int_equal(s.model->grad_stale, 1);
		session_free(&s);
	}
}

/* Every given matrix of two lessons (their layers too) holds the same bits. */
static void assert_same_lesson(Lesson *x, Lesson *y, const char *what)
{
	assert_int_equal(x->nlayers, y->nlayers);
	for (int hd = 0; hd < (x->nlayers > 0 ? 1 + x->nlayers : 1); hd++)
		for (int w = 0; w < AM_COUNT; w++)
			if ((matrix_kinds[w].flags & MF_GIVEN) && !same_mat(given(x, hd, (AttnMatrix)w), given(y, hd, (AttnMatrix)w)))
				fail_msg("%s: %s of %s %d differs", what, matrix_name((AttnMatrix)w), hd == 0 ? "the lesson" : "layer", hd - 1);
}

/* Where every given matrix of a lesson (and its layers) keeps its numbers: [holder][matrix]. */
typedef struct Where {
	const double *a[1 + 8][AM_COUNT];
} Where;

static void where_of(Lesson *l, Where *p)
{
	memset(p, 0, sizeof *p);
	for (int hd = 0; hd < (l->nlayers > 0 ? 1 + l->nlayers : 1) && hd < 9; hd++)
		for (int w = 0; w < AM_COUNT; w++)
			if (matrix_kinds[w].flags & MF_GIVEN)
				p->a[hd][w] = given(l, hd, (AttnMatrix)w) ? given(l, hd, (AttnMatrix)w)->a : NULL;
}

/*
 * A one-cell edit (session_set_cell) copies the one matrix it changes and
 * nothing else of the lesson: the lesson, its steps, its tokens and every
 * other matrix (of every layer) stay where they were; the computation is
 * what the edited lesson computed afresh gives; the flash's copies read the
 * old numbers.
 */
static void test_one_cell_copies_one_matrix(void **state)
{
	const char *files[] = { "lessons/selfattn.json", "lessons/gqa.json", "lessons/prefix.json", "lessons/gradient.json" };

	(void)state;
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		Session s;
		Where was, now;
		char *err = NULL;
		assert_int_equal(session_init(&s, load_file(files[i]), files[i], &err), 0);
		const int hd = s.lesson->nlayers > 0 ? 1 : 0; /* a lesson with layers: layer 0's own W_q */
		Lesson *const l = s.lesson;
		const Step *steps = l->steps;
		char **tokens = l->cfg.tokens;
		const double old = given(l, hd, AM_W_Q)->a[1];
		where_of(l, &was);
		assert_int_equal(session_set_cell(&s, AM_W_Q, 0, 1, old + 0.5, &err), 0);
		assert_null(err);
		assert_ptr_equal(s.lesson, l);
		assert_ptr_equal(s.lesson->steps, steps);
		assert_ptr_equal(s.lesson->cfg.tokens, tokens);
		assert_null(s.prev_lesson); /* no copy of the lesson kept */
		where_of(l, &now);
		for (int h = 0; h < 9; h++)
			for (int w = 0; w < AM_COUNT; w++)
				/* a stack's top level (holder 0) holds layer 0's parameters, the same matrices: model.h */
				if (!((h == hd || (h == 0 && hd == 1)) && w == AM_W_Q) && now.a[h][w] != was.a[h][w])
					fail_msg("%s: %s of holder %d was copied", files[i], matrix_name((AttnMatrix)w), h);
		assert_true(now.a[hd][AM_W_Q] != was.a[hd][AM_W_Q]);
		assert_true(given(l, hd, AM_W_Q)->a[1] == old + 0.5);
		/* the same bits as the edited lesson computed afresh, the variant's too */
		Lesson *copy = lesson_clone(l);
		Attn *fresh = compute_all(copy), *cfresh = copy->compare ? compute_all(copy->compare) : NULL;
		assert_same_computation(s.model, fresh, files[i]);
		if (cfresh != NULL)
			assert_same_computation(s.compare_model, cfresh, files[i]);
		/* the flash reads the numbers before: W_q's old cell, Q as it was */
		assert_non_null(s.prev_attn);
		assert_true(attn_matrix(s.prev_attn, AM_W_Q, 0)->a[1] == old);
		assert_non_null(attn_matrix(s.prev_attn, AM_Q, 0));
		attn_free(fresh);
		attn_free(cfresh);
		lesson_free(copy);
		session_free(&s);
	}
}

/*
 * Ctrl-C during an edit (issue 27 §5): the progress function (told before
 * each pass) plays the signal handler once, at the first pass of the edit
 * when armed; the update stops before its next pass and the edit is refused.
 */
static int stop_next_edit, stop_armed;

static void stop_on_pass(void *ctx, const Attn *a, Stage st, int index, int count, double elapsed_ms)
{
	(void)ctx, (void)a, (void)st, (void)index, (void)count, (void)elapsed_ms;
	if (stop_armed) {
		stop_armed = 0;
		assert_int_equal(ttyguard_note_stop(SIGINT), 1); /* the edit's update is work that may be stopped */
	}
}

/* A refused edit leaves the lesson (where its matrices are, and their bits) and the computation as they were. */
static void assert_refused_unchanged(const char *name, const char *json, AttnMatrix w, int row, int col, double value,
                                     const char *needle)
{
	Session s;
	Where was, now;
	char *err = NULL, *warn = NULL;
	Lesson *l = lesson_load_string(name, json, strlen(json), &err, &warn);

	if (l == NULL)
		fail_msg("%s: %s", name, err);
	free(warn);
	assert_int_equal(session_init(&s, l, NULL, &err), 0);
	Lesson *before = lesson_clone(l);
	Attn *model = s.model, *variant = s.compare_model;
	where_of(l, &was);
	stop_armed = stop_next_edit; /* a Ctrl-C that comes while the edit's first pass runs */
	assert_int_equal(session_set_cell(&s, w, row, col, value, &err), -1);
	stop_armed = 0;
	assert_non_null(err);
	if (strstr(err, needle) == NULL)
		fail_msg("%s: expected \"%s\" in: %s", name, needle, err);
	free(err);
	/* the lesson: the same matrices, where they were, with their bits */
	assert_ptr_equal(s.lesson, l);
	where_of(l, &now);
	assert_memory_equal(&was, &now, sizeof was);
	assert_same_lesson(l, before, name);
	if (l->compare != NULL)
		assert_same_lesson(l->compare, before->compare, name);
	/* the computation: the same one, bit for bit what the lesson computed afresh gives */
	assert_ptr_equal(s.model, model);
	assert_ptr_equal(s.compare_model, variant);
	Attn *fresh = compute_all(before), *cfresh = before->compare ? compute_all(before->compare) : NULL;
	assert_same_computation(s.model, fresh, name);
	if (cfresh != NULL)
		assert_same_computation(s.compare_model, cfresh, name);
	assert_null(s.prev_attn);
	/* and it still takes an edit */
	assert_int_equal(session_set_cell(&s, w, row, col, 0.25, &err), 0);
	attn_free(fresh);
	attn_free(cfresh);
	lesson_free(before);
	session_free(&s);
}

/* An edit stopped by Ctrl-C between its passes is refused and leaves everything as it was, layers, gradients and all. */
static void test_stopped_edit_changes_nothing(void **state)
{
	static const struct {
		const char *name, *json;
		AttnMatrix w;
	} cases[] = {
		{ "stop.json", "{\"attnviz\": 2, \"tokens\": [\"a\", \"b\", \"c\"], \"X\": [[1, 0], [0, 1], [1, 1]],"
		               " \"W_q\": [[1, 2], [3, 4]], \"W_k\": [[1, 0], [0, 1]], \"W_v\": [[1, 0], [0, 1]], \"mask\": \"causal\"}",
		  AM_W_Q },
		{ "stop-layers.json", "{\"attnviz\": 2, \"tokens\": [\"a\", \"b\", \"c\"], \"X\": [[1, 0], [0, 1], [1, 1]],"
		               " \"W_q\": [[1, 2], [3, 4]], \"W_k\": [[1, 0], [0, 1]], \"W_v\": [[1, 0], [0, 1]], \"mask\": \"causal\","
		               " \"layers\": [{\"W_q\": [[1, 0], [0, 1]]}, {\"W_q\": [[0.5, 0], [0, 1]]}],"
		               " \"backward\": {\"dOutput\": [[1, 0], [0, 1], [1, 1]]}}",
		  AM_W_Q },
		{ "stop-compare.json", "{\"attnviz\": 2, \"tokens\": [\"a\", \"b\", \"c\"], \"X\": [[1, 0], [0, 1], [1, 1]],"
		               " \"W_q\": [[1, 2], [3, 4]], \"W_k\": [[1, 0], [0, 1]], \"W_v\": [[1, 0], [0, 1]],"
		               " \"compare\": {\"label\": \"causal\", \"mask\": \"causal\"}}",
		  AM_W_Q },
	};

	(void)state;
	attn_set_progress(stop_on_pass, NULL);
	stop_next_edit = 1;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_refused_unchanged(cases[i].name, cases[i].json, cases[i].w, 0, 0, 7.5, "stopped (Ctrl-C)");
	stop_next_edit = 0;
	attn_set_progress(NULL, NULL);
}

static void test_refused_edit_changes_nothing(void **state)
{
/* a lesson of three tokens; its variant's first token so large that Q grown 1e10 times makes the scores overflow */
#define TINY(version) "{\"attnviz\": " version ", \"tokens\": [\"a\", \"b\", \"c\"], \"X\": [[1, 0], [0, 1], [1, 1]]," \
	" \"W_q\": [[1, 2], [3, 4]], \"W_k\": [[1, 0], [0, 1]], \"W_v\": [[1, 0], [0, 1]], \"mask\": \"causal\""
#define LAYERS ", \"layers\": [{\"W_q\": [[1, 0], [0, 1]]}, {\"W_q\": [[0.5, 0], [0, 1]]}]"
#define GRADIENTS ", \"backward\": {\"dOutput\": [[1, 0], [0, 1], [1, 1]]}"
#define BIG_VARIANT ", \"compare\": {\"label\": \"big\", \"X\": [[1e150, 0], [0, 1], [1, 1]]}}"
	static const struct {
		const char *name, *json;
		AttnMatrix w;
		double value;
		const char *says;
	} cases[] = {
		/* the lesson's own numbers overflow: its update goes back */
		{ "overflow.json", TINY("1") "}", AM_INPUT, 1e308, "too large" },
		{ "layers-overflow.json", TINY("2") LAYERS "}", AM_INPUT, 1e308, "too large" },
		/* the lesson takes it, its variant's numbers overflow: the lesson's computation is put back from what was kept */
		{ "variant.json", TINY("1") BIG_VARIANT, AM_W_Q, 1e10, "compare" },
		/* with gradients, which the update does not keep: worked out again from what was put back */
		{ "gradients.json", TINY("2") GRADIENTS BIG_VARIANT, AM_W_Q, 1e10, "compare" },
		/* with layers, whose links read the matrix and the layer before's output through views */
		{ "layers.json", TINY("2") LAYERS GRADIENTS BIG_VARIANT, AM_W_Q, 1e10, "compare" },
	};
#undef TINY
#undef LAYERS
#undef GRADIENTS
#undef BIG_VARIANT

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_refused_unchanged(cases[i].name, cases[i].json, cases[i].w, 0, 0, cases[i].value, cases[i].says);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_lesson_every_edit),
		cmocka_unit_test(test_only_what_depends),
		cmocka_unit_test(test_overflow_then_back),
		cmocka_unit_test(test_session_values),
		cmocka_unit_test(test_rules_name_every_matrix_written),
		cmocka_unit_test(test_decoding_every_edit),
		cmocka_unit_test(test_edit_of_late_rows),
		cmocka_unit_test(test_edit_gradients_on_read),
		cmocka_unit_test(test_one_cell_copies_one_matrix),
		cmocka_unit_test(test_refused_edit_changes_nothing),
		cmocka_unit_test(test_stopped_edit_changes_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
