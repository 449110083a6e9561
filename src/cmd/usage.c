/* usage.c: what `attnviz --help` says, in the program's language (usage.h). */
#include "cmd/usage.h"

#include "base/i18n.h"

/* The usage lines and the options, each its own string: one string may hold only 4095 characters in
 * ISO C, and a string apart lets an option be added without the longer strings' translations going stale. */
static const char *const usage_text = N_(
	"usage: attnviz [OPTIONS] [LESSON]\n"
	"       attnviz --check [--strict] FILE...\n"
	"       attnviz --dump FILE [--train STEPS --lr LR]\n"
	"       attnviz --bench FILE [--repeat R] [--edits]\n"
	"       attnviz --new NAME\n"
	"       attnviz --tokenize TEXT --model DIR\n"
	"       attnviz --model DIR [TEXT | --prompt TEXT | --ids ID,ID,...] [--plain | --dump | --check]\n"
	"       attnviz --handout LESSON -o FILE.html|FILE.md [--lang zh]\n"
	"       attnviz --slides LESSON -o DECK.html|DECK.tex [--lang zh] [--key end|notes|none]\n"
	"       attnviz --export FORMAT --stage NAME [--layer L] [--head H] [--matrix NAME] LESSON -o PATH\n"
	"               [--precision N] [--scale shared|pane] [--aspect 16:9|4:3|wide]\n"
	"       attnviz --render DEMO [LESSON] -o FILE.svg|.cast|.gif|.mp4 [--size 120x35]\n"
	"               [--theme NAME] [--pause SECONDS]\n"
	"\n"
	"Step through attention, the Transformer block around it and its gradients, number by number.\n"
	"LESSON is a lesson file or a name (e.g. mask) looked up in $ATTNVIZ_LESSONS, ./lessons,\n"
	"../lessons beside the program and %s/lessons;\n"
	"without one, the built-in \"I saw a saw\".\n"
	"\n");
/* the options: a second string, as C99 promises string literals of 4095 bytes and no more */
static const char *const options_text = N_(
	"  --plain          line-oriented REPL instead of the full-screen view\n"
	"                   (automatic when stdin or stdout is not a terminal, or TERM=dumb)\n"
	"  --lang en|zh     language of the narration and of the program's words\n"
	"                   (default: Chinese in a Chinese locale, else English)\n"
	"  --check FILE...  check lessons; one summary line each; exit 1 if any is unusable\n"
	"  --strict         with --check: a text without both English and Chinese, or a key\n"
	"                   given twice, is an error\n"
	"  --dump FILE      print every stage of the computation as JSON (with \"backward\":\n"
	"                   the loss and every gradient)\n"
	"  --dump-weights   with --model DIR --dump: each layer's weights too (left out\n"
	"                   by default: a real model's are hundreds of MB of text)\n"
	"  --train STEPS --lr LR  with --dump: first STEPS steps of gradient descent on\n"
	"                   every weight and bias, then the dump and the losses\n"
	"  --bench FILE     time the computation alone (--repeat R times, default 5):\n"
	"                   the median of the whole (also in CPU time), the products'\n"
	"                   multiply-adds (madds=) and each stage's median; with --edits,\n"
	"                   of a `set` of W_o, W_v, W_q, W_k and an input cell instead\n"
	"  --new NAME       write a small starter lesson to NAME.json (never over a file)\n"
	"  --tokenize TEXT --model DIR  TEXT as a real model's tokens, one a line: index,\n"
	"                   id and the token as text (\u00b7 a space); DIR is a Hugging Face\n"
	"                   model folder (its tokenizer.json) or a tokenizer.json\n"
	"  --model DIR      step through a real model (a Hugging Face folder: config.json,\n"
	"                   model.safetensors, tokenizer.json) on TEXT or --prompt TEXT,\n"
	"                   or on token ids (--ids 1,2,3: a folder without a tokenizer)\n"
	"  --export FORMAT  write a stage as svg, png, csv, md, tex or json to -o PATH (- for stdout);\n"
	"                   --stage NAME (e.g. softmax) or --matrix NAME (e.g. weights) says what,\n"
	"                   --head H which head (from 0, default 0); csv holds one matrix\n"
	"  --layer L        with --export: layer L (from 0, default 0) of a lesson with layers;\n"
	"                   eL: the encoder's layer L of an encoder\u2013decoder\n"
	"  --precision N    with --export svg, md or tex and --handout: N decimals (0 to 10)\n"
	"  --scale shared|pane  with --export svg: one colour scale per meaning across\n"
	"                   the figure (default), or one per pane\n"
	"  --aspect 16:9|4:3|wide  with --export svg: the panes wrap into rows nearest this\n"
	"                   shape (default 16:9; wide: one row)\n"
	"  --handout LESSON -o FILE.html|FILE.md  a handout to print: every step with its\n"
	"                   narration, figure, formula and question, and an answer key\n"
	"                   (HTML: one self-contained file; Markdown: FILE-stepNN.svg\n"
	"                   beside it); --lang zh in Chinese, --theme NAME the figures'\n"
	"                   palette\n");
/* --seed, apart so that the longer strings' translations stand as they are. */
static const char *const options_seed = N_(
	"  --seed S         generate samples (the plain REPL, the view): its tokens drawn from\n"
	"                   the next stage's top k at its temperature, the generator seeded\n"
	"                   with S (0 to 2^64 - 1): the same S, the same tokens; `seed S`\n"
	"                   and `seed off` on the command line\n");
