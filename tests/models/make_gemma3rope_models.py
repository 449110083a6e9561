#!/usr/bin/python3
"""Small Gemma 3 model folders whose RoPE is scaled on the global layers alone,
or given per layer type (issue 23 §2 with §3), and their reference numbers, in
the layout of make_gemma_models.py (whose tensor list, weights and forward
pass this script reuses; its folder writer and reference file are
make_models.py's):

    OPENBLAS_CORETYPE= /usr/bin/python3 tests/models/make_gemma3rope_models.py     # from the repository root

  tests/models/gemma3_rope_scaling/config.json, model.safetensors   the old layout: "rope_scaling" (YaRN)
  tests/models/gemma3_rope_params/config.json, model.safetensors    the new one: "rope_parameters" per layer type
  tests/models/NAME.ref.json                                        every stage of every layer on a few prompts

No `transformers` package is installed here: the RoPE of each layer follows
transformers' models/gemma3 (configuration_gemma3.py, Gemma3TextConfig's
convert_rope_params_to_dict: without rope_parameters, `default_rope_params =
{"sliding_attention": {"rope_type": "default"}, "full_attention": {"rope_type":
"default"}}`, then `if rope_scaling is not None:
self.rope_parameters["full_attention"].update(rope_scaling)`, the full type's
rope_theta defaulting to rope_theta and the sliding type's to
rope_local_base_freq; with rope_parameters, each type's own rope_type, theta
and factors) and modeling_gemma3.py (Gemma3RotaryEmbedding: for each layer
type, `rope_init_fn = ROPE_INIT_FUNCTIONS[rope_type]` on that type's
parameters, `cos = emb.cos() * attention_scaling`; Gemma3Attention takes the
cos and sin of its layer's type). So a sliding layer turns by its own theta,
unscaled in the old layout, and a full layer by rope_theta with the scaling.
inv_freq and attention_scaling per type are make_reference_ropescale.py's
rope_params (modeling_rope_utils.py's _compute_*_parameters, the lines named
there); the rest of the layer is make_gemma_models.py's forward_gemma.

Cross-check (aborts on disagreement): each layer's Q_rot and K_rot again from
its Q_norm and K_norm with make_reference_ropescale.py's rope() (complex
numbers for the pairs) under that layer type's settings.
"""

import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "golden"))
import make_models as mm                      # noqa: E402
import make_gemma_models as mg                # noqa: E402
import make_reference_ropescale as rs         # noqa: E402

torch.set_default_dtype(torch.float64)

BASE = dict(mg.MODELS[1]["config"])           # gemma3_local_global's config: 3 layers, sliding_window_pattern 3
MODELS = [
    {
        "name": "gemma3_rope_scaling", "dtype": "F32", "seed": 2341,
        "why": "Gemma 3, the old layout: rope_scaling (YaRN, factor 8, its attention factor) scales the global "
               "layer alone; the local layers turn by rope_local_base_freq 100 unscaled; rope_theta 1000",
        "config": dict(BASE, rope_theta=1000.0, rope_local_base_freq=100.0, torch_dtype="float32",
                       rope_scaling={"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 16}),
        "prompts": [[2], [2, 11, 12, 13, 14, 15, 16, 17, 18]],
    },
    {
        "name": "gemma3_rope_params", "dtype": "F32", "seed": 2342,
        "why": "Gemma 3, the new layout: rope_parameters per layer type, full_attention linear (factor 4, theta "
               "1000), sliding_attention linear (factor 2, theta 50)",
        "config": dict({k: v for k, v in BASE.items() if k not in ("rope_theta", "rope_scaling", "rope_local_base_freq")},
                       torch_dtype="float32", transformers_version="5.0.0",
                       rope_parameters={"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000.0},
                                        "sliding_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 50.0}}),
        "prompts": [[2], [2, 21, 22, 23, 24, 25, 26]],
    },
]


def rope_per_type(cfg):
    """Gemma3TextConfig.convert_rope_params_to_dict: each layer type's parameters, as lesson-style "rope" objects."""
    rp = cfg.get("rope_parameters")
    if rp is None:
        rp = {"sliding_attention": {"rope_type": "default"}, "full_attention": {"rope_type": "default"}}
        if cfg.get("rope_scaling") is not None:
            rp["full_attention"].update(cfg["rope_scaling"])
    rp["full_attention"].setdefault("rope_theta", cfg.get("rope_theta", 1e6))
    rp["sliding_attention"].setdefault("rope_theta", cfg.get("rope_local_base_freq", 10000.0))
    out = {}
    for kind, p in rp.items():
        rope = {"base": float(p["rope_theta"])}
        if p.get("rope_type", "default") != "default":
            sc = {k: v for k, v in p.items() if k not in ("rope_type", "rope_theta", "partial_rotary_factor")}
            sc["type"] = p["rope_type"]
            sc.setdefault("original_max_position_embeddings", cfg["max_position_embeddings"])
            rope["scaling"] = sc
        out[kind] = rope
    return out


CURRENT = {}


def type_cos_sin(n, head_dim, theta):
    """Gemma3RotaryEmbedding.forward for the layer type whose theta forward_gemma asks for (each type's differs)."""
    kinds = [k for k, rope in CURRENT["types"].items() if rope["base"] == theta]
    assert len(kinds) == 1, "the two layer types need two thetas here"
    inv, af, dim = rs.rope_params(CURRENT["types"][kinds[0]], head_dim, n)
    assert dim == head_dim
    freqs = torch.outer(torch.arange(n, dtype=torch.float64), inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos() * af, emb.sin() * af


def cross_check(m, r, W, rec):
    """Q_rot and K_rot of every layer again with make_reference_ropescale.py's rope(), its layer type's settings."""
    n = len(rec["ids"])
    for i, lay in enumerate(rec["layers"]):
        att, rope = lay["attn"], CURRENT["types"][r["layer_types"][i]]
        for name, heads in (("Q", r["num_attention_heads"]), ("K", r["num_key_value_heads"])):
            again, _, _, _ = rs.rope(torch.tensor(att[name + "_norm"]), heads, r["head_dim"], rope, n, list(range(n)))
            if not torch.allclose(again, torch.tensor(att[name + "_rot"]), rtol=1e-12, atol=1e-12):
                raise SystemExit("%s layer %d: %s_rot disagrees with make_reference_ropescale.py's rope()" % (m["name"], i, name))


def main():
    mm.tensor_list, mm.random_weights, mm.forward_llama, mm.cross_check = (mg.tensor_list, mg.random_weights,
                                                                          mg.forward_gemma, cross_check)
    mm.rope_cos_sin = type_cos_sin
    for m in MODELS:
        r = mg.resolved(m["config"])
        CURRENT["types"] = rope_per_type(json.loads(json.dumps(m["config"])))
        r["rope_theta"] = CURRENT["types"]["full_attention"]["base"]
        r["rope_local_base_freq"] = CURRENT["types"]["sliding_attention"]["base"]
        values, files, entries = mm.write_folder(m, r, os.path.join(HERE, m["name"]))
        mm.write_reference(m, mm.reference(m, r, values, files, entries))


if __name__ == "__main__":
    main()
