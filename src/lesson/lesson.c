/*
 * lesson.c: a lesson file (format v1, lessons/FORMAT.md) turned into a
 * checked Lesson.
 *
 * Loading runs in four passes, so that nothing large is allocated before
 * the lesson is known to fit the documented limits:
 *   1. parse the JSON (jr_parse) and report syntax errors as FILE:LINE:COL;
 *   2. read every scalar and the *shape* of every matrix from the tree
 *      (MatSrc: a literal array or a generator, not yet filled in);
 *   3. check the shapes against each other and against the limits
 *      (check_shapes, shared with lesson_validate), then the steps;
 *   4. allocate and fill the matrices, and load the "compare" variant.
 * Every content error names the JSON path of the value at fault.
 */
#include "lesson/lesson.h"

#include "model/catalog.h"
#define JSONREAD_SHORT_NAMES /* ctx_init, fail, got, …: the kit's jr_ functions */
#include "base/jsonread.h"
#include "base/prng.h"
#include "base/strbuf.h"
#include "base/fileio.h"
#include "base/i18n.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* The loading context (jsonread.h) and what the loader adds to it     */
/* ------------------------------------------------------------------ */

/* What the loader carries beside the kit's context (Ctx.reader). */
typedef struct Stack {
	/* The layers read so far (their shapes check steps that name a layer). */
	struct Lesson **layers;
	int nlayers;
	int stack_final;       /* the stack has a final norm (after its last layer) */
	double numbers_before; /* the lesson's count while its compare variant is read or checked */
	LinkPart part;         /* while a decoder link is read: PART_SELF or PART_CROSS (PART_LAYER otherwise) */
	int link_final;        /* … and it is the last link of a decoder with a final norm */
	int outer_compare;     /* while an encoder–decoder's link 0 is read: the whole lesson has a "compare" */
	const struct Lesson *encoder; /* while an encoder–decoder's links are read: its encoder (steps may show it) */
} Stack;

static Stack *stack(Ctx *c)
{
	return c->reader;
}

#define MAX_SEED 9007199254740992.0 /* 2^53: every whole number up to here is exact in JSON */

/* ------------------------------------------------------------------ */
/* Texts: a string (English) or {"en": …, "zh": …}                    */
/* ------------------------------------------------------------------ */

/* "en", "zh", "pt-BR", "zh_TW": 2–3 letters, optionally - or _ and 2–3 letters or digits. */
static int lang_code_ok(const char *s)
{
	size_t i = 0, j;

	while (isalpha((unsigned char)s[i]))
		i++;
	if (i < 2 || i > 3)
		return 0;
	if (s[i] == '\0')
		return 1;
	if (s[i] != '-' && s[i] != '_')
		return 0;
	for (j = i + 1; isalnum((unsigned char)s[j]); j++)
		;
	return s[j] == '\0' && j - i - 1 >= 2 && j - i - 1 <= 3;
}

static int read_text(Ctx *c, const cJSON *v, Text *t)
{
	const cJSON *it;
	size_t old;
	int n = 0, r = 0;

	t->count = 0;
	t->v = NULL;
	if (cJSON_IsString(v)) {
		t->v = calloc(1, sizeof *t->v);
		if (t->v == NULL)
			return fail_oom(c);
		strcpy(t->v[0].lang, "en");
		if (read_string(c, v, &t->v[0].s) != 0) {
			text_free(t);
			return -1;
		}
		t->count = 1;
		return 0;
	}
	if (!cJSON_IsObject(v))
		return fail(c, _("expected a text (a string, or an object such as {\"en\": \"…\", \"zh\": \"…\"}), got %s"),
		            got(v).s);
	cJSON_ArrayForEach(it, v)
		n++;
	if (n == 0)
		return fail(c, _("expected a text, got an empty object (give at least {\"en\": \"…\"})"));
	t->v = calloc((size_t)n, sizeof *t->v);
	if (t->v == NULL)
		return fail_oom(c);
	cJSON_ArrayForEach(it, v) {
		if (!lang_code_ok(it->string)) {
			r = fail(c, _("%s is not a language code (expected a short code such as \"en\" or \"zh\")"),
			         quoted(it->string).s);
			break;
		}
		if (text_has(t, it->string)) {
			warnf(c, _("language \"%s\" given twice; the first is used"), it->string);
			continue;
		}
		old = path_key(c, it->string);
		r = read_string(c, it, &t->v[t->count].s);
		path_set(c, old);
		if (r != 0)
			break;
		snprintf(t->v[t->count].lang, sizeof t->v[t->count].lang, "%s", it->string);
		t->count++;
	}
	if (r != 0)
		text_free(t);
	return r;
}

static int key_text(Ctx *c, const cJSON *obj, const char *key, Text *t)
{
	const cJSON *v = get(obj, key);
	size_t old;
	int r;

	t->count = 0;
	t->v = NULL;
	if (v == NULL)
		return 0;
	old = path_key(c, key);
	r = read_text(c, v, t);
	path_set(c, old);
	return r;
}

/* ------------------------------------------------------------------ */
/* Matrices: their shape first (MatSrc), their numbers later           */
/* ------------------------------------------------------------------ */

typedef enum SrcKind { SRC_ABSENT, SRC_ROWS, SRC_FLAT, SRC_NORMAL, SRC_UNIFORM, SRC_IDENTITY } SrcKind;

typedef struct MatSrc {
	SrcKind kind;
	const cJSON *item;  /* the array (SRC_ROWS, SRC_FLAT) */
	char path[PATH_SIZE];
	int rows, cols;
	uint64_t seed;
	double a, b;        /* mean, std or low, high */
} MatSrc;

/* What a matrix's rows and columns stand for, for limit messages. */
typedef struct Limits {
	long max_rows;
	const char *rows_unit;  /* " tokens" or "" */
	const char *rows_name;  /* "LESSON_MAX_TOKENS" */
	long max_cols;
	const char *cols_name;
	int flat_ok;            /* a flat array of numbers is one row (w_e, padding) */
	int generator_ok;
	int zero_one;           /* every number must be 0 or 1 (masks) */
} Limits;

static const Limits LIM_TOKENS_DIM = { LESSON_MAX_TOKENS, " tokens", "LESSON_MAX_TOKENS",
                                       LESSON_MAX_DIM, "LESSON_MAX_DIM", 0, 1, 0 };
static const Limits LIM_DIM_DIM = { LESSON_MAX_DIM, "", "LESSON_MAX_DIM",
                                    LESSON_MAX_DIM, "LESSON_MAX_DIM", 0, 1, 0 };
static const Limits LIM_VECTOR = { 1, "", "", LESSON_MAX_DIM, "LESSON_MAX_DIM", 1, 1, 0 };
static const Limits LIM_MASK = { LESSON_MAX_TOKENS, " tokens", "LESSON_MAX_TOKENS",
                                 LESSON_MAX_TOKENS, "LESSON_MAX_TOKENS", 0, 0, 1 };
static const Limits LIM_PADDING = { 1, "", "", LESSON_MAX_TOKENS, "LESSON_MAX_TOKENS", 1, 0, 1 };

static int check_rows_limit(Ctx *c, const Limits *lim, long rows)
{
	if (lim->max_rows == 1 && rows != 1)
		return fail(c, _("expected 1 row (one vector), got %ld"), rows);
	if (rows > lim->max_rows)
		return fail(c, lim->rows_unit[0] != '\0' ? _("%ld rows is over the limit of %ld tokens (%s)")
		                                         : _("%ld rows is over the limit of %ld (%s)"),
		            rows, lim->max_rows, lim->rows_name);
	return 0;
}

static int check_cols_limit(Ctx *c, const Limits *lim, long cols)
{
	if (cols > lim->max_cols)
		return fail(c, _("%ld columns is over the limit of %ld (%s)"), cols, lim->max_cols, lim->cols_name);
	return 0;
}

/* A number a literal matrix may hold (checked without building its path: matrices have millions). */
static int cell_ok(const cJSON *v, const Limits *lim)
{
	return cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
	       (!lim->zero_one || v->valuedouble == 0.0 || v->valuedouble == 1.0);
}

/* One number of a literal matrix, at the current path. */
static int check_cell_value(Ctx *c, const cJSON *v, const Limits *lim)
{
	double x = 0.0;

	if (read_finite(c, v, &x) != 0)
		return -1;
	if (lim->zero_one && x != 0.0 && x != 1.0)
		return fail(c, _("expected 0 or 1, got %s"), got(v).s);
	return 0;
}

static const char *const generator_keys[] = { "random", "rows", "cols", "seed", "mean", "std", "low", "high", NULL };
static const char *const identity_keys[] = { "identity", NULL };

static int read_generator(Ctx *c, const cJSON *v, const Limits *lim, MatSrc *src)
{
	static const char *const kinds[] = { "normal", "uniform", NULL };
	const cJSON *rnd = get(v, "random"), *id = get(v, "identity");
	long long rows = 0, cols = 0, seed = 0;
	int kind = 0;
	size_t old;

	if (rnd != NULL && id != NULL)
		return fail(c, _("a generator is either \"random\" or \"identity\", not both"));
	if (id != NULL) {
		warn_unknown_keys(c, v, identity_keys);
		old = path_key(c, "identity");
		if (read_whole(c, id, 1, 1e9, _("a whole number ≥ 1 (the size N of the N × N identity)"), &rows) != 0)
			return -1;
		path_set(c, old);
		if (check_rows_limit(c, lim, (long)rows) != 0 || check_cols_limit(c, lim, (long)rows) != 0)
			return -1;
		src->kind = SRC_IDENTITY;
		src->rows = src->cols = (int)rows;
		return 0;
	}
	if (rnd == NULL)
		return fail(c, _("expected a matrix (an array of rows) or a generator ({\"random\": \"normal\", …} or "
		               "{\"identity\": N}), got an object without \"random\" or \"identity\""));
	warn_unknown_keys(c, v, generator_keys);
	if (key_choice(c, v, "random", kinds, &kind) != 0)
		return -1;
	if (get(v, "rows") == NULL)
		return fail(c, _("missing \"rows\" (a generator needs \"rows\" and \"cols\")"));
	if (get(v, "cols") == NULL)
		return fail(c, _("missing \"cols\" (a generator needs \"rows\" and \"cols\")"));
	if (key_whole(c, v, "rows", 1, 1e9, _("a whole number ≥ 1"), &rows) != 0 ||
	    key_whole(c, v, "cols", 1, 1e9, _("a whole number ≥ 1"), &cols) != 0)
		return -1;
	/* rows × cols is checked here, before a single number is generated. */
	if (check_rows_limit(c, lim, (long)rows) != 0 || check_cols_limit(c, lim, (long)cols) != 0)
		return -1;
	if (key_whole(c, v, "seed", 0, MAX_SEED, _("a whole number from 0 to 2^53 = 9007199254740992"), &seed) != 0)
		return -1;
	src->rows = (int)rows;
	src->cols = (int)cols;
	src->seed = (uint64_t)seed;
	if (kind == 0) {
		src->kind = SRC_NORMAL;
		src->a = 0.0;
		src->b = 1.0;
		if (key_finite(c, v, "mean", &src->a) != 0 || key_finite(c, v, "std", &src->b) != 0)
			return -1;
		if (src->b < 0) {
			old = path_key(c, "std");
			return fail(c, _("expected a number ≥ 0, got %s"), got(get(v, "std")).s);
		}
		if (get(v, "low") != NULL || get(v, "high") != NULL)
			warnf(c, _("\"low\" and \"high\" are for \"random\": \"uniform\"; a normal generator uses \"mean\" and \"std\""));
	} else {
		src->kind = SRC_UNIFORM;
		src->a = -1.0;
		src->b = 1.0;
		if (key_finite(c, v, "low", &src->a) != 0 || key_finite(c, v, "high", &src->b) != 0)
			return -1;
		if (src->a > src->b)
			return fail(c, _("\"low\" (%g) is above \"high\" (%g)"), src->a, src->b);
		if (get(v, "mean") != NULL || get(v, "std") != NULL)
			warnf(c, _("\"mean\" and \"std\" are for \"random\": \"normal\"; a uniform generator uses \"low\" and \"high\""));
	}
	return 0;
}

/*
 * Read the shape of the matrix at key (absent: SRC_ABSENT) and check its
 * structure: every row the same length, every entry a finite number.
 */
static int read_matsrc_value(Ctx *c, const cJSON *v, const Limits *lim, MatSrc *src);

static int read_matsrc(Ctx *c, const cJSON *obj, const char *key, const Limits *lim, MatSrc *src)
{
	const cJSON *v = get(obj, key);
	size_t old = c->pathlen;
	int r;

	memset(src, 0, sizeof *src);
	if (v == NULL)
		return 0;
	path_key(c, key);
	r = read_matsrc_value(c, v, lim, src);
	path_set(c, old);
	return r;
}

/* A matrix (literal rows, a flat vector, or a generator) at the current path. */
static int read_matsrc_value(Ctx *c, const cJSON *v, const Limits *lim, MatSrc *src)
{
	const cJSON *row, *x;
	size_t old = c->pathlen, old2;
	long rows = 0, cols = -1, k;
	int r = -1;

	memset(src, 0, sizeof *src);
	snprintf(src->path, sizeof src->path, "%s", c->path);
	src->item = v;
	if (cJSON_IsObject(v)) {
		if (!lim->generator_ok) {
			fail(c, _("expected an array, got an object (this matrix cannot be generated)"));
			goto out;
		}
		r = read_generator(c, v, lim, src);
		goto out;
	}
	if (!cJSON_IsArray(v)) {
		fail(c, lim->flat_ok ? _("expected an array of numbers, got %s") : _("expected a matrix (an array of rows), got %s"),
		     got(v).s);
		goto out;
	}
	if (cJSON_GetArraySize(v) == 0) {
		fail(c, lim->flat_ok ? _("expected at least one number, got an empty array")
		                     : _("expected at least one row, got an empty array"));
		goto out;
	}
	if (lim->flat_ok && !cJSON_IsArray(v->child)) {
		/* A flat vector: one row. */
		src->kind = SRC_FLAT;
		cols = 0;
		cJSON_ArrayForEach(x, v)
			cols++;
		if (check_cols_limit(c, lim, cols) != 0)
			goto out;
		k = 0;
		cJSON_ArrayForEach(x, v) {
			if (cell_ok(x, lim) && ++k)
				continue;
			old2 = path_index(c, (int)k++);
			if (check_cell_value(c, x, lim) != 0)
				goto out;
			path_set(c, old2);
		}
		src->rows = 1;
		src->cols = (int)cols;
		r = 0;
		goto out;
	}
	src->kind = SRC_ROWS;
	cJSON_ArrayForEach(row, v)
		rows++;
	if (check_rows_limit(c, lim, rows) != 0)
		goto out;
	rows = 0;
	cJSON_ArrayForEach(row, v) {
		old2 = path_index(c, (int)rows);
		if (!cJSON_IsArray(row)) {
			fail(c, _("expected a row (an array of numbers), got %s"), got(row).s);
			goto out;
		}
		k = 0;
		cJSON_ArrayForEach(x, row)
			k++;
		if (cols < 0) {
			if (k == 0) {
				fail(c, _("expected at least one number, got an empty row"));
				goto out;
			}
			if (check_cols_limit(c, lim, k) != 0)
				goto out;
			cols = k;
		} else if (k != cols) {
			fail(c, _("expected %ld numbers, got %ld"), cols, k);
			goto out;
		}
		k = 0;
		cJSON_ArrayForEach(x, row) {
			size_t old3;
			if (cell_ok(x, lim) && ++k)
				continue;
			old3 = path_index(c, (int)k++);
			if (check_cell_value(c, x, lim) != 0)
				goto out;
			path_set(c, old3);
		}
		path_set(c, old2);
		rows++;
	}
	src->rows = (int)rows;
	src->cols = (int)cols;
	r = 0;
out:
	path_set(c, old);
	return r;
}

/* Allocate and fill m from src (already checked). */
static int fill_mat(Ctx *c, const MatSrc *src, Mat *m)
{
	const cJSON *row, *x;
	double *p;
	size_t i, count;
	Prng rng;

	m->rows = m->cols = 0;
	m->a = NULL;
	if (src->kind == SRC_ABSENT)
		return 0;
	if (mat_alloc(m, src->rows, src->cols) != 0)
		return fail_oom(c);
	p = m->a;
	count = (size_t)src->rows * (size_t)src->cols;
	switch (src->kind) {
	case SRC_ROWS:
		cJSON_ArrayForEach(row, src->item)
			cJSON_ArrayForEach(x, row)
				*p++ = x->valuedouble;
		break;
	case SRC_FLAT:
		cJSON_ArrayForEach(x, src->item)
			*p++ = x->valuedouble;
		break;
	case SRC_IDENTITY:
		for (i = 0; i < (size_t)src->rows; i++)
			MAT_AT(*m, i, i) = 1.0;
		break;
	case SRC_NORMAL:
		/* One generator per matrix, seeded with its seed; row by row. */
		prng_seed(&rng, src->seed);
		for (i = 0; i < count; i++)
			p[i] = src->a + src->b * prng_normal(&rng);
		break;
	case SRC_UNIFORM:
		prng_seed(&rng, src->seed);
		for (i = 0; i < count; i++)
			p[i] = src->a + (src->b - src->a) * prng_uniform(&rng);
		break;
	case SRC_ABSENT:
		break;
	}
	for (i = 0; i < count; i++)
		if (!isfinite(m->a[i])) {
			size_t old = c->pathlen;
			path_set(c, 0);
			path_append(c, "%s", src->path);
			fail(c, _("the generated numbers overflow to infinity (mean, std, low or high too large)"));
			path_set(c, old);
			mat_free(m);
			return -1;
		}
	return 0;
}

static int is_generated(const MatSrc *s)
{
	return s->kind == SRC_NORMAL || s->kind == SRC_UNIFORM || s->kind == SRC_IDENTITY;
}

/* ------------------------------------------------------------------ */
/* Shapes, checked against each other and the limits                   */
/* ------------------------------------------------------------------ */

/* Everything the shape rules need: filled from the file, or from a Lesson. */
typedef struct Shapes {
	int n, m, d_model, d_src, heads;
	int has_source;
	int ntokens, nsource_tokens;  /* -1: generated labels */
	int wq_r, wq_c, wk_r, wk_c, wv_r, wv_c;
	int has_wo, wo_r, wo_c;
	int has_we, we_r, we_c;
	Positional positional;
	ScoreKind score;
	ScaleKind scale;              /* the formulas follow it (FEAT_UNSCALED, FEAT_SCALE_VALUE) */
	MaskKind mask;
	int d_k, d_v, d_out;          /* derived by check_shapes */
	/* version 2: the block (settings only) */
	int block, has_ffn, swiglu, has_final, d_ff;
	int backward;                 /* a loss: the backward stages exist */
	NormPlace norm;
	NormKind norm_kind;
	/* issue 11: key/value heads, RoPE, ALiBi, the masks of a list, decoding, FlashAttention's tiles */
	int kv_heads, rope, alibi, decode, flash_bq, flash_bk, fill_inf;
	int nparts;
	struct { MaskKind kind; int window, r, c; } part[LESSON_MAX_MASKS]; /* the masks (one without a list) */
} Shapes;

