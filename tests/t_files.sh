#!/bin/sh
# t_files.sh: what attnviz promises about the files it writes and reads
# (README "Files"): only regular files are replaced, whole or not at all;
# a symbolic link's target is replaced, the link stays; no set-id bits;
# no temporary file left behind; output that cannot be written is an error
# (a message and a non-zero exit) and never replaces a good file; the
# history file is private; a FIFO or device where a lesson, theme, demo
# script or history file is expected is refused at once, never waited on;
# paths quoted in messages never carry raw control characters.
# Run from the repository root; $ATTNVIZ is the binary. Prints "ok - NAME" /
# "not ok - NAME" lines (what this machine cannot try: "ok - NAME # SKIP WHY")
# and ends with "N passed, N failed, N skipped" (tests/lib.sh).
. "$(dirname "$0")/lib.sh"

export LC_ALL=C.UTF-8
export XDG_STATE_HOME="$tmp/state"
out=$tmp/out
MASK=lessons/mask.json

# A command that may hang on a FIFO: killed after 5 s (status 124 or 137 then).
t5() { timeout -s KILL 5 "$@"; }
export_to() { # PATH [LESSON]: an SVG export of the softmax stage; $rc is its status
	t5 "$ATTNVIZ" --export svg --stage softmax "${2:-$MASK}" -o "$1" >"$out" 2>"$err"
	rc=$?
}
no_temp() { # DIR: no hidden temporary file (.NAME.XXXXXX) left in it
	[ -z "$(ls -A "$1" | grep '^\.')" ]
}
raw_free() { # FILE: no ESC, no C1 CSI (U+009B), no U+202E
	! grep -q "$ESC" "$1" && ! grep -q "$(printf '\302\233')" "$1" && ! grep -q "$(printf '\342\200\256')" "$1"
}
HOSTILE=$(printf 'x\033]52;c;QUFB\007\302\233\342\200\256y')

# ------------------------------------------------------------ writing: only regular files

d=$tmp/w
mkdir -p "$d"
mkfifo "$d/fifo.svg"
export_to "$d/fifo.svg"
check "a FIFO is refused: exit 1, says so" sh -c "[ $rc -eq 1 ] && grep -q 'fifo.svg: is a FIFO, not a regular file' '$err'"
check "a FIFO is refused: it is still a FIFO" test -p "$d/fifo.svg"
if [ "$(id -u)" -eq 0 ] && mknod "$d/null" c 1 3 2>/dev/null; then
	export_to "$d/null"
	check "a character device is refused: exit 1, says so" sh -c "[ $rc -eq 1 ] && grep -q 'a character device, not a regular file' '$err'"
	check "a character device is refused: it is still a device" test -c "$d/null"
else
	skip "a character device is refused" "mknod needs root"
fi
ln -s fifo.svg "$d/fifo-link.svg"
export_to "$d/fifo-link.svg"
check "a symbolic link to a FIFO is refused, both stay" sh -c "[ $rc -eq 1 ] && [ -L '$d/fifo-link.svg' ] && [ -p '$d/fifo.svg' ]"
# The issue's case: a link to /proc/self/fd/1 (here a pipe) must not become a file.
ln -s /proc/self/fd/1 "$d/stdout.svg"
{ t5 "$ATTNVIZ" --export svg --stage softmax "$MASK" -o "$d/stdout.svg" 2>"$err"; echo $? >"$tmp/rc"; } | cat >"$out"
check "a symbolic link to /proc/self/fd/1 is refused, the link stays" sh -c "[ \"\$(cat '$tmp/rc')\" = 1 ] && [ -L '$d/stdout.svg' ] && [ ! -s '$out' ]"
check "nothing is left beside refused files" no_temp "$d"

# ------------------------------------------------------------ writing: symbolic links and modes

