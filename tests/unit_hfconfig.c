/* unit_hfconfig.c: weights/hfconfig.c against the model folders and numbers
 * tests/models/make_models.py made (PyTorch and numpy, from transformers'
 * config classes and the safetensors format, not from our C): each
 * config.json read to the numbers transformers' config class holds, each
 * tensor found in its file (or shard) with its dtype and shape and read to
 * the reference's values bit for bit, the reference's X made of the
 * embedding rows the files hold, and each bad folder refused with a message
 * that names the file and what is wrong. */
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
#include "weights/hfconfig.h"

#include "unit_tmpdir.h"

static const char *const models[] = {"gpt2",           "gpt2_prefix_f16", "llama_gqa_sharded",
                                     "llama_tied_bf16", "qwen2_bias_f16",  "qwen3_qknorm_bf16"};
#define NMODELS (int)(sizeof models / sizeof models[0])

/* The source tree's PRE NAME POST (under ATTNVIZ_SRCDIR, else the current directory), in one of two static buffers. */
static const char *src_file(const char *pre, const char *name, const char *post)
{
	static char buf[2][4096];
	static int k;
	const char *root = getenv("ATTNVIZ_SRCDIR");
	k ^= 1;
	snprintf(buf[k], sizeof buf[k], "%s/%s%s%s", root && *root ? root : ".", pre, name, post);
	return buf[k];
}

static cJSON *reference(const char *model)
{
	char *err = NULL;
	size_t len;
	char *text = fileio_read_all(src_file("tests/models/", model, ".ref.json"), 16 << 20, &len, &err);
	if (text == NULL)
		fail_msg("%s", err);
	cJSON *ref = cJSON_Parse(text);
	assert_non_null(ref);
	free(text);
	return ref;
}

static const cJSON *get(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (v == NULL)
		fail_msg("the reference has no \"%s\"", key);
	return v;
}

static double num(const cJSON *o, const char *key)
{
	return get(o, key)->valuedouble;
}

/* Bit for bit: the same double (both NaN-free here). */
static void same(double want, double got, const char *what, const char *model)
{
	if (memcmp(&want, &got, sizeof got) != 0)
		fail_msg("%s: %s is %.17g, the reference says %.17g", model, what, got, want);
}

static void each_config_reads_to_transformers_numbers(void **state)
{
	(void)state;
	for (int m = 0; m < NMODELS; m++) {
		cJSON *ref = reference(models[m]);
		const cJSON *r = get(ref, "config");
		HfConfig c;
		char *err = NULL;
		if (hfconfig_read(src_file("tests/models/", models[m], ""), &c, &err) != 0)
			fail_msg("%s: %s", models[m], err);
		assert_string_equal(c.model_type, get(ref, "model_type")->valuestring);
		assert_int_equal(c.vocab_size, (int)num(r, "vocab_size"));
		assert_int_equal(c.hidden_size, (int)num(r, "hidden_size"));
		assert_int_equal(c.num_layers, (int)num(r, "num_hidden_layers"));
		assert_int_equal(c.num_heads, (int)num(r, "num_attention_heads"));
		assert_int_equal(c.num_kv_heads, (int)num(r, "num_key_value_heads"));
		assert_int_equal(c.head_dim, (int)num(r, "head_dim"));
		assert_int_equal(c.intermediate_size, (int)num(r, "intermediate_size"));
		assert_int_equal(c.max_positions, (int)num(r, "max_position_embeddings"));
		same(num(r, "norm_eps"), c.norm_eps, "norm_eps", models[m]);
		same(num(r, "rope_theta"), c.rope_theta, "rope_theta", models[m]);
		assert_string_equal(c.act_name, get(r, "hidden_act")->valuestring);
		assert_int_equal(c.act, c.arch == HF_GPT2 ? HF_ACT_GELU_TANH : HF_ACT_SILU);
		assert_int_equal(c.tie_word_embeddings, cJSON_IsTrue(get(r, "tie_word_embeddings")));
		assert_int_equal(c.qkv_bias, cJSON_IsTrue(get(r, "qkv_bias")));
		assert_int_equal(c.o_bias, cJSON_IsTrue(get(r, "o_bias")));
		assert_int_equal(c.qk_norm, cJSON_IsTrue(get(r, "qk_norm")));
		const cJSON *bos = get(r, "bos_token_id"), *eos = get(r, "eos_token_id");
		assert_int_equal(c.bos_token_id, cJSON_IsNull(bos) ? -1 : (long long)bos->valuedouble);
		assert_int_equal(c.n_eos, cJSON_IsNull(eos) ? 0 : 1);
		if (c.n_eos)
			assert_int_equal(c.eos_token_id[0], (long long)eos->valuedouble);
		assert_true(strstr(c.architecture, "ForCausalLM") != NULL || strcmp(c.architecture, "GPT2LMHeadModel") == 0);
		cJSON_Delete(ref);
	}
}

