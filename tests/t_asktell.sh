#!/bin/sh
# tests/t_asktell.sh — questions that never show their answer (issue 25 §1): a
# step's "then" is said only once its question is answered, skipped or
# revealed, in the plain REPL, in a handout (the answer key only) and in the
# full-screen view; the panes that would show the answer (K's shape at gqa
# step 3, dconcat = doutput) stay hidden; --check --strict warns when a
# question's answer can be read before it is answered.
. "$(dirname "$0")/lib.sh"
SRCDIR=${ATTNVIZ_SRCDIR:-$(pwd)}
cd "$SRCDIR" || bail "no source folder"
out=$tmp/out
then_en="4 × 4: each is the average of layer 0's two heads"

# ---- the plain REPL: gqa step 3 asks K's width; nothing before the answer tells it
printf 'step 3\nanswer 1\n' | "$ATTNVIZ" --plain --lang en lessons/gqa.json >"$out" 2>"$err"
sed -n '/step 3\/9/,$p' "$out" | sed -n '1,/^Right: /p' >"$tmp/before"
sed -n '/^Right: /,$p' "$out" >"$tmp/after"
expect "plain: at gqa step 3 the question is asked" 'has "$tmp/before" "How many columns does layer 1'"'"'s K have?"'
expect "plain: the then text is not said before the answer" 'hasnt "$tmp/before" "$then_en"'
expect "plain: K, W_k and W_v are hidden, their shape too" \
	'has "$tmp/before" "K: hidden until you answer" && has "$tmp/before" "W_k: hidden until you answer" && hasnt "$tmp/before" "K  4 × 4" && hasnt "$tmp/before" "W_k  4 × 4"'
expect "plain: the then text after the answer" 'has "$tmp/after" "$then_en"'
expect "plain: K shows after the answer" 'has "$tmp/after" "K  4 × 4"'
# skipped, the same
printf 'step 3\nskip\n' | "$ATTNVIZ" --plain --lang en lessons/gqa.json >"$out" 2>"$err"
expect "plain: the then text after a skip" '[ "$(count "$out" "$then_en")" -eq 1 ] && has "$out" "Skipped:"'
# in Chinese
printf 'step 3\nanswer 1\n' | "$ATTNVIZ" --plain --lang zh lessons/gqa.json >"$out" 2>"$err"
expect "plain zh: the then text once, after the answer" '[ "$(count "$out" "W_k 和 W_v 是 4 × 4")" -eq 1 ]'
# a pane holding the same numbers as the asked one: gradient's dconcat is doutput
printf 'step 4\n' | "$ATTNVIZ" --plain --lang en lessons/gradient.json >"$out" 2>"$err"
expect "plain: dconcat (= doutput) hides with doutput" \
	'has "$out" "doutput: hidden until you answer" && has "$out" "dconcat: hidden until you answer" && hasnt "$out" "-0.2911"'
# show refuses a matrix the question hides
printf 'step 3\nshow W_k\n' | "$ATTNVIZ" --plain --lang en lessons/gqa.json >"$out" 2>"$err"
expect "plain: show W_k refuses while the question is open" 'has "$err" "W_k stays hidden until you answer"'

# ---- the handout: the then text in the answer key, never under the question
"$ATTNVIZ" --handout gqa --lang en -o "$tmp/g.md" >"$out" 2>"$err"
key=$(grep -n '^## Answer key' "$tmp/g.md" | cut -d: -f1)
first=$(grep -n -F "$then_en" "$tmp/g.md" | head -n 1 | cut -d: -f1)
expect "handout md: the then text is in the answer key" '[ -n "$key" ] && [ -n "$first" ] && [ "$first" -gt "$key" ]'
expect "handout md: and only there" '[ "$(count "$tmp/g.md" "$then_en")" -eq 1 ]'
"$ATTNVIZ" --handout gqa --lang en -o "$tmp/g.html" >"$out" 2>"$err"
expect "handout html: the then text only in the answer key" \
	'[ "$(count "$tmp/g.html" "4 × 4: each is the average of layer 0")" -eq 1 ] &&
	 sed -n "/class=\"answers\"/,\$p" "$tmp/g.html" | grep -q -F "4 × 4: each is the average of layer 0"'

# a pane the question's "hides" names has no numbers in the figure: alibi step 5, the slope's bias
"$ATTNVIZ" --handout alibi --lang en -o "$tmp/a.html" >"$out" 2>"$err"
sed -n '/id="step-5"/,/id="step-6"/p' "$tmp/a.html" | sed -n '/id="s5-pane-bias-head3"/,/<\/g>/p' >"$tmp/bias"
expect "handout: the pane hides names has no numbers" 'has "$tmp/bias" "class=\"cell hidden\""'

