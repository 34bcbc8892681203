"""Deterministic MLF tarball writer.

Members are prefixed './', directories come before their files in sorted order, and every
header field that could vary (mtime, uid/gid, names, modes) is fixed, so the same inputs give
byte-identical tarballs. The timestamp is SOURCE_DATE_EPOCH when set, else 0.
"""
from __future__ import annotations

import datetime
import io
import json
import os
import struct
import tarfile

from .schema import AOT_BLOCK_VERSION, MLF_VERSION

TVM_NDARRAY_LIST_MAGIC = 0xF7E58D4F05049CB7
# the TVM revision whose CRT interface runtime/ implements (513c2be; TVM writes its own version there)
RUNTIME_VERSION = "0.19.dev0"


def source_date_epoch() -> int:
    try:
        return int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    except ValueError:
        return 0


def empty_param_dict() -> bytes:
    """TVM's binary param-dict with no entries: magic, reserved, 0 names, 0 arrays."""
    return struct.pack("<QQQQ", TVM_NDARRAY_LIST_MAGIC, 0, 0, 0)


def make_metadata(plan, target, epoch: int, extra: dict) -> dict:
    """target: the target string, or the list of them, as TVM prints targets (what relay.build compiled for)."""
    mod = plan.model_name

    def io_entries(lst, kind):
        # keyed as TVM's MLF keys them: under --io-names tvm, TVM's names (aot.<kind>[k].tvm_name)
        names = [e.get("tvm_name", e["name"]) for e in extra.get(kind, [])] or [name for _, name, _ in lst]
        return {name: {"dtype": t.dtype, "size": t.nbytes} for name, (_, _, t) in zip(names, lst)}

    io_bytes = sum(t.nbytes for _, _, t in plan.inputs) + sum(t.nbytes for _, _, t in plan.outputs)
    when = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    return {
        "version": MLF_VERSION,
        "modules": {
            mod: {
                "model_name": mod,
                "executors": ["aot"],
                "style": "full-model",
                "target": list(target) if isinstance(target, (list, tuple)) else [target],
                "export_datetime": when,
                # the runtime the MLF ships, as TVM's MLF names its standalone CRT
                "external_dependencies": [{"short_name": "tvm_standalone_crt", "url": "./runtime",
                                           "url_type": "mlf_path", "version_spec": RUNTIME_VERSION}],
                "memory": {
                    "functions": {
                        "main": [{
                            "device": 1,
                            "workspace_size_bytes": plan.workspace_size,
                            "constants_size_bytes": plan.constants_size,
                            "io_size_bytes": io_bytes,
                            "inputs": io_entries(plan.inputs, "inputs"),
                            "outputs": io_entries(plan.outputs, "outputs"),
                        }],
                        "operator_functions": [
                            {"function_name": name, "workspace": [{"device": 1, "workspace_size_bytes": scratch}]}
                            for name, scratch in dict((c.symbol, getattr(c, "scratch_bytes", 0))
                                                      for c in plan.calls).items()
                        ],
                    }
                },
                # aot's own details (TVM readers ignore unknown keys)
                "aot": {"version": AOT_BLOCK_VERSION, **extra},
            }
        },
    }


def write_tar(files: dict, epoch: int | None = None) -> bytes:
    """files: {relative path: str | bytes} -> tar bytes."""
    epoch = source_date_epoch() if epoch is None else epoch
    dirs = set()
    for p in files:
        parts = p.split("/")[:-1]
        for k in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:k]))
    entries = sorted([(d, None) for d in dirs] + list(files.items()), key=lambda e: e[0])
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path, data in [(".", None)] + entries:
            info = tarfile.TarInfo("./" + path if path != "." else ".")
            info.mtime, info.uid, info.gid, info.uname, info.gname = epoch, 0, 0, "root", "root"
            if data is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
                info.size, info.mode = len(raw), 0o644
                tar.addfile(info, io.BytesIO(raw))
    return buf.getvalue()


def seal(files: dict) -> dict:
    """files with metadata.json recording the sha256 of every other member (aot.digests), so
    that a reader finds any member changed after aot wrote it."""
    from .crosscheck import digests_of
    raw = {p: d.encode("utf-8") if isinstance(d, str) else bytes(d) for p, d in files.items()}
    meta = json.loads(raw["metadata.json"])
    aot = next(iter(meta["modules"].values()))["aot"]
    aot["digests"] = digests_of(raw)
    return dict(files, **{"metadata.json": metadata_json(meta)})


def reseal(tar: bytes) -> bytes:
    """An MLF whose members were edited on purpose (a test's corrupted kernel), sealed again."""
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        files = {(m.name[2:] if m.name.startswith("./") else m.name): t.extractfile(m).read()
                 for m in t.getmembers() if m.isfile()}
    return write_tar(seal(files))


def metadata_json(meta: dict) -> str:
    return json.dumps(meta, indent=2, sort_keys=True) + "\n"
