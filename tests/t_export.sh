#!/bin/sh
# t_export.sh: exports and files written for a classroom — CSV numbers against
# --dump, the JSON slice against --dump, SVG parsed as XML (xmllint) and
# rendered to PNG (rsvg-convert), Markdown and TeX shape, the command line's
# exit statuses, atomic replacement and unwritable paths, `save` round trips
# through --check and --dump, and --transcript.
# Run from the repository root; $ATTNVIZ is the binary, $BUILD the build dir.
# Prints "ok - NAME" / "not ok - NAME" lines (a missing tool: "ok - NAME # SKIP")
# and ends with "N passed, N failed, N skipped" (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

JSONCMP=$BUILD/tests/jsoncmp
export LC_ALL=C.UTF-8

# A CSV export (CRLF, label column, numbers or an empty field for −∞) as a JSON array of rows.
csv_rows() {
	tr -d '\r' <"$1" | awk -F, 'NR > 1 {
		printf "%s[", (NR > 2 ? ",\n" : "[")
		for (i = 2; i <= NF; i++) printf "%s%s", (i > 2 ? "," : ""), ($i == "" ? "null" : $i)
		printf "]"
	} END { print "]" }'
}

MH=lessons/multihead.json
MASK=lessons/mask.json
"$ATTNVIZ" --dump "$MH" >"$tmp/mh.dump" 2>"$err"
"$ATTNVIZ" --dump "$MASK" >"$tmp/mask.dump" 2>"$err"

# ------------------------------------------------------------ CSV against --dump

"$ATTNVIZ" --export csv --stage softmax --matrix weights --head 1 "$MH" -o "$tmp/w1.csv" 2>"$err"
check "csv: exit 0 and a file" test -s "$tmp/w1.csv"
check "csv: header row of column labels" [ "$(head -n 1 "$tmp/w1.csv" | tr -d '\r')" = 'weights,I,saw,a,saw' ]
check "csv: first column the row labels" [ "$(tr -d '\r' <"$tmp/w1.csv" | cut -d, -f1 | tr '\n' ' ')" = 'weights I saw a saw ' ]
check "csv: CRLF line ends (RFC 4180)" [ "$(count "$tmp/w1.csv" "$(printf '\r')")" -eq 5 ]
{ printf '{"heads": [{}, {"weights": '; csv_rows "$tmp/w1.csv"; printf '}]}\n'; } >"$tmp/w1.json"
if "$JSONCMP" --only-expected-keys "$tmp/w1.json" "$tmp/mh.dump" >"$tmp/diff" 2>&1; then
	ok "csv: weights head 1 equal --dump"
else
	not_ok "csv: weights head 1 equal --dump" "$(head -n 5 "$tmp/diff")"
fi
"$ATTNVIZ" --export csv --matrix masked --head 0 "$MASK" -o "$tmp/m0.csv" 2>"$err"
{ printf '{"heads": [{"masked": '; csv_rows "$tmp/m0.csv"; printf '}, {}]}\n'; } >"$tmp/m0.json"
if "$JSONCMP" --only-expected-keys "$tmp/m0.json" "$tmp/mask.dump" >"$tmp/diff" 2>&1; then
	ok "csv: masked (with -inf) equal --dump"
else
	not_ok "csv: masked (with -inf) equal --dump" "$(head -n 5 "$tmp/diff")"
fi
# −∞ as a value spreadsheets read: an empty field (the text "-inf" is a string to them)
check "csv: no -inf text" [ "$(count "$tmp/m0.csv" 'inf')" -eq 0 ]
check "csv: masked cells are empty fields" [ "$(tr -d '\r' <"$tmp/m0.csv" | awk -F, 'NR > 1 { for (i = 2; i <= NF; i++) n += $i == "" } END { print n + 0 }')" -eq 21 ]

# ------------------------------------------------------------ JSON slice against --dump

"$ATTNVIZ" --export json --stage softmax --head 1 "$MH" -o "$tmp/slice.json" 2>"$err"
check "json: parses" "$JSONCMP" "$tmp/slice.json" "$tmp/slice.json"
expect "json: stage, head, formula keys" 'grep -q "\"stage\":[[:space:]]*\"softmax\"" "$tmp/slice.json" &&
	grep -q "\"head\":[[:space:]]*1" "$tmp/slice.json" && has "$tmp/slice.json" "\"formula\":"'
w=$(sed -n 's/^[[:space:]]*"weights":[[:space:]]*\(\[.*\]\),*$/\1/p' "$tmp/slice.json")
# multihead has no mask: its softmax reads scaled
m=$(sed -n 's/^[[:space:]]*"scaled":[[:space:]]*\(\[.*\]\),*$/\1/p' "$tmp/slice.json")
printf '{"heads": [{}, {"scaled": %s, "weights": %s}]}\n' "$m" "$w" >"$tmp/slice-exp.json"
if [ -n "$w" ] && [ -n "$m" ] && "$JSONCMP" --only-expected-keys "$tmp/slice-exp.json" "$tmp/mh.dump" >"$tmp/diff" 2>&1; then
	ok "json: the slice equals --dump"