echo precious >"$d/target.svg"
ln -s target.svg "$d/link.svg"
export_to "$d/link.svg"
check "a symbolic link: its target is replaced" sh -c "[ $rc -eq 0 ] && tail -n 1 '$d/target.svg' | grep -qx '</svg>'"
check "a symbolic link: the link stays a link" sh -c "[ -L '$d/link.svg' ] && [ \"\$(readlink '$d/link.svg')\" = target.svg ]"
mkdir "$d/other"
ln -s ../target.svg "$d/other/up.svg"
echo precious >"$d/target.svg"
export_to "$d/other/up.svg"
check "a symbolic link to another directory: the target is replaced there" sh -c "[ $rc -eq 0 ] && tail -n 1 '$d/target.svg' | grep -qx '</svg>' && [ -L '$d/other/up.svg' ]"
check "a symbolic link: no temporary left in either directory" sh -c "[ -z \"\$(ls -A '$d' '$d/other' | grep '^\.')\" ]"
ln -s nowhere.svg "$d/dangling.svg"
export_to "$d/dangling.svg"
check "a symbolic link to nothing is refused" sh -c "[ $rc -eq 1 ] && [ ! -e '$d/nowhere.svg' ] && grep -q 'dangling.svg' '$err'"

: >"$d/suid.svg"
chmod 4777 "$d/suid.svg"
export_to "$d/suid.svg"
check "set-user-ID is never carried to the new file" sh -c "[ $rc -eq 0 ] && [ \"\$(stat -c %a '$d/suid.svg')\" = 777 ]"
: >"$d/sgid.svg"
chmod 3775 "$d/sgid.svg"
export_to "$d/sgid.svg"
check "set-group-ID and sticky are never carried either" sh -c "[ $rc -eq 0 ] && [ \"\$(stat -c %a '$d/sgid.svg')\" = 775 ]"
: >"$d/private.svg"
chmod 600 "$d/private.svg"
export_to "$d/private.svg"
check "a replaced file keeps its permission bits" sh -c "[ $rc -eq 0 ] && [ \"\$(stat -c %a '$d/private.svg')\" = 600 ]"
(umask 027 && t5 "$ATTNVIZ" --export svg --stage softmax "$MASK" -o "$d/new.svg" 2>"$err")
check "a new file: 0666 less the umask" sh -c "[ \"\$(stat -c %a '$d/new.svg')\" = 640 ]"

# save and export in the REPL go through the same rules
printf 'save %s\nexport svg softmax %s\nnext\n' "$d/fifo.svg" "$d/fifo.svg" | t5 "$ATTNVIZ" --plain "$MASK" >"$out" 2>"$err"
check "REPL save/export: a FIFO is refused and attnviz carries on" sh -c "[ \$(grep -c 'a FIFO, not a regular file' '$err') -eq 2 ] && [ -p '$d/fifo.svg' ] && grep -q 'step 2/' '$out'"

# ------------------------------------------------------------ writing: a file size limit, a kill

echo precious >"$d/limited.svg"
(ulimit -f 4 && t5 "$ATTNVIZ" --export svg --stage softmax "$MASK" -o "$d/limited.svg" >"$out" 2>"$err")
rc=$?
check "past ulimit -f: exit 1 and a message, not SIGXFSZ" sh -c "[ $rc -eq 1 ] && grep -q 'limited.svg: File too large' '$err'"
check "past ulimit -f: the old file stays, no temporary left" sh -c "[ \"\$(cat '$d/limited.svg')\" = precious ] && [ -z \"\$(ls -A '$d' | grep '^\.')\" ]"

# Killed (TERM) while the bytes are being written: the file ends whole, no temporary file is left.
k=$tmp/kill
mkdir -p "$k"
cat >"$k/big.json" <<'EOF'
{"attnviz": 1, "X": {"random": "normal", "rows": 1500, "cols": 4, "seed": 1},
 "W_q": {"identity": 4}, "W_k": {"identity": 4}, "W_v": {"identity": 4}}
