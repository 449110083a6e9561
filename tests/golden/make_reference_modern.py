#!/usr/bin/python3
"""Independent reference numbers for the course's capstone, lessons/modern.json
(issue 23: one layer of a 2025 model, gpt-oss-shaped, decoded token by token),
computed with PyTorch in float64:

    make_reference_modern.py --lesson   # lessons/modern.json -> tests/golden/lessons/modern.ref.json

No other golden has all of its pieces together: a pre-RMSNorm block with q, k,
v and o biases, grouped-query attention (4 query heads, 2 key/value heads),
RoPE with gpt-oss's YaRN scaling ("truncate": false) and its attention factor,
a sliding-window layer then a full one, learned sinks per layer, gpt-oss's
mixture of experts (top-k logits then a softmax, the clamped SwiGLU, biases),
and decoding with a KV cache per layer (the sliding layer's rolling at its
window). This script computes them as transformers' models/gpt_oss/
modeling_gpt_oss.py does, line by line (the names below are its names), and
modeling_rope_utils.py's _compute_yarn_parameters; it imports only the lesson
format's generator (make_reference.py's matrix(), SplitMix64 + Marsaglia) to
read the lesson's generated matrices. The decode pass is computed token by
token with caches of its own, not by slicing the full pass.

The reference holds every number the lesson's steps and quizzes show: per
layer the angles, Q_rot, K_rot, each head's weights and sink, the attention
output, residual1, norm2, the router's logits, probabilities and weights, the
experts' activations and outputs, ffn_out, residual2, the layer's output, and
every decode step's weights, output and layer_output. t_golden.sh compares
attnviz's --dump with it (keys the reference lacks are ignored).
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_reference import matrix  # noqa: E402  (the lesson format's generated matrices)
from lessonfiles import write_json  # noqa: E402


def M(v, where):
    return matrix(v, where).to(torch.float64)


def vec(v, where):
    return M(v, where).reshape(-1) if isinstance(v, dict) else torch.tensor([float(x) for x in v])


# ------------------------------------------------------------ modeling_rope_utils.py: yarn
def yarn_inv_freq(base, dim, s):
    """_compute_yarn_parameters: (inv_freq, attention_factor)."""
    factor = float(s["factor"])
    beta_fast, beta_slow = float(s.get("beta_fast", 32)), float(s.get("beta_slow", 1))
    L0 = float(s["original_max_position_embeddings"])
    truncate = s.get("truncate", True)

    def get_mscale(scale, mscale=1):
        return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0

    attention_factor = float(s.get("attention_factor", get_mscale(factor)))

    def find_correction_dim(num_rotations):
        return (dim * math.log(L0 / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = find_correction_dim(beta_fast), find_correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low), 0, 1)
    pos_freqs = base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    inv_freq_extrapolation_factor = 1 - ramp
    inv_freq = (inv_freq_interpolation * (1 - inv_freq_extrapolation_factor)
                + inv_freq_extrapolation * inv_freq_extrapolation_factor)
    return inv_freq, attention_factor, pos_freqs


# ------------------------------------------------------------ modeling_gpt_oss.py
def rms_norm(x, weight, eps):
    """GptOssRMSNorm.forward."""
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps))


def rotary(inv_freq, attention_scaling, positions):
    """GptOssRotaryEmbedding.forward: emb = freqs (no doubling), cos and sin × attention_scaling."""
    freqs = positions.to(torch.float64)[:, None] * inv_freq[None, :]
    return freqs.cos() * attention_scaling, freqs.sin() * attention_scaling, freqs


def apply_rotary_emb(x, cos, sin):
    """_apply_rotary_emb: x (heads, rows, d); cos, sin (rows, d/2)."""
    first_half, second_half = torch.chunk(x, 2, dim=-1)
    first_ = first_half * cos - second_half * sin
    second_ = second_half * cos + first_half * sin
    return torch.cat((first_, second_), dim=-1)


def repeat_kv(x, n_rep):
    return x.repeat_interleave(n_rep, dim=0)


def eager_attention(query, key, value, mask, sinks, scaling):
    """eager_attention_forward with sinks: query (h, q, d), key/value (g, k, d), mask (q, k) bool."""
    h = query.shape[0]
    key_states, value_states = repeat_kv(key, h // key.shape[0]), repeat_kv(value, h // value.shape[0])
    attn_weights = torch.matmul(query, key_states.transpose(1, 2)) * scaling
    attn_weights = attn_weights.masked_fill(~mask[None], float("-inf"))
    s = sinks.reshape(-1, 1, 1).expand(-1, query.shape[1], -1)
    combined_logits = torch.cat([attn_weights, s], dim=-1)
    combined_logits = combined_logits - combined_logits.max(dim=-1, keepdim=True).values
    probs = F.softmax(combined_logits, dim=-1)
    scores = probs[..., :-1]
    return torch.matmul(scores, value_states), scores, probs[..., -1:]


def router(x, P):
    """GptOssTopKRouter.forward: top-k of the logits, a softmax over them, scattered into zeros."""
    router_logits = x @ P["router"] + P["router_bias"]
    router_top_value, router_indices = torch.topk(router_logits, P["top_k"], dim=-1)
    router_top_value = F.softmax(router_top_value, dim=1)
    router_scores = torch.zeros_like(router_logits).scatter_(1, router_indices, router_top_value)
    return router_logits, router_scores, router_indices


def experts(x, P, router_indices, routing_weights):
    """GptOssExperts.forward (its training branch: every expert on every token, weighted; 0 for the unchosen)."""
    n, E = x.shape[0], len(P["experts"])
    act, eout, chosen = [], [], torch.zeros(n, E, dtype=torch.bool)
    chosen.scatter_(1, router_indices, True)
    next_states = torch.zeros_like(x)
    for e, X in enumerate(P["experts"]):
        gate = x @ X["W_1"] + X["b_1"]
        up = x @ X["W_3"] + X["b_3"]
        gate = gate.clamp(min=None, max=P["limit"])
        up = up.clamp(min=-P["limit"], max=P["limit"])
        glu = gate * torch.sigmoid(gate * P["alpha"])
        gated_output = (up + 1) * glu
        out = gated_output @ X["W_2"] + X["b_2"]
        next_states = next_states + out * routing_weights[:, e:e + 1]
        nan = torch.full_like(gated_output, float("nan"))
        act.append(torch.where(chosen[:, e:e + 1], gated_output, nan))
        eout.append(torch.where(chosen[:, e:e + 1], out, torch.full_like(out, float("nan"))))
    return next_states, torch.cat(act, dim=1), torch.cat(eout, dim=1), chosen


# ------------------------------------------------------------ the lesson
def read(path):
    with open(path, encoding="utf-8") as f:
        J = json.load(f)
    h, g = int(J["heads"]), int(J["kv_heads"])
    rope = J["rope"]
    assert rope.get("style", "half") == "half" and "partial_rotary_factor" not in rope
    top = {k: J[k] for k in ("W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o", "sinks", "block")}
    layers = []
    for i, lay in enumerate(J["layers"]):
        src = dict(top)
        src.update({k: v for k, v in lay.items() if k in top})
        mask = lay.get("mask", J["mask"])
        window = mask["window"] if isinstance(mask, dict) else None
        assert mask == "causal" or window is not None
        b = src["block"]
        assert b["norm"] == "pre" and b["norm_kind"] == "rmsnorm"
        f = b["ffn"]
        assert f["kind"] == "moe" and "gpt_oss" in f
        w = "layers[%d]." % i
        P = {name: M(src[name], w + name) for name in ("W_q", "W_k", "W_v", "W_o")}
        P.update({name: vec(src[name], w + name) for name in ("b_q", "b_k", "b_v", "b_o")})
        P["sinks"] = torch.tensor([float(x) for x in src["sinks"]])
        P["eps"] = float(b.get("eps", 1e-5))
        P["ln1"] = torch.tensor([float(x) for x in b["ln1"]["gamma"]])
        P["ln2"] = torch.tensor([float(x) for x in b["ln2"]["gamma"]])
        P["router"] = M(f["router"], w + "block.ffn.router")
        P["router_bias"] = vec(f["router_bias"], w + "block.ffn.router_bias")
        P["top_k"] = int(f["top_k"])
        P["alpha"] = float(f["gpt_oss"]["swiglu_alpha"])
        P["limit"] = float(f["gpt_oss"]["swiglu_limit"])
        P["experts"] = [{k: (vec(X[k], w + k) if k.startswith("b_") else M(X[k], w + k)) for k in X}
                        for X in f["experts"]]
        P["window"] = window
        layers.append(P)
    X = M(J["X"], "X")
    return J, X, h, g, rope, layers


def visible(i, j, window):
    return j <= i and (window is None or i - window < j)


def attention_block(x, P, h, g, rope, positions, mask, cache=None):
    """GptOssAttention.forward on the rows x at positions; with cache, keys and values are appended to it."""
    n = x.shape[0]
    d = P["W_q"].shape[1] // h
    query_states = (x @ P["W_q"] + P["b_q"]).view(n, h, d).transpose(0, 1)
    key_states = (x @ P["W_k"] + P["b_k"]).view(n, g, d).transpose(0, 1)
    value_states = (x @ P["W_v"] + P["b_v"]).view(n, g, d).transpose(0, 1)
    inv_freq, attention_scaling, _ = yarn_inv_freq(float(rope["base"]), d, rope["scaling"])
    cos, sin, freqs = rotary(inv_freq, attention_scaling, positions)
    query_states = apply_rotary_emb(query_states, cos, sin)
    key_states = apply_rotary_emb(key_states, cos, sin)
    if cache is not None:
        cache["K"] = torch.cat([cache["K"], key_states], dim=1)
        cache["V"] = torch.cat([cache["V"], value_states], dim=1)
        if P["window"] is not None:  # the sliding layer's cache keeps its window
            cache["K"], cache["V"] = cache["K"][:, -P["window"]:], cache["V"][:, -P["window"]:]
        key_states, value_states = cache["K"], cache["V"]
    attn_output, weights, sink = eager_attention(query_states, key_states, value_states, mask,
                                                 P["sinks"], d ** -0.5)
    concat = attn_output.transpose(0, 1).reshape(n, h * d)
    out = concat @ P["W_o"] + P["b_o"]
    return out, dict(Q_rot=query_states, K_rot=key_states, weights=weights, sink=sink, concat=concat,
                     freqs=freqs, plain=positions.to(torch.float64)[:, None] / yarn_inv_freq(
                         float(rope["base"]), d, rope["scaling"])[2][None, :],
                     attention_scaling=attention_scaling)


def decoder_layer(x, P, h, g, rope, positions, mask, cache=None):
    """GptOssDecoderLayer.forward."""
    residual = x
    hidden_states = rms_norm(x, P["ln1"], P["eps"])
    attn, A = attention_block(hidden_states, P, h, g, rope, positions, mask, cache)
    residual1 = residual + attn
    norm2 = rms_norm(residual1, P["ln2"], P["eps"])
    router_logits, router_scores, router_indices = router(norm2, P)
    ffn_out, act, eout, chosen = experts(norm2, P, router_indices, router_scores)
    residual2 = residual1 + ffn_out
    return residual2, dict(A=A, attn=attn, residual1=residual1, norm2=norm2, router_logits=router_logits,
                           router_probs=router_scores, chosen=chosen, expert_act=act, expert_out=eout,
                           ffn_out=ffn_out)


def rows(t):
    """A tensor as nested lists, NaN as None."""
    return [[None if math.isnan(v) else v for v in r] for r in t.tolist()]


def reference(path):
    J, X, h, g, rope, layers = read(path)
    n = X.shape[0]
    pos = torch.arange(n)
    out_layers, x = [], X
    for P in layers:
        mask = torch.tensor([[visible(i, j, P["window"]) for j in range(n)] for i in range(n)])
        y, R = decoder_layer(x, P, h, g, rope, pos, mask)
        A = R["A"]
        d = A["Q_rot"].shape[2]
        moe_weights = torch.where(R["chosen"], R["router_probs"], torch.full_like(R["router_probs"], float("nan")))
        out_layers.append({
            "attn": {
                "angles_plain": rows(torch.cat([A["plain"], A["plain"]], dim=1)),
                "angles": rows(torch.cat([A["freqs"], A["freqs"]], dim=1)),
                "rope_attention_factor": A["attention_scaling"],
                "Q_rot": rows(A["Q_rot"].transpose(0, 1).reshape(n, h * d)),
                "K_rot": rows(A["K_rot"].transpose(0, 1).reshape(n, g * d)),
                "heads": [{"kv_head": i // (h // g), "weights": rows(A["weights"][i]), "sink": rows(A["sink"][i])}
                          for i in range(h)],
                "concat": rows(A["concat"]),
                "output": rows(R["attn"]),
            },
            "residual1": rows(R["residual1"]), "norm2": rows(R["norm2"]),
            "router_logits": rows(R["router_logits"]), "router_probs": rows(R["router_probs"]),
            "moe_weights": rows(moe_weights), "expert_act": rows(R["expert_act"]),
            "expert_out": rows(R["expert_out"]), "ffn_out": rows(R["ffn_out"]),
            "residual2": rows(y), "output": rows(y),
        })
        x = y
    # decoding, token by token: every layer with its own cache, each step's row alone
    caches = [{"K": torch.zeros(g, 0, P["W_k"].shape[1] // g), "V": torch.zeros(g, 0, P["W_v"].shape[1] // g)}
              for P in layers]
    decoded = [[] for _ in layers]
    for t in range(n):
        x = X[t:t + 1]
        for li, P in enumerate(layers):
            held = min(t + 1, P["window"]) if P["window"] is not None else t + 1
            y, R = decoder_layer(x, P, h, g, rope, torch.tensor([t]), torch.ones(1, held, dtype=torch.bool),
                                 caches[li])
            decoded[li].append({"t": t,
                                "heads": [{"weights": rows(R["A"]["weights"][i])} for i in range(h)],
                                "output": rows(R["attn"]), "layer_output": rows(y)})
            x = y
    for li, L in enumerate(out_layers):
        L["decode"] = decoded[li]
        # each decoded row is the full computation's (the test of a correct cache)
        full = torch.tensor(L["output"])
        dec = torch.tensor([s["layer_output"][0] for s in decoded[li]])
        assert torch.allclose(full, dec, rtol=0, atol=1e-12), "layer %d: decode differs from the full pass" % li
    return {"n": n, "layers": out_layers, "output": out_layers[-1]["output"]}


def main(argv):
    if argv[1:] == ["--lesson"]:
        root = os.path.dirname(os.path.dirname(HERE))
        out = os.path.join(HERE, "lessons", "modern.ref.json")
        write_json(out, reference(os.path.join(root, "lessons", "modern.json")))
        print(os.path.relpath(out), file=sys.stderr)
        return 0
    if len(argv) == 2 and not argv[1].startswith("-"):
        json.dump(reference(argv[1]), sys.stdout, indent=1)
        print()
        return 0
    print("usage: make_reference_modern.py --lesson | LESSON.json > REF.json", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
