#!/usr/bin/python3
"""Train attnviz's `sentences` model: a small LLaMA-style model of short English stories whose
heads a learner can look at (heads that park their weight on <s>, the first token; a head that
leans on the token before).

    /usr/bin/python3 assets/models/train_sentences.py            # from the repository root
    /usr/bin/python3 assets/models/train_sentences.py --rescore  # no training: the saved
                                                                 # weights' reference and heads.json again

How long: STEPS steps of BATCH windows of CTX tokens on one thread, Adam; the seconds it
took on this project's shared 2-core machine are in sentences/heads.json ("training":
"seconds"). TRAIN_STEPS, TRAIN_LR, TRAIN_WD (AdamW's weight decay), TRAIN_QK (the
initial spread of W_q and W_k) and TRAIN_ROOT=/tmp/x make a trial that leaves the
committed files alone.

The text (our own, MIT like the repository; nothing downloaded): story() below makes
short English stories from templates and word lists written in this file. A story
starts with <s> (the BOS token, id 1), brings in one animal, one thing and one place
with "a" ("There was a brown cow. Anna had a cup. Tom went to a park.") and then names
them with "the" ("The cow sat on the cup. Tom gave the cup to Ben."), so the word
after "the" is one the story already has.

The model: model_type "llama", 2 layers of 4 heads (head_dim 16, hidden 64, one
key/value head per query head), RoPE (theta 10000), RMSNorm, tied embeddings, CTX = 32
positions, and attention only, as the induction model (train_induction.py): the MLP
has intermediate_size 1 and every weight of it zero (frozen, never trained), so each
block's MLP adds exactly 0 and everything the model does beyond "this word, then that
word" (the embedding and the unembedding) its heads must do. Trials with a SwiGLU MLP
of 128 (the same data, 2000 steps, several learning rates) left every head flat: the
MLP learned the text and no head had a job.

What formed (heads.json, and the README beside the model): heads in layer 0 that put
about half their weight on <s> on every row: an attention sink (Xiao et al. 2023,
"Efficient Streaming Language Models with Attention Sinks"): <s> is the one key every
row can see, and a head with nothing useful to read at a position parks its weight there.

The tokenizer (tokenizer.json, the Hugging Face tokenizers format; attnviz's C tokenizer
reads it): word-level as a BPE: a Metaspace pre-tokenizer ("▁", prepend_scheme
"always", split) as SentencePiece-style LLaMA tokenizers have, single characters, and
for every word of the word lists the merges that build it left to right ("▁ c",
"▁c a", "▁ca t"), so a known word is one token ("▁cat") and an unknown one falls into
its longest known start and single characters; <unk> (id 0) for a character outside
the alphabet; a TemplateProcessing post-processor puts <s> (id 1) in front of every
text, as LLaMA's tokenizer does.

Head scores, two sets:
  heads.json "text": on TEXT_WINDOWS stories of CTX tokens, the definitions of
      assets/models/train.py (rows i >= 1): previous_token the mean weight on key i - 1,
      first_token (the sink) on key 0, diagonal on key i.
  tests/models/sentences.ref.json, each prompt's "head_scores": attnviz's definitions
      (src/inspect/headscores.h, tests/lens/make_head_scores_model.py): previous_token over
      rows i >= 1, first_token over rows i >= 1 (row 0 sees only key 0), diagonal over every row, induction on 12 random tokens
      repeated twice (SplitMix64 seeded with 1, no BOS; 24 halved to fit 32 positions, as attnviz does), so
      tests/t_sentences.sh compares `attnviz --dump`'s "head_scores" with them to 1e-9, and
      its thresholds catch a retrained model that lost its heads.

What it writes:
  assets/models/sentences/config.json, model.safetensors (F32), tokenizer.json, heads.json
  tests/models/sentences.ref.json   every stage of every layer on the first prompt, X and the
                                    logits of the others, float64 (the reference of
                                    tests/models/make_models.py, slimmed to 1.2 MB) and the head scores
Then the saved weights go through the training forward again (float32) and must give the
reference's logits to 1e-4.

Deterministic: fixed seeds, torch.use_deterministic_algorithms, 1 thread (train.py sets them).
"""

import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train  # noqa: E402  (its Model, its writer and reader of folders, make_models)
sys.path.insert(0, os.path.join(train.ROOT, "tests", "lens"))
import make_head_scores_model as hsm  # noqa: E402  (attnviz's random repeated tokens)

make_models = train.make_models

