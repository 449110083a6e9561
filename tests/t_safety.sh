#!/bin/sh
# t_safety.sh: hostile lessons, command lines, scripts and signals (issue 15).
# Each check reproduces a defect that was found: an edit that corrupted the
# heap, a message written past its buffer, scripts that source each other
# without end, exports that carried formulas and control characters, a
# terminal left raw by Ctrl-\. Run under ASan (make test SAN=1) the memory
# checks also catch the overflow itself.
# Run from the repository root; $ATTNVIZ is the binary. Prints "ok - NAME" /
# "not ok - NAME" lines and ends with "N passed, N failed, N skipped"
# (tests/lib.sh). The full-screen checks come last (tests/tmux.sh).
. "$(dirname "$0")/lib.sh"

out=$tmp/out
export LC_ALL=C.UTF-8

# repl INPUT [ARGS...]: the plain REPL on INPUT (printf format); output in $out/$err, status in $rc
repl() {
	input=$1
	shift
	# shellcheck disable=SC2059 # the input is a printf format on purpose (\n)
	printf "$input" >"$tmp/in"
	TERM=dumb $limit "$ATTNVIZ" --plain "$@" <"$tmp/in" >"$out" 2>"$err"
	rc=$?
}
# unbounded work shows as a time-out (exit 124), not as a test that never ends
limit=
if command -v timeout >/dev/null 2>&1; then limit="timeout 60"; fi
# survived NAME TEXT: exit 0 (no crash, no sanitizer report) and TEXT in an error line
survived() {
	if [ "$rc" -eq 0 ] && has "$err" "$2" && hasnt "$err" "Sanitizer" && hasnt "$err" "runtime error"; then
		ok "$1"
	else
		not_ok "$1" "exit $rc, want an error containing: $2"
	fi
}

# ------------------------------------------------------------ 1. an edit is checked before it is computed

repl "mask causal\nsave $tmp/cross-saved.json\nquit\n" lessons/cross.json
survived "mask causal on cross-attention is refused with the loader's message" 'needs a square score matrix'
check "the refused edit changed nothing: the saved lesson has no mask" \
	sh -c "grep -q '\"W_q\"' '$tmp/cross-saved.json' && ! grep -q '\"causal\"' '$tmp/cross-saved.json'"
repl 'heads 4\nmask causal\nheads 2\nmask none\nquit\n' lessons/cross.json
survived "edits after a refused one still work" 'square'

# ------------------------------------------------------------ 2. composed messages grow

long=$(printf '%03000d' 0 | tr 0 L)
sed "s/raw a·a (W_q = W_k = identity)/$long/" lessons/dot.json >"$tmp/longlabel.json"
repl 'compare on\nstats weights\nquit\n' "$tmp/longlabel.json"
check "stats weights with a 3000-character compare label: the whole label and the row sums" \
	sh -c "[ $rc -eq 0 ] && grep -q 'compare ($long): mean' '$out' && grep -q 'row sums' '$out'"

# ------------------------------------------------------------ 9. scripts run a bounded number of lines

# A 5-line script that sources itself five times: 390625 runs before; refused at once now.
i=0
: >"$tmp/self.txt"
while [ $i -lt 5 ]; do echo "source $tmp/self.txt" >>"$tmp/self.txt"; i=$((i + 1)); done
repl "source $tmp/self.txt\nquit\n"
check "a script that sources itself is refused as already running" \
	sh -c "[ $rc -eq 0 ] && [ \$(grep -c 'is already running' '$err') -eq 5 ]"
# Two scripts that source each other.
echo "source $tmp/pong.txt" >"$tmp/ping.txt"
echo "source $tmp/ping.txt" >"$tmp/pong.txt"
repl "source $tmp/ping.txt\nquit\n"
check "scripts that source each other are refused" sh -c "[ $rc -eq 0 ] && grep -q 'ping.txt is already running' '$err'"
# Six distinct scripts, each running the next ten times: 10^6 lines, stopped at DEMO_MAX_LINES (10000).
i=0
while [ $i -lt 6 ]; do
	: >"$tmp/chain$i.txt"
	k=0
	while [ $k -lt 10 ]; do
		if [ $i -lt 5 ]; then echo "source $tmp/chain$((i + 1)).txt" >>"$tmp/chain$i.txt"; else echo "wait 0" >>"$tmp/chain$i.txt"; fi
		k=$((k + 1))
	done
	i=$((i + 1))
