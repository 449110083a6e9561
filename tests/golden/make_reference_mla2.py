#!/usr/bin/python3
"""Independent reference numbers for multi-head latent attention inside the
Transformer block and in a stack of layers (issue 24 §1, "mla2"), computed
with PyTorch in float64.

    make_reference_mla2.py tests/golden/mla2   # write every NAME.json and NAME.ref.json

Written from issue 24, lessons/FORMAT.md ("The block", "Layers", "mla") and the
transformers code below, not from attnviz's C code. The file followed is
transformers' src/transformers/models/deepseek_v3/modeling_deepseek_v3.py:

  DeepseekV3DecoderLayer.forward (the pre-norm block DeepSeek-V3 stacks):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, _ = self.self_attn(hidden_states=hidden_states, ...)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states                     -> layer_pre()
  DeepseekV3MLP.forward (a dense layer, i < first_k_dense_replace):
        down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
        (hidden_act "silu"; attnviz's W_1 = gate_proj, W_3 = up_proj, W_2 = down_proj)  -> swiglu()
  DeepseekV3Model.forward: hidden_states = self.norm(hidden_states) after the last layer   -> final norm
  DeepseekV3RMSNorm.forward: variance = x.pow(2).mean(-1, keepdim=True);
        x * torch.rsqrt(variance + eps); self.weight * x             -> rms()
  DeepseekV3Attention.forward (q_a_proj, q_a_layernorm, q_b_proj or q_proj;
        kv_a_proj_with_mqa split [kv_lora_rank, qk_rope_head_dim]; kv_a_layernorm;
        kv_b_proj split per head [qk_nope_head_dim, v_head_dim]; k_rot one for
        every head; apply_rotary_pos_emb_interleave; scaling qk_head_dim ** -0.5;
        eager_attention_forward; o_proj)                              -> mla()

The post-norm case follows nn.TransformerEncoderLayer (norm_first=False) as
lessons/FORMAT.md's "The block" says: residual1 = x + attn(x), norm1 =
LayerNorm(residual1), residual2 = norm1 + relu(norm1·W_1 + b_1)·W_2 + b_2,
norm2 = LayerNorm(residual2): attention there reads x itself.

Each NAME.json is a whole lesson (format 2: tokens, X, heads, a causal mask,
W_o, "mla", "block", "layers"); NAME.ref.json the --dump keys it must give:
each layer's attention (Q, K, V, each head's unscaled scores, weights and
output, concat, output, and under "mla" the latents, the turned k_pe and
q_pe, q_tilde, absorbed_out and each head's absorbed scores), the block's
matrices, and the stack's output (after the final norm when there is one).
Weights are in attnviz's row convention (x · W, nn.Linear's weight transposed),
literal numbers from a seeded generator rounded to 6 decimals.

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import os
import sys

import torch

torch.set_default_dtype(torch.float64)


def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def layernorm(x, g, b, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), g, b, eps)


def turn_interleaved(x, pos, theta):
    """apply_rotary_pos_emb_interleave on x (..., n, d): pairs (2i, 2i+1), evens out first."""
    d = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2) / d))
    ang = pos[:, None] * inv_freq[None, :]
    cos = torch.cat((ang.cos(), ang.cos()), -1)
    sin = torch.cat((ang.sin(), ang.sin()), -1)
    y = torch.cat((x[..., 0::2], x[..., 1::2]), -1)       # view(d//2, 2).transpose: evens, then odds
    half = d // 2
    rot = torch.cat((-y[..., half:], y[..., :half]), -1)  # rotate_half
    return y * cos + rot * sin


def mla(x, L):
    """One DeepseekV3Attention on rows x (n × d_model); the dump's "attn" keys."""
    m, H = L["mla"], L["heads"]
    t = lambda k: torch.tensor(m[k])
    n = x.shape[0]
    dn, dr, dv, c = m["qk_nope_head_dim"], m["qk_rope_head_dim"], m["v_head_dim"], m["kv_lora_rank"]
    eps, theta = m["eps"], m["rope_theta"]
    out = {"mla": {}}
    if "q_lora_rank" in m:
        cq = rms(x @ t("W_qa"), t("q_a_norm"), eps)
        out["mla"]["c_Q"] = cq
        q = cq @ t("W_qb")
    else:
        q = x @ torch.tensor(L["W_q"])
    q = q.view(n, H, dn + dr).permute(1, 0, 2)                 # (H, n, dn + dr)
    q_nope, q_pe = q[..., :dn], q[..., dn:]
    ckv_kpe = x @ t("W_kva")
    c_kv = rms(ckv_kpe[:, :c], t("kv_a_norm"), eps)
    k_pe = ckv_kpe[:, c:]
    pos = torch.arange(n, dtype=torch.float64)
    q_pe = turn_interleaved(q_pe, pos, theta)
    k_rot = turn_interleaved(k_pe, pos, theta)                 # once, for every head
    kv = (c_kv @ t("W_kvb")).view(n, H, dn + dv).permute(1, 0, 2)
    k_nope, v = kv[..., :dn], kv[..., dn:]
    Q = torch.cat((q_nope, q_pe), -1)
    K = torch.cat((k_nope, k_rot.expand(H, n, dr)), -1)
    scores = Q @ K.transpose(1, 2)
    masked = scores * (dn + dr) ** -0.5 + torch.full((n, n), float("-inf")).triu(1)
    weights = torch.softmax(masked, -1)
    heads_out = weights @ v
    concat = heads_out.permute(1, 0, 2).reshape(n, H * dv)
    out.update({"Q": Q.permute(1, 0, 2).reshape(n, -1), "K": K.permute(1, 0, 2).reshape(n, -1),
                "V": v.permute(1, 0, 2).reshape(n, -1),
                "heads": [{"scores": scores[h], "weights": weights[h], "output": heads_out[h]} for h in range(H)],
                "concat": concat, "output": concat @ torch.tensor(L["W_o"])})
    # the absorbed form, its own products: q̃ = q_nope·W^Kᵀ, q̃·c_KVᵀ + q_pe·k_peᵀ, (p·c_KV)·W^V
    W = t("W_kvb").view(c, H, dn + dv)
    q_tilde = torch.einsum("hnd,chd->hnc", q_nope, W[..., :dn])
    absorbed = q_tilde @ c_kv.T + q_pe @ k_rot.T
    absorbed_out = torch.einsum("hnc,chd->hnd", weights @ c_kv, W[..., dn:])
    out["mla"].update({"c_KV": c_kv, "k_pe": k_pe, "k_pe_rot": k_rot,
                       "q_nope": q_nope.permute(1, 0, 2).reshape(n, -1), "q_pe": q_pe.permute(1, 0, 2).reshape(n, -1),
                       "q_tilde": q_tilde.permute(1, 0, 2).reshape(n, -1),
                       "absorbed_out": absorbed_out.permute(1, 0, 2).reshape(n, -1),
                       "absorbed": [{"scores": absorbed[h]} for h in range(H)]})
    return out


