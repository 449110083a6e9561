/* model.c: which of a model's shared settings a layer keeps of its own — one table. */
#include "model/model.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* When a layer keeps a setting of its own rather than the model's. */
enum { OWN_ALWAYS, OWN_ENCDEC };

#define OWN(field, when) { offsetof(ModelConfig, field), sizeof(((ModelConfig *)0)->field), when }

/* clang-format off */
static const struct {
	size_t offset, size;
	int when;
} layer_own[] = {
	OWN(m, OWN_ALWAYS),             /* the source: a cross-attention link reads its encoder's */
	OWN(d_model, OWN_ALWAYS),
	OWN(d_src, OWN_ALWAYS),
	OWN(source_tokens, OWN_ALWAYS),
	OWN(has_source, OWN_ALWAYS),
	OWN(source_input, OWN_ALWAYS),
	OWN(mask, OWN_ENCDEC),          /* an encoder–decoder's links keep their own masks */
	OWN(mask_matrix, OWN_ENCDEC),
	OWN(window, OWN_ENCDEC),
	OWN(nmasks, OWN_ENCDEC),
	OWN(masks, OWN_ENCDEC),
};
/* clang-format on */

void model_layer_config(const ModelConfig *shared, const ModelConfig *own, int i, int nlayers, int encdec,
                        const Mat *input, ModelConfig *out)
{
	*out = *shared;
	for (size_t k = 0; k < sizeof layer_own / sizeof layer_own[0]; k++)
		if (layer_own[k].when == OWN_ALWAYS || encdec)
			memcpy((char *)out + layer_own[k].offset, (const char *)own + layer_own[k].offset, layer_own[k].size);
	out->input = *input;
	out->positional = i == 0 ? shared->positional : POS_NONE; /* positions are added once, before layer 0 */
	out->has_final_norm = i == nlayers - 1 && shared->has_final_norm;
	out->vocab = i == nlayers - 1 ? shared->vocab : 0; /* the LM head follows the last layer */
}

/* Whether one mask lets query i see key j. */
static int part_sees(MaskKind kind, int window, const Mat *m, int i, int j)
{
	switch (kind) {
	case MASK_CAUSAL: return j <= i;
	case MASK_WINDOW: return j <= i && i - j < window;
	case MASK_PADDING: return MAT_AT(*m, 0, j) != 0.0;
	case MASK_MATRIX: return MAT_AT(*m, i, j) != 0.0;
	default: return 1;
	}
}

int model_mask_sees(const ModelConfig *c, int i, int j)
{
	if (c->mask != MASK_LIST)
		return part_sees(c->mask, c->window, &c->mask_matrix, i, j);
	for (int k = 0; k < c->nmasks; k++)
		if (!part_sees(c->masks[k].kind, c->masks[k].window, &c->masks[k].matrix, i, j))
			return 0;
	return 1;
}

int model_mask_causal(const ModelConfig *c)
{
	if (c->mask == MASK_CAUSAL || c->mask == MASK_WINDOW)
		return 1;
	for (int k = 0; c->mask == MASK_LIST && k < c->nmasks; k++)
		if (c->masks[k].kind == MASK_CAUSAL || c->masks[k].kind == MASK_WINDOW)
			return 1;
	return 0;
}

int model_mask_window(const ModelConfig *c)
{
	int w = c->mask == MASK_WINDOW ? c->window : 0;

	for (int k = 0; c->mask == MASK_LIST && k < c->nmasks; k++)
		if (c->masks[k].kind == MASK_WINDOW && (w == 0 || c->masks[k].window < w))
			w = c->masks[k].window;
	return w;
}

/*
 * ALiBi's slopes (Press, Smith and Lewis, "Train Short, Test Long"): for h a
 * power of two, the geometric sequence 2^(−8/h), 2^(−16/h), …; otherwise
 * the c = 2^⌊log2 h⌋ slopes of c heads, then every other slope of 2c heads.
 */
int model_kv_named(const LayerParams *p)
{
	return p->kv_heads_given || p->kv_heads != p->heads;
}

double model_alibi_slope(int h, int i)
{
	int c = 1;

	while (c * 2 <= h)
		c *= 2;
	if (i < c)
		return pow(2.0, -8.0 * (i + 1) / c);
	return pow(2.0, -8.0 * (2 * (i - c) + 1) / (2.0 * c));
}
