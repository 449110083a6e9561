#!/usr/bin/python3
"""Independent reference numbers for RoPE's variants (issue 23 §2): partial
RoPE, NoPE layers and RoPE scaling for long context (linear, dynamic NTK,
YaRN, llama3), computed with PyTorch in float64 from the lesson files,
following the Hugging Face transformers code (not attnviz's C code):

    make_reference_ropescale.py --lessons DIR          # write the lessons of tests/golden/ropescale
    make_reference_ropescale.py LESSON.json > LESSON.ref.json
    make_reference_ropescale.py lessons/ropescale.json > tests/golden/lessons/ropescale.ref.json
    tests/golden/ropescale/make_all.sh                  # both, for every lesson there

Lines followed (transformers, src/transformers/modeling_rope_utils.py; the
stored copy read was huggingface/transformers at 0044e3b, and the v5 layout of
the same functions where it differs: "original_max_position_embeddings" and
"truncate" inside rope_parameters):

  _compute_default_rope_parameters:
      dim = int(head_dim * partial_rotary_factor)
      inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))   -> inv_default()
  _compute_linear_scaling_rope_parameters:  inv_freq /= factor                             -> "linear"
  _compute_dynamic_ntk_parameters:
      seq_len = max(seq_len, max_position_embeddings)
      base = base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2))
    with dynamic_rope_update's seq_len = max(position_ids) + 1 (the lesson's n)         -> "dynamic"
  _compute_yarn_parameters:
      get_mscale(scale, mscale=1) = 0.1 * mscale * math.log(scale) + 1.0 (1.0 for scale <= 1)
      attention_factor, unless given: get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
          when mscale and mscale_all_dim are both given and non-zero (DeepSeek's), else get_mscale(factor)
      beta_fast = 32, beta_slow = 1 by default
      find_correction_dim(num_rotations, dim, base, L0) = (dim * log(L0 / (num_rotations * 2 * pi))) / (2 * log(base))
      find_correction_range: low = floor(..beta_fast..), high = ceil(..beta_slow..) when truncate;
          max(low, 0), min(high, dim - 1)
      linear_ramp_factor(min, max, dim // 2): clamp((arange - min) / (max - min), 0, 1) (max += 0.001 if equal)
      inv_freq_extrapolation_factor = 1 - ramp
      inv_freq = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor  -> "yarn"
  _compute_llama3_parameters:
      low_freq_wavelen = L0 / low_freq_factor; high_freq_wavelen = L0 / high_freq_factor
      wavelen = 2 * pi / inv_freq; where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
      smooth_factor = (L0 / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
      medium: (1 - smooth) * inv_freq / factor + smooth * inv_freq                         -> "llama3"
  models/llama/modeling_llama.py:
      LlamaRotaryEmbedding.forward: emb = cat((freqs, freqs)); cos = emb.cos() * attention_scaling;
          sin = emb.sin() * attention_scaling
      rotate_half, apply_rotary_pos_emb: q * cos + rotate_half(q) * sin
      repeat_kv (query head i reads key/value head i // n_rep); eager_attention_forward
  partial RoPE (models/glm/modeling_glm.py, stablelm, phi): q_rot, q_pass = q[..., :rotary_dim],
      q[..., rotary_dim:]; cat(rotated q_rot, q_pass) -> rope()
  NoPE layers (models/smollm3/modeling_smollm3.py): use_rope = no_rope_layers[layer_idx];
      RoPE applied only where it is set -> a layer's "rope": false
  "interleaved": LLaMA's original complex form (pairs 2i, 2i+1 times e^{i theta})

Cross-check (stderr): the half style again as complex numbers (torch.polar).
Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import math
import os
import sys

import torch

from make_reference_v4 import plain   # tensors, dicts and lists as JSON's lists (a helper, no numbers)
from lessonfiles import write_lessons

torch.set_default_dtype(torch.float64)


def inv_default(base, dim):
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).double() / dim))


def rope_params(rope, head_dim, seq_len):
    """(inv_freq, attention_factor, rotary dim) as transformers computes them."""
    base = float(rope.get("base", 10000.0))
    dim = int(head_dim * float(rope.get("partial_rotary_factor", 1.0)))
    sc = rope.get("scaling")
    if sc is None:
        return inv_default(base, dim), 1.0, dim
    kind, factor = sc["type"], float(sc["factor"])
    if kind == "linear":
        return inv_default(base, dim) / factor, 1.0, dim
    L0 = sc["original_max_position_embeddings"]
    if kind == "dynamic":
        L = max(seq_len, L0)
        b = base * ((factor * L / L0) - (factor - 1)) ** (dim / (dim - 2))
        return inv_default(b, dim), 1.0, dim
    if kind == "yarn":
        af = sc.get("attention_factor")

        def get_mscale(scale, m=1.0):
            return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

        if af is None:
            ms, ms_all = sc.get("mscale"), sc.get("mscale_all_dim")
            af = get_mscale(factor, ms) / get_mscale(factor, ms_all) if ms and ms_all else get_mscale(factor)
        beta_fast, beta_slow = sc.get("beta_fast") or 32, sc.get("beta_slow") or 1

        def corr_dim(rot):
            return (dim * math.log(L0 / (rot * 2 * math.pi))) / (2 * math.log(base))

        low, high = corr_dim(beta_fast), corr_dim(beta_slow)
        if sc.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low), 0, 1)
        pos_freqs = base ** (torch.arange(0, dim, 2).double() / dim)
        extra, inter = 1.0 / pos_freqs, 1.0 / (factor * pos_freqs)
        ef = 1 - ramp
        return inter * (1 - ef) + extra * ef, float(af), dim
    if kind == "llama3":
        inv = inv_default(base, dim)
        lo, hi = float(sc["low_freq_factor"]), float(sc["high_freq_factor"])
        low_wl, high_wl = L0 / lo, L0 / hi
        wl = 2 * math.pi / inv
        out = torch.where(wl > low_wl, inv / factor, inv)
        smooth = (L0 / wl - lo) / (hi - lo)
        smoothed = (1 - smooth) * out / factor + smooth * out
        medium = ~(wl < high_wl) * ~(wl > low_wl)
        return torch.where(medium, smoothed, out), 1.0, dim
    raise ValueError("unknown scaling " + kind)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope(x, heads, d_k, rope_cfg, seq_len, positions):
    """x: rows × heads·d_k at the given positions, each head's first rotary dim columns turned."""
    inv, af, dim = rope_params(rope_cfg, d_k, seq_len)
    pos = torch.tensor(positions, dtype=torch.float64)
    freqs = pos[:, None] * inv[None, :]                      # rows × dim/2
    out = x.clone()
    interleaved = rope_cfg.get("style", "half") == "interleaved"
    for h in range(heads):
        q = x[:, h * d_k:(h + 1) * d_k]
        q_rot, q_pass = q[:, :dim], q[:, dim:]
        if interleaved:
            z = torch.view_as_complex(q_rot.reshape(q.shape[0], dim // 2, 2).contiguous())
            r = torch.view_as_real(z * torch.polar(torch.full_like(freqs, af), freqs)).reshape(q.shape[0], dim)
        else:
            emb = torch.cat((freqs, freqs), dim=-1)
            cos, sin = emb.cos() * af, emb.sin() * af
            r = q_rot * cos + rotate_half(q_rot) * sin
            # cross-check: the same as complex numbers (pairs i, i + dim/2)
            z = torch.complex(q_rot[:, :dim // 2], q_rot[:, dim // 2:]) * torch.polar(torch.full_like(freqs, af), freqs)
            if not torch.allclose(torch.cat((z.real, z.imag), dim=-1), r, rtol=1e-12, atol=1e-12):
                raise SystemExit("rope: the complex cross-check disagrees")
        out[:, h * d_k:(h + 1) * d_k] = torch.cat((r, q_pass), dim=-1)
    return out, inv, af, dim


def angle_tables(rope_cfg, d_k, n, seq_len, off):
    """angles_plain: unscaled RoPE over the turned columns; angles: what the layer turns by (0: passes through)."""
    interleaved = rope_cfg.get("style", "half") == "interleaved"
    inv, _, dim = rope_params(rope_cfg, d_k, seq_len)
    plain = inv_default(float(rope_cfg.get("base", 10000.0)), dim)
    P, A = torch.zeros(n, d_k), torch.zeros(n, d_k)
    for c in range(dim):
        i = c // 2 if interleaved else c % (dim // 2)
        P[:, c] = torch.arange(n, dtype=torch.float64) * plain[i]
        if not off:
            A[:, c] = torch.arange(n, dtype=torch.float64) * inv[i]
    return P, A


def T(rows):
    return rows if isinstance(rows, torch.Tensor) else torch.tensor(rows, dtype=torch.float64)


def attention(x, p, L, off, out):
    h = p.get("heads", 1)
    g = p.get("kv_heads", h)
    Wq, Wk, Wv = T(p["W_q"]), T(p["W_k"]), T(p["W_v"])
    d_k, d_v = Wq.shape[1] // h, Wv.shape[1] // g
    n = x.shape[0]
    Q, K, V = x @ Wq, x @ Wk, x @ Wv
    out.update({"Q": Q, "K": K, "V": V})
    Qr, Kr = Q, K
    if L.get("rope"):
        rc = L["rope"] if isinstance(L["rope"], dict) else {}
        if not off:
            Qr, _, _, _ = rope(Q, h, d_k, rc, n, list(range(n)))
            Kr, _, af, _ = rope(K, g, d_k, rc, n, list(range(n)))
        out["Q_rot"], out["K_rot"] = Qr, Kr
        if "partial_rotary_factor" in rc or "scaling" in rc:
            out["angles_plain"], out["angles"] = angle_tables(rc, d_k, n, n, off)
            out["rope_attention_factor"] = rope_params(rc, d_k, n)[1]
    causal = L.get("mask") == "causal"
    heads, outs = [], []
    for i in range(h):
        j = i // (h // g)
        s = Qr[:, i * d_k:(i + 1) * d_k] @ Kr[:, j * d_k:(j + 1) * d_k].T
        z = s / math.sqrt(d_k)
        if causal:
            z = z.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool), 1), float("-inf"))
        w = torch.softmax(z, dim=-1)
        o = w @ V[:, j * d_v:(j + 1) * d_v]
        heads.append({"scores": s, "scaled": s / math.sqrt(d_k), "weights": w, "output": o})
        outs.append(o)
    concat = torch.cat(outs, dim=1)
    out["heads"], out["concat"] = heads, concat
    out["output"] = concat @ T(p["W_o"]) if "W_o" in p else concat
    return out["output"], (Qr, Kr, V, h, g, d_k, d_v)


def grads(L):
    """With "backward": {"target": …}: L = ½ Σ (output − target)², the gradients by autograd
    (through RoPE's scaled, partial rotation: the rotation's transpose, times the attention factor)."""
    P = dict(L)
    X = T(L["X"]).clone().requires_grad_(True)
    for key in ("W_q", "W_k", "W_v", "W_o"):
        if key in L:
            P[key] = T(L[key]).clone().requires_grad_(True)
    out = {}
    y, _ = attention(X, P, L, False, out)
    for key in ("Q", "K", "V"):
        out[key].retain_grad()
    loss = 0.5 * ((y - T(L["backward"]["target"])) ** 2).sum()
    loss.backward()
    g = {"Q": out["Q"].grad, "K": out["K"].grad, "V": out["V"].grad, "X": X.grad}
    g.update({key: P[key].grad for key in ("W_q", "W_k", "W_v", "W_o") if key in L})
    return {"loss": float(loss), "grad": g}


def decode(x, p, L, parts):
    """Each step t from its own row, its q and k turned at t, against the cache of rows 0 … t."""
    Qr, Kr, V, h, g, d_k, d_v = parts
    steps = []
    for t in range(x.shape[0]):
        hs = []
        outs = []
        for i in range(h):
            j = i // (h // g)
            q = Qr[t:t + 1, i * d_k:(i + 1) * d_k]
            Kc = Kr[:t + 1, j * d_k:(j + 1) * d_k]
            s = q @ Kc.T
            w = torch.softmax(s / math.sqrt(d_k), dim=-1)
            o = w @ V[:t + 1, j * d_v:(j + 1) * d_v]
            hs.append({"scores": s, "weights": w, "weighted": o})
            outs.append(o)
        c = torch.cat(outs, dim=1)
        steps.append({"t": t, "q": Qr[t:t + 1], "K_cache": Kr[:t + 1], "V_cache": V[:t + 1], "heads": hs,
                      "output": c @ T(p["W_o"]) if "W_o" in p else c})
    return steps


def reference(path):
    """The lesson's numbers, and its "compare" variant's (its keys put over the lesson's; of a stack,
    attnviz compares the top level's layer alone) under "compare"."""
    L = json.load(open(path, encoding="utf-8"))
    R = reference_of(L)
    if "compare" in L:
        V = {k: v for k, v in L.items() if k not in ("compare", "steps", "layers")}
        V.update({k: v for k, v in L["compare"].items() if k != "label"})
        R["compare"] = reference_of(V)
    return R


def reference_of(L):
    x = T(L["X"])
    R = {"tokens": L["tokens"], "X": x}
    if "layers" not in L:
        y, parts = attention(x, L, L, False, R)
        if L.get("decode"):
            R["decode"] = decode(x, L, L, parts)
        if "backward" in L:
            R.update(grads(L))
        return R
    R["layers"] = []
    for lay in L["layers"]:
        p = dict(L)
        p.update({k: v for k, v in lay.items() if k != "rope"})
        off = lay.get("rope", True) is False
        attn = {}
        x_in = x
        x, parts = attention(x, p, L, off, attn)
        R["layers"].append({"attn": attn, "output": x})
        if L.get("decode"):     # each layer's steps read its input rows, which are the full pass's (causal)
            R["layers"][-1]["decode"] = decode(x_in, p, L, parts)
    R["output"] = x
    return R


# ------------------------------------------------------------------ the lessons
def rnd(g, rows, cols):
    return [[round(float(v), 2) for v in row] for row in (torch.rand(rows, cols, generator=g) * 2 - 1)]


def lesson(g, n, d, h, g_kv, d_k, rope_cfg, mask="causal", wo=True, extra=None):
    L = {"attnviz": 2, "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d), "heads": h,
         "W_q": rnd(g, d, h * d_k), "W_k": rnd(g, d, g_kv * d_k), "W_v": rnd(g, d, g_kv * d_k), "mask": mask,
         "rope": rope_cfg}
    if g_kv != h:
        L["kv_heads"] = g_kv
    if wo:
        L["W_o"] = rnd(g, h * d_k, d)
    L.update(extra or {})
    return L


def lessons(folder):
    g = torch.Generator().manual_seed(23)
    out = {
        "linear_gqa": lesson(g, 6, 4, 2, 1, 4, {"base": 100, "scaling": {"type": "linear", "factor": 2}}),
        "dynamic_long": lesson(g, 7, 4, 1, 1, 8, {"base": 100, "scaling": {
            "type": "dynamic", "factor": 2, "original_max_position_embeddings": 4}}),
        "dynamic_short": lesson(g, 4, 4, 2, 2, 8, {"base": 100, "scaling": {
            "type": "dynamic", "factor": 2, "original_max_position_embeddings": 8}}),
        "yarn_partial_gqa": lesson(g, 6, 4, 2, 1, 16, {"base": 100, "partial_rotary_factor": 0.5, "scaling": {
            "type": "yarn", "factor": 4, "original_max_position_embeddings": 64}}),
        "yarn_options_interleaved": lesson(g, 5, 4, 2, 2, 8, {"base": 100, "style": "interleaved", "scaling": {
            "type": "yarn", "factor": 8, "original_max_position_embeddings": 32, "beta_fast": 16, "beta_slow": 2,
            "attention_factor": 1.25, "truncate": False}}),
        "llama3_gqa": lesson(g, 6, 4, 4, 2, 8, {"base": 10000, "scaling": {
            "type": "llama3", "factor": 8, "original_max_position_embeddings": 256, "low_freq_factor": 1,
            "high_freq_factor": 8}}),
        "partial_interleaved": lesson(g, 5, 4, 1, 1, 8, {"base": 10, "style": "interleaved",
                                                           "partial_rotary_factor": 0.25}),
        "decode_yarn_partial_gqa": lesson(g, 5, 4, 2, 1, 8, {"base": 100, "partial_rotary_factor": 0.5, "scaling": {
            "type": "yarn", "factor": 4, "original_max_position_embeddings": 16}}, extra={"decode": True}),
    }
    nope = lesson(g, 5, 4, 2, 1, 4, {"base": 100, "scaling": {"type": "yarn", "factor": 2,
                                                               "original_max_position_embeddings": 16}})
    nope["layers"] = [{}, {"W_q": rnd(g, 4, 8), "rope": False}, {"W_k": rnd(g, 4, 4)}]
    out["nope_layers_yarn_gqa"] = nope
    nope2 = lesson(g, 5, 4, 1, 1, 4, {"base": 100})
    nope2["layers"] = [{}, {}, {}, {"rope": False}]
    out["nope_every_4th"] = nope2
    out["backward_yarn_partial_gqa"] = lesson(g, 5, 4, 2, 1, 8, {"base": 100, "partial_rotary_factor": 0.5, "scaling": {
        "type": "yarn", "factor": 4, "original_max_position_embeddings": 16}})
    out["backward_yarn_partial_gqa"]["backward"] = {"target": rnd(g, 5, 4)}
    out["backward_llama3_interleaved"] = lesson(g, 4, 4, 2, 2, 8, {"base": 10000, "style": "interleaved", "scaling": {
        "type": "llama3", "factor": 8, "original_max_position_embeddings": 256, "low_freq_factor": 1,
        "high_freq_factor": 8}})
    out["backward_llama3_interleaved"]["backward"] = {"target": rnd(g, 4, 4)}
    dec = lesson(g, 5, 4, 2, 1, 8, {"base": 100, "partial_rotary_factor": 0.5, "scaling": {
        "type": "yarn", "factor": 4, "original_max_position_embeddings": 16}}, extra={"decode": True})
    dec["layers"] = [{}, {"W_q": rnd(g, 4, 16), "rope": False}]
    out["decode_nope_layers_yarn_gqa"] = dec
    # DeepSeek's YaRN: attention_factor = get_mscale(40, 1) / get_mscale(40, 0.707) (V3's numbers), and with both
    # equal (V2-Lite's), 1; only mscale given: get_mscale(factor) as without it
    out["yarn_mscale_ratio"] = lesson(g, 5, 4, 2, 1, 8, {"base": 100, "scaling": {
        "type": "yarn", "factor": 40, "original_max_position_embeddings": 16, "beta_fast": 32, "beta_slow": 1,
        "mscale": 1.0, "mscale_all_dim": 0.707}})
    out["yarn_mscale_equal_decode"] = lesson(g, 5, 4, 2, 2, 8, {"base": 100, "scaling": {
        "type": "yarn", "factor": 40, "original_max_position_embeddings": 16, "mscale": 0.707,
        "mscale_all_dim": 0.707}}, extra={"decode": True})
    out["yarn_mscale_alone"] = lesson(g, 4, 4, 1, 1, 8, {"base": 100, "scaling": {
        "type": "yarn", "factor": 4, "original_max_position_embeddings": 16, "mscale": 2.0}})
    write_lessons(folder, out)


def main(argv):
    if len(argv) == 3 and argv[1] == "--lessons":
        lessons(argv[2])
        return 0
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    json.dump(plain(reference(argv[1])), sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
