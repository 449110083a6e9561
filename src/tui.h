/* tui.h: the ncurses front end — panes, heatmaps, the `:` line. */
#ifndef ATTNVIZ_TUI_H
#define ATTNVIZ_TUI_H

#include "session.h"

typedef struct TuiOptions {
	const char *theme;   /* theme name or NULL for the default */
	int present;         /* presenter mode (larger cells, no key line) */
	const char *demo;    /* demo script to play, or NULL */
	const char *record;  /* asciicast v2 file to record to, or NULL */
} TuiOptions;

/*
 * Run the visualizer on s until the learner quits. The terminal is restored
 * on every way out (q, end of input, SIGINT/SIGTERM/SIGHUP, fatal errors).
 * Returns the process exit status.
 */
int tui_run(Session *s, const TuiOptions *opt);

#endif
