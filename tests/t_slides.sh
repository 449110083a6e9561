#!/bin/sh
# tests/t_slides.sh — `attnviz --slides LESSON -o DECK.html|DECK.tex` (issue 26 §5), and what
# the exports keep for a teacher's slides and papers (issue 26 §4, §5):
# - HTML: one self-contained file, well-formed (xmllint), a title slide then one
#   slide a step, each with its figure, formula and question; ask before you
#   tell: a question's slide hides the asked cells and has no answer, the
#   answer is the slide after it (--key end), or its notes (--key notes), or
#   nowhere (--key none); the narration in <aside class="notes">; keys move
#   between slides (the script is there, no address in it); printed one
#   slide a page (Chromium and pdfinfo where installed: pages = slides).
# - TeX: a beamer deck, a frame per slide, \note{} narration, its figures as
#   PNG files beside it; Chinese with xeCJK; compiled with xelatex where installed.
# - hostile lesson text escaped in both; usage errors.
# - --export tex --standalone: a standalone figure (compiled where TeX is installed).
# - the block map in a block lesson's figure (svg, tex, the deck), its text inside the canvas.
. "$(dirname "$0")/lib.sh"
SRCDIR=${ATTNVIZ_SRCDIR:-$(pwd)}
L="$SRCDIR/lessons"
export LC_ALL=C.UTF-8
well_formed() {
	wf_name=$1
	shift
	if ! command -v xmllint >/dev/null 2>&1; then
		skip "$wf_name" "xmllint not installed (libxml2-utils)"
	elif xmllint --noout "$@" 2>"$err"; then
		ok "$wf_name"
	else
		not_ok "$wf_name"
	fi
}
# slide FILE N: the N-th slide's section (1: the title slide) of an HTML deck
slide() { awk -v n="$2" '/<section class="slide/ { k++ } k == n { print } /<\/section>/ && k == n { exit }' "$1"; }

# --- HTML, mask.json: 12 steps, 5 questions → a title slide, 12 step slides, 5 answer slides
"$ATTNVIZ" --slides "$L/mask.json" -o "$tmp/deck.html" 2>"$err"
check "html: written, nothing on stderr" sh -c "test -s '$tmp/deck.html' && test ! -s '$err'"
check "html: 18 slides (title, 12 steps, 5 answers)" test "$(count "$tmp/deck.html" '<section class="slide')" = 18
check "html: 12 step slides, each with a figure" test "$(count "$tmp/deck.html" '<svg ')" = 17
check "html: 5 answer slides" test "$(count "$tmp/deck.html" '<section class="slide answer"')" = 5
check "html: a step's narration is a speaker note" \
	sh -c "awk '/<aside class=\"notes\">/,/<\/aside>/' '$tmp/deck.html' | grep -q 'The decoder does not say'"
check "html: one notes aside a step slide" test "$(count "$tmp/deck.html" '<aside class="notes">')" = 12
check "html: the formula" has "$tmp/deck.html" '<p class="formula">masked_ij = scaled_ij'
well_formed "html: well-formed (xmllint, as XML)" "$tmp/deck.html"
check "html: self-contained (no address, no src=, no link, no @import)" \
	sh -c "! grep -Eqi 'https?:|src=|<link|@import|url\\(' '$tmp/deck.html'"
