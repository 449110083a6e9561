#!/bin/sh
# t_figures.sh: SVG figures fit for slides — every shipped lesson's figure of
# every stage (head 0, and the last head of a lesson with heads) has all of
# its text on the canvas (tests/svgfit.c: a conservative width per character)
# and (head 0) renders to PNG (rsvg-convert); per-head figures show that head's
# operands; concat shows every head; split groups query heads under their
# key/value head; --aspect, --precision and --scale.
# Run from the repository root; prints "ok - NAME" / "not ok - NAME" lines
# (a missing tool: "ok - NAME # SKIP WHY") and ends with "N passed, N failed,
# N skipped" (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

SVGFIT=$BUILD/tests/svgfit
export LC_ALL=C.UTF-8
[ -x "$SVGFIT" ] || bail "no $SVGFIT (make builds it)"
render=1
command -v rsvg-convert >/dev/null 2>&1 || render=0

# figure LESSON STAGE HEAD: export, check the text, render; prints what went wrong
figure() {
	out="$tmp/f.svg"
	rm -f "$out" "$tmp/f.png"
	if ! "$ATTNVIZ" --export svg --stage "$2" --head "$3" "$1" -o "$out" 2>"$tmp/why"; then
		# refusing a matrix too large to read (EXPORT_MAX_CELLS) is right
		grep -q "too many cells for a figure" "$tmp/why" || echo "$1 $2 head $3: $(head -n 1 "$tmp/why")"
		return
	fi
	"$SVGFIT" "$out" 2>&1 | head -n 3
	# a figure of a matrix of thousands of cells (scale.json) takes rsvg-convert half a
	# minute: its text is checked, drawing it is left out
	[ "$render" -eq 1 ] && [ "$3" -eq 0 ] && [ "$(wc -c <"$out")" -lt 1000000 ] || return
	if ! rsvg-convert "$out" -o "$tmp/f.png" 2>"$tmp/why" ||
	   ! head -c 8 "$tmp/f.png" | od -An -c | grep -q "P   N   G"; then
		echo "$1 $2 head $3: rsvg-convert: $(head -n 1 "$tmp/why")"
	fi
}

