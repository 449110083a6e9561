#!/bin/sh
# tests/fuzz/lessondict.sh: the libFuzzer dictionary for lesson files
# (tests/fuzz/lesson.dict), made from the format's keys — every string of every
# `*_keys[] = { ... }` list the lesson reader checks a file against
# (src/lesson/*.c: the top level, layers, the block, RoPE, steps, quizzes, ...)
# and every row's `.name` of the LessonKey tables (src/lesson/lesson_keys.h),
# each as a JSON string — and then tests/fuzz/lesson-values.dict's values (stage
# and matrix names, numbers at the limits, bytes that must be refused).
# `make fuzz-dict` writes it; t_cli.sh checks the shipped one is what this
# makes, so a new key reaches the fuzzer. Run from the repository root.
set -e
values=${1:-tests/fuzz/lesson-values.dict}
echo '# libFuzzer dictionary for attnviz lesson files (tests/fuzz_lesson.c)'
echo '# Made by tests/fuzz/lessondict.sh from src/lesson/*.c keys and lesson-values.dict: do not edit; make fuzz-dict.'
awk '
/_keys\[\] = \{/ { p = 1 }
# a LessonKey table (src/lesson/lesson_keys.h): only the .name of each row, not its hints
/LessonKey [a-z_]*_keys\[\] = \{/ { t = 1 }
p && t {
	line = $0
	while (match(line, /\.name = "[^"]*"/)) {
		s = substr(line, RSTART, RLENGTH)
		sub(/^\.name = "/, "", s)
		print substr(s, 1, length(s) - 1)
		line = substr(line, RSTART + RLENGTH)
	}
	if ($0 ~ /\};/)
		p = t = 0
	next
}
p {
	line = $0
	sub(/^.*_keys\[\] = \{/, "", line)
	while (match(line, /"[^"]*"/)) {
		print substr(line, RSTART + 1, RLENGTH - 2)
		line = substr(line, RSTART + RLENGTH)
	}
	if ($0 ~ /\};/)
		p = 0
}
' src/lesson/*.c | LC_ALL=C sort -u | sed 's/.*/"\\"&\\""/'
grep -v '^#' "$values"