check "html: keys move between slides (inline script)" sh -c "grep -q 'ArrowRight' '$tmp/deck.html' && grep -q \"addEventListener('keydown'\" '$tmp/deck.html'"
check "html: printed, one slide a page" sh -c "grep -q '@page { size: 254mm 142.875mm' '$tmp/deck.html' && grep -q 'break-after: page' '$tmp/deck.html'"
# ask before you tell: step 7's slide (the 10th: title, steps 1-7, answers 5 and 6 before it) asks,
# hides the weights and gives no answer; the 11th answers, with the question's "then"
slide "$tmp/deck.html" 10 >"$tmp/q.html"
slide "$tmp/deck.html" 11 >"$tmp/a.html"
check "ask: the question is on its step's slide" has "$tmp/q.html" '<div class="question">'
check "ask: its figure hides the cells asked about" has "$tmp/q.html" 'class="cell hidden"'
check "ask: no answer on the question's slide, not even in its notes" sh -c "! grep -qi 'answer 7\|answers within\|class=\"answer\"' '$tmp/q.html'"
check "tell: the next slide is its answer" sh -c "grep -q '<section class=\"slide answer\"' '$tmp/a.html' && grep -q 'Answer 7:' '$tmp/a.html'"
check "tell: the answer's figure shows the numbers" sh -c "! grep -q 'class=\"cell hidden\"' '$tmp/a.html'"
check "tell: the question's \"then\" comes with its answer, not before" sh -c "grep -q 'Softmax turns −∞ into exactly 0' '$tmp/a.html' && ! grep -q 'Softmax turns −∞ into exactly 0' '$tmp/q.html'"
check "tell: a numeric answer with its tolerance" has "$tmp/deck.html" 'weights[0][0] = 1 (answers within 0.01 count)'
"$ATTNVIZ" --slides "$L/mask.json" --key notes -o "$tmp/notes.html" 2>"$err"
expect "--key notes: no answer slides, the answers in the question's notes" \
	'[ "$(count "$tmp/notes.html" "<section class=\"slide answer\"")" = 0 ] && [ "$(count "$tmp/notes.html" "<p class=\"answer\">Answer:")" = 5 ] && [ "$(awk "/<aside class=\"notes\">/,/<\/aside>/" "$tmp/notes.html" | grep -c "class=\"answer\"")" = 5 ]'
"$ATTNVIZ" --slides "$L/mask.json" --key none -o "$tmp/none.html" 2>"$err"
expect "--key none: no answers anywhere" '[ "$(count "$tmp/none.html" "<section class=\"slide")" = 13 ] && ! grep -q "answers within\|class=\"answer\"" "$tmp/none.html"'
"$ATTNVIZ" --slides "$L/mask.json" --precision 2 -o "$tmp/p2.html" 2>"$err"
expect "--precision 2: the figures' numbers have 2 decimals" \
	'grep -q ">0\.05<" "$tmp/p2.html" && [ "$(grep -o "class=\"num\"[^>]*>[0-9.-]*" "$tmp/p2.html" | grep -c "\.[0-9][0-9][0-9]")" -eq 0 ]'
# Chinese throughout
"$ATTNVIZ" --slides "$L/mask.json" --lang zh -o "$tmp/zh.html" 2>"$err"
expect "zh: Chinese titles, question, answer and notes" \
	'has "$tmp/zh.html" "<html lang=\"zh\">" && has "$tmp/zh.html" "第 7 步 · 阶段 softmax" && has "$tmp/zh.html" "答案 7" && has "$tmp/zh.html" "softmax 把 −∞ 变成" && ! has "$tmp/zh.html" "Answer" && ! has "$tmp/zh.html" "Step "'

