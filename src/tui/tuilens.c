/*
 * tuilens.c: the logit lens as a screen of its own (issue 22), opened with L
 * from the model view (tuimodel.c) and lying over it: a row per layer, a
 * column per position, each cell the most probable next token of that
 * layer's output at that position (through the final norm and the
 * unembedding: inspect/lens.h) with its probability, shaded by it. Arrows
 * move the selected cell, PgUp/PgDn page the layers, < and > (or [ and ])
 * the positions, e (or Enter) explains the cell with its top tokens'
 * probabilities and logits, Esc (q, L) goes back to the model view as it was.
 * It reads the session's model and changes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curses.h>

#include "base/i18n.h"
#include "base/text.h"
#include "inspect/lens.h"
#include "tui/theme.h"
#include "tui/tuistate.h"

#define LENS_LABEL 5  /* "L12 " and a space */
#define LENS_CELL 12  /* a cell's columns: the token (7), a space, ".62", a gap */
#define LENS_TOKEN 7

/* How many layers and positions fit now. */
static void
lens_fit(const Tui *t, int *rows, int *cols)
{
	*rows = LINES - 4 > 1 ? LINES - 4 : 1; /* the title, the positions, the selected cell, the keys */
	*cols = (COLS - LENS_LABEL) / LENS_CELL > 1 ? (COLS - LENS_LABEL) / LENS_CELL : 1;
	(void)t;
}

/* The selection kept in range and in view. */
static void
lens_scroll(Tui *t)
{
	const Lens *l = t->lens;
	int rows, cols;

	lens_fit(t, &rows, &cols);
	if (t->lens_layer >= l->layers)
		t->lens_layer = l->layers - 1;
	if (t->lens_pos >= l->n)
		t->lens_pos = l->n - 1;
	if (t->lens_layer < 0)
		t->lens_layer = 0;
	if (t->lens_pos < 0)
		t->lens_pos = 0;
	if (t->lens_layer < t->lens_top)
		t->lens_top = t->lens_layer;
	if (t->lens_layer >= t->lens_top + rows)
		t->lens_top = t->lens_layer - rows + 1;
	if (t->lens_pos < t->lens_left)
		t->lens_left = t->lens_pos;
	if (t->lens_pos >= t->lens_left + cols)
		t->lens_left = t->lens_pos - cols + 1;
}

/* The lens of the session's model computed again (0), or -1 with the reason said. */
static int
lens_load(Tui *t)
{
	Lens *l = calloc(1, sizeof *l);
	char *err = NULL;

	if (l == NULL || lens_compute(t->s->model, l, &err) != 0) {
		tui_msgf(t, 1, "%s", err != NULL ? err : _("out of memory"));
		free(err);
		free(l);
		return -1;
	}
	if (t->lens != NULL)
		lens_free(t->lens);
	free(t->lens);
	t->lens = l;
	return 0;
}

int
tui_lens_open(Tui *t)
{
	if (t->s->model == NULL || lens_load(t) != 0)
		return 1;
	/* the last position of the last layer first selected: the model's own next token */
	t->lens_layer = t->lens->layers - 1;
	t->lens_pos = t->lens->n - 1;
	t->lens_top = t->lens_left = 0;
	t->lens_open = 1;
	t->redraw |= R_POPUP;
	return 1;
}

void
tui_lens_close(Tui *t)
{
	if (t->lens != NULL)
		lens_free(t->lens);
	free(t->lens);
	t->lens = NULL;
	if (t->lens_open) {
		t->lens_open = 0;
		t->redraw |= R_POPUP;
	}
}

void
tui_lens_refresh(Tui *t)
{
	if (t->lens_open && lens_load(t) != 0)
		tui_lens_close(t);
}

/* A probability in three columns: ".62", "1.0". */
static const char *
short_p(char buf[8], double p)
{
	if (p >= 0.995)
		snprintf(buf, 8, "1.0");
	else
		snprintf(buf, 8, ".%02d", (int)(p * 100 + 0.5));
	return buf;
}

/* "layer 1, position 6 (·cat): ·sat p = 0.6267; then ·on 0.1033, ·the 0.0511" */
static void
selected_line(const Tui *t, char *buf, size_t size)
{
	const LensCell *cell = lens_cell(t->lens, t->lens_layer, t->lens_pos);
	char *pos = text_escape(attn_config(t->s->model)->tokens[t->lens_pos], "");
	size_t k;

	k = (size_t)snprintf(buf, size, _("layer %d, position %d (%s):"), t->lens_layer, t->lens_pos,
	                     pos != NULL ? pos : "");
	free(pos);
	for (int j = 0; cell != NULL && j < cell->ntop && j < 3 && k < size; j++) {
		char *tok = lens_token(t->s->model, cell->id[j], 16);
		if (j == 0)
			k += (size_t)snprintf(buf + k, size - k, " %s p = %.4g", tok != NULL ? tok : "", cell->p[j]);
		else
			k += (size_t)snprintf(buf + k, size - k, "%s %s %.4g", j == 1 ? _("; then") : ",", tok != NULL ? tok : "",
			                      cell->p[j]);
		free(tok);
	}
}

