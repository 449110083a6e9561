#!/usr/bin/python3
"""Independent reference numbers for issue 11's keys of lesson format 2
(RoPE, grouped-query attention, ALiBi, sliding-window and combined masks,
decoding with a KV cache, FlashAttention's online softmax), computed with
PyTorch in float64.

    make_reference_v3.py LESSON.json > LESSON.ref.json
    make_reference_v3.py --expect-error PATH LESSON.json   # exit 0 iff the lesson is
                                                           # refused at PATH (tests/golden/v3/bad)
    tests/golden/v3/make_all.sh     # every reference in tests/golden/v3, and the bad lessons

Written from issue 11 (sections 1 and 3) and tests/golden/v3/README.md, not
from the C code. The PRNG, generated matrices, the version-1 masks, the
positional encoding and the JSON writer are make_reference.py's; biases,
the block (norms, FFN, residuals, layers, final norm) and their second,
independent forward are make_reference_v2.py's: an attention's settings
here carry their own forward ("attend", "alt_attend") that v2's layer code
calls.

How the numbers are made (the "main" path): stage by stage, head by head,
with torch operators: the projection, RoPE pair by pair (a cos - b sin,
a sin + b cos on index tensors), the key/value head floor(i / (h/g)) of each
query head, q.k^T, the scale, ALiBi's -slope*|i - j|, masked_fill, F.softmax
(0 for a row with no visible key), weights.V, concat, W_o. Decoding is a
separate loop that projects one row at a time and keeps a cache; the flash
tiles are the issue's recurrence written out tile by tile.

Cross-checks (any disagreement aborts; the checks that ran are printed on
stderr, one line per lesson):
  - "mask": the visibility matrix again, cell by cell in Python from each
    mask's rule (exact);
  - "rope": Q_rot and K_rot again as complex numbers (torch.view_as_complex /
    torch.complex times torch.polar, LLaMA's precompute_freqs_cis), and with
    the rotate_half formulation (HF LLaMA, half style) or rotate_every_two
    (GPT-J, interleaved); and the relative-position property: rotating every
    q and k by positions shifted by 5 leaves every score unchanged;
  - "alibi": the slopes again from the reference implementation's rule
    (geometric start*ratio^i, the closest power of two, then every other
    slope of twice that), the bias again cell by cell in Python, and, where
    every visible key is at or before its query, the weights again with the
    reference implementation's row-shifted bias +slope*j (softmax is shift
    invariant);
  - "einsum": a second forward: all heads at once with einsum, K and V heads
    expanded with repeat_interleave (GQA), RoPE in complex numbers, the loop
    mask and bias, a softmax by hand; for block lessons the whole stack through
    make_reference_v2.py's second forward with this attention in it;
  - "sdpa": torch's scaled-dot-product attention (torch 1.13's
    F._scaled_dot_product_attention, the predecessor of
    F.scaled_dot_product_attention) on the rotated q and k, K/V heads
    repeat_interleave'd, bias and mask as its float attn_mask (dot scores,
    fill -inf; a row with no visible key is not compared);
  - "mha": F.multi_head_attention_forward with W_k and W_v's columns repeated
    for each query head (GQA as plain multi-head attention), ALiBi and the mask
    as a per-head float attn_mask (no RoPE, dot scores scaled by 1/sqrt(d_k),
    fill -inf, h*d_k = h*d_v = d_model = d_src, W_o square or none; a row
    with no visible key is not compared);
  - "v2": a lesson without RoPE and ALiBi is rewritten as a plain version-2
    lesson (W_k, W_v, b_k, b_v with each key/value head repeated for its query
    heads, the combined mask as an n x m matrix) and run through
    make_reference_v2.py (which runs its own checks); every shared key must
    agree to 1e-12;
  - "decode": every decode step's output (and, in a block, the layer's output
    row) equals the full computation's row to 1e-12 (|a-b| <= 1e-12 (1 + |b|)),
    q and the cache rows equal Q_rot and K_rot's rows, the step's weights equal
    the full weights at the cached positions, the full weights are 0 at
    every position not in the cache, and the cache holds exactly positions
    max(0, t - w + 1) ... t (w the smallest window) or 0 ... t;
  - "flash": every head's flash output equals its standard output to 1e-12
    relative, and the last m and l of each row equal the row's maximum of the
    masked scores and the sum of exp(masked - that maximum).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch                      # noqa: E402
import torch.nn.functional as F   # noqa: E402

import make_reference as v1       # noqa: E402
import make_reference_v2 as v2    # noqa: E402
from make_reference import (LessonError, Pairs, english, fill_value, is_number,  # noqa: E402
                            matrix, rows, scale_factor, to_json)
from make_reference_v2 import CheckFailed, agree, shaped, vector, whole  # noqa: E402

torch.set_default_dtype(torch.float64)
NEG_INF = float("-inf")
TOL = 1e-10          # second implementations
EXACT_TOL = 1e-12    # decode and flash against the full computation (issue 11, section 5)
V3_KEYS = ("rope", "kv_heads", "alibi", "decode", "flash")
ATTN_KEYS = v2.ATTN_KEYS + ("kv_heads",)
TOP_KEYS = {"attnviz", "title", "summary", "steps", "compare", "tokens", "X", "positional", "source",
            "score", "scale", "mask", "mask_fill", "block", "layers"} | set(ATTN_KEYS) | set(V3_KEYS)


# ------------------------------------------------------------------ masks
def is_matrix_value(v):
    """A written matrix: a non-empty list whose first element is a list of numbers."""
    return isinstance(v, list) and bool(v) and isinstance(v[0], list) and all(is_number(x) for x in v[0])


def mask_parts(mask, where):
    """The lesson's "mask" -> a list of (single mask, its place)."""
    if isinstance(mask, list) and not is_matrix_value(mask):
        if not mask:
            raise LessonError("%s: an empty list of masks (give at least one, or \"none\")" % where)
        out = []
        for i, mk in enumerate(mask):
            w = "%s[%d]" % (where, i)
            if isinstance(mk, list) and not is_matrix_value(mk):
                raise LessonError("%s: a list of masks may not contain another list of masks" % w)
            out.append((mk, w))
        return out
    return [(mask, where)]


def single_visibility(mk, n, m, where):
    """One mask -> n x m bool (True = may attend), with tensor operators."""
    if isinstance(mk, dict) and "window" in mk:
        if len(mk) != 1:
            raise LessonError("%s: a window mask has the one key \"window\" (use a list to combine masks)" % where)
        w = mk["window"]
        if not is_number(w) or w != int(w) or w < 1:
            raise LessonError("%s.window: expected a whole number ≥ 1, got %r" % (where, w))
        if n != m:
            raise LessonError("%s: a window needs a square score matrix, but n = %d and m = %d" % (where, n, m))
        i = torch.arange(n).unsqueeze(1)
        j = torch.arange(m).unsqueeze(0)
        return (j <= i) & (i - j < int(w))
    if isinstance(mk, dict) and len(mk) != 1:
        raise LessonError("%s: a mask object has one key, \"padding\" or \"window\"" % where)
    return v1.visibility(mk, n, m, where)


def single_visibility_loops(mk, n, m):
    """The same, cell by cell in Python, straight from each mask's rule."""
    def allowed(i, j):
        if mk == "none":
            return True
        if mk == "causal":
            return j <= i
        if isinstance(mk, dict) and "padding" in mk:
            return mk["padding"][j] != 0
        if isinstance(mk, dict) and "window" in mk:
            return j <= i and i - j < mk["window"]
        return mk[i][j] != 0
    return torch.tensor([[allowed(i, j) for j in range(m)] for i in range(n)], dtype=torch.bool)


