#!/usr/bin/python3
"""A small OLMo 2 model folder (issue 23's loader), and its reference numbers,
in the layout of make_models.py (whose folder writer, safetensors writer,
random weights and reference file this script reuses):

    OPENBLAS_CORETYPE= /usr/bin/python3 tests/models/make_olmo2_models.py     # from the repository root

  tests/models/olmo2_qknorm_after/config.json, model.safetensors   as save_pretrained writes them
  tests/models/olmo2_qknorm_after.ref.json                         every stage of every layer on a few prompts

No `transformers` package is installed here: the forward pass below is
written from transformers' models/olmo2/modeling_olmo2.py (the file at commit
000c33fdfde12e1ffafbfcdb3c926df5727a00b6) and configuration_olmo2.py (commit
008e574391258935f3ecc3035c882e73bbcac419), in float64:

  Olmo2Config: vocab_size 50304, hidden_size 4096, intermediate_size 11008,
      num_hidden_layers 32, num_attention_heads 32, num_key_value_heads None
      (= num_attention_heads), hidden_act "silu", max_position_embeddings 2048,
      bos None, eos 50279, tie_word_embeddings False, attention_bias False,
      rms_norm_eps 1e-5                                         -> resolved()
  Olmo2RMSNorm.forward: variance = hidden_states.pow(2).mean(-1, keepdim=True);
      hidden_states * torch.rsqrt(variance + eps); self.weight * hidden_states
  Olmo2Attention.__init__: q_norm = Olmo2RMSNorm(num_attention_heads * head_dim),
      k_norm = Olmo2RMSNorm(num_key_value_heads * head_dim)
  Olmo2Attention.forward:
      query_states = self.q_norm(self.q_proj(hidden_states))
      key_states = self.k_norm(self.k_proj(hidden_states))
      value_states = self.v_proj(hidden_states)
      query_states = query_states.view(hidden_shape).transpose(1, 2)   (and k, v)
      query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
      eager_attention_forward: matmul(query, key_states^T) * scaling + causal_mask, softmax, matmul(., value)
      attn_output = self.o_proj(attn_output.reshape(*input_shape, -1))
  Olmo2DecoderLayer.forward:
      residual = hidden_states
      hidden_states, _ = self.self_attn(hidden_states=hidden_states, ...)
      hidden_states = self.post_attention_layernorm(hidden_states)
      hidden_states = residual + hidden_states
      residual = hidden_states
      hidden_states = self.mlp(hidden_states)         (down_proj(act_fn(gate_proj(x)) * up_proj(x)))
      hidden_states = self.post_feedforward_layernorm(hidden_states)
      hidden_states = residual + hidden_states
  Olmo2Model.forward: embed_tokens, the layers, self.norm; Olmo2ForCausalLM: lm_head
                                                                -> forward_olmo2()

A second forward pass (second_olmo2) writes each formula out row by row and
head by head in Python floats (the norms as sums, RoPE as complex numbers, the
softmax as exp sums) and must agree to 1e-12 before anything is written.
"""

import cmath
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_models as mm                      # noqa: E402

torch.set_default_dtype(torch.float64)

