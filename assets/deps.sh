#!/bin/sh
# assets/deps.sh [--test] [--no-readline] — check attnviz's build dependencies and,
# on Debian/Ubuntu, install what is missing (as root, or through password-less sudo).
# Otherwise print the exact command for Debian/Ubuntu, Fedora and macOS, and fail.
test_deps=0
readline=1
for a in "$@"; do
	case "$a" in
	--test) test_deps=1 ;;
	--no-readline) readline=0 ;;
	esac
done

missing_pc=""
missing_deb=""
missing_rpm=""
missing_brew=""
need() { # pkg-config name, Debian package, Fedora package, Homebrew formula
	if ! pkg-config --exists "$1" 2>/dev/null; then
		missing_pc="$missing_pc $1"
		missing_deb="$missing_deb $2"
		missing_rpm="$missing_rpm $3"
		missing_brew="$missing_brew $4"
	fi
}
if ! command -v pkg-config >/dev/null 2>&1; then
	missing_pc="pkg-config"
	missing_deb="pkg-config"; missing_rpm="pkgconf-pkg-config"; missing_brew="pkg-config"
fi
command -v cc >/dev/null 2>&1 || { missing_deb="$missing_deb gcc make"; missing_rpm="$missing_rpm gcc make"; missing_pc="$missing_pc cc"; }
# one C++ file wraps double-conversion (src/base/shortest.cc)
command -v c++ >/dev/null 2>&1 || { missing_deb="$missing_deb g++"; missing_rpm="$missing_rpm gcc-c++"; missing_pc="$missing_pc c++"; }
if command -v pkg-config >/dev/null 2>&1; then
	need ncursesw libncurses-dev ncurses-devel ncurses
	need libcjson libcjson-dev cjson-devel cjson
	# a model's tokenizer.json: its regexes through PCRE2, its Unicode normalizers (NFC) through ICU
	need libpcre2-8 libpcre2-dev pcre2-devel pcre2
	need icu-uc libicu-dev libicu-devel icu4c
	# numbers printed in their shortest exact digits (--dump, saved lessons): Google's double-conversion
	need double-conversion libdouble-conversion-dev double-conversion-devel double-conversion
	# readline is wanted, not needed: without it the built-in line editor is used
	if [ "$readline" = 1 ] && ! pkg-config --exists readline 2>/dev/null; then
		optional_deb="libreadline-dev"
	fi
	[ "$test_deps" = 1 ] && need cmocka libcmocka-dev libcmocka-devel cmocka
fi
# msgfmt compiles po/*.po, the program's strings in other languages
if ! command -v msgfmt >/dev/null 2>&1; then
	missing_pc="$missing_pc msgfmt"; missing_deb="$missing_deb gettext"; missing_rpm="$missing_rpm gettext"; missing_brew="$missing_brew gettext"
fi
if [ "$test_deps" = 1 ] && ! command -v tmux >/dev/null 2>&1; then
	missing_pc="$missing_pc tmux"; missing_deb="$missing_deb tmux"; missing_rpm="$missing_rpm tmux"; missing_brew="$missing_brew tmux"
fi
optional_deb=${optional_deb:-}
if [ -z "$missing_pc" ] && [ -z "$optional_deb" ]; then
	exit 0
fi

[ -n "$missing_pc" ] && echo "attnviz: missing build dependencies:$missing_pc" >&2
if command -v apt-get >/dev/null 2>&1; then
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then
		if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo=none; fi
	fi
	if [ "$sudo" != none ]; then
		echo "attnviz: installing with apt-get:$missing_deb $optional_deb" >&2
		if $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing_deb $optional_deb >/dev/null 2>&1 ||
		   { $sudo apt-get update -q >/dev/null 2>&1 &&
		     $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing_deb $optional_deb >/dev/null; }; then
			exit 0
		fi
		# the optional one may be what failed: try without it
		if [ -n "$missing_deb" ] && [ -n "$optional_deb" ] &&
		   $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing_deb >/dev/null 2>&1; then
			missing_pc=""
		fi
		[ -n "$missing_pc" ] && echo "attnviz: apt-get could not install them." >&2
	fi
fi
if [ -z "$missing_pc" ]; then
	# only readline is missing: build with the built-in line editor
	echo "attnviz: GNU readline not found: using the built-in line editor (for readline: sudo apt-get install libreadline-dev)" >&2
	exit 0
fi
cat >&2 <<MSG
Install them, then run make again:
  Debian/Ubuntu:  sudo apt-get install$missing_deb
  Fedora:         sudo dnf install$missing_rpm
  macOS:          brew install$missing_brew
MSG
exit 1
