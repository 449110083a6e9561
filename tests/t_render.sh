#!/bin/sh
# tests/t_render.sh — --render: a demo played with no terminal into an animated
# SVG and an asciicast. The SVG is well-formed XML with one frame per screen
# change, and a frame's text is what the real view shows in tmux at the same
# demo line (the same demo at the same size, captured at each `pause`). The
# cast's header is JSON with the lesson's title and idle_time_limit, its frames
# full redraws; --record names the lesson it ended on and --record-plain writes
# no scroll region. Headless Chromium, when installed, draws the SVG.
. "$(dirname "$0")/lib.sh"

SRCDIR=${ATTNVIZ_SRCDIR:-$(pwd)}
[ -x "$ATTNVIZ" ] || bail "no binary at $ATTNVIZ"
cd "$SRCDIR" || bail "no source directory $SRCDIR"
MASK_TITLE='Masked attention: the decoder may not look ahead'

# The demo: a lesson of its own (Chinese tokens: double-width cells), two pauses, a wait.
printf '# a render test\nload mask\ngoto scores\npause\ngoto softmax\nwait 0.5\nexplain scores 2 1\nwait 0.5\ngoto weighted\npause\n' >"$tmp/demo.txt"
PAUSES="4 10"   # the lines of the pauses

# ---------------------------------------------------------------- options
"$ATTNVIZ" --render "$tmp/demo.txt" >/dev/null 2>"$err"
expect "usage: --render without -o is refused" '[ $? -eq 2 ] && grep -q -- "-o FILE.svg" "$err"'
"$ATTNVIZ" --render "$tmp/demo.txt" -o "$tmp/x.png" >/dev/null 2>"$err"
expect "usage: an ending other than .svg, .cast, .gif or .mp4 is refused" '[ $? -eq 2 ] && grep -q "FILE.svg, FILE.cast, FILE.gif or FILE.mp4" "$err"'
PATH=/nonexistent "$ATTNVIZ" --render "$tmp/demo.txt" -o "$tmp/x.gif" >/dev/null 2>"$err"
expect "usage: .gif without rsvg-convert and ffmpeg names both and their packages, exit 2, nothing written" \
	'[ $? -eq 2 ] && grep -q "needs rsvg-convert and ffmpeg, not found on PATH; .*apt-get install librsvg2-bin ffmpeg" "$err" && [ ! -e "$tmp/x.gif" ]'
mkdir "$tmp/onlyrsvg" && printf '#!/bin/sh\nexit 0\n' >"$tmp/onlyrsvg/rsvg-convert" && chmod +x "$tmp/onlyrsvg/rsvg-convert"
PATH="$tmp/onlyrsvg" "$ATTNVIZ" --render "$tmp/demo.txt" -o "$tmp/x.mp4" >/dev/null 2>"$err"
expect "usage: .mp4 without ffmpeg names ffmpeg alone" \
	'[ $? -eq 2 ] && grep -q "needs ffmpeg, not found on PATH; .*apt-get install ffmpeg (nothing" "$err" && [ ! -e "$tmp/x.mp4" ]'
"$ATTNVIZ" --render "$tmp/demo.txt" -o "$tmp/x.svg" --size 10x5 >/dev/null 2>"$err"
expect "usage: --size too small is refused" '[ $? -eq 2 ] && grep -q "40x12" "$err"'
"$ATTNVIZ" --size 100x30 >/dev/null 2>"$err"
expect "usage: --size without --render is refused" '[ $? -eq 2 ] && grep -q "goes with --render" "$err"'
"$ATTNVIZ" --render "$tmp/no-such-demo.txt" -o "$tmp/x.svg" >/dev/null 2>"$err"
expect "a demo that cannot be read: exit 1, said, nothing written" '[ $? -eq 1 ] && grep -q "no-such-demo" "$err" && [ ! -e "$tmp/x.svg" ]'

# issue 27, 11: a failing line says which command and why (a long message was "failed")
printf 'next\ngoto nosuchstage\nnext\n' >"$tmp/bad.txt"
"$ATTNVIZ" --render "$tmp/bad.txt" -o "$tmp/bad.svg" >/dev/null 2>"$err"
expect "a failing demo line names its command and why, exit 1" \
	'[ $? -eq 1 ] && grep -q "bad.txt:2: goto nosuchstage: .*unknown stage: nosuchstage" "$err"'

