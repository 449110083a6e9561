#!/usr/bin/python3
"""Independent reference numbers for issue 23 §7: a mixture-of-experts FFN
(Mixtral, Qwen3-MoE), computed with PyTorch in float64:

    make_reference_moe.py --all tests/golden/moe     # the lessons (seeded) and every NAME.ref.json beside them
    make_reference_moe.py LESSON.json > LESSON.ref.json
    make_reference_moe.py lessons/moe.json > tests/golden/lessons/moe.ref.json

Written from issue 23, lessons/FORMAT.md ("ffn": {"kind": "moe"}) and the
transformers code below, not from the C code. The rest of a layer
(projections, QK-norm, RoPE, the pre-norm block, the final norm, the LM head)
is make_reference_v4.py's, imported and unchanged; this script replaces its
layer()'s FFN when the lesson's is a mixture of experts. The lines followed
(transformers, src/transformers/models/…, at commit
00d4b3d2142cb4ced2f51b90614b5d26bc045015):

  mixtral/modeling_mixtral.py, MixtralBlockSparseTop2MLP.forward (each expert):
        current_hidden_states = self.act_fn(self.w1(hidden_states)) * self.w3(hidden_states)
        current_hidden_states = self.w2(current_hidden_states)        -> expert(): "expert_act", "expert_out"
  mixtral/modeling_mixtral.py, MixtralSparseMoeBlock.forward (the block):
        router_logits = self.gate(hidden_states)                      -> "router_logits"
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)   -> "router_probs"
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)  -> "moe_weights" (the chosen cells)
        expert_mask = torch.nn.functional.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in expert_hit:
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
                                                                      -> "ffn_out"
  qwen2_moe/modeling_qwen2_moe.py, Qwen2MoeSparseMoeBlock.forward (the shared expert, after the routed ones):
        shared_expert_output = self.shared_expert(hidden_states)
        shared_expert_output = F.sigmoid(self.shared_expert_gate(hidden_states)) * shared_expert_output
        final_hidden_states = final_hidden_states + shared_expert_output      -> "shared_gate", "shared_out"
  qwen3_moe/modeling_qwen3_moe.py, Qwen3MoeSparseMoeBlock.forward: the same,
  with the division only under `if self.norm_topk_prob:` (the lesson's
  "norm_topk_prob", default true as Mixtral's).

F.softmax(…, dtype=torch.float) is float32 in transformers; here everything
is float64 (the lesson's numbers are exact doubles). The cells of experts a
token did not choose are null in moe_weights, and their rows of expert_act
and expert_out null (nothing is computed there), as attnviz's --dump writes
them. Ties: the lessons are made so that no row's top_k-th and next
probabilities are within 1e-9 (checked), so torch.topk's choice is the only
one; attnviz breaks an exact tie by the lower expert index.

Cross-checks (stderr): the whole FFN again as the dense sum Σ_e w_e·expert_e(x)
with Python loops (w_e 0 for an expert not chosen); the top-k again by sorting.

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
from lessonfiles import make_all, write_lessons  # noqa: E402

torch.set_default_dtype(torch.float64)
T, vec, agree, CheckFailed = v4.T, v4.vec, v4.agree, v4.CheckFailed

_v4_read_lesson = v4.read_lesson


def read_lesson(path, override=None):
    L, s, params = _v4_read_lesson(path, override)
    with open(path) as f:
        J = json.load(f)
    for p, lay in zip(params, J.get("layers") or [{}]):
        m = dict(J)
        m.update(lay)
        fj = (m.get("block") or {}).get("ffn") or {}
        p["moe"] = None
        if fj.get("kind") == "moe":
            p["moe"] = {"router": T(fj["router"]), "top_k": fj.get("top_k", 2),
                        "norm": fj.get("norm_topk_prob", True),
                        "experts": [{k: T(e[k]) for k in ("W_1", "W_3", "W_2")} for e in fj["experts"]]}
            if fj.get("shared_expert"):
                sj = fj["shared_expert"]
                p["moe"]["shared"] = {k: T(sj[k]) for k in ("W_1", "W_3", "W_2", "gate")}
    return L, s, params


def expert(x, e):
    """MixtralBlockSparseTop2MLP.forward: w2(act_fn(w1(x)) * w3(x)); our W_* are nn.Linear's weights transposed."""
    act = F.silu(x @ e["W_1"]) * (x @ e["W_3"])
    return act, act @ e["W_2"]


