/* catalog.c: the stage table and the look-ups of both tables (the matrix catalogue is catalog_matrices.c; see catalog.h). */
#include "model/catalog.h"
#include "base/i18n.h"
#include "base/strbuf.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A stage's panes, counted: PANES({ .matrix = AM_Q }, { .matrix = AM_K, .flags = PANE_TRANSPOSE }). */
#define PANES(...) .panes = { __VA_ARGS__ }, .npanes = (int)(sizeof((StagePane[]){ __VA_ARGS__ }) / sizeof(StagePane))

#define NONE STAGE_COUNT

/* ------------------------------------------------------------ stages */

#define HEAD PANE_HEAD_COLS

const StageKind stage_kinds[STAGE_COUNT] = {
	[STAGE_INPUT] = {
		.map = "x",
		.name = "input", .instead = NONE,
		PANES({ .matrix = AM_INPUT }, { .matrix = AM_X, .requires = FEAT_EMBED_SCALE, .unless = FEAT_POSITIONAL },
		      { .matrix = AM_SOURCE_INPUT, .requires = FEAT_SOURCE }),
		.formula = { { FEAT_EMBED_SCALE, 0, N_("X = input \u00b7 s   (Gemma: s = \u221ad_model, the embedding's normalizer)"),
		               N_("X = input * s   (Gemma: s = sqrt(d_model), the embedding's normalizer)") },
		             { 0, 0, N_("X: one row per token, d_model numbers each"), N_("X: one row per token, d_model numbers each") } },
		.what = N_("the input rows X (and the source)"),
		.blurb_en = "Each token starts as a row of numbers. On its own a row knows nothing about its neighbours.",
		.blurb_zh = "每个词先是一行数字。单独一行并不知道它的上下文。",
	},
	[STAGE_POSITIONAL] = {
		.map = "x",
		.name = "positional", .requires = FEAT_POSITIONAL, .flags = SF_ALWAYS,
		.instead = STAGE_INPUT,
		PANES({ .matrix = AM_INPUT }, { .matrix = AM_PE }, { .matrix = AM_X }, { .matrix = AM_SOURCE_INPUT, .requires = FEAT_SOURCE },
		      { .matrix = AM_PE_SRC, .requires = FEAT_SOURCE }, { .matrix = AM_S, .requires = FEAT_SOURCE }),
		.formula = { { FEAT_EMBED_SCALE, 0, "X = input\u00b7s + PE   PE(pos,2i) = sin(pos/10000^(2i/d)), PE(pos,2i+1) = cos(\u2026)",
		               "X = input*s + PE   PE(pos,2i) = sin(pos/10000^(2i/d)), PE(pos,2i+1) = cos(...)" },
		             { 0, 0, "X = input + PE   PE(pos,2i) = sin(pos/10000^(2i/d)), PE(pos,2i+1) = cos(\u2026)",
		               "X = input + PE   PE(pos,2i) = sin(pos/10000^(2i/d)), PE(pos,2i+1) = cos(...)" } },
		.what = N_("PE and X + PE"),
		.blurb_en = "Attention by itself ignores word order, so each position adds its own pattern of sines and cosines.",
		.blurb_zh = "注意力本身不看词序，所以每个位置加上自己的一组正弦和余弦。",
	},
	[STAGE_NORM1_PRE] = {
		.map = "N1",
		.name = "norm1", .requires = FEAT_BLOCK | FEAT_NORM | FEAT_PRENORM,
		.instead = STAGE_POSITIONAL,
		PANES({ .matrix = AM_X }, { .matrix = AM_LN1_GAMMA }, { .matrix = AM_LN1_BETA }, { .matrix = AM_NORM1_STATS }, { .matrix = AM_NORM1 }),
		/* a norm's formula, LayerNorm or RMSNorm: each one whole for the translation */
		.formula = { { FEAT_LAYERNORM, 0, N_("norm1 = N1(x)   LayerNorm: (x \u2212 \u03bc)/\u221a(\u03c3\u00b2 + \u03b5)\u00b7\u03b3 + \u03b2, each row"),
		               N_("norm1 = N1(x)   LayerNorm: (x - mean)/sqrt(var + eps)*gamma + beta, each row") },
		             { FEAT_NORM_1P, 0, N_("norm1 = N1(x)   RMSNorm (Gemma): x/\u221a(mean(x\u00b2) + \u03b5)\u00b7(1 + \u03b3), each row"),
		               N_("norm1 = N1(x)   RMSNorm (Gemma): x/sqrt(mean(x^2) + eps)*(1 + gamma), each row") },
		             { 0, 0, N_("norm1 = N1(x)   RMSNorm: x/\u221a(mean(x\u00b2) + \u03b5)\u00b7\u03b3, each row"),
		               N_("norm1 = N1(x)   RMSNorm: x/sqrt(mean(x^2) + eps)*gamma, each row") } },
		.what = N_("pre-norm: norm1 = N1(x), what the attention reads"),
		.blurb_en = "Pre-norm: the branch starts by bringing each row to mean 0 and variance 1; the residual path keeps x itself.",
		.blurb_zh = "前置归一化：分支一开始就把每一行变成均值 0、方差 1；残差通路保留 x 本身。",
	},
	[STAGE_PROJECT] = {
		.map = "attention",
		.name = "project", .instead = NONE, .flags = SF_PARAMS, .unless = FEAT_MLA,
		PANES({ .matrix = AM_X, .unless = FEAT_PRENORM }, { .matrix = AM_NORM1, .requires = FEAT_PRENORM }, { .matrix = AM_W_Q }, { .matrix = AM_Q },
		      { .matrix = AM_S, .requires = FEAT_SOURCE }, { .matrix = AM_W_K }, { .matrix = AM_K }, { .matrix = AM_W_V }, { .matrix = AM_V }),
		.formula = { { FEAT_SOURCE, 0, "Q = X\u00b7W_q   K = S\u00b7W_k   V = S\u00b7W_v", "Q = X.W_q   K = S.W_k   V = S.W_v" },
		             { 0, 0, "Q = X\u00b7W_q   K = X\u00b7W_k   V = X\u00b7W_v", "Q = X.W_q   K = X.W_k   V = X.W_v" } },
		.what = N_("Q = X\u00b7W_q, K = S\u00b7W_k, V = S\u00b7W_v"),
		.blurb_en = "Three learned matrices turn every row into a query (what am I looking for?), a key (what do I offer?) and a value (what do I pass on?).",
		.blurb_zh = "三个可学习的矩阵把每一行变成查询（我在找什么）、键（我能提供什么）和值（我要传递什么）。",
	},
	[STAGE_MLA_LATENT] = {
		.map = "attention",
		.name = "latent", .requires = FEAT_MLA, .instead = NONE, .flags = SF_PARAMS,
		PANES({ .matrix = AM_X, .unless = FEAT_PRENORM }, { .matrix = AM_NORM1, .requires = FEAT_PRENORM },
		      { .matrix = AM_W_QA }, { .matrix = AM_Q_A_NORM }, { .matrix = AM_C_Q }, { .matrix = AM_W_KVA },
		      { .matrix = AM_KV_A_NORM }, { .matrix = AM_K_PE }, { .matrix = AM_C_KV }),
		.formula = { { FEAT_MLA_QLORA, 0, N_("c_Q = RMSNorm(x·W_qa)·q_a_norm   [c_KV | k_pe] = x·W_kva   c_KV ← RMSNorm(c_KV)·kv_a_norm"),
		               N_("c_Q = RMSNorm(x.W_qa)*q_a_norm   [c_KV | k_pe] = x.W_kva   c_KV <- RMSNorm(c_KV)*kv_a_norm") },
		             { 0, 0, N_("[c_KV | k_pe] = x·W_kva   c_KV ← RMSNorm(c_KV)·kv_a_norm"),
		               N_("[c_KV | k_pe] = x.W_kva   c_KV <- RMSNorm(c_KV)*kv_a_norm") } },
		.what = N_("MLA's latents: c_Q, and c_KV with the shared k_pe, a few numbers a token instead of every head's k and v"),
		.blurb_en = "Multi-head latent attention squeezes each token into a short latent c_KV (plus one small RoPE key k_pe): the cache keeps only these, and every head's keys and values are unfolded from them.",
		.blurb_zh = "多头潜在注意力把每个词压缩成一个很短的潜向量 c_KV（外加一个小小的 RoPE 键 k_pe）：缓存只保存这些，每个头的键和值都由它们展开得到。",
	},
	[STAGE_MLA_HEADS] = {
		.map = "attention",
		.name = "mla_heads", .requires = FEAT_MLA, .instead = STAGE_MLA_LATENT,
		PANES({ .matrix = AM_C_Q }, { .matrix = AM_W_QB }, { .matrix = AM_W_Q }, { .matrix = AM_Q_NOPE, .flags = HEAD },
		      { .matrix = AM_Q_PE, .flags = HEAD }, { .matrix = AM_W_KVB }, { .matrix = AM_K_PE_ROT },
		      { .matrix = AM_K, .flags = HEAD }, { .matrix = AM_V, .flags = HEAD }, { .matrix = AM_Q, .flags = HEAD }),
		.formula = { { 0, 0, N_("q = c_Q·W_qb (or x·W_q) = [q_nope | q_pe] a head   [k_nope | v] = c_KV·W_kvb a head   q_pe, k_pe turned   Q = [q_nope | q_pe]   K = [k_nope | k_pe]"),
		               N_("q = c_Q.W_qb (or x.W_q) = [q_nope | q_pe] a head   [k_nope | v] = c_KV.W_kvb a head   q_pe, k_pe turned   Q = [q_nope | q_pe]   K = [k_nope | k_pe]") } },
		.what = N_("MLA's heads: q_nope, q_pe turned, k_pe turned once for all heads, and Q, K, V unfolded from the latents"),
		.blurb_en = "Each head unfolds its query and its key and value from the latents. Position enters only through the small RoPE part: q_pe and one k_pe that every head shares.",
		.blurb_zh = "每个头从潜向量展开自己的查询、键和值。位置信息只通过小小的 RoPE 部分进入：q_pe，以及所有头共用的一个 k_pe。",
	},
	[STAGE_DSA_INDEX] = {
		.map = "attention",
		.name = "indexer", .requires = FEAT_DSA, .instead = STAGE_MLA_HEADS,
		PANES({ .matrix = AM_C_Q }, { .matrix = AM_INDEX_Q }, { .matrix = AM_INDEX_K }, { .matrix = AM_INDEX_W },
		      { .matrix = AM_INDEX_SCORES }),
		.formula = { { 0, 0, N_("I_ts = \u03a3_j w_tj \u00b7 ReLU(q_tj \u00b7 k_s)   q = c_Q\u00b7W_iq a head, k = LayerNorm(x\u00b7W_ik), RoPE on their first d_rope   w = x\u00b7W_iw / \u221a(index_n_heads \u00b7 index_head_dim)"),
		               N_("I_ts = sum_j w_tj * ReLU(q_tj . k_s)   q = c_Q.W_iq a head, k = LayerNorm(x.W_ik), RoPE on their first d_rope   w = x.W_iw / sqrt(index_n_heads * index_head_dim)") } },
		.what = N_("DeepSeek Sparse Attention's lightning indexer: its q per index head, its one k, its weights, and the index score of every query and key"),
		.blurb_en = "DeepSeek-V3.2 first asks a small, cheap attention of its own which keys matter: a few index heads score every key with a ReLU instead of a softmax, each head weighted by the query itself.",
		.blurb_zh = "DeepSeek-V3.2 先用一个小而便宜的注意力问一问哪些键重要：几个索引头用 ReLU（而不是 softmax）给每个键打分，每个头的权重由查询自己决定。",
	},
	[STAGE_QK_NORM] = {
		.map = "attention",
		.name = "qk_norm", .requires = FEAT_QK_NORM, .instead = STAGE_PROJECT,
		PANES({ .matrix = AM_Q, .flags = HEAD }, { .matrix = AM_K, .flags = HEAD }, { .matrix = AM_Q_NORM_W },
		      { .matrix = AM_K_NORM_W }, { .matrix = AM_K_NORM, .flags = HEAD }, { .matrix = AM_Q_NORM, .flags = HEAD }),
		.formula = { { FEAT_QK_NORM_PROJ, 0, N_("QK-norm over the projection (OLMo 2): each whole row x of Q (and K), all heads at once: x/\u221a(mean(x\u00b2) + \u03b5)\u00b7q_norm"),
		               N_("QK-norm over the projection (OLMo 2): each whole row x of Q (and K), all heads at once: x/sqrt(mean(x^2) + eps)*q_norm") },
		             { FEAT_NORM_1P, 0, N_("QK-norm (Gemma 3): each head's row x of Q (and K): x/\u221a(mean(x\u00b2) + \u03b5)\u00b7(1 + q_norm) (k_norm for K)"),
		               N_("QK-norm (Gemma 3): each head's row x of Q (and K): x/sqrt(mean(x^2) + eps)*(1 + q_norm) (k_norm for K)") },
		             { 0, 0, N_("QK-norm: each head's row x of Q (and K): x/\u221a(mean(x\u00b2) + \u03b5)\u00b7q_norm (k_norm for K)"),
		               N_("QK-norm: each head's row x of Q (and K): x/sqrt(mean(x^2) + eps)*q_norm (k_norm for K)") } },
		.what = N_("Q_norm and K_norm: each head's q and k RMS-normalised, times their weights"),
		.blurb_en = "QK-norm brings every head's query and key to the same size before they meet, so a score cannot grow just because the weights did.",
		.blurb_zh = "QK-norm 在查询和键相遇之前，把每个头的查询和键都缩放到同样的大小，分数就不会只因为权重变大而变大。",
	},
	[STAGE_ANGLES] = {
		.map = "attention",
		.name = "angles", .requires = FEAT_ROPE_TABLE, .instead = STAGE_PROJECT,
		PANES({ .matrix = AM_ANGLES_PLAIN }, { .matrix = AM_ANGLES }),
		.formula = { { 0, 0, N_("angle(p, pair i) = p\u00b7inv_freq_i: unscaled base^(\u22122i/d), then as the scaling says (linear \u00f7s; dynamic a larger base; YaRN a ramp; llama3 bands)"),
		               N_("angle(p, pair i) = p*inv_freq_i: unscaled base^(-2i/d), then as the scaling says (linear /s; dynamic a larger base; YaRN a ramp; llama3 bands)") } },
		.what = N_("angles_plain and angles: the angle each pair turns by at each position, before and after scaling"),
		.blurb_en = "Each pair of columns turns at its own speed. Scaling for long context slows some of them down: compare the two tables column by column to see which dimensions are stretched.",
		.blurb_zh = "每一对列以各自的速度旋转。为长上下文做的缩放会让其中一些转得更慢：逐列比较这两张表，就能看出哪些维度被拉长了。",
	},
	[STAGE_ROTATE] = {
		.map = "attention",
		.name = "rotate", .requires = FEAT_ROPE, .instead = STAGE_PROJECT,
		PANES({ .matrix = AM_Q, .flags = HEAD, .unless = FEAT_QK_NORM }, { .matrix = AM_Q_NORM, .flags = HEAD },
		      { .matrix = AM_K, .flags = HEAD, .unless = FEAT_QK_NORM }, { .matrix = AM_K_NORM, .flags = HEAD },
		      { .matrix = AM_K_ROT, .flags = HEAD }, { .matrix = AM_Q_ROT, .flags = HEAD }),
		.formula = { { 0, 0, N_("RoPE: each pair (a, b) of a row at position p turns by \u03b8 = p\u00b7base^(\u22122i/d_k): (a cos \u03b8 \u2212 b sin \u03b8, a sin \u03b8 + b cos \u03b8)"),
		               N_("RoPE: each pair (a, b) of a row at position p turns by t = p*base^(-2i/d_k): (a cos t - b sin t, a sin t + b cos t)") } },
		.what = N_("Q_rot and K_rot: q and k rotated pair by pair by their positions"),
		.blurb_en = "RoPE turns each pair of columns of q and k by an angle that grows with the position, so q\u00b7k depends on how far apart the two tokens are, not where they are.",
		.blurb_zh = "RoPE 把 q 和 k 的每一对列按位置转过一个角度，于是 q\u00b7k 只取决于两个词相隔多远，而不是它们在哪里。",
	},
	[STAGE_QK_L2] = {
		.map = "attention",
		.name = "qk_l2", .requires = FEAT_QK_L2 | FEAT_ROPE, .instead = STAGE_PROJECT,
		PANES({ .matrix = AM_Q_ROT, .flags = HEAD }, { .matrix = AM_K_ROT, .flags = HEAD },
		      { .matrix = AM_K_L2, .flags = HEAD }, { .matrix = AM_Q_L2, .flags = HEAD }),
		.formula = { { 0, 0, N_("QK-norm after RoPE (Llama 4): each head's turned row x of Q_rot (and K_rot): x/\u221a(mean(x\u00b2) + \u03b5), no weights"),
		               N_("QK-norm after RoPE (Llama 4): each head's turned row x of Q_rot (and K_rot): x/sqrt(mean(x^2) + eps), no weights") } },
		.what = N_("Q_l2 and K_l2: each head's turned q and k scaled to root mean square 1, with no weights"),
		.blurb_en = "Llama 4 normalises q and k after RoPE has turned them, and with no weights: every query and key of a head ends with the same length, so a score is only the cosine of their angle times d_k.",
		.blurb_zh = "Llama 4 在 RoPE 旋转之后才归一化 q 和 k，而且不带权重：一个头里的每个查询和键最后长度都一样，分数就只是它们夹角的余弦乘以 d_k。",
	},
	[STAGE_SPLIT] = {
		.map = "attention",
		.name = "split", .requires = FEAT_MULTIHEAD, .instead = STAGE_PROJECT,
		PANES({ .matrix = AM_K, .flags = PANE_EACH_KV_HEAD }, { .matrix = AM_V, .flags = PANE_EACH_KV_HEAD },
		      { .matrix = AM_Q, .flags = PANE_EACH_HEAD }),
		.formula = { { FEAT_GQA, 0, N_("kv head j: columns [j\u00b7d_k, (j+1)\u00b7d_k) of K, [j\u00b7d_v, \u2026) of V; query head h reads kv head h/(heads/kv_heads)"),
		               N_("kv head j: columns [j*d_k, (j+1)*d_k) of K, [j*d_v, ...) of V; query head h reads kv head h/(heads/kv_heads)") },
		             { 0, 0, "head h: columns [h\u00b7d_k, (h+1)\u00b7d_k) of Q and K, [h\u00b7d_v, (h+1)\u00b7d_v) of V",
		               "head h: columns [h*d_k, (h+1)*d_k) of Q and K, [h*d_v, (h+1)*d_v) of V" } },
		.what = N_("Q, K, V cut into heads"),
		.blurb_en = "The columns of Q, K and V are cut into heads; each head attends on its own, looking for its own kind of relevance.",
		.blurb_zh = "Q、K、V 的列被切成多个头；每个头各自计算注意力，关注不同类型的相关性。",
	},
	[STAGE_SCORES] = {
		.map = "attention",
		.name = "scores", .instead = NONE,
		PANES({ .matrix = AM_Q, .flags = HEAD, .unless = FEAT_ROPE | FEAT_QK_NORM },
		      { .matrix = AM_Q_NORM, .flags = HEAD, .unless = FEAT_ROPE }, { .matrix = AM_Q_ROT, .flags = HEAD, .unless = FEAT_QK_L2 },
		      { .matrix = AM_Q_L2, .flags = HEAD },
		      { .matrix = AM_K, .flags = HEAD | PANE_TRANSPOSE, .unless = FEAT_ROPE | FEAT_QK_NORM },
		      { .matrix = AM_K_NORM, .flags = HEAD | PANE_TRANSPOSE, .unless = FEAT_ROPE },
		      { .matrix = AM_K_ROT, .flags = HEAD | PANE_TRANSPOSE, .unless = FEAT_QK_L2 },
		      { .matrix = AM_K_L2, .flags = HEAD | PANE_TRANSPOSE }, { .matrix = AM_W_E, .requires = FEAT_ADDITIVE },
		      { .matrix = AM_SCORES }),
		.formula = { { FEAT_ADDITIVE, 0, "scores: s_ij = w_e \u00b7 tanh(q_i + k_j) = \u03a3_c w_e[c] tanh(q_ic + k_jc)",
		               "scores: s_ij = w_e . tanh(q_i + k_j) = sum_c w_e[c] tanh(q_ic + k_jc)" },
		             { FEAT_QK_L2, 0, N_("scores = Q_l2\u00b7K_l2\u1d40   s_ij = q'_i \u00b7 k'_j (turned by RoPE, then each scaled to root mean square 1)"),
		               N_("scores = Q_l2.K_l2^T   s_ij = q'_i . k'_j (turned by RoPE, then each scaled to root mean square 1)") },
		             { FEAT_ROPE, 0, N_("scores = Q_rot\u00b7K_rot\u1d40   s_ij = q'_i \u00b7 k'_j (rotated by positions i and j)"),
		               N_("scores = Q_rot.K_rot^T   s_ij = q'_i . k'_j (rotated by positions i and j)") },
		             { FEAT_QK_NORM, 0, N_("scores = Q_norm\u00b7K_norm\u1d40   s_ij = q\u0302_i \u00b7 k\u0302_j (each normalised by QK-norm)"),
		               N_("scores = Q_norm.K_norm^T   s_ij = q^_i . k^_j (each normalised by QK-norm)") },
		             { 0, 0, "scores = Q\u00b7K\u1d40   s_ij = q_i \u00b7 k_j = \u03a3_c q_ic k_jc",
		               "scores = Q.K^T   s_ij = q_i . k_j = sum_c q_ic k_jc" } },
		.what = N_("q_i \u00b7 k_j (or the additive score), n \u00d7 m per head"),
		.blurb_en = "Each query is compared with every key by a dot product: a large score means a good match.",
		.blurb_zh = "每个查询和每个键做点积：分数越大，匹配越好。",
	},
	[STAGE_SCALE] = {
		.map = "attention",
		.name = "scale", .instead = NONE,
		PANES({ .matrix = AM_SCORES }, { .matrix = AM_SCALED }),
		.formula = { { FEAT_UNSCALED, 0, N_("scaled = scores   (scale off: \u00d7 1)"), N_("scaled = scores   (scale off: * 1)") },
		             { FEAT_SCALE_VALUE, 0, N_("scaled = scores \u00d7 scale   (the lesson's own factor, not 1/\u221ad_k)"),
		               N_("scaled = scores * scale   (the lesson's own factor, not 1/sqrt(d_k))") },
		             { 0, 0, "scaled = scores / \u221ad_k", "scaled = scores / sqrt(d_k)" } },
		.what = N_("scores \u00d7 the scale factor"),
		.blurb_en = "Dot products grow with the width d_k; dividing by \u221ad_k keeps them near unit size so softmax does not saturate.",
		.blurb_zh = "点积随维度 d_k 变大；除以 \u221ad_k 让它们保持在单位量级，softmax 才不会饱和。",
	},
	[STAGE_BIAS] = {
		.map = "attention",
		.name = "bias", .requires = FEAT_ALIBI, .instead = STAGE_SCALE,
		PANES({ .matrix = AM_SCALED }, { .matrix = AM_BIAS }, { .matrix = AM_BIASED }),
		.formula = { { 0, 0, "ALiBi: biased_ij = scaled_ij \u2212 slope_h \u00b7 |i \u2212 j|", "ALiBi: biased_ij = scaled_ij - slope_h * |i - j|" } },
		.what = N_("ALiBi's bias \u2212slope\u00b7|i \u2212 j| beside the scaled scores"),
		.blurb_en = "ALiBi gives no positions to the rows at all: it subtracts a penalty that grows with the distance between query and key, steeper in some heads than in others.",
		.blurb_zh = "ALiBi 根本不给行加位置：它按查询与键之间的距离减去一个惩罚，有的头陡一些，有的头缓一些。",
	},
	[STAGE_DSA_TOPK] = {
		.map = "attention",
		.name = "sparse", .requires = FEAT_DSA, .instead = STAGE_SCALE,
		PANES({ .matrix = AM_INDEX_SCORES }, { .matrix = AM_INDEX_KEPT }, { .matrix = AM_SCALED }, { .matrix = AM_SPARSE }),
		.formula = { { 0, 0, N_("kept_ts = 1 for the index_topk keys s \u2264 t with the largest I_ts (a tie: the earlier key)   sparse_ts = scaled_ts + (0 if kept, else \u2212\u221e)"),
		               N_("kept_ts = 1 for the index_topk keys s <= t with the largest I_ts (a tie: the earlier key)   sparse_ts = scaled_ts + (0 if kept, else -inf)") } },
		.what = N_("DSA's kept set: each query's top-k keys by index score, and the scaled MLA scores with \u2212\u221e on every other key"),
		.blurb_en = "Each query keeps only its top-k keys by index score; every other key gets \u2212\u221e added to its MLA score, exactly as the mask does, so it will get no weight at all.",
		.blurb_zh = "每个查询只保留索引分数最高的 top-k 个键；其余的键在 MLA 分数上加 \u2212\u221e，和掩码的做法一样，于是它们一点权重也得不到。",
	},
	[STAGE_SOFTCAP] = {
		.map = "attention",
		.name = "softcap", .requires = FEAT_SOFTCAP, .instead = STAGE_SCALE,
		PANES({ .matrix = AM_SCALED, .unless = FEAT_ALIBI }, { .matrix = AM_BIASED }, { .matrix = AM_CAPPED }),
		.formula = { { FEAT_ALIBI, 0, N_("soft-capping: capped_ij = c · tanh(biased_ij / c)   (Gemma 2: c = attn_logit_softcapping)"),
		               N_("soft-capping: capped_ij = c * tanh(biased_ij / c)   (Gemma 2: c = attn_logit_softcapping)") },
		             { 0, 0, N_("soft-capping: capped_ij = c · tanh(scaled_ij / c)   (Gemma 2: c = attn_logit_softcapping)"),
		               N_("soft-capping: capped_ij = c * tanh(scaled_ij / c)   (Gemma 2: c = attn_logit_softcapping)") } },
		.what = N_("the scaled scores squashed into (−c, c) by c · tanh(s / c)"),
		.blurb_en = "Soft-capping bends every score smoothly towards ±c: small scores pass almost unchanged, large ones can never pass c, so no single key can take all the weight.",
		.blurb_zh = "软上限把每个分数平滑地压向 ±c：小分数几乎不变，大分数永远超不过 c，于是没有哪个键能独占全部权重。",
	},
	[STAGE_MASK] = {
		.map = "attention",
		.name = "mask", .requires = FEAT_MASK, .instead = STAGE_SCALE, .flags = SF_ALWAYS,
		PANES({ .matrix = AM_SCALED, .unless = FEAT_ALIBI | FEAT_SOFTCAP }, { .matrix = AM_BIASED, .unless = FEAT_SOFTCAP },
		      { .matrix = AM_SPARSE }, { .matrix = AM_CAPPED }, { .matrix = AM_MASKED }),
		.formula = { { FEAT_DSA, 0, N_("masked_ij = sparse_ij where key j is visible to query i, else \u2212\u221e"),
		               N_("masked_ij = sparse_ij where key j is visible to query i, else -inf") },
		             { FEAT_SOFTCAP, 0, N_("masked_ij = capped_ij where key j is visible to query i, else \u2212\u221e"),
		               N_("masked_ij = capped_ij where key j is visible to query i, else -inf") },
		              { FEAT_WINDOW, 0, N_("masked_ij = scaled_ij where j \u2264 i and i \u2212 j < w (the window), else \u2212\u221e"),
		               N_("masked_ij = scaled_ij where j <= i and i - j < w (the window), else -inf") },
		             { 0, 0, N_("masked_ij = scaled_ij where key j is visible to query i, else \u2212\u221e"),
		               N_("masked_ij = scaled_ij where key j is visible to query i, else -inf") } },
		.what = N_("masked cells replaced by the fill"),
		.blurb_en = "Before softmax, the cells a query must not see are set to \u2212\u221e, so they will get exactly zero weight.",
		.blurb_zh = "在 softmax 之前，把不该看到的位置设为 \u2212\u221e，它们的权重就恰好是 0。",
	},
	[STAGE_SOFTMAX] = {
		.map = "attention",
		.name = "softmax", .instead = NONE,
		/* without a mask, masked is scaled: the softmax reads scaled */
		PANES({ .matrix = AM_MASKED, .requires = FEAT_MASK }, { .matrix = AM_SCALED, .unless = FEAT_MASK | FEAT_SOFTCAP },
		      { .matrix = AM_CAPPED, .unless = FEAT_MASK }, { .matrix = AM_WEIGHTS }),
		.formula = { { FEAT_SINKS, 0, N_("weights_ij = exp(s_ij \u2212 max_i) / (exp(sink_h \u2212 max_i) + \u03a3_k exp(s_ik \u2212 max_i)), max_i over the row and the sink"),
		               N_("weights_ij = exp(s_ij - max_i) / (exp(sink_h - max_i) + sum_k exp(s_ik - max_i)), max_i over the row and the sink") },
		             { FEAT_MASK, 0, N_("weights = softmax(masked)  row i: exp(s_ij \u2212 max_i) / \u03a3_j exp(s_ij \u2212 max_i)"),
		               N_("weights = softmax(masked)  row i: exp(s_ij - max_i) / sum_j exp(s_ij - max_i)") },
		             { 0, 0, N_("weights = softmax(scaled)  row i: exp(s_ij \u2212 max_i) / \u03a3_j exp(s_ij \u2212 max_i)"),
		               N_("weights = softmax(scaled)  row i: exp(s_ij - max_i) / sum_j exp(s_ij - max_i)") } },
		.what = N_("row-wise softmax: the attention weights"),
		.blurb_en = "Softmax turns each row of scores into weights that are positive and sum to 1.",
		.blurb_zh = "softmax 把每一行分数变成为正且和为 1 的权重。",
	},
	[STAGE_SINKS] = {
		.map = "attention",
		.name = "sinks", .requires = FEAT_SINKS, .instead = STAGE_SOFTMAX,
		PANES({ .matrix = AM_SINKS }, { .matrix = AM_WEIGHTS }, { .matrix = AM_SINK }),
		.formula = { { 0, 0, N_("sink_i = e^(sink_h) / (e^(sink_h) + \u03a3_k e^(s_ik)) = 1 \u2212 \u03a3_j weights_ij   (gpt-oss: a learned logit per head, its column dropped)"),
		               N_("sink_i = e^(sink_h) / (e^(sink_h) + sum_k e^(s_ik)) = 1 - sum_j weights_ij   (gpt-oss: a learned logit per head, its column dropped)") } },
		.what = N_("the share of each row the head's sink took: what its weights lack of 1"),
		.blurb_en = "An attention sink is one more column in the softmax with no value behind it: what it takes is simply lost, so a head that finds nothing worth reading can give almost nothing to every key.",
		.blurb_zh = "注意力汇点是 softmax 里多出来的一列，它背后没有值：它分走的权重就这样丢掉了，所以一个找不到值得读的内容的头，可以几乎什么都不给任何键。",
	},
	[STAGE_DSA_DENSE] = {
		.map = "attention",
		.name = "dense", .requires = FEAT_DSA, .instead = STAGE_SOFTMAX,
		PANES({ .matrix = AM_DENSE_WEIGHTS }, { .matrix = AM_WEIGHTS }),
		.formula = { { 0, 0, N_("dense = softmax(scaled + causal mask): every earlier key kept   weights = softmax(sparse + causal mask): only the top-k"),
		               N_("dense = softmax(scaled + causal mask): every earlier key kept   weights = softmax(sparse + causal mask): only the top-k") } },
		.what = N_("DSA's sparse weights beside dense MLA's, from the same scores"),
		.blurb_en = "The same scores, softmaxed twice: once over every earlier key (dense MLA), once over the kept keys only. The weight the dropped keys had is shared out among the kept ones.",
		.blurb_zh = "同样的分数做两次 softmax：一次覆盖所有之前的键（稠密 MLA），一次只覆盖保留的键。被丢掉的键原有的权重，分给了保留下来的键。",
	},
	[STAGE_WEIGHTED] = {
		.map = "attention",
		.name = "weighted", .instead = NONE,
		PANES({ .matrix = AM_WEIGHTS }, { .matrix = AM_V, .flags = HEAD }, { .matrix = AM_WEIGHTED }),
		.formula = { { 0, 0, "out = weights\u00b7V   out_i = \u03a3_j w_ij v_j", "out = weights.V   out_i = sum_j w_ij v_j" } },
		.what = N_("weights \u00b7 V for each head"),
		.blurb_en = "Each output row is the weighted sum of the value rows: a token's new meaning, mixed from its context.",
		.blurb_zh = "每一行输出是值向量的加权和：一个词从上下文中得到的新含义。",
	},
	[STAGE_MLA_ABSORB] = {
		.map = "attention",
		.name = "absorb", .requires = FEAT_MLA, .instead = STAGE_WEIGHTED,
		PANES({ .matrix = AM_Q_TILDE, .flags = HEAD }, { .matrix = AM_C_KV }, { .matrix = AM_SCORES }, { .matrix = AM_ABSORBED },
		      { .matrix = AM_WEIGHTED }, { .matrix = AM_ABSORBED_OUT, .flags = HEAD }, { .matrix = AM_MLA_DIFF },
		      { .matrix = AM_KV_CACHE }),
		.formula = { { 0, 0, N_("q̃ = q_nope·W^Kᵀ   absorbed = q̃·c_KVᵀ + q_pe·k_peᵀ = scores   absorbed_out = (weights·c_KV)·W^V = weighted"),
		               N_("q~ = q_nope.W^K^T   absorbed = q~.c_KV^T + q_pe.k_pe^T = scores   absorbed_out = (weights.c_KV).W^V = weighted") } },
		.what = N_("MLA's absorbed form: the same scores and outputs from c_KV alone, and what each kind of attention caches"),
		.blurb_en = "Fold W^K into the query and W^V after the sum, and attention reads the latent c_KV directly: the same numbers, without ever unfolding a key or a value. That is why the cache may hold c_KV alone.",
		.blurb_zh = "把 W^K 并入查询、把 W^V 放到求和之后，注意力就能直接读潜向量 c_KV：得到同样的数，却从不展开任何键或值。这就是缓存只需保存 c_KV 的原因。",
	},
	[STAGE_FLASH] = {
		.map = "attention",
		.name = "flash", .requires = FEAT_FLASH, .instead = NONE, .flags = SF_TILES,
		PANES({ .matrix = AM_MASKED }, { .matrix = AM_V, .flags = HEAD }, { .matrix = AM_FLASH_M }, { .matrix = AM_FLASH_L },
		      { .matrix = AM_FLASH_O }, { .matrix = AM_FLASH_OUT }),
		.formula = { { FEAT_SINKS, 0, N_("per tile S: m' = max(m, rowmax S)  P = exp(S \u2212 m')  l' = e^(m\u2212m')\u00b7l + rowsum P  O' = e^(m\u2212m')\u00b7O + P\u00b7V  out = O/(l + e^(sink\u2212m))"),
		               N_("per tile S: m' = max(m, rowmax S)  P = exp(S - m')  l' = e^(m-m')*l + rowsum P  O' = e^(m-m')*O + P.V  out = O/(l + e^(sink-m))") },
		             { 0, 0, N_("per tile S: m' = max(m, rowmax S)  P = exp(S \u2212 m')  l' = e^(m\u2212m')\u00b7l + rowsum P  O' = e^(m\u2212m')\u00b7O + P\u00b7V  out = O/l"),
		               N_("per tile S: m' = max(m, rowmax S)  P = exp(S - m')  l' = e^(m-m')*l + rowsum P  O' = e^(m-m')*O + P.V  out = O/l") } },
		.what = N_("FlashAttention's online softmax, tile by tile: m, l and O after each key block"),
		.blurb_en = "FlashAttention never holds the whole score matrix: it walks the keys a block at a time, keeping only a running maximum, a running sum and a running output per row.",
		.blurb_zh = "FlashAttention 从不保存整个分数矩阵：它一次处理一块键，每一行只保留当前最大值、当前的和与当前的输出。",
	},
	[STAGE_LINEAR] = {
		.map = "attention",
		.name = "linear", .requires = FEAT_LINEAR, .instead = NONE,
		PANES({ .matrix = AM_PHI_Q }, { .matrix = AM_PHI_K, .flags = PANE_TRANSPOSE }, { .matrix = AM_LIN_SCORES },
		      { .matrix = AM_LIN_Z }, { .matrix = AM_V, .flags = HEAD }, { .matrix = AM_LIN_OUT }),
		.formula = { { 0, 0, N_("linear attention: φ(x) = elu(x) + 1   A_ij = φ(q_i)·φ(k_j)   z_i = Σ_j A_ij + eps   out_i = Σ_j A_ij v_j / z_i"),
		               N_("linear attention: phi(x) = elu(x) + 1   A_ij = phi(q_i).phi(k_j)   z_i = sum_j A_ij + eps   out_i = sum_j A_ij v_j / z_i") } },
		.what = N_("linear attention the quadratic way: φ(q)·φ(k) instead of e^(q·k), its n × n matrix and row sums"),
		.blurb_en = "Linear attention swaps softmax's e^(q·k) for a product of features, φ(q)·φ(k) with φ = elu + 1: every number stays positive, each row is divided by its sum, and here it is still computed with the whole n × n matrix.",
		.blurb_zh = "线性注意力把 softmax 的 e^(q·k) 换成特征的乘积 φ(q)·φ(k)（φ = elu + 1）：每个数都为正，每一行除以它的和；这里仍然用整个 n × n 矩阵来算。",
	},
	[STAGE_LINEAR_STATE] = {
		.map = "attention",
		.name = "linear_state", .requires = FEAT_LINEAR, .instead = NONE,
		PANES({ .matrix = AM_PHI_K, .flags = PANE_TRANSPOSE }, { .matrix = AM_V, .flags = HEAD }, { .matrix = AM_LIN_STATE },
		      { .matrix = AM_LIN_KSUM }, { .matrix = AM_PHI_Q }, { .matrix = AM_LIN_OUT_STATE }),
		.formula = { { 0, 0, N_("the state: S = φ(K)ᵀV (d_k × d_v)   out_i = φ(q_i)ᵀS / (φ(q_i)·Σ_j φ(k_j) + eps)   (causal: S and Σ over j ≤ i)"),
		               N_("the state: S = phi(K)^T.V (d_k x d_v)   out_i = phi(q_i)^T.S / (phi(q_i).sum_j phi(k_j) + eps)   (causal: S and sum over j <= i)") } },
		.what = N_("the same outputs from the d_k × d_v state φ(K)ᵀV: no n × n matrix"),
		.blurb_en = "Because φ(q)·φ(k) is a plain dot product, the sum over keys can be done first: φ(K)ᵀV is a d_k × d_v state, the same size for 10 tokens or a million, and the outputs come out the same. Softmax cannot do this: e^(q·k) does not split into a part of q times a part of k.",
		.blurb_zh = "因为 φ(q)·φ(k) 只是普通的点积，可以先对键求和：φ(K)ᵀV 是一个 d_k × d_v 的状态，10 个词和一百万个词都一样大，得到的输出完全相同。softmax 做不到：e^(q·k) 拆不成 q 的一部分乘 k 的一部分。",
	},
	[STAGE_GDN_CONV] = {
		.map = "attention",
		.name = "deltanet_conv", .requires = FEAT_DELTANET | FEAT_GDN_MIXER, .instead = NONE,
		PANES({ .matrix = AM_Q }, { .matrix = AM_K }, { .matrix = AM_V }, { .matrix = AM_GDN_CONV_W }, { .matrix = AM_GDN_CONV }),
		.formula = { { 0, 0, N_("conv_t = SiLU(\u03a3_s w[s]\u00b7x_(t\u2212K+1+s))   per channel of [Q | K | V], tokens before the first are 0   SiLU(x) = x\u00b7\u03c3(x)"),
		               N_("conv_t = SiLU(sum_s w[s]*x_(t-K+1+s))   per channel of [Q | K | V], tokens before the first are 0   SiLU(x) = x*sigmoid(x)") } },
		.what = N_("Gated DeltaNet's short causal conv1d and SiLU over every column of q, k and v"),
		.blurb_en = "Before the recurrence, each column of q, k and v is mixed with the same column of the few tokens just before it (a causal conv1d, kernel K), then passed through SiLU: a token sees its close neighbours directly, and the state carries the rest.",
		.blurb_zh = "在递推之前，q、k、v 的每一列都和它前面几个词的同一列混合（因果 conv1d，核长 K），再经过 SiLU：一个词直接看到紧挨着它的几个邻居，更远的由状态携带。",
	},
	[STAGE_DELTANET] = {
		.map = "attention",
		.name = "deltanet", .requires = FEAT_DELTANET, .instead = NONE,
		/* gdn_q and gdn_k (`show gdn_k`) left out: seven panes fit a 150-column view with the result */
		PANES({ .matrix = AM_GDN_BETA }, { .matrix = AM_GDN_G }, { .matrix = AM_GDN_RECALL }, { .matrix = AM_GDN_DELTA },
		      { .matrix = AM_GDN_STATE, .unless = FEAT_GDN_MIXER }, { .matrix = AM_GDN_STATES, .requires = FEAT_GDN_MIXER },
		      { .matrix = AM_GDN_OUT_CHUNK }, { .matrix = AM_GDN_OUT }),
		.formula = { { 0, 0, N_("per token: S \u2190 e^g\u00b7S   \u03b4 = \u03b2\u00b7(v \u2212 S\u1d40k)   S \u2190 S + k\u00b7\u03b4\u1d40   o = S\u1d40q   (k, q L2-normalised, q / \u221ad_k)"),
		               N_("per token: S <- e^g*S   delta = beta*(v - S^T.k)   S <- S + k.delta^T   o = S^T.q   (k, q L2-normalised, q / sqrt(d_k))") } },
		.what = N_("Gated DeltaNet: a decaying state corrected token by token by the delta rule, and the same in chunks"),
		.blurb_en = "Gated DeltaNet keeps linear attention's d_k \u00d7 d_v state but does not only add to it: each token first lets it fade by e^g, reads what it holds for its key, and writes back only the difference from its value, scaled by \u03b2.",
		.blurb_zh = "Gated DeltaNet 保留线性注意力 d_k \u00d7 d_v 的状态，但不只是往里加：每个词先让它按 e^g 衰减，读出它在自己的键上存了什么，再只把与自己的值的差（乘以 \u03b2）写回去。",
	},
	[STAGE_GDN_NORM] = {
		.map = "attention",
		.name = "deltanet_norm", .requires = FEAT_DELTANET | FEAT_GDN_MIXER, .instead = NONE,
		PANES({ .matrix = AM_GDN_OUT }, { .matrix = AM_GDN_RMS }, { .matrix = AM_GDN_NORM_W }, { .matrix = AM_GDN_Z, .flags = HEAD },
		      { .matrix = AM_GDN_GATED }),
		.formula = { { 0, 0, N_("z = x\u00b7W_z   gated = o / \u221a(mean(o\u00b2) + eps) \u00b7 w \u2299 SiLU(z)   concat = [gated_0 | \u2026]   (RMSNormGated)"),
		               N_("z = x.W_z   gated = o / sqrt(mean(o^2) + eps) * w * SiLU(z)   concat = [gated_0 | ...]   (RMSNormGated)") } },
		.what = N_("Gated DeltaNet's output RMS-normalised, times w and SiLU(z): what concat and W_o take"),
		.blurb_en = "The recurrence's output is normalised row by row (RMSNorm with a weight w every head shares) and multiplied by SiLU(z), a gate made from the token's own row: this, not softmax's weighted values, is what W_o mixes into the residual.",
		.blurb_zh = "递推的输出逐行归一化（RMSNorm，各个头共用权重 w），再乘以 SiLU(z)——一个由这个词自己的行算出的门：W_o 混合进残差的是它，而不是 softmax 加权的值。",
	},
	[STAGE_GDN_CACHE] = {
		.map = "attention",
		.name = "deltanet_cache", .requires = FEAT_DELTANET | FEAT_GDN_MIXER, .instead = NONE,
		PANES({ .matrix = AM_GDN_STATE }, { .matrix = AM_GDN_CONV_W }, { .matrix = AM_GDN_CACHE }),
		.formula = { { 0, 0, N_("Gated DeltaNet: (K \u2212 1)\u00b7(h\u00b7d_k + g\u00b7d_k + g\u00b7d_v) + h\u00b7d_k\u00b7d_v numbers at any length   full attention: g\u00b7(d_k + d_v) a token"),
		               N_("Gated DeltaNet: (K - 1)*(h*d_k + g*d_k + g*d_v) + h*d_k*d_v numbers at any length   full attention: g*(d_k + d_v) a token") } },
		.what = N_("what a Gated DeltaNet layer keeps for the next token, beside a full-attention layer, in numbers"),
		.blurb_en = "To compute the next token a Gated DeltaNet layer needs only the conv's last K \u2212 1 rows and each head's state: the same count however long the text. A full-attention layer keeps a key and a value row for every token.",
		.blurb_zh = "为了算下一个词，Gated DeltaNet 层只需要 conv 的最后 K \u2212 1 行和每个头的状态：不管文本多长，个数都一样。全注意力层则要为每个词保留一行键和一行值。",
	},
	[STAGE_DIFF] = {
		.map = "attention",
		.name = "diff", .requires = FEAT_DIFF, .instead = NONE,
		PANES({ .matrix = AM_DIFF_A1 }, { .matrix = AM_DIFF_A2 }, { .matrix = AM_DIFF_LAMBDA }, { .matrix = AM_DIFF_A }),
		.formula = { { 0, 0, N_("differential attention: λ = e^(λ_q1·λ_k1) − e^(λ_q2·λ_k2) + λ_init   λ_init = 0.8 − 0.6·e^(−0.3·depth)   A = A1 − λ·A2"),
		               N_("differential attention: lambda = e^(lq1.lk1) - e^(lq2.lk2) + lambda_init   lambda_init = 0.8 - 0.6*e^(-0.3*depth)   A = A1 - lambda*A2") } },
		.what = N_("differential attention: the pair's two softmax maps, λ, and their difference A1 − λ·A2"),
		.blurb_en = "Differential attention pairs the heads: each pair has two softmax maps over the same keys, and subtracts λ times the second from the first. Weight both maps give a key alike, the noise, cancels; what only the first map picks out stays.",
		.blurb_zh = "差分注意力把头两两配对：每一对在同样的键上有两张 softmax 图，用第一张减去 λ 乘第二张。两张图同样给出的权重（噪声）相互抵消；只有第一张图挑出的部分留下来。",
	},
	[STAGE_DIFF_OUT] = {
		.map = "attention",
		.name = "diff_out", .requires = FEAT_DIFF, .instead = NONE,
		PANES({ .matrix = AM_DIFF_A }, { .matrix = AM_DIFF_O }, { .matrix = AM_DIFF_RMS }, { .matrix = AM_DIFF_SUBLN },
		      { .matrix = AM_DIFF_OUT }),
		.formula = { { 0, 0, N_("O = (A1 − λ·A2)·[V_2p | V_2p+1]   out = O / √(mean(O²) + eps) · subln · (1 − λ_init)"),
		               N_("O = (A1 - lambda*A2).[V_2p | V_2p+1]   out = O / sqrt(mean(O^2) + eps) * subln * (1 - lambda_init)") } },
		.what = N_("differential attention's output per pair: the difference times V, RMS-normalised, times 1 − λ_init"),
		.blurb_en = "Each pair weights its 2·d_v value columns by the difference, then normalises every row by its RMS (subln) and scales it by 1 − λ_init: what concat and W_o take instead of the heads' own outputs.",
		.blurb_zh = "每一对用差值给它的 2·d_v 个值列加权，再把每一行除以它的均方根（subln），乘以 1 − λ_init：concat 和 W_o 用的是这个，而不是各个头自己的输出。",
	},
	[STAGE_CONCAT] = {
		.map = "attention",
		.name = "concat", .requires = FEAT_MULTIHEAD, .instead = STAGE_WEIGHTED,
		.flags = SF_ALWAYS,
		PANES({ .matrix = AM_WEIGHTED, .flags = PANE_EACH_HEAD | PANE_RESULT_COLS }, { .matrix = AM_CONCAT }),
		.formula = { { 0, 0, "concat = [head_0 | head_1 | \u2026 | head_{h\u22121}]",
		               "concat = [head_0 | head_1 | ... | head_{h-1}]" } },
		.what = N_("the heads' outputs side by side"),
		.blurb_en = "The heads' outputs are laid side by side again.",
		.blurb_zh = "把各个头的输出重新并排拼接起来。",
	},
	[STAGE_GATE] = {
		.map = "attention",
		.name = "gate", .requires = FEAT_GATED, .instead = STAGE_CONCAT,
		PANES({ .matrix = AM_CONCAT }, { .matrix = AM_GATE, .flags = HEAD }, { .matrix = AM_GATE_SIG, .flags = HEAD },
		      { .matrix = AM_GATED, .flags = HEAD }),
		.formula = { { 0, 0, N_("gate = x\u00b7W_gate   gated = concat \u2299 \u03c3(gate)   \u03c3(g) = 1 / (1 + e^\u2212g)   (Qwen3-Next)"),
		               N_("gate = x.W_gate   gated = concat * sigmoid(gate)   sigmoid(g) = 1 / (1 + e^-g)   (Qwen3-Next)") } },
		.what = N_("the heads' outputs times \u03c3(x\u00b7W_gate), number by number, before W_o"),
		.blurb_en = "Gated attention lets each token decide, number by number, how much of what its heads found to pass on: a gate between 0 and 1 made from the token's own row, multiplied into concat before W_o.",
		.blurb_zh = "门控注意力让每个词逐个数地决定，它的各个头找到的内容要传下去多少：用这个词自己的行算出一个介于 0 和 1 之间的门，在 W_o 之前乘到 concat 上。",
	},
	[STAGE_OUTPUT] = {
		.map = "attention",
		.name = "output", .requires = FEAT_WO, .instead = STAGE_CONCAT,
		.flags = SF_PARAMS | SF_ALWAYS,
		PANES({ .matrix = AM_CONCAT, .unless = FEAT_GATED }, { .matrix = AM_GATED }, { .matrix = AM_W_O }, { .matrix = AM_B_O },
		      { .matrix = AM_OUTPUT }),
		.formula = { { FEAT_GATED, 0, "output = gated\u00b7W_o", "output = gated.W_o" },
		             { 0, 0, "output = concat\u00b7W_o", "output = concat.W_o" } },
		.what = N_("concat \u00b7 W_o"),
		.blurb_en = "A last learned matrix W_o mixes the heads into the output.",
		.blurb_zh = "最后一个可学习的矩阵 W_o 把各个头混合成输出。",
	},
	[STAGE_NORM1_AFTER] = {
		.map = "N1",
		.name = "norm1", .requires = FEAT_BLOCK | FEAT_NORM | FEAT_NORM_AFTER,
		.instead = STAGE_OUTPUT,
		PANES({ .matrix = AM_OUTPUT }, { .matrix = AM_LN1_GAMMA }, { .matrix = AM_LN1_BETA }, { .matrix = AM_NORM1_STATS }, { .matrix = AM_NORM1 }),
		/* a norm's formula, LayerNorm or RMSNorm: each one whole for the translation */
		.formula = { { FEAT_LAYERNORM, 0, N_("norm1 = N1(output)   LayerNorm: (x \u2212 \u03bc)/\u221a(\u03c3\u00b2 + \u03b5)\u00b7\u03b3 + \u03b2, each row"),
		               N_("norm1 = N1(output)   LayerNorm: (x - mean)/sqrt(var + eps)*gamma + beta, each row") },
		             { FEAT_NORM_1P, 0, N_("norm1 = N1(output)   RMSNorm (Gemma): x/\u221a(mean(x\u00b2) + \u03b5)\u00b7(1 + \u03b3), each row"),
		               N_("norm1 = N1(output)   RMSNorm (Gemma): x/sqrt(mean(x^2) + eps)*(1 + gamma), each row") },
		             { 0, 0, N_("norm1 = N1(output)   RMSNorm: x/\u221a(mean(x\u00b2) + \u03b5)\u00b7\u03b3, each row"),
		               N_("norm1 = N1(output)   RMSNorm: x/sqrt(mean(x^2) + eps)*gamma, each row") } },
		.what = N_("norm after the sublayer (OLMo 2): norm1 = N1(the attention's output), before the residual"),
		.blurb_en = "OLMo 2 normalises what the attention adds, not the rows it adds it to: the attention's output is RMS-normalised, then added to x.",
		.blurb_zh = "OLMo 2 归一化的是注意力加上去的内容，而不是被加的那些行：先把注意力的输出做 RMS 归一化，再加到 x 上。",
	},
	[STAGE_NORM1_SANDWICH] = {
		.map = "N1'",
		.name = "norm1_after", .requires = FEAT_BLOCK | FEAT_NORM | FEAT_SANDWICH,
		.instead = STAGE_OUTPUT,
		PANES({ .matrix = AM_OUTPUT }, { .matrix = AM_LN1_AFTER_GAMMA }, { .matrix = AM_NORM1_AFTER_STATS }, { .matrix = AM_NORM1_AFTER }),
		/* a sandwich block's norms are RMSNorms: each formula whole for the translation */
		.formula = { { FEAT_NORM_1P, 0, N_("norm1_after = N1'(output)   RMSNorm (Gemma): x/\u221a(mean(x\u00b2) + \u03b5)\u00b7(1 + \u03b3'), each row"),
		               N_("norm1_after = N1'(output)   RMSNorm (Gemma): x/sqrt(mean(x^2) + eps)*(1 + gamma'), each row") },
		             { 0, 0, N_("norm1_after = N1'(output)   RMSNorm: x/\u221a(mean(x\u00b2) + \u03b5)\u00b7\u03b3', each row"),
		               N_("norm1_after = N1'(output)   RMSNorm: x/sqrt(mean(x^2) + eps)*gamma', each row") } },
		.what = N_("sandwich norms (Gemma): the attention's output normalised by a norm of its own before the residual"),
		.blurb_en = "A sandwich: the attention read N1(x), and its output is normalised again, with weights of its own, before it is added to x.",
		.blurb_zh = "三明治结构：注意力读的是 N1(x)，它的输出在加回 x 之前，再用自己的一组权重归一化一次。",
	},
	[STAGE_RESIDUAL1] = {
		.map = "+",
		.name = "residual1", .requires = FEAT_BLOCK,
		.instead = STAGE_OUTPUT,
		PANES({ .matrix = AM_X }, { .matrix = AM_OUTPUT, .unless = FEAT_NORM_AFTER | FEAT_SANDWICH }, { .matrix = AM_NORM1, .requires = FEAT_NORM_AFTER },
		      { .matrix = AM_NORM1_AFTER, .requires = FEAT_SANDWICH }, { .matrix = AM_RESIDUAL1 }),
		.formula = { { FEAT_NORM_AFTER, 0, "residual1 = x + norm1", "residual1 = x + norm1" },
		             { FEAT_SANDWICH, 0, "residual1 = x + norm1_after", "residual1 = x + norm1_after" },
		             { 0, 0, N_("residual1 = x + attention(\u2026)   (the input rows, plus what attention adds)"),
		               N_("residual1 = x + attention(...)   (the input rows, plus what attention adds)") } },
		.what = N_("x + the attention's output"),
		.blurb_en = "The residual adds the attention's output to the rows it started from, so nothing of the input is lost.",
		.blurb_zh = "残差把注意力的输出加回到出发时的行上，输入的信息一点也不会丢。",
	},
	[STAGE_NORM1_POST] = {
		.map = "N1",
		.name = "norm1", .requires = FEAT_BLOCK | FEAT_NORM | FEAT_POSTNORM,
		.instead = STAGE_RESIDUAL1,
		PANES({ .matrix = AM_RESIDUAL1 }, { .matrix = AM_LN1_GAMMA }, { .matrix = AM_LN1_BETA }, { .matrix = AM_NORM1_STATS }, { .matrix = AM_NORM1 }),
		/* a norm's formula, LayerNorm or RMSNorm: each one whole for the translation */
		.formula = { { FEAT_LAYERNORM, 0, N_("norm1 = N1(residual1)   LayerNorm: (x \u2212 \u03bc)/\u221a(\u03c3\u00b2 + \u03b5)\u00b7\u03b3 + \u03b2, each row"),
		               N_("norm1 = N1(residual1)   LayerNorm: (x - mean)/sqrt(var + eps)*gamma + beta, each row") },
		             { FEAT_NORM_1P, 0, N_("norm1 = N1(residual1)   RMSNorm (Gemma): x/\u221a(mean(x\u00b2) + \u03b5)\u00b7(1 + \u03b3), each row"),
		               N_("norm1 = N1(residual1)   RMSNorm (Gemma): x/sqrt(mean(x^2) + eps)*(1 + gamma), each row") },
		             { 0, 0, N_("norm1 = N1(residual1)   RMSNorm: x/\u221a(mean(x\u00b2) + \u03b5)\u00b7\u03b3, each row"),
		               N_("norm1 = N1(residual1)   RMSNorm: x/sqrt(mean(x^2) + eps)*gamma, each row") } },
		.what = N_("post-norm: norm1 = N1(residual1)"),
		.blurb_en = "Post-norm: after the residual, each row is brought to mean 0 and variance 1, then scaled by \u03b3 and shifted by \u03b2.",
		.blurb_zh = "后置归一化：残差之后，每一行被变成均值 0、方差 1，再乘以 \u03b3、加上 \u03b2。",
	},
	[STAGE_NORM2_PRE] = {
		.map = "N2",
		.name = "norm2", .requires = FEAT_FFN | FEAT_NORM | FEAT_PRENORM,
		.instead = STAGE_RESIDUAL1,
		PANES({ .matrix = AM_RESIDUAL1 }, { .matrix = AM_LN2_GAMMA }, { .matrix = AM_LN2_BETA }, { .matrix = AM_NORM2_STATS }, { .matrix = AM_NORM2 }),
		/* a norm's formula, LayerNorm or RMSNorm: each one whole for the translation */
		.formula = { { FEAT_LAYERNORM, 0, N_("norm2 = N2(residual1)   LayerNorm: (x \u2212 \u03bc)/\u221a(\u03c3\u00b2 + \u03b5)\u00b7\u03b3 + \u03b2, each row"),
		               N_("norm2 = N2(residual1)   LayerNorm: (x - mean)/sqrt(var + eps)*gamma + beta, each row") },
		             { FEAT_NORM_1P, 0, N_("norm2 = N2(residual1)   RMSNorm (Gemma): x/\u221a(mean(x\u00b2) + \u03b5)\u00b7(1 + \u03b3), each row"),
		               N_("norm2 = N2(residual1)   RMSNorm (Gemma): x/sqrt(mean(x^2) + eps)*(1 + gamma), each row") },
		             { 0, 0, N_("norm2 = N2(residual1)   RMSNorm: x/\u221a(mean(x\u00b2) + \u03b5)\u00b7\u03b3, each row"),
		               N_("norm2 = N2(residual1)   RMSNorm: x/sqrt(mean(x^2) + eps)*gamma, each row") } },
		.what = N_("pre-norm: norm2 = N2(residual1), what the FFN reads"),
		.blurb_en = "The second branch starts with its own norm; the FFN reads the normalised rows.",
		.blurb_zh = "第二个分支也先做自己的归一化；前馈网络读的是归一化后的行。",
	},
	[STAGE_FFN_HIDDEN] = {
		.map = "FFN",
		.name = "ffn_hidden", .requires = FEAT_FFN, .unless = FEAT_MOE,
		.instead = STAGE_RESIDUAL1,
		PANES({ .matrix = AM_NORM1, .requires = FEAT_POSTNORM }, { .matrix = AM_NORM2, .requires = FEAT_PRENORM },
		      { .matrix = AM_RESIDUAL1, .unless = FEAT_PRENORM | FEAT_POSTNORM }, { .matrix = AM_W_1 }, { .matrix = AM_B_1 }, { .matrix = AM_W_3 }, { .matrix = AM_B_3 }, { .matrix = AM_FFN_GATE },
		      { .matrix = AM_FFN_HIDDEN }),
		.formula = { { FEAT_SWIGLU, 0, N_("ffn_hidden = x\u00b7W_1 + b_1   ffn_gate = x\u00b7W_3 + b_3   (each row on its own)"),
		               N_("ffn_hidden = x.W_1 + b_1   ffn_gate = x.W_3 + b_3   (each row on its own)") },
		             { 0, 0, N_("ffn_hidden = x\u00b7W_1 + b_1   (each row on its own)"), N_("ffn_hidden = x.W_1 + b_1   (each row on its own)") } },
		.what = N_("x \u00b7 W_1 + b_1, one token at a time"),
		.blurb_en = "The feed-forward network works on each token alone: its first layer widens every row to d_ff numbers.",
		.blurb_zh = "前馈网络对每个词单独计算：第一层把每一行扩展成 d_ff 个数。",
	},
	[STAGE_ACTIVATION] = {
		.map = "FFN",
		.name = "activation", .requires = FEAT_FFN, .unless = FEAT_MOE,
		.instead = STAGE_RESIDUAL1,
		PANES({ .matrix = AM_FFN_HIDDEN }, { .matrix = AM_FFN_GATE }, { .matrix = AM_FFN_ACT }),
		/* gated: Gemma's GeGLU (gelu_tanh) or SwiGLU (silu), each its own line */
		.formula = { { FEAT_SWIGLU | FEAT_GEGLU, 0,
		               "ffn_act = gelu_tanh(ffn_hidden) \u2299 ffn_gate   gelu_tanh(z) = \u00bdz(1 + tanh(\u221a(2/\u03c0)(z + 0.044715z\u00b3)))",
		               "ffn_act = gelu_tanh(ffn_hidden) * ffn_gate   gelu_tanh(z) = z/2*(1 + tanh(sqrt(2/pi)*(z + 0.044715*z^3)))" },
		             { FEAT_SWIGLU, 0, "ffn_act = silu(ffn_hidden) \u2299 ffn_gate   silu(z) = z\u00b7\u03c3(z)",
		               "ffn_act = silu(ffn_hidden) * ffn_gate   silu(z) = z*sigmoid(z)" },
		             { 0, 0, "ffn_act = activation(ffn_hidden)   relu(z) = max(0, z)   gelu(z) = z\u00b7\u03a6(z)",
		               "ffn_act = activation(ffn_hidden)   relu(z) = max(0, z)   gelu(z) = z*Phi(z)" } },
		.what = N_("relu, gelu or SwiGLU, cell by cell"),
		.blurb_en = "A nonlinearity, cell by cell: without it the two layers of the FFN would be one matrix.",
		.blurb_zh = "逐个元素的非线性：没有它，前馈网络的两层就等于一个矩阵。",
	},
	[STAGE_FFN_OUT] = {
		.map = "FFN",
		.name = "ffn_out", .requires = FEAT_FFN, .unless = FEAT_MOE,
		.instead = STAGE_RESIDUAL1,
		PANES({ .matrix = AM_FFN_ACT }, { .matrix = AM_W_2 }, { .matrix = AM_B_2 }, { .matrix = AM_FFN_OUT }),
		.formula = { { 0, 0, "ffn_out = ffn_act\u00b7W_2 + b_2", "ffn_out = ffn_act.W_2 + b_2" } },
		.what = N_("ffn_act \u00b7 W_2 + b_2, back to d_model"),
		.blurb_en = "The second layer brings every row back to d_model numbers.",
		.blurb_zh = "第二层把每一行变回 d_model 个数。",
	},
	[STAGE_NORM2_AFTER] = {
		.map = "N2",
		.name = "norm2", .requires = FEAT_FFN | FEAT_NORM | FEAT_NORM_AFTER,
		.instead = STAGE_FFN_OUT,
		PANES({ .matrix = AM_FFN_OUT }, { .matrix = AM_LN2_GAMMA }, { .matrix = AM_LN2_BETA }, { .matrix = AM_NORM2_STATS }, { .matrix = AM_NORM2 }),
		/* a norm's formula, LayerNorm or RMSNorm: each one whole for the translation */
		.formula = { { FEAT_LAYERNORM, 0, N_("norm2 = N2(ffn_out)   LayerNorm: (x \u2212 \u03bc)/\u221a(\u03c3\u00b2 + \u03b5)\u00b7\u03b3 + \u03b2, each row"),
		               N_("norm2 = N2(ffn_out)   LayerNorm: (x - mean)/sqrt(var + eps)*gamma + beta, each row") },
		             { FEAT_NORM_1P, 0, N_("norm2 = N2(ffn_out)   RMSNorm (Gemma): x/\u221a(mean(x\u00b2) + \u03b5)\u00b7(1 + \u03b3), each row"),
		               N_("norm2 = N2(ffn_out)   RMSNorm (Gemma): x/sqrt(mean(x^2) + eps)*(1 + gamma), each row") },
		             { 0, 0, N_("norm2 = N2(ffn_out)   RMSNorm: x/\u221a(mean(x\u00b2) + \u03b5)\u00b7\u03b3, each row"),
		               N_("norm2 = N2(ffn_out)   RMSNorm: x/sqrt(mean(x^2) + eps)*gamma, each row") } },
		.what = N_("norm after the sublayer (OLMo 2): norm2 = N2(ffn_out), before the residual"),
		.blurb_en = "The FFN's output is normalised too before it is added: each sublayer adds rows of a controlled size, whatever its weights.",
		.blurb_zh = "前馈网络的输出在加上去之前也要归一化：不管权重多大，每个子层加上去的行大小都受到控制。",
	},
	[STAGE_NORM2_SANDWICH] = {
		.map = "N2'",
		.name = "norm2_after", .requires = FEAT_FFN | FEAT_NORM | FEAT_SANDWICH,
		.instead = STAGE_FFN_OUT,
		PANES({ .matrix = AM_FFN_OUT }, { .matrix = AM_LN2_AFTER_GAMMA }, { .matrix = AM_NORM2_AFTER_STATS }, { .matrix = AM_NORM2_AFTER }),
		/* a sandwich block's norms are RMSNorms: each formula whole for the translation */
		.formula = { { FEAT_NORM_1P, 0, N_("norm2_after = N2'(ffn_out)   RMSNorm (Gemma): x/\u221a(mean(x\u00b2) + \u03b5)\u00b7(1 + \u03b3'), each row"),
		               N_("norm2_after = N2'(ffn_out)   RMSNorm (Gemma): x/sqrt(mean(x^2) + eps)*(1 + gamma'), each row") },
		             { 0, 0, N_("norm2_after = N2'(ffn_out)   RMSNorm: x/\u221a(mean(x\u00b2) + \u03b5)\u00b7\u03b3', each row"),
		               N_("norm2_after = N2'(ffn_out)   RMSNorm: x/sqrt(mean(x^2) + eps)*gamma', each row") } },
		.what = N_("sandwich norms (Gemma): the FFN's output normalised by a norm of its own before the residual"),
		.blurb_en = "Gemma normalises the FFN's output too, with a third set of weights: the FFN read normalised rows, and what it adds is normalised again.",
		.blurb_zh = "Gemma 也把前馈网络的输出归一化，用的是另一组权重：前馈网络读的是归一化后的行，它加上去的内容又被归一化一次。",
	},
	[STAGE_MOE_ROUTER] = {
		.map = "FFN",
		.name = "router", .requires = FEAT_FFN | FEAT_MOE,
		.instead = STAGE_RESIDUAL1,
		PANES({ .matrix = AM_NORM1, .requires = FEAT_POSTNORM }, { .matrix = AM_NORM2, .requires = FEAT_PRENORM },
		      { .matrix = AM_RESIDUAL1, .unless = FEAT_NORM }, { .matrix = AM_MOE_W_R }, { .matrix = AM_ROUTER_LOGITS },
		      { .matrix = AM_ROUTER_PROBS, .unless = FEAT_MOE_SIGMOID },
		      { .matrix = AM_ROUTER_SCORES, .requires = FEAT_MOE_SIGMOID }),
		.formula = { { FEAT_MOE_SIGMOID, 0, N_("router_logits = x\u00b7W_router   router_scores = \u03c3(router_logits), each cell"),
		               N_("router_logits = x.W_router   router_scores = sigmoid(router_logits), each cell") },
		             { 0, 0, N_("router_logits = x\u00b7W_router   router_probs = softmax(router_logits), each row"),
		               N_("router_logits = x.W_router   router_probs = softmax(router_logits), each row") } },
		.what = N_("the router: each token's score and probability for each expert"),
		.blurb_en = "A mixture of experts has several FFNs, the experts. A small router scores every token against every expert, and a softmax turns each row of scores into probabilities (DeepSeek-V3 takes a sigmoid of each score on its own instead).",
		.blurb_zh = "混合专家模型有好几个前馈网络，叫作专家。一个小小的路由器给每个词对每个专家打分，softmax 把每一行分数变成概率（DeepSeek-V3 则对每个分数单独取 sigmoid）。",
	},
	[STAGE_MOE_CHOICE] = {
		.map = "FFN",
		.name = "choice", .requires = FEAT_FFN | FEAT_MOE | FEAT_MOE_SIGMOID,
		.instead = STAGE_MOE_ROUTER,
		PANES({ .matrix = AM_ROUTER_SCORES }, { .matrix = AM_MOE_E_BIAS }, { .matrix = AM_GROUP_SCORES },
		      { .matrix = AM_SCORES_CHOICE }),
		.formula = { { 0, 0, N_("s = router_scores + e_bias   group_scores = the sum of each group's top 2 of s   scores_for_choice = s in the topk_group best groups"),
		               N_("s = router_scores + e_bias   group_scores = the sum of each group's top 2 of s   scores_for_choice = s in the topk_group best groups") } },
		.what = N_("DeepSeek-V3's choice: the bias-corrected scores, each group's score, the groups kept"),
		.blurb_en = "DeepSeek-V3 chooses experts on the scores plus a correction bias, which balances the experts' load without touching the weights. The experts come in groups: each group is scored by its two best experts, and only the best groups stay in the running.",
		.blurb_zh = "DeepSeek-V3 用分数加上一个校正偏置来挑选专家：它平衡各专家的负载，却不改变权重。专家分成若干组，每组按它最好的两个专家打分，只有最好的几组留下来参加挑选。",
	},
	[STAGE_MOE_TOPK] = {
		.map = "FFN",
		.name = "top_k", .requires = FEAT_FFN | FEAT_MOE,
		.instead = STAGE_MOE_ROUTER,
		PANES({ .matrix = AM_ROUTER_PROBS, .unless = FEAT_MOE_SIGMOID },
		      { .matrix = AM_SCORES_CHOICE, .requires = FEAT_MOE_SIGMOID },
		      { .matrix = AM_ROUTER_SCORES, .requires = FEAT_MOE_SIGMOID }, { .matrix = AM_MOE_WEIGHTS }),
		.formula = { { FEAT_MOE_SIGMOID, 0, N_("each row: the top_k experts of scores_for_choice; w = router_scores / (\u03a3 of them + 1e\u221220) with norm_topk_prob, else w = router_scores; w \u00d7= routed_scaling_factor"),
		               N_("each row: the top_k experts of scores_for_choice; w = router_scores / (sum of them + 1e-20) with norm_topk_prob, else w = router_scores; w *= routed_scaling_factor") },
		              { 0, 0, N_("each row: the top_k experts of router_probs; with norm_topk_prob w = p / \u03a3 p over them, else w = p; the others are not chosen"),
		               N_("each row: the top_k experts of router_probs; with norm_topk_prob w = p / sum p over them, else w = p; the others are not chosen") } },
		.what = N_("the top_k experts of each token and their weights; the others not chosen"),
		.blurb_en = "Each token keeps only its top_k experts; the others never see it. Their probabilities, renormalised to sum to 1 (norm_topk_prob), are the weights of their outputs.",
		.blurb_zh = "每个词只留下概率最高的 top_k 个专家，其余专家根本看不到它。这几个概率（norm_topk_prob 时重新归一化为和为 1）就是它们输出的权重。",
	},
	[STAGE_MOE_EXPERTS] = {
		.map = "FFN",
		.name = "experts", .requires = FEAT_FFN | FEAT_MOE,
		.instead = STAGE_MOE_TOPK,
		PANES({ .matrix = AM_MOE_WEIGHTS }, { .matrix = AM_EXPERT_ACT }, { .matrix = AM_EXPERT_OUT },
		      { .matrix = AM_SHARED_GATE }, { .matrix = AM_SHARED_OUT }, { .matrix = AM_FFN_OUT }),
		.formula = { { FEAT_MOE_SHARED, FEAT_MOE_SHARED_GATE, N_("out_e = (silu(x\u00b7W_1,e) \u2299 (x\u00b7W_3,e))\u00b7W_2,e on the tokens that chose e   ffn_out = \u03a3_e w_e\u00b7out_e + shared_out (no gate)"),
		               N_("out_e = (silu(x.W_1,e) * (x.W_3,e)).W_2,e on the tokens that chose e   ffn_out = sum_e w_e*out_e + shared_out (no gate)") },
		             { FEAT_MOE_SHARED, 0, N_("out_e = (silu(x\u00b7W_1,e) \u2299 (x\u00b7W_3,e))\u00b7W_2,e on the tokens that chose e   ffn_out = \u03a3_e w_e\u00b7out_e + \u03c3(x\u00b7W_gate)\u00b7shared_out"),
		               N_("out_e = (silu(x.W_1,e) * (x.W_3,e)).W_2,e on the tokens that chose e   ffn_out = sum_e w_e*out_e + sigmoid(x.W_gate)*shared_out") },
		             { 0, 0, N_("expert e, on the tokens that chose it: out_e = (silu(x\u00b7W_1,e) \u2299 (x\u00b7W_3,e))\u00b7W_2,e   ffn_out = \u03a3_e w_e\u00b7out_e"),
		               N_("expert e, on the tokens that chose it: out_e = (silu(x.W_1,e) * (x.W_3,e)).W_2,e   ffn_out = sum_e w_e*out_e") } },
		.what = N_("each chosen expert's SwiGLU on its tokens, and their weighted sum"),
		.blurb_en = "Each expert is an ordinary SwiGLU FFN, run only on the tokens that chose it. A token's FFN output is the weighted sum of its experts' outputs.",
		.blurb_zh = "每个专家都是普通的 SwiGLU 前馈网络，只在选中它的词上计算。一个词的前馈输出是它所选专家输出的加权和。",
	},
	[STAGE_RESIDUAL2] = {
		.map = "+",
		.name = "residual2", .requires = FEAT_FFN,
		.instead = STAGE_RESIDUAL1,
		PANES({ .matrix = AM_NORM1, .requires = FEAT_POSTNORM }, { .matrix = AM_RESIDUAL1, .unless = FEAT_POSTNORM },
		      { .matrix = AM_FFN_OUT, .unless = FEAT_NORM_AFTER | FEAT_SANDWICH }, { .matrix = AM_NORM2, .requires = FEAT_NORM_AFTER },
		      { .matrix = AM_NORM2_AFTER, .requires = FEAT_SANDWICH }, { .matrix = AM_RESIDUAL2 }),
		.formula = { { FEAT_POSTNORM, 0, "residual2 = norm1 + ffn_out", "residual2 = norm1 + ffn_out" },
		             { FEAT_SANDWICH, 0, "residual2 = residual1 + norm2_after", "residual2 = residual1 + norm2_after" },
		             { FEAT_NORM_AFTER, 0, "residual2 = residual1 + norm2", "residual2 = residual1 + norm2" },
		             { 0, 0, "residual2 = residual1 + ffn_out", "residual2 = residual1 + ffn_out" } },
		.what = N_("the FFN's input + ffn_out"),
		.blurb_en = "The second residual: the FFN's input plus what the FFN adds.",
		.blurb_zh = "第二个残差：前馈网络的输入加上它算出的结果。",
	},
	[STAGE_NORM2_POST] = {
		.map = "N2",
		.name = "norm2", .requires = FEAT_FFN | FEAT_NORM | FEAT_POSTNORM,
		.instead = STAGE_RESIDUAL2,
		PANES({ .matrix = AM_RESIDUAL2 }, { .matrix = AM_LN2_GAMMA }, { .matrix = AM_LN2_BETA }, { .matrix = AM_NORM2_STATS }, { .matrix = AM_NORM2 }),
		/* a norm's formula, LayerNorm or RMSNorm: each one whole for the translation */
		.formula = { { FEAT_LAYERNORM, 0, N_("norm2 = N2(residual2)   LayerNorm: (x \u2212 \u03bc)/\u221a(\u03c3\u00b2 + \u03b5)\u00b7\u03b3 + \u03b2, each row"),
		               N_("norm2 = N2(residual2)   LayerNorm: (x - mean)/sqrt(var + eps)*gamma + beta, each row") },
		             { FEAT_NORM_1P, 0, N_("norm2 = N2(residual2)   RMSNorm (Gemma): x/\u221a(mean(x\u00b2) + \u03b5)\u00b7(1 + \u03b3), each row"),
		               N_("norm2 = N2(residual2)   RMSNorm (Gemma): x/sqrt(mean(x^2) + eps)*(1 + gamma), each row") },
		             { 0, 0, N_("norm2 = N2(residual2)   RMSNorm: x/\u221a(mean(x\u00b2) + \u03b5)\u00b7\u03b3, each row"),
		               N_("norm2 = N2(residual2)   RMSNorm: x/sqrt(mean(x^2) + eps)*gamma, each row") } },
		.what = N_("post-norm: norm2 = N2(residual2), the layer's output"),
		.blurb_en = "The second norm gives the layer's output: every row again with mean 0 and variance 1, scaled by \u03b3 and shifted by \u03b2.",
		.blurb_zh = "第二次归一化得到这一层的输出：每一行又是均值 0、方差 1，再乘 \u03b3、加 \u03b2。",
	},
	[STAGE_DECODE] = {
		.map = "decode",
		.name = "decode", .requires = FEAT_DECODE, .instead = NONE, .flags = SF_DECODE_STEPS,
		PANES({ .matrix = AM_DEC_Q, .flags = HEAD }, { .matrix = AM_CACHE_K, .flags = HEAD }, { .matrix = AM_CACHE_V, .flags = HEAD },
		      { .matrix = AM_DEC_SCORES }, { .matrix = AM_DEC_WEIGHTS }, { .matrix = AM_WIN_WEIGHTS },
		      { .matrix = AM_DEC_WEIGHTED }, { .matrix = AM_DEC_OUTPUT }, { .matrix = AM_WIN_OUTPUT },
		      { .matrix = AM_DEC_LAYER_OUT }),
		.formula = { { 0, 0, N_("step t: q_t, k_t, v_t from token t; cache += (k_t, v_t); w = softmax(q_t\u00b7K_cache\u1d40 \u00d7 factor); out_t = w\u00b7V_cache"),
		               N_("step t: q_t, k_t, v_t from token t; cache += (k_t, v_t); w = softmax(q_t.K_cache^T * factor); out_t = w.V_cache") } },
		.what = N_("generation one token at a time: the cache growing row by row, the new scores row and the output row"),
		.blurb_en = "Generating text, a model sees one new token at a time: it computes that token's q, k and v, appends k and v to the cache, and attends from q to everything cached.",
		.blurb_zh = "生成文本时，模型每次只看到一个新词：算出它的 q、k、v，把 k 和 v 追加进缓存，再用 q 去关注缓存里的一切。",
	},
	[STAGE_FINAL_NORM] = {
		.map = "final N",
		.name = "final_norm", .requires = FEAT_FINAL,
		.instead = STAGE_NORM2_POST,
		PANES({ .matrix = AM_FINAL_GAMMA }, { .matrix = AM_FINAL_BETA }, { .matrix = AM_FINAL }),
		/* a norm's formula, LayerNorm or RMSNorm: each one whole for the translation */
		.formula = { { FEAT_LAYERNORM, 0, N_("final = N(the last layer's output)   LayerNorm: (x \u2212 \u03bc)/\u221a(\u03c3\u00b2 + \u03b5)\u00b7\u03b3 + \u03b2, each row"),
		               N_("final = N(the last layer's output)   LayerNorm: (x - mean)/sqrt(var + eps)*gamma + beta, each row") },
		             { FEAT_NORM_1P, 0, N_("final = N(the last layer's output)   RMSNorm (Gemma): x/\u221a(mean(x\u00b2) + \u03b5)\u00b7(1 + \u03b3), each row"),
		               N_("final = N(the last layer's output)   RMSNorm (Gemma): x/sqrt(mean(x^2) + eps)*(1 + gamma), each row") },
		             { 0, 0, N_("final = N(the last layer's output)   RMSNorm: x/\u221a(mean(x\u00b2) + \u03b5)\u00b7\u03b3, each row"),
		               N_("final = N(the last layer's output)   RMSNorm: x/sqrt(mean(x^2) + eps)*gamma, each row") } },
		.what = N_("one more norm after the last layer (pre-norm stacks)"),
		.blurb_en = "A pre-norm stack ends with one more norm, so its output rows are normalised too.",
		.blurb_zh = "前置归一化的堆叠最后再做一次归一化，让输出的每一行也是归一化的。",
	},
	[STAGE_LOGITS] = {
		.map = "LM head",
		.name = "logits", .requires = FEAT_LM_HEAD, .instead = NONE,
		/* what the head reads: the final norm, or the last layer's output without one */
		PANES({ .matrix = AM_FINAL }, { .matrix = AM_NORM2, .requires = FEAT_POSTNORM, .unless = FEAT_FINAL },
		      { .matrix = AM_RESIDUAL2, .unless = FEAT_POSTNORM | FEAT_FINAL },
		      { .matrix = AM_NORM1, .requires = FEAT_POSTNORM, .unless = FEAT_FFN | FEAT_FINAL },
		      { .matrix = AM_RESIDUAL1, .unless = FEAT_FFN | FEAT_POSTNORM | FEAT_FINAL },
		      { .matrix = AM_OUTPUT, .unless = FEAT_BLOCK | FEAT_FINAL },
		      { .matrix = AM_UNEMBED, .flags = PANE_TRANSPOSE }, { .matrix = AM_LOGITS_RAW }, { .matrix = AM_LOGITS }),
		.formula = { { FEAT_FINAL_CAP, 0, N_("logits = c \u00b7 tanh(logits_raw / c),  logits_raw = final_norm\u00b7unembed\u1d40   (Gemma 2: c = final_logit_softcapping)"),
		               N_("logits = c * tanh(logits_raw / c),  logits_raw = final_norm.unembed^T   (Gemma 2: c = final_logit_softcapping)") },
		             { 0, 0, N_("logits = final_norm\u00b7unembed\u1d40   z_iv = \u03a3_c x_ic \u00b7 unembed_vc (one score per vocabulary entry)"),
		               N_("logits = final_norm.unembed^T   z_iv = sum_c x_ic * unembed_vc (one score per vocabulary entry)") } },
		.what = N_("the LM head: each position's row against every vocabulary entry's unembedding row"),
		.blurb_en = "The last rows meet the vocabulary: each entry's unembedding row is dotted with a position's row, one score (logit) per entry.",
		.blurb_zh = "最后的行与词表相遇：每个词条的反嵌入行和某个位置的行做点积，每个词条得到一个分数（logit）。",
	},
	[STAGE_NEXT] = {
		.map = "LM head",
		.name = "next", .requires = FEAT_LM_HEAD, .instead = NONE,
		PANES({ .matrix = AM_LOGITS }, { .matrix = AM_NEXT, .flags = PANE_BARS }),
		.formula = { { 0, 0, N_("next = softmax(logits[row] / T)   p_v = exp(z_v/T) / \u03a3_u exp(z_u/T)"),
		               N_("next = softmax(logits[row] / T)   p_v = exp(z_v/T) / sum_u exp(z_u/T)") } },
		.what = N_("the next token's probabilities: softmax of a position's logits over the temperature, the top entries as bars"),
		.blurb_en = "Softmax turns one position's logits into probabilities for the next token; the temperature T flattens them (T > 1) or sharpens them (T < 1).",
		.blurb_zh = "softmax 把一个位置的 logits 变成下一个词的概率；温度 T 让它们更平（T > 1）或更尖（T < 1）。",
	},
	/* the backward pass: each stage's panes are the gradients it makes and what it reads */
	[STAGE_BACK_MOE] = {
		.name = "back_moe", .requires = FEAT_BACKWARD | FEAT_MOE, .instead = NONE, .map = "\u2202",
		PANES({ .matrix = AM_D_FFN_OUT }, { .matrix = AM_MOE_WEIGHTS }, { .matrix = AM_D_MOE_WEIGHTS },
		      { .matrix = AM_D_MOE_W_2 }, { .matrix = AM_D_MOE_W_1 }, { .matrix = AM_D_MOE_W_3 },
		      { .matrix = AM_D_ROUTER_LOGITS }, { .matrix = AM_D_MOE_W_R }),
		.formula = { { FEAT_MOE_SIGMOID, 0,
		               "dw_e = expert_out_e\u00b7dffn_out   ds = r\u00b7(dw/den \u2212 \u03a3 dw\u00b7s/den\u00b2)   drouter_logits = ds \u2299 s(1 \u2212 s)   dW_router = x\u1d40\u00b7drouter_logits",
		               "dw_e = expert_out_e.dffn_out   ds = r*(dw/den - sum dw*s/den^2)   drouter_logits = ds * s(1 - s)   dW_router = x^T.drouter_logits" },
		             { 0, 0,
		               "dw_e = expert_out_e\u00b7dffn_out   drouter_logits = p \u2299 (dp \u2212 \u03a3 p\u00b7dp)   dW_router = x\u1d40\u00b7drouter_logits",
		               "dw_e = expert_out_e.dffn_out   drouter_logits = p * (dp - sum p*dp)   dW_router = x^T.drouter_logits" } },
		.what = N_("backward through the mixture: each chosen expert's weights, and the router through the chosen weights alone"),
		.blurb_en = "Through the mixture of experts: an expert learns only from the tokens that chose it, and the router only through the weights of the experts it chose; the top-k choice itself has no gradient.",
		.blurb_zh = "穿过专家混合：一个专家只从选中它的词那里学习，路由器也只通过被选中专家的权重学习；前 k 个的选择本身没有梯度。",
	},
	[STAGE_BACK_OUTPUT] = {
		.name = "back_output", .requires = FEAT_BACKWARD, .instead = NONE, .map = "\u2202",
		PANES({ .matrix = AM_D_OUTPUT }, { .matrix = AM_W_O }, { .matrix = AM_D_W_O },
		      { .matrix = AM_D_CONCAT, .unless = FEAT_GATED }, { .matrix = AM_D_GATED }),
		.formula = { { FEAT_GATED, 0, "dgated = doutput\u00b7W_o\u1d40   dW_o = gated\u1d40\u00b7doutput",
		               "dgated = doutput.W_o^T   dW_o = gated^T.doutput" },
		             { FEAT_WO | FEAT_BLOCK, 0, N_("dconcat = doutput\u00b7W_o\u1d40   dW_o = concat\u1d40\u00b7doutput   (doutput: what the block sends back)"),
		               N_("dconcat = doutput.W_o^T   dW_o = concat^T.doutput   (doutput: what the block sends back)") },
		             { FEAT_WO, 0, "dconcat = doutput\u00b7W_o\u1d40   dW_o = concat\u1d40\u00b7doutput   (doutput = output \u2212 target)",
		               "dconcat = doutput.W_o^T   dW_o = concat^T.doutput   (doutput = output - target)" },
		             { 0, 0, N_("dconcat = doutput   (doutput = output \u2212 target, or the lesson's dOutput)"),
		               N_("dconcat = doutput   (doutput = output - target, or the lesson's dOutput)") } },
		.what = N_("backward: \u2202L/\u2202output, then through W_o to \u2202L/\u2202concat"),
		.blurb_en = "The backward pass starts at the loss: how much would L change if each output number moved a little? Then it flows back through W_o.",
		.blurb_zh = "反向传播从损失开始：每个输出数字稍微变一点，L 会变多少？然后它穿过 W_o 往回流。",
	},
	[STAGE_BACK_GATE] = {
		.name = "back_gate", .requires = FEAT_BACKWARD | FEAT_GATED, .instead = NONE, .map = "\u2202",
		PANES({ .matrix = AM_D_GATED }, { .matrix = AM_GATE_SIG, .flags = HEAD }, { .matrix = AM_D_CONCAT },
		      { .matrix = AM_D_GATE }, { .matrix = AM_D_B_GATE }, { .matrix = AM_D_W_GATE }),
		.formula = { { 0, 0,
		               "dconcat = dgated \u2299 \u03c3(gate)   dgate = dgated \u2299 concat \u2299 \u03c3(gate)(1 \u2212 \u03c3(gate))   dW_gate = x\u1d40\u00b7dgate",
		               "dconcat = dgated * sigmoid(gate)   dgate = dgated * concat * sigmoid(gate)(1 - sigmoid(gate))   dW_gate = x^T.dgate" } },
		.what = N_("backward through the gate: \u2202L/\u2202concat and the gate's own gradients"),
		.blurb_en = "Through the gate: a closed gate (\u03c3 near 0) passes almost nothing back to its heads, and the gate itself learns most where it is half open.",
		.blurb_zh = "穿过门控：关着的门（\u03c3 接近 0）几乎不把梯度传回它的头；门本身在半开时学得最多。",
	},
	[STAGE_BACK_WEIGHTED] = {
		.name = "back_weighted", .requires = FEAT_BACKWARD, .instead = NONE, .map = "\u2202",
		PANES({ .matrix = AM_D_WEIGHTED }, { .matrix = AM_V, .flags = HEAD }, { .matrix = AM_D_V, .flags = HEAD },
		      { .matrix = AM_D_WEIGHTS }),
		.formula = { { 0, 0, "dweights = dweighted\u00b7V\u1d40   dV = weights\u1d40\u00b7dweighted",
		               "dweights = dweighted.V^T   dV = weights^T.dweighted" } },
		.what = N_("backward through the weighted sum: \u2202L/\u2202weights and \u2202L/\u2202V"),
		.blurb_en = "Through the weighted sum: a weight's gradient is how well its value row lines up with where the output should move.",
		.blurb_zh = "穿过加权求和：一个权重的梯度，取决于它的值向量和输出应当移动的方向有多一致。",
	},
	[STAGE_BACK_SOFTMAX] = {
		.name = "back_softmax", .requires = FEAT_BACKWARD, .instead = NONE, .map = "\u2202",
		PANES({ .matrix = AM_WEIGHTS }, { .matrix = AM_D_WEIGHTS }, { .matrix = AM_D_MASKED }, { .matrix = AM_D_SINKS }),
		.formula = { { FEAT_SINKS, 0, "dmasked_ij = w_ij (dweights_ij \u2212 \u03a3_k w_ik dweights_ik)   dsink_h = \u2212\u03a3_i sink_i \u03a3_k w_ik dweights_ik",
		               "dmasked_ij = w_ij (dweights_ij - sum_k w_ik dweights_ik)   dsink_h = -sum_i sink_i sum_k w_ik dweights_ik" },
		             { 0, 0, "dmasked_ij = w_ij (dweights_ij \u2212 \u03a3_k w_ik dweights_ik)   Jacobian: diag(w) \u2212 w w\u1d40",
		               "dmasked_ij = w_ij (dweights_ij - sum_k w_ik dweights_ik)   Jacobian: diag(w) - w w^T" } },
		.what = N_("backward through softmax: its Jacobian diag(w) \u2212 w w\u1d40, row by row"),
		.blurb_en = "Through softmax: each score's gradient is its weight times how far its own pull differs from the row's average. A weight near 0 or 1 passes almost nothing back.",
		.blurb_zh = "穿过 softmax：每个分数的梯度等于它的权重乘以它自己的拉力与这一行平均值之差。接近 0 或 1 的权重几乎传不回任何东西。",
	},
	[STAGE_BACK_MASK] = {
		.name = "back_mask", .requires = FEAT_BACKWARD | FEAT_MASK, .instead = STAGE_BACK_SOFTMAX, .map = "\u2202",
		PANES({ .matrix = AM_D_MASKED }, { .matrix = AM_D_SCALED }),
		.formula = { { FEAT_SOFTCAP, 0, N_("dscaled_ij = dmasked_ij \u00b7 (1 \u2212 tanh\u00b2(s_ij / c)) where key j is visible, else 0   (through the soft cap)"),
		               N_("dscaled_ij = dmasked_ij * (1 - tanh^2(s_ij / c)) where key j is visible, else 0   (through the soft cap)") },
		             { 0, 0, N_("dscaled_ij = dmasked_ij where key j is visible, else 0"), N_("dscaled_ij = dmasked_ij where key j is visible, else 0") } },
		.what = N_("backward through the mask: masked cells pass nothing back"),
		.blurb_en = "Through the mask: a masked cell was replaced by a constant, so nothing flows back through it.",
		.blurb_zh = "穿过掩码：被掩盖的位置换成了常数，所以梯度不会从那里流回去。",
	},
	[STAGE_BACK_SCALE] = {
		.name = "back_scale", .requires = FEAT_BACKWARD, .instead = NONE, .map = "\u2202",
		PANES({ .matrix = AM_D_SCALED }, { .matrix = AM_D_SCORES }),
		.formula = { { FEAT_UNSCALED, 0, N_("dscores = dscaled   (scale off: \u00d7 1)"), N_("dscores = dscaled   (scale off: * 1)") },
		             { FEAT_SCALE_VALUE, 0, N_("dscores = dscaled \u00d7 scale   (the lesson's own factor)"),
		               N_("dscores = dscaled * scale   (the lesson's own factor)") },
		             { 0, 0, "dscores = dscaled / \u221ad_k", "dscores = dscaled / sqrt(d_k)" } },
		.what = N_("backward through the scale: \u00d7 the same factor"),
		.blurb_en = "Through the scale: the gradient is multiplied by the same factor, 1/\u221ad_k.",
		.blurb_zh = "穿过缩放：梯度乘以同一个系数 1/\u221ad_k。",
	},
	[STAGE_BACK_SCORES] = {
		.name = "back_scores", .requires = FEAT_BACKWARD, .instead = NONE, .map = "\u2202",
		PANES({ .matrix = AM_D_SCORES }, { .matrix = AM_K, .flags = HEAD }, { .matrix = AM_D_Q, .flags = HEAD },
		      { .matrix = AM_Q, .flags = HEAD }, { .matrix = AM_D_K, .flags = HEAD }),
		.formula = { { FEAT_ADDITIVE, 0, "dq_ic = \u03a3_j dscores_ij w_e[c](1 \u2212 tanh\u00b2(q_ic + k_jc)), dk likewise",
		               "dq_ic = sum_j dscores_ij w_e[c](1 - tanh^2(q_ic + k_jc)), dk likewise" },
		             { 0, 0, "dQ = dscores\u00b7K   dK = dscores\u1d40\u00b7Q", "dQ = dscores.K   dK = dscores^T.Q" } },
		.what = N_("backward through the scores: \u2202L/\u2202Q and \u2202L/\u2202K"),
		.blurb_en = "Through the scores: a query moves toward the keys whose scores should rise, and each key toward those queries.",
		.blurb_zh = "穿过分数：查询向应当得分更高的键移动，每个键也向这些查询移动。",
	},
	[STAGE_BACK_PROJECT] = {
		.name = "back_project", .requires = FEAT_BACKWARD, .instead = NONE, .map = "\u2202", .flags = SF_PARAMS,
		PANES({ .matrix = AM_D_Q }, { .matrix = AM_D_W_Q }, { .matrix = AM_D_W_K }, { .matrix = AM_D_W_V },
		      { .matrix = AM_D_X }),
		.formula = { { 0, 0, "dW_q = X\u1d40\u00b7dQ   dW_k = S\u1d40\u00b7dK   dW_v = S\u1d40\u00b7dV   dX = dQ\u00b7W_q\u1d40 + dK\u00b7W_k\u1d40 + dV\u00b7W_v\u1d40",
		               "dW_q = X^T.dQ   dW_k = S^T.dK   dW_v = S^T.dV   dX = dQ.W_q^T + dK.W_k^T + dV.W_v^T" } },
		.what = N_("backward through the projections: the weights' gradients, and \u2202L/\u2202X"),
		.blurb_en = "Through the projections: the gradients of W_q, W_k and W_v, the numbers training subtracts a little of at every step.",
		.blurb_zh = "穿过投影：得到 W_q、W_k、W_v 的梯度——训练每一步都会减去它们的一小部分。",
	},
};

