/*
 * model.c: what a model is made of, freed and copied field by field (the
 * one place that knows which fields own memory), its layers, and which of
 * its shared settings a layer keeps of its own — one table.
 */
#include "model/model.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* When a layer keeps a setting of its own rather than the model's. */
enum { OWN_ALWAYS, OWN_MASK, OWN_ROPE };

#define OWN(field, when) { offsetof(ModelConfig, field), offsetof(LayerOwn, field), sizeof(((ModelConfig *)0)->field), when }

/* clang-format off */
static const struct {
	size_t offset, own_offset, size;
	int when;
} layer_own[] = {
	OWN(m, OWN_ALWAYS),             /* the source: a cross-attention link reads its encoder's */
	OWN(d_model, OWN_ALWAYS),
	OWN(d_src, OWN_ALWAYS),
	OWN(source_tokens, OWN_ALWAYS),
	OWN(has_source, OWN_ALWAYS),
	OWN(source_input, OWN_ALWAYS),
	OWN(mask, OWN_MASK),            /* an encoder–decoder's links keep their own masks, and a layer whose mask_own says so */
	OWN(mask_matrix, OWN_MASK),
	OWN(window, OWN_MASK),
	OWN(nmasks, OWN_MASK),
	OWN(masks, OWN_MASK),
	OWN(rope_base, OWN_ROPE),       /* a layer's own RoPE base and scaling when its rope_own says so */
	OWN(rope_scaling, OWN_ROPE),
};
/* clang-format on */
_Static_assert(sizeof layer_own / sizeof layer_own[0] == 13, "every field of LayerOwn is in the table (but mask_own and rope_own, which say when)");

void model_layer_config(const ModelConfig *shared, const LayerOwn *own, int i, int nlayers, int encdec,
                        const Mat *input, ModelConfig *out)
{
	*out = *shared;
	for (size_t k = 0; k < sizeof layer_own / sizeof layer_own[0]; k++)
		if (layer_own[k].when == OWN_ROPE ? own->rope_own : (layer_own[k].when == OWN_ALWAYS || encdec || own->mask_own))
			memcpy((char *)out + layer_own[k].offset, (const char *)own + layer_own[k].own_offset, layer_own[k].size);
	out->input = *input;
	out->positional = i == 0 ? shared->positional : POS_NONE; /* positions are added once, before layer 0 */
	out->embed_scale = i == 0 ? shared->embed_scale : 0.0;   /* so is Gemma's embedding scale */
	out->embed_scale_sqrt = i == 0 && shared->embed_scale_sqrt;
	out->has_final_norm = i == nlayers - 1 && shared->has_final_norm;
	out->vocab = i == nlayers - 1 ? shared->vocab : 0; /* the LM head follows the last layer */
}

void model_layer_own_of(const ModelConfig *c, LayerOwn *own)
{
	memset(own, 0, sizeof *own);
	for (size_t k = 0; k < sizeof layer_own / sizeof layer_own[0]; k++)
		memcpy((char *)own + layer_own[k].own_offset, (const char *)c + layer_own[k].offset, layer_own[k].size);
}

void model_layer_own_take(ModelConfig *c, LayerOwn *own)
{
	model_layer_own_of(c, own);
	/* what own now owns leaves c */
	c->source_tokens = NULL;
	c->source_input = c->mask_matrix = (Mat){ 0 };
	c->masks = NULL;
	c->nmasks = 0;
}

/* ------------------------------------------------------------------ */
/* Freeing and copying                                                */
/* ------------------------------------------------------------------ */

static void tokens_free(char **t, int n)
{
	if (t == NULL)
		return;
	for (int i = 0; i < n; i++)
		free(t[i]);
	free(t);
}

