/* unit_record.c: --record's asciicast v2 files (record.h) and --render's frames (render.h), checked with cJSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/fileio.h"
#include "out/record.h"
#include "out/render.h"
#include "unit_common.h"

typedef struct Cast {
	cJSON *header;
	int nevents;
	cJSON *events[256];
	char out[65536];  /* every "o" event's data, concatenated */
	size_t outlen;
	char resize[64];  /* the last "r" event's data */
} Cast;

static char dir[64];

static int
setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/attnviz-unit-record.XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Hidden files in dir: the recording's temporary file while it runs, none after. */
static int
hidden_files(void)
{
	return hidden_files_in(dir);
}

/* Read and check a cast: a header line, then [time, "o"|"r", string] lines with times that never go back. */
static void
cast_read(const char *path, Cast *c)
{
	char *err = NULL;
	size_t len = 0;
	char *buf = fileio_read_all(path, 1 << 22, &len, &err);
	double last = 0;

	assert_non_null(buf);
	memset(c, 0, sizeof *c);
	char *line = buf, *nl;
	int first = 1;
	while (*line && (nl = strchr(line, '\n')) != NULL) {
		*nl = '\0';
		cJSON *j = cJSON_Parse(line);
		assert_non_null(j);
		if (first) {
			c->header = j;
			first = 0;
		} else {
			assert_true(cJSON_IsArray(j));
			assert_int_equal(cJSON_GetArraySize(j), 3);
			cJSON *t = cJSON_GetArrayItem(j, 0), *code = cJSON_GetArrayItem(j, 1), *data = cJSON_GetArrayItem(j, 2);
			assert_true(cJSON_IsNumber(t));
			assert_true(t->valuedouble >= last);
			last = t->valuedouble;
			assert_true(cJSON_IsString(code) && cJSON_IsString(data));
			if (strcmp(code->valuestring, "o") == 0) {
				size_t n = strlen(data->valuestring);
				assert_true(c->outlen + n < sizeof c->out);
				memcpy(c->out + c->outlen, data->valuestring, n + 1);
				c->outlen += n;
			} else {
				assert_string_equal(code->valuestring, "r");
				snprintf(c->resize, sizeof c->resize, "%s", data->valuestring);
			}
			assert_true(c->nevents < 256);
			c->events[c->nevents++] = j;
		}
		line = nl + 1;
	}
	assert_string_equal(line, ""); /* the file ends with a newline */
	assert_non_null(c->header);
	free(buf);
}

static void
cast_free(Cast *c)
{
	cJSON_Delete(c->header);
	for (int i = 0; i < c->nevents; i++)
		cJSON_Delete(c->events[i]);
}

static void
test_header_and_events(void **state)
{
	char path[128], *err = NULL;
	Cast c;
	(void)state;

	snprintf(path, sizeof path, "%s/a.cast", dir);
	setenv("TERM", "xterm-256color", 1);
	setenv("SHELL", "/bin/sh", 1);
	Recorder *r = record_open(path, 80, 24, "Masked \"attention\" 机器", 0, &err);
	assert_non_null(r);
	assert_int_equal(hidden_files(), 1); /* streaming to a hidden temporary file beside PATH */
	assert_int_equal(access(path, F_OK), -1);
	record_output(r, "\x1b[2J\x1b[1;1HMasked attention", 27);
	/* 机 = e6 9c ba, cut between two writes */
	record_output(r, " \xe6\x9c", 3);
	record_output(r, "\xba\r\n", 3);
	record_resize(r, 100, 30);
	record_output(r, "bad\xff byte\t\x01\x7f\\\"", 14);
	/* a cut character at the very end */
	record_output(r, "\xe5", 1);
	assert_int_equal(record_close(r, &err), 0);
	assert_null(err);
	assert_int_equal(hidden_files(), 0);

	cast_read(path, &c);
	cJSON *h = c.header;
	assert_int_equal(cJSON_GetObjectItem(h, "version")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItem(h, "width")->valueint, 80);
	assert_int_equal(cJSON_GetObjectItem(h, "height")->valueint, 24);
	assert_true(cJSON_IsNumber(cJSON_GetObjectItem(h, "timestamp")));
	cJSON *env = cJSON_GetObjectItem(h, "env");
	assert_string_equal(cJSON_GetObjectItem(env, "TERM")->valuestring, "xterm-256color");
	assert_string_equal(cJSON_GetObjectItem(env, "SHELL")->valuestring, "/bin/sh");
	assert_string_equal(cJSON_GetObjectItem(h, "title")->valuestring, "Masked \"attention\" 机器");
	/* The events, put together, are the bytes written; the cut character whole. */
	assert_non_null(strstr(c.out, "\x1b[2J\x1b[1;1HMasked attention 机\r\n"));
	/* Bytes that are not UTF-8 become U+FFFD; control characters survive. */
	assert_non_null(strstr(c.out, "bad\xef\xbf\xbd byte\t\x01\x7f\\\""));
	assert_string_equal(c.out + c.outlen - 3, "\xef\xbf\xbd");
	assert_string_equal(c.resize, "100x30");
	cast_free(&c);
}

