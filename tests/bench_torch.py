#!/usr/bin/env python3
"""tests/bench_torch.py LESSON.json [--repeat R] [--train STEPS --lr LR]: the computation
`attnviz --bench` times, done by PyTorch in float64 on one thread, for `make bench` to set
beside it: the forward pass; with the lesson's "backward" (a target) the backward pass too
(autograd); with --train, STEPS forward and backward passes and STEPS steps of gradient
descent, then a forward pass for the loss after the last step, as attnviz trains; a block ("block", "layers": LayerNorm or RMSNorm, post- or
pre-norm, a ReLU, GELU or SwiGLU FFN, grouped-query heads, RoPE); with "decode" the tokens
one at a time against a KV cache after the full pass (attnviz computes both); with "flash"
FlashAttention's tile loop over the masked scores after the full pass.
Each time is the process's CPU time after one warm-up run that is not counted.
tests/bench_torch.py --variants LESSON.json [--repeat R]: tests/bench_torch_variants.py's (make bench (k)).
tests/bench_torch.py --dgemm N [--repeat R]: the speed of one float64 N × N · N × N
product on one thread (dgemm_gflops=G ms=T), the machine's dgemm speed when torch
runs on an optimised BLAS (CPU time, as tests/bench_gemm.c measures attnviz's).

Same shapes and the same stages, each kept as its own tensor as attnviz keeps
them: X (+ PE), Q = X·W_q, K, V, per head scores, scaled, masked, weights
(softmax), weighted = weights·V_head, then concat and output = concat·W_o; the
minimal graph: masked_fill only when the mask hides a cell, nan_to_num only
when it hides a whole row.

The numbers are NOT the lesson's: generated matrices are filled with
torch.randn (or torch.rand) of the same shapes, mean and std (low and high) instead of re-implementing attnviz's PRNG in
Python (slow, and the time of these dense kernels does not depend on the
values). Written matrices are used as given. Prints one line in the format of
`attnviz --bench`: compute_ms=MEDIAN min_ms=… max_ms=… peak_rss_kb=…, then
torch=VERSION threads=1 blas=WHICH core=KERNEL (the BLAS decides most of the
time; KERNEL is the kernel set OpenBLAS chose for this processor, "-" for
another BLAS).
"""
import ctypes
import json
import math
import resource
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def shape_of(value):
    """(rows, cols) of a written matrix or a generator."""
    if isinstance(value, dict):
        if "identity" in value:
            n = int(value["identity"])
            return n, n
        return int(value["rows"]), int(value["cols"])
    return len(value), len(value[0])


def tensor_of(value):
    if isinstance(value, dict):
        if "identity" in value:
            return torch.eye(int(value["identity"]), dtype=torch.float64)
        rows, cols = shape_of(value)
        # the generator's distribution (its numbers are attnviz's PRNG's, not these): with std 1 where the
        # lesson says 0.044, scores grow 500-fold, softmax rows underflow to subnormal numbers and every
        # product that reads them runs several times slower, which flattered attnviz
        if value.get("random") == "uniform":
            lo, hi = float(value.get("low", -1)), float(value.get("high", 1))
            return lo + (hi - lo) * torch.rand(rows, cols, dtype=torch.float64)
        return float(value.get("mean", 0)) + float(value.get("std", 1)) * torch.randn(rows, cols, dtype=torch.float64)
    return torch.tensor(value, dtype=torch.float64)


def positional(rows, cols):
    pos = torch.arange(rows, dtype=torch.float64).unsqueeze(1)
    even = torch.div(torch.arange(cols), 2, rounding_mode="floor") * 2
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), even.to(torch.float64) / cols)
    return torch.where(torch.arange(cols) % 2 == 0, torch.sin(angle), torch.cos(angle))


def params(doc, top, L):
    """One layer's weights: what the layer gives, else the top level's, each its own tensor."""
    P = {}
    for k in ("W_q", "W_k", "W_v", "W_o"):
        src = doc.get(k, top.get(k))
        if src is not None:
            P[k] = tensor_of(src)
    block = doc.get("block", top.get("block"))
    if block is not None:
        ffn = block.get("ffn")
        P["block"] = {"norm": block.get("norm", "post"), "kind": block.get("norm_kind", "layernorm"),
                      "eps": float(block.get("eps", 1e-5))}
        d = L["input"].shape[1]
        for i in (1, 2):
            P["block"]["g%d" % i] = torch.ones(d, dtype=torch.float64)
            P["block"]["b%d" % i] = torch.zeros(d, dtype=torch.float64)
        if ffn is not None:
            P["block"]["act"] = ffn.get("activation", "relu")
            for k in ("W_1", "W_2", "W_3"):
                if k in ffn:
                    P["block"][k] = tensor_of(ffn[k])
    return P


