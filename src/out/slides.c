/* slides.c: a lesson as slides, one a step: self-contained HTML, or a beamer deck for xelatex. */
#include "out/slides.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "out/export.h"
#include "out/handout_internal.h"
#include "base/strbuf.h"
#include "base/text.h"

int slides_is_html(const char *path)
{
	const char *dot = strrchr(path, '.');

	if (dot == NULL || strchr(dot, '/') != NULL)
		return -1;
	if (strcmp(dot, ".html") == 0 || strcmp(dot, ".htm") == 0)
		return 1;
	return strcmp(dot, ".tex") == 0 ? 0 : -1;
}

/* What one slide shows, gathered from the step the session stands on. */
typedef struct Slide {
	int k;              /* the step, 0-based */
	int answer;         /* 1: the answer slide after the question */
	const char *svg;    /* the figure, or NULL with note saying why it is not drawn */
	const char *note;
	const char *figure; /* TeX: the figure's file name beside the deck */
} Slide;

/* "Step 3 · stage scores · head 1" / "Answer 3 · stage scores" */
static void slide_title(StrBuf *b, const Session *s, const Words *w, const Slide *sl)
{
	if (sl->answer)
		strbuf_printf(b, "%s %d", w->answer, sl->k + 1);
	else
		ho_step_word(b, w, sl->k + 1);
	strbuf_puts(b, " \u00b7 ");
	ho_place_words(b, s, w);
}

/* ------------------------------------------------------------ HTML */

static const char html_style[] =
	"<style>\n"
	":root { color-scheme: light; }\n"
	"html, body { margin: 0; padding: 0; background: #333; }\n"
	"body { font-family: \"DejaVu Sans\", Helvetica, Arial, \"Noto Sans CJK SC\", sans-serif; color: #111; }\n"
	"section.slide { display: none; box-sizing: border-box; width: 100vw; height: 100vh; padding: 2.5vh 4vw;\n"
	"                background: #fff; overflow: hidden; flex-direction: column; font-size: 2.6vh; }\n"
	"section.slide.current { display: flex; }\n"
	"h1 { font-size: 6vh; margin: 20vh 0 2vh; } h2 { font-size: 4vh; margin: 0 0 1vh; }\n"
	".summary { font-size: 3vh; } .meta { color: #555; }\n"
	"figure { flex: 1 1 auto; min-height: 0; margin: 0; display: flex; flex-direction: column; }\n"
	"figure svg { flex: 1 1 auto; min-height: 0; width: 100%; height: 100%; display: block; }\n"
	"figcaption, .note { color: #555; font-size: 2vh; }\n"
	".formula { font-family: \"DejaVu Sans Mono\", Menlo, Consolas, monospace; background: #f5f5f5;\n"
	"           padding: 0.5vh 1vw; margin: 1vh 0; white-space: pre-wrap; }\n"
	".question, .answer { border: 1px solid #999; border-radius: 4px; padding: 0.5vh 1vw; margin: 0; }\n"
	".question p, .answer p { margin: 0.4vh 0; } .question ol { margin: 0.4vh 0; }\n"
	".blank { border-bottom: 1px solid #333; display: inline-block; width: 12em; }\n"
	"aside.notes { display: none; }\n"
	"@page { size: 254mm 142.875mm; margin: 0; }\n"
	"@media print {\n"
	"  html, body { background: #fff; }\n"
	"  section.slide, section.slide.current { display: flex; width: 254mm; height: 142.875mm; font-size: 11pt;\n"
	"                  break-after: page; page-break-after: always; break-inside: avoid; }\n"
	"  h1 { font-size: 24pt; margin-top: 40mm; } h2 { font-size: 16pt; }\n"
	"}\n"
	"</style>\n";

/* The few lines that move between slides: no address, no "<" or "&" (the file is XML too). */
static const char html_script[] =
	"<script>\n"
	"(function () {\n"
	"  var s = document.querySelectorAll('section.slide'), i = 0;\n"
	"  function show(n) {\n"
	"    i = Math.max(0, Math.min(s.length - 1, n));\n"
	"    Array.prototype.forEach.call(s, function (e, k) { e.className = k === i ? e.dataset.cls + ' current' : e.dataset.cls; });\n"
	"    history.replaceState(null, '', '#' + s[i].id);\n"
	"  }\n"
	"  Array.prototype.forEach.call(s, function (e) { e.dataset.cls = e.className; });\n"
	"  document.addEventListener('keydown', function (e) {\n"
	"    var next = { ArrowRight: 1, ArrowDown: 1, PageDown: 1, ' ': 1, ArrowLeft: -1, ArrowUp: -1, PageUp: -1 }[e.key];\n"
	"    if (e.key === 'Home') show(0);\n"
	"    else if (e.key === 'End') show(s.length - 1);\n"
	"    else if (next) show(i + next);\n"
	"    else return;\n"
	"    e.preventDefault();\n"
	"  });\n"
	"  var m = /^#slide-([0-9]+)$/.exec(location.hash);\n"
	"  show(m ? Number(m[1]) - 1 : 0);\n"
	"})();\n"
	"</script>\n";

