/* theme.c: role → colour tables (256, 8 and no colours) and the heatmap ramps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tui/theme.h"
#include "out/themefile.h"

/*
 * The colours come from a ThemeFile (themefile.h: the built-in default or
 * assets/themes/NAME.json). Each role gets one colour pair; each ramp step a
 * pair of its background and a readable text colour. On 8-colour terminals
 * every theme's roles take the nearest basic colours and its ramps are
 * themefile_ramp8's (no step the screen's colour, the signs apart). Without
 * colour, roles use the attributes below plus the file's.
 */

#define MONO_LEVELS 5

/* Without colour: how each role looks (the theme file's attrs are added). */
static const attr_t theme_mono_role[ROLE_COUNT] = {
	[ROLE_STAGE] = A_REVERSE,
	[ROLE_STAGE_NAME] = A_REVERSE | A_BOLD,
	[ROLE_PANE_TITLE] = A_UNDERLINE,
	[ROLE_PANE_FOCUS] = A_BOLD | A_UNDERLINE,
	[ROLE_LABEL] = A_DIM,
	[ROLE_LABEL_HI] = A_BOLD,
	[ROLE_CURSOR] = A_REVERSE | A_BOLD,
	[ROLE_OPERAND] = A_BOLD | A_UNDERLINE,
	[ROLE_MASKED] = A_DIM,
	[ROLE_FLASH] = A_STANDOUT | A_BOLD,
	[ROLE_RULE] = A_DIM,
	[ROLE_FORMULA] = A_BOLD,
	[ROLE_QUIZ] = A_BOLD,
	[ROLE_PLACEHOLDER] = A_DIM,
	[ROLE_KEYS] = A_DIM,
	[ROLE_KEY] = A_BOLD,
	[ROLE_ERROR] = A_REVERSE | A_BOLD,
	[ROLE_POPUP_TITLE] = A_BOLD,
	[ROLE_NOTICE] = A_BOLD,
};

/* Monochrome heat: the magnitude as dim … bold, plus a shade glyph in the cell. */
static const attr_t theme_mono_heat[MONO_LEVELS] = { A_DIM, 0, 0, A_BOLD, A_BOLD };

static struct {
	ThemeFile tf;
	int colors;               /* 0 (monochrome), 8 or 256 */
	int light8;               /* 8 colours on a white screen (themefile_ramp8's light ramps) */
	attr_t role[ROLE_COUNT];
	int role_plain[ROLE_COUNT]; /* 1: the role has no colours of its own (an overlay) */
	short div_pair, seq_pair; /* first pair of each ramp */
	int ndiv, nseq;
	short screen_fg, screen_bg; /* what "default" is: the terminal's own (-1) or the theme's background */
} theme_state;

static attr_t
theme_attrs(unsigned bits)
{
	attr_t a = 0;

	if (bits & THEMEFILE_BOLD) a |= A_BOLD;
	if (bits & THEMEFILE_DIM) a |= A_DIM;
	if (bits & THEMEFILE_UNDERLINE) a |= A_UNDERLINE;
	if (bits & THEMEFILE_REVERSE) a |= A_REVERSE;
	if (bits & THEMEFILE_STANDOUT) a |= A_STANDOUT;
#ifdef A_ITALIC
	if (bits & THEMEFILE_ITALIC) a |= A_ITALIC;
#endif
	if (bits & THEMEFILE_BLINK) a |= A_BLINK;
	return a;
}

/* A theme colour on this terminal: itself on 256 colours, the nearest basic one on 8. */
static short
theme_colour(int c)
{
	if (c < 0)
		return -1;
	return (short)(theme_state.colors == 256 ? c : themefile_to8(c));
}

/* A colour pair; "default" (-1) is the theme's screen colour when it sets one (light's white). */
static void
theme_pair(short n, short fg, short bg)
{
	init_pair(n, fg < 0 ? theme_state.screen_fg : fg, bg < 0 ? theme_state.screen_bg : bg);
}

/* A ramp step: its background and black or white text. */
static void
theme_ramp_pair(short n, int bg)
{
	if (bg < 0)
		theme_pair(n, -1, -1);
	else
		theme_pair(n, theme_colour(themefile_text_on_screen(bg, theme_state.colors)), theme_colour(bg));
}

