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
	/* the full-screen view's pane: the head's shape, its cells from the file's numbers, nothing made doubles */
	const Mat *shown = attn_matrix_shown(last, AM_UNEMBED, 0);
	assert_non_null(shown);
	assert_null(shown->a);
	assert_int_equal(shown->rows, 320);
	assert_int_equal(shown->cols, 24);
	assert_true(attn_cell(last, AM_UNEMBED, 0, 319, 23) == matview_at(v, 319, 23));
	assert_ptr_equal(attn_matrix_shown(last, AM_LOGITS, 0), attn_matrix(last, AM_LOGITS, 0));
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
		/* Conv1D's [in, out] where it lies: K rows of C numbers, columns 3, 5, … (step 2, 20 of them) and all */
		assert_int_equal(matview_copy_of(&v, dtypes[d], K, C, bytes), 0);
		assert_int_equal(matview_to_mat(&v, 0, &w), 0);
		for (int step = 1; step <= 2; step++) {
			const int first = step == 1 ? 0 : 3, cols = step == 1 ? C : 20;
			Mat part = { 0 };
			assert_int_equal(mat_alloc_whole(&part, K, cols), 0);
			for (int i = 0; i < K; i++)
				for (int j = 0; j < cols; j++)
					MAT_AT(part, i, j) = MAT_AT(w, i, first + j * step);
			mat_mul_view(R, K, cols, x, K, part.a, (size_t)cols, 0, want_c, (size_t)cols, 0);
			assert_int_equal(matview_mul_cols(&v, first, step, cols, R, x, K, got, (size_t)cols), 0);
			assert_memory_equal(got, want_c, (size_t)R * (size_t)cols * sizeof got[0]);
			mat_free(&part);
		}
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
	assert_int_equal(lp->files, (1u << LP_FILE_MOE_W_1) - 1); /* W_q … W_2, no experts */
	assert_null(lp->W_q.a);
	assert_int_equal(lp->W_q.rows, 24);
	assert_int_equal(lp->file[LP_FILE_W_Q].piece[0].v.dtype, MAT_BF16);
	Attn *a = compute_all(l);
	assert_null(a->next->lp.W_q.a); /* dropped after its computation */
	const Mat *wq = attn_matrix(a->next, AM_W_Q, 0);
	assert_non_null(wq);
	assert_true(MAT_AT(*wq, 5, 2) == matview_at(&lp->file[LP_FILE_W_Q].piece[0].v, 2, 5));
	assert_non_null(attn_weights(a->next)->block.W_2.a);
	attn_free(a);
	/* a copy shares the views, its matrices dormant too; an edit's walk makes the layer's its own */
	Lesson *copy = lesson_clone(l);
	assert_non_null(copy);
	const LayerParams *cp = lesson_layer_params_const(copy, 1);
	assert_ptr_equal(cp->file[LP_FILE_W_Q].piece[0].v.data, lp->file[LP_FILE_W_Q].piece[0].v.data);
	assert_null(cp->W_q.a);
	Mat *w = lesson_walk_matrix(copy, 1, AM_W_Q);
	assert_non_null(w);
	assert_non_null(w->a);
	assert_int_equal(cp->files, 0);
	assert_true(MAT_AT(*w, 5, 2) == matview_at(&lp->file[LP_FILE_W_Q].piece[0].v, 2, 5));
	assert_non_null(cp->block.W_1.a);
	lesson_free(copy);
	assert_null(lp->W_q.a); /* the lesson's own still in the file */
	lesson_free(l);
	free(dir);
}

/*
 * The matrix of slot k of lp as doubles equals, cell by cell, the tensor's
 * number it stands for: at(r, c) the file's (the caller's layout).
 */
static void slot_is(const LayerParams *lp, int k, double (*at)(const LayerParams *, int, int, int))
{
	Mat m = { 0 };
	const Mat *shape = layer_params_file_mat((LayerParams *)lp, k);
	assert_true((lp->files >> k & 1) != 0);
	assert_null(shape->a);
	assert_int_equal(layer_params_file_doubles(lp, k, &m), 0);
	assert_int_equal(m.rows, shape->rows);
	assert_int_equal(m.cols, shape->cols);
	for (int r = 0; r < m.rows; r++)
		for (int c = 0; c < m.cols; c++)
			assert_true(MAT_AT(m, r, c) == at(lp, k, r, c));
	mat_free(&m);
}

