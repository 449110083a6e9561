#!/bin/sh
# tests/t_i18n.sh — the program's own strings in Chinese through GNU gettext:
# po/zh_CN.po translates every string the sources mark (0 untranslated, 0
# fuzzy, formats checked by msgfmt -c) and the template is current; no
# message a learner reads is left unmarked where it is handed to the screen;
# `lang zh` / `lang en`, --lang zh and a Chinese locale switch the REPL's
# words (not only the narration) under LC_ALL=C.UTF-8, LC_MESSAGES=C and a
# locale this system lacks; in the C locale the words stay English and the
# bytes valid. The full-screen view in Chinese is tested in t_tui.sh.
# Prints "ok - NAME" / "not ok - NAME" and ends with "N passed, N failed, N skipped".
. "$(dirname "$0")/lib.sh"

SRCDIR=${ATTNVIZ_SRCDIR:-$(pwd)}
out=$tmp/out
unset LANGUAGE LC_ALL LC_MESSAGES LC_CTYPE LANG

# ------------------------------------------------------------ the catalogue

if command -v msgfmt >/dev/null 2>&1; then
	msgfmt -c --statistics -o "$tmp/zh.mo" "$SRCDIR/po/zh_CN.po" 2>"$tmp/stats"
	expect "po/zh_CN.po: msgfmt -c accepts every format" '[ $? -eq 0 ]'
	expect "po/zh_CN.po: every message translated" 'grep -Eq "^[0-9]+ translated messages\.$" "$tmp/stats"'
	expect "po/zh_CN.po: nothing untranslated or fuzzy" '! grep -Eq "untranslated|fuzzy" "$tmp/stats"'
	# the built catalogue is the one from po/
	expect "make built build/locale/zh_CN/LC_MESSAGES/attnviz.mo from it" \
		'cmp -s "$tmp/zh.mo" "$BUILD/locale/zh_CN/LC_MESSAGES/attnviz.mo"'
else
	skip "po/zh_CN.po" "msgfmt not installed"
fi

