#!/usr/bin/python3
"""Independent reference numbers for issue 23 §3: local and global layers
(a sliding window on some layers, full causal attention on the others),
computed with PyTorch in float64:

    make_reference_localglobal.py --all tests/golden/localglobal   # the lessons and every NAME.ref.json
    make_reference_localglobal.py LESSON.json > LESSON.ref.json
    make_reference_localglobal.py lessons/localglobal.json > tests/golden/lessons/localglobal.ref.json

Written from issue 23, lessons/FORMAT.md and the transformers code below,
not from the C code. The rest of a layer (projections, RoPE, repeat_kv, the
pre-norm block, the final norm and the LM head) is make_reference_v4.py's,
imported and unchanged; this script replaces its attention() with one whose
mask is each layer's own. The lines followed (transformers,
src/transformers/…, at commit 00c4411cbe15d4c56d54d3b56d4d171e9c289dac):

  masking_utils.py, causal_mask_function (lines 72-76):
        return kv_idx <= q_idx
  masking_utils.py, sliding_window_overlay (lines 88-97), put on top of the
  causal mask by sliding_window_causal_mask_function (and_masks):
        return kv_idx > q_idx - sliding_window
  so a query at i sees keys j with i - W < j <= i: the W most recent tokens,
  itself included.
  models/gemma3/modeling_gemma3.py, Gemma3Attention.__init__:
        self.is_sliding = self.layer_type == "sliding_attention"
        self.sliding_window = config.sliding_window if self.is_sliding else None
  and Gemma3TextModel.forward: causal_mask_mapping = {"full_attention":
  create_causal_mask(...), "sliding_attention": create_sliding_window_causal_mask(...)},
  each layer given causal_mask_mapping[decoder_layer.attention_type]
  (gpt_oss/modeling_gpt_oss.py and qwen2/modeling_qwen2.py do the same).
  The mask is added as 0 / -inf before the softmax (eager_attention_forward).

A lesson's layer says its kind with its own "mask" ({"window": W} local,
"causal" global; a list of masks is every one at once), and may turn with
its own RoPE base ("rope": {"base": b}), as Gemma 3's Gemma3TextModel keeps
two rotary embeddings (models/gemma3/modeling_gemma3.py: rotary_emb with
rope_theta for the global layers, rotary_emb_local with
rope_local_base_freq for the sliding ones). Cross-check
(stderr): the window's mask again cell by cell from i - W < j <= i, and each
local row's weights summing to 1 over at most W keys.

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_v4 as v4  # noqa: E402  (its layer, norms, RoPE and LM head, unchanged)
from lessonfiles import lesson_json, write_lessons, write_references  # noqa: E402

torch.set_default_dtype(torch.float64)
T, agree = v4.T, v4.agree


def sees(mask, n):
    """The n x n booleans of a lesson's mask ("none", "causal", {"window": W} or a list of them: all at once)."""
    idx = torch.arange(n)
    q, kv = idx.view(-1, 1), idx.view(1, -1)
    if isinstance(mask, list):
        out = torch.ones(n, n, dtype=torch.bool)
        for part in mask:
            out &= sees(part, n)
        return out
    if mask == "causal":
        return kv <= q                                           # causal_mask_function
    if isinstance(mask, dict) and "window" in mask:
        return (kv <= q) & (kv > q - mask["window"])             # and_masks(sliding_window_overlay, causal)
    if mask in (None, "none"):
        return torch.ones(n, n, dtype=torch.bool)
    raise SystemExit("mask %r: this script computes causal masks and windows" % (mask,))


