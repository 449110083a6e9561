#!/usr/bin/env python3
"""make_generate_cache_ref.py: the logits `generate N` reads at each of its
steps through the KV cache (tests/unit_generate.c), from PyTorch.

For each folder of make_models.py (read back from its committed safetensors
files by make_generate_ref.py's reader), the prompt and greedy continuation
of generate.ref.json: the last position's logits after the prompt and each
generated token but the last, each from the whole forward pass of
make_models.py (forward_gpt2 / forward_llama, float64, which follow the
transformers modeling code line by line) on the ids so far, with no cache:
what attnviz's one-row steps through every layer's cached keys and values
must equal (1e-9 relative).

Writes tests/models/generate_cache.ref.json:
  {"about": …, "models": {NAME: {"ids": [prompt + greedy], "from": len(prompt),
   "logits": [[vocab numbers] for ids[:from + 1], ids[:from + 2], …]}}}
Run from the repository root: OPENBLAS_CORETYPE= /usr/bin/python3 tests/models/make_generate_cache_ref.py
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_models as mm  # noqa: E402
import make_generate_ref as mg  # noqa: E402  (its reader of the committed folders)

OUT = os.path.join(HERE, "generate_cache.ref.json")


def main():
    with open(os.path.join(HERE, "generate.ref.json")) as f:
        greedy = json.load(f)["models"]
    ref = {"about": __doc__.split("\n\n")[1].replace("\n", " "), "models": {}}
    for m in mm.MODELS:
        folder = os.path.join(HERE, m["name"])
        with open(os.path.join(folder, "config.json")) as f:
            r = mm.resolved(json.load(f))
        W = mg.read_folder(folder)
        forward = mm.forward_gpt2 if m["config"]["model_type"] == "gpt2" else mm.forward_llama
        g = greedy[m["name"]]
        ids = g["prompt"] + g["greedy"]
        n0 = len(g["prompt"])
        rows = []
        for k in range(1, len(g["greedy"])):
            z = forward(m, r, W, ids[:n0 + k])["logits"][-1]
            rows.append([float(v) for v in z])
        ref["models"][m["name"]] = {"ids": ids, "from": n0, "logits": rows}
    with open(OUT, "w") as f:
        json.dump(ref, f)
        f.write("\n")


if __name__ == "__main__":
    main()
