#!/usr/bin/python3
"""Small DeepSeek-V3 model folders (multi-head latent attention, dense layers;
issue 24's loader) and their reference numbers, in the layout of
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
      first_k_dense_replace), residual
  DeepseekV3Model.forward: embed_tokens, the layers, self.norm; DeepseekV3ForCausalLM: lm_head
                                                                -> forward_deepseek()

A second forward pass (second_deepseek) writes the norms as row sums, the
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
                (h + "post_attention_layernorm.weight", (D,), "ln_w"),
                (h + "mlp.gate_proj.weight", (FF, D), "w"), (h + "mlp.up_proj.weight", (FF, D), "w"),
                (h + "mlp.down_proj.weight", (D, FF), "w")]
    out.append(("model.norm.weight", (D,), "ln_w"))
    if not r["tie_word_embeddings"]:
        out.append(("lm_head.weight", (V, D), "emb"))
    return out


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
        f = mm.llama_mlp(m, r, W, i, x, lay)          # DeepseekV3MLP.forward is LlamaMLP's: down(silu(gate)·up)
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
        ("moe", {"first_k_dense_replace": 1},
         "config.json: first_k_dense_replace: 1: layer 1 and those after it would be a mixture of experts"),
        ("interleave", {"rope_interleave": False}, "config.json: rope_interleave: false: attnviz turns DeepSeek's"),
        ("qlora_type", {"q_lora_rank": "6"}, "config.json: q_lora_rank: expected a size from 1 to 65536"),
        ("rope_odd", {"qk_rope_head_dim": 3}, "config.json: qk_rope_head_dim: RoPE turns pairs of numbers"),
        ("linear", {"rope_scaling": {"rope_type": "linear", "factor": 4.0}},
         "config.json: rope_scaling: attnviz turns DeepSeek's q_pe and k_pe with plain RoPE or YaRN only"),
        ("bias", {"attention_bias": True}, "config.json: attention_bias: true: attnviz computes DeepSeek's latent"),
        ("shapes", {"kv_lora_rank": 5}, "model.safetensors: tensor \"model.layers.0.self_attn.kv_a_proj_with_\u2026\" has shape "
         "[8, 16], but config.json's sizes (kv_lora_rank + qk_rope_head_dim, hidden_size) make it [9, 16]"),
    ]
    lines = ["# tests/models/bad_deepseek (make_deepseek_models.py): FOLDER<TAB>words its refusal says"]
    for name, edit, words in cases:
        d = os.path.join(top, name)
        os.makedirs(d)
        cfg = dict(MODELS[0]["config"], **edit)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2, sort_keys=True)
            f.write("\n")
        if name == "shapes":
            shutil.copy(os.path.join(src, "model.safetensors"), d)
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