/* A copy of n labels into *dst (NULL stays NULL): 0, or -1 out of memory. */
static int tokens_copy(char ***dst, char *const *t, int n)
{
	char **out;

	*dst = NULL;
	if (t == NULL)
		return 0;
	out = calloc((size_t)n + 1, sizeof *out);
	if (out == NULL)
		return -1;
	for (int i = 0; i < n; i++) {
		out[i] = strdup(t[i]);
		if (out[i] == NULL) {
			tokens_free(out, n);
			return -1;
		}
	}
	*dst = out;
	return 0;
}

static void masks_free(MaskPart *masks, int n)
{
	for (int i = 0; masks != NULL && i < n; i++)
		mat_free(&masks[i].matrix);
	free(masks);
}

/* A copy of a list of masks into *dst (*n its length so far, for freeing): 0, or -1 out of memory. */
static int masks_copy(MaskPart **dst, int *n, const MaskPart *src, int nsrc)
{
	*dst = NULL;
	*n = 0;
	if (nsrc <= 0)
		return 0;
	if ((*dst = calloc((size_t)nsrc, sizeof **dst)) == NULL)
		return -1;
	for (int i = 0; i < nsrc; i++) {
		(*dst)[i].kind = src[i].kind;
		(*dst)[i].window = src[i].window;
		*n = i + 1;
		if (mat_copy(&(*dst)[i].matrix, &src[i].matrix) != 0)
			return -1;
	}
	return 0;
}

void model_config_free(ModelConfig *c)
{
	tokens_free(c->tokens, c->n);
	tokens_free(c->source_tokens, c->m);
	mat_free(&c->input);
	mat_free(&c->source_input);
	mat_free(&c->final_gamma);
	mat_free(&c->final_beta);
	mat_free(&c->target);
	mat_free(&c->unembed);
	matview_free(&c->unembed_view);
	mat_free(&c->pe_learned);
	tokens_free(c->vocab_tokens, c->vocab);
	free(c->ids);
	mat_free(&c->mask_matrix);
	masks_free(c->masks, c->nmasks);
	memset(c, 0, sizeof *c);
}

/* Row v of the unembedding as doubles (model.h). */
const double *model_unembed_row(const ModelConfig *c, int v, double *buf)
{
	if (!mat_empty(&c->unembed))
		return &MAT_AT(c->unembed, v, 0);
	matview_rows(&c->unembed_view, v, 1, buf);
	return buf;
}

int model_unembed_is(const ModelConfig *c, int rows, int cols)
{
	if (!matview_empty(&c->unembed_view))
		return mat_empty(&c->unembed) && c->unembed_view.rows == rows && c->unembed_view.cols == cols;
	return c->unembed.rows == rows && c->unembed.cols == cols && c->unembed.a != NULL;
}

int model_config_copy(ModelConfig *dst, const ModelConfig *src)
{
	/* Scalars first; every owned pointer is then replaced by a copy (or NULL). */
	*dst = *src;
	dst->tokens = dst->source_tokens = dst->vocab_tokens = NULL;
	dst->ids = NULL;
	dst->input = dst->source_input = dst->final_gamma = dst->final_beta = dst->target = (Mat){ 0 };
	dst->unembed = dst->pe_learned = dst->mask_matrix = (Mat){ 0 };
	dst->nmasks = 0;
	dst->masks = NULL;
	matview_share(&dst->unembed_view, &src->unembed_view);
	if (tokens_copy(&dst->tokens, src->tokens, src->n) != 0 ||
	    tokens_copy(&dst->source_tokens, src->source_tokens, src->m) != 0 ||
	    tokens_copy(&dst->vocab_tokens, src->vocab_tokens, src->vocab) != 0)
		return -1;
	if (mat_copy(&dst->input, &src->input) != 0 || mat_copy(&dst->source_input, &src->source_input) != 0 ||
	    mat_copy(&dst->mask_matrix, &src->mask_matrix) != 0 || mat_copy(&dst->final_gamma, &src->final_gamma) != 0 ||
	    mat_copy(&dst->final_beta, &src->final_beta) != 0 || mat_copy(&dst->target, &src->target) != 0 ||
	    mat_copy(&dst->unembed, &src->unembed) != 0 || mat_copy(&dst->pe_learned, &src->pe_learned) != 0)
		return -1;
	if (src->ids != NULL) {
		if ((dst->ids = malloc((size_t)src->n * sizeof *dst->ids)) == NULL)
			return -1;
		memcpy(dst->ids, src->ids, (size_t)src->n * sizeof *dst->ids);
	}
	return masks_copy(&dst->masks, &dst->nmasks, src->masks, src->nmasks);
}

