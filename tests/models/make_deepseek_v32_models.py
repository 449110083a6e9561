#!/usr/bin/python3
"""A small DeepSeek-V3.2 model folder (multi-head latent attention with
DeepSeek Sparse Attention's lightning indexer, dense layers; issue 24 §2's
loader) and its reference numbers, in the layout of make_deepseek_models.py,
whose DeepSeek-V3 forward pass, folder writer and reference file it reuses:

    OPENBLAS_CORETYPE= /usr/bin/python3 tests/models/make_deepseek_v32_models.py     # from the repository root

  tests/models/deepseek_v32_dense/config.json, model.safetensors
  tests/models/deepseek_v32_dense.ref.json      every stage of every layer on a few prompts
  tests/models/bad_deepseek_v32/                configs refused at their keys, and expected.txt

What V3.2 adds to DeepSeek-V3's layer, from deepseek-ai/DeepSeek-V3.2-Exp's
inference/model.py (commit 3b99a53) and its config_671B_v3.2.json
(index_n_heads 64, index_head_dim 128, index_topk 2048); the checkpoint's
names are transformers' with the indexer's own (convert.py maps "wq_b", "wk",
"k_norm", "weights_proj" to themselves): model.layers.N.self_attn.indexer.
{wq_b, wk, k_norm, weights_proj}.weight and indexer.k_norm.bias.

  Indexer.forward: q = wq_b(qr) (qr: q_a_layernorm(q_a_proj(x)), MLA's c_Q), split per head
      [rope | rest], the rope part turned (apply_rotary_emb: pairs (2p, 2p+1) in place);
      k = k_norm(wk(x)) (LayerNorm, eps 1e-6) split [rope | rest], turned;
      weights = weights_proj(x) * n_heads ** -0.5 * head_dim ** -0.5;
      index_score = Σ_h weights · relu(q_h · k) (fp8_index), + mask; topk(min(index_topk, n))
  MLA.forward: scores += index_mask (−inf but at the top-k), then the softmax.
  (FP8 and the Hadamard rotation left out: lessons/FORMAT.md, "dsa".)

The sparse mask enters make_deepseek_models.forward_deepseek through its
softmax: F, as that module sees it, is a stand-in whose softmax adds the layer's
index mask (made here by indexer(), from the layer's x and c_Q, which its
linear records) and whose other functions are torch's. A second computation
(second_indexer: the scores cell by cell, RoPE as complex numbers) must agree
to 1e-12 before anything is written.
"""

import cmath
import json
import math
import os
import shutil
import sys

import torch
import torch.nn.functional as TF

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_deepseek_models as dm             # noqa: E402
import make_models as mm                      # noqa: E402

torch.set_default_dtype(torch.float64)

MODEL = {
    "name": "deepseek_v32_dense", "dtype": "F32", "seed": 2450,
    "why": "DeepSeek-V3.2's dense layers: MLA (q_lora_rank 6, kv_lora_rank 4, d_nope 4, d_rope 4, d_v 3, 2 heads) "
           "with the lightning indexer (index_n_heads 3, index_head_dim 8, index_topk 3), 2 layers",
    "config": dict(dm.BASE, architectures=["DeepseekV32ForCausalLM"], model_type="deepseek_v32", num_hidden_layers=2,
                   first_k_dense_replace=2, q_lora_rank=6, kv_lora_rank=4, qk_nope_head_dim=4, qk_rope_head_dim=4,
                   v_head_dim=3, head_dim=4, index_n_heads=3, index_head_dim=8, index_topk=3),
    "prompts": [[7, 20], [7, 20, 30, 40, 50, 60, 70, 299]],
}


def tensor_list(m, r):
    """DeepseekV3's tensors and each layer's indexer."""
    out = dm.tensor_list(m, r)
    D, L, q = r["hidden_size"], r["num_hidden_layers"], r["q_lora_rank"]
    H, d = m["config"]["index_n_heads"], m["config"]["index_head_dim"]
    for i in range(L):
        h = "model.layers.%d.self_attn.indexer." % i
        out += [(h + "wq_b.weight", (H * d, q), "qk"), (h + "wk.weight", (d, D), "qk"),
                (h + "k_norm.weight", (d,), "ln_w"), (h + "k_norm.bias", (d,), "b"),
                (h + "weights_proj.weight", (H, D), "w")]
    return out


