/* unit_mla.c: multi-head latent attention (lesson/lesson_mla.c,
 * engine/variants/mla.c) on the lessons of tests/golden/mla/ against
 * PyTorch's numbers (made by tests/golden/make_reference_mla.py following
 * transformers' modeling_deepseek_v3.py in float64): every matrix of the
 * naive form, the absorbed form's scores and head outputs equal to the
 * naive ones within 1e-12, the kv_cache pane for the lessons and for
 * DeepSeek-V3, and the loader's errors at their JSON paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/jsonread.h"
#include "engine/variants/mla.h"
#include "engine/variants/variants.h"
#include "unit_common.h"

/* A JSON file under the source tree, parsed. */
static cJSON *parse_file(const char *rel)
{
	char *path = path_of(rel), *err = NULL;
	size_t len = 0;
	char *buf = fileio_read_all(path, 1u << 24, &len, &err);
	cJSON *j;

	if (buf == NULL)
		print_error("%s: %s\n", path, err ? err : "?");
	assert_non_null(buf);
	j = jr_parse(path, buf, len, 1, "golden", "{}", &err);
	if (j == NULL)
		print_error("%s\n", err ? err : "?");
	assert_non_null(j);
	free(buf);
	free(path);
	free(err);
	return j;
}

/* A matrix of the reference (an array of rows) into m. */
static void ref_mat(const cJSON *ref, const char *key, Mat *m)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(ref, key);
	int rows, cols;

	if (v == NULL)
		print_error("reference has no %s\n", key);
	assert_non_null(v);
	rows = cJSON_GetArraySize(v);
	cols = cJSON_GetArraySize(cJSON_GetArrayItem(v, 0));
	assert_int_equal(mat_alloc(m, rows, cols), 0);
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < cols; j++)
			MAT_AT(*m, i, j) = cJSON_GetArrayItem(cJSON_GetArrayItem(v, i), j)->valuedouble;
}

/* got equals ref[key] within 1e-12 in every cell (same shape). */
static void check(const char *name, const cJSON *ref, const char *key, const Mat *got)
{
	Mat want;

	ref_mat(ref, key, &want);
	if (want.rows != got->rows || want.cols != got->cols)
		print_error("%s: %s is %d × %d, PyTorch's %d × %d\n", name, key, got->rows, got->cols, want.rows, want.cols);
	assert_int_equal(want.rows, got->rows);
	assert_int_equal(want.cols, got->cols);
	for (int i = 0; i < want.rows; i++)
		for (int j = 0; j < want.cols; j++)
			if (!(fabs(MAT_AT(want, i, j) - MAT_AT(*got, i, j)) <= 1e-12)) {
				print_error("%s: %s[%d][%d] = %.17g, PyTorch %.17g\n", name, key, i, j, MAT_AT(*got, i, j),
				            MAT_AT(want, i, j));
				fail();
			}
	mat_free(&want);
}

/* Head h of a per-head reference (h × n × n) against got. */
static void check_head(const char *name, const cJSON *ref, const char *key, int h, const Mat *got)
{
	cJSON *one = cJSON_CreateObject();

	assert_non_null(one);
	cJSON_AddItemReferenceToObject(one, key, cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ref, key), h));
	check(name, one, key, got);
	cJSON_Delete(one);
}

static long long ref_int(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	assert_non_null(v);
	return (long long)v->valuedouble;
}

