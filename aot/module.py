"""aot.build / aot.runtime.load_module: a user's scheduled tensor expressions (aot.te) as a module
called on arrays, with TVM's call shapes (fadd(a, b, c), get_source, imported_modules,
export_library). The kernel becomes one PrimFuncCall node and goes through the same executor,
renderers and MLF as a model's kernels; the module runs it with the host compiler, nvcc or the
OpenCL platform (aot.run), and saves as that MLF."""
from __future__ import annotations

import io
import os
import tarfile

import numpy as np

from .errors import AotError
from .ir.graph import Graph, Node, TensorType, Value
from .tir.expr import Var


def build(inputs, args=None, target="c", target_host=None, name="default_function", sizes=None):
    """aot.build(s, [A, B, C], target="c" | "cuda" | "opencl", name="myadd"): args are the
    placeholders, then the computed tensors, as the kernel takes them. Also a TensorIR module
    (@aot.script.ir_module), one of its functions, or an aot.tir.Schedule (its .mod).

    Sizes left symbolic with te.var are fixed here: by sizes={n: 1024} (a te.var or its name ->
    int), or else by the arrays of the module's first call (as a TVM module takes them at call
    time); the module then keeps those sizes, and a call with others is refused."""
    from .te.schedule import Schedule
    from .tir.schedule_api import PrimModule, Schedule as TirSchedule
    from .tir.stmt import PrimFunc
    if isinstance(inputs, TirSchedule):
        inputs = inputs.mod
    if isinstance(inputs, PrimModule):
        if len(inputs.functions) != 1:
            raise AotError(f"aot.build: the module has {len(inputs.functions)} functions; build one "
                           f"(mod['name']): {', '.join(inputs.functions)}")
        inputs = next(iter(inputs.functions.values()))
    if isinstance(inputs, PrimFunc):
        from .tir.blocks import without_blocks      # TensorIR blocks are transparent from here on
        inputs = without_blocks(inputs)
        return _build_sized(inputs, target, name if name != "default_function" else inputs.name, sizes)
    if not isinstance(inputs, Schedule):
        raise AotError(f"aot.build takes a te schedule, a TensorIR module or schedule, not {type(inputs).__name__}")
    sch = inputs
    args = list(args if args is not None else sch.inputs + sch.outputs)
    # a scalar argument (te.var("bias", dtype="float32")) may stand anywhere among the tensors
    scalars = [k for k, t in enumerate(args) if isinstance(t, Var)]
    tensors = [t for t in args if not isinstance(t, Var)]
    if any(not hasattr(t, "is_placeholder") for t in tensors):
        raise AotError("aot.build: args are the schedule's tensors (placeholders, then computed tensors) "
                       "and scalar te.vars")
    n_in = sum(1 for t in tensors if t.is_placeholder)
    if [t.is_placeholder for t in tensors] != [True] * n_in + [False] * (len(tensors) - n_in):
        raise AotError("aot.build: list the placeholders first, then the computed tensors")
    missing = [t.name for t in sch.inputs if not any(t is a for a in args)]
    if missing:
        raise AotError(f"aot.build: args leave out {', '.join(missing)}, which the schedule reads")
    from .te.schedule_lower import lower_schedule
    func = lower_schedule(sch, args, name)
    mod = _build_sized(func, target, name, sizes)
    if not scalars:
        return mod
    # the function takes the placeholders, the scalars, then the computed tensors
    tpos = [k for k in range(len(args)) if k not in scalars]
    order = tpos[:n_in] + scalars + tpos[n_in:]
    return ScalarArgs(mod, order, {k: args[k].dtype for k in scalars})


def _export_shared(module, path, fcompile=None):
    """export_library to a shared-library name (.so, .dylib, .dll): the module saved as an object
    file (its save) and linked by fcompile (contrib.cc.create_shared). False for other names."""
    if not str(path).endswith((".so", ".dylib", ".dll")):
        return False
    import tempfile
    from .contrib.cc import create_shared
    with tempfile.TemporaryDirectory(prefix="aot_lib_") as tmp:
        obj = os.path.join(tmp, "lib.o")
        module.save(obj)
        (fcompile or create_shared)(str(path), [obj])
    return True


