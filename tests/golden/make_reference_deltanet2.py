#!/usr/bin/python3
"""Independent reference numbers for issue 24 §3: Gated DeltaNet as a layer's
token mixer (Qwen3-Next's linear_attn), computed with PyTorch in float64:

    make_reference_deltanet2.py --all tests/golden/deltanet2   # the lessons and every NAME.ref.json
    make_reference_deltanet2.py LESSON.json > LESSON.ref.json
    make_reference_deltanet2.py lessons/hybrid.json > tests/golden/lessons/hybrid.ref.json

Written from issue 24, lessons/FORMAT.md ("gated_deltanet", "mixer") and the
reference code below, not from the C code. The rest of a layer (the
projections, softmax attention, the block) is make_reference_v4.py's and
make_reference_linear.py's, imported and unchanged; for a layer whose
"gated_deltanet" has "mixer": true this script computes the whole of
Qwen3NextGatedDeltaNet.forward on the lesson's q, k, v projections and puts
its output where softmax attention's was: concat, then W_o (out_proj).

transformers, src/transformers/models/qwen3_next/modeling_qwen3_next.py
(the file at commit 01cdc6081c7500f9e50c98b1b943c90ecb665db3):
  Qwen3NextGatedDeltaNet.__init__:
        self.conv1d = nn.Conv1d(in_channels=self.conv_dim, out_channels=self.conv_dim, bias=False,
                                kernel_size=self.conv_kernel_size, groups=self.conv_dim,
                                padding=self.conv_kernel_size - 1)          -> conv() (weight[c, 0, s] = conv1d[s][c])
  Qwen3NextGatedDeltaNet.forward:
        mixed_qkv = torch.cat((query, key, value), dim=-1)                   (here [Q | K | V], head-major)
        mixed_qkv = F.silu(self.conv1d(mixed_qkv)[:, :, :seq_len])           -> conv()
        query, key, value = torch.split(mixed_qkv, [self.key_dim, self.key_dim, self.value_dim], dim=-1)
        beta = b.sigmoid(); g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)
        core_attn_out, _ = self.chunk_gated_delta_rule(query, key, value, g=g, beta=beta, ...,
                                                       use_qk_l2norm_in_kernel=True)
        core_attn_out = self.norm(core_attn_out, z); output = self.out_proj(core_attn_out)
  l2norm: inv_norm = torch.rsqrt((x * x).sum(dim=dim, keepdim=True) + eps); x * inv_norm
  torch_recurrent_gated_delta_rule (all heads at once, as written there; each token's state kept):
        scale = 1 / (query.shape[-1] ** 0.5); query = query * scale
        last_recurrent_state = last_recurrent_state * g_t
        kv_mem = (last_recurrent_state * k_t.unsqueeze(-1)).sum(dim=-2)
        delta = (v_t - kv_mem) * beta_t
        last_recurrent_state = last_recurrent_state + k_t.unsqueeze(-1) * delta.unsqueeze(-2)
        core_attn_out[:, :, i] = (last_recurrent_state * q_t.unsqueeze(-1)).sum(dim=-2)   -> recurrent()
  torch_chunk_gated_delta_rule (all heads at once, chunk_size the lesson's, padded to whole chunks):
        g = g.cumsum(dim=-1); decay_mask = ((g.unsqueeze(-1) - g.unsqueeze(-2)).tril().exp().float()).tril()
        attn = -((k_beta @ key.transpose(-1, -2)) * decay_mask).masked_fill(mask, 0)
        for i in range(1, chunk_size): row = attn[..., i, :i]; sub = attn[..., :i, :i]
                                       attn[..., i, :i] = row + (row.unsqueeze(-1) * sub).sum(-2)
        attn = attn + I; value = attn @ v_beta; k_cumdecay = attn @ (k_beta * g.exp().unsqueeze(-1))
        per chunk: attn = (q_i @ k_i^T * decay_mask).masked_fill_(strict upper, 0)
                   v_new = v_i - k_cumdecay @ S; out = (q_i * g.exp()) @ S + attn @ v_new
                   S = S * exp(g_last) + (k_i * (g_last - g).exp()[..., None])^T @ v_new   -> chunked()
  Qwen3NextRMSNormGated.forward:
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        hidden_states = self.weight * hidden_states; hidden_states * silu(gate)     -> gated_norm()
  Qwen3NextAttention.forward (a full-attention layer of the hybrid, with "W_gate"):
        attn_output = attn_output * torch.sigmoid(gate); attn_output = self.o_proj(attn_output)
  (here a = x W_a, b = x W_b, z = x W_z with x the rows the projections read, and
   q, k, v the lesson's projections W_q, W_k, W_v: in_proj_qkvz and in_proj_ba
   un-interleaved. Query head h reads key/value head h // (h/g) as elsewhere in
   attnviz.)

The dump's names: gdn_conv ([Q | K | V] after the conv and SiLU), gdn_z; per
head gdn_q, gdn_k (from gdn_conv), gdn_beta, gdn_g, gdn_recall, gdn_delta,
gdn_out (recurrent), gdn_out_chunk (chunked), gdn_state (after the last
token), gdn_states (after each token, row t flattened d_k·d_v), gdn_rms,
gdn_gated; gdn_cache (what the layer and a full-attention layer cache, in
numbers); concat = [gdn_gated of each head], output = concat W_o.
Cross-checks (stderr): chunked = recurrent (outputs and last state, 1e-12);
the conv as a Python loop over the kernel; the recurrent form again per head
with make_reference_linear.py's gdn_recurrent.

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_linear as lin  # noqa: E402  (patches v4 with linear attention and Gated DeltaNet beside softmax)
from lessonfiles import lesson_json, write_lessons, write_references  # noqa: E402

v4 = lin.v4
torch.set_default_dtype(torch.float64)
T, agree = v4.T, v4.agree


def conv(mixed, w):
    """nn.Conv1d(groups=C, padding=K - 1, bias=False) over the tokens, its first n outputs, then SiLU.
    mixed: n x C; w: K x C as the lesson writes it (conv1d.weight[c, 0, s] = w[s][c])."""
    n, C = mixed.shape
    K = w.shape[0]
    weight = w.T.unsqueeze(1)                                        # [C, 1, K]
    return F.silu(F.conv1d(mixed.T.unsqueeze(0), weight, padding=K - 1, groups=C)[0, :, :n]).T


def l2norm(x, eps=1e-6):
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


def recurrent(q, k, v, g, beta):
    """torch_recurrent_gated_delta_rule on [h, n, d] (q, k already l2-normalised; q scaled here), keeping each
    token's state. Returns out, recall (kv_mem), delta, states [h, n, dk, dv]."""
    h, n, dk = k.shape
    dv = v.shape[-1]
    q = q * (1 / (q.shape[-1] ** 0.5))
    S = torch.zeros(h, dk, dv)
    out, recall, delta = torch.zeros(h, n, dv), torch.zeros(h, n, dv), torch.zeros(h, n, dv)
    states = torch.zeros(h, n, dk, dv)
    for i in range(n):
        S = S * g[:, i].exp()[:, None, None]
        recall[:, i] = (S * k[:, i].unsqueeze(-1)).sum(dim=-2)
        delta[:, i] = (v[:, i] - recall[:, i]) * beta[:, i, None]
        S = S + k[:, i].unsqueeze(-1) * delta[:, i].unsqueeze(-2)
        out[:, i] = (S * q[:, i].unsqueeze(-1)).sum(dim=-2)
        states[:, i] = S
    return out, recall, delta, states


