#!/usr/bin/python3
"""Independent reference numbers for gated attention's bias (issue 23 §6),
computed with PyTorch in float64:

    make_reference_gatebias.py --all tests/golden/gatebias   # the lessons and every NAME.ref.json

Written from transformers' models/qwen3_next/modeling_qwen3_next.py,
Qwen3NextAttention (not from the C code):

    self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim * 2,
                            bias=config.attention_bias)
    query_states, gate = torch.chunk(self.q_proj(hidden_states).view(*input_shape, -1, self.head_dim * 2), 2, dim=-1)
    gate = gate.reshape(*input_shape, -1)
    ...
    attn_output = attn_output * torch.sigmoid(gate)
    attn_output = self.o_proj(attn_output)

so with attention_bias the gate's half of q_proj's bias is added to the gate.
A lesson gives that half as "b_gate" (1 × h·d_v) beside "W_gate"; q_proj's
query half is "b_q". Here q_proj is built as one nn.Linear of twice the width
from the lesson's W_q, b_q, W_gate and b_gate (each head's query columns,
then its gate's, as Qwen3-Next lays them out), run, and chunked as above;
the rest is a causal eager attention (softmax(q·kᵀ/√d_k + mask)·v per
head, then o_proj). Each lesson also decodes ("decode": true): its rows are
the full ones (the dump's "decode" output rows).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import math
import os
import sys

import torch

torch.set_default_dtype(torch.float64)


def T(x):
    return torch.tensor(x, dtype=torch.float64)


def reference(L):
    X = T(L["X"])
    n, D = X.shape
    h = L.get("heads", 1)
    Wq, Wk, Wv, Wo, Wg = T(L["W_q"]), T(L["W_k"]), T(L["W_v"]), T(L["W_o"]), T(L["W_gate"])
    dk, dv = Wq.shape[1] // h, Wv.shape[1] // h
    assert dk == dv  # Qwen3-Next's head_dim: the query and the gate are both head_dim wide
    bq = T(L["b_q"]) if "b_q" in L else torch.zeros(h * dk)
    bg = T(L["b_gate"])
    # q_proj, twice as wide: each head's query columns, then its gate's
    W2 = torch.cat([torch.cat([Wq[:, i * dk:(i + 1) * dk], Wg[:, i * dv:(i + 1) * dv]], dim=1) for i in range(h)], dim=1)
    b2 = torch.cat([torch.cat([bq[i * dk:(i + 1) * dk], bg[i * dv:(i + 1) * dv]]) for i in range(h)])
    q_proj = torch.nn.Linear(D, 2 * h * dk, bias=True)
    with torch.no_grad():
        q_proj.weight.copy_(W2.T)
        q_proj.bias.copy_(b2)
    query, gate = torch.chunk(q_proj(X).view(n, -1, dk * 2), 2, dim=-1)
    gate = gate.reshape(n, -1)
    K, V = X @ Wk, X @ Wv
    mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
    heads = []
    for i in range(h):
        s = query[:, i, :] @ K[:, i * dk:(i + 1) * dk].T / math.sqrt(dk) + mask
        heads.append(torch.softmax(s, dim=-1) @ V[:, i * dv:(i + 1) * dv])
    concat = torch.cat(heads, dim=1)
    sig = torch.sigmoid(gate)
    gated = concat * sig
    out = gated @ Wo
    if "b_o" in L:
        out = out + T(L["b_o"])
    ref = {"Q": query.reshape(n, -1).tolist(), "concat": concat.tolist(), "gate": gate.tolist(),
           "gate_sig": sig.tolist(), "gated": gated.tolist(), "output": out.tolist()}
    if L.get("decode"):
        ref["decode"] = [{"t": t, "output": [out[t].tolist()]} for t in range(n)]
    return ref


def rnd(g, r, c, s=1.0):
    return [[round(float(x), 4) for x in row] for row in (torch.randn(r, c, generator=g) * s)]


def lessons():
    g = torch.Generator().manual_seed(2306)
    n, d = 5, 4
    return {
        "gatebias_two_heads": {
            "attnviz": 2, "title": {"en": "Gated attention with the gate's bias", "zh": "带偏置的门控注意力"},
            "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d), "heads": 2,
            "W_q": rnd(g, d, 4), "W_k": rnd(g, d, 4), "W_v": rnd(g, d, 4), "W_o": rnd(g, 4, d),
            "W_gate": rnd(g, d, 4), "b_gate": rnd(g, 1, 4, 2.0)[0], "mask": "causal"},
        "gatebias_qbias_decode": {
            "attnviz": 2, "title": {"en": "The gate's bias beside q_proj's query bias, decoded",
                                    "zh": "门的偏置与 q_proj 的查询偏置，逐词解码"},
            "tokens": ["t%d" % i for i in range(n)], "X": rnd(g, n, d), "heads": 2,
            "W_q": rnd(g, d, 4), "W_k": rnd(g, d, 4), "W_v": rnd(g, d, 4), "W_o": rnd(g, 4, d),
            "b_q": rnd(g, 1, 4)[0], "b_o": rnd(g, 1, d)[0],
            "W_gate": rnd(g, d, 4), "b_gate": rnd(g, 1, 4, 2.0)[0], "mask": "causal", "decode": True},
    }


def save(path, obj):
    with open(path, "w") as f:
        f.write(json.dumps(obj, ensure_ascii=False, indent=1) + "\n")


def main():
    if len(sys.argv) != 3 or sys.argv[1] != "--all":
        sys.exit(__doc__)
    for name, L in lessons().items():
        base = os.path.join(sys.argv[2], name)
        save(base + ".json", L)
        save(base + ".ref.json", reference(L))


if __name__ == "__main__":
    main()
