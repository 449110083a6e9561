/* handout.c: a lesson as a handout for the class, in HTML (self-contained, printable) or Markdown. */
#include "out/handout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out/export.h"
#include "out/handout_internal.h"
#include "base/strbuf.h"
#include "base/text.h"

const Words ho_words_en = {
	.lang = "en", .step = "Step", .stage = "stage", .head = "head", .layer = "layer", .question = "Question",
	.answer_key = "Answer key", .answer_line = "Your answer:", .within = "answers within ", .within_end = " count",
	.steps = "steps", .made = "made with attnviz", .figure = "Figure", .answer = "Answer",
	.hidden = "the cells marked ? are what the question asks about",
};

const Words ho_words_zh = {
	.lang = "zh", .step = "第", .stage = "阶段", .head = "头", .layer = "层", .question = "问题",
	.answer_key = "答案", .answer_line = "你的答案：", .within = "误差不超过 ", .within_end = " 即算对",
	.steps = "步", .made = "由 attnviz 生成", .figure = "图", .answer = "答案",
	.hidden = "标 ? 的格子就是问题所问的内容",
};

int handout_key_find(const char *name)
{
	static const char *const names[] = { [HANDOUT_KEY_END] = "end", [HANDOUT_KEY_SEPARATE] = "separate",
		                                 [HANDOUT_KEY_NONE] = "none", [HANDOUT_KEY_NOTES] = "notes" };

	for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return i;
	return -1;
}

int handout_is_html(const char *path)
{
	const char *dot = strrchr(path, '.');

	if (dot == NULL || strchr(dot, '/') != NULL)
		return -1;
	if (strcmp(dot, ".html") == 0 || strcmp(dot, ".htm") == 0)
		return 1;
	if (strcmp(dot, ".md") == 0 || strcmp(dot, ".markdown") == 0)
		return 0;
	return -1;
}

void handout_free(Handout *h)
{
	for (int i = 0; i < h->n; i++) {
		free(h->file[i].path);
		free(h->file[i].data);
	}
	free(h->file);
	h->file = NULL;
	h->n = 0;
}

int ho_add_file(Handout *h, char *path, char *data)
{
	HandoutFile *f = realloc(h->file, sizeof *f * (size_t)(h->n + 1));

	if (f == NULL || path == NULL || data == NULL) {
		if (f != NULL)
			h->file = f;
		free(path);
		free(data);
		return -1;
	}
	h->file = f;
	h->file[h->n].path = path;
	h->file[h->n].data = data;
	h->file[h->n].png = 0;
	h->n++;
	return 0;
}

/* "Step 3" / "第 3 步" */
void ho_step_word(StrBuf *b, const Words *w, int k)
{
	if (strcmp(w->lang, "zh") == 0)
		strbuf_printf(b, "%s %d %s", w->step, k, w->steps);
	else
		strbuf_printf(b, "%s %d", w->step, k);
}

/* "stage scores · head 1 · layer 0" for the step shown (our words and catalogue names only). */
void ho_place_words(StrBuf *b, const Session *s, const Words *w)
{
	strbuf_printf(b, "%s %s", w->stage, stage_name(s->stage));
	if (s->attn->heads > 1)
		strbuf_printf(b, " \u00b7 %s %d", w->head, s->head);
	if (session_layers(s) > 1)
		strbuf_printf(b, " \u00b7 %s %d", w->layer, s->layer);
}

/* The step's narration: its text, or the stage's blurb when it has none. */
const char *ho_narration(const Session *s)
{
	const Step *st = session_step(s);
	const char *text = session_text(s, &st->text);

	return text != NULL && *text != '\0' ? text : stage_blurb(s->stage, s->lang);
}

/* What a step without a question says after its text ("then"), or NULL; a question's goes in the answer key. */
const char *ho_then_now(const Session *s)
{
	const char *then = session_step(s)->has_quiz ? NULL : session_then(s);
	return then != NULL && *then != '\0' ? then : NULL;
}

