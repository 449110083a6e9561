#ifndef ATTNVIZ_SHORTEST_H
#define ATTNVIZ_SHORTEST_H

/*
 * The shortest digits that read back as exactly x, from Google's
 * double-conversion library (the one C++ file of attnviz, a wrapper of one
 * call; text_exact() lays the digits out).
 *
 * x must be finite. digits receives 1–17 ASCII digits and a '\0' (it holds
 * SHORTEST_SIZE bytes); x = ±0.d₁d₂…d_len × 10^point. Among the shortest
 * strings it is the one nearest x. Returns len; *negative is 1 for x < 0 and
 * for −0.
 */
#define SHORTEST_SIZE 18

#ifdef __cplusplus
extern "C" {
#endif
int shortest_digits(double x, char *digits, int *point, int *negative);
#ifdef __cplusplus
}
#endif

#endif
