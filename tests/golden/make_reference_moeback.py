#!/usr/bin/python3
"""Independent reference numbers for issue 23's backward pass through gated
attention and the mixture-of-experts FFN: every gradient by torch.autograd in
float64, and a few steps of plain gradient descent.

    make_reference_moeback.py --all tests/golden/moeback     # the lessons and every NAME.ref.json
    make_reference_moeback.py LESSON.json > LESSON.ref.json  # one lesson's forward, loss and gradients
    make_reference_moeback.py --train STEPS LR LESSON.json > LESSON.trainSTEPS.ref.json

Written from issue 23, lessons/FORMAT.md and the transformers code below,
not from attnviz's C code; its model is its own (it takes only
make_reference_v4.py's JSON helpers: plain, rnd, rvec). The forward is a layer as a lesson gives it (multi-head attention
with a causal mask, W_o, and a pre-norm RMSNorm block, or attention alone);
the loss is ½ Σ (output − target)², and every gradient is autograd's. The lines
followed (transformers, src/transformers/models/…):

  qwen3_next/modeling_qwen3_next.py, Qwen3NextAttention.forward (the gate):
        query_states, gate = torch.chunk(self.q_proj(hidden_states).view(*input_shape, -1, self.head_dim * 2), 2, dim=-1)
        gate = gate.reshape(*input_shape, -1)
        ...
        attn_output = attn_output * torch.sigmoid(gate)
        attn_output = self.o_proj(attn_output)                        -> attention(): "gate", "gated"
    (the lesson gives the gate's half of q_proj as W_gate and of its bias as b_gate)
  mixtral/modeling_mixtral.py, MixtralSparseMoeBlock.forward and MixtralBlockSparseTop2MLP:
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        current_hidden_states = self.act_fn(self.w1(hidden_states)) * self.w3(hidden_states)
        current_hidden_states = self.w2(current_hidden_states)        -> moe(): softmax router
  qwen3_moe/modeling_qwen3_moe.py, Qwen3MoeSparseMoeBlock.forward: the same, the division
        only `if self.norm_topk_prob`
  qwen2_moe/modeling_qwen2_moe.py, Qwen2MoeSparseMoeBlock.forward (the shared expert):
        shared_expert_output = self.shared_expert(hidden_states)
        shared_expert_output = F.sigmoid(self.shared_expert_gate(hidden_states)) * shared_expert_output
        final_hidden_states = final_hidden_states + shared_expert_output
  deepseek_v3/modeling_deepseek_v3.py, DeepseekV3TopkRouter.forward / get_topk_indices and
  DeepseekV3MoE.route_tokens_to_experts / forward:
        router_logits = F.linear(hidden_states.type(torch.float32), self.weight.type(torch.float32))
        scores = router_logits.sigmoid()
        @torch.no_grad() get_topk_indices: scores_for_choice = scores + e_score_correction_bias;
            group_scores = scores_for_choice.view(-1, n_group, E // n_group).topk(2, dim=-1)[0].sum(dim=-1)
            group_idx = torch.topk(group_scores, k=topk_group, dim=-1, sorted=False)[1]
            ... scores_for_choice.masked_fill(~score_mask.bool(), 0.0); topk(top_k)
        topk_weights = router_logits.gather(1, topk_indices)   (router_logits here: the sigmoid scores)
        if self.norm_topk_prob: denominator = topk_weights.sum(dim=-1, keepdim=True) + 1e-20; topk_weights /= denominator
        topk_weights = topk_weights * self.routed_scaling_factor
        hidden_states = hidden_states + self.shared_experts(residuals)  (no gate)
  gpt_oss/modeling_gpt_oss.py, GptOssTopKRouter.forward and GptOssExperts.forward:
        router_logits = F.linear(hidden_states, self.weight, self.bias)
        router_top_value, router_indices = torch.topk(router_logits, self.top_k, dim=-1)
        router_top_value = torch.nn.functional.softmax(router_top_value, dim=1, dtype=router_top_value.dtype)
        router_scores = torch.zeros_like(router_logits).scatter_(1, router_indices, router_top_value)
        gate_up = hidden_states @ self.gate_up_proj + self.gate_up_proj_bias
        gate, up = gate_up[..., ::2], gate_up[..., 1::2]
        gate = gate.clamp(min=None, max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        next_states = ((up + 1) * glu) @ self.down_proj + self.down_proj_bias
        (times each token's router score, summed over the experts)
    (the lesson gives gate_up_proj's even columns as an expert's W_1 and its odd ones as W_3;
     this script interleaves them back into gate_up_proj and slices ::2 and 1::2 as above)

The top-k choice is made on detached numbers, as torch.topk's indices carry no
gradient: the gradient reaches the router only through the chosen experts'
scores. The clamp's gradient is autograd's (0 where a value was clamped).
Cross-checks (stderr): each lesson's forward output against a second
computation written with Python loops, and each gradient of a weight against
central finite differences (h = 1e-6, agreeing to 1e-6).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_reference_v4 import plain, rnd, rvec  # noqa: E402  (its JSON helpers and seeded numbers, nothing of its model)

torch.set_default_dtype(torch.float64)


def T(x):
    return torch.tensor(x, dtype=torch.float64)


def keep(t):
    """Keep t's gradient (autograd's .grad of a non-leaf), when it has one (not under no_grad)."""
    if t.requires_grad:
        t.retain_grad()


# ------------------------------------------------------------------ the parameters a lesson gives

def params_of(L):
    """Every trainable tensor of the lesson, by a name of this script's (leaves for autograd)."""
    P = {}
    for k in ("W_q", "W_k", "W_v", "W_o", "W_gate"):
        if L.get(k) is not None and L.get(k) is not False:
            P[k] = T(L[k])
    if L.get("b_gate"):
        P["b_gate"] = T(L["b_gate"])
    b = L.get("block")
    if b:
        P["ln1"] = T(b["ln1"]["gamma"])
        P["ln2"] = T(b["ln2"]["gamma"])
        f = b["ffn"]
        if f.get("kind") == "moe":
            P["W_router"] = T(f["router"])
            if f.get("router_bias") is not None:
                P["router_bias"] = T(f["router_bias"]).reshape(-1)
            for e, ex in enumerate(f["experts"]):
                for k in ("W_1", "W_3", "W_2", "b_1", "b_3", "b_2"):
                    if k in ex:
                        P["e%d_%s" % (e, k)] = T(ex[k]) if k[0] == "W" else T(ex[k]).reshape(-1)
            sh = f.get("shared_expert")
            if sh:
                for k in ("W_1", "W_3", "W_2", "gate"):
                    if k in sh:
                        P["s_" + k] = T(sh[k])
        else:
            for k in ("W_1", "W_3", "W_2"):
                P["f_" + k] = T(f[k])
            # b_1, b_3 and b_2: 0 unless given, and trained all the same (lessons/FORMAT.md: they always exist)
            P["f_b_1"] = T(f["b_1"]) if "b_1" in f else torch.zeros(P["f_W_1"].shape[1])
            P["f_b_3"] = T(f["b_3"]) if "b_3" in f else torch.zeros(P["f_W_3"].shape[1])
            P["f_b_2"] = T(f["b_2"]) if "b_2" in f else torch.zeros(P["f_W_2"].shape[1])
    return P