static void html_figure(StrBuf *b, const Slide *sl, int id)
{
	strbuf_puts(b, "<figure>\n");
	if (sl->svg != NULL)
		ho_html_svg(b, sl->svg, id);
	else
		ho_html_paragraphs(b, sl->note ? sl->note : "", "note");
	strbuf_puts(b, "</figure>\n");
}

/* A step's slide: title, figure, formula, question; the narration in the notes (and the answer, --key notes). */
static void html_step(StrBuf *b, const Session *s, const Words *w, const Slide *sl, int id, HandoutKey key)
{
	const Step *st = session_step(s);
	const char *formula = stage_formula(&s->attn->shape, s->stage, 1);

	strbuf_printf(b, "<section class=\"slide\" id=\"slide-%d\" data-step=\"%d\">\n<h2>", id, sl->k + 1);
	slide_title(b, s, w, sl);
	strbuf_puts(b, "</h2>\n");
	html_figure(b, sl, id);
	if (formula != NULL && *formula != '\0') {
		strbuf_puts(b, "<p class=\"formula\">");
		export_xml_puts(b, formula);
		strbuf_puts(b, "</p>\n");
	}
	if (st->has_quiz)
		ho_html_question(b, s, w, sl->k);
	strbuf_puts(b, "<aside class=\"notes\">\n");
	ho_html_paragraphs(b, ho_narration(s), NULL);
	if (ho_then_now(s) != NULL)
		ho_html_paragraphs(b, ho_then_now(s), NULL);
	if (st->has_quiz && key == HANDOUT_KEY_NOTES) {
		char *ans = ho_answer_words(s, w);
		strbuf_printf(b, "<p class=\"answer\">%s: ", w->answer);
		export_xml_puts(b, ans ? ans : "?");
		strbuf_puts(b, "</p>\n");
		if (ho_then_after(s) != NULL)
			ho_html_paragraphs(b, ho_then_after(s), NULL);
		free(ans);
	}
	strbuf_puts(b, "</aside>\n</section>\n");
}

/* The answer's slide, after its question's: the figure with its numbers, the answer, the question's "then". */
static void html_answer(StrBuf *b, const Session *s, const Words *w, const Slide *sl, int id)
{
	char *ans = ho_answer_words(s, w);

	strbuf_printf(b, "<section class=\"slide answer\" id=\"slide-%d\" data-step=\"%d\">\n<h2>", id, sl->k + 1);
	slide_title(b, s, w, sl);
	strbuf_puts(b, "</h2>\n");
	html_figure(b, sl, id);
	strbuf_printf(b, "<div class=\"answer\">\n<p><strong>%s %d:</strong> ", w->answer, sl->k + 1);
	export_xml_puts(b, ans ? ans : "?");
	strbuf_puts(b, "</p>\n");
	if (ho_then_after(s) != NULL)
		ho_html_paragraphs(b, ho_then_after(s), NULL);
	strbuf_puts(b, "</div>\n</section>\n");
	free(ans);
}

/* ------------------------------------------------------------ TeX (beamer) */

static void tex_figure(StrBuf *b, const Slide *sl, int with_question)
{
	if (sl->svg == NULL) {
		strbuf_puts(b, "{\\small ");
		export_tex_puts(b, sl->note ? sl->note : "");
		strbuf_puts(b, "}\\par\n");
		return;
	}
	/* the figure as large as the frame leaves it: less tall when a question sits under it */
	strbuf_printf(b, "\\begin{center}\n\\includegraphics[width=\\linewidth,height=%s\\textheight,keepaspectratio]{",
	              with_question ? "0.5" : "0.68");
	strbuf_puts(b, sl->figure);
	strbuf_puts(b, "}\n\\end{center}\n");
}

static void tex_frame_open(StrBuf *b, const Session *s, const Words *w, const Slide *sl)
{
	StrBuf t = { 0 };

	slide_title(&t, s, w, sl);
	strbuf_puts(b, "\\begin{frame}{");
	export_tex_puts(b, t.s ? t.s : "");
	strbuf_puts(b, "}\n");
	free(t.s);
}

