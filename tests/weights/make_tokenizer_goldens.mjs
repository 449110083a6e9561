#!/usr/bin/env node
// Make the tokenizer.json files unit_tokenizer.c reads, and the ids it expects.
//
// The ids come from an implementation independent of src/weights/tokenizer.c:
// tokenizers.js (the npm package @huggingface/tokenizers), and for GPT-2 also
// gpt-3-encoder (OpenAI's encoder.py ported to JavaScript), which must agree.
// Install both in a scratch folder outside the repository, then run from the
// repository root:
//
//     mkdir -p /tmp/tokgold && (cd /tmp/tokgold && npm install @huggingface/tokenizers gpt-3-encoder)
//     node tests/weights/make_tokenizer_goldens.mjs /tmp/tokgold/node_modules
//
// It writes, in tests/weights/tokenizers/:
//   gpt2/tokenizer.json      GPT-2's, built from gpt-3-encoder's encoder.json and vocab.bpe
//                            as Hugging Face writes it (ByteLevel, merges as "a b" strings)
//   qwen/tokenizer.json      Qwen-style: NFC, Sequence[Split(Qwen's regex, Isolated),
//                            ByteLevel(use_regex false)], merges as ["a", "b"] pairs,
//                            <|endoftext|> <|im_start|> <|im_end|> special, <think> not
//   smol/tokenizer.json      SmolLM2-style: Sequence[Digits(individual), ByteLevel], the same vocabulary
//   sp/tokenizer.json        Llama-2-style SentencePiece BPE: Prepend("▁") + Replace(" ", "▁"),
//                            byte_fallback to <0xNN>, fuse_unk, <s> by TemplateProcessing
//   spmeta/tokenizer.json    the same vocabulary with the Metaspace pre-tokenizer instead
//   goldens.json             {"NAME": [{"text": …, "ids": […]}, …], …}
// The small vocabularies are trained here (plain BPE pair counting) on the
// strings below: what matters is that the files are valid and the ids are
// tokenizers.js's.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const mods = process.argv[2];
if (!mods) {
	console.error("usage: node tests/weights/make_tokenizer_goldens.mjs NODE_MODULES");
	process.exit(2);
}
const { Tokenizer } = await import(path.join(mods, "@huggingface/tokenizers/dist/tokenizers.mjs"));
const require = createRequire(import.meta.url);
const gpt3 = require(path.join(mods, "gpt-3-encoder"));
const OUT = path.join(path.dirname(new URL(import.meta.url).pathname), "tokenizers");

// ---- GPT-2's byte-to-unicode map (openai/gpt-2 encoder.py) ----
function bytesToUnicode() {
	const bs = [];
	for (let b = 33; b <= 126; b++) bs.push(b);
	for (let b = 161; b <= 172; b++) bs.push(b);
	for (let b = 174; b <= 255; b++) bs.push(b);
	const cs = bs.slice();
	let n = 0;
	for (let b = 0; b < 256; b++)
		if (!bs.includes(b)) {
			bs.push(b);
			cs.push(256 + n++);
		}
	const m = {};
	bs.forEach((b, i) => (m[b] = String.fromCodePoint(cs[i])));
	return m;
}
const B2U = bytesToUnicode();
const utf8 = new TextEncoder();
const byteLevel = (s) => Array.from(utf8.encode(s), (b) => B2U[b]).join("");

