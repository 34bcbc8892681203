"""UMABackend: an accelerator or kernel library plugged in from Python (TVM's UMA, for the C path).

    class VanillaAcceleratorBackend(UMABackend):
        target_name = "vanilla_accelerator"

        def __init__(self):
            super().__init__()
            self._register_pattern("conv2d", is_op("Conv")(wildcard(), is_constant()), predicate=same_stride1)
            self._register_lowering("conv2d", lower_conv2d)
            self._register_codegen(fmt="c", includes=["vanilla.h"], sources=["src/vanilla.c", "src/vanilla.h"])

    VanillaAcceleratorBackend().register()      # then target "vanilla_accelerator, c"

What a backend claims (patterns, or single ops with _register_op) is cut out of the graph by
the partition passes (aot/passes/partition.py); each region becomes one C function,
tvmgen_<mod>_<target_name>_main_<N>, whose body is the calls the lowerings return, and the
executor calls it in order with the rest, its tensors planned in the same workspace.
"""
from __future__ import annotations

import inspect
import os
import re

from ..errors import AotError
from ..executor.kernels import ExternalKernel, ExternCall
from ..memory_plan import Buf, plan
from ..target import PLUGINS, register_kind
from .lowering import DEVICE, Call, Tensor, DeviceToken

_NAME_RE = re.compile(r"^[a-z][a-z0-9_\-]*$")
_INCLUDE_RE = re.compile(r'#include\s*[<"]([^">]+)[">]')
_FILE_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./\-]*$")
SCRATCH_ALIGN = 16


class BackendError(AotError):
    pass


