#!/usr/bin/python3
"""Small model folders with local and global layers (issue 23 §3), and
their reference numbers, in the layout of make_models.py (whose folder
writer, weights, tensor list and both forward passes this script reuses):

    /usr/bin/python3 tests/models/make_localglobal_models.py     # from the repository root

  tests/models/NAME/config.json, model.safetensors   as save_pretrained writes them
  tests/models/NAME.ref.json                          every stage of every layer on a few prompts

The folders (tests/models/README.md):

  qwen2_layer_types      qwen2, "layer_types": ["sliding_attention", "full_attention"],
                         "use_sliding_window": true, "sliding_window": 3: layer 0 sees the 3
                         most recent tokens, layer 1 every earlier one; GQA 4/2
  qwen3_window_layers    qwen3 without layer_types: "use_sliding_window": true,
                         "sliding_window": 2, "max_window_layers": 1, so layer 0 is full and
                         layer 1 slides (i >= max_window_layers); QK-norm

Which layer slides follows Qwen2Config.__post_init__ and Qwen3Config's
(transformers, src/transformers/models/qwen2/configuration_qwen2.py and
qwen3/configuration_qwen3.py at commit 008e574391258935f3ecc3035c882e73bbcac419):
        self.sliding_window = self.sliding_window if self.use_sliding_window else None
        if self.layer_types is None:
            self.layer_types = ["sliding_attention"
                if self.sliding_window is not None and i >= self.max_window_layers
                else "full_attention" for i in range(self.num_hidden_layers)]
(defaults: use_sliding_window False, sliding_window 4096, max_window_layers 28), and
modeling_qwen2.py's Qwen2Model.forward (commit 00d4b3d2142cb4ced2f51b90614b5d26bc045015):
causal_mask_mapping = {"full_attention": create_causal_mask(...), "sliding_attention":
create_sliding_window_causal_mask(...)}, each layer given causal_mask_mapping[decoder_layer.attention_type].
The sliding mask is masking_utils.py's sliding_window_overlay on the causal one (commit
00c4411cbe15d4c56d54d3b56d4d171e9c289dac, lines 88-97): kv_idx > q_idx - sliding_window, and
kv_idx <= q_idx; make_models.py's forward_llama adds finfo.min outside it, and its second
forward sums each row's softmax over the keys t - W < u <= t only (layer_window below).
"""

import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_models as mm                      # noqa: E402

torch.set_default_dtype(torch.float64)

COMMON = {"attention_dropout": 0.0, "hidden_act": "silu", "initializer_range": 0.02, "num_hidden_layers": 2,
          "rms_norm_eps": 1e-06, "use_cache": True, "rope_theta": 10000.0, "tie_word_embeddings": True,
          "torch_dtype": "float32"}
MODELS = [
    {
        "name": "qwen2_layer_types", "dtype": "F32", "seed": 2311,
        "why": "Qwen2 with layer_types: a sliding layer (window 3), then a full one",
        "config": dict(COMMON, architectures=["Qwen2ForCausalLM"], bos_token_id=400, eos_token_id=401,
                       hidden_size=24, intermediate_size=40, max_position_embeddings=64, max_window_layers=28,
                       layer_types=["sliding_attention", "full_attention"], model_type="qwen2",
                       num_attention_heads=4, num_key_value_heads=2, sliding_window=3,
                       transformers_version="4.56.0", use_sliding_window=True, vocab_size=416),
        "prompts": [[400, 12], [400, 12, 13, 14, 15, 16, 17, 401]],
    },
    {
        "name": "qwen3_window_layers", "dtype": "F32", "seed": 2312,
        "why": "Qwen3 without layer_types: max_window_layers 1 makes layer 1 slide (window 2), QK-norm",
        "config": dict(COMMON, architectures=["Qwen3ForCausalLM"], attention_bias=False, bos_token_id=448,
                       eos_token_id=449, head_dim=8, hidden_size=24, intermediate_size=40,
                       max_position_embeddings=64, max_window_layers=1, model_type="qwen3",
                       num_attention_heads=4, num_key_value_heads=2, sliding_window=2,
                       transformers_version="4.51.0", use_sliding_window=True, vocab_size=450),
        "prompts": [[448, 20, 30], [448, 20, 30, 40, 50, 60, 70]],
    },
]


def layer_types(cfg):
    """Qwen2Config/Qwen3Config.__post_init__: the given layer_types, else sliding from max_window_layers on."""
    window = cfg.get("sliding_window", 4096) if cfg.get("use_sliding_window", False) else None
    if cfg.get("layer_types") is not None:
        return cfg["layer_types"], window
    return ["sliding_attention" if window is not None and i >= cfg.get("max_window_layers", 28) else "full_attention"
            for i in range(cfg["num_hidden_layers"])], window


def layer_window(m, r, i):
    """Layer i's window W for make_models.py's forward passes (0: full attention)."""
    types, window = layer_types(m["config"])
    return window if types[i] == "sliding_attention" else 0


def main():
    mm.layer_window = layer_window
    for m in MODELS:
        r = mm.resolved(m["config"])
        folder = os.path.join(HERE, m["name"])
        values, files, entries = mm.write_folder(m, r, folder)
        ref = mm.reference(m, r, values, files, entries)
        # every local row sees at most W keys: the window really cut something on the long prompt
        rec = ref["prompts"][-1]
        for i, lay in enumerate(rec["layers"]):
            w = layer_window(m, r, i)
            for hd in lay["attn"]["heads"]:
                seen = max(sum(1 for x in row if x != 0.0) for row in hd["weights"])
                if (w and seen > w) or (not w and seen != len(rec["ids"])):
                    raise SystemExit("%s layer %d: %d keys seen, window %d" % (m["name"], i, seen, w))
        mm.write_reference(m, ref)


if __name__ == "__main__":
    main()