done
start=$(date +%s)
repl "source $tmp/chain0.txt\nsource $tmp/chain5.txt\nquit\n"
end=$(date +%s)
check "scripts that fan out stop after 10000 lines in all, said once" \
	sh -c "[ $rc -eq 0 ] && [ \$(grep -c 'stopped after 10000 lines (DEMO_MAX_LINES)' '$err') -eq 1 ] && [ $((end - start)) -lt 30 ]"
check "the next source counts from zero again" sh -c "[ \$(grep -c '^error' '$err') -eq 1 ]"
# A script of more than 10000 lines is refused as it is read.
awk 'BEGIN { for (i = 0; i < 10001; i++) print "wait 0" }' >"$tmp/long.txt"
repl "source $tmp/long.txt\nquit\n"
check "a script of 10001 lines is refused by name" sh -c "[ $rc -eq 0 ] && grep -q 'long.txt:10001: more than 10000 lines' '$err'"

# ------------------------------------------------------------ 10. memory and time within the limits

# 800 bytes that asked for 2.6 GB: four 4096 × 4096 weights (2^26 numbers), 2048 tokens, and a compare
# variant of the same: each alone is under the limit (2^28), the two together over it.
cat >"$tmp/weights.json" <<'EOF'
{"attnviz": 1, "X": {"random": "normal", "rows": 2048, "cols": 4096, "seed": 1},
 "W_q": {"identity": 4096}, "W_k": {"identity": 4096}, "W_v": {"identity": 4096}, "W_o": {"identity": 4096},
 "compare": {"label": "no scale", "scale": false}}
EOF
$limit "$ATTNVIZ" --check "$tmp/weights.json" >"$out" 2>"$err"
rc=$?
check "weights and the compare variant count against LESSON_MAX_NUMBERS, before anything is allocated" \
	sh -c "[ $rc -eq 1 ] && grep -q 'weights.json: compare: too large: its matrices and stages, with the lesson.s own, would hold [0-9]* numbers, over the limit of 268435456 (LESSON_MAX_NUMBERS)' '$err'"
cat >"$tmp/additive.json" <<'EOF'
{"attnviz": 1, "score": "additive", "X": {"random": "normal", "rows": 4096, "cols": 8, "seed": 1},
 "W_q": {"random": "normal", "rows": 8, "cols": 1024, "seed": 2}, "W_k": {"random": "normal", "rows": 8, "cols": 1024, "seed": 3},
 "W_v": {"random": "normal", "rows": 8, "cols": 8, "seed": 4}, "w_e": {"random": "normal", "rows": 1, "cols": 1024, "seed": 5}}
EOF
$limit "$ATTNVIZ" --check "$tmp/additive.json" >"$out" 2>"$err"
rc=$?
check "additive scores are bounded like the dot product's: n·m·h·d_k over LESSON_MAX_ADDITIVE_TERMS is refused" \
	sh -c "[ $rc -eq 1 ] && grep -q 'additive.json: score: additive scores of n = 4096 queries, m = 4096 keys and h·d_k = 1024 would take 17179869184 tanh terms, over the limit of 67108864 (LESSON_MAX_ADDITIVE_TERMS)' '$err'"

# ------------------------------------------------------------ 14. exports carry no formulas and no raw controls

cat >"$tmp/hostile.json" <<'EOF'
{"attnviz": 1, "title": "T\u007fI\u0085T\u009bL\u202eE",
 "tokens": ["=cmd|' /C calc'!A0", "+1", "-x", "@SUM(A1)", "plain"],
 "X": [[1, -0.5], [0, 1], [1, 1], [2, 0], [0, 2]], "W_q": [[1, 0], [0, 1]], "W_k": [[1, 0], [0, 1]], "W_v": [[1, 0], [0, 1]],
 "steps": [{"stage": "input", "text": "N\u202eR\u0085A"}]}
