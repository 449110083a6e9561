/* unit_layout.c: the TUI's layout on small, usual and large screens (layout.h, no curses). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "tui/layout.h"

/* A pane's natural size for an r × c matrix of 4-character numbers with short labels. */
static void
want(LayoutIn *in, int i, int rows, int cols)
{
	in->want_w[i] = 5 + 5 * cols;
	in->want_h[i] = 2 + rows;
}

static int
inside(const LayoutRect *r, int cols, int lines)
{
	return r->y >= 0 && r->x >= 0 && r->y + r->h <= lines && r->x + r->w <= cols;
}

static int
overlap(const LayoutRect *a, const LayoutRect *b)
{
	if (a->h <= 0 || a->w <= 0 || b->h <= 0 || b->w <= 0)
		return 0;
	return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

/* Every rectangle on screen, none overlapping, the fixed lines where they belong. */
static void
check_sane(const LayoutIn *in, const Layout *l)
{
	const LayoutRect *fixed[] = { &l->stage, &l->narr, &l->keys, &l->status };

	assert_false(l->too_small);
	assert_int_equal(l->stage.y, 0);
	assert_int_equal(l->stage.h, 1);
	assert_int_equal(l->stage.w, in->cols);
	assert_int_equal(l->status.y, in->lines - 1);
	assert_int_equal(l->status.h, 1);
	if (!in->present) {
		assert_int_equal(l->keys.y, in->lines - 2);
		assert_int_equal(l->keys.h, 1);
	} else {
		assert_int_equal(l->keys.h, 0);
	}
	assert_true(l->narr.h >= 3);
	assert_int_equal(l->narr.y + l->narr.h, in->present ? in->lines - 1 : in->lines - 2);
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
		assert_true(inside(fixed[i], in->cols, in->lines));
		for (size_t j = i + 1; j < sizeof fixed / sizeof fixed[0]; j++)
			assert_false(overlap(fixed[i], fixed[j]));
	}
	assert_int_equal(l->npanes, in->npanes);
	for (int i = 0; i < l->npanes; i++) {
		const LayoutRect *p = &l->pane[i];
		assert_true(p->h >= LAYOUT_PANE_MIN_H || p->h == in->want_h[i]);
		assert_true(p->w >= 1);
		assert_true(p->w <= (in->want_w[i] > 0 ? in->want_w[i] : in->cols));
		assert_true(p->h <= in->want_h[i]);
		assert_true(inside(p, in->cols, in->lines));
		/* inside the panes area, clear of the stage line and the narration */
		assert_true(p->y >= l->panes.y && p->y + p->h <= l->panes.y + l->panes.h);
		for (size_t j = 0; j < sizeof fixed / sizeof fixed[0]; j++)
			assert_false(overlap(p, fixed[j]));
		for (int j = i + 1; j < l->npanes; j++)
			assert_false(overlap(p, &l->pane[j]));
	}
}

static void
test_too_small(void **state)
{
	(void)state;
	LayoutIn in;
	Layout l;
	int sizes[][2] = { { 39, 24 }, { 80, 11 }, { 30, 10 }, { 0, 0 }, { 1, 1 }, { -5, 40 } };

	memset(&in, 0, sizeof in);
	in.npanes = 2;
	want(&in, 0, 4, 4);
	want(&in, 1, 4, 4);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		in.cols = sizes[i][0];
		in.lines = sizes[i][1];
		assert_int_equal(layout_compute(&in, &l), -1);
		assert_true(l.too_small);
		assert_int_equal(l.npanes, 0);
		assert_int_equal(l.status.h, 0);
	}
	/* Exactly the minimum is enough. */
	in.cols = LAYOUT_MIN_COLS;
	in.lines = LAYOUT_MIN_LINES;
	assert_int_equal(layout_compute(&in, &l), 0);
	check_sane(&in, &l);
}

