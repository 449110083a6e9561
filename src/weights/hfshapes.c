/*
 * hfshapes.c: the tensors a config makes (hfconfig_check_shapes): each
 * architecture's names and shapes, layer by layer and expert by expert, every
 * one checked against the file's before a number is read, so a config that
 * contradicts its weights is refused naming the tensor and the keys.
 */
#include "weights/hfconfig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/i18n.h"
#include "base/jsonread.h"
#include "base/strbuf.h"
#include "base/text.h"

typedef struct Want {
	char name[HF_NAME_SIZE];
	int ndim;
	long long shape[3]; /* gpt-oss's experts are 3-D */
	const char *keys; /* the config's keys that make the shape */
} Want;

/* The tensor pre + name (pre: the layer's "h.3." or "model.layers.3.", or ""). */
static void want(Want *w, int *n, const char *keys, long long d0, long long d1, const char *pre, const char *name)
{
	Want *x = &w[(*n)++];
	snprintf(x->name, sizeof x->name, "%s%s", pre, name);
	x->ndim = d1 < 0 ? 1 : 2;
	x->shape[0] = d0;
	x->shape[1] = d1;
	x->keys = keys;
}

/*
 * DeepseekV3DecoderLayer's tensors (nn.Linear [out, in]): the latent
 * attention's, then the dense MLP's, or a DeepseekV3MoE's router (gate.weight
 * and its e_score_correction_bias buffer) and shared experts (each routed
 * expert's three by expert_wants).
 */
static int deepseek_wants(const HfConfig *c, int layer, const char *pre, Want *w)
{
	const long long D = c->hidden_size, F = c->intermediate_size, H = c->num_heads, r = c->q_lora_rank;
	const long long kc = c->kv_lora_rank, dr = c->qk_rope_head_dim, dq = c->qk_nope_head_dim + dr, dv = c->v_head_dim;
	int n = 0;

	want(w, &n, "hidden_size", D, -1, pre, "input_layernorm.weight");
	if (r > 0) {
		want(w, &n, "q_lora_rank, hidden_size", r, D, pre, "self_attn.q_a_proj.weight");
		want(w, &n, "q_lora_rank", r, -1, pre, "self_attn.q_a_layernorm.weight");
		want(w, &n, "num_attention_heads, qk_nope_head_dim + qk_rope_head_dim, q_lora_rank", H * dq, r, pre,
		     "self_attn.q_b_proj.weight");
	} else {
		want(w, &n, "num_attention_heads, qk_nope_head_dim + qk_rope_head_dim, hidden_size", H * dq, D, pre,
		     "self_attn.q_proj.weight");
	}
	want(w, &n, "kv_lora_rank + qk_rope_head_dim, hidden_size", kc + dr, D, pre, "self_attn.kv_a_proj_with_mqa.weight");
	want(w, &n, "kv_lora_rank", kc, -1, pre, "self_attn.kv_a_layernorm.weight");
	want(w, &n, "num_attention_heads, qk_nope_head_dim + v_head_dim, kv_lora_rank", H * (dq - dr + dv), kc, pre,
	     "self_attn.kv_b_proj.weight");
	want(w, &n, "hidden_size, num_attention_heads, v_head_dim", D, H * dv, pre, "self_attn.o_proj.weight");
	if (c->arch == HF_DEEPSEEK_V32) { /* DeepSeek-V3.2's lightning indexer (inference/model.py, Indexer) */
		const long long IH = c->index_n_heads, Id = c->index_head_dim;
		want(w, &n, "index_n_heads, index_head_dim, q_lora_rank", IH * Id, r, pre, "self_attn.indexer.wq_b.weight");
		want(w, &n, "index_head_dim, hidden_size", Id, D, pre, "self_attn.indexer.wk.weight");
		want(w, &n, "index_head_dim", Id, -1, pre, "self_attn.indexer.k_norm.weight");
		want(w, &n, "index_head_dim", Id, -1, pre, "self_attn.indexer.k_norm.bias");
		want(w, &n, "index_n_heads, hidden_size", IH, D, pre, "self_attn.indexer.weights_proj.weight");
	}
	want(w, &n, "hidden_size", D, -1, pre, "post_attention_layernorm.weight");
	if (c->num_experts > 0 && c->sparse[layer]) {
		const long long S = c->shared_ff;
		const char *k = "moe_intermediate_size · n_shared_experts, hidden_size";
		want(w, &n, "n_routed_experts, hidden_size", c->num_experts, D, pre, "mlp.gate.weight");
		want(w, &n, "n_routed_experts", c->num_experts, -1, pre, "mlp.gate.e_score_correction_bias");
		if (S > 0) {
			want(w, &n, k, S, D, pre, "mlp.shared_experts.gate_proj.weight");
			want(w, &n, k, S, D, pre, "mlp.shared_experts.up_proj.weight");
			want(w, &n, "hidden_size, moe_intermediate_size · n_shared_experts", D, S, pre,
			     "mlp.shared_experts.down_proj.weight");
		}
		return n;
	}
	want(w, &n, "intermediate_size, hidden_size", F, D, pre, "mlp.gate_proj.weight");
	want(w, &n, "intermediate_size, hidden_size", F, D, pre, "mlp.up_proj.weight");
	want(w, &n, "hidden_size, intermediate_size", D, F, pre, "mlp.down_proj.weight");
	return n;
}