class UMABackend:
    """Subclass it: set target_name, register in __init__, then call register()."""
    target_name: str = ""

    def __init__(self, merge_compiler_regions=True):
        self.merge_compiler_regions = merge_compiler_regions
        self._patterns = []          # (name, pattern, predicate)
        self._ops = []               # (op, predicate)
        self._lowerings = {}         # pattern name or op -> fn(Call) -> ExternCall | [ExternCall]
        self._includes = []
        self._sources = {}
        self._device = False
        self._device_setup = ()
        self._graph_safe = False
        self._target_attrs = {}      # name -> default
        self._tir_passes = []        # (PassPhase, prim_func_pass): TVM's TIR route (aot/uma/tir_route.py)
        self._relay_passes = []      # (PassPhase.PRE_PARTITIONING, module pass) run by partition(relay module)
        self.target = None           # the Target the build names this backend with

    # -- registration (TVM's UMA method names) ---------------------------------------------
    def _register_pattern(self, name, pattern, predicate=None):
        """Claim every match of pattern (a dataflow pattern) that predicate(match) accepts; its
        nodes become one composite named '<target_name>.<name>', lowered by the lowering
        registered under name."""
        from ..ir.pattern import DFPattern
        if not isinstance(pattern, DFPattern):
            raise BackendError(f"backend '{self._name()}': pattern '{name}' is not a dataflow pattern")
        self._patterns.append((str(name), pattern, predicate))

    def _register_op(self, op, predicate=None):
        """Claim single nodes of op (that predicate(node) accepts), lowered by the lowering
        registered under op."""
        from ..ops import REGISTRY as OPS
        if op not in OPS:
            raise BackendError(f"backend '{self._name()}': _register_op('{op}'): no such op")
        self._ops.append((op, predicate))

    def _register_lowering(self, name, fn):
        self._lowerings[str(name)] = fn

    def _register_tir_pass(self, phase, tir_pass):
        """TVM's TIR route: a unit with no lowering of its own is lowered from its tensor
        expressions (topi's computes) to a PrimFunc with blocks, then this pass (a
        tir.transform.prim_func_pass) rewrites it at `phase` (TIR_PHASE_0..3, in order of
        registration within a phase); the result is the region's C function."""
        from .api.utils import TIR_PHASES
        if phase not in TIR_PHASES:
            raise BackendError(f"backend '{self._name()}': _register_tir_pass at {phase}: TIR passes run at "
                               f"{', '.join(p.name for p in TIR_PHASES)}")
        if not callable(tir_pass) and not hasattr(tir_pass, "transform_function"):
            raise BackendError(f"backend '{self._name()}': _register_tir_pass takes a tir.transform.prim_func_pass, "
                               f"not {type(tir_pass).__name__}")
        self._tir_passes.append((phase, tir_pass))

    def tir_passes(self, phase):
        """The TIR passes registered at `phase`, in registration order."""
        return [p for ph, p in self._tir_passes if ph is phase]

    def _register_relay_pass(self, phase, relay_pass):
        """A relay module pass run by partition() on the relay module before it partitions
        (PRE_PARTITIONING). The regions are cut from the graph IR, not from a relay module, so
        the POST_PARTITIONING phases have no module to run on and are refused by name."""
        from .api.utils import PassPhase
        if phase is not PassPhase.PRE_PARTITIONING:
            raise BackendError(f"backend '{self._name()}': _register_relay_pass at {phase}: only PRE_PARTITIONING "
                               "relay passes run here (the partitioned regions are graph-IR functions, not a relay "
                               "module); write the change as a TIR pass or a lowering")
        self._relay_passes.append(relay_pass)

    def _register_operator_strategy(self, op, strategy, plevel=11):
        """Refused by name: a unit is lowered by its lowering (_register_lowering) or through
        topi's compute for its op (then the TIR passes); there are no relay strategies to override."""
        raise BackendError(f"backend '{self._name()}': _register_operator_strategy('{op}'): operator strategies are "
                           "not supported; lower the op with _register_lowering, or rewrite its PrimFunc with "
                           "_register_tir_pass")

    def _register_codegen(self, fmt="c", includes=None, sources=None):
        """includes: header names the executor includes (or a callable returning #include
        lines, as in TVM); sources: files the MLF ships, paths relative to the backend's module
        (or {name: text}). .c files are compiled with the model, .h files are headers."""
        if fmt != "c":
            raise BackendError(f"backend '{self._name()}': codegen format '{fmt}' is not supported (only 'c')")
        included = {}
        if callable(includes):
            includes, included = self._included_files(includes)
        self._includes = [str(h) for h in (includes or ())]
        bad = [h for h in self._includes if not _FILE_RE.match(h)]
        if bad:
            raise BackendError(f"backend '{self._name()}': include '{bad[0]}' is not a plain header path")
        if isinstance(sources, dict):
            items = [(os.path.basename(k), v) for k, v in sources.items()]
        else:
            try:
                here = os.path.dirname(os.path.abspath(inspect.getfile(type(self))))
            except (TypeError, OSError):          # a class typed into an interpreter: no module file
                here = os.getcwd()
            items = []
            for path in sources or ():
                full = path if os.path.isabs(path) else os.path.join(here, path)
                try:
                    with open(full, encoding="utf-8") as f:
                        items.append((os.path.basename(full), f.read()))
                except (OSError, UnicodeDecodeError) as e:
                    raise BackendError(f"backend '{self._name()}': cannot read source '{path}': "
                                       f"{getattr(e, 'strerror', None) or e}")
        for name, text in items:
            if not _FILE_RE.match(name) or not name.endswith((".c", ".h")) or name.startswith("tvmgen_"):
                raise BackendError(f"backend '{self._name()}': source '{name}' must be a .c or .h file name "
                                   "of letters, digits, '_', '-' and '.' (not tvmgen_*)")
            self._sources[name] = text
        for name, text in included.items():
            if name in self._sources:
                raise BackendError(f"backend '{self._name()}': included file '{name}' has the name of one of its "
                                   "sources")
            self._sources[name] = text

    def _included_files(self, fn):
        """TVM's includes hook: fn() returns #include lines, which TVM pastes into the generated C.
        A line naming a file by its path (the template's '#include "/abs/dir/conv2dnchw.cc"')
        has that file shipped in the MLF's include directory and is included by its name, so
        that the MLF builds anywhere; other headers are included as written."""
        try:
            text = fn()
        except Exception as e:          # the backend's own code
            raise BackendError(f"backend '{self._name()}': the includes hook failed: {type(e).__name__}: {e}") from None
        if not isinstance(text, str):
            raise BackendError(f"backend '{self._name()}': the includes hook returned {type(text).__name__}, "
                               "not the text of #include lines")
        other = [ln.strip() for ln in text.splitlines()
                 if ln.strip() and not _INCLUDE_RE.match(ln.strip()) and not ln.strip().startswith("//")]
        if other:
            raise BackendError(f"backend '{self._name()}': the includes hook returned '{other[0]}', which is not an "
                               "#include line: ship code as a source (_register_codegen(sources=...)) or in an "
                               "included file")
        names, files = [], {}
        for h in _INCLUDE_RE.findall(text):
            if os.path.isabs(h) or os.sep in h and os.path.isfile(h):
                try:
                    with open(h, encoding="utf-8") as f:
                        body = f.read()
                except (OSError, UnicodeDecodeError) as e:
                    raise BackendError(f"backend '{self._name()}': cannot read included file '{h}': "
                                       f"{getattr(e, 'strerror', None) or e}") from None
                base = os.path.basename(h)
                if not _FILE_RE.match(base) or base.startswith("tvmgen_") or base.endswith(".c"):
                    raise BackendError(f"backend '{self._name()}': included file '{base}' must be named with "
                                       "letters, digits, '_', '-' and '.', not end in .c and not start with tvmgen_")
                if files.get(base, body) != body:
                    raise BackendError(f"backend '{self._name()}': two included files are named '{base}'")
                files[base] = body
                h = base
            names.append(h)
        return names, files

    def _register_device_context(self, create=None, destroy=None, graph_safe=False):
        """The backend's calls get a device context. On a C target, run takes it in struct
        tvmgen_<mod>_devices and TVMDevice<Name>Open/Activate/Deactivate/Close are called around
        the calls (TVM's device API). On a GPU target the host makes it: int32_t create(void**
        context, void* stream) at init, int32_t destroy(void* context) at deinit (a library
        handle bound to the module's stream).

        graph_safe=True says that on a GPU target each call only enqueues device work on that
        stream (no host-side compute, allocation or synchronisation), so the host may record the
        whole run as one CUDA graph at init and replay it. A backend that does not say so keeps
        the module's run eager: a host-side step would run once, at capture, and never again."""
        self._device = True
        self._device_setup = (create, destroy) if create else ()
        self._graph_safe = bool(graph_safe)

    def _register_target_attr(self, name, default=None):
        """An option of the backend's target string: 'npu -sram_words=65536'."""
        self._target_attrs[name] = default

    def get_target_attr(self, name):
        if name not in self._target_attrs:
            raise BackendError(f"backend '{self._name()}' has no target attribute '{name}'")
        value = self.target.get(name) if self.target is not None else None
        return self._target_attrs[name] if value is None else value

    def register(self):
        """Make the backend a target kind: 'target_name, c' then hands it what it claims."""
        name = self._name()
        if not _NAME_RE.match(name):
            raise BackendError(f"backend target_name '{name}' must be lower case letters, digits, '_' or '-'")
        register_kind(name, list(self._target_attrs), backend=self)
        return self

    def _name(self):
        return self.target_name or type(self).__name__

    # -- used by the partitioner and the executor ---------------------------------------------
    def claims(self, node) -> bool:
        comp = node.attrs.get("Composite", "") if node.op == "Function" else ""
        if comp:
            return comp.split(".", 1)[0] == self.target_name
        for op, predicate in self._ops:
            if node.op == op and (predicate is None or self._guard(predicate, f"predicate of op {op}")(node)):
                return True
        return False

    def patterns(self):
        return [(f"{self.target_name}.{name}", pat, self._guard(pred, f"predicate of pattern '{name}'"))
                for name, pat, pred in self._patterns]

    def _guard(self, fn, what):
        """fn (the backend's own code, given a match or a node), its failures reported by name."""
        if fn is None:
            return None

        def guarded(x):
            try:
                return fn(x)
            except AotError:
                raise
            except Exception as e:
                node = x.nodes[-1] if hasattr(x, "nodes") else x
                raise BackendError(f"backend '{self.target_name}': {what} failed on node '{node.name}' "
                                   f"({node.op}): {type(e).__name__}: {e}") from None
        return guarded

    def partition(self, graph, mod="default", log=None):
        """graph with what this backend claims cut out into its external functions. Given a relay
        module (TVM's partition(mod, params=None)), it runs the backend's PRE_PARTITIONING relay
        passes and returns the module marked for this backend: relay.build cuts the regions out
        when it compiles for a target naming the backend (Target("my_npu", host="c"))."""
        if hasattr(graph, "functions"):            # a relay IRModule (the relay layer sits above this one)
            return self._partition_relay(graph, mod if isinstance(mod, dict) else None)
        return partition_for([self], graph, mod, log)

    def _partition_relay(self, mod, params):
        if params:
            raise BackendError(f"backend '{self._name()}': partition(mod, params): bind the params in relay.build "
                               "(params=...) instead")
        for p in self._relay_passes:
            try:
                mod = p(mod)
            except AotError:
                raise
            except Exception as e:      # the backend's own pass
                raise BackendError(f"backend '{self._name()}': relay pass {getattr(p, '__name__', type(p).__name__)} "
                                   f"failed: {type(e).__name__}: {e}") from None
        out = type(mod)(dict(mod.functions))
        out.partitioned_for = tuple(getattr(mod, "partitioned_for", ())) + (self.target_name,)
        return out

    def lower_function(self, fn) -> ExternalKernel:
        """A partitioned Function node -> the ExternalKernel the executor calls: the calls its
        units' lowerings return, or, where no unit has a lowering, TVM's TIR route (the region
        lowered through its tensor expressions and the backend's TIR passes, tir_route.py)."""
        body = fn.attrs["body"]
        names = [self._unit_name(n) for n in body.nodes]
        missing = [nm for nm in names if nm not in self._lowerings]
        if missing and len(missing) == len(names):
            from .tir_route import lower_region
            try:
                func, scratch = lower_region(self, fn)
            except AotError as e:
                raise BackendError(f"backend '{self.target_name}': {e}") from None
            return ExternalKernel(fn.attrs["global_symbol"], scratch_bytes=scratch, sources=dict(self._sources),
                                  includes=tuple(self._includes), prim_func=func, module=self.target_name)
        if missing and self._tir_passes:
            raise BackendError(f"backend '{self.target_name}': {fn.attrs['global_symbol']} mixes units with lowerings "
                               f"and units without ({', '.join(sorted(set(missing)))}), which go through the TIR "
                               "passes: register a lowering for each, or for none")
        n_in = len(body.inputs)
        key = {id(v): ("param", k) for k, v in enumerate(body.inputs)}
        for j, v in enumerate(body.outputs):
            key.setdefault(id(v), ("param", n_in + j))
        bufs = []
        for i, n in enumerate(body.nodes):       # values made and used inside: in its scratch
            for o in n.outputs:
                if id(o) not in key:
                    last = max([j for j, m in enumerate(body.nodes) if any(x is o for x in m.inputs)], default=i)
                    bufs.append(Buf(id(o), max(o.type.nbytes, 1), i, last))
                    key[id(o)] = ("scratch", id(o))
        inits = []
        units = [self._lower_unit(fn, i, n, key, bufs, inits) for i, n in enumerate(body.nodes)]
        scratch = plan(bufs, SCRATCH_ALIGN) if bufs else 0
        offset = {b.key: b.offset for b in bufs}
        calls = [ExternCall(c.symbol, tuple(("scratch", offset[a[1]], a[2]) if isinstance(a, tuple) and a[0] == "scratch"
                                            else a for a in c.args)) for u in units for c in u]
        return ExternalKernel(fn.attrs["global_symbol"], scratch_bytes=scratch, sources=dict(self._sources),
                              includes=tuple(self._includes), body=tuple(calls),
                              device=self.target_name if self._device else None, device_setup=self._device_setup,
                              init_body=tuple(inits), module=self.target_name,
                              graph_safe=bool(self._device and self._graph_safe))

    @staticmethod
    def _unit_name(n):
        comp = n.attrs.get("Composite", "") if n.op == "Function" else ""
        return comp.split(".", 1)[1] if comp else n.op

    def _lower_unit(self, fn, step, n, key, bufs, inits):
        """The unit's calls, scratch places still symbolic ("scratch", key, dtype); a scratch the
        lowering asks for joins bufs, live at this unit's step only."""
        comp = n.attrs.get("Composite", "") if n.op == "Function" else ""
        name = comp.split(".", 1)[1] if comp else n.op
        nodes = n.attrs["body"].nodes if comp else [n]
        what = f"backend '{self.target_name}': node '{nodes[-1].name}' ({comp or n.op}) in {fn.attrs['global_symbol']}"
        lowering = self._lowerings.get(name)
        if lowering is None:
            raise BackendError(f"{what}: no lowering is registered for '{name}' (use _register_lowering)")
        tensors = {}

        def tensor(v):
            if id(v) not in tensors:
                tensors[id(v)] = Tensor(v, key[id(v)])
            return tensors[id(v)]

        def scratch(nbytes):
            nbytes = int(nbytes)
            if nbytes < 1:
                raise BackendError(f"{what}: call.scratch({nbytes}) must ask for at least one byte")
            t = _Scratch(f"{fn.attrs['global_symbol']}_scratch{len(bufs)}", nbytes)
            bufs.append(Buf(id(t), nbytes, step, step))
            tensors[id(t)] = Tensor(t, ("scratch", id(t)))
            return tensors[id(t)]
        unit = Call(name, nodes, [tensor(v) for v in n.inputs if v is not None], [tensor(v) for v in n.outputs],
                    self._device, scratch)
        try:
            result = lowering(unit)
        except Exception as e:          # the backend's own code: any failure is its report
            detail = str(e) if isinstance(e, AotError) else f"{type(e).__name__}: {e}"
            raise BackendError(f"{what}: lowering failed: {detail}") from None
        inits.extend(ExternCall(c.symbol, tuple(("device",) if isinstance(a, DeviceToken) else a for a in c.args))
                     for c in unit.init_calls)
        if isinstance(result, ExternCall):
            result = [result]
        if not isinstance(result, (list, tuple)) or not result or \
                not all(isinstance(c, ExternCall) for c in result):
            raise BackendError(f"{what}: the lowering {_where(lowering)} must return call_extern(...) or a list of "
                               f"them, not {result!r:.200}")
        result = list(result)
        known = {id(t) for t in tensors.values()}
        out = []
        for c in result:
            args = []
            for a in c.args:
                if isinstance(a, Tensor):
                    if id(a) not in known:
                        raise BackendError(f"{what}: call {c.symbol} passes {a!r}, which is not an input or output "
                                           "of this unit")
                    args.append(("param", a.key[1]) if a.key[0] == "param" else ("scratch", a.key[1], a.dtype))
                elif isinstance(a, DeviceToken):
                    args.append(("device",))
                else:
                    args.append(a)
            out.append(ExternCall(c.symbol, tuple(args)))
        return out


