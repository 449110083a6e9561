/* cmd.h: the one command table behind the TUI's `:` line, the plain REPL and demo scripts. */
#ifndef ATTNVIZ_CMD_H
#define ATTNVIZ_CMD_H

#include "app/session.h"

#include <stdint.h>

/*
 * The kinds of argument a command takes. cmd_run reads every word of a line
 * as its kind, against the lesson shown, before the command runs: a word
 * that is not what its kind wants, or a wrong count of words, is refused
 * with one message, "WHAT: expected KIND, got WORD (usage: …)". Completion
 * offers each word's candidates by its kind.
 */
typedef enum CmdArg {
	ARG_NONE,    /* no argument here (the end of a kind list) */
	ARG_WORD,    /* any word: the command reads it (answer VALUE, export FORMAT, theme NAME) */
	ARG_FILE,    /* a file's path */
	ARG_LESSON,  /* a lesson's name, or a file's path */
	ARG_STAGE,   /* a stage of the lesson */
	ARG_MATRIX,  /* a matrix of the lesson shown ("stats" also takes its words: params, cache) */
	ARG_CELL,    /* a given matrix's cell: MATRIX[ROW][COL] (one word) or MATRIX ROW COL (three) */
	ARG_COMMAND, /* a command's name */
	ARG_STEP,    /* a step of the walk, from 1 */
	ARG_HEAD,    /* a head of the layer shown, from 0 */
	ARG_ROW,     /* a row of the matrix named before it (explain; the weights' for jacobian) */
	ARG_COL,     /* a column of the matrix named before it */
	ARG_WHOLE,   /* a whole number in the entry's range (lo, hi) */
	ARG_NUMBER,  /* a finite number */
	ARG_ONOFF,   /* on or off */
	ARG_SCALE,   /* on, off or a finite number */
	ARG_LANG,    /* en or zh */
	ARG_CHOICE   /* one of the entry's words (choices, separated by '|') */
} CmdArg;

#define CMD_MAX_ARGS 4 /* the most kinds an entry lists (ARG_NONE ends a shorter list; CMD_MANY words: the command reads the rest) */
#define CMD_MANY 255   /* max: any number of words */

/* What a command takes: how many words, and what each one is. */
typedef struct CmdArgs {
	int min, max;                      /* how many words may follow the name (CMD_MANY: no limit) */
	CmdArg kind[CMD_MAX_ARGS];         /* each word's kind, in order */
	const char *name[CMD_MAX_ARGS];    /* each one's name in messages ("row": "explain (row): …"); NULL: the command's */
	long lo, hi;                       /* ARG_WHOLE's range */
	const char *choices;               /* ARG_CHOICE's words: "causal|none|window|padding" */
} CmdArgs;

/*
 * Where a command's results go. The TUI shows messages in its status line and
 * text in a pop-up; the plain REPL prints them. Every callback may be NULL.
 */
typedef enum CmdMsg {
	MSG_INFO,   /* one short line: "loaded lessons/mask.json" */
	MSG_ERROR,  /* one short line, the command failed: "unknown stage: softmx" */
	MSG_TEXT    /* several lines (help, explain, lessons): title + body */
} CmdMsg;

typedef struct CmdOut {
	void *ctx;
	void (*message)(void *ctx, CmdMsg kind, const char *title, const char *text);
	/* `show MATRIX [HEAD]`: the TUI focuses the matrix, the REPL prints it. */
	void (*show)(void *ctx, AttnMatrix which, int head);
	/* Front-end commands (present, theme, play, source, …) the core does not know: 1 if handled. */
	int (*frontend)(void *ctx, const char *name, int argc, char **argv);
	int color;        /* 1: the front end draws ANSI colour in text */
	int utf8;         /* 1: the terminal shows UTF-8 (−∞, √, Σ); 0: ASCII only */
	int interactive;  /* 1: a person is typing (TUI or a terminal REPL) */
} CmdOut;

/*
 * A line's words read as their kinds (cmd_run fills it before the command
 * runs): v[i] is word argv[i + 1]'s value (an ARG_CELL written as three
 * words is one value; the words after it move up). n: how many values.
 */
typedef struct CmdVal {
	const char *word;  /* as typed */
	CmdArg kind;
	long whole;        /* ARG_STEP (from 1, as typed), ARG_HEAD, ARG_ROW, ARG_COL, ARG_WHOLE; ARG_ONOFF: 1 on; ARG_CHOICE, ARG_MATRIX's words: the index */
	double number;     /* ARG_NUMBER, ARG_SCALE's number */
	int matrix;        /* ARG_MATRIX, ARG_CELL: an AttnMatrix (-1: stats' params or cache) */
	int stage;         /* ARG_STAGE */
	int row, col;      /* ARG_CELL */
	ScaleKind scale;   /* ARG_SCALE */
} CmdVal;

typedef struct CmdArgv {
	const struct CmdEntry *entry; /* the command's entry (its name and usage, for messages) */
	int argc;          /* the words, argv[0] the command's name */
	char **argv;
	int n;
	CmdVal v[CMD_MAX_ARGS];
} CmdArgv;

typedef int (*CmdExec)(Session *s, const CmdArgv *a, CmdOut *out);

typedef struct CmdEntry {
	const char *name;
	const char *alias;   /* another exact name, or NULL */
	CmdArgs args;        /* what follows the name: checked by cmd_run before exec */
	const char *usage;   /* "goto STAGE" */
	const char *help;    /* one line */
	CmdExec exec;        /* NULL: handled by the front end through out->frontend */
} CmdEntry;

/* NULL-terminated, in the order `help` lists them. */
extern const CmdEntry cmd_table[];

/*
 * The entry for name: exact name or alias, else a unique prefix. NULL with
 * *err ("unknown command: x" / "ambiguous command: s, could be: set, show, skip").
 */
const CmdEntry *cmd_find(const char *name, char **err);

/*
 * Run one line ("goto softmax", ":set W_q[0][1] 0.5"; a leading ':' and
 * surrounding blanks are ignored, '#' starts a comment). Words may be quoted
 * with "…" or '…'. Returns 0 on success or an empty line, -1 when the command
 * failed (the error went to out->message).
 */
int cmd_run(Session *s, const char *line, CmdOut *out);

/* Split a line into words (heap array of heap strings); returns the count or -1. */
int cmd_split(const char *line, char ***argv);
void cmd_free_words(int argc, char **argv);

/* Candidates for completing `word` as argument kind `kind` (NULL-terminated heap array), or NULL. */
char **cmd_complete(const Session *s, CmdArg kind, const char *word);
/*
 * Completion of a whole command line (a line editor's callback): the word
 * starting at byte `start` of line, typed up to the cursor, is completed as
 * a command name when it is the first word, else as its command's argument
 * kind. *files is set when the word is a file name (a `load` path, or a
 * lesson no name matches) that an editor may complete from the file system.
 */
char **cmd_complete_line(const Session *s, const char *line, size_t start, const char *word, int *files);
/* A seed as typed (`seed S`, --seed S): a whole number from 0 to 2^64 − 1 in decimal, into *seed; 0, or -1. */
int cmd_parse_seed(const char *w, uint64_t *seed);

#endif
