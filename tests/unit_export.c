/* unit_export.c: exports (CSV numbers, SVG shape and escaping, Markdown, TeX, JSON slice),
 * the saved lesson round trip, atomic writes, and theme files (every shipped
 * theme, and each malformed one under tests/bad-themes with its message). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "engine/backward.h"
#include "inspect/dump.h"
#include "out/export.h"
#include "base/fileio.h"
#include "app/session.h"
#include "out/themefile.h"
#include "unit_common.h"

/* ------------------------------------------------------------ helpers */

/* The dump as cJSON prints dump_attn's tree (unformatted when compact): what dump_write must write. */
static char *dump_string(const Attn *a, int compact)
{
	char *err = NULL, *s;
	cJSON *o = dump_attn(a, &err);

	if (o == NULL)
		fail_msg("dump_attn: %s", err ? err : "?");
	s = compact ? cJSON_PrintUnformatted(o) : cJSON_Print(o);
	cJSON_Delete(o);
	assert_non_null(s);
	return s;
}

static Session *session_from_string(const char *json)
{
	char *err = NULL, *warn = NULL;
	Lesson *l = lesson_load_string("test.json", json, strlen(json), &err, &warn);
	Session *s = calloc(1, sizeof *s);

	if (l == NULL)
		fail_msg("lesson: %s", err ? err : "?");
	free(warn);
	assert_non_null(s);
	if (session_init(s, l, NULL, &err) != 0)
		fail_msg("session: %s", err ? err : "?");
	strcpy(s->lang, "en");
	return s;
}

static Session *session_from_file(const char *path)
{
	char *err = NULL;
	size_t len;
	char *buf = fileio_read_all(path, LESSON_MAX_BYTES, &len, &err);
	Session *s;

	if (buf == NULL)
		fail_msg("%s", err);
	s = session_from_string(buf);
	free(buf);
	return s;
}

/* 1 for a lesson on a real model ("model": lessons/FORMAT.md), which app/ puts on its model as it opens. */
static int needs_model(const char *path)
{
	Lesson *l = lesson_load(path, NULL, NULL);
	const int yes = lesson_needs_model(l);

	lesson_free(l);
	return yes;
}

static void session_destroy(Session *s)
{
	session_free(s);
	free(s);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;
	const char *p = hay;
	while ((p = strstr(p, needle)) != NULL) {
		n++;
		p += strlen(needle);
	}
	return n;
}

static char *render(const Session *s, ExportFormat fmt, const char *word)
{
	ExportTarget t;
	char *err = NULL, *out;

	if (export_target_parse(s->attn, word, s->stage, s->head, &t, &err) != 0)
		fail_msg("target %s: %s", word ? word : "(none)", err);
	out = export_render(s->attn, s, fmt, &t, NULL, &err);
	if (out == NULL)
		fail_msg("render: %s", err);
	return out;
}

/* Tokens and a title with every character that needs escaping somewhere. */
static const char hostile_json[] =
	"{\"attnviz\": 1, \"title\": \"<script>&\\\"' \\u0001 x|y\","
	" \"tokens\": [\"a<b\", \"c&d\\\"\", \"e|f_g%\", \"\\u0007bel\"],"
	" \"X\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 3, \"seed\": 7},"
	" \"heads\": 1, \"mask\": \"causal\","
	" \"W_q\": {\"random\": \"normal\", \"rows\": 3, \"cols\": 4, \"seed\": 1},"
	" \"W_k\": {\"random\": \"normal\", \"rows\": 3, \"cols\": 4, \"seed\": 2},"
	" \"W_v\": {\"identity\": 3},"
	" \"steps\": [{\"stage\": \"mask\", \"text\": \"Narration with | pipe and <b>tag</b>\"}]}";

/* ------------------------------------------------------------ CSV */

