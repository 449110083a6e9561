/* model.h: what a model is, apart from the course that teaches it — the
 * settings every layer shares once (ModelConfig), each layer's own
 * parameters (LayerParams) and the few shared settings it keeps of its own
 * (LayerOwn), and a Model that holds them: as llama2.c's Config and
 * TransformerWeights.
 *
 * A lesson (lesson/lesson.h) holds one Model; the engine computes layer i
 * from the Model's ModelConfig and layer i's LayerParams and LayerOwn
 * (model_layer_config says which shared settings a layer keeps of its own:
 * the one place that does; model_layer_params finds a layer's parameters).
 * Every matrix is owned by whoever holds the
 * struct; model.c frees and copies each of them.
 */
#ifndef ATTNVIZ_MODEL_H
#define ATTNVIZ_MODEL_H

#include "base/matrix.h"
#include "base/matview.h"

/* POS_LEARNED: a trained table's rows (GPT-2's wpe) for positions 0 … n − 1, given as ModelConfig.pe_learned. */
typedef enum Positional { POS_NONE, POS_SINUSOIDAL, POS_LEARNED } Positional;
typedef enum ScoreKind { SCORE_DOT, SCORE_ADDITIVE } ScoreKind;
typedef enum ScaleKind { SCALE_SQRT_DK, SCALE_NONE, SCALE_VALUE } ScaleKind;
typedef enum MaskKind { MASK_NONE, MASK_CAUSAL, MASK_PADDING, MASK_MATRIX, MASK_WINDOW, MASK_LIST } MaskKind;
typedef enum RopeStyle { ROPE_HALF, ROPE_INTERLEAVED } RopeStyle;
/*
 * RoPE's scaling for long context (issue 23 §2), as transformers'
 * modeling_rope_utils.py computes inv_freq and attention_factor (model/ropefreq.h):
 * ROPE_SCALE_NONE plain RoPE; LINEAR positions ÷ factor; DYNAMIC NTK, a larger
 * base once the sequence is longer than orig_max; YARN each frequency blended
 * between interpolated and original by a ramp on its wavelength, cos and sin
 * times attention_factor; LLAMA3 Llama 3.1's low/high frequency bands.
 */
typedef enum RopeScaleType { ROPE_SCALE_NONE, ROPE_SCALE_LINEAR, ROPE_SCALE_DYNAMIC, ROPE_SCALE_YARN, ROPE_SCALE_LLAMA3 } RopeScaleType;
typedef struct RopeScaling {
	RopeScaleType type;
	double factor;           /* s ≥ 1 */
	int orig_max;            /* original_max_position_embeddings L₀ (dynamic, yarn, llama3) */
	double beta_fast, beta_slow; /* yarn: 32, 1 */
	double attn_factor;      /* yarn: the attention_factor given, or 0: get_mscale(s, mscale) / get_mscale(s, mscale_all_dim) */
	double mscale, mscale_all_dim; /* yarn (DeepSeek's): both non-zero make that ratio; else 0.1·ln s + 1 */
	int truncate;            /* yarn: the ramp's ends floored/ceiled (default 1) */
	double low_freq, high_freq; /* llama3: low_freq_factor, high_freq_factor */
} RopeScaling;

/* One mask of a list ("mask": ["causal", {"padding": …}, {"window": 3}]): a cell is visible when every one allows it. */
typedef struct MaskPart {
	MaskKind kind;        /* MASK_CAUSAL, MASK_PADDING, MASK_MATRIX or MASK_WINDOW (never NONE or LIST) */
	int window;           /* MASK_WINDOW: query i sees key j iff j ≤ i and i − j < window */
	Mat matrix;           /* 1 × m (padding) or n × m (matrix) of 0/1; else empty */
} MaskPart;
/* NORM_AFTER (OLMo 2): each sublayer's output normalised before its residual add: x + N1(attn(x)), then h + N2(ffn(h)). */
typedef enum NormPlace { NORM_POST, NORM_PRE, NORM_NONE, NORM_AFTER } NormPlace;
/* NORM_RMSNORM_1P (Gemma's Gemma3RMSNorm, "rmsnorm_plus1"): x/√(mean(x²) + ε)·(1 + γ), the weight stored zero-centred. */
typedef enum NormKind { NORM_LAYERNORM, NORM_RMSNORM, NORM_RMSNORM_1P } NormKind;
/* ACT_GELU: x·Φ(x) (erf); ACT_GELU_TANH: GPT-2's gelu_new, ½x(1 + tanh(√(2/π)(x + 0.044715x³)));
 * ACT_GEGLU: Gemma's gate, gelu_tanh(x·W_1 + b_1) ⊙ (x·W_3 + b_3) (a lesson's "gelu_tanh" with W_3). */
