/* strbuf.h: a growing heap string, and printf into a new heap string. */
#ifndef ATTNVIZ_STRBUF_H
#define ATTNVIZ_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

/*
 * Start with StrBuf b = { 0 }. Appending never fails loudly: when memory runs
 * out, oom is set and later appends do nothing, so a caller checks once at
 * the end. s is NUL-terminated whenever it is not NULL; the caller frees it.
 */
typedef struct StrBuf {
	char *s;
	size_t len, cap;
	int oom;
} StrBuf;

void strbuf_add(StrBuf *b, const char *s, size_t n);
void strbuf_puts(StrBuf *b, const char *s);
void strbuf_printf(StrBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vprintf(StrBuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* A new heap string (NULL when out of memory); fmt is always a literal, never lesson text. */
char *str_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *str_vprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