for lesson in lessons/*.json; do
	"$ATTNVIZ" --dump "$lesson" >"$tmp/dump" 2>"$err" || { not_ok "figures of $lesson: --dump failed"; continue; }
	# a lesson with layers lists them per layer: the first layer's (--export shows layer 0)
	stages=$(stages_of "$lesson")
	heads=$(sed -n 's/^[[:space:]]*"h":[[:space:]]*\([0-9]*\),$/\1/p' "$tmp/dump" | head -n 1)
	[ -n "$stages" ] || { not_ok "figures of $lesson: no stages in its dump"; continue; }
	: >"$tmp/bad"
	for st in $stages; do
		figure "$lesson" "$st" 0 >>"$tmp/bad"
		if [ "${heads:-1}" -gt 1 ]; then figure "$lesson" "$st" $((heads - 1)) >>"$tmp/bad"; fi
	done
	if [ -s "$tmp/bad" ]; then
		not_ok "figures of $lesson: every stage's text on the canvas$([ "$render" -eq 1 ] && echo ', rendered to PNG')" "$(head -n 8 "$tmp/bad")"
	else
		ok "figures of $lesson: every stage's text on the canvas$([ "$render" -eq 1 ] && echo ', rendered to PNG')"
	fi
done
[ "$render" -eq 1 ] || skip "figures rendered to PNG" "rsvg-convert not installed (librsvg2-bin)"

MH=lessons/multihead.json

# head 1's scores: Q's head-1 columns (2 and 3) and Kᵀ's head-1 rows, never the whole of Q and K
"$ATTNVIZ" --export svg --stage scores --head 1 "$MH" -o "$tmp/s1.svg" 2>"$err"
expect "scores, head 1: Q (head 1) 4 × 2 and Kᵀ (head 1) 2 × 4 beside scores (head 1)" \
	'grep -q ">Q (head 1)  4 × 2</text>" "$tmp/s1.svg" && grep -q ">Kᵀ (head 1)  2 × 4</text>" "$tmp/s1.svg" &&
	 grep -q ">scores (head 1)  4 × 4</text>" "$tmp/s1.svg" && ! grep -q ">Q  4 × 4<" "$tmp/s1.svg"'
expect "scores, head 1: Q's columns are labelled 2 and 3, Kᵀ's rows too" \
	'[ "$(count_re "$tmp/s1.svg" "class=\"col-label\"[^>]*>[23]<")" -eq 2 ] && [ "$(count_re "$tmp/s1.svg" "class=\"row-label\"[^>]*>[23]<")" -eq 2 ]'
# concat: every head's weighted beside concat
"$ATTNVIZ" --export svg --stage concat --head 1 "$MH" -o "$tmp/c.svg" 2>"$err"
expect "concat: every head beside concat, and the title names no one head" \
	'[ "$(count "$tmp/c.svg" "id=\"pane-weighted-head")" -eq 2 ] && grep -q "id=\"pane-concat\"" "$tmp/c.svg" && ! grep -q "stage concat, head" "$tmp/c.svg"'
# split with grouped heads (llama: 4 query heads, 2 key/value heads): cut by the stage table as the
# screen cuts it, K and V per key/value head, each followed by the query heads that read it
"$ATTNVIZ" --export svg --stage split lessons/llama.json -o "$tmp/split.svg" 2>"$err"
ids=$(grep -o 'id="pane-[^"]*"' "$tmp/split.svg" | sed 's/^id="pane-//; s/"$//' | tr '\n' ' ')
expect "split, grouped heads: K and V of kv head 0, query heads 0 and 1, then kv head 1's, heads 2 and 3 ($ids)" \
	'[ "$ids" = "K-kv0 V-kv0 Q-head0 Q-head1 K-kv1 V-kv1 Q-head2 Q-head3 " ] && grep -q ">K (kv head 1)  5 × 2</text>" "$tmp/split.svg"'
# --aspect: project's seven panes in rows near 16:9 (the default) or 4:3, or one row
for asp in 16:9 4:3 wide; do
	"$ATTNVIZ" --export svg --stage project --aspect $asp "$MH" -o "$tmp/p-$asp.svg" 2>"$err"
done
size() { sed -n 's/^<svg [^>]* width="\([0-9]*\)" height="\([0-9]*\)".*/\1 \2/p' "$1"; }
ratio() { size "$1" | awk '{ printf "%.2f", $1 / $2 }'; }
expect "--aspect: wide is one row, 16:9 wraps nearer 1.78, 4:3 nearer 1.33 ($(ratio "$tmp/p-wide.svg") $(ratio "$tmp/p-16:9.svg") $(ratio "$tmp/p-4:3.svg"))" \
	'awk -v w="$(ratio "$tmp/p-wide.svg")" -v s="$(ratio "$tmp/p-16:9.svg")" -v f="$(ratio "$tmp/p-4:3.svg")" \
	 "BEGIN { exit !(w > s && s > f && w > 3 && (s - 1.78)^2 < (w - 1.78)^2) }"'
