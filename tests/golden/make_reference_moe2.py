#!/usr/bin/python3
"""Independent reference numbers for DeepSeek-V3's mixture of experts (issue 23 §7):
its sigmoid router with e_score_correction_bias, grouped selection and
routed_scaling_factor, and its shared experts added without a gate, computed
with PyTorch in float64:

    make_reference_moe2.py --all tests/golden/moe2   # the lessons (seeded) and every NAME.ref.json beside them
    make_reference_moe2.py LESSON.json > LESSON.ref.json

Written from issue 23, lessons/FORMAT.md ("ffn": {"kind": "moe", "scoring_func":
"sigmoid"}) and the transformers code below, not from the C code. The rest of
the layer, and a softmax router, are make_reference_moe.py's (and through it
make_reference_v4.py's), imported and unchanged; this script replaces its
moe() when the lesson's "scoring_func" is "sigmoid". The lines followed
(transformers, src/transformers/models/deepseek_v3/modeling_deepseek_v3.py at
commit 00b676f8f0489b88652a31d70751cc540dd06305):

  DeepseekV3TopkRouter.forward:
        router_logits = F.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32))  -> "router_logits"
        scores = router_logits.sigmoid()                                             -> "router_scores"
        topk_indices = self.get_topk_indices(scores)
        topk_weights = scores.gather(1, topk_indices)
        if self.norm_topk_prob:
            denominator = topk_weights.sum(dim=-1, keepdim=True) + 1e-20
            topk_weights /= denominator
        topk_weights = topk_weights * self.routed_scaling_factor                     -> "moe_weights"
  DeepseekV3TopkRouter.get_topk_indices:
        scores_for_choice = scores.view(-1, self.n_routed_experts) + self.e_score_correction_bias.unsqueeze(0)
        group_scores = (scores_for_choice.view(-1, self.n_group, self.n_routed_experts // self.n_group)
                        .topk(2, dim=-1)[0].sum(dim=-1))                             -> "group_scores"
        group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        group_mask = torch.zeros_like(group_scores); group_mask.scatter_(1, group_idx, 1)
        score_mask = group_mask.unsqueeze(-1).expand(...).reshape(-1, self.n_routed_experts)
        scores_for_choice = scores_for_choice.masked_fill(~score_mask.bool(), 0.0)   -> "scores_for_choice"
        topk_indices = torch.topk(scores_for_choice, k=self.top_k, dim=-1, sorted=False)[1]
  DeepseekV3MoE.moe: for expert_idx in range(len(self.experts)): ... expert_output * expert_weights,
        final_hidden_states.index_add_(0, token_indices, weighted_output)            -> "ffn_out" (routed part)
  DeepseekV3MoE.forward: hidden_states = hidden_states + self.shared_experts(residuals)   -> "shared_out"
  DeepseekV3MLP.forward: self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))  (act_fn: silu)

A softmax router beside such a shared expert (DeepSeek-V2's shape, dsv2_softmax_shared) is
make_reference_moe.py's routed part plus the shared expert added the same way, without a gate.

The router runs in float32 in transformers; here everything is float64. The
lesson's matrices are the nn.Linear weights transposed ("router" is d_model × E,
gate.weight is E × d_model). DeepseekV3MoE's shared_experts is one MLP of
moe_intermediate_size · n_shared_experts: the lesson's "shared_expert" of that
width, without "gate". In "scores_for_choice" attnviz's --dump writes the
experts of the groups dropped as null where transformers holds 0.0 (the top-k
ranks them as 0.0 all the same); the reference writes null there too. Ties:
the lessons are made so that no row's topk_group-th and next group scores, nor
its top_k-th and next choice scores (the 0.0 of a dropped group included), are
within 1e-9 (checked), so torch.topk's choice is the only one.

Cross-checks (stderr): the choice again with Python sorting, group by group;
ffn_out again as the dense sum Σ_e w_e·expert_e(x) + shared(x) with Python loops.

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_moe as m1  # noqa: E402  (its layer, softmax router and experts, unchanged)
from lessonfiles import lesson_json, make_all, write_lessons  # noqa: E402

v4 = m1.v4
T, agree, CheckFailed = v4.T, v4.agree, v4.CheckFailed

_m1_read_lesson, _m1_moe, _m1_reference = m1.read_lesson, m1.moe, m1.reference


def read_lesson(path, override=None):
    """make_reference_moe.py's lesson, with the sigmoid router's keys and a shared expert without a gate."""
    L, s, params = _m1_read_lesson_ungated(path, override)
    J = lesson_json(path, override)
    for p, lay in zip(params, J.get("layers") or [{}]):
        m = dict(J)
        m.update(lay)
        fj = (m.get("block") or {}).get("ffn") or {}
        if p.get("moe") is not None and fj.get("scoring_func") == "sigmoid":
            E = len(fj["experts"])
            p["moe"].update(scoring="sigmoid", n_group=fj.get("n_group", 1), topk_group=fj.get("topk_group", fj.get("n_group", 1)),
                            rsf=fj.get("routed_scaling_factor", 1.0),
                            bias=T(fj["e_score_correction_bias"]).reshape(E) if "e_score_correction_bias" in fj
                            else torch.zeros(E))
    return L, s, params


def _m1_read_lesson_ungated(path, override):
    """make_reference_moe.py reads a shared expert's "gate" always: give it a stand-in and drop it after."""
    J = lesson_json(path, override)
    ungated = False
    for lay in [J] + list(J.get("layers") or []):
        sh = ((lay.get("block") or {}).get("ffn") or {}).get("shared_expert")
        if sh is not None and "gate" not in sh:
            ungated = True
    if not ungated:
        return _m1_read_lesson(path, override)
    import json
    import tempfile
    for lay in [J] + list(J.get("layers") or []):
        sh = ((lay.get("block") or {}).get("ffn") or {}).get("shared_expert")
        if sh is not None and "gate" not in sh:
            sh["gate"] = [[0.0]] * len(sh["W_1"])
            sh["_ungated"] = True
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(J, f)
    try:
        L, s, params = _m1_read_lesson(f.name, None)
    finally:
        os.unlink(f.name)
    for p in params:
        if p.get("moe") and p["moe"].get("shared") is not None:
            p["moe"]["shared"].pop("gate")
    return L, s, params


