/* attention.h: every stage of (multi-head, masked, cross-) attention, kept.
 *
 * The engine's files: attention.c (one kernel per stage, the derived rows),
 * backward.c (the gradients), compute.c (the chain of layers, updates,
 * progress, training: compute.h, included at the end of this header) and
 * matrices.c (any matrix by its catalogue id). kernels.h is what they share.
 */
#ifndef ATTNVIZ_ATTENTION_H
#define ATTNVIZ_ATTENTION_H

#include "lesson/lesson.h"

/*
 * Shape legend (row convention, as nn.Linear without bias):
 *   n  query rows        m   key/value rows (n unless cross-attention)
 *   h  heads             d_k, d_v  per-head widths
 *   X  n × d_model       S   m × d_src (the source; X itself without one)
 *   Q = X·W_q  n × h·d_k     K = S·W_k  m × h·d_k     V = S·W_v  m × h·d_v
 * Head i sees columns [i·d_k, (i+1)·d_k) of Q and K and [i·d_v, (i+1)·d_v) of V.
 */
/*
 * The derived stages, a cheap function of scores (scaled = scores × factor;
 * ALiBi's bias_ij = −slope·|i − j| and biased = scaled + bias; masked =
 * scaled or biased with hidden cells := fill), are not kept: a computation
 * keeps only scores and weights as n × m matrices per head, and the passes
 * that read a derived stage make its rows as they go. attn_matrix() makes a
 * derived matrix of one head when it is asked for, into one of
 * ATTN_DERIVED_SLOTS slots that are reused (least recently asked for first),
 * and attn_cell() gives one cell without making the matrix. The AttnHead
 * fields scaled, masked, bias and biased are empty in a computation; only
 * attn_update's copies (its `before`) fill them.
 */
#define ATTN_DERIVED_SLOTS LESSON_DERIVED_MATRICES

typedef struct AttnDerived {
	int valid;           /* m holds matrix `which` of head `head` */
	int which, head;
	unsigned long used;  /* when it was last asked for (the slot longest unasked is reused first) */
	Mat m;               /* n × m; its buffer is kept when the slot is reused */
} AttnDerived;

/*
 * The derived matrices made on request, and the clock their use is told by.
 * A cache, not the computation's numbers: attn_matrix() fills it through a
 * const Attn *, which is why Attn holds it by pointer (the pointer is const
 * there, what it points at is not). Owned by the computation.
 */
typedef struct AttnCache {
	AttnDerived slot[ATTN_DERIVED_SLOTS];
	unsigned long clock;
} AttnCache;

