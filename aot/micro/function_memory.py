"""TVM's per-function memory records of a build: relay.build's lib.function_metadata (one
FunctionInfo per function: main and each operator) and model_library_format's
_build_function_memory_map, which turns them into the "functions" table of metadata.json's
memory section. Here the records are read back from the MLF that the build wrote, so the map
built from them is that table, row for row."""
from __future__ import annotations

from ..errors import AotError

MAIN = "__tvm_main__"


class _Type:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = list(shape), dtype


class _Param:
    def __init__(self, name, t):
        self.name_hint, self.checked_type = name, t


class MainSignature:
    """main's inputs and outputs as the MLF names them (TVM's relay_primfuncs[target] of main:
    params with name_hint and checked_type, ret_type, attrs output_tensor_names)."""

    def __init__(self, inputs, outputs):
        self.params = [_Param(n, t) for n, t in inputs]
        rets = [t for _, t in outputs]
        self.ret_type = rets[0] if len(rets) == 1 else rets
        self.attrs = {"output_tensor_names": [n for n, _ in outputs]}


class FunctionInfo:
    """TVM's FunctionInfo: byte sizes by target (workspace_sizes, io_sizes, constant_sizes) and the
    functions lowered for each target (tir_primfuncs: the operator's symbol here; relay_primfuncs:
    main's signature)."""

    def __init__(self, workspace_sizes, io_sizes=None, constant_sizes=None, tir_primfuncs=None,
                 relay_primfuncs=None):
        self.workspace_sizes = dict(workspace_sizes)
        self.io_sizes = dict(io_sizes or {})
        self.constant_sizes = dict(constant_sizes or {})
        self.tir_primfuncs = dict(tir_primfuncs or {})
        self.relay_primfuncs = dict(relay_primfuncs or {})


def function_metadata(tar, target):
    """{function name: FunctionInfo} of a relay.build MLF: main ("__tvm_main__") and each
    operator function, from its metadata.json's memory table."""
    from mlf import read_mlf
    funcs = _memory_functions(read_mlf(tar).metadata)
    main = funcs["main"][0]

    def io(kind):
        return [(n, _Type([t["size"] // _bytes(t["dtype"])], t["dtype"])) for n, t in main[kind].items()]

    out = {MAIN: FunctionInfo({target: main["workspace_size_bytes"]}, {target: main["io_size_bytes"]},
                              {target: main["constants_size_bytes"]},
                              relay_primfuncs={target: MainSignature(io("inputs"), io("outputs"))})}
    for f in funcs["operator_functions"]:
        sizes = {target: max((w["workspace_size_bytes"] for w in f["workspace"]), default=0)}
        out[f["function_name"]] = FunctionInfo(sizes, tir_primfuncs={target: f["function_name"]})
    return out


def _bytes(dtype):
    from ..dtypes import BYTES
    return BYTES[dtype]


def _memory_functions(meta):
    if "modules" in meta:
        meta = next(iter(meta["modules"].values()))
    try:
        return meta["memory"]["functions"]
    except (KeyError, TypeError):
        raise AotError("function_metadata: the MLF's metadata.json has no memory.functions table") from None


def _device_type(target):
    from ..runtime import device
    return int(device(target).device_type)


def build_function_memory_map(metadata):
    """TVM's _build_function_memory_map: {"main": [per device: workspace (main's own plus the
    largest operator's), constants, io, inputs, outputs], "operator_functions": [{function_name,
    workspace: [per device]}]}."""
    if MAIN not in metadata:
        raise AotError(f"function memory map: no '{MAIN}' among the functions ({', '.join(metadata) or 'none'})")
    largest, ops = {}, []
    for name, info in metadata.items():
        if name == MAIN or not info.tir_primfuncs:
            continue
        rows = []
        for target, size in info.workspace_sizes.items():
            dev = _device_type(target)
            rows.append({"device": dev, "workspace_size_bytes": int(size)})
            largest[dev] = max(largest.get(dev, 0), int(size))
        ops.append({"function_name": str(name), "workspace": rows})
    main = metadata[MAIN]
    entries = {}

    def entry(target):
        dev = _device_type(target)
        return entries.setdefault(dev, {"device": dev, "workspace_size_bytes": 0, "constants_size_bytes": 0,
                                        "io_size_bytes": 0})

    for target, size in main.workspace_sizes.items():
        entry(target)["workspace_size_bytes"] = largest.get(_device_type(target), 0) + int(size)
    for target, size in main.constant_sizes.items():
        entry(target)["constants_size_bytes"] = int(size)
    for target, size in main.io_sizes.items():
        e = entry(target)
        e["io_size_bytes"] = int(size)
        sig = main.relay_primfuncs.get(target)
        if sig is not None:
            e["inputs"] = {p.name_hint: _type_entry(p.checked_type) for p in sig.params}
            rets = sig.ret_type if isinstance(sig.ret_type, list) else [sig.ret_type]
            names = list(sig.attrs.get("output_tensor_names") or [])
            if len(names) != len(rets):
                names = ["output"] if len(rets) == 1 else [f"output{k}" for k in range(len(rets))]
            e["outputs"] = {n: _type_entry(t) for n, t in zip(names, rets)}
    return {"main": list(entries.values()), "operator_functions": ops}


def _type_entry(t):
    n = 1
    for d in t.shape:
        n *= int(d)
    return {"size": n * _bytes(str(t.dtype)), "dtype": str(t.dtype)}
