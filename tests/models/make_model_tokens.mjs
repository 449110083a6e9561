#!/usr/bin/env node
// The ids of a few texts through tests/models/gpt2/tokenizer.json (written by
// make_models.py), from tokenizers.js (the npm package @huggingface/tokenizers),
// an implementation independent of src/weights/tokenizer.c. Install it in a
// scratch folder outside the repository, then run from the repository root:
//
//     mkdir -p /tmp/tokgold && (cd /tmp/tokgold && npm install @huggingface/tokenizers)
//     node tests/models/make_model_tokens.mjs /tmp/tokgold/node_modules
//
// It writes tests/models/gpt2.tokens.txt: a line a text, "IDS<TAB>TEXT" with
// IDS as 1,2,3 (t_models.sh gives TEXT to --prompt and IDS to --ids, and
// wants the two dumps the same). Every text is at most 32 tokens (the model's
// n_positions).
import fs from "node:fs";
import path from "node:path";

const mods = process.argv[2];
if (!mods) {
	console.error("usage: node tests/models/make_model_tokens.mjs NODE_MODULES");
	process.exit(2);
}
const { Tokenizer } = await import(path.join(mods, "@huggingface/tokenizers/dist/tokenizers.mjs"));
const HERE = path.dirname(new URL(import.meta.url).pathname);
const tok = new Tokenizer(JSON.parse(fs.readFileSync(path.join(HERE, "gpt2", "tokenizer.json"), "utf8")), {});
const texts = [
	"The cat sat on the mat",
	"I saw a saw",
	"attention<|endoftext|>tokens",
	"caf\u00e9 \u4e2d\u6587",
	"two  spaces, 2026!",
	"unseen zebra quiz",
];
let out = "";
for (const text of texts) {
	const ids = tok.encode(text).ids;
	if (ids.length > 32 || ids.some((x) => typeof x !== "number" || x < 0 || x >= 320))
		throw new Error(`${JSON.stringify(text)}: ${ids}`);
	out += `${ids.join(",")}\t${text}\n`;
}
fs.writeFileSync(path.join(HERE, "gpt2.tokens.txt"), out);
