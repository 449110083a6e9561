/* variants.h: the attention variants, one file each (variants/NAME.c), in one list.
 *
 * A variant is what a lesson may switch on beside plain attention (RoPE,
 * ALiBi, the flash tiles, decoding with a KV cache, the sliding window, shared
 * key/value heads): the stage it adds, that stage's pass and its rules, how a cell
 * of what it makes is explained and which operands light up, and its hooks
 * into the core's passes (a bias on the scaled scores, matrices the scores
 * read instead of Q and K, what attn_update
 * compares). The core (attention.c, compute.c, backward.c, matrices.c,
 * inspect/explain.c) asks this list and names no variant (inspect/dump.c
 * still writes the flash and decode objects of --dump itself).
 *
 * Adding one: a file variants/NAME.c defining `const AttnVariant
 * variant_NAME`, and one line X(NAME) below (src/README.md, "Adding a variant").
 */
#ifndef ATTNVIZ_VARIANTS_H
#define ATTNVIZ_VARIANTS_H

#include "engine/celltext.h"
#include "engine/kernels.h"

#define ATTN_VARIANTS(X) \
	X(alibi)             \
	X(qkl2)              \
	X(rope)              \
	X(qknorm)            \
	X(flash)             \
	X(decode)            \
	X(window)            \
	X(gqa)               \
	X(softcap)           \
	X(sinks)             \
	X(ropeangles)        \
	X(linear)            \
	X(linearstate)       \
	X(deltanet_conv)     \
	X(deltanet)         \
	X(deltanet_norm)     \
	X(deltanet_cache)    \
	X(mla)               \
	X(mla_heads)         \
	X(mla_absorb)        \
	X(dsa_index)         \
	X(dsa_topk)          \
	X(dsa_dense)         \
	X(diffattn)          \
	X(diffattn_out)       \
	X(gated)              \
	X(moe)               \
	X(moe_choice)        \
	X(moe_topk)          \
	X(moe_experts)       \
	X(streaming)

/* How a variant explains a cell of a matrix its stage makes (b holds the cell's value line already). */
typedef void (*VariantExplain)(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8);
/* The operands of such a cell, for highlighting (ExplainOperand: celltext.h). Returns the count. */
typedef int (*VariantOperands)(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4]);

