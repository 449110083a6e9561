/* theme.h: the TUI's colours by role, and the heatmap ramps (curses attributes). */
#ifndef ATTNVIZ_THEME_H
#define ATTNVIZ_THEME_H

#include <curses.h>

/*
 * Every colour the TUI draws with is one of these roles; a theme gives each
 * role a 256-colour pair, an 8-colour pair and a monochrome attribute.
 */
#define THEME_ROLES(X) \
	X(STAGE)        /* the stage line */ \
	X(STAGE_NAME)   /* "stage: scores" inside it */ \
	X(PANE_TITLE)   /* a matrix pane's name and shape */ \
	X(PANE_FOCUS)   /* the same, for the pane with the cursor */ \
	X(LABEL)        /* row and column labels */ \
	X(LABEL_HI)     /* labels of the cursor's row/column and of operand rows/columns */ \
	X(CURSOR)       /* the cell under the cursor */ \
	X(OPERAND)      /* added to cells that produced the cursor's cell */ \
	X(MASKED)       /* -∞ and other masked cells */ \
	X(FLASH)        /* cells an edit just changed */ \
	X(RULE)         /* the narration pane's top rule */ \
	X(NARR)         /* narration text */ \
	X(FORMULA)      /* the stage's formula */ \
	X(QUIZ)         /* a quiz question */ \
	X(PLACEHOLDER)  /* the hidden result pane of an open quiz */ \
	X(KEYS)         /* the key line */ \
	X(KEY)          /* a key name in it */ \
	X(INFO)         /* status line: information */ \
	X(ERROR)        /* status line: an error */ \
	X(CMDLINE)      /* the `:` line while editing */ \
	X(POPUP)        /* pop-up text */ \
	X(POPUP_TITLE)  /* pop-up border and title */ \
	X(NOTICE)       /* "terminal too small" */

#define THEME_ROLE_ENUM(name) ROLE_##name,
typedef enum ThemeRole { THEME_ROLES(THEME_ROLE_ENUM) ROLE_COUNT } ThemeRole;
#undef THEME_ROLE_ENUM

typedef enum ThemeRamp {
	RAMP_DIVERGING,  /* t in [-1, 1]: negative, zero, positive (scores and most matrices) */
	RAMP_SEQUENTIAL  /* t in [0, 1]: weights */
} ThemeRamp;

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
/* The attributes of a heatmap cell of value t on ramp; *level (0 … 4) drives the shade glyph. */
attr_t theme_heat(ThemeRamp ramp, double t, int *level);
/* 1 when drawing without colours: cells carry a shade glyph. */
int theme_mono(void);
/* The shade glyph for level 0 … 4: " ░▒▓█" (utf8) or " ':*#". */
const char *theme_shade(int level, int utf8);
/* The theme in use ("default", "mono", …) and how many colours it draws with (0, 8, 256). */
const char *theme_name(void);
int theme_colors(void);

#endif
