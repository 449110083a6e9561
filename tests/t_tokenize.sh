#!/bin/sh
# t_tokenize.sh: `attnviz --tokenize TEXT --model DIR` — one line a token
# (index, id, the token as people read it) with GPT-2's real tokenizer and a
# Llama-style one (tests/weights/tokenizers), control characters escaped,
# never raw; a bad folder, a damaged tokenizer.json and text that is not
# UTF-8 each exit 1 with one clear message; usage errors exit 2.
# Run from the repository root; $ATTNVIZ is the binary. Prints "ok - NAME" /
# "not ok - NAME" lines and ends with "N passed, N failed" (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

out=$tmp/out
toks=tests/weights/tokenizers

# refused NAME WORDS ARGS...: exit 1, nothing on stdout, one line on stderr that says WORDS
refused() {
	r_name=$1
	r_words=$2
	shift 2
	run "$@"
	if [ "$rc" -eq 1 ] && [ ! -s "$out" ] && [ "$(lines "$err")" -eq 1 ] && has "$err" "$r_words" &&
		hasnt "$err" "$ESC"; then
		ok "$r_name"
	else
		not_ok "$r_name" "exit $rc (want 1), stdout $(wc -c <"$out") bytes, stderr $(lines "$err") lines (want 1 saying: $r_words)"
	fi
}

# ------------------------------------------------------------ GPT-2's ids, as tokenizers.js gives them

LC_ALL=C.UTF-8 run --tokenize "Hello world" --model $toks/gpt2
check "gpt2: exits 0" [ "$rc" -eq 0 ]
expect "gpt2: one line a token" '[ "$(lines "$out")" -eq 2 ]'
expect "gpt2: index, id, the token" 'grep -q "^0  15496  Hello\$" "$out" && grep -q "^1    995  ·world\$" "$out"'
check "gpt2: nothing on stderr" [ ! -s "$err" ]

# the model folder may be given without --model, and a tokenizer.json itself
LC_ALL=C.UTF-8 run --tokenize "Hello world" $toks/gpt2/tokenizer.json
expect "a tokenizer.json itself, without --model" '[ "$rc" -eq 0 ] && grep -q "995  ·world" "$out"'

# a terminal that cannot show UTF-8: a space as a space, Chinese as \u{…}
LC_ALL=C run --tokenize "中 cat" --model $toks/gpt2
expect "C locale: ASCII only" '[ "$rc" -eq 0 ] && grep -q " cat\$" "$out" && ! LC_ALL=C grep -q "[^ -~]" "$out"'

# a special token inside the text, and Llama's <s> in front
LC_ALL=C.UTF-8 run --tokenize "a<|endoftext|>b" --model $toks/gpt2
expect "gpt2: <|endoftext|> inside the text is one token" 'grep -q "^1  50256  <|endoftext|>\$" "$out"'
LC_ALL=C.UTF-8 run --tokenize "Hello" --model $toks/sp
expect "llama-style: <s> first" '[ "$rc" -eq 0 ] && grep -q "^0    1  <s>\$" "$out"'

# ------------------------------------------------------------ control characters are shown, never sent

LC_ALL=C.UTF-8 run --tokenize "$(printf 'red\033[31m\ttab\rcr\177del')" --model $toks/gpt2
check "control characters: exits 0" [ "$rc" -eq 0 ]
check "control characters: no raw ESC" hasnt "$out" "$ESC"
expect "control characters: escaped" 'has "$out" "\\x1b" && has "$out" "\\t" && has "$out" "\\r" && has "$out" "\\x7f"'
expect "control characters: no raw control byte at all" '! LC_ALL=C grep -q "[[:cntrl:]]" "$out"'
LC_ALL=C.UTF-8 run --tokenize "$(printf 'a\033[2Jb')" --model $toks/sp
expect "llama-style: an ESC byte token escaped" '[ "$rc" -eq 0 ] && hasnt "$out" "$ESC" && has "$out" "\\x1b"'

# ------------------------------------------------------------ refused, with one clear message

refused "a folder that is not there" "no-such-folder: No such file or directory" --tokenize hi --model "$tmp/no-such-folder"
refused "a folder without tokenizer.json" "no tokenizer.json in this folder" --tokenize hi --model "$tmp"
refused "a damaged tokenizer.json names the file and the JSON path" \
	'merge-unknown.json: model.merges[1]: "a q" names "q", which is not in model.vocab' \
	--tokenize hi --model $toks/bad/merge-unknown.json
refused "an unknown model type" 'model.type: "WordPiece" is not supported' --tokenize hi $toks/bad/wordpiece.json
refused "a file name with control characters is escaped" '\x1b[31m' --tokenize hi --model "$tmp/$(printf '\033[31m')red"
refused "text that is not UTF-8" "not valid UTF-8 (byte 0xe9 at byte 3)" --tokenize "$(printf 'caf\351')" --model $toks/gpt2
mkdir -p "$tmp/model"
printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}' >"$tmp/model/tokenizer.json"
refused "a model folder whose tokenizer.json is damaged" 'tokenizer.json: model.merges[0]: "a b" names "b"' \
	--tokenize hi --model "$tmp/model"

run --tokenize hi
check "--tokenize without a model folder: usage error" [ "$rc" -eq 2 ]
run --tokenize hi --model $toks/gpt2 extra
check "--tokenize with two model folders: usage error" [ "$rc" -eq 2 ]
run --model $toks/gpt2
check "--model without --tokenize: usage error" [ "$rc" -eq 2 ]
run --tokenize
check "--tokenize without TEXT: usage error" [ "$rc" -eq 2 ]

finish
