#!/usr/bin/python3
"""Independent reference numbers for attnviz's lesson format version 2
(issue 9: the Transformer block; issue 10: the backward pass and training),
computed with PyTorch in float64.

    make_reference_v2.py LESSON.json > LESSON.ref.json
    make_reference_v2.py --train STEPS --lr LR LESSON.json > LESSON.trainSTEPS.ref.json
    tests/golden/v2/make_all.sh     # every tests/golden/v2 reference, with the command lines

A lesson with "compare" (a shipped lesson, tests/golden/lessons/NAME.ref.json)
also gets its variant's reference under "compare", as make_reference.py
--lessons writes it: the lesson with the compare keys replaced.

Written from the version-2 format as the brief and tests/golden/v2/README.md
state it, not from the C code. The PRNG, generated matrices, masks, the
positional encoding and the JSON writer are make_reference.py's.

How the numbers are made:
  - forward: stage by stage with torch operators (torch.matmul, masked_fill,
    F.softmax, F.gelu, F.silu, the LayerNorm/RMSNorm formulas written out);
  - backward: torch.autograd, with requires_grad on every parameter and input
    and retain_grad on every intermediate the dump names;
  - training: p <- p - LR * dL/dp on every parameter, STEPS times.

Cross-checks (any disagreement over 1e-10, elementwise |a-b| <= 1e-10 (1 + |b|),
aborts the script; the checks that ran are printed on stderr):
  - "einsum": a second forward written independently (all heads at once with
    einsum, F.linear, F.layer_norm, erf-GELU and x*sigmoid(x) by hand, a
    softmax by hand, and each block's sublayer order spelt out as the format
    states it); its output, loss and every parameter and input gradient
    (autograd through that second graph) must agree;
  - "nn...": where the shapes allow (dot scores scaled by 1/sqrt(d_k), fill
    -inf and no fully masked row, d_model = h*d_k = h*d_v, a square W_o or
    none, LayerNorm, relu/gelu), PyTorch's own modules with the lesson's
    weights put in through functional_call: F.multi_head_attention_forward,
    nn.TransformerEncoderLayer, nn.TransformerDecoderLayer,
    nn.TransformerEncoder and nn.Transformer (dropout
    0, batch_first, norm_first for pre-norm). Output, loss and every gradient
    are compared; with --train, the same training is run through the modules
    and the losses and the trained parameters are compared;
  - "chain": the attention gradients autograd kept, against issue 10's
    formulas written out (dL/dweights = dL/dweighted V^T, the softmax
    backward w*(g - sum w g), mask, scale, dL/dQ, dL/dK, dL/dV, dL/dconcat,
    dL/dW_o), and the dump's rules for masked cells and empty rows;
  - "v1": a version-2 lesson that a version-1 lesson could state (no biases)
    is also run through make_reference.py, and the forward keys must agree
    (to 1e-12);
  - "fd": central finite differences (4-point stencil) of the loss for a few
    cells of parameters and inputs against autograd (tolerance 1e-7 relative).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch                      # noqa: E402
import torch.nn as nn             # noqa: E402
import torch.nn.functional as F   # noqa: E402
from torch.nn.utils import stateless  # noqa: E402

import make_reference as v1       # noqa: E402
from make_reference import (LessonError, Pairs, english, fill_value, is_number,  # noqa: E402
                            matrix, positional_encoding, rows, scale_factor, to_json,
                            visibility)

torch.set_default_dtype(torch.float64)
NEG_INF = float("-inf")
TOL = 1e-10          # cross-checks
FD_TOL = 1e-7        # finite differences
ATTN_KEYS = ("heads", "W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o", "w_e")
TOP_KEYS = {"attnviz", "title", "summary", "steps", "compare", "tokens", "X", "positional", "source",
            "score", "scale", "mask", "mask_fill", "block", "layers", "encoder", "self",
            "cross", "backward"} | set(ATTN_KEYS)
BLOCK_KEYS = {"norm", "norm_kind", "eps", "ln1", "ln2", "ln3", "ffn", "final_norm"}
FFN_KEYS = {"W_1", "b_1", "W_2", "b_2", "W_3", "b_3", "activation"}
WARNINGS = []


def warn(msg):
    WARNINGS.append(msg)


# ------------------------------------------------------------- loading
def vector(value, where, length):
    """A flat array of numbers, or a generator with "rows": 1 -> 1-D tensor."""
    if isinstance(value, dict):
        t = matrix(value, where)
        if t.shape[0] != 1:
            raise LessonError('%s: a generated vector needs "rows": 1' % where)
        t = t.reshape(-1)
    elif isinstance(value, list) and all(is_number(x) for x in value):
        t = torch.tensor([float(x) for x in value], dtype=torch.float64)
    else:
        raise LessonError("%s: expected %d numbers" % (where, length))
    if t.numel() != length:
        raise LessonError("%s: expected %d numbers, got %d" % (where, length, t.numel()))
    return t


def shaped(value, where, r, c):
    t = matrix(value, where)
    if r is not None and t.shape[0] != r:
        raise LessonError("%s: expected %d rows, got %d" % (where, r, t.shape[0]))
    if c is not None and t.shape[1] != c:
        raise LessonError("%s: expected %d columns, got %d" % (where, c, t.shape[1]))
    return t


def whole(value, where, low=1):
    if not is_number(value) or value != int(value) or value < low:
        raise LessonError("%s: expected a whole number >= %d, got %r" % (where, low, value))
    return int(value)


def check_keys(obj, allowed, where):
    if not isinstance(obj, dict):
        raise LessonError("%s: expected an object" % where)
    for k in obj:
        if k not in allowed:
            raise LessonError("%s%s: unknown or misplaced key" % (where + "." if where else "", k))


def tokens_of(obj, X, where):
    toks = obj.get("tokens")
    if toks is None:
        if not isinstance(obj["X"], dict):
            raise LessonError("%stokens: required when X is written out" % where)
        return ["t%d" % i for i in range(X.shape[0])]
    if len(toks) != X.shape[0]:
        raise LessonError("%stokens: expected %d, got %d" % (where, X.shape[0], len(toks)))
    return [english(t) for t in toks]


class Lesson:
    """What the loader made of a version-2 lesson.

    kind: "attention" (no block, layers or encoder: the version-1 layer, with
    biases and backward), "stack" (encoder-style layers) or "encdec".
    params: name -> initial tensor, every trainable weight, in a fixed order.
    inputs: name -> tensor (the input rows; never trained)."""

    def __init__(self):
        self.params = {}
        self.inputs = {}


def load_attention(get, where, d_q, d_kv, visible, G, width, params, prefix):
    """get(key) -> (value, where) or None.  Registers the parameters under
    prefix + key and returns the attention's settings."""
    def need(k):
        got = get(k)
        if got is None:
            raise LessonError("%s%s: required" % (where, k))
        return got
    hv = get("heads")
    h = whole(hv[0], hv[1]) if hv else 1
    v, w = need("W_q")
    W_q = shaped(v, w, d_q, None)
    if W_q.shape[1] % h:
        raise LessonError("%s: %d does not divide the %d columns of W_q" % (hv[1] if hv else where + "heads", h, W_q.shape[1]))
    d_k = W_q.shape[1] // h
    v, w = need("W_k")
    W_k = shaped(v, w, d_kv, h * d_k)
    v, w = need("W_v")
    W_v = shaped(v, w, d_kv, None)
    if W_v.shape[1] % h:
        raise LessonError("%sheads: %d does not divide the %d columns of W_v" % (where, h, W_v.shape[1]))
    d_v = W_v.shape[1] // h
    P = {"W_q": W_q, "W_k": W_k, "W_v": W_v}
    d_out = h * d_v
    if get("W_o") is not None:
        v, w = get("W_o")
        P["W_o"] = shaped(v, w, h * d_v, None)
        d_out = P["W_o"].shape[1]
    if width is not None and d_out != width:
        raise LessonError("%s%s: the attention's output is %d wide, but a block needs d_model = %d"
                          % (where, "W_o" if "W_o" in P else "W_v", d_out, width))
    for k, length in (("b_q", h * d_k), ("b_k", h * d_k), ("b_v", h * d_v), ("b_o", d_out)):
        if get(k) is not None:
            if k == "b_o" and "W_o" not in P:
                raise LessonError("%s: needs W_o (the reference adds b_o only with the output projection)"
                                  % get(k)[1])
            v, w = get(k)
            P[k] = vector(v, w, length)
    if G["score"] == "additive":
        v, w = need("w_e")
        P["w_e"] = vector(v, w, h * d_k)
    elif get("w_e") is not None:
        warn("%s: not used: w_e is for \"score\": \"additive\"" % get("w_e")[1])
    for k in ("W_q", "W_k", "W_v", "W_o", "b_q", "b_k", "b_v", "b_o", "w_e"):
        if k in P:
            params[prefix + k] = P[k]
    n, m = visible.shape
    return {"h": h, "d_k": d_k, "d_v": d_v, "d_out": d_out, "d_q": d_q, "d_kv": d_kv,
            "factor": scale_factor(G["scale"], d_k), "fill": G["fill"], "score": G["score"],
            "visible": visible, "prefix": prefix, "has": set(P), "n": n, "m": m}


