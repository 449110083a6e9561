/* cmd.h: the one command table behind the TUI's `:` line, the plain REPL and demo scripts. */
#ifndef ATTNVIZ_CMD_H
#define ATTNVIZ_CMD_H

#include "app/session.h"

/* What kind of argument a command takes, for completion. */
typedef enum CmdArg {
	ARG_NONE, ARG_FILE, ARG_LESSON, ARG_STAGE, ARG_MATRIX, ARG_COMMAND, ARG_WORDS
} CmdArg;

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

typedef int (*CmdExec)(Session *s, int argc, char **argv, CmdOut *out);

#define CMD_MANY 255 /* max_args: any number of words */

typedef struct CmdEntry {
	const char *name;
	const char *alias;   /* another exact name, or NULL */
	CmdArg arg;          /* for completion of the first argument */
	int min_args;        /* how many words may follow the name (else cmd_run says "usage: …") */
	int max_args;        /* CMD_MANY: no limit */
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

#endif