NAME = "sentences"
CTX = 32
SEED = 2301
STEPS = int(os.environ.get("TRAIN_STEPS", "2000"))
BATCH = 16
LR = float(os.environ.get("TRAIN_LR", "3e-3"))
QK_STD = float(os.environ.get("TRAIN_QK", "0.1"))
WD = float(os.environ.get("TRAIN_WD", "0"))
EVERY = 100
TEXT_WINDOWS = 16
PROMPTS = ["There was a cat. Anna had a mat. The cat sat on the mat.",
           "Tom had a book. Tom gave the book to Ben.", "Mia went to a park. The dog ran in the park."]
OUT = os.path.join(train.OUT_ROOT, "assets", "models")

# ------------------------------------------------------------------ the text
NAMES = ["Anna", "Ben", "Tom", "Mia", "Sam", "Lily", "Max", "Zoe", "Leo", "Emma"]
ANIMALS = ["cat", "dog", "bird", "fox", "cow", "horse", "mouse", "duck", "frog", "sheep"]
THINGS = ["book", "ball", "cup", "hat", "box", "key", "apple", "letter", "map", "lamp", "mat", "chair", "coat"]
PLACES = ["garden", "kitchen", "park", "river", "house", "school", "market", "forest", "city", "room"]
SEES = ["saw", "found", "took", "liked", "painted", "lost", "carried", "opened", "dropped", "wanted"]
DOES = ["sat", "ran", "slept", "sang", "jumped", "waited", "played", "walked", "stayed", "smiled"]
LOOKS = ["big", "small", "red", "green", "old", "new", "happy", "quiet", "blue", "warm", "cold", "brown"]
WHEN = ["Yesterday", "Today", "Later", "Then", "Once", "Soon"]
WHERE = ["in", "near", "under", "on", "behind", "by"]
MOODS = ["happy", "tired", "hungry", "quiet", "cold", "warm"]
GLUE = ["fed", "put", "The", "the", "a", "A", "to", "and", "was", "were", "went", "gave", "said", "that", "it", "It", "with",
        "They", "they", "She", "He", "she", "he", "had", "very", "too", "all", "day", "night", "morning", "in",
        "of", "his", "her", "there", "There", "is", "not", "again", "home", "two", "three", "looked", "at"]


def story(rng, n):
    """<s> and the sentences of one story, n tokens or more (the last sentence cut later). A
    story has one animal, one thing and one place: each comes in once with "a" and is then
    named with "the" ("There was a cat. Anna had a cup. ... The cat sat on the cup."), so
    the word after "the" is always one the story already has: a head that finds it and
    copies it predicts that word. At every other word that head has nothing to copy."""
    c = lambda xs: xs[int(rng.integers(len(xs)))]  # noqa: E731
    animal, thing, place = c(ANIMALS), c(THINGS), c(PLACES)
    intro = ["There was a %s %s." % (c(LOOKS), animal), "%s had a %s." % (c(NAMES), thing),
             "%s went to a %s." % (c(NAMES), place)]
    order = rng.permutation(3)
    ids, text = [1], []
    for k in order:
        text.append(intro[k])
    while sum(len(TOK.encode(t, bos=False)) for t in text) < n:
        a, b = c(NAMES), c(NAMES)
        t = int(rng.integers(10))
        text.append([
            "The %s %s." % (animal, c(DOES)),
            "%s fed the %s." % (a, animal),
            "The %s was %s." % (animal, c(MOODS)),
            "The %s sat on the %s." % (animal, thing),
            "%s gave the %s to %s." % (a, thing, b),
            "The %s was %s." % (thing, c(LOOKS)),
            "%s %s the %s." % (a, c(SEES), thing),
            "%s walked to the %s." % (a, place),
            "%s %s in the %s." % (a, c(DOES), place),
            "%s %s went to the %s." % (c(WHEN), a, place),
        ][t])
    for t in text:
        ids += TOK.encode(t, bos=False)
    return ids, " ".join(text)


def words():
    """Every word the templates can write (what the tokenizer makes one token each)."""
    out = set(GLUE)
    for xs in (NAMES, ANIMALS, THINGS, PLACES, SEES, DOES, LOOKS, WHEN, WHERE, MOODS):
        out.update(xs)
    return sorted(out)


# ------------------------------------------------------------------ the tokenizer
CHARS = [chr(c) for c in range(ord("A"), ord("Z") + 1)] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + \
    [str(d) for d in range(10)] + [".", ",", "?", "!", "'"]


