/*
 * tokenizer.h: text to token ids, as a Hugging Face tokenizer.json says
 * (encoding only), for the byte-level BPE of GPT-2, SmolLM2 and Qwen and the
 * SentencePiece-style BPE of Llama 2 and TinyLlama.
 *
 * What tok_encode does, in the order of the tokenizers library (so the ids
 * are what `tokenizer(text)` gives in Python with its defaults):
 *   1. the added tokens ("added_tokens": <|endoftext|>, <s>, <|im_start|>, …)
 *      are cut out of the text, longest first at the leftmost place; those
 *      marked "normalized" are looked for after step 2;
 *   2. each piece between them is normalized ("normalizer": Prepend, Replace,
 *      NFC, NFD, NFKC, NFKD through ICU, Sequence);
 *   3. and cut into words ("pre_tokenizer": ByteLevel with GPT-2's regex,
 *      Split with a regex or a string and its behaviour, Metaspace, Digits,
 *      Sequence), every regex through PCRE2 (UTF and Unicode properties);
 *      ByteLevel writes each byte as the character GPT-2's table gives it;
 *   4. each word is merged by BPE ("model": vocab, merges by rank, written as
 *      "a b" or ["a", "b"]; unk_token, fuse_unk, byte_fallback to <0xNN>,
 *      ignore_merges, continuing_subword_prefix, end_of_word_suffix);
 *   5. the post-processor adds its tokens ("post_processor":
 *      TemplateProcessing's single template, RobertaProcessing,
 *      BertProcessing, ByteLevel, Sequence).
 * Anything else in the file that changes the ids (a WordPiece or Unigram
 * model, a Lowercase normalizer, BPE dropout, …) is refused by name when the
 * file is read, never ignored.
 */
#ifndef ATTNVIZ_TOKENIZER_H
#define ATTNVIZ_TOKENIZER_H

#include <stddef.h>

/* Documented limits (README, "Limits"). */
#define TOK_MAX_FILE   (256L << 20) /* tokenizer.json's size */
#define TOK_MAX_VOCAB  (1L << 20)   /* ids from 0 to TOK_MAX_VOCAB - 1 */
#define TOK_MAX_TOKEN  1024         /* bytes of one token's text */
#define TOK_MAX_INPUT  (1L << 20)   /* bytes of text to encode */

typedef struct Tokenizer Tokenizer;

/*
 * Read and check a tokenizer.json: NULL with *err (heap) saying where and
 * what was expected ("tokenizer.json: model.merges[3]: \"Ġ q\" names \"q\",
 * which is not in model.vocab").
 */
Tokenizer *tok_load(const char *path, char **err);
/* The same from bytes in memory; name is the file's name for messages. */
Tokenizer *tok_load_buf(const char *name, const char *buf, size_t len, char **err);
void tok_free(Tokenizer *t);
/*
 * tokenizer_config.json (path; absent: nothing changes) as transformers
 * applies it by default (tokenizer_config.c says what and why): for a
 * Llama-family "tokenizer_class" the post-processor becomes [bos_token if
 * add_bos_token (default true)] TEXT [eos_token if add_eos_token (default
 * false)]. 0, or -1 with *err at its JSON path.
 */
int tok_apply_config(Tokenizer *t, const char *path, char **err);
/* A model folder's tokenizer: tok_load(path), then tok_apply_config of the tokenizer_config.json beside it. */
Tokenizer *tok_load_folder(const char *path, char **err);

/*
 * text (len bytes of UTF-8) → *ids (heap, *n of them). Returns 0, or -1 with
 * *err (heap): text that is not UTF-8 or too long, a regex that gives up.
 */
int tok_encode(const Tokenizer *t, const char *text, size_t len, int **ids, int *n, char **err);

/* One more than the largest id. */
int tok_vocab_size(const Tokenizer *t);
/* A token's text as the file writes it ("Ġcat", "▁the", "<0x0A>"), or NULL for an id without one. */
const char *tok_token(const Tokenizer *t, int id);
/* The id of a token's text, or -1. */
int tok_id(const Tokenizer *t, const char *token);
/* 1 for an added token marked "special" (<s>, <|im_start|>). */
int tok_is_special(const Tokenizer *t, int id);

/*
 * A token as people read it (heap): the text it stands for, with a space
 * shown as "·" (utf8) or " ", a byte-level token's bytes or a <0xNN> token's
 * byte as the characters they are where they form UTF-8 and "<0xE6>" where
 * they do not, a control character escaped ("\n", "\t", "\x1b"), never raw;
 * an added token as its text, escaped. Without utf8, a character beyond
 * ASCII is written \u{…}. An id without a token gives "<id N?>".
 */
char *tok_display(const Tokenizer *t, int id, int utf8);

#endif