# --present: a demo rendered in presenter mode, without the key line (issue 26 §5: it was refused)
"$ATTNVIZ" --render "$SRCDIR/lessons/demos/masking.txt" -o "$tmp/plain.cast" --size 80x24 --pause 0.1 >/dev/null 2>"$err"
"$ATTNVIZ" --render "$SRCDIR/lessons/demos/masking.txt" --present -o "$tmp/present.cast" --size 80x24 --pause 0.1 >/dev/null 2>"$err"
expect "render --present: exit 0, written" '[ $? -eq 0 ] && [ -s "$tmp/present.cast" ]'
keyline='Enter\\u001b\[[0-9;]*m explain' # the key line's "Enter explain", its key in bold, as the cast writes it
expect "render --present: the key line (Enter explain) is drawn without it, never with it" \
	'[ "$(grep -cE "$keyline" "$tmp/plain.cast")" -gt 5 ] && [ "$(grep -cE "$keyline" "$tmp/present.cast")" -eq 0 ]'
# --clean: frames for slides, no key line, no status line's words, no how-to-answer prompts
"$ATTNVIZ" --render "$SRCDIR/lessons/demos/masking.txt" --clean -o "$tmp/clean.cast" --size 80x24 --pause 0.1 >/dev/null 2>"$err"
expect "render --clean: exit 0, written" '[ $? -eq 0 ] && [ -s "$tmp/clean.cast" ]'
expect "render --clean: no key line" '[ "$(grep -cE "$keyline" "$tmp/clean.cast")" -eq 0 ]'
expect "render --clean: the status line says nothing of the demo (it does without --clean)" \
	'[ "$(grep -c "demo" "$tmp/plain.cast")" -gt 0 ] && [ "$(grep -c "demo" "$tmp/clean.cast")" -eq 0 ]'
expect "render --clean: no 'press 1-2' nor 'the class votes' (both there without it)" \
	'grep -q "class votes" "$tmp/plain.cast" && ! grep -q "class votes\|ress 1-" "$tmp/clean.cast"'
expect "render --clean: the question and its choices are still there" 'grep -q "1) " "$tmp/clean.cast"'
"$ATTNVIZ" --clean "$SRCDIR/lessons/mask.json" >/dev/null 2>"$err"
expect "--clean without --render: refused" '[ $? -eq 2 ] && grep -q -- "--clean goes with --render" "$err"'

# ---------------------------------------------------------------- tmux: the same demo in the real view
. "$(dirname "$0")/tmux.sh"

tm new-session -d -s live -x 100 -y 31 \
	"env -u NO_COLOR TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 XDG_STATE_HOME=$tmp/state sh -c 'cd \"$SRCDIR\" && \"$ATTNVIZ\" --demo \"$tmp/demo.txt\"; echo EXITED \$?; exec sleep 600'"
