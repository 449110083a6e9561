#!/usr/bin/env node
// The ids the shipped models' tokenizer gives, from an implementation independent of
// src/weights/tokenizer.c and of train.py's own encoder: tokenizers.js (the npm
// package @huggingface/tokenizers). Install it in a scratch folder outside the
// repository, run train.py, then from the repository root:
//
//     mkdir -p /tmp/tok && (cd /tmp/tok && npm install @huggingface/tokenizers)
//     node assets/models/make_goldens.mjs /tmp/tok/node_modules [/tmp/attnviz-tokenizer-check.json]
//
// 1. Every document of the training corpus, as train.py encoded it (the file train.py
//    leaves in /tmp), must get the same ids from tokenizers.js: else the models were
//    trained on ids that no Hugging Face tokenizer gives, and this exits 1.
// 2. Writes assets/models/goldens.tsv: one line a string (English, Chinese, spaces, tabs,
//    newlines, <|endoftext|>): the text as printf's %b reads it (\\ \n \t \r escaped, the
//    rest as UTF-8), a tab, the ids tokenizers.js gives, space-separated. tests/t_trained.sh
//    compares them with `attnviz --tokenize TEXT --model assets/models/tiny-gpt2`.
import fs from "node:fs";
import path from "node:path";

const mods = process.argv[2];
if (!mods) {
	console.error("usage: node assets/models/make_goldens.mjs NODE_MODULES [CHECK.json]");
	process.exit(2);
}
const check = process.argv[3] || "/tmp/attnviz-tokenizer-check.json";
const { Tokenizer } = await import(path.join(mods, "@huggingface/tokenizers/dist/tokenizers.mjs"));
const HERE = path.dirname(new URL(import.meta.url).pathname);
const json = JSON.parse(fs.readFileSync(path.join(HERE, "tiny-gpt2", "tokenizer.json"), "utf8"));
for (const other of ["tiny-llama"]) {
	const p = path.join(HERE, other, "tokenizer.json");
	if (fs.existsSync(p) && fs.readFileSync(p, "utf8") !== fs.readFileSync(path.join(HERE, "tiny-gpt2", "tokenizer.json"), "utf8")) {
		console.error(`${other}/tokenizer.json differs from tiny-gpt2's`);
		process.exit(1);
	}
}
const tok = new Tokenizer(json, {});

let bad = 0, docs = 0, tokens = 0;
if (fs.existsSync(check)) {
	const c = JSON.parse(fs.readFileSync(check, "utf8"));
	c.documents.forEach((d, i) => {
		const ids = tok.encode(d).ids;
		docs++;
		tokens += ids.length;
		if (JSON.stringify(ids) !== JSON.stringify(c.ids[i])) {
			const at = ids.findIndex((x, k) => x !== c.ids[i][k]);
			console.error(`document ${i}: tokenizers.js and train.py differ at token ${at}`);
			bad++;
		}
	});
} else {
	console.error(`${check}: not there (run train.py first); the corpus is not checked`);
	bad++;
}

const strings = [
	"Hello world", "The cat sat on the mat. The cat sat on the", "A B C D A B C", "attention is all you need",
	"Self-attention mixes each token with its context.", "It's the query's turn; they're done.",
	"softmax(QKᵀ/√d_k)V", "1234567890 and 3.14", "hello   world", "  leading spaces", "trailing   ",
	"tab\there", "line one\nline two\n\nline four", "a\r\nb",
	"注意力就是你所需要的一切。注意力就是", "自注意力机制（self-attention）", "你好，世界！", "每个词都看向上下文",
	"中文 English 混合 mixed", "学习率 0.001，训练 100 步", "😀 emoji", "café naïve",
	"<|endoftext|>", "one<|endoftext|>two",
];
const esc = (t) => t.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\t/g, "\\t").replace(/\r/g, "\\r");
const lines = strings.map((text) => `${esc(text)}\t${tok.encode(text).ids.join(" ")}`);
fs.writeFileSync(path.join(HERE, "goldens.tsv"), lines.join("\n") + "\n");
const goldens = lines;
console.log(`${docs} documents (${tokens} tokens) agree with train.py's ids but ${bad}; ${goldens.length} goldens written`);
process.exit(bad ? 1 : 0);
