/* plain.h: the line-oriented REPL (no curses): same commands, text tables. */
#ifndef ATTNVIZ_PLAIN_H
#define ATTNVIZ_PLAIN_H

#include <stdio.h>

#include "app/progress.h"
#include "app/session.h"

typedef struct PlainOptions {
	int color;        /* ANSI colour in tables */
	int utf8;         /* −∞ and × rather than -inf and x */
	int interactive;  /* print prompts */
	FILE *transcript; /* NULL, or where every command line and its printed result is also written
	                     (no colour; errors included as "error: …"); the caller opens and closes it */
	int *transcript_errno; /* NULL, or where the first failed flush of the transcript leaves its errno */
	Progress *progress;    /* NULL, or where the learner's way through the course is kept (progress.h) */
} PlainOptions;

/* Read commands from in until end of input or `quit`; returns the exit status (0). */
int plain_run(Session *s, FILE *in, const PlainOptions *opt);

#endif
