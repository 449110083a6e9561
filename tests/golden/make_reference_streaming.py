#!/usr/bin/python3
"""Independent reference numbers for issue 23 §4's StreamingLLM cache,
computed with PyTorch in float64, one decoding step at a time:

    make_reference_streaming.py --all tests/golden/streaming   # the lessons and every NAME.ref.json
    make_reference_streaming.py LESSON.json > LESSON.ref.json
    make_reference_streaming.py lessons/streaming.json > tests/golden/lessons/streaming-decode.ref.json

Written from the paper (Xiao et al., "Efficient Streaming Language Models
with Attention Sinks", ICLR 2024) and its repository, not from the C code.
The cache follows mit-han-lab/streaming-llm, streaming_llm/kv_cache.py
(commit d729b3ffc947caca63fc0f7644b7468ca2d50881), StartRecentKVCache:

        self.cache_size = start_size + recent_size
    def evict_for_space(self, past_key_values, num_coming):
        seq_len = past_key_values[0][0].size(self.k_seq_dim)
        if seq_len + num_coming <= self.cache_size:
            return past_key_values
        ... torch.cat([self.k_slice(k, 0, self.start_size),
                       self.k_slice(k, seq_len - self.recent_size + num_coming, seq_len)], dim=self.k_seq_dim)

called with num_coming = 1 before each generated token's key and value are
appended (start_size = the lesson's "sink", recent_size = its "window").
The paper's "window attention" baseline is the same loop with start_size 0
and recent_size = sink + window (a cache of the same size): "window" below.
No RoPE or ALiBi (attnviz refuses them with the cache), so the keys'
positions do not enter. Attention per step, for query head h and its
key/value head h // (heads / kv_heads) (transformers' repeat_kv):
        s = q · Kᵀ;  a = s · scale (1/√d_k unless "scale");  [soft cap c·tanh(a/c)]
        w = softmax(a)  (gpt-oss's sinks: softmax over [a, sink_h], the sink's column dropped)
        out = concat(w · V) · W_o + b_o
Cross-check (stderr): with a cache larger than n every step's row equals the
full causal computation's row (torch, all rows at once).

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


class StartRecent:
    """StartRecentKVCache.evict_for_space on a list of (position, k, v) rows."""

    def __init__(self, start, recent):
        self.start, self.recent = start, recent

    def evict_for_space(self, rows, coming):
        if len(rows) + coming <= self.start + self.recent:
            return rows
        return rows[: self.start] + rows[len(rows) - self.recent + coming:]


def attend(L, q, rows, h_count, g_count, dk, dv):
    scale = 1.0 / math.sqrt(dk)
    if L.get("scale") is False:
        scale = 1.0
    elif isinstance(L.get("scale"), (int, float)) and not isinstance(L.get("scale"), bool):
        scale = float(L["scale"])
    cap = L.get("attn_logit_softcapping")
    sinks = L.get("sinks")
    K = torch.stack([r[1] for r in rows])
    V = torch.stack([r[2] for r in rows])
    heads, concat = [], []
    for h in range(h_count):
        g = h // (h_count // g_count)
        qh = q[h * dk:(h + 1) * dk]
        s = K[:, g * dk:(g + 1) * dk] @ qh
        a = s * scale
        if cap:
            a = cap * torch.tanh(a / cap)
        if sinks is not None:
            comb = torch.cat([a, T([sinks[h]])])
            comb = comb - comb.max()
            w = torch.softmax(comb, dim=-1)[:-1]
        else:
            w = torch.softmax(a, dim=-1)
        o = w @ V[:, g * dv:(g + 1) * dv]
        heads.append({"scores": [s.tolist()], "weights": [w.tolist()], "weighted": [o.tolist()]})
        concat.append(o)
    c = torch.cat(concat)
    out = c @ T(L["W_o"]) if "W_o" in L else c
    if "b_o" in L:
        out = out + T(L["b_o"])
    return heads, out


def project(L, x):
    """Token x's q, k and v, with the biases the lesson has."""
    q, k, v = x @ T(L["W_q"]), x @ T(L["W_k"]), x @ T(L["W_v"])
    return tuple(y + T(L[b]) if b in L else y for y, b in ((q, "b_q"), (k, "b_k"), (v, "b_v")))


