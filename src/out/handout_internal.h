/*
 * handout_internal.h: what handout.c shares with slides.c (a lesson as slides
 * is a handout cut at each step), and nothing else includes. The public
 * interfaces are out/handout.h and out/slides.h.
 */
#ifndef ATTNVIZ_HANDOUT_INTERNAL_H
#define ATTNVIZ_HANDOUT_INTERNAL_H

#include "out/handout.h"
#include "base/strbuf.h"

/* Our own words, in the handout's (or the deck's) language. */
typedef struct Words {
	const char *lang, *step, *stage, *head, *layer, *question, *answer_key, *answer_line, *within, *within_end, *steps, *made,
	    *figure, *hidden, *answer;
} Words;

extern const Words ho_words_en, ho_words_zh;

/* Adds a file (path, data: heap, taken over, freed on failure) to h: 0, or -1 out of memory. */
int ho_add_file(Handout *h, char *path, char *data);
/* "Step 3" / "第 3 步" */
void ho_step_word(StrBuf *b, const Words *w, int k);
/* "stage scores · head 1 · layer 0" for the step shown (our words and catalogue names only). */
void ho_place_words(StrBuf *b, const Session *s, const Words *w);
/* The step's narration: its text, or the stage's blurb when it has none. */
const char *ho_narration(const Session *s);
/* What a step without a question says after its text ("then"), or NULL; a question's goes with its answer. */
const char *ho_then_now(const Session *s);
/* A question's "then", told with its answer: NULL when it has none. */
const char *ho_then_after(const Session *s);
/* Text as HTML paragraphs of class cls (NULL: none), escaped. */
void ho_html_paragraphs(StrBuf *b, const char *text, const char *cls);
/* The answer the quiz checks, as words: "2) No: …" or "weights[0][0] = 1 (answers within 0.01 count)". Heap. */
char *ho_answer_words(const Session *s, const Words *w);
/*
 * The step's figure: the stage as export svg draws it, the open question's
 * pane without numbers (reveal: with them, for the answer). Heap SVG, or NULL
 * with *err saying why it cannot be drawn (NULL *err: out of memory).
 */
char *ho_step_figure(Session *s, const HandoutOptions *o, int reveal, char **err);
/*
 * The start of an HTML handout or deck: doctype, head (its title, style: a
 * <style> element), then the lesson's title, summary and step count between
 * open and close (<header>, or the deck's title slide).
 */
void ho_html_head(StrBuf *b, const Session *s, const Words *w, const char *style, const char *open, const char *close);
/* A step's question as HTML: its words, its numbered choices or a line to write the answer on. */
void ho_html_question(StrBuf *b, const Session *s, const Words *w, int k);
/*
 * The start of a handout or a deck: h emptied, path (kind < 0: a format not
 * known, said in *err as "WHAT: PATH: expected EXPECTED") its first file, to
 * be filled last. 0, or -1 with *err.
 */
int ho_start(Handout *h, const char *path, int kind, const char *what, const char *expected, char **err);
/* An SVG inside HTML: no XML declaration or namespace, its ids made unique by k. */
void ho_html_svg(StrBuf *b, const char *svg, int k);

#endif
