/* record.c: asciicast v2 recordings of the terminal (record.h), through a pseudo-terminal. */
#include "out/record.h"
#include "base/fileio.h"
#include "base/strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

struct Recorder {
	FileOut file;              /* the recording: a temporary file beside PATH until record_close */
	FILE *f;                   /* file.f */
	pthread_mutex_t lock;      /* f, carry, last: the relay thread and the main thread write */
	struct timespec t0;
	double last;               /* the time of the last event (times never go back) */
	int width, height;
	long long stamp;           /* the header's timestamp */
	double idle;               /* the header's idle_time_limit (0: none) */
	int quiet;                 /* the relay copies to the terminal only (record_relay_quiet) */
	unsigned char carry[4];    /* the start of a character the last write cut */
	size_t ncarry;

	/* The pseudo-terminal (record_tty_*). */
	int real, master, slave;   /* -1 when not in use */
	FILE *out;                 /* the slave, for newterm */
	int stop[2];               /* the main thread asks the relay to drain and end */
	pthread_t thread;
	int thread_on;
	struct termios orig, applied;
	int have_orig, have_applied;
	struct sigaction old_winch, old_tstp;
	int winch_on, tstp_on;
};

/* ------------------------------------------------------------ JSON */

/*
 * The length of the UTF-8 character at p[0..n): 1-4 when valid, 0 when the
 * bytes are not UTF-8 (overlong, surrogate, beyond U+10FFFF, stray byte),
 * -1 when they are the valid start of a character cut short by the end.
 */
static int
utf8_len(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	int len;
	unsigned min, cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2; min = 0x80; cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3; min = 0x800; cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4; min = 0x10000; cp = c & 0x07;
	} else {
		return 0;
	}
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return -1;
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
		/* Reject early what can only end badly, so a cut sequence is never "valid so far" wrongly. */
		if (i == 1 && ((len == 3 && cp < 0x20) || (len == 3 && cp >= 0x360 && cp <= 0x37f) ||
		               (len == 4 && (cp < 0x10 || cp > 0x10f))))
			return 0;
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Bytes as the inside of a JSON string; invalid UTF-8 → U+FFFD. The cut end of p is left to the caller. */
static size_t
rec_json_bytes(FILE *f, const unsigned char *p, size_t n, int final)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = p[i];
		int len = utf8_len(p + i, n - i);

		if (len < 0 && !final)
			break; /* the rest of this character comes with the next write */
		if (len <= 0) {
			fputs("\xef\xbf\xbd", f);
			i++;
			continue;
		}
		if (len > 1) {
			fwrite(p + i, 1, (size_t)len, f);
		} else if (c == '"' || c == '\\') {
			putc('\\', f);
			putc((int)c, f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\r') {
			fputs("\\r", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
		} else {
			putc((int)c, f);
		}
		i += (size_t)len;
	}
	return i;
}

static void
rec_json_string(FILE *f, const char *s)
{
	putc('"', f);
	rec_json_bytes(f, (const unsigned char *)s, strlen(s), 1);
	putc('"', f);
}

/* Seconds since the start, never less than the last event's. Called with the lock held. */
static double
rec_time(Recorder *r)
{
	struct timespec ts;
	double t;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t = (double)(ts.tv_sec - r->t0.tv_sec) + (double)(ts.tv_nsec - r->t0.tv_nsec) / 1e9;
	if (t < r->last)
		t = r->last;
	r->last = t;
	return t;
}

/* ------------------------------------------------------------ the file */

/*
 * The header line, always REC_HEADER_BYTES long (blanks before the newline,
 * which JSON allows) so that record_set_title can write it again in place
 * once the recording knows which lesson it showed. A title too long for it
 * is cut at a character's start.
 */
#define REC_HEADER_BYTES 1024

/* The header with the title cut to at most max bytes (at a character's start), in m. */
static void
rec_header_in(FILE *m, const Recorder *r, const char *title, size_t max)
{
	const char *term = getenv("TERM"), *shell = getenv("SHELL");
	size_t n = strlen(title);
	char *cut;

	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)title[n] & 0xc0) == 0x80)
			n--;
	}
	cut = strndup(title, n);
	fprintf(m, "{\"version\": 2, \"width\": %d, \"height\": %d, \"timestamp\": %lld, ", r->width, r->height,
	        r->stamp);
	if (r->idle > 0)
		fprintf(m, "\"idle_time_limit\": %.3f, ", r->idle);
	fputs("\"env\": {\"TERM\": ", m);
	rec_json_string(m, term ? term : "");
	fputs(", \"SHELL\": ", m);
	rec_json_string(m, shell ? shell : "");
	fputs("}, \"title\": ", m);
	rec_json_string(m, cut ? cut : "");
	fputs("}", m);
	free(cut);
}

