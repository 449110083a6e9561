/* catalog.h: the stages and matrices of attention as data — names, shapes, kinds.
 *
 * The bottom of the house: the loader (lesson.c), the engine (attention.c)
 * and every view read these two tables, and nothing here computes. A new
 * stage is an entry in stage_kinds[] (what it is called, when it exists,
 * what it shows, its formula and blurb) plus its kernel (attention.c:
 * stage_kernel[]) and its explain functions (explain.c), or, for an
 * attention variant's stage, its file in engine/variants/; a new matrix is
 * an entry in matrix_kinds[]. No view switches on a stage or a matrix.
 */
#ifndef ATTNVIZ_CATALOG_H
#define ATTNVIZ_CATALOG_H

#include <stdint.h>

/* The canonical stages, in the order they are computed. */
typedef enum Stage {
	STAGE_INPUT,
	STAGE_POSITIONAL,
	STAGE_NORM1_PRE,   /* "norm1" of a pre-norm block: the attention reads N1(x) */
	STAGE_PROJECT,
	STAGE_MLA_LATENT,  /* multi-head latent attention (DeepSeek): c_Q, and [c_KV | k_pe] = x·W_kva, instead of project */
	STAGE_MLA_HEADS,   /* MLA: q and [k_nope | v] per head from the latents, q_pe and the shared k_pe turned: Q, K, V */
	STAGE_DSA_INDEX,   /* DeepSeek Sparse Attention (V3.2): the lightning indexer's q, k, weights and index scores */
	STAGE_QK_NORM,     /* QK-norm (Qwen3): each head's q and k RMS-normalised, before RoPE */
	STAGE_ANGLES,      /* RoPE's angle per position and column, plain and as scaled (issue 23 §2) */
	STAGE_ROTATE,      /* RoPE: q and k turned by their positions */
	STAGE_QK_L2,       /* Llama 4's weightless L2 QK-norm: each head's turned q and k RMS-normalised, after RoPE */
	STAGE_SPLIT,
	STAGE_SCORES,
	STAGE_SCALE,
	STAGE_BIAS,        /* ALiBi: −slope·|i − j| added to the scaled scores */
	STAGE_DSA_TOPK,    /* DSA: each query's top-k keys by index score kept, −∞ added to the other scaled scores */
	STAGE_SOFTCAP,     /* soft-capping (Gemma 2): c·tanh(s/c) on the scaled scores, before the mask */
	STAGE_MASK,
	STAGE_SOFTMAX,
	STAGE_SINKS,       /* attention sinks (gpt-oss): the share of each row the head's sink logit took */
	STAGE_DSA_DENSE,   /* DSA: the sparse weights beside dense MLA's (the same scores, every causal key kept) */
	STAGE_WEIGHTED,
	STAGE_MLA_ABSORB,  /* MLA's absorbed form (W_kvb folded into the query) beside the naive one, and the cache */
	STAGE_FLASH,       /* the same head outputs from FlashAttention's tiles */
	STAGE_LINEAR,      /* linear attention (issue 24 §3): φ(q)·φ(k) instead of softmax, with its n × n matrix */
	STAGE_LINEAR_STATE, /* the same outputs from the d_k × d_v state φ(K)ᵀV, without the n × n matrix */
	STAGE_GDN_CONV,    /* Gated DeltaNet as the layer's mixer: the short causal conv1d and SiLU over q, k, v */
	STAGE_DELTANET,    /* Gated DeltaNet's recurrence (Qwen3-Next), token by token and in chunks */
	STAGE_GDN_NORM,    /* Gated DeltaNet as the layer's mixer: RMSNorm(o)·w ⊙ SiLU(z), what W_o reads */
	STAGE_GDN_CACHE,   /* … and what it caches for the next token beside a full-attention layer (the hybrid) */
	STAGE_DIFF,        /* differential attention (issue 24 §4): A1 − λ·A2 of each pair of heads */
	STAGE_DIFF_OUT,    /* differential attention: (A1 − λ·A2)·V, its per-head RMSNorm and × (1 − λ_init) */
	STAGE_CONCAT,
	STAGE_GATE,        /* gated attention (Qwen3-Next): concat ⊙ σ(x·W_gate), what W_o then reads */
	STAGE_OUTPUT,
	STAGE_NORM1_AFTER, /* "norm1" of a block whose norms follow each sublayer (OLMo 2): N1(attention's output) */
	STAGE_NORM1_SANDWICH, /* "norm1_after" of a sandwich block (Gemma 2/3's post_attention_layernorm): N1'(output) */
	STAGE_RESIDUAL1,   /* x + attention */
	STAGE_NORM1_POST,  /* "norm1" of a post-norm block: N1(residual1) */
	STAGE_NORM2_PRE,   /* "norm2" of a pre-norm block: the FFN reads N2(residual1) */
	STAGE_FFN_HIDDEN,
	STAGE_ACTIVATION,
	STAGE_MOE_ROUTER,  /* a mixture of experts (Mixtral, Qwen3-MoE): the router's logits and probabilities */
	STAGE_MOE_CHOICE,  /* DeepSeek-V3's router: sigmoid scores + e_score_correction_bias, the groups kept */
	STAGE_MOE_TOPK,    /* the top_k experts of each token and their weights */
	STAGE_MOE_EXPERTS, /* each chosen expert's SwiGLU on its tokens, and their weighted sum: ffn_out */
	STAGE_FFN_OUT,
	STAGE_NORM2_AFTER, /* "norm2" after the FFN (OLMo 2): N2(ffn_out) */
	STAGE_NORM2_SANDWICH, /* "norm2_after" of a sandwich block (Gemma's post_feedforward_layernorm): N2'(ffn_out) */
	STAGE_RESIDUAL2,   /* the FFN's input + FFN */
	STAGE_NORM2_POST,  /* "norm2" of a post-norm block */
	STAGE_DECODE,      /* generation one token at a time with a KV cache */
	STAGE_FINAL_NORM,  /* after the last layer */
	STAGE_LOGITS,      /* the LM head: final_norm · unembedᵀ, a score per vocabulary entry */
	STAGE_NEXT,        /* softmax(logits[row] / T): the next token's probabilities */
	/* the backward pass, in the order it runs (backward.c) */
	STAGE_BACK_MOE,    /* a mixture of experts (backward_moe.c): dffn_out back to the experts and the router */
	STAGE_BACK_OUTPUT,
	STAGE_BACK_GATE,   /* gated attention: dgated back through σ(gate) to dconcat, and the gate's own gradients */
	STAGE_BACK_WEIGHTED,
	STAGE_BACK_SOFTMAX,
	STAGE_BACK_MASK,
	STAGE_BACK_SCALE,
	STAGE_BACK_SCORES,
	STAGE_BACK_PROJECT,
	STAGE_COUNT
} Stage;

