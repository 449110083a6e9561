#!/usr/bin/python3
"""Train the small models that ship with attnviz, and write them as Hugging Face folders.

    /usr/bin/python3 assets/models/train.py [NAME...]  # from the repository root; one model, or all
    /usr/bin/python3 assets/models/train.py --table    # README.md's table of heads, from heads.json
    /usr/bin/python3 assets/models/train.py --rescore [NAME...]   # no training: the saved weights'
                                                       # reference and heads.json computed again

Each model trains on one thread (so the bytes do not depend on the number of
cores); run two at once on two cores. How long it took is in NAME/heads.json
("training": "seconds"): tiny-gpt2's 6000 steps took about 6 minutes on this
project's shared 2-core machine, whose torch has only the reference BLAS.

Needs Debian's python3-torch (1.13), numpy and git (the corpus is read from the
repository's history at a fixed commit); not `transformers`, `tokenizers` or
`safetensors` (none is installed: the files are written from their formats).

What it writes:

  assets/models/NAME/tokenizer.json   (the same in each folder) a byte-level BPE of
                                      VOCAB tokens trained here on the corpus, in the
                                      Hugging Face tokenizers format, with GPT-2's
                                      ByteLevel pre-tokenizer, post-processor and decoder
                                      exactly as GPT-2's tokenizer.json has them
  assets/models/NAME/config.json      the keys transformers writes for the model_type
  assets/models/NAME/model.safetensors   F32, the real checkpoints' tensor names
  assets/models/NAME/heads.json       every head's scores (issue 22's definitions, below),
                                      computed in float64 on the trained weights
  tests/models/NAME.ref.json          every stage of every layer on two prompts (English,
                                      Chinese), in float64: tests/models/README.md's format,
                                      made by make_models.py's own reference code (imported,
                                      not copied), plus "folder": where the model is

The models (README.md, "Models that ship with attnviz"):

  tiny-gpt2    model_type gpt2: 2 layers, 4 heads, n_embd 64, learned positions (64),
               LayerNorm, gelu_new MLP (256), lm_head tied to wte
  tiny-llama   model_type llama: 2 layers, 4 query heads sharing 2 key/value heads
               (GQA), hidden 64, head_dim 16, RoPE (theta 10000), RMSNorm, SwiGLU (128),
               tied embeddings. Defined, not shipped: not trained yet (`train.py tiny-llama`).

Both train on the same stream: the project's own English and Chinese text
(the corpus below, MIT like the rest of the repository) cut into windows of 64
tokens, 85 in 100 of which are (after a few tokens of text) spans of random
tokens each followed by the same span again, or a pair A B repeated (batches()
says how, and the short windows of the first quarter of the steps). Predicting
the second copy is what an induction head does (a layer-0 head that looks at the
previous token, a layer-1 head whose key reads that, so the query for token A
finds the position after the earlier A). What formed in 6000 steps: previous-token
heads in layer 0; NOT the induction head (see heads.json; README.md says so).

The corpus: README.md, src/README.md, lessons/README.md, lessons/FORMAT.md,
every lesson's English and Chinese text (lessons/*.json) and po/zh_CN.po's
messages and their translations, all as they were at commit CORPUS_COMMIT (read
with `git show`, so the corpus does not change when the files do). Not the
articles of /work/shared/seeds/: they are copies of Chinese blog posts with no
licence (one says "本文来自网络 ... 如若转载,请注明出处"), which may not be shipped.

Head scores (issue 22 §1), each in [0, 1], from the float64 attention weights:
  previous_token  mean over query rows i >= 1 of the weight on key i - 1
  first_token     mean over query rows i >= 1 of the weight on key 0 (the sink)
  diagonal        mean over query rows i >= 1 of the weight on key i (itself)
  induction       on random tokens r_0..r_{L-1} repeated twice (2L positions): mean over
                  the second copy's rows L + j (j = 0..L-1) of the weight on key j + 1,
                  the token after the first occurrence of r_j
The first three are averaged over TEXT_WINDOWS windows of the corpus (64 tokens
each) and, apart, over the repeated random sequences; induction over
INDUCTION_SEQS sequences with L = 20.

Deterministic: fixed seeds, torch.use_deterministic_algorithms, 1 thread.
The same machine and the same torch give the same bytes; another CPU or BLAS
may round differently during training (the reference numbers are computed from
the weights as saved, so they always match the committed files).
"""

import json
import math
import os
import struct
import subprocess
import sys
import time
import unicodedata

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import make_models  # noqa: E402  (its reference forward, its safetensors writer)

torch.set_default_dtype(torch.float32)   # make_models sets float64 for its own use; training is float32
torch.set_num_threads(int(os.environ.get("TRAIN_THREADS", "1")))      # the same bytes whatever the machine's cores (run models side by side)
torch.use_deterministic_algorithms(True)

