/* unit_views.c: what the views show of decoding, FlashAttention's tiles and
 * grouped-query attention, as pure logic: panes cut per head and grouped
 * under their key/value head (stage_cut_panes), n/p through decode steps and
 * tiles (skipping the tiles the mask hides), how each cell is drawn at a step
 * or tile (session_cell_state), the KV cache's bytes and FlashAttention's
 * numbers held at once, and the captions both views print. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/catalog.h"
#include "app/session.h"
#include "inspect/stats.h"
#include "base/text.h"
#include "out/textfmt.h"
#include "unit_common.h"

static void go(Session *s, const char *stage)
{
	char *err = NULL;
	assert_int_equal(session_goto_stage(s, (Stage)stage_find(stage), &err), 0);
}

/* n = 5 tokens, 2 heads sharing 1 key/value head, a window of 2, decoded and tiled 2 × 2. */
#define LESSON(extra) \
	"{\"attnviz\": 2, \"tokens\": [\"a\", \"b\", \"c\", \"d\", \"e\"]," \
	" \"X\": {\"random\": \"normal\", \"rows\": 5, \"cols\": 4, \"seed\": 1}," \
	" \"W_q\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 4, \"seed\": 2}," \
	" \"W_k\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 2, \"seed\": 3}," \
	" \"W_v\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 2, \"seed\": 4}," \
	" \"heads\": 2, \"kv_heads\": 1" extra "}"

static const char *const decode_lesson = LESSON(", \"decode\": true, \"mask\": {\"window\": 2}");
static const char *const flash_lesson = LESSON(", \"mask\": \"causal\", \"flash\": {\"block_q\": 2, \"block_k\": 2}");

/* ------------------------------------------------------------ panes cut per head */

/* A lesson's shape as far as cutting panes goes: heads, key/value heads, d_k and d_v. */
static LessonShape heads_shape(int heads, int kv_heads, int dk, int dv)
{
	LessonShape sh;

	memset(&sh, 0, sizeof sh);
	sh.heads = heads;
	sh.kv_heads = kv_heads;
	sh.features = FEAT_MULTIHEAD | (kv_heads < heads ? FEAT_GQA : 0u);
	sh.dim[DIM_DK] = dk;
	sh.dim[DIM_DV] = dv;
	return sh;
}

static void test_cut_grouped(void **state)
{
	LessonShape sh = heads_shape(4, 2, 2, 2);
	StagePane ps[STAGE_MAX_PANES];
	PaneCut c[16];
	int np, n;
	(void)state;

	np = stage_panes(&sh, STAGE_SPLIT, ps);
	assert_int_equal(np, 3);
	/* K0 V0 Q0 Q1 K1 V1 Q2 Q3 */
	n = stage_cut_panes(&sh, ps, np, 0, c, 16);
	assert_int_equal(n, 8);
	assert_int_equal(c[0].matrix, AM_K);
	assert_int_equal(c[0].head, 0);
	assert_int_equal(c[1].matrix, AM_V);
	assert_int_equal(c[2].matrix, AM_Q);
	assert_int_equal(c[3].matrix, AM_Q);
	assert_int_equal(c[3].head, 1);
	assert_int_equal(c[3].col0, 2);
	assert_int_equal(c[4].matrix, AM_K);
	assert_int_equal(c[4].head, 1);
	assert_int_equal(c[4].col0, 2);
	assert_int_equal(c[7].head, 3);
	assert_int_equal(c[7].col0, 6);
	/* room for one group: the shown head's */
	n = stage_cut_panes(&sh, ps, np, 3, c, 5);
	assert_int_equal(n, 4);
	assert_int_equal(c[0].matrix, AM_K);
	assert_int_equal(c[0].head, 1);
	assert_int_equal(c[3].head, 3);
	/* a group too large: its key/value panes and the query heads around the shown one */
	n = stage_cut_panes(&sh, ps, np, 1, c, 3);
	assert_int_equal(n, 3);
	assert_int_equal(c[2].matrix, AM_Q);
	assert_int_equal(c[2].head, 1);
	/* without shared heads: K, V and Q of each head */
	sh.kv_heads = 4;
	sh.features = FEAT_MULTIHEAD;
	n = stage_cut_panes(&sh, ps, np, 0, c, 16);
	assert_int_equal(n, 12);
	assert_int_equal(c[5].matrix, AM_Q);
	assert_int_equal(c[5].head, 1);
	assert_int_equal(c[5].col0, 2);
	/* panes cut by the shown head's columns: K's are its key/value head's */
	sh.kv_heads = 2;
	sh.features = FEAT_MULTIHEAD | FEAT_GQA;
	np = stage_panes(&sh, STAGE_SCORES, ps);
	n = stage_cut_panes(&sh, ps, np, 3, c, 16);
	assert_int_equal(c[1].matrix, AM_K);
	assert_int_equal(c[1].col0, 2);
	assert_int_equal(c[0].col0, 6);
}

