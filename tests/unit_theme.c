/* unit_theme.c: colours anyone can read. For every shipped theme (and the
 * built-in default), every colour a matrix cell can take — each ramp step,
 * the masked colour, the cursor, masked and flash roles — carries its number
 * at a WCAG contrast ratio of at least 4.5:1: on a 256-colour screen, on an
 * 8-colour one, and in SVG exports (checked on the figure itself). Without
 * colour, the sign of a diverging value shows as a glyph or a mark. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out/export.h"
#include "base/fileio.h"
#include "app/session.h"
#include "tui/theme.h"
#include "out/themefile.h"

#define MAX_THEMES 32

static int load_themes(ThemeFile *out, int max)
{
	DIR *d = opendir("assets/themes");
	struct dirent *e;
	int n = 0;
	char *err = NULL;

	assert_non_null(d);
	themefile_default(&out[n++]);
	while ((e = readdir(d)) != NULL && n < max) {
		char path[300];
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof path, "assets/themes/%s", e->d_name);
		if (themefile_load(path, &out[n], &err) != 0)
			fail_msg("%s", err);
		n++;
	}
	closedir(d);
	assert_true(n >= 7);
	return n;
}

/* The number's colour on background bg as a terminal of colors draws it; 0 when bg is the terminal's own. */
static double screen_ratio(int bg, int colors)
{
	if (bg < 0)
		return 21.0; /* the terminal's own colours, which it chose to be readable */
	return themefile_contrast(themefile_rgb_on(themefile_text_on_screen(bg, colors), colors, 0),
	                          themefile_rgb_on(bg, colors, 0));
}

static void check_bg(const ThemeFile *t, const char *what, int i, int bg)
{
	static const int colors[] = { 256, 8 };
	size_t k;

	for (k = 0; k < sizeof colors / sizeof colors[0]; k++) {
		double r = screen_ratio(bg, colors[k]);
		if (r < THEMEFILE_MIN_CONTRAST)
			fail_msg("theme %s, %s[%d] = colour %d on %d colours: contrast %.2f:1", t->name, what, i, bg, colors[k], r);
	}
	/* SVG: "default" is white there */
	{
		double r = themefile_contrast(themefile_rgb(themefile_text_on(bg), 0), themefile_rgb(bg, 0xffffff));
		if (r < THEMEFILE_MIN_CONTRAST)
			fail_msg("theme %s, %s[%d] = colour %d in SVG: contrast %.2f:1", t->name, what, i, bg, r);
	}
}

static void test_ramps_readable(void **state)
{
	ThemeFile t[MAX_THEMES];
	int n = load_themes(t, MAX_THEMES), i, j;
	(void)state;

	for (i = 0; i < n; i++) {
		for (j = 0; j < t[i].ndiv; j++)
			check_bg(&t[i], "diverging", j, t[i].div[j]);
		for (j = 0; j < t[i].nseq; j++)
			check_bg(&t[i], "sequential", j, t[i].seq[j]);
		check_bg(&t[i], "masked", 0, t[i].masked);
	}
	/* every one of the 256 colours has a readable text colour (WCAG: black or white always reaches 4.58:1) */
	for (j = 0; j < 256; j++)
		assert_true(screen_ratio(j, 256) >= THEMEFILE_MIN_CONTRAST);
}

/*
 * A heatmap's cells stand out from the screen: no ramp step at its ends or at
 * zero is the terminal's own background ("default" — on a dark terminal the
 * lowest weight was black like the screen, a hole), and each is at least
 * 1.15:1 from the screen (black; white for light); and no two themes share a
 * diverging ramp (viridis's signed scale was blue-orange's).
 */