/* ---- gpt-oss's tensors (issue 23) ---- */

/* GptOssDecoderLayer's own: the sinks, the router (weight and bias) and the experts' fused, 3-D tensors. */
static int gptoss_wants(const HfConfig *c, const char *pre, Want *w)
{
	static const char *const names[] = { "mlp.experts.gate_up_proj", "mlp.experts.gate_up_proj_bias",
		                             "mlp.experts.down_proj", "mlp.experts.down_proj_bias" };
	const long long D = c->hidden_size, E = c->num_experts, F = c->intermediate_size;
	const long long shapes[][3] = { { E, D, 2 * F }, { E, 2 * F, -1 }, { E, F, D }, { E, D, -1 } };
	int n = 0;

	want(w, &n, "num_attention_heads", c->num_heads, -1, pre, "self_attn.sinks");
	want(w, &n, "num_local_experts, hidden_size", E, D, pre, "mlp.router.weight");
	want(w, &n, "num_local_experts", E, -1, pre, "mlp.router.bias");
	for (int k = 0; k < 4; k++) {
		want(w, &n, k % 2 ? "num_local_experts, intermediate_size, hidden_size" : "num_local_experts, hidden_size, intermediate_size",
		     shapes[k][0], shapes[k][1], pre, names[k]);
		w[n - 1].ndim = shapes[k][2] < 0 ? 2 : 3;
		w[n - 1].shape[2] = shapes[k][2];
	}
	return n;
}

/* An MXFP4 checkpoint's experts (*_blocks, *_scales) refused by name, with or without its quantization_config. */
static char *gptoss_quantised(const HfConfig *c, const HfWeights *w)
{
	char name[HF_NAME_SIZE];

	snprintf(name, sizeof name, "model.layers.0.mlp.experts.gate_up_proj_blocks");
	if (!c->gptoss || hfweights_find(w, name, NULL) == NULL)
		return NULL;
	/* name is this function's own (no text of the file): shown whole */
	return str_printf(_("%s: tensor \"%s\" is MXFP4-quantised (blocks and scales): attnviz reads BF16, F16 and F32 "
	                    "weights; use the BF16 checkpoint, or dequantise it first"),
	                  w->name, name);
}

/* ---- end of gpt-oss's tensors ---- */

/* Every tensor of one layer (layer >= 0) or of the model's ends (layer -1), as the modeling code makes them. */
/*
 * A Qwen3-Next linear layer's tensors (Qwen3NextGatedDeltaNet.__init__): in_proj_qkvz [2·key_dim + 2·value_dim, D],
 * in_proj_ba [2·num_v_heads, D], conv1d [conv_dim, 1, K] (depthwise), dt_bias and A_log [num_v_heads], norm
 * [head_v_dim], out_proj [D, value_dim]; key_dim = head_k_dim · num_k_heads, value_dim = head_v_dim · num_v_heads.
 */
