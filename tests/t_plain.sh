#!/bin/sh
# t_plain.sh: the plain REPL driven by scripted input — every command of the
# command table and its errors (errors on stderr, the REPL carries on), exit 0
# at end of input and on quit, no prompts and no ANSI escapes when stdin and
# stdout are not terminals, NO_COLOR and TERM=dumb respected on a terminal
# (through util-linux script(1), when it is installed).
# Run from the repository root; $ATTNVIZ is the binary. Prints "ok - NAME" /
# "not ok - NAME" lines and ends with "N passed, N failed, N skipped" (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

out=$tmp/out
export LC_ALL=C

# repl INPUT [ARGS...]: run the plain REPL on INPUT (printf format), output in $out/$err, status in $rc
repl() {
	input=$1
	shift
	# shellcheck disable=SC2059 # the input is a printf format on purpose (\n)
	printf "$input" >"$tmp/in"
	TERM=xterm-256color "$ATTNVIZ" --plain "$@" <"$tmp/in" >"$out" 2>"$err"
	rc=$?
}
# clean NAME: the REPL exited 0 and wrote no error
clean() {
	if [ "$rc" -eq 0 ] && [ ! -s "$err" ]; then ok "$1"; else not_ok "$1" "exit $rc"; fi
}
# err_cmd NAME TEXT: exit 0, TEXT in an "error: " line on stderr, not on stdout, and the REPL went on
# (every error case is followed by `step 2`, whose header must appear after it)
err_cmd() {
	if [ "$rc" -eq 0 ] && grep -q '^error: ' "$err" && has "$err" "$2" && hasnt "$out" "error:" && has "$out" "step 2/"; then
		ok "$1"
	else
		not_ok "$1" "exit $rc, want an error containing: $2"
	fi
}

# ------------------------------------------------------------ starting and ending

repl ''
clean "built-in lesson at end of input: exit 0"
check "built-in lesson opens at step 1" has "$out" "== Self-attention: I saw a saw == step 1/9, stage: input"
check "no prompt when stdin is not a terminal" hasnt "$out" "attnviz>"
check "no ANSI escapes when stdout is not a terminal" hasnt "$out" "$ESC"
"$ATTNVIZ" </dev/null >"$out" 2>"$err"
rc=$?
clean "no terminal: plain mode without --plain"
check "plain mode without --plain shows step 1" has "$out" "step 1/9"
TERM=dumb "$ATTNVIZ" lessons/mask.json </dev/null >"$out" 2>"$err"
rc=$?
clean "TERM=dumb: plain mode"
repl 'next\nquit\nnext\nnext\n'
clean "quit: exit 0"
expect "quit stops reading" 'has "$out" "step 2/9" && hasnt "$out" "step 3/"'
repl 'q\n'
clean "q (alias of quit)"
repl 'next'
check "a last line without a newline still runs" has "$out" "step 2/9"
repl '\n\n   \n# a comment\n:next\n  :  next  \n'
clean "blank lines, comments and a leading colon"
check "leading colon runs the command" has "$out" "step 3/9"
repl 'frobnicate\nstep 2\n'
err_cmd "unknown command" "unknown command: frobnicate"
repl 's\nstep 2\n'
err_cmd "ambiguous command" "ambiguous command: s, could be:"
repl 'next please\nstep 2\n'
err_cmd "too many words" "usage: next"

# ------------------------------------------------------------ moving: next prev first last step goto head

repl 'next\nnext\nprev\n'
clean "next/prev"
expect "next/prev: steps 1 2 3 2" '[ "$(count "$out" "step 2/9")" -eq 2 ] && has "$out" "step 3/9"'
repl 'n\np\n'
clean "n/p aliases"
repl 'prev\nstep 2\n'
err_cmd "prev at the first step" "this is the first step"
repl 'last\nnext\nstep 2\n'
err_cmd "next at the last step" "this is the last step (9/9)"
check "last goes to step 9" has "$out" "step 9/9"
repl 'last\nfirst\n'
clean "first/last"
check "first after last" [ "$(count "$out" "step 1/9")" -eq 2 ]
repl 'step 5\n'
clean "step N"
check "step 5" has "$out" "step 5/9"
repl 'step 10\nstep 2\n'
err_cmd "step out of range" "from 1 to 9"
repl 'step\nstep 2\n'
err_cmd "step without N" "usage: step N"
repl 'goto softmax\n'
clean "goto STAGE"
check "goto softmax" has "$out" "stage: softmax"
repl 'goto softmx\nstep 2\n'
err_cmd "goto a misspelt stage: did you mean" 'unknown stage: softmx (did you mean "softmax"?)'
repl 'goto nowhere\nstep 2\n'
err_cmd "goto unknown stage lists the stages" "unknown stage: nowhere (this lesson's stages: input project scores scale softmax weighted)"
repl 'goto mask\nstep 2\n'
err_cmd "goto a stage the lesson lacks" "not part of this lesson"
repl 'goto\nstep 2\n'
err_cmd "goto without a stage" "usage: goto STAGE"
repl 'head 1\n' lessons/mask.json
clean "head N"
check "head 1 of 2" has "$out" "head 1/2"
repl 'head 2\nstep 2\n' lessons/mask.json
err_cmd "head out of range" "heads 0 to 1"
repl 'head 1\nstep 2\n'
err_cmd "head on a one-head lesson" "one head"

# ------------------------------------------------------------ looking: show explain

repl 'show weights\n'
clean "show MATRIX"
check "show prints the table" has "$out" "weights  4 x 4"
check "show: token column labels" grep -q '^ *I  *saw  *a  *saw *$' "$out"
repl 'show weights 1\n' lessons/mask.json
clean "show MATRIX HEAD"
check "show weights 1 says its head" has "$out" "weights (head 1)  7 x 7"
repl 'show nosuch\nstep 2\n'
err_cmd "show unknown matrix" "unknown matrix: nosuch"
repl 'show W_o\nstep 2\n'
err_cmd "show absent matrix" "not part of this lesson"
repl 'show weights 3\nstep 2\n' lessons/mask.json
err_cmd "show bad head" "head"
repl 'explain scores 0 1\n'
clean "explain MATRIX ROW COL"
check "explain shows the arithmetic" has "$out" "scores[0][1] = 2"
check "explain shows the terms" has "$out" "5*0 + 2*1 + 1*0"
repl 'explain weights 0 1\n'
check "explain a weight" has "$out" "max of row 0 = 5"
repl 'explain scores 4 0\nstep 2\n'
err_cmd "explain row out of range" "row"
repl 'explain scores 0\nstep 2\n'
err_cmd "explain without a column" "usage: explain MATRIX ROW COL [HEAD]"
repl 'explain masked 0 3 1\n' lessons/mask.json
clean "explain with a head"
check "explain a masked cell" has "$out" "may not see key 3"