def chunked(q, k, v, g, beta, C):
    """torch_chunk_gated_delta_rule on [h, n, d] (q, k already l2-normalised; q scaled here), chunk_size C."""
    h, n, dk = k.shape
    dv = v.shape[-1]
    pad = (C - n % C) % C
    q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
    beta, g = F.pad(beta, (0, pad)), F.pad(g, (0, pad))
    q = q * (1 / (q.shape[-1] ** 0.5))
    v_beta, k_beta = v * beta.unsqueeze(-1), k * beta.unsqueeze(-1)
    q, k, v, k_beta, v_beta = (x.reshape(h, -1, C, x.shape[-1]) for x in (q, k, v, k_beta, v_beta))
    g = g.reshape(h, -1, C).cumsum(dim=-1)
    mask = torch.triu(torch.ones(C, C, dtype=torch.bool), diagonal=0)
    decay = ((g.unsqueeze(-1) - g.unsqueeze(-2)).tril().exp()).tril()
    attn = -((k_beta @ k.transpose(-1, -2)) * decay).masked_fill(mask, 0)
    for i in range(1, C):
        row, sub = attn[..., i, :i].clone(), attn[..., :i, :i].clone()
        attn[..., i, :i] = row + (row.unsqueeze(-1) * sub).sum(-2)
    attn = attn + torch.eye(C)
    value = attn @ v_beta
    k_cumdecay = attn @ (k_beta * g.exp().unsqueeze(-1))
    S = torch.zeros(h, dk, dv)
    out = torch.zeros_like(value)
    strict = torch.triu(torch.ones(C, C, dtype=torch.bool), diagonal=1)
    for i in range(q.shape[1]):
        qi, ki = q[:, i], k[:, i]
        a = (qi @ ki.transpose(-1, -2) * decay[:, i]).masked_fill_(strict, 0)
        v_new = value[:, i] - k_cumdecay[:, i] @ S
        out[:, i] = (qi * g[:, i, :, None].exp()) @ S + a @ v_new
        S = S * g[:, i, -1, None, None].exp() + (ki * (g[:, i, -1, None] - g[:, i]).exp()[..., None]).transpose(-1, -2) @ v_new
    return out.reshape(h, -1, dv)[:, :n], S