def _get_function(module, own_name, name):
    """TVM's mod.get_function(name): a built te module holds one function, called by the module's
    name (aot.build's name=) or its entry_name."""
    if name in (own_name, module.entry_name):
        return module
    raise AotError(f"get_function: the module has no function '{name}' (its function: '{own_name}')")


class ScalarArgs:
    """A module whose function takes scalars (te.var arguments): called in the order aot.build
    was given its arguments, each scalar a Python number, as a TVM module is."""

    def __init__(self, module, order, dtypes):
        self.module, self.order, self.dtypes = module, order, dtypes

    def _args(self, arrays):
        if len(arrays) != len(self.order):
            raise AotError(f"the module takes {len(self.order)} arguments, {len(arrays)} given")
        out = []
        for k in self.order:
            a = arrays[k]
            if k in self.dtypes:
                if not isinstance(a, (int, float, bool, np.number)):
                    raise AotError(f"argument {k + 1} is a scalar ({self.dtypes[k]}), not {type(a).__name__}")
                a = np.array([a], dtype=self.dtypes[k])
            out.append(a)
        return out

    def __call__(self, *arrays):
        return self.module(*self._args(arrays))

    def time_evaluator(self, func_name=None, dev=None, number=10, repeat=1, min_repeat_ms=0, **kwargs):
        def evaluate(*arrays):
            return self.module.time_evaluator(func_name, dev, number, repeat, min_repeat_ms)(*self._args(arrays))
        return evaluate

    def get_function(self, name, query_imports=False):
        self.module.get_function(name)
        return self

    def __getattr__(self, name):
        return getattr(self.module, name)


def _build_sized(func, target, name, sizes):
    """A module, its symbolic sizes fixed now (sizes=) or at its first call."""
    from .tir.bind import size_vars
    svars = size_vars(func)
    if sizes is not None or svars:
        sizes = dict(sizes or {})
        unknown = [k for k in sizes if not any(k is v or k == v.name for v in svars)]
        if unknown:
            raise AotError(f"aot.build: sizes names {', '.join(getattr(k, 'name', str(k)) for k in unknown)}, "
                           f"which the function does not use (its sizes: {', '.join(v.name for v in svars) or 'none'})")
    if not svars:
        return _build_func(func, target, name)
    values = {}
    for v in svars:
        n = next((sizes[k] for k in sizes if k is v or k == v.name), None)
        if n is not None:
            values[id(v)] = int(n)
    if len(values) == len(svars):
        return _build_bound(func, target, name, svars, values)
    if values:
        missing = [v.name for v in svars if id(v) not in values]
        raise AotError(f"aot.build: sizes leaves out {', '.join(missing)}: give every size or none")
    return SymbolicModule(func, target, name, svars)


def _build_bound(func, target, name, svars, values):
    from .tir.bind import bind_sizes
    mod = _build_func(bind_sizes(func, values), target, name)
    mod.sizes = {v.name: values[id(v)] for v in svars}
    return mod