typedef struct AttnVariant {
	const char *name;   /* its key in a lesson ("alibi") */
	FeatureSet feature; /* the FEAT_* bit of a lesson that has it (LessonShape.features) */

	/* ---- its stage (catalog.c has the stage's names, panes, formula and blurb) */
	Stage stage;                             /* the stage it adds (its own only with a kernel) */
	StageKernel kernel;                      /* that stage's pass */
	StageRule rules[ATTN_STAGE_RULES];       /* what the pass remakes from what (kernels.h) */
	int checks_itself;                       /* the pass notes a non-finite number as it writes (a->nonfinite) */
	/*
	 * 1: it keeps heads and tokens apart up to concat: what a head's
	 * scores, weights and sums read is that head's own, and each row of
	 * what the scores read (q, k as it turns them) is made from its own
	 * token's row alone. An edit of the weights one head reads then reaches
	 * only that head there, and an edit of input rows only those rows and
	 * keys of the scores (attn_heads_apart). 0, the default, makes every
	 * edit remake every head and row while it is on.
	 */
	int heads_apart;
	VariantExplain explain;                  /* a cell of a matrix the stage makes */
	VariantOperands operands;

	/* ---- its hooks into the core's passes; each may be NULL (or AM_COUNT) */
	/*
	 * A term added to query i's scaled score of key j in head h (scaled +
	 * term is what the mask reads): the stage shows the term alone as
	 * bias_matrix and the sum as biased_matrix, both derived (made when
	 * asked for, never kept). At most one variant of a lesson has one.
	 */
	double (*score_bias)(const Attn *a, int h, int i, int j);
	AttnMatrix bias_matrix, biased_matrix;
	/* Matrices the scores read instead of the core's (Q → Q_rot), or W_o instead of concat (gated): pairs { core, its }, ending with AM_COUNT. */
	const AttnMatrix (*reads)[2];
	/*
	 * The same turn on one head's row x (d_k numbers) of a query (key 0) or a key (key 1) at position pos
	 * (decoding a token). Decoding turns a row with the list's last variant first: what a variant reads
	 * is what the variants after it made (attn_reads_after: QK-norm before RoPE).
	 */
	void (*turn_row)(const Attn *a, double *x, int pos, int key);
	/* Instead of turn_row, the turn of a whole row x (len numbers: h·d_k of a query, g·d_k of a key): QK-norm over the projection. */
	void (*turn_whole)(const Attn *a, double *x, int len, int pos, int key);
	/* The gradients at its reads (dQ_rot, dK_rot in dq, dk) back to the core's matrices (dQ, dK), in place. */
	void (*backward)(const Attn *a, Mat *dq, Mat *dk);
	/* Its own state of a computation (a->shape and sizes set): 0, or -1 out of memory; and its release. */
	int (*setup)(Attn *a, const ModelConfig *cfg, const LayerParams *lp);
	void (*release)(Attn *a);
	/* Its settings do not fit the lesson's sizes: the part at fault, or NULL (the engine's own guard). */
	const char *(*fault)(const ModelConfig *cfg, const LayerParams *lp);
	/* Its settings are the same in x and y (attn_update reuses a computation only then). */
	int (*same)(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp);
	/* Words inside the decode step's explanation (translated where they are used), NULL: none. */
	const char *decode_note; /* after "made at step t from token t's row alone" for q and k */
	const char *decode_adj;  /* in "softmax over the cached keys of the scaled…, masked scores" */
	const char *decode_keep; /* after "it stays in the cache for the steps after it" */

	/* ---- a kind of mask (the window): what the scores' mask and the KV cache keep */
	/* The first key query t sees of those before it, the first row the rolling cache keeps at step t: 0 keeps all. */
	int (*keep_first)(const ModelConfig *cfg, int t);
	/* A cache that keeps rows the mask would drop (StreamingLLM's first tokens): at step t the cache keeps rows
	 * [0, *first) and [*lo, t]; it may raise *first and *lo. plain: the comparison without them (a window as long). */
	void (*cache_runs)(const ModelConfig *cfg, int t, int plain, int *first, int *lo);
	/* The lesson's single mask (part −1) or its list's part `part` is its kind and does not fit the lesson's sizes. */
	int (*mask_fault)(const ModelConfig *cfg, int part);
	/* Why the lesson's single mask hides key j from query i, ending with what the cell becomes (fill): 1, or 0 when not its kind. */
	int (*masked_why)(StrBuf *b, const ModelConfig *cfg, int i, int j, const char *fill);

	/* ---- a sharing of heads (grouped-query attention): which K/V columns a query head reads */
	/* The key/value head query head h reads (the core's: h). */
	int (*kv_head)(const Attn *a, int h);
	/* Its settings of the heads do not fit: the part at fault, or NULL (checked with the sizes, before any matrix). */
	const char *(*heads_fault)(const ModelConfig *cfg, const LayerParams *lp);
	/* Words after a score's "q_i · k_j" line on what head h shares. */
	void (*head_note)(StrBuf *b, const Attn *a, int h);

	/* ---- a function on each score before the mask (soft-capping): the mask reads f(scaled [+ bias]) */
	double (*score_map)(const Attn *a, double x);      /* f(x) */
	void (*score_map_row)(const Attn *a, double *row, int len); /* f of each of len cells in place, score_map's bits; or NULL */
	double (*score_map_grad)(const Attn *a, double x); /* f'(x), for the backward pass */
	void (*score_map_grad_row)(const Attn *a, double *row, int len); /* f' of each of len cells in place, score_map_grad's bits; or NULL */
	AttnMatrix mapped_matrix;                          /* f of every cell, a derived matrix (made when asked for) */

	/* ---- a learned logit beside the keys (attention sinks): each row's softmax of head h runs over its keys and it */
	double (*sink_logit)(const Attn *a, int h);

	/* ---- the heads' outputs made another way (differential attention): row i of head h's d_v numbers concat takes */
	const double *(*head_row)(const Attn *a, int h, int i);
	AttnMatrix head_row_of; /* the per-head matrix head_row points into (explain names it for a cell of concat) */
} AttnVariant;

