/* session.c: the learner's state, and the only functions that change it. */
#include "app/session.h"
#include "base/i18n.h"
#include "app/session_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/backward.h"
#include "engine/variants/variants.h"
#include "inspect/explain.h"
#include "base/paths.h"
#include "base/strbuf.h"

extern const unsigned char default_lesson_json[];
extern const size_t default_lesson_len;

/* ------------------------------------------------------------ the walk */

/* Layer `layer` of a computation, or its last when it has fewer (NULL for none). */
static Attn *layer_or_last(Attn *a, int layer)
{
	while (a != NULL && a->next != NULL && a->layer < layer)
		a = a->next;
	return a;
}

/*
 * Walk layer `layer` (lesson_walk_stack: an encoder's layers first, then
 * the lesson's own) of a computation, or the nearest it has.
 */
static Attn *walk_link(Attn *a, int nenc, int layer)
{
	if (a == NULL)
		return NULL;
	if (layer < nenc)
		return layer_or_last(a->encoder != NULL ? a->encoder : a, layer);
	return layer_or_last(a, layer - nenc);
}

const Attn *session_walk_link(const Session *s, int layer)
{
	const int nenc = lesson_walk_encoder(s->lesson);

	return layer < nenc ? attn_layer(s->model->encoder, layer) : attn_layer(s->model, layer - nenc);
}

/* Point attn (and the variant's and the previous computation's) at walk layer `layer`. */
void sn_point_layer(Session *s)
{
	const int nenc = lesson_walk_encoder(s->lesson);

	s->attn = (Attn *)session_walk_link(s, s->layer);
	if (s->attn == NULL) {
		s->layer = 0;
		s->attn = nenc > 0 ? s->model->encoder : s->model;
	}
	s->compare_attn = walk_link(s->compare_model, nenc, s->layer);
	s->prev_attn = walk_link(s->prev_model, nenc, s->layer);
	/* a real model's layer weights are doubles for the layer shown only (model.h: LayerParams.file) */
	for (Attn *a = s->model; a != NULL; a = a->next)
		if (a != s->attn)
			attn_weights_drop(a);
}

/* One step per stage present in each layer, or the lesson's own steps. Texts stay owned by the lesson. */
int sn_build_walk(Session *s)
{
	const Lesson *l = s->lesson;
	const int nenc = lesson_walk_encoder(l);
	const Attn *a;
	int st, k = 0;

	free(s->walk);
	free(s->quiz);
	s->walk = NULL;
	s->quiz = NULL;
	if (l->nsteps > 0) {
		s->nwalk = l->nsteps;
		s->walk = malloc((size_t)l->nsteps * sizeof *s->walk);
		if (s->walk == NULL)
			return -1;
		memcpy(s->walk, l->steps, (size_t)l->nsteps * sizeof *s->walk);
		/* the walk counts layers the session's way: the encoder's first */
		for (k = 0; k < s->nwalk; k++)
			if (!s->walk[k].encoder)
				s->walk[k].layer += nenc;
	} else {
		/*
		 * The forward stages as the computation runs them: the encoder's
		 * layers first (each chain shows its own input), then the lesson's.
		 * Then the backward stages (those the table says need a loss) as the
		 * backward pass runs them: from the loss back through the lesson's
		 * links, last first, then through the memory into the encoder's last
		 * layer down to its first.
		 */
		const Attn *chains[2] = { s->model->encoder, s->model };
		const int nlinks = lesson_walk_layers(l);
		struct { const Attn *a; int enc; } *links = malloc((size_t)nlinks * sizeof *links);
		int n = 0;
		s->walk = calloc((size_t)STAGE_COUNT * (size_t)nlinks, sizeof *s->walk);
		if (s->walk == NULL || links == NULL) {
			free(links);
			return -1;
		}
		for (int c = 0; c < 2; c++)
			for (a = chains[c]; a != NULL && n < nlinks; a = a->next, n++) {
				links[n].a = a;
				links[n].enc = c == 0;
			}
		for (int back = 0; back < 2; back++)
			for (int i = 0; i < n; i++) {
				const int enc = links[back ? n - 1 - i : i].enc;
				a = links[back ? n - 1 - i : i].a;
				for (st = 0; st < STAGE_COUNT; st++)
					if (stage_present(&a->shape, (Stage)st) &&
					    ((stage_kinds[st].requires & FEAT_BACKWARD) != 0) == back &&
					    !(a->layer > 0 && st == STAGE_INPUT)) {
						s->walk[k].stage = (Stage)st;
						s->walk[k].layer = a->layer + (enc ? 0 : nenc);
						s->walk[k].encoder = enc;
						s->walk[k].t = s->walk[k].tile_q = s->walk[k].tile_k = -1;
						s->walk[k++].compare = -1;
					}
			}
		free(links);
		s->nwalk = k;
	}
	s->quiz = calloc((size_t)s->nwalk, sizeof *s->quiz);
	if (s->quiz == NULL)
		return -1;
	s->quiz_right = s->quiz_asked = s->quiz_class = 0;
	return 0;
}


static void place_at(Session *s, int step)
{
	s->skip_asked = 0;
	s->step = step;
	s->layer = s->walk[step].layer;
	sn_point_layer(s);
	s->stage = s->walk[step].stage;
	s->head = s->walk[step].head < s->attn->heads ? s->walk[step].head : 0;
	/* A step may show or hide the comparison; `compare on|off` still changes it afterwards. */
	if (s->walk[step].compare >= 0)
		s->compare_on = s->walk[step].compare && s->compare_attn != NULL;
	sn_enter_substeps(s, 0);
	s->dirty |= DIRTY_PLACE;
}


void sn_drop_prev(Session *s)
{
	attn_free(s->prev_model);
	lesson_free(s->prev_lesson);
	sn_kept_free(s->prev_kept);
	s->prev_model = s->prev_attn = NULL;
	s->prev_lesson = NULL;
	s->prev_kept = NULL;
}

