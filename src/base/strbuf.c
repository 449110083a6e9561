/* strbuf.c: a growing heap string, and printf into a new heap string. */
#include "base/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_add(StrBuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		char *grown;
		while (cap < b->len + n + 1)
			cap *= 2;
		grown = realloc(b->s, cap);
		if (grown == NULL) {
			b->oom = 1;
			return;
		}
		b->s = grown;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void strbuf_puts(StrBuf *b, const char *s)
{
	strbuf_add(b, s, strlen(s));
}

void strbuf_vprintf(StrBuf *b, const char *fmt, va_list ap)
{
	char *s = str_vprintf(fmt, ap);

	if (s == NULL) {
		b->oom = 1;
		return;
	}
	strbuf_puts(b, s);
	free(s);
}

void strbuf_printf(StrBuf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	strbuf_vprintf(b, fmt, ap);
	va_end(ap);
}

char *str_vprintf(const char *fmt, va_list ap)
{
	va_list aq;
	char *s;
	int n;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0 || (s = malloc((size_t)n + 1)) == NULL)
		return NULL;
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

char *str_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = str_vprintf(fmt, ap);
	va_end(ap);
	return s;
}