/* Every matrix a learner can name (`show`, `explain`, `focus`, quiz cells, `--dump`). */
typedef enum AttnMatrix {
	AM_INPUT, AM_PE, AM_X, AM_SOURCE_INPUT, AM_PE_SRC, AM_S,
	AM_W_Q, AM_W_K, AM_W_V, AM_W_O, AM_W_E,
	AM_Q, AM_K, AM_V,
	AM_SCORES, AM_SCALED, AM_MASKED, AM_WEIGHTS, AM_WEIGHTED,
	AM_CONCAT, AM_OUTPUT,
	/* biases (version 2) */
	AM_B_Q, AM_B_K, AM_B_V, AM_B_O,
	/* the Transformer block around attention (version 2) */
	AM_LN1_GAMMA, AM_LN1_BETA, AM_LN2_GAMMA, AM_LN2_BETA,
	AM_W_1, AM_B_1, AM_W_3, AM_B_3, AM_W_2, AM_B_2,
	AM_FINAL_GAMMA, AM_FINAL_BETA,
	AM_RESIDUAL1, AM_NORM1_STATS, AM_NORM1, AM_FFN_HIDDEN, AM_FFN_GATE, AM_FFN_ACT, AM_FFN_OUT,
	AM_RESIDUAL2, AM_NORM2_STATS, AM_NORM2, AM_FINAL,
	/* attention as today's models compute it (version 2) */
	AM_Q_ROT, AM_K_ROT, AM_BIAS, AM_BIASED,
	AM_FLASH_M, AM_FLASH_L, AM_FLASH_O, AM_FLASH_OUT,
	AM_DEC_Q, AM_CACHE_K, AM_CACHE_V, AM_DEC_SCORES, AM_DEC_WEIGHTS, AM_DEC_WEIGHTED, AM_DEC_OUTPUT, AM_DEC_LAYER_OUT,
	/* the backward pass: dM = ∂L/∂M, M's shape (a lesson with "backward") */
	AM_D_OUTPUT, AM_D_CONCAT, AM_D_W_O, AM_D_WEIGHTED, AM_D_WEIGHTS, AM_D_MASKED, AM_D_SCALED, AM_D_SCORES,
	AM_D_Q, AM_D_K, AM_D_V, AM_D_W_Q, AM_D_W_K, AM_D_W_V, AM_D_X,
	/* QK-norm (issue 21, Qwen3): its weights, 1 × d_k each, and q, k normalised head by head */
	AM_Q_NORM_W, AM_K_NORM_W, AM_Q_NORM, AM_K_NORM,
	/* the language-model head (issue 21): the unembedding, the logits and the next token's probabilities */
	AM_UNEMBED, AM_LOGITS, AM_NEXT,
	/* soft-capping (issue 23 §5, Gemma 2): the scores after c·tanh(s/c); the LM head's logits before their cap */
	AM_CAPPED, AM_LOGITS_RAW,
	/* attention sinks (issue 23 §4, gpt-oss): the weight each row gave its head's sink (1 − the row's sum) */
	AM_SINK, AM_SINKS, AM_D_SINKS,
	/* RoPE's angle tables (issue 23 §2): plain RoPE's, and what this layer turns by */
	AM_ANGLES_PLAIN, AM_ANGLES,
	/* linear attention (issue 24 §3, Katharopoulos et al. 2020): φ = elu + 1 of each head's q and k, the
	 * n × n form (scores, normaliser, output) and the state form (φ(K)ᵀV, Σφ(k), output) */
	AM_PHI_Q, AM_PHI_K, AM_LIN_SCORES, AM_LIN_Z, AM_LIN_OUT, AM_LIN_STATE, AM_LIN_KSUM, AM_LIN_OUT_STATE,
	/* Gated DeltaNet (issue 24 §3, Qwen3-Next): its given weights; per head the L2-normalised q and k, β and g
	 * per token, what the state recalled and the correction, the output token by token and in chunks, the state */
	AM_GDN_W_A, AM_GDN_W_B, AM_GDN_A_LOG, AM_GDN_DT_BIAS,
	AM_GDN_Q, AM_GDN_K, AM_GDN_BETA, AM_GDN_G, AM_GDN_RECALL, AM_GDN_DELTA, AM_GDN_OUT, AM_GDN_OUT_CHUNK, AM_GDN_STATE,
	/* Gated DeltaNet as the layer's token mixer ("mixer": true): the conv1d's weights, W_z and the gated norm's
	 * weight; [q | k | v] after the conv and SiLU, z = x·W_z; per head the state after each token, each row's
	 * RMS of o and RMSNorm(o)·w ⊙ SiLU(z) */
	AM_GDN_CONV_W, AM_GDN_W_Z, AM_GDN_NORM_W, AM_GDN_CONV, AM_GDN_Z, AM_GDN_STATES, AM_GDN_RMS, AM_GDN_GATED,
	/* … and what a Gated DeltaNet layer caches beside a full-attention layer (the hybrid) */
	AM_GDN_CACHE,
	/* multi-head latent attention (issue 24 §1, DeepSeek-V2/V3): its weights, latents, heads, absorbed form and cache */
	AM_W_QA, AM_Q_A_NORM, AM_W_QB, AM_W_KVA, AM_KV_A_NORM, AM_W_KVB,
	AM_C_Q, AM_C_KV, AM_K_PE, AM_Q_NOPE, AM_Q_PE, AM_K_PE_ROT,
	AM_Q_TILDE, AM_ABSORBED, AM_ABSORBED_OUT, AM_MLA_DIFF, AM_KV_CACHE,
	/* differential attention (issue 24 §4, Ye et al. 2025): its λ vectors and subln weight; λ; per pair of heads
	 * the two softmax maps, their difference, its output, each row's RMS and the normed output */
	AM_DIFF_LQ1, AM_DIFF_LK1, AM_DIFF_LQ2, AM_DIFF_LK2, AM_DIFF_SUBLN, AM_DIFF_LAMBDA,
	AM_DIFF_A1, AM_DIFF_A2, AM_DIFF_A, AM_DIFF_O, AM_DIFF_RMS, AM_DIFF_OUT,
	/* gated attention (issue 23 §6, Qwen3-Next): its weights, the gate's logits, σ of them, concat ⊙ σ */
	AM_W_GATE, AM_GATE, AM_GATE_SIG, AM_GATED,
	/* a mixture-of-experts FFN (issue 23 §7): the router and the experts' weights, the router's logits and
	 * probabilities, each token's weight of each expert (NaN: not chosen), each expert's SwiGLU and output */
	AM_MOE_W_R, AM_MOE_W_1, AM_MOE_W_3, AM_MOE_W_2,
	AM_ROUTER_LOGITS, AM_ROUTER_PROBS, AM_MOE_WEIGHTS, AM_EXPERT_ACT, AM_EXPERT_OUT,
	/* Qwen2-MoE's shared expert: its weights and gate, each token's σ(x·gate) and the expert's output */
	AM_SHARED_W_1, AM_SHARED_W_3, AM_SHARED_W_2, AM_SHARED_GATE_W, AM_SHARED_GATE, AM_SHARED_OUT,
	/* sandwich norms (Gemma 2/3): the norms after each sublayer, beside the pre-norms' ln1 and ln2 */
	AM_LN1_AFTER_GAMMA, AM_LN2_AFTER_GAMMA, AM_NORM1_AFTER_STATS, AM_NORM1_AFTER, AM_NORM2_AFTER_STATS, AM_NORM2_AFTER,
	/* DeepSeek-V3's router (sigmoid scoring): its correction bias; σ(router_logits); each group's sum of
	 * its top 2; the bias-corrected scores of the experts in the groups kept (NaN: a group dropped) */
	AM_MOE_E_BIAS, AM_ROUTER_SCORES, AM_GROUP_SCORES, AM_SCORES_CHOICE,
	/* StreamingLLM's cache (issue 23 §4): decoding with a plain window of the same size, the first tokens evicted */
	AM_WIN_WEIGHTS, AM_WIN_OUTPUT,
	/* gated attention's bias (issue 23 §6: Qwen3-Next's q_proj bias, the gate's half, with attention_bias) */
	AM_B_GATE,
	/* Llama 4's weightless QK-norm after RoPE (issue 23 §1, "qk_norm": {"kind": "l2"}): q and k turned, then normalised */
	AM_Q_L2, AM_K_L2,
	/* DeepSeek Sparse Attention (issue 24 §2, V3.2): the indexer's weights (wq_b, wk, k_norm's weight and bias,
	 * weights_proj); its q (every index head), k, per-head weights, the index scores, the kept set; per head the
	 * set as a bias (0 or −∞), the scaled scores with it, and the dense weights without it */
	AM_DSA_W_IQ, AM_DSA_W_IK, AM_DSA_K_NORM, AM_DSA_K_BIAS, AM_DSA_W_IW,
	AM_INDEX_Q, AM_INDEX_K, AM_INDEX_W, AM_INDEX_SCORES, AM_INDEX_KEPT, AM_INDEX_MASK, AM_SPARSE, AM_DENSE_WEIGHTS,
	/* the backward pass through gated attention (backward.c's gate_backward) and a mixture of experts (backward_moe.c) */
	AM_D_GATED, AM_D_GATE, AM_D_W_GATE, AM_D_B_GATE,
	AM_D_FFN_OUT, AM_D_MOE_WEIGHTS, AM_D_ROUTER_LOGITS, AM_D_MOE_W_R, AM_D_MOE_W_1, AM_D_MOE_W_3, AM_D_MOE_W_2,
	AM_COUNT
} AttnMatrix;

