/* main.c: arguments, and which face of attnviz to show (TUI, plain REPL or batch). */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "engine/attention.h"
#include "engine/backward.h"
#include "cmd/cmd.h"
#include "app/demo.h"
#include "inspect/dump.h"
#include "inspect/giveaway.h"
#include "out/export.h"
#include "base/fileio.h"
#include "out/handout.h"
#include "out/slides.h"
#include "base/i18n.h"
#include "lesson/lesson.h"
#include "cmd/plain.h"
#include "cmd/usage.h"
#include "app/progress.h"
#include "out/render.h"
#include "app/session.h"
#include "lesson/starter.h"
#include "weights/importer.h"
#include "weights/tokenizer.h"
#include "base/strbuf.h"
#include "out/themefile.h"
#include "out/textfmt.h"
#include "tui/tui.h"


enum Mode { MODE_AUTO, MODE_PLAIN, MODE_CHECK, MODE_DUMP, MODE_BENCH, MODE_EXPORT, MODE_HANDOUT, MODE_SLIDES, MODE_PROGRESS, MODE_NEW,
	    MODE_RENDER, MODE_TOKENIZE };

typedef struct Args {
	enum Mode mode;
	int strict;
	int edits;     /* --bench --edits */
	int repeat;
	const char *lang;
	const char *export_format, *stage, *matrix, *head, *output, *layer; /* --export and its options */
	const char *precision, *scale, *aspect;                     /* --export svg's figure */
	const char *numbers;                                        /* --export and --handout: --numbers */
	const char *key;                                            /* --handout, --slides: --key */
	int standalone;                                             /* --export tex --standalone */
	int token, token_set, tile_q, tile_k, tile_set;             /* --export: --token T, --tile Q,K */
	double zoom;                                                /* --scale N: png, gif, mp4 pixels per SVG pixel */
	const char *view;                                           /* --export svg --view model: every head */
	const char *transcript;
	int present;                                    /* --present */
	int no_mouse;                                   /* --no-mouse */
	int watch;                                      /* --watch */
	const char *demo, *record, *theme;              /* --demo, --record, --theme */
	int record_plain;                               /* --record-plain */
	const char *size, *pause;                       /* --render's --size, --pause */
	TuiRender render;
	const char *tokenize, *model;                   /* --tokenize TEXT, --model DIR */
	const char *prompt, *ids;                       /* --model's --prompt TEXT, --ids ID,ID,... */
	int train, train_steps, has_lr;                 /* --train STEPS --lr LR (with --dump) */
	int dump_weights;                               /* --dump-weights: a model's dump with its weights */
	int seeded;                                     /* --seed S: generate samples, seeded with seed */
	uint64_t seed;
	double lr;
	int nfiles;
	char **files;
} Args;

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/*
 * A file name as messages show it (control characters escaped): the last
 * few stay valid, which is all one message needs.
 */
static const char *shown(const char *name)
{
	static char *ring[4];
	static int next;
	char *e = text_escape(name, "");

	if (e == NULL)
		return "(out of memory)";
	free(ring[next]);
	ring[next] = e;
	next = (next + 1) % 4;
	return e;
}

static int usage_error(const char *fmt, ...)
{
	char msg[512];
	char *safe;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* what was typed is quoted back: escape it */
	safe = text_escape(msg, "");
	fprintf(stderr, _("attnviz: %s\nTry 'attnviz --help'.\n"), safe ? safe : msg);
	free(safe);
	return 2;
}