typedef struct AttnHead {
	Mat scores;   /* n × m  q_i · k_j (or additive e_ij) */
	Mat scaled;   /* n × m  scores × factor (derived: empty but in attn_update's copies) */
	Mat masked;   /* n × m  scaled, masked cells replaced by the fill (−∞ by default) (derived) */
	Mat weights;  /* n × m  row-wise softmax of masked; a row with no visible key is 0 */
	Mat weighted; /* n × d_v  weights · V_head  ("output" of the head in --dump) */
	/* ALiBi (empty without): bias_ij = −slope·|i − j|; biased = scaled + bias, what the mask reads (derived) */
	Mat bias, biased;     /* n × m */
	/* FlashAttention (empty without): the state of each row after each key block c (nkb = ⌈m / block_k⌉) */
	Mat flash_m, flash_l; /* n × nkb: running maximum (−∞ before any visible key) and running sum */
	Mat flash_O;          /* n × nkb·d_v: running unnormalised output, d_v columns per key block */
	Mat flash_out;        /* n × d_v: O / l after the last tile (0 where l = 0): equals weighted */
	/* Decoding (empty without): row t is step t; cache columns j ≤ t (within the window) are filled */
	Mat dec_scores;       /* n × m: q_t · k_j, the raw score, for the cached keys */
	Mat dec_weights;      /* n × m: softmax over the cache (after scale, ALiBi and mask) */
	Mat dec_weighted;     /* n × d_v */
	Mat win_weights;      /* n × m: StreamingLLM's comparison, a plain window of the cache's size (empty without) */
	/* Soft-capping (empty but in attn_update's copies): c·tanh(x/c) of biased or scaled, what the mask reads (derived) */
	Mat capped;           /* n × m */
	/* Attention sinks (empty without): the weight row i gave the head's sink, e^sink / (e^sink + Σ_k e^s_ik) */
	Mat sink;             /* n × 1 */
	/* Linear attention (empty without "linear_attention"): engine/variants/linear.c */
	Mat phi_q, phi_k;     /* n × d_k, m × d_k: elu + 1 of the head's q and k rows */
	Mat lin_scores;       /* n × m: φ(q_i)·φ(k_j), 0 where causal hides j */
	Mat lin_z;            /* n × 1: Σ_j lin_scores_ij + eps */
	Mat lin_out;          /* n × d_v: (lin_scores·V)_i / z_i */
	Mat lin_state;        /* d_k × d_v: φ(K)ᵀV after the last token */
	Mat lin_ksum;         /* 1 × d_k: Σ_j φ(k_j) after the last token */
	Mat lin_out_state;    /* n × d_v: φ(q_i)ᵀS_i / (φ(q_i)·Σφ(k) + eps), S_i the state query i reads */
	/* Gated DeltaNet (empty without "gated_deltanet"): engine/variants/deltanet.c; row t is token t's step */
	Mat gdn_q, gdn_k;     /* n × d_k: L2-normalised (q also / √d_k) */
	Mat gdn_beta, gdn_g;  /* n × 1 */
	Mat gdn_recall, gdn_delta, gdn_out, gdn_out_chunk; /* n × d_v */
	Mat gdn_state;        /* d_k × d_v after the last token */
	/* Gated DeltaNet as the layer's mixer (empty without "mixer"): the state after each token, row t
	 * S_t flattened (d_k·d_v); each row's RMS of gdn_out (n × 1); RMSNorm(o)·w ⊙ SiLU(z) (n × d_v) */
	Mat gdn_states, gdn_rms, gdn_gated;
	/* Differential attention (empty without "diff_attn"): engine/variants/diffattn.c; head 2p and 2p + 1 hold pair p's */
	Mat diff_a1, diff_a2; /* n × m: the weights of head 2p and of head 2p + 1 */
	Mat diff_a;           /* n × m: A1 − λ·A2 */
	Mat diff_o, diff_out; /* n × 2·d_v: (A1 − λ·A2)·[V_2p | V_2p+1], and its RMSNorm · subln · (1 − λ_init) */
	Mat diff_rms;         /* n × 1: each row's √(mean(diff_o²) + eps) */
	/* Multi-head latent attention (empty without): the scores in the absorbed form, q̃·c_KVᵀ + q_pe·k_peᵀ */
	Mat absorbed;         /* n × m */
	/* DeepSeek Sparse Attention (variants/dsa.c; empty without "dsa"): the top-k's bias 0 or −∞ and the scaled
	 * scores with it (derived, made when asked for), and the weights with every causal key kept */
	Mat index_mask, sparse; /* n × m */
	Mat dense_weights;    /* n × m: softmax(scaled + causal mask) */
} AttnHead;

