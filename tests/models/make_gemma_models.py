#!/usr/bin/python3
"""Small Gemma 2 and Gemma 3 model folders (issue 23's loaders gemma2 and
gemma3_text), and their reference numbers, in the layout of make_models.py
(whose folder writer, safetensors writer, random weights and reference file
this script reuses):

    OPENBLAS_CORETYPE= /usr/bin/python3 tests/models/make_gemma_models.py     # from the repository root

  tests/models/gemma2_caps/config.json, model.safetensors        as save_pretrained writes them
  tests/models/gemma3_local_global/config.json, model.safetensors
  tests/models/NAME.ref.json                                     every stage of every layer on a few prompts

No `transformers` package is installed here: the forward pass below is
written from transformers' models/gemma2/modeling_gemma2.py,
models/gemma3/modeling_gemma3.py (the file at commit
0018aa647bb13801f061e2d1027c326f531b59fb) and their configuration files
(configuration_gemma3.py at commit 008f5c8c29be84d4721dc6d1e0fcd72300580be4),
in float64:

  Gemma2Config: vocab_size 256000, hidden_size 2304, intermediate_size 9216,
      num_hidden_layers 26, num_attention_heads 8, num_key_value_heads 4,
      head_dim 256, hidden_activation "gelu_pytorch_tanh", max_position_embeddings
      8192, rms_norm_eps 1e-6, eos 1, bos 2, tie_word_embeddings True, rope_theta
      10000, attention_bias False, query_pre_attn_scalar 256, sliding_window 4096,
      final_logit_softcapping 30.0, attn_logit_softcapping 50.0; layer_types, else
      "sliding_attention" on layers with (i + 1) % 2 (the even ones)
  Gemma3TextConfig: as Gemma2Config but vocab_size 262208, max_position_embeddings
      131072, rope_theta 1e6, final_logit_softcapping None, attn_logit_softcapping
      None, rope_local_base_freq 10000 (the sliding layers' RoPE base),
      sliding_window_pattern 6: layer_types, else "sliding_attention" on layers
      with (i + 1) % 6                                           -> resolved()
  Gemma3RMSNorm.forward: x * rsqrt(mean(x^2) + eps) * (1.0 + weight)
  Gemma3Attention: scaling = query_pre_attn_scalar**-0.5; q_norm, k_norm
      (Gemma3RMSNorm over head_dim, Gemma 3 only) before apply_rotary_pos_emb;
      eager_attention_forward: matmul(query, key^T) * scaling, then with a cap
      tanh(w / c) * c, + the mask (a sliding layer's window: i - W < j <= i),
      softmax, matmul(., value); o_proj
  Gemma3DecoderLayer.forward: input_layernorm, self_attn, post_attention_layernorm,
      residual add; pre_feedforward_layernorm, mlp, post_feedforward_layernorm,
      residual add
  Gemma3MLP.forward: down_proj(act_fn(gate_proj(x)) * up_proj(x)), act_fn
      gelu_pytorch_tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  Gemma2Model.forward: normalizer = torch.tensor(hidden_size**0.5, dtype=...),
      hidden_states * normalizer (Gemma 3: Gemma3TextScaledWordEmbedding, the same
      number); the layers; self.norm; Gemma2ForCausalLM: lm_head (tied to
      embed_tokens), then tanh(logits / c) * c with final_logit_softcapping
                                                                -> forward_gemma()

A second forward pass (second_gemma) writes each formula out row by row and
head by head in Python floats (the norms as sums, RoPE as complex numbers,
the caps with math.tanh, the softmax as exp sums) and must agree to 1e-12
before anything is written.
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
import make_olmo2_models as mo                # noqa: E402  (its cross_check, run on second_gemma)

torch.set_default_dtype(torch.float64)

MODELS = [
    {
        "name": "gemma2_caps", "dtype": "F32", "seed": 2323,
        "why": "Gemma 2: sandwich (1 + w) norms, the embedding times sqrt(hidden_size), query_pre_attn_scalar 8 "
               "(not head_dim), both soft caps, sliding and full layers alternating (window 3), GQA 4/2, head_dim 8 "
               "with hidden_size 20 (not hidden / heads), gelu_pytorch_tanh gate, tied embeddings",
        "config": {"architectures": ["Gemma2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                   "attn_logit_softcapping": 4.0, "bos_token_id": 2, "cache_implementation": "hybrid",
                   "eos_token_id": 1, "final_logit_softcapping": 6.0, "head_dim": 8,
                   "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 20, "initializer_range": 0.02,
                   "intermediate_size": 36, "max_position_embeddings": 64, "model_type": "gemma2",
                   "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "pad_token_id": 0,
                   "query_pre_attn_scalar": 8, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 3,
                   "torch_dtype": "float32", "transformers_version": "4.51.0", "use_cache": True,
                   "vocab_size": 300},
        "prompts": [[2], [2, 20, 30, 40, 50, 60, 70, 299]],
    },
    {
        "name": "gemma3_local_global", "dtype": "BF16", "seed": 2333,
        "why": "Gemma 3: QK-norm (1 + w), sandwich norms, the local layers' own RoPE base (rope_local_base_freq 100), "
               "a 2 : 1 pattern (sliding_window_pattern 3) of sliding (window 4) and full layers, no caps, "
               "query_pre_attn_scalar 16 with head_dim 16, GQA 2/1, bfloat16",
        "config": {"architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                   "attn_logit_softcapping": None, "bos_token_id": 2, "cache_implementation": "hybrid",
                   "eos_token_id": [1, 106], "final_logit_softcapping": None, "head_dim": 16,
                   "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 24, "initializer_range": 0.02,
                   "intermediate_size": 40, "max_position_embeddings": 128, "model_type": "gemma3_text",
                   "num_attention_heads": 2, "num_hidden_layers": 3, "num_key_value_heads": 1, "pad_token_id": 0,
                   "query_pre_attn_scalar": 16, "rms_norm_eps": 1e-06, "rope_local_base_freq": 100.0,
                   "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": 4, "sliding_window_pattern": 3,
                   "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": True,
                   "vocab_size": 300},
        "prompts": [[2], [2, 11, 12, 13, 14, 15, 16, 17, 18]],
    },
]


def resolved(cfg):
    """Gemma2Config / Gemma3TextConfig with their defaults applied, and each layer's kind."""
    g3 = cfg["model_type"] == "gemma3_text"
    base = dict(vocab_size=262208 if g3 else 256000, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
                num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                max_position_embeddings=131072 if g3 else 8192, bos_token_id=2, eos_token_id=1)
    r = {k: cfg.get(k, v) for k, v in base.items()}
    r["norm_eps"] = cfg.get("rms_norm_eps", 1e-6)
    r["hidden_act"] = cfg.get("hidden_activation", "gelu_pytorch_tanh")
    r["tie_word_embeddings"] = cfg.get("tie_word_embeddings", True)
    r["rope_theta"] = float(cfg.get("rope_theta", 1e6 if g3 else 10000.0))
    r["rope_local_base_freq"] = float(cfg.get("rope_local_base_freq", 10000.0)) if g3 else r["rope_theta"]
    r["query_pre_attn_scalar"] = cfg.get("query_pre_attn_scalar", 256)
    r["sliding_window"] = cfg.get("sliding_window", 4096)
    r["attn_logit_softcapping"] = cfg.get("attn_logit_softcapping", None if g3 else 50.0)
    r["final_logit_softcapping"] = cfg.get("final_logit_softcapping", None if g3 else 30.0)
    pattern = cfg.get("sliding_window_pattern", 6) if g3 else 2
    r["layer_types"] = cfg.get("layer_types") or ["sliding_attention" if (i + 1) % pattern else "full_attention"
                                                  for i in range(r["num_hidden_layers"])]
    r["qk_norm"] = "head" if g3 else None
    return r


