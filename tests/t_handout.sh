#!/bin/sh
# tests/t_handout.sh — `attnviz --handout LESSON -o FILE.html|FILE.md` (issue 13 §6):
# every step in order with its narration, figure, formula and question; the
# open question's pane without its numbers; an answer key that says what the
# quiz itself says (the plain REPL's `skip`); HTML well-formed (as XML, inline
# SVG included: xmllint, each of those checks a skip without it) and
# self-contained; hostile lesson text escaped in HTML and
# Markdown; a Chinese handout; Markdown's figures beside it. With Chromium
# installed: load, print to PDF, a plausible page count, no request leaves the file.
. "$(dirname "$0")/lib.sh"
trap 'rm -rf "$tmp"' EXIT
SRCDIR=${ATTNVIZ_SRCDIR:-$(pwd)}
L="$SRCDIR/lessons"
# well_formed NAME FILE…: every FILE is well-formed XML (xmllint); without xmllint a skip, said
# and counted (.ci/run installs libxml2-utils), never a check dropped in silence
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

# --- mask.json as HTML: steps, figures, questions, answer key
"$ATTNVIZ" --handout "$L/mask.json" -o "$tmp/mask.html" 2>"$tmp/err"
check "html: written" test -s "$tmp/mask.html"
check "html: says nothing on stderr" test ! -s "$tmp/err"
check "html: one section per step (12)" test "$(count "$tmp/mask.html" '<section class="step"')" = 12
check "html: one inline figure per step" test "$(count "$tmp/mask.html" '<svg ')" = 12
check "html: the steps in order" sh -c "grep -o 'id=\"step-[0-9]*\"' '$tmp/mask.html' | tr -dc '0-9\n' | tr '\n' ' ' | grep -q '^1 2 3 4 5 6 7 8 9 10 11 12 \$'"
check "html: a step's narration" has "$tmp/mask.html" "Softmax turns −∞ into exactly 0"
check "html: a stage's formula" has "$tmp/mask.html" '<p class="formula">masked_ij = scaled_ij'
check "html: a question with its choices" has "$tmp/mask.html" '<li>No: every masked key still gets a share</li>'
check "html: a numeric question gets a line to write on" has "$tmp/mask.html" 'Your answer: <span class="blank">'
check "html: the question's pane has no numbers (softmax step: weights hidden)" has "$tmp/mask.html" 'class="cell hidden"'
# (the key holds each question's "then" too: after the last step, not within a fixed number of lines of the end)
check "html: the answer key is last" sh -c "[ \$(grep -n 'Answer key' '$tmp/mask.html' | tail -n 1 | cut -d: -f1) -gt \$(grep -n '<section class=\"step\"' '$tmp/mask.html' | tail -n 1 | cut -d: -f1) ] && ! sed -n '/Answer key/,\$p' '$tmp/mask.html' | grep -q '<section class=\"step\"'"
# the key says what the quiz says: skip at each question step in the plain REPL
printf 'step 5\nskip\nstep 6\nskip\nstep 7\nskip\nstep 10\nskip\nstep 11\nskip\n' |
	"$ATTNVIZ" --plain "$L/mask.json" 2>&1 | sed -n 's/^Skipped: //p' >"$tmp/skips"
check "html: five answers from the quiz" test "$(wc -l <"$tmp/skips")" = 5
while IFS= read -r a; do
	case "$a" in
	"the answer is "*) want=${a#the answer is }; want=${want%.} ;;
	*) want=$(echo "$a" | sed 's/ is \(.*\)\.$/ = \1/') ;;
	esac
	check "html: the key has \"$want\"" has "$tmp/mask.html" "$want"
done <"$tmp/skips"
check "html: a numeric answer says its tolerance" has "$tmp/mask.html" 'weights[0][0] = 1 (answers within 0.01 count)'
well_formed "html: well-formed (xmllint, as XML, inline SVG included)" "$tmp/mask.html"
check "html: self-contained (no address, no src=, no link, no @import)" \
	sh -c "! grep -Eqi 'https?:|src=|<link|@import|url\\(' '$tmp/mask.html'"
