/* ttyguard.c: the terminal put back when the full-screen view dies of a signal. */
#include "base/ttyguard.h"

#include <signal.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <curses.h>
#include <term.h>

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS, SIGTRAP, SIGXCPU };
#define NFATAL ((int)(sizeof fatal_signals / sizeof fatal_signals[0]))

static struct termios saved;
static int saved_ok, tty = -1, out = -1, armed;
static char leave[256];   /* rmcup, cnorm, sgr0, rmkx: what endwin() would send */
static size_t leave_len;
static struct sigaction previous[NFATAL];

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
		if (fatal_signals[i] == sig)
			sigaction(sig, &previous[i], NULL);
	if (info == NULL || info->si_code <= 0 ||
	    (sig != SIGSEGV && sig != SIGBUS && sig != SIGFPE && sig != SIGILL))
		raise(sig);
}

static void add_cap(const char *name)
{
	char *s = tigetstr(name);
	size_t n;

	if (s == NULL || s == (char *)-1)
		return;
	n = strlen(s);
	if (leave_len + n < sizeof leave) {
		memcpy(leave + leave_len, s, n);
		leave_len += n;
	}
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
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fatal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	for (i = 0; i < NFATAL; i++)
		sigaction(fatal_signals[i], &sa, &previous[i]);
	armed = 1;
}

void ttyguard_disarm(void)
{
	int i;

	if (!armed)
		return;
	for (i = 0; i < NFATAL; i++)
		sigaction(fatal_signals[i], &previous[i], NULL);
	armed = 0;
}
