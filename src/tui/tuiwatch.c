/* tuiwatch.c: --watch — the lesson's file reloaded each time it is saved, the learner's step kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/i18n.h"
#include "tui/tuistate.h"

/*
 * Once a second (the loop's timeout is at most that), the file of the lesson
 * shown is looked at: a new modification time, size or inode (an editor that
 * saves by renaming) is a save. The lesson is reloaded with `reload` and the
 * learner's step with `step N`, as typed commands would: the view never
 * writes the model. A save that does not load leaves the last good lesson
 * where it was (session_load changes nothing when it fails) and its error on
 * the status line; the next save is tried again. A lesson without a file
 * (the built-in one) is not watched.
 */

#define WATCH_MS 1000

void
tui_watch_free(Tui *t)
{
	free(t->watch_path);
	t->watch_path = NULL;
}

/* 1 when the stamp changed (and keeps the new one); 0 when not; -1 when the file cannot be looked at. */
static int
watch_stamp(Tui *t, const char *path)
{
	struct stat st;
	long long sec, nsec;

	if (stat(path, &st) != 0)
		return -1;
	sec = (long long)st.st_mtim.tv_sec;
	nsec = (long long)st.st_mtim.tv_nsec;
	if (sec == t->watch_sec && nsec == t->watch_nsec && (long long)st.st_size == t->watch_size &&
	    (long long)st.st_ino == t->watch_ino)
		return 0;
	t->watch_sec = sec;
	t->watch_nsec = nsec;
	t->watch_size = (long long)st.st_size;
	t->watch_ino = (long long)st.st_ino;
	return 1;
}

void
tui_watch_tick(Tui *t)
{
	const char *src = t->s->source;
	char line[48];
	int step, changed;

	if (!t->opt.watch || src == NULL || t->mode == TUI_CMD || tui_now_ms() < t->watch_due)
		return;
	t->watch_due = tui_now_ms() + WATCH_MS;
	if (t->watch_path == NULL || strcmp(t->watch_path, src) != 0) {
		/* a lesson newly shown: what it is now is the baseline */
		free(t->watch_path);
		t->watch_path = strdup(src);
		watch_stamp(t, src);
		return;
	}
	changed = watch_stamp(t, t->watch_path);
	if (changed <= 0)
		return; /* unchanged, or gone for a moment (an editor between its rename and its write) */
	step = t->s->step;
	if (t->mode == TUI_POPUP)
		tui_popup_close(t);
	if (tui_run_line(t, "reload") != 0)
		return; /* the error is on the status line; the last good lesson stays */
	if (step >= t->s->nwalk)
		step = t->s->nwalk - 1;
	snprintf(line, sizeof line, "step %d", step + 1);
	tui_run_line(t, line);
	tui_msgf(t, 0, _("watch: reloaded, step %d/%d"), step + 1, t->s->nwalk);
	t->redraw |= R_ALL;
}