class Tokenizer:
    def __init__(self):
        self.vocab = {"<unk>": 0, "<s>": 1, "\u2581": 2}
        for ch in CHARS:
            self.vocab[ch] = len(self.vocab)
        self.merges = []
        for w in words():
            piece = "\u2581"
            for ch in w:
                if piece + ch not in self.vocab:
                    self.merges.append((piece, ch))
                    self.vocab[piece + ch] = len(self.vocab)
                piece += ch
        self.size = len(self.vocab)

    def encode(self, text, bos=True):
        """Metaspace (always, split), then these merges: the longest known "▁..." start of a
        piece, then its single characters (the merges only ever grow a piece's start)."""
        ids = [1] if bos else []
        for piece in ("\u2581" + text.replace(" ", "\u2581")).split("\u2581")[1:]:
            piece = "\u2581" + piece
            k = len(piece)
            while k > 1 and piece[:k] not in self.vocab:
                k -= 1
            ids.append(self.vocab[piece[:k]])
            ids += [self.vocab.get(ch, 0) for ch in piece[k:]]
        return ids

    def json(self):
        special = lambda i, s: {"id": i, "content": s, "single_word": False, "lstrip": False,  # noqa: E731
                                "rstrip": False, "normalized": False, "special": True}
        return {
            "version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [special(0, "<unk>"), special(1, "<s>")],
            "normalizer": None,
            "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
            "post_processor": {"type": "TemplateProcessing",
                               "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                          {"Sequence": {"id": "A", "type_id": 0}}],
                               "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                        {"Sequence": {"id": "A", "type_id": 0}},
                                        {"Sequence": {"id": "B", "type_id": 1}}],
                               "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
            "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                      "vocab": self.vocab, "merges": ["%s %s" % m for m in self.merges]},
        }


TOK = Tokenizer()


def config(vocab):
    return {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": 1, "eos_token_id": None, "head_dim": 16, "hidden_act": "silu",
        "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 1, "max_position_embeddings": CTX,
        "mlp_bias": False, "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2,
        "num_key_value_heads": 4, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None,
        "rope_theta": 10000.0, "tie_word_embeddings": True, "torch_dtype": "float32",
        "transformers_version": "4.46.3", "use_cache": True, "vocab_size": vocab,
    }


# ------------------------------------------------------------------ the data
def window(rng, tok):
    """One story: <s> and whole sentences, CTX + 1 tokens (the last sentence cut)."""
    return story(rng, CTX + 1)[0][:CTX + 1]


def scores_f32(model, x):
    """Per layer, the best previous-token and the best first-token score (rows >= 1) on x."""
    weights = []
    with torch.no_grad():
        model(x, keep=weights)
    out = []
    for w in weights:
        prev = w.diagonal(offset=-1, dim1=-2, dim2=-1).mean((0, 2))
        first = w[:, :, 1:, 0].mean((0, 2))
        out.append((prev.max().item(), first.max().item()))
    return out


