#!/usr/bin/python3
"""Independent reference numbers for a layer's own RoPE base AND scaling
(issue 23 §2 with §3: Gemma 3 scales its global layers' RoPE and turns its
local ones by rope_local_base_freq unscaled; in the new rope_parameters
layout each layer type has its own rope_type), computed with PyTorch in
float64:

    make_reference_layerrope.py --all tests/golden/layerrope   # the lessons and every NAME.ref.json
    make_reference_layerrope.py LESSON.json > LESSON.ref.json

Written from issue 23, lessons/FORMAT.md and the transformers code below,
not from the C code. The layers, their masks and the decoded steps are
make_reference_localglobal.py's (imported and unchanged: its attention()
with each layer's own mask, on make_reference_v4.py's block); each layer's
RoPE is make_reference_ropescale.py's rope() (transformers'
modeling_rope_utils.py _compute_*_parameters, the lines named there) with
that layer's settings. The lines followed for which settings a layer gets
(transformers, src/transformers/models/gemma3/):

  configuration_gemma3.py, Gemma3TextConfig.convert_rope_params_to_dict:
      default_rope_params = {"sliding_attention": {"rope_type": "default"},
                             "full_attention": {"rope_type": "default"}}
      if rope_scaling is not None:
          self.rope_parameters["full_attention"].update(rope_scaling)
      self.rope_parameters["full_attention"].setdefault("rope_theta", kwargs.pop("rope_theta", ...))
      self.rope_parameters["sliding_attention"].setdefault("rope_theta", kwargs.pop("rope_local_base_freq", ...))
  modeling_gemma3.py, Gemma3RotaryEmbedding: one inv_freq and attention_scaling per
      layer type (ROPE_INIT_FUNCTIONS[rope_type] on that type's parameters), and each
      Gemma3DecoderLayer given position_embeddings[self.attention_type].
  A lesson says the same per layer: a layer's own "rope": {"base": b, "scaling": {…}}
  is its own base and scaling (none when it gives none: Gemma 3's local layers in
  the old layout); a layer without one turns as the top level's "rope" says.

Cross-check (stderr): rope()'s own check (each turn again as complex numbers),
and make_reference_localglobal.py's (the window cell by cell, rows summing to 1).

Needs Debian's python3-torch: run with /usr/bin/python3.
"""

import json
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_reference_v4 as v4                     # noqa: E402
import make_reference_localglobal as lg            # noqa: E402  (sets v4.attention to its own)
import make_reference_ropescale as rs              # noqa: E402
from lessonfiles import lesson_json, write_lessons, write_references  # noqa: E402

torch.set_default_dtype(torch.float64)

# The RoPE settings of each base a lesson's layers turn by (each layer of these lessons has a base of its own kind).
ROPE_OF = {}


def rope_by_base(x, base):
    """v4.rope's place: x as (heads, n, d_k), turned by rs.rope with the settings of the layer whose base this is."""
    h, n, dk = x.shape
    rows = x.transpose(0, 1).reshape(n, h * dk)
    out, _, _, _ = rs.rope(rows, h, dk, ROPE_OF[base], n, list(range(n)))
    return out.view(n, h, dk).transpose(0, 1)


v4.rope = rope_by_base
_lg_read_lesson = lg.read_lesson


def read_lesson(path, override=None):
    """make_reference_localglobal.py's reading, and each layer's RoPE: its own base and scaling, or the lesson's."""
    L, s, params = _lg_read_lesson(path, override)
    J = lesson_json(path, override)
    top = J.get("rope") if isinstance(J.get("rope"), dict) else {}
    ROPE_OF.clear()
    for p, lay in zip(params, J.get("layers") or [{}]):
        own = lay.get("rope") if isinstance(lay.get("rope"), dict) else None
        cfg = {"base": float((own or top).get("base", 10000.0))}
        if (own or top).get("scaling") is not None:
            cfg["scaling"] = (own or top)["scaling"]
        if cfg["base"] in ROPE_OF and ROPE_OF[cfg["base"]] != cfg:
            raise SystemExit("%s: two layers turn by base %g with different settings" % (path, cfg["base"]))
        ROPE_OF[cfg["base"]] = cfg
        p["rope_base"] = cfg["base"]
    return L, s, params


lg.read_lesson = read_lesson
v4.read_lesson = read_lesson


def lessons(folder):
    """make_reference_localglobal.py's "rope_base_per_kind" (a local layer of base 10, window 3, then a global one,
    decoded), with the lesson's RoPE scaled (the global layer's: Gemma 3's old layout), and again with the local
    layer's own scaling beside it (the new layout's sliding_attention)."""
    with tempfile.TemporaryDirectory() as tmp:
        lg.lessons(tmp)
        with open(os.path.join(tmp, "rope_base_per_kind.json")) as f:
            base = json.load(f)
    out = {}
    a = json.loads(json.dumps(base))
    a["title"] = {"en": "Gemma 3's RoPE: the global layer scaled (YaRN), the local one by its own base unscaled",
                  "zh": "Gemma 3 的 RoPE：全局层缩放（YaRN），局部层用自己的基数、不缩放"}
    a["rope"] = {"base": 10000.0, "scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": 4}}
    out["global_scaled_local_plain"] = a
    b = json.loads(json.dumps(base))
    b["title"] = {"en": "RoPE per layer type: each layer its own base and scaling",
                  "zh": "按层类型的 RoPE：每层有自己的基数和缩放"}
    b["rope"] = {"base": 1000.0, "scaling": {"type": "linear", "factor": 4}}
    b["layers"][0]["rope"] = {"base": 10.0, "scaling": {"type": "linear", "factor": 2}}
    out["per_type_both_scaled"] = b
    write_lessons(folder, out)


def main(argv):
    if len(argv) == 3 and argv[1] == "--all":
        lessons(argv[2])
        write_references(argv[2], lg.reference)
        return 0
    return v4.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