static void shapes_from_lesson(const Lesson *l, Shapes *s);
static void layer_shapes(const Lesson *l, int i, Shapes *sh);

/* The lesson's masks as parts (one part for a single mask, none without). */
static void shapes_masks(Shapes *s, const Lesson *l)
{
	s->mask = l->mask;
	s->fill_inf = l->mask_fill_inf;
	s->nparts = 0;
	if (l->mask == MASK_LIST) {
		for (int i = 0; i < l->nmasks && i < LESSON_MAX_MASKS; i++) {
			s->part[i].kind = l->masks[i].kind;
			s->part[i].window = l->masks[i].window;
			s->part[i].r = l->masks[i].matrix.rows;
			s->part[i].c = l->masks[i].matrix.cols;
			s->nparts++;
		}
	} else if (l->mask != MASK_NONE) {
		s->part[0].kind = l->mask;
		s->part[0].window = l->window;
		s->part[0].r = l->mask_matrix.rows;
		s->part[0].c = l->mask_matrix.cols;
		s->nparts = 1;
	}
}

/* Key/value heads, RoPE, ALiBi, decoding and the tiles, for the shape and presence rules. */
static void shapes_modern(Shapes *s, const Lesson *l)
{
	s->kv_heads = l->kv_heads > 0 ? l->kv_heads : l->heads;
	s->rope = l->rope;
	s->alibi = l->alibi;
	s->decode = l->decode;
	s->flash_bq = l->flash_bq;
	s->flash_bk = l->flash_bk;
}

/* The block's settings, for the presence rules. */
static void shapes_block(Shapes *s, const Lesson *l)
{
	s->block = l->block.present;
	s->norm = l->block.norm;
	s->norm_kind = l->block.norm_kind;
	s->has_ffn = l->block.has_ffn;
	s->swiglu = l->block.activation == ACT_SWIGLU;
	s->d_ff = l->block.d_ff;
}

/* What a lesson of these shapes holds with its computation (lesson_count_numbers); needs d_k, d_v, d_out. */
static double shapes_count(const Shapes *s)
{
	const double N = s->n, M = s->m, h = s->heads, D = s->d_model, Ds = s->d_src, dk = s->d_k, dv = s->d_v;
	const double g = s->kv_heads > 0 ? s->kv_heads : s->heads;
	double mask = 0, own, computed;

	for (int i = 0; i < s->nparts; i++)
		mask += s->part[i].kind == MASK_MATRIX ? N * M : s->part[i].kind == MASK_PADDING ? M : 0;
	/* the lesson: X, source.X, W_q, W_k, W_v, W_o, w_e, the mask */
	own = N * D + (s->has_source ? M * Ds : 0) + D * h * dk + Ds * g * (dk + dv) +
	      (s->has_wo ? h * dv * s->d_out : 0) + (s->score == SCORE_ADDITIVE ? h * dk : 0) + mask;
	/*
	 * the computation: PE and X, PE_src and S, Q, K, V, per head scores, weights (n × m) and weighted, concat,
	 * output, visibility, and the few n × m matrices of the derived stages (scaled, masked, ALiBi's bias and
	 * biased) made when a view asks for them
	 */
	computed = (s->positional != POS_NONE ? 2 : 1) * N * D +
	           (s->has_source ? (s->positional != POS_NONE ? 2 : 1) * M * Ds : 0) + N * h * dk + M * g * (dk + dv) +
	           h * (2 * N * M + N * dv) + N * h * dv + (s->has_wo ? N * s->d_out : 0) + N * M +
	           LESSON_DERIVED_MATRICES * N * M;
	/* RoPE's Q_rot and K_rot; ALiBi's slopes; the tiles' m, l, O and output; the decode rows */
	if (s->rope)
		computed += N * h * dk + M * g * dk;
	if (s->alibi)
		computed += h;
	if (s->flash_bq > 0 && s->flash_bk > 0) {
		const double nkb = ceil(M / s->flash_bk);
		computed += h * (N * nkb * (2 + dv) + N * dv);
	}
	if (s->decode)
		computed += N * h * dk + N * g * (dk + dv) + h * (2 * N * M + N * dv) + N * s->d_out + (s->block ? N * D : 0);
	if (s->block) {
		const double F = s->d_ff;
		/* its parameters: four norm vectors, W_1, W_3, W_2 and their biases; its results: two residuals,
		 * two norms and their statistics, the FFN's three d_ff-wide matrices, its output, the final norm */
		own += 4 * D + 3 * D * F + 2 * F + D;
		computed += N * (6 * D + 4 + 3 * F);
	}
	return own + computed;
}

/* The shape rules of lessons/FORMAT.md. Fills s->d_k, d_v, d_out. Paths are top-level keys. */
static int check_shapes(Ctx *c, Shapes *s)
{
	const size_t base = c->pathlen;
	const char *src_x = stack(c)->part == PART_CROSS ? _("the encoder's d_model")
	                    : s->has_source         ? "source.X"
	                                            : "X";
	double total;
	int r = -1;

#define AT(key) path_key(c, key)
	if (s->n > LESSON_MAX_TOKENS || s->m > LESSON_MAX_TOKENS) {
		AT(s->n > LESSON_MAX_TOKENS ? "X" : "source.X");
		fail(c, _("%d rows is over the limit of %d tokens (LESSON_MAX_TOKENS)"),
		     s->n > LESSON_MAX_TOKENS ? s->n : s->m, LESSON_MAX_TOKENS);
		goto out;
	}
	if (s->ntokens >= 0 && s->ntokens != s->n) {
		AT("tokens");
		fail(c, _("%d labels, but X has %d rows (one label per row)"), s->ntokens, s->n);
		goto out;
	}
	if (s->has_source && s->nsource_tokens >= 0 && s->nsource_tokens != s->m) {
		AT("source.tokens");
		fail(c, _("%d labels, but source.X has %d rows (one label per row)"), s->nsource_tokens, s->m);
		goto out;
	}
	if (s->heads > LESSON_MAX_HEADS) {
		AT("heads");
		fail(c, _("%d is over the limit of %d heads (LESSON_MAX_HEADS)"), s->heads, LESSON_MAX_HEADS);
		goto out;
	}
	if (s->wq_r != s->d_model) {
		AT("W_q");
		fail(c, _("expected %d rows (d_model, the columns of X), got %d"), s->d_model, s->wq_r);
		goto out;
	}
	if (s->wk_r != s->d_src) {
		AT("W_k");
		fail(c, stack(c)->part == PART_CROSS ? _("expected %d rows (%s), got %d") : _("expected %d rows (the columns of %s), got %d"),
		     s->d_src, src_x, s->wk_r);
		goto out;
	}
	if (s->wv_r != s->d_src) {
		AT("W_v");
		fail(c, stack(c)->part == PART_CROSS ? _("expected %d rows (%s), got %d") : _("expected %d rows (the columns of %s), got %d"),
		     s->d_src, src_x, s->wv_r);
		goto out;
	}
	if (s->kv_heads <= 0)
		s->kv_heads = s->heads;
	if (s->kv_heads == s->heads && s->wk_c != s->wq_c) {
		AT("W_k");
		fail(c, _("expected %d columns (as many as W_q: heads × d_k), got %d"), s->wq_c, s->wk_c);
		goto out;
	}
	if (s->wq_c % s->heads != 0) {
		AT("heads");
		fail(c, _("%d does not divide the %d columns of W_q"), s->heads, s->wq_c);
		goto out;
	}
	if (s->kv_heads != s->heads && s->wk_c != s->kv_heads * (s->wq_c / s->heads)) {
		AT("W_k");
		fail(c, _("expected %d columns (kv_heads %d × d_k %d), got %d"), s->kv_heads * (s->wq_c / s->heads),
		     s->kv_heads, s->wq_c / s->heads, s->wk_c);
		goto out;
	}
	if (s->wv_c % s->kv_heads != 0) {
		AT(s->kv_heads == s->heads ? "heads" : "kv_heads");
		fail(c, _("%d does not divide the %d columns of W_v"), s->kv_heads, s->wv_c);
		goto out;
	}
	s->d_k = s->wq_c / s->heads;
	s->d_v = s->wv_c / s->kv_heads;
	if (s->has_wo && s->wo_r != s->heads * s->d_v) {
		AT("W_o");
		if (s->kv_heads == s->heads)
			fail(c, _("expected %d rows (heads × d_v, the columns of W_v), got %d"), s->wv_c, s->wo_r);
		else
			fail(c, _("expected %d rows (heads %d × d_v %d, the columns of concat), got %d"), s->heads * s->d_v,
			     s->heads, s->d_v, s->wo_r);
		goto out;
	}
	s->d_out = s->has_wo ? s->wo_c : s->heads * s->d_v;
	if (s->rope && s->d_k % 2 != 0) {
		AT("rope");
		fail(c, _("needs an even d_k (q and k are rotated in pairs of columns), but d_k = %d"), s->d_k);
		goto out;
	}
	if (s->score == SCORE_ADDITIVE) {
		if (!s->has_we) {
			AT("w_e");
			fail(c, _("missing: \"score\": \"additive\" needs w_e, %d numbers (the columns of W_q)"), s->wq_c);
			goto out;
		}
		if (s->we_r != 1 || s->we_c != s->wq_c) {
			AT("w_e");
			fail(c, _("expected %d numbers (heads × d_k, the columns of W_q), got %d"),
			     s->wq_c, s->we_r * s->we_c);
			goto out;
		}
	}
	for (int i = 0; i < s->nparts; i++) {
		char where[40];
		const int list = s->mask == MASK_LIST;
		snprintf(where, sizeof where, list ? "mask[%d]" : "mask", i);
		switch (s->part[i].kind) {
		case MASK_CAUSAL:
		case MASK_WINDOW:
			if (s->n != s->m) {
				AT("mask");
				fail(c, _("%s needs a square score matrix, but n = %d and m = %d"),
				     s->part[i].kind == MASK_CAUSAL ? "\"causal\"" : "a window", s->n, s->m);
				goto out;
			}
			break;
		case MASK_PADDING:
			if (s->part[i].c != s->m) {
				AT(where);
				path_key(c, "padding");
				fail(c, _("expected %d numbers (one per key, m = %d), got %d"), s->m, s->m, s->part[i].c);
				goto out;
			}
			break;
		case MASK_MATRIX:
			if (s->part[i].r != s->n) {
				AT(where);
				fail(c, _("expected %d rows (n, one per query), got %d"), s->n, s->part[i].r);
				goto out;
			}
			if (s->part[i].c != s->m) {
				AT(where);
				fail(c, _("expected %d columns (m, one per key), got %d"), s->m, s->part[i].c);
				goto out;
			}
			break;
		default:
			break;
		}
	}
	if (s->decode) {
		int causal = 0;
		for (int i = 0; i < s->nparts; i++)
			causal |= s->part[i].kind == MASK_CAUSAL || s->part[i].kind == MASK_WINDOW;
		AT("decode");
		if (s->has_source) {
			fail(c, _("needs self-attention (a lesson with a source is not generated token by token)"));
			goto out;
		}
		if (!causal) {
			fail(c, _("needs a causal or window mask (a generated token sees only the tokens before it)"));
			goto out;
		}
		if (!s->fill_inf) {
			fail(c, _("needs \"mask_fill\": \"-inf\" (with a finite fill the full computation also weighs the future "
			        "tokens a cache does not hold)"));
			goto out;
		}
		path_set(c, base);
	}
	if (s->flash_bq != 0 || s->flash_bk != 0) {
		if (s->flash_bq < 1 || s->flash_bq > s->n) {
			AT("flash");
			path_key(c, "block_q");
			fail(c, _("expected a whole number from 1 to %d (n, the query rows), got %d"), s->n, s->flash_bq);
			goto out;
		}
		if (s->flash_bk < 1 || s->flash_bk > s->m) {
			AT("flash");
			path_key(c, "block_k");
			fail(c, _("expected a whole number from 1 to %d (m, the key rows), got %d"), s->m, s->flash_bk);
			goto out;
		}
	}
	/* Counted from the shapes, before a single number is allocated; a compare variant counts with its lesson. */
	total = stack(c)->numbers_before + shapes_count(s);
	if (total > (double)LESSON_MAX_NUMBERS) {
		fail(c, _("too large: its matrices and stages%s would hold %.0f numbers, over the limit of %ld "
		        "(LESSON_MAX_NUMBERS); make n, d_model or heads smaller"),
		     stack(c)->numbers_before > 0 ? _(", with the lesson's own,") : "", total, (long)LESSON_MAX_NUMBERS);
		goto out;
	}
	/* Each additive score is d_k tanh terms, far slower than the dot product's multiply-adds. */
	if (s->score == SCORE_ADDITIVE &&
	    (double)s->n * s->m * s->heads * s->d_k > (double)LESSON_MAX_ADDITIVE_TERMS) {
		AT("score");
		fail(c, _("additive scores of n = %d queries, m = %d keys and h·d_k = %d would take %.0f tanh terms, over "
		        "the limit of %ld (LESSON_MAX_ADDITIVE_TERMS); make n, m or d_k smaller"), s->n, s->m,
		     s->heads * s->d_k, (double)s->n * s->m * s->heads * s->d_k, (long)LESSON_MAX_ADDITIVE_TERMS);
		goto out;
	}
	r = 0;
out:
#undef AT
	path_set(c, base);
	return r;
}

/* The sizes and features the catalogue's shape and presence rules read. */
static void shapes_shape(const Shapes *s, LessonShape *out)
{
	memset(out, 0, sizeof *out);
	out->dim[DIM_ONE] = 1;
	out->dim[DIM_N] = s->n;
	out->dim[DIM_M] = s->m;
	out->dim[DIM_D_MODEL] = s->d_model;
	out->dim[DIM_D_SRC] = s->d_src;
	out->dim[DIM_HDK] = s->heads * s->d_k;
	out->dim[DIM_HDV] = s->heads * s->d_v;
	out->dim[DIM_GDK] = (s->kv_heads > 0 ? s->kv_heads : s->heads) * s->d_k;
	out->dim[DIM_GDV] = (s->kv_heads > 0 ? s->kv_heads : s->heads) * s->d_v;
	out->dim[DIM_NKB] = s->flash_bk > 0 ? (s->m + s->flash_bk - 1) / s->flash_bk : 0;
	out->dim[DIM_NKB_DV] = out->dim[DIM_NKB] * s->d_v;
	out->kv_heads = s->kv_heads > 0 ? s->kv_heads : s->heads;
	out->block_q = s->flash_bq;
	out->block_k = s->flash_bk;
	out->dim[DIM_DK] = s->d_k;
	out->dim[DIM_DV] = s->d_v;
	out->dim[DIM_D_OUT] = s->d_out;
	out->dim[DIM_D_FF] = s->d_ff;
	out->dim[DIM_TWO] = 2;
	out->heads = s->heads;
	out->features = (s->positional != POS_NONE ? FEAT_POSITIONAL : 0u) | (s->heads > 1 ? FEAT_MULTIHEAD : 0u) |
	                (s->mask != MASK_NONE ? FEAT_MASK : 0u) | (s->has_wo ? FEAT_WO : 0u) |
	                (s->has_source ? FEAT_SOURCE : 0u) | (s->score == SCORE_ADDITIVE ? FEAT_ADDITIVE : 0u);
	if (s->block) {
		out->features |= FEAT_BLOCK;
		if (s->norm != NORM_NONE)
			out->features |= FEAT_NORM | (s->norm == NORM_PRE ? FEAT_PRENORM : FEAT_POSTNORM);
		if (s->norm_kind == NORM_LAYERNORM)
			out->features |= FEAT_LAYERNORM;
		if (s->has_ffn)
			out->features |= FEAT_FFN | (s->swiglu ? FEAT_SWIGLU : 0u);
	}
	if (s->has_final)
		out->features |= FEAT_FINAL | (s->norm_kind == NORM_LAYERNORM ? FEAT_LAYERNORM : 0u);
	if (s->backward)
		out->features |= FEAT_BACKWARD;
	if (s->scale == SCALE_NONE)
		out->features |= FEAT_UNSCALED;
	else if (s->scale == SCALE_VALUE)
		out->features |= FEAT_SCALE_VALUE;
	if (s->rope)
		out->features |= FEAT_ROPE;
	if (s->alibi)
		out->features |= FEAT_ALIBI;
	if (out->kv_heads < s->heads)
		out->features |= FEAT_GQA;
	for (int i = 0; i < s->nparts; i++)
		if (s->part[i].kind == MASK_WINDOW)
			out->features |= FEAT_WINDOW;
	if (s->decode)
		out->features |= FEAT_DECODE;
	if (s->flash_bq > 0 && s->flash_bk > 0)
		out->features |= FEAT_FLASH;
}

/* Check a cell reference (focus, quiz answer) at the current path. */
static int check_cellref(Ctx *c, const Shapes *s, const CellRef *ref)
{
	const char *names[AM_COUNT], *why;
	int which = matrix_find(ref->matrix), rows, cols, i, r = -1;
	size_t old = c->pathlen;
	LessonShape sh;

	if (which < 0) {
		for (i = 0; i < AM_COUNT; i++)
			names[i] = matrix_name((AttnMatrix)i);
		path_key(c, "matrix");
		fail(c, _("unknown matrix %s%s"), quoted(ref->matrix).s, did_you_mean(ref->matrix, names, AM_COUNT).s);
		goto out;
	}
	shapes_shape(s, &sh);
	matrix_shape(&sh, (AttnMatrix)which, &rows, &cols);
	if (!matrix_present(&sh, (AttnMatrix)which, &why)) {
		path_key(c, "matrix");
		fail(c, _("this lesson has no %s (%s)"), matrix_name((AttnMatrix)which), why);
		goto out;
	}
	if ((matrix_kind((AttnMatrix)which)->flags & MF_PER_HEAD) && (ref->head < 0 || ref->head >= s->heads)) {
		path_key(c, "head");
		fail(c, ngettext("%d is outside the %d head of this lesson", "%d is outside the %d heads of this lesson", (unsigned long)s->heads),
		     ref->head, s->heads);
		goto out;
	}
	if (ref->row < 0 || ref->row >= rows) {
		path_key(c, "row");
		fail(c, ngettext("%d is outside the %d row of %s", "%d is outside the %d rows of %s", (unsigned long)rows), ref->row, rows,
		     matrix_name((AttnMatrix)which));
		goto out;
	}
	if (ref->col < 0 || ref->col >= cols) {
		path_key(c, "col");
		fail(c, ngettext("%d is outside the %d column of %s", "%d is outside the %d columns of %s", (unsigned long)cols), ref->col, cols,
		     matrix_name((AttnMatrix)which));
		goto out;
	}
	r = 0;
out:
	path_set(c, old);
	return r;
}

