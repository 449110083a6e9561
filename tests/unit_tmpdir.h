/* unit_tmpdir.h: for the unit tests that write files — a fresh directory
 * (`dir`) made before each test and removed after it (cmocka setup/teardown). */
#ifndef ATTNVIZ_UNIT_TMPDIR_H
#define ATTNVIZ_UNIT_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/attnviz-unit.XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[160];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

#endif
