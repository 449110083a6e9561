#!/bin/sh
# tests/t_teach.sh — what a teacher does in the full-screen view (issue 13 §4, §7):
# a demo's `quiz` line asks before it tells, a demo's paths are its folder's, a
# typo in a demo's goto gets "did you mean" in one message that fits, :play stops
# at a question, and --watch reloads a lesson as it is saved. tmux as in t_tui.sh.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"

# A demo in its own folder, beside the lesson it loads by a relative path.
mkdir -p "$tmp/class/sub"
cp "$SRCDIR/lessons/mask.json" "$tmp/class/sub/cat.json"
printf '# quiz demo\nload cat.json\ngoto scale\nquiz\npause\ngoto sofmax\ngoto softmax\n' >"$tmp/class/sub/quiz.txt"

s=quiz80
start "$s" 80 24 C.UTF-8 "" --demo "$tmp/class/sub/quiz.txt"
shows "demo quiz: load cat.json is the demo folder's" "$s" 'Masked attention'
shows "demo quiz: stops at the question" "$s" 'demo 3/6 +question'
shows "demo quiz: the question and its choices are on the screen" "$s" 'Which keys are masked in row 2'
shows "demo quiz: the choices" "$s" '1\) 习, 真, 好, 玩'
sleep 0.3
snap "$s"
expect "demo quiz: the answer is not told before the class votes" 'hasnt "$tmp/screen" "Answer:" && hasnt "$tmp/screen" "the answer is"'
expect "demo quiz: the pane the question is about stays hidden" 'has "$tmp/screen" "press 1-4 first"'
keys "$s" Space
shows "demo quiz: space reveals the answer, in a demo's words" "$s" 'Answer: 1\)'
expect "demo quiz: not :skip's \"Skipped\" (the class did not skip it)" 'snap "$s"; hasnt "$tmp/screen" "Skipped"'
shows "demo quiz: and waits there" "$s" 'paused: space goes on|paused'
snap "$s"
expect "demo quiz: the revealed pane shows its numbers" 'hasnt "$tmp/screen" "press 1-4 first"'
keys "$s" Space
shows "demo quiz: space goes on to the pause" "$s" 'demo 4/6, line 5 +paused'
keys "$s" Space
shows "demo quiz: a typo in goto says what it meant" "$s" 'did you mean "softmax"\?\)'
shows "demo quiz: the message names the demo line" "$s" 'demo line 6: unknown stage: sofmax'
snap "$s"
expect "demo quiz: the whole message fits (no …)" 'hasnt "$tmp/screen" "sofmax (did you mean \"softmax\"?)…"'
keys "$s" Space
shows "demo quiz: space goes on after the typo" "$s" 'stage: softmax'
leaves_demo "$s" "demo quiz"

# A demo's `source` plays the script next, its paths its own folder's; an error names the script's line.
printf 'load cat.json\ngoto weighted\nbogus-cmd\n' >"$tmp/class/sub/inner.txt"
printf 'source sub/inner.txt\ngoto concat\n' >"$tmp/class/outer.txt"
s=nest
start "$s" 100 30 C.UTF-8 "" --demo "$tmp/class/outer.txt"
shows "demo source: the sourced script's load is its folder's" "$s" 'Masked attention'
shows "demo source: its error names the script and line" "$s" 'demo .*inner\.txt line 3: .*bogus-cmd'
keys "$s" Space
shows "demo source: then the rest of the demo" "$s" 'stage: concat'
keys "$s" p
shows "demo source: p goes back into the sourced lines" "$s" 'stage: weighted'
leaves_demo "$s" "demo source"

# The class's vote entered with a digit: the answer with the feedback, then space goes on.
s=vote
plays "$s" 'load mask\ngoto scale\nquiz\ngoto softmax\n'
shows "demo vote: at the question" "$s" "demo 3/4 +question"
keys "$s" 2
shows "demo vote: a digit answers for the class" "$s" 'Not quite: you chose 2\)'
keys "$s" Space
shows "demo vote: space goes on" "$s" 'stage: softmax'
leaves_demo "$s" "demo vote"

