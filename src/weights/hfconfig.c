/* hfconfig.c: a Hugging Face model folder's config.json and weights (hfconfig.h). */
#include "weights/hfconfig.h"
#include "weights/hfrope.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/i18n.h"
#include "base/jsonread.h"
#include "base/strbuf.h"
#include "base/text.h"

#define HF_MAX_CONFIG (1L << 20) /* a config.json is a few kB */

/*
 * Each architecture's key names and the defaults of its config class in
 * transformers (the __init__ arguments of GPT2Config in
 * models/gpt2/configuration_gpt2.py, LlamaConfig in
 * models/llama/configuration_llama.py, Qwen2Config and Qwen3Config in
 * models/qwen2|qwen3/configuration_qwen*.py, Olmo2Config in
 * models/olmo2/configuration_olmo2.py; tie_word_embeddings is
 * PretrainedConfig's True unless the class passes its own).
 */
static const char *const gpt2_acts[] = {"gelu_new", "gelu_pytorch_tanh", "gelu", NULL};
static const HfAct gpt2_act_kinds[] = {HF_ACT_GELU_TANH, HF_ACT_GELU_TANH, HF_ACT_GELU};
static const char *const llama_acts[] = {"silu", NULL};
static const HfAct llama_act_kinds[] = {HF_ACT_SILU};
static const char *const gemma_acts[] = {"gelu_pytorch_tanh", NULL}; /* Gemma's gate: gelu_tanh(gate_proj(x)) */
static const HfAct gemma_act_kinds[] = {HF_ACT_GELU_TANH};

static const struct Arch {
	const char *type;
	const char *architecture; /* what architectures[0] says for a model of this type */
	/* the keys, GPT-2's first (hidden_size and the others are its aliases: GPT2Config.attribute_map) */
	const char *k_hidden, *k_layers, *k_heads, *k_inner, *k_positions, *k_eps, *k_act;
	long long vocab, hidden, layers, heads, kv_heads, inner, positions, head_dim, bos, eos; /* -1: none; 0: derived */
	double eps;
	int tie, qkv_bias, o_bias, qk_norm, rope;
	const char *const *acts;
	const HfAct *act_kinds;
} arches[HF_ARCH_COUNT] = {
	/* GPT2Config: vocab_size 50257, n_positions 1024, n_embd 768, n_layer 12, n_head 12, n_inner None
	 * (GPT2Block: 4 * hidden_size), activation_function "gelu_new", layer_norm_epsilon 1e-5, bos and eos
	 * 50256; c_attn, c_proj, c_fc carry biases (Conv1D). */
	[HF_GPT2] = {"gpt2", "GPT2LMHeadModel", "n_embd", "n_layer", "n_head", "n_inner", "n_positions",
	             "layer_norm_epsilon", "activation_function", 50257, 768, 12, 12, 0, 0, 1024, 0, 50256, 50256, 1e-5, 1,
	             1, 1, 0, 0, gpt2_acts, gpt2_act_kinds},
	/* LlamaConfig: vocab_size 32000, hidden_size 4096, intermediate_size 11008, num_hidden_layers 32,
	 * num_attention_heads 32, num_key_value_heads None (= num_attention_heads), hidden_act "silu",
	 * max_position_embeddings 2048, rms_norm_eps 1e-6, bos 1, eos 2, tie_word_embeddings False,
	 * rope_theta 10000.0, attention_bias False, head_dim None (= hidden_size // num_attention_heads). */
	[HF_LLAMA] = {"llama", "LlamaForCausalLM", "hidden_size", "num_hidden_layers", "num_attention_heads",
	              "intermediate_size", "max_position_embeddings", "rms_norm_eps", "hidden_act", 32000, 4096, 32, 32, 0,
	              11008, 2048, 0, 1, 2, 1e-6, 0, 0, 0, 0, 1, llama_acts, llama_act_kinds},
	/* Qwen2Config: vocab_size 151936, hidden_size 4096, intermediate_size 22016, num_hidden_layers 32,
	 * num_attention_heads 32, num_key_value_heads 32, hidden_act "silu", max_position_embeddings 32768,
	 * rms_norm_eps 1e-6, tie_word_embeddings False, rope_theta 10000.0; no bos or eos (PretrainedConfig's
	 * None). modeling_qwen2.py: q_proj, k_proj, v_proj with bias=True, o_proj bias=False; head_dim by
	 * getattr(config, "head_dim", hidden_size // num_attention_heads). */
	[HF_QWEN2] = {"qwen2", "Qwen2ForCausalLM", "hidden_size", "num_hidden_layers", "num_attention_heads",
	              "intermediate_size", "max_position_embeddings", "rms_norm_eps", "hidden_act", 151936, 4096, 32, 32, 32,
	              22016, 32768, 0, -1, -1, 1e-6, 0, 1, 0, 0, 1, llama_acts, llama_act_kinds},
	/* Qwen3Config: as Qwen2Config, with head_dim 128 and attention_bias False; modeling_qwen3.py: q_norm
	 * and k_norm (Qwen3RMSNorm over head_dim). */
	[HF_QWEN3] = {"qwen3", "Qwen3ForCausalLM", "hidden_size", "num_hidden_layers", "num_attention_heads",
	              "intermediate_size", "max_position_embeddings", "rms_norm_eps", "hidden_act", 151936, 4096, 32, 32, 32,
	              22016, 32768, 128, -1, -1, 1e-6, 0, 0, 0, 1, 1, llama_acts, llama_act_kinds},
	/* Olmo2Config: vocab_size 50304, hidden_size 4096, intermediate_size 11008, num_hidden_layers 32,
	 * num_attention_heads 32, num_key_value_heads None (= num_attention_heads), hidden_act "silu",
	 * max_position_embeddings 2048, rms_norm_eps 1e-5, bos None, eos 50279, tie_word_embeddings False,
	 * attention_bias False. modeling_olmo2.py: q_norm and k_norm over the whole projection (qk_norm 2), the
	 * norms after each sublayer (post_attention_layernorm, post_feedforward_layernorm; no input_layernorm). */
	[HF_OLMO2] = {"olmo2", "Olmo2ForCausalLM", "hidden_size", "num_hidden_layers", "num_attention_heads",
	              "intermediate_size", "max_position_embeddings", "rms_norm_eps", "hidden_act", 50304, 4096, 32, 32, 0,
	              11008, 2048, 0, -1, 50279, 1e-5, 0, 0, 0, 2, 1, llama_acts, llama_act_kinds},
	/* MixtralConfig: vocab_size 32000, hidden_size 4096, intermediate_size 14336 (each expert's), num_hidden_layers
	 * 32, num_attention_heads 32, num_key_value_heads 8, head_dim None, hidden_act "silu", max_position_embeddings
	 * 4096 * 32, rms_norm_eps 1e-5, bos 1, eos 2, tie_word_embeddings False, rope_theta 1e6 (read_numbers),
	 * num_experts_per_tok 2, num_local_experts 8; modeling_mixtral.py: no biases, block_sparse_moe. */
	[HF_MIXTRAL] = {"mixtral", "MixtralForCausalLM", "hidden_size", "num_hidden_layers", "num_attention_heads",
	                "intermediate_size", "max_position_embeddings", "rms_norm_eps", "hidden_act", 32000, 4096, 32, 32, 8,
	                14336, 131072, 0, 1, 2, 1e-5, 0, 0, 0, 0, 1, llama_acts, llama_act_kinds},
	/* Qwen3MoeConfig: vocab_size 151936, hidden_size 2048, intermediate_size 6144 (a dense layer's),
	 * num_hidden_layers 24, num_attention_heads 32, num_key_value_heads 4, hidden_act "silu",
	 * max_position_embeddings 32768, rms_norm_eps 1e-6, tie_word_embeddings False, attention_bias False,
	 * moe_intermediate_size 768, num_experts_per_tok 8, num_experts 128, norm_topk_prob False,
	 * decoder_sparse_step 1, mlp_only_layers []; modeling_qwen3_moe.py: q_norm and k_norm as Qwen3's,
	 * head_dim by getattr(config, "head_dim", hidden_size // num_attention_heads). */
	[HF_QWEN3_MOE] = {"qwen3_moe", "Qwen3MoeForCausalLM", "hidden_size", "num_hidden_layers", "num_attention_heads",
	                  "intermediate_size", "max_position_embeddings", "rms_norm_eps", "hidden_act", 151936, 2048, 24, 32, 4,
	                  6144, 32768, 0, -1, -1, 1e-6, 0, 0, 0, 1, 1, llama_acts, llama_act_kinds},
	/* DeepseekV3Config: vocab_size 129280, hidden_size 7168, intermediate_size 18432, num_hidden_layers 61,
	 * num_attention_heads 128, num_key_value_heads 128, hidden_act "silu", max_position_embeddings 4096,
	 * rms_norm_eps 1e-6, bos 0, eos 1, tie_word_embeddings False, rope_theta 10000, attention_bias False;
	 * head_dim = qk_rope_head_dim (64); its latent attention's sizes are read by read_deepseek. */
	[HF_DEEPSEEK_V3] = {"deepseek_v3", "DeepseekV3ForCausalLM", "hidden_size", "num_hidden_layers",
	                    "num_attention_heads", "intermediate_size", "max_position_embeddings", "rms_norm_eps",
	                    "hidden_act", 129280, 7168, 61, 128, 128, 18432, 4096, 64, 0, 1, 1e-6, 0, 0, 0, 0, 1, llama_acts,
	                    llama_act_kinds},
	/* Gemma2Config: vocab_size 256000, hidden_size 2304, intermediate_size 9216, num_hidden_layers 26,
	 * num_attention_heads 8, num_key_value_heads 4, head_dim 256, hidden_activation "gelu_pytorch_tanh",
	 * max_position_embeddings 8192, rms_norm_eps 1e-6, bos 2, eos 1, tie_word_embeddings True, rope_theta
	 * 10000, attention_bias False (the rest: read_gemma). Gemma3TextConfig: the same but vocab_size 262208,
	 * max_position_embeddings 131072, rope_theta 1e6 (read_numbers), and q_norm, k_norm over head_dim. */
	[HF_GEMMA2] = {"gemma2", "Gemma2ForCausalLM", "hidden_size", "num_hidden_layers", "num_attention_heads",
	               "intermediate_size", "max_position_embeddings", "rms_norm_eps", "hidden_activation", 256000, 2304, 26,
	               8, 4, 9216, 8192, 256, 2, 1, 1e-6, 1, 0, 0, 0, 1, gemma_acts, gemma_act_kinds},
	[HF_GEMMA3] = {"gemma3_text", "Gemma3ForCausalLM", "hidden_size", "num_hidden_layers", "num_attention_heads",
	               "intermediate_size", "max_position_embeddings", "rms_norm_eps", "hidden_activation", 262208, 2304, 26,
	               8, 4, 9216, 131072, 256, 2, 1, 1e-6, 1, 0, 0, 1, 1, gemma_acts, gemma_act_kinds},
	/* ---- SmolLM3 (issue 23; read_smollm3 below) ---- */
	/* SmolLM3Config (configuration_smollm3.py): vocab_size 128256, hidden_size 2048, intermediate_size 11008,
	 * num_hidden_layers 36, num_attention_heads 16, num_key_value_heads 4, hidden_act "silu",
	 * max_position_embeddings 32768, rms_norm_eps 1e-6, bos 128000, eos 128001, tie_word_embeddings True,
	 * attention_bias False, rope_theta 2000000 (default_theta: arch_theta); modeling_smollm3.py: LLaMA's layer with
	 * head_dim by getattr(config, "head_dim", hidden_size // num_attention_heads) and use_rope per layer. */
	[HF_SMOLLM3] = {"smollm3", "SmolLM3ForCausalLM", "hidden_size", "num_hidden_layers", "num_attention_heads",
	                "intermediate_size", "max_position_embeddings", "rms_norm_eps", "hidden_act", 128256, 2048, 36, 16, 4,
	                11008, 32768, 0, 128000, 128001, 1e-6, 1, 0, 0, 0, 1, llama_acts, llama_act_kinds},
	/* ---- gpt-oss (issue 23; read_gptoss below) ---- */
	/* GptOssConfig (configuration_gpt_oss.py): vocab_size 201088, hidden_size 2880, intermediate_size 2880 (each
	 * expert's), num_hidden_layers 36, num_attention_heads 64, num_key_value_heads 8, head_dim 64, hidden_act
	 * "silu" (unused: the experts' clamped SwiGLU), max_position_embeddings 131072, rms_norm_eps 1e-5, no bos or
	 * eos, tie_word_embeddings False, attention_bias True (q, k, v and o), default_theta 150000 (arch_theta). */
	[HF_GPT_OSS] = {"gpt_oss", "GptOssForCausalLM", "hidden_size", "num_hidden_layers", "num_attention_heads",
	                "intermediate_size", "max_position_embeddings", "rms_norm_eps", "hidden_act", 201088, 2880, 36, 64, 8,
	                2880, 131072, 64, -1, -1, 1e-5, 0, 1, 1, 0, 1, llama_acts, llama_act_kinds},
	/* DeepSeek-V3.2-Exp's config.json: DeepseekV3Config's keys with model_type "deepseek_v32" and its indexer's
	 * index_n_heads 64, index_head_dim 128, index_topk 2048 (inference/config_671B_v3.2.json): read_deepseek, read_indexer. */
	[HF_DEEPSEEK_V32] = {"deepseek_v32", "DeepseekV32ForCausalLM", "hidden_size", "num_hidden_layers",
	                     "num_attention_heads", "intermediate_size", "max_position_embeddings", "rms_norm_eps",
	                     "hidden_act", 129280, 7168, 61, 128, 128, 18432, 4096, 64, 0, 1, 1e-6, 0, 0, 0, 0, 1, llama_acts,
	                     llama_act_kinds},
	/* ---- Qwen3-Next (issue 24; read_qwen3next below) ---- */
	/* Qwen3NextConfig (configuration_qwen3_next.py): vocab_size 151936, hidden_size 2048, intermediate_size 5632 (a
	 * dense layer's), num_hidden_layers 48, num_attention_heads 16, num_key_value_heads 2, head_dim 256, hidden_act
	 * "silu", max_position_embeddings 32768, rms_norm_eps 1e-6, no bos or eos, tie_word_embeddings False,
	 * attention_bias False; modeling_qwen3_next.py: q_norm and k_norm over head_dim (Qwen3NextRMSNorm: 1 + w). */
	[HF_QWEN3_NEXT] = {"qwen3_next", "Qwen3NextForCausalLM", "hidden_size", "num_hidden_layers", "num_attention_heads",
	                   "intermediate_size", "max_position_embeddings", "rms_norm_eps", "hidden_act", 151936, 2048, 48,
	                   16, 2, 5632, 32768, 256, -1, -1, 1e-6, 0, 0, 0, 1, 1, llama_acts, llama_act_kinds},
};

