/* streaming.c: StreamingLLM's KV cache, the variant "streaming" (issue 23 §4).
 *
 * Xiao et al., "Efficient Streaming Language Models with Attention Sinks"
 * (ICLR 2024); the reference followed is the paper's repository,
 * mit-han-lab/streaming-llm, streaming_llm/kv_cache.py, StartRecentKVCache
 * (evict_for_space(past_key_values, 1) before each new token is appended):
 * the cache holds at most start_size + recent_size rows, and when it is full
 * it keeps `k[:, :, :start_size]` and `k[:, :, seq_len - recent_size:]`. A
 * lesson says "decode": {"cache": {"sink": S, "window": W}}: at step t (its
 * own row appended) the cache keeps rows
 *   j < S  and  t − W < j ≤ t     once t ≥ S + W, and every row 0 … t before,
 * S + W rows at most. Decoding (decode.c) attends over those rows alone; so
 * its rows are no longer the full computation's (which saw every token) once
 * the cache is full. Beside them it computes the plain window of the same
 * size, t − (S + W) < j ≤ t, the first tokens evicted (win_weights,
 * win_output): the paper's "window attention", whose weights lose the share
 * the first tokens took. Positions: with RoPE they are those within the
 * cache, as the repository's streaming_llm/pos_shift/modify_llama.py turns
 * them (llama_pos_shift_attention_forward: the cache keeps each key as
 * projected, and every step turns the key at index i of the cache by
 * position i and the query by its own index, the last): decode.c's
 * stream_shift and stream_keys, for the cache and the plain window alike.
 * Before the cache is full these are the tokens' own positions. ALiBi is
 * still refused with the cache (lesson_streaming.c).
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

/* Rows [0, S) and [t − W + 1, t] once the cache is full; plain: [t − S − W + 1, t]. */
static void streaming_runs(const ModelConfig *cfg, int t, int plain, int *first, int *lo)
{
	const int S = cfg->cache_sink, W = cfg->cache_window;

	if (W <= 0 || t < S + W)
		return;
	if (plain) {
		*lo = t - S - W + 1 > *lo ? t - S - W + 1 : *lo;
		return;
	}
	*first = S > *first ? S : *first;
	*lo = t - W + 1 > *lo ? t - W + 1 : *lo;
}

static int streaming_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xp;
	(void)yp;
	return xc->cache_sink == yc->cache_sink && xc->cache_window == yc->cache_window;
}

const AttnVariant variant_streaming = {
	.name = "streaming",
	.feature = FEAT_STREAMING,
	.stage = STAGE_COUNT, /* none of its own: decode's stage shows it */
	.cache_runs = streaming_runs,
	.same = streaming_same,
	.decode_keep = N_(" while it is one of the first tokens or inside the recent window"),
};
