/*
 * session_model.c: a session on a real model (weights/importer.h): open a
 * model folder (:model DIR), give it another prompt (:prompt TEXT, :ids),
 * and let it write its next tokens (generate N, greedily).
 */
#include "app/session.h"
#include "app/session_internal.h"

#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/i18n.h"
#include "base/paths.h"
#include "base/strbuf.h"
#include "base/text.h"
#include "base/ttyguard.h"

/* What :model DIR reads without a prompt: this text through the folder's tokenizer, or token id 0 without one. */
static const char default_prompt[] = "The cat sat on the mat";

int session_is_model(const Session *s)
{
	return s->lesson != NULL && import_is_model(s->lesson);
}

/* DIR on p in place of the session's lesson, only once it is made and computed (p is read before s changes). */
static int open_on(Session *s, const char *dir, const ImportPrompt *p, char **err)
{
	Session fresh;
	Lesson *l;

	sn_drop_prev(s); /* the model is made beside the current lesson: only the two are held */
	if ((l = import_model(dir, p, err)) == NULL)
		return -1;
	if (session_init(&fresh, l, dir, err) != 0) {
		lesson_free(l);
		return -1;
	}
	strcpy(fresh.lang, s->lang);
	session_free(s);
	*s = fresh;
	s->dirty = DIRTY_ALL;
	return 0;
}

static int open_named(Session *s, const char *dir, const char *text, char **err);

int session_open_model(Session *s, const char *dir, const char *text, char **err)
{
	char *found = session_resolve_model(dir);
	int rc;

	rc = open_named(s, found != NULL ? found : dir, text, err);
	free(found);
	return rc;
}

/* session_open_model once the folder is found. */
static int open_named(Session *s, const char *dir, const char *text, char **err)
{
	char *tok = str_printf("%s/tokenizer.json", dir);
	const long long zero = 0;
	ImportPrompt p = { text, NULL, 0 };

	*err = NULL;
	if (tok == NULL) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	if (text == NULL) {
		if (access(tok, F_OK) == 0) {
			p.text = default_prompt;
		} else {
			p.ids = &zero;
			p.n = 1;
		}
	}
	free(tok);
	return open_on(s, dir, &p, err);
}

int session_is_model_dir(const char *path)
{
	char *cfg = str_printf("%s/config.json", path);
	struct stat st;
	int yes = cfg != NULL && stat(path, &st) == 0 && S_ISDIR(st.st_mode) && access(cfg, F_OK) == 0;

	free(cfg);
	return yes;
}

/* The snapshot of a Hugging Face cache folder (models--ORG--NAME) to read: refs/main's, else the newest (heap, or NULL). */
static char *hf_snapshot(const char *repo)
{
	char *refs = str_printf("%s/refs/main", repo), *snaps = str_printf("%s/snapshots", repo), *best = NULL;
	char hash[128] = "";
	FILE *f = refs != NULL ? fopen(refs, "r") : NULL;
	struct timespec best_t = { 0, 0 };
	DIR *d;
	struct dirent *e;

	if (f != NULL) {
		if (fgets(hash, sizeof hash, f) != NULL)
			hash[strcspn(hash, "\r\n")] = '\0';
		fclose(f);
	}
	if (snaps != NULL && hash[0] != '\0' && strchr(hash, '/') == NULL && hash[0] != '.') {
		best = str_printf("%s/%s", snaps, hash);
		if (best != NULL && !session_is_model_dir(best)) {
			free(best);
			best = NULL;
		}
	}
	d = best == NULL && snaps != NULL ? opendir(snaps) : NULL;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char *cand;
		struct stat st;
		if (e->d_name[0] == '.' || (cand = str_printf("%s/%s", snaps, e->d_name)) == NULL)
			continue;
		if (!session_is_model_dir(cand) || stat(cand, &st) != 0) {
			free(cand);
			continue;
		}
		/* the newest; of equal times, the larger name: the same choice whatever order readdir gives */
		if (best == NULL || st.st_mtim.tv_sec > best_t.tv_sec ||
		    (st.st_mtim.tv_sec == best_t.tv_sec && (st.st_mtim.tv_nsec > best_t.tv_nsec ||
		                                            (st.st_mtim.tv_nsec == best_t.tv_nsec && strcmp(cand, best) > 0)))) {
			free(best);
			best = cand;
			best_t = st.st_mtim;
		} else
			free(cand);
	}
	if (d != NULL)
		closedir(d);
	free(refs);
	free(snaps);
	return best;
}

