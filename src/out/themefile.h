/* themefile.h: colour themes as JSON files (assets/themes/NAME.json), without curses.
 *
 * Schema (assets/themes/README.md):
 *   {
 *     "name": "projector",                       required, [A-Za-z0-9_-], ≤ 31 bytes
 *     "description": "…",                        optional text
 *     "mono": false,                             optional: true = draw without colour
 *     "roles": { ROLE: {"fg": COLOR, "bg": COLOR, "attrs": ["bold", …]}, … },
 *     "sequential": [COLOR, …],                  2–32 backgrounds, low → high (weights)
 *     "diverging": [COLOR, …],                   3–32 backgrounds, negative → zero → positive
 *     "masked": COLOR                            background of −∞ / masked cells
 *     "background": COLOR, "foreground": COLOR   optional: the screen's own colours (light sets
 *                                                them, so it reads on a dark terminal too)
 *   }
 * COLOR is an xterm-256 colour number 0–255, one of the 8 basic names
 * (black red green yellow blue magenta cyan white) or "default" (the
 * terminal's own colour). attrs: bold dim underline reverse standout italic
 * blink. ROLE names are the TUI's roles (themeroles.h) in lower case: stage,
 * stage_name, pane_title, …; a role the file leaves out, or a part of one
 * (fg, bg, attrs), keeps the built-in default theme's value.
 */
#ifndef ATTNVIZ_THEMEFILE_H
#define ATTNVIZ_THEMEFILE_H

#include <stddef.h>

#include "out/themeroles.h"

#define THEMEFILE_ROLE_COUNT ROLE_COUNT /* one per ThemeRole, in THEME_ROLES' order */
#define THEMEFILE_MAX_RAMP 32
#define THEMEFILE_DEFAULT_COLOR (-1) /* the terminal's default fg or bg */

/* Attributes, as bits (the TUI maps them to A_BOLD, …). */
enum {
	THEMEFILE_BOLD = 1 << 0,
	THEMEFILE_DIM = 1 << 1,
	THEMEFILE_UNDERLINE = 1 << 2,
	THEMEFILE_REVERSE = 1 << 3,
	THEMEFILE_STANDOUT = 1 << 4,
	THEMEFILE_ITALIC = 1 << 5,
	THEMEFILE_BLINK = 1 << 6
};

typedef struct ThemeFileRole {
	short fg, bg;    /* 0–255 or THEMEFILE_DEFAULT_COLOR */
	unsigned attrs;  /* THEMEFILE_* bits */
} ThemeFileRole;

typedef struct ThemeFile {
	char name[32];
	char description[256];  /* escaped (no control characters) */
	char path[512];         /* the file it came from; "(built-in)" for the default */
	int mono;               /* 1: no colour at all (reverse, bold, shade glyphs) */
	ThemeFileRole role[THEMEFILE_ROLE_COUNT]; /* indexed by ThemeRole (themeroles.h) */
	int nseq, ndiv;
	short seq[THEMEFILE_MAX_RAMP];  /* sequential ramp, low → high */
	short div[THEMEFILE_MAX_RAMP];  /* diverging ramp, negative → positive (odd count: a zero step) */
	short masked;
	short background, foreground; /* the screen's colours; THEMEFILE_DEFAULT_COLOR: the terminal's own */
} ThemeFile;

/* The built-in default theme (the same values as assets/themes/default.json). */
void themefile_default(ThemeFile *out);

/*
 * Load a theme: a path (contains '/' or ends in ".json"), else NAME.json
 * looked up in $ATTNVIZ_THEMES, ./assets/themes, then ATTNVIZ_SHARE "/themes".
 * On success fills *out and returns 0. On failure *out holds the built-in
 * default (so a caller can fall back at once), returns -1 and *err names
 * the file and the key: "assets/themes/bad.json: roles.title.fg: expected a
 * colour 0-255 or a name, got \"purplish\"". name NULL or "" means "default".
 */
int themefile_load(const char *name_or_path, ThemeFile *out, char **err);

/* Parse a theme from a buffer; file is used in messages. Same contract as themefile_load. */
int themefile_parse(const char *file, const char *buf, size_t len, ThemeFile *out, char **err);

/* Names (without .json) of the themes found in the search path: NULL-terminated heap array, or NULL. */
char **themefile_list(void);

/* ---- helpers for drawing ---- */

/* sRGB of an xterm-256 colour (0xRRGGBB); THEMEFILE_DEFAULT_COLOR gives dflt. */
unsigned long themefile_rgb(int colour, unsigned long dflt);
/*
 * The nearest of the 8 basic colours (0 black … 7 white) for a 256-colour
 * number, magenta left out (no text reads on it at 4.5:1); 0–15 map to
 * themselves (mod 8); -1 stays -1.
 */
int themefile_to8(int colour);
/*
 * Readable text: every number drawn on a colour of a theme has a WCAG 2
 * contrast ratio of at least THEMEFILE_MIN_CONTRAST against it, chosen by
 * computing the ratio (black and white: one of them always reaches it).
 */
#define THEMEFILE_MIN_CONTRAST 4.5
/* The WCAG 2 contrast ratio of two sRGB colours (0xRRGGBB): 1 … 21. */
double themefile_contrast(unsigned long a, unsigned long b);
/* sRGB of a colour as a terminal of colors (8 or 256) shows it: on 8, the nearest basic colour as xterm draws it. */
unsigned long themefile_rgb_on(int colour, int colors, unsigned long dflt);
/* The text colour, 16 (black) or 231 (white), of higher contrast on colour (256 colours and SVG). */
int themefile_text_on(int colour);
/* The same on a terminal of colors (8 or 256). */
int themefile_text_on_screen(int colour, int colors);
/* 1 for the roles drawn on matrix cells with a number on them (cursor, masked, flash). */
int themefile_role_on_cells(int role);
/*
 * Role role of t as a terminal of colors draws it: a cell role whose fg reads
 * below THEMEFILE_MIN_CONTRAST on its bg (or has no fg of its own) gets
 * black or white text instead.
 */
ThemeFileRole themefile_screen_role(const ThemeFile *t, int role, int colors);
/*
 * The ramps on an 8-colour terminal, for every theme (a theme's own steps
 * would fall onto a few basic colours, the screen's own among them: a weight
 * drawn as a hole, both signs in one colour): THEMEFILE_RAMP8 steps, step i
 * of the sequential (low → high) or diverging (negative → positive) ramp as
 * basic colours 0–7, black or white text of the higher contrast, and bold
 * for white text. light: the screen is white (a theme whose background maps
 * to white), else dark. No step is the screen's colour; a ramp's steps differ.
 */
#define THEMEFILE_RAMP8 5
typedef struct ThemeFileStep8 {
	short fg, bg;
	int bold;
} ThemeFileStep8;
ThemeFileStep8 themefile_ramp8(int diverging, int i, int light);
/* Ramp index 0 … n-1 for t in [0, 1] (sequential) or [-1, 1] (diverging), as theme.c does. */
int themefile_ramp_index(double t, int diverging, int n);

/* The theme the front end has chosen (exports use it); starts as the default. */
const ThemeFile *themefile_current(void);
void themefile_set_current(const ThemeFile *t);

#endif
