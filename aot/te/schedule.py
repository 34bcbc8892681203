"""TVM's tensor-expression schedules: te.create_schedule, s[C].split/tile/fuse/reorder/bind/
compute_at/compute_inline/compute_root/vectorize/unroll/parallel/pragma/set_store_predicate,
s.cache_read, s.cache_write, s.rfactor.

As in TVM, a schedule is a graph of stages (one per computed tensor) whose primitives are only
recorded: each stage keeps its iteration variables (the op's axes, then the split/fuse
relations between them, and the order of the leaves), where it is attached (root, inline, or
at a loop of another stage) and what each leaf loop is (vectorized, bound to a thread, ...).
Nothing is lowered until aot.lower or aot.build asks (aot/te/schedule_lower.py builds each
stage's loop nest from its leaves, infers the region an attached stage computes from its
consumer's reads, and guards the tails of splits that do not divide). So any stage can be
scheduled, intermediate ones included, and a refusal names the primitive and why."""
from __future__ import annotations

from ..errors import AotError
from ..tir.expr import INDEX, Bin, Const, Var, lt, transform, wrap
from ..tir.simplify import const_value, simplify
from ..tir.schedule import ScheduleError
from ..tir.stmt import THREAD_TAGS
from .tensor import ComputeOp, ExternOp, IterVar, Reduce, ScanOp, Tensor, TensorIntrin, TensorRef, compute, identity


# a virtual thread: its iterations run one after the other in each thread (TVM interleaves them)
VIRTUAL_TAGS = ("vthread", "cthread")


def thread_axis(dom=None, tag="", name=""):
    """te.thread_axis("blockIdx.x") (or thread_axis((0, n), "threadIdx.x")): what bind() binds a loop to."""
    if isinstance(dom, str) and not tag:
        dom, tag = None, dom
    if tag not in THREAD_TAGS + VIRTUAL_TAGS:
        raise AotError(f"thread_axis: unknown thread tag {tag!r} (one of {', '.join(THREAD_TAGS + VIRTUAL_TAGS)})")
    lo, ext = (0, 1) if dom is None else (dom[0], dom[1] - dom[0]) if isinstance(dom, (tuple, list)) else (0, dom)
    return IterVar(Var(name or tag), lo, ext, IterVar.ThreadIndex, tag)


class Split:
    def __init__(self, parent, outer, inner, factor, nparts):
        self.parent, self.outer, self.inner, self.factor, self.nparts = parent, outer, inner, factor, nparts


class Fuse:
    def __init__(self, outer, inner, fused):
        self.outer, self.inner, self.fused = outer, inner, fused


def _is_reduce(iv):
    return iv.iter_type == IterVar.CommReduce


def _iv_of(x, what):
    if isinstance(x, IterVar):
        return x
    raise ScheduleError(f"{what}: expected a loop axis (IterVar: C.op.axis[k], C.op.reduce_axis[k] or what "
                        f"split/fuse returned), got {type(x).__name__}")


