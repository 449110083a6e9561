#!/usr/bin/env python3
"""tests/bench_torch.py LESSON.json [--repeat R]: the computation `attnviz --bench`
times, done by PyTorch in float64 on one thread, for `make bench` to set beside it.
tests/bench_torch.py --dgemm N [--repeat R]: the speed of one float64 N × N · N × N
product on one thread (dgemm_gflops=G ms=T), the machine's dgemm speed when torch
runs on an optimised BLAS (CPU time, as tests/bench_gemm.c measures attnviz's).

Same shapes and the same stages, each kept as its own tensor as attnviz keeps
them: X (+ PE), Q = X·W_q, K, V, per head scores, scaled, masked, weights
(softmax), weighted = weights·V_head, then concat and output = concat·W_o.

The numbers are NOT the lesson's: generated matrices are filled with
torch.randn of the same shapes instead of re-implementing attnviz's PRNG in
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
        return torch.randn(rows, cols, dtype=torch.float64)
    return torch.tensor(value, dtype=torch.float64)


def positional(rows, cols):
    pos = torch.arange(rows, dtype=torch.float64).unsqueeze(1)
    even = torch.div(torch.arange(cols), 2, rounding_mode="floor") * 2
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), even.to(torch.float64) / cols)
    return torch.where(torch.arange(cols) % 2 == 0, torch.sin(angle), torch.cos(angle))


def load(doc):
    L = {"h": int(doc.get("heads", 1))}
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
    L["d_v"] = L["W_v"].shape[1] // h
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
    fill = doc.get("mask_fill", "-inf")
    L["fill"] = float("-inf") if fill == "-inf" else float(fill)
    L["positional"] = doc.get("positional", "none") == "sinusoidal"
    return L


def compute(L):
    """Every stage, kept (the work attnviz does in attn_compute)."""
    h, d_k, d_v = L["h"], L["d_k"], L["d_v"]
    X = L["input"]
    if L["positional"]:
        X = X + positional(X.shape[0], X.shape[1])
    S = L.get("source_input", X)
    if L["positional"] and "source_input" in L:
        S = S + positional(S.shape[0], S.shape[1])
    Q = X @ L["W_q"]
    K = S @ L["W_k"]
    V = S @ L["W_v"]
    n, m = Q.shape[0], K.shape[0]
    q = Q.view(n, h, d_k).transpose(0, 1)          # h × n × d_k
    k = K.view(m, h, d_k).transpose(0, 1)          # h × m × d_k
    v = V.view(m, h, d_v).transpose(0, 1)          # h × m × d_v
    scores = q @ k.transpose(1, 2)                 # h × n × m
    scaled = scores * L["factor"]
    masked = scaled.masked_fill(L["hidden"], L["fill"])
    weights = F.softmax(masked, dim=-1)
    weights = torch.nan_to_num(weights, nan=0.0)   # rows with nothing visible
    weighted = weights @ v                         # h × n × d_v
    concat = weighted.transpose(0, 1).reshape(n, h * d_v)
    output = concat @ L["W_o"] if "W_o" in L else concat
    return output


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
    if argv[1] == "--dgemm":
        with torch.no_grad():
            dgemm(int(argv[2]), repeat)
        return
    with open(argv[1], encoding="utf-8") as f:
        L = load(json.load(f))
    times = []
    with torch.no_grad():
        for _ in range(repeat):
            t0 = time.perf_counter()
            out = compute(L)
            times.append((time.perf_counter() - t0) * 1e3)
            del out
    times.sort()
    blas = blas_in_use()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print("compute_ms=%.3f min_ms=%.3f max_ms=%.3f peak_rss_kb=%d torch=%s threads=%d blas=%s core=%s"
          % (statistics.median(times), times[0], times[-1], rss, torch.__version__, torch.get_num_threads(), blas,
             openblas_core()))


if __name__ == "__main__":
    main(sys.argv)
