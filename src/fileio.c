/* fileio.c: atomic writes (temporary file + fsync + rename) and whole-file reads. */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text.h"

/* A heap error string before + PATH + ": " + after (the path shown escaped); NULL when out of memory. */
static char *fileio_error(const char *before, const char *path, const char *after)
{
	char *safe = text_escape(path, "");
	char *msg = NULL;

	if (safe != NULL && (msg = malloc(strlen(before) + strlen(safe) + strlen(after) + 3)) != NULL)
		sprintf(msg, "%s%s: %s", before, safe, after);
	free(safe);
	return msg;
}

/* Write all of buf to fd, retrying short writes and EINTR. Returns 0, or -1 with errno. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t k = write(fd, buf, len);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += k;
		len -= (size_t)k;
	}
	return 0;
}

/* Split path into directory ("." when none) and base name: heap strings. */
static int split_path(const char *path, char **dir, char **base)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL) {
		*dir = strdup(".");
		*base = strdup(path);
	} else {
		*dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
		*base = strdup(slash + 1);
	}
	if (*dir == NULL || *base == NULL) {
		free(*dir);
		free(*base);
		return -1;
	}
	return 0;
}

int fileio_write_atomic(const char *path, const char *data, size_t len, char **err)
{
	char *dir = NULL, *base = NULL, *tmp = NULL;
	struct stat st;
	int fd = -1, saved, rc = -1, have_old;

	*err = NULL;
	if (strcmp(path, "-") == 0) {
		if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
			*err = fileio_error("cannot write to ", "standard output", strerror(errno));
			return -1;
		}
		return 0;
	}
	if (path[0] == '\0' || path[strlen(path) - 1] == '/') {
		*err = fileio_error("cannot write ", path, "expected a file name, not a directory");
		return -1;
	}
	if (split_path(path, &dir, &base) != 0) {
		*err = strdup("out of memory");
		return -1;
	}
	have_old = stat(path, &st) == 0;
	if (have_old && S_ISDIR(st.st_mode)) {
		*err = fileio_error("cannot write ", path, strerror(EISDIR));
		goto out;
	}
	tmp = malloc(strlen(dir) + strlen(base) + 16);
	if (tmp == NULL) {
		*err = strdup("out of memory");
		goto out;
	}
	sprintf(tmp, "%s/.%s.XXXXXX", dir, base);
	fd = mkstemp(tmp);
	if (fd < 0) {
		*err = fileio_error("cannot write ", path, strerror(errno));
		goto out;
	}
	/* mkstemp makes 0600; keep the old file's mode, or the usual one for a new file */
	{
		mode_t mode;
		if (have_old)
			mode = st.st_mode & 07777;
		else {
			mode_t mask = umask(0);
			umask(mask);
			mode = 0666 & ~mask;
		}
		if (fchmod(fd, mode) != 0)
			goto fail_errno;
	}
	if (write_all(fd, data, len) != 0 || fsync(fd) != 0)
		goto fail_errno;
	if (close(fd) != 0) {
		fd = -1;
		goto fail_errno;
	}
	fd = -1;
	if (rename(tmp, path) != 0)
		goto fail_errno;
	/* make the rename itself durable; failure here loses nothing */
	{
		int dfd = open(dir, O_RDONLY | O_DIRECTORY);
		if (dfd >= 0) {
			(void)fsync(dfd);
			close(dfd);
		}
	}
	rc = 0;
	goto out;
fail_errno:
	saved = errno;
	*err = fileio_error("cannot write ", path, strerror(saved));
	if (fd >= 0)
		close(fd);
	fd = -1;
	unlink(tmp);
out:
	if (fd >= 0)
		close(fd);
	if (rc != 0 && *err == NULL)
		*err = strdup("out of memory");
	free(tmp);
	free(dir);
	free(base);
	return rc;
}

static char *over_limit(const char *path, size_t max)
{
	char msg[64];
	snprintf(msg, sizeof msg, "over the limit of %zu bytes", max);
	return fileio_error("", path, msg);
}

char *fileio_read_all(const char *path, size_t max, size_t *len, char **err)
{
	char *buf = NULL;
	size_t cap = 0, used = 0;
	struct stat st;
	int fd;

	*err = NULL;
	*len = 0;
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		*err = fileio_error("cannot read ", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0) {
		*err = fileio_error("cannot read ", path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		*err = fileio_error("", path, "is a directory, not a file");
		goto fail;
	}
	for (;;) {
		ssize_t k;
		if (used + 1 >= cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *grown;
			if (ncap > max + 2)
				ncap = max + 2;
			if (ncap <= used + 1) {
				*err = over_limit(path, max);
				goto fail;
			}
			grown = realloc(buf, ncap);
			if (grown == NULL) {
				*err = strdup("out of memory");
				goto fail;
			}
			buf = grown;
			cap = ncap;
		}
		k = read(fd, buf + used, cap - used - 1);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			*err = fileio_error("cannot read ", path, strerror(errno));
			goto fail;
		}
		if (k == 0)
			break;
		used += (size_t)k;
		if (used > max) {
			*err = over_limit(path, max);
			goto fail;
		}
	}
	close(fd);
	if (buf == NULL && (buf = malloc(1)) == NULL) {
		*err = strdup("out of memory");
		return NULL;
	}
	buf[used] = '\0';
	*len = used;
	return buf;
fail:
	close(fd);
	free(buf);
	return NULL;
}