def rotary(x, n, dr, theta):
    """apply_rotary_emb on (n, heads, dr): pairs (2p, 2p+1) as complex numbers, turned by t·θ^(−2p/dr), in place."""
    freqs = 1.0 / (theta ** (torch.arange(0, dr, 2, dtype=torch.float64) / dr))
    fc = torch.polar(torch.ones(n, dr // 2), torch.outer(torch.arange(n, dtype=torch.float64), freqs))
    xc = torch.view_as_complex(x.contiguous().view(*x.shape[:-1], -1, 2))
    return torch.view_as_real(xc * fc.view(n, 1, -1)).flatten(2)


def indexer(m, W, i, x, qr, theta, dr):
    """Indexer.forward for layer i without FP8: q, k, weights, the index scores (+ mask) and the kept set."""
    c = m["config"]
    n, H, d = x.shape[0], c["index_n_heads"], c["index_head_dim"]
    h = "model.layers.%d.self_attn.indexer." % i
    q = TF.linear(qr, mm.T(W, h + "wq_b.weight")).view(n, H, d)
    q_pe, q_nope = torch.split(q, [dr, d - dr], dim=-1)
    q = torch.cat([rotary(q_pe, n, dr, theta), q_nope], dim=-1)
    k = TF.layer_norm(TF.linear(x, mm.T(W, h + "wk.weight")), (d,), mm.T(W, h + "k_norm.weight"),
                      mm.T(W, h + "k_norm.bias"), 1e-6)
    k_pe, k_nope = torch.split(k, [dr, d - dr], dim=-1)
    k = torch.cat([rotary(k_pe.unsqueeze(1), n, dr, theta).squeeze(1), k_nope], dim=-1)
    w = TF.linear(x, mm.T(W, h + "weights_proj.weight")) * H ** -0.5
    w = w * d ** -0.5
    mask = torch.full((n, n), float("-inf")).triu_(1)
    score = (torch.relu(torch.einsum("thd,sd->tsh", q, k)) * w.unsqueeze(1)).sum(-1) + mask
    top = min(c["index_topk"], n)
    idx = score.topk(top, dim=-1)[1]
    for t in range(n):                        # no tie at the k-th place (attnviz keeps the earlier key)
        v = sorted((float(z) for z in score[t, :t + 1]), reverse=True)
        assert len(v) <= top or v[top - 1] - v[top] > 1e-9, ("tie", i, t, v)
    index_mask = torch.full((n, n), float("-inf")).scatter_(-1, idx, 0) + mask
    return {"q": q.reshape(n, -1), "k": k, "w": w, "scores": score, "index_mask": index_mask}


def second_indexer(m, W, i, x, qr, theta, dr):
    """The index scores cell by cell: plain sums, LayerNorm by hand, RoPE as complex numbers."""
    c = m["config"]
    n, H, d = x.shape[0], c["index_n_heads"], c["index_head_dim"]
    h = "model.layers.%d.self_attn.indexer." % i
    Wq, Wk, Ww = (mm.T(W, h + s).tolist() for s in ("wq_b.weight", "wk.weight", "weights_proj.weight"))
    g, b = mm.T(W, h + "k_norm.weight").tolist(), mm.T(W, h + "k_norm.bias").tolist()
    X, Q = x.tolist(), qr.tolist()

    def turn(v, t):
        v = list(v)
        for p in range(dr // 2):
            z = complex(v[2 * p], v[2 * p + 1]) * cmath.exp(1j * t * theta ** (-2 * p / dr))
            v[2 * p], v[2 * p + 1] = z.real, z.imag
        return v

    keys = []
    for t in range(n):
        row = [sum(a * wr[j] for j, a in enumerate(X[t])) for wr in Wk]
        mean = sum(row) / d
        var = sum((z - mean) ** 2 for z in row) / d
        keys.append(turn([(z - mean) / math.sqrt(var + 1e-6) * g[j] + b[j] for j, z in enumerate(row)], t))
    out = torch.full((n, n), float("-inf"))
    for t in range(n):
        qs = [turn([sum(a * Wq[hh * d + j][e] for e, a in enumerate(Q[t])) for j in range(d)], t) for hh in range(H)]
        ws = [sum(a * Ww[hh][e] for e, a in enumerate(X[t])) / math.sqrt(H) / math.sqrt(d) for hh in range(H)]
        for s in range(t + 1):
            out[t, s] = sum(ws[hh] * max(0.0, sum(u * v for u, v in zip(qs[hh], keys[s]))) for hh in range(H))
    return out


class SparseF:
    """torch.nn.functional for forward_deepseek, but its attention softmax adds the layer's index mask."""

    def __init__(self, m, r, W):
        self.m, self.r, self.W = m, r, W
        self.layer, self.x, self.found = -1, None, []

    def __getattr__(self, name):
        return getattr(TF, name)

    def linear(self, x, weight, bias=None):
        for i in range(self.r["num_hidden_layers"]):
            h = "model.layers.%d.self_attn." % i
            if weight.shape == mm.T(self.W, h + "q_a_proj.weight").shape and \
                    torch.equal(weight, mm.T(self.W, h + "q_a_proj.weight")):
                self.layer, self.x = i, x                     # the layer's input rows, norm1
            elif weight.shape == mm.T(self.W, h + "q_b_proj.weight").shape and \
                    torch.equal(weight, mm.T(self.W, h + "q_b_proj.weight")):
                self.qr = x                                   # c_Q
        return TF.linear(x, weight, bias)

    def softmax(self, z, dim=-1):
        r = self.r
        got = indexer(self.m, self.W, self.layer, self.x, self.qr, r["rope_theta"], r["qk_rope_head_dim"])
        again = second_indexer(self.m, self.W, self.layer, self.x, self.qr, r["rope_theta"], r["qk_rope_head_dim"])
        mm.agree("%s layer %d index scores" % (self.m["name"], self.layer), again.tril(), got["scores"].tril())
        got["dense"] = TF.softmax(z, dim=dim)
        self.found.append(got)
        return TF.softmax(z + got["index_mask"].unsqueeze(0), dim=dim)


def forward_v32(m, r, W, ids):
    """DeepseekV3's forward with the indexer's top-k in each layer's softmax; each layer's "dsa" as attnviz dumps it."""
    sf = SparseF(m, r, W)
    dm.F = sf
    try:
        rec = dm.forward_deepseek(m, r, W, ids)
    finally:
        dm.F = TF
    cfg = m["config"]
    for lay, got in zip(rec["layers"], sf.found):
        kept = torch.isfinite(got["index_mask"]).to(torch.float64)
        lay["attn"]["dsa"] = {"index_n_heads": cfg["index_n_heads"], "index_head_dim": cfg["index_head_dim"],
                              "index_topk": cfg["index_topk"], "index_q": mm.mat(got["q"]), "index_k": mm.mat(got["k"]),
                              "index_w": mm.mat(got["w"]),
                              "index_scores": [[None if v == float("-inf") else v for v in row]
                                               for row in got["scores"].tolist()],
                              "index_kept": mm.mat(kept),
                              "heads": [{"dense_weights": mm.mat(got["dense"][j])} for j in range(got["dense"].shape[0])]}
    return rec


def cross_check(m, r, W, rec):
    """The indexer was computed twice (SparseF.softmax); the weights' rows sum to 1 over the kept keys alone."""
    for i, lay in enumerate(rec["layers"]):
        kept = torch.tensor(lay["attn"]["dsa"]["index_kept"])
        for j, hd in enumerate(lay["attn"]["heads"]):
            w = torch.tensor(hd["weights"])
            mm.agree("%s layer %d head %d weights on dropped keys" % (m["name"], i, j), w * (1 - kept), torch.zeros_like(w))


def resolved(cfg):
    r = dm.resolved(cfg)
    r.update(index_n_heads=cfg["index_n_heads"], index_head_dim=cfg["index_head_dim"], index_topk=cfg["index_topk"])
    return r


def bad_folders():
    """tests/models/bad_deepseek_v32/NAME/config.json and expected.txt (t_models.sh)."""
    top = os.path.join(HERE, "bad_deepseek_v32")
    if os.path.isdir(top):
        shutil.rmtree(top)
    cases = [
        ("heads_type", {"index_n_heads": "3"}, "config.json: index_n_heads: expected a size from 1 to 4096"),
        ("dim_small", {"index_head_dim": 2}, "config.json: index_head_dim: 2: smaller than qk_rope_head_dim (4)"),
        ("noqlora", {"q_lora_rank": None}, "config.json: q_lora_rank: null: DeepSeek-V3.2's indexer reads"),
        ("yarn", {"rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16}},
         "config.json: rope_scaling: attnviz computes deepseek_v32's indexer with plain RoPE only"),
    ]
    lines = ["# tests/models/bad_deepseek_v32 (make_deepseek_v32_models.py): FOLDER<TAB>words its refusal says"]
    for name, edit, words in cases:
        d = os.path.join(top, name)
        os.makedirs(d)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(dict(MODEL["config"], **edit), f, indent=2, sort_keys=True)
            f.write("\n")
        lines.append("%s\t%s" % (name, words))
    with open(os.path.join(top, "expected.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    mm.tensor_list, mm.forward_llama, mm.cross_check = tensor_list, forward_v32, cross_check
    r = resolved(MODEL["config"])
    values, files, entries = mm.write_folder(MODEL, r, os.path.join(HERE, MODEL["name"]))
    mm.write_reference(MODEL, mm.reference(MODEL, r, values, files, entries))
    bad_folders()


if __name__ == "__main__":
    main()