class Stage:
    """s[T]: how tensor T's op is computed. op is the op now computing T (cache_read,
    cache_write and rfactor replace it); tensor is T itself, whose buffer the stage writes."""

    def __init__(self, sch, op, tensor):
        self.sch, self.op, self.tensor = sch, op, tensor
        self.outputs = list(op.outputs) if len(op.bodies) > 1 or isinstance(op, (ScanOp, ExternOp)) else [tensor]
        self.origin_op = tensor.op
        self._reset()
        self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None
        self.scope = None               # None: global at the root, else what its attach point implies
        self.store_predicate = None
        self.pragmas = []

    def _reset(self):
        self.all_iter_vars = list(self.op.axis) + list(self.op.reduce_axis)
        if isinstance(self.op, ScanOp):
            self.all_iter_vars = [self.op.scan_axis]
        self.leaf_iter_vars = list(self.all_iter_vars)
        self.relations = []
        self.iter_attrs = {}             # IterVar -> {"kind": ..., "thread": thread IterVar}

    @property
    def name(self):
        return self.tensor.name

    @property
    def is_output(self):
        return any(t is o for t in self.outputs for o in self.sch.outputs)

    def __repr__(self):
        return f"stage({self.op.name}, {self.op!r})"

    # -- loop structure ------------------------------------------------------------------
    def _leaf(self, x, what):
        iv = _iv_of(x, what)
        if not any(iv is v for v in self.leaf_iter_vars):
            if any(iv is v for v in self.all_iter_vars):
                raise ScheduleError(f"{what}: axis {iv.name} of stage {self.name} was already split or fused; "
                                    "schedule the axes that call returned")
            raise ScheduleError(f"{what}: {iv.name} is not an axis of stage {self.name} (its axes: "
                                f"{', '.join(v.name for v in self.leaf_iter_vars)})")
        return iv

    def _new_iv(self, name, like):
        iv = IterVar(Var(name, INDEX), 0, 1, like.iter_type)
        self.all_iter_vars.append(iv)
        return iv

    def split(self, parent, factor=None, nparts=None):
        iv = self._leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise ScheduleError(f"split {iv.name}: give factor or nparts")
        n = factor if factor is not None else nparts
        if not isinstance(n, int) and hasattr(n, "value"):
            n = n.value
        if isinstance(n, int) and n < 1:
            raise ScheduleError(f"split {iv.name}: {'factor' if factor is not None else 'nparts'} {n} is not positive")
        outer, inner = self._new_iv(f"{iv.name}.outer", iv), self._new_iv(f"{iv.name}.inner", iv)
        self.relations.append(Split(iv, outer, inner, factor, nparts))
        k = next(i for i, v in enumerate(self.leaf_iter_vars) if v is iv)
        self.leaf_iter_vars[k:k + 1] = [outer, inner]
        return outer, inner

    def tile(self, x_parent, y_parent, x_factor, y_factor):
        """TVM's tile: split both axes and order them (xo, yo, xi, yi)."""
        xo, xi = self.split(x_parent, factor=x_factor)
        yo, yi = self.split(y_parent, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def fuse(self, *args):
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        ivs = [self._leaf(a, "fuse") for a in args]
        if len(ivs) < 2:
            raise ScheduleError("fuse needs two or more axes")
        fused = ivs[0]
        for nxt in ivs[1:]:
            pos = [next(i for i, v in enumerate(self.leaf_iter_vars) if v is x) for x in (fused, nxt)]
            if pos[1] != pos[0] + 1:
                raise ScheduleError(f"fuse {fused.name}, {nxt.name}: {nxt.name} is not directly inside {fused.name} "
                                    "(fuse neighbouring axes, outer first)")
            if _is_reduce(fused) != _is_reduce(nxt):
                raise ScheduleError(f"fuse {fused.name}, {nxt.name}: one is a reduction axis, the other is not")
            f = self._new_iv(f"{fused.name}.{nxt.name}.fused", fused)
            self.relations.append(Fuse(fused, nxt, f))
            self.leaf_iter_vars[pos[0]:pos[1] + 1] = [f]
            fused = f
        return fused

    def reorder(self, *args):
        """The named axes take, in the given order, the positions they held among the leaves."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        ivs = [self._leaf(a, "reorder") for a in args]
        if len({id(v) for v in ivs}) != len(ivs):
            raise ScheduleError(f"reorder: an axis is named twice ({', '.join(v.name for v in ivs)})")
        pos = sorted(next(i for i, v in enumerate(self.leaf_iter_vars) if v is x) for x in ivs)
        for p, iv in zip(pos, ivs):
            self.leaf_iter_vars[p] = iv

    def _set(self, x, what, kind, **extra):
        iv = self._leaf(x, what)
        self.iter_attrs.setdefault(iv, {}).update(kind=kind, **extra)
        return iv

    def vectorize(self, var):
        self._set(var, "vectorize", "vectorize")

    def unroll(self, var):
        self._set(var, "unroll", "unroll")

    def parallel(self, var):
        iv = self._leaf(var, "parallel")
        if _is_reduce(iv):
            raise ScheduleError(f"parallel {iv.name}: a reduction axis; its iterations may write the same element "
                                f"of {self.name}")
        self._set(var, "parallel", "parallel")

    def pragma(self, var, pragma_type, pragma_value=None):
        """Recorded on the loop; the C it becomes is the same (the host compiler does its own unrolling)."""
        iv = self._leaf(var, "pragma")
        self.iter_attrs.setdefault(iv, {}).setdefault("pragmas", []).append((pragma_type, pragma_value))

    def bind(self, ivar, thread_ivar):
        iv = self._leaf(ivar, "bind")
        tag = getattr(thread_ivar, "thread_tag", None)
        if tag is None:
            raise ScheduleError(f"bind {iv.name}: bind to te.thread_axis(\"blockIdx.x\"), ...")
        if _is_reduce(iv) and not tag.startswith("threadIdx"):
            raise ScheduleError(f"bind {iv.name}: a reduction axis is bound to threads (threadIdx), not to {tag}")
        if tag in VIRTUAL_TAGS:
            self.iter_attrs.setdefault(iv, {}).update(kind="unroll", vthread=thread_ivar)
            return
        self.iter_attrs.setdefault(iv, {}).update(kind="thread_binding", thread=thread_ivar)

    def double_buffer(self):
        """Recorded; the values are the same without it (the C is not double-buffered)."""
        self.pragmas.append(("double_buffer", None))

    def storage_align(self, axis, factor, offset):
        """Recorded; the buffer keeps its compact layout (alignment changes no value)."""
        self.pragmas.append(("storage_align", (axis, factor, offset)))

    def tensorize(self, var, tensor_intrin):
        """The loops from var inwards are replaced by the intrinsic's statement(s) (lowering
        checks that they compute what the intrinsic's op computes, and binds its buffers)."""
        iv = self._leaf(var, "tensorize")
        if not isinstance(tensor_intrin, TensorIntrin):
            raise ScheduleError(f"tensorize {iv.name}: takes a te.decl_tensor_intrin, "
                                f"not {type(tensor_intrin).__name__}")
        if isinstance(self.op, (ScanOp, ExternOp)) or len(self.outputs) > 1:
            raise ScheduleError(f"tensorize {iv.name}: stage {self.name} is not a te.compute of one output")
        self.iter_attrs.setdefault(iv, {})["tensorize"] = tensor_intrin

    def set_store_predicate(self, predicate):
        """Only the threads where predicate holds store the result (after a cross-thread reduction)."""
        from ..tir.expr import wrap
        self.store_predicate = wrap(predicate, "bool")

    def set_scope(self, scope):
        self.scope = scope

    # -- attachment --------------------------------------------------------------------------
    def compute_at(self, parent, axis):
        if not isinstance(parent, Stage):
            raise ScheduleError(f"compute_at {self.name}: the parent is a stage s[T], not {type(parent).__name__}")
        if parent is self:
            raise ScheduleError(f"compute_at {self.name}: a stage cannot be computed inside itself")
        iv = parent._leaf(axis, f"compute_at {self.name}")
        # a stage attached inside a stage attached inside it would be a cycle
        p = parent
        while p is not None:
            if p is self:
                raise ScheduleError(f"compute_at {self.name}: {parent.name} is computed inside {self.name}")
            p = p.attach_stage if p.attach_type == "scope" else None
        self.attach_type, self.attach_stage, self.attach_ivar = "scope", parent, iv

    def compute_root(self):
        """Computed on its own, before its readers (undoes compute_at and compute_inline)."""
        self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None

    def compute_inline(self):
        if self.is_output:
            raise ScheduleError(f"compute_inline {self.name}: an output of the schedule cannot be inlined")
        if isinstance(self.op.body, Reduce):
            raise ScheduleError(f"compute_inline {self.name}: a reduction cannot be inlined into its readers")
        self.attach_type, self.attach_stage, self.attach_ivar = "inline", None, None


class Schedule:
    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.stages, self.stage_map, self.inputs = [], {}, []
        seen = set()

        def visit(t):
            if t.uid in seen:
                return
            seen.add(t.uid)
            if t.is_placeholder:
                self.inputs.append(t)
                return
            for x in t.op.input_tensors:
                visit(x)
            st = next((x for x in self.stages if x.op is t.op), None)     # another output of the same op
            if st is None:
                st = Stage(self, t.op, t.op.output(0))
                self.stages.append(st)
            for o in t.op.outputs:
                seen.add(o.uid)
                self.stage_map[o.uid] = st
        for t in self.outputs:
            visit(t)
        # a scan's states are its own buffer, not inputs; what computes a step (update and the
        # stages between the states and it) runs inside the scan's step loop unless placed elsewhere
        states = {s.uid for st in self.stages if isinstance(st.op, ScanOp) for s in st.op.states}
        self.inputs = [t for t in self.inputs if t.uid not in states]
        for st in self.stages:
            if isinstance(st.op, ScanOp):
                for x in self._scan_body(st.op):
                    x.attach_type, x.attach_stage, x.attach_ivar = "scope", st, st.op.scan_axis

    def _scan_body(self, op):
        """The stages of a scan's step: its updates and those between its states and them."""
        states = {s.uid for s in op.states}
        memo = {}

        def reads_state(t):
            if t.uid in states:
                return True
            if t.is_placeholder or isinstance(t.op, ScanOp):
                return False
            if t.uid not in memo:
                memo[t.uid] = False
                memo[t.uid] = any(reads_state(x) for x in t.op.input_tensors)
            return memo[t.uid]
        out, seen = [], set()

        def visit(t):
            if t.uid in seen or t.is_placeholder or not reads_state(t):
                return
            seen.add(t.uid)
            for x in t.op.input_tensors:
                visit(x)
            out.append(self.stage_map[t.uid])
        for u in op.update:
            visit(u)
        return out

    @property
    def func(self):
        """The schedule's tensors as the plain loop nest, unscheduled (aot/te/lower.py's lower: a
        reduction into a local accumulator), for aot.tir.Schedule to schedule by loops instead."""
        from .lower import lower
        return lower(self.inputs + self.outputs, "main")

    def __getitem__(self, t):
        if isinstance(t, Stage):
            return t
        if not isinstance(t, Tensor) and hasattr(t, "output"):
            t = t.output(0)
        if not isinstance(t, Tensor):
            raise ScheduleError(f"s[...] takes a tensor or its op, not {type(t).__name__}")
        st = self.stage_map.get(t.uid)
        if st is None:
            if t.is_placeholder:
                raise ScheduleError(f"s[{t.name}]: a placeholder has no stage to schedule (it is an input)")
            raise ScheduleError(f"s[{t.name}]: {t.name} is not computed by this schedule")
        return st

    def __repr__(self):
        return f"schedule({', '.join(s.name for s in self.stages)})"

    def stage_of(self, t):
        return self.stage_map.get(t.uid)

    def _insert(self, stage, before):
        k = self.stages.index(before)
        self.stages.insert(k, stage)
        self.stage_map[stage.tensor.uid] = stage

    # -- caches ------------------------------------------------------------------------------
    def cache_read(self, tensor, scope, readers):
        """TVM's AA = s.cache_read(A, "shared", [C]): the readers read a copy of A in `scope`,
        computed where s[AA].compute_at places it (by default once, before them)."""
        if scope not in ("global", "local", "shared"):
            raise ScheduleError(f"cache_read {tensor.name}: scope {scope!r} is not 'global', 'shared' or 'local'")
        readers = readers if isinstance(readers, (list, tuple)) else [readers]
        rstages = [self[r] for r in readers]
        for rs in rstages:
            if not any(x is tensor for x in rs.op.input_tensors):
                raise ScheduleError(f"cache_read {tensor.name}: {rs.name} does not read {tensor.name}")
        names = [f"ax{k}" for k in range(len(tensor.shape))]
        cache = compute(tensor.shape, lambda *i: tensor(*i), f"{tensor.name}.{scope}", names)
        st = Stage(self, cache.op, cache)
        st.scope = scope
        for rs in rstages:
            rs.op = _new_op(rs.op, [_replace_reads(b, tensor, cache) for b in rs.op.bodies])
        first = min(self.stages.index(rs) for rs in rstages)
        self.stages.insert(first, st)
        self.stage_map[cache.uid] = st
        return cache

    def cache_write(self, tensor, scope):
        """TVM's CC = s.cache_write(C, "global"): C's computation moves to a new stage CC (axes
        named like C's, with ".c"), written into `scope`; C's stage becomes a copy of CC."""
        if isinstance(tensor, (list, tuple)):
            raise ScheduleError("cache_write of several outputs of one op is not supported")
        if tensor.is_placeholder:
            raise ScheduleError(f"cache_write {tensor.name}: not a computed tensor (an input is not written by a stage)")
        if scope not in ("global", "local", "shared"):
            raise ScheduleError(f"cache_write {tensor.name}: scope {scope!r} is not 'global', 'shared' or 'local'")
        st = self[tensor]
        if st.attach_type == "inline":
            raise ScheduleError(f"cache_write {tensor.name}: the stage is inlined")
        if len(st.op.bodies) > 1:
            raise ScheduleError(f"cache_write {tensor.name}: an op of several outputs is not supported")
        old = st.op
        from ..tir.expr import substitute
        new_axes = [Var(f"{v.name}.c", INDEX) for v in old.axes]
        body = substitute(old.body, {id(a): b for a, b in zip(old.axes, new_axes)})
        if isinstance(body, Reduce):       # substitute leaves the reduction's axes as they are
            body = Reduce(body.combiner, body.source, body.axes, body.init)
        cop = ComputeOp(new_axes, body, f"{tensor.name}.{scope}")
        cache = Tensor(f"{tensor.name}.{scope}", tensor.shape, tensor.dtype, cop)
        cop.tensor = cache
        cst = Stage(self, cop, cache)
        cst.scope = scope
        copy = ComputeOp(list(old.axes), TensorRef(cache, list(old.axes)), old.name)
        copy._axis = old.axis
        copy.tensor = tensor
        st.op = copy
        st._reset()
        self._insert(cst, st)
        return cache

    def rfactor(self, tensor, axis, factor_axis=0):
        """TVM's BF = s.rfactor(B, ki): the reduction over the leaf axis ki becomes a data axis of
        a new stage BF (at position factor_axis) that reduces over B's other reduction leaves;
        B then reduces BF over a new axis (named ki's name + ".v")."""
        st = self[tensor]
        red = st.op.body
        if len(st.op.bodies) > 1:
            raise ScheduleError(f"rfactor {tensor.name}: an op of several outputs is not supported")
        if not isinstance(red, Reduce):
            raise ScheduleError(f"rfactor {tensor.name}: the stage is not a reduction")
        iv = st._leaf(axis, f"rfactor {tensor.name}")
        if not _is_reduce(iv):
            raise ScheduleError(f"rfactor {tensor.name}: {iv.name} is not a reduction axis")
        if any(not _is_reduce(r.parent if isinstance(r, Split) else r.outer) for r in st.relations):
            raise ScheduleError(f"rfactor {tensor.name}: rfactor before splitting or fusing its data axes")
        if not 0 <= factor_axis <= len(st.op.axes):
            raise ScheduleError(f"rfactor {tensor.name}: factor_axis {factor_axis} is out of range")
        ext, vals, guards = leaf_values(st, {}, {})
        from ..tir.expr import Select, all_of, substitute
        fvar = Var(iv.name, INDEX)
        rest = [v for v in st.leaf_iter_vars if _is_reduce(v) and v is not iv]
        new_red = [IterVar(v.var, 0, ext[v], IterVar.CommReduce) for v in rest]
        mapping = {id(r.var): vals[r] for r in red.axes}
        src = substitute(substitute(red.source, mapping), {id(iv.var): fvar})
        conds = [substitute(g, {id(iv.var): fvar}) for g in guards]
        if conds:
            src = Select(all_of(conds), src, identity(red.combiner, src.dtype))
        data = list(st.op.axes)
        bf_axes = data[:factor_axis] + [fvar] + data[factor_axis:]
        bf_body = Reduce(red.combiner, src, new_red) if new_red else src
        bop = ComputeOp(bf_axes, bf_body, f"{tensor.name}.rf")
        fext = ext[iv]
        shape = list(tensor.shape[:factor_axis]) + [fext] + list(tensor.shape[factor_axis:])
        bf = Tensor(f"{tensor.name}.rf", shape, tensor.dtype, bop)
        bop.tensor = bf
        bop._axis = [IterVar(v, 0, d) for v, d in zip(bf_axes, shape)]
        if const_value(fext) is None and not isinstance(fext, int):
            raise ScheduleError(f"rfactor {tensor.name}: the extent of {iv.name} is not constant")
        kv = IterVar(Var(f"{iv.name}.v", INDEX), 0, fext, IterVar.CommReduce)
        axes = [Var(f"ax{k}", INDEX) for k in range(len(data))]
        ref = TensorRef(bf, axes[:factor_axis] + [kv.var] + axes[factor_axis:])
        nop = ComputeOp(axes, Reduce(red.combiner, ref, [kv], red.init), st.op.name)
        nop.tensor = tensor
        nop._axis = [IterVar(v, 0, d) for v, d in zip(axes, tensor.shape)]
        st.op = nop
        st._reset()
        bst = Stage(self, bop, bf)
        self._insert(bst, st)
        return bf

    def normalize(self):
        """TVM's s.normalize(): the schedule with every loop rebased to start at 0. Here loops
        already start at 0 except a reduce axis declared over (lo, hi) with lo != 0, which this
        engine does not rebase (refused by name); so it is this schedule itself."""
        for st in self.stages:
            for iv in st.leaf_iter_vars:
                if const_value(iv.min) != 0 and iv.iter_type != IterVar.ThreadIndex:
                    raise ScheduleError(f"normalize: loop {iv.name} of stage {st.name} starts at {iv.min}, and "
                                        "rebasing a loop to start at 0 is not supported here")
        return self


def _replace_reads(expr, old, new):
    def f(e):
        if isinstance(e, TensorRef) and e.tensor is old:
            return TensorRef(new, e.indices, e.flat)
        return None
    return transform(expr, f)


def _new_op(op, bodies):
    """op with other bodies, keeping its axes (and so the stage's loop structure) and outputs."""
    n = ComputeOp(op.axes, bodies[0], op.name)
    n._axis = op.axis
    if len(bodies) > 1:
        n._bodies, n._outputs = list(bodies), list(op.outputs)
    n.tensor = op.tensor
    return n


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


def _ceildiv(a, b):
    a, b = wrap(a), wrap(b)
    ca, cb = const_value(a), const_value(b)
    if ca is not None and cb is not None:
        return Const(-(-ca // cb), INDEX)
    return simplify(Bin("floordiv", a + (b - 1), b))


def _divides(e, f):
    r = simplify(Bin("floormod", wrap(e), wrap(f)))
    return const_value(r) == 0


def leaf_values(st, mins, exts):
    """(extent of every iteration variable, each root variable's value from the leaves, the tail
    conditions of the splits) for stage st; mins/exts: the region of its data axes (IterVar ->
    expression), their whole domain where absent."""
    ext = {}
    for iv in st.op.axis:
        ext[iv] = simplify(wrap(exts.get(iv, iv.extent)))
    for iv in st.op.reduce_axis:
        ext[iv] = simplify(wrap(iv.extent))
    for r in st.relations:
        if isinstance(r, Split):
            e = ext[r.parent]
            if r.factor is not None:
                f = wrap(r.factor)
                ext[r.outer], ext[r.inner] = _ceildiv(e, f), f
            else:
                n = wrap(r.nparts)
                ext[r.outer], ext[r.inner] = n, _ceildiv(e, n)
        else:
            ext[r.fused] = simplify(ext[r.outer] * ext[r.inner])
    val = {iv: iv.var for iv in st.leaf_iter_vars}
    guards = []
    for r in reversed(st.relations):
        if isinstance(r, Split):
            val[r.parent] = val[r.outer] * ext[r.inner] + val[r.inner]
            e = ext[r.parent]
            if not (r.factor is not None and _divides(e, r.factor)) and \
                    not (r.nparts is not None and const_value(simplify(ext[r.inner] * ext[r.outer] - e)) == 0):
                guards.append(lt(val[r.parent], e))
        elif isinstance(r, Fuse):
            val[r.outer] = Bin("floordiv", val[r.fused], ext[r.inner])
            val[r.inner] = Bin("floormod", val[r.fused], ext[r.inner])
    out = {}
    for iv in list(st.op.axis) + list(st.op.reduce_axis):
        lo = mins.get(iv, iv.min)
        out[iv] = simplify(val[iv] + lo) if const_value(wrap(lo)) != 0 else simplify(val[iv])
    return ext, out, guards
