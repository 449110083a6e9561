/* unit_mla.c: multi-head latent attention (engine/variants/mla.c) against
 * PyTorch's numbers (tests/golden/mla/, made by
 * tests/golden/make_reference_mla.py following transformers'
 * modeling_deepseek_v3.py in float64): every matrix of the naive form, the
 * absorbed form's scores and head outputs equal to the naive ones within
 * 1e-12, the cache's numbers for the lessons and for DeepSeek-V3, and the
 * reader's errors at their JSON paths. */
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
#include "engine/variants/mla.h"
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
	char rel[128];
	cJSON *les, *ref;
	JrCtx c;
	MlaWeights w;
	MlaResult r;
	Mat X;
	const cJSON *cache;

	snprintf(rel, sizeof rel, "tests/golden/mla/%s.json", name);
	les = parse_file(rel);
	snprintf(rel, sizeof rel, "tests/golden/mla/%s.ref.json", name);
	ref = parse_file(rel);
	ref_mat(les, "X", &X);
	jr_ctx_init(&c, name, NULL);
	if (mla_read(&c, cJSON_GetObjectItemCaseSensitive(les, "mla"), X.cols, &w) != 0)
		print_error("%s\n", c.err);
	assert_null(c.err);
	assert_int_equal(mla_forward(&w, &X, &r), 0);
	if (w.q_lora_rank > 0)
		check(name, ref, "c_Q", &r.c_Q);
	else
		assert_null(cJSON_GetObjectItemCaseSensitive(ref, "c_Q"));
	{
		const struct {
			const char *key;
			const Mat *got;
		} all[] = { { "c_KV", &r.c_KV }, { "k_pe", &r.k_pe }, { "k_pe_rot", &r.k_pe_rot }, { "q_nope", &r.q_nope },
			    { "q_pe", &r.q_pe }, { "Q", &r.Q }, { "K", &r.K }, { "V", &r.V }, { "concat", &r.concat },
			    { "output", &r.output }, { "q_tilde", &r.q_tilde }, { "absorbed_concat", &r.absorbed_concat } };
		for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
			check(name, ref, all[k].key, all[k].got);
	}
	for (int h = 0; h < w.heads; h++) {
		check_head(name, ref, "scores", h, &r.scores[h]);
		check_head(name, ref, "weights", h, &r.weights[h]);
		check_head(name, ref, "absorbed_scores", h, &r.absorbed[h]);
	}
	/* the two forms agree (their own distance, not PyTorch's) */
	assert_true(r.max_score_diff <= 1e-12);
	assert_true(r.max_concat_diff <= 1e-12);
	/* the cache for the lesson's sizes, GQA with heads/2 groups as the script says */
	cache = cJSON_GetObjectItemCaseSensitive(ref, "cache");
	{
		const MlaCache t = mla_cache(w.heads, w.d_nope, w.d_rope, w.d_v, w.kv_lora_rank, w.heads / 2 > 0 ? w.heads / 2 : 1);
		assert_int_equal(t.mha, ref_int(cache, "MHA"));
		assert_int_equal(t.gqa, ref_int(cache, "GQA"));
		assert_int_equal(t.mqa, ref_int(cache, "MQA"));
		assert_int_equal(t.mla, ref_int(cache, "MLA"));
	}
	mla_result_free(&r);
	mla_weights_free(&w);
	mat_free(&X);
	cJSON_Delete(les);
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

	(void)state;
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

/* Each bad "mla" is refused at its JSON path, with what was expected. */
static void test_bad(void **state)
{
	static const struct {
		const char *json, *path, *words;
	} bad[] = {
		{ "{\"kv_lora_rank\": 2, \"qk_nope_head_dim\": 1, \"qk_rope_head_dim\": 2, \"v_head_dim\": 1, \"W_kvz\": 1}",
		  ":", "W_kvz" },
		{ "{\"qk_nope_head_dim\": 1, \"qk_rope_head_dim\": 2, \"v_head_dim\": 1}", "kv_lora_rank", "missing" },
		{ "{\"kv_lora_rank\": 2, \"qk_nope_head_dim\": 1, \"qk_rope_head_dim\": 3, \"v_head_dim\": 1}",
		  "qk_rope_head_dim", "even" },
		{ "{\"kv_lora_rank\": 2, \"qk_nope_head_dim\": 1, \"qk_rope_head_dim\": 2, \"v_head_dim\": 1, \"W_q\": [[1,2,3]]}",
		  "W_q", "expected 2 rows" },
		{ "{\"kv_lora_rank\": 2, \"qk_nope_head_dim\": 1, \"qk_rope_head_dim\": 2, \"v_head_dim\": 1, "
		  "\"W_q\": [[1,2,3],[4,5,6]], \"W_kva\": [[1,2,3,4],[1,2,3]]}",
		  "W_kva[1]", "a row of 4 numbers" },
		{ "{\"kv_lora_rank\": 2, \"qk_nope_head_dim\": 1, \"qk_rope_head_dim\": 2, \"v_head_dim\": 1, "
		  "\"W_q\": [[1,2,3],[4,5,6]], \"W_kva\": [[1,2,3,4],[1,2,3,\"x\"]]}",
		  "W_kva[1][3]", "" },
		{ "{\"kv_lora_rank\": 2, \"qk_nope_head_dim\": 1, \"qk_rope_head_dim\": 2, \"v_head_dim\": 1, "
		  "\"W_qa\": [[1],[2]]}",
		  "W_qa", "q_lora_rank" },
		{ "{\"q_lora_rank\": 1, \"kv_lora_rank\": 2, \"qk_nope_head_dim\": 1, \"qk_rope_head_dim\": 2, \"v_head_dim\": 1, "
		  "\"W_q\": [[1,2,3],[4,5,6]]}",
		  "W_q", "W_qb" },
		{ "{\"kv_lora_rank\": 2, \"qk_nope_head_dim\": 1, \"qk_rope_head_dim\": 2, \"v_head_dim\": 1, "
		  "\"W_q\": [[1,2,3],[4,5,6]], \"W_kva\": [[1,2,3,4],[1,2,3,4]], \"W_kvb\": [[1,2],[3,4]], "
		  "\"kv_a_norm\": [1, 2, 3], \"W_o\": [[1,2]]}",
		  "kv_a_norm", "expected 2 numbers" },
		{ "{\"kv_lora_rank\": 2, \"qk_nope_head_dim\": 1, \"qk_rope_head_dim\": 2, \"v_head_dim\": 1, \"rope_theta\": 1}",
		  "rope_theta", "> 1" },
	};

	(void)state;
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		char *err = NULL, *want;
		cJSON *j = jr_parse("t", bad[k].json, strlen(bad[k].json), 1, "mla", "{}", &err);
		JrCtx c;
		MlaWeights w;
		size_t n;

		assert_non_null(j);
		jr_ctx_init(&c, "t.json", NULL);
		jr_path_key(&c, "mla");
		assert_int_equal(mla_read(&c, j, 2, &w), -1);
		assert_non_null(c.err);
		n = strlen("mla.") + strlen(bad[k].path) + 1;
		want = malloc(n);
		assert_non_null(want);
		snprintf(want, n, bad[k].path[0] == ':' ? "mla%s" : "mla.%s", bad[k].path);
		if (strstr(c.err, want) == NULL || strstr(c.err, bad[k].words) == NULL)
			print_error("case %zu: %s (wanted the path %s and \"%s\")\n", k, c.err, want, bad[k].words);
		assert_non_null(strstr(c.err, want));
		assert_non_null(strstr(c.err, bad[k].words));
		free(want);
		free(c.err);
		cJSON_Delete(j);
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
