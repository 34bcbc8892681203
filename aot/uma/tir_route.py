"""UMA's TIR route, as TVM lowers a UMA region: the region's ops become tensor expressions (topi's
computes where TVM's strategy would pick one, else the op's own compute), te.create_prim_func
makes them a PrimFunc with blocks (TVM's "pad_temp", "conv2d_nchw", ...), the backend's
registered TIR passes rewrite it phase by phase (typically replacing a block's loops by a
tir.call_extern to the accelerator), and the result, its blocks erased and its buffers
flattened, is the region's C function tvmgen_<mod>_<backend>_main_<N> in the MLF."""
from __future__ import annotations

import numpy as np

from ..errors import AotError


class TirRouteError(AotError):
    pass


def _topi_compute(n, ins):
    """The te tensors TVM's strategy would compute node n with (topi), or None where this
    compiler's own compute of the op stands in (same values; block names may differ)."""
    if n.op == "Conv" and len(ins) == 2 and n.attrs.get("layout", "NCHW") == "NCHW" and \
            int(n.attrs.get("group", 1)) == 1 and len(ins[0].shape) == 4:
        try:
            from ..topi.nn import conv2d_nchw
        except ImportError:
            return None
        pads = [int(p) for p in n.attrs.get("pads", [0, 0, 0, 0])]
        return [conv2d_nchw(ins[0], ins[1], [int(s) for s in n.attrs.get("strides", [1, 1])], pads,
                            [int(d) for d in n.attrs.get("dilations", [1, 1])], n.outputs[0].type.dtype)]
    return None


def region_tensors(fn):
    """(placeholders, outputs) of the region Function node `fn`: te tensors over its inputs."""
    from .. import te
    from ..ops.registry import get_op
    body = fn.attrs["body"]
    vt = {}
    placeholders = []
    for k, v in enumerate(body.inputs):
        t = te.placeholder(tuple(v.type.shape), v.type.dtype, name=_input_name(fn, k))
        vt[id(v)] = t
        placeholders.append(t)

    def run(nodes):
        for n in nodes:
            if n.op == "Function" and n.attrs.get("Composite"):
                inner = n.attrs["body"]
                for iv, ov in zip(inner.inputs, n.inputs):
                    vt[id(iv)] = vt[id(ov)]
                run(inner.nodes)
                for iv, ov in zip(inner.outputs, n.outputs):
                    vt[id(ov)] = vt[id(iv)]
                continue
            ins = [vt[id(v)] if v is not None else None for v in n.inputs]
            outs = _topi_compute(n, ins)
            if outs is None:
                op = get_op(n.op)
                if op.compute is None:
                    raise TirRouteError(f"{fn.attrs['global_symbol']}: node '{n.name}' ({n.op}) has no tensor "
                                        "expression to lower through; register a lowering for it")
                outs = op.compute(n, *ins)
            for o, t in zip(n.outputs, outs):
                vt[id(o)] = t
    run(body.nodes)
    return placeholders, [vt[id(v)] for v in body.outputs]


def _input_name(fn, k):
    """TVM names a region's parameters after the relay variables they bind; here the graph
    values the region reads (sanitised), else p<k>."""
    import re
    v = fn.inputs[k] if k < len(fn.inputs) else None
    name = re.sub(r"\W", "_", getattr(v, "name", "") or "")
    return name if name and name[0].isalpha() else f"p{k}"


def apply_pass(p, func):
    """One registered pass on func -> the PrimFunc it returns. A tir.transform.prim_func_pass
    (function or class style) runs on a module of the one function; an object that only has
    transform_function(func, mod, ctx) is called directly."""
    from ..ir.module import IRModule
    from ..ir.transform import Pass, PassContext
    from ..tir.stmt import PrimFunc
    name = func.name
    try:
        if isinstance(p, Pass):
            # run as relay.build's PassContext(opt_level=3) runs it in TVM; tvm.transform's context
            # (aot/transform.py) is not tvm.ir.transform's here, so its opt_level is not the build's
            out = p.transform_module(IRModule({name: func}), PassContext.current())
        elif hasattr(p, "transform_function"):
            out = p.transform_function(func, IRModule({name: func}), PassContext.current())
        else:
            out = p(IRModule({name: func}))
    except AotError:
        raise
    except Exception as e:           # the backend's own pass
        import traceback
        where = traceback.extract_tb(e.__traceback__)[-1]
        raise TirRouteError(f"{name}: TIR pass {_pass_name(p)} failed at {where.filename.rsplit('/', 1)[-1]}:"
                            f"{where.lineno}: {type(e).__name__}: {e}") from None
    if hasattr(out, "functions"):
        fns = dict(out.functions)
        out = fns.get(name, next(iter(fns.values()), None) if len(fns) == 1 else None)
    if not isinstance(out, PrimFunc):
        raise TirRouteError(f"{name}: TIR pass {_pass_name(p)} returned {type(out).__name__}, not a PrimFunc")
    return out