/* ------------------------------------------------------------ decode steps */

static void test_decode_steps(void **state)
{
	Session s;
	char *err = NULL;
	(void)state;

	start_session(&s, decode_lesson);
	assert_int_equal(s.dec_t, -1);
	go(&s, "decode");
	assert_int_equal(session_decode_steps(&s), 5);
	assert_int_equal(s.dec_t, 0);
	assert_int_equal(session_cache_rows(&s, 0), 1);
	assert_int_equal(session_cache_rows(&s, 1), 2);
	assert_int_equal(session_cache_rows(&s, 4), 2); /* the window rolls */
	for (int t = 1; t < 5; t++) {
		assert_int_equal(session_next(&s, &err), 0);
		assert_int_equal(s.dec_t, t);
		assert_int_equal(s.stage, STAGE_DECODE);
	}
	/* at the last step n leaves the stage (or says the walk has ended); p comes back in at its last step */
	if (session_next(&s, &err) == 0) {
		assert_int_not_equal(s.stage, STAGE_DECODE);
		assert_int_equal(session_prev(&s, &err), 0);
	} else {
		free(err);
		err = NULL;
	}
	assert_int_equal(s.stage, STAGE_DECODE);
	assert_int_equal(s.dec_t, 4);
	assert_int_equal(session_prev(&s, &err), 0);
	assert_int_equal(s.dec_t, 3);

	/* step 3: rows after 3 not computed, cache rows 0-1 dropped, row 3 new */
	assert_int_equal(session_cell_state(&s, s.attn, AM_CACHE_K, 4, 0), CELL_UNSEEN);
	assert_int_equal(session_cell_state(&s, s.attn, AM_CACHE_K, 1, 0), CELL_DROPPED);
	assert_int_equal(session_cell_state(&s, s.attn, AM_CACHE_K, 2, 1), CELL_PLAIN);
	assert_int_equal(session_cell_state(&s, s.attn, AM_CACHE_K, 3, 1), CELL_NEW);
	assert_int_equal(session_cell_state(&s, s.attn, AM_DEC_Q, 1, 0), CELL_PLAIN); /* an earlier step's query */
	/* scores: only the keys in each row's cache */
	assert_int_equal(session_cell_state(&s, s.attn, AM_DEC_SCORES, 3, 1), CELL_UNSEEN);
	assert_int_equal(session_cell_state(&s, s.attn, AM_DEC_SCORES, 3, 2), CELL_NEW);
	assert_int_equal(session_cell_state(&s, s.attn, AM_DEC_SCORES, 3, 3), CELL_NEW);
	assert_int_equal(session_cell_state(&s, s.attn, AM_DEC_SCORES, 1, 0), CELL_PLAIN);
	/* other stages' matrices are not marked */
	assert_int_equal(session_cell_state(&s, s.attn, AM_Q, 4, 0), CELL_PLAIN);

	char *sub = textfmt_substep(&s, 1), *cap = textfmt_caption(&s, 0);
	assert_string_equal(sub, "token 3 (d), cache 2 rows"); /* one counter: the step's, the token by name */
	assert_non_null(strstr(cap, "holds rows 2-3 (the window of 2 has dropped rows 0-1)"));
	assert_non_null(strstr(cap, "= 1*(2 + 2)*8 = 32 bytes per token per layer"));
	assert_non_null(strstr(cap, "each of the 2 query heads would take 64"));
	free(sub);
	free(cap);
	session_free(&s);
}

/* A lesson step with "t" starts there; leaving by another stage and coming back starts at 0. */
static void test_decode_step_t(void **state)
{
	Session s;
	char *err = NULL;
	(void)state;

	start_session(&s, LESSON(", \"decode\": true, \"mask\": \"causal\", \"steps\": [{\"stage\": \"input\"}, "
	                         "{\"stage\": \"decode\", \"t\": 2}, {\"stage\": \"concat\"}]"));
	assert_int_equal(session_next(&s, &err), 0);
	assert_int_equal(s.stage, STAGE_DECODE);
	assert_int_equal(s.dec_t, 2);
	assert_int_equal(session_cache_rows(&s, 2), 3);
	assert_int_equal(session_next(&s, &err), 0);
	assert_int_equal(session_next(&s, &err), 0);
	assert_int_equal(s.dec_t, 4);
	assert_int_equal(session_next(&s, &err), 0);
	assert_int_equal(s.dec_t, -1);
	/* back: into the decode step at t = 4, where n left it (one walk, undone in reverse), then down to its t */
	assert_int_equal(session_prev(&s, &err), 0);
	assert_int_equal(s.dec_t, 4);
	assert_int_equal(session_prev(&s, &err), 0);
	assert_int_equal(session_prev(&s, &err), 0);
	assert_int_equal(s.dec_t, 2);
	assert_int_equal(session_prev(&s, &err), 0);
	assert_int_equal(s.stage, STAGE_INPUT);
	session_free(&s);
}

