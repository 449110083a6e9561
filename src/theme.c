/* theme.c: role → colour tables (256, 8 and no colours) and the heatmap ramps. */
#include <math.h>
#include <string.h>

#include "theme.h"

/* A colour pair: foreground and background (-1: the terminal's default). */
typedef struct ThemePair {
	short fg, bg;
} ThemePair;

typedef struct ThemeRoleSpec {
	ThemePair c256, c8;
	attr_t attr;  /* added to the pair when drawing in colour */
	attr_t mono;  /* the whole look without colour */
} ThemeRoleSpec;

#define DIV256 11
#define SEQ256 9
#define RAMP8  5
#define MONO_LEVELS 5

typedef struct Theme {
	const char *name;
	int mono;                      /* 1: never colour */
	ThemeRoleSpec role[ROLE_COUNT];
	ThemePair div256[DIV256], seq256[SEQ256];
	ThemePair div8[RAMP8], seq8[RAMP8];
	attr_t div8_attr[RAMP8], seq8_attr[RAMP8];
} Theme;

#define D (-1) /* the terminal's default colour */

static const Theme theme_default = {
	.name = "default",
	.role = {
		[ROLE_STAGE]       = { { 231, 24 },  { COLOR_WHITE, COLOR_BLUE },  0,         A_REVERSE },
		[ROLE_STAGE_NAME]  = { { 229, 24 },  { COLOR_YELLOW, COLOR_BLUE }, A_BOLD,    A_REVERSE | A_BOLD },
		[ROLE_PANE_TITLE]  = { { 110, D },   { COLOR_CYAN, D },            0,         A_UNDERLINE },
		[ROLE_PANE_FOCUS]  = { { 229, D },   { COLOR_YELLOW, D },          A_BOLD,    A_BOLD | A_UNDERLINE },
		[ROLE_LABEL]       = { { 250, D },   { COLOR_WHITE, D },           0,         A_DIM },
		[ROLE_LABEL_HI]    = { { 229, D },   { COLOR_YELLOW, D },          A_BOLD,    A_BOLD },
		[ROLE_CURSOR]      = { { 16, 226 },  { COLOR_BLACK, COLOR_YELLOW }, A_BOLD,   A_REVERSE | A_BOLD },
		[ROLE_OPERAND]     = { { D, D },     { D, D },                     A_BOLD | A_UNDERLINE, A_BOLD | A_UNDERLINE },
		[ROLE_MASKED]      = { { 245, 236 }, { COLOR_MAGENTA, D },         0,         A_DIM },
		[ROLE_FLASH]       = { { 16, 214 },  { COLOR_BLACK, COLOR_MAGENTA }, A_BOLD,  A_STANDOUT | A_BOLD },
		[ROLE_RULE]        = { { 60, D },    { COLOR_BLUE, D },            0,         A_DIM },
		[ROLE_NARR]        = { { D, D },     { D, D },                     0,         0 },
		[ROLE_FORMULA]     = { { 159, D },   { COLOR_CYAN, D },            A_BOLD,    A_BOLD },
		[ROLE_QUIZ]        = { { 222, D },   { COLOR_YELLOW, D },          A_BOLD,    A_BOLD },
		[ROLE_PLACEHOLDER] = { { 244, D },   { COLOR_WHITE, D },           A_DIM,     A_DIM },
		[ROLE_KEYS]        = { { 250, 236 }, { COLOR_WHITE, COLOR_BLACK }, 0,         A_DIM },
		[ROLE_KEY]         = { { 229, 236 }, { COLOR_YELLOW, COLOR_BLACK }, A_BOLD,   A_BOLD },
		[ROLE_INFO]        = { { 151, D },   { COLOR_GREEN, D },           0,         0 },
		[ROLE_ERROR]       = { { 231, 124 }, { COLOR_WHITE, COLOR_RED },   A_BOLD,    A_REVERSE | A_BOLD },
		[ROLE_CMDLINE]     = { { D, D },     { D, D },                     0,         0 },
		[ROLE_POPUP]       = { { 231, 237 }, { COLOR_WHITE, COLOR_BLACK }, 0,         0 },
		[ROLE_POPUP_TITLE] = { { 229, 237 }, { COLOR_YELLOW, COLOR_BLACK }, A_BOLD,   A_BOLD },
		[ROLE_NOTICE]      = { { 229, D },   { COLOR_YELLOW, D },          A_BOLD,    A_BOLD },
	},
	/* blue … default … red, light colours with black numbers near zero */
	.div256 = { { 231, 18 }, { 231, 19 }, { 231, 26 }, { 16, 75 }, { 16, 153 }, { D, D },
		    { 16, 224 }, { 16, 217 }, { 16, 209 }, { 231, 160 }, { 231, 88 } },
	/* default … pale yellow … green … deep teal (viridis-like, reversed) */
	.seq256 = { { D, D }, { 16, 230 }, { 16, 229 }, { 16, 192 }, { 16, 150 },
		    { 16, 114 }, { 231, 71 }, { 231, 29 }, { 231, 23 } },
	.div8 = { { COLOR_WHITE, COLOR_BLUE }, { COLOR_BLACK, COLOR_CYAN }, { D, D },
		  { COLOR_BLACK, COLOR_YELLOW }, { COLOR_WHITE, COLOR_RED } },
	.div8_attr = { A_BOLD, 0, 0, 0, A_BOLD },
	.seq8 = { { D, D }, { COLOR_WHITE, COLOR_BLUE }, { COLOR_BLACK, COLOR_CYAN },
		  { COLOR_BLACK, COLOR_GREEN }, { COLOR_BLACK, COLOR_YELLOW } },
	.seq8_attr = { 0, A_BOLD, 0, 0, A_BOLD },
};

