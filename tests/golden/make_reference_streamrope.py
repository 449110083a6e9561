#!/usr/bin/python3
"""Independent reference numbers for StreamingLLM's cache with RoPE (issue 23
§4), computed with PyTorch in float64, one decoding step at a time:

    make_reference_streamrope.py --all tests/golden/streamrope   # the lessons and every NAME.ref.json
    make_reference_streamrope.py LESSON.json > LESSON.ref.json

Written from the paper (Xiao et al., "Efficient Streaming Language Models
with Attention Sinks", ICLR 2024: "When determining the relative distance
and adding positional information to tokens, StreamingLLM focuses on
positions within the cache rather than those in the original text") and its
repository, mit-han-lab/streaming-llm (commit
d729b3ffc947caca63fc0f7644b7468ca2d50881), not from the C code: the cache is
make_reference_streaming.py's StartRecentKVCache (imported), and the
positions are streaming_llm/pos_shift/modify_llama.py's
llama_pos_shift_attention_forward (what enable_streaming_llm switches on for
a llama model):

    cos, sin = self.rotary_emb(value_states, seq_len=kv_seq_len)
    ### Shift Pos: query pos is min(cache_size, idx)
    query_states = apply_rotary_pos_emb_single(query_states, cos, sin, position_ids)
    if past_key_value is not None:
        key_states = torch.cat([past_key_value[0], key_states], dim=2)
        ...
    past_key_value = (key_states, value_states) if use_cache else None
    ### Shift Pos: key pos is the pos in cache
    key_position_ids = torch.arange(kv_seq_len, device=position_ids.device).unsqueeze(0)
    key_states = apply_rotary_pos_emb_single(key_states, cos, sin, key_position_ids)

so the cache keeps each key as projected, NOT turned (past_key_value is set
before the keys are turned), every step turns the cached key at index i of
the cache by position i, and the query by position_ids, which transformers'
LlamaModel makes past_key_values_length … (the cache's length after
evict_for_space): the query's own index in the cache, its last. Before the
cache is full these are the tokens' own positions, and every row equals the
full computation's; after, the distances are those within the cache. The
plain window beside it (start_size 0, the same size) is turned the same way.
RoPE as transformers' LLaMA (half style): inv_freq = 1 / base^(arange(0, d, 2)/d),
apply_rotary_pos_emb_single: x·cos + rotate_half(x)·sin.

Cross-check (stderr): with a cache larger than n every step's row equals the
full causal computation's with RoPE at the tokens' own positions.

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_streaming as ms  # noqa: E402  (its cache, projections and attention per step)

torch.set_default_dtype(torch.float64)
T = ms.T


def turn(x, pos, base, heads, dk):
    """apply_rotary_pos_emb_single on one row of heads·d_k numbers at position pos (half style)."""
    inv = 1.0 / (base ** (torch.arange(0, dk, 2, dtype=torch.int64).to(torch.float64) / dk))
    emb = torch.cat((pos * inv, pos * inv))
    out = []
    for h in range(heads):
        r = x[h * dk:(h + 1) * dk]
        rot = torch.cat((-r[dk // 2:], r[:dk // 2]))              # rotate_half
        out.append(r * emb.cos() + rot * emb.sin())
    return torch.cat(out)


def turn_loop(x, pos, base, heads, dk):
    """The same as complex numbers, pair (i, i + d/2) times e^(i·pos·base^(−2i/d)) (the cross-check)."""
    out = x.clone()
    for h in range(heads):
        for i in range(dk // 2):
            z = complex(float(x[h * dk + i]), float(x[h * dk + i + dk // 2])) * \
                complex(math.cos(pos * base ** (-2.0 * i / dk)), math.sin(pos * base ** (-2.0 * i / dk)))
            out[h * dk + i], out[h * dk + i + dk // 2] = z.real, z.imag
    return out


def step(L, q, rows, hc, gc, dk, dv, base):
    """One step over the cached rows (position, k as projected, v): keys turned by their index in the cache, the
    query by its own (the last)."""
    c = len(rows)
    turned = [(p, turn(k, i, base, gc, dk), v) for i, (p, k, v) in enumerate(rows)]
    qt = turn(q, c - 1, base, hc, dk)
    assert torch.allclose(qt, turn_loop(q, c - 1, base, hc, dk), rtol=1e-13, atol=1e-13)
    heads, out = ms.attend(L, qt, turned, hc, gc, dk, dv)
    return qt, heads, out


def reference(L):
    X = T(L["X"])
    n = X.shape[0]
    hc = L.get("heads", 1)
    gc = L.get("kv_heads", hc)
    dk, dv = len(L["W_q"][0]) // hc, len(L["W_v"][0]) // gc
    base = float(L["rope"].get("base", 10000.0)) if isinstance(L["rope"], dict) else 10000.0
    S, W = L["decode"]["cache"]["sink"], L["decode"]["cache"]["window"]
    kept, plain, steps = ms.StartRecent(S, W), ms.StartRecent(0, S + W), []
    cache, wcache = [], []
    for t in range(n):
        q, k, v = ms.project(L, X[t])
        cache = kept.evict_for_space(cache, 1) + [(t, k, v)]
        wcache = plain.evict_for_space(wcache, 1) + [(t, k, v)]
        qt, heads, out = step(L, q, cache, hc, gc, dk, dv, base)
        _, wheads, wout = step(L, q, wcache, hc, gc, dk, dv, base)
        steps.append({"t": t, "cache_rows": [r[0] for r in cache], "q": [qt.tolist()],
                      "K_cache": [r[1].tolist() for r in cache], "V_cache": [r[2].tolist() for r in cache],
                      "heads": heads, "output": [out.tolist()],
                      "window": {"cache_rows": [r[0] for r in wcache],
                                 "weights": [{"weights": hd["weights"]} for hd in wheads], "output": [wout.tolist()]}})
    # the full causal computation, RoPE at the tokens' own positions; and a cache that never evicts gives its rows
    Q = torch.stack([turn(ms.project(L, X[t])[0], t, base, hc, dk) for t in range(n)])
    K = torch.stack([turn(ms.project(L, X[t])[1], t, base, gc, dk) for t in range(n)])
    V = torch.stack([ms.project(L, X[t])[2] for t in range(n)])
    mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
    cat, fullw = [], []
    for h in range(hc):
        g = h // (hc // gc)
        w = torch.softmax(Q[:, h * dk:(h + 1) * dk] @ K[:, g * dk:(g + 1) * dk].T / math.sqrt(dk) + mask, dim=1)
        cat.append(w @ V[:, g * dv:(g + 1) * dv])
        fullw.append({"weights": w.tolist()})
    full = torch.cat(cat, dim=1)
    full = full @ T(L["W_o"]) if "W_o" in L else full
    if "b_o" in L:
        full = full + T(L["b_o"])
    big, cache, gap = ms.StartRecent(n, n), [], 0.0
    for t in range(n):
        q, k, v = ms.project(L, X[t])
        cache = big.evict_for_space(cache, 1) + [(t, k, v)]
        gap = max(gap, float((step(L, q, cache, hc, gc, dk, dv, base)[2] - full[t]).abs().max()))
    print("%s: an unevicting cache against the full computation, max gap %.3g" % (L["title"]["en"], gap), file=sys.stderr)
    assert gap < 1e-12
    return {"Q_rot": Q.tolist(), "K_rot": K.tolist(), "heads": fullw, "output": full.tolist(), "decode": steps}


def lessons():
    g = torch.Generator().manual_seed(2312)
    rnd = ms.rnd
    out = {}
    n, d = 9, 4
    X = rnd(g, n, d)
    X[0] = [2.0, 2.0, 2.0, 2.0]
    out["streamrope_one_head"] = {
        "attnviz": 2, "title": {"en": "StreamingLLM's cache with RoPE, one head", "zh": "StreamingLLM 的缓存与 RoPE，一个头"},
        "tokens": ["t%d" % i for i in range(n)], "X": X, "W_q": rnd(g, d, d, 2.0), "W_k": rnd(g, d, d, 2.0),
        "W_v": rnd(g, d, d), "mask": "causal", "rope": {"base": 100}, "decode": {"cache": {"sink": 1, "window": 3}}}
    n = 10
    out["streamrope_gqa_bias"] = {
        "attnviz": 2, "title": {"en": "StreamingLLM's cache with RoPE, GQA and biases",
                                "zh": "StreamingLLM 的缓存：RoPE、GQA 与偏置"},
        "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d), "heads": 4, "kv_heads": 2,
        "W_q": rnd(g, d, 8, 2.0), "W_k": rnd(g, d, 4, 2.0), "W_v": rnd(g, d, 4), "W_o": rnd(g, 8, d),
        "b_q": rnd(g, 1, 8)[0], "b_k": rnd(g, 1, 4)[0], "b_v": rnd(g, 1, 4)[0], "b_o": rnd(g, 1, d)[0],
        "mask": "causal", "rope": True, "decode": {"cache": {"sink": 2, "window": 3}}}
    return out


def main():
    """make_reference_streaming.py's main, with this script's lessons and reference."""
    if len(sys.argv) == 3:
        os.makedirs(sys.argv[2], exist_ok=True)
    ms.lessons, ms.reference = lessons, reference
    ms.main()


if __name__ == "__main__":
    main()
