"""Reading and validating MLF tarballs."""
from __future__ import annotations

import io
import json
import tarfile
from dataclasses import dataclass

from aot.errors import AotError


@dataclass
class MLF:
    metadata: dict
    files: dict          # path without './' -> bytes

    @property
    def module_name(self):
        return next(iter(self.metadata["modules"]))

    @property
    def module(self):
        return self.metadata["modules"][self.module_name]

    @property
    def main_memory(self):
        return self.module["memory"]["functions"]["main"][0]

    @property
    def aot(self):
        return self.module.get("aot", {})


def read_mlf(path_or_bytes) -> MLF:
    try:
        if isinstance(path_or_bytes, (bytes, bytearray)):
            tar = tarfile.open(fileobj=io.BytesIO(path_or_bytes), mode="r:")
        else:
            tar = tarfile.open(path_or_bytes, mode="r:")
    except (OSError, tarfile.TarError) as e:
        raise AotError(f"cannot read MLF '{path_or_bytes if isinstance(path_or_bytes, str) else '<bytes>'}': {e}")
    files, bad = {}, []
    with tar:
        for m in tar.getmembers():
            name = m.name
            if not (name == "." or name.startswith("./")):
                bad.append(name)
            rel = name[2:] if name.startswith("./") else name
            if m.isfile():
                if rel.startswith("/") or ".." in rel.split("/"):
                    raise AotError(f"MLF member '{name}' escapes the archive")
                files[rel] = tar.extractfile(m).read()
    if "metadata.json" not in files:
        raise AotError("not an MLF: metadata.json is missing")
    try:
        meta = json.loads(files["metadata.json"])
    except ValueError as e:
        raise AotError(f"MLF metadata.json is not valid JSON: {e}")
    mlf = MLF(meta, files)
    mlf.unprefixed = bad
    return mlf


def validate(mlf: MLF) -> list:
    """Problems with the layout (an empty list means valid)."""
    p = []
    m = mlf.metadata
    if m.get("version") != 7:
        p.append(f"metadata version is {m.get('version')}, expected 7")
    mods = m.get("modules")
    if not isinstance(mods, dict) or len(mods) != 1:
        return p + ["metadata must have exactly one module"]
    mod = mlf.module_name
    info = mods[mod]
    for key in ("executors", "style", "target", "export_datetime", "external_dependencies", "memory"):
        if key not in info:
            p.append(f"module '{mod}' metadata lacks '{key}'")
    if info.get("executors") != ["aot"]:
        p.append("executors must be ['aot']")
    try:
        main = info["memory"]["functions"]["main"][0]
        for key in ("workspace_size_bytes", "constants_size_bytes", "io_size_bytes", "device", "inputs", "outputs"):
            if key not in main:
                p.append(f"memory.functions.main[0] lacks '{key}'")
        info["memory"]["functions"]["operator_functions"]
    except (KeyError, IndexError, TypeError):
        p.append("memory.functions.main[0] / operator_functions missing")
    for f in (f"codegen/host/include/tvmgen_{mod}.h", f"codegen/host/src/{mod}_lib0.c",
              f"codegen/host/src/{mod}_lib1.c", f"parameters/{mod}.params", f"src/{mod}.relay",
              "runtime/include/tvm/runtime/c_runtime_api.h"):
        if f not in mlf.files:
            p.append(f"missing member ./{f}")
    for b in getattr(mlf, "unprefixed", []):
        p.append(f"member '{b}' is not prefixed with './'")
    return p