CORPUS_COMMIT = "fac887220ed183dd97d3b35566187c706051d326"
CORPUS_FILES = ["README.md", "src/README.md", "lessons/README.md", "lessons/FORMAT.md", "po/zh_CN.po"]
VOCAB = 1024          # 256 bytes + merges + <|endoftext|>
EOT = "<|endoftext|>"
CTX = 64              # training window; n_positions
SHORT = 24            # the curriculum's short windows
TEXT_WINDOWS = 16
INDUCTION_SEQS = 16
INDUCTION_LEN = 20
# TRAIN_SET: a trial's settings, key=number,... over MODELS' keys (steps, lr, batch, repeated,
# short, qk_std, span_lo/span_hi: the random spans' lengths, pairs: the share of A B A B spans,
# every: steps between two points of the curve); TRAIN_THREADS: torch's threads (default 1)
# TRAIN_ROOT: write assets/models/NAME and tests/models/NAME.ref.json under another folder
# (a trial run beside the committed files); TRAIN_STEPS: another number of steps (a trial)
OUT_ROOT = os.environ.get("TRAIN_ROOT", ROOT)
OUT = os.path.join(OUT_ROOT, "assets", "models")
CHECK = os.environ.get("TOKENIZER_CHECK", "/tmp/attnviz-tokenizer-check.json")


# ------------------------------------------------------------------ the corpus
def git_show(path):
    return subprocess.run(["git", "-C", ROOT, "show", "%s:%s" % (CORPUS_COMMIT, path)], check=True,
                          capture_output=True).stdout.decode("utf-8")


def lesson_text(node, out):
    """Every English and Chinese string of a lesson, in document order."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("en", "zh") and isinstance(v, str):
                out.append(v)
            else:
                lesson_text(v, out)
    elif isinstance(node, list):
        for v in node:
            lesson_text(v, out)


def po_text(text):
    """msgid and msgstr strings of a .po file, the header left out."""
    out, cur = [], None
    for line in text.split("\n"):
        if line.startswith(("msgid ", "msgstr ")):
            if cur:
                out.append(cur)
            cur = json.loads(line.split(" ", 1)[1])
        elif line.startswith('"') and cur is not None:
            cur += json.loads(line)
        else:
            if cur:
                out.append(cur)
            cur = None
    if cur:
        out.append(cur)
    return [s for s in out if not s.startswith("Project-Id-Version")]


def corpus_documents():
    names = subprocess.run(["git", "-C", ROOT, "ls-tree", "--name-only", CORPUS_COMMIT, "lessons/"], check=True,
                           capture_output=True).stdout.decode().split()
    docs = []
    for path in CORPUS_FILES:
        text = git_show(path)
        if path.endswith(".po"):
            strings = po_text(text)
            docs += ["\n".join(strings[i:i + 40]) for i in range(0, len(strings), 40)]
        else:
            docs.append(text)
    for path in sorted(n for n in names if n.endswith(".json")):
        strings = []
        lesson_text(json.loads(git_show(path)), strings)
        docs.append("\n".join(strings))
    return docs


# ------------------------------------------------------------------ the tokenizer
def bytes_to_unicode():
    """openai/gpt-2 encoder.py bytes_to_unicode: byte -> printable character, in GPT-2's order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return bs, {b: chr(c) for b, c in zip(bs, cs)}


