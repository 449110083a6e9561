/*
 * tokenizer_internal.h: what the files of src/weights/ that make the tokenizer
 * share, for them alone (the rest of the program includes tokenizer.h).
 *
 *   tokenizer_read.c  reading the file: a tokenizer.json → the Tokenizer,
 *                     every error at its JSON path (the model, its vocabulary
 *                     and merges, the added tokens, normalizers,
 *                     pre-tokenizers and post-processors, their regexes
 *                     compiled); tok_load, tok_load_buf, tok_free
 *   tokenizer.c       encoding: text → ids (the added tokens cut out,
 *                     normalizers, pre-tokenizers, BPE, the post-processor's
 *                     tokens); tok_encode; and the helpers below
 *   tokenizer_show.c  what people see: the vocabulary asked by id and by
 *                     token, a token as people read it (tok_display)
 *   tokenizer_config.c a folder's tokenizer_config.json as transformers
 *                     applies it (the Llama family's bos/eos template);
 *                     tok_apply_config, tok_load_folder
 */
#ifndef ATTNVIZ_TOKENIZER_INTERNAL_H
#define ATTNVIZ_TOKENIZER_INTERNAL_H

#include "weights/tokenizer.h"

#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#define TOK_MAX_PARTS 64 /* normalizers, pre-tokenizers or post-processors in all */

/* ---- the pieces a file describes (tokenizer_read.c fills them in) ---- */

typedef struct TkRegex {
	pcre2_code *code;
	char *where; /* the JSON path of its pattern, for a message when it gives up on a text */
} TkRegex;

enum { TK_NORM_PREPEND, TK_NORM_REPLACE, TK_NORM_NFC, TK_NORM_NFD, TK_NORM_NFKC, TK_NORM_NFKD };
typedef struct TkNorm {
	int kind;
	char *str;  /* Prepend's text, Replace's content */
	TkRegex re; /* Replace's pattern */
} TkNorm;

enum { TK_PRE_BYTELEVEL, TK_PRE_SPLIT, TK_PRE_METASPACE, TK_PRE_DIGITS };
enum { TK_SPLIT_REMOVED, TK_SPLIT_ISOLATED, TK_SPLIT_PREVIOUS, TK_SPLIT_NEXT, TK_SPLIT_CONTIGUOUS };
enum { TK_PREPEND_ALWAYS, TK_PREPEND_FIRST, TK_PREPEND_NEVER };
typedef struct TkPre {
	int kind;
	int add_prefix_space, use_regex; /* ByteLevel */
	TkRegex re;                      /* ByteLevel with use_regex, Split, Digits */
	int behavior, invert;            /* Split; Digits: Isolated */
	char repl[8];                    /* Metaspace's replacement (UTF-8) */
	int prepend, split;              /* Metaspace */
} TkPre;

typedef struct TkAdded {
	int id;
	char *content; /* as matched: normalized when the token is */
	size_t len;
	int special, lstrip, rstrip, normalized;
} TkAdded;

struct Tokenizer {
	char *name; /* escaped, for messages */
	int nvocab; /* one more than the largest id */
	char **text; /* id → the model's token (owned), or NULL */
	char **shown; /* id → an added token's content (owned), or NULL */
	unsigned char *special;
	/* the model's vocabulary: open addressing, slot = id + 1 */
	int *slot;
	size_t smask;
	/* merges: (left id << 32 | right id) → rank, merged id */
	uint64_t *mkey;
	int *mrank, *mnew;
	size_t mmask;
	TkNorm norm[TOK_MAX_PARTS];
	int nnorm;
	TkPre pre[TOK_MAX_PARTS];
	int npre;
	TkAdded *added;
	int nadded;
	unsigned char starts[2][256]; /* [normalized][b]: an added token of that kind starts with byte b */
	int byte_level; /* tokens are GPT-2's byte characters */
	int unk, fuse_unk, byte_fallback, ignore_merges;
	char *prefix, *suffix; /* continuing_subword_prefix, end_of_word_suffix; NULL when empty */
	int byte_tok[256];     /* <0xNN>'s id, or -1 */
	int *before, *after;   /* ids the post-processor puts around the text */
	int nbefore, nafter;
	pcre2_match_context *mctx;
};

/*
 * What the files share, from tokenizer.c; the names begin with tk_ so that
 * none is mistaken for the public API (tokenizer.h).
 */

/* GPT-2's table: byte b is written as code point tk_byte_char[b]; tk_char_byte inverts it (-1: none). */
extern unsigned short tk_byte_char[256];
extern short tk_char_byte[324];
/* Fills the table in (once; tok_load_buf calls it). */
void tk_byte_table(void);

/* The character at s (avail ≥ 1 bytes, valid UTF-8): its length, and the code point in *cp. */
int tk_utf8_next(const char *s, size_t avail, unsigned *cp);

/* The hashes of the vocabulary's table (a token's text) and the merges' (left id << 32 | right id). */
uint64_t tk_hash_bytes(const char *s, size_t len);
uint64_t tk_hash_pair(uint64_t k);
/* The model's id of a token's text, or -1. */
int tk_vocab_find(const Tokenizer *t, const char *s, size_t len);

/* The tokenizer's normalizers on *s (heap, *len bytes), replaced. Returns 0, or -1 with *err. */
int tk_normalize(const Tokenizer *t, char **s, size_t *len, char **err);

#endif
