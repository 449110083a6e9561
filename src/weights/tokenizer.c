/* tokenizer.c: a Hugging Face tokenizer.json read and checked, and text encoded with it (tokenizer.h). */
#include "weights/tokenizer.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include "base/fileio.h"
#include "base/i18n.h"
#include "base/jsonread.h"
#include "base/strbuf.h"
#include "base/text.h"

#define TOK_MAX_MERGES (4L * TOK_MAX_VOCAB)
#define TOK_MAX_PARTS  64      /* normalizers, pre-tokenizers or post-processors in all */
#define MATCH_LIMIT    5000000 /* PCRE2's steps for one match: a regex that backtracks without end gives up */

/* ---- the pieces a file describes ---- */

typedef struct Regex {
	pcre2_code *code;
	char *where; /* the JSON path of its pattern, for a message when it gives up on a text */
} Regex;

enum { NORM_PREPEND, NORM_REPLACE, NORM_NFC, NORM_NFD, NORM_NFKC, NORM_NFKD };
typedef struct Norm {
	int kind;
	char *str; /* Prepend's text, Replace's content */
	Regex re;  /* Replace's pattern */
} Norm;

enum { PRE_BYTELEVEL, PRE_SPLIT, PRE_METASPACE, PRE_DIGITS };
enum { SPLIT_REMOVED, SPLIT_ISOLATED, SPLIT_PREVIOUS, SPLIT_NEXT, SPLIT_CONTIGUOUS };
enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER };
typedef struct Pre {
	int kind;
	int add_prefix_space, use_regex; /* ByteLevel */
	Regex re;                        /* ByteLevel with use_regex, Split, Digits */
	int behavior, invert;            /* Split; Digits: Isolated */
	char repl[8];                    /* Metaspace's replacement (UTF-8) */
	int prepend, split;              /* Metaspace */
} Pre;

typedef struct Added {
	int id;
	char *content; /* as matched: normalized when the token is */
	size_t len;
	int special, lstrip, rstrip, normalized;
} Added;

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
	Norm norm[TOK_MAX_PARTS];
	int nnorm;
	Pre pre[TOK_MAX_PARTS];
	int npre;
	Added *added;
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

/* GPT-2's table: byte b is written as code point byte_char[b]; char_byte inverts it (-1: none). */
static unsigned short byte_char[256];
static short char_byte[324];

static void byte_table(void)
{
	int n = 0;
	if (byte_char['!'] != 0)
		return;
	for (int c = 0; c < 324; c++)
		char_byte[c] = -1;
	for (int b = 0; b < 256; b++) {
		int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
		byte_char[b] = (unsigned short)(printable ? b : 256 + n++);
		char_byte[byte_char[b]] = (short)b;
	}
}

/* ---- UTF-8 ---- */

/* The character at s (avail ≥ 1 bytes, valid UTF-8): its length, and the code point in *cp. */
static int utf8_next(const char *s, size_t avail, unsigned *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	int k = p[0] < 0x80 ? 1 : p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : 4;
	if ((size_t)k > avail || (k > 1 && !text_valid_utf8(s, (size_t)k))) {
		*cp = p[0];
		return 1;
	}
	*cp = k == 1 ? p[0] : k == 2 ? p[0] & 0x1Fu : k == 3 ? p[0] & 0x0Fu : p[0] & 0x07u;
	for (int i = 1; i < k; i++)
		*cp = *cp << 6 | (p[i] & 0x3Fu);
	return k;
}

