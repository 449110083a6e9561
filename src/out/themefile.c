/* themefile.c: theme JSON files → a plain ThemeFile (no curses): search, parse, validate. */
#include "out/themefile.h"
#include "base/i18n.h"
#include "base/paths.h"
#include "base/strbuf.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/fileio.h"
#include "base/jsonread.h"
#include "base/text.h"

#define THEMEFILE_MAX_BYTES (1L << 20)
#define D THEMEFILE_DEFAULT_COLOR

/* Role names: themeroles.h's THEME_ROLES in lower case, in the same order (unit_export reads each through a theme). */
static const char *const role_names[THEMEFILE_ROLE_COUNT + 1] = {
	"stage", "stage_name", "pane_title", "pane_focus", "label", "label_hi", "cursor", "operand",
	"masked", "flash", "rule", "narr", "formula", "quiz", "placeholder", "keys", "key", "info",
	"error", "cmdline", "popup", "popup_title", "notice", NULL
};

static const char *const attr_names[] = { "bold", "dim", "underline", "reverse", "standout", "italic", "blink", NULL };
static const unsigned attr_bits[] = { THEMEFILE_BOLD, THEMEFILE_DIM, THEMEFILE_UNDERLINE, THEMEFILE_REVERSE,
                                      THEMEFILE_STANDOUT, THEMEFILE_ITALIC, THEMEFILE_BLINK };

/* The 8 basic colours (0 … 7), then the terminal's own. */
static const char *const colour_names[] = { "black", "red", "green", "yellow", "blue", "magenta", "cyan", "white",
                                            "default", NULL };

static const char *const theme_keys[] = { "name", "description", "mono", "roles", "sequential", "diverging",
                                          "masked", "background", "foreground", NULL };
static const char *const role_keys[] = { "fg", "bg", "attrs", NULL };

/* ------------------------------------------------------------ the built-in default */

void themefile_default(ThemeFile *out)
{
	static const ThemeFileRole roles[THEMEFILE_ROLE_COUNT] = {
		{ 231, 24, 0 },                                  /* stage */
		{ 229, 24, THEMEFILE_BOLD },                     /* stage_name */
		{ 110, D, 0 },                                   /* pane_title */
		{ 229, D, THEMEFILE_BOLD },                      /* pane_focus */
		{ 250, D, 0 },                                   /* label */
		{ 229, D, THEMEFILE_BOLD },                      /* label_hi */
		{ 16, 226, THEMEFILE_BOLD },                     /* cursor */
		{ D, D, THEMEFILE_BOLD | THEMEFILE_UNDERLINE },  /* operand */
		{ 248, 236, 0 },                                 /* masked */
		{ 16, 214, THEMEFILE_BOLD },                     /* flash */
		{ 60, D, 0 },                                    /* rule */
		{ D, D, 0 },                                     /* narr */
		{ 159, D, THEMEFILE_BOLD },                      /* formula */
		{ 222, D, THEMEFILE_BOLD },                      /* quiz */
		{ 244, D, THEMEFILE_DIM },                       /* placeholder */
		{ 250, 236, 0 },                                 /* keys */
		{ 229, 236, THEMEFILE_BOLD },                    /* key */
		{ 151, D, 0 },                                   /* info */
		{ 231, 124, THEMEFILE_BOLD },                    /* error */
		{ D, D, 0 },                                     /* cmdline */
		{ 231, 237, 0 },                                 /* popup */
		{ 229, 237, THEMEFILE_BOLD },                    /* popup_title */
		{ 229, D, THEMEFILE_BOLD },                      /* notice */
	};
	static const short div[] = { 18, 19, 26, 75, 153, 255, 224, 217, 209, 160, 88 };
	static const short seq[] = { 255, 230, 229, 192, 150, 114, 71, 29, 23 };

	memset(out, 0, sizeof *out);
	strcpy(out->name, "default");
	strcpy(out->description, "Dark terminal: blue-white-red scores, yellow-green-teal weights");
	strcpy(out->path, "(built-in)");
	memcpy(out->role, roles, sizeof roles);
	out->ndiv = (int)(sizeof div / sizeof div[0]);
	memcpy(out->div, div, sizeof div);
	out->nseq = (int)(sizeof seq / sizeof seq[0]);
	memcpy(out->seq, seq, sizeof seq);
	out->masked = 236;
	out->background = out->foreground = THEMEFILE_DEFAULT_COLOR;
}

