#!/bin/sh
# t_moeback.sh: the backward pass through gated attention and a mixture of
# experts in the plain REPL — the stages back_gate and back_moe are walked and
# show their gradients, and each explanation says the arithmetic with the
# lesson's own numbers (a closed gate, an expert a token did not choose, each
# router's kind), in English and in Chinese. The numbers themselves are
# PyTorch's (t_golden.sh: tests/golden/moeback).
# Run from the repository root; $ATTNVIZ is the binary.
. "$(dirname "$0")/lib.sh"

export LC_ALL=C.UTF-8
d=tests/golden/moeback

expect "the gate's lesson walks back_output, then back_gate" '[ "$(stages_of $d/gate_backward.json | tr " " "\n" | grep back_ | head -n 2 | tr "\n" " ")" = "back_output back_gate " ]'
expect "a mixture's lesson walks back_moe first of the backward stages" '[ "$(stages_of $d/mixtral_backward.json | tr " " "\n" | grep back_ | head -n 1)" = "back_moe" ]'
explains "back_gate: its formula and its panes" $d/gate_backward.json 'goto back_gate\n' \
	'dconcat = dgated ⊙ σ(gate)' 'dgated  5 × 4' 'dgate  5 × 4' 'dW_gate  4 × 4' 'db_gate  1 × 4'
explains "dconcat through the gate: dgated times sigma(gate)" $d/gate_backward.json 'explain dconcat 1 2\n' \
	'dconcat = dgated × σ(gate) = 1.65588 × 0.267796 = 0.443437'
explains "dgate: through the sigmoid's slope" $d/gate_backward.json 'explain dgate 1 2\n' \
	'dgate = dgated × concat × σ(1 − σ) = 1.65588 × -0.500898 × 0.267796 × 0.732204 = -0.162635'
explains "dW_o reads gated, not concat" $d/gate_backward.json 'explain dW_o 1 1\n' 'Σ_i gated[i][1] × doutput[i][1]'
explains "db_gate: dgate's column summed" $d/gate_backward.json 'explain db_gate 0 3\n' 'db_gate[3] = Σ_i dgate[i][3] = 5.73038'
explains "dmoe_weights: expert_out · dffn_out, and 0 where not chosen" $d/mixtral_backward.json \
	'explain dmoe_weights 0 1\nexplain dmoe_weights 0 0\n' '= 2.42598' 'token 0 did not choose expert 0'
explains "drouter_logits of a softmax router: an expert not chosen still moves" $d/mixtral_backward.json \
	'explain drouter_logits 0 0\n' "yet its logit is in the softmax's sum"
explains "drouter_logits of gpt-oss's router: not chosen is 0" $d/gptoss_backward.json \
	'explain drouter_logits 0 1\nexplain drouter_logits 0 0\n' 'its gradient is 0 (the top-k choice has none)' \
	"gpt-oss's w is a softmax over the chosen logits alone"
explains "drouter_logits of DeepSeek's router: the sigmoid's slope" $d/deepseek_backward.json \
	'explain drouter_logits 3 1\n' 'whose slope is s(1 − s)'
explains "an expert's gradient names the tokens that chose it" $d/deepseek_backward.json \
	'explain dexperts_W_2 4 1\n' "expert 1's weight: the sum runs over the tokens that chose it: 3, 4"
printf 'explain dmoe_weights 0 0\nexplain dgate 1 2\n' | "$ATTNVIZ" --plain --lang zh $d/qwen3moe_shared_backward.json >"$tmp/zh.out" 2>"$err"
expect "in Chinese too" 'has "$tmp/zh.out" "没有选专家"'
printf 'goto back_moe\n' | "$ATTNVIZ" --plain --lang zh $d/qwen3moe_shared_backward.json >"$tmp/zh.out" 2>"$err"
expect "back_moe's narration in Chinese" 'has "$tmp/zh.out" "一个专家只从选中它的词那里学习"'
# training: every step's loss is finite, and the gate's and the router's weights move
"$ATTNVIZ" --dump --train 3 --lr 0.001 $d/gptoss_backward.json >"$tmp/t.json" 2>"$err"
rc=$?
expect "--train on gpt-oss's mixture runs" '[ $rc -eq 0 ] && has "$tmp/t.json" "\"train\""'
finish