EOF
"$ATTNVIZ" --export csv --stage input "$tmp/hostile.json" -o "$tmp/h.csv" 2>"$err"
check "csv: a label starting with = + - @ gets a leading ' (it stays text in a spreadsheet)" \
	sh -c "grep -q \"^'=cmd|' /C calc'!A0,\" '$tmp/h.csv' && grep -q \"^'+1,\" '$tmp/h.csv' && grep -q \"^'-x,\" '$tmp/h.csv' && grep -q \"^'@SUM(A1),\" '$tmp/h.csv'"
check "csv: numbers and plain labels are as they were" sh -c "grep -q '^plain,' '$tmp/h.csv' && grep -q ',-0.5' '$tmp/h.csv'"
# escaped FILE: written, no DEL, U+0085, U+009B or U+202E as raw bytes, and their escapes there instead
escaped() {
	[ -s "$1" ] &&
		! LC_ALL=C grep -q -e "$(printf '\177')" -e "$(printf '\302\205')" -e "$(printf '\302\233')" -e "$(printf '\342\200\256')" "$1" &&
		grep -q 'x85' "$1" && grep -q 'u202e' "$1"
}
for fmt in md svg tex; do
	"$ATTNVIZ" --export $fmt --stage input "$tmp/hostile.json" -o "$tmp/h.$fmt" 2>"$err"
	check "$fmt: DEL, U+0085, U+009B and U+202E in the title and narration are escaped as the TUI shows them" \
		escaped "$tmp/h.$fmt"
done
repl "save $tmp/saved.json\nquit\n" "$tmp/hostile.json"
saved_escaped() {
	! LC_ALL=C grep -q -e "$(printf '\177')" -e "$(printf '\302\205')" -e "$(printf '\342\200\256')" "$1" &&
		grep -q 'u202e' "$1" && grep -q 'u0085' "$1" && grep -q 'u007f' "$1"
}
check "saved JSON: the same characters as \\u escapes" saved_escaped "$tmp/saved.json"
repl "save $tmp/saved2.json\nquit\n" "$tmp/saved.json"
check "saved JSON reads back as the same lesson" cmp -s "$tmp/saved.json" "$tmp/saved2.json"

# ------------------------------------------------------------ 15. a key given twice

printf '{"attnviz": 1, "X": [[1]], "tokens": ["a"], "X": [[2]], "W_q": [[1]], "W_k": [[1]], "W_v": [[1]],\n "mask": {"padding": [1], "padding": [0]}}\n' >"$tmp/dup.json"
"$ATTNVIZ" --check "$tmp/dup.json" >"$out" 2>"$err"
rc=$?
check "--check: a duplicate key is a warning naming the key and where" \
	sh -c "[ $rc -eq 0 ] && grep -q 'dup.json: warning: duplicate key \"X\": the first one is used' '$err' && grep -q 'warning: mask: duplicate key \"padding\"' '$err' && grep -q 'ok, n=1' '$out'"
"$ATTNVIZ" --check --strict "$tmp/dup.json" >"$out" 2>"$err"
rc=$?
check "--check --strict: duplicate keys are an error" sh -c "[ $rc -eq 1 ] && grep -q 'dup.json: 2 duplicate keys (--strict)' '$err' && ! grep -q ok '$out'"
# issue 27 §2: a stack's budget is counted from every layer's shapes before any layer is made: 560 bytes
# asking for 5 layers of 4096-wide weights and a SwiGLU FFN (5.5 GB, 21 s before), 16 additive layers each
# under LESSON_MAX_ADDITIVE_TERMS, together over it. Refused at once (the 5 s time-out is generous).
bounded() { # NAME FILE TEXT
	timeout 5 "$ATTNVIZ" --check "$2" >"$out" 2>"$err"
	rc=$?
	if [ "$rc" -eq 1 ] && has "$err" "$3"; then ok "$1"; else not_ok "$1" "exit $rc, want 1 and: $3"; fi
}
bounded "a stack over LESSON_MAX_NUMBERS is refused at layers before a layer is made" tests/bad/v2_layers_budget.json \
	'v2_layers_budget.json: layers: too large: its 5 layers would hold 587694135 numbers, over the limit of 268435456 (LESSON_MAX_NUMBERS)'
