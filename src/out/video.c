/* video.c: --render's frames as a GIF or an MP4 through rsvg-convert and ffmpeg (render.h). */
#include "out/render.h"
#include "base/fileio.h"
#include "base/i18n.h"
#include "base/strbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* What a video needs, and the Debian package each comes in. */
static const struct {
	const char *program, *package;
} video_tools[] = {
	{ "rsvg-convert", "librsvg2-bin" },
	{ "ffmpeg", "ffmpeg" },
};

int
render_is_video(const char *path)
{
	const char *dot = strrchr(path, '.');
	return dot != NULL && (strcmp(dot, ".gif") == 0 || strcmp(dot, ".mp4") == 0);
}

/* 1 when an executable file called name is in one of PATH's folders. */
static int
on_path(const char *name)
{
	const char *path = getenv("PATH");
	int found = 0;

	if (path == NULL || *path == '\0')
		return 0;
	for (const char *p = path; !found;) {
		const char *e = strchr(p, ':');
		size_t n = e != NULL ? (size_t)(e - p) : strlen(p);
		char *f = str_printf("%.*s/%s", (int)n, n > 0 ? p : ".", name);
		struct stat st;
		found = f != NULL && stat(f, &st) == 0 && S_ISREG(st.st_mode) && access(f, X_OK) == 0;
		free(f);
		if (e == NULL)
			break;
		p = e + 1;
	}
	return found;
}

char *
render_video_missing(const char *path)
{
	StrBuf names = { 0 }, pkgs = { 0 };
	int missing = 0;
	char *m;

	const char *dot = strrchr(path, '.');
	const size_t ntools = dot != NULL && strcmp(dot, ".png") == 0 ? 1 : sizeof video_tools / sizeof video_tools[0];

	for (size_t i = 0; i < ntools; i++) /* a PNG needs rsvg-convert alone */
		if (!on_path(video_tools[i].program)) {
			/* TRANSLATORS: between two program names */
			strbuf_printf(&names, "%s%s", missing ? _(" and ") : "", video_tools[i].program);
			strbuf_printf(&pkgs, " %s", video_tools[i].package);
			missing++;
		}
	if (missing == 0 || names.oom || pkgs.oom) {
		free(names.s);
		free(pkgs.s);
		return missing == 0 ? NULL : str_printf("out of memory");
	}
	/* TRANSLATORS: the file asked for, one or two program names, their Debian packages (each after a blank) */
	m = str_printf(_("%s needs %s, not found on PATH; on Debian or Ubuntu: apt-get install%s "
	                 "(nothing written)"),
	               path, names.s, pkgs.s);
	free(names.s);
	free(pkgs.s);
	return m;
}

/*
 * INT, TERM and HUP while a video is made: noted here (the handlers are ours
 * for the while), passed on to the running tool, and the work stops with
 * nothing written; render_write_video then raises the signal again for the
 * handler that was there before (the view's: exit 128 + the signal).
 */
static const int passed_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define NPASSED ((int)(sizeof passed_signals / sizeof passed_signals[0]))
static volatile sig_atomic_t video_signal;

static void
on_signal(int sig)
{
	video_signal = sig;
}

static char *
stopped(void)
{
	/* TRANSLATORS: a signal's number; the video is not made */
	return str_printf(_("stopped by signal %d: nothing written"), (int)video_signal);
}

/* Run argv (found on PATH) with no input and its output discarded; its errors go to our stderr. 0, or -1 with *err. */
static int
run(char *const argv[], char **err)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, rc, passed = 0;

	if (video_signal) {
		*err = stopped();
		return -1;
	}
	if (posix_spawn_file_actions_init(&fa) != 0) {
		*err = str_printf("out of memory");
		return -1;
	}
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		*err = str_printf(_("cannot run %s: %s"), argv[0], strerror(rc));
		return -1;
	}
	for (;;) {
		if (video_signal && !passed) {
			kill(pid, video_signal); /* passed on; then waited for */
			passed = 1;
		}
		if (waitpid(pid, &status, 0) >= 0)
			break;
		if (errno != EINTR) {
			*err = str_printf(_("cannot run %s: %s"), argv[0], strerror(errno));
			return -1;
		}
	}
	if (video_signal) {
		*err = stopped();
		return -1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		*err = str_printf(_("%s failed (exit status %d)"), argv[0], WEXITSTATUS(status));
	else
		*err = str_printf(_("%s failed (signal %d)"), argv[0], WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return -1;
}

/* Remove the temporary folder and what is in it (only files of ours: no folders inside). */
static void
remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d != NULL && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *f = str_printf("%s/%s", dir, e->d_name);
		if (f != NULL)
			unlink(f);
		free(f);
	}
	if (d != NULL)
		closedir(d);
	rmdir(dir);
}

/* Copy the file from into path (fileio: replaced whole or left as it was). 0, or -1 with *err. */
static int
copy_into(const char *from, const char *path, char **err)
{
	FILE *in = fopen(from, "rb");
	FileOut o;
	char buf[65536];
	size_t n;

	if (in == NULL) {
		*err = str_printf(_("cannot read %s: %s"), from, strerror(errno));
		return -1;
	}
	if (fileio_begin(&o, path, FILEIO_KEEP_MODE, 0, err) != 0) {
		fclose(in);
		return -1;
	}
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		if (fwrite(buf, 1, n, o.f) != n && o.error == 0)
			o.error = errno ? errno : EIO;
	if (ferror(in) && o.error == 0)
		o.error = EIO;
	fclose(in);
	return fileio_commit(&o, err);
}

