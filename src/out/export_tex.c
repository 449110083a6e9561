/* export_tex.c: an export as a TeX document (pdflatex; xelatex with xeCJK for
 * Chinese): the stage's formula in math, a bmatrix per pane with its labels.
 * export.c dispatches to it. */
#include "out/export.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect/explain.h"
#include "inspect/labels.h"
#include "base/i18n.h"
#include "base/strbuf.h"
#include "out/export_internal.h"

/* ------------------------------------------------------------ TeX */

/* Text for \text{…} or a comment: TeX specials escaped, control characters dropped. */
static void tex_puts(StrBuf *b, const char *text)
{
	char *e = ex_shown(text);
	const char *s = e ? e : "";

	for (; *s; s++) {
		switch (*s) {
		case '\\': strbuf_puts(b, "\\textbackslash{}"); break;
		case '{': strbuf_puts(b, "\\{"); break;
		case '}': strbuf_puts(b, "\\}"); break;
		case '$': strbuf_puts(b, "\\$"); break;
		case '&': strbuf_puts(b, "\\&"); break;
		case '#': strbuf_puts(b, "\\#"); break;
		case '%': strbuf_puts(b, "\\%"); break;
		case '_': strbuf_puts(b, "\\_"); break;
		case '^': strbuf_puts(b, "\\textasciicircum{}"); break;
		case '~': strbuf_puts(b, "\\textasciitilde{}"); break;
		case '<': strbuf_puts(b, "\\textless{}"); break;
		case '>': strbuf_puts(b, "\\textgreater{}"); break;
		case '|': strbuf_puts(b, "\\textbar{}"); break;
		default:
			if ((unsigned char)*s < 0x20)
				strbuf_puts(b, " ");
			else
				strbuf_add(b, s, 1);
		}
	}
	free(e);
}

/* A number in math mode: 0.1234, -\infty, 1.20 \times 10^{4}. */
static void tex_number(StrBuf *b, double x, int precision)
{
	char num[32], *e;

	if (x == -INFINITY || x == INFINITY) {
		strbuf_puts(b, x < 0 ? "-\\infty" : "\\infty");
		return;
	}
	if (isnan(x)) { /* not reached at the step shown (ex_fig_panes): blank */
		return;
	}
	if (precision < 0)
		labels_number(num, x, 0);
	else
		ex_fig_number(num, x, precision);
	e = strchr(num, 'e');
	if (e == NULL) {
		strbuf_puts(b, num);
		return;
	}
	*e = '\0';
	strbuf_printf(b, "%s \\times 10^{%d}", num, atoi(e + 1));
}

static int tex_math(StrBuf *b, const char *s, size_t len);

/*
 * The bracket opening at s[at] as a TeX group: prefix, its inside converted
 * (with the brackets when keep), "}". Returns the index after the bracket,
 * or 0 when it does not close or its inside cannot be converted.
 */
static size_t tex_bracket(StrBuf *b, const char *s, size_t len, size_t at, const char *prefix, int keep)
{
	size_t e = at;
	int depth = 0;

	do {
		depth += s[e] == '(' ? 1 : s[e] == ')' ? -1 : 0;
		e++;
	} while (e < len && depth > 0);
	if (depth != 0)
		return 0;
	strbuf_puts(b, prefix);
	if (tex_math(b, s + at + (keep ? 0 : 1), e - at - (keep ? 0 : 2)) != 0)
		return 0;
	strbuf_puts(b, "}");
	return e;
}

/*
 * A formula of the stage table (UTF-8, one part: no double spaces) as TeX
 * math: W_q → W_{q}, d_model → d_{\mathrm{model}}, softmax → \operatorname{softmax},
 * · → \cdot, ᵀ → ^{\top}, √d_k → \sqrt{d_{k}}, words → \mathrm{…}. Returns
 * -1 at a character it has no rule for (the caller then writes the text).
 */