else
	not_ok "json: the slice equals --dump" "$(head -n 5 "$tmp/diff" 2>/dev/null)"
fi

# ------------------------------------------------------------ SVG

"$ATTNVIZ" --export svg --stage softmax "$MH" -o "$tmp/soft.svg" 2>"$err"
check "svg: written" test -s "$tmp/soft.svg"
check "svg: 32 cells (scaled and weights, 4 x 4)" test "$(count "$tmp/soft.svg" 'class="cell"')" -eq 32
check "svg: token labels" test "$(count "$tmp/soft.svg" '>saw</text>')" -ge 8
expect "svg: the formula, with scaled where there is no mask" 'has "$tmp/soft.svg" "weights = softmax(scaled)" && hasnt "$tmp/soft.svg" "masked"'
check "svg: a legend per pane" test "$(count "$tmp/soft.svg" 'class="legend"')" -eq 2
cat >"$tmp/hostile.json" <<'EOF'
{"attnviz": 1, "title": "<script>&\"' \u0001 x", "tokens": ["a<b", "c&d", "e\"f", "\u001b[31m"],
 "X": {"random": "normal", "rows": 4, "cols": 3, "seed": 3}, "mask": "causal",
 "W_q": {"random": "normal", "rows": 3, "cols": 2, "seed": 4},
 "W_k": {"random": "normal", "rows": 3, "cols": 2, "seed": 5},
 "W_v": {"identity": 3}}
EOF
"$ATTNVIZ" --export svg --stage mask "$tmp/hostile.json" -o "$tmp/hostile.svg" 2>"$err"
expect "svg: a hostile title and tokens are escaped" 'hasnt "$tmp/hostile.svg" "<script>" &&
	has "$tmp/hostile.svg" "&lt;script&gt;&amp;&quot;&apos;" && has "$tmp/hostile.svg" ">a&lt;b</text>"'
expect "svg: no control characters" '[ -s "$tmp/hostile.svg" ] && ! tr -d "\n" <"$tmp/hostile.svg" | grep -q "[[:cntrl:]]"'
check "svg: masked cells show −∞" test "$(count "$tmp/hostile.svg" '>−∞</text>')" -eq 6
if command -v xmllint >/dev/null 2>&1; then
	for f in soft hostile; do
		check "svg: $f.svg is well-formed XML (xmllint)" xmllint --noout "$tmp/$f.svg"
	done
	# every stage of two lessons
	bad=
	for st in input project split scores scale softmax weighted concat output; do
		"$ATTNVIZ" --export svg --stage $st "$MH" -o "$tmp/st.svg" 2>"$err" && xmllint --noout "$tmp/st.svg" 2>>"$err" || bad="$bad $st"
	done
	check "svg: every stage of multihead is well-formed${bad:+ (not:$bad)}" test -z "$bad"
else
	skip "svg: well-formed XML" "xmllint not installed (libxml2-utils)"
fi
if command -v rsvg-convert >/dev/null 2>&1; then
	rsvg-convert "$tmp/soft.svg" -o "$tmp/soft.png" 2>"$err"
	expect "svg: renders to a PNG (rsvg-convert)" 'head -c 8 "$tmp/soft.png" | od -An -c | grep -q "P   N   G"'
	rsvg-convert "$tmp/hostile.svg" -o "$tmp/hostile.png" 2>"$err"
	check "svg: the hostile one renders too" test -s "$tmp/hostile.png"
else
	skip "svg: renders to a PNG" "rsvg-convert not installed (librsvg2-bin)"
fi

# ------------------------------------------------------------ Markdown and TeX

"$ATTNVIZ" --export md --stage softmax "$MH" -o "$tmp/soft.md" 2>"$err"
expect "md: a heading with the stage" 'head -n 1 "$tmp/soft.md" | grep -q "^## .*stage softmax"'
check "md: two tables (scaled, weights)" [ "$(grep -c '^|---|' "$tmp/soft.md")" -eq 2 ]
expect "md: every table row has 6 pipes" 'grep "^|" "$tmp/soft.md" | awk -F"|" "NF != 7 { bad = 1 } END { exit bad || NR == 0 }"'
check "md: the narration as a quote" grep -q '^> ' "$tmp/soft.md"
check "md: the formula" has "$tmp/soft.md" 'softmax(scaled)'
"$ATTNVIZ" --export tex --stage softmax "$MH" -o "$tmp/soft.tex" 2>"$err"
expect "tex: one document, two bmatrix" '[ "$(count "$tmp/soft.tex" "begin{document}") $(count "$tmp/soft.tex" "end{document}") $(count "$tmp/soft.tex" "begin{bmatrix}") $(count "$tmp/soft.tex" "end{bmatrix}")" = "1 1 2 2" ]'
check "tex: the formula" has "$tmp/soft.tex" '\operatorname{softmax}(\mathrm{scaled})'
"$ATTNVIZ" --export tex --stage mask "$tmp/hostile.json" -o "$tmp/hostile.tex" 2>"$err"
expect "tex: specials escaped, -inf as \\infty" 'has "$tmp/hostile.tex" "c\\&d" && has "$tmp/hostile.tex" "-\\infty"'
"$ATTNVIZ" --export md --stage weighted "$MH" -o - >"$tmp/stdout.md" 2>"$err"
check "-o - writes to stdout" grep -q '^### weighted' "$tmp/stdout.md"

