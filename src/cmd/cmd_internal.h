/* cmd_internal.h: what cmd.c, cmdargs.c and cmd_model.c share (nothing outside src/cmd/ includes it). */
#ifndef ATTNVIZ_CMD_INTERNAL_H
#define ATTNVIZ_CMD_INTERNAL_H

#include "cmd/cmd.h"

/* A message to out (its text escaped: errors keep their line breaks). */
void cmd_say(CmdOut *out, CmdMsg kind, const char *title, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* cmdargs.c: every word after the name read as its kind into a; 0, or -1 with the message. */
int cmd_parse_args(const Session *s, const CmdEntry *e, CmdArgv *a, CmdOut *out);
/* "NAME: expected N words, got M (usage: …)" for command e; returns -1. */
int cmd_count_error(CmdOut *out, const CmdEntry *e, int min, int max, int got);
/* A whole number in [lo, hi] for the word named name of command e; 0, or -1 with the message. */
int cmd_read_whole(const char *w, long lo, long hi, long *v, CmdOut *out, const CmdEntry *e, const char *name);
/* cmd_model.c: model DIR [TEXT], prompt TEXT, ids ID…, generate N (a real model's commands). */
int cmd_model(Session *s, const CmdArgv *a, CmdOut *out);
int cmd_prompt(Session *s, const CmdArgv *a, CmdOut *out);
int cmd_ids(Session *s, const CmdArgv *a, CmdOut *out);
int cmd_generate(Session *s, const CmdArgv *a, CmdOut *out);
int cmd_seed(Session *s, const CmdArgv *a, CmdOut *out);
int cmd_lens(Session *s, const CmdArgv *a, CmdOut *out);

#endif
