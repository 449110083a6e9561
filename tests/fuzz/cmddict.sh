#!/bin/sh
# tests/fuzz/cmddict.sh: the libFuzzer dictionary for command lines
# (tests/fuzz/cmd.dict), made from the command table in src/cmd/cmd.c — every
# command and alias, with a blank after it when it takes arguments — and then
# tests/fuzz/cmd-args.dict's words. `make fuzz-dict` writes it; t_cli.sh checks
# the shipped one is what this makes. Run from the repository root.
set -e
src=${1:-src/cmd/cmd.c}
args=${2:-tests/fuzz/cmd-args.dict}
echo '# libFuzzer dictionary for attnviz command lines (tests/fuzz_cmd.c)'
echo '# Made by tests/fuzz/cmddict.sh from cmd_table and cmd-args.dict: do not edit; make fuzz-dict.'
echo '"\x0a"'
awk '
/^const CmdEntry cmd_table\[\] = \{/ { p = 1; next }
p && /^\};/ { flush(); p = 0 }
!p { next }
function flush(   i) {
	for (i = 0; i < nw; i++)
		printf "\"%s%s\"\n", w[i], noargs ? "" : " "
	nw = 0; noargs = 0
}
/\{ \.name = "/ { flush() }
{
	line = $0
	while (match(line, /\.(name|alias) = "[^"]*"/)) {
		s = substr(line, RSTART, RLENGTH)
		sub(/^[^"]*"/, "", s); sub(/"$/, "", s)
		w[nw++] = s
		line = substr(line, RSTART + RLENGTH)
	}
	if ($0 ~ /\.args = NO_ARGS/) noargs = 1
}
' "$src"
grep -v '^#' "$args"
