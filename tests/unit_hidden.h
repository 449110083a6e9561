/* unit_hidden.h: for the unit tests that write files — the hidden files in a
 * directory, i.e. temporary files (".NAME.XXXXXX") a writer left behind. */
#ifndef ATTNVIZ_UNIT_HIDDEN_H
#define ATTNVIZ_UNIT_HIDDEN_H

#include <dirent.h>
#include <string.h>

static int hidden_files_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

#endif
