#!/usr/bin/python3
"""Independent reference numbers for attnviz's engine, computed with PyTorch.

    make_reference.py LESSON.json > LESSON.ref.json
    make_reference.py --all      # every tests/golden/*.json -> *.ref.json,
                                 # and tests/golden/prng_reference.txt
    make_reference.py --prng     # the PRNG reference on stdout
    make_reference.py --lessons  # every lessons/NAME.json -> tests/golden/lessons/NAME.ref.json,
                                 # or NAME.summary.json when the reference is over 1 MB

Written from the lesson format (lessons/FORMAT.md, issue 2) and
src/prng.h's description of the generator, not from the C code. Every
number is a torch float64; the stages use torch's own operators
(torch.matmul, torch.tanh, Tensor.masked_fill, nn.functional.softmax).
Each lesson is also recomputed a second way (all heads at once with
torch.einsum) and, when its shapes allow, with PyTorch's own
multi_head_attention_forward; any disagreement aborts the script.

Output: the --dump JSON object (keys as in lessons/FORMAT.md, in that
order; the head count is "h" and "heads" is the list of per-head stages, as src/dump.c
writes it). Floats are written with repr() (shortest round-trip form), −∞
as null.

Needs Debian's python3-torch: run with /usr/bin/python3. CI does not run
this script; it compares against the committed *.ref.json files.
"""

import glob
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)

MASK64 = (1 << 64) - 1
STAGES = ["input", "positional", "project", "split", "scores", "scale",
          "mask", "softmax", "weighted", "concat", "output"]
HERE = os.path.dirname(os.path.abspath(__file__))


class LessonError(Exception):
    pass


# ---------------------------------------------------------------- PRNG
class Prng:
    """SplitMix64 + Marsaglia polar method, as documented in src/prng.h."""

    def __init__(self, seed):
        self.state = int(seed) & MASK64
        self.spare = None

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform(self):
        return float(self.next() >> 11) * 2.0 ** -53

    def normal(self):
        if self.spare is not None:
            v, self.spare = self.spare, None
            return v
        while True:
            u = 2.0 * self.uniform() - 1.0
            v = 2.0 * self.uniform() - 1.0
            s = u * u + v * v
            if 0.0 < s < 1.0:
                break
        f = math.sqrt(-2.0 * math.log(s) / s)
        self.spare = v * f
        return u * f


def prng_reference():
    lines = ["# tests/golden/prng_reference.txt: made by tests/golden/make_reference.py --prng",
             "# For each seed, from a fresh generator each time: the first 8 values of",
             "# prng_next (decimal uint64), of prng_uniform and of prng_normal",
             "# (shortest round-trip decimal).",
             "# Line format: KIND SEED v1 v2 ... v8   (KIND: next, uniform, normal)"]
    for seed in (0, 1, 42):
        p = Prng(seed)
        lines.append("next %d %s" % (seed, " ".join(str(p.next()) for _ in range(8))))
        p = Prng(seed)
        lines.append("uniform %d %s" % (seed, " ".join(repr(p.uniform()) for _ in range(8))))
        p = Prng(seed)
        lines.append("normal %d %s" % (seed, " ".join(repr(p.normal()) for _ in range(8))))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------- loading
def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def matrix(value, where):
    """A written matrix (list of rows) or a generator object -> tensor."""
    if isinstance(value, dict):
        if "identity" in value:
            return torch.eye(int(value["identity"]))
        kind = value.get("random")
        rows, cols = int(value["rows"]), int(value["cols"])
        p = Prng(int(value.get("seed", 0)))
        cells = []
        if kind == "normal":
            mean, std = float(value.get("mean", 0.0)), float(value.get("std", 1.0))
            for _ in range(rows * cols):
                cells.append(mean + std * p.normal())
        elif kind == "uniform":
            low, high = float(value.get("low", -1.0)), float(value.get("high", 1.0))
            for _ in range(rows * cols):
                cells.append(low + (high - low) * p.uniform())
        else:
            raise LessonError("%s: unknown generator %r" % (where, value))
        return torch.tensor(cells).reshape(rows, cols)
    if not isinstance(value, list) or not value or not all(isinstance(r, list) for r in value):
        raise LessonError("%s: expected a matrix" % where)
    width = len(value[0])
    for i, row in enumerate(value):
        if len(row) != width or not all(is_number(x) for x in row):
            raise LessonError("%s[%d]: expected %d numbers" % (where, i, width))
    return torch.tensor([[float(x) for x in row] for row in value])