/*
 * What a lesson has, as far as the tables care: a stage or a matrix that
 * "requires" a feature exists only in lessons that have it.
 */
typedef uint64_t FeatureSet; /* FEAT_* bits: more than an int holds */
#define FEAT_POSITIONAL  ((FeatureSet)1 << 0) /* "positional": "sinusoidal" */
#define FEAT_MULTIHEAD   ((FeatureSet)1 << 1) /* more than one head */
#define FEAT_MASK        ((FeatureSet)1 << 2) /* any mask */
#define FEAT_WO          ((FeatureSet)1 << 3) /* an output projection W_o */
#define FEAT_SOURCE      ((FeatureSet)1 << 4) /* cross-attention: keys and values from a source */
#define FEAT_ADDITIVE    ((FeatureSet)1 << 5) /* additive (Bahdanau) scores */
#define FEAT_BLOCK       ((FeatureSet)1 << 6) /* the Transformer block: residuals (and norms and an FFN) around attention */
#define FEAT_PRENORM     ((FeatureSet)1 << 7) /* the block normalises at the start of each branch */
#define FEAT_POSTNORM    ((FeatureSet)1 << 8) /* the block normalises after each residual */
#define FEAT_LAYERNORM   ((FeatureSet)1 << 9) /* its norm is LayerNorm (with β), not RMSNorm */
#define FEAT_FFN         ((FeatureSet)1 << 10) /* the block has a feed-forward network */
#define FEAT_SWIGLU      ((FeatureSet)1 << 11) /* the FFN is gated (SwiGLU: W_3) */
#define FEAT_FINAL       ((FeatureSet)1 << 12) /* the last layer, with a final norm after it */
#define FEAT_NORM        ((FeatureSet)1 << 13) /* the block has norms (pre or post) */
#define FEAT_BACKWARD    ((FeatureSet)1 << 14) /* a loss ("backward"): the gradients are computed */
#define FEAT_ROPE        ((FeatureSet)1 << 15) /* rotary position embeddings ("rope") */
#define FEAT_ALIBI       ((FeatureSet)1 << 16) /* ALiBi's linear biases ("alibi") */
#define FEAT_GQA         ((FeatureSet)1 << 17) /* fewer key/value heads than query heads ("kv_heads") */
#define FEAT_WINDOW      ((FeatureSet)1 << 18) /* a sliding-window mask */
#define FEAT_DECODE      ((FeatureSet)1 << 19) /* generated one token at a time with a KV cache ("decode") */
#define FEAT_FLASH       ((FeatureSet)1 << 20) /* FlashAttention's tiles ("flash") */
#define FEAT_UNSCALED    ((FeatureSet)1 << 21) /* "scale": false (scale off): the scores are not scaled */
#define FEAT_SCALE_VALUE ((FeatureSet)1 << 22) /* "scale": a number of the lesson's own instead of 1/√d_k */
#define FEAT_QK_NORM     ((FeatureSet)1 << 23) /* QK-norm: q and k RMS-normalised per head before RoPE ("qk_norm") */
#define FEAT_LM_HEAD     ((FeatureSet)1 << 24) /* the last layer, with a vocabulary: logits and the next token ("vocab") */
#define FEAT_SOFTCAP     ((FeatureSet)1 << 25) /* soft-capped scores: c·tanh(s/c) before the mask ("attn_logit_softcapping") */
#define FEAT_FINAL_CAP   ((FeatureSet)1 << 26) /* soft-capped logits ("final_logit_softcapping", with an LM head) */
#define FEAT_SINKS       ((FeatureSet)1 << 27) /* a learned sink logit per head beside the keys ("sinks") */
#define FEAT_ROPE_TABLE  ((FeatureSet)1 << 28) /* RoPE with "scaling" or "partial_rotary_factor": the angles stage */
#define FEAT_LINEAR      ((FeatureSet)1 << 29) /* linear attention beside softmax's ("linear_attention") */
#define FEAT_DELTANET    ((FeatureSet)1 << 30) /* Gated DeltaNet beside softmax's ("gated_deltanet") */
#define FEAT_MLA         ((FeatureSet)1 << 31) /* multi-head latent attention ("mla", DeepSeek-V2/V3) */
#define FEAT_MLA_QLORA   ((FeatureSet)1 << 32) /* MLA with a compressed query ("mla": {"q_lora_rank"}) */
#define FEAT_DIFF        ((FeatureSet)1 << 33) /* differential attention ("diff_attn"): heads in pairs, A1 − λ·A2 */
#define FEAT_GATED       ((FeatureSet)1 << 34) /* gated attention: concat ⊙ σ(x·W_gate) before W_o ("W_gate", Qwen3-Next) */
#define FEAT_QK_NORM_PROJ ((FeatureSet)1 << 35) /* QK-norm over the whole projection, all heads at once (OLMo 2: "over": "projection") */
#define FEAT_NORM_AFTER  ((FeatureSet)1 << 36) /* the block normalises each sublayer's output before its residual ("norm": "after", OLMo 2) */
#define FEAT_MOE_SHARED  ((FeatureSet)1 << 37) /* with Qwen2-MoE's shared expert ("ffn": {"shared_expert"}) */
#define FEAT_MOE         ((FeatureSet)1 << 38) /* the FFN is a mixture of experts ("ffn": {"kind": "moe"}) */
#define FEAT_NORM_1P     ((FeatureSet)1 << 39) /* Gemma's RMSNorm x/√(mean(x²) + ε)·(1 + γ) in the block or QK-norm ("rmsnorm_plus1") */
#define FEAT_SANDWICH    ((FeatureSet)1 << 40) /* sandwich norms: before AND after each sublayer ("norm": "sandwich", Gemma 2/3) */
#define FEAT_EMBED_SCALE ((FeatureSet)1 << 41) /* the input rows scaled before layer 0: X = input·s ("embed_scale", Gemma's √d_model) */
#define FEAT_MOE_SOFTMAX ((FeatureSet)1 << 42) /* its router's scores are a softmax (Mixtral, Qwen3-MoE; not "scoring_func": "sigmoid") */
#define FEAT_MOE_SIGMOID ((FeatureSet)1 << 43) /* its router's scores are sigmoids, DeepSeek-V3's ("scoring_func": "sigmoid") */
#define FEAT_MOE_SHARED_GATE ((FeatureSet)1 << 44) /* its shared expert has a sigmoid gate (Qwen2-MoE's; DeepSeek's has none) */
#define FEAT_GDN_MIXER   ((FeatureSet)1 << 45) /* Gated DeltaNet is the layer's token mixer ("gated_deltanet": {"mixer": true}) */
#define FEAT_STREAMING   ((FeatureSet)1 << 46) /* decoding keeps the first tokens and a recent window ("decode": {"cache"}) */
#define FEAT_GEGLU       ((FeatureSet)1 << 47) /* the gated FFN's gate is gelu_tanh, not silu (GeGLU, Gemma's "gelu_tanh" with W_3) */
#define FEAT_QK_L2       ((FeatureSet)1 << 48) /* Llama 4's weightless L2 QK-norm after RoPE ("qk_norm": {"kind": "l2"}) */
#define FEAT_DSA         ((FeatureSet)1 << 49) /* DeepSeek Sparse Attention: MLA with the lightning indexer's top-k ("dsa", V3.2) */
#define FEAT_COUNT       50

