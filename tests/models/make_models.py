#!/usr/bin/python3
"""Small Hugging Face model folders with random weights, and their reference
numbers: every stage of every layer, computed with PyTorch in float64.

    /usr/bin/python3 tests/models/make_models.py      # from the repository root

Needs Debian's python3-torch (1.13) and numpy; not the `transformers` package
(none is installed, none is downloaded). Everything here is written from the
safetensors format's specification and from the `transformers` modeling code
named below, not from attnviz's C code.

What it writes (tests/models/README.md says what each folder exercises):

  tests/models/NAME/config.json             as transformers writes it for the model_type
  tests/models/NAME/model.safetensors       or model-0000K-of-00002.safetensors and
  tests/models/NAME/model.safetensors.index.json   (one sharded model)
  tests/models/gpt2/tokenizer.json          a byte-level BPE tokenizer as GPT-2's is written,
                                            its vocabulary exactly the model's 320 tokens
                                            (256 bytes, 63 merges, <|endoftext|>: write_tokenizer)
  tests/models/NAME.ref.json                the reference: the config's numbers once
                                            transformers' defaults are applied, every
                                            tensor's shape, dtype, file and exact sum, a
                                            few tensors whole, and for each prompt (a
                                            list of token ids) every stage as issue 21 §4
                                            names them (attnviz's --dump of a model)
  tests/models/bad/NAME/...                 folders attnviz must refuse, with
  tests/models/bad/expected.txt             NAME, a tab, the words its message must hold

Numbers are written by json (Python's repr of a float), so they read back
bit for bit. The weights of an F16 or BF16 file enter the reference as the
values the file holds (rounded as torch rounds, then converted to float64).

The reference follows the `transformers` modeling code (huggingface/transformers,
src/transformers/models/...) line by line, in float64 throughout:

  gpt2   modeling_gpt2.py: GPT2Model.forward (inputs_embeds + position_embeds),
         GPT2Block.forward (ln_1, attn, residual, ln_2, mlp, residual),
         GPT2Attention.forward (c_attn(...).split(split_size, dim=2), _split_heads,
         _merge_heads, c_proj) and GPT2Attention._attn (matmul(query, key^T),
         divided by torch.full([], value.size(-1) ** 0.5), torch.where(causal_mask,
         attn_weights, finfo.min), softmax, matmul(attn_weights, value)),
         GPT2MLP.forward (c_fc, act, c_proj); pytorch_utils.py: Conv1D.forward
         (torch.addmm(bias, x, weight): the weight is [in, out]); activations.py:
         NewGELUActivation ("gelu_new": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))));
         GPT2LMHeadModel: lm_head tied to wte.
  llama  modeling_llama.py: LlamaModel.forward (embed_tokens, the layers, norm),
         LlamaRMSNorm.forward, LlamaRotaryEmbedding.forward with
         modeling_rope_utils.py's _compute_default_rope_parameters
         (inv_freq = 1 / base^(arange(0, dim, 2) / dim), emb = cat(freqs, freqs)),
         rotate_half, apply_rotary_pos_emb, repeat_kv, eager_attention_forward
         (matmul(query, key_states^T) * scaling, + causal mask, softmax, matmul with
         value_states, transpose), LlamaAttention.forward (q/k/v_proj, .view(hidden_shape)
         .transpose(1, 2), o_proj; head_dim = config.head_dim or hidden/heads,
         scaling = head_dim ** -0.5), LlamaDecoderLayer.forward, LlamaMLP.forward
         (down_proj(act_fn(gate_proj(x)) * up_proj(x))), LlamaForCausalLM (lm_head, or
         embed_tokens' weight when tie_word_embeddings).
  qwen2  modeling_qwen2.py: as llama; Qwen2Attention's q_proj, k_proj, v_proj have
         bias=True and o_proj bias=False.
  qwen3  modeling_qwen3.py: as llama; Qwen3Attention.forward applies q_norm and
         k_norm (Qwen3RMSNorm over head_dim, "unlike olmo, only on the head dim") to
         q_proj(x).view(hidden_shape) and k_proj(x).view(hidden_shape), before the
         transpose and before apply_rotary_pos_emb; head_dim is the config's own.

Read at these versions of huggingface/transformers: modeling_gpt2.py c44b2d99,
configuration_gpt2.py 1c70522e, modeling_llama.py 5dd4a635, configuration_llama.py
4bdeecec, modeling_qwen2.py 63bb7237, configuration_qwen2.py caa31776,
modeling_qwen3.py 9ee3f431, configuration_qwen3.py 1f3ae2b3.

Where transformers leaves float64 on purpose, this reference does not (the aim
is double precision throughout, as attnviz computes):
  - LlamaRMSNorm / Qwen3RMSNorm upcast to float32 (hidden_states.to(torch.float32))
    and back: here the whole norm is float64;
  - LlamaRotaryEmbedding.forward computes freqs, cos and sin in float32 ("Force
    float32") and inv_freq in float32: here in float64;
  - eager_attention_forward's softmax(..., dtype=torch.float32): here float64.
  - the causal mask is finfo(float64).min added (llama) or put in place
    (gpt2's torch.where): exp of it underflows to exactly 0, so masked weights are
    exactly 0, as attnviz's -inf mask gives; both are checked to agree.

Cross-check (any disagreement above 1e-12 relative aborts): a second forward of
every prompt, head by head and token by token, with each formula written out
(LayerNorm's mean and biased variance, RMS, GELU's tanh form, SiLU as x/(1+e^-x),
RoPE pair by pair as a cos - b sin, a sin + b cos, the softmax as exp(x - max)/sum
over the visible keys only, the kv head of query head h as h // (heads/kv_heads)).
"""

import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
HERE = os.path.dirname(os.path.abspath(__file__))
TOL = 1e-12

# ---------------------------------------------------------------- the models

