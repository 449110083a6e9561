#!/usr/bin/env python3
"""make_lesson_ref.py: the reference numbers of lessons/realmodel.json, a
lesson on the shipped tiny-gpt2 ("model": {"path": "tiny-gpt2", "prompt":
"The cat sat. The cat sat"}), for tests/t_golden.sh.

The numbers are not computed again: they are the float64 PyTorch reference
that tests/models/make_models.py wrote for tiny-gpt2 on the same prompt
(tests/models/tiny-gpt2.ref.json: the prompt of its "prompt_text" that is
the lesson's, whose "ids" are checked here against IDS). This script copies that prompt's
stages (X, every layer, final_norm, logits, ids) into
tests/golden/lessons/realmodel.ref.json, which t_golden.sh compares with
`attnviz --dump lessons/realmodel.json` to 1e-9 relative.

Run from the repository root: /usr/bin/python3 tests/models/make_lesson_ref.py
"""
import json

REF = "tests/models/tiny-gpt2.ref.json"
OUT = "tests/golden/lessons/realmodel.ref.json"
LESSON = "lessons/realmodel.json"
IDS = [454, 277, 274, 261, 274, 13, 589, 277, 274, 261, 274]  # "The cat sat. The cat sat" (tiny-gpt2.ref.json)

with open(LESSON, encoding="utf-8") as f:
    lesson = json.load(f)
with open(REF, encoding="utf-8") as f:
    ref = json.load(f)
assert lesson["model"] == {"path": "tiny-gpt2", "prompt": "The cat sat. The cat sat"}, lesson["model"]
i = ref["prompt_text"].index(lesson["model"]["prompt"])
prompt = ref["prompts"][i]
assert prompt["ids"] == IDS, prompt["ids"]
with open(OUT, "w", encoding="utf-8") as f:
    json.dump(prompt, f, sort_keys=True, separators=(",", ":"))
    f.write("\n")
print("wrote", OUT)
