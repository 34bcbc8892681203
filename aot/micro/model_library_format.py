"""micro.export_model_library_format with TVM's names: a compiled module written as the Model
Library Format tarball (our MLF, docs/mlf.md)."""
from __future__ import annotations

import os

from ..errors import AotError
from mlf.schema import MLF_VERSION
from .function_memory import build_function_memory_map as _build_function_memory_map  # noqa: F401  (TVM's name)

# the metadata.json version this writes (TVM's name, which its tests compare with)
_GENERATED_VERSION = MLF_VERSION


class UnsupportedInModelLibraryFormatError(AotError):
    """The object given has no Model Library Format (it was not compiled by aot)."""


def mlf_bytes(module, what="export_model_library_format"):
    """The MLF tarball (bytes) of what relay.build, aot.build or aot.compile returned, of MLF
    bytes, or of an MLF file's path."""
    from ..module import Module, SymbolicModule
    if isinstance(module, (bytes, bytearray)):
        return bytes(module)
    if isinstance(module, (str, os.PathLike)):
        from ..host import tar_bytes
        try:
            return tar_bytes(str(module))
        except OSError as e:
            raise AotError(f"{what}: cannot read '{module}': {e.strerror or e}") from None
    if isinstance(module, SymbolicModule):
        raise UnsupportedInModelLibraryFormatError(
            f"{what}: the module's sizes are still symbolic (fixed at its first call): build it with sizes= "
            "to have one Model Library Format")
    tar = getattr(module, "tar", None)
    if tar is None and isinstance(module, Module):
        tar = module.tar
    if isinstance(tar, (bytes, bytearray)):
        return bytes(tar)
    raise UnsupportedInModelLibraryFormatError(
        f"{what}: a {type(module).__name__} has no Model Library Format; give what relay.build, aot.build or "
        "aot.compile returned")


def export_model_library_format(mod, file_name):
    """Write the module's MLF tarball to file_name; returns file_name (as TVM)."""
    from ..compiler import write_atomic
    write_atomic(str(file_name), mlf_bytes(mod))
    return file_name