typedef enum Activation { ACT_RELU, ACT_GELU, ACT_SWIGLU, ACT_GELU_TANH, ACT_GEGLU } Activation;
/* QK-norm (issue 21, Qwen3; issue 23 adds the other forms): QK_NORM_HEAD is RMSNorm over each head's d_k of q and k, after the projection and before RoPE. */
/* QK_NORM_PROJ (OLMo 2): RMSNorm over a whole row of q (h·d_k numbers) and of k (g·d_k), before the split into heads. */
/* QK_NORM_L2 (Llama 4's Llama4TextL2Norm): x/√(mean(x²) + ε) over each head's d_k of q and k, no weights, AFTER RoPE. */
typedef enum QkNorm { QK_NORM_NONE, QK_NORM_HEAD, QK_NORM_PROJ, QK_NORM_L2 } QkNorm;
/* Which part of an encoder–decoder a link of the chain is (a plain stack's layers are PART_LAYER). */
typedef enum LinkPart { PART_LAYER, PART_SELF, PART_CROSS } LinkPart;

/*
 * The Transformer block around one attention layer (format version 2):
 * residuals, two norms and a feed-forward network. Vectors are 1 × len.
 *   post-norm: residual1 = x + attn(x);  norm1 = N1(residual1);
 *              residual2 = norm1 + ffn(norm1);  norm2 = N2(residual2) = output
 *   pre-norm:  norm1 = N1(x);  residual1 = x + attn(norm1);
 *              norm2 = N2(residual1);  residual2 = residual1 + ffn(norm2) = output
 *   none:      residual1 = x + attn(x);  residual2 = residual1 + ffn(residual1) = output
 *   after:     norm1 = N1(attn(x));  residual1 = x + norm1;
 *              norm2 = N2(ffn(residual1));  residual2 = residual1 + norm2 = output   (OLMo 2)
 */
/*
 * A mixture-of-experts FFN (issue 23 §7; Mixtral's MixtralSparseMoeBlock,
 * Qwen3-MoE's Qwen3MoeSparseMoeBlock): router_logits = x·W_r, p =
 * softmax(router_logits) per row, the top_k experts of each row (ties: the
 * lower index), their weights p renormalised to sum 1 when norm_topk_prob,
 * each chosen expert's SwiGLU (silu(x·W_1,e) ⊙ (x·W_3,e))·W_2,e on the rows
 * that chose it, ffn_out = Σ weight·expert output (+ σ(x·S_gate)·the shared
 * expert's SwiGLU, Qwen2-MoE's, when it has one). experts 0: a dense FFN.
 * The experts' weights side by side: expert e's are W_1's and W_3's columns
 * and W_2's rows [e·d_ff, (e + 1)·d_ff), d_ff the Block's (one expert's).
 */
typedef enum MoeScoring { MOE_SCORE_SOFTMAX, MOE_SCORE_SIGMOID } MoeScoring;

typedef struct MoeParams {
	int experts, top_k, norm_topk_prob;
	/*
	 * DeepSeek-V3's router (DeepseekV3TopkRouter; scoring MOE_SCORE_SIGMOID, set by moe_router_deepseek_v3):
	 * scores = σ(x·W_r); the choice ranks scores + e_bias (1 × E) among the topk_group of n_group
	 * groups with the largest sums of their top 2; the weights are the chosen scores (÷ their sum + 1e-20 with
	 * norm_topk_prob) × routed_scaling. Softmax: n_group = topk_group = 1, routed_scaling 1, e_bias empty.
	 */
	MoeScoring scoring;
	int n_group, topk_group;
	double routed_scaling;
	Mat e_bias;
	Mat W_r;      /* d_model × E */
	Mat W_1, W_3; /* d_model × E·d_ff */
	Mat W_2;      /* E·d_ff × d_model */
	/* Qwen2-MoE's shared expert (shared_ff 0: none): every token through one more SwiGLU, times σ(x·S_gate) */
	int shared_ff;
	Mat S_1, S_3, S_2, S_gate; /* d_model × shared_ff (twice), shared_ff × d_model, d_model × 1 (empty: no gate, DeepSeek's) */
	/*
	 * gpt-oss's mixture (gptoss 0: none; GptOssTopKRouter, GptOssExperts): the
	 * router's bias, top_k over the logits THEN softmax over the k chosen;
	 * each expert's biases; the clamped SwiGLU: gate = min(x·W_1 + b_1, limit),
	 * up = clamp(x·W_3 + b_3, −limit, limit), act = (up + 1)·gate·σ(α·gate),
	 * out = act·W_2 + b_2 (W_1, W_3: gate_up_proj's even and odd columns).
	 */
	int gptoss;
	double swiglu_alpha, swiglu_limit; /* α (1.702), limit (7.0) */
	Mat b_r;      /* 1 × E */
	Mat b_1, b_3; /* 1 × E·d_ff: each expert's gate and up biases, stacked as W_1's columns */
	Mat b_2;      /* E × d_model: expert e's down bias in row e */
} MoeParams;

