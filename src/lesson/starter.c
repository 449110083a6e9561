/* starter.c: the starter lesson of `attnviz --new NAME`.
 *
 * JSON has no comments, so the lesson explains itself in its own texts: its
 * summary and each step's narration say what the keys around them do and
 * where lessons/FORMAT.md ("A starter lesson") tells more. It uses the
 * keys a first lesson needs: tokens, X, the three weights, steps with a
 * focus cell, a question answered with a number and one with choices. */
#include "lesson/starter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fileio.h"
#include "base/strbuf.h"
#include "base/text.h"

static const char starter[] =
	"{\n"
	"  \"attnviz\": 1,\n"
	"  \"title\": {\"en\": \"My lesson: three words\", \"zh\": \"我的一课：三个词\"},\n"
	"  \"summary\": {\n"
	"    \"en\": \"A starter written by attnviz --new. Change the tokens, X and the weights, rewrite the steps, then run attnviz --check --strict on this file. lessons/FORMAT.md explains every key.\",\n"
	"    \"zh\": \"由 attnviz --new 生成的起步课。改掉 tokens、X 和权重，重写各步，再对这个文件运行 attnviz --check --strict。lessons/FORMAT.md 解释了每一个键。\"\n"
	"  },\n"
	"  \"tokens\": [\"the\", \"cat\", \"sat\"],\n"
	"  \"X\": [\n"
	"    [1, 0, 1],\n"
	"    [0, 1, 1],\n"
	"    [1, 1, 0]\n"
	"  ],\n"
	"  \"W_q\": {\"identity\": 3},\n"
	"  \"W_k\": {\"identity\": 3},\n"
	"  \"W_v\": [\n"
	"    [1, 0, 0],\n"
	"    [0, 2, 0],\n"
	"    [0, 0, 3]\n"
	"  ],\n"
	"  \"steps\": [\n"
	"    {\n"
	"      \"stage\": \"input\",\n"
	"      \"text\": {\n"
	"        \"en\": \"One row of X per token: three tokens of three numbers each. \\\"focus\\\" puts the cursor on a cell; here row 1, column 1.\",\n"
	"        \"zh\": \"X 的每一行对应一个词：三个词，每个三个数。\\\"focus\\\" 把光标放在一个格子上，这里是第 1 行第 1 列。\"\n"
	"      },\n"
	"      \"focus\": {\"matrix\": \"X\", \"row\": 1, \"col\": 1}\n"
	"    },\n"
	"    {\n"
	"      \"stage\": \"scores\",\n"
	"      \"text\": {\n"
	"        \"en\": \"With W_q and W_k the identity, Q = K = X, so a score is the dot product of two rows of X. The question is asked before the scores are shown.\",\n"
	"        \"zh\": \"W_q 和 W_k 都是单位矩阵，所以 Q = K = X，一个分数就是 X 的两行的点积。问题会在显示分数之前提出。\"\n"
	"      },\n"
	"      \"quiz\": {\n"
	"        \"question\": {\"en\": \"What is the score of “cat” (row 1) against “sat” (column 2)?\", \"zh\": \"cat（第 1 行）对 sat（第 2 列）的分数是多少？\"},\n"
	"        \"answer\": {\"matrix\": \"scores\", \"row\": 1, \"col\": 2},\n"
	"        \"tolerance\": 0.01,\n"
	"        \"hint\": {\"en\": \"[0, 1, 1] · [1, 1, 0]\", \"zh\": \"[0, 1, 1] · [1, 1, 0]\"}\n"
	"      }\n"
	"    },\n"
	"    {\n"
	"      \"stage\": \"softmax\",\n"
	"      \"text\": {\n"
	"        \"en\": \"Each row of scores, divided by √d_k, becomes weights that are positive and sum to 1.\",\n"
	"        \"zh\": \"每一行分数除以 √d_k 之后，变成为正且和为 1 的权重。\"\n"
	"      },\n"
	"      \"quiz\": {\n"
	"        \"question\": {\"en\": \"Which token does “the” (row 0) give the most weight?\", \"zh\": \"the（第 0 行）给哪个词的权重最大？\"},\n"
	"        \"choices\": [{\"en\": \"the\", \"zh\": \"the\"}, {\"en\": \"cat\", \"zh\": \"cat\"}, {\"en\": \"sat\", \"zh\": \"sat\"}],\n"
	"        \"answer\": 0,\n"
	"        \"hides\": \"scaled\",\n"
	"        \"hint\": {\"en\": \"The largest score in row 0 wins.\", \"zh\": \"第 0 行里分数最大的那个。\"}\n"
	"      }\n"
	"    },\n"
	"    {\n"
	"      \"stage\": \"weighted\",\n"
	"      \"text\": {\n"
	"        \"en\": \"Each output row is the weights times V: a mix of the value rows. Add steps, a mask or more heads as lessons/FORMAT.md shows.\",\n"
	"        \"zh\": \"每一行输出都是权重乘以 V：各个值向量的混合。可以照 lessons/FORMAT.md 再加步骤、掩码或更多的头。\"\n"
	"      }\n"
	"    }\n"
	"  ]\n"
	"}\n";

int starter_write(const char *name, char **path, char **err)
{
	const size_t len = strlen(name);
	struct stat st;
	char *p, *safe;

	*path = NULL;
	*err = NULL;
	p = len >= 5 && strcmp(name + len - 5, ".json") == 0 ? strdup(name) : str_printf("%s.json", name);
	if (p == NULL) {
		*err = strdup("out of memory");
		return -1;
	}
	if (lstat(p, &st) == 0 || errno != ENOENT) {
		/* a teacher's lesson is never replaced by a starter */
		safe = text_escape(p, "");
		*err = str_printf("%s: %s; choose another name", safe ? safe : "?",
		                  errno == ENOENT || errno == 0 ? "already exists, not replaced" : strerror(errno));
		free(safe);
		free(p);
		return -1;
	}
	if (fileio_write_atomic(p, starter, sizeof starter - 1, err) != 0) {
		free(p);
		return -1;
	}
	*path = p;
	return 0;
}
