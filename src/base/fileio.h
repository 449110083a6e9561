/* fileio.h: whole files in and out, never half-written, and only regular files.
 *
 * What every file attnviz writes (exports, saved lessons, recordings,
 * transcripts, the history) can rely on — README.md "Files" says the same:
 *
 *  - Only a regular file, or a path where nothing is yet, is written. A
 *    directory, device, FIFO or socket is refused with a message and left
 *    alone.
 *  - A symbolic link is followed: the regular file it points to is replaced
 *    (the temporary file goes beside that file, not beside the link) and the
 *    link stays a link. A link to nothing, or to anything but a regular
 *    file, is refused.
 *  - The bytes go to a new temporary file "DIR/.NAME.XXXXXX" beside the file
 *    (mkstemp: an unpredictable name, created exclusively, so a link planted
 *    in advance is never followed), are flushed to the disk (fsync) and
 *    renamed over the file: it holds either its old bytes or all the new
 *    ones. Every failure removes the temporary file and leaves the file as
 *    it was. fileio_write_* hold off SIGINT, SIGTERM, SIGHUP and SIGQUIT
 *    until then, so only a process killed outright (kill -9) can leave the
 *    hidden temporary file; the file itself is still whole.
 *  - A replaced file keeps its permission bits, but never set-user-ID,
 *    set-group-ID or sticky; a new file gets 0666 & ~umask, or the mode the
 *    writer asks for (the history: 0600). The new file belongs to whoever
 *    runs attnviz.
 *
 * Reading: only regular files are read; a FIFO or a device is refused at
 * once, never opened for reading and waited on.
 */
#ifndef ATTNVIZ_FILEIO_H
#define ATTNVIZ_FILEIO_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

/* Mode for fileio_begin: the old file's permission bits (without set-id and sticky), or 0666 & ~umask. */
#define FILEIO_KEEP_MODE (-1)

/*
 * A file being written. fileio_begin opens it; the writer writes to f (and
 * may set error to an errno it saw, which makes fileio_commit fail); then
 * exactly one of fileio_commit or fileio_abort ends it.
 * An atomic FileOut writes a temporary file renamed over the path at the end.
 * An appending one (a transcript) writes at the end of the file itself, so a
 * crash keeps what came before; a failure cuts the file back to its old
 * length, or removes it when attnviz created it.
 */
typedef struct FileOut {
	FILE *f;
	int error;
	/* private */
	int append, created;
	off_t old_size;
	char *tmp;     /* the temporary file (atomic) */
	char *target;  /* the file replaced or appended to: the path, or where its link points */
	char *shown;   /* the path as given, escaped for messages */
} FileOut;

/*
 * Start writing path (the rules above). mode: FILEIO_KEEP_MODE or the
 * permission bits for the new file. Returns 0, or -1 with *err (a heap
 * string naming the path and the reason: "cannot write x.svg: a FIFO, not a
 * regular file") and nothing changed.
 */
int fileio_begin(FileOut *o, const char *path, int mode, int append, char **err);
/* Flush, sync, close and (atomic) rename. 0, or -1 with *err and the file as it was. Ends o either way. */
int fileio_commit(FileOut *o, char **err);
/* Stop: the file stays as it was, the temporary file is removed. Ends o. */
void fileio_abort(FileOut *o);

/*
 * Write len bytes of data to path atomically with FILEIO_KEEP_MODE (the
 * rules above). Returns 0, or -1 with *err ("cannot write out.svg:
 * Permission denied"). path "-" writes to stdout.
 */
int fileio_write_atomic(const char *path, const char *data, size_t len, char **err);
/* The same with the new file's permission bits given (the history file: 0600). */
int fileio_write_mode(const char *path, const char *data, size_t len, int mode, char **err);

/*
 * Read a whole regular file of at most max bytes into a NUL-terminated heap
 * string (*len = its length without the NUL). NULL with *err
 * ("cannot read x.json: No such file or directory", "x.json: over the
 * limit of N bytes", "x.json: is a directory, not a regular file").
 */
char *fileio_read_all(const char *path, size_t max, size_t *len, char **err);

/*
 * Open path for reading only if it is a regular file: a FIFO, device,
 * socket or directory is never opened (O_NONBLOCK and a second look after
 * opening close the race). Returns the descriptor (blocking, close-on-exec)
 * with *st filled in; or -1 with *kind saying what path is instead ("a
 * FIFO", see fileio_kind), or -1 with *kind NULL and errno set.
 */
int fileio_open_regular(const char *path, struct stat *st, const char **kind);
/*
 * Map a whole regular file read-only into memory (a model's weights: the
 * system pages in what is read, nothing is copied). Returns the bytes with
 * *len their count, or NULL with *err as fileio_read_all says it (an empty
 * file is mapped as a non-NULL pointer to no bytes). Undo with fileio_unmap.
 */
const unsigned char *fileio_map(const char *path, size_t *len, char **err);
void fileio_unmap(const unsigned char *p, size_t len);
/* NULL for a regular file; else what the mode is: "a directory", "a FIFO", "a character device", … */
const char *fileio_kind(mode_t mode);

#endif
