/* unit_text.c: the one wrapper (text_wrap): blanks, wide characters, and
 * Chinese line breaking — no line starts with closing punctuation
 * (，。、；：！？）」』”) or ends with opening punctuation (（「『“); and the
 * one exact-number printer (text_exact) against the printf loop it replaced. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/text.h"

/* The lines of s wrapped to width, joined by '|'. */
static char *wrapped(const char *s, int width)
{
	TextLine *v = NULL;
	int n = text_wrap(s, width, &v);
	char *out = calloc(strlen(s) + (size_t)n + 1, 1);

	assert_true(n >= 1);
	assert_non_null(out);
	for (int i = 0; i < n; i++) {
		if (i)
			strcat(out, "|");
		strncat(out, s + v[i].off, (size_t)v[i].len);
		assert_true(text_width(s + v[i].off, v[i].len) <= width || v[i].len <= 4);
	}
	free(v);
	return out;
}

static void expect(const char *s, int width, const char *want)
{
	char *got = wrapped(s, width);
	if (strcmp(got, want) != 0)
		print_error("wrap(\"%s\", %d): got \"%s\", want \"%s\"\n", s, width, got, want);
	assert_string_equal(got, want);
	free(got);
}

static void test_blanks(void **state)
{
	(void)state;
	expect("", 10, "");
	expect("the weights come out", 10, "the|weights|come out");
	expect("one\ntwo", 10, "one|two");
	expect("a\n", 10, "a|");
	/* a word wider than the line is cut where it must be */
	expect("abcdefghij", 4, "abcd|efgh|ij");
}

static void test_cjk(void **state)
{
	(void)state;
	/* any two wide characters may part */
	expect("注意力权重", 4, "注意|力权|重");
	/* Latin beside Chinese may part too */
	expect("权重ab", 5, "权重|ab");
}

/*
 * Each punctuation mark of set (UTF-8), put where its line would break: s is
 * before, the mark, after, wrapped to width; the line may not break at the
 * mark's wrong side (side 1: before a closing mark, -1: after an opening one).
 */
static void each_mark(const char *set, const char *before, const char *after, int width, int side)
{
	for (const char *p = set; *p != '\0';) {
		char s[64], bad[8];
		const int k = (*p & 0xE0) == 0xE0 ? 3 : 2;
		snprintf(s, sizeof s, "%s%.*s%s", before, k, p, after);
		if (side > 0)
			snprintf(bad, sizeof bad, "|%.*s", k, p);
		else
			snprintf(bad, sizeof bad, "%.*s|", k, p);
		char *got = wrapped(s, width);
		if (strstr(got, bad) != NULL)
			print_error("\"%s\" wrapped to \"%s\"\n", s, got);
		assert_null(strstr(got, bad));
		free(got);
		p += k;
	}
}

static void test_closing(void **state)
{
	(void)state;
	/* 。 would start the second line: the character before it goes with it */
	expect("注意力。权重", 6, "注意|力。权|重");
	expect("甲乙，丙丁", 4, "甲|乙，|丙丁");
	/* no line starts with one */
	each_mark("，。、；：！？）」』”", "甲乙", "丙丁", 4, 1);
}

static void test_opening(void **state)
{
	(void)state;
	/* （ would end the first line: it goes down with what it opens */
	expect("甲（乙丙）", 4, "甲|（乙|丙）");
	expect("甲乙「丙丁」", 6, "甲乙|「丙|丁」");
	/* no line ends with one */
	each_mark("（「『“", "甲", "乙丙", 4, -1);
}

/* the loss curve's bar (issue 27, finding 1): never an index outside 0 … levels − 1 */
/* text_fit: whole characters only, a wide one not split, 0 columns nothing */
static void test_fit(void **state)
{
	(void)state;
	assert_int_equal(text_fit("abc", 5), 3);
	assert_int_equal(text_fit("abc", 2), 2);
	assert_int_equal(text_fit("abc", 0), 0);
	assert_int_equal(text_fit("a\u5b66b", 2), 1); /* 学 takes 2 columns: it does not fit beside a */
	assert_int_equal(text_fit("a\u5b66b", 3), 4);
	assert_int_equal(text_fit("\u00e9t\u00e9", 2), 3); /* é is 2 bytes, 1 column */
	assert_int_equal(text_fit("", 4), 0);
}

static void test_bar_level(void **state)
{
	(void)state;
	assert_int_equal(text_bar_level(0.0, 0.0, 1.0, 8), 0);
	assert_int_equal(text_bar_level(1.0, 0.0, 1.0, 8), 7);
	assert_int_equal(text_bar_level(0.5, 0.0, 1.0, 8), 4);
	assert_int_equal(text_bar_level(INFINITY, 0.0, 1.0, 8), 0);
	assert_int_equal(text_bar_level(NAN, 0.0, 1.0, 8), 0);
	assert_int_equal(text_bar_level(1.0, 0.0, INFINITY, 8), 0);
	assert_int_equal(text_bar_level(1.0, NAN, NAN, 8), 0);
	assert_int_equal(text_bar_level(2.0, 1.0, 1.0, 8), 0);
	/* hi − lo overflows to +inf */
	assert_int_equal(text_bar_level(-1e308, -1e308, 1e308, 8), 0);
	assert_int_equal(text_bar_level(1e308, -1e308, 1e308, 8), 7);
	assert_int_equal(text_bar_level(0.0, -1e308, 1e308, 8), 4);
	assert_int_equal(text_bar_level(-DBL_MAX, -DBL_MAX, DBL_MAX, 8), 0);
	assert_int_equal(text_bar_level(DBL_MAX, -DBL_MAX, DBL_MAX, 8), 7);
}

