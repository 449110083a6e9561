#!/usr/bin/python3
"""A model folder of SmolLM2-135M's shape with random weights, for `make bench`
(tests/bench.sh, part (i)): attnviz opening and computing a real-sized model.

    /usr/bin/python3 tests/models/make_bench_model.py DIR [smollm2|gpt2|mixtral]

smollm2 (the default): config.json as HuggingFaceTB/SmolLM2-135M's (llama: 30 layers, hidden 576,
9 heads, 3 key/value heads, intermediate 1536, vocab 49152, rope_theta
100000, tied embeddings) and model.safetensors in BF16, the tensor names of
the real checkpoint. The numbers are random (normal, std 0.02; the norms 1):
only the sizes matter here. Needs numpy; about 270 MB on disk.
gpt2: GPT-2 small's shape (openai-community/gpt2: 12 layers, n_embd 768,
12 heads, vocab 50257, Conv1D weights [in, out], the fused c_attn, biases,
wpe), F32 as that checkpoint is: about 500 MB. mixtral: a Mixtral of
SmolLM2's width (8 layers, hidden 576, 9/3 heads, 8 experts of 1536, 2 a
token, vocab 49152), BF16: about 230 MB.
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


GPT2 = {
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "bos_token_id": 50256,
    "eos_token_id": 50256, "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768,
    "n_head": 12, "n_inner": None, "n_layer": 12, "n_positions": 1024, "scale_attn_weights": True,
    "torch_dtype": "float32", "vocab_size": 50257,
}

MIXTRAL = {
    "architectures": ["MixtralForCausalLM"], "hidden_act": "silu", "hidden_size": 576, "intermediate_size": 1536,
    "max_position_embeddings": 8192, "model_type": "mixtral", "num_attention_heads": 9, "num_experts_per_tok": 2,
    "num_hidden_layers": 8, "num_key_value_heads": 3, "num_local_experts": 8, "rms_norm_eps": 1e-05,
    "rope_theta": 100000.0, "sliding_window": None, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "vocab_size": 49152,
}


def llama_shapes(c):
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
        })
        if "num_local_experts" in c:
            shapes[p + "block_sparse_moe.gate.weight"] = (c["num_local_experts"], D)
            for e in range(c["num_local_experts"]):
                q = p + "block_sparse_moe.experts.%d." % e
                shapes.update({q + "w1.weight": (F, D), q + "w3.weight": (F, D), q + "w2.weight": (D, F)})
        else:
            shapes.update({p + "mlp.gate_proj.weight": (F, D), p + "mlp.up_proj.weight": (F, D),
                           p + "mlp.down_proj.weight": (D, F)})
    return shapes


def gpt2_shapes(c):
    D, V, P = c["n_embd"], c["vocab_size"], c["n_positions"]
    shapes = {"wte.weight": (V, D), "wpe.weight": (P, D), "ln_f.weight": (D,), "ln_f.bias": (D,)}
    for i in range(c["n_layer"]):
        p = "h.%d." % i
        shapes.update({
            p + "ln_1.weight": (D,), p + "ln_1.bias": (D,), p + "ln_2.weight": (D,), p + "ln_2.bias": (D,),
            p + "attn.c_attn.weight": (D, 3 * D), p + "attn.c_attn.bias": (3 * D,),
            p + "attn.c_proj.weight": (D, D), p + "attn.c_proj.bias": (D,),
            p + "mlp.c_fc.weight": (D, 4 * D), p + "mlp.c_fc.bias": (4 * D,),
            p + "mlp.c_proj.weight": (4 * D, D), p + "mlp.c_proj.bias": (D,),
        })
    return shapes


def main():
    folder = sys.argv[1]
    kind = sys.argv[2] if len(sys.argv) > 2 else "smollm2"
    os.makedirs(folder, exist_ok=True)
    c = {"smollm2": CONFIG, "gpt2": GPT2, "mixtral": MIXTRAL}[kind]
    shapes = gpt2_shapes(c) if kind == "gpt2" else llama_shapes(c)
    dtype = "F32" if kind == "gpt2" else "BF16"
    rng = np.random.default_rng(135)
    header, blobs, at = {}, [], 0
    for name in sorted(shapes):
        shape = shapes[name]
        a = np.ones(shape, np.float32) if len(shape) == 1 else rng.standard_normal(shape, np.float32) * 0.02
        b = a.astype("<f4").tobytes() if dtype == "F32" else bf16(a)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + len(b)]}
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