static int utf8_put(char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* Unicode's White_Space, as Rust's char::is_whitespace (lstrip, rstrip). */
static int is_space(unsigned cp)
{
	return (cp >= 9 && cp <= 13) || cp == ' ' || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
	       (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
	       cp == 0x3000;
}

/* ---- growing arrays ---- */

typedef struct Ids {
	int *v;
	int n, cap;
	int oom;
} Ids;

static void ids_add(Ids *a, int id)
{
	if (a->n == a->cap) {
		int cap = a->cap ? a->cap * 2 : 64;
		int *v = realloc(a->v, (size_t)cap * sizeof *v);
		if (v == NULL) {
			a->oom = 1;
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = id;
}

/* A piece of text on its way through the pre-tokenizers; first: it begins where the text began. */
typedef struct Piece {
	char *s;
	size_t len;
	int first;
} Piece;

typedef struct Pieces {
	Piece *v;
	int n, cap;
	int oom;
} Pieces;

static void pieces_add(Pieces *a, const char *s, size_t len, int first)
{
	char *copy;
	if (len == 0)
		return; /* the library drops empty pieces */
	if (a->n == a->cap) {
		int cap = a->cap ? a->cap * 2 : 16;
		Piece *v = realloc(a->v, (size_t)cap * sizeof *v);
		if (v == NULL) {
			a->oom = 1;
			return;
		}
		a->v = v;
		a->cap = cap;
	}
	if ((copy = malloc(len + 1)) == NULL) {
		a->oom = 1;
		return;
	}
	memcpy(copy, s, len);
	copy[len] = '\0';
	a->v[a->n++] = (Piece){copy, len, first};
}

static void pieces_free(Pieces *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->v[i].s);
	free(a->v);
	memset(a, 0, sizeof *a);
}

/* ---- the vocabulary and the merges ---- */

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

static uint64_t hash_pair(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

/* The model's id of a token's text, or -1. */
static int vocab_find(const Tokenizer *t, const char *s, size_t len)
{
	if (t->slot == NULL)
		return -1;
	for (size_t i = hash_bytes(s, len) & t->smask;; i = (i + 1) & t->smask) {
		int id = t->slot[i] - 1;
		if (id < 0)
			return -1;
		if (strlen(t->text[id]) == len && memcmp(t->text[id], s, len) == 0)
			return id;
	}
}

/* The rank of merging a then b (*merged: the token it makes), or -1. */
static int merge_find(const Tokenizer *t, int a, int b, int *merged)
{
	uint64_t key = (uint64_t)(unsigned)a << 32 | (unsigned)b;
	if (t->mkey == NULL)
		return -1;
	for (size_t i = hash_pair(key) & t->mmask;; i = (i + 1) & t->mmask) {
		if (t->mrank[i] < 0)
			return -1;
		if (t->mkey[i] == key) {
			*merged = t->mnew[i];
			return t->mrank[i];
		}
	}
}

static size_t table_size(long n)
{
	size_t size = 16;
	while (size < (size_t)n * 2)
		size *= 2;
	return size;
}

/* ---- regexes ---- */

/* jr_enter, with *old set when the key is absent too (then the path is as it was). */
static const cJSON *enter(JrCtx *c, const cJSON *obj, const char *key, size_t *old)
{
	*old = c->pathlen;
	return jr_enter(c, obj, key, old);
}


static pcre2_code *regex_compile(JrCtx *c, const char *pattern, int literal)
{
	int code;
	PCRE2_SIZE at;
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
	                               literal ? PCRE2_UTF | PCRE2_LITERAL : PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
	if (re == NULL) {
		PCRE2_UCHAR why[256];
		pcre2_get_error_message(code, why, sizeof why);
		jr_fail(c, _("not a regex PCRE2 reads: %s (at character %zu)"), (const char *)why, (size_t)at);
		return NULL;
	}
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* faster where the machine has it; the same matches without */
	return re;
}

/* A Regex for the value at the current path: {"Regex": "…"} or {"String": "…"}. */
static int read_pattern(JrCtx *c, const cJSON *v, Regex *re)
{
	static const char *const keys[] = {"Regex", "String", NULL};
	const cJSON *e;
	size_t old;
	char *s = NULL;
	int literal;

	if (!cJSON_IsObject(v) || cJSON_GetArraySize(v) != 1)
		return jr_fail(c, _("expected {\"Regex\": \"…\"} or {\"String\": \"…\"}, got %s"), jr_got(v).s);
	if (jr_refuse_unknown_keys(c, v, keys, _("pattern")) != 0)
		return -1;
	literal = jr_get(v, "String") != NULL;
	e = enter(c, v, literal ? "String" : "Regex", &old);
	if (jr_read_string(c, e, &s) != 0)
		return jr_leave(c, old, -1);
	re->code = regex_compile(c, s, literal);
	free(s);
	if (re->code == NULL)
		return jr_leave(c, old, -1);
	if ((re->where = strdup(c->path)) == NULL)
		return jr_leave(c, old, jr_fail_oom(c));
	return jr_leave(c, old, 0);
}

static void regex_free(Regex *re)
{
	pcre2_code_free(re->code);
	free(re->where);
}

/*
 * Each match of re in s[0..len), as (start, end, matched) segments covering
 * the whole text in order (the library's find_matches), into *seg (heap).
 * Empty matches are passed over. Returns the count, or -1 with *err.
 */
typedef struct Seg {
	size_t a, b;
	int m;
} Seg;

static int find_matches(const Tokenizer *t, const Regex *re, const char *s, size_t len, Seg **seg, char **err)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(re->code, NULL);
	size_t at = 0, prev = 0;
	int n = 0, cap = 16;
	Seg *v = malloc((size_t)cap * sizeof *v);

	if (md == NULL || v == NULL)
		goto oom;
	while (at <= len) {
		int rc = pcre2_match(re->code, (PCRE2_SPTR)s, len, at, PCRE2_NO_UTF_CHECK, md, t->mctx);
		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0) {
			PCRE2_UCHAR why[256];
			pcre2_get_error_message(rc, why, sizeof why);
			*err = str_printf(_("%s: %s: the regex gave up on this text (%s)"), t->name, re->where, (const char *)why);
			free(v);
			pcre2_match_data_free(md);
			return -1;
		}
		PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
		size_t a = ov[0], b = ov[1];
		if (a == b) { /* an empty match: on to the next character */
			unsigned cp;
			if (a >= len)
				break;
			at = a + (size_t)utf8_next(s + a, len - a, &cp);
			continue;
		}
		if (n + 2 > cap) {
			Seg *w = realloc(v, (size_t)(cap *= 2) * sizeof *v);
			if (w == NULL)
				goto oom;
			v = w;
		}
		if (a > prev)
			v[n++] = (Seg){prev, a, 0};
		v[n++] = (Seg){a, b, 1};
		prev = at = b;
	}
	if (prev < len) {
		if (n + 1 > cap) {
			Seg *w = realloc(v, (size_t)(cap + 1) * sizeof *v);
			if (w == NULL)
				goto oom;
			v = w;
		}
		v[n++] = (Seg){prev, len, 0};
	}
	pcre2_match_data_free(md);
	*seg = v;
	return n;
oom:
	free(v);
	pcre2_match_data_free(md);
	*err = strdup(_("out of memory"));
	return -1;
}

/* The segments of a Split, joined as its behaviour says (the library's split). */
static int split_behave(Seg *v, int n, int behavior, int invert)
{
	int k = 0, prev = 0;
	if (invert)
		for (int i = 0; i < n; i++)
			v[i].m = !v[i].m;
	switch (behavior) {
	case SPLIT_REMOVED:
		for (int i = 0; i < n; i++)
			if (!v[i].m)
				v[k++] = v[i];
		return k;
	case SPLIT_ISOLATED: return n;
	case SPLIT_PREVIOUS: /* a match joins the piece before it */
		for (int i = 0; i < n; i++) {
			if (v[i].m && !prev && k > 0)
				v[k - 1].b = v[i].b;
			else
				v[k++] = v[i];
			prev = v[i].m;
		}
		return k;
	case SPLIT_NEXT: /* a match joins the piece after it */
		for (int i = n - 1; i >= 0; i--) {
			if (v[i].m && !prev && k > 0)
				v[n - k].a = v[i].a;
			else {
				k++;
				v[n - k] = v[i];
			}
			prev = v[i].m;
		}
		memmove(v, v + n - k, (size_t)k * sizeof *v);
		return k;
	default: /* SPLIT_CONTIGUOUS: matches side by side are one piece */
		for (int i = 0; i < n; i++) {
			if (k > 0 && v[i].m == prev)
				v[k - 1].b = v[i].b;
			else
				v[k++] = v[i];
			prev = v[i].m;
		}
		return k;
	}
}

/* ---- normalizers ---- */

/* s normalized by ICU (NFC, NFD, NFKC or NFKD), heap; NULL when out of memory. */
static char *unicode_normalize(int kind, const char *s, size_t len, size_t *outlen)
{
	UErrorCode st = U_ZERO_ERROR;
	const UNormalizer2 *n = kind == NORM_NFC    ? unorm2_getNFCInstance(&st)
	                        : kind == NORM_NFD  ? unorm2_getNFDInstance(&st)
	                        : kind == NORM_NFKC ? unorm2_getNFKCInstance(&st)
	                                            : unorm2_getNFKDInstance(&st);
	int32_t ulen = 0, nlen = 0, olen = 0;
	UChar *u = NULL, *w = NULL;
	char *out = NULL;

	if (U_FAILURE(st) || len > (size_t)TOK_MAX_INPUT * 4)
		return NULL;
	u_strFromUTF8(NULL, 0, &ulen, s, (int32_t)len, &st);
	st = U_ZERO_ERROR;
	if ((u = malloc(((size_t)ulen + 1) * sizeof *u)) == NULL)
		return NULL;
	u_strFromUTF8(u, ulen + 1, &ulen, s, (int32_t)len, &st);
	if (U_FAILURE(st))
		goto done;
	nlen = unorm2_normalize(n, u, ulen, NULL, 0, &st);
	st = U_ZERO_ERROR;
	if ((w = malloc(((size_t)nlen + 1) * sizeof *w)) == NULL)
		goto done;
	nlen = unorm2_normalize(n, u, ulen, w, nlen + 1, &st);
	if (U_FAILURE(st))
		goto done;
	u_strToUTF8(NULL, 0, &olen, w, nlen, &st);
	st = U_ZERO_ERROR;
	if ((out = malloc((size_t)olen + 1)) == NULL)
		goto done;
	u_strToUTF8(out, olen + 1, &olen, w, nlen, &st);
	if (U_FAILURE(st)) {
		free(out);
		out = NULL;
	} else
		*outlen = (size_t)olen;
done:
	free(u);
	free(w);
	return out;
}

/* One normalizer on *s (heap, *len bytes), replaced. Returns 0, or -1 with *err. */
static int normalize_one(const Tokenizer *t, const Norm *nm, char **s, size_t *len, char **err)
{
	StrBuf b = {0};
	char *out;
	size_t olen;

	switch (nm->kind) {
	case NORM_PREPEND:
		if (*len == 0)
			return 0;
		strbuf_puts(&b, nm->str);
		strbuf_add(&b, *s, *len);
		break;
	case NORM_REPLACE: {
		Seg *seg;
		int n = find_matches(t, &nm->re, *s, *len, &seg, err);
		if (n < 0)
			return -1;
		strbuf_puts(&b, "");
		for (int i = 0; i < n; i++) {
			if (seg[i].m)
				strbuf_puts(&b, nm->str);
			else
				strbuf_add(&b, *s + seg[i].a, seg[i].b - seg[i].a);
		}
		free(seg);
		break;
	}
	default:
		if ((out = unicode_normalize(nm->kind, *s, *len, &olen)) == NULL) {
			*err = strdup(_("out of memory"));
			return -1;
		}
		free(*s);
		*s = out;
		*len = olen;
		return 0;
	}
	if (b.s == NULL) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	free(*s);
	*len = b.len;
	*s = b.s;
	return 0;
}

static int normalize(const Tokenizer *t, char **s, size_t *len, char **err)
{
	for (int i = 0; i < t->nnorm; i++)
		if (normalize_one(t, &t->norm[i], s, len, err) != 0)
			return -1;
	return 0;
}

/* ---- pre-tokenizers ---- */

/* Pieces through one pre-tokenizer into *out. Returns 0, or -1 with *err. */
static int pre_one(const Tokenizer *t, const Pre *p, const Pieces *in, Pieces *out, char **err)
{
	for (int i = 0; i < in->n && !out->oom; i++) {
		const Piece *pc = &in->v[i];
		char *s = pc->s, *own = NULL;
		size_t len = pc->len;
		Seg *seg = NULL;
		int n;

		if (p->kind == PRE_METASPACE) {
			StrBuf b = {0};
			int starts = s[0] == ' ' || (strlen(p->repl) <= len && memcmp(s, p->repl, strlen(p->repl)) == 0);
			if (!starts && (p->prepend == PREPEND_ALWAYS || (p->prepend == PREPEND_FIRST && pc->first)))
				strbuf_puts(&b, p->repl);
			for (size_t k = 0; k < len; k++)
				if (s[k] == ' ')
					strbuf_puts(&b, p->repl);
				else
					strbuf_add(&b, s + k, 1);
			if (b.s == NULL)
				goto oom;
			s = own = b.s;
			len = b.len;
			if (!p->split) {
				pieces_add(out, s, len, pc->first);
				free(own);
				continue;
			}
			/* split before each replacement character: the library's MergedWithNext */
			size_t start = 0, rl = strlen(p->repl);
			for (size_t k = 1; k + rl <= len; k++)
				if (memcmp(s + k, p->repl, rl) == 0) {
					pieces_add(out, s + start, k - start, pc->first && start == 0);
					start = k;
				}
			pieces_add(out, s + start, len - start, pc->first && start == 0);
			free(own);
			continue;
		}
		if (p->kind == PRE_BYTELEVEL && p->add_prefix_space && s[0] != ' ') {
			if ((own = malloc(len + 2)) == NULL)
				goto oom;
			own[0] = ' ';
			memcpy(own + 1, s, len + 1);
			s = own;
			len++;
		}
		if (p->kind == PRE_BYTELEVEL && !p->use_regex) {
			seg = malloc(sizeof *seg);
			if (seg == NULL)
				goto oom;
			seg[0] = (Seg){0, len, 0};
			n = 1;
		} else {
			n = find_matches(t, &p->re, s, len, &seg, err);
			if (n < 0) {
				free(own);
				return -1;
			}
			n = split_behave(seg, n, p->behavior, p->invert);
		}
		for (int k = 0; k < n; k++) {
			const char *w = s + seg[k].a;
			size_t wl = seg[k].b - seg[k].a;
			int first = pc->first && seg[k].a == 0;
			if (p->kind != PRE_BYTELEVEL) {
				pieces_add(out, w, wl, first);
				continue;
			}
			/* each byte as GPT-2's character for it */
			char *m = malloc(wl * 2 + 1), *q = m;
			if (m == NULL) {
				free(seg);
				free(own);
				goto oom;
			}
			for (size_t j = 0; j < wl; j++)
				q += utf8_put(q, byte_char[(unsigned char)w[j]]);
			pieces_add(out, m, (size_t)(q - m), first);
			free(m);
		}
		free(seg);
		free(own);
	}
	if (out->oom)
		goto oom;
	return 0;
oom:
	*err = strdup(_("out of memory"));
	return -1;
}

/* ---- the model: BPE ---- */

typedef struct Sym {
	int id, prev, next, len;
} Sym;

typedef struct Merge {
	int rank, pos, id;
} Merge;

static int merge_before(const Merge *x, const Merge *y)
{
	return x->rank != y->rank ? x->rank < y->rank : x->pos < y->pos;
}

static void heap_push(Merge *h, int *n, Merge m)
{
	int i = (*n)++;
	h[i] = m;
	while (i > 0 && merge_before(&h[i], &h[(i - 1) / 2])) {
		Merge x = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = x;
		i = (i - 1) / 2;
	}
}

static Merge heap_pop(Merge *h, int *n)
{
	Merge top = h[0];
	int i = 0;
	h[0] = h[--*n];
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < *n && merge_before(&h[l], &h[m]))
			m = l;
		if (r < *n && merge_before(&h[r], &h[m]))
			m = r;
		if (m == i)
			break;
		Merge x = h[i];
		h[i] = h[m];
		h[m] = x;
		i = m;
	}
	return top;
}

