/*
 * tokenizer_read.c: a Hugging Face tokenizer.json read and checked into a
 * Tokenizer, every error at its JSON path (tokenizer.h; tokenizer_internal.h
 * says which file does what).
 */
#include "weights/tokenizer_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/i18n.h"
#include "base/jsonread.h"
#include "base/strbuf.h"
#include "base/text.h"

#define TOK_MAX_MERGES (4L * TOK_MAX_VOCAB)
#define MATCH_LIMIT    5000000 /* PCRE2's steps for one match: a regex that backtracks without end gives up */

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

/* A TkRegex for the value at the current path: {"Regex": "…"} or {"String": "…"}. */
static int read_pattern(JrCtx *c, const cJSON *v, TkRegex *re)
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

static void regex_free(TkRegex *re)
{
	pcre2_code_free(re->code);
	free(re->where);
}

/* ---- the vocabulary and the merges ---- */

static size_t table_size(long n)
{
	size_t size = 16;
	while (size < (size_t)n * 2)
		size *= 2;
	return size;
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
	*out = dflt;
	return jr_key_bool(c, v, key, 1, out);
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
	if (kind < 0 || kind > TK_NORM_NFKD)
		return unsupported(c, type, "Prepend, Replace, NFC, NFD, NFKC, NFKD, Sequence");
	if (t->nnorm == TOK_MAX_PARTS)
		return jr_fail(c, _("more than %d normalizers"), TOK_MAX_PARTS);
	TkNorm *nm = &t->norm[t->nnorm++];
	nm->kind = kind;
	if (kind == TK_NORM_PREPEND) {
		static const char *const keys[] = {"type", "prepend", NULL};
		if (jr_refuse_unknown_keys(c, v, keys, _("key")) != 0)
			return -1;
		e = enter(c, v, "prepend", &old);
		return jr_leave(c, old, jr_read_string(c, e, &nm->str));
	}
	if (kind == TK_NORM_REPLACE) {
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
	TkPre *p;

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
	p->behavior = TK_SPLIT_ISOLATED;
	if (strcmp(type, "ByteLevel") == 0) {
		static const char *const keys[] = {"type", "add_prefix_space", "trim_offsets", "use_regex", NULL};
		p->kind = TK_PRE_BYTELEVEL;
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
		p->kind = TK_PRE_DIGITS;
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
		p->kind = TK_PRE_SPLIT;
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
	p->kind = TK_PRE_METASPACE;
	if (jr_refuse_unknown_keys(c, v, keys, _("key")) != 0)
		return -1;
	e = enter(c, v, "replacement", &old);
	if (e == NULL)
		strcpy(p->repl, "\u2581");
	else {
		unsigned cp;
		if (jr_read_string(c, e, &r) != 0)
			return jr_leave(c, old, -1);
		if (r[0] == '\0' || (size_t)tk_utf8_next(r, strlen(r), &cp) != strlen(r) || cp == ' ') {
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
	p->prepend = add ? TK_PREPEND_ALWAYS : TK_PREPEND_NEVER;
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
		if (t->text[id] != NULL || tk_vocab_find(t, e->string, len) >= 0) {
			old = jr_path_append(c, ".%s", jr_quoted(e->string).s);
			if (t->text[id] != NULL)
				jr_fail(c, _("id %d is given to %s too"), id, jr_quoted(t->text[id]).s);
			else
				jr_fail(c, _("the token is given twice"));
			return jr_leave(c, old, -1);
		}
		if ((t->text[id] = strdup(e->string)) == NULL)
			return jr_fail_oom(c);
		size_t i = tk_hash_bytes(e->string, len) & t->smask;
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
	*a = tk_vocab_find(t, left, strlen(left));
	*b = tk_vocab_find(t, right, strlen(right));
	if (*a < 0 || *b < 0)
		return jr_fail(c, _("%s names %s, which is not in model.vocab"), jr_got(m).s,
		               jr_quoted(*a < 0 ? left : right).s);
	/* the token they make: with a continuing_subword_prefix, the right one's is dropped */
	snprintf(both, sizeof both, "%s%s", left, pn && strncmp(right, pl, pn) == 0 ? right + pn : right);
	*merged = tk_vocab_find(t, both, strlen(both));
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
		t->byte_tok[b] = tk_vocab_find(t, name, strlen(name));
	}
	t->unk = -1;
	e = enter(c, model, "unk_token", &old);
	if (e != NULL && !cJSON_IsNull(e)) {
		if (!cJSON_IsString(e) || (t->unk = tk_vocab_find(t, e->valuestring, strlen(e->valuestring))) < 0)
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
		size_t i = tk_hash_pair(key) & t->mmask;
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
		TkAdded *a = &t->added[t->nadded];
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
		TkAdded *a = &t->added[i];
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
		TkAdded *a = &t->added[i];
		char *err = NULL;
		if (!a->normalized || t->nnorm == 0)
			continue;
		if (tk_normalize(t, &a->content, &a->len, &err) != 0) {
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
	tk_byte_table();
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