def swiglu(x, f):
    return torch.nn.functional.silu(x @ torch.tensor(f["W_1"])) * (x @ torch.tensor(f["W_3"])) @ torch.tensor(f["W_2"])


def layer_forward(x, L):
    """One layer of the stack (its merged keys L): the dump's layer object."""
    b = L["block"]
    eps = b["eps"]
    g = lambda k: torch.tensor(b[k]["gamma"])
    o = {}
    if b["norm"] == "pre":                                    # DeepseekV3DecoderLayer.forward
        o["norm1"] = rms(x, g("ln1"), eps)
        o["attn"] = mla(o["norm1"], L)
        o["residual1"] = x + o["attn"]["output"]
        o["norm2"] = rms(o["residual1"], g("ln2"), eps)
        o["ffn_out"] = swiglu(o["norm2"], b["ffn"])
        o["residual2"] = o["residual1"] + o["ffn_out"]
        o["output"] = o["residual2"]
    else:                                                     # post-norm, LayerNorm, ReLU
        bt = lambda k: torch.tensor(b[k]["beta"])
        f = b["ffn"]
        o["attn"] = mla(x, L)
        o["residual1"] = x + o["attn"]["output"]
        o["norm1"] = layernorm(o["residual1"], g("ln1"), bt("ln1"), eps)
        o["ffn_hidden"] = o["norm1"] @ torch.tensor(f["W_1"]) + torch.tensor(f["b_1"])
        o["ffn_act"] = torch.relu(o["ffn_hidden"])
        o["ffn_out"] = o["ffn_act"] @ torch.tensor(f["W_2"]) + torch.tensor(f["b_2"])
        o["residual2"] = o["norm1"] + o["ffn_out"]
        o["norm2"] = layernorm(o["residual2"], g("ln2"), bt("ln2"), eps)
        o["output"] = o["norm2"]
    return o


class Gen:
    def __init__(self, seed):
        self.g = torch.Generator().manual_seed(seed)

    def m(self, r, c, scale=0.5):
        return [[round(float(v), 6) for v in row] for row in torch.randn(r, c, generator=self.g) * scale]

    def v(self, k, around=1.0, scale=0.1):
        return [round(around + float(v), 6) for v in torch.randn(k, generator=self.g) * scale]