static void sym_add(Sym *v, int *n, int id, int len)
{
	v[*n] = (Sym){id, *n - 1, -1, len};
	if (*n > 0)
		v[*n - 1].next = *n;
	(*n)++;
}

/* One word (a piece after the pre-tokenizers) to ids, as the library's BPE::merge_word and Word::merge_all. */
static int bpe_word(const Tokenizer *t, const char *w, size_t len, Ids *out, char **err)
{
	Sym *sym;
	Merge *heap;
	int n = 0, nh = 0, unk_open = 0, unk_len = 0;
	char buf[TOK_MAX_TOKEN * 2 + 16];

	if (t->ignore_merges) {
		int id = vocab_find(t, w, len);
		if (id >= 0) {
			ids_add(out, id);
			return 0;
		}
	}
	/* at most 4 byte tokens a character, and a heap entry for each pair made */
	sym = malloc((len * 4 + 1) * sizeof *sym);
	heap = malloc((len * 4 * 3 + 1) * sizeof *heap);
	if (sym == NULL || heap == NULL) {
		free(sym);
		free(heap);
		*err = strdup(_("out of memory"));
		return -1;
	}
	for (size_t i = 0; i < len;) {
		unsigned cp;
		int k = utf8_next(w + i, len - i, &cp), id;
		size_t bl = 0;
		if (i > 0 && t->prefix)
			bl += (size_t)snprintf(buf, sizeof buf, "%s", t->prefix);
		memcpy(buf + bl, w + i, (size_t)k);
		bl += (size_t)k;
		if (i + (size_t)k == len && t->suffix)
			bl += (size_t)snprintf(buf + bl, sizeof buf - bl, "%s", t->suffix);
		id = vocab_find(t, buf, bl);
		if (id >= 0) {
			if (unk_open)
				sym_add(sym, &n, t->unk, unk_len);
			unk_open = 0;
			sym_add(sym, &n, id, k);
		} else {
			int all = t->byte_fallback;
			for (int j = 0; j < k && all; j++)
				all = t->byte_tok[(unsigned char)w[i + (size_t)j]] >= 0;
			if (all) {
				if (unk_open)
					sym_add(sym, &n, t->unk, unk_len);
				unk_open = 0;
				for (int j = 0; j < k; j++)
					sym_add(sym, &n, t->byte_tok[(unsigned char)w[i + (size_t)j]], 1);
			} else if (t->unk >= 0) {
				if (unk_open && t->fuse_unk)
					unk_len += k;
				else {
					if (unk_open)
						sym_add(sym, &n, t->unk, unk_len);
					unk_open = 1;
					unk_len = k;
				}
			}
		}
		i += (size_t)k;
	}
	if (unk_open)
		sym_add(sym, &n, t->unk, unk_len);

	for (int i = 0; i + 1 < n; i++) {
		int id, r = merge_find(t, sym[i].id, sym[i + 1].id, &id);
		if (r >= 0)
			heap_push(heap, &nh, (Merge){r, i, id});
	}
	while (nh > 0) {
		Merge top = heap_pop(heap, &nh);
		Sym *s = &sym[top.pos];
		int id, nx = s->next;
		if (s->len == 0 || nx < 0)
			continue;
		if (merge_find(t, s->id, sym[nx].id, &id) < 0 || id != top.id)
			continue;
		s->id = top.id;
		s->len += sym[nx].len;
		s->next = sym[nx].next;
		sym[nx].len = 0;
		if (s->next >= 0)
			sym[s->next].prev = top.pos;
		if (s->prev >= 0) {
			int r = merge_find(t, sym[s->prev].id, s->id, &id);
			if (r >= 0)
				heap_push(heap, &nh, (Merge){r, s->prev, id});
		}
		if (s->next >= 0) {
			int r = merge_find(t, s->id, sym[s->next].id, &id);
			if (r >= 0)
				heap_push(heap, &nh, (Merge){r, top.pos, id});
		}
	}
	for (int i = 0; i < n; i = sym[i].next) {
		ids_add(out, sym[i].id);
		if (sym[i].next < 0)
			break;
	}
	free(sym);
	free(heap);
	return 0;
}

/* ---- encoding ---- */

/* Text after the added tokens are cut out: through the normalizers, pre-tokenizers and BPE. */
static int encode_plain(const Tokenizer *t, const char *s, size_t len, int first, int normalized, Ids *out,
                        char **err);

/*
 * The added tokens of one kind (normalized or not) cut out of s[0..len),
 * the longest at the leftmost place; the text between goes on to
 * encode_plain.
 */