static void block_free(Block *b)
{
	mat_free(&b->ln1_gamma);
	mat_free(&b->ln1_beta);
	mat_free(&b->ln2_gamma);
	mat_free(&b->ln2_beta);
	mat_free(&b->ln1_after_gamma);
	mat_free(&b->ln2_after_gamma);
	mat_free(&b->W_1);
	mat_free(&b->b_1);
	mat_free(&b->W_3);
	mat_free(&b->b_3);
	mat_free(&b->W_2);
	mat_free(&b->b_2);
	mat_free(&b->moe.W_r);
	mat_free(&b->moe.W_1);
	mat_free(&b->moe.W_3);
	mat_free(&b->moe.W_2);
	mat_free(&b->moe.S_1);
	mat_free(&b->moe.S_3);
	mat_free(&b->moe.S_2);
	mat_free(&b->moe.S_gate);
	mat_free(&b->moe.b_r); /* gpt-oss's biases */
	mat_free(&b->moe.b_1);
	mat_free(&b->moe.b_3);
	mat_free(&b->moe.b_2);
	mat_free(&b->moe.e_bias);
}

static int block_copy(Block *dst, const Block *src)
{
	*dst = *src;
	dst->ln1_gamma = dst->ln1_beta = dst->ln2_gamma = dst->ln2_beta = (Mat){ 0 };
	dst->ln1_after_gamma = dst->ln2_after_gamma = (Mat){ 0 };
	dst->W_1 = dst->b_1 = dst->W_3 = dst->b_3 = dst->W_2 = dst->b_2 = (Mat){ 0 };
	dst->moe.W_r = dst->moe.W_1 = dst->moe.W_3 = dst->moe.W_2 = (Mat){ 0 };
	dst->moe.S_1 = dst->moe.S_3 = dst->moe.S_2 = dst->moe.S_gate = (Mat){ 0 };
	dst->moe.b_r = dst->moe.b_1 = dst->moe.b_3 = dst->moe.b_2 = dst->moe.e_bias = (Mat){ 0 };
	return mat_copy(&dst->moe.e_bias, &src->moe.e_bias) | mat_copy(&dst->moe.b_r, &src->moe.b_r) | mat_copy(&dst->moe.b_1, &src->moe.b_1) |
	       mat_copy(&dst->moe.b_3, &src->moe.b_3) | mat_copy(&dst->moe.b_2, &src->moe.b_2) |
	       mat_copy(&dst->moe.W_r, &src->moe.W_r) | mat_copy(&dst->moe.W_1, &src->moe.W_1) |
	       mat_copy(&dst->moe.W_3, &src->moe.W_3) | mat_copy(&dst->moe.W_2, &src->moe.W_2) |
	       mat_copy(&dst->moe.S_1, &src->moe.S_1) | mat_copy(&dst->moe.S_3, &src->moe.S_3) |
	       mat_copy(&dst->moe.S_2, &src->moe.S_2) | mat_copy(&dst->moe.S_gate, &src->moe.S_gate) |
	       mat_copy(&dst->ln1_gamma, &src->ln1_gamma) | mat_copy(&dst->ln1_beta, &src->ln1_beta) |
	       mat_copy(&dst->ln2_gamma, &src->ln2_gamma) | mat_copy(&dst->ln2_beta, &src->ln2_beta) |
	       mat_copy(&dst->ln1_after_gamma, &src->ln1_after_gamma) | mat_copy(&dst->ln2_after_gamma, &src->ln2_after_gamma) |
	       mat_copy(&dst->W_1, &src->W_1) | mat_copy(&dst->b_1, &src->b_1) | mat_copy(&dst->W_3, &src->W_3) |
	       mat_copy(&dst->b_3, &src->b_3) | mat_copy(&dst->W_2, &src->W_2) | mat_copy(&dst->b_2, &src->b_2);
}

