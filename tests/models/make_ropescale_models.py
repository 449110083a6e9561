#!/usr/bin/python3
"""Small model folders whose RoPE is scaled or partial (issue 23 §2), and
their reference numbers, in the layout of make_models.py (whose folder
writer, weights, tensor list and forward pass this script reuses):

    /usr/bin/python3 tests/models/make_ropescale_models.py     # from the repository root

  tests/models/NAME/config.json, model.safetensors   as save_pretrained writes them
  tests/models/NAME.ref.json                          every stage of every layer on a few prompts

The folders (tests/models/README.md):

  llama_yarn_partial     llama, the old layout: "rope_scaling": {"rope_type": "yarn", "factor": 4,
                         "original_max_position_embeddings": 64} and a top-level
                         "partial_rotary_factor": 0.5 (8 of head_dim 16 turn), rope_theta 100, GQA 4/2
  qwen3_llama3_params    qwen3, the new layout: "rope_parameters": {"rope_type": "llama3",
                         "rope_theta": 10000, "factor": 8, "low_freq_factor": 1, "high_freq_factor": 8,
                         "original_max_position_embeddings": 256}, QK-norm, head_dim 8
  qwen2_dynamic          qwen2, "rope_scaling": {"type": "dynamic", "factor": 2} (the old "type"
                         key), max_position_embeddings 4: a prompt of 3 keeps the base, one of 7 grows it
  llama_linear_params    llama, "rope_parameters": {"rope_type": "linear", "factor": 2,
                         "rope_theta": 500, "partial_rotary_factor": 0.75} (6 of head_dim 8 turn)

The reference follows transformers (modeling_rope_utils.py, modeling_llama.py):
  inv_freq and attention_factor as _compute_{linear_scaling,dynamic_ntk,yarn,llama3}_parameters
  compute them (tests/golden/make_reference_ropescale.py's rope_params, the same lines named there;
  dynamic NTK with seq_len = max(position_ids) + 1, dynamic_rope_update's, the prompt's length);
  LlamaRotaryEmbedding.forward: emb = cat(freqs, freqs); cos = emb.cos() * attention_scaling,
  sin = emb.sin() * attention_scaling; apply_rotary_pos_emb: q * cos + rotate_half(q) * sin, and for
  partial RoPE modeling_glm.py's form: q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:],
  cat(q_rot * cos + rotate_half(q_rot) * sin, q_pass). make_models.py's forward_llama runs the
  layers; its rope_cos_sin and rotate_half are replaced here by the scaled, partial ones (on the
  pass-through columns cos = 1 and sin = 0, which is the concatenation above).
Cross-check (aborts on disagreement): each layer's Q_rot and K_rot again from its Q and K with
make_reference_ropescale.py's rope(), written independently (complex numbers for the pairs).
"""

import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "golden"))
import make_models as mm                      # noqa: E402
import make_reference_ropescale as rs         # noqa: E402

torch.set_default_dtype(torch.float64)

COMMON = {"attention_dropout": 0.0, "hidden_act": "silu", "initializer_range": 0.02, "num_hidden_layers": 2,
          "rms_norm_eps": 1e-06, "use_cache": True}
MODELS = [
    {
        "name": "llama_yarn_partial", "dtype": "F32", "seed": 2301,
        "why": "LLaMA with YaRN in the old layout (rope_scaling) and a top-level partial_rotary_factor 0.5",
        "config": dict(COMMON, architectures=["LlamaForCausalLM"], attention_bias=False, bos_token_id=1,
                       eos_token_id=2, head_dim=16, hidden_size=32, intermediate_size=40,
                       max_position_embeddings=256, mlp_bias=False, model_type="llama", num_attention_heads=4,
                       num_key_value_heads=2, partial_rotary_factor=0.5, pretraining_tp=1,
                       rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                                     "beta_fast": 32.0, "beta_slow": 1.0},
                       rope_theta=100.0, tie_word_embeddings=False, torch_dtype="float32",
                       transformers_version="4.51.0", vocab_size=320),
        "prompts": [[1, 5, 9], [1, 15, 300, 22, 5, 77, 8, 8, 140]],
    },
    {
        "name": "qwen3_llama3_params", "dtype": "F32", "seed": 2302,
        "why": "Qwen3 with llama3 scaling in the new layout (rope_parameters with rope_theta inside), QK-norm",
        "config": dict(COMMON, architectures=["Qwen3ForCausalLM"], attention_bias=False, bos_token_id=448,
                       eos_token_id=449, head_dim=8, hidden_size=24, intermediate_size=40,
                       max_position_embeddings=2048, model_type="qwen3", num_attention_heads=4,
                       num_key_value_heads=2,
                       rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0,
                                        "low_freq_factor": 1.0, "high_freq_factor": 8.0,
                                        "original_max_position_embeddings": 256},
                       sliding_window=None, tie_word_embeddings=True, torch_dtype="float32",
                       transformers_version="5.0.0", use_sliding_window=False, vocab_size=450),
        "prompts": [[448, 20], [448, 20, 30, 40, 50, 60, 70, 80]],
    },
    {
        "name": "qwen2_dynamic", "dtype": "F32", "seed": 2303,
        "why": "Qwen2 with dynamic NTK (the old \"type\" key), max_position_embeddings 4: a longer prompt grows the base",
        "config": dict(COMMON, architectures=["Qwen2ForCausalLM"], bos_token_id=400, eos_token_id=401,
                       hidden_size=24, intermediate_size=40, max_position_embeddings=4, max_window_layers=2,
                       model_type="qwen2", num_attention_heads=4, num_key_value_heads=2,
                       rope_scaling={"type": "dynamic", "factor": 2.0}, rope_theta=10000.0,
                       sliding_window=4, tie_word_embeddings=True, torch_dtype="float32",
                       transformers_version="4.51.0", use_sliding_window=False, vocab_size=416),
        "prompts": [[400, 12, 13], [5, 6, 7, 8, 9, 10, 401]],
    },
    {
        "name": "llama_linear_params", "dtype": "F32", "seed": 2304,
        "why": "LLaMA with linear scaling and partial_rotary_factor 0.75 inside rope_parameters",
        "config": dict(COMMON, architectures=["LlamaForCausalLM"], attention_bias=False, bos_token_id=0,
                       eos_token_id=0, head_dim=8, hidden_size=24, intermediate_size=40,
                       max_position_embeddings=128, mlp_bias=False, model_type="llama", num_attention_heads=4,
                       num_key_value_heads=1, pretraining_tp=1,
                       rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0,
                                        "partial_rotary_factor": 0.75},
                       tie_word_embeddings=True, torch_dtype="float32", transformers_version="5.0.0",
                       vocab_size=320),
        "prompts": [[0, 4, 8, 15], [0, 319, 1, 2, 3, 4, 5, 6]],
    },
]


