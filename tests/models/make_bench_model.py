#!/usr/bin/python3
"""A model folder of SmolLM2-135M's shape with random weights, for `make bench`
(tests/bench.sh, part (i)): attnviz opening and computing a real-sized model.

    /usr/bin/python3 tests/models/make_bench_model.py DIR

config.json as HuggingFaceTB/SmolLM2-135M's (llama: 30 layers, hidden 576,
9 heads, 3 key/value heads, intermediate 1536, vocab 49152, rope_theta
100000, tied embeddings) and model.safetensors in BF16, the tensor names of
the real checkpoint. The numbers are random (normal, std 0.02; the norms 1):
only the sizes matter here. Needs numpy; about 270 MB on disk.
"""
import json
import os
import struct
import sys

import numpy as np

CONFIG = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 0, "eos_token_id": 0, "hidden_act": "silu", "hidden_size": 576,
    "initializer_range": 0.041666666666666664, "intermediate_size": 1536, "is_llama_config": True,
    "max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 9,
    "num_hidden_layers": 30, "num_key_value_heads": 3, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_interleaved": False, "rope_scaling": None, "rope_theta": 100000, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": True, "vocab_size": 49152,
}


def bf16(a):
    """float32 → bfloat16 bytes, round to nearest even."""
    u = np.ascontiguousarray(a, dtype="<f4").view("<u4").astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2").tobytes()


def main():
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    c = CONFIG
    D, F, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd = D // c["num_attention_heads"]
    Q, KV = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    shapes = {"model.embed_tokens.weight": (V, D), "model.norm.weight": (D,)}
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        shapes.update({
            p + "input_layernorm.weight": (D,), p + "post_attention_layernorm.weight": (D,),
            p + "self_attn.q_proj.weight": (Q, D), p + "self_attn.k_proj.weight": (KV, D),
            p + "self_attn.v_proj.weight": (KV, D), p + "self_attn.o_proj.weight": (D, Q),
            p + "mlp.gate_proj.weight": (F, D), p + "mlp.up_proj.weight": (F, D), p + "mlp.down_proj.weight": (D, F),
        })
    rng = np.random.default_rng(135)
    header, blobs, at = {}, [], 0
    for name in sorted(shapes):
        shape = shapes[name]
        a = np.ones(shape, np.float32) if len(shape) == 1 else rng.standard_normal(shape, np.float32) * 0.02
        b = bf16(a)
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
