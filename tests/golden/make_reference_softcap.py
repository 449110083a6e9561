#!/usr/bin/python3
"""Independent reference numbers for issue 23 §5 and §4: soft-capping
(Gemma 2) and attention sinks (gpt-oss), computed with PyTorch in float64:

    make_reference_softcap.py --lessons DIR      # write the lessons (literal numbers from a seeded generator)
    make_reference_softcap.py LESSON.json > LESSON.ref.json   # (and its "compare" variant under "compare")
    make_reference_softcap.py --all tests/golden/softcap   # both: the lessons and every NAME.ref.json
    make_reference_softcap.py lessons/softcap.json > tests/golden/lessons/softcap.ref.json   # (and sinks.json)

Written from issue 23, lessons/FORMAT.md and the transformers code below,
not from the C code. The rest of a layer (projections, QK-norm, RoPE,
repeat_kv, the block, the LM head) is make_reference_v4.py's, imported and
unchanged; this script replaces its attention() and adds the final cap.
The lines followed (transformers, src/transformers/models/…):

  gemma2/modeling_gemma2.py, eager_attention_forward (soft-capping):
        attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
        if softcap is not None:
            attn_weights = attn_weights / softcap
            attn_weights = torch.tanh(attn_weights)
            attn_weights = attn_weights * softcap
        if attention_mask is not None:
            causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
            attn_weights = attn_weights + causal_mask
        attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32)
    (Gemma2Attention passes softcap=self.config.attn_logit_softcapping)  -> attention(): "capped"
  gemma2/modeling_gemma2.py, Gemma2ForCausalLM.forward (the final cap):
        logits = self.lm_head(hidden_states[:, slice_indices, :])
        if self.config.final_logit_softcapping is not None:
            logits = logits / self.config.final_logit_softcapping
            logits = torch.tanh(logits)
            logits = logits * self.config.final_logit_softcapping      -> forward(): "logits_raw", "logits"
  gpt_oss/modeling_gpt_oss.py, eager_attention_forward (sinks; the file
  at commit 00d4b3d2142cb4ced2f51b90614b5d26bc045015):
        attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
        if attention_mask is not None:
            causal_mask = attention_mask[:, :, :, : key_states.shape[-2]]
            attn_weights = attn_weights + causal_mask
        sinks = module.sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], -1)
        combined_logits = torch.cat([attn_weights, sinks], dim=-1)
        combined_logits = combined_logits - combined_logits.max(dim=-1, keepdim=True).values
        probs = F.softmax(combined_logits, dim=-1, dtype=combined_logits.dtype)
        scores = probs[..., :-1]  # we drop the sink here
    (GptOssAttention: self.sinks = nn.Parameter(torch.empty(config.num_attention_heads)))
                                                                          -> attention(): "weights", "sink"

The mask is added as 0 / −inf (a causal mask). Cross-checks (stderr):
c·tanh(s/c) again cell by cell with math.tanh; the sink's softmax again as
e^(s_j) / (e^(sink) + Σ_k e^(s_k)) in Python sums, and its rows summing to
1 − the sink's weight; with a loss, the gradients by torch.autograd (the
softcap's slope 1 − tanh² and the sink's column dropped are autograd's).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_v4 as v4  # noqa: E402  (its layer, norms, RoPE and LM head, unchanged)
from lessonfiles import lesson_json, write_lessons, write_references  # noqa: E402

torch.set_default_dtype(torch.float64)
T, vec, agree, CheckFailed = v4.T, v4.vec, v4.agree, v4.CheckFailed


def attention(x, p, s, out, checks):
    """Gemma2's and gpt-oss's eager_attention_forward on v4's projections, QK-norm and RoPE."""
    n = x.shape[0]
    h, g = p["heads"], p["kv_heads"]
    dk = p["W_q"].shape[1] // h
    dv = p["W_v"].shape[1] // g
    q = v4.linear(x, p["W_q"], p.get("b_q"))
    k = v4.linear(x, p["W_k"], p.get("b_k"))
    v = v4.linear(x, p["W_v"], p.get("b_v"))
    out["Q"], out["K"], out["V"] = q, k, v
    qh, kh = q.view(n, h, dk), k.view(n, g, dk)
    if p.get("qk_norm") is not None:
        qh, kh = v4.rms_norm(qh, p["q_norm"], s["qk_eps"]), v4.rms_norm(kh, p["k_norm"], s["qk_eps"])
        out["Q_norm"], out["K_norm"] = qh.reshape(n, h * dk), kh.reshape(n, g * dk)
    qt, kt, vt = qh.transpose(0, 1), kh.transpose(0, 1), v.view(n, g, dv).transpose(0, 1)
    if s["rope"]:
        qt, kt = v4.rope(qt, s["rope_base"]), v4.rope(kt, s["rope_base"])
        out["Q_rot"], out["K_rot"] = qt.transpose(0, 1).reshape(n, h * dk), kt.transpose(0, 1).reshape(n, g * dk)
    keys, vals = v4.repeat_kv(kt, h // g), v4.repeat_kv(vt, h // g)
    scores = qt @ keys.transpose(1, 2)
    attn = scores * dk ** -0.5                                   # * scaling
    heads = [{"scores": scores[i], "scaled": attn[i]} for i in range(h)]
    c = s["softcap"]
    if c:                                                        # Gemma 2: / softcap, tanh, * softcap
        attn = attn / c
        attn = torch.tanh(attn)
        attn = attn * c
        for i in range(h):
            heads[i]["capped"] = attn[i]
        if checks is not None:
            loop = [[[c * math.tanh(float(heads[i]["scaled"][a, b]) / c) for b in range(n)] for a in range(n)]
                    for i in range(h)]
            agree("c*tanh(s/c) by math.tanh", loop, attn, 1e-14)
            checks.add("softcap")
    if s["causal"]:                                              # + causal_mask (0 or -inf)
        mask = torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        attn = attn + mask
    if p.get("sinks") is not None:                               # gpt-oss: cat the sink, softmax, drop it
        sinks = p["sinks"].reshape(-1, 1, 1).expand(-1, n, -1)
        combined = torch.cat([attn, sinks], dim=-1)
        combined = combined - combined.max(dim=-1, keepdim=True).values
        probs = F.softmax(combined, dim=-1, dtype=combined.dtype)
        weights = probs[..., :-1]
        for i in range(h):
            heads[i]["sink"] = probs[i, :, -1:]
        if checks is not None:
            for i in range(h):
                for a in range(n):
                    row = [float(attn[i, a, b]) for b in range(n)]
                    z = math.exp(float(p["sinks"][i])) + sum(math.exp(r) for r in row)
                    agree("sink softmax by Python sums", [math.exp(r) / z for r in row], weights[i, a], 1e-13)
            agree("rows sum to 1 - the sink", weights.sum(-1), 1 - probs[..., -1], 1e-13)
            checks.add("sinks")
    else:
        weights = F.softmax(attn, dim=-1)
    weighted = weights @ vals
    for i in range(h):
        heads[i].update(weights=weights[i], output=weighted[i])
    out["heads"] = heads
    concat = weighted.transpose(0, 1).reshape(n, h * dv)
    out["concat"] = concat
    o = v4.linear(concat, p["W_o"], p.get("b_o")) if p.get("W_o") is not None else concat
    out["output"] = o
    return o


v4.attention = attention   # v4.layer() (and v4.grads()) now call this one
_v4_read_lesson, _v4_forward = v4.read_lesson, v4.forward


def read_lesson(path, override=None):
    L, s, params = _v4_read_lesson(path, override)
    J = lesson_json(path, override)
    s["softcap"] = J.get("attn_logit_softcapping") or 0.0
    s["final_softcap"] = J.get("final_logit_softcapping") or 0.0
    for p, lay in zip(params, J.get("layers") or [{}]):
        m = dict(J)
        m.update(lay)
        p["sinks"] = vec(m["sinks"]) if m.get("sinks") else None   # false (a compare's): none
    return L, s, params


def forward(L, s, params, checks):
    out = _v4_forward(L, s, params, checks)
    c = s["final_softcap"]
    if "vocab" in L and c:                                       # Gemma2ForCausalLM: / c, tanh, * c
        raw = out["logits"]
        logits = raw / c
        logits = torch.tanh(logits)
        logits = logits * c
        row, temp = out["next"]["row"], out["next"]["temperature"]
        probs = F.softmax(logits[row] / temp, dim=-1)
        k = min(L.get("top_k", 10), len(L["vocab"]))
        top = sorted(range(len(L["vocab"])), key=lambda u: (-float(probs[u]), u))[:k]
        out["logits_raw"], out["logits"] = raw, logits
        out["next"] = {"row": row, "temperature": temp, "probs": probs, "top": top}
        if checks is not None:
            agree("final cap by math.tanh", [[c * math.tanh(float(z) / c) for z in r] for r in raw], logits, 1e-14)
            checks.add("final_softcap")
    return out


_v4_reference = v4.reference


def reference(path, override=None):
    """v4's reference (its layers, block and LM head, with this attention and forward), and what it lacks:
    the logits before the final cap, and the decoded rows."""
    ref = _v4_reference(path, override)
    L, s, _ = read_lesson(path, override)
    if s["final_softcap"] and "vocab" in L:
        ref["logits_raw"] = v4.plain(T(ref["final_norm"]) @ T(L["unembed"]).T)   # lm_head, before the cap
    if L.get("decode") and not ref.get("layers"):
        # decoding token by token equals the full computation's rows (the cache holds keys 0 … t)
        ref["decode"] = [{"t": t, "heads": [{"weights": [hd["weights"][t][: t + 1]]} for hd in ref["heads"]],
                          "output": [ref["output"][t]]} for t in range(ref["n"])]
    return ref


# ------------------------------------------------------------------ the lessons

def lessons(folder):
    g = torch.Generator().manual_seed(23)
    rnd, rvec = v4.rnd, v4.rvec
    out = {}
    # 1. Soft-capping alone: one head, no mask, large scores (c = 2 bites), scale on.
    n, d, dk = 4, 4, 4
    out["softcap_plain"] = {
        "attnviz": 2, "title": {"en": "Soft-capping, one head, no mask", "zh": "软上限：一个头，无掩码"},
        "tokens": ["a", "b", "c", "d"], "X": rnd(g, n, d), "W_q": rnd(g, d, dk), "W_k": rnd(g, d, dk),
        "W_v": rnd(g, d, dk), "attn_logit_softcapping": 2.0}
    # 2. Gemma-2-shaped: soft-capping with a causal mask, RoPE, 4 heads on 2 kv heads, a pre-norm RMSNorm block
    #    (SwiGLU), two layers, the final norm and the LM head with final_logit_softcapping; and its gradients' twin below.
    n, d, h, kv, dk, ff, voc = 5, 8, 4, 2, 4, 12, 7
    def gemma_layer():
        return {"heads": h, "kv_heads": kv, "W_q": rnd(g, d, h * dk, 1.2), "W_k": rnd(g, d, kv * dk, 1.2),
                "W_v": rnd(g, d, kv * dk, 0.5), "W_o": rnd(g, h * dk, d, 0.5),
                "block": {"norm": "pre", "norm_kind": "rmsnorm", "eps": 1e-6,
                          "ln1": {"gamma": rvec(g, d)}, "ln2": {"gamma": rvec(g, d)},
                          "ffn": {"W_1": rnd(g, d, ff, 0.5), "W_3": rnd(g, d, ff, 0.5), "W_2": rnd(g, ff, d, 0.5),
                                  "activation": "swiglu"}}}
    l0, l1 = gemma_layer(), gemma_layer()
    top = {"attnviz": 2, "title": {"en": "Gemma 2's caps: RoPE, GQA, two layers and the LM head",
                                   "zh": "Gemma 2 的上限：RoPE、GQA、两层与语言模型头"},
           "tokens": ["The", " cat", " sat", " on", " the"], "X": rnd(g, n, d), "mask": "causal", "rope": True,
           "attn_logit_softcapping": 1.5, "final_logit_softcapping": 3.0}
    top.update(l0)
    top["block"] = dict(l0["block"], final_norm={"gamma": rvec(g, d)})
    top["layers"] = [{}, l1]
    top.update({"vocab": ["<eos>", "The", " cat", " sat", " on", " the", " mat"], "unembed": rnd(g, voc, d, 3.0),
                "temperature": 0.7, "top_k": 4})
    out["gemma2_caps_rope_gqa"] = top
    # 3. The gradients through the soft cap (causal, two heads, RoPE).
    n, d, h, dk = 4, 4, 2, 2
    out["softcap_backward"] = {
        "attnviz": 2, "title": {"en": "The gradients through the soft cap", "zh": "穿过软上限的梯度"},
        "tokens": ["p", "q", "r", "s"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk),
        "W_k": rnd(g, d, h * dk), "W_v": rnd(g, d, h * dk), "W_o": rnd(g, h * dk, d), "mask": "causal",
        "rope": True, "attn_logit_softcapping": 1.0, "backward": {"target": rnd(g, n, d)}}
    # 4. Decoding token by token with the cap: the KV cache's rows, GQA (2 heads on 1), W_o.
    n, d, h, kv, dk = 5, 4, 2, 1, 2
    out["softcap_decode_gqa"] = {
        "attnviz": 2, "title": {"en": "Soft-capping, decoded with a KV cache", "zh": "软上限：用 KV 缓存逐词解码"},
        "tokens": ["t0", "t1", "t2", "t3", "t4"], "X": rnd(g, n, d), "heads": h, "kv_heads": kv,
        "W_q": rnd(g, d, h * dk, 2.0), "W_k": rnd(g, d, kv * dk, 2.0), "W_v": rnd(g, d, kv * dk), "W_o": rnd(g, h * dk, d),
        "mask": "causal", "decode": True, "attn_logit_softcapping": 1.5}
    # 5. Sinks alone: two heads, causal, one sink high (the head gives most of each row away) and one low.
    n, d, h, dk = 4, 4, 2, 2
    out["sinks_plain"] = {
        "attnviz": 2, "title": {"en": "Attention sinks, two heads", "zh": "注意力汇点：两个头"},
        "tokens": ["a", "b", "c", "d"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, h * dk),
        "W_v": rnd(g, d, h * dk), "mask": "causal", "sinks": [2.0, -1.5]}
    # 6. gpt-oss-shaped: sinks per layer, RoPE, 4 heads on 2 kv heads, two pre-norm RMSNorm/SwiGLU layers, final norm, head.
    n, d, h, kv, dk, ff, voc = 5, 8, 4, 2, 4, 12, 6
    def oss_layer():
        return dict(gemma_layer(), sinks=rvec(g, h, -1.0, 2.0))
    l0, l1 = oss_layer(), oss_layer()
    top = {"attnviz": 2, "title": {"en": "gpt-oss's sinks: RoPE, GQA, two layers and the LM head",
                                   "zh": "gpt-oss 的汇点：RoPE、GQA、两层与语言模型头"},
           "tokens": ["The", " cat", " sat", " on", " the"], "X": rnd(g, n, d), "mask": "causal", "rope": True}
    top.update(l0)
    top["block"] = dict(l0["block"], final_norm={"gamma": rvec(g, d)})
    top["layers"] = [{}, l1]
    top.update({"vocab": ["<eos>", "The", " cat", " sat", " on", " the"], "unembed": rnd(g, voc, d), "top_k": 3})
    out["gptoss_sinks_rope_gqa"] = top
    # 7. The gradients with sinks on (and the cap: both at once), causal, two heads on one kv head.
    n, d, h, kv, dk = 4, 4, 2, 1, 2
    out["sinks_softcap_backward"] = {
        "attnviz": 2, "title": {"en": "The gradients with sinks and the soft cap", "zh": "带汇点与软上限的梯度"},
        "tokens": ["p", "q", "r", "s"], "X": rnd(g, n, d), "heads": h, "kv_heads": kv, "W_q": rnd(g, d, h * dk, 1.5),
        "W_k": rnd(g, d, kv * dk, 1.5), "W_v": rnd(g, d, kv * dk), "W_o": rnd(g, h * dk, d), "mask": "causal",
        "sinks": [0.5, -0.25], "attn_logit_softcapping": 1.0, "backward": {"target": rnd(g, n, d)}}
    # 8. Decoding with sinks and the cap: each step's softmax over the cache and the sink.
    n, d, h, dk = 5, 4, 2, 2
    out["sinks_softcap_decode"] = {
        "attnviz": 2, "title": {"en": "Sinks and the soft cap, decoded with a KV cache",
                                "zh": "汇点与软上限：用 KV 缓存逐词解码"},
        "tokens": ["t0", "t1", "t2", "t3", "t4"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk, 2.0),
        "W_k": rnd(g, d, h * dk, 2.0), "W_v": rnd(g, d, h * dk), "mask": "causal", "decode": True, "rope": True,
        "attn_logit_softcapping": 2.0, "sinks": [1.0, 0.0]}
    write_lessons(folder, out)


def make_all(folder):
    """The lessons, then each one's reference beside it (NAME.ref.json)."""
    lessons(folder)
    write_references(folder, reference)


v4.read_lesson, v4.forward, v4.reference, v4.lessons = read_lesson, forward, reference, lessons

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--all":
        make_all(sys.argv[2])
        sys.exit(0)
    sys.exit(v4.main(sys.argv))