static void mla_free(MlaParams *m)
{
	Mat *all[] = { &m->W_qa, &m->q_a_norm, &m->W_qb, &m->W_kva, &m->kv_a_norm, &m->W_kvb };

	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		mat_free(all[i]);
}

/* dst holds src's settings and a copy of each matrix (dst's own are not freed): 0, or -1 out of memory. */
static int mla_copy(MlaParams *dst, const MlaParams *src)
{
	*dst = *src;
	dst->W_qa = dst->q_a_norm = dst->W_qb = dst->W_kva = dst->kv_a_norm = dst->W_kvb = (Mat){ 0 };
	return mat_copy(&dst->W_qa, &src->W_qa) | mat_copy(&dst->q_a_norm, &src->q_a_norm) |
	               mat_copy(&dst->W_qb, &src->W_qb) | mat_copy(&dst->W_kva, &src->W_kva) |
	               mat_copy(&dst->kv_a_norm, &src->kv_a_norm) | mat_copy(&dst->W_kvb, &src->W_kvb)
	               ? -1
	               : 0;
}

static void dsa_free(DsaParams *d)
{
	Mat *all[] = { &d->W_iq, &d->W_ik, &d->k_norm, &d->k_norm_b, &d->W_iw };

	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		mat_free(all[i]);
}

/* dst holds src's settings and a copy of each matrix: 0, or -1 out of memory. */
static int dsa_copy(DsaParams *dst, const DsaParams *src)
{
	*dst = *src;
	dst->W_iq = dst->W_ik = dst->k_norm = dst->k_norm_b = dst->W_iw = (Mat){ 0 };
	return mat_copy(&dst->W_iq, &src->W_iq) | mat_copy(&dst->W_ik, &src->W_ik) | mat_copy(&dst->k_norm, &src->k_norm) |
	               mat_copy(&dst->k_norm_b, &src->k_norm_b) | mat_copy(&dst->W_iw, &src->W_iw)
	               ? -1
	               : 0;
}

static void diff_free(DiffParams *d)
{
	mat_free(&d->lq1);
	mat_free(&d->lk1);
	mat_free(&d->lq2);
	mat_free(&d->lk2);
	mat_free(&d->subln);
}

/* dst holds src's settings and a copy of each vector: 0, or -1 out of memory. */
static int diff_copy(DiffParams *dst, const DiffParams *src)
{
	*dst = *src;
	dst->lq1 = dst->lk1 = dst->lq2 = dst->lk2 = dst->subln = (Mat){ 0 };
	return mat_copy(&dst->lq1, &src->lq1) | mat_copy(&dst->lk1, &src->lk1) | mat_copy(&dst->lq2, &src->lq2) |
	               mat_copy(&dst->lk2, &src->lk2) | mat_copy(&dst->subln, &src->subln)
	               ? -1
	               : 0;
}

/* p's file slots (model.h: LayerParams.file) dropped: no views, no bits. */
static void file_slots_free(LayerParams *p)
{
	for (int k = 0; k < LP_FILE_COUNT; k++) {
		for (int i = 0; i < p->file[k].n; i++)
			matview_free(&p->file[k].piece[i].v);
		free(p->file[k].piece);
		p->file[k] = (FileSlot){ 0 };
	}
	p->files = 0;
}