/* ORG/NAME: one slash between two names that are not . or .. (nor start with a dot). */
static int org_name(const char *ref)
{
	const char *slash = strchr(ref, '/');

	return slash != NULL && slash != ref && slash[1] != '\0' && strchr(slash + 1, '/') == NULL && ref[0] != '.' &&
	       slash[1] != '.';
}

char *session_find_model(const char *ref, const char *file)
{
	const char *slash = file != NULL ? strrchr(file, '/') : NULL;
	char *p;

	if (ref == NULL || ref[0] == '\0')
		return NULL;
	if (ref[0] == '/')
		return session_is_model_dir(ref) ? strdup(ref) : NULL;
	/* the lesson file's folder */
	p = slash != NULL ? str_printf("%.*s/%s", (int)(slash - file), file, ref) : strdup(ref);
	if (p == NULL || session_is_model_dir(p))
		return p;
	free(p);
	if (org_name(ref)) {
		const char *models = getenv("ATTNVIZ_MODELS"), *hub = getenv("HF_HUB_CACHE"), *home = getenv("HF_HOME");
		char *repo;
		if (models != NULL && models[0] != '\0' && (p = str_printf("%s/%s", models, ref)) != NULL) {
			if (session_is_model_dir(p))
				return p;
			free(p);
		}
		/* the cache's folder: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub */
		char *base = hub != NULL && hub[0] != '\0'   ? strdup(hub)
		             : home != NULL && home[0] != '\0' ? str_printf("%s/hub", home)
		             : (home = getenv("HOME")) != NULL && home[0] != '\0' ? str_printf("%s/.cache/huggingface/hub", home)
		                                                                  : NULL;
		repo = base != NULL ? str_printf("%s/models--%.*s--%s", base, (int)(strchr(ref, '/') - ref), ref,
		                                 strchr(ref, '/') + 1)
		                    : NULL;
		free(base);
		p = repo != NULL ? hf_snapshot(repo) : NULL;
		free(repo);
		return p;
	}
	return paths_find_model(ref);
}

char *session_resolve_model(const char *ref)
{
	struct stat st;

	return stat(ref, &st) == 0 ? strdup(ref) : session_find_model(ref, NULL);
}

Lesson *session_lesson_on_model(Lesson *course, const char *file, char **err, char **warn)
{
	ImportPrompt p = { course->model_prompt, NULL, 0 };
	char *dir = session_find_model(course->model_path, file), *e = NULL, *shown;
	Lesson *model = NULL;

	*err = NULL;
	if (dir == NULL) {
		shown = text_escape(course->model_path, "");
		*err = str_printf(_("%s: model.path: no model folder at %s (a folder with config.json; a bare ORG/NAME is "
		                    "looked for in $ATTNVIZ_MODELS and the Hugging Face cache, a NAME among the models that ship "
		                    "with attnviz)"),
		                  course->path, shown != NULL ? shown : "");
		free(shown);
		lesson_free(course);
		return NULL;
	}
	model = import_model(dir, &p, &e);
	free(dir);
	if (model == NULL) {
		*err = str_printf("%s: model: %s", course->path, e != NULL ? e : _("out of memory"));
		free(e);
		lesson_free(course);
		return NULL;
	}
	return lesson_on_model(course, model, err, warn);
}

int session_load_model(Session *s, const char *dir, char **err)
{
	ImportPrompt p = { NULL, NULL, 0 };

	if (!session_is_model(s) || s->source == NULL || strcmp(s->source, dir) != 0)
		return session_open_model(s, dir, NULL, err);
	/* the same folder again (reload): read afresh, on the same ids */
	p.ids = s->lesson->cfg.ids;
	p.n = s->lesson->cfg.n;
	return open_on(s, dir, &p, err);
}