typedef struct Attn {
	/*
	 * The model this layer was computed from (model/model.h): cfg, the
	 * settings the layer computed with (the lesson's, but for what
	 * model_layer_config lets a layer of a chain keep, and its input rows);
	 * lp, the layer's own parameters. Both are copies whose matrices are
	 * borrowed from the lesson (and, on a chain, the layer before's
	 * output). Read them through attn_config and attn_params.
	 */
	ModelConfig cfg;
	LayerParams lp;
	/*
	 * A real model's layer weights kept in its file (model.h: LayerParams.file):
	 * the bits of lp's file-kept matrices this computation made doubles of
	 * its own (attn_weights_make; freed by attn_weights_drop and attn_free).
	 */
	unsigned file_made;
	/*
	 * Borrowed: the whole lesson the computation was computed from. Not its
	 * model (that is cfg and lp): the course around it, which the model
	 * does not hold — its steps (attn_check_quiz_answers), its "compare"
	 * (--dump), its backward target on a chain (backward.c) and its
	 * layers' gradients' owners (train).
	 */
	const Lesson *top;
	LessonShape shape;    /* its sizes and features, for the catalogue's rules */
	double factor;        /* the scale factor applied to scores */
	Mat PE;               /* n × d_model, empty without positional encoding */
	Mat X;                /* n × d_model: input + PE */
	Mat PE_src;           /* m × d_src, cross-attention with positional encoding only */
	Mat S;                /* m × d_src: source input + PE (cross-attention only, else empty) */
	Mat Q, K, V;          /* Q: n × h·d_k;  K, V: m × g·d_k, m × g·d_v (g = kv_heads) */
	Mat Q_rot, K_rot;     /* RoPE: Q and K turned by their positions (empty without "rope") */
	Mat Q_norm, K_norm;   /* QK-norm: each head's row of Q and K RMS-normalised, times q_norm, k_norm (before RoPE) */
	Mat Q_l2, K_l2;       /* Llama 4's QK-norm: each head's row of Q_rot and K_rot scaled to RMS 1, no weights (after RoPE) */
	Mat angles_plain, angles; /* RoPE's angle tables, n × d_k (scaled or partial RoPE: variants/ropeangles.c) */
	int heads;
	int kv_heads;         /* g: query head i reads key/value head i / (heads / g) */
	double *slopes;       /* ALiBi: heads slopes (owned; NULL without "alibi") */
	double *rope_inv;     /* RoPE: the turned pairs' frequencies, rope_rotary_dim/2 (owned, made once at setup; NULL without "rope") */
	double rope_af;       /* and the factor cos and sin are multiplied by (YaRN's; 1 for the others) */
	AttnHead *head;       /* heads of them */
	/* Decoding with a KV cache (empty without "decode"): row t is what step t computes */
	Mat dec_q;            /* n × h·d_k: step t's query (after its bias and RoPE at position t) */
	Mat cache_K, cache_V; /* n × g·d_k, n × g·d_v: row p appended at step p (keys after RoPE at p) */
	Mat dec_output;       /* n × d_out: step t's attention output */
	Mat dec_layer_out;    /* n × d_model: step t's row out of the whole layer (block lessons) */
	Mat win_output;       /* n × d_out: step t's attention output over the plain window (StreamingLLM's comparison) */
	const Mat *dec_input; /* the rows decoding reads: X, or the layer before's dec_layer_out (borrowed) */
	Mat concat;           /* n × h·d_v */
	Mat output;           /* n × d_out: concat · W_o (a copy of concat without W_o) */
	/* The Transformer block around the attention (version 2; empty without one). */
	Mat residual1;        /* n × d_model: x + output */
	Mat norm1_stats;      /* n × 2: each row's mean and variance before N1 (RMSNorm: mean of squares, RMS) */
	Mat norm1;            /* n × d_model */
	Mat ffn_hidden;       /* n × d_ff: x·W_1 + b_1 */
	Mat ffn_gate;         /* n × d_ff: x·W_3 + b_3 (SwiGLU) */
	Mat ffn_act;          /* n × d_ff */
	Mat ffn_out;          /* n × d_model: ffn_act·W_2 + b_2 */
	Mat residual2;        /* n × d_model */
	Mat norm2_stats, norm2;
	/* Sandwich norms (Gemma): each sublayer's output normalised again before its residual add */
	Mat norm1_after_stats, norm1_after, norm2_after_stats, norm2_after; /* n × 2, n × d_model */
	Mat final;            /* n × d_model: the final norm, after the last layer */
	/* A mixture-of-experts FFN (variants/moe.c; empty without): E experts of d_ff, NaN where not chosen */
	Mat router_logits, router_probs; /* n × E */
	Mat moe_weights;                 /* n × E: the top_k's weights, NaN elsewhere */
	Mat expert_act;                  /* n × E·d_ff */
	Mat expert_out;                  /* n × E·d_model */
	Mat shared_gate, shared_out;     /* n × 1: σ(x·S_gate); n × d_model: the shared expert's SwiGLU (Qwen2-MoE) */
	Mat router_scores;               /* n × E: σ(router_logits) (DeepSeek-V3's sigmoid router) */
	Mat group_scores;                /* n × n_group: each group's sum of its top 2 bias-corrected scores */
	Mat scores_choice;               /* n × E: scores + e_bias in the groups kept, NaN elsewhere */
	/* The LM head (the last layer of a lesson with a vocabulary; empty without): */
	Mat logits;           /* n × vocab: the last layer's rows (after the final norm) · unembedᵀ */
	Mat next_p;           /* 1 × vocab: softmax(logits[logits_row] / temperature) */
	Mat logits_raw;       /* n × vocab: with a final soft cap, the logits before it (logits = c·tanh(raw/c)); else empty */
	/* Multi-head latent attention (variants/mla.c; empty without "mla"): r = q_lora_rank, c = kv_lora_rank */
	Mat c_Q;              /* n × r: RMSNorm(x·W_qa)·q_a_norm */
	Mat c_KV, k_pe;       /* m × c, m × d_rope: x·W_kva split, c_KV normalised */
	Mat q_nope, q_pe;     /* n × h·d_nope, n × h·d_rope (turned) */
	Mat k_pe_rot;         /* m × d_rope: k_pe turned, one for every head */
	Mat q_tilde;          /* n × h·c: q_nope·W^Kᵀ a head */
	Mat absorbed_out;     /* n × h·d_v: (weights·c_KV)·W^V a head */
	Mat mla_diff;         /* 1 × 2: the largest |absorbed − scores| and |absorbed_out − weighted| */
	Mat kv_cache;         /* 4 × 4: rows MHA, GQA, MQA, MLA; the lesson's numbers, bytes; DeepSeek-V3's numbers, bytes in 61 layers */
	Mat diff_lambda;      /* 1 × 4: differential attention's e^(λ_q1·λ_k1), e^(λ_q2·λ_k2), λ_init, λ */
	/* Gated attention (variants/gated.c; empty without "W_gate"): n × h·d_v each */
	Mat gate;             /* x·W_gate, from the rows the queries come from */
	Mat gate_sig;         /* σ(gate) */
	Mat gated;            /* concat ⊙ σ(gate): what output reads instead of concat */
	/* Gated DeltaNet as the layer's mixer (variants/deltanet.c; empty without): [Q | K | V] after the conv1d
	 * and SiLU (n × (h·d_k + g·d_k + g·d_v)), z = x·W_z (n × h·d_v) */
	Mat gdn_conv, gdn_z;
	Mat gdn_cache;        /* 4 × 4: what a Gated DeltaNet layer and a full-attention layer cache (deltanet.c) */
	/* DeepSeek Sparse Attention's lightning indexer (variants/dsa.c; empty without "dsa"): H_I index heads of d_I */
	Mat index_q;          /* n × H_I·d_I: c_Q·W_iq, its first d_rope columns a head turned */
	Mat index_k;          /* m × d_I: LayerNorm(x·W_ik), its first d_rope columns turned */
	Mat index_w;          /* n × H_I: x·W_iw / √(H_I·d_I) */
	Mat index_scores;     /* n × m: Σ_j w_tj·ReLU(q_tj·k_s) */
	Mat index_kept;       /* n × m: 1 where key s is among query t's top-k, else 0 */

	/*
	 * A lesson with "layers" is computed as a chain: this is layer
	 * `layer` of `nlayers`, and next is the layer after it (owned).
	 * cfg and lp are that layer's: its parameters with the lesson's
	 * shared settings (model_layer_config) and its input rows (the layer
	 * before's output).
	 */
	int layer, nlayers;
	struct Attn *next;
	/*
	 * An encoder–decoder (model.h: Model.encoder): on the first link, the
	 * encoder's own computation (owned), whose final output is the memory
	 * every cross-attention link reads as its source S. Each link's part
	 * (self- or cross-attention) and decoder layer are lp.part, lp.dec_layer.
	 */
	struct Attn *encoder;

	/* The backward pass (backward.h), when the lesson asks for it: owned, NULL otherwise. */
	struct AttnGrad *grad;
	double loss;          /* on the first layer: the loss L */
	/*
	 * root: the first link of the whole computation (for an encoder's links
	 * too), whose backward pass makes every link's gradients (NULL: this
	 * link). On the root, grad_stale: attn_update left the gradients to be
	 * made when first read, and a->grad holds the numbers
	 * from before, never shown, since every reader asks attn_grads_ready
	 * (backward.h) first.
	 */
	struct Attn *root;
	int grad_stale;
	int train_steps;      /* --train: the steps taken, the rate, and the loss before each and after the last (owned) */
	double train_lr;
	double *train_loss;

	int failed;           /* a pass ran out of memory (the computation is refused) */
	/* How long each stage's pass took when last run (ms, 0 when it did not run), and the overflow check. */
	double stage_ms[STAGE_COUNT];
	double check_ms;
	/* A pass wrote a number that is not finite outside a cell a −∞ mask hides (or may have: 0 promises none). */
	int nonfinite;
	/* While attn_update reruns a pass: the matrices it must remake (NULL: all of them). */
	const unsigned char *redo;
	/*
	 * While attn_update reruns a pass without rules (which remakes all it
	 * writes, and marks everything after it changed): every matrix marked
	 * changed before it, by the edit or a pass that ran again, so that it
	 * may itself do less (decode.c); NULL in a whole computation.
	 */
	const unsigned char *changed;
	/*
	 * While attn_update reruns a layer whose only change is rows
	 * [rows_lo, rows_hi) of its given input (an edit of X's cells): the
	 * passes up to the projection are row by row, so a pass may remake just
	 * those rows of what it makes (pass_project does: Q, and K and V
	 * without a source of their own); under a causal −∞ mask the passes
	 * from the scores to the output keep the rows before rows_lo
	 * (attention.c: rows_kept_before). rows_hi = 0: every row.
	 */
	int rows_lo, rows_hi;
	/*
	 * While attn_update reruns a layer whose only change is columns of W_q,
	 * W_k, W_v or their biases that only query heads [heads_lo, heads_hi)
	 * read, and no variant mixes heads before concat (compute.c:
	 * changed_heads): the passes from the projection to concat remake only
	 * those heads (their columns of Q, K and V). heads_hi = 0: every head.
	 */
	int heads_lo, heads_hi;

	/*
	 * A number no other computation has, nor this one before it was last
	 * recomputed (attn_touch): what a view caches about the numbers (a
	 * pane's range, a matrix's mean) it keeps under it.
	 */
	unsigned long version;
	/* attn_matrix_shown's dormant unembedding (vocab × d_model, no numbers), written through a const Attn *. */
	Mat head_shown;
	/* The derived matrices made on request (AttnCache: written through a const Attn * by attn_matrix). */
	AttnCache *cache;

	unsigned char *visible;      /* n × m: 1 where query i may attend to key j */
	unsigned char *row_all_masked; /* n: 1 when row i has no visible key (its weights are 0) */
	int any_row_all_masked;
	/* Linear attention: the largest |lin_out − lin_out_state| over the heads (the two ways agree), 0 without. */
	double linear_gap;
	/* Gated DeltaNet: the largest |gdn_out − gdn_out_chunk| over the heads, 0 without. */
	double gdn_gap;
} Attn;

