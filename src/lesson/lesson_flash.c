/*
 * lesson_flash.c: FlashAttention's tiles (issue 11), one table
 * (lesson_keys.h): "flash": {"block_q": Bq, "block_k": Bk} or false.
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

#include <math.h>

static const char *const flash_keys[] = { "block_q", "block_k", NULL };

static int read_flash(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *v;
	size_t old;
	int r = 0;

	if ((v = get(root, "flash")) != NULL) {
		old = path_key(c, "flash");
		if (cJSON_IsFalse(v)) {
			/* no tiles (a compare variant may turn them off) */
		} else if (!cJSON_IsObject(v) || get(v, "block_q") == NULL || get(v, "block_k") == NULL) {
			r = fail(c, _("expected {\"block_q\": Bq, \"block_k\": Bk} (the tile: Bq query rows by Bk key columns) or false, "
			            "got %s"), got(v).s);
		} else {
			warn_unknown_keys(c, v, flash_keys);
			/* the range (1 … n, 1 … m) is checked with the shapes */
			for (int k = 0; k < 2 && r == 0; k++) {
				const cJSON *b = get(v, k ? "block_k" : "block_q");
				size_t old2 = path_key(c, k ? "block_k" : "block_q");
				if (!cJSON_IsNumber(b) || !isfinite(b->valuedouble) || b->valuedouble != floor(b->valuedouble) ||
				    fabs(b->valuedouble) > 1e9)
					r = fail(c, _("expected a whole number, got %s"), got(b).s);
				else if (k)
					l->cfg.flash_bk = (int)b->valuedouble;
				else
					l->cfg.flash_bq = (int)b->valuedouble;
				path_set(c, old2);
			}
			/* both 0 would read as no tiles at all, silently: "flash": false says that */
			if (r == 0 && l->cfg.flash_bq == 0 && l->cfg.flash_bk == 0) {
				size_t old2 = path_key(c, "block_q");
				r = fail(c, _("expected a whole number from 1 to n (the query rows), got 0 (\"flash\": false turns the "
				              "tiles off)"));
				path_set(c, old2);
			}
		}
		path_set(c, old);
		if (r != 0)
			return -1;
	}
	return 0;
}

/* "flash" written back; a compare variant that drops its lesson's tiles says false. */
static int write_flash(cJSON *o, const Model *l, const Model *top)
{
	cJSON *f;

	if (top != NULL && top->cfg.flash_bq > 0 && l->cfg.flash_bq == 0 && !cJSON_AddFalseToObject(o, "flash"))
		return -1;
	if (l->cfg.flash_bq <= 0)
		return 0;
	f = cJSON_CreateObject();
	return li_put(o, "flash", f) != 0 || !cJSON_AddNumberToObject(f, "block_q", l->cfg.flash_bq) ||
	               !cJSON_AddNumberToObject(f, "block_k", l->cfg.flash_bk)
	           ? -1
	           : 0;
}

const LessonKey li_flash_keys[] = {
	{ .name = "flash", .kind = LK_CUSTOM, .where = LK_TOP, .read = read_flash, .write = write_flash },
	{ .name = NULL },
};