def gated_norm(o, z, w, eps):
    """Qwen3NextRMSNormGated: o * rsqrt(mean(o^2) + eps) * weight * silu(z), each row of d_v numbers."""
    variance = o.pow(2).mean(-1, keepdim=True)
    return w * (o * torch.rsqrt(variance + eps)) * F.silu(z)


def mixer(x, p, out, checks):
    """Qwen3NextGatedDeltaNet.forward on the lesson's projections: out's heads, gdn_conv, gdn_z, concat, output."""
    gd = p["gdn"]
    n = x.shape[0]
    h, g = p["heads"], p["kv_heads"]
    q, k, v = out["Q"], out["K"], out["V"]
    dk, dv = q.shape[1] // h, v.shape[1] // g
    w = T(gd["conv1d"])
    mixed = conv(torch.cat((q, k, v), dim=-1), w)
    if checks is not None:
        loop = torch.zeros_like(mixed)
        src = torch.cat((q, k, v), dim=-1)
        K = w.shape[0]
        for t in range(n):
            for s in range(K):
                if t - K + 1 + s >= 0:
                    loop[t] += w[s] * src[t - K + 1 + s]
        agree("the conv1d as a loop", F.silu(loop), mixed, 1e-12)
    cq, ck, cv = torch.split(mixed, [h * dk, g * dk, g * dv], dim=-1)
    qh = l2norm(cq.view(n, h, dk)).transpose(0, 1)                                    # [h, n, dk]
    kh = l2norm(ck.view(n, g, dk)).repeat_interleave(h // g, dim=1).transpose(0, 1)
    vh = cv.view(n, g, dv).repeat_interleave(h // g, dim=1).transpose(0, 1)
    beta = torch.sigmoid(x @ T(gd["W_b"])).T                                           # [h, n]
    gg = (-torch.exp(T(gd["A_log"]).reshape(-1)) * F.softplus(x @ T(gd["W_a"]) + T(gd["dt_bias"]).reshape(-1))).T
    o, recall, delta, states = recurrent(qh, kh, vh, gg, beta)
    oc, Sc = chunked(qh, kh, vh, gg, beta, gd["chunk_size"])
    if checks is not None:
        agree("Gated DeltaNet mixer: chunked = recurrent", oc, o, 1e-12)
        agree("Gated DeltaNet mixer: the last states", Sc, states[:, -1], 1e-12)
        for i in range(h):
            o2, _, _, S2 = lin.gdn_recurrent(qh[i] / dk ** 0.5, kh[i], vh[i], gg[i], beta[i])
            agree("Gated DeltaNet mixer: make_reference_linear's recurrence", o2, o[i], 1e-12)
        checks.add("gated_deltanet_mixer")
    z = x @ T(gd["W_z"])
    zh = z.view(n, h, dv).transpose(0, 1)
    eps = gd.get("eps", 1e-6)
    gated = gated_norm(o, zh, T(gd["norm"]).reshape(-1), eps)
    rms = torch.sqrt(o.pow(2).mean(-1, keepdim=True) + eps)
    for i in range(h):
        out["heads"][i].update(gdn_q=qh[i] / dk ** 0.5, gdn_k=kh[i], gdn_beta=beta[i][:, None], gdn_g=gg[i][:, None],
                               gdn_recall=recall[i], gdn_delta=delta[i], gdn_out=o[i], gdn_out_chunk=oc[i],
                               gdn_state=states[i, -1], gdn_states=states[i].reshape(n, dk * dv), gdn_rms=rms[i],
                               gdn_gated=gated[i])
    out["gdn_conv"], out["gdn_z"] = mixed, z
    # What each kind of layer caches, in numbers: added per token, then at n, 4096 and 262144 tokens. Gated DeltaNet:
    # the conv's last K - 1 rows of [Q | K | V] and a dk x dv state a head; full attention: a key and a value row
    # a token; then Qwen3-Next-80B-A3B's (linear: 16 key heads, 32 value heads of 128, kernel 4; full: 2 kv heads of 256).
    def row(fixed, per):
        return [per] + [fixed + per * t for t in (n, 4096, 262144)]
    out["gdn_cache"] = torch.tensor([row((w.shape[0] - 1) * mixed.shape[1] + h * dk * dv, 0), row(0, g * (dk + dv)),
                                     row(3 * (2 * 16 * 128 + 32 * 128) + 32 * 128 * 128, 0), row(0, 2 * (256 + 256))],
                                    dtype=torch.float64)
    concat = gated.transpose(0, 1).reshape(n, h * dv)
    out["concat"] = concat
    o = v4.linear(concat, p["W_o"], p.get("b_o")) if p.get("W_o") is not None else concat
    out["output"] = o
    return o


_lin_attention = v4.attention


def attention(x, p, s, out, checks):
    gd = p["gdn"]
    if not (gd and gd.get("mixer")):
        o = _lin_attention(x, p, s, out, checks)
        if p.get("W_gate") is None:
            return o
        # a full-attention layer of the hybrid, gated as Qwen3NextAttention.forward gates it:
        # attn_output = attn_output * torch.sigmoid(gate), then o_proj (W_gate: the gate's half of q_proj)
        out["gate"] = x @ p["W_gate"]
        out["gate_sig"] = torch.sigmoid(out["gate"])
        out["gated"] = out["concat"] * out["gate_sig"]
        o = v4.linear(out["gated"], p["W_o"], p.get("b_o"))
        out["output"] = o
        return o
    p["gdn"] = None                    # softmax attention as v4 computes it (still in the dump), then the mixer
    try:
        _lin_attention(x, p, s, out, checks)
    finally:
        p["gdn"] = gd
    return mixer(x, p, out, checks)


v4.attention = attention
_lin_reference, _lin_read_lesson = v4.reference, v4.read_lesson


def read_lesson(path, override=None):
    """make_reference_linear's reader, with each layer's W_gate (its own, else the top level's; false: none)."""
    L, s, params = _lin_read_lesson(path, override)
    J = lesson_json(path, override)
    for p, lay in zip(params, J.get("layers") or [{}]):
        wg = dict(J, **lay).get("W_gate")
        p["W_gate"] = T(wg) if wg else None
    return L, s, params


v4.read_lesson = read_lesson


def reference(path, override=None):
    """make_reference_linear's reference, with "mixer": true and eps in a mixer layer's "gated_deltanet"."""
    ref = _lin_reference(path, override)
    _, s, params = read_lesson(path, override)
    for at, p in zip([lay["attn"] for lay in ref["layers"]] if ref.get("layers") else [ref], params):
        if p["gdn"] and p["gdn"].get("mixer"):
            at["gated_deltanet"].update(mixer=True, eps=p["gdn"].get("eps", 1e-6))
    return ref


v4.reference = reference


# ------------------------------------------------------------------ the lessons

def gdn(g, d, h, dk, dv, kv, K, chunk, eps=None):
    rnd, rvec = v4.rnd, v4.rvec
    o = {"W_a": rnd(g, d, h), "W_b": rnd(g, d, h), "A_log": rvec(g, h, -1.0, 1.0), "dt_bias": rvec(g, h, -0.5, 1.0),
         "chunk_size": chunk, "mixer": True, "conv1d": rnd(g, K, h * dk + kv * (dk + dv), 0.5),
         "W_z": rnd(g, d, h * dv), "norm": rvec(g, dv)}
    if eps is not None:
        o["eps"] = eps
    return o


def lessons():
    g = torch.Generator().manual_seed(2424)
    rnd, rvec = v4.rnd, v4.rvec
    out = {}
    # 1. One head, kernel 4 (Qwen3-Next's), chunks of 2 (the last one short), W_o: the layer's output is the mixer's.
    n, d, dk = 5, 4, 3
    out["mixer_plain"] = {
        "attnviz": 2, "title": {"en": "Gated DeltaNet as the mixer, one head", "zh": "Gated DeltaNet 作为混合器：一个头"},
        "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d), "W_q": rnd(g, d, dk), "W_k": rnd(g, d, dk),
        "W_v": rnd(g, d, dk), "W_o": rnd(g, dk, d), "mask": "causal", "gated_deltanet": gdn(g, d, 1, dk, dk, 1, 4, 2)}
    # 2. Two heads on one key/value head, d_k != d_v, kernel 3, chunks of 3, eps 1e-5.
    n, d, h, kv, dk, dv = 7, 4, 2, 1, 2, 3
    out["mixer_gqa_chunk3"] = {
        "attnviz": 2, "title": {"en": "Gated DeltaNet as the mixer, two heads on one key/value head",
                                "zh": "Gated DeltaNet 作为混合器：两个头共用一个键/值头"},
        "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d), "heads": h, "kv_heads": kv,
        "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, kv * dk), "W_v": rnd(g, d, kv * dv), "W_o": rnd(g, h * dv, d),
        "mask": "causal", "gated_deltanet": gdn(g, d, h, dk, dv, kv, 3, 3, 1e-5)}
    # 3. make_reference_linear.py's two pre-norm RMSNorm/SwiGLU layers (deltanet_block_layers), each Gated DeltaNet
    #    now its layer's mixer (x = N1(x)): the residual reads it.
    top = lin.lessons()["deltanet_block_layers"]
    top["title"] = {"en": "Gated DeltaNet as the mixer of two pre-norm layers",
                    "zh": "两层前置归一化中作为混合器的 Gated DeltaNet"}
    for lay in (top, top["layers"][1]):
        d, hd = len(top["X"][0]), len(lay["gated_deltanet"]["A_log"])
        dk = len(lay["W_q"][0]) // hd
        lay["gated_deltanet"].update({k: v for k, v in gdn(g, d, hd, dk, dk, hd, 4, 4).items()
                                      if k in ("mixer", "conv1d", "W_z", "norm")})
    out["mixer_block_layers"] = top
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--all"] and len(sys.argv) == 3:   # the lessons, then each one's NAME.ref.json beside it
        write_lessons(sys.argv[2], lessons())
        write_references(sys.argv[2], reference)
    else:
        sys.exit(v4.main(sys.argv))
