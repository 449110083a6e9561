/*
 * tuistate.h: the full-screen view's state and the functions its files share
 * (tui.c: start, wait for a key, handle it, stop; screen.c: text, the status
 * message, pop-ups; tuidraw.c: the narration, the layout, the stage and
 * status lines; tuikeys.c: the key table, the key line and `?`; pane.c: the
 * matrix panes; tuidemo.c: demo scripts and :play; tuimouse.c: the mouse;
 * tuicourse.c: progress and the course menu; tuiwatch.c: --watch;
 * tuirender.c: --render; tuimodel.c: the model view).
 * Only these include it.
 */
#ifndef ATTNVIZ_TUISTATE_H
#define ATTNVIZ_TUISTATE_H

#include <signal.h>

#include <curses.h>

#include "app/demo.h"
#include "tui/layout.h"
#include "tui/lineedit.h"
#include "out/record.h"
#include "out/render.h"
#include "tui/tui.h"

/* What to draw on the next loop turn (besides Session.dirty). */
enum {
	R_STAGE  = 1 << 0,
	R_PANES  = 1 << 1,
	R_NARR   = 1 << 2,
	R_KEYS   = 1 << 3,
	R_STATUS = 1 << 4,
	R_POPUP  = 1 << 5,
	R_LAYOUT = 1 << 6, /* recompute the layout and recreate the windows */
	R_ALL    = 0x7f
};

/*
 * What a key goes to (tui_key): the main view, the `:` line, a pop-up, the
 * course menu. MODE_* is main.c's, the way attnviz runs (the view, --plain,
 * --check, …); this is the view's own.
 */
typedef enum TuiMode { TUI_MAIN, TUI_CMD, TUI_POPUP, TUI_MENU } TuiMode;

/* One matrix pane: a view of a matrix (maybe a column block, maybe transposed) plus its cursor. */
typedef struct Pane {
	AttnMatrix which;
	int head;          /* the head for per-head matrices and head column blocks */
	int kv_head;       /* ≥ 0: the key/value head whose columns this pane shows (PANE_EACH_KV_HEAD), else -1 */
	int grouped;       /* 1: one query head's columns, grouped under its key/value head (PANE_EACH_HEAD) */
	int transpose;     /* 1: drawn transposed (Kᵀ in the scores stage) */
	int col0, ncols;   /* the source columns shown: [col0, col0 + ncols) */
	int label0;        /* the label of source column col0 (PaneCut.label0) */
	int rows, cols;    /* of the view */
	int hidden;        /* 1: an open quiz hides this pane */
	char title[80];    /* UTF-8 or ASCII, no lesson text */
	int diverging;     /* ramp: diverging (most) or sequential (weights) */
	double maxabs;     /* largest finite |value|, for the diverging ramp */
	int lw, cw;        /* row label width, cell width (both with their gap) */
	int cur_r, cur_c;  /* cursor, in view coordinates */
	int top, left;     /* first visible row and column */
	int zoom;          /* 1: down-sampled heatmap without numbers; PANE_ZOOM_AUTO: so because presenting */
	int zoom_set;      /* 1: z chose zoom; 0: presenting, the rule of inspect/heatmap.h chooses (a matrix past 16 a side) */
	int variant;       /* 1: the lesson's compare variant (Session.compare_attn) */
	int other;         /* the pane this one is compared with (cells that differ are marked), or -1 */
	int ndiff;         /* cells that differ from the other pane (of the cells both have) */
	char only[64];     /* "  rows 3-4 only here": what only one of the two has, or "" */
	int sums;          /* 1: a Σ column of row sums at the right (weights) */
	int legend;        /* 1: a legend line under the rows (value range and ramp) */
	int pad, rgap;     /* presenter mode: extra columns per cell, blank lines between rows */
	int has_masked;    /* some cell is masked (the legend says how they look) */
	int bars;          /* > 0: a 1 × vocab distribution drawn as bars of its top `bars` entries (PANE_BARS) */
	double minv, maxv; /* finite range */
	char stats[48];    /* "μ 0.12 σ 1.03" for score-like matrices, or "" */
	char note[48];     /* what the title adds (labels_title_note: "q·k, ÷√3 in softmax"), or "" */
	char note_brief[32]; /* the same for a narrow pane ("÷√3 later") */
	WINDOW *win;
} Pane;

/*
 * What measuring a pane finds by looking at every number it shows (its
 * range) and at its whole matrix (mean and σ), kept under the computation's
 * version (Attn.version): coming back to a pane, another head or a step
 * back does not look at n × m numbers again.
 */
