"""A te schedule (aot/te/schedule.py) as one loop-IR PrimFunc, the way TVM lowers it.

Each stage that is not inlined becomes a loop nest over its leaf iteration variables, in their
order; each root variable's value is rebuilt from the leaves through the split/fuse relations,
and a split that may not divide its extent guards the body with `parent < extent`. A reduction
initialises its output just outside its first reduction loop (so reduction loops may stand among
the output loops in any order), and one whose reduction axis is bound to threads sums the
threads' partial results in shared memory (after which only the threads the store predicate
selects store). Stages at the root are computed one after the other, producers first; a stage
attached with compute_at is computed at the start of its parent's loop body, over the region
the loops inside that point read of it (interval analysis over the nest built so far: exact for
affine indices), into a buffer of that region's size (unless it is an argument of the function).
Stages marked inline are substituted into their readers. A scan (te.scan) is its step loop, its
update and the stages between its states and it attached inside; its init, update and states
all write and read the scan's own buffer.
"""
from __future__ import annotations

from ..errors import AotError
from ..tir.expr import (INDEX, Bin, Cast, Const, Load, Select, Var, all_of, free_vars, ge, lt, substitute, substituter,
                        transform, walk, wrap)
from ..tir.flatten import flat_index
from ..tir.op import AccessPtr
from ..tir.schedule import ScheduleError
from ..tir.simplify import const_value, simplify
from ..tir.stmt import (Allocate, Barrier, Buffer, For, IfThenElse, PrimFunc, Seq, StmtMutator, StmtVisitor, Store,
                        map_exprs, own_exprs, walk_stmts)
from .schedule import Schedule, leaf_values
from .tensor import ExternOp, IterVar, Reduce, ScanOp, TensorRef, combine, identity


# -- symbolic intervals --------------------------------------------------------------------
def _smin(a, b):
    d = const_value(simplify(a - b))
    if d is not None:
        return a if d <= 0 else b
    return Bin("min", a, b)


def _smax(a, b):
    d = const_value(simplify(a - b))
    if d is not None:
        return a if d >= 0 else b
    return Bin("max", a, b)


def interval(e, rng):
    """(lo, hi) expressions bounding e (inclusive) while the variables in rng (id -> (lo, hi))
    vary; other variables stay as they are. None when e is not bounded that way."""
    if not (free_vars(e) & rng.keys()):
        return e, e
    if isinstance(e, Var):
        return rng[id(e)]
    if isinstance(e, Cast):
        r = interval(e.a, rng)
        return None if r is None else (Cast(e.dtype, r[0]), Cast(e.dtype, r[1]))
    if isinstance(e, Select):
        a, b = interval(e.t, rng), interval(e.f, rng)
        return None if a is None or b is None else (_smin(a[0], b[0]), _smax(a[1], b[1]))
    if not isinstance(e, Bin):
        return None
    a, b = interval(e.a, rng), interval(e.b, rng)
    if a is None or b is None:
        return None
    if e.op == "+":
        return a[0] + b[0], a[1] + b[1]
    if e.op == "-":
        return a[0] - b[1], a[1] - b[0]
    if e.op in ("min", "max"):
        f = _smin if e.op == "min" else _smax
        return f(a[0], b[0]), f(a[1], b[1])
    if e.op == "*":
        for x, y in ((a, b), (b, a)):
            c = const_value(simplify(y[0])) if y[0] is y[1] or const_value(simplify(y[1] - y[0])) == 0 else None
            if c is not None:
                return (x[0] * c, x[1] * c) if c >= 0 else (x[1] * c, x[0] * c)
        return None
    c = const_value(simplify(b[0])) if const_value(simplify(b[1] - b[0])) == 0 else None
    if e.op == "floordiv" and c is not None and c > 0:
        return Bin("floordiv", a[0], Const(c, INDEX)), Bin("floordiv", a[1], Const(c, INDEX))
    if e.op == "floormod" and c is not None and c > 0:
        same = const_value(simplify(Bin("floordiv", a[1], Const(c, INDEX)) - Bin("floordiv", a[0], Const(c, INDEX))))
        if same == 0:
            return Bin("floormod", a[0], Const(c, INDEX)), Bin("floormod", a[1], Const(c, INDEX))
        return Const(0, INDEX), Const(c - 1, INDEX)
    return None


class _Reads(StmtVisitor):
    """The index tuples of every load of `buf` in a statement, each with the ranges of the loops
    around it inside that statement."""

    def __init__(self, buf):
        self.buf, self.rng, self.found = buf, {}, []

    def visit_expr(self, e):
        for x in walk(e):
            if isinstance(x, Load) and x.buffer is self.buf:
                self.found.append((x.indices, dict(self.rng)))

    def visit_For(self, s):
        saved = self.rng
        self.rng = dict(saved)
        self.rng[id(s.var)] = (s.min, simplify(s.min + s.extent - 1))
        self.visit_expr(s.min)
        self.visit_expr(s.extent)
        self.visit(s.body)
        self.rng = saved