static void
test_open_fails(void **state)
{
	char *err = NULL;
	(void)state;

	Recorder *r = record_open("/nonexistent-dir/x.cast", 80, 24, "t", 0, &err);
	assert_null(r);
	assert_non_null(err);
	assert_non_null(strstr(err, "cannot write /nonexistent-dir/x.cast: No such file or directory"));
	free(err);
	assert_int_equal(record_close(NULL, &err), 0);
}

/* A recording that cannot start keeps the old one; a link at the old FILE.part is never followed. */
static void
test_abort_keeps_old(void **state)
{
	char path[128], part[160], victim[128], *err = NULL, buf[32] = "";
	FILE *f;
	(void)state;

	snprintf(path, sizeof path, "%s/old.cast", dir);
	snprintf(part, sizeof part, "%s.part", path);
	snprintf(victim, sizeof victim, "%s/victim", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("precious", f);
	fclose(f);
	f = fopen(victim, "w");
	assert_non_null(f);
	fputs("victim", f);
	fclose(f);
	assert_int_equal(symlink(victim, part), 0);
	Recorder *r = record_open(path, 80, 24, "t", 0, &err);
	assert_non_null(r);
	record_abort(r);
	assert_int_equal(hidden_files(), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof buf, f));
	fclose(f);
	assert_string_equal(buf, "precious");
	f = fopen(victim, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof buf, f));
	fclose(f);
	assert_string_equal(buf, "victim");
	unlink(part);
	unlink(victim);
	unlink(path);
}

/*
 * A short session through the pseudo-terminal: what a program writes to the
 * FILE it is given reaches the "real" terminal (here another pseudo-terminal)
 * and the recording; the real terminal gets its modes back at the end.
 */