check "html: print CSS" has "$tmp/mask.html" '@media print'

# --- every shipped lesson makes a handout (a figure too large for a page says so in its place)
bad=
mkdir "$tmp/all"
for f in "$L"/*.json; do
	"$ATTNVIZ" --handout "$f" -o "$tmp/all/$(basename "$f" .json).html" 2>/dev/null || bad="$bad $(basename "$f")"
done
expect "html: every shipped lesson" '[ -z "$bad" ]' "failed:$bad"
well_formed "html: every shipped lesson's handout is well-formed" "$tmp"/all/*.html
check "html: --numbers on, a figure too large is a note in its place" sh -c "'$ATTNVIZ' --handout '$L/scale.json' --numbers on -o '$tmp/scale.html' && grep -q 'class=\"note\">export: W_q is 456 × 456' '$tmp/scale.html'"

# --- Markdown: the figures beside it
mkdir -p "$tmp/md dir"
"$ATTNVIZ" --handout "$L/multihead.json" -o "$tmp/md dir/mh notes.md"
check "md: written" test -s "$tmp/md dir/mh notes.md"
check "md: one SVG per step beside it" test "$(ls "$tmp/md dir" | grep -c '^mh notes-step[0-9][0-9]\.svg$')" = 12
check "md: linked by a relative, encoded name" has "$tmp/md dir/mh notes.md" '![Figure 4](mh%20notes-step04.svg)'
check "md: the answer key" has "$tmp/md dir/mh notes.md" '## Answer key'
check "md: a choice answer" has "$tmp/md dir/mh notes.md" "- Step 2: 1) 64, the same"
well_formed "md: the figures are well-formed SVG" "$tmp/md dir"/*.svg

# --- Chinese
"$ATTNVIZ" --handout "$L/mask.json" --lang zh -o "$tmp/zh.html"
check "zh: html lang" has "$tmp/zh.html" '<html lang="zh">'
check "zh: our words in Chinese" has "$tmp/zh.html" '<h2>答案</h2>'
check "zh: the lesson's Chinese narration" has "$tmp/zh.html" 'softmax 把 −∞ 变成'
check "zh: step headings" has "$tmp/zh.html" '第 7 步 · 阶段 softmax'
"$ATTNVIZ" --handout "$L/mask.json" --lang zh -o "$tmp/zh.md"
check "zh: md answer key" has "$tmp/zh.md" '## 答案'

# --- hostile lesson text is escaped
cat >"$tmp/evil.json" <<'JSON'
{
  "attnviz": 1,
  "title": "<script>alert(1)</script> & co",
  "summary": "<img src=http://evil.example/x.png onerror=alert(2)>",
  "tokens": ["<b>", "](javascript:alert(3))", "a"],
  "X": [[1, 0], [0, 1], [1, 1]],
  "W_q": [[1, 0], [0, 1]], "W_k": [[1, 0], [0, 1]], "W_v": [[1, 0], [0, 1]],
  "steps": [
    {"stage": "input", "text": "# not a heading\n[click](http://evil.example) <iframe src=//evil.example></iframe> `code` *star* \u001b[31mred"},
    {"stage": "softmax", "quiz": {"question": "<b>bold?</b> ![x](http://evil.example/y.png)", "choices": ["<u>yes</u>", "no & maybe"], "answer": 1}}
  ]
}
JSON
"$ATTNVIZ" --handout "$tmp/evil.json" -o "$tmp/evil.html" 2>"$tmp/err"
check "hostile: html written" test -s "$tmp/evil.html"
check "hostile: no <script>, <img>, <iframe>, <b>, <u> from the lesson" \
	sh -c "! grep -Eq '<(script|img|iframe|b|u)[ >]' '$tmp/evil.html'"
check "hostile: escaped as text" has "$tmp/evil.html" '&lt;script&gt;alert(1)&lt;/script&gt; &amp; co'
check "hostile: a control character is shown, not sent" sh -c "! grep -q \"\$(printf '\\033')\" '$tmp/evil.html'"
check "hostile: no address is live (only escaped text)" sh -c "! grep -Eq '<[^>]* (src|href)=' '$tmp/evil.html'"
check "hostile: the answer key escapes too" has "$tmp/evil.html" 'no &amp; maybe'
well_formed "hostile: still well-formed" "$tmp/evil.html"
"$ATTNVIZ" --handout "$tmp/evil.json" -o "$tmp/evil.md"
check "hostile: md markup escaped" has "$tmp/evil.md" '\<script\>alert(1)\</script\> \& co'
check "hostile: md link escaped" has "$tmp/evil.md" '\[click\](http://evil.example)'
check "hostile: md heading escaped" has "$tmp/evil.md" '\# not a heading'
check "hostile: md image escaped" has "$tmp/evil.md" '!\[x\](http://evil.example/y.png)'

# --- usage
"$ATTNVIZ" --handout "$L/mask.json" -o "$tmp/x.pdf" 2>"$tmp/err"
check "usage: -o must be .html or .md (exit 2)" test $? = 2
check "usage: says so" has "$tmp/err" '--handout needs -o FILE.html or -o FILE.md'
"$ATTNVIZ" --handout "$L/mask.json" 2>"$tmp/err"
check "usage: -o is needed" test $? = 2
"$ATTNVIZ" --handout "$L/nosuch.json" -o "$tmp/n.html" 2>"$tmp/err"
check "a lesson that is not there: exit 1" test $? = 1
check "a lesson that is not there: nothing written" test ! -e "$tmp/n.html"

# --- headless Chromium: load, print to PDF on A4 and Letter, pages, no request leaves the file
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROME" ] || ! external "$CHROME"; then
	skip_external "chromium: print to PDF" "chromium"
else
	for paper in letter a4; do
		# --print-to-pdf prints on Letter; the A4 run asks for A4 the way a reader's print dialog does
		if [ $paper = a4 ]; then
			sed 's|</head>|<style>@page { size: A4; }</style></head>|' "$tmp/mask.html" >"$tmp/mask-a4.html"
			page=A4 html="$tmp/mask-a4.html"
		else
			page=letter html="$tmp/mask.html"
		fi
		timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
			--disable-background-networking --no-first-run --user-data-dir="$tmp/chrome-$paper" \
			--no-pdf-header-footer --log-net-log="$tmp/net-$paper.json" --print-to-pdf="$tmp/mask-$paper.pdf" \
			"file://$html" >"$tmp/chrome.log" 2>&1
		check "chromium $paper: loads and prints to PDF" test -s "$tmp/mask-$paper.pdf"
		# what the page asked for: requests with an initiator (the browser's own background ones have none)
		grep '"initiator"' "$tmp/net-$paper.json" 2>/dev/null | grep -v '"initiator":"not an origin"' |
			grep -o '"url":"[^"]*"' | grep -v '"url":"file:' >"$tmp/requests" || true
		check "chromium $paper: the net log was written" test -s "$tmp/net-$paper.json"
		expect "chromium $paper: no request leaves the file" '[ ! -s "$tmp/requests" ]' "$(head -n 3 "$tmp/requests")"
		if command -v pdfinfo >/dev/null 2>&1; then
			pages=$(pdfinfo "$tmp/mask-$paper.pdf" 2>/dev/null | sed -n 's/^Pages: *//p')
			pages=${pages:-0}
			check "chromium $paper: printed on $page" sh -c "pdfinfo '$tmp/mask-$paper.pdf' | grep -qi 'page size:.*$page'"
			expect "chromium $paper: page count is plausible (4 to 26 for 12 steps; got $pages)" \
				'[ "$pages" -ge 4 ] && [ "$pages" -le 26 ]'
		else
			skip_missing "chromium $paper: page count" pdfinfo "pdfinfo not installed (poppler-utils)"
		fi
	done
