/* theme.h: the TUI's colours by role, and the heatmap ramps (curses attributes). */
#ifndef ATTNVIZ_THEME_H
#define ATTNVIZ_THEME_H

#include <curses.h>

#include "out/themeroles.h"

/*
 * Choose the theme and set up colours; call after initscr(). name NULL or
 * "default": the built-in default; otherwise a theme file by name or path
 * (themefile.h: assets/themes/NAME.json), which also becomes the theme of
 * exports (themefile_set_current). Colour is off (monochrome with glyph
 * shading) when mono is 1, when the theme says "mono", when the terminal has
 * no colours or too few pairs. Returns 0, or -1 with *err set (heap string,
 * the caller frees) when the theme cannot be loaded: the default is then in use.
 */
int theme_init(const char *name, int mono, char **err);
/* The attributes (colour pair included) of a role. */
attr_t theme_attr(ThemeRole r);
/*
 * A role laid over base (OPERAND over a heat colour): the role's attributes
 * are added; its colours replace base's only when the theme gives it colours.
 */
attr_t theme_overlay(ThemeRole r, attr_t base);
/*
 * The attributes of a heatmap cell of value t on ramp; *level drives the
 * shade glyph: 0 … 4 by magnitude, negative (−1 … −4) for a negative value
 * on the diverging ramp.
 */
attr_t theme_heat(ThemeRamp ramp, double t, int *level);
/* 1 when drawing without colours: cells carry a shade glyph. */
int theme_mono(void);
/*
 * The shade glyph for level 0 … 4: " ░▒▓█" (utf8) or " ':*#"; for −1 … −4
 * (negative values) ". - = ≡" or ". - = %", so that the sign shows without colour.
 */
const char *theme_shade(int level, int utf8);
/* The theme in use ("default", "mono", …) and how many colours it draws with (0, 8, 256). */
const char *theme_name(void);
int theme_colors(void);

#endif
