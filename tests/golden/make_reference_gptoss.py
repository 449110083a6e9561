#!/usr/bin/python3
"""Independent reference numbers for gpt-oss's mixture of experts (issue 23 §7:
the router with a bias, top-k THEN softmax, experts with biases, the clamped
SwiGLU), computed with PyTorch in float64:

    make_reference_gptoss.py --all tests/golden/gptoss     # the lessons (seeded), every NAME.ref.json beside them,
                                                           # and bad/ (one wrong key each, expected.tsv)
    make_reference_gptoss.py LESSON.json > LESSON.ref.json

Written from issue 23, lessons/FORMAT.md ("ffn": {"kind": "moe", "gpt_oss": …})
and the transformers code below, not from the C code. The rest of a layer
(projections, RoPE, the pre-norm block, the final norm) is
make_reference_v4.py's, imported and unchanged; this script replaces its
layer()'s FFN when the lesson's is gpt-oss's mixture. The lines followed
(transformers, src/transformers/models/gpt_oss/modeling_gpt_oss.py, at commit
00d4b3d2142cb4ced2f51b90614b5d26bc045015):

  GptOssTopKRouter.forward:
        router_logits = F.linear(hidden_states, self.weight, self.bias)  # (seq_len, num_experts)
                                                                      -> "router_logits"
        router_top_value, router_indices = torch.topk(router_logits, self.top_k, dim=-1)
        router_top_value = torch.nn.functional.softmax(router_top_value, dim=1, dtype=router_top_value.dtype)
        router_scores = torch.zeros_like(router_logits).scatter_(1, router_indices, router_top_value)
                                                                      -> "router_probs" (0 where not chosen),
                                                                         "moe_weights" (null where not chosen)
  GptOssExperts.__init__: gate_up_proj [E, hidden, 2·expert_dim], gate_up_proj_bias [E, 2·expert_dim],
        down_proj [E, expert_dim, hidden], down_proj_bias [E, hidden]; self.alpha = 1.702, self.limit = 7.0
        (a lesson's "gpt_oss": {"swiglu_alpha", "swiglu_limit"} replaces them)
  GptOssExperts.forward, the inference branch (every expert on every token, weighted by router_scores):
        hidden_states = hidden_states.repeat(num_experts, 1)
        hidden_states = hidden_states.view(num_experts, -1, self.hidden_size)
        gate_up = torch.bmm(hidden_states, self.gate_up_proj) + self.gate_up_proj_bias[..., None, :]
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        next_states = torch.bmm(((up + 1) * glu), self.down_proj)     -> "expert_act" = (up + 1) * glu
        next_states = next_states + self.down_proj_bias[..., None, :]  -> "expert_out"
        next_states = next_states * routing_weights.transpose(0, 1).view(num_experts, batch_size, -1)[..., None]
        next_states = next_states.sum(dim=0)                          -> "ffn_out"

The lesson gives each expert's W_1 (gate) and W_3 (up) apart; this script
interleaves them into gate_up_proj (W_1 in the even columns, W_3 in the odd:
the checkpoint's layout) and its bias likewise, and splits them back with the
lines above. attnviz dumps the cells of experts a token did not choose as null
(nothing is computed there): those cells are null here too. Ties: no row's
top_k-th and next logits are within 1e-9 (checked).

Cross-checks (stderr): the training branch of GptOssExperts.forward (a loop
over the experts hit, index_add_); each row again in Python sums, the top-k by
sorting, the clamps by min and max, σ by math.exp.

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_v4 as v4  # noqa: E402  (its attention, norms, RoPE and LM head, unchanged)
import make_reference_moe as mr  # noqa: E402  (its layer with a mixture of experts and its reference, unchanged)
from lessonfiles import make_all, write_lessons  # noqa: E402

torch.set_default_dtype(torch.float64)
T, agree, CheckFailed = v4.T, v4.agree, v4.CheckFailed

_moe_read_lesson = mr.read_lesson


def read_lesson(path, override=None):
    """make_reference_moe.py's, and a layer of gpt-oss's mixture as its "moe" with "gptoss" set."""
    L, s, params = _moe_read_lesson(path, override)
    with open(path) as f:
        J = json.load(f)
    for p, lay in zip(params, J.get("layers") or [{}]):
        m = dict(J)
        m.update(lay)
        fj = (m.get("block") or {}).get("ffn") or {}
        if fj.get("kind") == "moe" and fj.get("gpt_oss"):
            g = fj["gpt_oss"] if isinstance(fj["gpt_oss"], dict) else {}
            E, d, ff = len(fj["experts"]), len(fj["router"]), len(fj["experts"][0]["W_1"][0])
            zero = lambda k: [0.0] * k  # noqa: E731
            # the checkpoint's layout: gate in the even columns, up in the odd ones
            gate_up = torch.zeros(E, d, 2 * ff)
            gate_up_bias = torch.zeros(E, 2 * ff)
            for e, ex in enumerate(fj["experts"]):
                gate_up[e, :, 0::2] = T(ex["W_1"])
                gate_up[e, :, 1::2] = T(ex["W_3"])
                gate_up_bias[e, 0::2] = torch.tensor(ex.get("b_1", [zero(ff)])[0])
                gate_up_bias[e, 1::2] = torch.tensor(ex.get("b_3", [zero(ff)])[0])
            p["moe"] = {
                "gptoss": True, "weight": T(fj["router"]).t(), "bias": torch.tensor(fj.get("router_bias", [zero(E)])[0]),
                "top_k": fj.get("top_k", 2), "gate_up_proj": gate_up, "gate_up_proj_bias": gate_up_bias,
                "down_proj": torch.stack([T(ex["W_2"]) for ex in fj["experts"]]),
                "down_proj_bias": torch.stack([torch.tensor(ex.get("b_2", [zero(d)])[0]) for ex in fj["experts"]]),
                "alpha": g.get("swiglu_alpha", 1.702), "limit": g.get("swiglu_limit", 7.0)}
    return L, s, params


def router(x, m):
    """GptOssTopKRouter.forward."""
    router_logits = F.linear(x, m["weight"], m["bias"])
    router_top_value, router_indices = torch.topk(router_logits, m["top_k"], dim=-1)
    router_top_value = torch.nn.functional.softmax(router_top_value, dim=1, dtype=router_top_value.dtype)
    router_scores = torch.zeros_like(router_logits).scatter_(1, router_indices, router_top_value)
    return router_logits, router_scores, router_indices


def experts_inference(x, m, routing_weights):
    """GptOssExperts.forward's inference branch (batch_size 1); also its (up + 1) * glu and each expert's output."""
    E, n, hidden = m["gate_up_proj"].shape[0], x.shape[0], x.shape[1]
    hidden_states = x.repeat(E, 1).view(E, -1, hidden)
    gate_up = torch.bmm(hidden_states, m["gate_up_proj"]) + m["gate_up_proj_bias"][..., None, :]
    gate, up = gate_up[..., ::2], gate_up[..., 1::2]
    gate = gate.clamp(min=None, max=m["limit"])
    up = up.clamp(min=-m["limit"], max=m["limit"])
    glu = gate * torch.sigmoid(gate * m["alpha"])
    act = (up + 1) * glu
    next_states = torch.bmm(act, m["down_proj"])
    next_states = next_states + m["down_proj_bias"][..., None, :]
    each = next_states
    next_states = next_states.view(E, 1, -1, hidden)
    next_states = next_states * routing_weights.transpose(0, 1).view(E, 1, -1)[..., None]
    next_states = next_states.sum(dim=0)
    return next_states.view(n, hidden), act, each


def experts_training(x, m, router_indices, routing_weights):
    """GptOssExperts.forward's training branch: the experts hit, one by one, index_add_."""
    E = m["gate_up_proj"].shape[0]
    next_states = torch.zeros_like(x)
    expert_mask = torch.nn.functional.one_hot(router_indices, num_classes=E).permute(2, 1, 0)
    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert_idx in expert_hit[:]:
        _, token_idx = torch.where(expert_mask[expert_idx[0]])
        current_state = x[token_idx]
        gate_up = current_state @ m["gate_up_proj"][expert_idx] + m["gate_up_proj_bias"][expert_idx]
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=m["limit"])
        up = up.clamp(min=-m["limit"], max=m["limit"])
        glu = gate * torch.sigmoid(gate * m["alpha"])
        out = ((up + 1) * glu) @ m["down_proj"][expert_idx] + m["down_proj_bias"][expert_idx]
        weighted_output = out[0] * routing_weights[token_idx, expert_idx, None]
        next_states.index_add_(0, token_idx, weighted_output)
    return next_states