static int tex_math(StrBuf *b, const char *s, size_t len)
{
	static const char *const ops[][2] = {
		{ "softmax", "\\operatorname{softmax}" }, { "silu", "\\operatorname{silu}" },
		{ "relu", "\\operatorname{relu}" }, { "gelu", "\\operatorname{gelu}" },
		{ "diag", "\\operatorname{diag}" }, { "exp", "\\exp" }, { "max", "\\max" },
		{ "tanh", "\\tanh" }, { "sin", "\\sin" }, { "cos", "\\cos" }, { "sum", "\\sum" },
	};
	static const char *const sym[][2] = {
		{ "\u00b7", "\\cdot " }, { "\u00d7", "\\times " }, { "\u03a3", "\\sum " }, { "\u03a6", "\\Phi " },
		{ "\u03c3", "\\sigma " }, { "\u03bc", "\\mu " }, { "\u03b3", "\\gamma " }, { "\u03b2", "\\beta " },
		{ "\u03b5", "\\epsilon " }, { "\u1d40", "^{\\top}" }, { "\u2026", "\\dots " }, { "\u2212", "-" },
		{ "\u221e", "\\infty " }, { "\u2299", "\\odot " }, { "\u00b2", "^{2}" }, { "\u2192", "\\to " },
		{ "\u2264", "\\le " }, { "\u2265", "\\ge " },
	};
	size_t i = 0, k;
	int sqrt_open = 0;

	while (i < len) {
		const char c = s[i];
		if (isalpha((unsigned char)c)) {
			size_t w = i, sub = 0, sublen = 0;
			int group = 0;
			while (w < len && isalnum((unsigned char)s[w]))
				w++;
			if (w + 1 < len && s[w] == '_' && s[w + 1] == '{') {
				size_t e = w + 2;
				int depth = 1;
				while (e < len && depth > 0) {
					depth += s[e] == '{' ? 1 : s[e] == '}' ? -1 : 0;
					e++;
				}
				if (depth != 0)
					return -1;
				sub = w + 2;
				sublen = e - 1 - sub;
				group = 1;
			} else if (w + 1 < len && s[w] == '_' && isalnum((unsigned char)s[w + 1])) {
				sub = w + 1;
				sublen = 1;
				while (sub + sublen < len && isalnum((unsigned char)s[sub + sublen]))
					sublen++;
			}
			for (k = 0; k < sizeof ops / sizeof ops[0]; k++)
				if (strlen(ops[k][0]) == w - i && strncmp(s + i, ops[k][0], w - i) == 0)
					break;
			if (k < sizeof ops / sizeof ops[0])
				strbuf_puts(b, ops[k][1]);
			else if (sublen >= 3 && !group && w - i >= 2) {
				/* ffn_hidden: one name */
				strbuf_printf(b, "\\mathrm{%.*s\\_%.*s}", (int)(w - i), s + i, (int)sublen, s + sub);
				i = sub + sublen;
				goto next;
			} else if (w - i == 1)
				strbuf_printf(b, "%c", c);
			else
				strbuf_printf(b, "\\mathrm{%.*s}", (int)(w - i), s + i);
			if (sublen > 0) {
				strbuf_puts(b, "_{");
				if (group) {
					if (tex_math(b, s + sub, sublen) != 0)
						return -1;
				} else if (sublen >= 3)
					strbuf_printf(b, "\\mathrm{%.*s}", (int)sublen, s + sub);
				else
					strbuf_printf(b, "%.*s", (int)sublen, s + sub);
				strbuf_puts(b, "}");
				i = group ? sub + sublen + 1 : sub + sublen;
			} else
				i = w;
next:
			if (sqrt_open) {
				strbuf_puts(b, "}");
				sqrt_open = 0;
			}
			/* two words in a row keep their space */
			if (i + 1 < len && s[i] == ' ' && isalpha((unsigned char)s[i + 1]))
				strbuf_puts(b, "\\ ");
			continue;
		}
		if (isdigit((unsigned char)c) || strchr("+-=/()[],:;.<>|!*", c) != NULL) {
			strbuf_add(b, &c, 1);
			i++;
			continue;
		}
		if (c == ' ') {
			i++;
			continue;
		}
		if (c == '\'') {
			strbuf_puts(b, "\\text{'}");
			i++;
			continue;
		}
		if (c == '^' && i + 1 < len && s[i + 1] == '(') {
			if ((i = tex_bracket(b, s, len, i + 1, "^{", 1)) == 0)
				return -1;
			continue;
		}
		if (c == '^') {
			strbuf_puts(b, "^");
			i++;
			continue;
		}
		if (c == '_' && i + 1 < len && isalnum((unsigned char)s[i + 1])) {
			/* a subscript after a symbol: Σ_j */
			size_t e = i + 1;
			while (e < len && isalnum((unsigned char)s[e]))
				e++;
			strbuf_printf(b, "_{%.*s}", (int)(e - i - 1), s + i + 1);
			i = e;
			continue;
		}
		if (strncmp(s + i, "\u221a(", 4) == 0) {
			/* √(σ² + ε): the bracket becomes the root's */
			if ((i = tex_bracket(b, s, len, i + 3, "\\sqrt{", 0)) == 0)
				return -1;
			continue;
		}
		if (strncmp(s + i, "\u221a", 3) == 0 && i + 3 < len && isalpha((unsigned char)s[i + 3])) {
			strbuf_puts(b, "\\sqrt{");
			sqrt_open = 1;
			i += 3;
			continue;
		}
		for (k = 0; k < sizeof sym / sizeof sym[0]; k++)
			if (strncmp(s + i, sym[k][0], strlen(sym[k][0])) == 0)
				break;
		if (k == sizeof sym / sizeof sym[0])
			return -1;
		strbuf_puts(b, sym[k][1]);
		i += strlen(sym[k][0]);
	}
	return sqrt_open ? -1 : 0;
}

