#!/usr/bin/python3
"""The head scores of issue 22 (previous-token, first-token, diagonal), computed
with NumPy from the PyTorch reference numbers of some lessons
(tests/golden/lessons/NAME.ref.json, made by make_reference*.py), never from
attnviz: tests/t_plain.sh compares the `heads` table with what this writes.

    /usr/bin/python3 tests/golden/head_scores.py > tests/golden/head_scores.tsv

One line a head: lesson, layer, head, prev, first, diag, induction (17
significant digits; "-" when undefined).

Definitions (src/inspect/headscores.h): for a head's weights w (n x m) and the
cells its mask lets a query see (the masked scores that are not -inf, null in
the JSON), each score is the mean over the rows i that can see the key of
  prev:  w[i][i-1] (rows i >= 1)    first: w[i][0] (rows i >= 1)    diag: w[i][i]
and undefined (None) when no row can. The induction score needs a vocabulary:
a lesson has none, so it is always undefined here.
"""
import json
import os
import sys

import numpy as np

LESSONS = ["multihead", "mask", "window", "gqa", "rmsnorm"]
HERE = os.path.dirname(os.path.abspath(__file__))


def heads_of(ref):
    """Each layer's list of heads (a lesson without layers is one)."""
    if "layers" in ref:
        return [layer["attn"]["heads"] for layer in ref["layers"]]
    return [ref["heads"]]


def score(w, vis, key):
    total, rows = 0.0, 0
    for i in range(w.shape[0]):
        j = key(i)
        if 0 <= j < w.shape[1] and vis[i, j]:
            total += w[i, j]
            rows += 1
    return total / rows if rows else None


def scores(head):
    w = np.array(head["weights"], dtype=np.float64)
    vis = np.array([[c is not None for c in row] for row in head["masked"]])
    return {
        "prev": score(w, vis, lambda i: i - 1 if i >= 1 else -1),
        "first": score(w, vis, lambda i: 0 if i >= 1 else -1),
        "diag": score(w, vis, lambda i: i),
        "induction": None,
    }


def main():
    print("# lesson\tlayer\thead\tprev\tfirst\tdiag\tinduction  (tests/golden/head_scores.py)")
    for name in LESSONS:
        with open(os.path.join(HERE, "lessons", name + ".ref.json")) as f:
            ref = json.load(f)
        for li, layer in enumerate(heads_of(ref)):
            for hi, head in enumerate(layer):
                sc = scores(head)
                cells = ["-" if sc[k] is None else "%.17g" % sc[k] for k in ("prev", "first", "diag", "induction")]
                print("\t".join([name, str(li), str(hi)] + cells))


if __name__ == "__main__":
    main()