// ---- the strings ----
const base = [
	"Hello world", "Hello, world!", "The cat sat on the mat.", "I saw a saw.", "attention is all you need",
	"It's a dog's life; they're sure we'll see what I'd've done.", "DON'T SHOUT", "don't", "'s 't 're",
	"hello   world", "  leading spaces", "trailing spaces   ", " ", "  ", "\t", "\n", "\n\n", "a\tb", "a\nb",
	"a\r\nb", "tab\t\tand\tnewline\n", "line one\nline two\n\nline four", "  \n  \n", "x \n y", "a  \t b",
	"1234567890", "3.14159", "1,000,000", "2026-11-26", "version 1.0.0", "42 is the answer", "x=1+2*3",
	"0x1F600", "¹²³ ½ ¾", "٣٤٥", "١٢٣ and 123",
	"你好，世界", "我看见一把锯子。", "注意力就是你所需要的一切", "中文 English 混合 mixed", "自注意力机制（self-attention）",
	"日本語のテキスト", "한국어 텍스트", "Привет, мир", "Γειά σου κόσμε", "مرحبا بالعالم", "שלום עולם",
	"café", "naïve résumé", "Ångström", "crème brûlée", "façade", "Øresund", "straße", "İstanbul",
	"cafe\u0301", "e\u0301e\u0301", "A\u030A", "n\u0303", "\u1E9B\u0323", "ﬁ ligature", "Ｆｕｌｌｗｉｄｔｈ",
	"😀", "👍🏽", "👨‍👩‍👧‍👦 family", "🇫🇷🇨🇳", "I ❤️ tokens", "emoji 🎉 party 🎉🎉", "☃ snow", "∑ x_i² ≤ ∞",
	"<html><body>hi</body></html>", "def f(x):\n    return x * 2\n", "int main(void) { return 0; }",
	"https://huggingface.co/gpt2", "user@example.com", "#hashtag @mention", "$100 & 50% off!!!",
	"...", "!!!???", "-----", "a-b_c.d/e\\f", "\"quoted\" and 'single'", "(parens) [brackets] {braces}",
	"ALLCAPS lowercase MiXeD", "supercalifragilisticexpialidocious", "antidisestablishmentarianism",
	"▁already▁metaspace", "Ġalready", "_underscore_", "~tilde~", "a", "ab", "abc", "The", "the", " the",
	"The quick brown fox jumps over the lazy dog.", "Pack my box with five dozen liquor jugs.",
	"Attention(Q, K, V) = softmax(QKᵀ/√d_k)V", "softmax, scores, keys, queries, values",
	"\u00a0non-breaking\u00a0space", "zero\u200bwidth", "\u3000ideographic space", "mixed \u2003 em space",
	"ends with space ", "ends with newline\n", "ends with tab\t", "x", "xx", "xxx", "xxxxxxxxxxxxxxxxxxxx",
	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "          ten spaces", "\t\t\ttabs", "\n\n\n\nnewlines",
];
const special = {
	gpt2: ["<|endoftext|>", "Hello<|endoftext|>world", "a <|endoftext|> b", "<|endoftext|><|endoftext|>",
		"end.<|endoftext|>", "<|endoftext|>\nnext", "<|endoftext", "|endoftext|>"],
	qwen: ["<|im_start|>user\nHello<|im_end|>", "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
		"<|endoftext|>", "text <|im_end|> more", "<think>hmm</think>", "<think> spaced </think>", "<|im_start|>",
		"a<|im_start|>b<|im_end|>c", "<|im_start|><|im_end|>", "<think>"],
	sp: ["<s>", "</s>", "<s>Hello", "Hello</s>", "a <s> b", "<s> <s>", "Hello <unk> world", "<s>\n</s>"],
};
special.smol = special.qwen;
special.spmeta = special.sp;
// Words joined with separators: runs of spaces, tabs and newlines between words of each script.
const words = ["hello", "world", "猫", "café", "42", "😀", "naïve", "the", "注意力", "x1"];
const seps = [" ", "  ", "   ", "\t", "\n", " \n", "\n ", "\t ", "\r\n", ""];
const combos = [];
for (let i = 0; i < words.length; i++)
	for (let j = 0; j < seps.length; j++) combos.push(words[i] + seps[j] + words[(i + j + 1) % words.length]);
const strings = [...base, ...combos];

// ---- training a small BPE (for the small vocabularies) ----
function trainBPE(pieces, alphabet, nMerges) {
	// pieces: {word (array of symbols) -> count}
	const words = [...pieces.entries()].map(([w, c]) => ({ syms: Array.from(w), c }));
	const merges = [];
	const vocab = new Set(alphabet);
	for (let m = 0; m < nMerges; m++) {
		const counts = new Map();
		for (const w of words)
			for (let i = 0; i + 1 < w.syms.length; i++) {
				const k = w.syms[i] + "\u0000" + w.syms[i + 1];
				counts.set(k, (counts.get(k) || 0) + w.c);
			}
		let best = null, bc = 1;
		for (const [k, c] of counts) if (c > bc || (c === bc && best !== null && k < best)) { best = k; bc = c; }
		if (best === null) break;
		const [a, b] = best.split("\u0000");
		merges.push([a, b]);
		vocab.add(a + b);
		for (const w of words) {
			const out = [];
			for (let i = 0; i < w.syms.length; i++)
				if (i + 1 < w.syms.length && w.syms[i] === a && w.syms[i + 1] === b) { out.push(a + b); i++; }
				else out.push(w.syms[i]);
			w.syms = out;
		}
	}
	return { merges, vocab };
}
const corpus = [...base, ...combos, ...base.map((s) => s.toLowerCase())];

