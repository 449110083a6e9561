#!/usr/bin/env python3
"""make_lesson_ref.py: the reference numbers of the lessons that narrate a
shipped model, for tests/t_golden.sh:

  lessons/realmodel.json  "model": {"path": "tiny-gpt2", "prompt": "The cat sat. The cat sat"}
  lessons/induction.json  "model": {"path": "induction", "prompt": "A B C D A B C"}
  lessons/heads.json      "model": {"path": "sentences", "prompt": "There was a cat. Anna had a mat. The cat sat on the mat."}
  lessons/sink.json       the same

The numbers are not computed again: they are the float64 PyTorch references
written for each shipped model on the same prompt (tests/models/tiny-gpt2.ref.json
by tests/models/make_models.py, tests/models/induction.ref.json by
assets/models/train_induction.py, tests/models/sentences.ref.json by
assets/models/train_sentences.py: the prompt of its "prompt_text" that is the
lesson's, whose "ids" are checked here against IDS). This script copies that
prompt's stages (X, every layer, final_norm, logits, ids) into
tests/golden/lessons/NAME.ref.json, which t_golden.sh compares with
`attnviz --dump lessons/NAME.json` to 1e-9 relative.

Run from the repository root: /usr/bin/python3 tests/models/make_lesson_ref.py
"""
import json

LESSONS = [
    # lesson, its model's reference, the ids of its prompt there
    ("realmodel", "tests/models/tiny-gpt2.ref.json", "tiny-gpt2", "The cat sat. The cat sat",
     [454, 277, 274, 261, 274, 13, 589, 277, 274, 261, 274]),
    ("induction", "tests/models/induction.ref.json", "induction", "A B C D A B C",
     [65, 66, 67, 68, 65, 66, 67]),
]
SENTENCES = ("tests/models/sentences.ref.json", "sentences", "There was a cat. Anna had a mat. The cat sat on the mat.",
             [1, 117, 453, 136, 182, 65, 73, 241, 136, 310, 65, 114, 182, 380, 335, 412, 310, 65])
LESSONS += [("heads",) + SENTENCES, ("sink",) + SENTENCES]

for name, ref_path, model, text, ids in LESSONS:
    with open(f"lessons/{name}.json", encoding="utf-8") as f:
        lesson = json.load(f)
    with open(ref_path, encoding="utf-8") as f:
        ref = json.load(f)
    assert lesson["model"] == {"path": model, "prompt": text}, lesson["model"]
    prompt = dict(ref["prompts"][ref["prompt_text"].index(text)])
    prompt.pop("head_scores", None)     # a model's dump has them, a lesson's does not
    assert prompt["ids"] == ids, prompt["ids"]
    out = f"tests/golden/lessons/{name}.ref.json"
    with open(out, "w", encoding="utf-8") as f:
        json.dump(prompt, f, sort_keys=True, separators=(",", ":"))
        f.write("\n")
    print("wrote", out)
