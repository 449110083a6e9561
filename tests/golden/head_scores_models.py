#!/usr/bin/python3
"""The "head_scores" of `attnviz --model induction --ids IDS --dump` (issue 22 §4: the
head scores of a shipped model agree with a PyTorch computation of the same
definitions), computed from the committed weights (assets/models/induction/
model.safetensors read as float64) with the forward pass of
tests/models/make_models.py (forward_llama) and the scoring that
assets/models/train_sentences.py uses for the sentences model's reference
(attnviz_scores), never from attnviz:
tests/t_head_scores.sh compares attnviz's dump with what this writes, to 1e-9.

    OPENBLAS_CORETYPE= /usr/bin/python3 tests/golden/head_scores_models.py \
        > tests/golden/head_scores_models.tsv

One line a prompt after a "#" line: its ids (comma-separated), a tab, and
{"head_scores": [[{previous_token, first_token, diagonal, induction} a head] a layer]}
as JSON on one line (17 significant digits), what jsoncmp --only-expected-keys
reads against the dump.

The prompts: the three of tests/models/induction.ref.json ("prompt_text", "ids").
The definitions are tests/lens/make_head_scores_model.py's (src/inspect/headscores.h):
previous_token and first_token over rows i >= 1, diagonal over every row,
induction on SplitMix64's random tokens (seed 1) repeated twice, half = 24
(halved while 2 * half exceeds the model's positions), no BOS (the model has none).
(The sentences model's are in tests/models/sentences.ref.json, by its training script.)
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lens"))
sys.path.insert(0, os.path.join(ROOT, "assets", "models"))
import torch  # noqa: E402
import make_models  # noqa: E402  (the references' forward passes)
import make_head_scores_model as hsm  # noqa: E402  (the folder reader)
import train_sentences  # noqa: E402  (attnviz_scores: the definitions, on make_models' forward_llama)

MODEL = "induction"


def main():
    folder = os.path.join(ROOT, "assets", "models", MODEL)
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(ROOT, "tests", "models", MODEL + ".ref.json")) as f:
        ref = json.load(f)
    assert cfg.get("bos_token_id") is None, "the random tokens here have no BOS"
    r = make_models.resolved(cfg)
    torch.set_default_dtype(torch.float64)    # make_models' forward works in float64 (train.py sets float32)
    m = {"name": MODEL, "config": cfg, "prefix": ""}
    W = hsm.read_safetensors(os.path.join(folder, "model.safetensors"))
    half = 24
    while 2 * half > cfg["max_position_embeddings"]:
        half //= 2
    print("# tests/golden/head_scores_models.py: assets/models/%s on the prompts of tests/models/%s.ref.json; "
          "induction on %d random tokens repeated twice" % (MODEL, MODEL, half))
    for p in ref["prompts"]:
        hs = train_sentences.attnviz_scores(m, r, W, p["ids"], cfg["vocab_size"])
        print("%s\t%s" % (",".join(map(str, p["ids"])), json.dumps({"head_scores": hs}, separators=(",", ":"))))

if __name__ == "__main__":
    main()
