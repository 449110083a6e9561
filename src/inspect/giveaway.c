/*
 * giveaway.c: the "predict, then check" rule checked. What a learner reads
 * before answering a question (the step's "text", the stage's formula) must
 * not hold the answer: the number asked for at the precision the screen
 * shows it, or the right choice's words; nor may a pane shown beside a
 * choice question answer it by its order (order_given). What is said after
 * the answer belongs in the step's "then"; a pane that tells, in "hides".
 */
#include "inspect/giveaway.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/i18n.h"
#include "base/strbuf.h"
#include "base/text.h"
#include "inspect/labels.h"
#include "lesson/lesson.h"
#include "model/catalog.h"

#define GA_MAX_WORDS 512
#define GA_WORD 32

/* A text's words: ASCII words lowercased ("d_k", "256"), and Chinese as single characters or pairs. */
typedef struct Words {
	int n;
	char w[GA_MAX_WORDS][GA_WORD];
} Words;

static void words_add(Words *ws, const char *s, size_t len)
{
	if (ws->n >= GA_MAX_WORDS || len == 0 || len >= GA_WORD)
		return;
	for (int i = 0; i < ws->n; i++)
		if (strncmp(ws->w[i], s, len) == 0 && ws->w[i][len] == '\0')
			return;
	memcpy(ws->w[ws->n], s, len);
	ws->w[ws->n][len] = '\0';
	ws->n++;
}

/* 1 when the three bytes at p are a CJK ideograph (U+4E00 … U+9FFF). */
static int cjk_at(const unsigned char *p)
{
	return p[0] >= 0xe4 && p[0] <= 0xe9 && (p[1] & 0xc0) == 0x80 && (p[2] & 0xc0) == 0x80;
}

static void words_of(const char *text, Words *ws)
{
	const unsigned char *p = (const unsigned char *)(text ? text : "");

	ws->n = 0;
	while (*p != '\0') {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_') {
			char buf[GA_WORD];
			size_t len = 0;
			/* "0.2138" is one word, not 0 and 2138 */
			while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
			       (*p == '.' && len > 0 && buf[len - 1] >= '0' && buf[len - 1] <= '9' && p[1] >= '0' && p[1] <= '9')) {
				if (len < sizeof buf - 1)
					buf[len++] = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
				p++;
			}
			words_add(ws, buf, len);
		} else if (cjk_at(p)) {
			const unsigned char *q = p;
			int run = 0;
			while (cjk_at(q)) {
				q += 3;
				run++;
			}
			if (run == 1)
				words_add(ws, (const char *)p, 3);
			for (int i = 0; i + 1 < run; i++)
				words_add(ws, (const char *)p + 3 * i, 6);
			p = q;
		} else
			p++;
	}
}

static int words_has(const Words *ws, const char *w)
{
	for (int i = 0; i < ws->n; i++)
		if (strcmp(ws->w[i], w) == 0)
			return 1;
	return 0;
}

/* Words that say nothing about which choice is right. */
static int stopword(const char *w)
{
	static const char *const stop[] = { "a", "an", "the", "of", "and", "or", "to", "in", "on", "is", "it", "its", "by",
		                            "as", "at", "be", "for", "with", "from", "than", "that", "this", "are", "yes", "no",
		                            "not", "only", "each", "every", "same", "one", "s", "they", "them", "their",
		                            "\u548c", "\u7684", "\u662f", "\u5728", "\u4e86", "\u4e5f", NULL }; /* 和 的 是 在 了 也 */
	for (int i = 0; stop[i] != NULL; i++)
		if (strcmp(w, stop[i]) == 0)
			return 1;
	return 0;
}

/* s with the minus sign U+2212 as '-', ASCII lowercased, `commands to type` left out: heap string. */
static char *plain_copy(const char *s)
{
	StrBuf b = { 0 };

	for (const char *p = s ? s : ""; *p != '\0'; p++) {
		if (*p == '`' && strchr(p + 1, '`') != NULL) {
			p = strchr(p + 1, '`');
			strbuf_add(&b, " ", 1);
		} else if (strncmp(p, "\u2212", 3) == 0) {
			strbuf_add(&b, "-", 1);
			p += 2;
		} else {
			const char c = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
			strbuf_add(&b, &c, 1);
		}
	}
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s ? b.s : strdup("");
}