/* A plain left-to-right sum in row-major order, as the script sums the values it wrote. */
static double sum_in_order(const Mat *a)
{
	double s = 0;
	for (int i = 0; i < a->rows; i++)
		for (int j = 0; j < a->cols; j++)
			s += MAT_AT(*a, i, j);
	return s;
}

static void every_tensor_is_in_its_file_with_the_reference_values(void **state)
{
	(void)state;
	for (int m = 0; m < NMODELS; m++) {
		cJSON *ref = reference(models[m]);
		const cJSON *e;
		char *err = NULL;
		HfWeights *w = hfweights_open(src_file("tests/models/", models[m], ""), &err);
		if (w == NULL)
			fail_msg("%s: %s", models[m], err);
		int count = 0, in_files = 0;
		cJSON_ArrayForEach(e, get(ref, "tensors")) {
			const StFile *f = NULL;
			const StTensor *t = hfweights_find(w, e->string, &f);
			if (t == NULL)
				fail_msg("%s: tensor \"%s\" not found", models[m], e->string);
			const char *file = get(e, "file")->valuestring;
			size_t nl = strlen(f->name), fl = strlen(file);
			if (nl < fl + 1 || strcmp(f->name + nl - fl, file) != 0 || f->name[nl - fl - 1] != '/')
				fail_msg("%s: \"%s\" found in %s, the reference says %s", models[m], e->string, f->name, file);
			assert_string_equal(st_dtype_name(t->dtype), get(e, "dtype")->valuestring);
			const cJSON *shape = get(e, "shape");
			assert_int_equal(t->ndim, cJSON_GetArraySize(shape));
			for (int d = 0; d < t->ndim; d++)
				assert_int_equal(t->shape[d], (long long)cJSON_GetArrayItem(shape, d)->valuedouble);
			count++;
			if (cJSON_GetObjectItem(e, "buffer"))
				continue;
			Mat a = {0};
			if (st_to_mat(f, t, 0, 0, 0, &a, &err) != 0)
				fail_msg("%s: %s", models[m], err);
			same(num(e, "sum"), sum_in_order(&a), e->string, models[m]);
			const cJSON *first = get(e, "first"), *last = get(e, "last");
			const int total = a.rows * a.cols, nf = cJSON_GetArraySize(first), nlast = cJSON_GetArraySize(last);
			for (int i = 0; i < nf; i++)
				same(cJSON_GetArrayItem(first, i)->valuedouble, a.a[i],
				     e->string, models[m]);
			for (int i = 0; i < nlast; i++) {
				int k = total - nlast + i;
				same(cJSON_GetArrayItem(last, i)->valuedouble, a.a[k], e->string,
				     models[m]);
			}
			mat_free(&a);
		}
		for (int i = 0; i < w->nfiles; i++)
			in_files += w->files[i]->n;
		assert_int_equal(count, in_files); /* nothing in the files the reference lacks */
		if (w->n > 0)
			assert_int_equal(w->n, count); /* the index names every tensor of its shards */
		hfweights_close(w);
		cJSON_Delete(ref);
	}
}

/* A good model's config and weights, its shapes checked. */
static HfWeights *open_model(const char *model, HfConfig *c)
{
	char *err = NULL;
	const char *folder = src_file("tests/models/", model, "");
	HfWeights *w = hfweights_open(folder, &err);
	if (w == NULL || hfconfig_read(folder, c, &err) != 0 || hfconfig_check_shapes(c, w, &err) != 0)
		fail_msg("%s: %s", model, err);
	return w;
}

