/* unit_matview.c: base/matview.c, the read-only matrix a real model's head is
 * kept in (issue 21 §3): its rows, cells and whole-matrix doubles are the
 * numbers the bytes hold (each dtype's decoding is tested bit for bit, every
 * F16 and BF16 pattern, through st_value in unit_safetensors.c); its bytes
 * live while a reference does; and a model's head stays in its file's dtype
 * through opening, computing, explaining a logit, generating and a copy of
 * the lesson, until something asks for the whole matrix. */
#include "unit_common.h"

#include <math.h>

#include "base/matview.h"
#include "inspect/explain.h"
#include "weights/importer.h"

/* 2 × 3 BF16: 1, -2, 0.5, 3.25, -0.125, 1024 (the high halves of their floats) */
static const unsigned char bf16[] = { 0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f, 0x50, 0x40, 0x00, 0xbe, 0x80, 0x44 };
static const double want[] = { 1, -2, 0.5, 3.25, -0.125, 1024 };

static void rows_cells_and_doubles_are_the_bytes(void **state)
{
	MatView v;
	double rows[6];
	(void)state;
	assert_int_equal(matview_copy_of(&v, MAT_BF16, 2, 3, bf16), 0);
	assert_false(matview_empty(&v));
	matview_rows(&v, 0, 2, rows);
	assert_memory_equal(rows, want, sizeof want);
	matview_rows(&v, 1, 1, rows);
	assert_memory_equal(rows, &want[3], 3 * sizeof want[0]);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			assert_true(matview_at(&v, i, j) == want[i * 3 + j]);
	const Mat *m = matview_doubles(&v);
	assert_non_null(m);
	assert_int_equal(m->rows, 2);
	assert_int_equal(m->cols, 3);
	assert_memory_equal(m->a, want, sizeof want);
	assert_ptr_equal(matview_doubles(&v), m); /* made once */
	matview_free(&v);
	assert_true(matview_empty(&v));
}

static void a_share_outlives_the_first_reference_and_the_source(void **state)
{
	unsigned char src[sizeof bf16];
	MatView v, w;
	(void)state;
	memcpy(src, bf16, sizeof src);
	assert_int_equal(matview_copy_of(&v, MAT_BF16, 2, 3, src), 0);
	memset(src, 0, sizeof src); /* the view holds its own copy */
	matview_share(&w, &v);
	const Mat *m = matview_doubles(&v);
	matview_free(&v);
	assert_ptr_equal(matview_doubles(&w), m); /* shared by every reference */
	assert_true(matview_at(&w, 1, 2) == 1024);
	matview_free(&w);
	matview_share(&w, &v); /* of an empty view: empty */
	assert_true(matview_empty(&w));
	matview_free(&w);
}

static void each_dtype_reads_its_width(void **state)
{
	/* 1.5 as F64, F32, F16 */
	static const unsigned char f64[] = { 0, 0, 0, 0, 0, 0, 0xf8, 0x3f }, f32[] = { 0, 0, 0xc0, 0x3f }, f16[] = { 0, 0x3e };
	MatView v;
	(void)state;
	assert_int_equal(mat_dtype_size(MAT_F64), 8);
	assert_int_equal(mat_dtype_size(MAT_F32), 4);
	assert_int_equal(mat_dtype_size(MAT_F16), 2);
	assert_int_equal(mat_dtype_size(MAT_BF16), 2);
	assert_int_equal(matview_copy_of(&v, MAT_F64, 1, 1, f64), 0);
	assert_true(matview_at(&v, 0, 0) == 1.5);
	matview_free(&v);
	assert_int_equal(matview_copy_of(&v, MAT_F32, 1, 1, f32), 0);
	assert_true(matview_at(&v, 0, 0) == 1.5);
	matview_free(&v);
	assert_int_equal(matview_copy_of(&v, MAT_F16, 1, 1, f16), 0);
	assert_true(matview_at(&v, 0, 0) == 1.5);
	matview_free(&v);
}

