#!/usr/bin/python3
"""Independent reference numbers for issue 23 §6 and §1: gated attention
(Qwen3-Next) and OLMo 2's QK-norm over the whole projection, computed with
PyTorch in float64:

    make_reference_gated.py --lessons DIR      # write the lessons (literal numbers from a seeded generator)
    make_reference_gated.py LESSON.json > LESSON.ref.json   # (and its "compare" variant under "compare")
    make_reference_gated.py --all tests/golden/gated   # both: the lessons and every NAME.ref.json
    make_reference_gated.py lessons/gated.json > tests/golden/lessons/gated.ref.json

Written from issue 23, lessons/FORMAT.md and the transformers code below,
not from the C code. The rest of a layer (Qwen3's per-head QK-norm, RoPE,
repeat_kv, the block, the LM head) is make_reference_v4.py's, imported and
unchanged; this script replaces its attention(). The lines followed
(transformers, src/transformers/models/…):

  qwen3_next/modeling_qwen3_next.py (the file at commit
  01cdc6081c7500f9e50c98b1b943c90ecb665db3), Qwen3NextAttention:
    __init__:
        self.q_proj = nn.Linear(
            config.hidden_size, config.num_attention_heads * self.head_dim * 2, bias=config.attention_bias
        )
    forward:
        query_states, gate = torch.chunk(
            self.q_proj(hidden_states).view(*input_shape, -1, self.head_dim * 2), 2, dim=-1
        )
        gate = gate.reshape(*input_shape, -1)
        query_states = self.q_norm(query_states.view(hidden_shape)).transpose(1, 2)
        ...
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = attn_output * torch.sigmoid(gate)
        attn_output = self.o_proj(attn_output)
  A lesson gives the gate's half of q_proj as W_gate (d_model × h·d_v) beside
  W_q; this script builds Qwen3-Next's q_proj from the two (each head's
  2·head_dim columns: its W_q columns, then its W_gate columns), runs the
  lines above on it, and so checks that W_gate's column j gates concat's
  column j.                                                   -> attention(): "gate", "gate_sig", "gated"

  olmo2/modeling_olmo2.py (the file at commit
  000c33fdfde12e1ffafbfcdb3c926df5727a00b6), Olmo2Attention:
    __init__:
        self.q_norm = Olmo2RMSNorm(config.num_attention_heads * self.head_dim, config.rms_norm_eps)
        self.k_norm = Olmo2RMSNorm(config.num_key_value_heads * self.head_dim, config.rms_norm_eps)
    forward:
        query_states = self.q_norm(self.q_proj(hidden_states))
        key_states = self.k_norm(self.k_proj(hidden_states))
        query_states = query_states.view(hidden_shape).transpose(1, 2)
        ...
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)
    Olmo2RMSNorm.forward:
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return (self.weight * hidden_states).to(input_dtype)
  i.e. one RMSNorm over all heads' h·d_k numbers of a row (k: g·d_k),
  before the split into heads and before RoPE ("qk_norm": {"over":
  "projection"}).                                             -> attention(): "Q_norm", "K_norm"
    Olmo2DecoderLayer.forward (the block's "norm": "after"):
        residual = hidden_states
        hidden_states, _ = self.self_attn(hidden_states=hidden_states, ...)
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = self.mlp(hidden_states)
        hidden_states = self.post_feedforward_layernorm(hidden_states)
        hidden_states = residual + hidden_states                  -> layer(): "norm1" ... "residual2"
  With "decode", each decoded row equals the full computation's row (the
  cache holds keys 0 … t), as make_reference_softcap.py's reference says;
  with "backward", every gradient is torch.autograd's (v4's grads()).

Cross-checks (stderr): σ again as 1 / (1 + e^−x) with math.exp, cell by
cell, and gated = concat · σ; the gate again from W_gate directly (x·W_gate
equals the chunked half of q_proj); OLMo 2's norm again as a Python loop
over each row's h·d_k numbers.

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_v4 as v4  # noqa: E402  (its layer, norms, RoPE and LM head, unchanged)
from lessonfiles import write_lessons  # noqa: E402

torch.set_default_dtype(torch.float64)
T, vec, agree, CheckFailed = v4.T, v4.vec, v4.agree, v4.CheckFailed


def q_proj_weight(W_q, W_gate, h, dk):
    """Qwen3-Next's q_proj (row convention, d_model × h·2·head_dim): head i's query columns, then its gate columns."""
    cols = []
    for i in range(h):
        cols += [W_q[:, i * dk:(i + 1) * dk], W_gate[:, i * dk:(i + 1) * dk]]
    return torch.cat(cols, dim=1)


def attention(x, p, s, out, checks):
    """Qwen3NextAttention.forward (gated) and Olmo2Attention.forward (QK-norm over the projection) on v4's pieces."""
    n = x.shape[0]
    h, g = p["heads"], p["kv_heads"]
    dk = p["W_q"].shape[1] // h
    dv = p["W_v"].shape[1] // g
    gate = None
    if p.get("W_gate") is not None:                              # q_proj twice as wide, chunked per head
        if dk != dv:
            raise SystemExit("Qwen3-Next's q_proj has one head_dim: the script needs d_k = d_v")
        Wqp = q_proj_weight(p["W_q"], p["W_gate"], h, dk)
        bqp = None
        if p.get("b_q") is not None:
            raise SystemExit("a gated lesson with b_q: not computed here")
        qg = v4.linear(x, Wqp, bqp).view(n, -1, dk * 2)
        query_states, gate = torch.chunk(qg, 2, dim=-1)
        gate = gate.reshape(n, -1)
        q = query_states.reshape(n, h * dk)
        if checks is not None:
            agree("q from W_q alone", v4.linear(x, p["W_q"], None), q)
            agree("gate from W_gate alone", x @ p["W_gate"], gate)
            checks.add("gate_chunk")
    else:
        q = v4.linear(x, p["W_q"], p.get("b_q"))
    k = v4.linear(x, p["W_k"], p.get("b_k"))
    v = v4.linear(x, p["W_v"], p.get("b_v"))
    out["Q"], out["K"], out["V"] = q, k, v
    qh, kh = q.view(n, h, dk), k.view(n, g, dk)
    if p.get("qk_norm") is not None and s.get("qk_over") == "projection":   # OLMo 2: the whole row, then the heads
        qn = v4.rms_norm(q, p["q_norm"], s["qk_eps"])
        kn = v4.rms_norm(k, p["k_norm"], s["qk_eps"])
        if checks is not None:
            loop = torch.zeros_like(q)
            for i in range(n):
                r = math.sqrt(sum(float(c) ** 2 for c in q[i]) / q.shape[1] + s["qk_eps"])
                loop[i] = q[i] / r * p["q_norm"]
            agree("olmo2 qk_norm loop", loop, qn)
            checks.add("qk_norm_projection")
        out["Q_norm"], out["K_norm"] = qn, kn
        qh, kh = qn.view(n, h, dk), kn.view(n, g, dk)
    elif p.get("qk_norm") is not None:                           # Qwen3: each head's row
        qh, kh = v4.rms_norm(qh, p["q_norm"], s["qk_eps"]), v4.rms_norm(kh, p["k_norm"], s["qk_eps"])
        out["Q_norm"], out["K_norm"] = qh.reshape(n, h * dk), kh.reshape(n, g * dk)
    qt, kt, vt = qh.transpose(0, 1), kh.transpose(0, 1), v.view(n, g, dv).transpose(0, 1)
    if s["rope"]:
        qt, kt = v4.rope(qt, s["rope_base"]), v4.rope(kt, s["rope_base"])
        out["Q_rot"], out["K_rot"] = qt.transpose(0, 1).reshape(n, h * dk), kt.transpose(0, 1).reshape(n, g * dk)
    keys, vals = v4.repeat_kv(kt, h // g), v4.repeat_kv(vt, h // g)
    scores = qt @ keys.transpose(1, 2)
    attn = scores * dk ** -0.5
    if s["causal"]:
        mask = torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        attn = attn + mask
    weights = F.softmax(attn, dim=-1)
    weighted = weights @ vals
    out["heads"] = [{"scores": scores[i], "weights": weights[i], "output": weighted[i]} for i in range(h)]
    concat = weighted.transpose(0, 1).reshape(n, h * dv)        # attn_output.reshape(*input_shape, -1)
    out["concat"] = concat
    if gate is not None:
        gated = concat * torch.sigmoid(gate)                     # attn_output * torch.sigmoid(gate)
        if checks is not None:
            sig = [[1.0 / (1.0 + math.exp(-float(c))) for c in row] for row in gate]
            agree("sigmoid by math.exp", sig, torch.sigmoid(gate), 1e-15)
            agree("gated = concat * sigma", [[float(concat[i, j]) * sig[i][j] for j in range(h * dv)] for i in range(n)],
                  gated, 1e-14)
            checks.add("gate")
        out["gate"], out["gate_sig"], out["gated"] = gate, torch.sigmoid(gate), gated
        concat = gated
    o = v4.linear(concat, p["W_o"], p.get("b_o")) if p.get("W_o") is not None else concat
    out["output"] = o
    return o


v4.attention = attention   # v4.layer() now calls this one
_v4_read_lesson, _v4_layer, _v4_reference = v4.read_lesson, v4.layer, v4.reference


def layer(x, p, s, out, checks):
    """Olmo2DecoderLayer.forward: each sublayer's output normalised before its residual add ("norm": "after")."""
    if s.get("block_norm") != "after" or not p.get("block"):
        return _v4_layer(x, p, s, out, checks)
    at = out["attn"] = {}
    a = attention(x, p, s, at, checks)                          # self.self_attn(hidden_states)
    n1 = v4.norm(a, s, p["ln1_gamma"], p.get("ln1_beta"))       # self.post_attention_layernorm(...)
    r1 = x + n1                                                  # residual + hidden_states
    f, hidden, act = v4.ffn(r1, p, s)                            # self.mlp(hidden_states)
    n2 = v4.norm(f, s, p["ln2_gamma"], p.get("ln2_beta"))       # self.post_feedforward_layernorm(...)
    r2 = r1 + n2
    if checks is not None and s["norm_kind"] == "rmsnorm":
        loop = torch.zeros_like(a)
        for i in range(a.shape[0]):
            r = math.sqrt(sum(float(c) ** 2 for c in a[i]) / a.shape[1] + s["eps"])
            loop[i] = a[i] / r * p["ln1_gamma"]
        agree("post_attention_layernorm loop", loop, n1)
        checks.add("norm_after")
    out.update(norm1=n1, residual1=r1, ffn_hidden=hidden, ffn_act=act, ffn_out=f, norm2=n2, residual2=r2, output=r2)
    return r2


v4.layer = layer


def block_grads(L, s, params):
    """With "backward": {"target": …} in a one-layer block lesson: ½ Σ (output − target)², every gradient by autograd,
    under the keys of a block lesson's dump (grad.layers[0], its attention's under "attn")."""
    p = params[0]
    keys = {"W_q": "W_q", "W_k": "W_k", "W_v": "W_v", "W_o": "W_o", "ln1_gamma": "ln1_gamma", "ln1_beta": "ln1_beta",
            "ln2_gamma": "ln2_gamma", "ln2_beta": "ln2_beta", "W_1": "ffn_W_1", "W_2": "ffn_W_2"}
    for key in keys:
        if p.get(key) is not None:
            p[key] = p[key].clone().requires_grad_(True)
    x0 = T(L["X"]).requires_grad_(True)
    out = v4.forward_with_x(dict(L, X=x0), s, params, x0)
    lo = out["layers"][0]
    for t in (lo["attn"]["Q"], lo["attn"]["K"], lo["norm1"], lo["residual1"], lo["ffn_out"]):
        t.retain_grad()
    loss = 0.5 * ((out["output"] - T(L["backward"]["target"])) ** 2).sum()
    loss.backward()
    lay = {"attn": {"Q": lo["attn"]["Q"].grad, "K": lo["attn"]["K"].grad}, "norm1": lo["norm1"].grad,
           "residual1": lo["residual1"].grad, "ffn_out": lo["ffn_out"].grad}
    for key, name in keys.items():
        if p.get(key) is not None:
            (lay["attn"] if key in ("W_q", "W_k", "W_v", "W_o") else lay)[name] = p[key].grad
    return {"X": x0.grad, "layers": [lay]}


def reference(path, override=None):
    """v4's reference through this script's layer and attention, and the decoded rows (equal to the full ones)."""
    ref = _v4_reference(path, override)
    L, s, params = read_lesson(path, override)
    if "backward" in L and ref.get("layers"):   # a block's gradients, where a block lesson's dump has them
        ref["grad"] = v4.plain(block_grads(L, s, params))
    if L.get("decode") and not ref.get("layers"):
        ref["decode"] = [{"t": t, "heads": [{"weights": [hd["weights"][t][: t + 1]]} for hd in ref["heads"]],
                          "output": [ref["output"][t]]} for t in range(ref["n"])]
    return ref


def read_lesson(path, override=None):
    with open(path) as f:
        J = json.load(f)
    if override is not None:
        J.update({k: val for k, val in override.items() if k != "label"})
    o = dict(override or {})
    if (J.get("block") or {}).get("norm") == "after":   # v4 reads pre-norm blocks: the same block, read as one
        o["block"] = dict(J["block"], norm="pre")
    L, s, params = _v4_read_lesson(path, o or override)
    L["block"] = J.get("block")
    s["qk_over"] = (J.get("qk_norm") or {}).get("over", "head")
    s["block_norm"] = (J.get("block") or {}).get("norm", "post")
    for p, lay in zip(params, J.get("layers") or [{}]):
        m = dict(J)
        m.update(lay)
        p["W_gate"] = T(m["W_gate"]) if m.get("W_gate") else None   # false (a compare's): none
        if m.get("qk_norm") is not None:                               # a layer's own weights
            p["q_norm"], p["k_norm"] = vec(m["qk_norm"]["q"]), vec(m["qk_norm"]["k"])
    return L, s, params


v4.read_lesson = read_lesson   # v4.reference() reads through this one
v4.reference = reference       # and compare variants come back through this one


# ------------------------------------------------------------------ the lessons

def pre_layer(g, d, h, kv, dk, ff, qn, kn, v_scale, gate_scale):
    """One gated pre-norm RMSNorm/SwiGLU layer with QK-norm weights of qn and kn numbers."""
    rnd, rvec = v4.rnd, v4.rvec
    return {"heads": h, "kv_heads": kv, "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, kv * dk),
            "W_v": rnd(g, d, kv * dk, v_scale), "W_o": rnd(g, h * dk, d, 0.5), "W_gate": rnd(g, d, h * dk, gate_scale),
            "qk_norm": {"q": rvec(g, qn), "k": rvec(g, kn)},
            "block": {"norm": "pre", "norm_kind": "rmsnorm", "eps": 1e-6,
                      "ln1": {"gamma": rvec(g, d)}, "ln2": {"gamma": rvec(g, d)},
                      "ffn": {"W_1": rnd(g, d, ff, 0.5), "W_3": rnd(g, d, ff, 0.5), "W_2": rnd(g, ff, d, 0.5),
                              "activation": "swiglu"}}}


def lessons(folder):
    g = torch.Generator().manual_seed(236)
    rnd, rvec = v4.rnd, v4.rvec
    out = {}
    # 1. The gate alone: one head, no mask, W_o; gate logits large enough that σ spreads over (0, 1).
    n, d, dk = 4, 4, 4
    out["gated_plain"] = {
        "attnviz": 2, "title": {"en": "Gated attention, one head", "zh": "门控注意力：一个头"},
        "tokens": ["a", "b", "c", "d"], "X": rnd(g, n, d), "W_q": rnd(g, d, dk), "W_k": rnd(g, d, dk),
        "W_v": rnd(g, d, dk), "W_o": rnd(g, dk, d), "W_gate": rnd(g, d, dk, 2.0)}
    # 2. Two heads, causal, a bias on the output, and a compare without the gate.
    n, d, h, dk = 5, 6, 2, 3
    out["gated_heads_causal"] = {
        "attnviz": 2, "title": {"en": "Gated attention, two causal heads", "zh": "门控注意力：两个因果头"},
        "tokens": ["t0", "t1", "t2", "t3", "t4"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk),
        "W_k": rnd(g, d, h * dk), "W_v": rnd(g, d, h * dk), "W_o": rnd(g, h * dk, d), "b_o": rvec(g, d, -0.5, 0.5),
        "mask": "causal", "W_gate": rnd(g, d, h * dk, 1.5),
        "compare": {"label": {"en": "without the gate", "zh": "没有门"}, "W_gate": False}}
    # 3. Qwen3-Next-shaped full-attention layers: 4 heads on 2 kv heads, Qwen3's per-head QK-norm, RoPE, causal,
    #    two pre-norm RMSNorm/SwiGLU layers each with its own W_gate, the final norm and an LM head.
    n, d, h, kv, dk, ff, voc = 5, 8, 4, 2, 4, 12, 6
    l0, l1 = [pre_layer(g, d, h, kv, dk, ff, dk, dk, 0.5, 1.5) for _ in range(2)]
    top = {"attnviz": 2, "title": {"en": "Qwen3-Next's gated attention: QK-norm, RoPE, GQA, two layers",
                                   "zh": "Qwen3-Next 的门控注意力：QK-norm、RoPE、GQA、两层"},
           "tokens": ["The", " cat", " sat", " on", " the"], "X": rnd(g, n, d), "mask": "causal", "rope": True}
    top.update(l0)
    top["qk_norm"] = dict(l0["qk_norm"], eps=1e-6)
    top["block"] = dict(l0["block"], final_norm={"gamma": rvec(g, d)})
    top["layers"] = [{}, l1]
    top.update({"vocab": ["<eos>", "The", " cat", " sat", " on", " the"], "unembed": rnd(g, voc, d), "top_k": 3})
    out["qwen3next_gated_gqa_rope"] = top
    # 4. OLMo 2's QK-norm over the whole projection: 2 heads, causal, RoPE, one head's weights per column of h·d_k.
    n, d, h, dk = 4, 6, 2, 4
    out["qknorm_projection"] = {
        "attnviz": 2, "title": {"en": "OLMo 2's QK-norm over the whole projection", "zh": "OLMo 2 的 QK-norm：对整个投影归一化"},
        "tokens": ["p", "q", "r", "s"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk, 2.0),
        "W_k": rnd(g, d, h * dk, 2.0), "W_v": rnd(g, d, h * dk), "W_o": rnd(g, h * dk, d), "mask": "causal", "rope": True,
        "qk_norm": {"over": "projection", "q": rvec(g, h * dk), "k": rvec(g, h * dk), "eps": 1e-6},
        "compare": {"label": {"en": "QK-norm per head (Qwen3)", "zh": "逐头 QK-norm（Qwen3）"},
                    "qk_norm": {"q": rvec(g, dk), "k": rvec(g, dk), "eps": 1e-6}}}
    # 5. OLMo 2's norm with GQA (k's norm over g·d_k) and the gate at once, two pre-norm layers with their own weights.
    n, d, h, kv, dk, ff = 5, 8, 4, 2, 2, 10
    l0, l1 = [pre_layer(g, d, h, kv, dk, ff, h * dk, kv * dk, 1.0, 1.0) for _ in range(2)]
    top = {"attnviz": 2, "title": {"en": "QK-norm over the projection with GQA and the gate, two layers",
                                   "zh": "对投影的 QK-norm、GQA 与门控，两层"},
           "tokens": ["a", "b", "c", "d", "e"], "X": rnd(g, n, d), "mask": "causal", "rope": True}
    top.update(l0)
    top["qk_norm"] = dict(l0["qk_norm"], over="projection", eps=1e-5)
    top["layers"] = [{}, l1]
    out["qknorm_projection_gqa_gated"] = top
    # 6. OLMo-2-shaped: norms after each sublayer ("norm": "after"), QK-norm over the projection, RoPE, causal,
    #    two RMSNorm/SwiGLU layers with their own weights, the final norm and an LM head; a compare in pre-norm.
    n, d, h, dk, ff, voc = 5, 8, 2, 4, 12, 6
    l0, l1 = [pre_layer(g, d, h, h, dk, ff, h * dk, h * dk, 1.0, 1.0) for _ in range(2)]
    for lay in (l0, l1):
        del lay["W_gate"], lay["kv_heads"]
        lay["block"]["norm"] = "after"
    top = {"attnviz": 2, "title": {"en": "OLMo 2's layer: norms after each sublayer, QK-norm over the projection",
                                   "zh": "OLMo 2 的层：每个子层之后归一化，对投影做 QK-norm"},
           "tokens": ["The", " cat", " sat", " on", " the"], "X": rnd(g, n, d), "mask": "causal", "rope": True}
    top.update(l0)
    top["qk_norm"] = dict(l0["qk_norm"], over="projection", eps=1e-6)
    top["block"] = dict(l0["block"], final_norm={"gamma": rvec(g, d)})
    top["layers"] = [{}, l1]
    top.update({"vocab": ["<eos>", "The", " cat", " sat", " on", " the"], "unembed": rnd(g, voc, d), "top_k": 3})
    out["olmo2_after_qknorm"] = top
    # 7. The gradients through norms after each sublayer (LayerNorm with beta, relu), one layer, two heads.
    n, d, h, dk, ff = 4, 4, 2, 2, 6
    out["after_backward"] = {
        "attnviz": 2, "title": {"en": "The gradients through norms after each sublayer", "zh": "穿过子层之后归一化的梯度"},
        "tokens": ["p", "q", "r", "s"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, h * dk),
        "W_v": rnd(g, d, h * dk), "W_o": rnd(g, h * dk, d), "mask": "causal",
        "block": {"norm": "after", "norm_kind": "layernorm", "ln1": {"gamma": rvec(g, d), "beta": rvec(g, d, -0.3, 0.3)},
                  "ln2": {"gamma": rvec(g, d), "beta": rvec(g, d, -0.3, 0.3)},
                  "ffn": {"W_1": rnd(g, d, ff), "W_2": rnd(g, ff, d), "activation": "relu"}},
        "backward": {"target": rnd(g, n, d)}}
    # 8. Decoding with QK-norm over the projection and GQA: each step's whole q and k rows normalised at once.
    n, d, h, kv, dk = 5, 4, 2, 1, 2
    out["qknorm_projection_decode"] = {
        "attnviz": 2, "title": {"en": "QK-norm over the projection, decoded with a KV cache",
                                "zh": "对投影的 QK-norm：用 KV 缓存逐词解码"},
        "tokens": ["t0", "t1", "t2", "t3", "t4"], "X": rnd(g, n, d), "heads": h, "kv_heads": kv,
        "W_q": rnd(g, d, h * dk, 2.0), "W_k": rnd(g, d, kv * dk, 2.0), "W_v": rnd(g, d, kv * dk), "W_o": rnd(g, h * dk, d),
        "mask": "causal", "rope": True, "decode": True,
        "qk_norm": {"over": "projection", "q": rvec(g, h * dk), "k": rvec(g, kv * dk)}}
    write_lessons(folder, out)


def main(argv):
    """--lessons DIR and --all DIR here; one lesson's reference is v4's main, through this script's attention()."""
    if len(argv) != 3 or argv[1] not in ("--lessons", "--all"):
        return v4.main(argv)
    lessons(argv[2])
    for name in sorted(os.listdir(argv[2])) if argv[1] == "--all" else []:
        if name.endswith(".json") and not name.endswith(".ref.json"):
            path = os.path.join(argv[2], name)
            with open(path[:-5] + ".ref.json", "w") as f:
                json.dump(v4.reference(path), f, indent=1, allow_nan=False)
                f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
