/* window.c: the sliding window (Longformer, Mistral), the variant "window".
 *
 * Query i sees key j only when j ≤ i and i − j < w: the w most recent
 * tokens, itself included. It adds no stage of its own: it is a kind of mask
 * (MASK_WINDOW, alone or in a list of masks) that the scores' mask reads
 * through model_mask_sees, and decoding's rolling KV cache keeps only the
 * window's rows, dropping the oldest at each step (keep_first). The mask's
 * rules stay in model/model.c (model_mask_sees, model_mask_window,
 * model_mask_causal): the lesson loader and its checks read them below the
 * engine. Its formula is the masked stage's in catalog.c.
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

/* The first key query t sees, the first row the cache keeps at step t: t − w + 1 (0 without a window). */
static int window_keep_first(const ModelConfig *cfg, int t)
{
	const int window = model_mask_window(cfg);

	return window > 0 && t - window + 1 > 0 ? t - window + 1 : 0;
}

/* A window looks back from each query over the same tokens (n = m), at least itself (w ≥ 1). */
static int window_mask_fault(const ModelConfig *cfg, int part)
{
	const MaskKind kind = part < 0 ? cfg->mask : cfg->masks[part].kind;
	const int window = part < 0 ? cfg->window : cfg->masks[part].window;

	return kind == MASK_WINDOW && (cfg->n != cfg->m || window < 1);
}

/* Why a window hides key j from query i: a later token, or one too far back. */
static int window_masked_why(StrBuf *b, const ModelConfig *cfg, int i, int j, const char *fill)
{
	if (cfg->mask != MASK_WINDOW)
		return 0;
	/* the reason inside the sentence, so a translation words each one whole */
	if (j > i)
		strbuf_printf(b, _("query %d may not see key %d (window mask: a later token), so the cell becomes %s\n"), i, j, fill);
	else
		strbuf_printf(b, _("query %d may not see key %d (window mask: too far back), so the cell becomes %s\n"), i, j, fill);
	return 1;
}

/* The same window, alone and in each part of a list of masks (the core compares the parts' kinds and matrices). */
static int window_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xp;
	(void)yp;
	if (xc->window != yc->window)
		return 0;
	for (int k = 0; k < xc->nmasks && k < yc->nmasks; k++)
		if (xc->masks[k].window != yc->masks[k].window)
			return 0;
	return 1;
}

const AttnVariant variant_window = {
	.name = "window",
	.heads_apart = 1,
	.feature = FEAT_WINDOW,
	.stage = STAGE_COUNT, /* none of its own */
	.keep_first = window_keep_first,
	.mask_fault = window_mask_fault,
	.masked_why = window_masked_why,
	.same = window_same,
	.decode_keep = N_(" while it is inside the window"),
};