/*
 * A loader's way in (model/moe_router.c): DeepSeek-V3's router settings under
 * config.json's names, set on p (its experts and top_k already set; W_r,
 * e_bias, the experts and the shared expert's S_1, S_3, S_2 the loader's, with
 * S_gate left empty: DeepseekV3MoE adds its n_shared_experts, fused into one
 * SwiGLU of moe_intermediate_size · n_shared_experts, without a gate).
 */
typedef struct MoeRouterV3 {
	int n_group, topk_group;      /* n_group, topk_group */
	int norm_topk_prob;           /* norm_topk_prob */
	double routed_scaling_factor; /* routed_scaling_factor */
} MoeRouterV3;
int moe_router_deepseek_v3(MoeParams *p, const MoeRouterV3 *r); /* -1: out of memory (e_bias, zeros when empty) */
/*
 * The name of the first router setting of p that does not fit (experts,
 * top_k, n_group, topk_group, routed_scaling_factor, e_score_correction_bias
 * when set) with why into why[n], or NULL when they all do.
 */
const char *moe_router_fault(const MoeParams *p, char *why, size_t n);

typedef struct Block {
	int present;          /* the layer has a block (else it is attention alone, as in version 1) */
	NormPlace norm;
	NormKind norm_kind;
	double eps;           /* default 1e-5 */
	Mat ln1_gamma, ln1_beta, ln2_gamma, ln2_beta; /* 1 × d_model (β empty for RMSNorm) */
	/* Sandwich norms (Gemma 2/3, "norm": "sandwich"; norm is NORM_PRE): one more RMSNorm after each sublayer,
	 * norm1_after = N1'(attn(norm1)), residual1 = x + norm1_after; norm2_after = N2'(ffn(norm2)). */
	int sandwich;
	Mat ln1_after_gamma, ln2_after_gamma; /* 1 × d_model each */
	int has_ffn;
	Activation activation;
	int d_ff;
	Mat W_1, b_1, W_3, b_3, W_2, b_2; /* d_model × d_ff, 1 × d_ff, (SwiGLU's gate), d_ff × d_model, 1 × d_model */
	MoeParams moe;        /* a mixture of experts instead of W_1 … b_2 (moe.experts > 0) */
} Block;

/*
 * The settings every layer of a model shares (once per model; a layer
 * keeps its own copy only of what model_layer_config lets it: LayerOwn).
 *
 *   n        query tokens (rows of X)
 *   m        key/value tokens: n, or the rows of source.X for cross-attention
 *   d_model  columns of X;  d_src columns of the source (d_model without one)
 */