static int split_added(const Tokenizer *t, const char *s, size_t len, int first, int normalized, Ids *out, char **err)
{
	size_t from = 0, i = 0;

	while (i < len) {
		const Added *best = NULL;
		for (int k = 0; k < t->nadded && t->starts[normalized][(unsigned char)s[i]]; k++) {
			const Added *a = &t->added[k];
			if (a->normalized == normalized && a->len > 0 && a->len <= len - i && (best == NULL || a->len > best->len) &&
			    memcmp(s + i, a->content, a->len) == 0)
				best = a;
		}
		if (best == NULL) {
			unsigned cp;
			i += (size_t)utf8_next(s + i, len - i, &cp);
			continue;
		}
		size_t a = i, b = i + best->len;
		if (best->lstrip)
			while (a > from) {
				size_t k = a - 1;
				unsigned cp;
				while (k > from && ((unsigned char)s[k] & 0xC0) == 0x80)
					k--;
				utf8_next(s + k, len - k, &cp);
				if (!is_space(cp))
					break;
				a = k;
			}
		if (best->rstrip)
			while (b < len) {
				unsigned cp;
				int k = utf8_next(s + b, len - b, &cp);
				if (!is_space(cp))
					break;
				b += (size_t)k;
			}
		if (a > from && encode_plain(t, s + from, a - from, first && from == 0, normalized, out, err) != 0)
			return -1;
		ids_add(out, best->id);
		from = i = b;
	}
	if (len > from)
		return encode_plain(t, s + from, len - from, first && from == 0, normalized, out, err);
	return 0;
}

static int encode_plain(const Tokenizer *t, const char *s, size_t len, int first, int normalized, Ids *out,
                        char **err)
{
	Pieces a = {0}, b = {0};
	int rc = -1;

	if (!normalized) {
		/* normalize, then cut out the added tokens that are looked for in normalized text */
		char *copy = malloc(len + 1);
		size_t nlen = len;
		if (copy == NULL) {
			*err = strdup(_("out of memory"));
			return -1;
		}
		memcpy(copy, s, len);
		copy[len] = '\0';
		if (normalize(t, &copy, &nlen, err) == 0)
			rc = split_added(t, copy, nlen, first, 1, out, err);
		free(copy);
		return rc;
	}
	pieces_add(&a, s, len, first);
	for (int i = 0; i < t->npre && !a.oom; i++) {
		if (pre_one(t, &t->pre[i], &a, &b, err) != 0)
			goto done;
		pieces_free(&a);
		a = b;
		memset(&b, 0, sizeof b);
	}
	if (a.oom) {
		*err = strdup(_("out of memory"));
		goto done;
	}
	for (int i = 0; i < a.n; i++)
		if (bpe_word(t, a.v[i].s, a.v[i].len, out, err) != 0)
			goto done;
	rc = 0;
done:
	pieces_free(&a);
	pieces_free(&b);
	return rc;
}

int tok_encode(const Tokenizer *t, const char *text, size_t len, int **ids, int *n, char **err)
{
	Ids out = {0};

	*err = NULL;
	*ids = NULL;
	*n = 0;
	if (len > (size_t)TOK_MAX_INPUT) {
		*err = str_printf(_("the text is %zu bytes, over the limit of %ld"), len, TOK_MAX_INPUT);
		return -1;
	}
	if (!text_valid_utf8(text, len)) {
		size_t i = 0;
		while (i < len) {
			unsigned cp;
			int k = utf8_next(text + i, len - i, &cp);
			if (k == 1 && (unsigned char)text[i] >= 0x80)
				break;
			i += (size_t)k;
		}
		*err = str_printf(_("the text is not valid UTF-8 (byte 0x%02x at byte %zu): attnviz encodes UTF-8 text"),
		                  i < len ? (unsigned char)text[i] : 0, i);
		return -1;
	}
	for (int i = 0; i < t->nbefore; i++)
		ids_add(&out, t->before[i]);
	if (split_added(t, text, len, 1, 0, &out, err) != 0) {
		free(out.v);
		return -1;
	}
	for (int i = 0; i < t->nafter; i++)
		ids_add(&out, t->after[i]);
	if (out.oom) {
		free(out.v);
		*err = strdup(_("out of memory"));
		return -1;
	}
	if (out.v == NULL && (out.v = malloc(sizeof *out.v)) == NULL) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	*ids = out.v;
	*n = out.n;
	return 0;
}

/* ---- reading the file ---- */

/* The "type" of a component at the current path, or NULL with the error recorded. */
static const char *type_of(JrCtx *c, const cJSON *v, const char *what)
{
	const cJSON *ty = cJSON_IsObject(v) ? jr_get(v, "type") : NULL;
	if (!cJSON_IsString(ty)) {
		jr_fail(c, _("expected a %s: an object with a \"type\", got %s"), what, jr_got(ty ? ty : v).s);
		return NULL;
	}
	return ty->valuestring;
}

static int unsupported(JrCtx *c, const char *type, const char *known)
{
	size_t old = jr_path_key(c, "type");
	return jr_leave(c, old, jr_fail(c, _("%s is not supported: attnviz reads %s"), jr_quoted(type).s, known));
}

/* An optional true or false; absent: dflt. */
static int key_bool(JrCtx *c, const cJSON *v, const char *key, int dflt, int *out)
{
	size_t old;
	const cJSON *e = enter(c, v, key, &old);
	*out = dflt;
	if (e == NULL)
		return 0;
	if (cJSON_IsNull(e))
		return jr_leave(c, old, 0);
	if (!cJSON_IsBool(e))
		return jr_leave(c, old, jr_fail(c, _("expected true or false, got %s"), jr_got(e).s));
	*out = cJSON_IsTrue(e);
	return jr_leave(c, old, 0);
}

/* A Sequence: the components of the array v[key] ("normalizers": […]), each read by read. */
typedef int (*ReadPart)(Tokenizer *t, JrCtx *c, const cJSON *v);
static int read_sequence(Tokenizer *t, JrCtx *c, const cJSON *v, const char *key, const char *what, ReadPart read)
{
	const char *const keys[] = {"type", key, NULL};
	size_t old;
	const cJSON *e;

	if (jr_refuse_unknown_keys(c, v, keys, _("key")) != 0)
		return -1;
	e = enter(c, v, key, &old);
	if (!cJSON_IsArray(e))
		return jr_leave(c, old, jr_fail(c, _("expected an array of %s, got %s"), what, jr_got(e).s));
	for (int i = 0; i < cJSON_GetArraySize(e); i++) {
		size_t o2 = jr_path_index(c, i);
		if (read(t, c, cJSON_GetArrayItem(e, i)) != 0)
			return -1;
		jr_path_set(c, o2);
	}
	return jr_leave(c, old, 0);
}

static int read_normalizer(Tokenizer *t, JrCtx *c, const cJSON *v)
{
	static const char *const names[] = {"Prepend", "Replace", "NFC", "NFD", "NFKC", "NFKD", "Sequence", NULL};
	const char *type;
	size_t old;
	const cJSON *e;

	if (cJSON_IsNull(v))
		return 0;
	if ((type = type_of(c, v, _("normalizer"))) == NULL)
		return -1;
	if (strcmp(type, "Sequence") == 0)
		return read_sequence(t, c, v, "normalizers", _("normalizers"), read_normalizer);
	int kind = -1;
	for (int k = 0; names[k]; k++)
		if (strcmp(type, names[k]) == 0)
			kind = k;
	if (kind < 0 || kind > NORM_NFKD)
		return unsupported(c, type, "Prepend, Replace, NFC, NFD, NFKC, NFKD, Sequence");
	if (t->nnorm == TOK_MAX_PARTS)
		return jr_fail(c, _("more than %d normalizers"), TOK_MAX_PARTS);
	Norm *nm = &t->norm[t->nnorm++];
	nm->kind = kind;
	if (kind == NORM_PREPEND) {
		static const char *const keys[] = {"type", "prepend", NULL};
		if (jr_refuse_unknown_keys(c, v, keys, _("key")) != 0)
			return -1;
		e = enter(c, v, "prepend", &old);
		return jr_leave(c, old, jr_read_string(c, e, &nm->str));
	}
	if (kind == NORM_REPLACE) {
		static const char *const keys[] = {"type", "pattern", "content", NULL};
		if (jr_refuse_unknown_keys(c, v, keys, _("key")) != 0)
			return -1;
		e = enter(c, v, "pattern", &old);
		if (read_pattern(c, e, &nm->re) != 0)
			return jr_leave(c, old, -1);
		jr_path_set(c, old);
		e = enter(c, v, "content", &old);
		return jr_leave(c, old, jr_read_string(c, e, &nm->str));
	}
	static const char *const keys[] = {"type", NULL};
	return jr_refuse_unknown_keys(c, v, keys, _("key"));
}

