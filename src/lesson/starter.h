/* starter.h: the small starter lesson `attnviz --new NAME` writes for a teacher to edit. */
#ifndef ATTNVIZ_STARTER_H
#define ATTNVIZ_STARTER_H

/*
 * The starter lesson is valid (--check --strict passes), every text in English and Chinese.
 * Write it to name (".json" added when name does not end in it),
 * atomically; an existing file is never replaced. Returns 0 with *path the
 * file written (heap string), or -1 with *err (heap string; the caller frees).
 */
int starter_write(const char *name, char **path, char **err);

#endif