#undef HEAD
#undef NORM_FORMULAS
#undef NONE

/* ------------------------------------------------------------ look-ups */

static const char *const feature_reasons[FEAT_COUNT] = {
	N_("it has no positional encoding"), /* FEAT_POSITIONAL */
	N_("it has one head"),               /* FEAT_MULTIHEAD */
	N_("it has no mask"),                /* FEAT_MASK */
	N_("it has no W_o"),                 /* FEAT_WO */
	N_("it has no source (it is self-attention)"), /* FEAT_SOURCE */
	N_("it uses dot-product scores"),    /* FEAT_ADDITIVE */
	N_("it has no Transformer block (\"block\")"), /* FEAT_BLOCK */
	N_("its block is not pre-norm"),     /* FEAT_PRENORM */
	N_("its block is not post-norm"),    /* FEAT_POSTNORM */
	N_("its norm is RMSNorm, which has no \u03b2"), /* FEAT_LAYERNORM */
	N_("its block has no feed-forward network (\"ffn\")"), /* FEAT_FFN */
	N_("its FFN is not SwiGLU"),         /* FEAT_SWIGLU */
	N_("it has no final norm here (\"final_norm\", after the last layer)"), /* FEAT_FINAL */
	N_("its block has no norms: its \"norm\" is \"none\""), /* FEAT_NORM */
	N_("it has no loss (\"backward\")"), /* FEAT_BACKWARD */
	N_("it has no rotary position embeddings (\"rope\")"), /* FEAT_ROPE */
	N_("it has no ALiBi (\"alibi\")"),  /* FEAT_ALIBI */
	N_("its query heads each have their own key/value head (no \"kv_heads\" below \"heads\")"), /* FEAT_GQA */
	N_("its mask has no window"),        /* FEAT_WINDOW */
	N_("it is not decoded token by token (\"decode\")"), /* FEAT_DECODE */
	N_("it has no FlashAttention tiles (\"flash\")"), /* FEAT_FLASH */
	N_("its scores are scaled (\"scale\" is not false)"), /* FEAT_UNSCALED */
	N_("its scale is not a number of its own (\"scale\")"), /* FEAT_SCALE_VALUE */
	N_("it has no QK-norm (\"qk_norm\")"), /* FEAT_QK_NORM */
	N_("it has no LM head here (\"vocab\" and \"unembed\", after the last layer)"), /* FEAT_LM_HEAD */
	N_("its scores are not soft-capped (\"attn_logit_softcapping\")"), /* FEAT_SOFTCAP */
	N_("its logits are not soft-capped (\"final_logit_softcapping\")"), /* FEAT_FINAL_CAP */
	N_("it has no attention sinks (\"sinks\")"), /* FEAT_SINKS */
	N_("its RoPE is neither scaled nor partial (\"scaling\", \"partial_rotary_factor\")"), /* FEAT_ROPE_TABLE */
	N_("it has no linear attention (\"linear_attention\")"), /* FEAT_LINEAR */
	N_("it has no Gated DeltaNet (\"gated_deltanet\")"), /* FEAT_DELTANET */
	N_("it has no multi-head latent attention (\"mla\")"), /* FEAT_MLA */
	N_("its MLA query is not compressed (no \"q_lora_rank\")"), /* FEAT_MLA_QLORA */
	N_("it has no differential attention (\"diff_attn\")"), /* FEAT_DIFF */
	N_("its attention is not gated (no \"W_gate\")"), /* FEAT_GATED */
	N_("its QK-norm is per head (\"qk_norm\" without \"over\": \"projection\")"), /* FEAT_QK_NORM_PROJ */
	N_("its block's norms are not after each sublayer (\"norm\": \"after\")"), /* FEAT_NORM_AFTER */
	N_("its mixture of experts has no shared expert (\"shared_expert\")"), /* FEAT_MOE_SHARED */
	N_("its FFN is not a mixture of experts (\"ffn\": {\"kind\": \"moe\"})"), /* FEAT_MOE */
	N_("its norms multiply by \u03b3, not by Gemma's 1 + \u03b3 (\"rmsnorm_plus1\")"), /* FEAT_NORM_1P */
	N_("its block has no norms after each sublayer beside those before (\"norm\": \"sandwich\")"), /* FEAT_SANDWICH */
	N_("its input rows are not scaled (no \"embed_scale\")"), /* FEAT_EMBED_SCALE */
	N_("its router scores with sigmoids, not a softmax (\"scoring_func\": \"sigmoid\")"), /* FEAT_MOE_SOFTMAX */
	N_("its router scores with a softmax (no \"scoring_func\": \"sigmoid\")"), /* FEAT_MOE_SIGMOID */
	N_("its shared expert has no gate (DeepSeek's)"), /* FEAT_MOE_SHARED_GATE */
	N_("its Gated DeltaNet is not the layer's mixer (\"gated_deltanet\": {\"mixer\": true})"), /* FEAT_GDN_MIXER */
	N_("its decoding cache keeps no first tokens (\"decode\": {\"cache\": {\"sink\", \"window\"}})"), /* FEAT_STREAMING */
	N_("its gated FFN is not GeGLU (\"activation\": \"gelu_tanh\" with W_3)"), /* FEAT_GEGLU */
	N_("it has no QK-norm after RoPE (\"qk_norm\": {\"kind\": \"l2\"})"), /* FEAT_QK_L2 */
	N_("it has no sparse attention (\"dsa\": DeepSeek-V3.2's indexer)"), /* FEAT_DSA */
};

