#!/usr/bin/python3
"""Independent reference numbers for issue 24 §2: DeepSeek Sparse Attention
(DeepSeek-V3.2), computed with PyTorch in float64.

    make_reference_dsa.py --all tests/golden/dsa        # write every NAME.json and NAME.ref.json
    make_reference_dsa.py --lesson lessons/sparse.json  # a shipped lesson's --dump keys, on stdout

Written from issue 24 and the reference code below, not from the C code.
The file followed is deepseek-ai/DeepSeek-V3.2-Exp's inference/model.py
(commit 3b99a53, "Merge pull request #6"):

  Indexer.forward (lines 452-480):
        q = self.wq_b(qr)                                    qr = MLA's q_norm(wq_a(x)): c_Q
        q = rearrange(q, 'b s (h d) -> b s h d', d=self.head_dim)
        q_pe, q_nope = torch.split(q, [self.rope_head_dim, self.head_dim - self.rope_head_dim], dim=-1)
        q_pe = apply_rotary_emb(q_pe, freqs_cis)
        q = torch.cat([q_pe, q_nope], dim=-1)
        k = self.wk(x)
        k = self.k_norm(k)                                   LayerNorm(head_dim), eps 1e-6, weight and bias
        k_pe, k_nope = torch.split(k, [self.rope_head_dim, self.head_dim - self.rope_head_dim], dim=-1)
        k_pe = apply_rotary_emb(k_pe.unsqueeze(2), freqs_cis).squeeze(2)
        k = torch.cat([k_pe, k_nope], dim=-1)
        q = rotate_activation(q); k = rotate_activation(k)   Hadamard / sqrt(d): left out, see below
        q_fp8, q_scale = act_quant(q, ...); k_fp8, k_scale = act_quant(k, ...)   FP8: left out
        weights = self.weights_proj(x) * self.n_heads ** -0.5
        weights = weights.unsqueeze(-1) * q_scale * self.softmax_scale            softmax_scale = head_dim ** -0.5
        index_score = fp8_index(q_fp8, weights, k_cache, k_scale_cache)
              (kernel.py fp8_index: logits = q·k; relu(logits) * weights; sum over heads; * k_scale)
        if mask is not None: index_score += mask
        topk_indices = index_score.topk(min(self.index_topk, end_pos), dim=-1)[1]
  MLA.forward, prefill ("mask is not None", lines 563-578):
        scores = torch.einsum("bshd,bthd->bsht", q.float(), k.float()) * self.softmax_scale
        topk_indices = self.indexer(x, qr, start_pos, freqs_cis, mask)
        index_mask = torch.full((bsz, seqlen, seqlen), float("-inf")).scatter_(-1, topk_indices, 0)
        index_mask += mask
        scores += index_mask.unsqueeze(2)
        scores = scores.softmax(dim=-1, dtype=torch.float32)
        x = torch.einsum("bsht,bthd->bshd", scores.type_as(x), v)
  apply_rotary_emb (lines 406-421): x viewed as complex pairs (2p, 2p+1), times
        freqs_cis = polar(1, t * 1 / base^(arange(0, d, 2) / d)), back to real
        in place (precompute_freqs_cis without YaRN: max_seq_len is not past original_seq_len here).
  MLA's q and k (lines 552-568): qr = q_norm(wq_a(x)); q = wq_b(qr) split [nope, rope];
        kv = wkv_a(x) split [kv_lora_rank, rope]; kv_norm(kv); wkv_b(kv) split [nope, v];
        k = [k_nope | k_pe] with one k_pe for every head; softmax_scale = qk_head_dim ** -0.5.

Left out, as lessons/FORMAT.md says: the FP8 quantisation (act_quant and the
scales dequantise back to the same numbers in exact arithmetic) and
rotate_activation, the Hadamard transform H/sqrt(d) applied to q and k. H/sqrt(d)
is orthogonal (H·Hᵀ = d·I), so (Hq/sqrt d)·(Hk/sqrt d) = q·k exactly: the
index scores, and so the kept set, do not change. forward() checks it: the
scores with a Sylvester Hadamard matrix applied differ from those without by
rounding alone (printed, and asserted below 1e-12).

Ties: torch.topk does not say which of two equal scores it returns; attnviz
keeps the earlier key. Every case here is checked to have no tie at the k-th
place (a row's k-th and (k+1)-th largest visible scores differ by > 1e-9).

Weights are written in attnviz's row convention (x · W, W = d_in × d_out,
nn.Linear's weight transposed). MLA's own q_pe/k_pe layout (the reference's
interleaved pairs, transformers' evens-then-odds) does not change a score,
so Q and K are not compared here (tests/golden/mla does).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import math
import os
import sys

import torch

torch.set_default_dtype(torch.float64)

CASES = [
    # name, n, d_model, heads, q_lora, kv_lora, nope, rope, v, index heads, index dim, topk, theta
    ("dsa_2heads_top3", 6, 6, 2, 3, 4, 2, 2, 3, 2, 4, 3, 10000.0),
    ("dsa_1head_top2_dim_rope", 5, 5, 1, 4, 3, 2, 4, 2, 3, 4, 2, 100.0),
    ("dsa_3heads_top4", 8, 8, 3, 4, 5, 3, 2, 2, 4, 8, 4, 10000.0),
    ("dsa_top_all", 4, 4, 2, 2, 3, 2, 2, 2, 2, 2, 4, 10000.0),
]


def rmsnorm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def freqs_cis(n, d, theta):
    freqs = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    freqs = torch.outer(torch.arange(n, dtype=torch.float64), freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(x, fc):
    # x: (n, heads, d): pairs (2p, 2p+1) as complex numbers, turned, back in place
    xc = torch.view_as_complex(x.contiguous().view(*x.shape[:-1], -1, 2))
    y = torch.view_as_real(xc * fc.view(x.shape[0], 1, -1)).flatten(2)
    return y


def hadamard(d):
    h = torch.ones(1, 1)
    while h.shape[0] < d:
        h = torch.cat((torch.cat((h, h), 1), torch.cat((h, -h), 1)), 0)
    return h


def indexer(les, x, qr, mask):
    """Indexer.forward without FP8: (q, k, weights, index_score before the mask, topk_indices)."""
    n = x.shape[0]
    H, d, dr = les["index_n_heads"], les["index_head_dim"], les["qk_rope_head_dim"]
    fc = freqs_cis(n, dr, les["rope_theta"])
    q = (qr @ les["W_iq"]).view(n, H, d)
    q_pe, q_nope = torch.split(q, [dr, d - dr], dim=-1)
    q_pe = apply_rotary_emb(q_pe, fc)
    q = torch.cat([q_pe, q_nope], dim=-1)
    k = x @ les["W_ik"]
    k = torch.nn.functional.layer_norm(k, (d,), les["ik_norm"], les["ik_norm_bias"], les["index_eps"])
    k_pe, k_nope = torch.split(k, [dr, d - dr], dim=-1)
    k_pe = apply_rotary_emb(k_pe.unsqueeze(1), fc).squeeze(1)
    k = torch.cat([k_pe, k_nope], dim=-1)
    weights = (x @ les["W_iw"]) * H ** -0.5
    weights = weights * d ** -0.5                                        # (n, H); q_scale is 1 without FP8
    logits = torch.einsum("thd,sd->tsh", q, k)                           # fp8_index: q·k
    index_score = (torch.relu(logits) * weights.unsqueeze(1)).sum(-1)    # relu · weights, summed over heads
    if d & (d - 1) == 0:                                                 # rotate_activation: it changes nothing
        R = hadamard(d) / math.sqrt(d)
        logits_h = torch.einsum("thd,sd->tsh", q @ R.T, k @ R.T)
        rot = (torch.relu(logits_h) * weights.unsqueeze(1)).sum(-1)
        gap = float((rot - index_score).abs().max())
        print("  Hadamard-rotated index scores differ by", gap, file=sys.stderr)
        assert gap < 1e-12
    masked = index_score + mask
    topk = min(les["index_topk"], n)
    topk_indices = masked.topk(topk, dim=-1)[1]
    for t in range(n):                                                   # no tie at the k-th place
        vis = sorted((float(v) for v in index_score[t, : t + 1]), reverse=True)
        if len(vis) > topk:
            assert vis[topk - 1] - vis[topk] > 1e-9, ("tie at the k-th place", t, vis)
    return q, k, weights, index_score, topk_indices


def forward(les):
    n, heads = les["n"], les["heads"]
    dn, dr, dv, c = les["qk_nope_head_dim"], les["qk_rope_head_dim"], les["v_head_dim"], les["kv_lora_rank"]
    dq = dn + dr
    x = les["X"]
    fc = freqs_cis(n, dr, les["rope_theta"])
    qr = rmsnorm(x @ les["W_qa"], les["q_a_norm"], les["eps"])
    q = (qr @ les["W_qb"]).view(n, heads, dq)
    q_nope, q_pe = torch.split(q, [dn, dr], dim=-1)
    q_pe = apply_rotary_emb(q_pe, fc)
    kv = x @ les["W_kva"]
    kv, k_pe = torch.split(kv, [c, dr], dim=-1)
    kv = rmsnorm(kv, les["kv_a_norm"], les["eps"])
    k_pe = apply_rotary_emb(k_pe.unsqueeze(1), fc)                       # (n, 1, dr)
    qf = torch.cat([q_nope, q_pe], dim=-1)
    kvb = (kv @ les["W_kvb"]).view(n, heads, dn + dv)
    k_nope, v = torch.split(kvb, [dn, dv], dim=-1)
    k = torch.cat([k_nope, k_pe.expand(-1, heads, -1)], dim=-1)
    raw = torch.einsum("shd,thd->sht", qf, k)                            # (n, heads, n), unscaled
    softmax_scale = dq ** -0.5
    scores = raw * softmax_scale
    mask = torch.full((n, n), float("-inf")).triu_(1)
    iq, ik, iw, index_score, topk_indices = indexer(les, x, qr, mask)
    index_mask = torch.full((n, n), float("-inf")).scatter_(-1, topk_indices, 0)
    index_mask += mask
    sparse_scores = scores + index_mask.unsqueeze(1)
    weights = sparse_scores.softmax(dim=-1)
    out = torch.einsum("sht,thd->shd", weights, v)                       # (n, heads, dv)
    dense = (scores + mask.unsqueeze(1)).softmax(dim=-1)
    concat = out.reshape(n, heads * dv)
    output = concat @ les["W_o"]
    kept = torch.isfinite(index_mask).to(torch.float64)
    bias = torch.where(kept > 0, torch.zeros(n, n), torch.full((n, n), float("-inf")))
    heads_out = []
    for h in range(heads):
        heads_out.append({
            "scores": raw[:, h, :], "scaled": scores[:, h, :],
            "index_mask": bias, "sparse": scores[:, h, :] + bias,
            "masked": sparse_scores[:, h, :], "weights": weights[:, h, :], "output": out[:, h, :],
        })
    return {
        "heads": heads_out,
        "dsa": {"index_n_heads": les["index_n_heads"], "index_head_dim": les["index_head_dim"],
                "index_topk": les["index_topk"], "index_q": iq.reshape(n, -1), "index_k": ik, "index_w": iw,
                "index_scores": index_score + mask, "index_kept": kept,
                "heads": [{"dense_weights": dense[:, h, :]} for h in range(heads)]},
        "concat": concat, "output": output,
    }


def to_json(v):
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [to_json(x) for x in v]
    if torch.is_tensor(v):
        if v.dim() == 1:
            return [cell(x) for x in v]
        return [[cell(x) for x in row] for row in v]
    return v


def cell(x):
    x = float(x)
    return None if x == float("-inf") else x      # --dump writes -inf as null


def make_case(name, n, d_model, heads, q_lora, kv_lora, dn, dr, dv, ih, idim, topk, theta, seed):
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, scale=1.0):
        return torch.round(torch.randn(*shape, generator=g) * scale * 1e6) / 1e6

    return {"name": name, "n": n, "d_model": d_model, "heads": heads, "q_lora_rank": q_lora, "kv_lora_rank": kv_lora,
            "qk_nope_head_dim": dn, "qk_rope_head_dim": dr, "v_head_dim": dv, "rope_theta": theta, "eps": 1e-6,
            "index_n_heads": ih, "index_head_dim": idim, "index_topk": topk, "index_eps": 1e-6,
            "X": rnd(n, d_model), "W_qa": rnd(d_model, q_lora, scale=0.5), "q_a_norm": 1.0 + rnd(q_lora, scale=0.1),
            "W_qb": rnd(q_lora, heads * (dn + dr), scale=0.5), "W_kva": rnd(d_model, kv_lora + dr, scale=0.5),
            "kv_a_norm": 1.0 + rnd(kv_lora, scale=0.1), "W_kvb": rnd(kv_lora, heads * (dn + dv), scale=0.5),
            "W_o": rnd(heads * dv, d_model, scale=0.5),
            "W_iq": rnd(q_lora, ih * idim, scale=0.7), "W_ik": rnd(d_model, idim, scale=0.7),
            "ik_norm": 1.0 + rnd(idim, scale=0.1), "ik_norm_bias": rnd(idim, scale=0.1), "W_iw": rnd(d_model, ih)}


def lesson_of(les):
    mla = {k: to_json(les[k]) for k in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                         "v_head_dim", "rope_theta", "eps", "W_qa", "q_a_norm", "W_qb", "W_kva",
                                         "kv_a_norm", "W_kvb")}
    dsa = {k: to_json(les[k]) for k in ("index_n_heads", "index_head_dim", "index_topk", "W_iq", "W_ik", "ik_norm",
                                         "ik_norm_bias", "W_iw")}
    return {"attnviz": 2, "title": {"en": les["name"], "zh": les["name"]},
            "tokens": ["t%d" % t for t in range(les["n"])], "X": to_json(les["X"]), "heads": les["heads"],
            "mask": "causal", "W_o": to_json(les["W_o"]), "mla": mla, "dsa": dsa}


def from_lesson(path):
    L = json.load(open(path))
    m, d = L["mla"], L["dsa"]
    t = lambda v: torch.tensor(v, dtype=torch.float64)
    les = {"n": len(L["X"]), "heads": L.get("heads", 1), "X": t(L["X"]), "W_o": t(L["W_o"]),
           "rope_theta": float(m.get("rope_theta", 10000.0)), "eps": float(m.get("eps", 1e-6)),
           "index_eps": float(d.get("eps", 1e-6))}
    for k in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
        les[k] = m[k]
    for k in ("index_n_heads", "index_head_dim", "index_topk"):
        les[k] = d[k]
    for k in ("W_qa", "W_qb", "W_kva", "W_kvb"):
        les[k] = t(m[k])
    les["q_a_norm"] = t(m["q_a_norm"]) if "q_a_norm" in m else torch.ones(les["q_lora_rank"])
    les["kv_a_norm"] = t(m["kv_a_norm"]) if "kv_a_norm" in m else torch.ones(les["kv_lora_rank"])
    for k in ("W_iq", "W_ik", "W_iw"):
        les[k] = t(d[k])
    les["ik_norm"] = t(d["ik_norm"]) if "ik_norm" in d else torch.ones(les["index_head_dim"])
    les["ik_norm_bias"] = t(d["ik_norm_bias"]) if "ik_norm_bias" in d else torch.zeros(les["index_head_dim"])
    return les


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--lesson":
        json.dump(to_json(forward(from_lesson(sys.argv[2]))), sys.stdout, indent=1)
        sys.stdout.write("\n")
        return
    if len(sys.argv) != 3 or sys.argv[1] != "--all":
        sys.exit(__doc__)
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for k, case in enumerate(CASES):
        print(case[0], file=sys.stderr)
        les = make_case(*case, seed=2450 + k)
        ref = forward(les)
        with open(os.path.join(out, case[0] + ".json"), "w") as f:
            json.dump(lesson_of(les), f, indent=1)
            f.write("\n")
        with open(os.path.join(out, case[0] + ".ref.json"), "w") as f:
            json.dump(to_json(ref), f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