/* One line of the document, scaled down to the text width when wider. */
static void tex_fit_open(StrBuf *b)
{
	strbuf_puts(b, "\\noindent\\attnfit{$\\displaystyle ");
}

static void tex_fit_close(StrBuf *b)
{
	strbuf_puts(b, "$}\\par\n");
}

/* The stage's formula, a line for each of its parts, in math where every character has a rule. */
static void tex_formula(StrBuf *b, const char *utf8, const char *ascii)
{
	const char *p = utf8;
	StrBuf m = { NULL, 0, 0, 0 };
	int ok = 1;

	while (*p && ok) {
		const char *sep = strstr(p, "  ");
		size_t len = sep ? (size_t)(sep - p) : strlen(p);
		tex_fit_open(&m);
		ok = tex_math(&m, p, len) == 0;
		tex_fit_close(&m);
		p += len;
		while (*p == ' ')
			p++;
	}
	if (ok && !m.oom && m.s != NULL)
		strbuf_puts(b, m.s);
	else {
		strbuf_puts(b, "\\noindent ");
		tex_puts(b, ascii);
		strbuf_puts(b, "\\par\n");
	}
	free(m.s);
}

/* 1 when the text has a character outside ASCII; *cjk set when one is Chinese, Japanese or Korean. */
static int tex_unicode(const char *s, int *cjk)
{
	int any = 0;

	for (; *s; s++)
		if ((unsigned char)*s >= 0x80) {
			const size_t k = ex_char_len(s, strnlen(s, 4));
			any = 1;
			*cjk |= text_cells(s, (int)k) == 2;
			s += k - 1;
		}
	return any;
}

void export_tex_puts(StrBuf *b, const char *text)
{
	tex_puts(b, text);
}

void export_tex_formula(StrBuf *b, const char *utf8, const char *ascii)
{
	tex_formula(b, utf8, ascii);
}