#undef D

/* Monochrome: the magnitude as dim … bold, plus a shade glyph in the cell. */
static const attr_t mono_heat[MONO_LEVELS] = { A_DIM, 0, 0, A_BOLD, A_BOLD };

static struct {
	const Theme *t;
	int colors;   /* 0 (monochrome), 8 or 256 */
	attr_t role[ROLE_COUNT];
	short div_pair, seq_pair; /* first pair of each ramp */
} theme_state = { &theme_default, 0, { 0 }, 0, 0 };

static void
theme_pair(short n, ThemePair p)
{
	init_pair(n, p.fg, p.bg);
}

int
theme_init(const char *name, int mono)
{
	int rc = 0;
	int force_mono = mono;

	theme_state.t = &theme_default;
	if (name && strcmp(name, "mono") == 0)
		force_mono = 1;
	else if (name && *name && strcmp(name, "default") != 0)
		rc = -1;

	theme_state.colors = 0;
	if (!force_mono && has_colors() && start_color() != ERR) {
		use_default_colors();
		int need = ROLE_COUNT + DIV256 + SEQ256 + 1;
		if (COLORS >= 256 && COLOR_PAIRS > need)
			theme_state.colors = 256;
		else if (COLORS >= 8 && COLOR_PAIRS > ROLE_COUNT + 2 * RAMP8)
			theme_state.colors = 8;
	}

	const Theme *t = theme_state.t;
	short pair = 1;
	for (int r = 0; r < ROLE_COUNT; r++) {
		const ThemeRoleSpec *rs = &t->role[r];
		if (theme_state.colors == 0) {
			theme_state.role[r] = rs->mono;
			continue;
		}
		theme_pair(pair, theme_state.colors == 256 ? rs->c256 : rs->c8);
		theme_state.role[r] = COLOR_PAIR(pair) | rs->attr;
		pair++;
	}
	theme_state.div_pair = pair;
	if (theme_state.colors == 256) {
		for (int i = 0; i < DIV256; i++)
			theme_pair(pair++, t->div256[i]);
		theme_state.seq_pair = pair;
		for (int i = 0; i < SEQ256; i++)
			theme_pair(pair++, t->seq256[i]);
	} else if (theme_state.colors == 8) {
		for (int i = 0; i < RAMP8; i++)
			theme_pair(pair++, t->div8[i]);
		theme_state.seq_pair = pair;
		for (int i = 0; i < RAMP8; i++)
			theme_pair(pair++, t->seq8[i]);
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
	const ThemeRoleSpec *rs = &theme_state.t->role[r];
	if (theme_state.colors == 0)
		return base | rs->mono;
	ThemePair p = theme_state.colors == 256 ? rs->c256 : rs->c8;
	if (p.fg == -1 && p.bg == -1)
		return base | rs->attr;
	return theme_state.role[r];
}

/* Index 0 … n-1 of t on a ramp of n steps. */
static int
theme_step(ThemeRamp ramp, double t, int n)
{
	double u;

	if (isnan(t))
		t = 0.0;
	if (ramp == RAMP_DIVERGING) {
		if (t < -1) t = -1;
		if (t > 1) t = 1;
		u = (t + 1) / 2;
	} else {
		if (t < 0) t = 0;
		if (t > 1) t = 1;
		u = t;
	}
	int i = (int)lround(u * (n - 1));
	return i < 0 ? 0 : i >= n ? n - 1 : i;
}

attr_t
theme_heat(ThemeRamp ramp, double t, int *level)
{
	double mag = isnan(t) ? 0 : fabs(t);
	int lv;

	if (mag > 1)
		mag = 1;
	/* Levels by magnitude: 0 for |t| < 0.1, then four equal bands. */
	lv = mag < 0.1 ? 0 : 1 + (int)((mag - 0.1) / 0.9 * 3.999);
	if (level)
		*level = lv;
	switch (theme_state.colors) {
	case 256:
		if (ramp == RAMP_DIVERGING)
			return COLOR_PAIR(theme_state.div_pair + theme_step(ramp, t, DIV256));
		return COLOR_PAIR(theme_state.seq_pair + theme_step(ramp, t, SEQ256));
	case 8: {
		int i = theme_step(ramp, t, RAMP8);
		if (ramp == RAMP_DIVERGING)
			return COLOR_PAIR(theme_state.div_pair + i) | theme_state.t->div8_attr[i];
		return COLOR_PAIR(theme_state.seq_pair + i) | theme_state.t->seq8_attr[i];
	}
	default:
		return mono_heat[lv];
	}
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

	if (level < 0)
		level = 0;
	if (level >= MONO_LEVELS)
		level = MONO_LEVELS - 1;
	return utf8 ? u[level] : a[level];
}

const char *
theme_name(void)
{
	return theme_state.colors == 0 && theme_state.t == &theme_default ? "mono" : theme_state.t->name;
}

int
theme_colors(void)
{
	return theme_state.colors;
}
