/* unit_generate.c: generate through the KV cache (engine/variants/decode.c's
 * attn_gen_*): each step's logits, from one row through every layer's
 * cached keys and values, against PyTorch's whole forward pass on the ids so
 * far (tests/models/generate_cache.ref.json, made by
 * tests/models/make_generate_cache_ref.py), on each small model folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <signal.h>

#include "app/session.h"
#include "base/fileio.h"
#include "base/ttyguard.h"
#include "lesson/lesson.h"
#include "weights/importer.h"
#include "unit_common.h"

/* ATTNVIZ_SRCDIR/rel (or ./rel). */
static void src_path(char *out, size_t size, const char *rel)
{
	const char *dir = getenv("ATTNVIZ_SRCDIR");
	snprintf(out, size, "%s/%s", dir && dir[0] ? dir : ".", rel);
}

/* The model NAME on ids[0 … n−1] and its computation. */
static Attn *model_on(const char *name, const long long *ids, int n, Lesson **l)
{
	char dir[4096], rel[256], *err = NULL;
	ImportPrompt p = { NULL, ids, n };
	Attn *a;

	snprintf(rel, sizeof rel, "tests/models/%s", name);
	src_path(dir, sizeof dir, rel);
	*l = import_model(dir, &p, &err);
	if (*l == NULL)
		print_error("%s: %s (set ATTNVIZ_SRCDIR to the repository)\n", name, err);
	assert_non_null(*l);
	a = attn_compute_all(*l, &err);
	if (a == NULL)
		print_error("%s: %s\n", name, err);
	assert_non_null(a);
	return a;
}

static void test_generate_cache(void **state)
{
	char ref[4096], *err = NULL, *js;
	size_t len;
	cJSON *root, *m;
	int models = 0;
	(void)state;

	src_path(ref, sizeof ref, "tests/models/generate_cache.ref.json");
	js = fileio_read_all(ref, 1 << 24, &len, &err);
	if (js == NULL)
		print_error("%s\n", err);
	assert_non_null(js);
	root = cJSON_Parse(js);
	assert_non_null(root);
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(root, "models"))
	{
		const cJSON *jids = cJSON_GetObjectItem(m, "ids"), *rows = cJSON_GetObjectItem(m, "logits");
		const int from = cJSON_GetObjectItem(m, "from")->valueint, total = cJSON_GetArraySize(jids);
		long long ids[64];
		Lesson *l;
		Attn *a;
		AttnGen *g;

		assert_true(total <= 64);
		for (int i = 0; i < total; i++)
			ids[i] = (long long)cJSON_GetArrayItem(jids, i)->valuedouble;
		a = model_on(m->string, ids, from, &l);
		g = attn_gen_begin(a, cJSON_GetArraySize(rows));
		if (g == NULL)
			print_error("%s: the cache does not take it\n", m->string);
		assert_non_null(g);
		for (int k = 0; k < cJSON_GetArraySize(rows); k++) {
			const cJSON *want = cJSON_GetArrayItem(rows, k);
			const double *z, *p;
			double sum = 0.0;
			Mat x = { 0 };
			assert_int_equal(import_embed_tail(l, ids, from + k + 1, from + k, &x, &err), 0);
			assert_int_equal(attn_gen_step(g, x.a, &z, &p), 0);
			mat_free(&x);
			assert_int_equal(cJSON_GetArraySize(want), l->cfg.vocab);
			for (int v = 0; v < l->cfg.vocab; v++) {
				const double w = cJSON_GetArrayItem(want, v)->valuedouble;
				const double tol = 1e-9 * (fabs(w) > 1 ? fabs(w) : 1);
				if (!(fabs(z[v] - w) <= tol))
					print_error("%s step %d logit %d: %.17g, PyTorch %.17g\n", m->string, k, v, z[v], w);
				assert_true(fabs(z[v] - w) <= tol);
				sum += p[v];
			}
			assert_true(fabs(sum - 1.0) < 1e-12);
		}
		attn_gen_free(g);
		attn_free(a);
		lesson_free(l);
		models++;
	}
	assert_int_equal(models, 6);
	cJSON_Delete(root);
	free(js);
}