fi

# issue 27, 11: a write that fails half way (a full disk; here a folder where the first figure goes, written
# last) leaves no handout half made: neither the page nor the figures written before it
mkdir -p "$tmp/half/notes-step01.svg"
"$ATTNVIZ" --handout "$L/multihead.json" -o "$tmp/half/notes.md" 2>"$err"
expect "md: a write failing half way is an error and leaves nothing half written" \
	'[ $? -eq 1 ] && [ ! -e "$tmp/half/notes.md" ] && [ "$(ls "$tmp/half" | grep -c "^notes-step[0-9][0-9]\.svg$")" = 1 ] && [ -d "$tmp/half/notes-step01.svg" ]'
# --- §1 of issue 26: a handout of any shipped lesson is small enough to print (under 2 MB, the
# Markdown's figures counted); scale.json's 123 × 123 matrices were 91 MB of numbers
big=""
for f in "$L"/*.json; do
	n=$(basename "$f" .json)
	"$ATTNVIZ" --handout "$f" -o "$tmp/size-$n.html" 2>/dev/null || { big="$big $n(failed)"; continue; }
	"$ATTNVIZ" --handout "$f" -o "$tmp/size-$n.md" 2>/dev/null || { big="$big $n(md failed)"; continue; }
	h=$(wc -c <"$tmp/size-$n.html")
	m=$(cat "$tmp/size-$n.md" "$tmp/size-$n"-step*.svg 2>/dev/null | wc -c)
	[ "$h" -lt 2000000 ] || big="$big $n.html=$h"
	[ "$m" -lt 2000000 ] || big="$big $n.md=$m"
	rm -f "$tmp/size-$n".* "$tmp/size-$n"-step*.svg
done
expect "every shipped lesson's handout (html, md with its figures) is under 2 MB${big:+:$big}" '[ -z "$big" ]'
# a large matrix is a heatmap with its reduction said; --numbers on draws the numbers, off never
"$ATTNVIZ" --handout "$L/scale.json" -o "$tmp/scale.html" 2>"$tmp/err"
check "scale handout: heatmaps that say their reduction" has "$tmp/scale.html" 'each cell the strongest of 3 × 3 cells (41 × 41 drawn)'
"$ATTNVIZ" --handout "$L/mask.json" --numbers off -o "$tmp/mask-off.html" 2>"$tmp/err"
check "--numbers off: no numbers in a handout's figures (an open question's ? only)" \
	test "$(grep -o 'class="num"[^>]*>[^<]*' "$tmp/mask-off.html" | grep -vc '>?$')" -eq 0
"$ATTNVIZ" --handout "$L/mask.json" --lang zh -o "$tmp/mask-zh.html" --numbers off 2>"$tmp/err"
check "--numbers off in Chinese: the caption in Chinese" has "$tmp/mask-zh.html" '热图：不写数字'
"$ATTNVIZ" --handout "$L/mask.json" --numbers maybe -o "$tmp/x.html" >/dev/null 2>"$tmp/err"
expect "--numbers maybe: refused" '[ $? -eq 2 ] && has "$tmp/err" "expected auto, on or off"'

# --- --key: the students' copy (none), the key in a file of its own (separate)
"$ATTNVIZ" --handout "$L/mask.json" --key none -o "$tmp/student.html" 2>"$tmp/err"
check "--key none: a handout without an answer key" sh -c "! grep -q 'Answer key' '$tmp/student.html' && ! grep -q 'answers within' '$tmp/student.html'"
check "--key none: the questions are still there" has "$tmp/student.html" '<li>No: every masked key still gets a share</li>'
check "--key none: no key file beside it" test ! -e "$tmp/student-key.html"
"$ATTNVIZ" --handout "$L/mask.json" --key separate -o "$tmp/class.html" 2>"$tmp/err"
check "--key separate: the handout keeps no answers" sh -c "! grep -q 'answers within' '$tmp/class.html'"
check "--key separate: FILE-key.html holds the key" has "$tmp/class-key.html" 'weights[0][0] = 1 (answers within 0.01 count)'
check "--key separate: the key names its lesson" has "$tmp/class-key.html" '<h1>Masked attention'
well_formed "--key separate: the key is well-formed" "$tmp/class-key.html"
"$ATTNVIZ" --handout "$L/mask.json" --key separate --lang zh -o "$tmp/class zh.md" 2>"$tmp/err"
check "--key separate, Markdown in Chinese: FILE-key.md" has "$tmp/class zh-key.md" '## 答案'
check "--key separate, Markdown: the handout has no key" sh -c "! grep -q '## 答案' '$tmp/class zh.md'"
"$ATTNVIZ" --handout "$L/mask.json" --key sep -o "$tmp/x.html" >/dev/null 2>"$tmp/err"
expect "--key sep: refused, naming the choices" '[ $? -eq 2 ] && has "$tmp/err" "expected end, separate, none or notes"'
"$ATTNVIZ" --key none "$L/mask.json" >/dev/null 2>"$tmp/err"
expect "--key without --handout: refused" '[ $? -eq 2 ] && has "$tmp/err" "--key goes with --handout"'

# --- --precision: the figures' decimals (issue 26 §3)
"$ATTNVIZ" --handout "$L/mask.json" --precision 2 -o "$tmp/p2.html" 2>"$err"
expect "--precision 2: the figures' numbers have 2 decimals, none 4" \
	'grep -q ">0\.05<" "$tmp/p2.html" && [ "$(grep -o "class=\"num\"[^>]*>[0-9.-]*" "$tmp/p2.html" | grep -c "\.[0-9][0-9][0-9]")" -eq 0 ]'
"$ATTNVIZ" --precision 2 "$L/mask.json" </dev/null >/dev/null 2>"$err"
expect "--precision without --export, --handout or --slides: refused" '[ $? -eq 2 ] && has "$err" "--precision goes with --export, --handout or --slides"'

# --- compact pages (issue 26 §3: block.json was 15 half-empty Letter pages): a step is never cut, steps
# share a page where they fit, the figure floats beside the text when printed; no page break per step
"$ATTNVIZ" --handout "$L/block.json" -o "$tmp/block.html" 2>"$err"
expect "compact: steps kept whole, no page break per step, the figure beside the text" \
	'grep -q "section.step { break-inside: avoid" "$tmp/block.html" && ! grep -q "section.step[^}]*break-\(before\|after\): *page" "$tmp/block.html" && grep -q "section.step figure { float: right; max-width: 60%" "$tmp/block.html"'
expect "compact: the figure comes before the narration it floats beside" \
	'awk "/<section class=\"step\" id=\"step-1\"/,/<\/section>/" "$tmp/block.html" | grep -n "<figure>\|<p>" | head -n 1 | grep -q "<figure>"'
if [ -z "$CHROME" ] || ! external "$CHROME"; then
	skip_external "chromium: block.json's handout on compact pages" "chromium"
elif ! command -v pdfinfo >/dev/null 2>&1; then
	skip_missing "chromium: block.json's handout on compact pages" pdfinfo "pdfinfo not installed (poppler-utils)"
else
	timeout 120 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
		--user-data-dir="$tmp/chrome-block" --no-pdf-header-footer --print-to-pdf="$tmp/block.pdf" \
		"file://$tmp/block.html" >/dev/null 2>&1
	pages=$(pdfinfo "$tmp/block.pdf" 2>/dev/null | sed -n 's/^Pages: *//p')
	# 14 steps and the answer key: 15 pages and more when each step took a page
	expect "chromium: block.json's 14 steps print on 10 Letter pages or fewer, the key included (got ${pages:-none})" \
		'[ "${pages:-0}" -ge 4 ] && [ "${pages:-99}" -le 10 ]'
fi

finish
