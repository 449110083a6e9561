#!/usr/bin/python3
"""Independent reference numbers for issue 24 §3: linear attention
(Katharopoulos et al. 2020, "Transformers are RNNs"), computed with PyTorch
in float64:

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

The dump's names: phi_q, phi_k; the n x n form lin_scores = phi(Q) phi(K)^T
(lower triangle when causal), lin_z = its row sums + eps, lin_out =
lin_scores V / lin_z; the state form lin_state = phi(K)^T V, lin_ksum =
sum_j phi(k_j) (both after the last token), lin_out_state (the einsums
above); beside each layer's attention, "linear_attention" with max_gap 0:
attnviz's largest difference between its two forms, checked within 1e-12.
Cross-checks (stderr): the two forms agree to 1e-12; the state form
again as a Python loop over the tokens (S <- S + phi(k) v^T).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_v4 as v4  # noqa: E402  (its layer, norms, RoPE and softmax attention, unchanged)

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


_v4_attention, _v4_read_lesson = v4.attention, v4.read_lesson


def attention(x, p, s, out, checks):
    o = _v4_attention(x, p, s, out, checks)
    if s["linear"]:
        linear_attention(out, p, s, checks)
    return o


def read_lesson(path, override=None):
    L, s, params = _v4_read_lesson(path, override)
    with open(path) as f:
        J = json.load(f)
    if override is not None:
        J.update({k: val for k, val in override.items() if k != "label"})
    la = J.get("linear_attention", False)
    if la is True:
        la = {}
    s["linear"] = None if la is False else {"causal": bool(la.get("causal", False)), "eps": la.get("eps", 1e-6)}
    return L, s, params


v4.attention, v4.read_lesson = attention, read_lesson   # v4.layer() and v4.reference() now call these
_v4_reference = v4.reference


def reference(path, override=None):
    """v4's reference with "linear_attention" beside each layer's attention: its settings and max_gap 0 (the
    largest |lin_out - lin_out_state| attnviz finds must be 0 within the comparison's 1e-12)."""
    ref = _v4_reference(path, override)
    _, s, _ = read_lesson(path, override)
    if s["linear"]:
        info = {"feature_map": "elu+1", "causal": s["linear"]["causal"], "eps": s["linear"]["eps"], "max_gap": 0.0}
        for at in ([lay["attn"] for lay in ref["layers"]] if ref.get("layers") else [ref]):
            at["linear_attention"] = dict(info)
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
    return out


def make_all(folder):
    """The lessons, then each one's reference beside it (NAME.ref.json)."""
    os.makedirs(folder, exist_ok=True)
    for name, lesson in lessons().items():
        path = os.path.join(folder, name + ".json")
        for file, obj, kw in ((path, lesson, {"ensure_ascii": False}), (path[:-5] + ".ref.json", None, {})):
            obj = obj if obj is not None else reference(path)
            with open(file, "w") as f:
                json.dump(obj, f, indent=1, allow_nan=False, **kw)
                f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--all":
        make_all(sys.argv[2])
        sys.exit(0)
    sys.exit(v4.main(sys.argv))
