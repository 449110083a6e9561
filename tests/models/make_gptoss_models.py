#!/usr/bin/python3
"""Small gpt-oss model folders (issue 23's loader), and their reference
numbers, in the layout of make_models.py (whose folder writer, safetensors
writer, random weights and reference file this script reuses):

    OPENBLAS_CORETYPE= /usr/bin/python3 tests/models/make_gptoss_models.py     # from the repository root

  tests/models/NAME/config.json, model.safetensors   as save_pretrained writes them (BF16 weights)
  tests/models/NAME.ref.json                          every stage of every layer on a few prompts

The folders (tests/models/README.md):

  gptoss_yarn_window    gpt_oss: layer_types left to GptOssConfig (layer 0 sliding, layer 1 full),
                        sliding_window 3, YaRN in rope_scaling (factor 4, truncate false), 4 experts
                        top 2, swiglu_limit 7 (the default), GQA 4/2, q/k/v/o biases, sinks
  gptoss_clamped        gpt_oss: layer_types given (full, sliding), no rope_scaling (GptOssConfig's
                        YaRN: factor 32 on 4096), 3 experts top 1, swiglu_limit 0.8 (clamps bite)
  gptoss_mxfp4          gptoss_yarn_window's, its experts stored as MXFP4's U8 *_blocks and *_scales
                        without a quantization_config: refused by the tensor (no .ref.json)

No `transformers` package is installed here: the forward pass below is
written from transformers' models/gpt_oss/modeling_gpt_oss.py (commit
00d4b3d2142cb4ced2f51b90614b5d26bc045015) and configuration_gpt_oss.py
(commit 02b8f42b4240dddea1b27c45d2dc95fb2682f841: swiglu_alpha and
swiglu_limit are config keys there), in float64:

  GptOssConfig.__post_init__: layer_types = ["sliding_attention" if bool((i + 1) % 2) else "full_attention" …];
      rope_parameters None -> {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
      "truncate": False, "original_max_position_embeddings": 4096}; default_theta 150000
  GptOssRotaryEmbedding: inv_freq, attention_scaling by the rope type (make_reference_ropescale.py's
      rope_params, the lines of modeling_rope_utils.py named there); emb = freqs; cos = emb.cos() *
      attention_scaling; _apply_rotary_emb: first_half * cos - second_half * sin, second_half * cos +
      first_half * sin (rotate_half's form)
  GptOssAttention: q/k/v/o_proj with bias=config.attention_bias (True); sliding_window on a
      "sliding_attention" layer (create_sliding_window_causal_mask: key j with i - W < j <= i)
  eager_attention_forward: attn_weights = matmul(query, key^T) * scaling + causal_mask;
      sinks = module.sinks.reshape(1, -1, 1, 1).expand(...); combined_logits = cat([attn_weights, sinks], -1);
      combined_logits - combined_logits.max(dim=-1, keepdim=True).values; probs = softmax; scores = probs[..., :-1]
  GptOssDecoderLayer: input_layernorm, self_attn, residual, post_attention_layernorm, mlp (GptOssMLP:
      router then experts: tests/golden/make_reference_gptoss.py's router() and experts_inference(),
      the lines named there), residual; GptOssModel: norm; GptOssForCausalLM: lm_head (untied)

Cross-check (aborts on disagreement, 1e-12): the mixture again by the experts'
training branch and by Python sums (make_reference_gptoss.py's by_hand); each
head's weights again in Python sums, e^(s_j) / (e^(sink) + Σ_k e^(s_k)) over the
keys the window leaves.
"""

import math
import os
import shutil
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "golden"))
import make_models as mm                      # noqa: E402
import make_reference_ropescale as rs         # noqa: E402
import make_ropescale_models as rsm           # noqa: E402
import make_reference_gptoss as go            # noqa: E402

torch.set_default_dtype(torch.float64)