# --precision
"$ATTNVIZ" --export svg --stage scores --precision 2 "$MH" -o "$tmp/p2.svg" 2>"$err"
expect "--precision 2: two decimals" 'grep -q ">2.00</text>" "$tmp/p2.svg" && ! grep -q ">2.0000</text>" "$tmp/p2.svg"'
"$ATTNVIZ" --export svg --stage scores --precision 11 "$MH" -o "$tmp/p11.svg" >/dev/null 2>"$err"
expect "--precision 11: refused" '[ $? -ne 0 ] && grep -q "from 0 to 10" "$err" && [ ! -e "$tmp/p11.svg" ]'
# --scale: shared (one legend range for the figure's diverging panes) or one per pane
"$ATTNVIZ" --export svg --stage project "$MH" -o "$tmp/shared.svg" 2>"$err"
"$ATTNVIZ" --export svg --stage project --scale pane "$MH" -o "$tmp/pane.svg" 2>>"$err"
# legend FILE PANE-ID lo|hi: the end of that pane's colour scale as its legend writes it
legend() { awk -v id="id=\"pane-$2\"" -v cls="class=\"legend-$3\"" 'index($0, "<g class=\"pane\"") { on = index($0, id) > 0 }
	on && index($0, cls) { sub(/<\/text>.*/, ""); sub(/.*>/, ""); print; exit }' "$1"; }
hi_of() { for p in $2; do legend "$1" "$p" hi; done | sort -u | wc -l; }
expect "--scale shared: panes of one meaning (Q, K, V; W_q, W_k, W_v) one range; --scale pane: each pane its own" \
	'[ "$(hi_of "$tmp/shared.svg" "Q K V")" -eq 1 ] && [ "$(hi_of "$tmp/shared.svg" "W_q W_k W_v")" -eq 1 ] &&
	 [ "$(hi_of "$tmp/pane.svg" "Q K V")" -gt 1 ]'
# a stage's panes of different meaning do not share a scale: back_softmax's dmasked (±0.26) is not
# drawn on dweights' ±1.26 (it came out nearly white)
"$ATTNVIZ" --export svg --stage back_softmax lessons/gradient.json -o "$tmp/bs.svg" 2>"$err"
expect "back_softmax: dmasked has its own scale, not dweights' ($(legend "$tmp/bs.svg" dmasked-head0 hi) vs $(legend "$tmp/bs.svg" dweights-head0 hi))" \
	'[ "$(legend "$tmp/bs.svg" dmasked-head0 hi)" != "$(legend "$tmp/bs.svg" dweights-head0 hi)" ]'
# a probability is coloured on 0–1 always: encdec's near-uniform weights (0.30–0.37) are not drawn white to dark
"$ATTNVIZ" --export svg --stage softmax --layer e0 lessons/encdec.json -o "$tmp/ed.svg" 2>"$err"
"$ATTNVIZ" --export svg --stage softmax --scale pane "$MH" -o "$tmp/mhs.svg" 2>>"$err"
expect "weights on 0–1: encdec ($(legend "$tmp/ed.svg" weights-head0 lo)–$(legend "$tmp/ed.svg" weights-head0 hi)), multihead with --scale pane" \
	'[ "$(legend "$tmp/ed.svg" weights-head0 lo)" = 0 ] && [ "$(legend "$tmp/ed.svg" weights-head0 hi)" = 1.0000 ] &&
	 [ "$(legend "$tmp/mhs.svg" weights-head0 lo)" = 0 ] && [ "$(legend "$tmp/mhs.svg" weights-head0 hi)" = 1.0000 ]'
# the legend says its scale in words (issue 26): 0–1 for a probability, which panes share its colours, or its own
note() { awk -v id="id=\"pane-$2\"" 'index($0, "<g class=\"pane\"") { on = index($0, id) > 0 }
	on && index($0, "class=\"scale-note\"") { sub(/<\/text>.*/, ""); sub(/.*>/, ""); print; exit }' "$1"; }
expect "legend words: Q shares with K and V, W_q with W_k and W_v, X its own; --scale pane: Q its own ($(note "$tmp/shared.svg" Q))" \
	'[ "$(note "$tmp/shared.svg" Q)" = "colours: one scale with K, V" ] &&
	 [ "$(note "$tmp/shared.svg" W_q)" = "colours: one scale with W_k, W_v" ] &&
	 [ "$(note "$tmp/shared.svg" X)" = "colours: its own scale" ] && [ "$(note "$tmp/pane.svg" Q)" = "colours: its own scale" ]'
expect "legend words: back_softmax's dmasked its own scale, weights 0 to 1 ($(note "$tmp/bs.svg" dmasked-head0); $(note "$tmp/ed.svg" weights-head0))" \
	'[ "$(note "$tmp/bs.svg" dmasked-head0)" = "colours: its own scale" ] &&
	 [ "$(note "$tmp/ed.svg" weights-head0)" = "colours: 0 to 1 (a probability)" ]'
"$ATTNVIZ" --lang zh --export svg --stage softmax lessons/mask.json -o "$tmp/mz.svg" 2>"$err"
expect "legend words in Chinese: the scale, and −∞ masked ($(note "$tmp/mz.svg" weights-head0))" \
	'[ "$(note "$tmp/mz.svg" weights-head0)" = "颜色：0 到 1（概率）" ] && [ "$(note "$tmp/mz.svg" masked-head0)" = "颜色：此矩阵自己的色标" ] &&
	 grep -q ">−∞ 被遮住</text>" "$tmp/mz.svg" && ! grep -q "masked</text>" "$tmp/mz.svg"'
check "legend words: every text inside its canvas" "$BUILD/tests/svgfit" "$tmp/shared.svg" "$tmp/bs.svg" "$tmp/mz.svg"
# a title names the lesson and where the figure stands in it (issue 26, §4): the layer, encoder or decoder, self- or cross-attention
ED=lessons/encdec.json
EDT='Encoder and decoder: I love you → 我爱你'
"$ATTNVIZ" --export svg --stage softmax --layer e0 "$ED" -o "$tmp/t-e0.svg" 2>"$err"
"$ATTNVIZ" --export svg --stage softmax --layer 0 "$ED" -o "$tmp/t-d0.svg" 2>>"$err"
"$ATTNVIZ" --lang zh --export svg --stage softmax --layer e1 "$ED" -o "$tmp/t-e1zh.svg" 2>>"$err"
"$ATTNVIZ" --export md --stage softmax --layer e1 "$ED" -o "$tmp/t-e1.md" 2>>"$err"
"$ATTNVIZ" --export tex --stage softmax --layer e1 "$ED" -o "$tmp/t-e1.tex" 2>>"$err"
title_of() { sed -n 's/.*<title>\(.*\)<\/title>.*/\1/p' "$1"; }
expect "titles: the lesson, the layer, encoder or decoder, self-attention ($(title_of "$tmp/t-e0.svg"))" \
	'[ "$(title_of "$tmp/t-e0.svg")" = "$EDT — layer 0/2 · encoder · self-attention — stage softmax" ] &&
	 [ "$(title_of "$tmp/t-d0.svg")" = "$EDT — layer 0/1 · decoder · self-attention — stage softmax" ]'
expect "titles in Chinese, and in md and tex ($(title_of "$tmp/t-e1zh.svg"))" \
	'title_of "$tmp/t-e1zh.svg" | grep -q "^编码器与解码器：.* — 第 1/2 层 · 编码器 · 自注意力 — " &&
	 grep -q "^## $EDT — layer 1/2 · encoder · self-attention — stage softmax" "$tmp/t-e1.md" &&
	 grep -q "section\*{$EDT --- layer 1/2 · encoder · self-attention" "$tmp/t-e1.tex"'
"$ATTNVIZ" --export svg --stage project --scale both "$MH" -o "$tmp/x.svg" >/dev/null 2>"$err"
expect "--scale both: refused" '[ $? -ne 0 ] && grep -q "expected shared or pane" "$err"'
# the formula's spacing is kept
expect "the formula keeps its spacing" 'grep -q "xml:space=\"preserve\">scores = Q·Kᵀ  " "$tmp/s1.svg"'
# a long title wraps, never cut: the title's words are all there
"$ATTNVIZ" --export svg --stage concat "$MH" -o "$tmp/c0.svg" 2>"$err"
expect "a long title wraps onto lines, every word kept" \
	'[ "$(count "$tmp/c0.svg" "class=\"title\"")" -ge 1 ] &&
	 [ "$(grep "class=\"title\"" "$tmp/c0.svg" | sed "s/<[^>]*>//g" | tr "\n" " " | tr -s " ")" = "Multi-head attention: split, attend, concat, W_o — stage concat " ]'
# a matrix too large to read as numbers (scale.json: 123 × 123) is a heatmap that fits a slide
# (was 9192 × 6720 px with a number in each cell), its cells at least EXPORT_HEAT_CELL (10) px
"$ATTNVIZ" --export svg --stage softmax lessons/scale.json -o "$tmp/big.svg" 2>"$err"
expect "scale softmax: a heatmap on a slide ($(size "$tmp/big.svg"), $(wc -c <"$tmp/big.svg") bytes), cells ≥ 10 px, no numbers" \
	'size "$tmp/big.svg" | awk "{ exit !(\$1 <= 1920 && \$2 <= 1080) }" && [ "$(wc -c <"$tmp/big.svg")" -lt 100000 ] &&
	 [ "$(count "$tmp/big.svg" "class=\"num\"")" -eq 0 ] && ! grep -o "h[0-9]*v[0-9]*h" "$tmp/big.svg" | grep -qv "v1[0-9]h" &&
	 has "$tmp/big.svg" "each cell the strongest of 3 × 3 cells"'
finish