static void test_csv_numbers(void **state)
{
	Session *s = session_from_file("lessons/multihead.json");
	char *csv = render(s, EXPORT_CSV, "weights"), *line, *save;
	const Mat *m = attn_matrix(s->attn, AM_WEIGHTS, 0);
	int row = -1;
	(void)state;

	for (line = strtok_r(csv, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save), row++) {
		char *p = line, *end;
		int col = 0;
		assert_true(strlen(line) > 0 && line[strlen(line) - 1] == '\r'); /* RFC 4180: CRLF */
		if (row < 0) {
			assert_int_equal(strncmp(line, "weights,I,saw,a,saw\r", 20), 0);
			continue;
		}
		p = strchr(p, ',');
		assert_non_null(p);
		for (; *p == ','; col++) {
			double x = strtod(p + 1, &end);
			assert_true(col < m->cols);
			assert_true(x == MAT_AT(*m, row, col)); /* %.17g round-trips exactly */
			p = end;
		}
		assert_int_equal(col, m->cols);
	}
	assert_int_equal(row, m->rows);
	free(csv);
	session_destroy(s);
}

static void test_csv_inf_and_quoting(void **state)
{
	Session *s = session_from_string(hostile_json);
	char *csv = render(s, EXPORT_CSV, "masked");
	(void)state;

	/* causal over 4 tokens: 6 masked cells, each an empty field (a blank to a spreadsheet), never "-inf" */
	assert_null(strstr(csv, "inf"));
	{
		int empty = 0;
		for (const char *p = strchr(csv, '\n'); p != NULL && p[1] != '\0'; p = strchr(p + 1, '\n'))
			for (const char *q = p + 1; *q != '\r' && *q != '\0'; q++)
				empty += *q == ',' && (q[1] == ',' || q[1] == '\r');
		assert_int_equal(empty, 6);
	}
	/* the label with a quote is quoted, its quote doubled */
	assert_non_null(strstr(csv, ",\"c&d\"\"\","));
	assert_null(strchr(csv, '\x07'));
	free(csv);
	/* a whole stage in CSV: its result */
	csv = render(s, EXPORT_CSV, "softmax");
	assert_int_equal(strncmp(csv, "weights,", 8), 0);
	free(csv);
	session_destroy(s);
}

/* ------------------------------------------------------------ SVG */

static void test_svg_shape(void **state)
{
	Session *s = session_from_file("lessons/multihead.json");
	char *svg = render(s, EXPORT_SVG, "softmax");
	(void)state;

	assert_int_equal(strncmp(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 44), 0);
	assert_non_null(strstr(svg, "</svg>\n"));
	/* scaled (no mask here) and weights, 4 × 4 each */
	assert_int_equal(count(svg, "class=\"cell\""), 32);
	assert_int_equal(count(svg, "<text"), count(svg, "</text>"));
	assert_int_equal(count(svg, "class=\"pane\""), 2);
	assert_int_equal(count(svg, "class=\"legend\""), 2);
	assert_non_null(strstr(svg, "weights = softmax(scaled)")); /* the formula */
	assert_null(strstr(svg, "masked")); /* a lesson without a mask */
	assert_non_null(strstr(svg, ">saw</text>"));
	free(svg);
	session_destroy(s);
}

static void test_svg_escaped(void **state)
{
	Session *s = session_from_string(hostile_json);
	char *svg = render(s, EXPORT_SVG, "mask");
	const unsigned char *p;
	(void)state;

	assert_null(strstr(svg, "<script>"));
	assert_non_null(strstr(svg, "&lt;script&gt;&amp;&quot;&apos;"));
	assert_non_null(strstr(svg, ">a&lt;b</text>"));
	assert_non_null(strstr(svg, ">c&amp;d&quot;</text>"));
	/* no control character but newline anywhere (XML 1.0) */
	for (p = (const unsigned char *)svg; *p; p++)
		assert_true(*p >= 0x20 || *p == '\n');
	/* masked cells: −∞ in grey */
	assert_int_equal(count(svg, ">\u2212\u221e</text>"), 6);
	assert_non_null(strstr(svg, "\u2212\u221e masked"));
	/* a cell count of scaled + masked */
	assert_int_equal(count(svg, "class=\"cell\""), 32);
	free(svg);
	session_destroy(s);
}

/* ------------------------------------------------------------ Markdown, TeX, JSON */