/*
 * What a computation was computed from, as the model (model/model.h): the
 * settings its layer computed with and the layer's own parameters. The
 * engine and the views read the model through these, not through the
 * lesson.
 */
static inline const ModelConfig *attn_config(const Attn *a)
{
	return &a->cfg;
}
/*
 * A real model's weights (model.h: LayerParams.file) are doubles only while a
 * layer is computed and when something reads them after: lp's file-kept
 * matrices made a's own doubles (0, or -1 out of memory: those not made stay
 * dormant, rows and cols without numbers), and dropped again. The engine
 * makes a layer's before its passes and drops them after; attn_weights makes
 * them for a reader of their numbers (explain, the panes, --dump-weights,
 * generate), attn_params not (shapes and settings).
 */
int attn_weights_make(Attn *a);
void attn_weights_drop(Attn *a);
/* The same for the slots of bits want alone (model.h: LP_FILE_*), *made the bits made; and dropping those of bits. */
int attn_weights_make_some(Attn *a, unsigned want, unsigned *made);
void attn_weights_drop_some(Attn *a, unsigned bits);
static inline const LayerParams *attn_params(const Attn *a)
{
	return &a->lp;
}
/* attn_params for a reader of the weights' numbers: a real model's file-kept ones made first (attn_weights_make). */
static inline const LayerParams *attn_weights(const Attn *a)
{
	if (a->lp.files & ~a->file_made)
		(void)attn_weights_make((Attn *)a); /* a computation's own copy of the model, never a const object */
	return &a->lp;
}

