#!/usr/bin/python3
"""The "head_scores" of a real model's --dump (issue 22), computed with PyTorch
from the committed test model tests/models/gpt2 (its model.safetensors read
here, its forward pass tests/models/make_models.py's forward_gpt2), never from
attnviz: tests/t_lens.sh compares `attnviz --model tests/models/gpt2 --ids
PROMPT --dump`'s "head_scores" with what this writes.

    OPENBLAS_CORETYPE= /usr/bin/python3 tests/lens/make_head_scores_model.py \
        > tests/lens/head_scores_model.json

Definitions (src/inspect/headscores.h), for a head's weights w (n x n, causal):
  previous_token  mean over rows i >= 1 of w[i][i-1]
  first_token     mean over rows i >= 1 of w[i][0] (row 0 sees only key 0)
  diagonal        mean over rows i of w[i][i]
  induction       on random tokens repeated twice, mean over the rows p of
                  the second copy of w[p][q+1], q the first occurrence of
                  ids[p]; the tokens: SplitMix64 seeded with 1 (base/prng.c),
                  each floor(uniform * vocab), uniform = (next >> 11) * 2^-53;
                  half = 24 tokens, halved while 2*half exceeds the model's
                  positions (as session_induction does).
"""
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "..", "models")
sys.path.insert(0, MODELS)
import make_models  # noqa: E402  (the forward pass of the test models' references)

PROMPT = [5, 17, 3, 250, 17, 3, 9]
MASK = (1 << 64) - 1


def splitmix(seed):
    state = seed
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        yield z ^ (z >> 31)


def repeat_ids(half, vocab):
    g = splitmix(1)
    first = []
    for _ in range(half):
        v = int(float(next(g) >> 11) * 2.0 ** -53 * vocab)
        first.append(min(v, vocab - 1))
    return first + first, half


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in head.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", name
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(t["shape"]).astype(np.float64)
    return out


def mean(xs):
    return sum(xs) / len(xs) if xs else None


def main():
    with open(os.path.join(MODELS, "gpt2", "config.json")) as f:
        c = json.load(f)
    r = {"hidden_size": c["n_embd"], "num_attention_heads": c["n_head"], "norm_eps": c["layer_norm_epsilon"],
         "num_hidden_layers": c["n_layer"]}
    m = {"prefix": ""}
    W = read_safetensors(os.path.join(MODELS, "gpt2", "model.safetensors"))
    half = 24
    while 2 * half > c["n_positions"]:
        half //= 2
    rnd, frm = repeat_ids(half, c["vocab_size"])
    on_prompt = make_models.forward_gpt2(m, r, W, PROMPT)
    on_random = make_models.forward_gpt2(m, r, W, rnd)
    scores = []
    for L in range(r["num_hidden_layers"]):
        layer = []
        for h in range(r["num_attention_heads"]):
            w = np.array(on_prompt["layers"][L]["attn"]["heads"][h]["weights"])
            n = w.shape[0]
            wr = np.array(on_random["layers"][L]["attn"]["heads"][h]["weights"])
            ind = []
            for p in range(frm, len(rnd)):
                q = rnd.index(rnd[p])
                if q < p and q + 1 <= p:
                    ind.append(wr[p][q + 1])
            layer.append({"previous_token": mean([w[i][i - 1] for i in range(1, n)]),
                          "first_token": mean([w[i][0] for i in range(1, n)]),
                          "diagonal": mean([w[i][i] for i in range(n)]),
                          "induction": mean(ind)})
        scores.append(layer)
    json.dump({"about": "tests/lens/make_head_scores_model.py: tests/models/gpt2 on --ids "
               + ",".join(map(str, PROMPT)) + "; induction on %d random tokens repeated twice" % half,
               "head_scores": scores}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
