/*
 * jsonread.h: the kit for reading a JSON file (a lesson, a theme) with
 * messages that say where, in one style:
 *
 *   FILE: PATH: expected a number, got "abc"
 *   FILE: warning: PATH: unknown key "focsu" (did you mean "focus"?)
 *   FILE:LINE:COL: JSON syntax error near here
 *   <the line>
 *        ^
 *
 * A reader keeps a JrCtx: the file's name, the JSON path of the value being
 * read ("steps[2].focus.row", pushed with jr_path_key/jr_path_index and
 * popped with jr_path_set), the first error and the warnings. The jr_key_*
 * readers take an optional key of an object: absent, *out keeps its default.
 */
#ifndef ATTNVIZ_JSONREAD_H
#define ATTNVIZ_JSONREAD_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "base/strbuf.h"

#define JR_PATH_SIZE 256

typedef struct JrCtx {
	const char *name;        /* the file, escaped for printing: the start of every message */
	char path[JR_PATH_SIZE]; /* JSON path of the value being read: "steps[2].focus.row" */
	size_t pathlen;
	char *err;    /* the first error (heap), NULL while all is well */
	StrBuf *warn; /* warnings, one a line; NULL drops them */
	/*
	 * A file of layers (a lesson's "layers": [{…}, …]): while item
	 * layer_index is read, layer_obj is its object, whose keys replace the
	 * top level's; a top-level key found there is named "layers[i].KEY".
	 */
	const cJSON *layer_obj;
	int layer_index;
	/*
	 * root_len: the length of the path of the object being read as a lesson
	 * ("encoder" while an encoder–decoder's encoder is read; 0 otherwise).
	 * alias_obj[k]: while a decoder link is read, a key found in this object
	 * is named alias_prefix[k].KEY ("layers[1].cross.W_k").
	 */
	size_t root_len;
	const cJSON *alias_obj[2];
	char alias_prefix[2][32];
	void *reader; /* the reader's own state (lesson/: the stack read so far) */
} JrCtx;

/* Everything zero but the name and the warnings. */
void jr_ctx_init(JrCtx *c, const char *name, StrBuf *warn);

