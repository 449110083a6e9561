#!/bin/sh
# tests/t_record.sh — a record that is kept and a screen that says what it
# should (issue 25 §2, §4), in the full-screen view (tmux, 80×24):
#   - the issue's steps: mask, :goto softmax, :answer 1, q; mask again, n, q:
#     --progress still shows the score earned (a later attempt adds to it);
#   - n at an open question asks once ("n again to skip it"), then skips it;
#     "finished!" never shows while a question is open.
# Run from the repository root; $ATTNVIZ is the binary.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/tmux.sh"
cd "$SRCDIR" || bail "no source folder"
P=$tmp/rec-state

s=rec1
start "$s" 80 24 C.UTF-8 "XDG_STATE_HOME=$P" mask
wait_for "$s" 'step 1/' >/dev/null
cmd "$s" "goto softmax"
cmd "$s" "answer 1"
shows "record: the question is answered right" "$s" 'Right: weights\[0\]\[0\]'
quits "$s" record1

s=rec2
start "$s" 80 24 C.UTF-8 "XDG_STATE_HOME=$P" mask
wait_for "$s" 'step 1/' >/dev/null
keys "$s" n
shows "record: n moves on a step without a question" "$s" 'step 2/'
quits "$s" record2
XDG_STATE_HOME=$P "$ATTNVIZ" --progress >"$tmp/progress.out" 2>"$err"
expect "record: reopening mask keeps its quiz score (--progress)" 'grep -q "mask .*step 2/12  quiz 1/1" "$tmp/progress.out"'

# n at an open question: asked once, then skipped; the last step with questions open is not "finished!"
s=rec3
start "$s" 80 24 C.UTF-8 "XDG_STATE_HOME=$P" mask
wait_for "$s" 'step 1/' >/dev/null
cmd "$s" "step 5"
keys "$s" n
shows "record: n at an open question asks once" "$s" 'n again to skip it'
shows "record: ... and stays on the step" "$s" 'step 5/12'
keys "$s" n
shows "record: n again skips it and moves on" "$s" 'Skipped: the answer is'
shows "record: ... to the next step" "$s" 'step 6/12'
cmd "$s" "step 12"
shows "record: the last step with questions open says so" "$s" 'questions still open: 4'
expect "record: ... and not finished!" '! cap "$s" | grep -q "finished!"'
quits "$s" record3
XDG_STATE_HOME=$P "$ATTNVIZ" --progress >"$tmp/progress.out" 2>"$err"
expect "record: the skipped question counts, the right one stays" 'grep -q "mask .*quiz 1/2" "$tmp/progress.out"'
expect "record: mask is not finished with questions open" '! grep -Eq "^[✓+] +8\. mask" "$tmp/progress.out"'

finish
