#!/bin/sh
# t_tex.sh: `export tex` writes a document that compiles — with pdflatex when
# its text is ASCII (selfattn.json), with xelatex and xeCJK when it has Chinese
# labels (mask.json), as its header says — for every stage of both lessons,
# with no line running off the page (no Overfull \hbox), and page 1 renders to
# PNG (pdftoppm). Without TeX Live (texlive-latex-base; texlive-xetex and
# texlive-lang-chinese for Chinese) or poppler-utils those checks are skipped
# on purpose ("ok - NAME # SKIP on purpose: …", tests/lib.sh's OPTIONAL_TOOLS):
# CI does not install TeX Live (it would take CI past its time). Markdown
# tables are checked with pandoc the same way, when it is there.
# Ends with "N passed, N failed, N skipped" (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

export LC_ALL=C.UTF-8

# the header names the engine: pdflatex for ASCII, xelatex for Chinese
"$ATTNVIZ" --export tex --stage scores lessons/selfattn.json -o "$tmp/sa.tex" 2>"$err"
expect "tex header: an ASCII lesson compiles with pdflatex" 'sed -n 2p "$tmp/sa.tex" | grep -q "^% compile with pdflatex" && grep -q "^\\\\documentclass" "$tmp/sa.tex"'
"$ATTNVIZ" --export tex --stage scores lessons/mask.json -o "$tmp/mask.tex" 2>"$err"
expect "tex header: Chinese labels compile with xelatex and xeCJK" 'sed -n 2p "$tmp/mask.tex" | grep -q "^% compile with xelatex" && grep -q "usepackage{xeCJK}" "$tmp/mask.tex"'
expect "tex: the formula in math mode" 'grep -q "mathrm{scores}=Q\\\\cdot K^{\\\\top}" "$tmp/sa.tex"'
"$ATTNVIZ" --export tex --stage softmax lessons/selfattn.json -o "$tmp/soft.tex" 2>"$err"
expect "tex: softmax as an operator" 'grep -q "operatorname{softmax}" "$tmp/soft.tex"'

for lesson in lessons/selfattn.json lessons/mask.json; do
	name=$(basename "$lesson" .json)
	for st in $(stages_of "$lesson"); do
		f="$tmp/$name-$st.tex"
		"$ATTNVIZ" --export tex --stage "$st" "$lesson" -o "$f" 2>"$err" || { not_ok "tex: $name $st: export failed"; continue; }
		engine=$(sed -n '2s/^% compile with \([a-z]*\).*/\1/p' "$f")
		case $engine in
		pdflatex | xelatex | lualatex) ;;
		*) not_ok "tex: $name $st: the header names the engine to compile with" "line 2: $(sed -n 2p "$f")"; continue ;;
		esac
		if ! command -v "$engine" >/dev/null 2>&1; then
			skip_missing "tex: $name $st compiles with $engine" "$engine" "$engine not installed (TeX Live)"
			continue
		fi
		if (cd "$tmp" && "$engine" -interaction=nonstopmode -halt-on-error "$name-$st.tex" >/dev/null 2>&1); then
			if grep -q "Overfull .hbox" "$tmp/$name-$st.log"; then
				not_ok "tex: $name $st compiles with $engine, nothing off the page" "$(grep -m 2 "Overfull" "$tmp/$name-$st.log")"
			else
				ok "tex: $name $st compiles with $engine, nothing off the page"
			fi
		else
			not_ok "tex: $name $st compiles with $engine" "$(grep -m 3 -A 2 '^!' "$tmp/$name-$st.log" 2>/dev/null)"
			continue
		fi
		if command -v pdftoppm >/dev/null 2>&1; then
			pdftoppm -png -r 50 -f 1 -l 1 "$tmp/$name-$st.pdf" "$tmp/$name-$st" 2>"$err"
			expect "tex: $name $st page 1 renders to PNG" 'head -c 8 "$tmp/$name-$st-1.png" 2>/dev/null | od -An -c | grep -q "P   N   G"'
		else
			skip_missing "tex: $name $st page 1 renders to PNG" pdftoppm "pdftoppm not installed (poppler-utils)"
		fi
	done
done

# Markdown tables render in pandoc
"$ATTNVIZ" --export md --stage softmax lessons/mask.json -o "$tmp/soft.md" 2>"$err"
if command -v pandoc >/dev/null 2>&1; then
	pandoc -f markdown -t html "$tmp/soft.md" -o "$tmp/soft.html" 2>"$err"
	expect "md: pandoc makes two tables of it" '[ "$(grep -c "<table" "$tmp/soft.html")" -eq 2 ]'
else
	skip_missing "md: pandoc makes two tables of it" pandoc "pandoc not installed"
fi
finish