# Each: name, model_type, dtype of the file(s), the config as transformers
# writes it (config.json's keys), the weights' layout, the prompts.
MODELS = [
    {
        "name": "gpt2",
        "why": "GPT-2 as openai-community/gpt2 ships it: tensor names without the `transformer.` "
               "prefix, the attn.bias (causal tril) and attn.masked_bias buffers in the file, "
               "lm_head tied to wte (no lm_head tensor), F32; n_inner null (4 * n_embd)",
        "dtype": "F32", "seed": 2101, "prefix": "", "buffers": True, "tokenizer": True,
        "config": {
            "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
            "bos_token_id": 319, "embd_pdrop": 0.1, "eos_token_id": 319, "initializer_range": 0.02,
            "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 32, "n_embd": 20, "n_head": 4,
            "n_inner": None, "n_layer": 2, "n_positions": 32, "reorder_and_upcast_attn": False,
            "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
            "summary_activation": None, "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
            "summary_type": "cls_index", "summary_use_proj": True, "torch_dtype": "float32",
            "transformers_version": "4.46.3", "use_cache": True, "vocab_size": 320,
        },
        "prompts": [[11], [5, 17, 242, 3, 99], [318, 0, 7, 7, 7, 51, 200, 13, 88, 301]],
    },
    {
        "name": "gpt2_prefix_f16",
        "why": "GPT-2 saved from GPT2LMHeadModel: every name with the `transformer.` prefix, no buffers, "
               "F16, n_inner given, a config written with only the keys that differ from the defaults "
               "(no bos/eos ids, no layer_norm_epsilon: the defaults apply)",
        "dtype": "F16", "seed": 2102, "prefix": "transformer.", "buffers": False,
        "config": {
            "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 16, "n_head": 4,
            "n_inner": 40, "n_layer": 2, "n_positions": 16, "torch_dtype": "float16",
            "transformers_version": "4.46.3", "vocab_size": 300,
        },
        "prompts": [[1, 2, 3], [299, 150, 42, 42, 7, 0, 64, 128]],
    },
    {
        "name": "llama_gqa_sharded",
        "why": "LLaMA with grouped-query attention (4 heads, 2 key/value heads), an untied lm_head, "
               "F32 weights in two shards with model.safetensors.index.json",
        "dtype": "F32", "seed": 2103, "shards": 2,
        "config": {
            "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
            "bos_token_id": 1, "eos_token_id": 2, "head_dim": 8, "hidden_act": "silu", "hidden_size": 32,
            "initializer_range": 0.02, "intermediate_size": 40, "max_position_embeddings": 64,
            "mlp_bias": False, "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2,
            "num_key_value_heads": 2, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None,
            "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "float32",
            "transformers_version": "4.46.3", "use_cache": True, "vocab_size": 320,
        },
        "prompts": [[1], [1, 15, 300, 22, 5, 77], [1, 319, 2, 9, 9, 100, 101, 102, 250, 3]],
    },
    {
        "name": "llama_tied_bf16",
        "why": "LLaMA with multi-query attention (1 key/value head), tied embeddings (no lm_head "
               "tensor), head_dim 8 given where hidden_size / num_attention_heads is 6 (q_proj "
               "[32, 24], o_proj [24, 32]), rope_theta 500000, BF16",
        "dtype": "BF16", "seed": 2104,
        "config": {
            "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
            "bos_token_id": 0, "eos_token_id": 0, "head_dim": 8, "hidden_act": "silu", "hidden_size": 24,
            "initializer_range": 0.02, "intermediate_size": 40, "max_position_embeddings": 128,
            "mlp_bias": False, "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2,
            "num_key_value_heads": 1, "pretraining_tp": 1, "rms_norm_eps": 1e-06, "rope_scaling": None,
            "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
            "transformers_version": "4.46.3", "use_cache": True, "vocab_size": 320,
        },
        "prompts": [[0, 4, 8, 15, 16, 23, 42], [0, 319, 1, 2, 3, 4, 5, 6]],
    },
    {
        "name": "qwen2_bias_f16",
        "why": "Qwen2 (as Qwen2.5-0.5B): biases on q, k and v (none on o), GQA 4/2, tied embeddings, "
               "use_sliding_window false beside a sliding_window number (ignored, as transformers "
               "ignores it), rope_theta 1000000, F16",
        "dtype": "F16", "seed": 2105,
        "config": {
            "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 400,
            "eos_token_id": 401, "hidden_act": "silu", "hidden_size": 24, "initializer_range": 0.02,
            "intermediate_size": 40, "max_position_embeddings": 256, "max_window_layers": 2,
            "model_type": "qwen2", "num_attention_heads": 4, "num_hidden_layers": 2,
            "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0,
            "sliding_window": 256, "tie_word_embeddings": True, "torch_dtype": "float16",
            "transformers_version": "4.46.3", "use_cache": True, "use_sliding_window": False,
            "vocab_size": 416,
        },
        "prompts": [[400, 12, 13, 14], [5, 6, 7, 8, 9, 10, 401, 415, 0]],
    },
    {
        "name": "qwen3_qknorm_bf16",
        "why": "Qwen3 (as Qwen3-0.6B): q_norm and k_norm over head_dim before RoPE, head_dim 16 where "
               "hidden_size / num_attention_heads is 6 (q_proj [64, 24]), GQA 4/2, tied embeddings, "
               "sliding_window null, BF16",
        "dtype": "BF16", "seed": 2106,
        "config": {
            "architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
            "bos_token_id": 448, "eos_token_id": 449, "head_dim": 16, "hidden_act": "silu",
            "hidden_size": 24, "initializer_range": 0.02, "intermediate_size": 40,
            "max_position_embeddings": 512, "max_window_layers": 2, "model_type": "qwen3",
            "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
            "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None,
            "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
            "use_cache": True, "use_sliding_window": False, "vocab_size": 450,
        },
        "prompts": [[448], [448, 20, 30, 40, 50, 60, 70, 80, 90, 449]],
    },
]