static void whole_tensors_read_bit_for_bit_as_written(void **state)
{
	(void)state;
	for (int m = 0; m < NMODELS; m++) {
		cJSON *ref = reference(models[m]);
		const cJSON *e;
		char *err = NULL;
		HfConfig c;
		HfWeights *w = open_model(models[m], &c);
		int seen = 0;
		cJSON_ArrayForEach(e, get(ref, "whole")) {
			const size_t pl = strlen(w->prefix);
			/* hfweights_mat puts the prefix in front: give it the name without */
			assert_true(strncmp(e->string, w->prefix, pl) == 0);
			const StTensor *t = hfweights_find(w, e->string, NULL);
			assert_non_null(t);
			const int rows = t->ndim == 2 ? (int)t->shape[0] : 1, cols = (int)t->shape[t->ndim - 1];
			Mat a = {0}, at = {0};
			if (hfweights_mat(w, e->string + pl, 0, rows, cols, &a, &err) != 0)
				fail_msg("%s: %s", models[m], err);
			assert_int_equal(cJSON_GetArraySize(e), rows * cols);
			for (int i = 0; i < rows; i++)
				for (int j = 0; j < cols; j++)
					same(cJSON_GetArrayItem(e, i * cols + j)->valuedouble, MAT_AT(a, i, j), e->string, models[m]);
			if (t->ndim == 2) { /* as nn.Linear's weight is used: transposed */
				assert_int_equal(hfweights_mat(w, e->string + pl, 1, cols, rows, &at, &err), 0);
				for (int i = 0; i < rows; i++)
					for (int j = 0; j < cols; j++)
						assert_true(MAT_AT(at, j, i) == MAT_AT(a, i, j));
				mat_free(&at);
			}
			mat_free(&a);
			seen++;
		}
		assert_true(seen >= 2);
		Mat none = {0};
		assert_int_equal(hfweights_mat(w, "no.such.weight", 0, 0, 0, &none, &err), -1);
		assert_non_null(strstr(err, "no.such.weight\""));
		free(err);
		assert_string_equal(w->prefix, strcmp(models[m], "gpt2_prefix_f16") == 0 ? "transformer." : "");
		hfweights_close(w);
		cJSON_Delete(ref);
	}
}

/* X, what enters layer 0, is the token rows of the embedding the file holds (GPT-2: plus wpe's rows). */
static void the_reference_starts_from_the_files_embedding_rows(void **state)
{
	(void)state;
	for (int m = 0; m < NMODELS; m++) {
		cJSON *ref = reference(models[m]);
		const cJSON *p;
		char *err = NULL;
		HfConfig c;
		HfWeights *w = open_model(models[m], &c);
		Mat emb = {0}, pos = {0};
		const int gpt2 = c.arch == HF_GPT2;
		assert_int_equal(hfweights_mat(w, gpt2 ? "wte.weight" : "model.embed_tokens.weight", 0, c.vocab_size,
		                               c.hidden_size, &emb, &err), 0);
		if (gpt2)
			assert_int_equal(hfweights_mat(w, "wpe.weight", 0, c.max_positions, c.hidden_size, &pos, &err), 0);
		cJSON_ArrayForEach(p, get(ref, "prompts")) {
			const cJSON *ids = get(p, "ids"), *X = get(p, "X");
			assert_int_equal(cJSON_GetArraySize(ids), cJSON_GetArraySize(X));
			assert_int_equal(cJSON_GetArraySize(get(p, "layers")), c.num_layers);
			assert_int_equal(cJSON_GetArraySize(get(p, "logits")), cJSON_GetArraySize(ids));
			assert_int_equal(cJSON_GetArraySize(cJSON_GetArrayItem(get(p, "logits"), 0)), c.vocab_size);
			for (int t = 0; t < cJSON_GetArraySize(ids); t++) {
				int id = (int)cJSON_GetArrayItem(ids, t)->valuedouble;
				const cJSON *row = cJSON_GetArrayItem(X, t);
				assert_true(id >= 0 && id < c.vocab_size);
				assert_int_equal(cJSON_GetArraySize(row), c.hidden_size);
				for (int j = 0; j < c.hidden_size; j++) {
					double x = MAT_AT(emb, id, j) + (gpt2 ? MAT_AT(pos, t, j) : 0.0);
					same(cJSON_GetArrayItem(row, j)->valuedouble, x, "X", models[m]);
				}
			}
		}
		mat_free(&emb);
		mat_free(&pos);
		hfweights_close(w);
		cJSON_Delete(ref);
	}
}