/* rows (count of them, ld cols) of m against the JSON array of rows want, 1e-9 relative */
static void rows_near(const double *m, size_t ld, int count, int cols, const cJSON *want, const char *what, int layer)
{
	assert_int_equal(cJSON_GetArraySize(want), count);
	for (int i = 0; i < count; i++) {
		const cJSON *row = cJSON_GetArrayItem(want, i);
		assert_int_equal(cJSON_GetArraySize(row), cols);
		for (int j = 0; j < cols; j++) {
			const double w = cJSON_GetArrayItem(row, j)->valuedouble, x = m[(size_t)i * ld + (size_t)j];
			const double tol = 1e-9 * (fabs(w) > 1 ? fabs(w) : 1);
			if (!(fabs(x - w) <= tol))
				print_error("layer %d %s[%d][%d]: %.17g, PyTorch %.17g\n", layer, what, i, j, x, w);
			assert_true(fabs(x - w) <= tol);
		}
	}
}

/*
 * Decoding with QK-norm (Qwen3): each step's query, cached key (normalised
 * head by head, then turned by RoPE), output row and layer row against
 * PyTorch's full computation (tests/models/qwen3_qknorm_bf16.ref.json, made
 * by make_models.py), on each of its prompts.
 */
static void test_decode_qknorm(void **state)
{
	char ref[4096], *err = NULL, *js;
	size_t len;
	cJSON *root, *p;
	int prompts = 0;
	(void)state;

	src_path(ref, sizeof ref, "tests/models/qwen3_qknorm_bf16.ref.json");
	js = fileio_read_all(ref, 1 << 26, &len, &err);
	assert_non_null(js);
	root = cJSON_Parse(js);
	assert_non_null(root);
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(root, "prompts"))
	{
		const cJSON *jids = cJSON_GetObjectItem(p, "ids"), *layers = cJSON_GetObjectItem(p, "layers");
		const int n = cJSON_GetArraySize(jids);
		long long ids[64];
		Lesson *l;
		Attn *a, *full;
		const Attn *at;
		int i = 0;

		assert_true(n <= 64);
		for (int k = 0; k < n; k++)
			ids[k] = (long long)cJSON_GetArrayItem(jids, k)->valuedouble;
		full = model_on("qwen3_qknorm_bf16", ids, n, &l);
		attn_free(full);
		l->cfg.decode = 1;
		a = attn_compute_all(l, &err);
		if (a == NULL)
			print_error("decode on: %s\n", err);
		assert_non_null(a);
		for (at = a; at != NULL; at = at->next, i++) {
			const cJSON *L = cJSON_GetArrayItem(layers, i), *attn = cJSON_GetObjectItem(L, "attn");
			assert_false(mat_empty(&at->dec_q));
			rows_near(at->dec_q.a, (size_t)at->dec_q.cols, n, at->dec_q.cols, cJSON_GetObjectItem(attn, "Q_rot"), "dec_q", i);
			rows_near(at->cache_K.a, (size_t)at->cache_K.cols, n, at->cache_K.cols, cJSON_GetObjectItem(attn, "K_rot"),
			          "cache_K", i);
			rows_near(at->dec_output.a, (size_t)at->dec_output.cols, n, at->dec_output.cols,
			          cJSON_GetObjectItem(attn, "output"), "dec_output", i);
			rows_near(at->dec_layer_out.a, (size_t)at->dec_layer_out.cols, n, at->dec_layer_out.cols,
			          cJSON_GetObjectItem(L, "output"), "dec_layer_out", i);
		}
		assert_int_equal(i, cJSON_GetArraySize(layers));
		attn_free(a);
		lesson_free(l);
		prompts++;
	}
	assert_true(prompts >= 2);
	cJSON_Delete(root);
	free(js);
}