/* ------------------------------------------------------------ reading (jsonread.h) */


static int read_colour(JrCtx *c, const cJSON *v, short *out)
{
	const int nnames = (int)(sizeof colour_names / sizeof *colour_names) - 1;
	int i;

	if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 255 && v->valuedouble == floor(v->valuedouble)) {
		*out = (short)v->valueint;
		return 0;
	}
	if (!cJSON_IsString(v))
		return jr_fail(c, _("expected a colour 0-255 or a name (black red green yellow blue magenta cyan white default), got %s%s"), jr_got(v).s, "");
	for (i = 0; i < nnames; i++)
		if (strcmp(v->valuestring, colour_names[i]) == 0) {
			*out = i < 8 ? (short)i : D;
			return 0;
		}
	return jr_fail(c, _("expected a colour 0-255 or a name (black red green yellow blue magenta cyan white default), got %s%s"), jr_got(v).s,
	               jr_did_you_mean(v->valuestring, colour_names, nnames).s);
}

static int read_attrs(JrCtx *c, const cJSON *v, unsigned *out)
{
	const cJSON *it;
	int i = 0, k;

	if (!cJSON_IsArray(v))
		return jr_fail(c, _("expected a list of attributes such as [\"bold\", \"underline\"], got %s"), jr_got(v).s);
	*out = 0;
	cJSON_ArrayForEach(it, v) {
		size_t old = jr_path_index(c, i++);
		if (jr_read_choice(c, it, attr_names, &k) != 0)
			return -1;
		*out |= attr_bits[k];
		jr_path_set(c, old);
	}
	return 0;
}

static int read_role(JrCtx *c, const cJSON *v, ThemeFileRole *r)
{
	const cJSON *it;

	if (!cJSON_IsObject(v))
		return jr_fail(c, _("expected an object {\"fg\": COLOR, \"bg\": COLOR, \"attrs\": […]}, got %s"), jr_got(v).s);
	if (jr_refuse_unknown_keys(c, v, role_keys, _("key")) != 0)
		return -1;
	cJSON_ArrayForEach(it, v) {
		size_t old = jr_path_key(c, it->string);
		int rc = strcmp(it->string, "attrs") == 0 ? read_attrs(c, it, &r->attrs)
		                                          : read_colour(c, it, strcmp(it->string, "fg") == 0 ? &r->fg : &r->bg);
		if (rc != 0)
			return -1;
		jr_path_set(c, old);
	}
	return 0;
}

static int read_roles(JrCtx *c, const cJSON *v, ThemeFile *t)
{
	const cJSON *it;

	if (!cJSON_IsObject(v))
		return jr_fail(c, _("expected an object of role name → {\"fg\", \"bg\", \"attrs\"}, got %s"), jr_got(v).s);
	if (jr_refuse_unknown_keys(c, v, role_names, _("role")) != 0)
		return -1;
	cJSON_ArrayForEach(it, v) {
		size_t old = jr_path_key(c, it->string);
		int i = 0;
		while (strcmp(it->string, role_names[i]) != 0)
			i++;
		if (read_role(c, it, &t->role[i]) != 0)
			return -1;
		jr_path_set(c, old);
	}
	return 0;
}

