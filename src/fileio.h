/* fileio.h: whole files in and out, never half-written. */
#ifndef ATTNVIZ_FILEIO_H
#define ATTNVIZ_FILEIO_H

#include <stddef.h>

/*
 * Write len bytes of data to path so that path is either left as it was or
 * holds exactly data: the bytes go to a temporary file "DIR/.NAME.XXXXXX" in
 * the same directory, which is flushed (fsync) and renamed over path. An
 * existing file keeps its permission bits; a new one gets 0666 & ~umask.
 * On any failure the temporary file is removed, path is untouched, and *err
 * gets a heap string naming the path and the reason
 * ("cannot write out.svg: Permission denied"). Returns 0 or -1.
 * path "-" writes to stdout.
 */
int fileio_write_atomic(const char *path, const char *data, size_t len, char **err);

/*
 * Read a whole regular file of at most max bytes into a NUL-terminated heap
 * string (*len = its length without the NUL). NULL with *err
 * ("cannot read x.json: No such file or directory", "x.json: over the
 * limit of N bytes", "x.json: is a directory").
 */
char *fileio_read_all(const char *path, size_t max, size_t *len, char **err);

#endif
