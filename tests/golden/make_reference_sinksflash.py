#!/usr/bin/python3
"""Independent reference numbers for issue 23 §4: gpt-oss's attention sinks
in FlashAttention's tiles, and the sinks' own gradient and training, computed
with PyTorch in float64:

    make_reference_sinksflash.py --all tests/golden/sinksflash   # the lessons, every NAME.ref.json, the training's
    make_reference_sinksflash.py LESSON.json > LESSON.ref.json
    make_reference_sinksflash.py --train STEPS --lr LR LESSON.json > LESSON.trainSTEPS.ref.json

Written from issue 23, lessons/FORMAT.md and the reference code below, not
from the C code. The layer with its sinks (eager_attention_forward of
gpt_oss/modeling_gpt_oss.py) is make_reference_softcap.py's, imported and
unchanged; the tiles are make_reference_v3.py's flash_head (issue 11's online
softmax), also unchanged, and the sink joins as gpt-oss's own kernel adds it
after the last key block (openai/gpt-oss, gpt_oss/triton/attention.py,
_attn_fwd, after the loop over key blocks):

        sink = tl.math.exp(sink - m_i)
        z = l_i + sink
        acc = acc / z[:, None]

so every tile's m, l and O are the ones without a sink, and the output is
O / (l + e^(sink_h - m)). Cross-check (stderr): that output equals the
eager softmax-with-sink's weights · V (make_reference_softcap.py's
"output" of each head) within 1e-13.

The sinks' gradient is torch.autograd's through the same eager forward (the
sinks a leaf, as GptOssAttention's nn.Parameter is), beside the gradients
make_reference_v4.py's grads() already gives; --train runs plain gradient
descent, p <- p - LR * dL/dp on W_q, W_k, W_v, W_o and the sinks (what
attnviz's `train` does), and gives each step's loss and the trained weights.

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_softcap as sc  # noqa: E402  (sets make_reference_v4's attention to the one with sinks)
import make_reference_v3 as v3  # noqa: E402  (flash_head: the tiles)
import make_reference_v4 as v4  # noqa: E402
from lessonfiles import lesson_json, write_json, write_lessons, write_references  # noqa: E402

torch.set_default_dtype(torch.float64)
NEG_INF = float("-inf")


def flash_with_sink(masked, v, vis, sink, Bq, Bk):
    """v3's tiles of one head, then gpt-oss's sink after the last key block: out = O / (l + e^(sink - m))."""
    fl = v3.flash_head(masked, v, vis, NEG_INF, Bq, Bk)
    n, dv = masked.shape[0], v.shape[1]
    out = torch.zeros(n, dv)
    for q0 in range(0, n, Bq):
        last = [tl for tl in fl["tiles"] if tl["q0"] == q0]
        if not last:                      # every tile of the block hidden: O = 0, and 0 it stays
            continue
        m, ll, O = last[-1]["m"], last[-1]["l"], last[-1]["O"]
        z = ll + torch.exp(sink - m)      # +inf where m is -inf (a row that saw no key, whose O is 0)
        out[q0:q0 + O.shape[0]] = O / z.unsqueeze(1)
    fl["output"] = out
    return fl


def plain_inf(o):
    """As v4.plain, with -inf as null (as attnviz's --dump writes it)."""
    o = v4.plain(o)
    if isinstance(o, float) and o == NEG_INF:
        return None
    if isinstance(o, dict):
        return {k: plain_inf(val) for k, val in o.items()}
    if isinstance(o, list):
        return [plain_inf(val) for val in o]
    return o


def reference(path, override=None):
    """make_reference_softcap.py's reference, and "flash": each head's tiles and its output with the sink."""
    ref = sc.reference(path, override)
    J = lesson_json(path, override)
    fl = J.get("flash")
    if not fl:
        return ref
    n = len(J["tokens"])
    h = J.get("heads", 1)
    g = J.get("kv_heads", h)
    V = torch.tensor(ref["V"])
    dv = V.shape[1] // g
    causal = J.get("mask") == "causal"
    vis = torch.ones(n, n, dtype=torch.bool).tril() if causal else torch.ones(n, n, dtype=torch.bool)
    sinks = J["sinks"]
    heads = []
    for i in range(h):
        hd = ref["heads"][i]
        masked = torch.tensor(hd.get("capped", hd["scaled"])).masked_fill(~vis, NEG_INF)
        kv = i // (h // g)
        f = flash_with_sink(masked, V[:, kv * dv:(kv + 1) * dv], vis, float(sinks[i]), fl["block_q"], fl["block_k"])
        v4.agree("flash with the sink = the eager softmax's weights . V", torch.tensor(hd["output"]), f["output"], 1e-13)
        heads.append({"tiles": [{"q0": t["q0"], "k0": t["k0"], "m": t["m"], "l": t["l"], "O": t["O"]} for t in f["tiles"]],
                      "output": f["output"]})
    ref["flash"] = plain_inf({"block_q": fl["block_q"], "block_k": fl["block_k"], "heads": heads})
    print("%s: checks flash+sink" % os.path.basename(path), file=sys.stderr)
    return ref


_v4_grads = v4.grads


def grads(L, s, params):
    """v4's gradients, and "sinks": dL/dsinks of the (one) layer, by autograd."""
    p = params[0]
    if p.get("sinks") is not None:
        p["sinks"] = p["sinks"].clone().requires_grad_(True)
    out = _v4_grads(L, s, params)
    if p.get("sinks") is not None:
        out["grad"]["sinks"] = p["sinks"].grad
    return out


v4.grads = grads   # v4.reference() now calls this one


def train(path, steps, lr):
    """STEPS of p <- p - LR * dL/dp on every weight of the one layer, sinks included: the losses and the weights."""
    L, s, params = v4.read_lesson(path)
    p = params[0]
    keys = [k for k in ("W_q", "W_k", "W_v", "W_o", "sinks") if p.get(k) is not None]
    target = v4.T(L["backward"]["target"])
    losses = []
    for step in range(steps + 1):
        for k in keys:
            p[k] = p[k].detach().clone().requires_grad_(True)
        out = v4.forward_with_x(L, s, params, v4.T(L["X"]))
        loss = 0.5 * ((out["output"] - target) ** 2).sum()
        losses.append(float(loss))
        if step == steps:
            break
        loss.backward()
        with torch.no_grad():
            for k in keys:
                p[k] = p[k] - lr * p[k].grad
    ref = {"train": {"steps": steps, "lr": lr, "loss": losses}}
    for k in keys:
        if k != "sinks":   # --dump writes the trained W_*; the sinks' steps show in the losses after step 1
            ref[k] = p[k]
    print("%s: checks train %d steps" % (os.path.basename(path), steps), file=sys.stderr)
    return v4.plain(ref)


TRAINED = {"sinks_backward": (20, 0.05)}   # the lessons trained by --all: name -> (steps, lr)


def lessons():
    g = torch.Generator().manual_seed(2346)
    rnd, rvec = v4.rnd, v4.rvec
    out = {}
    # 1. Two heads, causal, tiles of 2 × 2 (the tiles above the diagonal skipped); one sink high, one low.
    n, d, h, dk = 5, 4, 2, 2
    out["sinks_flash_causal"] = {
        "attnviz": 2, "title": {"en": "Sinks in FlashAttention's tiles, causal", "zh": "FlashAttention 分块中的汇点：因果"},
        "tokens": ["t0", "t1", "t2", "t3", "t4"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk),
        "W_k": rnd(g, d, h * dk), "W_v": rnd(g, d, h * dk), "mask": "causal", "sinks": [2.0, -1.5],
        "flash": {"block_q": 2, "block_k": 2}}
    # 2. gpt-oss-shaped: RoPE, 4 heads on 2 kv heads, W_o, tiles of 3 × 2 (a last, short block of each).
    n, d, h, kv, dk = 7, 8, 4, 2, 4
    out["sinks_flash_gqa_rope"] = {
        "attnviz": 2, "title": {"en": "Sinks in the tiles: RoPE, four heads on two", "zh": "分块中的汇点：RoPE，四个头共用两个"},
        "tokens": ["The", " cat", " sat", " on", " the", " warm", " mat"], "X": rnd(g, n, d), "heads": h, "kv_heads": kv,
        "W_q": rnd(g, d, h * dk, 1.2), "W_k": rnd(g, d, kv * dk, 1.2), "W_v": rnd(g, d, kv * dk), "W_o": rnd(g, h * dk, d),
        "mask": "causal", "rope": True, "sinks": rvec(g, h, -1.0, 3.0), "flash": {"block_q": 3, "block_k": 2}}
    # 3. No mask, one head, tiles of 2 × 3: every tile read.
    n, d, dk = 4, 4, 3
    out["sinks_flash_nomask"] = {
        "attnviz": 2, "title": {"en": "A sink in the tiles, no mask", "zh": "分块中的汇点：无掩码"},
        "tokens": ["a", "b", "c", "d"], "X": rnd(g, n, d), "W_q": rnd(g, d, dk), "W_k": rnd(g, d, dk),
        "W_v": rnd(g, d, dk), "sinks": [0.5], "flash": {"block_q": 2, "block_k": 3}}
    # 4. The sinks' gradient (and training, TRAINED): two causal heads, W_o, a loss against a target.
    n, d, h, dk = 4, 4, 2, 2
    out["sinks_backward"] = {
        "attnviz": 2, "title": {"en": "The sinks' gradient", "zh": "汇点的梯度"},
        "tokens": ["p", "q", "r", "s"], "X": rnd(g, n, d), "heads": h, "W_q": rnd(g, d, h * dk),
        "W_k": rnd(g, d, h * dk), "W_v": rnd(g, d, h * dk), "W_o": rnd(g, h * dk, d), "mask": "causal",
        "sinks": [1.0, -0.5], "backward": {"target": rnd(g, n, d)}}
    # 5. With RoPE, four heads on two kv heads and no mask: every row's share of its sink moves the gradient.
    n, d, h, kv, dk = 5, 8, 4, 2, 2
    out["sinks_backward_gqa_rope"] = {
        "attnviz": 2, "title": {"en": "The sinks' gradient: RoPE, four heads on two", "zh": "汇点的梯度：RoPE，四个头共用两个"},
        "tokens": ["a", "b", "c", "d", "e"], "X": rnd(g, n, d), "heads": h, "kv_heads": kv,
        "W_q": rnd(g, d, h * dk), "W_k": rnd(g, d, kv * dk), "W_v": rnd(g, d, kv * dk), "W_o": rnd(g, h * dk, d),
        "rope": True, "sinks": rvec(g, h, -1.0, 2.0), "backward": {"target": rnd(g, n, d)}}
    return out


def make_all(folder):
    """The lessons, then each one's reference beside it (NAME.ref.json)."""
    write_lessons(folder, lessons())
    write_references(folder, reference)
    for name, (steps, lr) in TRAINED.items():
        path = os.path.join(folder, name + ".json")
        write_json(os.path.join(folder, "%s.train%d.ref.json" % (name, steps)), train(path, steps, lr))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--all":
        make_all(sys.argv[2])
        sys.exit(0)
    if len(sys.argv) == 6 and sys.argv[1] == "--train" and sys.argv[3] == "--lr":
        import json
        json.dump(train(sys.argv[5], int(sys.argv[2]), float(sys.argv[4])), sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
        sys.exit(0)
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    import json
    json.dump(reference(sys.argv[1]), sys.stdout, indent=1, allow_nan=False)
    sys.stdout.write("\n")
