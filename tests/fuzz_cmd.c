/* fuzz_cmd.c: libFuzzer target for the command line (`make fuzz-cmd`).
 *
 * The first byte picks one of the shipped lessons (session_lesson_order,
 * the small ones: every one but scale.json, so 9 is cross.json, 12 bug.json);
 * the rest is command lines, one a line, run through cmd_run on a session
 * of that lesson as the `:` line, the plain REPL and demo scripts run them:
 * edits, moves, quizzes, stats, explain, show (printed to /dev/null), save
 * and export. After every command the session must still be in a state the
 * views can draw. Under ASan + UBSan this finds what the loader's fuzzer
 * cannot reach: an edit computed before it was checked, a message written
 * past its buffer.
 *
 * It runs in a temporary directory of its own (removed at exit), and lines
 * holding a '/' are skipped: save and export write only there, load reads
 * the shipped lessons by name or what save wrote. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "app/session.h"
#include "out/textfmt.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LINES 64

static Lesson *lessons[32];
static char *paths[32];
static int nlessons;
static FILE *devnull;
static char workdir[] = "/tmp/attnviz-fuzz-cmd-XXXXXX";

static void out_message(void *ctx, CmdMsg kind, const char *title, const char *text)
{
	(void)ctx;
	/* what a front end does with a message: print it */
	fprintf(devnull, "%d %s %s\n", (int)kind, title ? title : "", text);
}

static void out_show(void *ctx, AttnMatrix which, int head)
{
	const Session *s = ctx;
	textfmt_matrix(devnull, s->attn, which, head, 1, 1);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st; (void)flag; (void)ftw;
	return remove(path);
}

static void remove_workdir(void)
{
	nftw(workdir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The files save and export write here are thrown away: waiting for the disk would make each run 100× slower. */
int fsync(int fd)
{
	(void)fd;
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char dir[PATH_MAX];
	int i;
	(void)argc; (void)argv;

	if (realpath("lessons", dir) == NULL) {
		fprintf(stderr, "fuzz_cmd: run from the source tree (no ./lessons)\n");
		exit(1);
	}
	setenv("ATTNVIZ_LESSONS", dir, 1);
	for (i = 0; session_lesson_order[i] != NULL && nlessons < 32; i++) {
		char *err = NULL, *warn = NULL, *path = malloc(strlen(dir) + strlen(session_lesson_order[i]) + 8);
		sprintf(path, "%s/%s.json", dir, session_lesson_order[i]);
		lessons[nlessons] = lesson_load(path, &err, &warn);
		free(err);
		free(warn);
		/*
		 * scale.json's generated 123 × 456 matrices would make every run 100× slower and reach no more code;
		 * a lesson on a real model ("model") is a course without its computation until app/ imports the
		 * model (session_lesson_on_model), which session_init alone does not: t_lessonmodel.sh's
		 */
		if (lessons[nlessons] != NULL && (lesson_needs_model(lessons[nlessons]) ||
		                                  (double)lessons[nlessons]->cfg.n * lessons[nlessons]->cfg.d_model > 4096)) {
			lesson_free(lessons[nlessons]);
			lessons[nlessons] = NULL;
		}
		if (lessons[nlessons] != NULL)
			paths[nlessons++] = path;
		else
			free(path);
	}
	devnull = fopen("/dev/null", "w");
	if (nlessons == 0 || devnull == NULL || mkdtemp(workdir) == NULL || chdir(workdir) != 0) {
		fprintf(stderr, "fuzz_cmd: cannot set up\n");
		exit(1);
	}
	atexit(remove_workdir);
	return 0;
}

/* What every view relies on after any command. */
static void check(const Session *s)
{
	/* the layer shown is a link of the computation; a lesson without layers is its own layer's lesson */
	if (s->lesson == NULL || s->model == NULL || s->attn != session_walk_link(s, s->layer) ||
	    (s->lesson->nlayers == 0 && s->attn->top != s->lesson) || s->nwalk < 1 || s->step < 0 ||
	    s->step >= s->nwalk || s->head < 0 || s->head >= s->attn->heads ||
	    !stage_present(&s->attn->shape, s->stage) || lesson_validate(s->lesson, NULL) != 0 ||
	    (s->compare_on && s->compare_attn == NULL))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Session s;
	CmdOut out;
	char *err = NULL, *text;
	Lesson *l;
	size_t i, start;
	int k, lines = 0;

	if (size == 0)
		return 0;
	k = data[0] % nlessons;
	l = lesson_clone(lessons[k]);
	if (l == NULL || session_init(&s, l, paths[k], &err) != 0)
		abort();
	memset(&out, 0, sizeof out);
	out.ctx = &s;
	out.message = out_message;
	out.show = out_show;
	out.utf8 = data[0] & 0x80 ? 0 : 1;
	text = malloc(size);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	for (start = 0, i = 0; i < size && lines < MAX_LINES && !s.quit; i++) {
		if (text[i] != '\n' && text[i] != '\0')
			continue;
		text[i] = '\0';
		if (memchr(text + start, '/', i - start) == NULL) {
			cmd_run(&s, text + start, &out);
			check(&s);
			lines++;
		}
		start = i + 1;
	}
	free(text);
	session_free(&s);
	return 0;
}