def load_norm_params(obj, where, kind, d_model, params, prefix):
    check_keys(obj, {"gamma", "beta"}, where.rstrip("."))
    params[prefix + "gamma"] = vector(obj["gamma"], where + "gamma", d_model) if "gamma" in obj \
        else torch.ones(d_model)
    if kind == "layernorm":
        params[prefix + "beta"] = vector(obj["beta"], where + "beta", d_model) if "beta" in obj \
            else torch.zeros(d_model)
    elif "beta" in obj:
        raise LessonError("%sbeta: RMSNorm has no beta" % where)


def load_block(b, where, d_model, decoder, params, prefix):
    """A layer's block -> its settings; registers ln*_gamma/beta and ffn_* under prefix."""
    check_keys(b, BLOCK_KEYS, where.rstrip("."))
    norm = b.get("norm", "post")
    if norm not in ("post", "pre", "none"):
        raise LessonError('%snorm: expected "post", "pre" or "none", got %r' % (where, norm))
    kind = b.get("norm_kind", "layernorm")
    if kind not in ("layernorm", "rmsnorm"):
        raise LessonError('%snorm_kind: expected "layernorm" or "rmsnorm", got %r' % (where, kind))
    eps = float(b.get("eps", 1e-5))
    if not eps > 0:
        raise LessonError("%seps: expected a number > 0" % where)
    ffn = b.get("ffn")
    nsub = (3 if decoder else 2) if ffn is not None else (2 if decoder else 1)
    used = ["ln%d" % i for i in range(1, nsub + 1)] if norm != "none" else []
    for ln in ("ln1", "ln2", "ln3"):
        if ln in b and ln not in used:
            if ln == "ln3" and not decoder:
                raise LessonError("%sln3: only a decoder layer has a third norm" % where)
            warn("%s%s: not used (norm %s, %s)" % (where, ln, norm, "with ffn" if ffn else "no ffn"))
    for ln in used:
        load_norm_params(b.get(ln, {}), where + ln + ".", kind, d_model, params, prefix + ln + "_")
    cfg = {"norm": norm, "kind": kind, "eps": eps, "ffn": None, "prefix": prefix, "nsub": nsub}
    if ffn is not None:
        fw = where + "ffn."
        check_keys(ffn, FFN_KEYS, fw.rstrip("."))
        act = ffn.get("activation", "relu")
        if act not in ("relu", "gelu", "swiglu"):
            raise LessonError('%sactivation: expected "relu", "gelu" or "swiglu", got %r' % (fw, act))
        if "W_1" not in ffn or "W_2" not in ffn:
            raise LessonError("%sW_1 and W_2: required" % fw)
        W_1 = shaped(ffn["W_1"], fw + "W_1", d_model, None)
        d_ff = W_1.shape[1]
        params[prefix + "ffn_W_1"] = W_1
        params[prefix + "ffn_b_1"] = vector(ffn["b_1"], fw + "b_1", d_ff) if "b_1" in ffn else torch.zeros(d_ff)
        params[prefix + "ffn_W_2"] = shaped(ffn["W_2"], fw + "W_2", d_ff, d_model)
        params[prefix + "ffn_b_2"] = vector(ffn["b_2"], fw + "b_2", d_model) if "b_2" in ffn else torch.zeros(d_model)
        if act == "swiglu":
            if "W_3" not in ffn:
                raise LessonError("%sW_3: required with swiglu" % fw)
            params[prefix + "ffn_W_3"] = shaped(ffn["W_3"], fw + "W_3", d_model, d_ff)
            params[prefix + "ffn_b_3"] = vector(ffn["b_3"], fw + "b_3", d_ff) if "b_3" in ffn else torch.zeros(d_ff)
        else:
            for k in ("W_3", "b_3"):
                if k in ffn:
                    warn("%s%s: not used (only swiglu has a gate)" % (fw, k))
        cfg["ffn"] = act
        cfg["d_ff"] = d_ff
    return cfg


def load_final_norm(b, where, d_model, params, prefix):
    if "final_norm" not in b:
        return None
    kind = b.get("norm_kind", "layernorm")
    eps = float(b.get("eps", 1e-5))
    load_norm_params(b["final_norm"], where + "final_norm.", kind, d_model, params, prefix + "final_norm_")
    return {"kind": kind, "eps": eps, "prefix": prefix + "final_norm_"}


def load_input(obj, where, key_prefix, les):
    X = matrix(obj["X"], where + "X") if "X" in obj else None
    if X is None:
        raise LessonError("%sX: required" % where)
    toks = tokens_of(obj, X, where)
    pos = obj.get("positional", "none")
    if pos not in ("none", "sinusoidal"):
        raise LessonError('%spositional: expected "none" or "sinusoidal"' % where)
    les.inputs[key_prefix + "input"] = X
    return {"tokens": toks, "positional": pos, "n": X.shape[0], "d_model": X.shape[1],
            "input": key_prefix + "input"}


def load(doc):
    if doc.get("attnviz") != 2:
        raise LessonError("attnviz: expected 2")
    check_keys(doc, TOP_KEYS, "")
    les = Lesson()
    les.title = english(doc.get("title", ""))
    score = doc.get("score", "dot")
    if score not in ("dot", "additive"):
        raise LessonError('score: expected "dot" or "additive"')
    G = {"score": score, "scale": doc.get("scale", True), "fill": fill_value(doc.get("mask_fill", "-inf"))}
    les.G = G
    dec = load_input(doc, "", "", les)
    n, d_model = dec["n"], dec["d_model"]
    top_get = lambda k: (doc[k], k) if k in doc else None   # noqa: E731

    if "encoder" in doc:
        les.kind = "encdec"
        for k in ATTN_KEYS + ("source",):
            if k in doc:
                raise LessonError("%s: an encoder-decoder lesson gives its attention in self and cross" % k)
        enc_doc = doc["encoder"]
        check_keys(enc_doc, {"tokens", "X", "positional", "mask", "block", "layers"} | set(ATTN_KEYS), "encoder")
        enc = load_input(enc_doc, "encoder.", "encoder.", les)
        m, d_enc = enc["n"], enc["d_model"]
        enc_vis = visibility(enc_doc.get("mask", "none"), m, m, "encoder.mask")
        enc["layers"] = load_stack(enc_doc, enc_doc.get("layers"), "encoder.", d_enc, enc_vis, G,
                                   les.params, "encoder.")
        enc["final_norm"] = load_final_norm(enc_doc.get("block", {}), "encoder.block.", d_enc,
                                            les.params, "encoder.")
        les.enc = enc
        layer_docs = doc.get("layers")
        single = layer_docs is None
        if single:
            layer_docs = [{}]
        if not isinstance(layer_docs, list) or not layer_docs:
            raise LessonError("layers: expected a list of at least one layer")
        layers = []
        for i, ld in enumerate(layer_docs):
            lw = "" if single else "layers[%d]." % i
            check_keys(ld, {"self", "cross", "block"}, lw.rstrip("."))
            pre = "layers.%d." % i
            L = {"decoder": True}
            for part, key in (("self", "self_attn"), ("cross", "cross_attn")):
                if part in ld:
                    obj, pw = ld[part], lw + part + "."
                elif part in doc:
                    obj, pw = doc[part], part + "."
                else:
                    raise LessonError("%s%s: required in a decoder layer" % (lw, part))
                check_keys(obj, set(ATTN_KEYS) | {"mask"}, pw.rstrip("."))
                get = (lambda o, w: (lambda k: (o[k], w + k) if k in o else None))(obj, pw)
                if part == "self":
                    vis = visibility(obj.get("mask", doc.get("mask", "causal")), n, n, pw + "mask")
                    L[key] = load_attention(get, pw, d_model, d_model, vis, G, d_model, les.params, pre + key + ".")
                else:
                    vis = visibility(obj.get("mask", "none"), n, m, pw + "mask")
                    L[key] = load_attention(get, pw, d_model, d_enc, vis, G, d_model, les.params, pre + key + ".")
            if "block" in ld:
                b, bw = ld["block"], lw + "block."
            else:
                b, bw = doc.get("block", {}), "block."
            L["block"] = load_block(b, bw, d_model, True, les.params, pre)
            if "final_norm" in b and b is not doc.get("block"):
                warn("%sfinal_norm: not used (only the top-level block's final_norm is)" % bw)
            layers.append(L)
        dec["layers"] = layers
        dec["final_norm"] = load_final_norm(doc.get("block", {}), "block.", d_model, les.params, "")
    elif "block" in doc or "layers" in doc:
        les.kind = "stack"
        for k in ("source", "self", "cross"):
            if k in doc:
                raise LessonError("%s: not in a block lesson without an encoder" % k)
        vis = visibility(doc.get("mask", "none"), n, n, "mask")
        dec["layers"] = load_stack(doc, doc.get("layers"), "", d_model, vis, G, les.params, "")
        dec["final_norm"] = load_final_norm(doc.get("block", {}), "block.", d_model, les.params, "")
    else:
        les.kind = "attention"
        for k in ("self", "cross"):
            if k in doc:
                raise LessonError("%s: only in an encoder-decoder lesson" % k)
        src = doc.get("source")
        if src is not None:
            check_keys(src, {"tokens", "X"}, "source")
            S = matrix(src["X"], "source.X")
            les.inputs["source_input"] = S
            stoks = src.get("tokens")
            dec["source_tokens"] = [english(t) for t in stoks] if stoks is not None else \
                ["s%d" % j for j in range(S.shape[0])]
            m, d_src = S.shape
        else:
            m, d_src = n, d_model
        vis = visibility(doc.get("mask", "none"), n, m, "mask")
        dec["attn"] = load_attention(top_get, "", d_model, d_src, vis, G, None, les.params, "")
    les.dec = dec

    les.backward = None
    if "backward" in doc:
        bw = doc["backward"]
        check_keys(bw, {"target", "dOutput"}, "backward")
        if len(bw) != 1:
            raise LessonError('backward: expected exactly one of "target" and "dOutput"')
        key = next(iter(bw))
        d_out = dec["attn"]["d_out"] if les.kind == "attention" else d_model
        les.backward = (key, shaped(bw[key], "backward." + key, n, d_out))
    return les