class _Rebuffer(StmtMutator):
    def __init__(self, old, new, offset):
        self.old, self.new, self.offset = old, new, offset

    def mutate_expr(self, e):
        def f(x):
            if isinstance(x, Load) and x.buffer is self.old:
                return Load(self.new, tuple(simplify(i - o) for i, o in zip(x.indices, self.offset)))
            return None
        return transform(e, f)


class _DropStores(StmtMutator):
    def __init__(self, ids):
        self.ids = ids

    def visit_Store(self, s):
        return None if id(s.buffer) in self.ids else s


def _is_reduce(iv):
    return iv.iter_type == IterVar.CommReduce


class Lowering:
    """One lowering of a schedule: buf maps each tensor (by uid) to the buffer its stage writes
    (a parameter, a root intermediate, or while the nest inside an attach point is built, a
    provisional whole-tensor buffer that attach() replaces with the region's own)."""

    def __init__(self, sch, args, name):
        self.sch, self.name = sch, name
        args = list(args)
        # a scalar argument (te.var("bias", dtype="float32")) is an input buffer of one element:
        # the function's parameters are the placeholders, the scalars, then the computed tensors
        scalars = [a for a in args if isinstance(a, Var)]
        tensors = [a for a in args if not isinstance(a, Var)]
        ins = [t for t in tensors if t.is_placeholder]
        args = ins + scalars + [t for t in tensors if not t.is_placeholder]
        self.args = args
        self.num_inputs = len(ins) + len(scalars)
        self.params = [Buffer(n, t.dtype, (1,) if isinstance(t, Var) else t.shape)
                       for t, n in zip(args, _distinct([t.name for t in args]))]
        self.scalar_map = {id(v): Load(b, (Const(0, INDEX),)) for v, b in zip(args, self.params) if isinstance(v, Var)}
        self.buf = {t.uid: b for t, b in zip(args, self.params) if not isinstance(t, Var)}
        self.arg_ids = set(self.buf)
        self.eff = {}
        # a scan's init, update and state placeholder all are the buffer of its output
        self.aliased, self.scan_update = set(), {}
        for st in sch.stages:
            if isinstance(st.op, ScanOp):
                for k, out in enumerate(st.outputs):
                    if out.uid not in self.buf:
                        self.buf[out.uid] = Buffer(out.name, out.dtype, out.shape)
                    for t in (st.op.init[k], st.op.update[k], st.op.states[k]):
                        self.buf[t.uid] = self.buf[out.uid]
                        self.aliased.add(t.uid)
                    self.scan_update[st.op.update[k].uid] = st
        for st in sch.stages:
            if st.attach_type == "scope":
                if not any(st.attach_ivar is v for v in st.attach_stage.leaf_iter_vars):
                    raise ScheduleError(f"compute_at {st.name}: axis {st.attach_ivar.name} of {st.attach_stage.name} "
                                        "was split or fused after compute_at (attach at one of the new axes)")
                if st.attach_stage.attach_type == "inline":
                    raise ScheduleError(f"compute_at {st.name}: its parent {st.attach_stage.name} is inlined")
                if sch.stage_map.get(st.attach_stage.tensor.uid) is not st.attach_stage:
                    raise ScheduleError(f"compute_at {st.name}: its parent is not a stage of this schedule")
            for t in st.outputs:
                if st.attach_type != "inline" and t.uid not in self.buf:
                    # a stage at the root is computed whole, before its readers: in memory of the function's
                    # (an intermediate of aot.build's plan), whatever scope it was cached in
                    scope = st.scope if st.attach_type == "scope" and st.scope in ("local", "shared") else "global"
                    # (an attached stage's buffer is made where it is attached, its scope the one
                    # cache_read/cache_write named, else what the attach point implies)
                    self.buf[t.uid] = Buffer(t.name, t.dtype, t.shape, scope)
        self.counter = 0
        # the thread indices (threadIdx) loops are bound to: a shared stage is computed for every
        # thread of the block, so its region spans them
        self.thread_vars = {id(a["thread"].var) for st in sch.stages for a in st.iter_attrs.values()
                            if a.get("kind") == "thread_binding" and a["thread"].thread_tag.startswith("threadIdx")}

    # -- expressions ------------------------------------------------------------------------
    def body_of(self, st):
        """The stage's expressions (one per output) with the inlined stages substituted."""
        hit = self.eff.get(id(st))
        if hit is not None:
            return hit

        def f(e):
            if not isinstance(e, TensorRef):
                return None
            src = self.sch.stage_of(e.tensor)
            if src is None or src.attach_type != "inline":
                return None
            b = self.body_of(src)[e.tensor.value_index if len(src.outputs) > 1 else 0]
            return substitute(b, {id(a): i for a, i in zip(src.op.axes, e.indices)})
        bodies = [transform(b, f) for b in st.op.bodies]
        self.eff[id(st)] = bodies
        return bodies

    def convert(self, e, mapping):
        e = substitute(e, {**self.scalar_map, **mapping} if self.scalar_map else mapping)

        def f(x):
            if isinstance(x, TensorRef):
                b = self.buf.get(x.tensor.uid)
                if b is None:
                    if x.tensor.is_placeholder:
                        raise AotError(f"lower {self.name}: {x.tensor.name} is read but is not among the arguments")
                    raise AotError(f"lower {self.name}: {x.tensor.name} is not computed by the schedule")
                return Load(b, tuple(simplify(i) for i in x.indices))
            return None
        return transform(e, f)

    # -- nests ------------------------------------------------------------------------------------
    def lower(self):
        roots, allocs = [], []
        for st in self.sch.stages:
            if st.attach_type != "root":
                continue
            roots.append(self.stage_nest(st, {}, {}, {}))
            allocs += [self.buf[t.uid] for t in st.outputs if t.uid not in self.arg_ids and t.uid not in self.aliased]
        body = Seq(roots)
        # a stage computed inside another's loop exists only there: a reader outside cannot see it
        placed = {id(self.buf[t.uid]): (st, t) for st in self.sch.stages if st.attach_type == "scope"
                  for t in st.outputs if t.uid not in self.arg_ids and t.uid not in self.aliased}
        for x in walk_stmts(body):
            for e in own_exprs(x):
                for ld in walk(e):
                    if isinstance(ld, Load) and id(ld.buffer) in placed:
                        st, t = placed[id(ld.buffer)]
                        raise ScheduleError(f"compute_at {st.name}: {t.name} is also read outside "
                                            f"{st.attach_stage.name}'s loop {st.attach_ivar.name}, where it is "
                                            "computed (compute it at the root, or attach it where every reader is)")
        for b in reversed(allocs):
            body = Allocate(b, body)
        attrs = {}
        # pragma import_llvm: LLVM IR the function's external calls are defined in, linked with it
        lls = [v for st in self.sch.stages for a in st.iter_attrs.values() for k, v in a.get("pragmas", [])
               if k == "import_llvm"]
        if lls:
            attrs["import_llvm"] = tuple(dict.fromkeys(str(x) for x in lls))
        return PrimFunc(self.name, self.params, body, self.num_inputs, attrs)

    def extern_nest(self, st):
        """te.extern's statement, its buffers bound to the tensors' own."""
        op = st.op
        binds = {}
        for t, b in zip(op.inputs, op.input_placeholders):
            src = self.sch.stage_of(t)
            if src is not None and src.attach_type == "inline":
                raise ScheduleError(f"te.extern {op.name}: its input {t.name} is inlined (an external function "
                                    "reads it from memory: compute it at the root)")
            binds[id(b)] = self.buf[t.uid]
        for t, b in zip(op.outputs, op.output_placeholders):
            binds[id(b)] = self.buf[t.uid]
        sub = dict(self.scalar_map)
        for b in op.input_placeholders + op.output_placeholders:
            sub[id(b.data)] = binds[id(b)].data
        return _BindBuffers(binds, sub).visit(op.body) or Seq([])

    def scan_nest(self, st, env):
        """The scan's step loop; its step's stages are attached inside it."""
        iv = st.op.scan_axis
        lo, n = simplify(wrap(iv.min)), simplify(wrap(iv.extent))
        env2 = dict(env)
        env2[id(iv.var)] = (lo, simplify(lo + n - 1))
        return For(iv.var, lo, n, self.attach(st, iv, Seq([]), env2))

    def stage_nest(self, st, mins, exts, env):
        if isinstance(st.op, ScanOp):
            return self.scan_nest(st, env)
        if isinstance(st.op, ExternOp):
            if st.attach_type == "scope":
                raise ScheduleError(f"compute_at {st.name}: a te.extern stage is computed whole, at the root")
            return self.extern_nest(st)
        ext, vals, guards = leaf_values(st, mins, exts)
        attrs = st.iter_attrs
        loopvar, tsub = {}, {}
        for iv in st.leaf_iter_vars:
            a = attrs.get(iv, {})
            if a.get("kind") == "thread_binding":
                loopvar[iv] = a["thread"].var
                tsub[id(iv.var)] = a["thread"].var
            else:
                loopvar[iv] = iv.var
        if tsub:
            vals = {k: substitute(v, tsub) for k, v in vals.items()}
            guards = [substitute(g, tsub) for g in guards]
        roots = list(st.op.axis) + list(st.op.reduce_axis)
        mapping = {id(r.var): vals[r] for r in roots}
        bodies = self.body_of(st)
        body = bodies[0]
        is_red = isinstance(body, Reduce)
        leaves = list(st.leaf_iter_vars)
        cross = [iv for iv in leaves if _is_reduce(iv) and attrs.get(iv, {}).get("kind") == "thread_binding"]
        serial = [iv for iv in leaves if _is_reduce(iv) and iv not in cross]
        if cross:
            leaves = [iv for iv in leaves if iv not in serial] + serial
            red_pos = len(leaves) - len(serial)
        else:
            red_pos = next((k for k, iv in enumerate(leaves) if _is_reduce(iv)), None) if is_red else None
        red_vars = {id(loopvar[iv]) for iv in leaves if _is_reduce(iv)}
        data_guards = [g for g in guards if not (free_vars(g) & red_vars)]
        red_guards = [g for g in guards if free_vars(g) & red_vars]
        region = self.region_guards(st, mins, exts, vals, env)
        # a region buffer of this stage's own (not a parameter) is written whole, also where the
        # region leaves the tensor (there with a placeholder value that nothing reads): its
        # readers are guarded alike, and the C compiler then sees no element left unset
        own = all(getattr(self.buf[t.uid], "region_min", None) is not None for t in st.outputs)
        data_guards += [] if own else region
        bufs = [self.buf[t.uid] for t in st.outputs]
        buf = bufs[0]
        if cross and len(bufs) > 1:
            raise ScheduleError(f"bind {cross[0].name}: a reduction of several values across threads is not supported")

        def index_of(b):
            off = getattr(b, "region_min", None) or [Const(0, INDEX)] * len(st.op.axes)
            multi = tuple(simplify(vals[a] - o) for a, o in zip(st.op.axis, off))
            return multi, simplify(flat_index(multi, b.shape))
        index = index_of(buf)[1]
        # the predicate reads the loop axes it names; a bound axis is its thread variable (as TVM rebinds it)
        pred = [substitute(st.store_predicate, tsub) if tsub else st.store_predicate] \
            if st.store_predicate is not None else []

        def guarded(stmt, conds):
            return IfThenElse(all_of(conds), stmt) if conds else stmt

        def loop(iv, inner, var=None):
            a = attrs.get(iv, {})
            kind = a.get("kind", "serial")
            if kind == "thread_binding":
                return For(loopvar[iv], 0, ext[iv], inner, "thread_binding", a["thread"].thread_tag)
            var = var or loopvar[iv]
            if const_value(ext[iv]) == 1:       # as TVM's loop nests: a one-iteration loop is its body at 0
                sub = substituter({id(var): Const(0, INDEX)})
                return map_exprs(inner, lambda e: e if sub(e) is e else simplify(sub(e)))
            return For(var, 0, ext[iv], inner, kind)

        def init_nest(s, inits, keep_threads=False):
            """s (an init or an intrinsic's reset) under loops of its own over the data axes
            `inits` (TVM names them <var>.init); keep_threads: thread-bound axes keep their
            thread variable."""
            fresh = {id(loopvar[iv]): Var(f"{loopvar[iv].name}.init", INDEX) for iv in inits
                     if not (keep_threads and attrs.get(iv, {}).get("kind") == "thread_binding")}
            if fresh:
                sub = substituter(fresh)
                s = map_exprs(s, lambda e: e if sub(e) is e else simplify(sub(e)))
            for iv in reversed(inits):
                s = loop(iv, s, fresh.get(id(loopvar[iv])))
            return s

        if is_red and len(bufs) == 1:
            src = self.convert(body.source, mapping)
            cur = Load(buf, index_of(buf)[0])
            update = Store(buf, index, combine(body.combiner)(cur, src))
            init_stmt = Store(buf, index, self.convert(body.init, mapping))
        elif is_red:
            # several values reduced together: each new value from all the old ones, so they go
            # through temporaries before any is stored
            srcs = [self.convert(x, mapping) for x in body.sources]
            curs = [Load(b, index_of(b)[0]) for b in bufs]
            news = body.combiner.combine_all(curs, srcs)
            k = self.counter
            self.counter += 1
            tmps = [Buffer(f"{b.name}.tmp{k}", b.dtype, (1,), "local") for b in bufs]
            zero = Const(0, INDEX)
            update = Seq([Store(t, zero, v) for t, v in zip(tmps, news)] +
                         [Store(b, index_of(b)[1], Load(t, zero)) for b, t in zip(bufs, tmps)])
            for t in reversed(tmps):
                update = Allocate(t, update)
            init_stmt = Seq([Store(b, index_of(b)[1], self.convert(x.init, mapping)) for b, x in zip(bufs, bodies)])
        else:
            def value(x):
                v = self.convert(x, mapping)
                return Select(all_of(region), v, Const(0, v.dtype)) if own and region else v
            update = Seq([Store(b, index_of(b)[1], value(x)) for b, x in zip(bufs, bodies)])

        tpos = next((k for k, iv in enumerate(leaves) if "tensorize" in attrs.get(iv, {})), None)
        if tpos is not None:
            if cross:
                raise ScheduleError(f"tensorize {leaves[tpos].name}: a stage whose reduction is bound to threads "
                                    "cannot be tensorized")
            intrin = attrs[leaves[tpos]]["tensorize"]
            tz = _Tensorize(self, st, intrin, leaves, tpos, loopvar, ext, mapping, bodies[0], buf, guards)
            split_red = is_red and red_pos is not None and tpos > red_pos

        def emit(pos, env, in_cross=False):
            parts = []
            if tpos is not None and pos == tpos:
                if split_red:
                    outer_red = [loopvar[iv] for iv in leaves[red_pos:tpos] if _is_reduce(iv)]
                    return tz.update(env, outer_red)
                return tz.body(env)
            if tpos is not None and split_red and pos == red_pos and tz.intrin.reduce_init is not None:
                # the intrinsic's reset, over the data loops between the reduction's first loop and it
                parts.append(init_nest(tz.reset(env), [iv for iv in leaves[pos:tpos] if not _is_reduce(iv)]))
                iv = leaves[pos]
                env2 = dict(env)
                env2[id(loopvar[iv])] = (Const(0, INDEX), simplify(ext[iv] - 1))
                parts.append(loop(iv, self.attach(st, iv, emit(pos + 1, env2, in_cross), env2)))
                return Seq(parts)
            if pos == red_pos and not in_cross and not (tpos is not None and split_red):
                if cross:
                    return self.cross_reduce(st, body, mapping, leaves, pos, loopvar, ext, env, buf, index,
                                             data_guards + (region if own else []), red_guards, pred, emit)
                parts.append(init_nest(guarded(init_stmt, data_guards + pred),
                                       [iv for iv in leaves[pos:] if not _is_reduce(iv)], keep_threads=True))
            if pos == len(leaves):
                if cross:
                    return in_cross(env)
                parts.append(guarded(update, data_guards + red_guards + pred + (region if own and is_red else [])))
                return parts[0] if len(parts) == 1 else Seq(parts)
            iv = leaves[pos]
            env2 = dict(env)
            env2[id(loopvar[iv])] = (Const(0, INDEX), simplify(ext[iv] - 1))
            inner = emit(pos + 1, env2, in_cross)
            inner = self.attach(st, iv, inner, env2)
            parts.append(loop(iv, inner))
            return parts[0] if len(parts) == 1 else Seq(parts)

        return emit(0, env)

    def cross_reduce(self, st, body, mapping, leaves, pos, loopvar, ext, env, buf, index, data_guards, red_guards,
                     pred, emit):
        """Each thread reduces its share into a local accumulator; the shares of the threads bound
        to reduction axes are combined through shared memory; the predicate's threads store."""
        k = self.counter
        self.counter += 1
        dtype = body.dtype
        acc = Buffer(f"normal_reduce_temp{k}", dtype, (1,), "local")
        zero = Const(0, INDEX)
        src = self.convert(body.source, mapping)
        comb = combine(body.combiner)
        ident = identity(body.combiner, dtype)
        upd = Store(acc, zero, comb(Load(acc, zero), src))
        upd = IfThenElse(all_of(data_guards + red_guards), upd) if data_guards + red_guards else upd
        threads = [iv for iv in leaves if st.iter_attrs.get(iv, {}).get("kind") == "thread_binding"
                   and st.iter_attrs[iv]["thread"].thread_tag.startswith("threadIdx")]
        texts = []
        for iv in threads:
            n = const_value(ext[iv])
            if n is None:
                raise ScheduleError(f"bind {iv.name}: a loop bound to threads needs a constant extent")
            texts.append(n)
        tvars = [loopvar[iv] for iv in threads]
        size = 1
        for n in texts:
            size *= n
        red = Buffer(f"red_buf{k}", dtype, (size,), "shared")
        tid = flat_index(tvars, texts)
        res = Buffer(f"reduce_temp{k}", dtype, (1,), "local")
        parts = [Store(red, tid, Load(acc, zero)), Barrier("shared"), Store(res, zero, self.convert(body.init, mapping))]
        comb_stmt = Store(res, zero, comb(Load(res, zero), Load(red, tid)))
        rvars = []
        for iv, n in zip(threads, texts):
            if _is_reduce(iv):
                rv = Var(f"{loopvar[iv].name}.r", INDEX)
                rvars.append((loopvar[iv], rv, n))
        sub = {id(v): rv for v, rv, _ in rvars}
        comb_stmt = Store(res, zero, comb(Load(res, zero), Load(red, substitute(tid, sub))))
        for _, rv, n in reversed(rvars):
            comb_stmt = For(rv, 0, n, comb_stmt)
        parts += [comb_stmt, Barrier("shared")]
        final = Store(buf, index, Load(res, zero))
        conds = data_guards + pred
        parts.append(IfThenElse(all_of(conds), final) if conds else final)
        inner = emit(pos, env, in_cross=lambda env: upd)
        out = Seq([Store(acc, zero, ident), inner, Allocate(red, Allocate(res, Seq(parts)))])
        return Allocate(acc, out)

    def region_guards(self, st, mins, exts, vals, env):
        """Conditions keeping an attached stage inside its tensor where its region may not be."""
        if st.attach_type != "scope":
            return []
        out = []
        rng = dict(env)
        for iv, d in zip(st.op.axis, st.tensor.shape):
            if iv not in mins:
                continue
            lo = interval(mins[iv], rng)
            hi = interval(simplify(mins[iv] + exts[iv] - 1), rng)
            lo_c = const_value(simplify(lo[0])) if lo is not None else None
            if lo_c is None or lo_c < 0:
                out.append(ge(vals[iv], Const(0, INDEX)))
            room = const_value(simplify(wrap(d) - 1 - hi[1])) if hi is not None else None
            if room is None or room < 0:
                out.append(lt(vals[iv], wrap(d)))
        return out

    def implied_scope(self, parent, iv):
        """TVM's storage scope of a stage attached at parent's loop iv with none given: local
        inside a thread's loops, shared inside a block's only, else global."""
        tags = []
        st, at = parent, iv
        while st is not None:
            for v in st.leaf_iter_vars:
                a = st.iter_attrs.get(v, {})
                if a.get("kind") == "thread_binding":
                    tags.append(a["thread"].thread_tag)
                if v is at:
                    break
            st, at = (st.attach_stage, st.attach_ivar) if st.attach_type == "scope" else (None, None)
        if any(t.startswith("threadIdx") for t in tags):
            return "local"
        return "shared" if tags else "global"

    def attach(self, parent, iv, inner, env):
        """inner with the stages attached at parent's loop iv computed first."""
        here = [p for p in self.sch.stages if p.attach_type == "scope" and p.attach_stage is parent
                and p.attach_ivar is iv]
        for p in reversed(here):
            scan = self.scan_update.get(p.tensor.uid)
            if scan is not None and scan is parent:
                # a scan's update computes the step the loop is at, into the scan's buffer
                t_axis = p.op.axis[0]
                nest = self.stage_nest(p, {t_axis: iv.var}, {t_axis: Const(1, INDEX)}, env)
                inner = Seq([nest, inner])
                continue
            provs = [self.buf[t.uid] for t in p.outputs]
            found, unread = [], []
            for t, prov in zip(p.outputs, provs):
                reads = _Reads(prov)
                reads.visit(inner)
                found += reads.found
                if not reads.found and t.uid not in self.arg_ids and t.uid not in self.aliased:
                    unread.append(prov)
            if not found:
                raise ScheduleError(f"compute_at {p.name}: {parent.name} does not read {p.name} inside "
                                    f"{iv.name} (attach it where it is read)")
            ndim = len(p.op.axes)
            los, his = [None] * ndim, [None] * ndim
            scope = p.scope or self.implied_scope(parent, iv)
            relax = {k: r for k, r in env.items() if k in self.thread_vars} if scope == "shared" else {}
            for idx, rng in found:
                rng = {**relax, **rng}
                for d in range(ndim):
                    r = interval(idx[d], rng)
                    if r is None:
                        los[d] = his[d] = "full"
                        continue
                    if los[d] == "full":
                        continue
                    los[d] = r[0] if los[d] is None else _smin(los[d], r[0])
                    his[d] = r[1] if his[d] is None else _smax(his[d], r[1])
            mins, exts, shape = {}, {}, []
            for d, (ax, full) in enumerate(zip(p.op.axis, p.tensor.shape)):
                lo, n = Const(0, INDEX), wrap(full)
                if los[d] != "full":
                    lo2, n2 = simplify(los[d]), simplify(his[d] - los[d] + 1)
                    # a region whose size changes from one iteration to the next is computed whole
                    if const_value(n2) is not None or not (free_vars(n2) & set(env)):
                        lo, n = lo2, n2
                mins[ax], exts[ax] = lo, n
                shape.append(n)
            reals = []
            for t, prov in zip(p.outputs, provs):
                if t.uid in self.arg_ids or t.uid in self.aliased:    # computed into that buffer itself
                    continue
                real = Buffer(t.name, t.dtype, shape, scope)
                real.region_min = [mins[ax] for ax in p.op.axis]
                inner = _Rebuffer(prov, real, real.region_min).visit(inner)
                self.buf[t.uid] = real
                reals.append(real)
            nest = self.stage_nest(p, mins, exts, env)
            for t, prov in zip(p.outputs, provs):
                self.buf[t.uid] = prov
            dead = [r for r, prov in zip(reals, [x for t, x in zip(p.outputs, provs)
                                                 if t.uid not in self.arg_ids and t.uid not in self.aliased])
                    if prov in unread and not isinstance(p.op.body, Reduce)]
            if dead:            # an output of the op that nothing here reads is not computed
                nest = _DropStores({id(b) for b in dead}).visit(nest) or Seq([])
                reals = [r for r in reals if r not in dead]
            if reals and scope == "shared":      # the block's threads write it together: wait before and after
                nest = Seq([Barrier("shared"), nest, Barrier("shared")])
            inner = Seq([nest, inner])
            for real in reversed(reals):
                inner = Allocate(real, inner)
        return inner