/* The compare variant's computation (NULL without one); -1 with *err ("compare: …") when it fails. */
int sn_compute_compare(const Lesson *l, Attn **out, char **err)
{
	char *e = NULL;

	*out = NULL;
	if (l->compare == NULL)
		return 0;
	*out = attn_compute_all(l->compare, &e);
	if (*out == NULL) {
		*err = str_printf(_("compare: %s"), e ? e : "out of memory");
		free(e);
		return -1;
	}
	return 0;
}

int session_init(Session *s, Lesson *l, const char *source, char **err)
{
	memset(s, 0, sizeof *s);
	strcpy(s->lang, "en");
	s->lesson = l;
	s->model = s->attn = attn_compute_all(l, err);
	if (s->attn == NULL) {
		s->lesson = NULL;
		return -1;
	}
	if (sn_compute_compare(l, &s->compare_model, err) != 0) {
		attn_free(s->model);
		s->model = s->attn = NULL;
		s->lesson = NULL;
		return -1;
	}
	s->compare_attn = s->compare_model;
	if (source != NULL)
		s->source = strdup(source);
	if (sn_build_walk(s) != 0) {
		*err = str_printf(_("out of memory"));
		attn_free(s->model);
		attn_free(s->compare_model);
		s->model = s->attn = s->compare_model = s->compare_attn = NULL;
		s->lesson = NULL;
		return -1;
	}
	place_at(s, 0);
	s->dirty = DIRTY_ALL;
	return 0;
}

void session_idle(Session *s)
{
	char *e = NULL;

	if (s->model != NULL && attn_grads_ready(s->model, &e) != 0) /* an edit's gradients, left for their first reader */
		free(e);
	if (s->attn != NULL)
		attn_reserve_derived(s->attn, SESSION_RESERVE_NUMBERS);
	if (s->compare_attn != NULL)
		attn_reserve_derived(s->compare_attn, SESSION_RESERVE_NUMBERS);
}