static const char *const gpt2_regex =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static int read_pre(Tokenizer *t, JrCtx *c, const cJSON *v)
{
	const char *type;
	size_t old;
	const cJSON *e;
	Pre *p;

	if (cJSON_IsNull(v))
		return 0;
	if ((type = type_of(c, v, _("pre-tokenizer"))) == NULL)
		return -1;
	if (strcmp(type, "Sequence") == 0)
		return read_sequence(t, c, v, "pretokenizers", _("pre-tokenizers"), read_pre);
	if (strcmp(type, "ByteLevel") != 0 && strcmp(type, "Split") != 0 && strcmp(type, "Metaspace") != 0 &&
	    strcmp(type, "Digits") != 0)
		return unsupported(c, type, "ByteLevel, Split, Metaspace, Digits, Sequence");
	if (t->npre == TOK_MAX_PARTS)
		return jr_fail(c, _("more than %d pre-tokenizers"), TOK_MAX_PARTS);
	p = &t->pre[t->npre++];
	p->behavior = SPLIT_ISOLATED;
	if (strcmp(type, "ByteLevel") == 0) {
		static const char *const keys[] = {"type", "add_prefix_space", "trim_offsets", "use_regex", NULL};
		p->kind = PRE_BYTELEVEL;
		t->byte_level = 1;
		if (jr_refuse_unknown_keys(c, v, keys, _("key")) != 0 ||
		    key_bool(c, v, "add_prefix_space", 1, &p->add_prefix_space) != 0 ||
		    key_bool(c, v, "use_regex", 1, &p->use_regex) != 0)
			return -1;
		if (p->use_regex && (p->re.code = regex_compile(c, gpt2_regex, 0)) == NULL)
			return -1;
		if (p->use_regex && (p->re.where = str_printf("%s (ByteLevel's regex)", c->path)) == NULL)
			return jr_fail_oom(c);
		return 0;
	}
	if (strcmp(type, "Digits") == 0) {
		static const char *const keys[] = {"type", "individual_digits", NULL};
		int each;
		p->kind = PRE_DIGITS;
		if (jr_refuse_unknown_keys(c, v, keys, _("key")) != 0 ||
		    key_bool(c, v, "individual_digits", 0, &each) != 0)
			return -1;
		if ((p->re.code = regex_compile(c, each ? "\\p{N}" : "\\p{N}+", 0)) == NULL)
			return -1;
		if ((p->re.where = str_printf("%s (Digits)", c->path)) == NULL)
			return jr_fail_oom(c);
		return 0;
	}
	if (strcmp(type, "Split") == 0) {
		static const char *const keys[] = {"type", "pattern", "behavior", "invert", NULL};
		static const char *const behaviors[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
		                                        "Contiguous", NULL};
		p->kind = PRE_SPLIT;
		if (jr_refuse_unknown_keys(c, v, keys, _("key")) != 0)
			return -1;
		e = enter(c, v, "pattern", &old);
		if (e == NULL)
			return jr_fail(c, _("no \"pattern\": a Split needs one"));
		if (read_pattern(c, e, &p->re) != 0)
			return jr_leave(c, old, -1);
		jr_path_set(c, old);
		if (jr_get(v, "behavior") == NULL)
			return jr_fail(c, _("no \"behavior\": a Split needs one"));
		if (jr_key_choice(c, v, "behavior", behaviors, &p->behavior) != 0)
			return -1;
		return key_bool(c, v, "invert", 0, &p->invert);
	}
	/* Metaspace */
	static const char *const keys[] = {"type", "replacement", "prepend_scheme", "split", "add_prefix_space",
	                                   "str_rep", NULL};
	static const char *const schemes[] = {"always", "first", "never", NULL};
	char *r = NULL;
	int add = 1;
	p->kind = PRE_METASPACE;
	if (jr_refuse_unknown_keys(c, v, keys, _("key")) != 0)
		return -1;
	e = enter(c, v, "replacement", &old);
	if (e == NULL)
		strcpy(p->repl, "\u2581");
	else {
		unsigned cp;
		if (jr_read_string(c, e, &r) != 0)
			return jr_leave(c, old, -1);
		if (r[0] == '\0' || (size_t)utf8_next(r, strlen(r), &cp) != strlen(r) || cp == ' ') {
			jr_fail(c, _("expected one character (not a space), got %s"), jr_got(e).s);
			free(r);
			return jr_leave(c, old, -1);
		}
		strcpy(p->repl, r);
		free(r);
		jr_path_set(c, old);
	}
	if (key_bool(c, v, "add_prefix_space", 1, &add) != 0 || key_bool(c, v, "split", 1, &p->split) != 0)
		return -1;
	p->prepend = add ? PREPEND_ALWAYS : PREPEND_NEVER;
	if (jr_get(v, "prepend_scheme") != NULL && jr_key_choice(c, v, "prepend_scheme", schemes, &p->prepend) != 0)
		return -1;
	return 0;
}

/* A token named by the post-processor: its id as the file says, which must be a token's. */
static int post_ids(Tokenizer *t, JrCtx *c, int **v, int *n, int id)
{
	int *w = realloc(*v, (size_t)(*n + 1) * sizeof *w);
	if (w == NULL)
		return jr_fail_oom(c);
	*v = w;
	w[(*n)++] = id;
	(void)t;
	return 0;
}

/* [TOKEN, ID] of RobertaProcessing and BertProcessing. */
static int read_pair(Tokenizer *t, JrCtx *c, const cJSON *v, const char *key, int *id)
{
	size_t old;
	long long x;
	const cJSON *e = enter(c, v, key, &old);
	if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(cJSON_GetArrayItem(e, 0)))
		return jr_leave(c, old, jr_fail(c, _("expected [TOKEN, ID], got %s"), jr_got(e).s));
	jr_path_index(c, 1);
	if (jr_read_whole(c, cJSON_GetArrayItem(e, 1), 0, t->nvocab - 1, _("an id of the vocabulary"), &x) != 0)
		return -1;
	*id = (int)x;
	return jr_leave(c, old, 0);
}

