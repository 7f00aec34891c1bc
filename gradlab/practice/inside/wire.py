"""The result channel between the submission's process and gradlab: plain data, no object graph.

    b"GLR1" | header length, 4 bytes little-endian | the header, UTF-8 JSON | each tensor's bytes, in order

The header is {"result": TREE, "tensors": [{"dtype": "float32", "shape": [2, 3]}, ...]}: TREE is JSON (dicts with
text keys, lists, text, numbers, booleans, null) where a tensor is {"$tensor": i}, each i used exactly once. Tensor i's
bytes are its values, little-endian, row-major: exactly numel × itemsize of them, laid end to end after the header.

Reading it (decode, in gradlab's process) costs time linear in its size and nothing else: JSON's strings hash with
a random seed (no colliding keys), numbers are bounded by int_max_str_digits, nesting by MOST_DEPTH, the header by
MOST_HEADER, every tensor's size by the bytes that are actually there. torch.load of a pickle, even weights_only, can
be made quadratic (400,000 int keys that hash alike) and hold gradlab for hours.

Both ends run on one machine, so the bytes are in its order: little-endian on every machine the isolated modes run on
(x86_64, aarch64: gradlab/kit/seccomp.py). The child (gradlab/practice/inside/child.py) writes with encode(); this file
is
bound into the sandbox, so it imports nothing but the standard library at module level (torch lazily, where a tensor is
made or read).
"""

from __future__ import annotations

import json
import math
import struct
import sys

MAGIC = b"GLR1"
MOST_HEADER = 4 << 20  # bytes of JSON
MOST_TENSORS = 20_000  # a result holds tens (decoding 60,000 took 2.6 s on a busy machine)
MOST_DEPTH = 16  # nesting of the tree (the checks after decoding allow less)
MOST_DIMS = 8
DTYPES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "uint8": 1, "int8": 1, "int16": 2, "int32": 4,
          "int64": 8, "bool": 1}  # name: bytes per value


class Malformed(Exception):
    """The bytes are not a result in this format: the message says what is wrong, in one line."""


# ---------------------------------------------------------------------------------------------------------- encode

def encode(result) -> bytes:
    """RESULT (dicts with text keys, lists, tuples, text, numbers, booleans, None and real CPU-able tensors) as bytes.
    Raises TypeError naming the first value of another kind."""
    tensors: list[dict] = []
    chunks: list[bytes] = []
    tree = _tree(result, tensors, chunks, 0)
    header = json.dumps({"result": tree, "tensors": tensors}, separators=(",", ":")).encode()
    return MAGIC + struct.pack("<I", len(header)) + header + b"".join(chunks)


def _tree(value, tensors: list[dict], chunks: list[bytes], depth: int):
    if depth > MOST_DEPTH:
        raise TypeError("a value nested too deep")
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, list | tuple):
        return [_tree(v, tensors, chunks, depth + 1) for v in value]
    if isinstance(value, dict):
        if not all(type(k) is str for k in value):
            raise TypeError("a dict whose keys are not all text")
        return {k: _tree(v, tensors, chunks, depth + 1) for k, v in value.items()}
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        if dtype not in DTYPES or value.layout != torch.strided:
            raise TypeError(f"a {value.layout} {dtype} tensor (only real-valued dense tensors can be sent)")
        flat = value.detach().to("cpu").reshape(-1).contiguous()
        raw = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
        tensors.append({"dtype": dtype, "shape": list(value.shape)})
        chunks.append(raw)
        return {"$tensor": len(tensors) - 1}
    raise TypeError(f"a {type(value).__name__}")


# ---------------------------------------------------------------------------------------------------------- decode

def decode(data: bytes):
    """The result DATA holds, its tensors plain CPU tensors owning their memory. Raises Malformed."""
    if data[:4] != MAGIC or len(data) < 8:
        raise Malformed("are not a gradlab result (they do not start with its mark)")
    (size,) = struct.unpack("<I", data[4:8])
    if size > MOST_HEADER or 8 + size > len(data):
        raise Malformed(f"declare a header of {size:,} bytes (at most {MOST_HEADER:,}, within the {len(data):,} sent)")
    try:
        header = json.loads(data[8:8 + size].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise Malformed(f"have a header that is not JSON ({type(e).__name__})") from None
    if type(header) is not dict or set(header) != {"result", "tensors"} or type(header["tensors"]) is not list:
        raise Malformed("have a header that is not {\"result\", \"tensors\"}")
    tensors = _tensors(header["tensors"], memoryview(data)[8 + size:])
    used: set[int] = set()
    result = _restore(header["result"], tensors, used, 0)
    if len(used) != len(tensors):
        raise Malformed(f"declare {len(tensors)} tensors and use {len(used)}")
    return result


def _tensors(specs: list, data: memoryview) -> list:
    import torch

    if len(specs) > MOST_TENSORS:
        raise Malformed(f"declare {len(specs):,} tensors (at most {MOST_TENSORS:,})")
    shapes = []
    for i, spec in enumerate(specs):
        ok = type(spec) is dict and set(spec) == {"dtype", "shape"} and spec["dtype"] in DTYPES
        shape = spec.get("shape") if ok else None
        if not (type(shape) is list and len(shape) <= MOST_DIMS and all(type(n) is int and 0 <= n < 1 << 40
                                                                         for n in shape)):
            raise Malformed(f"declare tensor {i} as {str(spec)[:80]}: not a dtype and a shape")
        shapes.append((spec["dtype"], shape, math.prod(shape) * DTYPES[spec["dtype"]]))
    if sum(nbytes for *_, nbytes in shapes) != len(data):
        raise Malformed(f"declare {sum(n for *_, n in shapes):,} bytes of tensors and hold {len(data):,}")
    out, at = [], 0
    for dtype, shape, nbytes in shapes:
        raw = bytearray(data[at:at + nbytes])  # a copy of its own: the tensor's storage is exactly its values
        at += nbytes
        kind = getattr(torch, dtype)
        out.append(torch.frombuffer(raw, dtype=kind).reshape(shape) if nbytes else torch.zeros(shape, dtype=kind))
    return out


def _restore(node, tensors: list, used: set[int], depth: int):
    if depth > MOST_DEPTH:
        raise Malformed(f"are nested deeper than {MOST_DEPTH}")
    if type(node) is list:
        return [_restore(v, tensors, used, depth + 1) for v in node]
    if type(node) is not dict:
        return node
    if set(node) == {"$tensor"}:
        i = node["$tensor"]
        if type(i) is not int or not 0 <= i < len(tensors) or i in used:
            raise Malformed(f"refer to tensor {str(i)[:20]}, which is not there or was used already")
        used.add(i)
        return tensors[i]
    return {k: _restore(v, tensors, used, depth + 1) for k, v in node.items()}
