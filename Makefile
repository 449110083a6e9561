# attnviz — build, test, run, install.  `make run` and `make test` do all the set-up.
#
#   make              build ./build/attnviz (readline when pkg-config finds it)
#   make run          check dependencies, build, open the default lesson
#   make test         check dependencies, build, run every test; ends "N passed, N failed, N skipped"
#   make deps         check (and on Debian/Ubuntu install) the build dependencies
#   make READLINE=0   build with the built-in line editor instead of GNU readline
#   make SAN=1        build with AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz         build and run the libFuzzer target for the lesson loader (clang);
#                     fuzz-cmd, fuzz-theme, fuzz-demo, fuzz-safetensors, fuzz-tokenizer: command
#                     lines, themes, demo scripts, weight files, tokenizer.json and text
#   make bench        print speed and memory figures
#   make install PREFIX=/usr/local   binary, lessons, themes, the models of assets/models, message catalogues, man page
#   make pot          refresh po/attnviz.pot from the sources and merge it into po/*.po

CC       ?= cc
# the one C++ file (src/base/shortest.cc, a wrapper of double-conversion) is
# compiled by the C compiler's own C++ driver: clang++ beside clang (the
# fuzzers' and sanitizers' runtimes must be one compiler's), c++ beside cc
ifeq ($(origin CXX),default)
CXX := $(if $(findstring clang,$(CC)),$(subst clang,clang++,$(CC)),$(if $(findstring gcc,$(CC)),$(subst gcc,g++,$(CC)),c++))
endif
PREFIX   ?= /usr/local
DESTDIR  ?=
PKG_CONFIG ?= pkg-config
VERSION  := 1.0.0

# Readline is optional: on when pkg-config knows it, unless READLINE=0.
ifeq ($(origin READLINE), undefined)
READLINE := $(shell $(PKG_CONFIG) --exists readline 2>/dev/null && echo 1 || echo 0)
endif

BUILD ?= build
ifeq ($(READLINE),0)
BUILD := $(BUILD)-norl
endif
ifeq ($(SAN),1)
BUILD := $(BUILD)-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif

WARN := -Wall -Wextra -Wpedantic -Wformat=2 -Wshadow -Wstrict-prototypes -Wmissing-prototypes
# -O3: the compiler vectorises the passes' own loops (a row's Σ p·v in the flash
# tiles ran a number at a time at -O2); it never reorders a sum of doubles without
# -ffast-math, so the numbers are the same bits as at -O2.
CFLAGS ?= -O3 -g
# -ffp-contract=off: the compiler never fuses a·b + c into one rounding, so each
# loop keeps the bits it is written for; the fused matrix kernels ask for fma
# where they mean it (see src/base/gemm.c).
FPFLAGS := -ffp-contract=off
# glibc's vector maths, libmvec (x86-64): a softmax's exp four at a time beside a
# fused kernel (src/base/vexp.c); without it, exp a cell at a time
MVEC := $(shell printf 'int main(void) { return 0; }\n' | $(CC) -x c - -lmvec -o /dev/null 2>/dev/null && echo 1)
MVEC_CFLAGS := $(if $(MVEC),-DHAVE_MVEC=1)
MVEC_LIBS := $(if $(MVEC),-lmvec)
ALL_CFLAGS := -std=c11 $(WARN) $(CFLAGS) $(FPFLAGS) $(SANFLAGS) $(MVEC_CFLAGS) -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE \
	-DATTNVIZ_VERSION='"$(VERSION)"' -DATTNVIZ_SHARE='"$(PREFIX)/share/attnviz"' \
	-DATTNVIZ_LOCALEDIR='"$(PREFIX)/share/locale"' -DHAVE_READLINE=$(READLINE) -Isrc -I$(BUILD)

# double-conversion: --dump's and a saved lesson's numbers in their shortest exact digits
PKGS := ncursesw libcjson libpcre2-8 icu-uc double-conversion
ifeq ($(READLINE),1)
PKGS += readline
endif
DEP_CFLAGS = $(filter-out -D_XOPEN_SOURCE=% -D_DEFAULT_SOURCE,$(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null))
DEP_LIBS   = $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) $(MVEC_LIBS) -lm
CMOCKA_CFLAGS = $(filter-out -D_XOPEN_SOURCE=% -D_DEFAULT_SOURCE,$(shell $(PKG_CONFIG) --cflags cmocka 2>/dev/null))
CMOCKA_LIBS   = $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null)