def tensor_list(m, r):
    """Gemma2ForCausalLM's / Gemma3ForCausalLM's tensors: four norms a layer; q_norm, k_norm in Gemma 3's; tied."""
    D, V, L = r["hidden_size"], r["vocab_size"], r["num_hidden_layers"]
    H, KV, hd, FF = r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"], r["intermediate_size"]
    out = [("model.embed_tokens.weight", (V, D), "emb")]
    for i in range(L):
        h = "model.layers.%d." % i
        out += [(h + "input_layernorm.weight", (D,), "ln_w"),
                (h + "self_attn.q_proj.weight", (H * hd, D), "qk"), (h + "self_attn.k_proj.weight", (KV * hd, D), "qk"),
                (h + "self_attn.v_proj.weight", (KV * hd, D), "w"), (h + "self_attn.o_proj.weight", (D, H * hd), "w")]
        if r["qk_norm"]:
            out += [(h + "self_attn.q_norm.weight", (hd,), "ln_w"), (h + "self_attn.k_norm.weight", (hd,), "ln_w")]
        out += [(h + "post_attention_layernorm.weight", (D,), "ln_w"),
                (h + "pre_feedforward_layernorm.weight", (D,), "ln_w"),
                (h + "mlp.gate_proj.weight", (FF, D), "w"), (h + "mlp.up_proj.weight", (FF, D), "w"),
                (h + "mlp.down_proj.weight", (D, FF), "w"),
                (h + "post_feedforward_layernorm.weight", (D,), "ln_w")]
    out.append(("model.norm.weight", (D,), "ln_w"))
    return out