/* A step's stage and head against this lesson (paths: steps[i].stage, steps[i].head). */
static int check_step_stage(Ctx *c, const Shapes *s, const Step *st)
{
	size_t old = c->pathlen;
	int r = 0;

	LessonShape sh;

	shapes_shape(s, &sh);
	if (!stage_present(&sh, st->stage)) {
		path_key(c, "stage");
		r = fail(c, _("the stage \"%s\" is not in this lesson (%s)"), stage_name(st->stage),
		         stage_absent(&sh, st->stage));
	} else if (st->head < 0 || st->head >= s->heads) {
		path_key(c, "head");
		r = fail(c, ngettext("%d is outside the %d head of this lesson", "%d is outside the %d heads of this lesson", (unsigned long)s->heads),
		         st->head, s->heads);
	}
	path_set(c, old);
	return r;
}

/* ------------------------------------------------------------------ */
/* Steps and quizzes                                                   */
/* ------------------------------------------------------------------ */

static const char *const step_keys[] = { "stage", "layer", "encoder", "head", "text", "focus", "quiz", "compare", "t",
	                                 "tile", NULL };
static const char *const cell_keys[] = { "matrix", "head", "row", "col", NULL };
static const char *const quiz_keys[] = { "question", "choices", "answer", "tolerance", "hint", NULL };

static void step_free(Step *st)
{
	int i;

	/* The quiz's texts whether or not it is still asked: an edit may turn a question off (has_quiz = 0). */
	text_free(&st->text);
	text_free(&st->quiz.question);
	for (i = 0; i < st->quiz.nchoices; i++)
		text_free(&st->quiz.choices[i]);
	free(st->quiz.choices);
	text_free(&st->quiz.hint);
	memset(st, 0, sizeof *st);
}

/* {"matrix": NAME, "head": H, "row": R, "col": C} at the current path; head defaults to def_head. */
static int read_cellref(Ctx *c, const Shapes *s, const cJSON *v, int def_head, CellRef *ref)
{
	const cJSON *name;
	long long head = def_head, row = 0, col = 0;
	size_t old;

	if (!cJSON_IsObject(v))
		return fail(c, _("expected a cell {\"matrix\": \"weights\", \"head\": 0, \"row\": 1, \"col\": 0}, got %s"),
		            got(v).s);
	warn_unknown_keys(c, v, cell_keys);
	name = get(v, "matrix");
	if (name == NULL)
		return fail(c, _("missing \"matrix\" (the name of a matrix, such as \"weights\")"));
	if (get(v, "row") == NULL)
		return fail(c, _("missing \"row\""));
	if (get(v, "col") == NULL)
		return fail(c, _("missing \"col\""));
	old = path_key(c, "matrix");
	if (!cJSON_IsString(name))
		return fail(c, _("expected a matrix name, got %s"), got(name).s);
	path_set(c, old);
	if (key_whole(c, v, "head", 0, 1e9, _("a whole number ≥ 0"), &head) != 0 ||
	    key_whole(c, v, "row", -1e9, 1e9, _("a whole number ≥ 0"), &row) != 0 ||
	    key_whole(c, v, "col", -1e9, 1e9, _("a whole number ≥ 0"), &col) != 0)
		return -1;
	memset(ref, 0, sizeof *ref);
	if (strlen(name->valuestring) >= sizeof ref->matrix || matrix_find(name->valuestring) < 0) {
		const char *names[AM_COUNT];
		int i;
		for (i = 0; i < AM_COUNT; i++)
			names[i] = matrix_name((AttnMatrix)i);
		old = path_key(c, "matrix");
		return fail(c, _("unknown matrix %s%s"), got(name).s, did_you_mean(name->valuestring, names, AM_COUNT).s);
	}
	/* The canonical spelling, whatever case the file used. */
	snprintf(ref->matrix, sizeof ref->matrix, "%s",
	         matrix_name((AttnMatrix)matrix_find(name->valuestring)));
	ref->head = (int)head;
	ref->row = (int)row;
	ref->col = (int)col;
	return check_cellref(c, s, ref);
}

static int read_quiz(Ctx *c, const Shapes *s, const cJSON *v, int def_head, Quiz *q)
{
	const cJSON *choices = NULL, *answer, *it;
	size_t old;
	long long idx;
	int n = 0;

	memset(q, 0, sizeof *q);
	q->tolerance = 0.01;
	if (!cJSON_IsObject(v))
		return fail(c, _("expected an object {\"question\": …, \"answer\": …}, got %s"), got(v).s);
	warn_unknown_keys(c, v, quiz_keys);
	if (get(v, "question") == NULL)
		return fail(c, _("missing \"question\""));
	if (key_text(c, v, "question", &q->question) != 0 || key_text(c, v, "hint", &q->hint) != 0)
		return -1;
	answer = get(v, "answer");
	if (answer == NULL)
		return fail(c, _("missing \"answer\" (the index of the right choice, or a cell {\"matrix\": …})"));
	choices = get(v, "choices");
	if (choices != NULL) {
		old = path_key(c, "choices");
		if (!cJSON_IsArray(choices)) {
			fail(c, _("expected an array of texts, got %s"), got(choices).s);
			goto out;
		}
		cJSON_ArrayForEach(it, choices)
			n++;
		if (n < 2) {
			fail(c, _("expected at least 2 choices, got %d"), n);
			goto out;
		}
		q->choices = calloc((size_t)n, sizeof *q->choices);
		if (q->choices == NULL) {
			fail_oom(c);
			goto out;
		}
		cJSON_ArrayForEach(it, choices) {
			size_t old2 = path_index(c, q->nchoices);
			if (read_text(c, it, &q->choices[q->nchoices]) != 0)
				goto out;
			q->nchoices++;
			path_set(c, old2);
		}
		path_set(c, old);
		old = path_key(c, "answer");
		if (!cJSON_IsNumber(answer)) {
			fail(c, _("expected the index of the right choice, from 0 (0 to %d; the screen numbers them 1 to %d), got %s"),
			     n - 1, n, got(answer).s);
			goto out;
		}
		if (read_whole(c, answer, -1e9, 1e9, _("a whole number (the index of the right choice, from 0: the screen's choice 1 is 0)"), &idx) != 0)
			goto out;
		if (idx < 0 || idx >= n) {
			fail(c, _("%lld is outside the %d choices (0 to %d: the file counts from 0, the screen numbers them 1 to %d)"),
			     idx, n, n - 1, n);
			goto out;
		}
		q->answer_choice = (int)idx;
		path_set(c, old);
		if (get(v, "tolerance") != NULL)
			warnf(c, _("\"tolerance\" is not used by a question with choices"));
	} else {
		old = path_key(c, "answer");
		if (!cJSON_IsObject(answer)) {
			fail(c, _("expected a cell {\"matrix\": …, \"row\": …, \"col\": …} (or give \"choices\" and "
			        "the index of the right one), got %s"), got(answer).s);
			goto out;
		}
		if (read_cellref(c, s, answer, def_head, &q->answer_cell) != 0)
			goto out;
		path_set(c, old);
		if (key_finite(c, v, "tolerance", &q->tolerance) != 0)
			goto out;
		if (!(q->tolerance > 0)) {
			old = path_key(c, "tolerance");
			fail(c, _("expected a number > 0, got %s"), got(get(v, "tolerance")).s);
			goto out;
		}
	}
	return 0;
out:
	return -1;
}

/* "t" on a decode step (the generation step shown), "tile": [query block, key block] on a flash step. */
static int read_step_place(Ctx *c, const Shapes *s, const cJSON *v, Step *st)
{
	const cJSON *tile = get(v, "tile");
	long long t = -1;
	size_t old;

	if (get(v, "t") != NULL) {
		if (st->stage != STAGE_DECODE) {
			old = path_key(c, "t");
			fail(c, _("\"t\" (a generation step) belongs to a \"decode\" step, not %s"), stage_name(st->stage));
			path_set(c, old);
			return -1;
		}
		char expect[64];
		snprintf(expect, sizeof expect, _("a position from 0 to %d (n − 1)"), s->n - 1);
		if (key_whole(c, v, "t", 0, s->n - 1, expect, &t) != 0)
			return -1;
		st->t = (int)t;
	}
	if (tile == NULL)
		return 0;
	old = path_key(c, "tile");
	if (st->stage != STAGE_FLASH) {
		fail(c, _("\"tile\" belongs to a \"flash\" step, not %s"), stage_name(st->stage));
	} else if (!cJSON_IsArray(tile) || cJSON_GetArraySize(tile) != 2 || !cJSON_IsNumber(tile->child) ||
	           !cJSON_IsNumber(tile->child->next)) {
		fail(c, _("expected [query block, key block], got %s"), got(tile).s);
	} else {
		const int nqb = (s->n + s->flash_bq - 1) / s->flash_bq, nkb = (s->m + s->flash_bk - 1) / s->flash_bk;
		const double q = tile->child->valuedouble, k = tile->child->next->valuedouble;
		if (q != floor(q) || q < 0 || q >= nqb || k != floor(k) || k < 0 || k >= nkb)
			fail(c, _("expected [query block 0 … %d, key block 0 … %d] (block_q %d, block_k %d), got [%g, %g]"), nqb - 1,
			     nkb - 1, s->flash_bq, s->flash_bk, q, k);
		else {
			st->tile_q = (int)q;
			st->tile_k = (int)k;
		}
	}
	path_set(c, old);
	return c->err != NULL ? -1 : 0;
}

static int read_step(Ctx *c, const Shapes *top, const cJSON *v, int has_compare, Step *st)
{
	const cJSON *stage, *focus, *quiz, *cmp;
	long long head = 0, layer = 0;
	Shapes layer_shapes_of;
	const Shapes *s = top;
	LessonShape lsh;
	size_t old;
	int k;

	memset(st, 0, sizeof *st);
	st->compare = -1;
	st->t = st->tile_q = st->tile_k = -1;
	if (!cJSON_IsObject(v))
		return fail(c, _("expected a step {\"stage\": …, \"text\": …}, got %s"), got(v).s);
	warn_unknown_keys(c, v, step_keys);
	stage = get(v, "stage");
	if (stage == NULL)
		return fail(c, _("missing \"stage\" (one of input, positional, project, split, scores, scale, mask, "
		               "softmax, weighted, concat, output)"));
	/* The layer first: the stage and the cells are that layer's. */
	if (key_whole(c, v, "layer", 0, 1e9, _("a whole number ≥ 0"), &layer) != 0)
		return -1;
	if (get(v, "encoder") != NULL) {
		const cJSON *e = get(v, "encoder");
		old = path_key(c, "encoder");
		if (!cJSON_IsBool(e))
			return fail(c, _("expected true (the step shows a layer of the encoder) or false, got %s"), got(e).s);
		if (cJSON_IsTrue(e) && stack(c)->encoder == NULL)
			return fail(c, _("only in an encoder\u2013decoder lesson (one with \"encoder\"): this lesson has no encoder"));
		path_set(c, old);
		st->encoder = cJSON_IsTrue(e);
	}
	if (st->encoder) { /* a layer of the encoder, read in full before the decoder's links */
		const Lesson *enc = stack(c)->encoder;
		if (layer >= lesson_layers(enc)) {
			old = path_key(c, "layer");
			return fail(c, ngettext("%lld is outside the encoder's %d layer (they count from 0)",
			                        "%lld is outside the encoder's %d layers (they count from 0)", (unsigned long)lesson_layers(enc)),
			            layer, lesson_layers(enc));
		}
		st->layer = (int)layer;
		layer_shapes(enc, st->layer, &layer_shapes_of);
		s = &layer_shapes_of;
	} else if (layer >= (stack(c)->nlayers > 0 ? stack(c)->nlayers : 1)) {
		old = path_key(c, "layer");
		return fail(c, ngettext("%lld is outside the %d layer of this lesson (they count from 0)",
		                        "%lld is outside the %d layers of this lesson (they count from 0)",
		                        (unsigned long)(stack(c)->nlayers > 0 ? stack(c)->nlayers : 1)),
		            layer, stack(c)->nlayers > 0 ? stack(c)->nlayers : 1);
	} else if ((st->layer = (int)layer) > 0) {
		shapes_from_lesson(stack(c)->layers[layer], &layer_shapes_of);
		layer_shapes_of.positional = POS_NONE; /* positions are added once, before layer 0 */
		layer_shapes_of.has_final = stack(c)->stack_final && layer == stack(c)->nlayers - 1;
		s = &layer_shapes_of;
	} else if (stack(c)->nlayers > 1) {
		layer_shapes_of = *top;
		layer_shapes_of.has_final = 0;
		s = &layer_shapes_of;
	}
	old = path_key(c, "stage");
	if (!cJSON_IsString(stage))
		return fail(c, _("expected a stage name, got %s"), got(stage).s);
	shapes_shape(s, &lsh);
	k = stage_lookup(&lsh, stage->valuestring);
	if (k < 0) {
		const char *names[STAGE_COUNT];
		for (k = 0; k < STAGE_COUNT; k++)
			names[k] = stage_name((Stage)k);
		return fail(c, _("unknown stage %s%s"), got(stage).s, did_you_mean(stage->valuestring, names, STAGE_COUNT).s);
	}
	path_set(c, old);
	st->stage = (Stage)k;
	if (key_whole(c, v, "head", 0, 1e9, _("a whole number ≥ 0"), &head) != 0)
		return -1;
	st->head = (int)head;
	if (check_step_stage(c, s, st) != 0)
		return -1;
	if (key_text(c, v, "text", &st->text) != 0 || read_step_place(c, s, v, st) != 0)
		return -1;
	focus = get(v, "focus");
	if (focus != NULL) {
		old = path_key(c, "focus");
		if (read_cellref(c, s, focus, st->head, &st->focus) != 0)
			return -1;
		path_set(c, old);
		st->has_focus = 1;
	}
	cmp = get(v, "compare");
	if (cmp != NULL) {
		old = path_key(c, "compare");
		if (!cJSON_IsBool(cmp))
			return fail(c, _("expected true (show the compare variant beside the results) or false, got %s"),
			            got(cmp).s);
		if (!has_compare)
			return fail(c, _("this lesson has no \"compare\" variant to show"));
		st->compare = cJSON_IsTrue(cmp);
		path_set(c, old);
	}
	quiz = get(v, "quiz");
	if (quiz != NULL) {
		old = path_key(c, "quiz");
		st->has_quiz = 1; /* so step_free frees what read_quiz made, even on failure */
		if (read_quiz(c, s, quiz, st->head, &st->quiz) != 0)
			return -1;
		path_set(c, old);
	}
	return 0;
}