class _BindBuffers(StmtMutator):
    """A statement written over buffers of its own (te.extern's, a tensor intrinsic's) with those
    bound: binds {id(own buffer): real buffer}; sub {id(Var): expression} for their data pointers,
    strides and offsets. refuse: for a tensor intrinsic, whose buffers stand for regions at an
    offset, the name its element-wise reads and writes are refused under."""

    def __init__(self, binds, sub, refuse=None):
        self.binds, self.refuse = binds, refuse
        self.sub = dict(sub)
        self._subst = substituter(self.sub)

    def _buf(self, b):
        real = self.binds.get(id(b))
        if real is None:
            return b
        if self.refuse:
            raise ScheduleError(f"{self.refuse}: the intrinsic reads or writes buffer {b.name} element by element; "
                                "only its pointer (access_ptr, .data) and strides are bound")
        return real

    def mutate_expr(self, e):
        e = self._subst(e) if self.sub else e

        def f(x):
            if isinstance(x, Load):
                b = self._buf(x.buffer)
                return None if b is x.buffer else Load(b, x.indices)
            if isinstance(x, AccessPtr):
                off = simplify(x.offset)
                ext = simplify(x.extent) if x.extent is not None else None
                return None if off is x.offset and ext is x.extent else AccessPtr(x.ptr, off, x.mode, ext)
            return None
        return transform(e, f)

    def visit_Store(self, s):
        b = self._buf(s.buffer)
        idx, val = self.mutate_expr(s.index), self.mutate_expr(s.value)
        if b is s.buffer and idx is s.index and val is s.value:
            return s
        return Store(b, idx, val)


