/*
 * progress.c: the learner's way through the course, kept between runs
 * (progress.h). A small JSON file:
 *
 *   { "version": 1, "last": "mask",
 *     "lessons": { "mask": { "done": false, "step": 3, "steps": 8, "right": 1, "asked": 2,
 *                            "marks": ".r.w.o..", "reached": false } } }
 *
 * "marks" and "reached" came later: an entry without them is read with its
 * counts as they are (a later attempt's counts never go below them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/i18n.h"
#include "base/fileio.h"
#include "base/paths.h"
#include "app/progress.h"
#include "base/strbuf.h"
#include "base/text.h"

char *progress_default_path(void)
{
	return paths_state_file("progress.json");
}

void progress_free(Progress *p)
{
	free(p->path);
	free(p->lesson);
	memset(p, 0, sizeof *p);
}

const ProgressLesson *progress_find(const Progress *p, const char *name)
{
	for (int i = 0; i < p->n; i++)
		if (strcmp(p->lesson[i].name, name) == 0)
			return &p->lesson[i];
	return NULL;
}

/* The entry for name, added when new; NULL when out of memory or the name is too long. */
static ProgressLesson *progress_entry(Progress *p, const char *name)
{
	ProgressLesson *e = (ProgressLesson *)progress_find(p, name), *grown;

	if (e != NULL)
		return e;
	if (strlen(name) >= PROGRESS_NAME_MAX || name[0] == '\0')
		return NULL;
	grown = realloc(p->lesson, sizeof *grown * (size_t)(p->n + 1));
	if (grown == NULL)
		return NULL;
	p->lesson = grown;
	e = &p->lesson[p->n++];
	memset(e, 0, sizeof *e);
	snprintf(e->name, sizeof e->name, "%s", name);
	return e;
}

/* A whole number from 0 to max in obj[key], or -1. */
static int json_count(const cJSON *obj, const char *key, int max)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= max) || v->valuedouble != (int)v->valuedouble)
		return -1;
	return (int)v->valuedouble;
}

/* How good a question's mark is: a later attempt keeps the better one. */
static int mark_rank(char m)
{
	return m == 'r' ? 4 : m == 'w' ? 3 : m == 's' ? 2 : m == 'o' ? 1 : 0;
}

/* 1 when text is marks attnviz writes: one of .oswr a step. */
static int marks_valid(const char *text, int steps)
{
	const size_t len = strlen(text);

	if (len == 0)
		return 1;
	if ((int)len != steps || len >= PROGRESS_MARKS_MAX || strspn(text, ".oswr") != len)
		return 0;
	return 1;
}

/* e's marks with add's kept too (a question keeps its best); its counts from them; 0 when the lesson's steps differ. */
static int marks_merge(ProgressLesson *e, const char *add)
{
	const size_t len = strlen(add);
	int right = 0, asked = 0;

	if (len == 0 || len >= PROGRESS_MARKS_MAX)
		return 0;
	if (strlen(e->marks) != len) { /* new, or the lesson changed its steps: this attempt's marks */
		if (e->marks[0] != '\0')
			e->right = e->asked = 0;
		memcpy(e->marks, add, len + 1);
	} else
		for (size_t i = 0; i < len; i++)
			if (mark_rank(add[i]) > mark_rank(e->marks[i]))
				e->marks[i] = add[i];
	for (size_t i = 0; i < len; i++) {
		right += e->marks[i] == 'r';
		asked += mark_rank(e->marks[i]) >= 2;
	}
	/* an entry from before marks were kept: its counts are a floor */
	e->right = right > e->right ? right : e->right;
	e->asked = asked > e->asked ? asked : e->asked;
	if (e->asked < e->right)
		e->asked = e->right;
	return 1;
}

/* Done: the last step reached once, and no question left open. */
static int entry_done(const ProgressLesson *e)
{
	return e->reached && strchr(e->marks, 'o') == NULL;
}