/* 1 when number `num` appears in hay as a whole number (no digit, point or sign glued to it). */
static int has_number(const char *hay, const char *num)
{
	const size_t len = strlen(num);

	for (const char *p = strstr(hay, num); p != NULL; p = strstr(p + 1, num)) {
		const char before = p > hay ? p[-1] : ' ', after = p[len];
		if ((before >= '0' && before <= '9') || before == '.' || (num[0] != '-' && before == '-'))
			continue;
		if ((after >= '0' && after <= '9') || (after == '.' && p[len + 1] >= '0' && p[len + 1] <= '9'))
			continue;
		return 1;
	}
	return 0;
}

/* The numeric answer v in what is visible: "0.41" (a pane), "0.412", "0.4121" (the status line). */
static int number_given(const char *vis, double v, char *shown, size_t size)
{
	for (int digits = 2; digits <= 4; digits++) {
		char num[48];
		snprintf(num, sizeof num, "%.*f", digits, v);
		if (strcmp(num, "-0.00") == 0 || strcmp(num, "-0.000") == 0 || strcmp(num, "-0.0000") == 0)
			memmove(num, num + 1, strlen(num));
		if (has_number(vis, num)) {
			snprintf(shown, size, "%s", num);
			return 1;
		}
	}
	return 0;
}

/* The right choice given away: its text whole, or at least half of its distinctive words. */
static int choice_given(const char *vis, const Quiz *q, const char *lang, char *shown, size_t size)
{
	static Words right, other, vw;
	char *whole = plain_copy(text_get(&q->choices[q->answer_choice], lang)), *question;
	size_t len;
	int ndist = 0, found = 0, hit = 0;

	if (whole == NULL)
		return 0;
	/* the whole choice, without its full stop, unless the question says it too */
	len = strlen(whole);
	while (len > 0 && (whole[len - 1] == '.' || whole[len - 1] == ' '))
		whole[--len] = '\0';
	if (len >= 3 && strstr(vis, whole) != NULL) {
		question = plain_copy(text_get(&q->question, lang));
		if (question != NULL && strstr(question, whole) == NULL) {
			snprintf(shown, size, "\"%s\"", whole);
			hit = 1;
		}
		free(question);
	}
	free(whole);
	if (hit)
		return 1;
	words_of(text_get(&q->choices[q->answer_choice], lang), &right);
	words_of(vis, &vw);
	shown[0] = '\0';
	for (int i = 0; i < right.n; i++) {
		int mine = !stopword(right.w[i]);
		for (int k = 0; mine && k < q->nchoices; k++) {
			if (k == q->answer_choice)
				continue;
			words_of(text_get(&q->choices[k], lang), &other);
			mine = !words_has(&other, right.w[i]);
		}
		if (mine) {
			words_of(text_get(&q->question, lang), &other);
			mine = !words_has(&other, right.w[i]);
		}
		if (!mine)
			continue;
		ndist++;
		if (words_has(&vw, right.w[i])) {
			found++;
			if (strlen(shown) + strlen(right.w[i]) + 4 < size)
				snprintf(shown + strlen(shown), size - strlen(shown), "%s\"%s\"", shown[0] ? ", " : "", right.w[i]);
		}
	}
	return ndist > 0 && found > 0 && 2 * found >= ndist;
}

/* 1 when label lab (plain_copy'd) is in text t: an ASCII label as a whole word, any other as it is written. */
static int label_in(const char *t, const char *lab)
{
	static Words ws;
	int ascii = 1;

	for (const char *p = lab; *p != '\0'; p++)
		ascii &= (unsigned char)*p < 0x80;
	if (!ascii)
		return strstr(t, lab) != NULL;
	words_of(t, &ws);
	return words_has(&ws, lab);
}

/* The label of the column of row r's largest finite value (plain_copy'd, heap), or NULL. */
static char *row_top_label(const Attn *a, AttnMatrix which, const Mat *m, int r)
{
	int best = -1;

	for (int c = 0; c < m->cols; c++)
		if (isfinite(MAT_AT(*m, r, c)) && (best < 0 || MAT_AT(*m, r, c) > MAT_AT(*m, r, best)))
			best = c;
	if (best < 0)
		return NULL;
	char *l = labels_col(a, which, best), *p = plain_copy(l);
	free(l);
	return p;
}

/*
 * A choice given away by order: the right choice names the key that a row
 * of the hidden result (the stage's last matrix) weighs most, no wrong
 * choice names it, and a pane the step shows beside it has that row's
 * largest value at the same key (softmax keeps the order: the masked scores
 * beside a question on the weights answer it). The row: the step's focus,
 * else any.
 */