int export_tex_cjk(const char *text)
{
	int cjk = 0;

	tex_unicode(text, &cjk);
	return cjk;
}

static void tex_labels(StrBuf *b, const Attn *a, const ExPane *p)
{
	int i;

	strbuf_printf(b, "{\\footnotesize %s ", _("rows:"));
	for (i = 0; i < p->v.rows; i++) {
		char *s = ex_fig_label(a, p, 1, i);
		if (i)
			strbuf_puts(b, ", ");
		tex_puts(b, s ? s : "");
		free(s);
	}
	strbuf_printf(b, "; %s ", _("columns:"));
	for (i = 0; i < p->v.cols; i++) {
		char *s = ex_fig_label(a, p, 0, i);
		if (i)
			strbuf_puts(b, ", ");
		tex_puts(b, s ? s : "");
		free(s);
	}
	strbuf_puts(b, "}\\par\\medskip\n");
}

/* The block map under the matrices, as the screen shows it ("x $\to$ [attention] $\to$ +"); nothing without a block. */
static void tex_map(StrBuf *b, char *map)
{
	if (map == NULL)
		return;
	strbuf_puts(b, "\\noindent{\\small ");
	for (char *p = map, *arrow; *p != '\0'; p = arrow + 4) {
		if ((arrow = strstr(p, " -> ")) == NULL) {
			tex_puts(b, p);
			break;
		}
		*arrow = '\0';
		tex_puts(b, p);
		strbuf_puts(b, " $\\to$ ");
	}
	strbuf_puts(b, "}\\par\n");
}

/*
 * A whole document: compiles as it is, with pdflatex when its text is ASCII,
 * with xelatex (and xeCJK for Chinese labels) otherwise; the header says
 * which. Each formula part and each matrix is one line, scaled down to the
 * text width when wider; the labels are a paragraph under their matrix.
 */