/*
 * One walk forward (issue 25 §3): steps of one decode stage split its tokens.
 * Each step walks from its t up to the next step's; a step without t goes on
 * where the one before it began; p goes back the same way.
 */
static void test_decode_one_walk(void **state)
{
	Session s;
	char *err = NULL;
	(void)state;

	start_session(&s, LESSON(", \"decode\": true, \"mask\": \"causal\", \"steps\": [{\"stage\": \"decode\", \"t\": 0}, "
	                         "{\"stage\": \"decode\", \"t\": 2}, {\"stage\": \"decode\"}, {\"stage\": \"concat\"}]"));
	assert_int_equal(s.dec_t, 0);
	assert_int_equal(session_next(&s, &err), 0); /* token 1 belongs to step 0 */
	assert_int_equal(s.step, 0);
	assert_int_equal(s.dec_t, 1);
	assert_int_equal(session_next(&s, &err), 0); /* token 2 is step 1's */
	assert_int_equal(s.step, 1);
	assert_int_equal(s.dec_t, 2);
	assert_int_equal(session_next(&s, &err), 0); /* step 2 names no t: it begins where step 1 did, so step 1 stops */
	assert_int_equal(s.step, 2);
	assert_int_equal(s.dec_t, 2);
	assert_int_equal(session_next(&s, &err), 0);
	assert_int_equal(s.dec_t, 3);
	assert_int_equal(session_next(&s, &err), 0);
	assert_int_equal(session_next(&s, &err), 0);
	assert_int_equal(s.step, 3);
	assert_int_equal(session_prev(&s, &err), 0);
	assert_int_equal(s.step, 2);
	assert_int_equal(s.dec_t, 4);
	assert_int_equal(session_goto_step(&s, 1, &err), 0);
	assert_int_equal(s.dec_t, 2);
	assert_int_equal(session_prev(&s, &err), 0);
	assert_int_equal(s.step, 0);
	assert_int_equal(s.dec_t, 1);
	session_free(&s);
}

/* ------------------------------------------------------------ tiles */

static void test_flash_tiles(void **state)
{
	Session s;
	char *err = NULL;
	int nqb, nkb;
	/* the causal mask hides (0, 1), (0, 2), (1, 2) */
	static const int order[][2] = { { 0, 0 }, { 1, 0 }, { 1, 1 }, { 2, 0 }, { 2, 1 }, { 2, 2 } };
	(void)state;

	start_session(&s, flash_lesson);
	go(&s, "flash");
	assert_int_equal(session_tiles(&s, &nqb, &nkb), 9);
	assert_int_equal(nqb, 3);
	assert_int_equal(nkb, 3);
	for (int i = 0; i < 6; i++) {
		if (i > 0)
			assert_int_equal(session_next(&s, &err), 0);
		assert_int_equal(s.tile_q, order[i][0]);
		assert_int_equal(s.tile_k, order[i][1]);
		if (i == 1) { /* two tiles passed */
			assert_int_equal(s.nskipped, 2);
			assert_int_equal(s.skipped_q, 0);
			assert_int_equal(s.skipped_k, 1);
			char *cap = textfmt_caption(&s, 0);
			assert_non_null(strstr(cap, "Skipped 2 tiles from (0, 1)"));
			assert_non_null(strstr(cap, "= 2*2 + 2*(2 + 2) = 12 numbers, against n*m = 25"));
			free(cap);
		}
	}
	/* back through the tiles: (2, 1), (2, 0), (1, 1) */
	assert_int_equal(session_prev(&s, &err), 0);
	assert_int_equal(s.tile_k, 1);
	assert_int_equal(session_prev(&s, &err), 0);
	assert_int_equal(session_prev(&s, &err), 0);
	assert_int_equal(s.tile_q, 1);
	assert_int_equal(s.tile_k, 1);

	/* at tile (1, 1): the tile lit in the masked scores, V's rows 2-3, m/l/O's columns before and after */
	assert_int_equal(session_cell_state(&s, s.attn, AM_MASKED, 2, 2), CELL_NEW);
	assert_int_equal(session_cell_state(&s, s.attn, AM_MASKED, 3, 3), CELL_NEW);
	assert_int_equal(session_cell_state(&s, s.attn, AM_MASKED, 3, 1), CELL_PLAIN);
	assert_int_equal(session_cell_state(&s, s.attn, AM_V, 2, 0), CELL_NEW);
	assert_int_equal(session_cell_state(&s, s.attn, AM_V, 0, 0), CELL_PLAIN);
	assert_int_equal(session_cell_state(&s, s.attn, AM_FLASH_M, 2, 0), CELL_BEFORE);
	assert_int_equal(session_cell_state(&s, s.attn, AM_FLASH_L, 3, 1), CELL_AFTER);
	assert_int_equal(session_cell_state(&s, s.attn, AM_FLASH_L, 3, 2), CELL_UNSEEN);
	assert_int_equal(session_cell_state(&s, s.attn, AM_FLASH_M, 0, 2), CELL_PLAIN); /* query block 0 is done */
	assert_int_equal(session_cell_state(&s, s.attn, AM_FLASH_M, 4, 0), CELL_UNSEEN); /* block 2 not begun */
	assert_int_equal(session_cell_state(&s, s.attn, AM_FLASH_O, 2, 2), CELL_AFTER); /* d_v = 2 columns a block */
	assert_int_equal(session_cell_state(&s, s.attn, AM_FLASH_O, 2, 1), CELL_BEFORE);
	/* the output of block 1 is final after (1, 1): (1, 2) is hidden */
	assert_int_equal(session_cell_state(&s, s.attn, AM_FLASH_OUT, 2, 0), CELL_NEW);
	assert_int_equal(session_cell_state(&s, s.attn, AM_FLASH_OUT, 4, 0), CELL_UNSEEN);
	session_free(&s);
}

