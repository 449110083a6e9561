#!/bin/sh
# t_cli.sh: the batch command line — --help/--version, usage errors (exit 2),
# --check on every good and bad lesson, --dump of unusable files, files that
# are not lessons, and lesson text that must never reach the terminal raw
# (control characters) or be used as a format string (%s %n).
# Run from the repository root; $ATTNVIZ is the binary. Prints "ok - NAME" /
# "not ok - NAME" lines and ends with "N passed, N failed, N skipped" (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

out=$tmp/out

empty() { [ ! -s "$1" ]; }
nonempty() { [ -s "$1" ]; }
no_esc() { hasnt "$1" "$ESC"; }

# ------------------------------------------------------------ help, version, usage errors

run --help
check "--help exits 0" [ "$rc" -eq 0 ]
check "--help prints usage on stdout" has "$out" "usage: attnviz"
check "--help writes nothing on stderr" empty "$err"
run -h
check "-h exits 0" [ "$rc" -eq 0 ]
run --version
check "--version exits 0" [ "$rc" -eq 0 ]
check "--version prints the version" grep -q '^attnviz [0-9][0-9.]*' "$out"
run -V
check "-V exits 0" [ "$rc" -eq 0 ]

usage_case() { # NAME ARGS...: exit 2, nothing on stdout, a message on stderr
	name=$1
	shift
	run "$@"
	if [ "$rc" -eq 2 ] && empty "$out" && nonempty "$err" && has "$err" "attnviz"; then
		ok "usage error: $name"
	else
		not_ok "usage error: $name" "exit $rc (want 2), stdout $(wc -c <"$out") bytes"
	fi
}
usage_case "unknown option" --frobnicate
usage_case "unknown short option" -x
usage_case "--check without files" --check
usage_case "--dump without a file" --dump
usage_case "--train without --lr" --dump --train 5 lessons/mask.json
usage_case "--lr without --train" --dump --lr 0.1 lessons/mask.json
usage_case "--train without --dump" --check --train 5 --lr 0.1 lessons/mask.json
usage_case "--train with a negative count" --dump --train -1 --lr 0.1 lessons/mask.json
usage_case "--lr of 0" --dump --train 5 --lr 0 lessons/mask.json
usage_case "--dump with two files" --dump lessons/selfattn.json lessons/mask.json
usage_case "--bench without a file" --bench
usage_case "--repeat without a value" --bench lessons/selfattn.json --repeat
usage_case "--repeat 0" --bench lessons/selfattn.json --repeat 0
usage_case "--repeat not a number" --bench lessons/selfattn.json --repeat many
usage_case "--lang without a value" --lang
usage_case "--lang fr" --lang fr
usage_case "--strict without --check" --strict lessons/selfattn.json
usage_case "two lessons for the REPL" --plain lessons/selfattn.json lessons/mask.json
run --frobnicate
check "unknown option is named" has "$err" "--frobnicate"

# ------------------------------------------------------------ --check on usable lessons

