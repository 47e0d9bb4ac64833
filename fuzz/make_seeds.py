#!/usr/bin/env python3
"""Writes the small hand-made seed files of the fuzz targets (standard library only).

Usage: python3 fuzz/make_seeds.py   (from the repository root)

Output: crates/glshift/tests/fuzz_seeds/<target>/, committed and also run through the
parsers by crates/glshift/tests/fuzz_regressions.rs.
"""

import os
import struct
import zlib

ROOT = os.path.join("crates", "glshift", "tests", "fuzz_seeds")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---------- .npy ----------
def npy(descr, shape, payload, fortran=False, version=1):
    shape_txt = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
    header = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape_txt}, }}"
    len_size = 2 if version == 1 else 4
    total = 6 + 2 + len_size + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    fmt = "<H" if version == 1 else "<I"
    return (
        b"\x93NUMPY"
        + bytes([version, 0])
        + struct.pack(fmt, len(header))
        + header.encode()
        + payload
    )


put("npy_reader", "f4_c_3x2.npy", npy("<f4", (3, 2), struct.pack("<6f", 0, 1, 10, 11, 20, 21)))
put(
    "npy_reader",
    "f8_fortran_2x3.npy",
    npy("<f8", (2, 3), struct.pack("<6d", 0, 10, 1, 11, 2, 12), fortran=True),
)
put("npy_reader", "i8_labels_4.npy", npy("<i8", (4,), struct.pack("<4q", 0, 1, 2, 1)))
put("npy_reader", "u1_2x2x1x1.npy", npy("|u1", (2, 2, 1, 1), bytes([1, 2, 3, 4])))
put(
    "npy_reader",
    "f4_big_endian_2x2_v2.npy",
    npy(">f4", (2, 2), struct.pack(">4f", 1.5, -2, 3, 4), version=2),
)
put("npy_reader", "f8_labels_column_3x1.npy", npy("<f8", (3, 1), struct.pack("<3d", 2, 0, 1)))


# ---------- MATLAB v5 .mat ----------
CLASS = {
    "double": (6, 9, "d"),
    "single": (7, 7, "f"),
    "uint8": (9, 2, "B"),
    "int16": (10, 3, "h"),
    "char": (4, 4, "H"),
}


def element(e, ty, data, small=False):
    if small and len(data) <= 4:
        return struct.pack(e + "I", (len(data) << 16) | ty) + data + b"\0" * (4 - len(data))
    out = struct.pack(e + "II", ty, len(data)) + data
    return out + b"\0" * ((8 - len(out) % 8) % 8)


def matrix(e, name, dims, cls, values, small_name=False):
    class_id, data_type, fmt = CLASS[cls]
    body = element(e, 6, struct.pack(e + "II", class_id, 0))
    body += element(e, 5, struct.pack(e + f"{len(dims)}i", *dims))
    body += element(e, 1, name.encode(), small=small_name)
    body += element(e, data_type, struct.pack(e + f"{len(values)}{fmt}", *values))
    return element(e, 14, body)


def mat(variables, big_endian=False, compress=False):
    e = ">" if big_endian else "<"
    text = b"MATLAB 5.0 MAT-file, written by fuzz/make_seeds.py".ljust(116, b" ")
    out = text + b"\0" * 8 + struct.pack(e + "H", 0x0100) + (b"MI" if big_endian else b"IM")
    for v in variables:
        m = matrix(e, *v)
        if compress:
            z = zlib.compress(m)
            out += struct.pack(e + "II", 15, len(z)) + z
        else:
            out += m
    return out


# MATLAB stores column-major: X below is the 3x2 matrix [[1, 4], [2, 5], [3, 6]].
put(
    "mat_reader",
    "X_double_Y_double.mat",
    mat([("X", [3, 2], "double", [1, 2, 3, 4, 5, 6]), ("Y", [3, 1], "double", [1, 2, 1])]),
)
put(
    "mat_reader",
    "fts_uint8_labels_compressed.mat",
    mat(
        [("fts", [2, 3], "uint8", [1, 2, 3, 4, 5, 6]), ("labels", [1, 2], "uint8", [0, 1])],
        compress=True,
    ),
)
put(
    "mat_reader",
    "feas_single_transposed_big_endian.mat",
    mat(
        [("feas", [2, 3], "single", [1, 2, 3, 4, 5, 6]), ("label", [1, 3], "int16", [1, 2, 3])],
        big_endian=True,
    ),
)
put(
    "mat_reader",
    "suffix_features_with_char_and_small_name.mat",
    mat(
        [
            ("note", [1, 2], "char", [104, 105]),
            ("a_features", [2, 2], "double", [0.5, 1.5, 2.5, 3.5]),
            ("y", [2, 1], "double", [0, 1], True),
        ]
    ),
)

# ---------- CSV ----------
put("csv_reader", "label_last.csv", b"f0,f1,label\n1,2,0\n3.5,-4e2,1\n")
put("csv_reader", "unlabelled_crlf_quoted.csv", b'"a","b c"\r\n1,2\r\n" 3 ",4\r\n')
put(
    "csv_reader", "pandas_numbered_header_label_first.csv", b"label,0,1,2\n2,0.1,0.2,0.3\n0,1,1,1\n"
)
put("csv_reader", "float_labels_blank_lines.csv", b"x, label\n\n1e-3, 1.0\n-0, 3\n\n")
