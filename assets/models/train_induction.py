#!/usr/bin/python3
"""Train attnviz's `induction` model: two layers, attention only, on repeated random tokens.

    /usr/bin/python3 assets/models/train_induction.py           # from the repository root
    /usr/bin/python3 assets/models/train_induction.py --rescore # no training: the saved
                                                                # weights' reference and heads.json again

How long: STEPS = 2000 steps of BATCH = 32 windows of CTX = 64 tokens on one thread:
624 seconds (10.4 minutes) on this project's shared 2-core machine while other jobs
kept it busy (load 8 to 11); the number is in induction/heads.json ("training":
"seconds"). The circuit forms at about step 800 (below), so TRAIN_STEPS=1000 is a
quicker trial (with TRAIN_ROOT=/tmp/x so the committed files stay).

What it printed (every 100 steps; heads.json's "curve" has them all):
  step     0  loss 4.875  repeated half 4.868  prev-token(L0) 0.074  induction(L1) 0.029
  step   600  loss 4.811  repeated half 4.711  prev-token(L0) 0.081  induction(L1) 0.000
  step   700  loss 4.813  repeated half 4.746  prev-token(L0) 0.128  induction(L1) 0.001
  step   800  loss 4.169  repeated half 2.534  prev-token(L0) 0.736  induction(L1) 0.745
  step  1000  loss 3.701  repeated half 1.045  prev-token(L0) 0.873  induction(L1) 0.831
  step  1999  loss 3.572  repeated half 0.417  prev-token(L0) 0.957  induction(L1) 0.866
  induction score above 0.5 first at step 800
For 700 steps nothing: every head flat, the loss at chance (ln 128 = 4.85) on both
halves. Then, within 100 steps, the previous-token head (L0H0) and the induction
heads (L1H0, L1H1) appear together and the loss on the repeated half falls from 4.7
to 2.5, then to 0.4: the phase change of Olsson et al. (their Figure: the "bump").
The first half cannot be predicted (random tokens), so the whole loss stays near 3.5.
The saved model's scores (float64, 16 sequences of 24 random tokens repeated twice):
L0H0 previous-token 0.958 (L0H1 0.210); L1H0 induction 0.881, L1H1 0.882.

The model (issue 22 §2): a LLaMA-style model_type "llama" of 2 layers, 2 heads each
(head_dim 32, hidden 64), RoPE (theta 10000), RMSNorm, tied embeddings, a vocabulary of
128 tokens and 64 positions. Attention only: neither attnviz's loader nor transformers'
LlamaConfig has a block without its MLP, so the MLP is there with intermediate_size 1
and every weight of it zero (gate, up and down_proj): SiLU(0) * 0 = 0 and down_proj = 0,
so each block's MLP adds exactly 0 to the residual stream, and the file stays small.
The MLP and its RMSNorm are frozen (never trained). Why LLaMA-style and not GPT-2's
learned positions: with rotary positions a score depends on how far back a key is, the
same at every position, so "the previous token" is one pattern to learn, not one per
position; the previous-token head forms in the first few hundred steps, and the
induction head (Olsson et al. 2022, "In-context Learning and Induction Heads") builds
on it. It also makes the lesson about a modern model's attention.

The data: windows of CTX = 64 random tokens (all 128 ids, uniform). In half, a span
of 8 to 31 tokens, after 0 or more of them, is followed by the same span again; the other half are several spans of
4 to 16 tokens, each followed by itself, with 0 to 3 random tokens between them.
The loss is on every position; on the first copy of a span nothing better than
chance (ln 128 = 4.85) is possible, on the second an induction head predicts every
token. The log prints, every EVERY steps, the loss, the loss on the repeated half
of a fixed probe (24 + 24 tokens), the best layer-0 previous-token score and the
best layer-1 induction score on that probe; the step where the induction score
first passes 0.5 is reported as "induction_step" (the phase change: the loss on the
repeated half drops at the same time).

Head scores (issue 22 §1; as assets/models/train.py and attnviz compute them):
  previous_token  mean over query rows i >= 1 of the weight on key i - 1
  first_token     mean over query rows i >= 1 of the weight on key 0
  diagonal        mean over query rows i >= 1 of the weight on key i
  induction       on random tokens repeated twice: mean over the second copy's rows of
                  the weight on the key after the first occurrence of the row's token
here all four on INDUCTION_SEQS sequences of 24 random tokens repeated twice (24 is
attnviz's SESSION_INDUCTION_HALF), in float64 from the saved weights.

The tokenizer (tokenizer.json, the Hugging Face tokenizers format): a BPE over 128
tokens with a Metaspace pre-tokenizer (replacement "▁", prepend_scheme "always",
split true), as SentencePiece-style LLaMA tokenizers are: "A B C" is "▁A ▁B ▁C", so a
letter is the same token at the start and after a space. The vocabulary: <unk>, "▁",
the 63 characters A-Z a-z 0-9 "." and, by one merge each ("▁ A"), the 63 "▁A" ... "▁.".
No BOS is added (no post-processor).

What it writes:
  assets/models/induction/config.json, model.safetensors (F32), tokenizer.json
  assets/models/induction/heads.json   the scores, the training curve, the phase change
  tests/models/induction.ref.json      every stage of every layer on PROMPTS, float64,
                                       made by tests/models/make_models.py's reference
                                       (tests/t_trained.sh compares attnviz's --dump to it)
Then the saved weights go through the training forward again (float32) and must give
the reference's logits to 1e-4 (they do to 7.5e-6; logits reach 7.7): what was
trained is what was saved and what the reference computes.

Deterministic: fixed seeds, torch.use_deterministic_algorithms, 1 thread (train.py sets
them); needs Debian's python3-torch and numpy only.
"""

