/* unit_safetensors.c: weights/safetensors.c against files and numbers made by
 * tests/weights/make_safetensors.py (numpy, from the format's specification):
 * every dtype's values bit for bit, a Linear's weight transposed, and each
 * damaged file refused with a message that says where and what was expected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/fileio.h"
#include "weights/safetensors.h"

/* A file of the source tree (ATTNVIZ_SRCDIR, else the current directory), in a static buffer. */
static const char *src_file(const char *rel)
{
	static char buf[4096];
	const char *root = getenv("ATTNVIZ_SRCDIR");
	snprintf(buf, sizeof buf, "%s/%s", root && *root ? root : ".", rel);
	return buf;
}

static void every_value_is_the_reference_bit_for_bit(void **state)
{
	char *err = NULL, *text;
	size_t len;
	(void)state;
	StFile *f = st_open(src_file("tests/weights/good.safetensors"), &err);
	assert_null(err);
	assert_non_null(f);
	text = fileio_read_all(src_file("tests/weights/good.ref.json"), 1 << 20, &len, &err);
	assert_non_null(text);
	cJSON *ref = cJSON_Parse(text), *e;
	assert_non_null(ref);
	int seen = 0;
	cJSON_ArrayForEach(e, ref) {
		const StTensor *t = st_find(f, e->string);
		assert_non_null(t);
		assert_string_equal(st_dtype_name(t->dtype), cJSON_GetObjectItem(e, "dtype")->valuestring);
		const cJSON *shape = cJSON_GetObjectItem(e, "shape"), *values = cJSON_GetObjectItem(e, "values");
		assert_int_equal(t->ndim, cJSON_GetArraySize(shape));
		for (int d = 0; d < t->ndim; d++)
			assert_int_equal(t->shape[d], (long long)cJSON_GetArrayItem(shape, d)->valuedouble);
		assert_int_equal(t->count, cJSON_GetArraySize(values));
		for (long long i = 0; i < t->count; i++) {
			double want = strtod(cJSON_GetArrayItem(values, (int)i)->valuestring, NULL), got = st_value(t, i);
			assert_memory_equal(&want, &got, sizeof got);
		}
		seen++;
	}
	assert_int_equal(seen, f->n); /* the reader found no tensor the reference lacks ("__metadata__" is none) */
	assert_null(st_find(f, "__metadata__"));
	assert_null(st_find(f, "no.such.tensor"));
	cJSON_Delete(ref);
	free(text);
	st_close(f);
}

static void a_linear_weight_is_transposed_and_its_shape_checked(void **state)
{
	char *err = NULL;
	Mat w = {0}, wt = {0};
	(void)state;
	StFile *f = st_open(src_file("tests/weights/good.safetensors"), &err);
	assert_non_null(f);
	const StTensor *t = st_find(f, "layer.0.weight"); /* 3 × 4: out × in */
	assert_int_equal(st_to_mat(f, t, 0, 3, 4, &w, &err), 0);
	assert_int_equal(st_to_mat(f, t, 1, 4, 3, &wt, &err), 0);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
			assert_true(MAT_AT(w, i, j) == MAT_AT(wt, j, i));
	assert_int_equal(st_to_mat(f, t, 1, 5, 3, &wt, &err), -1);
	assert_non_null(strstr(err, "tensor \"layer.0.weight\" has shape [3, 4], expected [3, 5] (out × in"));
	free(err);
	Mat v = {0};
	assert_int_equal(st_to_mat(f, st_find(f, "b.half"), 0, 1, 4, &v, &err), 0);
	assert_int_equal(v.rows, 1);
	assert_int_equal(v.cols, 4);
	assert_int_equal(st_to_mat(f, st_find(f, "b.half"), 0, 1, 5, &v, &err), -1);
	assert_non_null(strstr(err, "has shape [4], expected [5]"));
	free(err);
	mat_free(&v);
	mat_free(&w);
	mat_free(&wt);
	st_close(f);
}

static void each_damaged_file_is_refused_with_where_and_what(void **state)
{
	char *text, *err = NULL, *line, *save = NULL;
	size_t len;
	int cases = 0;
	(void)state;
	text = fileio_read_all(src_file("tests/weights/bad/expected.txt"), 1 << 20, &len, &err);
	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t'), rel[512];
		assert_non_null(tab);
		*tab = '\0';
		snprintf(rel, sizeof rel, "tests/weights/bad/%s", line);
		StFile *f = st_open(src_file(rel), &err);
		if (f != NULL) { /* opens, but its first tensor is not a matrix */
			Mat m = {0};
			assert_int_equal(st_to_mat(f, &f->tensors[0], 0, 0, 0, &m, &err), -1);
			st_close(f);
		}
		assert_non_null(err);
		if (strstr(err, tab + 1) == NULL || strstr(err, line) == NULL)
			fail_msg("%s: the message \"%s\" should name the file and say \"%s\"", line, err, tab + 1);
		for (const char *p = err; *p; p++) /* nothing from the file reaches a terminal raw */
			assert_false((unsigned char)*p < 0x20 && *p != '\n');
		free(err);
		err = NULL;
		cases++;
	}
	assert_true(cases >= 15);
	free(text);
}

static void what_is_not_a_file_is_said(void **state)
{
	char *err = NULL;
	(void)state;
	assert_null(st_open(src_file("tests/weights"), &err));
	assert_non_null(strstr(err, "directory"));
	free(err);
	assert_null(st_open(src_file("tests/weights/none.safetensors"), &err));
	assert_non_null(strstr(err, "cannot read"));
	free(err);
}

static void halves_and_bfloats_decode_exactly(void **state)
{
	/* hand-made tensors: every F16 and BF16 bit pattern against the definition of the formats */
	unsigned char buf[2];
	StTensor t = {.ndim = 1, .count = 1, .data = buf};
	(void)state;
	for (unsigned h = 0; h < 65536; h++) {
		buf[0] = (unsigned char)(h & 0xff);
		buf[1] = (unsigned char)(h >> 8);
		t.dtype = ST_F16;
		int e = (int)(h >> 10 & 31), m = (int)(h & 1023);
		double want = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
		if (h & 0x8000)
			want = -want;
		double got = st_value(&t, 0);
		if (isnan(want))
			assert_true(isnan(got));
		else
			assert_true(got == want && signbit(got) == signbit(want));
		t.dtype = ST_BF16;
		uint32_t u = (uint32_t)h << 16;
		float f;
		memcpy(&f, &u, sizeof f);
		got = st_value(&t, 0);
		if (isnan(f))
			assert_true(isnan(got));
		else
			assert_true(got == (double)f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_value_is_the_reference_bit_for_bit),
		cmocka_unit_test(a_linear_weight_is_transposed_and_its_shape_checked),
		cmocka_unit_test(each_damaged_file_is_refused_with_where_and_what),
		cmocka_unit_test(what_is_not_a_file_is_said),
		cmocka_unit_test(halves_and_bfloats_decode_exactly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
