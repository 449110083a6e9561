#!/usr/bin/python3
"""Independent reference numbers for issue 24 §3: linear attention
(Katharopoulos et al. 2020, "Transformers are RNNs") and Gated DeltaNet
(Qwen3-Next), computed with PyTorch in float64:

    make_reference_linear.py --all tests/golden/linear   # the lessons and every NAME.ref.json
    make_reference_linear.py LESSON.json > LESSON.ref.json
    make_reference_linear.py lessons/linear.json > tests/golden/lessons/linear.ref.json

Written from issue 24, lessons/FORMAT.md ("linear_attention") and the
reference code below, not from the C code. The rest of a layer (the
projections, QK-norm, RoPE, repeat_kv, softmax attention, the block) is
make_reference_v4.py's, imported and unchanged; this script adds linear
attention on the q and k the scores read (after QK-norm and RoPE) and the
key/value head's v. The lines followed (idiap/fast-transformers, commit
2aa1368a85d689fd606268f7e48906342fc084c7):

  fast_transformers/attention/linear_attention.py
        def elu_feature_map(x): return torch.nn.functional.elu(x) + 1
        Q = self.feature_map(queries); K = self.feature_map(keys)
        KV = torch.einsum("nshd,nshm->nhmd", K, values)
        Z = 1/(torch.einsum("nlhd,nhd->nlh", Q, K.sum(dim=1))+self.eps)
        V = torch.einsum("nlhd,nhmd,nlh->nlhm", Q, KV, Z)          -> the state form, not causal
  fast_transformers/attention/causal_linear_attention.py
        Z = 1/(torch.einsum("nlhi,nlhi->nlh", Q, K.cumsum(1)) + self.eps)
        V = causal_linear(Q, K, values); return V * Z[:, :, :, None]
    (causal_dot_product: out_i = sum_{j <= i} (q_i . k_j) v_j, a C/CUDA kernel;
     here the running state S_i = cumsum_j phi(k_j) v_j^T read by phi(q_i)) -> the state form, causal
  eps: LinearAttention(feature_map=None, eps=1e-6), the lesson's "eps".

transformers, src/transformers/models/qwen3_next/modeling_qwen3_next.py
(the file at commit 01cdc6081c7500f9e50c98b1b943c90ecb665db3):
  l2norm: x * torch.rsqrt((x * x).sum(dim, keepdim=True) + 1e-6)           -> l2norm()
  torch_recurrent_gated_delta_rule (use_qk_l2norm_in_kernel=True):
        query = query * (1 / sqrt(d_k)) after the l2norm; per token:
        S = S * exp(g_t); kv_mem = (S * k_t[..., None]).sum(-2)
        delta = (v_t - kv_mem) * beta_t; S = S + k_t[..., None] * delta[..., None, :]
        out_t = (S * q_t[..., None]).sum(-2)                               -> gdn_recurrent()
  torch_chunk_gated_delta_rule (chunk_size; padded with zeros to whole chunks):
        g.cumsum within a chunk, decay_mask = exp(G_i - G_j) (lower), attn =
        -((k_beta @ k^T) * decay_mask) strictly lower, the row-by-row forward
        substitution, + I; value = attn @ v_beta, k_cumdecay = attn @ (k_beta *
        exp(G)); per chunk v_new = value - k_cumdecay @ S, out = (q * exp(G)) @ S
        + (q @ k^T * decay_mask, lower) @ v_new, S = S * exp(G_last) +
        (k * exp(G_last - G))^T @ v_new                                       -> gdn_chunked()
  Qwen3NextGatedDeltaNet.forward: beta = b.sigmoid(); g = -self.A_log.float().exp()
        * F.softplus(a.float() + self.dt_bias), a and b from in_proj_ba      -> gated_deltanet()
    (here a = x W_a, b = x W_b per head, x the rows the projections read, and q, k,
     v the lesson's projections; the conv1d, the gated RMSNorm and out_proj are
     not in attnviz yet, so not here either)

The dump's names: phi_q, phi_k; the n x n form lin_scores = phi(Q) phi(K)^T
(lower triangle when causal), lin_z = its row sums + eps, lin_out =
lin_scores V / lin_z; the state form lin_state = phi(K)^T V, lin_ksum =
sum_j phi(k_j) (both after the last token), lin_out_state (the einsums
above); gdn_q, gdn_k, gdn_beta, gdn_g, gdn_recall (S^T k after the decay),
gdn_delta, gdn_out (recurrent), gdn_out_chunk (chunked), gdn_state (after the
last token). Beside each layer's attention, "linear_attention" and
"gated_deltanet" with max_gap 0: attnviz's largest difference between each
one's two forms, checked within 1e-12.
Cross-checks (stderr): the two forms agree to 1e-12; the state form
again as a Python loop over the tokens (S <- S + phi(k) v^T); Gated
DeltaNet's chunked output and last state against the recurrent ones (1e-12).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_v4 as v4  # noqa: E402  (its layer, norms, RoPE and softmax attention, unchanged)
from lessonfiles import lesson_json, write_lessons, write_references  # noqa: E402

torch.set_default_dtype(torch.float64)
T, agree = v4.T, v4.agree


def elu_feature_map(x):
    return F.elu(x) + 1


def linear_attention(out, p, s, checks):
    """Linear attention per head beside v4's softmax attention, into out["heads"]."""
    lin = s["linear"]
    q = out.get("Q_rot", out.get("Q_norm", out["Q"]))
    k = out.get("K_rot", out.get("K_norm", out["K"]))
    v = out["V"]
    n, m = q.shape[0], k.shape[0]
    h, g = p["heads"], p["kv_heads"]
    dk = q.shape[1] // h
    dv = v.shape[1] // g
    Q = elu_feature_map(q.view(n, h, dk))                                     # [l, h, d]
    K = elu_feature_map(k.view(m, g, dk)).repeat_interleave(h // g, dim=1)    # [s, h, d]: query head i reads i // (h/g)
    V = v.view(m, g, dv).repeat_interleave(h // g, dim=1)                      # [s, h, m]
    eps = lin["eps"]
    # the n x n form
    A = torch.einsum("lhd,shd->hls", Q, K)
    if lin["causal"]:
        A = A * torch.ones(n, m, dtype=torch.bool).tril()
    z = A.sum(-1) + eps                                                       # [h, l]
    lin_out = torch.einsum("hls,shm->hlm", A, V) / z[..., None]
    # the state form (fast-transformers' einsums)
    KV = torch.einsum("shd,shm->hmd", K, V)                                   # KV[h, m, d] = phi(K)^T V, transposed
    if not lin["causal"]:
        Z = 1 / (torch.einsum("lhd,hd->lh", Q, K.sum(dim=0)) + eps)
        state_out = torch.einsum("lhd,hmd,lh->lhm", Q, KV, Z)
    else:
        Z = 1 / (torch.einsum("lhi,lhi->lh", Q, K.cumsum(0)) + eps)
        S = torch.einsum("shd,shm->shdm", K, V).cumsum(0)                     # S_i = sum_{j <= i} phi(k_j) v_j^T
        state_out = torch.einsum("lhd,lhdm->lhm", Q, S) * Z[:, :, None]
    state_out = state_out.transpose(0, 1)                                     # [h, l, m]
    if checks is not None:
        agree("the n x n form = the state form", lin_out, state_out, 1e-12)
        loop = torch.zeros(h, n, dv)
        for hh in range(h):
            St, ks = torch.zeros(dk, dv), torch.zeros(dk)
            if not lin["causal"]:
                for j in range(m):
                    St, ks = St + torch.outer(K[j, hh], V[j, hh]), ks + K[j, hh]
            for i in range(n):
                if lin["causal"]:
                    St, ks = St + torch.outer(K[i, hh], V[i, hh]), ks + K[i, hh]
                loop[hh, i] = Q[i, hh] @ St / (Q[i, hh] @ ks + eps)
        agree("the state form token by token", loop, state_out, 1e-12)
        checks.add("linear")
    for i in range(h):
        out["heads"][i].update(phi_q=Q[:, i], phi_k=K[:, i], lin_scores=A[i], lin_z=z[i][:, None], lin_out=lin_out[i],
                               lin_state=KV[i].T, lin_ksum=K[:, i].sum(0)[None, :], lin_out_state=state_out[i])


def l2norm(x, eps=1e-6):
    """modeling_qwen3_next.py, l2norm: x * rsqrt(sum(x * x) + eps) over the last axis."""
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + eps)


def gdn_recurrent(q, k, v, g, beta):
    """torch_recurrent_gated_delta_rule for one head (q already normalised and scaled): S decays by e^g, the
    delta rule writes beta (v - S^T k) at k, the output is S^T q; also each token's recall and correction."""
    n, dk = k.shape
    S = torch.zeros(dk, v.shape[1])
    out, recall, delta = torch.zeros_like(v), torch.zeros_like(v), torch.zeros_like(v)
    for t in range(n):
        S = S * torch.exp(g[t])
        recall[t] = (S * k[t].unsqueeze(-1)).sum(0)                 # kv_mem
        delta[t] = (v[t] - recall[t]) * beta[t]
        S = S + k[t].unsqueeze(-1) * delta[t].unsqueeze(0)
        out[t] = (S * q[t].unsqueeze(-1)).sum(0)
    return out, recall, delta, S


def gdn_chunked(q, k, v, g, beta, C):
    """torch_chunk_gated_delta_rule for one head, chunk_size C (the sequence padded with zeros to whole chunks)."""
    n, dk = k.shape
    dv = v.shape[1]
    pad = (C - n % C) % C
    q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
    g, beta = F.pad(g, (0, pad)), F.pad(beta, (0, pad))
    nc = (n + pad) // C
    q, k, v = (x.reshape(nc, C, -1) for x in (q, k, v))
    kb, vb = k * beta.reshape(nc, C, 1), v * beta.reshape(nc, C, 1)
    G = g.reshape(nc, C).cumsum(-1)
    decay = (G.unsqueeze(-1) - G.unsqueeze(-2)).tril().exp().tril()
    upper = torch.triu(torch.ones(C, C, dtype=torch.bool), diagonal=0)
    A = -((kb @ k.transpose(-1, -2)) * decay).masked_fill(upper, 0)
    for i in range(1, C):                                            # the reference's forward substitution
        row, sub = A[:, i, :i].clone(), A[:, :i, :i].clone()
        A[:, i, :i] = row + (row.unsqueeze(-1) * sub).sum(-2)
    A = A + torch.eye(C)
    U = A @ vb
    W = A @ (kb * G.exp().unsqueeze(-1))
    S = torch.zeros(dk, dv)
    out = torch.zeros(nc, C, dv)
    strict = torch.triu(torch.ones(C, C, dtype=torch.bool), diagonal=1)
    for c in range(nc):
        qk = (q[c] @ k[c].T * decay[c]).masked_fill(strict, 0)
        vnew = U[c] - W[c] @ S
        out[c] = (q[c] * G[c, :, None].exp()) @ S + qk @ vnew
        S = S * G[c, -1].exp() + (k[c] * (G[c, -1, None] - G[c]).exp()[:, None]).T @ vnew
    return out.reshape(-1, dv)[:n], S


def gated_deltanet(x, out, p, s, checks):
    """Qwen3NextGatedDeltaNet.forward's core beside v4's softmax attention, into out["heads"]."""
    gd = p["gdn"]
    q, k, v = out["Q"], out["K"], out["V"]
    n = q.shape[0]
    h, g = p["heads"], p["kv_heads"]
    dk, dv = q.shape[1] // h, v.shape[1] // g
    qh = l2norm(q.view(n, h, dk)) * (1 / dk ** 0.5)                 # l2norm in the kernel, then query * scale
    kh = l2norm(k.view(n, g, dk)).repeat_interleave(h // g, dim=1)
    vh = v.view(n, g, dv).repeat_interleave(h // g, dim=1)
    beta = torch.sigmoid(x @ T(gd["W_b"]))                             # beta = b.sigmoid()
    gg = -torch.exp(T(gd["A_log"]).reshape(-1)) * F.softplus(x @ T(gd["W_a"]) + T(gd["dt_bias"]).reshape(-1))
    for i in range(h):
        o, recall, delta, S = gdn_recurrent(qh[:, i], kh[:, i], vh[:, i], gg[:, i], beta[:, i])
        oc, Sc = gdn_chunked(qh[:, i], kh[:, i], vh[:, i], gg[:, i], beta[:, i], gd["chunk_size"])
        if checks is not None:
            agree("Gated DeltaNet: chunked = recurrent", oc, o, 1e-12)
            agree("Gated DeltaNet: the last states", Sc, S, 1e-12)
            checks.add("gated_deltanet")
        out["heads"][i].update(gdn_q=qh[:, i], gdn_k=kh[:, i], gdn_beta=beta[:, i:i + 1], gdn_g=gg[:, i:i + 1],
                               gdn_recall=recall, gdn_delta=delta, gdn_out=o, gdn_out_chunk=oc, gdn_state=S)


_v4_attention, _v4_read_lesson = v4.attention, v4.read_lesson


def attention(x, p, s, out, checks):
    o = _v4_attention(x, p, s, out, checks)
    if s["linear"]:
        linear_attention(out, p, s, checks)
    if p["gdn"]:
        gated_deltanet(x, out, p, s, checks)
    return o


def read_lesson(path, override=None):
    L, s, params = _v4_read_lesson(path, override)
    J = lesson_json(path, override)
    la = J.get("linear_attention", False)
    if la is True:
        la = {}
    s["linear"] = None if la is False else {"causal": bool(la.get("causal", False)), "eps": la.get("eps", 1e-6)}
    for p, lay in zip(params, J.get("layers") or [{}]):   # each layer its own "gated_deltanet", else the top level's
        gd = dict(J, **lay).get("gated_deltanet") or None
        p["gdn"] = None if gd is None else dict(gd, chunk_size=gd.get("chunk_size", min(2, len(J["tokens"]))))
    return L, s, params


v4.attention, v4.read_lesson = attention, read_lesson   # v4.layer() and v4.reference() now call these
_v4_reference = v4.reference


def reference(path, override=None):
    """v4's reference with "linear_attention" beside each layer's attention: its settings and max_gap 0 (the
    largest |lin_out - lin_out_state| attnviz finds must be 0 within the comparison's 1e-12)."""
    ref = _v4_reference(path, override)
    _, s, params = read_lesson(path, override)
    for at, p in zip([lay["attn"] for lay in ref["layers"]] if ref.get("layers") else [ref], params):
        if s["linear"]:
            at["linear_attention"] = {"feature_map": "elu+1", "causal": s["linear"]["causal"], "eps": s["linear"]["eps"],
                                      "max_gap": 0.0}
        if p["gdn"]:
            at["gated_deltanet"] = {"chunk_size": p["gdn"]["chunk_size"], "max_gap": 0.0}
    return ref


v4.reference = reference


# ------------------------------------------------------------------ the lessons

def lessons():
    g = torch.Generator().manual_seed(24)
    rnd, rvec = v4.rnd, v4.rvec
    out = {}
    # 1. One head, no mask, not causal: the plain form with fast-transformers' eps.
    n, d, dk = 4, 4, 3
    out["linear_plain"] = {
        "attnviz": 2, "title": {"en": "Linear attention, one head, not causal", "zh": "线性注意力：一个头，非因果"},
        "tokens": ["a", "b", "c", "d"], "X": rnd(g, n, d), "W_q": rnd(g, d, dk), "W_k": rnd(g, d, dk),
        "W_v": rnd(g, d, dk), "linear_attention": True}
    # 2. Causal, two heads, W_o, eps 0: the running state token by token.
    n, d, h, dk = 5, 4, 2, 2
    out["linear_causal_heads"] = {
        "attnviz": 2, "title": {"en": "Causal linear attention, two heads", "zh": "因果线性注意力：两个头"},
        "tokens": ["t0", "t1", "t2", "t3", "t4"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk),
        "W_k": rnd(g, d, h * dk), "W_v": rnd(g, d, h * dk), "W_o": rnd(g, h * dk, d), "mask": "causal",
        "linear_attention": {"feature_map": "elu+1", "causal": True, "eps": 0}}
    # 3. RoPE, QK-norm, 4 heads on 2 kv heads, two pre-norm RMSNorm/SwiGLU layers: φ of the turned q and k.
    n, d, h, kv, dk, ff = 5, 8, 4, 2, 4, 12
    def layer():
        return {"heads": h, "kv_heads": kv, "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, kv * dk),
                "W_v": rnd(g, d, kv * dk), "W_o": rnd(g, h * dk, d, 0.5),
                "block": {"norm": "pre", "norm_kind": "rmsnorm", "eps": 1e-6,
                          "ln1": {"gamma": rvec(g, d)}, "ln2": {"gamma": rvec(g, d)},
                          "ffn": {"W_1": rnd(g, d, ff, 0.5), "W_3": rnd(g, d, ff, 0.5), "W_2": rnd(g, ff, d, 0.5),
                                  "activation": "swiglu"}}}
    l0, l1 = layer(), layer()
    top = {"attnviz": 2, "title": {"en": "Linear attention beside softmax: RoPE, QK-norm, GQA, two layers",
                                   "zh": "线性注意力与 softmax 并列：RoPE、QK-norm、GQA、两层"},
           "tokens": ["The", " cat", " sat", " on", " the"], "X": rnd(g, n, d), "mask": "causal", "rope": True,
           "qk_norm": {"q": rvec(g, dk), "k": rvec(g, dk)},
           "linear_attention": {"feature_map": "elu+1", "causal": True}}
    top.update(l0)
    top["layers"] = [{}, l1]
    out["linear_rope_gqa_layers"] = top
    # 4. Gated DeltaNet alone: one head, 5 tokens, chunks of 2 (the last one short).
    n, d, dk = 5, 4, 3
    out["deltanet_plain"] = {
        "attnviz": 2, "title": {"en": "Gated DeltaNet, one head, chunks of 2", "zh": "Gated DeltaNet：一个头，每块 2 个词"},
        "tokens": ["t0", "t1", "t2", "t3", "t4"], "X": rnd(g, n, d), "W_q": rnd(g, d, dk), "W_k": rnd(g, d, dk),
        "W_v": rnd(g, d, dk), "mask": "causal",
        "gated_deltanet": {"W_a": rnd(g, d, 1), "W_b": rnd(g, d, 1), "A_log": rvec(g, 1, -1.0, 1.0),
                           "dt_bias": rvec(g, 1, -0.5, 1.0), "chunk_size": 2}}
    # 5. Two heads on one key/value head, W_o, chunks of 3, with linear attention beside it.
    n, d, h, kv, dk = 7, 4, 2, 1, 2
    out["deltanet_gqa_chunk3"] = {
        "attnviz": 2, "title": {"en": "Gated DeltaNet, two heads on one key/value head, chunks of 3",
                                "zh": "Gated DeltaNet：两个头共用一个键/值头，每块 3 个词"},
        "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d), "heads": h, "kv_heads": kv,
        "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, kv * dk), "W_v": rnd(g, d, kv * dk), "W_o": rnd(g, h * dk, d),
        "mask": "causal", "linear_attention": {"feature_map": "elu+1", "causal": True},
        "gated_deltanet": {"W_a": rnd(g, d, h), "W_b": rnd(g, d, h), "A_log": rvec(g, h, -1.0, 1.0),
                           "dt_bias": rvec(g, h, -0.5, 1.0), "chunk_size": 3}}
    # 6. In a pre-norm RMSNorm/SwiGLU block, two layers (each its own weights): x is N1(x), as in Qwen3-Next.
    n, d, h, dk, ff = 6, 8, 2, 4, 12
    def gdn_layer():
        lay = layer()
        lay.update(kv_heads=h, W_k=rnd(g, d, h * dk), W_v=rnd(g, d, h * dk),
                   gated_deltanet={"W_a": rnd(g, d, h), "W_b": rnd(g, d, h), "A_log": rvec(g, h, -1.0, 1.0),
                                   "dt_bias": rvec(g, h, -0.5, 1.0), "chunk_size": 4})
        lay["heads"] = h
        lay["W_q"], lay["W_o"] = rnd(g, d, h * dk), rnd(g, h * dk, d, 0.5)
        return lay
    l0, l1 = gdn_layer(), gdn_layer()
    top = {"attnviz": 2, "title": {"en": "Gated DeltaNet in two pre-norm layers", "zh": "两层前置归一化中的 Gated DeltaNet"},
           "tokens": ["The", " cat", " sat", " on", " the", " mat"], "X": rnd(g, n, d), "mask": "causal"}
    top.update(l0)
    top["layers"] = [{}, {"gated_deltanet": l1["gated_deltanet"], "W_q": l1["W_q"], "W_k": l1["W_k"],
                          "W_v": l1["W_v"], "W_o": l1["W_o"], "block": l1["block"]}]
    out["deltanet_block_layers"] = top
    return out


def make_all(folder):
    """The lessons, then each one's reference beside it (NAME.ref.json)."""
    write_lessons(folder, lessons())
    write_references(folder, reference)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--all":
        make_all(sys.argv[2])
        sys.exit(0)
    sys.exit(v4.main(sys.argv))
