/*
 * hfconfig.h: a Hugging Face model folder's description, before a number is
 * computed: config.json read into plain numbers (with the defaults
 * transformers' config classes give what a file leaves out), and the weights
 * found across one model.safetensors or the shards that
 * model.safetensors.index.json's weight_map names.
 *
 * What attnviz does not compute yet is refused here, by the key and its
 * value: an unknown model_type, a rope_type other than default, linear,
 * dynamic, yarn and llama3 (and any with deepseek_v3), sliding windows outside Qwen2 and Qwen3,
 * mixtures of experts outside Mixtral, Qwen3-MoE, DeepSeek-V3 and gpt-oss, an activation other than the architecture's own,
 * a quantised gpt-oss (MXFP4).
 */
#ifndef ATTNVIZ_HFCONFIG_H
#define ATTNVIZ_HFCONFIG_H

#include "base/matrix.h"
#include "model/model.h"
#include "weights/safetensors.h"

typedef enum HfArch { HF_GPT2, HF_LLAMA, HF_QWEN2, HF_QWEN3, HF_OLMO2, HF_MIXTRAL, HF_QWEN3_MOE, HF_DEEPSEEK_V3,
	HF_GEMMA2, HF_GEMMA3, /* gemma2, gemma3_text */
	HF_SMOLLM3, HF_GPT_OSS, /* issue 23: SmolLM3's NoPE layers, gpt-oss (hfconfig.c's own block) */
	HF_DEEPSEEK_V32, /* issue 24 §2: DeepSeek-V3.2, DeepSeek-V3's layers with DeepSeek Sparse Attention's indexer */
	HF_QWEN3_NEXT, /* issue 24: Gated DeltaNet and gated attention layers, MoE with a gated shared expert */
	HF_ARCH_COUNT } HfArch;

/* Gemma 2 or Gemma 3: sandwich (1 + w) norms, a scaled embedding (hfconfig.c's read_gemma). */
static inline int hf_gemma(HfArch a)
{
	return a == HF_GEMMA2 || a == HF_GEMMA3;
}

/* DeepSeek-V3 or V3.2: multi-head latent attention (read_deepseek, the importer's deepseek_layer). */
static inline int hf_deepseek(HfArch a)
{
	return a == HF_DEEPSEEK_V3 || a == HF_DEEPSEEK_V32;
}

/* The FFN's activation: GPT-2's "gelu_new" (tanh form; "gelu_pytorch_tanh" is the same formula),
 * "gelu" (erf form); the LLaMA family's "silu" in SwiGLU. */
typedef enum HfAct { HF_ACT_GELU_TANH, HF_ACT_GELU, HF_ACT_SILU } HfAct;

#define HF_MAX_EOS 8
#define HF_MAX_LAYERS 1024 /* num_hidden_layers' limit */
#define HF_NAME_SIZE 96    /* a tensor's name as a model's own checks and loads it */

