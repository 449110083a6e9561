/* paths.c: where attnviz looks for its data (lessons, themes, models). */
#include "base/paths.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* The directory of the running binary ("" when the system does not say). */
static const char *exe_dir(void)
{
	static char dir[PATH_MAX];
	static int done;
	ssize_t n;
	char *slash;

	if (done)
		return dir;
	done = 1;
	n = readlink("/proc/self/exe", dir, sizeof dir - 1);
	if (n <= 0) {
		dir[0] = '\0';
		return dir;
	}
	dir[n] = '\0';
	slash = strrchr(dir, '/');
	if (slash != NULL)
		*slash = '\0';
	else
		dir[0] = '\0';
	return dir;
}

int paths_search(const char *env, const char *local, const char *shared, const char *dirs[PATHS_MAX])
{
	static char beside[PATHS_MAX][PATH_MAX], installed[PATHS_MAX][PATH_MAX];
	static int slot;
	const char *e = env != NULL ? getenv(env) : NULL;
	const char *exe = exe_dir();
	int n = 0;

	/* a few slots, so the lessons' and the themes' lists can be held at once */
	slot = (slot + 1) % PATHS_MAX;
	if (e != NULL && e[0] != '\0')
		dirs[n++] = e;
	dirs[n++] = local;
	/* a path too long to hold is not searched */
	if (exe[0] != '\0' && (size_t)snprintf(beside[slot], sizeof beside[slot], "%s/../%s", exe, local) < sizeof beside[slot])
		dirs[n++] = beside[slot];
	snprintf(installed[slot], sizeof installed[slot], "%s/%s", ATTNVIZ_SHARE, shared);
	dirs[n++] = installed[slot];
	return n;
}

char *paths_find_model(const char *name)
{
	const char *dirs[PATHS_MAX];
	int n = paths_search("ATTNVIZ_MODELS", "assets/models", "models", dirs);
	struct stat st;

	if (name == NULL || name[0] == '\0' || name[0] == '.' || strchr(name, '/') != NULL)
		return NULL;
	for (int i = 0; i < n; i++) {
		size_t len = strlen(dirs[i]) + strlen(name) + sizeof "//config.json";
		char *config = malloc(len);

		if (config == NULL)
			return NULL;
		snprintf(config, len, "%s/%s/config.json", dirs[i], name);
		if (stat(config, &st) == 0 && S_ISREG(st.st_mode)) {
			*strrchr(config, '/') = '\0';
			return config;
		}
		free(config);
	}
	return NULL;
}

const char *paths_locale_dir(const char *installed)
{
	static char beside[PATH_MAX];
	const char *exe = exe_dir();
	struct stat st;

	if (exe[0] != '\0' && (size_t)snprintf(beside, sizeof beside, "%s/locale", exe) < sizeof beside &&
	    stat(beside, &st) == 0 && S_ISDIR(st.st_mode))
		return beside;
	return installed;
}

char *paths_state_file(const char *name)
{
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	const char *base = xdg != NULL && xdg[0] == '/' ? xdg : home;
	const char *mid = base == xdg ? "/attnviz/" : "/.local/state/attnviz/";
	char *path;

	if (base == NULL || base[0] == '\0')
		return NULL;
	path = malloc(strlen(base) + strlen(mid) + strlen(name) + 1);
	if (path != NULL)
		sprintf(path, "%s%s%s", base, mid, name);
	return path;
}

int paths_make_parent(const char *path)
{
	char *dir = strdup(path), *slash;
	struct stat st;
	int r, first = 0;

	if (dir == NULL)
		return -1;
	slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir) {
		free(dir);
		return 0;
	}
	*slash = '\0';
	for (char *c = dir + 1; *c != '\0'; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdir(dir, 0700) != 0 && errno != EEXIST && first == 0)
			first = errno; /* the real reason (EACCES…), which the next mkdir would report as ENOENT */
		*c = '/';
	}
	r = mkdir(dir, 0700) == 0 || (errno == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) ? 0 : -1;
	if (r != 0 && errno == ENOENT && first != 0)
		errno = first;
	else if (r != 0 && errno == EEXIST)
		errno = ENOTDIR;
	free(dir);
	return r;
}