def load_stack(top, layer_docs, where, d_model, visible, G, params, pprefix):
    """Encoder-style layers; a key a layer lacks comes from top (key by key,
    "block" whole)."""
    single = layer_docs is None
    if single:
        layer_docs = [{}]
    if not isinstance(layer_docs, list) or not layer_docs:
        raise LessonError("%slayers: expected a list of at least one layer" % where)
    layers = []
    for i, ld in enumerate(layer_docs):
        lw = where if single else "%slayers[%d]." % (where, i)
        check_keys(ld, set(ATTN_KEYS) | {"block"}, lw.rstrip("."))

        def get(k, ld=ld, lw=lw):
            if k in ld:
                return ld[k], lw + k
            if k in top:
                return top[k], where + k
            return None
        pre = "%slayers.%d." % (pprefix, i)
        L = {"decoder": False}
        L["attn"] = load_attention(get, lw, d_model, d_model, visible, G, d_model, params, pre + "attn.")
        if "block" in ld:
            b, bw = ld["block"], lw + "block."
            if "final_norm" in b:
                warn("%sfinal_norm: not used (only the top-level block's final_norm is)" % bw)
        else:
            b, bw = top.get("block", {}), where + "block."
        L["block"] = load_block(b, bw, d_model, False, params, pre)
        layers.append(L)
    return layers


# ------------------------------------------------------------- forward
class Recorder:
    """Keeps the intermediate tensors and asks autograd to keep their grads."""

    def __init__(self, track):
        self.track = track

    def __call__(self, t):
        if self.track and t.requires_grad and not t.is_leaf:
            t.retain_grad()
        return t


def attend(cfg, P, X, S, keep):
    p = lambda k: P[cfg["prefix"] + k]   # noqa: E731
    has = cfg["has"]
    h, d_k, d_v = cfg["h"], cfg["d_k"], cfg["d_v"]
    Q = torch.matmul(X, p("W_q"))
    K = torch.matmul(S, p("W_k"))
    V = torch.matmul(S, p("W_v"))
    if "b_q" in has:
        Q = Q + p("b_q")
    if "b_k" in has:
        K = K + p("b_k")
    if "b_v" in has:
        V = V + p("b_v")
    R = {"Q": keep(Q), "K": keep(K), "V": keep(V)}
    vis = cfg["visible"]
    if cfg["fill"] == NEG_INF:
        dead = ~vis.any(dim=1)
    else:
        dead = torch.zeros(vis.shape[0], dtype=torch.bool)
    heads, outs = [], []
    for i in range(h):
        q = Q[:, i * d_k:(i + 1) * d_k]
        k = K[:, i * d_k:(i + 1) * d_k]
        v = V[:, i * d_v:(i + 1) * d_v]
        if cfg["score"] == "additive":
            w = p("w_e")[i * d_k:(i + 1) * d_k]
            scores = torch.matmul(torch.tanh(q.unsqueeze(1) + k.unsqueeze(0)), w)
        else:
            scores = torch.matmul(q, k.transpose(0, 1))
        scaled = scores * cfg["factor"]
        masked = scaled.masked_fill(~vis, cfg["fill"])
        if bool(dead.any()):
            # Every key of these rows is -inf: softmax would give NaN (and NaN
            # gradients). The engine defines their weights as 0: softmax a row
            # of zeros instead and zero it afterwards, so nothing flows back.
            safe = masked.masked_fill(dead.unsqueeze(1), 0.0)
            weights = F.softmax(safe, dim=-1).masked_fill(dead.unsqueeze(1), 0.0)
        else:
            weights = F.softmax(masked, dim=-1)
        out = torch.matmul(weights, v)
        heads.append({"scores": keep(scores), "scaled": keep(scaled), "masked": keep(masked),
                      "weights": keep(weights), "output": keep(out)})
        outs.append(out)
    R["heads"] = heads
    concat = torch.cat(outs, dim=1) if h > 1 else outs[0]
    R["concat"] = keep(concat)
    if "W_o" in has:
        output = torch.matmul(concat, p("W_o"))
        if "b_o" in has:
            output = output + p("b_o")
        R["output"] = keep(output)
    else:
        R["output"] = concat
    R["row_all_masked"] = [i for i in range(len(dead)) if dead[i]]
    return R


def normalize(x, kind, eps, gamma, beta):
    """LayerNorm: (x - mean) / sqrt(biased var + eps) * gamma + beta; RMSNorm: x / sqrt(mean(x^2) + eps) * gamma."""
    if kind == "layernorm":
        mu = x.mean(dim=-1, keepdim=True)
        c = x - mu
        var = (c * c).mean(dim=-1, keepdim=True)
        return c / torch.sqrt(var + eps) * gamma + beta
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * gamma


def feed_forward(blk, P, x, rec, keep):
    pre = blk["prefix"] + "ffn_"
    hidden = keep(torch.matmul(x, P[pre + "W_1"]) + P[pre + "b_1"])
    if blk["ffn"] == "relu":
        act = torch.relu(hidden)
    elif blk["ffn"] == "gelu":
        act = F.gelu(hidden)                     # the exact erf form
    else:
        gate = torch.matmul(x, P[pre + "W_3"]) + P[pre + "b_3"]
        act = F.silu(hidden) * gate
    keep(act)
    out = keep(torch.matmul(act, P[pre + "W_2"]) + P[pre + "b_2"])
    rec["ffn_hidden"], rec["ffn_act"], rec["ffn_out"] = hidden, act, out
    return out


def run_layer(L, P, x, mem, keep):
    """One layer: its sublayers (attention, [cross-attention,] FFN), each with
    its residual and norm in the block's order. Returns the record."""
    blk = L["block"]
    rec = {}
    subs = []
    if L["decoder"]:
        subs.append(lambda y: attend_into(rec, "self_attn", L, P, y, y, keep))
        subs.append(lambda y: attend_into(rec, "cross_attn", L, P, y, mem, keep))
    else:
        subs.append(lambda y: attend_into(rec, "attn", L, P, y, y, keep))
    if blk["ffn"] is not None:
        subs.append(lambda y: feed_forward(blk, P, y, rec, keep))

    def N(k, t):
        pre = blk["prefix"] + "ln%d_" % k
        return keep(normalize(t, blk["kind"], blk["eps"], P[pre + "gamma"], P.get(pre + "beta")))
    for k, sub in enumerate(subs, 1):
        if blk["norm"] == "pre":
            y = N(k, x)
            rec["norm%d" % k] = y
            x = keep(x + sub(y))
            rec["residual%d" % k] = x
        elif blk["norm"] == "post":
            r = keep(x + sub(x))
            rec["residual%d" % k] = r
            x = N(k, r)
            rec["norm%d" % k] = x
        else:
            x = keep(x + sub(x))
            rec["residual%d" % k] = x
    rec["output"] = x
    return rec