static void golden(const char *name)
{
	char rel[128], *path;
	cJSON *ref;
	Lesson *l;
	Attn *a;
	const cJSON *cache;
	static const struct {
		const char *key;
		AttnMatrix m;
	} all[] = { { "c_KV", AM_C_KV }, { "k_pe", AM_K_PE }, { "k_pe_rot", AM_K_PE_ROT }, { "q_nope", AM_Q_NOPE },
		    { "q_pe", AM_Q_PE }, { "Q", AM_Q }, { "K", AM_K }, { "V", AM_V }, { "concat", AM_CONCAT },
		    { "output", AM_OUTPUT }, { "q_tilde", AM_Q_TILDE }, { "absorbed_concat", AM_ABSORBED_OUT } };

	snprintf(rel, sizeof rel, "tests/golden/mla/%s.json", name);
	path = path_of(rel);
	l = load_file(path);
	free(path);
	snprintf(rel, sizeof rel, "tests/golden/mla/%s.ref.json", name);
	ref = parse_file(rel);
	a = compute(l);
	if (l->lp.mla.q_lora_rank > 0)
		check(name, ref, "c_Q", attn_matrix(a, AM_C_Q, 0));
	else
		assert_null(cJSON_GetObjectItemCaseSensitive(ref, "c_Q"));
	for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
		check(name, ref, all[k].key, attn_matrix(a, all[k].m, 0));
	for (int h = 0; h < a->heads; h++) {
		check_head(name, ref, "scores", h, attn_matrix(a, AM_SCORES, h));
		check_head(name, ref, "weights", h, attn_matrix(a, AM_WEIGHTS, h));
		check_head(name, ref, "absorbed_scores", h, attn_matrix(a, AM_ABSORBED, h));
	}
	/* the two forms agree (attnviz's own distance between them) */
	assert_true(attn_matrix(a, AM_MLA_DIFF, 0)->a[0] <= 1e-12);
	assert_true(attn_matrix(a, AM_MLA_DIFF, 0)->a[1] <= 1e-12);
	/* the cache for the lesson's sizes (GQA with heads/2 groups, as the script says): the kv_cache pane's first column */
	cache = cJSON_GetObjectItemCaseSensitive(ref, "cache");
	{
		static const char *const kind[] = { "MHA", "GQA", "MQA", "MLA" };
		for (int k = 0; k < 4; k++) {
			assert_true(MAT_AT(*attn_matrix(a, AM_KV_CACHE, 0), k, 0) == (double)ref_int(cache, kind[k]));
			assert_true(MAT_AT(*attn_matrix(a, AM_KV_CACHE, 0), k, 1) == 2.0 * (double)ref_int(cache, kind[k]));
		}
	}
	attn_free(a);
	lesson_free(l);
	cJSON_Delete(ref);
}

static void test_qlora_2heads(void **state)
{
	(void)state;
	golden("mla_qlora_2heads");
}

static void test_noqlora_1head(void **state)
{
	(void)state;
	golden("mla_noqlora_1head");
}

static void test_qlora_3heads(void **state)
{
	(void)state;
	golden("mla_qlora_3heads");
}

/* DeepSeek-V3: 576 numbers a token a layer for MLA against MHA's 40960; 61 layers in bf16. */
static void test_cache_v3(void **state)
{
	cJSON *v3 = parse_file("tests/golden/mla/deepseek_v3_cache.json");
	const MlaCache t = mla_cache(MLA_V3_HEADS, MLA_V3_NOPE, MLA_V3_ROPE, MLA_V3_V, MLA_V3_KV_LORA, MLA_V3_GROUPS);
	char *table;
	Lesson *l;
	Attn *a;
	char *path = path_of("tests/golden/mla/mla_qlora_2heads.json");

	(void)state;
	l = load_file(path);
	free(path);
	a = compute(l);
	/* the kv_cache pane's DeepSeek-V3 columns: numbers a layer, bytes in 61 layers of bf16 */
	assert_true(MAT_AT(*attn_matrix(a, AM_KV_CACHE, 0), 3, 2) == 576.0);
	assert_true(MAT_AT(*attn_matrix(a, AM_KV_CACHE, 0), 3, 3) == 70272.0);
	assert_true(MAT_AT(*attn_matrix(a, AM_KV_CACHE, 0), 0, 2) == 40960.0);
	assert_true(MAT_AT(*attn_matrix(a, AM_KV_CACHE, 0), 0, 3) == 4997120.0);
	attn_free(a);
	lesson_free(l);
	assert_int_equal(t.mha, ref_int(v3, "MHA"));
	assert_int_equal(t.gqa, ref_int(v3, "GQA"));
	assert_int_equal(t.mqa, ref_int(v3, "MQA"));
	assert_int_equal(t.mla, ref_int(v3, "MLA"));
	table = mla_cache_table(&t, MLA_V3_LAYERS, 2);
	assert_non_null(table);
	/* MLA: 576 numbers, 1152 bytes a layer, 70272 bytes in 61 layers; MHA 40960, 81920, 4997120 */
	assert_non_null(strstr(table, "MLA         576          1152 B           70272 B"));
	assert_non_null(strstr(table, "MHA       40960         81920 B         4997120 B"));
	free(table);
	cJSON_Delete(v3);
}