/* 80 × 24, the scores stage of a 4-token lesson: Q 4×3, Kᵀ 3×4, scores 4×4 side by side. */
static void
test_80x24_three_panes(void **state)
{
	(void)state;
	LayoutIn in;
	Layout l;

	memset(&in, 0, sizeof in);
	in.cols = 80;
	in.lines = 24;
	in.npanes = 3;
	want(&in, 0, 4, 3);
	want(&in, 1, 3, 4);
	want(&in, 2, 4, 4);
	in.narr_lines = 6;
	assert_int_equal(layout_compute(&in, &l), 0);
	check_sane(&in, &l);
	assert_int_equal(l.grid_rows, 1);
	/* They all fit at their natural size, left to right on one line. */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(l.pane[i].w, in.want_w[i]);
		assert_int_equal(l.pane[i].h, in.want_h[i]);
		assert_int_equal(l.pane[i].y, 1);
	}
	assert_true(l.pane[0].x < l.pane[1].x && l.pane[1].x < l.pane[2].x);
	/* The narration grows into what the panes leave, up to what it wants. */
	assert_int_equal(l.narr.h, in.narr_lines + 1);
}

/* 80 × 24 with the project stage: eight panes cannot share one line. */
static void
test_80x24_many_panes(void **state)
{
	(void)state;
	LayoutIn in;
	Layout l;

	memset(&in, 0, sizeof in);
	in.cols = 80;
	in.lines = 24;
	in.npanes = 8;
	for (int i = 0; i < 8; i++)
		want(&in, i, 4, 3);
	assert_int_equal(layout_compute(&in, &l), 0);
	check_sane(&in, &l);
	assert_true(l.grid_rows >= 2);
	for (int i = 0; i < 8; i++)
		assert_true(l.pane[i].w >= LAYOUT_PANE_MIN_W);
}

/* Wider than the screen: the pane is clipped (it scrolls), never wider than the screen. */
static void
test_80x24_huge_matrix(void **state)
{
	(void)state;
	LayoutIn in;
	Layout l;

	memset(&in, 0, sizeof in);
	in.cols = 80;
	in.lines = 24;
	in.npanes = 2;
	want(&in, 0, 64, 64);
	want(&in, 1, 64, 64);
	in.narr_lines = 40;
	assert_int_equal(layout_compute(&in, &l), 0);
	check_sane(&in, &l);
	for (int i = 0; i < 2; i++) {
		assert_true(l.pane[i].w <= 80);
		assert_true(l.pane[i].h < 66);
	}
	/* The narration keeps to its quarter when the panes need the room. */
	assert_true(l.narr.h <= 24 / 4);
}

/* 200 × 60: the weighted stage (three panes) on one line at natural size; a big narration fits. */
static void
test_200x60(void **state)
{
	(void)state;
	LayoutIn in;
	Layout l;

	memset(&in, 0, sizeof in);
	in.cols = 200;
	in.lines = 60;
	in.npanes = 3;
	want(&in, 0, 7, 7);
	want(&in, 1, 7, 4);
	want(&in, 2, 7, 4);
	in.narr_lines = 12;
	assert_int_equal(layout_compute(&in, &l), 0);
	check_sane(&in, &l);
	assert_int_equal(l.grid_rows, 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(l.pane[i].w, in.want_w[i]);
	assert_int_equal(l.narr.h, 13);

	/* Eight 4×3 panes fit on one line of 200 columns. */
	in.npanes = 8;
	for (int i = 0; i < 8; i++)
		want(&in, i, 4, 3);
	assert_int_equal(layout_compute(&in, &l), 0);
	check_sane(&in, &l);
	assert_int_equal(l.grid_rows, 1);
}

static void
test_present_and_empty(void **state)
{
	(void)state;
	LayoutIn in;
	Layout l;

	memset(&in, 0, sizeof in);
	in.cols = 100;
	in.lines = 30;
	in.present = 1;
	in.narr_lines = 50;
	assert_int_equal(layout_compute(&in, &l), 0);
	check_sane(&in, &l);
	assert_int_equal(l.npanes, 0);
	/* Without panes the narration takes the room, less the stage and status lines and a blank. */
	assert_int_equal(l.narr.h, 30 - 3);

	/* With a big pane, presenting, it keeps to a third. */
	in.npanes = 1;
	want(&in, 0, 40, 10);
	assert_int_equal(layout_compute(&in, &l), 0);
	check_sane(&in, &l);
	assert_int_equal(l.narr.h, 30 / 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_80x24_three_panes),
		cmocka_unit_test(test_80x24_many_panes),
		cmocka_unit_test(test_80x24_huge_matrix),
		cmocka_unit_test(test_200x60),
		cmocka_unit_test(test_present_and_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