static void test_md_shape(void **state)
{
	Session *s = session_from_string(hostile_json);
	char *md = render(s, EXPORT_MD, "mask"), *line, *save;
	int tables = 0, rows = 0;
	(void)state;

	assert_int_equal(strncmp(md, "## ", 3), 0);
	assert_null(strstr(md, "<script>"));
	assert_non_null(strstr(md, "\\<script\\>"));
	assert_non_null(strstr(md, "> Narration with \\| pipe and \\<b\\>tag\\</b\\>"));
	for (line = strtok_r(md, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		size_t pipes = 0;
		const char *p;
		if (line[0] != '|')
			continue;
		for (p = line; *p; p++)
			pipes += *p == '|' && (p == line || p[-1] != '\\');
		assert_int_equal(pipes, 4 + 2); /* 4 columns, the label column, the closing pipe */
		if (strncmp(line, "|---|", 5) == 0)
			tables++;
		else
			rows++;
	}
	assert_int_equal(tables, 2);     /* scaled, masked */
	assert_int_equal(rows, 2 * 5);   /* a header and 4 rows each */
	free(md);
	session_destroy(s);
}

static void test_tex_shape(void **state)
{
	Session *s = session_from_string(hostile_json);
	char *tex = render(s, EXPORT_TEX, "mask");
	(void)state;

	assert_int_equal(count(tex, "\\begin{document}"), 1);
	assert_int_equal(count(tex, "\\end{document}"), 1);
	assert_int_equal(count(tex, "\\begin{bmatrix}"), 2);
	assert_int_equal(count(tex, "\\end{bmatrix}"), 2);
	assert_int_equal(count(tex, "-\\infty"), 7); /* six masked cells and the formula's else −∞ */
	assert_non_null(strstr(tex, "e\\textbar{}f\\_g\\%"));
	assert_non_null(strstr(tex, "c\\&d"));
	assert_null(strchr(tex, '\x01'));
	free(tex);
	session_destroy(s);
}

static void test_json_slice(void **state)
{
	Session *s = session_from_file("lessons/multihead.json");
	ExportTarget t;
	char *err = NULL, *js, *dump;
	cJSON *slice, *full, *w, *dw;
	(void)state;

	assert_int_equal(export_target_parse(s->attn, "softmax", s->stage, 1, &t, &err), 0);
	js = export_render(s->attn, s, EXPORT_JSON, &t, NULL, &err);
	assert_non_null(js);
	dump = dump_string(s->attn, 1);
	slice = cJSON_Parse(js);
	full = cJSON_Parse(dump);
	assert_non_null(slice);
	assert_string_equal(cJSON_GetObjectItem(slice, "stage")->valuestring, "softmax");
	assert_int_equal(cJSON_GetObjectItem(slice, "head")->valueint, 1);
	assert_non_null(cJSON_GetObjectItem(slice, "formula"));
	w = cJSON_GetObjectItem(slice, "weights");
	dw = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(full, "heads"), 1), "weights");
	assert_true(cJSON_Compare(w, dw, 1));
	assert_true(cJSON_Compare(cJSON_GetObjectItem(slice, "scaled"),
	                          cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(full, "heads"), 1), "scaled"), 1));
	cJSON_Delete(slice);
	cJSON_Delete(full);
	free(js);
	free(dump);
	session_destroy(s);
}

/* md and json show the figure's panes (fig_panes): at scores head 1, Q's head-1 columns and Kᵀ's head-1 rows. */
static void test_md_json_panes(void **state)
{
	Session *s = session_from_file("lessons/multihead.json");
	ExportTarget t;
	char *err = NULL, *md, *js;
	cJSON *o, *panes, *q;
	const Mat *Q;
	(void)state;

	assert_int_equal(export_target_parse(s->attn, "scores", s->stage, 1, &t, &err), 0);
	md = export_render(s->attn, s, EXPORT_MD, &t, NULL, &err);
	js = export_render(s->attn, s, EXPORT_JSON, &t, NULL, &err);
	assert_non_null(md);
	assert_non_null(js);
	assert_non_null(strstr(md, "### Q (head 1) (4 \u00d7 2)"));
	assert_non_null(strstr(md, "### K\u1d40 (head 1) (2 \u00d7 4)"));
	o = cJSON_Parse(js);
	assert_non_null(o);
	panes = cJSON_GetObjectItem(o, "panes");
	assert_int_equal(cJSON_GetArraySize(panes), 3);
	q = cJSON_GetArrayItem(panes, 0);
	assert_string_equal(cJSON_GetObjectItem(q, "name")->valuestring, "Q (head 1)");
	assert_int_equal(cJSON_GetObjectItem(q, "first_column")->valueint, 2);
	/* its cells are Q's columns 2 and 3 */
	Q = attn_matrix(s->attn, AM_Q, 1);
	assert_non_null(Q);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetArrayItem(cJSON_GetObjectItem(q, "values"), 0)), 2);
	assert_true(fabs(cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetObjectItem(q, "values"), 1), 1)->valuedouble -
	                 MAT_AT(*Q, 1, 3)) < 1e-12);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(panes, 1), "transposed")));
	cJSON_Delete(o);
	free(md);
	free(js);
	session_destroy(s);
}