# ------------------------------------------------- the config, as transformers reads it
def resolved(cfg):
    """config.json -> the numbers transformers' config class holds, defaults applied.

    GPT2Config.__init__ (configuration_gpt2.py): vocab_size 50257, n_positions 1024,
    n_embd 768, n_layer 12, n_head 12, n_inner None (GPT2Block: 4 * hidden_size),
    activation_function "gelu_new", layer_norm_epsilon 1e-5, bos/eos 50256;
    tie_word_embeddings is PretrainedConfig's default, True.
    LlamaConfig.__init__ (configuration_llama.py): vocab_size 32000, hidden_size 4096,
    intermediate_size 11008, num_hidden_layers 32, num_attention_heads 32,
    num_key_value_heads None -> num_attention_heads, hidden_act "silu",
    max_position_embeddings 2048, rms_norm_eps 1e-6, bos 1, eos 2,
    tie_word_embeddings False, rope_theta 10000.0, attention_bias False, head_dim None ->
    hidden_size // num_attention_heads.
    Qwen2Config.__init__ (configuration_qwen2.py): vocab_size 151936, hidden_size 4096,
    intermediate_size 22016, num_hidden_layers 32, num_attention_heads 32,
    num_key_value_heads 32, hidden_act "silu", max_position_embeddings 32768,
    rms_norm_eps 1e-6, tie_word_embeddings False, rope_theta 10000.0; bos/eos are
    PretrainedConfig's None; head_dim is read by getattr(config, "head_dim",
    hidden_size // num_attention_heads) in modeling_qwen2.py.
    Qwen3Config.__init__ (configuration_qwen3.py): as Qwen2 with head_dim 128 and
    attention_bias False.
    """
    mt = cfg["model_type"]
    if mt == "gpt2":
        d = cfg.get("n_embd", 768)
        r = {"vocab_size": cfg.get("vocab_size", 50257), "hidden_size": d,
             "num_hidden_layers": cfg.get("n_layer", 12), "num_attention_heads": cfg.get("n_head", 12),
             "max_position_embeddings": cfg.get("n_positions", 1024),
             "intermediate_size": cfg.get("n_inner") or 4 * d,
             "norm_eps": cfg.get("layer_norm_epsilon", 1e-5),
             "hidden_act": cfg.get("activation_function", "gelu_new"),
             "tie_word_embeddings": cfg.get("tie_word_embeddings", True),
             "bos_token_id": cfg.get("bos_token_id", 50256), "eos_token_id": cfg.get("eos_token_id", 50256),
             "rope_theta": 0.0}
        r["num_key_value_heads"] = r["num_attention_heads"]
        r["head_dim"] = d // r["num_attention_heads"]
        r["qkv_bias"] = r["o_bias"] = True
        r["qk_norm"] = False
        return r
    base = {"llama": dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                          num_attention_heads=32, max_position_embeddings=2048, bos_token_id=1, eos_token_id=2),
            "qwen2": dict(vocab_size=151936, hidden_size=4096, intermediate_size=22016, num_hidden_layers=32,
                          num_attention_heads=32, max_position_embeddings=32768, bos_token_id=None,
                          eos_token_id=None),
            "qwen3": dict(vocab_size=151936, hidden_size=4096, intermediate_size=22016, num_hidden_layers=32,
                          num_attention_heads=32, max_position_embeddings=32768, bos_token_id=None,
                          eos_token_id=None)}[mt]
    r = {k: cfg.get(k, v) for k, v in base.items()}
    # num_key_value_heads: LlamaConfig's default None means num_attention_heads; Qwen2Config's and
    # Qwen3Config's default is 32, and an explicit null means num_attention_heads
    kv = cfg.get("num_key_value_heads", None if mt == "llama" else 32)
    r["num_key_value_heads"] = kv if kv is not None else r["num_attention_heads"]
    hd = cfg.get("head_dim", 128 if mt == "qwen3" else None)
    r["head_dim"] = hd if hd is not None else r["hidden_size"] // r["num_attention_heads"]
    r["norm_eps"] = cfg.get("rms_norm_eps", 1e-6)
    r["hidden_act"] = cfg.get("hidden_act", "silu")
    r["tie_word_embeddings"] = cfg.get("tie_word_embeddings", False)
    r["rope_theta"] = float(cfg.get("rope_theta", 10000.0))
    bias = cfg.get("attention_bias", False)
    r["qkv_bias"] = True if mt == "qwen2" else bias
    r["o_bias"] = False if mt == "qwen2" else bias
    r["qk_norm"] = mt == "qwen3"
    return r


# ------------------------------------------------------------- the weights
def tensor_list(m, r):
    """[(name, shape, kind)] in the model's own names; kind: "w" a weight, "ln_w"/"ln_b" a norm's, "b" a bias."""
    D, V, L = r["hidden_size"], r["vocab_size"], r["num_hidden_layers"]
    H, KV, hd, FF = r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"], r["intermediate_size"]
    out = []
    if m["config"]["model_type"] == "gpt2":
        p = m["prefix"]
        P = r["max_position_embeddings"]
        out += [(p + "wte.weight", (V, D), "emb"), (p + "wpe.weight", (P, D), "pos")]
        for i in range(L):
            h = "%sh.%d." % (p, i)
            out += [(h + "ln_1.weight", (D,), "ln_w"), (h + "ln_1.bias", (D,), "ln_b"),
                    (h + "attn.c_attn.weight", (D, 3 * D), "qkv"), (h + "attn.c_attn.bias", (3 * D,), "b"),
                    (h + "attn.c_proj.weight", (D, D), "w"), (h + "attn.c_proj.bias", (D,), "b"),
                    (h + "ln_2.weight", (D,), "ln_w"), (h + "ln_2.bias", (D,), "ln_b"),
                    (h + "mlp.c_fc.weight", (D, FF), "w"), (h + "mlp.c_fc.bias", (FF,), "b"),
                    (h + "mlp.c_proj.weight", (FF, D), "w"), (h + "mlp.c_proj.bias", (D,), "b")]
        out += [(p + "ln_f.weight", (D,), "ln_w"), (p + "ln_f.bias", (D,), "ln_b")]
        return out
    out.append(("model.embed_tokens.weight", (V, D), "emb"))
    for i in range(L):
        h = "model.layers.%d." % i
        out += [(h + "input_layernorm.weight", (D,), "ln_w"),
                (h + "self_attn.q_proj.weight", (H * hd, D), "qk"),
                (h + "self_attn.k_proj.weight", (KV * hd, D), "qk"),
                (h + "self_attn.v_proj.weight", (KV * hd, D), "w"),
                (h + "self_attn.o_proj.weight", (D, H * hd), "w")]
        if r["qkv_bias"]:
            out += [(h + "self_attn.q_proj.bias", (H * hd,), "b"), (h + "self_attn.k_proj.bias", (KV * hd,), "b"),
                    (h + "self_attn.v_proj.bias", (KV * hd,), "b")]
        if r["o_bias"]:
            out.append((h + "self_attn.o_proj.bias", (D,), "b"))
        if r["qk_norm"]:
            out += [(h + "self_attn.q_norm.weight", (hd,), "ln_w"), (h + "self_attn.k_norm.weight", (hd,), "ln_w")]
        out += [(h + "post_attention_layernorm.weight", (D,), "ln_w"),
                (h + "mlp.gate_proj.weight", (FF, D), "w"), (h + "mlp.up_proj.weight", (FF, D), "w"),
                (h + "mlp.down_proj.weight", (D, FF), "w")]
    out.append(("model.norm.weight", (D,), "ln_w"))
    if not r["tie_word_embeddings"]:
        out.append(("lm_head.weight", (V, D), "emb"))
    return out


def random_weights(m, r):
    """name -> float32 array. Scaled so that scores spread (softmax not flat) and logits differ."""
    rng = np.random.default_rng(m["seed"])
    D = r["hidden_size"]
    out = {}
    for name, shape, kind in tensor_list(m, r):
        z = rng.standard_normal(shape)
        if kind == "emb":
            a = z * 0.8
        elif kind == "pos":
            a = z * 0.3
        elif kind == "ln_w":
            a = 1.0 + 0.25 * z
        elif kind in ("ln_b", "b"):
            a = 0.1 * z
        elif kind in ("qkv", "qk"):
            a = z * (1.6 / math.sqrt(D))   # q and k large: scores of a few units
        else:
            a = z / math.sqrt(shape[0] if kind == "w" and m["config"]["model_type"] == "gpt2" else shape[-1])
        out[name] = a.astype(np.float32)
    return out