/*
 * Give a's slots for derived matrices their memory now (touched, so that the
 * system maps it), when all of them hold at most max_numbers numbers: a view
 * calls it when it is idle, so that making a derived matrix later does not
 * wait for fresh pages (slow on some systems: ~30 ms for 8 MB here). Does
 * nothing when they have it. Returns 0, or -1 out of memory (nothing lost).
 */
int attn_reserve_derived(Attn *a, double max_numbers);

/* a's numbers changed (a pass or the backward pass ran again): a new a->version. */
void attn_touch(Attn *a);

/* Layer i of a computation (a itself for 0, or for a lesson without layers); NULL out of range. */
const Attn *attn_layer(const Attn *a, int i);
/* The rows a layer hands on: the block's last result (or the final norm), or the attention's output. */
const Mat *attn_layer_output(const Attn *a);
/* What the block makes last (before a final norm): norm2 or residual2, norm1 or residual1 without an FFN. */
const Mat *attn_block_output(const Attn *a);
/* What the whole computation ends with: the last layer's output. */
const Mat *attn_final_output(const Attn *a);
/* The LM head's settings as the passes use them: the temperature (1 unless > 0), top-k (10 unless ≥ 1, at most vocab), the row (n − 1 unless inside). */
double attn_temperature(const ModelConfig *cfg);
/*
 * 1 when every head's weights are exactly 0 past the diagonal (a causal or
 * window −∞ mask: the softmax writes those cells 0), so a product reading
 * them may skip those terms (mat_mul_chain and mat_mul_view with lower).
 */