/* Returns -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, Args *a)
{
	int i;

	memset(a, 0, sizeof *a);
	a->repeat = 5;
	a->render.width = 120;
	a->render.height = 35;
	a->render.pause_s = 3;
	a->lang = NULL; /* --lang; main() decides without it */
	a->files = calloc((size_t)argc, sizeof *a->files);
	if (a->files == NULL)
		return 1;
	for (i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (strcmp(o, "-h") == 0 || strcmp(o, "--help") == 0) {
			usage_help(stdout, ATTNVIZ_SHARE);
			return 0;
		} else if (strcmp(o, "-V") == 0 || strcmp(o, "--version") == 0) {
			printf("attnviz %s (line editor: %s)\n", ATTNVIZ_VERSION, HAVE_READLINE ? "GNU readline" : "built-in");
			return 0;
		} else if (strcmp(o, "--plain") == 0)
			a->mode = MODE_PLAIN;
		else if (strcmp(o, "--check") == 0)
			a->mode = MODE_CHECK;
		else if (strcmp(o, "--new") == 0)
			a->mode = MODE_NEW;
		else if (strcmp(o, "--handout") == 0)
			a->mode = MODE_HANDOUT;
		else if (strcmp(o, "--slides") == 0)
			a->mode = MODE_SLIDES;
		else if (strcmp(o, "--standalone") == 0)
			a->standalone = 1;
		else if (strcmp(o, "--strict") == 0)
			a->strict = 1;
		else if (strcmp(o, "--edits") == 0)
			a->edits = 1;
		else if (strcmp(o, "--no-mouse") == 0)
			a->no_mouse = 1;
		else if (strcmp(o, "--watch") == 0)
			a->watch = 1;
		else if (strcmp(o, "--progress") == 0)
			a->mode = MODE_PROGRESS;
		else if (strcmp(o, "--present") == 0)
			a->present = 1;
		else if (strcmp(o, "--clean") == 0)
			a->render.clean = 1;
		else if (strcmp(o, "--record-plain") == 0)
			a->record_plain = 1;
		else if (strcmp(o, "--render") == 0 || strcmp(o, "--size") == 0 || strcmp(o, "--pause") == 0) {
			if (i + 1 >= argc)
				return usage_error(_("%s needs a value"), o);
			const char *v = argv[++i];
			char *end;
			if (strcmp(o, "--render") == 0) {
				a->mode = MODE_RENDER;
				a->demo = v;
			} else if (strcmp(o, "--size") == 0) {
				long w = strtol(v, &end, 10), h = 0;
				if (end != v && (*end == 'x' || *end == 'X'))
					h = strtol(end + 1, &end, 10);
				if (*end != '\0' || w < 40 || w > 1000 || h < 12 || h > 1000)
					return usage_error(_("--size: expected COLUMNSxLINES from 40x12 to 1000x1000, got \"%s\""), v);
				a->size = v;
				a->render.width = (int)w;
				a->render.height = (int)h;
			} else {
				double sec = strtod(v, &end);
				if (*end != '\0' || end == v || !(sec >= 0 && sec <= DEMO_MAX_WAIT))
					return usage_error(_("--pause: expected seconds from 0 to %g, got \"%s\""), DEMO_MAX_WAIT, v);
				a->pause = v;
				a->render.pause_s = sec;
			}
		}
		else if (strcmp(o, "--tokenize") == 0 || strcmp(o, "--model") == 0 || strcmp(o, "--prompt") == 0 ||
		         strcmp(o, "--ids") == 0) {
			if (i + 1 >= argc)
				return usage_error(_("%s needs a value"), o);
			if (strcmp(o, "--tokenize") == 0) {
				a->mode = MODE_TOKENIZE;
				a->tokenize = argv[++i];
			} else if (strcmp(o, "--prompt") == 0)
				a->prompt = argv[++i];
			else if (strcmp(o, "--ids") == 0) {
				/* 1,2,3: digits, one comma between each two ids (the values are checked against the vocabulary) */
				const char *v = argv[++i];
				if (v[0] == '\0' || strspn(v, "0123456789,") != strlen(v) || v[0] == ',' || v[strlen(v) - 1] == ',' ||
				    strstr(v, ",,") != NULL)
					return usage_error(_("--ids: expected token ids from 0 separated by commas (1,2,3), got \"%s\""), v);
				a->ids = v;
			}
			else
				a->model = argv[++i];
		}
		else if (strcmp(o, "--demo") == 0 || strcmp(o, "--record") == 0 || strcmp(o, "--theme") == 0) {
			if (i + 1 >= argc)
				return usage_error(_("%s needs a value"), o);
			if (strcmp(o, "--demo") == 0)
				a->demo = argv[++i];
			else if (strcmp(o, "--record") == 0)
				a->record = argv[++i];
			else
				a->theme = argv[++i];
		}
		else if (strcmp(o, "--dump") == 0)
			a->mode = MODE_DUMP;
		else if (strcmp(o, "--seed") == 0) {
			if (i + 1 >= argc)
				return usage_error(_("%s needs a value"), o);
			if (cmd_parse_seed(argv[++i], &a->seed) != 0)
				return usage_error(_("--seed: expected a whole number from 0 to 2^64 - 1, got \"%s\""), argv[i]);
			a->seeded = 1;
		}
		else if (strcmp(o, "--dump-weights") == 0)
			a->dump_weights = 1;
		else if (strcmp(o, "--bench") == 0)
			a->mode = MODE_BENCH;
		else if (strcmp(o, "--train") == 0 || strcmp(o, "--lr") == 0) {
			char *end;
			if (i + 1 >= argc)
				return usage_error(_("%s needs a value"), o);
			if (strcmp(o, "--train") == 0) {
				long st = strtol(argv[++i], &end, 10);
				if (*end != '\0' || end == argv[i] || st < 0 || st > 100000)
					return usage_error(_("--train: expected a number of steps from 0 to 100000, got \"%s\""), argv[i]);
				a->train_steps = (int)st;
				a->train = 1;
			} else {
				a->lr = strtod(argv[++i], &end);
				if (*end != '\0' || end == argv[i] || !(a->lr > 0) || !isfinite(a->lr))
					return usage_error(_("--lr: expected a learning rate > 0, got \"%s\""), argv[i]);
				a->has_lr = 1;
			}
		} else if (strcmp(o, "--repeat") == 0 || strcmp(o, "--lang") == 0) {
			if (i + 1 >= argc)
				return usage_error(_("%s needs a value"), o);
			if (strcmp(o, "--lang") == 0) {
				a->lang = argv[++i];
				if (strcmp(a->lang, "en") != 0 && strcmp(a->lang, "zh") != 0)
					return usage_error(_("--lang: expected en or zh, got \"%s\""), a->lang);
			} else {
				char *end;
				long r = strtol(argv[++i], &end, 10);
				if (*end != '\0' || end == argv[i] || r < 1 || r > 100000)
					return usage_error(_("--repeat: expected a whole number from 1 to 100000, got \"%s\""), argv[i]);
				a->repeat = (int)r;
			}
		} else if (strcmp(o, "--export") == 0 || strcmp(o, "--stage") == 0 || strcmp(o, "--matrix") == 0 ||
		           strcmp(o, "--head") == 0 || strcmp(o, "--layer") == 0 || strcmp(o, "-o") == 0 ||
		           strcmp(o, "--output") == 0 ||
		           strcmp(o, "--transcript") == 0 || strcmp(o, "--precision") == 0 || strcmp(o, "--scale") == 0 ||
		           strcmp(o, "--aspect") == 0 || strcmp(o, "--numbers") == 0 || strcmp(o, "--view") == 0 ||
		           strcmp(o, "--key") == 0 || strcmp(o, "--token") == 0 || strcmp(o, "--tile") == 0) {
			const char *v;
			if (i + 1 >= argc)
				return usage_error(_("%s needs a value"), o);
			v = argv[++i];
			if (strcmp(o, "--export") == 0) {
				a->mode = MODE_EXPORT;
				a->export_format = v;
				if (export_format_find(v) < 0 && strcmp(v, "png") != 0) /* png: the svg through rsvg-convert */
					return usage_error(_("--export: expected svg, png, csv, md, tex or json, got \"%s\""), v);
			} else if (strcmp(o, "--stage") == 0) {
				a->stage = v;
				if (stage_find(v) < 0)
					return usage_error(_("--stage: unknown stage \"%s\" (input positional project split scores "
					                   "scale mask softmax weighted concat output)"), v);
			} else if (strcmp(o, "--matrix") == 0) {
				a->matrix = v;
				if (matrix_find(v) < 0)
					return usage_error(_("--matrix: unknown matrix \"%s\""), v);
			} else if (strcmp(o, "--head") == 0) {
				char *end;
				long h = strtol(v, &end, 10);
				if (*end != '\0' || end == v || h < 0 || h >= LESSON_MAX_HEADS)
					return usage_error(_("--head: expected a head number from 0, got \"%s\""), v);
				a->head = v;
			} else if (strcmp(o, "--layer") == 0) {
				a->layer = v; /* checked against the lesson's layers once it is loaded */
			} else if (strcmp(o, "--precision") == 0) {
				char *end;
				long p = strtol(v, &end, 10);
				if (*end != '\0' || end == v || p < 0 || p > 10)
					return usage_error(_("--precision: expected a number of decimals from 0 to 10, got \"%s\""), v);
				a->precision = v;
			} else if (strcmp(o, "--scale") == 0) {
				char *end;
				const double z = strtod(v, &end);
				if (end != v && *end == '\0' && z >= 0.25 && z <= 8) /* pixels: png, gif, mp4 */
					a->zoom = z;
				else if (strcmp(v, "shared") != 0 && strcmp(v, "pane") != 0)
					return usage_error(_("--scale: expected shared or pane (the colours), or a number from 0.25 to 8 "
					                     "(a png's, gif's or mp4's pixels), got \"%s\""), v);
				else
					a->scale = v;
			} else if (strcmp(o, "--aspect") == 0) {
				if (export_aspect_find(v) < 0)
					return usage_error(_("--aspect: expected 16:9, 4:3 or wide, got \"%s\""), v);
				a->aspect = v;
			} else if (strcmp(o, "--numbers") == 0) {
				if (export_numbers_find(v) < 0)
					return usage_error(_("--numbers: expected auto, on or off, got \"%s\""), v);
				a->numbers = v;
			} else if (strcmp(o, "--token") == 0) {
				char *end;
				long t = strtol(v, &end, 10);
				if (*end != '\0' || end == v || t < 0 || t > 1000000)
					return usage_error(_("--token: expected a token's position (0, 1, …), got \"%s\""), v);
				a->token = (int)t;
				a->token_set = 1;
			} else if (strcmp(o, "--tile") == 0) {
				int q, k, used = 0;
				if (sscanf(v, "%d,%d%n", &q, &k, &used) != 2 || v[used] != '\0' || q < 0 || k < 0)
					return usage_error(_("--tile: expected QUERY_BLOCK,KEY_BLOCK (such as 1,0), got \"%s\""), v);
				a->tile_q = q;
				a->tile_k = k;
				a->tile_set = 1;
			} else if (strcmp(o, "--key") == 0) {
				if (handout_key_find(v) < 0)
					return usage_error(_("--key: expected end, separate, none or notes, got \"%s\""), v);
				a->key = v;
			} else if (strcmp(o, "--view") == 0) {
				if (strcmp(v, "model") != 0)
					return usage_error(_("--view: expected model (every layer and head), got \"%s\""), v);
				a->view = v;
			} else if (strcmp(o, "--transcript") == 0)
				a->transcript = v;
			else
				a->output = v;
		} else if (strcmp(o, "--") == 0) {
			for (i++; i < argc; i++)
				a->files[a->nfiles++] = argv[i];
		} else if (o[0] == '-' && o[1] != '\0')
			return usage_error(_("unknown option: %s"), o);
		else
			a->files[a->nfiles++] = argv[i];
	}
	if (a->strict && a->mode != MODE_CHECK)
		return usage_error(_("%s goes with --check"), "--strict");
	if ((a->prompt || a->ids) && (a->model == NULL || a->mode == MODE_TOKENIZE))
		return usage_error(_("%s goes with --model DIR"), a->prompt ? "--prompt" : "--ids");
	if (a->model && a->mode != MODE_TOKENIZE) {
		/* the prompt: TEXT, --prompt TEXT or --ids, one of them */
		if (a->mode != MODE_AUTO && a->mode != MODE_PLAIN && a->mode != MODE_DUMP && a->mode != MODE_CHECK &&
		    (a->mode != MODE_EXPORT || a->view == NULL))
			return usage_error(_("--model DIR goes with the view, --plain, --dump, --check or --export svg --view model"));
		if (a->nfiles > 1 || (a->nfiles == 1) + (a->prompt != NULL) + (a->ids != NULL) != 1)
			return usage_error(_("--model DIR needs one prompt: TEXT, --prompt TEXT or --ids ID,ID,..."));
		if (a->nfiles == 1)
			a->prompt = a->files[0];
		a->nfiles = 0;
	}
	if (a->mode == MODE_TOKENIZE && (a->model ? a->nfiles != 0 : a->nfiles != 1))
		return usage_error(_("--tokenize TEXT needs one model folder: --model DIR"));
	if (a->mode == MODE_TOKENIZE && a->model == NULL) { /* --tokenize TEXT DIR: DIR as --model's, looked up alike */
		a->model = a->files[0];
		a->nfiles = 0;
	}
	if (a->mode == MODE_NEW && a->nfiles != 1)
		return usage_error(_("%s needs exactly one NAME"), "--new");
	if ((a->mode == MODE_CHECK) && a->nfiles == 0 && a->model == NULL)
		return usage_error(_("%s needs at least one lesson file"), "--check");
	if ((a->train || a->has_lr) && a->mode != MODE_DUMP && a->mode != MODE_BENCH)
		return usage_error(_("%s goes with --dump"), a->train ? "--train" : "--lr");
	if (a->dump_weights && (a->mode != MODE_DUMP || a->model == NULL))
		return usage_error(_("--dump-weights goes with --model DIR --dump"));
	if (a->train != a->has_lr)
		return usage_error(_("--train STEPS and --lr LR go together"));
	if ((a->mode == MODE_DUMP || a->mode == MODE_BENCH) && a->nfiles != 1 && a->model == NULL)
		return usage_error(_("%s needs exactly one lesson file"), a->mode == MODE_DUMP ? "--dump" : "--bench");
	if ((a->size || a->pause) && a->mode != MODE_RENDER)
		return usage_error(_("%s goes with --render"), a->size ? "--size" : "--pause");
	if (a->record_plain && a->record == NULL)
		return usage_error(_("%s goes with --record"), "--record-plain");
	if (a->mode == MODE_RENDER) {
		if (a->output == NULL)
			return usage_error(_("--render needs -o FILE.svg, FILE.cast, FILE.gif or FILE.mp4"));
		const char *dot = strrchr(a->output, '.');
		if (dot == NULL || (strcmp(dot, ".svg") != 0 && strcmp(dot, ".cast") != 0 && !render_is_video(a->output)))
			return usage_error(_("--render: expected -o FILE.svg, FILE.cast, FILE.gif or FILE.mp4, got \"%s\""),
			                   a->output);
		if (render_is_video(a->output)) {
			/* said before the demo plays: nothing is rendered for a file that cannot be made */
			char *missing = render_video_missing(shown(a->output));
			if (missing != NULL) {
				fprintf(stderr, "attnviz: --render: %s\n", missing);
				free(missing);
				return 2;
			}
		}
		if (a->nfiles > 1)
			return usage_error(_("--render takes one lesson at most (got %s and more)"), shown(a->files[0]));
		if (a->record || a->no_mouse)
			return usage_error(_("%s does not go with --render"), a->record ? "--record" : "--no-mouse");
		a->render.out = a->output;
	} else if (a->render.clean)
		return usage_error(_("%s goes with --render"), "--clean");
	if (a->mode != MODE_EXPORT && a->mode != MODE_RENDER &&
	    (a->stage || a->matrix || a->head || a->layer || (a->output && a->mode != MODE_HANDOUT && a->mode != MODE_SLIDES)))
		return usage_error(_("%s goes with --export"), a->stage    ? "--stage"
		                                            : a->matrix ? "--matrix"
		                                            : a->head   ? "--head"
		                                            : a->layer  ? "--layer"
		                                                        : "-o");
	if (a->mode == MODE_HANDOUT) {
		if (a->nfiles != 1)
			return usage_error(_("--handout needs exactly one lesson"));
		if (a->output == NULL || handout_is_html(a->output) < 0)
			return usage_error(_("--handout needs -o FILE.html or -o FILE.md"));
	}
	if (a->mode == MODE_SLIDES) {
		if (a->nfiles != 1)
			return usage_error(_("--slides needs exactly one lesson"));
		if (a->output == NULL || slides_is_html(a->output) < 0)
			return usage_error(_("--slides needs -o DECK.html or -o DECK.tex"));
		if (a->key != NULL && strcmp(a->key, "separate") == 0)
			return usage_error(_("--slides: --key end (the answer on the next slide), notes or none"));
		if (!slides_is_html(a->output)) {
			/* a beamer deck's figures are PNG files: said before anything is computed */
			char *missing = render_video_missing("figure.png");
			if (missing != NULL) {
				fprintf(stderr, "attnviz: --slides: %s\n", missing);
				free(missing);
				return 2;
			}
		}
	} else if (a->key != NULL && strcmp(a->key, "notes") == 0)
		return usage_error(_("--key notes goes with --slides (the handout's are end, separate or none)"));
	if (a->standalone && (a->mode != MODE_EXPORT || export_format_find(a->export_format) != EXPORT_TEX))
		return usage_error(_("%s goes with --export tex"), "--standalone");
	if ((a->token_set || a->tile_set) && a->mode != MODE_EXPORT)
		return usage_error(_("%s goes with --export"), a->token_set ? "--token" : "--tile");
	if (a->token_set && a->tile_set)
		return usage_error(_("--token and --tile do not go together (decode steps, or flash tiles)"));
	if (a->key != NULL && a->mode != MODE_HANDOUT && a->mode != MODE_SLIDES)
		return usage_error(_("%s goes with --handout or --slides"), "--key");
	if (a->numbers != NULL && a->mode != MODE_EXPORT && a->mode != MODE_HANDOUT && a->mode != MODE_SLIDES)
		return usage_error(_("%s goes with --export, --handout or --slides"), "--numbers");
	if (a->precision && a->mode != MODE_EXPORT && a->mode != MODE_HANDOUT && a->mode != MODE_SLIDES)
		return usage_error(_("%s goes with --export, --handout or --slides"), "--precision");
	if (a->mode != MODE_EXPORT && (a->scale || a->aspect))
		return usage_error(_("%s goes with --export"), a->scale ? "--scale" : "--aspect");
	if (a->zoom > 0 && !(a->mode == MODE_EXPORT && strcmp(a->export_format, "png") == 0) &&
	    !(a->mode == MODE_RENDER && a->output != NULL && render_is_video(a->output)))
		return usage_error(_("--scale N (pixels) goes with --export png or --render to a .gif or .mp4"));
	a->render.zoom = a->zoom;
	if (a->mode == MODE_EXPORT && strcmp(a->export_format, "png") == 0) {
		const char *dot = a->output != NULL ? strrchr(a->output, '.') : NULL;
		if (dot == NULL || strcmp(dot, ".png") != 0)
			return usage_error(_("--export png needs -o FILE.png"));
		char *missing = render_video_missing(shown(a->output)); /* said before anything is computed */
		if (missing != NULL) {
			fprintf(stderr, "attnviz: --export: %s\n", missing);
			free(missing);
			return 2;
		}
	}
	if (a->view != NULL && (a->mode != MODE_EXPORT ||
	                        (strcmp(a->export_format, "svg") != 0 && strcmp(a->export_format, "png") != 0) || a->stage ||
	                        a->matrix || a->head || a->layer))
		return usage_error(_("--view model goes with --export svg or png, without --stage, --matrix, --head or --layer"));
	if (a->mode == MODE_EXPORT) {
		if (a->nfiles != 1 && a->model == NULL)
			return usage_error(_("--export needs exactly one lesson"));
		if (a->output == NULL)
			return usage_error(_("--export needs -o PATH (- for standard output)"));
		if (a->stage == NULL && a->matrix == NULL && a->view == NULL)
			return usage_error(_("--export needs --stage NAME or --matrix NAME"));
	}
	if (a->transcript != NULL && a->mode != MODE_AUTO && a->mode != MODE_PLAIN)
		return usage_error(_("--transcript goes with the plain REPL"));
	if ((a->present || a->demo || a->record || (a->theme && a->mode != MODE_EXPORT && a->mode != MODE_HANDOUT &&
	                                               a->mode != MODE_SLIDES)) &&
	    a->mode != MODE_AUTO && a->mode != MODE_RENDER)
		return usage_error(_("%s goes with the full-screen view"),
		                   a->present ? "--present" : a->demo ? "--demo" : a->record ? "--record" : "--theme");
	if ((a->no_mouse || a->watch) && a->mode != MODE_AUTO)
		return usage_error(_("%s goes with the full-screen view"), a->watch ? "--watch" : "--no-mouse");
	if (a->watch && (a->nfiles != 1 || a->demo != NULL))
		return usage_error("%s", a->demo != NULL ? _("--watch and --demo: one at a time")
		                                       : _("--watch needs the lesson file to watch"));
	if (a->mode == MODE_PROGRESS && a->nfiles > 0)
		return usage_error(_("--progress takes no lesson (got %s)"), shown(a->files[0]));
	if ((a->mode == MODE_AUTO || a->mode == MODE_PLAIN) && a->nfiles > 1)
		return usage_error(_("give one lesson at a time (got %s and more)"), shown(a->files[0]));
	return -1;
}