static void test_ramps_visible_and_distinct(void **state)
{
	ThemeFile t[MAX_THEMES];
	int n = load_themes(t, MAX_THEMES), i, j;
	(void)state;

	for (i = 0; i < n; i++) {
		const int ends[][2] = { { t[i].seq[0], 0 }, { t[i].div[t[i].ndiv / 2], 1 }, { t[i].div[0], 1 } };
		/* light is for a light terminal: its screen is white */
		const unsigned long screen = strcmp(t[i].name, "light") == 0 ? 0xffffff : 0x000000;
		for (j = 0; j < 3; j++) {
			double r;
			if (ends[j][0] < 0)
				fail_msg("theme %s: a %s ramp step is the terminal's background (\"default\")", t[i].name,
				         ends[j][1] ? "diverging" : "sequential");
			r = themefile_contrast(themefile_rgb(ends[j][0], 0), screen);
			if (r < 1.15)
				fail_msg("theme %s: ramp colour %d on its terminal's #%06lx: %.2f:1", t[i].name, ends[j][0], screen, r);
		}
	}
	/* light sets its screen's colours (the TUI paints them: t_tui.sh), its text readable on them */
	for (i = 0; i < n; i++)
		if (strcmp(t[i].name, "light") == 0) {
			assert_true(t[i].background >= 0 && t[i].foreground >= 0);
			assert_true(themefile_contrast(themefile_rgb(t[i].foreground, 0), themefile_rgb(t[i].background, 0)) >=
			            THEMEFILE_MIN_CONTRAST);
		}
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++) {
			if (strcmp(t[i].name, t[j].name) == 0)
				continue; /* default.json is the built-in default */
			if (t[i].ndiv == t[j].ndiv && memcmp(t[i].div, t[j].div, sizeof t[i].div[0] * (size_t)t[i].ndiv) == 0)
				fail_msg("themes %s and %s: the same diverging ramp", t[i].name, t[j].name);
		}
}

/*
 * On 8 colours (issue 26): every theme draws themefile_ramp8's ramps. On a
 * dark screen and on a white one (light's), no step is the screen's colour
 * (a theme's own steps fell onto it: light's six lowest weights, viridis's
 * lowest), each stands out from it, a ramp's steps all differ (light's
 * negative and positive small values shared white), and its text reads.
 */
static void test_ramps8(void **state)
{
	const unsigned long screen[2] = { themefile_rgb_on(0, 8, 0), themefile_rgb_on(7, 8, 0) };
	ThemeFile light;
	char *err = NULL;
	int li, d, i, j;
	(void)state;

	for (li = 0; li < 2; li++)
		for (d = 0; d < 2; d++)
			for (i = 0; i < THEMEFILE_RAMP8; i++) {
				ThemeFileStep8 st = themefile_ramp8(d, i, li);
				unsigned long bg = themefile_rgb_on(st.bg, 8, 0), fg = themefile_rgb_on(st.fg, 8, 0);
				if (st.bg < 0 || st.bg > 7 || st.bg == 5 || bg == screen[li])
					fail_msg("8 colours, %s screen, %s step %d: colour %d (the screen's, or none)", li ? "white" : "dark",
					         d ? "diverging" : "sequential", i, st.bg);
				if (themefile_contrast(bg, screen[li]) < 1.15)
					fail_msg("8 colours, %s step %d: colour %d hardly stands out from the screen", d ? "diverging" : "sequential",
					         i, st.bg);
				if (themefile_contrast(fg, bg) < THEMEFILE_MIN_CONTRAST)
					fail_msg("8 colours, step %d: text %d on %d reads at %.2f:1", i, st.fg, st.bg, themefile_contrast(fg, bg));
				for (j = 0; j < i; j++)
					if (themefile_ramp8(d, j, li).bg == st.bg)
						fail_msg("8 colours, %s ramp: steps %d and %d are both colour %d", d ? "diverging" : "sequential", j, i,
						         st.bg);
			}
	/* light's screen is white on 8 colours too: it takes the white screen's ramps */
	assert_int_equal(themefile_load("assets/themes/light.json", &light, &err), 0);
	assert_int_equal(themefile_to8(light.background), 7);
}