def rope_of(cfg):
    """The lesson-style "rope" object of a config.json (either layout), for rs.rope_params."""
    p = cfg.get("rope_parameters") or {}
    s = p if p else (cfg.get("rope_scaling") or {})
    rope = {"base": float(p.get("rope_theta", cfg.get("rope_theta", 10000.0))),
            "partial_rotary_factor": float(p.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0)))}
    kind = s.get("rope_type", s.get("type", "default"))
    if kind != "default":
        sc = {k: v for k, v in s.items() if k not in ("rope_type", "type", "rope_theta", "partial_rotary_factor")}
        sc["type"] = kind
        if kind == "dynamic":    # _compute_dynamic_ntk_parameters: config.max_position_embeddings
            sc["original_max_position_embeddings"] = cfg["max_position_embeddings"]
        sc.setdefault("original_max_position_embeddings", cfg["max_position_embeddings"])
        rope["scaling"] = sc
    return rope


CURRENT = {}


def scaled_cos_sin(n, head_dim, theta):
    """LlamaRotaryEmbedding.forward with the scaled inv_freq and attention_scaling; cos 1, sin 0 past rotary_dim."""
    inv, af, dim = rs.rope_params(CURRENT["rope"], head_dim, n)
    freqs = torch.outer(torch.arange(n, dtype=torch.float64), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    rest = head_dim - dim
    cos = torch.cat((emb.cos() * af, torch.ones(n, rest)), dim=-1)
    sin = torch.cat((emb.sin() * af, torch.zeros(n, rest)), dim=-1)
    CURRENT["dim"] = dim
    return cos, sin


ORIGINAL_ROTATE_HALF = mm.rotate_half


def rotate_half_partial(x):
    """modeling_llama.py's rotate_half on the first rotary_dim columns; the rest is multiplied by sin = 0."""
    dim = CURRENT["dim"]
    return torch.cat((ORIGINAL_ROTATE_HALF(x[..., :dim]), torch.zeros_like(x[..., dim:])), dim=-1)


def cross_check(m, r, W, rec):
    """Q_rot and K_rot of every layer again with make_reference_ropescale.py's rope() (from Q_norm, K_norm in Qwen3)."""
    n = len(rec["ids"])
    for lay in rec["layers"]:
        att = lay["attn"]
        for name, heads in (("Q", r["num_attention_heads"]), ("K", r["num_key_value_heads"])):
            before = att.get(name + "_norm", att[name])     # Qwen3: QK-norm before RoPE
            again, _, _, _ = rs.rope(torch.tensor(before), heads, r["head_dim"], CURRENT["rope"], n, list(range(n)))
            if not torch.allclose(again, torch.tensor(att[name + "_rot"]), rtol=1e-12, atol=1e-12):
                raise SystemExit("%s: %s_rot disagrees with make_reference_ropescale.py's rope()" % (m["name"], name))


def main():
    mm.rope_cos_sin = scaled_cos_sin
    mm.rotate_half = rotate_half_partial
    mm.cross_check = cross_check
    for m in MODELS:
        r = mm.resolved(m["config"])
        CURRENT["rope"] = rope_of(m["config"])
        r["rope_theta"] = CURRENT["rope"]["base"]
        folder = os.path.join(HERE, m["name"])
        values, files, entries = mm.write_folder(m, r, folder)
        mm.write_reference(m, mm.reference(m, r, values, files, entries))


if __name__ == "__main__":
    main()