static void a_models_head_is_not_made_doubles_to_compute(void **state)
{
	static const long long ids[] = { 0, 4, 8 };
	const ImportPrompt p = { .ids = ids, .n = 3 };
	char *dir = path_of("tests/models/llama_tied_bf16"), *err = NULL, *text;
	Lesson *l = import_model(dir, &p, &err), *copy;
	(void)state;
	assert_null(err);
	assert_non_null(l);
	const MatView *v = &l->cfg.unembed_view;
	assert_false(matview_empty(v));
	assert_true(mat_empty(&l->cfg.unembed));
	assert_int_equal(v->dtype, MAT_BF16);
	assert_int_equal(v->rows, 320);
	assert_int_equal(v->cols, 24);
	assert_true(matview_at(v, 0, 0) == 0.5); /* tests/models/llama_tied_bf16.ref.json's first number of embed_tokens */
	Attn *a = compute_all(l), *last = a;
	while (last->next != NULL)
		last = last->next;
	text = explain_cell(last, AM_LOGITS, 0, 2, 5, 1, &err);
	assert_non_null(text);
	assert_non_null(strstr(text, "unembed row 5"));
	free(text);
	assert_non_null(copy = lesson_clone(l));
	assert_ptr_equal(copy->cfg.unembed_view.data, v->data); /* shared, not copied */
	/* a view of the whole matrix makes it doubles, once, the file's numbers */
	const Mat *u = attn_matrix(last, AM_UNEMBED, 0);
	assert_non_null(u);
	assert_true(MAT_AT(*u, 319, 23) == matview_at(v, 319, 23));
	attn_free(a);
	lesson_free(l);
	assert_true(matview_at(&copy->cfg.unembed_view, 0, 0) == 0.5); /* the weights stay open for the copy */
	lesson_free(copy);
	free(dir);
}

/*
 * A row's dot products as the sums read it (generate's LM head) are the bits
 * of the rows made doubles first and summed in mat_dot4's order: BF16 and
 * F32 (the vector path where the processor has AVX2), F16 and F64, with
 * widths that leave 0 to 3 numbers past the last four.
 */
static void dot_rows_are_the_bits_of_rows_then_dot4(void **state)
{
	static const MatDtype dtypes[] = { MAT_BF16, MAT_F32, MAT_F16, MAT_F64 };
	unsigned char bytes[7 * 13 * 8];
	double x[13], rows[7 * 13], got[7];
	uint64_t r = 0x9e3779b97f4a7c15u;
	(void)state;
	for (size_t i = 0; i < sizeof bytes; i++) { /* any bytes but NaN's and infinities: exponents kept small */
		r = r * 6364136223846793005u + 1442695040888963407u;
		bytes[i] = (unsigned char)(r >> 56);
	}
	for (int c = 0; c < 13; c++)
		x[c] = (c % 3 - 1) * 0.37 + c * 1e-3;
	for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
		for (int cols = 9; cols <= 13; cols++) {
			const int size = mat_dtype_size(dtypes[d]);
			MatView v;
			for (int k = 0; k < 7 * cols; k++) /* the sign and exponent's high bits: a number near ±1 */
				bytes[(size_t)k * size + size - 1] = (unsigned char)((bytes[(size_t)k * size + size - 1] & 0x80) | 0x3f);
			assert_int_equal(matview_copy_of(&v, dtypes[d], 7, cols, bytes), 0);
			matview_rows(&v, 0, 7, rows);
			assert_int_equal(matview_dot_rows(&v, 2, 5, x, got), 0);
			for (int k = 0; k < 5; k++) {
				const double want_k = mat_dot4(x, &rows[(size_t)(2 + k) * cols], cols);
				assert_true(isfinite(want_k));
				assert_memory_equal(&got[k], &want_k, sizeof want_k);
			}
			matview_free(&v);
		}
}

/*
 * A product read from the file's numbers (a decoding step on a real model's
 * layer weights) is mat_mul's on the transpose made doubles, bit for bit:
 * every dtype, 519 terms (two blocks of 256 and 7 more: 4 and a tail of 3),
 * 45 columns (the 16-wide path twice, the 8-wide once, 5 one at a time);
 * and the transpose made doubles, of any sides and of multiples of 4.
 */