# A quiz line on a step without a question is an error of the demo: it pauses there.
s=noq
plays "$s" 'goto input\nquiz\ngoto softmax\n'
shows "demo quiz: a step without a question is said" "$s" 'demo line 2: quiz: this step \(stage input\) asks no question'
leaves_demo "$s" "demo noq"

# :play stops at a question not answered (mask.json asks one at step 5).
s=playq
start "$s" 100 30 C.UTF-8 "" lessons/mask.json
wait_for "$s" 'stage: input' >/dev/null
cmd "$s" "play 0.1"
shows ":play stops at an unanswered question" "$s" 'play: stopped at a question' 8
shows ":play: on the question's step" "$s" 'step 5/'
quits "$s" "playq"

# --watch: a save reloads the lesson and keeps the step; a broken save keeps the last good lesson.
cp "$SRCDIR/lessons/mask.json" "$tmp/w.json"
s=watch
start "$s" 100 30 C.UTF-8 "" --watch "$tmp/w.json"
shows "watch: starts on the lesson" "$s" 'Masked attention'
cmd "$s" "step 6"
shows "watch: the learner goes to step 6" "$s" 'step 6/12'
sleep 1.2
sed 's/Masked attention: the decoder/Masked WATCHED: the decoder/' "$tmp/w.json" >"$tmp/w.new" && mv "$tmp/w.new" "$tmp/w.json"
shows "watch: a save (by rename) reloads the lesson" "$s" 'Masked WATCHED' 5
shows "watch: and keeps the step" "$s" 'step 6/12'
shows "watch: says so" "$s" 'watch: reloaded, step 6/12'
sed 's/"heads": 2,/"heads": 2,,/' "$tmp/w.json" >"$tmp/w.bad" && cat "$tmp/w.bad" >"$tmp/w.json"
shows "watch: a broken save (in place) shows the error on the status line" "$s" 'w\.json:[0-9]+:[0-9]+: .*(syntax|expected)' 5
snap "$s"
expect "watch: and keeps the last good lesson, at its step" 'has "$tmp/screen" "Masked WATCHED" && grep -q "step 6/12" "$tmp/screen"'
sed 's/Masked WATCHED/Masked FIXED/' "$tmp/w.json" | sed 's/"heads": 2,,/"heads": 2,/' >"$tmp/w.new" && cat "$tmp/w.new" >"$tmp/w.json"
shows "watch: the save after it loads again" "$s" 'Masked FIXED' 5
shows "watch: still at the step" "$s" 'step 6/12'
quits "$s" "watch"
"$ATTNVIZ" --watch --plain "$tmp/w.json" </dev/null >/dev/null 2>"$tmp/err"
check "watch: --plain is refused (exit 2)" test $? = 2
check "watch: says it goes with the full-screen view" has "$tmp/err" '--watch goes with the full-screen view'

# The shipped demos: the first question is asked before any answer is told.
for d in masking multihead; do
	s="ship$d"
	start "$s" 120 35 C.UTF-8 "" --present --demo "lessons/demos/$d.txt"
	i=0
	while [ "$i" -lt 12 ] && ! cap "$s" | grep -q 'question: space reveals'; do
		keys "$s" Space
		sleep 0.4
		i=$((i + 1))
	done
	snap "$s"
	expect "lessons/demos/$d.txt: reaches a question" 'has "$tmp/screen" "question: space reveals"'
	expect "lessons/demos/$d.txt: nothing answered before it is asked" 'hasnt "$tmp/screen" "the answer is" && hasnt "$tmp/screen" "Skipped" && hasnt "$tmp/screen" "Answer:"'
	expect "lessons/demos/$d.txt: no error on the way" 'hasnt "$tmp/screen" unknown && hasnt "$tmp/screen" error'
	keys "$s" Space
	shows "lessons/demos/$d.txt: space reveals" "$s" 'Answer: '
	leaves_demo "$s" "$d"
done

finish
