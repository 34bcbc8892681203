"""TVM's tensor-expression schedules (te.create_schedule, s[C].split/tile/fuse/reorder/unroll/
vectorize/parallel/bind, s.cache_read and s.cache_write + compute_at), as a thin layer over the one loop IR: the
schedule lowers its tensors once (aot/te/lower.py, keeping their axis variables) and each call
applies the loop-IR primitive of aot/tir/schedule.py at once, so a refusal names the call that
cannot apply. aot.build turns the result into a module."""
from __future__ import annotations

from ..errors import AotError
from ..tir import schedule as tsch
from ..tir.expr import Var, walk
from ..tir.simplify import const_value
from ..tir.stmt import THREAD_TAGS, For, Store, walk_stmts
from .tensor import IterVar, Tensor, TensorRef


def thread_axis(tag, name=None):
    """te.thread_axis("blockIdx.x"): what bind() binds a loop to."""
    if tag not in THREAD_TAGS:
        raise AotError(f"thread_axis: unknown thread tag {tag!r} (one of {', '.join(THREAD_TAGS)})")
    iv = IterVar(Var(name or tag), 0, 1)
    iv.thread_tag = tag
    return iv


def _tensors(outputs):
    """(the placeholders the outputs read, in order of first appearance; every computed tensor)."""
    seen, order, computed = set(), [], []

    def visit(t):
        if t.uid in seen:
            return
        seen.add(t.uid)
        if t.is_placeholder:
            order.append(t)
            return
        computed.append(t)
        for e in walk(t.op.body):
            if isinstance(e, TensorRef):
                visit(e.tensor)
    for t in outputs:
        visit(t)
    return order, computed


def _iv(var, loops):
    ext = const_value(loops[0].extent) if loops else None
    return IterVar(var, 0, ext if ext is not None else 1)


class Schedule:
    def __init__(self, outputs):
        from .lower import lower
        self.outputs = list(outputs)
        self.inputs, computed = _tensors(self.outputs)
        self.func = lower(self.inputs + self.outputs, "main")
        # reduction loop variables (and those split from them): reorder moves them among the
        # output loops by accumulating in the output (decompose_reduction) first
        self.reduce_vars = {id(v) for t in computed for v in t.op.reduce_axis}

    def __getitem__(self, t):
        if hasattr(t, "output"):
            t = t.output(0)
        if not isinstance(t, (Tensor, _CacheTensor, _CacheWrite)):
            raise tsch.ScheduleError(f"s[...] takes a tensor or its op, not {type(t).__name__}")
        return Stage(self, t)

    def apply(self, fn, what):
        try:
            return fn(self.func.body)
        except tsch.ScheduleError:
            raise
        except AotError as e:
            raise tsch.ScheduleError(f"{what}: {e}") from None

    def set_body(self, body):
        self.func = self.func.with_body(body)

    def loops(self, var):
        return [s for s in walk_stmts(self.func.body) if isinstance(s, For) and s.var is var]

    def buffer_of(self, tensor):
        for b, t in zip(self.func.params, self.inputs + self.outputs):
            if t is tensor:
                return b
        raise tsch.ScheduleError(f"{tensor.name} is not an input or output of the scheduled function")

    def cache_read(self, tensor, scope, readers):
        """TVM's s.cache_read(A, "shared", [C]): the cache is placed by compute_at on the
        returned handle (what the loop IR's cache_read needs: the loop whose body it serves)."""
        if scope not in ("shared", "local"):
            raise tsch.ScheduleError(f"cache_read {tensor.name}: scope {scope!r} is not 'shared' or 'local'")
        self.buffer_of(tensor)
        return _CacheTensor(tensor, scope)

    def cache_write(self, tensor, scope):
        """TVM's CC = s.cache_write(C, "local"): C's stage computes into a local buffer that a
        copy writes to C. It is placed by s[CC].compute_at(s[C], axis): the tile the loops inside
        `axis` store is computed locally, then copied out in that loop. Left unplaced, C is
        computed in place (the same values: a cache of the whole output would only add a copy)."""
        if isinstance(tensor, (_CacheTensor, _CacheWrite)) or tensor.is_placeholder:
            raise tsch.ScheduleError(f"cache_write {tensor.name}: not a computed tensor (an input or a cache "
                                     "is not written by a stage)")
        if not any(tensor is o for o in self.outputs):
            raise tsch.ScheduleError(f"cache_write {tensor.name}: only an output of the schedule is computed into "
                                     "a buffer (the other stages are inlined)")
        if scope != "local":
            raise tsch.ScheduleError(f"cache_write {tensor.name}: scope {scope!r} is not 'local'")
        return _CacheWrite(tensor, scope)

    def __repr__(self):
        from ..tir.printer import func_str
        return func_str(self.func)