/* dst's slots other references to src's views (dst's fields a copy of src's, not freed). 0, or -1 out of memory (dst's none). */
static int file_slots_share(LayerParams *dst, const LayerParams *src)
{
	for (int k = 0; k < LP_FILE_COUNT; k++)
		dst->file[k] = (FileSlot){ 0 };
	for (int k = 0; k < LP_FILE_COUNT; k++) {
		const FileSlot *s = &src->file[k];
		if (s->n == 0)
			continue;
		if ((dst->file[k].piece = malloc((size_t)s->n * sizeof *s->piece)) == NULL) {
			dst->files = 0;
			file_slots_free(dst);
			return -1;
		}
		dst->file[k].n = s->n;
		for (int i = 0; i < s->n; i++) {
			dst->file[k].piece[i] = s->piece[i];
			matview_share(&dst->file[k].piece[i].v, &s->piece[i].v);
		}
	}
	return 0;
}

void layer_params_free(LayerParams *p)
{
	mat_free(&p->W_q);
	mat_free(&p->W_k);
	mat_free(&p->W_v);
	mat_free(&p->W_o);
	mat_free(&p->w_e);
	mat_free(&p->b_q);
	mat_free(&p->b_k);
	mat_free(&p->b_v);
	mat_free(&p->b_o);
	mat_free(&p->alibi_slopes);
	mat_free(&p->q_norm);
	mat_free(&p->k_norm);
	mat_free(&p->sinks);
	mat_free(&p->gdn_W_a);
	mat_free(&p->gdn_W_b);
	mat_free(&p->gdn_A_log);
	mat_free(&p->gdn_dt_bias);
	mat_free(&p->gdn_conv);
	mat_free(&p->gdn_W_z);
	mat_free(&p->gdn_norm);
	mat_free(&p->W_gate);
	file_slots_free(p);
	mat_free(&p->b_gate);
	mla_free(&p->mla);
	diff_free(&p->diff);
	dsa_free(&p->dsa);
	block_free(&p->block);
	memset(p, 0, sizeof *p);
}

int layer_gdn_r(const LayerParams *p)
{
	return p->gdn_v_heads > 0 && p->heads > 0 ? p->gdn_v_heads / p->heads : 1;
}

int layer_params_copy(LayerParams *dst, const LayerParams *src)
{
	*dst = *src;
	dst->W_q = dst->W_k = dst->W_v = dst->W_o = dst->w_e = (Mat){ 0 };
	dst->b_q = dst->b_k = dst->b_v = dst->b_o = dst->alibi_slopes = dst->q_norm = dst->k_norm = (Mat){ 0 };
	dst->sinks = dst->gdn_W_a = dst->gdn_W_b = dst->gdn_A_log = dst->gdn_dt_bias = dst->W_gate = dst->b_gate = (Mat){ 0 };
	dst->gdn_conv = dst->gdn_W_z = dst->gdn_norm = (Mat){ 0 };
	dst->mla.W_qa = dst->mla.q_a_norm = dst->mla.W_qb = dst->mla.W_kva = dst->mla.kv_a_norm = dst->mla.W_kvb = (Mat){ 0 };
	dst->diff.lq1 = dst->diff.lk1 = dst->diff.lq2 = dst->diff.lk2 = dst->diff.subln = (Mat){ 0 };
	dst->dsa.W_iq = dst->dsa.W_ik = dst->dsa.k_norm = dst->dsa.k_norm_b = dst->dsa.W_iw = (Mat){ 0 };
	if (file_slots_share(dst, src) != 0)
		return -1;
	if (block_copy(&dst->block, &src->block) != 0 || mla_copy(&dst->mla, &src->mla) != 0 || diff_copy(&dst->diff, &src->diff) != 0 ||
	    dsa_copy(&dst->dsa, &src->dsa) != 0)
		return -1;
	return mat_copy(&dst->W_q, &src->W_q) | mat_copy(&dst->W_k, &src->W_k) | mat_copy(&dst->W_v, &src->W_v) |
	       mat_copy(&dst->W_o, &src->W_o) | mat_copy(&dst->w_e, &src->w_e) | mat_copy(&dst->b_q, &src->b_q) |
	       mat_copy(&dst->b_k, &src->b_k) | mat_copy(&dst->b_v, &src->b_v) | mat_copy(&dst->b_o, &src->b_o) |
	       mat_copy(&dst->alibi_slopes, &src->alibi_slopes) | mat_copy(&dst->q_norm, &src->q_norm) |
	       mat_copy(&dst->k_norm, &src->k_norm) | mat_copy(&dst->sinks, &src->sinks) |
	       mat_copy(&dst->gdn_W_a, &src->gdn_W_a) | mat_copy(&dst->gdn_W_b, &src->gdn_W_b) |
	       mat_copy(&dst->gdn_A_log, &src->gdn_A_log) | mat_copy(&dst->gdn_dt_bias, &src->gdn_dt_bias) |
	       mat_copy(&dst->W_gate, &src->W_gate) | mat_copy(&dst->b_gate, &src->b_gate) | mat_copy(&dst->gdn_conv, &src->gdn_conv) |
	       mat_copy(&dst->gdn_W_z, &src->gdn_W_z) | mat_copy(&dst->gdn_norm, &src->gdn_norm)
	               ? -1
	               : 0;
}