typedef struct HfConfig {
	HfArch arch;
	char model_type[16];    /* "gpt2", "llama", "qwen2", "qwen3", "olmo2", "mixtral", "qwen3_moe", "deepseek_v3", "gemma2", "gemma3_text", "smollm3", "gpt_oss", "qwen3_next" */
	char architecture[64];  /* architectures[0] ("LlamaForCausalLM"), escaped; "" when absent */
	char act_name[24];      /* the activation's name as config.json gives it */
	HfAct act;
	int vocab_size;
	int hidden_size;        /* GPT-2's n_embd */
	int num_layers;         /* num_hidden_layers, n_layer */
	int num_heads;          /* num_attention_heads, n_head */
	int num_kv_heads;       /* num_key_value_heads (GPT-2: num_heads) */
	int head_dim;           /* head_dim, else hidden_size / num_heads */
	int intermediate_size;  /* intermediate_size, n_inner (GPT-2's null: 4 · n_embd) */
	int max_positions;      /* max_position_embeddings, n_positions */
	double norm_eps;        /* rms_norm_eps, layer_norm_epsilon */
	double rope_theta;      /* 0 for GPT-2 (learned positions) */
	/* RoPE scaled for long context and partial (issue 23 §2: weights/hfrope.h), from rope_scaling or rope_parameters */
	RopeScaling rope_scaling; /* type ROPE_SCALE_NONE: plain RoPE */
	double partial_rotary_factor; /* 1: every column of a head turns */
	int tie_word_embeddings;
	int qkv_bias;           /* q, k and v projections have biases (GPT-2, Qwen2, attention_bias) */
	int o_bias;             /* the output projection has one (GPT-2, attention_bias) */
	int qk_norm;            /* Qwen3's q_norm and k_norm over head_dim (1), OLMo 2's over the whole projection (2) */
	/*
	 * Local and global layers (issue 23 §3), as Qwen2Config/Qwen3Config make
	 * layer_types: given, else "sliding_attention" for layers i ≥
	 * max_window_layers when use_sliding_window; sliding_window is the window
	 * W of those (a query at i sees keys i − W < j ≤ i), 0 when no layer slides.
	 */
	int sliding_window;
	unsigned char sliding[HF_MAX_LAYERS]; /* layer i is a "sliding_attention" layer */
	/*
	 * A mixture of experts (issue 23 §7; mixtral, qwen3_moe): num_experts E
	 * (num_local_experts; 0: none), num_experts_per_tok k, norm_topk_prob
	 * (Mixtral: always), each expert's width (qwen3_moe's
	 * moe_intermediate_size; Mixtral's intermediate_size), and which layers
	 * are sparse (Qwen3MoeDecoderLayer: not in mlp_only_layers and
	 * (i + 1) % decoder_sparse_step == 0; the others a dense MLP of
	 * intermediate_size).
	 */
	int num_experts, experts_per_tok, norm_topk_prob, moe_intermediate_size;
	unsigned char sparse[HF_MAX_LAYERS];
	/*
	 * DeepSeek-V3's multi-head latent attention (deepseek_v3; DeepseekV3Config):
	 * q_lora_rank (0: null, the query is q_proj), kv_lora_rank, qk_nope_head_dim,
	 * qk_rope_head_dim, v_head_dim; head_dim is then d_nope + d_rope (a head's
	 * query and key). Its mixture of experts (issue 24; hfconfig.c's read_deepseek_moe):
	 * num_experts (n_routed_experts), experts_per_tok, norm_topk_prob,
	 * moe_intermediate_size and sparse[] above (layer i sparse when i ≥
	 * first_k_dense_replace and i % moe_layer_freq == 0), the sigmoid router's
	 * n_group, topk_group and routed_scaling_factor, and the shared experts'
	 * width moe_intermediate_size · n_shared_experts (0: none).
	 */
	int q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
	int n_group, topk_group, shared_ff;
	double routed_scaling;
	/* DeepSeek-V3.2 (deepseek_v32): its lightning indexer's index_n_heads, index_head_dim, index_topk (64, 128, 2048) */
	int index_n_heads, index_head_dim, index_topk;
	/*
	 * Gemma 2 and Gemma 3 (gemma2, gemma3_text; hfconfig.c's read_gemma):
	 * the scores scaled by query_pre_attn_scalar^(-1/2), the soft caps
	 * (attn_logit_softcapping, final_logit_softcapping; 0: none), and the
	 * sliding layers' own RoPE base (Gemma 3's rope_local_base_freq; Gemma 2's
	 * is rope_theta). Their windows are sliding_window and sliding[] above.
	 */
	double query_pre_attn_scalar, attn_softcap, final_softcap, rope_local_base;
	/*
	 * Gemma 3's sliding layers' RoPE scaling: none in the old layout (rope_scaling
	 * scales the global layers alone); in the new one, rope_parameters per layer
	 * type ({"full_attention": {…}, "sliding_attention": {…}}: hfrope.c), the
	 * sliding type's, and its rope_theta in rope_local_theta (0: not given).
	 */
	RopeScaling rope_local_scaling;
	double rope_local_theta;
	/*
	 * SmolLM3 and gpt-oss (issue 23; hfconfig.c's block of their own):
	 * nope[i], layer i turns nothing (SmolLM3Config's no_rope_layers[i] 0, or
	 * every no_rope_layer_interval-th layer); gpt-oss's per-layer sinks, its
	 * router's and experts' biases, the experts' clamped SwiGLU (swiglu_alpha
	 * α, swiglu_limit; GptOssExperts) with gate_up_proj's columns interleaved.
	 */
	unsigned char nope[HF_MAX_LAYERS];
	/*
	 * Qwen3-Next (qwen3_next; hfconfig.c's read_qwen3next): linear[i], layer i is a Gated DeltaNet layer
	 * ("linear_attention" in layer_types; without them every full_attention_interval-th layer is full attention,
	 * the others linear), the linear layers' sizes (linear_conv_kernel_dim, linear_num_key_heads,
	 * linear_num_value_heads, linear_key_head_dim, linear_value_head_dim), and the sparse layers' shared expert
	 * (shared_expert_intermediate_size, with its sigmoid gate shared_expert_gate).
	 */
	unsigned char linear[HF_MAX_LAYERS];
	int lin_conv, lin_k_heads, lin_v_heads, lin_k_dim, lin_v_dim, shared_expert_ff;
	int gptoss;
	double swiglu_alpha, swiglu_limit;
	long long bos_token_id; /* -1 when none */
	int n_eos;
	long long eos_token_id[HF_MAX_EOS];
} HfConfig;