class _Scratch:
    """What call.scratch(nbytes) hands a lowering: bytes of the function's scratch for one unit."""

    def __init__(self, name, nbytes):
        from ..ir.graph import TensorType
        self.name, self.type, self.const = name, TensorType((nbytes,), "uint8"), None


def registered():
    """{target name: backend} of the registered plug-in backends (aot.target keeps the one table)."""
    return {name: b for name, (_, b) in PLUGINS.items()}


def get_backend(name):
    return registered().get(name)


def partition_for(backends, graph, mod="default", log=None):
    """Run the partition passes for backends, in priority order (the target list's order)."""
    from ..passes.partition import annotate_target, merge_composite, merge_compiler_regions, partition_graph
    log = log or (lambda m: None)
    patterns = [p for b in backends for p in b.patterns()]
    graph, n = merge_composite(graph, patterns)
    log(f"pass merge_composite: {n} composite(s) matched")
    graph, n = annotate_target(graph, [(b.target_name, b.claims) for b in backends])
    log(f"pass annotate_target: {n} node(s) claimed by " + ", ".join(b.target_name for b in backends))
    merging = {b.target_name for b in backends if b.merge_compiler_regions}
    graph, n = merge_compiler_regions(graph, merging)
    log(f"pass merge_compiler_regions: {n} region(s)")
    graph, n = partition_graph(graph, mod)
    log(f"pass partition_graph: {n} external function(s)")
    for f in graph.nodes:
        if f.op == "Function" and f.attrs.get("Compiler"):
            body = f.attrs["body"]
            log(f"  {f.attrs['global_symbol']}: " + "; ".join(
                ", ".join(f"{x.name} ({x.op})" for x in m.attrs["body"].nodes) + f" as {m.attrs['Composite']}"
                if m.op == "Function" else f"{m.name} ({m.op})" for m in body.nodes))
    return graph


