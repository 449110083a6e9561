/* i18n.c: binding the text domain, and switching the program's language at run time. */
#include "base/i18n.h"

#include <langinfo.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "base/paths.h"

#ifndef ATTNVIZ_LOCALEDIR
#define ATTNVIZ_LOCALEDIR "/usr/local/share/locale"
#endif

#define DOMAIN "attnviz"

int i18n_utf8(void)
{
	const char *cs = nl_langinfo(CODESET);
	return cs != NULL && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
}

/* The first of the variables that is set and not empty, or NULL. */
static const char *first_env(const char *const *names)
{
	for (; *names != NULL; names++) {
		const char *v = getenv(*names);
		if (v != NULL && v[0] != '\0')
			return v;
	}
	return NULL;
}

/* 1 when a locale name says UTF-8 ("zh_CN.UTF-8", "C.utf8"). */
static int names_utf8(const char *name)
{
	const char *dot = name != NULL ? strchr(name, '.') : NULL;
	return dot != NULL && (strncmp(dot + 1, "UTF-8", 5) == 0 || strncmp(dot + 1, "utf8", 4) == 0 ||
	                       strncmp(dot + 1, "utf-8", 5) == 0 || strncmp(dot + 1, "UTF8", 4) == 0);
}

const char *i18n_msg(const char *s)
{
	return s == NULL || s[0] == '\0' ? s : gettext(s);
}

const char *i18n_init(void)
{
	static const char *const ctype[] = { "LC_ALL", "LC_CTYPE", "LANG", NULL };
	static const char *const messages[] = { "LC_ALL", "LC_MESSAGES", "LANG", NULL };
	const char *dir = paths_locale_dir(ATTNVIZ_LOCALEDIR), *language = getenv("LANGUAGE");
	const char *msg = first_env(messages);

	/* setlocale(LC_ALL, "") failed or left C while a UTF-8 locale was asked for: the system lacks it */
	if (!i18n_utf8() && names_utf8(first_env(ctype)))
		setlocale(LC_ALL, "C.UTF-8");
	bindtextdomain(DOMAIN, dir);
	bind_textdomain_codeset(DOMAIN, "UTF-8");
	textdomain(DOMAIN);
	if (language != NULL && language[0] != '\0' && msg != NULL && strcmp(msg, "C") != 0 && strcmp(msg, "POSIX") != 0)
		return strncmp(language, "zh", 2) == 0 ? "zh" : "en";
	return msg != NULL && strncmp(msg, "zh", 2) == 0 ? "zh" : "en";
}

int i18n_set_lang(const char *lang)
{
	int zh = lang != NULL && strcmp(lang, "zh") == 0 && i18n_utf8();
	const char *cur = setlocale(LC_MESSAGES, NULL);

	/*
	 * glibc ignores LANGUAGE while LC_MESSAGES is "C" or "POSIX": give it
	 * C.UTF-8 (the terminal is UTF-8, so LC_CTYPE's name is one too).
	 */
	if (zh && (cur == NULL || strcmp(cur, "C") == 0 || strcmp(cur, "POSIX") == 0) &&
	    setlocale(LC_MESSAGES, "C.UTF-8") == NULL) {
		const char *ct = setlocale(LC_CTYPE, NULL);
		if (ct == NULL || setlocale(LC_MESSAGES, ct) == NULL)
			zh = 0;
	}
	/* "en" has no catalogue: every string is its msgid */
	setenv("LANGUAGE", zh ? "zh_CN" : "en", 1);
	/* glibc caches translations: textdomain() bumps the catalogue counter so the next gettext looks again */
	textdomain(DOMAIN);
	return zh || lang == NULL || strcmp(lang, "zh") != 0;
}
