#!/usr/bin/python3
"""The logit lens (issue 22) of the committed test model tests/models/gpt2,
computed with PyTorch (tests/models/make_models.py's forward_gpt2 on the
weights of its model.safetensors), never from attnviz: tests/unit_lens.c and
tests/t_lens.sh compare attnviz's `lens` with what this writes.

    OPENBLAS_CORETYPE= /usr/bin/python3 tests/lens/make_lens_model.py > tests/lens/lens_model.json

For layer L and position i: z = ln_f(output of layer L [i]) · wteᵀ (GPT-2's
final LayerNorm and its tied unembedding), p = softmax(z); each cell keeps the
top 5 ids (ties: lower id first), their p and z. The last layer's row is the
model's own logits.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_head_scores_model as hs  # noqa: E402  (reads the model; its PROMPT)

TOP = 5


def main():
    with open(os.path.join(hs.MODELS, "gpt2", "config.json")) as f:
        c = json.load(f)
    r = {"hidden_size": c["n_embd"], "num_attention_heads": c["n_head"], "norm_eps": c["layer_norm_epsilon"],
         "num_hidden_layers": c["n_layer"]}
    W = hs.read_safetensors(os.path.join(hs.MODELS, "gpt2", "model.safetensors"))
    rec = hs.make_models.forward_gpt2({"prefix": ""}, r, W, hs.PROMPT)
    T = lambda name: torch.from_numpy(W[name]).to(torch.float64)  # noqa: E731
    cells = []
    for L in range(r["num_hidden_layers"]):
        x = torch.tensor(rec["layers"][L]["output"], dtype=torch.float64)
        x = F.layer_norm(x, (r["hidden_size"],), T("ln_f.weight"), T("ln_f.bias"), r["norm_eps"])
        z = F.linear(x, T("wte.weight"))
        p = F.softmax(z, dim=-1)
        row = []
        for i in range(len(hs.PROMPT)):
            ids = sorted(range(z.shape[1]), key=lambda v: (-float(z[i][v]), v))[:TOP]
            row.append({"id": ids, "p": [float(p[i][v]) for v in ids], "z": [float(z[i][v]) for v in ids]})
        cells.append(row)
    last = torch.tensor(rec["logits"], dtype=torch.float64)
    assert float((last - z).abs().max()) < 1e-12  # the last row is the model's logits
    json.dump({"about": "tests/lens/make_lens_model.py: tests/models/gpt2 on --ids " + ",".join(map(str, hs.PROMPT)),
               "lens": cells}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
