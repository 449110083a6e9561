/* fileio.c: atomic writes (temporary file + fsync + rename), appends, and reads of regular files only. */
#include "base/fileio.h"
#include "base/i18n.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/text.h"

/* How fileio_error says it: each one whole sentence for the translation. */
enum fileio_say { SAY_PATH, SAY_CANNOT_READ, SAY_CANNOT_WRITE_TO };

/* A heap error string "PATH: why", "cannot read PATH: why" or "cannot write to PATH: why" (the path shown escaped); NULL when out of memory. */
static char *fileio_error(enum fileio_say say, const char *path, const char *after)
{
	char *safe = text_escape(path, "");
	char *msg = NULL;

	if (safe != NULL)
		switch (say) {
		case SAY_CANNOT_READ:
			msg = str_printf(_("cannot read %s: %s"), safe, after);
			break;
		case SAY_CANNOT_WRITE_TO:
			msg = str_printf(_("cannot write to %s: %s"), safe, after);
			break;
		default:
			msg = str_printf("%s: %s", safe, after);
			break;
		}
	free(safe);
	return msg;
}

const char *fileio_kind(mode_t mode)
{
	if (S_ISREG(mode))
		return NULL;
	if (S_ISDIR(mode))
		return _("a directory");
	if (S_ISFIFO(mode))
		return _("a FIFO");
	if (S_ISCHR(mode))
		return _("a character device");
	if (S_ISBLK(mode))
		return _("a block device");
	if (S_ISSOCK(mode))
		return _("a socket");
	return _("not a regular file");
}