/* A lesson with an MLA head of d_model 2, 1 head, d_nope 1, d_rope 2, d_v 1, kv_lora_rank 2; EXTRA is spliced in. */
#define MLA_LESSON(top, mla)                                                                                          \
	"{\"attnviz\": 2, \"tokens\": [\"a\", \"b\"], \"X\": [[1, 2], [3, 4]], \"mask\": \"causal\", " top    \
	"\"mla\": {\"kv_lora_rank\": 2, \"qk_nope_head_dim\": 1, \"qk_rope_head_dim\": 2, \"v_head_dim\": 1, " mla \
	"\"W_kva\": [[1, 0, 1, 0], [0, 1, 0, 1]], \"W_kvb\": [[1, 2], [3, 4]]}}"
#define W_Q "\"W_q\": [[1, 0, 0], [0, 1, 0]], "

/* Each bad "mla" lesson is refused at its JSON path, with what was expected. */
static void test_bad(void **state)
{
	static const struct {
		const char *json, *path, *words;
	} bad[] = {
		{ MLA_LESSON(W_Q, "\"W_kvz\": 1, "), "mla", "W_kvz" },
		{ MLA_LESSON(W_Q "\"W_k\": [[1]], ", ""), "W_k", "W_kva" },
		{ MLA_LESSON(W_Q "\"rope\": true, ", ""), "rope", "rope_theta" },
		{ MLA_LESSON(W_Q "\"backward\": {\"target\": [[0, 0], [0, 0]]}, ", ""), "backward", "forward only" },
		{ "{\"attnviz\": 2, \"tokens\": [\"a\"], \"X\": [[1, 2]], " W_Q
		  "\"mla\": {\"kv_lora_rank\": 2, \"qk_nope_head_dim\": 1, \"qk_rope_head_dim\": 3, \"v_head_dim\": 1}}",
		  "mla.qk_rope_head_dim", "even" },
		{ MLA_LESSON("", ""), "W_q", "missing" },
		{ MLA_LESSON("\"W_q\": [[1, 0], [0, 1]], ", ""), "W_q", "heads" },
		{ MLA_LESSON(W_Q, "\"q_lora_rank\": 1, "), "W_q", "W_qb" },
		{ MLA_LESSON(W_Q, "\"W_qa\": [[1], [2]], "), "mla.W_qa", "q_lora_rank" },
		{ MLA_LESSON(W_Q, "\"kv_a_norm\": [1, 2, 3], "), "mla.kv_a_norm", "expected 2 numbers" },
		{ MLA_LESSON(W_Q, "\"rope_theta\": 1, "), "mla.rope_theta", "> 1" },
	};

	(void)state;
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		char *err = NULL, *warn = NULL, want[64];
		Lesson *l = lesson_load_string("t.json", bad[k].json, strlen(bad[k].json), &err, &warn);

		if (l != NULL)
			print_error("case %zu: loaded\n", k);
		assert_null(l);
		assert_non_null(err);
		snprintf(want, sizeof want, "t.json: %s:", bad[k].path);
		if (strstr(err, want) == NULL || strstr(err, bad[k].words) == NULL)
			print_error("case %zu: %s (wanted \"%s\" and \"%s\")\n", k, err, want, bad[k].words);
		assert_non_null(strstr(err, want));
		assert_non_null(strstr(err, bad[k].words));
		free(err);
		free(warn);
	}
	/* and the lesson itself loads (with the duplicated bad key removed) */
	{
		static const char good[] = MLA_LESSON(W_Q, "");
		char *err = NULL, *warn = NULL;
		Lesson *l = lesson_load_string("t.json", good, strlen(good), &err, &warn);
		if (l == NULL)
			print_error("%s\n", err);
		assert_non_null(l);
		lesson_free(l);
		free(err);
		free(warn);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qlora_2heads), cmocka_unit_test(test_noqlora_1head),
		cmocka_unit_test(test_qlora_3heads), cmocka_unit_test(test_cache_v3), cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