COMMON = {"architectures": ["GptOssForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
          "eos_token_id": 3, "head_dim": 8, "hidden_act": "silu", "hidden_size": 16, "initializer_range": 0.02,
          "intermediate_size": 6, "max_position_embeddings": 64, "model_type": "gpt_oss",
          "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2, "output_router_logits": False,
          "pad_token_id": 2, "rms_norm_eps": 1e-05, "router_aux_loss_coef": 0.9, "tie_word_embeddings": False,
          "torch_dtype": "bfloat16", "transformers_version": "4.55.0", "use_cache": True, "vocab_size": 310}
MODELS = [
    {
        "name": "gptoss_yarn_window", "dtype": "BF16", "seed": 2391,
        "why": "gpt-oss: layer 0 sliding (window 3), layer 1 full; YaRN factor 4; 4 experts top 2; sinks; biases",
        "config": dict(COMMON, num_local_experts=4, num_experts_per_tok=2, rope_theta=150000.0, sliding_window=3,
                       rope_scaling={"beta_fast": 32.0, "beta_slow": 1.0, "factor": 4.0,
                                     "original_max_position_embeddings": 16, "rope_type": "yarn",
                                     "truncate": False}),
        "prompts": [[1, 40, 41], [1, 9, 8, 7, 6, 5, 4, 200]],
    },
    {
        "name": "gptoss_clamped", "dtype": "BF16", "seed": 2392,
        "why": "gpt-oss: layer_types given (full, sliding 2), GptOssConfig's YaRN, 3 experts top 1, swiglu_limit 0.8",
        "config": dict(COMMON, layer_types=["full_attention", "sliding_attention"], num_local_experts=3,
                       num_experts_per_tok=1, sliding_window=2, swiglu_limit=0.8),
        "prompts": [[5, 6], [5, 17, 33, 99, 250, 251]],
    },
]

_resolved, _tensor_list = mm.resolved, mm.tensor_list
YARN_DEFAULT = {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                "original_max_position_embeddings": 4096}


def resolved(cfg):
    """GptOssConfig's numbers: LlamaConfig's with gpt-oss's defaults and its own keys."""
    r = _resolved(dict(cfg, model_type="llama"))
    L = r["num_hidden_layers"]
    r["rope_theta"] = float(cfg.get("rope_theta", 150000.0))
    r["qkv_bias"] = r["o_bias"] = cfg.get("attention_bias", True)
    r["layer_types"] = cfg.get("layer_types") or ["sliding_attention" if (i + 1) % 2 else "full_attention"
                                                  for i in range(L)]
    r["sliding_window"] = cfg.get("sliding_window", 128)
    rope_cfg = dict(cfg, rope_theta=r["rope_theta"])               # GptOssConfig.default_theta when absent
    if "rope_scaling" not in cfg and "rope_parameters" not in cfg:
        rope_cfg["rope_scaling"] = YARN_DEFAULT
    r["rope"] = rsm.rope_of(rope_cfg)
    r.update(num_experts=cfg.get("num_local_experts", 128), experts_per_tok=cfg.get("num_experts_per_tok", 4),
             swiglu_alpha=cfg.get("swiglu_alpha", 1.702), swiglu_limit=cfg.get("swiglu_limit", 7.0))
    return r


def tensor_list(m, r):
    """make_models.py's LLaMA list with the biases, each layer's MLP replaced by GptOssMLP's, and its sinks."""
    D, E, Fe, H = r["hidden_size"], r["num_experts"], r["intermediate_size"], r["num_attention_heads"]
    out = []
    for name, shape, kind in _tensor_list(m, r):
        parts = name.split(".")
        if len(parts) == 6 and parts[3] == "mlp":
            if parts[4] == "gate_proj":
                h = "model.layers.%s." % parts[2]
                out += [(h + "self_attn.sinks", (H,), "w"), (h + "mlp.router.weight", (E, D), "qk"),
                        (h + "mlp.router.bias", (E,), "b"), (h + "mlp.experts.gate_up_proj", (E, D, 2 * Fe), "w"),
                        (h + "mlp.experts.gate_up_proj_bias", (E, 2 * Fe), "b"),
                        (h + "mlp.experts.down_proj", (E, Fe, D), "w"), (h + "mlp.experts.down_proj_bias", (E, D), "b")]
            continue
        out.append((name, shape, kind))
    return out


def forward_gptoss(m, r, W, ids):
    """GptOssForCausalLM on one sequence (batch of one, the batch axis left out)."""
    T, mat, rms_norm = mm.T, mm.mat, mm.rms_norm
    n, hd = len(ids), r["head_dim"]
    H, KV, eps = r["num_attention_heads"], r["num_key_value_heads"], r["norm_eps"]
    groups, scaling = H // KV, hd ** -0.5
    hidden = T(W, "model.embed_tokens.weight")[torch.tensor(ids)]
    rec = {"ids": ids, "X": mat(hidden), "layers": []}
    inv, af, _ = rs.rope_params(r["rope"], hd, n)                     # GptOssRotaryEmbedding
    freqs = torch.outer(torch.arange(n, dtype=torch.float64), inv)
    cos, sin = freqs.cos() * af, freqs.sin() * af
    big = torch.finfo(torch.float64).min

    def linear(x, name):
        return F.linear(x, T(W, name + ".weight"), T(W, name + ".bias"))

    def rotary(x):                                                     # _apply_rotary_emb
        first_half, second_half = torch.chunk(x, 2, dim=-1)
        return torch.cat((first_half * cos - second_half * sin, second_half * cos + first_half * sin), dim=-1)

    for i in range(r["num_hidden_layers"]):
        h = "model.layers.%d." % i
        lay = {}
        residual = hidden
        x = rms_norm(hidden, T(W, h + "input_layernorm.weight"), eps)
        lay["norm1"] = mat(x)
        q, k, v = linear(x, h + "self_attn.q_proj"), linear(x, h + "self_attn.k_proj"), linear(x, h + "self_attn.v_proj")
        att = {"Q": mat(q), "K": mat(k), "V": mat(v)}
        q = rotary(q.view(n, -1, hd).transpose(0, 1))
        k = rotary(k.view(n, -1, hd).transpose(0, 1))
        v = v.view(n, -1, hd).transpose(0, 1)
        att["Q_rot"] = mat(q.transpose(0, 1).reshape(n, -1))
        att["K_rot"] = mat(k.transpose(0, 1).reshape(n, -1))
        mask = torch.triu(torch.full((n, n), big), diagonal=1)
        if r["layer_types"][i] == "sliding_attention":
            mask = mask + torch.tril(torch.full((n, n), big), diagonal=-r["sliding_window"])
        key_states, value_states = mm.repeat_kv(k, groups), mm.repeat_kv(v, groups)
        scores = torch.matmul(q, key_states.transpose(1, 2))
        attn_weights = scores * scaling + mask
        sinks = T(W, h + "self_attn.sinks").reshape(-1, 1, 1).expand(-1, n, -1)
        combined_logits = torch.cat([attn_weights, sinks], dim=-1)
        combined_logits = combined_logits - combined_logits.max(dim=-1, keepdim=True).values
        probs = F.softmax(combined_logits, dim=-1)
        w = probs[..., :-1]
        out = torch.matmul(w, value_states)
        att["heads"] = [{"kv_head": j // groups, "scores": mat(scores[j]), "weights": mat(w[j]),
                         "output": mat(out[j])} for j in range(H)]
        concat = out.transpose(0, 1).reshape(n, -1)
        att["concat"] = mat(concat)
        a = linear(concat, h + "self_attn.o_proj")
        att["output"] = mat(a)
        lay.update(h=H, kv_heads=KV, d_k=hd, d_v=hd, scale_factor=scaling, attn=att)
        hidden = residual + a
        lay["residual1"] = mat(hidden)
        residual = hidden
        x = rms_norm(hidden, T(W, h + "post_attention_layernorm.weight"), eps)
        lay["norm2"] = mat(x)
        f = go.moe_gptoss(x, mixture(r, W, h), lay, set())
        lay["ffn_out"] = mat(f)
        for key in ("router_logits", "router_probs"):
            lay[key] = mat(lay[key])
        hidden = residual + f
        lay["output"] = mat(hidden)
        rec["layers"].append(lay)
    hidden = rms_norm(hidden, T(W, "model.norm.weight"), eps)
    rec["final_norm"] = mat(hidden)
    rec["logits"] = mat(F.linear(hidden, T(W, "lm_head.weight")))
    return rec


def mixture(r, W, h):
    """Layer h's GptOssMLP in make_reference_gptoss.py's form (its router(), experts_inference(), by_hand())."""
    return {"weight": mm.T(W, h + "mlp.router.weight"), "bias": mm.T(W, h + "mlp.router.bias"),
            "top_k": r["experts_per_tok"], "gate_up_proj": mm.T(W, h + "mlp.experts.gate_up_proj"),
            "gate_up_proj_bias": mm.T(W, h + "mlp.experts.gate_up_proj_bias"),
            "down_proj": mm.T(W, h + "mlp.experts.down_proj"),
            "down_proj_bias": mm.T(W, h + "mlp.experts.down_proj_bias"),
            "alpha": r["swiglu_alpha"], "limit": r["swiglu_limit"]}


def cross_check(m, r, W, rec):
    """The mixture by its training branch and Python sums; each head's weights with the sink by Python sums."""
    n, hd, name = len(rec["ids"]), r["head_dim"], "%s %s" % (m["name"], rec["ids"])
    for i, lay in enumerate(rec["layers"]):
        h = "model.layers.%d." % i
        go.moe_gptoss(torch.tensor(lay["norm2"]), mixture(r, W, h), {}, set())   # its checks raise
        win = r["sliding_window"] if r["layer_types"][i] == "sliding_attention" else n
        for j, head in enumerate(lay["attn"]["heads"]):
            sink = float(mm.T(W, h + "self_attn.sinks")[j])
            for t in range(n):
                keys = [u for u in range(n) if t - win < u <= t]
                s = [head["scores"][t][u] / math.sqrt(hd) for u in keys]
                top = max(s + [sink])
                tot = math.exp(sink - top) + sum(math.exp(z - top) for z in s)
                want = [math.exp(s[keys.index(u)] - top) / tot if u in keys else 0.0 for u in range(n)]
                mm.agree("%s layer %d head %d row %d weights" % (name, i, j, t), [want], [head["weights"][t]])
    if not any(c < 0.8 for lay in rec["layers"] for c in sum(lay["router_logits"], [])):
        sys.exit(name + ": router logits of one sign only")


def mxfp4_folder():
    """gptoss_mxfp4: gptoss_yarn_window with its experts as an MXFP4 checkpoint stores them (gate_up_proj_blocks and
    _scales, down_proj_blocks and _scales: U8) and no quantization_config: the loader must refuse it by the tensor."""
    src, dst = os.path.join(HERE, "gptoss_yarn_window"), os.path.join(HERE, "gptoss_mxfp4")
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)

    def edit(entries):
        for name in [n for n in entries if n.endswith(("experts.gate_up_proj", "experts.down_proj"))]:
            _, shape, _ = entries.pop(name)
            E, rows = shape[0], shape[2]
            entries[name + "_blocks"] = ("U8", (E, rows, 1, 8),
                                         bytes((7 * k) % 256 for k in range(E * rows * 8)))
            entries[name + "_scales"] = ("U8", (E, rows, 1), bytes(127 for _ in range(E * rows)))
    mm.rewrite_tensors(dst, edit)


def main():
    mm.resolved, mm.tensor_list, mm.forward_llama, mm.cross_check = resolved, tensor_list, forward_gptoss, cross_check
    for m in MODELS:
        r = resolved(m["config"])
        values, files, entries = mm.write_folder(m, r, os.path.join(HERE, m["name"]))
        mm.write_reference(m, mm.reference(m, r, values, files, entries))
    mxfp4_folder()


if __name__ == "__main__":
    main()