/*
 * The header line, always REC_HEADER_BYTES long (blanks before the newline,
 * which JSON allows), so that record_set_title can write it again in place
 * once the recording knows which lesson it showed. A title too long for it
 * is cut at a character's start. Returns what fwrite wrote.
 */
#define REC_HEADER_BYTES 1024

static size_t
rec_header(Recorder *r, const char *title)
{
	char buf[REC_HEADER_BYTES];
	size_t max = REC_HEADER_BYTES, n = 0;

	for (;;) {
		FILE *m = fmemopen(buf, sizeof buf, "w");
		if (m == NULL)
			return 0;
		rec_header_in(m, r, title ? title : "attnviz", max);
		long at = ftell(m);
		int full = ferror(m) || at < 0 || (size_t)at >= REC_HEADER_BYTES - 1;
		fclose(m);
		if (!full) {
			n = (size_t)at;
			break;
		}
		if (max == 0)
			return 0;
		max /= 2; /* the title escapes to more than fits: a shorter one */
	}
	memset(buf + n, ' ', REC_HEADER_BYTES - 1 - n);
	buf[REC_HEADER_BYTES - 1] = '\n';
	return fwrite(buf, 1, REC_HEADER_BYTES, r->f);
}

Recorder *
record_open(const char *path, int width, int height, const char *title, double idle_limit, char **err)
{
	Recorder *r = calloc(1, sizeof *r);

	*err = NULL;
	if (r == NULL) {
		*err = str_printf("out of memory");
		return NULL;
	}
	r->real = r->master = r->slave = -1;
	r->stop[0] = r->stop[1] = -1;
	if (fileio_begin(&r->file, path, FILEIO_KEEP_MODE, 0, err) != 0) {
		free(r);
		return NULL;
	}
	r->f = r->file.f;
	setvbuf(r->f, NULL, _IOFBF, 1 << 16);
	pthread_mutex_init(&r->lock, NULL);
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	r->width = width;
	r->height = height;
	r->stamp = (long long)time(NULL);
	r->idle = idle_limit > 0 ? idle_limit : 0;
	if (rec_header(r, title) != REC_HEADER_BYTES)
		r->file.error = errno ? errno : EIO;
	if (r->file.error != 0 || fflush(r->f) != 0) {
		if (r->file.error == 0)
			r->file.error = errno;
		fileio_commit(&r->file, err); /* fails with that error, removes the temporary file */
		pthread_mutex_destroy(&r->lock);
		free(r);
		return NULL;
	}
	return r;
}

/* An output event at time t (seconds); the lock held. */
static void
rec_output_at(Recorder *r, double t, const char *buf, size_t len)
{
	unsigned char tmp[4 + 4096];

	fprintf(r->f, "[%.6f, \"o\", \"", t);
	while (len > 0 || r->ncarry > 0) {
		/* The carried bytes, then as much of buf as fits in tmp. */
		size_t n = r->ncarry, take = len < sizeof tmp - n ? len : sizeof tmp - n, used;
		memcpy(tmp, r->carry, n);
		memcpy(tmp + n, buf, take);
		n += take;
		buf += take;
		len -= take;
		used = rec_json_bytes(r->f, tmp, n, 0);
		r->ncarry = n - used;
		memcpy(r->carry, tmp + used, r->ncarry);
		if (len == 0)
			break;
	}
	fputs("\"]\n", r->f);
}

void
record_output(Recorder *r, const char *buf, size_t len)
{
	if (r == NULL || len == 0)
		return;
	pthread_mutex_lock(&r->lock);
	rec_output_at(r, rec_time(r), buf, len);
	pthread_mutex_unlock(&r->lock);
}

void
record_output_at(Recorder *r, double t, const char *buf, size_t len)
{
	if (r == NULL || len == 0)
		return;
	pthread_mutex_lock(&r->lock);
	if (t < r->last)
		t = r->last;
	r->last = t;
	rec_output_at(r, t, buf, len);
	pthread_mutex_unlock(&r->lock);
}