def attend_into(rec, key, L, P, x, s, keep):
    # An attention's settings may bring their own forward (make_reference_v3.py's
    # RoPE, grouped-query attention, ALiBi); the block around it is the same.
    rec[key] = L[key].get("attend", attend)(L[key], P, x, s, keep)
    return rec[key]["output"]


def run_side(side, P, I, mem, keep):
    R = {}
    inp = I[side["input"]]
    n, d = inp.shape
    if side["positional"] == "sinusoidal":
        R["PE"] = positional_encoding(n, d)
        X = keep(inp + R["PE"])
    else:
        X = inp
    R["X"] = X
    x = X
    R["layers"] = []
    for L in side["layers"]:
        rec = run_layer(L, P, x, mem, keep)
        R["layers"].append(rec)
        x = rec["output"]
    fn = side["final_norm"]
    if fn is not None:
        x = keep(normalize(x, fn["kind"], fn["eps"], P[fn["prefix"] + "gamma"], P.get(fn["prefix"] + "beta")))
    R["output"] = x
    return R


def forward(les, P, I, track=False):
    keep = Recorder(track)
    if les.kind == "attention":
        R = {}
        inp = I["input"]
        n, d = inp.shape
        if les.dec["positional"] == "sinusoidal":
            R["PE"] = positional_encoding(n, d)
            X = keep(inp + R["PE"])
        else:
            X = inp
        R["X"] = X
        S = X
        if "source_input" in I:
            S = I["source_input"]
            if les.dec["positional"] == "sinusoidal":
                R["PE_src"] = positional_encoding(S.shape[0], S.shape[1])
                S = keep(S + R["PE_src"])
            R["S"] = S
        R["attn"] = attend(les.dec["attn"], P, X, S, keep)
        R["output"] = R["attn"]["output"]
    else:
        mem, R = None, {}
        if les.kind == "encdec":
            R["encoder"] = run_side(les.enc, P, I, None, keep)
            mem = R["encoder"]["output"]
        R.update(run_side(les.dec, P, I, mem, keep))
    if les.backward is not None:
        R["loss"] = loss_of(les, R["output"])
    return R


def loss_of(les, out):
    kind, T = les.backward
    if kind == "target":
        d = out - T
        return 0.5 * (d * d).sum()
    return (T * out).sum()


def leaves(les, P0, requires_grad=True):
    P = {k: v.detach().clone().requires_grad_(requires_grad) for k, v in P0.items()}
    I = {k: v.detach().clone().requires_grad_(requires_grad) for k, v in les.inputs.items()}
    return P, I


# ------------------------------------------------- second forward (einsum)
def alt_attend(cfg, P, X, S):
    p = lambda k: P.get(cfg["prefix"] + k)   # noqa: E731
    h, d_k, d_v = cfg["h"], cfg["d_k"], cfg["d_v"]
    n, m = X.shape[0], S.shape[0]
    q = F.linear(X, p("W_q").t(), p("b_q")).reshape(n, h, d_k)
    k = F.linear(S, p("W_k").t(), p("b_k")).reshape(m, h, d_k)
    v = F.linear(S, p("W_v").t(), p("b_v")).reshape(m, h, d_v)
    if cfg["score"] == "additive":
        t = torch.tanh(q.unsqueeze(1) + k.unsqueeze(0))                     # n m h d_k
        sc = torch.einsum("nmhc,hc->hnm", t, p("w_e").reshape(h, d_k))
    else:
        sc = torch.einsum("nhc,mhc->hnm", q, k)
    sc = sc * cfg["factor"]
    vis = cfg["visible"].unsqueeze(0).expand_as(sc)
    if cfg["fill"] == NEG_INF:
        mx = torch.where(vis, sc, torch.full_like(sc, NEG_INF)).amax(dim=-1, keepdim=True)
        mx = torch.where(torch.isfinite(mx), mx, torch.zeros_like(mx)).detach()
        e = torch.where(vis, torch.exp(torch.where(vis, sc - mx, torch.zeros_like(sc))), torch.zeros_like(sc))
        s = e.sum(dim=-1, keepdim=True)
        w = e / torch.where(s > 0, s, torch.ones_like(s))
    else:
        z = torch.where(vis, sc, torch.full_like(sc, cfg["fill"]))
        z = z - z.amax(dim=-1, keepdim=True).detach()
        e = torch.exp(z)
        w = e / e.sum(dim=-1, keepdim=True)
    o = torch.einsum("hnm,mhc->nhc", w, v).reshape(n, h * d_v)
    if p("W_o") is not None:
        o = F.linear(o, p("W_o").t(), p("b_o"))
    return o


def alt_norm(x, kind, eps, gamma, beta):
    if kind == "layernorm":
        return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps)
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * gamma


def alt_ffn(blk, P, x):
    pre = blk["prefix"] + "ffn_"
    hdn = F.linear(x, P[pre + "W_1"].t(), P[pre + "b_1"])
    if blk["ffn"] == "relu":
        act = hdn * (hdn > 0)
    elif blk["ffn"] == "gelu":
        act = 0.5 * hdn * (1.0 + torch.erf(hdn / math.sqrt(2.0)))
    else:
        act = hdn * torch.sigmoid(hdn) * F.linear(x, P[pre + "W_3"].t(), P[pre + "b_3"])
    return F.linear(act, P[pre + "W_2"].t(), P[pre + "b_2"])


def alt_layer(L, P, x, mem):
    """The sublayer order written out as the format states it."""
    blk = L["block"]

    def N(k, t):
        pre = blk["prefix"] + "ln%d_" % k
        return alt_norm(t, blk["kind"], blk["eps"], P[pre + "gamma"], P.get(pre + "beta"))
    ffn = (lambda t: alt_ffn(blk, P, t)) if blk["ffn"] else None
    norm = blk["norm"]
    if not L["decoder"]:
        alt = L["attn"].get("alt_attend", alt_attend)      # make_reference_v3.py brings its own
        attn = lambda t: alt(L["attn"], P, t, t)   # noqa: E731
        if norm == "post":
            norm1 = N(1, x + attn(x))
            if ffn is None:
                return norm1
            return N(2, norm1 + ffn(norm1))
        if norm == "pre":
            residual1 = x + attn(N(1, x))
            if ffn is None:
                return residual1
            return residual1 + ffn(N(2, residual1))
        residual1 = x + attn(x)
        return residual1 if ffn is None else residual1 + ffn(residual1)
    sa = lambda t: alt_attend(L["self_attn"], P, t, t)     # noqa: E731
    ca = lambda t: alt_attend(L["cross_attn"], P, t, mem)  # noqa: E731
    if norm == "post":
        norm1 = N(1, x + sa(x))
        norm2 = N(2, norm1 + ca(norm1))
        return norm2 if ffn is None else N(3, norm2 + ffn(norm2))
    if norm == "pre":
        residual1 = x + sa(N(1, x))
        residual2 = residual1 + ca(N(2, residual1))
        return residual2 if ffn is None else residual2 + ffn(N(3, residual2))
    residual1 = x + sa(x)
    residual2 = residual1 + ca(residual1)
    return residual2 if ffn is None else residual2 + ffn(residual2)


def alt_side(side, P, I, mem):
    x = I[side["input"]]
    if side["positional"] == "sinusoidal":
        x = x + positional_encoding(x.shape[0], x.shape[1])
    for L in side["layers"]:
        x = alt_layer(L, P, x, mem)
    fn = side["final_norm"]
    if fn is not None:
        x = alt_norm(x, fn["kind"], fn["eps"], P[fn["prefix"] + "gamma"], P.get(fn["prefix"] + "beta"))
    return x


def alt_forward(les, P, I):
    if les.kind == "attention":
        X = I["input"]
        pe = les.dec["positional"] == "sinusoidal"
        if pe:
            X = X + positional_encoding(X.shape[0], X.shape[1])
        S = X
        if "source_input" in I:
            S = I["source_input"]
            if pe:
                S = S + positional_encoding(S.shape[0], S.shape[1])
        return alt_attend(les.dec["attn"], P, X, S)
    mem = alt_side(les.enc, P, I, None) if les.kind == "encdec" else None
    return alt_side(les.dec, P, I, mem)


