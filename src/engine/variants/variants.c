/* variants.c: the list of attention variants (variants.h) and what the core asks of it. */
#include "engine/variants/variants.h"

#include <pthread.h>

#define X(name) &variant_##name,
const AttnVariant *const attn_variants[] = { ATTN_VARIANTS(X) };
#undef X
const int attn_variant_count = (int)(sizeof attn_variants / sizeof attn_variants[0]);

const AttnVariant *attn_variant_of_stage(Stage st)
{
	for (int k = 0; k < attn_variant_count; k++)
		if (attn_variants[k]->stage == st && attn_variants[k]->kernel != NULL)
			return attn_variants[k];
	return NULL;
}

int attn_variant_on(const Attn *a, const AttnVariant *v)
{
	return (a->shape.features & v->feature) != 0;
}

/*
 * The features of the variants with a score bias, and with a score map: a
 * row of the masked scores asks for both (attn_derived_row), so a lesson
 * with neither is answered without walking the list (at n = 128 the walks
 * were 3 % of a computation). The list is constant: worked out once.
 */
static FeatureSet with_bias, with_map;
static pthread_once_t with_once = PTHREAD_ONCE_INIT;

static void with_init(void)
{
	for (int k = 0; k < attn_variant_count; k++) {
		if (attn_variants[k]->score_bias != NULL)
			with_bias |= attn_variants[k]->feature;
		if (attn_variants[k]->score_map != NULL)
			with_map |= attn_variants[k]->feature;
	}
}

const AttnVariant *attn_score_bias(const Attn *a)
{
	pthread_once(&with_once, with_init);
	if (!(a->shape.features & with_bias))
		return NULL;
	for (int k = 0; k < attn_variant_count; k++)
		if (attn_variants[k]->score_bias != NULL && attn_variant_on(a, attn_variants[k]))
			return attn_variants[k];
	return NULL;
}

/* The first variant from the list's k0-th on that makes something of w for the scores, or w. */
static AttnMatrix reads_from(const Attn *a, int k0, AttnMatrix w)
{
	for (int k = k0; k < attn_variant_count; k++)
		for (const AttnMatrix(*r)[2] = attn_variants[k]->reads; r != NULL && (*r)[0] != AM_COUNT; r++)
			if ((*r)[0] == w && attn_variant_on(a, attn_variants[k]))
				return (*r)[1];
	return w;
}

AttnMatrix attn_reads(const Attn *a, AttnMatrix w)
{
	return reads_from(a, 0, w);
}

AttnMatrix attn_reads_after(const Attn *a, const AttnVariant *v, AttnMatrix w)
{
	for (int k = 0; k < attn_variant_count; k++)
		if (attn_variants[k] == v)
			return reads_from(a, k + 1, w);
	return w;
}

const AttnVariant *attn_sink(const Attn *a)
{
	for (int k = 0; k < attn_variant_count; k++)
		if (attn_variants[k]->sink_logit != NULL && attn_variant_on(a, attn_variants[k]))
			return attn_variants[k];
	return NULL;
}

const AttnVariant *attn_head_output(const Attn *a)
{
	for (int k = 0; k < attn_variant_count; k++)
		if (attn_variants[k]->head_row != NULL && attn_variant_on(a, attn_variants[k]))
			return attn_variants[k];
	return NULL;
}

const AttnVariant *attn_score_map(const Attn *a)
{
	pthread_once(&with_once, with_init);
	if (!(a->shape.features & with_map))
		return NULL;
	for (int k = 0; k < attn_variant_count; k++)
		if (attn_variants[k]->score_map != NULL && attn_variant_on(a, attn_variants[k]))
			return attn_variants[k];
	return NULL;
}

int attn_variant_derived(AttnMatrix w)
{
	for (int k = 0; k < attn_variant_count; k++) {
		if (attn_variants[k]->score_bias != NULL && (attn_variants[k]->bias_matrix == w || attn_variants[k]->biased_matrix == w))
			return 1;
		if (attn_variants[k]->score_map != NULL && attn_variants[k]->mapped_matrix == w)
			return 1;
	}
	return 0;
}

int attn_keep_first(const ModelConfig *cfg, int t)
{
	int first = 0;

	for (int k = 0; k < attn_variant_count; k++)
		if (attn_variants[k]->keep_first != NULL) {
			const int f = attn_variants[k]->keep_first(cfg, t);
			first = f > first ? f : first;
		}
	return first;
}

/* The cache's two runs at step t: rows [0, *first) and [*lo, t] (one run [lo, t] without a cache_runs variant). */
static void cache_runs(const ModelConfig *cfg, int t, int plain, int *first, int *lo)
{
	*first = 0;
	*lo = attn_keep_first(cfg, t);
	for (int k = 0; k < attn_variant_count; k++)
		if (attn_variants[k]->cache_runs != NULL)
			attn_variants[k]->cache_runs(cfg, t, plain, first, lo);
}

int attn_cache_has(const ModelConfig *cfg, int t, int j, int plain)
{
	int first, lo;

	cache_runs(cfg, t, plain, &first, &lo);
	return j <= t && (j < first || j >= lo);
}

int attn_in_cache(const ModelConfig *cfg, int t, int j)
{
	return attn_cache_has(cfg, t, j, 0);
}

int attn_cache_rows(const ModelConfig *cfg, int t, int plain, int *rows)
{
	int first, lo, count = 0;

	cache_runs(cfg, t, plain, &first, &lo);
	for (int j = 0; j <= t; j++)
		if (j < first || j >= lo) {
			if (rows != NULL)
				rows[count] = j;
			count++;
		}
	return count;
}

int attn_mask_fault(const ModelConfig *cfg, int part)
{
	for (int k = 0; k < attn_variant_count; k++)
		if (attn_variants[k]->mask_fault != NULL && attn_variants[k]->mask_fault(cfg, part))
			return 1;
	return 0;
}

int attn_masked_why(StrBuf *b, const ModelConfig *cfg, int i, int j, const char *fill)
{
	for (int k = 0; k < attn_variant_count; k++)
		if (attn_variants[k]->masked_why != NULL && attn_variants[k]->masked_why(b, cfg, i, j, fill))
			return 1;
	return 0;
}

int attn_heads_apart(const Attn *a)
{
	for (int k = 0; k < attn_variant_count; k++)
		if (!attn_variants[k]->heads_apart && attn_variant_on(a, attn_variants[k]))
			return 0;
	return 1;
}

int attn_kv_head(const Attn *a, int h)
{
	for (int k = 0; k < attn_variant_count; k++)
		if (attn_variants[k]->kv_head != NULL && attn_variant_on(a, attn_variants[k]))
			return attn_variants[k]->kv_head(a, h);
	return h;
}

const char *attn_heads_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	for (int k = 0; k < attn_variant_count; k++) {
		const char *fault = attn_variants[k]->heads_fault != NULL ? attn_variants[k]->heads_fault(cfg, lp) : NULL;
		if (fault != NULL)
			return fault;
	}
	return NULL;
}

void attn_head_note(StrBuf *b, const Attn *a, int h)
{
	for (int k = 0; k < attn_variant_count; k++)
		if (attn_variants[k]->head_note != NULL && attn_variant_on(a, attn_variants[k]))
			attn_variants[k]->head_note(b, a, h);
}