/* Parse text into p; NULL, or what is wrong with it (a static string). */
static const char *progress_parse(Progress *p, const char *text, size_t len)
{
	cJSON *root = cJSON_ParseWithLength(text, len);
	const cJSON *last, *lessons, *l;
	const char *why = NULL;

	if (root == NULL)
		return "not JSON";
	last = cJSON_GetObjectItemCaseSensitive(root, "last");
	lessons = cJSON_GetObjectItemCaseSensitive(root, "lessons");
	if (!cJSON_IsObject(root) || json_count(root, "version", 1000) != 1)
		why = _("not a progress file of this version");
	else if (last != NULL && (!cJSON_IsString(last) || strlen(last->valuestring) >= PROGRESS_NAME_MAX))
		why = _("\"last\" is not a lesson name");
	else if (lessons != NULL && !cJSON_IsObject(lessons))
		why = _("\"lessons\" is not an object");
	const cJSON *each = lessons;
	if (why != NULL)
		each = NULL;
	cJSON_ArrayForEach(l, each)
	{
		const cJSON *done = cJSON_GetObjectItemCaseSensitive(l, "done");
		const cJSON *marks = cJSON_GetObjectItemCaseSensitive(l, "marks");
		const cJSON *reached = cJSON_GetObjectItemCaseSensitive(l, "reached");
		ProgressLesson *e;
		int step = json_count(l, "step", 1 << 20), steps = json_count(l, "steps", 1 << 20);
		int right = json_count(l, "right", 1 << 20), asked = json_count(l, "asked", 1 << 20);
		if (!cJSON_IsObject(l) || !cJSON_IsBool(done) || step < 0 || steps < 0 || right < 0 || asked < right ||
		    (marks != NULL && (!cJSON_IsString(marks) || !marks_valid(marks->valuestring, steps))) ||
		    (reached != NULL && !cJSON_IsBool(reached))) {
			why = _("a lesson's entry is not what attnviz writes");
			break;
		}
		if (progress_find(p, l->string) != NULL)
			continue;
		if ((e = progress_entry(p, l->string)) == NULL) {
			why = _("a lesson's name is too long");
			break;
		}
		e->done = cJSON_IsTrue(done);
		e->step = step;
		e->steps = steps;
		e->right = right;
		e->asked = asked;
		if (cJSON_IsString(marks))
			snprintf(e->marks, sizeof e->marks, "%s", marks->valuestring);
		e->reached = reached != NULL ? cJSON_IsTrue(reached) : e->done;
	}
	if (why == NULL && cJSON_IsString(last))
		snprintf(p->last, sizeof p->last, "%s", last->valuestring);
	cJSON_Delete(root);
	return why;
}

int progress_load(Progress *p, const char *path, char **warn)
{
	char *err = NULL, *text;
	size_t len;
	struct stat st;

	memset(p, 0, sizeof *p);
	*warn = NULL;
	if (path == NULL)
		return 0;
	if ((p->path = strdup(path)) == NULL)
		return -1;
	if (lstat(path, &st) != 0 && errno == ENOENT)
		return 0; /* a first run */
	text = fileio_read_all(path, PROGRESS_MAX_BYTES, &len, &err);
	const char *why = text != NULL ? progress_parse(p, text, len) : NULL;
	free(text);
	if (text != NULL && why == NULL)
		return 0;
	/* Damaged or unreadable: start afresh, and set the file aside so this is said once. */
	free(p->lesson);
	p->lesson = NULL;
	p->n = 0;
	p->last[0] = '\0';
	char *aside = str_printf("%s.damaged", path);
	char *shown = text_escape(path, "");
	int moved = aside != NULL && rename(path, aside) == 0;
	const int damaged = text != NULL || err == NULL;
	const char *what = why != NULL ? why : err != NULL ? err : _("out of memory");
	if (damaged)
		*warn = str_printf(moved ? _("progress file %s is damaged (%s); set aside as progress.json.damaged; starting afresh")
		                         : _("progress file %s is damaged (%s); starting afresh"),
		                   shown ? shown : "", what);
	else
		*warn = str_printf(moved ? _("progress file %s cannot be read (%s); set aside as progress.json.damaged; starting afresh")
		                         : _("progress file %s cannot be read (%s); starting afresh"),
		                   shown ? shown : "", what);
	free(shown);
	free(aside);
	free(err);
	return 0;
}

static int add_entry(cJSON *lessons, const ProgressLesson *e, int done)
{
	cJSON *l = cJSON_AddObjectToObject(lessons, e->name);
	return l != NULL && cJSON_AddBoolToObject(l, "done", done) != NULL &&
	       cJSON_AddNumberToObject(l, "step", e->step) != NULL && cJSON_AddNumberToObject(l, "steps", e->steps) != NULL &&
	       cJSON_AddNumberToObject(l, "right", e->right) != NULL && cJSON_AddNumberToObject(l, "asked", e->asked) != NULL &&
	       (e->marks[0] == '\0' || cJSON_AddStringToObject(l, "marks", e->marks) != NULL) &&
	       cJSON_AddBoolToObject(l, "reached", e->reached || done) != NULL;
}

