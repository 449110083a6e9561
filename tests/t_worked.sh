#!/bin/sh
# t_worked.sh: the worked examples of the source material (../shared/CURRICULUM.md)
# reproduce in the shipped lessons:
#   selfattn  the unnormalised b¹ = 5a¹ + 2a² + 1a³ + 2a⁴ = [5, 4, 1] the narration claims
#   softmax   softmax([1000, 1, −1000]) ≈ [1, 0, 0], with no NaN
#   scale     std(QKᵀ) ≈ 21 for 123 × 456 normals, ≈ 1 after ÷√456 (`stats` in the plain REPL)
#   prefix    a causal prefix gives the whole sequence's first rows, to 1e-12
#   bug       ÷√embed_size gives other weights than ÷√head_dim
# Numbers come from --dump (cJSON writes each matrix on one line) read with
# awk, or from the plain REPL's `stats`: no Python needed.
# Run from the repository root; $ATTNVIZ is the binary. Prints "ok - NAME" /
# "not ok - NAME" lines and ends with "N passed, N failed, N skipped" (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

export LC_ALL=C

# matrix DUMP DEPTH KEY: the matrix KEY found DEPTH tabs deep in a --dump, one row per line.
# Depth 1: the lesson's own matrices; 3: heads[0]'s; 2: the compare variant's; 4: its heads[0]'s.
# null (−∞) is written as -inf.
matrix() {
	awk -v depth="$2" -v key="\"$3\":" '
		{
			line = $0
			tabs = 0
			while (substr(line, 1, 1) == "\t") { tabs++; line = substr(line, 2) }
			if (tabs != depth || index(line, key) != 1) next
			sub(/^[^[]*\[\[/, "", line)
			sub(/\]\],?$/, "", line)
			n = split(line, rows, /\], \[/)
			for (i = 1; i <= n; i++) {
				gsub(/, /, " ", rows[i])
				gsub(/null/, "-inf", rows[i])
				print rows[i]
			}
			exit
		}' "$1"
}

# ------------------------------------------------------------ selfattn: b¹ = 5a¹ + 2a² + 1a³ + 2a⁴

"$ATTNVIZ" --dump lessons/selfattn.json >"$tmp/selfattn" 2>"$err"
matrix "$tmp/selfattn" 3 scores >"$tmp/scores"
matrix "$tmp/selfattn" 1 X >"$tmp/X"
if [ "$(sed -n 1p "$tmp/scores")" = "5 2 1 2" ]; then
	ok "selfattn: row 0 of the scores is the source's 5, 2, 1, 2"
else
	not_ok "selfattn: row 0 of the scores is the source's 5, 2, 1, 2" "got: $(sed -n 1p "$tmp/scores")"
fi
# b¹ = Σᵢ α₁,ᵢ aⁱ with the raw scores as weights
b1=$(awk 'NR == FNR { if (FNR == 1) for (i = 1; i <= NF; i++) alpha[i] = $i; next }
	{ for (j = 1; j <= NF; j++) b[j] += alpha[FNR] * $j; cols = NF }
	END { for (j = 1; j <= cols; j++) printf "%s%g", (j > 1 ? " " : ""), b[j]; print "" }' "$tmp/scores" "$tmp/X")
if [ "$b1" = "5 4 1" ] && grep -q 'b¹ = 5·a¹ + 2·a² + 1·a³ + 2·a⁴ = \[5, 4, 1\]' lessons/selfattn.json; then
	ok "selfattn: the unnormalised b¹ = 5a¹ + 2a² + 1a³ + 2a⁴ = [5, 4, 1], as the narration says"
else
	not_ok "selfattn: the unnormalised b¹ = 5a¹ + 2a² + 1a³ + 2a⁴ = [5, 4, 1], as the narration says" "computed: $b1"
fi
sum=$(sed -n 1p "$tmp/scores" | awk '{ print $1 + $2 + $3 + $4 }')
if [ "$sum" = 10 ] && grep -q 'add up to 10, not 1' lessons/selfattn.json; then
	ok "selfattn: the raw weights add up to 10, not 1"
else
	not_ok "selfattn: the raw weights add up to 10, not 1" "sum: $sum"
fi
# with softmax the weights do sum to 1, and output row 0 = Σᵢ α′₁,ᵢ vⁱ
matrix "$tmp/selfattn" 3 weights >"$tmp/weights"
matrix "$tmp/selfattn" 1 V >"$tmp/V"
matrix "$tmp/selfattn" 1 output >"$tmp/output"
if awk 'NR == FNR { if (FNR == 1) { for (i = 1; i <= NF; i++) { w[i] = $i; s += $i } } next }
	FILENAME == ARGV[2] { for (j = 1; j <= NF; j++) b[j] += w[FNR] * $j; next }
	FNR == 1 { for (j = 1; j <= NF; j++) { d = b[j] - $j; if (d < 0) d = -d; if (d > 1e-12) bad = 1 } }
	END { d = s - 1; if (d < 0) d = -d; exit (bad || d > 1e-12) }' "$tmp/weights" "$tmp/V" "$tmp/output"; then
	ok "selfattn: softmax weights sum to 1 and b¹ = Σ α′₁,ᵢ vⁱ is output row 0"
else
	not_ok "selfattn: softmax weights sum to 1 and b¹ = Σ α′₁,ᵢ vⁱ is output row 0"
fi

# ------------------------------------------------------------ softmax([1000, 1, −1000])

"$ATTNVIZ" --dump lessons/softmax.json >"$tmp/softmax" 2>"$err"
matrix "$tmp/softmax" 3 scores >"$tmp/scores"
matrix "$tmp/softmax" 3 weights >"$tmp/weights"
row=$(sed -n 1p "$tmp/scores")
if [ "$row" = "1000 1 -1000" ]; then
	ok "softmax: row 0 of the scores is [1000, 1, -1000]"
else
	not_ok "softmax: row 0 of the scores is [1000, 1, -1000]" "got: $row"
fi
if [ -s "$tmp/weights" ] && ! grep -qi 'nan\|inf' "$tmp/weights" && ! grep -qi 'nan' "$tmp/softmax" &&
   sed -n 1p "$tmp/weights" | awk '{ exit !($1 == 1 && $2 >= 0 && $2 < 1e-300 && $3 >= 0 && $3 < 1e-300) }'; then
	ok "softmax: softmax([1000, 1, -1000]) = [1, 0, 0] with no NaN"
else
	not_ok "softmax: softmax([1000, 1, -1000]) = [1, 0, 0] with no NaN" "weights row 0: $(sed -n 1p "$tmp/weights")"
fi
if awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; d = s - 1; if (d < 0) d = -d; if (d > 1e-12) bad = 1 } END { exit bad }' "$tmp/weights"; then
	ok "softmax: every row of weights sums to 1, extreme rows too"
else
	not_ok "softmax: every row of weights sums to 1, extreme rows too"
fi

# ------------------------------------------------------------ scale: std(QKᵀ) ≈ 21, then ≈ 1

printf 'stats scores\ncompare on\nstats scaled\n' | "$ATTNVIZ" --plain lessons/scale.json >"$tmp/scale" 2>"$err"
# "mean M  std S  min …" lines: the first is scores, the last the compare variant's scaled
std_scores=$(sed -n 's/^mean [^ ]*  std \([^ ]*\)  min.*/\1/p' "$tmp/scale" | sed -n 1p)
std_scaled=$(sed -n 's/^compare ([^)]*): mean [^ ]*  std \([^ ]*\)  min.*/\1/p' "$tmp/scale" | sed -n 1p)
if [ -n "$std_scores" ] && awk -v s="$std_scores" 'BEGIN { exit !(s > 20 && s < 22.5) }'; then
	ok "scale: std of QKᵀ for 123 x 456 normals is about 21 (source 21.24; here $std_scores)"
else
	not_ok "scale: std of QKᵀ for 123 x 456 normals is about 21 (source 21.24; here $std_scores)"
fi
if [ -n "$std_scaled" ] && awk -v s="$std_scaled" 'BEGIN { exit !(s > 0.95 && s < 1.05) }'; then
	ok "scale: after dividing by sqrt(456) the std is about 1 (source 0.995; here $std_scaled)"
else
	not_ok "scale: after dividing by sqrt(456) the std is about 1 (source 0.995; here $std_scaled)"
fi
# stats prints 6 significant digits: the ratio is sqrt(456) to about 1e-5
ratio=$(awk -v a="$std_scores" -v b="$std_scaled" 'BEGIN { if (b > 0) printf "%.4f", a / b / sqrt(456) }')
if [ "$ratio" = "1.0000" ]; then
	ok "scale: the two stds differ by a factor sqrt(d_k)"
else
	not_ok "scale: the two stds differ by a factor sqrt(d_k)" "ratio / sqrt(456): $ratio"
fi

# ------------------------------------------------------------ prefix: the first rows do not change

"$ATTNVIZ" --dump lessons/prefix.json >"$tmp/prefix" 2>"$err"
for key in output weights; do
	if [ $key = output ]; then d1=1; d2=2; else d1=3; d2=4; fi
	matrix "$tmp/prefix" $d1 $key >"$tmp/whole"
	matrix "$tmp/prefix" $d2 $key >"$tmp/part"
	k=$(wc -l <"$tmp/part")
	n=$(wc -l <"$tmp/whole")
	if [ "$k" -gt 0 ] && [ "$k" -lt "$n" ] &&
	   awk 'NR == FNR { for (j = 1; j <= NF; j++) w[FNR, j] = $j; next }
		{ for (j = 1; j <= NF; j++) { d = $j - w[FNR, j]; if (d < 0) d = -d; if (d > 1e-12) bad = 1 } }
		END { exit bad }' "$tmp/whole" "$tmp/part"; then
		ok "prefix: the $k-token prefix's $key rows equal the $n-token sequence's first rows to 1e-12"
	else
		not_ok "prefix: the $k-token prefix's $key rows equal the $n-token sequence's first rows to 1e-12"
	fi
done

# ------------------------------------------------------------ bug: √embed_size against √head_dim

"$ATTNVIZ" --dump lessons/bug.json >"$tmp/bug" 2>"$err"
f_bug=$(sed -n 's/^\t"scale_factor":\t//p' "$tmp/bug" | tr -d ',')
f_fix=$(sed -n 's/^\t\t"scale_factor":\t//p' "$tmp/bug" | tr -d ',')
if awk -v b="$f_bug" -v f="$f_fix" 'BEGIN { exit !(b == 0.5 && f > 0.70710678 && f < 0.70710679) }'; then
	ok "bug: the buggy factor is 1/sqrt(embed_size 4), the fixed one 1/sqrt(head_dim 2)"
else
	not_ok "bug: the buggy factor is 1/sqrt(embed_size 4), the fixed one 1/sqrt(head_dim 2)" "got $f_bug and $f_fix"
fi
matrix "$tmp/bug" 3 weights >"$tmp/wb"
matrix "$tmp/bug" 4 weights >"$tmp/wf"
diff=$(awk 'NR == FNR { for (j = 1; j <= NF; j++) w[FNR, j] = $j; next }
	{ for (j = 1; j <= NF; j++) { d = $j - w[FNR, j]; if (d < 0) d = -d; if (d > m) m = d } }
	END { printf "%.4f", m }' "$tmp/wb" "$tmp/wf")
if [ -s "$tmp/wb" ] && awk -v d="$diff" 'BEGIN { exit !(d > 0.01) }'; then
	ok "bug: the buggy-scale weights differ from the right ones (by up to $diff)"
else
	not_ok "bug: the buggy-scale weights differ from the right ones (by up to $diff)"
fi
finish
