/* handout.h: a lesson as a printed handout (`--handout LESSON -o FILE.html|FILE.md`).
 *
 * Every step of the lesson in order: its place (stage, head, layer), its
 * narration, its stage's figure (export_svg.c's SVG, the open question's pane
 * without its numbers), its formula and its question; then an answer key
 * whose answers are computed from the lesson as the quiz checks them (the
 * right choice, or the answer cell's number and the tolerance).
 *
 * HTML is one self-contained file, well-formed XML too (void elements closed, "<br/>"), (the figures inline, the style in it,
 * nothing loaded from elsewhere) with print CSS for A4 and Letter; Markdown
 * links one SVG file per step beside it (FILE-stepNN.svg). Lesson text is
 * escaped for the format (export_xml_puts, export_md_puts).
 */
#ifndef ATTNVIZ_HANDOUT_H
#define ATTNVIZ_HANDOUT_H

#include "app/session.h"
#include "out/themefile.h"

typedef struct HandoutFile {
	char *path; /* where it goes: the handout itself first, then its figures (Markdown) */
	char *data; /* its bytes, NUL-terminated */
	int png;    /* 1: data is an SVG figure, written as a PNG (rsvg-convert: a beamer deck's figures) */
} HandoutFile;

typedef struct Handout {
	int n;
	HandoutFile *file;
} Handout;

/* Where the answer key goes (--key): after the steps, in a file of its own beside
 * the handout (FILE-key.html, FILE-key.md: the students' copy keeps no answers),
 * or nowhere; slides (out/slides.h): end is each answer on the slide after its
 * question, notes in the question's speaker notes only, none nowhere. */
typedef enum HandoutKey { HANDOUT_KEY_END, HANDOUT_KEY_SEPARATE, HANDOUT_KEY_NONE, HANDOUT_KEY_NOTES } HandoutKey;

/* "end", "separate", "none", "notes" → its HandoutKey; -1 for anything else. */
int handout_key_find(const char *name);

/* 1 for FILE.html / FILE.htm, 0 for FILE.md / FILE.markdown, -1 for anything else. */
int handout_is_html(const char *path);

/* How a handout is made (the options of --handout). */
typedef struct HandoutOptions {
	const ThemeFile *theme; /* the figures' palette, or NULL for the default */
	int numbers;            /* ExportNumbers (out/export.h): numbers in the figures' cells, or a heatmap */
	int precision;          /* the figures' decimals (0 to 10), or -1 as the screen shows them */
	HandoutKey key;         /* where the answer key goes */
} HandoutOptions;

/*
 * The handout of session s's lesson in the language s->lang, to be written at
 * path (its extension says the format), made as o says. Moves s through its
 * walk. Returns 0 with *h filled (handout_free), or -1 with *err ("handout: …").
 */
int handout_render(Session *s, const char *path, const HandoutOptions *o, Handout *h, char **err);
void handout_free(Handout *h);

#endif