typedef struct ModelConfig {
	int n, m, d_model, d_src;
	char **tokens;        /* n labels, owned */
	char **source_tokens; /* m labels when has_source, else NULL */
	Mat input;            /* n × d_model: X as written or generated, before PE */
	/* Gemma's embedding scale ("embed_scale"): X = input·embed_scale before PE and layer 0; 0: none.
	 * embed_scale_sqrt: the file said true, √d_model (Gemma's normalizer, here the double nearest it). */
	double embed_scale;
	int embed_scale_sqrt;
	int has_source;
	Mat source_input;     /* m × d_src */
	Positional positional;
	Mat pe_learned;       /* POS_LEARNED: n × d_model, the PE added to X; else empty */
	ScoreKind score;

	ScaleKind scale;
	double scale_value;   /* the factor when SCALE_VALUE */
	int scale_explicit;   /* 1 when the file said "scale" */

	MaskKind mask;
	Mat mask_matrix;      /* n × m of 0/1 for MASK_MATRIX; 1 × m for MASK_PADDING; else empty */
	int window;           /* MASK_WINDOW: the window w */
	int nmasks;           /* MASK_LIST: the masks, all applied at once (owned) */
	MaskPart *masks;
	int mask_fill_inf;    /* 1: masked cells become −∞ (default) */
	double mask_fill;     /* the number when !mask_fill_inf */

	/*
	 * Attention as today's models compute it (version 2; issue 11).
	 * rope: q and k rotated by position before the scores. alibi: −slope·|i − j|
	 * added to the scaled scores (the slopes are each layer's). decode: the
	 * walk generates one token at a time with a KV cache. flash_bq, flash_bk:
	 * FlashAttention's tiles (0: none).
	 */
	int rope;
	double rope_base;
	RopeStyle rope_style;
	double rope_partial;  /* partial_rotary_factor: the first int(d_k·it) columns of a head turn (0 or 1: all) */
	RopeScaling rope_scaling;
	int alibi;
	int decode;
	int cache_sink, cache_window; /* StreamingLLM's cache ("decode": {"cache"}): the first sink rows and the last window (0: none) */
	int flash_bq, flash_bk;
	/*
	 * "backward" (version 2): the loss the backward pass starts from.
	 * BACKWARD_TARGET: L = ½ Σ (output − target)²; BACKWARD_DOUTPUT:
	 * L = Σ dOutput ⊙ output. target is n × d_out (the final output's shape).
	 */
	enum { BACKWARD_NONE, BACKWARD_TARGET, BACKWARD_DOUTPUT } backward;
	Mat target;
	int has_final_norm;   /* "block": {"final_norm": …}: one more norm after the last layer */
	Mat final_gamma, final_beta;
	NormKind final_kind;  /* the top-level block's norm_kind and eps */
	double final_eps;
	/* QK-norm (every layer alike; each layer's weights are its LayerParams' q_norm, k_norm), with its eps. */
	QkNorm qk_norm;
	double qk_norm_eps;
	int qk_norm_plus1;    /* "qk_norm": {"kind": "rmsnorm_plus1"} (Gemma 3): the weights are used as 1 + w */
	/*
	 * The language-model head (issue 21): the tokens as ids of a vocabulary,
	 * and the unembedding that turns the last hidden rows into logits over it:
	 *   logits = final_norm · unembedᵀ        (n × vocab)
	 *   next   = softmax(logits[logits_row] / temperature)
	 * vocab 0: no head (every lesson before issue 21).
	 */
	int vocab;
	Mat unembed;          /* vocab × d_model (GPT-2 and tied models: the token embedding itself) */
	MatView unembed_view; /* a real model's unembedding instead, in its file's dtype (unembed then empty) */
	char **vocab_tokens;  /* vocab labels as people read them (owned), or NULL: shown as ids */
	long long *ids;       /* n token ids (owned), or NULL */
	double temperature;   /* default 1 */
	int top_k;            /* the tokens the next pane shows, default 10 */
	int logits_row;       /* the position whose next token is shown; default n − 1 */
	/*
	 * Soft-capping (issue 23 §5, Gemma 2): s ← c·tanh(s / c) on the scaled
	 * scores before the mask (attn_softcap, "attn_logit_softcapping") and on
	 * the LM head's logits (final_softcap, "final_logit_softcapping"); 0: none.
	 */
	double attn_softcap;
	double final_softcap;
	/*
	 * Linear attention beside softmax's (issue 24 §3, Katharopoulos et al.
	 * 2020, "linear_attention"): φ = elu + 1 on each head's q and k, computed
	 * the n × n way and the state way (engine/variants/linear.c); 0: none.
	 * linear_causal: key j reaches query i only for j ≤ i; linear_eps: the
	 * normaliser's eps (fast-transformers' 1e-6 by default).
	 */
	int linear;
	int linear_causal;
	double linear_eps;
} ModelConfig;

/*
 * Multi-head latent attention (issue 24 §1, DeepSeek-V2/V3: a lesson's
 * "mla"): the queries from c_Q = RMSNorm(x·W_qa)·q_a_norm, q = c_Q·W_qb
 * (q_lora_rank r; without it q = x·W_q, the layer's W_q), the keys and
 * values from [c_KV | k_pe] = x·W_kva, c_KV normalised (kv_a_norm), per head
 * [k_nope | v] = c_KV·W_kvb; k_pe and each head's q_pe turned by RoPE
 * (rope_theta) in DeepSeek's interleaved pairs. The layer's d_k is d_nope +
 * d_rope and its d_v v_head_dim; its W_k and W_v are empty. on 0: none.
 */