# The source lives in folders that are its layers (src/README.md); every
# src/*/*.c (and src/*/*/*.c: a layer's sub-folder, as src/engine/variants/)
# is library code the tests link against, main.c is the program.
# The two line editors are chosen by READLINE.
SRC_ALL := $(wildcard src/*/*.c src/*/*/*.c)
SRC_CXX := $(wildcard src/*/*.cc)
HDRS    := $(wildcard src/*/*.h src/*/*/*.h)
LIB_SRC := $(filter-out src/tui/lineedit-readline.c src/tui/lineedit-basic.c,$(SRC_ALL))
ifeq ($(READLINE),1)
LIB_SRC += src/tui/lineedit-readline.c
else
LIB_SRC += src/tui/lineedit-basic.c
endif
LIB_OBJ := $(patsubst src/%.c,$(BUILD)/%.o,$(LIB_SRC)) $(patsubst src/%.cc,$(BUILD)/%.o,$(SRC_CXX)) $(BUILD)/default_lesson.o
BIN     := $(BUILD)/attnviz
# The program's strings in other languages (GNU gettext): po/LANG.po → LANG/LC_MESSAGES/attnviz.mo,
# in $(BUILD)/locale (found beside the binary) and installed under $(PREFIX)/share/locale.
PO_LANGS := $(patsubst po/%.po,%,$(wildcard po/*.po))
MO := $(foreach l,$(PO_LANGS),$(BUILD)/locale/$(l)/LC_MESSAGES/attnviz.mo)
UNIT_SRC := $(wildcard tests/unit_*.c)
UNIT_BIN := $(patsubst tests/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
TOOL_BIN := $(BUILD)/tests/jsoncmp $(BUILD)/tests/svgfit

.PHONY: all run run-built test test-built deps bench install uninstall clean check-deps pot
all: $(BIN) $(MO)

$(BUILD)/%.o: src/%.c $(HDRS) $(BUILD)/config.stamp | $(BUILD)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(DEP_CFLAGS) -c $< -o $@

# no exceptions (the wrapper calls one function that throws none), so nothing of libstdc++ is linked but
# what libdouble-conversion itself needs
CXXFLAGS_ALL = -std=c++11 -Wall -Wextra -Wpedantic $(CFLAGS) $(FPFLAGS) $(SANFLAGS) -fno-exceptions -Isrc
$(BUILD)/%.o: src/%.cc $(HDRS) $(BUILD)/config.stamp | $(BUILD)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS_ALL) $(DEP_CFLAGS) -c $< -o $@

# The settings compiled in (the share directory comes from PREFIX): when one
# changes, everything is rebuilt, so `make install PREFIX=…` after `make`
# installs a binary that looks for its lessons where they were put.
CONFIG := PREFIX=$(PREFIX) VERSION=$(VERSION) READLINE=$(READLINE) SAN=$(SAN) CC=$(CC) CXX=$(CXX) CFLAGS=$(CFLAGS)
$(BUILD)/config.stamp: FORCE | $(BUILD)
	@echo '$(CONFIG)' | cmp -s - $@ || echo '$(CONFIG)' > $@
.PHONY: FORCE
FORCE:

# The default lesson is compiled in, so `attnviz` works from any directory.
$(BUILD)/default_lesson.c: lessons/selfattn.json | $(BUILD)
	{ echo '/* generated from lessons/selfattn.json by the Makefile */'; \
	  echo '#include <stddef.h>'; \
	  echo 'const unsigned char default_lesson_json[] = {'; \
	  od -An -v -tx1 $< | sed -e 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '0x00 };'; \
	  echo 'const size_t default_lesson_len = sizeof default_lesson_json - 1;'; } > $@
$(BUILD)/default_lesson.o: $(BUILD)/default_lesson.c
	$(CC) -std=c11 $(CFLAGS) $(SANFLAGS) -c $< -o $@

$(BIN): $(BUILD)/main.o $(LIB_OBJ)
	$(CC) $(CFLAGS) $(SANFLAGS) $^ -o $@ $(DEP_LIBS)

$(BUILD):
	mkdir -p $(BUILD) $(BUILD)/tests

# -c: a format string whose translation lost or changed an argument is an error.
$(BUILD)/locale/%/LC_MESSAGES/attnviz.mo: po/%.po | $(BUILD)
	@mkdir -p $(dir $@)
	msgfmt -c -o $@ $<