def english(text):
    if isinstance(text, dict):
        return text["en"] if "en" in text else next(iter(text.values()))
    return text


def positional_encoding(rows, cols):
    """PE(pos, 2i) = sin(pos / 10000^(2i/cols)), PE(pos, 2i+1) = cos(same angle)."""
    pos = torch.arange(rows, dtype=torch.float64).unsqueeze(1)       # rows x 1
    even = torch.div(torch.arange(cols), 2, rounding_mode="floor") * 2  # 2i for column 2i and 2i+1
    angle = pos / torch.pow(torch.tensor(10000.0), even.to(torch.float64) / cols)
    return torch.where(torch.arange(cols) % 2 == 0, torch.sin(angle), torch.cos(angle))


def load(doc):
    """Lesson JSON object -> dict of concrete tensors and settings."""
    if doc.get("attnviz") != 1:
        raise LessonError("attnviz: expected 1")
    L = {"title": english(doc.get("title", ""))}
    L["input"] = matrix(doc["X"], "X")
    n, d_model = L["input"].shape
    toks = doc.get("tokens")
    if toks is None:
        if not isinstance(doc["X"], dict):
            raise LessonError("tokens: required when X is written out")
        toks = ["t%d" % i for i in range(n)]
    L["tokens"] = [english(t) for t in toks]
    L["positional"] = doc.get("positional", "none")
    src = doc.get("source")
    if src is not None:
        L["source_input"] = matrix(src["X"], "source.X")
        m = L["source_input"].shape[0]
        stoks = src.get("tokens")
        if stoks is None:
            stoks = ["s%d" % j for j in range(m)]
        L["source_tokens"] = [english(t) for t in stoks]
    else:
        m = n
    h = int(doc.get("heads", 1))
    for k in ("W_q", "W_k", "W_v"):
        L[k] = matrix(doc[k], k)
    if "W_o" in doc:
        L["W_o"] = matrix(doc["W_o"], "W_o")
    if L["W_q"].shape[1] % h or L["W_v"].shape[1] % h or L["W_k"].shape[1] != L["W_q"].shape[1]:
        raise LessonError("heads: %d does not divide the columns" % h)
    L["n"], L["m"], L["d_model"], L["h"] = n, m, d_model, h
    L["d_k"], L["d_v"] = L["W_q"].shape[1] // h, L["W_v"].shape[1] // h
    L["score"] = doc.get("score", "dot")
    if L["score"] == "additive":
        we = doc["w_e"]
        L["w_e"] = matrix(we, "w_e").reshape(-1) if isinstance(we, dict) else \
            torch.tensor([float(x) for x in we])
        if L["w_e"].numel() != h * L["d_k"]:
            raise LessonError("w_e: expected %d numbers" % (h * L["d_k"]))
    L["factor"] = scale_factor(doc.get("scale", True), L["d_k"])
    mask = doc.get("mask", "none")
    L["mask"] = mask
    L["visible"] = visibility(mask, n, m)
    L["fill"] = fill_value(doc.get("mask_fill", "-inf"))
    return L


def scale_factor(scale, d_k):
    """The lesson's "scale" (true, false or a number) -> the factor."""
    if scale is True:
        return 1.0 / math.sqrt(d_k)
    if scale is False:
        return 1.0
    return float(scale)


def visibility(mask, n, m, where="mask"):
    """The lesson's "mask" -> an n x m bool tensor, True where a query may attend."""
    visible = torch.ones(n, m, dtype=torch.bool)
    if mask == "causal":
        if n != m:
            raise LessonError("%s: causal needs a square score matrix" % where)
        visible = torch.tril(visible)
    elif isinstance(mask, dict):
        pad = torch.tensor([float(x) for x in mask["padding"]])
        if pad.numel() != m:
            raise LessonError("%s.padding: expected %d numbers" % (where, m))
        visible = (pad != 0).unsqueeze(0).expand(n, m).clone()
    elif isinstance(mask, list):
        mm = matrix(mask, where)
        if tuple(mm.shape) != (n, m):
            raise LessonError("%s: expected %d x %d" % (where, n, m))
        visible = mm != 0
    elif mask != "none":
        raise LessonError("%s: unknown %r" % (where, mask))
    return visible


def fill_value(fill):
    """The lesson's "mask_fill" ("-inf" or a number) -> a float."""
    return float("-inf") if fill == "-inf" else float(fill)


