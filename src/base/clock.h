/* clock.h: the one clock everything times itself by (milliseconds, with their fraction). */
#ifndef ATTNVIZ_CLOCK_H
#define ATTNVIZ_CLOCK_H

/* Milliseconds on the monotonic clock (from an arbitrary start): differences are durations. */
double clock_ms(void);
/* Milliseconds of CPU time this process has used. */
double clock_cpu_ms(void);

#endif
