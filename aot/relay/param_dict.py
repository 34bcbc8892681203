"""relay.save_param_dict / load_param_dict: TVM's binary parameter file (an MLF's parameters/<mod>.params).

Layout, little-endian: list magic (u64), reserved (u64), the names (u64 count, each a u64 length
and its bytes), the arrays (u64 count, each: array magic u64, reserved u64, device type and id
(i32, i32), ndim (i32), dtype (code u8, bits u8, lanes u16), shape (i64 each), byte count (i64),
the data)."""
from __future__ import annotations

import struct

import numpy as np

from ..errors import AotError

LIST_MAGIC = 0xF7E58D4F05049CB7
ARRAY_MAGIC = 0xDD5E40F096B4A13F
_CODES = {"i": 0, "u": 1, "f": 2}


def save_param_dict(params):
    names = list(params)
    out = [struct.pack("<QQQ", LIST_MAGIC, 0, len(names))]
    for n in names:
        b = str(n).encode("utf-8")
        out.append(struct.pack("<Q", len(b)) + b)
    out.append(struct.pack("<Q", len(names)))
    for n in names:
        v = params[n]
        a = np.ascontiguousarray(np.asarray(v.numpy() if hasattr(v, "numpy") else v))
        if a.dtype.kind not in _CODES:
            raise AotError(f"save_param_dict: parameter '{n}' has dtype {a.dtype}, not an integer or float type")
        out.append(struct.pack("<QQiii", ARRAY_MAGIC, 0, 1, 0, a.ndim))
        out.append(struct.pack("<BBH", _CODES[a.dtype.kind], a.dtype.itemsize * 8, 1))
        out.append(struct.pack(f"<{a.ndim}q", *a.shape))
        data = a.astype(a.dtype.newbyteorder("<")).tobytes()
        out.append(struct.pack("<q", len(data)) + data)
    return b"".join(out)


def load_param_dict(param_bytes):
    """{name: NDArray} of a TVM parameter file's bytes; a malformed file is refused."""
    from ..runtime import NDArray
    buf = bytes(param_bytes)
    pos = 0

    def take(fmt):
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(buf):
            raise AotError(f"load_param_dict: the data ends at byte {len(buf)}, inside a field at byte {pos}")
        vals = struct.unpack_from(fmt, buf, pos)
        pos += size
        return vals

    def raw(n):
        nonlocal pos
        if n < 0 or pos + n > len(buf):
            raise AotError(f"load_param_dict: a field of {n} bytes at byte {pos} runs past the end ({len(buf)})")
        pos += n
        return buf[pos - n:pos]

    magic, _ = take("<QQ")
    if magic != LIST_MAGIC:
        raise AotError(f"load_param_dict: magic {magic:#x} is not TVM's parameter-list magic {LIST_MAGIC:#x}")
    (count,) = take("<Q")
    names = [raw(take("<Q")[0]).decode("utf-8") for _ in range(min(count, len(buf)))]
    (arrays,) = take("<Q")
    if arrays != len(names):
        raise AotError(f"load_param_dict: {len(names)} names but {arrays} arrays")
    out = {}
    for n in names:
        amagic, _, _dev, _id, ndim = take("<QQiii")
        if amagic != ARRAY_MAGIC:
            raise AotError(f"load_param_dict: parameter '{n}': magic {amagic:#x} is not TVM's array magic")
        code, bits, lanes = take("<BBH")
        kind = {v: k for k, v in _CODES.items()}.get(code)
        if kind is None or lanes != 1 or bits not in (8, 16, 32, 64) or ndim < 0 or ndim > 32:
            raise AotError(f"load_param_dict: parameter '{n}': dtype code {code}, {bits} bits x {lanes} lanes, "
                           f"ndim {ndim} is not supported")
        shape = take(f"<{ndim}q") if ndim else ()
        dtype = np.dtype(f"<{kind}{bits // 8}")
        (size,) = take("<q")
        if size != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise AotError(f"load_param_dict: parameter '{n}': {size} bytes for shape {list(shape)} {dtype}")
        out[n] = NDArray(np.frombuffer(raw(size), dtype).reshape(shape).copy())
    return out
