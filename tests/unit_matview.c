/* unit_matview.c: base/matview.c, the read-only matrix a real model's head is
 * kept in (issue 21 §3): its rows, cells and whole-matrix doubles are the
 * numbers the bytes hold (each dtype's decoding is tested bit for bit, every
 * F16 and BF16 pattern, through st_value in unit_safetensors.c); its bytes are
 * its own copy and live while a reference does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "base/matview.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rows_cells_and_doubles_are_the_bytes),
		cmocka_unit_test(a_share_outlives_the_first_reference_and_the_source),
		cmocka_unit_test(each_dtype_reads_its_width),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
