/* stats.c: the numbers a lesson shows about a matrix — pure functions, no I/O. */
#include "inspect/stats.h"
#include "base/i18n.h"

#include <math.h>
#include <stdio.h>

void stats_matrix(const Mat *m, MatStats *out)
{
	out->finite = mat_stats_range(m, &out->mean, &out->std, &out->min, &out->max);
	if (out->finite == 0)
		out->min = out->max = 0.0;
}

double stats_row_sum(const Mat *m, int i)
{
	double s = 0.0;

	for (int j = 0; j < m->cols; j++)
		s += MAT_AT(*m, i, j);
	return s;
}

void stats_row_sums(const Mat *m, double *sums)
{
	for (int i = 0; i < m->rows; i++)
		sums[i] = stats_row_sum(m, i);
}

static long cells(const Mat *m)
{
	return (long)m->rows * (long)m->cols;
}

long stats_param_count(const ModelConfig *c, const LayerParams *p)
{
	return cells(&p->W_q) + cells(&p->W_k) + cells(&p->W_v) + cells(&p->W_o) +
	       (c->score == SCORE_ADDITIVE ? cells(&p->w_e) : 0);
}

int stats_cell_differs(const Mat *a, const Mat *b, int i, int j, double rtol, double atol)
{
	double x, y;

	/* compared where both have the cell */
	if (i < 0 || j < 0 || i >= a->rows || j >= a->cols || i >= b->rows || j >= b->cols)
		return 0;
	x = MAT_AT(*a, i, j);
	y = MAT_AT(*b, i, j);
	if (!isfinite(x) || !isfinite(y)) {
		if (isnan(x) && isnan(y))
			return 0;
		return !(x == y);
	}
	return fabs(x - y) > atol + rtol * fabs(y);
}

/* "rows 3-4" (from, to: 0-based, to ≥ from) or "row 2"; columns after rows (", columns 3-4") with lead */
static int span(char *buf, size_t size, int columns, int lead, int from, int to)
{
	if (from == to)
		return snprintf(buf, size, !columns ? _("row %d") : lead ? _(", column %d") : _("column %d"), from);
	return snprintf(buf, size, !columns ? _("rows %d-%d") : lead ? _(", columns %d-%d") : _("columns %d-%d"), from, to);
}

const char *stats_only_in(const Mat *a, const Mat *b, char *buf, size_t size)
{
	int n = 0;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	if (a->rows > b->rows)
		n = span(buf, size, 0, 0, b->rows, a->rows - 1);
	if (a->cols > b->cols && n >= 0 && (size_t)n < size)
		span(buf + n, size - (size_t)n, 1, n > 0, b->cols, a->cols - 1);
	return buf;
}

long stats_kv_bytes_per_token(const LessonShape *sh, int kv_heads)
{
	return (long)kv_heads * (long)(sh->dim[DIM_DK] + sh->dim[DIM_DV]) * (long)sizeof(double);
}

long stats_flash_numbers(const LessonShape *sh)
{
	return (long)sh->block_q * sh->block_k + (long)sh->block_q * (2 + sh->dim[DIM_DV]);
}
