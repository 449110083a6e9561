/*
 * lesson_alibi.c: ALiBi's key (issue 11), one table (lesson_keys.h):
 * "alibi": true (the paper's slopes), false, or {"slopes": [one number per
 * head]}, read and written back.
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

static const char *const alibi_keys[] = { "slopes", NULL };

static int read_alibi(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *v;
	size_t old;
	int r = 0;

	if ((v = get(root, "alibi")) != NULL) {
		old = path_key(c, "alibi");
		if (cJSON_IsBool(v)) {
			l->cfg.alibi = cJSON_IsTrue(v);
		} else if (cJSON_IsObject(v)) {
			const cJSON *sl = get(v, "slopes"), *x;
			warn_unknown_keys(c, v, alibi_keys);
			if (sl == NULL) {
				r = fail(c, _("expected {\"slopes\": [one number per head]} (write true for the ALiBi paper's slopes)"));
			} else {
				const int count = cJSON_GetArraySize(sl);
				path_key(c, "slopes");
				if (!cJSON_IsArray(sl))
					r = fail(c, _("expected %d numbers (one per head), got %s"), l->lp.heads, got(sl).s);
				else if (count != l->lp.heads)
					r = fail(c, _("expected %d numbers (one per head), got %d"), l->lp.heads, count);
				else if (mat_alloc(&l->lp.alibi_slopes, 1, count) != 0)
					r = fail_oom(c);
				else {
					int i = 0;
					cJSON_ArrayForEach(x, sl) {
						size_t old2 = path_index(c, i);
						if (read_finite(c, x, &l->lp.alibi_slopes.a[i]) != 0)
							r = -1;
						path_set(c, old2);
						if (r != 0)
							break;
						i++;
					}
				}
				l->cfg.alibi = 1;
			}
		} else {
			r = fail(c, _("expected true (the ALiBi paper's slopes), false, or {\"slopes\": [one number per head]}, got %s"),
			         got(v).s);
		}
		path_set(c, old);
		if (r != 0)
			return -1;
	}
	return 0;
}

/* "alibi" written back (true, or its slopes); a compare variant that drops its lesson's says false. */
static int write_alibi(cJSON *o, const Model *l, const Model *top)
{
	cJSON *a;

	if (top != NULL && top->cfg.alibi && !l->cfg.alibi && !cJSON_AddFalseToObject(o, "alibi"))
		return -1;
	if (!l->cfg.alibi)
		return 0;
	if (mat_empty(&l->lp.alibi_slopes))
		return cJSON_AddTrueToObject(o, "alibi") == NULL ? -1 : 0;
	a = cJSON_CreateObject();
	return li_put(o, "alibi", a) != 0 || li_put(a, "slopes", jw_flat(&l->lp.alibi_slopes)) != 0 ? -1 : 0;
}

const LessonKey li_alibi_keys[] = {
	{ .name = "alibi", .kind = LK_CUSTOM, .where = LK_TOP, .read = read_alibi, .write = write_alibi },
	{ .name = NULL },
};