Mat *layer_params_file_mat(LayerParams *p, int k)
{
	Mat *const m[LP_FILE_COUNT] = { &p->W_q, &p->W_k, &p->W_v, &p->W_o, &p->block.W_1, &p->block.W_3, &p->block.W_2,
		                        &p->block.moe.W_1, &p->block.moe.W_3, &p->block.moe.W_2 };

	return m[k];
}

int layer_params_dormant_slot(const LayerParams *p, const Mat *m)
{
	for (int k = 0; m->a == NULL && k < LP_FILE_COUNT; k++)
		if ((p->files >> k & 1) && layer_params_file_mat((LayerParams *)p, k) == m)
			return k;
	return -1;
}

int layer_params_keep(LayerParams *p, int k, const MatView *v, int transpose, int first, int step, int cols, int row0,
                      int col0)
{
	FileSlot *s = &p->file[k];
	FilePiece *more = realloc(s->piece, (size_t)(s->n + 1) * sizeof *more);

	if (more == NULL)
		return -1;
	s->piece = more;
	more[s->n] = (FilePiece){ .transpose = transpose, .first = first, .step = step, .cols = cols, .row0 = row0, .col0 = col0 };
	matview_share(&more[s->n].v, v);
	s->n++;
	p->files |= 1u << k;
	return 0;
}

int layer_params_same_file(const LayerParams *x, const LayerParams *y, int k)
{
	const FileSlot *a = &x->file[k], *b = &y->file[k];

	if (!(x->files >> k & 1) || !(y->files >> k & 1) || a->n != b->n)
		return 0;
	for (int i = 0; i < a->n; i++)
		if (a->piece[i].v.shared != b->piece[i].v.shared || a->piece[i].v.data != b->piece[i].v.data)
			return 0;
	return 1;
}

/* Piece f into m's numbers (each number of the file exactly a double: any order gives the same bits). */
static int piece_into(const FilePiece *f, Mat *m)
{
	const MatView *v = &f->v;
	double *buf;

	if (f->transpose) { /* vᵀ made whole (matview_to_mat's fast transpose), then its rows put in place */
		Mat t = { 0 };
		if (matview_to_mat(v, 1, &t) != 0)
			return -1;
		for (int i = 0; i < t.rows; i++)
			memcpy(&MAT_AT(*m, f->row0 + i, f->col0), &MAT_AT(t, i, 0), (size_t)t.cols * sizeof(double));
		mat_free(&t);
		return 0;
	}
	if ((buf = malloc((size_t)(v->cols > 0 ? v->cols : 1) * sizeof *buf)) == NULL)
		return -1;
	for (int i = 0; i < v->rows; i++) {
		double *out = &MAT_AT(*m, f->row0 + i, f->col0);
		matview_rows(v, i, 1, buf);
		for (int j = 0; j < f->cols; j++)
			out[j] = buf[f->first + (size_t)j * (size_t)f->step];
	}
	free(buf);
	return 0;
}

