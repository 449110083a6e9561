/* unit_moe2.c: DeepSeek-V3's mixture of experts beside the lesson files
 * (tests/t_moe2.sh checks their numbers against PyTorch): decoding token by
 * token routes each new token alone, and every step's layer output is the
 * full computation's row, bit for bit (the test of a correct cache around a
 * mixture); and the way in a model loader uses, moe_router_deepseek_v3 and
 * moe_router_fault, under config.json's names. */
#include "unit_common.h"

#include "model/model.h"

/* Each layer of a decoded lesson: step t's layer output equals the full computation's residual2 row t. */
static void decoded_equals_full(const char *rel)
{
	char *path = path_of(rel);
	Lesson *l = load_file(path);
	Attn *a = compute_all(l);
	int layers = 0;

	for (const Attn *at = a; at != NULL; at = at->next, layers++) {
		assert_false(mat_empty(&at->dec_layer_out));
		assert_false(mat_empty(&at->moe_weights));
		assert_true(same_numbers(&at->dec_layer_out, &at->residual2));
	}
	assert_int_equal(layers, 2 - (strstr(rel, "softmax") != NULL));
	attn_free(a);
	lesson_free(l);
	free(path);
}

static void test_decode_sigmoid(void **state)
{
	(void)state;
	decoded_equals_full("tests/golden/moe2/dsv3_decode.json");
}

static void test_decode_softmax(void **state)
{
	(void)state;
	decoded_equals_full("tests/golden/moe2/softmax_decode.json");
}

/* A loader's settings: zeros for the bias, the sizes checked by name. */
static void test_router_for_a_loader(void **state)
{
	MoeParams p = { 0 };
	MoeRouterV3 r = { 4, 2, 1, 2.5 };
	char why[200];

	(void)state;
	p.experts = 8, p.top_k = 2;
	assert_int_equal(moe_router_deepseek_v3(&p, &r), 0);
	assert_int_equal(p.scoring, MOE_SCORE_SIGMOID);
	assert_int_equal(p.e_bias.rows, 1);
	assert_int_equal(p.e_bias.cols, 8);
	for (int e = 0; e < 8; e++)
		assert_true(p.e_bias.a[e] == 0.0);
	assert_null(moe_router_fault(&p, why, sizeof why));
	p.top_k = 5; /* more than the 2 groups of 2 kept */
	assert_string_equal(moe_router_fault(&p, why, sizeof why), "top_k");
	p.top_k = 2, p.n_group = 3;
	assert_string_equal(moe_router_fault(&p, why, sizeof why), "n_group");
	p.n_group = 4, p.topk_group = 5;
	assert_string_equal(moe_router_fault(&p, why, sizeof why), "topk_group");
	p.topk_group = 2, p.routed_scaling = 0.0;
	assert_string_equal(moe_router_fault(&p, why, sizeof why), "routed_scaling_factor");
	mat_free(&p.e_bias);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_sigmoid),
		cmocka_unit_test(test_decode_softmax),
		cmocka_unit_test(test_router_for_a_loader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