class SymbolicModule:
    """What aot.build returns for a function with te.var sizes and no sizes=: each call takes the
    sizes from its arrays (each parameter's shape gives those of its dimensions that are a plain
    size variable), as a TVM module does; the C is made for those sizes (constants, so loops
    and tails fold) once per set of sizes, and kept."""

    def __init__(self, func, target, name, svars):
        self.func, self.target, self.name, self.svars = func, target, name, svars
        self.module = None          # the last one called
        self.modules = {}           # sizes -> module

    def _sizes_from(self, arrays):
        from .tir.bind import shape_of
        params = self.func.params
        if len(arrays) != len(params):
            raise AotError(f"the module takes {self.func.num_inputs} inputs and {len(params) - self.func.num_inputs} "
                           f"outputs, {len(arrays)} arrays given")
        values, shapes = {}, []
        for b, a in zip(params, arrays):
            shape = tuple(a.shape)
            shapes.append(shape)
            if len(shape) != len(b.shape):
                raise AotError(f"argument {b.name} must have {len(b.shape)} dimensions, not {len(shape)}")
            for d, n in zip(b.shape, shape):
                if isinstance(d, Var) and id(d) not in values:
                    values[id(d)] = int(n)
        missing = [v.name for v in self.svars if id(v) not in values]
        if missing:
            raise AotError(f"size {', '.join(missing)} is no dimension of an argument: give it with "
                           "aot.build(..., sizes={...})")
        for b, shape in zip(params, shapes):
            want = shape_of(b, values)
            if want != shape:
                raise AotError(f"argument {b.name} must have shape {list(want)} for "
                               f"{', '.join(f'{v.name}={values[id(v)]}' for v in self.svars)}, not {list(shape)}")
        return values

    def _require(self, what):
        if self.module is None:
            raise AotError(f"{what}: the module's sizes ({', '.join(v.name for v in self.svars)}) come from the "
                           "arrays of a call (or aot.build(..., sizes={...})); it has not been called yet")
        return self.module

    def _preview(self):
        """(host text, device text or None): the kernels with the sizes as int32 parameters, what
        get_source shows before a call has fixed them (each call compiles them with its sizes as
        constants, so that loops and tails fold)."""
        from codegen_c.dialects import renderer_for
        from .names import sanitize
        from .target import resolve
        from .tir.flatten import flatten
        from .tir.legalize import legalize
        from .tir.stmt import For, walk_stmts
        target, _ = resolve(str(self.target))
        sizes = [sanitize(v.name) for v in self.svars]
        texts = []
        for f, _, _ in _kernels(self.func):
            f = legalize(flatten(f))
            block = [1, 1, 1]
            for x in walk_stmts(f.body):
                if isinstance(x, For) and x.kind == "thread_binding" and x.thread_tag.startswith("threadIdx"):
                    n = getattr(x.extent, "value", None)
                    block["xyz".index(x.thread_tag[-1])] = n if isinstance(n, int) else 1
            f = f.with_body(f.body, attrs=dict(f.attrs, launch=((1, 1, 1), tuple(block))))
            r = renderer_for(target.family)
            assign, signature = r._assign_names, r.signature

            def names(func, assign=assign, r=r):
                assign(func)
                for v, n in zip(self.svars, sizes):
                    r.names[id(v)] = n

            def sig(func, restrict=True, signature=signature):
                head = signature(func, restrict)
                extra = ", ".join(f"int32_t {n}" for n in sizes)
                return head[:-len("(void)")] + f"({extra})" if head.endswith("(void)") else head[:-1] + f", {extra})"
            r._assign_names, r.signature = names, sig
            body = r.function(f)
            helpers = r.helper_definitions()
            texts.append((helpers + "\n\n" if helpers else "") + body)
        note = (f"/* {self.name}: the kernels for sizes {', '.join(v.name for v in self.svars)} as parameters; "
                "a call compiles them with its arrays' sizes as constants. */\n")
        text = note + "\n".join(texts)
        return (text, None) if not target.is_device else (note, text)

    def _for(self, arrays):
        values = self._sizes_from(arrays)
        key = tuple(values[id(v)] for v in self.svars)
        mod = self.modules.get(key)
        if mod is None:
            mod = self.modules[key] = _build_bound(self.func, self.target, self.name, self.svars, values)
        self.module = mod
        return mod

    def __call__(self, *arrays):
        return self._for(arrays)(*arrays)

    def get_source(self, fmt=""):
        if self.module is None:
            return self._preview()[0]
        return self.module.get_source(fmt)

    @property
    def imported_modules(self):
        if self.module is None:
            dev = self._preview()[1]
            from .target import resolve
            return [SourceModule(dev, resolve(str(self.target))[0].kind)] if dev is not None else []
        return self.module.imported_modules

    def _payload(self):
        """The function as its TVMScript text (JSON with the target and the size names): data,
        never code, so that loading a module file runs nothing of it. Checked to read back."""
        import json
        from .tir.script import parse, script
        text = script(self.func)
        try:
            same = script(parse(text)) == text
        except AotError:
            same = False
        if not same:
            raise AotError(f"save: the function of module '{self.name}' does not read back from its script form; "
                           "call the module once and save that (its sizes then fixed), or rebuild it where it is used")
        return json.dumps({"format": "aot-symbolic-module/1", "script": text, "target": str(self.target),
                           "name": self.name, "sizes": [v.name for v in self.svars]}).encode()

    def export_library(self, path, fcompile=None, **kwargs):
        """Saves the module itself, its sizes still symbolic, so that load_module gives back a
        module serving every size as this one does: a shared library (.so) carrying the function
        (its script text) as data, or for any other name a tar holding it."""
        if _export_shared(self, path, fcompile):
            return
        from .compiler import write_atomic
        payload = self._payload()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            info = tarfile.TarInfo(SYMBOLIC_MEMBER)
            info.size = len(payload)
            t.addfile(info, io.BytesIO(payload))
        write_atomic(path, buf.getvalue())

    def save(self, path, fmt=""):
        """An object file (.o) carrying the function as data (contrib.cc.create_shared links it),
        or the tar export_library writes for any other name."""
        if fmt == "o" or str(path).endswith(".o"):
            from .host import build_data_object
            build_data_object(self._payload(), SYMBOLIC_SYMBOL, str(path))
            return
        self.export_library(path)

    entry_name = "run"

    def get_function(self, name, query_imports=False):
        return _get_function(self, self.name, name)

    def time_evaluator(self, func_name=None, dev=None, number=10, repeat=1, min_repeat_ms=0, **kwargs):
        def evaluate(*arrays):
            return self._for(arrays).time_evaluator(func_name, dev, number, repeat, min_repeat_ms)(*arrays)
        return evaluate