/* The session on its lesson computed afresh, at the same layer, step, stage and head where they still are. */
static int recompute(Session *s, char **err)
{
	const int layer = s->layer, step = s->step, head = s->head;
	const Stage stage = s->stage;
	Lesson *l = s->lesson;
	Session fresh;
	char *e = NULL;
	HeadScore *induction = s->induction; /* the same model: its induction scores hold for any prompt */
	const int ind_layers = s->ind_layers, ind_heads = s->ind_heads, ind_half = s->ind_half;
	const int sampling = s->sampling;
	const uint64_t seed = s->seed;
	const Prng rng = s->rng; /* generate's stream goes on where it was */

	attn_free(s->model);
	attn_free(s->compare_model);
	s->model = s->attn = s->compare_model = s->compare_attn = NULL;
	if (session_init(&fresh, l, s->source, err) != 0)
		return -1;
	strcpy(fresh.lang, s->lang);
	fresh.quiz_right = s->quiz_right;
	fresh.quiz_asked = s->quiz_asked;
	fresh.quiz_class = s->quiz_class;
	s->lesson = NULL;
	s->induction = NULL;
	session_free(s);
	*s = fresh;
	s->sampling = sampling;
	s->seed = seed;
	s->rng = rng;
	s->induction = induction;
	s->ind_layers = ind_layers;
	s->ind_heads = ind_heads;
	s->ind_half = ind_half;
	if (layer < session_layers(s))
		(void)session_set_layer(s, layer, &e);
	free(e);
	e = NULL;
	if (step < s->nwalk)
		(void)session_goto_step(s, step, &e);
	free(e);
	e = NULL;
	(void)session_goto_stage(s, stage, &e);
	free(e);
	e = NULL;
	if (head < s->attn->heads)
		(void)session_set_head(s, head, &e);
	free(e);
	s->edited = 1;
	s->dirty = DIRTY_ALL;
	return 0;
}

/*
 * The model on its prompt before (ids, n) again and computed: 0, or -1 when
 * not even that works (out of memory) and the session holds the built-in
 * lesson instead, rather than no computation at all.
 */
static int back_to(Session *s, const long long *ids, int n)
{
	ImportPrompt back = { NULL, ids, n };
	char *e = NULL, *w = NULL;

	if (import_reprompt(s->lesson, &back, &e) == 0 && recompute(s, &e) == 0)
		return 0;
	free(e);
	e = NULL;
	if (session_load(s, NULL, &e, &w) != 0)
		abort();
	free(w);
	free(e);
	return -1;
}

/*
 * A lesson on a model's steps were written for its prompt (their cells may
 * not be in another): they are taken out while the model reads another
 * text, and freed once it has (the default walk of the model's stages
 * follows), or put back when it could not.
 */
static void steps_back(Session *s, Step *steps, int n)
{
	if (steps != NULL && session_is_model(s)) {
		s->lesson->steps = steps;
		s->lesson->nsteps = n;
	} else
		lesson_free_steps(steps, n);
}

int session_prompt(Session *s, const ImportPrompt *p, char **err)
{
	long long *before, *old;
	int n, rc, nsteps = 0;
	Step *steps = NULL;

	*err = NULL;
	if (!session_is_model(s)) {
		*err = strdup(_("this is a lesson, not a model: open one with :model DIR"));
		return -1;
	}
	before = s->lesson->cfg.ids;
	n = s->lesson->cfg.n;
	if ((old = malloc((size_t)n * sizeof *old)) == NULL) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	memcpy(old, before, (size_t)n * sizeof *old);
	sn_drop_prev(s);
	if (s->lesson->model_path != NULL) {
		steps = s->lesson->steps;
		nsteps = s->lesson->nsteps;
		s->lesson->steps = NULL;
		s->lesson->nsteps = 0;
	}
	rc = import_reprompt(s->lesson, p, err);
	if (rc != 0 && s->lesson->cfg.ids == before) {
		free(old); /* refused before anything changed: the learner is where they were */
		steps_back(s, steps, nsteps);
		return -1;
	}
	if (rc == 0 && recompute(s, err) == 0) {
		free(old);
		lesson_free_steps(steps, nsteps);
		return 0;
	}
	/* changed, then failed (out of memory, numbers that overflow): back to the prompt before */
	steps_back(s, steps, nsteps);
	(void)back_to(s, old, n);
	free(old);
	return -1;
}

