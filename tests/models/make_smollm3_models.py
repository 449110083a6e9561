#!/usr/bin/python3
"""Small SmolLM3 model folders (issue 23's loader: NoPE layers), and their
reference numbers, in the layout of make_models.py (whose folder writer,
safetensors writer, random weights, tensor list and reference file this script
reuses):

    OPENBLAS_CORETYPE= /usr/bin/python3 tests/models/make_smollm3_models.py     # from the repository root

  tests/models/NAME/config.json, model.safetensors   as save_pretrained writes them
  tests/models/NAME.ref.json                          every stage of every layer on a few prompts

The folders (tests/models/README.md):

  smollm3_nope_interval   smollm3, no_rope_layers absent and no_rope_layer_interval 2: layers 1 and 3
                          of 4 are NoPE; GQA 4/2; tied embeddings; rope_theta left to the class's
                          default (2000000)
  smollm3_nope_list       smollm3, no_rope_layers [1, 0, 1] (longer than the 2 layers: only the first
                          2 are read): layer 1 NoPE; MHA 2/2 (num_key_value_heads given), an untied
                          lm_head, rope_theta 10000, BF16 weights

No `transformers` package is installed here: the forward pass below is
written from transformers' models/smollm3/modeling_smollm3.py (the file at
commit 00d4b3d2142cb4ced2f51b90614b5d26bc045015) and configuration_smollm3.py
(commit 008e574391258935f3ecc3035c882e73bbcac419), in float64:

  SmolLM3Config: vocab_size 128256, hidden_size 2048, intermediate_size 11008,
      num_hidden_layers 36, num_attention_heads 16, num_key_value_heads 4,
      hidden_act "silu", max_position_embeddings 32768, rms_norm_eps 1e-6,
      bos 128000, eos 128001, tie_word_embeddings True, attention_bias False,
      default_theta 2000000.0, no_rope_layer_interval 4;
      __post_init__: if self.no_rope_layers is None: self.no_rope_layers =
          [int((layer_idx + 1) % self.no_rope_layer_interval != 0) for layer_idx in range(num_hidden_layers)]
                                                                -> resolved()
  SmolLM3Attention.__init__: self.use_rope = config.no_rope_layers[layer_idx]
  SmolLM3Attention.forward:
      query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)   (and k, v)
      if self.use_rope:
          cos, sin = ...; query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
      eager_attention_forward: repeat_kv, matmul(query, key^T) * scaling + causal_mask, softmax, matmul(., value)
      attn_output = self.o_proj(attn_output.reshape(*input_shape, -1))
  SmolLM3DecoderLayer, SmolLM3MLP, SmolLM3RMSNorm: LLaMA's (input_layernorm, residual,
      post_attention_layernorm, down_proj(act_fn(gate_proj(x)) * up_proj(x)), residual)
                                                                -> forward_smollm3()

Cross-check (aborts on disagreement, 1e-12): forward_smollm3 with no NoPE
layer equals make_models.py's forward_llama (the LLaMA layer it shares), and
with every layer NoPE equals make_models.py's second forward (each formula
written out token by token) with its pairs turned by cos 1 and sin 0 (its
math module's cos and sin replaced while it runs).
"""

import math
import os
import sys
import types

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_models as mm                      # noqa: E402

torch.set_default_dtype(torch.float64)