/* Gemma 2 and Gemma 3: sandwich (1 + w) norms, a scaled embedding, query_pre_attn_scalar, caps, windows. */
/* GPT2Config.attribute_map: the common names stand for GPT-2's own. */
static const char *const gpt2_alias[][2] = {
	{"n_embd", "hidden_size"},
	{"n_layer", "num_hidden_layers"},
	{"n_head", "num_attention_heads"},
	{"n_positions", "max_position_embeddings"},
};

/* The key a GPT-2 config uses for k: k itself, or its alias when only that is there. */
static const char *key_of(const cJSON *root, HfArch a, const char *k)
{
	if (a != HF_GPT2 || jr_get(root, k) != NULL)
		return k;
	for (size_t i = 0; i < sizeof gpt2_alias / sizeof gpt2_alias[0]; i++)
		if (strcmp(gpt2_alias[i][0], k) == 0 && jr_get(root, gpt2_alias[i][1]) != NULL)
			return gpt2_alias[i][1];
	return k;
}

/* A size: absent keeps *out; null keeps it when null_ok. */
static int size_key(JrCtx *c, const cJSON *root, const char *key, long long hi, int null_ok, int *out)
{
	const cJSON *v = jr_get(root, key);
	long long x = *out;
	char expect[64];

	if (v == NULL || (null_ok && cJSON_IsNull(v)))
		return 0;
	snprintf(expect, sizeof expect, _("a size from 1 to %lld"), hi);
	if (jr_key_whole(c, root, key, 1, (double)hi, expect, &x) != 0)
		return -1;
	*out = (int)x;
	return 0;
}

static int bool_key(JrCtx *c, const cJSON *root, const char *key, int *out)
{
	size_t old;
	const cJSON *v = jr_enter(c, root, key, &old);

	if (v == NULL)
		return 0;
	if (!cJSON_IsBool(v))
		return jr_leave(c, old, jr_fail(c, _("expected true or false, got %s"), jr_got(v).s));
	*out = cJSON_IsTrue(v);
	return jr_leave(c, old, 0);
}

/* A token id, or null (-1); a list (Llama 3's eos) keeps up to max. Returns how many. */
static int ids_key(JrCtx *c, const cJSON *root, const char *key, long long *out, int max)
{
	size_t old;
	const cJSON *v = jr_enter(c, root, key, &old);
	const char *expect = _("a token id from 0 to 2^31 - 1");
	int n = 0;

	if (v == NULL)
		return -2; /* absent: the caller's default */
	if (cJSON_IsNull(v))
		return jr_leave(c, old, 0);
	if (cJSON_IsArray(v)) {
		const cJSON *e;
		cJSON_ArrayForEach(e, v) {
			size_t o2 = jr_path_index(c, n);
			long long x;
			if (jr_read_whole(c, e, 0, 2147483647.0, expect, &x) != 0)
				return -1;
			jr_path_set(c, o2);
			if (n < max)
				out[n] = x;
			n++;
		}
		jr_path_set(c, old);
		return n < max ? n : max;
	}
	if (jr_read_whole(c, v, 0, 2147483647.0, expect, &out[0]) != 0)
		return -1;
	jr_path_set(c, old);
	return 1;
}

