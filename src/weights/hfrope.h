/* hfrope.h: RoPE's scaling and partial_rotary_factor in a config.json (issue 23 §2), for hfconfig.c. */
#ifndef ATTNVIZ_HFROPE_H
#define ATTNVIZ_HFROPE_H

#include "base/jsonread.h"
#include "weights/hfconfig.h"

/*
 * rope_scaling (the old layout: {"rope_type" or "type", "factor", …} beside a
 * top-level rope_theta and partial_rotary_factor) or rope_parameters (the new
 * one: the same keys with rope_theta and partial_rotary_factor inside) into
 * cfg->rope_scaling, cfg->partial_rotary_factor and cfg->rope_theta, with
 * transformers' defaults (modeling_rope_utils.py); cfg's sizes read before.
 * 0, or -1 with the error at the key's JSON path.
 */
int hfrope_read(JrCtx *c, const cJSON *root, HfConfig *cfg);

#endif
