"""relay.build: a relay module through the same pipeline as an ONNX model (graph passes, fusion,
lowering, schedules, the AOT executor, MLF). This is a driver, like aot/compiler.py, not an IR
layer: it is the one relay module that reaches the code generators.

What it returns is TVM's executor factory module: `lib["default"](dev)` for the graph executor
(aot.contrib.graph_executor), get_lib / get_params / get_graph_json, export_library, and, as
TVM's own factory still allows with a warning, unpacking into TVM 0.6's (graph_json, lib, params).
Settings come from the call (executor, runtime) and from the current transform.PassContext."""
from __future__ import annotations

import json
import warnings

import numpy as np

from ..compiler import Options, compile_model
from ..deprecation import warn_once
from ..errors import AotError
from ..target import Target
from .backend import Executor, Runtime
from .expr import GraphFunction, IRModule
from .to_graph import main_function, to_graph


class ExecutorFactoryModule:
    """What relay.build returns: the compiled MLF (.tar, .result), `lib["default"](dev)` for the
    graph-executor-style runner, export_library for the MLF."""

    def __init__(self, result, target, mod_name, executor=None, runtime=None, params=None, ir_mod=None,
                 options=None):
        self.result, self.target, self.module_name = result, target, mod_name
        self.libmod_name = mod_name
        self.executor = executor or Executor("graph")
        self.runtime = runtime or Runtime("cpp")
        self.params = dict(params or {})
        self.ir_mod = ir_mod
        self.options = options
        self._iter = None

    @property
    def tar(self):
        return self.result.tar

    @property
    def lib(self):
        return self

    def __getitem__(self, name):
        if name != self.module_name:
            raise AotError(f"the module is named '{self.module_name}', not '{name}'")
        from ..contrib.graph_executor import GraphRuntime
        return lambda *devs: GraphRuntime(self, devs[0] if devs else None)

    def get_lib(self):
        return self

    def get_params(self):
        """The parameters bound into the module at build, by name (their values are constants of
        the generated code)."""
        from ..runtime import NDArray
        return {k: NDArray(v) for k, v in self.params.items()}

    def get_graph_json(self):
        return graph_json(self.result)

    def get_executor_config(self):
        return self.get_graph_json() if self.executor.name == "graph" else None

    def get_devices(self):
        return []

    def get_source(self, fmt=""):
        """The generated C (or CUDA/OpenCL host and device) sources, concatenated."""
        return source_text(self.result.tar)

    @property
    def imported_modules(self):
        """As TVM's factory: the modules the host module imports. A device target's are its
        kernels (CUDA, OpenCL); a C target's is the one C module of the operators, the executor
        and the constants (the MLF's codegen/host/src/*.c, without the header)."""
        from ..module import Module, SourceModule
        lib = Module(self.result.tar)
        if lib.imported_modules:
            return lib.imported_modules
        return [SourceModule(lib.host_source, "c")]

    @property
    def function_metadata(self):
        """As TVM's factory: {function name: FunctionInfo} of main ("__tvm_main__") and each
        operator, with their byte sizes by target (aot.micro.function_memory)."""
        from ..micro.function_memory import function_metadata
        return function_metadata(self.result.tar, self.target)

    @property
    def lowered_ir_mods(self):
        """As TVM's factory: {target: the lowered IRModule}, here the executor's main as TIR
        (__tvm_main__, aot.executor.main_tir); .items() is a list, as a TVM Map's."""
        from ..executor.main_tir import MAIN, main_prim_func
        from .expr import IRModule as _Mod
        plan = getattr(self.result, "plan", None)
        if plan is None:
            raise AotError("lowered_ir_mods: this module was not built here (it has no executor plan)")
        return _TargetMap({self.target: _Mod({MAIN: main_prim_func(plan)})})

    def export_library(self, path, fcompile=None, addons=None, **kwargs):
        """A shared library of the host C for .so / .dylib / .dll (aot.module's, which
        runtime.load_module reads back), else the Model Library Format tarball (what firmware
        builds against)."""
        from ..module import Module
        Module(self.result.tar).export_library(str(path), fcompile, **kwargs)

    def save(self, path, fmt=""):
        """An object file of the host C (.o), else the Model Library Format tarball."""
        from ..module import Module
        Module(self.result.tar).save(str(path), fmt)

    # TVM 0.6's relay.build returned (graph_json, lib, params): TVM's factory still unpacks into them
    def __iter__(self):
        warn_once("relay.build tuple", "unpacking relay.build's result into (graph, lib, params) is TVM 0.6's "
                   "spelling: use lib = relay.build(...) and graph_executor.GraphModule(lib['default'](dev))")
        return iter((self.get_graph_json(), self, self.get_params()))

    def __repr__(self):
        return (f"<ExecutorFactoryModule '{self.module_name}' target='{self.target}' "
                f"executor={self.executor.name} runtime={self.runtime.name}>")