/* The arch of a model_type, or -1. */
static int arch_find(const char *type)
{
	for (int a = 0; a < HF_ARCH_COUNT; a++)
		if (strcmp(arches[a].type, type) == 0)
			return a;
	return -1;
}

static int read_arch(JrCtx *c, const cJSON *root, HfConfig *cfg)
{
	static const char *const types[] = {"gpt2", "llama", "qwen2", "qwen3", "olmo2", "mixtral", "qwen3_moe", "deepseek_v3",
	                                    "gemma2", "gemma3_text", "smollm3", "gpt_oss", "deepseek_v32", "qwen3_next"};
	const cJSON *arch = jr_get(root, "architectures"), *v;
	size_t old;
	int a = -1;

	if (arch != NULL && !cJSON_IsNull(arch)) {
		old = jr_path_key(c, "architectures");
		if (!cJSON_IsArray(arch))
			return jr_leave(c, old, jr_fail(c, _("expected a list of class names, got %s"), jr_got(arch).s));
		v = cJSON_GetArrayItem(arch, 0);
		if (v != NULL) {
			jr_path_index(c, 0);
			if (!cJSON_IsString(v))
				return jr_leave(c, old, jr_fail(c, _("expected a class name, got %s"), jr_got(v).s));
			char *e = text_escape(v->valuestring, "");
			if (e == NULL)
				return jr_fail_oom(c);
			snprintf(cfg->architecture, sizeof cfg->architecture, "%s", e);
			free(e);
		}
		jr_path_set(c, old);
	}
	v = jr_get(root, "model_type");
	old = jr_path_key(c, "model_type");
	if (v == NULL || cJSON_IsNull(v)) {
		/* AutoConfig needs model_type; a class name of ours says the same */
		for (int k = 0; k < HF_ARCH_COUNT && cfg->architecture[0]; k++)
			if (strcmp(arches[k].architecture, cfg->architecture) == 0)
				a = k;
		if (a < 0)
			return jr_leave(c, old, jr_fail(c, _("no model_type, and architectures names no model attnviz computes "
			                                     "(%s): attnviz computes gpt2, llama, qwen2, qwen3, olmo2, mixtral, qwen3_moe, "
			                                     "deepseek_v3, gemma2, gemma3_text, smollm3, gpt_oss, deepseek_v32 and qwen3_next"),
			                                 cfg->architecture[0] ? cfg->architecture : _("none")));
	} else if (!cJSON_IsString(v)) {
		return jr_leave(c, old, jr_fail(c, _("expected a model type (\"gpt2\", \"llama\", …), got %s"), jr_got(v).s));
	} else if (strcmp(v->valuestring, "gemma3") == 0) { /* Gemma3Config: the text model inside its text_config */
		return jr_leave(c, old, jr_fail(c, _("\"gemma3\" is Gemma 3 with its vision tower: attnviz computes its text "
		                                     "model, a folder whose config.json is the text_config (model_type "
		                                     "\"gemma3_text\") with the language model's weights")));
	} else if ((a = arch_find(v->valuestring)) < 0) {
		return jr_leave(c, old, jr_fail(c, _("%s is not a model attnviz computes yet (it computes gpt2, llama, qwen2, "
		                                     "qwen3, olmo2, mixtral, qwen3_moe, deepseek_v3, gemma2, gemma3_text, smollm3, gpt_oss, deepseek_v32 and "
		                                     "qwen3_next)%s"),
		                                 jr_got(v).s, jr_did_you_mean(v->valuestring, types, (int)(sizeof types / sizeof types[0])).s));
	}
	jr_path_set(c, old);
	cfg->arch = (HfArch)a;
	snprintf(cfg->model_type, sizeof cfg->model_type, "%s", arches[a].type);
	return 0;
}

/* Whether architecture a reads the mixture-of-experts key k (read_moe): Mixtral's and Qwen3-MoE's names. */
static int moe_key_read(HfArch a, const char *k)
{
	if (a == HF_GPT_OSS) /* read_gptoss's */
		return strcmp(k, "num_local_experts") == 0 || strcmp(k, "num_experts") == 0 ||
		       strcmp(k, "num_experts_per_tok") == 0;
	if (a == HF_MIXTRAL)
		return strcmp(k, "num_local_experts") == 0 || strcmp(k, "num_experts_per_tok") == 0;
	return (a == HF_QWEN3_MOE || a == HF_QWEN3_NEXT) && strcmp(k, "n_routed_experts") != 0;
}

/*
 * A mixture of experts' settings (Mixtral, Qwen3-MoE; none else): the experts
 * (Qwen3MoeConfig's num_experts, or num_local_experts, its attribute_map's
 * name; Mixtral's num_local_experts), the experts per token, norm_topk_prob
 * (Qwen3-MoE's; Mixtral always renormalises), each expert's width, and which
 * layers are sparse (Qwen3MoeDecoderLayer.__init__: `(layer_idx not in
 * config.mlp_only_layers) and (config.num_experts > 0 and (layer_idx + 1) %
 * config.decoder_sparse_step == 0)`; Mixtral's every layer).
 */
static int read_moe(JrCtx *c, const cJSON *root, HfConfig *cfg)
{
	const int q = cfg->arch == HF_QWEN3_MOE || cfg->arch == HF_QWEN3_NEXT, next = cfg->arch == HF_QWEN3_NEXT;
	const char *k_experts = q && jr_get(root, "num_experts") != NULL ? "num_experts" : "num_local_experts";
	int step = 1;
	size_t old;
	const cJSON *v;

	if (cfg->arch != HF_MIXTRAL && !q)
		return 0;
	cfg->num_experts = next ? 512 : q ? 128 : 8; /* Qwen3NextConfig: 512 experts of 512, top 10 renormalised */
	cfg->experts_per_tok = next ? 10 : q ? 8 : 2;
	cfg->norm_topk_prob = !q || next;
	cfg->moe_intermediate_size = next ? 512 : q ? 768 : cfg->intermediate_size;
	v = jr_get(root, k_experts);
	if (q && v != NULL && cJSON_IsNumber(v) && v->valuedouble == 0)
		cfg->num_experts = 0; /* num_experts 0: every layer a dense MLP */
	else if (size_key(c, root, k_experts, 1 << 12, 0, &cfg->num_experts) != 0)
		return -1;
	if (size_key(c, root, "num_experts_per_tok", 1 << 12, 0, &cfg->experts_per_tok) != 0 ||
	    (q && (bool_key(c, root, "norm_topk_prob", &cfg->norm_topk_prob) != 0 ||
	           size_key(c, root, "moe_intermediate_size", 1L << 20, 0, &cfg->moe_intermediate_size) != 0 ||
	           size_key(c, root, "decoder_sparse_step", 1 << 12, 0, &step) != 0)))
		return -1;
	if (cfg->num_experts > 0 && cfg->experts_per_tok > cfg->num_experts) {
		jr_path_key(c, "num_experts_per_tok");
		return jr_fail(c, _("%d is more than the experts (%s: %d)"), cfg->experts_per_tok, k_experts, cfg->num_experts);
	}
	for (int i = 0; i < cfg->num_layers; i++)
		cfg->sparse[i] = cfg->num_experts > 0 && (i + 1) % step == 0;
	if (q && (v = jr_enter(c, root, "mlp_only_layers", &old)) != NULL && !cJSON_IsNull(v)) {
		const cJSON *e;
		int k = 0;
		if (!cJSON_IsArray(v))
			return jr_fail(c, _("expected a list of layer numbers, got %s"), jr_got(v).s);
		cJSON_ArrayForEach(e, v) {
			size_t o2 = jr_path_index(c, k++);
			long long x;
			if (jr_read_whole(c, e, 0, cfg->num_layers - 1, _("a layer number from 0 to num_hidden_layers - 1"), &x) !=
			    0)
				return -1;
			cfg->sparse[x] = 0;
			jr_path_set(c, o2);
		}
	}
	jr_path_set(c, 0);
	return 0;
}