def by_hand(x, m, t):
    """Row t in Python sums: the top k by sorting, softmax over them, each chosen expert's clamped SwiGLU."""
    xs, E, k = x[t].tolist(), m["gate_up_proj"].shape[0], m["top_k"]
    d, ff = len(xs), m["gate_up_proj"].shape[2] // 2
    W, b = m["weight"].tolist(), m["bias"].tolist()
    z = [sum(xs[c] * W[e][c] for c in range(d)) + b[e] for e in range(E)]
    order = sorted(range(E), key=lambda e: (-z[e], e))
    if k < E and z[order[k - 1]] - z[order[k]] < 1e-9:
        raise CheckFailed("row %d: a near tie at the top_k-th logit (the lesson must avoid it)" % t)
    top = z[order[0]]
    ex = [math.exp(z[e] - top) for e in order[:k]]
    w = {e: ex[r] / sum(ex) for r, e in enumerate(order[:k])}
    row = [0.0] * d
    lim, alpha = m["limit"], m["alpha"]
    for e in sorted(w):
        GU, B = m["gate_up_proj"][e].tolist(), m["gate_up_proj_bias"][e].tolist()
        acts = []
        for f in range(ff):
            g = min(sum(xs[c] * GU[c][2 * f] for c in range(d)) + B[2 * f], lim)
            u = max(-lim, min(sum(xs[c] * GU[c][2 * f + 1] for c in range(d)) + B[2 * f + 1], lim))
            acts.append((u + 1) * g / (1 + math.exp(-g * alpha)))
        Dn, Db = m["down_proj"][e].tolist(), m["down_proj_bias"][e].tolist()
        for c in range(d):
            row[c] += w[e] * (sum(acts[f] * Dn[f][c] for f in range(ff)) + Db[c])
    return row, w


