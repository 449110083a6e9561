/* paths.h: where attnviz looks for its data (lessons, themes). */
#ifndef ATTNVIZ_PATHS_H
#define ATTNVIZ_PATHS_H

#define PATHS_MAX 4

/*
 * The directories to search, most specific first:
 *   $ENV (when set and not empty), ./LOCAL, DIR/../LOCAL where DIR holds the
 *   running binary (so build/attnviz finds the checkout's lessons from any
 *   directory), and ATTNVIZ_SHARE/SHARED (the installed copy).
 * e.g. paths_search("ATTNVIZ_LESSONS", "lessons", "lessons", dirs).
 * Fills dirs (strings owned by the environment or this module) and returns
 * the count.
 */
int paths_search(const char *env, const char *local, const char *shared, const char *dirs[PATHS_MAX]);

#endif