#define X(name) extern const AttnVariant variant_##name;
ATTN_VARIANTS(X)
#undef X

/* Every variant, in the list's order, and how many. */
extern const AttnVariant *const attn_variants[];
extern const int attn_variant_count;

/* The variant whose stage is st; NULL when st is the core's. */
const AttnVariant *attn_variant_of_stage(Stage st);
/* Whether a has variant v switched on. */
int attn_variant_on(const Attn *a, const AttnVariant *v);
/* The variant of a that adds a term to the scaled scores (score_bias), NULL without one. */
const AttnVariant *attn_score_bias(const Attn *a);
/* The matrix a's scores read for the core's w (AM_Q, AM_K): a variant's (AM_Q_ROT) or w itself. */
AttnMatrix attn_reads(const Attn *a, AttnMatrix w);
/* What variant v reads for the core's w: what the variants after it in the list make of w (RoPE turns QK-norm's Q_norm), or w. */
AttnMatrix attn_reads_after(const Attn *a, const AttnVariant *v, AttnMatrix w);
/* The first key query t sees of those before it, the first row decoding's cache keeps at step t (keep_first). */
int attn_keep_first(const ModelConfig *cfg, int t);
/* Whether key j is in the KV cache at step t: generated (j ≤ t) and not dropped (keep_first, cache_runs). */
int attn_in_cache(const ModelConfig *cfg, int t, int j);
/* The same for plain (1): StreamingLLM's comparison, the plain window as long as its cache. */
int attn_cache_has(const ModelConfig *cfg, int t, int j, int plain);
/* The rows the cache keeps at step t, ascending, into rows (t + 1 ints; may be NULL): how many. */
int attn_cache_rows(const ModelConfig *cfg, int t, int plain, int *rows);
/* Whether the single mask (part −1) or the list's part `part` is at fault for a variant (mask_fault). */
int attn_mask_fault(const ModelConfig *cfg, int part);
/* A variant's sentence for a cell the lesson's mask hides (masked_why): 1 written, 0 the core's to write. */
int attn_masked_why(StrBuf *b, const ModelConfig *cfg, int i, int j, const char *fill);
/* The key/value head a's query head h reads (kv_head): h unless a variant shares heads. */
int attn_kv_head(const Attn *a, int h);
/*
 * 1 when every variant on a keeps its heads (and tokens) apart up to
 * concat (its heads_apart), so that an edit of the weights one head reads
 * reaches no other head before W_o (attn_update: heads_lo, heads_hi), and
 * one of input rows only those rows and keys of the scores (pass_scores). They do: RoPE and
 * its angles, shared key/value heads, ALiBi, windows, soft caps, sinks, a
 * gate, a mixture of experts, flash tiles, decoding. Not QK-norm (OLMo 2's
 * over the whole row), Llama 4's L2 norm, MLA, DSA, linear attention, Gated
 * DeltaNet, differential attention (heads that share what they are made
 * from, or are paired), nor a variant that does not say.
 */
int attn_heads_apart(const Attn *a);
/* The first variant's fault with the heads' settings (heads_fault), or NULL. */
const char *attn_heads_fault(const ModelConfig *cfg, const LayerParams *lp);
/* A variant's words on what head h shares (head_note), if a has one on. */
void attn_head_note(StrBuf *b, const Attn *a, int h);
/* The variant of a with a sink logit beside the keys (sink_logit), NULL without one. */
const AttnVariant *attn_sink(const Attn *a);
/* The variant of a that maps each score before the mask (score_map), NULL without one. */
const AttnVariant *attn_score_map(const Attn *a);
/* The variant of a that gives the heads' outputs concat takes (head_row), NULL without one: the core's weighted. */
const AttnVariant *attn_head_output(const Attn *a);
/* Whether w is a variant's derived matrix (its bias_matrix, biased_matrix or mapped_matrix). */
int attn_variant_derived(AttnMatrix w);

#endif