const char *feature_absent(FeatureSet feat)
{
	for (int i = 0; i < FEAT_COUNT; i++)
		if (feat & ((FeatureSet)1 << i))
			return _(feature_reasons[i]);
	return "";
}

static int has(const LessonShape *sh, FeatureSet req)
{
	return (sh->features & req) == req;
}

const char *stage_name(Stage s)
{
	return (unsigned)s < STAGE_COUNT ? stage_kinds[s].name : NULL;
}

/* An entry of a table by its name: exact first, then ignoring case; -1 when none. */
static int find_name(const char *name, const void *table, size_t stride, int count)
{
	if (name == NULL)
		return -1;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < count; i++) {
			const char *entry = *(const char *const *)((const char *)table + (size_t)i * stride);
			if ((pass == 0 ? strcmp(name, entry) : strcasecmp(name, entry)) == 0)
				return i;
		}
	return -1;
}

int stage_find(const char *name)
{
	return find_name(name, stage_kinds, sizeof stage_kinds[0], STAGE_COUNT);
}

int stage_lookup(const LessonShape *sh, const char *name)
{
	const int first = stage_find(name);

	if (first < 0 || sh == NULL)
		return first;
	for (int i = first; i < STAGE_COUNT; i++)
		if (strcmp(stage_kinds[i].name, stage_kinds[first].name) == 0 && stage_present(sh, (Stage)i))
			return i;
	return first;
}