/* What attnviz does not compute yet, refused by the key and its value. */
static int refuse_unsupported(JrCtx *c, const cJSON *root, HfArch a)
{
	static const char *const moe[] = {"num_experts", "num_local_experts", "n_routed_experts", "moe_intermediate_size",
	                                  "num_experts_per_tok", NULL};
	const cJSON *v;
	size_t old;

	/* RoPE's scaling is read with the sizes (hfrope.c); GPT-2 has no RoPE to scale */
	if (a == HF_GPT2 && (v = jr_enter(c, root, "rope_scaling", &old)) != NULL && !cJSON_IsNull(v)) {
		const cJSON *t = cJSON_IsObject(v) ? jr_get(v, "rope_type") : NULL;
		if (t == NULL && cJSON_IsObject(v))
			t = jr_get(v, "type");
		if (t != NULL && cJSON_IsString(t))
			return jr_fail(c, _("{\"rope_type\": %s, …}: attnviz computes plain RoPE only (rope_scaling null) for "
			                    "now"), jr_got(t).s);
		return jr_fail(c, _("%s: attnviz computes plain RoPE only (rope_scaling null) for now"), jr_got(v).s);
	}
	jr_path_set(c, 0);
	/* Qwen2 and Qwen3 read their windows with the sizes (read_windows); LlamaModel and GPT-2 have none */
	if (a != HF_QWEN2 && a != HF_QWEN3 && (v = jr_enter(c, root, "use_sliding_window", &old)) != NULL &&
	    cJSON_IsTrue(v))
		return jr_fail(c, _("true: attnviz computes sliding windows of qwen2 and qwen3 models only"));
	jr_path_set(c, 0);
	/* Qwen3-MoE keeps a window only with use_sliding_window (refused above): its sliding_window is then ignored */
	if (a != HF_QWEN2 && a != HF_QWEN3 && a != HF_QWEN3_MOE && a != HF_GPT_OSS && !hf_gemma(a) &&
	    (v = jr_enter(c, root, "sliding_window", &old)) != NULL &&
	    !cJSON_IsNull(v) && !cJSON_IsFalse(v))
		return jr_fail(c, _("%s: attnviz computes sliding windows of qwen2 and qwen3 models only (sliding_window "
		                    "null)"), jr_got(v).s);
	jr_path_set(c, 0);
	if (a != HF_QWEN2 && a != HF_QWEN3 && a != HF_GPT_OSS && a != HF_QWEN3_NEXT && !hf_gemma(a) &&
	    (v = jr_enter(c, root, "layer_types", &old)) != NULL &&
	    cJSON_IsArray(v)) {
		const cJSON *e;
		int i = 0;
		cJSON_ArrayForEach(e, v) {
			size_t o2 = jr_path_index(c, i++);
			if (!cJSON_IsString(e) || strcmp(e->valuestring, "full_attention") != 0)
				return jr_fail(c, _("%s: attnviz computes \"full_attention\" layers only for now"), jr_got(e).s);
			jr_path_set(c, o2);
		}
	}
	jr_path_set(c, 0);
	for (int k = 0; moe[k]; k++)
		if (moe_key_read(a, moe[k]) || hf_deepseek(a))
			continue; /* read_moe's; DeepSeek-V3's experts begin at first_k_dense_replace (read_deepseek) */
		else if ((v = jr_enter(c, root, moe[k], &old)) != NULL && !cJSON_IsNull(v) &&
		    !(cJSON_IsNumber(v) && v->valuedouble == 0))
			return jr_fail(c, _("%s: attnviz computes the mixtures of experts of mixtral, qwen3_moe, gpt_oss and qwen3_next "
			                    "models only"),
			               jr_got(v).s);
		else
			jr_path_set(c, 0);
	if (a == HF_GPT2 && (v = jr_enter(c, root, "partial_rotary_factor", &old)) != NULL && !cJSON_IsNull(v) &&
	    !(cJSON_IsNumber(v) && v->valuedouble == 1))
		return jr_fail(c, _("%s: attnviz rotates whole heads only (partial_rotary_factor 1) for now"), jr_got(v).s);
	jr_path_set(c, 0);
	if ((v = jr_enter(c, root, "mlp_bias", &old)) != NULL && cJSON_IsTrue(v))
		return jr_fail(c, _("true: attnviz computes LLaMA MLPs without biases for now"));
	jr_path_set(c, 0);
	if (a == HF_GPT2) {
		/* GPT2Attention._attn: these change the scores' scale */
		if ((v = jr_enter(c, root, "scale_attn_weights", &old)) != NULL && cJSON_IsFalse(v))
			return jr_fail(c, _("false: attnviz scales GPT-2's scores by 1/sqrt(head_dim) for now"));
		jr_path_set(c, 0);
		if ((v = jr_enter(c, root, "scale_attn_by_inverse_layer_idx", &old)) != NULL && cJSON_IsTrue(v))
			return jr_fail(c, _("true: attnviz scales GPT-2's scores by 1/sqrt(head_dim) for now"));
		jr_path_set(c, 0);
		if ((v = jr_enter(c, root, "add_cross_attention", &old)) != NULL && cJSON_IsTrue(v))
			return jr_fail(c, _("true: attnviz computes GPT-2 as a decoder alone for now"));
		jr_path_set(c, 0);
	}
	return 0;
}

/*
 * Qwen2's and Qwen3's local and global layers (configuration_qwen2.py,
 * configuration_qwen3.py, __post_init__): sliding_window (default 4096) is
 * kept only when use_sliding_window; layer_types given, or else
 * "sliding_attention" for layers i ≥ max_window_layers (default 28) when a
 * window is kept. Qwen2Attention slides on a "sliding_attention" layer
 * (create_sliding_window_causal_mask), a "full_attention" layer is causal.
 */
static int read_layer_types(JrCtx *c, const cJSON *types, int window, const char *need, HfConfig *cfg);

static int read_windows(JrCtx *c, const cJSON *root, HfConfig *cfg)
{
	const cJSON *types = jr_get(root, "layer_types");
	int use = 0, window = 4096, max_window_layers = 28, any = 0, i = 0;

	if (bool_key(c, root, "use_sliding_window", &use) != 0)
		return -1;
	if (jr_get(root, "sliding_window") != NULL && cJSON_IsNull(jr_get(root, "sliding_window")))
		window = 0;
	if (size_key(c, root, "sliding_window", 1L << 24, 1, &window) != 0 ||
	    size_key(c, root, "max_window_layers", HF_MAX_LAYERS, 0, &max_window_layers) != 0)
		return -1;
	if (!use)
		window = 0;
	if (types == NULL || cJSON_IsNull(types)) {
		for (i = 0; i < cfg->num_layers; i++)
			any |= cfg->sliding[i] = window > 0 && i >= max_window_layers;
		cfg->sliding_window = any ? window : 0;
		return 0;
	}
	return read_layer_types(c, types, window, _("use_sliding_window true and sliding_window a size"), cfg);
}

/* layer_types (a list of num_hidden_layers "full_attention" or "sliding_attention") into cfg->sliding[], the
 * windows W: a sliding layer needs W > 0 (need: the keys that give it). */
static int read_layer_types(JrCtx *c, const cJSON *types, int window, const char *need, HfConfig *cfg)
{
	const cJSON *e;
	int any = 0, i = 0;
	size_t old = jr_path_key(c, "layer_types");

	if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != cfg->num_layers)
		return jr_leave(c, old, jr_fail(c, _("expected a list of %d layer types (num_hidden_layers), each "
		                                     "\"full_attention\" or \"sliding_attention\", got %s"),
		                                 cfg->num_layers, jr_got(types).s));
	cJSON_ArrayForEach(e, types) {
		const size_t o2 = jr_path_index(c, i++);
		if (cJSON_IsString(e) && strcmp(e->valuestring, "full_attention") == 0)
			cfg->sliding[i - 1] = 0;
		else if (cJSON_IsString(e) && strcmp(e->valuestring, "sliding_attention") == 0)
			any = cfg->sliding[i - 1] = 1;
		else
			return jr_leave(c, old, jr_fail(c, _("%s: attnviz computes \"full_attention\" and "
			                                     "\"sliding_attention\" layers"), jr_got(e).s));
		if (cfg->sliding[i - 1] && window == 0)
			return jr_leave(c, old, jr_fail(c, _("a \"sliding_attention\" layer needs a window: %s"), need));
		jr_path_set(c, o2);
	}
	cfg->sliding_window = any ? window : 0;
	return jr_leave(c, old, 0);
}

/* ---- Gemma 2 and Gemma 3 (gemma2, gemma3_text) ---- */

/* A soft cap: absent keeps *out; null or 0 (a compare's) none; else a number > 0. */
static int cap_key(JrCtx *c, const cJSON *root, const char *key, double *out)
{
	size_t old;
	const cJSON *v = jr_enter(c, root, key, &old);

	if (v == NULL)
		return 0;
	if (cJSON_IsNull(v) || (cJSON_IsNumber(v) && v->valuedouble == 0))
		*out = 0;
	else if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble > 0)
		*out = v->valuedouble;
	else
		return jr_leave(c, old, jr_fail(c, _("expected a cap c > 0 (c\u00b7tanh(x/c)) or null, got %s"), jr_got(v).s));
	return jr_leave(c, old, 0);
}