static void each_bad_folder_is_refused_naming_the_file_and_what(void **state)
{
	char *text, *err = NULL, *line, *save = NULL;
	size_t len;
	int cases = 0;
	(void)state;
	text = fileio_read_all(src_file("tests/models/bad/expected.txt", "", ""), 1 << 20, &len, &err);
	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');
		assert_non_null(tab);
		*tab = '\0';
		const char *folder = src_file("tests/models/bad/", line, "");
		HfConfig c;
		HfWeights *w = NULL;
		if (hfconfig_read(folder, &c, &err) == 0 && (w = hfweights_open(folder, &err)) != NULL)
			hfconfig_check_shapes(&c, w, &err);
		hfweights_close(w);
		if (err == NULL)
			fail_msg("%s: accepted", line);
		if (strstr(err, tab + 1) == NULL || strstr(err, line) == NULL)
			fail_msg("%s: the message \"%s\" should name the folder and say \"%s\"", line, err, tab + 1);
		for (const char *p = err; *p; p++)
			assert_false((unsigned char)*p < 0x20 && *p != '\n');
		free(err);
		err = NULL;
		cases++;
	}
	assert_true(cases >= 18);
	free(text);
}

/* A config.json of the given text in the temporary folder, read. */
static int read_text(const char *json, HfConfig *c, char **err)
{
	char path[128];
	snprintf(path, sizeof path, "%s/config.json", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(json, f);
	fclose(f);
	return hfconfig_read(dir, c, err);
}

static void a_bare_config_takes_transformers_defaults(void **state)
{
	HfConfig c;
	char *err = NULL;
	(void)state;
	/* GPT2Config() */
	assert_int_equal(read_text("{\"model_type\": \"gpt2\"}", &c, &err), 0);
	assert_int_equal(c.vocab_size, 50257);
	assert_int_equal(c.hidden_size, 768);
	assert_int_equal(c.num_layers, 12);
	assert_int_equal(c.num_heads, 12);
	assert_int_equal(c.num_kv_heads, 12);
	assert_int_equal(c.head_dim, 64);
	assert_int_equal(c.intermediate_size, 3072);
	assert_int_equal(c.max_positions, 1024);
	assert_true(c.norm_eps == 1e-5 && c.rope_theta == 0);
	assert_string_equal(c.act_name, "gelu_new");
	assert_true(c.tie_word_embeddings && c.qkv_bias && c.o_bias && !c.qk_norm);
	assert_int_equal(c.bos_token_id, 50256);
	assert_int_equal(c.n_eos, 1);
	assert_int_equal(c.eos_token_id[0], 50256);
	/* GPT2Config.attribute_map: hidden_size for n_embd */
	assert_int_equal(read_text("{\"model_type\": \"gpt2\", \"hidden_size\": 64, \"num_attention_heads\": 2}", &c, &err), 0);
	assert_int_equal(c.hidden_size, 64);
	assert_int_equal(c.head_dim, 32);
	assert_int_equal(c.intermediate_size, 256);
	/* LlamaConfig() */
	assert_int_equal(read_text("{\"model_type\": \"llama\"}", &c, &err), 0);
	assert_int_equal(c.vocab_size, 32000);
	assert_int_equal(c.hidden_size, 4096);
	assert_int_equal(c.num_kv_heads, 32);
	assert_int_equal(c.head_dim, 128);
	assert_int_equal(c.intermediate_size, 11008);
	assert_int_equal(c.max_positions, 2048);
	assert_true(c.norm_eps == 1e-6 && c.rope_theta == 10000.0);
	assert_true(!c.tie_word_embeddings && !c.qkv_bias && !c.o_bias && !c.qk_norm);
	assert_int_equal(c.bos_token_id, 1);
	assert_int_equal(c.eos_token_id[0], 2);
	/* Llama 3's list of eos ids; attention_bias */
	assert_int_equal(read_text("{\"model_type\": \"llama\", \"eos_token_id\": [128001, 128008, 128009], "
	                           "\"attention_bias\": true, \"bos_token_id\": null}", &c, &err), 0);
	assert_int_equal(c.n_eos, 3);
	assert_int_equal(c.eos_token_id[2], 128009);
	assert_int_equal(c.bos_token_id, -1);
	assert_true(c.qkv_bias && c.o_bias);
	/* Qwen2Config(): num_key_value_heads 32 when absent, num_attention_heads when null; biases on q, k, v */
	assert_int_equal(read_text("{\"model_type\": \"qwen2\", \"num_attention_heads\": 64}", &c, &err), 0);
	assert_int_equal(c.num_kv_heads, 32);
	assert_int_equal(c.vocab_size, 151936);
	assert_int_equal(c.intermediate_size, 22016);
	assert_int_equal(c.max_positions, 32768);
	assert_true(c.qkv_bias && !c.o_bias && c.bos_token_id == -1 && c.n_eos == 0);
	assert_int_equal(read_text("{\"model_type\": \"qwen2\", \"num_attention_heads\": 14, \"num_key_value_heads\": null, "
	                           "\"hidden_size\": 896, \"attention_bias\": false}", &c, &err), 0);
	assert_int_equal(c.num_kv_heads, 14);
	assert_int_equal(c.head_dim, 64);
	assert_true(c.qkv_bias);
	/* Qwen3Config(): head_dim 128 whatever hidden_size / heads is */
	assert_int_equal(read_text("{\"model_type\": \"qwen3\", \"hidden_size\": 1024, \"num_attention_heads\": 16, "
	                           "\"num_key_value_heads\": 8}", &c, &err), 0);
	assert_int_equal(c.head_dim, 128);
	assert_true(c.qk_norm && !c.qkv_bias);
	/* no model_type: architectures says it */
	assert_int_equal(read_text("{\"architectures\": [\"Qwen3ForCausalLM\"]}", &c, &err), 0);
	assert_int_equal(c.arch, HF_QWEN3);
	/* Qwen3NextConfig(): 48 layers, every 4th full attention (full_attention_interval 4); Gated DeltaNet's 16 key
	 * heads and 32 value heads of 128, kernel 4; 512 experts, top 10 renormalised, a shared expert of 512, every
	 * layer sparse; partial_rotary_factor 0.25, head_dim 256, 2 key/value heads, QK-norm, untied */
	assert_int_equal(read_text("{\"model_type\": \"qwen3_next\"}", &c, &err), 0);
	assert_int_equal(c.arch, HF_QWEN3_NEXT);
	assert_int_equal(c.num_layers, 48);
	assert_true(c.linear[0] && c.linear[2] && !c.linear[3] && c.linear[4] && !c.linear[47]);
	assert_true(c.lin_k_heads == 16 && c.lin_v_heads == 32 && c.lin_k_dim == 128 && c.lin_v_dim == 128 && c.lin_conv == 4);
	assert_true(c.num_experts == 512 && c.experts_per_tok == 10 && c.norm_topk_prob && c.moe_intermediate_size == 512 &&
	            c.shared_expert_ff == 512 && c.sparse[0] && c.sparse[47]);
	assert_true(c.partial_rotary_factor == 0.25 && c.head_dim == 256 && c.num_kv_heads == 2 && c.qk_norm &&
	            !c.tie_word_embeddings && c.intermediate_size == 5632);
	assert_int_equal(read_text("{\"model_type\": \"qwen3_next\", \"num_hidden_layers\": 4, \"full_attention_interval\": 2}",
	                           &c, &err), 0);
	assert_true(c.linear[0] && !c.linear[1] && c.linear[2] && !c.linear[3]);
}

static void what_is_not_computed_yet_is_refused_by_key_and_value(void **state)
{
	static const struct {
		const char *json, *words;
	} cases[] = {
		{"{\"model_type\": \"lama\"}", "model_type: \"lama\" is not a model attnviz computes yet (it computes gpt2, "
		                               "llama, qwen2, qwen3, olmo2, mixtral, qwen3_moe, deepseek_v3, gemma2, gemma3_text, smollm3, gpt_oss, deepseek_v32 and qwen3_next) (did you mean \"llama\"?)"},
		/* RoPE's scaling (issue 23 §2, weights/hfrope.c): what transformers computes and attnviz does not yet, and bad values */
		{"{\"model_type\": \"llama\", \"rope_scaling\": {\"type\": \"longrope\", \"factor\": 2}}",
		 "rope_scaling.type: \"longrope\": attnviz computes the rope_types default, linear, dynamic, yarn and llama3"},
		{"{\"model_type\": \"llama\", \"rope_scaling\": 2}", "rope_scaling: expected {\"rope_type\": \"yarn\", \"factor\": 4, …} or null, got 2"},
		{"{\"model_type\": \"llama\", \"rope_scaling\": {\"rope_type\": \"linear\"}}",
		 "rope_scaling.factor: missing: rope_type \"linear\" needs factor"},
		{"{\"model_type\": \"llama\", \"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": -2}}",
		 "rope_scaling.factor: expected a number > 0, got -2"},
		{"{\"model_type\": \"llama\", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, "
		 "\"low_freq_factor\": 1, \"high_freq_factor\": 4}}",
		 "rope_scaling.original_max_position_embeddings: missing: rope_type \"llama3\" needs original_max_position_embeddings"},
		{"{\"model_type\": \"llama\", \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8, "
		 "\"original_max_position_embeddings\": 64, \"low_freq_factor\": 4, \"high_freq_factor\": 1}}",
		 "rope_scaling.high_freq_factor: expected a number above low_freq_factor (4), got 1"},
		{"{\"model_type\": \"qwen3\", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4, \"mscale\": -1}}",
		 "rope_scaling.mscale: expected a number"},
		{"{\"model_type\": \"qwen3\", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4, \"mscale_all_dim\": \"1\"}}",
		 "rope_scaling.mscale_all_dim: expected a number"},
		{"{\"model_type\": \"qwen3\", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4, \"truncate\": 0}}",
		 "rope_scaling.truncate: expected true or false, got 0"},
		{"{\"model_type\": \"qwen2\", \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 0}}",
		 "rope_parameters.rope_theta: expected a number > 0, got 0"},
		{"{\"model_type\": \"qwen3\", \"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\"}}}",
		 "rope_parameters: RoPE settings per layer type (full_attention): attnviz reads one for every layer"},
		{"{\"model_type\": \"llama\", \"head_dim\": 8, \"partial_rotary_factor\": 0.125}",
		 "partial_rotary_factor: int(head_dim 8 × 0.125) = 1 columns would turn"},
		{"{\"model_type\": \"llama\", \"head_dim\": 8, \"partial_rotary_factor\": 0.25, \"rope_scaling\": "
		 "{\"rope_type\": \"dynamic\", \"factor\": 2}}", "partial_rotary_factor: int(head_dim 8 × 0.25) = 2 columns would turn"},
		{"{\"model_type\": \"gpt2\", \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2}}",
		 "rope_scaling: {\"rope_type\": \"linear\", …}: attnviz computes plain RoPE only"},
		{"{\"model_type\": \"llama\", \"sliding_window\": 4096}",
		 "sliding_window: 4096: attnviz computes sliding windows of qwen2 and qwen3 models only"},
		{"{\"model_type\": \"llama\", \"layer_types\": [\"full_attention\", \"sliding_attention\"]}",
		 "layer_types[1]: \"sliding_attention\": attnviz computes \"full_attention\" layers only"},
		/* Qwen2's and Qwen3's local and global layers (issue 23 §3): a sliding layer needs its window */
		{"{\"model_type\": \"qwen3\", \"num_hidden_layers\": 2, \"layer_types\": [\"full_attention\", "
		 "\"sliding_attention\"]}", "layer_types[1]: a \"sliding_attention\" layer needs a window"},
		{"{\"model_type\": \"qwen2\", \"num_hidden_layers\": 3, \"layer_types\": [\"full_attention\"]}",
		 "layer_types: expected a list of 3 layer types (num_hidden_layers)"},
		{"{\"model_type\": \"qwen2\", \"num_hidden_layers\": 1, \"use_sliding_window\": true, \"layer_types\": "
		 "[\"chunked_attention\"]}", "layer_types[0]: \"chunked_attention\": attnviz computes \"full_attention\" and"},
		{"{\"model_type\": \"qwen2\", \"use_sliding_window\": 1}", "use_sliding_window: expected true or false, got 1"},
		{"{\"model_type\": \"llama\", \"num_local_experts\": 8}",
		 "num_local_experts: 8: attnviz computes the mixtures of experts of mixtral, qwen3_moe, gpt_oss and qwen3_next models only"},
		{"{\"model_type\": \"gpt2\", \"partial_rotary_factor\": 0.5}", "partial_rotary_factor: 0.5: attnviz rotates"},
		{"{\"model_type\": \"llama\", \"mlp_bias\": true}", "mlp_bias: true: attnviz computes LLaMA MLPs without"},
		{"{\"model_type\": \"gpt2\", \"scale_attn_by_inverse_layer_idx\": true}", "scale_attn_by_inverse_layer_idx: true"},
		{"{\"model_type\": \"gpt2\", \"activation_function\": \"silu\"}",
		 "activation_function: \"silu\": attnviz computes gpt2 models with \"gelu_new\", \"gelu_pytorch_tanh\" or "
		 "\"gelu\""},
		{"{\"model_type\": \"qwen2\", \"hidden_act\": \"relu\"}", "hidden_act: \"relu\": attnviz computes qwen2 models "
		                                                          "with \"silu\""},
		{"{\"model_type\": \"gpt2\", \"n_embd\": 10, \"n_head\": 4}", "n_head: 4 does not divide n_embd (10)"},
		{"{\"model_type\": \"llama\", \"hidden_size\": 12, \"num_attention_heads\": 4}",
		 "num_attention_heads: RoPE turns pairs of numbers, so each head's size must be even, but it is 3"},
		{"{\"model_type\": \"llama\", \"rope_theta\": -1}", "rope_theta: expected a base above 0"},
		{"{\"model_type\": \"llama\", \"tie_word_embeddings\": 1}", "tie_word_embeddings: expected true or false, got 1"},
		{"{\"model_type\": \"llama\", \"eos_token_id\": [2, \"x\"]}", "eos_token_id[1]: expected a token id"},
		{"{\"model_type\": 7}", "model_type: expected a model type"},
		{"[]", "expected an object of settings"},
		{"{}", "model_type: no model_type, and architectures names no model attnviz computes (none)"},
		{"{\"architectures\": [\"\\u001b[31mX\"]}", "(\\x1b[31mX)"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		HfConfig c;
		char *err = NULL;
		if (read_text(cases[i].json, &c, &err) == 0)
			fail_msg("%s: accepted", cases[i].json);
		if (strstr(err, cases[i].words) == NULL || strstr(err, "config.json: ") == NULL)
			fail_msg("%s: the message \"%s\" should say \"%s\"", cases[i].json, err, cases[i].words);
		free(err);
	}
}

