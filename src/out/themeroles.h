/* themeroles.h: the roles the TUI draws with and the heatmap ramps, without curses (themefile.c reads them). */
#ifndef ATTNVIZ_THEMEROLES_H
#define ATTNVIZ_THEMEROLES_H

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

#endif
