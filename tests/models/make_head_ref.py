#!/usr/bin/python3
"""The unembedding of four of the small model folders (tests/models), read
from their safetensors files with numpy alone, from the format's
specification (an 8-byte little-endian header length, the JSON header, the
data; "data_offsets" relative to the data), not from attnviz's code:

    /usr/bin/python3 tests/models/make_head_ref.py      # from the repository root

writes tests/models/head/
  NAME.json      {"unembed": [[...]]}, vocab x d_model, as `attnviz --model DIR
                 --dump --dump-weights` must write it (issue 21 §3: the head is
                 kept in the file's dtype and made doubles when read)
  NAME.explain   one line "IDS ROW COL LOGIT": a cell of the logits of the first
                 prompt of NAME.ref.json with two tokens or more (PyTorch's
                 number, from make_models.py), for `explain logits ROW COL`

The four: gpt2 (F32, wte tied), gpt2_prefix_f16 (F16, "transformer." names),
llama_gqa_sharded (F32, lm_head untied, in the second shard), llama_tied_bf16
(BF16, embed_tokens tied). F16 and BF16 numbers are doubles exactly.
"""
import json
import os
import struct

import numpy as np

MODELS = "tests/models"
HEADS = {
    "gpt2": "wte.weight",
    "gpt2_prefix_f16": "transformer.wte.weight",
    "llama_gqa_sharded": "lm_head.weight",
    "llama_tied_bf16": "model.embed_tokens.weight",
}


def tensor(folder, name):
    index = os.path.join(folder, "model.safetensors.index.json")
    file = json.load(open(index))["weight_map"][name] if os.path.exists(index) else "model.safetensors"
    with open(os.path.join(folder, file), "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        entry = json.loads(f.read(n))[name]
        begin, end = entry["data_offsets"]
        f.seek(8 + n + begin)
        raw = f.read(end - begin)
    shape = entry["shape"]
    if entry["dtype"] == "F32":
        x = np.frombuffer(raw, dtype="<f4").astype(np.float64)
    elif entry["dtype"] == "F16":
        x = np.frombuffer(raw, dtype="<f2").astype(np.float64)
    elif entry["dtype"] == "BF16":
        x = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    else:
        raise SystemExit(f"{name}: dtype {entry['dtype']} not expected here")
    return x.reshape(shape)


def main():
    os.makedirs(os.path.join(MODELS, "head"), exist_ok=True)
    for model, name in HEADS.items():
        u = tensor(os.path.join(MODELS, model), name)
        ref = json.load(open(os.path.join(MODELS, model + ".ref.json")))
        p = next(p for p in ref["prompts"] if len(p["ids"]) >= 2)
        row, col = len(p["ids"]) - 1, int(np.argmax(u[:, 0]))
        with open(os.path.join(MODELS, "head", model + ".json"), "w") as f:
            json.dump({"unembed": u.tolist()}, f, separators=(",", ":"))
            f.write("\n")
        with open(os.path.join(MODELS, "head", model + ".explain"), "w") as f:
            f.write("%s %d %d %r\n" % (",".join(map(str, p["ids"])), row, col, p["logits"][row][col]))
        print(model, u.shape, "explain", row, col, p["logits"][row][col])


if __name__ == "__main__":
    main()