/*
 * --model DIR and its prompt as a lesson (weights/importer.h); prints the
 * error and returns NULL on failure.
 */
static Lesson *model_load(const Args *a)
{
	ImportPrompt p = { a->prompt, NULL, 0 };
	long long *ids = NULL;
	char *err = NULL;
	Lesson *l = NULL;

	if (a->ids != NULL) {
		const char *q = a->ids;
		size_t cap = strlen(q) / 2 + 1;
		if ((ids = malloc(cap * sizeof *ids)) == NULL) {
			fputs(_("attnviz: out of memory\n"), stderr);
			return NULL;
		}
		for (;;) {
			char *end;
			errno = 0;
			long long v = strtoll(q, &end, 10);
			if (end == q || errno != 0 || v < 0 || (*end != ',' && *end != '\0') || (size_t)p.n >= cap) {
				usage_error(_("--ids: expected token ids from 0 separated by commas (1,2,3), got \"%s\""), a->ids);
				free(ids);
				return NULL;
			}
			ids[p.n++] = v;
			if (*end == '\0')
				break;
			q = end + 1;
		}
		p.ids = ids;
	}
	l = import_model(a->model, &p, &err);
	if (l == NULL) {
		fprintf(stderr, "attnviz: %s\n", err ? err : _("out of memory"));
		free(err);
	}
	free(ids);
	return l;
}