# ------------------------------------------------------------ the command line

"$ATTNVIZ" --export svg "$MH" -o "$tmp/x.svg" >/dev/null 2>"$err"
check "usage: --export without --stage exits 2" test $? -eq 2
"$ATTNVIZ" --export svg --stage softmax "$MH" >/dev/null 2>"$err"
check "usage: --export without -o exits 2" test $? -eq 2
"$ATTNVIZ" --export bmp --stage softmax "$MH" -o "$tmp/x.png" >/dev/null 2>"$err"
check "usage: an unknown format exits 2" test $? -eq 2
"$ATTNVIZ" --export svg --stage softmx "$MH" -o "$tmp/x.svg" >/dev/null 2>"$err"
check "usage: an unknown stage exits 2" test $? -eq 2
"$ATTNVIZ" --export svg --stage mask "$MH" -o "$tmp/x.svg" >/dev/null 2>"$err"
rc=$?
expect "lesson: a stage this lesson lacks exits 1 and says so" '[ "$rc" -eq 1 ] && has "$err" "no mask stage"'
"$ATTNVIZ" --export svg --stage softmax --head 5 "$MH" -o "$tmp/x.svg" >/dev/null 2>"$err"
check "lesson: a head out of range exits 1" test $? -eq 1
"$ATTNVIZ" --export svg --stage softmax "$tmp/nonexistent.json" -o "$tmp/x.svg" >/dev/null 2>"$err"
check "lesson: a missing lesson exits 1" test $? -eq 1
check "nothing written on errors" test ! -e "$tmp/x.svg"

# ------------------------------------------------------------ writing files

echo "precious" >"$tmp/keep.svg"
"$ATTNVIZ" --export svg --stage softmax "$MH" -o "$tmp/keep.svg" 2>"$err"
check "an existing file is replaced by the whole export" [ "$(tail -n 1 "$tmp/keep.svg")" = '</svg>' ]
check "no temporary files left" test -z "$(ls -A "$tmp" | grep '^\.')"
"$ATTNVIZ" --export svg --stage softmax "$MH" -o "$tmp/no/such/dir/x.svg" >/dev/null 2>"$err"
rc=$?
expect "an unwritable path: exit 1, a clear error" '[ "$rc" -eq 1 ] && grep -q "cannot write .*no/such/dir/x.svg: No such file or directory" "$err"'
printf 'export svg softmax %s/no/dir/a.svg\ngoto softmax\nexport svg %s/b.svg\n' "$tmp" "$tmp" |
	"$ATTNVIZ" --plain "$MH" >"$tmp/out" 2>"$err"
expect "REPL: an unwritable path is an error and attnviz carries on" 'has "$err" "cannot write" &&
	has "$tmp/out" "wrote stage softmax as svg" && [ -s "$tmp/b.svg" ]'

# ------------------------------------------------------------ save

printf 'set W_q[0][1] 0.25\nscale 0.5\nmask causal\nsave %s/saved.json\nexport json project %s/p1.json\nexport json softmax %s/s1.json\n' \
	"$tmp" "$tmp" "$tmp" | "$ATTNVIZ" --plain "$MH" >"$tmp/out" 2>"$err"
check "save: says where" has "$tmp/out" 'saved the lesson with your edits'
check "save: no errors" test ! -s "$err"
expect "save: --check accepts the saved lesson" '"$ATTNVIZ" --check "$tmp/saved.json" >/dev/null'
"$ATTNVIZ" --export json --stage project "$tmp/saved.json" -o "$tmp/p2.json" 2>"$err"
"$ATTNVIZ" --export json --stage softmax "$tmp/saved.json" -o "$tmp/s2.json" 2>"$err"
expect "save: the edited session and the saved lesson compute the same" '[ -s "$tmp/p1.json" ] && cmp -s "$tmp/p1.json" "$tmp/p2.json" &&
	[ -s "$tmp/s1.json" ] && cmp -s "$tmp/s1.json" "$tmp/s2.json"'
