"""tests/bench_torch_variants.py: `bench_torch.py --variants LESSON.json [--repeat R]`, `make bench` (k)'s
PyTorch side (tests/bench_variants.sh): the lessons of the 2025-26 variants that bench_variants.sh
generates, computed by PyTorch in float64 on one thread with the stages attnviz keeps for them
and no more (the minimal graph), timed as bench_torch.py times: the process's CPU time after one
warm-up run that is not counted. Prints compute_ms=MEDIAN … as bench_torch.py does; for MLA also
naive_ms= and absorbed_ms=, each form timed alone. With the lesson's "backward" (a target), the loss
0.5·Σ(out − target)² and autograd's gradients of every weight and of X, as attnviz makes them.

The formulas are the lessons' (lessons/FORMAT.md) as the reference code has them:
  QK-norm      Qwen3Attention: q_norm/k_norm (RMSNorm over head_dim) before RoPE
  YaRN         modeling_rope_utils._compute_yarn_parameters: inv_freq blended by the ramp, cos and sin
               times the attention factor
  local/global a layer with the mask of sliding_window_overlay (i - W < j <= i), then a causal one
  sinks        GptOssAttention / eager_attention_forward: the sink logit a column of the scores,
               softmax, the column dropped
  soft cap     Gemma2's eager_attention_forward: c · tanh(s / c) before the mask
  gated        Qwen3NextAttention: concat ⊙ σ(x · W_gate) before o_proj
  MoE          DeepseekV3TopkRouter / DeepseekV3MoE in a pre-norm block (RMSNorm)
  MLA          DeepseekV3Attention (naive); the absorbed form q̃ = q_nope · W^K, q̃ · c_KVᵀ + q_pe · k_peᵀ,
               (weights · c_KV) · W^V
  linear       fast-transformers' causal linear attention, φ = elu + 1, the n × n way and the state way
  DeltaNet     modeling_qwen3_next.py's torch_recurrent_gated_delta_rule and torch_chunk_gated_delta_rule
  diff         microsoft/unilm multihead_diffattn.py: A1 − λ·A2 per pair, subln, × (1 − λ_init)
The numbers are random tensors of the lessons' shapes (as bench_torch.py's): the time of these
kernels does not depend on the values.
"""
import json
import math
import resource
import statistics
import time

import torch
import torch.nn.functional as F

import bench_torch as bt


def rms(x, w=None, eps=1e-6):
    y = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)
    return y if w is None else y * w