typedef struct MlaParams {
	int on;
	int q_lora_rank, kv_lora_rank, d_nope, d_rope; /* r (0: W_q), c, qk_nope_head_dim, qk_rope_head_dim */
	double rope_theta, eps;
	Mat W_qa, q_a_norm, W_qb;   /* d_model × r, 1 × r, r × h·(d_nope + d_rope); empty without r */
	Mat W_kva, kv_a_norm, W_kvb; /* d_model × (c + d_rope), 1 × c, c × h·(d_nope + d_v) */
} MlaParams;

/*
 * DeepSeek Sparse Attention (issue 24 §2, DeepSeek-V3.2-Exp's inference/model.py,
 * Indexer; a lesson's "dsa", with "mla" and its q_lora_rank): the lightning
 * indexer's H_I heads of d_I, q = c_Q·W_iq, one k = LayerNorm(x·W_ik)·k_norm +
 * k_norm_b, RoPE on the first qk_rope_head_dim of each, weights x·W_iw; each
 * query keeps its topk keys by Σ_j w_j·ReLU(q_j·k). engine/variants/dsa.c.
 */
typedef struct DsaParams {
	int on;
	int heads, dim, topk;  /* index_n_heads, index_head_dim, index_topk */
	double eps;            /* k_norm's (the reference's LayerNorm: 1e-6) */
	Mat W_iq;              /* q_lora_rank × heads·dim (wq_b) */
	Mat W_ik;              /* d_model × dim (wk) */
	Mat k_norm, k_norm_b;  /* 1 × dim each (k_norm.weight, k_norm.bias) */
	Mat W_iw;              /* d_model × heads (weights_proj) */
} DsaParams;

/*
 * Differential attention (issue 24 §4, Ye et al. 2025, "Differential
 * Transformer"; a lesson's "diff_attn"): the layer's heads in pairs (2p,
 * 2p + 1), A = softmax(Q1·K1ᵀ) − λ·softmax(Q2·K2ᵀ) with λ = e^(λ_q1·λ_k1) −
 * e^(λ_q2·λ_k2) + λ_init, then per pair RMSNorm over its 2·d_v output
 * columns (weight subln, eps) times (1 − λ_init). engine/variants/diffattn.c.
 */
typedef struct DiffParams {
	int on;
	double depth;       /* the 0-based layer index λ_init is made from (−1: lambda_init given) */
	double lambda_init; /* 0.8 − 0.6·e^(−0.3·depth), or the lesson's own */
	double eps;         /* subln's (the reference's 1e-5) */
	Mat lq1, lk1, lq2, lk2; /* 1 × d_k each */
	Mat subln;          /* 1 × 2·d_v */
} DiffParams;

/*
 * A real model's large layer weights kept in the file (issue 21, "Memory"):
 * LayerParams.file[k] the tensors as the file stores them (BF16 …) and the
 * matrix they stand for, layer_params_file_mat(p, k) (W_q … W_2, the
 * experts' stacks), "dormant": its rows and cols, no numbers (a == NULL). A
 * computation makes its own doubles of a layer's when it needs them and
 * drops them after (engine: attn_weights_make, attn_weights_drop); an edit
 * makes the matrix the model's own (layer_params_own), its views gone.
 *
 * A slot is made of pieces, each one tensor (or rows of one) put at
 * (row0, col0) of the matrix: nn.Linear's [out, in] transposed (LLaMA's
 * projections, one piece; an expert's gate, up or down projection, one piece
 * per expert in its columns or rows of the stack), or Conv1D's [in, out]
 * as it lies, cols of its columns first, first + step, … (GPT-2's fused
 * c_attn: W_q, W_k, W_v its thirds; gpt-oss's gate_up_proj: W_1 and W_3
 * its even and odd columns, expert by expert).
 */
