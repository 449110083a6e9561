#!/usr/bin/python3
"""Independent reference numbers for issue 23 §1's last QK-norm form: Llama 4's
weightless L2 norm of q and k AFTER RoPE ("qk_norm": {"kind": "l2"}), computed
with PyTorch in float64:

    make_reference_l2qknorm.py --lessons DIR      # write the lessons (literal numbers from a seeded generator)
    make_reference_l2qknorm.py LESSON.json > LESSON.ref.json   # (and its "compare" variant under "compare")
    make_reference_l2qknorm.py --all tests/golden/l2qknorm   # both: the lessons and every NAME.ref.json

Written from issue 23, lessons/FORMAT.md and the transformers code below, not
from the C code. The rest of a layer (Qwen3's weighted QK-norm of a compare,
half-style RoPE, repeat_kv, the block, the LM head, the gradients by autograd)
is make_reference_v4.py's, imported and unchanged; this script replaces its
attention() and reads interleaved RoPE and NoPE layers itself. The lines
followed (transformers, src/transformers/models/llama4/modeling_llama4.py,
the file at commit 000c33fdfde12e1ffafbfcdb3c926df5727a00b6):

  class Llama4TextL2Norm(torch.nn.Module):
      def _norm(self, x):
          return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
      def forward(self, x):
          return self._norm(x.float()).type_as(x)              -> l2_norm() (no weight)
  Llama4TextAttention.__init__:
      self.use_rope = config.no_rope_layers[layer_idx]
      if self.config.use_qk_norm and self.use_rope:
          self.qk_norm = Llama4TextL2Norm(config.rms_norm_eps)  -> only on a layer with RoPE
  Llama4TextAttention.forward:
      query_states = self.q_proj(hidden_states).view(hidden_shape)
      key_states = self.k_proj(hidden_states).view(*input_shape, -1, self.head_dim)
      if self.use_rope:
          query_states, key_states = apply_rotary_emb(query_states, key_states, position_embeddings...)
      if hasattr(self, "qk_norm"):
          query_states = self.qk_norm(query_states)
          key_states = self.qk_norm(key_states)                 -> attention(): "Q_rot", then "Q_l2", "K_l2"
  apply_rotary_emb:
      xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
      xq_out = torch.view_as_real(xq_ * freqs_cis[:, :, None, :]).flatten(3)
    i.e. the pairs (2i, 2i + 1) of a head, a lesson's "rope": {"style": "interleaved"};
  Llama4TextRotaryEmbedding.forward: freqs = inv_freq ⊗ positions, freqs_cis = torch.polar(1, freqs)
      (inv_freq = 1 / base^(arange(0, dim, 2) / dim))           -> rope_interleaved()
  eager_attention_forward: softmax(q @ k^T * scaling + causal_mask) @ v (scaling = head_dim^−0.5).
  The temperature tuning of NoPE layers (attn_temperature_tuning) is not a lesson key: not computed.

With "decode", each decoded row equals the full computation's row (the cache
holds keys 0 … t); with "backward", every gradient is torch.autograd's (v4's
grads()), through the norm and RoPE.

Cross-checks (stderr): the norm again as q / ‖q‖ · √d_k · √(ms / (ms + ε))
with math.sqrt per row, ms = ‖q‖² / d_k (the weightless RMS norm of d_k
numbers is the L2 norm times √d_k, shrunk by ε); interleaved RoPE again as
real 2 × 2 rotations in a Python loop; each row's root mean square after the
norm is √(ms / (ms + ε)).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_v4 as v4  # noqa: E402  (its layer, norms, RoPE and LM head, unchanged)
from lessonfiles import write_lessons, write_references  # noqa: E402

torch.set_default_dtype(torch.float64)
T, vec, agree = v4.T, v4.vec, v4.agree


def l2_norm(x, eps):
    """Llama4TextL2Norm._norm over the last dimension (head_dim), no weight."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rope_interleaved(x, base):
    """apply_rotary_emb on one of q, k as (heads, n, d): pairs (2i, 2i + 1) times e^(i·pos·inv_freq_i)."""
    h, n, d = x.shape
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).to(torch.float64) / d))
    freqs = torch.outer(torch.arange(n, dtype=torch.float64), inv_freq)          # (n, d/2)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    xc = torch.view_as_complex(x.reshape(h, n, -1, 2).contiguous())
    return torch.view_as_real(xc * freqs_cis[None, :, :]).flatten(2)