# Every string the sources mark with _() or N_() is in the catalogue: a string
# wrapped after the last `make pot` would otherwise show in English.
if command -v xgettext >/dev/null 2>&1 && command -v msgcmp >/dev/null 2>&1; then
	(cd "$SRCDIR" && xgettext --from-code=UTF-8 --language=C --keyword=_ --keyword=N_ -o "$tmp/now.pot" src/*.c src/*/*.c src/*/*.h src/*/*/*.c src/*/*/*.h)
	msgcmp "$SRCDIR/po/zh_CN.po" "$tmp/now.pot" >"$tmp/msgcmp" 2>&1
	expect "every marked string of src/ is in po/zh_CN.po (make pot)" '[ $? -eq 0 ]'
	[ -s "$tmp/msgcmp" ] && sed -n '1,5s/^/# /p' "$tmp/msgcmp"
	# xgettext finds strings in every file that prints to the learner
	for f in cmd/cmd.c inspect/explain.c main.c tui/pane.c cmd/plain.c app/progress.c app/session.c out/textfmt.c tui/tui.c tui/tuicourse.c tui/tuidemo.c model/catalog.c; do
		expect "xgettext finds strings in src/$f" 'grep -q "^#: .*src/$f:" "$tmp/now.pot"'
	done
else
	skip "the catalogue is current" "xgettext or msgcmp not installed"
fi

# No English sentence handed straight to the screen: a literal with words as
# the text of a status message, a command's answer or a REPL error is marked.
grep -nE '(tui_set_msg\(t, [^,]+, |tui_msgf\(t, [^,]+, |say\(out, MSG_[A-Z]+, [^,]+, |plain_error\(c, |tui_popup\(t, )"[^"]*[A-Za-z]{2,}[ ,:;.!?][^"]*"' \
	"$SRCDIR"/src/*.c "$SRCDIR"/src/*/*.c "$SRCDIR"/src/*/*/*.c >"$tmp/raw" 2>/dev/null
expect "no unmarked sentence reaches tui_set_msg, tui_msgf, say, plain_error or tui_popup" '[ ! -s "$tmp/raw" ]'
[ -s "$tmp/raw" ] && sed -n '1,5s/^/# /p' "$tmp/raw"
# The same for the lesson loader's and theme reader's errors and the command line's usage errors
grep -nE '(\bfail|jr_fail|jr_warnf|\bwarnf)\((c|&c), "[^"]*[A-Za-z]{2,}|usage_error\("[^"]*[A-Za-z]{2,}' \
	"$SRCDIR"/src/*.c "$SRCDIR"/src/*/*.c "$SRCDIR"/src/*/*/*.c >"$tmp/raw" 2>/dev/null
expect "no unmarked sentence reaches fail, jr_fail, jr_warnf, warnf or usage_error" '[ ! -s "$tmp/raw" ]'
[ -s "$tmp/raw" ] && sed -n '1,5s/^/# /p' "$tmp/raw"

# ------------------------------------------------------------ switching

# repl ENV INPUT [ARGS...]: the plain REPL with the environment ENV (VAR=value ...), output in $out and $err
repl() {
	r_env=$1 r_in=$2
	shift 2
	# shellcheck disable=SC2059 # the input is a printf format on purpose (\n)
	printf "$r_in" | env $r_env XDG_STATE_HOME="$tmp/state" "$ATTNVIZ" --plain "$@" >"$out" 2>"$err"
	rc=$?
}

repl "LC_ALL=C.UTF-8" 'lang zh\nfoo\nexplain weights 0 0\nhelp\nn\nlang en\nfoo\nn\n' lessons/mask.json
expect "C.UTF-8, lang zh: a status message in Chinese" 'has "$out" "语言：中文"'
expect "C.UTF-8, lang zh: an error in Chinese" 'has "$err" "错误：没有这个命令：foo（试试 help）"'
expect "C.UTF-8, lang zh: an explanation in Chinese" 'has "$out" "-- 解释 --" && has "$out" "查询 机，键 机"'
expect "C.UTF-8, lang zh: help in Chinese" 'has "$out" "前往下一步"'
expect "C.UTF-8, lang zh: the step header in Chinese" 'has "$out" "== 第 2/12 步，阶段：project"'
expect "C.UTF-8, lang en: English again" 'has "$out" "language: English" && has "$err" "error: unknown command: foo (try help)" && has "$out" "== step 3/12, stage:"'
expect "C.UTF-8, lang en: the narration in English again" 'has "$out" "Queries, keys and values as usual"'

repl "LC_ALL=C.UTF-8" 'answer 0.5\n' --lang zh lessons/mask.json
expect "--lang zh: the lesson's narration and the program's words" 'has "$out" "掩码注意力" && has "$err" "错误：这一步没有待回答的问题"'

# A broken lesson's error in Chinese, with the same file, JSON path and line as in English
bad=tests/bad/focus_row.json syn=tests/bad/syntax_trailing_comma.json
env LC_ALL=C.UTF-8 "$ATTNVIZ" --check "$bad" >"$out" 2>"$err"
expect "--check: the loader's error in English" 'has "$err" "$bad: steps[2].focus.row: 7 is outside the 4 rows of scores"'
env LC_ALL=C.UTF-8 "$ATTNVIZ" --lang zh --check "$bad" >"$out" 2>"$err"
expect "--lang zh --check: the loader's error in Chinese, the file and JSON path kept" \
	'has "$err" "$bad：steps[2].focus.row：7 超出了 scores 的 4 行的范围" && ! has "$err" "outside"'
env LANG=zh_CN.UTF-8 "$ATTNVIZ" --check "$bad" >"$out" 2>"$err"
expect "LANG=zh_CN.UTF-8 --check: a batch tool's errors stay English without --lang" 'has "$err" "is outside the 4 rows of scores"'
env LC_ALL=C.UTF-8 "$ATTNVIZ" --lang zh --check "$syn" lessons/mask.json >"$out" 2>"$err"
expect "--lang zh --check: a syntax error in Chinese at the same line and column, with its caret" \
	'has "$err" "$syn:3:22: 多余的逗号：JSON 不允许在 ] 或 } 前面加逗号" && has "$err" "                     ^"'
expect "--lang zh --check: the summary line in Chinese" 'has "$out" "lessons/mask.json：正常，n=7，d_model=4，heads=2，共 12 步"'
repl "LC_ALL=C.UTF-8" "lang zh\\nload $bad\\nload $syn\\nload tests/bad/utf16.json\\n" lessons/mask.json
expect "plain REPL, lang zh, load: the loader's error in Chinese, the path kept" \
	'has "$err" "错误：$bad：steps[2].focus.row：7 超出了 scores 的 4 行的范围"'
expect "plain REPL, lang zh, load: a syntax error in Chinese at the same line" 'has "$err" "错误：$syn:3:22: 多余的逗号"'
expect "plain REPL, lang zh, load: a UTF-16 file in Chinese" 'has "$err" "文件是 UTF-16 编码；请存为 UTF-8"'
repl "LC_ALL=C.UTF-8" "load $bad\\n" lessons/mask.json
expect "plain REPL, load: the same error in English" 'has "$err" "error: $bad: steps[2].focus.row: 7 is outside the 4 rows of scores"'

# A theme file's error too (the figure's palette of --export, with --lang zh)
env LC_ALL=C.UTF-8 "$ATTNVIZ" --lang zh --export svg --stage softmax --theme tests/bad-themes/attr.json lessons/mask.json -o "$tmp/t.svg" >"$out" 2>"$err"
expect "--lang zh --theme FILE: the theme reader's error in Chinese, the path kept" \
	'has "$err" "attnviz：--theme：tests/bad-themes/attr.json：roles.cursor.attrs[0]：应为 \"bold\"" && has "$err" "（是不是想写“bold”？）"'

# --strict counts the duplicate-key warnings in the language they were written in
printf '{"attnviz": 1, "X": [[1]], "tokens": ["a"], "X": [[2]], "W_q": [[1]], "W_k": [[1]], "W_v": [[1]],\n "mask": {"padding": [1], "padding": [0]}}\n' >"$tmp/dup.json"
env LC_ALL=C.UTF-8 "$ATTNVIZ" --lang zh --check --strict "$tmp/dup.json" >"$out" 2>"$err"
rc=$?
expect "--lang zh --check --strict: duplicate keys warned in Chinese and still an error" \
	'[ $rc -eq 1 ] && has "$err" "dup.json：警告：mask：重复的键 \"padding\"" && has "$err" "dup.json：2 个重复的键（--strict）" && ! has "$out" "正常"'

# --help and the usage errors in the person's language (option names stay English)
env LANG=zh_CN.UTF-8 "$ATTNVIZ" --help >"$out" 2>"$err"
expect "LANG=zh_CN.UTF-8 --help: the help in Chinese" 'has "$out" "用法：attnviz [OPTIONS] [LESSON]" && has "$out" "  --lang en|zh     讲解和程序自身文字的语言" && has "$out" "显示本帮助"'
env LC_ALL=C.UTF-8 "$ATTNVIZ" --lang zh --help >"$out" 2>"$err"
expect "--lang zh --help: the help in Chinese" 'has "$out" "用法：attnviz" && ! has "$out" "usage:"'
env LC_ALL=C.UTF-8 "$ATTNVIZ" --help >"$out" 2>"$err"
expect "--help: English without a Chinese locale or --lang" 'has "$out" "usage: attnviz" && has "$out" "line-oriented REPL"'
env LC_ALL=C.UTF-8 "$ATTNVIZ" --lang zh --export pdf >"$out" 2>"$err"
expect "--lang zh: a usage error in Chinese" 'has "$err" "attnviz：--export：应为 svg、png、csv、md、tex 或 json，得到的是“pdf”" && has "$err" "试试“attnviz --help”。"'

# glibc ignores LANGUAGE while LC_MESSAGES is C: the switch still works
repl "LC_CTYPE=C.UTF-8 LC_MESSAGES=C" 'foo\n' --lang zh lessons/mask.json
expect "LC_MESSAGES=C, --lang zh: Chinese" 'has "$err" "错误：没有这个命令"'
# a Chinese locale this system may lack still starts in Chinese, on UTF-8
repl "LANG=zh_CN.UTF-8" 'foo\n' lessons/mask.json
expect "LANG=zh_CN.UTF-8: starts in Chinese" 'has "$out" "掩码注意力" && has "$err" "错误：没有这个命令"'
repl "LANGUAGE=zh_CN LANG=C.UTF-8" 'foo\n' lessons/mask.json
expect "LANGUAGE=zh_CN: starts in Chinese" 'has "$err" "错误：没有这个命令"'
repl "LANG=C.UTF-8" 'foo\n' lessons/mask.json
expect "no Chinese in the environment: English" 'has "$err" "error: unknown command: foo" && has "$out" "Masked attention"'
repl "LANG=zh_CN.UTF-8" 'foo\n' --lang en lessons/mask.json
expect "--lang en overrides a Chinese locale" 'has "$err" "error: unknown command: foo" && has "$out" "Masked attention"'

env LANG=zh_CN.UTF-8 XDG_STATE_HOME="$tmp/state" "$ATTNVIZ" --progress >"$out" 2>"$err"
expect "LANG=zh_CN.UTF-8 --progress: the report in Chinese" 'has "$out" "课中已学完"'
env LANG=zh_CN.UTF-8 "$ATTNVIZ" --export md --stage softmax lessons/mask.json -o "$tmp/zh.md" 2>"$err"
env LANG=C.UTF-8 "$ATTNVIZ" --export md --stage softmax lessons/mask.json -o "$tmp/en.md" 2>>"$err"
expect "LANG=zh_CN.UTF-8 --export: a tool's output stays English without --lang" 'has "$tmp/zh.md" "Masked attention" && cmp -s "$tmp/zh.md" "$tmp/en.md"'

# The C locale cannot show Chinese: the program's words stay English, and every byte is valid
repl "LANG=C" 'lang zh\nfoo\n' lessons/mask.json
expect "LANG=C, lang zh: the words stay English, and it says so" \
	'has "$out" "the program'"'"'s own words stay English" && has "$err" "error: unknown command: foo"'
if command -v iconv >/dev/null 2>&1; then
	expect "LANG=C, lang zh: valid UTF-8 only" 'cat "$out" "$err" | iconv -f UTF-8 -t UTF-8 >/dev/null 2>&1'
fi

# The installed binary finds the installed catalogue (no build tree beside it)
if command -v msgfmt >/dev/null 2>&1; then
	inst=$tmp/inst
	if make -s -j2 -C "$SRCDIR" install PREFIX="$inst" BUILD="$tmp/build-inst" >"$tmp/make" 2>&1; then
		expect "make install puts the catalogue under PREFIX/share/locale" '[ -f "$inst/share/locale/zh_CN/LC_MESSAGES/attnviz.mo" ]'
		printf 'foo\n' | LC_ALL=C.UTF-8 "$inst/bin/attnviz" --plain --lang zh mask >/dev/null 2>"$err"
		expect "the installed attnviz speaks Chinese" 'has "$err" "错误：没有这个命令"'
	else
		not_ok "make install PREFIX=…" "$(tail -n 5 "$tmp/make")"
	fi
fi

finish
