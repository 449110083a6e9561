/* fuzz_safetensors.c: libFuzzer target for the safetensors reader (`make fuzz-safetensors`).
 *
 * Any bytes are written to a file and opened with st_open: a file either
 * opens or says why, with no control character from it in the message; every
 * tensor of a file that opens lies inside the mapping, and every value of
 * every numeric tensor can be read and turned into a matrix. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weights/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void remove_file(void)
{
	unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *err = NULL;
	FILE *out;

	if (path[0] == '\0') {
		snprintf(path, sizeof path, "/tmp/attnviz-fuzz-st-%ld.safetensors", (long)getpid());
		atexit(remove_file);
	}
	out = fopen(path, "wb");
	if (out == NULL || fwrite(data, 1, size, out) != size || fclose(out) != 0)
		abort();
	StFile *f = st_open(path, &err);
	if (f == NULL) {
		if (err == NULL)
			abort(); /* a refused file always says why */
		for (const char *p = err; *p; p++)
			if ((unsigned char)*p < 0x20 && *p != '\n')
				abort();
		free(err);
		return 0;
	}
	for (int i = 0; i < f->n; i++) {
		const StTensor *t = &f->tensors[i];
		size_t bytes = (size_t)t->count * (size_t)st_dtype_size(t->dtype);
		if (t->data < f->map || t->data + bytes > f->map + f->size || st_find(f, t->name) != t)
			abort();
		if (t->dtype < ST_DTYPE_NUMERIC && t->ndim <= 2 && t->count < 4096) {
			Mat m = {0};
			if (st_to_mat(f, t, i & 1, 0, 0, &m, &err) == 0)
				mat_free(&m);
			else
				free(err);
		}
	}
	st_close(f);
	return 0;
}
