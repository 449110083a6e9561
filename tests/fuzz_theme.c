/* fuzz_theme.c: libFuzzer target for the theme reader (`make fuzz-theme`).
 *
 * Any bytes go to themefile_parse. A theme either loads or says why; on
 * failure the built-in default is filled in. Every colour of a loaded theme
 * is in range, and its description holds no control character. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "out/themefile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ThemeFile t;
	char *err = NULL;
	int i;

	if (themefile_parse("fuzz.json", (const char *)data, size, &t, &err) != 0 && err == NULL)
		abort(); /* a refused theme always says why */
	free(err);
	if (t.nseq < 0 || t.nseq > THEMEFILE_MAX_RAMP || t.ndiv < 0 || t.ndiv > THEMEFILE_MAX_RAMP)
		abort();
	for (i = 0; i < THEMEFILE_ROLE_COUNT; i++)
		if (t.role[i].fg > 255 || t.role[i].bg > 255)
			abort();
	for (i = 0; t.description[i] != '\0'; i++)
		if ((unsigned char)t.description[i] < 0x20)
			abort();
	for (i = 0; i < t.nseq; i++)
		(void)themefile_to8(t.seq[i]);
	return 0;
}