# ------------------------------------------------------------ edits: set mask scale heads

repl 'goto project\nset W_q[0][0] 7\n'
clean "set MATRIX[ROW][COL] VALUE"
check "set says what changed" has "$out" "W_q[0][0] = 7; everything after it is recomputed"
check "set recomputes Q" grep -q '^I  *7\.0000  *2\.0000  *1\.0000' "$out"
repl 'set W_q 0 1 3\n'
clean "set MATRIX ROW COL VALUE"
repl 'set Q[0][0] 1\nstep 2\n'
err_cmd "set on a computed matrix" "Q is computed, not given"
repl 'set W_q[5][0] 1\nstep 2\n'
err_cmd "set out of range" "row"
repl 'set W_q[0][0] x\nstep 2\n'
err_cmd "set not a number" "value"
repl 'set\nstep 2\n'
err_cmd "set without arguments" "usage: set"
repl 'mask causal\ngoto mask\nshow masked\n'
clean "mask causal"
check "mask causal confirmed" has "$out" "mask is now causal"
check "masked cells shown as -inf (C locale)" has "$out" "-inf"
# a script is not the learner: it neither reads nor sets aside their progress file
mkdir -p "$tmp/ps/attnviz" && printf 'not json' >"$tmp/ps/attnviz/progress.json"
printf 'next\n' >"$tmp/in"
XDG_STATE_HOME=$tmp/ps TERM=xterm-256color "$ATTNVIZ" --plain <"$tmp/in" >"$out" 2>"$err"; rc=$?
clean "a scripted run leaves a damaged progress file alone"
expect "and the file is where it was" '[ -f "$tmp/ps/attnviz/progress.json" ] && [ ! -e "$tmp/ps/attnviz/progress.json.damaged" ]'
repl 'mask window 2\ngoto mask\nshow masked\n'
clean "mask window"
check "mask window confirmed" has "$out" "mask is now a window of 2"
check "a window of 2 hides key 0 from query 2" grep -Eq '^a +(-inf|-∞) ' "$out"
repl 'mask window 0\nstep 2\n'
err_cmd "mask window 0" "expected a whole number from 1"
repl 'mask window 2\nstep 2\n' tests/golden/v3/flash_cross_alibi.json
err_cmd "a window on cross-attention" "square score matrix"
repl 'mask none\nstep 2\n' tests/golden/v3/decode_causal.json
err_cmd "a decode lesson keeps a causal mask" "decode: needs a causal or window mask"
repl 'heads 1\nstep 2\n' tests/golden/v3/gqa_groups_bias.json
err_cmd "heads below the lesson's kv_heads" "not a multiple of the lesson's 2 key/value heads"
repl 'mask padding 1,1,1,0\n'
clean "mask padding"
repl 'mask padding 1 1 0 1\n'
clean "mask padding as words"
repl 'mask padding 1,0\nstep 2\n'
err_cmd "mask padding of the wrong length" "expected 4 values (one per key), got 2"
repl 'mask padding 1,2,0,1\nstep 2\n'
err_cmd "mask padding not 0/1" "0 or 1"
printf 'mask padding ' >"$tmp/in"; i=0; while [ $i -lt 5000 ]; do printf '1,' >>"$tmp/in"; i=$((i + 1)); done; printf '\nstep 2\n' >>"$tmp/in"
TERM=xterm-256color "$ATTNVIZ" --plain <"$tmp/in" >"$out" 2>"$err"; rc=$?
err_cmd "mask padding with 5000 values counts them all" "expected 4 values (one per key), got 5000"
head -c 100000 /dev/zero | tr '\0' x >"$tmp/in"; printf '\nstep 2\n' >>"$tmp/in"
TERM=xterm-256color "$ATTNVIZ" --plain <"$tmp/in" >"$out" 2>"$err"; rc=$?
err_cmd "a 100 KB unknown command is quoted cut short" "xxxxxxxxxx... (try help)"
check "and not whole" test "$(wc -c <"$err")" -lt 200
repl 'mask causal\nmask none\ngoto mask\nstep 2\n'
err_cmd "mask none removes the mask stage" "not part of this lesson"
repl 'mask sideways\nstep 2\n'
err_cmd "mask unknown kind" "usage: mask"
repl 'scale on\nscale 0.5\nscale off\n'
clean "scale on/VALUE/off"
check "scale on" has "$out" "scale factor is now 0.57735"
check "scale 0.5" has "$out" "scale factor is now 0.5"
check "scale off" has "$out" "scale factor is now 1"
repl 'scale sideways\nstep 2\n'
err_cmd "scale bad value" "scale"
repl 'heads 4\n' lessons/mask.json
clean "heads N"
check "heads 4: d_k = 1" has "$out" "4 heads: d_k = 1"
repl 'heads 3\nstep 2\n' lessons/mask.json
err_cmd "heads that do not divide" "heads: 3 does not divide the 4 columns of W_q"
repl 'heads 0\nstep 2\n'
err_cmd "heads 0" "heads"

# heads: every head's scores, checked against NumPy's on the PyTorch reference
# weights (tests/golden/head_scores.py wrote head_scores.tsv; the table has 3 decimals)
for lesson in multihead mask window gqa rmsnorm; do
	repl 'heads\n' "lessons/$lesson.json"
	clean "heads on $lesson.json"
	sed -n '/^-- every head.s scores --$/,/^induction /p' "$out" |
		awk 'NF == 6 && $2 ~ /^[0-9]+$/ { print $1, $2, $3, $4, $5, $6 }' >"$tmp/heads"
	grep "^$lesson	" tests/golden/head_scores.tsv | awk -v got="$tmp/heads" '
		BEGIN { while ((getline line < got) > 0) { n++; split(line, f, " "); for (k = 1; k <= 6; k++) g[n, k] = f[k] } }
		function near(a, b) { return (a == "-" || b == "-") ? a == b : (a - b <= 0.0005 && b - a <= 0.0005) }
		{ r++; if ($2 != g[r, 1] || $3 != g[r, 2]) bad++
		  for (k = 4; k <= 7; k++) if (!near($k, g[r, k - 1])) bad++ }
		END { exit !(r > 0 && r == n && bad == 0) }' && ok "heads on $lesson.json: every score as NumPy's" ||
		not_ok "heads on $lesson.json: every score as NumPy's" "$(cat "$tmp/heads")"