/* The last layer's computation (its logits and next stages), or NULL with *err when there is no LM head. */
static const Attn *lm_head(const Session *s, char **err)
{
	const Attn *last = s->model;

	*err = NULL;
	if (!session_is_model(s) || last == NULL) {
		*err = strdup(_("this is a lesson, not a model: open one with :model DIR"));
		return NULL;
	}
	while (last->next != NULL)
		last = last->next;
	if (mat_empty(&last->logits) || mat_empty(&last->next_p)) {
		*err = strdup(_("this model has no LM head: no next token"));
		return NULL;
	}
	return last;
}

/* The greedy choice of a row z of logits: the largest (the first of equals). */
static int pick_greedy(const double *z, int vocab, long long *id, double *logit, char **err)
{
	long long best = -1;
	double top = -INFINITY;

	for (int v = 0; v < vocab; v++)
		if (z[v] > top) {
			top = z[v];
			best = v;
		}
	if (best < 0) {
		*err = strdup(_("the logits are not finite numbers"));
		return -1;
	}
	*id = best;
	if (logit != NULL)
		*logit = top;
	return 0;
}

/* A token drawn from the top k of the probabilities probs (vocab of them) with the session's generator. */
static int pick_sample(Session *s, const double *probs, int vocab, int topk, long long *id, double *p, char **err)
{
	int idx[LESSON_MAX_TOP_K], k;
	double total = 0.0, u, run = 0.0;

	k = attn_top_entries(probs, vocab, topk, idx);
	for (int i = 0; i < k; i++)
		total += probs[idx[i]];
	if (k < 1 || !(total > 0) || !isfinite(total)) {
		*err = strdup(_("the next token's probabilities are not finite numbers"));
		return -1;
	}
	u = prng_uniform(&s->rng) * total;
	*id = idx[k - 1]; /* should rounding leave u past the last running sum */
	for (int i = 0; i < k; i++) {
		run += probs[idx[i]];
		if (u < run) {
			*id = idx[i];
			break;
		}
	}
	if (p != NULL)
		*p = probs[*id];
	return 0;
}

int session_next_token(const Session *s, long long *id, double *logit, char **err)
{
	const Attn *last = lm_head(s, err);

	if (last == NULL)
		return -1;
	/* the logits stage's last row */
	return pick_greedy(&MAT_AT(last->logits, last->logits.rows - 1, 0), last->logits.cols, id, logit, err);
}

int session_sample_token(Session *s, long long *id, double *p, char **err)
{
	const Attn *last = lm_head(s, err);

	if (last == NULL)
		return -1;
	if (attn_logits_row(&last->cfg) != last->logits.rows - 1) {
		*err = strdup(_("the next stage shows another position than the last: nextrow back to it first"));
		return -1;
	}
	return pick_sample(s, last->next_p.a, last->next_p.cols, attn_top_k(&last->cfg), id, p, err);
}

void session_set_seed(Session *s, int on, uint64_t seed)
{
	s->sampling = on;
	s->seed = seed;
	prng_seed(&s->rng, seed);
}

/*
 * generate one token at a time, each through the whole model again (what a
 * model the cache cannot take does). Ctrl-C stops the computation of a token
 * (attn_compute): that token is not appended, the tokens before it stay.
 */
static int generate_whole(Session *s, int count, int *made, char **err)
{
	for (int k = 0; k < count; k++) {
		const int n = s->lesson->cfg.n;
		long long *ids, next;
		ImportPrompt p = { NULL, NULL, n + 1 };
		int rc = s->sampling ? session_sample_token(s, &next, NULL, err) : session_next_token(s, &next, NULL, err);
		if (rc != 0)
			return -1;
		if ((ids = malloc((size_t)(n + 1) * sizeof *ids)) == NULL) {
			*err = strdup(_("out of memory"));
			return -1;
		}
		memcpy(ids, s->lesson->cfg.ids, (size_t)n * sizeof *ids);
		ids[n] = next;
		p.ids = ids;
		rc = session_prompt(s, &p, err);
		free(ids);
		if (rc != 0)
			return -1;
		*made = k + 1;
	}
	return 0;
}