/* The answer and the question's "then", for a frame (answer) or its notes. */
static void tex_answer_words(StrBuf *b, const Session *s, const Words *w, int k)
{
	char *ans = ho_answer_words(s, w);

	strbuf_printf(b, "\\textbf{%s %d:} ", w->answer, k + 1);
	export_tex_puts(b, ans ? ans : "?");
	if (ho_then_after(s) != NULL) {
		strbuf_puts(b, "\\par ");
		export_tex_puts(b, ho_then_after(s));
	}
	free(ans);
}

static void tex_step(StrBuf *b, const Session *s, const Words *w, const Slide *sl, HandoutKey key)
{
	const Step *st = session_step(s);

	tex_frame_open(b, s, w, sl);
	tex_figure(b, sl, st->has_quiz);
	strbuf_puts(b, "{\\small\n");
	export_tex_formula(b, stage_formula(&s->attn->shape, s->stage, 1), stage_formula(&s->attn->shape, s->stage, 0));
	strbuf_puts(b, "}\n");
	if (st->has_quiz) {
		const Quiz *q = &st->quiz;
		strbuf_printf(b, "\\begin{block}{%s %d}\n\\small ", w->question, sl->k + 1);
		export_tex_puts(b, session_text(s, &q->question));
		strbuf_puts(b, "\n");
		if (q->nchoices > 0) {
			strbuf_puts(b, "\\begin{enumerate}\n");
			for (int i = 0; i < q->nchoices; i++) {
				strbuf_puts(b, "\\item ");
				export_tex_puts(b, session_text(s, &q->choices[i]));
				strbuf_puts(b, "\n");
			}
			strbuf_puts(b, "\\end{enumerate}\n");
		} else
			strbuf_printf(b, "\\par %s \\rule{12em}{0.4pt}\n", w->answer_line);
		strbuf_puts(b, "\\end{block}\n");
	}
	strbuf_puts(b, "\\note{");
	export_tex_puts(b, ho_narration(s));
	if (ho_then_now(s) != NULL) {
		strbuf_puts(b, "\\par ");
		export_tex_puts(b, ho_then_now(s));
	}
	if (st->has_quiz && key == HANDOUT_KEY_NOTES) {
		strbuf_puts(b, "\\par ");
		tex_answer_words(b, s, w, sl->k);
	}
	strbuf_puts(b, "}\n\\end{frame}\n\n");
}

static void tex_answer(StrBuf *b, const Session *s, const Words *w, const Slide *sl)
{
	tex_frame_open(b, s, w, sl);
	tex_figure(b, sl, 1);
	strbuf_puts(b, "\\begin{block}{}\n\\small ");
	tex_answer_words(b, s, w, sl->k);
	strbuf_puts(b, "\n\\end{block}\n\\end{frame}\n\n");
}

/* The preamble, written once the body is known (xeCJK when any of it is Chinese), and the title frame. */
static void tex_head(StrBuf *b, const Session *s, const Words *w, int cjk)
{
	const char *title = session_text(s, &s->lesson->title), *summary = session_text(s, &s->lesson->summary);

	cjk |= (title != NULL && export_tex_cjk(title)) || (summary != NULL && export_tex_cjk(summary));
	strbuf_puts(b, "% attnviz slides: ");
	export_tex_puts(b, title ? title : "");
	strbuf_printf(b, "\n%% compile with xelatex%s; TeX Live: texlive-xetex, texlive-latex-recommended (beamer)%s\n"
	                 "%% the figures are the PNG files beside this one; the narration is in \\note{} (see below)\n",
	              cjk ? " (Chinese with xeCJK and the Fandol fonts)" : "", cjk ? ", texlive-lang-chinese" : "");
	strbuf_puts(b, "\\documentclass[aspectratio=169]{beamer}\n\\usepackage{amsmath}\n\\usepackage{graphicx}\n"
	               "\\usepackage{fontspec}\n");
	if (cjk)
		strbuf_puts(b, "\\usepackage{xeCJK}\n\\setCJKmainfont{FandolSong-Regular.otf}[BoldFont=FandolSong-Bold.otf]\n"
		               "\\setCJKsansfont{FandolHei-Regular.otf}[BoldFont=FandolHei-Bold.otf]\n");
	strbuf_puts(b, "\\setbeamertemplate{navigation symbols}{}\n"
	               "% the speaker notes on a second screen: uncomment\n"
	               "%\\setbeameroption{show notes on second screen=right}\n"
	               "% a line wider than the frame is scaled down to its width\n"
	               "\\newcommand{\\attnfit}[1]{\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{#1}}\n"
	               "\\title{");
	export_tex_puts(b, title ? title : "");
	strbuf_puts(b, "}\n\\date{}\n\\begin{document}\n\n\\begin{frame}\n\\titlepage\n");
	if (summary != NULL && *summary != '\0') {
		strbuf_puts(b, "{\\small ");
		export_tex_puts(b, summary);
		strbuf_puts(b, "\\par}\n");
	}
	strbuf_printf(b, "\\begin{center}\\small %d %s \u00b7 %s\\end{center}\n\\end{frame}\n\n", s->nwalk, w->steps, w->made);
}