static void test_targets(void **state)
{
	Session *s = session_from_file("lessons/multihead.json");
	ExportTarget t;
	char *err = NULL;
	(void)state;

	assert_int_equal(export_format_find("SVG"), EXPORT_SVG);
	assert_int_equal(export_format_find("markdown"), EXPORT_MD);
	assert_int_equal(export_format_find("png"), -1);
	assert_int_equal(export_target_parse(s->attn, NULL, STAGE_SCORES, 0, &t, &err), 0);
	assert_true(t.whole_stage && t.stage == STAGE_SCORES);
	assert_int_equal(export_target_parse(s->attn, "W_q", STAGE_SCORES, 0, &t, &err), 0);
	assert_true(!t.whole_stage && t.matrix == AM_W_Q);
	assert_int_equal(export_target_parse(s->attn, "nonsense", STAGE_SCORES, 0, &t, &err), -1);
	assert_non_null(strstr(err, "unknown stage or matrix: nonsense"));
	free(err);
	assert_int_equal(export_target_parse(s->attn, "mask", STAGE_SCORES, 0, &t, &err), -1); /* no mask here */
	assert_non_null(strstr(err, "not part of this lesson"));
	free(err);
	assert_int_equal(export_target_parse(s->attn, NULL, STAGE_SCORES, 2, &t, &err), -1);
	free(err);
	session_destroy(s);
}

/* ------------------------------------------------------------ save: the lesson round trip */

static int edit_wq(Lesson *l, void *arg, char **err)
{
	(void)arg;
	(void)err;
	if (mat_empty(&l->lp.W_q)) /* multi-head latent attention with a compressed query: its first weight instead */
		MAT_AT(l->lp.mla.W_kva, 0, 1) = 0.125;
	else
		MAT_AT(l->lp.W_q, 0, 1) = 0.125;
	MAT_AT(l->cfg.input, 1, 0) = -3.5;
	return 0;
}

/* The saved lesson loads and computes to exactly the same dump. */
/* dump_write (streamed, --dump) writes byte for byte what cJSON prints of dump_attn. */
static void streamed_equals_string(const Attn *a, const char *what)
{
	int compact;

	for (compact = 0; compact <= 1; compact++) {
		char *err = NULL, *want = dump_string(a, compact), *got = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&got, &len);
		assert_non_null(want);
		assert_non_null(f);
		assert_int_equal(dump_write(f, a, compact, &err), 0);
		assert_int_equal(fclose(f), 0);
		if (strcmp(want, got) != 0)
			fail_msg("%s: dump_write differs from cJSON's print of dump_attn (compact %d)", what, compact);
		free(want);
		free(got);
	}
}

static void roundtrip(Session *s, const char *what)
{
	char *err = NULL, *warn = NULL, *json, *d1, *d2;
	Lesson *l;
	Attn *a;

	json = export_lesson_json(s->lesson, &err);
	assert_non_null(json);
	l = lesson_load_string("saved.json", json, strlen(json), &err, &warn);
	if (l == NULL)
		fail_msg("%s: saved lesson does not load: %s", what, err);
	free(warn);
	a = attn_compute(l, &err);
	assert_non_null(a);
	if (l->cfg.backward != BACKWARD_NONE) { /* as the session computes it: with the gradients */
		double loss;
		assert_int_equal(attn_backward(a, &loss, &err), 0);
	}
	streamed_equals_string(s->model, what);
	d1 = dump_string(s->model, 1);
	d2 = dump_string(a, 1);
	if (strcmp(d1, d2) != 0)
		fail_msg("%s: the saved lesson's dump differs", what);
	assert_int_equal(l->nsteps, s->lesson->nsteps);
	free(d1);
	free(d2);
	attn_free(a);
	lesson_free(l);
	free(json);
}