def rms_norm(x, w, eps):
    """Qwen3RMSNorm / MixtralRMSNorm: x · rsqrt(mean(x²) + eps) · w."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def attention(x, L, P, out):
    n = x.shape[0]
    h = L.get("heads", 1)
    q, k, v = x @ P["W_q"], x @ P["W_k"], x @ P["W_v"]
    dk, dv = q.shape[1] // h, v.shape[1] // h
    qh, kh, vh = q.view(n, h, dk).transpose(0, 1), k.view(n, h, dk).transpose(0, 1), v.view(n, h, dv).transpose(0, 1)
    s = qh @ kh.transpose(1, 2) * dk ** -0.5
    if L.get("mask") == "causal":
        s = s + torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    w = F.softmax(s, dim=-1)
    concat = (w @ vh).transpose(0, 1).reshape(n, h * dv)
    keep(concat)
    out["concat"] = concat
    a = concat
    if "W_gate" in P:                                    # Qwen3NextAttention: attn_output * sigmoid(gate)
        gate = x @ P["W_gate"] + (P["b_gate"] if "b_gate" in P else 0.0)
        keep(gate)
        a = concat * torch.sigmoid(gate)
        keep(a)
        out["gate"], out["gated"] = gate, a
    return a @ P["W_o"]


def swiglu(x, w1, w3, w2):
    return (F.silu(x @ w1) * (x @ w3)) @ w2


def moe(x, f, P, out):
    """The mixture on rows x: the router by its kind, the chosen experts, their weighted sum (+ the shared expert)."""
    n, E, k = x.shape[0], len(f["experts"]), f["top_k"]
    oss = f.get("gpt_oss")
    sigmoid = f.get("scoring_func") == "sigmoid"
    logits = x @ P["W_router"] + (P["router_bias"] if "router_bias" in P else 0.0)
    keep(logits)
    out["router_logits"] = logits
    if oss:                                              # GptOssTopKRouter: topk of the logits, then softmax
        top_v, idx = torch.topk(logits, k, dim=-1)
        weights = F.softmax(top_v, dim=1)
    elif sigmoid:                                        # DeepseekV3TopkRouter
        scores = logits.sigmoid()
        with torch.no_grad():
            sfc = scores + T(f["e_score_correction_bias"])
            ng, tg = f.get("n_group", 1), f.get("topk_group", f.get("n_group", 1))
            gs = sfc.view(n, ng, E // ng).topk(2, dim=-1)[0].sum(dim=-1)
            gidx = torch.topk(gs, k=tg, dim=-1, sorted=False)[1]
            gmask = torch.zeros_like(gs).scatter_(1, gidx, 1)
            smask = gmask.unsqueeze(-1).expand(n, ng, E // ng).reshape(n, E)
            sfc = sfc.masked_fill(~smask.bool(), 0.0)
            idx = torch.topk(sfc, k=k, dim=-1, sorted=False)[1]
        weights = scores.gather(1, idx)
        if f.get("norm_topk_prob"):
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20)
        weights = weights * f.get("routed_scaling_factor", 1.0)
    else:                                                # Mixtral, Qwen3-MoE
        probs = F.softmax(logits, dim=1)
        weights, idx = torch.topk(probs, k, dim=-1)
        if f.get("norm_topk_prob"):
            weights = weights / weights.sum(dim=-1, keepdim=True)
    keep(weights)
    out["topk"] = (weights, idx)
    y = torch.zeros_like(x)
    for e in range(E):
        rows, slot = torch.where(idx == e)
        if rows.numel() == 0:
            continue
        xe = x[rows]
        if oss:
            lim, alpha = oss.get("swiglu_limit", 7.0), oss.get("swiglu_alpha", 1.702)
            F_ = P["e%d_W_1" % e].shape[1]
            gup = torch.stack([P["e%d_W_1" % e], P["e%d_W_3" % e]], dim=-1).reshape(x.shape[1], 2 * F_)
            gupb = torch.stack([P["e%d_b_1" % e], P["e%d_b_3" % e]], dim=-1).reshape(2 * F_)
            gate_up = xe @ gup + gupb
            gate, up = gate_up[..., ::2], gate_up[..., 1::2]
            out["clamped"] = out.get("clamped", 0) + int((gate > lim).sum()) + int((up.abs() > lim).sum())
            gate = gate.clamp(min=None, max=lim)
            up = up.clamp(min=-lim, max=lim)
            glu = gate * torch.sigmoid(gate * alpha)
            ye = ((up + 1) * glu) @ P["e%d_W_2" % e] + P["e%d_b_2" % e]
        else:
            ye = swiglu(xe, P["e%d_W_1" % e], P["e%d_W_3" % e], P["e%d_W_2" % e])
        y = y.index_add(0, rows, ye * weights[rows, slot, None])
    if "s_W_1" in P:
        so = swiglu(x, P["s_W_1"], P["s_W_3"], P["s_W_2"])
        if "s_gate" in P:
            so = torch.sigmoid(x @ P["s_gate"]) * so
        y = y + so
    keep(y)
    out["ffn_out"] = y
    return y


def forward(L, P, X):
    out = {}
    b = L.get("block")
    if not b:
        out["output"] = attention(X, L, P, out)
        return out
    eps = b.get("eps", 1e-5)
    n1 = rms_norm(X, P["ln1"], eps)
    keep(n1)
    r1 = X + attention(n1, L, P, out)
    n2 = rms_norm(r1, P["ln2"], eps)
    keep(n2)
    f = b["ffn"]
    if f.get("kind") == "moe":
        y = moe(n2, f, P, out)
    else:
        y = (F.silu(n2 @ P["f_W_1"] + P["f_b_1"]) * (n2 @ P["f_W_3"] + P["f_b_3"])) @ P["f_W_2"] + P["f_b_2"]
    out.update(norm1=n1, norm2=n2, output=r1 + y)
    return out


def loss_of(L, P):
    X = T(L["X"]).requires_grad_(True)
    out = forward(L, P, X)
    loss = 0.5 * ((out["output"] - T(L["backward"]["target"])) ** 2).sum()
    return loss, out, X


# ------------------------------------------------------------------ cross-checks

class CheckFailed(Exception):
    pass


def loop_forward(L, P):
    """The same layer in Python loops and math (no torch ops on the way): its output rows."""
    X = [[float(v) for v in r] for r in L["X"]]
    m = {k: v.tolist() for k, v in P.items()}

    def mm(A, B):
        return [[sum(A[i][c] * B[c][j] for c in range(len(B))) for j in range(len(B[0]))] for i in range(len(A))]

    def sig(z):
        return 1.0 / (1.0 + math.exp(-z))

    def rms(x, g, eps):
        out = []
        for r in x:
            s = math.sqrt(sum(v * v for v in r) / len(r) + eps)
            out.append([r[j] / s * g[j] for j in range(len(r))])
        return out

    def attn(x):
        n, h = len(x), L.get("heads", 1)
        Q, K, V = mm(x, m["W_q"]), mm(x, m["W_k"]), mm(x, m["W_v"])
        dk, dv = len(Q[0]) // h, len(V[0]) // h
        C = [[0.0] * (h * dv) for _ in range(n)]
        for hd in range(h):
            for i in range(n):
                keys = range(i + 1) if L.get("mask") == "causal" else range(n)
                s = {j: sum(Q[i][hd * dk + c] * K[j][hd * dk + c] for c in range(dk)) / math.sqrt(dk) for j in keys}
                mx = max(s.values())
                z = sum(math.exp(v - mx) for v in s.values())
                for c in range(dv):
                    C[i][hd * dv + c] = sum(math.exp(s[j] - mx) / z * V[j][hd * dv + c] for j in keys)
        if "W_gate" in m:
            G = mm(x, m["W_gate"])
            for i in range(n):
                for j in range(len(C[0])):
                    C[i][j] *= sig(G[i][j] + (m["b_gate"][j] if "b_gate" in m else 0.0))
        return mm(C, m["W_o"])

    def glu(x, w1, w3, w2):
        H, G = mm(x, w1), mm(x, w3)
        A = [[H[i][f] * sig(H[i][f]) * G[i][f] for f in range(len(H[0]))] for i in range(len(H))]
        return mm(A, w2)

    def mix(x, f):
        E, k, n = len(f["experts"]), f["top_k"], len(x)
        lg = mm(x, m["W_router"])
        if "router_bias" in m:
            lg = [[v + m["router_bias"][e] for e, v in enumerate(r)] for r in lg]
        out = [[0.0] * len(x[0]) for _ in range(n)]
        for i in range(n):
            if f.get("gpt_oss"):
                ch = sorted(range(E), key=lambda e: (-lg[i][e], e))[:k]
                z = sum(math.exp(lg[i][e] - lg[i][ch[0]]) for e in ch)
                w = {e: math.exp(lg[i][e] - lg[i][ch[0]]) / z for e in ch}
            elif f.get("scoring_func") == "sigmoid":
                s = [sig(v) for v in lg[i]]
                sc = [s[e] + f["e_score_correction_bias"][e] for e in range(E)]
                ng = f.get("n_group", 1)
                tg = f.get("topk_group", ng)
                gsz = E // ng
                gsc = [sum(sorted(sc[g * gsz:(g + 1) * gsz], reverse=True)[:2]) for g in range(ng)]
                kept = sorted(range(ng), key=lambda g: (-gsc[g], g))[:tg]
                sfc = [sc[e] if e // gsz in kept else 0.0 for e in range(E)]
                ch = sorted(range(E), key=lambda e: (-sfc[e], e))[:k]
                den = sum(s[e] for e in ch) + 1e-20 if f.get("norm_topk_prob") else 1.0
                w = {e: s[e] / den * f.get("routed_scaling_factor", 1.0) for e in ch}
            else:
                mx = max(lg[i])
                z = sum(math.exp(v - mx) for v in lg[i])
                p = [math.exp(v - mx) / z for v in lg[i]]
                ch = sorted(range(E), key=lambda e: (-p[e], e))[:k]
                den = sum(p[e] for e in ch) if f.get("norm_topk_prob") else 1.0
                w = {e: p[e] / den for e in ch}
            for e, we in w.items():
                if f.get("gpt_oss"):
                    lim = f["gpt_oss"].get("swiglu_limit", 7.0)
                    al = f["gpt_oss"].get("swiglu_alpha", 1.702)
                    H = mm([x[i]], m["e%d_W_1" % e])[0]
                    G = mm([x[i]], m["e%d_W_3" % e])[0]
                    A = []
                    for c in range(len(H)):
                        g_ = min(H[c] + m["e%d_b_1" % e][c], lim)
                        u_ = max(-lim, min(G[c] + m["e%d_b_3" % e][c], lim))
                        A.append((u_ + 1) * g_ * sig(al * g_))
                    ye = [v + m["e%d_b_2" % e][c] for c, v in enumerate(mm([A], m["e%d_W_2" % e])[0])]
                else:
                    ye = glu([x[i]], m["e%d_W_1" % e], m["e%d_W_3" % e], m["e%d_W_2" % e])[0]
                for c in range(len(ye)):
                    out[i][c] += we * ye[c]
        if "s_W_1" in m:
            so = glu(x, m["s_W_1"], m["s_W_3"], m["s_W_2"])
            for i in range(n):
                gt = sig(mm([x[i]], m["s_gate"])[0][0]) if "s_gate" in m else 1.0
                for c in range(len(so[0])):
                    out[i][c] += gt * so[i][c]
        return out

    b = L.get("block")
    if not b:
        return attn(X)
    eps = b.get("eps", 1e-5)
    A = attn(rms(X, m["ln1"], eps))
    r1 = [[X[i][j] + A[i][j] for j in range(len(X[0]))] for i in range(len(X))]
    n2 = rms(r1, m["ln2"], eps)
    f = b["ffn"]
    y = mix(n2, f) if f.get("kind") == "moe" else glu(n2, m["f_W_1"], m["f_W_3"], m["f_W_2"])
    return [[r1[i][j] + y[i][j] for j in range(len(X[0]))] for i in range(len(X))]


def check(L, P, out, loss, name):
    loop = loop_forward(L, P)
    d = max(abs(loop[i][j] - float(out["output"][i, j])) for i in range(len(loop)) for j in range(len(loop[0])))
    if d > 1e-12:
        raise CheckFailed("%s: the loop forward differs by %g" % (name, d))
    # central differences on a few cells of every weight
    worst = 0.0
    for key, t in P.items():
        for c in (0, t.numel() // 2, t.numel() - 1):
            def at(delta):
                Q = {k: v.clone() for k, v in P.items()}
                Q[key].view(-1)[c] += delta
                with torch.no_grad():
                    return float(loss_of(L, Q)[0])
            fd = (at(1e-6) - at(-1e-6)) / 2e-6
            ag = float(t.grad.view(-1)[c]) if t.grad is not None else 0.0
            worst = max(worst, abs(fd - ag) / (1 + abs(fd)))
    if worst > 1e-6:
        raise CheckFailed("%s: finite differences disagree with autograd by %g" % (name, worst))
    print("%s: loop forward within %.1e, finite differences within %.1e" % (name, d, worst), file=sys.stderr)


# ------------------------------------------------------------------ what --dump writes

def dense_weights(E, n, topk, grad=False):
    """n × E: the chosen experts' weights (or their gradients), null (NaN) / 0 elsewhere."""
    w, idx = topk
    src = w.grad if grad else w.detach()
    full = [[0.0 if grad else None] * E for _ in range(n)]
    for i in range(n):
        for s in range(idx.shape[1]):
            full[i][int(idx[i, s])] = float(src[i, s])
    return full