def _structure(e, tensors):
    """e's shape as a comparable value: operators, constants and which input each read is of,
    indices left out (tensorize binds them as regions)."""
    from ..tir.expr import children
    if isinstance(e, TensorRef):
        return ("read", next((k for k, t in enumerate(tensors) if t is e.tensor), -1))
    if isinstance(e, Reduce):
        c = e.combiner if isinstance(e.combiner, str) else getattr(e.combiner, "name", "reduce")
        return ("reduce", c, _structure(e.source, tensors))
    if isinstance(e, Const):
        return ("const", e.value, e.dtype)
    if isinstance(e, Var):
        return ("var", e.dtype)
    return (type(e).__name__, getattr(e, "op", None), getattr(e, "fn", None), e.dtype,
            tuple(_structure(k, tensors) for k in children(e)))


class _Tensorize:
    """s[C].tensorize(axis, intrin): the loops from axis inwards compute what intrin.op computes
    (checked: the same expression over the same number of inputs, each region the shape of the
    intrinsic's buffer), so they are replaced by the intrinsic's statement with its buffers bound
    to those regions (data pointer, element offset, strides), as TVM's tensorize does."""

    def __init__(self, low, st, intrin, leaves, tpos, loopvar, ext, mapping, body, out_buf, guards):
        self.intrin = intrin
        self.what = what = f"tensorize {leaves[tpos].name}"
        op, iop = st.op, intrin.op
        inner = leaves[tpos:]
        inner_vars = {id(loopvar[iv]) for iv in inner}
        rng = {id(loopvar[iv]): (Const(0, INDEX), simplify(ext[iv] - 1)) for iv in inner}
        if any(free_vars(g) & inner_vars for g in guards):
            raise ScheduleError(f"{what}: a split inside it does not divide its extent (the region would have a tail)")
        ins, iins = list(op.input_tensors), list(iop.input_tensors)
        if len(ins) != len(iins) or _structure(body, ins) != _structure(iop.body, iins):
            raise ScheduleError(f"{what}: the loops from {leaves[tpos].name} inwards do not compute what the "
                                f"intrinsic {intrin.name} computes ({iop.name}: {iop.body!r})")
        inner_red = [iv for iv in inner if _is_reduce(iv)]
        if bool(inner_red) != bool(iop.reduce_axis):
            raise ScheduleError(f"{what}: the intrinsic {'reduces' if iop.reduce_axis else 'does not reduce'}, "
                                f"the loops it replaces {'do' if inner_red else 'do not'}")
        self.binds, self.sub = {}, {}
        for t, ib in zip(ins, intrin.buffers[:-1]):
            los, his = None, None
            for x in walk(body):
                if isinstance(x, TensorRef) and x.tensor is t:
                    idx = [simplify(substitute(i, mapping)) for i in x.indices]
                    rs = [interval(i, rng) for i in idx]
                    if any(r is None for r in rs):
                        raise ScheduleError(f"{what}: the region of {t.name} it reads is not affine in its loops")
                    lo, hi = [r[0] for r in rs], [r[1] for r in rs]
                    los = lo if los is None else [_smin(a, b) for a, b in zip(los, lo)]
                    his = hi if his is None else [_smax(a, b) for a, b in zip(his, hi)]
            self._bind(ib, low.buf[t.uid], los, his, t.name)
        vals = [mapping[id(ax.var)] for ax in op.axis]
        rs = [interval(v, rng) for v in vals]
        self._bind(intrin.buffers[-1], out_buf, [r[0] for r in rs], [r[1] for r in rs], st.name)

    def _bind(self, ib, real, los, his, name):
        what = self.what
        if getattr(real, "region_min", None) is not None:
            raise ScheduleError(f"{what}: {name} is computed into a region buffer here (compute_at); tensorize "
                                "binds whole buffers")
        exts = [simplify(h - lo + 1) for lo, h in zip(los, his)]
        k = len(ib.shape)
        lead, trail = exts[:len(exts) - k], exts[len(exts) - k:]
        if len(exts) < k or any(const_value(e) != 1 for e in lead) or \
                any(const_value(simplify(e - wrap(d))) != 0 for e, d in zip(trail, ib.shape)):
            raise ScheduleError(f"{what}: the region of {name} it covers is {[const_value(e) or e for e in exts]}, "
                                f"the intrinsic's buffer {ib.name} is {list(ib.shape)}")
        strides = real.strides
        off = simplify(sum((lo * st for lo, st in zip(los[1:], strides[1:])), los[0] * strides[0]))
        self.binds[id(ib)] = real
        self.sub[id(ib.data)] = real.data
        declared = ib.__dict__.get("_strides")
        for d in range(k):
            actual = strides[len(strides) - k + d]
            want = declared[d] if declared is not None else ib.strides[d]
            if isinstance(want, Var):
                self.sub[id(want)] = actual
            elif const_value(simplify(wrap(want) - actual)) != 0 and not (declared is None and ib.shape[d] == 1):
                raise ScheduleError(f"{what}: buffer {ib.name}'s stride {d} is {want!r}, that of {name} there is "
                                    f"{actual!r} (declare it a te.var in decl_buffer's strides to take any)")
        eo = ib.__dict__.get("elem_offset")
        if isinstance(eo, Var):
            self.sub[id(eo)] = off
        elif const_value(simplify(wrap(eo if eo is not None else 0) - off)) != 0:
            raise ScheduleError(f"{what}: buffer {ib.name} has a fixed element offset, the region of {name} starts at "
                                f"{off!r} (declare it with offset_factor= so that its offset is bound)")

    def _bound(self, stmt, which):
        if stmt is None:
            raise ScheduleError(f"{self.what}: the intrinsic {self.intrin.name} gives no {which} statement")
        return _BindBuffers(self.binds, self.sub, self.what).visit(stmt) or Seq([])

    def body(self, env):
        return self._bound(self.intrin.body, "body")

    def reset(self, env):
        return self._bound(self.intrin.reduce_init, "reduce_reset")

    def update(self, env, outer_red):
        """Inside a reduction split around it: the update, or where the intrinsic has no reset,
        its body at the first outer reduction step and the update at the others."""
        if self.intrin.reduce_update is None:
            raise ScheduleError(f"{self.what}: the reduction is split around the tensorized loops, and the intrinsic "
                                f"{self.intrin.name} gives no reduce_update (intrin_func returns a body alone)")
        upd = self._bound(self.intrin.reduce_update, "reduce_update")
        if self.intrin.reduce_init is not None or not outer_red:
            return upd
        first = all_of([Bin("==", v, Const(0, INDEX)) for v in outer_red])
        return IfThenElse(first, self.body(env), upd)


def _distinct(names):
    """Argument names made distinct as TVM's (two te.placeholder left unnamed are placeholder and
    placeholder_1): they name the function's parameters."""
    originals, taken, out = set(names), set(), []
    for n in names:
        m, k = n, 1
        while m in taken or (m != n and m in originals):
            m, k = f"{n}_{k}", k + 1
        taken.add(m)
        out.append(m)
    return out


def lower_schedule(sch, args=None, name="main"):
    """A te schedule and its argument tensors (placeholders, then computed tensors; by default the
    schedule's inputs then outputs) -> the loop-IR PrimFunc that aot.build compiles and aot.lower
    prints (aot/te/schedule_lower.py)."""
    if not isinstance(sch, Schedule):
        raise AotError(f"lower takes a te schedule (te.create_schedule), not {type(sch).__name__}")
    args = list(args if args is not None else sch.inputs + sch.outputs)
    missing = [t.name for t in sch.inputs if not any(t is a for a in args)]
    if missing:
        raise AotError(f"lower: args leave out {', '.join(missing)}, which the schedule reads")
    # as TVM's lower: a computed tensor left out of the arguments is the function's own buffer
    return Lowering(sch, args, name).lower()
