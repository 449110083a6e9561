/* mla.h: what multi-head latent attention's cache keeps (issue 24 §1), for
 * the kv_cache pane and its explanation (variants/mla.c). The variant itself
 * (variant_mla, variant_mla_heads, variant_mla_absorb) is in variants.h's list. */
#ifndef ATTNVIZ_MLA_H
#define ATTNVIZ_MLA_H

/*
 * What a layer's KV cache keeps per token, in numbers: MHA every head's k
 * and v, h·(d_k + d_v); GQA g heads' of them, g·(d_k + d_v); MQA one head's,
 * d_k + d_v; MLA the latent and the shared RoPE key, c + d_rope
 * (d_k = d_nope + d_rope).
 */
typedef struct MlaCache {
	long long mha, gqa, mqa, mla;
	int groups;
} MlaCache;
MlaCache mla_cache(int heads, int d_nope, int d_rope, int d_v, int kv_lora_rank, int groups);
/* DeepSeek-V3's sizes (its config.json): 61 layers, 128 heads, c 512, d_rope 64, d_nope 128, d_v 128; GQA with 8 groups; bf16. */
enum { MLA_V3_LAYERS = 61, MLA_V3_HEADS = 128, MLA_V3_KV_LORA = 512, MLA_V3_ROPE = 64, MLA_V3_NOPE = 128, MLA_V3_V = 128,
       MLA_V3_GROUPS = 8, MLA_BYTES = 2 };
/*
 * The table of what MHA, GQA, MQA and MLA keep per token: per layer in
 * numbers and in bytes at bytes_per_number, and over layers layers, one
 * line each, with a heading (words translated). Heap string, NULL out of memory.
 */
char *mla_cache_table(const MlaCache *t, int layers, int bytes_per_number);

#endif
