#!/usr/bin/python3
"""Independent reference numbers for issue 24: Gated DeltaNet as the mixer with
more value heads than key heads ("gated_deltanet": {"v_heads": h·r}), as
Qwen3-Next has them (linear_num_key_heads 16, linear_num_value_heads 32),
computed with PyTorch in float64:

    make_reference_deltanet3.py --all tests/golden/deltanet3   # the lessons and every NAME.ref.json

Written from the reference code below and lessons/FORMAT.md, not from the C
code. A layer without "v_heads" is make_reference_deltanet2.py's, imported and
unchanged; with it, this script's mixer() follows
Qwen3NextGatedDeltaNet.forward in transformers'
src/transformers/models/qwen3_next/modeling_qwen3_next.py (the file at commit
01cdc6081c7500f9e50c98b1b943c90ecb665db3):

  fix_query_key_value_ordering: value [b, sq, ng, np/ng * hn] -> [b, sq, np, hn], b and a -> [b, sq, num_v_heads]
        (value head j is key head j // r's (r = num_v_heads // num_k_heads) sub-head j % r: the lesson's W_v,
         W_z, W_a, W_b, A_log and dt_bias are already in that order, value head j at column j)
  forward:
        mixed_qkv = torch.cat((query, key, value), dim=-1); F.silu(self.conv1d(mixed_qkv)[:, :, :seq_len])
        query, key, value = torch.split(mixed_qkv, [self.key_dim, self.key_dim, self.value_dim], dim=-1)
        query = query.reshape(..., -1, self.head_k_dim); key likewise; value = value.reshape(..., -1, self.head_v_dim)
        beta = b.sigmoid(); g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)
        if self.num_v_heads // self.num_k_heads > 1:
            query = query.repeat_interleave(self.num_v_heads // self.num_k_heads, dim=2)
            key = key.repeat_interleave(self.num_v_heads // self.num_k_heads, dim=2)
        core_attn_out, _ = self.chunk_gated_delta_rule(query, key, value, g=g, beta=beta, ...,
                                                       use_qk_l2norm_in_kernel=True)
        core_attn_out = core_attn_out.reshape(-1, core_attn_out.shape[-1]); z = z.reshape(-1, z.shape[-1])
        core_attn_out = self.norm(core_attn_out, z)          (Qwen3NextRMSNormGated over head_v_dim)
        output = self.out_proj(core_attn_out.reshape(b, sq, -1))
  (the recurrence, the chunked form and the gated norm: make_reference_deltanet2.py's recurrent(),
   chunked() and gated_norm(), which follow torch_recurrent_gated_delta_rule,
   torch_chunk_gated_delta_rule and Qwen3NextRMSNormGated.)

attnviz shows the lesson's h heads (num_k_heads): head i's matrices hold its r
value heads side by side, so the dump's per-head gdn_beta, gdn_g and gdn_rms
are n x r (value head i·r + s in column s), gdn_recall, gdn_delta, gdn_out,
gdn_out_chunk and gdn_gated n x r·d_v', gdn_state d_k x r·d_v' (value head s's
state in columns s·d_v' ...), gdn_states row t that state flattened; gdn_q and
gdn_k the head's (each of its r repeats is the same).
Cross-checks (stderr): chunked = recurrent (1e-12); each value head again with
make_reference_linear.py's gdn_recurrent; value head j's q is key head j // r's.

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_deltanet2 as d2  # noqa: E402  (patches v4 with the mixer)
from lessonfiles import write_lessons, write_references  # noqa: E402

v4, lin = d2.v4, d2.lin
torch.set_default_dtype(torch.float64)
T, agree = v4.T, v4.agree
_d2_mixer = d2.mixer


def mixer(x, p, out, checks):
    """Qwen3NextGatedDeltaNet.forward with num_v_heads = v_heads, num_k_heads = the lesson's heads."""
    gd = p["gdn"]
    if not gd.get("v_heads"):
        return _d2_mixer(x, p, out, checks)
    n = x.shape[0]
    h = p["heads"]
    assert p["kv_heads"] == h, "v_heads: q and k have the same heads"
    Hv = gd["v_heads"]
    r = Hv // h
    q, k, v = out["Q"], out["K"], out["V"]
    dk, dv = q.shape[1] // h, v.shape[1] // Hv                       # head_k_dim, head_v_dim
    w = T(gd["conv1d"])
    mixed = d2.conv(torch.cat((q, k, v), dim=-1), w)
    query, key, value = torch.split(mixed, [h * dk, h * dk, Hv * dv], dim=-1)
    query, key, value = query.reshape(n, h, dk), key.reshape(n, h, dk), value.reshape(n, Hv, dv)
    beta = (x @ T(gd["W_b"])).sigmoid()                               # [n, Hv]
    g = -T(gd["A_log"]).reshape(-1).exp() * F.softplus(x @ T(gd["W_a"]) + T(gd["dt_bias"]).reshape(-1))
    if r > 1:
        query = query.repeat_interleave(r, dim=1)
        key = key.repeat_interleave(r, dim=1)
    qh, kh, vh = d2.l2norm(query).transpose(0, 1), d2.l2norm(key).transpose(0, 1), value.transpose(0, 1)  # [Hv, n, d]
    o, recall, delta, states = d2.recurrent(qh, kh, vh, g.T, beta.T)
    oc, Sc = d2.chunked(qh, kh, vh, g.T, beta.T, gd["chunk_size"])
    z = x @ T(gd["W_z"])
    eps = gd.get("eps", 1e-6)
    gated = d2.gated_norm(o, z.reshape(n, Hv, dv).transpose(0, 1), T(gd["norm"]).reshape(-1), eps)   # [Hv, n, dv]
    rms = torch.sqrt(o.pow(2).mean(-1) + eps)                                                       # [Hv, n]
    if checks is not None:
        agree("v_heads: chunked = recurrent", oc, o, 1e-12)
        agree("v_heads: the last states", Sc, states[:, -1], 1e-12)
        for j in range(Hv):
            o2, _, _, S2 = lin.gdn_recurrent(qh[j] / dk ** 0.5, kh[j], vh[j], g[:, j], beta[:, j])
            agree("v_heads: make_reference_linear's recurrence", o2, o[j], 1e-12)
            agree("v_heads: q of value head j is key head j // r's", qh[j], d2.l2norm(mixed[:, (j // r) * dk:(j // r + 1) * dk]), 0)
        checks.add("gated_deltanet_v_heads")

    def side(t):                                       # [r, n, c] -> n x r·c: a head's value heads side by side
        return t.permute(1, 0, 2).reshape(n, -1)
    for i in range(h):
        s = slice(i * r, (i + 1) * r)
        out["heads"][i].update(
            gdn_q=qh[i * r] / dk ** 0.5, gdn_k=kh[i * r], gdn_beta=beta[:, s], gdn_g=g[:, s],
            gdn_recall=side(recall[s]), gdn_delta=side(delta[s]), gdn_out=side(o[s]), gdn_out_chunk=side(oc[s]),
            gdn_state=states[s, -1].permute(1, 0, 2).reshape(dk, r * dv),
            gdn_states=states[s].permute(1, 2, 0, 3).reshape(n, dk * r * dv),
            gdn_rms=rms[s].T, gdn_gated=side(gated[s]))
    out["gdn_conv"], out["gdn_z"] = mixed, z

    def row(fixed, per):
        return [per] + [fixed + per * t for t in (n, 4096, 262144)]
    out["gdn_cache"] = torch.tensor([row((w.shape[0] - 1) * mixed.shape[1] + Hv * dk * dv, 0), row(0, h * (dk + r * dv)),
                                     row(3 * (2 * 16 * 128 + 32 * 128) + 32 * 128 * 128, 0), row(0, 2 * (256 + 256))],
                                    dtype=torch.float64)
    concat = gated.transpose(0, 1).reshape(n, Hv * dv)
    out["concat"] = concat
    o = v4.linear(concat, p["W_o"], p.get("b_o")) if p.get("W_o") is not None else concat
    out["output"] = o
    return o


d2.mixer = mixer
_d2_reference = v4.reference


def reference(path, override=None):
    """make_reference_deltanet2's reference, with "v_heads" in a layer's "gated_deltanet" when the lesson gives it."""
    ref = _d2_reference(path, override)
    _, s, params = v4.read_lesson(path, override)
    for at, p in zip([lay["attn"] for lay in ref["layers"]] if ref.get("layers") else [ref], params):
        if p["gdn"] and p["gdn"].get("v_heads"):
            at["gated_deltanet"]["v_heads"] = p["gdn"]["v_heads"]
    return ref


v4.reference = reference


# ------------------------------------------------------------------ the lessons

def lessons():
    g = torch.Generator().manual_seed(2425)
    rnd, rvec = v4.rnd, v4.rvec
    out = {}

    def gdn(d, h, dk, dv, r, K, chunk, eps=None):
        o = {"W_a": rnd(g, d, h * r), "W_b": rnd(g, d, h * r), "A_log": rvec(g, h * r, -1.0, 1.0),
             "dt_bias": rvec(g, h * r, -0.5, 1.0), "chunk_size": chunk, "mixer": True, "v_heads": h * r,
             "conv1d": rnd(g, K, 2 * h * dk + h * r * dv, 0.5), "W_z": rnd(g, d, h * r * dv), "norm": rvec(g, dv)}
        if eps is not None:
            o["eps"] = eps
        return o
    # 1. Qwen3-Next's ratio: 2 key heads, 4 value heads (r = 2), head_v_dim 2 != head_k_dim 3, kernel 4, chunks of 3.
    n, d, h, dk, dv, r = 7, 4, 2, 3, 2, 2
    out["vheads_r2"] = {
        "attnviz": 2, "title": {"en": "Gated DeltaNet with two value heads to each key head",
                                "zh": "Gated DeltaNet：每个键头对应两个值头"},
        "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d), "heads": h,
        "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, h * dk), "W_v": rnd(g, d, h * r * dv), "W_o": rnd(g, h * r * dv, d),
        "mask": "causal", "gated_deltanet": gdn(d, h, dk, dv, r, 4, 3)}
    # 2. One key head serving three value heads, kernel 2, chunks of 2 (the last one short), eps 1e-5.
    n, d, h, dk, dv, r = 5, 3, 1, 2, 2, 3
    out["vheads_r3_one_key_head"] = {
        "attnviz": 2, "title": {"en": "Gated DeltaNet: one key head, three value heads",
                                "zh": "Gated DeltaNet：一个键头，三个值头"},
        "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d),
        "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, h * dk), "W_v": rnd(g, d, h * r * dv), "W_o": rnd(g, h * r * dv, d),
        "mask": "causal", "gated_deltanet": gdn(d, h, dk, dv, r, 2, 2, 1e-5)}
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--all"] and len(sys.argv) == 3:
        write_lessons(sys.argv[2], lessons())
        write_references(sys.argv[2], reference)
    else:
        sys.exit(v4.main(sys.argv))