static void test_memory_numbers(void **state)
{
	LessonShape sh;
	(void)state;

	memset(&sh, 0, sizeof sh);
	sh.dim[DIM_DK] = 4;
	sh.dim[DIM_DV] = 3;
	sh.block_q = 2;
	sh.block_k = 5;
	assert_int_equal(stats_kv_bytes_per_token(&sh, 2), 2 * (4 + 3) * 8);
	assert_int_equal(stats_kv_bytes_per_token(&sh, 8), 8 * (4 + 3) * 8);
	assert_int_equal(stats_flash_numbers(&sh), 2 * 5 + 2 * (2 + 3));
}

/* The split stage's caption says which query heads share each key/value head. */
static void test_gqa_caption(void **state)
{
	Session s;
	(void)state;

	start_session(&s, LESSON(""));
	go(&s, "split");
	char *cap = textfmt_caption(&s, 1);
	assert_non_null(cap);
	assert_string_equal(cap, "query heads 0-1 read kv head 0.\n");
	free(cap);
	assert_int_equal(s.dec_t, -1);
	assert_int_equal(s.tile_q, -1);
	session_free(&s);
}

/* concat: every head's output beside it, each labelled with the columns it fills in concat. */
static void test_cut_concat(void **state)
{
	const LessonShape sh = heads_shape(3, 3, 2, 3);
	StagePane ps[STAGE_MAX_PANES];
	PaneCut c[16];
	const int np = stage_panes(&sh, STAGE_CONCAT, ps), n = stage_cut_panes(&sh, ps, np, 1, c, 16);
	(void)state;

	assert_int_equal(n, 4);
	for (int h = 0; h < 3; h++) {
		assert_int_equal(c[h].matrix, AM_WEIGHTED);
		assert_int_equal(c[h].head, h);
		assert_int_equal(c[h].col0, 0);   /* its own matrix, whole */
		assert_int_equal(c[h].ncols, -1);
		assert_int_equal(c[h].label0, 3 * h); /* where it lands: concat's columns 3h … 3h + 2 */
	}
	assert_int_equal(c[3].matrix, AM_CONCAT);
	assert_int_equal(c[3].label0, 0);
}

/* ------------------------------------------------------------ wrapping */

/* The one line-breaking rule: at blanks, never inside a word; CJK anywhere but before closing punctuation. */
static void test_wrap(void **state)
{
	(void)state;
	if (setlocale(LC_ALL, "C.UTF-8") == NULL) /* the widths and the punctuation are the locale's */
		skip();
	char *w = text_wrap_lines("attention weighs every value by its score", 16);
	assert_non_null(w);
	assert_string_equal(w, "attention weighs\nevery value by\nits score");
	free(w);
	w = text_wrap_lines("a\nb c", 80); /* its own line breaks kept */
	assert_string_equal(w, "a\nb c");
	free(w);
	/* 机器学习真好玩，我们学：four wide characters a line, but "，" may not start one */
	w = text_wrap_lines("机器学，真好玩", 6);
	assert_non_null(w);
	assert_string_equal(w, "机器\n学，真\n好玩");
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut_grouped),
		cmocka_unit_test(test_decode_steps),
		cmocka_unit_test(test_decode_step_t),
		cmocka_unit_test(test_decode_one_walk),
		cmocka_unit_test(test_flash_tiles),
		cmocka_unit_test(test_memory_numbers),
		cmocka_unit_test(test_gqa_caption),
		cmocka_unit_test(test_cut_concat),
		cmocka_unit_test(test_wrap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