COMMON = {"architectures": ["SmolLM3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
          "hidden_act": "silu", "initializer_range": 0.02, "mlp_bias": False, "model_type": "smollm3",
          "rms_norm_eps": 1e-06, "rope_scaling": None, "torch_dtype": "float32",
          "transformers_version": "4.54.0", "use_cache": True, "use_sliding_window": False}
MODELS = [
    {
        "name": "smollm3_nope_interval", "dtype": "F32", "seed": 2381,
        "why": "SmolLM3: no_rope_layer_interval 2 (layers 1 and 3 NoPE), GQA 4/2, tied, the default rope_theta",
        "config": dict(COMMON, bos_token_id=1, eos_token_id=2, hidden_size=16, intermediate_size=24,
                       max_position_embeddings=64, no_rope_layer_interval=2, num_attention_heads=4,
                       num_hidden_layers=4, num_key_value_heads=2, pad_token_id=None, vocab_size=280),
        "prompts": [[1, 40, 41], [1, 9, 8, 7, 6, 5, 4, 200]],
    },
    {
        "name": "smollm3_nope_list", "dtype": "BF16", "seed": 2382,
        "why": "SmolLM3: no_rope_layers [1, 0, 1] on 2 layers (layer 1 NoPE), MHA, untied, rope_theta 10000",
        "config": dict(COMMON, bos_token_id=None, eos_token_id=[3, 4], head_dim=6, hidden_size=12,
                       intermediate_size=20, max_position_embeddings=32, no_rope_layers=[1, 0, 1],
                       num_attention_heads=2, num_hidden_layers=2, num_key_value_heads=2, rope_theta=10000.0,
                       tie_word_embeddings=False, vocab_size=300),
        "prompts": [[5], [5, 17, 33, 99, 250, 251]],
    },
]

_resolved, _forward_llama, _second_forward = mm.resolved, mm.forward_llama, mm.second_forward


def resolved(cfg):
    """SmolLM3Config's numbers: LlamaConfig's with SmolLM3's defaults, and use_rope per layer."""
    c = dict(cfg, model_type="llama")
    c.setdefault("num_key_value_heads", 4)
    r = _resolved(c)
    for k, v in (("vocab_size", 128256), ("hidden_size", 2048), ("intermediate_size", 11008),
                 ("num_hidden_layers", 36), ("num_attention_heads", 16), ("max_position_embeddings", 32768),
                 ("bos_token_id", 128000), ("eos_token_id", 128001)):
        r[k] = cfg.get(k, v)
    r["tie_word_embeddings"] = cfg.get("tie_word_embeddings", True)
    r["rope_theta"] = float(cfg.get("rope_theta", 2000000.0))
    rope = cfg.get("no_rope_layers")
    if rope is None:
        every = cfg.get("no_rope_layer_interval", 4)
        rope = [int((i + 1) % every != 0) for i in range(r["num_hidden_layers"])]
    r["use_rope"] = [bool(rope[i]) for i in range(r["num_hidden_layers"])]
    return r


def forward_smollm3(m, r, W, ids):
    """SmolLM3ForCausalLM on one sequence (batch of one, the batch axis left out)."""
    T, mat, rms_norm = mm.T, mm.mat, mm.rms_norm
    n = len(ids)
    H, KV, hd, eps = r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"], r["norm_eps"]
    groups, scaling = H // KV, hd ** -0.5
    hidden = T(W, "model.embed_tokens.weight")[torch.tensor(ids)]
    rec = {"ids": ids, "X": mat(hidden), "layers": []}
    cos, sin = mm.rope_cos_sin(n, hd, r["rope_theta"])
    mask = torch.triu(torch.full((n, n), torch.finfo(torch.float64).min), diagonal=1)

    def linear(x, name, bias):
        return F.linear(x, T(W, name + ".weight"), T(W, name + ".bias") if bias else None)

    for i in range(r["num_hidden_layers"]):
        h = "model.layers.%d." % i
        lay = {}
        residual = hidden
        x = rms_norm(hidden, T(W, h + "input_layernorm.weight"), eps)
        lay["norm1"] = mat(x)
        q = linear(x, h + "self_attn.q_proj", r["qkv_bias"])
        k = linear(x, h + "self_attn.k_proj", r["qkv_bias"])
        v = linear(x, h + "self_attn.v_proj", r["qkv_bias"])
        att = {"Q": mat(q), "K": mat(k), "V": mat(v)}
        q = q.view(n, -1, hd).transpose(0, 1)
        k = k.view(n, -1, hd).transpose(0, 1)
        v = v.view(n, -1, hd).transpose(0, 1)
        if r["use_rope"][i]:                                           # if self.use_rope:
            q = (q * cos) + (mm.rotate_half(q) * sin)                  # apply_rotary_pos_emb
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
        a = linear(concat, h + "self_attn.o_proj", r["o_bias"])
        att["output"] = mat(a)
        lay.update(h=H, kv_heads=KV, d_k=hd, d_v=hd, scale_factor=scaling, attn=att)
        hidden = residual + a
        lay["residual1"] = mat(hidden)
        residual = hidden
        x = rms_norm(hidden, T(W, h + "post_attention_layernorm.weight"), eps)
        lay["norm2"] = mat(x)
        f = mm.llama_mlp(m, r, W, i, x, lay)
        lay["ffn_out"] = mat(f)
        hidden = residual + f
        lay["output"] = mat(hidden)
        rec["layers"].append(lay)
    hidden = rms_norm(hidden, T(W, "model.norm.weight"), eps)
    rec["final_norm"] = mat(hidden)
    head = "model.embed_tokens.weight" if r["tie_word_embeddings"] else "lm_head.weight"
    rec["logits"] = mat(F.linear(hidden, T(W, head)))
    return rec


def cross_check(m, r, W, rec):
    """All RoPE: make_models.py's LLaMA forward; all NoPE: its second forward turning by 0."""
    ids, name = rec["ids"], "%s %s" % (m["name"], rec["ids"])
    L = r["num_hidden_layers"]
    mine = forward_smollm3(m, dict(r, use_rope=[True] * L), W, ids)
    theirs = _forward_llama(m, r, W, ids)
    for key in ("final_norm", "logits"):
        mm.agree(name + " all RoPE " + key, mine[key], theirs[key])
    for i in range(L):
        mm.agree(name + " all RoPE layer %d output" % i, mine["layers"][i]["output"], theirs["layers"][i]["output"])
    mine = forward_smollm3(m, dict(r, use_rope=[False] * L), W, ids)
    mm.math = types.SimpleNamespace(**dict(vars(math), cos=lambda t: 1.0, sin=lambda t: 0.0))
    theirs = _second_forward(m, r, W, ids)                 # its pairs turned by cos 1, sin 0: not at all
    mm.math = math
    for i in range(L):
        mm.agree(name + " all NoPE layer %d output" % i, mine["layers"][i]["output"], theirs["layers"][i]["output"])
    mm.agree(name + " all NoPE logits", mine["logits"], theirs["logits"])
    if all(r["use_rope"]) or not any(r["use_rope"]):
        sys.exit(name + ": the model must mix RoPE and NoPE layers")


def main():
    mm.forward_llama, mm.cross_check = forward_smollm3, cross_check
    for m in MODELS:
        r = resolved(m["config"])
        values, files, entries = mm.write_folder(m, r, os.path.join(HERE, m["name"]))
        mm.write_reference(m, mm.reference(m, r, values, files, entries))


if __name__ == "__main__":
    main()
