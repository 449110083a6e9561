/* i18n.h: the program's own strings through GNU gettext (text domain "attnviz"). */
#ifndef ATTNVIZ_I18N_H
#define ATTNVIZ_I18N_H

#include <libintl.h>

/*
 * _("...") translates a string at its use; N_("...") only marks one for
 * xgettext (a table's English stays the msgid, and the view calls _() when
 * it shows it). Lesson text never goes through either: it is not ours, and
 * never a format string.
 */
#define _(s) gettext(s)
#define N_(s) (s)

/* _(s) for a string from a table, which may be empty or NULL (gettext("") is the catalogue's header). */
const char *i18n_msg(const char *s);

/*
 * Once, after setlocale(LC_ALL, ""): binds the text domain to the build's
 * locale directory when the binary runs from the tree (DIR/locale beside it,
 * found as the lessons are), else to the installed ATTNVIZ_LOCALEDIR; when
 * the environment names a UTF-8 locale this system lacks (LANG=zh_CN.UTF-8
 * with no zh_CN installed), falls back to C.UTF-8 so the terminal still
 * shows UTF-8. Returns the language the environment asks for: "zh" when
 * LANGUAGE's first entry or the message locale (LC_ALL, LC_MESSAGES, LANG,
 * the first one set) is Chinese, else "en".
 */
const char *i18n_init(void);

/*
 * Switch the program's strings to lang ("en" or "zh") now; later _() calls
 * see it. Chinese needs a UTF-8 terminal: in a non-UTF-8 locale (LANG=C) the
 * strings stay English, as a terminal that cannot show them would print "?"
 * for each character (the narration still follows the lesson's language).
 * Returns 1 when the strings are now in lang, 0 when they stay English.
 */
int i18n_set_lang(const char *lang);

/* 1 when the character set of the locale (LC_CTYPE) is UTF-8. */
int i18n_utf8(void);

#endif