static void file_products_are_the_bits_of_mat_mul(void **state)
{
	static const MatDtype dtypes[] = { MAT_BF16, MAT_F32, MAT_F16, MAT_F64 };
	enum { C = 45, K = 519, R = 3 };
	static unsigned char bytes[C * K * 8];
	static double x[R * K], got[R * C], want_c[R * C];
	uint64_t r = 0x2545f4914f6cdd1du;
	(void)state;
	for (int i = 0; i < R * K; i++)
		x[i] = (i % 7 - 3) * 0.21 + i * 1e-4;
	for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++) {
		const int size = mat_dtype_size(dtypes[d]);
		MatView v;
		Mat w = { 0 };
		for (size_t i = 0; i < (size_t)C * K * (size_t)size; i++) {
			r = r * 6364136223846793005u + 1442695040888963407u;
			bytes[i] = (unsigned char)(r >> 56);
			if (i % (size_t)size == (size_t)size - 1) /* a number near ±1 */
				bytes[i] = (unsigned char)((bytes[i] & 0x80) | 0x3f);
		}
		assert_int_equal(matview_copy_of(&v, dtypes[d], C, K, bytes), 0);
		assert_int_equal(matview_to_mat(&v, 1, &w), 0);
		assert_int_equal(w.rows, K);
		assert_int_equal(w.cols, C);
		assert_true(MAT_AT(w, 300, 40) == matview_at(&v, 40, 300));
		mat_mul_view(R, K, C, x, K, w.a, C, 0, want_c, C, 0);
		assert_int_equal(matview_mul_t(&v, R, x, K, got, C), 0);
		assert_memory_equal(got, want_c, sizeof got);
		mat_free(&w);
		matview_free(&v);
		/* sides of multiples of 4: the transpose in 4 × 4 tiles */
		assert_int_equal(matview_copy_of(&v, dtypes[d], 44, 516, bytes), 0);
		assert_int_equal(matview_to_mat(&v, 1, &w), 0);
		for (int i = 0; i < 44; i++)
			for (int j = 0; j < 516; j++) {
				const double f = matview_at(&v, i, j);
				assert_memory_equal(&MAT_AT(w, j, i), &f, sizeof f);
			}
		mat_free(&w);
		matview_free(&v);
	}
}

/*
 * A real model's layer weights stay in the file: dormant (their shape, no
 * numbers) in the lesson and in a computation once it is made, the file's
 * numbers (transposed: nn.Linear's [out, in]) when a reader asks for them;
 * shared by a copy, made a layer's own doubles by an edit.
 */
static void a_models_layer_weights_stay_in_the_file(void **state)
{
	static const long long ids[] = { 0, 4, 8 };
	const ImportPrompt p = { .ids = ids, .n = 3 };
	char *dir = path_of("tests/models/llama_tied_bf16"), *err = NULL;
	Lesson *l = import_model(dir, &p, &err);
	(void)state;
	assert_null(err);
	assert_non_null(l);
	const LayerParams *lp = lesson_layer_params_const(l, 1);
	assert_int_equal(lp->files, (1u << LP_FILE_COUNT) - 1);
	assert_null(lp->W_q.a);
	assert_int_equal(lp->W_q.rows, 24);
	assert_int_equal(lp->file[LP_FILE_W_Q].dtype, MAT_BF16);
	Attn *a = compute_all(l);
	assert_null(a->next->lp.W_q.a); /* dropped after its computation */
	const Mat *wq = attn_matrix(a->next, AM_W_Q, 0);
	assert_non_null(wq);
	assert_true(MAT_AT(*wq, 5, 2) == matview_at(&lp->file[LP_FILE_W_Q], 2, 5));
	assert_non_null(attn_weights(a->next)->block.W_2.a);
	attn_free(a);
	/* a copy shares the views, its matrices dormant too; an edit's walk makes the layer's its own */
	Lesson *copy = lesson_clone(l);
	assert_non_null(copy);
	const LayerParams *cp = lesson_layer_params_const(copy, 1);
	assert_ptr_equal(cp->file[LP_FILE_W_Q].data, lp->file[LP_FILE_W_Q].data);
	assert_null(cp->W_q.a);
	Mat *w = lesson_walk_matrix(copy, 1, AM_W_Q);
	assert_non_null(w);
	assert_non_null(w->a);
	assert_int_equal(cp->files, 0);
	assert_true(MAT_AT(*w, 5, 2) == matview_at(&lp->file[LP_FILE_W_Q], 2, 5));
	assert_non_null(cp->block.W_1.a);
	lesson_free(copy);
	assert_null(lp->W_q.a); /* the lesson's own still in the file */
	lesson_free(l);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rows_cells_and_doubles_are_the_bytes),
		cmocka_unit_test(a_share_outlives_the_first_reference_and_the_source),
		cmocka_unit_test(each_dtype_reads_its_width),
		cmocka_unit_test(a_models_head_is_not_made_doubles_to_compute),
		cmocka_unit_test(dot_rows_are_the_bits_of_rows_then_dot4),
		cmocka_unit_test(file_products_are_the_bits_of_mat_mul),
		cmocka_unit_test(a_models_layer_weights_stay_in_the_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