static int qwen3next_linear_wants(const HfConfig *c, const char *pre, Want *w)
{
	const long long D = c->hidden_size, kd = (long long)c->lin_k_heads * c->lin_k_dim;
	const long long vd = (long long)c->lin_v_heads * c->lin_v_dim, Hv = c->lin_v_heads;
	int n = 0;

	want(w, &n, "hidden_size", D, -1, pre, "input_layernorm.weight");
	want(w, &n, "linear_num_key_heads, linear_key_head_dim, linear_num_value_heads, linear_value_head_dim, hidden_size",
	     2 * kd + 2 * vd, D, pre, "linear_attn.in_proj_qkvz.weight");
	want(w, &n, "linear_num_value_heads, hidden_size", 2 * Hv, D, pre, "linear_attn.in_proj_ba.weight");
	want(w, &n, "linear_num_key_heads, linear_key_head_dim, linear_num_value_heads, linear_value_head_dim", 2 * kd + vd, 1,
	     pre, "linear_attn.conv1d.weight");
	w[n - 1].ndim = 3;
	w[n - 1].shape[2] = c->lin_conv;
	w[n - 1].keys = "linear_num_key_heads, linear_key_head_dim, linear_num_value_heads, linear_value_head_dim, "
	                "linear_conv_kernel_dim";
	want(w, &n, "linear_num_value_heads", Hv, -1, pre, "linear_attn.dt_bias");
	want(w, &n, "linear_num_value_heads", Hv, -1, pre, "linear_attn.A_log");
	want(w, &n, "linear_value_head_dim", c->lin_v_dim, -1, pre, "linear_attn.norm.weight");
	want(w, &n, "hidden_size, linear_num_value_heads, linear_value_head_dim", D, vd, pre, "linear_attn.out_proj.weight");
	want(w, &n, "hidden_size", D, -1, pre, "post_attention_layernorm.weight");
	return n;
}

/* Qwen3NextSparseMoeBlock's shared expert (Qwen3NextMLP of shared_expert_intermediate_size) and its gate [1, D]. */
static int shared_wants(const HfConfig *c, const char *pre, Want *w)
{
	const long long D = c->hidden_size, S = c->shared_expert_ff;
	int n = 0;

	want(w, &n, "shared_expert_intermediate_size, hidden_size", S, D, pre, "mlp.shared_expert.gate_proj.weight");
	want(w, &n, "shared_expert_intermediate_size, hidden_size", S, D, pre, "mlp.shared_expert.up_proj.weight");
	want(w, &n, "hidden_size, shared_expert_intermediate_size", D, S, pre, "mlp.shared_expert.down_proj.weight");
	want(w, &n, "hidden_size", 1, D, pre, "mlp.shared_expert_gate.weight");
	return n;
}