/* A question's "then", for the answer key: NULL when it has none. */
const char *ho_then_after(const Session *s)
{
	const Step *st = session_step(s);
	const char *then = st->has_quiz ? session_text(s, &st->then) : NULL;
	return then != NULL && *then != '\0' ? then : NULL;
}

/* Lesson text as one line of a Markdown paragraph (markup escaped). */
static void md_line(StrBuf *b, const char *text)
{
	export_md_puts(b, text, 1);
}

/*
 * Text as paragraphs: a blank line starts one (open … close), a newline
 * within one is br; each line goes through put (the format's escaping).
 */
static void paragraphs(StrBuf *b, const char *text, const char *open, const char *br, const char *close,
                       void (*put)(StrBuf *, const char *))
{
	const char *p = text;

	while (*p != '\0') {
		const char *end = strstr(p, "\n\n");
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char *para = strndup(p, len), *line, *save = NULL;
		int first = 1;

		strbuf_puts(b, open);
		for (line = para ? strtok_r(para, "\n", &save) : NULL; line != NULL; line = strtok_r(NULL, "\n", &save)) {
			if (!first)
				strbuf_puts(b, br);
			put(b, line);
			first = 0;
		}
		strbuf_puts(b, close);
		free(para);
		p += len;
		while (*p == '\n')
			p++;
	}
}

/* Text as HTML paragraphs of class cls (NULL: none). */
void ho_html_paragraphs(StrBuf *b, const char *text, const char *cls)
{
	char open[64];

	snprintf(open, sizeof open, "<p%s%s%s>", cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
	paragraphs(b, text, open, "<br/>", "</p>\n", export_xml_puts);
}

/* Text as Markdown paragraphs (a newline a hard break). */
static void md_paragraphs(StrBuf *b, const char *text)
{
	paragraphs(b, text, "", "\\\n", "\n\n", md_line);
}

/* The answer the quiz checks, as words: "2) No: …" or "weights[0][0] = 1 (answers within 0.01 count)". */
char *ho_answer_words(const Session *s, const Words *w)
{
	const Quiz *q = &session_step(s)->quiz;
	double v;

	if (q->nchoices > 0)
		return str_printf("%d) %s", q->answer_choice + 1, session_text(s, &q->choices[q->answer_choice]));
	if (session_quiz_value(s, &v) != 0)
		return strdup("?");
	return str_printf("%s[%d][%d] = %.6g (%s%g%s)", q->answer_cell.matrix, q->answer_cell.row, q->answer_cell.col, v,
	                  w->within, q->tolerance, w->within_end);
}

/* The step's figure: the stage as export svg draws it, the open question's pane without numbers. */
char *ho_step_figure(Session *s, const HandoutOptions *o, int reveal, char **err)
{
	ExportTarget t;

	if (export_target_parse(s->attn, NULL, s->stage, s->head, &t, err) != 0)
		return NULL;
	t.numbers = (ExportNumbers)o->numbers;
	if (o->precision >= 0)
		t.precision = o->precision;
	if (!reveal && session_quiz_pending(s) && session_hidden_matrix(s) >= 0) {
		t.has_hidden = 1;
		t.hidden = (AttnMatrix)session_hidden_matrix(s);
		/* every other pane the views hide: the question's "hides", a matrix holding the same numbers */
		for (int m = 0; m < AM_COUNT; m++)
			t.hides[m] = (unsigned char)session_hides(s, m, s->head);
	}
	return export_render(s->attn, s, EXPORT_SVG, &t, o->theme, err);
}

/*
 * An SVG for inside HTML: without its XML declaration and its namespace
 * (HTML gives <svg> its own, and the file then names no address at all), its
 * ids made unique by the step.
 */
void ho_html_svg(StrBuf *b, const char *svg, int k)
{
	static const char xmlns[] = " xmlns=\"http://www.w3.org/2000/svg\"";
	const char *p = svg, *ns;
	char prefix[32];

	if (strncmp(p, "<?xml", 5) == 0 && (p = strstr(p, "?>")) != NULL)
		p += 2 + (p[2] == '\n');
	else
		p = svg;
	if ((ns = strstr(p, xmlns)) != NULL && ns < strchr(p, '>')) {
		strbuf_add(b, p, (size_t)(ns - p));
		p = ns + sizeof xmlns - 1;
	}
	snprintf(prefix, sizeof prefix, "id=\"s%d-", k);
	for (const char *id; (id = strstr(p, "id=\"")) != NULL; p = id + 4) {
		strbuf_add(b, p, (size_t)(id - p));
		strbuf_puts(b, prefix);
	}
	strbuf_puts(b, p);
}

/* "-" and what a file name may keep as it is in a Markdown link; the rest %XX. */
static void md_link(StrBuf *b, const char *name)
{
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("-_.", *p))
			strbuf_add(b, (const char *)p, 1);
		else
			strbuf_printf(b, "%%%02X", *p);
}

