/* unit_backward.c: the backward pass against finite differences, and the softmax Jacobian's rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backward.h"
#include "unit_common.h"

/* A small lesson of every kind the backward pass goes through: heads, W_o, biases, a mask, a block. */
static const char *const lessons[] = {
	"{\"attnviz\": 2, \"X\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 4, \"seed\": 1}, \"heads\": 2,"
	" \"W_q\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 4, \"seed\": 2},"
	" \"W_k\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 4, \"seed\": 3},"
	" \"W_v\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 4, \"seed\": 4},"
	" \"W_o\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 3, \"seed\": 5}, \"b_q\": [0.1, -0.2, 0.3, 0.05],"
	" \"mask\": \"causal\", \"backward\": {\"target\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 3, \"seed\": 6}}}",
	"{\"attnviz\": 2, \"X\": {\"random\": \"normal\", \"rows\": 3, \"cols\": 4, \"seed\": 1}, \"heads\": 2,"
	" \"W_q\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 4, \"seed\": 2},"
	" \"W_k\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 4, \"seed\": 3},"
	" \"W_v\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 4, \"seed\": 4},"
	" \"block\": {\"norm\": \"pre\", \"norm_kind\": \"rmsnorm\", \"ffn\": {\"activation\": \"swiglu\","
	"  \"W_1\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 6, \"seed\": 7},"
	"  \"W_3\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 6, \"seed\": 8},"
	"  \"W_2\": {\"random\": \"normal\", \"rows\": 6, \"cols\": 4, \"seed\": 9}}},"
	" \"layers\": [{}, {\"block\": {\"norm\": \"post\", \"ffn\": {\"activation\": \"gelu\","
	"  \"W_1\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 5, \"seed\": 10},"
	"  \"W_2\": {\"random\": \"normal\", \"rows\": 5, \"cols\": 4, \"seed\": 11}}}}],"
	" \"backward\": {\"dOutput\": {\"random\": \"normal\", \"rows\": 3, \"cols\": 4, \"seed\": 12}}}",
	/* RoPE, grouped-query attention (4 query heads on 2 key/value heads), ALiBi, a window and padding */
	"{\"attnviz\": 2, \"X\": {\"random\": \"normal\", \"rows\": 5, \"cols\": 4, \"seed\": 1}, \"heads\": 4,"
	" \"kv_heads\": 2, \"rope\": {\"base\": 100}, \"alibi\": true,"
	" \"W_q\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 8, \"seed\": 2},"
	" \"W_k\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 4, \"seed\": 3},"
	" \"W_v\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 6, \"seed\": 4},"
	" \"W_o\": {\"random\": \"normal\", \"rows\": 12, \"cols\": 3, \"seed\": 5}, \"b_k\": [0.1, -0.2, 0.3, 0.05],"
	" \"mask\": [{\"window\": 3}, {\"padding\": [1, 1, 0, 1, 1]}],"
	" \"backward\": {\"target\": {\"random\": \"normal\", \"rows\": 5, \"cols\": 3, \"seed\": 6}}}",
	/* additive scores over interleaved RoPE, multi-query attention */
	"{\"attnviz\": 2, \"X\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 3, \"seed\": 1}, \"heads\": 2,"
	" \"kv_heads\": 1, \"rope\": {\"style\": \"interleaved\", \"base\": 10}, \"score\": \"additive\","
	" \"w_e\": [0.5, -1, 0.7, 0.2],"
	" \"W_q\": {\"random\": \"normal\", \"rows\": 3, \"cols\": 4, \"seed\": 2},"
	" \"W_k\": {\"random\": \"normal\", \"rows\": 3, \"cols\": 2, \"seed\": 3},"
	" \"W_v\": {\"random\": \"normal\", \"rows\": 3, \"cols\": 2, \"seed\": 4}, \"mask\": \"causal\","
	" \"backward\": {\"dOutput\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 4, \"seed\": 6}}}",
};

static double loss_of(const Lesson *l)
{
	char *err = NULL;
	double loss = NAN;
	Attn *a = attn_compute(l, &err);

	assert_non_null(a);
	assert_int_equal(attn_backward(a, &loss, &err), 0);
	attn_free(a);
	return loss;
}

/* ∂L/∂p from the backward pass against (L(p + h) − L(p − h)) / 2h, for every stride-th cell of p. */
static void check_stride(Lesson *l, Mat *p, const Mat *g, int stride)
{
	const double h = 1e-6;

	assert_int_equal(p->rows * p->cols, g->rows * g->cols);
	for (int k = 0; k < p->rows * p->cols; k += stride) {
		const double keep = p->a[k];
		double up, down;
		p->a[k] = keep + h;
		up = loss_of(l);
		p->a[k] = keep - h;
		down = loss_of(l);
		p->a[k] = keep;
		assert_true(fabs((up - down) / (2 * h) - g->a[k]) <= 1e-6 * (1 + fabs(g->a[k])));
	}
}