def train_model(model, tok):
    rng = np.random.default_rng(SEED)
    probe = torch.tensor([window(np.random.default_rng(SEED + 1), tok) for _ in range(8)])
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=WD)
    t0, curve = time.time(), []
    for step in range(STEPS):
        lr = LR * min(1.0, (step + 1) / 100) * (0.1 + 0.9 * (1 - step / STEPS))
        for g in opt.param_groups:
            g["lr"] = lr
        x = torch.tensor([window(rng, tok) for _ in range(BATCH)])
        loss = F.cross_entropy(model(x[:, :-1]).reshape(-1, tok.size), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % EVERY == 0 or step == STEPS - 1:
            with torch.no_grad():
                held = F.cross_entropy(model(probe[:, :-1]).reshape(-1, tok.size), probe[:, 1:].reshape(-1)).item()
            sc = scores_f32(model, probe[:, :-1])
            curve.append({"step": step, "train_loss": round(loss.item(), 4), "heldout_loss": round(held, 4),
                          "best_previous_token": [round(p, 4) for p, _ in sc],
                          "best_first_token": [round(f, 4) for _, f in sc]})
            print("  step %5d  loss %.3f  held-out %.3f  prev %s  first %s  %4.0fs" %
                  (step, loss.item(), held, " ".join("%.2f" % p for p, _ in sc),
                   " ".join("%.2f" % f for _, f in sc), time.time() - t0), file=sys.stderr, flush=True)
    return curve, time.time() - t0


# ------------------------------------------------------------------ scoring, the reference
def attnviz_scores(m, r, values, ids, vocab):
    """attnviz's "head_scores" of `--model NAME --ids IDS --dump` (src/inspect/headscores.h) for a
    model without BOS in its random tokens (this one; tests/golden/head_scores_models.py's induction)."""
    half = 24
    while 2 * half > m["config"]["max_position_embeddings"]:
        half //= 2
    rnd, frm = hsm.repeat_ids(half, vocab)
    on_prompt = make_models.forward_llama(m, r, values, ids)
    on_random = make_models.forward_llama(m, r, values, rnd)
    out = []
    for L in range(r["num_hidden_layers"]):
        layer = []
        for h in range(r["num_attention_heads"]):
            w = np.array(on_prompt["layers"][L]["attn"]["heads"][h]["weights"])
            wr = np.array(on_random["layers"][L]["attn"]["heads"][h]["weights"])
            n = w.shape[0]
            ind = [wr[p][rnd.index(rnd[p]) + 1] for p in range(frm, len(rnd)) if rnd.index(rnd[p]) < p]
            layer.append({"previous_token": hsm.mean([w[i][i - 1] for i in range(1, n)]),
                          "first_token": hsm.mean([w[i][0] for i in range(1, n)]),
                          "diagonal": hsm.mean([w[i][i] for i in range(n)]),
                          "induction": hsm.mean(ind)})
        out.append(layer)
    return out


def slim_reference(ref):
    """Every stage of the first prompt (the lessons' prompt); of the others their X, logits and
    head scores: the committed file stays well under 2 MB."""
    for p in ref["prompts"][1:]:
        for k in ("layers", "final_norm"):
            p.pop(k, None)


def finish(cfg, r, saved, tok, training):
    folder = os.path.join(OUT, NAME)

    def edit(ref, m):
        for p in ref["prompts"]:
            p["head_scores"] = attnviz_scores(m, r, saved[0], p["ids"], tok.size)
        slim_reference(ref)

    m = train.write_reference(NAME, cfg, r, saved, tok, PROMPTS,
                              "attnviz's sentences model (2 layers, 4 heads each, hidden 64, RoPE, attention only), "
                              "trained by assets/models/train_sentences.py on English stories it makes: a "
                              "previous-token head and attention sinks on <s>", edit)
    rng = np.random.default_rng(7)
    text = train.mean_scores(m, r, saved[0], [window(rng, tok)[:CTX] for _ in range(TEXT_WINDOWS)])
    every = [(i, j) for i in range(len(text)) for j in range(len(text[i]))]
    best = {k: max([text[i][j][k], "L%dH%d" % (i, j)] for i, j in every)
            for k in ("previous_token", "first_token", "diagonal")}
    heads = {
        "model": NAME,
        "definitions": {
            "previous_token": "mean over query rows i >= 1 of the weight on key i - 1",
            "first_token": "mean over query rows i >= 1 of the weight on key 0 (<s>: the sink)",
            "diagonal": "mean over query rows i >= 1 of the weight on key i"},
        "on_text": "%d windows of %d tokens of the training text (<s> first)" % (TEXT_WINDOWS, CTX),
        "best": best, "text": text, "training": training,
    }
    with open(os.path.join(folder, "heads.json"), "w") as f:
        f.write(train.heads_json(heads))
    for i, lay in enumerate(text):
        for j, sc in enumerate(lay):
            print("  L%dH%d  prev %.3f first %.3f diag %.3f" %
                  (i, j, sc["previous_token"], sc["first_token"], sc["diagonal"]), file=sys.stderr)
    print("  best: %s" % json.dumps(best), file=sys.stderr)


def train_and_log(model):
    """train_model with its log's first line; heads.json's "training"."""
    print("%s: vocabulary %d, %d parameters, %d steps of %d x %d tokens" %
          (NAME, TOK.size, sum(p.numel() for p in model.parameters()), STEPS, BATCH, CTX), file=sys.stderr)
    curve, secs = train_model(model, TOK)
    return {"steps": STEPS, "batch": BATCH, "lr": LR, "schedule": "100 steps of warm-up, then linear to 0.1 lr",
            "optimizer": "AdamW", "weight_decay": WD, "seed": SEED, "context": CTX, "seconds": round(secs),
            "curve": curve}


def main():
    train.attention_only_main(NAME, config(TOK.size), TOK, SEED, train_and_log, finish, qk_std=QK_STD)


if __name__ == "__main__":
    main()