static const char html_style[] =
	"<style>\n"
	":root { color-scheme: light; }\n"
	"body { font-family: \"DejaVu Serif\", Georgia, \"Noto Serif CJK SC\", serif; color: #111; background: #fff;\n"
	"       max-width: 52rem; margin: 2rem auto; padding: 0 1rem; line-height: 1.5; }\n"
	"h1 { font-size: 1.8rem; margin-bottom: 0.2rem; } h2 { font-size: 1.25rem; margin: 0 0 0.4rem; }\n"
	".summary { font-style: italic; } .meta { color: #555; font-size: 0.9rem; }\n"
	"section.step { border-top: 1px solid #ccc; padding-top: 1rem; margin-top: 1.5rem; }\n"
	"figure { margin: 0.8rem 0; } figure svg { max-width: 100%; height: auto; display: block; }\n"
	"figcaption { font-size: 0.85rem; color: #555; } .note { font-style: italic; color: #555; }\n"
	".formula { font-family: \"DejaVu Sans Mono\", Menlo, Consolas, monospace; background: #f5f5f5;\n"
	"           padding: 0.3rem 0.6rem; white-space: pre-wrap; }\n"
	".question { border: 1px solid #999; border-radius: 4px; padding: 0.4rem 0.8rem; }\n"
	".question ol { margin: 0.3rem 0; } .blank { border-bottom: 1px solid #333; display: inline-block; width: 12rem; }\n"
	"section.answers { border-top: 2px solid #333; margin-top: 2rem; padding-top: 1rem; }\n"
	"@page { size: auto; margin: 12mm; }\n"
	/* compact pages: a step is never cut, and as many steps share a page as fit (issue 26 §3: block.json was
	 * 15 half-empty pages); the figure floats right at most 60% wide and the text flows beside and under it */
	"@media print {\n"
	"  body { max-width: none; margin: 0; padding: 0; font-size: 10pt; line-height: 1.35; }\n"
	"  section.step { break-inside: avoid; display: flow-root; margin-top: 3mm; padding-top: 2mm; }\n"
	"  h2, figure, .question, .formula { break-inside: avoid; } h2 { break-after: avoid; font-size: 12pt; }\n"
	"  section.step figure { float: right; max-width: 60%; margin: 0 0 2mm 4mm; }\n"
	"  figure svg { max-width: 100%; max-height: 100mm; width: auto; height: auto; }\n"
	"  p { margin: 0 0 1.5mm; } .question { padding: 1mm 3mm; }\n"
	"  section.answers { break-before: page; border-top: none; }\n"
	"}\n"
	"</style>\n";