/* A few cells of p: every third. */
static void check_cells(Lesson *l, Mat *p, const Mat *g)
{
	check_stride(l, p, g, 3);
}

static void test_finite_differences(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof lessons / sizeof lessons[0]; i++) {
		char *err = NULL, *warn = NULL;
		Lesson *l = lesson_load_string("fd.json", lessons[i], strlen(lessons[i]), &err, &warn);
		Attn *a;
		double loss;
		assert_non_null(l);
		free(warn);
		a = attn_compute(l, &err);
		assert_non_null(a);
		assert_int_equal(attn_backward(a, &loss, &err), 0);
		for (const Attn *x = a; x != NULL; x = x->next) {
			LayerParams *p = lesson_layer_params(l, x->layer);
			check_cells(l, &p->W_q, &x->grad->W_q);
			check_cells(l, &p->W_k, &x->grad->W_k);
			check_cells(l, &p->W_v, &x->grad->W_v);
			if (!mat_empty(&p->b_q))
				check_cells(l, &p->b_q, &x->grad->b_q);
			if (p->block.has_ffn) {
				check_cells(l, &p->block.W_1, &x->grad->W_1);
				check_cells(l, &p->block.b_2, &x->grad->b_2);
				check_cells(l, &p->block.ln1_gamma, &x->grad->ln1_gamma);
			}
		}
		attn_free(a);
		lesson_free(l);
	}
}

/* The lesson in file (from the source tree), computed with its gradients; the lesson in *l. */
static Attn *computed_backward(const char *file, Lesson **l)
{
	char *path = path_of(file), *err = NULL, *warn = NULL;
	Attn *a;
	double loss;

	*l = lesson_load(path, &err, &warn);
	assert_non_null(*l);
	free(warn);
	free(path);
	a = attn_compute(*l, &err);
	assert_non_null(a);
	assert_int_equal(attn_backward(a, &loss, &err), 0);
	return a;
}

/* Every cell of p, not every third: an encoder's few parameters reach the loss only through the memory. */
static void check_every_cell(Lesson *l, Mat *p, const Mat *g)
{
	check_stride(l, p, g, 1);
}

/*
 * An encoder–decoder's encoder (grad.encoder): every parameter of every
 * encoder layer, its final norm and its input X, against central
 * differences of the loss, which reaches them only through the memory the
 * decoder's cross-attentions read. The golden lessons: post-norm with biases,
 * padding and positions; pre-norm GELU; RMSNorm with SwiGLU and a final norm,
 * an encoder wider than the decoder.
 */
static void test_encoder_finite_differences(void **state)
{
	static const char *const files[] = { "tests/golden/v2/encdec_post.json", "tests/golden/v2/encdec_pre_gelu.json",
		                             "tests/golden/v2/encdec_rms_swiglu.json" };
	(void)state;
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		Lesson *l;
		Attn *a = computed_backward(files[i], &l);
		int checked = 0;
		assert_non_null(l->encoder);
		assert_non_null(a->encoder);
		for (const Attn *x = a->encoder; x != NULL; x = x->next) {
			Mat *param[ATTN_GRAD_PARAMS];
			const Mat *grad[ATTN_GRAD_PARAMS];
			const int n =
			        attn_grad_pairs(model_layer_params(l->encoder, x->layer), x->grad, param, grad, ATTN_GRAD_PARAMS);
			assert_true(n >= 3); /* W_q, W_k, W_v at least */
			for (int k = 0; k < n; k++, checked++)
				check_every_cell(l, param[k], grad[k]);
			if (x->next == NULL && !mat_empty(&l->encoder->cfg.final_gamma)) {
				check_every_cell(l, &l->encoder->cfg.final_gamma, &x->grad->final_gamma);
				checked++;
			}
		}
		check_every_cell(l, &l->encoder->cfg.input, &a->encoder->grad->input);
		assert_true(checked >= 6);
		attn_free(a);
		lesson_free(l);
	}
}

/*
 * Gated attention and every kind of mixture of experts (tests/golden/moeback): every parameter a step of
 * training moves — W_gate, b_gate, the router's weights and bias, each expert's, the shared expert's and
 * its gate — and the input X against central differences (the top-k choice does not move under h = 1e-6
 * in these lessons: no two scores are that close). A parameter with no gradient is not trained (the
 * dense FFN's b_2 beside a mixture): none of the mixture's own is among those.
 */