# --------------------------------------------- PyTorch's own modules (nn)
def nn_attention_ok(cfg, d_model):
    return (cfg["score"] == "dot" and cfg["fill"] == NEG_INF and bool(cfg["visible"].any(dim=1).all())
            and cfg["factor"] == 1.0 / math.sqrt(cfg["d_k"])
            and cfg["h"] * cfg["d_k"] == d_model and cfg["h"] * cfg["d_v"] == d_model
            and cfg["d_out"] == d_model)


def nn_layer_ok(L, d_model, d_mem):
    blk = L["block"]
    if blk["norm"] == "none" or blk["kind"] != "layernorm":
        return False
    if blk["ffn"] is None and blk["norm"] != "pre":
        return False          # post-norm always normalises after the FFN sublayer
    if blk["ffn"] not in (None, "relu", "gelu"):
        return False
    if L["decoder"]:
        return (nn_attention_ok(L["self_attn"], d_model) and nn_attention_ok(L["cross_attn"], d_model)
                and d_mem == d_model)
    return nn_attention_ok(L["attn"], d_model)


def nn_mha_params(cfg, P, prefix):
    """nn.MultiheadAttention's parameters from the lesson's (row convention: transpose)."""
    p = lambda k: P.get(cfg["prefix"] + k)   # noqa: E731
    e = cfg["h"] * cfg["d_k"]
    z = torch.zeros(e)
    out = {}
    if cfg["d_kv"] == cfg["d_q"]:
        out[prefix + "in_proj_weight"] = torch.cat([p("W_q").t(), p("W_k").t(), p("W_v").t()], 0)
    return {**out, prefix + "in_proj_bias": torch.cat([p(b) if p(b) is not None else z for b in ("b_q", "b_k", "b_v")]),
            prefix + "out_proj.weight": p("W_o").t() if p("W_o") is not None else torch.eye(e),
            prefix + "out_proj.bias": p("b_o") if p("b_o") is not None else z}


def nn_layer_params(L, P, d_model, prefix=""):
    blk = L["block"]
    out = {}
    if L["decoder"]:
        out.update(nn_mha_params(L["self_attn"], P, prefix + "self_attn."))
        out.update(nn_mha_params(L["cross_attn"], P, prefix + "multihead_attn."))
        norms = 3
    else:
        out.update(nn_mha_params(L["attn"], P, prefix + "self_attn."))
        norms = 2
    pre = blk["prefix"]
    if blk["ffn"] is not None:
        out[prefix + "linear1.weight"] = P[pre + "ffn_W_1"].t()
        out[prefix + "linear1.bias"] = P[pre + "ffn_b_1"]
        out[prefix + "linear2.weight"] = P[pre + "ffn_W_2"].t()
        out[prefix + "linear2.bias"] = P[pre + "ffn_b_2"]
    else:   # pre-norm without an FFN: an FFN that adds exactly 0
        out[prefix + "linear1.weight"] = torch.zeros(1, d_model)
        out[prefix + "linear1.bias"] = torch.zeros(1)
        out[prefix + "linear2.weight"] = torch.zeros(d_model, 1)
        out[prefix + "linear2.bias"] = torch.zeros(d_model)
    for k in range(1, norms + 1):
        g = P.get(pre + "ln%d_gamma" % k)
        out[prefix + "norm%d.weight" % k] = g if g is not None else torch.ones(d_model)
        b = P.get(pre + "ln%d_beta" % k)
        out[prefix + "norm%d.bias" % k] = b if b is not None else torch.zeros(d_model)
    return out


def nn_layer_module(L, d_model):
    blk = L["block"]
    cls = nn.TransformerDecoderLayer if L["decoder"] else nn.TransformerEncoderLayer
    h = L["self_attn"]["h"] if L["decoder"] else L["attn"]["h"]
    if L["decoder"] and L["cross_attn"]["h"] != h:
        return None
    mod = cls(d_model, h, dim_feedforward=blk.get("d_ff", 1), dropout=0.0,
              activation=blk["ffn"] or "relu", layer_norm_eps=blk["eps"], batch_first=True,
              norm_first=blk["norm"] == "pre")
    mod.train()   # dropout is 0; training mode keeps PyTorch off its inference fast path
    return mod


def bool_block(vis):
    """attnviz's "may attend" -> nn's attn_mask (True = not allowed)."""
    return ~vis


def nn_side(side, P, I, mem):
    """The side's layers, one PyTorch layer module each, and nn.LayerNorm as the final norm."""
    x = I[side["input"]]
    d_model = x.shape[1]
    if side["positional"] == "sinusoidal":
        x = x + positional_encoding(x.shape[0], d_model)
    x = x.unsqueeze(0)
    for L in side["layers"]:
        mod = nn_layer_module(L, d_model)
        params = nn_layer_params(L, P, d_model)
        if L["decoder"]:
            x = stateless.functional_call(mod, params, (x, mem), {
                "tgt_mask": bool_block(L["self_attn"]["visible"]),
                "memory_mask": bool_block(L["cross_attn"]["visible"])})
        else:
            x = stateless.functional_call(mod, params, (x,), {"src_mask": bool_block(L["attn"]["visible"])})
    fn = side["final_norm"]
    if fn is not None:
        ln = nn.LayerNorm(d_model, eps=fn["eps"])
        x = stateless.functional_call(ln, {"weight": P[fn["prefix"] + "gamma"], "bias": P[fn["prefix"] + "beta"]}, (x,))
    return x


def uniform_layers(layers, keys):
    first = layers[0]
    for L in layers:
        for part in keys:
            a, b = L[part], first[part]
            if (a["h"], a["d_k"]) != (b["h"], b["d_k"]) or not torch.equal(a["visible"], b["visible"]):
                return False
        if (L["block"]["norm"], L["block"]["eps"], L["block"]["ffn"], L["block"].get("d_ff")) != \
                (first["block"]["norm"], first["block"]["eps"], first["block"]["ffn"], first["block"].get("d_ff")):
            return False
    return first["block"]["ffn"] is not None


def nn_stack_params(layers, P, d_model, prefix):
    out = {}
    for i, L in enumerate(layers):
        out.update(nn_layer_params(L, P, d_model, "%slayers.%d." % (prefix, i)))
    return out


def nn_whole(les, P, I):
    """nn.TransformerEncoder / nn.TransformerDecoder / nn.Transformer, when every
    layer has the same shape; None otherwise."""
    dec = les.dec
    d_model = dec["d_model"]
    if les.kind == "stack":
        if not uniform_layers(dec["layers"], ["attn"]):
            return None, None
        L0 = dec["layers"][0]
        fn = dec["final_norm"]
        if fn is not None and fn["kind"] != "layernorm":
            return None, None
        norm = nn.LayerNorm(d_model, eps=fn["eps"]) if fn is not None else None
        model = nn.TransformerEncoder(nn_layer_module(L0, d_model), len(dec["layers"]), norm=norm,
                                      enable_nested_tensor=False)
        model.train()
        params = nn_stack_params(dec["layers"], P, d_model, "")
        if fn is not None:
            params["norm.weight"] = P["final_norm_gamma"]
            params["norm.bias"] = P["final_norm_beta"]
        x = I["input"]
        if dec["positional"] == "sinusoidal":
            x = x + positional_encoding(x.shape[0], d_model)
        y = stateless.functional_call(model, params, (x.unsqueeze(0),),
                                      {"mask": bool_block(L0["attn"]["visible"])})
        return y.squeeze(0), "nn.TransformerEncoder"
    enc = les.enc
    if enc["d_model"] != d_model or not uniform_layers(enc["layers"], ["attn"]) or \
            not uniform_layers(dec["layers"], ["self_attn", "cross_attn"]):
        return None, None
    E0, D0 = enc["layers"][0], dec["layers"][0]
    if (E0["attn"]["h"], E0["block"]["norm"], E0["block"]["eps"], E0["block"]["ffn"], E0["block"].get("d_ff")) != \
            (D0["self_attn"]["h"], D0["block"]["norm"], D0["block"]["eps"], D0["block"]["ffn"], D0["block"].get("d_ff")):
        return None, None
    fe, fd = enc["final_norm"], dec["final_norm"]
    if fe is None or fd is None or fe["kind"] != "layernorm" or fd["kind"] != "layernorm" or \
            fe["eps"] != E0["block"]["eps"] or fd["eps"] != E0["block"]["eps"]:
        return None, None
    b = E0["block"]
    model = nn.Transformer(d_model, E0["attn"]["h"], len(enc["layers"]), len(dec["layers"]), b["d_ff"],
                           dropout=0.0, activation=b["ffn"], layer_norm_eps=b["eps"], batch_first=True,
                           norm_first=b["norm"] == "pre")
    model.train()
    params = nn_stack_params(enc["layers"], P, d_model, "encoder.")
    params.update(nn_stack_params(dec["layers"], P, d_model, "decoder."))
    params["encoder.norm.weight"] = P["encoder.final_norm_gamma"]
    params["encoder.norm.bias"] = P["encoder.final_norm_beta"]
    params["decoder.norm.weight"] = P["final_norm_gamma"]
    params["decoder.norm.bias"] = P["final_norm_beta"]
    src, tgt = I["encoder.input"], I["input"]
    if enc["positional"] == "sinusoidal":
        src = src + positional_encoding(src.shape[0], d_model)
    if dec["positional"] == "sinusoidal":
        tgt = tgt + positional_encoding(tgt.shape[0], d_model)
    y = stateless.functional_call(model, params, (src.unsqueeze(0), tgt.unsqueeze(0)), {
        "src_mask": bool_block(E0["attn"]["visible"]),
        "tgt_mask": bool_block(D0["self_attn"]["visible"]),
        "memory_mask": bool_block(D0["cross_attn"]["visible"])})
    return y.squeeze(0), "nn.Transformer"