/* The frames as PNG files in dir, and the concat demuxer's list of them with each one's duration. */
static int
write_frames(const Render *r, const char *dir, const char *list, double zoom, char **err)
{
	StrBuf l = { 0 };
	char z[32];
	int rc = 0;

	snprintf(z, sizeof z, "--zoom=%g", zoom > 0 ? zoom : 1.0);
	strbuf_puts(&l, "ffconcat version 1.0\n");
	for (int i = 0; i < render_count(r) && rc == 0; i++) {
		char *svg = str_printf("%s/f%06d.svg", dir, i), *png = str_printf("%s/f%06d.png", dir, i);
		long long start, end;
		render_span(r, i, &start, &end);
		if (svg == NULL || png == NULL) {
			*err = str_printf("out of memory");
			rc = -1;
		} else if ((rc = render_write_frame_svg(r, i, svg, err)) == 0) {
			char *argv[] = { "rsvg-convert", "--format=png", z, "-o", png, svg, NULL };
			rc = run(argv, err);
			unlink(svg);
		}
		strbuf_printf(&l, "file 'f%06d.png'\nduration %.3f\n", i, (double)(end - start) / 1000);
		free(svg);
		free(png);
	}
	/* the concat demuxer holds the last file for its duration only when it is named once more */
	if (render_count(r) > 0)
		strbuf_printf(&l, "file 'f%06d.png'\n", render_count(r) - 1);
	if (rc == 0 && l.oom) {
		*err = str_printf("out of memory");
		rc = -1;
	}
	if (rc == 0)
		rc = fileio_write_atomic(list, l.s, l.len, err);
	free(l.s);
	return rc;
}

int
render_write_video(const Render *r, const char *path, double zoom, char **err)
{
	const char *tmp = getenv("TMPDIR"), *dot = strrchr(path, '.');
	const int gif = dot != NULL && strcmp(dot, ".gif") == 0;
	char *dir = str_printf("%s/attnviz-render.XXXXXX", tmp != NULL && *tmp == '/' ? tmp : "/tmp");
	char *list = NULL, *out = NULL;
	struct sigaction sa, before[NPASSED];
	int rc = -1, sig;

	*err = NULL;
	if (dir == NULL || render_count(r) == 0) {
		*err = str_printf(dir == NULL ? "out of memory" : _("nothing to write: no frames"));
		free(dir);
		return -1;
	}
	if (mkdtemp(dir) == NULL) { /* mode 0700: nobody else reads the frames or plants a file */
		*err = str_printf(_("cannot make a temporary folder %s: %s"), dir, strerror(errno));
		free(dir);
		return -1;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: waitpid returns, and the signal is passed on */
	video_signal = 0;
	for (int i = 0; i < NPASSED; i++)
		sigaction(passed_signals[i], &sa, &before[i]);
	list = str_printf("%s/frames.ffconcat", dir);
	out = str_printf("%s/out%s", dir, gif ? ".gif" : ".mp4");
	if (list == NULL || out == NULL)
		*err = str_printf("out of memory");
	else if (write_frames(r, dir, list, zoom, err) == 0) {
		/* GIF: a palette made from the frames themselves (the last frame named twice: its second showing
		 * lasts 10 ms, not the muxer's default second); MP4: H.264 in yuv420p, which needs even sides */
		char *gif_argv[] = { "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-f", "concat",
			             "-safe", "0", "-i", list, "-filter_complex",
			             "split[a][b];[a]palettegen=stats_mode=full[p];[b][p]paletteuse=dither=none",
			             "-fps_mode", "vfr", "-final_delay", "1", out, NULL };
		char *mp4_argv[] = { "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-f", "concat",
			             "-safe", "0", "-i", list, "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2,format=yuv420p",
			             "-c:v", "libx264", "-pix_fmt", "yuv420p", "-fps_mode", "vfr", "-movflags", "+faststart",
			             out, NULL };
		if (run(gif ? gif_argv : mp4_argv, err) == 0 && !video_signal)
			rc = copy_into(out, path, err);
	}
	remove_dir(dir);
	free(list);
	free(out);
	free(dir);
	for (int i = 0; i < NPASSED; i++)
		sigaction(passed_signals[i], &before[i], NULL);
	if ((sig = video_signal) != 0) {
		video_signal = 0;
		if (rc == 0) { /* it came as the file was copied: that copy is whole, but the work was stopped */
			unlink(path);
			rc = -1;
		}
		if (*err == NULL)
			*err = str_printf(_("stopped by signal %d: nothing written"), sig);
		raise(sig); /* to the handler before ours */
	}
	return rc;
}

int
render_write_png(const char *svg, size_t len, const char *path, double zoom, char **err)
{
	const char *tmp = getenv("TMPDIR");
	char *dir = str_printf("%s/attnviz-png.XXXXXX", tmp != NULL && *tmp == '/' ? tmp : "/tmp");
	char *in = NULL, *out = NULL, z[32];
	int rc = -1;

	*err = NULL;
	if (dir == NULL) {
		*err = str_printf("out of memory");
		return -1;
	}
	if (mkdtemp(dir) == NULL) { /* mode 0700, as a video's frames */
		*err = str_printf(_("cannot make a temporary folder %s: %s"), dir, strerror(errno));
		free(dir);
		return -1;
	}
	snprintf(z, sizeof z, "--zoom=%g", zoom > 0 ? zoom : 1.0);
	in = str_printf("%s/figure.svg", dir);
	out = str_printf("%s/figure.png", dir);
	if (in == NULL || out == NULL)
		*err = str_printf("out of memory");
	else if (fileio_write_atomic(in, svg, len, err) == 0) {
		char *argv[] = { "rsvg-convert", "--format=png", z, "-o", out, in, NULL };
		if (run(argv, err) == 0)
			rc = copy_into(out, path, err);
	}
	remove_dir(dir);
	free(in);
	free(out);
	free(dir);
	return rc;
}