char *ex_render_tex(const Attn *a, const Session *s, const ExportTarget *t, char **err)
{
	ExPane *pane = calloc(EX_MAX_PANES, sizeof *pane);
	StrBuf b = { NULL, 0, 0, 0 };
	char what[256], *map;
	const char *title = ex_lesson_title(a, s);
	int n, i, r, c, maxcols = 0, unicode, cjk = 0;

	n = pane ? ex_fig_panes(a, s, t, pane) : 0;
	if (n == 0) {
		free(pane);
		*err = strdup("out of memory writing the export");
		return NULL;
	}
	ex_target_title(what, sizeof what, s, a, t);
	map = ex_block_map(a, s, t, 0);
	unicode = tex_unicode(title, &cjk) | (map != NULL && tex_unicode(map, &cjk)) | tex_unicode(what, &cjk);
	for (i = 0; i < n; i++) {
		for (r = 0; r < 2; r++)
			for (c = 0; c < (r ? pane[i].v.rows : pane[i].v.cols); c++) {
				char *l = ex_fig_label(a, &pane[i], r, c);
				unicode |= l != NULL && tex_unicode(l, &cjk);
				free(l);
			}
		maxcols = (int)fmax(maxcols, pane[i].v.cols);
	}
	strbuf_puts(&b, "% attnviz export: ");
	tex_puts(&b, title);
	strbuf_puts(&b, " -- ");
	tex_puts(&b, what);
	if (unicode)
		strbuf_printf(&b, "\n%% compile with xelatex (the text is not all ASCII%s); TeX Live: texlive-xetex%s\n",
		              cjk ? "; Chinese with xeCJK and the Fandol fonts" : "",
		              cjk ? ", texlive-lang-chinese" : "");
	else
		strbuf_puts(&b, "\n% compile with pdflatex (the text is ASCII); TeX Live: texlive-latex-base\n");
	if (t->standalone)
		/* cropped to what it draws, each line as wide as it is (varwidth): \includegraphics{FILE.pdf} in a paper or a frame */
		strbuf_puts(&b, "% standalone: a figure cropped to its content; TeX Live: texlive-latex-extra (standalone, varwidth)\n"
		                "\\documentclass[border=6pt,varwidth=60cm]{standalone}\n\\usepackage{amsmath}\n\\usepackage{graphicx}\n");
	else
		strbuf_puts(&b, "\\documentclass{article}\n\\usepackage[margin=2cm]{geometry}\n\\usepackage{amsmath}\n\\usepackage{graphicx}\n");
	if (unicode)
		strbuf_puts(&b, "\\usepackage{fontspec}\n");
	else
		strbuf_puts(&b, "\\usepackage[T1]{fontenc}\n");
	if (cjk)
		strbuf_puts(&b, "\\usepackage{xeCJK}\n\\setCJKmainfont{FandolSong-Regular.otf}[BoldFont=FandolSong-Bold.otf]\n");
	if (maxcols > 10)
		strbuf_printf(&b, "\\setcounter{MaxMatrixCols}{%d}\n", maxcols);
	strbuf_puts(&b, "% a line wider than the text is scaled down to its width\n"
	                "\\newcommand{\\attnfit}[1]{\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{#1}}\n"
	                "\\begin{document}\n");
	/* a standalone figure has no sections: its title is its first line */
	strbuf_puts(&b, t->standalone ? "\\noindent\\textbf{" : "\\section*{");
	tex_puts(&b, title);
	strbuf_puts(&b, " --- ");
	tex_puts(&b, what);
	strbuf_puts(&b, t->standalone ? "}\\par\\medskip\n" : "}\n");
	{
		int st = t->whole_stage ? (int)t->stage : matrix_stage(&a->shape, t->matrix);
		if (st >= 0) {
			tex_formula(&b, stage_formula(&a->shape, (Stage)st, 1), stage_formula(&a->shape, (Stage)st, 0));
			strbuf_puts(&b, "\\medskip\n");
		}
	}
	for (i = 0; i < n; i++) {
		const ExPane *p = &pane[i];
		if (p->heat) {
			strbuf_puts(&b, "\\noindent $\\mathrm{");
			tex_puts(&b, matrix_name(p->which));
			strbuf_printf(&b, "}%s$: $%d \\times %d$, too many cells to print as numbers; csv and json exports "
			                  "hold every number (\\texttt{--numbers on} prints them).\\par\\medskip\n",
			              p->transpose ? "^{\\top}" : "", p->v.rows, p->v.cols);
			continue;
		}
		tex_fit_open(&b);
		strbuf_puts(&b, "\\mathrm{");
		tex_puts(&b, matrix_name(p->which));
		strbuf_puts(&b, "}");
		if (p->transpose)
			strbuf_puts(&b, "^{\\top}");
		if (p->kv_head >= 0)
			strbuf_printf(&b, _("\\ \\text{(kv head %d)}"), p->kv_head);
		else if (p->head >= 0 && a->heads > 1)
			strbuf_printf(&b, _("\\ \\text{(head %d)}"), p->head);
		strbuf_puts(&b, " = \\begin{bmatrix}\n");
		for (r = 0; r < p->v.rows; r++) {
			strbuf_puts(&b, "    ");
			for (c = 0; c < p->v.cols; c++) {
				if (c)
					strbuf_puts(&b, " & ");
				tex_number(&b, MAT_AT(p->v, r, c), t->precision);
			}
			strbuf_puts(&b, r + 1 < p->v.rows ? " \\\\\n" : "\n");
		}
		strbuf_puts(&b, "  \\end{bmatrix}");
		tex_fit_close(&b);
		tex_labels(&b, a, p);
	}
	tex_map(&b, map);
	free(map);
	strbuf_puts(&b, "\\end{document}\n");
	ex_fig_panes_free(pane, n);
	free(pane);
	return ex_buf_finish(&b, err);
}