static int read_ramp(JrCtx *c, const cJSON *v, int min, short *out, int *count)
{
	const cJSON *it;
	int n = cJSON_GetArraySize(v), i = 0;

	if (!cJSON_IsArray(v))
		return jr_fail(c, _("expected a list of %d to %d colours, got %s"), min, THEMEFILE_MAX_RAMP, jr_got(v).s);
	if (n < min || n > THEMEFILE_MAX_RAMP)
		return jr_fail(c, ngettext("expected a list of %d to %d colours, got %d colour",
		                            "expected a list of %d to %d colours, got %d colours", (unsigned long)n),
		               min, THEMEFILE_MAX_RAMP, n);
	cJSON_ArrayForEach(it, v) {
		size_t old = jr_path_index(c, i);
		if (read_colour(c, it, &out[i]) != 0)
			return -1;
		jr_path_set(c, old);
		i++;
	}
	*count = n;
	return 0;
}

/* "projector": letters, digits, - and _, and short. */
static int read_name(JrCtx *c, const cJSON *v, char *out, size_t size)
{
	size_t i, n = cJSON_IsString(v) ? strlen(v->valuestring) : 0;

	for (i = 0; i < n && (isalnum((unsigned char)v->valuestring[i]) || strchr("_-", v->valuestring[i])); i++)
		;
	if (n == 0 || n >= size || i != n)
		return jr_fail(c, _("expected a short name of letters, digits, - and _, got %s"), jr_got(v).s);
	memcpy(out, v->valuestring, n + 1);
	return 0;
}

/* Any text, kept escaped (the view shows it) and cut to size. */
static int read_description(JrCtx *c, const cJSON *v, char *out, size_t size)
{
	char *text = NULL, *e;

	if (jr_read_string(c, v, &text) != 0)
		return -1;
	e = text_escape(text, "");
	free(text);
	if (e == NULL)
		return jr_fail_oom(c);
	snprintf(out, size, "%s", e);
	free(e);
	return 0;
}

static int read_theme(JrCtx *c, const cJSON *root, ThemeFile *t)
{
	const cJSON *it;

	if (!cJSON_IsObject(root))
		return jr_fail(c, _("expected a theme object {\"name\": …, \"roles\": …}, got %s"), jr_got(root).s);
	if (jr_refuse_unknown_keys(c, root, theme_keys, _("key")) != 0)
		return -1;
	cJSON_ArrayForEach(it, root) {
		size_t old = jr_path_key(c, it->string);
		int r = 0;
		if (strcmp(it->string, "name") == 0)
			r = read_name(c, it, t->name, sizeof t->name);
		else if (strcmp(it->string, "description") == 0)
			r = read_description(c, it, t->description, sizeof t->description);
		else if (strcmp(it->string, "mono") == 0) {
			if (!cJSON_IsBool(it))
				r = jr_fail(c, _("expected true or false, got %s"), jr_got(it).s);
			t->mono = cJSON_IsTrue(it);
		} else if (strcmp(it->string, "roles") == 0)
			r = read_roles(c, it, t);
		else if (strcmp(it->string, "sequential") == 0)
			r = read_ramp(c, it, 2, t->seq, &t->nseq);
		else if (strcmp(it->string, "diverging") == 0)
			r = read_ramp(c, it, 3, t->div, &t->ndiv);
		else if (strcmp(it->string, "masked") == 0)
			r = read_colour(c, it, &t->masked);
		else if (strcmp(it->string, "background") == 0)
			r = read_colour(c, it, &t->background);
		else if (strcmp(it->string, "foreground") == 0)
			r = read_colour(c, it, &t->foreground);
		if (r != 0)
			return -1;
		jr_path_set(c, old);
	}
	if (t->name[0] == '\0')
		return jr_fail(c, _("missing \"name\""));
	return 0;
}