void ho_html_head(StrBuf *b, const Session *s, const Words *w, const char *style, const char *open, const char *close)
{
	const char *title = session_text(s, &s->lesson->title), *summary = session_text(s, &s->lesson->summary);

	strbuf_printf(b, "<!DOCTYPE html>\n<html lang=\"%s\">\n<head>\n<meta charset=\"utf-8\"/>\n"
	                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<title>",
	              w->lang);
	export_xml_puts(b, title ? title : "");
	strbuf_puts(b, "</title>\n");
	strbuf_puts(b, style);
	strbuf_printf(b, "</head>\n<body>\n%s\n<h1>", open);
	export_xml_puts(b, title ? title : "");
	strbuf_puts(b, "</h1>\n");
	if (summary != NULL && *summary != '\0')
		ho_html_paragraphs(b, summary, "summary");
	strbuf_printf(b, "<p class=\"meta\">%d %s \u00b7 %s</p>\n%s\n", s->nwalk, w->steps, w->made, close);
}

static void md_head(StrBuf *b, const Session *s, const Words *w)
{
	const char *title = session_text(s, &s->lesson->title), *summary = session_text(s, &s->lesson->summary);

	strbuf_puts(b, "# ");
	export_md_puts(b, title ? title : "", 1);
	strbuf_puts(b, "\n\n");
	if (summary != NULL && *summary != '\0')
		md_paragraphs(b, summary);
	strbuf_printf(b, "%d %s \u00b7 %s\n\n", s->nwalk, w->steps, w->made);
}

void ho_html_question(StrBuf *b, const Session *s, const Words *w, int k)
{
	const Quiz *q = &session_step(s)->quiz;

	strbuf_printf(b, "<div class=\"question\">\n<p><strong>%s %d.</strong> ", w->question, k + 1);
	export_xml_puts(b, session_text(s, &q->question));
	strbuf_puts(b, "</p>\n");
	if (q->nchoices > 0) {
		strbuf_puts(b, "<ol>\n");
		for (int i = 0; i < q->nchoices; i++) {
			strbuf_puts(b, "<li>");
			export_xml_puts(b, session_text(s, &q->choices[i]));
			strbuf_puts(b, "</li>\n");
		}
		strbuf_puts(b, "</ol>\n");
	} else {
		strbuf_printf(b, "<p>%s <span class=\"blank\"></span></p>\n", w->answer_line);
	}
	strbuf_puts(b, "</div>\n");
}

int ho_start(Handout *h, const char *path, int kind, const char *what, const char *expected, char **err)
{
	memset(h, 0, sizeof *h);
	*err = NULL;
	if (kind < 0) {
		char *safe = text_escape(path, "");
		*err = str_printf("%s: %s: expected %s", what, safe ? safe : "", expected);
		free(safe);
		return -1;
	}
	if (ho_add_file(h, strdup(path), strdup("")) != 0) {
		*err = str_printf("%s: out of memory", what);
		handout_free(h);
		return -1;
	}
	return 0;
}

/* One step: heading, narration, figure, formula, question. */
static void html_step(StrBuf *b, const Session *s, const Words *w, int k, const char *svg, const char *note)
{
	const Step *st = session_step(s);
	const char *formula = stage_formula(&s->attn->shape, s->stage, 1);
	const int hidden = session_quiz_pending(s) && session_hidden_matrix(s) >= 0;

	strbuf_printf(b, "<section class=\"step\" id=\"step-%d\">\n<h2>", k + 1);
	ho_step_word(b, w, k + 1);
	strbuf_puts(b, " \u00b7 ");
	ho_place_words(b, s, w);
	strbuf_puts(b, "</h2>\n");
	/* the figure before the text: printed, it floats right and the narration flows beside it */
	strbuf_puts(b, "<figure>\n");
	if (svg != NULL)
		ho_html_svg(b, svg, k + 1);
	else
		ho_html_paragraphs(b, note, "note");
	strbuf_printf(b, "<figcaption>%s %d", w->figure, k + 1);
	if (hidden && st->has_quiz)
		strbuf_printf(b, " \u2014 %s", w->hidden);
	strbuf_puts(b, "</figcaption>\n</figure>\n");
	ho_html_paragraphs(b, ho_narration(s), NULL);
	if (ho_then_now(s) != NULL)
		ho_html_paragraphs(b, ho_then_now(s), NULL);
	if (formula != NULL && *formula != '\0') {
		strbuf_puts(b, "<p class=\"formula\">");
		export_xml_puts(b, formula);
		strbuf_puts(b, "</p>\n");
	}
	if (st->has_quiz)
		ho_html_question(b, s, w, k);
	strbuf_puts(b, "</section>\n");
}