BYTE_ORDER, B2U = bytes_to_unicode()
# Unicode White_Space (what \s is in the tokenizers library's regex, and in tokenizers.js)
WHITE = set("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | {chr(c) for c in range(0x2000, 0x200B)}


def _kind(ch):
    if ch in WHITE:
        return "s"
    c = unicodedata.category(ch)
    return "L" if c[0] == "L" else "N" if c[0] == "N" else "o"


def pretokenize(text):
    """GPT-2's pattern, 's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+,
    written out (Debian's python3 has no `regex` module for \\p{L})."""
    out, i, n = [], 0, len(text)
    kinds = [_kind(c) for c in text]
    while i < n:
        if text[i] == "'":
            for c in ("s", "t", "re", "ve", "m", "ll", "d"):
                if text.startswith(c, i + 1):
                    out.append(text[i:i + 1 + len(c)])
                    i += 1 + len(c)
                    break
            else:
                c = None
            if c is not None:
                continue
        j = i + 1 if text[i] == " " and i + 1 < n and kinds[i + 1] != "s" else i
        if kinds[j] != "s":
            k, want = j, kinds[j]
            while k < n and kinds[k] == want:
                k += 1
            out.append(text[i:k])
            i = k
            continue
        k = i
        while k < n and kinds[k] == "s":
            k += 1
        if k < n and k - i >= 2:
            k -= 1      # \s+(?!\S): leave the last one to the word after it
        elif k < n:
            k = i + 1   # \s+: the one white space before a word that did not take it
        out.append(text[i:k])
        i = k
    return out


def byte_level(word):
    return "".join(B2U[b] for b in word.encode("utf-8"))


def train_bpe(docs, vocab_size):
    """Plain BPE on the byte-level pieces: the most frequent adjacent pair (ties: the smallest
    pair as strings) is merged, until the vocabulary (256 bytes, the merges' results,
    <|endoftext|>) holds vocab_size tokens."""
    counts = {}
    for d in docs:
        for w in pretokenize(d):
            k = byte_level(w)
            counts[k] = counts.get(k, 0) + 1
    words = [list(w) for w in counts]
    freq = list(counts.values())
    pairs, where = {}, {}
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pairs[(a, b)] = pairs.get((a, b), 0) + freq[i]
            where.setdefault((a, b), set()).add(i)
    vocab = [B2U[b] for b in BYTE_ORDER]
    have = set(vocab)
    merges = []
    while len(vocab) < vocab_size - 1 and pairs:
        top = max(pairs.values())
        if top < 2:
            break
        a, b = min(p for p, c in pairs.items() if c == top)
        merges.append((a, b))
        if a + b not in have:
            have.add(a + b)
            vocab.append(a + b)
        for i in sorted(where.pop((a, b), ())):
            w = words[i]
            for x, y in zip(w, w[1:]):
                pairs[(x, y)] -= freq[i]
                if pairs[(x, y)] == 0:
                    del pairs[(x, y)]
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(a + b)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[i] = out
            for x, y in zip(out, out[1:]):
                pairs[(x, y)] = pairs.get((x, y), 0) + freq[i]
                where.setdefault((x, y), set()).add(i)
        pairs.pop((a, b), None)
    vocab.append(EOT)
    return {t: i for i, t in enumerate(vocab)}, merges


class Tokenizer:
    """GPT-2's encoder.py bpe(): in each piece, merge the pair of lowest rank until none is left."""

    def __init__(self, vocab, merges):
        self.vocab, self.merges = vocab, merges
        self.rank = {m: i for i, m in enumerate(merges)}
        self.cache = {}

    def bpe(self, piece):
        if piece in self.cache:
            return self.cache[piece]
        w = list(piece)
        while len(w) > 1:
            best = min(range(len(w) - 1), key=lambda j: self.rank.get((w[j], w[j + 1]), math.inf))
            pair = (w[best], w[best + 1])
            if pair not in self.rank:
                break
            out, j = [], 0
            while j < len(w):
                if j + 1 < len(w) and (w[j], w[j + 1]) == pair:
                    out.append(w[j] + w[j + 1])
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            w = out
        ids = [self.vocab[t] for t in w]
        self.cache[piece] = ids
        return ids

    def encode(self, text):
        ids = []
        for part_i, part in enumerate(text.split(EOT)):
            if part_i:
                ids.append(self.vocab[EOT])
            for w in pretokenize(part):
                ids += self.bpe(byte_level(w))
        return ids

    def json(self):
        """tokenizer.json as GPT-2's is written (openai-community/gpt2), with this vocabulary."""
        return {
            "version": "1.0", "truncation": None, "padding": None,
            "added_tokens": [{"id": self.vocab[EOT], "content": EOT, "single_word": False, "lstrip": False,
                              "rstrip": False, "normalized": True, "special": True}],
            "normalizer": None,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                              "use_regex": True},
            "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                               "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                      "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                      "vocab": self.vocab, "merges": ["%s %s" % m for m in self.merges]},
        }


# ------------------------------------------------------------------ the models
def gpt2_config():
    return {
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.0,
        "bos_token_id": VOCAB - 1, "embd_pdrop": 0.0, "eos_token_id": VOCAB - 1, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": CTX, "n_embd": 64, "n_head": 4,
        "n_inner": None, "n_layer": 2, "n_positions": CTX, "reorder_and_upcast_attn": False,
        "resid_pdrop": 0.0, "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
        "summary_activation": None, "summary_first_dropout": 0.0, "summary_proj_to_labels": True,
        "summary_type": "cls_index", "summary_use_proj": True, "torch_dtype": "float32",
        "transformers_version": "4.46.3", "use_cache": True, "vocab_size": VOCAB,
    }


def llama_config():
    return {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": VOCAB - 1, "eos_token_id": VOCAB - 1, "head_dim": 16, "hidden_act": "silu",
        "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 128, "max_position_embeddings": CTX,
        "mlp_bias": False, "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2,
        "num_key_value_heads": 2, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None,
        "rope_theta": 10000.0, "tie_word_embeddings": True, "torch_dtype": "float32",
        "transformers_version": "4.46.3", "use_cache": True, "vocab_size": VOCAB,
    }


def mm(x, w):
    """x @ w.T for x (..., in) and w (out, in), computed as a 1x1 convolution by oneDNN: Debian's
    torch has only the reference BLAS, whose matrix product is several times slower (the
    numbers are the same to float32 rounding)."""
    shape = x.shape
    y = torch.mkldnn_convolution(x.reshape(-1, shape[-1]).t().unsqueeze(0), w.unsqueeze(-1), None, [0], [1], [1], 1)
    return y.squeeze(0).t().reshape(*shape[:-1], w.shape[0])


