/* fuzz_lesson.c: libFuzzer target for the lesson loader (`make fuzz`).
 *
 * Any bytes go to lesson_load_string. When they load, the lesson is
 * computed (unless it is big: n·m·heads over 10^5 would make each run
 * slow without finding more), cloned and re-validated, then everything is
 * freed. Under ASan + UBSan this finds crashes, leaks and undefined
 * behaviour in the loader, the generators and the engine. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/attention.h"
#include "lesson/lesson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *err = NULL, *warn = NULL;
	Lesson *l = lesson_load_string("fuzz.json", (const char *)data, size, &err, &warn);

	if (lesson_needs_model(l)) { /* "model": a course without its computation until app/ imports the model */
		lesson_free(l);
		l = NULL;
	}
	if (l != NULL) {
		const double work = (double)l->cfg.n * (double)l->cfg.m * (double)l->lp.heads;
		Lesson *copy;
		if (work <= 1e5) {
			char *cerr = NULL;
			Attn *a = attn_compute(l, &cerr);
			attn_free(a);
			free(cerr);
			if (l->compare != NULL &&
			    (double)l->compare->cfg.n * l->compare->cfg.m * l->compare->lp.heads <= 1e5) {
				a = attn_compute(l->compare, &cerr);
				attn_free(a);
				free(cerr);
			}
		}
		copy = lesson_clone(l);
		if (copy != NULL) {
			char *verr = NULL;
			/* a loaded lesson is valid: its clone must be too */
			if (lesson_validate(copy, &verr) != 0)
				abort();
			free(verr);
			lesson_free(copy);
		}
		lesson_free(l);
	} else if (err == NULL) {
		/* a refused lesson always says why */
		abort();
	}
	free(err);
	free(warn);
	return 0;
}