# ------------------------------------------------------------- compute
def compute(L):
    """Every stage, head by head, with torch's operators."""
    R = {}
    n, m, h, d_k, d_v = L["n"], L["m"], L["h"], L["d_k"], L["d_v"]
    X = L["input"]
    if L["positional"] == "sinusoidal":
        R["PE"] = positional_encoding(n, L["d_model"])
        X = X + R["PE"]
    R["X"] = X
    if "source_input" in L:
        S = L["source_input"]
        if L["positional"] == "sinusoidal":
            R["PE_src"] = positional_encoding(m, S.shape[1])
            S = S + R["PE_src"]
        R["S"] = S
    else:
        S = X
    Q = torch.matmul(X, L["W_q"])      # n x h*d_k
    K = torch.matmul(S, L["W_k"])      # m x h*d_k
    V = torch.matmul(S, L["W_v"])      # m x h*d_v
    R["Q"], R["K"], R["V"] = Q, K, V
    heads, outs = [], []
    all_masked = ~L["visible"].any(dim=1) if L["fill"] == float("-inf") else torch.zeros(n, dtype=torch.bool)
    for i in range(h):
        q = Q[:, i * d_k:(i + 1) * d_k]
        k = K[:, i * d_k:(i + 1) * d_k]
        v = V[:, i * d_v:(i + 1) * d_v]
        if L["score"] == "additive":
            w = L["w_e"][i * d_k:(i + 1) * d_k]
            # e_ij = sum_c w_c * tanh(q_ic + k_jc)
            scores = torch.matmul(torch.tanh(q.unsqueeze(1) + k.unsqueeze(0)), w)
        else:
            scores = torch.matmul(q, k.transpose(0, 1))
        scaled = scores * L["factor"]
        masked = scaled.masked_fill(~L["visible"], L["fill"])
        weights = F.softmax(masked, dim=-1)
        # A row with every key at -inf: softmax gives NaN; it has nothing to attend to.
        weights = torch.where(torch.isnan(weights), torch.zeros_like(weights), weights)
        assert torch.equal(torch.isnan(F.softmax(masked, dim=-1)).any(dim=1), all_masked)
        out = torch.matmul(weights, v)
        heads.append({"scores": scores, "scaled": scaled, "masked": masked,
                      "weights": weights, "output": out})
        outs.append(out)
    R["heads"] = heads
    R["concat"] = torch.cat(outs, dim=1)
    R["output"] = torch.matmul(R["concat"], L["W_o"]) if "W_o" in L else R["concat"]
    R["row_all_masked"] = [i for i in range(n) if all_masked[i]]
    return R


def cross_check(L, R):
    """Recompute all heads at once (einsum), and with torch's MHA where it applies."""
    n, m, h, d_k, d_v = L["n"], L["m"], L["h"], L["d_k"], L["d_v"]
    q = R["Q"].reshape(n, h, d_k)
    k = R["K"].reshape(m, h, d_k)
    v = R["V"].reshape(m, h, d_v)
    if L["score"] == "additive":
        t = torch.tanh(q.unsqueeze(1) + k.unsqueeze(0))               # n m h d_k
        sc = torch.einsum("njhc,hc->hnj", t, L["w_e"].reshape(h, d_k))
    else:
        sc = torch.einsum("nhc,mhc->hnm", q, k)
    sc = sc * L["factor"]
    vis = L["visible"].unsqueeze(0)
    sc = torch.where(vis, sc, torch.tensor(L["fill"]))
    w = torch.exp(sc - sc.amax(dim=-1, keepdim=True))
    w = w / w.sum(dim=-1, keepdim=True)
    w = torch.nan_to_num(w, nan=0.0)
    o = torch.einsum("hnm,mhc->nhc", w, v).reshape(n, h * d_v)
    if "W_o" in L:
        o = o @ L["W_o"]
    assert torch.allclose(o, R["output"], rtol=1e-12, atol=1e-14), "einsum check failed"

    # PyTorch's own multi-head attention: needs h*d_k == h*d_v == d_model,
    # dot scores scaled by 1/sqrt(d_k), -inf fill and no fully masked row.
    e = L["d_model"]
    if (L["score"] != "dot" or h * d_k != e or h * d_v != e or L["fill"] != float("-inf")
            or L["factor"] != 1.0 / math.sqrt(d_k) or R["row_all_masked"]
            or ("W_o" in L and tuple(L["W_o"].shape) != (e, e))):
        return False
    S = R.get("S", R["X"])
    W_o = L["W_o"] if "W_o" in L else torch.eye(e)
    out, _ = F.multi_head_attention_forward(
        R["X"].unsqueeze(1), S.unsqueeze(1), S.unsqueeze(1), e, h,
        None, None, None, None, False, 0.0, W_o.T, None, training=False,
        attn_mask=~L["visible"], need_weights=False, use_separate_proj_weight=True,
        q_proj_weight=L["W_q"].T, k_proj_weight=L["W_k"].T, v_proj_weight=L["W_v"].T)
    assert torch.allclose(out.squeeze(1), R["output"], rtol=1e-12, atol=1e-14), "MHA check failed"
    return True


