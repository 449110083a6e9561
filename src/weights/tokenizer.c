/*
 * tokenizer.c: text encoded with a tokenizer.json's Tokenizer (tokenizer.h):
 * the added tokens cut out, the normalizers, pre-tokenizers, BPE and the
 * post-processor's tokens; and what the tokenizer's files share
 * (tokenizer_internal.h says which file does what).
 */
#include "weights/tokenizer_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include "base/i18n.h"
#include "base/strbuf.h"
#include "base/text.h"

/* GPT-2's table: byte b is written as code point tk_byte_char[b]; tk_char_byte inverts it (-1: none). */
unsigned short tk_byte_char[256];
short tk_char_byte[324];

void tk_byte_table(void)
{
	int n = 0;
	if (tk_byte_char['!'] != 0)
		return;
	for (int c = 0; c < 324; c++)
		tk_char_byte[c] = -1;
	for (int b = 0; b < 256; b++) {
		int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
		tk_byte_char[b] = (unsigned short)(printable ? b : 256 + n++);
		tk_char_byte[tk_byte_char[b]] = (short)b;
	}
}

/* ---- UTF-8 ---- */

/* The character at s (avail ≥ 1 bytes, valid UTF-8): its length, and the code point in *cp. */
int tk_utf8_next(const char *s, size_t avail, unsigned *cp)
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

uint64_t tk_hash_bytes(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

uint64_t tk_hash_pair(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

/* The model's id of a token's text, or -1. */
int tk_vocab_find(const Tokenizer *t, const char *s, size_t len)
{
	if (t->slot == NULL)
		return -1;
	for (size_t i = tk_hash_bytes(s, len) & t->smask;; i = (i + 1) & t->smask) {
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
	for (size_t i = tk_hash_pair(key) & t->mmask;; i = (i + 1) & t->mmask) {
		if (t->mrank[i] < 0)
			return -1;
		if (t->mkey[i] == key) {
			*merged = t->mnew[i];
			return t->mrank[i];
		}
	}
}

/* ---- regexes ---- */

/*
 * Each match of re in s[0..len), as (start, end, matched) segments covering
 * the whole text in order (the library's find_matches), into *seg (heap).
 * Empty matches are passed over. Returns the count, or -1 with *err.
 */
typedef struct Seg {
	size_t a, b;
	int m;
} Seg;

static int find_matches(const Tokenizer *t, const TkRegex *re, const char *s, size_t len, Seg **seg, char **err)
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
			at = a + (size_t)tk_utf8_next(s + a, len - a, &cp);
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
	case TK_SPLIT_REMOVED:
		for (int i = 0; i < n; i++)
			if (!v[i].m)
				v[k++] = v[i];
		return k;
	case TK_SPLIT_ISOLATED: return n;
	case TK_SPLIT_PREVIOUS: /* a match joins the piece before it */
		for (int i = 0; i < n; i++) {
			if (v[i].m && !prev && k > 0)
				v[k - 1].b = v[i].b;
			else
				v[k++] = v[i];
			prev = v[i].m;
		}
		return k;
	case TK_SPLIT_NEXT: /* a match joins the piece after it */
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
	default: /* TK_SPLIT_CONTIGUOUS: matches side by side are one piece */
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
	const UNormalizer2 *n = kind == TK_NORM_NFC    ? unorm2_getNFCInstance(&st)
	                        : kind == TK_NORM_NFD  ? unorm2_getNFDInstance(&st)
	                        : kind == TK_NORM_NFKC ? unorm2_getNFKCInstance(&st)
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
static int normalize_one(const Tokenizer *t, const TkNorm *nm, char **s, size_t *len, char **err)
{
	StrBuf b = {0};
	char *out;
	size_t olen;

	switch (nm->kind) {
	case TK_NORM_PREPEND:
		if (*len == 0)
			return 0;
		strbuf_puts(&b, nm->str);
		strbuf_add(&b, *s, *len);
		break;
	case TK_NORM_REPLACE: {
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

int tk_normalize(const Tokenizer *t, char **s, size_t *len, char **err)
{
	for (int i = 0; i < t->nnorm; i++)
		if (normalize_one(t, &t->norm[i], s, len, err) != 0)
			return -1;
	return 0;
}

/* ---- pre-tokenizers ---- */

/* Pieces through one pre-tokenizer into *out. Returns 0, or -1 with *err. */
static int pre_one(const Tokenizer *t, const TkPre *p, const Pieces *in, Pieces *out, char **err)
{
	for (int i = 0; i < in->n && !out->oom; i++) {
		const Piece *pc = &in->v[i];
		char *s = pc->s, *own = NULL;
		size_t len = pc->len;
		Seg *seg = NULL;
		int n;

		if (p->kind == TK_PRE_METASPACE) {
			StrBuf b = {0};
			int starts = s[0] == ' ' || (strlen(p->repl) <= len && memcmp(s, p->repl, strlen(p->repl)) == 0);
			if (!starts && (p->prepend == TK_PREPEND_ALWAYS || (p->prepend == TK_PREPEND_FIRST && pc->first)))
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
		if (p->kind == TK_PRE_BYTELEVEL && p->add_prefix_space && s[0] != ' ') {
			if ((own = malloc(len + 2)) == NULL)
				goto oom;
			own[0] = ' ';
			memcpy(own + 1, s, len + 1);
			s = own;
			len++;
		}
		if (p->kind == TK_PRE_BYTELEVEL && !p->use_regex) {
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
			if (p->kind != TK_PRE_BYTELEVEL) {
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
				q += utf8_put(q, tk_byte_char[(unsigned char)w[j]]);
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
		int id = tk_vocab_find(t, w, len);
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
		int k = tk_utf8_next(w + i, len - i, &cp), id;
		size_t bl = 0;
		if (i > 0 && t->prefix)
			bl += (size_t)snprintf(buf, sizeof buf, "%s", t->prefix);
		memcpy(buf + bl, w + i, (size_t)k);
		bl += (size_t)k;
		if (i + (size_t)k == len && t->suffix)
			bl += (size_t)snprintf(buf + bl, sizeof buf - bl, "%s", t->suffix);
		id = tk_vocab_find(t, buf, bl);
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
		const TkAdded *best = NULL;
		for (int k = 0; k < t->nadded && t->starts[normalized][(unsigned char)s[i]]; k++) {
			const TkAdded *a = &t->added[k];
			if (a->normalized == normalized && a->len > 0 && a->len <= len - i && (best == NULL || a->len > best->len) &&
			    memcmp(s + i, a->content, a->len) == 0)
				best = a;
		}
		if (best == NULL) {
			unsigned cp;
			i += (size_t)tk_utf8_next(s + i, len - i, &cp);
			continue;
		}
		size_t a = i, b = i + best->len;
		if (best->lstrip)
			while (a > from) {
				size_t k = a - 1;
				unsigned cp;
				while (k > from && ((unsigned char)s[k] & 0xC0) == 0x80)
					k--;
				tk_utf8_next(s + k, len - k, &cp);
				if (!is_space(cp))
					break;
				a = k;
			}
		if (best->rstrip)
			while (b < len) {
				unsigned cp;
				int k = tk_utf8_next(s + b, len - b, &cp);
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
		if (tk_normalize(t, &copy, &nlen, err) == 0)
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
			int k = tk_utf8_next(text + i, len - i, &cp);
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
