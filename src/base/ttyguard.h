/* ttyguard.h: the terminal put back when the full-screen view dies of a signal.
 *
 * INT, TERM, HUP and QUIT are caught by the view, which leaves the way q
 * does. A signal it cannot carry on from (SEGV, BUS, FPE, ILL, ABRT, SYS,
 * TRAP, XCPU, and USR1, USR2, PIPE, ALRM, VTALRM, PROF, XFSZ when nothing
 * else handles or ignores them) ends the program: the guard first puts the
 * terminal's modes back as they were, leaves the alternate screen, turns the
 * mouse off and shows the cursor, using only what a signal handler may call,
 * then lets the signal do what it did before (a core dump, a sanitizer's
 * report). SIGCONT (after a SIGSTOP from outside, which nothing can catch)
 * is noted for the view, which puts its modes back: ttyguard_continued().
 */
#ifndef ATTNVIZ_TTYGUARD_H
#define ATTNVIZ_TTYGUARD_H

/*
 * Before curses changes anything: remember the modes of terminal fd and
 * where to write. After newterm(): ttyguard_arm() takes the terminal's own
 * strings for leaving full-screen mode and installs the handlers;
 * ttyguard_disarm() puts the previous handlers back (after endwin()).
 */
void ttyguard_save(int tty_fd, int out_fd);
void ttyguard_arm(void);
void ttyguard_disarm(void);

/* 1 once after a SIGCONT came (the terminal may be in the shell's modes now), else 0. */
int ttyguard_continued(void);

/*
 * Work that can be stopped (issue 27 §5): the engine's computations and
 * training run between ttyguard_work_begin() and ttyguard_work_end() (they
 * nest) and ask ttyguard_stop_pending() between their passes and steps. A
 * SIGINT while they run asks them to stop: when nothing else handles SIGINT
 * (the plain REPL, --dump), the outermost begin installs a handler for the
 * time of the work; a handler of its own (the full-screen view's) tells the
 * work with ttyguard_note_stop(), which a signal handler may call.
 */
void ttyguard_work_begin(void);
void ttyguard_work_end(void);
/* The signal that asked the work to stop (SIGINT, SIGTERM…), or 0. */
int ttyguard_stop_pending(void);
/*
 * The stop asked for was heeded (generate ends between tokens, keeping
 * them): the work that follows it (computing the tokens kept) runs.
 */
void ttyguard_stop_heeded(void);
/* From a signal handler: while work runs, ask it to stop and return 1; else 0. */
int ttyguard_note_stop(int sig);

#endif