static int read_steps(Ctx *c, const Shapes *s, const cJSON *root, Lesson *l)
{
	const cJSON *steps = get(root, "steps"), *it;
	size_t old;
	int n = 0;

	if (steps == NULL)
		return 0;
	old = path_key(c, "steps");
	if (!cJSON_IsArray(steps))
		return fail(c, _("expected an array of steps, got %s"), got(steps).s);
	cJSON_ArrayForEach(it, steps)
		n++;
	if (n > LESSON_MAX_STEPS)
		return fail(c, _("%d steps is over the limit of %d (LESSON_MAX_STEPS)"), n, LESSON_MAX_STEPS);
	if (n == 0) {
		path_set(c, old);
		return 0;
	}
	l->steps = calloc((size_t)n, sizeof *l->steps);
	if (l->steps == NULL)
		return fail_oom(c);
	cJSON_ArrayForEach(it, steps) {
		size_t old2 = path_index(c, l->nsteps);
		int r = read_step(c, s, it, get(root, "compare") != NULL || stack(c)->outer_compare, &l->steps[l->nsteps]);
		l->nsteps++; /* counted even on failure: lesson_free frees its parts */
		if (r != 0)
			return -1;
		path_set(c, old2);
	}
	path_set(c, old);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Tokens                                                              */
/* ------------------------------------------------------------------ */

/* Labels from an array of strings, or generated prefix0 … when arr is NULL. */
static int read_tokens(Ctx *c, const cJSON *arr, int n, const char *prefix, char ***out)
{
	const cJSON *it;
	char **t, label[32];
	int i = 0;

	t = calloc((size_t)n + 1, sizeof *t);
	*out = t;
	if (t == NULL)
		return fail_oom(c);
	if (arr == NULL) {
		for (i = 0; i < n; i++) {
			snprintf(label, sizeof label, "%s%d", prefix, i);
			t[i] = strdup(label);
			if (t[i] == NULL)
				return fail_oom(c);
		}
		return 0;
	}
	cJSON_ArrayForEach(it, arr) {
		size_t old = path_index(c, i);
		if (read_string(c, it, &t[i]) != 0)
			return -1;
		path_set(c, old);
		i++;
	}
	return 0;
}

static void tokens_free(char **t, int n)
{
	int i;

	if (t == NULL)
		return;
	for (i = 0; i < n; i++)
		free(t[i]);
	free(t);
}

/* Count the labels of the tokens array at key (path key), or -1 when absent. */
static int count_tokens(Ctx *c, const cJSON *obj, const char *key, const cJSON **arr)
{
	const cJSON *v = get(obj, key), *it;
	size_t old;
	int n = 0;

	*arr = v;
	if (v == NULL)
		return -1;
	old = path_key(c, key);
	if (!cJSON_IsArray(v)) {
		fail(c, _("expected an array of labels (strings), got %s"), got(v).s);
		return -2;
	}
	cJSON_ArrayForEach(it, v)
		n++;
	if (n == 0) {
		fail(c, _("expected at least one label, got an empty array"));
		return -2;
	}
	if (n > LESSON_MAX_TOKENS) {
		fail(c, _("%d labels is over the limit of %d tokens (LESSON_MAX_TOKENS)"), n, LESSON_MAX_TOKENS);
		return -2;
	}
	path_set(c, old);
	return n;
}

/* ------------------------------------------------------------------ */
/* Version 2: biases, the Transformer block, layers                    */
/* ------------------------------------------------------------------ */

static const char *const v2_keys[] = { "b_q", "b_k", "b_v", "b_o", "block", "layers", "backward", "encoder",
	                               "kv_heads", "rope", "alibi", "decode", "flash", NULL };
static const char *const rope_keys[] = { "base", "style", NULL };
static const char *const alibi_keys[] = { "slopes", NULL };
static const char *const flash_keys[] = { "block_q", "block_k", NULL };
static const char *const backward_keys[] = { "target", "dOutput", NULL };

static int read_shaped(Ctx *c, const cJSON *obj, const char *key, int rows, int cols, const char *rows_why,
                       const char *cols_why, double dflt, Mat *out);

/* "backward": {"target": n × d_out} or {"dOutput": n × d_out}, against the final output's shape. */
static int read_backward(Ctx *c, const cJSON *root, Lesson *l)
{
	const cJSON *b = get(root, "backward");
	const int has_t = b != NULL && get(b, "target") != NULL, has_d = b != NULL && get(b, "dOutput") != NULL;
	size_t old;
	int r = -1;

	if (b == NULL)
		return 0;
	old = path_key(c, "backward");
	if (!cJSON_IsObject(b) || has_t == has_d) {
		fail(c, _("expected exactly one of {\"target\": n × d_out} (the loss is ½ Σ (output − target)²) or "
		        "{\"dOutput\": n × d_out} (the gradient at the output, given)%s"),
		     cJSON_IsObject(b) && has_t ? _(", not both") : "");
		goto out;
	}
	warn_unknown_keys(c, b, backward_keys);
	l->backward = has_t ? BACKWARD_TARGET : BACKWARD_DOUTPUT;
	r = read_shaped(c, b, has_t ? "target" : "dOutput", l->n, l->block.present || l->nlayers > 0 ? l->d_model : l->d_out,
	                _("n, one per token"), l->block.present || l->nlayers > 0 ? _("d_model, the output's columns")
	                                                                        : _("d_out, the output's columns"),
	                -1, &l->target);
out:
	path_set(c, old);
	return r;
}
static const char *const block_keys[] = { "norm", "norm_kind", "eps", "ln1", "ln2", "ln3", "ffn", "final_norm", NULL };
static const char *const norm_keys[] = { "gamma", "beta", NULL };
static const char *const ffn_keys[] = { "W_1", "b_1", "W_2", "b_2", "W_3", "b_3", "activation", NULL };
static const char *const layer_keys[] = { "heads", "kv_heads", "W_q", "W_k", "W_v", "W_o", "w_e", "b_q", "b_k",
	                                  "b_v", "b_o", "block", NULL };

/* A version-2 key in a version-1 file, or a key this build does not read yet. */
static int check_version_keys(Ctx *c, const cJSON *root, int version)
{
	size_t old;

	for (int i = 0; v2_keys[i] != NULL; i++) {
		if (get(root, v2_keys[i]) == NULL)
			continue;
		old = path_key(c, v2_keys[i]);
		if (version < 2)
			fail(c, _("needs format version 2: start the lesson with \"attnviz\": 2"));
		path_set(c, old);
		if (c->err != NULL)
			return -1;
	}
	return 0;
}

/* The settings of "block" (its matrices are read with the others, once the shapes are known). */
static int read_block_settings(Ctx *c, const cJSON *root, Lesson *l)
{
	static const char *const places[] = { "post", "pre", "none", NULL };
	static const char *const kinds[] = { "layernorm", "rmsnorm", NULL };
	static const char *const acts[] = { "relu", "gelu", "swiglu", NULL };
	const cJSON *b = get(root, "block"), *ffn, *fin;
	size_t old;
	int k, r = -1;

	l->block.eps = 1e-5;
	if (b == NULL)
		return 0;
	old = path_key(c, "block");
	if (!cJSON_IsObject(b)) {
		fail(c, _("expected an object {\"norm\": \"post\", \"ffn\": {\"W_1\": …, \"W_2\": …}, …}, got %s"), got(b).s);
		goto out;
	}
	warn_unknown_keys(c, b, block_keys);
	l->block.present = 1;
	if (get(b, "ln3") != NULL && stack(c)->part == PART_LAYER) {
		path_key(c, "ln3");
		fail(c, _("only a decoder layer has a third norm (its cross-attention is the extra sublayer); "
		        "an encoder layer or a stack's layer has ln1 and ln2"));
		goto out;
	}
	k = 0;
	if (key_choice(c, b, "norm", places, &k) != 0)
		goto out;
	l->block.norm = (NormPlace)k;
	k = 0;
	if (key_choice(c, b, "norm_kind", kinds, &k) != 0)
		goto out;
	l->block.norm_kind = (NormKind)k;
	if (key_finite(c, b, "eps", &l->block.eps) != 0)
		goto out;
	if (!(l->block.eps > 0)) {
		path_key(c, "eps");
		fail(c, _("expected a number > 0 (it keeps the norm from dividing by 0), got %g"), l->block.eps);
		goto out;
	}
	ffn = stack(c)->part == PART_SELF ? NULL : get(b, "ffn"); /* a decoder's FFN follows its cross-attention */
	if (ffn != NULL) {
		size_t old2 = path_key(c, "ffn");
		if (!cJSON_IsObject(ffn)) {
			fail(c, _("expected an object {\"W_1\": …, \"W_2\": …, \"activation\": \"relu\"}, got %s"), got(ffn).s);
			goto out;
		}
		warn_unknown_keys(c, ffn, ffn_keys);
		l->block.has_ffn = 1;
		k = 0;
		if (key_choice(c, ffn, "activation", acts, &k) != 0)
			goto out;
		l->block.activation = (Activation)k;
		/* d_ff now, so that steps can point at the FFN's cells (the numbers are read later) */
		if (get(ffn, "W_1") != NULL) {
			MatSrc w1;
			if (read_matsrc(c, ffn, "W_1", &LIM_DIM_DIM, &w1) != 0)
				goto out;
			l->block.d_ff = w1.cols;
		}
		path_set(c, old2);
	}
	/* final_norm belongs to the stack, not a layer: read from the top-level block (lesson_from_json). */
	fin = get(b, "final_norm");
	if (fin != NULL && c->layer_obj != NULL && get(c->layer_obj, "block") != NULL) {
		size_t old2 = path_key(c, "final_norm");
		warnf(c, _("ignored: \"final_norm\" goes in the top-level \"block\" (it follows the last layer)"));
		path_set(c, old2);
	}
	r = 0;
out:
	path_set(c, old);
	return r;
}

/*
 * A matrix or vector of the block or a bias, checked against the shape it
 * must have: NULL rows_why for a vector (1 × cols). Absent: *out stays
 * empty, unless dflt ≥ 0 fills it with that value (γ = 1, β = 0).
 */
static int read_shaped(Ctx *c, const cJSON *obj, const char *key, int rows, int cols, const char *rows_why,
                       const char *cols_why, double dflt, Mat *out)
{
	MatSrc src;
	size_t old = c->pathlen;
	int r = -1;

	if (read_matsrc(c, obj, key, rows_why == NULL ? &LIM_VECTOR : &LIM_DIM_DIM, &src) != 0)
		return -1;
	if (src.kind == SRC_ABSENT) {
		if (dflt < 0)
			return 0;
		if (mat_alloc(out, rows, cols) != 0)
			return fail_oom(c);
		for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
			out->a[i] = dflt;
		return 0;
	}
	path_key(c, key);
	if (rows_why == NULL && src.rows * src.cols != cols)
		fail(c, _("expected %d numbers (%s), got %d"), cols, cols_why, src.rows * src.cols);
	else if (rows_why != NULL && src.rows != rows)
		fail(c, _("expected %d rows (%s), got %d"), rows, rows_why, src.rows);
	else if (rows_why != NULL && src.cols != cols)
		fail(c, _("expected %d columns (%s), got %d"), cols, cols_why, src.cols);
	else
		r = 0;
	path_set(c, old);
	if (r == 0 && fill_mat(c, &src, out) != 0)
		return -1;
	if (r == 0 && rows_why == NULL) {
		out->rows = 1; /* a flat vector or a generator with one row */
		out->cols = cols;
	}
	return r;
}

/* A norm's {"gamma", "beta"} (β only for LayerNorm); defaults 1 and 0. */
static int read_norm(Ctx *c, const cJSON *obj, const char *key, const Block *b, int d_model, Mat *gamma, Mat *beta)
{
	const cJSON *v = get(obj, key);
	size_t old = c->pathlen;
	int r = -1;

	if (v != NULL) {
		path_key(c, key);
		if (!cJSON_IsObject(v)) {
			fail(c, _("expected an object {\"gamma\": [d_model numbers], \"beta\": [...]}, got %s"), got(v).s);
			goto out;
		}
		warn_unknown_keys(c, v, norm_keys);
		if (b->norm_kind == NORM_RMSNORM && get(v, "beta") != NULL) {
			path_key(c, "beta");
			fail(c, _("RMSNorm has no beta (only gamma); remove it, or use \"norm_kind\": \"layernorm\""));
			goto out;
		}
	}
	if (read_shaped(c, v, "gamma", 1, d_model, NULL, "d_model", 1.0, gamma) != 0 ||
	    (b->norm_kind == NORM_LAYERNORM && read_shaped(c, v, "beta", 1, d_model, NULL, "d_model", 0.0, beta) != 0))
		goto out;
	r = 0;
out:
	path_set(c, old);
	return r;
}

/* Biases and the block's matrices, once the attention's shapes are known. */
static int read_v2_matrices(Ctx *c, const cJSON *root, Lesson *l)
{
	const cJSON *b = get(root, "block"), *ffn = b != NULL ? get(b, "ffn") : NULL;
	const int hdk = l->W_q.cols, hdv = l->W_v.cols;
	/* a decoder's cross-attention link: its two norms are the layer's ln2 and ln3 */
	const int cross = stack(c)->part == PART_CROSS;
	const char *n1 = cross ? "ln2" : "ln1", *n2 = cross ? "ln3" : "ln2";
	Block *blk = &l->block;
	size_t old;
	int r = -1;

	if (read_shaped(c, root, "b_q", 1, hdk, NULL, _("the columns of W_q"), -1, &l->b_q) != 0 ||
	    read_shaped(c, root, "b_k", 1, l->W_k.cols, NULL, _("the columns of W_k"), -1, &l->b_k) != 0 ||
	    read_shaped(c, root, "b_v", 1, hdv, NULL, _("the columns of W_v"), -1, &l->b_v) != 0)
		return -1;
	if (get(root, "b_o") != NULL && mat_empty(&l->W_o)) {
		old = path_key(c, "b_o");
		fail(c, _("this is W_o's bias, and this lesson has no W_o (give W_o, or leave b_o out)"));
		path_set(c, old);
		return -1;
	}
	if (read_shaped(c, root, "b_o", 1, l->d_out, NULL, _("the columns of W_o"), -1, &l->b_o) != 0)
		return -1;
	if (!blk->present)
		return 0;
	old = path_key(c, "block");
	if (l->has_source && !cross) {
		path_set(c, old);
		path_key(c, "source");
		fail(c, _("a block lesson has no source: its attention is self-attention"));
		goto out;
	}
	if (l->d_out != l->d_model) {
		fail(c, _("the residual adds the attention's output to its input, so the output needs d_model = %d "
		        "columns, but it has %d (%s)"), l->d_model, l->d_out,
		     mat_empty(&l->W_o) ? _("heads × d_v: give W_o with d_model columns") : _("the columns of W_o"));
		goto out;
	}
	if (blk->norm != NORM_NONE &&
	    (read_norm(c, b, n1, blk, l->d_model, &blk->ln1_gamma, &blk->ln1_beta) != 0 ||
	     (blk->has_ffn && read_norm(c, b, n2, blk, l->d_model, &blk->ln2_gamma, &blk->ln2_beta) != 0)))
		goto out;
	if (blk->has_ffn) {
		MatSrc w1;
		path_key(c, "ffn");
		if (get(ffn, "W_1") == NULL || get(ffn, "W_2") == NULL) {
			path_key(c, get(ffn, "W_1") == NULL ? "W_1" : "W_2");
			fail(c, _("missing: an FFN needs W_1 (d_model × d_ff) and W_2 (d_ff × d_model)"));
			goto out;
		}
		if (read_matsrc(c, ffn, "W_1", &LIM_DIM_DIM, &w1) != 0)
			goto out;
		blk->d_ff = w1.cols;
		if (blk->activation == ACT_SWIGLU && get(ffn, "W_3") == NULL) {
			path_key(c, "W_3");
			fail(c, _("missing: \"swiglu\" needs W_3 (d_model × d_ff), the gate"));
			goto out;
		}
		if (blk->activation != ACT_SWIGLU && (get(ffn, "W_3") != NULL || get(ffn, "b_3") != NULL)) {
			size_t old2 = path_key(c, get(ffn, "W_3") != NULL ? "W_3" : "b_3");
			warnf(c, _("not used: W_3 and b_3 are for \"activation\": \"swiglu\""));
			path_set(c, old2);
		}
		if (read_shaped(c, ffn, "W_1", l->d_model, blk->d_ff, "d_model", "d_ff", -1, &blk->W_1) != 0 ||
		    read_shaped(c, ffn, "b_1", 1, blk->d_ff, NULL, _("d_ff, the columns of W_1"), 0.0, &blk->b_1) != 0 ||
		    read_shaped(c, ffn, "W_2", blk->d_ff, l->d_model, _("d_ff, the columns of W_1"), "d_model", -1, &blk->W_2) != 0 ||
		    read_shaped(c, ffn, "b_2", 1, l->d_model, NULL, "d_model", 0.0, &blk->b_2) != 0)
			goto out;
		if (blk->activation == ACT_SWIGLU &&
		    (read_shaped(c, ffn, "W_3", l->d_model, blk->d_ff, "d_model", _("d_ff, the columns of W_1"), -1, &blk->W_3) != 0 ||
		     read_shaped(c, ffn, "b_3", 1, blk->d_ff, NULL, _("d_ff, the columns of W_1"), 0.0, &blk->b_3) != 0))
			goto out;
	}
	r = 0;
out:
	path_set(c, old);
	return r;
}

/* The top-level "block": {"final_norm": {…}}: one more norm after the last layer. */
static int read_final_norm(Ctx *c, const cJSON *root, Lesson *l)
{
	const cJSON *b = get(root, "block");
	size_t old;
	int r;

	if (b == NULL || !cJSON_IsObject(b) || get(b, "final_norm") == NULL)
		return 0;
	/* The stack's own block settings (a layer's block may differ). */
	Block top;
	static const char *const kinds[] = { "layernorm", "rmsnorm", NULL };
	int k = 0;
	memset(&top, 0, sizeof top);
	top.eps = 1e-5;
	old = path_key(c, "block");
	if (key_choice(c, b, "norm_kind", kinds, &k) != 0 || key_finite(c, b, "eps", &top.eps) != 0) {
		path_set(c, old);
		return -1;
	}
	top.norm_kind = (NormKind)k;
	l->has_final_norm = 1;
	l->final_kind = top.norm_kind;
	l->final_eps = top.eps;
	r = read_norm(c, b, "final_norm", &top, l->d_model, &l->final_gamma, &l->final_beta);
	path_set(c, old);
	return r;
}

static void block_free(Block *b)
{
	mat_free(&b->ln1_gamma);
	mat_free(&b->ln1_beta);
	mat_free(&b->ln2_gamma);
	mat_free(&b->ln2_beta);
	mat_free(&b->W_1);
	mat_free(&b->b_1);
	mat_free(&b->W_3);
	mat_free(&b->b_3);
	mat_free(&b->W_2);
	mat_free(&b->b_2);
}

static int block_copy(Block *dst, const Block *src)
{
	*dst = *src;
	dst->ln1_gamma = dst->ln1_beta = dst->ln2_gamma = dst->ln2_beta = (Mat){ 0 };
	dst->W_1 = dst->b_1 = dst->W_3 = dst->b_3 = dst->W_2 = dst->b_2 = (Mat){ 0 };
	return mat_copy(&dst->ln1_gamma, &src->ln1_gamma) | mat_copy(&dst->ln1_beta, &src->ln1_beta) |
	       mat_copy(&dst->ln2_gamma, &src->ln2_gamma) | mat_copy(&dst->ln2_beta, &src->ln2_beta) |
	       mat_copy(&dst->W_1, &src->W_1) | mat_copy(&dst->b_1, &src->b_1) | mat_copy(&dst->W_3, &src->W_3) |
	       mat_copy(&dst->b_3, &src->b_3) | mat_copy(&dst->W_2, &src->W_2) | mat_copy(&dst->b_2, &src->b_2);
}

/* Layer i's object merged over the top level: its keys replace the top's ("block" whole). */
static cJSON *merge_layer(const cJSON *root, const cJSON *layer, int keep_steps)
{
	cJSON *m = cJSON_Duplicate(root, 1);
	const cJSON *it;

	if (m == NULL)
		return NULL;
	cJSON_DeleteItemFromObjectCaseSensitive(m, "layers");
	if (!keep_steps) {
		cJSON_DeleteItemFromObjectCaseSensitive(m, "steps");
		cJSON_DeleteItemFromObjectCaseSensitive(m, "compare");
	}
	cJSON_ArrayForEach(it, layer) {
		cJSON *copy = cJSON_Duplicate(it, 1);
		if (copy == NULL) {
			cJSON_Delete(m);
			return NULL;
		}
		if (get(m, it->string) != NULL)
			cJSON_ReplaceItemInObjectCaseSensitive(m, it->string, copy);
		else
			cJSON_AddItemToObject(m, it->string, copy);
	}
	return m;
}

static Lesson *lesson_from_json(Ctx *c, const cJSON *root, int is_variant);
static Lesson *lesson_encdec(Ctx *c, const cJSON *root, int is_variant);

/* The numbers the stack will hold, over the limit: an error. */
static int check_layers_limit(Ctx *c, const Lesson *top)
{
	const double total = lesson_count_numbers(top);

	if (total > (double)LESSON_MAX_NUMBERS) {
		size_t old = path_key(c, "layers");
		fail(c, _("too large: its %d layers would hold %.0f numbers, over the limit of %ld (LESSON_MAX_NUMBERS)"),
		     top->nlayers, total, (long)LESSON_MAX_NUMBERS);
		path_set(c, old);
		return -1;
	}
	return 0;
}

/*
 * "layers": each layer is the lesson with that layer's keys put over the
 * top level's, read like any lesson (messages name "layers[i].KEY" for its
 * own keys). The top level is layer 0 with the steps and the comparison.
 */
static Lesson *lesson_with_layers(Ctx *c, const cJSON *root, const cJSON *layers, int is_variant)
{
	const cJSON *it;
	Lesson **layer = NULL, *top = NULL;
	const cJSON *saved_obj = c->layer_obj;
	Lesson **saved_layers = stack(c)->layers;
	int saved_index = c->layer_index, saved_n = stack(c)->nlayers, saved_final = stack(c)->stack_final;
	int n = 0, i, ok = 0;
	size_t old = path_key(c, "layers");

	if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) == 0) {
		fail(c, _("expected a list of layers [{…}, …] (each may be {} to repeat the top level), got %s"),
		     cJSON_IsArray(layers) ? _("an empty list") : got(layers).s);
		goto out;
	}
	n = cJSON_GetArraySize(layers);
	if (n > LESSON_MAX_LAYERS) {
		fail(c, _("%d layers is over the limit of %d (LESSON_MAX_LAYERS)"), n, LESSON_MAX_LAYERS);
		goto out;
	}
	i = 0;
	cJSON_ArrayForEach(it, layers) {
		size_t old2 = path_index(c, i++);
		if (!cJSON_IsObject(it)) {
			fail(c, _("expected a layer {\"W_q\": …, \"block\": …} (or {} to repeat the top level), got %s"), got(it).s);
			goto out;
		}
		warn_unknown_keys(c, it, layer_keys);
		path_set(c, old2);
	}
	path_set(c, old);
	layer = calloc((size_t)n, sizeof *layer);
	if (layer == NULL) {
		fail_oom(c);
		goto out;
	}
	stack(c)->layers = layer;
	stack(c)->nlayers = n;
	stack(c)->stack_final = cJSON_IsObject(get(root, "block")) && get(get(root, "block"), "final_norm") != NULL;
	/* Layers 1 … n−1, then the top level (layer 0 with the steps, which may name any layer), then layer 0. */
	for (i = n - 1; i >= 1; i--) {
		cJSON *merged = merge_layer(root, cJSON_GetArrayItem(layers, i), 0);
		StrBuf *saved_warn = c->warn;
		if (merged == NULL) {
			fail_oom(c);
			goto out;
		}
		c->layer_obj = cJSON_GetArrayItem(layers, i);
		c->layer_index = i;
		c->warn = NULL; /* the top level's own warnings come once, from layer 0 */
		layer[i] = lesson_from_json(c, merged, 1);
		c->warn = saved_warn;
		cJSON_Delete(merged);
		if (layer[i] == NULL)
			goto out;
	}
	{
		cJSON *merged = merge_layer(root, cJSON_GetArrayItem(layers, 0), 1);
		if (merged == NULL) {
			fail_oom(c);
			goto out;
		}
		c->layer_obj = cJSON_GetArrayItem(layers, 0);
		c->layer_index = 0;
		top = lesson_from_json(c, merged, is_variant);
		if (top != NULL) {
			layer[0] = lesson_clone(top);
			if (layer[0] == NULL)
				fail_oom(c);
		}
		cJSON_Delete(merged);
		if (layer[0] == NULL)
			goto out;
	}
	/* Only the stack's final norm counts: read from the top level's own block. */
	layer[0]->has_final_norm = 0;
	mat_free(&layer[0]->final_gamma);
	mat_free(&layer[0]->final_beta);
	lesson_free(layer[0]->compare);
	layer[0]->compare = NULL;
	/* the steps belong to the lesson, not to its first layer */
	for (i = 0; i < layer[0]->nsteps; i++)
		step_free(&layer[0]->steps[i]);
	free(layer[0]->steps);
	layer[0]->steps = NULL;
	layer[0]->nsteps = 0;
	top->has_final_norm = 0;
	mat_free(&top->final_gamma);
	mat_free(&top->final_beta);
	c->layer_obj = NULL;
	mat_free(&top->target);
	top->backward = BACKWARD_NONE;
	top->nlayers = n; /* read_backward takes the output's width from a stack */
	top->layer = layer;
	if (read_final_norm(c, root, top) != 0 || read_backward(c, root, top) != 0 || check_layers_limit(c, top) != 0) {
		top->nlayers = 0;
		top->layer = NULL;
		goto out;
	}
	ok = 1;