const char *stage_absent(const LessonShape *sh, Stage s)
{
	unsigned missing = ~0u;

	if ((unsigned)s >= STAGE_COUNT)
		return "";
	/* What every entry of that name lacks: "norm1" with no norms lacks FEAT_NORM in both. */
	for (int i = 0; i < STAGE_COUNT; i++)
		if (strcmp(stage_kinds[i].name, stage_kinds[s].name) == 0)
			missing &= stage_kinds[i].requires & ~sh->features;
	if (missing == 0)
		missing = stage_kinds[s].requires & ~sh->features;
	return feature_absent(missing);
}

int stage_present(const LessonShape *sh, Stage s)
{
	return (unsigned)s < STAGE_COUNT && has(sh, stage_kinds[s].requires) && !(sh->features & stage_kinds[s].unless);
}

Stage stage_shown(const LessonShape *sh, Stage s)
{
	while ((unsigned)s < STAGE_COUNT && !stage_present(sh, s))
		s = stage_kinds[s].instead;
	return (unsigned)s < STAGE_COUNT ? s : STAGE_INPUT;
}

char *stage_list(const LessonShape *sh)
{
	StrBuf b = { 0 };

	for (int i = 0; i < STAGE_COUNT; i++)
		if (stage_present(sh, (Stage)i))
			strbuf_printf(&b, "%s%s", b.len ? " " : "", stage_kinds[i].name);
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s != NULL ? b.s : strdup("");
}