int themefile_parse(const char *file, const char *buf, size_t len, ThemeFile *out, char **err)
{
	char *name = text_escape(file, "");
	cJSON *root = NULL;
	ThemeFile t;
	JrCtx c;
	int rc = -1;

	*err = NULL;
	themefile_default(&t);
	t.name[0] = '\0';
	t.description[0] = '\0';
	snprintf(t.path, sizeof t.path, "%s", file);
	if (name != NULL)
		root = jr_parse(name, buf, len, 0, _("theme"), "{\"name\": …, \"roles\": …}", err);
	if (root != NULL) {
		jr_ctx_init(&c, name, NULL);
		if (read_theme(&c, root, &t) == 0) {
			*out = t;
			rc = 0;
		}
		*err = c.err;
	}
	cJSON_Delete(root);
	free(name);
	if (rc != 0) {
		themefile_default(out);
		if (*err == NULL)
			*err = strdup("out of memory reading a theme");
	}
	return rc;
}

/* ------------------------------------------------------------ finding */

static int is_path(const char *s)
{
	size_t n = strlen(s);
	return strchr(s, '/') != NULL || (n > 5 && strcmp(s + n - 5, ".json") == 0);
}

static int valid_name(const char *s)
{
	if (*s == '\0' || *s == '.')
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
			return 0;
	return 1;
}

/* $ATTNVIZ_THEMES, ./assets/themes, beside the program, the installed share directory. */
static int theme_dirs(const char *dirs[PATHS_MAX])
{
	return paths_search("ATTNVIZ_THEMES", "assets/themes", "themes", dirs);
}

int themefile_load(const char *name_or_path, ThemeFile *out, char **err)
{
	const char *dirs[PATHS_MAX];
	char *buf = NULL, *path = NULL;
	size_t len = 0;
	int i, rc, ndirs;

	*err = NULL;
	if (name_or_path == NULL || name_or_path[0] == '\0')
		name_or_path = "default";
	if (is_path(name_or_path)) {
		buf = fileio_read_all(name_or_path, THEMEFILE_MAX_BYTES, &len, err);
		if (buf == NULL) {
			themefile_default(out);
			return -1;
		}
		rc = themefile_parse(name_or_path, buf, len, out, err);
		free(buf);
		return rc;
	}
	if (!valid_name(name_or_path)) {
		char *e = text_escape(name_or_path, "");
		*err = str_printf(_("theme \"%s\": a theme name has letters, digits, - and _ (or give a path)"), e ? e : "");
		free(e);
		themefile_default(out);
		return -1;
	}
	ndirs = theme_dirs(dirs);
	for (i = 0; i < ndirs; i++) {
		if (dirs[i] == NULL || dirs[i][0] == '\0')
			continue;
		path = malloc(strlen(dirs[i]) + strlen(name_or_path) + 8);
		if (path == NULL)
			break;
		sprintf(path, "%s/%s.json", dirs[i], name_or_path);
		/* the first directory that has the name; not opened here: fileio reads only a regular file */
		if (access(path, F_OK) == 0) {
			buf = fileio_read_all(path, THEMEFILE_MAX_BYTES, &len, err);
			rc = buf ? themefile_parse(path, buf, len, out, err) : -1;
			if (buf == NULL)
				themefile_default(out);
			free(buf);
			free(path);
			return rc;
		}
		free(path);
		path = NULL;
	}
	themefile_default(out);
	if (strcmp(name_or_path, "default") == 0)
		return 0; /* built in: works without any theme files installed */
	{
		char **names = themefile_list();
		char list[512] = "";
		for (i = 0; names != NULL && names[i] != NULL; i++) {
			if (strlen(list) + strlen(names[i]) + 2 < sizeof list) {
				strcat(list, i ? " " : "");
				strcat(list, names[i]);
			}
			free(names[i]);
		}
		free(names);
		*err = str_printf(_("unknown theme \"%s\" (themes: %s; searched $ATTNVIZ_THEMES, ./assets/themes, "
		                    "beside the program, %s/themes)"), name_or_path, list[0] ? list : "default", ATTNVIZ_SHARE);
	}
	return -1;
}