/* The sizes shapes are written in (lessons/FORMAT.md's legend). */
typedef enum Dim {
	DIM_ONE,     /* 1 */
	DIM_N,       /* query tokens */
	DIM_M,       /* key/value tokens */
	DIM_D_MODEL, /* columns of X */
	DIM_D_SRC,   /* columns of the source S */
	DIM_HDK,     /* h·d_k: all heads' query/key columns */
	DIM_HDV,     /* h·d_v */
	DIM_DK,      /* one head's query/key width */
	DIM_DV,      /* one head's value width */
	DIM_D_OUT,   /* columns of the output */
	DIM_D_FF,    /* the FFN's hidden width */
	DIM_TWO,     /* 2: a norm's row statistics */
	DIM_GDK,     /* g·d_k: the key/value heads' key columns (h·d_k without "kv_heads") */
	DIM_GDV,     /* g·d_v */
	DIM_NKB,     /* FlashAttention: the key blocks, ⌈m / block_k⌉ */
	DIM_NKB_DV,  /* the key blocks × d_v: O after each key block, side by side */
	DIM_VOCAB,   /* the vocabulary's entries (the LM head) */
	DIM_HEADS,   /* the query heads (one attention sink logit each) */
	/* multi-head latent attention ("mla") */
	DIM_QLORA,   /* q_lora_rank r: c_Q's width */
	DIM_KVLORA,  /* kv_lora_rank c: c_KV's width */
	DIM_ROPE,    /* qk_rope_head_dim: q_pe's and k_pe's width */
	DIM_NOPE,    /* qk_nope_head_dim */
	DIM_H_NOPE,  /* heads · qk_nope_head_dim */
	DIM_H_ROPE,  /* heads · qk_rope_head_dim */
	DIM_H_KVLORA,/* heads · kv_lora_rank: q̃ of every head */
	DIM_KVA,     /* kv_lora_rank + qk_rope_head_dim: W_kva's columns */
	DIM_KVB,     /* heads · (qk_nope_head_dim + v_head_dim): W_kvb's columns */
	DIM_FOUR,    /* 4: the cache table's rows (MHA, GQA, MQA, MLA) and columns */
	DIM_2DV,     /* 2·d_v: a pair of heads' value width (differential attention's output per pair) */
	DIM_QNORM,   /* QK-norm's q weights: d_k (per head, Qwen3) or h·d_k (the whole projection, OLMo 2) */
	DIM_KNORM,   /* and its k weights: d_k or g·d_k */
	/* a mixture-of-experts FFN */
	DIM_EXPERTS, /* E: the experts */
	DIM_E_DFF,   /* E·d_ff: every expert's hidden columns side by side */
	DIM_E_DMODEL,/* E·d_model: every expert's output side by side */
	DIM_SHARED_FF, /* the shared expert's hidden width */
	DIM_GROUPS,  /* n_group: DeepSeek-V3's groups of experts */
	/* Gated DeltaNet as the layer's mixer */
	DIM_CONV_K,  /* the conv1d's kernel size (Qwen3-Next's conv_kernel_size) */
	DIM_CONV_CH, /* its channels: h·d_k + g·d_k + g·d_v, the columns of Q, K and V side by side */
	DIM_DKDV,    /* d_k·d_v: a state flattened into one row */
	/* DeepSeek Sparse Attention's indexer ("dsa") */
	DIM_IDX_HEADS, /* index_n_heads: the indexer's heads (a weight each per token) */
	DIM_IDX_D,     /* index_head_dim: its q's and k's width */
	DIM_IDX_HD,    /* index_n_heads · index_head_dim: q of every index head */
	DIM_GDN_VH,  /* Gated DeltaNet's value heads, h·r (Qwen3-Next's linear_num_value_heads; h without "v_heads") */
	DIM_GDN_R,   /* r: a head's value heads, each with its own β and g */
	DIM_GDN_DV,  /* d_v / r: one value head's width (the gated RMSNorm's) */
	DIM_COUNT
} Dim;