def _kernels(func):
    """func as the kernels a plan calls one after the other: a te schedule's function computes its
    stages at the root in turn, the intermediate ones into buffers allocated around them all (an
    Allocate at the top); each stage becomes a kernel of its own, its intermediates values of the
    plan (so the memory plan places them, not the C stack). [(PrimFunc, inputs, outputs)]."""
    from .tir.expr import Load, walk
    from .tir.stmt import Allocate, BufferData, PrimFunc, Seq, Store, stmt_exprs, walk_stmts
    body, inter = func.body, []
    while isinstance(body, Allocate) and body.buffer.scope == "global":
        inter.append(body.buffer)
        body = body.body
    if not inter:
        return [(func, list(func.inputs), list(func.outputs))]
    nests = body.stmts if isinstance(body, Seq) else [body]
    out = []
    for k, nest in enumerate(nests):
        inside = {id(x.buffer) for x in walk_stmts(nest) if isinstance(x, Allocate)}
        written, read = [], []
        for x in walk_stmts(nest):
            if isinstance(x, Store) and id(x.buffer) not in inside and all(x.buffer is not b for b in written):
                written.append(x.buffer)
        # an external call's buffers (te.extern): the function's inputs it reads, the others it writes
        ins = {id(b) for b in func.inputs}
        for e in stmt_exprs(nest):
            for x in walk(e):
                if isinstance(x, BufferData) and id(x.buffer) not in inside and id(x.buffer) not in ins and \
                        all(x.buffer is not b for b in written):
                    written.append(x.buffer)
        for e in stmt_exprs(nest):
            for x in walk(e):
                b = x.buffer if isinstance(x, (Load, BufferData)) else None
                if b is not None and id(b) not in inside and all(b is not y for y in read + written):
                    read.append(b)
        f = PrimFunc(f"{func.name}_{k}", read + written, nest, len(read), dict(func.attrs))
        out.append((f, read, written))
    return out