static int wants(const HfConfig *c, int layer, Want *w)
{
	const long long D = c->hidden_size, V = c->vocab_size, F = c->intermediate_size, P = c->max_positions;
	const long long Q = (long long)c->num_heads * c->head_dim, KV = (long long)c->num_kv_heads * c->head_dim;
	char pre[32];
	int n = 0;

	snprintf(pre, sizeof pre, c->arch == HF_GPT2 ? "h.%d." : "model.layers.%d.", layer);

	if (c->arch == HF_GPT2) {
		if (layer < 0) {
			want(w, &n, "vocab_size, n_embd", V, D, "", "wte.weight");
			want(w, &n, "n_positions, n_embd", P, D, "", "wpe.weight");
			want(w, &n, "n_embd", D, -1, "", "ln_f.weight");
			want(w, &n, "n_embd", D, -1, "", "ln_f.bias");
			return n;
		}
		/* GPT2Attention, GPT2MLP: Conv1D weights are [in, out] */
		want(w, &n, "n_embd", D, -1, pre, "ln_1.weight");
		want(w, &n, "n_embd", D, -1, pre, "ln_1.bias");
		want(w, &n, "n_embd", D, 3 * D, pre, "attn.c_attn.weight");
		want(w, &n, "n_embd", 3 * D, -1, pre, "attn.c_attn.bias");
		want(w, &n, "n_embd", D, D, pre, "attn.c_proj.weight");
		want(w, &n, "n_embd", D, -1, pre, "attn.c_proj.bias");
		want(w, &n, "n_embd", D, -1, pre, "ln_2.weight");
		want(w, &n, "n_embd", D, -1, pre, "ln_2.bias");
		want(w, &n, "n_embd, n_inner", D, F, pre, "mlp.c_fc.weight");
		want(w, &n, "n_embd, n_inner", F, -1, pre, "mlp.c_fc.bias");
		want(w, &n, "n_inner, n_embd", F, D, pre, "mlp.c_proj.weight");
		want(w, &n, "n_embd", D, -1, pre, "mlp.c_proj.bias");
		return n;
	}
	if (layer < 0) {
		want(w, &n, "vocab_size, hidden_size", V, D, "", "model.embed_tokens.weight");
		want(w, &n, "hidden_size", D, -1, "", "model.norm.weight");
		if (!c->tie_word_embeddings)
			want(w, &n, "vocab_size, hidden_size", V, D, "", "lm_head.weight");
		return n;
	}
	if (hf_deepseek(c->arch))
		return deepseek_wants(c, layer, pre, w);
	if (c->arch == HF_QWEN3_NEXT && c->linear[layer]) {
		n = qwen3next_linear_wants(c, pre, w);
		goto mlp;
	}
	/* LlamaDecoderLayer: nn.Linear weights are [out, in]; Olmo2DecoderLayer has no norm before the attention */
	if (c->arch != HF_OLMO2)
		want(w, &n, "hidden_size", D, -1, pre, "input_layernorm.weight");
	if (c->arch == HF_QWEN3_NEXT) /* Qwen3NextAttention: q_proj makes each head's query and its gate side by side */
		want(w, &n, "num_attention_heads, head_dim (twice: the query and its gate), hidden_size", 2 * Q, D, pre,
		     "self_attn.q_proj.weight");
	else
		want(w, &n, "num_attention_heads, head_dim, hidden_size", Q, D, pre, "self_attn.q_proj.weight");
	want(w, &n, "num_key_value_heads, head_dim, hidden_size", KV, D, pre, "self_attn.k_proj.weight");
	want(w, &n, "num_key_value_heads, head_dim, hidden_size", KV, D, pre, "self_attn.v_proj.weight");
	want(w, &n, "hidden_size, num_attention_heads, head_dim", D, Q, pre, "self_attn.o_proj.weight");
	if (c->qkv_bias) {
		want(w, &n, "num_attention_heads, head_dim", Q, -1, pre, "self_attn.q_proj.bias");
		want(w, &n, "num_key_value_heads, head_dim", KV, -1, pre, "self_attn.k_proj.bias");
		want(w, &n, "num_key_value_heads, head_dim", KV, -1, pre, "self_attn.v_proj.bias");
	}
	if (c->o_bias)
		want(w, &n, "hidden_size", D, -1, pre, "self_attn.o_proj.bias");
	if (c->qk_norm == 1) {
		want(w, &n, "head_dim", c->head_dim, -1, pre, "self_attn.q_norm.weight");
		want(w, &n, "head_dim", c->head_dim, -1, pre, "self_attn.k_norm.weight");
	} else if (c->qk_norm == 2) { /* Olmo2Attention: Olmo2RMSNorm(num_attention_heads * head_dim), and the keys' */
		want(w, &n, "num_attention_heads, head_dim", Q, -1, pre, "self_attn.q_norm.weight");
		want(w, &n, "num_key_value_heads, head_dim", KV, -1, pre, "self_attn.k_norm.weight");
	}
	want(w, &n, "hidden_size", D, -1, pre, "post_attention_layernorm.weight");
	if (hf_gemma(c->arch)) /* Gemma2DecoderLayer, Gemma3DecoderLayer: a norm before and after each sublayer */
		want(w, &n, "hidden_size", D, -1, pre, "pre_feedforward_layernorm.weight");
	if (c->arch == HF_OLMO2 || hf_gemma(c->arch))
		want(w, &n, "hidden_size", D, -1, pre, "post_feedforward_layernorm.weight");
	if (c->gptoss)
		return n + gptoss_wants(c, pre, w + n);
mlp:
	if (c->num_experts > 0 && c->sparse[layer]) { /* the router here, each expert's three by expert_wants */
		char name[HF_NAME_SIZE];
		want(w, &n, c->arch == HF_MIXTRAL ? "num_local_experts, hidden_size" : "num_experts, hidden_size",
		     c->num_experts, D, "", hfconfig_moe_tensor(c, layer, -1, 0, name));
		return c->arch == HF_QWEN3_NEXT ? n + shared_wants(c, pre, w + n) : n;
	}
	want(w, &n, "intermediate_size, hidden_size", F, D, pre, "mlp.gate_proj.weight");
	want(w, &n, "intermediate_size, hidden_size", F, D, pre, "mlp.up_proj.weight");
	want(w, &n, "hidden_size, intermediate_size", D, F, pre, "mlp.down_proj.weight");
	return n;
}