def _partition_kind(kind):
    """Whether a backend a module was partitioned for is a partition target kind (cmsis-nn)."""
    try:
        return bool(Target(kind).family.partition)
    except AotError:
        return False


class _TargetMap(dict):
    """A TVM Map keyed by target: items(), keys() and values() are lists."""

    def items(self):
        return list(super().items())

    def keys(self):
        return list(super().keys())

    def values(self):
        return list(super().values())


def _target(target, target_host):
    """TVM's target forms: a string, a Target, or a {device kind: target} dict whose host is the
    C target; None is the current target (aot.target.Target.current()) if one is entered."""
    if target is None:
        current = getattr(Target, "current", None)
        target = current() if current is not None else None
        if target is None:
            raise AotError("relay.build: no target given and no target entered (with Target(...):)")
    if isinstance(target, dict):
        items = [(k, v if isinstance(v, Target) else Target(v)) for k, v in target.items()]
        devices = [t for _, t in items if t.is_device]
        if len(items) > 2 or len(devices) > 1 or (len(items) == 2 and not devices):
            raise AotError(f"relay.build: target dict {', '.join(f'{k}: {t}' for k, t in items)} must name one "
                           "target, or one device target and its host")
        main = devices[0] if devices else items[0][1]
        host = next((t for _, t in items if t is not main), None)
        target = Target(main, host=host) if host is not None else main
    elif not isinstance(target, Target):
        target = Target(str(target))
    if target_host is not None:
        target = Target(target, host=target_host)
    return target


def _options_from(executor, ctx, options):
    """Options set by the executor's attributes and the PassContext config; explicit options win."""
    out = {}
    if executor.name == "aot":
        api = executor.get("interface-api")
        if api is not None:
            out["interface_api"] = api
        align = executor.get("workspace-byte-alignment")
        if align is not None:
            out["align"] = align
    config = ctx.config if ctx is not None else {}
    if "tir.usmp.use_workspace_io" in config:
        out["use_workspace_io"] = bool(config["tir.usmp.use_workspace_io"])
    out.update(options)
    return out