out:
	c->layer_obj = saved_obj;
	c->layer_index = saved_index;
	stack(c)->layers = saved_layers;
	stack(c)->nlayers = saved_n;
	stack(c)->stack_final = saved_final;
	path_set(c, old);
	if (!ok) {
		for (i = 0; layer != NULL && i < n; i++)
			lesson_free(layer[i]);
		free(layer);
		lesson_free(top);
		return NULL;
	}
	return top;
}

int lesson_layers(const Lesson *l)
{
	return l->nlayers > 0 ? l->nlayers : 1;
}

Lesson *lesson_layer(Lesson *l, int i)
{
	return l->nlayers > 0 && i >= 0 && i < l->nlayers ? l->layer[i] : l;
}

const Lesson *lesson_layer_const(const Lesson *l, int i)
{
	return lesson_layer((Lesson *)l, i);
}

const Lesson *lesson_step_stack(const Lesson *l, const Step *st)
{
	return st->encoder && l->encoder != NULL ? l->encoder : l;
}

int lesson_walk_encoder(const Lesson *l)
{
	return l->encoder != NULL ? lesson_layers(l->encoder) : 0;
}

int lesson_walk_layers(const Lesson *l)
{
	return lesson_walk_encoder(l) + lesson_layers(l);
}

Lesson *lesson_walk_stack(Lesson *l, int k, int *i)
{
	const int e = lesson_walk_encoder(l);

	*i = k < e ? k : k - e;
	return k < e ? l->encoder : l;
}

/* ------------------------------------------------------------------ */
/* The whole lesson                                                    */
/* ------------------------------------------------------------------ */

static const char *const top_keys[] = {
	"attnviz", "title", "summary", "tokens", "X", "positional", "source", "heads",
	"W_q", "W_k", "W_v", "W_o", "score", "w_e", "scale", "mask", "mask_fill", "steps", "compare",
	"b_q", "b_k", "b_v", "b_o", "block", "layers", "backward", "encoder", "self", "cross",
	"kv_heads", "rope", "alibi", "decode", "flash", NULL
};
static const char *const source_keys[] = { "tokens", "X", NULL };
static const char *const mask_keys[] = { "padding", "window", NULL };

/* ------------------------------------------------------------------ */
/* Version 2: the encoder–decoder                                      */
/* ------------------------------------------------------------------ */

static const char *const encoder_keys[] = { "tokens", "X", "positional", "mask", "heads", "kv_heads", "W_q", "W_k",
	                                    "W_v", "W_o", "w_e", "b_q", "b_k", "b_v", "b_o", "block", "layers", NULL };
static const char *const attn_part_keys[] = { "heads", "kv_heads", "W_q", "W_k", "W_v", "W_o", "w_e",
	                                      "b_q", "b_k", "b_v", "b_o", "mask", NULL };
static const char *const dec_layer_keys[] = { "self", "cross", "block", NULL };
/* The top level's attention keys: an encoder–decoder gives them in "self", "cross" and "encoder". */
static const char *const encdec_refused[] = { "heads", "kv_heads", "W_q", "W_k", "W_v", "W_o", "w_e", "b_q", "b_k",
	                                      "b_v", "b_o", "source", "rope", "alibi", "decode", "flash", NULL };
/* Settings that apply to every attention of the lesson, the encoder's too. */
static const char *const encdec_shared[] = { "mask_fill", "scale", "score", NULL };
/* What each decoder link takes from the top level. */
static const char *const link_keys[] = { "attnviz", "title", "summary", "tokens", "X", "positional",
	                                 "mask_fill", "scale", "score", NULL };

static int read_compare(Ctx *c, const cJSON *root, Lesson *l);

/* A reference to v under key in obj (nothing copied; nothing when v is NULL). 0, or -1 out of memory. */
static int add_ref(cJSON *obj, const char *key, const cJSON *v)
{
	return v == NULL || cJSON_AddItemReferenceToObject(obj, key, (cJSON *)v) ? 0 : -1;
}

/* "encoder": a lesson of its own (a stack when it has "layers"), read at the path "encoder". */
static Lesson *read_encoder(Ctx *c, const cJSON *root)
{
	const cJSON *e = get(root, "encoder"), *it;
	cJSON *j = NULL;
	Lesson *enc = NULL;
	const size_t saved_root = c->root_len;
	size_t old = path_key(c, "encoder");

	if (!cJSON_IsObject(e)) {
		fail(c, _("expected an object {\"X\": …, \"W_q\": …, \"block\": …, \"layers\": […]}, got %s"), got(e).s);
		goto out;
	}
	warn_unknown_keys(c, e, encoder_keys);
	j = cJSON_CreateObject();
	if (j == NULL || add_ref(j, "attnviz", get(root, "attnviz")) != 0) {
		fail_oom(c);
		goto out;
	}
	cJSON_ArrayForEach(it, e)
		if (add_ref(j, it->string, it) != 0) {
			fail_oom(c);
			goto out;
		}
	for (int i = 0; encdec_shared[i] != NULL; i++)
		if (get(e, encdec_shared[i]) == NULL && add_ref(j, encdec_shared[i], get(root, encdec_shared[i])) != 0) {
			fail_oom(c);
			goto out;
		}
	c->root_len = c->pathlen;
	enc = lesson_from_json(c, j, 1);
	c->root_len = saved_root;
out:
	cJSON_Delete(j);
	path_set(c, old);
	return enc;
}

/* The source a cross-attention link is read with: the encoder's tokens, and m × d rows the engine replaces by the memory. */
static cJSON *memory_source(const Lesson *enc)
{
	cJSON *s = cJSON_CreateObject(), *toks, *x;

	if (s == NULL || (toks = cJSON_AddArrayToObject(s, "tokens")) == NULL || (x = cJSON_AddObjectToObject(s, "X")) == NULL)
		goto oom;
	for (int i = 0; i < enc->n; i++)
		if (!cJSON_AddItemToArray(toks, cJSON_CreateString(enc->tokens[i])))
			goto oom;
	if (cJSON_AddStringToObject(x, "random", "uniform") == NULL || cJSON_AddNumberToObject(x, "rows", enc->n) == NULL ||
	    cJSON_AddNumberToObject(x, "cols", enc->d_model) == NULL || cJSON_AddNumberToObject(x, "seed", 0) == NULL)
		goto oom;
	return s;
oom:
	cJSON_Delete(s);
	return NULL;
}

/*
 * One link of decoder layer k: its self-attention (PART_SELF: the "self"
 * object, the layer's block without its FFN) or its cross-attention
 * (PART_CROSS: the "cross" object with the memory as its source, the block's
 * ln2, ln3 and FFN), each the layer's own object or the top level's, whole.
 */
static Lesson *read_link(Ctx *c, const cJSON *root, const cJSON *lobj, int k, LinkPart part, const Lesson *enc,
                         int last, int with_steps)
{
	const char *name = part == PART_SELF ? "self" : "cross";
	const cJSON *own = lobj != NULL ? get(lobj, name) : NULL, *at = own != NULL ? own : get(root, name);
	const cJSON *ownb = lobj != NULL ? get(lobj, "block") : NULL, *blk = ownb != NULL ? ownb : get(root, "block");
	const cJSON *it, *mask = NULL;
	cJSON *j = NULL, *src = NULL;
	Lesson *l = NULL;
	size_t old;

	if (at == NULL || !cJSON_IsObject(at)) {
		old = lobj != NULL ? path_append(c, "layers[%d].%s", k, name) : path_key(c, name);
		if (at == NULL)
			fail(c, _("missing: decoder layer %d's %s-attention {\"heads\": …, \"W_q\": …, …} (in the layer, or at "
			        "the top level for every layer)"), k, name);
		else
			fail(c, _("expected an object {\"heads\": …, \"W_q\": …, \"W_k\": …, \"W_v\": …}, got %s"), got(at).s);
		path_set(c, old);
		return NULL;
	}
	old = own != NULL ? path_append(c, "layers[%d].%s", k, name) : path_key(c, name);
	warn_unknown_keys(c, at, attn_part_keys);
	path_set(c, old);
	j = cJSON_CreateObject();
	if (j == NULL)
		goto oom;
	for (int i = 0; link_keys[i] != NULL; i++)
		if (add_ref(j, link_keys[i], get(root, link_keys[i])) != 0)
			goto oom;
	if (with_steps && add_ref(j, "steps", get(root, "steps")) != 0)
		goto oom;
	cJSON_ArrayForEach(it, at)
		if (strcmp(it->string, "mask") != 0 && add_ref(j, it->string, it) != 0)
			goto oom;
	/* self-attention: its own mask, else the top level's, else causal; cross-attention: its own, else none */
	mask = get(at, "mask");
	if (mask == NULL && part == PART_SELF)
		mask = get(root, "mask");
	if (mask != NULL ? add_ref(j, "mask", mask) != 0
	                 : part == PART_SELF && cJSON_AddStringToObject(j, "mask", "causal") == NULL)
		goto oom;
	if (add_ref(j, "block", blk) != 0)
		goto oom;
	if (part == PART_CROSS && ((src = memory_source(enc)) == NULL || !cJSON_AddItemToObject(j, "source", src))) {
		cJSON_Delete(src);
		goto oom;
	}
	c->alias_obj[0] = at;
	if (own != NULL)
		snprintf(c->alias_prefix[0], sizeof c->alias_prefix[0], "layers[%d].%s", k, name);
	else
		snprintf(c->alias_prefix[0], sizeof c->alias_prefix[0], "%s", name);
	c->alias_obj[1] = ownb != NULL ? lobj : NULL;
	snprintf(c->alias_prefix[1], sizeof c->alias_prefix[1], "layers[%d]", k);
	stack(c)->part = part;
	stack(c)->link_final = last && cJSON_IsObject(get(root, "block")) && get(get(root, "block"), "final_norm") != NULL;
	stack(c)->outer_compare = with_steps && get(root, "compare") != NULL;
	l = lesson_from_json(c, j, !with_steps);
	stack(c)->part = PART_LAYER;
	stack(c)->link_final = 0;
	stack(c)->outer_compare = 0;
	c->alias_obj[0] = c->alias_obj[1] = NULL;
	cJSON_Delete(j);
	if (l != NULL) {
		l->part = part;
		l->dec_layer = k;
	}
	return l;
oom:
	cJSON_Delete(j);
	fail_oom(c);
	return NULL;
}

/*
 * An encoder–decoder: "encoder" read as a lesson of its own, then each
 * decoder layer (the objects of "layers", or one layer made of the top
 * level's "self", "cross" and "block") as two links. The top level is link 0
 * with the steps, the comparison, the decoder's final norm and "backward".
 */
static Lesson *lesson_encdec(Ctx *c, const cJSON *root, int is_variant)
{
	const cJSON *layers = get(root, "layers"), *it;
	Lesson *enc = NULL, **link = NULL, *top = NULL;
	Lesson **saved_layers = stack(c)->layers;
	const int saved_n = stack(c)->nlayers;
	const Lesson *saved_enc = stack(c)->encoder;
	int nl = 1, nlinks = 0, i, ok = 0;
	size_t old;

	if (!is_variant) {
		warn_unknown_keys(c, root, top_keys);
		warn_duplicate_keys(c, root);
	}
	for (i = 0; encdec_refused[i] != NULL; i++) {
		const char *key = encdec_refused[i];
		if (get(root, key) == NULL)
			continue;
		old = path_key(c, key);
		if (strcmp(key, "source") == 0)
			fail(c, _("an encoder\u2013decoder's cross-attention reads the encoder's output: it has no \"source\""));
		else if (strcmp(key, "rope") == 0 || strcmp(key, "alibi") == 0 || strcmp(key, "decode") == 0 ||
		         strcmp(key, "flash") == 0)
			fail(c, _("not available in an encoder\u2013decoder lesson (use it in a lesson of layers)"));
		else
			fail(c, _("an encoder\u2013decoder gives its attentions' keys in \"self\" and \"cross\" (the decoder's) "
			        "and in \"encoder\", not at the top level"));
		path_set(c, old);
		return NULL;
	}
	if (layers != NULL) {
		old = path_key(c, "layers");
		if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) == 0) {
			fail(c, _("expected a list of decoder layers [{\"self\": …, \"cross\": …, \"block\": …}, …] (each may be {} "
			        "to repeat the top level), got %s"), cJSON_IsArray(layers) ? _("an empty list") : got(layers).s);
			path_set(c, old);
			return NULL;
		}
		nl = cJSON_GetArraySize(layers);
		if (2 * nl > LESSON_MAX_LAYERS) {
			fail(c, _("%d decoder layers (two links each) is over the limit of %d links (LESSON_MAX_LAYERS)"), nl,
			     LESSON_MAX_LAYERS);
			path_set(c, old);
			return NULL;
		}
		i = 0;
		cJSON_ArrayForEach(it, layers) {
			size_t old2 = path_index(c, i++);
			if (!cJSON_IsObject(it)) {
				fail(c, _("expected a decoder layer {\"self\": …, \"cross\": …, \"block\": …} (or {}), got %s"), got(it).s);
				path_set(c, old);
				return NULL;
			}
			warn_unknown_keys(c, it, dec_layer_keys);
			if (cJSON_IsObject(get(it, "block")) && get(get(it, "block"), "final_norm") != NULL) {
				path_key(c, "block.final_norm");
				warnf(c, _("ignored: \"final_norm\" goes in the top-level \"block\" (it follows the last layer)"));
			}
			path_set(c, old2);
		}
		path_set(c, old);
	}
	enc = read_encoder(c, root);
	if (enc == NULL)
		goto out;
	nlinks = 2 * nl;
	link = calloc((size_t)nlinks, sizeof *link);
	if (link == NULL) {
		fail_oom(c);
		goto out;
	}
	stack(c)->layers = link;
	stack(c)->nlayers = nlinks;
	stack(c)->encoder = enc;
	/* the links from the last, so that link 0's steps can name any of them */
	for (i = nlinks - 1; i >= 0; i--) {
		const cJSON *lobj = layers != NULL ? cJSON_GetArrayItem(layers, i / 2) : NULL;
		link[i] = read_link(c, root, lobj, i / 2, i % 2 ? PART_CROSS : PART_SELF, enc, i == nlinks - 1,
		                    i == 0 && !is_variant);
		if (link[i] == NULL)
			goto out;
	}
	top = link[0];
	link[0] = lesson_clone(top);
	if (link[0] == NULL) {
		fail_oom(c);
		goto out;
	}
	for (i = 0; i < link[0]->nsteps; i++)
		step_free(&link[0]->steps[i]);
	free(link[0]->steps);
	link[0]->steps = NULL;
	link[0]->nsteps = 0;
	top->nlayers = nlinks;
	top->layer = link;
	top->encoder = enc;
	link = NULL;
	enc = NULL;
	if (read_final_norm(c, root, top) != 0 || read_backward(c, root, top) != 0 || check_layers_limit(c, top) != 0)
		goto out;
	if (!is_variant) {
		int r;
		stack(c)->numbers_before = lesson_count_numbers(top);
		r = read_compare(c, root, top);
		stack(c)->numbers_before = 0;
		if (r != 0)
			goto out;
	}
	ok = 1;
out:
	stack(c)->layers = saved_layers;
	stack(c)->nlayers = saved_n;
	stack(c)->encoder = saved_enc;
	if (!ok) {
		for (i = 0; link != NULL && i < nlinks; i++)
			lesson_free(link[i]);
		free(link);
		lesson_free(enc);
		lesson_free(top);
		return NULL;
	}
	return top;
}

void lesson_free(Lesson *l)
{
	int i;

	if (l == NULL)
		return;
	free(l->path);
	text_free(&l->title);
	text_free(&l->summary);
	tokens_free(l->tokens, l->n);
	tokens_free(l->source_tokens, l->m);
	mat_free(&l->input);
	mat_free(&l->source_input);
	mat_free(&l->W_q);
	mat_free(&l->W_k);
	mat_free(&l->W_v);
	mat_free(&l->W_o);
	mat_free(&l->w_e);
	mat_free(&l->b_q);
	mat_free(&l->b_k);
	mat_free(&l->b_v);
	mat_free(&l->b_o);
	block_free(&l->block);
	mat_free(&l->final_gamma);
	mat_free(&l->final_beta);
	mat_free(&l->target);
	for (i = 0; i < l->nlayers; i++)
		lesson_free(l->layer[i]);
	free(l->layer);
	mat_free(&l->mask_matrix);
	for (i = 0; i < l->nmasks; i++)
		mat_free(&l->masks[i].matrix);
	free(l->masks);
	mat_free(&l->alibi_slopes);
	for (i = 0; i < l->nsteps; i++)
		step_free(&l->steps[i]);
	free(l->steps);
	lesson_free(l->compare);
	lesson_free(l->encoder);
	text_free(&l->compare_label);
	free(l);
}