# ---------------------------------------------------------------- dump
class Pairs(list):
    """A JSON object as (key, value) pairs: the dump names "heads" twice
    (the count, then the list of heads), as the contract lists it."""


def to_json(v, indent=0):
    """Serialise dicts, Pairs, lists, str, int, float (repr), None."""
    pad, inner = " " * indent, " " * (indent + 1)
    if isinstance(v, dict):
        v = Pairs(v.items())
    if isinstance(v, Pairs):
        if not v:
            return "{}"
        return "{\n" + ",\n".join(inner + json.dumps(k, ensure_ascii=False) + ": " + to_json(x, indent + 1)
                                   for k, x in v) + "\n" + pad + "}"
    if isinstance(v, list):
        if all(not isinstance(x, (list, dict)) for x in v):
            return "[" + ", ".join(to_json(x) for x in v) + "]"   # a row on one line
        return "[\n" + ",\n".join(inner + to_json(x, indent + 1) for x in v) + "\n" + pad + "]"
    if isinstance(v, float):
        assert math.isfinite(v)
        return repr(v)
    return json.dumps(v, ensure_ascii=False)   # str, int, None


def rows(t):
    """Tensor -> nested lists of floats, -inf -> None (null)."""
    def cell(x):
        x = float(x)
        if x == float("-inf"):
            return None
        assert math.isfinite(x), "non-finite number %r in the reference" % x
        return x
    if t.dim() == 1:
        return [cell(x) for x in t.tolist()]
    return [[cell(x) for x in r] for r in t.tolist()]


def dump(L, R):
    d = Pairs([("attnviz", 1), ("title", L["title"]), ("n", L["n"]), ("m", L["m"]),
               ("d_model", L["d_model"]), ("h", L["h"]), ("d_k", L["d_k"]), ("d_v", L["d_v"])])
    present = {"input", "project", "scores", "scale", "softmax", "weighted"}
    if L["positional"] != "none":
        present.add("positional")
    if L["h"] > 1:
        present |= {"split", "concat"}
    if L["mask"] != "none":
        present.add("mask")
    if "W_o" in L:
        present.add("output")
    d.append(("stages", [s for s in STAGES if s in present]))
    d.append(("tokens", L["tokens"]))
    if "source_tokens" in L:
        d.append(("source_tokens", L["source_tokens"]))
    for k in ("W_q", "W_k", "W_v", "W_o"):
        if k in L:
            d.append((k, rows(L[k])))
    if "w_e" in L:
        d.append(("w_e", rows(L["w_e"])))
    d.append(("input", rows(L["input"])))
    if "PE" in R:
        d.append(("PE", rows(R["PE"])))
    d.append(("X", rows(R["X"])))
    if "source_input" in L:
        d.append(("source_input", rows(L["source_input"])))
        if "PE_src" in R:
            d.append(("PE_src", rows(R["PE_src"])))
        d.append(("S", rows(R["S"])))
    for k in ("Q", "K", "V"):
        d.append((k, rows(R[k])))
    # Second "heads": the list of per-head stages (the first is the count).
    d.append(("heads", [Pairs((k, rows(hd[k])) for k in ("scores", "scaled", "masked", "weights", "output"))
                        for hd in R["heads"]]))
    d.append(("concat", rows(R["concat"])))
    d.append(("output", rows(R["output"])))
    d.append(("row_all_masked", R["row_all_masked"]))
    return d


def compare_variant(doc):
    """The lesson's "compare" variant: the lesson with the keys in "compare" replaced."""
    variant = {k: v for k, v in doc.items() if k not in ("compare", "steps")}
    for k, v in doc["compare"].items():
        if k == "label":
            continue
        if k in ("attnviz", "title", "summary", "steps", "compare"):
            raise LessonError("compare.%s: may not be replaced" % k)
        variant[k] = v
    return variant