typedef struct PaneRange {
	unsigned long version; /* 0: an empty entry */
	AttnMatrix which;
	int head, col0, ncols;
	int any, has_masked;   /* some number is finite; some is not */
	double minv, maxv, maxabs;
	size_t finite;         /* the matrix's finite numbers, their mean and σ (MF_STATS matrices) */
	double mean, std;
} PaneRange;
#define TUI_PANE_RANGES 64 /* more than a walk through every stage of one head shows */

typedef struct Tui {
	Session *s;
	TuiOptions opt;
	int utf8;             /* the locale is UTF-8: −∞, ×, ᵀ, box glyphs */
	TuiMode mode;
	unsigned redraw;      /* R_* bits */

	Layout lay;
	int have_layout;
	WINDOW *w_stage, *w_narr, *w_keys, *w_status, *w_popup;

	Pane pane[LAYOUT_MAX_PANES];
	PaneRange ranges[TUI_PANE_RANGES]; /* the last ones measured; ranges_next is replaced next */
	int ranges_next;
	int npanes, focus;
	int want_focus;       /* a pane to focus after the next rebuild: matrix + 1, or 0 */
	int arrived;          /* the step and stage whose focus was last honoured (n/p inside its decode steps or tiles keep the pane) */
	int want_head;

	char *narr;           /* narration text, escaped (newlines kept) */
	int narr_top;         /* first narration line shown */
	int narr_text_h;      /* the narration's lines of text as last drawn (PgDn's page), 0 before */
	int narr_must;        /* narr's first bytes that must all be in view (an open question and its choices) */
	char *note;           /* a message too wide for the status line, at the narration's top (escaped), or NULL */
	int note_place;       /* the place (tui_arrived's number) it belongs to; 0: the next narration takes it */
	int solo;             /* 1: the panes gave way to the narration: only the focused one is shown (Tab brings the others) */

	char *msg;            /* status message (escaped), or NULL */
	int msg_error;

	char *popup_title, *popup_text; /* escaped */
	int popup_top, popup_lines;

	LineEdit *le;

	int edit_glow;        /* 1: cells an edit changed are highlighted (not FlashAttention's `flash` stage) */
	long long edit_glow_until; /* when the glow ends (monotonic ms) */

	/* ATTNVIZ_KEY_TIMES=FILE (make bench): each key's time to its answer on the screen is appended there */
	FILE *key_times;
	double key_t0;        /* when the key being answered was read (monotonic ms; 0: none) */
	double key_cpu0;      /* the CPU time used by then (ms): on a busy machine, the time of the work itself */
	int key_code;
	int key_ready;        /* "ready" is written (the first frame is out) */

	/* A demo script playing (--demo, :source): see "Demo scripts" below. */
	Demo *demo;
	int demo_pos;         /* the next entry to run */
	int demo_paused;      /* space / n / p: stepping by hand */
	int demo_at_pause;    /* stopped at a `pause` entry until space or Enter */
	int demo_at_quiz;     /* at a `quiz` entry: the class votes; space reveals the answer (then goes on) */
	int demo_running;     /* 1 while a demo's command runs: its `source` splices the script in */
	long long demo_due;   /* when the next entry runs (monotonic ms) */
	int replaying;        /* p: replaying the script quietly on the starting lesson */
	SessionMark demo_mark; /* the session as the demo found it, for p */
	int demo_present;
	char demo_theme[32];

	/* :play SECONDS */
	long long play_ms, play_due; /* 0: not playing */

	/* --watch: the lesson file as last seen (tuiwatch.c); checked once a second */
	char *watch_path;     /* owned: the file the stamp is of (the lesson loaded may change) */
	long long watch_due;
	long long watch_sec, watch_nsec, watch_size, watch_ino; /* the stamp: mtime, size, inode */

	Recorder *rec;        /* --record: the asciicast being written, or NULL */
	FILE *render_out, *render_in; /* --render: /dev/null, curses' terminal */
	RenderCell *plain_cells, *plain_prev; /* --record-plain: the screen now and as last recorded */
	int plain_w, plain_h, plain_have;

	/* The course menu (m; tuicourse.c): the lessons as `lessons` lists them, one chosen. */
	char **menu_line, **menu_name; /* owned: what each line says (escaped), the lesson it opens */
	int menu_n, menu_sel, menu_top;
	WINDOW *w_menu;
	int progress_said;    /* a failure to keep progress was said (once) */
	int tracking;         /* 1: the learner's moves are kept (after the start, unless continuing is offered) */

	/*
	 * The model view (tuimodel.c): every layer × head at a glance, over the
	 * main view; while it is open, the main view's keys and clicks go to it.
	 */
	int model_open;
	struct HeadRow *model_rows;  /* owned (out/textfmt.h): the heads in the order shown */
	int model_n, model_sel;      /* how many, the selected one */
	int model_top, model_left;   /* the first row and column of thumbnails shown */
	int model_sort;              /* -1: by layer and head; else a HeadScoreKind, highest first */
	WINDOW *w_model;
	/* The logit lens (tuilens.c), over the model view while lens_open: its cells, the selected one, the first shown. */
	int lens_open;
	struct Lens *lens;
	int lens_layer, lens_pos, lens_top, lens_left;

	/* tui_run: what tui_start set up and tui_stop puts back. */
	SCREEN *scr;
	struct sigaction old_int, old_term, old_hup, old_quit;
	int rc;               /* the exit status: 0, 1 (no terminal), 128 + a signal */
	int errs;             /* wgetch returning at once with nothing, again and again: the input is gone */
} Tui;

