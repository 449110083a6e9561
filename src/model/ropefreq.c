/* ropefreq.c: RoPE's frequencies, plain and scaled (ropefreq.h). Each function
 * follows the transformers function named beside it, step by step. */
#include "model/ropefreq.h"

#include <math.h>
#include <stddef.h>

int rope_rotary_dim(const ModelConfig *c, int d_k)
{
	/* dim = int(head_dim * partial_rotary_factor) */
	return c->rope_partial > 0 && c->rope_partial < 1 ? (int)((double)d_k * c->rope_partial) : d_k;
}

/* _compute_default_rope_parameters: 1 / base^(arange(0, dim, 2) / dim), written base^(−2i/dim) as attnviz always has */
void rope_inv_freq_plain(double base, int dim, double *inv)
{
	for (int i = 0; i < dim / 2; i++)
		inv[i] = pow(base, -2.0 * i / dim);
}

double rope_dynamic_base(const ModelConfig *c, int dim, int seq_len)
{
	const RopeScaling *s = &c->rope_scaling;
	const double L = seq_len > s->orig_max ? seq_len : s->orig_max, f = s->factor;

	/* _compute_dynamic_ntk_parameters: seq_len = max(seq_len, max_position_embeddings) */
	return c->rope_base * pow(f * L / s->orig_max - (f - 1), (double)dim / (dim - 2));
}

/* find_correction_dim: the dimension at which a frequency turns num_rotations times over L₀ positions */
static double correction_dim(double num_rotations, int dim, double base, int orig_max)
{
	return (dim * log(orig_max / (num_rotations * 2 * M_PI))) / (2 * log(base));
}

void rope_yarn_range(const ModelConfig *c, int dim, double *low, double *high)
{
	const RopeScaling *s = &c->rope_scaling;
	double lo = correction_dim(s->beta_fast, dim, c->rope_base, s->orig_max);
	double hi = correction_dim(s->beta_slow, dim, c->rope_base, s->orig_max);

	if (s->truncate) {
		lo = floor(lo);
		hi = ceil(hi);
	}
	*low = lo > 0 ? lo : 0;
	*high = hi < dim - 1 ? hi : dim - 1;
}

/* linear_ramp_factor(low, high, dim)[i], clamped to [0, 1] */
double rope_yarn_ramp(const ModelConfig *c, int dim, int i, double *low, double *high)
{
	double ramp;

	rope_yarn_range(c, dim, low, high);
	if (*low == *high)
		*high += 0.001; /* "Prevent singularity" */
	ramp = (i - *low) / (*high - *low);
	return ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
}

/* transformers' get_mscale(scale, mscale): YaRN's attention temperature, 0.1·m·ln(s) + 1 (1 for s ≤ 1). */
static double rope_get_mscale(double s, double m)
{
	return s <= 1 ? 1.0 : 0.1 * m * log(s) + 1.0;
}

double rope_inv_freq(const ModelConfig *c, int d_k, int seq_len, double *inv)
{
	const RopeScaling *s = &c->rope_scaling;
	const int dim = rope_rotary_dim(c, d_k), half = dim / 2;
	const double f = s->factor;

	switch (s->type) {
	case ROPE_SCALE_LINEAR: /* _compute_linear_scaling_rope_parameters: inv_freq /= factor */
		rope_inv_freq_plain(c->rope_base, dim, inv);
		for (int i = 0; i < half; i++)
			inv[i] /= f;
		return 1.0;
	case ROPE_SCALE_DYNAMIC:
		rope_inv_freq_plain(rope_dynamic_base(c, dim, seq_len), dim, inv);
		return 1.0;
	case ROPE_SCALE_YARN: { /* _compute_yarn_parameters */
		double low, high;
		for (int i = 0; i < half; i++) {
			const double pos_freq = pow(c->rope_base, (double)(2 * i) / dim);
			const double extrapolation = 1.0 / pos_freq, interpolation = 1.0 / (f * pos_freq);
			const double ramp = rope_yarn_ramp(c, dim, i, &low, &high);
			/* inv_freq_extrapolation_factor = 1 − ramp */
			inv[i] = interpolation * ramp + extrapolation * (1 - ramp);
		}
		/*
		 * attention_factor, unless given: get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
		 * when both are given and non-zero (DeepSeek's; 1 when they are equal), else get_mscale(factor),
		 * where get_mscale(s, m) = 0.1·m·ln(s) + 1 (1 for s ≤ 1)
		 */
		if (s->attn_factor > 0)
			return s->attn_factor;
		if (s->mscale != 0 && s->mscale_all_dim != 0)
			return rope_get_mscale(f, s->mscale) / rope_get_mscale(f, s->mscale_all_dim);
		return rope_get_mscale(f, 1.0);
	}
	case ROPE_SCALE_LLAMA3: { /* _compute_llama3_parameters */
		const double low_wavelen = s->orig_max / s->low_freq, high_wavelen = s->orig_max / s->high_freq;
		rope_inv_freq_plain(c->rope_base, dim, inv);
		for (int i = 0; i < half; i++) {
			const double wavelen = 2 * M_PI / inv[i];
			if (wavelen > low_wavelen) {
				inv[i] /= f;
			} else if (!(wavelen < high_wavelen)) {
				const double smooth = (s->orig_max / wavelen - s->low_freq) / (s->high_freq - s->low_freq);
				inv[i] = (1 - smooth) * inv[i] / f + smooth * inv[i];
			}
		}
		return 1.0;
	}
	default:
		rope_inv_freq_plain(c->rope_base, dim, inv);
		return 1.0;
	}
}

int rope_scaling_eq(const RopeScaling *x, const RopeScaling *y)
{
	return x->type == y->type && x->factor == y->factor && x->orig_max == y->orig_max && x->beta_fast == y->beta_fast &&
	       x->beta_slow == y->beta_slow && x->attn_factor == y->attn_factor && x->truncate == y->truncate &&
	       x->low_freq == y->low_freq && x->high_freq == y->high_freq;
}

const char *rope_scale_name(RopeScaleType t)
{
	static const char *const names[] = { NULL, "linear", "dynamic", "yarn", "llama3" };
	return t >= ROPE_SCALE_NONE && t <= ROPE_SCALE_LLAMA3 ? names[t] : NULL;
}

int rope_has_table(const ModelConfig *c)
{
	return c->rope && (c->rope_scaling.type != ROPE_SCALE_NONE || (c->rope_partial > 0 && c->rope_partial < 1));
}