def _build_func(func, target, name):
    """One PrimFunc (params: inputs, then outputs) as a module."""
    from .compiler import Options, compile_model
    from .names import sanitize
    from .tir.expr import walk
    from .tir.op import ExternCall
    from .tir.stmt import stmt_exprs
    packed = any(isinstance(x, ExternCall) and x.packed for e in stmt_exprs(func.body) for x in walk(e))
    if packed:      # this module runs in-process, where aot_packed_call reaches the registered functions
        func = func.with_body(func.body, attrs=dict(func.attrs, call_packed="in_process"))
    ins = [Value(b.name, TensorType(b.shape, b.dtype)) for b in func.inputs]
    outs = [Value(b.name, TensorType(b.shape, b.dtype)) for b in func.outputs]
    kernels = _kernels(func)
    if len(kernels) == 1:
        nodes = [Node("PrimFuncCall", name, ins, outs, {"prim_func": func})]
    else:
        values = {id(b): v for b, v in zip(func.params, ins + outs)}
        nodes = []
        for k, (f, read, written) in enumerate(kernels):
            kin = [values[id(b)] for b in read]
            kout = []
            for b in written:
                if id(b) not in values:
                    values[id(b)] = Value(b.name, TensorType(b.shape, b.dtype))
                kout.append(values[id(b)])
            nodes.append(Node("PrimFuncCall", f"{name}_{k}", kin, kout, {"prim_func": f}))
        produced = {id(v) for n in nodes for v in n.outputs}
        unwritten = [v.name for v in outs if id(v) not in produced]
        if unwritten:
            raise AotError(f"aot.build: {', '.join(unwritten)} is an argument that no stage writes (inlined?)")
    graph = Graph(name, ins, outs, nodes, 18)
    res = compile_model(graph, Options(model_name=sanitize(name) or "default", target=str(target)))
    lls = list(func.attrs.get("import_llvm", ()))
    mod = InProcessModule(res.tar, lls, name) if packed or lls else Module(res.tar)
    mod.operator = (name, func, target)
    return mod