void session_free(Session *s)
{
	sn_drop_prev(s);
	attn_free(s->model);
	attn_free(s->compare_model);
	lesson_free(s->lesson);
	free(s->source);
	free(s->walk);
	free(s->quiz);
	free(s->induction);
	memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------ loading */

Lesson *session_default_lesson(char **err)
{
	char *warn = NULL;
	Lesson *l = lesson_load_string("(built-in selfattn)", (const char *)default_lesson_json,
	                               default_lesson_len, err, &warn);
	free(warn);
	return l;
}

static int is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int looks_like_path(const char *name)
{
	const size_t len = strlen(name);
	return strchr(name, '/') != NULL || (len > 5 && strcmp(name + len - 5, ".json") == 0);
}

char *session_find_lesson(const char *name, char **err)
{
	const char *dirs[PATHS_MAX];
	StrBuf where = { 0 };
	int i, n;

	if (looks_like_path(name) || is_file(name))
		return strdup(name);
	n = paths_search("ATTNVIZ_LESSONS", "lessons", "lessons", dirs);
	for (i = 0; i < n; i++) {
		char *path = str_printf("%s/%s.json", dirs[i], name);
		if (path != NULL && is_file(path)) {
			free(where.s);
			return path;
		}
		free(path);
		strbuf_printf(&where, "%s%s", i ? ", " : "", dirs[i]);
	}
	{
		/* the name was typed, the directories come from the environment: escaped, like every message */
		char *msg = str_printf(_("no lesson named \"%s\" in %s (try `lessons`, or give the file's path)"), name,
		                       where.s ? where.s : "");
		*err = msg != NULL ? text_escape(msg, "") : NULL;
		free(msg);
	}
	free(where.s);
	return NULL;
}

int session_load(Session *s, const char *file_or_name, char **err, char **warn)
{
	Session fresh;
	char *path;
	Lesson *l;

	*warn = NULL;
	if (file_or_name != NULL && session_is_model_dir(file_or_name)) /* load DIR, reload: a real model */
		return session_load_model(s, file_or_name, err);
	sn_drop_prev(s); /* the new lesson is made beside the current one: only the two are held */
	if (file_or_name == NULL) { /* the built-in lesson */
		path = NULL;
		l = session_default_lesson(err);
	} else {
		path = session_find_lesson(file_or_name, err);
		if (path == NULL)
			return -1;
		l = lesson_load(path, err, warn);
		if (lesson_needs_model(l)) /* "model": the course on its real model */
			l = session_lesson_on_model(l, path, err, warn);
	}
	if (l == NULL || session_init(&fresh, l, path, err) != 0) {
		lesson_free(l);
		free(path);
		return -1;
	}
	free(path);
	strcpy(fresh.lang, s->lang);
	session_free(s);
	*s = fresh;
	s->dirty = DIRTY_ALL;
	return 0;
}

/* The teaching order of lessons/README.md. */
const char *const session_lesson_order[] = {
	"selfattn", "dot", "softmax", "weighting", "matrix", "scale", "multihead",
	"mask", "padding", "prefix", "cross", "additive", "positional", "bug",
	"block", "prenorm", "rmsnorm", "encdec", "gradient", "vanishing", "learn",
	"rope", "ropescale", "alibi", "kvcache", "gqa", "window", "flash", "llama", "heads", "induction", "sink", "nexttoken", "qknorm", "softcap", "sinks", "streaming", "localglobal", "mla", "sparse", "linear", "hybrid", "diffattn", "gated", "moe", "modern", NULL
};

int session_lesson_name(const Session *s, char *buf, size_t size)
{
	const char *base = "selfattn";
	size_t len = strlen(base);

	if (s->source != NULL) {
		base = strrchr(s->source, '/');
		base = base != NULL ? base + 1 : s->source;
		len = strlen(base);
		if (len > 5 && strcmp(base + len - 5, ".json") == 0)
			len -= 5;
	}
	if (len == 0 || len >= size)
		return -1;
	memcpy(buf, base, len);
	buf[len] = '\0';
	return 0;
}

int session_lesson_index(const char *name)
{
	for (int i = 0; session_lesson_order[i] != NULL; i++)
		if (strcmp(session_lesson_order[i], name) == 0)
			return i;
	return -1;
}

const char *session_next_lesson(const Session *s)
{
	char name[256];
	int i;

	if (session_lesson_name(s, name, sizeof name) != 0 || (i = session_lesson_index(name)) < 0)
		return NULL;
	return session_lesson_order[i + 1];
}

/* ------------------------------------------------------------ marks */

/* Back at a decode step or tile, where the stage shown still has it. */
void sn_restore_substeps(Session *s, int t, int tq, int tk)
{
	int nqb, nkb;

	if (t >= 0 && t < session_decode_steps(s))
		s->dec_t = t;
	if (tq >= 0 && session_tiles(s, &nqb, &nkb) > 0 && tq < nqb && tk >= 0 && tk < nkb) {
		s->tile_q = tq;
		s->tile_k = tk;
	}
}

int session_mark(const Session *s, SessionMark *m, char **err)
{
	memset(m, 0, sizeof *m);
	m->lesson = lesson_clone(s->lesson);
	m->source = s->source ? strdup(s->source) : NULL;
	if (m->lesson == NULL || (s->source != NULL && m->source == NULL)) {
		session_mark_free(m);
		*err = str_printf(_("out of memory"));
		return -1;
	}
	m->step = s->step;
	m->stage = s->stage;
	m->head = s->head;
	m->layer = s->layer;
	m->compare_on = s->compare_on;
	m->dec_t = s->dec_t;
	m->tile_q = s->tile_q;
	m->tile_k = s->tile_k;
	memcpy(m->lang, s->lang, sizeof m->lang);
	m->edited = s->edited;
	return 0;
}

int session_restore(Session *s, const SessionMark *m, char **err)
{
	Session fresh;
	char *ignored = NULL;
	Lesson *l = lesson_clone(m->lesson);

	if (l == NULL) {
		*err = str_printf(_("out of memory"));
		return -1;
	}
	if (session_init(&fresh, l, m->source, err) != 0) {
		lesson_free(l);
		return -1;
	}
	session_free(s);
	*s = fresh;
	memcpy(s->lang, m->lang, sizeof s->lang);
	s->edited = m->edited;
	/* The place as it was; a place the lesson no longer has is simply not restored. */
	if (session_goto_step(s, m->step, &ignored) != 0)
		free(ignored);
	ignored = NULL;
	if (s->layer != m->layer && session_set_layer(s, m->layer, &ignored) != 0)
		free(ignored);
	ignored = NULL;
	if (s->stage != m->stage && session_goto_stage(s, m->stage, &ignored) != 0)
		free(ignored);
	ignored = NULL;
	if (s->head != m->head && session_set_head(s, m->head, &ignored) != 0)
		free(ignored);
	s->compare_on = m->compare_on && s->compare_attn != NULL; /* as it was, not as the walk would leave it */
	sn_restore_substeps(s, m->dec_t, m->tile_q, m->tile_k);
	s->dirty = DIRTY_ALL;
	return 0;
}

void session_mark_free(SessionMark *m)
{
	lesson_free(m->lesson);
	free(m->source);
	memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------ moving */

/* ---- decode steps and tiles: places inside one stage (SF_DECODE_STEPS, SF_TILES) ---- */

int session_decode_steps(const Session *s)
{
	return (stage_kinds[s->stage].flags & SF_DECODE_STEPS) && stage_present(&s->attn->shape, s->stage)
	               ? attn_config(s->attn)->n
	               : 0;
}

int session_cache_rows(const Session *s, int t)
{
	const int n = attn_config(s->attn)->n, last = t < n - 1 ? t : n - 1;
	int rows = 0;

	for (int j = 0; j <= last; j++) /* the cache at step t: a window's or StreamingLLM's rows (attn_cache_has) */
		rows += attn_cache_has(attn_config(s->attn), t, j, 0);
	return rows;
}

int session_tiles(const Session *s, int *nqb, int *nkb)
{
	const ModelConfig *c = attn_config(s->attn);

	*nqb = *nkb = 0;
	if (!(stage_kinds[s->stage].flags & SF_TILES) || !stage_present(&s->attn->shape, s->stage) || c->flash_bq <= 0 ||
	    c->flash_bk <= 0)
		return 0;
	*nqb = (c->n + c->flash_bq - 1) / c->flash_bq;
	*nkb = (c->m + c->flash_bk - 1) / c->flash_bk;
	return *nqb * *nkb;
}

/*
 * The tile after (dir 1) or before (dir -1) tile k (query block k / nkb, key
 * block k % nkb) in the order FlashAttention runs them, passing those the
 * mask hides (counted in s->nskipped, the first in skipped_q/k); -1 when none.
 */
static int tile_step(Session *s, int k, int dir, int nqb, int nkb)
{
	s->nskipped = 0;
	for (k += dir; k >= 0 && k < nqb * nkb; k += dir) {
		if (!attn_flash_skipped(s->attn, k / nkb, k % nkb))
			return k;
		if (s->nskipped++ == 0) {
			s->skipped_q = k / nkb;
			s->skipped_k = k % nkb;
		}
	}
	s->nskipped = 0;
	return -1;
}

/*
 * One walk forward (issue 25 §3). The steps of a lesson that show the same
 * stage of the same layer one after another share one walk through its
 * decode steps or tiles: each step begins where it names (t, tile) or, naming
 * none, where the step before it began, and n/p within a step stop where the
 * next step begins. So a step's tokens or tiles are shown once, by that step,
 * and a question on a later step comes before its token or tile is shown.
 * Places are indices: decode step t, or tile q·nkb + k.
 */
typedef struct SubRange {
	int on;           /* 1: the stage shown walks decode steps or tiles */
	int decode;       /* 1: decode steps (n of them), 0: tiles (nqb × nkb) */
	int n, nqb, nkb;
	int begin, limit; /* the step's places: [begin, limit), limit INT_MAX to the stage's end */
} SubRange;

/* The place a walk step names in the stage shown (decode: t; tiles: q·nkb + k), or -1. */
static int step_named(const SubRange *r, const Step *st)
{
	if (r->decode)
		return st->t >= 0 && st->t < r->n ? st->t : -1;
	return st->tile_q >= 0 && st->tile_q < r->nqb && st->tile_k >= 0 && st->tile_k < r->nkb
	               ? st->tile_q * r->nkb + st->tile_k
	               : -1;
}

/* 1 when walk steps i and i + 1 show the same stage of the same layer (one walk). */
static int same_walk(const Session *s, int i)
{
	return i >= 0 && i + 1 < s->nwalk && s->walk[i].stage == s->walk[i + 1].stage &&
	       s->walk[i].layer == s->walk[i + 1].layer;
}

/* Where walk step i begins: what it names, else where the step before it in the same walk began, else first. */
static int step_begin(const Session *s, const SubRange *r, int i, int first)
{
	for (; i >= 0; i--) {
		const int k = step_named(r, &s->walk[i]);
		if (k >= 0)
			return k;
		if (!same_walk(s, i - 1))
			break;
	}
	return first;
}

/* The stage shown's decode steps or tiles, and the part of them the step shown walks (r->on 0: none). */
static void sub_range(Session *s, SubRange *r)
{
	const int ns = s->nskipped, sq = s->skipped_q, sk = s->skipped_k; /* tile_step's note of skipped tiles stays */
	int first = 0;

	memset(r, 0, sizeof *r);
	r->limit = INT_MAX;
	if ((r->n = session_decode_steps(s)) > 0)
		r->on = r->decode = 1;
	else if (session_tiles(s, &r->nqb, &r->nkb) > 0) {
		r->on = 1;
		first = tile_step(s, -1, 1, r->nqb, r->nkb);
		if (first < 0)
			first = 0;
	}
	s->nskipped = ns;
	s->skipped_q = sq;
	s->skipped_k = sk;
	if (!r->on)
		return;
	r->begin = first;
	/* only on the walk's own stage and layer: a stage the learner jumped to is walked whole */
	if (s->step < 0 || s->step >= s->nwalk || s->walk[s->step].stage != s->stage || s->walk[s->step].layer != s->layer)
		return;
	r->begin = step_begin(s, r, s->step, first);
	if (same_walk(s, s->step))
		r->limit = step_begin(s, r, s->step + 1, first);
}

/* Arriving at a stage: at the step's decode step or tile, else the first (at_end: the step's last). */
void sn_enter_substeps(Session *s, int at_end)
{
	SubRange r;
	int k;

	s->dec_t = s->tile_q = s->tile_k = -1;
	s->nskipped = 0;
	sub_range(s, &r);
	if (!r.on)
		return;
	k = r.begin;
	if (at_end) {
		/* the last place before the next step's: forward from the beginning */
		for (;;) {
			int next = r.decode ? (k + 1 < r.n ? k + 1 : -1) : tile_step(s, k, 1, r.nqb, r.nkb);
			if (next < 0 || next >= r.limit)
				break;
			k = next;
		}
		s->nskipped = 0;
	}
	if (r.decode)
		s->dec_t = k;
	else {
		s->tile_q = k / r.nkb;
		s->tile_k = k % r.nkb;
	}
}

/* n/p inside a stage that walks steps or tiles: 1 when it moved, 0 at the step's end (the walk moves on). */
static int substep_move(Session *s, int dir)
{
	const int ns = s->nskipped, sq = s->skipped_q, sk = s->skipped_k;
	SubRange r;
	int k;

	sub_range(s, &r);
	if (!r.on || (r.decode ? s->dec_t < 0 : s->tile_q < 0))
		return 0;
	if (r.decode)
		k = s->dec_t + dir < r.n ? s->dec_t + dir : -1;
	else
		k = tile_step(s, s->tile_q * r.nkb + s->tile_k, dir, r.nqb, r.nkb);
	if (k < 0 || (dir > 0 && k >= r.limit) || (dir < 0 && k < r.begin)) {
		s->nskipped = ns;
		s->skipped_q = sq;
		s->skipped_k = sk;
		return 0;
	}
	if (r.decode)
		s->dec_t = k;
	else {
		s->tile_q = k / r.nkb;
		s->tile_k = k % r.nkb;
	}
	s->dirty |= DIRTY_PLACE;
	return 1;
}

/* Where a flash matrix's column C stands: its key block (a column per block, or d_v columns per block); -1: not by block. */
static int column_block(const Attn *a, const MatrixKind *k, int C)
{
	if (k->cols == DIM_NKB)
		return C;
	if (k->cols == DIM_NKB_DV && attn_params(a)->d_v > 0)
		return C / attn_params(a)->d_v;
	return -1;
}

/* 1 when query block qb has a tile the mask leaves after key block kb (its output is not final yet). */
static int tiles_left(const Attn *a, int qb, int kb, int nkb)
{
	for (int k = kb + 1; k < nkb; k++)
		if (!attn_flash_skipped(a, qb, k))
			return 1;
	return 0;
}

char session_cell_mark(CellState cs)
{
	return cs == CELL_NEW || cs == CELL_AFTER ? '#' : cs == CELL_BEFORE ? '~' : cs == CELL_DROPPED ? 'x' : ' ';
}

CellState session_cell_state(const Session *s, const Attn *a, AttnMatrix which, int R, int C)
{
	const MatrixKind *k = matrix_kind(which);
	const ModelConfig *c = attn_config(a);

	if (k == NULL)
		return CELL_PLAIN;
	if (k->flags & MF_DECODE) {
		const int t = s->dec_t;
		if (t >= 0 && R > t)
			return CELL_UNSEEN;
		if (k->col_axis == AXIS_KEY && !attn_cache_has(c, R, C, which == AM_WIN_WEIGHTS))
			return CELL_UNSEEN;
		if (t < 0)
			return CELL_PLAIN;
		if ((k->flags & MF_KV) && !attn_in_cache(c, t, R))
			return CELL_DROPPED;
		return R == t ? CELL_NEW : CELL_PLAIN;
	}
	if (s->tile_q >= 0 && c->flash_bq > 0 && c->flash_bk > 0) {
		const int qb = s->tile_q, kb = s->tile_k, bq = c->flash_bq, bk = c->flash_bk;
		const int nkb = (c->m + bk - 1) / bk;
		if (k->made_by < STAGE_COUNT && (stage_kinds[k->made_by].flags & SF_TILES) && k->row_axis == AXIS_QUERY) {
			const int rb = R / bq, cb = column_block(a, k, C);
			if (rb != qb)
				return rb < qb ? CELL_PLAIN : CELL_UNSEEN;
			if (cb < 0) /* the output: final once the row's last tile has run */
				return tiles_left(a, qb, kb, nkb) ? CELL_UNSEEN : CELL_NEW;
			return cb > kb ? CELL_UNSEEN : cb == kb ? CELL_AFTER : cb == kb - 1 ? CELL_BEFORE : CELL_PLAIN;
		}
		if (k->row_axis == AXIS_QUERY && k->col_axis == AXIS_KEY)
			return R / bq == qb && C / bk == kb ? CELL_NEW : CELL_PLAIN;
		if (k->row_axis == AXIS_KEY && k->col_axis != AXIS_KEY)
			return R / bk == kb ? CELL_NEW : CELL_PLAIN;
	}
	return CELL_PLAIN;
}


/*
 * A jump to a step shows what walking there shows: the comparison as the
 * last step up to it that turns it on or off left it (mask.json's step 6
 * turns it on; :step 8 shows it too). A lesson whose steps never say keeps
 * the learner's `compare on|off`.
 */
static void compare_as_walked(Session *s, int step)
{
	int said = 0;

	for (int k = step; k >= 0; k--)
		if (s->walk[k].compare >= 0) {
			s->compare_on = s->walk[k].compare && s->compare_attn != NULL;
			return;
		}
	for (int k = step + 1; k < s->nwalk; k++)
		said |= s->walk[k].compare >= 0;
	if (said)
		s->compare_on = 0;
}

int session_goto_step(Session *s, int step, char **err)
{
	if (step < 0 || step >= s->nwalk) {
		*err = str_printf(_("no step %d: this lesson has steps 1 to %d"), step + 1, s->nwalk);
		return -1;
	}
	place_at(s, step);
	compare_as_walked(s, step);
	return 0;
}

int session_next(Session *s, char **err)
{
	if (substep_move(s, 1))
		return 0;
	if (s->step + 1 >= s->nwalk) {
		*err = str_printf(_("this is the last step (%d/%d)"), s->nwalk, s->nwalk);
		return -1;
	}
	place_at(s, s->step + 1);
	return 0;
}

int session_next_asking(Session *s, char **feedback, char **err)
{
	*feedback = NULL;
	if (session_quiz_pending(s)) {
		if (s->skip_asked != s->step + 1) {
			char usage[32];
			s->skip_asked = s->step + 1;
			s->dirty |= DIRTY_STATUS;
			*feedback = str_printf(_("a question is open (%s): n again to skip it"),
			                       session_quiz_usage(s, usage, sizeof usage));
			return 1;
		}
		if (session_skip(s, feedback, err) != 0)
			return -1;
	}
	if (session_next(s, err) != 0) {
		if (*feedback != NULL) { /* skipped on the last step: that was the move */
			free(*err);
			*err = NULL;
			return 0;
		}
		return -1;
	}
	return 0;
}

int session_questions_open(const Session *s)
{
	int open = 0;

	for (int k = 0; k < s->nwalk; k++)
		open += s->walk[k].has_quiz && s->quiz[k] == QUIZ_OPEN;
	return open;
}

int session_finished(const Session *s)
{
	return s->nwalk > 0 && s->step == s->nwalk - 1 && session_questions_open(s) == 0;
}

int session_prev(Session *s, char **err)
{
	if (substep_move(s, -1))
		return 0;
	if (s->step == 0) {
		*err = str_printf(_("this is the first step"));
		return -1;
	}
	place_at(s, s->step - 1);
	/* coming back into a stage of steps or tiles: at its last one, unless the step names one */
	sn_enter_substeps(s, 1);
	return 0;
}

/* The lesson's step on the stage shown that starts at decode step t or tile (q, k), when there is one:
 * its narration is what that token or tile says (--export --token, --tile). */
static void place_at_substep(Session *s, int t, int q, int k)
{
	for (int i = 0; i < s->nwalk; i++)
		if (s->walk[i].stage == s->stage && s->walk[i].layer == s->layer &&
		    (t >= 0 ? s->walk[i].t == t : s->walk[i].tile_q == q && s->walk[i].tile_k == k)) {
			place_at(s, i);
			return;
		}
}

int session_set_token(Session *s, int t, char **err)
{
	const int n = session_decode_steps(s);

	if (n <= 0) {
		*err = str_printf(_("stage %s walks no tokens (the decode stage does)"), stage_name(s->stage));
		return -1;
	}
	if (t < 0 || t >= n) {
		*err = str_printf(_("no token %d: the decode stage walks tokens 0 to %d"), t, n - 1);
		return -1;
	}
	place_at_substep(s, t, -1, -1);
	s->dec_t = t;
	s->dirty |= DIRTY_PLACE;
	return 0;
}

int session_set_tile(Session *s, int q, int k, char **err)
{
	int nqb, nkb;

	if (session_tiles(s, &nqb, &nkb) <= 0) {
		*err = str_printf(_("stage %s walks no tiles (the flash stage does)"), stage_name(s->stage));
		return -1;
	}
	if (q < 0 || q >= nqb || k < 0 || k >= nkb) {
		*err = str_printf(_("no tile (%d, %d): the tiles are (0..%d, 0..%d)"), q, k, nqb - 1, nkb - 1);
		return -1;
	}
	if (attn_flash_skipped(s->attn, q, k)) {
		*err = str_printf(_("tile (%d, %d) is skipped: the mask hides every cell of it"), q, k);
		return -1;
	}
	place_at_substep(s, -1, q, k);
	s->tile_q = q;
	s->tile_k = k;
	s->dirty |= DIRTY_PLACE;
	return 0;
}

int session_goto_stage(Session *s, Stage st, char **err)
{
	int k;

	if (!stage_present(&s->attn->shape, st)) {
		char word[16] = "";
		session_layer_word(s, s->layer, word, sizeof word);
		*err = session_layers(s) > 1 ? str_printf(_("stage %s is not part of layer %s"), stage_name(st), word)
		                             : str_printf(_("stage %s is not part of this lesson"), stage_name(st));
		return -1;
	}
	for (k = 0; k < s->nwalk; k++)
		if (s->walk[k].stage == st && s->walk[k].layer == s->layer) {
			place_at(s, k);
			compare_as_walked(s, k);
			return 0;
		}
	/* The lesson's steps skip this stage: show it without moving in the walk. */
	s->stage = st;
	sn_enter_substeps(s, 0);
	s->dirty |= DIRTY_PLACE;
	return 0;
}

int session_set_head(Session *s, int head, char **err)
{
	if (head < 0 || head >= s->attn->heads) {
		*err = s->attn->heads == 1 ? str_printf(_("this lesson has one head (head 0)"))
		                           : str_printf(_("no head %d: this lesson has heads 0 to %d"), head, s->attn->heads - 1);
		return -1;
	}
	s->head = head;
	s->dirty |= DIRTY_PLACE;
	return 0;
}

int session_layers(const Session *s)
{
	return lesson_walk_layers(s->lesson);
}

int session_layer_word(const Session *s, int layer, char *buf, size_t size)
{
	const int nenc = lesson_walk_encoder(s->lesson);

	if (layer < 0 || layer >= session_layers(s))
		return -1;
	snprintf(buf, size, layer < nenc ? "e%d" : "%d", layer < nenc ? layer : layer - nenc);
	return 0;
}

/* "no layer WORD: this lesson has …" (heap; the word typed is escaped). */
static char *no_layer(const Session *s, const char *word)
{
	const int nenc = lesson_walk_encoder(s->lesson), own = lesson_layers(s->lesson);
	char *w = text_escape(word, ""), *e;

	if (nenc > 0)
		e = str_printf(_("no layer %s: this lesson has the encoder's layers e0 to e%d and the decoder's 0 to %d"),
		               w ? w : "", nenc - 1, own - 1);
	else if (own == 1)
		e = str_printf(_("no layer %s: this lesson has one layer (layer 0)"), w ? w : "");
	else
		e = str_printf(_("no layer %s: this lesson has layers 0 to %d"), w ? w : "", own - 1);
	free(w);
	return e;
}

int session_layer_lookup(const Session *s, const char *word, char **err)
{
	const int nenc = lesson_walk_encoder(s->lesson), own = lesson_layers(s->lesson);
	const int enc = nenc > 0 && (word[0] == 'e' || word[0] == 'E');
	char *end;
	long v;

	errno = 0;
	v = strtol(word + enc, &end, 10);
	if (end != word + enc && *end == '\0' && errno == 0 && (word[enc] >= '0' && word[enc] <= '9') &&
	    v < (enc ? nenc : own))
		return enc ? (int)v : nenc + (int)v;
	*err = no_layer(s, word);
	return -1;
}

char *session_place(const Session *s, int utf8)
{
	const char *dot = utf8 ? " \u00b7 " : " - ";
	const int nenc = lesson_walk_encoder(s->lesson);

	if (s->layer < nenc) /* an encoder layer: self-attention over the source */
		return str_printf(_("layer %d/%d%sencoder%sself-attention"), s->layer, nenc, dot, dot);
	if (s->lesson->encoder != NULL) /* an encoder–decoder: the decoder layer, and which of its attentions */
		return str_printf(_("layer %d/%d%sdecoder%s%s"), attn_params(s->attn)->dec_layer, s->lesson->nlayers / 2, dot, dot,
		                  attn_params(s->attn)->part == PART_CROSS ? _("cross-attention") : _("self-attention"));
	if (session_layers(s) > 1)
		return str_printf(_("layer %d/%d"), s->layer, session_layers(s));
	return NULL;
}

char *session_stage_map(const Session *s, int utf8)
{
	const Attn *a = s->attn, *self = a, *cross = NULL;
	const int nenc = lesson_walk_encoder(s->lesson);

	/* a decoder layer is two links: its map is both, whichever of them is shown */
	if (s->layer >= nenc && attn_params(a)->part == PART_CROSS)
		self = attn_layer(s->model, s->layer - nenc - 1);
	if (self != NULL && s->layer >= nenc && attn_params(self)->part == PART_SELF)
		cross = self->next;
	if (self == NULL || cross == NULL)
		return stage_map(&a->shape, s->stage, utf8);
	{
		const LessonShape *links[2] = { &self->shape, &cross->shape };
		return stage_map_links(links, 2, a == cross, s->stage, utf8);
	}
}

int session_set_layer(Session *s, int layer, char **err)
{
	const Stage was = s->stage;
	int k;

	if (layer < 0 || layer >= session_layers(s)) {
		char word[16];
		snprintf(word, sizeof word, "%d", layer < 0 ? layer : layer - lesson_walk_encoder(s->lesson));
		*err = no_layer(s, word);
		return -1;
	}
	/* The first step on that layer at this stage, else its first step, else the same stage shown off the walk. */
	for (k = 0; k < s->nwalk; k++)
		if (s->walk[k].layer == layer && s->walk[k].stage == was) {
			place_at(s, k);
			return 0;
		}
	s->layer = layer;
	sn_point_layer(s);
	s->stage = stage_shown(&s->attn->shape, was);
	if (s->head >= s->attn->heads)
		s->head = 0;
	sn_enter_substeps(s, 0);
	s->dirty |= DIRTY_PLACE;
	return 0;
}

const Step *session_step(const Session *s)
{
	return &s->walk[s->step];
}

const char *session_text(const Session *s, const Text *t)
{
	return text_get(t, s->lang);
}

const char *session_screen_lang(const Session *s, int ascii_screen)
{
	return ascii_screen && strcmp(s->lang, "zh") == 0 ? "en" : s->lang;
}

const char *session_screen_text(const Session *s, const Text *t, int ascii_screen)
{
	return text_get(t, session_screen_lang(s, ascii_screen));
}

const char *session_edited_note(const Session *s)
{
	if (!s->edited)
		return NULL;
	return _("(written for the lesson before your edits \u2014 `reload` restores it)");
}

int session_quiz_pending(const Session *s)
{
	const Step *st = session_step(s);
	return st->has_quiz && s->quiz[s->step] == QUIZ_OPEN && s->stage == st->stage && s->layer == st->layer;
}

int session_hidden_matrix(const Session *s)
{
	const Step *st = session_step(s);
	AttnMatrix panes[STAGE_MAX_PANES];
	int count;

	if (!session_quiz_pending(s))
		return -1;
	/* A number asked for is what is hidden, shown here or not: the stage's other panes stay. */
	if (st->quiz.nchoices == 0)
		return matrix_find(st->quiz.answer_cell.matrix);
	/* A question with choices is about the stage's result. */
	count = attn_stage_matrices(s->attn, s->stage, panes);
	return count > 0 ? (int)panes[count - 1] : -1;
}

/* 1 when a and b hold the same numbers (shape and every cell): one shows what the other would. */
static int same_numbers(const Mat *a, const Mat *b)
{
	if (a == NULL || b == NULL || a == b || a->rows != b->rows || a->cols != b->cols)
		return a != NULL && a == b;
	for (int r = 0; r < a->rows; r++)
		for (int c = 0; c < a->cols; c++) {
			const double x = MAT_AT(*a, r, c), y = MAT_AT(*b, r, c);
			if (!(x == y || fabs(x - y) <= 1e-12 * (fabs(x) > 1 ? fabs(x) : 1)))
				return 0;
		}
	return 1;
}

int session_hides(const Session *s, int which, int head)
{
	const Step *st = session_step(s);
	const int h = session_hidden_matrix(s);

	if (h < 0 || which < 0 || which >= AM_COUNT)
		return 0;
	if (which == h)
		return 1;
	for (int i = 0; i < st->quiz.nhides; i++)
		if (matrix_find(st->quiz.hides[i]) == which)
			return 1;
	/* another matrix holding the same numbers (dconcat is doutput without W_o) would give them away too */
	const int qh = st->quiz.nchoices == 0 ? st->quiz.answer_cell.head : s->head;
	return same_numbers(attn_matrix(s->attn, (AttnMatrix)h, qh), attn_matrix(s->attn, (AttnMatrix)which, head));
}

const char *session_then(const Session *s)
{
	const Step *st = session_step(s);

	if (text_empty(&st->then) || s->stage != st->stage || (st->has_quiz && s->quiz[s->step] == QUIZ_OPEN))
		return NULL;
	return session_text(s, &st->then);
}

const char *session_quiz_usage(const Session *s, char *buf, size_t size)
{
	const Step *st = session_step(s);

	if (size == 0)
		return buf;
	if (!session_quiz_pending(s))
		buf[0] = '\0';
	else if (st->quiz.nchoices > 0)
		snprintf(buf, size, "answer 1-%d", st->quiz.nchoices);
	else
		snprintf(buf, size, "answer VALUE");
	return buf;
}

/* ------------------------------------------------------------ quizzes */

/* The number a numeric quiz asks for. */
static int quiz_value(const Session *s, const Quiz *q, double *value)
{
	int which = matrix_find(q->answer_cell.matrix);
	const Mat *m = which < 0 ? NULL : attn_matrix(s->attn, (AttnMatrix)which, q->answer_cell.head);

	if (m == NULL || q->answer_cell.row >= m->rows || q->answer_cell.col >= m->cols)
		return -1;
	*value = MAT_AT(*m, q->answer_cell.row, q->answer_cell.col);
	return 0;
}

/* "3) about nine tenths" for choice k (0-based): the text in the session's language, escaped. Heap string. */
static char *choice_quote(const Session *s, const Quiz *q, int k)
{
	char *text = text_escape(session_text(s, &q->choices[k]), ""), *quoted;
	size_t len = text != NULL ? strlen(text) : 0;

	/* The sentence ends with our own full stop (. or 。). */
	if (len > 0 && text[len - 1] == '.')
		text[--len] = '\0';
	else if (len >= 3 && strcmp(text + len - 3, "\u3002") == 0)
		text[len -= 3] = '\0';
	quoted = str_printf("%d) %s", k + 1, text != NULL ? text : "");
	free(text);
	return quoted;
}

/* Why the asked number is what it is, in one line: the last line of explain's arithmetic ("weight = 0.72 / 2.15 = 0.34"). Heap, or NULL. */
static char *answer_why(const Session *s, const Quiz *q)
{
	const int which = matrix_find(q->answer_cell.matrix);
	char *err = NULL, *text, *line, *end;

	if (which < 0)
		return NULL;
	text = explain_cell(s->attn, (AttnMatrix)which, q->answer_cell.head, q->answer_cell.row, q->answer_cell.col, 1, &err);
	free(err);
	if (text == NULL)
		return NULL;
	for (end = text + strlen(text); end > text && end[-1] == '\n'; end--)
		;
	*end = '\0';
	line = strrchr(text, '\n');
	line = strdup(line != NULL ? line + 1 : text);
	free(text);
	if (line != NULL)
		for (char *c = line; *c == ' '; ) /* its indent */
			memmove(c, c + 1, strlen(c));
	return line;
}

static void record(Session *s, QuizState st)
{
	s->quiz[s->step] = st;
	s->dirty |= DIRTY_QUIZ | DIRTY_STATUS;
	if (st == QUIZ_REVEALED) { /* the class's answer: counted apart from the learner's */
		s->quiz_class++;
		return;
	}
	s->quiz_asked++;
	if (st == QUIZ_RIGHT)
		s->quiz_right++;
	s->dirty |= DIRTY_QUIZ | DIRTY_STATUS;
}

int session_answer(Session *s, const char *value, char **feedback, char **err)
{
	const Step *st = session_step(s);
	const Quiz *q = &st->quiz;
	char *end;
	double x, actual;
	int right;

	*feedback = NULL;
	if (!st->has_quiz || s->quiz[s->step] != QUIZ_OPEN) {
		*err = str_printf(_("no open question on this step"));
		return -1;
	}
	if (q->nchoices > 0) {
		long k;
		if (value[0] != '\0' && value[1] == '\0' &&
		    ((value[0] >= 'a' && value[0] <= 'z') || (value[0] >= 'A' && value[0] <= 'Z')))
			k = (value[0] | 0x20) - 'a' + 1;
		else {
			errno = 0;
			k = strtol(value, &end, 10);
			if (end == value || *end != '\0' || errno != 0)
				k = 0;
		}
		if (k < 1 || k > q->nchoices) {
			*err = str_printf(_("answer with a choice from 1 to %d"), q->nchoices);
			return -1;
		}
		right = (int)k - 1 == q->answer_choice;
		record(s, right ? QUIZ_RIGHT : QUIZ_WRONG);
		{
			char *chosen = choice_quote(s, q, (int)k - 1), *answer = choice_quote(s, q, q->answer_choice);
			*feedback = right ? str_printf(_("Right: %s."), answer ? answer : "")
			                  : str_printf(_("Not quite: you chose %s; the answer is %s."), chosen ? chosen : "",
			                           answer ? answer : "");
			free(chosen);
			free(answer);
		}
		return right;
	}
	errno = 0;
	x = strtod(value, &end);
	if (end == value || *end != '\0' || errno != 0 || !isfinite(x)) {
		*err = str_printf(_("answer with a number, e.g. answer 0.25"));
		return -1;
	}
	if (quiz_value(s, q, &actual) != 0) {
		*err = str_printf(_("this question's answer cell is not in the lesson any more"));
		return -1;
	}
	right = fabs(x - actual) <= q->tolerance || (isinf(actual) && x == actual);
	record(s, right ? QUIZ_RIGHT : QUIZ_WRONG);
	char *why = right ? NULL : answer_why(s, q);
	*feedback = str_printf(right ? _("Right: %s[%d][%d] is %.6g; you said %.6g (within %g counts).")
	                             : _("Not quite: %s[%d][%d] is %.6g; you said %.6g (within %g counts)."),
	                   q->answer_cell.matrix, q->answer_cell.row,
	                   q->answer_cell.col, actual, x, q->tolerance);
	if (why != NULL && *feedback != NULL) {
		char *both = str_printf(_("%s Why: %s"), *feedback, why);
		if (both != NULL) {
			free(*feedback);
			*feedback = both;
		}
	}
	free(why);
	return right;
}

int session_quiz_value(const Session *s, double *value)
{
	const Step *st = session_step(s);

	if (!st->has_quiz || st->quiz.nchoices > 0)
		return -1;
	return quiz_value(s, &st->quiz, value);
}

/* Close the open question unanswered (counted as skipped) and say its answer: skipped, or (reveal) shown to a class. */
/* The current step's answer as said when skipped ("Skipped: the answer is …") or revealed ("Answer: …"). */
static char *answer_said(const Session *s, int reveal)
{
	const Step *st = session_step(s);
	double actual;

	if (st->quiz.nchoices > 0) {
		char *answer = choice_quote(s, &st->quiz, st->quiz.answer_choice);
		char *said = str_printf(reveal ? _("Answer: %s.") : _("Skipped: the answer is %s."), answer ? answer : "");
		free(answer);
		return said;
	}
	if (quiz_value(s, &st->quiz, &actual) == 0)
		return str_printf(reveal ? _("Answer: %s[%d][%d] is %.6g.") : _("Skipped: %s[%d][%d] is %.6g."),
		                  st->quiz.answer_cell.matrix, st->quiz.answer_cell.row, st->quiz.answer_cell.col, actual);
	return NULL;
}

static int quiz_close(Session *s, int reveal, char **feedback, char **err)
{
	const Step *st = session_step(s);

	*feedback = NULL;
	if (!st->has_quiz || s->quiz[s->step] != QUIZ_OPEN) {
		*err = str_printf(_("no open question on this step"));
		return -1;
	}
	record(s, reveal ? QUIZ_REVEALED : QUIZ_SKIPPED);
	*feedback = answer_said(s, reveal);
	return 0;
}

char *session_revealed_answer(const Session *s)
{
	const Step *st = session_step(s);

	return st->has_quiz && s->quiz[s->step] == QUIZ_REVEALED ? answer_said(s, 1) : NULL;
}

int session_skip(Session *s, char **feedback, char **err)
{
	return quiz_close(s, 0, feedback, err);
}

int session_reveal(Session *s, char **feedback, char **err)
{
	return quiz_close(s, 1, feedback, err);
}