# every shipped lesson makes a deck, well-formed and under 2 MB (the figures are the handout's)
bad=
for f in "$L"/*.json; do
	n=$(basename "$f" .json)
	if ! "$ATTNVIZ" --slides "$f" -o "$tmp/all-$n.html" 2>/dev/null; then bad="$bad $n"
	elif [ "$(wc -c <"$tmp/all-$n.html")" -ge 2000000 ]; then bad="$bad $n(size)"; fi
done
expect "html: every shipped lesson makes a deck under 2 MB${bad:+:$bad}" '[ -z "$bad" ]'
well_formed "html: every shipped lesson's deck is well-formed" "$tmp"/all-*.html
rm -f "$tmp"/all-*.html

# the keys move between slides: the deck's own script run by node against 18 stand-in slides (where installed)
if command -v node >/dev/null 2>&1; then
	sed -n '/^<script>$/,/^<\/script>$/p' "$tmp/deck.html" | sed '1d;$d' >"$tmp/deck.js"
	cat >"$tmp/keys.js" <<'JS'
const slides = [];
for (let i = 0; i < 18; i++) slides.push({ id: 'slide-' + (i + 1), className: i ? 'slide' : 'slide title', dataset: {} });
let on = null;
global.document = { querySelectorAll: () => slides, addEventListener: (t, f) => { on = f; } };
global.location = { hash: '#slide-5' };
global.history = { replaceState: (a, b, h) => { global.location.hash = h; } };
eval(require('fs').readFileSync(process.argv[2], 'utf8'));
const cur = () => slides.findIndex(s => / current$/.test(s.className));
const out = [cur()];
for (const k of ['ArrowRight', ' ', 'PageDown', 'ArrowLeft', 'End', 'ArrowRight', 'Home', 'PageUp']) {
	on({ key: k, preventDefault() {} });
	out.push(cur());
}
console.log(out.join(' '), location.hash, slides.filter(s => /current/.test(s.className)).length);
JS
	got=$(node "$tmp/keys.js" "$tmp/deck.js" 2>&1)
	expect "html: #slide-5 opens the 5th; right, space, PgDn on, left back, End, Home, no further (got $got)" \
		'[ "$got" = "4 5 6 7 6 17 17 0 0 #slide-1 1" ]'
else
	skip "html: the keys move between slides (node)" "node not installed"
fi

# --- the deck printed: one slide a page (Chromium and pdfinfo where installed)
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROME" ] || ! external "$CHROME"; then
	skip_external "chromium: the deck prints one slide a page" "chromium"
elif ! command -v pdfinfo >/dev/null 2>&1; then
	skip_missing "chromium: the deck prints one slide a page" pdfinfo "pdfinfo not installed (poppler-utils)"
else
	timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
		--user-data-dir="$tmp/chrome" --no-pdf-header-footer --print-to-pdf="$tmp/deck.pdf" "file://$tmp/deck.html" >/dev/null 2>&1
	pages=$(pdfinfo "$tmp/deck.pdf" 2>/dev/null | sed -n 's/^Pages: *//p')
	expect "chromium: 18 slides print as 18 pages (got ${pages:-none})" '[ "${pages:-0}" -eq 18 ]'
fi

# --- TeX: a beamer deck, its figures beside it (a small lesson: each figure goes through rsvg-convert)
mkdir "$tmp/tex"
if ! command -v rsvg-convert >/dev/null 2>&1; then
	skip "tex: a beamer deck with its figures" "rsvg-convert not installed (librsvg2-bin)"
else
	"$ATTNVIZ" --slides "$L/sink.json" -o "$tmp/tex/my deck.tex" 2>"$err"
	check "tex: written, nothing on stderr" sh -c "test -s '$tmp/tex/my deck.tex' && test ! -s '$err'"
	check "tex: a beamer deck for xelatex" sh -c "sed -n 2p '$tmp/tex/my deck.tex' | grep -q '^% compile with xelatex' && grep -q 'documentclass\[aspectratio=169\]{beamer}' '$tmp/tex/my deck.tex'"
	steps=$(grep -c '"stage"' "$L/sink.json")
	expect "tex: a frame per step, and the title's" '[ "$(count "$tmp/tex/my deck.tex" "\\begin{frame}{")" -ge "$steps" ] && [ "$(count "$tmp/tex/my deck.tex" "\\begin{frame}")" = "$(count "$tmp/tex/my deck.tex" "\\end{frame}")" ]'
	check "tex: the narration as notes" has "$tmp/tex/my deck.tex" '\note{'
	figs=$(grep -o 'includegraphics\[[^]]*\]{[^}]*}' "$tmp/tex/my deck.tex" | sed 's/.*{\(.*\)}/\1/')
	bad=
	for f in $figs; do head -c 8 "$tmp/tex/$f" 2>/dev/null | od -An -c | grep -q 'P   N   G' || bad="$bad $f"; done
	expect "tex: every figure it includes is a PNG beside it, named for TeX (no space)${bad:+:$bad}" '[ -n "$figs" ] && [ -z "$bad" ] && ! echo "$figs" | grep -q " "'
	"$ATTNVIZ" --slides "$L/sink.json" --lang zh -o "$tmp/tex/zh.tex" 2>"$err"
	check "tex zh: xeCJK, Chinese frame titles" sh -c "grep -q 'usepackage{xeCJK}' '$tmp/tex/zh.tex' && grep -q 'begin{frame}{第 1 步' '$tmp/tex/zh.tex'"
	# a write failing half way (a folder where the second figure goes, written late) leaves no deck half made
	mkdir -p "$tmp/half/d-step02.png"
	"$ATTNVIZ" --slides "$L/sink.json" -o "$tmp/half/d.tex" 2>"$err"
	expect "tex: a write failing half way is an error and leaves nothing half written" \
		'[ $? -eq 1 ] && [ "$(ls "$tmp/half")" = "d-step02.png" ] && [ -d "$tmp/half/d-step02.png" ]'
	for deck in "my deck" zh; do
		if ! command -v xelatex >/dev/null 2>&1; then
			skip_missing "tex: $deck compiles with xelatex" xelatex "xelatex not installed (TeX Live)"
		elif (cd "$tmp/tex" && xelatex -interaction=nonstopmode -halt-on-error "$deck.tex" >/dev/null 2>&1); then
			ok "tex: $deck compiles with xelatex"
		else
			not_ok "tex: $deck compiles with xelatex" "$(grep -m 3 -A 2 '^!' "$tmp/tex/$deck.log" 2>/dev/null)"
		fi
	done