EOF
"$ATTNVIZ" --export csv --matrix weights "$k/big.json" -o "$k/w.csv" 2>"$err" &
pid=$!
i=0
caught=
while [ $i -lt 2000 ] && kill -0 "$pid" 2>/dev/null; do
	if ls -A "$k" | grep -q '^\.w\.csv\.'; then kill -TERM "$pid"; caught=yes; break; fi
	sleep 0.01
	i=$((i + 1))
done
wait "$pid" 2>/dev/null
if [ -z "$caught" ]; then
	skip "killed mid-write" "the write was over before it could be caught"
else
	check "killed mid-write: no temporary file left" no_temp "$k"
	check "killed mid-write: the file, if there, is whole" sh -c "[ ! -e '$k/w.csv' ] || [ \$(wc -l <'$k/w.csv') -eq 1501 ]"
fi
rm -rf "$k"

# ------------------------------------------------------------ standard output that cannot be written

if [ -w /dev/full ]; then
	t5 "$ATTNVIZ" --check "$MASK" >/dev/full 2>"$err"
	rc=$?
	check "--check to a full disk: non-zero exit and a message" sh -c "[ $rc -ne 0 ] && grep -q 'cannot write to standard output: No space left' '$err'"
	printf 'next\nshow weights\n' | t5 "$ATTNVIZ" --plain "$MASK" >/dev/full 2>"$err"
	rc=$?
	check "plain REPL to a full disk: non-zero exit and a message" sh -c "[ $rc -ne 0 ] && grep -q 'standard output' '$err'"
	t5 "$ATTNVIZ" --help >/dev/full 2>"$err"
	check "--help to a full disk: non-zero exit" test $? -ne 0
else
	skip "writes to /dev/full" "no /dev/full"
fi
t5 "$ATTNVIZ" --check "$MASK" >&- 2>"$err"
rc=$?
check "--check with stdout closed: non-zero exit and a message" sh -c "[ $rc -ne 0 ] && grep -q 'standard output' '$err'"
printf 'next\n' | t5 "$ATTNVIZ" --plain "$MASK" >&- 2>"$err"
rc=$?
check "plain REPL with stdout closed: non-zero exit" test "$rc" -ne 0
t5 "$ATTNVIZ" --check "$MASK" >"$out" 2>"$err"
rc=$?
check "--check to a file: exit 0, nothing on stderr" sh -c "[ $rc -eq 0 ] && [ ! -s '$err' ] && [ -s '$out' ]"

# ------------------------------------------------------------ --transcript: appended, never half

mkfifo "$d/tr.fifo"
printf 'next\n' | t5 "$ATTNVIZ" --plain --transcript "$d/tr.fifo" "$MASK" >/dev/null 2>"$err"
rc=$?
check "--transcript to a FIFO: refused at once" sh -c "[ $rc -eq 1 ] && grep -q 'a FIFO, not a regular file' '$err' && [ -p '$d/tr.fifo' ]"
if [ -w /dev/full ]; then
	printf 'next\n' | t5 "$ATTNVIZ" --plain --transcript /dev/full "$MASK" >/dev/null 2>"$err"
	rc=$?
	check "--transcript /dev/full: exit 1, says why" sh -c "[ $rc -eq 1 ] && grep -q 'cannot open transcript: cannot write /dev/full: is a character device' '$err'"