/*
 * generate through the KV cache: the first token from the session's
 * computation, each next one from the row of the token before alone, through
 * every layer with the keys and values of the tokens before it
 * (attn_gen_step); the whole model is computed once, at the end, on the
 * longer prompt, for the view. A token the prompt could not take (over the
 * model's positions) ends it with the tokens before it kept, as one at a time.
 * Ctrl-C between two tokens ends it there too (issue 21): the tokens made so
 * far are kept, computed as the prompt (*made says how many). 1: the cache
 * cannot take this model (generate_whole then).
 */
static int generate_cached(Session *s, int count, int *made, char **err)
{
	const int n0 = s->lesson->cfg.n;
	long long *ids = malloc((size_t)(n0 + count) * sizeof *ids);
	const int topk = attn_top_k(&s->lesson->cfg), vocab = s->lesson->cfg.vocab;
	AttnGen *g = ids != NULL ? attn_gen_begin(s->model, count - 1) : NULL;
	const double *z = NULL, *p = NULL;
	int have = n0, rc = -1;
	char *e = NULL;

	if (g == NULL) {
		free(ids);
		return 1;
	}
	memcpy(ids, s->lesson->cfg.ids, (size_t)n0 * sizeof *ids);
	ttyguard_work_begin(); /* a SIGINT asks the tokens to stop (ttyguard.h), heeded before the next one */
	for (int k = 0; k < count; k++) {
		long long next;
		Mat x = { 0 };
		if (k > 0 && ttyguard_stop_pending()) {
			ttyguard_stop_heeded(); /* the tokens kept are computed next */
			break;
		}
		int r = k == 0 ? (s->sampling ? session_sample_token(s, &next, NULL, err) : session_next_token(s, &next, NULL, err))
		               : (s->sampling ? pick_sample(s, p, vocab, topk, &next, NULL, err)
		                              : pick_greedy(z, vocab, &next, NULL, err));
		if (r != 0)
			goto done;
		ids[n0 + k] = next;
		/* the row it enters layer 0 with: the list checked as a prompt is (over the positions: the tokens before it kept) */
		if (import_embed_tail(s->lesson, ids, n0 + k + 1, n0 + k, &x, err) != 0)
			goto done;
		have = n0 + k + 1;
		if (k + 1 < count && attn_gen_step(g, x.a, &z, s->sampling ? &p : NULL) != 0) {
			mat_free(&x);
			*err = strdup(_("out of memory"));
			goto done;
		}
		mat_free(&x);
	}
	rc = 0;
done:
	ttyguard_work_end();
	attn_gen_free(g);
	*made = have - n0;
	if (have > n0) {
		ImportPrompt all = { NULL, ids, have };
		if (session_prompt(s, &all, rc == 0 ? err : &e) != 0)
			rc = -1;
		free(e);
	}
	free(ids);
	return rc;
}

int session_generate(Session *s, int count, int *made, char **err)
{
	int rc;

	*err = NULL;
	*made = 0;
	/* the next token of the last position: the next stage moved there when the learner picked another row */
	if (session_is_model(s) && s->lesson->cfg.vocab > 0 && attn_logits_row(&s->lesson->cfg) != s->lesson->cfg.n - 1 &&
	    session_set_next(s, -1, -1, s->lesson->cfg.n - 1, err) != 0)
		return -1;
	if (count < 1 || !session_is_model(s) || s->model == NULL)
		return generate_whole(s, count, made, err);
	rc = generate_cached(s, count, made, err);
	return rc == 1 ? generate_whole(s, count, made, err) : rc;
}

const HeadScore *session_induction_score(const Session *s, int layer, int h)
{
	if (s->induction == NULL || layer < 0 || layer >= s->ind_layers || h < 0 || h >= s->ind_heads)
		return NULL;
	return &s->induction[(size_t)layer * (size_t)s->ind_heads + (size_t)h];
}