def silu_mlp(x, e):
    """DeepseekV3MLP.forward: down_proj(silu(gate_proj(x)) * up_proj(x)); our W_1, W_3, W_2 are gate, up, down transposed."""
    act = F.silu(x @ e["W_1"]) * (x @ e["W_3"])
    return act, act @ e["W_2"]


def moe(x, m, out, checks):
    if m.get("scoring") != "sigmoid":
        if m.get("shared") is None or "gate" in m["shared"]:
            return _m1_moe(x, m, out, checks)
        # a softmax router beside shared experts without a gate (DeepSeek-V2's DeepseekV2MoE):
        # the routed part is make_reference_moe.py's, then + self.shared_experts(identity), as above
        routed = _m1_moe(x, dict(m, shared=None), out, checks)
        _, shared_out = silu_mlp(x, m["shared"])
        out.update(shared_out=shared_out)
        return routed + shared_out
    n, d = x.shape
    E, k, G, TG = len(m["experts"]), m["top_k"], m["n_group"], m["topk_group"]
    # DeepseekV3TopkRouter.forward
    router_logits = x @ m["router"]
    scores = router_logits.sigmoid()
    # get_topk_indices
    scores_for_choice = scores.view(-1, E) + m["bias"].unsqueeze(0)
    group_scores = scores_for_choice.view(-1, G, E // G).topk(2, dim=-1)[0].sum(dim=-1)
    group_idx = torch.topk(group_scores, k=TG, dim=-1, sorted=False)[1]
    group_mask = torch.zeros_like(group_scores)
    group_mask.scatter_(1, group_idx, 1)
    score_mask = group_mask.unsqueeze(-1).expand(-1, G, E // G).reshape(-1, E)
    masked = scores_for_choice.masked_fill(~score_mask.bool(), 0.0)
    topk_indices = torch.topk(masked, k=k, dim=-1, sorted=False)[1]
    topk_weights = scores.gather(1, topk_indices)
    if m["norm"]:
        denominator = topk_weights.sum(dim=-1, keepdim=True) + 1e-20
        topk_weights = topk_weights / denominator
    topk_weights = topk_weights * m["rsf"]
    # DeepseekV3MoE.moe
    final = torch.zeros((n, d), dtype=x.dtype)
    expert_mask = torch.nn.functional.one_hot(topk_indices, num_classes=E).permute(2, 0, 1)
    F_ = m["experts"][0]["W_1"].shape[1]
    act_all = [[None] * (E * F_) for _ in range(n)]
    out_all = [[None] * (E * d) for _ in range(n)]
    for e in range(E):
        token_indices, weight_indices = torch.where(expert_mask[e])
        if token_indices.numel() == 0:
            continue
        act, y = silu_mlp(x[token_indices], m["experts"][e])
        final.index_add_(0, token_indices, y * topk_weights[token_indices, weight_indices].unsqueeze(-1))
        for r, t in enumerate(token_indices.tolist()):
            act_all[t][e * F_:(e + 1) * F_] = act[r].tolist()
            out_all[t][e * d:(e + 1) * d] = y[r].tolist()
    weights = [[None] * E for _ in range(n)]
    choice = [[None] * E for _ in range(n)]
    for t in range(n):
        for j in range(k):
            weights[t][int(topk_indices[t, j])] = float(topk_weights[t, j])
        for e in range(E):
            if score_mask[t, e]:
                choice[t][e] = float(scores_for_choice[t, e])
    out.update(router_logits=router_logits, router_scores=scores, group_scores=group_scores,
               scores_for_choice=choice, moe_weights=weights, expert_act=act_all, expert_out=out_all)
    # DeepseekV3MoE.forward: + self.shared_experts(residuals), no gate
    sh = m.get("shared")
    if sh is not None:
        _, shared_out = silu_mlp(x, sh)
        final = final + shared_out
        out.update(shared_out=shared_out)
    if checks is not None:
        cross_check(x, m, scores, group_scores, topk_indices, weights, final)
        checks.add("moe_sigmoid")
    return final


def cross_check(x, m, scores, group_scores, topk_indices, weights, final):
    """The choice by sorting in Python, near ties refused, and ffn_out as a dense Python sum."""
    n, d = x.shape
    E, k, G, TG = len(m["experts"]), m["top_k"], m["n_group"], m["topk_group"]
    size = E // G
    for t in range(n):
        s = [float(scores[t, e]) + float(m["bias"][e]) for e in range(E)]
        gs = [sum(sorted(s[g * size:(g + 1) * size], reverse=True)[:2]) for g in range(G)]
        agree("group_scores row %d by Python" % t, [gs], group_scores[t:t + 1], 1e-12)
        order = sorted(range(G), key=lambda g: -gs[g])
        if TG < G and gs[order[TG - 1]] - gs[order[TG]] < 1e-9:
            raise CheckFailed("row %d: a near tie at the topk_group-th group" % t)
        kept = set(order[:TG])
        c = [s[e] if e // size in kept else 0.0 for e in range(E)]
        ce = sorted(range(E), key=lambda e: -c[e])
        if k < E and c[ce[k - 1]] - c[ce[k]] < 1e-9:
            raise CheckFailed("row %d: a near tie at the top_k-th expert (%r)" % (t, c))
        if sorted(ce[:k]) != sorted(int(i) for i in topk_indices[t]):
            raise CheckFailed("row %d: torch.topk and sorting disagree" % t)
        chosen = ce[:k]
        tot = sum(float(scores[t, e]) for e in chosen)
        xs = x[t].tolist()
        row = [0.0] * d
        for e in range(E):
            if e not in chosen:
                continue
            w = (float(scores[t, e]) / (tot + 1e-20) if m["norm"] else float(scores[t, e])) * m["rsf"]
            if abs(w - weights[t][e]) > 1e-12:
                raise CheckFailed("row %d expert %d: weight %r by Python, %r by torch" % (t, e, w, weights[t][e]))
            for c_, v in enumerate(mlp_python(xs, m["experts"][e], d)):
                row[c_] += w * v
        if m.get("shared") is not None:
            row = [a + b for a, b in zip(row, mlp_python(xs, m["shared"], d))]
        agree("ffn_out row %d by Python sums" % t, [row], final[t:t + 1], 1e-12)


def mlp_python(xs, ex, d):
    ff = ex["W_1"].shape[1]
    h = [sum(xs[c] * float(ex["W_1"][c, f]) for c in range(d)) for f in range(ff)]
    g = [sum(xs[c] * float(ex["W_3"][c, f]) for c in range(d)) for f in range(ff)]
    a = [h[f] / (1 + math.exp(-h[f])) * g[f] for f in range(ff)]
    return [sum(a[f] * float(ex["W_2"][f, c]) for f in range(ff)) for c in range(d)]


def reference(path, override=None):
    """make_reference_moe.py's reference, and the sigmoid router's matrices of each layer."""
    ref = _m1_reference(path, override)
    L, s, params = read_lesson(path, override)
    out = v4.forward(L, s, params, set())
    for lay, lo in zip(ref["layers"], out["layers"]):
        for key in ("router_scores", "group_scores", "scores_for_choice", "shared_out"):
            if key in lo:
                lay[key] = v4.plain(lo[key])
        if "router_scores" in lo:
            lay.pop("router_probs", None)
            lay.pop("shared_gate", None)
    if lesson_json(path, override).get("decode"):
        # decoding token by token (a KV cache, each new token routed alone): step t's layer output is the causal
        # forward's row t, as transformers' generate() with past_key_values computes it
        for lay in ref["layers"]:
            lay["decode"] = [{"t": t, "layer_output": [row]} for t, row in enumerate(lay["residual2"])]
    return ref


# ------------------------------------------------------------------ the lessons

def lessons(folder):
    g = torch.Generator().manual_seed(2323)
    rnd, rvec = v4.rnd, v4.rvec
    out = {}

    def experts(E, d, ff, scale=0.6):
        return [{"W_1": rnd(g, d, ff, scale), "W_3": rnd(g, d, ff, scale), "W_2": rnd(g, ff, d, scale)} for _ in range(E)]

    def layer_of(d, h, kv, dk, E, ff, k, norm, router, shared=0):
        lay = {"heads": h, "kv_heads": kv, "W_q": rnd(g, d, h * dk, 0.5), "W_k": rnd(g, d, kv * dk, 0.5),
               "W_v": rnd(g, d, kv * dk, 0.5), "W_o": rnd(g, h * dk, d, 0.5),
               "block": {"norm": "pre", "norm_kind": "rmsnorm", "eps": 1e-6,
                         "ln1": {"gamma": rvec(g, d)}, "ln2": {"gamma": rvec(g, d)},
                         "ffn": dict({"kind": "moe", "activation": "swiglu", "router": rnd(g, d, E, 1.5), "top_k": k,
                                      "norm_topk_prob": norm}, **router, experts=experts(E, d, ff))}}
        if shared:
            lay["block"]["ffn"]["shared_expert"] = {"W_1": rnd(g, d, shared, 0.6), "W_3": rnd(g, d, shared, 0.6),
                                                    "W_2": rnd(g, shared, d, 0.6)}
        return lay

    def lesson(title_en, title_zh, n, d, lay):
        top = {"attnviz": 2, "title": {"en": title_en, "zh": title_zh},
               "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d), "mask": "causal",
               "rope": {"base": 10000.0, "style": "half"}}
        top.update(lay)
        return top

    def bias(E, scale):
        # not below 0: a bias that pushes a kept expert's s below the 0.0 of a dropped group would let
        # transformers choose among tied 0.0s (see the docstring's ties)
        return [round(abs(float(v)), 6) for v in torch.randn(E, generator=g) * scale]

    # 1. DeepSeek-V3's shape: 8 experts in 4 groups, 2 groups kept, top 2 renormalised × 2.5, a bias,
    #    2 shared experts fused (width 2 × 3), no gate
    out["dsv3_groups"] = lesson("DeepSeek-V3's router: 8 experts in 4 groups, the best 2 groups, top 2",
                                "DeepSeek-V3 的路由器：8 个专家分 4 组，留最好的 2 组，取前 2 个", 6, 6,
                                layer_of(6, 2, 1, 4, 8, 3, 2, True,
                                         {"scoring_func": "sigmoid", "n_group": 4, "topk_group": 2,
                                          "routed_scaling_factor": 2.5, "e_score_correction_bias": bias(8, 0.3)},
                                         shared=6))
    # 2. sigmoid scores without groups, norm_topk_prob false, no bias given (zeros), no shared expert
    out["dsv3_sigmoid_nonorm"] = lesson("Sigmoid routing without renormalising: 4 experts, top 2",
                                        "不重新归一化的 sigmoid 路由：4 个专家，取前 2 个", 5, 4,
                                        layer_of(4, 1, 1, 4, 4, 3, 2, False, {"scoring_func": "sigmoid"}))
    # 3. a bias large enough to change which expert is chosen; 2 groups, 1 kept, top 1; a shared expert
    out["dsv3_bias_top1"] = lesson("The correction bias changes the choice, not the weight: top 1 of the better group",
                                   "校正偏置改变挑选，不改变权重：在更好的那组里取第 1 个", 5, 4,
                                   layer_of(4, 2, 2, 2, 6, 2, 1, True,
                                            {"scoring_func": "sigmoid", "n_group": 2, "topk_group": 1,
                                             "routed_scaling_factor": 1.0, "e_score_correction_bias": bias(6, 0.8)},
                                            shared=2))
    # 4. two layers, the second with its own router settings (a layer's "block" replaces the lesson's)
    two = lesson("Two DeepSeek-V3 layers, each with its own groups", "两层 DeepSeek-V3，各自分组", 4, 4,
                 layer_of(4, 1, 1, 4, 4, 2, 2, True,
                          {"scoring_func": "sigmoid", "n_group": 2, "topk_group": 1, "routed_scaling_factor": 1.5,
                           "e_score_correction_bias": bias(4, 0.2)}))
    b = layer_of(4, 1, 1, 4, 6, 2, 3, True,
                 {"scoring_func": "sigmoid", "n_group": 3, "topk_group": 2, "routed_scaling_factor": 0.75,
                  "e_score_correction_bias": bias(6, 0.2)}, shared=4)
    two["layers"] = [{}, b]
    out["dsv3_two_layers"] = two
    # 5. a softmax router beside a shared expert without a gate (DeepSeek-V2's shape)
    out["dsv2_softmax_shared"] = lesson("A softmax router and a shared expert without a gate (DeepSeek-V2)",
                                        "softmax 路由器加一个没有门的共享专家（DeepSeek-V2）", 5, 4,
                                        layer_of(4, 2, 1, 2, 4, 3, 2, False, {}, shared=3))
    # 6. decoded token by token (each new token routed alone from the cache's step): DeepSeek-V3's router over
    #    two layers, then Mixtral's softmax router with Qwen2-MoE's gated shared expert
    dec = lesson("DeepSeek-V3's mixture decoded token by token", "DeepSeek-V3 的混合专家逐词解码", 5, 4,
                 layer_of(4, 2, 1, 2, 4, 2, 2, True,
                          {"scoring_func": "sigmoid", "n_group": 2, "topk_group": 1, "routed_scaling_factor": 2.0,
                           "e_score_correction_bias": bias(4, 0.3)}, shared=2))
    dec["layers"] = [{}, layer_of(4, 2, 1, 2, 6, 2, 2, False,
                                  {"scoring_func": "sigmoid", "n_group": 3, "topk_group": 2,
                                   "e_score_correction_bias": bias(6, 0.3)})]
    dec["decode"] = True
    out["dsv3_decode"] = dec
    mix = lesson("Mixtral's softmax router and a gated shared expert, decoded token by token",
                 "Mixtral 的 softmax 路由器加带门的共享专家，逐词解码", 5, 4, layer_of(4, 2, 2, 2, 4, 3, 2, True, {}, shared=3))
    mix["block"]["ffn"]["shared_expert"]["gate"] = rnd(g, 4, 1, 1.0)
    mix["decode"] = True
    out["softmax_decode"] = mix
    write_lessons(folder, out)


v4.read_lesson = m1.read_lesson = read_lesson
m1.moe = moe
v4.reference = m1.reference = reference
v4.lessons = lessons

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--all":
        make_all(sys.argv[2], lessons, reference)
        sys.exit(0)
    sys.exit(v4.main(sys.argv))