static void test_save_roundtrip(void **state)
{
	const char *dirs[] = { "lessons", "tests/golden", NULL };
	int i, n = 0;
	(void)state;

	for (i = 0; dirs[i] != NULL; i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *e;
		if (d == NULL)
			continue;
		while ((e = readdir(d)) != NULL) {
			char path[512];
			size_t len = strlen(e->d_name);
			Session *s;
			char *err = NULL;
			if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0 || strstr(e->d_name, ".ref.json"))
				continue;
			snprintf(path, sizeof path, "%s/%s", dirs[i], e->d_name);
			if (needs_model(path))
				continue; /* a lesson on a real model: t_export.sh saves and reopens it through main.c */
			s = session_from_file(path);
			roundtrip(s, path);
			if (session_edit(s, edit_wq, NULL, &err) != 0)
				fail_msg("%s: edit: %s", path, err);
			roundtrip(s, path);
			session_destroy(s);
			n++;
		}
		closedir(d);
	}
	assert_true(n >= 10);
	{
		Session *s = session_from_string(hostile_json);
		roundtrip(s, "hostile");
		session_destroy(s);
	}
}

/* ------------------------------------------------------------ fileio */

static char tmpdir[64];

static int fileio_setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "%s/attnviz-unit-export.XXXXXX", "/tmp");
	return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int fileio_teardown(void **state)
{
	char cmd[256];
	(void)state;
	snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", tmpdir, tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_fileio_replace(void **state)
{
	char path[128], *err = NULL, *back;
	size_t len;
	struct stat st;
	(void)state;

	snprintf(path, sizeof path, "%s/out.txt", tmpdir);
	assert_int_equal(fileio_write_atomic(path, "old", 3, &err), 0);
	assert_int_equal(chmod(path, 0640), 0);
	assert_int_equal(fileio_write_atomic(path, "new contents\n", 13, &err), 0);
	back = fileio_read_all(path, 1000, &len, &err);
	assert_non_null(back);
	assert_int_equal(len, 13);
	assert_string_equal(back, "new contents\n");
	free(back);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640); /* the old file's mode is kept */
	assert_int_equal(hidden_files_in(tmpdir), 0);
	/* the read limit */
	assert_null(fileio_read_all(path, 5, &len, &err));
	assert_non_null(strstr(err, "over the limit of 5 bytes"));
	free(err);
}