def moe_gptoss(x, m, out, checks):
    n, d = x.shape
    E, ff = m["gate_up_proj"].shape[0], m["gate_up_proj"].shape[2] // 2
    router_logits, router_scores, router_indices = router(x, m)
    final, act, each = experts_inference(x, m, router_scores)
    chosen = [set(int(e) for e in router_indices[t]) for t in range(n)]
    weights = [[float(router_scores[t, e]) if e in chosen[t] else None for e in range(E)] for t in range(n)]
    act_all = [[float(act[e, t, f]) if e in chosen[t] else None for e in range(E) for f in range(ff)] for t in range(n)]
    out_all = [[float(each[e, t, c]) if e in chosen[t] else None for e in range(E) for c in range(d)] for t in range(n)]
    if checks is not None:
        agree("ffn_out: the training branch", experts_training(x, m, router_indices, router_scores), final, 1e-12)
        for t in range(n):
            row, w = by_hand(x, m, t)
            agree("ffn_out row %d by Python sums" % t, [row], final[t:t + 1], 1e-12)
            if set(w) != chosen[t]:
                raise CheckFailed("row %d: torch.topk and sorting disagree" % t)
            agree("row %d's weights by Python sums" % t, [[w[e] for e in sorted(w)]],
                  [[weights[t][e] for e in sorted(w)]], 1e-12)
        checks.add("gptoss")
    out.update(router_logits=router_logits, router_probs=router_scores, moe_weights=weights, expert_act=act_all,
               expert_out=out_all)
    return final