done
repl 'heads sort diag\n' lessons/rmsnorm.json
clean "heads sort diag"
top2=$(awk '/^layer/ { f = 1; next } f && NF == 6 { print $1, $2; if (++k == 2) exit }' "$out" | tr '\n' ' ')
expect "heads sort diag: highest diagonal first (layer 1 head 1, then layer 0 head 1)" '[ "$top2" = "1 1 0 1 " ]' "$top2"
check "heads: why induction is undefined" has "$out" "a lesson has no vocabulary"
repl 'step 6\nheads\nstep 2\n'
err_cmd "heads while a question hides the weights" "weights stays hidden until you answer the question"
repl 'heads\n' lessons/cross.json
check "heads on cross-attention: no scores (-), and why" has "$out" "layer 0 -: cross-attention: its keys are the source's tokens"
repl 'heads sort nosuch\nstep 2\n' lessons/gqa.json
err_cmd "heads sort with a bad score" "expected prev, first, diag or induction"
repl 'heads 2 3\nstep 2\n' lessons/gqa.json
err_cmd "heads N with a word more" "heads"
repl 'help heads\n'
check "help heads: the definitions" has "$out" "previous-token: the mean, over the rows i >= 1"

# ------------------------------------------------------------ quizzes: answer skip hint

repl 'step 3\nhint\nanswer 2\n'
clean "hint and a right answer"
check "the answer's matrix is hidden until answered" has "$out" "scores: hidden until you answer"
check "hint shown" has "$out" "-- hint --"
check "right answer" has "$out" "Right: scores[0][1] is 2"
repl 'step 3\nanswer 7\n'
check "wrong answer" has "$out" "Not quite: scores[0][1] is 2; you said 7"
repl 'step 3\nskip\n'
clean "skip"
check "skip gives the answer" has "$out" "Skipped: scores[0][1] is 2"
# a demo's quiz line reveals the answer after Enter in a demo's words ("Answer:"), not skip's
printf 'goto scale\nquiz\n' >"$tmp/quiz-demo.txt"
repl "source $tmp/quiz-demo.txt\n\n" lessons/mask.json
check "a demo's quiz reveals \"Answer: …\" with the choice" has "$out" "Answer: 1) "
check "a demo's quiz does not say Skipped" hasnt "$out" "Skipped"
repl 'step 3\na 2\n'
check "a (alias of answer)" has "$out" "Right:"
# issue 12 §1.1: prefix.json's variant has fewer rows: the cells both have are compared, the others named
repl 'compare on\nstep 2\nstep 6\n' lessons/prefix.json
check "prefix: V compared where both have a cell" has "$out" "0 of the 9 cells both have differ; rows 3-4 only in the lesson"
check "prefix: the weights too, with their columns" has "$out" "0 of the 9 cells both have differ; rows 3-4, columns 3-4 only in the lesson"
expect "prefix: never every cell" '! grep -q "^[1-9][0-9]* of .*differ" "$out"'
# issue 12 §1.9: a question with choices says how to answer it; a numeric one hides only its own matrix
repl 'step 2\n' lessons/weighting.json
check "a hidden pane of a question with choices says answer 1-N" has "$out" "hidden until you answer (answer 1-4, skip, hint)"
repl 'show input\nshow PE\nstep 2\n' lessons/positional.json
expect "a question about PE leaves the input shown" 'hasnt "$err" "input stays hidden" && grep -q "^input" "$out"'
err_cmd "a question about PE hides PE" "PE stays hidden until you answer the question (answer VALUE, skip, hint)"
repl 'answer 1\nstep 2\n'
err_cmd "answer with no question" "no open question"
repl 'skip\nstep 2\n'
err_cmd "skip with no question" "no open question"
repl 'hint\nstep 2\n'
err_cmd "hint with no question" "no question on this step"
repl 'step 3\nanswer lots\nstep 2\n'
err_cmd "answer not a number" "number"
repl 'step 3\nanswer 2\nanswer 2\nstep 2\n'
err_cmd "answer twice" "no open question"

# ------------------------------------------------------------ compare and stats (the curriculum's view)

repl 'compare on\ngoto softmax\nskip\ncompare off\n' lessons/bug.json
clean "compare on|off"
check "compare on names the variant" has "$out" 'compare on: each stage'
check "compare shows the variant's result, titled" has "$out" "fixed: ÷√head_dim: weights (head 0)"
check "compare marks differing cells" grep -q '[0-9]\* ' "$out"
check "compare counts differing cells" has "$out" "16 of 16 cells differ"
check "weights have a sum column (Σ in UTF-8)" grep -q "学习 *sum$" "$out"
repl 'compare on\nstep 2\n'
err_cmd "compare on a lesson without a variant" "this lesson has no compare variant"
repl 'compare sideways\nstep 2\n' lessons/bug.json
err_cmd "compare with a bad argument" "usage: compare on|off"
repl 'stats scores\nstats weights\nstats params\n'
clean "stats MATRIX, stats params"
check "stats: mean and std" has "$out" "mean 1.8125  std 1.16726  min 0  max 5  (16 finite of 16 cells)"
check "stats weights: row sums" has "$out" "row sums"
check "stats weights: mean and std" has "$out" "mean 0.25  std "
check "stats params" has "$out" "parameters: 27 (W_q, W_k, W_v)"
# issue 12 §1.10: 123 rows of weights summarise their row sums as runs, not 123 lines of 1
repl 'stats weights\n' lessons/scale.json
clean "stats weights on 123 rows"
check "stats weights on 123 rows: one run" has "$out" "  rows 0-122 (t0 ... t122)  1"
check "stats weights on 123 rows: no line a row" sh -c "[ \"\$(grep -Ec '^  [0-9]+ t[0-9]+  ' '$out')\" = 0 ]"
# a large matrix prints its ends, not its megabytes (a real model's unembedding is 49152 rows)
repl 'show scores\n' lessons/scale.json
clean "show a 123 x 123 matrix"
check "large matrix: what is left out is said" has "$out" "(28 of 123 rows and 20 of 123 columns shown; \`export csv scores FILE\` writes every number)"
check "large matrix: a gap line between the first 24 rows and the last 4" sh -c "grep -A1 '^t23 ' '$out' | tail -n 1 | grep -q '^: *\$' && grep -q '^t119 ' '$out' && ! grep -q '^t24 ' '$out'"
check "large matrix: a ... column between the first 16 columns and the last 4" sh -c "grep -Eq '^ +s0 .* s15 +\.\.\. +s119 .* s122\$' '$out'"
check "large matrix: a step stays under 40 KB" sh -c "[ \$(wc -c <'$out') -lt 40000 ]"
repl 'show scores\n' lessons/dot.json
check "a small matrix prints whole, with no note" hasnt "$out" "columns shown"
# the edits mark the lesson's narration as written for the lesson as loaded (§1.8); reload takes the mark away
repl 'step 3\nheads 4\nreload\nstep 3\n' lessons/multihead.json
check "heads 4: the narration is marked" sh -c "grep -A1 'step 3/12, stage: split, head 0/4' '$out' | grep -q 'written for the lesson before your edits'"
check "reload: the mark is gone" sh -c "[ \"\$(grep -c 'written for the lesson before your edits' '$out')\" = 1 ]"
# §1.5: concat prints every head's output, each with the columns it fills
repl 'step 11\nskip\n' lessons/multihead.json
check "concat: head 1's output and where it lands" has "$out" "weighted (head 1, into concat, columns 2-3)  4 x 2"
check "concat: head 1's own numbers" grep -Eq '^saw +0\.6429 +0\.2348$' "$out"
repl 'stats nothing\nstep 2\n'
err_cmd "stats of an unknown matrix" "unknown matrix: nothing"
repl 'goto scores\nstats scores 3\nstep 2\n'
err_cmd "stats of a head the lesson lacks" "head"