def nn_forward(les, P, I):
    """The whole lesson through PyTorch's modules, or (None, None) when a
    part of it has no PyTorch counterpart."""
    dec = les.dec
    if les.kind == "attention":
        cfg = dec["attn"]
        if not nn_attention_ok(cfg, dec["d_model"]):
            return None, None
        X = I["input"]
        pe = dec["positional"] == "sinusoidal"
        if pe:
            X = X + positional_encoding(X.shape[0], X.shape[1])
        S = X
        if "source_input" in I:
            S = I["source_input"]
            if pe:
                S = S + positional_encoding(S.shape[0], S.shape[1])
        mp = nn_mha_params(cfg, P, "")
        out, _ = F.multi_head_attention_forward(
            X.unsqueeze(1), S.unsqueeze(1), S.unsqueeze(1), dec["d_model"], cfg["h"],
            None, mp["in_proj_bias"], None, None, False, 0.0, mp["out_proj.weight"], mp["out_proj.bias"],
            training=False, attn_mask=bool_block(cfg["visible"]), need_weights=False,
            use_separate_proj_weight=True, q_proj_weight=P["W_q"].t(), k_proj_weight=P["W_k"].t(),
            v_proj_weight=P["W_v"].t())
        return out.squeeze(1), "F.multi_head_attention_forward"
    d_mem = les.enc["d_model"] if les.kind == "encdec" else None
    sides = [les.enc, dec] if les.kind == "encdec" else [dec]
    for side in sides:
        for L in side["layers"]:
            if not nn_layer_ok(L, side["d_model"], d_mem) or nn_layer_module(L, side["d_model"]) is None:
                return None, None
        fn = side["final_norm"]
        if fn is not None and fn["kind"] != "layernorm":
            return None, None
    y, name = nn_whole(les, P, I)
    if y is not None:
        return y, name
    mem = None
    if les.kind == "encdec":
        mem = nn_side(les.enc, P, I, None)
    y = nn_side(dec, P, I, mem)
    kinds = sorted({"nn.TransformerDecoderLayer" if L["decoder"] else "nn.TransformerEncoderLayer"
                    for s in sides for L in s["layers"]})
    return y.squeeze(0), "+".join(kinds)


def nn_layer_checks(les, R):
    """Layer by layer, for the layers PyTorch has a module for (in lessons where
    the whole model has none): that layer's output from the same input, and
    the parameter gradients from the same upstream gradient."""
    names = []
    sides = [("encoder.", les.enc, R["encoder"])] if les.kind == "encdec" else []
    sides.append(("", les.dec, R))
    d_mem = les.enc["d_model"] if les.kind == "encdec" else None
    for prefix, side, SR in sides:
        d_model = side["d_model"]
        x = SR["X"]
        for i, L in enumerate(side["layers"]):
            rec = SR["layers"][i]
            if nn_layer_ok(L, d_model, d_mem) and nn_layer_module(L, d_model) is not None:
                mod = nn_layer_module(L, d_model)
                pnames = [k for k in les.params if k.startswith("%slayers.%d." % (prefix, i))]
                P = {k: les.cur[k].detach().clone().requires_grad_() for k in pnames}
                xin = x.detach().clone().requires_grad_()
                params = nn_layer_params(L, P, d_model)
                if L["decoder"]:
                    mem = R["encoder"]["output"].detach()
                    y = stateless.functional_call(mod, params, (xin.unsqueeze(0), mem.unsqueeze(0)), {
                        "tgt_mask": bool_block(L["self_attn"]["visible"]),
                        "memory_mask": bool_block(L["cross_attn"]["visible"])}).squeeze(0)
                else:
                    y = stateless.functional_call(mod, params, (xin.unsqueeze(0),),
                                                  {"src_mask": bool_block(L["attn"]["visible"])}).squeeze(0)
                agree(y, rec["output"], "%slayers[%d] output (%s)" % (prefix, i, type(mod).__name__))
                if les.backward is not None:
                    g = rec["output"].grad
                    (y * g).sum().backward()
                    for k in pnames:
                        agree(P[k].grad, les.cur_grad[k], "%s grad (%s)" % (k, type(mod).__name__))
                    # the layer's input feeds only this layer
                    gx = x.grad if x.grad is not None else torch.zeros_like(x)
                    agree(xin.grad, gx, "%slayers[%d] input grad (%s)" % (prefix, i, type(mod).__name__))
                names.append("nn.%s(%slayers[%d])%s" % (type(mod).__name__, prefix, i,
                                                        "+grad" if les.backward is not None else ""))
            x = rec["output"]
    return names


# ------------------------------------------------------------- checks
class CheckFailed(Exception):
    pass


def agree(a, b, what, tol=TOL):
    if a is None or b is None:
        raise CheckFailed("%s: a gradient is missing" % what)
    a, b = a.detach(), b.detach()
    if a.shape != b.shape:
        raise CheckFailed("%s: shapes %s and %s" % (what, tuple(a.shape), tuple(b.shape)))
    both = torch.isfinite(b)
    if not torch.equal(torch.isfinite(a), both) or not torch.equal(a[~both], b[~both]):
        raise CheckFailed("%s: the infinities differ" % what)
    bad = (a[both] - b[both]).abs() > tol * (1.0 + b[both].abs())
    if bool(bad.any()):
        raise CheckFailed("%s: differs by %.3g" % (what, float((a[both] - b[both]).abs().max())))


def grads_of(les, fwd, P0):
    """Output, loss and the gradient of every parameter and input, through fwd."""
    P, I = leaves(les, P0)
    out = fwd(les, P, I)
    if isinstance(out, tuple):
        out = out[0]
    if les.backward is None:
        return out, None, None
    loss = loss_of(les, out)
    names = list(P) + list(I)
    gs = torch.autograd.grad(loss, [P[k] for k in P] + [I[k] for k in I], allow_unused=True)
    return out, loss, {k: (g if g is not None else torch.zeros_like((P if k in P else I)[k]))
                       for k, g in zip(names, gs)}


def cross_check(les, R):
    checks = []
    ref_grads = dict(les.cur_grad) if les.backward is not None else None
    out, loss, g = grads_of(les, alt_forward, les.cur)
    agree(out, R["output"], "einsum output")
    if loss is not None:
        agree(loss, R["loss"], "einsum loss")
        for k in g:
            agree(g[k], ref_grads[k], "einsum grad %s" % k)
    checks.append("einsum" + ("+grad" if loss is not None else ""))
    P, I = leaves(les, les.cur)
    y, name = nn_forward(les, P, I)
    if y is not None:
        out, loss, g = grads_of(les, nn_forward, les.cur)
        agree(out, R["output"], name + " output")
        if loss is not None:
            agree(loss, R["loss"], name + " loss")
            for k in g:
                agree(g[k], ref_grads[k], "%s grad %s" % (name, k))
        checks.append(name + ("+grad" if loss is not None else ""))
    elif les.kind != "attention":
        checks += nn_layer_checks(les, R)
    return checks


def v1_check(doc, les, R):
    """A lesson version 1 could state: its forward keys from make_reference.py."""
    if les.kind != "attention" or any(k in doc for k in ("b_q", "b_k", "b_v", "b_o")):
        return []
    d1 = {k: v for k, v in doc.items() if k not in ("backward", "compare")}  # the variant is checked on its own below
    d1["attnviz"] = 1
    ref1, _ = v1.reference(d1)
    mine = Pairs(dump_forward(les, R))
    keys_mine = {k: v for k, v in mine}
    for k, v in ref1:
        if k in ("attnviz", "stages"):
            continue
        if k not in keys_mine:
            raise CheckFailed("v1: key %s missing" % k)
        compare_json(v, keys_mine[k], "v1 " + k)
    return ["v1"]