static int read_post(Tokenizer *t, JrCtx *c, const cJSON *v)
{
	const char *type;
	size_t old;
	const cJSON *e;

	if (cJSON_IsNull(v))
		return 0;
	if ((type = type_of(c, v, _("post-processor"))) == NULL)
		return -1;
	if (strcmp(type, "Sequence") == 0)
		return read_sequence(t, c, v, "processors", _("post-processors"), read_post);
	if (strcmp(type, "ByteLevel") == 0) { /* it changes the offsets, not the ids */
		static const char *const keys[] = {"type", "add_prefix_space", "trim_offsets", "use_regex", NULL};
		return jr_refuse_unknown_keys(c, v, keys, _("key"));
	}
	if (strcmp(type, "RobertaProcessing") == 0 || strcmp(type, "BertProcessing") == 0) {
		static const char *const keys[] = {"type", "sep", "cls", "trim_offsets", "add_prefix_space", NULL};
		int cls, sep;
		if (jr_refuse_unknown_keys(c, v, keys, _("key")) != 0 || read_pair(t, c, v, "cls", &cls) != 0 ||
		    read_pair(t, c, v, "sep", &sep) != 0)
			return -1;
		/* [cls] before what came before, [sep] after what comes after */
		int *w = realloc(t->before, (size_t)(t->nbefore + 1) * sizeof *w);
		if (w == NULL)
			return jr_fail_oom(c);
		memmove(w + 1, w, (size_t)t->nbefore * sizeof *w);
		w[0] = cls;
		t->before = w;
		t->nbefore++;
		return post_ids(t, c, &t->after, &t->nafter, sep);
	}
	if (strcmp(type, "TemplateProcessing") != 0)
		return unsupported(c, type,
		                   "TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel, Sequence");
	static const char *const keys[] = {"type", "single", "pair", "special_tokens", NULL};
	if (jr_refuse_unknown_keys(c, v, keys, _("key")) != 0)
		return -1;
	const cJSON *specials = jr_get(v, "special_tokens"), *item;
	int *pre = NULL, npre = 0, *post = NULL, npost = 0, seen = 0, i = 0;
	e = enter(c, v, "single", &old);
	if (!cJSON_IsArray(e))
		return jr_leave(c, old, jr_fail(c, _("expected the template, an array of {\"SpecialToken\"} and "
		                                     "{\"Sequence\"}, got %s"), jr_got(e).s));
	cJSON_ArrayForEach(item, e) {
		size_t o2 = jr_path_index(c, i++);
		const cJSON *sp = jr_get(item, "SpecialToken"), *sq = jr_get(item, "Sequence");
		if (cJSON_IsObject(sq) && cJSON_GetArraySize(item) == 1) {
			const cJSON *id = jr_get(sq, "id");
			if (!cJSON_IsString(id) || strcmp(id->valuestring, "A") != 0 || seen) {
				jr_path_append(c, ".Sequence.id");
				jr_fail(c, _("expected \"A\" once (the text), got %s"), jr_got(id).s);
				break;
			}
			seen = 1;
		} else if (cJSON_IsObject(sp) && cJSON_GetArraySize(item) == 1) {
			const cJSON *id = jr_get(sp, "id"), *st = cJSON_IsString(id) ? jr_get(specials, id->valuestring) : NULL;
			const cJSON *ids = jr_get(st, "ids"), *x;
			if (!cJSON_IsArray(ids)) {
				jr_path_append(c, ".SpecialToken.id");
				jr_fail(c, _("expected the name of one of special_tokens, got %s"), jr_got(id).s);
				break;
			}
			jr_path_set(c, old);
			jr_path_append(c, ".special_tokens.%s.ids", jr_quoted(id->valuestring).s);
			int k = 0;
			cJSON_ArrayForEach(x, ids) {
				long long n;
				size_t o3 = jr_path_index(c, k++);
				if (jr_read_whole(c, x, 0, t->nvocab - 1, _("an id of the vocabulary"), &n) != 0 ||
				    post_ids(t, c, seen ? &post : &pre, seen ? &npost : &npre, (int)n) != 0)
					break;
				jr_path_set(c, o3);
			}
			if (c->err)
				break;
			jr_path_set(c, old);
			jr_path_key(c, "single");
		} else {
			jr_fail(c, _("expected {\"SpecialToken\": {…}} or {\"Sequence\": {…}}, got %s"), jr_got(item).s);
			break;
		}
		jr_path_set(c, o2);
	}
	if (c->err == NULL && !seen)
		jr_fail(c, _("the template has no {\"Sequence\": {\"id\": \"A\"}}: where does the text go?"));
	if (c->err == NULL) {
		/* this template around what the processors before it made */
		int *b = realloc(t->before, (size_t)(t->nbefore + npre + 1) * sizeof *b);
		int *a = realloc(t->after, (size_t)(t->nafter + npost + 1) * sizeof *a);
		if (b)
			t->before = b;
		if (a)
			t->after = a;
		if (a == NULL || b == NULL)
			jr_fail_oom(c);
		else {
			memmove(b + npre, b, (size_t)t->nbefore * sizeof *b);
			if (npre)
				memcpy(b, pre, (size_t)npre * sizeof *b);
			if (npost)
				memcpy(a + t->nafter, post, (size_t)npost * sizeof *a);
			t->nbefore += npre;
			t->nafter += npost;
		}
	}
	free(pre);
	free(post);
	return jr_leave(c, old, c->err ? -1 : 0);
}

/* A text of the vocabulary or a merge: at most TOK_MAX_TOKEN bytes of UTF-8. */
static int token_text_ok(JrCtx *c, const char *s)
{
	size_t len = strlen(s);
	if (len > TOK_MAX_TOKEN)
		return jr_fail(c, _("a token of %zu bytes, over the limit of %d"), len, TOK_MAX_TOKEN);
	if (!text_valid_utf8(s, len))
		return jr_fail(c, _("a token that is not valid UTF-8"));
	return 0;
}

static int read_vocab(Tokenizer *t, JrCtx *c, const cJSON *vocab)
{
	const cJSON *e;
	int n = 0, max = -1;
	char expect[64];

	snprintf(expect, sizeof expect, _("an id from 0 to %ld"), TOK_MAX_VOCAB - 1);
	if (!cJSON_IsObject(vocab))
		return jr_fail(c, _("expected the vocabulary, an object {\"TOKEN\": ID, …}, got %s"), jr_got(vocab).s);
	cJSON_ArrayForEach(e, vocab) {
		long long x;
		size_t old = jr_path_append(c, ".%s", jr_quoted(e->string).s);
		if (token_text_ok(c, e->string) != 0 || jr_read_whole(c, e, 0, (double)TOK_MAX_VOCAB - 1, expect, &x) != 0)
			return -1;
		jr_path_set(c, old);
		max = (int)x > max ? (int)x : max;
		n++;
	}
	if (n == 0)
		return jr_fail(c, _("the vocabulary is empty"));
	t->nvocab = max + 1;
	t->smask = table_size(n) - 1;
	t->text = calloc((size_t)t->nvocab, sizeof *t->text);
	t->slot = calloc(t->smask + 1, sizeof *t->slot);
	if (t->text == NULL || t->slot == NULL)
		return jr_fail_oom(c);
	cJSON_ArrayForEach(e, vocab) {
		int id = (int)e->valuedouble;
		size_t len = strlen(e->string), old;
		if (t->text[id] != NULL || vocab_find(t, e->string, len) >= 0) {
			old = jr_path_append(c, ".%s", jr_quoted(e->string).s);
			if (t->text[id] != NULL)
				jr_fail(c, _("id %d is given to %s too"), id, jr_quoted(t->text[id]).s);
			else
				jr_fail(c, _("the token is given twice"));
			return jr_leave(c, old, -1);
		}
		if ((t->text[id] = strdup(e->string)) == NULL)
			return jr_fail_oom(c);
		size_t i = hash_bytes(e->string, len) & t->smask;
		while (t->slot[i] != 0)
			i = (i + 1) & t->smask;
		t->slot[i] = id + 1;
	}
	return 0;
}

/* One merge: "A B" or ["A", "B"]; its two tokens' ids in a, b. */
static int read_merge(Tokenizer *t, JrCtx *c, const cJSON *m, int *a, int *b, int *merged)
{
	char left[TOK_MAX_TOKEN + 1], right[TOK_MAX_TOKEN + 1], both[2 * TOK_MAX_TOKEN + 1];
	const char *pl = t->prefix ? t->prefix : "";
	size_t pn = strlen(pl);

	if (cJSON_IsString(m)) {
		const char *s = m->valuestring, *sp = strchr(s, ' ');
		if (sp == NULL || strchr(sp + 1, ' ') != NULL || sp == s || sp[1] == '\0' ||
		    (size_t)(sp - s) > TOK_MAX_TOKEN || strlen(sp + 1) > TOK_MAX_TOKEN)
			return jr_fail(c, _("expected \"A B\" (two tokens, one space between) or [\"A\", \"B\"], got %s"),
			               jr_got(m).s);
		memcpy(left, s, (size_t)(sp - s));
		left[sp - s] = '\0';
		strcpy(right, sp + 1);
	} else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(cJSON_GetArrayItem(m, 0)) &&
	           cJSON_IsString(cJSON_GetArrayItem(m, 1)) &&
	           strlen(cJSON_GetArrayItem(m, 0)->valuestring) <= TOK_MAX_TOKEN &&
	           strlen(cJSON_GetArrayItem(m, 1)->valuestring) <= TOK_MAX_TOKEN) {
		strcpy(left, cJSON_GetArrayItem(m, 0)->valuestring);
		strcpy(right, cJSON_GetArrayItem(m, 1)->valuestring);
	} else
		return jr_fail(c, _("expected \"A B\" (two tokens, one space between) or [\"A\", \"B\"], got %s"), jr_got(m).s);
	*a = vocab_find(t, left, strlen(left));
	*b = vocab_find(t, right, strlen(right));
	if (*a < 0 || *b < 0)
		return jr_fail(c, _("%s names %s, which is not in model.vocab"), jr_got(m).s,
		               jr_quoted(*a < 0 ? left : right).s);
	/* the token they make: with a continuing_subword_prefix, the right one's is dropped */
	snprintf(both, sizeof both, "%s%s", left, pn && strncmp(right, pl, pn) == 0 ? right + pn : right);
	*merged = vocab_find(t, both, strlen(both));
	if (*merged < 0)
		return jr_fail(c, _("%s makes %s, which is not in model.vocab"), jr_got(m).s, jr_quoted(both).s);
	return 0;
}

