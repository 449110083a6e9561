/* histfile.h: the `:` line's history file ($XDG_STATE_HOME/attnviz/history), for both line editors.
 *
 * One command a line, oldest first (readline's "#TIME" lines are skipped).
 * It is read only when it is a regular file (a FIFO there is never waited
 * on) and written through fileio.h, atomically and always 0600: what a
 * learner typed is theirs. History is a convenience, so both are silent.
 */
#ifndef ATTNVIZ_HISTFILE_H
#define ATTNVIZ_HISTFILE_H

/* add(ctx, line) for each line of the file, oldest first; nothing when there is no usable file. */
void histfile_load(const char *path, void (*add)(void *ctx, const char *line), void *ctx);
/* Write lines[0..n) (empty ones and any with a newline left out). Returns 0 or -1. */
int histfile_save(const char *path, const char *const *lines, int n);

#endif