import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train  # noqa: E402  (its Model, its writer and reader of folders, make_models)


NAME = "induction"
VOCAB = 128
CTX = 64
HALF = 24             # attnviz's SESSION_INDUCTION_HALF
INDUCTION_SEQS = 16
SEED = 2222
STEPS = int(os.environ.get("TRAIN_STEPS", "2000"))   # a trial: fewer (with TRAIN_ROOT elsewhere)
BATCH = 32
LR = 1e-3
EVERY = 100
PROMPTS = ["A B C D A B C", "x 3 q . 7 K x 3 q . 7", "The cat sat . The cat"]
OUT = os.path.join(train.OUT_ROOT, "assets", "models")


def config():
    return {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": None, "eos_token_id": None, "head_dim": 32, "hidden_act": "silu",
        "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 1, "max_position_embeddings": CTX,
        "mlp_bias": False, "model_type": "llama", "num_attention_heads": 2, "num_hidden_layers": 2,
        "num_key_value_heads": 2, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None,
        "rope_theta": 10000.0, "tie_word_embeddings": True, "torch_dtype": "float32",
        "transformers_version": "4.46.3", "use_cache": True, "vocab_size": VOCAB,
    }


# ------------------------------------------------------------------ the tokenizer
CHARS = [chr(c) for c in range(ord("A"), ord("Z") + 1)] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + \
    [str(d) for d in range(10)] + ["."]


class Tokenizer:
    def __init__(self):
        self.vocab = {"<unk>": 0, "\u2581": 1}
        for c in CHARS:
            self.vocab[c] = len(self.vocab)
        self.merges = [("\u2581", c) for c in CHARS]
        for a, b in self.merges:
            self.vocab[a + b] = len(self.vocab)
        assert len(self.vocab) == VOCAB

    def encode(self, text):
        """Metaspace (always, split) then BPE: with these merges a piece is "▁X" then single characters."""
        ids = []
        for piece in ("\u2581" + text.replace(" ", "\u2581")).split("\u2581")[1:]:
            piece = "\u2581" + piece
            first = piece[:2] if piece[:2] in self.vocab else piece[:1]
            ids.append(self.vocab[first])
            ids += [self.vocab.get(c, 0) for c in piece[len(first):]]
        return ids

    def json(self):
        return {
            "version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": 0, "content": "<unk>", "single_word": False, "lstrip": False, "rstrip": False,
                              "normalized": False, "special": True}],
            "normalizer": None,
            "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
            "post_processor": None,
            "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": self.vocab, "merges": ["%s %s" % m for m in self.merges]},
        }


# ------------------------------------------------------------------ the data
def window(rng):
    if rng.random() < 0.5:
        # one span of 8 to 31 tokens and its copy, after 0 or more random tokens: the copy's
        # distance back varies, so no head can find it by position alone (rotary positions
        # make "exactly 32 back" easy to learn, and that is not an induction head)
        L = int(rng.integers(8, 32))
        pre = int(rng.integers(0, CTX - 2 * L + 1))
        out = rng.integers(0, VOCAB, CTX)
        out[pre + L:pre + 2 * L] = out[pre:pre + L]
        return out
    out = []
    while len(out) < CTX + 1:
        out += rng.integers(0, VOCAB, int(rng.integers(0, 4))).tolist()
        span = rng.integers(0, VOCAB, int(rng.integers(4, 17))).tolist()
        out += span + span
    return np.array(out[:CTX])


def repeated(seed, n, half):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        span = rng.integers(0, VOCAB, half).tolist()
        out.append(span + span)
    return out