/* Load a lesson file for a batch mode; prints the error and returns NULL on failure. */
/* Load for a batch mode; *duplicates (may be NULL) counts the "duplicate key" warnings. */
static Lesson *batch_load(const char *path, int show_warnings, int *duplicates)
{
	char *err = NULL, *warn = NULL, *p;
	Lesson *l = lesson_load(path, &err, &warn);

	if (lesson_needs_model(l)) /* "model": the course on its real model */
		l = session_lesson_on_model(l, path, &err, &warn);
	if (warn != NULL && show_warnings)
		fputs(warn, stderr);
	/* the warning's words in the language it was written in (jsonread.c's format, up to its %s) */
	const char *dup = _("duplicate key %s: the first one is used, the others are ignored");
	char pre[128];
	snprintf(pre, sizeof pre, "%.*s", (int)strcspn(dup, "%"), dup);
	for (p = warn; duplicates != NULL && pre[0] != '\0' && p != NULL && (p = strstr(p, pre)) != NULL; p++)
		(*duplicates)++;
	free(warn);
	if (l == NULL) {
		fprintf(stderr, "%s\n", err ? err : _("out of memory"));
		free(err);
	}
	return l;
}

/* --check with --model: the folder imports and computes; one summary line. */
static int run_check_model(const Args *a)
{
	char *err = NULL;
	Lesson *l = model_load(a);
	Attn *at = l != NULL ? attn_compute(l, &err) : NULL;

	if (l != NULL && at == NULL) {
		fprintf(stderr, "%s: %s\n", shown(a->model), err ? err : _("out of memory"));
		free(err);
	}
	if (at != NULL)
		printf(_("%s: ok, n=%d, d_model=%d, %d layers, heads=%d (kv %d), vocab %d\n"), shown(a->model), l->cfg.n,
		       l->cfg.d_model, lesson_layers(l), l->lp.heads, l->lp.kv_heads, l->cfg.vocab);
	attn_free(at);
	lesson_free(l);
	return at == NULL;
}

static int run_check(const Args *a)
{
	static const char *const langs[] = { "en", "zh", NULL };
	int i, bad = 0;

	if (a->model != NULL)
		return run_check_model(a);

	for (i = 0; i < a->nfiles; i++) {
		char *err = NULL, *report = NULL;
		int missing, duplicates = 0;
		Lesson *l = batch_load(a->files[i], 1, &duplicates);
		Attn *at;
		if (l == NULL) {
			bad = 1;
			continue;
		}
		if (a->strict && duplicates > 0) {
			/* a key given twice hides one of its values: under --strict that is an error */
			fprintf(stderr, ngettext("%s: %d duplicate key (--strict)\n", "%s: %d duplicate keys (--strict)\n", (unsigned long)duplicates),
			        shown(a->files[i]), duplicates);
			lesson_free(l);
			bad = 1;
			continue;
		}
		at = attn_compute(l, &err);
		if (at == NULL) {
			fprintf(stderr, "%s: %s\n", shown(a->files[i]), err ? err : _("out of memory"));
			free(err);
			lesson_free(l);
			bad = 1;
			continue;
		}
		if (attn_check_quiz_answers(at, &err) != 0) {
			fprintf(stderr, "%s: %s\n", shown(a->files[i]), err ? err : _("out of memory"));
			free(err);
			attn_free(at);
			lesson_free(l);
			bad = 1;
			continue;
		}
		missing = lesson_check_languages(l, langs, &report);
		if (missing > 0 && report != NULL) {
			if (a->strict) {
				/* the report's lines are warnings; under --strict they are errors */
				fputs(report, stderr);
				fprintf(stderr, ngettext("%s: %d text without both English and Chinese (--strict)\n",
				                         "%s: %d texts without both English and Chinese (--strict)\n", (unsigned long)missing),
				        shown(a->files[i]), missing);
				bad = 1;
			} else {
				/* one line, not one a text: the list is --strict's */
				static const char *const each[][2] = { { "en", NULL }, { "zh", NULL } };
				for (size_t k = 0; k < sizeof each / sizeof each[0]; k++) {
					int n = lesson_check_languages(l, each[k], NULL);
					if (n > 0)
						fprintf(stderr, ngettext("%s: warning: %d text has no \"%s\" (use --strict to list them)\n",
						                         "%s: warning: %d texts have no \"%s\" (use --strict to list them)\n", (unsigned long)n),
						        shown(a->files[i]), n, each[k][0]);
				}
			}
		}
		free(report);
		report = NULL;
		/* a question whose answer can be read before it is answered (--strict: an error) */
		if (a->strict && giveaway_check(at, langs, &report) > 0) {
			fputs(report ? report : "", stderr);
			missing++;
			bad = 1;
		}
		free(report);
		if (!(a->strict && missing > 0) && l->cfg.has_source)
			printf(_("%s: ok, n=%d, m=%d, d_model=%d, heads=%d, %d steps\n"), shown(a->files[i]), l->cfg.n, l->cfg.m,
			       l->cfg.d_model, l->lp.heads, l->nsteps);
		else if (!(a->strict && missing > 0))
			printf(_("%s: ok, n=%d, d_model=%d, heads=%d, %d steps\n"), shown(a->files[i]), l->cfg.n, l->cfg.d_model,
			       l->lp.heads, l->nsteps);
		attn_free(at);
		lesson_free(l);
	}
	return bad;
}