/* A number > 0 (absent keeps *out). */
static int positive_key(JrCtx *c, const cJSON *root, const char *key, double *out)
{
	if (jr_key_finite(c, root, key, out) != 0)
		return -1;
	if (*out > 0)
		return 0;
	jr_path_key(c, key);
	return jr_fail(c, _("expected a number above 0, got %g"), *out);
}

/*
 * Gemma2Config's and Gemma3TextConfig's own keys (configuration_gemma2.py,
 * configuration_gemma3.py): query_pre_attn_scalar (256), the caps (Gemma 2:
 * attn_logit_softcapping 50, final_logit_softcapping 30; Gemma 3: None),
 * sliding_window (4096) on the layers layer_types calls "sliding_attention",
 * or else on layers i with (i + 1) % p != 0, p = 2 (Gemma 2: every other layer,
 * from layer 0) or Gemma 3's sliding_window_pattern (6: five local, one
 * global); Gemma 3's rope_local_base_freq (10000), the local layers' RoPE
 * base. Gemma 3's rope_scaling scales the global layers' RoPE alone (the
 * local ones turn by rope_local_base_freq unscaled), and rope_parameters per
 * layer type gives each kind its own theta and scaling (hfrope.c): the
 * importer gives the local layers theirs (LayerOwn.rope_base, rope_scaling).
 */
static int read_gemma(JrCtx *c, const cJSON *root, HfConfig *cfg)
{
	const int g3 = cfg->arch == HF_GEMMA3;
	const cJSON *types = jr_get(root, "layer_types");
	int window = 4096, pattern = g3 ? 6 : 2;

	cfg->query_pre_attn_scalar = 256;
	cfg->attn_softcap = g3 ? 0 : 50.0;
	cfg->final_softcap = g3 ? 0 : 30.0;
	cfg->rope_local_base = g3 ? 10000.0 : cfg->rope_theta;
	if (positive_key(c, root, "query_pre_attn_scalar", &cfg->query_pre_attn_scalar) != 0 ||
	    cap_key(c, root, "attn_logit_softcapping", &cfg->attn_softcap) != 0 ||
	    cap_key(c, root, "final_logit_softcapping", &cfg->final_softcap) != 0 ||
	    (g3 && positive_key(c, root, "rope_local_base_freq", &cfg->rope_local_base) != 0))
		return -1;
	if (g3 && cfg->rope_local_theta > 0) /* rope_parameters' sliding_attention.rope_theta (hfrope.c) */
		cfg->rope_local_base = cfg->rope_local_theta;
	if (jr_get(root, "sliding_window") != NULL && cJSON_IsNull(jr_get(root, "sliding_window")))
		window = 0;
	if (size_key(c, root, "sliding_window", 1L << 24, 1, &window) != 0 ||
	    (g3 && size_key(c, root, "sliding_window_pattern", HF_MAX_LAYERS, 0, &pattern) != 0))
		return -1;
	if (types != NULL && !cJSON_IsNull(types)) {
		if (read_layer_types(c, types, window, _("sliding_window a size"), cfg) != 0)
			return -1;
	} else {
		int any = 0;
		for (int i = 0; i < cfg->num_layers; i++)
			any |= cfg->sliding[i] = (i + 1) % pattern != 0;
		if (any && window == 0) {
			jr_path_key(c, "sliding_window");
			return jr_fail(c, _("null, but Gemma's layers i with (i + 1) %% %d != 0 slide: give a size"), pattern);
		}
		cfg->sliding_window = any ? window : 0;
	}
	return 0;
}

/* ---- SmolLM3 (issue 23): what its config says beyond LLaMA's ---- */

/* rope_theta when config.json leaves it out: the config class's default (SmolLM3Config.default_theta). */
static double arch_theta(HfArch a)
{
	return a == HF_MIXTRAL || a == HF_GEMMA3 ? 1e6 : a == HF_SMOLLM3 ? 2000000.0 : a == HF_GPT_OSS ? 150000.0 : 10000.0;
}

/*
 * SmolLM3's NoPE layers (SmolLM3Config.__post_init__): no_rope_layers, a list
 * of at least num_hidden_layers numbers, 1 where layer i turns q and k and 0
 * where it does not (SmolLM3Attention: self.use_rope = no_rope_layers[i]);
 * without it, int((i + 1) % no_rope_layer_interval != 0): every
 * no_rope_layer_interval-th layer (default 4) is NoPE.
 */
static int read_smollm3(JrCtx *c, const cJSON *root, HfConfig *cfg)
{
	const cJSON *v = jr_get(root, "no_rope_layers"), *e;
	int every = 4, i = 0;
	size_t old;

	if (v == NULL || cJSON_IsNull(v)) {
		if (size_key(c, root, "no_rope_layer_interval", HF_MAX_LAYERS, 0, &every) != 0)
			return -1;
		for (i = 0; i < cfg->num_layers; i++)
			cfg->nope[i] = (i + 1) % every == 0;
		return 0;
	}
	old = jr_path_key(c, "no_rope_layers");
	if (!cJSON_IsArray(v))
		return jr_leave(c, old, jr_fail(c, _("expected a list of at least %d numbers (num_hidden_layers), 1 for a "
		                                     "layer with RoPE and 0 for a NoPE layer, got %s"),
		                                 cfg->num_layers, jr_got(v).s));
	if (cJSON_GetArraySize(v) < cfg->num_layers)
		return jr_leave(c, old, jr_fail(c, _("%d numbers for %d layers (num_hidden_layers): each layer needs its 1 "
		                                     "(RoPE) or 0 (NoPE)"),
		                                 cJSON_GetArraySize(v), cfg->num_layers));
	cJSON_ArrayForEach(e, v) {
		const size_t o2 = jr_path_index(c, i);
		long long x;
		if (jr_read_whole(c, e, 0, 1, _("1 (the layer turns q and k) or 0 (a NoPE layer)"), &x) != 0)
			return -1;
		if (i < cfg->num_layers)
			cfg->nope[i] = x == 0;
		i++;
		jr_path_set(c, o2);
	}
	return jr_leave(c, old, 0);
}

/* ---- gpt-oss (issue 23): its windows, sinks, YaRN by default and its mixture ---- */

/*
 * GptOssConfig.__post_init__ and GptOssExperts: layer_types given (each
 * "sliding_attention" or "full_attention"), else "sliding_attention" on
 * layers i with (i + 1) % 2 (0, 2, 4, …) and "full_attention" on the others,
 * sliding_window 128; rope_scaling / rope_parameters absent: YaRN, factor 32,
 * beta_fast 32, beta_slow 1, truncate false, original_max_position_embeddings
 * 4096; num_local_experts (or num_experts, its attribute_map name) 128,
 * num_experts_per_tok 4, each expert intermediate_size wide, every layer
 * sparse; swiglu_alpha 1.702 and swiglu_limit 7.0. A quantised checkpoint
 * (quantization_config, MXFP4's experts) is refused: its *_blocks and
 * *_scales are not numbers attnviz reads.
 */