def build(ir_mod, target=None, target_host=None, executor=None, runtime=None, workspace_memory_pools=None,
          constant_memory_pools=None, params=None, mod_name="default", **options):
    """TVM's relay.build(mod, target, params=params, executor=Executor("aot"), runtime=Runtime("crt"))
    under the current transform.PassContext. options are aot.compile's (use_workspace_io, in_place,
    workspace_pools as [(name, size hint)], io_names, ...)."""
    from ..transform import PassContext
    executor = executor if executor is not None else Executor("graph")
    runtime = runtime if runtime is not None else Runtime("cpp")
    if not isinstance(executor, Executor) or not isinstance(runtime, Runtime):
        raise AotError("relay.build: executor= takes relay.backend.Executor(...), runtime= takes "
                       "relay.backend.Runtime(...)")
    if constant_memory_pools is not None:
        raise AotError("relay.build: constant_memory_pools is not supported (constants live in the "
                       "constant section, Options.const_section)")
    if workspace_memory_pools is not None:
        if not isinstance(workspace_memory_pools, (list, tuple)):
            raise AotError("relay.build: workspace_memory_pools takes [(name, size hint in bytes or None), ...] "
                           "(TVM's WorkspaceMemoryPools objects are not supported)")
        options.setdefault("workspace_pools", list(workspace_memory_pools))
    if executor.get("link-params") is False:
        warnings.warn("relay.build: executor attribute link-params=False has no effect: the parameters are "
                      "always constants of the generated code", UserWarning, stacklevel=2)
    tgt = _target(target, target_host)
    # a plug-in backend's target with a host (Target("my_ai_hw", host=Target("c"))) is TVM's way of
    # saying "these kernels to the backend, the rest to the host": the driver's target list
    spec = [Target(str(tgt)), tgt.host] if tgt.is_external and tgt.host is not None else tgt
    named = {str(t.kind) for t in (spec if isinstance(spec, list) else [spec])}
    unnamed = [b for b in getattr(ir_mod, "partitioned_for", ()) if b not in named]
    # a partition target's partitioner (partition_for_cmsisnn) needs no target of its own, as in TVM:
    # it joins the list, for the core the code-generation target names
    auto = [b for b in unnamed if _partition_kind(b)]
    if auto and not tgt.is_external and not tgt.is_device:
        mcpu = tgt.get("mcpu")
        spec = [Target(b + (f" -mcpu={mcpu}" if mcpu else "")) for b in auto] + \
            (spec if isinstance(spec, list) else [spec])
        unnamed = [b for b in unnamed if b not in auto]
    opts = Options(model_name=mod_name, target=spec, **_options_from(executor, PassContext.current(), options))
    if unnamed:      # UMABackend.partition(mod) marks the module; the target decides what is cut out
        raise AotError(f"relay.build: the module was partitioned for backend '{unnamed[0]}', which target '{tgt}' "
                       f"does not name: build it for Target('{unnamed[0]}', host=Target('c'))")
    func = main_function(ir_mod)
    params = {k: np.asarray(v.numpy() if hasattr(v, "numpy") else v) for k, v in (params or {}).items()}
    names = {p.name_hint for p in func.params}
    unknown = sorted(set(params) - names)
    if unknown:      # TVM binds them to nothing, silently; a misspelt name would leave an input unbound
        warnings.warn(f"relay.build: params {', '.join(unknown)} name no parameter of main; they bind nothing "
                      f"(its parameters: {', '.join(sorted(names)) or 'none'})", UserWarning, stacklevel=3)
        params = {k: v for k, v in params.items() if k in names}
    if isinstance(func, GraphFunction):
        model, bound = _graph_model(func, params, opts)
    else:
        model, _ = to_graph(ir_mod if isinstance(getattr(ir_mod, "functions", None), dict) else func, params,
                            name=mod_name)
        bound = params
        opts.relay_text = str(ir_mod if isinstance(ir_mod, IRModule) else IRModule.from_expr(func))
    res = compile_model(model, opts)
    return ExecutorFactoryModule(res, tgt, mod_name, executor, runtime, bound,
                                 ir_mod if isinstance(ir_mod, IRModule) else IRModule.from_expr(func), opts)


def _graph_model(func, params, opts):
    """The model a frontend imported, compiled as `aot compile` would; params bind ONNX inputs. A
    graph with no model behind it (source None) is compiled as it is."""
    if params and func.format != "onnx":
        raise AotError(f"relay.build: params bind inputs of an ONNX model only; a {func.format} model's inputs "
                       "are its runtime inputs")
    if func.source is None:         # a graph made here (no model file): compiled as it stands
        return func.graph, params
    opts.input_shapes = dict(func.input_shapes or {})
    opts.bind_inputs = dict(params)
    return func.source, params


def bind_params_by_name(func, params):
    """func with the parameters named in params replaced by constants (they leave its parameter
    list), as TVM's; a name that is no parameter binds nothing."""
    from .expr import Constant, Function
    from .transform import clone
    func = main_function(func)
    if isinstance(func, GraphFunction):
        raise AotError("bind_params_by_name: a module a frontend imported takes its params at relay.build")
    by_name = {p.name_hint: p for p in func.params}
    params = {k: v for k, v in params.items() if k in by_name}      # other names bind nothing, as in TVM
    memo = {id(by_name[k]): Constant(np.asarray(v.numpy() if hasattr(v, "numpy") else v)) for k, v in params.items()}
    body = clone(func.body, memo)
    return Function([clone(p, memo) for p in func.params if p.name_hint not in params], body, func.ret_type)


def create_executor(kind="debug", mod=None, device=None, target="llvm", params=None, executor=None):
    """relay.create_executor(kind, mod, device, target, params).evaluate() -> f(*inputs) -> output:
    every kind builds the module once (this compiler has one executor) and runs it per call."""
    if kind not in ("debug", "graph", "vm", "aot"):
        raise AotError(f"create_executor: kind '{kind}' is not one of debug, graph, vm, aot")
    if mod is None:
        raise AotError("create_executor: give the module (mod=)")
    return _Executor(mod, device, target, params)


