#!/usr/bin/python3
"""Small DeepSeek-V3 model folders (multi-head latent attention, dense and
mixture-of-experts layers; issue 24's loader) and their reference numbers, in the layout of
make_models.py (whose folder writer, safetensors writer, random weights and
reference file this script reuses):

    OPENBLAS_CORETYPE= /usr/bin/python3 tests/models/make_deepseek_models.py     # from the repository root

  tests/models/NAME/config.json, model.safetensors   as save_pretrained writes them
  tests/models/NAME.ref.json                         every stage of every layer on a few prompts
  tests/models/bad_deepseek/                         configs refused at their keys, and expected.txt

No `transformers` package is installed here: the forward pass below is
written from transformers' models/deepseek_v3/modeling_deepseek_v3.py and
configuration_deepseek_v3.py, in float64:

  DeepseekV3Config: vocab_size 129280, hidden_size 7168, intermediate_size 18432,
      num_hidden_layers 61, num_attention_heads 128, kv_lora_rank 512, q_lora_rank 1536,
      qk_rope_head_dim 64, v_head_dim 128, qk_nope_head_dim 128, first_k_dense_replace 3,
      hidden_act "silu", rms_norm_eps 1e-6, rope_theta 10000, rope_interleave True,
      attention_bias False, tie_word_embeddings False                 -> resolved()
  DeepseekV3RMSNorm(hidden_size, eps=1e-6): variance = x.pow(2).mean(-1, keepdim=True);
      x * torch.rsqrt(variance + eps); self.weight * x
  DeepseekV3Attention.__init__: q_a_layernorm = DeepseekV3RMSNorm(q_lora_rank) and
      kv_a_layernorm = DeepseekV3RMSNorm(kv_lora_rank): the default eps 1e-6, not
      rms_norm_eps (the folders' rms_norm_eps is 1e-5, so the two differ)
  DeepseekV3Attention.forward:
      q_states = self.q_proj(x)  or  self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
      q_pass, q_rot = torch.split(q_states, [qk_nope_head_dim, qk_rope_head_dim], dim=-1)
      compressed_kv = self.kv_a_proj_with_mqa(x)
      k_pass, k_rot = torch.split(compressed_kv, [kv_lora_rank, qk_rope_head_dim], dim=-1)
      k_pass = self.kv_b_proj(self.kv_a_layernorm(k_pass)).view(key_shape).transpose(1, 2)
      k_pass, value_states = torch.split(k_pass, [qk_nope_head_dim, v_head_dim], dim=-1)
      k_rot = k_rot.view(batch_size, 1, seq_length, qk_rope_head_dim)
      q_rot, k_rot = apply_rotary_pos_emb_interleave(q_rot, k_rot, cos, sin)
      k_rot = k_rot.expand(*k_pass.shape[:-1], -1)
      query_states = torch.cat((q_pass, q_rot), dim=-1); key_states = torch.cat((k_pass, k_rot), dim=-1)
      eager_attention_forward (scaling = qk_head_dim ** -0.5), o_proj
  apply_rotary_pos_emb_interleave: q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d),
      then (q * cos) + (rotate_half(q) * sin)
  DeepseekV3DecoderLayer.forward: input_layernorm, self_attn, residual; post_attention_layernorm,
      mlp (DeepseekV3MLP: down_proj(act_fn(gate_proj(x)) * up_proj(x)) while layer_idx <
      first_k_dense_replace, else DeepseekV3MoE), residual
  DeepseekV3Config (MoE): n_routed_experts 256, num_experts_per_tok 8, n_group 8, topk_group 4,
      norm_topk_prob True, routed_scaling_factor 2.5, moe_intermediate_size 2048, n_shared_experts 1;
      the checkpoints' own config.json adds scoring_func "sigmoid", topk_method "noaux_tc",
      moe_layer_freq 1, and their modeling_deepseek.py makes layer i a DeepseekV3MoE when
      n_routed_experts is not None and i >= first_k_dense_replace and i % moe_layer_freq == 0
      (transformers tests the first two only: the same layers with moe_layer_freq 1)  -> resolved()
  DeepseekV3TopkRouter.forward (transformers at commit 00b676f8f0489b88652a31d70751cc540dd06305):
      router_logits = F.linear(hidden_states, self.weight); scores = router_logits.sigmoid()
      topk_indices = self.get_topk_indices(scores); topk_weights = scores.gather(1, topk_indices)
      if self.norm_topk_prob: topk_weights /= topk_weights.sum(dim=-1, keepdim=True) + 1e-20
      topk_weights = topk_weights * self.routed_scaling_factor
  DeepseekV3TopkRouter.get_topk_indices: scores_for_choice = scores + e_score_correction_bias;
      group_scores = scores_for_choice.view(-1, n_group, E // n_group).topk(2, dim=-1)[0].sum(dim=-1);
      the topk_group groups kept (group_mask), the others' scores_for_choice masked_fill 0.0;
      topk_indices = torch.topk(scores_for_choice, k=top_k, dim=-1, sorted=False)[1]
  DeepseekV3MoE.moe: expert_mask = one_hot(topk_indices).permute(2, 0, 1); per expert
      token_indices, weight_indices = torch.where(mask); expert(hidden_states[token_indices]) *
      topk_weights[token_indices, weight_indices] index_add_'ed into final_hidden_states
  DeepseekV3MoE.forward: + self.shared_experts(residuals) (DeepseekV3MLP of
      moe_intermediate_size * n_shared_experts, no gate)                  -> deepseek_mlp()
  DeepseekV3Model.forward: embed_tokens, the layers, self.norm; DeepseekV3ForCausalLM: lm_head
                                                                -> forward_deepseek()

The router in float64 (transformers' is float32). The MoE folder's
e_score_correction_bias is random (in a checkpoint it is what training left),
so the choice differs from the scores' own order; near ties at the
topk_group-th group or the top_k-th expert abort the script (none are).

A second forward pass (second_deepseek) writes the norms as row sums, the
router's choice by sorting in Python, the
interleaved RoPE as complex numbers (pair (2i, 2i+1) is z = a + ib turned by
e^(i·t·θ^(−2i/d)), the real parts written first) and the scores in the absorbed
form (q_nope·W^Kᵀ against c_KV): it must agree to 1e-12 before anything is written.
"""