def reference(path):
    L = json.load(open(path, encoding="utf-8"))
    P = {k: v.requires_grad_(True) for k, v in params_of(L).items()}
    loss, out, X = loss_of(L, P)
    loss.backward()
    check(L, P, out, loss, os.path.basename(path))
    if L.get("block", {}).get("ffn", {}).get("gpt_oss"):
        if not out.get("clamped"):
            raise CheckFailed("%s: no cell of a chosen expert is clamped: the clamp's zero gradient is not tested" % path)
        print("%s: %d cells of the chosen experts clamped (gate above, up either side)" % (os.path.basename(path),
              out["clamped"]), file=sys.stderr)
    g = {k: v.grad if v.grad is not None else torch.zeros_like(v) for k, v in P.items()}  # an expert no token chose: 0
    attn = {"concat": out["concat"].grad, "W_o": g["W_o"], "W_q": g["W_q"], "W_k": g["W_k"], "W_v": g["W_v"]}
    if "W_gate" in P:
        attn.update(gated=out["gated"].grad, gate=out["gate"].grad, W_gate=g["W_gate"])
        if "b_gate" in P:
            attn["b_gate"] = [g["b_gate"].tolist()]
    ref = {"output": out["output"], "loss": float(loss)}
    b = L.get("block")
    if not b:
        attn["X"] = X.grad
        ref["grad"] = attn
        return plain(ref)
    lay = {"attn": attn, "norm1": out["norm1"].grad, "norm2": out["norm2"].grad, "ln1_gamma": g["ln1"],
           "ln2_gamma": g["ln2"]}
    f = b["ffn"]
    if f.get("kind") == "moe":
        E, n = len(f["experts"]), X.shape[0]
        cat1 = lambda k: torch.cat([g["e%d_%s" % (e, k)] for e in range(E)], dim=1)   # noqa: E731
        lay.update(ffn_out=out["ffn_out"].grad, router_logits=out["router_logits"].grad,
                   moe_weights=dense_weights(E, n, out["topk"], grad=True), W_router=g["W_router"],
                   experts_W_1=cat1("W_1"), experts_W_3=cat1("W_3"),
                   experts_W_2=torch.cat([g["e%d_W_2" % e] for e in range(E)], dim=0))
        if "router_bias" in P:
            lay.update(router_bias=[g["router_bias"].tolist()],
                       experts_b_1=[torch.cat([g["e%d_b_1" % e] for e in range(E)]).tolist()],
                       experts_b_3=[torch.cat([g["e%d_b_3" % e] for e in range(E)]).tolist()],
                       experts_b_2=torch.stack([g["e%d_b_2" % e] for e in range(E)]))
        if "s_W_1" in P:
            lay.update(shared_W_1=g["s_W_1"], shared_W_3=g["s_W_3"], shared_W_2=g["s_W_2"])
            if "s_gate" in P:
                lay["shared_W_gate"] = g["s_gate"]
        ref["layers"] = [{"moe_weights": dense_weights(E, n, out["topk"])}]
    else:
        lay.update(ffn_W_1=g["f_W_1"], ffn_W_3=g["f_W_3"], ffn_W_2=g["f_W_2"], ffn_b_1=g["f_b_1"], ffn_b_3=g["f_b_3"],
                   ffn_b_2=g["f_b_2"])
    ref["grad"] = {"X": X.grad, "layers": [lay]}
    return plain(ref)