void
record_relay_quiet(Recorder *r)
{
	if (r != NULL)
		r->quiet = 1;
}

void
record_set_title(Recorder *r, const char *title)
{
	long at;

	if (r == NULL)
		return;
	pthread_mutex_lock(&r->lock);
	at = ftell(r->f);
	if (at < 0 || fseek(r->f, 0, SEEK_SET) != 0 || rec_header(r, title) != REC_HEADER_BYTES ||
	    fseek(r->f, at, SEEK_SET) != 0) {
		if (r->file.error == 0)
			r->file.error = errno ? errno : EIO;
	}
	pthread_mutex_unlock(&r->lock);
}

void
record_resize(Recorder *r, int width, int height)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->lock);
	fprintf(r->f, "[%.6f, \"r\", \"%dx%d\"]\n", rec_time(r), width, height);
	pthread_mutex_unlock(&r->lock);
}

void
record_flush(Recorder *r)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&r->lock);
	if (fflush(r->f) != 0 && r->file.error == 0)
		r->file.error = errno ? errno : EIO;
	pthread_mutex_unlock(&r->lock);
}

int
record_close(Recorder *r, char **err)
{
	int rc;

	*err = NULL;
	if (r == NULL)
		return 0;
	record_tty_stop(r);
	if (r->ncarry > 0) {
		/* A character cut at the very end: what is left is not UTF-8. */
		fprintf(r->f, "[%.6f, \"o\", \"", rec_time(r));
		rec_json_bytes(r->f, r->carry, r->ncarry, 1);
		fputs("\"]\n", r->f);
	}
	rc = fileio_commit(&r->file, err);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return rc;
}

void
record_abort(Recorder *r)
{
	if (r == NULL)
		return;
	record_tty_stop(r);
	fileio_abort(&r->file);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* ------------------------------------------------------------ the pseudo-terminal */

void
record_tty_size(int fd, int *width, int *height)
{
	struct winsize ws;

	*width = 80;
	*height = 24;
	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
		*width = ws.ws_col;
		*height = ws.ws_row;
	}
}

static int
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The relay: master → real terminal + recording, until asked to stop and nothing more comes. */
static void *
rec_relay(void *arg)
{
	Recorder *r = arg;
	char buf[8192];
	int draining = 0;

	for (;;) {
		struct pollfd pf[2] = { { r->master, POLLIN, 0 }, { r->stop[0], POLLIN, 0 } };
		int n = poll(pf, draining ? 1 : 2, draining ? 50 : -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* drained (or poll failed) */
		if (!draining && (pf[1].revents & POLLIN))
			draining = 1;
		if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t k = read(r->master, buf, sizeof buf);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break; /* EIO: the slave is closed */
			write_all(r->real, buf, (size_t)k);
			if (!r->quiet)
				record_output(r, buf, (size_t)k);
		}
	}
	return NULL;
}

int
record_tty_start(Recorder *r, int tty_fd, FILE **out, char **err)
{
	struct winsize ws;
	const char *name;
	sigset_t all, old;

	*err = NULL;
	*out = NULL;
	r->real = tty_fd;
	if (tcgetattr(tty_fd, &r->orig) != 0) {
		*err = str_printf("--record: the output is not a terminal");
		return -1;
	}
	r->have_orig = 1;
	if ((r->master = posix_openpt(O_RDWR | O_NOCTTY)) < 0 || grantpt(r->master) != 0 || unlockpt(r->master) != 0 ||
	    (name = ptsname(r->master)) == NULL || (r->slave = open(name, O_RDWR | O_NOCTTY)) < 0) {
		*err = str_printf("--record: cannot open a pseudo-terminal: %s", strerror(errno));
		goto fail;
	}
	fcntl(r->master, F_SETFD, FD_CLOEXEC);
	fcntl(r->slave, F_SETFD, FD_CLOEXEC);
	tcsetattr(r->slave, TCSANOW, &r->orig);
	if (ioctl(tty_fd, TIOCGWINSZ, &ws) == 0)
		ioctl(r->slave, TIOCSWINSZ, &ws);
	if (pipe(r->stop) != 0 || (r->out = fdopen(r->slave, "w")) == NULL) {
		*err = str_printf("--record: %s", strerror(errno));
		goto fail;
	}
	setvbuf(r->out, NULL, _IONBF, 0);
	/* Signals are for the main thread (its wgetch must see them). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&r->thread, NULL, rec_relay, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0) {
		*err = str_printf("--record: cannot start a thread: %s", strerror(e));
		goto fail;
	}
	r->thread_on = 1;
	/* Stopped with the terminal in raw mode, the shell would be unusable: no Ctrl-Z while recording. */
	struct sigaction ign;
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	if (sigaction(SIGTSTP, &ign, &r->old_tstp) == 0)
		r->tstp_on = 1;
	*out = r->out;
	return 0;
fail:
	if (r->out != NULL) {
		fclose(r->out);
		r->out = NULL;
		r->slave = -1;
	}
	if (r->slave >= 0)
		close(r->slave);
	if (r->master >= 0)
		close(r->master);
	for (int i = 0; i < 2; i++)
		if (r->stop[i] >= 0)
			close(r->stop[i]);
	r->slave = r->master = r->stop[0] = r->stop[1] = -1;
	return -1;
}