def attention(x, p, s, out, checks):
    """eager_attention_forward on v4's projections and RoPE, with the layer's own mask added as 0 / -inf."""
    n = x.shape[0]
    h, g = p["heads"], p["kv_heads"]
    dk = p["W_q"].shape[1] // h
    dv = p["W_v"].shape[1] // g
    q = v4.linear(x, p["W_q"], p.get("b_q"))
    k = v4.linear(x, p["W_k"], p.get("b_k"))
    v = v4.linear(x, p["W_v"], p.get("b_v"))
    out["Q"], out["K"], out["V"] = q, k, v
    qt, kt, vt = q.view(n, h, dk).transpose(0, 1), k.view(n, g, dk).transpose(0, 1), v.view(n, g, dv).transpose(0, 1)
    if s["rope"]:   # the layer's own base (Gemma 3's rope_local_base_freq on its sliding layers), else the lesson's
        base = p["rope_base"] if p["rope_base"] is not None else s["rope_base"]
        qt, kt = v4.rope(qt, base), v4.rope(kt, base)
        out["Q_rot"], out["K_rot"] = qt.transpose(0, 1).reshape(n, h * dk), kt.transpose(0, 1).reshape(n, g * dk)
    keys, vals = v4.repeat_kv(kt, h // g), v4.repeat_kv(vt, h // g)
    scores = qt @ keys.transpose(1, 2)
    allowed = sees(p["mask"], n)
    attn = scores * dk ** -0.5 + torch.zeros(n, n).masked_fill(~allowed, float("-inf"))
    weights = F.softmax(attn, dim=-1)
    if checks is not None and isinstance(p["mask"], dict):
        w = p["mask"]["window"]
        agree("window by i - W < j <= i", [[1.0 if i - w < j <= i else 0.0 for j in range(n)] for i in range(n)],
              allowed.double(), 0)
        agree("local rows sum to 1", weights.sum(-1), torch.ones(h, n), 1e-14)
        checks.add("window")
    weighted = weights @ vals
    out["heads"] = [{"scores": scores[i], "weights": weights[i], "output": weighted[i]} for i in range(h)]
    concat = weighted.transpose(0, 1).reshape(n, h * dv)
    out["concat"] = concat
    o = v4.linear(concat, p["W_o"], p.get("b_o")) if p.get("W_o") is not None else concat
    out["output"] = o
    return o


v4.attention = attention   # v4.layer() now calls this one
_v4_reference = v4.reference


def reference(path, override=None):
    """v4's reference with this attention, and with "decode" each layer's steps: the cache a step keeps is the
    keys its query sees (a local layer's rolling window of the W most recent, a global layer's every one), so each
    step's weights are the full row's over those keys and its output the full layer's row t."""
    ref = _v4_reference(path, override)
    L, s, params = read_lesson(path, override)
    if L.get("decode"):
        n = ref["n"]
        for lay, p in zip(ref["layers"], params):
            kept = sees(p["mask"], n).tolist()
            lay["decode"] = []
            for t in range(n):
                cols = [j for j in range(n) if kept[t][j]]
                k_rows = lay["attn"]["K_rot"] if "K_rot" in lay["attn"] else lay["attn"]["K"]
                lay["decode"].append({"t": t, "K_cache": [k_rows[j] for j in cols],
                                      "heads": [{"weights": [[hd["weights"][t][j] for j in cols]]}
                                                for hd in lay["attn"]["heads"]],
                                      # the layer's row t: after its block, or the attention's (no block)
                                      "layer_output" if "output" in lay else "output":
                                          [lay.get("output", lay["attn"]["output"])[t]]})
    return ref
_v4_read_lesson = v4.read_lesson


def read_lesson(path, override=None):
    L, s, params = _v4_read_lesson(path, override)
    J = lesson_json(path, override)   # a "compare" variant's keys ("mask", "layers") replace the lesson's
    for p, lay in zip(params, J.get("layers") or [{}]):
        p["mask"] = lay.get("mask", J.get("mask", "none"))
        p["rope_base"] = lay["rope"]["base"] if isinstance(lay.get("rope"), dict) else None
    return L, s, params


# ------------------------------------------------------------------ the lessons

def lessons(folder):
    g = torch.Generator().manual_seed(2303)
    rnd, rvec = v4.rnd, v4.rvec
    out = {}
    n, d, h, kv, dk, ff, voc = 7, 8, 4, 2, 4, 12, 6

    def layer(mask):
        return {"heads": h, "kv_heads": kv, "W_q": rnd(g, d, h * dk, 1.2), "W_k": rnd(g, d, kv * dk, 1.2),
                "W_v": rnd(g, d, kv * dk, 0.5), "W_o": rnd(g, h * dk, d, 0.5), "mask": mask,
                "block": {"norm": "pre", "norm_kind": "rmsnorm", "eps": 1e-6,
                          "ln1": {"gamma": rvec(g, d)}, "ln2": {"gamma": rvec(g, d)},
                          "ffn": {"W_1": rnd(g, d, ff, 0.5), "W_3": rnd(g, d, ff, 0.5), "W_2": rnd(g, ff, d, 0.5),
                                  "activation": "swiglu"}}}

    # 1. Gemma-3/gpt-oss-shaped: a local layer (window 3), then a global one; RoPE, GQA, final norm, LM head.
    l0, l1 = layer({"window": 3}), layer("causal")
    top = {"attnviz": 2, "title": {"en": "A local layer, then a global one", "zh": "先局部层，后全局层"},
           "tokens": ["The", " cat", " sat", " on", " the", " warm", " mat"], "X": rnd(g, n, d), "mask": "causal",
           "rope": True}
    top.update({k: v for k, v in l0.items() if k != "mask"})
    top["block"] = dict(l0["block"], final_norm={"gamma": rvec(g, d)})
    top["layers"] = [{"mask": {"window": 3}}, l1]
    top.update({"vocab": ["<eos>", "The", " cat", " sat", " on", " mat"], "unembed": rnd(g, voc, d), "top_k": 3})
    out["local_then_global"] = top
    # 2. The other order, three layers (global, local window 2, global), the top level's mask the window, no RoPE.
    l0, l1, l2 = layer("causal"), layer({"window": 2}), layer("causal")
    top = {"attnviz": 2, "title": {"en": "Global, local, global", "zh": "全局、局部、全局"},
           "tokens": ["a", "b", "c", "d", "e", "f", "g"], "X": rnd(g, n, d), "mask": {"window": 2}}
    top.update({k: v for k, v in l0.items() if k != "mask"})
    top["layers"] = [{"mask": "causal"}, {k: v for k, v in l1.items() if k != "mask"}, l2]
    out["global_local_global"] = top
    # 3. Decoding token by token through both kinds: the local layer's cache rolls (window 2), the global one's grows.
    dec = dict(out["local_then_global"], title={"en": "Local and global layers, decoded with a KV cache",
                                                 "zh": "局部层与全局层：用 KV 缓存逐词解码"}, decode=True)
    dec["layers"] = [{"mask": {"window": 2}}, out["local_then_global"]["layers"][1]]
    out["local_global_decode"] = dec
    # 4. Gemma 3's RoPE base per kind: the local layer turns with base 10 (rope_local_base_freq; small, so that its
    #    angles differ visibly), the global one with the lesson's 10000 (rope_theta), decoded with the cache.
    bases = dict(out["local_then_global"], title={"en": "A RoPE base per kind of layer", "zh": "每种层各自的 RoPE 基数"},
                 decode=True)
    bases["layers"] = [{"mask": {"window": 3}, "rope": {"base": 10.0}}, dict(out["local_then_global"]["layers"][1])]
    out["rope_base_per_kind"] = bases
    write_lessons(folder, out)


def make_all(folder):
    """The lessons, then each one's reference beside it (NAME.ref.json, as main() prints it)."""
    lessons(folder)
    write_references(folder, reference)


v4.read_lesson, v4.lessons, v4.reference = read_lesson, lessons, reference

if __name__ == "__main__":
    sys.exit(make_all(sys.argv[2]) if sys.argv[1:2] == ["--all"] else v4.main(sys.argv))
