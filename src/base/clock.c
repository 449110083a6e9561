/* clock.c: the one clock (clock.h). */
#include "base/clock.h"

#include <time.h>

static double
ms_of(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double
clock_ms(void)
{
	return ms_of(CLOCK_MONOTONIC);
}

double
clock_cpu_ms(void)
{
	return ms_of(CLOCK_PROCESS_CPUTIME_ID);
}