def rope_loop(x, base):
    """The same turn as real rotations, one pair at a time (the cross-check)."""
    h, n, d = x.shape
    out = x.clone()
    for hh in range(h):
        for pos in range(n):
            for i in range(d // 2):
                th = pos * base ** (-(2.0 * i) / d)
                a, b = float(x[hh, pos, 2 * i]), float(x[hh, pos, 2 * i + 1])
                out[hh, pos, 2 * i] = a * math.cos(th) - b * math.sin(th)
                out[hh, pos, 2 * i + 1] = a * math.sin(th) + b * math.cos(th)
    return out


def attention(x, p, s, out, checks):
    """Llama4TextAttention.forward (and Qwen3's weighted QK-norm before RoPE, a compare's, as v4 computes it)."""
    n = x.shape[0]
    h, g = p["heads"], p["kv_heads"]
    dk = p["W_q"].shape[1] // h
    dv = p["W_v"].shape[1] // g
    q = v4.linear(x, p["W_q"], p.get("b_q"))
    k = v4.linear(x, p["W_k"], p.get("b_k"))
    v = v4.linear(x, p["W_v"], p.get("b_v"))
    out["Q"], out["K"], out["V"] = q, k, v
    qh, kh = q.view(n, h, dk), k.view(n, g, dk)
    if p.get("qk_norm") is not None:                            # Qwen3's, before RoPE (a compare)
        qh, kh = v4.rms_norm(qh, p["q_norm"], s["qk_eps"]), v4.rms_norm(kh, p["k_norm"], s["qk_eps"])
        out["Q_norm"], out["K_norm"] = qh.reshape(n, h * dk), kh.reshape(n, g * dk)
    qt, kt, vt = qh.transpose(0, 1), kh.transpose(0, 1), v.view(n, g, dv).transpose(0, 1)
    use_rope = s["rope"] and p["use_rope"]
    if use_rope:                                                # if self.use_rope: apply_rotary_emb
        if s["rope_style"] == "interleaved":
            qr, kr = rope_interleaved(qt, s["rope_base"]), rope_interleaved(kt, s["rope_base"])
            if checks is not None:
                agree("interleaved rope loop q", rope_loop(qt, s["rope_base"]), qr)
                agree("interleaved rope loop k", rope_loop(kt, s["rope_base"]), kr)
                checks.add("rope_interleaved")
        else:
            qr, kr = v4.rope(qt, s["rope_base"]), v4.rope(kt, s["rope_base"])
        qt, kt = qr, kr
    if s["rope"]:                                               # a NoPE layer's Q_rot is Q as it is
        out["Q_rot"], out["K_rot"] = qt.transpose(0, 1).reshape(n, h * dk), kt.transpose(0, 1).reshape(n, g * dk)
    if s["l2"]:
        if use_rope:                                            # self.qk_norm only where the layer uses RoPE
            ql, kl = l2_norm(qt, s["qk_eps"]), l2_norm(kt, s["qk_eps"])
            if checks is not None:
                for name, before, after in (("q", qt, ql), ("k", kt, kl)):
                    loop = torch.zeros_like(before)
                    for a in range(before.shape[0]):
                        for i in range(n):
                            row = before[a, i]
                            ss = sum(float(c) ** 2 for c in row)
                            loop[a, i] = row / math.sqrt(ss) * math.sqrt(dk) * math.sqrt(ss / dk / (ss / dk + s["qk_eps"]))
                    agree("l2 norm loop " + name, loop, after)
                    ms = before.pow(2).mean(-1)
                    agree("rms " + name, (ms / (ms + s["qk_eps"])).sqrt(), after.pow(2).mean(-1).sqrt())
                checks.add("l2")
            qt, kt = ql, kl
        out["Q_l2"], out["K_l2"] = qt.transpose(0, 1).reshape(n, h * dk), kt.transpose(0, 1).reshape(n, g * dk)
    keys, vals = v4.repeat_kv(kt, h // g), v4.repeat_kv(vt, h // g)
    scores = qt @ keys.transpose(1, 2)
    attn = scores * dk ** -0.5
    if s["causal"]:
        mask = torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        attn = attn + mask
    weights = F.softmax(attn, dim=-1)
    weighted = weights @ vals
    out["heads"] = [{"scores": scores[i], "weights": weights[i], "output": weighted[i]} for i in range(h)]
    concat = weighted.transpose(0, 1).reshape(n, h * dv)        # attn_output.reshape(*input_shape, -1)
    out["concat"] = concat
    o = v4.linear(concat, p["W_o"], p.get("b_o")) if p.get("W_o") is not None else concat
    out["output"] = o
    return o


v4.attention = attention   # v4.layer() now calls this one
_v4_read_lesson, _v4_reference = v4.read_lesson, v4.reference


def read_lesson(path, override=None):
    """v4's reading, with interleaved RoPE, "kind": "l2" (no weights) and a layer's "rope": false read here."""
    with open(path) as f:
        J = json.load(f)
    if override is not None:
        J.update({k: val for k, val in override.items() if k != "label"})
    o = {k: val for k, val in (override or {}).items()}
    rope = J.get("rope")
    style = rope.get("style", "half") if isinstance(rope, dict) else "half"
    if isinstance(rope, dict):                                  # v4 reads half-style RoPE: the base alone
        o["rope"] = {"base": rope.get("base", 10000.0)}
    qk = J.get("qk_norm") or {}
    l2 = qk.get("kind") == "l2"
    if l2:                                                      # v4 reads weighted QK-norm: none for it
        o["qk_norm"] = None
    layers = J.get("layers") or [{}]
    if any("rope" in lay for lay in layers):
        o["layers"] = [{k: val for k, val in lay.items() if k != "rope"} for lay in layers]
    L, s, params = _v4_read_lesson(path, o or override)
    s["rope_style"] = style
    s["l2"] = l2
    s["qk_eps"] = qk.get("eps", 1e-6)
    for p, lay in zip(params, layers):
        p["use_rope"] = lay.get("rope", True) is not False
    return L, s, params


def reference(path, override=None):
    """v4's reference through this script's attention, and the decoded rows (equal to the full ones)."""
    ref = _v4_reference(path, override)
    L, _, _ = read_lesson(path, override)
    if L.get("decode") and not ref.get("layers"):
        ref["decode"] = [{"t": t, "heads": [{"weights": [hd["weights"][t][: t + 1]]} for hd in ref["heads"]],
                          "output": [ref["output"][t]]} for t in range(ref["n"])]
    return ref


v4.read_lesson = read_lesson   # v4.reference() reads through this one
v4.reference = reference       # and compare variants come back through this one


# ------------------------------------------------------------------ the lessons

def llama4_layer(g, d, h, kv, dk, ff):
    """One pre-norm RMSNorm/SwiGLU layer (Llama4TextDecoderLayer's dense form)."""
    rnd, rvec = v4.rnd, v4.rvec
    return {"heads": h, "kv_heads": kv, "W_q": rnd(g, d, h * dk, 2.0), "W_k": rnd(g, d, kv * dk, 2.0),
            "W_v": rnd(g, d, kv * dk), "W_o": rnd(g, h * dk, d, 0.5),
            "block": {"norm": "pre", "norm_kind": "rmsnorm", "eps": 1e-5,
                      "ln1": {"gamma": rvec(g, d)}, "ln2": {"gamma": rvec(g, d)},
                      "ffn": {"W_1": rnd(g, d, ff, 0.5), "W_3": rnd(g, d, ff, 0.5), "W_2": rnd(g, ff, d, 0.5),
                              "activation": "swiglu"}}}


def lessons(folder):
    g = torch.Generator().manual_seed(2304)
    rnd, rvec = v4.rnd, v4.rvec
    out = {}
    # 1. Two causal heads, Llama 4's interleaved RoPE (rope_theta 500000), the L2 norm after it; the compare is
    #    Qwen3's weighted QK-norm before RoPE, on the same weights.
    n, d, h, dk = 5, 6, 2, 4
    out["l2_heads_interleaved"] = {
        "attnviz": 2, "title": {"en": "Llama 4's QK-norm after RoPE, two heads", "zh": "Llama 4 在 RoPE 之后的 QK-norm：两个头"},
        "tokens": ["t0", "t1", "t2", "t3", "t4"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk, 3.0),
        "W_k": rnd(g, d, h * dk, 3.0), "W_v": rnd(g, d, h * dk), "W_o": rnd(g, h * dk, d), "mask": "causal",
        "rope": {"base": 500000.0, "style": "interleaved"}, "qk_norm": {"kind": "l2", "eps": 1e-5},
        "compare": {"label": {"en": "Qwen3's QK-norm before RoPE", "zh": "Qwen3 在 RoPE 之前的 QK-norm"},
                    "qk_norm": {"q": rvec(g, dk), "k": rvec(g, dk), "eps": 1e-5}}}
    # 2. Half-style RoPE, one head, no mask: the norm does not care how the pairs are laid out.
    n, d, dk = 4, 4, 4
    out["l2_half_one_head"] = {
        "attnviz": 2, "title": {"en": "QK-norm after half-style RoPE, one head", "zh": "半分式 RoPE 之后的 QK-norm：一个头"},
        "tokens": ["a", "b", "c", "d"], "X": rnd(g, n, d), "W_q": rnd(g, d, dk, 5.0), "W_k": rnd(g, d, dk, 5.0),
        "W_v": rnd(g, d, dk), "rope": True, "qk_norm": {"kind": "l2"}}
    # 3. Llama-4-shaped: 4 heads on 2 kv heads, three pre-norm layers, the third a NoPE layer ("rope": false: no
    #    RoPE and, as Llama4TextAttention, no norm), the final norm and an LM head.
    n, d, h, kv, dk, ff, voc = 5, 8, 4, 2, 2, 10, 6
    l0, l1, l2 = [llama4_layer(g, d, h, kv, dk, ff) for _ in range(3)]
    l2["rope"] = False
    top = {"attnviz": 2, "title": {"en": "Llama 4's layers: QK-norm after RoPE, GQA, a NoPE layer",
                                   "zh": "Llama 4 的层：RoPE 之后的 QK-norm、GQA、一个 NoPE 层"},
           "tokens": ["The", " cat", " sat", " on", " the"], "X": rnd(g, n, d), "mask": "causal",
           "rope": {"base": 500000.0, "style": "interleaved"}, "qk_norm": {"kind": "l2", "eps": 1e-5}}
    top.update(l0)
    top["block"] = dict(l0["block"], final_norm={"gamma": rvec(g, d)})
    top["layers"] = [{}, l1, l2]
    top.update({"vocab": ["<eos>", "The", " cat", " sat", " on", " the"], "unembed": rnd(g, voc, d), "top_k": 3})
    out["llama4_l2_gqa_nope"] = top
    # 4. Decoded token by token: each step turns its q and k at its position, then normalises them.
    n, d, h, kv, dk = 5, 4, 2, 1, 4
    out["l2_decode_gqa"] = {
        "attnviz": 2, "title": {"en": "QK-norm after RoPE, decoded with a KV cache", "zh": "RoPE 之后的 QK-norm：用 KV 缓存逐词解码"},
        "tokens": ["t0", "t1", "t2", "t3", "t4"], "X": rnd(g, n, d), "heads": h, "kv_heads": kv,
        "W_q": rnd(g, d, h * dk, 2.0), "W_k": rnd(g, d, kv * dk, 2.0), "W_v": rnd(g, d, kv * dk), "W_o": rnd(g, h * dk, d),
        "mask": "causal", "rope": {"style": "interleaved"}, "decode": True, "qk_norm": {"kind": "l2", "eps": 1e-6}}
    # 5. The gradients through the norm and RoPE: ½ Σ (output − target)², autograd's.
    n, d, h, dk = 4, 4, 2, 2
    out["l2_backward"] = {
        "attnviz": 2, "title": {"en": "The gradients through QK-norm after RoPE", "zh": "穿过 RoPE 之后 QK-norm 的梯度"},
        "tokens": ["p", "q", "r", "s"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk, 2.0),
        "W_k": rnd(g, d, h * dk, 2.0), "W_v": rnd(g, d, h * dk), "W_o": rnd(g, h * dk, d), "mask": "causal",
        "rope": True, "qk_norm": {"kind": "l2", "eps": 1e-6}, "backward": {"target": rnd(g, n, d)}}
    write_lessons(folder, out)


def main(argv):
    """--lessons DIR and --all DIR here; one lesson's reference is v4's main, through this script's attention()."""
    if len(argv) != 3 or argv[1] not in ("--lessons", "--all"):
        return v4.main(argv)
    lessons(argv[2])
    if argv[1] == "--all":
        write_references(argv[2], v4.reference)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
