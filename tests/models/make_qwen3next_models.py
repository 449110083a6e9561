#!/usr/bin/python3
"""Small qwen3_next model folders (issue 24: Qwen3-Next's hybrid of Gated DeltaNet
and gated attention layers, its mixture of experts with a gated shared expert),
and their reference numbers, in the layout of make_models.py (whose folder
writer and reference file this script reuses):

    OPENBLAS_CORETYPE= /usr/bin/python3 tests/models/make_qwen3next_models.py     # from the repository root

  tests/models/NAME/config.json, model.safetensors   random weights under the checkpoints' names and shapes
  tests/models/NAME.ref.json                          every stage of every layer on a few prompts

The folders (tests/models/README.md):

  qwen3next_hybrid      4 layers, no layer_types: full_attention_interval's default 4 makes layers 0-2
                        "linear_attention" (Gated DeltaNet: 2 key heads of 8, 4 value heads of 4, kernel 4) and
                        layer 3 "full_attention" (4 heads on 2 key/value heads of 8, q_proj twice as wide: query
                        and gate, QK-norm, partial_rotary_factor's default 0.25); every layer sparse: 4 experts of
                        6, top 2 renormalised, a shared expert of 5 with its gate; F32, an untied lm_head
  qwen3next_types_bf16  2 layers by layer_types ["linear_attention", "full_attention"], 2 key heads and 2 value
                        heads (one each), mlp_only_layers [1] (layer 1 a dense MLP of 12), norm_topk_prob false,
                        rope_parameters {"rope_theta", "partial_rotary_factor": 0.5}; BF16, tied

transformers has no package on this machine, so the forward is PyTorch in float64 following
src/transformers/models/qwen3_next/modeling_qwen3_next.py line by line (the file at commit
01cdc6081c7500f9e50c98b1b943c90ecb665db3, and configuration_qwen3_next.py's defaults):

  Qwen3NextRMSNorm.forward: output = x * rsqrt(x.pow(2).mean(-1) + eps); output * (1.0 + self.weight)  -> norm1p()
  Qwen3NextAttention.forward:
        query_states, gate = torch.chunk(self.q_proj(hidden_states).view(*input_shape, -1, self.head_dim * 2), 2, dim=-1)
        gate = gate.reshape(*input_shape, -1)
        query_states = self.q_norm(query_states.view(hidden_shape)); key_states = self.k_norm(self.k_proj(...).view(...))
        query_states, key_states = apply_rotary_pos_emb(...)   (rotary_dim = cos.shape[-1]: the first int(head_dim *
                                                                partial_rotary_factor) columns turn, the rest pass)
        eager_attention_forward (repeat_kv, * self.scaling = head_dim**-0.5, + causal mask, softmax, @ value)
        attn_output = attn_output * torch.sigmoid(gate); attn_output = self.o_proj(attn_output)      -> full_attention()
  Qwen3NextGatedDeltaNet.fix_query_key_value_ordering and forward (in_proj_qkvz viewed per key head as
        [q | k | v | z], in_proj_ba as [b | a]; cat(q, k, v) through the depthwise conv1d and SiLU; beta = b.sigmoid(),
        g = -A_log.exp() * softplus(a + dt_bias); query and key repeat_interleave(num_v_heads // num_k_heads);
        chunk_gated_delta_rule(..., use_qk_l2norm_in_kernel=True); self.norm(core_attn_out, z); out_proj)
        -> gated_deltanet(); the rule itself is tests/golden/make_reference_deltanet2.py's chunked() (following
        torch_chunk_gated_delta_rule, chunk_size 64) and l2norm(), and its recurrent() (torch_recurrent_gated_delta_rule)
        the cross-check.
  Qwen3NextSparseMoeBlock.forward: the router's softmax, topk, norm_topk_prob (make_moe_models.py's moe_mlp, the
        experts under model.layers.L.mlp.experts.E.gate_proj/up_proj/down_proj as the released checkpoints hold them),
        then shared_expert_output = F.sigmoid(self.shared_expert_gate(x)) * self.shared_expert(x), added
  Qwen3NextDecoderLayer: input_layernorm, the token mixer, residual, post_attention_layernorm, mlp, residual;
  Qwen3NextModel's norm, lm_head (or embed_tokens tied).

Cross-checks (the script stops when one fails): chunked = recurrent Gated DeltaNet (1e-12); the conv1d as a loop;
the routed experts token by token (make_moe_models.py's moe_mlp_second).
"""

