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


class DuplicateModuleNameError(AotError, AssertionError):
    """Two modules of one name given to export_model_library_format (TVM asserts it)."""


class NotExportableError(UnsupportedInModelLibraryFormatError, AssertionError):
    """A module with no C (tvm.support.FrontendTestModule: Python functions) given where its C is
    written out (TVM asserts the module is C or LLVM)."""


def _populate_codegen_dir(mods, codegen_dir):
    """TVM's helper that writes the C of each module into codegen_dir/host/src: a relay.build
    module's as <module>_lib<N>.c, an aot.build module's as lib<N>.c (TVM's names for each).
    Returns the paths written."""
    from mlf import read_mlf
    from ..compiler import write_atomic
    written = []
    for m in mods:
        try:
            data = mlf_bytes(m, "_populate_codegen_dir")
        except UnsupportedInModelLibraryFormatError:
            kind = getattr(m, "type_key", type(m).__name__)
            raise NotExportableError(f"Don't know how to export non-c or non-llvm modules; found: {kind}") from None
        mlf = read_mlf(data)
        prefix = f"codegen/host/src/{mlf.module_name}_lib"
        for path, text in sorted(mlf.files.items()):
            if not path.startswith(prefix):
                continue
            name = ("lib" + path[len(prefix):]) if getattr(m, "operator", None) is not None else path.rsplit("/", 1)[1]
            out = os.path.join(str(codegen_dir), "host", "src", name)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            write_atomic(out, text)
            written.append(out)
    return written


class MultipleOperatorsError(AotError):
    """export_model_library_format was given a list holding an operator module (aot.build): its
    Model Library Format holds one function (TVM's RuntimeError)."""


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


def _operator_mlf(module):
    """TVM's layout for what tvm.build made (style "operator"): metadata.json without "modules"
    (model_name, memory {function: [one row per parameter buffer]}, executors []), the
    function's TIR as src/tir-<device type>.txt, and the C as codegen/host/src/lib<N>.c (no module
    prefix). The C is the module's own (lib0: its entry, lib1: the kernels), with the header it
    includes; there are no parameters and no runtime, as in TVM's."""
    import datetime
    import json
    from mlf import read_mlf
    from mlf.writer import source_date_epoch, write_tar
    from ..dtypes import BYTES
    from ..runtime import device
    name, func, target = module.operator
    m = read_mlf(module.tar)
    if m.aot.get("device"):
        raise UnsupportedInModelLibraryFormatError(
            f"export_model_library_format: operator '{name}' runs on the {m.aot['device'].get('api')} device; "
            "an operator's Model Library Format holds host C only (as TVM's, for its c and llvm targets)")
    mod = m.module_name
    ((tgt, ir_mod),) = module.ir_module_by_target.items()
    memory = {}
    for fname, f in ir_mod.functions.items():
        rows = []
        for b in f.params:
            shape = [int(d) for d in b.shape]
            size = BYTES[str(b.dtype)]
            for d in shape:
                size *= d
            rows.append({"size_bytes": size, "shape": shape, "dtype": str(b.dtype), "input_binding": b.name})
        memory[fname] = rows
    when = datetime.datetime.fromtimestamp(source_date_epoch(), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    meta = {"version": _GENERATED_VERSION, "model_name": name, "export_datetime": when, "memory": memory,
            "target": [str(tgt)], "executors": [], "style": "operator"}
    src = f"codegen/host/src/{mod}_lib"
    files = {"metadata.json": json.dumps(meta, indent=2, sort_keys=True) + "\n",
             f"src/tir-{int(device(str(tgt)).device_type)}.txt": str(ir_mod)}
    for path, data in m.files.items():
        if path.startswith(src) and path.endswith(".c"):
            files["codegen/host/src/lib" + path[len(src):]] = data
        elif path.startswith("codegen/host/include/"):
            files[path] = data
    return write_tar(files)


def export_model_library_format(mod, file_name):
    """Write the module's MLF tarball to file_name; returns file_name (as TVM). A module aot.build
    made from one function is written in TVM's operator layout (_operator_mlf)."""
    from ..compiler import write_atomic
    if isinstance(mod, list):
        ops = [m for m in mod if getattr(m, "operator", None) is not None]
        if ops and len(mod) > 1:
            # TVM's RuntimeError and words: an operator MLF holds one function
            raise MultipleOperatorsError("Multiple operator is not supported.")
        if len(mod) == 1:
            mod = mod[0]
    if getattr(mod, "operator", None) is not None:
        write_atomic(str(file_name), _operator_mlf(mod))
        return file_name
    if isinstance(mod, list):
        write_atomic(str(file_name), modules_mlf([mlf_bytes(m) for m in mod]))
        return file_name
    write_atomic(str(file_name), mlf_bytes(mod))
    return file_name


# aot's per-module Make and CMake fragments: an MLF of several modules has one of each name, so
# they are left out there (TVM's MLF has neither; each module's sources are in its aot.sources)
_FRAGMENTS = ("mlf.mk", "mlf.cmake")


def modules_mlf(tars):
    """One MLF holding the modules of several (TVM's export of a list of relay.build results):
    metadata "modules" has each, every module's own members keep their <module>_ names, and the
    CRT (runtime/, templates/) is written once. Two modules of one name are refused (TVM's
    AssertionError and words), as are modules whose CRT members differ."""
    import json
    from mlf.schema import MLF_VERSION, SHARED_DIRS
    from mlf.writer import metadata_json, write_tar
    from ..host import read_valid_mlf
    if not tars:
        raise AotError("export_model_library_format: the list of modules is empty")
    mlfs = [read_valid_mlf(t) for t in tars]
    names = [m.module_name for m in mlfs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DuplicateModuleNameError(f"Multiple modules should have unique names: '{dup[0]}' is given "
                                       f"{names.count(dup[0])} times (relay.build's mod_name)")
    files, meta, first = {}, {"version": MLF_VERSION, "modules": {}}, {}
    for m in mlfs:
        mod = m.module_name
        info = json.loads(json.dumps(m.module))
        for frag in _FRAGMENTS:
            info["aot"]["digests"].pop(frag, None)
        meta["modules"][mod] = info
        for path, data in m.files.items():
            if path == "metadata.json" or path in _FRAGMENTS:
                continue
            if path in files and files[path] != data:
                raise AotError(f"export_model_library_format: modules '{first[path]}' and '{mod}' differ in "
                               f"./{path}" + (": build them for the same target and runtime"
                                              if path.startswith(SHARED_DIRS) else ""))
            files[path] = data
            first.setdefault(path, mod)
    files["metadata.json"] = metadata_json(meta)
    out = write_tar(files)
    read_valid_mlf(out)         # what it wrote passes every check, each module's
    return out