/* A lesson's sizes and features, which is all the shapes and presence rules need. */
typedef struct LessonShape {
	int dim[DIM_COUNT];
	int heads;
	int kv_heads;      /* g: key/value heads (heads without "kv_heads") */
	int block_q, block_k; /* FlashAttention's tile sizes (0 without "flash") */
	FeatureSet features; /* FEAT_* bits */
} LessonShape;

/* What labels a matrix's rows or columns: indices, the query tokens, or the key (source) tokens. */
/* What labels an axis: the index, the query or key (source) tokens, or a norm's two row statistics. */
/* AXIS_VOCAB: the LM head's vocabulary entries (their tokens, or their ids without them). */
/* AXIS_CACHE_FORM, AXIS_CACHE_COUNT: the kv_cache table's rows (MHA, GQA, MQA, MLA) and what its columns count. */
typedef enum Axis { AXIS_INDEX, AXIS_QUERY, AXIS_KEY, AXIS_NORM_STATS, AXIS_VOCAB, AXIS_CACHE_FORM, AXIS_CACHE_COUNT } Axis;

enum {
	MF_PER_HEAD = 1u << 0, /* one matrix per head (scores … weighted) */
	MF_GIVEN    = 1u << 1, /* written in the lesson (inputs, weights), not computed */
	MF_PARAM    = 1u << 2, /* a learned weight */
	MF_SUMS     = 1u << 3, /* rows are distributions: views add a Σ column */
	MF_STATS    = 1u << 4, /* score-like: views give its mean and standard deviation */
	MF_MASKED   = 1u << 5, /* query × key cells the mask can hide (drawn as masked) */
	MF_GRAD     = 1u << 6, /* a gradient ∂L/∂M, kept by the backward pass (backward.h) */
	MF_KV       = 1u << 7, /* its columns belong to the key/value heads: query head h reads kv head h/(heads/g) */
	MF_NEG_INF  = 1u << 8, /* −∞ is a value it may hold (FlashAttention's running maximum before any key) */
	MF_DECODE   = 1u << 9, /* row t is decode step t; a key column is in that step's cache only where decode_in_cache */
	MF_NOT_CHOSEN = 1u << 15, /* NaN is a cell of an expert the token did not choose (a mixture of experts): drawn as not chosen */
};