def inv_freq(d, rope):
    """RoPE's frequencies, YaRN's blend when the lesson scales them (and its attention factor)."""
    base = float(rope.get("base", 10000)) if isinstance(rope, dict) else 10000.0
    inv = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    sc = rope.get("scaling") if isinstance(rope, dict) else None
    if not sc:
        return inv, 1.0
    s, L0 = float(sc["factor"]), float(sc["original_max_position_embeddings"])

    def dim(rot):
        return d * math.log(L0 / (rot * 2 * math.pi)) / (2 * math.log(base))
    low, high = max(math.floor(dim(32)), 0), min(math.ceil(dim(1)), d - 1)
    ramp = ((torch.arange(d // 2, dtype=torch.float64) - low) / max(high - low, 1e-3)).clamp(0, 1)
    extra = 1 - ramp
    return inv / s * (1 - extra) + inv * extra, 0.1 * math.log(s) + 1.0


def rope_half(x, inv, factor=1.0):
    """x: heads × n × d turned in halves (rotate_half), cos and sin times factor."""
    n = x.shape[-2]
    ang = torch.arange(n, dtype=torch.float64).unsqueeze(1) * inv
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos() * factor, emb.sin() * factor
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def hidden_of(n, window):
    """The cells the mask hides: causal, or a window of W."""
    i = torch.arange(n).unsqueeze(1)
    j = torch.arange(n).unsqueeze(0)
    hide = j > i
    if window:
        hide = hide | (j <= i - window)
    return hide


def softmax_heads(q, k, v, hide, factor, cap=0.0, sinks=None):
    """Scores, scale, cap, mask, softmax (with a sink column), weighted: per head, as attnviz keeps them."""
    scores = q @ k.transpose(1, 2)
    s = scores * factor
    if cap:
        s = cap * torch.tanh(s / cap)
    s = s.masked_fill(hide, float("-inf"))
    if sinks is not None:
        col = sinks.view(-1, 1, 1).expand(-1, s.shape[1], 1)
        w = F.softmax(torch.cat((s, col), dim=-1), dim=-1)[..., :-1]
    else:
        w = F.softmax(s, dim=-1)
    return scores, w, w @ v


def heads_of(X, W, h):
    n = X.shape[0]
    return (X @ W).view(n, h, -1).transpose(0, 1)


def attention(doc, T, x, layer=None):
    """One attention layer of a variant lesson (not MLA), its output."""
    h, n = int(doc["heads"]), x.shape[0]
    q, k, v = heads_of(x, T["W_q"], h), heads_of(x, T["W_k"], h), heads_of(x, T["W_v"], h)
    d = q.shape[-1]
    if "qk_norm" in doc:
        q, k = rms(q, T["q_norm"]), rms(k, T["k_norm"])
    if doc.get("rope"):
        inv, af = inv_freq(d, doc["rope"])
        q, k = rope_half(q, inv, af), rope_half(k, inv, af)
    mask = (layer or {}).get("mask")
    hide = hidden_of(n, mask.get("window") if isinstance(mask, dict) else None)
    extra = {}
    if "diff_attn" in doc:
        _, w, _ = softmax_heads(q, k, v, hide, d ** -0.5)
        lam_init = 0.8 - 0.6 * math.exp(0)
        lam = math.exp(0.0) - math.exp(0.0) + lam_init
        dw = w[0::2] - lam * w[1::2]                                  # pairs × n × n
        vv = torch.cat((v[0::2], v[1::2]), dim=-1)                    # pairs × n × 2·d_v
        o = rms(dw @ vv, eps=1e-5) * (1 - lam_init)
        concat = o.transpose(0, 1).reshape(n, -1)
        return concat @ T["W_o"]
    _, w, out = softmax_heads(q, k, v, hide, d ** -0.5, float(doc.get("attn_logit_softcapping", 0) or 0),
                              T.get("sinks"))
    concat = out.transpose(0, 1).reshape(n, -1)
    if "W_gate" in T:
        concat = concat * torch.sigmoid(x @ T["W_gate"])
    if "linear_attention" in doc:
        extra["linear"] = linear_both(q, k, v)
    if "gated_deltanet" in doc:
        extra["deltanet"] = deltanet_both(doc, T, x, q, k, v)
    return concat @ T["W_o"]


def linear_both(q, k, v, eps=1e-6):
    """Causal linear attention the n × n way and the state way (a running state, token by token)."""
    pq, pk = F.elu(q) + 1, F.elu(k) + 1
    A = (pq @ pk.transpose(1, 2)).tril()
    z = A.sum(-1, keepdim=True) + eps
    out = (A @ v) / z
    hh, n, dk = pq.shape
    S = torch.zeros(hh, dk, v.shape[-1], dtype=torch.float64)
    ks = torch.zeros(hh, dk, dtype=torch.float64)
    rows = torch.empty_like(out)
    for t in range(n):
        S += pk[:, t, :, None] * v[:, t, None, :]
        ks += pk[:, t]
        num = (pq[:, t, None, :] @ S).squeeze(1)
        rows[:, t] = num / ((pq[:, t] * ks).sum(-1, keepdim=True) + eps)
    return out, rows


def deltanet_both(doc, T, x, q, k, v):
    """Gated DeltaNet token by token (torch_recurrent_gated_delta_rule) and in chunks (torch_chunk_gated_delta_rule)."""
    cs = int(doc["gated_deltanet"].get("chunk_size", 2))
    q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6) / math.sqrt(q.shape[-1])
    k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    beta = torch.sigmoid(x @ T["W_b"]).t()                            # heads × n
    g = (-torch.exp(T["A_log"]).view(-1, 1) * F.softplus(x @ T["W_a"] + T["dt_bias"]).t())
    hh, n, dk = k.shape
    dv = v.shape[-1]
    S = torch.zeros(hh, dk, dv, dtype=torch.float64)
    rec = torch.empty(hh, n, dv, dtype=torch.float64)
    for t in range(n):
        S = S * g[:, t].exp().view(-1, 1, 1)
        recall = (S * k[:, t, :, None]).sum(-2)
        delta = (v[:, t] - recall) * beta[:, t, None]
        S = S + k[:, t, :, None] * delta[:, None, :]
        rec[:, t] = (S * q[:, t, :, None]).sum(-2)
    # chunked: n a multiple of cs here
    qc, kc, vc = (z.reshape(hh, -1, cs, z.shape[-1]) for z in (q, k, v))
    bc, gc = beta.reshape(hh, -1, cs), g.reshape(hh, -1, cs).cumsum(-1)
    kb, vb = kc * bc[..., None], vc * bc[..., None]
    upper = torch.triu(torch.ones(cs, cs, dtype=torch.bool), diagonal=0)
    decay = (gc[..., :, None] - gc[..., None, :]).tril().exp().tril()
    attn = -((kb @ kc.transpose(-1, -2)) * decay).masked_fill(upper, 0)
    for i in range(1, cs):
        row = attn[..., i, :i].clone()
        sub = attn[..., :i, :i].clone()
        attn[..., i, :i] = row + (row.unsqueeze(-1) * sub).sum(-2)
    attn = attn + torch.eye(cs, dtype=torch.float64)
    val = attn @ vb
    kcum = attn @ (kb * gc.exp()[..., None])
    S = torch.zeros(hh, dk, dv, dtype=torch.float64)
    out = torch.zeros_like(val)
    strict = torch.triu(torch.ones(cs, cs, dtype=torch.bool), diagonal=1)
    for c in range(qc.shape[1]):
        qi, ki = qc[:, c], kc[:, c]
        a = (qi @ ki.transpose(-1, -2) * decay[:, c]).masked_fill(strict, 0)
        vnew = val[:, c] - kcum[:, c] @ S
        out[:, c] = (qi * gc[:, c, :, None].exp()) @ S + a @ vnew
        last = gc[:, c, -1]
        S = S * last.exp().view(-1, 1, 1) + (ki * (last[:, None] - gc[:, c]).exp()[..., None]).transpose(-1, -2) @ vnew
    return rec, out.reshape(hh, n, dv)


def mla_tensors(doc, T):
    m = doc["mla"]
    return {k: bt.tensor_of(m[k]) for k in ("W_qa", "W_qb", "W_kva", "W_kvb")}


def mla_naive(doc, T, x):
    """DeepseekV3Attention: its latents, the heads' q and k, the scores, softmax, the weighted sum."""
    m, M = doc["mla"], T["mla"]
    h, n = int(doc["heads"]), x.shape[0]
    c, dn, dr, dv = m["kv_lora_rank"], m["qk_nope_head_dim"], m["qk_rope_head_dim"], m["v_head_dim"]
    q = (rms(x @ M["W_qa"]) @ M["W_qb"]).view(n, h, dn + dr).transpose(0, 1)
    ckv = x @ M["W_kva"]
    c_kv, k_pe = rms(ckv[:, :c]), ckv[:, c:]
    kv = (c_kv @ M["W_kvb"]).view(n, h, dn + dv).transpose(0, 1)
    inv, _ = inv_freq(dr, None)
    q_pe = rope_half(q[..., dn:].reshape(h, n, dr // 2, 2).transpose(-1, -2).reshape(h, n, dr), inv)
    k_pe = rope_half(k_pe.view(1, n, dr // 2, 2).transpose(-1, -2).reshape(1, n, dr), inv)
    Q = torch.cat((q[..., :dn], q_pe), dim=-1)
    K = torch.cat((kv[..., :dn], k_pe.expand(h, n, dr)), dim=-1)
    _, w, out = softmax_heads(Q, K, kv[..., dn:], hidden_of(n, None), (dn + dr) ** -0.5)
    concat = out.transpose(0, 1).reshape(n, -1)
    return concat @ T["W_o"], (q[..., :dn], q_pe, c_kv, k_pe, w)


def mla_absorbed(doc, T, kept):
    """The absorbed form from the naive one's latents and weights: q̃ = q_nope·W^K, q̃·c_KVᵀ + q_pe·k_peᵀ,
    (weights·c_KV)·W^V."""
    m = doc["mla"]
    h, c, dn, dv = int(doc["heads"]), m["kv_lora_rank"], m["qk_nope_head_dim"], m["v_head_dim"]
    q_nope, q_pe, c_kv, k_pe, w = kept
    Wkvb = T["mla"]["W_kvb"].view(c, h, dn + dv).permute(1, 0, 2)       # h × c × (dn + dv)
    q_tilde = q_nope @ Wkvb[..., :dn].transpose(1, 2)                  # h × n × c
    absorbed = q_tilde @ c_kv.t() + q_pe @ k_pe.transpose(1, 2)
    absorbed_out = (w @ c_kv) @ Wkvb[..., dn:]
    return absorbed, absorbed_out


def moe(ffn, T, x):
    """DeepseekV3MoE on the rows x: the sigmoid router, its grouped choice, the chosen experts, the shared one."""
    E, k, G, TG = len(ffn["experts"]), int(ffn.get("top_k", 2)), int(ffn.get("n_group", 1)), int(ffn.get("topk_group", 1))
    logits = x @ T["router"]
    scores = logits.sigmoid()
    choice = scores + T["e_bias"]
    gs = choice.view(-1, G, E // G).topk(2, dim=-1)[0].sum(-1)
    gmask = torch.zeros_like(gs).scatter_(1, torch.topk(gs, TG, dim=-1, sorted=False)[1], 1)
    smask = gmask.unsqueeze(-1).expand(-1, G, E // G).reshape(-1, E)
    idx = torch.topk(choice.masked_fill(~smask.bool(), 0.0), k, dim=-1, sorted=False)[1]
    wts = scores.gather(1, idx)
    if ffn.get("norm_topk_prob", True):
        wts = wts / (wts.sum(-1, keepdim=True) + 1e-20)
    wts = wts * float(ffn.get("routed_scaling_factor", 1.0))
    out = torch.zeros_like(x)
    hit = F.one_hot(idx, E).permute(2, 0, 1)
    for e, ex in enumerate(T["experts"]):
        rows, slot = torch.where(hit[e])
        if rows.numel():
            xe = x[rows]
            out.index_add_(0, rows, ((F.silu(xe @ ex["W_1"]) * (xe @ ex["W_3"])) @ ex["W_2"]) * wts[rows, slot, None])
    sh = T["shared"]
    return out + (F.silu(x @ sh["W_1"]) * (x @ sh["W_3"])) @ sh["W_2"]


def load(doc):
    T = {"X": bt.tensor_of(doc["X"]), "W_o": bt.tensor_of(doc["W_o"])}
    for key in ("W_q", "W_k", "W_v", "W_gate"):
        if key in doc:
            T[key] = bt.tensor_of(doc[key])
    if "qk_norm" in doc:
        T["q_norm"], T["k_norm"] = (torch.tensor(doc["qk_norm"][s], dtype=torch.float64) for s in ("q", "k"))
    if "sinks" in doc:
        T["sinks"] = torch.tensor(doc["sinks"], dtype=torch.float64)
    if "gated_deltanet" in doc:
        g = doc["gated_deltanet"]
        T.update(W_a=bt.tensor_of(g["W_a"]), W_b=bt.tensor_of(g["W_b"]),
                 A_log=torch.tensor(g["A_log"], dtype=torch.float64), dt_bias=torch.tensor(g["dt_bias"], dtype=torch.float64))
    if "mla" in doc:
        T["mla"] = mla_tensors(doc, T)
    ffn = (doc.get("block") or {}).get("ffn")
    if ffn:
        T["router"] = bt.tensor_of(ffn["router"])
        T["e_bias"] = torch.zeros(len(ffn["experts"]), dtype=torch.float64)
        T["experts"] = [{k: bt.tensor_of(e[k]) for k in ("W_1", "W_3", "W_2")} for e in ffn["experts"]]
        T["shared"] = {k: bt.tensor_of(ffn["shared_expert"][k]) for k in ("W_1", "W_3", "W_2")}
    return T


def compute(doc, T, part=None):
    """What attnviz --bench times for the lesson (part: MLA's "naive" or "absorbed" alone)."""
    x = T["X"]
    if "mla" in doc:
        out, kept = mla_naive(doc, T, x)
        if part == "naive":
            return out
        if part == "absorbed":
            return mla_absorbed(doc, T, T["kept"])
        return out, mla_absorbed(doc, T, kept)
    block = doc.get("block")
    if block:                                                          # pre-norm, RMSNorm (the MoE lesson's)
        r1 = x + attention(doc, T, rms(x, eps=1e-5))
        return r1 + moe(block["ffn"], T, rms(r1, eps=1e-5))
    for layer in doc.get("layers", [{}]):
        x = attention(doc, T, x, layer)
    return x


def with_loss(doc, T):
    """The forward pass, the loss and every gradient (a lesson with "backward")."""
    leaves = [t for k, t in T.items() if isinstance(t, torch.Tensor) and k not in ("target", "e_bias")]
    leaves += [t for e in T.get("experts", []) for t in e.values()] + list(T.get("shared", {}).values())
    for t in leaves:
        t.requires_grad_(True)
        t.grad = None
    out = compute(doc, T)
    loss = 0.5 * ((out - T["target"]) ** 2).sum()
    loss.backward()
    return loss


def timed(fn, repeat):
    fn()                                                               # the warm-up, not counted
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append((time.process_time() - t0) * 1e3)
    return statistics.median(times), min(times), max(times)


def main(argv):
    """argv: --variants LESSON.json [--repeat R]"""
    repeat = int(argv[argv.index("--repeat") + 1]) if "--repeat" in argv else 5
    with open(argv[1], encoding="utf-8") as f:
        doc = json.load(f)
    T = load(doc)
    extra = ""
    if "backward" in doc:
        T["target"] = bt.tensor_of(doc["backward"]["target"])
        med, lo, hi = timed(lambda: with_loss(doc, T), repeat)
    else:
        with torch.no_grad():
            med, lo, hi = timed(lambda: compute(doc, T), repeat)
            if "mla" in doc:
                T["kept"] = mla_naive(doc, T, T["X"])[1]
                extra = " naive_ms=%.3f absorbed_ms=%.3f" % (timed(lambda: compute(doc, T, "naive"), repeat)[0],
                                                             timed(lambda: compute(doc, T, "absorbed"), repeat)[0])
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print("compute_ms=%.3f min_ms=%.3f max_ms=%.3f peak_rss_kb=%d%s torch=%s threads=%d blas=%s core=%s"
          % (med, lo, hi, rss, extra, torch.__version__, torch.get_num_threads(), bt.blas_in_use(), bt.openblas_core()))