_moe = mr.moe


def moe(x, m, out, checks):
    """make_reference_moe.py's layer calls this for its FFN: gpt-oss's mixture, or Mixtral's as before."""
    return moe_gptoss(x, m, out, checks) if m.get("gptoss") else _moe(x, m, out, checks)


# ------------------------------------------------------------------ the lessons

def lessons(folder):
    g = torch.Generator().manual_seed(2390)
    rnd, rvec = v4.rnd, v4.rvec
    out = {}

    def experts(E, d, ff, scale, biases=True):
        ex = [{"W_1": rnd(g, d, ff, scale), "W_3": rnd(g, d, ff, scale), "W_2": rnd(g, ff, d, 0.6)} for _ in range(E)]
        for e in ex if biases else []:
            e.update(b_1=rnd(g, 1, ff, 0.5), b_3=rnd(g, 1, ff, 0.5), b_2=rnd(g, 1, d, 0.3))
        return ex

    def layer_of(d, h, kv, dk, E, ff, k, scale=0.8, gpt_oss=True, router_bias=True, biases=True):
        ffn = {"kind": "moe", "activation": "swiglu", "router": rnd(g, d, E, 1.5), "top_k": k, "gpt_oss": gpt_oss,
               "experts": experts(E, d, ff, scale, biases)}
        if router_bias:
            ffn["router_bias"] = rnd(g, 1, E, 0.8)
        return {"heads": h, "kv_heads": kv, "W_q": rnd(g, d, h * dk, 0.5), "W_k": rnd(g, d, kv * dk, 0.5),
                "W_v": rnd(g, d, kv * dk, 0.5), "W_o": rnd(g, h * dk, d, 0.5),
                "block": {"norm": "pre", "norm_kind": "rmsnorm", "eps": 1e-5,
                          "ln1": {"gamma": rvec(g, d)}, "ln2": {"gamma": rvec(g, d)}, "ffn": ffn}}

    def lesson(title_en, title_zh, n, d, lay):
        top = {"attnviz": 2, "title": {"en": title_en, "zh": title_zh},
               "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d), "mask": "causal",
               "rope": {"base": 150000.0, "style": "half"}}
        top.update(lay)
        return top

    d = 6
    # 1. gpt-oss's shape: 4 experts, top 2 (softmax over the 2), every bias; GQA 4 on 2, RoPE, a final norm
    l1 = layer_of(d, 4, 2, 2, 4, 4, 2)
    out["gptoss_top2"] = lesson("gpt-oss's mixture: top 2 logits, then a softmax over them; biases everywhere",
                                "gpt-oss 的混合专家：先取前 2 个 logit，再在其上做 softmax；处处有偏置", 6, d, l1)
    out["gptoss_top2"]["block"] = dict(l1["block"], final_norm={"gamma": rvec(g, d)})
    # 2. the clamps at work: a low limit (1.5) and large weights, so gate and up are cut on both sides
    out["gptoss_clamped"] = lesson("gpt-oss's SwiGLU clamped at 1.5: gate cut above, up cut on both sides",
                                   "gpt-oss 的 SwiGLU 截断在 1.5：gate 只截上端，up 两端都截", 5, d,
                                   layer_of(d, 2, 2, 2, 3, 4, 2, scale=2.5,
                                            gpt_oss={"swiglu_alpha": 1.702, "swiglu_limit": 1.5}))
    # 3. top 1 (its weight is 1), another α, no router bias and experts without biases (zeros)
    out["gptoss_top1_alpha"] = lesson("top 1 of 3 (its weight is exactly 1), α = 1.0, no biases given",
                                      "3 选 1（权重恰为 1），α = 1.0，不给偏置", 4, 4,
                                      layer_of(4, 1, 1, 4, 3, 3, 1, gpt_oss={"swiglu_alpha": 1.0},
                                               router_bias=False, biases=False))
    # 4. two layers, every expert chosen (top_k = E): the softmax over all of them
    a, b = layer_of(d, 2, 1, 4, 3, 3, 3), layer_of(d, 2, 1, 4, 3, 3, 2)
    two = lesson("two layers: all 3 experts, then the top 2", "两层：先选全部 3 个专家，再选前 2 个", 5, d, a)
    two["layers"] = [{}, b]
    out["gptoss_2layers"] = two
    write_lessons(folder, out)


