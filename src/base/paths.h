/* paths.h: where attnviz looks for its data (lessons, themes, models). */
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

/*
 * The models that ship with attnviz (assets/models/NAME/, installed as
 * ATTNVIZ_SHARE/models/NAME/): a NAME without a slash is looked for in
 * $ATTNVIZ_MODELS, ./assets/models, DIR/../assets/models beside the binary
 * and ATTNVIZ_SHARE/models, and the first of those folders that holds
 * NAME/config.json is returned (a heap string). NULL when none does, when
 * NAME has a slash or starts with a dot (a path is not a name), or out of memory.
 */
char *paths_find_model(const char *name);

/*
 * Where the program's message catalogues are (bindtextdomain): DIR/locale
 * when DIR, the running binary's directory, has one (the build tree:
 * build/attnviz beside build/locale), else installed (the installed
 * $(PREFIX)/share/locale). The string is owned by this module or the caller.
 */
const char *paths_locale_dir(const char *installed);

/*
 * Where attnviz keeps a learner's file NAME (history, progress.json):
 * $XDG_STATE_HOME/attnviz/NAME (an absolute XDG_STATE_HOME; a relative one
 * is ignored, as XDG says), else ~/.local/state/attnviz/NAME. A heap
 * string, NULL without either (or out of memory).
 */
char *paths_state_file(const char *name);
/* mkdir -p of the directory path is in (mode 0700). 0, or -1 when it is not there afterwards. */
int paths_make_parent(const char *path);

#endif