import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "golden"))
import make_models as mm                      # noqa: E402
import make_moe_models as mo                  # noqa: E402
import make_reference_deltanet2 as d2         # noqa: E402  (chunked, recurrent, l2norm, gated_norm)

torch.set_default_dtype(torch.float64)

COMMON = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "attention_bias": False,
          "attention_dropout": 0.0, "hidden_act": "silu", "initializer_range": 0.02, "max_position_embeddings": 64,
          "rms_norm_eps": 1e-06, "torch_dtype": "float32", "transformers_version": "4.57.0", "use_cache": True,
          "hidden_size": 16, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
          "linear_conv_kernel_dim": 4, "linear_key_head_dim": 8, "linear_num_key_heads": 2, "num_experts": 4,
          "num_experts_per_tok": 2, "moe_intermediate_size": 6, "shared_expert_intermediate_size": 5,
          "output_router_logits": False, "router_aux_loss_coef": 0.001}
MODELS = [
    {
        "name": "qwen3next_hybrid", "dtype": "F32", "seed": 2481,
        "why": "Qwen3-Next: 3 Gated DeltaNet layers (4 value heads on 2 key heads) : 1 gated full-attention layer, "
               "every layer sparse with a gated shared expert, partial RoPE 0.25, untied",
        "config": dict(COMMON, num_hidden_layers=4, linear_value_head_dim=4, linear_num_value_heads=4,
                       intermediate_size=12, norm_topk_prob=True, rope_theta=10000.0, tie_word_embeddings=False,
                       vocab_size=300),
        "prompts": [[3, 14, 15], [9, 26, 53, 58, 97, 93, 23, 84, 62]],
    },
    {
        "name": "qwen3next_types_bf16", "dtype": "BF16", "seed": 2482,
        "why": "Qwen3-Next by layer_types: a Gated DeltaNet layer (one value head a key head), a gated full-attention "
               "layer with a dense MLP (mlp_only_layers), top 2 without norm_topk_prob, partial RoPE 0.5, tied",
        "config": dict(COMMON, num_hidden_layers=2, layer_types=["linear_attention", "full_attention"],
                       linear_value_head_dim=6, linear_num_value_heads=2, intermediate_size=12, mlp_only_layers=[1],
                       norm_topk_prob=False, rope_parameters={"rope_type": "default", "rope_theta": 5000.0,
                                                              "partial_rotary_factor": 0.5},
                       tie_word_embeddings=True, vocab_size=280, torch_dtype="bfloat16"),
        "prompts": [[7, 8], [100, 101, 102, 103, 104, 105, 106]],
    },
]


def resolved(cfg):
    """Qwen3NextConfig's numbers, defaults applied (configuration_qwen3_next.py: vocab_size 151936, hidden_size
    2048, intermediate_size 5632, num_hidden_layers 48, num_attention_heads 16, num_key_value_heads 2, head_dim 256,
    rms_norm_eps 1e-6, tie_word_embeddings False, linear_conv_kernel_dim 4, linear_key_head_dim 128,
    linear_value_head_dim 128, linear_num_key_heads 16, linear_num_value_heads 32, decoder_sparse_step 1,
    moe_intermediate_size 512, shared_expert_intermediate_size 512, num_experts_per_tok 10, num_experts 512,
    norm_topk_prob True, mlp_only_layers [], layer_types from full_attention_interval 4, partial_rotary_factor 0.25)."""
    g = cfg.get
    rp = g("rope_parameters") or {}
    r = {"vocab_size": g("vocab_size", 151936), "hidden_size": g("hidden_size", 2048),
         "intermediate_size": g("intermediate_size", 5632), "num_hidden_layers": g("num_hidden_layers", 48),
         "num_attention_heads": g("num_attention_heads", 16), "num_key_value_heads": g("num_key_value_heads", 2),
         "head_dim": g("head_dim", 256), "norm_eps": g("rms_norm_eps", 1e-6),
         "tie_word_embeddings": g("tie_word_embeddings", False), "max_position_embeddings": g("max_position_embeddings", 32768),
         "rope_theta": float(rp.get("rope_theta", g("rope_theta", 10000.0))),
         "partial_rotary_factor": rp.get("partial_rotary_factor", g("partial_rotary_factor", 0.25)),
         "conv": g("linear_conv_kernel_dim", 4), "dk": g("linear_key_head_dim", 128), "dv": g("linear_value_head_dim", 128),
         "hk": g("linear_num_key_heads", 16), "hv": g("linear_num_value_heads", 32),
         "num_experts": g("num_experts", 512), "experts_per_tok": g("num_experts_per_tok", 10),
         "norm_topk_prob": g("norm_topk_prob", True), "moe_intermediate_size": g("moe_intermediate_size", 512),
         "shared": g("shared_expert_intermediate_size", 512), "qkv_bias": False, "o_bias": False, "qk_norm": True}
    L = r["num_hidden_layers"]
    interval = g("full_attention_interval", 4)
    types = g("layer_types") or ["linear_attention" if bool((i + 1) % interval) else "full_attention" for i in range(L)]
    r["linear"] = [t == "linear_attention" for t in types]
    step, only = g("decoder_sparse_step", 1), g("mlp_only_layers") or []
    r["sparse"] = [i not in only and r["num_experts"] > 0 and (i + 1) % step == 0 for i in range(L)]
    return r


