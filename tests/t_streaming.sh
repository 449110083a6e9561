#!/bin/sh
# t_streaming.sh: StreamingLLM's cache (issue 23 §4) — the explanations of
# its decode stage with the lesson's numbers (the kept rows in two runs, the
# plain window beside them), the walk of lessons/streaming.json in the plain
# REPL (en and zh), and the lesson at 80×24: each question hides what would
# answer it. The numbers themselves are PyTorch's (t_golden.sh: streaming/).
# Run from the repository root; $ATTNVIZ is the binary.
. "$(dirname "$0")/lib.sh"
SRCDIR=${ATTNVIZ_SRCDIR:-$(pwd)}
cd "$SRCDIR" || bail "no source folder"
export LC_ALL=C
lesson=lessons/streaming.json
out=$tmp/out

explains "dec_weights: a softmax over the sink and the recent window" $lesson \
	'goto decode\nexplain dec_weights 6 0\n' \
	'softmax over the 4 cached keys 0 + 4..6 of the scaled, masked scores: the first tokens stay while the ones between were evicted' \
	"the full computation's weights[6][0] = 0.678426"
explains "dec_weighted: the kept rows' terms, in order" $lesson \
	'goto decode\nexplain dec_weighted 6 1\n' '= sum_j w_j * cached v_j[1], j = 0 + 4..6' \
	'= 0.800067*0 + 0.0668258*0.1 + 0.0552332*1 + 0.0778736*0.2'
explains "win_weights: the plain window of the same size, and the cache's weight beside it" $lesson \
	'goto decode\nexplain win_weights 6 6\nexplain win_weights 6 3\nexplain win_weights 6 0\n' \
	"softmax over the plain window's 4 keys 3..6, the same number of rows with the first tokens evicted" \
	'with the first 1 tokens kept instead, dec_weights[6][6] = 0.0778736' \
	'the cache that keeps the first 1 tokens has evicted key 3 instead' \
	"key 0 is not in step 6's plain window of 4 rows: it was evicted"
explains "win_output beside dec_output and the full output" $lesson \
	'goto decode\nexplain win_output 6 1\n' \
	"step 6's output over the plain window of keys 3..6 (the first tokens evicted); with them kept (dec_output) 0.0774905, the full computation's output 0.148706"
explains "cache_K: how long a row stays" $lesson 'goto decode\nexplain cache_K 0 0\n' \
	'it stays in the cache for the steps after it while it is one of the first tokens or inside the recent window'

# the walk: 4 rows at most, each question hiding its panes until answered
printf 'step 4\nanswer 2\nstep 5\nanswer 0.303\n' | "$ATTNVIZ" --plain --lang en $lesson >"$out" 2>"$err"
expect "walk: step 4 holds 4 rows, its question hides the cache and both weights" \
	'has "$out" "step 4/7, stage: decode, token 4 (on), cache 4 rows" && has "$out" "cache_K: hidden until you answer" && has "$out" "win_weights: hidden until you answer" && has "$out" "Right: 2) the (token 1)"'
expect "walk: step 4's caption names no kept row while its question is open, then the kept and evicted rows" \
	'has "$out" "Token 4 (on) makes its q, k and v; k and v join the cache." && has "$out" "which keeps rows 0, 2-4 (the first 1 and the last 3) and has evicted row 1." && hasnt "$out" "the window of 4 has dropped"'
expect "walk: the plain window's weight is asked before it is shown" \
	'has "$out" "win_weights: hidden until you answer (answer VALUE" && has "$out" "Right: win_weights[6][6] is 0.302877"'
printf 'step 7\n' | LC_ALL=C.UTF-8 "$ATTNVIZ" --plain --lang zh $lesson >"$out" 2>"$err"
expect "walk zh: the last step names the next lesson" 'has "$out" "第 7/7 步，阶段：decode，词元 8（slept），缓存 4 行" && has "$out" "下一课：localglobal.json"'
# localglobal.json's cache question (layer 0's rows at step 5) is asked at token 0: nothing says 2 rows before it is answered
printf 'step 6\nanswer 1\n' | "$ATTNVIZ" --plain --lang en lessons/localglobal.json >"$out" 2>"$err"
expect "localglobal: the cache question is asked before any rolled cache is shown" \
	'has "$out" "step 6/7, layer 0/2, stage: decode, token 0 (the)" && [ "$(sed -n "/step 6\/7/,/^Right/p" "$out" | grep -c "cache 2 rows\|rows 4-5\|dropped")" -eq 0 ] && has "$out" "Right: 1) 2: the and mat"'
printf 'step 6\n' | "$ATTNVIZ" --plain --lang en lessons/sinks.json >"$out" 2>"$err"
expect "sinks.json's last step points here" 'has "$out" "Next: streaming.json"'

# gated attention decoded (issue 23 §6): each step's row gated (its numbers: t_golden.sh, gated_decode/)
explains "dec_output with a gate: the full computation's row" tests/golden/gated_decode/gated_decode_heads.json \
	'goto decode\nexplain dec_output 2 1\n' 'dec_output[2][1] = -0.759932' "step 2's row; the full computation's row 2 holds -0.759932"

# the lesson at 80×24
. "$(dirname "$0")/tmux.sh"
s=stream1
start "$s" 80 24 C.UTF-8 "XDG_STATE_HOME=$tmp/s-state" --lang en $lesson
wait_for "$s" 'step 1/' >/dev/null
cmd "$s" "step 4"
shows "80x24: step 4's question, its panes waiting" "$s" 'Quiz: Which row does StreamingLLM.s cache evict'
snap "$s"
expect "80x24: the cache's panes wait for the answer" 'grep -q "press 1-3 first" "$tmp/screen" && ! grep -q "win_weights  9" "$tmp/screen"'
keys "$s" 2
shows "80x24: answered, the plain window's weights beside the cache's" "$s" 'win_weights  9'
shows "80x24: and the answer's words" "$s" 'Right: 2\) the \(token 1\)'
quits "$s" stream1
finish