/* SIGWINCH: resize the slave to the real terminal, then let ncurses' handler run. */
static volatile int rec_sig_real = -1, rec_sig_slave = -1;
static struct sigaction rec_sig_chain;

static void
rec_on_winch(int sig)
{
	int saved = errno;
	struct winsize ws;

	if (rec_sig_real >= 0 && ioctl(rec_sig_real, TIOCGWINSZ, &ws) == 0)
		ioctl(rec_sig_slave, TIOCSWINSZ, &ws);
	if (!(rec_sig_chain.sa_flags & SA_SIGINFO) && rec_sig_chain.sa_handler != SIG_DFL &&
	    rec_sig_chain.sa_handler != SIG_IGN)
		rec_sig_chain.sa_handler(sig);
	errno = saved;
}

void
record_tty_signals(Recorder *r)
{
	struct sigaction sa;

	if (r == NULL || r->slave < 0)
		return;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = rec_on_winch;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGWINCH, NULL, &r->old_winch) != 0)
		return;
	rec_sig_chain = r->old_winch;
	sa.sa_flags = r->old_winch.sa_flags & ~SA_SIGINFO;
	rec_sig_real = r->real;
	rec_sig_slave = r->slave;
	if (sigaction(SIGWINCH, &sa, NULL) == 0)
		r->winch_on = 1;
}

void
record_tty_sync(Recorder *r)
{
	struct termios t;

	if (r == NULL)
		return;
	if (r->slave >= 0 && r->have_orig && tcgetattr(r->slave, &t) == 0 &&
	    !(r->have_applied && memcmp(&t, &r->applied, sizeof t) == 0)) {
		/* Input and line modes as ncurses wants them; the output was processed by the slave already. */
		struct termios real = r->orig;
		real.c_iflag = t.c_iflag;
		real.c_lflag = t.c_lflag;
		memcpy(real.c_cc, t.c_cc, sizeof real.c_cc);
		real.c_oflag &= ~(tcflag_t)OPOST;
		tcsetattr(r->real, TCSADRAIN, &real);
		r->applied = t;
		r->have_applied = 1;
	}
	record_flush(r);
}

void
record_tty_stop(Recorder *r)
{
	if (r == NULL)
		return;
	if (r->thread_on) {
		char c = 'q';
		while (write(r->stop[1], &c, 1) < 0 && errno == EINTR)
			;
		pthread_join(r->thread, NULL);
		r->thread_on = 0;
	}
	if (r->winch_on) {
		rec_sig_real = rec_sig_slave = -1;
		sigaction(SIGWINCH, &r->old_winch, NULL);
		r->winch_on = 0;
	}
	if (r->tstp_on) {
		sigaction(SIGTSTP, &r->old_tstp, NULL);
		r->tstp_on = 0;
	}
	if (r->out != NULL) {
		fclose(r->out); /* closes the slave */
		r->out = NULL;
		r->slave = -1;
	}
	if (r->master >= 0)
		close(r->master);
	for (int i = 0; i < 2; i++)
		if (r->stop[i] >= 0)
			close(r->stop[i]);
	r->master = r->stop[0] = r->stop[1] = -1;
	if (r->have_orig) {
		tcsetattr(r->real, TCSADRAIN, &r->orig);
		r->have_orig = 0;
	}
}
