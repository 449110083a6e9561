/*
 * tokenizer_show.c: what people see of a Tokenizer (tokenizer.h): the
 * vocabulary asked by id and by token, and a token as people read it
 * (tokenizer_internal.h says which file does what).
 */
#include "weights/tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/text.h"

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
	int id = tk_vocab_find(t, token, strlen(token));
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
		int k = tk_utf8_next((const char *)s + i, len - i, &cp);
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
			int k = tk_utf8_next(s + i, len - i, &cp);
			if (t->byte_level && cp < 324 && tk_char_byte[cp] >= 0)
				raw[n++] = (unsigned char)tk_char_byte[cp];
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