size=$(tm display -p -t live '#{pane_width}x#{pane_height}')
W=${size%x*}
H=${size#*x}

"$ATTNVIZ" --render "$tmp/demo.txt" -o "$tmp/demo.svg" --size "$size" --pause 1 >"$tmp/out" 2>"$err"
rc=$?
expect "render svg: exit 0" '[ $rc -eq 0 ]'
expect "render svg: says how many frames and where" 'grep -q "frames, .* written to" "$err"'
expect "render svg: nothing on stdout" '[ ! -s "$tmp/out" ]'
if command -v xmllint >/dev/null 2>&1; then
	check "render svg: well-formed XML" xmllint --noout "$tmp/demo.svg"
else
	skip "render svg: well-formed XML" "xmllint not installed"
fi
check "render svg: an SVG of the grid's size" grep -q "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"$((W * 10))\" height=\"$((H * 20))\"" "$tmp/demo.svg"
check "render svg: animated (SMIL, a clock that loops)" grep -q 'begin="0s;loop.end"' "$tmp/demo.svg"
check "render svg: self-contained (nothing loaded from elsewhere)" hasnt "$tmp/demo.svg" 'href='

# frames: one file of row texts each (the rows as xmllint reads them, trailing blanks off)
nframes=$(sed -n 's/.*data-frames="\([0-9]*\)".*/\1/p' "$tmp/demo.svg")
expect "render svg: the frames it says it has" '[ "$(count_re "$tmp/demo.svg" "<g id=\"f[0-9]*\"")" = "$nframes" ]'
# goto scores; pause; goto softmax; explain (a pop-up); goto weighted (the pop-up closes); the end
expect "render svg: a frame for each screen change ($nframes)" '[ "${nframes:-0}" -ge 5 ] && [ "$nframes" -le 12 ]'
frame_text() { # frame_text K: frame K's rows, one a line, trailing blanks off
	r=1
	while [ "$r" -le "$H" ]; do
		# (xmllint ends the string with a newline)
		xmllint --xpath "string(//*[@id='f$1']/*[local-name()='text'][$r])" "$tmp/demo.svg"
		r=$((r + 1))
	done | sed 's/[[:space:]]*$//'
}
same=0
k=1
while [ "$k" -lt "${nframes:-0}" ]; do
	frame_text $((k - 1)) >"$tmp/a"
	sed -n "/<g id=\"f$((k - 1))\"/,/<\/g>/p" "$tmp/demo.svg" | sed 1d >"$tmp/fa"
	sed -n "/<g id=\"f$k\"/,/<\/g>/p" "$tmp/demo.svg" | sed 1d >"$tmp/fb"
	cmp -s "$tmp/fa" "$tmp/fb" && same=$((same + 1))
	k=$((k + 1))
done
expect "render svg: no frame repeats the one before" '[ $same -eq 0 ]'
check "render svg: frames in time order, from 0" grep -q '<g id="f0" data-t="0.000"' "$tmp/demo.svg"
check "render svg: a wait of 0.5 s is 0.5 s" grep -q 'data-t="1.500"' "$tmp/demo.svg"
check "render svg: double-width characters have their own two cells" grep -q 'textLength="20" lengthAdjust="spacingAndGlyphs">机<' "$tmp/demo.svg"

# the same demo lines in tmux: the screen at each pause is the first frame of that line (the
# frames after it, still of that line, are what space at the pause brings: at the end, "end")
for line in $PAUSES; do
	n=$(grep -c '^[^#]' "$tmp/demo.txt")
	e=$(head -n "$line" "$tmp/demo.txt" | grep -c '^[^#]')   # the script's entry k of "demo k/N"
	# beside a long message the indicator drops the line: "demo k/N  paused"
	if wait_for live "demo $e/$n(, line $line)? +paused" 10; then
		sleep 0.3
		cap live | sed 's/[[:space:]]*$//' >"$tmp/live-$line"
		k=$(grep -o "<g id=\"f[0-9]*\" data-t=\"[0-9.]*\" data-line=\"$line\"" "$tmp/demo.svg" | head -n 1 | sed 's/<g id="f\([0-9]*\)".*/\1/')
		if [ -z "$k" ]; then
			not_ok "render svg: a frame at the pause on line $line"
		else
			frame_text "$k" >"$tmp/frame-$line"
			if cmp -s "$tmp/live-$line" "$tmp/frame-$line"; then
				ok "render svg: frame $k's text is the screen tmux shows at line $line"
			else
				not_ok "render svg: frame $k's text is the screen tmux shows at line $line" \
					"$(diff "$tmp/live-$line" "$tmp/frame-$line" | head -n 20)"
			fi
		fi
	else
		screen_not_ok "tmux: the demo pauses at line $line (of $n)"
	fi
	keys live Space
done
tm kill-session -t live

# ---------------------------------------------------------------- the asciicast
"$ATTNVIZ" --render "$tmp/demo.txt" -o "$tmp/demo.cast" --size "$size" --pause 1 >/dev/null 2>"$err"
expect "render cast: exit 0" '[ $? -eq 0 ]'
head -n 1 "$tmp/demo.cast" >"$tmp/header.json"
# idle_time_limit: the longest stillness the script asks for (the pause, 1 s, over its waits of 0.5 s)
printf '{"version": 2, "width": %d, "height": %d, "idle_time_limit": 1, "title": "%s"}\n' "$W" "$H" "$MASK_TITLE" >"$tmp/want.json"
check "render cast: the header is JSON with the lesson's title and idle_time_limit" \
	"$BUILD/tests/jsoncmp" --only-expected-keys "$tmp/want.json" "$tmp/header.json"
events=$(($(wc -l <"$tmp/demo.cast") - 1))
expect "render cast: one event per frame, and the end" '[ "$events" -eq $((nframes + 1)) ]'
check "render cast: full redraws by absolute moves (the last row of every frame)" \
	[ "$(count "$tmp/demo.cast" "\\u001b[$H;1H")" -eq "$nframes" ]
expect "render cast: no scroll region, no line insert or delete" \
	'! grep -Eq "u001b\\[[0-9]*(;[0-9]+)?[rLM]" "$tmp/demo.cast"'

# ---------------------------------------------------------------- GIF and MP4 (rsvg-convert and ffmpeg)
if external ffmpeg ffprobe rsvg-convert; then
	duration=$(sed -n 's/.*data-duration="\([0-9.]*\)".*/\1/p' "$tmp/demo.svg")
	for v in gif mp4; do
		TMPDIR="$tmp/vtmp" && mkdir -p "$TMPDIR" && export TMPDIR
		"$ATTNVIZ" --render "$tmp/demo.txt" -o "$tmp/demo.$v" --size "$size" --pause 1 >/dev/null 2>"$err"
		expect "render $v: exit 0" '[ $? -eq 0 ] && grep -q "written to .*demo.$v" "$err"'
		unset TMPDIR
		expect "render $v: its temporary folder removed" '[ -z "$(ls -A "$tmp/vtmp")" ]'
		ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=width,height,nb_read_frames,codec_name,pix_fmt \
			-show_entries format=duration -of default=nw=1 "$tmp/demo.$v" >"$tmp/probe" 2>"$err"
		fw=$(sed -n 's/^width=//p' "$tmp/probe")
		fh=$(sed -n 's/^height=//p' "$tmp/probe")
		fn=$(sed -n 's/^nb_read_frames=//p' "$tmp/probe")
		fd=$(sed -n 's/^duration=//p' "$tmp/probe")
		expect "render $v: the size --size says (${W}x$H cells: $((W * 10))x$((H * 20)), got ${fw}x$fh)" \
			'[ "$fw" = $((W * 10)) ] && [ "$fh" = $((H * 20)) ]'
		# the concat demuxer names the last frame twice (so that it holds): one more at most
		expect "render $v: a frame for each of the SVG's $nframes (got $fn)" \
			'[ "${fn:-0}" -ge "$nframes" ] && [ "$fn" -le $((nframes + 1)) ]'
		expect "render $v: lasts as long as the SVG ($duration s; got $fd s)" \
			'awk -v d="$fd" -v want="$duration" "BEGIN { exit !(d >= want - 0.2 && d <= want + 0.5) }"'
	done
	"$ATTNVIZ" --render "$tmp/demo.txt" -o "$tmp/demo2.gif" --size "$size" --pause 0.2 --scale 2 >/dev/null 2>"$err"
	ffprobe -v error -select_streams v:0 -show_entries stream=width,height -of default=nw=1 "$tmp/demo2.gif" >"$tmp/probe2" 2>"$err"
	expect "render gif --scale 2: twice the pixels ($((W * 20))x$((H * 40)))" \
		'[ "$(sed -n "s/^width=//p" "$tmp/probe2")" = $((W * 20)) ] && [ "$(sed -n "s/^height=//p" "$tmp/probe2")" = $((H * 40)) ]'
	expect "render gif: a GIF with its own palette" 'grep -q "^codec_name=gif" "$tmp/probe" || head -c 6 "$tmp/demo.gif" | grep -q GIF89a'
	expect "render mp4: H.264 in yuv420p" 'grep -q "^codec_name=h264" "$tmp/probe" && grep -q "^pix_fmt=yuv420p" "$tmp/probe"'
	# the first frame, drawn: the screen at the start of the demo (not a blank page)
	ffmpeg -v error -nostdin -y -i "$tmp/demo.gif" -frames:v 1 "$tmp/gif0.png" 2>"$err"
	expect "render gif: its first frame is a drawn screen (not blank)" '[ -s "$tmp/gif0.png" ] && [ "$(wc -c <"$tmp/gif0.png")" -gt 10000 ]'
else
	skip_external "render gif and mp4" "ffmpeg, ffprobe or rsvg-convert"
fi

# ---------------------------------------------------------------- the legend's bars, drawn (issue 26)
# A legend's bars ▁…▇ are block elements: drawn as rectangles, not as text a font
# may lack (a fallback font's boxes, stretched). Measured on rsvg-convert's PNG
# (what a GIF or MP4 is made of): in the cell of the bar of k eighths, the pixels
# of the cell's own background (its top-left pixel's colour) are (8 - k)/8 of
# its 10 × 20, within a row of pixels either way.
if external rsvg-convert ffmpeg xmllint; then
	printf 'load mask\ngoto softmax\npause\n' >"$tmp/legend.txt"
	"$ATTNVIZ" --render "$tmp/legend.txt" -o "$tmp/legend.svg" --size 100x30 --pause 1 >/dev/null 2>"$err"
	rsvg-convert "$tmp/legend.svg" -o "$tmp/legend.png" 2>>"$err"
	# the first row holding the bars, and their column (xmllint's text, one cell a character)
	LH=30
	lrow=0
	r=1
	while [ "$r" -le "$LH" ]; do
		line=$(xmllint --xpath "string(//*[@id='f0']/*[local-name()='text'][$r])" "$tmp/legend.svg")
		case $line in *▁▂▃▄▅▆▇*)
			lrow=$r
			pre=${line%%▁▂▃▄▅▆▇*}
			lcol=$(printf "%s" "$pre" | LC_ALL=C.UTF-8 wc -m)
			break ;;
		esac
		r=$((r + 1))
	done
	if [ "$lrow" -eq 0 ]; then
		not_ok "render: the legend's bars are in the first frame's text"
	else
		ffmpeg -v error -nostdin -y -i "$tmp/legend.png" -vf "crop=70:20:$((lcol * 10)):$(((lrow - 1) * 20))" \
			-f rawvideo -pix_fmt rgb24 "$tmp/legend.rgb" 2>>"$err"
		# one line per pixel, row by row: r g b
		# one line per pixel, row by row: r g b
		od -An -v -tu1 -w3 "$tmp/legend.rgb" | awk '
			{ px[NR - 1] = $1 " " $2 " " $3 }
			END {
				bad = ""
				for (k = 1; k <= 7; k++) {
					x0 = (k - 1) * 10; bg = px[x0]; fg = px[19 * 70 + x0]; top = 20 - 2.5 * k; n = 0
					for (y = 0; y < 20; y++) for (x = x0; x < x0 + 10; x++) {
						p = px[y * 70 + x]
						if ((y + 1 <= top && p != bg) || (y >= top && p != fg)) n++
					}
					if (n > 0 || fg == bg) bad = bad " bar " k ": " n " pixels off;"
				}
				if (bad != "") { print bad; exit 1 }
			}' >"$tmp/bars" 2>&1
		expect "render: the legend's bars are drawn as bars of 1/8 to 7/8 of their cell (rsvg-convert's PNG)" \
			'[ $? -eq 0 ]' "$(cat "$tmp/bars")"
	fi
	check "render: a bar's glyph stays in the text, invisible" grep -q 'fill-opacity="0">▁▂▃▄▅' "$tmp/legend.svg"
else
	skip_external "render: the legend's bars, drawn" "rsvg-convert, ffmpeg or xmllint"
fi

# ---------------------------------------------------------------- a signal stops a video (issue 27, finding 7)
# A hanging rsvg-convert, then a slow ffmpeg (fakes on PATH): INT, TERM and HUP
# are passed to the tool, the temporary folder goes, nothing is written, and
# attnviz ends with 128 + the signal.
mkdir -p "$tmp/hang" "$tmp/slowff" "$tmp/vtmp"
printf '#!/bin/sh\ntouch "%s/started"\nexec sleep 30\n' "$tmp" >"$tmp/hang/rsvg-convert"
printf '#!/bin/sh\nexit 0\n' >"$tmp/hang/ffmpeg"
printf '#!/bin/sh\nfor a; do o=$a; done; : >"$o"; exit 0\n' >"$tmp/slowff/rsvg-convert"
printf '#!/bin/sh\ntouch "%s/started"\nexec sleep 30\n' "$tmp" >"$tmp/slowff/ffmpeg"
chmod +x "$tmp/hang/rsvg-convert" "$tmp/hang/ffmpeg" "$tmp/slowff/rsvg-convert" "$tmp/slowff/ffmpeg"
for case in hang:INT:130 hang:TERM:143 hang:HUP:129 slowff:TERM:143; do
	dirn=${case%%:*} rest=${case#*:}
	sig=${rest%:*} want=${rest#*:}
	rm -f "$tmp/started" "$tmp/v.gif"
	PATH="$tmp/$dirn:$PATH" TMPDIR="$tmp/vtmp" "$ATTNVIZ" --render "$tmp/demo.txt" -o "$tmp/v.gif" >/dev/null 2>"$err" &
	vpid=$!
	i=0
	while [ ! -e "$tmp/started" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	kill -"$sig" "$vpid"
	i=0
	while kill -0 "$vpid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	if kill -0 "$vpid" 2>/dev/null; then
		kill -KILL "$vpid"
		not_ok "render $dirn, SIG$sig: attnviz still running 5 s later"
		wait "$vpid" 2>/dev/null
		continue
	fi
	wait "$vpid"
	vrc=$?
	expect "render $dirn, SIG$sig: exit $want, nothing written, the temporary folder gone (exit $vrc)" \
		'[ $vrc -eq $want ] && [ ! -e "$tmp/v.gif" ] && [ -z "$(ls "$tmp/vtmp")" ]'
done

# ---------------------------------------------------------------- a lesson to start from, a theme
printf 'goto softmax\nskip\n' >"$tmp/short.txt"
"$ATTNVIZ" --render "$tmp/short.txt" mask -o "$tmp/short.cast" --pause 2 2>"$err"
head -n 1 "$tmp/short.cast" >"$tmp/header.json"
printf '{"width": 120, "height": 35, "idle_time_limit": 2, "title": "%s"}\n' "$MASK_TITLE" >"$tmp/want.json"
check "render: LESSON starts the demo (its title), 120x35 unless --size says" \
	"$BUILD/tests/jsoncmp" --only-expected-keys "$tmp/want.json" "$tmp/header.json"
"$ATTNVIZ" --render "$tmp/short.txt" -o "$tmp/light.svg" --theme light 2>"$err"
expect "render --theme light: the light theme's own background (white), not the terminal's black" \
	'grep -q "^<rect width=\"1200\" height=\"700\" fill=\"#ffffff\"/>" "$tmp/light.svg"'
"$ATTNVIZ" --render "$tmp/short.txt" -o "$tmp/dark.svg" 2>"$err"
expect "render: the default theme on black" 'grep -q "^<rect width=\"1200\" height=\"700\" fill=\"#000000\"/>" "$tmp/dark.svg"'
printf 'goto softmax\nbogus-command\ngoto weighted\n' >"$tmp/bad.txt"
"$ATTNVIZ" --render "$tmp/bad.txt" -o "$tmp/bad.svg" --pause 0.5 2>"$err"
rc=$?
expect "render: a line that fails is said with its line, and the demo goes on" \
	'grep -q "bad.txt:2: .*bogus-command" "$err" && grep -q "stage: weighted" "$tmp/bad.svg"'
expect "render: a line that failed makes the exit status 1 (the file written all the same, got $rc)" \
	'[ $rc -eq 1 ] && grep -q "1 demo line failed (said above): exit 1" "$err"'

# ---------------------------------------------------------------- --record: the title, idle_time_limit, --record-plain
printf 'load mask\ngoto scores\nwait 0.2\ngoto softmax\nwait 0.2\ngoto weighted\n' >"$tmp/rec.txt"
tm new-session -d -s rec -x 100 -y 30 \
	"env -u NO_COLOR TERM=xterm-256color LANG=C.UTF-8 LC_ALL=C.UTF-8 XDG_STATE_HOME=$tmp/state sh -c 'cd \"$SRCDIR\" && \"$ATTNVIZ\" --record \"$tmp/rec.cast\" --record-plain --demo \"$tmp/rec.txt\"; echo EXITED \$?; exec sleep 600'"
shows "record: the demo plays to its end" rec 'stage: weighted'
keys rec q
wait_for rec 'demo left' >/dev/null
keys rec q
shows "record: quits" rec 'EXITED 0'
tm kill-session -t rec
head -n 1 "$tmp/rec.cast" >"$tmp/header.json"
printf '{"version": 2, "idle_time_limit": 3, "title": "%s"}\n' "$MASK_TITLE" >"$tmp/want.json"
check "record: titled with the lesson the demo loaded (not the built-in one), idle_time_limit 3" \
	"$BUILD/tests/jsoncmp" --only-expected-keys "$tmp/want.json" "$tmp/header.json"
expect "record --record-plain: no scroll region, no line insert or delete" \
	'[ -s "$tmp/rec.cast" ] && ! grep -Eq "u001b\\[[0-9]*(;[0-9]+)?[rLM]" "$tmp/rec.cast"'

# ---------------------------------------------------------------- a browser draws it
chrome=
for c in chromium chromium-browser google-chrome; do
	external "$c" && chrome=$c && break
done
if [ -n "$chrome" ]; then
	# The demo again with 4-second pauses: the pause on line 10 is on screen from 5 s to 9 s.
	"$ATTNVIZ" --render "$tmp/demo.txt" -o "$tmp/slow.svg" --size "$size" --pause 4 2>"$err"
	k=$(grep -o '<g id="f[0-9]*" data-t="[0-9.]*" data-line="10"' "$tmp/slow.svg" | head -n 1 | sed 's/<g id="f\([0-9]*\)".*/\1/')
	check "chromium: the frame of the pause on line 10 starts at 5 s" grep -q "<g id=\"f$k\" data-t=\"5.000\"" "$tmp/slow.svg"
	# what that frame alone looks like: the same SVG, no animation, only frame k shown
	sed -e 's/<set [^>]*\/>//g' -e 's/visibility="visible"/visibility="hidden"/' \
		-e "s/<g id=\"f$k\" \\([^>]*\\)visibility=\"hidden\"/<g id=\"f$k\" \\1visibility=\"visible\"/" \
		"$tmp/slow.svg" >"$tmp/still.svg"
	shot() { # shot SVG PNG [MS]: a screenshot once loaded, or MS milliseconds (the browser's virtual time) after
		timeout 120 "$chrome" --headless --disable-gpu --no-sandbox --hide-scrollbars \
			--window-size=$((W * 10)),$((H * 20)) ${3:+--virtual-time-budget=$3} --screenshot="$2" "file://$1" \
			>/dev/null 2>&1
	}
	shot "$tmp/slow.svg" "$tmp/at7.png" 7000
	shot "$tmp/still.svg" "$tmp/still.png"
	shot "$tmp/slow.svg" "$tmp/at0.png"
	# a blank page compresses to a few hundred bytes; a screen of text and colour does not
	expect "chromium: loads the SVG and draws a screen (not blank)" '[ -s "$tmp/at7.png" ] && [ "$(wc -c <"$tmp/at7.png")" -gt 20000 ]'
	check "chromium: at 7 s it shows the frame of line 10 (stage: weighted), pixel for pixel" cmp -s "$tmp/at7.png" "$tmp/still.png"
	expect "chromium: at 0 s it shows something else (the comparison can fail)" '! cmp -s "$tmp/at0.png" "$tmp/still.png"'
	frame_text "$k" >"$tmp/frame-k"
	check "chromium: that frame is the weighted stage" grep -q 'stage: weighted' "$tmp/frame-k"
else
	skip_external "chromium: loads the SVG and draws a screen" "chromium"
fi
if command -v rsvg-convert >/dev/null 2>&1; then
	rsvg-convert "$tmp/demo.svg" -o "$tmp/first.png" 2>"$err"
	expect "rsvg-convert: draws the first frame (not blank)" '[ -s "$tmp/first.png" ] && [ "$(wc -c <"$tmp/first.png")" -gt 20000 ]'
else
	skip "rsvg-convert: draws the first frame" "rsvg-convert not installed"
fi

finish