/*
 * A key and what it does: the tables of keys (tui_main_keys, tui_demo_keys) are the
 * one place a key is named, behind the key handlers, the `?` help and the
 * key line. run returns 1 when it took the key, 0 when the key does nothing
 * now (1-9 without a question).
 */
typedef enum KeyWhen { KEY_ALWAYS, KEY_HEADS, KEY_LAYERS } KeyWhen;

typedef struct KeyEntry {
	int key[10];           /* the codes (ASCII or curses KEY_*), 0 ends the list */
	const char *keys;      /* in `?`: "n  space  Shift-Right"; NULL: not listed (the line above covers it) */
	const char *does;      /* in `?`: "next step" ('\n': a second line) */
	int bar;               /* place on the key line, 1 first (the places are 1, 2, 3, …); 0: not there */
	const char *bar_key;   /* there: "n/spc" */
	const char *bar_ascii; /* the same without UTF-8, when bar_key has other characters */
	const char *bar_does;  /* "next" */
	KeyWhen when;          /* on the key line always, or only when the lesson shown has several heads or layers */
	int (*run)(Tui *t, int key, int arg);
	int arg;
} KeyEntry;

/* How long the cells an edit changed stay lit, in milliseconds. */
#define EDIT_GLOW_MS 1000
/* Cells of a result and its compare variant differ beyond this (stats_cell_differs). */

/* screen.c: text by display width, the status message, pop-ups, lists */
/* Draw s[0..len) (len -1: all) at the cursor in at most maxw columns, skipping the first skip; the columns drawn. */
int screen_draw(WINDOW *win, const char *s, int len, int maxw, int skip);
/* Draw s (UTF-8 of our own, or already escaped) at y, x with attributes; the columns drawn. */
int screen_put(WINDOW *win, int y, int x, attr_t attr, const char *s, int maxw);
/* screen_put, but a text wider than maxw is cut one glyph short and ends in an ellipsis ("..." without UTF-8). */
int screen_put_fit(WINDOW *win, int y, int x, attr_t attr, const char *s, int maxw, int utf8);
/* Lesson text for the screen: control characters escaped, newlines kept, tabs expanded. Heap string or NULL. */
char *screen_text(const char *s);
/*
 * A pop-up's window, wh × ww in the middle of the screen: its background, a
 * box (ASCII without UTF-8) and foot on its bottom edge, the attributes left
 * at the title's for the caller's title. NULL when curses cannot make it.
 */