def compare_json(a, b, what):
    if isinstance(a, (list, tuple)) and not isinstance(a, str):
        if len(a) != len(b):
            raise CheckFailed("%s: lengths differ" % what)
        for x, y in zip(a, b):
            compare_json(x[1] if isinstance(x, tuple) else x, y[1] if isinstance(y, tuple) else y, what)
    elif isinstance(a, float):
        if not abs(a - b) <= 1e-12 + 1e-12 * abs(a):
            raise CheckFailed("%s: %r against %r" % (what, a, b))
    elif a != b:
        raise CheckFailed("%s: %r against %r" % (what, a, b))


def attention_records(les, R):
    """(settings, record, name) for every attention in the lesson."""
    if les.kind == "attention":
        return [(les.dec["attn"], R["attn"], "attention")]
    out = []
    sides = [("encoder.", les.enc, R["encoder"])] if les.kind == "encdec" else []
    for prefix, side, SR in sides + [("", les.dec, R)]:
        for i, (L, rec) in enumerate(zip(side["layers"], SR["layers"])):
            for key in ("attn", "self_attn", "cross_attn"):
                if key in rec:
                    out.append((L[key], rec[key], "%slayers[%d].%s" % (prefix, i, key)))
    return out


def chain_check(les, R):
    """The attention gradients autograd kept, against the chain rule written
    out (issue 10's formulas), and the dump's rules for masked cells."""
    if les.backward is None:
        return []
    G = les.cur_grad
    for cfg, A, what in attention_records(les, R):
        d_k, d_v = cfg["d_k"], cfg["d_v"]
        vis = cfg["visible"]
        g = lambda t: t.grad if t.grad is not None else torch.zeros_like(t)   # noqa: E731
        dead = ~vis.any(dim=1) if cfg["fill"] == NEG_INF else torch.zeros(vis.shape[0], dtype=torch.bool)
        g_concat = g(A["concat"])
        if "W_o" in cfg["has"]:
            W_o = R["_P"][cfg["prefix"] + "W_o"].detach()
            agree(g_concat, g(A["output"]) @ W_o.t(), what + " dL/dconcat")
            agree(G[cfg["prefix"] + "W_o"], A["concat"].detach().t() @ g(A["output"]), what + " dL/dW_o")
        Q, K, V = A["Q"].detach(), A["K"].detach(), A["V"].detach()
        for i, hd in enumerate(A["heads"]):
            q, k, v = Q[:, i * d_k:(i + 1) * d_k], K[:, i * d_k:(i + 1) * d_k], V[:, i * d_v:(i + 1) * d_v]
            w = hd["weights"].detach()
            g_out = g(hd["output"])
            agree(g_out, g_concat[:, i * d_v:(i + 1) * d_v], what + " dL/dweighted")
            g_w = g_out @ v.t()
            agree(g(hd["weights"]), g_w, what + " dL/dweights = dL/dweighted V^T")
            agree(g(A["V"])[:, i * d_v:(i + 1) * d_v], w.t() @ g_out, what + " dL/dV = weights^T dL/dweighted")
            g_m = w * (g_w - (w * g_w).sum(dim=-1, keepdim=True))
            agree(g(hd["masked"]), g_m, what + " softmax backward")
            agree(g(hd["scaled"]), torch.where(vis, g_m, torch.zeros_like(g_m)), what + " mask backward")
            g_s = g(hd["scaled"]) * cfg["factor"]
            agree(g(hd["scores"]), g_s, what + " scale backward")
            if cfg["score"] == "dot":
                agree(g(A["Q"])[:, i * d_k:(i + 1) * d_k], g_s @ k, what + " dL/dQ")
                agree(g(A["K"])[:, i * d_k:(i + 1) * d_k], g_s.t() @ q, what + " dL/dK")
            else:
                we = R["_P"][cfg["prefix"] + "w_e"].detach()[i * d_k:(i + 1) * d_k]
                t = torch.tanh(q.unsqueeze(1) + k.unsqueeze(0))
                inner = g_s.unsqueeze(2) * we * (1 - t * t)          # n m d_k
                agree(g(A["Q"])[:, i * d_k:(i + 1) * d_k], inner.sum(1), what + " dL/dQ (additive)")
                agree(g(A["K"])[:, i * d_k:(i + 1) * d_k], inner.sum(0), what + " dL/dK (additive)")
            # the rules the dump promises
            for key in ("scaled", "scores") + (("masked",) if cfg["fill"] == NEG_INF else ()):
                if bool((g(hd[key])[~vis] != 0).any()):
                    raise CheckFailed("%s head %d: dL/d%s is not 0 in a masked cell" % (what, i, key))
            for key in ("masked", "scaled", "scores"):
                if bool((g(hd[key])[dead] != 0).any()):
                    raise CheckFailed("%s head %d: dL/d%s is not 0 in a row with no visible key" % (what, i, key))
    return ["chain"]