static int read_version(Ctx *c, const cJSON *root, Lesson *l)
{
	const cJSON *v = get(root, "attnviz");
	size_t old = path_key(c, "attnviz");
	int r = 0;

	if (v == NULL)
		r = fail(c, _("missing: a lesson starts with \"attnviz\": 1 (the format version)"));
	else if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble))
		r = fail(c, _("expected the format version 1 or 2, got %s"), got(v).s);
	else if (v->valuedouble != 1 && v->valuedouble != 2)
		r = fail(c, _("this file is format %s, but this build of attnviz reads formats 1 and 2%s"), got(v).s,
		         v->valuedouble > 2 ? _(" (a newer attnviz may read it)") : "");
	else
		l->version = (int)v->valuedouble;
	path_set(c, old);
	return r;
}

/* One mask as read, before its numbers are filled in: a part of a list, or the lesson's only mask. */
typedef struct MaskSrc {
	MaskKind kind;
	int window;
	MatSrc ms;
} MaskSrc;

/*
 * One mask at the current path: "none", "causal", {"padding": […]},
 * {"window": w} or an n × m matrix of 0/1. in_list: an element of a list,
 * which may not be a list itself.
 */
static int read_one_mask(Ctx *c, const cJSON *v, int in_list, MaskSrc *out)
{
	const char *const expect = _(
		"\"none\", \"causal\", {\"padding\": [1, 1, 0, …]}, {\"window\": w}, an n × m matrix of 0/1, or a list of them");

	memset(out, 0, sizeof *out);
	out->kind = MASK_NONE;
	if (cJSON_IsString(v)) {
		static const char *const words[] = { "none", "causal" };
		if (strcmp(v->valuestring, "none") == 0)
			return 0;
		if (strcmp(v->valuestring, "causal") == 0) {
			out->kind = MASK_CAUSAL;
			return 0;
		}
		return fail(c, _("expected %s, got %s%s"), expect, got(v).s, did_you_mean(v->valuestring, words, 2).s);
	}
	if (cJSON_IsObject(v)) {
		const int has_pad = get(v, "padding") != NULL, has_win = get(v, "window") != NULL;
		warn_unknown_keys(c, v, mask_keys);
		if (has_pad && has_win)
			return fail(c, _("a mask object has one key: to combine padding and a window, give a list "
			               "[{\"padding\": …}, {\"window\": …}]"));
		if (has_win) {
			long long w = 0;
			if (key_whole(c, v, "window", 1, LESSON_MAX_TOKENS, _("a whole number ≥ 1"), &w) != 0)
				return -1;
			out->kind = MASK_WINDOW;
			out->window = (int)w;
			return 0;
		}
		if (!has_pad)
			return fail(c, _("expected {\"padding\": [1, 1, 0, …]} (1 = may attend, 0 = masked) or {\"window\": w}"));
		out->kind = MASK_PADDING;
		return read_matsrc(c, v, "padding", &LIM_PADDING, &out->ms);
	}
	if (cJSON_IsArray(v) && (cJSON_GetArraySize(v) == 0 || cJSON_IsArray(v->child) || in_list)) {
		if (in_list && !cJSON_IsArray(v->child))
			return fail(c, _("expected a mask (\"causal\", {\"padding\": …}, {\"window\": w} or a matrix); a list "
			               "of masks cannot hold another list"));
		out->kind = MASK_MATRIX;
		return read_matsrc_value(c, v, &LIM_MASK, &out->ms);
	}
	return fail(c, _("expected %s, got %s"), expect, got(v).s);
}

/* "mask": one mask, or a list of them (a cell is visible when every mask allows it). */
static int read_mask(Ctx *c, const cJSON *root, Lesson *l, MaskSrc *parts, int *nparts)
{
	const cJSON *v = get(root, "mask"), *it;
	size_t old;
	int r = 0;

	*nparts = 0;
	l->mask = MASK_NONE;
	if (v == NULL)
		return 0;
	old = path_key(c, "mask");
	if (cJSON_IsArray(v) && (cJSON_GetArraySize(v) == 0 || !cJSON_IsArray(v->child))) {
		int i = 0;
		if (cJSON_GetArraySize(v) == 0)
			r = fail(c, _("an empty list of masks (give at least one, or \"none\")"));
		else if (cJSON_GetArraySize(v) > LESSON_MAX_MASKS)
			r = fail(c, _("%d masks is over the limit of %d in one list (LESSON_MAX_MASKS)"), cJSON_GetArraySize(v),
			         LESSON_MAX_MASKS);
		cJSON_ArrayForEach(it, v) {
			size_t old2;
			MaskSrc one;
			if (r != 0)
				break;
			old2 = path_index(c, i++);
			r = read_one_mask(c, it, 1, &one);
			path_set(c, old2);
			if (r == 0 && one.kind != MASK_NONE)
				parts[(*nparts)++] = one;
		}
		l->mask = *nparts > 0 ? MASK_LIST : MASK_NONE;
	} else {
		r = read_one_mask(c, v, 0, &parts[0]);
		if (r == 0 && parts[0].kind != MASK_NONE) {
			l->mask = parts[0].kind;
			l->window = parts[0].window;
			*nparts = 1;
		}
	}
	path_set(c, old);
	return r;
}

/* The issue-11 settings shared by every layer: "rope", "alibi", "decode", "flash". */
static int read_modern(Ctx *c, const cJSON *root, Lesson *l)
{
	const cJSON *v;
	size_t old;
	int r = 0;

	l->rope_base = 10000.0;
	l->rope_style = ROPE_HALF;
	if ((v = get(root, "rope")) != NULL) {
		old = path_key(c, "rope");
		if (cJSON_IsBool(v)) {
			l->rope = cJSON_IsTrue(v);
		} else if (cJSON_IsObject(v)) {
			static const char *const styles[] = { "half", "interleaved", NULL };
			int style = 0;
			warn_unknown_keys(c, v, rope_keys);
			l->rope = 1;
			if (key_choice(c, v, "style", styles, &style) != 0)
				r = -1;
			l->rope_style = (RopeStyle)style;
			if (r == 0 && get(v, "base") != NULL) {
				const cJSON *b = get(v, "base");
				size_t old2 = path_key(c, "base");
				if (!cJSON_IsNumber(b) || !isfinite(b->valuedouble) || b->valuedouble <= 0)
					r = fail(c, _("expected a number > 0, got %s"), got(b).s);
				else
					l->rope_base = b->valuedouble;
				path_set(c, old2);
			}
		} else {
			r = fail(c, _("expected true (base 10000, style \"half\"), false, or {\"base\": 10000, \"style\": "
			            "\"half\" | \"interleaved\"}, got %s"), got(v).s);
		}
		path_set(c, old);
		if (r != 0)
			return -1;
	}
	if ((v = get(root, "alibi")) != NULL) {
		old = path_key(c, "alibi");
		if (cJSON_IsBool(v)) {
			l->alibi = cJSON_IsTrue(v);
		} else if (cJSON_IsObject(v)) {
			const cJSON *sl = get(v, "slopes"), *x;
			warn_unknown_keys(c, v, alibi_keys);
			if (sl == NULL) {
				r = fail(c, _("expected {\"slopes\": [one number per head]} (write true for the ALiBi paper's slopes)"));
			} else {
				const int count = cJSON_GetArraySize(sl);
				path_key(c, "slopes");
				if (!cJSON_IsArray(sl))
					r = fail(c, _("expected %d numbers (one per head), got %s"), l->heads, got(sl).s);
				else if (count != l->heads)
					r = fail(c, _("expected %d numbers (one per head), got %d"), l->heads, count);
				else if (mat_alloc(&l->alibi_slopes, 1, count) != 0)
					r = fail_oom(c);
				else {
					int i = 0;
					cJSON_ArrayForEach(x, sl) {
						size_t old2 = path_index(c, i);
						if (read_finite(c, x, &l->alibi_slopes.a[i]) != 0)
							r = -1;
						path_set(c, old2);
						if (r != 0)
							break;
						i++;
					}
				}
				l->alibi = 1;
			}
		} else {
			r = fail(c, _("expected true (the ALiBi paper's slopes), false, or {\"slopes\": [one number per head]}, got %s"),
			         got(v).s);
		}
		path_set(c, old);
		if (r != 0)
			return -1;
	}
	if ((v = get(root, "decode")) != NULL) {
		old = path_key(c, "decode");
		if (!cJSON_IsBool(v))
			r = fail(c, _("expected true (generate one token at a time with a KV cache) or false, got %s"), got(v).s);
		l->decode = cJSON_IsTrue(v);
		path_set(c, old);
		if (r != 0)
			return -1;
	}
	if ((v = get(root, "flash")) != NULL) {
		old = path_key(c, "flash");
		if (cJSON_IsFalse(v)) {
			/* no tiles (a compare variant may turn them off) */
		} else if (!cJSON_IsObject(v) || get(v, "block_q") == NULL || get(v, "block_k") == NULL) {
			r = fail(c, _("expected {\"block_q\": Bq, \"block_k\": Bk} (the tile: Bq query rows by Bk key columns) or false, "
			            "got %s"), got(v).s);
		} else {
			warn_unknown_keys(c, v, flash_keys);
			/* the range (1 … n, 1 … m) is checked with the shapes */
			for (int k = 0; k < 2 && r == 0; k++) {
				const cJSON *b = get(v, k ? "block_k" : "block_q");
				size_t old2 = path_key(c, k ? "block_k" : "block_q");
				if (!cJSON_IsNumber(b) || !isfinite(b->valuedouble) || b->valuedouble != floor(b->valuedouble) ||
				    fabs(b->valuedouble) > 1e9)
					r = fail(c, _("expected a whole number, got %s"), got(b).s);
				else if (k)
					l->flash_bk = (int)b->valuedouble;
				else
					l->flash_bq = (int)b->valuedouble;
				path_set(c, old2);
			}
		}
		path_set(c, old);
		if (r != 0)
			return -1;
	}
	return 0;
}

static int read_scalars(Ctx *c, const cJSON *root, Lesson *l)
{
	static const char *const positionals[] = { "none", "sinusoidal", NULL };
	static const char *const scores[] = { "dot", "additive", NULL };
	const cJSON *v;
	long long heads = 1;
	int k;
	size_t old;

	k = 0;
	if (key_choice(c, root, "positional", positionals, &k) != 0)
		return -1;
	l->positional = (Positional)k;
	k = 0;
	if (key_choice(c, root, "score", scores, &k) != 0)
		return -1;
	l->score = (ScoreKind)k;
	if (key_whole(c, root, "heads", 1, 1e9, _("a whole number ≥ 1"), &heads) != 0)
		return -1;
	if (heads > LESSON_MAX_HEADS) {
		old = path_key(c, "heads");
		fail(c, _("%lld is over the limit of %d heads (LESSON_MAX_HEADS)"), heads, LESSON_MAX_HEADS);
		path_set(c, old);
		return -1;
	}
	l->heads = (int)heads;
	{
		long long g = heads;
		if (key_whole(c, root, "kv_heads", 1, 1e9, _("a whole number ≥ 1"), &g) != 0)
			return -1;
		l->kv_heads_given = get(root, "kv_heads") != NULL;
		if (g > heads || heads % g != 0) {
			old = path_key(c, "kv_heads");
			fail(c, _("%lld does not divide the %lld query heads"), g, heads);
			path_set(c, old);
			return -1;
		}
		l->kv_heads = (int)g;
	}

	l->scale = SCALE_SQRT_DK;
	v = get(root, "scale");
	if (v != NULL) {
		l->scale_explicit = 1;
		old = path_key(c, "scale");
		if (cJSON_IsTrue(v)) {
			l->scale = SCALE_SQRT_DK;
		} else if (cJSON_IsFalse(v)) {
			l->scale = SCALE_NONE;
		} else if (cJSON_IsNumber(v)) {
			if (read_finite(c, v, &l->scale_value) != 0)
				return -1;
			l->scale = SCALE_VALUE;
		} else {
			return fail(c, _("expected true (× 1/√d_k), false (× 1) or a number (× that number), got %s"),
			            got(v).s);
		}
		path_set(c, old);
	}

	l->mask_fill_inf = 1;
	v = get(root, "mask_fill");
	if (v != NULL) {
		old = path_key(c, "mask_fill");
		if (cJSON_IsString(v) && strcmp(v->valuestring, "-inf") == 0) {
			l->mask_fill_inf = 1;
		} else if (cJSON_IsNumber(v)) {
			if (read_finite(c, v, &l->mask_fill) != 0)
				return -1;
			l->mask_fill_inf = 0;
		} else {
			return fail(c, _("expected \"-inf\" or a number, got %s"), got(v).s);
		}
		path_set(c, old);
	}
	return 0;
}

/* The top-level keys a "compare" may not change. */
static const char *const compare_fixed[] = { "attnviz", "title", "summary", "steps", "compare", NULL };

static Lesson *lesson_from_json(Ctx *c, const cJSON *root, int is_variant);

static int is_top_key(const char *key)
{
	int k;

	for (k = 0; top_keys[k] != NULL; k++)
		if (strcmp(key, top_keys[k]) == 0)
			return 1;
	return 0;
}

/* "self" and "cross" belong to an encoder–decoder: without "encoder" they would be ignored, so they are refused. */
static int refuse_stray_parts(Ctx *c, const cJSON *root)
{
	static const char *const parts[] = { "self", "cross" };

	if (!cJSON_IsObject(root) || get(root, "encoder") != NULL)
		return 0;
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		if (get(root, parts[i]) != NULL) {
			size_t old = path_key(c, parts[i]);
			fail(c, _("only in an encoder\u2013decoder lesson (one with \"encoder\"): the decoder's %s-attention; "
			        "a lesson without an encoder gives its attention's keys at the top level"),
			     parts[i]);
			path_set(c, old);
			return -1;
		}
	return 0;
}

/* "compare": the same lesson with some top-level keys replaced. */
static int read_compare(Ctx *c, const cJSON *root, Lesson *l)
{
	const cJSON *cmp = get(root, "compare"), *it;
	cJSON *variant = NULL;
	StrBuf *saved_warn;
	size_t old;
	int i, nchanged = 0, r = -1;

	if (cmp == NULL)
		return 0;
	old = path_key(c, "compare");
	if (!cJSON_IsObject(cmp)) {
		fail(c, _("expected an object {\"label\": …, KEY: VALUE, …}, got %s"), got(cmp).s);
		goto out;
	}
	if (key_text(c, cmp, "label", &l->compare_label) != 0)
		goto out;
	/* Which keys it changes: a fixed key is an error, an unknown one a warning (and ignored). */
	cJSON_ArrayForEach(it, cmp) {
		if (strcmp(it->string, "label") == 0)
			continue;
		for (i = 0; compare_fixed[i] != NULL; i++)
			if (strcmp(it->string, compare_fixed[i]) == 0)
				break;
		if (compare_fixed[i] != NULL) {
			size_t old2 = path_key(c, it->string);
			fail(c, _("a comparison cannot change \"%s\" (it changes the computation: keys such as "
			        "\"mask\", \"scale\" or \"W_q\")"), it->string);
			path_set(c, old2);
			goto out;
		}
		if (!is_top_key(it->string)) {
			const char *const *cands = top_keys;
			int nc = 0;
			while (cands[nc] != NULL)
				nc++;
			warnf(c, _("unknown key %s%s"), quoted(it->string).s, did_you_mean(it->string, cands, nc).s);
			continue;
		}
		nchanged++;
	}
	/*
	 * The variant is the lesson with those keys replaced, made of references
	 * to the values already parsed: the numbers of a large lesson are not
	 * copied (cJSON_Delete of the variant frees only the references).
	 */
	variant = cJSON_CreateObject();
	if (variant == NULL) {
		fail_oom(c);
		goto out;
	}
	cJSON_ArrayForEach(it, root) {
		const cJSON *over = strcmp(it->string, "label") != 0 ? get(cmp, it->string) : NULL;
		if (strcmp(it->string, "compare") == 0 || strcmp(it->string, "steps") == 0)
			continue;
		if (!cJSON_AddItemReferenceToObject(variant, it->string, (cJSON *)(over != NULL ? over : it))) {
			fail_oom(c);
			goto out;
		}
	}
	cJSON_ArrayForEach(it, cmp)
		if (strcmp(it->string, "label") != 0 && get(root, it->string) == NULL && is_top_key(it->string) &&
		    !cJSON_AddItemReferenceToObject(variant, it->string, (cJSON *)it)) {
			fail_oom(c);
			goto out;
		}
	if (nchanged == 0)
		warnf(c, _("changes nothing (give the keys whose values differ, e.g. \"mask_fill\": 0)"));
	/* The variant's own warnings would only repeat this lesson's. */
	saved_warn = c->warn;
	c->warn = NULL;
	l->compare = lesson_from_json(c, variant, 1);
	c->warn = saved_warn;
	if (l->compare == NULL)
		goto out;
	r = 0;
out:
	cJSON_Delete(variant);
	path_set(c, old);
	return r;
}