static void test_fileio_fails_cleanly(void **state)
{
	char path[256], dir[128], *err = NULL, *back;
	size_t len;
	(void)state;

	/* a directory that does not exist */
	snprintf(path, sizeof path, "%s/nope/out.svg", tmpdir);
	assert_int_equal(fileio_write_atomic(path, "x", 1, &err), -1);
	assert_non_null(strstr(err, "cannot write "));
	assert_non_null(strstr(err, "nope/out.svg: No such file or directory"));
	free(err);
	/* a path that is a directory */
	assert_int_equal(fileio_write_atomic(tmpdir, "x", 1, &err), -1);
	assert_non_null(strstr(err, "Is a directory"));
	free(err);
	/* an unwritable directory (root writes anyway, so only as another user) */
	snprintf(dir, sizeof dir, "%s/ro", tmpdir);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof path, "%s/ro/out.svg", tmpdir);
	assert_int_equal(fileio_write_atomic(path, "keep", 4, &err), 0);
	if (geteuid() != 0) {
		assert_int_equal(chmod(dir, 0555), 0);
		assert_int_equal(fileio_write_atomic(path, "lost", 4, &err), -1);
		assert_non_null(strstr(err, "Permission denied"));
		free(err);
		assert_int_equal(chmod(dir, 0755), 0);
	}
	/* a write that fails half way (file size limit): the old file stays whole, no temp file is left */
	{
		pid_t pid = fork();
		int status;
		assert_true(pid >= 0);
		if (pid == 0) {
			struct rlimit rl = { 2, 2 };
			char big[4096];
			memset(big, 'y', sizeof big);
			signal(SIGXFSZ, SIG_IGN);
			setrlimit(RLIMIT_FSIZE, &rl);
			if (fileio_write_atomic(path, big, sizeof big, &err) != -1 || strstr(err, "cannot write") == NULL)
				_exit(1);
			_exit(0);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	back = fileio_read_all(path, 100, &len, &err);
	assert_non_null(back);
	assert_string_equal(back, "keep");
	free(back);
	assert_int_equal(hidden_files_in(dir), 0);
}

/* ------------------------------------------------------------ themes */

/* themeroles.h is the authority on the roles: THEME_ROLES' names, as a theme file spells them. */
#define ROLE_NAME(name) #name,
static const char *const theme_h_roles[] = { THEME_ROLES(ROLE_NAME) NULL };
#undef ROLE_NAME

/* Each role of THEME_ROLES, in lower case, is a key of "roles" that sets that role and no other. */
static void roles_read_by_name(void)
{
	int i;

	for (i = 0; theme_h_roles[i] != NULL; i++)
		for (int colour = 100 + i; colour <= 200 + i; colour += 100) { /* twice: no default can equal both */
			char key[32], json[160], *err = NULL;
			size_t k;
			ThemeFile t;
			for (k = 0; theme_h_roles[i][k] != '\0' && k + 1 < sizeof key; k++)
				key[k] = (char)tolower((unsigned char)theme_h_roles[i][k]);
			key[k] = '\0';
			snprintf(json, sizeof json, "{\"name\": \"t\", \"roles\": {\"%s\": {\"fg\": %d}}}", key, colour);
			if (themefile_parse("roles.json", json, strlen(json), &t, &err) != 0)
				fail_msg("role %s: %s", key, err ? err : "?");
			if (t.role[i].fg != colour)
				fail_msg("role %s sets role %d's fg to %d, want %d", key, i, t.role[i].fg, colour);
		}
	assert_int_equal(i, THEMEFILE_ROLE_COUNT);
}

static void test_themes_load(void **state)
{
	DIR *d = opendir("assets/themes");
	struct dirent *e;
	int n = 0, i;
	ThemeFile t, def;
	char *err = NULL;
	(void)state;

	roles_read_by_name();
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		char path[300], name[300];
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
			continue;
		snprintf(path, sizeof path, "assets/themes/%s", e->d_name);
		if (themefile_load(path, &t, &err) != 0)
			fail_msg("%s", err);
		snprintf(name, sizeof name, "%.*s", (int)(len - 5), e->d_name);
		assert_string_equal(t.name, name);
		assert_true(t.nseq >= 2 && t.ndiv >= 3 && t.ndiv % 2 == 1);
		/* by name too */
		assert_int_equal(themefile_load(name, &t, &err), 0);
		n++;
	}
	closedir(d);
	assert_true(n >= 6);
	/* default.json is the built-in default */
	themefile_default(&def);
	assert_int_equal(themefile_load("default", &t, &err), 0);
	assert_int_equal(t.ndiv, def.ndiv);
	assert_int_equal(t.nseq, def.nseq);
	assert_memory_equal(t.div, def.div, sizeof def.div);
	assert_memory_equal(t.seq, def.seq, sizeof def.seq);
	assert_int_equal(t.masked, def.masked);
	for (i = 0; i < THEMEFILE_ROLE_COUNT; i++) {
		assert_int_equal(t.role[i].fg, def.role[i].fg);
		assert_int_equal(t.role[i].bg, def.role[i].bg);
		assert_int_equal(t.role[i].attrs, def.role[i].attrs);
	}
	assert_int_equal(themefile_load("mono", &t, &err), 0);
	assert_true(t.mono);
	/* an unknown name: the default, and a message listing the themes */
	assert_int_equal(themefile_load("nosuch", &t, &err), -1);
	assert_non_null(strstr(err, "unknown theme \"nosuch\""));
	assert_non_null(strstr(err, "projector"));
	assert_string_equal(t.name, "default");
	free(err);
	assert_int_equal(themefile_load("../etc/passwd", &t, &err), -1); /* a path: no such file */
	free(err);
	/* helpers */
	assert_int_equal(themefile_rgb(196, 0), 0xff0000UL);
	assert_int_equal(themefile_rgb(232, 0), 0x080808UL);
	assert_int_equal(themefile_rgb(-1, 0x123456), 0x123456UL);
	assert_int_equal(themefile_to8(196), 1);
	assert_int_equal(themefile_to8(21), 4);
	assert_int_equal(themefile_text_on(231), 16);
	assert_int_equal(themefile_text_on(18), 231);
	assert_int_equal(themefile_ramp_index(-1, 1, 11), 0);
	assert_int_equal(themefile_ramp_index(0, 1, 11), 5);
	assert_int_equal(themefile_ramp_index(1, 0, 9), 8);
}