# ---- --check --strict: a question whose answer can be read before it is answered
"$ATTNVIZ" --check tests/bad/strict/giveaway.json >"$out" 2>"$err"
rc=$?
expect "check: a giveaway is no error without --strict" '[ "$rc" -eq 0 ] && has "$out" ": ok"'
"$ATTNVIZ" --check --strict tests/bad/strict/giveaway.json >"$out" 2>"$err"
rc=$?
expect "check --strict: the asked number in the text" \
	'[ "$rc" -eq 1 ] && has "$err" "giveaway.json: steps[0]: warning: the answer can be read before it is answered: 0.73 in the \"en\" text"'
expect "check --strict: the right choice in the text" \
	'has "$err" "giveaway.json: steps[1]: warning: the answer can be read before it is answered: \"a weighted average of the values\" in the \"en\" text"'
expect "check --strict: in Chinese too" 'has "$err" "steps[1]: warning: the answer can be read before it is answered: \"值的加权平均\" in the \"zh\" text"'
# the same lesson with the giveaways said in "then" passes
sed -e 's/"text": {"en": "Row 0 gives 0.73 to itself.", "zh": "第 0 行给自己 0.73。"}/"text": "Row 0.", "then": {"en": "Row 0 gives 0.73 to itself.", "zh": "第 0 行给自己 0.73。"}/' \
	-e 's/"text": {"en": "Each output is a weighted average of the values.", "zh": "每个输出都是值的加权平均。"}/"text": {"en": "The outputs.", "zh": "输出。"}, "then": {"en": "Each output is a weighted average of the values.", "zh": "每个输出都是值的加权平均。"}/' \
	-e 's/"text": "Row 0\."/"text": {"en": "Row 0.", "zh": "第 0 行。"}/' tests/bad/strict/giveaway.json >"$tmp/fixed.json"
"$ATTNVIZ" --check --strict "$tmp/fixed.json" >"$out" 2>"$err"
rc=$?
expect "check --strict: said in then, it passes" '[ "$rc" -eq 0 ] && [ ! -s "$err" ]'
# "then" without a question: a warning at its JSON path, shown after the text
printf '{"attnviz": 1, "title": "t", "tokens": ["a"], "X": [[1]], "W_q": [[1]], "W_k": [[1]], "W_v": [[1]],\n "steps": [{"stage": "scores", "text": "before", "then": "AFTER-TEXT"}]}\n' >"$tmp/then.json"
"$ATTNVIZ" --check "$tmp/then.json" >"$out" 2>"$err"
rc=$?
expect "check: then without a quiz is a warning at its path" \
	'[ "$rc" -eq 0 ] && has "$err" "then.json: warning: steps[0].then: \"then\" is said once a question is answered"'
printf '' | "$ATTNVIZ" --plain --lang en "$tmp/then.json" >"$out" 2>"$err"
expect "plain: then without a quiz shows after the text" 'has "$out" "AFTER-TEXT"'
# "hides": an unknown matrix is an error at its path
sed 's/"answer": 0}}/"answer": 0, "hides": ["weights", "K_T"]}}/' tests/bad/strict/giveaway.json >"$tmp/hides.json"
"$ATTNVIZ" --check "$tmp/hides.json" >"$out" 2>"$err"
rc=$?
expect "check: hides names an unknown matrix" '[ "$rc" -eq 1 ] && has "$err" "hides.json: steps[1].quiz.hides[1]: unknown matrix \"K_T\""'
# save keeps then and hides
printf 'save %s\n' "$tmp/saved.json" | "$ATTNVIZ" --plain --lang en lessons/gqa.json >"$out" 2>"$err"
expect "save: then and hides are kept" \
	'has "$tmp/saved.json" "\"then\"" && grep -q "\"hides\":[[:space:]]*\[\"K\", \"W_k\", \"W_v\"\]" "$tmp/saved.json" && "$ATTNVIZ" --check --strict "$tmp/saved.json" >/dev/null 2>&1'

# ---- the full-screen view at 80×24: gqa step 3
. "$(dirname "$0")/tmux.sh"
s=ask80
begin "$s" 80x24 --lang en lessons/gqa.json
cmd "$s" "step 3"
shows "tui: gqa step 3 asks K's width" "$s" "How many columns does layer"
snap "$s"
expect "tui: the then text is not on the screen before the answer" 'hasnt "$tmp/screen" "are 4 × 4" && hasnt "$tmp/screen" "4 × 4: each is"'
expect "tui: K's pane shows neither numbers nor shape" 'hasnt "$tmp/screen" "K  4×4" && hasnt "$tmp/screen" "W_k  4×4"'
expect "tui: the status line shows no hidden cell" 'hasnt "$tmp/screen" "K[" && hasnt "$tmp/screen" "W_k["'
keys "$s" 1
shows "tui: answered" "$s" "Right: 1\)"
shows "tui: the then text after the answer" "$s" "W_k and W_v are 4 × 4"
quits "$s" "tui asktell"
finish