/* Turn a parsed lesson object into a Lesson, or NULL with c->err set. */
static Lesson *lesson_from_json(Ctx *c, const cJSON *root, int is_variant)
{
	const cJSON *src = NULL, *tok_arr = NULL, *src_tok_arr = NULL, *we;
	MatSrc ms_x, ms_s, ms_q, ms_k, ms_v, ms_o, ms_e;
	MaskSrc parts[LESSON_MAX_MASKS];
	int nparts = 0;
	Shapes sh;
	Lesson *l;
	size_t base = c->pathlen, old;
	int ok = 0;

	memset(&ms_s, 0, sizeof ms_s);
	memset(&ms_e, 0, sizeof ms_e);
	if (cJSON_IsObject(root) && get(root, "encoder") != NULL && cJSON_IsNumber(get(root, "attnviz")) &&
	    get(root, "attnviz")->valuedouble == 2)
		return lesson_encdec(c, root, is_variant);
	if (cJSON_IsObject(root) && get(root, "layers") != NULL && cJSON_IsNumber(get(root, "attnviz")) &&
	    get(root, "attnviz")->valuedouble == 2)
		return lesson_with_layers(c, root, get(root, "layers"), is_variant);
	l = calloc(1, sizeof *l);
	if (l == NULL) {
		fail_oom(c);
		return NULL;
	}
	l->path = strdup(c->name);
	if (l->path == NULL) {
		fail_oom(c);
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		fail(c, _("a lesson is one JSON object {\"attnviz\": 1, …}, but this file holds %s"), got(root).s);
		goto out;
	}
	if (!is_variant) {
		warn_unknown_keys(c, root, top_keys);
		warn_duplicate_keys(c, root);
	}
	if (read_version(c, root, l) != 0 || check_version_keys(c, root, l->version) != 0)
		goto out;
	if (key_text(c, root, "title", &l->title) != 0 || key_text(c, root, "summary", &l->summary) != 0)
		goto out;
	if (read_scalars(c, root, l) != 0 || read_modern(c, root, l) != 0 || read_block_settings(c, root, l) != 0)
		goto out;

	/* Shapes of every matrix, nothing allocated yet. */
	if (get(root, "X") == NULL) {
		old = path_key(c, "X");
		fail(c, _("missing: the input rows, one per token (an n × d_model matrix or a generator)"));
		path_set(c, old);
		goto out;
	}
	if (read_matsrc(c, root, "X", &LIM_TOKENS_DIM, &ms_x) != 0)
		goto out;
	src = get(root, "source");
	if (src != NULL) {
		old = path_key(c, "source");
		if (!cJSON_IsObject(src)) {
			fail(c, _("expected an object {\"tokens\": […], \"X\": […]}, got %s"), got(src).s);
			goto out;
		}
		warn_unknown_keys(c, src, source_keys);
		if (get(src, "X") == NULL) {
			path_key(c, "X");
			fail(c, _("missing: the source rows (an m × d_src matrix or a generator)"));
			goto out;
		}
		if (read_matsrc(c, src, "X", &LIM_TOKENS_DIM, &ms_s) != 0)
			goto out;
		path_set(c, old);
	}
	{
		static const char *const need[] = { "W_q", "W_k", "W_v" };
		int i;
		for (i = 0; i < 3; i++)
			if (get(root, need[i]) == NULL) {
				old = path_key(c, need[i]);
				fail(c, _("missing (every lesson gives W_q, W_k and W_v)"));
				path_set(c, old);
				goto out;
			}
	}
	if (read_matsrc(c, root, "W_q", &LIM_DIM_DIM, &ms_q) != 0 ||
	    read_matsrc(c, root, "W_k", &LIM_DIM_DIM, &ms_k) != 0 ||
	    read_matsrc(c, root, "W_v", &LIM_DIM_DIM, &ms_v) != 0 ||
	    read_matsrc(c, root, "W_o", &LIM_DIM_DIM, &ms_o) != 0)
		goto out;
	we = get(root, "w_e");
	if (we != NULL && l->score != SCORE_ADDITIVE) {
		old = path_key(c, "w_e");
		warnf(c, _("not used: w_e is for \"score\": \"additive\""));
		path_set(c, old);
	} else if (read_matsrc(c, root, "w_e", &LIM_VECTOR, &ms_e) != 0) {
		goto out;
	}
	if (read_mask(c, root, l, parts, &nparts) != 0)
		goto out;

	/* Tokens: counted now, read once the shapes agree. */
	memset(&sh, 0, sizeof sh);
	sh.ntokens = count_tokens(c, root, "tokens", &tok_arr);
	if (sh.ntokens == -2)
		goto out;
	if (sh.ntokens < 0 && !is_generated(&ms_x)) {
		old = path_key(c, "tokens");
		fail(c, _("missing: one label per row of X (only a generated X may leave them out)"));
		path_set(c, old);
		goto out;
	}
	sh.nsource_tokens = -1;
	if (src != NULL) {
		old = path_key(c, "source");
		sh.nsource_tokens = count_tokens(c, src, "tokens", &src_tok_arr);
		if (sh.nsource_tokens == -2)
			goto out;
		if (sh.nsource_tokens < 0 && !is_generated(&ms_s)) {
			path_key(c, "tokens");
			fail(c, _("missing: one label per row of source.X (only a generated source.X may leave them out)"));
			goto out;
		}
		path_set(c, old);
	}

	sh.n = ms_x.rows;
	sh.d_model = ms_x.cols;
	sh.has_source = src != NULL;
	sh.m = src != NULL ? ms_s.rows : sh.n;
	sh.d_src = src != NULL ? ms_s.cols : sh.d_model;
	sh.heads = l->heads;
	sh.wq_r = ms_q.rows; sh.wq_c = ms_q.cols;
	sh.wk_r = ms_k.rows; sh.wk_c = ms_k.cols;
	sh.wv_r = ms_v.rows; sh.wv_c = ms_v.cols;
	sh.has_wo = ms_o.kind != SRC_ABSENT;
	sh.wo_r = ms_o.rows; sh.wo_c = ms_o.cols;
	sh.has_we = ms_e.kind != SRC_ABSENT;
	sh.we_r = ms_e.rows; sh.we_c = ms_e.cols;
	sh.positional = l->positional;
	sh.score = l->score;
	sh.mask = l->mask;
	sh.fill_inf = l->mask_fill_inf;
	sh.nparts = nparts;
	for (int i = 0; i < nparts; i++) {
		sh.part[i].kind = parts[i].kind;
		sh.part[i].window = parts[i].window;
		sh.part[i].r = parts[i].ms.rows;
		sh.part[i].c = parts[i].ms.cols;
	}
	sh.kv_heads = l->kv_heads;
	sh.rope = l->rope;
	sh.alibi = l->alibi;
	sh.decode = l->decode;
	sh.flash_bq = l->flash_bq;
	sh.flash_bk = l->flash_bk;
	shapes_block(&sh, l);
	if (stack(c)->part != PART_LAYER)
		sh.has_final = stack(c)->link_final;
	else if (c->layer_obj != NULL)
		sh.has_final = stack(c)->stack_final && c->layer_index == stack(c)->nlayers - 1;
	else
		sh.has_final = cJSON_IsObject(get(root, "block")) && get(get(root, "block"), "final_norm") != NULL;
	sh.backward = get(root, "backward") != NULL;
	if (check_shapes(c, &sh) != 0)
		goto out;
	l->n = sh.n;
	l->m = sh.m;
	l->d_model = sh.d_model;
	l->d_src = sh.d_src;
	l->d_k = sh.d_k;
	l->d_v = sh.d_v;
	l->d_out = sh.d_out;
	l->has_source = sh.has_source;

	old = path_key(c, "tokens");
	if (read_tokens(c, tok_arr, l->n, "t", &l->tokens) != 0)
		goto out;
	path_set(c, old);
	if (src != NULL) {
		old = path_key(c, "source.tokens");
		if (read_tokens(c, src_tok_arr, l->m, "s", &l->source_tokens) != 0)
			goto out;
		path_set(c, old);
	}
	if (!is_variant && read_steps(c, &sh, root, l) != 0)
		goto out;

	/* Now the numbers. */
	if (fill_mat(c, &ms_x, &l->input) != 0 || fill_mat(c, &ms_s, &l->source_input) != 0 ||
	    fill_mat(c, &ms_q, &l->W_q) != 0 || fill_mat(c, &ms_k, &l->W_k) != 0 ||
	    fill_mat(c, &ms_v, &l->W_v) != 0 || fill_mat(c, &ms_o, &l->W_o) != 0 ||
	    fill_mat(c, &ms_e, &l->w_e) != 0)
		goto out;
	if (l->mask == MASK_LIST) {
		l->masks = calloc((size_t)nparts, sizeof *l->masks);
		if (l->masks == NULL) {
			fail_oom(c);
			goto out;
		}
		l->nmasks = nparts;
		for (int i = 0; i < nparts; i++) {
			l->masks[i].kind = parts[i].kind;
			l->masks[i].window = parts[i].window;
			if (fill_mat(c, &parts[i].ms, &l->masks[i].matrix) != 0)
				goto out;
		}
	} else if (nparts == 1 && fill_mat(c, &parts[0].ms, &l->mask_matrix) != 0)
		goto out;
	if (read_v2_matrices(c, root, l) != 0 ||
	    (c->layer_obj == NULL && stack(c)->part == PART_LAYER && read_final_norm(c, root, l) != 0) ||
	    (c->layer_obj == NULL && read_backward(c, root, l) != 0))
		goto out;

	if (!is_variant) {
		int r;
		stack(c)->numbers_before = shapes_count(&sh); /* the variant counts with this lesson */
		r = read_compare(c, root, l);
		stack(c)->numbers_before = 0;
		if (r != 0)
			goto out;
	}
	ok = 1;
out:
	path_set(c, base);
	if (!ok) {
		/* l->n and l->m are set before the token arrays are made: lesson_free can count them. */
		lesson_free(l);
		return NULL;
	}
	return l;
}

/* ------------------------------------------------------------------ */
/* Loading: text to cJSON (jr_parse), then to a Lesson                 */
/* ------------------------------------------------------------------ */

/*
 * lesson_load_string; terminated = 1 promises buf[len] == '\0', so the text
 * is parsed where it is, without a copy (a 64 MiB file is not held twice).
 */
static Lesson *load_text(const char *name, const char *buf, size_t len, int terminated, char **err,
                         char **warn_out)
{
	Lesson *l = NULL;
	cJSON *root = NULL;
	char *e = NULL;
	StrBuf w = { 0 };
	Stack st = { 0 };
	Ctx c;

	if (name == NULL)
		name = "(lesson)";
	if (warn_out != NULL && *warn_out != NULL) {
		/* Append to what the caller already has. */
		w.s = *warn_out;
		w.len = strlen(w.s);
		w.cap = w.len + 1;
		*warn_out = NULL;
	}
	if (len > (size_t)LESSON_MAX_BYTES) {
		e = str_printf(_("%s: the file is %zu bytes, over the limit of %ld bytes (LESSON_MAX_BYTES)"), name, len,
		           (long)LESSON_MAX_BYTES);
		goto out;
	}
	root = jr_parse(name, buf, len, terminated, _("lesson"), "{\"attnviz\": 1, …}", &e);
	if (root == NULL)
		goto out;
	ctx_init(&c, name, &w);
	c.reader = &st;
	l = refuse_stray_parts(&c, root) != 0 ? NULL : lesson_from_json(&c, root, 0);
	cJSON_Delete(root);
	e = c.err;
out:
	if (e == NULL && l == NULL)
		e = str_printf(_("%s: out of memory"), name);
	if (err != NULL)
		*err = e;
	else
		free(e);
	if (warn_out != NULL && w.len > 0 && !w.oom)
		*warn_out = w.s;
	else
		free(w.s);
	return l;
}

Lesson *lesson_load_string(const char *name, const char *buf, size_t len, char **err, char **warn_out)
{
	return load_text(name, buf, len, 0, err, warn_out);
}

Lesson *lesson_load(const char *path, char **err, char **warn_out)
{
	/* The name as messages show it: a file name may hold control characters too. */
	char *shown = text_escape(path, "");
	struct stat st;
	Lesson *l = NULL;
	char *buf = NULL, *p;
	size_t len = 0, cap;
	ssize_t got_bytes;
	const char *kind;
	int fd;

	if (err != NULL)
		*err = NULL;
	if (shown == NULL) {
		if (err != NULL)
			*err = str_printf("%s", _("out of memory"));
		return NULL;
	}
	/* Regular files only: a FIFO or a device is refused at once, never waited on (fileio.h). */
	fd = fileio_open_regular(path, &st, &kind);
	if (fd < 0) {
		if (err != NULL)
			*err = kind != NULL ? str_printf(_("%s: is %s, not a lesson file"), shown, kind)
			                    : str_printf(_("%s: cannot open: %s"), shown, strerror(errno));
		free(shown);
		return NULL;
	}
	if (st.st_size > (off_t)LESSON_MAX_BYTES) {
		if (err != NULL)
			*err = str_printf(_("%s: the file is %lld bytes, over the limit of %ld bytes (LESSON_MAX_BYTES)"), shown,
			              (long long)st.st_size, (long)LESSON_MAX_BYTES);
		goto out;
	}
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap);
	if (buf == NULL) {
		if (err != NULL)
			*err = str_printf(_("%s: out of memory"), shown);
		goto out;
	}
	for (;;) {
		if (len == cap) {
			if (cap > (size_t)LESSON_MAX_BYTES)
				break; /* over the limit: lesson_load_string says so */
			cap *= 2;
			p = realloc(buf, cap);
			if (p == NULL) {
				if (err != NULL)
					*err = str_printf(_("%s: out of memory"), shown);
				goto out;
			}
			buf = p;
		}
		got_bytes = read(fd, buf + len, cap - len);
		if (got_bytes < 0) {
			if (errno == EINTR)
				continue;
			if (err != NULL)
				*err = str_printf(_("%s: cannot read: %s"), shown, strerror(errno));
			goto out;
		}
		if (got_bytes == 0)
			break;
		len += (size_t)got_bytes;
	}
	if (len == cap) { /* room for the NUL that lets the parser read the text in place */
		p = realloc(buf, cap + 1);
		if (p == NULL) {
			if (err != NULL)
				*err = str_printf(_("%s: out of memory"), shown);
			goto out;
		}
		buf = p;
	}
	buf[len] = '\0';
	l = load_text(shown, buf, len, 1, err, warn_out);
out:
	free(buf);
	free(shown);
	close(fd);
	return l;
}

/* ------------------------------------------------------------------ */
/* Stages present, clone, validate, languages                          */
/* ------------------------------------------------------------------ */

static void shapes_from_lesson(const Lesson *l, Shapes *s)
{
	memset(s, 0, sizeof *s);
	s->n = l->input.rows;
	s->d_model = l->input.cols;
	s->has_source = l->has_source;
	s->m = l->has_source ? l->source_input.rows : s->n;
	s->d_src = l->has_source ? l->source_input.cols : s->d_model;
	s->heads = l->heads;
	s->ntokens = -1;
	s->nsource_tokens = -1;
	s->wq_r = l->W_q.rows; s->wq_c = l->W_q.cols;
	s->wk_r = l->W_k.rows; s->wk_c = l->W_k.cols;
	s->wv_r = l->W_v.rows; s->wv_c = l->W_v.cols;
	s->has_wo = !mat_empty(&l->W_o);
	s->wo_r = l->W_o.rows; s->wo_c = l->W_o.cols;
	s->has_we = !mat_empty(&l->w_e);
	s->we_r = l->w_e.rows; s->we_c = l->w_e.cols;
	s->positional = l->positional;
	s->score = l->score;
	s->scale = l->scale;
	shapes_masks(s, l);
	shapes_modern(s, l);
	s->d_k = l->heads > 0 ? l->W_q.cols / l->heads : 0;
	s->d_v = s->kv_heads > 0 ? l->W_v.cols / s->kv_heads : 0;
	s->d_out = s->has_wo ? l->W_o.cols : l->heads * s->d_v;
	shapes_block(s, l);
	s->has_final = l->has_final_norm;
	s->backward = l->backward != BACKWARD_NONE;
}

double lesson_count_numbers(const Lesson *l)
{
	Shapes s;
	double total = 0;

	/* a stack holds every layer's matrices at once (its top level is a copy of layer 0's keys) */
	for (int i = 0; i < l->nlayers; i++)
		total += lesson_count_numbers(l->layer[i]);
	if (l->encoder != NULL)
		total += lesson_count_numbers(l->encoder);
	if (l->nlayers > 0)
		return total;
	shapes_from_lesson(l, &s);
	return shapes_count(&s);
}

double lesson_budget_numbers(const Lesson *l)
{
	return lesson_count_numbers(l) + (l->compare != NULL ? lesson_count_numbers(l->compare) : 0);
}

void lesson_shape(const Lesson *l, LessonShape *out)
{
	Shapes sh;

	shapes_from_lesson(l, &sh);
	shapes_shape(&sh, out);
}

int lesson_stage_present(const Lesson *l, Stage s)
{
	LessonShape sh;

	if (l == NULL || (unsigned)s >= STAGE_COUNT)
		return 0;
	lesson_shape(l, &sh);
	return stage_present(&sh, s);
}

/* Whether one mask lets query i see key j. */
static int part_sees(MaskKind kind, int window, const Mat *m, int i, int j)
{
	switch (kind) {
	case MASK_CAUSAL: return j <= i;
	case MASK_WINDOW: return j <= i && i - j < window;
	case MASK_PADDING: return MAT_AT(*m, 0, j) != 0.0;
	case MASK_MATRIX: return MAT_AT(*m, i, j) != 0.0;
	default: return 1;
	}
}

int lesson_kv_named(const Lesson *l)
{
	return l->kv_heads_given || l->kv_heads != l->heads;
}

int lesson_mask_sees(const Lesson *l, int i, int j)
{
	if (l->mask != MASK_LIST)
		return part_sees(l->mask, l->window, &l->mask_matrix, i, j);
	for (int k = 0; k < l->nmasks; k++)
		if (!part_sees(l->masks[k].kind, l->masks[k].window, &l->masks[k].matrix, i, j))
			return 0;
	return 1;
}

int lesson_mask_causal(const Lesson *l)
{
	if (l->mask == MASK_CAUSAL || l->mask == MASK_WINDOW)
		return 1;
	for (int k = 0; l->mask == MASK_LIST && k < l->nmasks; k++)
		if (l->masks[k].kind == MASK_CAUSAL || l->masks[k].kind == MASK_WINDOW)
			return 1;
	return 0;
}

int lesson_mask_window(const Lesson *l)
{
	int w = l->mask == MASK_WINDOW ? l->window : 0;

	for (int k = 0; l->mask == MASK_LIST && k < l->nmasks; k++)
		if (l->masks[k].kind == MASK_WINDOW && (w == 0 || l->masks[k].window < w))
			w = l->masks[k].window;
	return w;
}

/*
 * ALiBi's slopes (Press, Smith and Lewis, "Train Short, Test Long"): for h a
 * power of two, the geometric sequence 2^(−8/h), 2^(−16/h), …; otherwise
 * the c = 2^⌊log2 h⌋ slopes of c heads, then every other slope of 2c heads.
 */
double lesson_alibi_slope(int h, int i)
{
	int c = 1;

	while (c * 2 <= h)
		c *= 2;
	if (i < c)
		return pow(2.0, -8.0 * (i + 1) / c);
	return pow(2.0, -8.0 * (2 * (i - c) + 1) / (2.0 * c));
}

/* Where each given matrix lives in a lesson (the catalogue's MF_GIVEN kinds). */
static const size_t given_field[AM_COUNT] = {
	[AM_INPUT] = offsetof(Lesson, input), [AM_SOURCE_INPUT] = offsetof(Lesson, source_input),
	[AM_W_Q] = offsetof(Lesson, W_q), [AM_W_K] = offsetof(Lesson, W_k), [AM_W_V] = offsetof(Lesson, W_v),
	[AM_W_O] = offsetof(Lesson, W_o), [AM_W_E] = offsetof(Lesson, w_e),
	[AM_B_Q] = offsetof(Lesson, b_q), [AM_B_K] = offsetof(Lesson, b_k), [AM_B_V] = offsetof(Lesson, b_v),
	[AM_B_O] = offsetof(Lesson, b_o),
	[AM_LN1_GAMMA] = offsetof(Lesson, block.ln1_gamma), [AM_LN1_BETA] = offsetof(Lesson, block.ln1_beta),
	[AM_LN2_GAMMA] = offsetof(Lesson, block.ln2_gamma), [AM_LN2_BETA] = offsetof(Lesson, block.ln2_beta),
	[AM_W_1] = offsetof(Lesson, block.W_1), [AM_B_1] = offsetof(Lesson, block.b_1),
	[AM_W_3] = offsetof(Lesson, block.W_3), [AM_B_3] = offsetof(Lesson, block.b_3),
	[AM_W_2] = offsetof(Lesson, block.W_2), [AM_B_2] = offsetof(Lesson, block.b_2),
	[AM_FINAL_GAMMA] = offsetof(Lesson, final_gamma), [AM_FINAL_BETA] = offsetof(Lesson, final_beta),
};