static void test_themes_malformed(void **state)
{
	static const struct {
		const char *file, *message;
	} cases[] = {
		{ "colour.json", "tests/bad-themes/colour.json: roles.stage.fg: expected a colour 0-255 or a name (black red green yellow blue magenta cyan white default), got \"purplish\"" },
		{ "role.json", "tests/bad-themes/role.json: roles: unknown role \"titel\" (roles: stage stage_name " },
		{ "range.json", "tests/bad-themes/range.json: sequential[1]: expected a colour 0-255 or a name (black red green yellow blue magenta cyan white default), got 300" },
		{ "short.json", "tests/bad-themes/short.json: diverging: expected a list of 3 to 32 colours, got 2 colours" },
		{ "syntax.json", "tests/bad-themes/syntax.json:2:13: a trailing comma: JSON allows no comma before ] or }\n \"masked\": 3,\n            ^" },
		{ "attr.json", "tests/bad-themes/attr.json: roles.cursor.attrs[0]: expected \"bold\", \"dim\", \"underline\", \"reverse\", \"standout\", \"italic\" or \"blink\", got \"blod\" (did you mean \"bold\"?)" },
		{ "noname.json", "tests/bad-themes/noname.json: missing \"name\"" },
		{ "key.json", "tests/bad-themes/key.json: unknown key \"palette\" (keys: name description mono roles sequential diverging masked background foreground)" },
		{ "notobject.json", "tests/bad-themes/notobject.json: expected a theme object {\"name\": …, \"roles\": …}, got an array" },
		{ "typo.json", "tests/bad-themes/typo.json: roles.stage: unknown key \"fgg\" (did you mean \"fg\"?)" },
		{ "empty.json", "tests/bad-themes/empty.json: empty file (a theme is one JSON object: {\"name\": …, \"roles\": …})" },
	};
	size_t i;
	(void)state;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char path[128], *err = NULL;
		ThemeFile t;
		snprintf(path, sizeof path, "tests/bad-themes/%s", cases[i].file);
		assert_int_equal(themefile_load(path, &t, &err), -1);
		assert_non_null(err);
		if (strncmp(err, cases[i].message, strlen(cases[i].message)) != 0)
			fail_msg("%s: got: %s", cases[i].file, err);
		assert_string_equal(t.name, "default"); /* falls back */
		free(err);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csv_numbers),
		cmocka_unit_test(test_csv_inf_and_quoting),
		cmocka_unit_test(test_svg_shape),
		cmocka_unit_test(test_svg_escaped),
		cmocka_unit_test(test_md_shape),
		cmocka_unit_test(test_tex_shape),
		cmocka_unit_test(test_json_slice),
		cmocka_unit_test(test_md_json_panes),
		cmocka_unit_test(test_targets),
		cmocka_unit_test(test_save_roundtrip),
		cmocka_unit_test_setup_teardown(test_fileio_replace, fileio_setup, fileio_teardown),
		cmocka_unit_test_setup_teardown(test_fileio_fails_cleanly, fileio_setup, fileio_teardown),
		cmocka_unit_test(test_themes_load),
		cmocka_unit_test(test_themes_malformed),
	};
	unsetenv("ATTNVIZ_THEMES");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
