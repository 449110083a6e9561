/* record.h: --record — the screen as an asciicast v2 file (asciinema's format), no curses.
 *
 * The file: a header line
 *   {"version": 2, "width": W, "height": H, "timestamp": T, "idle_time_limit": S, "env": {"TERM": …, "SHELL": …},
 *    "title": …}
 * padded with blanks to 1024 bytes, so the title can be written again at the
 * end (record_set_title: the lesson the recording showed, not the one it began with),
 * then one event a line: [TIME, "o", DATA] for bytes written to the terminal,
 * [TIME, "r", "WxH"] for a resize; TIME is seconds since the start (monotonic
 * clock, never decreasing). DATA is a JSON string of the bytes as UTF-8: a
 * character split between two writes is kept whole, bytes that are not UTF-8
 * become U+FFFD, so the file is always valid JSON lines in UTF-8.
 *
 * The events stream to a hidden temporary file beside PATH, ".NAME.XXXXXX"
 * (fileio.h: an unpredictable name, never a link followed; flushed on every
 * record_flush), and record_close renames it over PATH: after a crash that
 * file holds the recording up to the last flush. A recording that never
 * starts (record_abort) leaves PATH as it was.
 *
 * How the TUI's bytes are caught (record_tty_*): ncurses writes to a file
 * descriptor, so it is given the slave of a pseudo-terminal with the real
 * terminal's size and modes; a thread copies what arrives at the master to
 * the real terminal and into the recording. The real terminal gets the modes
 * ncurses sets on the slave (record_tty_sync) and its own back at the end.
 * SIGWINCH resizes the slave before ncurses looks. Ctrl-Z is off while recording.
 */
#ifndef ATTNVIZ_RECORD_H
#define ATTNVIZ_RECORD_H

#include <stddef.h>
#include <stdio.h>

typedef struct Recorder Recorder;

/* --record's idle_time_limit (seconds): a longer silence plays back this long. */
#define RECORD_IDLE_LIMIT 3.0

/*
 * Start a recording of a width × height screen; idle_limit > 0 goes in the header as idle_time_limit (players
 * shorten any stillness longer than that). NULL with *err (heap string) when PATH cannot be written (fileio.h).
 */
Recorder *record_open(const char *path, int width, int height, const char *title, double idle_limit, char **err);
/* The header's title, written again in place (a title too long for the header is cut). */
void record_set_title(Recorder *r, const char *title);
/* Bytes written to the terminal (any thread), at the time now. */
void record_output(Recorder *r, const char *buf, size_t len);
/* Bytes written at t seconds from the start (a virtual clock: --render); never before the last event. */
void record_output_at(Recorder *r, double t, const char *buf, size_t len);
/* The terminal is now width × height. */
void record_resize(Recorder *r, int width, int height);
/* Write buffered events to the temporary file. */
void record_flush(Recorder *r);
/* Flush, close and rename the temporary file over PATH; frees r. Returns 0, or -1 with *err (PATH as it was). NULL r: 0. */
int record_close(Recorder *r, char **err);
/* Give up (the recording could not start): PATH stays as it was, the temporary file goes; frees r. */
void record_abort(Recorder *r);

/* The size of the terminal on fd (80 × 24 when it says nothing). */
void record_tty_size(int fd, int *width, int *height);
/*
 * Put a pseudo-terminal between the program and the terminal on tty_fd:
 * *out (for newterm's output) writes to its slave; what comes out is copied
 * to tty_fd and recorded. Call before newterm(). Returns 0, or -1 with *err.
 */
int record_tty_start(Recorder *r, int tty_fd, FILE **out, char **err);
/* After newterm(): catch SIGWINCH to resize the slave first (chains ncurses' handler). */
void record_tty_signals(Recorder *r);
/*
 * Before record_tty_start: what the program writes still reaches the terminal, but not the file — the caller
 * records the screen itself with record_output (--record-plain: whole rows, never the program's own escapes).
 */
void record_relay_quiet(Recorder *r);
/* Give the real terminal the modes ncurses set on the slave (cheap when nothing changed); flushes. */
void record_tty_sync(Recorder *r);
/* After endwin() and delscreen(): copy what is left, stop the thread, give the terminal its modes back. */
void record_tty_stop(Recorder *r);

#endif
