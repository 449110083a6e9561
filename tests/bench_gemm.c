/*
 * bench_gemm.c: the machine figures `make bench` sets beside attnviz's time.
 *   bench_gemm [N [REPEAT]]
 * For every matrix kernel this processor supports, the speed of mat_mul on
 * N × N · N × N (default 1024), median of REPEAT (default 5) after one
 * warm-up, in GFLOP/s (2·N³ flops); then the speed of writing memory that
 * is already mapped (memset of 256 MiB), in GB/s. Times are the process's
 * CPU time, so other programs on a busy machine do not count. One line each:
 *   default_kernel=NAME  (the one attnviz uses here)
 *   kernel=NAME gflops=G ms=T best_gflops=B  (B: the fastest run)
 *   write_gbps=W
 * A benchmark, not a test: it checks nothing but that the kernels of a kind
 * (fused, exact) agree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/matrix.h"

/* CPU time of this process, in milliseconds */
static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int compare_doubles(const void *x, const void *y)
{
	const double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, compare_doubles);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	const int n = argc > 1 ? atoi(argv[1]) : 1024;
	const int repeat = argc > 2 ? atoi(argv[2]) : 5;
	const size_t count = (size_t)n * (size_t)n, big = (size_t)256 << 20;
	Mat A, B, C, first[2] = { { 0, 0, NULL }, { 0, 0, NULL } };
	const char *first_name[2] = { NULL, NULL };
	double *ms, *buf;
	size_t i;
	int k, r, status = 0;

	if (n < 1 || repeat < 1 || (ms = calloc((size_t)repeat, sizeof *ms)) == NULL) {
		fprintf(stderr, "usage: bench_gemm [N [REPEAT]]\n");
		return 2;
	}
	if (mat_alloc(&A, n, n) != 0 || mat_alloc(&B, n, n) != 0 || mat_alloc(&C, n, n) != 0) {
		fprintf(stderr, "bench_gemm: out of memory\n");
		return 1;
	}
	for (i = 0; i < count; i++) {
		A.a[i] = (double)(i % 17) / 17.0 - 0.5;
		B.a[i] = (double)(i % 13) / 13.0 - 0.5;
	}
	printf("default_kernel=%s\n", mat_kernel_active());
	for (k = 0; k < mat_kernel_count(); k++) {
		if (!mat_kernel_supported(k))
			continue;
		mat_kernel_use(mat_kernel_name(k));
		mat_mul(&A, &B, &C); /* warm-up: packing buffers, caches */
		for (r = 0; r < repeat; r++) {
			const double t0 = now_ms();
			mat_mul(&A, &B, &C);
			ms[r] = now_ms() - t0;
		}
		/* every kernel of a kind (fused, exact) gives the bits of the first of that kind */
		if (first[mat_kernel_fused()].a == NULL) {
			mat_copy(&first[mat_kernel_fused()], &C);
			first_name[mat_kernel_fused()] = mat_kernel_name(k);
		} else {
			const Mat *f = &first[mat_kernel_fused()];
			for (i = 0; i < count && f->a[i] == C.a[i]; i++)
				continue;
			if (i < count) {
				fprintf(stderr, "bench_gemm: kernel %s differs from %s\n", mat_kernel_name(k),
				        first_name[mat_kernel_fused()]);
				status = 1;
			}
		}
		{
			const double med = median(ms, repeat), flop = 2.0 * n * n * (double)n;
			printf("kernel=%s gflops=%.1f ms=%.2f best_gflops=%.1f\n", mat_kernel_name(k), flop / med / 1e6, med,
			       flop / ms[0] / 1e6);
		}
	}
	mat_free(&A);
	mat_free(&B);
	mat_free(&C);
	mat_free(&first[0]);
	mat_free(&first[1]);

	/* Memory bandwidth, writing: the pages are mapped by the first memset, then timed. */
	buf = malloc(big);
	if (buf != NULL) {
		/* called through a volatile pointer, so the stores to a buffer freed after are kept */
		void *(*volatile set)(void *, int, size_t) = memset;
		set(buf, 1, big);
		for (r = 0; r < repeat; r++) {
			const double t0 = now_ms();
			set(buf, r & 1, big);
			ms[r] = now_ms() - t0;
		}
		printf("write_gbps=%.2f\n", (double)big / median(ms, repeat) / 1e6);
		free(buf);
	}
	free(ms);
	return status;
}
