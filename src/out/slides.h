/* slides.h: a lesson as slides for the class (`--slides LESSON -o DECK.html|DECK.tex`).
 *
 * One slide per step of the walk: its place (stage, head, layer) as the
 * slide's title, its figure (export_svg.c's SVG, the open question's pane
 * without its numbers), its formula and its question; the narration (and a
 * step's "then") as the speaker notes. Ask before you tell (issue 25): a
 * question's answer is never on its own slide — with --key end (the default)
 * it is the next slide (the figure with its numbers, the answer, the
 * question's "then"), with --key notes in the question's speaker notes only,
 * with --key none nowhere. A title slide first.
 *
 * HTML: one self-contained file (the figures inline, the style and a few
 * lines of script in it, nothing loaded from elsewhere; well-formed XML too):
 * arrow keys, space, PgUp/PgDn, Home/End move between slides, #slide-N in the
 * address opens one; printed, one slide a 16:9 page; the notes are
 * <aside class="notes">, not shown. TeX: a beamer deck (16:9) for xelatex
 * (xeCJK and the Fandol fonts for Chinese), a frame per slide, the notes as
 * \note{…} (\setbeameroption{show notes on second screen} shows them), the
 * figures PNG files beside it (DECK-stepNN.png, DECK-stepNN-answer.png;
 * HandoutFile.png: written through rsvg-convert). Lesson text is escaped for
 * the format (export_xml_puts, export_tex_puts).
 */
#ifndef ATTNVIZ_SLIDES_H
#define ATTNVIZ_SLIDES_H

#include "out/handout.h"

/* 1 for DECK.html / DECK.htm, 0 for DECK.tex, -1 for anything else. */
int slides_is_html(const char *path);

/*
 * The slides of session s's lesson in the language s->lang, to be written at
 * path (its extension says the format), made as o says (o->key: end, notes or
 * none). Moves s through its walk. Returns 0 with *h filled (handout_free:
 * the deck first, then its figures), or -1 with *err ("slides: …").
 */
int slides_render(Session *s, const char *path, const HandoutOptions *o, Handout *h, char **err);

#endif