expect "save: the edits are in the file" 'grep -q "\"scale\":[[:space:]]*0.5" "$tmp/saved.json" && grep -q "\"mask\":[[:space:]]*\"causal\"" "$tmp/saved.json"'
bad=
places=
for l in lessons/*.json tests/golden/*.json tests/golden/v2/block_*.json tests/golden/v2/grad_*.json tests/golden/v2/encdec_*.json tests/golden/ropescale/*.json; do
	case $l in *.ref.json) continue ;; esac
	name=$(basename "$l" .json)
	rm -f "$tmp/rt.json"
	printf 'save %s/rt.json\n' "$tmp" | "$ATTNVIZ" --plain "$l" >/dev/null 2>"$err"
	"$ATTNVIZ" --dump "$l" >"$tmp/d1" 2>/dev/null
	"$ATTNVIZ" --dump "$tmp/rt.json" >"$tmp/d2" 2>/dev/null
	# a lesson on a real model saves as numbers: a LLaMA-style FFN's absent biases
	# come back as the zeros a lesson's absent biases mean (its dump names them),
	# so every number of the first dump must be in the second, exactly
	if grep -q '^[[:space:]]*"model"[[:space:]]*:' "$l"; then
		[ -s "$tmp/d1" ] && "$BUILD/tests/jsoncmp" --rtol 0 --atol 0 --only-expected-keys "$tmp/d1" "$tmp/d2" >/dev/null ||
			bad="$bad $name"
	else
		[ -s "$tmp/d1" ] && cmp -s "$tmp/d1" "$tmp/d2" || bad="$bad $name"
	fi
	# the steps' places inside decode and flash stages are kept too
	for key in t tile; do
		[ "$(grep -o "\"$key\"[[:space:]]*:" "$l" | wc -l)" -eq "$(grep -o "\"$key\"[[:space:]]*:" "$tmp/rt.json" 2>/dev/null | wc -l)" ] ||
			places="$places $name.$key"
	done
done
check "save: every lesson round-trips to a byte-identical --dump${bad:+ (not:$bad)}" test -z "$bad"
# an encoder–decoder with edits in its encoder and its decoder: the saved file computes what the session did
printf 'layer e1\nset W_q[0][1] 0.25\nmask padding 1,1,0\nexport json norm2 %s/e1.json\nlayer 1\nset W_k[2][0] -0.5\nexport json softmax %s/c1.json\nsave %s/ed.json\n' \
	"$tmp" "$tmp" "$tmp" | "$ATTNVIZ" --plain lessons/encdec.json >"$tmp/out" 2>"$err"
check "save: an encoder–decoder with edits saves without errors" test ! -s "$err"
"$ATTNVIZ" --export json --stage norm2 --layer e1 "$tmp/ed.json" -o "$tmp/e2.json" 2>"$err"
"$ATTNVIZ" --export json --stage softmax --layer 1 "$tmp/ed.json" -o "$tmp/c2.json" 2>>"$err"
expect "save: the saved encoder–decoder keeps the encoder's and the decoder's edits" '[ -s "$tmp/e1.json" ] && cmp -s "$tmp/e1.json" "$tmp/e2.json" &&
	[ -s "$tmp/c1.json" ] && cmp -s "$tmp/c1.json" "$tmp/c2.json"'
"$ATTNVIZ" --export json --stage norm2 --layer e1 lessons/encdec.json -o "$tmp/e0.json" 2>/dev/null
expect "save: the encoder's edit changed its numbers (the check above compares something)" '! cmp -s "$tmp/e1.json" "$tmp/e0.json"'
expect "save: the steps into the encoder are kept" '[ "$(grep -c "\"encoder\":[[:space:]]*true" "$tmp/ed.json")" -eq 4 ]'
check "save: steps keep their decode step and tile${places:+ (not:$places)}" test -z "$places"

# ------------------------------------------------------------ --transcript

printf 'goto softmax\nexport csv weights %s/t.csv\nbogus\nshow W_q\n' "$tmp" |
	"$ATTNVIZ" --plain --transcript "$tmp/tr.txt" "$MH" >"$tmp/out" 2>"$err"
expect "transcript: the commands as typed" 'grep -qx "attnviz> goto softmax" "$tmp/tr.txt" && grep -qx "attnviz> bogus" "$tmp/tr.txt"'
check "transcript: the step printed after a command" has "$tmp/tr.txt" 'stage: softmax'
expect "transcript: messages and errors" 'grep -q "^wrote matrix weights as csv" "$tmp/tr.txt" && grep -q "^error: unknown command: bogus" "$tmp/tr.txt"'
check "transcript: shown matrices" grep -q '^W_q  4 × 4' "$tmp/tr.txt"
check "transcript: no ANSI escapes" hasnt "$tmp/tr.txt" "$ESC"
expect "transcript: stdout is unchanged" 'has "$tmp/out" "stage: softmax" && hasnt "$tmp/out" "attnviz> goto"'
printf 'next\n' | "$ATTNVIZ" --plain --transcript "$tmp/tr.txt" "$MH" >/dev/null 2>"$err"
expect "transcript: appends" 'grep -qx "attnviz> goto softmax" "$tmp/tr.txt" && grep -qx "attnviz> next" "$tmp/tr.txt"'
"$ATTNVIZ" --plain --transcript "$tmp/no/dir/tr.txt" "$MH" </dev/null >/dev/null 2>"$err"
rc=$?
expect "transcript: an unwritable file exits 1" '[ "$rc" -eq 1 ] && has "$err" "cannot open transcript"'
"$ATTNVIZ" --dump "$MH" --transcript "$tmp/tr2.txt" >/dev/null 2>"$err"
check "transcript: only with the REPL (exit 2)" test $? -eq 2

# --theme chooses the figure's palette; an unknown theme is an error for an export
"$ATTNVIZ" --export svg --stage softmax --theme viridis "$MH" -o "$tmp/viridis.svg" 2>"$err"
"$ATTNVIZ" --export svg --stage softmax "$MH" -o "$tmp/default.svg" 2>>"$err"
expect "svg --theme viridis: a different palette" '[ -s "$tmp/viridis.svg" ] && [ -s "$tmp/default.svg" ] && ! cmp -s "$tmp/viridis.svg" "$tmp/default.svg"'
"$ATTNVIZ" --export svg --stage softmax --theme nosuch "$MH" -o "$tmp/nosuch.svg" 2>"$err"
rc=$?
expect "svg --theme nosuch: exit 1, says why" '[ "$rc" -eq 1 ] && has "$err" "unknown theme" && [ ! -e "$tmp/nosuch.svg" ]'

# A figure of a 1024 × 1024 matrix in numbers would be hundreds of MB: --numbers on refuses it for svg,
# md and tex; by default (auto) it is a heatmap, md and tex say where the numbers are; csv writes it.
cat >"$tmp/big.json" <<'EOF2'
{"attnviz": 1, "X": {"random": "normal", "rows": 300, "cols": 4, "seed": 1},
 "W_q": {"identity": 4}, "W_k": {"identity": 4}, "W_v": {"identity": 4}}
EOF2
"$ATTNVIZ" --export svg --stage softmax --numbers on "$tmp/big.json" -o "$tmp/big.svg" 2>"$err"
rc=$?
expect "svg --numbers on: a 300 × 300 matrix is refused, naming the limit" '[ "$rc" -eq 1 ] && has "$err" "too many cells for a figure" && [ ! -e "$tmp/big.svg" ]'
"$ATTNVIZ" --export svg --stage softmax "$tmp/big.json" -o "$tmp/big.svg" 2>"$err"
expect "svg: a 300 × 300 matrix is a heatmap of 50 × 50 cells, no numbers, the reduction said ($(wc -c <"$tmp/big.svg") bytes)" \
	'[ "$(count "$tmp/big.svg" "class=\"num\"")" -eq 0 ] && has "$tmp/big.svg" "the strongest of 7 × 7 cells (43 × 43 drawn)" &&
	 [ "$(wc -c <"$tmp/big.svg")" -lt 200000 ]'
for f in md tex; do
	"$ATTNVIZ" --export $f --stage softmax "$tmp/big.json" -o "$tmp/big.$f" 2>"$err"
	expect "$f: a 300 × 300 matrix is not a table of numbers; it says where they are" \
		'[ "$(wc -c <"$tmp/big.$f")" -lt 20000 ] && has "$tmp/big.$f" "csv and json exports"'
done
"$ATTNVIZ" --export svg --stage softmax --numbers off "$MH" -o "$tmp/off.svg" 2>"$err"
"$ATTNVIZ" --export svg --stage softmax --numbers on "$MH" -o "$tmp/on.svg" 2>>"$err"
expect "--numbers off: a 4 × 4 figure without numbers; on: with them" \
	'[ "$(count "$tmp/off.svg" "class=\"num\"")" -eq 0 ] && has "$tmp/off.svg" "heatmap: no numbers" &&
	 [ "$(count "$tmp/on.svg" "class=\"num\"")" -gt 0 ]'
"$ATTNVIZ" --numbers off "$MH" >/dev/null 2>"$err" </dev/null
expect "--numbers without --export, --handout or --slides: refused" '[ $? -eq 2 ] && has "$err" "goes with --export, --handout or --slides"'
"$ATTNVIZ" --export csv --matrix weights "$tmp/big.json" -o "$tmp/big.csv" 2>"$err"
check "csv: the same matrix is written" [ "$(wc -l <"$tmp/big.csv")" -eq 301 ]

# md, tex and json show the panes the SVG figure shows (fig_panes): at concat every head beside concat,
# at split and scores one head's columns, Kᵀ transposed — not the current head's whole matrices
for spec in "concat 1" "split 0" "scores 1"; do
	st=${spec% *}
	hd=${spec#* }
	"$ATTNVIZ" --export svg --stage "$st" --head "$hd" "$MH" -o "$tmp/p.svg" 2>"$err"
	"$ATTNVIZ" --export md --stage "$st" --head "$hd" "$MH" -o "$tmp/p.md" 2>>"$err"
	"$ATTNVIZ" --export json --stage "$st" --head "$hd" "$MH" -o "$tmp/p.json" 2>>"$err"
	"$ATTNVIZ" --export tex --stage "$st" --head "$hd" "$MH" -o "$tmp/p.tex" 2>>"$err"
	sed -n 's/.*class="pane-title"[^>]*>\([^<]*\)<.*/\1/p' "$tmp/p.svg" | sed 's/  [0-9]* × [0-9]*$//' >"$tmp/p-svg"
	sed -n 's/^### \(.*\) ([0-9]* × [0-9]*)$/\1/p' "$tmp/p.md" >"$tmp/p-md"
	python3 -c 'import json, sys; [print(p["name"]) for p in json.load(open(sys.argv[1]))["panes"]]' "$tmp/p.json" >"$tmp/p-json" 2>>"$err"
	expect "md at $st (head $hd): the SVG's panes, in order ($(tr '\n' ',' <"$tmp/p-svg"))" \
		'[ -s "$tmp/p-svg" ] && cmp -s "$tmp/p-svg" "$tmp/p-md"'
	expect "json at $st (head $hd): the SVG's panes, in order" '[ -s "$tmp/p-svg" ] && cmp -s "$tmp/p-svg" "$tmp/p-json"'
	expect "tex at $st (head $hd): as many matrices as the SVG's panes" \
		'[ "$(grep -c "begin{bmatrix}" "$tmp/p.tex")" -eq "$(wc -l <"$tmp/p-svg")" ]'
