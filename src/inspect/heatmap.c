/* heatmap.c: numbers or a heatmap, and the down-sampling of a large one (heatmap.h). */
#include <math.h>

#include "inspect/heatmap.h"

int
heat_numbers_shown(HeatNumbers mode, int rows, int cols)
{
	if (mode == HEAT_NUMBERS_ON)
		return 1;
	if (mode == HEAT_NUMBERS_OFF)
		return 0;
	return rows <= HEAT_NUMBERS_SIDE && cols <= HEAT_NUMBERS_SIDE;
}

int
heat_factor(int rows, int cols, int most_r, int most_c)
{
	int fr, fc;

	if (most_r < 1)
		most_r = 1;
	if (most_c < 1)
		most_c = 1;
	fr = (rows + most_r - 1) / most_r;
	fc = (cols + most_c - 1) / most_c;
	return fr > fc ? (fr > 1 ? fr : 1) : (fc > 1 ? fc : 1);
}

double
heat_block_peak(double (*at)(const void *ctx, int r, int c), const void *ctx, int r0, int r1, int c0, int c1)
{
	double peak = NAN; /* NaN: no number in the block; −∞: only masked cells */

	for (int r = r0; r < r1; r++)
		for (int c = c0; c < c1; c++) {
			const double x = at(ctx, r, c);
			if (isfinite(x) && (!isfinite(peak) || fabs(x) > fabs(peak)))
				peak = x;
			else if (isinf(x) && isnan(peak))
				peak = x;
		}
	return peak;
}