/*
 * DIR/config.json into *cfg: 0, or -1 with *err (heap) naming the file, the
 * JSON path and what was expected ("m/config.json: rope_scaling: {\"rope_type\":
 * \"llama3\", …}: attnviz computes plain RoPE only (rope_scaling null) for now").
 */
int hfconfig_read(const char *dir, HfConfig *cfg, char **err);

/* The tensor of sparse layer `layer`'s router (e < 0) or of expert e (k: 0 gate, 1 up, 2 down: Mixtral's w1, w3,
 * w2; Qwen3-MoE's gate_proj, up_proj, down_proj) into buf; returns buf. */
const char *hfconfig_moe_tensor(const HfConfig *c, int layer, int e, int k, char buf[HF_NAME_SIZE]);

/* The weights of a model folder: one file, or the shards of the index. */
typedef struct HfWeights {
	char *name;        /* what messages name: DIR/model.safetensors or DIR/model.safetensors.index.json (escaped) */
	int nfiles;
	StFile **files;    /* each shard once, in the order the index first names it */
	int n;             /* the index's weight_map (0 for one file) */
	struct HfEntry {
		char *tensor;
		int file;
	} *map;            /* sorted by tensor name */
	const char *prefix; /* "transformer." when a GPT-2's names carry it (hfconfig_check_shapes finds out), else "" */
} HfWeights;

/*
 * Open DIR's weights: model.safetensors when it is there (transformers'
 * from_pretrained looks for it first), else model.safetensors.index.json
 * (every shard it names opened and checked to hold the tensors it is said to
 * hold; a shard's name may not leave the folder). NULL with *err when
 * anything is wrong.
 */
HfWeights *hfweights_open(const char *dir, char **err);
void hfweights_close(HfWeights *w);
/* The tensor of that name in whichever file holds it (*file: that file, when file is not NULL), or NULL. */
const StTensor *hfweights_find(const HfWeights *w, const char *name, const StFile **file);
/*
 * A tensor as a Mat (st_to_mat's transpose, rows and cols), the name with
 * w->prefix before it; -1 with *err naming the tensor when it is missing or
 * its shape is not the one asked for.
 */
int hfweights_mat(const HfWeights *w, const char *name, int transpose, int rows, int cols, Mat *out, char **err);

/*
 * Every tensor the architecture computes with is there with the shape the
 * config makes it ("model.safetensors: tensor \"wte.weight\" has shape [300,
 * 16], but config.json's sizes (vocab_size, n_embd) make it [300, 24]": the
 * config.json beside the weights);
 * tensors it does not use (GPT-2's attn.bias and attn.masked_bias buffers)
 * are ignored. Finds a GPT-2's "transformer." prefix (sets w->prefix).
 * 0, or -1 with *err.
 */
int hfconfig_check_shapes(const HfConfig *cfg, HfWeights *w, char **err);
/* The config key of an architecture's layer count (num_hidden_layers, GPT-2's n_layer), for a message. */
const char *hfconfig_layers_key(HfArch a);

#endif
