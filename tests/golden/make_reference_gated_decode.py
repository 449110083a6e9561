#!/usr/bin/python3
"""Reference numbers for gated attention decoded token by token (issue 23 §6):

    make_reference_gated_decode.py LESSON.json > LESSON.ref.json
    make_reference_gated_decode.py --all tests/golden/gated_decode

A causal decoder's step t sees what row t of the full computation sees, so
with a KV cache each decoded row equals that row (the test of a correct
cache). The rows are make_reference_gated.py's PyTorch numbers (Qwen3-Next's
gate, imported and run unchanged); this script only lays them out as the
dump's "decode" objects: a single layer's at the top (make_reference_gated.py
does it), each layer's of a block lesson at layers[i].decode (its attention
output and the layer's output row by row).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import glob
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_gated as gated  # noqa: E402


def reference(path):
    ref = gated.reference(path)
    for lay in ref.get("layers", []):
        lay["decode"] = [{"t": t, "output": [lay["attn"]["output"][t]], "layer_output": [lay["output"][t]]}
                         for t in range(ref["n"])]
    return ref


def write(path, out):
    json.dump(reference(path), out, indent=1, allow_nan=False)
    out.write("\n")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--all":
        for lesson in sorted(glob.glob(os.path.join(sys.argv[2], "*.json"))):
            if lesson.endswith(".ref.json"):
                continue
            with open(lesson[: -len(".json")] + ".ref.json", "w") as f:
                write(lesson, f)
    elif len(sys.argv) == 2:
        write(sys.argv[1], sys.stdout)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