class MaskInfo:
    """What the loader made of "mask": the visibility, and what decoding needs."""

    def __init__(self, mask, n, m, where="mask"):
        self.parts = mask_parts(mask, where)
        vis = torch.ones(n, m, dtype=torch.bool)
        for mk, w in self.parts:
            vis = vis & single_visibility(mk, n, m, w)
        self.visible = vis
        self.causal = any(mk == "causal" for mk, _ in self.parts)
        windows = [int(mk["window"]) for mk, _ in self.parts if isinstance(mk, dict) and "window" in mk]
        self.window = min(windows) if windows else None
        self.any = any(mk != "none" for mk, _ in self.parts)

    def loops(self, n, m):
        vis = torch.ones(n, m, dtype=torch.bool)
        for mk, _ in self.parts:
            vis = vis & single_visibility_loops(mk, n, m)
        return vis


# ------------------------------------------------------------------- RoPE
def load_rope(value):
    if value is False or value is None:
        return None
    if value is True:
        return {"base": 10000.0, "style": "half"}
    if not isinstance(value, dict):
        raise LessonError('rope: expected true, false or {"base": …, "style": "half" | "interleaved"}')
    for k in value:
        if k not in ("base", "style"):
            raise LessonError("rope.%s: unknown key (rope has \"base\" and \"style\")" % k)
    base = value.get("base", 10000)
    if not is_number(base) or not base > 0 or not math.isfinite(float(base)):
        raise LessonError("rope.base: expected a number > 0, got %r" % (base,))
    style = value.get("style", "half")
    if style not in ("half", "interleaved"):
        raise LessonError('rope.style: expected "half" or "interleaved", got %s' % json.dumps(style))
    return {"base": float(base), "style": style}


def rope_pairs(d_k, style):
    """The column index tensors (a, b) of the d_k/2 pairs: (i, i + d_k/2) or (2i, 2i+1)."""
    half = d_k // 2
    if style == "half":
        a = torch.arange(half)
        return a, a + half
    a = torch.arange(0, d_k, 2)
    return a, a + 1