def stored(a32, dtype):
    """(the file's bytes, the values it holds as float64) of a float32 array in dtype."""
    if dtype == "F32":
        return a32.astype("<f4").tobytes(), a32.astype(np.float64)
    if dtype == "F16":
        h = a32.astype(np.float16)
        return h.astype("<f2").tobytes(), h.astype(np.float64)
    t = torch.from_numpy(a32).to(torch.bfloat16)
    bits = t.view(torch.int16).numpy().astype("<i2")
    # the same rounding written out (nearest, ties to even) agrees with torch's
    u = a32.view(np.uint32).astype(np.uint64)
    mine = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    assert np.array_equal(mine, bits.view(np.uint16)), "bfloat16 rounding"
    return bits.tobytes(), t.to(torch.float64).numpy()


def write_safetensors(path, entries):
    """entries: name -> (dtype, shape, bytes). The header as the safetensors library
    writes it: "__metadata__" {"format": "pt"}, tensors in order of name, the JSON padded
    with spaces to a multiple of 8 bytes."""
    header = {"__metadata__": {"format": "pt"}}
    data = b""
    for name in sorted(entries):
        dtype, shape, blob = entries[name]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def write_folder(m, r, folder):
    """The model's files; returns (name -> float64 values, name -> file)."""
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(m["config"], f, indent=2, sort_keys=True)
        f.write("\n")
    weights = random_weights(m, r)
    values, entries = {}, {}
    for name, a in weights.items():
        blob, v = stored(a, m["dtype"])
        entries[name] = (m["dtype"], a.shape, blob)
        values[name] = v
    if m.get("buffers"):
        # GPT2Attention's buffers as old checkpoints hold them: bias, the causal tril
        # [1, 1, n_positions, n_positions]; masked_bias, the scalar -1e4. Not weights.
        P = r["max_position_embeddings"]
        tril = np.tril(np.ones((P, P), np.float32)).reshape(1, 1, P, P)
        for i in range(r["num_hidden_layers"]):
            h = "%sh.%d.attn." % (m["prefix"], i)
            entries[h + "bias"] = ("F32", tril.shape, tril.astype("<f4").tobytes())
            entries[h + "masked_bias"] = ("F32", (), np.float32(-1e4).astype("<f4").tobytes())
    files = {}
    shards = m.get("shards", 1)
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), entries)
        files = {name: "model.safetensors" for name in entries}
    else:
        # as save_pretrained shards: tensors in order of name, cut by size
        names = sorted(entries)
        total = sum(len(entries[n][2]) for n in names)
        cut, at = [[] for _ in range(shards)], 0
        acc = 0
        for n in names:
            if acc >= total * (at + 1) / shards and at < shards - 1:
                at += 1
            cut[at].append(n)
            acc += len(entries[n][2])
        for k, part in enumerate(cut):
            fname = "model-%05d-of-%05d.safetensors" % (k + 1, shards)
            write_safetensors(os.path.join(folder, fname), {n: entries[n] for n in part})
            files.update({n: fname for n in part})
        index = {"metadata": {"total_size": total}, "weight_map": {n: files[n] for n in names}}
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=2)
            f.write("\n")
    return values, files, entries


# ------------------------------------------------------------ a tokenizer.json for the gpt2 folder
# GPT-2's layout (tests/weights/tokenizers/gpt2 is the real one): ByteLevel pre-tokenizer
# and post-processor, a BPE model over byte-level characters, <|endoftext|> an added
# special token. The vocabulary is exactly vocab_size: the 256 bytes (ids 0-255, in
# bytes_to_unicode's order, as GPT-2's), vocab_size - 257 merges learnt here by plain
# pair counting on TOKENIZER_TEXT (the most frequent pair, the smallest of equals),
# and <|endoftext|> last. What the ids of a text are is tokenizers.js's to say
# (tests/models/make_model_tokens.mjs), not this script's.
TOKENIZER_TEXT = ("The cat sat on the mat. The dog sat on the log. A cat and a dog met on the mat, "
                  "and the cat said: the mat is mine! 12 cats, 3 dogs; the end. "
                  "Attention lets every token look at the tokens before it, weigh them, and take "
                  "what it needs. The weights of a query sum to one; the values are mixed by them. "
                  "Keys and queries meet in a dot product, scaled by the square root of the width. "
                  "I saw a saw that could saw, and the saw I saw was sharper than the saw you saw. "
                  "Numbers: 2025, 2026, 42 and 7; words that repeat: attention, attention, tokens.")

def bytes_to_unicode():
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return bs, [chr(c) for c in cs]

def write_tokenizer(r, folder):
    import re
    bs, cs = bytes_to_unicode()
    b2u = dict(zip(bs, cs))
    vocab = {c: i for i, c in enumerate(cs)}
    # words as GPT-2's regex cuts them (ASCII text: letters, digits, others, spaces)
    words = re.findall(r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+", TOKENIZER_TEXT)
    words = [[b2u[b] for b in w.encode("utf-8")] for w in words]
    merges = []
    while len(vocab) < r["vocab_size"] - 1:
        count = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                count[(a, b)] = count.get((a, b), 0) + 1
        best = min(count, key=lambda p: (-count[p], p))
        merges.append(best)
        vocab[best[0] + best[1]] = len(vocab)
        for k, w in enumerate(words):
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            words[k] = out
    eot = r["vocab_size"] - 1
    vocab["<|endoftext|>"] = eot
    level = {"add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tok = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": dict(type="ByteLevel", **level),
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": ["%s %s" % p for p in merges]},
    }
    assert len(vocab) == r["vocab_size"] and sorted(vocab.values()) == list(range(r["vocab_size"]))
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, indent=2, ensure_ascii=False)
        f.write("\n")


# ------------------------------------------------------------ the forward pass
def T(values, name):
    return torch.from_numpy(np.ascontiguousarray(values[name])).to(torch.float64)