/*
 * A lesson's decode stage past one block of 64 rows (decode.c: the steps'
 * projections, attention and the rest of the block taken 64 rows at a time,
 * keys a block of 64 at a time, a block every step keeps as one product):
 * every decoded row against the full computation's, on a stack of two
 * pre-norm blocks with GQA and RoPE, the second a window of 40 keys (some
 * key blocks partly kept), at n = 150 (two whole blocks and a part).
 */
static void test_decode_blocks(void **state)
{
	static const char lesson[] =
		"{\"attnviz\": 2, \"X\": {\"random\": \"normal\", \"rows\": 150, \"cols\": 32, \"seed\": 1},"
		" \"heads\": 4, \"kv_heads\": 2, \"rope\": true, \"mask\": \"causal\", \"decode\": true,"
		" \"W_q\": {\"random\": \"normal\", \"rows\": 32, \"cols\": 32, \"seed\": 2, \"std\": 0.3},"
		" \"W_k\": {\"random\": \"normal\", \"rows\": 32, \"cols\": 16, \"seed\": 3, \"std\": 0.3},"
		" \"W_v\": {\"random\": \"normal\", \"rows\": 32, \"cols\": 16, \"seed\": 4, \"std\": 0.3},"
		" \"W_o\": {\"random\": \"normal\", \"rows\": 32, \"cols\": 32, \"seed\": 5, \"std\": 0.2},"
		" \"block\": {\"norm\": \"pre\", \"ffn\": {"
		"   \"W_1\": {\"random\": \"normal\", \"rows\": 32, \"cols\": 64, \"seed\": 6, \"std\": 0.2},"
		"   \"W_2\": {\"random\": \"normal\", \"rows\": 64, \"cols\": 32, \"seed\": 7, \"std\": 0.1}}},"
		" \"layers\": [{}, {\"mask\": {\"window\": 40}}]}";
	char *err = NULL, *warn = NULL;
	Lesson *l = lesson_load_string("blocks.json", lesson, sizeof lesson - 1, &err, &warn);
	Attn *a;
	int layers = 0;

	(void)state;
	if (l == NULL)
		print_error("%s\n", err);
	assert_non_null(l);
	a = attn_compute_all(l, &err);
	assert_non_null(a);
	for (const Attn *at = a; at != NULL; at = at->next, layers++) {
		const Mat *full = attn_block_output(at);
		assert_int_equal(at->dec_output.rows, 150);
		for (size_t i = 0; i < (size_t)150 * 32; i++) {
			if (fabs(at->dec_output.a[i] - at->output.a[i]) > 1e-12)
				fail_msg("layer %d: dec_output[%zu][%zu] %.17g, output %.17g", layers, i / 32, i % 32,
				         at->dec_output.a[i], at->output.a[i]);
			if (fabs(at->dec_layer_out.a[i] - full->a[i]) > 1e-12)
				fail_msg("layer %d: dec_layer_out[%zu][%zu] %.17g, the block's %.17g", layers, i / 32, i % 32,
				         at->dec_layer_out.a[i], full->a[i]);
		}
		for (int h = 0; h < at->heads; h++)
			for (int t = 0; t < 150; t++)
				for (int j = 0; j <= t; j++) {
					const double got = MAT_AT(at->head[h].dec_weights, t, j), want = MAT_AT(at->head[h].weights, t, j);
					/* a key outside the window: no weight in the full computation, not in the cache */
					if ((layers == 0 || t - j < 40) && fabs(got - want) > 1e-12)
						fail_msg("layer %d head %d: dec_weights[%d][%d] %.17g, weights %.17g", layers, h, t, j, got,
						         want);
				}
	}
	assert_int_equal(layers, 2);
	attn_free(a);
	lesson_free(l);
	free(warn);
}