# ------------------------------------------------------------ lessons: load lessons reload lang help

repl 'load lessons/mask.json\n'
clean "load FILE"
check "load says so" has "$out" "loaded lessons/mask.json: Masked attention"
check "load shows the new lesson" has "$out" "step 1/12"
repl 'load mask\n'
clean "load NAME"
check "load NAME finds lessons/NAME.json" has "$out" "step 1/12"
repl 'next\nload /nonexistent/missing.json\nnext\n'
check "load of a missing file: error" has "$err" "missing.json"
check "load of a missing file keeps the lesson and place" has "$out" "Self-attention: I saw a saw == step 3/9"
repl 'load tests/bad/row_length.json\nstep 2\n'
err_cmd "load of a bad file gives the loader's message" "tests/bad/row_length.json: W_q[2]: expected 4 numbers, got 3"
repl 'load nosuchlesson\nstep 2\n'
err_cmd "load of an unknown name" "no lesson named \"nosuchlesson\""
repl 'load\nstep 2\n'
err_cmd "load without a file" "usage: load FILE|NAME"
repl 'lessons\n'
clean "lessons"
check "lessons lists selfattn first, with titles" grep -q '^[>+ ] *1\. selfattn  *Self-attention' "$out"
check "lessons marks where the learner is (> without UTF-8)" grep -q '^> *1\. selfattn' "$out"
check "lessons lists mask" grep -q '^ *[0-9]*\. mask ' "$out"
# continue: where progress.json says the learner was (a fresh state: nothing yet)
mkdir -p "$tmp/cont/attnviz"
XDG_STATE_HOME=$tmp/cont-none repl 'continue\n'
check "continue with no progress yet says so" has "$out" "nothing to continue yet"
printf '{"version": 1, "last": "mask", "lessons": {"mask": {"done": false, "step": 2, "steps": 6, "right": 0, "asked": 0}}}' \
	>"$tmp/cont/attnviz/progress.json"
XDG_STATE_HOME=$tmp/cont repl 'continue\n'
expect "continue opens the lesson last worked in, at its step" 'has "$out" "back in mask at step 3 of" && grep -q "step 3/.*stage" "$out"'
# issue 27, 11: progress.json's "last" is not trusted: a path there is not loaded
mkdir -p "$tmp/cont-evil/attnviz"
cp lessons/mask.json "$tmp/evil.json"
printf '{"version": 1, "last": "%s", "lessons": {"%s": {"done": false, "step": 2, "steps": 8, "right": 0, "asked": 0}}}' \
	"$tmp/evil.json" "$tmp/evil.json" >"$tmp/cont-evil/attnviz/progress.json"
XDG_STATE_HOME=$tmp/cont-evil repl 'continue\nstep 2\n'
err_cmd "continue loads only a lesson of the course, not a path progress.json names" "is not a lesson of the course"
check "continue did not open the path" hasnt "$out" "back in"
# a copy of the binary away from the checkout: no lessons beside it either
mkdir -p "$tmp/nolessons/bin"
cp "$ATTNVIZ" "$tmp/nolessons/bin/attnviz"
(cd "$tmp/nolessons" && printf 'lessons\n' | ATTNVIZ_LESSONS="$tmp/nolessons" "$tmp/nolessons/bin/attnviz" --plain >"$out" 2>"$err")
check "lessons with none found: error, exit 0" has "$err" "no lessons found"
# the checkout's binary finds the checkout's lessons from any directory
(cd "$tmp" && printf 'load mask\n' | "$ATTNVIZ" --plain >"$out" 2>"$err")
check "a lesson by name from another directory (beside the program)" has "$out" "lessons/mask.json: Masked attention"
repl 'set W_q[0][0] 9\nreload\nshow W_q\n' lessons/selfattn.json
clean "reload"
check "reload drops edits" grep -q '^0  *5\.0000' "$out"
repl 'reload\n'
clean "reload of the built-in lesson"
check "reload of the built-in lesson says so" has "$out" "reloaded the built-in lesson"
repl 'lang zh\n'
clean "lang zh"
check "lang zh switches the narration" has "$out" "自注意力"
repl 'lang en\n' --lang zh
clean "lang en"
repl 'lang fr\nstep 2\n'
err_cmd "lang unknown" "expected en or zh"
repl 'help\n'
clean "help"
check "help lists commands" has "$out" "-- commands"
repl 'help goto\n'
clean "help COMMAND"
check "help goto" has "$out" "goto STAGE"
repl '? next\n'
clean "? (alias of help)"
repl 'help zzz\nstep 2\n'
err_cmd "help unknown command" "unknown command: zzz"

# save and export
repl "set W_q[0][0] 9\nsave $tmp/saved.json\n"
clean "save PATH"
check "save says where" has "$out" "saved the lesson with your edits to $tmp/saved.json"
"$ATTNVIZ" --check "$tmp/saved.json" >"$tmp/check" 2>/dev/null
check "a saved lesson passes --check" grep -q ': ok, n=4, d_model=3' "$tmp/check"
"$ATTNVIZ" --dump "$tmp/saved.json" 2>/dev/null | tr -d ' \n\t' >"$tmp/dump"
check "a saved lesson keeps the edit" grep -q '"W_q":\[\[9,' "$tmp/dump"
repl 'save\nstep 2\n'
err_cmd "save without a path" "usage: save PATH"
repl 'save /nonexistent/dir/saved.json\nstep 2\n'
err_cmd "save to a directory that does not exist" "/nonexistent/dir/saved.json"
repl "export csv weights $tmp/w.csv\n"
clean "export FORMAT MATRIX PATH"
check "export wrote the file" [ -s "$tmp/w.csv" ]
repl "export bogus $tmp/x.out\nstep 2\n"
err_cmd "export unknown format" "unknown format"
repl 'export\nstep 2\n'
err_cmd "export without arguments" "usage: export"