def gelu_new(x):
    """activations.py NewGELUActivation.forward."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def rms_norm(x, weight, eps):
    """LlamaRMSNorm.forward, in float64 throughout (transformers upcasts to float32)."""
    variance = x.pow(2).mean(-1, keepdim=True)
    x = x * torch.rsqrt(variance + eps)
    return weight * x


def rotate_half(x):
    """modeling_llama.py rotate_half."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_cos_sin(n, head_dim, theta):
    """_compute_default_rope_parameters and LlamaRotaryEmbedding.forward, in float64."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).to(torch.float64) / head_dim))
    position_ids = torch.arange(n).to(torch.float64)
    freqs = torch.outer(position_ids, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def repeat_kv(x, n_rep):
    """modeling_llama.py repeat_kv, without the batch: (kv_heads, n, hd) -> (heads, n, hd)."""
    kv, slen, hd = x.shape
    if n_rep == 1:
        return x
    return x[:, None, :, :].expand(kv, n_rep, slen, hd).reshape(kv * n_rep, slen, hd)


def mat(t):
    return [[float(x) for x in row] for row in t.tolist()]


def forward_gpt2(m, r, W, ids):
    """GPT2LMHeadModel on one sequence (batch of one, the batch axis left out)."""
    p = m["prefix"]
    n, D, H = len(ids), r["hidden_size"], r["num_attention_heads"]
    hd = D // H
    eps = r["norm_eps"]
    ids_t = torch.tensor(ids)
    inputs_embeds = T(W, p + "wte.weight")[ids_t]                     # GPT2Model.forward: self.wte(input_ids)
    position_embeds = T(W, p + "wpe.weight")[torch.arange(n)]         # self.wpe(position_ids)
    hidden = inputs_embeds + position_embeds
    rec = {"ids": ids, "X": mat(hidden), "layers": []}
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))            # GPT2Attention's bias buffer, [:n, :n]
    for i in range(r["num_hidden_layers"]):
        h = "%sh.%d." % (p, i)
        lay = {}
        residual = hidden                                              # GPT2Block.forward
        x = F.layer_norm(hidden, (D,), T(W, h + "ln_1.weight"), T(W, h + "ln_1.bias"), eps)
        lay["norm1"] = mat(x)
        # GPT2Attention.forward: Conv1D is torch.addmm(bias, x, weight), weight [in, out]
        qkv = torch.addmm(T(W, h + "attn.c_attn.bias"), x, T(W, h + "attn.c_attn.weight"))
        query, key, value = qkv.split(D, dim=1)
        att = {"Q": mat(query), "K": mat(key), "V": mat(value), "heads": []}
        q = query.view(n, H, hd).permute(1, 0, 2)                     # _split_heads
        k = key.view(n, H, hd).permute(1, 0, 2)
        v = value.view(n, H, hd).permute(1, 0, 2)
        scores = torch.matmul(q, k.transpose(-1, -2))                  # GPT2Attention._attn
        w = scores / torch.full([], v.size(-1) ** 0.5)
        w = torch.where(causal, w, torch.full([], torch.finfo(w.dtype).min))
        w = F.softmax(w, dim=-1)
        out = torch.matmul(w, v)
        for j in range(H):
            att["heads"].append({"kv_head": j, "scores": mat(scores[j]), "weights": mat(w[j]), "output": mat(out[j])})
        concat = out.permute(1, 0, 2).contiguous().view(n, D)          # _merge_heads
        att["concat"] = mat(concat)
        a = torch.addmm(T(W, h + "attn.c_proj.bias"), concat, T(W, h + "attn.c_proj.weight"))
        att["output"] = mat(a)
        lay.update(h=H, kv_heads=H, d_k=hd, d_v=hd, scale_factor=1.0 / (hd ** 0.5))
        lay["attn"] = att
        hidden = a + residual
        lay["residual1"] = mat(hidden)
        residual = hidden
        x = F.layer_norm(hidden, (D,), T(W, h + "ln_2.weight"), T(W, h + "ln_2.bias"), eps)
        lay["norm2"] = mat(x)
        f = torch.addmm(T(W, h + "mlp.c_fc.bias"), x, T(W, h + "mlp.c_fc.weight"))   # GPT2MLP.forward
        lay["ffn_hidden"] = mat(f)
        f = gelu_new(f)
        lay["ffn_act"] = mat(f)
        f = torch.addmm(T(W, h + "mlp.c_proj.bias"), f, T(W, h + "mlp.c_proj.weight"))
        lay["ffn_out"] = mat(f)
        hidden = residual + f
        lay["output"] = mat(hidden)                                   # residual2: the layer's output
        rec["layers"].append(lay)
    hidden = F.layer_norm(hidden, (D,), T(W, p + "ln_f.weight"), T(W, p + "ln_f.bias"), eps)
    rec["final_norm"] = mat(hidden)
    rec["logits"] = mat(F.linear(hidden, T(W, p + "wte.weight")))     # lm_head tied to wte
    return rec


def layer_window(m, r, i):
    """The sliding window W of layer i, 0 for full attention (make_localglobal_models.py replaces this)."""
    return 0


def llama_mlp(m, r, W, i, x, lay):
    """LlamaMLP.forward on layer i's rows x, its stages into lay (make_moe_models.py replaces it)."""
    h = "model.layers.%d." % i
    gate = F.linear(x, T(W, h + "mlp.gate_proj.weight"))
    up = F.linear(x, T(W, h + "mlp.up_proj.weight"))
    lay["ffn_hidden"] = mat(gate)
    lay["ffn_gate"] = mat(up)
    act = F.silu(gate) * up
    lay["ffn_act"] = mat(act)
    return F.linear(act, T(W, h + "mlp.down_proj.weight"))


def llama_mlp_second(m, r, W, i, x, lin):
    """The same, silu written out (second_forward's; make_moe_models.py replaces it)."""
    h = "model.layers.%d." % i
    gte = lin(x, h + "mlp.gate_proj", False)
    up = lin(x, h + "mlp.up_proj", False)
    act = torch.tensor([[z / (1 + math.exp(-z)) for z in row] for row in gte.tolist()]) * up
    return lin(act, h + "mlp.down_proj", False)