def tensor_list(m, r):
    """The checkpoint's tensors: [(name, shape, kind)]; kind "ln0" a zero-centred (1 + w) norm's weight."""
    D, V, L, H, KV, hd = (r[k] for k in ("hidden_size", "vocab_size", "num_hidden_layers", "num_attention_heads",
                                         "num_key_value_heads", "head_dim"))
    hk, hv, dk, dv, K = r["hk"], r["hv"], r["dk"], r["dv"], r["conv"]
    E, Fe, FF, S = r["num_experts"], r["moe_intermediate_size"], r["intermediate_size"], r["shared"]
    out = [("model.embed_tokens.weight", (V, D), "emb")]
    for i in range(L):
        h = "model.layers.%d." % i
        out.append((h + "input_layernorm.weight", (D,), "ln0"))
        if r["linear"][i]:
            la = h + "linear_attn."
            out += [(la + "in_proj_qkvz.weight", (2 * hk * dk + 2 * hv * dv, D), "qk"),
                    (la + "in_proj_ba.weight", (2 * hv, D), "w"),
                    (la + "conv1d.weight", (2 * hk * dk + hv * dv, 1, K), "conv"),
                    (la + "dt_bias", (hv,), "b"), (la + "A_log", (hv,), "b"),
                    (la + "norm.weight", (dv,), "ln_w"), (la + "out_proj.weight", (D, hv * dv), "w")]
        else:
            sa = h + "self_attn."
            out += [(sa + "q_proj.weight", (2 * H * hd, D), "qk"), (sa + "k_proj.weight", (KV * hd, D), "qk"),
                    (sa + "v_proj.weight", (KV * hd, D), "w"), (sa + "o_proj.weight", (D, H * hd), "w"),
                    (sa + "q_norm.weight", (hd,), "ln0"), (sa + "k_norm.weight", (hd,), "ln0")]
        out.append((h + "post_attention_layernorm.weight", (D,), "ln0"))
        if r["sparse"][i]:
            out.append((h + "mlp.gate.weight", (E, D), "qk"))
            for e in range(E):
                x = h + "mlp.experts.%d." % e
                out += [(x + "gate_proj.weight", (Fe, D), "w"), (x + "up_proj.weight", (Fe, D), "w"),
                        (x + "down_proj.weight", (D, Fe), "w")]
            out += [(h + "mlp.shared_expert.gate_proj.weight", (S, D), "w"),
                    (h + "mlp.shared_expert.up_proj.weight", (S, D), "w"),
                    (h + "mlp.shared_expert.down_proj.weight", (D, S), "w"),
                    (h + "mlp.shared_expert_gate.weight", (1, D), "w")]
        else:
            out += [(h + "mlp.gate_proj.weight", (FF, D), "w"), (h + "mlp.up_proj.weight", (FF, D), "w"),
                    (h + "mlp.down_proj.weight", (D, FF), "w")]
    out.append(("model.norm.weight", (D,), "ln0"))
    if not r["tie_word_embeddings"]:
        out.append(("lm_head.weight", (V, D), "emb"))
    return out


def random_weights(m, r):
    """name -> float32 array, as make_models.py's, with the kinds of this model."""
    rng = np.random.default_rng(m["seed"])
    D = r["hidden_size"]
    out = {}
    for name, shape, kind in tensor_list(m, r):
        z = rng.standard_normal(shape)
        a = {"emb": lambda: z * 0.8, "ln_w": lambda: 1.0 + 0.25 * z, "ln0": lambda: 0.25 * z, "b": lambda: 0.5 * z,
             "qk": lambda: z * (1.6 / math.sqrt(D)), "conv": lambda: z * 0.5,
             "w": lambda: z / math.sqrt(shape[-1])}[kind]()
        out[name] = a.astype(np.float32)
    return out