# demo scripts: source runs the lines in order; pause and wait take no time when
# nobody is typing; an error is shown and the script goes on
printf '# a demo\ngoto scores\npause\nwait 5\n\nbogus\n:goto softmax\n' >"$tmp/demo.txt"
start_s=$(date +%s)
repl "source $tmp/demo.txt\nstep 2\n"
end_s=$(date +%s)
check "source runs a script's lines in order" has "$out" "stage: softmax"
check "source: scores came before softmax" [ "$(grep -n 'stage: scores' "$out" | head -n 1 | cut -d: -f1)" -lt "$(grep -n 'stage: softmax' "$out" | head -n 1 | cut -d: -f1)" ]
err_cmd "source: a bad line is reported and the script goes on" "unknown command: bogus"
check "source: pause and wait do not wait without a person" [ $((end_s - start_s)) -lt 4 ]
repl 'source /nonexistent/demo.txt\nstep 2\n'
err_cmd "source of a missing file" "/nonexistent/demo.txt"
printf 'wait 700\n' >"$tmp/badwait.txt"
repl "source $tmp/badwait.txt\nstep 2\n"
err_cmd "source: wait over 600 seconds is refused" "badwait.txt:1: wait: expected seconds"
printf 'source %s\n' "$tmp/self.txt" >"$tmp/self.txt"
repl "source $tmp/self.txt\nstep 2\n"
err_cmd "source: a script that sources itself stops" "is already running"
repl 'pause\nwait 0.5\nstep 2\n'
clean "pause and wait typed at the REPL"
# a 10 000-character token is cut to 24 columns in matrix labels, not 10 000 wide columns
long=$(head -c 10000 /dev/zero | tr '\0' 'L')
printf '{"attnviz": 1, "tokens": ["%s", "b"], "source": {"tokens": ["%s", "y"], "X": [[1, 0], [0, 1]]},\n "X": [[1, 0], [0, 1]], "W_q": [[1, 0], [0, 1]], "W_k": [[1, 0], [0, 1]], "W_v": [[1, 0], [0, 1]]}\n' "$long" "$long" >"$tmp/long.json"
repl 'goto softmax\nshow scores\n' "$tmp/long.json"
check "a very long token is cut in matrix labels" has "$out" "LLLLLLLLLLLLLLLLLLLLLLL~ "
check "a very long token does not widen the columns" [ "$(grep -a "LLL~" "$out" | awk '{ if (length($0) > n) n = length($0) } END { if (n) print n }')" -lt 200 ]
# a 1 MB line of blanks after ':' used to take 14 s (a memmove per blank)
{ printf ':'; head -c 1000000 /dev/zero | tr '\0' ' '; printf 'goto softmax\n'; } >"$tmp/blanks.txt"
start_s=$(date +%s)
repl "source $tmp/blanks.txt\n"
end_s=$(date +%s)
check "source: a line of a million blanks is quick" [ $((end_s - start_s)) -lt 3 ]
check "source: the command after the blanks runs" has "$out" "stage: softmax"
repl 'wait soon\nstep 2\n'
err_cmd "wait needs seconds" "wait: expected seconds"
for c in "play 1" "present on" "theme projector"; do
	repl "$c\nstep 2\n"
	err_cmd "$c works only in the full-screen view" "works only in the full-screen view"
done

# layers: `layer N` moves between them, keeping the stage; the block's stages and map are shown
# train: gradient descent from the lesson's loss, the same numbers as PyTorch (learn_shift.train20.ref.json)
repl 'train 20 0.5\nreload\ntrain 1\n' tests/golden/v2/learn_shift.json
check "train reports the loss falling" has "$out" "trained 20 steps at lr 0.5: loss 1.03411 -> 0.182565"
check "reload undoes the training" has "$out" "trained 1 step at lr 0.1: loss 1.03411"
# the backward pass: its stages, explain on a gradient, the softmax Jacobian
repl 'goto back_softmax\nexplain dmasked 0 1\nexplain dW_q 2 1\njacobian 1\n' tests/golden/v2/grad_single_head.json
check "goto back_softmax shows the gradients" has "$out" "stage: back_softmax"
check "explain a gradient through softmax" has "$out" "dmasked[0][1] = -0.45365"
check "explain a weight's gradient" has "$out" "dW_q[2][1] = -0.33129"
check "the Jacobian's rows sum to 0" has "$out" "the diagonal is w(1 - w)"
repl 'stats dscores\n' tests/golden/v2/grad_single_head.json
check "stats gives a gradient's norm" has "$out" "norm 0.38255  largest |entry| 0.261915"
repl 'goto back_scores\nstep 2\n' lessons/mask.json
err_cmd "the backward stages need a loss" "stage back_scores is not part of this lesson"
repl 'jacobian 9\nstep 2\n' lessons/mask.json
err_cmd "jacobian row out of range" "jacobian (row): expected a whole number from 0 to 6"

# issue 27, 1: a loss that turns infinite is refused at its step, and the curve never indexes with it (was SIGSEGV)
repl 'train 13 1e10\nstep 2\n' lessons/vanishing.json
err_cmd "train whose loss turns infinite is refused, naming the step" "training diverged"
check "the refusal names the step after which the loss is not finite" grep -q 'after step [0-9]' "$err"
repl 'train 5\nstep 2\n' lessons/mask.json
err_cmd "train needs a lesson with a loss" "this lesson has no \"backward\""
repl 'train 0\nstep 2\n' tests/golden/v2/learn_shift.json
err_cmd "train 0 is refused" "train (steps): expected a whole number from 1 to 10000"
repl 'train 5 -1\nstep 2\n' tests/golden/v2/learn_shift.json
err_cmd "train with a negative rate is refused" "the learning rate must be > 0"

three=tests/golden/v2/block_three_mixed.json
repl 'layer 1\ngoto norm1\nexplain norm1 0 1\n' $three
check "layer 1 shows the second layer" has "$out" "layer 1/3, stage: input"
check "goto norm1 in a pre-norm layer" has "$out" "layer 1/3, stage: norm1"
check "the block's map marks the norm" has "$out" "block: x -> [N1] -> attention -> + -> N2 -> FFN -> +"
check "explain a RMSNorm cell" has "$out" "RMSNorm of row 0 of X"
repl 'layer 9\nstep 2\n' $three
err_cmd "layer out of range" "no layer 9: this lesson has layers 0 to 2"
repl 'layer x\nstep 2\n' $three
err_cmd "layer not a number" "no layer x: this lesson has layers 0 to 2"
repl 'layer 1\nstep 2\n' lessons/mask.json
err_cmd "layer on a one-layer lesson" "this lesson has one layer"
repl 'layer 1\nset W_q[0][0] 5\nshow W_q\nlayer 0\nshow W_q\n' tests/golden/v2/block_two_layers.json
check "set edits the layer shown" has "$out" "0  5.0000"
check "set leaves the other layers alone" has "$out" "0  0.3200  0.6400"
repl 'goto activation\nexplain ffn_act 1 2\ngoto residual2\nexplain residual2 0 0\n' tests/golden/v2/block_pre_gelu.json
check "explain a gelu cell" has "$out" "gelu(z) = z"
check "explain a residual" has "$out" "= residual1 + ffn_out"