/* "CURSOR", "MASKED", … for a message: the roles' names in themeroles.h. */
#define ROLE_NAME(name) #name,
static const char *const role_name[ROLE_COUNT] = { THEME_ROLES(ROLE_NAME) };
#undef ROLE_NAME

static void test_cell_roles_readable(void **state)
{
	ThemeFile t[MAX_THEMES];
	int n = load_themes(t, MAX_THEMES), i, r, cells = 0;
	static const int colors[] = { 256, 8 };
	(void)state;

	for (r = 0; r < THEMEFILE_ROLE_COUNT; r++)
		cells += themefile_role_on_cells(r);
	assert_int_equal(cells, 3);
	for (i = 0; i < n; i++)
		for (r = 0; r < THEMEFILE_ROLE_COUNT; r++) {
			size_t k;
			if (!themefile_role_on_cells(r))
				continue;
			for (k = 0; k < sizeof colors / sizeof colors[0]; k++) {
				ThemeFileRole s = themefile_screen_role(&t[i], r, colors[k]);
				double ratio;
				if (s.bg < 0 || s.fg < 0)
					continue; /* drawn in the terminal's own colours */
				ratio = themefile_contrast(themefile_rgb_on(s.fg, colors[k], 0), themefile_rgb_on(s.bg, colors[k], 0));
				if (ratio < THEMEFILE_MIN_CONTRAST)
					fail_msg("theme %s, role %s on %d colours: %d on %d, contrast %.2f:1", t[i].name,
					         role_name[r], colors[k], s.fg, s.bg, ratio);
			}
		}
	/* The theme's own pair, as a file gives it (what a --render frame or a theme's reader sees before
	 * the screen's rescue): a masked −∞ cell too carries its text at 4.5:1 on every theme. */
	for (i = 0; i < n; i++)
		for (r = 0; r < THEMEFILE_ROLE_COUNT; r++) {
			const ThemeFileRole *own = &t[i].role[r];
			double ratio;
			if (!themefile_role_on_cells(r) || own->bg < 0 || own->fg < 0)
				continue;
			ratio = themefile_contrast(themefile_rgb(own->fg, 0), themefile_rgb(own->bg, 0));
			if (ratio < THEMEFILE_MIN_CONTRAST)
				fail_msg("theme %s, role %s as the theme gives it: %d on %d, contrast %.2f:1", t[i].name,
				         role_name[r], own->fg, own->bg, ratio);
		}
	/* a readable role keeps its own colours */
	{
		ThemeFile d;
		themefile_default(&d);
		d.role[ROLE_CURSOR].fg = 16;
		d.role[ROLE_CURSOR].bg = 226;
		assert_int_equal(themefile_screen_role(&d, ROLE_CURSOR, 256).fg, 16);
	}
}

/* ------------------------------------------------------------ SVG */

static Session *session_from_file(const char *path)
{
	char *err = NULL, *warn = NULL;
	size_t len;
	char *buf = fileio_read_all(path, LESSON_MAX_BYTES, &len, &err);
	Lesson *l;
	Session *s = calloc(1, sizeof *s);

	if (buf == NULL)
		fail_msg("%s", err);
	l = lesson_load_string(path, buf, len, &err, &warn);
	free(buf);
	free(warn);
	if (l == NULL)
		fail_msg("lesson: %s", err ? err : "?");
	assert_non_null(s);
	if (session_init(s, l, NULL, &err) != 0)
		fail_msg("session: %s", err ? err : "?");
	strcpy(s->lang, "en");
	return s;
}

static char *render_svg(const Session *s, const char *stage, const ThemeFile *th)
{
	ExportTarget t;
	char *err = NULL, *out;

	if (export_target_parse(s->attn, stage, s->stage, 0, &t, &err) != 0)
		fail_msg("target %s: %s", stage, err);
	out = export_render(s->attn, s, EXPORT_SVG, &t, th, &err);
	if (out == NULL)
		fail_msg("render: %s", err);
	return out;
}

