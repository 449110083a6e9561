/* ropefreq.h: RoPE's frequencies per pair of columns, plain or scaled for long
 * context (issue 23 §2), as Hugging Face transformers' modeling_rope_utils.py
 * computes them (_compute_default_rope_parameters, _compute_linear_scaling_rope_parameters,
 * _compute_dynamic_ntk_parameters, _compute_yarn_parameters, _compute_llama3_parameters),
 * in double precision. Below the engine, so the lesson's checks, the rotate
 * stage and the angle table read the same numbers.
 */
#ifndef ATTNVIZ_ROPEFREQ_H
#define ATTNVIZ_ROPEFREQ_H

#include "model/model.h"

/* The columns of a head that turn: int(d_k · partial_rotary_factor), d_k without one. */
int rope_rotary_dim(const ModelConfig *c, int d_k);
/* Plain RoPE over dim columns: inv[i] = base^(−2i/dim), i = 0 … dim/2 − 1. */
void rope_inv_freq_plain(double base, int dim, double *inv);
/*
 * The frequencies c's scaling gives the rotary_dim(c, d_k)/2 pairs of a
 * sequence of seq_len positions (dynamic NTK reads it: the longest sequence
 * seen), into inv; returns attention_factor, the number cos and sin are
 * multiplied by (YaRN's 0.1·ln s + 1; 1 for the others).
 */
double rope_inv_freq(const ModelConfig *c, int d_k, int seq_len, double *inv);
/* Dynamic NTK's base for seq_len positions: base·((s·L/L₀) − (s − 1))^(d/(d−2)) when L > L₀, else base. */
double rope_dynamic_base(const ModelConfig *c, int dim, int seq_len);
/* YaRN's ramp ends low, high (find_correction_range) over dim columns. */
void rope_yarn_range(const ModelConfig *c, int dim, double *low, double *high);
/* YaRN's ramp of pair i over dim columns (linear_ramp_factor, clamped to [0, 1]), and its ends low, high (high moved by 0.001 when they meet). */
double rope_yarn_ramp(const ModelConfig *c, int dim, int i, double *low, double *high);
/* Whether c's RoPE is scaled or partial: the lesson shows the angle tables (FEAT_ROPE_TABLE). */
int rope_has_table(const ModelConfig *c);
/* Whether x and y scale alike: every field the same. */
int rope_scaling_eq(const RopeScaling *x, const RopeScaling *y);
/* The scaling's name in a lesson ("linear", …), NULL for none. */
const char *rope_scale_name(RopeScaleType t);

#endif