typedef struct MatrixKind {
	const char *name;   /* as the learner types it */
	Dim rows, cols;
	Dim head_cols;      /* DIM_DK or DIM_DV: head h owns columns [h·w, (h+1)·w); DIM_ONE: not cut */
	unsigned flags;     /* MF_* */
	FeatureSet requires;  /* FEAT_* bits the lesson must have */
	Stage made_by;      /* the stage that computes it (STAGE_COUNT: given) … */
	Stage made_else;    /* … or, when that stage is absent, this one (STAGE_COUNT: none) */
	Axis row_axis, col_axis;
	int diverging;      /* colours: 1 diverging around 0 (scores, values), 0 sequential (weights) */
	const char *meaning;/* one line, for `help` and `show` */
} MatrixKind;

/* One pane of a stage: a matrix, when it is shown, how it is cut. */
enum {
	PANE_HEAD_COLS = 1u << 0, /* with several heads, only the current head's columns */
	PANE_TRANSPOSE = 1u << 1, /* drawn transposed (Kᵀ beside Q) */
	PANE_EACH_HEAD = 1u << 2, /* one pane per head, each its head's columns */
	PANE_EACH_KV_HEAD = 1u << 3, /* one pane per key/value head; views put each group's query heads after it */
	PANE_RESULT_COLS = 1u << 4, /* its columns are labelled with those its head fills in the stage's result */
	PANE_BARS = 1u << 5, /* a 1 × vocab distribution drawn as bars of its top_k entries, labelled with their tokens */
};