def _pass_name(p):
    info = getattr(p, "info", None)
    return getattr(info, "name", None) or getattr(type(p), "__name__", "?")


def lower_region(backend, fn):
    """(the PrimFunc of region `fn` after the backend's TIR passes, ready to render, its scratch
    bytes): named fn's global symbol, its parameters the region's inputs, then its outputs, then
    (when it has arrays of its own, such as TOPI's pad_temp) the scratch that holds them."""
    from .api.utils import TIR_PHASES
    from ..tir.flatten import flatten
    from ..tir.legalize import legalize
    from ..tir.stmt import PrimFunc
    symbol = fn.attrs["global_symbol"]
    placeholders, outs = region_tensors(fn)
    func = _create_prim_func(placeholders + outs, symbol)
    params = list(func.params)
    for phase in TIR_PHASES:
        for p in backend.tir_passes(phase):
            func = apply_pass(p, func)
    if [id(b) for b in func.params] != [id(b) for b in params]:
        raise TirRouteError(f"{symbol}: a TIR pass changed the function's parameters; the region's inputs and "
                            "outputs are fixed by the graph")
    func = PrimFunc(symbol, func.params, func.body, len(placeholders), dict(func.attrs))
    from ..tir.blocks import without_blocks
    return hoist_allocations(legalize(flatten(drop_unused_allocations(without_blocks(func)))))


SCRATCH_ALIGN = 16


def hoist_allocations(func):
    """(func with its arrays placed in one trailing scratch parameter, the scratch's bytes): the
    executor plans that scratch in the workspace for the region's step (as TVM's USMP places a
    region's pad_temp in the workspace pool), not on the C stack. Arrays of the first array's
    dtype move; scalars, arrays of another dtype and arrays an external call is given stay local."""
    from ..tir.expr import Load, transform, wrap
    from ..tir.op import ExternCall
    from ..tir.stmt import Allocate, Buffer, BufferData, PrimFunc, StmtMutator, Store, stmt_exprs, walk_stmts
    from ..tir.expr import walk
    from ..tir.simplify import simplify
    allocs = [x.buffer for x in walk_stmts(func.body) if isinstance(x, Allocate) and x.buffer.size > 1]
    passed = {id(a.buffer) for e in stmt_exprs(func.body) for x in walk(e) if isinstance(x, ExternCall)
              for a in x.args if isinstance(a, BufferData)}
    multi = {id(x.buffer) for e in stmt_exprs(func.body) for x in walk(e)
             if isinstance(x, Load) and len(x.indices) != 1}
    allocs = [b for b in allocs if id(b) not in passed and id(b) not in multi]
    if not allocs:
        return func, 0
    dtype = allocs[0].dtype
    allocs = [b for b in allocs if b.dtype == dtype]
    itemsize = max(1, int(np.dtype(dtype).itemsize))
    step = max(1, SCRATCH_ALIGN // itemsize)
    offset, total = {}, 0
    for b in allocs:
        offset[id(b)] = total
        total += -(-b.size // step) * step
    scratch = Buffer("scratch", dtype, (total,))

    def at(buf, index):
        off = offset[id(buf)]
        return index if off == 0 else simplify(index + wrap(off, index.dtype))

    def load(e):
        if isinstance(e, Load) and id(e.buffer) in offset:
            return Load(scratch, at(e.buffer, e.indices[0]))
        return None

    class Hoist(StmtMutator):
        def mutate_expr(self, e):
            return transform(e, load)

        def visit_Allocate(self, s):
            if id(s.buffer) in offset:
                return self.visit(s.body)
            return super().visit_Allocate(s)

        def visit_Store(self, s):
            idx, val = self.mutate_expr(s.index), self.mutate_expr(s.value)
            if id(s.buffer) in offset:
                return Store(scratch, at(s.buffer, idx), val)
            return s if idx is s.index and val is s.value else Store(s.buffer, idx, val)
    body = Hoist().visit(func.body)
    return PrimFunc(func.name, list(func.params) + [scratch], body, func.num_inputs, dict(func.attrs)), total * itemsize


def drop_unused_allocations(func):
    """func without the allocations its body no longer touches: a pass that replaced a stage by
    an external call (the template drops TOPI's pad stage) leaves that stage's buffer behind,
    and C would declare it unused."""
    from ..tir.stmt import StmtMutator, uses_buffer

    class Drop(StmtMutator):
        def visit_Allocate(self, s):
            body = self.visit(s.body)
            if not uses_buffer(body, s.buffer):
                return body
            return s if body is s.body else type(s)(s.buffer, body)
    body = Drop().visit(func.body)
    return func if body is func.body else func.with_body(body)


def _create_prim_func(tensors, name):
    from ..tir.stmt import PrimFunc
    from ..tir.from_te import create_prim_func
    f = create_prim_func(tensors)
    return PrimFunc(name, f.params, f.body, f.num_inputs, dict(f.attrs))