/*
 * The induction run of model l: its heads' scores (layers × *heads, heap) on
 * random tokens repeated twice (*half of them, fewer when the model has fewer
 * positions). l is left on the random tokens when *moved; its ids before are
 * the caller's to put back. 0, or -1 with *err.
 */
static int induction_run(Lesson *l, HeadScore **out, int *heads_out, int *half_out, int *moved, char **err)
{
	const int nl = lesson_layers(l);
	int heads = 0, from, rc, half = SESSION_INDUCTION_HALF;
	long long *ids;
	HeadScore *sc;
	Attn *run;

	*moved = 0;
	for (int i = 0; i < nl; i++)
		if (lesson_layer_params_const(l, i)->heads > heads)
			heads = lesson_layer_params_const(l, i)->heads;
	ids = malloc(2 * SESSION_INDUCTION_HALF * sizeof *ids);
	sc = calloc((size_t)nl * (size_t)(heads > 0 ? heads : 1), sizeof *sc);
	if (ids == NULL || sc == NULL) {
		free(ids), free(sc);
		*err = strdup(_("out of memory"));
		return -1;
	}
	/* the model on the random tokens, scored; fewer tokens when its positions are fewer */
	for (;;) {
		from = headscore_repeat_ids(ids, -1, half, l->cfg.vocab, 1);
		ImportPrompt rnd = { NULL, ids, 2 * half };
		rc = import_reprompt(l, &rnd, err);
		if (rc == 0 || half <= 4)
			break;
		free(*err);
		*err = NULL;
		half /= 2;
	}
	*moved = rc == 0;
	if (rc == 0) {
		run = attn_compute_all(l, err);
		if (run == NULL)
			rc = -1;
		for (int i = 0; run != NULL && i < nl; i++)
			for (int h = 0; h < lesson_layer_params_const(l, i)->heads; h++)
				sc[(size_t)i * (size_t)heads + (size_t)h] = headscores_induction_run(run, i, h, ids, from);
		attn_free(run);
	}
	free(ids);
	if (rc != 0) {
		free(sc);
		return -1;
	}
	*out = sc;
	*heads_out = heads;
	*half_out = half;
	return 0;
}

int session_model_induction(Lesson *l, HeadScore **out, int *heads, int *half, char **err)
{
	const int n = l->cfg.n;
	long long *old = malloc((size_t)n * sizeof *old);
	int moved, rc;

	*err = NULL;
	*out = NULL;
	if (!import_is_model(l))
		return 0;
	if (old == NULL) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	memcpy(old, l->cfg.ids, (size_t)n * sizeof *old);
	rc = induction_run(l, out, heads, half, &moved, err);
	if (moved) {
		/* back on its prompt (the same ids: only running out of memory fails) */
		ImportPrompt back = { NULL, old, n };
		char *e = NULL;
		if (import_reprompt(l, &back, &e) != 0) {
			if (rc == 0) {
				*err = e;
				e = NULL;
			}
			free(e);
			free(*out);
			*out = NULL;
			rc = -1;
		}
	}
	free(old);
	return rc;
}

int session_induction(Session *s, char **err)
{
	const int edited = s->edited;
	int heads = 0, n, rc, moved, half = 0;
	long long *old;
	HeadScore *sc = NULL;

	*err = NULL;
	if (!session_is_model(s) || s->induction != NULL)
		return 0;
	n = s->lesson->cfg.n;
	if ((old = malloc((size_t)n * sizeof *old)) == NULL) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	memcpy(old, s->lesson->cfg.ids, (size_t)n * sizeof *old);
	sn_drop_prev(s);
	rc = induction_run(s->lesson, &sc, &heads, &half, &moved, err);
	/* the prompt computed again */
	if (moved && back_to(s, old, n) != 0) {
		rc = -1;
		if (*err == NULL)
			*err = strdup(_("out of memory"));
	}
	free(old);
	if (rc != 0 || !session_is_model(s)) {
		free(sc);
		return -1;
	}
	s->edited = edited;
	free(s->induction);
	s->induction = sc;
	s->ind_layers = lesson_layers(s->lesson);
	s->ind_heads = heads;
	s->ind_half = half;
	return 0;
}