def train(path, steps, lr):
    """STEPS steps of p ← p − lr·∂L/∂p on every weight (not X, not the target); the losses and the trained weights."""
    L = json.load(open(path, encoding="utf-8"))
    P = params_of(L)
    losses = []
    for s in range(steps + 1):
        Q = {k: v.clone().requires_grad_(True) for k, v in P.items()}
        loss = loss_of(L, Q)[0]
        losses.append(float(loss))
        if s == steps:
            break
        loss.backward()
        P = {k: (v - lr * Q[k].grad).detach() if Q[k].grad is not None else v for k, v in P.items()}
    ref = {"train": {"steps": steps, "lr": lr, "loss": losses}}
    top = {k: P[k] for k in ("W_q", "W_k", "W_v", "W_o") if k in P}
    gate = {k: P[k] for k in ("W_gate",) if k in P}
    if not L.get("block"):
        ref.update(top)
        ref.update(gate)
    else:
        lay = dict(top, attn=gate) if gate else dict(top)
        if "W_router" in P:
            lay["W_router"] = P["W_router"]
        ref["layers"] = [lay]
    return plain(ref)


# ------------------------------------------------------------------ the lessons

def lessons(folder):
    g = torch.Generator().manual_seed(2323)
    out = {}
    # 1. The gate alone: two causal heads, W_o, the gate and its bias; the loss on the output.
    n, d, h, dk = 5, 4, 2, 2
    out["gate_backward"] = {
        "attnviz": 2, "title": {"en": "The gradients through the gate", "zh": "穿过门控的梯度"},
        "tokens": ["t0", "t1", "t2", "t3", "t4"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk),
        "W_k": rnd(g, d, h * dk), "W_v": rnd(g, d, h * dk), "W_o": rnd(g, h * dk, d), "W_gate": rnd(g, d, h * dk),
        "b_gate": rvec(g, h * dk, -1.0, 1.0), "mask": "causal", "backward": {"target": rnd(g, n, d)}}
    # 2. The gate in a pre-norm RMSNorm block with a SwiGLU FFN (the gate reads norm1), no bias.
    n, d, h, dk, ff = 4, 6, 2, 3, 5
    def block(ffn):
        return {"norm": "pre", "norm_kind": "rmsnorm", "eps": 1e-6, "ln1": {"gamma": rvec(g, d)},
                "ln2": {"gamma": rvec(g, d)}, "ffn": ffn}
    def attn(gate=False):
        a = {"heads": h, "W_q": rnd(g, d, h * dk, 0.7), "W_k": rnd(g, d, h * dk, 0.7), "W_v": rnd(g, d, h * dk, 0.7),
             "W_o": rnd(g, h * dk, d, 0.7), "mask": "causal"}
        if gate:
            a["W_gate"] = rnd(g, d, h * dk)
        return a
    les = {"attnviz": 2, "title": {"en": "The gate's gradients in a pre-norm block", "zh": "前置归一化块中门控的梯度"},
           "tokens": ["a", "b", "c", "d"], "X": rnd(g, n, d)}
    les.update(attn(True))
    les["block"] = block({"W_1": rnd(g, d, ff, 0.6), "W_3": rnd(g, d, ff, 0.6), "W_2": rnd(g, ff, d, 0.6),
                          "activation": "swiglu"})
    les["backward"] = {"target": rnd(g, n, d)}
    out["gate_block_backward"] = les
    # 3.–7. The mixtures, each in a pre-norm block (n = 5, d = 6, E = 4 experts of d_ff = 3).
    n, E, ff = 5, 4, 3
    def experts(biases=False, scale=0.6):
        xs = []
        for _ in range(E):
            x = {"W_1": rnd(g, d, ff, scale), "W_3": rnd(g, d, ff, scale), "W_2": rnd(g, ff, d, 0.6)}
            if biases:
                x.update(b_1=[rvec(g, ff, -0.5, 0.5)], b_3=[rvec(g, ff, -0.5, 0.5)], b_2=[rvec(g, d, -0.3, 0.3)])
            xs.append(x)
        return xs
    def moe_lesson(title, ffn):
        les = {"attnviz": 2, "title": title, "tokens": ["t0", "t1", "t2", "t3", "t4"], "X": rnd(g, n, d)}
        les.update(attn())
        les["block"] = block(dict({"kind": "moe", "activation": "swiglu", "router": rnd(g, d, E, 1.5)}, **ffn))
        les["backward"] = {"target": rnd(g, n, d)}
        return les
    out["mixtral_backward"] = moe_lesson(
        {"en": "Mixtral's router: softmax, top 2, renormalised; the gradients", "zh": "Mixtral 的路由：softmax、前 2、重新归一化；梯度"},
        {"top_k": 2, "norm_topk_prob": True, "experts": experts()})
    out["qwen3moe_shared_backward"] = moe_lesson(
        {"en": "Qwen3-MoE without norm_topk_prob, and Qwen2-MoE's gated shared expert; the gradients",
         "zh": "不带 norm_topk_prob 的 Qwen3-MoE 与 Qwen2-MoE 带门的共享专家；梯度"},
        {"top_k": 2, "norm_topk_prob": False, "experts": experts(),
         "shared_expert": {"W_1": rnd(g, d, 4, 0.6), "W_3": rnd(g, d, 4, 0.6), "W_2": rnd(g, 4, d, 0.6),
                           "gate": rnd(g, d, 1)}})
    out["deepseek_backward"] = moe_lesson(
        {"en": "DeepSeek-V3's sigmoid router: groups, the bias for the choice only, routed_scaling_factor; the gradients",
         "zh": "DeepSeek-V3 的 sigmoid 路由：分组、只用于选择的偏置、routed_scaling_factor；梯度"},
        {"top_k": 2, "norm_topk_prob": True, "scoring_func": "sigmoid", "n_group": 2, "topk_group": 1,
         "routed_scaling_factor": 2.5, "e_score_correction_bias": rvec(g, E, -0.3, 0.3), "experts": experts(),
         "shared_expert": {"W_1": rnd(g, d, 4, 0.6), "W_3": rnd(g, d, 4, 0.6), "W_2": rnd(g, 4, d, 0.6)}})
    out["deepseek_nonorm_backward"] = moe_lesson(
        {"en": "DeepSeek's sigmoid router without norm_topk_prob, top 1; the gradients",
         "zh": "不带 norm_topk_prob 的 DeepSeek sigmoid 路由，前 1；梯度"},
        {"top_k": 1, "norm_topk_prob": False, "scoring_func": "sigmoid", "n_group": 1, "topk_group": 1,
         "routed_scaling_factor": 1.5, "e_score_correction_bias": rvec(g, E, -0.5, 0.5), "experts": experts()})
    les = moe_lesson(
        {"en": "gpt-oss's router and clamped SwiGLU (limit 1.2: some cells clamped); the gradients",
         "zh": "gpt-oss 的路由与截断的 SwiGLU（上限 1.2：部分被截断）；梯度"},
        {"top_k": 2, "gpt_oss": {"swiglu_alpha": 1.702, "swiglu_limit": 1.2}, "experts": experts(True, 2.0),
         "router_bias": [rvec(g, E, -0.5, 0.5)]})
    out["gptoss_backward"] = les
    os.makedirs(folder, exist_ok=True)
    for name, lesson in out.items():
        with open(os.path.join(folder, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(lesson, f, ensure_ascii=False, indent=1)
            f.write("\n")
    return list(out)


TRAIN = {"gate_backward": 0.05, "gate_block_backward": 0.002, "mixtral_backward": 0.002, "gptoss_backward": 0.001,
         "deepseek_backward": 0.002}
STEPS = 5


def write(path, ref):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(ref, f, indent=1, allow_nan=False)
        f.write("\n")


def main(argv):
    if len(argv) == 3 and argv[1] == "--all":
        for name in lessons(argv[2]):
            base = os.path.join(argv[2], name)
            write(base + ".ref.json", reference(base + ".json"))
            if name in TRAIN:
                write("%s.train%d.ref.json" % (base, STEPS), train(base + ".json", STEPS, TRAIN[name]))
        return 0
    if len(argv) == 5 and argv[1] == "--train":
        json.dump(train(argv[4], int(argv[2]), float(argv[3])), sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    json.dump(reference(argv[1]), sys.stdout, indent=1, allow_nan=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except CheckFailed as e:
        print("make_reference_moeback.py: %s" % e, file=sys.stderr)
        sys.exit(1)