# a real model (tests/models; t_models.sh compares its numbers): model, prompt, ids, generate
repl 'model tests/models/gpt2 I saw a saw\nprompt The cat\nids 5,17\ngenerate 2\nstep 2\n'
expect "model DIR TEXT opens the model on the text" 'grep -q "^tests/models/gpt2: 4 tokens: I | .saw | .a | .saw (ids 40,266,261,266)\$" "$out"'
expect "prompt TEXT: the model on another text" 'grep -q "^prompt: 2 tokens: The | .cat (ids 279,278)\$" "$out"'
check "ids: the model on other ids" has "$out" "ids: 2 tokens: "
expect "generate 2: two tokens more" 'grep -q "^generate: 4 tokens: .* (ids 5,17,[0-9]*,[0-9]*)\$" "$out"'
repl 'model tests/models/gpt2\nids 5,17\nreload\ngenerate 1\nload tests/models/llama_tied_bf16\n'
expect "reload reads the model again, on the same ids" 'has "$out" "reloaded tests/models/gpt2" && grep -q "^generate: 3 tokens: .* (ids 5,17,[0-9]*)\$" "$out"'
check "load DIR opens a model folder" has "$out" "loaded tests/models/llama_tied_bf16: llama_tied_bf16"
repl 'prompt the cat\nstep 2\n'
err_cmd "prompt on a lesson is refused" "this is a lesson, not a model"
repl 'model tests/models/nowhere\nstep 2\n'
err_cmd "model of a folder that is not one is refused" "nowhere/config.json"
repl 'model tests/models/gpt2\nids 1,x\nstep 2\n'
err_cmd "ids that are not ids are refused" "ids: expected token ids from 0"
repl 'generate 0\nstep 2\n'
err_cmd "generate 0 is refused" "generate: expected a whole number from 1 to 64"
repl 'seed 5\nseed off\nseed nine\nstep 2\n'
check "seed S: generate samples; seed off: greedy" sh -c "grep -q 'seed 5\$' '$out' && grep -q 'generate takes the most likely token' '$out'"
err_cmd "seed that is not a number is refused" "seed: expected a whole number from 0 (or off), got nine"

# the LM head's next-token settings (issue 21): only the next stage recomputes
repl 'goto next\ntemp 0.5\ntopk 3\nnextrow 3\ntemp 0\ntopk 7\n' lessons/nexttoken.json
check "temp, topk, nextrow change the next token's settings" has "$out" "next token after position 3: temperature 0.5, the top 3 shown"
check "temp 0 is refused" has "$err" "the temperature must be a number > 0"
check "topk over the vocabulary is refused" has "$err" "top-k must be from 1 to 6"
repl 'temp 2\n' lessons/mask.json
check "temp without an LM head is refused" has "$err" "this lesson has no LM head"

# every command that help lists is covered above (a new one must get its test)
# lens: tests/t_lens.sh (on a test model, against PyTorch); decode: tests/t_lessonmodel.sh
covered=" decode lens temp topk nextrow load lessons continue reload next prev first last step goto head layer train jacobian show explain set mask scale heads answer skip hint lang export save stats compare source pause wait play present theme help quit model prompt ids generate seed "
repl 'help\n'
missing=""
for c in $(sed -n '/^-- commands/,$ s/^\([a-z][a-z]*\) .*/\1/p' "$out"); do
	case $covered in *" $c "*) ;; *) missing="$missing $c" ;; esac
done
if [ -z "$missing" ]; then ok "every command in help has a test here"; else not_ok "every command in help has a test here" "not covered:$missing"; fi

# ------------------------------------------------------------ edits that remove a stage the walk uses
# The learner's experiment wins: the steps on a removed stage show the stage before it.
repl 'heads 1\nstep 3\n' lessons/multihead.json
clean "heads 1 on a two-head lesson is allowed"
check "heads 1: a step on the split stage shows project instead" has "$out" "step 3/12, stage: project"
repl 'mask none\nlast\nexplain masked 0 1\n' lessons/mask.json
clean "mask none on the masking lesson is allowed"
check "mask none: nothing is masked any more" has "$out" "query 0 may see key 1"
repl 'heads 3\nstep 2\n' lessons/multihead.json
err_cmd "heads that do not divide are still refused" "does not divide the 4 columns of W_q"

# ------------------------------------------------------------ demo scripts: wait takes plain decimal seconds
for w in 0x10 inf "1 2"; do
	printf 'wait %s\n' "$w" >"$tmp/w.txt"
	repl 'source '"$tmp"'/w.txt\nstep 2\n'
	err_cmd "demo: wait $w is refused" "wait"
done
printf 'wait 1e-3\nnext\n' >"$tmp/w.txt"
repl 'source '"$tmp"'/w.txt\n'
clean "demo: wait 1e-3 is a wait"

# ------------------------------------------------------------ stats params while a question may ask for it
repl 'next\nstats params\nstep 2\n' lessons/multihead.json
err_cmd "stats params is hidden while the question is open" "parameter count stays hidden"

# ------------------------------------------------------------ an edit that overflows is refused
repl 'set input[0][0] 1e308\nstep 2\n' lessons/mask.json
err_cmd "set that overflows is refused, naming the cell" "the numbers grow too large to compute: scores[0][0]"

# ------------------------------------------------------------ C locale: the narration's symbols in ASCII on a terminal
if script -qec true /dev/null >/dev/null 2>&1; then
	printf 'goto mask\n' >"$tmp/in"
	TERM=xterm-256color script -qec "$ATTNVIZ --plain lessons/mask.json <$tmp/in" /dev/null >"$out" 2>&1
	check "C locale terminal: -inf in the narration, not a UTF-8 minus and infinity" has "$out" "replaced by -inf before the softmax"
	check "C locale terminal: no UTF-8 symbols in the narration" hasnt "$out" "−∞"
else
	skip "C locale terminal" "script(1) not usable"
fi
repl 'goto mask\n' lessons/mask.json
check "C locale pipe: the narration as written" has "$out" "replaced by −∞ before the softmax"

# ------------------------------------------------------------ a step may show or hide the comparison
# from_step N: $out from the header of step N/4 on, in $tmp/from (empty when there is none)
from_step() { sed -n "\\|step $1/4|,\$p" "$out" >"$tmp/from"; }
repl '' tests/good/step_compare.json
check "step compare: off at first" hasnt "$out" "unscaled variant"
repl 'next\n' tests/good/step_compare.json
check "step compare: true turns it on" has "$out" "unscaled variant"
repl 'next\nnext\n' tests/good/step_compare.json
from_step 3
check "step compare: stays on at the next step" has "$tmp/from" "unscaled variant"
repl 'next\nnext\nnext\n' tests/good/step_compare.json
from_step 4
check "step compare: false turns it off" hasnt "$tmp/from" "unscaled variant"
repl 'next\ncompare off\nnext\n' tests/good/step_compare.json
from_step 3
check "step compare: the learner can still turn it off" hasnt "$tmp/from" "unscaled variant"