class _Executor:
    def __init__(self, mod, device, target, params):
        self.mod, self.device, self.target, self.params = mod, device, target, params
        self._module = None

    def evaluate(self, expr=None, binds=None):
        if expr is not None:
            raise AotError("create_executor(...).evaluate(expr) is not supported: evaluate() runs the module's main")
        return self._call

    def _call(self, *args, **kwargs):
        from ..contrib.graph_executor import GraphModule
        from ..runtime import NDArray
        if self._module is None:
            lib = build(self.mod, self.target, params=self.params)
            self._module = GraphModule(lib["default"](self.device))
        m = self._module
        names = m.module.input_names
        if len(args) > len(names):
            raise AotError(f"the function takes {len(names)} inputs ({', '.join(names)}), {len(args)} given")
        m.set_input(**dict(zip(names, args)), **kwargs)
        m.run()
        outs = [m.get_output(k) for k in range(m.get_num_outputs())]
        return outs[0] if len(outs) == 1 else tuple(NDArray(o.numpy()) for o in outs)


def graph_json(result):
    """TVM's graph-executor JSON of the compiled module: the inputs and the bound constants as
    "null" nodes, each kernel a "tvm_op" node in the executor's order, its inputs the nodes whose
    outputs it reads; shapes and dtypes per node entry."""
    plan = result.plan
    nodes, shapes, dtypes, entry_of = [], [], [], {}

    def add(name, op, inputs=(), attrs=None, outs=()):
        nid = len(nodes)
        node = {"op": op, "name": name, "inputs": [list(e) for e in inputs]}
        if attrs:
            node["attrs"] = attrs
        nodes.append(node)
        for k, (shape, dtype) in enumerate(outs):
            shapes.append(list(shape))
            dtypes.append(dtype)
        return nid

    for k, (_, name, t) in enumerate(plan.inputs):
        entry_of[("input", k)] = (add(name, "null", outs=[(t.shape, t.dtype)]), 0, 0)
    arg_nodes = list(range(len(nodes)))

    def key(a):
        return (a.kind, a.index if a.kind in ("input", "const", "output") else a.key)

    def arg_type(call, i, a):
        func = getattr(call, "func", None)
        if func is not None and i < len(func.params):
            return tuple(func.params[i].shape), a.dtype
        return (a.size // max(np.dtype(a.dtype).itemsize, 1),), a.dtype

    for call in plan.calls:
        args = list(getattr(call, "args", []))
        n_in = getattr(call, "num_inputs", len(args))
        ins = []
        for i, a in enumerate(args[:n_in]):
            k = key(a)
            if k not in entry_of:
                name = f"p{a.index}" if a.kind == "const" else f"{a.kind}{a.index if a.key is None else a.key}"
                entry_of[k] = (add(name, "null", outs=[arg_type(call, i, a)]), 0, 0)
                arg_nodes.append(entry_of[k][0])
            ins.append(entry_of[k])
        outs = [arg_type(call, n_in + j, a) for j, a in enumerate(args[n_in:])]
        nid = add(call.symbol, "tvm_op", ins, {"func_name": call.symbol, "num_inputs": str(len(ins)),
                                              "num_outputs": str(len(outs)), "flatten_data": "0"}, outs)
        for j, a in enumerate(args[n_in:]):
            entry_of[key(a)] = (nid, j, 0)
    heads = []
    for k, (_, name, t) in enumerate(plan.outputs):
        if ("output", k) not in entry_of:       # an output no kernel writes (a copy of an input)
            entry_of[("output", k)] = (add(name, "null", outs=[(t.shape, t.dtype)]), 0, 0)
        heads.append(list(entry_of[("output", k)]))
    row_ptr, n = [0], 0
    for node in nodes:
        n += 1 if node["op"] == "null" else int(node["attrs"]["num_outputs"])
        row_ptr.append(n)
    return json.dumps({"nodes": nodes, "arg_nodes": arg_nodes, "heads": heads,
                       "attrs": {"dltype": ["list_str", dtypes], "shape": ["list_shape", shapes],
                                 "storage_id": ["list_int", list(range(len(shapes)))]},
                       "node_row_ptr": row_ptr}, indent=2)


def source_text(tar):
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        names = sorted(m.name for m in t.getmembers() if m.isfile() and m.name.startswith("./codegen/")
                       and m.name.endswith((".c", ".cu", ".cl", ".h")))
        return "\n".join(f"// {n}\n" + t.extractfile(n).read().decode() for n in names)