/* "is a FIFO, not a regular file" for a message (a static buffer: one message at a time). */
static const char *not_regular(const char *kind)
{
	static char buf[64];
	snprintf(buf, sizeof buf, _("is %s, not a regular file"), kind);
	return buf;
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

static void fileio_free(FileOut *o)
{
	free(o->tmp);
	free(o->target);
	free(o->shown);
	o->tmp = o->target = o->shown = NULL;
	o->f = NULL;
}

/* End o with the message "cannot write PATH: why"; -1. */
static int fileio_fail(FileOut *o, const char *why, char **err)
{
	*err = str_printf(_("cannot write %s: %s"), o->shown != NULL ? o->shown : _("a file"), why);
	fileio_abort(o);
	return -1;
}

/*
 * Where the bytes for path go, by the rules in fileio.h: o->target (the path,
 * or the regular file its link points to). *st is that file's status and
 * *exists says whether there is one. Returns NULL, or why not (static).
 */
static const char *fileio_target(FileOut *o, const char *path, struct stat *st, int *exists)
{
	const char *kind;

	*exists = 0;
	if (lstat(path, st) != 0) {
		if (errno != ENOENT)
			return strerror(errno);
		o->target = strdup(path);
		return o->target != NULL ? NULL : _("out of memory");
	}
	if (S_ISLNK(st->st_mode)) {
		o->target = realpath(path, NULL);
		if (o->target == NULL)
			return errno == ENOENT ? _("is a symbolic link to nothing") : strerror(errno);
		if (stat(o->target, st) != 0)
			return strerror(errno);
	} else if ((o->target = strdup(path)) == NULL)
		return _("out of memory");
	*exists = 1;
	if (S_ISDIR(st->st_mode))
		return strerror(EISDIR);
	if ((kind = fileio_kind(st->st_mode)) != NULL)
		return not_regular(kind);
	return NULL;
}

/* The temporary file beside o->target, permission bits set; 0 or -1 with errno. */
static int fileio_temp(FileOut *o, int mode, const struct stat *old)
{
	char *dir, *base;
	int fd;

	if (split_path(o->target, &dir, &base) != 0) {
		errno = ENOMEM;
		return -1;
	}
	/* a long name keeps its start: the temporary name must fit NAME_MAX too */
	o->tmp = str_printf("%s/.%.200s.XXXXXX", dir, base);
	free(dir);
	free(base);
	if (o->tmp == NULL) {
		errno = ENOMEM;
		return -1;
	}
	/* O_CREAT | O_EXCL with a random name: never an existing file, never a planted link */
	fd = mkstemp(o->tmp);
	if (fd < 0) {
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (mode < 0 && old != NULL)
		mode = (int)(old->st_mode & 0777); /* never set-uid, set-gid or sticky */
	else if (mode < 0) {
		mode_t mask = umask(0);
		umask(mask);
		mode = (int)(0666 & ~mask);
	}
	if (fchmod(fd, (mode_t)mode) != 0 || (o->f = fdopen(fd, "w")) == NULL) {
		int e = errno;
		close(fd);
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
		errno = e;
		return -1;
	}
	return 0;
}

/* Open o->target to append: an existing regular file, or a new one (0666 & ~umask). 0 or -1 with errno / *why. */
static int fileio_open_append(FileOut *o, int exists, const char **why)
{
	struct stat st;
	int fd, flags = O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

	*why = NULL;
	fd = open(o->target, exists ? flags : flags | O_CREAT | O_EXCL, 0666);
	if (fd < 0)
		return -1;
	o->created = !exists;
	if (fstat(fd, &st) != 0 || (*why = fileio_kind(st.st_mode)) != NULL) {
		int e = errno;
		close(fd);
		errno = e;
		if (*why != NULL)
			*why = not_regular(*why);
		return -1;
	}
	o->old_size = st.st_size;
	fcntl(fd, F_SETFL, O_WRONLY | O_APPEND);
	if ((o->f = fdopen(fd, "a")) == NULL) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return 0;
}

int fileio_begin(FileOut *o, const char *path, int mode, int append, char **err)
{
	struct stat st;
	const char *why;
	int exists;

	*err = NULL;
	memset(o, 0, sizeof *o);
	o->append = append;
	if ((o->shown = text_escape(path, "")) == NULL)
		return fileio_fail(o, _("out of memory"), err);
	if (path[0] == '\0' || path[strlen(path) - 1] == '/')
		return fileio_fail(o, _("expected a file name, not a directory"), err);
	if ((why = fileio_target(o, path, &st, &exists)) != NULL)
		return fileio_fail(o, why, err);
	if (append ? fileio_open_append(o, exists, &why) : fileio_temp(o, mode, exists ? &st : NULL)) {
		if (why == NULL)
			why = strerror(errno);
		return fileio_fail(o, why, err);
	}
	return 0;
}

void fileio_abort(FileOut *o)
{
	if (o->f != NULL) {
		if (o->append && !o->created)
			(void)!ftruncate(fileno(o->f), o->old_size); /* back to what it was */
		fclose(o->f);
	}
	if (o->tmp != NULL)
		unlink(o->tmp);
	else if (o->append && o->created && o->target != NULL)
		unlink(o->target);
	fileio_free(o);
}

int fileio_commit(FileOut *o, char **err)
{
	int e = o->error;
	struct stat st;
	const char *kind;

	*err = NULL;
	errno = 0;
	if (fflush(o->f) != 0 && e == 0)
		e = errno ? errno : EIO;
	if (ferror(o->f) && e == 0)
		e = EIO;
	if (e == 0 && fsync(fileno(o->f)) != 0)
		e = errno;
	if (e != 0)
		return fileio_fail(o, strerror(e), err);
	if (fclose(o->f) != 0) {
		o->f = NULL;
		return fileio_fail(o, strerror(errno), err);
	}
	o->f = NULL;
	if (o->append) {
		fileio_free(o);
		return 0;
	}
	/* Something else put in its place meanwhile: still never replaced. */
	if (lstat(o->target, &st) == 0 && (kind = fileio_kind(st.st_mode)) != NULL)
		return fileio_fail(o, not_regular(kind), err);
	if (rename(o->tmp, o->target) != 0)
		return fileio_fail(o, strerror(errno), err);
	free(o->tmp);
	o->tmp = NULL;
	/* make the rename itself durable; failure here loses nothing */
	{
		char *dir, *base;
		if (split_path(o->target, &dir, &base) == 0) {
			int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dfd >= 0) {
				(void)fsync(dfd);
				close(dfd);
			}
			free(dir);
			free(base);
		}
	}
	fileio_free(o);
	return 0;
}

int fileio_write_mode(const char *path, const char *data, size_t len, int mode, char **err)
{
	FileOut o;
	sigset_t stop, old;
	int rc;

	*err = NULL;
	if (strcmp(path, "-") == 0) {
		if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
			*err = fileio_error(SAY_CANNOT_WRITE_TO, _("standard output"), strerror(errno));
			return -1;
		}
		return 0;
	}
	/*
	 * Ctrl-C, kill, a closed terminal: they take effect once the file is
	 * whole or the temporary file is gone, never in between, which would
	 * leave the temporary file behind (only kill -9 still can).
	 */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	sigaddset(&stop, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	if ((rc = fileio_begin(&o, path, mode, 0, err)) == 0) {
		/* straight to the descriptor: the data is already one buffer */
		if (fflush(o.f) != 0 || write_all(fileno(o.f), data, len) != 0)
			o.error = errno;
		rc = fileio_commit(&o, err);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int fileio_write_atomic(const char *path, const char *data, size_t len, char **err)
{
	return fileio_write_mode(path, data, len, FILEIO_KEEP_MODE, err);
}

static char *over_limit(const char *path, size_t max)
{
	char msg[64];
	snprintf(msg, sizeof msg, _("over the limit of %zu bytes"), max);
	return fileio_error(SAY_PATH, path, msg);
}

int fileio_open_regular(const char *path, struct stat *st, const char **kind)
{
	int fd, e;

	*kind = NULL;
	/* look before opening: opening a device can do things, opening a FIFO can wait */
	if (stat(path, st) != 0)
		return -1;
	if ((*kind = fileio_kind(st->st_mode)) != NULL)
		return -1;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) != 0 || (*kind = fileio_kind(st->st_mode)) != NULL) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	fcntl(fd, F_SETFL, O_RDONLY);
	return fd;
}

char *fileio_read_all(const char *path, size_t max, size_t *len, char **err)
{
	char *buf = NULL;
	size_t cap = 0, used = 0;
	struct stat st;
	const char *kind;
	int fd;

	*err = NULL;
	*len = 0;
	fd = fileio_open_regular(path, &st, &kind);
	if (fd < 0) {
		*err = kind != NULL ? fileio_error(SAY_PATH, path, not_regular(kind)) : fileio_error(SAY_CANNOT_READ, path, strerror(errno));
		if (*err == NULL)
			*err = strdup(_("out of memory"));
		return NULL;
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
				*err = strdup(_("out of memory"));
				goto fail;
			}
			buf = grown;
			cap = ncap;
		}
		k = read(fd, buf + used, cap - used - 1);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			*err = fileio_error(SAY_CANNOT_READ, path, strerror(errno));
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
		*err = strdup(_("out of memory"));
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

const unsigned char *fileio_map(const char *path, size_t *len, char **err)
{
	static const unsigned char nothing[1];
	struct stat st;
	const char *kind;
	void *p;
	int fd;

	*len = 0;
	fd = fileio_open_regular(path, &st, &kind);
	if (fd < 0) {
		*err = kind != NULL ? fileio_error(SAY_PATH, path, not_regular(kind)) : fileio_error(SAY_CANNOT_READ, path, strerror(errno));
		if (*err == NULL)
			*err = strdup(_("out of memory"));
		return NULL;
	}
	if (st.st_size == 0) {
		close(fd);
		return nothing;
	}
	if ((unsigned long long)st.st_size > (size_t)-1) {
		close(fd);
		*err = over_limit(path, (size_t)-1);
		return NULL;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		*err = fileio_error(SAY_CANNOT_READ, path, strerror(errno));
		if (*err == NULL)
			*err = strdup(_("out of memory"));
		return NULL;
	}
	*len = (size_t)st.st_size;
	return p;
}

void fileio_unmap(const unsigned char *p, size_t len)
{
	if (p != NULL && len > 0)
		munmap((void *)p, len);
}
