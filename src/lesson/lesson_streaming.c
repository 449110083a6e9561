/*
 * lesson_streaming.c: StreamingLLM's cache in a lesson (issue 23 §4;
 * engine/variants/streaming.c):
 *
 *   "decode": {"cache": {"sink": S, "window": W}}
 *
 * decodes token by token (as "decode": true) with a cache that keeps the
 * first S tokens and the most recent W (S + W rows at most; both whole
 * numbers ≥ 1), and computes beside it the plain window of S + W rows.
 * With RoPE the positions are those within the cache (decode.c,
 * stream_shift), as the paper's repository turns them.
 * li_read_decode_cache reads the object; li_check_streaming refuses what it
 * does not do yet, at the key at fault, once the lesson's settings are read.
 */
#include "lesson/lesson_internal.h"

int li_read_decode_cache(Ctx *c, const cJSON *v, Model *l)
{
	static const char *const decode_keys[] = { "cache", NULL };
	static const char *const cache_keys[] = { "sink", "window", NULL };
	const cJSON *cache;
	long long sink = 0, window = 0;
	size_t old;
	int r = 0;

	if (refuse_unknown_keys(c, v, decode_keys, _("decode key")) != 0)
		return -1;
	cache = jr_enter(c, v, "cache", &old);
	if (cache == NULL)
		return fail(c, "%s", _("expected {\"cache\": {\"sink\": 4, \"window\": 8}} (StreamingLLM's cache), or true or false"));
	if (!cJSON_IsObject(cache) || get(cache, "sink") == NULL || get(cache, "window") == NULL)
		r = fail(c, _("expected {\"sink\": the first tokens kept, \"window\": the recent tokens kept}, got %s"), got(cache).s);
	else if (refuse_unknown_keys(c, cache, cache_keys, _("cache key")) != 0 ||
	         key_whole(c, cache, "sink", 1, 1e6, _("a whole number \u2265 1 of first tokens the cache keeps (StreamingLLM: 4)"), &sink) != 0 ||
	         key_whole(c, cache, "window", 1, 1e6, _("a whole number \u2265 1 of recent tokens the cache keeps"), &window) != 0)
		r = -1;
	l->cfg.decode = 1;
	l->cfg.cache_sink = (int)sink;
	l->cfg.cache_window = (int)window;
	return jr_leave(c, old, r);
}

/* Called with the path at the lesson's level: 0, or -1 with the error at decode.cache or the key it does not go with. */
int li_check_streaming(Ctx *c, const ModelConfig *cfg, const LayerParams *lp)
{
	const char *key = NULL, *why = NULL;

	if (!cfg->decode || cfg->cache_window <= 0)
		return 0;
	if (cfg->rope && cfg->qk_norm == QK_NORM_L2)
		key = "qk_norm", why = _("StreamingLLM's cache turns its keys at each step, which Llama 4's QK-norm after RoPE "
		                        "would have to follow: not done here yet (leave out \"kind\": \"l2\" with "
		                        "\"decode\": {\"cache\"})");
	else if (cfg->alibi)
		key = "alibi", why = _("StreamingLLM's cache gives the keys their places within the cache, which is not done "
		                      "here yet: leave out \"alibi\" with \"decode\": {\"cache\"}");
	else if (model_mask_window(cfg) > 0 || cfg->mask == MASK_LIST)
		key = "mask", why = _("StreamingLLM's cache is its own window: give a plain \"causal\" mask with \"decode\": {\"cache\"}");
	else if (lp->block.present)
		key = "block", why = _("StreamingLLM's cache is shown on one attention layer for now: leave out \"block\" with "
		                      "\"decode\": {\"cache\"}");
	if (key == NULL)
		return 0;
	path_key(c, key);
	return fail(c, "%s", why);
}