def moe(x, m, out, checks):
    """MixtralSparseMoeBlock.forward / Qwen3MoeSparseMoeBlock.forward on the n rows x."""
    n, d = x.shape
    E, k = len(m["experts"]), m["top_k"]
    router_logits = x @ m["router"]                                       # self.gate(hidden_states)
    routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float64)
    probs = routing_weights
    routing_weights, selected_experts = torch.topk(routing_weights, k, dim=-1)
    if m["norm"]:
        routing_weights = routing_weights / routing_weights.sum(dim=-1, keepdim=True)
    final = torch.zeros((n, d), dtype=x.dtype)
    expert_mask = torch.nn.functional.one_hot(selected_experts, num_classes=E).permute(2, 1, 0)
    F_ = m["experts"][0]["W_1"].shape[1]
    act_all = [[None] * (E * F_) for _ in range(n)]
    out_all = [[None] * (E * d) for _ in range(n)]
    for e in range(E):                                                    # expert_hit, in the experts' order
        idx, top_x = torch.where(expert_mask[e])
        if len(top_x) == 0:
            continue
        current_state = x[top_x]
        act, y = expert(current_state, m["experts"][e])
        final.index_add_(0, top_x, y * routing_weights[top_x, idx, None])
        for r, t in enumerate(top_x.tolist()):
            act_all[t][e * F_:(e + 1) * F_] = act[r].tolist()
            out_all[t][e * d:(e + 1) * d] = y[r].tolist()
    weights = [[None] * E for _ in range(n)]
    for t in range(n):
        for j in range(k):
            weights[t][int(selected_experts[t, j])] = float(routing_weights[t, j])
    dense_rows = []
    if checks is not None:
        for t in range(n):
            p = sorted(probs[t].tolist(), reverse=True)
            if k < E and p[k - 1] - p[k] < 1e-9:
                raise CheckFailed("row %d: a near tie at the top_k-th expert (the lesson must avoid it)" % t)
            order = sorted(range(E), key=lambda e: (-float(probs[t, e]), e))[:k]
            if sorted(order) != sorted(int(i) for i in selected_experts[t]):
                raise CheckFailed("row %d: torch.topk and sorting disagree" % t)
            dense = [0.0] * d
            for e in range(E):
                if weights[t][e] is None:
                    continue
                xs = x[t].tolist()
                ex = m["experts"][e]
                h = [sum(xs[c] * float(ex["W_1"][c, f]) for c in range(d)) for f in range(F_)]
                g = [sum(xs[c] * float(ex["W_3"][c, f]) for c in range(d)) for f in range(F_)]
                a = [h[f] / (1 + math.exp(-h[f])) * g[f] for f in range(F_)]
                for c in range(d):
                    dense[c] += weights[t][e] * sum(a[f] * float(ex["W_2"][f, c]) for f in range(F_))
            dense_rows.append(dense)
        checks.add("moe")
    out.update(router_logits=router_logits, router_probs=probs, moe_weights=weights, expert_act=act_all,
               expert_out=out_all)
    if m.get("shared"):
        # Qwen2MoeSparseMoeBlock.forward, after the routed experts:
        #     shared_expert_output = self.shared_expert(hidden_states)
        #     shared_expert_output = F.sigmoid(self.shared_expert_gate(hidden_states)) * shared_expert_output
        #     final_hidden_states = final_hidden_states + shared_expert_output
        sh = m["shared"]
        _, shared_out = expert(x, sh)
        gate = torch.sigmoid(x @ sh["gate"])
        final = final + gate * shared_out
        if checks is not None:
            checks.add("shared_expert")
        out.update(shared_gate=gate, shared_out=shared_out)
    if checks is not None:
        for t in range(n):
            row = dense_rows[t]
            if m.get("shared"):
                sh, xs = m["shared"], x[t].tolist()
                g = 1 / (1 + math.exp(-sum(xs[c] * float(sh["gate"][c, 0]) for c in range(d))))
                Fs = sh["W_1"].shape[1]
                h = [sum(xs[c] * float(sh["W_1"][c, f]) for c in range(d)) for f in range(Fs)]
                u = [sum(xs[c] * float(sh["W_3"][c, f]) for c in range(d)) for f in range(Fs)]
                a = [h[f] / (1 + math.exp(-h[f])) * u[f] for f in range(Fs)]
                row = [row[c] + g * sum(a[f] * float(sh["W_2"][f, c]) for f in range(Fs)) for c in range(d)]
            agree("ffn_out row %d by Python sums" % t, [row], final[t:t + 1], 1e-12)
    return final


_v4_layer = v4.layer


def layer(x, p, s, out, checks):
    """v4's pre-norm layer (Qwen3MoeDecoderLayer / MixtralDecoderLayer), its FFN the mixture of experts."""
    if not p.get("moe"):
        return _v4_layer(x, p, s, out, checks)
    at = out["attn"] = {}
    n1 = v4.norm(x, s, p["ln1_gamma"], p.get("ln1_beta"))
    r1 = x + v4.attention(n1, p, s, at, checks)
    n2 = v4.norm(r1, s, p["ln2_gamma"], p.get("ln2_beta"))
    f = moe(n2, p["moe"], out, checks)
    r2 = r1 + f
    out.update(norm1=n1, residual1=r1, norm2=n2, ffn_out=f, residual2=r2, output=r2)
    return r2


_v4_reference = v4.reference


def reference(path, override=None):
    """v4's reference with this layer, and the mixture's matrices of each layer."""
    L, s, params = read_lesson(path, override)
    checks = set()
    out = v4.forward(L, s, params, checks)
    ref = _v4_reference(path, override)
    for lay, lo in zip(ref["layers"], out["layers"]):
        for key in ("router_logits", "router_probs", "moe_weights", "expert_act", "expert_out", "shared_gate",
                    "shared_out"):
            if key in lo:
                lay[key] = v4.plain(lo[key])
    return ref


