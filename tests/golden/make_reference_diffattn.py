#!/usr/bin/python3
"""Independent reference numbers for issue 24 §4: differential attention
(Ye et al., "Differential Transformer", ICLR 2025), computed with PyTorch in
float64:

    make_reference_diffattn.py --all tests/golden/diffattn   # the lessons and every NAME.ref.json
    make_reference_diffattn.py LESSON.json > LESSON.ref.json
    make_reference_diffattn.py lessons/diffattn.json > tests/golden/lessons/diffattn.ref.json

Written from issue 24, lessons/FORMAT.md ("diff_attn") and the reference
code, not from the C code. It follows microsoft/unilm,
Diff-Transformer/multihead_diffattn.py (commit
768a3c873f598bb9b4d4dfb9267b099e35f8fe56), line by line:

  l. 26-27   def lambda_init_fn(depth): return 0.8 - 0.6 * math.exp(-0.3 * depth)
  l. 34, 60  depth: "current layer index" (example.py passes depth=0 for a first layer:
             0-based, the paper's l - 1)                            -> lambda_init_fn()
  l. 52-53   head_dim = embed_dim // num_heads // 2; scaling = head_dim ** -0.5
             (num_heads: the pairs; the lesson's "heads" is 2 * num_heads, its d_k head_dim)
  l. 67      subln = RMSNorm(2 * head_dim, eps=1e-5, elementwise_affine=True)
             (rms_norm.py: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps), times weight,
             a weight of ones at initialisation)                     -> rms_norm()
  l. 82-84   q.view(bsz, n, 2 * num_heads, head_dim), k likewise, v.view(bsz, n, num_heads, 2 * head_dim)
  l. 93-107  q *= scaling; attn_weights = q @ k^T; the causal mask triu(-inf, 1) when the
             lesson is causal (zeros otherwise: attn_mask given); softmax over the keys
  l. 109-111 lambda_1 = exp(sum(lambda_q1 * lambda_k1)); lambda_2 likewise;
             lambda_full = lambda_1 - lambda_2 + lambda_init
  l. 112-113 attn_weights.view(bsz, num_heads, 2, n, n); A = [:, :, 0] - lambda_full * [:, :, 1]
  l. 115-118 attn = A @ v; attn = subln(attn); attn = attn * (1 - lambda_init);
             transpose and reshape to (n, num_heads * 2 * head_dim)
  l. 120     out_proj (the lesson's W_o, x @ W_o; none: the concatenation itself)
  l. 83-84   with GQA: k.view(bsz, n, 2 * num_kv_heads, head_dim), v.view(bsz, n, num_kv_heads, 2 * head_dim)
             (the lesson's "kv_heads" is 2 * num_kv_heads)
  l. 86-87   q = apply_rotary_emb(q, *rel_pos, interleaved=True); k likewise: each of the
             2 * num_heads (2 * num_kv_heads) heads of head_dim turned at its row's position,
             pairs (2i, 2i + 1) by theta_i = pos * base^(-2i / head_dim) (the lesson's
             "rope": {"style": "interleaved"}; "half", pairs (i, i + head_dim / 2), is computed
             too, for lessons that pick it)                          -> rope()
  l. 91-92   k = repeat_kv(k, n_rep), v = repeat_kv(v, n_rep), n_rep = num_heads // num_kv_heads
             (each kv head repeated n_rep times in a row: x[:, :, None].expand(...).reshape(...))

The dump's names: Q, K, V; heads[g].weights (head g's softmax, g = 2p, 2p + 1);
concat, output; "diff_attn": lambda_1, lambda_2, lambda_init, lambda, eps, and
"pairs"[p]: a1, a2 (heads 2p's and 2p + 1's weights), weights (A1 - lambda A2),
o (A @ [V_2p | V_2p+1]), rms (sqrt(mean(o^2) + eps) per row), out (subln'd, times
1 - lambda_init).

Cross-checks (stderr): the pair outputs again by a loop over rows and columns
in plain Python floats (1e-12).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import math
import os
import sys

import torch

torch.set_default_dtype(torch.float64)


def T(x):
    return torch.tensor(x, dtype=torch.float64)


def lambda_init_fn(depth):
    return 0.8 - 0.6 * math.exp(-0.3 * depth)


def rms_norm(x, weight, eps):
    """rms_norm.py's RMSNorm.forward in float64: x * rsqrt(mean(x^2) + eps) * weight."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rope(x, base, style):
    """x: (heads, n, d) turned at positions 0..n-1 (apply_rotary_emb with cos/sin of pos * base^(-2i/d))."""
    heads, n, d = x.shape
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)       # d/2 frequencies
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]    # n x d/2
    cos, sin = torch.cos(ang), torch.sin(ang)
    out = x.clone()
    if style == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = a * sin + b * cos
    else:
        a, b = x[..., : d // 2], x[..., d // 2:]
        out[..., : d // 2] = a * cos - b * sin
        out[..., d // 2:] = a * sin + b * cos
    return out


def repeat_kv(x, n_rep):
    """(kv, n, d) -> (kv * n_rep, n, d): each head n_rep times in a row (the reference's repeat_kv)."""
    kv, n, d = x.shape
    return x[:, None].expand(kv, n_rep, n, d).reshape(kv * n_rep, n, d)


def agree(what, a, b, tol):
    gap = (a - b).abs().max().item()
    if gap > tol:
        sys.exit("make_reference_diffattn: %s differ by %g" % (what, gap))
    print("ok: %s (%.3g)" % (what, gap), file=sys.stderr)


def settings(J, heads, dk, dv):
    d = J.get("diff_attn")
    d = {} if d is True else d
    if "lambda_init" in d:
        lam_init = d["lambda_init"]
    else:
        lam_init = lambda_init_fn(d.get("depth", 0))
    vec = {k: T(d[k]) if k in d else torch.zeros(dk) for k in ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")}
    subln = T(d["subln"]) if "subln" in d else torch.ones(2 * dv)
    return lam_init, vec, subln, d.get("eps", 1e-5)


def reference(path):
    with open(path) as f:
        J = json.load(f)
    X = T(J["X"])
    n = X.shape[0]
    H2 = J.get("heads", 1)                  # the lesson's heads: 2 * num_heads
    H = H2 // 2                             # num_heads (pairs)
    Q, K, V = X @ T(J["W_q"]), X @ T(J["W_k"]), X @ T(J["W_v"])
    dk = Q.shape[1] // H2                   # head_dim
    dv = V.shape[1] // J.get("kv_heads", H2)
    lam_init, lv, subln, eps = settings(J, H2, dk, dv)
    causal = J.get("mask", "none") == "causal"
    scale = J.get("scale", True)
    scaling = dk ** -0.5 if scale is True else (1.0 if scale is False else scale)

    KV2 = J.get("kv_heads", H2)             # 2 * num_kv_heads
    n_rep = H2 // KV2                       # num_heads // num_kv_heads
    q = Q.view(n, H2, dk).transpose(0, 1)                                   # l. 82, 90
    k = K.view(n, KV2, dk).transpose(0, 1)                                  # l. 83
    v = V.view(n, KV2 // 2, 2 * dv).transpose(0, 1)                         # l. 84: a pair's 2 * head_dim
    r = J.get("rope")
    if r:                                                                   # l. 86-87
        r = {} if r is True else r
        q = rope(q, r.get("base", 10000.0), r.get("style", "half"))
        k = rope(k, r.get("base", 10000.0), r.get("style", "half"))
    k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)                         # l. 91-92
    q = q * scaling                                                         # l. 93
    w = q @ k.transpose(-1, -2)                                             # l. 94
    mask = torch.triu(torch.full((n, n), float("-inf")), 1) if causal else torch.zeros(n, n)
    w = torch.softmax(torch.nan_to_num(w) + mask, dim=-1)                   # l. 103-107
    lam1 = torch.exp(torch.sum(lv["lambda_q1"] * lv["lambda_k1"], dim=-1))  # l. 109
    lam2 = torch.exp(torch.sum(lv["lambda_q2"] * lv["lambda_k2"], dim=-1))  # l. 110
    lam = lam1 - lam2 + lam_init                                            # l. 111
    wp = w.view(H, 2, n, n)                                                 # l. 112
    A = wp[:, 0] - lam * wp[:, 1]                                           # l. 113
    o = A @ v                                                               # l. 115
    out = rms_norm(o, subln, eps) * (1 - lam_init)                          # l. 116-117
    concat = out.transpose(0, 1).reshape(n, H * 2 * dv)                     # l. 118
    output = concat @ T(J["W_o"]) if "W_o" in J else concat                 # l. 120
    rms = torch.sqrt(o.pow(2).mean(-1, keepdim=True) + eps)

    # cross-check: the pairs' outputs by plain loops
    for p in range(H):
        for i in range(n):
            row = [sum(float(A[p, i, j]) * float(v[p, j, c]) for j in range(n)) for c in range(2 * dv)]
            r = math.sqrt(sum(x * x for x in row) / (2 * dv) + eps)
            loop = T([row[c] / r * float(subln[c]) * (1 - lam_init) for c in range(2 * dv)])
            agree("pair %d row %d by loops" % (p, i), loop, out[p, i], 1e-12)

    L = lambda t: t.tolist()
    return {
        "n": n, "X": L(X), "Q": L(Q), "K": L(K), "V": L(V),
        "heads": [{"weights": L(w[g])} for g in range(H2)],
        "concat": L(concat), "output": L(output),
        "diff_attn": {
            "lambda_1": lam1.item(), "lambda_2": lam2.item(), "lambda_init": lam_init, "lambda": lam.item(), "eps": eps,
            "pairs": [{"a1": L(wp[p, 0]), "a2": L(wp[p, 1]), "weights": L(A[p]), "o": L(o[p]), "rms": L(rms[p]),
                       "out": L(out[p])} for p in range(H)],
        },
    }


# ------------------------------------------------------------------ the lessons

def rnd(g, r, c, s=1.0):
    return [[round(float(x), 6) for x in row] for row in torch.randn(r, c, generator=g) * s]


def rvec(g, c, s=1.0, mean=0.0):
    return [round(float(x), 6) for x in torch.randn(c, generator=g) * s + mean]


def lessons():
    g = torch.Generator().manual_seed(2025)
    out = {}
    # 1. One pair (two heads), no mask, depth 0 (lambda_init 0.2), the reference's subln weight of ones.
    n, d, dk = 4, 4, 2
    out["diff_one_pair"] = {
        "attnviz": 2, "title": {"en": "Differential attention: one pair of heads", "zh": "差分注意力：一对头"},
        "tokens": ["a", "b", "c", "d"], "X": rnd(g, n, d), "heads": 2, "W_q": rnd(g, d, 2 * dk),
        "W_k": rnd(g, d, 2 * dk), "W_v": rnd(g, d, 2 * dk),
        "diff_attn": {"lambda_q1": rvec(g, dk, 0.5), "lambda_k1": rvec(g, dk, 0.5), "lambda_q2": rvec(g, dk, 0.5),
                      "lambda_k2": rvec(g, dk, 0.5)}}
    # 2. Two pairs (four heads), causal, W_o, depth 3, a learned subln weight.
    n, d, h, dk = 5, 6, 4, 3
    out["diff_causal_two_pairs"] = {
        "attnviz": 2, "title": {"en": "Differential attention: two pairs, causal, depth 3",
                                "zh": "差分注意力：两对头，因果，depth 3"},
        "tokens": ["t0", "t1", "t2", "t3", "t4"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk),
        "W_k": rnd(g, d, h * dk), "W_v": rnd(g, d, h * dk), "W_o": rnd(g, h * dk, d, 0.5), "mask": "causal",
        "diff_attn": {"depth": 3, "lambda_q1": rvec(g, dk, 0.3), "lambda_k1": rvec(g, dk, 0.3),
                      "lambda_q2": rvec(g, dk, 0.3), "lambda_k2": rvec(g, dk, 0.3),
                      "subln": rvec(g, 2 * dk, 0.2, 1.0)}}
    # 3. Three pairs, causal, lambda_init given, eps 1e-6, vectors left at 0 (lambda = lambda_init).
    n, d, h, dk = 6, 4, 6, 2
    out["diff_three_pairs_init"] = {
        "attnviz": 2, "title": {"en": "Differential attention: three pairs, lambda_init given",
                                "zh": "差分注意力：三对头，给定 lambda_init"},
        "tokens": ["The", " cat", " sat", " on", " the", " mat"], "X": rnd(g, n, d), "heads": h,
        "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, h * dk), "W_v": rnd(g, d, h * dk), "W_o": rnd(g, h * dk, d, 0.5),
        "mask": "causal", "diff_attn": {"lambda_init": 0.5, "eps": 1e-6}}
    # 4. diff_attn: true, one pair, causal: every default (depth 0, vectors 0, subln 1, eps 1e-5).
    n, d, dk = 3, 3, 2
    out["diff_defaults"] = {
        "attnviz": 2, "title": {"en": "Differential attention: the defaults", "zh": "差分注意力：默认值"},
        "tokens": ["x", "y", "z"], "X": rnd(g, n, d), "heads": 2, "W_q": rnd(g, d, 2 * dk), "W_k": rnd(g, d, 2 * dk),
        "W_v": rnd(g, d, 2 * dk), "mask": "causal", "diff_attn": True}
    # 5. GQA and RoPE as the reference has them: four pairs (8 heads) over 2 kv pairs (4 kv heads,
    #    n_rep 2), "interleaved" (apply_rotary_emb(..., interleaved=True)), causal, W_o, depth 1.
    n, d, h, kv, dk = 6, 8, 8, 4, 2
    out["diff_gqa_rope"] = {
        "attnviz": 2, "title": {"en": "Differential attention: GQA and RoPE", "zh": "差分注意力：GQA 与 RoPE"},
        "tokens": ["t0", "t1", "t2", "t3", "t4", "t5"], "X": rnd(g, n, d), "heads": h, "kv_heads": kv,
        "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, kv * dk), "W_v": rnd(g, d, kv * dk), "W_o": rnd(g, h * dk, d, 0.5),
        "mask": "causal", "rope": {"base": 100, "style": "interleaved"},
        "diff_attn": {"depth": 1, "lambda_q1": rvec(g, dk, 0.3), "lambda_k1": rvec(g, dk, 0.3),
                      "lambda_q2": rvec(g, dk, 0.3), "lambda_k2": rvec(g, dk, 0.3),
                      "subln": rvec(g, 2 * dk, 0.2, 1.0)}}
    # 6. One kv pair for every pair (kv_heads 2 of 8 heads, n_rep 4), RoPE "half", d_k 4, no mask.
    n, d, h, kv, dk = 5, 6, 8, 2, 4
    out["diff_mqa_rope_half"] = {
        "attnviz": 2, "title": {"en": "Differential attention: one kv pair, RoPE half",
                                "zh": "差分注意力：一对键值头，RoPE half"},
        "tokens": ["a", "b", "c", "d", "e"], "X": rnd(g, n, d), "heads": h, "kv_heads": kv,
        "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, kv * dk), "W_v": rnd(g, d, kv * dk),
        "rope": True, "diff_attn": {"lambda_init": 0.3, "lambda_q1": rvec(g, dk, 0.3), "lambda_k1": rvec(g, dk, 0.3)}}
    return out


def dump(obj, file, **kw):
    with open(file, "w") as f:
        json.dump(obj, f, indent=1, allow_nan=False, **kw)
        f.write("\n")


def make_all(folder):
    os.makedirs(folder, exist_ok=True)
    for name, lesson in lessons().items():
        path = os.path.join(folder, name + ".json")
        dump(lesson, path, ensure_ascii=False)
        dump(reference(path), path[:-5] + ".ref.json")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--all":
        make_all(sys.argv[2])
    elif len(sys.argv) == 2:
        json.dump(reference(sys.argv[1]), sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    else:
        sys.exit(__doc__)