bounded "a stack's additive terms count together against LESSON_MAX_ADDITIVE_TERMS" tests/bad/v2_layers_additive.json \
	'v2_layers_additive.json: layers: too slow: the additive scores of its 16 layers would take 268435456 tanh terms, over the limit of 67108864 (LESSON_MAX_ADDITIVE_TERMS)'
bounded "an encoder-decoder's links count together, with the encoder, before any link is made" tests/bad/v2_encdec_budget.json \
	'v2_encdec_budget.json: layers: too large: its 4 layers would hold 405025791 numbers, over the limit of 268435456 (LESSON_MAX_NUMBERS)'
printf 'load tests/bad/v2_layers_budget.json\nquit\n' | TERM=dumb timeout 5 "$ATTNVIZ" --plain lessons/mask.json >"$out" 2>&1
rc=$?
check ":load of the stack over the budget: refused at once with the limit, the session kept" \
	sh -c "[ $rc -eq 0 ] && grep -q 'layers: too large.*(LESSON_MAX_NUMBERS)' '$out'"
# §3: a layer object is read for a layer's keys alone: a nested "layers" is warned about and never read
# (it recursed, leaked and gave errors at the wrong path), the stack's input in a layer is refused there
cat >"$tmp/nested.json" <<'EOF'
{"attnviz": 2, "tokens": ["a", "b"], "X": [[1, 0], [0, 1]], "W_q": {"identity": 2}, "W_k": {"identity": 2}, "W_v": {"identity": 2},
 "layers": [{}, {"layers": [{}, {"heads": "two", "W_q": {"random": "normal", "rows": 4096, "cols": 4096, "seed": 1}}]}]}
EOF
timeout 5 "$ATTNVIZ" --check "$tmp/nested.json" >"$out" 2>"$err"
rc=$?
check "a layers list inside a layer: warned as unknown, not read" \
	sh -c "[ $rc -eq 0 ] && grep -q 'nested.json: warning: layers\[1\]: unknown key \"layers\"' '$err' && ! grep -q heads '$err'"
bounded "X inside a layer is refused at layers[i].X" tests/bad/v2_layer_x.json \
	"v2_layer_x.json: layers[1].X: a layer reads the previous layer's output: give the stack's input"
# §4: widths that do not chain are found at load, at the JSON path (they failed at compute time, with no path)
bounded "a layer's output narrower than the next layer's input: refused at layers[0].W_o" tests/bad/v2_layer_width.json \
	"v2_layer_width.json: layers[0].W_o: layer 0's output has 2 columns, but layer 1 reads rows of d_model = 3 numbers"
bounded "an encoder's output narrower than the cross-attention's rows: refused at encoder.W_o" tests/bad/v2_encdec_width.json \
	"v2_encdec_width.json: encoder.W_o: the encoder's output has 2 columns, but the decoder's cross-attention reads rows of the encoder's d_model = 3 numbers"

# §11: "flash" with both tiles 0 is refused (it read as no tiles), the window's limit is named
bounded "flash block_q 0 and block_k 0: refused, not read as no tiles" tests/bad/v2_flash_zero.json \
	'v2_flash_zero.json: flash.block_q: expected a whole number from 1 to n (the query rows), got 0 ("flash": false turns the tiles off)'
bounded "a window over 4096 names LESSON_MAX_TOKENS" tests/bad/v2_window_limit.json \
	'v2_window_limit.json: mask.window: expected a whole number from 1 to 4096 (LESSON_MAX_TOKENS), got 4097'

# §5: long work can be stopped: Ctrl-C (SIGINT) during `train` in the plain REPL stops it between steps,
# back at the prompt with the lesson as before the command (it used to end attnviz, or run for hours)
cat >"$tmp/slow.json" <<'EOF'
{"attnviz":2,"X":{"random":"normal","rows":256,"cols":128,"seed":1},"W_q":{"random":"normal","rows":128,"cols":128,"seed":2},
 "W_k":{"random":"normal","rows":128,"cols":128,"seed":3},"W_v":{"random":"normal","rows":128,"cols":128,"seed":4},
 "W_o":{"random":"normal","rows":128,"cols":128,"seed":5},"block":{"norm":"pre","ffn":{"W_1":{"random":"normal","rows":128,"cols":512,"seed":6},
 "W_2":{"random":"normal","rows":512,"cols":128,"seed":7}}},"layers":[{},{},{},{}],"backward":{"target":{"random":"normal","rows":256,"cols":128,"seed":9}}}