/* --new NAME: the starter lesson, to edit. */
/*
 * --tokenize TEXT --model DIR: TEXT as the model's tokens, one a line
 * (index, id, the token as people read it). DIR is a model folder, or its
 * tokenizer.json itself.
 */
static int run_tokenize(const Args *a)
{
	const char *dir = a->model;
	char *path = NULL, *err = NULL;
	int *ids = NULL, n = 0, rc = 1;
	struct stat st;
	Tokenizer *t = NULL;

	if (stat(dir, &st) != 0) {
		fprintf(stderr, _("attnviz: %s: %s (expected a model folder with a tokenizer.json)\n"), shown(dir),
		        strerror(errno));
		return 1;
	}
	if (S_ISDIR(st.st_mode)) {
		path = str_printf("%s/tokenizer.json", dir);
		if (path == NULL || access(path, F_OK) != 0) {
			fprintf(stderr, _("attnviz: %s: no tokenizer.json in this folder (a Hugging Face model folder has "
			                  "config.json, model.safetensors and tokenizer.json)\n"), shown(dir));
			free(path);
			return 1;
		}
	}
	t = path != NULL ? tok_load_folder(path, &err) : tok_load(dir, &err); /* a folder: its tokenizer_config.json too */
	if (t != NULL && tok_encode(t, a->tokenize, strlen(a->tokenize), &ids, &n, &err) == 0) {
		int wi = snprintf(NULL, 0, "%d", n > 0 ? n - 1 : 0), wd = snprintf(NULL, 0, "%d", tok_vocab_size(t) - 1);
		for (int i = 0; i < n; i++) {
			char *shown_tok = tok_display(t, ids[i], i18n_utf8());
			printf("%*d  %*d  %s\n", wi, i, wd, ids[i], shown_tok ? shown_tok : "?");
			free(shown_tok);
		}
		rc = 0;
	} else
		fprintf(stderr, "attnviz: %s\n", err ? err : _("out of memory"));
	free(err);
	free(ids);
	free(path);
	tok_free(t);
	return rc;
}

static int run_new(const Args *a)
{
	char *path = NULL, *err = NULL;

	if (starter_write(a->files[0], &path, &err) != 0) {
		fprintf(stderr, "attnviz: %s\n", err ? err : _("out of memory"));
		free(err);
		return 1;
	}
	printf(_("wrote %s: edit it (lessons/FORMAT.md), then attnviz --check --strict %s\n"), shown(path), shown(path));
	free(path);
	return 0;
}

/*
 * A model's dump gains "head_scores" (dump_set_head_scores): its induction
 * scores come from the same run on random tokens repeated twice that the
 * model view makes (session_model_induction), without a session: the
 * model is computed on the random tokens, then once on its prompt for the
 * dump (not also for a session, nor again after the run).
 */
static int model_head_scores(Lesson *l, const char *dir, HeadScore **induction)
{
	char *err = NULL;
	int heads = 0, half = 0;

	if (session_model_induction(l, induction, &heads, &half, &err) != 0) {
		fprintf(stderr, "%s: %s\n", shown(dir), err ? err : _("out of memory"));
		free(err);
		lesson_free(l);
		return -1;
	}
	if (*induction != NULL)
		dump_set_head_scores(1, *induction, lesson_layers(l), heads);
	return 0;
}

static int run_dump(const Args *a)
{
	HeadScore *induction = NULL;
	double *losses;
	char *err = NULL;
	const char *name = a->model != NULL ? a->model : a->files[0];
	Lesson *l = a->model != NULL ? model_load(a) : batch_load(a->files[0], 1, NULL);
	Attn *at;

	if (l == NULL)
		return 1;
	dump_set_weights(a->model == NULL ? 1 : a->dump_weights ? 2 : 0);
	if (a->model != NULL && model_head_scores(l, a->model, &induction) != 0)
		return 1;
	if (a->train && l->cfg.backward == BACKWARD_NONE) {
		fprintf(stderr, _("%s: --train needs a lesson with \"backward\" (a target or a dOutput)\n"), shown(name));
		lesson_free(l);
		free(induction);
		return 1;
	}
	losses = a->train ? calloc((size_t)a->train_steps + 1, sizeof *losses) : NULL;
	if (a->train && (losses == NULL || attn_train(l, a->train_steps, a->lr, losses, &err) != 0)) {
		fprintf(stderr, "%s: %s\n", shown(name), err ? err : _("out of memory"));
		free(err);
		free(losses);
		lesson_free(l);
		free(induction);
		return 1;
	}
	at = attn_compute_all(l, &err);
	if (at != NULL && a->train) {
		losses[a->train_steps] = at->loss; /* after the last step */
		at->train_steps = a->train_steps;
		at->train_lr = a->lr;
		at->train_loss = losses;
		losses = NULL;
	}
	free(losses);
	/* Streamed: the dump of a large lesson is hundreds of MB of text. */
	if (at == NULL || dump_write(stdout, at, 0, &err) != 0) {
		fprintf(stderr, "%s: %s\n", shown(name), err ? err : _("out of memory"));
		free(err);
		attn_free(at);
		lesson_free(l);
		free(induction);
		return 1;
	}
	fputc('\n', stdout);
	attn_free(at);
	lesson_free(l);
	free(induction);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		/* A full disk must not pass for a complete dump, nor fail silently. */
		fprintf(stderr, _("%s: cannot write the dump: %s\n"), shown(name), strerror(errno));
		return 1;
	}
	return 0;
}