/* A model the cache cannot take past its rows (dynamic NTK grows RoPE's base with the length): NULL, generate recomputes. */
static void test_generate_cache_refuses(void **state)
{
	const long long ids[] = { 1, 2, 3 };
	Lesson *l;
	Attn *a = model_on("qwen2_dynamic", ids, 3, &l);
	(void)state;

	assert_null(attn_gen_begin(a, 4));
	attn_free(a);
	lesson_free(l);
}

/* Over the model's positions: the list refused as a prompt would be, naming the limit. */
static void test_embed_tail_limit(void **state)
{
	long long ids[40] = { 0 };
	char *err = NULL;
	Lesson *l;
	Attn *a = model_on("gpt2_prefix_f16", ids, 4, &l);
	Mat x = { 0 };
	(void)state;

	assert_int_equal(import_embed_tail(l, ids, 17, 16, &x, &err), -1);
	assert_non_null(err);
	assert_non_null(strstr(err, "max_position_embeddings"));
	free(err);
	attn_free(a);
	lesson_free(l);
}

/* A session on tests/models/gpt2 at ids 5, 17, 242. */
static void session_on_gpt2(Session *s)
{
	static const long long ids[] = { 5, 17, 242 };
	char dir[4096], *err = NULL;
	const ImportPrompt p = { NULL, ids, 3 };
	Lesson *l;

	src_path(dir, sizeof dir, "tests/models/gpt2");
	l = import_model(dir, &p, &err);
	if (l == NULL)
		print_error("gpt2: %s (set ATTNVIZ_SRCDIR to the repository)\n", err);
	assert_non_null(l);
	assert_int_equal(session_init(s, l, dir, &err), 0);
}

static const Attn *last_layer(const Attn *a)
{
	while (a->next != NULL)
		a = a->next;
	return a;
}

/*
 * Ctrl-C between two generated tokens (issue 21): generate ends there and
 * says so (fewer made than asked, not an error), the tokens made are kept
 * and computed as a prompt (the same bits as generating that many without a
 * stop), and the stop is spent: what follows computes.
 */
static void test_generate_stopped(void **state)
{
	Session s, ref;
	char *err = NULL;
	int made = -1;
	(void)state;

	session_on_gpt2(&ref);
	assert_int_equal(session_generate(&ref, 1, &made, &err), 0);
	assert_int_equal(made, 1);
	session_on_gpt2(&s);
	ttyguard_work_begin(); /* work this generate runs inside, so that a SIGINT is noted (as the view's handler does) */
	assert_int_equal(ttyguard_note_stop(SIGINT), 1);
	assert_int_equal(session_generate(&s, 5, &made, &err), 0);
	assert_int_equal(ttyguard_stop_pending(), 0);
	ttyguard_work_end();
	assert_null(err);
	assert_int_equal(made, 1);
	assert_int_equal(s.lesson->cfg.n, 4);
	assert_memory_equal(s.lesson->cfg.ids, ref.lesson->cfg.ids, 4 * sizeof *s.lesson->cfg.ids);
	assert_int_equal(s.model->cfg.n, 4);
	const Mat *z = &last_layer(s.model)->logits, *want = &last_layer(ref.model)->logits;
	assert_int_equal(z->rows * z->cols, want->rows * want->cols);
	assert_memory_equal(z->a, want->a, (size_t)z->rows * (size_t)z->cols * sizeof *z->a);
	/* no stop: every token asked for */
	assert_int_equal(session_generate(&s, 3, &made, &err), 0);
	assert_int_equal(made, 3);
	assert_int_equal(s.lesson->cfg.n, 7);
	session_free(&s);
	session_free(&ref);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generate_cache),
		cmocka_unit_test(test_generate_cache_refuses),
		cmocka_unit_test(test_decode_qknorm),
		cmocka_unit_test(test_decode_blocks),
		cmocka_unit_test(test_embed_tail_limit),
		cmocka_unit_test(test_generate_stopped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
