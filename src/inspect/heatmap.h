/* heatmap.h: when a matrix is read as numbers and when it is drawn as a heatmap
 * without them, and how a heatmap too large for its room is down-sampled — one
 * rule for the exports (`--numbers`) and the terminal's zoom (issue 26 §1). */
#ifndef ATTNVIZ_HEATMAP_H
#define ATTNVIZ_HEATMAP_H

/* auto: numbers up to this many rows and columns; a larger matrix is a heatmap. */
#define HEAT_NUMBERS_SIDE 16

typedef enum HeatNumbers { HEAT_NUMBERS_AUTO, HEAT_NUMBERS_ON, HEAT_NUMBERS_OFF } HeatNumbers;

/* 1 when a rows × cols matrix is shown as numbers under mode, 0 as a heatmap. */
int heat_numbers_shown(HeatNumbers mode, int rows, int cols);

/*
 * The reduction f of a rows × cols heatmap drawn in at most most_r × most_c
 * cells of a readable size: the same f down and across (each drawn cell
 * stands for f × f cells), the smallest that fits; 1 when every cell fits.
 */
int heat_factor(int rows, int cols, int most_r, int most_c);

/*
 * What the drawn cell of the block rows r0…r1-1, columns c0…c1-1 shows: its
 * strongest finite cell (largest |x|: a mean of random signs would be ~0, a
 * mean of one-hot weights pale), −∞ when the block holds only −∞ (masked),
 * NaN when it holds no number at all. at(ctx, r, c) reads a cell.
 */
double heat_block_peak(double (*at)(const void *ctx, int r, int c), const void *ctx, int r0, int r1, int c0, int c1);

#endif