enum {
	LP_FILE_W_Q, LP_FILE_W_K, LP_FILE_W_V, LP_FILE_W_O, LP_FILE_W_1, LP_FILE_W_3, LP_FILE_W_2,
	LP_FILE_MOE_W_1, LP_FILE_MOE_W_3, LP_FILE_MOE_W_2, LP_FILE_COUNT
};
/* The slots of a mixture's experts (their products are the engine's own loops: made doubles to be read). */
#define LP_FILES_MOE (1u << LP_FILE_MOE_W_1 | 1u << LP_FILE_MOE_W_3 | 1u << LP_FILE_MOE_W_2)

typedef struct FilePiece {
	MatView v;             /* the numbers as stored (the piece's own reference to them) */
	int transpose;         /* 1: the piece is vᵀ; 0: columns first, first + step, … of v, cols of them */
	int first, step, cols;
	int row0, col0;        /* the piece's first cell in the matrix */
} FilePiece;

typedef struct FileSlot {
	int n;
	FilePiece *piece;
} FileSlot;

/*
 * One layer's own parameters: its heads, weights, biases and block.
 *   h heads;  d_k = W_q.cols / h;  d_v = W_v.cols / h
 * kv_heads g: K and V have g heads; query head i reads key/value head
 * i / (h/g) (kv_heads_given: the file said so, and the dump says it).
 */
typedef struct LayerParams {
	int heads, d_k, d_v, d_out;
	int kv_heads, kv_heads_given;
	Mat W_q;   /* d_model × h·d_k */
	Mat W_k;   /* d_src × g·d_k (g = kv_heads, h without it) */
	Mat W_v;   /* d_src × g·d_v */
	Mat W_o;   /* h·d_v × d_out, empty when absent (then output = concat) */
	Mat b_q, b_k, b_v, b_o; /* 1 × h·d_k, 1 × g·d_k, 1 × g·d_v, 1 × d_out; empty when absent (version 2) */
	Mat w_e;   /* 1 × h·d_k for additive scores, else empty */
	Mat alibi_slopes; /* ALiBi: 1 × h as given, or empty for the ALiBi paper's defaults */
	Block block;      /* this layer's block (version 2; block.present = 0 without one) */
	Mat q_norm, k_norm; /* QK-norm's weights, 1 × d_k each (ModelConfig.qk_norm), else empty */
	Mat sinks;          /* attention sinks (issue 23 §4, gpt-oss): 1 × heads learned logits, one per query head, else empty */
	/* Gated DeltaNet (issue 24 §3, "gated_deltanet"; empty without): a = x·W_a, b = x·W_b (d_model × heads),
	 * A_log and dt_bias (1 × heads); chunk_size, the chunked form's (engine/variants/deltanet.c) */
	Mat gdn_W_a, gdn_W_b, gdn_A_log, gdn_dt_bias;
	int gdn_chunk;
	/* Gated DeltaNet as the layer's token mixer ("mixer": true; gdn_mixer 0 without): the conv1d's weights
	 * (kernel × the columns of [Q | K | V]), z = x·W_z (d_model × h·d_v), the gated RMSNorm's weight (1 × d_v)
	 * and eps; concat and W_o then read its output instead of softmax's (engine/variants/deltanet.c) */
	int gdn_mixer;
	Mat gdn_conv, gdn_W_z, gdn_norm;
	double gdn_eps;
	/* Qwen3-Next's value heads (linear_num_value_heads, "v_heads"; 0: heads): h·r of them, each head's q and k
	 * serving r, its d_v columns cut into r of d_v / r with their own β, g (W_a, W_b, A_log, dt_bias: h·r columns)
	 * and RMS (gdn_norm: d_v / r numbers); layer_gdn_r gives r */
	int gdn_v_heads;
	Mat W_gate;       /* gated attention (issue 23 §6, Qwen3-Next): d_model × h·d_v, gated = concat ⊙ σ(x·W_gate), else empty */
	Mat b_gate;       /* its bias, 1 × h·d_v (Qwen3-Next's with attention_bias): gate = x·W_gate + b_gate; else empty */
	int rope_off;     /* a NoPE layer of a lesson with "rope" (its "rope": false): q and k not turned */
	MlaParams mla;    /* multi-head latent attention (issue 24 §1), mla.on 0 without */
	DiffParams diff;  /* differential attention (issue 24 §4), diff.on 0 without */
	DsaParams dsa;    /* DeepSeek Sparse Attention (issue 24 §2), dsa.on 0 without */
	/* An encoder–decoder's link (Model.encoder): which part it is, of which decoder layer. */
	LinkPart part;
	int dec_layer;
	/* weights kept in a real model's file (see LP_FILE_W_Q): bit k of files set when file[k] stands for its matrix */
	unsigned files;
	FileSlot file[LP_FILE_COUNT];
} LayerParams;