def load(doc):
    L = {"h": int(doc.get("heads", 1))}
    L["kv_heads"] = int(doc.get("kv_heads", L["h"]))
    L["rope"] = bool(doc.get("rope", False))
    L["decode"] = bool(doc.get("decode", False))
    L["flash"] = doc.get("flash")
    L["input"] = tensor_of(doc["X"])
    n = L["input"].shape[0]
    if "source" in doc:
        L["source_input"] = tensor_of(doc["source"]["X"])
    m = L["source_input"].shape[0] if "source_input" in L else n
    for k in ("W_q", "W_k", "W_v", "W_o"):
        if k in doc:
            L[k] = tensor_of(doc[k])
    if doc.get("score", "dot") != "dot":
        sys.exit("bench_torch.py: only dot-product scores are timed")
    h = L["h"]
    L["d_k"] = L["W_q"].shape[1] // h
    L["d_v"] = L["W_v"].shape[1] // L["kv_heads"]
    L["layers"] = [params(layer, doc, L) for layer in doc.get("layers", [{}])]
    L["target"] = tensor_of(doc["backward"]["target"]) if "target" in doc.get("backward", {}) else None
    scale = doc.get("scale", True)
    L["factor"] = 1.0 / math.sqrt(L["d_k"]) if scale is True else 1.0 if scale is False else float(scale)
    mask = doc.get("mask", "none")
    visible = torch.ones(n, m, dtype=torch.bool)
    if mask == "causal":
        visible = torch.tril(visible)
    elif isinstance(mask, dict):
        visible = (torch.tensor(mask["padding"], dtype=torch.float64) != 0).unsqueeze(0).expand(n, m)
    elif isinstance(mask, list):
        visible = torch.tensor(mask, dtype=torch.float64) != 0
    L["hidden"] = ~visible
    L["any_hidden"] = bool(L["hidden"].any())
    L["row_hidden"] = bool(L["hidden"].all(dim=1).any())
    fill = doc.get("mask_fill", "-inf")
    L["fill"] = float("-inf") if fill == "-inf" else float(fill)
    L["positional"] = doc.get("positional", "none") == "sinusoidal"
    return L


