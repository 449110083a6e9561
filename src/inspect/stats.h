/* stats.h: the numbers a lesson shows about a matrix (scale.json's std, row sums, parameters). */
#ifndef ATTNVIZ_STATS_H
#define ATTNVIZ_STATS_H

#include <stddef.h>

#include "engine/attention.h"

typedef struct MatStats {
	size_t finite;      /* how many cells are finite (masked −∞ cells are left out) */
	double mean, std;   /* std is the sample standard deviation (n − 1), as torch.std() */
	double min, max;
} MatStats;

/* Statistics of the finite cells of m. */
void stats_matrix(const Mat *m, MatStats *out);
/* Σ_j m[i][j], j in order (the one row of stats_row_sums). */
double stats_row_sum(const Mat *m, int i);
/* sums[i] = Σ_j m[i][j] for each row (weights: 1, or 0 for a fully masked row). sums has m->rows entries. */
void stats_row_sums(const Mat *m, double *sums);
/* The learned numbers of the layer: W_q, W_k, W_v, W_o and w_e (independent of the number of heads). */
long stats_param_count(const ModelConfig *c, const LayerParams *p);
/*
 * Decoding's KV cache, in bytes (doubles, 8 bytes a number) per token and
 * per layer: a key (d_k) and a value (d_v) for each of kv_heads heads.
 */
long stats_kv_bytes_per_token(const LessonShape *sh, int kv_heads);
/* FlashAttention: the numbers it holds at once, a Bq × Bk tile and Bq rows of m, l and O (2 + d_v each). */
long stats_flash_numbers(const LessonShape *sh);
/*
 * 1 when two computations differ at a cell both have: one is −∞ and the other
 * not, or |a − b| > atol + rtol·|b|. A cell only one has (a prefix of the
 * lesson's tokens has fewer rows) is not compared: 0; stats_only_in says
 * which rows and columns those are.
 */
int stats_cell_differs(const Mat *a, const Mat *b, int i, int j, double rtol, double atol);
/* The tolerances every view compares a lesson with its variant by. */
#define STATS_DIFF_RTOL 1e-9
#define STATS_DIFF_ATOL 1e-12
/*
 * The rows and columns a has and b lacks, in words: "rows 3-4", "row 2",
 * "rows 3-4, columns 3-4", or "" when a has none beyond b. Returns buf.
 */
const char *stats_only_in(const Mat *a, const Mat *b, char *buf, size_t size);

#endif