static void one_file_is_read_before_an_index(void **state)
{
	char cmd[1024], *err = NULL;
	(void)state;
	/* a folder with gpt2's model.safetensors and an index whose shards are not there */
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src_file("tests/models/gpt2/model.safetensors", "", ""), dir);
	assert_int_equal(system(cmd), 0);
	char index[128];
	snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
	FILE *f = fopen(index, "w");
	assert_non_null(f);
	fputs("{\"weight_map\": {\"wte.weight\": \"none.safetensors\"}}", f);
	fclose(f);
	HfWeights *w = hfweights_open(dir, &err);
	if (w == NULL)
		fail_msg("%s", err);
	assert_int_equal(w->nfiles, 1);
	assert_non_null(hfweights_find(w, "wte.weight", NULL));
	hfweights_close(w);
	/* without it, the index is read, and its missing shard named */
	snprintf(cmd, sizeof cmd, "rm '%s/model.safetensors'", dir);
	assert_int_equal(system(cmd), 0);
	assert_null(hfweights_open(dir, &err));
	assert_non_null(strstr(err, "model.safetensors.index.json: weight_map.\"wte.weight\": cannot read"));
	free(err);
}

/* RoPE's scaling in both layouts (issue 23 §2): transformers' defaults where a key is left out. */
static void rope_scaling_reads_both_layouts_with_transformers_defaults(void **state)
{
	HfConfig c;
	char *err = NULL;
	(void)state;
	/* old layout, BC "type"; yarn: original_max_position_embeddings defaults to max_position_embeddings,
	 * beta_fast 32, beta_slow 1, truncate true, attention_factor from the factor */
	assert_int_equal(read_text("{\"model_type\": \"llama\", \"max_position_embeddings\": 4096, \"partial_rotary_factor\": "
	                           "0.5, \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4}}", &c, &err), 0);
	assert_int_equal(c.rope_scaling.type, ROPE_SCALE_YARN);
	assert_true(c.rope_scaling.factor == 4 && c.rope_scaling.orig_max == 4096 && c.rope_scaling.beta_fast == 32 &&
	            c.rope_scaling.beta_slow == 1 && c.rope_scaling.truncate && c.rope_scaling.attn_factor == 0);
	assert_true(c.partial_rotary_factor == 0.5 && c.rope_theta == 10000.0);
	/* DeepSeek's mscale and mscale_all_dim (null: left out) */
	assert_int_equal(read_text("{\"model_type\": \"llama\", \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 40, "
	                           "\"mscale\": 0.707, \"mscale_all_dim\": null}}", &c, &err), 0);
	assert_true(c.rope_scaling.mscale == 0.707 && c.rope_scaling.mscale_all_dim == 0);
	/* yarn without a factor: max_position_embeddings / original_max_position_embeddings */
	assert_int_equal(read_text("{\"model_type\": \"qwen3\", \"max_position_embeddings\": 131072, \"rope_scaling\": "
	                           "{\"rope_type\": \"yarn\", \"original_max_position_embeddings\": 32768}}", &c, &err), 0);
	assert_true(c.rope_scaling.factor == 4 && c.rope_scaling.orig_max == 32768);
	/* new layout: rope_theta and partial_rotary_factor inside; "default" is plain RoPE */
	assert_int_equal(read_text("{\"model_type\": \"qwen2\", \"rope_theta\": 5, \"rope_parameters\": {\"rope_type\": "
	                           "\"default\", \"rope_theta\": 1000000.0, \"partial_rotary_factor\": 0.25}}", &c, &err), 0);
	assert_int_equal(c.rope_scaling.type, ROPE_SCALE_NONE);
	assert_true(c.rope_theta == 1000000.0 && c.partial_rotary_factor == 0.25);
	/* dynamic NTK reads max_position_embeddings as L0, as _compute_dynamic_ntk_parameters does */
	assert_int_equal(read_text("{\"model_type\": \"llama\", \"max_position_embeddings\": 2048, \"rope_scaling\": "
	                           "{\"rope_type\": \"dynamic\", \"factor\": 2, \"original_max_position_embeddings\": 8}}",
	                           &c, &err), 0);
	assert_true(c.rope_scaling.type == ROPE_SCALE_DYNAMIC && c.rope_scaling.orig_max == 2048);
	/* null is plain RoPE */
	assert_int_equal(read_text("{\"model_type\": \"llama\", \"rope_scaling\": null}", &c, &err), 0);
	assert_int_equal(c.rope_scaling.type, ROPE_SCALE_NONE);
	free(err);
}