/*
 * Written merged with what is on disk now, under an exclusive flock of
 * PATH.lock: another session's lessons are kept (two sessions at once lose
 * nothing); a lesson this run noted has this run's numbers (done stays done);
 * one it only read has the file's. A file that does not parse is replaced.
 */
int progress_save(const Progress *p, char **err)
{
	cJSON *root = cJSON_CreateObject(), *lessons = NULL;
	Progress disk = { 0 };
	char *text = NULL, *lockpath = NULL, *ondisk = NULL, *rerr = NULL;
	int rc = -1, ok = root != NULL, lock = -1;
	size_t len = 0;
	struct stat st;

	*err = NULL;
	if (p->path == NULL) {
		cJSON_Delete(root);
		return 0;
	}
	if (paths_make_parent(p->path) != 0) {
		char *shown = text_escape(p->path, "");
		*err = str_printf(_("cannot make the folder for %s: %s"), shown ? shown : "", strerror(errno));
		free(shown);
		cJSON_Delete(root);
		return -1;
	}
	if ((lockpath = str_printf("%s.lock", p->path)) != NULL &&
	    (lock = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) >= 0)
		while (flock(lock, LOCK_EX) != 0 && errno == EINTR)
			;
	if (lstat(p->path, &st) == 0 && (ondisk = fileio_read_all(p->path, PROGRESS_MAX_BYTES, &len, &rerr)) != NULL &&
	    progress_parse(&disk, ondisk, len) != NULL) {
		free(disk.lesson);
		memset(&disk, 0, sizeof disk);
	}
	ok = ok && cJSON_AddNumberToObject(root, "version", 1) != NULL;
	ok = ok && cJSON_AddStringToObject(root, "last", p->last[0] != '\0' ? p->last : disk.last) != NULL;
	ok = ok && (lessons = cJSON_AddObjectToObject(root, "lessons")) != NULL;
	for (int i = 0; ok && i < disk.n; i++) {
		const ProgressLesson *d = &disk.lesson[i], *e = progress_find(p, d->name);
		if (e != NULL && e->touched) {
			/* another session's answers to the same lesson are kept too */
			ProgressLesson both = *e;
			if (d->marks[0] != '\0')
				marks_merge(&both, d->marks);
			both.reached |= d->reached;
			ok = add_entry(lessons, &both, both.done || d->done || entry_done(&both));
		} else
			ok = add_entry(lessons, d, d->done);
	}
	for (int i = 0; ok && i < p->n; i++)
		if (progress_find(&disk, p->lesson[i].name) == NULL)
			ok = add_entry(lessons, &p->lesson[i], p->lesson[i].done);
	if (ok && (text = cJSON_Print(root)) != NULL)
		rc = fileio_write_atomic(p->path, text, strlen(text), err);
	else
		*err = strdup("out of memory");
	if (lock >= 0)
		close(lock); /* the lock goes with it */
	free(lockpath);
	free(ondisk);
	free(rerr);
	free(disk.lesson);
	cJSON_free(text);
	cJSON_Delete(root);
	return rc;
}

/* 1 when every lesson of the course is finished. */
static int course_done(const Progress *p)
{
	for (int i = 0; session_lesson_order[i] != NULL; i++) {
		const ProgressLesson *e = progress_find(p, session_lesson_order[i]);
		if (e == NULL || !e->done)
			return 0;
	}
	return 1;
}

int progress_note(Progress *p, const char *name, int step, int steps, int right, int asked)
{
	return progress_note_marks(p, name, step, steps, NULL, right, asked);
}

int progress_note_marks(Progress *p, const char *name, int step, int steps, const char *marks, int right, int asked)
{
	ProgressLesson *e = progress_entry(p, name), before;
	int r = 0;

	if (e == NULL)
		return 0;
	before = *e;
	e->touched = 1;
	const int was_done = before.done;
	e->step = step;
	e->steps = steps;
	if (steps > 0 && step >= steps - 1)
		e->reached = 1;
	if (marks == NULL || !marks_merge(e, marks)) {
		e->right = right;
		e->asked = asked;
		e->marks[0] = '\0';
	}
	if (entry_done(e))
		e->done = 1;
	if (strcmp(p->last, name) != 0 || before.done != e->done || before.steps != e->steps || before.right != e->right ||
	    before.asked != e->asked || strcmp(before.marks, e->marks) != 0 || before.reached != e->reached)
		r |= PROGRESS_CHANGED;
	else if (before.step != e->step)
		r |= PROGRESS_MOVED;
	snprintf(p->last, sizeof p->last, "%s", name);
	/* the end of the course: its last lesson finished now (not on a later visit) */
	if (!was_done && e->done && session_lesson_index(name) >= 0 && session_lesson_order[session_lesson_index(name) + 1] == NULL)
		r |= PROGRESS_COURSE_DONE;
	return r;
}