static void
test_tty_relay(void **state)
{
	char path[128], *err = NULL, got[4096] = "";
	struct termios before, after;
	FILE *out = NULL;
	Cast c;
	size_t n = 0;
	(void)state;

	int m = posix_openpt(O_RDWR | O_NOCTTY);
	assert_true(m >= 0);
	assert_int_equal(grantpt(m), 0);
	assert_int_equal(unlockpt(m), 0);
	int tty = open(ptsname(m), O_RDWR | O_NOCTTY);
	assert_true(tty >= 0);
	assert_int_equal(tcgetattr(tty, &before), 0);

	snprintf(path, sizeof path, "%s/b.cast", dir);
	Recorder *r = record_open(path, 80, 24, "session", 0, &err);
	assert_non_null(r);
	assert_int_equal(record_tty_start(r, tty, &out, &err), 0);
	assert_non_null(out);
	assert_true(isatty(fileno(out)));
	record_tty_signals(r);
	fputs("\x1b[?1049h\x1b[1;1HSelf-attention: I saw a saw", out);
	fflush(out);
	record_tty_sync(r);
	/* The real terminal shows it. */
	while (n < sizeof got - 1 && strstr(got, "I saw a saw") == NULL) {
		struct pollfd pf = { m, POLLIN, 0 };
		if (poll(&pf, 1, 2000) <= 0)
			break;
		ssize_t k = read(m, got + n, sizeof got - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
		got[n] = '\0';
	}
	got[n] = '\0';
	assert_non_null(strstr(got, "Self-attention: I saw a saw"));
	fputs("\x1b[?1049l", out);
	fflush(out);
	assert_int_equal(record_close(r, &err), 0);
	assert_int_equal(tcgetattr(tty, &after), 0);
	assert_memory_equal(&before.c_lflag, &after.c_lflag, sizeof before.c_lflag);
	assert_memory_equal(&before.c_oflag, &after.c_oflag, sizeof before.c_oflag);
	close(tty);
	close(m);

	cast_read(path, &c);
	assert_non_null(strstr(c.out, "Self-attention: I saw a saw"));
	assert_non_null(strstr(c.out, "\x1b[?1049l"));
	cast_free(&c);
}

/* The title written again at the end; idle_time_limit; events at given times, never going back. */
static void
test_title_idle_times(void **state)
{
	char path[128], *err = NULL, long_title[3000];
	Cast c;
	(void)state;

	snprintf(path, sizeof path, "%s/t.cast", dir);
	Recorder *r = record_open(path, 80, 24, "Self-attention: I saw a saw", 2.5, &err);
	assert_non_null(r);
	record_output_at(r, 1.5, "a", 1);
	record_output_at(r, 0.5, "b", 1); /* before the last: at the last */
	record_set_title(r, "Masked attention 机器学习");
	record_output_at(r, 4.25, "c", 1);
	assert_int_equal(record_close(r, &err), 0);
	cast_read(path, &c);
	assert_string_equal(cJSON_GetObjectItem(c.header, "title")->valuestring, "Masked attention 机器学习");
	assert_true(cJSON_GetObjectItem(c.header, "idle_time_limit")->valuedouble == 2.5);
	assert_int_equal(c.nevents, 3);
	assert_true(cJSON_GetArrayItem(c.events[0], 0)->valuedouble == 1.5);
	assert_true(cJSON_GetArrayItem(c.events[1], 0)->valuedouble == 1.5);
	assert_true(cJSON_GetArrayItem(c.events[2], 0)->valuedouble == 4.25);
	assert_string_equal(c.out, "abc");
	cast_free(&c);

	/* A title of control characters too long for the header: cut, still JSON, the events intact. */
	memset(long_title, '\x01', sizeof long_title - 1);
	long_title[sizeof long_title - 1] = '\0';
	r = record_open(path, 80, 24, "t", 0, &err);
	assert_non_null(r);
	record_output_at(r, 1, "x", 1);
	record_set_title(r, long_title);
	assert_int_equal(record_close(r, &err), 0);
	cast_read(path, &c);
	assert_null(cJSON_GetObjectItem(c.header, "idle_time_limit")); /* 0: none */
	const char *t = cJSON_GetObjectItem(c.header, "title")->valuestring;
	assert_true(strlen(t) > 10 && strlen(t) < 1024 && t[0] == '\x01');
	assert_string_equal(c.out, "x");
	cast_free(&c);
}

/* A screen of w × h blanks in white on black. */
static void
blank(RenderCell *cells, int n)
{
	for (int i = 0; i < n; i++)
		cells[i] = (RenderCell){ .ch = ' ', .fg = 0xffffff, .bg = 0 };
}

/* Frames: one per change, a frame shown for no time replaced; the SVG escaped, wide cells whole; the cast full redraws. */
static void
test_render_frames(void **state)
{
	enum { W = 6, H = 2 };
	RenderCell s[W * H];
	char path[128], *err = NULL, *svg;
	size_t len = 0;
	Cast c;
	(void)state;

	Render *r = render_new(W, H, 0xffffff, 0);
	assert_non_null(r);
	blank(s, W * H);
	assert_int_equal(render_frame(r, 0, 1, s), 0);
	s[0].ch = 'a';
	assert_int_equal(render_frame(r, 0, 2, s), 0); /* the same time: replaces the blank screen */
	assert_int_equal(render_count(r), 1);
	assert_int_equal(render_frame(r, 500, 3, s), 0); /* no change: no frame */
	assert_int_equal(render_count(r), 1);
	s[1] = (RenderCell){ .ch = '<', .fg = 0xff0000, .bg = 0x0000ff, .flags = RENDER_BOLD };
	s[2] = (RenderCell){ .ch = '&', .fg = 0xffffff, .bg = 0 };
	s[W] = (RenderCell){ .ch = 0x673a /* 机 */, .fg = 0xffffff, .bg = 0, .flags = RENDER_WIDE };
	s[W + 1] = (RenderCell){ .ch = ' ', .fg = 0xffffff, .bg = 0, .flags = RENDER_CONT };
	s[W + 2].ch = 0x01; /* no file may hold it: U+FFFD */
	assert_int_equal(render_frame(r, 1000, 4, s), 0);
	assert_int_equal(render_count(r), 2);
	render_end(r, 3000);

	snprintf(path, sizeof path, "%s/r.svg", dir);
	assert_int_equal(render_write_svg(r, path, &err), 0);
	svg = fileio_read_all(path, 1 << 20, &len, &err);
	assert_non_null(svg);
	assert_non_null(strstr(svg, "data-frames=\"2\" data-duration=\"3.000\""));
	assert_non_null(strstr(svg, "<g id=\"f0\" data-t=\"0.000\" data-line=\"2\" visibility=\"visible\">"));
	assert_non_null(strstr(svg, "<g id=\"f1\" data-t=\"1.000\" data-line=\"4\" visibility=\"hidden\">"
	                            "<set attributeName=\"visibility\" to=\"visible\" begin=\"loop.begin+1.000s\" dur=\"2.000s\"/>"));
	assert_non_null(strstr(svg, "<rect x=\"10\" y=\"0\" width=\"10\" height=\"20\" fill=\"#0000ff\"/>"));
	assert_non_null(strstr(svg, "fill=\"#ff0000\" font-weight=\"bold\">&lt;</tspan>"));
	assert_non_null(strstr(svg, ">&amp;   </tspan>"));
	assert_non_null(strstr(svg, "<tspan x=\"0\" textLength=\"20\" lengthAdjust=\"spacingAndGlyphs\">机</tspan>"
	                            "<tspan x=\"20\" textLength=\"40\" lengthAdjust=\"spacingAndGlyphs\">\xef\xbf\xbd   </tspan>"));
	assert_null(strchr(svg, '\x01'));
	free(svg);

	snprintf(path, sizeof path, "%s/r.cast", dir);
	assert_int_equal(render_write_cast(r, path, "Masked", 3, &err), 0);
	cast_read(path, &c);
	assert_int_equal(c.nevents, 3); /* two frames and the end */
	assert_true(cJSON_GetArrayItem(c.events[1], 0)->valuedouble == 1.0);
	assert_true(cJSON_GetArrayItem(c.events[2], 0)->valuedouble == 3.0);
	/* each frame: both rows from their first column, 24-bit colours, the wide character once */
	assert_non_null(strstr(c.out, "\x1b[1;1H\x1b[0;38;2;255;255;255;48;2;0;0;0ma\x1b[0;38;2;255;0;0;48;2;0;0;255;1m<"));
	assert_non_null(strstr(c.out, "\x1b[2;1H\x1b[0;38;2;255;255;255;48;2;0;0;0m机\xef\xbf\xbd   \x1b[0m"));
	assert_null(strstr(c.out, "r\x1b")); /* no scroll region */
	cast_free(&c);
	render_free(r);
}

/* Block elements are rectangles in the cell's colour (issue 26): a lower eighth, a shade, a quadrant; their text stays, invisible. */
static void
test_render_blocks(void **state)
{
	enum { W = 4, H = 1 };
	RenderCell s[W * H];
	char path[128], *err = NULL, *svg;
	size_t len = 0;
	(void)state;

	Render *r = render_new(W, H, 0xffffff, 0);
	assert_non_null(r);
	blank(s, W * H);
	s[0] = (RenderCell){ .ch = 0x2581 /* ▁ */, .fg = 0xff0000, .bg = 0x00ff00 };
	s[1] = (RenderCell){ .ch = 0x2592 /* ▒ */, .fg = 0x0000ff, .bg = 0 };
	s[2] = (RenderCell){ .ch = 0x259a /* ▚ */, .fg = 0xffffff, .bg = 0 };
	s[3].ch = 'a';
	assert_int_equal(render_frame(r, 0, 1, s), 0);
	snprintf(path, sizeof path, "%s/b.svg", dir);
	assert_int_equal(render_write_frame_svg(r, 0, path, &err), 0);
	svg = fileio_read_all(path, 1 << 20, &len, &err);
	assert_non_null(svg);
	assert_non_null(strstr(svg, "<rect x=\"0\" y=\"17.5\" width=\"10\" height=\"2.5\" fill=\"#ff0000\"/>"));
	assert_non_null(strstr(svg, "<rect x=\"10\" y=\"0\" width=\"10\" height=\"20\" fill=\"#0000ff\" fill-opacity=\"0.5\"/>"));
	assert_non_null(strstr(svg, "<rect x=\"20\" y=\"0\" width=\"5\" height=\"10\" fill=\"#ffffff\"/>"
	                            "<rect x=\"25\" y=\"10\" width=\"5\" height=\"10\" fill=\"#ffffff\"/>"));
	/* the blocks' text in runs of their own, invisible; the letter after them drawn */
	assert_non_null(strstr(svg, "<tspan x=\"0\" textLength=\"10\" lengthAdjust=\"spacingAndGlyphs\" fill-opacity=\"0\">\xe2\x96\x81</tspan>"));
	assert_non_null(strstr(svg, "<tspan x=\"30\" textLength=\"10\" lengthAdjust=\"spacingAndGlyphs\">a</tspan>"));
	free(svg);
	render_free(r);
}

/* Frames × size is bounded, and the frame past the bound is refused before it is allocated (issue 27, finding 8). */
static void
test_render_bound(void **state)
{
	const size_t frame = (size_t)1000 * 1000 * sizeof(RenderCell);
	const int fit = (int)(RENDER_MAX_BYTES / frame);
	RenderCell *s = calloc((size_t)1000 * 1000, sizeof *s);
	Render *r = render_new(1000, 1000, 0xffffff, 0);
	int i, rc = 0;

	(void)state;
	assert_non_null(s);
	assert_non_null(r);
	for (i = 0; i <= fit && rc == 0; i++) {
		s[0].ch = (uint32_t)('a' + i % 2); /* a change each time: a new frame */
		rc = render_frame(r, 100LL * i, 1, s);
	}
	assert_int_equal(rc, RENDER_TOO_BIG);
	assert_int_equal(render_count(r), fit);
	render_free(r);
	free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_and_events),
		cmocka_unit_test(test_open_fails),
		cmocka_unit_test(test_abort_keeps_old),
		cmocka_unit_test(test_tty_relay),
		cmocka_unit_test(test_title_idle_times),
		cmocka_unit_test(test_render_frames),
		cmocka_unit_test(test_render_blocks),
		cmocka_unit_test(test_render_bound),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
