#!/bin/sh
# t_moe2.sh: DeepSeek-V3's mixture of experts (issue 23 §7): the sigmoid
# router, e_score_correction_bias for the choice only, grouped selection,
# routed_scaling_factor and shared experts without a gate. Every matrix of
# each lesson of tests/golden/moe2 equals PyTorch's float64 reference (made by
# tests/golden/make_reference_moe2.py following modeling_deepseek_v3.py) within
# 1e-12, decoded lessons step by step too (unit_moe2 checks those steps equal
# the full computation's rows bit for bit); every loader error of moe2/bad at
# its JSON path; `save` writes the router back; the explanations say the
# arithmetic with the lesson's numbers.
# Run from the repository root; $ATTNVIZ is the binary, $BUILD the build dir.
. "$(dirname "$0")/lib.sh"

export LC_ALL=C
JSONCMP=$BUILD/tests/jsoncmp

for lesson in tests/golden/moe2/*.json; do
	case $lesson in *.ref.json) continue ;; esac
	name=$(basename "$lesson" .json)
	"$ATTNVIZ" --dump "$lesson" >"$tmp/dump" 2>"$err"
	expect "moe2 $name equals PyTorch within 1e-12" \
		'"$JSONCMP" --rtol 0 --atol 1e-12 --only-expected-keys "${lesson%.json}.ref.json" "$tmp/dump" >"$tmp/diff" 2>&1' \
		'"$(cat "$tmp/diff" "$err")"'
	printf 'save %s\nquit\n' "$tmp/saved.json" | "$ATTNVIZ" --plain "$lesson" >/dev/null 2>"$err"
	expect "moe2 $name round-trips through save" '"$ATTNVIZ" --dump "$tmp/saved.json" 2>>"$err" | cmp -s - "$tmp/dump"'
done

# the refusals: each bad lesson's first error as NAME<TAB>PATH<TAB>MESSAGE, all of them against expected.tsv
for bad in tests/golden/moe2/bad/*.json; do
	msg=$("$ATTNVIZ" --check "$bad" 2>&1 >/dev/null | head -n 1)
	msg=${msg#"$bad: "}
	printf '%s\t%s\t%s\n' "$(basename "$bad" .json)" "${msg%%: *}" "$msg"
done >"$tmp/refused.tsv"
expect "moe2/bad: every lesson refused at its JSON path with its message" \
	'grep -v "^#" tests/golden/moe2/bad/expected.tsv | diff - "$tmp/refused.tsv" >"$tmp/diff"' '"$(cat "$tmp/diff")"'
expect "moe2/bad: 12 lessons" '[ "$(wc -l <"$tmp/refused.tsv")" -eq 12 ]'

L=tests/golden/moe2/dsv3_groups.json
explains "router_scores: a sigmoid of the cell alone" $L 'goto router\nexplain router_scores 0 3\n' \
	'sigmoid(-0.115466) = 1 / (1 + exp(0.115466)) = 0.471166'
explains "group_scores: the sum of the group's top 2, dropped" $L 'goto choice\nexplain group_scores 0 1\n' \
	's[3] + s[2] = 0.93497 + 0.434902 = 1.36987' 'number 3 of 4 groups: dropped (topk_group 2)'
explains "scores_for_choice: score + bias, its group dropped" $L 'goto choice\nexplain scores_for_choice 0 2\n' \
	'scores_for_choice[0][2] = not chosen' 's = router_scores + e_score_correction_bias = 0.000367816 + 0.434534 = 0.434902' \
	'dropped (topk_group 2), so token 0 cannot choose it'
explains "moe_weights: the sigmoid score renormalised, times routed_scaling_factor" $L 'goto top_k\nexplain moe_weights 0 0\n' \
	"token 0's top 2 experts: 7 (s = 1.33517), 0 (s = 1.19483)" 'w = 0.971561 / 1.94012 * 2.5 = 1.25194'
explains "ffn_out: the shared expert added without a gate" $L 'goto experts\nexplain ffn_out 0 1\n' \
	'= 1.25194*-0.399453 + 1.24806*0.0801977 + 1.07197' 'without a gate'
printf 'goto choice\nshow router_scores\n' | "$ATTNVIZ" --plain tests/golden/moe2/dsv2_softmax_shared.json >"$tmp/out" 2>"$err"
expect "a softmax lesson has neither the choice stage nor router_scores" \
	'grep -q "stage choice is not part of this lesson" "$err" && grep -q "router_scores" "$err"' '"$(cat "$tmp/out" "$err" | tail -n 4)"'
explains "decoding: each new token routed alone, its row the full computation's" tests/golden/moe2/dsv3_decode.json \
	'goto decode\nexplain dec_layer_out 3 1\n' "step 3's row; the full computation's row 3 holds 1.88857" \
	'its mixture of experts routed token 3 alone, at this step, to experts 0 (w = 0.785504) 1 (w = 1.2145)'
finish
