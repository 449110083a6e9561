#!/usr/bin/python3
"""Independent reference numbers for issue 24 §1: multi-head latent
attention (DeepSeek-V2/V3), computed with PyTorch in float64.

    make_reference_mla.py --all tests/golden/mla   # write every NAME.json and NAME.ref.json
    make_reference_mla.py --lesson lessons/mla.json > tests/golden/lessons/mla.ref.json   # a shipped lesson's --dump keys

Written from issue 24 and the transformers code below, not from the C code.
The file followed is transformers' src/transformers/models/deepseek_v3/
modeling_deepseek_v3.py (huggingface/transformers at commit
00b676f8f0489b88652a31d70751cc540dd06305):

  DeepseekV3RMSNorm.forward:
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states                         -> rmsnorm()
  DeepseekV3RotaryEmbedding (default rope): inv_freq = 1 / base^(arange(0, d, 2)/d),
        freqs = position · inv_freq, emb = cat(freqs, freqs), cos, sin   -> rope_cos_sin()
  apply_rotary_pos_emb_interleave (config.rope_interleave, True by default):
        q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)
        q_embed = (q * cos) + (rotate_half(q) * sin)               -> rope_interleave()
    so column pair (2i, 2i+1) turns by position·inv_freq[i], and the result
    is laid out as the d/2 turned evens, then the d/2 turned odds.
  DeepseekV3Attention.forward:
        q_states = self.q_proj(x)        (q_lora_rank None)
        q_states = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))   (else)
        q_pass, q_rot = torch.split(q_states, [qk_nope_head_dim, qk_rope_head_dim], dim=-1)  (per head)
        compressed_kv = self.kv_a_proj_with_mqa(x)
        k_pass, k_rot = torch.split(compressed_kv, [kv_lora_rank, qk_rope_head_dim], dim=-1)
        k_pass = self.kv_b_proj(self.kv_a_layernorm(k_pass)).view(key_shape).transpose(1, 2)
        k_pass, value_states = torch.split(k_pass, [qk_nope_head_dim, v_head_dim], dim=-1)
        k_rot = k_rot.view(batch_size, 1, seq_length, qk_rope_head_dim)   (one k_pe for every head)
        query_states = torch.cat((q_pass, q_rot), dim=-1); key_states = torch.cat((k_pass, k_rot), dim=-1)
        self.scaling = self.qk_head_dim ** (-0.5)   (no rope_scaling here)
  eager_attention_forward: matmul(query, keyᵀ) * scaling + causal mask, softmax, matmul(weights, value);
        o_proj.                                                    -> forward()

The absorbed form (DeepSeek-V2 paper §2.1.2; DeepSeek-V3's inference/model.py
"absorb"): q̃_h = q_nope_h · W_kvb^{K,h}ᵀ (kv_lora_rank numbers), score =
q̃_h · c_KV_j + q_pe_h · k_pe_j, head output (Σ_j p_ij c_KV_j) · W_kvb^{V,h}:
computed here separately with its own matmuls, and its largest distance from
the naive form written down.

Each NAME.json is a lesson (format 2: tokens, X, heads, a causal mask, W_o, W_q
without q_lora_rank, and "mla" as lessons/FORMAT.md says); NAME.ref.json the
matrices below, under the names attnviz gives them.

Weights are written in the row convention of attnviz (x · W, W = d_in × d_out,
nn.Linear's weight transposed). c_KV is the latent after kv_a_layernorm (what
DeepSeek's inference code caches).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import math
import os
import sys

import torch

torch.set_default_dtype(torch.float64)

CASES = [
    # name, n, d_model, heads, q_lora_rank (None: W_q), kv_lora_rank, nope, rope, v, theta
    ("mla_qlora_2heads", 4, 6, 2, 3, 4, 2, 2, 3, 10000.0),
    ("mla_noqlora_1head", 3, 5, 1, None, 3, 2, 4, 2, 10000.0),
    ("mla_qlora_3heads", 5, 8, 3, 4, 5, 3, 2, 2, 100.0),
]


def r6(t):
    return [[round(float(v), 6) for v in row] for row in t.reshape(t.shape[0], -1)]


def rmsnorm(x, w, eps):
    variance = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(variance + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_cos_sin(n, d, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(torch.arange(n, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rope_interleave(x, cos, sin):
    # x: (heads, n, d)
    h, s, d = x.shape
    x = x.view(h, s, d // 2, 2).transpose(3, 2).reshape(h, s, d)
    return (x * cos) + (rotate_half(x) * sin)


def make_case(name, n, d_model, heads, q_lora, kv_lora, dn, dr, dv, theta, seed):
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, scale=1.0):
        return torch.round(torch.randn(*shape, generator=g) * scale * 1e6) / 1e6

    dq = dn + dr
    les = {"name": name, "n": n, "d_model": d_model, "heads": heads,
           "q_lora_rank": q_lora, "kv_lora_rank": kv_lora, "qk_nope_head_dim": dn,
           "qk_rope_head_dim": dr, "v_head_dim": dv, "rope_theta": theta, "eps": 1e-6}
    les["X"] = rnd(n, d_model)
    if q_lora is None:
        les["W_q"] = rnd(d_model, heads * dq, scale=0.5)
    else:
        les["W_qa"] = rnd(d_model, q_lora, scale=0.5)
        les["q_a_norm"] = 1.0 + rnd(q_lora, scale=0.1)
        les["W_qb"] = rnd(q_lora, heads * dq, scale=0.5)
    les["W_kva"] = rnd(d_model, kv_lora + dr, scale=0.5)
    les["kv_a_norm"] = 1.0 + rnd(kv_lora, scale=0.1)
    les["W_kvb"] = rnd(kv_lora, heads * (dn + dv), scale=0.5)
    les["W_o"] = rnd(heads * dv, d_model, scale=0.5)
    les = {k: (torch.round(v * 1e6) / 1e6 if torch.is_tensor(v) else v) for k, v in les.items()}
    return les


def forward(les):
    n, heads = les["n"], les["heads"]
    dn, dr, dv = les["qk_nope_head_dim"], les["qk_rope_head_dim"], les["v_head_dim"]
    kv_lora, eps = les["kv_lora_rank"], les["eps"]
    dq = dn + dr
    X = les["X"]
    ref = {}
    if les["q_lora_rank"] is None:
        q_states = X @ les["W_q"]
    else:
        c_q = rmsnorm(X @ les["W_qa"], les["q_a_norm"], eps)
        ref["c_Q"] = c_q
        q_states = c_q @ les["W_qb"]
    q_states = q_states.view(n, heads, dq).transpose(0, 1)               # (h, n, dq)
    q_pass, q_rot = torch.split(q_states, [dn, dr], dim=-1)
    compressed_kv = X @ les["W_kva"]
    k_pass, k_rot = torch.split(compressed_kv, [kv_lora, dr], dim=-1)
    c_kv = rmsnorm(k_pass, les["kv_a_norm"], eps)
    kv = (c_kv @ les["W_kvb"]).view(n, heads, dn + dv).transpose(0, 1)   # (h, n, dn+dv)
    k_pass_h, value = torch.split(kv, [dn, dv], dim=-1)
    k_rot = k_rot.view(1, n, dr)
    cos, sin = rope_cos_sin(n, dr, les["rope_theta"])
    q_rot = rope_interleave(q_rot, cos, sin)
    k_rot = rope_interleave(k_rot, cos, sin)
    k_rot_h = k_rot.expand(heads, n, dr)
    query = torch.cat((q_pass, q_rot), dim=-1)
    key = torch.cat((k_pass_h, k_rot_h), dim=-1)
    scaling = dq ** -0.5
    scores = query @ key.transpose(1, 2)                                   # unscaled, (h, n, n)
    mask = torch.full((n, n), float("-inf")).triu(1)
    weights = torch.softmax(scores * scaling + mask, dim=-1)
    head_out = weights @ value                                             # (h, n, dv)
    concat = head_out.transpose(0, 1).reshape(n, heads * dv)
    output = concat @ les["W_o"]

    ref["c_KV"] = c_kv
    ref["k_pe"] = compressed_kv[:, kv_lora:].clone()
    ref["k_pe_rot"] = k_rot[0]
    ref["q_nope"] = q_pass.transpose(0, 1).reshape(n, heads * dn)
    ref["q_pe"] = q_rot.transpose(0, 1).reshape(n, heads * dr)
    ref["Q"] = query.transpose(0, 1).reshape(n, heads * dq)
    ref["K"] = key.transpose(0, 1).reshape(n, heads * dq)
    ref["V"] = value.transpose(0, 1).reshape(n, heads * dv)
    ref["scores"] = scores
    ref["weights"] = weights
    ref["concat"] = concat
    ref["output"] = output

    # the absorbed form, with its own matmuls
    W = les["W_kvb"].view(kv_lora, heads, dn + dv)
    WK, WV = W[:, :, :dn], W[:, :, dn:]                                   # (c, h, dn), (c, h, dv)
    q_tilde = torch.einsum("hnd,chd->hnc", q_pass, WK)                     # (h, n, c)
    abs_scores = q_tilde @ c_kv.T + q_rot @ k_rot[0].T
    abs_weights = torch.softmax(abs_scores * scaling + mask, dim=-1)
    latent_out = abs_weights @ c_kv                                        # (h, n, c)
    abs_head = torch.einsum("hnc,chd->hnd", latent_out, WV)
    abs_concat = abs_head.transpose(0, 1).reshape(n, heads * dv)
    ref["q_tilde"] = q_tilde.transpose(0, 1).reshape(n, heads * kv_lora)
    ref["absorbed_scores"] = abs_scores
    ref["absorbed_concat"] = abs_concat
    ref["max_score_diff"] = float((abs_scores - scores).abs().max())
    ref["max_concat_diff"] = float((abs_concat - concat).abs().max())
    return ref


def cache_table(heads, dn, dr, dv, kv_lora, g):
    """Numbers kept per token per layer: MHA, GQA (g kv heads), MQA, MLA."""
    dk = dn + dr
    return {"MHA": heads * (dk + dv), "GQA": g * (dk + dv), "MQA": dk + dv, "MLA": kv_lora + dr, "gqa_groups": g}


def to_json(v):
    if torch.is_tensor(v):
        if v.dim() == 1:
            return [float(x) for x in v]
        if v.dim() == 3:
            return [[[float(x) for x in row] for row in m] for m in v]
        return [[float(x) for x in row] for row in v]
    return v


def lesson_ref(path):
    """A shipped lesson's --dump keys (tests/golden/lessons/NAME.ref.json), from the lesson file alone."""
    L = json.load(open(path))
    m = L["mla"]
    t = lambda v: torch.tensor(v, dtype=torch.float64)
    les = {"n": len(L["X"]), "heads": L.get("heads", 1), "q_lora_rank": m.get("q_lora_rank"),
           "kv_lora_rank": m["kv_lora_rank"], "qk_nope_head_dim": m["qk_nope_head_dim"],
           "qk_rope_head_dim": m["qk_rope_head_dim"], "v_head_dim": m["v_head_dim"],
           "rope_theta": float(m.get("rope_theta", 10000.0)), "eps": float(m.get("eps", 1e-6)), "X": t(L["X"]),
           "W_kva": t(m["W_kva"]), "W_kvb": t(m["W_kvb"]), "W_o": t(L["W_o"])}
    les["kv_a_norm"] = t(m["kv_a_norm"]) if "kv_a_norm" in m else torch.ones(m["kv_lora_rank"])
    if les["q_lora_rank"] is None:
        les["W_q"] = t(L["W_q"])
    else:
        les["W_qa"], les["W_qb"] = t(m["W_qa"]), t(m["W_qb"])
        les["q_a_norm"] = t(m["q_a_norm"]) if "q_a_norm" in m else torch.ones(les["q_lora_rank"])
    r = forward(les)
    heads = les["heads"]
    dv = les["v_head_dim"]
    head_out = r["concat"].view(les["n"], heads, dv).transpose(0, 1)
    out = {"Q": r["Q"], "K": r["K"], "V": r["V"],
           "heads": [{"scores": r["scores"][h], "weights": r["weights"][h], "output": head_out[h]} for h in range(heads)],
           "concat": r["concat"], "output": r["output"],
           "mla": {"c_KV": r["c_KV"], "k_pe": r["k_pe"], "k_pe_rot": r["k_pe_rot"], "q_nope": r["q_nope"],
                   "q_pe": r["q_pe"], "q_tilde": r["q_tilde"], "absorbed_out": r["absorbed_concat"],
                   "absorbed": [{"scores": r["absorbed_scores"][h]} for h in range(heads)]}}
    if "c_Q" in r:
        out["mla"]["c_Q"] = r["c_Q"]
    c = cache_table(heads, les["qk_nope_head_dim"], les["qk_rope_head_dim"], dv, les["kv_lora_rank"], max(1, heads // 2))
    v3 = cache_table(128, 128, 64, 128, 512, 8)
    out["mla"]["kv_cache"] = [[c[k], 2 * c[k], v3[k], 2 * 61 * v3[k]] for k in ("MHA", "GQA", "MQA", "MLA")]

    def conv(v):
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, list):
            return [conv(x) for x in v]
        return to_json(v)
    return conv(out)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--lesson":
        json.dump(lesson_ref(sys.argv[2]), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    if len(sys.argv) != 3 or sys.argv[1] != "--all":
        sys.exit(__doc__)
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for k, (name, n, d_model, heads, q_lora, kv_lora, dn, dr, dv, theta) in enumerate(CASES):
        les = make_case(name, n, d_model, heads, q_lora, kv_lora, dn, dr, dv, theta, 2400 + k)
        ref = forward(les)
        ref["cache"] = cache_table(heads, dn, dr, dv, kv_lora, max(1, heads // 2))
        assert ref["max_score_diff"] < 1e-12 and ref["max_concat_diff"] < 1e-12, name
        layer = {k2: to_json(v) for k2, v in les.items() if k2 not in ("name", "n", "d_model", "X")
                 and not (k2 == "q_lora_rank" and v is None)}
        mla = {k2: v for k2, v in layer.items() if k2 not in ("heads", "W_o", "W_q")}
        lesson = {"attnviz": 2, "title": {"en": name, "zh": name}, "tokens": ["t%d" % t for t in range(n)],
                  "X": to_json(les["X"]), "heads": heads, "mask": "causal"}
        if "W_q" in layer:
            lesson["W_q"] = layer["W_q"]
        lesson["W_o"] = layer["W_o"]
        lesson["mla"] = mla
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(lesson, f, indent=1)
            f.write("\n")
        with open(os.path.join(out, name + ".ref.json"), "w") as f:
            json.dump({k2: to_json(v) for k2, v in ref.items()}, f, indent=1)
            f.write("\n")
        print(name, "score diff", ref["max_score_diff"], "concat diff", ref["max_concat_diff"], file=sys.stderr)
    # DeepSeek-V3's real sizes (config.json of deepseek-ai/DeepSeek-V3): 61 layers, 128 heads,
    # kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128; GQA with 8 groups.
    v3 = cache_table(128, 128, 64, 128, 512, 8)
    with open(os.path.join(out, "deepseek_v3_cache.json"), "w") as f:
        json.dump(v3, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
