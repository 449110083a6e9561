/* model.c: which of a model's shared settings a layer keeps of its own — one table. */
#include "model/model.h"

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
}
