#!/usr/bin/python3
"""Independent reference numbers for lessons/qknorm.json (issue 23 §1's lesson),
computed with PyTorch in float64:

    make_reference_qknorm.py lessons/qknorm.json > tests/golden/lessons/qknorm.ref.json

The computation is make_reference_v4.py's, unchanged (Qwen3Attention.forward:
q_norm / k_norm per head over head_dim BEFORE apply_rotary_pos_emb, then
eager_attention_forward; see that script's docstring for the transformers
lines followed). What this script adds:

  - the lesson's "compare" variant turns QK-norm off with "qk_norm": false
    (lessons/FORMAT.md, compare), which v4's reader would take as present:
    here false means no QK-norm, as in Qwen2Attention (no q_norm / k_norm);
  - the lesson's claims, checked on stderr (any failure aborts):
      * with QK-norm every |score| ≤ |q|·|k| = √d_k·max|q_w| · √d_k·max|k_w|
        (here 1.5·√2 · √2 = 3), and without it a score is larger than that;
      * doubling W_q doubles every score without QK-norm and leaves them
        (up to eps) the same with it (the step-6 question);
      * RoPE keeps each row's length (Q_rot's rows as long as Q_norm's).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_v4 as v4  # noqa: E402

torch.set_default_dtype(torch.float64)
_v4_read_lesson = v4.read_lesson


def read_lesson(path, override=None):
    """v4's reader; "qk_norm": false (a compare variant's) means no QK-norm."""
    off = override is not None and override.get("qk_norm") is False
    if off:
        override = {k: v for k, v in override.items() if k != "qk_norm"}
    L, s, params = _v4_read_lesson(path, override)
    if off:
        L.pop("qk_norm", None)
        for p in params:
            for key in ("qk_norm", "q_norm", "k_norm"):
                p.pop(key, None)
    return L, s, params


v4.read_lesson = read_lesson   # v4.reference() reads the compare variant through this one


def forward_scores(L, s, params):
    out = v4.forward(L, s, params, None)
    return torch.stack([torch.tensor(hd["scores"].tolist()) for hd in out["layers"][0]["attn"]["heads"]]), \
        out["layers"][0]["attn"]


def claims(path):
    with open(path) as f:
        J = json.load(f)
    L, s, params = read_lesson(path)
    sc, at = forward_scores(L, s, params)
    dk = params[0]["W_q"].shape[1] // params[0]["heads"]
    bound = math.sqrt(dk) * float(params[0]["q_norm"].abs().max()) * math.sqrt(dk) * float(params[0]["k_norm"].abs().max())
    if float(sc.abs().max()) > bound + 1e-9:
        raise v4.CheckFailed("a score %.6g is beyond the bound %.6g" % (float(sc.abs().max()), bound))
    Lc, sc_s, pc = read_lesson(path, J["compare"])
    plain, _ = forward_scores(Lc, sc_s, pc)
    if float(plain.abs().max()) <= bound:
        raise v4.CheckFailed("without QK-norm the scores stay within the bound: the lesson's point is lost")
    for p in params + pc:
        p["W_q"] = p["W_q"] * 2
    twice, _ = forward_scores(L, s, params)
    v4.agree("doubled W_q with QK-norm: the same scores (eps aside)", twice, sc, 1e-6)
    twice_plain, _ = forward_scores(Lc, sc_s, pc)
    v4.agree("doubled W_q without QK-norm: twice the scores", twice_plain, 2 * plain, 1e-9)
    v4.agree("RoPE keeps the lengths", at["Q_rot"].view(-1, dk).norm(dim=-1), at["Q_norm"].view(-1, dk).norm(dim=-1), 1e-12)
    print("%s: claims: |score| <= %.6g with QK-norm (max %.6g), max %.6g without; doubling W_q: same / twice"
          % (os.path.basename(path), bound, float(sc.abs().max()), float(plain.abs().max())), file=sys.stderr)


def main(argv):
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        claims(argv[1])
    except v4.CheckFailed as e:
        print("%s: %s" % (argv[1], e), file=sys.stderr)
        return 1
    return v4.main(argv)   # its reference, through this read_lesson


if __name__ == "__main__":
    sys.exit(main(sys.argv))
