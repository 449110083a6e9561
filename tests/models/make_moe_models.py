#!/usr/bin/python3
"""Small model folders with a mixture of experts (issue 23 §7), and their
reference numbers, in the layout of make_models.py (whose folder writer,
weights and both forward passes this script reuses, with its FFN replaced on
the sparse layers):

    OPENBLAS_CORETYPE= /usr/bin/python3 tests/models/make_moe_models.py     # from the repository root

  tests/models/NAME/config.json, model.safetensors   as save_pretrained writes them
  tests/models/NAME.ref.json                          every stage of every layer on a few prompts

The folders (tests/models/README.md):

  mixtral_moe          mixtral: 4 experts (num_local_experts), top 2 renormalised, both layers
                       sparse (block_sparse_moe.gate, block_sparse_moe.experts.E.w1/w3/w2); GQA 4/2;
                       rope_theta 1e6; an untied lm_head
  qwen3_moe_dense0     qwen3_moe: 5 experts (num_experts) of moe_intermediate_size 6, top 2 without
                       norm_topk_prob; mlp_only_layers [0] makes layer 0 a dense MLP of
                       intermediate_size 20 and layer 1 sparse (mlp.gate, mlp.experts.E.gate_proj/
                       up_proj/down_proj); QK-norm, head_dim 8; use_sliding_window false beside a
                       sliding_window number (ignored); tied
  qwen3_moe_step2      qwen3_moe: num_local_experts (the config's attribute_map name) 3, top 1 with
                       norm_topk_prob, decoder_sparse_step 2: layer 0 dense, layer 1 sparse

transformers has no package on this machine, so the forward is PyTorch
following the modeling files line by line (src/transformers/models/…, at commit
00d4b3d2142cb4ced2f51b90614b5d26bc045015 for mixtral, the per-expert
nn.ModuleList layout the released checkpoints are saved in):

  mixtral/modeling_mixtral.py, MixtralSparseMoeBlock.forward:
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        expert_mask = torch.nn.functional.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in expert_hit:
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
  MixtralBlockSparseTop2MLP.forward: self.w2(self.act_fn(self.w1(x)) * self.w3(x))
  qwen3_moe/modeling_qwen3_moe.py, Qwen3MoeSparseMoeBlock.forward: the same with
        if self.norm_topk_prob: routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
  and its experts Qwen3MoeMLP(intermediate_size=config.moe_intermediate_size): down_proj(act_fn(gate_proj(x)) *
  up_proj(x)); Qwen3MoeDecoderLayer.__init__: a sparse block when (layer_idx not in config.mlp_only_layers) and
  (config.num_experts > 0 and (layer_idx + 1) % config.decoder_sparse_step == 0), else Qwen3MoeMLP of
  intermediate_size.

Everything in float64 (transformers' router softmax is float32). The second
forward works each token out in Python sums: the top-k by sorting, silu by
math.exp, each chosen expert's row. Ties: the script aborts when a row's
top_k-th and next probabilities are within 1e-9 (none are), so torch.topk's
choice is the only one.
"""

import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_models as mm                      # noqa: E402

torch.set_default_dtype(torch.float64)

COMMON = {"attention_dropout": 0.0, "hidden_act": "silu", "initializer_range": 0.02, "num_hidden_layers": 2,
          "use_cache": True, "torch_dtype": "float32", "output_router_logits": False}