static int compare_strings(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

char **themefile_list(void)
{
	const char *dirs[PATHS_MAX];
	char **names = NULL;
	int count = 0, i, j, ndirs;

	ndirs = theme_dirs(dirs);
	for (i = 0; i < ndirs; i++) {
		DIR *d;
		struct dirent *e;
		if (dirs[i] == NULL || dirs[i][0] == '\0' || (d = opendir(dirs[i])) == NULL)
			continue;
		while ((e = readdir(d)) != NULL) {
			size_t n = strlen(e->d_name);
			char **grown, *name;
			if (n <= 5 || e->d_name[0] == '.' || strcmp(e->d_name + n - 5, ".json") != 0)
				continue;
			name = strndup(e->d_name, n - 5);
			if (name == NULL)
				break;
			for (j = 0; j < count && strcmp(names[j], name) != 0; j++)
				;
			if (j < count) {
				free(name);
				continue;
			}
			grown = realloc(names, (size_t)(count + 2) * sizeof *names);
			if (grown == NULL) {
				free(name);
				break;
			}
			names = grown;
			names[count++] = name;
			names[count] = NULL;
		}
		closedir(d);
	}
	if (count > 1)
		qsort(names, (size_t)count, sizeof *names, compare_strings);
	return names;
}

/* ------------------------------------------------------------ colours */

unsigned long themefile_rgb(int colour, unsigned long dflt)
{
	static const unsigned long basic[16] = {
		0x000000, 0x800000, 0x008000, 0x808000, 0x000080, 0x800080, 0x008080, 0xc0c0c0,
		0x808080, 0xff0000, 0x00ff00, 0xffff00, 0x0000ff, 0xff00ff, 0x00ffff, 0xffffff
	};
	static const int level[6] = { 0, 95, 135, 175, 215, 255 };

	if (colour < 0 || colour > 255)
		return dflt;
	if (colour < 16)
		return basic[colour];
	if (colour < 232) {
		int k = colour - 16;
		return ((unsigned long)level[k / 36] << 16) | ((unsigned long)level[(k / 6) % 6] << 8) |
		       (unsigned long)level[k % 6];
	}
	{
		unsigned long g = (unsigned long)(8 + 10 * (colour - 232));
		return (g << 16) | (g << 8) | g;
	}
}

/* The 8 basic colours as xterm draws them (what an 8-colour terminal most likely shows). */
static const int basic8[8][3] = {
	{ 0, 0, 0 }, { 205, 0, 0 }, { 0, 205, 0 }, { 205, 205, 0 },
	{ 0, 0, 238 }, { 205, 0, 205 }, { 0, 205, 205 }, { 229, 229, 229 }
};

int themefile_to8(int colour)
{
	unsigned long rgb;
	int r, g, b, best = 0, i;
	long bestd = -1;

	if (colour < 0)
		return -1;
	if (colour < 8)
		return colour;
	if (colour < 16)
		return colour - 8;
	rgb = themefile_rgb(colour, 0);
	r = (int)(rgb >> 16 & 0xff);
	g = (int)(rgb >> 8 & 0xff);
	b = (int)(rgb & 0xff);
	for (i = 0; i < 8; i++) {
		/* Magenta carries neither black nor white at 4.5:1 (4.48 and 3.7): purples go to blue or red. */
		if (i == 5)
			continue;
		long d = (long)(r - basic8[i][0]) * (r - basic8[i][0]) + (long)(g - basic8[i][1]) * (g - basic8[i][1]) +
		         (long)(b - basic8[i][2]) * (b - basic8[i][2]);
		if (bestd < 0 || d < bestd) {
			bestd = d;
			best = i;
		}
	}
	return best;
}

unsigned long themefile_rgb_on(int colour, int colors, unsigned long dflt)
{
	int b;

	if (colors != 8 || colour < 0)
		return themefile_rgb(colour, dflt);
	b = themefile_to8(colour);
	return (unsigned long)basic8[b][0] << 16 | (unsigned long)basic8[b][1] << 8 | (unsigned long)basic8[b][2];
}

/* WCAG 2 relative luminance of an sRGB colour. */
static double luminance(unsigned long rgb)
{
	double c[3];
	int i;

	for (i = 0; i < 3; i++) {
		double v = (double)(rgb >> (16 - 8 * i) & 0xff) / 255.0;
		c[i] = v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
	}
	return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}

double themefile_contrast(unsigned long a, unsigned long b)
{
	double la = luminance(a), lb = luminance(b);

	return la > lb ? (la + 0.05) / (lb + 0.05) : (lb + 0.05) / (la + 0.05);
}

int themefile_text_on_screen(int colour, int colors)
{
	unsigned long bg = themefile_rgb_on(colour, colors, 0xffffff);
	unsigned long black = themefile_rgb_on(16, colors, 0), white = themefile_rgb_on(231, colors, 0);

	/* Whichever contrasts more: one of the two is always at least 4.5:1 in 256 colours. */
	return themefile_contrast(bg, black) >= themefile_contrast(bg, white) ? 16 : 231;
}

int themefile_text_on(int colour)
{
	return themefile_text_on_screen(colour, 256);
}

int themefile_role_on_cells(int role)
{
	return role == ROLE_CURSOR || role == ROLE_MASKED || role == ROLE_FLASH;
}

ThemeFileRole themefile_screen_role(const ThemeFile *t, int role, int colors)
{
	ThemeFileRole r = t->role[role];

	/* A cell's number on a colour of the theme's: readable, or black or white instead. */
	if (themefile_role_on_cells(role) && r.bg >= 0 &&
	    (r.fg < 0 || themefile_contrast(themefile_rgb_on(r.fg, colors, 0), themefile_rgb_on(r.bg, colors, 0)) <
	                         THEMEFILE_MIN_CONTRAST))
		r.fg = (short)themefile_text_on_screen(r.bg, colors);
	return r;
}

ThemeFileStep8 themefile_ramp8(int diverging, int i, int light)
{
	/* as the 256-colour ramps run: white → yellow → green → teal, blue → white → red; on white, pale → dark */
	static const short seq[2][THEMEFILE_RAMP8] = { { 7, 3, 2, 6, 4 }, { 3, 2, 6, 4, 0 } };
	static const short div[2][THEMEFILE_RAMP8] = { { 4, 6, 7, 3, 1 }, { 4, 6, 2, 3, 1 } };
	ThemeFileStep8 st;
	unsigned long bg, black = themefile_rgb_on(0, 8, 0), white = themefile_rgb_on(7, 8, 0);

	i = i < 0 ? 0 : i >= THEMEFILE_RAMP8 ? THEMEFILE_RAMP8 - 1 : i;
	st.bg = (diverging ? div : seq)[light ? 1 : 0][i];
	bg = themefile_rgb_on(st.bg, 8, 0);
	st.fg = themefile_contrast(bg, black) >= themefile_contrast(bg, white) ? 0 : 7;
	st.bold = st.fg == 7;
	return st;
}

int themefile_ramp_index(double t, int diverging, int n)
{
	double u;
	long i;

	if (n <= 1)
		return 0;
	if (isnan(t))
		t = 0.0;
	if (diverging) {
		t = t < -1 ? -1 : t > 1 ? 1 : t;
		u = (t + 1) / 2;
	} else
		u = t < 0 ? 0 : t > 1 ? 1 : t;
	i = lround(u * (n - 1));
	return i < 0 ? 0 : i >= n ? n - 1 : (int)i;
}

/* ------------------------------------------------------------ the one in use */

static ThemeFile current;
static int current_set;

const ThemeFile *themefile_current(void)
{
	if (!current_set) {
		themefile_default(&current);
		current_set = 1;
	}
	return &current;
}

void themefile_set_current(const ThemeFile *t)
{
	if (t == NULL)
		themefile_default(&current);
	else
		current = *t;
	current_set = 1;
}