int layer_params_file_doubles(const LayerParams *p, int k, Mat *out)
{
	const FileSlot *s = &p->file[k];
	const Mat *shape = layer_params_file_mat((LayerParams *)p, k);
	const FilePiece *f = s->piece;

	/* one nn.Linear weight, the whole matrix: its transpose straight into out */
	if (s->n == 1 && f->transpose && f->row0 == 0 && f->col0 == 0 && f->v.rows == shape->cols && f->v.cols == shape->rows)
		return matview_to_mat(&f->v, 1, out);
	if (mat_alloc_whole(out, shape->rows, shape->cols) != 0)
		return -1;
	for (int i = 0; i < s->n; i++)
		if (piece_into(&s->piece[i], out) != 0) {
			mat_free(out);
			return -1;
		}
	return 0;
}

int layer_params_make_some(LayerParams *p, unsigned want, unsigned *made)
{
	for (int k = 0; k < LP_FILE_COUNT; k++) {
		Mat *m = layer_params_file_mat(p, k), d = { 0 };
		if (!((p->files & want) >> k & 1) || m->a != NULL)
			continue;
		if (layer_params_file_doubles(p, k, &d) != 0)
			return -1; /* m dormant still */
		*m = d;
		*made |= 1u << k;
	}
	return 0;
}

int layer_params_make(LayerParams *p, unsigned *made)
{
	return layer_params_make_some(p, ~0u, made);
}

void layer_params_unmake(LayerParams *p, unsigned made)
{
	for (int k = 0; k < LP_FILE_COUNT; k++)
		if (made >> k & 1) {
			Mat *m = layer_params_file_mat(p, k);
			const int rows = m->rows, cols = m->cols;
			mat_free(m);
			m->rows = rows, m->cols = cols;
		}
}

void layer_params_dormant(LayerParams *p)
{
	for (int k = 0; k < LP_FILE_COUNT; k++)
		if (p->files >> k & 1)
			layer_params_file_mat(p, k)->a = NULL;
}

int layer_params_own(LayerParams *p)
{
	unsigned made = 0;

	if (layer_params_make(p, &made) != 0) {
		layer_params_unmake(p, made);
		return -1;
	}
	file_slots_free(p);
	return 0;
}

void layer_own_free(LayerOwn *o)
{
	tokens_free(o->source_tokens, o->m);
	mat_free(&o->source_input);
	mat_free(&o->mask_matrix);
	masks_free(o->masks, o->nmasks);
	memset(o, 0, sizeof *o);
}

int layer_own_copy(LayerOwn *dst, const LayerOwn *src)
{
	*dst = *src;
	dst->source_tokens = NULL;
	dst->source_input = dst->mask_matrix = (Mat){ 0 };
	dst->nmasks = 0;
	dst->masks = NULL;
	if (tokens_copy(&dst->source_tokens, src->source_tokens, src->m) != 0 ||
	    mat_copy(&dst->source_input, &src->source_input) != 0 || mat_copy(&dst->mask_matrix, &src->mask_matrix) != 0)
		return -1;
	return masks_copy(&dst->masks, &dst->nmasks, src->masks, src->nmasks);
}

void model_free(Model *m)
{
	model_config_free(&m->cfg);
	layer_params_free(&m->lp);
	for (int i = 0; i < m->nlayers; i++) {
		layer_params_free(&m->layer[i].lp);
		layer_own_free(&m->layer[i].own);
	}
	free(m->layer);
	if (m->encoder != NULL) {
		model_free(m->encoder);
		free(m->encoder);
	}
	memset(m, 0, sizeof *m);
}

