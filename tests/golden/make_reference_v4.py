#!/usr/bin/python3
"""Independent reference numbers for issue 21's lesson keys (QK-norm, the
LM head, learned positions, GPT-2's tanh GELU), computed with PyTorch in
float64, following the Hugging Face transformers modeling code:

    make_reference_v4.py --lessons DIR      # write the v4 lessons (literal numbers from a seeded generator)
    make_reference_v4.py LESSON.json > LESSON.ref.json   # (and its "compare" variant under "compare")
    make_reference_v4.py lessons/nexttoken.json > tests/golden/lessons/nexttoken.ref.json
    tests/golden/v4/make_all.sh            # both, for every lesson of tests/golden/v4

Written from issue 21 and lessons/FORMAT.md, not from the C code. The lines
followed (transformers 4.51, src/transformers/models/…):

  modeling_qwen3.py
    Qwen3RMSNorm.forward: variance = x.pow(2).mean(-1, keepdim=True);
        x = x * torch.rsqrt(variance + eps); return self.weight * x        -> rms_norm()
    Qwen3Attention.forward:
        query_states = self.q_norm(self.q_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
        key_states = self.k_norm(self.k_proj(hidden_states).view(hidden_shape)).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
      i.e. QK-norm per head over head_dim, BEFORE RoPE                     -> attention()
    rotate_half, apply_rotary_pos_emb (q * cos + rotate_half(q) * sin),
    Qwen3RotaryEmbedding (inv_freq = 1 / base^(arange(0, d, 2) / d), emb = cat(freqs, freqs))
                                                                          -> rope()
    repeat_kv (each key/value head repeated n_rep times, query head i reads i // n_rep)
    eager_attention_forward: attn_weights = q @ k^T * scaling + causal_mask;
        softmax(dim=-1); attn_output = attn_weights @ v
    Qwen3MLP.forward: down_proj(act_fn(gate_proj(x)) * up_proj(x))       -> ffn() (W_1 gate, W_3 up)
    Qwen3DecoderLayer.forward: residual + self_attn(input_layernorm(x)),
        then residual + mlp(post_attention_layernorm(x))                  -> layer()
    Qwen3Model.forward: hidden_states = self.norm(hidden_states); Qwen3ForCausalLM: logits = lm_head(h)
  modeling_gpt2.py
    GPT2Model.forward: hidden_states = inputs_embeds + position_embeds (wpe) -> X = input + PE
    GPT2Block.forward: ln_1, attn, residual; ln_2, mlp, residual; GPT2Model: ln_f
    GPT2MLP.forward: c_proj(act(c_fc(x))) with Conv1D (x @ W + b)
  activations.py
    NewGELUActivation.forward: 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi)
        * (input + 0.044715 * torch.pow(input, 3.0))))                   -> gelu_new()
  generation/logits_process.py
    TemperatureLogitsWarper.__call__: scores = scores / self.temperature; then softmax -> next

Cross-checks (printed on stderr): RoPE again as complex numbers
(torch.polar, LLaMA's precompute_freqs_cis); the attention again with
einsum over all heads at once and repeat_interleave for the key/value
heads; QK-norm again as x / sqrt(mean(x^2) + eps) * w in a Python loop;
the logits' row again as Python sums over d_model for each entry; the
next-token probabilities again with torch.softmax on float64 logits
scaled by 1/T; with a loss, the gradients by torch.autograd.

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import math
import os
import sys

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


class CheckFailed(Exception):
    pass


def agree(name, a, b, tol=1e-12):
    a = torch.as_tensor(a, dtype=torch.float64)
    b = torch.as_tensor(b, dtype=torch.float64)
    if a.shape != b.shape or not torch.allclose(a, b, rtol=tol, atol=tol):
        raise CheckFailed("%s: the two computations disagree" % name)


def T(rows):
    return torch.tensor(rows, dtype=torch.float64)


def vec(v):
    return T(v).reshape(-1)


# ------------------------------------------------------------------ the model, as transformers computes it

def rms_norm(x, w, eps):
    """Qwen3RMSNorm.forward (LlamaRMSNorm's body)."""
    variance = x.pow(2).mean(-1, keepdim=True)
    x = x * torch.rsqrt(variance + eps)
    return w * x


def layer_norm(x, gamma, beta, eps):
    """nn.LayerNorm (GPT-2's ln_1, ln_2, ln_f)."""
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)