int attn_weights_lower(const ModelConfig *cfg);
int attn_top_k(const ModelConfig *cfg);
int attn_logits_row(const ModelConfig *cfg);
/* The top k entries of a 1 × len row, largest first (ties: the lower index first), into idx (k of them); returns k (≤ len). */
int attn_top_entries(const double *row, int len, int k, int *idx);

/*
 * Generation through the KV cache (variants/decode.c: the decode stage's
 * step, one row through a layer, for every layer in turn): begin with a
 * computation of a model's n tokens (its last layer with the LM head; it must
 * outlive the generation), whose keys (as the scores read them) and values
 * are each layer's first cache rows, with room for `more` rows; NULL when out
 * of memory or when a layer cannot be decoded past its rows (not a causal −∞
 * mask of its own tokens, no block, dynamic NTK, QK-norm). Each step takes the
 * row entering layer 0 of the token at the next position and gives its
 * logits (vocab) and the next stage's probabilities (softmax(logits / T)),
 * valid until the next step: the numbers the full computation's last row
 * would hold, to the rounding of its one-row products. next_p NULL: the
 * logits alone (greedy decoding reads no probabilities: the next stage's
 * softmax over the vocabulary is not computed).
 */
typedef struct AttnGen AttnGen;
AttnGen *attn_gen_begin(const Attn *model, int more);
int attn_gen_step(AttnGen *g, const double *x, const double **logits, const double **next_p);
void attn_gen_free(AttnGen *g);

/* ---- the kernels, public so tests and `explain` can use them ---- */

/* PE: rows × cols; PE(pos,2i) = sin(pos/10000^(2i/cols)), PE(pos,2i+1) = cos(…). */
void attn_positional(Mat *PE);
/* x: len values, out: len; out = softmax(x), max subtracted; −∞ entries get 0.
 * Returns 0, or 1 when every entry is −∞ (out is then all 0). */