fi
lines='show weights\nshow scores\nshow weights\nshow scores\nshow weights\nshow scores\nshow weights\nshow scores\nshow weights\nshow scores\nnext\nnext\nnext\n'
echo "old session" >"$d/tr.txt"
(ulimit -f 8 && printf "$lines" | t5 "$ATTNVIZ" --plain --transcript "$d/tr.txt" "$MASK" >/dev/null 2>"$err")
rc=$?
check "--transcript on a full disk: exit 1 and a message" sh -c "[ $rc -eq 1 ] && grep -q 'transcript cut back to what it was: cannot write .*tr.txt: File too large' '$err'"
check "--transcript on a full disk: the old transcript is as it was" sh -c "[ \"\$(cat '$d/tr.txt')\" = 'old session' ]"
(ulimit -f 8 && printf "$lines" | t5 "$ATTNVIZ" --plain --transcript "$d/tr-new.txt" "$MASK" >/dev/null 2>"$err")
rc=$?
check "--transcript on a full disk: a new transcript is not left half-written" sh -c "[ $rc -eq 1 ] && [ ! -e '$d/tr-new.txt' ]"
printf 'next\n' | t5 "$ATTNVIZ" --plain --transcript "$d/tr.txt" "$MASK" >/dev/null 2>"$err"
rc=$?
check "--transcript: appended to" sh -c "[ $rc -eq 0 ] && head -n 1 '$d/tr.txt' | grep -qx 'old session' && grep -qx 'attnviz> next' '$d/tr.txt'"
printf 'next\n' | t5 "$ATTNVIZ" --plain --transcript "$tmp/no/$HOSTILE" "$MASK" >/dev/null 2>"$err"
check "--transcript: the path in the message is escaped" sh -c "grep -q 'x.x1b]52' '$err' && ! grep -q '$ESC' '$err'"
check "--transcript: no raw C1 or bidi control in the message" raw_free "$err"

# ------------------------------------------------------------ outside text in messages is escaped

export_to "$tmp/no/$HOSTILE"
check "-o: the path in the message is escaped" sh -c "[ $rc -eq 1 ] && grep -q 'x.x1b]52' '$err'"
check "-o: no raw control in the message" raw_free "$err"
# A theme's key names, wherever they stand: an unknown key, role, and key of a role.
key=$(printf '\\u001b]52;c;QUFB\\u0007\\u009b\\u202e')
for where in top role role-key; do
	case $where in
	top) printf '{"name": "t", "%s": 1}\n' "$key" ;;
	role) printf '{"name": "t", "roles": {"stage": {"fg": 1}, "%s": {}}}\n' "$key" ;;
	role-key) printf '{"name": "t", "roles": {"stage": {"%s": 1}}}\n' "$key" ;;
	esac >"$tmp/keytheme.json"
	t5 "$ATTNVIZ" --export svg --stage softmax --theme "$tmp/keytheme.json" "$MASK" -o "$tmp/kt.svg" >/dev/null 2>"$err"
	rc=$?
	check "theme: a key name in the message is escaped ($where)" sh -c "[ $rc -eq 1 ] && grep -q 'x1b]52;c;QUFB.x07.x9b.u202e' '$err'"
	check "theme: no raw control in the message ($where)" raw_free "$err"
done

# A lesson name that finds nothing is quoted back: escaped (the REPL's start and --export).
printf 'next\n' | t5 "$ATTNVIZ" --plain "$HOSTILE" >/dev/null 2>"$err"
check "a lesson name in the message is escaped (start)" sh -c "grep -q 'no lesson named \"x.x1b]52' '$err'"
check "a lesson name: no raw control in the message (start)" raw_free "$err"
t5 "$ATTNVIZ" --export svg --stage softmax "$HOSTILE" -o "$tmp/kt.svg" >/dev/null 2>"$err"
check "a lesson name in the message is escaped (--export)" sh -c "grep -q 'no lesson named \"x.x1b]52' '$err'"
check "a lesson name: no raw control in the message (--export)" raw_free "$err"

# ------------------------------------------------------------ reading: a FIFO is never waited on