typedef struct StagePane {
	AttnMatrix matrix;
	FeatureSet requires;   /* FEAT_* bits that must be set */
	FeatureSet unless;     /* FEAT_* bits that must be clear */
	unsigned flags;      /* PANE_* */
} StagePane;

/* A stage's formula; the first variant whose conditions hold is the one shown. */
typedef struct StageFormula {
	FeatureSet when, unless; /* FEAT_* bits that must be set / clear */
	const char *utf8, *ascii;
} StageFormula;

enum {
	SF_PARAMS = 1u << 0, /* the stage where the learned parameters are used: views give their count */
	SF_ALWAYS = 1u << 1, /* its kernel runs even where the stage is not shown (its result is still used) */
	SF_DECODE_STEPS = 1u << 2, /* n/p walk its decode steps t = 0 … n − 1 (Session.dec_t) before leaving it */
	SF_TILES  = 1u << 3, /* n/p walk its FlashAttention tiles, skipping hidden ones (Session.tile_q/tile_k) */
};

#define STAGE_MAX_PANES 10
#define STAGE_MAX_FORMULAS 5

typedef struct StageKind {
	const char *name;        /* unique among the stages a lesson has (two entries may share one) */
	FeatureSet requires;       /* FEAT_* bits */
	Stage instead;           /* shown when the stage is absent (STAGE_COUNT: none) */
	unsigned flags;          /* SF_* */
	StagePane panes[STAGE_MAX_PANES]; /* operands, then the result (the last one) */
	int npanes;
	StageFormula formula[STAGE_MAX_FORMULAS];
	const char *what;        /* lessons/FORMAT.md's "what it shows" */
	const char *blurb_en, *blurb_zh; /* a default line of narration */
	const char *map;         /* its place on the map of the block ("attention", "N1", "+", "FFN"); NULL: none */
	FeatureSet unless;       /* FEAT_* bits it must not have (project: an MLA lesson makes Q, K, V its own way) */
} StageKind;

extern const StageKind stage_kinds[STAGE_COUNT];
extern const MatrixKind matrix_kinds[AM_COUNT];