int progress_track(Progress *p, const Session *s, char **err)
{
	char name[PROGRESS_NAME_MAX];
	int r;

	*err = NULL;
	if (p == NULL || session_lesson_name(s, name, sizeof name) != 0)
		return 0;
	char marks[PROGRESS_MARKS_MAX];
	const int keep = s->nwalk < PROGRESS_MARKS_MAX;
	for (int k = 0; keep && k < s->nwalk; k++)
		/* (a question a demo revealed to the class is, for the learner, one not answered: 's') */
		marks[k] = !s->walk[k].has_quiz ? '.' : "owrs"[s->quiz[k] == QUIZ_OPEN ? 0 : s->quiz[k] == QUIZ_WRONG ? 1
		                                                 : s->quiz[k] == QUIZ_RIGHT ? 2 : 3];
	marks[keep ? s->nwalk : 0] = '\0';
	r = progress_note_marks(p, name, s->step, s->nwalk, keep ? marks : NULL, s->quiz_right, s->quiz_asked);
	if (r & PROGRESS_MOVED)
		p->unsaved = 1;
	if (r & PROGRESS_CHANGED) {
		if (progress_save(p, err) != 0)
			return -1;
		p->unsaved = 0;
	}
	return r;
}

int progress_flush(Progress *p, char **err)
{
	*err = NULL;
	if (p == NULL || !p->unsaved)
		return 0;
	if (progress_save(p, err) != 0)
		return -1;
	p->unsaved = 0;
	return 0;
}

void progress_marks(const Progress *p, const char *name, const char *current, int utf8, char mark[8], char score[40])
{
	const ProgressLesson *e = p != NULL ? progress_find(p, name) : NULL;
	const int here = current != NULL && strcmp(current, name) == 0;

	snprintf(mark, 8, "%s", here ? (utf8 ? "\u25b6" : ">") : e != NULL && e->done ? (utf8 ? "\u2713" : "+") : " ");
	score[0] = '\0';
	if (e == NULL)
		return;
	if (here && e->done)
		snprintf(score, 40, _("%s step %d/%d"), utf8 ? "\u2713" : "+", e->step + 1, e->steps);
	else if (!e->done)
		snprintf(score, 40, _("step %d/%d"), e->step + 1, e->steps);
	if (e->asked > 0) {
		size_t n = strlen(score);
		snprintf(score + n, 40 - n, _("%squiz %d/%d"), n > 0 ? "  " : "", e->right, e->asked);
	}
}

char *progress_report(const Progress *p, int utf8)
{
	StrBuf b = { 0 };
	int done = 0, total = 0, right = 0, asked = 0;

	/* the counts first: the summary at the course's end is read in a pop-up that may scroll */
	for (int i = 0; session_lesson_order[i] != NULL; i++) {
		const ProgressLesson *e = progress_find(p, session_lesson_order[i]);
		total++;
		if (e != NULL) {
			done += e->done;
			right += e->right;
			asked += e->asked;
		}
	}
	strbuf_printf(&b, _("%d of %d lessons finished"), done, total);
	if (asked > 0)
		strbuf_printf(&b, _("; quizzes %d of %d right"), right, asked);
	/* TRANSLATORS: the full stop that ends a sentence built in pieces (counts, a decode step) */
	strbuf_puts(&b, _(".\n"));
	if (course_done(p))
		strbuf_puts(&b, _("The whole course is finished: well done!\n"));
	if (p->last[0] != '\0') {
		const ProgressLesson *e = progress_find(p, p->last);
		char *name = text_escape(p->last, "");
		if (e != NULL)
			strbuf_printf(&b, _("Last: %s, step %d of %d.\n"), name ? name : "", e->step + 1, e->steps);
		free(name);
	}
	strbuf_puts(&b, "\n");
	for (int i = 0; session_lesson_order[i] != NULL; i++) {
		char mark[8], score[40];
		progress_marks(p, session_lesson_order[i], NULL, utf8, mark, score);
		strbuf_printf(&b, "%s %2d. %-10s %s\n", mark, i + 1, session_lesson_order[i], score);
	}
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