static int order_given(const Attn *la, const Step *st, const char *lang, char *shown, size_t size)
{
	AttnMatrix panes[STAGE_MAX_PANES];
	const Quiz *q = &st->quiz;
	const int count = attn_stage_matrices(la, st->stage, panes), head = st->head < la->heads ? st->head : 0;
	const AttnMatrix res = count > 0 ? panes[count - 1] : AM_COUNT;
	const Mat *rm = count > 1 ? attn_matrix(la, res, head) : NULL;
	int given = 0;

	if (rm == NULL || !labels_token_columns(la, res))
		return 0;
	char *right = plain_copy(text_get(&q->choices[q->answer_choice], lang));
	for (int r = 0; right != NULL && r < rm->rows && !given; r++) {
		if (st->has_focus && st->focus.row >= 0 && st->focus.row < rm->rows && r != st->focus.row)
			continue;
		char *lab = row_top_label(la, res, rm, r);
		int mine = lab != NULL && *lab != '\0' && label_in(right, lab);
		for (int k = 0; mine && k < q->nchoices; k++)
			if (k != q->answer_choice) {
				char *other = plain_copy(text_get(&q->choices[k], lang));
				mine = other != NULL && !label_in(other, lab);
				free(other);
			}
		for (int i = 0; mine && i < count - 1 && !given; i++) {
			const Mat *v = attn_matrix(la, panes[i], head);
			int hidden = 0;
			for (int k = 0; k < q->nhides; k++)
				hidden |= matrix_find(q->hides[k]) == (int)panes[i];
			if (hidden || v == NULL || v->rows != rm->rows || v->cols != rm->cols || !labels_token_columns(la, panes[i]))
				continue;
			char *vl = row_top_label(la, panes[i], v, r);
			if (vl != NULL && strcmp(vl, lab) == 0) {
				/* TRANSLATORS: a pane shown, its row, the key where it is largest; the hidden matrix, the same row */
				snprintf(shown, size, _("%s[%d] is largest at %s, as %s[%d]"), matrix_name(panes[i]), r, lab,
				         matrix_name(res), r);
				given = 1;
			}
			free(vl);
		}
		free(lab);
	}
	free(right);
	return given;
}

int giveaway_check(const Attn *a, const char *const *langs, char **report)
{
	const Lesson *l = a->top;
	StrBuf b = { 0 };
	int count = 0;

	if (report != NULL && *report != NULL) {
		b.s = *report;
		b.len = strlen(b.s);
		b.cap = b.len + 1;
		*report = NULL;
	}
	for (int i = 0; l != NULL && i < l->nsteps; i++) {
		const Step *st = &l->steps[i];
		const Attn *la = attn_layer(st->encoder && a->encoder != NULL ? a->encoder : a, st->layer);
		const Quiz *q = &st->quiz;

		if (!st->has_quiz || la == NULL)
			continue;
		for (int k = 0; langs != NULL && langs[k] != NULL; k++) {
			const char *formula = stage_formula(&la->shape, st->stage, 1);
			char *both = str_printf("%s\n%s", text_get(&st->text, langs[k]) ? text_get(&st->text, langs[k]) : "",
			                        formula ? formula : ""), *vis = plain_copy(both);
			char shown[160];
			int given = 0;
			free(both);
			if (vis == NULL)
				continue;
			if (q->nchoices > 0 && (given = order_given(la, st, langs[k], shown, sizeof shown)) != 0) {
				free(vis);
				strbuf_printf(&b, _("%s: steps[%d]: warning: the answer can be read before it is answered: %s, a pane "
				                    "shown beside the question (name it in \"hides\")\n"),
				              l->path ? l->path : "(lesson)", i, shown);
				count++;
				break; /* the numbers are the same in every language */
			}
			if (q->nchoices > 0)
				given = choice_given(vis, q, langs[k], shown, sizeof shown);
			else {
				const int which = matrix_find(q->answer_cell.matrix);
				const Mat *m = which < 0 ? NULL : attn_matrix(la, (AttnMatrix)which, q->answer_cell.head);
				if (m != NULL && q->answer_cell.row < m->rows && q->answer_cell.col < m->cols &&
				    isfinite(MAT_AT(*m, q->answer_cell.row, q->answer_cell.col)))
					given = number_given(vis, MAT_AT(*m, q->answer_cell.row, q->answer_cell.col), shown, sizeof shown);
			}
			free(vis);
			if (!given)
				continue;
			strbuf_printf(&b, _("%s: steps[%d]: warning: the answer can be read before it is answered: %s in the \"%s\" "
			                    "text or the formula (say it in \"then\")\n"),
			              l->path ? l->path : "(lesson)", i, shown, langs[k]);
			count++;
		}
	}
	if (report != NULL && b.len > 0 && !b.oom)
		*report = b.s;
	else
		free(b.s);
	return count;
}