/*
 * The shared settings one layer keeps of its own (model_layer_config's
 * table; the fields are ModelConfig's of the same name): its source, its
 * d_model, and an encoder–decoder link's mask, or a stack layer's when
 * mask_own says so (issue 23 §3: local and global layers, a sliding window
 * on some layers and full attention on the others), and RoPE's base and
 * scaling when rope_own says so (RoPE per kind of layer, as Gemma 3's: its
 * local layers' rope_local_base_freq unscaled, its global ones' rope_theta
 * with rope_scaling).
 */
typedef struct LayerOwn {
	int m, d_model, d_src;
	char **source_tokens; /* m labels when has_source, else NULL (owned) */
	int has_source;
	Mat source_input;
	MaskKind mask;
	Mat mask_matrix;
	int window;
	int nmasks;
	MaskPart *masks;      /* owned */
	int mask_own;         /* a stack's layer computes with its own mask (a layer's "mask", a model's layer_types) */
	double rope_base;     /* RoPE's base, the layer's own when rope_own (Gemma 3: 10000 local, 1000000 global) */
	RopeScaling rope_scaling; /* and its scaling when rope_own (Gemma 3's local layers: none; its global ones the model's) */
	int rope_own;         /* a layer's "rope": {"base": B, "scaling": {…}} */
} LayerOwn;

/* One layer of a model with layers: its parameters and its own settings. */
typedef struct ModelLayer {
	LayerParams lp;
	LayerOwn own;
} ModelLayer;

/*
 * A model: the settings its layers share (cfg) and its layers. nlayers 0:
 * the model is its own single layer, lp (a lesson without "layers"); else
 * layer[0 … nlayers − 1], each its own settings (own) and parameters (lp),
 * but for layer 0's parameters, which are the model's lp (what a stack's
 * top level gives and writes back): layer[0].lp stays empty, so that there
 * is one copy, and model_layer_params is the way to any layer's. An encoder–decoder's decoder
 * holds its encoder, a model of its own (owned, or NULL), and each decoder
 * layer is two of its layers: 2k its masked self-attention (part PART_SELF:
 * the layer's ln1, no FFN) and 2k + 1 its cross-attention (PART_CROSS: a
 * source of m = the encoder's tokens, whose rows the engine fills with the
 * memory; its block's ln1, ln2 are the layer's ln2, ln3, with the FFN).
 * MODEL_FIELDS is its members, so that a Lesson can name them directly.
 */
#define MODEL_FIELDS                                                                                                   \
	ModelConfig cfg;                                                                                               \
	LayerParams lp;                                                                                                \
	int nlayers;                                                                                                   \
	ModelLayer *layer;                                                                                             \
	struct Model *encoder;
typedef struct Model {
	MODEL_FIELDS
} Model;

/*
 * Freeing and deep copies. _free frees what the struct owns (not the struct
 * itself) and leaves it zeroed; _copy fills dst (whose old contents are
 * not freed) and returns 0, or -1 out of memory with dst holding only what
 * it can free. model_free frees the encoder too (and the struct it is in).
 */
void model_config_free(ModelConfig *c);
/* Row v of the unembedding as d_model doubles: in unembed, or made from unembed_view into buf (d_model of them). */
const double *model_unembed_row(const ModelConfig *c, int v, double *buf);
/* 1 when c's unembedding (unembed or unembed_view) is rows × cols. */
int model_unembed_is(const ModelConfig *c, int rows, int cols);
int model_config_copy(ModelConfig *dst, const ModelConfig *src);
void layer_params_free(LayerParams *p);
int layer_params_copy(LayerParams *dst, const LayerParams *src);
/* Gated DeltaNet's value heads per head, r = v_heads / heads (1 without "v_heads"). */
int layer_gdn_r(const LayerParams *p);
/* The matrix file slot k stands for (&p->W_q … &p->block.W_2, &p->block.moe.W_1 …). */
Mat *layer_params_file_mat(LayerParams *p, int k);
/* The slot k whose matrix m is (layer_params_file_mat(p, k) == m) when it is dormant, kept in the file; else -1. */
int layer_params_dormant_slot(const LayerParams *p, const Mat *m);
/*
 * Slot k of p kept as one more piece: v (a reference of the slot's own, v
 * itself left to the caller), put at (row0, col0) as described at
 * FilePiece; bit k of p->files set. 0, or -1 out of memory.
 */