/* The naive reference: the shortest of "%.Ng", N = digits … 17, that reads back. */
static char *exact_by_printf(char *buf, double x, int digits)
{
	for (; digits < 17; digits++) {
		snprintf(buf, TEXT_EXACT_SIZE, "%.*g", digits, x);
		if (strtod(buf, NULL) == x)
			return buf;
	}
	snprintf(buf, TEXT_EXACT_SIZE, "%.17g", x);
	return buf;
}

/* the digits of a number as printed: the mantissa's, leading zeros and sign not counted */
static int significant(const char *s)
{
	int n = 0, lead = 1;

	for (; *s && *s != 'e'; s++) {
		if (*s == '0' && lead)
			continue;
		if (*s >= '0' && *s <= '9') {
			lead = 0;
			n++;
		}
	}
	return n;
}

static void exact_one(double x, int digits, long *same)
{
	char got[TEXT_EXACT_SIZE], ref[TEXT_EXACT_SIZE];

	text_exact(got, x, digits);
	exact_by_printf(ref, x, digits);
	if (isnan(x)) {
		assert_string_equal(got, ref);
		return;
	}
	/* it reads back, */
	if (strtod(got, NULL) != x || signbit(strtod(got, NULL)) != signbit(x))
		fail_msg("%a printed %s, which reads back as %a", x, got, strtod(got, NULL));
	/* as printf's layout; the same string as the loop, or (a power of two or a subnormal, where the
	 * nearest N-digit string does not read back but another does) shorter */
	if (strcmp(got, ref) == 0)
		(*same)++;
	else if (significant(got) >= significant(ref) || (fabs(x) >= DBL_MIN && frexp(fabs(x), &(int){0}) != 0.5))
		fail_msg("%a: %s, but printf's loop gives %s", x, got, ref);
}

static void test_exact(void **state)
{
	static const struct { double x; int digits; const char *s; } cases[] = {
		{0.0, 15, "0"}, {-0.0, 15, "-0"}, {1.0, 15, "1"}, {-2.5, 15, "-2.5"}, {0.1, 15, "0.1"},
		{1.0 / 3, 15, "0.3333333333333333"}, {2.0 / 3, 15, "0.6666666666666666"},
		{0.1 + 0.2, 15, "0.30000000000000004"}, {1e-5, 15, "1e-05"}, {1.5e-4, 15, "0.00015"},
		{123456789.0, 15, "123456789"}, {1e15, 15, "1e+15"}, {1e14, 15, "100000000000000"},
		{1234567890123456.0, 15, "1234567890123456"}, {1e17, 15, "1e+17"}, {1e21, 15, "1e+21"},
		{1e-300, 15, "1e-300"}, {DBL_MAX, 15, "1.7976931348623157e+308"}, {DBL_MIN, 15, "2.2250738585072014e-308"},
		{5e-324, 15, "5e-324"}, {INFINITY, 15, "inf"}, {-INFINITY, 15, "-inf"},
		{123456.0, 6, "123456"}, {1234567.0, 6, "1234567"}, {0.5, 6, "0.5"}, {1e6, 6, "1e+06"}, {1e5, 6, "100000"},
	};
	char buf[TEXT_EXACT_SIZE];
	uint64_t r = 88172645463325252u;
	long same = 0, n = 0;

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		assert_string_equal(text_exact(buf, cases[i].x, cases[i].digits), cases[i].s);
	/* every power of two and three times it, and random bit patterns, numbers in a lesson's range, sums */
	for (int e = -1074; e <= 1023; e++) {
		exact_one(ldexp(1, e), 15, &same);
		exact_one(-3 * ldexp(1, e), 6, &same);
		n += 2;
	}
	for (long i = 0; i < 200000; i++) {
		uint64_t u;
		double x;

		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		u = r;
		memcpy(&x, &u, sizeof x);
		exact_one(x, 15, &same);
		exact_one((double)(u >> 11) / 9007199254740992.0 - 0.5, 15, &same);
		exact_one((double)(int64_t)(u % 2000001) / 1000.0 - 1000.0, 6, &same);
		exact_one(((double)(u >> 11) / 9007199254740992.0) * 1e-7, 15, &same);
		n += 4;
	}
	exact_one(NAN, 15, &same);
	/* all but the powers of two and subnormals are the loop's own strings */
	assert_true(same > n - 2200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blanks),
		cmocka_unit_test(test_cjk),
		cmocka_unit_test(test_closing),
		cmocka_unit_test(test_opening),
		cmocka_unit_test(test_fit),
		cmocka_unit_test(test_bar_level),
		cmocka_unit_test(test_exact),
	};
	/* widths as a UTF-8 terminal has them; in the C locale text_width counts the same */
	setlocale(LC_ALL, "C.UTF-8");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