static int read_model(Tokenizer *t, JrCtx *c, const cJSON *model)
{
	static const char *const keys[] = {"type", "dropout", "unk_token", "continuing_subword_prefix",
	                                   "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges", "vocab",
	                                   "merges", NULL};
	const char *type;
	const cJSON *e;
	size_t old;
	char *s = NULL;

	if (model == NULL)
		return jr_fail(c, _("no \"model\": a tokenizer.json has its model (\"type\": \"BPE\", the vocab, the merges)"));
	if ((type = type_of(c, model, _("model"))) == NULL)
		return -1;
	if (strcmp(type, "BPE") != 0)
		return unsupported(c, type, "BPE (GPT-2, Llama, Qwen, SmolLM2)");
	if (jr_refuse_unknown_keys(c, model, keys, _("key")) != 0)
		return -1;
	e = enter(c, model, "dropout", &old);
	if (e != NULL && !cJSON_IsNull(e) && !(cJSON_IsNumber(e) && e->valuedouble == 0))
		return jr_leave(c, old, jr_fail(c, _("BPE dropout is random (got %s): attnviz encodes a text one way"),
		                                jr_got(e).s));
	jr_path_set(c, old);
	if (key_bool(c, model, "fuse_unk", 0, &t->fuse_unk) != 0 ||
	    key_bool(c, model, "byte_fallback", 0, &t->byte_fallback) != 0 ||
	    key_bool(c, model, "ignore_merges", 0, &t->ignore_merges) != 0)
		return -1;
	for (int k = 0; k < 2; k++) {
		const char *key = k ? "end_of_word_suffix" : "continuing_subword_prefix";
		e = enter(c, model, key, &old);
		if (e != NULL && !cJSON_IsNull(e)) {
			if (jr_read_string(c, e, &s) != 0)
				return jr_leave(c, old, -1);
			if (strlen(s) > 64) {
				free(s);
				return jr_leave(c, old, jr_fail(c, _("expected at most 64 bytes, got %s"), jr_got(e).s));
			}
			if (s[0] == '\0') {
				free(s);
				s = NULL;
			}
			*(k ? &t->suffix : &t->prefix) = s;
		}
		jr_path_set(c, old);
	}
	e = enter(c, model, "vocab", &old);
	if (e == NULL)
		return jr_fail(c, _("no \"vocab\": a BPE model needs its vocabulary"));
	if (read_vocab(t, c, e) != 0)
		return -1;
	jr_path_set(c, old);
	for (int b = 0; b < 256; b++) {
		char name[8];
		snprintf(name, sizeof name, "<0x%02X>", b);
		t->byte_tok[b] = vocab_find(t, name, strlen(name));
	}
	t->unk = -1;
	e = enter(c, model, "unk_token", &old);
	if (e != NULL && !cJSON_IsNull(e)) {
		if (!cJSON_IsString(e) || (t->unk = vocab_find(t, e->valuestring, strlen(e->valuestring))) < 0)
			return jr_leave(c, old, jr_fail(c, _("expected a token of model.vocab, got %s"), jr_got(e).s));
	}
	jr_path_set(c, old);

	e = enter(c, model, "merges", &old);
	if (e == NULL)
		return jr_fail(c, _("no \"merges\": a BPE model needs its merges (an empty array for none)"));
	if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) > TOK_MAX_MERGES)
		return jr_leave(c, old, jr_fail(c, _("expected an array of at most %ld merges, got %s"), TOK_MAX_MERGES,
		                                jr_got(e).s));
	int n = cJSON_GetArraySize(e), rank = 0;
	const cJSON *m;
	t->mmask = table_size(n) - 1;
	t->mkey = malloc((t->mmask + 1) * sizeof *t->mkey);
	t->mrank = malloc((t->mmask + 1) * sizeof *t->mrank);
	t->mnew = malloc((t->mmask + 1) * sizeof *t->mnew);
	if (t->mkey == NULL || t->mrank == NULL || t->mnew == NULL)
		return jr_fail_oom(c);
	memset(t->mrank, 0xff, (t->mmask + 1) * sizeof *t->mrank); /* -1: empty */
	cJSON_ArrayForEach(m, e) {
		int a, b, merged;
		size_t o2 = jr_path_index(c, rank);
		if (read_merge(t, c, m, &a, &b, &merged) != 0)
			return -1;
		jr_path_set(c, o2);
		uint64_t key = (uint64_t)(unsigned)a << 32 | (unsigned)b;
		size_t i = hash_pair(key) & t->mmask;
		while (t->mrank[i] >= 0 && t->mkey[i] != key)
			i = (i + 1) & t->mmask;
		t->mkey[i] = key; /* a merge given twice keeps its later rank, as the library does */
		t->mrank[i] = rank++;
		t->mnew[i] = merged;
	}
	return jr_leave(c, old, 0);
}

static int read_added(Tokenizer *t, JrCtx *c, const cJSON *list)
{
	static const char *const keys[] = {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special",
	                                   NULL};
	const cJSON *e;
	int i = 0;
	char expect[64];

	if (list == NULL || cJSON_IsNull(list))
		return 0;
	if (!cJSON_IsArray(list))
		return jr_fail(c, _("expected an array of added tokens, got %s"), jr_got(list).s);
	snprintf(expect, sizeof expect, _("an id from 0 to %ld"), TOK_MAX_VOCAB - 1);
	t->added = calloc((size_t)cJSON_GetArraySize(list) + 1, sizeof *t->added);
	if (t->added == NULL)
		return jr_fail_oom(c);
	cJSON_ArrayForEach(e, list) {
		Added *a = &t->added[t->nadded];
		long long id;
		int single;
		size_t o2 = jr_path_index(c, i++), old;
		if (!cJSON_IsObject(e))
			return jr_fail(c, _("expected an added token {\"id\", \"content\", …}, got %s"), jr_got(e).s);
		if (jr_refuse_unknown_keys(c, e, keys, _("key")) != 0)
			return -1;
		if (jr_get(e, "id") == NULL || jr_get(e, "content") == NULL)
			return jr_fail(c, _("an added token needs its \"id\" and \"content\""));
		if (jr_key_whole(c, e, "id", 0, (double)TOK_MAX_VOCAB - 1, expect, &id) != 0)
			return -1;
		const cJSON *ct = enter(c, e, "content", &old);
		if (jr_read_string(c, ct, &a->content) != 0 || token_text_ok(c, a->content) != 0)
			return jr_leave(c, old, -1);
		if (a->content[0] == '\0')
			return jr_leave(c, old, jr_fail(c, _("an added token cannot be empty")));
		jr_path_set(c, old);
		a->id = (int)id;
		a->len = strlen(a->content);
		t->nadded++;
		if (key_bool(c, e, "single_word", 0, &single) != 0 || key_bool(c, e, "lstrip", 0, &a->lstrip) != 0 ||
		    key_bool(c, e, "rstrip", 0, &a->rstrip) != 0 || key_bool(c, e, "normalized", 0, &a->normalized) != 0 ||
		    key_bool(c, e, "special", 0, &a->special) != 0)
			return -1;
		if (single) {
			old = jr_path_key(c, "single_word");
			return jr_leave(c, old, jr_fail(c, _("single_word tokens are not supported")));
		}
		jr_path_set(c, o2);
	}
	return 0;
}

static void tok_free_parts(Tokenizer *t)
{
	for (int i = 0; i < t->nnorm; i++) {
		free(t->norm[i].str);
		regex_free(&t->norm[i].re);
	}
	for (int i = 0; i < t->npre; i++)
		regex_free(&t->pre[i].re);
}

void tok_free(Tokenizer *t)
{
	if (t == NULL)
		return;
	for (int i = 0; t->text && i < t->nvocab; i++)
		free(t->text[i]);
	for (int i = 0; t->shown && i < t->nvocab; i++)
		free(t->shown[i]);
	for (int i = 0; i < t->nadded; i++)
		free(t->added[i].content);
	tok_free_parts(t);
	free(t->text);
	free(t->shown);
	free(t->special);
	free(t->slot);
	free(t->mkey);
	free(t->mrank);
	free(t->mnew);
	free(t->added);
	free(t->prefix);
	free(t->suffix);
	free(t->before);
	free(t->after);
	pcre2_match_context_free(t->mctx);
	free(t->name);
	free(t);
}

