/* layout.c: the TUI's screen layout as plain arithmetic on rectangles. */
#include <string.h>

#include "tui/layout.h"

static int
imin(int a, int b)
{
	return a < b ? a : b;
}

static int
imax(int a, int b)
{
	return a > b ? a : b;
}

/*
 * Share `avail` among k wants: everyone gets at most its want, and what the
 * modest ones leave is shared by the others (water-filling). got[] ≥ 1 each
 * when avail ≥ k.
 */
static void
layout_share(int avail, int k, const int *want, int *got)
{
	int done[LAYOUT_MAX_PANES] = { 0 };
	int left = avail, open = k;

	for (int i = 0; i < k; i++)
		got[i] = 0;
	while (open > 0 && left > 0) {
		int share = left / open, changed = 0;

		if (share == 0)
			share = 1;
		for (int i = 0; i < k && left > 0; i++) {
			if (done[i] || want[i] > share)
				continue;
			got[i] = want[i];
			left -= want[i];
			done[i] = 1;
			open--;
			changed = 1;
		}
		if (changed)
			continue;
		/* Everyone left wants more than an equal share: split what is left. */
		share = left / open;
		int extra = left - share * open;
		for (int i = 0; i < k; i++) {
			if (done[i])
				continue;
			got[i] = share + (extra > 0 ? 1 : 0);
			if (extra > 0)
				extra--;
			done[i] = 1;
		}
		open = 0;
		left = 0;
	}
}

/* Place the panes in r grid rows; returns the fraction of their natural area hidden (× 1000). */
static long
layout_grid(const LayoutIn *in, const LayoutRect *area, int r, LayoutRect *pane)
{
	int n = in->npanes, per = (n + r - 1) / r;
	int roww[LAYOUT_MAX_PANES], rowh[LAYOUT_MAX_PANES], wants[LAYOUT_MAX_PANES];
	long hidden = 0;

	/* Heights: each grid row wants its tallest pane plus a blank line under it. */
	for (int g = 0; g < r; g++) {
		int tall = LAYOUT_PANE_MIN_H;
		for (int i = g * per; i < imin(n, (g + 1) * per); i++)
			tall = imax(tall, in->want_h[i]);
		wants[g] = tall + (g < r - 1 ? 1 : 0);
	}
	layout_share(area->h, r, wants, rowh);

	int y = area->y;
	for (int g = 0; g < r; g++) {
		int first = g * per, cnt = imin(n, (g + 1) * per) - first;
		int h = rowh[g] - (g < r - 1 && rowh[g] == wants[g] ? 1 : 0);

		for (int i = 0; i < cnt; i++)
			wants[i] = imax(1, in->want_w[first + i]);
		layout_share(area->w - (cnt - 1) * LAYOUT_PANE_GAP, cnt, wants, roww);
		int x = area->x;
		for (int i = 0; i < cnt; i++) {
			LayoutRect *p = &pane[first + i];
			int ww = imax(1, in->want_w[first + i]), wh = imax(1, in->want_h[first + i]);

			p->y = y;
			p->x = x;
			p->w = roww[i];
			p->h = imin(h, wh);
			if (p->h < 1 || p->w < 1)
				p->h = p->w = 0;
			x += roww[i] + LAYOUT_PANE_GAP;
			long seen = (long)imin(p->w, ww) * imin(p->h, wh);
			hidden += 1000 - seen * 1000 / ((long)ww * wh);
		}
		y += rowh[g];
	}
	return hidden;
}

int
layout_compute(const LayoutIn *in, Layout *out)
{
	int W = in->cols, H = in->lines;

	memset(out, 0, sizeof *out);
	if (W < LAYOUT_MIN_COLS || H < LAYOUT_MIN_LINES) {
		out->too_small = 1;
		return -1;
	}
	out->stage = (LayoutRect){ 0, 0, 1, W };
	out->status = (LayoutRect){ H - 1, 0, 1, W };
	int bottom = H - 1;
	if (!in->present && !in->no_keys) {
		out->keys = (LayoutRect){ H - 2, 0, 1, W };
		bottom = H - 2;
	}

	/* Narration: a rule line, its text and the formula; at least 3 lines, at most
	 * a quarter of the screen (a third presenting) while the panes need the room. */
	int most = imax(3, in->present ? H / 3 : H / 4);
	int want = in->narr_lines > 0 ? in->narr_lines + 1 : most;
	int nh = imax(3, imin(want, most));
	/* The lines that must show (with the rule and the formula) win over the panes, which keep a title and two rows. */
	if (in->narr_need > 0)
		nh = imax(nh, imin(in->narr_need + 2, bottom - 1 - LAYOUT_PANES_MIN_H));
	out->narr = (LayoutRect){ bottom - nh, 0, nh, W };
	out->panes = (LayoutRect){ 1, 0, bottom - nh - 1, W };

	int n = in->npanes < 0 ? 0 : imin(in->npanes, LAYOUT_MAX_PANES);
	out->npanes = n;
	out->grid_rows = n > 0 ? 1 : 0;

	long best = -1;
	LayoutRect tmp[LAYOUT_MAX_PANES];
	LayoutIn clipped = *in;
	clipped.npanes = n;
	for (int r = 1; r <= n; r++) {
		int per = (n + r - 1) / r;
		if (r > 1 && (n + per - 1) / per < r)
			continue; /* same grid as fewer rows */
		if (r > 1 && out->panes.h / r < LAYOUT_PANE_MIN_H)
			break;
		long hid = layout_grid(&clipped, &out->panes, r, tmp);
		/* Panes narrower than a label and two cells are worse than any hidden area. */
		if ((out->panes.w - (per - 1) * LAYOUT_PANE_GAP) / per < LAYOUT_PANE_MIN_W)
			hid += 1000L * n;
		if (best < 0 || hid < best) {
			best = hid;
			out->grid_rows = r;
			memcpy(out->pane, tmp, sizeof tmp);
		}
	}

	/* What the panes leave (keeping a blank line under them) goes to the narration. */
	int used = 0;
	for (int i = 0; i < n; i++)
		used = imax(used, out->pane[i].y + out->pane[i].h - out->panes.y);
	int spare = out->panes.h - used - 1;
	if (want > nh && spare > 0) {
		int grow = imin(spare, want - nh);
		out->narr.y -= grow;
		out->narr.h += grow;
		out->panes.h -= grow;
	}
	return 0;
}