MODELS = [
    {
        "name": "olmo2_qknorm_after", "dtype": "F32", "seed": 2313,
        "why": "OLMo 2: norms after each sublayer (post_attention_layernorm, post_feedforward_layernorm), "
               "q_norm and k_norm over the whole projection, GQA 4/2, untied lm_head, rope_theta 500000",
        "config": {"architectures": ["Olmo2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                   "bos_token_id": None, "eos_token_id": 299, "hidden_act": "silu", "hidden_size": 24,
                   "initializer_range": 0.02, "intermediate_size": 40, "max_position_embeddings": 64,
                   "model_type": "olmo2", "num_attention_heads": 4, "num_hidden_layers": 2,
                   "num_key_value_heads": 2, "pad_token_id": 1, "rms_norm_eps": 1e-06, "rope_scaling": None,
                   "rope_theta": 500000, "tie_word_embeddings": False, "torch_dtype": "float32",
                   "transformers_version": "4.51.0", "use_cache": True, "vocab_size": 300},
        "prompts": [[7], [7, 20, 30, 40, 50, 60, 70, 299]],
    },
]


def resolved(cfg):
    """Olmo2Config with its defaults applied (head_dim: getattr(config, "head_dim", hidden // heads))."""
    base = dict(vocab_size=50304, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                num_attention_heads=32, max_position_embeddings=2048, bos_token_id=None, eos_token_id=50279)
    r = {k: cfg.get(k, v) for k, v in base.items()}
    kv = cfg.get("num_key_value_heads")
    r["num_key_value_heads"] = kv if kv is not None else r["num_attention_heads"]
    hd = cfg.get("head_dim")
    r["head_dim"] = hd if hd is not None else r["hidden_size"] // r["num_attention_heads"]
    r["norm_eps"] = cfg.get("rms_norm_eps", 1e-5)
    r["hidden_act"] = cfg.get("hidden_act", "silu")
    r["tie_word_embeddings"] = cfg.get("tie_word_embeddings", False)
    r["rope_theta"] = float(cfg.get("rope_theta", 10000.0))
    r["qkv_bias"] = r["o_bias"] = cfg.get("attention_bias", False)
    r["qk_norm"] = "projection"
    return r


def tensor_list(m, r):
    """Olmo2ForCausalLM's tensors: no input_layernorm; post_attention_ and post_feedforward_layernorm."""
    D, V, L = r["hidden_size"], r["vocab_size"], r["num_hidden_layers"]
    H, KV, hd, FF = r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"], r["intermediate_size"]
    out = [("model.embed_tokens.weight", (V, D), "emb")]
    for i in range(L):
        h = "model.layers.%d." % i
        out += [(h + "self_attn.q_proj.weight", (H * hd, D), "qk"), (h + "self_attn.k_proj.weight", (KV * hd, D), "qk"),
                (h + "self_attn.v_proj.weight", (KV * hd, D), "w"), (h + "self_attn.o_proj.weight", (D, H * hd), "w"),
                (h + "self_attn.q_norm.weight", (H * hd,), "ln_w"), (h + "self_attn.k_norm.weight", (KV * hd,), "ln_w"),
                (h + "post_attention_layernorm.weight", (D,), "ln_w"),
                (h + "mlp.gate_proj.weight", (FF, D), "w"), (h + "mlp.up_proj.weight", (FF, D), "w"),
                (h + "mlp.down_proj.weight", (D, FF), "w"),
                (h + "post_feedforward_layernorm.weight", (D,), "ln_w")]
    out.append(("model.norm.weight", (D,), "ln_w"))
    if not r["tie_word_embeddings"]:
        out.append(("lm_head.weight", (V, D), "emb"))
    return out


def forward_olmo2(m, r, W, ids):
    """Olmo2ForCausalLM on one sequence, every stage under the names of attnviz's --dump of a model."""
    T, mat, rms_norm = mm.T, mm.mat, mm.rms_norm
    n = len(ids)
    H, KV, hd, eps = r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"], r["norm_eps"]
    groups = H // KV
    scaling = hd ** -0.5
    hidden = T(W, "model.embed_tokens.weight")[torch.tensor(ids)]
    rec = {"ids": ids, "X": mat(hidden), "layers": []}
    cos, sin = mm.rope_cos_sin(n, hd, r["rope_theta"])
    mask = torch.triu(torch.full((n, n), torch.finfo(torch.float64).min), diagonal=1)

    def linear(x, name):
        return F.linear(x, T(W, name + ".weight"))

    for i in range(r["num_hidden_layers"]):
        h = "model.layers.%d." % i
        lay = {}
        residual = hidden
        q = linear(hidden, h + "self_attn.q_proj")                     # self.q_proj(hidden_states)
        k = linear(hidden, h + "self_attn.k_proj")
        v = linear(hidden, h + "self_attn.v_proj")
        att = {"Q": mat(q), "K": mat(k), "V": mat(v)}
        q = rms_norm(q, T(W, h + "self_attn.q_norm.weight"), eps)       # self.q_norm(...): the whole projection
        k = rms_norm(k, T(W, h + "self_attn.k_norm.weight"), eps)
        att["Q_norm"], att["K_norm"] = mat(q), mat(k)
        q = q.view(n, -1, hd).transpose(0, 1)                           # .view(hidden_shape).transpose(1, 2)
        k = k.view(n, -1, hd).transpose(0, 1)
        v = v.view(n, -1, hd).transpose(0, 1)
        q = (q * cos) + (mm.rotate_half(q) * sin)                       # apply_rotary_pos_emb
        k = (k * cos) + (mm.rotate_half(k) * sin)
        att["Q_rot"] = mat(q.transpose(0, 1).reshape(n, -1))
        att["K_rot"] = mat(k.transpose(0, 1).reshape(n, -1))
        key_states, value_states = mm.repeat_kv(k, groups), mm.repeat_kv(v, groups)
        scores = torch.matmul(q, key_states.transpose(1, 2))
        w = F.softmax(scores * scaling + mask, dim=-1)
        out = torch.matmul(w, value_states)
        att["heads"] = [{"kv_head": j // groups, "scores": mat(scores[j]), "weights": mat(w[j]),
                         "output": mat(out[j])} for j in range(H)]
        concat = out.transpose(0, 1).reshape(n, -1)
        att["concat"] = mat(concat)
        a = linear(concat, h + "self_attn.o_proj")
        att["output"] = mat(a)
        lay.update(h=H, kv_heads=KV, d_k=hd, d_v=hd, scale_factor=scaling)
        lay["attn"] = att
        x = rms_norm(a, T(W, h + "post_attention_layernorm.weight"), eps)   # self.post_attention_layernorm
        lay["norm1"] = mat(x)
        hidden = residual + x
        lay["residual1"] = mat(hidden)
        residual = hidden
        gate = linear(hidden, h + "mlp.gate_proj")                      # Olmo2MLP.forward
        up = linear(hidden, h + "mlp.up_proj")
        lay["ffn_hidden"], lay["ffn_gate"] = mat(gate), mat(up)
        act = F.silu(gate) * up
        lay["ffn_act"] = mat(act)
        f = linear(act, h + "mlp.down_proj")
        lay["ffn_out"] = mat(f)
        x = rms_norm(f, T(W, h + "post_feedforward_layernorm.weight"), eps)  # self.post_feedforward_layernorm
        lay["norm2"] = mat(x)
        hidden = residual + x
        lay["residual2"] = lay["output"] = mat(hidden)
        rec["layers"].append(lay)
    final = rms_norm(hidden, T(W, "model.norm.weight"), eps)          # Olmo2Model: self.norm; then lm_head
    rec.update(final_norm=mat(final), logits=mat(F.linear(final, T(W, "lm_head.weight"))))
    return rec


def second_olmo2(m, r, W, ids):
    """The same numbers in Python floats: each row's norm as a sum, RoPE as complex numbers, each softmax as exp sums."""
    T = mm.T
    n, H, KV, hd, eps = len(ids), r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"], r["norm_eps"]

    def norm(x, w):
        rows = x.tolist()
        return torch.tensor([[c / math.sqrt(sum(e * e for e in row) / len(row) + eps) * float(w[j])
                              for j, c in enumerate(row)] for row in rows])

    def lin(x, name):
        return x @ T(W, name + ".weight").t()

    hidden = torch.stack([T(W, "model.embed_tokens.weight")[t] for t in ids])
    got = {"layers": []}
    for i in range(r["num_hidden_layers"]):
        h = "model.layers.%d." % i
        q = norm(lin(hidden, h + "self_attn.q_proj"), T(W, h + "self_attn.q_norm.weight"))
        k = norm(lin(hidden, h + "self_attn.k_proj"), T(W, h + "self_attn.k_norm.weight"))
        v = lin(hidden, h + "self_attn.v_proj")
        # RoPE as complex numbers: column c and c + hd/2 of a head are z = a + ib, turned by e^(i t theta^(-2c/hd))
        half = hd // 2
        turn = [[cmath.exp(1j * t * r["rope_theta"] ** (-2 * c / hd)) for c in range(half)] for t in range(n)]
        qr, kr = q.clone(), k.clone()
        for src, dst in ((q, qr), (k, kr)):
            for t in range(n):
                for c0 in range(0, src.shape[1], hd):
                    for c in range(half):
                        z = complex(float(src[t, c0 + c]), float(src[t, c0 + c + half])) * turn[t][c]
                        dst[t, c0 + c], dst[t, c0 + c + half] = z.real, z.imag
        concat = torch.zeros(n, H * hd)
        for j in range(H):
            g = j // (H // KV)
            for t in range(n):
                s = [float(qr[t, j * hd:(j + 1) * hd] @ kr[u, g * hd:(g + 1) * hd]) / math.sqrt(hd) for u in range(t + 1)]
                mx = max(s)
                e = [math.exp(z - mx) for z in s]
                tot = sum(e)
                for u in range(t + 1):
                    concat[t, j * hd:(j + 1) * hd] += e[u] / tot * v[u, g * hd:(g + 1) * hd]
        r1 = hidden + norm(lin(concat, h + "self_attn.o_proj"), T(W, h + "post_attention_layernorm.weight"))
        gate, up = lin(r1, h + "mlp.gate_proj"), lin(r1, h + "mlp.up_proj")
        act = torch.tensor([[z / (1 + math.exp(-z)) for z in row] for row in gate.tolist()]) * up
        hidden = r1 + norm(lin(act, h + "mlp.down_proj"), T(W, h + "post_feedforward_layernorm.weight"))
        got["layers"].append({"residual1": r1, "output": hidden})
    got["logits"] = norm(hidden, T(W, "model.norm.weight")) @ T(W, "lm_head.weight").t()
    return got


def cross_check(m, r, W, rec):
    got = second_olmo2(m, r, W, rec["ids"])
    name = "%s %s" % (m["name"], rec["ids"])
    for i, (g, lay) in enumerate(zip(got["layers"], rec["layers"])):
        mm.agree("%s layer %d residual1" % (name, i), g["residual1"], lay["residual1"])
        mm.agree("%s layer %d output" % (name, i), g["output"], lay["output"])
    mm.agree(name + " logits", got["logits"], rec["logits"])


def main():
    mm.tensor_list, mm.forward_llama, mm.cross_check = tensor_list, forward_olmo2, cross_check
    for m in MODELS:
        r = resolved(m["config"])
        values, files, entries = mm.write_folder(m, r, os.path.join(HERE, m["name"]))
        mm.write_reference(m, mm.reference(m, r, values, files, entries))


if __name__ == "__main__":
    main()