static int read_root(Tokenizer *t, JrCtx *c, const cJSON *root)
{
	size_t old;
	const cJSON *e;

	if (!cJSON_IsObject(root))
		return jr_fail(c, _("expected a tokenizer, a JSON object with \"model\", got %s"), jr_got(root).s);
	e = enter(c, root, "model", &old);
	if (read_model(t, c, e) != 0)
		return -1;
	jr_path_set(c, old);
	e = enter(c, root, "added_tokens", &old);
	if (read_added(t, c, e) != 0)
		return -1;
	jr_path_set(c, old);
	/* the ids: the model's and the added tokens' */
	int n = t->nvocab;
	for (int i = 0; i < t->nadded; i++)
		n = t->added[i].id + 1 > n ? t->added[i].id + 1 : n;
	if (n > t->nvocab) {
		char **w = realloc(t->text, (size_t)n * sizeof *w);
		if (w == NULL)
			return jr_fail_oom(c);
		memset(w + t->nvocab, 0, (size_t)(n - t->nvocab) * sizeof *w);
		t->text = w;
		t->nvocab = n;
	}
	t->shown = calloc((size_t)n, sizeof *t->shown);
	t->special = calloc((size_t)n, 1);
	if (t->shown == NULL || t->special == NULL)
		return jr_fail_oom(c);
	for (int i = 0; i < t->nadded; i++) {
		Added *a = &t->added[i];
		t->special[a->id] |= (unsigned char)a->special;
		if (t->shown[a->id] == NULL && (t->shown[a->id] = strdup(a->content)) == NULL)
			return jr_fail_oom(c);
	}
	e = enter(c, root, "normalizer", &old);
	if (e != NULL && read_normalizer(t, c, e) != 0)
		return -1;
	jr_path_set(c, old);
	e = enter(c, root, "pre_tokenizer", &old);
	if (e != NULL && read_pre(t, c, e) != 0)
		return -1;
	jr_path_set(c, old);
	e = enter(c, root, "post_processor", &old);
	if (e != NULL && read_post(t, c, e) != 0)
		return -1;
	jr_path_set(c, old);
	e = jr_get(root, "decoder");
	if (cJSON_IsObject(e) && cJSON_IsString(jr_get(e, "type")) && strcmp(jr_get(e, "type")->valuestring, "ByteLevel") == 0)
		t->byte_level = 1; /* how its tokens are shown */
	/* the added tokens looked for in normalized text, normalized themselves */
	for (int i = 0; i < t->nadded; i++) {
		Added *a = &t->added[i];
		char *err = NULL;
		if (!a->normalized || t->nnorm == 0)
			continue;
		if (normalize(t, &a->content, &a->len, &err) != 0) {
			jr_fail(c, "%s", err);
			free(err);
			return -1;
		}
		/* normalized to nothing: never looked for (split_added passes over empty tokens) */
	}
	for (int i = 0; i < t->nadded; i++)
		if (t->added[i].len > 0)
			t->starts[t->added[i].normalized][(unsigned char)t->added[i].content[0]] = 1;
	return 0;
}

Tokenizer *tok_load_buf(const char *name, const char *buf, size_t len, char **err)
{
	Tokenizer *t = calloc(1, sizeof *t);
	JrCtx c;
	cJSON *root;

	*err = NULL;
	byte_table();
	if (t == NULL || (t->name = text_escape(name, "")) == NULL) {
		free(t);
		*err = strdup(_("out of memory"));
		return NULL;
	}
	t->mctx = pcre2_match_context_create(NULL);
	if (t->mctx == NULL) {
		tok_free(t);
		*err = strdup(_("out of memory"));
		return NULL;
	}
	pcre2_set_match_limit(t->mctx, MATCH_LIMIT);
	pcre2_set_depth_limit(t->mctx, MATCH_LIMIT / 10);
	root = jr_parse(t->name, buf, len, 0, "tokenizer.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": {…}, \"merges\": […]}}",
	                err);
	if (root == NULL) {
		tok_free(t);
		return NULL;
	}
	jr_ctx_init(&c, t->name, NULL);
	if (read_root(t, &c, root) != 0) {
		*err = c.err ? c.err : strdup(_("out of memory"));
		cJSON_Delete(root);
		tok_free(t);
		return NULL;
	}
	cJSON_Delete(root);
	return t;
}

Tokenizer *tok_load(const char *path, char **err)
{
	size_t len;
	char *buf = fileio_read_all(path, TOK_MAX_FILE, &len, err);
	Tokenizer *t;

	if (buf == NULL)
		return NULL;
	t = tok_load_buf(path, buf, len, err);
	free(buf);
	return t;
}

/* ---- what people see ---- */

int tok_vocab_size(const Tokenizer *t)
{
	return t->nvocab;
}

const char *tok_token(const Tokenizer *t, int id)
{
	if (id < 0 || id >= t->nvocab)
		return NULL;
	return t->shown[id] ? t->shown[id] : t->text[id];
}

int tok_id(const Tokenizer *t, const char *token)
{
	int id = vocab_find(t, token, strlen(token));
	for (int i = 0; id < 0 && i < t->nadded; i++)
		if (strcmp(t->added[i].content, token) == 0)
			id = t->added[i].id;
	return id;
}

int tok_is_special(const Tokenizer *t, int id)
{
	return id >= 0 && id < t->nvocab && t->special[id];
}

/* Bytes as people read them into b: characters where they form UTF-8, <0xNN> where not, controls escaped. */
static void show_bytes(StrBuf *b, const unsigned char *s, size_t len, int utf8, int space_dot)
{
	for (size_t i = 0; i < len;) {
		unsigned cp;
		int k = utf8_next((const char *)s + i, len - i, &cp);
		if (k == 1 && s[i] >= 0x80)
			strbuf_printf(b, "<0x%02X>", s[i]);
		else if (cp == ' ' && space_dot)
			strbuf_puts(b, utf8 ? "\u00b7" : " ");
		else if (cp == '\n')
			strbuf_puts(b, "\\n");
		else if (cp == '\t')
			strbuf_puts(b, "\\t");
		else if (cp == '\r')
			strbuf_puts(b, "\\r");
		else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F))
			strbuf_printf(b, "\\x%02x", cp);
		else if (cp >= 0x80 && !utf8)
			strbuf_printf(b, "\\u{%x}", cp);
		else {
			/* text_escape's rule for what a terminal must not get raw (bidi controls, …) */
			char one[8], *e;
			memcpy(one, s + i, (size_t)k);
			one[k] = '\0';
			e = text_escape(one, "");
			strbuf_puts(b, e ? e : "?");
			free(e);
		}
		i += (size_t)k;
	}
}

char *tok_display(const Tokenizer *t, int id, int utf8)
{
	StrBuf b = {0};
	const char *s = tok_token(t, id);

	if (s == NULL)
		return str_printf("<id %d?>", id);
	strbuf_puts(&b, "");
	if (t->shown[id] != NULL) {
		show_bytes(&b, (const unsigned char *)s, strlen(s), utf8, 0);
		return b.s;
	}
	size_t len = strlen(s), n = 0;
	unsigned char *raw = malloc(len + 1);
	if (raw == NULL) {
		free(b.s);
		return NULL;
	}
	unsigned v;
	if (t->byte_fallback && len == 6 && sscanf(s, "<0x%2X>", &v) == 1 && s[5] == '>')
		raw[n++] = (unsigned char)v;
	else
		for (size_t i = 0; i < len;) {
			unsigned cp;
			int k = utf8_next(s + i, len - i, &cp);
			if (t->byte_level && cp < 324 && char_byte[cp] >= 0)
				raw[n++] = (unsigned char)char_byte[cp];
			else if (!t->byte_level && cp == 0x2581)
				raw[n++] = ' ';
			else {
				memcpy(raw + n, s + i, (size_t)k);
				n += (size_t)k;
			}
			i += (size_t)k;
		}
	show_bytes(&b, raw, n, utf8, 1);
	free(raw);
	return b.s;
}
