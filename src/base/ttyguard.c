/* ttyguard.c: the terminal put back when the full-screen view dies of a signal. */
#include "base/ttyguard.h"

#include <signal.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <curses.h>
#include <term.h>

/* The first NFAULT are faults; the rest end the program by default and are guarded only when nobody handles them. */
static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS, SIGTRAP, SIGXCPU,
	                             SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGVTALRM, SIGPROF, SIGXFSZ };
#define NFAULT 8
#define NFATAL ((int)(sizeof fatal_signals / sizeof fatal_signals[0]))

/* xterm's mouse modes off (X10, button, any-motion, SGR): ncurses turns them on for mousemask */
#define MOUSE_OFF "\033[?1000l\033[?1002l\033[?1003l\033[?1006l"

static struct termios saved;
static int saved_ok, tty = -1, out = -1, armed;
static char leave[256];   /* rmcup, cnorm, sgr0, rmkx, the mouse off: what endwin() would send */
static size_t leave_len;
static struct sigaction previous[NFATAL], previous_cont;
static int installed[NFATAL];
static volatile sig_atomic_t continued;

void ttyguard_save(int tty_fd, int out_fd)
{
	tty = tty_fd;
	out = out_fd;
	saved_ok = tcgetattr(tty_fd, &saved) == 0;
}

/*
 * Async-signal-safe only: tcsetattr, write, sigaction, raise. A fault the
 * kernel raised (si_code > 0: a bad address, a bad instruction) happens again
 * when the handler returns, now to the previous handler, with its true
 * address for a sanitizer or a core dump; a signal that was sent (kill,
 * abort) is sent again.
 */
static void on_fatal(int sig, siginfo_t *info, void *context)
{
	int i;
	(void)context;

	if (saved_ok)
		tcsetattr(tty, TCSANOW, &saved);
	if (leave_len > 0 && write(out, leave, leave_len) < 0)
		leave_len = 0;
	for (i = 0; i < NFATAL; i++)
		if (fatal_signals[i] == sig && installed[i])
			sigaction(sig, &previous[i], NULL);
	if (info == NULL || info->si_code <= 0 ||
	    (sig != SIGSEGV && sig != SIGBUS && sig != SIGFPE && sig != SIGILL))
		raise(sig);
}

static void on_cont(int sig)
{
	(void)sig;
	continued = 1;
}

int ttyguard_continued(void)
{
	const int c = continued;
	continued = 0;
	return c;
}

static void add_string(const char *s)
{
	size_t n = strlen(s);

	if (leave_len + n < sizeof leave) {
		memcpy(leave + leave_len, s, n);
		leave_len += n;
	}
}

static void add_cap(const char *name)
{
	char *s = tigetstr(name);

	if (s != NULL && s != (char *)-1)
		add_string(s);
}

void ttyguard_arm(void)
{
	struct sigaction sa;
	int i;

	if (armed)
		return;
	leave_len = 0;
	add_cap("sgr0");
	add_cap("cnorm");
	add_cap("rmkx");
	add_cap("rmcup");
	{
		char *kmous = tigetstr("kmous"); /* a terminal that reports the mouse xterm's way */
		if (kmous != NULL && kmous != (char *)-1)
			add_string(MOUSE_OFF);
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fatal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	for (i = 0; i < NFATAL; i++) {
		installed[i] = 0;
		if (sigaction(fatal_signals[i], NULL, &previous[i]) != 0)
			continue;
		/* PIPE, USR1, ALRM…: only when they would end the program (an ignored SIGPIPE stays ignored) */
		if (i >= NFAULT && (previous[i].sa_flags & SA_SIGINFO || previous[i].sa_handler != SIG_DFL))
			continue;
		installed[i] = sigaction(fatal_signals[i], &sa, NULL) == 0;
	}
	/* SIGCONT after a SIGSTOP from outside: the view puts its terminal modes back (ttyguard_continued) */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_cont;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: the view's wait for a key returns */
	continued = 0;
	sigaction(SIGCONT, &sa, &previous_cont);
	armed = 1;
}

void ttyguard_disarm(void)
{
	int i;

	if (!armed)
		return;
	for (i = 0; i < NFATAL; i++)
		if (installed[i])
			sigaction(fatal_signals[i], &previous[i], NULL);
	sigaction(SIGCONT, &previous_cont, NULL);
	armed = 0;
}

/* ------------------------------------------------------------ work that can be stopped */

static volatile sig_atomic_t stop_sig, working;
static int work_depth, work_handler;
static struct sigaction previous_int;

int ttyguard_note_stop(int sig)
{
	if (!working)
		return 0;
	stop_sig = sig;
	return 1;
}

static void on_stop(int sig)
{
	(void)ttyguard_note_stop(sig);
}

void ttyguard_work_begin(void)
{
	struct sigaction sa;

	if (work_depth++ > 0)
		return;
	stop_sig = 0;
	working = 1;
	work_handler = 0;
	/* only where SIGINT would end the program: a handler of the caller's own stays */
	if (sigaction(SIGINT, NULL, &previous_int) != 0 || (previous_int.sa_flags & SA_SIGINFO) ||
	    previous_int.sa_handler != SIG_DFL)
		return;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	work_handler = sigaction(SIGINT, &sa, NULL) == 0;
}

void ttyguard_work_end(void)
{
	if (work_depth == 0 || --work_depth > 0)
		return;
	working = 0;
	if (work_handler)
		sigaction(SIGINT, &previous_int, NULL);
	work_handler = 0;
}

int ttyguard_stop_pending(void)
{
	return stop_sig;
}

void ttyguard_stop_heeded(void)
{
	stop_sig = 0;
}