/* DeepseekV3Config()'s mixture of experts, and the layers modeling_deepseek.py makes sparse */
static void deepseek_v3_moe_takes_its_defaults(void **state)
{
	HfConfig c;
	char *err = NULL;
	(void)state;
	assert_int_equal(read_text("{\"model_type\": \"deepseek_v3\"}", &c, &err), 0);
	assert_true(c.num_experts == 256 && c.experts_per_tok == 8 && c.n_group == 8 && c.topk_group == 4);
	assert_true(c.norm_topk_prob && c.routed_scaling == 2.5 && c.moe_intermediate_size == 2048 && c.shared_ff == 2048);
	assert_true(c.num_layers == 61 && !c.sparse[2] && c.sparse[3] && c.sparse[60]);
	/* moe_layer_freq 2 after first_k_dense_replace 1: layers 2, 4, …; two shared experts: twice as wide */
	assert_int_equal(read_text("{\"model_type\": \"deepseek_v3\", \"num_hidden_layers\": 6, \"first_k_dense_replace\": 1, "
	                           "\"moe_layer_freq\": 2, \"n_shared_experts\": 2, \"moe_intermediate_size\": 8}", &c, &err), 0);
	assert_true(!c.sparse[0] && !c.sparse[1] && c.sparse[2] && !c.sparse[3] && c.sparse[4] && c.shared_ff == 16);
	/* n_routed_experts null: every layer dense, whatever the router's settings */
	assert_int_equal(read_text("{\"model_type\": \"deepseek_v3\", \"n_routed_experts\": null, \"n_group\": 3}", &c, &err), 0);
	assert_true(c.num_experts == 0 && !c.sparse[3] && !c.sparse[60]);
	/* the router's settings at their keys */
	assert_int_equal(read_text("{\"model_type\": \"deepseek_v3\", \"n_routed_experts\": 12}", &c, &err), -1);
	assert_non_null(strstr(err, "n_group: expected a number of groups that divides the 12 experts"));
	free(err);
	err = NULL;
	assert_int_equal(read_text("{\"model_type\": \"deepseek_v3\", \"scoring_func\": \"softmax\"}", &c, &err), -1);
	assert_non_null(strstr(err, "scoring_func: \"softmax\": attnviz computes DeepSeek-V3's router with scoring_func"));
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(each_config_reads_to_transformers_numbers),
		cmocka_unit_test(every_tensor_is_in_its_file_with_the_reference_values),
		cmocka_unit_test(whole_tensors_read_bit_for_bit_as_written),
		cmocka_unit_test(the_reference_starts_from_the_files_embedding_rows),
		cmocka_unit_test(each_bad_folder_is_refused_naming_the_file_and_what),
		cmocka_unit_test_setup_teardown(a_bare_config_takes_transformers_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(what_is_not_computed_yet_is_refused_by_key_and_value, setup, teardown),
		cmocka_unit_test_setup_teardown(one_file_is_read_before_an_index, setup, teardown),
		cmocka_unit_test_setup_teardown(rope_scaling_reads_both_layouts_with_transformers_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(deepseek_v3_moe_takes_its_defaults, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
