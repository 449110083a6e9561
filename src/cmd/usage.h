/* usage.h: `attnviz --help`, the command line's usage and every option, in the program's language. */
#ifndef ATTNVIZ_USAGE_H
#define ATTNVIZ_USAGE_H

#include <stdio.h>

/* The help to out; share: where the lessons are installed (the usage text names it). */
void usage_help(FILE *out, const char *share);

#endif