def forward_llama(m, r, W, ids):
    """LlamaForCausalLM / Qwen2ForCausalLM / Qwen3ForCausalLM on one sequence."""
    n, D = len(ids), r["hidden_size"]
    H, KV, hd = r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"]
    eps = r["norm_eps"]
    groups = H // KV
    scaling = hd ** -0.5
    hidden = T(W, "model.embed_tokens.weight")[torch.tensor(ids)]    # LlamaModel.forward: embed_tokens
    rec = {"ids": ids, "X": mat(hidden), "layers": []}
    cos, sin = rope_cos_sin(n, hd, r["rope_theta"])                   # self.rotary_emb(hidden_states, position_ids)
    # the causal mask as transformers builds it: finfo.min above the diagonal, added
    mask = torch.triu(torch.full((n, n), torch.finfo(torch.float64).min), diagonal=1)

    def linear(x, name, bias):
        return F.linear(x, T(W, name + ".weight"), T(W, name + ".bias") if bias else None)

    for i in range(r["num_hidden_layers"]):
        h = "model.layers.%d." % i
        lay = {}
        residual = hidden                                              # LlamaDecoderLayer.forward
        x = rms_norm(hidden, T(W, h + "input_layernorm.weight"), eps)
        lay["norm1"] = mat(x)
        # LlamaAttention.forward (Qwen2: bias on q, k, v; Qwen3: q_norm/k_norm on the view)
        q = linear(x, h + "self_attn.q_proj", r["qkv_bias"])
        k = linear(x, h + "self_attn.k_proj", r["qkv_bias"])
        v = linear(x, h + "self_attn.v_proj", r["qkv_bias"])
        att = {"Q": mat(q), "K": mat(k), "V": mat(v)}
        q = q.view(n, -1, hd)                                          # .view(hidden_shape)
        k = k.view(n, -1, hd)
        if r["qk_norm"]:
            q = rms_norm(q, T(W, h + "self_attn.q_norm.weight"), eps)  # Qwen3Attention: self.q_norm(...)
            k = rms_norm(k, T(W, h + "self_attn.k_norm.weight"), eps)
            att["Q_norm"] = mat(q.reshape(n, -1))
            att["K_norm"] = mat(k.reshape(n, -1))
        q = q.transpose(0, 1)                                          # .transpose(1, 2): (heads, n, hd)
        k = k.transpose(0, 1)
        v = v.view(n, -1, hd).transpose(0, 1)
        q = (q * cos) + (rotate_half(q) * sin)                         # apply_rotary_pos_emb
        k = (k * cos) + (rotate_half(k) * sin)
        att["Q_rot"] = mat(q.transpose(0, 1).reshape(n, -1))
        att["K_rot"] = mat(k.transpose(0, 1).reshape(n, -1))
        key_states = repeat_kv(k, groups)                              # eager_attention_forward
        value_states = repeat_kv(v, groups)
        scores = torch.matmul(q, key_states.transpose(1, 2))
        w = scores * scaling
        win = layer_window(m, r, i)
        if win:   # create_sliding_window_causal_mask: finfo.min where j > i or j <= i - W
            w = w + (mask + torch.tril(torch.full((n, n), torch.finfo(torch.float64).min), diagonal=-win))
        else:
            w = w + mask
        w = F.softmax(w, dim=-1)                                       # (float32 in transformers)
        out = torch.matmul(w, value_states)
        att["heads"] = [{"kv_head": j // groups, "scores": mat(scores[j]), "weights": mat(w[j]),
                         "output": mat(out[j])} for j in range(H)]
        concat = out.transpose(0, 1).reshape(n, -1)                    # attn_output.transpose(1, 2).reshape
        att["concat"] = mat(concat)
        a = linear(concat, h + "self_attn.o_proj", r["o_bias"])
        att["output"] = mat(a)
        lay.update(h=H, kv_heads=KV, d_k=hd, d_v=hd, scale_factor=scaling)
        lay["attn"] = att
        hidden = residual + a
        lay["residual1"] = mat(hidden)
        residual = hidden
        x = rms_norm(hidden, T(W, h + "post_attention_layernorm.weight"), eps)
        lay["norm2"] = mat(x)
        f = llama_mlp(m, r, W, i, x, lay)
        lay["ffn_out"] = mat(f)
        hidden = residual + f
        lay["output"] = mat(hidden)                                   # residual2: the layer's output
        rec["layers"].append(lay)
    hidden = rms_norm(hidden, T(W, "model.norm.weight"), eps)
    rec["final_norm"] = mat(hidden)
    head = "model.embed_tokens.weight" if r["tie_word_embeddings"] else "lm_head.weight"
    rec["logits"] = mat(F.linear(hidden, T(W, head)))
    return rec