def fd_check(les):
    """Central differences, 4-point stencil, for a few cells."""
    if les.backward is None:
        return []
    names = list(les.cur)
    picks = []
    if names:
        picks.append((names[0], 0))
        picks.append((names[-1], les.cur[names[-1]].numel() - 1))
        for key in ("gamma", "ffn_W_1", "cross_attn.W_k", "w_e", "b_v"):
            hit = [k for k in names if key in k]
            if hit:
                picks.append((hit[len(hit) // 2], les.cur[hit[len(hit) // 2]].numel() // 2))
    for k in les.inputs:
        picks.append((k, 1))
    worst = 0.0
    for name, idx in picks:
        src = les.cur if name in les.cur else les.inputs
        base = src[name]
        h = 1e-4 * max(1.0, abs(float(base.reshape(-1)[idx])))

        def loss_at(delta):
            P = {k: v.clone() for k, v in les.cur.items()}
            I = {k: v.clone() for k, v in les.inputs.items()}
            tgt = P if name in P else I
            tgt[name].view(-1)[idx] += delta
            with torch.no_grad():
                return float(forward(les, P, I)["loss"])
        fd = (-loss_at(2 * h) + 8 * loss_at(h) - 8 * loss_at(-h) + loss_at(-2 * h)) / (12 * h)
        ad = float(les.cur_grad[name].reshape(-1)[idx])
        err = abs(fd - ad) / (1.0 + abs(ad))
        worst = max(worst, err)
        if err > FD_TOL:
            raise CheckFailed("finite differences: %s[%d]: autograd %r, finite differences %r" % (name, idx, ad, fd))
    return ["fd(%d cells, worst %.1e)" % (len(picks), worst)]


# ------------------------------------------------------------- compute
def evaluate(les):
    """Forward with every intermediate kept, and the backward pass."""
    P, I = leaves(les, les.cur)
    R = forward(les, P, I, track=True)
    les.cur_grad = None
    if les.backward is not None:
        if not math.isfinite(float(R["loss"])):
            raise LessonError("the loss is not finite")
        R["loss"].backward()
        les.cur_grad = {k: (t.grad if t.grad is not None else torch.zeros_like(t)) for k, t in P.items()}
        les.cur_grad.update({k: (t.grad if t.grad is not None else torch.zeros_like(t)) for k, t in I.items()})
    R["_P"], R["_I"] = P, I
    return R


def train(les, steps, lr, fwd=forward):
    """p <- p - lr * dL/dp, steps times. Returns the losses before each step."""
    losses = []
    P0 = {k: v.clone() for k, v in les.cur.items()}
    I = {k: v.clone() for k, v in les.inputs.items()}
    for _ in range(steps):
        P = {k: v.detach().clone().requires_grad_() for k, v in P0.items()}
        out = fwd(les, P, I)
        out = out["output"] if isinstance(out, dict) else out[0]
        loss = loss_of(les, out)
        if not math.isfinite(float(loss)):
            raise LessonError("training: the loss became %r" % float(loss))
        gs = torch.autograd.grad(loss, [P[k] for k in P], allow_unused=True)
        losses.append(float(loss))
        P0 = {k: (P[k] - lr * g if g is not None else P[k]).detach() for k, g in zip(P, gs)}
        for k, v in P0.items():
            if not bool(torch.isfinite(v).all()):
                raise LessonError("training: %s became non-finite" % k)
    return P0, losses


# ---------------------------------------------------------------- dump
def grad_rows(t):
    return rows(t.grad if t.grad is not None else torch.zeros_like(t))


def dump_attn(A):
    return Pairs([("Q", rows(A["Q"])), ("K", rows(A["K"])), ("V", rows(A["V"])),
                  ("heads", [Pairs((k, rows(hd[k])) for k in ("scores", "scaled", "masked", "weights", "output"))
                             for hd in A["heads"]]),
                  ("concat", rows(A["concat"])), ("output", rows(A["output"]))])


def grad_attn(cfg, A, G):
    d = Pairs([("output", grad_rows(A["output"])), ("concat", grad_rows(A["concat"]))])
    pre = cfg["prefix"]
    for k in ("W_o", "b_o"):
        if pre + k in G:
            d.append((k, rows(G[pre + k])))
    d.append(("heads", [Pairs([("weighted", grad_rows(hd["output"])), ("weights", grad_rows(hd["weights"])),
                                ("masked", grad_rows(hd["masked"])), ("scaled", grad_rows(hd["scaled"])),
                                ("scores", grad_rows(hd["scores"]))]) for hd in A["heads"]]))
    for k in ("Q", "K", "V"):
        d.append((k, grad_rows(A[k])))
    for k in ("W_q", "W_k", "W_v", "b_q", "b_k", "b_v", "w_e"):
        if pre + k in G:
            d.append((k, rows(G[pre + k])))
    return d


LAYER_KEYS = ("norm1", "residual1", "norm2", "residual2", "norm3", "residual3",
              "ffn_hidden", "ffn_act", "ffn_out")


def ordered_layer_keys(L, rec):
    """The layer's matrices in the order they are computed."""
    blk = L["block"]
    subs = (["self_attn", "cross_attn"] if L["decoder"] else ["attn"]) + (["ffn"] if blk["ffn"] else [])
    out = []
    for k, s in enumerate(subs, 1):
        body = ["ffn_hidden", "ffn_act", "ffn_out"] if s == "ffn" else [s]
        if blk["norm"] == "pre":
            out += ["norm%d" % k] + body + ["residual%d" % k]
        elif blk["norm"] == "post":
            out += body + ["residual%d" % k, "norm%d" % k]
        else:
            out += body + ["residual%d" % k]
    return out + ["output"]


def dump_side_layers(side, SR):
    out = []
    for L, rec in zip(side["layers"], SR["layers"]):
        d = Pairs()
        for k in ordered_layer_keys(L, rec):
            d.append((k, dump_attn(rec[k]) if k.endswith("attn") else rows(rec[k])))
        out.append(d)
    return out


def grad_side(side, SR, G, prefix):
    d = Pairs([("output", grad_rows(SR["output"])), ("X", grad_rows(SR["X"]))])
    layers = []
    for i, (L, rec) in enumerate(zip(side["layers"], SR["layers"])):
        g = Pairs()
        for k in ordered_layer_keys(L, rec):
            g.append((k, grad_attn(L[k], rec[k], G) if k.endswith("attn") else grad_rows(rec[k])))
        pre = "%slayers.%d." % (prefix, i)
        for k in G:
            if k.startswith(pre) and not k[len(pre):].startswith(("attn.", "self_attn.", "cross_attn.")):
                g.append((k[len(pre):], rows(G[k])))
        layers.append(g)
    d.append(("layers", layers))
    for k in ("gamma", "beta"):
        if prefix + "final_norm_" + k in G:
            d.append(("final_norm_" + k, rows(G[prefix + "final_norm_" + k])))
    return d


def dump_forward(les, R):
    P = R["_P"]
    dec = les.dec
    d = Pairs()
    if les.kind == "attention":
        A, cfg = R["attn"], dec["attn"]
        d += [("title", les.title), ("n", cfg["n"]), ("m", cfg["m"]), ("d_model", dec["d_model"]), ("h", cfg["h"]),
              ("d_k", cfg["d_k"]), ("d_v", cfg["d_v"]), ("tokens", dec["tokens"])]
        if "source_tokens" in dec:
            d.append(("source_tokens", dec["source_tokens"]))
        for k in ("W_q", "W_k", "W_v", "W_o", "w_e"):
            if k in P:
                d.append((k, rows(P[k])))
        d.append(("input", rows(R["_I"]["input"])))
        if "PE" in R:
            d.append(("PE", rows(R["PE"])))
        d.append(("X", rows(R["X"])))
        if "S" in R:
            d.append(("source_input", rows(R["_I"]["source_input"])))
            if "PE_src" in R:
                d.append(("PE_src", rows(R["PE_src"])))
            d.append(("S", rows(R["S"])))
        for k in ("Q", "K", "V"):
            d.append((k, rows(A[k])))
        d.append(("heads", dump_attn(A)[3][1]))
        d.append(("concat", rows(A["concat"])))
        d.append(("output", rows(A["output"])))
        d.append(("row_all_masked", A["row_all_masked"]))
        return d
    d.append(("tokens", dec["tokens"]))
    d.append(("input", rows(R["_I"]["input"])))
    if "PE" in R:
        d.append(("PE", rows(R["PE"])))
    d.append(("X", rows(R["X"])))
    if les.kind == "encdec":
        ER = R["encoder"]
        d.append(("encoder", Pairs([("X", rows(ER["X"])), ("layers", dump_side_layers(les.enc, ER)),
                                    ("output", rows(ER["output"]))])))
    d.append(("layers", dump_side_layers(dec, R)))
    d.append(("output", rows(R["output"])))
    return d


def dump_grad(les, R):
    G = les.cur_grad
    if les.kind == "attention":
        A, cfg = R["attn"], les.dec["attn"]
        g = grad_attn(cfg, A, G)
        g.append(("X", grad_rows(R["X"])))
        if "S" in R:
            g.append(("S", grad_rows(R["S"])))
        return g
    g = grad_side(les.dec, R, G, "")
    if les.kind == "encdec":
        g.append(("encoder", grad_side(les.enc, R["encoder"], G, "encoder.")))
    return g


# ------------------------------------------------------------- driver
def reference(doc, steps=None, lr=None):
    les = load(doc)
    les.cur = dict(les.params)
    checks = []
    losses = None
    if steps is not None:
        if les.backward is None:
            raise LessonError("--train needs a lesson with \"backward\"")
        P_end, losses = train(les, steps, lr)
        y, name = nn_forward(les, *leaves(les, les.cur, False))
        if y is not None:
            P_nn, losses_nn = train(les, steps, lr, fwd=nn_forward)
            for a, b in zip(losses_nn, losses):
                agree(torch.tensor(a), torch.tensor(b), "training loss (%s)" % name)
            for k in P_end:
                agree(P_nn[k], P_end[k], "trained %s (%s)" % (k, name))
            checks.append("train:" + name)
        P_alt, losses_alt = train(les, steps, lr, fwd=lambda les_, P, I: (alt_forward(les_, P, I),))
        for a, b in zip(losses_alt, losses):
            agree(torch.tensor(a), torch.tensor(b), "training loss (einsum)")
        for k in P_end:
            agree(P_alt[k], P_end[k], "trained %s (einsum)" % k)
        checks.append("train:einsum")
        les.cur = P_end
    R = evaluate(les)
    checks = cross_check(les, R) + checks
    if steps is None:
        checks += v1_check(doc, les, R)
    checks += chain_check(les, R)
    checks += fd_check(les)
    d = dump_forward(les, R)
    if les.backward is not None:
        d.append(("loss", float(R["loss"])))
        d.append(("grad", dump_grad(les, R)))
    if steps is not None:
        losses.append(float(R["loss"]))
        d.append(("train", Pairs([("steps", steps), ("lr", lr), ("loss", losses)])))
    if "compare" in doc:
        # The variant, as make_reference.py --lessons writes it (a "block"
        # in "compare" replaces the whole block).
        if steps is not None:
            raise LessonError("compare: not with --train")
        sub_dump, sub = reference(v1.compare_variant(doc))
        d.append(("compare", sub_dump))
        checks += ["compare:" + c for c in sub]
    return d, checks


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description="PyTorch reference for an attnviz version-2 lesson")
    ap.add_argument("lesson")
    ap.add_argument("--train", type=int, metavar="STEPS")
    ap.add_argument("--lr", type=float)
    a = ap.parse_args(argv[1:])
    if (a.train is None) != (a.lr is None):
        ap.error("--train STEPS and --lr LR go together")
    if a.train is not None and a.train < 1:
        ap.error("--train: expected a whole number >= 1")
    import json
    with open(a.lesson, encoding="utf-8") as f:
        doc = json.load(f)
    d, checks = reference(doc, a.train, a.lr)
    sys.stdout.write(to_json(d) + "\n")
    for w in WARNINGS:
        print("%s: warning: %s" % (a.lesson, w), file=sys.stderr)
    print("%s: %s" % (a.lesson, ", ".join(checks)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (LessonError, CheckFailed, KeyError, ValueError, OSError) as e:
        print("make_reference_v2.py: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        sys.exit(1)