def rope(x):
    """RoPE on h × n × d_k (pairs of neighbouring columns turned by position)."""
    n, d = x.shape[1], x.shape[2]
    inv = 1.0 / torch.pow(torch.tensor(10000.0, dtype=torch.float64), torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.arange(n, dtype=torch.float64).unsqueeze(1) * inv
    cos, sin = torch.cos(ang), torch.sin(ang)
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


def attention(L, P, X, S, keep):
    """One attention's stages (keep: the masked scores, for the flash tiles)."""
    h, g, d_k, d_v = L["h"], L["kv_heads"], L["d_k"], L["d_v"]
    Q = X @ P["W_q"]
    K = S @ P["W_k"]
    V = S @ P["W_v"]
    n, m = Q.shape[0], K.shape[0]
    q = Q.view(n, h, d_k).transpose(0, 1)          # h × n × d_k
    k = K.view(m, g, d_k).transpose(0, 1)          # g × m × d_k
    v = V.view(m, g, d_v).transpose(0, 1)          # g × m × d_v
    if L["rope"]:
        q, k = rope(q), rope(k)
    if g != h:
        k, v = k.repeat_interleave(h // g, 0), v.repeat_interleave(h // g, 0)
    scores = q @ k.transpose(1, 2)                 # h × n × m
    scaled = scores * L["factor"]
    masked = scaled.masked_fill(L["hidden"], L["fill"]) if L["any_hidden"] else scaled
    weights = F.softmax(masked, dim=-1)
    if L["row_hidden"] and L["fill"] == float("-inf"):
        weights = torch.nan_to_num(weights, nan=0.0)   # rows with nothing visible
    weighted = weights @ v                         # h × n × d_v
    concat = weighted.transpose(0, 1).reshape(n, h * d_v)
    keep.append((masked, v))
    return concat @ P["W_o"] if "W_o" in P else concat


def norm(B, x, i):
    if B["kind"] == "rmsnorm":
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + B["eps"]) * B["g%d" % i]
    return F.layer_norm(x, (x.shape[1],), B["g%d" % i], B["b%d" % i], B["eps"])


def ffn(B, x):
    if "W_1" not in B:
        return None
    hidden = x @ B["W_1"]
    if B["act"] == "swiglu":
        act = F.silu(hidden) * (x @ B["W_3"])
    elif B["act"] == "gelu":
        act = F.gelu(hidden)
    else:
        act = F.relu(hidden)
    return act @ B["W_2"]


def layer(L, P, x, keep):
    """One layer: attention alone, or the block around it (lesson FORMAT.md's order)."""
    B = P.get("block")
    if B is None:
        return attention(L, P, x, x, keep)
    if B["norm"] == "pre":
        r1 = x + attention(L, P, norm(B, x, 1), norm(B, x, 1), keep)
        f = ffn(B, norm(B, r1, 2))
        return r1 if f is None else r1 + f
    if B["norm"] == "post":
        n1 = norm(B, x + attention(L, P, x, x, keep), 1)
        f = ffn(B, n1)
        return n1 if f is None else norm(B, n1 + f, 2)
    r1 = x + attention(L, P, x, x, keep)
    f = ffn(B, r1)
    return r1 if f is None else r1 + f


def forward(L, keep):
    X = L["input"]
    if L["positional"]:
        X = X + positional(X.shape[0], X.shape[1])
    if "source_input" in L:
        S = L["source_input"]
        if L["positional"]:
            S = S + positional(S.shape[0], S.shape[1])
        return attention(L, L["layers"][0], X, S, keep)
    for P in L["layers"]:
        X = layer(L, P, X, keep)
    return X


def decode(L):
    """The tokens one at a time against a KV cache (the first layer, as attnviz's stage "decode")."""
    P, h, g, d_k, d_v = L["layers"][0], L["h"], L["kv_heads"], L["d_k"], L["d_v"]
    X, B = L["input"], P.get("block")
    n = X.shape[0]
    cache_k = torch.empty(n, g, d_k, dtype=torch.float64)
    cache_v = torch.empty(n, g, d_v, dtype=torch.float64)
    rows = []
    for t in range(n):
        x = X[t:t + 1]
        a = norm(B, x, 1) if B is not None and B["norm"] == "pre" else x
        q = (a @ P["W_q"]).view(h, d_k)
        cache_k[t] = (a @ P["W_k"]).view(g, d_k)
        cache_v[t] = (a @ P["W_v"]).view(g, d_v)
        kc, vc = cache_k[:t + 1], cache_v[:t + 1]
        if g != h:
            kc, vc = kc.repeat_interleave(h // g, 1), vc.repeat_interleave(h // g, 1)
        w = F.softmax(torch.einsum("hd,thd->ht", q, kc) * L["factor"], dim=-1)
        out = torch.einsum("ht,thd->hd", w, vc).reshape(1, h * d_v)
        out = out @ P["W_o"] if "W_o" in P else out
        if B is not None:
            out = layer_rest(B, x, out)
        rows.append(out)
    return rows


def layer_rest(B, x, attn_out):
    """The block after the attention, on one row."""
    if B["norm"] == "pre":
        r1 = x + attn_out
        f = ffn(B, norm(B, r1, 2))
        return r1 if f is None else r1 + f
    n1 = norm(B, x + attn_out, 1)
    f = ffn(B, n1)
    return n1 if f is None else norm(B, n1 + f, 2)


def flash(L, masked, v):
    """FlashAttention's tile loop over the masked scores: running max, sum and output kept after each tile."""
    bq, bk = int(L["flash"]["block_q"]), int(L["flash"]["block_k"])
    h, n, m = masked.shape
    causal_skip = L["fill"] == float("-inf")
    kept = []
    for i0 in range(0, n, bq):
        i1 = min(n, i0 + bq)
        mx = torch.full((h, i1 - i0), float("-inf"), dtype=torch.float64)
        l = torch.zeros(h, i1 - i0, dtype=torch.float64)
        O = torch.zeros(h, i1 - i0, v.shape[2], dtype=torch.float64)
        for k0 in range(0, m, bk):
            k1 = min(m, k0 + bk)
            if causal_skip and bool(L["hidden"][i0:i1, k0:k1].all()):
                continue
            S = masked[:, i0:i1, k0:k1]
            m2 = torch.maximum(mx, S.amax(-1))
            safe = torch.where(m2 == float("-inf"), torch.zeros_like(m2), m2)
            p = torch.exp(S - safe.unsqueeze(-1))
            alpha = torch.exp(mx - safe)
            l = alpha * l + p.sum(-1)
            O = alpha.unsqueeze(-1) * O + p @ v[:, k0:k1]
            mx = m2
            kept.append((mx, l, O))
        kept.append(torch.where(l.unsqueeze(-1) > 0, O / l.unsqueeze(-1), torch.zeros_like(O)))
    return kept


def parameters(L):
    ps = []
    for P in L["layers"]:
        ps += [t for k, t in P.items() if k != "block"]
        if "block" in P:
            ps += [t for t in P["block"].values() if isinstance(t, torch.Tensor)]
    return ps


def compute(L, train=None):
    """What attnviz --bench times for this lesson (train: (steps, lr))."""
    if L["target"] is None:
        with torch.no_grad():
            keep = []
            out = forward(L, keep)
            if L["decode"]:
                decode(L)
            if L["flash"]:
                for masked, v in keep[:1]:
                    flash(L, masked, v)
            return out
    ps = parameters(L)
    steps, lr = train if train is not None else (0, 0.0)
    for s in range(steps + 1):
        for p in ps:
            p.requires_grad_(True)
        out = forward(L, [])
        loss = 0.5 * ((out - L["target"]) ** 2).sum()
        if s == steps and steps > 0:  # the loss after the last step, as attnviz takes it: no gradients
            break
        loss.backward()
        if s < steps:
            with torch.no_grad():
                for p in ps:
                    p -= lr * p.grad
        for p in ps:
            p.grad = None
    return out


def loaded_libraries():
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            return sorted({line.split()[-1] for line in f if ".so" in line})
    except OSError:
        return []


def blas_in_use():
    """Which BLAS library torch's float64 matmul runs on: "mkl", "openblas", "reference", …

    Debian's python3-torch uses the system libblas.so.3, which is the slow
    netlib reference BLAS unless OpenBLAS, BLIS or MKL is installed; pip
    wheels bring MKL. The timing depends on it far more than on anything else."""
    config = torch.__config__.show()
    if "BLAS_INFO=mkl" in config:
        return "mkl"
    libs = loaded_libraries()
    if not libs:
        return "unknown"
    for lib in libs:
        low = lib.lower()
        if "openblas" in low:
            return "openblas"
        if "blis" in low:
            return "blis"
        if "mkl" in low:
            return "mkl"
    for lib in libs:
        if lib.endswith("/blas/libblas.so.3") or "libblas.so" in lib:
            return "reference"
    return "unknown"


def openblas_core():
    """The kernel set OpenBLAS chose (openblas_get_corename: Haswell, SkylakeX, Zen, …), or "-"."""
    for lib in loaded_libraries():
        if "openblas" not in lib.lower():
            continue
        try:
            ob = ctypes.CDLL(lib)
            ob.openblas_get_corename.restype = ctypes.c_char_p
            return ob.openblas_get_corename().decode()
        except (OSError, AttributeError):
            continue
    return "-"


def dgemm(n, repeat):
    """Median time of one n × n · n × n float64 product, after one warm-up; the
    process's CPU time (one thread), so other programs on a busy machine do not count."""
    a = torch.randn(n, n, dtype=torch.float64)
    b = torch.randn(n, n, dtype=torch.float64)
    c = a @ b
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        torch.matmul(a, b, out=c)
        times.append((time.process_time() - t0) * 1e3)
    ms = statistics.median(times)
    print("dgemm_gflops=%.1f ms=%.2f best_gflops=%.1f blas=%s core=%s"
          % (2.0 * n ** 3 / ms / 1e6, ms, 2.0 * n ** 3 / min(times) / 1e6, blas_in_use(), openblas_core()))


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: bench_torch.py LESSON.json [--repeat R] | --dgemm N [--repeat R]")
    repeat = 5
    if "--repeat" in argv:
        repeat = int(argv[argv.index("--repeat") + 1])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    if argv[1] == "--variants":  # make bench (k): the lessons of tests/bench_variants.sh
        import bench_torch_variants
        bench_torch_variants.main(argv[1:])
        return
    if argv[1] == "--dgemm":
        with torch.no_grad():
            dgemm(int(argv[2]), repeat)
        return
    train = None
    if "--train" in argv:
        train = (int(argv[argv.index("--train") + 1]), float(argv[argv.index("--lr") + 1]))
    with open(argv[1], encoding="utf-8") as f:
        L = load(json.load(f))
    times = []
    compute(L, train)  # the warm-up, not counted
    for _ in range(repeat):
        t0 = time.process_time()
        out = compute(L, train)
        times.append((time.process_time() - t0) * 1e3)
        del out
    times.sort()
    blas = blas_in_use()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print("compute_ms=%.3f min_ms=%.3f max_ms=%.3f peak_rss_kb=%d torch=%s threads=%d blas=%s core=%s"
          % (statistics.median(times), times[0], times[-1], rss, torch.__version__, torch.get_num_threads(), blas,
             openblas_core()))


if __name__ == "__main__":
    main(sys.argv)