def gelu_new(x):
    """activations.py NewGELUActivation.forward."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(n, d, base):
    """Qwen3RotaryEmbedding: inv_freq = 1 / base^(arange(0, d, 2)/d); emb = cat(freqs, freqs)."""
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).to(torch.float64) / d))
    pos = torch.arange(n, dtype=torch.float64)
    freqs = torch.outer(pos, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rope(x, base):
    """apply_rotary_pos_emb on x (heads, n, d): x * cos + rotate_half(x) * sin."""
    cos, sin = rope_cos_sin(x.shape[1], x.shape[2], base)
    return x * cos + rotate_half(x) * sin


def rope_complex(x, base):
    """The same turn as complex numbers (LLaMA's precompute_freqs_cis), half-style pairs (c, c + d/2)."""
    h, n, d = x.shape
    half = d // 2
    freqs = 1.0 / (base ** (torch.arange(0, d, 2).to(torch.float64)[:half] / d))
    cis = torch.polar(torch.ones(n, half), torch.outer(torch.arange(n, dtype=torch.float64), freqs))
    z = torch.complex(x[..., :half], x[..., half:]) * cis
    return torch.cat((z.real, z.imag), dim=-1)


def repeat_kv(x, n_rep):
    """(g, m, d) -> (g * n_rep, m, d): query head i reads key/value head i // n_rep."""
    g, m, d = x.shape
    return x[:, None, :, :].expand(g, n_rep, m, d).reshape(g * n_rep, m, d)


def linear(x, w, b):
    """Row convention, as a lesson writes W (d_in × d_out; transformers' weight transposed, Conv1D as it is)."""
    y = x @ w
    return y + b if b is not None else y


def attention(x, p, s, out, checks):
    """Qwen3Attention.forward with eager_attention_forward (GPT-2's GPT2Attention is the same without QK-norm and RoPE)."""
    n = x.shape[0]
    h, g = p["heads"], p["kv_heads"]
    dk = p["W_q"].shape[1] // h
    dv = p["W_v"].shape[1] // g
    q = linear(x, p["W_q"], p.get("b_q"))
    k = linear(x, p["W_k"], p.get("b_k"))
    v = linear(x, p["W_v"], p.get("b_v"))
    out["Q"], out["K"], out["V"] = q, k, v
    qh = q.view(n, h, dk)   # hidden_shape = (*input_shape, -1, head_dim)
    kh = k.view(n, g, dk)
    if p.get("qk_norm") is not None:
        qn = rms_norm(qh, p["q_norm"], s["qk_eps"])   # self.q_norm(...view(hidden_shape))
        kn = rms_norm(kh, p["k_norm"], s["qk_eps"])
        out["Q_norm"], out["K_norm"] = qn.reshape(n, h * dk), kn.reshape(n, g * dk)
        if checks is not None:
            loop = torch.zeros_like(qh)
            for i in range(n):
                for hh in range(h):
                    row = qh[i, hh]
                    r = math.sqrt(sum(float(c) ** 2 for c in row) / dk + s["qk_eps"])
                    loop[i, hh] = row / r * p["q_norm"]
            agree("qk_norm loop", loop, qn)
            checks.add("qk_norm")
        qh, kh = qn, kn
    qt, kt, vt = qh.transpose(0, 1), kh.transpose(0, 1), v.view(n, g, dv).transpose(0, 1)
    if s["rope"]:
        qr, kr = rope(qt, s["rope_base"]), rope(kt, s["rope_base"])
        if checks is not None:
            agree("rope complex q", rope_complex(qt, s["rope_base"]), qr)
            agree("rope complex k", rope_complex(kt, s["rope_base"]), kr)
            checks.add("rope")
        qt, kt = qr, kr
        out["Q_rot"], out["K_rot"] = qt.transpose(0, 1).reshape(n, h * dk), kt.transpose(0, 1).reshape(n, g * dk)
    keys = repeat_kv(kt, h // g)
    vals = repeat_kv(vt, h // g)
    scores = qt @ keys.transpose(1, 2)
    scaled = scores * dk ** -0.5
    if s["causal"]:
        mask = torch.ones(n, n, dtype=torch.bool).triu(1)
        scaled = scaled.masked_fill(mask, float("-inf"))
    weights = F.softmax(scaled, dim=-1)
    weighted = weights @ vals
    out["heads"] = [{"scores": scores[i], "weights": weights[i], "output": weighted[i]} for i in range(h)]
    concat = weighted.transpose(0, 1).reshape(n, h * dv)
    if checks is not None:
        e = torch.einsum("qhd,khd->hqk", qt.transpose(0, 1), kt.transpose(0, 1).repeat_interleave(h // g, dim=1))
        agree("einsum scores", e, scores)
        w2 = torch.softmax(scaled, dim=-1)
        agree("einsum concat", torch.einsum("hqk,khd->qhd", w2, vt.transpose(0, 1).repeat_interleave(h // g, dim=1))
              .reshape(n, h * dv), concat)
        checks.add("einsum")
    out["concat"] = concat
    o = linear(concat, p["W_o"], p.get("b_o")) if p.get("W_o") is not None else concat
    out["output"] = o
    return o


def norm(x, s, gamma, beta):
    if s["norm_kind"] == "rmsnorm":
        return rms_norm(x, gamma, s["eps"])
    return layer_norm(x, gamma, beta, s["eps"])


def ffn(x, p, s):
    """Qwen3MLP (swiglu: down(silu(gate(x)) * up(x))) or GPT2MLP (c_proj(act(c_fc(x))))."""
    hidden = linear(x, p["W_1"], p.get("b_1"))
    if s["activation"] == "swiglu":
        act = F.silu(hidden) * linear(x, p["W_3"], p.get("b_3"))
    elif s["activation"] in ("gelu_tanh", "gelu_new"):
        act = gelu_new(hidden)
    elif s["activation"] == "gelu":
        act = F.gelu(hidden)
    else:
        act = F.relu(hidden)
    return linear(act, p["W_2"], p.get("b_2")), hidden, act


def layer(x, p, s, out, checks):
    """A pre-norm decoder layer (Qwen3DecoderLayer.forward, GPT2Block.forward), or attention alone without a block."""
    at = out["attn"] = {}
    if not p.get("block"):
        return attention(x, p, s, at, checks)
    n1 = norm(x, s, p["ln1_gamma"], p.get("ln1_beta"))
    r1 = x + attention(n1, p, s, at, checks)
    n2 = norm(r1, s, p["ln2_gamma"], p.get("ln2_beta"))
    f, hidden, act = ffn(n2, p, s)
    r2 = r1 + f
    out.update(norm1=n1, residual1=r1, norm2=n2, ffn_hidden=hidden, ffn_act=act, ffn_out=f, residual2=r2, output=r2)
    return r2


# ------------------------------------------------------------------ the lesson

def read_lesson(path, override=None):
    with open(path) as f:
        L = json.load(f)
    if override is not None:   # a "compare" variant: the lesson with its keys replaced
        L.update({k: v for k, v in override.items() if k != "label"})
    if L.get("attnviz") != 2:
        raise SystemExit("%s: v4 lessons are format 2" % path)
    blk = L.get("block") or {}
    ffnj = blk.get("ffn") or {}
    s = {
        "causal": L.get("mask", "none") == "causal",
        "rope": bool(L.get("rope", False)),
        "rope_base": (L["rope"].get("base", 10000.0) if isinstance(L.get("rope"), dict) else 10000.0),
        "qk_eps": (L.get("qk_norm") or {}).get("eps", 1e-6),
        "norm_kind": blk.get("norm_kind", "layernorm"),
        "eps": blk.get("eps", 1e-5),
        "activation": ffnj.get("activation", "relu"),
        "final": blk.get("final_norm"),
    }
    if blk and blk.get("norm", "post") != "pre":
        raise SystemExit("%s: the v4 script computes pre-norm blocks only" % path)
    if isinstance(L.get("rope"), dict) and L["rope"].get("style", "half") != "half":
        raise SystemExit("%s: half-style RoPE only" % path)
    layers = L.get("layers") or [{}]
    params = []
    for lay in layers:
        m = dict(L)
        m.update(lay)
        b = m.get("block") or {}
        fj = b.get("ffn") or {}
        p = {"heads": m.get("heads", 1), "W_q": T(m["W_q"]), "W_k": T(m["W_k"]), "W_v": T(m["W_v"]),
             "W_o": T(m["W_o"]) if "W_o" in m else None, "block": bool(b)}
        p["kv_heads"] = m.get("kv_heads", p["heads"])
        for key in ("b_q", "b_k", "b_v", "b_o"):
            p[key] = vec(m[key]) if key in m else None
        if m.get("qk_norm") is not None:
            p["qk_norm"] = True
            p["q_norm"], p["k_norm"] = vec(m["qk_norm"]["q"]), vec(m["qk_norm"]["k"])
        if b:
            d = p["W_q"].shape[0]
            for ln in ("ln1", "ln2"):
                nj = b.get(ln) or {}
                p[ln + "_gamma"] = vec(nj["gamma"]) if "gamma" in nj else torch.ones(d)
                p[ln + "_beta"] = vec(nj["beta"]) if "beta" in nj else torch.zeros(d)
            for key in ("W_1", "W_2", "W_3"):
                p[key] = T(fj[key]) if key in fj else None
            for key in ("b_1", "b_2", "b_3"):
                p[key] = vec(fj[key]) if key in fj else None
        params.append(p)
    return L, s, params


def forward(L, s, params, checks):
    out = {}
    x0 = T(L["X"])
    X = x0 + T(L["PE"]) if L.get("positional") == "learned" else x0   # GPT2Model: inputs_embeds + position_embeds
    out["input"], out["X"] = x0, X
    x = X
    out["layers"] = []
    for p in params:
        lo = {}
        x = layer(x, p, s, lo, checks)
        out["layers"].append(lo)
    out["output"] = x
    if s["final"] is not None:                                        # Qwen3Model: self.norm; GPT2Model: ln_f
        d = x.shape[1]
        fin = s["final"]
        x = norm(x, s, vec(fin["gamma"]) if "gamma" in fin else torch.ones(d),
                 vec(fin["beta"]) if "beta" in fin else torch.zeros(d))
        out["output"] = x
    if "vocab" in L:
        U = T(L["unembed"])
        logits = x @ U.T                                              # lm_head (tied to wte in GPT-2)
        row = L.get("logits_row", x.shape[0] - 1)
        temp = L.get("temperature", 1.0)
        probs = F.softmax(logits[row] / temp, dim=-1)                  # TemperatureLogitsWarper, then softmax
        k = min(L.get("top_k", 10), len(L["vocab"]))
        # the k likeliest entries, ties in the order of the vocabulary (lessons/FORMAT.md)
        top = sorted(range(len(L["vocab"])), key=lambda v: (-float(probs[v]), v))[:k]
        if checks is not None:
            for v in range(U.shape[0]):
                sv = sum(float(x[row, c]) * float(U[v, c]) for c in range(U.shape[1]))
                if abs(sv - float(logits[row, v])) > 1e-12 * (1 + abs(sv)):
                    raise CheckFailed("logits by Python sums")
            agree("softmax(z/T)", torch.softmax(logits[row] * (1.0 / temp), dim=0), probs, 1e-13)
            if [int(i) for i in torch.topk(probs, k).indices] != top and len(set(probs.tolist())) == len(L["vocab"]):
                raise CheckFailed("the top entries: torch.topk disagrees")
            checks.add("lm_head")
        out["final_norm"] = x
        out["logits"] = logits
        out["next"] = {"row": row, "temperature": temp, "probs": probs, "top": top}
        if "ids" in L:
            out["ids"] = L["ids"]
    return out


def grads(L, s, params):
    """With "backward": {"target": …}: L = ½ Σ (output − target)², every gradient by autograd."""
    leaves = []
    for p in params:
        for key in ("W_q", "W_k", "W_v", "W_o"):
            if p[key] is not None:
                p[key] = p[key].clone().requires_grad_(True)
                leaves.append(p[key])
    Lx = dict(L)
    x0 = T(L["X"]).requires_grad_(True)
    Lx["X"] = x0
    out = forward_with_x(Lx, s, params, x0)
    Q = [lo["attn"]["Q"] for lo in out["layers"]]
    K = [lo["attn"]["K"] for lo in out["layers"]]
    for t in Q + K:
        t.retain_grad()
    loss = 0.5 * ((out["output"] - T(L["backward"]["target"])) ** 2).sum()
    loss.backward()
    p = params[0]
    return {"loss": float(loss), "grad": {"Q": Q[0].grad, "K": K[0].grad, "W_q": p["W_q"].grad, "W_k": p["W_k"].grad,
                                         "W_v": p["W_v"].grad, "X": x0.grad}}


def forward_with_x(L, s, params, x0):
    out = {"layers": []}
    x = x0
    for p in params:
        lo = {}
        x = layer(x, p, s, lo, None)
        out["layers"].append(lo)
    out["output"] = x
    return out


def plain(o):
    if isinstance(o, torch.Tensor):
        return o.detach().tolist()
    if isinstance(o, dict):
        return {k: plain(v) for k, v in o.items()}
    if isinstance(o, list):
        return [plain(v) for v in o]
    return o


def reference(path, override=None):
    L, s, params = read_lesson(path, override)
    checks = set()
    out = forward(L, s, params, checks)
    ref = {"n": len(L["tokens"]), "input": out["input"], "X": out["X"], "output": out["output"]}
    if L.get("layers") or L.get("block"):
        ref["layers"] = []
        for lo in out["layers"]:
            lay = {"attn": {k: v for k, v in lo["attn"].items()}}
            for key in ("norm1", "residual1", "norm2", "ffn_hidden", "ffn_act", "ffn_out", "residual2", "output"):
                if key in lo:
                    lay[key] = lo[key]
            ref["layers"].append(lay)
    else:
        ref.update(out["layers"][0]["attn"])
        ref["output"] = out["layers"][0]["attn"]["output"] if s["final"] is None else out["output"]
    for key in ("ids", "final_norm", "logits", "next"):
        if key in out:
            ref[key] = out[key]
    if "backward" in L:
        ref.update(grads(L, s, params))
        checks.add("autograd")
    print("%s%s: checks %s" % (os.path.basename(path), " (compare)" if override else "", ", ".join(sorted(checks))),
          file=sys.stderr)
    if override is None and "compare" in L:
        ref["compare"] = reference(path, L["compare"])
    return plain(ref)


# ------------------------------------------------------------------ the lessons

def rnd(g, rows, cols, scale=1.0):
    """Numbers a JSON file holds exactly: 6 decimals."""
    return [[round(float(v), 6) for v in row] for row in (torch.randn(rows, cols, generator=g) * scale)]


def rvec(g, n, lo=0.5, hi=1.5):
    return [round(float(v), 6) for v in (torch.rand(n, generator=g) * (hi - lo) + lo)]


def lessons(folder):
    g = torch.Generator().manual_seed(21)
    out = {}
    # 1. Qwen3's shape: QK-norm with RoPE and GQA, pre-norm RMSNorm blocks with SwiGLU, two layers, the LM head.
    n, d, h, kv, dk, ff, voc = 5, 8, 4, 2, 4, 12, 11
    def qwen_layer():
        return {"heads": h, "kv_heads": kv, "W_q": rnd(g, d, h * dk, 0.5), "W_k": rnd(g, d, kv * dk, 0.5),
                "W_v": rnd(g, d, kv * dk, 0.5), "W_o": rnd(g, h * dk, d, 0.5),
                "qk_norm": {"q": rvec(g, dk), "k": rvec(g, dk), "eps": 1e-6},
                "block": {"norm": "pre", "norm_kind": "rmsnorm", "eps": 1e-6,
                          "ln1": {"gamma": rvec(g, d)}, "ln2": {"gamma": rvec(g, d)},
                          "ffn": {"W_1": rnd(g, d, ff, 0.5), "W_3": rnd(g, d, ff, 0.5), "W_2": rnd(g, ff, d, 0.5),
                                  "activation": "swiglu"}}}
    l0, l1 = qwen_layer(), qwen_layer()
    top = {"attnviz": 2, "title": {"en": "QK-norm, RoPE and GQA (Qwen3's shape) with the LM head",
                                   "zh": "QK-norm、RoPE 与 GQA（Qwen3 的结构）及语言模型头"},
           "tokens": ["The", " cat", " sat", " on", " the"], "X": rnd(g, n, d), "mask": "causal",
           "rope": {"base": 1000000.0, "style": "half"}}
    top.update(l0)
    top["block"] = dict(l0["block"], final_norm={"gamma": rvec(g, d)})
    top["layers"] = [{}, l1]
    top.update({"vocab": ["<|endoftext|>", "The", " cat", " sat", " on", " the", " mat", ".", " dog", "\u732b", " \u00e9t\u00e9"],
                "unembed": rnd(g, voc, d), "ids": [1, 2, 3, 4, 5], "temperature": 0.8, "top_k": 5, "logits_row": 3})
    out["qwen3_qknorm_rope_gqa"] = top
    # 2. GPT-2's shape: learned positions, LayerNorm, biases everywhere, the tanh GELU (gelu_new), ln_f, a tied head.
    n, d, h, ff, voc = 4, 6, 2, 10, 9
    wte = rnd(g, voc, d)
    ids = [3, 7, 1, 4]
    def gpt_layer():
        return {"heads": h, "W_q": rnd(g, d, d, 0.6), "W_k": rnd(g, d, d, 0.6), "W_v": rnd(g, d, d, 0.6),
                "W_o": rnd(g, d, d, 0.6), "b_q": rvec(g, d, -0.2, 0.2), "b_k": rvec(g, d, -0.2, 0.2),
                "b_v": rvec(g, d, -0.2, 0.2), "b_o": rvec(g, d, -0.2, 0.2),
                "block": {"norm": "pre", "norm_kind": "layernorm", "eps": 1e-5,
                          "ln1": {"gamma": rvec(g, d), "beta": rvec(g, d, -0.1, 0.1)},
                          "ln2": {"gamma": rvec(g, d), "beta": rvec(g, d, -0.1, 0.1)},
                          "ffn": {"W_1": rnd(g, d, ff, 0.6), "b_1": rvec(g, ff, -0.2, 0.2), "W_2": rnd(g, ff, d, 0.6),
                                  "b_2": rvec(g, d, -0.2, 0.2), "activation": "gelu_new"}}}
    l0, l1 = gpt_layer(), gpt_layer()
    top = {"attnviz": 2, "title": {"en": "GPT-2's shape: learned positions, gelu_new, a tied LM head",
                                   "zh": "GPT-2 的结构：学习的位置、gelu_new、共享权重的语言模型头"},
           "tokens": ["a", "b", "c", "d"], "X": [wte[i] for i in ids], "positional": "learned",
           "PE": rnd(g, n, d, 0.3), "mask": "causal"}
    top.update(l0)
    top["block"] = dict(l0["block"], final_norm={"gamma": rvec(g, d), "beta": rvec(g, d, -0.1, 0.1)})
    top["layers"] = [{}, dict(l1, block=dict(l1["block"], ffn=dict(l1["block"]["ffn"], activation="gelu_tanh")))]
    top.update({"vocab": ["!", "\"", "#", " the", " of", " and", " to", "\n", "\u00e9"], "unembed": wte, "ids": ids,
                "temperature": 1.3, "top_k": 4})
    out["gpt2_learned_gelu_tanh"] = top
    # 3. QK-norm without RoPE, one layer without a block: the head reads the attention's output; T = 0.5.
    n, d, h, dk, voc = 3, 4, 2, 2, 6
    out["qknorm_plain_head"] = {
        "attnviz": 2, "title": {"en": "QK-norm without RoPE; the LM head on the attention's output",
                                "zh": "没有 RoPE 的 QK-norm；语言模型头读取注意力的输出"},
        "tokens": ["x", "y", "z"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, h * dk),
        "W_v": rnd(g, d, h * dk), "W_o": rnd(g, h * dk, d), "qk_norm": {"q": rvec(g, dk), "k": rvec(g, dk), "eps": 0.01},
        "vocab": ["u", "v", "w", "x", "y", "z"], "unembed": rnd(g, voc, d), "temperature": 0.5, "top_k": 6}
    # 4. The gradients through QK-norm and RoPE (GQA), a loss on the output.
    n, d, h, kv, dk = 4, 4, 2, 1, 4
    out["qknorm_rope_backward"] = {
        "attnviz": 2, "title": {"en": "The gradients through QK-norm and RoPE", "zh": "穿过 QK-norm 与 RoPE 的梯度"},
        "tokens": ["p", "q", "r", "s"], "X": rnd(g, n, d), "heads": h, "kv_heads": kv, "W_q": rnd(g, d, h * dk),
        "W_k": rnd(g, d, kv * dk), "W_v": rnd(g, d, kv * dk), "W_o": rnd(g, h * dk, d), "mask": "causal", "rope": True,
        "qk_norm": {"q": rvec(g, dk), "k": rvec(g, dk), "eps": 1e-6}, "backward": {"target": rnd(g, n, d)}}
    os.makedirs(folder, exist_ok=True)
    for name, lesson in out.items():
        with open(os.path.join(folder, name + ".json"), "w") as f:
            json.dump(lesson, f, ensure_ascii=False, indent=1)
            f.write("\n")


def main(argv):
    if len(argv) == 3 and argv[1] == "--lessons":
        lessons(argv[2])
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        ref = reference(argv[1])
    except CheckFailed as e:
        print("%s: %s" % (argv[1], e), file=sys.stderr)
        return 1
    json.dump(ref, sys.stdout, indent=1, allow_nan=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
