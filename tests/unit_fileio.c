/* unit_fileio.c: the rules of fileio.h — only regular files are written or
 * read, a symbolic link's target is replaced and the link stays, no set-id
 * bits, the mode a writer asks for, appends that roll back, and never a
 * temporary file left behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"
#include "unit_common.h"
#include "unit_tmpdir.h"

static char path[256];

/* dir/name, in a static buffer. */
static const char *in_dir(const char *name)
{
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return path;
}

/* Hidden files in dir: temporary files left behind. */
static int leftovers(void)
{
	return hidden_files_in(dir);
}

static void put(const char *name, const char *text, mode_t mode)
{
	FILE *f = fopen(in_dir(name), "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(in_dir(name), mode), 0);
}

/* The contents of dir/name ("" when unreadable). */
static char *contents(const char *name)
{
	static char buf[256];
	FILE *f = fopen(in_dir(name), "r");
	size_t n = f != NULL ? fread(buf, 1, sizeof buf - 1, f) : 0;
	buf[n] = '\0';
	if (f != NULL)
		fclose(f);
	return buf;
}

static mode_t mode_of(const char *name)
{
	struct stat st;
	assert_int_equal(lstat(in_dir(name), &st), 0);
	return st.st_mode;
}

static void expect_refused(const char *name, const char *why)
{
	char *err = NULL;
	assert_int_equal(fileio_write_atomic(in_dir(name), "new", 3, &err), -1);
	assert_non_null(err);
	if (strstr(err, why) == NULL)
		fail_msg("%s: got \"%s\", want \"%s\"", name, err, why);
	free(err);
	assert_int_equal(leftovers(), 0);
}

static void test_modes(void **state)
{
	char *err = NULL;
	(void)state;

	put("suid", "old", 04755);
	assert_int_equal(fileio_write_atomic(in_dir("suid"), "new", 3, &err), 0);
	assert_string_equal(contents("suid"), "new");
	assert_int_equal(mode_of("suid") & 07777, 0755); /* the bits kept, set-uid never */
	put("sgid", "old", 03770);
	assert_int_equal(fileio_write_atomic(in_dir("sgid"), "new", 3, &err), 0);
	assert_int_equal(mode_of("sgid") & 07777, 0770);
	/* a writer that asks for 0600 gets it, whatever the old file had */
	put("hist", "old", 0644);
	assert_int_equal(fileio_write_mode(in_dir("hist"), "new", 3, 0600, &err), 0);
	assert_int_equal(mode_of("hist") & 07777, 0600);
	assert_int_equal(fileio_write_mode(in_dir("hist-new"), "new", 3, 0600, &err), 0);
	assert_int_equal(mode_of("hist-new") & 07777, 0600);
	assert_int_equal(leftovers(), 0);
}

static void test_special_files_refused(void **state)
{
	(void)state;

	assert_int_equal(mkfifo(in_dir("fifo"), 0644), 0);
	expect_refused("fifo", "fifo: is a FIFO, not a regular file");
	assert_true(S_ISFIFO(mode_of("fifo")));
	assert_int_equal(mkdir(in_dir("sub"), 0755), 0);
	expect_refused("sub", "Is a directory");
	/* a link to a FIFO, a link to nothing: refused, the link stays */
	assert_int_equal(symlink("fifo", in_dir("to-fifo")), 0);
	expect_refused("to-fifo", "to-fifo: is a FIFO, not a regular file");
	assert_true(S_ISLNK(mode_of("to-fifo")));
	assert_int_equal(symlink("nothing", in_dir("dangling")), 0);
	expect_refused("dangling", "dangling: is a symbolic link to nothing");
	assert_int_equal(access(in_dir("nothing"), F_OK), -1);
	/* a trailing slash names a directory */
	expect_refused("x/", "expected a file name");
}

static void test_symlink_target_replaced(void **state)
{
	char *err = NULL;
	(void)state;

	put("target", "old", 0640);
	assert_int_equal(symlink("target", in_dir("link")), 0);
	assert_int_equal(fileio_write_atomic(in_dir("link"), "new", 3, &err), 0);
	assert_true(S_ISLNK(mode_of("link")));
	assert_string_equal(contents("target"), "new");
	assert_int_equal(mode_of("target") & 07777, 0640);
	assert_int_equal(leftovers(), 0);
}

static void test_abort_and_commit(void **state)
{
	FileOut o;
	char *err = NULL;
	(void)state;

	put("doc", "old", 0644);
	assert_int_equal(fileio_begin(&o, in_dir("doc"), FILEIO_KEEP_MODE, 0, &err), 0);
	fputs("half", o.f);
	fileio_abort(&o);
	assert_string_equal(contents("doc"), "old");
	assert_int_equal(leftovers(), 0);
	/* an error the writer saw: commit fails and the old file stays */
	assert_int_equal(fileio_begin(&o, in_dir("doc"), FILEIO_KEEP_MODE, 0, &err), 0);
	fputs("new", o.f);
	o.error = ENOSPC;
	assert_int_equal(fileio_commit(&o, &err), -1);
	assert_non_null(strstr(err, "doc: No space left on device"));
	free(err);
	assert_string_equal(contents("doc"), "old");
	assert_int_equal(leftovers(), 0);
	/* the temporary file is hidden, beside the file, with an unpredictable name */
	assert_int_equal(fileio_begin(&o, in_dir("doc"), FILEIO_KEEP_MODE, 0, &err), 0);
	assert_int_equal(leftovers(), 1);
	fputs("new", o.f);
	assert_int_equal(fileio_commit(&o, &err), 0);
	assert_string_equal(contents("doc"), "new");
	assert_int_equal(leftovers(), 0);
}

static void test_append(void **state)
{
	FileOut o;
	char *err = NULL;
	(void)state;

	put("log", "one\n", 0640);
	assert_int_equal(fileio_begin(&o, in_dir("log"), FILEIO_KEEP_MODE, 1, &err), 0);
	fputs("two\n", o.f);
	assert_int_equal(fileio_commit(&o, &err), 0);
	assert_string_equal(contents("log"), "one\ntwo\n");
	assert_int_equal(mode_of("log") & 07777, 0640);
	/* a failed append: back to the old length */
	assert_int_equal(fileio_begin(&o, in_dir("log"), FILEIO_KEEP_MODE, 1, &err), 0);
	fputs("three\n", o.f);
	fflush(o.f);
	fileio_abort(&o);
	assert_string_equal(contents("log"), "one\ntwo\n");
	/* a failed new file: gone */
	assert_int_equal(fileio_begin(&o, in_dir("new-log"), FILEIO_KEEP_MODE, 1, &err), 0);
	fputs("x\n", o.f);
	o.error = EFBIG;
	assert_int_equal(fileio_commit(&o, &err), -1);
	assert_non_null(strstr(err, "new-log: File too large"));
	free(err);
	assert_int_equal(access(in_dir("new-log"), F_OK), -1);
	/* a FIFO: refused without opening it */
	assert_int_equal(mkfifo(in_dir("fifo"), 0644), 0);
	assert_int_equal(fileio_begin(&o, in_dir("fifo"), FILEIO_KEEP_MODE, 1, &err), -1);
	assert_non_null(strstr(err, "is a FIFO, not a regular file"));
	free(err);
	assert_int_equal(leftovers(), 0);
}

static void on_alarm(int sig)
{
	(void)sig;
	fail_msg("a read waited on a FIFO");
}

static void test_read_regular_only(void **state)
{
	char *err = NULL, *buf;
	size_t len;
	struct stat st;
	const char *kind;
	int holder;
	(void)state;

	/* A FIFO someone holds open: a blocking read would wait for ever. */
	assert_int_equal(mkfifo(in_dir("x.json"), 0644), 0);
	holder = open(in_dir("x.json"), O_RDWR);
	assert_true(holder >= 0);
	signal(SIGALRM, on_alarm);
	alarm(5);
	buf = fileio_read_all(in_dir("x.json"), 1000, &len, &err);
	alarm(0);
	assert_null(buf);
	assert_non_null(strstr(err, "x.json: is a FIFO, not a regular file"));
	free(err);
	close(holder);
	assert_int_equal(fileio_open_regular(dir, &st, &kind), -1);
	assert_string_equal(kind, "a directory");
	assert_int_equal(fileio_open_regular("/dev/null", &st, &kind), -1);
	assert_string_equal(kind, "a character device");
	assert_int_equal(fileio_open_regular(in_dir("none"), &st, &kind), -1);
	assert_null(kind);
	assert_int_equal(errno, ENOENT);
	put("ok", "fine", 0644);
	buf = fileio_read_all(in_dir("ok"), 1000, &len, &err);
	assert_non_null(buf);
	assert_string_equal(buf, "fine");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_special_files_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_target_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_and_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_append, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_regular_only, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