fi

# --- hostile lesson text is escaped (HTML, TeX)
cat >"$tmp/evil.json" <<'JSON'
{
  "attnviz": 1,
  "title": "<script>alert(1)</script> & co \\input{/etc/passwd} %",
  "tokens": ["<b>", "a", "b"],
  "X": [[1, 0], [0, 1], [1, 1]],
  "W_q": [[1, 0], [0, 1]], "W_k": [[1, 0], [0, 1]], "W_v": [[1, 0], [0, 1]],
  "steps": [
    {"stage": "input", "text": "<iframe src=//evil.example></iframe> \\end{frame} $x$ # ~ ^ _ \u001b[31mred"},
    {"stage": "softmax", "quiz": {"question": "<b>bold?</b> \\def\\x{}", "choices": ["<u>yes</u>", "no & {maybe}"], "answer": 1}}
  ]
}
JSON
"$ATTNVIZ" --slides "$tmp/evil.json" -o "$tmp/evil.html" 2>"$err"
check "hostile html: no tag from the lesson" sh -c "test -s '$tmp/evil.html' && ! grep -Eq '<(iframe|b|u)[ >]|<script>alert' '$tmp/evil.html'"
check "hostile html: escaped as text" has "$tmp/evil.html" '&lt;script&gt;alert(1)&lt;/script&gt; &amp; co'
check "hostile html: a control character is shown, not sent" sh -c "! grep -q \"\$(printf '\\033')\" '$tmp/evil.html' && grep -q 'x1b' '$tmp/evil.html'"
well_formed "hostile html: still well-formed" "$tmp/evil.html"
if command -v rsvg-convert >/dev/null 2>&1; then
	"$ATTNVIZ" --slides "$tmp/evil.json" -o "$tmp/evil.tex" 2>"$err"
	expect "hostile tex: TeX's specials escaped" 'has "$tmp/evil.tex" "\\textbackslash{}input\\{/etc/passwd\\} \\%" && has "$tmp/evil.tex" "\\textbackslash{}end\\{frame\\} \\\$x\\\$ \\# \\textasciitilde{} \\textasciicircum{} \\_" && ! grep -q "^\\\\def\\|[^{]\\\\def\\\\x" "$tmp/evil.tex" && [ "$(count "$tmp/evil.tex" "\\begin{frame}")" = "$(count "$tmp/evil.tex" "\\end{frame}")" ]'
else
	skip "hostile tex: TeX's specials escaped" "rsvg-convert not installed (librsvg2-bin)"
fi

# --- usage
"$ATTNVIZ" --slides "$L/mask.json" -o "$tmp/x.pdf" 2>"$err"
expect "usage: -o must be .html or .tex (exit 2)" '[ $? -eq 2 ] && has "$err" "--slides needs -o DECK.html or -o DECK.tex"'
"$ATTNVIZ" --slides "$L/mask.json" --key separate -o "$tmp/x.html" 2>"$err"
expect "usage: --key separate is a handout's" '[ $? -eq 2 ] && [ ! -e "$tmp/x.html" ]'
"$ATTNVIZ" --handout "$L/mask.json" --key notes -o "$tmp/x.html" 2>"$err"
expect "usage: --key notes is the slides'" '[ $? -eq 2 ] && has "$err" "--key notes goes with --slides" && [ ! -e "$tmp/x.html" ]'
"$ATTNVIZ" --slides "$L/nosuch.json" -o "$tmp/n.html" 2>"$err"
expect "a lesson that is not there: exit 1, nothing written" '[ $? -eq 1 ] && [ ! -e "$tmp/n.html" ]'