/* The path: each push returns the length to pop back to with jr_path_set. */
void jr_path_set(JrCtx *c, size_t len);
size_t jr_path_append(JrCtx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t jr_path_key(JrCtx *c, const char *key); /* "W_q", or ".row" below something; "layers[i].W_q" (layer_obj) */
size_t jr_path_index(JrCtx *c, int i);         /* "[2]" */

/* An error at the current path ("FILE: PATH: …"); only the first is kept. Returns -1. */
int jr_fail(JrCtx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "out of memory", without a path. Returns -1. */
int jr_fail_oom(JrCtx *c);
/* A warning at the current path ("FILE: warning: PATH: …\n"). */
void jr_warnf(JrCtx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * What the file holds, for "expected …, got WHAT": a string quoted, escaped
 * and cut to about 40 bytes, a number as the shortest form that reads back
 * exactly, true, false, null, "an array", "an object", "nothing".
 */
typedef struct JrGot {
	char s[96];
} JrGot;
JrGot jr_got(const cJSON *v);
JrGot jr_quoted(const char *s);

/* " (did you mean \"x\"?)" with the candidate closest to word when it is close enough to be a typo; else "". */
typedef struct JrHint {
	char s[96];
} JrHint;
JrHint jr_did_you_mean(const char *word, const char *const *cands, int ncands);

/* Warn about every key of obj not in known (NULL-terminated), with "did you mean". */
void jr_warn_unknown_keys(JrCtx *c, const cJSON *obj, const char *const *known);
/*
 * The same as an error, for files where a misspelt key must not pass: the
 * first unknown key fails with "unknown WHAT \"x\" (did you mean …?)", or
 * with the list of known ones when none is close. Returns 0 or -1.
 */
int jr_refuse_unknown_keys(JrCtx *c, const cJSON *obj, const char *const *known, const char *what);

/*
 * Warn about every key given twice in an object, at any depth below v: the
 * parser keeps the first and ignores the others, which is a mistake.
 */
void jr_warn_duplicate_keys(JrCtx *c, const cJSON *v);

/* obj[key], case-sensitively, or NULL. */
const cJSON *jr_get(const cJSON *obj, const char *key);
/*
 * obj[key] with the key entered on the path (*old: the length to pop back
 * to), or NULL when absent; jr_leave pops it and returns r:
 *   v = jr_enter(c, obj, "rows", &old); if (v) return jr_leave(c, old, read_rows(c, v));
 */
const cJSON *jr_enter(JrCtx *c, const cJSON *obj, const char *key, size_t *old);
int jr_leave(JrCtx *c, size_t old, int r);

/* Scalars. Each returns 0, or -1 with the error recorded at the current path. */
/* A whole number in [lo, hi]; expect says what was wanted ("a count of heads from 1 to 64"). */
int jr_read_whole(JrCtx *c, const cJSON *v, double lo, double hi, const char *expect, long long *out);
int jr_key_whole(JrCtx *c, const cJSON *obj, const char *key, double lo, double hi, const char *expect, long long *out);
/* A finite number. */
int jr_read_finite(JrCtx *c, const cJSON *v, double *out);
int jr_key_finite(JrCtx *c, const cJSON *obj, const char *key, double *out);
/* An optional number above lo (inclusive: lo or above) at obj[key]: absent, or null where null_ok, leaves *out as it was. */
int jr_key_above(JrCtx *c, const cJSON *obj, const char *key, double lo, int inclusive, int null_ok, double *out);
/* An optional true or false at obj[key] (1 or 0): absent, or null where null_ok, leaves *out as it was. */
int jr_key_bool(JrCtx *c, const cJSON *obj, const char *key, int null_ok, int *out);
/* One of the words in choices (NULL-terminated): its index. */
int jr_read_choice(JrCtx *c, const cJSON *v, const char *const *choices, int *out);
int jr_key_choice(JrCtx *c, const cJSON *obj, const char *key, const char *const *choices, int *out);
/* A string that is valid UTF-8, copied to the heap. */
int jr_read_string(JrCtx *c, const cJSON *v, char **out);

/*
 * "FILE:LINE:COL: REASON\n<the line>\n<a caret under COL>" for position pos
 * of buf (LINE and COL from 1, COL in characters; the line escaped and cut
 * around pos when long). Heap string.
 */
char *jr_syntax_error(const char *name, const char *buf, size_t len, size_t pos, const char *reason);
/*
 * Parse a whole file: UTF-8 (a byte-order mark is skipped; UTF-16, a NUL
 * byte and \u0000 are refused), one JSON value and nothing after it; a
 * syntax error names the likely mistake of JSON written by hand (a trailing
 * comma, a comment, curly or single quotes, a missing comma), the caret on
 * the character at fault. kind and example name what the file should be
 * for the message about an empty one ("lesson", "{\"attnviz\": 1, …}").
 * terminated = 1 promises buf[len] == '\0', so the text is parsed where it
 * is, without a copy (a 64 MiB file is not held twice). Returns the tree, or
 * NULL with *err (heap).
 */
cJSON *jr_parse(const char *name, const char *buf, size_t len, int terminated, const char *kind, const char *example,
                char **err);

/*
 * The short names lesson.c grew up with, for a reader that defines
 * JSONREAD_SHORT_NAMES before including this header.
 */
#ifdef JSONREAD_SHORT_NAMES
typedef JrCtx Ctx;
typedef JrGot Got;
typedef JrHint Hint;
#define PATH_SIZE JR_PATH_SIZE
#define ctx_init(...) jr_ctx_init(__VA_ARGS__)
#define path_set(...) jr_path_set(__VA_ARGS__)
#define path_append(...) jr_path_append(__VA_ARGS__)
#define path_key(...) jr_path_key(__VA_ARGS__)
#define path_index(...) jr_path_index(__VA_ARGS__)
#define fail(...) jr_fail(__VA_ARGS__)
#define fail_oom(...) jr_fail_oom(__VA_ARGS__)
#define warnf(...) jr_warnf(__VA_ARGS__)
#define got(...) jr_got(__VA_ARGS__)
#define quoted(...) jr_quoted(__VA_ARGS__)
#define did_you_mean(...) jr_did_you_mean(__VA_ARGS__)
#define warn_unknown_keys(...) jr_warn_unknown_keys(__VA_ARGS__)
#define warn_duplicate_keys(...) jr_warn_duplicate_keys(__VA_ARGS__)
#define refuse_unknown_keys(...) jr_refuse_unknown_keys(__VA_ARGS__)
#define get(...) jr_get(__VA_ARGS__)
#define read_whole(...) jr_read_whole(__VA_ARGS__)
#define key_whole(...) jr_key_whole(__VA_ARGS__)
#define read_finite(...) jr_read_finite(__VA_ARGS__)
#define key_finite(...) jr_key_finite(__VA_ARGS__)
#define read_choice(...) jr_read_choice(__VA_ARGS__)
#define key_choice(...) jr_key_choice(__VA_ARGS__)
#define read_string(...) jr_read_string(__VA_ARGS__)
#endif

#endif
