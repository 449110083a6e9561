/* tui.h: the ncurses front end — panes, heatmaps, the `:` line. */
#ifndef ATTNVIZ_TUI_H
#define ATTNVIZ_TUI_H

#include "app/progress.h"
#include "app/session.h"

/* --render: the demo played with no terminal, kept as frames (tuirender.c). */
typedef struct TuiRender {
	const char *out;     /* FILE.svg or FILE.cast */
	int width, height;   /* the virtual terminal */
	double pause_s;      /* how long a `pause` (anything waiting for a key) lasts */
	double zoom;         /* a GIF's or MP4's pixels per SVG pixel (--scale N; 0: 1) */
	int clean;           /* --clean: frames without the key line, the status line or the how-to-answer prompts */
} TuiRender;

typedef struct TuiOptions {
	const char *theme;   /* theme name or NULL for the default */
	int present;         /* presenter mode (larger cells, no key line) */
	const char *demo;    /* demo script to play, or NULL */
	const char *record;  /* asciicast v2 file to record to, or NULL */
	int record_plain;    /* --record-plain: curses never scrolls a region or inserts/deletes lines */
	const TuiRender *render; /* --render (with demo), or NULL */
	int no_mouse;        /* --no-mouse: the terminal keeps the mouse (its own selection) */
	Progress *progress;  /* where the learner's way through the course is kept, or NULL */
	const char *notice;  /* a warning for the status line at the start (a damaged progress file), or NULL */
	const char *offer;   /* the offer to continue where the learner left off, or NULL */
	int watch;           /* --watch: reload the lesson's file each time it is saved, keeping the step */
} TuiOptions;

/*
 * Run the visualizer on s until the learner quits. The terminal is restored
 * on every way out (q, end of input, SIGINT/SIGTERM/SIGHUP, fatal errors).
 * Returns the process exit status.
 */
int tui_run(Session *s, const TuiOptions *opt);

#endif