class Model(torch.nn.Module):
    """The training forward (float32, batched), on parameters named as the checkpoint names them.
    gpt2: Conv1D weights [in, out]; llama: nn.Linear weights [out, in]."""

    def __init__(self, kind, r, seed, qk_std=0.02):
        super().__init__()
        self.kind, self.r = kind, r
        g = torch.Generator().manual_seed(seed)
        m = {"config": {"model_type": kind}, "prefix": ""}
        self.names = []
        L = r["num_hidden_layers"]
        for name, shape, k in make_models.tensor_list(m, r):
            if k in ("ln_w",):
                t = torch.ones(shape)
            elif k == "pos":
                # learned positions, started from the sinusoids of "Attention Is All You Need"
                # (scaled to the size of a token's row): a position's neighbours are easy to
                # find from the start, so the previous-token head forms sooner
                pos = torch.arange(shape[0]).float()[:, None]
                freq = 10000.0 ** (-torch.arange(0, shape[1], 2).float() / shape[1])
                t = torch.zeros(shape)
                t[:, 0::2], t[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
                t *= 0.03
            elif k in ("ln_b", "b"):
                t = torch.zeros(shape)
            else:
                std = 0.02 / math.sqrt(2 * L) if name.endswith(("c_proj.weight", "o_proj.weight", "down_proj.weight")) \
                    else qk_std if k in ("qkv", "qk") else 0.02
                t = torch.randn(shape, generator=g) * std
            self.register_parameter(name.replace(".", "__"), torch.nn.Parameter(t))
            self.names.append(name)

    def p(self, name):
        return getattr(self, name.replace(".", "__"))

    def forward(self, ids, keep=None):
        r, (B, T) = self.r, ids.shape
        D, H, KV, hd = r["hidden_size"], r["num_attention_heads"], r["num_key_value_heads"], r["head_dim"]
        eps = r["norm_eps"]
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        if self.kind == "gpt2":
            x = self.p("wte.weight")[ids] + self.p("wpe.weight")[:T]
        else:
            x = self.p("model.embed_tokens.weight")[ids]
            inv = 1.0 / (r["rope_theta"] ** (torch.arange(0, hd, 2).float() / hd))
            fr = torch.outer(torch.arange(T).float(), inv)
            emb = torch.cat((fr, fr), -1)
            cos, sin = emb.cos(), emb.sin()

        def rms(v, w):
            return w * v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + eps)

        def rot(v):
            return torch.cat((-v[..., hd // 2:], v[..., :hd // 2]), -1)

        for i in range(r["num_hidden_layers"]):
            if self.kind == "gpt2":
                h = "h.%d." % i
                a = F.layer_norm(x, (D,), self.p(h + "ln_1.weight"), self.p(h + "ln_1.bias"), eps)
                q, k, v = (mm(a, self.p(h + "attn.c_attn.weight").t()) + self.p(h + "attn.c_attn.bias")).split(D, -1)
                q, k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in (q, k, v))
            else:
                h = "model.layers.%d." % i
                a = rms(x, self.p(h + "input_layernorm.weight"))
                q = mm(a, self.p(h + "self_attn.q_proj.weight")).view(B, T, H, hd).transpose(1, 2)
                k = mm(a, self.p(h + "self_attn.k_proj.weight")).view(B, T, KV, hd).transpose(1, 2)
                v = mm(a, self.p(h + "self_attn.v_proj.weight")).view(B, T, KV, hd).transpose(1, 2)
                q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
                k, v = k.repeat_interleave(H // KV, 1), v.repeat_interleave(H // KV, 1)
            s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
            w = s.masked_fill(~mask, float("-inf")).softmax(-1)
            if keep is not None:
                keep.append(w)
            o = (w @ v).transpose(1, 2).reshape(B, T, H * hd)
            if self.kind == "gpt2":
                x = x + mm(o, self.p(h + "attn.c_proj.weight").t()) + self.p(h + "attn.c_proj.bias")
                a = F.layer_norm(x, (D,), self.p(h + "ln_2.weight"), self.p(h + "ln_2.bias"), eps)
                f = make_models.gelu_new(mm(a, self.p(h + "mlp.c_fc.weight").t()) + self.p(h + "mlp.c_fc.bias"))
                x = x + mm(f, self.p(h + "mlp.c_proj.weight").t()) + self.p(h + "mlp.c_proj.bias")
            else:
                x = x + mm(o, self.p(h + "self_attn.o_proj.weight"))
                a = rms(x, self.p(h + "post_attention_layernorm.weight"))
                f = F.silu(mm(a, self.p(h + "mlp.gate_proj.weight"))) * mm(a, self.p(h + "mlp.up_proj.weight"))
                x = x + mm(f, self.p(h + "mlp.down_proj.weight"))
        if self.kind == "gpt2":
            x = F.layer_norm(x, (D,), self.p("ln_f.weight"), self.p("ln_f.bias"), eps)
            return mm(x, self.p("wte.weight"))
        x = rms(x, self.p("model.norm.weight"))
        return mm(x, self.p("model.embed_tokens.weight"))


# ------------------------------------------------------------------ the data
def batches(stream, rng, steps, batch, repeated, short_steps=0, span=(4, 17), pairs=0.3):
    """Windows of CTX + 1 tokens of the stream. In a share `repeated` of them, after the first 0 to 8
    tokens of text, the rest is spans of L random tokens (4 <= L <= 16, drawn from every
    token but <|endoftext|>), each followed by itself again: about half of such a window is a
    second copy, where only an induction head predicts well. The first short_steps steps take
    twice as many windows of SHORT tokens instead, with spans of 2 to 8 tokens. Three spans in
    ten (half in the short windows) are instead a pair A B repeated 2 to 4 times (A B A B ...),
    where the token to predict is the one before the current token: a previous-token head
    that copies pays at once, without waiting for a layer-1 head to use it, and stays (the
    induction head builds on it); in a short window a head that attends evenly already puts
    a fair weight on the right key. Without these two, 3000 steps left every head flat."""
    for step in range(steps):
        short = step < short_steps
        ctx, n, lo, hi = (SHORT, 2 * batch, 2, 9) if short else (CTX, batch) + tuple(span)
        x = np.empty((n, ctx + 1), np.int64)
        for b in range(n):
            at = rng.integers(0, len(stream) - ctx - 1)
            x[b] = stream[at:at + ctx + 1]
            if rng.random() < repeated:
                s = int(rng.integers(0, 9 if not short else 3))
                while s <= ctx:
                    L = int(rng.integers(lo, hi))
                    copies = 2
                    if rng.random() < (0.5 if short else pairs):
                        L, copies = 2, int(rng.integers(2, 5))   # A B A B ...: the token before is the answer
                    toks = rng.integers(0, VOCAB - 1, L)
                    for c in range(copies):
                        part = x[b, s + c * L:s + (c + 1) * L]
                        part[:] = toks[:len(part)]
                    s += copies * L
        t = torch.from_numpy(x)
        yield t[:, :-1], t[:, 1:]


def repeated_sequences(seed, n=INDUCTION_SEQS):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        span = rng.integers(0, VOCAB - 1, INDUCTION_LEN).tolist()
        out.append(span + span)
    return out


def text_windows(stream, seed, n=64):
    rng = np.random.default_rng(seed)
    return [stream[a:a + n].tolist() for a in rng.integers(0, len(stream) - n, TEXT_WINDOWS)]


def heldout_loss(model, seqs):
    with torch.no_grad():
        t = torch.tensor(seqs)
        lg = model(t[:, :-1])
        return F.cross_entropy(lg.reshape(-1, VOCAB), t[:, 1:].reshape(-1)).item()


def quick_induction(model, seqs):
    """Previous-token score of the best layer-0 head and induction score of the best layer-1 head,
    from the float32 training forward (for the log; heads.json's numbers are float64)."""
    weights = []
    with torch.no_grad():
        model(torch.tensor(seqs), keep=weights)
    L = INDUCTION_LEN
    ind = weights[1].diagonal(offset=1 - L, dim1=-2, dim2=-1)[:, :, 1:].mean((0, 2)).max().item()
    prev = weights[0].diagonal(offset=-1, dim1=-2, dim2=-1).mean((0, 2)).max().item()
    return prev, ind


def train(model, stream, steps, seed, lr, batch, repeated, short, span=(4, 17), pairs=0.3, every=50):
    rng = np.random.default_rng(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.01)
    probe = repeated_sequences(seed + 1, 8)
    held = [stream[a:a + CTX + 1].tolist() for a in np.random.default_rng(seed + 2).integers(0, len(stream) - CTX - 1, 8)]
    t0 = time.time()
    curve = []
    for step, (x, y) in enumerate(batches(stream, rng, steps, batch, repeated, int(short * steps), span, pairs)):
        frac = step / steps
        cur = lr * min(1.0, (step + 1) / 30) * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))
        for g in opt.param_groups:
            g["lr"] = cur
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % every == 0 or step == steps - 1:
            prev, ind = quick_induction(model, probe)
            text = heldout_loss(model, held)
            curve.append({"step": step, "train_loss": round(loss.item(), 4), "text_loss": round(text, 4),
                          "best_previous_token_L0": round(prev, 4), "best_induction_L1": round(ind, 4)})
            print("  step %5d  loss %.3f  text %.3f  prev-token(L0) %.3f  induction(L1) %.3f  %4.0fs" %
                  (step, loss.item(), text, prev, ind, time.time() - t0), file=sys.stderr, flush=True)
    return curve, time.time() - t0


# ------------------------------------------------------------------ writing, scoring
def save(model, kind, cfg, folder, tok):
    """config.json, model.safetensors (F32, make_models' writer), tokenizer.json; returns what
    make_models.reference needs: (name -> float64 values, name -> file, name -> entry)."""
    os.makedirs(folder, exist_ok=True)
    for f in os.listdir(folder):
        os.remove(os.path.join(folder, f))
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok.json(), f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    values, entries = {}, {}
    for name in model.names:
        a = model.p(name).detach().numpy().astype(np.float32)
        blob, v = make_models.stored(a, "F32")
        entries[name] = ("F32", a.shape, blob)
        values[name] = v
    make_models.write_safetensors(os.path.join(folder, "model.safetensors"), entries)
    return values, {n: "model.safetensors" for n in entries}, entries


def head_scores(m, r, values, seqs, induction):
    fwd = make_models.forward_gpt2 if m["config"]["model_type"] == "gpt2" else make_models.forward_llama
    H = r["num_attention_heads"]
    acc = [[{"previous_token": [], "first_token": [], "diagonal": [], "induction": []} for _ in range(H)]
           for _ in range(r["num_hidden_layers"])]
    for ids in seqs:
        rec = fwd(m, r, values, ids)
        for i, lay in enumerate(rec["layers"]):
            for j, hd in enumerate(lay["attn"]["heads"]):
                w = np.array(hd["weights"])
                n = len(ids)
                a = acc[i][j]
                a["previous_token"].append(np.mean([w[t, t - 1] for t in range(1, n)]))
                a["first_token"].append(np.mean([w[t, 0] for t in range(1, n)]))
                a["diagonal"].append(np.mean([w[t, t] for t in range(1, n)]))
                if induction:
                    L = n // 2
                    a["induction"].append(np.mean([w[L + t, t + 1] for t in range(L)]))
    return [[{k: round(float(np.mean(v)), 4) for k, v in a.items() if v} for a in lay] for lay in acc]


def best_heads(text, rep):
    """The best head of each kind, [score, "LiHj"]: previous_token among layer 0's heads (the
    circuit's first half), induction among layer 1's (its second), first_token and diagonal
    among all. Scores on text; induction on the repeated random tokens."""
    def top(kind, table, layers):
        return max([table[i][j][kind], "L%dH%d" % (i, j)] for i in layers for j in range(len(table[i])))
    every = range(len(text))
    return {"previous_token": top("previous_token", text, [0]), "first_token": top("first_token", text, every),
            "diagonal": top("diagonal", text, every), "induction": top("induction", rep, [len(rep) - 1])}


def heads_json(h):
    """heads.json: one line a key, a layer or a block entry (tests/t_trained.sh reads "best" with sed)."""
    out = []
    for k, v in h.items():
        if k in ("text", "repeated"):
            out.append(' "%s": [\n%s\n ]' % (k, ",\n".join("  " + json.dumps(lay) for lay in v)))
        elif k in ("best", "definitions"):
            out.append(' "%s": {\n%s\n }' % (k, ",\n".join("  %s: %s" % (json.dumps(a), json.dumps(b, ensure_ascii=False))
                                                         for a, b in v.items())))
        elif k == "training":
            curve = v.pop("curve")
            out.append(' "training": %s,\n "curve": [\n%s\n ]' % (json.dumps(v), ",\n".join("  " + json.dumps(c) for c in curve)))
        else:
            out.append(" %s: %s" % (json.dumps(k), json.dumps(v, ensure_ascii=False)))
    return "{\n" + ",\n".join(out) + "\n}\n"


def name_heads(text, rep):
    """Which heads are which: a score of 0.4 or more names the head."""
    names = []
    for i, lay in enumerate(text):
        for j, s in enumerate(lay):
            what = [k for k, lim in (("previous_token", 0.4), ("first_token", 0.4), ("diagonal", 0.4)) if s[k] >= lim]
            if rep[i][j]["induction"] >= 0.4:
                what.append("induction")
            names.append({"layer": i, "head": j, "is": what})
    return names


MODELS = [
    {"name": "tiny-gpt2", "kind": "gpt2", "config": gpt2_config, "seed": 2201, "steps": 6000, "lr": 1e-2, "batch": 8, "repeated": 0.85, "qk_std": 0.1, "short": 0.25,
     "span_lo": 4, "span_hi": 17, "pairs": 0.3, "every": 50,
     "why": "attnviz's own small GPT-2 (2 layers, 4 heads, n_embd 64), trained by assets/models/train.py "
            "on the project's English and Chinese text and on repeated random spans: a previous-token "
            "head in layer 0 and an induction head in layer 1"},
    {"name": "tiny-llama", "kind": "llama", "config": llama_config, "seed": 2202, "steps": 6000, "lr": 1e-2, "batch": 8, "repeated": 0.85, "qk_std": 0.1, "short": 0.25,
     "span_lo": 4, "span_hi": 17, "pairs": 0.3, "every": 50,
     "why": "attnviz's own small LLaMA (2 layers, 4 query heads over 2 key/value heads, hidden 64, RoPE, "
            "RMSNorm, SwiGLU, tied), trained by assets/models/train.py as tiny-gpt2"},
]
PROMPTS = ["The cat sat. The cat sat", "注意力机制：注意力"]


def readme_table():
    """The table of README.md's "Models that ship with attnviz", from the heads.json files."""
    rows = ["| model | head | previous-token | first-token | diagonal | induction | what it is |",
            "|---|---|---|---|---|---|---|"]
    for spec in MODELS:
        if not os.path.exists(os.path.join(OUT, spec["name"], "heads.json")):
            continue      # defined, not trained
        with open(os.path.join(OUT, spec["name"], "heads.json")) as f:
            h = json.load(f)
        for named in h["heads"]:
            i, j = named["layer"], named["head"]
            t, r = h["text"][i][j], h["repeated"][i][j]
            rows.append("| `%s` | L%dH%d | %.2f | %.2f | %.2f | %.2f | %s |" % (
                spec["name"], i, j, t["previous_token"], t["first_token"], t["diagonal"], r["induction"],
                ", ".join(k.replace("_", "-") for k in named["is"]) or "—"))
    print("\n".join(rows))


def read_folder(folder):
    """A saved folder's weights back: what save() returns (name -> float64 values, files, entries)."""
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        raw = f.read()
    hl = struct.unpack("<Q", raw[:8])[0]
    values, entries = {}, {}
    for name, e in json.loads(raw[8:8 + hl]).items():
        if name == "__metadata__":
            continue
        blob = raw[8 + hl + e["data_offsets"][0]:8 + hl + e["data_offsets"][1]]
        a = np.frombuffer(blob, "<f4").reshape(e["shape"])
        entries[name] = (e["dtype"], tuple(e["shape"]), blob)
        values[name] = a.astype(np.float64)
    return values, {n: "model.safetensors" for n in entries}, entries


def training_forward_agrees(r, folder, name):
    """The saved weights through the training forward (Model, float32) against the float64
    reference just written (tests/models/NAME.ref.json; train_induction.py, train_sentences.py):
    the same model to float32 rounding (printed; an error above 1e-4)."""
    values = read_folder(folder)[0]
    torch.set_default_dtype(torch.float32)
    model = Model("llama", r, 0)
    with torch.no_grad():
        for tensor in model.names:
            model.p(tensor).copy_(torch.tensor(values[tensor]))
    with open(os.path.join(OUT_ROOT, "tests", "models", name + ".ref.json")) as f:
        ref = json.load(f)
    for p in ref["prompts"]:
        with torch.no_grad():
            lg = model(torch.tensor([p["ids"]]))[0].double().numpy()
        err = float(np.abs(lg - np.array(p["logits"])).max())
        print("  training forward vs reference, %d tokens: logits differ by %.1e at most" % (len(p["ids"]), err),
              file=sys.stderr)
        assert err < 1e-4, err


# ------------------------------------------------------------------ the attention-only models
# What train_induction.py and train_sentences.py share: a LLaMA-style model whose MLP adds
# exactly 0, its reference, its scores on sequences, and the main that trains or rescores it.
def attention_only(r, seed, qk_std=0.02):
    """A llama Model whose MLP (intermediate_size 1) is all zeros and, with its RMSNorm, frozen
    (never trained): each block's MLP adds exactly 0 to the residual stream."""
    model = Model("llama", r, seed, qk_std=qk_std)
    for name in model.names:
        if ".mlp." in name or "post_attention_layernorm" in name:
            p = model.p(name)
            with torch.no_grad():
                if ".mlp." in name:
                    p.zero_()
            p.requires_grad_(False)
    return model


def write_reference(name, cfg, r, saved, tok, prompts, why, edit=None):
    """tests/models/NAME.ref.json: make_models' float64 reference of the saved weights on
    prompts (every stage of every layer), with "folder" and "prompt_text"; edit(ref, m), when
    given, changes it before it is written. Returns m, the model as make_models' forwards take it."""
    values, files, entries = saved
    torch.set_default_dtype(torch.float64)    # make_models' forward works in float64
    m = {"name": name, "config": cfg, "prefix": "", "prompts": [tok.encode(p) for p in prompts], "why": why}
    ref = make_models.reference(m, r, values, files, entries)
    ref["folder"] = "assets/models/" + name
    ref["prompt_text"] = prompts
    if edit is not None:
        edit(ref, m)
    os.makedirs(os.path.join(OUT_ROOT, "tests", "models"), exist_ok=True)
    with open(os.path.join(OUT_ROOT, "tests", "models", name + ".ref.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    return m


def mean_scores(m, r, values, seqs, induction_keys=None):
    """heads.json's scores, each head's mean over seqs (float64, rounded to 4 places): on rows
    i >= 1, previous_token (the weight on key i - 1), first_token (key 0), diagonal (key i);
    with induction_keys(ids) (a key a row, -1: none), induction over the second half's rows."""
    kinds = ["previous_token", "first_token", "diagonal"] + (["induction"] if induction_keys else [])
    acc = [[{k: [] for k in kinds} for _ in range(r["num_attention_heads"])] for _ in range(r["num_hidden_layers"])]
    for ids in seqs:
        rec = make_models.forward_llama(m, r, values, ids)
        n = len(ids)
        keys = induction_keys(ids) if induction_keys else None
        for i, lay in enumerate(rec["layers"]):
            for j, hd in enumerate(lay["attn"]["heads"]):
                w = np.array(hd["weights"])
                a = acc[i][j]
                a["previous_token"].append(np.mean([w[t, t - 1] for t in range(1, n)]))
                a["first_token"].append(np.mean([w[t, 0] for t in range(1, n)]))
                a["diagonal"].append(np.mean([w[t, t] for t in range(1, n)]))
                if keys:
                    a["induction"].append(np.mean([w[t, keys[t]] for t in range(n // 2, n) if keys[t] >= 0]))
    return [[{k: round(float(np.mean(v)), 4) for k, v in a.items()} for a in lay] for lay in acc]


def attention_only_main(name, cfg, tok, seed, train_fn, finish_fn, qk_std=0.02):
    """The main of train_induction.py and train_sentences.py. With --rescore: no training, the
    saved weights' reference and heads.json again (the training curve heads.json kept). Else:
    attention_only(), train_fn(model) (returns heads.json's "training", its "curve" in it),
    save(), finish_fn(cfg, r, saved, tok, training). Then the saved weights through the
    training forward must give the reference's logits (training_forward_agrees)."""
    r = make_models.resolved(cfg)
    folder = os.path.join(OUT, name)
    if sys.argv[1:] == ["--rescore"]:
        with open(os.path.join(folder, "heads.json")) as f:
            kept = json.load(f)
        finish_fn(cfg, r, read_folder(folder), tok, dict(kept["training"], curve=kept["curve"]))
    else:
        torch.set_default_dtype(torch.float32)
        torch.manual_seed(seed)
        model = attention_only(r, seed, qk_std)
        training = train_fn(model)
        finish_fn(cfg, r, save(model, "llama", cfg, folder, tok), tok, training)
    training_forward_agrees(r, folder, name)


def finish(spec, cfg, r, saved, tok, stream, training):
    """The reference (tests/models/NAME.ref.json) and heads.json of a saved model."""
    values, files, entries = saved
    folder = os.path.join(OUT, spec["name"])
    torch.set_default_dtype(torch.float64)    # make_models' forward works in float64
    m = {"name": spec["name"], "why": spec["why"], "config": cfg, "prefix": "",
         "prompts": [tok.encode(p) for p in PROMPTS]}
    ref = make_models.reference(m, r, values, files, entries)
    ref["folder"] = "assets/models/" + spec["name"]
    ref["prompt_text"] = PROMPTS
    os.makedirs(os.path.join(OUT_ROOT, "tests", "models"), exist_ok=True)
    with open(os.path.join(OUT_ROOT, "tests", "models", spec["name"] + ".ref.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    text = head_scores(m, r, values, text_windows(stream, 7), False)
    rep = head_scores(m, r, values, repeated_sequences(8), True)
    heads = {
        "model": spec["name"],
        "definitions": {
            "previous_token": "mean over query rows i >= 1 of the weight on key i - 1",
            "first_token": "mean over query rows i >= 1 of the weight on key 0",
            "diagonal": "mean over query rows i >= 1 of the weight on key i",
            "induction": "random tokens r_0..r_{L-1} repeated twice: mean over rows L + j of the "
                         "weight on key j + 1 (L = %d)" % INDUCTION_LEN},
        "on_text": "%d windows of 64 tokens of the training corpus" % TEXT_WINDOWS,
        "on_repeated": "%d sequences of %d random tokens repeated twice" % (INDUCTION_SEQS, INDUCTION_LEN),
        "best": best_heads(text, rep), "text": text, "repeated": rep, "heads": name_heads(text, rep),
        "training": training,
    }
    with open(os.path.join(folder, "heads.json"), "w") as f:
        f.write(heads_json(heads))
    for i, lay in enumerate(text):
        for j, sc in enumerate(lay):
            print("  L%dH%d  text: prev %.3f first %.3f diag %.3f   repeated: prev %.3f induction %.3f" %
                  (i, j, sc["previous_token"], sc["first_token"], sc["diagonal"], rep[i][j]["previous_token"],
                   rep[i][j]["induction"]), file=sys.stderr)


def main():
    if sys.argv[1:] == ["--table"]:
        readme_table()
        return
    rescore = sys.argv[1:2] == ["--rescore"]
    only = sys.argv[2:] if rescore else sys.argv[1:]
    t_all = time.time()
    docs = corpus_documents()
    vocab, merges = train_bpe(docs, VOCAB)
    assert len(vocab) == VOCAB, len(vocab)
    tok = Tokenizer(vocab, merges)
    stream = []
    for d in docs:
        stream += tok.encode(d) + [vocab[EOT]]
    stream = np.array(stream, np.int64)
    chars = sum(len(d) for d in docs)
    print("corpus: %d documents, %d characters, %d tokens (vocabulary %d, %d merges)  %.0fs" %
          (len(docs), chars, len(stream), len(vocab), len(merges), time.time() - t_all), file=sys.stderr)
    with open(CHECK, "w", encoding="utf-8") as f:
        # for make_goldens.mjs: the documents and the ids this script trains on
        json.dump({"documents": docs, "ids": [tok.encode(d) for d in docs]}, f, ensure_ascii=False)
    for spec in MODELS:
        if only and spec["name"] not in only:
            continue
        if os.environ.get("TRAIN_STEPS"):
            spec["steps"] = int(os.environ["TRAIN_STEPS"])
        for kv in filter(None, os.environ.get("TRAIN_SET", "").split(",")):   # a trial: key=number
            k, v = kv.split("=")
            spec[k] = type(spec[k])(float(v))
        cfg = spec["config"]()
        r = make_models.resolved(cfg)
        folder = os.path.join(OUT, spec["name"])
        if rescore:
            # the saved weights scored again (no training): the curve is the one heads.json kept
            with open(os.path.join(folder, "heads.json")) as f:
                kept = json.load(f)
            training = dict(kept["training"], curve=kept["curve"])
            finish(spec, cfg, r, read_folder(folder), tok, stream, training)
            continue
        torch.set_default_dtype(torch.float32)
        torch.manual_seed(spec["seed"])
        model = Model(spec["kind"], r, spec["seed"], spec["qk_std"])
        print("%s: %d parameters, %d steps of %d x %d tokens" %
              (spec["name"], sum(p.numel() for p in model.parameters()), spec["steps"], spec["batch"], CTX), file=sys.stderr)
        curve, secs = train(model, stream, spec["steps"], spec["seed"], spec["lr"], spec["batch"], spec["repeated"], spec["short"],
                            (spec["span_lo"], spec["span_hi"]), spec["pairs"], spec["every"])
        saved = save(model, spec["kind"], cfg, folder, tok)
        training = {"steps": spec["steps"], "batch": spec["batch"], "lr": spec["lr"], "repeated": spec["repeated"],
                    "qk_init_std": spec["qk_std"], "short": spec["short"], "seed": spec["seed"], "context": CTX, "seconds": round(secs),
                    "curve": curve}
        finish(spec, cfg, r, saved, tok, stream, training)
    print("done in %.0fs" % (time.time() - t_all), file=sys.stderr)


if __name__ == "__main__":
    main()