static int compare_doubles(const void *x, const void *y)
{
	const double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

/* The median of count numbers (sorts them). */
static double median(double *v, int count)
{
	qsort(v, (size_t)count, sizeof *v, compare_doubles);
	return v[count / 2];
}

/*
 * --bench: the computation alone, R times (with the lesson's "backward", the
 * backward pass too; with --train STEPS --lr LR, STEPS steps of training
 * each time instead); the median of the whole and of each stage (every
 * layer's pass of it together), in the stage table's order, and of the
 * overflow check.
 */
static int run_bench(const Args *a)
{
	Lesson *l = batch_load(a->files[0], 0, NULL);
	const int R = a->repeat, NS = STAGE_COUNT + 1; /* per run: each stage, then the check */
	double *ms, *part, *col;
	unsigned char ran[STAGE_COUNT] = { 0 };
	struct rusage ru;
	unsigned long long madds = 0; /* of the products, in a run (the same in each) */
	int r;

	if (l == NULL)
		return 1;
	ms = calloc(2 * (size_t)R, sizeof *ms); /* the wall times, then the CPU times (cpu_ms=) */
	part = calloc((size_t)R * (size_t)NS, sizeof *part);
	col = calloc((size_t)R, sizeof *col);
	if (ms == NULL || part == NULL || col == NULL) {
		free(ms);
		free(part);
		free(col);
		lesson_free(l);
		return 1;
	}
	for (r = 0; r < R; r++) {
		char *err = NULL;
		double t0 = clock_ms(), c0 = clock_cpu_ms();
		unsigned long long m0 = mat_madds();
		Attn *at = NULL;
		if (a->train) {
			/* each run from the lesson's own weights (training changes the copy) */
			Lesson *c = lesson_clone(l);
			double *losses = calloc((size_t)a->train_steps + 1, sizeof *losses);
			int trained;
			t0 = clock_ms(), c0 = clock_cpu_ms();
			m0 = mat_madds();
			trained = c != NULL && losses != NULL && attn_train(c, a->train_steps, a->lr, losses, &err) == 0;
			ms[r] = clock_ms() - t0, ms[R + r] = clock_cpu_ms() - c0;
			madds = mat_madds() - m0;
			free(losses);
			lesson_free(c);
			if (trained)
				at = attn_compute(l, &err); /* the stages' times below (of the forward pass): not in ms[r] */
		} else {
			at = attn_compute_all(l, &err);
			ms[r] = clock_ms() - t0, ms[R + r] = clock_cpu_ms() - c0;
			madds = mat_madds() - m0;
		}
		if (at == NULL) {
			fprintf(stderr, "%s: %s\n", shown(a->files[0]), err ? err : _("out of memory"));
			free(err);
			free(ms);
			free(part);
			free(col);
			lesson_free(l);
			return 1;
		}
		for (const Attn *la = at; la != NULL; la = la->next) {
			for (int st = 0; st < STAGE_COUNT; st++)
				if (la->stage_ms[st] > 0.0) {
					part[(size_t)r * NS + st] += la->stage_ms[st];
					ran[st] = 1;
				}
			part[(size_t)r * NS + STAGE_COUNT] += la->check_ms;
		}
		attn_free(at);
	}
	qsort(ms, (size_t)R, sizeof *ms, compare_doubles);
	getrusage(RUSAGE_SELF, &ru);
	printf("compute_ms=%.3f min_ms=%.3f max_ms=%.3f peak_rss_kb=%ld\n", ms[R / 2], ms[0], ms[R - 1], ru.ru_maxrss);
	printf("cpu_ms=%.3f\n", median(ms + R, R)); /* the same runs in CPU time, which a busy machine does not inflate */
	printf("madds=%llu\n", madds); /* the multiply-adds of a run's products (mat_madds): the work a floor is made of */
	/* each stage that ran, by its name in the stage table, then the overflow check */
	for (int st = 0; st <= STAGE_COUNT; st++) {
		if (st < STAGE_COUNT && !ran[st])
			continue;
		for (r = 0; r < R; r++)
			col[r] = part[(size_t)r * NS + st];
		printf("stage=%s ms=%.3f\n", st < STAGE_COUNT ? stage_name((Stage)st) : "(overflow check)", median(col, R));
	}
	free(ms);
	free(part);
	free(col);
	lesson_free(l);
	return 0;
}

static void bench_message(void *ctx, CmdMsg kind, const char *title, const char *text)
{
	(void)title;
	if (kind == MSG_ERROR) {
		fprintf(stderr, "attnviz: %s\n", text);
		*(int *)ctx = 1;
	}
}

/*
 * --bench --edits: the lesson computed once, then R edits of one cell of
 * each of W_o, W_v, W_q, W_k and the input (what `set` does), each timed;
 * with the multiply-adds of the edit's products (madds=, the last edit's:
 * each does the same work), and with a loss, the gradients the edit left
 * for their first reader timed apart, as session_idle makes them once the
 * result is out (grads_ms=); then the peak memory after the computation and
 * after the edits. *failed: an edit was refused (out's message said why),
 * and the rest are not timed.
 */
static void bench_edits(Session *s, CmdOut *out, const int *failed, int repeat, double step, double *ms, double *later)
{
	static const char *const what[] = { "W_o", "W_v", "W_q", "W_k", "input" };
	const int loss = s->model != NULL && s->model->grad != NULL;
	unsigned long long madds = 0;

	for (size_t k = 0; k < sizeof what / sizeof what[0] && !*failed; k++) {
		const Mat *m = attn_matrix(s->attn, (AttnMatrix)matrix_find(what[k]), 0); /* the lesson's: gone after an edit */
		const int rows = m != NULL ? m->rows : 0, cols = m != NULL ? m->cols : 0;
		for (int r = 0; m != NULL && r < repeat && !*failed; r++) {
			char line[96];
			double t0;
			/* a cell in the middle of the matrix (an input row half way down), a new value each time */
			snprintf(line, sizeof line, "set %s[%d][%d] %g", what[k], rows / 2, cols / 3, step * (r + 1));
			const unsigned long long m0 = mat_madds();
			t0 = clock_ms();
			cmd_run(s, line, out);
			ms[r] = clock_ms() - t0;
			madds = mat_madds() - m0;
			t0 = clock_ms();
			if (loss)
				session_idle(s); /* the gradients, once the result is out */
			later[r] = clock_ms() - t0;
		}
		if (*failed || m == NULL)
			continue;
		printf("edit=%s ms=%.3f madds=%llu", what[k], median(ms, repeat), madds);
		if (loss)
			printf(" grads_ms=%.3f", median(later, repeat));
		printf("\n");
	}
}

static int run_bench_edits(const Args *a)
{
	Lesson *l = batch_load(a->files[0], 0, NULL);
	Session s;
	struct rusage ru;
	long rss_compute;
	double *ms = calloc(2 * (size_t)a->repeat, sizeof *ms);
	char *err = NULL;
	int failed = 0;
	CmdOut out = { &failed, bench_message, NULL, NULL, 0, 0, 0 };

	if (l == NULL || ms == NULL || session_init(&s, l, a->files[0], &err) != 0) {
		if (err != NULL)
			fprintf(stderr, "%s: %s\n", shown(a->files[0]), err);
		free(err);
		free(ms);
		lesson_free(l);
		return 1;
	}
	getrusage(RUSAGE_SELF, &ru);
	rss_compute = ru.ru_maxrss;
	bench_edits(&s, &out, &failed, a->repeat, 0.125, ms, ms + a->repeat);
	getrusage(RUSAGE_SELF, &ru);
	printf("peak_rss_kb_compute=%ld peak_rss_kb_edits=%ld\n", rss_compute, ru.ru_maxrss);
	session_free(&s);
	free(ms);
	return failed;
}

/* --export: one stage or matrix of a lesson as a file (or stdout). 1 for lesson errors. */
/* --export, --handout: the lesson named by files[0] in a session in --lang; 0, or 1 after saying why. */
static int batch_session(const Args *a, Session *s)
{
	char *err = NULL, *path = session_find_lesson(a->files[0], &err);
	Lesson *l;

	if (path == NULL) {
		fprintf(stderr, "attnviz: %s\n", err ? err : _("out of memory"));
		free(err);
		return 1;
	}
	l = batch_load(path, 1, NULL);
	free(path);
	if (l == NULL)
		return 1;
	if (session_init(s, l, a->files[0], &err) != 0) {
		fprintf(stderr, "%s: %s\n", shown(a->files[0]), err ? err : _("out of memory"));
		free(err);
		lesson_free(l);
		return 1;
	}
	snprintf(s->lang, sizeof s->lang, "%s", a->lang);
	return 0;
}

/* --theme for a figure's palette: a theme that does not load is an error here, not a fallback. 0, or 1 after saying why. */
static int batch_theme(const Args *a, ThemeFile *theme)
{
	char *err = NULL;

	if (a->theme == NULL || themefile_load(a->theme, theme, &err) == 0)
		return 0;
	fprintf(stderr, _("attnviz: --theme: %s\n"), err ? err : _("out of memory"));
	free(err);
	return 1;
}

/* --export svg --view model --model DIR: the model's session with its induction scores; 0, or 1 after saying why. */
static int open_model_session(Session *s, const Args *a);

/* The model view's grid: the model's session, and each head's induction score (the model run on random tokens). */
static int grid_model_session(const Args *a, Session *s)
{
	char *err = NULL;

	if (open_model_session(s, a) != 0)
		return 1;
	if (session_induction(s, &err) == 0)
		return 0;
	fprintf(stderr, "%s: %s\n", shown(a->model), err ? err : _("out of memory"));
	free(err);
	session_free(s);
	return 1;
}

static int run_export(const Args *a)
{
	char *err = NULL, *data = NULL;
	Session s;
	ExportTarget t;
	ThemeFile theme;
	int rc = 1, head = a->head ? atoi(a->head) : 0;
	const int png = strcmp(a->export_format, "png") == 0; /* the SVG, then rsvg-convert */

	if (a->model != NULL ? grid_model_session(a, &s) != 0 : batch_session(a, &s) != 0)
		return 1;
	if (a->view != NULL) {
		/* --view model: every layer × head, a lesson's or a model's */
		if (batch_theme(a, &theme) != 0)
			goto out;
		data = export_model_grid(&s, a->theme != NULL ? &theme : NULL, &err);
		goto write;
	}
	{
		/* layer 0 unless told: the decoder's first link of an encoder–decoder, whose walk starts in the encoder */
		const int k = session_layer_lookup(&s, a->layer != NULL ? a->layer : "0", &err);
		if (k < 0 || session_set_layer(&s, k, &err) != 0) {
			fprintf(stderr, "%s: --layer: %s\n", shown(a->files[0]), err ? err : _("out of memory"));
			free(err);
			goto out;
		}
	}
	if (a->stage != NULL && !stage_present(&s.attn->shape, (Stage)stage_lookup(&s.attn->shape, a->stage))) {
		fprintf(stderr, _("%s: this lesson has no %s stage\n"), shown(a->files[0]), a->stage);
		goto out;
	}
	/* the head is checked here; what to export is set below */
	if (export_target_parse(s.attn, NULL, STAGE_INPUT, head, &t, &err) != 0)
		goto fail;
	if (a->matrix != NULL) {
		t.whole_stage = 0;
		t.matrix = (AttnMatrix)matrix_find(a->matrix);
		if (!attn_has(s.attn, t.matrix, head)) {
			fprintf(stderr, _("%s: this lesson has no matrix %s\n"), shown(a->files[0]), a->matrix);
			goto out;
		}
	} else
		t.stage = (Stage)stage_lookup(&s.attn->shape, a->stage);
	if (a->precision != NULL)
		t.precision = atoi(a->precision);
	t.scale_per_pane = a->scale != NULL && strcmp(a->scale, "pane") == 0;
	if (a->aspect != NULL)
		t.aspect = (ExportAspect)export_aspect_find(a->aspect);
	if (a->numbers != NULL)
		t.numbers = (ExportNumbers)export_numbers_find(a->numbers);
	t.standalone = a->standalone;
	if (a->matrix != NULL && a->stage != NULL) {
		/* both: the matrix must be one the stage shows */
		AttnMatrix panes[STAGE_MAX_PANES];
		int k, n = attn_stage_matrices(s.attn, (Stage)stage_lookup(&s.attn->shape, a->stage), panes);
		for (k = 0; k < n && panes[k] != t.matrix; k++)
			;
		if (k == n) {
			fprintf(stderr, _("%s: stage %s does not show %s\n"), shown(a->files[0]), a->stage, a->matrix);
			goto out;
		}
	}
	/* the finished computation, unless --token or --tile names a decode step or a tile */
	s.dec_t = s.tile_q = s.tile_k = -1;
	if (a->token_set || a->tile_set) {
		const Stage st = t.whole_stage ? t.stage : (Stage)matrix_stage(&s.attn->shape, t.matrix);
		if ((int)st < 0 || session_goto_stage(&s, st, &err) != 0 ||
		    (a->token_set ? session_set_token(&s, a->token, &err) : session_set_tile(&s, a->tile_q, a->tile_k, &err)) != 0) {
			fprintf(stderr, "%s: %s: %s\n", shown(a->files[0]), a->token_set ? "--token" : "--tile",
			        err ? err : _("out of memory"));
			free(err);
			goto out;
		}
	}
	if (batch_theme(a, &theme) != 0)
		goto out;
	data = export_render(s.attn, &s, png ? EXPORT_SVG : (ExportFormat)export_format_find(a->export_format), &t,
	                     a->theme != NULL ? &theme : NULL, &err);
write:
	if (data == NULL)
		goto fail;
	if (png ? render_write_png(data, strlen(data), a->output, a->zoom, &err) != 0
	        : fileio_write_atomic(a->output, data, strlen(data), &err) != 0) {
		fprintf(stderr, "attnviz: %s\n", err ? err : _("out of memory"));
		free(err);
		goto out;
	}
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "%s: %s\n", shown(a->model != NULL ? a->model : a->files[0]), err ? err : _("out of memory"));
	free(err);
out:
	free(data);
	session_free(&s);
	return rc;
}