int model_copy(Model *dst, const Model *src)
{
	memset(dst, 0, sizeof *dst);
	if (model_config_copy(&dst->cfg, &src->cfg) != 0 || layer_params_copy(&dst->lp, &src->lp) != 0)
		return -1;
	if (src->nlayers > 0) {
		if ((dst->layer = calloc((size_t)src->nlayers, sizeof *dst->layer)) == NULL)
			return -1;
		for (int i = 0; i < src->nlayers; i++) {
			dst->nlayers = i + 1;
			if (layer_params_copy(&dst->layer[i].lp, &src->layer[i].lp) != 0 ||
			    layer_own_copy(&dst->layer[i].own, &src->layer[i].own) != 0)
				return -1;
		}
	}
	if (src->encoder != NULL &&
	    ((dst->encoder = calloc(1, sizeof *dst->encoder)) == NULL || model_copy(dst->encoder, src->encoder) != 0))
		return -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Layers                                                             */
/* ------------------------------------------------------------------ */

int model_layers(const Model *m)
{
	return m->nlayers > 0 ? m->nlayers : 1;
}

LayerParams *model_layer_params(Model *m, int i)
{
	return m->nlayers > 0 && i > 0 && i < m->nlayers ? &m->layer[i].lp : &m->lp; /* layer 0's are lp: one copy */
}

const LayerParams *model_layer_params_const(const Model *m, int i)
{
	return model_layer_params((Model *)m, i);
}

LayerOwn *model_layer_own(Model *m, int i)
{
	return m->nlayers > 0 && i >= 0 && i < m->nlayers ? &m->layer[i].own : NULL;
}

int model_set_layers(Model *m, int n)
{
	if (m->nlayers != 0 || n < 1 || (m->layer = calloc((size_t)n, sizeof *m->layer)) == NULL)
		return -1;
	m->nlayers = n;
	return 0;
}

void model_config_of_layer(const Model *m, int i, const Mat *input, ModelConfig *out)
{
	if (m->nlayers == 0) {
		*out = m->cfg;
		out->input = *input;
		return;
	}
	model_layer_config(&m->cfg, &m->layer[i].own, i, m->nlayers, m->encoder != NULL, input, out);
}

/* ------------------------------------------------------------------ */
/* Masks, key/value heads, ALiBi                                      */
/* ------------------------------------------------------------------ */

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

int model_mask_sees(const ModelConfig *c, int i, int j)
{
	if (c->mask != MASK_LIST)
		return part_sees(c->mask, c->window, &c->mask_matrix, i, j);
	for (int k = 0; k < c->nmasks; k++)
		if (!part_sees(c->masks[k].kind, c->masks[k].window, &c->masks[k].matrix, i, j))
			return 0;
	return 1;
}

int model_mask_causal(const ModelConfig *c)
{
	if (c->mask == MASK_CAUSAL || c->mask == MASK_WINDOW)
		return 1;
	for (int k = 0; c->mask == MASK_LIST && k < c->nmasks; k++)
		if (c->masks[k].kind == MASK_CAUSAL || c->masks[k].kind == MASK_WINDOW)
			return 1;
	return 0;
}

int model_mask_window(const ModelConfig *c)
{
	int w = c->mask == MASK_WINDOW ? c->window : 0;

	for (int k = 0; c->mask == MASK_LIST && k < c->nmasks; k++)
		if (c->masks[k].kind == MASK_WINDOW && (w == 0 || c->masks[k].window < w))
			w = c->masks[k].window;
	return w;
}

/*
 * ALiBi's slopes (Press, Smith and Lewis, "Train Short, Test Long"): for h a
 * power of two, the geometric sequence 2^(−8/h), 2^(−16/h), …; otherwise
 * the c = 2^⌊log2 h⌋ slopes of c heads, then every other slope of 2c heads.
 */
int model_kv_named(const LayerParams *p)
{
	return p->kv_heads_given || p->kv_heads != p->heads;
}

double model_alibi_slope(int h, int i)
{
	int c = 1;

	while (c * 2 <= h)
		c *= 2;
	if (i < c)
		return pow(2.0, -8.0 * (i + 1) / c);
	return pow(2.0, -8.0 * (2 * (i - c) + 1) / (2.0 * c));
}