/* --token, --tile, apart so that the longer strings' translations stand as they are. */
static const char *const options_token = N_(
	"  --token T        with --export of the decode stage: as decode step T shows it\n"
	"                   (the cache up to token T; later tokens' cells blank)\n"
	"  --tile Q,K       with --export of the flash stage: as tile (Q, K) shows it\n"
	"                   (query block Q against key block K; later tiles blank)\n"
	"  --scale N        with --export png (-o FILE.png, through rsvg-convert) and --render\n"
	"                   to .gif or .mp4: N pixels per pixel of the figure (0.25 to 8)\n"
	"  --clean          with --render: frames for slides, without the key line, the\n"
	"                   status line or the how-to-answer prompts\n");
/* --key, apart so that the longer strings' translations stand as they are. */
static const char *const options_key = N_(
	"  --key end|separate|none  with --handout: the answer key after the steps\n"
	"                   (default), in a file of its own beside it (FILE-key.html,\n"
	"                   FILE-key.md), or left out: the students' copy\n");
/* --slides, --standalone, apart so that the longer strings' translations stand as they are. */
static const char *const options_slides = N_(
	"  --slides LESSON -o DECK.html|DECK.tex  slides for the class: a title slide, then\n"
	"                   one slide a step with its figure, formula and question, the\n"
	"                   narration as speaker notes; each answer on the slide after its\n"
	"                   question (--key notes: in the question's notes; --key none:\n"
	"                   nowhere). HTML: one self-contained file (arrow keys or space\n"
	"                   move, printed one slide a page); TeX: a beamer deck for xelatex,\n"
	"                   its figures PNG files beside it (DECK-stepNN.png, through\n"
	"                   rsvg-convert); --lang, --precision, --numbers, --theme as for\n"
	"                   --handout\n"
	"  --standalone     with --export tex: a standalone document, the figure cropped to\n"
	"                   its content, for \\includegraphics in a paper or slides\n");
/* --view, apart so that the longer strings' translations stand as they are. */
static const char *const options_view = N_(
	"  --view model     with --export svg (no --stage): every layer \u00d7 head as a small\n"
	"                   heatmap of its attention weights (0 to 1) labelled \"L0 H1\" with\n"
	"                   its previous-token, first-token, diagonal and induction scores\n"
	"                   (induction: a model's, --model DIR --prompt TEXT; a lesson's: \u2014)\n");
/* The rest of --help (one string may hold only 4095 characters in ISO C). */
static const char *const options_text2 = N_(
	"  --numbers auto|on|off  with --export svg, md or tex and --handout: numbers in\n"
	"                   the cells (auto: up to 16 \u00d7 16; larger, a heatmap)\n"
	"  --transcript FILE  plain REPL: also append every command and its output to FILE\n"
	"  --present        presenter mode: larger cells, bigger narration, no key line\n"
	"  --no-mouse       leave the mouse to the terminal (its own text selection); with\n"
	"                   the mouse on, Shift-drag selects text in most terminals\n"
	"  --progress       print your way through the course (kept in\n"
	"                   $XDG_STATE_HOME/attnviz/progress.json) and exit\n"
	"  --demo FILE      play a demo script (commands, # comments, pause, wait SECONDS,\n"
	"                   quiz: ask the step's question, reveal on the next key);\n"
	"                   space pauses, n/p step by hand, q leaves the demo\n"
	"  --watch LESSON   the full-screen view reloads the lesson each time its file is\n"
	"                   saved, keeping your step; a save that does not load shows its\n"
	"                   error and keeps the last good lesson\n"
	"  --record FILE.cast  record the screen as an asciicast v2 file (asciinema play),\n"
	"                   titled with the lesson on screen at the end, idle_time_limit 3\n"
	"  --record-plain   with --record: redraw lines in place, never with scroll regions or\n"
	"                   inserted/deleted lines (for players such as termtosvg)\n"
	"  --render DEMO    play a demo with no terminal and no keys, and write what the\n"
	"                   full-screen view shows to -o FILE: .svg (one animated SVG for a\n"
	"                   browser or slides) or .cast (asciicast v2, full redraws); time is\n"
	"                   the script's (`wait`), not the clock's; .gif or .mp4 through\n"
	"                   rsvg-convert and ffmpeg; exit 1 when a demo line failed\n"
	"  --size WxH       with --render: the screen in columns x lines (default 120x35)\n"
	"  --pause SECONDS  with --render: how long a `pause` (or a failed line) holds\n"
	"                   before the demo goes on (default 3)\n"
	"  --theme NAME     colours: default projector light viridis blue-orange mono,\n"
	"                   or a theme file (assets/themes/NAME.json); with --export, the\n"
	"                   figure's palette\n"
	"  -h, --help       this help\n"
	"  -V, --version    the version\n"
	"\n"
	"In the REPL and on the `:` line, `help` lists the commands. Environment: NO_COLOR,\n"
	"ATTNVIZ_LESSONS, XDG_STATE_HOME (history, progress). See attnviz(1) and lessons/FORMAT.md.\n");

void usage_help(FILE *out, const char *share)
{
	fprintf(out, _(usage_text), share);
	fputs(_(options_text), out);
	fputs(_(options_token), out);
	fputs(_(options_key), out);
	fputs(_(options_slides), out);
	fputs(_(options_text2), out);
	fputs(_(options_seed), out);
	fputs(_(options_view), out);
}
