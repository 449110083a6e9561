/* fuzz_demo.c: libFuzzer target for the demo-script parser (`make fuzz-demo`).
 *
 * Any bytes go to demo_parse. A script either parses into at most
 * DEMO_MAX_LINES entries, each a command, a pause, a quiz or a wait of 0 to
 * DEMO_MAX_WAIT seconds, or is refused with a message naming its line. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app/demo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *err = NULL;
	Demo *d = demo_parse("fuzz.txt", (const char *)data, size, &err);
	int i;

	if (d == NULL) {
		if (err == NULL || strncmp(err, "fuzz.txt", 8) != 0)
			abort(); /* a refused script always says where */
		free(err);
		return 0;
	}
	if (d->n < 0 || d->n > DEMO_MAX_LINES)
		abort();
	for (i = 0; i < d->n; i++) {
		const DemoLine *e = &d->line[i];
		if (e->text == NULL || e->lineno < 1 || (i > 0 && e->lineno <= d->line[i - 1].lineno))
			abort();
		if (e->kind == DEMO_WAIT && !(e->seconds >= 0 && e->seconds <= DEMO_MAX_WAIT))
			abort();
		if ((e->kind == DEMO_QUIZ || e->kind == DEMO_PAUSE) && strncmp(e->text, e->kind == DEMO_QUIZ ? "quiz" : "pause",
		                                                               e->kind == DEMO_QUIZ ? 4 : 5) != 0)
			abort(); /* only the word itself (and a comment) makes these */
	}
	demo_free(d);
	return 0;
}