def rope_rotate(M, positions, heads, d_k, rope):
    """Each head's d_k columns of M rotated pair by pair: theta_i = p * base^(-2i/d_k),
    (a, b) -> (a cos - b sin, a sin + b cos)."""
    i = torch.arange(d_k // 2, dtype=torch.float64)
    inv = torch.pow(torch.tensor(rope["base"]), -2.0 * i / d_k)
    theta = positions.to(torch.float64).unsqueeze(1) * inv.unsqueeze(0)     # rows x d_k/2
    c, s = torch.cos(theta), torch.sin(theta)
    a, b = rope_pairs(d_k, rope["style"])
    out = M.clone()
    for hd in range(heads):
        x = M[:, hd * d_k:(hd + 1) * d_k]
        xa, xb = x[:, a], x[:, b]
        y = torch.empty_like(x)
        y[:, a] = xa * c - xb * s
        y[:, b] = xa * s + xb * c
        out[:, hd * d_k:(hd + 1) * d_k] = y
    return out


def rope_freqs(d_k, base):
    """LLaMA's precompute_freqs_cis frequencies: 1 / base^(2i/d_k)."""
    return 1.0 / (base ** (torch.arange(0, d_k, 2, dtype=torch.float64) / d_k))


def rope_complex(M, positions, heads, d_k, rope):
    """RoPE as a complex multiplication: pair -> a + ib, times e^(i theta)."""
    r = M.shape[0]
    x = M.reshape(r, heads, d_k)
    theta = torch.outer(positions.to(torch.float64), rope_freqs(d_k, rope["base"]))
    cis = torch.polar(torch.ones_like(theta), theta).unsqueeze(1)            # r x 1 x d_k/2
    if rope["style"] == "interleaved":
        xc = torch.view_as_complex(x.reshape(r, heads, d_k // 2, 2).contiguous())
        y = torch.view_as_real(xc * cis).reshape(r, heads * d_k)
    else:
        xc = torch.complex(x[..., :d_k // 2], x[..., d_k // 2:])
        yc = xc * cis
        y = torch.cat([yc.real, yc.imag], dim=-1).reshape(r, heads * d_k)
    return y


def rope_rotate_half(M, positions, heads, d_k, rope):
    """HF LLaMA's x*cos + rotate_half(x)*sin (half style), or GPT-J's
    rotate_every_two (interleaved)."""
    r = M.shape[0]
    x = M.reshape(r, heads, d_k)
    freqs = torch.outer(positions.to(torch.float64), rope_freqs(d_k, rope["base"]))
    if rope["style"] == "half":
        emb = torch.cat((freqs, freqs), dim=-1)
        rot = torch.cat((-x[..., d_k // 2:], x[..., :d_k // 2]), dim=-1)
    else:
        emb = torch.repeat_interleave(freqs, 2, dim=-1)
        rot = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    cos, sin = emb.cos().unsqueeze(1), emb.sin().unsqueeze(1)
    return (x * cos + rot * sin).reshape(r, heads * d_k)


# ------------------------------------------------------------------ ALiBi
def alibi_slopes(h):
    """Issue 11: 2^(-8(i+1)/h) for h a power of two; otherwise the paper's rule:
    c = the largest power of two below h, the c slopes of c heads, then the
    first h - c of the odd-numbered slopes of 2c heads, 2^(-8(2k+1)/(2c))."""
    if h & (h - 1) == 0:
        return [2.0 ** (-8.0 * (i + 1) / h) for i in range(h)]
    c = 1 << (h.bit_length() - 1)
    return [2.0 ** (-8.0 * (i + 1) / c) for i in range(c)] + \
        [2.0 ** (-8.0 * (2 * k + 1) / (2 * c)) for k in range(h - c)]


def alibi_slopes_reference_rule(h):
    """The rule as the ALiBi reference implementation states it
    (ofirpress/attention_with_linear_biases, fairseq/models/transformer.py,
    get_slopes): a geometric sequence start * ratio^i with
    start = ratio = 2^(-2^-(log2(h) - 3)); for h not a power of two, that of
    the closest power of two below, then every other slope of twice it."""
    def geometric(k):
        start = 2.0 ** (-(2.0 ** -(math.log2(k) - 3)))
        return [start * start ** i for i in range(k)]
    if math.log2(h).is_integer():
        return geometric(h)
    c = 2 ** math.floor(math.log2(h))
    return geometric(c) + alibi_slopes_reference_rule(2 * c)[0::2][:h - c]


def load_alibi(value, h, where="alibi"):
    if value is False or value is None:
        return None
    if value is True:
        return alibi_slopes(h)
    if not isinstance(value, dict):
        raise LessonError('%s: expected true, false or {"slopes": [h numbers]}' % where)
    for k in value:
        if k != "slopes":
            raise LessonError("%s.%s: unknown key (alibi has \"slopes\")" % (where, k))
    if "slopes" not in value:
        raise LessonError('%s.slopes: required (or write "alibi": true for the default slopes)' % where)
    s = value["slopes"]
    if not isinstance(s, list) or not all(is_number(x) for x in s):
        raise LessonError("%s.slopes: expected %d numbers" % (where, h))
    if len(s) != h:
        raise LessonError("%s.slopes: expected %d numbers (one per head), got %d" % (where, h, len(s)))
    return [float(x) for x in s]


def alibi_bias(slope, pos_q, pos_k):
    """-slope * |i - j| for query positions pos_q and key positions pos_k."""
    d = (pos_q.to(torch.float64).unsqueeze(1) - pos_k.to(torch.float64).unsqueeze(0)).abs()
    return -slope * d


def alibi_bias_loops(slopes, n, m):
    return torch.tensor([[[-s * abs(i - j) for j in range(m)] for i in range(n)] for s in slopes])


# --------------------------------------------------------------- loading
def load_flash(value, n, m):
    if value is False or value is None:
        return None
    if not isinstance(value, dict):
        raise LessonError('flash: expected {"block_q": Bq, "block_k": Bk}')
    for k in value:
        if k not in ("block_q", "block_k"):
            raise LessonError("flash.%s: unknown key (flash has \"block_q\" and \"block_k\")" % k)
    out = {}
    for k, limit, what in (("block_q", n, "n, the query rows"), ("block_k", m, "m, the key rows")):
        if k not in value:
            raise LessonError("flash.%s: required" % k)
        b = value[k]
        if not is_number(b) or b != int(b) or not 1 <= b <= limit:
            raise LessonError("flash.%s: expected a whole number from 1 to %d (%s), got %r" % (k, limit, what, b))
        out[k] = int(b)
    return out


def load_attention(get, where, d_q, d_kv, G, width, params, prefix):
    """One attention's weights with grouped-query attention; get(key) ->
    (value, place) or None. Registers the parameters under prefix + key."""
    def need(k):
        got = get(k)
        if got is None:
            raise LessonError("%s%s: required" % (where, k))
        return got
    hv = get("heads")
    h = whole(hv[0], hv[1]) if hv else 1
    gv = get("kv_heads")
    g = whole(gv[0], gv[1]) if gv else h
    if h % g:
        raise LessonError("%s: %d does not divide the %d query heads"
                          % (gv[1], g, h))
    v, w = need("W_q")
    W_q = shaped(v, w, d_q, None)
    if W_q.shape[1] % h:
        raise LessonError("%s: %d does not divide the %d columns of W_q" % (hv[1] if hv else where + "heads", h, W_q.shape[1]))
    d_k = W_q.shape[1] // h
    v, w = need("W_k")
    W_k = shaped(v, w, d_kv, None)
    if W_k.shape[1] != g * d_k:
        raise LessonError("%s: expected %d columns (kv_heads %d × d_k %d), got %d" % (w, g * d_k, g, d_k, W_k.shape[1]))
    v, w = need("W_v")
    W_v = shaped(v, w, d_kv, None)
    if W_v.shape[1] % g:
        raise LessonError("%s: %d key/value heads do not divide its %d columns" % (w, g, W_v.shape[1]))
    d_v = W_v.shape[1] // g
    P = {"W_q": W_q, "W_k": W_k, "W_v": W_v}
    d_out = h * d_v
    if get("W_o") is not None:
        v, w = get("W_o")
        P["W_o"] = shaped(v, w, h * d_v, None)
        d_out = P["W_o"].shape[1]
    if width is not None and d_out != width:
        raise LessonError("%s%s: the attention's output is %d wide, but a block needs d_model = %d"
                          % (where, "W_o" if "W_o" in P else "W_v", d_out, width))
    for k, length in (("b_q", h * d_k), ("b_k", g * d_k), ("b_v", g * d_v), ("b_o", d_out)):
        if get(k) is not None:
            if k == "b_o" and "W_o" not in P:
                raise LessonError("%s: needs W_o" % get(k)[1])
            v, w = get(k)
            P[k] = vector(v, w, length)
    if G["score"] == "additive":
        v, w = need("w_e")
        P["w_e"] = vector(v, w, h * d_k)
    elif get("w_e") is not None:
        v2.warn("%s: not used: w_e is for \"score\": \"additive\"" % get("w_e")[1])
    for k in ("W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o", "w_e"):
        if k in P:
            params[prefix + k] = P[k]
    rope = G["rope"]
    if rope is not None and d_k % 2:
        raise LessonError("rope: needs an even d_k (q and k are rotated in pairs of columns), but d_k = %d%s"
                          % (d_k, " in " + where.rstrip(".") if where else ""))
    slopes = load_alibi(G["alibi_doc"], h)
    vis = G["mask"].visible
    n, m = vis.shape
    return {"h": h, "g": g, "g_given": gv is not None, "d_k": d_k, "d_v": d_v, "d_out": d_out,
            "d_q": d_q, "d_kv": d_kv, "factor": scale_factor(G["scale"], d_k), "fill": G["fill"],
            "score": G["score"], "visible": vis, "alt_visible": G["alt_visible"], "prefix": prefix,
            "has": set(P), "n": n, "m": m, "rope": rope, "slopes": slopes,
            "alt_slopes": (alibi_slopes_reference_rule(h) if G["alibi_doc"] is True else slopes),
            "flash": G["flash"], "attend": attend, "alt_attend": alt_attend}


def load(doc):
    if doc.get("attnviz") == 1:
        for k in V3_KEYS:
            if k in doc:
                raise LessonError('%s: needs format version 2: start the lesson with "attnviz": 2' % k)
    if doc.get("attnviz") != 2:
        raise LessonError("attnviz: expected 2 (issue 11's keys belong to format 2)")
    for k in doc:
        if k not in TOP_KEYS:
            if k in ("encoder", "self", "cross", "backward"):
                raise LessonError("%s: not supported by make_reference_v3.py" % k)
            raise LessonError("%s: unknown key" % k)
    les = v2.Lesson()
    les.doc = doc
    les.title = english(doc.get("title", ""))
    score = doc.get("score", "dot")
    if score not in ("dot", "additive"):
        raise LessonError('score: expected "dot" or "additive"')
    G = {"score": score, "scale": doc.get("scale", True), "fill": fill_value(doc.get("mask_fill", "-inf"))}
    dec = v2.load_input(doc, "", "", les)
    n, d_model = dec["n"], dec["d_model"]
    block = "block" in doc or "layers" in doc
    src = doc.get("source")
    if src is not None:
        if block:
            raise LessonError("source: not in a block lesson")
        v2.check_keys(src, {"tokens", "X"}, "source")
        S = matrix(src["X"], "source.X")
        les.inputs["source_input"] = S
        stoks = src.get("tokens")
        dec["source_tokens"] = [english(t) for t in stoks] if stoks is not None else \
            ["s%d" % j for j in range(S.shape[0])]
        m, d_src = S.shape
    else:
        m, d_src = n, d_model
    G["mask"] = MaskInfo(doc.get("mask", "none"), n, m)
    G["alt_visible"] = G["mask"].loops(n, m)
    G["rope"] = load_rope(doc.get("rope", False))
    alibi = doc.get("alibi", False)
    if not isinstance(alibi, (bool, dict)):
        raise LessonError('alibi: expected true, false or {"slopes": [h numbers]}')
    G["alibi_doc"] = alibi
    G["flash"] = load_flash(doc.get("flash", False), n, m)
    decode = doc.get("decode", False)
    if not isinstance(decode, bool):
        raise LessonError("decode: expected true or false, got %r" % (decode,))
    if decode:
        if src is not None:
            raise LessonError("decode: needs self-attention (a lesson with a source is not generated token by token)")
        if not (G["mask"].causal or G["mask"].window is not None):
            raise LessonError("decode: needs a causal or window mask (a generated token sees only the tokens before it)")
        if G["fill"] != NEG_INF:
            raise LessonError('decode: needs "mask_fill": "-inf" (with a finite fill the full computation '
                              "also weighs the future tokens a cache does not hold)")
    les.decode = bool(decode)
    les.G = G
    top_get = lambda k: (doc[k], k) if k in doc else None   # noqa: E731
    if block:
        les.kind = "stack"
        layer_docs = doc.get("layers")
        single = layer_docs is None
        if single:
            layer_docs = [{}]
        if not isinstance(layer_docs, list) or not layer_docs:
            raise LessonError("layers: expected a list of at least one layer")
        layers = []
        for i, ld in enumerate(layer_docs):
            lw = "" if single else "layers[%d]." % i
            v2.check_keys(ld, set(ATTN_KEYS) | {"block"}, lw.rstrip("."))

            def get(k, ld=ld, lw=lw):
                if k in ld:
                    return ld[k], lw + k
                if k in doc:
                    return doc[k], k
                return None
            pre = "layers.%d." % i
            L = {"decoder": False}
            L["attn"] = load_attention(get, lw, d_model, d_model, G, d_model, les.params, pre + "attn.")
            if "block" in ld:
                b, bw = ld["block"], lw + "block."
                if "final_norm" in b:
                    v2.warn("%sfinal_norm: not used (only the top-level block's final_norm is)" % bw)
            else:
                b, bw = doc.get("block", {}), "block."
            L["block"] = v2.load_block(b, bw, d_model, False, les.params, pre)
            L["block_doc"] = b
            layers.append(L)
        dec["layers"] = layers
        dec["final_norm"] = v2.load_final_norm(doc.get("block", {}), "block.", d_model, les.params, "")
    else:
        les.kind = "attention"
        dec["attn"] = load_attention(top_get, "", d_model, d_src, G, None, les.params, "")
    les.dec = dec
    return les


# ------------------------------------------------------------- forward
def project(cfg, P, X, S):
    p = lambda k: P[cfg["prefix"] + k]   # noqa: E731
    has = cfg["has"]
    Q = torch.matmul(X, p("W_q"))
    K = torch.matmul(S, p("W_k"))
    V = torch.matmul(S, p("W_v"))
    if "b_q" in has:
        Q = Q + p("b_q")
    if "b_k" in has:
        K = K + p("b_k")
    if "b_v" in has:
        V = V + p("b_v")
    return Q, K, V


def score_of(cfg, P, i, q, k):
    """Head i's raw scores (rows of q against rows of k)."""
    if cfg["score"] == "additive":
        d_k = cfg["d_k"]
        w = P[cfg["prefix"] + "w_e"][i * d_k:(i + 1) * d_k]
        return torch.matmul(torch.tanh(q.unsqueeze(1) + k.unsqueeze(0)), w)
    return torch.matmul(q, k.transpose(0, 1))


def softmax_rows(masked, dead):
    """Softmax of each row; 0 in a row with no visible key (all -inf)."""
    if bool(dead.any()):
        safe = masked.masked_fill(dead.unsqueeze(1), 0.0)
        return F.softmax(safe, dim=-1).masked_fill(dead.unsqueeze(1), 0.0)
    return F.softmax(masked, dim=-1)


def attend(cfg, P, X, S, keep=None):
    """The whole attention, every stage kept: the main path."""
    h, g, d_k, d_v = cfg["h"], cfg["g"], cfg["d_k"], cfg["d_v"]
    Q, K, V = project(cfg, P, X, S)
    n, m = Q.shape[0], K.shape[0]
    pos_q, pos_k = torch.arange(n), torch.arange(m)
    R = {"Q": Q, "K": K, "V": V}
    if cfg["rope"] is not None:
        Qr = rope_rotate(Q, pos_q, h, d_k, cfg["rope"])
        Kr = rope_rotate(K, pos_k, g, d_k, cfg["rope"])
        R["Q_rot"], R["K_rot"] = Qr, Kr
    else:
        Qr, Kr = Q, K
    vis = cfg["visible"]
    dead = ~vis.any(dim=1) if cfg["fill"] == NEG_INF else torch.zeros(n, dtype=torch.bool)
    heads, outs = [], []
    for i in range(h):
        j = i // (h // g)
        q = Qr[:, i * d_k:(i + 1) * d_k]
        k = Kr[:, j * d_k:(j + 1) * d_k]
        v = V[:, j * d_v:(j + 1) * d_v]
        hd = {"kv_head": j}
        hd["scores"] = score_of(cfg, P, i, q, k)
        hd["scaled"] = hd["scores"] * cfg["factor"]
        before_mask = hd["scaled"]
        if cfg["slopes"] is not None:
            hd["bias"] = alibi_bias(cfg["slopes"][i], pos_q, pos_k)
            hd["biased"] = hd["scaled"] + hd["bias"]
            before_mask = hd["biased"]
        hd["masked"] = before_mask.masked_fill(~vis, cfg["fill"])
        hd["weights"] = softmax_rows(hd["masked"], dead)
        hd["output"] = torch.matmul(hd["weights"], v)
        heads.append(hd)
        outs.append(hd["output"])
    R["heads"] = heads
    R["concat"] = torch.cat(outs, dim=1)
    if "W_o" in cfg["has"]:
        out = torch.matmul(R["concat"], P[cfg["prefix"] + "W_o"])
        if "b_o" in cfg["has"]:
            out = out + P[cfg["prefix"] + "b_o"]
        R["output"] = out
    else:
        R["output"] = R["concat"]
    R["row_all_masked"] = [r for r in range(n) if dead[r]]
    if cfg["flash"] is not None:
        R["flash"] = [flash_head(hd["masked"], V[:, hd["kv_head"] * d_v:(hd["kv_head"] + 1) * d_v], vis,
                                 cfg["fill"], cfg["flash"]["block_q"], cfg["flash"]["block_k"])
                      for hd in heads]
    return R


# --------------------------------------------------------- flash tiles
def flash_head(masked, v, vis, fill, Bq, Bk):
    """Issue 11's online softmax over tiles, for one head: the tile records
    (m, l, O of the block's rows after each tile) and the output O / l."""
    n, m = masked.shape
    d_v = v.shape[1]
    tiles = []
    out = torch.zeros(n, d_v)
    for q0 in range(0, n, Bq):
        q1 = min(q0 + Bq, n)
        r = q1 - q0
        mr = torch.full((r,), NEG_INF)
        lr = torch.zeros(r)
        Or = torch.zeros(r, d_v)
        for k0 in range(0, m, Bk):
            k1 = min(k0 + Bk, m)
            if fill == NEG_INF and not bool(vis[q0:q1, k0:k1].any()):
                continue                      # the mask hides the whole tile
            S = masked[q0:q1, k0:k1]
            m_new = torch.maximum(mr, S.max(dim=1).values)
            alive = m_new > NEG_INF
            ref = torch.where(alive, m_new, torch.zeros_like(m_new))
            P = torch.where(alive.unsqueeze(1), torch.exp(S - ref.unsqueeze(1)), torch.zeros_like(S))
            alpha = torch.where(alive, torch.exp(mr - ref), torch.zeros_like(mr))
            lr = torch.where(alive, alpha * lr + P.sum(dim=1), torch.zeros_like(lr))
            Or = torch.where(alive.unsqueeze(1), alpha.unsqueeze(1) * Or + torch.matmul(P, v[k0:k1]),
                             torch.zeros_like(Or))
            mr = m_new
            tiles.append({"q0": q0, "k0": k0, "m": mr.clone(), "l": lr.clone(), "O": Or.clone()})
        pos = lr > 0
        out[q0:q1] = torch.where(pos.unsqueeze(1), Or / torch.where(pos, lr, torch.ones_like(lr)).unsqueeze(1),
                                 torch.zeros_like(Or))
    return {"tiles": tiles, "output": out, "block_q": Bq, "block_k": Bk}


# --------------------------------------------------------------- decode
class Cache:
    """One attention's KV cache: rows after RoPE, oldest first; with a window,
    only the last w are kept."""

    def __init__(self, size):
        self.size = size
        self.K, self.V, self.pos = [], [], []

    def append(self, k, v, t):
        self.K.append(k)
        self.V.append(v)
        self.pos.append(t)
        if self.size is not None and len(self.pos) > self.size:
            del self.K[0], self.V[0], self.pos[0]


def decode_step(cfg, P, x, t, cache):
    """Position t: its q, k, v from its row alone, the cache, the new row of
    scores and weights against the cache, the output row."""
    h, g, d_k, d_v = cfg["h"], cfg["g"], cfg["d_k"], cfg["d_v"]
    q, k, v = project(cfg, P, x, x)
    if cfg["rope"] is not None:
        where = torch.tensor([t])
        q = rope_rotate(q, where, h, d_k, cfg["rope"])
        k = rope_rotate(k, where, g, d_k, cfg["rope"])
    cache.append(k, v, t)
    Kc, Vc = torch.cat(cache.K, dim=0), torch.cat(cache.V, dim=0)
    pos = torch.tensor(cache.pos)
    vis = cfg["visible"][t, pos].unsqueeze(0)                     # 1 x cache length
    heads, outs = [], []
    for i in range(h):
        j = i // (h // g)
        scores = score_of(cfg, P, i, q[:, i * d_k:(i + 1) * d_k], Kc[:, j * d_k:(j + 1) * d_k])
        z = scores * cfg["factor"]
        if cfg["slopes"] is not None:
            z = z + alibi_bias(cfg["slopes"][i], torch.tensor([t]), pos)
        z = z.masked_fill(~vis, NEG_INF)
        w = softmax_rows(z, ~vis.any(dim=1))
        weighted = torch.matmul(w, Vc[:, j * d_v:(j + 1) * d_v])
        heads.append({"scores": scores, "weights": w, "weighted": weighted})
        outs.append(weighted)
    concat = torch.cat(outs, dim=1)
    out = concat
    if "W_o" in cfg["has"]:
        out = torch.matmul(concat, P[cfg["prefix"] + "W_o"])
        if "b_o" in cfg["has"]:
            out = out + P[cfg["prefix"] + "b_o"]
    return {"t": t, "q": q, "K_cache": Kc, "V_cache": Vc, "positions": list(cache.pos),
            "heads": heads, "output": out}


def cache_size(les):
    return les.G["mask"].window     # None: causal, the cache keeps every position


def decode_attention(les, X):
    cfg = les.dec["attn"]
    cache = Cache(cache_size(les))
    return [decode_step(cfg, les.cur, X[t:t + 1], t, cache) for t in range(X.shape[0])]


def decode_stack(les, X):
    """Token by token through every layer: each layer's attention reads its own
    cache; v2's layer code does the norms, FFN and residuals on the one row.
    Returns per layer the list of steps (with the layer's output row), and the
    final rows (after the final norm)."""
    layers = les.dec["layers"]
    caches = [Cache(cache_size(les)) for _ in layers]
    steps = [[] for _ in layers]
    finals = []
    keep = v2.Recorder(False)
    for t in range(X.shape[0]):
        x = X[t:t + 1]
        for li, L in enumerate(layers):
            cfg = L["attn"]
            box = {}

            def one_row(cfg_, P_, x_, s_, keep_, cfg=cfg, cache=caches[li], box=box):
                box["step"] = decode_step(cfg, P_, x_, t, cache)
                return box["step"]
            Lt = dict(L)
            Lt["attn"] = dict(cfg, attend=one_row)
            rec = v2.run_layer(Lt, les.cur, x, None, keep)
            step = box["step"]
            step["layer_output"] = rec["output"]
            steps[li].append(step)
            x = rec["output"]
        fn = les.dec["final_norm"]
        if fn is not None:
            x = v2.normalize(x, fn["kind"], fn["eps"], les.cur[fn["prefix"] + "gamma"],
                             les.cur.get(fn["prefix"] + "beta"))
        finals.append(x)
    return steps, torch.cat(finals, dim=0)


# --------------------------------------------------- whole lesson forward
def side_of(les):
    dec = les.dec
    return {"input": "input", "positional": dec["positional"], "layers": dec["layers"],
            "final_norm": dec["final_norm"]}


def inputs_X(les):
    X = les.inputs["input"]
    PE = None
    if les.dec["positional"] == "sinusoidal":
        PE = v1.positional_encoding(X.shape[0], X.shape[1])
        X = X + PE
    S = X
    PE_src = None
    if "source_input" in les.inputs:
        S = les.inputs["source_input"]
        if les.dec["positional"] == "sinusoidal":
            PE_src = v1.positional_encoding(S.shape[0], S.shape[1])
            S = S + PE_src
    return X, S, PE, PE_src


def forward(les):
    X, S, PE, PE_src = inputs_X(les)
    R = {"X": X, "PE": PE, "S": S, "PE_src": PE_src}
    if les.kind == "attention":
        R["attn"] = attend(les.dec["attn"], les.cur, X, S)
        R["output"] = R["attn"]["output"]
        R["row_all_masked"] = R["attn"]["row_all_masked"]
        if les.decode:
            R["decode"] = decode_attention(les, X)
    else:
        SR = v2.run_side(side_of(les), les.cur, les.inputs, None, v2.Recorder(False))
        R["layers"] = SR["layers"]
        R["output"] = SR["output"]
        R["row_all_masked"] = SR["layers"][0]["attn"]["row_all_masked"]
        if les.decode:
            R["decode_layers"], R["decode_final"] = decode_stack(les, X)
    return R


# ------------------------------------------------- second forward (einsum)
def alt_attend(cfg, P, X, S):
    """All heads at once: GQA by repeat_interleave, RoPE as complex numbers,
    the mask and the ALiBi bias built cell by cell, a softmax by hand."""
    p = lambda k: P.get(cfg["prefix"] + k)   # noqa: E731
    h, g, d_k, d_v = cfg["h"], cfg["g"], cfg["d_k"], cfg["d_v"]
    n, m = X.shape[0], S.shape[0]
    q = F.linear(X, p("W_q").t(), p("b_q"))
    k = F.linear(S, p("W_k").t(), p("b_k"))
    v = F.linear(S, p("W_v").t(), p("b_v")).reshape(m, g, d_v)
    if cfg["rope"] is not None:
        q = rope_complex(q, torch.arange(n), h, d_k, cfg["rope"])
        k = rope_complex(k, torch.arange(m), g, d_k, cfg["rope"])
    q = q.reshape(n, h, d_k)
    k = k.reshape(m, g, d_k).repeat_interleave(h // g, dim=1)
    v = v.repeat_interleave(h // g, dim=1)
    if cfg["score"] == "additive":
        t = torch.tanh(q.unsqueeze(1) + k.unsqueeze(0))
        sc = torch.einsum("nmhc,hc->hnm", t, p("w_e").reshape(h, d_k))
    else:
        sc = torch.einsum("nhc,mhc->hnm", q, k)
    sc = sc * cfg["factor"]
    if cfg["alt_slopes"] is not None:
        sc = sc + alibi_bias_loops(cfg["alt_slopes"], n, m)
    vis = cfg["alt_visible"].unsqueeze(0).expand_as(sc)
    if cfg["fill"] == NEG_INF:
        mx = torch.where(vis, sc, torch.full_like(sc, NEG_INF)).amax(dim=-1, keepdim=True)
        mx = torch.where(torch.isfinite(mx), mx, torch.zeros_like(mx))
        e = torch.where(vis, torch.exp(torch.where(vis, sc - mx, torch.zeros_like(sc))), torch.zeros_like(sc))
        s = e.sum(dim=-1, keepdim=True)
        w = e / torch.where(s > 0, s, torch.ones_like(s))
    else:
        z = torch.where(vis, sc, torch.full_like(sc, cfg["fill"]))
        e = torch.exp(z - z.amax(dim=-1, keepdim=True))
        w = e / e.sum(dim=-1, keepdim=True)
    o = torch.einsum("hnm,mhc->nhc", w, v).reshape(n, h * d_v)
    if p("W_o") is not None:
        o = F.linear(o, p("W_o").t(), p("b_o"))
    return o


def alt_forward(les):
    X = les.inputs["input"]
    if les.kind == "attention":
        pe = les.dec["positional"] == "sinusoidal"
        if pe:
            X = X + v1.positional_encoding(X.shape[0], X.shape[1])
        S = X
        if "source_input" in les.inputs:
            S = les.inputs["source_input"]
            if pe:
                S = S + v1.positional_encoding(S.shape[0], S.shape[1])
        return alt_attend(les.dec["attn"], les.cur, X, S)
    return v2.alt_side(side_of(les), les.cur, les.inputs, None)


# ------------------------------------------------------------- checks
def attention_records(les, R):
    """(settings, record, name) for every attention in the lesson."""
    if les.kind == "attention":
        return [(les.dec["attn"], R["attn"], "attention")]
    return [(L["attn"], rec["attn"], "layers[%d].attn" % i)
            for i, (L, rec) in enumerate(zip(les.dec["layers"], R["layers"]))]


def check_mask(les):
    if not torch.equal(les.G["mask"].visible, les.G["alt_visible"]):
        raise CheckFailed("mask: the tensor and the cell-by-cell visibility differ")
    return ["mask"]


def check_rope(les, R):
    done = False
    for cfg, A, what in attention_records(les, R):
        if cfg["rope"] is None:
            continue
        h, g, d_k = cfg["h"], cfg["g"], cfg["d_k"]
        for name, M, heads in (("Q", A["Q"], h), ("K", A["K"], g)):
            pos = torch.arange(M.shape[0])
            agree(rope_complex(M, pos, heads, d_k, cfg["rope"]), A[name + "_rot"],
                  "%s %s_rot (complex)" % (what, name), TOL)
            agree(rope_rotate_half(M, pos, heads, d_k, cfg["rope"]), A[name + "_rot"],
                  "%s %s_rot (rotate_half)" % (what, name), TOL)
            # a rotation keeps each pair's length
            a, b = rope_pairs(d_k, cfg["rope"]["style"])
            for hd in range(heads):
                x0, x1 = M[:, hd * d_k:(hd + 1) * d_k], A[name + "_rot"][:, hd * d_k:(hd + 1) * d_k]
                agree(x1[:, a] ** 2 + x1[:, b] ** 2, x0[:, a] ** 2 + x0[:, b] ** 2, what + " pair lengths", TOL)
        # the relative-position property: shift every position by 5
        if cfg["score"] == "dot":
            Qs = rope_rotate(A["Q"], torch.arange(A["Q"].shape[0]) + 5, h, d_k, cfg["rope"])
            Ks = rope_rotate(A["K"], torch.arange(A["K"].shape[0]) + 5, g, d_k, cfg["rope"])
            for i, hd in enumerate(A["heads"]):
                j = hd["kv_head"]
                s = Qs[:, i * d_k:(i + 1) * d_k] @ Ks[:, j * d_k:(j + 1) * d_k].t()
                agree(s, hd["scores"], what + " scores after shifting every position", TOL)
        done = True
    return ["rope(complex, rotate_half, shift)"] if done else []


def check_alibi(les, R):
    ran, shifted_ran = False, False
    for cfg, A, what in attention_records(les, R):
        if cfg["slopes"] is None:
            continue
        ran = True
        agree(torch.tensor(cfg["alt_slopes"]), torch.tensor(cfg["slopes"]), what + " slopes", 1e-15)
        n, m = cfg["n"], cfg["m"]
        loops = alibi_bias_loops(cfg["slopes"], n, m)
        vis = cfg["visible"]
        dead = ~vis.any(dim=1)
        at_or_before = torch.tril(torch.ones(n, m, dtype=torch.bool))
        for i, hd in enumerate(A["heads"]):
            agree(hd["bias"], loops[i], what + " bias", 1e-15)
            # the reference implementation's row-shifted bias +slope*j, valid
            # where every visible key is at or before its query
            if cfg["fill"] == NEG_INF and n == m and not bool((vis & ~at_or_before).any()):
                shifted = cfg["slopes"][i] * torch.arange(m, dtype=torch.float64).unsqueeze(0).expand(n, m)
                z = (hd["scaled"] + shifted).masked_fill(~vis, NEG_INF)
                agree(softmax_rows(z, dead), hd["weights"], what + " weights with the shifted bias", TOL)
                shifted_ran = True
    if not ran:
        return []
    return ["alibi(slopes, loops%s)" % (", +slope*j" if shifted_ran else "")]


def check_einsum(les, R):
    agree(alt_forward(les), R["output"], "einsum output", TOL)
    return ["einsum"]


def check_sdpa(les, R):
    """torch 1.13's F._scaled_dot_product_attention on the rotated q, k."""
    if not hasattr(F, "_scaled_dot_product_attention") and not hasattr(F, "scaled_dot_product_attention"):
        return []
    done = []
    for cfg, A, what in attention_records(les, R):
        vis = cfg["visible"]
        if cfg["score"] != "dot" or cfg["fill"] != NEG_INF:
            continue
        alive = vis.any(dim=1)
        vis = vis | ~alive.unsqueeze(1)     # an empty row (NaN in torch) is compared nowhere
        h, g, d_k, d_v = cfg["h"], cfg["g"], cfg["d_k"], cfg["d_v"]
        n, m = cfg["n"], cfg["m"]
        Qr = A.get("Q_rot", A["Q"]).reshape(n, h, d_k).transpose(0, 1).unsqueeze(0)
        Kr = A.get("K_rot", A["K"]).reshape(m, g, d_k).transpose(0, 1).repeat_interleave(h // g, dim=0).unsqueeze(0)
        Vv = A["V"].reshape(m, g, d_v).transpose(0, 1).repeat_interleave(h // g, dim=0).unsqueeze(0)
        mask = torch.zeros(h, n, m)
        if cfg["slopes"] is not None:
            mask = mask + torch.stack([alibi_bias(s, torch.arange(n), torch.arange(m)) for s in cfg["slopes"]])
        mask = mask.masked_fill(~vis.unsqueeze(0), NEG_INF).unsqueeze(0)
        q = Qr * (cfg["factor"] * math.sqrt(d_k))     # SDPA scales by 1/sqrt(d_k) itself
        if hasattr(F, "scaled_dot_product_attention"):
            o = F.scaled_dot_product_attention(q, Kr, Vv, attn_mask=mask)
        else:
            o, _ = F._scaled_dot_product_attention(q, Kr, Vv, mask, 0.0, False, False)
        for i, hd in enumerate(A["heads"]):
            agree(o[0, i][alive], hd["output"][alive], "%s head %d (sdpa)" % (what, i), TOL)
        done.append(what)
    return ["sdpa"] if done else []


def check_mha(les, R):
    """F.multi_head_attention_forward with the K/V projections' columns repeated."""
    if les.kind != "attention":
        return []
    cfg = les.dec["attn"]
    e = les.dec["d_model"]
    h, g, d_k, d_v = cfg["h"], cfg["g"], cfg["d_k"], cfg["d_v"]
    vis = cfg["visible"]
    alive = vis.any(dim=1)
    vis = vis | ~alive.unsqueeze(1)     # an empty row (NaN in torch) is compared nowhere
    if (cfg["rope"] is not None or cfg["score"] != "dot" or cfg["fill"] != NEG_INF
            or cfg["factor"] != 1.0 / math.sqrt(d_k)
            or h * d_k != e or h * d_v != e or cfg["d_kv"] != e or cfg["d_out"] != e):
        return []
    P = les.cur
    W_k, W_v = expand_kv(P["W_k"], g, h, d_k), expand_kv(P["W_v"], g, h, d_v)
    z = torch.zeros(e)
    b_in = torch.cat([P.get("b_q", z), expand_kv(P["b_k"].unsqueeze(0), g, h, d_k).reshape(-1) if "b_k" in P else z,
                      expand_kv(P["b_v"].unsqueeze(0), g, h, d_v).reshape(-1) if "b_v" in P else z])
    n, m = cfg["n"], cfg["m"]
    mask = torch.zeros(h, n, m)
    if cfg["slopes"] is not None:
        mask = mask + torch.stack([alibi_bias(s, torch.arange(n), torch.arange(m)) for s in cfg["slopes"]])
    mask = mask.masked_fill(~vis.unsqueeze(0), NEG_INF)
    S = R["S"]
    out, _ = F.multi_head_attention_forward(
        R["X"].unsqueeze(1), S.unsqueeze(1), S.unsqueeze(1), e, h,
        None, b_in, None, None, False, 0.0, P["W_o"].t() if "W_o" in P else torch.eye(e),
        P.get("b_o", z), training=False, attn_mask=mask, need_weights=False,
        use_separate_proj_weight=True, q_proj_weight=P["W_q"].t(), k_proj_weight=W_k.t(),
        v_proj_weight=W_v.t())
    agree(out.squeeze(1)[alive], R["output"][alive], "F.multi_head_attention_forward", TOL)
    return ["mha"]


def expand_kv(W, g, h, d):
    """The columns of each of g key/value heads, repeated for its h/g query heads."""
    return W.reshape(W.shape[0], g, d).repeat_interleave(h // g, dim=1).reshape(W.shape[0], h * d)


def v2_equivalent(les):
    """The lesson as plain version 2 (only without RoPE and ALiBi)."""
    doc = les.doc
    if les.G["rope"] is not None or les.G["alibi_doc"] is not False:
        return None
    d2 = {k: v for k, v in doc.items() if k not in V3_KEYS + ("steps", "layers", "mask") + ATTN_KEYS}
    d2["mask"] = rows(les.G["mask"].visible.to(torch.float64))

    def explicit(cfg):
        P = les.cur
        pre = cfg["prefix"]
        h, g, d_k, d_v = cfg["h"], cfg["g"], cfg["d_k"], cfg["d_v"]
        o = {"heads": h, "W_q": rows(P[pre + "W_q"]), "W_k": rows(expand_kv(P[pre + "W_k"], g, h, d_k)),
             "W_v": rows(expand_kv(P[pre + "W_v"], g, h, d_v))}
        for k in ("W_o", "b_q", "b_o", "w_e"):
            if pre + k in P:
                o[k] = rows(P[pre + k])
        for k, d in (("b_k", d_k), ("b_v", d_v)):
            if pre + k in P:
                o[k] = rows(expand_kv(P[pre + k].unsqueeze(0), g, h, d).reshape(-1))
        return o
    if les.kind == "attention":
        d2.update(explicit(les.dec["attn"]))
    else:
        d2["layers"] = [dict(explicit(L["attn"]), block={k: v for k, v in L["block_doc"].items() if k != "final_norm"})
                        for L in les.dec["layers"]]
    return d2


def check_v2(les, dump):
    d2 = v2_equivalent(les)
    if d2 is None:
        return []
    ref2, checks2 = v2.reference(d2)
    mine = dict(dump)
    theirs = dict(ref2)

    def attn_keys(a, b, what):
        a, b = dict(a), dict(b)
        for k in ("Q", "concat", "output"):
            v2.compare_json(b[k], a[k], "v2 %s.%s" % (what, k))
        for i, (x, y) in enumerate(zip(a["heads"], b["heads"])):
            x, y = dict(x), dict(y)
            for k in ("scores", "scaled", "masked", "weights", "output"):
                v2.compare_json(y[k], x[k], "v2 %s.heads[%d].%s" % (what, i, k))
    if les.kind == "attention":
        attn_keys(mine, theirs, "attention")
        if mine["row_all_masked"] != theirs["row_all_masked"]:
            raise CheckFailed("v2: row_all_masked differs")
    else:
        for i, (a, b) in enumerate(zip(mine["layers"], theirs["layers"])):
            a, b = dict(a), dict(b)
            for k, val in b.items():
                if k == "attn":
                    attn_keys(a[k], val, "layers[%d].attn" % i)
                else:
                    v2.compare_json(val, a[k], "v2 layers[%d].%s" % (i, k))
        v2.compare_json(theirs["output"], mine["output"], "v2 output")
    return ["v2(%s)" % "+".join(checks2)]


def check_decode(les, R):
    if not les.decode:
        return []
    if les.kind == "attention":
        per_layer = [(les.dec["attn"], R["attn"], R["decode"], None, "decode")]
    else:
        per_layer = [(L["attn"], rec["attn"], steps, rec["output"], "layers[%d].decode" % i)
                     for i, (L, rec, steps) in enumerate(zip(les.dec["layers"], R["layers"], R["decode_layers"]))]
    for cfg, A, steps, layer_out, what in per_layer:
        Qr, Kr = A.get("Q_rot", A["Q"]), A.get("K_rot", A["K"])
        for st in steps:
            t = st["t"]
            pos = torch.tensor(st["positions"])
            w = "%s[%d]" % (what, t)
            size = les.G["mask"].window
            if st["positions"] != list(range(0 if size is None else max(0, t - size + 1), t + 1)):
                raise CheckFailed("%s: the cache holds positions %s" % (w, st["positions"]))
            agree(st["output"], A["output"][t:t + 1], w + ".output = the full row", EXACT_TOL)
            agree(st["q"], Qr[t:t + 1], w + ".q = Q_rot's row", EXACT_TOL)
            agree(st["K_cache"], Kr[pos], w + ".K_cache = K_rot's rows", EXACT_TOL)
            agree(st["V_cache"], A["V"][pos], w + ".V_cache = V's rows", EXACT_TOL)
            outside = torch.ones(cfg["m"], dtype=torch.bool)
            outside[pos] = False
            for i, (hs, hd) in enumerate(zip(st["heads"], A["heads"])):
                agree(hs["weights"], hd["weights"][t:t + 1, pos], "%s.heads[%d].weights" % (w, i), EXACT_TOL)
                agree(hs["scores"], hd["scores"][t:t + 1, pos], "%s.heads[%d].scores" % (w, i), EXACT_TOL)
                agree(hs["weighted"], hd["output"][t:t + 1], "%s.heads[%d].weighted" % (w, i), EXACT_TOL)
                if bool((hd["weights"][t, outside] != 0).any()):
                    raise CheckFailed("%s: a key outside the cache has weight in the full computation" % w)
            if layer_out is not None:
                agree(st["layer_output"], layer_out[t:t + 1], w + ".layer_output = the layer's row", EXACT_TOL)
    if les.kind != "attention":
        agree(R["decode_final"], R["output"], "decode: the last layer's rows (after the final norm)", EXACT_TOL)
    return ["decode"]


def check_flash(les, R):
    done = False
    for cfg, A, what in attention_records(les, R):
        if "flash" not in A:
            continue
        vis = cfg["visible"]
        for i, (fl, hd) in enumerate(zip(A["flash"], A["heads"])):
            agree(fl["output"], hd["output"], "%s flash head %d output" % (what, i), EXACT_TOL)
            # the last tile of each query block holds the row maximum and the sum
            Bq = fl["block_q"]
            M = hd["masked"]
            rowmax = M.max(dim=1).values
            for q0 in range(0, cfg["n"], Bq):
                last = [tl for tl in fl["tiles"] if tl["q0"] == q0]
                q1 = min(q0 + Bq, cfg["n"])
                if not last:
                    if bool(vis[q0:q1].any()) or cfg["fill"] != NEG_INF:
                        raise CheckFailed("%s flash: query block %d has no tile" % (what, q0))
                    continue
                tl = last[-1]
                mx = rowmax[q0:q1]
                if not torch.equal(tl["m"], mx):
                    raise CheckFailed("%s flash head %d: the last m of block %d is not the row maximum" % (what, i, q0))
                ref = torch.where(mx > NEG_INF, mx, torch.zeros_like(mx)).unsqueeze(1)
                l_ref = torch.exp(M[q0:q1] - ref).sum(dim=1)
                agree(tl["l"], l_ref, "%s flash head %d l" % (what, i), EXACT_TOL)
        done = True
    return ["flash"] if done else []


# ---------------------------------------------------------------- dump
def dump_heads(A, cfg):
    out = []
    for hd in A["heads"]:
        d = Pairs()
        if cfg["g_given"]:
            d.append(("kv_head", hd["kv_head"]))
        for k in ("scores", "scaled", "bias", "biased", "masked", "weights", "output"):
            if k in hd:
                d.append((k, rows(hd[k])))
        out.append(d)
    return out


def dump_flash(A):
    if "flash" not in A:
        return []
    fl0 = A["flash"][0]
    return [("flash", Pairs([
        ("block_q", fl0["block_q"]), ("block_k", fl0["block_k"]),
        ("heads", [Pairs([("tiles", [Pairs([("q0", tl["q0"]), ("k0", tl["k0"]), ("m", rows(tl["m"])),
                                            ("l", rows(tl["l"])), ("O", rows(tl["O"]))])
                                     for tl in fl["tiles"]]),
                          ("output", rows(fl["output"]))]) for fl in A["flash"]])]))]


def dump_decode(steps, with_layer_output=False):
    out = []
    for st in steps:
        d = Pairs([("t", st["t"]), ("q", rows(st["q"])), ("K_cache", rows(st["K_cache"])),
                   ("V_cache", rows(st["V_cache"])),
                   ("heads", [Pairs([("scores", rows(hs["scores"])), ("weights", rows(hs["weights"])),
                                     ("weighted", rows(hs["weighted"]))]) for hs in st["heads"]]),
                   ("output", rows(st["output"]))])
        if with_layer_output:
            d.append(("layer_output", rows(st["layer_output"])))
        out.append(d)
    return out


def dump_attn(A, cfg):
    d = Pairs([("Q", rows(A["Q"])), ("K", rows(A["K"])), ("V", rows(A["V"]))])
    for k in ("Q_rot", "K_rot"):
        if k in A:
            d.append((k, rows(A[k])))
    d += [("heads", dump_heads(A, cfg)), ("concat", rows(A["concat"])), ("output", rows(A["output"]))]
    d += dump_flash(A)
    return d


def dump(les, R):
    P = les.cur
    dec = les.dec
    if les.kind == "attention":
        cfg, A = dec["attn"], R["attn"]
        d = Pairs([("title", les.title), ("n", cfg["n"]), ("m", cfg["m"]), ("d_model", dec["d_model"]),
                   ("h", cfg["h"])])
        if cfg["g_given"]:
            d.append(("kv_heads", cfg["g"]))
        d += [("d_k", cfg["d_k"]), ("d_v", cfg["d_v"]), ("scale_factor", cfg["factor"]), ("tokens", dec["tokens"])]
        if "source_tokens" in dec:
            d.append(("source_tokens", dec["source_tokens"]))
        for k in ("W_q", "W_k", "W_v", "W_o", "w_e", "b_q", "b_k", "b_v", "b_o"):
            if k in P:
                d.append((k, rows(P[k])))
        d.append(("input", rows(les.inputs["input"])))
        if R["PE"] is not None:
            d.append(("PE", rows(R["PE"])))
        d.append(("X", rows(R["X"])))
        if "source_input" in les.inputs:
            d.append(("source_input", rows(les.inputs["source_input"])))
            if R["PE_src"] is not None:
                d.append(("PE_src", rows(R["PE_src"])))
            d.append(("S", rows(R["S"])))
        for k, v in dump_attn(A, cfg):
            if k != "flash":
                d.append((k, v))
        d.append(("row_all_masked", R["row_all_masked"]))
        if les.decode:
            d.append(("decode", dump_decode(R["decode"])))
        d += dump_flash(A)
        return d
    d = Pairs([("title", les.title), ("n", dec["n"]), ("d_model", dec["d_model"]),
               ("layers_count", len(dec["layers"])), ("tokens", dec["tokens"]),
               ("input", rows(les.inputs["input"]))])
    if R["PE"] is not None:
        d.append(("PE", rows(R["PE"])))
    d.append(("X", rows(R["X"])))
    layers = []
    for i, (L, rec) in enumerate(zip(dec["layers"], R["layers"])):
        cfg = L["attn"]
        ld = Pairs([("h", cfg["h"])])
        if cfg["g_given"]:
            ld.append(("kv_heads", cfg["g"]))
        ld += [("d_k", cfg["d_k"]), ("d_v", cfg["d_v"]), ("scale_factor", cfg["factor"])]
        for k in v2.ordered_layer_keys(L, rec):
            ld.append((k, dump_attn(rec[k], cfg) if k == "attn" else rows(rec[k])))
        if les.decode:
            ld.append(("decode", dump_decode(R["decode_layers"][i], with_layer_output=True)))
        layers.append(ld)
    d.append(("layers", layers))
    d.append(("output", rows(R["output"])))
    d.append(("row_all_masked", R["row_all_masked"]))
    return d


# ------------------------------------------------------------- driver
def reference(doc):
    les = load(doc)
    les.cur = dict(les.params)
    R = forward(les)
    d = dump(les, R)
    checks = check_mask(les) + check_rope(les, R) + check_alibi(les, R) + check_einsum(les, R)
    checks += check_sdpa(les, R) + check_mha(les, R) + check_v2(les, d) + check_decode(les, R)
    checks += check_flash(les, R)
    if "compare" in doc:
        # A shipped lesson's variant (tests/golden/lessons/NAME.ref.json), as
        # make_reference.py --lessons writes it: the lesson with the keys in
        # "compare" replaced, computed and checked on its own.
        sub_dump, sub = reference(v1.compare_variant(doc))
        d.append(("compare", sub_dump))
        checks += ["compare:" + c for c in sub]
    return d, checks


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description="PyTorch reference for issue 11's lesson keys (format 2)")
    ap.add_argument("lesson")
    ap.add_argument("--expect-error", metavar="PATH",
                    help="succeed only if the lesson is refused, with a message that starts with PATH:")
    a = ap.parse_args(argv[1:])
    with open(a.lesson, encoding="utf-8") as f:
        doc = json.load(f)
    if a.expect_error is not None:
        try:
            load(doc)
        except LessonError as e:
            msg = str(e)
            if msg.startswith(a.expect_error + ":") or msg.startswith(a.expect_error + "."):
                print("%s: refused: %s" % (a.lesson, msg), file=sys.stderr)
                return 0
            print("%s: refused, but not at %s: %s" % (a.lesson, a.expect_error, msg), file=sys.stderr)
            return 1
        print("%s: accepted, but should be refused at %s" % (a.lesson, a.expect_error), file=sys.stderr)
        return 1
    d, checks = reference(doc)
    sys.stdout.write(to_json(d) + "\n")
    for w in v2.WARNINGS:
        print("%s: warning: %s" % (a.lesson, w), file=sys.stderr)
    print("%s: %s" % (a.lesson, ", ".join(checks)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (LessonError, CheckFailed, KeyError, ValueError, OSError) as e:
        print("make_reference_v3.py: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)