MODELS = [
    {
        "name": "mixtral_moe", "dtype": "F32", "seed": 2371,
        "why": "Mixtral: 4 experts, the top 2 renormalised, every layer sparse; GQA 4/2, an untied lm_head",
        "config": dict(COMMON, architectures=["MixtralForCausalLM"], bos_token_id=1, eos_token_id=2,
                       hidden_size=16, intermediate_size=12, max_position_embeddings=64, model_type="mixtral",
                       num_attention_heads=4, num_key_value_heads=2, num_experts_per_tok=2, num_local_experts=4,
                       rms_norm_eps=1e-05, rope_theta=1000000.0, router_aux_loss_coef=0.02, router_jitter_noise=0.0,
                       sliding_window=None, tie_word_embeddings=False, transformers_version="4.56.0",
                       vocab_size=300),
        "prompts": [[1, 17, 42], [1, 5, 6, 7, 8, 9, 250]],
    },
    {
        "name": "qwen3_moe_dense0", "dtype": "F32", "seed": 2372,
        "why": "Qwen3-MoE: 5 experts, top 2 without norm_topk_prob; mlp_only_layers [0] (layer 0 dense), QK-norm",
        "config": dict(COMMON, architectures=["Qwen3MoeForCausalLM"], attention_bias=False, bos_token_id=None,
                       decoder_sparse_step=1, eos_token_id=None, head_dim=8, hidden_size=16, intermediate_size=20,
                       max_position_embeddings=64, max_window_layers=2, mlp_only_layers=[0], model_type="qwen3_moe",
                       moe_intermediate_size=6, norm_topk_prob=False, num_attention_heads=4, num_experts=5,
                       num_experts_per_tok=2, num_key_value_heads=2, rms_norm_eps=1e-06, rope_theta=10000.0,
                       router_aux_loss_coef=0.001, sliding_window=4096, tie_word_embeddings=True,
                       transformers_version="4.51.0", use_sliding_window=False, vocab_size=320),
        "prompts": [[3, 14, 15], [9, 26, 53, 58, 97, 93, 23, 84]],
    },
    {
        "name": "qwen3_moe_step2", "dtype": "F32", "seed": 2373,
        "why": "Qwen3-MoE: num_local_experts 3, top 1 with norm_topk_prob, decoder_sparse_step 2 (layer 1 sparse)",
        "config": dict(COMMON, architectures=["Qwen3MoeForCausalLM"], attention_bias=False, decoder_sparse_step=2,
                       head_dim=4, hidden_size=12, intermediate_size=16, max_position_embeddings=64,
                       model_type="qwen3_moe", moe_intermediate_size=5, norm_topk_prob=True,
                       num_attention_heads=2, num_local_experts=3, num_experts_per_tok=1, num_key_value_heads=2,
                       rms_norm_eps=1e-06, rope_theta=10000.0, tie_word_embeddings=True,
                       transformers_version="4.51.0", vocab_size=260),
        "prompts": [[7, 8], [100, 101, 102, 103, 104, 105]],
    },
]

_resolved, _tensor_list, _mlp, _mlp_second = mm.resolved, mm.tensor_list, mm.llama_mlp, mm.llama_mlp_second


def resolved(cfg):
    """make_models.py's numbers (Mixtral's as LlamaConfig's, Qwen3-MoE's as Qwen3Config's: every size given here),
    and the mixture's: MixtralConfig's num_local_experts 8, num_experts_per_tok 2; Qwen3MoeConfig's num_experts 128
    (or num_local_experts), num_experts_per_tok 8, norm_topk_prob False, moe_intermediate_size 768,
    decoder_sparse_step 1, mlp_only_layers []."""
    mt = cfg["model_type"]
    if mt not in ("mixtral", "qwen3_moe"):
        return _resolved(cfg)
    q = mt == "qwen3_moe"
    c = dict(cfg, model_type="qwen3" if q else "llama")
    if q and "head_dim" not in cfg:
        c["head_dim"] = None                    # getattr(config, "head_dim", hidden_size // num_attention_heads)
    r = _resolved(c)
    E = cfg.get("num_experts", cfg.get("num_local_experts", 128)) if q else cfg.get("num_local_experts", 8)
    r.update(num_experts=E, experts_per_tok=cfg.get("num_experts_per_tok", 8 if q else 2),
             norm_topk_prob=cfg.get("norm_topk_prob", False) if q else True,
             moe_intermediate_size=cfg.get("moe_intermediate_size", 768) if q else r["intermediate_size"])
    step, only = cfg.get("decoder_sparse_step", 1), cfg.get("mlp_only_layers") or []
    r["sparse"] = [i not in only and E > 0 and (i + 1) % step == 0 for i in range(r["num_hidden_layers"])]
    return r


def moe_name(m, i, e, k):
    """Layer i's router (e < 0) or expert e's tensor k (0 gate, 1 up, 2 down), as the checkpoints name them."""
    mx = m["config"]["model_type"] == "mixtral"
    pre = "model.layers.%d.%s" % (i, "block_sparse_moe." if mx else "mlp.")
    if e < 0:
        return pre + "gate.weight"
    return pre + "experts.%d.%s.weight" % (e, (("w1", "w3", "w2") if mx else ("gate_proj", "up_proj", "down_proj"))[k])


def tensor_list(m, r):
    """make_models.py's, a sparse layer's mlp.gate_proj/up_proj/down_proj replaced by the router and the experts."""
    out = []
    D, E, Fe = r["hidden_size"], r.get("num_experts", 0), r.get("moe_intermediate_size", 0)
    for name, shape, kind in _tensor_list(m, r):
        parts = name.split(".")
        if len(parts) == 6 and parts[3] == "mlp" and r.get("sparse") and r["sparse"][int(parts[2])]:
            i = int(parts[2])
            if parts[4] == "gate_proj":
                out.append((moe_name(m, i, -1, 0), (E, D), "qk"))     # router logits of a few units
                for e in range(E):
                    out += [(moe_name(m, i, e, 0), (Fe, D), "w"), (moe_name(m, i, e, 1), (Fe, D), "w"),
                            (moe_name(m, i, e, 2), (D, Fe), "w")]
            continue
        out.append((name, shape, kind))
    return out