int
theme_init(const char *name, int mono, char **err)
{
	int rc = 0;

	*err = NULL;
	if (name == NULL || *name == '\0' || strcmp(name, "default") == 0) {
		themefile_default(&theme_state.tf);
	} else if (themefile_load(name, &theme_state.tf, err) != 0) {
		/* tf holds the default now */
		if (strcmp(name, "mono") == 0) {
			/* "mono" works without its file too */
			free(*err);
			*err = NULL;
			strcpy(theme_state.tf.name, "mono");
			theme_state.tf.mono = 1;
		} else {
			rc = -1;
		}
	}
	themefile_set_current(&theme_state.tf);

	const ThemeFile *t = &theme_state.tf;
	theme_state.colors = 0;
	if (!mono && !t->mono && has_colors() && start_color() != ERR) {
		use_default_colors();
		int need = ROLE_COUNT + t->ndiv + t->nseq + 1;
		int need8 = ROLE_COUNT + 2 * THEMEFILE_RAMP8 + 1;
		if (COLORS >= 256 && COLOR_PAIRS > need)
			theme_state.colors = 256;
		else if (COLORS >= 8 && COLOR_PAIRS > need8)
			theme_state.colors = 8;
	}
	/* A theme with its own background (light) paints it: pair 0 (the blank screen) and every
	 * "default" of its roles, so that on a dark terminal it is not grey text on black. */
	theme_state.screen_fg = theme_colour(t->foreground);
	theme_state.screen_bg = theme_colour(t->background);
	if (theme_state.colors != 0)
		assume_default_colors(theme_state.screen_fg, theme_state.screen_bg);

	short pair = 1;
	for (int r = 0; r < ROLE_COUNT; r++) {
		const ThemeFileRole screen = themefile_screen_role(t, r, theme_state.colors);
		const ThemeFileRole *fr = &screen;
		theme_state.role_plain[r] = fr->fg < 0 && fr->bg < 0;
		if (theme_state.colors == 0) {
			theme_state.role[r] = theme_mono_role[r] | theme_attrs(fr->attrs);
			continue;
		}
		theme_pair(pair, theme_colour(fr->fg), theme_colour(fr->bg));
		theme_state.role[r] = COLOR_PAIR(pair) | theme_attrs(fr->attrs);
		pair++;
	}
	/* Eight colours are too few to keep the cursor apart from every ramp step. */
	if (theme_state.colors == 8)
		theme_state.role[ROLE_CURSOR] |= A_REVERSE;
	theme_state.div_pair = pair;
	theme_state.light8 = theme_state.colors == 8 && theme_state.screen_bg == COLOR_WHITE;
	if (theme_state.colors == 8) {
		theme_state.ndiv = theme_state.nseq = THEMEFILE_RAMP8;
		for (int d = 1; d >= 0; d--) {
			if (d == 0)
				theme_state.seq_pair = pair;
			for (int i = 0; i < THEMEFILE_RAMP8; i++) {
				ThemeFileStep8 st = themefile_ramp8(d, i, theme_state.light8);
				init_pair(pair++, st.fg, st.bg);
			}
		}
	} else if (theme_state.colors != 0) {
		theme_state.ndiv = t->ndiv;
		theme_state.nseq = t->nseq;
		for (int i = 0; i < t->ndiv; i++)
			theme_ramp_pair(pair++, t->div[i]);
		theme_state.seq_pair = pair;
		for (int i = 0; i < t->nseq; i++)
			theme_ramp_pair(pair++, t->seq[i]);
	}
	return rc;
}

attr_t
theme_attr(ThemeRole r)
{
	if ((int)r < 0 || r >= ROLE_COUNT)
		return A_NORMAL;
	return theme_state.role[r];
}

attr_t
theme_overlay(ThemeRole r, attr_t base)
{
	if ((int)r < 0 || r >= ROLE_COUNT)
		return base;
	if (theme_state.colors == 0 || theme_state.role_plain[r])
		return base | (theme_state.role[r] & ~A_COLOR);
	return theme_state.role[r];
}

attr_t
theme_heat(ThemeRamp ramp, double t, int *level)
{
	double mag = isnan(t) ? 0 : fabs(t);
	int lv, div = ramp == RAMP_DIVERGING;

	if (mag > 1)
		mag = 1;
	/* Levels by magnitude: 0 for |t| < 0.1, then four equal bands. */
	lv = mag < 0.1 ? 0 : 1 + (int)((mag - 0.1) / 0.9 * 3.999);
	/* A negative value on the diverging ramp: a negative level, whose glyphs differ (theme_shade). */
	if (level)
		*level = div && t < 0 ? -lv : lv;
	if (theme_state.colors == 0)
		return theme_mono_heat[lv];
	int n = div ? theme_state.ndiv : theme_state.nseq;
	int i = themefile_ramp_index(t, div, n);
	attr_t a = COLOR_PAIR((div ? theme_state.div_pair : theme_state.seq_pair) + i);
	if (theme_state.colors == 8 && themefile_ramp8(div, i, theme_state.light8).bold)
		a |= A_BOLD;
	return a;
}

int
theme_mono(void)
{
	return theme_state.colors == 0;
}

const char *
theme_shade(int level, int utf8)
{
	static const char *const u[MONO_LEVELS] = { " ", "\xe2\x96\x91", "\xe2\x96\x92", "\xe2\x96\x93", "\xe2\x96\x88" };
	static const char *const a[MONO_LEVELS] = { " ", "'", ":", "*", "#" };
	/* Negative values: strokes, not shading, so the sign shows without colour. */
	static const char *const un[MONO_LEVELS] = { " ", ".", "-", "=", "\xe2\x89\xa1" };
	static const char *const an[MONO_LEVELS] = { " ", ".", "-", "=", "%" };
	int neg = level < 0;

	if (neg)
		level = -level;
	if (level >= MONO_LEVELS)
		level = MONO_LEVELS - 1;
	if (neg)
		return utf8 ? un[level] : an[level];
	return utf8 ? u[level] : a[level];
}

const char *
theme_name(void)
{
	if (theme_state.tf.name[0] == '\0')
		return "default";
	return theme_state.tf.name;
}

int
theme_colors(void)
{
	return theme_state.colors;
}