def induction_keys(ids):
    """For each position, the key after the first earlier occurrence of its token, or -1."""
    keys = []
    for p, t in enumerate(ids):
        keys.append(next((q + 1 for q in range(p) if ids[q] == t), -1))
    return keys


def probe_scores(model, seqs):
    """Best L0 previous-token and best L1 induction score (float32, the training forward), and
    the loss on the second copy."""
    weights = []
    with torch.no_grad():
        t = torch.tensor(seqs)
        lg = model(t, keep=weights)
    L = len(seqs[0]) // 2
    prev = weights[0].diagonal(offset=-1, dim1=-2, dim2=-1).mean((0, 2)).max().item()
    ind = []
    for b, ids in enumerate(seqs):
        k = induction_keys(ids)
        ind.append(torch.stack([weights[1][b, :, p, k[p]] for p in range(L, 2 * L) if k[p] >= 0]).mean(0))
    ind = torch.stack(ind).mean(0).max().item()
    second = F.cross_entropy(lg[:, L:-1].reshape(-1, VOCAB), t[:, L + 1:].reshape(-1)).item()
    return prev, ind, second


def train_model(model):
    rng = np.random.default_rng(SEED)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=LR)
    probe = repeated(SEED + 1, 16, HALF)
    t0, curve, jump = time.time(), [], None
    for step in range(STEPS):
        x = torch.from_numpy(np.stack([window(rng) for _ in range(BATCH)]))
        loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, VOCAB), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % EVERY == 0 or step == STEPS - 1:
            prev, ind, second = probe_scores(model, probe)
            if jump is None and ind > 0.5:
                jump = step
            curve.append({"step": step, "train_loss": round(loss.item(), 4), "repeated_half_loss": round(second, 4),
                          "best_previous_token_L0": round(prev, 4), "best_induction_L1": round(ind, 4)})
            print("  step %5d  loss %.3f  repeated half %.3f  prev-token(L0) %.3f  induction(L1) %.3f  %4.0fs" %
                  (step, loss.item(), second, prev, ind, time.time() - t0), file=sys.stderr, flush=True)
    return curve, jump, time.time() - t0


# ------------------------------------------------------------------ scoring, the reference
def finish(cfg, r, saved, tok, training):
    folder = os.path.join(OUT, NAME)
    m = train.write_reference(NAME, cfg, r, saved, tok, PROMPTS,
                              "attnviz's induction model (2 layers, 2 heads each, attention only, RoPE), trained by "
                              "assets/models/train_induction.py on repeated random tokens: a previous-token head in "
                              "layer 0 and an induction head in layer 1")
    rep = train.mean_scores(m, r, saved[0], repeated(8, INDUCTION_SEQS, HALF), induction_keys)
    best = {"previous_token": max([rep[0][j]["previous_token"], "L0H%d" % j] for j in range(len(rep[0]))),
            "induction": max([rep[1][j]["induction"], "L1H%d" % j] for j in range(len(rep[1])))}
    heads = {
        "model": NAME,
        "definitions": {
            "previous_token": "mean over query rows i >= 1 of the weight on key i - 1",
            "first_token": "mean over query rows i >= 1 of the weight on key 0",
            "diagonal": "mean over query rows i >= 1 of the weight on key i",
            "induction": "random tokens repeated twice: mean over the second copy's rows of the weight on the "
                         "key after the first occurrence of the row's token"},
        "on_repeated": "%d sequences of %d random tokens repeated twice" % (INDUCTION_SEQS, HALF),
        "best": best, "repeated": rep, "training": training,
    }
    with open(os.path.join(folder, "heads.json"), "w") as f:
        f.write(train.heads_json(heads))
    for i, lay in enumerate(rep):
        for j, sc in enumerate(lay):
            print("  L%dH%d  prev %.3f first %.3f diag %.3f induction %.3f" %
                  (i, j, sc["previous_token"], sc["first_token"], sc["diagonal"], sc["induction"]), file=sys.stderr)


def train_and_log(model):
    """train_model with its log's first line; heads.json's "training"."""
    print("%s: %d trained parameters, %d steps of %d x %d tokens" %
          (NAME, sum(p.numel() for p in model.parameters() if p.requires_grad), STEPS, BATCH, CTX), file=sys.stderr)
    curve, jump, secs = train_model(model)
    print("induction score above 0.5 first at step %s" % jump, file=sys.stderr)
    return {"steps": STEPS, "batch": BATCH, "lr": LR, "optimizer": "Adam", "seed": SEED, "context": CTX,
            "seconds": round(secs), "induction_step": jump, "curve": curve}


def main():
    train.attention_only_main(NAME, config(), Tokenizer(), SEED, train_and_log, finish)


if __name__ == "__main__":
    main()
