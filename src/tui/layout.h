/* layout.h: where the TUI's parts go on a screen of a given size (pure, no curses). */
#ifndef ATTNVIZ_LAYOUT_H
#define ATTNVIZ_LAYOUT_H

/* Below this the TUI shows "terminal too small" instead of its panes. */
#define LAYOUT_MIN_COLS  40
#define LAYOUT_MIN_LINES 12
#define LAYOUT_MAX_PANES 8
/* A pane's smallest useful size: title, column labels, two rows; a label and two cells. */
#define LAYOUT_PANE_MIN_H 4
#define LAYOUT_PANE_MIN_W 20
/* Blank columns between panes side by side, so one pane's numbers never read as the next one's. */
#define LAYOUT_PANE_GAP 3
/* What the panes keep when the narration needs the room: a title and two rows. */
#define LAYOUT_PANES_MIN_H 3

typedef struct LayoutRect {
	int y, x, h, w; /* h == 0 or w == 0: not shown */
} LayoutRect;

typedef struct LayoutIn {
	int cols, lines;                 /* the screen */
	int npanes;                      /* 0 … LAYOUT_MAX_PANES matrix panes, in reading order */
	int want_w[LAYOUT_MAX_PANES];    /* each pane's natural size (labels + every cell); */
	int want_h[LAYOUT_MAX_PANES];    /* a pane gets at most that, less when the screen is short */
	int narr_lines;                  /* narration lines wanted (text + formula); 0: as many as allowed */
	int narr_need;                   /* narration lines that must show (an open question and its choices): */
	                                 /* the panes give way to them, down to LAYOUT_PANES_MIN_H lines */
	int present;                     /* presenter mode: no key line, a larger narration pane */
	int no_keys;                     /* no key line either way (--render --clean) */
} LayoutIn;

/*
 *   line 0          stage line
 *   panes           matrix panes in a grid of grid_rows rows, left to right
 *   narr            narration: a rule line, then the text and the formula
 *   keys            key line (h == 0 in presenter mode and with no_keys)
 *   status          status / command line (the last line)
 */
typedef struct Layout {
	int too_small;                   /* 1: only the notice fits; the rects are all empty */
	LayoutRect stage, panes, narr, keys, status;
	int npanes, grid_rows;
	LayoutRect pane[LAYOUT_MAX_PANES];
} Layout;

/*
 * Fill *out for the screen and panes in *in. The number of grid rows is the
 * one that hides the least of the panes' natural area (fewer rows on a tie).
 * Returns 0, or -1 when the screen is below LAYOUT_MIN_COLS × LAYOUT_MIN_LINES
 * (then out->too_small is 1).
 */
int layout_compute(const LayoutIn *in, Layout *out);

#endif