def mla_keys(G, d, H, q_lora, c, dn, dr, dv, theta):
    m = {}
    if q_lora:
        m["q_lora_rank"] = q_lora
    m.update({"kv_lora_rank": c, "qk_nope_head_dim": dn, "qk_rope_head_dim": dr, "v_head_dim": dv,
              "rope_theta": theta, "eps": 1e-6})
    if q_lora:
        m.update({"W_qa": G.m(d, q_lora), "q_a_norm": G.v(q_lora), "W_qb": G.m(q_lora, H * (dn + dr))})
    m.update({"W_kva": G.m(d, c + dr), "kv_a_norm": G.v(c), "W_kvb": G.m(c, H * (dn + dv))})
    return m


def pre_block(G, d, ff, final):
    b = {"norm": "pre", "norm_kind": "rmsnorm", "eps": 1e-6, "ln1": {"gamma": G.v(d)}, "ln2": {"gamma": G.v(d)},
         "ffn": {"activation": "swiglu", "W_1": G.m(d, ff), "W_3": G.m(d, ff), "W_2": G.m(ff, d)}}
    if final:
        b["final_norm"] = {"gamma": G.v(d)}
    return b


def post_block(G, d, ff):
    return {"norm": "post", "norm_kind": "layernorm", "eps": 1e-5,
            "ln1": {"gamma": G.v(d), "beta": G.v(d, 0.0)}, "ln2": {"gamma": G.v(d), "beta": G.v(d, 0.0)},
            "ffn": {"activation": "relu", "W_1": G.m(d, ff), "b_1": G.v(ff, 0.0), "W_2": G.m(ff, d), "b_2": G.v(d, 0.0)}}


def case_block(G):
    """One DeepSeek-V3 layer: pre-norm RMSNorm, MLA with q_lora_rank, SwiGLU, the model's final norm."""
    n, d, H = 5, 6, 2
    les = {"heads": H, "mla": mla_keys(G, d, H, 3, 4, 2, 2, 3, 10000.0)}
    les["W_o"] = G.m(H * 3, d)
    les["block"] = pre_block(G, d, 8, True)
    return n, d, les, None


def case_layers(G):
    """Two layers of their own: layer 1 has no q_lora_rank (its W_q), other heads, its own block."""
    n, d = 4, 6
    les = {"heads": 2, "mla": mla_keys(G, d, 2, 3, 3, 2, 2, 2, 10000.0)}
    les["W_o"] = G.m(2 * 2, d)
    les["block"] = pre_block(G, d, 7, True)
    l1 = {"heads": 3, "mla": mla_keys(G, d, 3, None, 4, 1, 4, 2, 500.0)}
    l1["W_q"] = G.m(d, 3 * 5)
    l1["W_o"] = G.m(3 * 2, d)
    l1["block"] = pre_block(G, d, 5, False)
    return n, d, les, [{}, l1]


def case_post(G):
    """Three post-norm layers that repeat the top level (LayerNorm, ReLU): attention reads x, not a norm."""
    n, d, H = 4, 4, 2
    les = {"heads": H, "mla": mla_keys(G, d, H, 2, 2, 1, 2, 2, 100.0)}
    les["W_o"] = G.m(H * 2, d)
    les["block"] = post_block(G, d, 6)
    return n, d, les, [{}, {}, {}]


CASES = [("mla_block_deepseek", case_block), ("mla_layers_own", case_layers), ("mla_layers_postnorm", case_post)]


def to_json(v):
    if torch.is_tensor(v):
        return [float(x) for x in v] if v.dim() == 1 else [[float(x) for x in row] for row in v]
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_json(x) for x in v]
    return v


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for k, (name, make) in enumerate(CASES):
        G = Gen(2600 + k)
        n, d, top, layers = make(G)
        X = G.m(n, d, 1.0)
        lesson = {"attnviz": 2, "title": {"en": name, "zh": name}, "tokens": ["t%d" % i for i in range(n)], "X": X,
                  "mask": "causal"}
        lesson.update(top)
        if layers is not None:
            lesson["layers"] = layers
        x = torch.tensor(X)
        dumped = []
        for lay in (layers if layers is not None else [{}]):
            merged = dict(top)
            merged.update(lay)
            o = layer_forward(x, merged)
            dumped.append(o)
            x = o["output"]
        if "final_norm" in top["block"]:
            x = rms(x, torch.tensor(top["block"]["final_norm"]["gamma"]), top["block"]["eps"])
            dumped[-1]["final"] = x
        ref = {"n": n, "d_model": d, "layers": dumped, "output": x}
        for lay in dumped:
            a = lay["attn"]
            ds = max(float((a["mla"]["absorbed"][h]["scores"] - a["heads"][h]["scores"]).abs().max())
                     for h in range(len(a["heads"])))
            assert ds < 1e-12, (name, ds)
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(lesson, f, indent=1)
            f.write("\n")
        with open(os.path.join(out, name + ".ref.json"), "w") as f:
            json.dump(to_json(ref), f, indent=1)
            f.write("\n")
        print(name, "ok", file=sys.stderr)


if __name__ == "__main__":
    main()