def moe_mlp(m, r, W, i, x, lay):
    """MixtralSparseMoeBlock.forward / Qwen3MoeSparseMoeBlock.forward on a sparse layer's rows x."""
    if not (r.get("sparse") and r["sparse"][i]):
        return _mlp(m, r, W, i, x, lay)
    n, D = x.shape
    E, k, Fe = r["num_experts"], r["experts_per_tok"], r["moe_intermediate_size"]
    router_logits = F.linear(x, mm.T(W, moe_name(m, i, -1, 0)))                 # self.gate(hidden_states)
    routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float64)
    probs = routing_weights
    routing_weights, selected_experts = torch.topk(routing_weights, k, dim=-1)
    if r["norm_topk_prob"]:
        routing_weights = routing_weights / routing_weights.sum(dim=-1, keepdim=True)
    final = torch.zeros((n, D), dtype=x.dtype)
    expert_mask = torch.nn.functional.one_hot(selected_experts, num_classes=E).permute(2, 1, 0)
    acts = [[None] * (E * Fe) for _ in range(n)]
    outs = [[None] * (E * D) for _ in range(n)]
    for e in range(E):
        idx, top_x = torch.where(expert_mask[e])
        if len(top_x) == 0:
            continue
        cur = x[top_x]
        act = F.silu(F.linear(cur, mm.T(W, moe_name(m, i, e, 0)))) * F.linear(cur, mm.T(W, moe_name(m, i, e, 1)))
        y = F.linear(act, mm.T(W, moe_name(m, i, e, 2)))
        final.index_add_(0, top_x, y * routing_weights[top_x, idx, None])
        for row, t in enumerate(top_x.tolist()):
            acts[t][e * Fe:(e + 1) * Fe] = act[row].tolist()
            outs[t][e * D:(e + 1) * D] = y[row].tolist()
    weights = [[None] * E for _ in range(n)]
    for t in range(n):
        p = sorted(probs[t].tolist(), reverse=True)
        if k < E and p[k - 1] - p[k] < 1e-9:
            sys.exit("%s layer %d row %d: a near tie at the top_k-th expert" % (m["name"], i, t))
        for j in range(k):
            weights[t][int(selected_experts[t, j])] = float(routing_weights[t, j])
    lay.update(router_logits=mm.mat(router_logits), router_probs=mm.mat(probs), moe_weights=weights,
               expert_act=acts, expert_out=outs)
    return final


def moe_mlp_second(m, r, W, i, x, lin):
    """The same token by token: exp and the top-k by sorting in Python, each chosen expert on its row."""
    if not (r.get("sparse") and r["sparse"][i]):
        return _mlp_second(m, r, W, i, x, lin)
    E, k = r["num_experts"], r["experts_per_tok"]
    rows = []
    for t in range(x.shape[0]):
        xt = x[t:t + 1]
        z = lin(xt, moe_name(m, i, -1, 0)[:-len(".weight")], False)[0].tolist()
        top = max(z)
        p = [math.exp(v - top) for v in z]
        p = [v / sum(p) for v in p]
        chosen = sorted(range(E), key=lambda e: (-p[e], e))[:k]
        s = sum(p[e] for e in chosen) if r["norm_topk_prob"] else 1.0
        acc = torch.zeros_like(xt)
        for e in chosen:
            g = lin(xt, moe_name(m, i, e, 0)[:-len(".weight")], False)
            u = lin(xt, moe_name(m, i, e, 1)[:-len(".weight")], False)
            act = torch.tensor([[v / (1 + math.exp(-v)) for v in g[0].tolist()]]) * u
            acc = acc + (p[e] / s) * lin(act, moe_name(m, i, e, 2)[:-len(".weight")], False)
        rows.append(acc)
    return torch.cat(rows, 0)


def main():
    mm.resolved, mm.tensor_list, mm.llama_mlp, mm.llama_mlp_second = resolved, tensor_list, moe_mlp, moe_mlp_second
    for m in MODELS:
        r = resolved(m["config"])
        folder = os.path.join(HERE, m["name"])
        values, files, entries = mm.write_folder(m, r, folder)
        ref = mm.reference(m, r, values, files, entries)
        # the router really chose: every sparse layer's rows use more than one expert between them
        for rec in ref["prompts"]:
            for i, lay in enumerate(rec["layers"]):
                if r["sparse"][i]:
                    used = {e for row in lay["moe_weights"] for e, w in enumerate(row) if w is not None}
                    if len(used) < 2:
                        sys.exit("%s layer %d: one expert took every token" % (m["name"], i))
        mm.write_reference(m, ref)


if __name__ == "__main__":
    main()
