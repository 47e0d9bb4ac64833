#!/usr/bin/env python3
"""Writes the hand-made seed files of the extraction fuzz targets (standard library only).

Usage: python3 fuzz/make_extract_seeds.py   (from the repository root)

Output: crates/glshift-extract/tests/fuzz_seeds/{pth_reader,image_path}/, committed and replayed
by crates/glshift-extract/tests/fuzz_regressions.rs. The `.pth` seeds follow the legacy
(non-zip) `torch.save` layout that crates/glshift-extract/src/pth.rs reads, written without
torch: a stand-in module `torch._utils` and storage classes give pickle the same GLOBAL names.
"""

import collections
import io
import os
import pickle
import struct
import sys
import types
import zlib

ROOT = os.path.join("crates", "glshift-extract", "tests", "fuzz_seeds")


def put(target, name, data, root=ROOT):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---------- legacy torch.save ----------
torch = types.ModuleType("torch")
utils = types.ModuleType("torch._utils")
sys.modules["torch"], sys.modules["torch._utils"] = torch, utils


class FloatStorage:
    pass


class LongStorage:
    pass


FloatStorage.__module__ = LongStorage.__module__ = "torch"
torch.FloatStorage, torch.LongStorage = FloatStorage, LongStorage


def _rebuild_tensor_v2(*args):
    raise RuntimeError("only pickled, never called")


_rebuild_tensor_v2.__module__ = "torch._utils"
utils._rebuild_tensor_v2 = _rebuild_tensor_v2


class Tensor:
    """A tensor record: storage key, dtype class, offset, shape, stride."""

    def __init__(self, key, cls, numel, offset, shape, stride):
        self.key, self.cls, self.numel = key, cls, numel
        self.args = (offset, tuple(shape), tuple(stride), False, collections.OrderedDict())

    def __reduce__(self):
        return (_rebuild_tensor_v2, (Storage(self),) + self.args)


class Storage:
    def __init__(self, t):
        self.t = t


class Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, Storage):
            t = obj.t
            return ("storage", t.cls, t.key, "cpu", t.numel)
        return None


def dumps(obj):
    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue()


def torch_save(entries, storages):
    """entries: name -> Tensor; storages: key -> (format char, values), written in key order."""
    out = dumps(0x1950A86A20F9469CFC6C) + dumps(1001)
    out += dumps(
        {
            "protocol_version": 1001,
            "little_endian": True,
            "type_sizes": {"short": 2, "int": 4, "long": 4},
        }
    )
    out += dumps(collections.OrderedDict(entries))
    keys = list(storages)
    out += dumps(keys)
    for k in keys:
        fmt, values = storages[k]
        out += struct.pack("<Q", len(values)) + struct.pack(f"<{len(values)}{fmt}", *values)
    return out


put(
    "pth_reader",
    "two_tensors.pth",
    torch_save(
        {
            "conv.weight": Tensor("0", FloatStorage, 6, 0, (2, 3), (1, 2)),  # stored transposed
            "bn.running_mean": Tensor("1", FloatStorage, 3, 0, (3,), (1,)),
            "bn.num_batches_tracked": Tensor("2", LongStorage, 1, 0, (), ()),
        },
        {"0": ("f", [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]), "1": ("f", [0.5, -0.5, 2.0]), "2": ("q", [7])},
    ),
)
put(
    "pth_reader",
    "offset_view.pth",
    torch_save(
        {"w": Tensor("0", FloatStorage, 8, 2, (2, 2), (3, 1))},
        {"0": ("f", [float(i) for i in range(8)])},
    ),
)


# ---------- PNG ----------
def png(width, height, color_type, pixels):
    """color_type 0 grey, 2 RGB, 6 RGBA; pixels: bytes per row without the filter byte."""

    def chunk(tag, data):
        return (
            struct.pack(">I", len(data))
            + tag
            + data
            + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
        )

    raw = b"".join(b"\x00" + row for row in pixels)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


put(
    "image_path",
    "rgb_8x6.png",
    png(
        8,
        6,
        2,
        [bytes(v for x in range(8) for v in (x * 30, y * 40, (x + y) * 15)) for y in range(6)],
    ),
)
put(
    "image_path",
    "grey_5x7.png",
    png(5, 7, 0, [bytes((x * 50 + y) % 256 for x in range(5)) for y in range(7)]),
)
put(
    "image_path",
    "rgba_4x4.png",
    png(4, 4, 6, [bytes(v for x in range(4) for v in (x * 60, y * 60, 99, 128)) for y in range(4)]),
)


# ---------- hostile inputs (crafted headers, sizes and nesting), kept as regressions ----------
REG = os.path.join("crates", "glshift-extract", "tests", "fuzz_regressions")


def put_reg(target, name, data):
    put(target, name, data, root=REG)


HEAD = dumps(0x1950A86A20F9469CFC6C) + dumps(1001) + dumps({})
# None inside 200 000 one-element tuples: recursion in drop/compare/print overflows the stack.
put_reg("pth_reader", "deep_nesting.pth", HEAD + b"\x80\x02N" + b"\x85" * 200_000 + b".")
# PUT 0, then 64 x (GET 0, GET 0, TUPLE2, PUT 0): each round doubles the value if copied.
put_reg(
    "pth_reader", "memo_doubling.pth", HEAD + b"\x80\x02Nq\x00" + b"h\x00h\x00\x86q\x00" * 64 + b"."
)
# A view of 2^20 x 2^20 elements with stride 0 on a one-element storage (4 TiB if gathered).
put_reg(
    "pth_reader",
    "broadcast_view.pth",
    torch_save(
        {"w": Tensor("0", FloatStorage, 1, 0, (1 << 20, 1 << 20), (0, 0))}, {"0": ("f", [1.0])}
    ),
)
# A view whose shape product wraps around 2^64 (to 0) while its last index is huge.
put_reg(
    "pth_reader",
    "wrapping_view.pth",
    torch_save(
        {"w": Tensor("0", FloatStorage, 4, 0, (1 << 32, 1 << 32, 2), (1, 1, 1))},
        {"0": ("f", [1.0] * 4)},
    ),
)
# 1 000 tensors all viewing one 4 096-element storage (1 000 x the storage if gathered).
put_reg(
    "pth_reader",
    "shared_storage.pth",
    torch_save(
        {f"w{i}": Tensor("0", FloatStorage, 4096, 0, (4096,), (1,)) for i in range(1000)},
        {"0": ("f", [0.0] * 4096)},
    ),
)
# A valid grey PNG of 1 x 16 000 pixels: the resize to a 297-pixel short side is 4.75 M long.
put_reg("image_path", "sliver_1x16000.png", png(1, 16000, 0, [b"\x80"] * 16000))
# A PNG whose header claims 16 384 x 16 384 RGB pixels (805 MB) with a tiny compressed body.
put_reg("image_path", "huge_header.png", png(16384, 16384, 2, [b"\x00" * 3]))