for f in tests/good/*.json lessons/*.json; do
	[ -f "$f" ] || continue
	run --check "$f"
	if [ "$rc" -eq 0 ] && [ "$(wc -l <"$out")" -eq 1 ] && grep -q "^$f: ok, n=[0-9]*, .*d_model=[0-9]*, heads=[0-9]*, [0-9]* steps\$" "$out"; then
		ok "--check $f"
	else
		not_ok "--check $f" "exit $rc (want 0); stdout: $(head -c 200 "$out")"
	fi
done
run --check lessons/*.json
n=$(ls lessons/*.json | wc -l)
expect "--check of several files prints one line each" '[ "$rc" -eq 0 ] && [ "$(grep -c ": ok, " "$out")" -eq "$n" ]'

# ------------------------------------------------------------ --check and --dump on unusable lessons

# exit 1, nothing on stdout, and one message on stderr whose first line names the file
bad_case() { # LABEL FILE MODE
	label=$1 f=$2 mode=$3
	run "$mode" "$f"
	first=$(head -n 1 "$err")
	names=$(grep -c -F -e "$f" "$err")
	case $first in
	"$f:"*) starts=1 ;;
	*) starts=0 ;;
	esac
	if [ "$rc" -eq 1 ] && empty "$out" && [ "$starts" -eq 1 ] && [ "$names" -eq 1 ] && no_esc "$err"; then
		ok "$mode $label"
	else
		not_ok "$mode $label" "exit $rc (want 1), stdout $(wc -c <"$out") bytes (want 0)," \
			"stderr lines naming the file: $names (want 1), first line starts with it: $starts"
	fi
}
nbad=0
for f in tests/bad/*.json; do
	[ -f "$f" ] || continue
	nbad=$((nbad + 1))
	bad_case "$f" "$f" --check
done
check "tests/bad holds malformed lessons" [ "$nbad" -gt 0 ]
for f in tests/bad/*.json; do
	[ -f "$f" ] || continue
	bad_case "$f" "$f" --dump
done

# not lesson files at all
mkdir "$tmp/dir.json"
: >"$tmp/empty.json"
printf '   \n\t\n' >"$tmp/blank.json"
bad_case "a directory" "$tmp/dir.json" --check
bad_case "a directory" "$tmp/dir.json" --dump
bad_case "an empty file" "$tmp/empty.json" --check
bad_case "an empty file" "$tmp/empty.json" --dump
bad_case "a blank file" "$tmp/blank.json" --dump
bad_case "a missing file" "$tmp/missing.json" --check
bad_case "a missing file" "$tmp/missing.json" --dump
bad_case "a missing file" "$tmp/missing.json" --bench
printf '\377\376\000\001garbage' >"$tmp/binary.json"
bad_case "a binary file" "$tmp/binary.json" --dump

# issue 12 §1.9: a numeric answer pointing at a −∞ cell cannot be typed: --check refuses it, with its path
cat >"$tmp/inf.json" <<'EOF'
{
  "attnviz": 1,
  "tokens": ["a", "b"],
  "X": {"identity": 2},
  "W_q": {"identity": 2}, "W_k": {"identity": 2}, "W_v": {"identity": 2},
  "mask": "causal",
  "steps": [{"stage": "input"}, {"stage": "mask", "quiz": {"question": "?", "answer": {"matrix": "masked", "row": 0, "col": 1}}}]
}
EOF
bad_case "a numeric answer at a -inf cell" "$tmp/inf.json" --check
check "--check names the -inf answer's path" has "$err" "steps[1].quiz.answer: masked[0][1] (head 0) is"
sed 's/"col": 1}/"col": 0}/' "$tmp/inf.json" >"$tmp/fin.json"
run --check "$tmp/fin.json"
check "--check takes a numeric answer at a finite cell" [ "$rc" -eq 0 ]

# a good and a bad file together: the good one still gets its line, the exit status is 1
run --check lessons/selfattn.json tests/bad/row_length.json
if [ "$rc" -eq 1 ] && [ "$(wc -l <"$out")" -eq 1 ] && has "$out" "lessons/selfattn.json: ok" && has "$err" "tests/bad/row_length.json"; then
	ok "--check of a good and a bad file"
else
	not_ok "--check of a good and a bad file" "exit $rc (want 1)"
fi

# the documented messages, word for word
msg_case() { # FILE TEXT
	run --check "$1"
	if has "$err" "$2"; then ok "message for $1"; else not_ok "message for $1" "want: $2"; fi
}
msg_case tests/bad/row_length.json "tests/bad/row_length.json: W_q[2]: expected 4 numbers, got 3"
msg_case tests/bad/heads_divide.json "tests/bad/heads_divide.json: heads: 3 does not divide the 8 columns of W_q"
msg_case tests/bad/syntax.json "tests/bad/syntax.json:3:"

# JSON written by hand: the likely mistake named, the caret on it
msg_case tests/bad/syntax_trailing_comma.json "tests/bad/syntax_trailing_comma.json:3:22: a trailing comma"
msg_case tests/bad/syntax_comment.json "tests/bad/syntax_comment.json:2:17: a // comment"
msg_case tests/bad/syntax_curly.json "tests/bad/syntax_curly.json:3:12: a curly quote"
# where an object's key should start too (theme files get the same messages: jsonread.c)
printf '{"attnviz": 1,\n  "title": "x",\n}\n' >"$tmp/objcomma.json"
msg_case "$tmp/objcomma.json" "$tmp/objcomma.json:2:15: a trailing comma"
printf '{"attnviz": 1, \342\200\234title\342\200\235: "x"}\n' >"$tmp/keycurly.json"
msg_case "$tmp/keycurly.json" "$tmp/keycurly.json:1:16: a curly quote"

# without --strict, the missing translations are one warning line, which starts with warning:
printf '{"attnviz": 1, "title": "x", "tokens": ["a", "b"], "X": [[1, 0], [0, 1]],\n "W_q": {"identity": 2}, "W_k": {"identity": 2}, "W_v": {"identity": 2},\n "steps": [{"stage": "scores", "text": "hi"}, {"stage": "softmax", "text": {"en": "a", "zh": "b"}}]}\n' >"$tmp/nozh.json"
run --check "$tmp/nozh.json"
expect "--check: missing translations in one warning line" \
	'[ "$rc" -eq 0 ] && [ "$(wc -l <"$err")" -eq 1 ] && has "$err" "$tmp/nozh.json: warning: 2 texts have no \"zh\" (use --strict to list them)"'
printf '{"attnviz": 1, "title": {"en": "x", "zh": "x"}, "colour": 1, "tokens": ["a"], "X": [[1]],\n "W_q": [[1]], "W_k": [[1]], "W_v": [[1]]}\n' >"$tmp/warn.json"
run --check "$tmp/warn.json" "$tmp/nozh.json"
expect "--check: every warning has warning: after the file name" \
	'[ "$rc" -eq 0 ] && [ -s "$err" ] && ! grep -v "^[^:]*: warning: " "$err" | grep -q .'

# --new NAME: a starter lesson that passes --check --strict, never written over a file
run --new "$tmp/starter"
expect "--new: writes NAME.json and says so" '[ "$rc" -eq 0 ] && [ -s "$tmp/starter.json" ] && has "$out" "wrote $tmp/starter.json"'
run --check --strict "$tmp/starter.json"
expect "--new: the starter passes --check --strict" '[ "$rc" -eq 0 ] && has "$out" ": ok, "'
echo '{"mine": 1}' >"$tmp/mine.json"
run --new "$tmp/mine.json"
expect "--new: an existing file is not replaced" '[ "$rc" -eq 1 ] && has "$err" "already exists, not replaced" && [ "$(cat "$tmp/mine.json")" = "{\"mine\": 1}" ]'

# a syntax error shows the line and a caret
printf '{"attnviz": 1,\n  "title": "x",,\n}\n' >"$tmp/syntax.json"
run --check "$tmp/syntax.json"
if [ "$rc" -eq 1 ] && grep -q "^$tmp/syntax.json:2:[0-9]*: " "$err" && grep -q '^ *\^' "$err"; then
	ok "syntax error: FILE:LINE:COL and a caret"
else
	not_ok "syntax error: FILE:LINE:COL and a caret"
fi

# ------------------------------------------------------------ --dump of a usable lesson
if [ -w /dev/full ]; then
	"$ATTNVIZ" --dump lessons/selfattn.json >/dev/full 2>"$err"
	rc=$?
	check "--dump to a full disk: exit 1" [ "$rc" -eq 1 ]
	check "--dump to a full disk: says so" has "$err" "cannot write the dump"
else
	skip "--dump to a full disk" "no /dev/full"
fi

run --dump lessons/selfattn.json
if [ "$rc" -eq 0 ] && head -c 1 "$out" | grep -q '{' && has "$out" '"weights"' && has "$out" '"row_all_masked"' && empty "$err"; then
	ok "--dump lessons/selfattn.json"
else
	not_ok "--dump lessons/selfattn.json" "exit $rc"
fi
run --bench lessons/selfattn.json --repeat 2
check "--bench prints compute_ms" grep -q '^compute_ms=[0-9.]* min_ms=[0-9.]* max_ms=[0-9.]* peak_rss_kb=[0-9]*$' "$out"
check "--bench prints each stage's time" grep -q '^stage=softmax ms=[0-9.]*$' "$out"
check "--bench prints the overflow check's time" grep -q '^stage=(overflow check) ms=[0-9.]*$' "$out"
check "--bench prints the products' multiply-adds (selfattn.json, n 4, d 3: Q, K, V 3·4·3·3, scores 4·3·4, weighted 4·4·3)" grep -qx 'madds=204' "$out"
run --bench lessons/selfattn.json --edits --repeat 1
check "--bench --edits times each edit, and counts its products' multiply-adds" grep -q '^edit=input ms=[0-9.]* madds=[0-9]*$' "$out"
check "--bench --edits: an edit of W_v remakes V and the weighted sums alone (selfattn.json: 4·3·3 + 4·4·3)" grep -q '^edit=W_v ms=[0-9.]* madds=84$' "$out"
check "--bench --edits: an input cell's edit projects its row alone, the scores in its row and its key's column, then the sums (9·3 + 12 + 9 + 48)" grep -q '^edit=input ms=[0-9.]* madds=96$' "$out"
# two heads of 2 (n 4, d_model 4, no mask): an edit of one cell of W_q reaches one head up to concat
printf '%s\n' '{"attnviz": 2, "X": {"random": "normal", "rows": 4, "cols": 4, "seed": 1}, "heads": 2,' \
	'"W_q": {"random": "normal", "rows": 4, "cols": 4, "seed": 2}, "W_k": {"random": "normal", "rows": 4, "cols": 4, "seed": 3},' \
	'"W_v": {"random": "normal", "rows": 4, "cols": 4, "seed": 4}, "W_o": {"random": "normal", "rows": 4, "cols": 4, "seed": 5}}' >"$tmp/heads2.json"
run --bench "$tmp/heads2.json" --edits --repeat 1
check "--bench --edits: an edit of W_q remakes one head's Q columns, scores and sums (32 + 32 + 32), then the output (64)" grep -q '^edit=W_q ms=[0-9.]* madds=160$' "$out"
check "--bench --edits: an edit of W_v remakes one head's V columns and sums (32 + 32), then the output (64)" grep -q '^edit=W_v ms=[0-9.]* madds=128$' "$out"
check "--bench --edits prints the peak memory" grep -q '^peak_rss_kb_compute=[0-9]* peak_rss_kb_edits=[0-9]*$' "$out"
run --bench lessons/gradient.json --edits --repeat 1
check "--bench --edits with a loss: each edit, then the gradients it left for later" grep -q '^edit=W_q ms=[0-9.]* madds=[0-9]* grads_ms=[0-9.]*$' "$out"
check "--bench --edits with a loss: no edit without its gradients' time" sh -c '! grep -q "^edit=[^ ]* ms=[0-9.]* madds=[0-9]*$" "$1"' sh "$out"

# ------------------------------------------------------------ hostile text in a lesson

# control characters in the title, summary, tokens and narration; printf-style directives
cat >"$tmp/hostile.json" <<'EOF'
{
  "attnviz": 1,
  "title": "Evil \u001b[2J\u001b]0;pwned\u0007 title %s%n%x",
  "summary": "Line one\n\tindented \u001b[31mred\u001b[0m %n%n%n",
  "tokens": ["\u001b[31mtok", "%s%s%s%s", "%n", "c\u009bd"],
  "X": [[1, 0], [0, 1], [1, 1], [0, 0]],
  "W_q": {"identity": 2}, "W_k": {"identity": 2}, "W_v": {"identity": 2},
  "mask": "causal",
  "steps": [
    {"stage": "input", "text": "narration \u001b[5mblink\u001b[0m and %s %n %p literally\n\tsecond paragraph"},
    {"stage": "scores", "quiz": {"question": "q \u001b[1m%n", "choices": ["\u001b[7m%s", "b"], "answer": 0, "hint": "\u001b[8mhint %n"}},
    {"stage": "softmax", "text": "x"}
  ]
}
EOF
run --check "$tmp/hostile.json"
check "hostile lesson loads" [ "$rc" -eq 0 ]
check "--check output has no ESC" no_esc "$out"
run --dump "$tmp/hostile.json"
check "--dump of hostile text has no raw ESC" no_esc "$out"
check "--dump keeps the title (JSON-escaped)" has "$out" 'Evil \u001b[2J'

printf 'next\nhint\nanswer 2\nprev\nshow X\nshow weights\nexplain weights 3 1\nexplain scores 1 0\nexplain masked 0 3\nlessons\nhelp\n' >"$tmp/cmds"
"$ATTNVIZ" --plain "$tmp/hostile.json" <"$tmp/cmds" >"$out" 2>"$err"
rc=$?
check "plain REPL on hostile lesson exits 0" [ "$rc" -eq 0 ]
check "plain output has no ESC byte" no_esc "$out"
check "plain stderr has no ESC byte" [ "$(grep -c "$ESC" "$err")" -eq 0 ]
check "plain output has no BEL byte" hasnt "$out" "$(printf '\007')"
check "plain output has no C1 CSI (U+009B)" hasnt "$out" "$(printf '\302\233')"
check "control characters are shown escaped" has "$out" 'Evil \x1b[2J'
check "title %s%n%x printed literally" has "$out" 'title %s%n%x'
check "narration %s %n %p printed literally" has "$out" 'and %s %n %p literally'
check "token %s%s%s%s printed literally" has "$out" '%s%s%s%s'
check "hint printed literally" has "$out" 'hint %n'
check "narration keeps its newline and tab" grep -q "^$(printf '\t')second paragraph" "$out"
LC_ALL=C "$ATTNVIZ" --plain "$tmp/hostile.json" <"$tmp/cmds" >"$out" 2>"$err"
check "plain output in the C locale has no ESC byte" no_esc "$out"
TERM=xterm-256color "$ATTNVIZ" "$tmp/hostile.json" </dev/null >"$out" 2>"$err"
check "no terminal: automatic plain mode, no ESC byte" no_esc "$out"

# a bad lesson whose error quotes hostile text: still escaped
printf '{"attnviz": 1, "title": "t", "tokens": ["a"], "X": [[1]], "W_q": [[1]], "W_k": [[1]], "W_v": [[1]], "mask": "\\u001b[2J%%n"}\n' >"$tmp/hostile_bad.json"
run --check "$tmp/hostile_bad.json"
if [ "$rc" -eq 1 ] && no_esc "$err" && empty "$out"; then
	ok "error quoting hostile text has no ESC"
else
	not_ok "error quoting hostile text has no ESC" "exit $rc"
fi
# --train needs a lesson with a loss, and says so
"$ATTNVIZ" --dump --train 3 --lr 0.1 lessons/mask.json >"$out" 2>"$err"; rc=$?
expect "--train on a lesson without backward is an error" '[ $rc -eq 1 ] && [ ! -s "$out" ] && has "$err" "--train needs a lesson with \"backward\""'
"$ATTNVIZ" --dump --train 50 --lr 1000 tests/golden/v2/learn_shift.json >"$out" 2>"$err"; rc=$?
expect "--train that diverges is refused with the step" '[ $rc -eq 1 ] && has "$err" "training diverged"'
# issue 27, 1: the loss after the last step is checked too (was exit 0 with "loss": null)
"$ATTNVIZ" --dump --train 13 --lr 1e10 lessons/vanishing.json >"$out" 2>"$err"; rc=$?
expect "--train whose last loss is not finite is refused, naming the step" '[ $rc -eq 1 ] && [ ! -s "$out" ] && has "$err" "after step"'
# issue 27, 11: the fuzz dictionary for command lines is made from the command table, and has every command
sh tests/fuzz/cmddict.sh >"$tmp/cmd.dict" 2>"$err"
expect "tests/fuzz/cmd.dict is what tests/fuzz/cmddict.sh makes from the table (make fuzz-dict)" 'cmp -s "$tmp/cmd.dict" tests/fuzz/cmd.dict'
# ... and the lesson files' dictionary from the format's keys (src/lesson/*.c's *_keys lists)
sh tests/fuzz/lessondict.sh >"$tmp/lesson.dict" 2>"$err"
expect "tests/fuzz/lesson.dict is what tests/fuzz/lessondict.sh makes from the format's keys (make fuzz-dict)" 'cmp -s "$tmp/lesson.dict" tests/fuzz/lesson.dict'
expect "tests/fuzz/lesson.dict has the newest keys (model, sinks, scaling, then)" 'grep -qF "\"\\\"model\\\"\"" tests/fuzz/lesson.dict && grep -qF sinks tests/fuzz/lesson.dict && grep -qF scaling tests/fuzz/lesson.dict && grep -qF then tests/fuzz/lesson.dict'
missing=
for c in $(awk '/^const CmdEntry cmd_table\[\] = \{/{p=1} p&&/^\};/{p=0} p' src/cmd/cmd.c | grep -o '\.name = "[^"]*"' | cut -d'"' -f2); do
	grep -q -e "^\"$c[ \"]" tests/fuzz/cmd.dict || missing="$missing $c"
done
expect "tests/fuzz/cmd.dict has every command of the table (missing:$missing)" '[ -z "$missing" ]'
finish