EOF
printf 'show W_q\nquit\n' | TERM=dumb "$ATTNVIZ" --plain "$tmp/slow.json" >"$tmp/before.txt" 2>&1
printf 'train 10000 1e-12\nshow W_q\nquit\n' >"$tmp/in"
# (the signal goes once the lesson is loaded and shown, and training has had a moment: on a busy machine
# loading alone can take seconds, and a Ctrl-C then ends attnviz, as it should)
# (env --default-signal: a background job of a script starts with SIGINT ignored, and attnviz keeps a signal
# it was told to ignore)
TERM=dumb env --default-signal=INT "$ATTNVIZ" --plain "$tmp/slow.json" <"$tmp/in" >"$out" 2>"$err" &
pid=$!
i=0
while [ $i -lt 600 ] && ! grep -q 'step 1/' "$out" 2>/dev/null; do sleep 0.1; i=$((i + 1)); done # 60 s at most
sleep 1
t0=$(date +%s)
kill -INT $pid
wait $pid
rc=$?
t1=$(date +%s)
check "Ctrl-C stops train between steps: back at the prompt at once, the lesson as before" \
	sh -c "[ $rc -eq 0 ] && [ $((t1 - t0)) -le 3 ] && grep -q 'stopped (Ctrl-C) before step [0-9]* of 10000' '$err' && cmp -s '$out' '$tmp/before.txt'"

# … and in a --render: Ctrl-C stops the training a demo line runs, ends the render with 130, writes nothing
printf 'train 10000 1e-12\n' >"$tmp/train-demo.txt"
# (6 s: the training runs for minutes, and loading may take seconds on a busy machine)
TERM=dumb timeout --preserve-status -s INT 6 "$ATTNVIZ" --render "$tmp/train-demo.txt" -o "$tmp/train.svg" "$tmp/slow.json" >"$out" 2>"$err"
rc=$?
check "Ctrl-C during a --render's training: stopped at once, status 130, no file" \
	sh -c "[ $rc -eq 130 ] && [ ! -e '$tmp/train.svg' ] && grep -q 'stopped (Ctrl-C) before step' '$err'"

# §10: --dump counts what it will write before writing: the decode section's rows carry their K and V
# caches (n²/2 rows), past DUMP_MAX_NUMBERS at n = 1024 (such a dump grew to 24 GB); refused, nothing written
cat >"$tmp/decode.json" <<'EOF'
{"attnviz": 2, "X": {"random": "normal", "rows": 1024, "cols": 384, "seed": 1}, "W_q": {"random": "normal", "rows": 384, "cols": 384, "seed": 2},
 "W_k": {"random": "normal", "rows": 384, "cols": 384, "seed": 3}, "W_v": {"random": "normal", "rows": 384, "cols": 384, "seed": 4},
 "mask": "causal", "mask_fill": "-inf", "decode": true}
EOF
timeout 30 "$ATTNVIZ" --dump "$tmp/decode.json" >"$out" 2>"$err"
rc=$?
check "--dump over DUMP_MAX_NUMBERS is refused before writing, the limit named" \
	sh -c "[ $rc -eq 1 ] && [ ! -s '$out' ] && grep -q 'decode.json: the dump would write about [0-9]* numbers, over the limit of 268435456 (DUMP_MAX_NUMBERS)' '$err'"

"$ATTNVIZ" --check --strict lessons/mask.json >"$out" 2>"$err"
check "--check --strict: a shipped lesson has none" [ $? -eq 0 ]

# ------------------------------------------------------------ 17. leaks (LeakSanitizer in make test SAN=1 exits 23)

repl 'heads 2\nquit\n' lessons/matrix.json
check "heads 2 on matrix.json: the questions it turns off are freed" \
	sh -c "[ $rc -eq 0 ] && ! grep -q LeakSanitizer '$err'"