def reference(doc):
    L = load(doc)
    R = compute(L)
    mha = cross_check(L, R)
    d = dump(L, R)
    checks = ["einsum"] + (["mha"] if mha else [])
    if "compare" in doc:
        sub_dump, sub = reference(compare_variant(doc))
        d.append(("compare", sub_dump))
        checks += ["compare:" + c for c in sub]
    return d, checks


# ------------------------------------------------------------- summary
SUMMARY_LIMIT = 1 << 20   # a reference bigger than this is committed as a summary


def is_matrix(v):
    return isinstance(v, list) and v and all(isinstance(r, list) for r in v) and \
        all(x is None or is_number(x) for r in v for x in r)


def summarise_matrix(v):
    """A matrix (rows of numbers, null for -inf) -> its shape, the mean, sample
    std, min and max of its finite cells (torch.float64), and a few cells:
    what tests/jsoncmp.c --summary computes from an actual --dump."""
    r, c = len(v), len(v[0])
    t = torch.tensor([[float("-inf") if x is None else x for x in row] for row in v])
    f = t[torch.isfinite(t)]
    s = Pairs([("shape", [r, c])])
    if f.numel() > 0:
        s += [("mean", float(f.mean())), ("std", float(f.std()) if f.numel() > 1 else 0.0),
              ("min", float(f.min())), ("max", float(f.max()))]
    picks = sorted({(0, 0), (r - 1, c - 1), (r // 2, c // 3), (r // 3, c // 2), (r - 1, 0), (0, c - 1)})
    s.append(("cells", [[i, j, v[i][j]] for i, j in picks]))
    return s


def summarise(v):
    """The dump with every matrix replaced by its summary."""
    if isinstance(v, dict):
        v = Pairs(v.items())
    if isinstance(v, Pairs):
        return Pairs((k, summarise(x)) for k, x in v)
    if is_matrix(v):
        return summarise_matrix(v)
    if isinstance(v, list):
        return [summarise(x) for x in v]
    return v


def write_lessons():
    """tests/golden/lessons/NAME.ref.json (or NAME.summary.json) for every lessons/NAME.json."""
    root = os.path.dirname(os.path.dirname(HERE))
    outdir = os.path.join(HERE, "lessons")
    os.makedirs(outdir, exist_ok=True)
    for path in sorted(glob.glob(os.path.join(root, "lessons", "*.json"))):
        name = os.path.basename(path)[:-len(".json")]
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        d, checks = reference(doc)
        text = to_json(d) + "\n"
        for old in (".ref.json", ".summary.json"):
            if os.path.exists(os.path.join(outdir, name + old)):
                os.remove(os.path.join(outdir, name + old))
        if len(text.encode("utf-8")) > SUMMARY_LIMIT:
            text = to_json(summarise(d)) + "\n"
            out = os.path.join(outdir, name + ".summary.json")
        else:
            out = os.path.join(outdir, name + ".ref.json")
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
        print("%s: %s" % (os.path.relpath(out), ", ".join(checks)), file=sys.stderr)


def write_reference(lesson_path, out):
    with open(lesson_path, encoding="utf-8") as f:
        doc = json.load(f)
    d, checks = reference(doc)
    out.write(to_json(d) + "\n")
    return checks


def main(argv):
    if len(argv) == 2 and argv[1] == "--prng":
        sys.stdout.write(prng_reference())
        return 0
    if len(argv) == 2 and argv[1] == "--all":
        for path in sorted(glob.glob(os.path.join(HERE, "*.json"))):
            if path.endswith(".ref.json"):
                continue
            ref = path[:-len(".json")] + ".ref.json"
            with open(ref, "w", encoding="utf-8") as out:
                checks = write_reference(path, out)
            print("%s: %s" % (os.path.relpath(ref), ", ".join(checks)), file=sys.stderr)
        with open(os.path.join(HERE, "prng_reference.txt"), "w") as out:
            out.write(prng_reference())
        return 0
    if len(argv) == 2 and argv[1] == "--lessons":
        write_lessons()
        return 0
    if len(argv) == 2 and not argv[1].startswith("-"):
        write_reference(argv[1], sys.stdout)
        return 0
    print("usage: make_reference.py LESSON.json > REF.json | --all | --lessons | --prng", file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (LessonError, KeyError, ValueError, OSError) as e:
        print("make_reference.py: %s" % e, file=sys.stderr)
        sys.exit(1)