/* GPT-2's c_attn ([in, 3·D]): W_q, W_k, W_v its thirds, as they lie (the first piece's view is the whole tensor). */
static double gpt2_at(const LayerParams *lp, int k, int r, int c)
{
	const FilePiece *f = lp->file[k].piece;
	return matview_at(&f->v, r, f->first + c);
}

/* nn.Linear's [out, in]: the matrix its transpose. */
static double linear_at(const LayerParams *lp, int k, int r, int c)
{
	return matview_at(&lp->file[k].piece[0].v, c, r);
}

/* Mixtral's and Qwen3-MoE's experts: piece e at rows or columns e·F, transposed. */
static double expert_at(const LayerParams *lp, int k, int r, int c)
{
	const int F = lp->block.d_ff, e = k == LP_FILE_MOE_W_2 ? r / F : c / F;
	const FilePiece *f = &lp->file[k].piece[e];
	return matview_at(&f->v, c - f->col0, r - f->row0);
}

/* gpt-oss: gate_up_proj's expert e, W_1 its even columns and W_3 its odd ones; down_proj W_2 as it lies. */
static double gptoss_at(const LayerParams *lp, int k, int r, int c)
{
	const int F = lp->block.d_ff;
	const FilePiece *f = k == LP_FILE_MOE_W_2 ? lp->file[k].piece : &lp->file[k].piece[c / F];
	return k == LP_FILE_MOE_W_2 ? matview_at(&f->v, r, c) : matview_at(&f->v, r, 2 * (c % F) + (k == LP_FILE_MOE_W_3));
}

/*
 * GPT-2's layers (Conv1D, the fused c_attn) and the mixtures' experts stay in
 * the file too: dormant, each slot's doubles the tensors' numbers where they
 * belong; computing makes and drops them (the numbers against PyTorch are
 * t_models').
 */
static void gpt2_and_experts_stay_in_the_file(void **state)
{
	static const struct {
		const char *dir;
		int layer;
		unsigned files;
		double (*at)(const LayerParams *, int, int, int);
	} models[] = {
		{ "tests/models/gpt2", 1, 1u << LP_FILE_W_Q | 1u << LP_FILE_W_K | 1u << LP_FILE_W_V | 1u << LP_FILE_W_O |
		                              1u << LP_FILE_W_1 | 1u << LP_FILE_W_2, gpt2_at },
		{ "tests/models/mixtral_moe", 0, 15u | LP_FILES_MOE, expert_at },
		{ "tests/models/qwen3_moe_step2", 1, 15u | LP_FILES_MOE, expert_at },
		{ "tests/models/gptoss_clamped", 0, 15u | LP_FILES_MOE, gptoss_at },
	};
	static const long long ids[] = { 1, 4, 8 };
	const ImportPrompt p = { .ids = ids, .n = 3 };
	(void)state;
	for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
		char *dir = path_of(models[m].dir), *err = NULL;
		Lesson *l = import_model(dir, &p, &err);
		assert_null(err);
		assert_non_null(l);
		const LayerParams *lp = lesson_layer_params_const(l, models[m].layer);
		assert_int_equal(lp->files, models[m].files);
		for (int k = 0; k < LP_FILE_COUNT; k++)
			if (models[m].files >> k & 1)
				slot_is(lp, k, k < LP_FILE_MOE_W_1 && models[m].at != gpt2_at ? linear_at : models[m].at);
		Attn *a = compute_all(l), *at = a;
		for (int i = 0; i < models[m].layer; i++)
			at = at->next;
		assert_null(at->lp.block.moe.W_1.a); /* dropped after its computation */
		assert_null(at->lp.W_q.a);
		assert_non_null(attn_weights(at)->W_q.a);
		attn_free(a);
		lesson_free(l);
		free(dir);
	}
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
		cmocka_unit_test(gpt2_and_experts_stay_in_the_file),
		cmocka_unit_test(a_models_layer_weights_stay_in_the_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
