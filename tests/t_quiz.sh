#!/bin/sh
# t_quiz.sh: every lesson's questions, answered in the plain REPL by script.
# For each lessons/NAME.json, three walks through all its steps with `step N` (`next` would walk decode's tokens and flash's tiles too):
#   1. `skip` at every step: the answers the session gives ("Skipped: the
#      answer is 2) …" or "Skipped: weights[1][0] is 0.527373.");
#   2. those answers given with `answer`: every one is "Right: …", the score
#      ends Q/Q, and a choice's feedback quotes the choice;
#   3. a wrong answer for each (another choice, or the number + 1000): every
#      one is "Not quite: …" with the right answer, the score ends 0/Q.
# Also: at least two questions per lesson, and at the last step the next
# lesson in the teaching order ("Finished. Next lesson: load NAME").
# Run from the repository root; $ATTNVIZ is the binary. Prints "ok - NAME" /
# "not ok - NAME" lines and ends with "N passed, N failed, N skipped" (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

export LC_ALL=C.UTF-8

# The teaching order of lessons/README.md ("1. `selfattn.json` — …").
# shellcheck disable=SC2016 # the backquotes are README's, not a command
order=$(sed -n 's/^[0-9]*\. `\([a-z]*\)\.json`.*/\1/p' lessons/README.md)

# walk LESSON INPUTFILE: the plain REPL on the lesson, stdout in $tmp/out
walk() {
	"$ATTNVIZ" --plain "$1" <"$2" >"$tmp/out" 2>"$err"
}

for lesson in lessons/*.json; do
	name=$(basename "$lesson" .json)
	: >"$tmp/in"
	walk "$lesson" "$tmp/in"
	steps=$(sed -n 's/^== .* == step 1\/\([0-9]*\), \(layer [0-9]*\/[0-9]*[^,]*, \)\{0,1\}stage.*/\1/p' "$tmp/out" | sed -n 1p)
	if [ -z "$steps" ]; then
		not_ok "quiz $name: the lesson opens"
		continue
	fi

	# 1. skip everywhere: "STEP ANSWER" lines
	i=0
	: >"$tmp/in"
	# `step N`, not `next`: inside decode and flash, next walks the tokens and tiles
	while [ "$i" -lt "$steps" ]; do printf 'skip\nstep %d\n' $((i + 2)) >>"$tmp/in"; i=$((i + 1)); done
	walk "$lesson" "$tmp/in"
	awk '/^== .* == step [0-9]+\/[0-9]+, (layer [0-9]+\/[0-9]+[^,]*, )?stage/ { s = $0; sub(/.* == step /, "", s); sub(/\/.*/, "", s) }
		/^Skipped: the answer is [0-9]+\) / { a = $0; sub(/^Skipped: the answer is /, "", a); sub(/\).*/, "", a); print s, "choice", a }
		/^Skipped: [A-Za-z_][A-Za-z0-9_]*\[[0-9]+\]\[[0-9]+\] is / { a = $0; sub(/.* is /, "", a); sub(/\.$/, "", a); print s, "number", a }' \
		"$tmp/out" >"$tmp/answers"
	questions=$(wc -l <"$tmp/answers" | tr -d ' ')
	if [ "$questions" -ge 2 ]; then
		ok "quiz $name: $questions questions, each skipped with its answer shown"
	else
		not_ok "quiz $name: at least two questions (got $questions)"
	fi

	# 2. right answers, 3. wrong ones
	for run in right wrong; do
		i=1
		: >"$tmp/in"
		while [ "$i" -le "$steps" ]; do
			line=$(awk -v s="$i" '$1 == s' "$tmp/answers")
			if [ -n "$line" ]; then
				# shellcheck disable=SC2086 # split "STEP KIND ANSWER" on purpose
				set -- $line
				if [ $run = right ]; then
					a=$3
				elif [ "$2" = choice ]; then
					if [ "$3" = 1 ]; then a=2; else a=1; fi
				else
					a=$(awk -v x="$3" 'BEGIN { printf "%.6g", x + 1000 }')
				fi
				printf 'answer %s\n' "$a" >>"$tmp/in"
			fi
			printf 'step %d\n' $((i + 1)) >>"$tmp/in"
			i=$((i + 1))
		done
		walk "$lesson" "$tmp/in"
		if [ $run = right ]; then
			good=$(grep -c '^Right: ' "$tmp/out")
			bad=$(grep -c '^Not quite: ' "$tmp/out")
			score="(score $questions/$questions)"
		else
			good=$(grep -c '^Not quite: ' "$tmp/out")
			bad=$(grep -c '^Right: ' "$tmp/out")
			score="(score 0/$questions)"
		fi
		last=$(grep '(score [0-9]*/[0-9]*)$' "$tmp/out" | tail -n 1)
		if [ "$good" -eq "$questions" ] && [ "$bad" -eq 0 ] && [ "${last%"$score"}" != "$last" ] &&
		   ! grep -q 'answer with\|no open question' "$err"; then
			ok "quiz $name: all $questions answered $run, $score"
		else
			not_ok "quiz $name: all $questions answered $run, $score" "feedback: $good as expected, $bad not; last: $last"
		fi
		# a choice's feedback quotes the choice: "Right: 2) learning." / "…; the answer is 2) learning."
		if grep -q ' choice ' "$tmp/answers"; then
			if [ $run = right ]; then pat='^Right: [0-9]) .*\.  (score'; else pat='^Not quite: you chose [0-9]) .*; the answer is [0-9]) .*\.  (score'; fi
			if grep -q "$pat" "$tmp/out"; then
				ok "quiz $name: $run choice feedback quotes the choices"
			else
				not_ok "quiz $name: $run choice feedback quotes the choices" "$(grep -m 1 '^Right\|^Not quite' "$tmp/out")"
			fi
		fi
	done

	# the last step offers the next lesson
	next=$(printf '%s\n' "$order" | awk -v n="$name" 'found { print; exit } $0 == n { found = 1 }')
	if [ -n "$next" ]; then
		if grep -q "^Finished. Next lesson: load $next\$" "$tmp/out"; then
			ok "quiz $name: the last step offers $next"
		else
			not_ok "quiz $name: the last step offers $next"
		fi
	elif grep -q '^Finished. Next lesson' "$tmp/out"; then
		not_ok "quiz $name: the last lesson offers no next one"
	else
		ok "quiz $name: the last lesson offers no next one"
	fi
done
finish
