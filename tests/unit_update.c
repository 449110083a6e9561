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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "backward.h"
#include "lesson.h"
#include "session.h"
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
		assert_true(memcmp(x->visible, y->visible, (size_t)x->lesson->n * (size_t)x->lesson->m) == 0);
		assert_true(memcmp(x->row_all_masked, y->row_all_masked, (size_t)x->lesson->n) == 0);
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

static Lesson *holder(Lesson *l, int hd)
{
	if (hd == 0)
		return l;
	if (hd <= l->nlayers)
		return lesson_layer(l, hd - 1);
	hd -= 1 + l->nlayers;
	return hd == 0 ? l->encoder : lesson_layer(l->encoder, hd - 1);
}

/* Holder hd's matrix w, when the lesson gives it. */
static Mat *given(Lesson *l, int hd, AttnMatrix w)
{
	Mat *m = lesson_matrix(holder(l, hd), w);
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

			if (s.lesson->compare != NULL && v == NULL) { /* the variant refuses it: so does the session */
				assert_int_equal(session_edit_values(&s, edit_cell, &e, &err), -1);
				assert_non_null(err);
				free(err);
				err = NULL;
				assert_true(s.model->version == version);
				continue;
			}
			assert_int_equal(session_edit_values(&s, edit_cell, &e, &err), 0);
			assert_null(err);
			assert_true(MAT_AT(*given(s.lesson, hd, (AttnMatrix)w), e.row, e.col) == e.value);
			fresh = compute_all(s.lesson);
			assert_same_computation(s.model, fresh, what);
			attn_free(fresh);
			if (s.lesson->compare != NULL) {
				fresh = compute_all(s.lesson->compare);
				assert_same_computation(s.compare_model, fresh, what);
				attn_free(fresh);
			}
			edits++;
		}
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
			assert_int_equal(attn_update(a, copy, &before, 1e12, &err), 0);
			assert_null(err);
			/* what views keep about its numbers is kept under its version: a new one, and no other computation's */
			assert_true(a->version != version && a->version != old->version);
			fresh = compute_all(copy);
			assert_same_computation(a, fresh, what);
			/* what was kept is what was there before the edit */
			assert_non_null(before);
			for (const Attn *k = before, *o = old; k != NULL; k = k->next, o = o->next)
				for (int x = 0; x < AM_COUNT; x++)
					for (int h = 0; h < k->heads; h++)
						if ((matrix_kinds[x].flags & (MF_GIVEN | MF_GRAD)) == 0 && attn_matrix(k, (AttnMatrix)x, h))
							assert_true(same_mat(attn_matrix(k, (AttnMatrix)x, h), attn_matrix(o, (AttnMatrix)x, h)));
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
	c->mask = c->mask == MASK_NONE ? MASK_CAUSAL : MASK_NONE;
	assert_int_equal(attn_update(a, c, NULL, 0, &err), 1);
	assert_true(a->lesson == l);
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

/* The session's `set` path: the same as an edit computed afresh, the flash's copies in prev. */
static int set_wv(Lesson *l, void *arg, char **err)
{
	(void)err;
	MAT_AT(lesson_layer(l, 0)->W_v, 0, 1) = *(double *)arg;
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
		assert_int_equal(session_edit_values(&s, set_wv, &v, &err), 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_lesson_every_edit),
		cmocka_unit_test(test_only_what_depends),
		cmocka_unit_test(test_overflow_then_back),
		cmocka_unit_test(test_session_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
