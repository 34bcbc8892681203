"""The kernel protocol: what one step of the executor runs, and the plan the emitters print.

Every kind has `symbol`, `args` (inputs, then outputs, then its scratch if it has any) and
`num_inputs`; the emitter of each target knows how to call each kind (codegen_c/emit.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import AotError


# What a strategy proved (InPlace.kind):
STAGED = "staged"       # the kernel was staged to write its output over the input (writes_over_staged)
SHRUNK = "shrunk"       # the kernel writes its smaller output over the start of the input (writes_over_in_order)
ORDERED = "ordered"     # the kernel as scheduled writes its output over its input of the same size
                        # (writes_over_in_order: a micro-kernel that orders its own reads, dw3_s8r)


@dataclass(frozen=True)
class InPlace:
    """What aot/tir/inplace.py proved of a kernel: it may write its output over its argument
    `input` (an input that dies there); `offset`: bytes the input lies into the output (a wider
    output holds it at its end). The memory plan decides whether the two share storage."""
    input: int
    kind: str           # STAGED | SHRUNK | ORDERED
    offset: int = 0


@dataclass
class Arg:
    """One argument of a step. A workspace argument is named by `key` (its tensor) until the
    memory plan gives it its `offset` in pool `pool`; the others by `index`."""
    kind: str          # 'input' | 'output' | 'const' | 'workspace'
    index: int         # input/output/const index (None for a workspace argument)
    dtype: str
    pool: int = 0      # which workspace pool (user pools; 0 for the internal workspace)
    size: int = 0      # elements (bytes for a kernel's scratch)
    key: int = None    # a workspace argument's tensor: the planner's key for it
    offset: int = None  # a workspace argument's byte offset in its pool, once planned

    @property
    def place(self):
        """Where the argument points: two arguments with the same place share storage."""
        return self.kind, self.pool, self.offset if self.kind == "workspace" else self.index


class _FromLoopIR:
    """A step whose code is a PrimFunc of ours: its name and parameters say how it is called."""

    @property
    def symbol(self):
        return self.func.name

    @property
    def num_inputs(self):
        return self.func.num_inputs


@dataclass
class GeneratedKernel(_FromLoopIR):
    """A kernel the compiler generated from loop IR: symbol(args...) -> int32 status."""
    func: object               # PrimFunc
    args: list
    no_alias: bool = True      # no two arguments share storage (its pointers may be restrict)
    scratch_bytes: int = 0     # a staged kernel's scratch: its last argument, planned in the workspace
    in_place: InPlace = None   # what its loop IR was proven to write over, when it was staged or shrunk for that
    module: str = None         # the partitioned module (a C file of its own) it belongs to; None: the host's


@dataclass(frozen=True)
class ExternCall:
    """One C call in an external function's body: symbol(args...) -> int32 status. Each arg is
    ("param", k): the function's k-th tensor (inputs, then outputs); ("scratch", byte offset,
    dtype): a place in its scratch; ("device",): its device context; or an int / float literal."""
    symbol: str
    args: tuple


@dataclass
class ExternalKernel:
    """What an external backend's lowering returns for a group it takes (see PlanOptions.external):
    the symbol to call and what it needs; the executor supplies the arguments (ExternalCall).

    scratch_bytes: working memory the callee needs, planned in the workspace and live for
    this step only. sources: {file name: C text} the MLF ships (.c files are compiled with
    the model; .h files go to the include directory); includes: headers the executor
    includes to declare the callees (else the emitter declares symbol from the arguments).
    body: when not empty, symbol is a function the emitter defines (a partitioned region,
    tvmgen_<mod>_<compiler>_main_<N>) that makes these ExternCalls in order. device: the backend
    whose device context (TVM's device API) the call takes, or None."""
    symbol: str
    scratch_bytes: int = 0
    literals: tuple = ()       # trailing integer arguments: shapes, attributes
    sources: dict = field(default_factory=dict)
    includes: tuple = ()
    body: tuple = ()
    device: str = None
    device_setup: tuple = ()   # (create, destroy) symbols a GPU host makes the device context with
    init_body: tuple = ()      # ExternCalls (literals and the device context only) the host's init makes once
    prim_func: object = None   # UMA's TIR route: the PrimFunc the emitter renders as symbol's definition
    module: str = None         # the backend whose module (a C file of its own, lib2...) defines symbol
    graph_safe: bool = False   # its calls only enqueue work on the context's stream: a CUDA graph may record them


@dataclass
class ExternalCall(ExternalKernel):
    """A call into a library or an accelerator's C API (a plug-in backend's lowering of one
    group, an ExternalKernel) with the arguments the executor planned:
    int32_t symbol(inputs..., outputs..., [scratch,] literals..., [device context]), 0 on success."""
    args: list = field(kw_only=True)
    num_inputs: int = field(kw_only=True)

    @classmethod
    def of(cls, ext, args, num_inputs):
        """The call of `ext` with these arguments; its sequences copied as tuples, so that a
        backend's later edits of its own lists do not reach the plan."""
        return cls(ext.symbol, ext.scratch_bytes, tuple(ext.literals), dict(ext.sources), tuple(ext.includes),
                   tuple(ext.body), ext.device, tuple(ext.device_setup), tuple(ext.init_body), ext.prim_func,
                   ext.module, ext.graph_safe, args=args, num_inputs=num_inputs)


@dataclass
class DeviceLaunch(_FromLoopIR):
    """A generated kernel run on an accelerator device (CUDA, OpenCL): the host enqueues
    func over `grid` blocks of `block` threads, with device pointers for args."""
    func: object
    args: list
    grid: tuple = (1, 1, 1)
    block: tuple = (1, 1, 1)


@dataclass
class ExecutorPlan:
    model_name: str
    inputs: list                 # (c_name, original name, TensorType)
    outputs: list
    constants: list              # (c_name, numpy array)
    calls: list
    workspace_size: int
    workspace_lower_bound: int
    tensors: list = field(default_factory=list)   # memory report rows
    notes: list = field(default_factory=list)
    io_offsets: dict = None      # ("input"|"output", index) -> workspace offset (use_workspace_io)
    pools: list = field(default_factory=list)   # user workspace pools: {name, c, size, hint}; [] = internal
    io_pools: dict = None        # ("input"|"output", index) -> the pool (index) holding it (workspace io + pools)
    io_quant: dict = field(default_factory=dict)   # ("input" | "output", k) -> (scale, zero point)
    const_align: int = 16        # each constant array's byte alignment (the C's aligned())

    @property
    def funcs(self):
        """The generated functions, in call order."""
        seen, out = set(), []
        for c in self.calls:
            f = getattr(c, "func", None)
            if f is not None and id(f) not in seen:
                seen.add(id(f))
                out.append(f)
        return out

    @property
    def sources(self):
        """{file name: text} that external calls bring."""
        out = {}
        for c in self.calls:
            for name, text in getattr(c, "sources", {}).items():
                if out.setdefault(name, text) != text:
                    raise AotError(f"two external backends ship different files named '{name}'")
        return out

    @property
    def devices(self):
        """The backends whose device context run takes, in order of first use."""
        out = []
        for c in self.calls:
            d = getattr(c, "device", None)
            if d and d not in out:
                out.append(d)
        return out

    @property
    def constants_size(self):
        return sum(a.nbytes for _, a in self.constants)