lz=$tmp/lessons
mkdir -p "$lz"
cp "$MASK" "$lz/mask.json"
mkfifo "$lz/x.json"
printf 'lessons\n' | t5 env ATTNVIZ_LESSONS="$lz" "$ATTNVIZ" --plain >"$out" 2>"$err"
rc=$?
check "lessons: a FIFO named x.json does not hang the list" sh -c "[ $rc -eq 0 ] && grep -q 'mask' '$out'"
# A writer that holds the FIFO open: a blocking read would wait for it.
(exec 3>"$lz/x.json"; sleep 8) &
holder=$!
printf 'load %s\nnext\n' "$lz/x.json" | t5 "$ATTNVIZ" --plain "$MASK" >"$out" 2>"$err"
rc=$?
check "load: a FIFO is refused at once" sh -c "[ $rc -eq 0 ] && grep -q 'x.json: is a FIFO, not a lesson file' '$err'"
t5 "$ATTNVIZ" --check "$lz/x.json" >"$out" 2>"$err"
rc=$?
check "--check: a FIFO is refused at once" sh -c "[ $rc -eq 1 ] && grep -q 'is a FIFO' '$err'"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
mkfifo "$tmp/theme.json"
t5 "$ATTNVIZ" --export svg --stage softmax --theme "$tmp/theme.json" "$MASK" -o "$tmp/th.svg" >/dev/null 2>"$err"
rc=$?
check "--theme FILE: a FIFO is refused at once" sh -c "[ $rc -eq 1 ] && grep -q 'is a FIFO' '$err'"
mkdir -p "$tmp/themes"
mkfifo "$tmp/themes/fifo.json"
t5 env ATTNVIZ_THEMES="$tmp/themes" "$ATTNVIZ" --export svg --stage softmax --theme fifo "$MASK" -o "$tmp/th.svg" >/dev/null 2>"$err"
rc=$?
check "--theme NAME: a FIFO in the theme directory is refused at once" sh -c "[ $rc -eq 1 ] && grep -q 'is a FIFO' '$err'"
mkfifo "$tmp/demo.txt"
printf 'source %s\nnext\n' "$tmp/demo.txt" | t5 "$ATTNVIZ" --plain "$MASK" >"$out" 2>"$err"
rc=$?
check "source: a FIFO is refused at once" sh -c "[ $rc -eq 0 ] && grep -q 'is a FIFO' '$err' && grep -q 'step 2/' '$out'"

# ------------------------------------------------------------ the full-screen view: the history and --record

if ! command -v tmux >/dev/null 2>&1; then
	skip "the history and --record" "tmux not installed"
	finish
fi
. "$(dirname "$0")/tmux.sh"

# sq WORD: WORD in single quotes, for a shell to read back as it is
sq() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
# view NAME STATE-DIR PRE [ARGS…]: attnviz ARGS in an 80×24 terminal (tmux.sh's start), its
# state in STATE-DIR and its stderr in $tmp/NAME.err; PRE (a shell line, or "") runs first in
# the same process: a ulimit, another TERM. The session stays when attnviz ends (its last
# line "EXITED STATUS …").
view() {
	v_name=$1 v_state=$2 v_pre=$3
	shift 3
	{
		echo '#!/bin/sh'
		echo "exec 2>$(sq "$tmp/$v_name.err")"
		echo "$v_pre"
		printf 'exec %s' "$(sq "$ATTNVIZ")"
		for v_arg; do printf ' %s' "$(sq "$v_arg")"; done
		echo
	} >"$tmp/$v_name.sh"
	chmod +x "$tmp/$v_name.sh"
	v_attnviz=$ATTNVIZ
	ATTNVIZ=$tmp/$v_name.sh # start runs this, with no arguments
	start "$v_name" 80 24 C.UTF-8 "XDG_STATE_HOME=$v_state"
	ATTNVIZ=$v_attnviz
}
# ended NAME: attnviz in session NAME has ended, within 15 s (a loaded machine starts slowly); its status in $rc
ended() {
	rc=
	wait_for "$1" '^EXITED [0-9]+ ' 15 || return 1
	rc=$(cap "$1" | sed -n 's/^EXITED \([0-9]*\) .*/\1/p' | tail -n 1)
}
quit() { # NAME: q, then wait for the end
	keys "$1" q
	ended "$1"
}