done
# the numbers: head 1's output at concat is its own 4 × 2, labelled with the columns it fills (2, 3)
"$ATTNVIZ" --export json --stage concat --head 0 "$MH" -o "$tmp/c.json" 2>"$err"
"$ATTNVIZ" --dump "$MH" >"$tmp/c.dump" 2>>"$err"
expect "json at concat (head 0): both heads' outputs beside concat; head 1's is its own (as --dump), in columns 2 and 3" \
	'python3 -c "import json, sys
e = json.load(open(sys.argv[1])); d = json.load(open(sys.argv[2]))
n = [q[\"name\"] for q in e[\"panes\"]]
p = [q for q in e[\"panes\"] if q[\"name\"] == \"weighted (head 1)\"][0]
sys.exit(not (n == [\"weighted (head 0)\", \"weighted (head 1)\", \"concat\"] and p[\"values\"] == d[\"heads\"][1][\"output\"] and p[\"columns\"] == [\"2\", \"3\"]))" "$tmp/c.json" "$tmp/c.dump"'

# ------------------------------------------------------------ --export svg --view model (issue 22 §1)

"$ATTNVIZ" --export svg --view model "$MH" -o "$tmp/grid.svg" 2>"$err"
check "view model: a lesson's grid, one thumbnail per layer x head (1 x 2)" test "$(count "$tmp/grid.svg" 'class="thumb"')" -eq 2
expect "view model: labels L0 H0, L0 H1 and the scores under them" 'has "$tmp/grid.svg" ">L0 H1</text>" &&
	has "$tmp/grid.svg" "prev " && has "$tmp/grid.svg" "first " && has "$tmp/grid.svg" "diag " && has "$tmp/grid.svg" "ind —"'
"$ATTNVIZ" --export svg --view model lessons/encdec.json -o "$tmp/grid-ed.svg" 2>"$err"
check "view model: an encoder–decoder, every walk layer's heads" test "$(count "$tmp/grid-ed.svg" 'class="thumb"')" -eq 4
"$ATTNVIZ" --model tests/models/gpt2 --prompt "the cat sat on the mat" --export svg --view model -o "$tmp/grid-m.svg" 2>"$err"
check "view model: a model's grid, 2 layers x 4 heads" test "$(count "$tmp/grid-m.svg" 'class="thumb"')" -eq 8
expect "view model: a model's induction scores are numbers" '[ "$(count_re "$tmp/grid-m.svg" "ind 0\.[0-9][0-9]<")" -eq 8 ]'
check "view model: under 200 KB" test "$(wc -c <"$tmp/grid-m.svg")" -lt 200000
"$ATTNVIZ" --model induction --prompt "A B C D A B C" --export svg --view model -o "$tmp/grid-i.svg" 2>"$err"
check "view model: every text inside the canvas, the title too (a grid narrower than its title)" "$BUILD/tests/svgfit" "$tmp/grid-i.svg" "$tmp/grid-m.svg" "$tmp/grid.svg"
"$ATTNVIZ" --lang zh --model induction --prompt "A B C D A B C" --export svg --view model -o "$tmp/grid-zh.svg" 2>"$err"
expect "view model in Chinese: the title and the legend's word, inside the canvas" 'has "$tmp/grid-zh.svg" "模型总览：2 层 × 2 个头" && has "$tmp/grid-zh.svg" ">权重 0<" && ! has "$tmp/grid-zh.svg" "model view" && "$BUILD/tests/svgfit" "$tmp/grid-zh.svg"'
long=$(awk 'BEGIN { for (i = 0; i < 4; i++) printf "the cat sat on the mat " }') # 30 tokens: the model takes 32
"$ATTNVIZ" --model tests/models/gpt2 --prompt "$long" --export svg --view model -o "$tmp/grid-l.svg" 2>"$err"
expect "view model: a long prompt is down-sampled to 24 x 24 cells a thumbnail" \
	'[ "$(grep -c "^<rect x=\"[0-9.]*\" y=\"[0-9.]*\" width=\"4.00\"" "$tmp/grid-l.svg")" -eq $((8 * 24 * 24)) ]'
if command -v xmllint >/dev/null 2>&1; then
	for f in grid grid-ed grid-m grid-l; do
		check "view model: $f.svg is well-formed XML (xmllint)" xmllint --noout "$tmp/$f.svg"
	done
else
	skip "view model: well-formed XML" "xmllint not installed (libxml2-utils)"
fi
"$ATTNVIZ" --export svg --view heads "$MH" -o "$tmp/x.svg" 2>"$err"; rc=$?
expect "view model: a bad --view word is refused, saying what it expects" '[ $rc -eq 2 ] && grep -q "\-\-view: expected model" "$err" && [ ! -e "$tmp/x.svg" ]'
"$ATTNVIZ" --export csv --view model "$MH" -o "$tmp/x.csv" 2>"$err"; rc=$?
expect "view model: only with svg" '[ $rc -eq 2 ] && grep -q "\-\-view model goes with --export svg" "$err"'
"$ATTNVIZ" --model tests/models/gpt2 --prompt "hi" --export svg --stage softmax -o "$tmp/x.svg" 2>"$err"; rc=$?
expect "view model: --model with --export still needs --view model" '[ $rc -eq 2 ] && grep -q "\-\-model DIR goes with" "$err"'
# ------------------------------------------------------------ --lang zh: figure words in Chinese (issue 26 §3)
# titles ("stage softmax, head 0"), pane names ("(head 0)"), Markdown's *Formula:*, TeX's rows/columns
"$ATTNVIZ" --lang zh --export svg --stage softmax "$MASK" -o "$tmp/zh.svg" 2>"$err"
"$ATTNVIZ" --lang zh --export md --stage mask "$MASK" -o "$tmp/zh.md" 2>"$err"
"$ATTNVIZ" --lang zh --export tex --stage mask "$MASK" -o "$tmp/zh.tex" 2>"$err"
check "zh svg: title says 阶段 and 头" [ "$(count "$tmp/zh.svg" '阶段 softmax，头 0')" -ge 1 ]
check "zh svg: no English stage/head words" [ "$(count_re "$tmp/zh.svg" 'stage softmax\|(head [0-9])\|, head [0-9]')" -eq 0 ]
expect "zh md: 公式 and 头, no *Formula:* nor (head N)" \
	'[ "$(count "$tmp/zh.md" "*公式：*")" -eq 1 ] && [ "$(count "$tmp/zh.md" "（头 0）")" -ge 1 ] &&
	[ "$(count_re "$tmp/zh.md" "Formula\\|(head [0-9])\\|stage mask")" -eq 0 ]'
expect "zh tex: 行： 列： and 头, no rows:/columns:/(head N)" \
	'[ "$(count "$tmp/zh.tex" "行：")" -ge 1 ] && [ "$(count "$tmp/zh.tex" "列：")" -ge 1 ] &&
	[ "$(count_re "$tmp/zh.tex" "rows:\\|columns:\\|(head [0-9])\\|stage mask")" -eq 0 ]'

# --- decode steps and tiles (issue 26 §4): what a step has not reached is blank, never 0
KV=lessons/kvcache.json
"$ATTNVIZ" --export md --stage decode "$KV" -o "$tmp/dec.md" 2>"$err"
check "decode md: a key not yet generated is a blank cell, not 0" grep -qF '| **机** | 0.8700 |  |  |  |  |' "$tmp/dec.md"
"$ATTNVIZ" --export md --stage decode --token 2 "$KV" -o "$tmp/dec2.md" 2>"$err"
check "--token 2: the title says the token" grep -q '^## .* — stage decode, token 2$' "$tmp/dec2.md"
check "--token 2: the cache up to token 2, later rows blank" grep -qF '| **习** |  |  |  |' "$tmp/dec2.md"
check "--token 2: token 2's row is there" grep -qF '| **学** | 1.0000 | 0.9000 | 0.2000 |' "$tmp/dec2.md"
check "--token 2: the narration of the step that shows token 2" grep -q 'Token 2: 学 is appended' "$tmp/dec2.md"
"$ATTNVIZ" --export svg --stage decode --token 2 "$KV" -o "$tmp/dec2.svg" 2>"$err"
check "--token 2 svg: blank cells drawn empty" test "$(count "$tmp/dec2.svg" 'class="cell unseen"')" -gt 10
check "--token 2 svg: no NaN written" test "$(count "$tmp/dec2.svg" 'nan')" -eq 0
"$ATTNVIZ" --export tex --stage decode --token 2 "$KV" -o "$tmp/dec2.tex" 2>"$err"
check "--token 2 tex: no NaN written" test "$(count_re "$tmp/dec2.tex" 'NaN\|nan')" -eq 0
"$ATTNVIZ" --export md --stage decode --token 2 --lang zh "$KV" -o "$tmp/dec2zh.md" 2>"$err"
check "--token 2 in Chinese: the title's token" grep -q '，词元 2$' "$tmp/dec2zh.md"
"$ATTNVIZ" --export md --stage flash --tile 1,0 lessons/flash.json -o "$tmp/tile.md" 2>"$err"
check "--tile 1,0: the title says the tile" grep -q '^## .* — stage flash, tile (1, 0)$' "$tmp/tile.md"
check "--tile 1,0: rows 2–3's output is not final yet: blank" grep -qF '| **学** |  |  |' "$tmp/tile.md"
"$ATTNVIZ" --export md --stage flash --tile 0,1 lessons/flash.json -o - >/dev/null 2>"$err"
expect "--tile 0,1 (hidden by the mask): said" '[ $? -eq 1 ] && has "$err" "tile (0, 1) is skipped: the mask hides every cell of it"'
"$ATTNVIZ" --export md --stage flash --tile 9,0 lessons/flash.json -o - >/dev/null 2>"$err"
expect "--tile 9,0: the range said" '[ $? -eq 1 ] && has "$err" "no tile (9, 0): the tiles are (0..1, 0..1)"'
"$ATTNVIZ" --export md --stage decode --token 9 "$KV" -o - >/dev/null 2>"$err"
expect "--token 9: the range said" '[ $? -eq 1 ] && has "$err" "no token 9: the decode stage walks tokens 0 to 4"'
"$ATTNVIZ" --export md --stage softmax --token 1 "$KV" -o - >/dev/null 2>"$err"
expect "--token on a stage without decode steps: said" '[ $? -eq 1 ] && has "$err" "stage softmax walks no tokens"'
"$ATTNVIZ" --export md --stage decode --token x "$KV" -o - >/dev/null 2>"$err"
expect "--token x: usage" '[ $? -eq 2 ] && has "$err" "expected a token'"'"'s position"'
"$ATTNVIZ" --export md --stage flash --tile 1 lessons/flash.json -o - >/dev/null 2>"$err"
expect "--tile 1: usage" '[ $? -eq 2 ] && has "$err" "expected QUERY_BLOCK,KEY_BLOCK"'
"$ATTNVIZ" --token 1 "$KV" >/dev/null 2>"$err"
expect "--token without --export: usage" '[ $? -eq 2 ] && has "$err" "--token goes with --export"'

# --- png (issue 26 §5): the SVG through rsvg-convert, --scale N its pixels
# png_size FILE: "WIDTHxHEIGHT" from a PNG's IHDR, or nothing when FILE is not a PNG
png_size() {
	[ "$(od -An -tx1 -N8 "$1" 2>/dev/null | tr -d ' \n')" = 89504e470d0a1a0a ] || return 0
	od -An -tu1 -j16 -N8 "$1" | awk '{ printf "%dx%d", (($1 * 256 + $2) * 256 + $3) * 256 + $4, (($5 * 256 + $6) * 256 + $7) * 256 + $8 }'
}
if external rsvg-convert; then
	"$ATTNVIZ" --export png --stage softmax "$MASK" -o "$tmp/soft.png" 2>"$err"
	s1=$(png_size "$tmp/soft.png")
	"$ATTNVIZ" --export png --scale 2 --stage softmax "$MASK" -o "$tmp/soft2.png" 2>"$err"
	s2=$(png_size "$tmp/soft2.png")
	"$ATTNVIZ" --export svg --stage softmax "$MASK" -o "$tmp/soft1.svg" 2>"$err"
	sw=$(sed -n 's/^<svg [^>]*width="\([0-9]*\)" height="\([0-9]*\)".*/\1x\2/p' "$tmp/soft1.svg" | head -n 1)
	expect "png: a PNG the SVG's size ($sw; got $s1)" '[ -n "$s1" ] && [ "$s1" = "$sw" ]'
	expect "png --scale 2: twice its pixels (got $s2)" '[ "$s2" = "$(echo "$sw" | awk -Fx "{ print \$1 * 2 \"x\" \$2 * 2 }")" ]'
else
	skip_external "png export" "rsvg-convert"
fi
"$ATTNVIZ" --export png --stage softmax "$MASK" -o "$tmp/soft.svg" >/dev/null 2>"$err"
expect "png: -o must end in .png" '[ $? -eq 2 ] && has "$err" "--export png needs -o FILE.png"'
PATH=/nonexistent "$ATTNVIZ" --export png --stage softmax "$MASK" -o "$tmp/none.png" >/dev/null 2>"$err"
expect "png without rsvg-convert: its package named, nothing written" '[ $? -eq 2 ] && has "$err" "apt-get install librsvg2-bin (nothing written)" && [ ! -e "$tmp/none.png" ]'
"$ATTNVIZ" --export svg --scale 2 --stage softmax "$MASK" -o "$tmp/x.svg" >/dev/null 2>"$err"
expect "--scale 2 with svg: refused (pixels are png's, gif's and mp4's)" '[ $? -eq 2 ] && has "$err" "goes with --export png or --render"'
"$ATTNVIZ" --export png --scale 20 --stage softmax "$MASK" -o "$tmp/x.png" >/dev/null 2>"$err"
expect "--scale 20: refused, the range said" '[ $? -eq 2 ] && has "$err" "a number from 0.25 to 8"'

finish
