/* gqa.c: grouped-query attention (Ainslie et al., "GQA"), the variant "kv_heads".
 *
 * g key/value heads serve h query heads (g divides h): K and V have g·d_k
 * and g·d_v columns, and query head i reads key/value head i / (h/g), so
 * each kv head is shared by h/g neighbouring query heads (g = 1: multi-query
 * attention). It adds no stage of its own: every pass that reads K or V for
 * a query head asks the list which kv head (attn_kv_head). The split
 * stage's grouping of the panes (PANE_EACH_KV_HEAD, MF_KV, matrix_head_col0
 * and shape_kv_head in catalog.c) is the catalogue's, below the engine, for
 * the views; the K/V widths are the lesson's sizes (LessonShape).
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

/* Query head h reads key/value head h / (heads / kv_heads). */
static int gqa_kv_head(const Attn *a, int h)
{
	const int per = a->kv_heads > 0 ? a->heads / a->kv_heads : 0; /* query heads per kv head */

	return per > 0 ? h / per : h;
}

/* g key/value heads must divide the h query heads evenly. */
static const char *gqa_heads_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	if (lp->kv_heads < 1 || lp->heads % lp->kv_heads != 0)
		return "kv_heads";
	return NULL;
}

static int gqa_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xc;
	(void)yc;
	return xp->kv_heads == yp->kv_heads;
}

/* A score's words: which kv head this query head reads, and with how many others. */
static void gqa_head_note(StrBuf *b, const Attn *a, int h)
{
	if (a->kv_heads < a->heads)
		strbuf_printf(b, _("(query head %d shares key/value head %d with %d other heads)\n"), h, gqa_kv_head(a, h),
		              a->heads / a->kv_heads - 1);
}

const AttnVariant variant_gqa = {
	.name = "kv_heads",
	.heads_apart = 1,
	.feature = FEAT_GQA,
	.stage = STAGE_COUNT, /* none of its own */
	.kv_head = gqa_kv_head,
	.heads_fault = gqa_heads_fault,
	.same = gqa_same,
	.head_note = gqa_head_note,
};