static unsigned long hex_after(const char *p, const char *key)
{
	const char *q = strstr(p, key);
	assert_non_null(q);
	return strtoul(q + strlen(key) + 2, NULL, 16); /* key="#rrggbb */
}

/* Every cell's number against the cell's fill, as written in the figure; returns how many cells. */
static int svg_cells_readable(const char *svg, const char *theme)
{
	const char *p = svg;
	int n = 0;

	while ((p = strstr(p, "<rect class=\"cell\"")) != NULL) {
		unsigned long fill = hex_after(p, "fill=");
		const char *num = strstr(p, "<text class=\"num\"");
		assert_non_null(num);
		unsigned long ink = hex_after(num, "fill=");
		double r = themefile_contrast(fill, ink);
		if (r < THEMEFILE_MIN_CONTRAST)
			fail_msg("theme %s: number #%06lx on cell #%06lx: contrast %.2f:1", theme, ink, fill, r);
		n++;
		p = num;
	}
	return n;
}

static void test_svg_readable(void **state)
{
	ThemeFile t[MAX_THEMES];
	int n = load_themes(t, MAX_THEMES), i;
	/* a causal mask (−∞ cells), weights (the sequential ramp), negatives (the diverging one) */
	Session *mask = session_from_file("lessons/mask.json");
	Session *pos = session_from_file("lessons/positional.json");
	(void)state;

	for (i = 0; i < n; i++) {
		char *a = render_svg(mask, "softmax", &t[i]);
		char *b = render_svg(pos, "scores", &t[i]);
		char *c = render_svg(mask, "masked", &t[i]); /* −∞ cells */
		assert_true(svg_cells_readable(c, t[i].name) > 0);
		free(c);
		assert_true(svg_cells_readable(a, t[i].name) > 0);
		assert_true(svg_cells_readable(b, t[i].name) > 0);
		free(a);
		free(b);
	}
	session_free(mask);
	session_free(pos);
	free(mask);
	free(pos);
}

/* ------------------------------------------------------------ without colour */

static void test_mono_sign(void **state)
{
	ThemeFile mono;
	char *err = NULL;
	Session *pos = session_from_file("lessons/positional.json");
	char *svg;
	int lv, utf8;
	(void)state;

	/* on screen: a negative value's glyph is never a positive one's */
	for (utf8 = 0; utf8 <= 1; utf8++)
		for (lv = 1; lv <= 4; lv++) {
			int k;
			for (k = 0; k <= 4; k++)
				assert_string_not_equal(theme_shade(-lv, utf8), theme_shade(k, utf8));
		}
	assert_string_equal(theme_shade(0, 0), " ");
	/* in a grey SVG: every negative cell is marked, and only those */
	assert_int_equal(themefile_load("mono", &mono, &err), 0);
	assert_true(mono.mono);
	svg = render_svg(pos, "scores", &mono);
	{
		int neg = 0;
		const char *p = svg;
		while ((p = strstr(p, "<text class=\"num\"")) != NULL) {
			const char *gt = strchr(p, '>');
			assert_non_null(gt);
			if (gt[1] == '-' || strncmp(gt + 1, "\u2212", 3) == 0)
				neg++;
			p = gt;
		}
		assert_true(neg > 0);
		const char *q = svg;
		int marks = 0;
		while ((q = strstr(q, "class=\"neg\"")) != NULL) {
			marks++;
			q++;
		}
		assert_int_equal(marks, neg);
	}
	free(svg);
	session_free(pos);
	free(pos);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ramps_readable),
		cmocka_unit_test(test_ramps_visible_and_distinct),
		cmocka_unit_test(test_ramps8),
		cmocka_unit_test(test_cell_roles_readable),
		cmocka_unit_test(test_svg_readable),
		cmocka_unit_test(test_mono_sign),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