# Every source file, so a string wrapped anywhere is found; the keywords are i18n.h's.
pot:
	xgettext --from-code=UTF-8 --language=C --keyword=_ --keyword=N_ --add-comments=TRANSLATORS: \
		--package-name=attnviz --package-version=$(VERSION) --msgid-bugs-address='' \
		-o po/attnviz.pot $(sort src/main.c $(SRC_ALL) $(HDRS))
	for p in $(wildcard po/*.po); do msgmerge -q --update --backup=none $$p po/attnviz.pot; done

$(BUILD)/tests/unit_%: tests/unit_%.c $(LIB_OBJ) $(HDRS) | $(BUILD)
	$(CC) $(ALL_CFLAGS) $(DEP_CFLAGS) $(CMOCKA_CFLAGS) $< $(LIB_OBJ) -o $@ $(CMOCKA_LIBS) $(DEP_LIBS)
# the helpers the unit tests share (tests/unit_common.h, unit_tmpdir.h)
$(UNIT_BIN): $(wildcard tests/unit_*.h)

$(BUILD)/tests/jsoncmp: tests/jsoncmp.c | $(BUILD)
	$(CC) $(ALL_CFLAGS) $(DEP_CFLAGS) $< -o $@ $(DEP_LIBS)

$(BUILD)/tests/svgfit: tests/svgfit.c | $(BUILD)
	$(CC) $(ALL_CFLAGS) $< -o $@

check-deps deps:
	@sh assets/deps.sh $(if $(filter 0,$(READLINE)),--no-readline) $(if $(filter test test-built,$(MAKECMDGOALS)),--test)

# deps may install readline, which changes the build directory: what follows
# it runs in a new make that detects again.
run: deps
	@$(MAKE) --no-print-directory run-built

run-built: $(BIN)
	$(BIN) $(ARGS)

test: deps
	@$(MAKE) --no-print-directory test-built

test-built: $(BIN) $(MO) $(UNIT_BIN) $(TOOL_BIN)
	@sh tests/run.sh $(BUILD)

bench: $(BIN) $(BUILD)/tests/bench_gemm
	@sh tests/bench.sh $(BIN)

$(BUILD)/tests/bench_gemm: tests/bench_gemm.c $(LIB_OBJ) $(HDRS) | $(BUILD)
	$(CC) $(ALL_CFLAGS) $(DEP_CFLAGS) $< $(LIB_OBJ) -o $@ $(DEP_LIBS)


# libFuzzer targets (clang), built with ASan + UBSan from the same sources:
# fuzz (the lesson loader), fuzz-cmd (command lines on each shipped lesson),
# fuzz-theme (the theme reader), fuzz-demo (the demo-script parser),
# fuzz-safetensors (a model's weights file), fuzz-tokenizer (a tokenizer.json and a text).
# FUZZ_SECONDS=N runs each for N seconds; new finds go to build-fuzz/*-corpus.
FUZZ_BUILD := build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS := -std=c11 -g -O1 $(FPFLAGS) -fsanitize=fuzzer-no-link,address,undefined -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE \
	-DATTNVIZ_VERSION='"$(VERSION)"' -DATTNVIZ_SHARE='"$(PREFIX)/share/attnviz"' \
	-DATTNVIZ_LOCALEDIR='"$(PREFIX)/share/locale"' -DHAVE_READLINE=0 -Isrc \
	$(filter-out -D_XOPEN_SOURCE=% -D_DEFAULT_SOURCE,$(shell $(PKG_CONFIG) --cflags ncursesw libcjson libpcre2-8 icu-uc double-conversion 2>/dev/null))
FUZZ_LIBS := $(shell $(PKG_CONFIG) --libs ncursesw libcjson libpcre2-8 icu-uc double-conversion 2>/dev/null) -lm
FUZZ_OBJ := $(patsubst src/%.c,$(FUZZ_BUILD)/%.o,$(filter-out src/tui/lineedit-readline.c,$(SRC_ALL))) \
	$(patsubst src/%.cc,$(FUZZ_BUILD)/%.o,$(SRC_CXX)) $(FUZZ_BUILD)/default_lesson.o
# Absolute paths: fuzz_cmd works in a temporary directory of its own; crashes are kept in build-fuzz/.
FUZZ_RUN = -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 -artifact_prefix=$(CURDIR)/$(FUZZ_BUILD)/
.PHONY: fuzz fuzz-cmd fuzz-theme fuzz-demo fuzz-safetensors fuzz-tokenizer fuzz-all fuzz-dict
# The fuzz dictionaries, made from the command table and the lesson format's keys (every command and key
# reachable); t_cli.sh checks them.
fuzz-dict:
	sh tests/fuzz/cmddict.sh >tests/fuzz/cmd.dict.tmp && mv tests/fuzz/cmd.dict.tmp tests/fuzz/cmd.dict
	sh tests/fuzz/lessondict.sh >tests/fuzz/lesson.dict.tmp && mv tests/fuzz/lesson.dict.tmp tests/fuzz/lesson.dict
.SECONDARY: $(FUZZ_OBJ)

$(FUZZ_BUILD)/%.o: src/%.c $(HDRS)
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -c $< -o $@
$(FUZZ_BUILD)/%.o: src/%.cc $(HDRS)
	@mkdir -p $(@D)
	clang++ $(filter-out -std=c11,$(FUZZ_CFLAGS)) -std=c++11 -fno-exceptions -c $< -o $@
$(FUZZ_BUILD)/default_lesson.o: $(BUILD)/default_lesson.c
	@mkdir -p $(FUZZ_BUILD)
	clang -std=c11 -g -O1 -c $< -o $@
$(FUZZ_BUILD)/fuzz_%: tests/fuzz_%.c $(FUZZ_OBJ)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_OBJ) -o $@ $(FUZZ_LIBS)

fuzz: $(FUZZ_BUILD)/fuzz_lesson
	mkdir -p $(FUZZ_BUILD)/corpus
	$(FUZZ_BUILD)/fuzz_lesson $(FUZZ_RUN) -max_len=4096 -dict=tests/fuzz/lesson.dict $(FUZZ_BUILD)/corpus tests/fuzz/corpus
fuzz-cmd: $(FUZZ_BUILD)/fuzz_cmd fuzz-dict
	mkdir -p $(FUZZ_BUILD)/cmd-corpus
	$(FUZZ_BUILD)/fuzz_cmd $(FUZZ_RUN) -max_len=1024 -dict=$(CURDIR)/tests/fuzz/cmd.dict \
		$(CURDIR)/$(FUZZ_BUILD)/cmd-corpus $(CURDIR)/tests/fuzz/cmd-corpus
fuzz-theme: $(FUZZ_BUILD)/fuzz_theme
	mkdir -p $(FUZZ_BUILD)/theme-corpus
	$(FUZZ_BUILD)/fuzz_theme $(FUZZ_RUN) -max_len=4096 $(FUZZ_BUILD)/theme-corpus assets/themes tests/bad-themes
fuzz-demo: $(FUZZ_BUILD)/fuzz_demo
	mkdir -p $(FUZZ_BUILD)/demo-corpus
	$(FUZZ_BUILD)/fuzz_demo $(FUZZ_RUN) -max_len=4096 $(FUZZ_BUILD)/demo-corpus lessons/demos
fuzz-safetensors: $(FUZZ_BUILD)/fuzz_safetensors
	mkdir -p $(FUZZ_BUILD)/safetensors-corpus
	$(FUZZ_BUILD)/fuzz_safetensors $(FUZZ_RUN) -max_len=4096 $(FUZZ_BUILD)/safetensors-corpus tests/weights tests/weights/bad
# The corpus: the committed small tokenizers (not GPT-2's 1.3 MB) and the damaged ones.
fuzz-tokenizer: $(FUZZ_BUILD)/fuzz_tokenizer
	mkdir -p $(FUZZ_BUILD)/tokenizer-corpus
	$(FUZZ_BUILD)/fuzz_tokenizer $(FUZZ_RUN) -max_len=65536 $(FUZZ_BUILD)/tokenizer-corpus \
		$(foreach d,qwen smol sp spmeta bad,tests/weights/tokenizers/$(d))
fuzz-all: fuzz fuzz-cmd fuzz-theme fuzz-demo fuzz-safetensors fuzz-tokenizer

install: $(BIN) $(MO)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/attnviz/lessons $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/attnviz
	cp -R lessons/. $(DESTDIR)$(PREFIX)/share/attnviz/lessons/
	if [ -d assets/themes ]; then install -d $(DESTDIR)$(PREFIX)/share/attnviz/themes && cp assets/themes/*.json $(DESTDIR)$(PREFIX)/share/attnviz/themes/; fi
	for m in assets/models/*/config.json; do [ -f "$$m" ] || continue; d=$$(dirname "$$m"); \
		install -d $(DESTDIR)$(PREFIX)/share/attnviz/models/$$(basename "$$d") && \
		install -m 644 "$$d"/*.json "$$d"/*.safetensors $(DESTDIR)$(PREFIX)/share/attnviz/models/$$(basename "$$d")/; done
	install -m 644 assets/attnviz.1 $(DESTDIR)$(PREFIX)/share/man/man1/attnviz.1
	for l in $(PO_LANGS); do \
		install -d $(DESTDIR)$(PREFIX)/share/locale/$$l/LC_MESSAGES && \
		install -m 644 $(BUILD)/locale/$$l/LC_MESSAGES/attnviz.mo $(DESTDIR)$(PREFIX)/share/locale/$$l/LC_MESSAGES/attnviz.mo; \
	done

uninstall:
	rm -rf $(DESTDIR)$(PREFIX)/bin/attnviz $(DESTDIR)$(PREFIX)/share/attnviz $(DESTDIR)$(PREFIX)/share/man/man1/attnviz.1
	for l in $(PO_LANGS); do rm -f $(DESTDIR)$(PREFIX)/share/locale/$$l/LC_MESSAGES/attnviz.mo; done

clean:
	rm -rf build build-norl build-san build-norl-san build-fuzz