static void md_step(StrBuf *b, const Session *s, const Words *w, int k, const char *figure, const char *note)
{
	const Step *st = session_step(s);
	const char *formula = stage_formula(&s->attn->shape, s->stage, 1);

	strbuf_puts(b, "## ");
	ho_step_word(b, w, k + 1);
	strbuf_puts(b, " \u00b7 ");
	ho_place_words(b, s, w);
	strbuf_puts(b, "\n\n");
	md_paragraphs(b, ho_narration(s));
	if (ho_then_now(s) != NULL)
		md_paragraphs(b, ho_then_now(s));
	if (figure != NULL) {
		strbuf_printf(b, "![%s %d](", w->figure, k + 1);
		md_link(b, figure);
		strbuf_puts(b, ")\n\n");
	} else {
		strbuf_printf(b, "*%s %d:* ", w->figure, k + 1);
		export_md_puts(b, note, 1);
		strbuf_puts(b, "\n\n");
	}
	if (formula != NULL && *formula != '\0') {
		strbuf_puts(b, "> ");
		export_md_puts(b, formula, 1);
		strbuf_puts(b, "\n\n");
	}
	if (st->has_quiz) {
		const Quiz *q = &st->quiz;
		strbuf_printf(b, "**%s %d.** ", w->question, k + 1);
		export_md_puts(b, session_text(s, &q->question), 1);
		strbuf_puts(b, "\n\n");
		for (int i = 0; i < q->nchoices; i++) {
			strbuf_printf(b, "%d. ", i + 1);
			export_md_puts(b, session_text(s, &q->choices[i]), 1);
			strbuf_puts(b, "\n");
		}
		if (q->nchoices == 0)
			strbuf_printf(b, "%s \\_\\_\\_\\_\\_\\_\\_\\_\n", w->answer_line);
		strbuf_puts(b, "\n");
	}
}

/* The answer key's own file beside the handout: "notes.html" → "notes-key.html". Heap string. */
static char *key_path(const char *path)
{
	const char *dot = strrchr(path, '.');
	return str_printf("%.*s-key%s", (int)(dot - path), path, dot);
}