# History: 0600 with either line editor, however the old file was.
next_and_quit() { # NAME STATE-DIR: start the view, type :next, quit
	view "$1" "$2" "" "$MASK"
	if wait_for "$1" 'Masked attention' 15; then
		cmd "$1" next
		wait_for "$1" 'step 2/' >/dev/null
		quit "$1"
	fi
}
st=$tmp/st1
mkdir -p "$st/attnviz"
echo 'goto softmax' >"$st/attnviz/history"
chmod 644 "$st/attnviz/history"
next_and_quit hist "$st"
check "history: the old lines and the new one are kept" sh -c "grep -qx 'goto softmax' '$st/attnviz/history' && grep -qx next '$st/attnviz/history'"
check "history: the file is 0600 (it was 0644)" sh -c "[ \"\$(stat -c %a '$st/attnviz/history')\" = 600 ]"
next_and_quit hist2 "$tmp/st2"
check "history: a new file is 0600" sh -c "[ \"\$(stat -c %a '$tmp/st2/attnviz/history')\" = 600 ]"

# A FIFO where the history file should be: the view starts, the FIFO stays.
st=$tmp/st3
mkdir -p "$st/attnviz"
mkfifo "$st/attnviz/history"
view hfifo "$st" "" "$MASK"
if wait_for hfifo 'Masked attention' 15; then ok "history: a FIFO in its place does not hang the start"
else screen_not_ok "history: a FIFO in its place does not hang the start"; fi
quit hfifo
check "history: the FIFO is neither read nor replaced" sh -c "[ -p '$st/attnviz/history' ] && [ '$rc' = 0 ]"

# --record: no predictable FILE.part (a symbolic link there is never followed).
r=$tmp/rec
mkdir -p "$r"
echo precious >"$r/victim"
ln -s victim "$r/out.cast.part"
view rec "$tmp/st4" "" --record "$r/out.cast" "$MASK"
wait_for rec 'Masked attention' 15 && quit rec
check "record: the recording is written" sh -c "[ '$rc' = 0 ] && head -n 1 '$r/out.cast' | grep -q '\"version\": 2'"
check "record: a symbolic link at FILE.part is not followed" sh -c "[ \"\$(cat '$r/victim')\" = precious ]"
check "record: no temporary left" no_temp "$r"

# --record that cannot start (no pseudo-terminal: too few file descriptors) keeps the old recording.
said=
for n in 4 5 6 7 8; do
	echo precious >"$r/old.cast"
	view nopty$n "$tmp/st5" "ulimit -n $n" --record "$r/old.cast" "$MASK"
	ended nopty$n || quit nopty$n
	if [ "$(cat "$r/old.cast")" != precious ]; then said=broken; break; fi
	if grep -q 'pseudo-terminal' "$tmp/nopty$n.err"; then said=yes; break; fi
done
check "record: when it cannot start, the old recording stays (tried ulimit -n $n)" test "$said" = yes
check "record: and no temporary is left" no_temp "$r"

mkfifo "$r/fifo.cast"
view recfifo "$tmp/st6" "" --record "$r/fifo.cast" "$MASK"
ended recfifo || quit recfifo
check "record: a FIFO is refused" sh -c "[ '$rc' = 1 ] && grep -q 'a FIFO, not a regular file' '$tmp/recfifo.err' && [ -p '$r/fifo.cast' ]"
view rechost "$tmp/st7" "" --record "$tmp/no/$HOSTILE" "$MASK"
ended rechost || quit rechost
check "record: the path in the message is escaped" sh -c "[ '$rc' = 1 ] && grep -q 'x1b]52' '$tmp/rechost.err'"
check "record: no raw control in the message" raw_free "$tmp/rechost.err"

# TERM is outside text too: a terminal type curses does not know is named, escaped.
view badterm "$tmp/st8" "TERM=$(sq "$HOSTILE"); export TERM" "$MASK"
ended badterm || quit badterm
check "an unknown TERM in the message is escaped" sh -c "[ '$rc' = 1 ] && grep -q 'TERM=x.x1b]52' '$tmp/badterm.err'"
check "an unknown TERM: no raw control in the message" raw_free "$tmp/badterm.err"

finish