class _CacheWrite:
    """The stage s.cache_write returns: its op's axes are the tensor's until compute_at places it,
    then the loops of the tile it computes (TVM: s[CC].op.axis)."""

    def __init__(self, tensor, scope):
        self.tensor, self.scope = tensor, scope
        self.name = f"{tensor.name}.{scope}"
        self.placed, self.op = False, _CacheOp(tensor)
        self.shape, self.dtype = tensor.shape, tensor.dtype


class _CacheOp:
    def __init__(self, tensor):
        self.tensor, self.axis, self.reduce_axis = tensor, list(tensor.op.axis), list(tensor.op.reduce_axis)


class _CacheTensor:
    def __init__(self, tensor, scope):
        self.tensor, self.scope = tensor, scope
        self.name = f"{tensor.name}.{scope}"
        self.placed = False


def _var(x, what):
    if isinstance(x, IterVar):
        return x.var
    if isinstance(x, Var):
        return x
    raise tsch.ScheduleError(f"{what}: expected a loop axis (IterVar), got {type(x).__name__}")


class Stage:
    """s[T]: the loop-IR primitives, addressed by T's axes (T.op.axis, T.op.reduce_axis, or the
    axes an earlier split/fuse returned)."""

    def __init__(self, sch, tensor):
        self.sch, self.tensor = sch, tensor

    @property
    def op(self):
        return self.tensor.op

    def tile(self, x_parent, y_parent, x_factor, y_factor):
        """TVM's tile: split both axes and order them (xo, yo, xi, yi)."""
        xo, xi = self.split(x_parent, factor=x_factor)
        yo, yi = self.split(y_parent, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def _loops(self, iv, what):
        v = _var(iv, what)
        if not self.sch.loops(v):
            raise tsch.ScheduleError(f"{what}: no loop over {v.name} (an axis of an inlined stage, or one that an "
                                     "earlier split/fuse replaced)")
        return v

    def split(self, parent, factor=None, nparts=None):
        v = self._loops(parent, "split")
        if (factor is None) == (nparts is None):
            raise tsch.ScheduleError(f"split {v.name}: give factor or nparts")
        if nparts is not None:
            ext = const_value(self.sch.loops(v)[0].extent)
            if ext is None or int(nparts) < 1:
                raise tsch.ScheduleError(f"split {v.name}: nparts needs a constant extent and nparts >= 1")
            factor = -(-ext // int(nparts))
        body, outer, inner = self.sch.apply(lambda b: tsch.split(b, v, factor), f"split {v.name}")
        self.sch.set_body(body)
        if id(v) in self.sch.reduce_vars:
            self.sch.reduce_vars |= {id(outer), id(inner)}
        return _iv(outer, self.sch.loops(outer)), _iv(inner, self.sch.loops(inner))

    def fuse(self, *args):
        ivs = [self._loops(a, "fuse") for a in args]
        if len(ivs) < 2:
            raise tsch.ScheduleError("fuse needs two or more axes")
        fused = ivs[0]
        for nxt in ivs[1:]:
            body, fused = self.sch.apply(lambda b, f=fused, n=nxt: tsch.fuse(b, f, n), f"fuse {nxt.name}")
            self.sch.set_body(body)
        return _iv(fused, self.sch.loops(fused))

    def reorder(self, *args):
        """A reduction axis among output axes: the reduction first accumulates in the output
        (an init nest, then the update nest the loops are reordered in), as TVM's lowering does."""
        vs = [self._loops(a, "reorder") for a in args]
        try:
            self.sch.set_body(self.sch.apply(lambda b: tsch.reorder(b, vs), "reorder"))
            return
        except tsch.ScheduleError:
            red = [v for v in vs if id(v) in self.sch.reduce_vars]
            if not red:
                raise
        body = self.sch.apply(lambda b: tsch.decompose_reduction(b, red[0]), "reorder")
        order = [x.var for x in walk_stmts(body) if isinstance(x, For)]        # outermost first
        spatial = [v for v in vs if id(v) not in self.sch.reduce_vars]
        for v in sorted(spatial, key=lambda v: -next(k for k, u in enumerate(order) if u is v)):
            body = self.sch.apply(lambda b, v=v, cur=body: tsch.fission(cur, v), f"reorder (fission {v.name})")
        self.sch.set_body(self.sch.apply(lambda b, cur=body: tsch.reorder(cur, vs), "reorder"))

    def unroll(self, var):
        v = self._loops(var, "unroll")
        ext = const_value(self.sch.loops(v)[0].extent)
        self.sch.set_body(self.sch.apply(lambda b: tsch.unroll(b, v, max_extent=max(ext or 0, 1)), f"unroll {v.name}"))

    def vectorize(self, var):
        v = self._loops(var, "vectorize")
        self.sch.set_body(self.sch.apply(lambda b: tsch.vectorize(b, v), f"vectorize {v.name}"))

    def parallel(self, var):
        v = self._loops(var, "parallel")
        self.sch.set_body(self.sch.apply(lambda b: tsch.parallel(b, v), f"parallel {v.name}"))

    def bind(self, ivar, thread_ivar):
        v = self._loops(ivar, "bind")
        tag = getattr(thread_ivar, "thread_tag", None)
        if tag is None:
            raise tsch.ScheduleError(f"bind {v.name}: bind to te.thread_axis(\"blockIdx.x\"), ...")
        self.sch.set_body(self.sch.apply(lambda b: tsch.bind(b, v, tag), f"bind {v.name}"))

    def compute_at(self, parent, axis):
        """Places a cache made by s.cache_read at the start of every iteration of `axis`, or one
        made by s.cache_write around the body of `axis` (computed there, then copied out)."""
        t = self.tensor
        if isinstance(t, _CacheWrite):
            return self._place_cache_write(parent, axis)
        if not isinstance(t, _CacheTensor):
            name = getattr(t, "name", t)
            if isinstance(t, Tensor) and not t.is_placeholder and not any(t is o for o in self.sch.outputs):
                raise tsch.ScheduleError(f"compute_at {name}: aot.te inlines an intermediate stage into its "
                                         "readers (computed where it is read, the same values); computing it per "
                                         "tile into a buffer is not supported: leave it inlined")
            raise tsch.ScheduleError(f"compute_at {name}: only a cache_read or cache_write stage can be moved; "
                                     "other stages are inlined into their reader or are outputs")
        if t.placed:
            raise tsch.ScheduleError(f"compute_at {t.name}: already placed")
        v = parent._loops(axis, f"compute_at {t.name}")
        buf = self.sch.buffer_of(t.tensor)
        body, _ = self.sch.apply(lambda b: tsch.cache_read(b, buf, v, t.scope), f"compute_at {t.name}")
        self.sch.set_body(body)
        t.placed = True

    def _place_cache_write(self, parent, axis):
        t = self.tensor
        if t.placed:
            raise tsch.ScheduleError(f"compute_at {t.name}: already placed")
        if not isinstance(parent, Stage) or parent.tensor is not t.tensor:
            raise tsch.ScheduleError(f"compute_at {t.name}: place it in its own tensor's stage s[{t.tensor.name}]")
        v = parent._loops(axis, f"compute_at {t.name}")
        buf = self.sch.buffer_of(t.tensor)
        body, _, _ = self.sch.apply(lambda b: tsch.cache_write(b, buf, v, t.scope), f"compute_at {t.name}")
        self.sch.set_body(body)
        t.placed = True
        # the loops of the tile the cache holds: what TVM's s[CC].op.axis are after compute_at
        stores = [x for x in walk_stmts(body) if isinstance(x, Store) and x.buffer.name == f"{buf.name}_{t.scope}"
                  and x.buffer.scope == t.scope]
        inside = [x.var for x in walk_stmts(self.sch.loops(v)[0].body) if isinstance(x, For)]
        used = {id(n) for st in stores for n in walk(st.index)}
        t.op.axis = [_iv(x, self.sch.loops(x)) for x in inside if id(x) in used]

    def compute_inline(self):
        """Lowering already inlines every stage without a reduction into its readers; this checks
        that the stage is one of those."""
        t = self.tensor
        if isinstance(t, (_CacheTensor, _CacheWrite)) or t.is_placeholder or any(t is o for o in self.sch.outputs):
            raise tsch.ScheduleError(f"compute_inline {t.name}: an output, an input or a cache cannot be inlined")
        if t.op.reduce_axis:
            raise tsch.ScheduleError(f"compute_inline {t.name}: a reduction is computed into an accumulator, "
                                     "not inlined")


def create_schedule(ops):
    """te.create_schedule(C.op) or ([C.op, D.op])."""
    ops = ops if isinstance(ops, (list, tuple)) else [ops]
    outs = []
    for op in ops:
        t = op if isinstance(op, Tensor) else op.output(0) if hasattr(op, "output") else None
        if t is None or t.is_placeholder:
            raise AotError("create_schedule takes the ops of computed tensors (C.op)")
        outs.append(t)
    return Schedule(outs)


def lower_schedule(sch, args=None, name="main"):
    """A te schedule and its argument tensors (placeholders, then computed tensors; by default the
    schedule's inputs then outputs) -> the loop-IR PrimFunc that aot.build compiles and aot.lower
    prints."""
    from ..tir.stmt import Allocate
    args = list(args if args is not None else sch.inputs + sch.outputs)
    missing = [t.name for t in sch.inputs if not any(t is a for a in args)]
    if missing:
        raise AotError(f"lower: args leave out {', '.join(missing)}, which the schedule reads")
    body = sch.func.body
    # as TVM's lower: a computed tensor left out of the arguments is the function's own buffer
    for t in reversed(sch.outputs):
        if not any(t is a for a in args):
            body = Allocate(sch.buffer_of(t), body)
    n_in = sum(1 for t in args if t.is_placeholder)
    func = sch.func.with_body(body, params=[sch.buffer_of(t) for t in args])
    func.num_inputs = n_in
    func.name = name
    return func