/*
 * A figure's file beside a TeX deck: "talks/My deck.tex" → "talks/My-deck-step03.png"
 * (the name TeX reads: letters, digits, "-" and "." only); *name points at its file name.
 */
static char *tex_figure_path(const char *path, int k, int answer, const char **name)
{
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path, *dot = strrchr(base, '.');
	char *f = str_printf("%.*s%.*s-step%02d%s.png", (int)(base - path), path, (int)(dot - base), base, k,
	                     answer ? "-answer" : "");

	if (f == NULL)
		return NULL;
	*name = f + (base - path);
	for (char *p = f + (base - path); *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.'))
			*p = '-';
	return f;
}

/* ------------------------------------------------------------ the deck */

/* One slide of the deck (the step's, or its answer's), and its figure beside a TeX deck: 0, or -1 out of memory. */
static int add_slide(StrBuf *b, Handout *h, Session *s, const HandoutOptions *o, const Words *w, int html,
                     const char *path, int k, int answer, int *id)
{
	Slide sl = { .k = k, .answer = answer };
	char *svg, *e = NULL, *fp = NULL;

	/* a figure that cannot be drawn (--numbers on and a 456 × 456 matrix) says why in its place */
	if ((svg = ho_step_figure(s, o, answer, &e)) == NULL && e == NULL)
		return -1;
	sl.svg = svg;
	sl.note = e;
	(*id)++;
	if (!html && svg != NULL) {
		if ((fp = tex_figure_path(path, k + 1, answer, &sl.figure)) == NULL) {
			free(svg);
			free(e);
			return -1;
		}
	}
	if (html && answer)
		html_answer(b, s, w, &sl, *id);
	else if (html)
		html_step(b, s, w, &sl, *id, o->key);
	else if (answer)
		tex_answer(b, s, w, &sl);
	else
		tex_step(b, s, w, &sl, o->key);
	free(e);
	if (html || svg == NULL) {
		free(svg);
		return 0;
	}
	if (ho_add_file(h, fp, svg) != 0)
		return -1;
	h->file[h->n - 1].png = 1;
	return 0;
}

int slides_render(Session *s, const char *path, const HandoutOptions *o, Handout *h, char **err)
{
	const Words *w = strcmp(s->lang, "zh") == 0 ? &ho_words_zh : &ho_words_en;
	const int html = slides_is_html(path);
	StrBuf b = { 0 }, head = { 0 };
	int id = 1;

	if (ho_start(h, path, html, "slides", "DECK.html or DECK.tex", err) != 0)
		return -1;
	if (html)
		ho_html_head(&b, s, w, html_style, "<section class=\"slide title\" id=\"slide-1\">", "</section>");
	for (int k = 0; k < s->nwalk; k++) {
		char *e = NULL;
		if (session_goto_step(s, k, &e) != 0) {
			*err = str_printf("slides: step %d: %s", k + 1, e ? e : "out of memory");
			free(e);
			goto fail;
		}
		if (add_slide(&b, h, s, o, w, html, path, k, 0, &id) != 0)
			goto oom;
		/* ask before you tell: the answer on the slide after the question's */
		if (session_step(s)->has_quiz && o->key == HANDOUT_KEY_END &&
		    add_slide(&b, h, s, o, w, html, path, k, 1, &id) != 0)
			goto oom;
	}
	if (html)
		strbuf_printf(&b, "%s</body>\n</html>\n", html_script);
	else {
		strbuf_puts(&b, "\\end{document}\n");
		tex_head(&head, s, w, strcmp(s->lang, "zh") == 0 || (b.s != NULL && export_tex_cjk(b.s)));
		strbuf_puts(&head, b.s ? b.s : "");
		head.oom |= b.oom;
		free(b.s);
		b = head;
	}
	if (b.oom)
		goto oom;
	free(h->file[0].data);
	h->file[0].data = b.s;
	return 0;
oom:
	*err = strdup("slides: out of memory");
fail:
	free(b.s);
	handout_free(h);
	return -1;
}