char *stage_map_links(const LessonShape *const *links, int nlinks, int cur, Stage current, int utf8)
{
	char place[2 * STAGE_COUNT][16];
	int n = 0, lit = -1, norms = 0, back = 0, back_lit = 0;
	StrBuf b = { 0 };

	if (nlinks < 1 || !(links[0]->features & FEAT_BLOCK))
		return NULL;
	for (int li = 0; li < nlinks; li++) {
		const LessonShape *sh = links[li];
		const int norms_before = norms;
		const char *prev = NULL;
		/* the places, in order: consecutive stages of one sublayer are one place; each residual's "+" is its own */
		for (int i = 0; i < STAGE_COUNT; i++) {
			const char *m = stage_kinds[i].map;
			int k;
			if (m == NULL || !stage_present(sh, (Stage)i))
				continue;
			if (nlinks > 1 && strcmp(m, "\u2202") == 0) { /* the gradients: one place after every link */
				back_lit |= li == cur && i == (int)current;
				back = 1;
				continue;
			}
			if (li > 0 && strcmp(m, "x") == 0) { /* a later link's input: what the link before made */
				if (li == cur && i == (int)current)
					lit = n - 1;
				continue;
			}
			if (prev == NULL || strcmp(m, prev) != 0 || strcmp(m, "+") == 0) {
				if (n == (int)(sizeof place / sizeof place[0]))
					break;
				if (m[0] == 'N' && sscanf(m + 1, "%d", &k) == 1) { /* a later link's norms count on */
					/* N1' and N2': a sandwich block's norms after its sublayers keep their mark */
					snprintf(place[n], sizeof place[n], "N%d%s", norms_before + k, strchr(m, '\'') != NULL ? "'" : "");
					norms = norms > norms_before + k ? norms : norms_before + k;
				} else if (nlinks > 1 && strcmp(m, "attention") == 0) /* which attention of the layer */
					snprintf(place[n], sizeof place[n], "%s", sh->features & FEAT_SOURCE ? "cross-attn" : "self-attn");
				else
					snprintf(place[n], sizeof place[n], "%s", m);
				n++;
			}
			prev = m;
			if (li == cur && i == (int)current)
				lit = n - 1;
		}
	}
	if (back && n < (int)(sizeof place / sizeof place[0])) {
		if (back_lit)
			lit = n;
		snprintf(place[n++], sizeof place[0], "%s", "\u2202");
	}
	for (int k = 0; k < n; k++) /* the gradients' ∂ is "d" without UTF-8, as dM is */
		strbuf_printf(&b, "%s%s%s%s", k ? (utf8 ? " \u2192 " : " -> ") : "", k == lit ? "[" : "",
		              !utf8 && strcmp(place[k], "\u2202") == 0 ? "d" : place[k], k == lit ? "]" : "");
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

char *stage_map(const LessonShape *sh, Stage current, int utf8)
{
	return stage_map_links(&sh, 1, 0, current, utf8);
}

const char *stage_formula(const LessonShape *sh, Stage s, int utf8)
{
	if ((unsigned)s >= STAGE_COUNT)
		return "";
	for (int i = 0; i < STAGE_MAX_FORMULAS; i++) {
		const StageFormula *f = &stage_kinds[s].formula[i];
		if (f->utf8 == NULL)
			break;
		if (has(sh, f->when) && (sh->features & f->unless) == 0)
			return utf8 ? f->utf8 : f->ascii;
	}
	return "";
}

const char *stage_blurb(Stage s, const char *lang)
{
	if ((unsigned)s >= STAGE_COUNT)
		return "";
	return lang != NULL && strcmp(lang, "zh") == 0 ? stage_kinds[s].blurb_zh : stage_kinds[s].blurb_en;
}

int stage_panes(const LessonShape *sh, Stage s, StagePane out[STAGE_MAX_PANES])
{
	int k = 0;

	if ((unsigned)s >= STAGE_COUNT)
		return 0;
	for (int i = 0; i < stage_kinds[s].npanes; i++)
		if (has(sh, stage_kinds[s].panes[i].requires) && (sh->features & stage_kinds[s].panes[i].unless) == 0 &&
		    matrix_present(sh, stage_kinds[s].panes[i].matrix, NULL))
			out[k++] = stage_kinds[s].panes[i];
	return k;
}

/* A pane of head (or key/value head) h's columns, in a stage whose result is `result`. */
static PaneCut cut(const LessonShape *sh, const StagePane *p, int h, AttnMatrix result)
{
	PaneCut c = { p->matrix, h, matrix_head_col0(sh, p->matrix, h), matrix_head_width(sh, p->matrix), p->flags, 0 };

	if (p->flags & PANE_EACH_KV_HEAD) /* h is the key/value head itself */
		c.col0 = h * matrix_head_width(sh, p->matrix);
	if (matrix_kinds[p->matrix].head_cols == DIM_ONE) /* a matrix of its own per head: all of it */
		c.col0 = 0, c.ncols = -1;
	c.label0 = c.col0;
	if ((p->flags & PANE_RESULT_COLS) && matrix_kinds[p->matrix].col_axis == AXIS_INDEX)
		c.label0 = matrix_head_col0(sh, result, h);
	return c;
}

int stage_cut_panes(const LessonShape *sh, const StagePane *ps, int np, int cur, PaneCut *out, int max)
{
	const int h = sh->heads > 0 ? sh->heads : 1, g = sh->kv_heads > 0 && sh->kv_heads <= h ? sh->kv_heads : h;
	int fixed = 0, kvp = 0, qp = 0, n = 0, done = 0;

	for (int i = 0; i < np; i++) {
		kvp += (ps[i].flags & PANE_EACH_KV_HEAD) != 0;
		qp += (ps[i].flags & PANE_EACH_HEAD) != 0 && !(ps[i].flags & PANE_EACH_KV_HEAD);
		fixed += !(ps[i].flags & (PANE_EACH_HEAD | PANE_EACH_KV_HEAD));
	}
	if (cur < 0 || cur >= h)
		cur = 0;
	for (int i = 0; i < np && n < max; i++) {
		if (!(ps[i].flags & (PANE_EACH_HEAD | PANE_EACH_KV_HEAD))) {
			PaneCut c = { ps[i].matrix, cur, 0, -1, ps[i].flags, 0 };
			if ((ps[i].flags & PANE_HEAD_COLS) && h > 1)
				c = cut(sh, &ps[i], cur, ps[np - 1].matrix);
			out[n++] = c;
			continue;
		}
		if (done++)
			continue;
		/* the groups: g of them with key/value panes, else one per query head */
		const int groups = kvp > 0 ? g : h, per = kvp > 0 ? h / g : 1, size = kvp + qp * per;
		const int room = max - fixed > 1 ? max - fixed : 1;
		int fit = size > 0 ? room / size : groups, q0 = 0, q1 = per;
		if (fit < 1) {
			/* one group is too large: its key/value panes, and the query heads around cur */
			int qn = qp > 0 ? (room - kvp) / qp : 0;
			fit = 1;
			if (qn < 1)
				qn = 1;
			if (qn < per) {
				const int at = cur % per;
				q0 = at >= qn ? at - qn + 1 : 0;
				q1 = q0 + qn;
			}
		}
		if (fit > groups)
			fit = groups;
		const int cg = cur / per;
		const int first = cg >= fit ? cg - fit + 1 : 0;
		for (int j = first; j < first + fit; j++) {
			for (int k = 0; k < np && n < max; k++)
				if (ps[k].flags & PANE_EACH_KV_HEAD)
					out[n++] = cut(sh, &ps[k], j, ps[np - 1].matrix);
			for (int q = j * per + q0; q < j * per + q1; q++)
				for (int k = 0; k < np && n < max; k++)
					if ((ps[k].flags & PANE_EACH_HEAD) && !(ps[k].flags & PANE_EACH_KV_HEAD))
						out[n++] = cut(sh, &ps[k], q, ps[np - 1].matrix);
		}
	}
	return n;
}

const char *matrix_name(AttnMatrix m)
{
	return (unsigned)m < AM_COUNT ? matrix_kinds[m].name : NULL;
}

int matrix_find(const char *name)
{
	return find_name(name, matrix_kinds, sizeof matrix_kinds[0], AM_COUNT);
}

const MatrixKind *matrix_kind(AttnMatrix m)
{
	return (unsigned)m < AM_COUNT ? &matrix_kinds[m] : NULL;
}

/* FEAT_* bits a lesson must not have for a matrix to be in it: multi-head latent attention has no W_k, W_v (nor W_q with q_lora_rank). */
static const FeatureSet matrix_unless[AM_COUNT] = {
	[AM_W_Q] = FEAT_MLA_QLORA, [AM_W_K] = FEAT_MLA, [AM_W_V] = FEAT_MLA,
	/* a mixture of experts: the experts' W_1, W_3, W_2 instead of the dense FFN's */
	[AM_W_1] = FEAT_MOE, [AM_B_1] = FEAT_MOE, [AM_W_3] = FEAT_MOE, [AM_B_3] = FEAT_MOE, [AM_W_2] = FEAT_MOE,
	[AM_B_2] = FEAT_MOE, [AM_FFN_HIDDEN] = FEAT_MOE, [AM_FFN_GATE] = FEAT_MOE, [AM_FFN_ACT] = FEAT_MOE,
};

int matrix_present(const LessonShape *sh, AttnMatrix m, const char **why)
{
	const FeatureSet req = (unsigned)m < AM_COUNT ? matrix_kinds[m].requires : 0;

	if ((unsigned)m >= AM_COUNT) {
		if (why != NULL)
			*why = "unknown";
		return 0;
	}
	if (sh->features & matrix_unless[m]) {
		if (why != NULL)
			*why = (sh->features & matrix_unless[m] & FEAT_MOE)
			               ? _("its FFN is a mixture of experts: see experts_W_1, experts_W_3, experts_W_2 and the router")
			       : (sh->features & matrix_unless[m] & FEAT_MLA_QLORA)
			               ? _("its MLA query is compressed: c_Q = RMSNorm(x\u00b7W_qa), then W_qb")
			               : _("it has multi-head latent attention: keys and values come from W_kva and W_kvb");
		return 0;
	}
	if (why != NULL)
		*why = has(sh, req) ? NULL : feature_absent(req & ~sh->features);
	return has(sh, req);
}

int matrix_per_head(AttnMatrix m)
{
	return (unsigned)m < AM_COUNT && (matrix_kinds[m].flags & MF_PER_HEAD);
}

int matrix_editable(AttnMatrix m)
{
	return (unsigned)m < AM_COUNT && (matrix_kinds[m].flags & MF_GIVEN);
}

void matrix_shape(const LessonShape *sh, AttnMatrix m, int *rows, int *cols)
{
	*rows = *cols = 0;
	if ((unsigned)m >= AM_COUNT)
		return;
	*rows = sh->dim[matrix_kinds[m].rows];
	*cols = sh->dim[matrix_kinds[m].cols];
}

int shape_kv_head(const LessonShape *sh, int h)
{
	const int g = sh->kv_heads > 0 ? sh->kv_heads : sh->heads;

	return g > 0 && sh->heads >= g ? h / (sh->heads / g) : h;
}

int matrix_head_width(const LessonShape *sh, AttnMatrix m)
{
	return (unsigned)m < AM_COUNT ? sh->dim[matrix_kinds[m].head_cols] : 0;
}

int matrix_head_col0(const LessonShape *sh, AttnMatrix m, int h)
{
	if ((unsigned)m >= AM_COUNT)
		return 0;
	return ((matrix_kinds[m].flags & MF_KV) ? shape_kv_head(sh, h) : h) * matrix_head_width(sh, m);
}

int matrix_stage(const LessonShape *sh, AttnMatrix m)
{
	const MatrixKind *k = matrix_kind(m);

	if (k == NULL || k->made_by == STAGE_COUNT)
		return -1;
	if (stage_present(sh, k->made_by))
		return (int)k->made_by;
	return k->made_else == STAGE_COUNT ? -1 : (int)k->made_else;
}
