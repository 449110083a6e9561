#!/usr/bin/python3
"""Independent reference numbers for Gemma's pieces of issue 23 (the (1 + w)
RMSNorm of the block and of QK-norm, sandwich norms, the embedding scaled by
sqrt(d_model), query_pre_attn_scalar as the lesson's "scale"), computed with
PyTorch in float64:

    make_reference_gemma.py --all tests/golden/gemma   # the lessons and every NAME.ref.json
    make_reference_gemma.py LESSON.json > LESSON.ref.json

Written from issue 23, lessons/FORMAT.md and the transformers code below,
not from the C code. Its forward is its own, a Gemma layer as transformers
writes it; only the small helpers (RoPE's turn, repeat_kv, the row-convention
linear, gelu_new, the seeded generators) are make_reference_v4.py's. The lines
followed (transformers, src/transformers/models/…, modeling_gemma3.py at
commit 0018aa647bb13801f061e2d1027c326f531b59fb):

  gemma3/modeling_gemma3.py, Gemma3RMSNorm:
        self.weight = nn.Parameter(torch.zeros(dim))
        def _norm(self, x): return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        def forward(self, x):
            output = self._norm(x.float())
            output = output * (1.0 + self.weight.float())          -> gemma_rms_norm() ("rmsnorm_plus1")
  gemma3/modeling_gemma3.py, Gemma3Attention.__init__ and forward:
        self.scaling = config.query_pre_attn_scalar**-0.5          -> the lesson's "scale" number
        self.q_norm = Gemma3RMSNorm(dim=config.head_dim, eps=config.rms_norm_eps)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        query_states = self.q_norm(query_states); key_states = self.k_norm(key_states)
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
                                                                    -> attention(): QK-norm per head, before RoPE
    eager_attention_forward:
        attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
        if softcap is not None: attn_weights = tanh(attn_weights / softcap) * softcap
        attn_weights = attn_weights + causal_mask; softmax(dim=-1); matmul(attn_weights, value_states)
  gemma3/modeling_gemma3.py, Gemma3DecoderLayer.forward (Gemma2DecoderLayer's is the same):
        residual = hidden_states
        hidden_states = self.input_layernorm(hidden_states)
        hidden_states, _ = self.self_attn(hidden_states=hidden_states, ...)
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.pre_feedforward_layernorm(hidden_states)
        hidden_states = self.mlp(hidden_states)
        hidden_states = self.post_feedforward_layernorm(hidden_states)
        hidden_states = residual + hidden_states                   -> layer(): "norm": "sandwich"
    (ln1 = input_layernorm, ln1_after = post_attention_layernorm, ln2 =
    pre_feedforward_layernorm, ln2_after = post_feedforward_layernorm)
  gemma3/modeling_gemma3.py, Gemma3TextScaledWordEmbedding.forward:
        return super().forward(input_ids) * self.embed_scale.to(self.weight.dtype)
    with embed_scale=self.config.hidden_size**0.5 (Gemma3TextModel.__init__); and
  gemma2/modeling_gemma2.py, Gemma2Model.forward:
        normalizer = torch.tensor(self.config.hidden_size**0.5, dtype=hidden_states.dtype)
        hidden_states = hidden_states * normalizer                 -> forward(): "embed_scale": true
    In float64 the normalizer is the double nearest sqrt(d_model) (in the
    bfloat16 of the real checkpoints sqrt(3072) = 55.4256 becomes 55.5, as
    the file's comment says: a lesson can give that number instead of true).
  Gemma3ForCausalLM.forward: logits = lm_head(h); then tanh(logits / c) * c
    with final_logit_softcapping (Gemma 2's 30).

A lesson's "scale" is the factor the scores are multiplied by, so Gemma's
query_pre_attn_scalar q is "scale": q**-0.5 (the lessons below write the
double Python gives for it). With "decode", each step's row is the full
computation's row t (the cache holds keys 0 … t). With "backward", every
gradient is torch.autograd's.

Cross-checks (stderr): the (1 + w) norm again as a Python loop, x / sqrt(mean
x^2 + eps) * (1 + w), cell by cell; the sandwich layer again as two pre-norm
halves with the after norms applied by hand; the embedding scale as the
Python float d ** 0.5 against math.sqrt(d).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_v4 as v4  # noqa: E402  (RoPE's turn, repeat_kv, linear, gelu_new, the generators)
from lessonfiles import lesson_json, write_json, make_all  # noqa: E402

torch.set_default_dtype(torch.float64)
T, vec, agree = v4.T, v4.vec, v4.agree


# ------------------------------------------------------------------ Gemma, as transformers computes it

def rms_norm(x, w, eps):
    """LlamaRMSNorm / Qwen3RMSNorm: x * rsqrt(mean(x^2) + eps) * w."""
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def gemma_rms_norm(x, w, eps):
    """Gemma3RMSNorm.forward: _norm(x) * (1.0 + weight)."""
    output = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return output * (1.0 + w)


def norm(kind, x, w, eps, checks=None):
    if kind == "rmsnorm_plus1":
        y = gemma_rms_norm(x, w, eps)
        if checks is not None:
            rows = x.reshape(-1, x.shape[-1])
            loop = [[float(r[c]) / math.sqrt(sum(float(v) ** 2 for v in r) / len(r) + eps) * (1.0 + float(w[c]))
                     for c in range(len(r))] for r in rows]
            agree("(1 + w) norm loop", loop, y.reshape(-1, x.shape[-1]), 1e-13)
            checks.add("norm_plus1")
        return y
    if kind == "rmsnorm":
        return rms_norm(x, w, eps)
    raise SystemExit("norm_kind %r: this script computes RMSNorms" % kind)


def sees(mask, n):
    idx = torch.arange(n)
    q, kv = idx.view(-1, 1), idx.view(1, -1)
    if mask == "causal":
        return kv <= q
    if isinstance(mask, dict) and "window" in mask:
        return (kv <= q) & (kv > q - mask["window"])
    if mask in (None, "none"):
        return torch.ones(n, n, dtype=torch.bool)
    raise SystemExit("mask %r: causal masks and windows only" % (mask,))


def activation(name, hidden, gate):
    """Gemma3MLP.forward: down_proj(act_fn(gate_proj(x)) * up_proj(x)); Qwen's swiglu; a dense FFN's act."""
    if name == "swiglu":
        return F.silu(hidden) * gate
    act = {"gelu_tanh": v4.gelu_new, "gelu_new": v4.gelu_new, "gelu": F.gelu, "relu": F.relu}[name](hidden)
    return act * gate if gate is not None else act


def attention(x, p, s, out, checks):
    n = x.shape[0]
    h, g = p["heads"], p["kv_heads"]
    dk = p["W_q"].shape[1] // h
    dv = p["W_v"].shape[1] // g
    q, k, v = v4.linear(x, p["W_q"], None), v4.linear(x, p["W_k"], None), v4.linear(x, p["W_v"], None)
    out["Q"], out["K"], out["V"] = q, k, v
    qh, kh = q.view(n, h, dk), k.view(n, g, dk)
    if p["qk_norm"] is not None:                     # self.q_norm(query_states), per head over head_dim
        kind = s["qk_kind"]
        qh = norm(kind, qh, p["qk_norm"]["q"], s["qk_eps"], checks)
        kh = norm(kind, kh, p["qk_norm"]["k"], s["qk_eps"], checks)
        out["Q_norm"], out["K_norm"] = qh.reshape(n, h * dk), kh.reshape(n, g * dk)
    qt, kt, vt = qh.transpose(0, 1), kh.transpose(0, 1), v.view(n, g, dv).transpose(0, 1)
    if s["rope"]:
        base = p["rope_base"] if p["rope_base"] is not None else s["rope_base"]
        qt, kt = v4.rope(qt, base), v4.rope(kt, base)
        out["Q_rot"], out["K_rot"] = qt.transpose(0, 1).reshape(n, h * dk), kt.transpose(0, 1).reshape(n, g * dk)
    keys, vals = v4.repeat_kv(kt, h // g), v4.repeat_kv(vt, h // g)
    scores = qt @ keys.transpose(1, 2)
    scaling = s["scale"] if s["scale"] is not None else dk ** -0.5   # config.query_pre_attn_scalar**-0.5
    w = scores * scaling
    if s["softcap"]:
        w = torch.tanh(w / s["softcap"]) * s["softcap"]
    w = w + torch.zeros(n, n).masked_fill(~sees(p["mask"], n), float("-inf"))
    weights = F.softmax(w, dim=-1)
    weighted = weights @ vals
    out["heads"] = [{"scores": scores[i], "weights": weights[i], "output": weighted[i]} for i in range(h)]
    concat = weighted.transpose(0, 1).reshape(n, h * dv)
    out["concat"] = concat
    o = v4.linear(concat, p["W_o"], None)
    out["output"] = o
    return o


def ffn(x, p, s):
    hidden = v4.linear(x, p["W_1"], None)
    gate = v4.linear(x, p["W_3"], None) if p["W_3"] is not None else None
    act = activation(p["activation"], hidden, gate)
    return v4.linear(act, p["W_2"], None), hidden, act


def layer(x, p, s, out, checks):
    """Gemma3DecoderLayer.forward ("sandwich"), or a pre-norm layer (LlamaDecoderLayer's order)."""
    at = out["attn"] = {}
    kind, eps = p["norm_kind"], p["eps"]
    n1 = norm(kind, x, p["ln1"], eps, checks)                        # self.input_layernorm
    a = attention(n1, p, s, at, checks)
    if p["sandwich"]:
        a1 = norm(kind, a, p["ln1_after"], eps, checks)               # self.post_attention_layernorm
        out["norm1_after"] = a1
        a = a1
    r1 = x + a                                                       # residual + hidden_states
    n2 = norm(kind, r1, p["ln2"], eps, checks)                       # self.pre_feedforward_layernorm
    f, hidden, act = ffn(n2, p, s)                                   # self.mlp
    out.update(norm1=n1, residual1=r1, norm2=n2, ffn_hidden=hidden, ffn_act=act, ffn_out=f)
    if p["sandwich"]:
        f2 = norm(kind, f, p["ln2_after"], eps, checks)               # self.post_feedforward_layernorm
        out["norm2_after"] = f2
        f = f2
    r2 = r1 + f
    if checks is not None and p["sandwich"]:
        # the same layer as two pre-norm halves, the after norms by hand
        half1 = x + gemma_or_rms(kind, attention(norm(kind, x, p["ln1"], eps), p, s, {}, None), p["ln1_after"], eps)
        agree("sandwich: first half again", half1, r1, 1e-13)
        checks.add("sandwich")
    out.update(residual2=r2, output=r2)
    return r2


def gemma_or_rms(kind, x, w, eps):
    return gemma_rms_norm(x, w, eps) if kind == "rmsnorm_plus1" else rms_norm(x, w, eps)


def forward(J, s, params, checks, x0=None):
    out = {}
    inp = T(J["X"]) if x0 is None else x0
    x = inp
    if s["embed_scale"] is not None:
        d = inp.shape[1]
        if s["embed_scale"] is True:
            normalizer = torch.tensor(d ** 0.5, dtype=inp.dtype)      # Gemma2Model.forward's normalizer
            if checks is not None:
                agree("d ** 0.5 is math.sqrt(d)", float(normalizer), math.sqrt(d), 0)
                checks.add("embed_scale")
        else:
            normalizer = torch.tensor(float(s["embed_scale"]), dtype=inp.dtype)
        x = x * normalizer
    if J.get("positional") == "sinusoidal":                           # Vaswani et al.: embeddings · sqrt(d), + PE
        n, d = x.shape
        pe = torch.zeros(n, d)
        for pos in range(n):
            for c in range(0, d, 2):
                pe[pos, c] = math.sin(pos / 10000 ** (c / d))
                if c + 1 < d:
                    pe[pos, c + 1] = math.cos(pos / 10000 ** (c / d))
        x = x + pe
    out["input"], out["X"] = inp, x
    out["layers"] = []
    for p in params:
        lo = {}
        x = layer(x, p, s, lo, checks)
        out["layers"].append(lo)
    out["output"] = x
    if s["final"] is not None:
        x = gemma_or_rms(s["final_kind"], x, s["final"], s["final_eps"])   # self.norm
        out["output"] = x
    if "vocab" in J:
        logits = x @ T(J["unembed"]).T                               # lm_head
        if J.get("final_logit_softcapping"):
            c = J["final_logit_softcapping"]
            logits = torch.tanh(logits / c) * c
        row = J.get("logits_row", x.shape[0] - 1)
        temp = J.get("temperature", 1.0)
        probs = F.softmax(logits[row] / temp, dim=-1)
        k = min(J.get("top_k", 10), len(J["vocab"]))
        top = sorted(range(len(J["vocab"])), key=lambda e: (-float(probs[e]), e))[:k]
        out["final_norm"], out["logits"] = x, logits
        out["next"] = {"row": row, "temperature": temp, "probs": probs, "top": top}
    return out


# ------------------------------------------------------------------ the lesson

def read_lesson(path, override=None):
    J = lesson_json(path, override)
    blk = J.get("block") or {}
    qk = J.get("qk_norm")
    s = {"rope": bool(J.get("rope")), "rope_base": J["rope"].get("base", 10000.0) if isinstance(J.get("rope"), dict)
         else 10000.0, "scale": J.get("scale") if isinstance(J.get("scale"), (int, float)) and
         not isinstance(J.get("scale"), bool) else None, "softcap": J.get("attn_logit_softcapping"),
         "qk_kind": (qk or {}).get("kind", "rmsnorm"), "qk_eps": (qk or {}).get("eps", 1e-6),
         "embed_scale": J.get("embed_scale") if J.get("embed_scale") not in (None, False) else None,
         "final": vec(blk["final_norm"]["gamma"]) if blk.get("final_norm") else None,
         "final_kind": blk.get("norm_kind", "layernorm"), "final_eps": blk.get("eps", 1e-5)}
    params = []
    for lay in J.get("layers") or [{}]:
        m = dict(J)
        m.update(lay)
        b = m.get("block") or {}
        f = b.get("ffn") or {}
        d = len(J["X"][0])
        zero = 0.0 if b.get("norm_kind") == "rmsnorm_plus1" else 1.0

        def gamma(key):
            return vec(b[key]["gamma"]) if key in b and "gamma" in b[key] else torch.full((d,), zero)
        if b.get("norm") not in ("pre", "sandwich"):
            raise SystemExit("%s: pre-norm and sandwich blocks only" % path)
        p = {"heads": m.get("heads", 1), "W_q": T(m["W_q"]), "W_k": T(m["W_k"]), "W_v": T(m["W_v"]),
             "W_o": T(m["W_o"]), "norm_kind": b.get("norm_kind", "layernorm"), "eps": b.get("eps", 1e-5),
             "sandwich": b.get("norm") == "sandwich", "ln1": gamma("ln1"), "ln2": gamma("ln2"),
             "ln1_after": gamma("ln1_after"), "ln2_after": gamma("ln2_after"),
             "W_1": T(f["W_1"]), "W_2": T(f["W_2"]), "W_3": T(f["W_3"]) if "W_3" in f else None,
             "activation": f.get("activation", "relu"), "mask": m.get("mask", "none"),
             "rope_base": lay["rope"]["base"] if isinstance(lay.get("rope"), dict) else None}
        p["kv_heads"] = m.get("kv_heads", p["heads"])
        p["qk_norm"] = {"q": vec(m["qk_norm"]["q"]), "k": vec(m["qk_norm"]["k"])} if m.get("qk_norm") else None
        params.append(p)
    return J, s, params


def grads(J, s, params):
    """With "backward": {"target": …} in a one-layer pre-norm lesson: ½ Σ (output − target)², by autograd, under
    the keys of a block lesson's dump (grad.layers[0], the attention's weights and Q, K under "attn")."""
    p = params[0]
    dumped = {"W_q": "W_q", "W_k": "W_k", "W_v": "W_v", "W_o": "W_o", "ln1": "ln1_gamma", "ln2": "ln2_gamma",
              "W_1": "ffn_W_1", "W_2": "ffn_W_2", "W_3": "ffn_W_3"}
    leaves = [key for key in dumped if p.get(key) is not None]
    p.update({key: p[key].clone().requires_grad_(True) for key in leaves})
    x0 = T(J["X"]).requires_grad_(True)
    lo = forward(J, s, params, None, x0)["layers"][0]
    kept = dict(Q=lo["attn"]["Q"], K=lo["attn"]["K"], norm1=lo["norm1"], residual1=lo["residual1"], ffn_out=lo["ffn_out"])
    [t.retain_grad() for t in kept.values()]
    (0.5 * ((lo["output"] - T(J["backward"]["target"])) ** 2).sum()).backward()
    lay = {name: kept[name].grad for name in ("norm1", "residual1", "ffn_out")}
    lay["attn"] = {name: kept[name].grad for name in ("Q", "K")}
    for key in leaves:
        (lay["attn"] if dumped[key] in ("W_q", "W_k", "W_v", "W_o") else lay)[dumped[key]] = p[key].grad
    return {"X": x0.grad, "layers": [lay]}


def reference(path, override=None):
    J, s, params = read_lesson(path, override)
    checks = set()
    out = forward(J, s, params, checks)
    ref = {"n": len(J["tokens"]), "input": out["input"], "X": out["X"], "output": out["output"], "layers": []}
    for lo in out["layers"]:
        ref["layers"].append({k: v for k, v in lo.items()})
    for key in ("final_norm", "logits", "next"):
        if key in out:
            ref[key] = out[key]
    if J.get("decode"):
        n = ref["n"]
        for lay in ref["layers"]:
            lay["decode"] = [{"t": t, "K_cache": [(lay["attn"].get("K_rot", lay["attn"]["K"]))[j] for j in range(t + 1)],
                              "heads": [{"weights": [hd["weights"][t][: t + 1]]} for hd in lay["attn"]["heads"]],
                              "layer_output": [lay["output"][t]]} for t in range(n)]
    if "backward" in J:
        ref["grad"] = grads(J, s, params)
        checks.add("autograd")
    print("%s%s: checks %s" % (os.path.basename(path), " (compare)" if override else "", ", ".join(sorted(checks))),
          file=sys.stderr)
    if override is None and "compare" in J:
        ref["compare"] = reference(path, J["compare"])
    return v4.plain(ref)


# ------------------------------------------------------------------ the lessons

def gemma_layer(g, d, h, kv, dk, ff, kind, sandwich, act="gelu_tanh", zero_centred=True):
    """One Gemma-shaped layer: its weights, QK-norm per head, a gated FFN (W_1 the gate, W_3 the up projection)."""
    rnd, rvec = v4.rnd, v4.rvec
    lo, hi = (-0.5, 0.5) if zero_centred else (0.5, 1.5)
    blk = {"norm": "sandwich" if sandwich else "pre", "norm_kind": kind, "eps": 1e-6,
           "ln1": {"gamma": rvec(g, d, lo, hi)}, "ln2": {"gamma": rvec(g, d, lo, hi)},
           "ffn": {"W_1": rnd(g, d, ff, 0.5), "W_3": rnd(g, d, ff, 0.5), "W_2": rnd(g, ff, d, 0.5), "activation": act}}
    if sandwich:
        blk["ln1_after"] = {"gamma": rvec(g, d, lo, hi)}
        blk["ln2_after"] = {"gamma": rvec(g, d, lo, hi)}
    return {"heads": h, "kv_heads": kv, "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, kv * dk),
            "W_v": rnd(g, d, kv * dk), "W_o": rnd(g, h * dk, d, 0.5),
            "qk_norm": {"q": rvec(g, dk, lo, hi), "k": rvec(g, dk, lo, hi)}, "block": blk}


def lessons(folder):
    from lessonfiles import write_lessons
    g = torch.Generator().manual_seed(2303)
    rnd, rvec = v4.rnd, v4.rvec
    out = {}
    toks = ["The", " cat", " sat", " on", " the"]
    # 1. Gemma's (1 + w) RMSNorm in a pre-norm block and in QK-norm, swiglu, RoPE, causal, a final norm.
    n, d, h, dk, ff = 4, 6, 2, 4, 8
    lay = gemma_layer(g, d, h, h, dk, ff, "rmsnorm_plus1", False, act="swiglu")
    del lay["kv_heads"]
    out["plus1_pre"] = dict({"attnviz": 2, "title": {"en": "Gemma's (1 + w) RMSNorm, before each sublayer and in QK-norm",
                                                     "zh": "Gemma 的 (1 + w) RMSNorm：在每个子层之前和 QK-norm 中"},
                             "tokens": toks[:n], "X": rnd(g, n, d), "mask": "causal", "rope": True}, **lay)
    out["plus1_pre"]["qk_norm"] = dict(lay["qk_norm"], kind="rmsnorm_plus1", eps=1e-6)
    out["plus1_pre"]["block"] = dict(lay["block"], final_norm={"gamma": rvec(g, d, -0.5, 0.5)})
    # 2. Sandwich norms with plain RMSNorm (no QK-norm), GELU-tanh FFN without a gate, decoded token by token,
    #    the embedding scaled by a number of its own (bfloat16's rounding of a normalizer, say).
    n, d, h, kv, dk, ff = 5, 4, 2, 1, 2, 6
    lay = gemma_layer(g, d, h, kv, dk, ff, "rmsnorm", True, act="gelu_tanh", zero_centred=False)
    del lay["qk_norm"], lay["block"]["ffn"]["W_3"]
    out["sandwich_rmsnorm_decode"] = dict({"attnviz": 2, "title": {"en": "Sandwich norms, decoded with a KV cache",
                                                                   "zh": "三明治归一化：用 KV 缓存逐词解码"},
                                           "tokens": toks, "X": rnd(g, n, d), "mask": "causal", "rope": True,
                                           "decode": True, "embed_scale": 2.5}, **lay)
    # 3. Gemma-3-shaped: sandwich (1 + w) norms, QK-norm (1 + w), GQA, RoPE, the embedding scaled by sqrt(d_model),
    #    query_pre_attn_scalar 8 (scale 8**-0.5 with d_k = 4), Gemma 2's caps, a local layer (window 2, its own
    #    RoPE base) then a global one, SwiGLU FFNs, a final norm and an LM head.
    n, d, h, kv, dk, ff, voc = 5, 8, 4, 2, 4, 12, 6
    l0, l1 = [gemma_layer(g, d, h, kv, dk, ff, "rmsnorm_plus1", True, act="swiglu") for _ in range(2)]
    l0["mask"], l0["rope"] = {"window": 2}, {"base": 100.0}
    l1["mask"] = "causal"
    top = {"attnviz": 2, "title": {"en": "A Gemma-3-shaped stack: sandwich norms, (1 + w), QK-norm, local and global",
                                   "zh": "Gemma 3 形状的堆叠：三明治归一化、(1 + w)、QK-norm、局部与全局"},
           "tokens": toks, "X": rnd(g, n, d), "mask": "causal", "rope": True, "embed_scale": True,
           "scale": 8 ** -0.5, "attn_logit_softcapping": 5.0, "final_logit_softcapping": 3.0}
    top.update({k: v for k, v in l0.items() if k not in ("mask", "rope")})
    top["qk_norm"] = dict(l0["qk_norm"], kind="rmsnorm_plus1", eps=1e-6)
    top["block"] = dict(l0["block"], final_norm={"gamma": rvec(g, d, -0.5, 0.5)})
    top["layers"] = [{"mask": l0["mask"], "rope": l0["rope"]}, l1]
    top.update({"vocab": ["<eos>", "The", " cat", " sat", " on", " the"], "unembed": rnd(g, voc, d), "top_k": 3})
    out["gemma3_stack"] = top
    # 4. Vaswani's scale: the embedding times sqrt(d_model), then the sinusoidal PE; a pre-norm (1 + w) block.
    n, d, h, dk, ff = 4, 4, 1, 4, 4
    lay = gemma_layer(g, d, h, h, dk, ff, "rmsnorm_plus1", False, act="relu")
    del lay["kv_heads"], lay["qk_norm"], lay["heads"], lay["block"]["ffn"]["W_3"]
    out["embed_scale_positional"] = dict({"attnviz": 2, "title": {"en": "The embedding times sqrt(d_model), then PE",
                                                                  "zh": "嵌入乘以 sqrt(d_model)，再加位置编码"},
                                          "tokens": toks[:n], "X": rnd(g, n, d), "positional": "sinusoidal",
                                          "embed_scale": True, "mask": "causal"}, **lay)
    # 5. The gradients through the (1 + w) norms: one pre-norm layer, QK-norm (1 + w), two heads.
    n, d, h, dk, ff = 4, 4, 2, 2, 6
    lay = gemma_layer(g, d, h, h, dk, ff, "rmsnorm_plus1", False, act="relu")
    del lay["kv_heads"], lay["block"]["ffn"]["W_3"]
    out["plus1_backward"] = dict({"attnviz": 2, "title": {"en": "The gradients through (1 + w) norms",
                                                          "zh": "穿过 (1 + w) 归一化的梯度"},
                                  "tokens": toks[:n], "X": rnd(g, n, d), "mask": "causal", "rope": True,
                                  "backward": {"target": rnd(g, n, d)}}, **lay)
    out["plus1_backward"]["qk_norm"] = dict(lay["qk_norm"], kind="rmsnorm_plus1")
    # 6. Gemma's gate (GeGLU: gelu_tanh(x·W_1) ⊙ x·W_3, "gelu_tanh" with W_3) in a sandwich layer, decoded.
    n, d, h, kv, dk, ff = 4, 4, 2, 1, 2, 6
    lay = gemma_layer(g, d, h, kv, dk, ff, "rmsnorm_plus1", True, act="gelu_tanh")
    del lay["qk_norm"]
    out["geglu_sandwich_decode"] = dict({"attnviz": 2, "title": {"en": "Gemma's gelu_tanh gate in a sandwich layer, decoded",
                                                                 "zh": "三明治层中 Gemma 的 gelu_tanh 门控，逐词解码"},
                                         "tokens": toks[:n], "X": rnd(g, n, d), "mask": "causal", "rope": True,
                                         "decode": True, "embed_scale": True}, **lay)
    # 7. The gradients through Gemma's gate: one pre-norm (1 + w) layer.
    n, d, h, dk, ff = 3, 4, 1, 4, 5
    lay = gemma_layer(g, d, h, h, dk, ff, "rmsnorm_plus1", False, act="gelu_tanh")
    del lay["qk_norm"], lay["kv_heads"], lay["heads"]
    out["geglu_backward"] = dict({"attnviz": 2, "title": {"en": "The gradients through Gemma's gelu_tanh gate",
                                                          "zh": "穿过 Gemma 的 gelu_tanh 门控的梯度"},
                                  "tokens": toks[:n], "X": rnd(g, n, d), "mask": "causal",
                                  "backward": {"target": rnd(g, n, d)}}, **lay)
    write_lessons(folder, out)


def main(argv):
    if len(argv) == 3 and argv[1] == "--all":
        make_all(argv[2], lessons, reference)
        return 0
    if len(argv) == 3 and argv[1] == "--lessons":
        lessons(argv[2])
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    write_json("/dev/stdout", reference(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
