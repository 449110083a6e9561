#!/usr/bin/env python3
"""make_generate_ref.py: the greedy continuation of each small model folder of
tests/models, from PyTorch, for `generate N` (tests/t_lessonmodel.sh).

For each folder make_models.py wrote (read back here from its committed
safetensors files, not generated again), one of its prompts is continued N
tokens greedily as transformers' `model.generate(ids, do_sample=False,
max_new_tokens=N)` does (GenerationMixin._sample with greedy search: the next
token is argmax of the last position's logits, the first of equals as
torch.argmax gives it, appended, and the model run again): the forward is
make_models.py's float64 forward_gpt2 / forward_llama, which follow the
transformers modeling code line by line (see that script). Each step's gap
between the largest and the second largest logit is written too, and must be
well above rounding (1e-6), so that the choice does not depend on the last
digit.

Writes tests/models/generate.ref.json, one model a line:
  {"N": N, "about": …, "models": {
  NAME: {"greedy": [N ids], "min_gap": g, "prompt": [ids]}, …}}
Run from the repository root: OPENBLAS_CORETYPE= /usr/bin/python3 tests/models/make_generate_ref.py
"""
import json
import os
import struct
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_models as mm  # noqa: E402  (the forward passes and the configs; its main() is not run)

N = 5
OUT = os.path.join(HERE, "generate.ref.json")


def read_safetensors(path):
    """name -> float64 numpy array (in the file's shape) of a safetensors file's F32, F16 and BF16 tensors."""
    with open(path, "rb") as f:
        blob = f.read()
    (hlen,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + hlen])
    data = blob[8 + hlen:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        raw = data[a:b]
        if e["dtype"] == "F32":
            v = np.frombuffer(raw, "<f4").astype(np.float64)
        elif e["dtype"] == "F16":
            v = np.frombuffer(raw, "<f2").astype(np.float64)
        elif e["dtype"] == "BF16":
            v = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            raise SystemExit("%s: %s: dtype %s" % (path, name, e["dtype"]))
        out[name] = v.reshape(e["shape"])
    return out


def read_folder(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    values = {}
    for name in files:
        values.update(read_safetensors(os.path.join(folder, name)))
    # GPT-2's attn.bias / attn.masked_bias buffers are not weights (make_models.py leaves them out of values)
    return {k: v for k, v in values.items() if not k.endswith((".attn.bias", ".attn.masked_bias"))}


def main():
    ref = {"N": N, "about": __doc__.split("\n\n")[1].replace("\n", " "), "models": {}}
    for m in mm.MODELS:
        folder = os.path.join(HERE, m["name"])
        with open(os.path.join(folder, "config.json")) as f:
            r = mm.resolved(json.load(f))
        W = read_folder(folder)
        forward = mm.forward_gpt2 if m["config"]["model_type"] == "gpt2" else mm.forward_llama
        prompt = max(m["prompts"], key=len)[:4]
        ids, gaps = list(prompt), []
        for _ in range(N):
            z = torch.tensor(forward(m, r, W, ids)["logits"][-1], dtype=torch.float64)
            top2 = torch.topk(z, 2).values
            gaps.append(float(top2[0] - top2[1]))
            ids.append(int(torch.argmax(z)))
        assert min(gaps) > 1e-6, (m["name"], gaps)
        ref["models"][m["name"]] = {"prompt": prompt, "greedy": ids[len(prompt):], "min_gap": min(gaps)}
        print("%-20s %s -> %s (smallest gap %.3g)" % (m["name"], prompt, ids[len(prompt):], min(gaps)), file=sys.stderr)
    # one model a line, so that a shell test reads it with sed
    with open(OUT, "w") as f:
        f.write('{"N": %d, "about": %s, "models": {\n' % (N, json.dumps(ref["about"])))
        f.write(",\n".join('%s: %s' % (json.dumps(k), json.dumps(v, sort_keys=True)) for k, v in ref["models"].items()))
        f.write("\n}}\n")
    json.load(open(OUT))


if __name__ == "__main__":
    main()