# ------------------------------------------------------------------ the bad lessons

BAD = [  # NAME, the edit of gptoss_top1_alpha.json's "ffn" (ffn_of), the JSON path the error names, the message
    ("router_bias_alone", lambda f: (f.pop("gpt_oss"), f.update(router_bias=[[0.1, 0.2, 0.3]])),
     "block.ffn.router_bias", 'the router\'s bias goes with gpt-oss\'s mixture ("gpt_oss": true)'),
    ("gpt_oss_word", lambda f: f.update(gpt_oss="yes"), "block.ffn.gpt_oss",
     'expected true, or {"swiglu_alpha": 1.702, "swiglu_limit": 7.0}, got "yes"'),
    ("limit_zero", lambda f: f.update(gpt_oss={"swiglu_limit": 0}), "block.ffn.gpt_oss.swiglu_limit",
     "expected a number > 0, got 0"),
    ("alpha_string", lambda f: f.update(gpt_oss={"swiglu_alpha": "1.7"}), "block.ffn.gpt_oss.swiglu_alpha",
     'expected a number, got "1.7"'),
    ("gpt_oss_key", lambda f: f.update(gpt_oss={"limit": 7}), "block.ffn.gpt_oss",
     'unknown gpt_oss key "limit" (gpt_oss keys: swiglu_alpha swiglu_limit)'),
    ("norm_topk", lambda f: f.update(norm_topk_prob=True), "block.ffn.norm_topk_prob",
     "gpt-oss's softmax is over the chosen experts alone: they add to 1, and norm_topk_prob does not apply"),
    ("shared", lambda f: f.update(shared_expert={"W_1": [[0]]}), "block.ffn.shared_expert",
     "gpt-oss's mixture has no shared expert"),
    ("bias_cols", lambda f: f["experts"][1].update(b_1=[[0.5, 0.5]]), "block.ffn.experts[1].b_1",
     "expected 3 columns (d_ff, the columns of the first expert's W_1), got 2"),
    ("expert_bias_alone", lambda f: (f.pop("gpt_oss"), f["experts"][0].update(b_2=[[0, 0, 0, 0]])),
     "block.ffn.experts[0]", 'unknown expert key "b_2" (did you mean "W_2"?)'),
    ("router_bias_cols", lambda f: f.update(router_bias=[[1, 2]]), "block.ffn.router_bias",
     "expected 3 columns (experts, one bias per expert), got 2"),
]


def bad_lessons(folder):
    """folder/bad: gptoss_top1_alpha.json with one edit each, and expected.tsv (t_gptoss.sh reads it)."""
    with open(os.path.join(folder, "gptoss_top1_alpha.json")) as f:
        base = json.load(f)
    out, rows = {}, []
    for name, edit, path, msg in BAD:
        lesson = json.loads(json.dumps(base))
        edit(lesson["block"]["ffn"])
        out[name] = lesson
        rows.append("%s\t%s\t%s: %s\n" % (name, path, path, msg))
    write_lessons(os.path.join(folder, "bad"), out)
    with open(os.path.join(folder, "bad", "expected.tsv"), "w") as f:
        f.write("# tests/golden/gptoss/bad: each lesson, the JSON path its one error names, and the message. "
                "Columns: NAME<TAB>PATH<TAB>MESSAGE\n")
        f.writelines(rows)


v4.read_lesson, mr.read_lesson, mr.moe, v4.lessons = read_lesson, read_lesson, moe, lessons

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--all":
        make_all(sys.argv[2], lessons, mr.reference)
        bad_lessons(sys.argv[2])
        sys.exit(0)
    sys.exit(v4.main(sys.argv))