_random_weights = mm.random_weights


def random_weights(m, r):
    """make_models.py's, with the norms' weights zero-centred as Gemma stores them (1 + 0.25 z becomes 0.25 z)."""
    out = _random_weights(m, r)
    for name, _, kind in tensor_list(m, r):
        if kind == "ln_w":
            out[name] = (out[name] - 1.0).astype(out[name].dtype)
    return out


def gemma_norm(x, w, eps):
    """Gemma3RMSNorm.forward: _norm(x) * (1.0 + weight)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + w)


def sees(r, i, n):
    """The layer's mask: causal, and on a sliding layer i - W < j <= i (create_sliding_window_causal_mask)."""
    q, kv = torch.arange(n).view(-1, 1), torch.arange(n).view(1, -1)
    ok = kv <= q
    if r["layer_types"][i] == "sliding_attention":
        ok = ok & (kv > q - r["sliding_window"])
    return ok


def forward_gemma(m, r, W, ids):
    """Gemma2ForCausalLM / Gemma3ForCausalLM on one sequence, every stage under the names of attnviz's --dump."""
    T, mat = mm.T, mm.mat
    n = len(ids)
    H, KV, hd, eps, D = r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"], r["norm_eps"], r["hidden_size"]
    groups = H // KV
    scaling = r["query_pre_attn_scalar"] ** -0.5
    normalizer = torch.tensor(D ** 0.5, dtype=torch.float64)
    hidden = T(W, "model.embed_tokens.weight")[torch.tensor(ids)] * normalizer
    rec = {"ids": ids, "X": mat(hidden), "layers": []}

    def linear(x, name):
        return F.linear(x, T(W, name + ".weight"))

    for i in range(r["num_hidden_layers"]):
        h = "model.layers.%d." % i
        sliding = r["layer_types"][i] == "sliding_attention"
        cos, sin = mm.rope_cos_sin(n, hd, r["rope_local_base_freq"] if sliding else r["rope_theta"])
        mask = torch.zeros(n, n).masked_fill(~sees(r, i, n), float("-inf"))
        lay = {}
        residual = hidden
        x = gemma_norm(hidden, T(W, h + "input_layernorm.weight"), eps)
        lay["norm1"] = mat(x)
        q, k, v = linear(x, h + "self_attn.q_proj"), linear(x, h + "self_attn.k_proj"), linear(x, h + "self_attn.v_proj")
        att = {"Q": mat(q), "K": mat(k), "V": mat(v)}
        q, k, v = q.view(n, H, hd).transpose(0, 1), k.view(n, KV, hd).transpose(0, 1), v.view(n, KV, hd).transpose(0, 1)
        if r["qk_norm"]:
            q = gemma_norm(q, T(W, h + "self_attn.q_norm.weight"), eps)   # self.q_norm(query_states)
            k = gemma_norm(k, T(W, h + "self_attn.k_norm.weight"), eps)
            att["Q_norm"] = mat(q.transpose(0, 1).reshape(n, -1))
            att["K_norm"] = mat(k.transpose(0, 1).reshape(n, -1))
        q = (q * cos) + (mm.rotate_half(q) * sin)                          # apply_rotary_pos_emb
        k = (k * cos) + (mm.rotate_half(k) * sin)
        att["Q_rot"] = mat(q.transpose(0, 1).reshape(n, -1))
        att["K_rot"] = mat(k.transpose(0, 1).reshape(n, -1))
        key_states, value_states = mm.repeat_kv(k, groups), mm.repeat_kv(v, groups)
        scores = torch.matmul(q, key_states.transpose(1, 2))
        w = scores * scaling
        if r["attn_logit_softcapping"]:
            c = r["attn_logit_softcapping"]
            w = torch.tanh(w / c) * c
        capped = w
        w = F.softmax(w + mask, dim=-1)
        out = torch.matmul(w, value_states)
        att["heads"] = [{"kv_head": j // groups, "scores": mat(scores[j]), "weights": mat(w[j]),
                         "output": mat(out[j])} for j in range(H)]
        if r["attn_logit_softcapping"]:
            for j in range(H):
                att["heads"][j]["capped"] = mat(capped[j])
        concat = out.transpose(0, 1).reshape(n, -1)
        att["concat"] = mat(concat)
        a = linear(concat, h + "self_attn.o_proj")
        att["output"] = mat(a)
        lay.update(h=H, kv_heads=KV, d_k=hd, d_v=hd, scale_factor=scaling)
        lay["attn"] = att
        x = gemma_norm(a, T(W, h + "post_attention_layernorm.weight"), eps)
        lay["norm1_after"] = mat(x)
        hidden = residual + x
        lay["residual1"] = mat(hidden)
        residual = hidden
        x = gemma_norm(hidden, T(W, h + "pre_feedforward_layernorm.weight"), eps)
        lay["norm2"] = mat(x)
        gate, up = linear(x, h + "mlp.gate_proj"), linear(x, h + "mlp.up_proj")
        lay["ffn_hidden"], lay["ffn_gate"] = mat(gate), mat(up)
        act = mm.gelu_new(gate) * up                                       # act_fn(gate_proj(x)) * up_proj(x)
        lay["ffn_act"] = mat(act)
        f = linear(act, h + "mlp.down_proj")
        lay["ffn_out"] = mat(f)
        x = gemma_norm(f, T(W, h + "post_feedforward_layernorm.weight"), eps)
        lay["norm2_after"] = mat(x)
        hidden = residual + x
        lay["residual2"] = lay["output"] = mat(hidden)
        rec["layers"].append(lay)
    final = gemma_norm(hidden, T(W, "model.norm.weight"), eps)
    logits = F.linear(final, T(W, "model.embed_tokens.weight"))           # lm_head, tied
    if r["final_logit_softcapping"]:
        c = r["final_logit_softcapping"]
        logits = torch.tanh(logits / c) * c
    rec.update(final_norm=mat(final), logits=mat(logits))
    return rec