/* The answer key as a document of its own (--key separate): the lesson's title, then the key. */
static char *key_document(const Session *s, const Words *w, int html, const char *items)
{
	const char *title = session_text(s, &s->lesson->title);
	StrBuf b = { 0 };

	if (html) {
		strbuf_printf(&b, "<!DOCTYPE html>\n<html lang=\"%s\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>", w->lang);
		export_xml_puts(&b, title ? title : "");
		strbuf_printf(&b, " \u2014 %s</title>\n", w->answer_key);
		strbuf_puts(&b, html_style);
		strbuf_puts(&b, "</head>\n<body>\n<header>\n<h1>");
		export_xml_puts(&b, title ? title : "");
		strbuf_printf(&b, "</h1>\n</header>\n<section class=\"key\" id=\"answers\">\n<h2>%s</h2>\n<ol>\n%s</ol>\n"
		                  "</section>\n</body>\n</html>\n",
		              w->answer_key, items);
	} else {
		strbuf_puts(&b, "# ");
		export_md_puts(&b, title ? title : "", 1);
		strbuf_printf(&b, "\n\n## %s\n\n%s", w->answer_key, items);
	}
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* The figure's file beside the Markdown: "notes.md" → "notes-step03.svg". Heap string. */
static char *figure_path(const char *path, int k)
{
	const char *dot = strrchr(path, '.');
	return str_printf("%.*s-step%02d.svg", (int)(dot - path), path, k);
}

int handout_render(Session *s, const char *path, const HandoutOptions *o, Handout *h, char **err)
{
	const HandoutKey key_at = o->key;
	const Words *w = strcmp(s->lang, "zh") == 0 ? &ho_words_zh : &ho_words_en;
	const int html = handout_is_html(path);
	StrBuf b = { 0 }, key = { 0 };
	int nq = 0;

	if (ho_start(h, path, html, "handout", "FILE.html or FILE.md", err) != 0)
		return -1;
	if (html)
		ho_html_head(&b, s, w, html_style, "<header>", "</header>");
	else
		md_head(&b, s, w);
	for (int k = 0; k < s->nwalk; k++) {
		char *svg = NULL, *e = NULL;
		if (session_goto_step(s, k, &e) != 0) {
			*err = str_printf("handout: step %d: %s", k + 1, e ? e : "out of memory");
			free(e);
			goto fail;
		}
		/* a figure that cannot be drawn (--numbers on and a 456 × 456 matrix) says why in its place */
		if ((svg = ho_step_figure(s, o, 0, &e)) == NULL && e == NULL)
			goto oom;
		if (html) {
			html_step(&b, s, w, k, svg, e);
			free(svg);
		} else if (svg != NULL) {
			char *fp = figure_path(path, k + 1);
			const char *slash = fp ? strrchr(fp, '/') : NULL;
			md_step(&b, s, w, k, fp ? (slash ? slash + 1 : fp) : "", NULL);
			if (ho_add_file(h, fp, svg) != 0)
				goto oom;
		} else {
			md_step(&b, s, w, k, NULL, e);
		}
		free(e);
		if (session_step(s)->has_quiz) {
			char *ans = ho_answer_words(s, w);
			if (html) {
				strbuf_printf(&key, "<li value=\"%d\">", k + 1);
				ho_step_word(&key, w, k + 1);
				strbuf_puts(&key, ": ");
				export_xml_puts(&key, ans ? ans : "?");
				if (ho_then_after(s) != NULL)
					ho_html_paragraphs(&key, ho_then_after(s), "then");
				strbuf_puts(&key, "</li>\n");
			} else {
				strbuf_puts(&key, "- ");
				ho_step_word(&key, w, k + 1);
				strbuf_puts(&key, ": ");
				export_md_puts(&key, ans ? ans : "?", 1);
				if (ho_then_after(s) != NULL) {
					/* the item's own paragraph: each line indented under it */
					char *then = strdup(ho_then_after(s));
					for (char *p = then; p != NULL && *p != '\0'; p++)
						if (*p == '\n')
							*p = ' ';
					strbuf_puts(&key, "\n\n  ");
					export_md_puts(&key, then ? then : "", 1);
					free(then);
				}
				strbuf_puts(&key, "\n");
			}
			free(ans);
			nq++;
		}
	}
	if (nq > 0 && key_at == HANDOUT_KEY_SEPARATE) {
		/* written before the handout (run_handout writes the files last to first) */
		if (key.oom || ho_add_file(h, key_path(path), key_document(s, w, html, key.s ? key.s : "")) != 0)
			goto oom;
	} else if (nq > 0 && key_at == HANDOUT_KEY_NONE) {
		/* the students' copy: no answers */
	} else if (nq > 0 && html)
		strbuf_printf(&b, "<section class=\"answers\" id=\"answers\">\n<h2>%s</h2>\n<ol>\n%s</ol>\n</section>\n",
		              w->answer_key, key.s ? key.s : "");
	else if (nq > 0)
		strbuf_printf(&b, "---\n\n## %s\n\n%s", w->answer_key, key.s ? key.s : "");
	if (html)
		strbuf_puts(&b, "</body>\n</html>\n");
	if (b.oom || key.oom)
		goto oom;
	free(h->file[0].data);
	h->file[0].data = b.s;
	free(key.s);
	return 0;
oom:
	*err = strdup("handout: out of memory");
fail:
	free(b.s);
	free(key.s);
	handout_free(h);
	return -1;
}