const char *hfconfig_moe_tensor(const HfConfig *c, int layer, int e, int k, char buf[HF_NAME_SIZE])
{
	static const char *const mixtral[] = { "w1", "w3", "w2" }, *const qwen[] = { "gate_proj", "up_proj", "down_proj" };
	const int mx = c->arch == HF_MIXTRAL;

	if (e < 0)
		snprintf(buf, HF_NAME_SIZE,
		         mx ? "model.layers.%d.block_sparse_moe.gate.weight" : "model.layers.%d.mlp.gate.weight", layer);
	else
		snprintf(buf, HF_NAME_SIZE,
		         mx ? "model.layers.%d.block_sparse_moe.experts.%d.%s.weight"
		            : "model.layers.%d.mlp.experts.%d.%s.weight",
		         layer, e, mx ? mixtral[k] : qwen[k]);
	return buf;
}

/* Expert e's three tensors of sparse layer `layer`, in the order hfconfig_moe_tensor numbers them. */
static int expert_wants(const HfConfig *c, int layer, int e, Want *w)
{
	const long long D = c->hidden_size, F = c->moe_intermediate_size;
	const int mx = c->arch == HF_MIXTRAL;
	const char *keys = mx ? "intermediate_size, hidden_size" : "moe_intermediate_size, hidden_size";
	const char *keys_t = mx ? "hidden_size, intermediate_size" : "hidden_size, moe_intermediate_size";
	char name[HF_NAME_SIZE];
	int n = 0;

	for (int k = 0; k < 3; k++)
		want(w, &n, k < 2 ? keys : keys_t, k < 2 ? F : D, k < 2 ? D : F, "", hfconfig_moe_tensor(c, layer, e, k, name));
	return n;
}

static void shape_of(int ndim, const long long *shape, char *buf, size_t size)
{
	size_t k = (size_t)snprintf(buf, size, "[");
	for (int d = 0; d < ndim && k < size; d++)
		k += (size_t)snprintf(buf + k, size - k, "%s%lld", d ? ", " : "", shape[d]);
	if (k < size)
		snprintf(buf + k, size - k, "]");
}

