/* demo.c: demo scripts parsed into command, pause and wait entries (no curses). */
#include "app/demo.h"
#include "base/i18n.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fileio.h"
#include "base/text.h"
#include "base/strbuf.h"

/* The word at the start of s: its length (up to a blank). */
static size_t
word_len(const char *s)
{
	size_t n = 0;
	while (s[n] != '\0' && s[n] != ' ' && s[n] != '\t')
		n++;
	return n;
}

static int
word_is(const char *s, const char *w)
{
	size_t n = word_len(s);
	return n == strlen(w) && strncmp(s, w, n) == 0;
}

void
demo_free(Demo *d)
{
	if (d == NULL)
		return;
	for (int i = 0; i < d->n; i++) {
		free(d->line[i].text);
		free(d->line[i].file);
	}
	free(d->line);
	free(d->path);
	free(d);
}

/* 1 when path names a regular file. */
static int
is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/*
 * `load ARG`, `source ARG`: a relative ARG is the demo folder's (dir, with its
 * '/'; "" for a demo in the working directory). A bare name (no '/', no '.')
 * is a lesson's name unless the folder holds NAME or, for load, NAME.json.
 * Returns the new text (heap), or NULL to keep the line as it is (or out of memory).
 */
static char *
demo_path_line(const char *dir, const char *text)
{
	size_t cmd = word_len(text), n;
	const char *arg = text + cmd;
	char *joined;

	if (*dir == '\0' || !(word_is(text, "load") || word_is(text, "source")))
		return NULL;
	while (*arg == ' ' || *arg == '\t')
		arg++;
	n = word_len(arg);
	if (n == 0 || arg[n] != '\0' || *arg == '/' || *arg == '~')
		return NULL;
	if (strpbrk(arg, "/.") != NULL)
		return str_printf("%.*s %s%s", (int)cmd, text, dir, arg);
	joined = str_printf("%s%s", dir, arg);
	if (joined != NULL && !is_file(joined) && word_is(text, "load")) {
		free(joined);
		joined = str_printf("%s%s.json", dir, arg);
	}
	if (joined != NULL && is_file(joined)) {
		char *line = str_printf("%.*s %s", (int)cmd, text, joined);
		free(joined);
		return line;
	}
	free(joined);
	return NULL;
}

/* One trimmed, non-comment line → an entry; -1 with *err. */
static int
demo_entry(const char *path, int lineno, char *text, DemoLine *e, char **err)
{
	const char *rest;
	char *safe;

	e->lineno = lineno;
	e->text = text;
	e->file = NULL;
	e->kind = DEMO_CMD;
	e->seconds = 0;
	{
		/* Drop a leading ':' and the blanks after it with one move: a
		 * memmove per character is quadratic on a line of a million blanks. */
		size_t skip = *text == ':';
		while (text[skip] == ' ' || text[skip] == '\t')
			skip++;
		if (skip > 0)
			memmove(text, text + skip, strlen(text + skip) + 1);
	}
	rest = text + word_len(text);
	while (*rest == ' ' || *rest == '\t')
		rest++;
	if (word_is(text, "pause") || word_is(text, "quiz")) {
		if (*rest != '\0' && *rest != '#') {
			*err = str_printf(_("%s:%d: %s takes no argument"), path, lineno, word_is(text, "quiz") ? "quiz" : "pause");
			return -1;
		}
		e->kind = word_is(text, "quiz") ? DEMO_QUIZ : DEMO_PAUSE;
	} else if (word_is(text, "wait")) {
		char *end;
		size_t n = word_len(rest);
		char num[64];
		if (n == 0 || n >= sizeof num)
			goto bad_wait;
		memcpy(num, rest, n);
		num[n] = '\0';
		/* plain decimal seconds ("2", "0.5"): not hex, not inf/nan, which strtod also reads */
		if (strspn(num, "0123456789.eE+-") != n)
			goto bad_wait;
		e->seconds = strtod(num, &end);
		if (end == num || *end != '\0' || !isfinite(e->seconds) || e->seconds < 0 || e->seconds > DEMO_MAX_WAIT)
			goto bad_wait;
		{
			const char *after = rest + n;
			while (*after == ' ' || *after == '\t')
				after++;
			if (*after != '\0' && *after != '#') {
				safe = text_escape(rest, "");
				*err = str_printf(_("%s:%d: wait takes one number of seconds, got \"%s\""), path, lineno,
				                  safe ? safe : "");
				free(safe);
				return -1;
			}
		}
		e->kind = DEMO_WAIT;
	}
	return 0;
bad_wait:
	safe = text_escape(rest, "");
	*err = str_printf(_("%s:%d: wait: expected seconds from 0 to %g, got \"%s\""), path, lineno, DEMO_MAX_WAIT,
	                 safe ? safe : "");
	free(safe);
	return -1;
}

