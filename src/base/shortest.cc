/*
 * shortest.cc — the shortest round-trip digits of a double, from the
 * double-conversion library (pkg-config double-conversion), behind a C call.
 *
 * A dump of one block at n = 256 prints 3.8 million numbers. Found by trying
 * "%.15g", "%.16g" and "%.17g" until strtod read x back, each number cost
 * about 700 ns and a dump spent 95 % of its time in printf and strtod; this
 * finds the same digits directly (Grisu, with a bignum fallback where Grisu
 * cannot decide).
 */
#include <double-conversion/double-to-string.h>

#include "shortest.h"

int shortest_digits(double x, char *digits, int *point, int *negative)
{
	bool sign = false;
	int len = 0;

	double_conversion::DoubleToStringConverter::DoubleToAscii(
		x, double_conversion::DoubleToStringConverter::SHORTEST, 0, digits, SHORTEST_SIZE, &sign, &len, point);
	*negative = sign ? 1 : 0;
	return len;
}