void
tui_draw_lens(Tui *t, WINDOW *w)
{
	const Lens *l = t->lens;
	char buf[512];
	int rows, cols;

	lens_scroll(t);
	lens_fit(t, &rows, &cols);
	const int last_layer = t->lens_top + rows < l->layers ? t->lens_top + rows : l->layers;
	const int last_pos = t->lens_left + cols < l->n ? t->lens_left + cols : l->n;
	snprintf(buf, sizeof buf,
	         _("logit lens: layers %d-%d of %d, positions %d-%d of %d: the top next token"),
	         t->lens_top, last_layer - 1, l->layers, t->lens_left, last_pos - 1, l->n);
	screen_put_fit(w, 0, 0, theme_attr(ROLE_STAGE) | A_BOLD, buf, COLS, t->utf8);
	/* the positions: "6:·cat", the selected one's lit */
	for (int i = t->lens_left; i < last_pos; i++) {
		char *tok = text_escape(attn_config(t->s->model)->tokens[i], "");
		snprintf(buf, sizeof buf, "%d:%s", i, tok != NULL ? tok : "");
		free(tok);
		screen_put(w, 1, LENS_LABEL + (i - t->lens_left) * LENS_CELL,
		           theme_attr(i == t->lens_pos ? ROLE_LABEL_HI : ROLE_LABEL), buf, LENS_CELL - 1);
	}
	for (int L = t->lens_top; L < last_layer; L++) {
		const int y = 2 + L - t->lens_top;
		snprintf(buf, sizeof buf, "L%d", L);
		screen_put(w, y, 0, theme_attr(L == t->lens_layer ? ROLE_LABEL_HI : ROLE_LABEL), buf, LENS_LABEL - 1);
		for (int i = t->lens_left; i < last_pos; i++) {
			const LensCell *cell = lens_cell(l, L, i);
			const int sel = L == t->lens_layer && i == t->lens_pos, x = LENS_LABEL + (i - t->lens_left) * LENS_CELL;
			char p[8], *tok = cell->ntop > 0 ? lens_token(t->s->model, cell->id[0], LENS_TOKEN) : NULL;
			int lv = 0;
			attr_t at = cell->ntop > 0 ? theme_heat(RAMP_SEQUENTIAL, cell->p[0], &lv) : theme_attr(ROLE_MASKED);
			snprintf(buf, sizeof buf, "%-*s %s", LENS_TOKEN + (tok != NULL ? (int)strlen(tok) - text_width(tok, -1) : 0),
			         tok != NULL ? tok : "-", cell->ntop > 0 ? short_p(p, cell->p[0]) : "");
			free(tok);
			screen_put(w, y, x, sel ? at | A_REVERSE | A_BOLD : at, buf, LENS_CELL - 1);
		}
	}
	selected_line(t, buf, sizeof buf);
	screen_put_fit(w, LINES - 2, 0, theme_attr(ROLE_INFO), buf, COLS, t->utf8);
	wattrset(w, theme_attr(ROLE_KEYS));
	mvwhline(w, LINES - 1, 0, ' ', COLS);
	screen_put_fit(w, LINES - 1, 0, theme_attr(ROLE_KEYS),
	               _(" arrows move  PgUp/PgDn layers  < > positions  e explain  ? what  Esc back"), COLS, t->utf8);
	wattrset(w, A_NORMAL);
}

/* e: the selected cell in words: its top tokens with their probabilities and logits. */
static void
lens_explain_cell(Tui *t)
{
	char *text = lens_explain(t->s->model, t->lens, t->lens_layer, t->lens_pos, t->utf8);
	char title[64];

	snprintf(title, sizeof title, _("logit lens, layer %d, position %d"), t->lens_layer, t->lens_pos);
	tui_popup(t, title, text != NULL ? text : "");
	free(text);
}

void
tui_lens_key(Tui *t, int key)
{
	int rows, cols;

	lens_fit(t, &rows, &cols);
	switch (key) {
	case KEY_UP: case 'k': t->lens_layer--; break;
	case KEY_DOWN: case 'j': t->lens_layer++; break;
	case KEY_LEFT: case 'h': t->lens_pos--; break;
	case KEY_RIGHT: case 'l': t->lens_pos++; break;
	case KEY_PPAGE: t->lens_layer -= rows; break;
	case KEY_NPAGE: t->lens_layer += rows; break;
	case '<': case '[': case KEY_SLEFT: t->lens_pos -= cols; break;
	case '>': case ']': case KEY_SRIGHT: t->lens_pos += cols; break;
	case KEY_HOME: t->lens_pos = 0; break;
	case KEY_END: t->lens_pos = t->lens->n - 1; break;
	case 'g': t->lens_layer = 0; break;
	case 'G': t->lens_layer = t->lens->layers - 1; break;
	case 'e': case '\r': case '\n': case KEY_ENTER: lens_explain_cell(t); return;
	case '?':
		tui_popup(t, _("logit lens"),
		          _("Each cell is what the model would say next if it stopped after that layer: the layer's "
		            "output at that position (what enters the next layer; the last layer's is what the LM head "
		            "reads) through the final norm and the unembedding gives a logit per vocabulary token, "
		            "softmax turns them into probabilities, and the cell shows the most probable token and its "
		            "probability (shaded by it). The last layer's row is the model's own prediction. e explains "
		            "the selected cell with its top tokens; `lens LAYER POSITION` does the same as a command."));
		return;
	case ':': case 12: tui_key_main(t, key); return;
	case 27: case 'q': case 'L': tui_lens_close(t); return;
	default:
		if (key > 32 && key < 256)
			tui_msgf(t, 0, _("key %c does nothing in the logit lens; Esc returns to the model view"), key);
		return;
	}
	lens_scroll(t);
	t->redraw |= R_POPUP;
}