static int read_gptoss(JrCtx *c, const cJSON *root, HfConfig *cfg)
{
	const cJSON *types = jr_get(root, "layer_types"), *v, *e;
	const char *k_experts = jr_get(root, "num_local_experts") == NULL && jr_get(root, "num_experts") != NULL
	                                ? "num_experts"
	                                : "num_local_experts";
	int window = 128, i = 0;
	size_t old;

	if ((v = jr_enter(c, root, "quantization_config", &old)) != NULL && !cJSON_IsNull(v)) {
		const cJSON *m = cJSON_IsObject(v) ? jr_get(v, "quant_method") : NULL;
		return jr_leave(c, old, jr_fail(c, _("%s: a quantised checkpoint (MXFP4's experts are stored as *_blocks and "
		                                     "*_scales): attnviz reads BF16, F16 and F32 weights; use the BF16 "
		                                     "checkpoint, or dequantise it first"),
		                                 m != NULL ? jr_got(m).s : jr_got(v).s));
	}
	jr_path_set(c, 0); /* the keys are config.json's own */
	if (jr_get(root, "sliding_window") != NULL && cJSON_IsNull(jr_get(root, "sliding_window")))
		window = 0;
	if (size_key(c, root, "sliding_window", 1L << 24, 1, &window) != 0)
		return -1;
	if (types == NULL || cJSON_IsNull(types)) {
		for (i = 0; i < cfg->num_layers; i++)
			cfg->sliding[i] = (i + 1) % 2 != 0;
	} else {
		old = jr_path_key(c, "layer_types");
		if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != cfg->num_layers)
			return jr_leave(c, old, jr_fail(c, _("expected a list of %d layer types (num_hidden_layers), each "
			                                     "\"full_attention\" or \"sliding_attention\", got %s"),
			                                 cfg->num_layers, jr_got(types).s));
		cJSON_ArrayForEach(e, types) {
			const size_t o2 = jr_path_index(c, i++);
			if (!cJSON_IsString(e) || (strcmp(e->valuestring, "full_attention") != 0 &&
			                           strcmp(e->valuestring, "sliding_attention") != 0))
				return jr_leave(c, old, jr_fail(c, _("%s: attnviz computes \"full_attention\" and "
				                                     "\"sliding_attention\" layers"), jr_got(e).s));
			cfg->sliding[i - 1] = strcmp(e->valuestring, "sliding_attention") == 0;
			jr_path_set(c, o2);
		}
		jr_path_set(c, old);
	}
	for (i = 0; i < cfg->num_layers; i++)
		if (cfg->sliding[i] && window == 0) {
			jr_path_key(c, "sliding_window");
			return jr_fail(c, _("a \"sliding_attention\" layer needs a window: sliding_window a size"));
		}
	cfg->sliding_window = window;
	if (jr_get(root, "rope_scaling") == NULL && jr_get(root, "rope_parameters") == NULL) {
		RopeScaling *s = &cfg->rope_scaling;
		memset(s, 0, sizeof *s);
		s->type = ROPE_SCALE_YARN;
		s->factor = 32;
		s->beta_fast = 32;
		s->beta_slow = 1;
		s->orig_max = 4096;
		s->truncate = 0;
	}
	cfg->num_experts = 128;
	cfg->experts_per_tok = 4;
	cfg->swiglu_alpha = 1.702;
	cfg->swiglu_limit = 7.0;
	if (size_key(c, root, k_experts, 1 << 12, 0, &cfg->num_experts) != 0 ||
	    size_key(c, root, "num_experts_per_tok", 1 << 12, 0, &cfg->experts_per_tok) != 0 ||
	    jr_key_finite(c, root, "swiglu_alpha", &cfg->swiglu_alpha) != 0 ||
	    jr_key_above(c, root, "swiglu_limit", 0, 0, 0, &cfg->swiglu_limit) != 0)
		return -1;
	if (cfg->experts_per_tok > cfg->num_experts) {
		jr_path_key(c, "num_experts_per_tok");
		return jr_fail(c, _("%d is more than the experts (%s: %d)"), cfg->experts_per_tok, k_experts, cfg->num_experts);
	}
	cfg->gptoss = 1;
	cfg->norm_topk_prob = 0;
	cfg->moe_intermediate_size = cfg->intermediate_size;
	for (i = 0; i < cfg->num_layers; i++)
		cfg->sparse[i] = 1;
	return 0;
}

/* What an architecture of this block reads of its own, after the sizes and RoPE. */
/* ---- Qwen3-Next (qwen3_next, issue 24): which layers are Gated DeltaNet, their sizes, the shared expert ---- */

/*
 * Qwen3NextConfig: linear_conv_kernel_dim 4, linear_key_head_dim 128, linear_value_head_dim 128,
 * linear_num_key_heads 16, linear_num_value_heads 32, shared_expert_intermediate_size 512; layer_types given,
 * else __post_init__'s `"linear_attention" if bool((i + 1) % interval_pattern) else "full_attention"` with
 * interval_pattern = full_attention_interval (4). Qwen3NextGatedDeltaNet repeats each key head's q and k over
 * num_v_heads // num_k_heads value heads (fix_query_key_value_ordering reshapes by it), so the value heads are a
 * multiple of the key heads.
 */
static int read_qwen3next(JrCtx *c, const cJSON *root, HfConfig *cfg)
{
	const cJSON *types = jr_get(root, "layer_types"), *e;
	int interval = 4, i = 0;
	size_t old;

	cfg->lin_conv = 4;
	cfg->lin_k_dim = cfg->lin_v_dim = 128;
	cfg->lin_k_heads = 16;
	cfg->lin_v_heads = 32;
	cfg->shared_expert_ff = 512;
	if (size_key(c, root, "linear_conv_kernel_dim", 64, 0, &cfg->lin_conv) != 0 ||
	    size_key(c, root, "linear_key_head_dim", 1 << 12, 0, &cfg->lin_k_dim) != 0 ||
	    size_key(c, root, "linear_value_head_dim", 1 << 12, 0, &cfg->lin_v_dim) != 0 ||
	    size_key(c, root, "linear_num_key_heads", 1024, 0, &cfg->lin_k_heads) != 0 ||
	    size_key(c, root, "linear_num_value_heads", 4096, 0, &cfg->lin_v_heads) != 0 ||
	    size_key(c, root, "shared_expert_intermediate_size", 1L << 20, 0, &cfg->shared_expert_ff) != 0)
		return -1;
	if (cfg->lin_v_heads % cfg->lin_k_heads != 0) {
		jr_path_key(c, "linear_num_value_heads");
		return jr_fail(c, _("%d is not a multiple of linear_num_key_heads (%d): each key head serves the same number of "
		                    "value heads"), cfg->lin_v_heads, cfg->lin_k_heads);
	}
	if (types == NULL || cJSON_IsNull(types)) {
		if (size_key(c, root, "full_attention_interval", HF_MAX_LAYERS, 0, &interval) != 0)
			return -1;
		for (i = 0; i < cfg->num_layers; i++)
			cfg->linear[i] = (i + 1) % interval != 0;
		return 0;
	}
	old = jr_path_key(c, "layer_types");
	if (!cJSON_IsArray(types) || cJSON_GetArraySize(types) != cfg->num_layers)
		return jr_leave(c, old, jr_fail(c, _("expected a list of %d layer types (num_hidden_layers), each "
		                                     "\"linear_attention\" or \"full_attention\", got %s"),
		                                 cfg->num_layers, jr_got(types).s));
	cJSON_ArrayForEach(e, types) {
		const size_t o2 = jr_path_index(c, i++);
		if (!cJSON_IsString(e) ||
		    (strcmp(e->valuestring, "linear_attention") != 0 && strcmp(e->valuestring, "full_attention") != 0))
			return jr_leave(c, old, jr_fail(c, _("%s: a qwen3_next layer is \"linear_attention\" (Gated DeltaNet) or "
			                                     "\"full_attention\""), jr_got(e).s));
		cfg->linear[i - 1] = e->valuestring[0] == 'l';
		jr_path_set(c, o2);
	}
	return jr_leave(c, old, 0);
}

/* ---- end of Qwen3-Next's block ---- */

static int read_arch_own(JrCtx *c, const cJSON *root, HfConfig *cfg)
{
	return cfg->arch == HF_SMOLLM3 ? read_smollm3(c, root, cfg) : cfg->arch == HF_GPT_OSS ? read_gptoss(c, root, cfg)
	       : cfg->arch == HF_QWEN3_NEXT ? read_qwen3next(c, root, cfg) : 0;
}

/* ---- end of SmolLM3's and gpt-oss's block ---- */

