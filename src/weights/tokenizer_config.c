/*
 * tokenizer_config.c: tokenizer_config.json, beside a tokenizer.json, as
 * transformers applies it by default when `AutoTokenizer.from_pretrained(DIR)`
 * then `tokenizer(text)` is called: what of it changes the ids.
 *
 * transformers (v4) reads the file's "tokenizer_class". The Llama family's
 * fast tokenizers (tokenization_llama_fast.py's LlamaTokenizerFast, and
 * CodeLlama's and Gemma's, whose update_post_processor is a copy of it)
 * replace tokenizer.json's post-processor in __init__ (update_post_processor)
 * by the template
 *     single = [bos_token if add_bos_token] $A [eos_token if add_eos_token]
 * with add_bos_token true and add_eos_token false unless the file says
 * otherwise, bos_token "<s>" and eos_token "</s>" unless it names others
 * (a string, or an AddedToken {"content": …}). Any other class (GPT2Tokenizer,
 * Qwen2Tokenizer, PreTrainedTokenizerFast) keeps tokenizer.json's
 * post-processor, whatever add_bos_token says. "add_prefix_space" (not null)
 * makes LlamaTokenizerFast rebuild the tokenizer from tokenizer.model with
 * sentencepiece (from_slow): that is refused by name, not ignored.
 */
#include "weights/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/i18n.h"
#include "base/jsonread.h"
#include "base/strbuf.h"
#include "base/text.h"

#define TOK_MAX_CONFIG (16L << 20) /* tokenizer_config.json's size (a chat template may be long) */

/* The classes whose post-processor is the bos/eos template (tokenization_llama_fast.py and its copies). */
static const char *const llama_family[] = {
	"LlamaTokenizer", "LlamaTokenizerFast", "CodeLlamaTokenizer", "CodeLlamaTokenizerFast",
	"GemmaTokenizer", "GemmaTokenizerFast", NULL
};

/* "KEY": true or false (absent: def) into *out. */
static int flag(JrCtx *c, const cJSON *root, const char *key, int def, int *out)
{
	*out = def;
	return jr_key_bool(c, root, key, 0, out);
}

/* "KEY": a token's text, or {"content": TEXT} (absent: def), as its id in t (*id); a token t lacks is an error. */
static int special(JrCtx *c, const Tokenizer *t, const cJSON *root, const char *key, const char *def, int *id)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
	const char *text = def;
	size_t old = jr_path_key(c, key);

	if (cJSON_IsObject(v))
		v = cJSON_GetObjectItemCaseSensitive(v, "content");
	if (v != NULL && !cJSON_IsNull(v)) {
		if (!cJSON_IsString(v))
			return jr_fail(c, _("expected a token (a string or {\"content\": …}), got %s"), jr_got(v).s);
		text = v->valuestring;
	}
	if ((*id = tok_id(t, text)) < 0)
		return jr_fail(c, _("%s is not a token of tokenizer.json"), jr_quoted(text).s);
	jr_path_set(c, old);
	return 0;
}

/* The Llama template in place of t's post-processor: [bos] TEXT [eos]. */
static int llama_template(JrCtx *c, Tokenizer *t, const cJSON *root)
{
	int add_bos, add_eos, bos = -1, eos = -1;
	const cJSON *aps = cJSON_GetObjectItemCaseSensitive(root, "add_prefix_space");

	if (aps != NULL && !cJSON_IsNull(aps)) {
		size_t old = jr_path_key(c, "add_prefix_space");
		jr_fail(c, _("transformers rebuilds this tokenizer from tokenizer.model with sentencepiece when it is given "
		             "(from_slow), which attnviz does not read: leave it out or null"));
		jr_path_set(c, old);
		return -1;
	}
	if (flag(c, root, "add_bos_token", 1, &add_bos) != 0 || flag(c, root, "add_eos_token", 0, &add_eos) != 0 ||
	    (add_bos && special(c, t, root, "bos_token", "<s>", &bos) != 0) ||
	    (add_eos && special(c, t, root, "eos_token", "</s>", &eos) != 0))
		return -1;
	free(t->before);
	free(t->after);
	t->before = malloc(sizeof *t->before);
	t->after = malloc(sizeof *t->after);
	if (t->before == NULL || t->after == NULL)
		return jr_fail_oom(c);
	t->before[0] = bos;
	t->after[0] = eos;
	t->nbefore = add_bos;
	t->nafter = add_eos;
	return 0;
}

int tok_apply_config(Tokenizer *t, const char *path, char **err)
{
	StrBuf w = { 0 };
	cJSON *root;
	size_t len;
	char *buf, *shown = text_escape(path, "");
	const cJSON *cls;
	int r = -1;
	JrCtx c;

	*err = NULL;
	if (access(path, F_OK) != 0) {
		free(shown);
		return 0; /* no tokenizer_config.json: tokenizer.json alone */
	}
	if (shown == NULL || (buf = fileio_read_all(path, TOK_MAX_CONFIG, &len, err)) == NULL) {
		if (*err == NULL)
			*err = strdup(_("out of memory"));
		free(shown);
		return -1;
	}
	root = jr_parse(shown, buf, len, 1, "tokenizer_config.json", "{\"tokenizer_class\": …}", err);
	free(buf);
	if (root == NULL) {
		free(shown);
		return -1;
	}
	jr_ctx_init(&c, shown, &w);
	cls = cJSON_GetObjectItemCaseSensitive(root, "tokenizer_class");
	r = 0;
	for (int i = 0; cJSON_IsString(cls) && llama_family[i] != NULL; i++)
		if (strcmp(cls->valuestring, llama_family[i]) == 0) {
			r = llama_template(&c, t, root);
			break;
		}
	*err = c.err;
	free(w.s);
	cJSON_Delete(root);
	free(shown);
	return r;
}

Tokenizer *tok_load_folder(const char *path, char **err)
{
	Tokenizer *t = tok_load(path, err);
	const char *slash = strrchr(path, '/');
	char *cfg;

	if (t == NULL)
		return NULL;
	cfg = slash != NULL ? str_printf("%.*s/tokenizer_config.json", (int)(slash - path), path)
	                    : strdup("tokenizer_config.json");
	if (cfg == NULL || tok_apply_config(t, cfg, err) != 0) {
		if (*err == NULL)
			*err = strdup(_("out of memory"));
		tok_free(t);
		t = NULL;
	}
	free(cfg);
	return t;
}