// ---- GPT-2 ----
function gpt2Json() {
	const encoder = JSON.parse(fs.readFileSync(path.join(mods, "gpt-3-encoder/encoder.json"), "utf8"));
	const bpe = fs.readFileSync(path.join(mods, "gpt-3-encoder/vocab.bpe"), "utf8");
	const merges = bpe.split("\n").slice(1).filter((l) => l.trim().length > 0);
	return {
		version: "1.0", truncation: null, padding: null,
		added_tokens: [{ id: 50256, content: "<|endoftext|>", single_word: false, lstrip: false, rstrip: false,
			normalized: true, special: true }],
		normalizer: null,
		pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
		post_processor: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
		decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
		model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "", end_of_word_suffix: "",
			fuse_unk: false, byte_fallback: false, vocab: encoder, merges },
	};
}

// ---- Qwen-style and SmolLM2-style byte-level BPE ----
const QWEN_RE = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
function byteLevelModel() {
	const pieces = new Map();
	const re = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
	for (const s of corpus) for (const w of s.normalize("NFC").match(re) || []) {
		const k = byteLevel(w);
		pieces.set(k, (pieces.get(k) || 0) + 1);
	}
	const alphabet = [];
	for (let b = 0; b < 256; b++) alphabet.push(B2U[b]);
	const { merges } = trainBPE(pieces, alphabet, 600);
	const vocab = {};
	let id = 0;
	for (const a of alphabet) vocab[a] = id++;
	for (const [a, b] of merges) if (!(a + b in vocab)) vocab[a + b] = id++;
	return { vocab, merges, next: id };
}
function qwenJson(bl, smol) {
	const n = bl.next;
	const added = (id, content, isSpecial) => ({ id, content, single_word: false, lstrip: false, rstrip: false,
		normalized: false, special: isSpecial });
	return {
		version: "1.0", truncation: null, padding: null,
		added_tokens: [added(n, "<|endoftext|>", true), added(n + 1, "<|im_start|>", true), added(n + 2, "<|im_end|>", true),
			added(n + 3, "<think>", false), added(n + 4, "</think>", false)],
		normalizer: smol ? null : { type: "NFC" },
		pre_tokenizer: smol
			? { type: "Sequence", pretokenizers: [{ type: "Digits", individual_digits: true },
				{ type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true }] }
			: { type: "Sequence", pretokenizers: [
				{ type: "Split", pattern: { Regex: QWEN_RE }, behavior: "Isolated", invert: false },
				{ type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false }] },
		post_processor: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
		decoder: { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false },
		model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "", end_of_word_suffix: "",
			fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab: bl.vocab,
			merges: smol ? bl.merges.map(([a, b]) => a + " " + b) : bl.merges },
	};
}