static int read_numbers(JrCtx *c, const cJSON *root, HfConfig *cfg)
{
	const struct Arch *A = &arches[cfg->arch];
	const char *k_hidden = key_of(root, cfg->arch, A->k_hidden), *k_heads = key_of(root, cfg->arch, A->k_heads);
	const cJSON *v;
	size_t old;
	int inner = (int)A->inner, kv = -1, head_dim = (int)A->head_dim;

	cfg->vocab_size = (int)A->vocab;
	cfg->hidden_size = (int)A->hidden;
	cfg->num_layers = (int)A->layers;
	cfg->num_heads = (int)A->heads;
	cfg->max_positions = (int)A->positions;
	cfg->norm_eps = A->eps;
	cfg->rope_theta = !A->rope ? 0 : arch_theta(cfg->arch);
	cfg->tie_word_embeddings = A->tie;
	cfg->qkv_bias = A->qkv_bias;
	cfg->o_bias = A->o_bias;
	cfg->qk_norm = A->qk_norm;
	if (size_key(c, root, "vocab_size", 1L << 24, 0, &cfg->vocab_size) != 0 ||
	    size_key(c, root, k_hidden, 1L << 16, 0, &cfg->hidden_size) != 0 ||
	    size_key(c, root, key_of(root, cfg->arch, A->k_layers), 1024, 0, &cfg->num_layers) != 0 ||
	    size_key(c, root, k_heads, 1024, 0, &cfg->num_heads) != 0 ||
	    size_key(c, root, key_of(root, cfg->arch, A->k_positions), 1L << 24, 0, &cfg->max_positions) != 0 ||
	    size_key(c, root, A->k_inner, 1L << 20, 1, &inner) != 0)
		return -1;
	/* GPT2Block: inner_dim = n_inner if not None else 4 * hidden_size */
	cfg->intermediate_size = inner > 0 ? inner : 4 * cfg->hidden_size;
	if (cfg->arch == HF_GPT2) {
		if (cfg->hidden_size % cfg->num_heads != 0) {
			jr_path_key(c, k_heads);
			return jr_fail(c, _("%d does not divide %s (%d)"), cfg->num_heads, k_hidden, cfg->hidden_size);
		}
		cfg->num_kv_heads = cfg->num_heads;
		cfg->head_dim = cfg->hidden_size / cfg->num_heads;
	} else {
		/* num_key_value_heads: absent, the class's default; null, num_attention_heads */
		v = jr_get(root, "num_key_value_heads");
		kv = v == NULL && A->kv_heads ? (int)A->kv_heads : cfg->num_heads;
		if (size_key(c, root, "num_key_value_heads", 1024, 1, &kv) != 0)
			return -1;
		if (cfg->num_heads % kv != 0) {
			jr_path_key(c, "num_key_value_heads");
			return jr_fail(c, _("%d does not divide num_attention_heads (%d)"), kv, cfg->num_heads);
		}
		cfg->num_kv_heads = kv;
		/* head_dim: given, else (null or absent but Qwen3's 128) hidden_size // num_attention_heads */
		v = jr_get(root, "head_dim");
		if (v != NULL && cJSON_IsNull(v))
			head_dim = 0;
		if (size_key(c, root, "head_dim", 1 << 12, 1, &head_dim) != 0)
			return -1;
		cfg->head_dim = head_dim > 0 ? head_dim : cfg->hidden_size / cfg->num_heads;
		if (cfg->head_dim % 2 != 0 || cfg->head_dim == 0) {
			jr_path_key(c, jr_get(root, "head_dim") ? "head_dim" : k_heads);
			return jr_fail(c, _("RoPE turns pairs of numbers, so each head's size must be even, but it is %d"),
			               cfg->head_dim);
		}
		if (jr_key_finite(c, root, "rope_theta", &cfg->rope_theta) != 0)
			return -1;
		if (!(cfg->rope_theta > 0)) {
			jr_path_key(c, "rope_theta");
			return jr_fail(c, _("expected a base above 0, got %g"), cfg->rope_theta);
		}
		if (hfrope_read(c, root, cfg) != 0 ||
		    ((cfg->arch == HF_QWEN2 || cfg->arch == HF_QWEN3) && read_windows(c, root, cfg) != 0) ||
		    (hf_gemma(cfg->arch) && read_gemma(c, root, cfg) != 0) || read_arch_own(c, root, cfg) != 0)
			return -1;
		/* attention_bias: LlamaConfig and Qwen3Config (q, k, v and o); Qwen2's biases are fixed */
		if (cfg->arch != HF_QWEN2) {
			int ab = A->qkv_bias; /* the class's default (GptOssConfig: True) */
			if (bool_key(c, root, "attention_bias", &ab) != 0)
				return -1;
			cfg->qkv_bias = cfg->o_bias = ab;
		}
	}
	if (jr_key_finite(c, root, A->k_eps, &cfg->norm_eps) != 0)
		return -1;
	if (!(cfg->norm_eps >= 0 && cfg->norm_eps < 1)) {
		jr_path_key(c, A->k_eps);
		return jr_fail(c, _("expected a small number from 0 to 1, got %g"), cfg->norm_eps);
	}
	if (bool_key(c, root, "tie_word_embeddings", &cfg->tie_word_embeddings) != 0)
		return -1;

	/* the activation */
	int act = 0;
	v = jr_enter(c, root, A->k_act, &old);
	if (v != NULL) {
		for (act = 0; A->acts[act]; act++)
			if (cJSON_IsString(v) && strcmp(v->valuestring, A->acts[act]) == 0)
				break;
		if (A->acts[act] == NULL) {
			StrBuf list = {0};
			for (int k = 0; A->acts[k]; k++)
				strbuf_printf(&list, "%s\"%s\"", k == 0 ? "" : A->acts[k + 1] ? ", " : _(" or "), A->acts[k]);
			jr_fail(c, _("%s: attnviz computes %s models with %s"), jr_got(v).s, cfg->model_type, list.s ? list.s : "?");
			free(list.s);
			return -1;
		}
		jr_path_set(c, old);
	}
	cfg->act = A->act_kinds[act];
	if (read_moe(c, root, cfg) != 0)
		return -1;
	snprintf(cfg->act_name, sizeof cfg->act_name, "%s", A->acts[act]);

	/* token ids */
	long long bos[HF_MAX_EOS];
	int n = ids_key(c, root, "bos_token_id", bos, HF_MAX_EOS);
	if (n == -1)
		return -1;
	cfg->bos_token_id = n == -2 ? A->bos : n > 0 ? bos[0] : -1;
	n = ids_key(c, root, "eos_token_id", cfg->eos_token_id, HF_MAX_EOS);
	if (n == -1)
		return -1;
	if (n == -2) {
		cfg->n_eos = A->eos >= 0;
		cfg->eos_token_id[0] = A->eos;
	} else {
		cfg->n_eos = n;
	}
	return 0;
}

/* ---- DeepSeek-V3 (deepseek_v3): multi-head latent attention, dense and MoE layers ---- */

/* key: a string that must be `want` (absent: it is); a refusal naming what attnviz computes otherwise. */
static int deepseek_word(JrCtx *c, const cJSON *root, const char *key, const char *want)
{
	size_t old;
	const cJSON *v = jr_enter(c, root, key, &old);

	if (v == NULL || (cJSON_IsString(v) && strcmp(v->valuestring, want) == 0))
		return v == NULL ? 0 : jr_leave(c, old, 0);
	/* want is this file's own word: shown whole; the file's value through jr_got */
	return jr_leave(c, old, jr_fail(c, _("%s: attnviz computes DeepSeek-V3's router with %s \"%s\" only"),
	                                 jr_got(v).s, key, want));
}

/*
 * DeepseekV3Config's mixture of experts (n_routed_experts 256,
 * num_experts_per_tok 8, n_group 8, topk_group 4, norm_topk_prob True,
 * routed_scaling_factor 2.5, moe_intermediate_size 2048, n_shared_experts 1)
 * and the checkpoint's own keys (scoring_func "sigmoid", topk_method
 * "noaux_tc", moe_layer_freq 1). Layer i is a DeepseekV3MoE when
 * n_routed_experts is not null, i ≥ first_k_dense_replace and i %
 * moe_layer_freq == 0 (DeepSeek-V3's modeling_deepseek.py,
 * DeepseekV3DecoderLayer; transformers' modeling_deepseek_v3.py tests the
 * first two only: the same layers with moe_layer_freq 1, every released
 * checkpoint's). The router's settings are checked as a lesson's are
 * (moe_router_fault), each at its key.
 */
static int read_deepseek_moe(JrCtx *c, const cJSON *root, HfConfig *cfg, long long dense)
{
	static const char *const fault_key[][2] = { { "experts", "n_routed_experts" }, { "top_k", "num_experts_per_tok" },
		                                    { "n_group", "n_group" }, { "topk_group", "topk_group" },
		                                    { "routed_scaling_factor", "routed_scaling_factor" } };
	long long freq = 1;
	int shared = 1, any = 0;
	const cJSON *v;
	MoeParams p = { 0 };
	char why[256];
	const char *bad;

	cfg->num_experts = 256;
	cfg->experts_per_tok = 8;
	cfg->n_group = 8;
	cfg->topk_group = 4;
	cfg->norm_topk_prob = 1;
	cfg->routed_scaling = 2.5;
	cfg->moe_intermediate_size = 2048;
	if ((v = jr_get(root, "n_routed_experts")) != NULL && cJSON_IsNull(v))
		cfg->num_experts = 0; /* null: every layer a DeepseekV3MLP */
	if (size_key(c, root, "n_routed_experts", 1 << 12, 1, &cfg->num_experts) != 0 ||
	    size_key(c, root, "num_experts_per_tok", 1 << 12, 0, &cfg->experts_per_tok) != 0 ||
	    size_key(c, root, "n_group", 1 << 12, 0, &cfg->n_group) != 0 ||
	    size_key(c, root, "topk_group", 1 << 12, 0, &cfg->topk_group) != 0 ||
	    size_key(c, root, "moe_intermediate_size", 1L << 20, 0, &cfg->moe_intermediate_size) != 0 ||
	    bool_key(c, root, "norm_topk_prob", &cfg->norm_topk_prob) != 0 ||
	    jr_key_above(c, root, "routed_scaling_factor", 0.0, 0, 0, &cfg->routed_scaling) != 0 ||
	    (jr_get(root, "moe_layer_freq") != NULL &&
	     jr_key_whole(c, root, "moe_layer_freq", 1, 1 << 12, _("a layer count from 1 to 4096"), &freq) != 0) ||
	    deepseek_word(c, root, "scoring_func", "sigmoid") != 0 || deepseek_word(c, root, "topk_method", "noaux_tc") != 0)
		return -1;
	if ((v = jr_get(root, "n_shared_experts")) != NULL && cJSON_IsNumber(v) && v->valuedouble == 0)
		shared = 0; /* none: DeepseekV3MLP of width 0 adds nothing */
	else if (size_key(c, root, "n_shared_experts", 1 << 12, 0, &shared) != 0)
		return -1;
	if ((long long)shared * cfg->moe_intermediate_size > 1L << 20) {
		jr_path_key(c, "n_shared_experts");
		return jr_fail(c, _("%d shared experts of moe_intermediate_size %d are wider than 1048576"), shared,
		               cfg->moe_intermediate_size);
	}
	cfg->shared_ff = shared * cfg->moe_intermediate_size;
	for (int i = 0; i < cfg->num_layers; i++)
		any |= cfg->sparse[i] = cfg->num_experts > 0 && i >= dense && i % freq == 0;
	if (!any)
		return 0; /* no DeepseekV3MoE is made: its router's settings are not used */
	p.experts = cfg->num_experts;
	p.top_k = cfg->experts_per_tok;
	p.scoring = MOE_SCORE_SIGMOID;
	p.n_group = cfg->n_group;
	p.topk_group = cfg->topk_group;
	p.routed_scaling = cfg->routed_scaling;
	if ((bad = moe_router_fault(&p, why, sizeof why)) != NULL) {
		for (size_t k = 0; k < sizeof fault_key / sizeof fault_key[0]; k++)
			if (strcmp(bad, fault_key[k][0]) == 0)
				bad = fault_key[k][1];
		jr_path_key(c, bad);
		return jr_fail(c, "%s", why);
	}
	return 0;
}