def reference(L):
    X = T(L["X"])
    n = X.shape[0]
    h_count = L.get("heads", 1)
    g_count = L.get("kv_heads", h_count)
    Wq, Wk, Wv = T(L["W_q"]), T(L["W_k"]), T(L["W_v"])
    dk = Wq.shape[1] // h_count
    dv = Wv.shape[1] // g_count
    S, W = L["decode"]["cache"]["sink"], L["decode"]["cache"]["window"]
    kept, plain, steps = StartRecent(S, W), StartRecent(0, S + W), []
    cache, wcache = [], []
    for t in range(n):
        q, k, v = project(L, X[t])
        cache = kept.evict_for_space(cache, 1) + [(t, k, v)]
        wcache = plain.evict_for_space(wcache, 1) + [(t, k, v)]
        heads, out = attend(L, q, cache, h_count, g_count, dk, dv)
        wheads, wout = attend(L, q, wcache, h_count, g_count, dk, dv)
        steps.append({"t": t, "cache_rows": [r[0] for r in cache], "q": [q.tolist()],
                      "K_cache": [r[1].tolist() for r in cache], "V_cache": [r[2].tolist() for r in cache],
                      "heads": heads, "output": [out.tolist()],
                      "window": {"cache_rows": [r[0] for r in wcache],
                                 "weights": [{"weights": hd["weights"]} for hd in wheads], "output": [wout.tolist()]}})
    # cross-check: a cache that never evicts gives the full causal computation's rows
    big = StartRecent(n, n)
    cache = []
    full_rows = []
    for t in range(n):
        q, k, v = project(L, X[t])
        cache = big.evict_for_space(cache, 1) + [(t, k, v)]
        full_rows.append(attend(L, q, cache, h_count, g_count, dk, dv)[1])
    Q = X @ Wq + (T(L["b_q"]) if "b_q" in L else 0)
    K = X @ Wk + (T(L["b_k"]) if "b_k" in L else 0)
    V = X @ Wv + (T(L["b_v"]) if "b_v" in L else 0)
    mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
    cat, fullw = [], []
    for h in range(h_count):
        g = h // (h_count // g_count)
        a = Q[:, h * dk:(h + 1) * dk] @ K[:, g * dk:(g + 1) * dk].T
        a = a * (1.0 / math.sqrt(dk) if L.get("scale") is None else (1.0 if L["scale"] is False else L["scale"]))
        if L.get("attn_logit_softcapping"):
            c = L["attn_logit_softcapping"]
            a = c * torch.tanh(a / c)
        a = a + mask
        if L.get("sinks") is not None:
            comb = torch.cat([a, torch.full((n, 1), float(L["sinks"][h]))], dim=1)
            w = torch.softmax(comb - comb.max(dim=1, keepdim=True).values, dim=1)[:, :-1]
        else:
            w = torch.softmax(a, dim=1)
        cat.append(w @ V[:, g * dv:(g + 1) * dv])
        fullw.append({"weights": w.tolist()})
    full = torch.cat(cat, dim=1)
    full = full @ T(L["W_o"]) if "W_o" in L else full
    if "b_o" in L:
        full = full + T(L["b_o"])
    gap = max(float((full[t] - full_rows[t]).abs().max()) for t in range(n))
    print("%s: an unevicting cache against the full computation, max gap %.3g" % (L["title"]["en"], gap), file=sys.stderr)
    assert gap < 1e-12
    return {"heads": fullw, "output": full.tolist(), "decode": steps}


def rnd(g, r, c, s=1.0):
    return [[round(float(x), 4) for x in row] for row in (torch.randn(r, c, generator=g) * s)]


def lessons():
    g = torch.Generator().manual_seed(2311)
    out = {}
    n, d = 9, 4
    X = rnd(g, n, d)
    X[0] = [2.0, 2.0, 2.0, 2.0]  # a first token every query agrees with: the sink
    out["streaming_one_head"] = {
        "attnviz": 2, "title": {"en": "StreamingLLM's cache, one head", "zh": "StreamingLLM 的缓存，一个头"},
        "tokens": ["t%d" % i for i in range(n)], "X": X, "W_q": rnd(g, d, d), "W_k": rnd(g, d, d), "W_v": rnd(g, d, d),
        "mask": "causal", "decode": {"cache": {"sink": 1, "window": 3}}}
    n = 10
    out["streaming_gqa_bias"] = {
        "attnviz": 2, "title": {"en": "StreamingLLM's cache with GQA and biases", "zh": "StreamingLLM 的缓存：GQA 与偏置"},
        "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d), "heads": 4, "kv_heads": 2,
        "W_q": rnd(g, d, 8), "W_k": rnd(g, d, 4), "W_v": rnd(g, d, 4), "W_o": rnd(g, 8, d),
        "b_q": rnd(g, 1, 8)[0], "b_k": rnd(g, 1, 4)[0], "b_v": rnd(g, 1, 4)[0], "b_o": rnd(g, 1, d)[0],
        "mask": "causal", "decode": {"cache": {"sink": 2, "window": 3}}}
    out["streaming_sinks_softcap"] = {
        "attnviz": 2, "title": {"en": "StreamingLLM's cache with gpt-oss's sinks and a soft cap",
                                "zh": "StreamingLLM 的缓存：gpt-oss 的汇聚与软上限"},
        "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d), "heads": 2,
        "W_q": rnd(g, d, 4, 2.0), "W_k": rnd(g, d, 4, 2.0), "W_v": rnd(g, d, 4), "W_o": rnd(g, 4, d),
        "mask": "causal", "sinks": [0.5, -1.0], "attn_logit_softcapping": 2.0,
        "decode": {"cache": {"sink": 3, "window": 2}}}
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--all":
        for name, L in lessons().items():
            with open(os.path.join(sys.argv[2], name + ".json"), "w") as f:
                json.dump(L, f, ensure_ascii=False, indent=1)
                f.write("\n")
            with open(os.path.join(sys.argv[2], name + ".ref.json"), "w") as f:
                json.dump(reference(L), f, indent=1)
                f.write("\n")
    elif len(sys.argv) == 2:
        with open(sys.argv[1]) as f:
            json.dump(reference(json.load(f)), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