def external_lowering(backends):
    """The executor's `external` hook: a group that is one partitioned Function node goes to
    the backend named by its Compiler attribute."""
    by_name = {b.target_name: b for b in backends}

    def lower(group, symbol):
        if len(group.nodes) != 1 or group.nodes[0].op != "Function":
            return None
        fn = group.nodes[0]
        compiler = fn.attrs.get("Compiler")
        if not compiler:
            return None
        if compiler not in by_name:
            raise BackendError(f"{fn.attrs['global_symbol']}: backend '{compiler}' is not in the target list")
        return by_name[compiler].lower_function(fn)
    return lower


__all__ = ["UMABackend", "registered", "get_backend", "partition_for", "external_lowering", "DEVICE"]


def _where(fn):
    """'file.py:line' of a plug-in's function, for messages about what it returned."""
    import inspect
    try:
        return f"{os.path.basename(inspect.getsourcefile(fn))}:{fn.__code__.co_firstlineno}"
    except (TypeError, AttributeError):
        return repr(getattr(fn, "__name__", fn))


def load_backend_file(path):
    """Import a backend module (aot compile --backend FILE.py) and register the UMABackend
    subclasses it defines that it did not register itself. Returns their target names."""
    import importlib.util
    import sys
    if not os.path.isfile(path):
        raise BackendError(f"--backend '{path}': no such file")
    name = "aot_backend_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise BackendError(f"--backend '{path}': not a Python module")
    module = importlib.util.module_from_spec(spec)
    before = registered()
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except AotError as e:
        raise BackendError(f"--backend '{path}': {e}") from None
    except SystemExit as e:         # a module that exits while loading ends no compile silently
        raise BackendError(f"--backend '{path}' called sys.exit({e.code!r}) while loading: a backend module "
                           "defines and registers backends, it does not exit") from None
    except Exception as e:          # the user's module: report where, not our traceback
        import traceback
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(tb)
                      if os.path.abspath(f.filename) == os.path.abspath(path)), os.path.basename(path))
        raise BackendError(f"--backend '{path}' failed to load at {where}: {type(e).__name__}: {e}") from None
    names = [n for n, b in registered().items() if before.get(n) is not b]
    for obj in vars(module).values():
        if (isinstance(obj, type) and issubclass(obj, UMABackend) and obj is not UMABackend
                and obj.__module__ == name and obj.target_name):
            # TVM's backends give target_name as a property: only an instance knows it
            static = None if isinstance(obj.target_name, property) else obj.target_name
            if static in names:
                continue
            try:
                inst = obj()
                if inst.target_name in names:
                    continue
                inst.register()
            except AotError as e:
                raise BackendError(f"--backend '{path}': {e}") from None
            except Exception as e:
                raise BackendError(f"--backend '{path}': {obj.__name__}() failed: {type(e).__name__}: {e}") from None
            names.append(inst.target_name)
    if not names:
        raise BackendError(f"--backend '{path}' defines no UMABackend subclass with a target_name")
    return names