def _members(tar):
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        return {m.name.lstrip("./"): t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


class SourceModule:
    """An imported module of generated source (a device's kernels, or the host C): get_source()."""

    def __init__(self, text, kind):
        self.text, self.type_key = text, kind

    def get_source(self, fmt=""):
        return self.text


class Module:
    """Call it with the inputs then the outputs (numpy arrays or aot.nd arrays): the outputs are
    written in place, as a TVM module writes them."""

    sizes = {}          # te.var name -> the size it was built for
    # (name, PrimFunc, target) of a module aot.build made from one function: TVM's OperatorModule,
    # which export_model_library_format writes in TVM's operator layout; None for a model
    operator = None

    @property
    def ir_module_by_target(self):
        """TVM's OperatorModule.ir_module_by_target: {target: the IRModule of the built function}."""
        if self.operator is None:
            raise AotError("ir_module_by_target: this module was compiled from a model, not built from one "
                           "function (aot.build)")
        from .target import Target
        from .tir.schedule_api import PrimModule
        name, func, target = self.operator
        return {target if isinstance(target, Target) else Target(str(target)): PrimModule({name: func})}

    def __init__(self, tar):
        self.tar = bytes(tar)
        from .host import read_valid_mlf
        files = _members(self.tar)
        info = read_valid_mlf(self.tar).aot
        self.inputs = [(t["name"], tuple(t["shape"]), t["dtype"]) for t in info["inputs"]]
        self.outputs = [(t["name"], tuple(t["shape"]), t["dtype"]) for t in info["outputs"]]
        self.host_source = "\n".join(files[k].decode() for k in sorted(files)
                                     if k.startswith("codegen/host/src/") and k.endswith(".c"))
        dev = {k: v for k, v in files.items() if k.endswith((".cu", ".cl"))}
        self.imported_modules = [SourceModule("\n".join(v.decode() for _, v in sorted(dev.items())),
                                               info["device"]["api"])] if dev else []

    def get_source(self, fmt=""):
        return self.host_source

    def __getitem__(self, name):
        """module["default"](dev): a module relay.build made, loaded back, for the graph executor
        (aot.contrib.graph_executor.GraphModule), as TVM's factory module is."""
        from mlf import read_mlf
        mod_name = read_mlf(self.tar).module_name
        if name != mod_name:
            raise AotError(f"the module is named '{mod_name}', not '{name}'")
        return lambda *devs: OnDevice(self.tar, devs[0] if devs else None)

    def export_library(self, path, fcompile=None, **kwargs):
        """Saves the module for runtime.load_module: a shared library (.so, .dylib, .dll) of its
        host C, linked here; any other path gets its Model Library Format tarball."""
        from .compiler import write_atomic
        if _export_shared(self, path, fcompile):
            return
        write_atomic(path, self.tar)

    def save(self, path, fmt=""):
        """TVM's module.save: an object file (.o; contrib.cc.create_shared links it into a shared
        library), or the Model Library Format tarball for any other name."""
        from .compiler import write_atomic
        if fmt == "o" or str(path).endswith(".o"):
            from .host import build_object
            build_object(self.tar, str(path))
            return
        write_atomic(path, self.tar)

    entry_name = "run"

    def get_function(self, name, query_imports=False):
        from mlf import read_mlf
        return _get_function(self, read_mlf(self.tar).module_name, name)

    def time_evaluator(self, func_name=None, dev=None, number=10, repeat=1, min_repeat_ms=0):
        """TVM's module.time_evaluator(...)(a, b, c).mean: seconds per call, from the harness
        timing `number` back-to-back runs in one process (host C modules)."""
        from .host import run_host

        def evaluate(*arrays):
            means = []
            self._feeds(arrays)
            for _ in range(repeat):
                outs, latency_us = run_host(self.tar, self._feeds(arrays), repeat=max(int(number), 2))
                means.append(latency_us * 1e-6)
            self._store(outs, arrays)
            return ProfileResult(float(np.mean(means)), means)
        return evaluate

    def _feeds(self, arrays):
        if len(arrays) != len(self.inputs) + len(self.outputs):
            raise AotError(f"the module takes {len(self.inputs)} inputs and {len(self.outputs)} outputs, "
                           f"{len(arrays)} arrays given")
        feeds = {}
        for (name, shape, dtype), a in zip(self.inputs, arrays):
            v = np.asarray(a.numpy() if hasattr(a, "numpy") else a)
            if v.shape != shape or str(v.dtype) != dtype:
                raise AotError(f"argument {name} must be {dtype}{list(shape)}, not {v.dtype}{list(v.shape)}")
            feeds[name] = v
        return feeds

    def _store(self, outs, arrays):
        for (name, shape, dtype), a in zip(self.outputs, arrays[len(self.inputs):]):
            if hasattr(a, "copyfrom"):
                a.copyfrom(outs[name])
            else:
                a[...] = outs[name]

    def __call__(self, *arrays):
        from .host import run_host          # the module's own target: host C, CUDA or OpenCL
        self._store(run_host(self.tar, self._feeds(arrays)), arrays)


class OnDevice:
    """A loaded module's MLF and the device to run it on (module["default"](dev)), which
    graph_executor.GraphModule takes."""

    def __init__(self, tar, dev):
        self.tar, self.dev, self.params = tar, dev, {}


class ProfileResult:
    """TVM's time_evaluator result: seconds per call, as the mean, median and each repeat's mean."""

    def __init__(self, mean, results):
        self.mean, self.results = mean, tuple(results)

    @property
    def median(self):
        return float(np.median(self.results))

    @property
    def max(self):
        return float(np.max(self.results))

    @property
    def min(self):
        return float(np.min(self.results))

    @property
    def std(self):
        return float(np.std(self.results))

    def __repr__(self):
        return f"ProfileResult(mean={self.mean}, results={list(self.results)})"


SYMBOLIC_MEMBER = "./aot_symbolic_module.json"
SYMBOLIC_SYMBOL = "aot_module_symbolic"      # the data symbol of a symbolic module's object file


class SharedModule(Module):
    """A module loaded from a shared library (export_library, or save + contrib.cc.create_shared):
    calls go to the library's tvmgen_<mod>_run through ctypes; the MLF the library carries
    (aot_module_mlf) gives its interface."""

    def __init__(self, path, lib=None):
        import ctypes
        try:
            self._lib = lib or ctypes.CDLL(os.path.abspath(path))
            get, size = self._lib.aot_module_mlf, self._lib.aot_module_mlf_size
        except (OSError, AttributeError) as e:
            raise AotError(f"load_module: '{path}' is not a shared library made from an aot module ({e})") from None
        get.restype, size.restype = ctypes.POINTER(ctypes.c_ubyte), ctypes.c_ulong
        super().__init__(ctypes.string_at(get(), size()))
        from mlf import read_mlf
        self._run = getattr(self._lib, f"tvmgen_{read_mlf(self.tar).module_name}_run")
        self._run.restype = ctypes.c_int32

    def _call(self, arrays):
        import ctypes
        feeds = self._feeds(arrays)
        ins = [np.ascontiguousarray(feeds[name]) for name, _, _ in self.inputs]
        outs = [np.zeros(shape, dtype) for _, shape, dtype in self.outputs]
        ptr = ctypes.c_void_p
        in_struct = (ptr * max(len(ins), 1))(*[a.ctypes.data for a in ins])
        out_struct = (ptr * max(len(outs), 1))(*[a.ctypes.data for a in outs])
        if self._run(in_struct, out_struct) != 0:
            raise AotError("the module's run returned an error")
        return {name: o for (name, _, _), o in zip(self.outputs, outs)}

    def __call__(self, *arrays):
        self._store(self._call(arrays), arrays)

    def time_evaluator(self, func_name=None, dev=None, number=10, repeat=1, min_repeat_ms=0):
        import time

        def evaluate(*arrays):
            self._call(arrays)                     # warm-up
            means = []
            for _ in range(max(int(repeat), 1)):
                t0 = time.perf_counter()
                for _ in range(max(int(number), 1)):
                    outs = self._call(arrays)
                means.append((time.perf_counter() - t0) / max(int(number), 1))
            self._store(outs, arrays)
            return ProfileResult(float(np.mean(means)), means)
        return evaluate


def _symbolic(payload):
    """The module a SymbolicModule's save wrote (its _payload), read back."""
    import json
    from .tir.bind import size_vars
    from .tir.script import parse
    try:
        d = json.loads(payload)
        if d.get("format") != "aot-symbolic-module/1":
            raise ValueError("unknown format")
        func = parse(d["script"])
        target, name, sizes = str(d["target"]), str(d["name"]), list(d["sizes"])
    except (ValueError, KeyError, TypeError, AttributeError, SyntaxError, AotError) as e:
        raise AotError(f"load_module: the module's own file is damaged ({e})") from None
    svars = {v.name: v for v in size_vars(func)}
    if sorted(svars) != sorted(sizes):
        raise AotError(f"load_module: the module's sizes {sizes} are not those of its function ({sorted(svars)})")
    return SymbolicModule(func, target, name, [svars[n] for n in sizes])


def load_module(path):
    """aot.runtime.load_module: a module saved by export_library / save: a shared library, the
    Model Library Format tarball, or a symbolic module's own file."""
    import ctypes
    from .host import tar_bytes
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise AotError(f"cannot read '{path}': {e.strerror}") from None
    if magic == b"\x7fELF":
        try:
            lib = ctypes.CDLL(os.path.abspath(path))
        except OSError as e:
            raise AotError(f"load_module: '{path}' is not a shared library ({e})") from None
        if hasattr(lib, SYMBOLIC_SYMBOL):
            get, size = getattr(lib, SYMBOLIC_SYMBOL), getattr(lib, SYMBOLIC_SYMBOL + "_size")
            get.restype, size.restype = ctypes.POINTER(ctypes.c_ubyte), ctypes.c_ulong
            return _symbolic(ctypes.string_at(get(), size()))
        return SharedModule(path, lib)
    data = tar_bytes(path)
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            payload = t.extractfile(SYMBOLIC_MEMBER).read() if SYMBOLIC_MEMBER in t.getnames() else None
    except tarfile.TarError:
        raise AotError(f"load_module: '{path}' is not a module saved by aot (export_library or save)") from None
    if payload is not None:
        return _symbolic(payload)
    return Module(data)


_PACKED_SHIM = """#include <stdint.h>
typedef int32_t (*aot_packed_fn)(const char*, int32_t, void* const*, const double*, const char* const*);
aot_packed_fn aot_packed_hook = 0;
int32_t aot_packed_call(const char* name, int32_t n, void* const* ptrs, const double* vals, const char* const* kinds);
int32_t aot_packed_call(const char* name, int32_t n, void* const* ptrs, const double* vals, const char* const* kinds) {
  return aot_packed_hook ? aot_packed_hook(name, n, ptrs, vals, kinds) : -1;
}
"""


class InProcessModule(SharedModule):
    """A module whose kernels call tir.call_packed functions registered in this Python process
    (aot.register_func) or functions of LLVM IR a pragma import_llvm gave: its host C, the IR
    (compiled by clang) and aot_packed_call (which hands each packed call to
    aot.runtime.packed through a ctypes callback) are linked into a shared library loaded here,
    and calls run in this process."""

    def __init__(self, tar, lls, name):
        import ctypes
        import subprocess
        import tempfile
        from .contrib.cc import create_shared
        from .contrib.clang import find_clang
        from .errors import BuildError
        from .host import build_object
        self._tmp = tempfile.TemporaryDirectory(prefix="aot_inproc_")
        d = self._tmp.name
        objs = [os.path.join(d, "module.o")]
        build_object(tar, objs[0])
        with open(os.path.join(d, "packed.c"), "w") as f:
            f.write(_PACKED_SHIM)
        objs.append(os.path.join(d, "packed.o"))
        cc = os.environ.get("CC") or "gcc"
        r = subprocess.run([cc, "-std=c99", "-fPIC", "-c", os.path.join(d, "packed.c"), "-o", objs[-1]],
                           capture_output=True, text=True)
        if r.returncode:
            raise BuildError(f"compiling the packed-call entry failed ({cc}):\n{r.stderr[-4000:]}")
        for k, ll in enumerate(lls):
            src, obj = os.path.join(d, f"import{k}.ll"), os.path.join(d, f"import{k}.o")
            with open(src, "w") as f:
                f.write(ll)
            clang = find_clang(required=False)
            if not clang:
                raise AotError(f"module '{name}': pragma import_llvm gives LLVM IR, and there is no clang here to "
                               "compile it (set $CLANG)")
            r = subprocess.run([clang[0], "-O2", "-fPIC", "-c", src, "-o", obj], capture_output=True, text=True)
            if r.returncode:
                raise BuildError(f"module '{name}': compiling the LLVM IR of pragma import_llvm failed:\n"
                                 f"{r.stderr[-4000:]}")
            # as TVM links each pragma's module only for what is still undefined (LLVM's
            # LinkOnlyNeeded), a function two of them define is the first one's: weak symbols
            import shutil
            if len(lls) > 1 and shutil.which("objcopy"):
                subprocess.run(["objcopy", "--weaken", obj], capture_output=True)
            objs.append(obj)
        path = os.path.join(d, "module.so")
        create_shared(path, objs)
        super().__init__(path)
        self._error = None
        proto = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p),
                                 ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_char_p))

        def hook(fname, n, ptrs, vals, kinds):
            from .runtime.packed import call_from_c
            try:
                return call_from_c(fname.decode(), n, ptrs, vals, kinds)
            except BaseException as e:          # raised again once the run returns
                self._error = self._error or e
                return -1
        self._hook = proto(hook)                # kept: the C holds its address
        ctypes.c_void_p.in_dll(self._lib, "aot_packed_hook").value = ctypes.cast(self._hook, ctypes.c_void_p).value

    def _call(self, arrays):
        self._error = None
        out = super()._call(arrays)
        if self._error is not None:
            e, self._error = self._error, None
            raise e
        return out

    def _refuse_save(self, *args, **kwargs):
        raise AotError("save/export_library: this module calls functions of this Python process (call_packed of "
                       "aot.register_func functions) or LLVM IR linked in here (pragma import_llvm); it runs "
                       "only where it was built")

    save = export_library = _refuse_save