/* "input", "positional", …; NULL out of range. */
const char *stage_name(Stage s);
/* The stage of that name (exact, then ignoring case), or -1. */
int stage_find(const char *name);
/* The same, preferring the entry this lesson has where two share a name ("norm1"). */
int stage_lookup(const LessonShape *sh, const char *name);
/* Why a lesson of this shape lacks the stage: "it has no mask". */
const char *stage_absent(const LessonShape *sh, Stage s);
/* 1 when a lesson of this shape has the stage. */
int stage_present(const LessonShape *sh, Stage s);
/* The stage shown for s in this lesson: s, or what stands in for it when absent. */
Stage stage_shown(const LessonShape *sh, Stage s);
/* The names of the stages this lesson has, separated by spaces: a heap string (NULL when out of memory). */
char *stage_list(const LessonShape *sh);
/*
 * The map of a block lesson's layer, its sublayers in the order they run
 * with the current one in brackets: "x → [N1] → attention → + → N2 → FFN → +"
 * (ASCII "->" without utf8). A heap string, or NULL for a lesson without a block.
 */
char *stage_map(const LessonShape *sh, Stage current, int utf8);
/*
 * The same for a layer computed as several links (an encoder–decoder's
 * decoder layer: its self-attention link, then its cross-attention link):
 * the places of each link in turn, "x" once, each attention named
 * self-attn or cross-attn, the norms numbered on across the links
 * ("x → self-attn → + → N1 → cross-attn → + → N2 → FFN → + → N3"), with
 * stage `current` of link `cur` lit.
 */
char *stage_map_links(const LessonShape *const *links, int nlinks, int cur, Stage current, int utf8);
/* The stage's formula for this lesson (never NULL). */
const char *stage_formula(const LessonShape *sh, Stage s, int utf8);
/* The stage's default narration in "en" or "zh". */
const char *stage_blurb(Stage s, const char *lang);
/*
 * The panes a stage shows in this lesson, in order: operands, then its
 * result (the last one: what a question on the stage hides). Returns the count.
 */
int stage_panes(const LessonShape *sh, Stage s, StagePane out[STAGE_MAX_PANES]);

/* One pane as a view cuts it: a matrix, the head (or key/value head) it belongs to, its columns. */
typedef struct PaneCut {
	AttnMatrix matrix;
	int head;          /* query head (PANE_EACH_KV_HEAD: the key/value head) */
	int col0, ncols;   /* the columns shown; ncols -1: all of them */
	unsigned flags;    /* PANE_* of its entry */
	int label0;        /* the label of its first column shown: col0, or (PANE_RESULT_COLS) where it lands */
} PaneCut;
/*
 * A stage's panes (from stage_panes) cut as the table says, with head `cur`
 * shown: PANE_HEAD_COLS panes get that head's columns; PANE_EACH_HEAD and
 * PANE_EACH_KV_HEAD panes become one pane per head, grouped: for each
 * key/value head j its PANE_EACH_KV_HEAD panes, then the PANE_EACH_HEAD
 * panes of the query heads that read j (without PANE_EACH_KV_HEAD panes,
 * simply head by head). A matrix of its own per head is shown whole, and with
 * PANE_RESULT_COLS its columns are labelled with those the head fills in the
 * stage's result (the last pane): head 1's output lands in concat's 2, 3.
 * At most max panes: whole groups around cur's (one
 * group too large keeps its query heads around cur). Returns the count.
 */
int stage_cut_panes(const LessonShape *sh, const StagePane *ps, int np, int cur, PaneCut *out, int max);

/* "input", "PE", …, "output"; NULL out of range. */
const char *matrix_name(AttnMatrix m);
/* By exact name, then ignoring case; -1 when unknown. */
int matrix_find(const char *name);
const MatrixKind *matrix_kind(AttnMatrix m);
/* 1 when the lesson has the matrix (NULL *why), else 0 and why ("it has no W_o"). */
int matrix_present(const LessonShape *sh, AttnMatrix m, const char **why);
/* 1 for the per-head matrices (scores … weighted). */
int matrix_per_head(AttnMatrix m);
/* 1 for the matrices a learner may edit with `set`: the given ones (inputs, weights). */
int matrix_editable(AttnMatrix m);
/* The first column head h owns of m (query heads map to their key/value head for MF_KV kinds), and how many. */
int matrix_head_col0(const LessonShape *sh, AttnMatrix m, int h);
int matrix_head_width(const LessonShape *sh, AttnMatrix m);
/* The key/value head query head h reads: h / (heads / kv_heads). */
int shape_kv_head(const LessonShape *sh, int h);
/* Its rows and columns in this lesson (as if present). */
void matrix_shape(const LessonShape *sh, AttnMatrix m, int *rows, int *cols);
/* The stage that computes m in this lesson, or -1 for given matrices. */
int matrix_stage(const LessonShape *sh, AttnMatrix m);
/* Why a lesson lacks a feature: "it has no mask" (the first missing bit of feat). */
const char *feature_absent(FeatureSet feat);

#endif