static void test_moe_gate_finite_differences(void **state)
{
	static const char *const files[] = { "tests/golden/moeback/gate_backward.json",
		                             "tests/golden/moeback/gate_block_backward.json",
		                             "tests/golden/moeback/mixtral_backward.json",
		                             "tests/golden/moeback/qwen3moe_shared_backward.json",
		                             "tests/golden/moeback/deepseek_backward.json",
		                             "tests/golden/moeback/gptoss_backward.json" };
	static const int least[] = { 6, 9, 9, 13, 12, 14 }; /* the pairs each has, at least */
	(void)state;
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		Lesson *l;
		Attn *a = computed_backward(files[i], &l);
		int checked = 0;
		for (const Attn *x = a; x != NULL; x = x->next) {
			Mat *param[ATTN_GRAD_PARAMS];
			const Mat *grad[ATTN_GRAD_PARAMS];
			const int n = attn_grad_pairs(model_layer_params(&l->model, x->layer), x->grad, param, grad, ATTN_GRAD_PARAMS);
			for (int k = 0; k < n; k++)
				if (!mat_empty(grad[k])) {
					check_cells(l, param[k], grad[k]);
					checked++;
				}
		}
		assert_true(checked >= least[i]);
		check_cells(l, &l->model.cfg.input, &a->grad->input);
		attn_free(a);
		lesson_free(l);
	}
}

/* dmasked = (diag(w) − w wᵀ)·dweights: each row of the Jacobian sums to 0, so a row's dmasked sums to 0;
 * a fully masked row (−∞ fill) passes nothing back. */
static void test_softmax_rules(void **state)
{
	static const char *src =
		"{\"attnviz\": 2, \"tokens\": [\"a\", \"b\", \"c\"], \"X\": [[1, 0], [0, 1], [1, 1]], \"W_q\": [[1, 0], [0, 1]], \"W_k\": [[1, 0], [0, 1]],"
		" \"W_v\": [[1, 2], [3, 4]], \"mask\": [[1, 1, 0], [0, 0, 0], [1, 1, 1]],"
		" \"backward\": {\"dOutput\": [[1, 2], [3, 4], [5, 6]]}}";
	char *err = NULL, *warn = NULL;
	Lesson *l = lesson_load_string("softmax.json", src, strlen(src), &err, &warn);
	Attn *a;
	double loss;

	(void)state;
	assert_non_null(l);
	a = attn_compute(l, &err);
	assert_non_null(a);
	assert_int_equal(attn_backward(a, &loss, &err), 0);
	for (int i = 0; i < 3; i++) {
		double sum = 0.0;
		for (int j = 0; j < 3; j++)
			sum += MAT_AT(a->grad->head[0].masked, i, j);
		assert_true(fabs(sum) < 1e-14);
	}
	for (int j = 0; j < 3; j++) {
		assert_true(MAT_AT(a->grad->head[0].masked, 1, j) == 0.0);
		assert_true(MAT_AT(a->grad->head[0].scores, 1, j) == 0.0);
	}
	assert_true(MAT_AT(a->grad->head[0].scaled, 0, 2) == 0.0); /* a hidden cell passes nothing back */
	attn_free(a);
	lesson_free(l);
	free(warn);
}

/* Training lowers the loss and is the same every time. */
static void test_training(void **state)
{
	char *err = NULL, *warn = NULL;
	Lesson *l = lesson_load_string("t.json", lessons[0], strlen(lessons[0]), &err, &warn);
	Lesson *again = lesson_load_string("t.json", lessons[0], strlen(lessons[0]), &err, &warn);
	double losses[11], losses2[11];

	(void)state;
	assert_non_null(l);
	assert_non_null(again);
	if (attn_train(l, 10, 0.01, losses, &err) != 0)
		fail_msg("%s", err);
	assert_int_equal(attn_train(again, 10, 0.01, losses2, &err), 0);
	assert_true(losses[9] < losses[0]);
	assert_memory_equal(losses, losses2, 10 * sizeof(double));
	assert_true(same_numbers(&l->lp.W_q, &again->lp.W_q));
	/* a rate that diverges is refused, naming the step */
	assert_int_equal(attn_train(l, 200, 1e6, losses, &err), -1);
	assert_non_null(strstr(err, "training diverged"));
	free(err);
	free(warn);
	lesson_free(l);
	lesson_free(again);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_finite_differences),
		cmocka_unit_test(test_encoder_finite_differences),
		cmocka_unit_test(test_moe_gate_finite_differences),
		cmocka_unit_test(test_softmax_rules),
		cmocka_unit_test(test_training),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