# --- --export tex --standalone: a figure for \includegraphics
"$ATTNVIZ" --export tex --standalone --stage softmax "$L/selfattn.json" -o "$tmp/fig.tex" 2>"$err"
expect "standalone: a standalone document, no page geometry, no section" \
	'grep -q "^\\\\documentclass\[border=6pt,varwidth=60cm\]{standalone}" "$tmp/fig.tex" && ! grep -q "geometry\|section\*" "$tmp/fig.tex" && grep -q "operatorname{softmax}" "$tmp/fig.tex"'
"$ATTNVIZ" --export tex --standalone --stage softmax --lang zh "$L/mask.json" -o "$tmp/fig-zh.tex" 2>"$err"
check "standalone zh: xeCJK" has "$tmp/fig-zh.tex" 'usepackage{xeCJK}'
for f in fig fig-zh; do
	engine=$(sed -n '2s/^% compile with \([a-z]*\).*/\1/p' "$tmp/$f.tex")
	if ! command -v "$engine" >/dev/null 2>&1; then
		skip_missing "standalone: $f compiles alone with $engine" "$engine" "$engine not installed (TeX Live)"
	elif (cd "$tmp" && "$engine" -interaction=nonstopmode -halt-on-error "$f.tex" >/dev/null 2>&1); then
		ok "standalone: $f compiles alone with $engine"
	else
		not_ok "standalone: $f compiles alone with $engine" "$(grep -m 3 -A 2 '^!' "$tmp/$f.log" 2>/dev/null)"
	fi
done
"$ATTNVIZ" --export svg --standalone --stage softmax "$L/selfattn.json" -o "$tmp/x.svg" 2>"$err"
expect "usage: --standalone goes with --export tex" '[ $? -eq 2 ] && has "$err" "--standalone goes with --export tex"'

# --- the block map in the figure (issue 26 §4): svg, tex, handout and deck; none without a block
"$ATTNVIZ" --export svg --stage softmax "$L/block.json" -o "$tmp/b.svg" 2>"$err"
check "map: a block lesson's figure has the block map, the stage lit" has "$tmp/b.svg" '>block: x → [attention] → + → N1 → FFN → + → N2</text>'
"$ATTNVIZ" --export svg --stage softmax --layer 1 "$L/encdec.json" -o "$tmp/ed.svg" 2>"$err"
check "map: a decoder layer's map, cross-attention lit (wrapped to the canvas)" sh -c "grep -c 'class=\"block-map\"' '$tmp/ed.svg' | grep -qv '^0$' && grep -q '\[cross-attn\]' '$tmp/ed.svg'"
"$ATTNVIZ" --export svg --stage softmax --lang zh "$L/block.json" -o "$tmp/bz.svg" 2>"$err"
check "map zh: its word in Chinese" sh -c "grep -q '>块结构：x → \[attention\]' '$tmp/bz.svg' && ! grep -q '>block:' '$tmp/bz.svg'"
check "map: every text inside the canvas (svgfit)" "$BUILD/tests/svgfit" "$tmp/b.svg" "$tmp/ed.svg" "$tmp/bz.svg"
if command -v rsvg-convert >/dev/null 2>&1; then
	check "map: the figure renders (rsvg-convert)" rsvg-convert "$tmp/ed.svg" -o "$tmp/ed.png"
else
	skip "map: the figure renders" "rsvg-convert not installed (librsvg2-bin)"
fi
"$ATTNVIZ" --export svg --stage softmax "$L/selfattn.json" -o "$tmp/sa.svg" 2>"$err"
check "map: none without a block" sh -c "! grep -q 'block-map' '$tmp/sa.svg'"
"$ATTNVIZ" --export tex --stage softmax "$L/block.json" -o "$tmp/b.tex" 2>"$err"
check "map: in the TeX export too" has "$tmp/b.tex" 'block: x $\to$ [attention] $\to$ +'
"$ATTNVIZ" --slides "$L/block.json" -o "$tmp/block.html" 2>"$err"
check "map: in the deck's figures" has "$tmp/block.html" 'class="block-map"'

finish