static char *check_one(const HfConfig *c, const HfWeights *w, const Want *x)
{
	char full[128], have[160], need[64];
	const StFile *f = NULL;
	const StTensor *t;

	snprintf(full, sizeof full, "%s%s", w->prefix, x->name);
	if ((t = hfweights_find(w, full, &f)) == NULL)
		return str_printf(_("%s: no tensor %s, which a %s model with config.json's settings computes with"), w->name,
		                  jr_quoted(full).s, c->model_type);
	if (t->ndim != x->ndim || t->shape[0] != x->shape[0] || (x->ndim >= 2 && t->shape[1] != x->shape[1]) ||
	    (x->ndim == 3 && t->shape[2] != x->shape[2])) {
		shape_of(t->ndim, t->shape, have, sizeof have);
		shape_of(x->ndim, x->shape, need, sizeof need);
		/* config.json is the one beside the weights */
		return str_printf(_("%s: tensor %s has shape %s, but config.json's sizes (%s) make it %s"), f->name,
		                  jr_quoted(full).s, have, x->keys, need);
	}
	return NULL;
}

/*
 * Qwen3-Next's layer `layer` holds the other kind's weights: config.json (layer_types, or full_attention_interval
 * without them) says one kind, the file has the other's first projection and not this kind's. NULL when not.
 */
static char *qwen3next_kind(const HfConfig *c, const HfWeights *w, int layer)
{
	static const char *const first[2] = { "self_attn.q_proj.weight", "linear_attn.in_proj_qkvz.weight" };
	char mine[HF_NAME_SIZE], other[HF_NAME_SIZE];
	const int lin = c->linear[layer];

	snprintf(mine, sizeof mine, "model.layers.%d.%s", layer, first[lin]);
	snprintf(other, sizeof other, "model.layers.%d.%s", layer, first[!lin]);
	if (c->arch != HF_QWEN3_NEXT || hfweights_find(w, mine, NULL) != NULL || hfweights_find(w, other, NULL) == NULL)
		return NULL;
	return str_printf(lin ? _("%s: config.json makes layer %d a \"linear_attention\" (Gated DeltaNet) layer (layer_types, "
	                          "or full_attention_interval without them), but the weights hold %s, a full-attention "
	                          "layer's, and no %s")
	                      : _("%s: config.json makes layer %d a \"full_attention\" layer (layer_types, or "
	                          "full_attention_interval without them), but the weights hold %s, a Gated DeltaNet "
	                          "layer's, and no %s"),
	                  w->name, layer, jr_quoted(other).s, jr_quoted(mine).s);
}

int hfconfig_check_shapes(const HfConfig *c, HfWeights *w, char **err)
{
	Want list[32];

	*err = NULL;
	w->prefix = "";
	if (c->arch == HF_GPT2 && hfweights_find(w, "wte.weight", NULL) == NULL &&
	    hfweights_find(w, "transformer.wte.weight", NULL) != NULL)
		w->prefix = "transformer."; /* saved from GPT2LMHeadModel */
	if ((*err = gptoss_quantised(c, w)) != NULL)
		return -1;
	for (int layer = -1; layer < c->num_layers && *err == NULL; layer++) {
		int n = layer >= 0 && (*err = qwen3next_kind(c, w, layer)) != NULL ? 0 : wants(c, layer, list);
		for (int i = 0; i < n && *err == NULL; i++)
			*err = check_one(c, w, &list[i]);
		for (int e = 0; layer >= 0 && !c->gptoss && c->num_experts > 0 && c->sparse[layer] && e < c->num_experts && *err == NULL;
		     e++) {
			n = expert_wants(c, layer, e, list);
			for (int i = 0; i < n && *err == NULL; i++)
				*err = check_one(c, w, &list[i]);
		}
	}
	if (*err == NULL) {
		/* a layer past num_hidden_layers means the config says less than the file holds */
		char name[128];
		if (c->arch == HF_GPT2)
			snprintf(name, sizeof name, "%sh.%d.ln_1.weight", w->prefix, c->num_layers);
		else
			snprintf(name, sizeof name, "model.layers.%d.%s.weight", c->num_layers,
			         c->arch == HF_OLMO2 ? "post_attention_layernorm" : "input_layernorm");
		if (hfweights_find(w, name, NULL) != NULL)
			*err = str_printf(_("%s: tensor %s is there, but config.json's %s is %d"), w->name, jr_quoted(name).s,
			                  hfconfig_layers_key(c->arch), c->num_layers);
	}
	return *err ? -1 : 0;
}
