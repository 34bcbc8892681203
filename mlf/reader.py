"""Reading and validating MLF tarballs.

An MLF handed to aot may come from anywhere: reading it never follows a link, never reads a
member larger than any real MLF holds, and records every member that is not a plain file or
directory at a relative path, so that validate() reports it and no consumer builds from it."""
from __future__ import annotations

import io
import json
import os
import tarfile
from dataclasses import dataclass, field

from aot.errors import AotError

# Far above any MLF for a microcontroller (the constants of a 100 MB model print to ~600 MB of C
# only beyond what a 32-bit target holds), far below what would exhaust the reading machine.
MAX_MEMBER_BYTES = 512 << 20
MAX_TOTAL_BYTES = 1 << 30
MAX_MEMBERS = 10000
MAX_METADATA_BYTES = 64 << 20


@dataclass
class MLF:
    metadata: dict
    files: dict          # path without './' -> bytes
    problems: list = field(default_factory=list)   # members refused while reading
    unprefixed: list = field(default_factory=list)

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


def _kind(m):
    if m.issym():
        return f"a symbolic link (to '{m.linkname}')"
    if m.islnk():
        return f"a hard link (to '{m.linkname}')"
    if m.ischr() or m.isblk():
        return "a device node"
    if m.isfifo():
        return "a FIFO"
    return f"of tar type {m.type!r}"


def _member_problem(m):
    """Why a member cannot be part of an MLF, or None."""
    name = m.name
    rel = name[2:] if name.startswith("./") else name
    if "\0" in name or "\\" in name:
        return f"member '{name!r}' has a name with a NUL or backslash"
    if rel.startswith("/") or os.path.isabs(rel) or ".." in rel.split("/"):
        return f"member '{name}' escapes the archive (absolute path or '..')"
    if not (m.isfile() or m.isdir()):
        return f"member '{name}' is {_kind(m)}: an MLF holds only regular files and directories"
    return None


def read_tar_file(path) -> bytes:
    """The bytes of an MLF file, refusing one too large to be an MLF before reading it."""
    try:
        size = os.path.getsize(path)
        if size > MAX_TOTAL_BYTES + (1 << 20):
            raise AotError(f"'{path}' is {size:,} bytes, more than any MLF holds (limit {MAX_TOTAL_BYTES:,})")
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise AotError(f"cannot read '{path}': {e.strerror or e}")


def read_mlf(path_or_bytes) -> MLF:
    label = "<bytes>" if isinstance(path_or_bytes, (bytes, bytearray)) else str(path_or_bytes)
    data = bytes(path_or_bytes) if isinstance(path_or_bytes, (bytes, bytearray)) else read_tar_file(path_or_bytes)
    files, problems, unprefixed, total = {}, [], [], 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for k, m in enumerate(tar):
                if k >= MAX_MEMBERS:
                    raise AotError(f"MLF '{label}' has more than {MAX_MEMBERS} members")
                if not (m.name == "." or m.name.startswith("./")):
                    unprefixed.append(m.name)
                if m.size > MAX_MEMBER_BYTES:      # checked before a byte of it is read
                    raise AotError(f"MLF '{label}': member '{m.name}' is {m.size:,} bytes, more than any MLF "
                                   f"holds (limit {MAX_MEMBER_BYTES:,})")
                why = _member_problem(m)
                if why:
                    problems.append(why)
                    continue
                if not m.isfile():
                    continue
                total += m.size
                if total > MAX_TOTAL_BYTES:
                    raise AotError(f"MLF '{label}': members add up to more than {MAX_TOTAL_BYTES:,} bytes "
                                   f"(at '{m.name}')")
                rel = m.name[2:] if m.name.startswith("./") else m.name
                if rel in files:
                    problems.append(f"member '{m.name}' appears twice")
                raw = tar.extractfile(m).read()
                if len(raw) != m.size:
                    raise AotError(f"MLF '{label}' is truncated (member '{m.name}')")
                files[rel] = raw
            if data[tar.offset:tar.offset + 1024] != bytes(1024):
                raise AotError(f"MLF '{label}' is truncated (it ends without the end-of-archive blocks)")
    except (OSError, EOFError, tarfile.TarError) as e:
        raise AotError(f"cannot read MLF '{label}': {e} (not a tar archive, or truncated)")
    if "metadata.json" not in files:
        raise AotError(f"'{label}' is not an MLF: metadata.json is missing")
    if len(files["metadata.json"]) > MAX_METADATA_BYTES:
        raise AotError(f"MLF '{label}': metadata.json is {len(files['metadata.json']):,} bytes")
    try:
        meta = json.loads(files["metadata.json"])
    except (ValueError, RecursionError) as e:
        raise AotError(f"MLF metadata.json is not valid JSON: {str(e)[:200]}")
    return MLF(meta, files, problems, unprefixed)


def validate(mlf: MLF, render_header=None) -> list:
    """Problems with the members and the metadata (an empty list means valid). render_header:
    see mlf.crosscheck.cross_problems (aot.host.mlf_problems passes it: use that)."""
    from .schema import metadata_problems
    p = list(mlf.problems)
    for b in mlf.unprefixed:
        p.append(f"member '{b}' is not prefixed with './'")
    return p + metadata_problems(mlf.metadata, mlf.files, render_header)