int layer_params_keep(LayerParams *p, int k, const MatView *v, int transpose, int first, int step, int cols, int row0,
                      int col0);
/* 1 when slot k of x and of y are kept in the same file's numbers (the same views: neither read). */
int layer_params_same_file(const LayerParams *x, const LayerParams *y, int k);
/*
 * Slot k's matrix as doubles into out (rows × cols of the matrix; out's old
 * contents not freed). 0, or -1 out of memory (out empty).
 */
int layer_params_file_doubles(const LayerParams *p, int k, Mat *out);
/*
 * Every dormant file-kept matrix of p among the slots of bits want made
 * doubles (their numbers p's holder's own: *made gets the bits of those
 * made, for layer_params_unmake). 0, or -1 out of memory (those made so far
 * in *made). layer_params_make: every slot.
 */
int layer_params_make_some(LayerParams *p, unsigned want, unsigned *made);
int layer_params_make(LayerParams *p, unsigned *made);
/* The matrices of bits made freed, dormant again. */
void layer_params_unmake(LayerParams *p, unsigned made);
/* p's file-kept matrices dormant (their numbers borrowed from another holder, not freed). */
void layer_params_dormant(LayerParams *p);
/* Every file-kept matrix of p made p's own doubles, its view dropped (an edit). 0, or -1 out of memory. */
int layer_params_own(LayerParams *p);
void layer_own_free(LayerOwn *o);
int layer_own_copy(LayerOwn *dst, const LayerOwn *src);
void model_free(Model *m);
int model_copy(Model *dst, const Model *src);

/* The settings a layer keeps of its own, as c holds them (borrowed: nothing copied). */
void model_layer_own_of(const ModelConfig *c, LayerOwn *own);
/* The same, moved: own takes what c owns of them (its source's labels and rows, its masks), c keeps the rest. */
void model_layer_own_take(ModelConfig *c, LayerOwn *own);
/* How many layers: nlayers, or 1 for a model that is its own layer. */
int model_layers(const Model *m);
/* Layer i's parameters: layer[i].lp, or lp for layer 0, a model without layers and i out of range. */
LayerParams *model_layer_params(Model *m, int i);
const LayerParams *model_layer_params_const(const Model *m, int i);
/* Layer i's own settings, or NULL for a model without layers (its settings are all cfg). */
LayerOwn *model_layer_own(Model *m, int i);
/* Give m (which has none) n zeroed layers: 0, or -1 out of memory. */
int model_set_layers(Model *m, int n);
/*
 * The settings layer i computes with, input its rows (borrowed): cfg for a
 * model without layers, else model_layer_config over the model's own.
 */
void model_config_of_layer(const Model *m, int i, const Mat *input, ModelConfig *out);

/*
 * The settings layer i of nlayers computes with: the model's shared ones
 * (shared), but for those the layer keeps of its own (own) — the one place
 * that says which a layer may override:
 *   - its source (m, d_src, has_source, source_tokens, source_input): a
 *     cross-attention link reads its encoder's, not the model's;
 *   - d_model (a layer's columns are its own);
 *   - in an encoder–decoder (encdec), its mask (a decoder's self-attention
 *     is causal, its cross-attention sees every key);
 *   - positions are added once, before layer 0; the final norm follows only
 *     the last layer.
 * input is the rows the layer reads (the layer before's output). Every
 * matrix is borrowed.
 */
void model_layer_config(const ModelConfig *shared, const LayerOwn *own, int i, int nlayers, int encdec,
                        const Mat *input, ModelConfig *out);

/* 1 when the mask lets query i see key j (every mask of a list at once). */
int model_mask_sees(const ModelConfig *c, int i, int j);
/* The mask hides every key after the query (causal or a window, alone or in a list). */
int model_mask_causal(const ModelConfig *c);
/* The smallest window of the mask, or 0 without one: what a rolling KV cache keeps. */
int model_mask_window(const ModelConfig *c);
/* 1 when a layer names its key/value heads (the file gave "kv_heads", or they are fewer than its heads): dumps and saves say so. */
int model_kv_named(const LayerParams *p);
/* ALiBi's default slope of head i of h: 2^(−8(i+1)/h) for h a power of two, else the paper's interleaving rule. */
double model_alibi_slope(int h, int i);

#endif