mkdir "$tmp/empty"
repl 'load selfattn\nquit\n'
ATTNVIZ_LESSONS=$tmp/empty TERM=dumb "$ATTNVIZ" --plain <"$tmp/in" >"$out" 2>"$err"
rc=$?
check "a lesson found in a later search directory: no leak" \
	sh -c "[ $rc -eq 0 ] && grep -q 'loaded lessons/selfattn.json' '$out' && ! grep -q LeakSanitizer '$err'"

# ------------------------------------------------------------ 12, 1 and 16 in the full-screen view (tests/tmux.sh)

if ! command -v tmux >/dev/null 2>&1; then
	skip "signals, a refused edit and tabs in the full-screen view" "tmux not installed"
	finish
fi
. "$(dirname "$0")/tmux.sh"

# 12. Signals put the terminal back: attnviz in a session, its shell then prints "EXITED rc TTY-RESTORED|TTY-CHANGED".
start quit 100 30 C.UTF-8 "" lessons/selfattn.json
if wait_for quit 'step 1/' 10; then
	keys quit -H 1c
	shows "Ctrl-\\ (SIGQUIT) leaves with 131 and the terminal's modes back" quit 'EXITED 131 TTY-RESTORED' 10
	check "Ctrl-\\ leaves the alternate screen" [ "$(tm display-message -p -t quit '#{alternate_on}')" = 0 ]
else
	screen_not_ok "the full-screen view starts"
fi
start abrt 100 30 C.UTF-8 "" lessons/selfattn.json
if wait_for abrt 'step 1/' 10; then
	kill -ABRT "$(attnviz_pid abrt)"
	shows "SIGABRT (heap corruption, a failed assert) still puts the terminal's modes back" \
		abrt 'EXITED 134 TTY-RESTORED' 10
	check "SIGABRT leaves the alternate screen" [ "$(tm display-message -p -t abrt '#{alternate_on}')" = 0 ]
else
	screen_not_ok "the full-screen view starts"
fi

# 5. Long work stops: Ctrl-C during :train stops it and the view stays; SIGTERM during it leaves, terminal restored.
start train 100 30 C.UTF-8 "" "$tmp/slow.json"
if wait_for train 'step 1/' 10; then
	cmd train 'train 10000 1e-12'
	keys train C-c
	shows "full screen: Ctrl-C stops :train between steps, the view stays" train 'stopped \(Ctrl-C\) before step' 10
	cmd train 'train 10000 1e-12'
	kill -TERM "$(attnviz_pid train)"
	shows "full screen: SIGTERM during :train leaves with 143 and the terminal's modes back" train 'EXITED 143 TTY-RESTORED' 10
else
	screen_not_ok "the full-screen view starts"
fi

# 1. The same edit in the full-screen view: it aborted, leaving the terminal raw.
start cross 100 30 C.UTF-8 "" lessons/cross.json
if wait_for cross 'step 1/' 10; then
	cmd cross 'mask causal'
	shows "full screen: :mask causal on cross-attention shows the loader's message" cross 'needs a square' 10
	keys cross q
	shows "full screen: after the refused edit, q leaves cleanly" cross 'EXITED 0 TTY-RESTORED' 10
else
	screen_not_ok "the full-screen view starts"
fi

# 16. A tab in narration and in a question is expanded, not shown as \x09.
printf '%s\n' '{"attnviz": 1, "title": "Tabs", "tokens": ["a"], "X": [[1]], "W_q": [[1]], "W_k": [[1]], "W_v": [[1]],' \
	' "steps": [{"stage": "input", "text": "col\tA\tB",' \
	'  "quiz": {"question": "x\ty?", "choices": ["p\tq", "r"], "answer": 0}}]}' >"$tmp/tabs.json"
start tabs 100 30 C.UTF-8 "" "$tmp/tabs.json"
shows "a tab in narration is expanded to the next multiple of 4 columns" tabs 'col A   B' 10
snap tabs
check "a tab in a question and its choices too" sh -c "grep -q 'x   y?' '$tmp/screen' && grep -q '1) p   q' '$tmp/screen'"
check "no tab is shown as \\x09" hasnt "$tmp/screen" 'x09'

finish