def second_gemma(m, r, W, ids):
    """The same numbers in Python floats: each norm as sums, RoPE as complex numbers, caps by math.tanh, exp sums."""
    T = mm.T
    n, H, KV, hd, eps, D = (len(ids), r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"], r["norm_eps"],
                            r["hidden_size"])

    def norm(x, w):
        return torch.tensor([[c / math.sqrt(sum(e * e for e in row) / len(row) + eps) * (1.0 + float(w[j]))
                              for j, c in enumerate(row)] for row in x.tolist()])

    def lin(x, name):
        return x @ T(W, name + ".weight").t()

    def gelu(z):
        return 0.5 * z * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z ** 3)))

    hidden = torch.stack([T(W, "model.embed_tokens.weight")[t] for t in ids]) * math.sqrt(D)
    got = {"layers": []}
    for i in range(r["num_hidden_layers"]):
        h = "model.layers.%d." % i
        sliding = r["layer_types"][i] == "sliding_attention"
        base = r["rope_local_base_freq"] if sliding else r["rope_theta"]
        x = norm(hidden, T(W, h + "input_layernorm.weight"))
        q, k, v = lin(x, h + "self_attn.q_proj"), lin(x, h + "self_attn.k_proj"), lin(x, h + "self_attn.v_proj")
        if r["qk_norm"]:
            q = torch.cat([norm(q[:, c:c + hd], T(W, h + "self_attn.q_norm.weight")) for c in range(0, H * hd, hd)], 1)
            k = torch.cat([norm(k[:, c:c + hd], T(W, h + "self_attn.k_norm.weight")) for c in range(0, KV * hd, hd)], 1)
        half = hd // 2
        turn = [[cmath.exp(1j * t * base ** (-2 * c / hd)) for c in range(half)] for t in range(n)]
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
                keys = [u for u in range(t + 1) if not sliding or u > t - r["sliding_window"]]
                s = [float(qr[t, j * hd:(j + 1) * hd] @ kr[u, g * hd:(g + 1) * hd]) / math.sqrt(r["query_pre_attn_scalar"])
                     for u in keys]
                if r["attn_logit_softcapping"]:
                    c = r["attn_logit_softcapping"]
                    s = [c * math.tanh(z / c) for z in s]
                mx = max(s)
                e = [math.exp(z - mx) for z in s]
                tot = sum(e)
                for u, eu in zip(keys, e):
                    concat[t, j * hd:(j + 1) * hd] += eu / tot * v[u, g * hd:(g + 1) * hd]
        r1 = hidden + norm(lin(concat, h + "self_attn.o_proj"), T(W, h + "post_attention_layernorm.weight"))
        x = norm(r1, T(W, h + "pre_feedforward_layernorm.weight"))
        act = torch.tensor([[gelu(z) for z in row] for row in lin(x, h + "mlp.gate_proj").tolist()]) * lin(x, h + "mlp.up_proj")
        hidden = r1 + norm(lin(act, h + "mlp.down_proj"), T(W, h + "post_feedforward_layernorm.weight"))
        got["layers"].append({"residual1": r1, "output": hidden})
    logits = norm(hidden, T(W, "model.norm.weight")) @ T(W, "model.embed_tokens.weight").t()
    if r["final_logit_softcapping"]:
        c = r["final_logit_softcapping"]
        logits = torch.tensor([[c * math.tanh(z / c) for z in row] for row in logits.tolist()])
    got["logits"] = logits
    return got


def cross_check(m, r, W, rec):
    """make_olmo2_models.py's check (residual1, output of each layer, the logits), against second_gemma."""
    mo.second_olmo2 = second_gemma
    mo.cross_check(m, r, W, rec)


def main():
    mm.tensor_list, mm.random_weights, mm.forward_llama, mm.cross_check = (tensor_list, random_weights, forward_gemma,
                                                                          cross_check)
    for m in MODELS:
        r = resolved(m["config"])
        values, files, entries = mm.write_folder(m, r, os.path.join(HERE, m["name"]))
        mm.write_reference(m, mm.reference(m, r, values, files, entries))


if __name__ == "__main__":
    main()