import cmath
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "golden"))
import make_models as mm                      # noqa: E402
import make_reference_ropescale as rs         # noqa: E402  (transformers' _compute_yarn_parameters)

torch.set_default_dtype(torch.float64)

BASE = {"architectures": ["DeepseekV3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 0, "eos_token_id": 1, "hidden_act": "silu", "hidden_size": 16, "initializer_range": 0.02,
        "intermediate_size": 24, "max_position_embeddings": 64, "model_type": "deepseek_v3",
        "moe_intermediate_size": 8, "n_routed_experts": 4, "n_shared_experts": 1, "num_experts_per_tok": 2,
        "num_attention_heads": 2, "num_key_value_heads": 2, "rms_norm_eps": 1e-05, "rope_interleave": True,
        "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "float32",
        "transformers_version": "4.57.0", "use_cache": True, "vocab_size": 300}

MODELS = [
    {
        "name": "deepseek_v3_qlora", "dtype": "F32", "seed": 2411,
        "why": "DeepSeek-V3's dense layers: MLA with q_lora_rank 6, kv_lora_rank 4, d_nope 4, d_rope 4, d_v 3, "
               "2 heads, 2 layers (first_k_dense_replace 2), rms_norm_eps 1e-5 beside the latent norms' 1e-6",
        "config": dict(BASE, num_hidden_layers=2, first_k_dense_replace=2, q_lora_rank=6, kv_lora_rank=4,
                       qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=3, head_dim=4),
        "prompts": [[7], [7, 20, 30, 40, 50, 60, 70, 299]],
    },
    {
        "name": "deepseek_v3_noqlora_bf16", "dtype": "BF16", "seed": 2412,
        "why": "DeepSeek-V2-Lite's query (q_lora_rank null: q_proj), 3 heads, d_rope 2, d_nope 2, d_v 4, "
               "kv_lora_rank 5, 3 layers, rope_theta 500, BF16 weights",
        "config": dict(BASE, num_hidden_layers=3, first_k_dense_replace=5, q_lora_rank=None, kv_lora_rank=5,
                       qk_nope_head_dim=2, qk_rope_head_dim=2, v_head_dim=4, head_dim=2, num_attention_heads=3,
                       num_key_value_heads=3, rope_theta=500.0, torch_dtype="bfloat16"),
        "prompts": [[3, 9], [5, 17, 242, 3, 98, 17]],
    },
    {
        "name": "deepseek_v3_yarn", "dtype": "F32", "seed": 2413,
        "why": "DeepSeek-V3's YaRN: factor 4 over original_max_position_embeddings 16 (max_position_embeddings 64), "
               "mscale 1 and mscale_all_dim 0.8: q_pe and k_pe's cos and sin times get_mscale(4, 1)/get_mscale(4, 0.8), "
               "the scores' scaling times get_mscale(4, 0.8)^2; d_rope 8 so that the ramp has pairs on both sides",
        "config": dict(BASE, num_hidden_layers=2, first_k_dense_replace=3, q_lora_rank=6, kv_lora_rank=4,
                       qk_nope_head_dim=2, qk_rope_head_dim=8, v_head_dim=3, head_dim=8, rope_theta=10000.0,
                       rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16,
                                     "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 0.8}),
        "prompts": [[11, 12], [7, 20, 30, 40, 50, 60, 70, 80, 90, 299]],
    },
    {
        "name": "deepseek_v3_moe", "dtype": "F32", "seed": 2414,
        "why": "DeepSeek-V3's mixture of experts: layer 0 dense (first_k_dense_replace 1), layers 1 and 2 a "
               "DeepseekV3MoE of 8 routed experts in 4 groups, topk_group 2, top 3, norm_topk_prob, "
               "routed_scaling_factor 2.5, a random e_score_correction_bias, 2 shared experts (one SwiGLU of 2 x 6)",
        "config": dict(BASE, num_hidden_layers=3, first_k_dense_replace=1, q_lora_rank=6, kv_lora_rank=4,
                       qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=3, head_dim=4, n_routed_experts=8,
                       num_experts_per_tok=3, n_group=4, topk_group=2, norm_topk_prob=True,
                       routed_scaling_factor=2.5, moe_intermediate_size=6, n_shared_experts=2,
                       scoring_func="sigmoid", topk_method="noaux_tc", moe_layer_freq=1),
        "prompts": [[7, 20], [7, 20, 30, 40, 50, 60, 70, 299]],
    },
    {
        "name": "deepseek_v3_moe_freq2_bf16", "dtype": "BF16", "seed": 2415,
        "why": "moe_layer_freq 2 (DeepSeek's modeling_deepseek.py: layers 0 and 2 sparse, layer 1 dense, "
               "first_k_dense_replace 0), 6 experts in 3 groups, topk_group 1, top 2 without norm_topk_prob, "
               "routed_scaling_factor 1.5, one shared expert, q_lora_rank null, BF16 weights",
        "config": dict(BASE, num_hidden_layers=3, first_k_dense_replace=0, q_lora_rank=None, kv_lora_rank=5,
                       qk_nope_head_dim=2, qk_rope_head_dim=2, v_head_dim=4, head_dim=2, n_routed_experts=6,
                       num_experts_per_tok=2, n_group=3, topk_group=1, norm_topk_prob=False,
                       routed_scaling_factor=1.5, moe_intermediate_size=5, n_shared_experts=1, moe_layer_freq=2,
                       torch_dtype="bfloat16"),
        "prompts": [[3, 9], [5, 17, 242, 3, 98, 17]],
    },
]


def resolved(cfg):
    """DeepseekV3Config with its defaults applied."""
    base = dict(vocab_size=129280, hidden_size=7168, intermediate_size=18432, num_hidden_layers=61,
                num_attention_heads=128, max_position_embeddings=4096, bos_token_id=0, eos_token_id=1,
                kv_lora_rank=512, q_lora_rank=1536, qk_rope_head_dim=64, v_head_dim=128, qk_nope_head_dim=128)
    r = {k: cfg.get(k, v) for k, v in base.items()}
    r["norm_eps"] = cfg.get("rms_norm_eps", 1e-6)
    r["latent_eps"] = 1e-6                     # DeepseekV3RMSNorm(q_lora_rank), (kv_lora_rank): the default
    r["rope_theta"] = float(cfg.get("rope_theta", 10000.0))
    r["tie_word_embeddings"] = cfg.get("tie_word_embeddings", False)
    moe = dict(n_routed_experts=256, num_experts_per_tok=8, n_group=8, topk_group=4, norm_topk_prob=True,
               routed_scaling_factor=2.5, moe_intermediate_size=2048, n_shared_experts=1, first_k_dense_replace=3,
               moe_layer_freq=1)
    r.update({k: cfg.get(k, v) for k, v in moe.items()})
    E, k0, f = r["n_routed_experts"], r["first_k_dense_replace"], r["moe_layer_freq"]
    r["sparse"] = [E is not None and i >= k0 and i % f == 0 for i in range(r["num_hidden_layers"])]
    sc = cfg.get("rope_scaling")
    r["rope"] = {"base": r["rope_theta"]}
    r["mscale2"] = 1.0
    if sc:
        r["rope"]["scaling"] = dict({k: v for k, v in sc.items() if k not in ("type", "rope_type")},
                                    type=sc.get("rope_type", sc.get("type")))
        # DeepseekV3Attention.__init__: mscale_all_dim = rope_scaling.get("mscale_all_dim", 0); if it is,
        # self.scaling = self.scaling * mscale * mscale, mscale = yarn_get_mscale(rope_scaling["factor"], mscale_all_dim)
        if sc.get("mscale_all_dim"):
            ms = 0.1 * sc["mscale_all_dim"] * math.log(sc["factor"]) + 1.0 if sc["factor"] > 1 else 1.0
            r["mscale2"] = ms * ms
    return r


def tensor_list(m, r):
    """DeepseekV3ForCausalLM's tensors, every layer a DeepseekV3MLP."""
    D, V, L, FF = r["hidden_size"], r["vocab_size"], r["num_hidden_layers"], r["intermediate_size"]
    H, c, dn, dr, dv, q = (r["num_attention_heads"], r["kv_lora_rank"], r["qk_nope_head_dim"], r["qk_rope_head_dim"],
                           r["v_head_dim"], r["q_lora_rank"])
    out = [("model.embed_tokens.weight", (V, D), "emb")]
    for i in range(L):
        h = "model.layers.%d." % i
        out.append((h + "input_layernorm.weight", (D,), "ln_w"))
        if q:
            out += [(h + "self_attn.q_a_proj.weight", (q, D), "qk"), (h + "self_attn.q_a_layernorm.weight", (q,), "ln_w"),
                    (h + "self_attn.q_b_proj.weight", (H * (dn + dr), q), "w")]
        else:
            out.append((h + "self_attn.q_proj.weight", (H * (dn + dr), D), "qk"))
        out += [(h + "self_attn.kv_a_proj_with_mqa.weight", (c + dr, D), "qk"),
                (h + "self_attn.kv_a_layernorm.weight", (c,), "ln_w"),
                (h + "self_attn.kv_b_proj.weight", (H * (dn + dv), c), "w"),
                (h + "self_attn.o_proj.weight", (D, H * dv), "w"),
                (h + "post_attention_layernorm.weight", (D,), "ln_w")]
        if r["sparse"][i]:                                           # DeepseekV3MoE's gate, experts, shared_experts
            E, Fe, S = r["n_routed_experts"], r["moe_intermediate_size"], r["moe_intermediate_size"] * r["n_shared_experts"]
            out += [(h + "mlp.gate.weight", (E, D), "qk"), (h + "mlp.gate.e_score_correction_bias", (E,), "b")]
            for e in range(E):
                out += [(h + "mlp.experts.%d.%s.weight" % (e, k), shape, "w")
                        for k, shape in (("gate_proj", (Fe, D)), ("up_proj", (Fe, D)), ("down_proj", (D, Fe)))]
            out += [(h + "mlp.shared_experts.gate_proj.weight", (S, D), "w"),
                    (h + "mlp.shared_experts.up_proj.weight", (S, D), "w"),
                    (h + "mlp.shared_experts.down_proj.weight", (D, S), "w")]
            continue
        out += [(h + "mlp.gate_proj.weight", (FF, D), "w"), (h + "mlp.up_proj.weight", (FF, D), "w"),
                (h + "mlp.down_proj.weight", (D, FF), "w")]
    out.append(("model.norm.weight", (D,), "ln_w"))
    if not r["tie_word_embeddings"]:
        out.append(("lm_head.weight", (V, D), "emb"))
    return out


def deepseek_mlp(m, r, W, i, x, lay):
    """DeepseekV3MLP, or on a sparse layer DeepseekV3MoE.forward, on layer i's rows x; its stages into lay."""
    if not r["sparse"][i]:
        return mm.llama_mlp(m, r, W, i, x, lay)          # DeepseekV3MLP.forward is LlamaMLP's: down(silu(gate)·up)
    T, h = mm.T, "model.layers.%d.mlp." % i
    n, D = x.shape
    E, k, G, TG = r["n_routed_experts"], r["num_experts_per_tok"], r["n_group"], r["topk_group"]

    def expert(pre, rows):                                # DeepseekV3MLP.forward
        act = F.silu(F.linear(rows, T(W, pre + "gate_proj.weight"))) * F.linear(rows, T(W, pre + "up_proj.weight"))
        return act, F.linear(act, T(W, pre + "down_proj.weight"))

    # DeepseekV3TopkRouter.forward
    router_logits = F.linear(x, T(W, h + "gate.weight"))
    scores = router_logits.sigmoid()
    # DeepseekV3TopkRouter.get_topk_indices
    scores_for_choice = scores.view(-1, E) + T(W, h + "gate.e_score_correction_bias").unsqueeze(0)
    group_scores = scores_for_choice.view(-1, G, E // G).topk(2, dim=-1)[0].sum(dim=-1)
    group_idx = torch.topk(group_scores, k=TG, dim=-1, sorted=False)[1]
    group_mask = torch.zeros_like(group_scores)
    group_mask.scatter_(1, group_idx, 1)
    score_mask = group_mask.unsqueeze(-1).expand(-1, G, E // G).reshape(-1, E)
    masked = scores_for_choice.masked_fill(~score_mask.bool(), 0.0)
    topk_indices = torch.topk(masked, k=k, dim=-1, sorted=False)[1]
    topk_weights = scores.gather(1, topk_indices)
    if r["norm_topk_prob"]:
        topk_weights = topk_weights / (topk_weights.sum(dim=-1, keepdim=True) + 1e-20)
    topk_weights = topk_weights * r["routed_scaling_factor"]
    # DeepseekV3MoE.moe
    final = torch.zeros_like(x)
    expert_mask = torch.nn.functional.one_hot(topk_indices, num_classes=E).permute(2, 0, 1)
    Fe = r["moe_intermediate_size"]
    acts = [[None] * (E * Fe) for _ in range(n)]
    outs = [[None] * (E * D) for _ in range(n)]
    for e in range(E):
        token_indices, weight_indices = torch.where(expert_mask[e])
        if token_indices.numel() == 0:
            continue
        act, y = expert(h + "experts.%d." % e, x[token_indices])
        final.index_add_(0, token_indices, y * topk_weights[token_indices, weight_indices].unsqueeze(-1))
        for row, t in enumerate(token_indices.tolist()):
            acts[t][e * Fe:(e + 1) * Fe] = act[row].tolist()
            outs[t][e * D:(e + 1) * D] = y[row].tolist()
    # DeepseekV3MoE.forward: + self.shared_experts(residuals)
    _, shared = expert(h + "shared_experts.", x)
    weights = [[None] * E for _ in range(n)]
    choice = [[None] * E for _ in range(n)]             # attnviz writes a dropped group's experts as null
    for t in range(n):
        for j in range(k):
            weights[t][int(topk_indices[t, j])] = float(topk_weights[t, j])
        for e in range(E):
            if score_mask[t, e]:
                choice[t][e] = float(scores_for_choice[t, e])
    lay.update(router_logits=mm.mat(router_logits), router_scores=mm.mat(scores), group_scores=mm.mat(group_scores),
               scores_for_choice=choice, moe_weights=weights, expert_act=acts, expert_out=outs,
               shared_out=mm.mat(shared))
    return final + shared


def moe_second(r, W, i, x, lin):
    """DeepseekV3MoE again, token by token in Python: sigmoid by math.exp, groups and experts chosen by sorting
    (near ties refused), each chosen expert and the shared one with silu written out."""
    h = "model.layers.%d.mlp." % i
    E, k, G, TG = r["n_routed_experts"], r["num_experts_per_tok"], r["n_group"], r["topk_group"]
    size = E // G
    bias = mm.T(W, h + "gate.e_score_correction_bias").tolist()

    def swiglu(xt, pre):
        g, u = lin(xt, pre + "gate_proj"), lin(xt, pre + "up_proj")
        act = torch.tensor([[v / (1 + math.exp(-v)) for v in g[0].tolist()]]) * u
        return lin(act, pre + "down_proj")

    rows = []
    for t in range(x.shape[0]):
        xt = x[t:t + 1]
        s = [1 / (1 + math.exp(-v)) for v in lin(xt, h + "gate")[0].tolist()]
        c = [a + b for a, b in zip(s, bias)]
        gs = [sum(sorted(c[g * size:(g + 1) * size], reverse=True)[:2]) for g in range(G)]
        order = sorted(range(G), key=lambda g: -gs[g])
        if TG < G and gs[order[TG - 1]] - gs[order[TG]] < 1e-9:
            sys.exit("layer %d row %d: a near tie at the topk_group-th group" % (i, t))
        c = [c[e] if e // size in order[:TG] else 0.0 for e in range(E)]
        ce = sorted(range(E), key=lambda e: -c[e])
        if c[ce[k - 1]] - c[ce[k]] < 1e-9:
            sys.exit("layer %d row %d: a near tie at the top_k-th expert" % (i, t))
        chosen = ce[:k]
        tot = sum(s[e] for e in chosen) + 1e-20 if r["norm_topk_prob"] else 1.0
        acc = swiglu(xt, h + "shared_experts.")
        for e in chosen:
            acc = acc + (s[e] / tot * r["routed_scaling_factor"]) * swiglu(xt, h + "experts.%d." % e)
        rows.append(acc)
    return torch.cat(rows, 0)


def interleave_rope(x, cos, sin):
    """apply_rotary_pos_emb_interleave on (h, n, d)."""
    h, s, d = x.shape
    x = x.view(h, s, d // 2, 2).transpose(3, 2).reshape(h, s, d)
    return (x * cos) + (mm.rotate_half(x) * sin)


def forward_deepseek(m, r, W, ids):
    """DeepseekV3ForCausalLM on one sequence, every stage under the names of attnviz's --dump of a model."""
    T, mat, rms_norm = mm.T, mm.mat, mm.rms_norm
    n = len(ids)
    H, c, dn, dr, dv, q_lora = (r["num_attention_heads"], r["kv_lora_rank"], r["qk_nope_head_dim"],
                                r["qk_rope_head_dim"], r["v_head_dim"], r["q_lora_rank"])
    eps, leps = r["norm_eps"], r["latent_eps"]
    scaling = (dn + dr) ** -0.5 * r["mscale2"]
    hidden = T(W, "model.embed_tokens.weight")[torch.tensor(ids)]
    rec = {"ids": ids, "X": mat(hidden), "layers": []}
    inv, af, _ = rs.rope_params(r["rope"], dr, n)         # DeepseekV3RotaryEmbedding: inv_freq, attention_scaling
    freqs = torch.outer(torch.arange(n, dtype=torch.float64), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos() * af, emb.sin() * af
    mask = torch.triu(torch.full((n, n), torch.finfo(torch.float64).min), diagonal=1)

    def linear(x, name):
        return F.linear(x, T(W, name + ".weight"))

    for i in range(r["num_hidden_layers"]):
        h = "model.layers.%d." % i
        lay, lat = {}, {}
        residual = hidden
        x = rms_norm(hidden, T(W, h + "input_layernorm.weight"), eps)     # self.input_layernorm
        lay["norm1"] = mat(x)
        if q_lora:
            cq = rms_norm(linear(x, h + "self_attn.q_a_proj"), T(W, h + "self_attn.q_a_layernorm.weight"), leps)
            lat["c_Q"] = mat(cq)
            q = linear(cq, h + "self_attn.q_b_proj")
        else:
            q = linear(x, h + "self_attn.q_proj")
        q = q.view(n, H, dn + dr).transpose(0, 1)
        q_pass, q_rot = torch.split(q, [dn, dr], dim=-1)
        ckv = linear(x, h + "self_attn.kv_a_proj_with_mqa")
        k_pass, k_rot = torch.split(ckv, [c, dr], dim=-1)
        c_kv = rms_norm(k_pass, T(W, h + "self_attn.kv_a_layernorm.weight"), leps)
        kv = linear(c_kv, h + "self_attn.kv_b_proj").view(n, H, dn + dv).transpose(0, 1)
        k_pass, v = torch.split(kv, [dn, dv], dim=-1)
        lat["k_pe"] = mat(k_rot)
        k_rot = k_rot.view(1, n, dr)
        q_rot, k_rot = interleave_rope(q_rot, cos, sin), interleave_rope(k_rot, cos, sin)
        k_rot_h = k_rot.expand(H, n, dr)
        query = torch.cat((q_pass, q_rot), dim=-1)
        key = torch.cat((k_pass, k_rot_h), dim=-1)
        scores = torch.matmul(query, key.transpose(1, 2))
        w = F.softmax(scores * scaling + mask, dim=-1)
        out = torch.matmul(w, v)
        concat = out.transpose(0, 1).reshape(n, -1)
        a = linear(concat, h + "self_attn.o_proj")
        lat.update(c_KV=mat(c_kv), k_pe_rot=mat(k_rot[0]), q_nope=mat(q_pass.transpose(0, 1).reshape(n, -1)),
                   q_pe=mat(q_rot.transpose(0, 1).reshape(n, -1)))
        att = {"Q": mat(query.transpose(0, 1).reshape(n, -1)), "K": mat(key.transpose(0, 1).reshape(n, -1)),
               "V": mat(v.transpose(0, 1).reshape(n, -1)),
               "heads": [{"scores": mat(scores[j]), "weights": mat(w[j]), "output": mat(out[j])} for j in range(H)],
               "concat": mat(concat), "output": mat(a), "mla": lat}
        lay.update(h=H, d_k=dn + dr, d_v=dv, scale_factor=scaling, attn=att)
        hidden = residual + a
        lay["residual1"] = mat(hidden)
        residual = hidden
        x = rms_norm(hidden, T(W, h + "post_attention_layernorm.weight"), eps)
        lay["norm2"] = mat(x)
        f = deepseek_mlp(m, r, W, i, x, lay)
        lay["ffn_out"] = mat(f)
        hidden = residual + f
        lay["residual2"] = lay["output"] = mat(hidden)
        rec["layers"].append(lay)
    final = rms_norm(hidden, T(W, "model.norm.weight"), eps)
    rec.update(final_norm=mat(final), logits=mat(F.linear(final, T(W, "lm_head.weight"))))
    return rec


def second_deepseek(m, r, W, ids):
    """Norms as row sums, RoPE as complex numbers, the scores in the absorbed form."""
    T = mm.T
    n = len(ids)
    H, c, dn, dr, dv, q_lora = (r["num_attention_heads"], r["kv_lora_rank"], r["qk_nope_head_dim"],
                                r["qk_rope_head_dim"], r["v_head_dim"], r["q_lora_rank"])

    def norm(x, w, eps):
        return torch.tensor([[e / math.sqrt(sum(z * z for z in row) / len(row) + eps) * float(w[j])
                              for j, e in enumerate(row)] for row in x.tolist()])

    def lin(x, name):
        return x @ T(W, name + ".weight").t()

    inv, af, _ = rs.rope_params(r["rope"], dr, n)

    def turn(vec, t):
        out = [0.0] * dr
        for p in range(dr // 2):
            z = complex(vec[2 * p], vec[2 * p + 1]) * cmath.exp(1j * t * float(inv[p])) * af
            out[p], out[dr // 2 + p] = z.real, z.imag
        return out

    hidden = torch.stack([T(W, "model.embed_tokens.weight")[t] for t in ids])
    got = {"layers": []}
    for i in range(r["num_hidden_layers"]):
        h = "model.layers.%d." % i
        x = norm(hidden, T(W, h + "input_layernorm.weight"), r["norm_eps"])
        if q_lora:
            q = lin(norm(lin(x, h + "self_attn.q_a_proj"), T(W, h + "self_attn.q_a_layernorm.weight"), 1e-6),
                    h + "self_attn.q_b_proj")
        else:
            q = lin(x, h + "self_attn.q_proj")
        ckv = lin(x, h + "self_attn.kv_a_proj_with_mqa")
        c_kv = norm(ckv[:, :c], T(W, h + "self_attn.kv_a_layernorm.weight"), 1e-6)
        k_pe = [turn(ckv[t, c:].tolist(), t) for t in range(n)]
        Wkvb = T(W, h + "self_attn.kv_b_proj.weight")                 # [H·(dn + dv), c]
        scores, concat = [], torch.zeros(n, H * dv)
        for j in range(H):
            WK = Wkvb[j * (dn + dv):j * (dn + dv) + dn]                 # dn × c
            WV = Wkvb[j * (dn + dv) + dn:(j + 1) * (dn + dv)]           # dv × c
            s = torch.zeros(n, n)
            for t in range(n):
                qh = q[t, j * (dn + dr):(j + 1) * (dn + dr)]
                q_tilde = qh[:dn] @ WK                                  # absorbed: q_nope·W^K
                q_pe = turn(qh[dn:].tolist(), t)
                row = [float(q_tilde @ c_kv[u]) + sum(a * b for a, b in zip(q_pe, k_pe[u])) for u in range(t + 1)]
                s[t, :t + 1] = torch.tensor(row)
                mx = max(row)
                e = [math.exp((z - mx) / math.sqrt(dn + dr) * r["mscale2"]) for z in row]
                latent = sum(e[u] / sum(e) * c_kv[u] for u in range(t + 1))
                concat[t, j * dv:(j + 1) * dv] = WV @ latent
            scores.append(s)
        r1 = hidden + lin(concat, h + "self_attn.o_proj")
        x = norm(r1, T(W, h + "post_attention_layernorm.weight"), r["norm_eps"])
        if r["sparse"][i]:
            hidden = r1 + moe_second(r, W, i, x, lin)
        else:
            gate, up = lin(x, h + "mlp.gate_proj"), lin(x, h + "mlp.up_proj")
            act = torch.tensor([[z / (1 + math.exp(-z)) for z in row] for row in gate.tolist()]) * up
            hidden = r1 + lin(act, h + "mlp.down_proj")
        got["layers"].append({"scores": scores, "residual1": r1, "output": hidden})
    got["logits"] = norm(hidden, T(W, "model.norm.weight"), r["norm_eps"]) @ T(W, "lm_head.weight").t()
    return got


def cross_check(m, r, W, rec):
    got = second_deepseek(m, r, W, rec["ids"])
    name = "%s %s" % (m["name"], rec["ids"])
    for i, (g, lay) in enumerate(zip(got["layers"], rec["layers"])):
        for j, hd in enumerate(lay["attn"]["heads"]):
            s = torch.tensor(hd["scores"]).tril()
            mm.agree("%s layer %d head %d absorbed scores" % (name, i, j), g["scores"][j], s)
        mm.agree("%s layer %d residual1" % (name, i), g["residual1"], lay["residual1"])
        mm.agree("%s layer %d output" % (name, i), g["output"], lay["output"])
    mm.agree(name + " logits", got["logits"], rec["logits"])


# a sparse layer the first model's 4 experts can route: 2 groups of 2, one kept, top 2
MOE_OK = {"first_k_dense_replace": 1, "n_group": 2, "topk_group": 1}


def bad_folders():
    """tests/models/bad_deepseek/NAME/config.json (the first model's, edited; its weights where the shapes matter)
    and expected.txt: each folder and the words its refusal must say (t_models.sh)."""
    import json
    import shutil
    src = os.path.join(HERE, MODELS[0]["name"])
    top = os.path.join(HERE, "bad_deepseek")
    if os.path.isdir(top):
        shutil.rmtree(top)
    cases = [
        ("n_group", {"first_k_dense_replace": 1},
         "config.json: n_group: expected a number of groups that divides the 4 experts into groups of at least 2"),
        ("scoring", dict(MOE_OK, scoring_func="softmax"),
         "config.json: scoring_func: \"softmax\": attnviz computes DeepSeek-V3's router with scoring_func \"sigmoid\" only"),
        ("topk_method", dict(MOE_OK, topk_method="greedy"),
         "config.json: topk_method: \"greedy\": attnviz computes DeepSeek-V3's router with topk_method \"noaux_tc\" only"),
        ("topk_group", dict(MOE_OK, topk_group=3), "config.json: topk_group: expected a whole number from 1 to 2 (n_group)"),
        ("top_k", dict(MOE_OK, num_experts_per_tok=3),
         "config.json: num_experts_per_tok: top_k 3 is more than the 2 experts of the topk_group groups kept"),
        ("scaling", dict(MOE_OK, routed_scaling_factor=0), "config.json: routed_scaling_factor:"),
        ("freq", dict(MOE_OK, moe_layer_freq=0), "config.json: moe_layer_freq: expected a layer count from 1 to 4096"),
        ("shared", dict(MOE_OK, n_shared_experts=-1), "config.json: n_shared_experts: expected a size from 1 to 4096"),
        ("interleave", {"rope_interleave": False}, "config.json: rope_interleave: false: attnviz turns DeepSeek's"),
        ("qlora_type", {"q_lora_rank": "6"}, "config.json: q_lora_rank: expected a size from 1 to 65536"),
        ("rope_odd", {"qk_rope_head_dim": 3}, "config.json: qk_rope_head_dim: RoPE turns pairs of numbers"),
        ("linear", {"rope_scaling": {"rope_type": "linear", "factor": 4.0}},
         "config.json: rope_scaling: attnviz turns DeepSeek's q_pe and k_pe with plain RoPE or YaRN only"),
        ("bias", {"attention_bias": True}, "config.json: attention_bias: true: attnviz computes DeepSeek's latent"),
        ("shapes", {"kv_lora_rank": 5}, "model.safetensors: tensor \"model.layers.0.self_attn.kv_a_proj_with_\u2026\" has shape "
         "[8, 16], but config.json's sizes (kv_lora_rank + qk_rope_head_dim, hidden_size) make it [9, 16]"),
    ]
    # the MoE folder's weights under a config that makes other shapes, or without a tensor it computes with
    moe = [m for m in MODELS if m["name"] == "deepseek_v3_moe"][0]
    moe_cases = [
        ("moe_router", {"n_routed_experts": 4, "n_group": 2, "topk_group": 1, "num_experts_per_tok": 2}, None,
         "model.safetensors: tensor \"model.layers.1.mlp.gate.weight\" has shape [8, 16], but "
         "config.json's sizes (n_routed_experts, hidden_size) make it [4, 16]"),
        ("moe_expert", {}, "model.layers.1.mlp.experts.7.down_proj.weight",
         "model.safetensors: no tensor \"model.layers.1.mlp.experts.7.down_proj.w…\", which a deepseek_v3 model"),
        ("moe_shared", {"n_shared_experts": 1}, None,
         "has shape [12, 16], but config.json's sizes (moe_intermediate_size · n_shared_experts, hidden_size) make it [6, 16]"),
        ("moe_bias", {}, "model.layers.2.mlp.gate.e_score_correction_bias",
         "model.safetensors: no tensor \"model.layers.2.mlp.gate.e_score_correcti…\", which a deepseek_v3 model"),
    ]
    lines = ["# tests/models/bad_deepseek (make_deepseek_models.py): FOLDER<TAB>words its refusal says"]
    for name, edit, words in cases + [(n, e, w) for n, e, _, w in moe_cases]:
        d = os.path.join(top, name)
        os.makedirs(d)
        cfg = dict((moe if name.startswith("moe_") else MODELS[0])["config"], **edit)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2, sort_keys=True)
            f.write("\n")
        if name == "shapes" or name.startswith("moe_"):
            shutil.copy(os.path.join(HERE, moe["name"] if name.startswith("moe_") else src, "model.safetensors"), d)
        drop = [x for n, _, x, _ in moe_cases if n == name and x]
        if drop:
            mm.rewrite_tensors(d, lambda entries: entries.pop(drop[0]))
        lines.append("%s\t%s" % (name, words))
    with open(os.path.join(top, "expected.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    mm.tensor_list, mm.forward_llama, mm.cross_check = tensor_list, forward_deepseek, cross_check
    for m in MODELS:
        r = resolved(m["config"])
        values, files, entries = mm.write_folder(m, r, os.path.join(HERE, m["name"]))
        mm.write_reference(m, mm.reference(m, r, values, files, entries))
    bad_folders()


if __name__ == "__main__":
    main()