def norm1p(x, w, eps):
    """Qwen3NextRMSNorm.forward: x * rsqrt(mean(x^2) + eps) * (1 + weight)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + w)


def rope(n, r):
    """Qwen3NextRotaryEmbedding: dim = int(head_dim * partial_rotary_factor), inv_freq over it, emb = cat(freqs, freqs)."""
    dim = int(r["head_dim"] * r["partial_rotary_factor"])
    inv_freq = 1.0 / (r["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float64) / dim))
    freqs = torch.outer(torch.arange(n).to(torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def full_attention(r, W, h, x, cos, sin, att):
    """Qwen3NextAttention.forward on the rows x (n x D)."""
    n = x.shape[0]
    H, KV, hd, eps = r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"], r["norm_eps"]
    sa = h + "self_attn."
    q, gate = torch.chunk(F.linear(x, mm.T(W, sa + "q_proj.weight")).view(n, -1, hd * 2), 2, dim=-1)
    gate = gate.reshape(n, -1)
    k = F.linear(x, mm.T(W, sa + "k_proj.weight"))
    v = F.linear(x, mm.T(W, sa + "v_proj.weight"))
    att.update(Q=mm.mat(q.reshape(n, -1)), K=mm.mat(k), V=mm.mat(v))
    q = norm1p(q, mm.T(W, sa + "q_norm.weight"), eps)
    k = norm1p(k.view(n, -1, hd), mm.T(W, sa + "k_norm.weight"), eps)
    att.update(Q_norm=mm.mat(q.reshape(n, -1)), K_norm=mm.mat(k.reshape(n, -1)))
    q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.view(n, -1, hd).transpose(0, 1)
    rd = cos.shape[-1]                                                   # apply_rotary_pos_emb, partial
    q = torch.cat([q[..., :rd] * cos + mm.rotate_half(q[..., :rd]) * sin, q[..., rd:]], dim=-1)
    k = torch.cat([k[..., :rd] * cos + mm.rotate_half(k[..., :rd]) * sin, k[..., rd:]], dim=-1)
    att.update(Q_rot=mm.mat(q.transpose(0, 1).reshape(n, -1)), K_rot=mm.mat(k.transpose(0, 1).reshape(n, -1)))
    ks, vs = mm.repeat_kv(k, H // KV), mm.repeat_kv(v, H // KV)
    scores = torch.matmul(q, ks.transpose(1, 2))
    w = scores * hd ** -0.5 + torch.triu(torch.full((n, n), torch.finfo(torch.float64).min), diagonal=1)
    w = F.softmax(w, dim=-1)
    out = torch.matmul(w, vs)
    att["heads"] = [{"kv_head": j // (H // KV), "scores": mm.mat(scores[j]), "weights": mm.mat(w[j]),
                     "output": mm.mat(out[j])} for j in range(H)]
    concat = out.transpose(0, 1).reshape(n, -1)
    gated = concat * torch.sigmoid(gate)
    o = F.linear(gated, mm.T(W, sa + "o_proj.weight"))
    att.update(concat=mm.mat(concat), gate=mm.mat(gate), gate_sig=mm.mat(torch.sigmoid(gate)), gated=mm.mat(gated),
               output=mm.mat(o))
    return o


def gated_deltanet(r, W, h, x, att):
    """Qwen3NextGatedDeltaNet.fix_query_key_value_ordering and forward on the rows x (n x D), without a cache."""
    n = x.shape[0]
    hk, hv, dk, dv, K = r["hk"], r["hv"], r["dk"], r["dv"], r["conv"]
    rep, la = hv // hk, h + "linear_attn."
    qkvz = F.linear(x, mm.T(W, la + "in_proj_qkvz.weight")).view(n, hk, 2 * dk + 2 * dv * rep)
    ba = F.linear(x, mm.T(W, la + "in_proj_ba.weight")).view(n, hk, 2 * rep)
    query, key, value, z = torch.split(qkvz, [dk, dk, rep * dv, rep * dv], dim=2)
    b, a = torch.split(ba, [rep, rep], dim=2)
    value, z = value.reshape(n, -1, dv), z.reshape(n, -1, dv)
    b, a = b.reshape(n, hv), a.reshape(n, hv)
    query, key, value = (t.reshape(n, -1) for t in (query, key, value))
    att.update(Q=mm.mat(query), K=mm.mat(key), V=mm.mat(value))
    mixed = torch.cat((query, key, value), dim=-1)
    wconv = mm.T(W, la + "conv1d.weight")                                  # [C, 1, K]
    conv = F.silu(F.conv1d(mixed.T.unsqueeze(0), wconv, padding=K - 1, groups=mixed.shape[1])[0, :, :n]).T
    loop = torch.zeros_like(mixed)
    for t in range(n):
        for s in range(K):
            if t - K + 1 + s >= 0:
                loop[t] += wconv[:, 0, s] * mixed[t - K + 1 + s]
    mm.agree("conv1d as a loop", F.silu(loop), conv)
    query, key, value = torch.split(conv, [hk * dk, hk * dk, hv * dv], dim=-1)
    query, key, value = query.reshape(n, -1, dk), key.reshape(n, -1, dk), value.reshape(n, -1, dv)
    beta = b.sigmoid()
    g = -mm.T(W, la + "A_log").exp() * F.softplus(a + mm.T(W, la + "dt_bias"))
    if rep > 1:
        query, key = query.repeat_interleave(rep, dim=1), key.repeat_interleave(rep, dim=1)
    q, k, v = d2.l2norm(query).transpose(0, 1), d2.l2norm(key).transpose(0, 1), value.transpose(0, 1)  # [hv, n, d]
    core, _ = d2.chunked(q, k, v, g.T, beta.T, 64)
    o2, _, _, _ = d2.recurrent(q, k, v, g.T, beta.T)
    mm.agree("chunked = recurrent", core, o2)
    gated = d2.gated_norm(core, z.transpose(0, 1), mm.T(W, la + "norm.weight"), r["norm_eps"])   # [hv, n, dv]
    concat = gated.transpose(0, 1).reshape(n, -1)
    o = F.linear(concat, mm.T(W, la + "out_proj.weight"))

    def side(t):                          # a key head's value heads side by side (attnviz's head = a key head)
        return mm.mat(t.permute(1, 0, 2).reshape(n, -1))
    att["heads"] = [{"gdn_beta": mm.mat(beta[:, j * rep:(j + 1) * rep]), "gdn_g": mm.mat(g[:, j * rep:(j + 1) * rep]),
                     "gdn_out": side(core[j * rep:(j + 1) * rep]), "gdn_gated": side(gated[j * rep:(j + 1) * rep])}
                    for j in range(hk)]
    att.update(gdn_conv=mm.mat(conv), gdn_z=mm.mat(z.reshape(n, -1)), concat=mm.mat(concat), output=mm.mat(o))
    return o


def mlp(m, r, W, i, x, lay):
    """Qwen3NextSparseMoeBlock.forward (the routed experts: make_moe_models.py's) or Qwen3NextMLP."""
    f = mo.moe_mlp(m, r, W, i, x, lay)
    if not r["sparse"][i]:
        return f
    h = "model.layers.%d.mlp." % i
    shared = F.linear(F.silu(F.linear(x, mm.T(W, h + "shared_expert.gate_proj.weight"))) *
                      F.linear(x, mm.T(W, h + "shared_expert.up_proj.weight")), mm.T(W, h + "shared_expert.down_proj.weight"))
    sg = torch.sigmoid(F.linear(x, mm.T(W, h + "shared_expert_gate.weight")))
    routed = mo.moe_mlp_second(m, r, W, i, x, lambda xt, name, bias: F.linear(xt, mm.T(W, name + ".weight")))
    mm.agree("layer %d: the experts token by token" % i, routed, f)
    lay.update(shared_gate=mm.mat(sg), shared_out=mm.mat(shared))
    return f + sg * shared


def forward_qwen3next(m, r, W, ids):
    """Qwen3NextForCausalLM on one sequence."""
    n, eps = len(ids), r["norm_eps"]
    hidden = mm.T(W, "model.embed_tokens.weight")[torch.tensor(ids)]
    rec = {"ids": ids, "X": mm.mat(hidden), "layers": []}
    cos, sin = rope(n, r)
    for i in range(r["num_hidden_layers"]):
        h = "model.layers.%d." % i
        lay, att = {}, {}
        residual = hidden
        x = norm1p(hidden, mm.T(W, h + "input_layernorm.weight"), eps)
        lay["norm1"] = mm.mat(x)
        a = gated_deltanet(r, W, h, x, att) if r["linear"][i] else full_attention(r, W, h, x, cos, sin, att)
        lay["attn"] = att
        hidden = residual + a
        lay["residual1"] = mm.mat(hidden)
        residual = hidden
        x = norm1p(hidden, mm.T(W, h + "post_attention_layernorm.weight"), eps)
        lay["norm2"] = mm.mat(x)
        f = mlp(m, r, W, i, x, lay)
        lay["ffn_out"] = mm.mat(f)
        hidden = residual + f
        lay["output"] = mm.mat(hidden)
        rec["layers"].append(lay)
    hidden = norm1p(hidden, mm.T(W, "model.norm.weight"), eps)
    rec["final_norm"] = mm.mat(hidden)
    head = "model.embed_tokens.weight" if r["tie_word_embeddings"] else "lm_head.weight"
    rec["logits"] = mm.mat(F.linear(hidden, mm.T(W, head)))
    return rec


def spread(ref):
    """make_models.py's spread over the full-attention layers (a Gated DeltaNet layer has no softmax weights)."""
    tops = [max(row) for rec in ref["prompts"] for lay in rec["layers"] for hd in lay["attn"]["heads"]
            for t, row in enumerate(hd.get("weights", [])) if t > 0]
    return sum(tops) / len(tops) if tops else 1.0


def bad_folders():
    """tests/models/bad_qwen3next/NAME: qwen3next_types_bf16's folder with one thing wrong, and expected.txt: each
    folder and the words its refusal must say (t_models.sh)."""
    import json
    import shutil
    m = MODELS[1]
    src, top = os.path.join(HERE, m["name"]), os.path.join(HERE, "bad_qwen3next")
    if os.path.isdir(top):
        shutil.rmtree(top)

    def drop_qkvz(entries):
        del entries["model.layers.0.linear_attn.in_proj_qkvz.weight"]
    cases = [   # (name, config edit, weights edit, words)
        ("layer_types_swapped", {"layer_types": ["full_attention", "linear_attention"]}, None,
         "model.safetensors: config.json makes layer 0 a \"full_attention\" layer (layer_types, or "
         "full_attention_interval without them), but the weights hold \"model.layers.0.linear_attn.in_proj_qkvz.\u2026\", "
         "a Gated DeltaNet layer's"),
        ("interval_contradicts", {"layer_types": None, "full_attention_interval": 1}, None,
         "config.json makes layer 0 a \"full_attention\" layer (layer_types, or full_attention_interval without them)"),
        ("no_in_proj_qkvz", {}, drop_qkvz,
         "model.safetensors: no tensor \"model.layers.0.linear_attn.in_proj_qkvz.\u2026\", which a qwen3_next model with "
         "config.json's settings computes with"),
        ("layer_type_word", {"layer_types": ["linear_attention", "sliding_attention"]}, None,
         "config.json: layer_types[1]: \"sliding_attention\": a qwen3_next layer is \"linear_attention\" (Gated "
         "DeltaNet) or \"full_attention\""),
        ("value_heads", {"linear_num_value_heads": 3},  None,
         "config.json: linear_num_value_heads: 3 is not a multiple of linear_num_key_heads (2)"),
    ]
    lines = ["# tests/models/bad_qwen3next (make_qwen3next_models.py): FOLDER<TAB>words its refusal says"]
    for name, edit, wedit, words in cases:
        d = os.path.join(top, name)
        os.makedirs(d)
        cfg = {k: v for k, v in dict(m["config"], **edit).items() if v is not None}
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2, sort_keys=True)
            f.write("\n")
        shutil.copy(os.path.join(src, "model.safetensors"), d)
        if wedit is not None:
            mm.rewrite_tensors(d, wedit)
        lines.append("%s\t%s" % (name, words))
    with open(os.path.join(top, "expected.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    mm.spread = spread
    mm.tensor_list, mm.random_weights, mm.forward_llama = tensor_list, random_weights, forward_qwen3next
    mm.cross_check = lambda m, r, W, rec: None        # the cross-checks run inside the forward (agree())
    for m in MODELS:
        r = resolved(m["config"])
        folder = os.path.join(HERE, m["name"])
        values, files, entries = mm.write_folder(m, r, folder)
        ref = mm.reference(m, r, values, files, entries)
        mm.write_reference(m, ref)
    bad_folders()


if __name__ == "__main__":
    main()