# ------------------------------------------------------------------ the lessons

def lessons(folder):
    g = torch.Generator().manual_seed(237)
    rnd, rvec = v4.rnd, v4.rvec
    out = {}

    def experts(E, d, ff, scale=0.6):
        return [{"W_1": rnd(g, d, ff, scale), "W_3": rnd(g, d, ff, scale), "W_2": rnd(g, ff, d, scale)} for _ in range(E)]

    def layer_of(d, h, kv, dk, E, ff, k, norm, qk=False):
        lay = {"heads": h, "kv_heads": kv, "W_q": rnd(g, d, h * dk, 0.5), "W_k": rnd(g, d, kv * dk, 0.5),
               "W_v": rnd(g, d, kv * dk, 0.5), "W_o": rnd(g, h * dk, d, 0.5),
               "block": {"norm": "pre", "norm_kind": "rmsnorm", "eps": 1e-6,
                         "ln1": {"gamma": rvec(g, d)}, "ln2": {"gamma": rvec(g, d)},
                         "ffn": {"kind": "moe", "activation": "swiglu", "router": rnd(g, d, E, 1.5), "top_k": k,
                                 "norm_topk_prob": norm, "experts": experts(E, d, ff)}}}
        if qk:
            lay["qk_norm"] = {"q": rvec(g, dk), "k": rvec(g, dk), "eps": 1e-6}
        return lay

    def lesson(title_en, title_zh, n, d, lay, extra=None):
        top = {"attnviz": 2, "title": {"en": title_en, "zh": title_zh},
               "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d), "mask": "causal",
               "rope": {"base": 10000.0, "style": "half"}}
        top.update(lay)
        if extra:
            top.update(extra)
        return top

    # 1. Mixtral's shape: 8 experts, top 2, renormalised; GQA 4 on 2, RoPE, final norm
    d = 6
    l1 = layer_of(d, 4, 2, 2, 8, 5, 2, True)
    out["mixtral_top2"] = lesson("Mixtral's mixture: 8 experts, the top 2 renormalised",
                                 "Mixtral 的混合专家：8 个专家，前 2 个重新归一化", 6, d, l1)
    out["mixtral_top2"]["block"] = dict(l1["block"], final_norm={"gamma": rvec(g, d)})
    # 2. Qwen3-MoE's shape, norm_topk_prob false: QK-norm, two layers, 6 experts, top 2
    a, b = layer_of(d, 2, 1, 4, 6, 4, 2, False, qk=True), layer_of(d, 2, 1, 4, 6, 4, 2, False, qk=True)
    q = lesson("Qwen3-MoE's mixture without norm_topk_prob, two layers",
               "Qwen3-MoE 的混合专家（不做 norm_topk_prob），两层", 5, d, a)
    q["layers"] = [{}, b]
    out["qwen3moe_nonorm_2layers"] = q
    # 3. top 1, renormalised: every chosen weight is 1
    out["moe_top1_norm"] = lesson("A mixture of 4 experts, top 1 (its weight is 1)", "4 个专家，只取第 1 个（权重为 1）",
                                  5, 4, layer_of(4, 1, 1, 4, 4, 3, 1, True))
    # 4. top 1 without renormalising: the weight is the probability
    out["moe_top1_nonorm"] = lesson("A mixture of 3 experts, top 1, its probability as the weight",
                                    "3 个专家，只取第 1 个，权重就是它的概率", 4, 4, layer_of(4, 2, 2, 2, 3, 3, 1, False))
    # 5. every expert chosen (top_k = E) without renormalising: a dense, probability-weighted sum
    out["moe_all_experts"] = lesson("Every expert chosen: a probability-weighted sum of 3 SwiGLU FFNs",
                                    "选中所有专家：3 个 SwiGLU 前馈网络按概率加权求和", 4, 4,
                                    layer_of(4, 1, 1, 4, 3, 2, 3, False))
    # 6. Qwen2-MoE's shared expert beside 4 routed experts (top 2, no renormalising), its sigmoid gate
    sh = layer_of(d, 2, 2, 4, 4, 4, 2, False)
    sh["block"]["ffn"]["shared_expert"] = {"W_1": rnd(g, d, 6, 0.6), "W_3": rnd(g, d, 6, 0.6), "W_2": rnd(g, 6, d, 0.6),
                                           "gate": rnd(g, d, 1, 1.0)}
    out["qwen2moe_shared"] = lesson("Qwen2-MoE's shared expert: every token through it, times a sigmoid gate",
                                    "Qwen2-MoE 的共享专家：每个词都经过它，再乘以 sigmoid 门", 5, d, sh)
    write_lessons(folder, out)


v4.read_lesson, v4.layer, v4.reference, v4.lessons = read_lesson, layer, reference, lessons

if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--all":
        make_all(sys.argv[2], lessons, reference)
        sys.exit(0)
    sys.exit(v4.main(sys.argv))
