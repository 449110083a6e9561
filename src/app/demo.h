/* demo.h: demo scripts — commands one per line, `#` comments, `pause` and `wait SECONDS`.
 *
 * A script is plain text:
 *   # what the teacher says (ignored)
 *   load mask
 *   goto scores
 *   pause            wait for a key (TUI) / for Enter (an interactive REPL)
 *   wait 1.5         wait 1.5 seconds (0 … 600, fractional allowed)
 *   quiz             ask the step's open question: wait while the class votes,
 *                    then the next key reveals the answer
 * Blank lines and lines whose first non-blank character is '#' are skipped;
 * a leading ':' is allowed. A relative path after `load` or `source` is the
 * demo file's folder's (`load cat.json` beside the demo; a bare name with no
 * '/' or '.' stays a lesson name unless that folder holds NAME or NAME.json).
 * Both front ends play scripts through this
 * parser (no curses here): the TUI (`--demo`, `:source`) and the plain REPL
 * (`source`).
 */
#ifndef ATTNVIZ_DEMO_H
#define ATTNVIZ_DEMO_H

#include <stddef.h>

#define DEMO_MAX_WAIT 600.0
#define DEMO_MAX_BYTES (1 << 20)
/*
 * The most lines (commands, pauses, waits) one script may hold, and the
 * most one `source` may run in all, counting the scripts it sources: nesting
 * bounds the depth, this bounds the work (ten scripts that each source the
 * next ten times would otherwise run 10^10 lines).
 */
#define DEMO_MAX_LINES 10000

typedef enum DemoKind {
	DEMO_CMD,    /* a command for cmd_run() (or the front end) */
	DEMO_PAUSE,  /* wait for a key */
	DEMO_WAIT,   /* wait `seconds` */
	DEMO_QUIZ    /* ask the step's question, wait for the class, reveal the answer on the next key */
} DemoKind;

typedef struct DemoLine {
	DemoKind kind;
	int lineno;      /* 1-based line in the file */
	double seconds;  /* DEMO_WAIT */
	char *text;      /* the line without surrounding blanks (DEMO_CMD: the command, its path made the demo folder's) */
	char *file;      /* NULL: a line of the demo itself; else the script a `source` brought it from (owned) */
} DemoLine;

typedef struct Demo {
	char *path;      /* as given, for messages */
	int n;           /* entries (the script's non-comment lines) */
	DemoLine *line;
} Demo;

/*
 * Parse a script (at most DEMO_MAX_LINES lines). Returns a heap Demo (demo_free), or NULL with *err
 * ("demo.txt:4: wait: expected seconds from 0 to 600, got \"x\"", or
 * "demo.txt:7: pause takes no argument"). Bytes that are not printable
 * are kept: cmd_run() escapes what it echoes.
 */
Demo *demo_parse(const char *path, const char *buf, size_t len, char **err);
/* Read and parse a file (at most DEMO_MAX_BYTES). */
Demo *demo_load(const char *path, char **err);
void demo_free(Demo *d);
/*
 * `source` inside a playing demo: sub's entries are moved into d before
 * entry `at` (each remembering sub's path, or the script it came from), and
 * sub is left empty (demo_free it). -1 with *err when d would hold more than
 * DEMO_MAX_LINES entries (a script that sources itself stops there), or out
 * of memory; d is then unchanged.
 */
int demo_splice(Demo *d, int at, Demo *sub, char **err);

#endif