# ------------------------------------------------------------ an open question's answer stays hidden everywhere
repl 'step 5\nexport csv scaled '"$tmp"'/hidden.csv\nstep 2\n' lessons/selfattn.json
err_cmd "export of the hidden answer is refused" "stays hidden until you answer"
check "export of the hidden answer wrote no file" test ! -e "$tmp/hidden.csv"
# a loader error keeps its lines (the JSON line and the caret), not \x0a
printf '{"attnviz": 1,\n  "title": oops}\n' >"$tmp/syntax.json"
repl 'load '"$tmp"'/syntax.json\nstep 2\n'
err_cmd "load of a syntax error reports it" "JSON syntax error"
check "the error's lines are lines, not \\x0a" hasnt "$err" '\x0a'

# ------------------------------------------------------------ typed text echoed in errors

repl "goto $(printf '\033')[2J\nshow $(printf '\033')[31m\nstep 2\n"
check "typed control characters are escaped in error messages" hasnt "$err" "$ESC"

# ------------------------------------------------------------ UTF-8 locale

if locale -a 2>/dev/null | grep -qi '^c\.utf-*8$'; then
	printf 'mask causal\ngoto mask\nshow masked\n' >"$tmp/in"
	LC_ALL=C.UTF-8 "$ATTNVIZ" --plain <"$tmp/in" >"$out" 2>"$err"
	expect "UTF-8 locale: -∞ and ×" 'has "$out" "-∞" && has "$out" "4 × 4"'
else
	skip "UTF-8 locale: -∞ and ×" "no C.UTF-8 locale"
fi

# ------------------------------------------------------------ on a terminal (script(1) gives one)

if command -v script >/dev/null 2>&1 && script -qc true /dev/null </dev/null >/dev/null 2>&1; then
	printf 'show weights\nquit\n' >"$tmp/in"
	TERM=xterm-256color script -qec "$ATTNVIZ --plain <$tmp/in" /dev/null </dev/null >"$out" 2>&1
	check "terminal: colour on" has "$out" "$ESC"
	NO_COLOR=1 TERM=xterm-256color script -qec "$ATTNVIZ --plain <$tmp/in" /dev/null </dev/null >"$out" 2>&1
	check "terminal: NO_COLOR turns colour off" hasnt "$out" "$ESC"
	NO_COLOR='' TERM=xterm-256color script -qec "$ATTNVIZ --plain <$tmp/in" /dev/null </dev/null >"$out" 2>&1
	check "terminal: an empty NO_COLOR keeps colour" has "$out" "$ESC"
	TERM=dumb script -qec "$ATTNVIZ --plain <$tmp/in" /dev/null </dev/null >"$out" 2>&1
	check "terminal: TERM=dumb, no colour" hasnt "$out" "$ESC"
	TERM=xterm-256color script -qec "$ATTNVIZ --plain lessons/mask.json <$tmp/in >$tmp/piped" /dev/null </dev/null >/dev/null 2>&1
	check "terminal stdin, stdout piped: no colour" hasnt "$tmp/piped" "$ESC"
	# stdin a terminal: a prompt. Feed the pty through script's own stdin.
	printf 'next\nquit\n' | TERM=dumb script -qec "$ATTNVIZ --plain" /dev/null >"$out" 2>&1
	check "terminal stdin: a prompt" has "$out" "attnviz> "
else
	skip "on a terminal" "script(1) not usable"
fi
# ------------------------------------------------------------ decode steps, tiles, grouped heads (issue 11)