/*
 * DeepseekV3Config's latent attention (q_lora_rank 1536 or null, kv_lora_rank
 * 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128,
 * rope_interleave True, first_k_dense_replace 3), its mixture of experts
 * (read_deepseek_moe), and what attnviz refuses of it: attention_bias (MLA
 * here has no biases); a rope_scaling other than YaRN (DeepSeek-V3's own,
 * with mscale and mscale_all_dim).
 */
static int read_deepseek(JrCtx *c, const cJSON *root, HfConfig *cfg)
{
	int interleave = 1;
	long long dense = 3;
	const cJSON *v;

	cfg->q_lora_rank = 1536;
	cfg->kv_lora_rank = 512;
	cfg->qk_nope_head_dim = 128;
	cfg->qk_rope_head_dim = 64;
	cfg->v_head_dim = 128;
	if ((v = jr_get(root, "q_lora_rank")) != NULL && cJSON_IsNull(v))
		cfg->q_lora_rank = 0; /* null: the query is q_proj(x) */
	if (size_key(c, root, "q_lora_rank", 1 << 16, 1, &cfg->q_lora_rank) != 0 ||
	    size_key(c, root, "kv_lora_rank", 1 << 16, 0, &cfg->kv_lora_rank) != 0 ||
	    size_key(c, root, "qk_nope_head_dim", 1 << 12, 0, &cfg->qk_nope_head_dim) != 0 ||
	    size_key(c, root, "qk_rope_head_dim", 1 << 12, 0, &cfg->qk_rope_head_dim) != 0 ||
	    size_key(c, root, "v_head_dim", 1 << 12, 0, &cfg->v_head_dim) != 0 ||
	    bool_key(c, root, "rope_interleave", &interleave) != 0)
		return -1;
	if (jr_get(root, "first_k_dense_replace") != NULL &&
	    jr_key_whole(c, root, "first_k_dense_replace", 0, 1 << 12, _("a layer count from 0 to 4096"), &dense) != 0)
		return -1;
	if (cfg->qk_rope_head_dim % 2 != 0) {
		jr_path_key(c, "qk_rope_head_dim");
		return jr_fail(c, _("RoPE turns pairs of numbers, so qk_rope_head_dim must be even, but it is %d"),
		               cfg->qk_rope_head_dim);
	}
	if (!interleave) {
		jr_path_key(c, "rope_interleave");
		return jr_fail(c, _("false: attnviz turns DeepSeek's q_pe and k_pe in interleaved pairs only (rope_interleave true)"));
	}
	if (read_deepseek_moe(c, root, cfg, dense) != 0)
		return -1;
	if (cfg->qkv_bias) {
		jr_path_key(c, "attention_bias");
		return jr_fail(c, _("true: attnviz computes DeepSeek's latent attention without biases"));
	}
	if (cfg->rope_scaling.type != ROPE_SCALE_NONE && cfg->rope_scaling.type != ROPE_SCALE_YARN) {
		jr_path_key(c, jr_get(root, "rope_scaling") != NULL ? "rope_scaling" : "rope_parameters");
		return jr_fail(c, _("attnviz turns DeepSeek's q_pe and k_pe with plain RoPE or YaRN only for now"));
	}
	cfg->num_kv_heads = cfg->num_heads; /* kv_b_proj unfolds every head's key and value */
	cfg->head_dim = cfg->qk_nope_head_dim + cfg->qk_rope_head_dim;
	return 0;
}

/*
 * DeepSeek-V3.2 (deepseek_v32): DeepSeek-V3's keys (read_deepseek) and its
 * lightning indexer's, index_n_heads, index_head_dim, index_topk (defaults
 * 64, 128, 2048: config_671B_v3.2.json); what attnviz refuses of it: no
 * q_lora_rank (the indexer's q reads the query latent), an index_head_dim
 * below qk_rope_head_dim (RoPE turns its first qk_rope_head_dim columns), and a
 * rope_scaling (the indexer turns by plain RoPE here).
 */
static int read_indexer(JrCtx *c, const cJSON *root, HfConfig *cfg)
{
	cfg->index_n_heads = 64;
	cfg->index_head_dim = 128;
	cfg->index_topk = 2048;
	if (size_key(c, root, "index_n_heads", 1 << 12, 0, &cfg->index_n_heads) != 0 ||
	    size_key(c, root, "index_head_dim", 1 << 12, 0, &cfg->index_head_dim) != 0 ||
	    size_key(c, root, "index_topk", 1 << 20, 0, &cfg->index_topk) != 0)
		return -1;
	if (cfg->q_lora_rank == 0) {
		jr_path_key(c, "q_lora_rank");
		return jr_fail(c, "%s", _("null: DeepSeek-V3.2's indexer reads the query latent (q_a_layernorm's output), so attnviz "
		                          "needs a q_lora_rank"));
	}
	if (cfg->index_head_dim < cfg->qk_rope_head_dim) {
		jr_path_key(c, "index_head_dim");
		return jr_fail(c, _("%d: smaller than qk_rope_head_dim (%d), the columns of the indexer's q and k that RoPE turns"),
		               cfg->index_head_dim, cfg->qk_rope_head_dim);
	}
	if (cfg->rope_scaling.type != ROPE_SCALE_NONE) {
		jr_path_key(c, jr_get(root, "rope_scaling") != NULL ? "rope_scaling" : "rope_parameters");
		return jr_fail(c, "%s", _("attnviz computes deepseek_v32's indexer with plain RoPE only for now"));
	}
	return 0;
}

int hfconfig_read(const char *dir, HfConfig *cfg, char **err)
{
	char *path = str_printf("%s/config.json", dir), *name = NULL, *text = NULL;
	cJSON *root = NULL;
	size_t len;
	JrCtx c;
	int r = -1;

	*err = NULL;
	memset(cfg, 0, sizeof *cfg);
	if (path == NULL || (name = text_escape(path, "")) == NULL)
		goto out;
	if ((text = fileio_read_all(path, HF_MAX_CONFIG, &len, err)) == NULL)
		goto out;
	if ((root = jr_parse(name, text, len, 1, "model config", "{\"model_type\": \"llama\", \"hidden_size\": 576, …}",
	                     err)) == NULL)
		goto out;
	jr_ctx_init(&c, name, NULL);
	if (!cJSON_IsObject(root))
		jr_fail(&c, _("expected an object of settings ({\"model_type\": …}), got %s"), jr_got(root).s);
	else if (read_arch(&c, root, cfg) == 0 && refuse_unsupported(&c, root, cfg->arch) == 0 &&
	         read_numbers(&c, root, cfg) == 0 && hf_deepseek(cfg->arch) && read_deepseek(&c, root, cfg) == 0 &&
	         cfg->arch == HF_DEEPSEEK_V32)
		read_indexer(&c, root, cfg);
	*err = c.err;
	r = c.err ? -1 : 0;
out:
	if (r != 0 && *err == NULL)
		*err = strdup(_("out of memory"));
	cJSON_Delete(root);
	free(text);
	free(name);
	free(path);
	return r;
}

const char *hfconfig_layers_key(HfArch a)
{
	return arches[a].k_layers;
}
