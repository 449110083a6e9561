/*
 * hfweights.c: a model folder's weights (hfconfig.h's HfWeights): the one
 * model.safetensors, or model.safetensors.index.json's shards, each opened
 * when its weight_map first names it; a tensor found by name across them.
 */
#include "weights/hfconfig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/i18n.h"
#include "base/jsonread.h"
#include "base/strbuf.h"
#include "base/text.h"

#define HF_MAX_INDEX (64L << 20) /* an index of a 400-shard model is under 10 MB */

static int by_tensor(const void *x, const void *y)
{
	return strcmp(((const struct HfEntry *)x)->tensor, ((const struct HfEntry *)y)->tensor);
}

void hfweights_close(HfWeights *w)
{
	if (w == NULL)
		return;
	for (int i = 0; i < w->nfiles; i++)
		st_close(w->files[i]);
	for (int i = 0; i < w->n; i++)
		free(w->map[i].tensor);
	free(w->files);
	free(w->map);
	free(w->name);
	free(w);
}

/* A shard's name as the index gives it: a file of the model's folder, nothing else. */
static int plain_file_name(const char *s)
{
	return s[0] != '\0' && s[0] != '.' && strchr(s, '/') == NULL && strchr(s, '\\') == NULL;
}

/* The shard called file (opened when first named), its index in w->files; -1 with the error recorded. */
static int shard(JrCtx *c, HfWeights *w, const char *dir, const cJSON *names, const cJSON *v)
{
	const cJSON *e;
	int k = 0;

	if (!cJSON_IsString(v))
		return jr_fail(c, _("expected the name of a shard (\"model-00001-of-00002.safetensors\"), got %s"),
		               jr_got(v).s);
	if (!plain_file_name(v->valuestring))
		return jr_fail(c, _("%s is not a file name in the model's folder"), jr_got(v).s);
	/* the shards are numbered in the order the index first names them */
	cJSON_ArrayForEach(e, names) {
		if (e == v)
			break;
		if (cJSON_IsString(e) && strcmp(e->valuestring, v->valuestring) == 0)
			return w->map[k].file;
		k++;
	}
	char *path = str_printf("%s/%s", dir, v->valuestring), *err = NULL;
	StFile *f = path ? st_open(path, &err) : NULL;
	free(path);
	if (f == NULL) {
		jr_fail(c, "%s", err ? err : _("out of memory"));
		free(err);
		return -1;
	}
	w->files[w->nfiles] = f;
	return w->nfiles++;
}

/* The index's weight_map: each shard opened once, each tensor checked to be in its shard. NULL, or the error. */
static char *read_index(HfWeights *w, const char *dir, const char *path)
{
	char *text, *err = NULL;
	size_t len;
	cJSON *root;
	const cJSON *map, *e;
	JrCtx c;

	if ((text = fileio_read_all(path, HF_MAX_INDEX, &len, &err)) == NULL)
		return err;
	root = jr_parse(w->name, text, len, 1, "safetensors index",
	                "{\"metadata\": {…}, \"weight_map\": {\"lm_head.weight\": \"model-00001-of-00002.safetensors\", …}}",
	                &err);
	free(text);
	if (root == NULL)
		return err;
	jr_ctx_init(&c, w->name, NULL);
	map = cJSON_IsObject(root) ? jr_get(root, "weight_map") : NULL;
	if (!cJSON_IsObject(map)) {
		jr_fail(&c, _("expected {\"weight_map\": {TENSOR: SHARD, …}}, got %s"), jr_got(map ? map : root).s);
	} else {
		int n = cJSON_GetArraySize(map);
		w->map = calloc((size_t)n + 1, sizeof *w->map);
		w->files = calloc((size_t)n + 1, sizeof *w->files);
		if (w->map == NULL || w->files == NULL) {
			jr_fail_oom(&c);
			map = NULL;
		}
		cJSON_ArrayForEach(e, map) {
			size_t old = jr_path_key(&c, "weight_map");
			jr_path_append(&c, ".%s", jr_quoted(e->string).s);
			int k = shard(&c, w, dir, map, e);
			if (k < 0)
				break;
			if (st_find(w->files[k], e->string) == NULL) {
				jr_fail(&c, _("%s has no tensor %s"), jr_got(e).s, jr_quoted(e->string).s);
				break;
			}
			if ((w->map[w->n].tensor = strdup(e->string)) == NULL) {
				jr_fail_oom(&c);
				break;
			}
			w->map[w->n++].file = k;
			jr_path_set(&c, old);
		}
	}
	if (c.err == NULL) {
		qsort(w->map, (size_t)w->n, sizeof *w->map, by_tensor);
		for (int i = 1; i < w->n && c.err == NULL; i++)
			if (strcmp(w->map[i].tensor, w->map[i - 1].tensor) == 0)
				jr_fail(&c, _("weight_map names tensor %s twice"), jr_quoted(w->map[i].tensor).s);
	}
	cJSON_Delete(root);
	return c.err;
}

HfWeights *hfweights_open(const char *dir, char **err)
{
	HfWeights *w = calloc(1, sizeof *w);
	char *index = str_printf("%s/model.safetensors.index.json", dir), *single = str_printf("%s/model.safetensors", dir);

	*err = NULL;
	if (w == NULL || index == NULL || single == NULL)
		goto oom;
	w->prefix = "";
	/* as transformers' from_pretrained looks: model.safetensors first, then the index */
	if (access(single, F_OK) == 0) {
		if ((w->name = text_escape(single, "")) == NULL || (w->files = calloc(1, sizeof *w->files)) == NULL)
			goto oom;
		if ((w->files[0] = st_open(single, err)) == NULL)
			goto fail;
		w->nfiles = 1;
	} else if (access(index, F_OK) == 0) {
		if ((w->name = text_escape(index, "")) == NULL)
			goto oom;
		if ((*err = read_index(w, dir, index)) != NULL)
			goto fail;
	} else {
		char *d = text_escape(dir, "");
		*err = d ? str_printf(_("%s: no model.safetensors and no model.safetensors.index.json (the weights of a "
		                        "Hugging Face model folder)"), d)
		         : NULL;
		free(d);
		goto fail;
	}
	free(index);
	free(single);
	return w;
oom:
	*err = NULL;
fail:
	if (*err == NULL)
		*err = strdup(_("out of memory"));
	free(index);
	free(single);
	hfweights_close(w);
	return NULL;
}

const StTensor *hfweights_find(const HfWeights *w, const char *name, const StFile **file)
{
	int k = 0;

	if (w->n > 0) {
		struct HfEntry key = {.tensor = (char *)name};
		const struct HfEntry *e = bsearch(&key, w->map, (size_t)w->n, sizeof *w->map, by_tensor);
		if (e == NULL)
			return NULL;
		k = e->file;
	} else if (w->nfiles != 1) {
		return NULL;
	}
	if (file != NULL)
		*file = w->files[k];
	return st_find(w->files[k], name);
}

int hfweights_mat(const HfWeights *w, const char *name, int transpose, int rows, int cols, Mat *out, char **err)
{
	char *full = str_printf("%s%s", w->prefix, name);
	const StFile *f = NULL;
	const StTensor *t = full ? hfweights_find(w, full, &f) : NULL;
	int r;

	*err = NULL;
	if (full == NULL) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	if (t == NULL) {
		*err = str_printf(_("%s: no tensor %s"), w->name, jr_quoted(full).s);
		free(full);
		return -1;
	}
	free(full);
	r = st_to_mat(f, t, transpose, rows, cols, out, err);
	return r;
}