# ------------------------------------------------------------ the second forward
def second_forward(m, r, W, ids):
    """The same numbers, each formula written out token by token and head by head."""
    gpt2 = m["config"]["model_type"] == "gpt2"
    p = m.get("prefix", "")
    n, D = len(ids), r["hidden_size"]
    H, KV, hd, eps = r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"], r["norm_eps"]

    def row_norm(x, w, b):
        out = torch.empty_like(x)
        for t in range(x.shape[0]):
            if gpt2:
                mu = sum(float(c) for c in x[t]) / x.shape[1]
                var = sum((float(c) - mu) ** 2 for c in x[t]) / x.shape[1]
                out[t] = (x[t] - mu) / math.sqrt(var + eps) * w + b
            else:
                ms = sum(float(c) ** 2 for c in x[t]) / x.shape[1]
                out[t] = x[t] / math.sqrt(ms + eps) * w
        return out

    def lin(x, name, bias, conv1d=False):
        w = T(W, name + ".weight")
        y = x @ (w if conv1d else w.t())
        return y + T(W, name + ".bias") if bias else y

    emb = T(W, p + "wte.weight" if gpt2 else "model.embed_tokens.weight")
    hidden = torch.stack([emb[t] for t in ids])
    if gpt2:
        hidden = hidden + T(W, p + "wpe.weight")[:n]
    got = {"X": hidden, "layers": []}
    for i in range(r["num_hidden_layers"]):
        h = ("%sh.%d." % (p, i)) if gpt2 else "model.layers.%d." % i
        lay = {}
        if gpt2:
            x = row_norm(hidden, T(W, h + "ln_1.weight"), T(W, h + "ln_1.bias"))
            qkv = lin(x, h + "attn.c_attn", True, True)
            q, k, v = qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:]
        else:
            x = row_norm(hidden, T(W, h + "input_layernorm.weight"), None)
            q = lin(x, h + "self_attn.q_proj", r["qkv_bias"])
            k = lin(x, h + "self_attn.k_proj", r["qkv_bias"])
            v = lin(x, h + "self_attn.v_proj", r["qkv_bias"])
            if r["qk_norm"]:
                gq, gk = T(W, h + "self_attn.q_norm.weight"), T(W, h + "self_attn.k_norm.weight")
                q = torch.cat([row_norm(q[:, j * hd:(j + 1) * hd], gq, None) for j in range(H)], 1)
                k = torch.cat([row_norm(k[:, j * hd:(j + 1) * hd], gk, None) for j in range(KV)], 1)
            # RoPE pair by pair: (a, b) = (x_i, x_{i + hd/2}) turned by t * theta^(-2i/hd)
            qr, kr = q.clone(), k.clone()
            for t in range(n):
                for c in range(hd // 2):
                    ang = t * (1.0 / r["rope_theta"] ** (2 * c / hd))
                    cs, sn = math.cos(ang), math.sin(ang)
                    for src, dst, heads in ((q, qr, H), (k, kr, KV)):
                        for j in range(heads):
                            a, b = float(src[t, j * hd + c]), float(src[t, j * hd + c + hd // 2])
                            dst[t, j * hd + c] = a * cs - b * sn
                            dst[t, j * hd + c + hd // 2] = a * sn + b * cs
            lay["Q_rot"], lay["K_rot"] = qr, kr
            q, k = qr, kr
        heads = []
        for j in range(H):
            g = j // (H // KV)
            qj, kj, vj = q[:, j * hd:(j + 1) * hd], k[:, g * hd:(g + 1) * hd], v[:, g * hd:(g + 1) * hd]
            wts = torch.zeros(n, n)
            win = 0 if gpt2 else layer_window(m, r, i)
            for t in range(n):
                lo = max(0, t - win + 1) if win else 0   # the keys u with t - W < u <= t
                s = [float(qj[t] @ kj[u]) / math.sqrt(hd) for u in range(lo, t + 1)]
                mx = max(s)
                e = [math.exp(z - mx) for z in s]
                tot = sum(e)
                for u in range(lo, t + 1):
                    wts[t, u] = e[u - lo] / tot
            heads.append(wts)
            qk = qj @ kj.t()
            lay.setdefault("scores", []).append(qk)
        lay["weights"] = heads
        concat = torch.cat([heads[j] @ v[:, (j // (H // KV)) * hd:(j // (H // KV) + 1) * hd] for j in range(H)], 1)
        if gpt2:
            a = lin(concat, h + "attn.c_proj", True, True)
        else:
            a = lin(concat, h + "self_attn.o_proj", r["o_bias"])
        hidden = hidden + a
        lay["residual1"] = hidden
        if gpt2:
            x = row_norm(hidden, T(W, h + "ln_2.weight"), T(W, h + "ln_2.bias"))
            f = lin(x, h + "mlp.c_fc", True, True)
            f = torch.tensor([[0.5 * z * (1 + math.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))
                               for z in row] for row in f.tolist()])
            f = lin(f, h + "mlp.c_proj", True, True)
        else:
            x = row_norm(hidden, T(W, h + "post_attention_layernorm.weight"), None)
            f = llama_mlp_second(m, r, W, i, x, lin)
        hidden = hidden + f
        lay["output"] = hidden
        got["layers"].append(lay)
    if gpt2:
        hidden = row_norm(hidden, T(W, p + "ln_f.weight"), T(W, p + "ln_f.bias"))
        head = emb
    else:
        hidden = row_norm(hidden, T(W, "model.norm.weight"), None)
        head = emb if r["tie_word_embeddings"] else T(W, "lm_head.weight")
    got["final_norm"] = hidden
    got["logits"] = hidden @ head.t()
    return got


def agree(what, a, b):
    a = torch.tensor(a) if not torch.is_tensor(a) else a
    b = torch.tensor(b) if not torch.is_tensor(b) else b
    if a.shape != b.shape:
        sys.exit("%s: shapes %s and %s" % (what, tuple(a.shape), tuple(b.shape)))
    err = ((a - b).abs() / (1 + b.abs())).max().item() if a.numel() else 0.0
    if not err <= TOL:
        sys.exit("%s: the two forwards differ by %g" % (what, err))


def cross_check(m, r, W, rec):
    got = second_forward(m, r, W, rec["ids"])
    name = "%s %s" % (m["name"], rec["ids"])
    agree(name + " X", got["X"], rec["X"])
    for i, (g, lay) in enumerate(zip(got["layers"], rec["layers"])):
        at = "%s layer %d " % (name, i)
        for key in ("Q_rot", "K_rot"):
            if key in g:
                agree(at + key, g[key], lay["attn"][key])
        for j, hd in enumerate(lay["attn"]["heads"]):
            agree(at + "scores %d" % j, g["scores"][j], hd["scores"])
            agree(at + "weights %d" % j, g["weights"][j], hd["weights"])
            w = torch.tensor(hd["weights"])
            if torch.triu(w, diagonal=1).abs().max().item() != 0.0:
                sys.exit(at + "masked weights are not exactly 0")
        agree(at + "residual1", g["residual1"], lay["residual1"])
        agree(at + "output", g["output"], lay["output"])
    agree(name + " final_norm", got["final_norm"], rec["final_norm"])
    agree(name + " logits", got["logits"], rec["logits"])


# ------------------------------------------------------------ the reference file
def exact_sum(v):
    """A plain left-to-right sum in double, in row-major order: what a C loop gets."""
    s = 0.0
    for x in np.asarray(v, np.float64).ravel().tolist():
        s += x
    return s


def reference(m, r, values, files, entries):
    ref = {"model": m["name"], "model_type": m["config"]["model_type"], "about": m["why"],
           "config": r, "tensors": {}, "whole": {}, "prompts": []}
    for name in sorted(entries):
        dtype, shape, _ = entries[name]
        if name not in values:     # GPT-2's buffers: in the file, not weights
            ref["tensors"][name] = {"dtype": dtype, "shape": list(shape), "file": files[name], "buffer": True}
            continue
        v = values[name].ravel().tolist()
        ref["tensors"][name] = {"dtype": dtype, "shape": list(shape), "file": files[name], "sum": exact_sum(v),
                                "first": v[:3], "last": v[-3:]}
    # a few tensors whole: a norm's weight, a bias when there is one, the first layer's
    # query projection (a matrix: st_to_mat's order), the last embedding row's worth
    pick = [n for n in values if n.endswith(("ln_1.weight", "input_layernorm.weight", "c_attn.bias",
                                             "q_proj.bias", "q_norm.weight"))][:3]
    pick += [n for n in values if n.endswith(("h.0.attn.c_attn.weight", "layers.0.self_attn.q_proj.weight"))]
    for name in pick:
        ref["whole"][name] = values[name].ravel().tolist()
    for ids in m["prompts"]:
        W = values
        rec = (forward_gpt2 if m["config"]["model_type"] == "gpt2" else forward_llama)(m, r, W, ids)
        cross_check(m, r, W, rec)
        ref["prompts"].append(rec)
    return ref


def spread(ref):
    """How peaked the softmax is: the mean over rows of the largest weight (rows with 2+ keys)."""
    tops = []
    for rec in ref["prompts"]:
        for lay in rec["layers"]:
            for hd in lay["attn"]["heads"]:
                tops += [max(row) for t, row in enumerate(hd["weights"]) if t > 0]
    return sum(tops) / len(tops) if tops else 1.0


# ------------------------------------------------------------ bad folders
def rewrite_tensors(folder, edit):
    """model.safetensors of folder read back, edit(name -> (dtype, shape, bytes)) applied, written again."""
    path = os.path.join(folder, "model.safetensors")
    with open(path, "rb") as f:
        raw = f.read()
    hl = struct.unpack("<Q", raw[:8])[0]
    data = raw[8 + hl:]
    entries = {n: (e["dtype"], e["shape"], data[e["data_offsets"][0]:e["data_offsets"][1]])
               for n, e in json.loads(raw[8:8 + hl]).items() if n != "__metadata__"}
    edit(entries)
    write_safetensors(path, entries)


def write_reference(m, ref):
    """NAME.ref.json beside the folder, and a line saying how peaked its softmax is."""
    with open(os.path.join(HERE, m["name"] + ".ref.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("%-20s %s, %d prompts, mean top weight %.2f" % (m["name"], m["dtype"], len(m["prompts"]), spread(ref)),
          file=sys.stderr)


def bad_folders():
    """Folders attnviz must refuse, each from a good one with one thing wrong."""
    bad = os.path.join(HERE, "bad")
    if os.path.isdir(bad):
        shutil.rmtree(bad)
    os.makedirs(bad)
    expected = []

    def case(name, words, src="llama_tied_bf16", edit=None, files=("config.json",), config_text=None):
        """A folder of src's files (a config that is refused needs no weights), the config edited."""
        d = os.path.join(bad, name)
        os.makedirs(d)
        for f in files:
            if os.path.exists(os.path.join(HERE, src, f)):
                shutil.copy(os.path.join(HERE, src, f), os.path.join(d, f))
        if edit is not None:
            with open(os.path.join(HERE, src, "config.json")) as f:
                cfg = json.load(f)
            edit(cfg)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f, indent=2, sort_keys=True)
                f.write("\n")
        if config_text is not None:
            with open(os.path.join(d, "config.json"), "w") as f:
                f.write(config_text)
        expected.append("%s\t%s" % (name, words))

    case("no_config", "cannot read", src="gpt2_prefix_f16", files=("model.safetensors",))
    case("model_type", 'config.json: model_type: "mistral" is not a model attnviz computes',
         edit=lambda c: c.update(model_type="mistral", architectures=["MistralForCausalLM"]))
    case("no_model_type", "config.json: model_type: no model_type",
         edit=lambda c: (c.pop("model_type"), c.update(architectures=["FalconForCausalLM"])))
    # Phi-3's longrope (linear, dynamic, yarn and llama3 are computed since issue 23: make_ropescale_models.py)
    case("rope_scaling", 'config.json: rope_scaling.rope_type: "longrope": attnviz computes the rope_types default, '
                         'linear, dynamic, yarn and llama3',
         edit=lambda c: c.update(rope_scaling={"long_factor": [1.0, 1.0, 1.0, 1.0], "short_factor": [1.0, 1.0, 1.0, 1.0],
                                               "original_max_position_embeddings": 64, "rope_type": "longrope"}))
    case("sliding_window", 'config.json: layer_types[1]: a "sliding_attention" layer needs a window',
         src="qwen2_bias_f16", edit=lambda c: c.update(layer_types=["full_attention", "sliding_attention"]))
    case("sliding_llama", "config.json: use_sliding_window: true: attnviz computes sliding windows of qwen2 and "
         "qwen3 models only", edit=lambda c: c.update(use_sliding_window=True))
    case("layer_types", 'config.json: layer_types[0]: "chunked_attention": attnviz computes "full_attention" and '
         '"sliding_attention" layers', src="qwen2_bias_f16",
         edit=lambda c: c.update(layer_types=["chunked_attention", "full_attention"]))
    case("moe", "config.json: num_experts: 8: attnviz computes the mixtures of experts of mixtral and "
         "qwen3_moe models only",
         src="qwen3_qknorm_bf16", edit=lambda c: c.update(num_experts=8, num_experts_per_tok=2))
    case("hidden_act", 'config.json: hidden_act: "gelu": attnviz computes llama models with "silu"',
         edit=lambda c: c.update(hidden_act="gelu"))
    case("activation", 'config.json: activation_function: "relu": attnviz computes gpt2 models with "gelu_new"',
         src="gpt2", edit=lambda c: c.update(activation_function="relu"))
    case("heads", "config.json: num_key_value_heads: 3 does not divide num_attention_heads (4)",
         edit=lambda c: c.update(num_key_value_heads=3))
    case("size_type", "config.json: hidden_size: expected a size from 1 to",
         edit=lambda c: c.update(hidden_size="24"))
    case("syntax", "config.json:3:", config_text='{\n  "model_type": "llama",\n  "hidden_size": 24,,\n}\n')
    weights = ("config.json", "model.safetensors")
    case("shapes", 'tensor "model.embed_tokens.weight" has shape [320, 24], but config.json\'s sizes '
                   '(vocab_size, hidden_size) make it [320, 32]',
         edit=lambda c: c.update(hidden_size=32), files=weights)
    case("shapes_gpt2", 'tensor "transformer.h.0.attn.c_attn.weight" has shape [16, 64], but config.json\'s '
                        'sizes (n_embd) make it [16, 48]', src="gpt2_prefix_f16", files=weights)
    rewrite_tensors(os.path.join(bad, "shapes_gpt2"), lambda e: e.update(
        {"transformer.h.0.attn.c_attn.weight": ("F16", [16, 64], b"\0" * (16 * 64 * 2))}))
    case("missing_tensor", 'no tensor "model.layers.1.mlp.down_proj.weight", which a llama model with '
                           'config.json\'s settings computes with', files=weights)
    rewrite_tensors(os.path.join(bad, "missing_tensor"), lambda e: e.pop("model.layers.1.mlp.down_proj.weight"))
    case("missing_shard", 'model.safetensors.index.json: weight_map."model.layers.0.input_layernorm.weight": '
                          'cannot read',
         src="llama_gqa_sharded", files=("config.json", "model.safetensors.index.json",
                                         "model-00001-of-00002.safetensors"))
    case("shard_path", '"../../llama_gqa_sharded/model-00001-of-0\u2026" is not a file name in the model\'s folder',
         src="llama_gqa_sharded", files=("config.json", "model.safetensors.index.json"))
    d = os.path.join(bad, "shard_path")
    idx = json.load(open(os.path.join(d, "model.safetensors.index.json")))
    idx["weight_map"]["lm_head.weight"] = "../../llama_gqa_sharded/model-00001-of-00002.safetensors"
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump(idx, f, indent=2)
        f.write("\n")
    case("shard_lies", 'model.safetensors.index.json: weight_map."model.norm.weight": '
                       '"model-00001-of-00002.safetensors" has no tensor "model.norm.weight"',
         src="llama_gqa_sharded", files=("config.json", "model.safetensors.index.json",
                                         "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"))
    d = os.path.join(bad, "shard_lies")
    idx = json.load(open(os.path.join(d, "model.safetensors.index.json")))
    idx["weight_map"]["model.norm.weight"] = "model-00001-of-00002.safetensors"
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump(idx, f, indent=2)
        f.write("\n")
    case("no_weights", "no_weights: no model.safetensors and no model.safetensors.index.json")
    with open(os.path.join(bad, "expected.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(expected) + "\n")


def main():
    for m in MODELS:
        r = resolved(m["config"])
        folder = os.path.join(HERE, m["name"])
        values, files, entries = write_folder(m, r, folder)
        if m.get("tokenizer"):
            write_tokenizer(r, folder)
        write_reference(m, reference(m, r, values, files, entries))
    bad_folders()


if __name__ == "__main__":
    main()