/*
 * --handout LESSON -o FILE.html|FILE.md, --slides LESSON -o DECK.html|DECK.tex: the figures beside
 * a Markdown handout or a beamer deck first (a deck's as PNG), the handout or the deck last.
 */
static int run_handout(const Args *a)
{
	char *err = NULL;
	Session s;
	ThemeFile theme;
	Handout h = { 0 };
	int rc = 1;

	if (batch_session(a, &s) != 0)
		return 1;
	if (batch_theme(a, &theme) != 0)
		goto out;
	HandoutOptions ho = {
		.theme = a->theme != NULL ? &theme : NULL,
		.numbers = a->numbers != NULL ? export_numbers_find(a->numbers) : EXPORT_NUMBERS_AUTO,
		.precision = a->precision != NULL ? atoi(a->precision) : -1,
		.key = a->key != NULL ? (HandoutKey)handout_key_find(a->key) : HANDOUT_KEY_END,
	};
	if ((a->mode == MODE_SLIDES ? slides_render(&s, a->output, &ho, &h, &err)
	                            : handout_render(&s, a->output, &ho, &h, &err)) != 0) {
		fprintf(stderr, "%s: %s\n", shown(a->files[0]), err ? err : _("out of memory"));
		free(err);
		goto out;
	}
	for (int i = h.n - 1; i >= 0; i--)
		if ((h.file[i].png ? render_write_png(h.file[i].data, strlen(h.file[i].data), h.file[i].path, 2, &err)
		                   : fileio_write_atomic(h.file[i].path, h.file[i].data, strlen(h.file[i].data), &err)) != 0) {
			fprintf(stderr, "attnviz: %s\n", err ? err : _("out of memory"));
			free(err);
			/* a full disk half way: the figures written so far go too, so no handout is left half made */
			for (int j = i + 1; j < h.n; j++)
				unlink(h.file[j].path);
			goto out;
		}
	rc = 0;
out:
	handout_free(&h);
	session_free(&s);
	return rc;
}

/* The learner's lesson: a file or name, or the built-in one. */
static int open_session(Session *s, const char *name, const char *lang)
{
	char *err = NULL, *warn = NULL;
	Lesson *l = session_default_lesson(&err);

	/* Start from the built-in lesson; a named one replaces it only if it loads. */
	if (l == NULL || session_init(s, l, NULL, &err) != 0) {
		fprintf(stderr, _("attnviz: built-in lesson: %s\n"), err ? err : _("out of memory"));
		lesson_free(l);
		free(err);
		return 1;
	}
	if (name != NULL && session_load(s, name, &err, &warn) != 0) {
		fprintf(stderr, "%s\n", err ? err : _("out of memory"));
		free(err);
		free(warn);
		session_free(s);
		return 1;
	}
	if (warn != NULL)
		fputs(warn, stderr);
	free(warn);
	snprintf(s->lang, sizeof s->lang, "%s", lang);
	return 0;
}

/* --model DIR and its prompt in a session, as open_session does for a lesson. */
static int open_model_session(Session *s, const Args *a)
{
	char *err = NULL;
	Lesson *l = model_load(a);

	if (l == NULL)
		return 1;
	if (session_init(s, l, a->model, &err) != 0) {
		fprintf(stderr, "%s: %s\n", shown(a->model), err ? err : _("out of memory"));
		free(err);
		lesson_free(l);
		return 1;
	}
	snprintf(s->lang, sizeof s->lang, "%s", a->lang);
	return 0;
}

/*
 * What went to stdout must have arrived: a full disk or a closed stdout is a
 * message and exit 1, never a silent success. (A run that already failed has
 * said why and exits non-zero anyway.)
 */
static int finish_stdout(int rc)
{
	int e;

	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	e = errno;
	if (rc != 0)
		return rc;
	if (e)
		fprintf(stderr, _("attnviz: cannot write to standard output: %s\n"), strerror(e));
	else
		fputs(_("attnviz: cannot write to standard output\n"), stderr);
	return 1;
}

static int locale_is_utf8(void)
{
	return i18n_utf8();
}

/* "attnviz: WHAT: cannot write PATH: why" (the path escaped by fileio); frees err; the exit status 1. */
static int transcript_error(const char *what, char *err)
{
	fprintf(stderr, _("attnviz: %s: %s\n"), what, err ? err : _("out of memory"));
	free(err);
	return 1;
}