WINDOW *screen_frame(const Tui *t, int wh, int ww, const char *foot);
void tui_set_msg(Tui *t, int error, const char *text);
void tui_msgf(Tui *t, int error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The status line when a pane a question hides is asked for: how to answer this question. */
void tui_answer_first(Tui *t);
void tui_popup(Tui *t, const char *title, const char *text);
void tui_popup_close(Tui *t);
void tui_draw_popup(Tui *t);
/* Up/down/page/home/end on a list position in [0, last] (a pop-up's top line, the menu's choice): 1 when key moved it. */
int tui_list_key(int key, int *pos, int page, int last);

/* tuidraw.c: the narration, the layout and its windows, the stage, narration and status lines */
void tui_build_narr(Tui *t);
/* Compute the layout for the current panes; recreate the windows when it changed (force: always). */
void tui_layout(Tui *t, int force);
void tui_free_windows(Tui *t);
/* Draw what changed, then update the screen once. */
void tui_draw(Tui *t);

/* tuikeys.c: the key table, its actions, the key line and `?` */
const KeyEntry *key_find(const KeyEntry *table, int key);
/* A key in the main view (the mouse acts through here too); 1 when its entry took it. */
int tui_key_main(Tui *t, int key);
void tui_draw_keys(Tui *t);
/* The entry of the key line at column x of it, or NULL. */
const KeyEntry *tui_keyline_at(const Tui *t, int x);

/* tui.c: start, wait for a key, handle it, stop */
long long tui_now_ms(void);
/* --render: tui_now_ms() says ms from here on (a virtual clock); -1 goes back to the real one. */
void tui_clock_set(long long ms);
/* The signal (SIGINT, SIGTERM, …) that asked attnviz to stop, or 0. */
int tui_signalled(void);
/* One loop turn before waiting for a key: run what is due, draw what changed. 1 when attnviz should stop. */
int tui_turn(Tui *t);
/* What ends by time alone (an edit's glow) ends when its time has come. */
void tui_expire(Tui *t);
/* One key, as if pressed. 1 when attnviz should stop. */
int tui_key(Tui *t, int key);
/* Run one command line; cmd_run's status (0, or -1 when it failed). */
int tui_run_line(Tui *t, const char *line);

/* pane.c */
const Attn *pane_attn(const Tui *t, const Pane *p);
const Mat *pane_mat(const Tui *t, const Pane *p);
/* Cell (R, C) of m, the matrix pane_mat gave p (a real model's head kept in its file: from the file's number). */
double pane_at(const Tui *t, const Pane *p, const Mat *m, int R, int C);
void pane_src(const Pane *p, int r, int c, int *R, int *C);
void pane_want(const Pane *p, int *w, int *h);
/* Pane.zoom when presenting made the pane a heatmap (it asks for the room of every cell). */
#define PANE_ZOOM_AUTO 2
/* A zoomed pane's reduction in its window: each heatmap cell stands for f × f cells (inspect/heatmap.h). */
int pane_zoom_factor(const Pane *p);
/* 1 when a and b are drawn the same shape (and so scroll together: the focused pane leads, tui_draw_panes). */
int pane_same_shape(const Pane *a, const Pane *b);
void tui_build_panes(Tui *t, int keep, int refocus);
int tui_focus_matrix(Tui *t, int which, int head, int row, int col);
void tui_draw_panes(Tui *t);
int pane_cell_at(const Pane *p, int y, int x, int *r, int *c);

/* tuimouse.c */
void tui_mouse_start(Tui *t);
void tui_mouse(Tui *t);

/* tuicourse.c */
void tui_track(Tui *t);
int tui_menu_open(Tui *t);
void tui_menu_close(Tui *t);
void tui_menu_key(Tui *t, int key);
void tui_menu_click(Tui *t, int y, int x, int twice);
void tui_draw_menu(Tui *t);

/* tuimodel.c: the model view */
/* Open it (sort: -1 by layer and head, else a HeadScoreKind); 1 (a key's answer). */
int tui_model_open(Tui *t, int sort);
void tui_model_close(Tui *t);
/* The heads and their scores gathered again (the lesson or its numbers changed). */
void tui_model_refresh(Tui *t);
void tui_model_key(Tui *t, int key);
/* The mouse at screen (y, x): a click (twice: a double click) or the wheel (-1 up, 1 down, 0 none). */
void tui_model_mouse(Tui *t, int y, int x, int click, int twice, int wheel);
void tui_draw_model(Tui *t);

/* tuilens.c: the logit lens, a screen over the model view (L) */
int tui_lens_open(Tui *t);
void tui_lens_close(Tui *t);
/* Computed again (the model's numbers changed); closed when it cannot be. */
void tui_lens_refresh(Tui *t);
void tui_lens_key(Tui *t, int key);
/* Into the model view's window w (tui_draw_model). */
void tui_draw_lens(Tui *t, WINDOW *w);

/* tuidemo.c */
extern const KeyEntry tui_demo_keys[];
void tui_demo_free(Tui *t);
void tui_demo_start(Tui *t, const char *path);
void tui_demo_source(Tui *t, const char *path);
void tui_demo_tick(Tui *t);
int tui_demo_key(Tui *t, int key);
void tui_play_tick(Tui *t);

/* tuiwatch.c */
void tui_watch_tick(Tui *t);
void tui_watch_free(Tui *t);
/* tuirender.c */
/* --render: play the demo on the virtual terminal and write its frames; the exit status. */
int tui_render_loop(Tui *t);
/* 1 when rendering --clean: frames for slides without the key line, the status line or how-to-answer prompts. */
static inline int tui_clean(const Tui *t)
{
	return t->opt.render != NULL && t->opt.render->clean;
}
/* --record-plain: the rows of the screen that changed since the last frame, recorded. */
void tui_record_frame(Tui *t);

#endif