// ---- Llama-2-style SentencePiece BPE ----
function spJson(meta) {
	const pieces = new Map();
	const chars = new Map();
	for (const s of corpus)
		for (const w of s.split(" ").filter((x) => x.length)) {
			const k = "\u2581" + w;
			pieces.set(k, (pieces.get(k) || 0) + 1);
			for (const ch of k) chars.set(ch, (chars.get(ch) || 0) + 1);
		}
	// the alphabet: characters seen at least twice, so that rarer ones (emoji, most CJK) fall back to bytes
	const alphabet = [...chars.entries()].filter(([, c]) => c >= 2).map(([ch]) => ch).sort();
	const kept = new Map([...pieces.entries()].map(([w, c]) => [Array.from(w).filter((ch) => alphabet.includes(ch)).join(""), c]));
	const { merges } = trainBPE(kept, alphabet, 400);
	const vocab = { "<unk>": 0, "<s>": 1, "</s>": 2 };
	let id = 3;
	for (let b = 0; b < 256; b++) vocab["<0x" + b.toString(16).toUpperCase().padStart(2, "0") + ">"] = id++;
	for (const a of alphabet) if (!(a in vocab)) vocab[a] = id++;
	for (const [a, b] of merges) if (!(a + b in vocab)) vocab[a + b] = id++;
	const added = (i, content) => ({ id: i, content, single_word: false, lstrip: false, rstrip: false, normalized: false,
		special: true });
	return {
		version: "1.0", truncation: null, padding: null,
		added_tokens: [added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")],
		normalizer: meta ? null : { type: "Sequence", normalizers: [{ type: "Prepend", prepend: "\u2581" },
			{ type: "Replace", pattern: { String: " " }, content: "\u2581" }] },
		pre_tokenizer: meta ? { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false } : null,
		post_processor: { type: "TemplateProcessing",
			single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
			pair: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
				{ SpecialToken: { id: "<s>", type_id: 1 } }, { Sequence: { id: "B", type_id: 1 } }],
			special_tokens: { "<s>": { id: "<s>", ids: [1], tokens: ["<s>"] } } },
		decoder: { type: "Sequence", decoders: [{ type: "Replace", pattern: { String: "\u2581" }, content: " " },
			{ type: "ByteFallback" }, { type: "Fuse" }, { type: "Strip", content: " ", start: 1, stop: 0 }] },
		model: { type: "BPE", dropout: null, unk_token: "<unk>", continuing_subword_prefix: null, end_of_word_suffix: null,
			fuse_unk: true, byte_fallback: true, ignore_merges: false, vocab,
			merges: merges.map(([a, b]) => a + " " + b) },
	};
}

const bl = byteLevelModel();
const sp = spJson(false);
const tokenizers = { gpt2: gpt2Json(), qwen: qwenJson(bl, false), smol: qwenJson(bl, true), sp, spmeta: spJson(true) };
const goldens = {};
let bad = 0;
for (const [name, json] of Object.entries(tokenizers)) {
	fs.mkdirSync(path.join(OUT, name), { recursive: true });
	fs.writeFileSync(path.join(OUT, name, "tokenizer.json"), JSON.stringify(json, null, name === "gpt2" ? 0 : 1) + "\n");
	const tok = new Tokenizer(JSON.parse(fs.readFileSync(path.join(OUT, name, "tokenizer.json"), "utf8")), {});
	goldens[name] = [];
	for (const text of [...strings, ...special[name]]) {
		// tokenizers.js's Digits splits at \d, which is [0-9] in JavaScript; the Rust library (and
		// tokenizer.c) at char::is_numeric, any Unicode number (¹, ½, ٣): those strings are left out
		// of smol's goldens, and unit_tokenizer.c checks them by hand.
		if (name === "smol" && /[^\P{N}0-9]/u.test(text)) continue;
		const ids = tok.encode(text).ids;
		if (ids.some((x) => typeof x !== "number")) throw new Error(`${name}: ${JSON.stringify(text)}: ${ids}`);
		goldens[name].push({ text, ids });
		if (name === "gpt2" && !text.includes("<|endoftext|>")) {
			const other = gpt3.encode(text);
			if (JSON.stringify(other) !== JSON.stringify(ids)) {
				console.error(`gpt2: tokenizers.js and gpt-3-encoder disagree on ${JSON.stringify(text)}: ${ids} / ${other}`);
				bad++;
			}
		}
	}
}
let out = "{\n";
out += Object.entries(goldens).map(([name, list]) => ` ${JSON.stringify(name)}: [\n` +
	list.map((g) => `  {"text": ${JSON.stringify(g.text)}, "ids": ${JSON.stringify(g.ids)}}`).join(",\n") + "\n ]").join(",\n");
out += "\n}\n";
fs.writeFileSync(path.join(OUT, "goldens.json"), out);
const total = Object.values(goldens).reduce((n, l) => n + l.length, 0);
console.log(`${total} strings over ${Object.keys(goldens).length} tokenizers (${strings.length} shared); gpt-3-encoder disagreed on ${bad}`);
process.exit(bad ? 1 : 0);