/* --progress: the course so far. */
static int run_progress(void)
{
	char *path = progress_default_path(), *warn = NULL;
	Progress p;
	int rc = 0;

	if (progress_load(&p, path, &warn) != 0) {
		fputs(_("attnviz: out of memory\n"), stderr);
		rc = 1;
	} else {
		if (warn != NULL)
			fprintf(stderr, "attnviz: %s\n", warn);
		char *r = progress_report(&p, locale_is_utf8());
		if (r != NULL)
			fputs(r, stdout);
		rc = r == NULL;
		free(r);
	}
	free(warn);
	free(path);
	progress_free(&p);
	return rc;
}

/* Run with no lesson named, after an earlier run: the offer to go on where the learner left off; heap, or NULL. */
static char *progress_offer(const Progress *p, int tui)
{
	const ProgressLesson *e = p->last[0] != '\0' ? progress_find(p, p->last) : NULL;

	if (e == NULL || (strcmp(e->name, "selfattn") == 0 && e->step == 0))
		return NULL;
	char *name = text_escape(e->name, "");
	char *offer = str_printf(tui ? _("welcome back: c or :continue goes on with %s at step %d of %d (m: the course)")
	                             : _("welcome back: continue goes on with %s at step %d of %d"),
	                         name ? name : "", e->step + 1, e->steps);
	free(name);
	return offer;
}

/*
 * Before the full-screen view starts: a computation that takes longer than
 * ATTN_PROGRESS_MS says which stage it is at, on the terminal's line (the
 * view's first frame replaces it).
 */
static int progress_shown;

static void progress_line(void *ctx, const Attn *a, Stage st, int index, int count, double elapsed_ms)
{
	char buf[96];

	(void)ctx;
	if (elapsed_ms < ATTN_PROGRESS_MS)
		return;
	textfmt_progress(buf, sizeof buf, a, st, index, count, locale_is_utf8());
	printf("\r%s\033[K", buf);
	fflush(stdout);
	progress_shown = 1;
}

int main(int argc, char **argv)
{
	Args a;
	Session s;
	FileOut transcript;
	char *err = NULL;
	int rc;
	const char *term = getenv("TERM"), *nocolor = getenv("NO_COLOR");

	setlocale(LC_ALL, "");
	const char *env_lang = i18n_init();
	/* A write past `ulimit -f` fails with EFBIG and a message, instead of killing us mid-write. */
	signal(SIGXFSZ, SIG_IGN);
	/* --help and the usage errors in the person's language: --lang's, else the locale's */
	const char *early_lang = env_lang;
	for (int k = 1; k + 1 < argc; k++)
		if (strcmp(argv[k], "--lang") == 0 && (strcmp(argv[k + 1], "en") == 0 || strcmp(argv[k + 1], "zh") == 0))
			early_lang = argv[k + 1];
	i18n_set_lang(early_lang);
	rc = parse_args(argc, argv, &a);
	if (rc >= 0) {
		free(a.files);
		return finish_stdout(rc);
	}
	/*
	 * --model REF that is no folder here: ORG/NAME in $ATTNVIZ_MODELS or the Hugging Face cache, a bare NAME
	 * among the shipped models (session_find_model, the one lookup --tokenize, :model and lessons share)
	 */
	char *model_found = a.model != NULL ? session_resolve_model(a.model) : NULL;
	if (model_found != NULL)
		a.model = model_found;
	/*
	 * The program's words and the narration in one language: --lang, else
	 * the locale's where a learner reads them (a session, --progress); a
	 * tool's output (--export, --dump, --check) is English unless --lang says.
	 */
	if (a.lang == NULL)
		a.lang = a.mode == MODE_AUTO || a.mode == MODE_PLAIN || a.mode == MODE_PROGRESS ? env_lang : "en";
	i18n_set_lang(a.lang);
	switch (a.mode) {
	case MODE_CHECK: rc = run_check(&a); break;
	case MODE_DUMP: rc = run_dump(&a); break;
	case MODE_BENCH: rc = a.edits ? run_bench_edits(&a) : run_bench(&a); break;
	case MODE_EXPORT: rc = run_export(&a); break;
	case MODE_HANDOUT:
	case MODE_SLIDES: rc = run_handout(&a); break;
	case MODE_PROGRESS: rc = run_progress(); break;
	case MODE_NEW: rc = run_new(&a); break;
	case MODE_TOKENIZE: rc = run_tokenize(&a); break;
	default: {
		/* --render draws the full-screen view on a terminal of its own */
		const int tui = a.mode == MODE_RENDER ||
		                (a.mode == MODE_AUTO && a.transcript == NULL && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) &&
		                 term != NULL && term[0] != '\0' && strcmp(term, "dumb") != 0);
		if (tui && a.mode != MODE_RENDER) /* the view is not up yet: a slow computation says where it is on the terminal */
			attn_set_progress(progress_line, NULL);
		rc = a.model != NULL ? open_model_session(&s, &a) : open_session(&s, a.nfiles ? a.files[0] : NULL, a.lang);
		attn_set_progress(NULL, NULL);
		if (progress_shown) {
			printf("\r\033[K");
			fflush(stdout);
		}
		if (rc != 0)
			break;
		if (a.seeded) /* --seed S: generate samples */
			session_set_seed(&s, 1, a.seed);
		/* the learner's progress: kept by whoever they work in, offered back when no lesson is named */
		char *pwarn = NULL, *offer = NULL;
		Progress prog = { 0 };
		/* read only where a person works (not a script, not a demo): loading may set a damaged file aside */
		if (tui ? a.demo == NULL && !a.watch : isatty(STDIN_FILENO)) {
			char *ppath = progress_default_path();
			progress_load(&prog, ppath, &pwarn);
			free(ppath);
		}
		if (a.nfiles == 0 && a.demo == NULL && a.model == NULL)
			offer = progress_offer(&prog, tui);
		if (tui) {
			TuiOptions to = { .theme = a.theme, .present = a.present, .demo = a.demo, .record = a.record };
			to.record_plain = a.record_plain;
			to.render = a.mode == MODE_RENDER ? &a.render : NULL;
			to.no_mouse = a.no_mouse;
			/* a demo script is not the learner's way, nor a lesson being written (--watch) */
			to.progress = a.demo == NULL && !a.watch && a.model == NULL ? &prog : NULL; /* a model is not a lesson of the course */
			to.watch = a.watch;
			to.notice = pwarn;
			to.offer = offer;
			rc = tui_run(&s, &to);
		} else if (a.demo || a.record || a.watch) {
			fprintf(stderr, _("attnviz: %s needs the full-screen view (a terminal; not --plain)\n"),
			        a.demo ? "--demo" : a.record ? "--record" : "--watch");
			rc = 2;
		} else {
			PlainOptions po;
			po.interactive = isatty(STDIN_FILENO);
			po.color = isatty(STDOUT_FILENO) && (nocolor == NULL || nocolor[0] == '\0') && term != NULL &&
			           strcmp(term, "dumb") != 0;
			po.utf8 = locale_is_utf8();
			po.transcript = NULL;
			po.transcript_errno = NULL;
			/* a person at the prompt, not a script, makes progress */
			po.progress = po.interactive && a.model == NULL ? &prog : NULL;
			if (pwarn != NULL)
				fprintf(stderr, "attnviz: %s\n", pwarn);
			if (offer != NULL && po.interactive)
				printf("%s\n", offer);
			/* appended to: a failure cuts it back to what it was (fileio.h) */
			if (a.transcript != NULL) {
				if (fileio_begin(&transcript, a.transcript, FILEIO_KEEP_MODE, 1, &err) != 0) {
					rc = transcript_error(_("cannot open transcript"), err);
					progress_free(&prog);
					free(pwarn);
					free(offer);
					session_free(&s);
					break;
				}
				po.transcript = transcript.f;
				po.transcript_errno = &transcript.error;
			}
			rc = plain_run(&s, stdin, &po);
			if (po.transcript != NULL && fileio_commit(&transcript, &err) != 0)
				rc = transcript_error(_("transcript cut back to what it was"), err);
		}
		progress_free(&prog);
		free(pwarn);
		free(offer);
		session_free(&s);
		break;
	}
	}
	free(a.files);
	free(model_found);
	return finish_stdout(rc);
}
