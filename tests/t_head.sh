#!/bin/sh
# t_head.sh: a model's LM head kept in its file's dtype (issue 21 §3, "Memory":
# the unembedding is not made doubles when the model opens) still reaches
# everything that reads it: `--dump --dump-weights` writes it ("unembed"),
# `explain logits ROW COL` multiplies by its row, `save` writes it into the
# lesson. The numbers: tests/models/head/NAME.json and NAME.explain, read
# from the safetensors files with numpy (tests/models/make_head_ref.py) and
# PyTorch's logits (make_models.py). generate and every logit are t_models.sh's.
. "$(dirname "$0")/lib.sh"

models=tests/models
JSONCMP=$BUILD/tests/jsoncmp

for name in gpt2 gpt2_prefix_f16 llama_gqa_sharded llama_tied_bf16; do
	read -r ids row col logit <"$models/head/$name.explain"
	"$ATTNVIZ" --model "$models/$name" --ids "$ids" --dump --dump-weights >"$tmp/w.json" 2>"$err"
	if "$JSONCMP" --only-expected-keys "$models/head/$name.json" "$tmp/w.json" >"$tmp/cmp" 2>&1; then
		ok "$name: --dump-weights writes the unembedding, the file's numbers"
	else
		not_ok "$name: --dump-weights writes the unembedding, the file's numbers" "$(head -n 5 "$tmp/cmp")"
	fi
	"$ATTNVIZ" --model "$models/$name" --ids "$ids" --dump >"$tmp/d.json" 2>"$err"
	expect "$name: --dump without --dump-weights leaves it out" '! grep -q "\"unembed\"" "$tmp/d.json" && grep -q "\"logits\"" "$tmp/d.json"'
	# the head is after the last layer: layer 1 (each of the four has two)
	printf 'layer 1\ngoto logits\nexplain logits %s %s\n' "$row" "$col" |
		"$ATTNVIZ" --model "$models/$name" --ids "$ids" --plain >"$tmp/e.txt" 2>"$err"
	got=$(sed -n '/^vocabulary entry /,$p' "$tmp/e.txt" | grep '^= [-0-9]' | tail -n 1 | sed 's/^= //')
	expect "$name: explain logits $row $col sums its row of the unembedding to PyTorch's $logit ($got)" \
		'[ -n "$got" ] && awk -v g="$got" -v r="$logit" "BEGIN { d = g - r; if (d < 0) d = -d; a = r < 0 ? -r : r; exit !(d <= 5e-6 * a + 1e-12) }"'
done

# save: the lesson written from a model holds its unembedding as the file's numbers
name=llama_tied_bf16
printf 'save %s\n' "$tmp/saved.json" | "$ATTNVIZ" --model "$models/$name" --ids 0,4,8 --plain >/dev/null 2>"$err"
if [ -f "$tmp/saved.json" ] && "$JSONCMP" --only-expected-keys "$models/head/$name.json" "$tmp/saved.json" >"$tmp/cmp" 2>&1; then
	ok "$name: save writes the unembedding, the file's numbers"
else
	not_ok "$name: save writes the unembedding, the file's numbers" "$(head -n 5 "$tmp/cmp" 2>/dev/null)"
fi
# and a saved GPT-2 read back gives the model's logits (a LLaMA's saved lesson is refused for its empty
# FFN biases, which is save's, not the head's)
rm -f "$tmp/saved.json"
printf 'save %s\n' "$tmp/saved.json" | "$ATTNVIZ" --model "$models/gpt2" --ids 5,17,242 --plain >/dev/null 2>"$err"
"$ATTNVIZ" --dump "$tmp/saved.json" >"$tmp/s.json" 2>"$err"
"$ATTNVIZ" --model "$models/gpt2" --ids 5,17,242 --dump >"$tmp/d.json" 2>>"$err"
logits() { tr -d ' \t\n' <"$1" | sed 's/.*"logits":\(\[\[[-+.0-9eE,]*\]\(,\[[-+.0-9eE,]*\]\)*\]\).*/\1/'; }
expect "gpt2: the saved lesson's logits are the model's" \
	'[ -s "$tmp/s.json" ] && [ "$(logits "$tmp/s.json")" = "$(logits "$tmp/d.json")" ] && logits "$tmp/s.json" | grep -q "^\[\[-*[0-9]"'

finish