Mat *lesson_matrix(Lesson *l, AttnMatrix which)
{
	if ((unsigned)which >= AM_COUNT || !(matrix_kinds[which].flags & MF_GIVEN))
		return NULL;
	return (Mat *)((char *)l + given_field[which]);
}

/* Layer i of a loaded lesson as the engine computes it (positions on layer 0, the final norm on the last). */
static void layer_shapes(const Lesson *l, int i, Shapes *sh)
{
	shapes_from_lesson(lesson_layer_const(l, i), sh);
	if (l->nlayers > 0) {
		/* positions are added once, before layer 0; the stack's final norm follows its last layer */
		sh->positional = i == 0 ? l->positional : POS_NONE;
		sh->has_final = i == l->nlayers - 1 && l->has_final_norm;
		sh->backward = l->backward != BACKWARD_NONE;
		sh->score = l->score;
		sh->scale = l->scale;
		shapes_masks(sh, l);
		sh->rope = l->rope;
		sh->alibi = l->alibi;
		sh->decode = l->decode;
		sh->flash_bq = l->flash_bq;
		sh->flash_bk = l->flash_bk;
	}
}

void lesson_layer_shape(const Lesson *l, int i, LessonShape *out)
{
	Shapes sh;

	layer_shapes(l, i, &sh);
	shapes_shape(&sh, out);
}

int lesson_cell_exists(const Lesson *l, int layer, const CellRef *ref)
{
	const int which = matrix_find(ref->matrix);
	const Lesson *p = lesson_layer_const(l, layer);
	LessonShape sh;
	int rows, cols;

	if (which < 0)
		return 0;
	lesson_layer_shape(l, layer, &sh);
	if (!matrix_present(&sh, (AttnMatrix)which, NULL))
		return 0;
	matrix_shape(&sh, (AttnMatrix)which, &rows, &cols);
	if (matrix_per_head((AttnMatrix)which) && (ref->head < 0 || ref->head >= p->heads))
		return 0;
	return ref->row >= 0 && ref->row < rows && ref->col >= 0 && ref->col < cols;
}

static int mat_check_values(Ctx *c, const Mat *m, const char *key, int zero_one)
{
	size_t i, count = (size_t)m->rows * (size_t)m->cols, old;
	int r = 0;

	for (i = 0; i < count && r == 0; i++) {
		double x = m->a[i];
		if (isfinite(x) && (!zero_one || x == 0.0 || x == 1.0))
			continue;
		old = path_key(c, key);
		if (m->rows > 1)
			path_append(c, "[%zu]", i / (size_t)m->cols);
		path_append(c, "[%zu]", i % (size_t)m->cols);
		if (!isfinite(x))
			r = fail(c, _("expected a finite number, got %g"), x);
		else
			r = fail(c, _("expected 0 or 1, got %g"), x);
		path_set(c, old);
	}
	return r;
}

static int validate_into(Ctx *c, const Lesson *l)
{
	Shapes s;
	size_t old;
	int i;

	if (l->heads < 1) {
		old = path_key(c, "heads");
		fail(c, _("expected a whole number ≥ 1, got %d"), l->heads);
		path_set(c, old);
		return -1;
	}
	if (mat_empty(&l->input) || mat_empty(&l->W_q) || mat_empty(&l->W_k) || mat_empty(&l->W_v) ||
	    (l->has_source && mat_empty(&l->source_input)))
		return fail(c, _("a matrix is empty (X, source.X, W_q, W_k and W_v need at least one number)"));
	shapes_from_lesson(l, &s);
	if (s.n > LESSON_MAX_TOKENS || s.m > LESSON_MAX_TOKENS || s.d_model > LESSON_MAX_DIM ||
	    s.d_src > LESSON_MAX_DIM || s.wq_c > LESSON_MAX_DIM || s.wv_c > LESSON_MAX_DIM ||
	    s.d_out > LESSON_MAX_DIM) {
		if (s.n > LESSON_MAX_TOKENS || s.m > LESSON_MAX_TOKENS)
			return check_shapes(c, &s);
		return fail(c, _("a matrix is over the limit of %d columns (LESSON_MAX_DIM)"), LESSON_MAX_DIM);
	}
	if (check_shapes(c, &s) != 0)
		return -1;
	/* The cached sizes must agree with the matrices (after an edit, update them first). */
	if (l->n != s.n || l->m != s.m || l->d_model != s.d_model || l->d_src != s.d_src || l->d_k != s.d_k ||
	    l->d_v != s.d_v || l->d_out != s.d_out)
		return fail(c, _("the sizes n, m, d_model, d_src, d_k, d_v, d_out (%d, %d, %d, %d, %d, %d, %d) do not "
		               "match the matrices (%d, %d, %d, %d, %d, %d, %d)"),
		            l->n, l->m, l->d_model, l->d_src, l->d_k, l->d_v, l->d_out,
		            s.n, s.m, s.d_model, s.d_src, s.d_k, s.d_v, s.d_out);
	if (l->tokens == NULL || (l->has_source && l->source_tokens == NULL))
		return fail(c, _("the token labels are missing"));
	if (mat_check_values(c, &l->input, "X", 0) != 0 ||
	    mat_check_values(c, &l->source_input, "source.X", 0) != 0 ||
	    mat_check_values(c, &l->W_q, "W_q", 0) != 0 || mat_check_values(c, &l->W_k, "W_k", 0) != 0 ||
	    mat_check_values(c, &l->W_v, "W_v", 0) != 0 || mat_check_values(c, &l->W_o, "W_o", 0) != 0 ||
	    mat_check_values(c, &l->w_e, "w_e", 0) != 0 ||
	    mat_check_values(c, &l->mask_matrix, l->mask == MASK_PADDING ? "mask.padding" : "mask", 1) != 0)
		return -1;
	for (i = 0; i < l->nmasks; i++) {
		char key[32];
		snprintf(key, sizeof key, "mask[%d]%s", i, l->masks[i].kind == MASK_PADDING ? ".padding" : "");
		if (mat_check_values(c, &l->masks[i].matrix, key, 1) != 0)
			return -1;
	}
	if (l->alibi && !mat_empty(&l->alibi_slopes) && l->alibi_slopes.rows * l->alibi_slopes.cols != l->heads)
		return fail(c, _("alibi.slopes: expected %d numbers (one per head), got %d"), l->heads,
		            l->alibi_slopes.rows * l->alibi_slopes.cols);
	if (l->block.present && l->d_out != l->d_model)
		return fail(c, _("the block needs the attention's output to have d_model = %d columns, not %d"), l->d_model,
		            l->d_out);
	for (i = 0; i < l->nlayers; i++) {
		/* a decoder link is named where the file has it, as the loader's aliases do: layers[k].self or .cross */
		const Lesson *li = l->layer[i];
		size_t old2 = li->part == PART_LAYER
		                  ? path_append(c, "%slayers[%d]", c->pathlen ? "." : "", i)
		                  : path_append(c, "%slayers[%d].%s", c->pathlen ? "." : "", li->dec_layer,
		                                li->part == PART_SELF ? "self" : "cross");
		if (validate_into(c, li) != 0)
			return -1;
		path_set(c, old2);
	}
	if (l->scale == SCALE_VALUE && !isfinite(l->scale_value))
		return fail(c, _("scale: expected a finite number"));
	if (!l->mask_fill_inf && !isfinite(l->mask_fill))
		return fail(c, _("mask_fill: expected \"-inf\" or a finite number"));
	if (l->nsteps > LESSON_MAX_STEPS)
		return fail(c, _("steps: %d steps is over the limit of %d (LESSON_MAX_STEPS)"), l->nsteps, LESSON_MAX_STEPS);
	for (i = 0; i < l->nsteps; i++) {
		const Step *st = &l->steps[i];
		Shapes ss = s; /* the step's layer: its own matrices (a decoder's cross-attention has a source) */
		int r = 0;
		if (st->encoder && l->encoder != NULL) {
			layer_shapes(l->encoder, st->layer < lesson_layers(l->encoder) ? st->layer : 0, &ss);
			ss.backward = s.backward; /* the decoder's loss reaches the encoder too */
		}
		else if (st->layer > 0 && st->layer < l->nlayers) {
			shapes_from_lesson(l->layer[st->layer], &ss);
			ss.positional = POS_NONE;
			ss.has_final = l->has_final_norm && st->layer == l->nlayers - 1;
			ss.backward = s.backward;
		} else if (l->nlayers > 1)
			ss.has_final = 0;
		old = path_append(c, "%ssteps[%d]", c->pathlen ? "." : "", i);
		if ((unsigned)st->stage >= STAGE_COUNT) {
			path_key(c, "stage");
			r = fail(c, _("unknown stage %d"), (int)st->stage);
		} else {
			r = check_step_stage(c, &ss, st);
		}
		if (r == 0 && st->has_focus) {
			size_t o2 = path_key(c, "focus");
			r = check_cellref(c, &ss, &st->focus);
			path_set(c, o2);
		}
		if (r == 0 && st->has_quiz) {
			size_t o2 = path_key(c, "quiz");
			if (st->quiz.nchoices > 0) {
				if (st->quiz.nchoices < 2 || st->quiz.answer_choice < 0 ||
				    st->quiz.answer_choice >= st->quiz.nchoices) {
					path_key(c, "answer");
					r = fail(c, _("%d is outside the %d choices (0 to %d: the file counts from 0, the screen numbers "
					         "them 1 to %d)"),
					         st->quiz.answer_choice, st->quiz.nchoices, st->quiz.nchoices - 1, st->quiz.nchoices);
				}
			} else {
				path_key(c, "answer");
				r = check_cellref(c, &ss, &st->quiz.answer_cell);
			}
			path_set(c, o2);
		}
		path_set(c, old);
		if (r != 0)
			return -1;
	}
	if (l->compare != NULL) {
		old = path_key(c, "compare");
		stack(c)->numbers_before = shapes_count(&s); /* the variant counts with this lesson */
		i = validate_into(c, l->compare);
		stack(c)->numbers_before = 0;
		path_set(c, old);
		if (i != 0)
			return -1;
	}
	return 0;
}

int lesson_validate(const Lesson *l, char **err)
{
	Stack st = { 0 };
	Ctx c;

	ctx_init(&c, l != NULL && l->path != NULL ? l->path : "(lesson)", NULL);
	c.reader = &st;
	if (l == NULL)
		fail(&c, _("no lesson"));
	else
		validate_into(&c, l);
	if (err != NULL)
		*err = c.err;
	else
		free(c.err);
	return c.err != NULL ? -1 : 0;
}

static char **tokens_copy(char *const *t, int n)
{
	char **out;
	int i;

	if (t == NULL)
		return NULL;
	out = calloc((size_t)n + 1, sizeof *out);
	if (out == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		out[i] = strdup(t[i]);
		if (out[i] == NULL) {
			tokens_free(out, n);
			return NULL;
		}
	}
	return out;
}

static int step_copy(Step *dst, const Step *src)
{
	int i;

	*dst = *src;
	memset(&dst->text, 0, sizeof dst->text);
	memset(&dst->quiz.question, 0, sizeof dst->quiz.question);
	memset(&dst->quiz.hint, 0, sizeof dst->quiz.hint);
	dst->quiz.choices = NULL;
	dst->quiz.nchoices = 0;
	if (text_copy(&dst->text, &src->text) != 0)
		return -1;
	if (!src->has_quiz)
		return 0;
	if (text_copy(&dst->quiz.question, &src->quiz.question) != 0 ||
	    text_copy(&dst->quiz.hint, &src->quiz.hint) != 0)
		return -1;
	if (src->quiz.nchoices > 0) {
		dst->quiz.choices = calloc((size_t)src->quiz.nchoices, sizeof *dst->quiz.choices);
		if (dst->quiz.choices == NULL)
			return -1;
		for (i = 0; i < src->quiz.nchoices; i++) {
			if (text_copy(&dst->quiz.choices[i], &src->quiz.choices[i]) != 0)
				return -1;
			dst->quiz.nchoices = i + 1;
		}
	}
	return 0;
}

Lesson *lesson_clone(const Lesson *l)
{
	Lesson *c;
	int i, ok = 0;

	if (l == NULL)
		return NULL;
	c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	/* Scalars first; every owned pointer is then replaced by a copy (or NULL). */
	*c = *l;
	c->path = NULL;
	memset(&c->title, 0, sizeof c->title);
	memset(&c->summary, 0, sizeof c->summary);
	memset(&c->compare_label, 0, sizeof c->compare_label);
	c->tokens = c->source_tokens = NULL;
	memset(&c->input, 0, sizeof c->input);
	memset(&c->source_input, 0, sizeof c->source_input);
	memset(&c->W_q, 0, sizeof c->W_q);
	memset(&c->W_k, 0, sizeof c->W_k);
	memset(&c->W_v, 0, sizeof c->W_v);
	memset(&c->W_o, 0, sizeof c->W_o);
	memset(&c->w_e, 0, sizeof c->w_e);
	memset(&c->mask_matrix, 0, sizeof c->mask_matrix);
	c->b_q = c->b_k = c->b_v = c->b_o = c->final_gamma = c->final_beta = c->target = (Mat){ 0 };
	c->alibi_slopes = (Mat){ 0 };
	c->nmasks = 0;
	c->masks = NULL;
	c->nlayers = 0;
	c->layer = NULL;
	c->nsteps = 0;
	c->steps = NULL;
	c->compare = NULL;
	c->encoder = NULL;
	if (block_copy(&c->block, &l->block) != 0)
		goto out;

	if (l->path != NULL && (c->path = strdup(l->path)) == NULL)
		goto out;
	if (text_copy(&c->title, &l->title) != 0 || text_copy(&c->summary, &l->summary) != 0 ||
	    text_copy(&c->compare_label, &l->compare_label) != 0)
		goto out;
	if (l->tokens != NULL && (c->tokens = tokens_copy(l->tokens, l->n)) == NULL)
		goto out;
	if (l->source_tokens != NULL && (c->source_tokens = tokens_copy(l->source_tokens, l->m)) == NULL)
		goto out;
	if (mat_copy(&c->input, &l->input) != 0 || mat_copy(&c->source_input, &l->source_input) != 0 ||
	    mat_copy(&c->W_q, &l->W_q) != 0 || mat_copy(&c->W_k, &l->W_k) != 0 ||
	    mat_copy(&c->W_v, &l->W_v) != 0 || mat_copy(&c->W_o, &l->W_o) != 0 ||
	    mat_copy(&c->w_e, &l->w_e) != 0 || mat_copy(&c->mask_matrix, &l->mask_matrix) != 0 ||
	    mat_copy(&c->b_q, &l->b_q) != 0 || mat_copy(&c->b_k, &l->b_k) != 0 || mat_copy(&c->b_v, &l->b_v) != 0 ||
	    mat_copy(&c->b_o, &l->b_o) != 0 || mat_copy(&c->final_gamma, &l->final_gamma) != 0 ||
	    mat_copy(&c->final_beta, &l->final_beta) != 0 || mat_copy(&c->target, &l->target) != 0 ||
	    mat_copy(&c->alibi_slopes, &l->alibi_slopes) != 0)
		goto out;
	if (l->nmasks > 0) {
		c->masks = calloc((size_t)l->nmasks, sizeof *c->masks);
		if (c->masks == NULL)
			goto out;
		for (i = 0; i < l->nmasks; i++) {
			c->masks[i].kind = l->masks[i].kind;
			c->masks[i].window = l->masks[i].window;
			c->nmasks = i + 1;
			if (mat_copy(&c->masks[i].matrix, &l->masks[i].matrix) != 0)
				goto out;
		}
	}
	if (l->nlayers > 0) {
		c->layer = calloc((size_t)l->nlayers, sizeof *c->layer);
		if (c->layer == NULL)
			goto out;
		for (i = 0; i < l->nlayers; i++) {
			c->nlayers = i + 1;
			if ((c->layer[i] = lesson_clone(l->layer[i])) == NULL)
				goto out;
		}
	}
	if (l->nsteps > 0) {
		c->steps = calloc((size_t)l->nsteps, sizeof *c->steps);
		if (c->steps == NULL)
			goto out;
		for (i = 0; i < l->nsteps; i++) {
			c->nsteps = i + 1;
			if (step_copy(&c->steps[i], &l->steps[i]) != 0)
				goto out;
		}
	}
	if (l->compare != NULL && (c->compare = lesson_clone(l->compare)) == NULL)
		goto out;
	if (l->encoder != NULL && (c->encoder = lesson_clone(l->encoder)) == NULL)
		goto out;
	ok = 1;
out:
	if (!ok) {
		lesson_free(c);
		return NULL;
	}
	return c;
}

/* One text against every language; path is its place in the file. */
static int text_languages(const Lesson *l, const Text *t, const char *const *langs, StrBuf *b, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int text_languages(const Lesson *l, const Text *t, const char *const *langs, StrBuf *b, const char *fmt, ...)
{
	char path[PATH_SIZE];
	va_list ap;
	int i, missing = 0;

	if (text_empty(t))
		return 0;
	va_start(ap, fmt);
	vsnprintf(path, sizeof path, fmt, ap);
	va_end(ap);
	for (i = 0; langs[i] != NULL; i++)
		if (!text_has(t, langs[i])) {
			strbuf_printf(b, "%s: %s: no \"%s\" text\n", l->path ? l->path : "(lesson)", path, langs[i]);
			missing = 1;
		}
	return missing;
}

int lesson_check_languages(const Lesson *l, const char *const *langs, char **report)
{
	StrBuf b = { 0 };
	int count = 0, i, j;

	if (report != NULL && *report != NULL) {
		b.s = *report;
		b.len = strlen(b.s);
		b.cap = b.len + 1;
		*report = NULL;
	}
	if (l != NULL && langs != NULL) {
		count += text_languages(l, &l->title, langs, &b, "title");
		count += text_languages(l, &l->summary, langs, &b, "summary");
		for (i = 0; i < l->nsteps; i++) {
			const Step *st = &l->steps[i];
			count += text_languages(l, &st->text, langs, &b, "steps[%d].text", i);
			if (!st->has_quiz)
				continue;
			count += text_languages(l, &st->quiz.question, langs, &b, "steps[%d].quiz.question", i);
			for (j = 0; j < st->quiz.nchoices; j++)
				count += text_languages(l, &st->quiz.choices[j], langs, &b, "steps[%d].quiz.choices[%d]", i, j);
			count += text_languages(l, &st->quiz.hint, langs, &b, "steps[%d].quiz.hint", i);
		}
		count += text_languages(l, &l->compare_label, langs, &b, "compare.label");
	}
	if (report != NULL && b.len > 0 && !b.oom)
		*report = b.s;
	else
		free(b.s);
	return count;
}
