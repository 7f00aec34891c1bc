"""The result channel between the submission's process and gradlab: plain data, no object graph, in safetensors'
format (https://huggingface.co/docs/safetensors: a maintained, fuzzed reader of "a JSON header and raw tensor bytes").

    header length, 8 bytes little-endian | the header, UTF-8 JSON | the tensors' bytes

The header names tensors "0" … "n-1" ({"dtype": "F32", "shape": [2, 3], "data_offsets": [start, end]}) and holds
{"__metadata__": {"gradlab": TREE}}, TREE being JSON text (dicts with text keys, lists, text, numbers, booleans, null)
where a tensor is {"$tensor": i}, each i used exactly once. Tensor i's bytes are its values, little-endian, row-major.

Reading it (decode, in gradlab's process) costs time linear in its size and nothing else. gradlab reads the header
first, with its own bounds: at most MOST_HEADER bytes, MOST_TENSORS tensors named "0" … "n-1" of DTYPES with at most
MOST_DIMS dimensions, nesting by MOST_DEPTH, numbers by int_max_str_digits (JSON's strings hash with a random seed: no
colliding keys). Only then does safetensors' reader check every tensor's offsets and size against the bytes actually
there (it refuses a tensor declaring 10¹² values in 4 bytes, overlapping or uncovered bytes, a header length of 2⁶³).
Measured on 2026-11-28 (safetensors 0.8.0 and 0.4.5): its reader alone takes 9.1 s and 1.4 GB for a header of 1,000,000
tensors (57 MB; it allows 100 MB), hence gradlab's bounds first. torch.load of a pickle, even weights_only, can be made
quadratic (400,000 int keys that hash alike) and hold gradlab for hours.

Both ends run on one machine, so the bytes are in its order: little-endian on every machine the isolated modes run on
(x86_64, aarch64: gradlab/kit/seccomp.py). The child (gradlab/practice/inside/child.py) writes with encode(); this file
is bound into the sandbox, so it imports nothing but the standard library at module level (safetensors and torch
lazily, where a tensor is sent or read).
"""

from __future__ import annotations

import json
import struct
import sys

KEY = "gradlab"  # the metadata entry holding the tree
MOST_HEADER = 4 << 20  # bytes of JSON
MOST_TENSORS = 20_000  # a result holds tens (decoding 20,000 of one value each takes 0.4 s)
MOST_DEPTH = 16  # nesting of the tree (the checks after decoding allow less)
MOST_DIMS = 8
DTYPES = {"float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64", "uint8": "U8", "int8": "I8",
          "int16": "I16", "int32": "I32", "int64": "I64", "bool": "BOOL"}  # torch's name: safetensors' name
TORCH_NAMES = {short: name for name, short in DTYPES.items()}


class Malformed(Exception):
    """The bytes are not a result in this format: the message says what is wrong, in one line."""


# ---------------------------------------------------------------------------------------------------------- encode

def encode(result) -> bytes:
    """RESULT (dicts with text keys, lists, tuples, text, numbers, booleans, None and real CPU-able tensors) as bytes.
    Raises TypeError naming the first value of another kind."""
    tensors: list = []
    tree = _tree(result, tensors, 0)
    from safetensors.torch import save

    # each tensor a copy of its own values: safetensors refuses views and tensors that share memory
    return save({str(i): t for i, t in enumerate(tensors)},
                metadata={KEY: json.dumps(tree, separators=(",", ":"))})


def _tree(value, tensors: list, depth: int):
    if depth > MOST_DEPTH:
        raise TypeError("a value nested too deep")
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, list | tuple):
        return [_tree(v, tensors, depth + 1) for v in value]
    if isinstance(value, dict):
        if not all(type(k) is str for k in value):
            raise TypeError("a dict whose keys are not all text")
        return {k: _tree(v, tensors, depth + 1) for k, v in value.items()}
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        if dtype not in DTYPES or value.layout != torch.strided:
            raise TypeError(f"a {value.layout} {dtype} tensor (only real-valued dense tensors can be sent)")
        tensors.append(value.detach().to("cpu").clone(memory_format=torch.contiguous_format))
        return {"$tensor": len(tensors) - 1}
    raise TypeError(f"a {type(value).__name__}")


# ---------------------------------------------------------------------------------------------------------- decode

def decode(data: bytes):
    """The result DATA holds, its tensors plain CPU tensors owning their memory. Raises Malformed."""
    size = struct.unpack("<Q", data[:8])[0] if len(data) >= 8 else -1
    if not 2 <= size <= MOST_HEADER or 8 + size > len(data):
        raise Malformed(f"are not a gradlab result (they declare a header of {size:,} bytes: at most "
                        f"{MOST_HEADER:,}, within the {len(data):,} sent)")
    header = _json(data[8:8 + size], "header")
    meta = header.pop("__metadata__", None) if type(header) is dict else None
    if type(meta) is not dict or set(meta) != {KEY} or type(meta[KEY]) is not str:
        raise Malformed("are not a gradlab result (their header lacks its tree)")
    _check_specs(header)
    tensors = _tensors(bytes(data), len(header))
    used: set[int] = set()
    result = _restore(_json(meta[KEY], "tree"), tensors, used, 0)
    if len(used) != len(tensors):
        raise Malformed(f"declare {len(tensors)} tensors and use {len(used)}")
    return result


def _json(text: bytes | str, what: str):
    try:
        return json.loads(text.decode("utf-8") if type(text) is bytes else text)
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise Malformed(f"have a {what} that is not JSON ({type(e).__name__})") from None


def _check_specs(specs: dict) -> None:
    """Before safetensors builds anything: how many tensors, their names, dtypes and number of dimensions."""
    if len(specs) > MOST_TENSORS:
        raise Malformed(f"declare {len(specs):,} tensors (at most {MOST_TENSORS:,})")
    if set(specs) != {str(i) for i in range(len(specs))}:
        raise Malformed("name tensors other than 0, 1, 2 …")
    for name, spec in specs.items():
        shape = spec.get("shape") if type(spec) is dict and spec.get("dtype") in TORCH_NAMES else None
        if not (type(shape) is list and len(shape) <= MOST_DIMS):
            raise Malformed(f"declare tensor {name} as {str(spec)[:80]}: not a dtype gradlab reads and a shape")


def _tensors(data: bytes, n: int) -> list:
    """The tensors, each in memory of its own (safetensors checks every offset and size against the bytes sent)."""
    import torch
    from safetensors import SafetensorError, deserialize

    try:
        views = deserialize(data)
    except SafetensorError as e:
        raise Malformed(f"are not safetensors ({str(e)[:160]})") from None
    out: list = [None] * n
    while views:  # each tensor's bytes let go once copied: at most one tensor held twice
        name, view = views.pop()
        kind = getattr(torch, TORCH_NAMES[view["dtype"]])
        raw = bytearray(view["data"])  # writable, exactly its values
        out[int(name)] = torch.frombuffer(raw, dtype=kind).reshape(view["shape"]) if raw else \
            torch.zeros(view["shape"], dtype=kind)
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