# the last block printed: everything after the last "== " header
last_step() { awk '/^== /{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$out" >"$tmp/last"; }

repl 'goto decode\nn\nn\nn\nn\n' tests/golden/v3/decode_window_rolling.json
clean "decode: stepping runs clean"
check "decode: goto starts at step 0" has "$out" "stage: decode, token 0 (the), cache 1 row, head 0/2"
check "decode: n moves to step 4" has "$out" "stage: decode, token 4 (a), cache 3 rows, head 0/2"
last_step
check "decode: the caption names the dropped rows" has "$tmp/last" "holds rows 2-4 (the window of 3 has dropped rows 0-1)"
check "decode: the cache's bytes per token" has "$tmp/last" "KV cache: kv_heads*(d_k + d_v)*8 = 1*(2 + 2)*8 = 32 bytes per token per layer"
check "decode: the grouped-query saving" has "$tmp/last" "would take 64: grouped-query attention keeps 1/2 of it"
check "decode: dropped cache rows marked x" grep -Eq '^cat +1\.3344x -0\.9439x' "$tmp/last"
check "decode: the new row marked #" grep -Eq '^a +0\.1342# -0\.2047#' "$tmp/last"
expect "decode: rows after the step are not printed" '! grep -Eq "^(warm|mat) " "$tmp/last"'
check "decode: dec_scores keeps only the cache's cells" grep -Eq '^a +-0\.0273# -0\.0178# -0\.0092# *$' "$tmp/last"
repl 'goto decode\nn\np\np\n' tests/golden/v3/decode_window_rolling.json
last_step
check "decode: p steps back inside the stage, then leaves it" has "$tmp/last" "stage: concat"
repl 'stats cache\n' tests/golden/v3/llama.json
check "stats cache: per token, per layer, all layers" has "$out" "6 tokens: 768 bytes per layer, 1152 in 2 layers"

repl 'goto flash\nn\nn\n' tests/golden/v3/flash_causal.json
clean "flash: stepping runs clean"
check "flash: goto starts at the first tile" has "$out" "stage: flash, tile (0, 0)"
check "flash: n passes the hidden tiles and says so" has "$out" "Skipped 2 tiles from (0, 1): the mask hides every cell of them."
last_step
check "flash: tile (1, 1)" has "$tmp/last" "stage: flash, tile (1, 1)"
check "flash: the numbers held at once" has "$tmp/last" "Held at once: Bq*Bk + Bq*(2 + d_v) = 2*2 + 2*(2 + 2) = 12 numbers, against n*m = 25"
check "flash: the tile lit in the masked scores" grep -Eq '^sat +0\.0598 +-0\.1494 +0\.1124# +-inf# +-inf' "$tmp/last"
check "flash: m before (~) and after (#) the tile" grep -Eq '^sat +0\.0598~ +0\.1124# +$' "$tmp/last"

repl 'goto split\n' tests/golden/v3/gqa_groups_bias.json
clean "gqa: split runs clean"
check "gqa: the caption names the groups" has "$out" "query heads 0-1 read kv head 0; query heads 2-3 read kv head 1."
check "gqa: K cut by key/value head" has "$out" "K (kv head 1, columns 2-3)  5 x 2"
check "gqa: a query head under its key/value head" has "$out" "Q (head 3, reads kv head 1, columns 6-7)  5 x 2"
expect "gqa: each group's K before its query heads" '[ "$(grep -E "^(K|V|Q) \(" "$out" | cut -c1-12 | tr "\n" "|")" = "K (kv head 0|V (kv head 0|Q (head 0, r|Q (head 1, r|K (kv head 1|V (kv head 1|Q (head 2, r|Q (head 3, r|" ]'

# a norm's statistics say what they are: LayerNorm's mean and variance, RMSNorm's mean square and RMS
repl 'show norm1_stats\n' lessons/block.json
check "norm1_stats: LayerNorm's columns are mean and var" grep -Eq "^ +mean +var$" "$out"
repl 'show norm1_stats\n' lessons/rmsnorm.json
check "norm1_stats: RMSNorm's columns are ms and rms" grep -Eq "^ +ms +rms$" "$out"

# ------------------------------------------------------------ the encoder–decoder (issue 9)
repl 'goto softmax\nlayer 1\nshow K\nlayer 0\n' tests/golden/v2/encdec_post.json
clean "encdec: walking the decoder's links runs clean"
check "encdec: the stage line names the decoder's self-attention" grep -Eq "layer 0/1 (·|-) decoder (·|-) self-attention, stage: softmax" "$out"
check "encdec: layer 1 is the cross-attention" grep -Eq "layer 0/1 (·|-) decoder (·|-) cross-attention, stage: softmax" "$out"
check "encdec: the cross-attention's keys are the encoder's tokens" grep -Eq "^<pad> " "$out"

# The encoder is part of the walk: n goes through its layers into the decoder; eN names its layers.
repl 'n\nn\nn\nn\np\n' lessons/encdec.json
clean "encdec: walking from the encoder into the decoder runs clean"
expect "encdec: n walks the encoder's two layers, then the decoder, and p comes back" \
	'[ "$(grep -Eo "layer [0-9]/[0-9] - (encoder|decoder)" "$out" | tr "\n" "|")" = "layer 0/2 - encoder|layer 0/2 - encoder|layer 0/2 - encoder|layer 1/2 - encoder|layer 0/1 - decoder|layer 1/2 - encoder|" ]'
check "encdec: the encoder's map is its own layer's" has "$out" "  block: x -> [attention] -> + -> N1 -> FFN -> + -> N2"
check "encdec: the decoder's map has its three sublayers" has "$out" "  block: [x] -> self-attn -> + -> N1 -> cross-attn -> + -> N2 -> FFN -> + -> N3"
check "encdec: the encoder's question hides its weights" has "$out" "weights: hidden until you answer"
# numbers of the encoder's last layer against PyTorch (tests/golden/v2/encdec_post.ref.json, encoder.layers[1].norm2)
repl 'layer e1\nshow norm2\nexplain norm2 1 2\nlayer e0\ngoto softmax\nstats weights\n' tests/golden/v2/encdec_post.json
clean "encdec: layer e1, show, explain and stats in the encoder run clean"
check "encdec: layer e1 is the encoder's second layer" grep -Eq "layer 1/2 (·|-) encoder (·|-) self-attention, stage: input" "$out"
check "encdec: the encoder's output row as PyTorch computes it" grep -Eq "^am +0\.7138 +-0\.9618 +-0\.7132 +0\.8378$" "$out"
check "encdec: explain on an encoder cell" has "$out" "norm2[1][2] = -0.713151"
check "encdec: stats of the encoder's weights" grep -Eq "^mean 0\.2 +std" "$out"
repl 'layer e2\nstep 2\n' tests/golden/v2/encdec_post.json
err_cmd "encdec: an encoder layer it does not have" "no layer e2: this lesson has the encoder's layers e0 to e1 and the decoder's 0 to 1"

# The backward pass is walked as it runs: after every forward stage, from the loss back through the decoder's links
# (cross-attention first), then through the memory into the encoder's last layer down to its first. The encoder's
# gradients against PyTorch (tests/golden/v2/encdec_post.ref.json, grad.encoder.layers[k].attn.W_q[0][0]).
repl 'step 65\nn\nstep 72\nn\nstep 79\nn\nstep 86\nexplain dW_q 0 0\nn\nlast\nexplain dW_q 0 0\nexplain doutput 0 0\n' tests/golden/v2/encdec_post.json
clean "encdec backward: walking the encoder's gradients runs clean"
expect "encdec backward: forward stages, then the decoder's cross and self links, then encoder layers 1 and 0" \
	'[ "$(grep -Eo "layer [0-9]/[0-9] - [a-z]+ - [a-z-]+, stage: [a-z_0-9]+" "$out" | sed 1d | tr "\n" "|")" = "layer 0/1 - decoder - cross-attention, stage: final_norm|layer 0/1 - decoder - cross-attention, stage: back_output|layer 0/1 - decoder - cross-attention, stage: back_project|layer 0/1 - decoder - self-attention, stage: back_output|layer 0/1 - decoder - self-attention, stage: back_project|layer 1/2 - encoder - self-attention, stage: back_output|layer 1/2 - encoder - self-attention, stage: back_project|layer 0/2 - encoder - self-attention, stage: back_output|layer 0/2 - encoder - self-attention, stage: back_project|" ]'
check "encdec backward: dW_q of the encoder's last layer as PyTorch computes it" has "$out" "dW_q[0][0] = 0.00441658"
check "encdec backward: dW_q of the encoder's first layer as PyTorch computes it" has "$out" "dW_q[0][0] = -1.02821"
check "encdec backward: the encoder's doutput comes from its block, not from a target" has "$out" "(doutput: what the block sends back)"
check "encdec backward: the map's gradients are d without UTF-8" has "$out" "-> N2 -> final N -> [d]"
expect "encdec backward: no map prints the UTF-8 partial sign without UTF-8" '! grep -q "block:.*∂" "$out"'

# The formula line follows the lesson's settings: scale off, a scale of its own.
repl 'goto scale\nscale off\nscale 0.3\ngoto back_scale\nscale on\n' tests/golden/v2/encdec_post.json
clean "formulas: scale edits run clean"
check "formulas: scale off shows the scores unscaled" has "$out" "scaled = scores   (scale off: * 1)"
check "formulas: a scale of the lesson's own" has "$out" "scaled = scores * scale   (the lesson's own factor, not 1/sqrt(d_k))"
check "formulas: back_scale follows the scale too" has "$out" "dscores = dscaled * scale   (the lesson's own factor)"
check "formulas: scale on gives 1/sqrt(d_k) back" has "$out" "dscores = dscaled / sqrt(d_k)"

# An edit refused on a decoder link names it where the file has it (the loader's path), not by link number.
repl 'layer 1\nmask causal\nstep 2\n' tests/golden/v2/encdec_post.json
err_cmd "encdec: a refused edit on the cross-attention names layers[0].cross" 'layers[0].cross.mask: "causal" needs a square score matrix'

finish
