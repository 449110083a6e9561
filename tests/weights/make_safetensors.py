#!/usr/bin/env python3
"""Make the safetensors files unit_safetensors.c reads, and the numbers it expects.

Written from the format's specification (8-byte little-endian header length,
a JSON header, the data), with numpy doing every conversion: the reference is
independent of src/weights/safetensors.c. Run from the repository root:

    python3 tests/weights/make_safetensors.py

It writes tests/weights/good.safetensors with good.ref.json (each tensor's
dtype, shape and values as exact doubles, written with repr so they read back
bit for bit) and tests/weights/bad/*.safetensors with bad/expected.txt (a
file, a tab, and the words its error must contain).
"""
import json
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261126)


def bf16_bits(x32):
    """bfloat16 as the top 16 bits of a float32, rounded to nearest even (as torch does)."""
    u = x32.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def write(path, entries, metadata=None, order=None, raw_header=None, tail=b""):
    """entries: name -> (dtype, shape, bytes). Laid out in `order` (default: as given)."""
    header = {}
    data = b""
    for name in order or entries:
        dtype, shape, blob = entries[name]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    if metadata is not None:
        header["__metadata__"] = metadata
    h = raw_header if raw_header is not None else json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data + tail)
    return header


def main():
    a = rng.standard_normal((2, 3)).astype(np.float32)
    b = (rng.standard_normal(4) * 100).astype(np.float16)
    b[3] = np.float16(6.1e-5)                      # a subnormal half
    c32 = rng.standard_normal((2, 2)).astype(np.float32)
    c = bf16_bits(c32)
    d = rng.standard_normal(3)
    e = np.array([-(2 ** 40), 7], dtype=np.int64)
    s = np.array(3.25, dtype=np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)  # a Linear's weight: out × in
    entries = {
        "a": ("F32", a.shape, a.astype("<f4").tobytes()),
        "b.half": ("F16", b.shape, b.astype("<f2").tobytes()),
        "c.bf16": ("BF16", c.shape, c.astype("<u2").tobytes()),
        "d.f64": ("F64", d.shape, d.astype("<f8").tobytes()),
        "e.i64": ("I64", e.shape, e.astype("<i8").tobytes()),
        "scalar": ("F32", (), s.astype("<f4").tobytes()),
        "empty": ("F32", (0, 4), b""),
        "layer.0.weight": ("F32", w.shape, w.astype("<f4").tobytes()),
    }
    # the data in another order than the names'
    write(os.path.join(HERE, "good.safetensors"), entries, metadata={"format": "pt"},
          order=["layer.0.weight", "d.f64", "a", "empty", "scalar", "c.bf16", "e.i64", "b.half"])
    ref = {}
    values = {"a": a.astype(np.float64), "b.half": b.astype(np.float64), "c.bf16": bf16_values(c),
              "d.f64": d, "e.i64": e.astype(np.float64), "scalar": s.astype(np.float64),
              "empty": np.zeros((0, 4)), "layer.0.weight": w.astype(np.float64)}
    for name, (dtype, shape, _) in entries.items():
        ref[name] = {"dtype": dtype, "shape": list(shape), "values": [repr(float(x)) for x in values[name].ravel()]}
    with open(os.path.join(HERE, "good.ref.json"), "w") as f:
        json.dump(ref, f, indent=1, sort_keys=True)
        f.write("\n")

    bad = os.path.join(HERE, "bad")
    os.makedirs(bad, exist_ok=True)
    expected = []

    def case(name, words, **kw):
        write(os.path.join(bad, name + ".safetensors"), **kw)
        expected.append(f"{name}.safetensors\t{words}")

    one = {"w": ("F32", (2,), np.ones(2, "<f4").tobytes())}
    with open(os.path.join(bad, "short.safetensors"), "wb") as f:
        f.write(b"\x10\x00\x00")
    expected.append("short.safetensors\ttoo short for a safetensors file")
    case("cut", "past the end of the file", entries=one,
         raw_header=b'{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}' + b" " * 4000)
    with open(os.path.join(bad, "cut.safetensors"), "r+b") as f:
        f.truncate(100)
    with open(os.path.join(bad, "huge.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", 1 << 40) + b"{}")
    expected.append("huge.safetensors\tover the limit of")
    case("syntax", "JSON syntax error", entries=one, raw_header=b'{"w": {"dtype": "F32",}}')
    case("array", "not a JSON object of tensors", entries=one, raw_header=b"[1, 2]")
    case("dtype", '"w".dtype: expected a dtype', entries={"w": ("F31", (2,), b"\0" * 8)})
    case("shape", '"w".shape[1]: expected a size from 0 to 10^15', entries={"w": ("F32", (2, -1), b"")})
    case("size", '"w".data_offsets: [0, 12] holds 12 bytes, but shape [4] of F32 needs 16',
         entries={"w": ("F32", (4,), b"\0" * 12)})
    case("offsets", '"w".data_offsets[1]: expected an offset inside the data', entries=one,
         raw_header=b'{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 80]}}')
    case("key", 'unknown key "shpae"', entries=one,
         raw_header=b'{"w": {"dtype": "F32", "shpae": [2], "shape": [2], "data_offsets": [0, 8]}}')
    case("missing", 'no "data_offsets"', entries=one, raw_header=b'{"w": {"dtype": "F32", "shape": [2]}}')
    case("overlap", "overlaps tensor", entries=one,
         raw_header=b'{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, '
                    b'"v": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}')
    case("hole", "bytes [8, 12] of the data belong to no tensor", entries=one, tail=b"\0" * 4)
    case("meta", '"__metadata__"."format": expected a string', entries=one,
         raw_header=b'{"__metadata__": {"format": 1}, "w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}')
    # a metadata key with a control character (found by make fuzz-safetensors): named escaped, never raw
    case("metactl", r'"__metadata__"."f\x02rmat": expected a string', entries=one,
         raw_header=b'{"__metadata__": {"f\x02rmat": 1}, "w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}')
    case("escape", r'tensor "\x1b[31mred" has shape', entries={"\x1b[31mred": ("F32", (2, 2, 1), b"\0" * 16)})
    with open(os.path.join(bad, "expected.txt"), "w") as f:
        f.write("\n".join(expected) + "\n")


if __name__ == "__main__":
    main()