Demo *
demo_parse(const char *path, const char *buf, size_t len, char **err)
{
	Demo *d = calloc(1, sizeof *d);
	size_t pos = 0;
	int lineno = 0, cap = 0;
	char *dir = NULL;

	*err = NULL;
	if (d == NULL || (d->path = strdup(path ? path : "demo")) == NULL)
		goto oom;
	{
		/* the folder relative paths are read from: "lessons/demos/" for lessons/demos/masking.txt */
		const char *slash = strrchr(d->path, '/');
		if ((dir = strndup(d->path, slash ? (size_t)(slash - d->path) + 1 : 0)) == NULL)
			goto oom;
	}
	while (pos < len) {
		size_t end = pos, a, b;
		char *text;

		while (end < len && buf[end] != '\n')
			end++;
		lineno++;
		a = pos;
		b = end;
		pos = end + 1;
		while (a < b && (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\r'))
			a++;
		while (b > a && (buf[b - 1] == ' ' || buf[b - 1] == '\t' || buf[b - 1] == '\r'))
			b--;
		if (a == b || buf[a] == '#')
			continue;
		if (memchr(buf + a, '\0', b - a) != NULL) {
			*err = str_printf(_("%s:%d: a NUL byte (is this a text file?)"), d->path, lineno);
			goto fail;
		}
		if (d->n == DEMO_MAX_LINES) {
			*err = str_printf(_("%s:%d: more than %d lines (DEMO_MAX_LINES)"), d->path, lineno, DEMO_MAX_LINES);
			goto fail;
		}
		if (d->n == cap) {
			int ncap = cap ? cap * 2 : 16;
			DemoLine *nl = realloc(d->line, sizeof *nl * (size_t)ncap);
			if (nl == NULL)
				goto oom;
			d->line = nl;
			cap = ncap;
		}
		if ((text = strndup(buf + a, b - a)) == NULL)
			goto oom;
		if (demo_entry(d->path, lineno, text, &d->line[d->n], err) != 0) {
			free(text);
			goto fail;
		}
		if (d->line[d->n].kind == DEMO_CMD) {
			char *moved = demo_path_line(dir, d->line[d->n].text);
			if (moved != NULL) {
				free(d->line[d->n].text);
				d->line[d->n].text = moved;
			}
		}
		d->n++;
	}
	free(dir);
	return d;
oom:
	*err = str_printf(_("%s: out of memory"), path ? path : "demo");
fail:
	free(dir);
	demo_free(d);
	return NULL;
}

Demo *
demo_load(const char *path, char **err)
{
	size_t len = 0;
	char *buf = fileio_read_all(path, DEMO_MAX_BYTES, &len, err);
	Demo *d;

	if (buf == NULL)
		return NULL;
	d = demo_parse(path, buf, len, err);
	free(buf);
	return d;
}

int
demo_splice(Demo *d, int at, Demo *sub, char **err)
{
	DemoLine *nl;
	int i;

	if (at < 0 || at > d->n)
		at = d->n;
	if (d->n + sub->n > DEMO_MAX_LINES) {
		*err = str_printf("%s: source: more than %d lines in all, counting the scripts sourced (DEMO_MAX_LINES)",
		                  sub->path, DEMO_MAX_LINES);
		return -1;
	}
	if (sub->n == 0)
		return 0;
	nl = realloc(d->line, sizeof *nl * (size_t)(d->n + sub->n));
	if (nl == NULL)
		goto oom;
	d->line = nl;
	for (i = 0; i < sub->n; i++)
		if (sub->line[i].file == NULL && (sub->line[i].file = strdup(sub->path)) == NULL)
			goto oom; /* the ones set so far are sub's to free */
	memmove(&d->line[at + sub->n], &d->line[at], sizeof *nl * (size_t)(d->n - at));
	memcpy(&d->line[at], sub->line, sizeof *nl * (size_t)sub->n);
	d->n += sub->n;
	sub->n = 0;
	return 0;
oom:
	*err = str_printf("%s: out of memory", sub->path);
	return -1;
}