int attn_softmax_row(const double *x, double *out, int len);
/* A row's norm: rms 0 (NORM_LAYERNORM) LayerNorm (x − μ)/√(σ² + ε)·γ + β (β may be NULL), rms 1 (NORM_RMSNORM)
 * RMSNorm x/√(mean x² + ε)·γ, rms 2 (NORM_RMSNORM_1P) Gemma's x/√(mean x² + ε)·(1 + γ).
 * stats (2 numbers, may be NULL) gets (μ, σ²), or (mean x², RMS). */
void attn_norm_row(const double *x, double *out, int len, int rms, double eps, const double *gamma,
                   const double *beta, double *stats);
/* The FFN's activations, cell by cell: relu, the exact (erf) gelu, GPT-2's tanh gelu (gelu_new), silu. */
double attn_relu(double x);
double attn_gelu(double x);
double attn_gelu_tanh(double x);
double attn_silu(double x);
/*
 * out[i] = silu(h[i])·gate[i] for i < n (out may be h or gate), attn_silu's h/(1 + e^−h) with the
 * e^−h through mat_exp_shifted (base/vexp.c: following the kernel's kind): SwiGLU's activation, the
 * dense FFN's and a mixture's experts' alike.
 */
void attn_swiglu(size_t n, const double *h, const double *gate, double *out);

/* Softmax over x and one more logit, the sink, whose column is dropped: out_j = e^(x_j − M) / (e^(sink − M) + Σ_k e^(x_k − M)),
 * M the maximum of x and the sink (gpt-oss); −∞ entries get 0. Returns the sink's share, 1 − Σ_j out_j. */
double attn_softmax_sink_row(const double *x, double *out, int len, double sink);

/* FlashAttention: the tile (query block qb, key block kb) has no visible cell under a −∞ mask, so it is skipped. */
int attn_flash_skipped(const Attn *a, int qb, int kb);

/* ---- the matrices and stages of a computed lesson (names and kinds: catalog.h) ---- */

/*
 * The matrix (for per-head ones, of head h); NULL when absent in this lesson
 * (or, for a derived one, when there is no memory to make it). A derived
 * matrix (scaled, masked, bias, biased) is made when asked for and stays
 * valid while fewer than ATTN_DERIVED_SLOTS other derived matrices are asked
 * for, and until the computation is recomputed or freed: a view that draws
 * one stage (at most three derived matrices of one head) may hold its
 * pointers for a frame.
 */
const Mat *attn_matrix(const Attn *a, AttnMatrix which, int h);
/*
 * attn_matrix for a view that reads the cells it shows one at a time (the
 * full-screen view's panes): a real model's unembedding kept in its file's
 * dtype comes back dormant, its rows and cols without numbers (a == NULL;
 * its cells through attn_cell, from the file's numbers), so showing the LM
 * head never makes the whole head doubles (226 MB for SmolLM2-135M); any
 * other matrix as attn_matrix gives it.
 */
const Mat *attn_matrix_shown(const Attn *a, AttnMatrix which, int h);
/* Whether attn_matrix(a, which, h) would give a matrix: without making a derived one. */
int attn_has(const Attn *a, AttnMatrix which, int h);
/* One cell of a matrix, (i, j) inside its shape: a derived one is worked out without making the matrix. */
double attn_cell(const Attn *a, AttnMatrix which, int h, int i, int j);
/* Whether which is one of the derived stages' matrices (not kept; made when asked for). */
int attn_derived(AttnMatrix which);
/*
 * The panes stage st shows in this computation: its operands, then its
 * result (the last one is what a question on that stage hides). Returns the count.
 */
int attn_stage_panes(const Attn *a, Stage st, StagePane out[STAGE_MAX_PANES]);
/* The same, only the matrices. */
int attn_stage_matrices(const Attn *a, Stage st, AttnMatrix out[STAGE_MAX_PANES]);

/* The computation's entry points (compute.c), for every caller that names only this header. */
#include "engine/compute.h"

#endif
