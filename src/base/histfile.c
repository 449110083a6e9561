/* histfile.c: the history file (histfile.h), read and written only through fileio. */
#include "base/histfile.h"

#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/strbuf.h"

/* Far more than 500 lines of commands: a bigger file is not ours, and is not read. */
#define HISTFILE_MAX_BYTES (4L << 20)

void histfile_load(const char *path, void (*add)(void *ctx, const char *line), void *ctx)
{
	size_t len;
	char *err = NULL, *buf = path != NULL ? fileio_read_all(path, HISTFILE_MAX_BYTES, &len, &err) : NULL;
	char *line, *next;

	free(err);
	if (buf == NULL)
		return;
	for (line = buf; line < buf + len; line = next) {
		next = strchr(line, '\n');
		next = next != NULL ? next + 1 : buf + len;
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '#' && line[1] >= '0' && line[1] <= '9')
			continue; /* readline's timestamp lines: "#1700000000" */
		if (line[0] != '\0')
			add(ctx, line);
	}
	free(buf);
}

int histfile_save(const char *path, const char *const *lines, int n)
{
	StrBuf b = { 0 };
	char *err = NULL;
	int i, rc;

	if (path == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (lines[i] != NULL && lines[i][0] != '\0' && strchr(lines[i], '\n') == NULL) {
			strbuf_puts(&b, lines[i]);
			strbuf_puts(&b, "\n");
		}
	if (b.oom) {
		free(b.s);
		return -1;
	}
	rc = fileio_write_mode(path, b.s != NULL ? b.s : "", b.len, 0600, &err);
	free(err);
	free(b.s);
	return rc;
}
