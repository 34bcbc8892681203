"""aot.tir.Schedule, TVM's TensorIR schedule over a module of PrimFuncs: blocks are found by name
(the script's T.block, or a buffer's name), loops by the block they enclose, and every primitive
is one function of aot/tir/schedule.py applied at once (a refusal says why). `sch.mod` is the
transformed module; aot.build builds it."""
from __future__ import annotations

from ..ir.module import IRModule
from . import schedule as tsch
from .expr import Var
from .simplify import const_value
from .blocks import erase_blocks
from .stmt import Block, For, PrimFunc, Store, stmt_children, walk_stmts


PrimModule = IRModule     # the earlier name of tvm.ir.IRModule here


class BlockRV:
    def __init__(self, name, buffer_name):
        self.name, self.buffer_name = name, buffer_name


class LoopRV:
    def __init__(self, var):
        self.var = var

    def __repr__(self):
        return f"LoopRV({self.var.name})"


class _CacheRV(BlockRV):
    def __init__(self, buffer, scope):
        super().__init__(f"{buffer.name}_{scope}", buffer.name)
        self.buffer, self.scope, self.placed = buffer, scope, False


class _CacheWriteRV(BlockRV):
    def __init__(self, buffer, scope):
        super().__init__(f"{buffer.name}_{scope}", buffer.name)
        self.buffer, self.scope, self.placed = buffer, scope, False


class Schedule:
    def __init__(self, mod, func_name=None):
        if isinstance(mod, PrimFunc):
            mod = PrimModule({mod.name: mod})
        self.mod = PrimModule(mod.functions)
        self.func_name = func_name or ("main" if "main" in self.mod.functions else next(iter(self.mod.functions)))

    @property
    def func(self):
        return self.mod[self.func_name]

    def _set(self, body):
        self.mod[self.func_name] = self.func.with_body(body)

    def _apply(self, fn, what):
        try:
            return fn(self.func.body)
        except tsch.ScheduleError:
            raise
        except Exception as e:
            raise tsch.ScheduleError(f"{what}: {e}") from None

    def _var(self, loop, what):
        v = loop.var if isinstance(loop, LoopRV) else loop
        if not isinstance(v, Var) or not any(isinstance(s, For) and s.var is v for s in walk_stmts(self.func.body)):
            raise tsch.ScheduleError(f"{what}: {getattr(v, 'name', v)} is not a loop of {self.func_name} (any more)")
        return v

    # blocks and loops
    def _blocks(self):
        return [s for s in walk_stmts(self.func.body) if isinstance(s, Block)]

    def _erase(self):
        """Primitives that reason about the loop IR's accesses work on it without blocks: the
        function loses its blocks (it prints as loops from then on)."""
        if any(True for _ in self._blocks()):
            self._set(erase_blocks(self.func.body))

    def get(self, rv):
        """TVM's sch.get: the For of a loop, the Block of a block, as they are now."""
        if isinstance(rv, LoopRV):
            loop = next((s for s in walk_stmts(self.func.body) if isinstance(s, For) and s.var is rv.var), None)
            if loop is None:
                raise tsch.ScheduleError(f"get: {rv.var.name} is not a loop of {self.func_name} (any more)")
            return loop
        if isinstance(rv, BlockRV):
            blk = next((b for b in self._blocks() if b.name == rv.name), None)
            if blk is None:
                raise tsch.ScheduleError(f"get: {self.func_name} has no block '{rv.name}' (any more)")
            return blk
        raise tsch.ScheduleError(f"get takes a LoopRV or a BlockRV, not {type(rv).__name__}")

    def get_child_blocks(self, block_or_loop):
        node = self.get(block_or_loop)
        return [BlockRV(b.name, _written(b)) for b in walk_stmts(node.body) if isinstance(b, Block) and b is not node]

    def get_block(self, name, func_name=None):
        if func_name:
            self.func_name = func_name
        blk = next((b for b in self._blocks() if b.name == name), None)
        if blk is not None:
            return BlockRV(name, _written(blk))
        blocks = self.func.attrs.get("blocks", {})
        buf = blocks.get(name)
        if buf is None and any(b.name == name for b in self.func.params):
            buf = name                      # a function without blocks: the buffer's name finds its stores
        if buf is None:
            raise tsch.ScheduleError(f"get_block: no block '{name}' in {self.func_name} "
                                     f"(blocks: {', '.join(blocks) or 'none'})")
        return BlockRV(name, buf)

    def get_loops(self, block):
        """The loops around the block, outermost first. Without blocks (a te-lowered function):
        those around the block's deepest store (a reduction computed into a local accumulator
        counts the accumulator's stores: its loops are the block's too)."""
        from .expr import Load, walk
        path = _path_to(self.func.body, lambda s: isinstance(s, Block) and s.name == block.name)
        if path is not None:
            return [LoopRV(s.var) for s in path if isinstance(s, For)]
        names = {block.buffer_name}
        for s in walk_stmts(self.func.body):
            if isinstance(s, Store) and s.buffer.name == block.buffer_name:
                names |= {e.buffer.name for e in walk(s.value) if isinstance(e, Load) and e.buffer.scope == "local"}
        found = []

        def go(s, path):
            if isinstance(s, Store) and s.buffer.name in names:
                found.append(list(path))
            if isinstance(s, For):
                go(s.body, path + [s.var])
                return
            for c in _children(s):
                go(c, path)
        go(self.func.body, [])
        if not found:
            raise tsch.ScheduleError(f"get_loops: block '{block.name}' stores nothing")
        return [LoopRV(v) for v in max(found, key=len)]

    # loop transformations
    def split(self, loop, factors):
        v = self._var(loop, "split")
        factors = list(factors)
        ext = const_value(next(s for s in walk_stmts(self.func.body) if isinstance(s, For) and s.var is v).extent)
        if ext is None:
            raise tsch.ScheduleError(f"split {v.name}: the loop's extent is not constant")
        if sum(f is None for f in factors) > 1 or len(factors) < 2:
            raise tsch.ScheduleError(f"split {v.name}: give at least two factors, at most one of them None")
        known = 1
        for f in factors:
            known *= f if f is not None else 1
        factors = [f if f is not None else -(-ext // known) for f in factors]
        prod = 1
        for f in factors:
            prod *= f
        if prod < ext or any(f < 1 for f in factors):
            raise tsch.ScheduleError(f"split {v.name}: factors {factors} do not cover the extent {ext}")
        out, cur = [], v
        for f in factors[:0:-1]:                     # split off the innermost factors one at a time
            body, outer, inner = self._apply(lambda b, c=cur, f=f: tsch.split(b, c, f), f"split {v.name}")
            self._set(body)
            out.insert(0, LoopRV(inner))
            cur = outer
        loops = [LoopRV(cur)] + out
        for k, lp in enumerate(loops):          # TVM's names: i_0, i_1, ...
            lp.var.name = f"{v.name}_{k}"
        return loops

    def fuse(self, *loops):
        vs = [self._var(lp, "fuse") for lp in loops]
        fused = vs[0]
        for nxt in vs[1:]:
            body, fused = self._apply(lambda b, f=fused, n=nxt: tsch.fuse(b, f, n), "fuse")
            self._set(body)
        fused.name = "_".join(v.name for v in vs) + "_fused"       # TVM's name: i_j_fused
        return LoopRV(fused)

    def work_on(self, func_name):
        self.func_name = func_name

    def show(self, **kwargs):
        print(self.mod.script())

    def reorder(self, *loops):
        vs = [self._var(lp, "reorder") for lp in loops]
        self._set(self._apply(lambda b: tsch.reorder(b, vs), "reorder"))

    def parallel(self, loop):
        v = self._var(loop, "parallel")
        try:
            tsch.parallel(erase_blocks(self.func.body), v)       # the check, on the loops as they compute
        except tsch.ScheduleError:
            raise
        except Exception as e:
            raise tsch.ScheduleError(f"parallel {v.name}: {e}") from None
        self._set(tsch._set_kind(self.func.body, v, "parallel"))

    def vectorize(self, loop):
        v = self._var(loop, "vectorize")
        self._set(self._apply(lambda b: tsch.vectorize(b, v), f"vectorize {v.name}"))

    def unroll(self, loop):
        v = self._var(loop, "unroll")
        ext = const_value(next(s for s in walk_stmts(self.func.body) if isinstance(s, For) and s.var is v).extent)
        self._set(self._apply(lambda b: tsch.unroll(b, v, max_extent=max(ext or 0, 1)), f"unroll {v.name}"))

    def bind(self, loop, thread_axis):
        v = self._var(loop, "bind")
        self._set(self._apply(lambda b: tsch.bind(b, v, thread_axis), f"bind {v.name}"))

    def compute_inline(self, block):
        """TVM's compute_inline: a block that computes an intermediate buffer element by element
        (spatial iterators, no init) is dropped with its loops, and each read of the buffer becomes
        the block's value at the read's indices."""
        from .expr import Load, substituter, transform as rewrite
        from .stmt import Allocate, Seq, StmtMutator
        blk = self.get(block)
        what = f"compute_inline {blk.name}"
        if blk.init is not None or any(iv.kind != "S" for iv in blk.iter_vars):
            raise tsch.ScheduleError(f"{what}: the block is a reduction; only an element-wise block inlines")
        if not isinstance(blk.body, Store):
            raise tsch.ScheduleError(f"{what}: the block's body is not one store")
        buf, value = blk.body.buffer, blk.body.value
        if any(b is buf for b in self.func.params):
            raise tsch.ScheduleError(f"{what}: {buf.name} is a parameter of {self.func_name}, not an intermediate")
        if len(blk.iter_vars) != len(buf.shape):
            raise tsch.ScheduleError(f"{what}: the block's iterators are not {buf.name}'s dimensions")
        from .flatten import flat_index
        from .simplify import simplify
        want = simplify(flat_index([iv.var for iv in blk.iter_vars], buf.shape))
        if simplify(blk.body.index).key() != want.key():
            raise tsch.ScheduleError(f"{what}: the block does not write {buf.name} at its own iterators")
        if any(isinstance(x, Load) and x.buffer is buf for e in [value] for x in _walk(e)):
            raise tsch.ScheduleError(f"{what}: the block reads what it writes")

        def inline(x):
            if not (isinstance(x, Load) and x.buffer is buf):
                return None
            if len(x.indices) != len(buf.shape):
                raise tsch.ScheduleError(f"{what}: a flat read of {buf.name} cannot be inlined")
            return substituter({id(iv.var): i for iv, i in zip(blk.iter_vars, x.indices)})(value)

        class _Inline(StmtMutator):
            def visit_For(self, st):
                if any(b is blk for b in walk_stmts(st)) and all(
                        not isinstance(b, (Store, Block)) or b is blk or b is blk.body for b in walk_stmts(st)):
                    return None                   # the producer's own loop nest
                return super().visit_For(st)

            def visit_Block(self, st):
                if st is blk:
                    return None
                return super().visit_Block(st)

            def visit_Seq(self, st):
                parts = [p for p in (self.visit(x) for x in st.stmts) if p is not None]
                return parts[0] if len(parts) == 1 else Seq(parts)

            def visit_Allocate(self, st):
                body = self.visit(st.body)
                if st.buffer is buf:
                    return body
                return Allocate(st.buffer, body) if body is not st.body else st

            def mutate_expr(self, e):
                return rewrite(e, inline)
        body = _Inline().visit(self.func.body)
        if any(isinstance(x, Load) and x.buffer is buf for e in _exprs(body) for x in _walk(e)):
            raise tsch.ScheduleError(f"{what}: {buf.name} is still read after inlining")
        self._set(body)

    def decompose_reduction(self, block, loop):
        """Accumulate in the output (te-lowered reductions); returns the block."""
        v = self._var(loop, "decompose_reduction")
        self._erase()
        self._set(self._apply(lambda b: tsch.decompose_reduction(b, v), "decompose_reduction"))
        return block

    # memory
    def cache_read(self, block, read_buffer_index, storage_scope):
        """The cache of the block's read_buffer_index-th input buffer (in parameter order of the
        buffers it reads); placed with compute_at."""
        self._erase()
        reads = []
        for s in walk_stmts(self.func.body):
            if isinstance(s, Store) and s.buffer.name == block.buffer_name:
                from .expr import Load, walk
                for e in walk(s.value):
                    if isinstance(e, Load) and e.buffer not in reads and e.buffer is not s.buffer:
                        reads.append(e.buffer)
        params = [b for b in self.func.params if b in reads]
        if not 0 <= read_buffer_index < len(params):
            raise tsch.ScheduleError(f"cache_read: block '{block.name}' reads {len(params)} buffers, "
                                     f"not {read_buffer_index + 1}")
        if storage_scope not in ("shared", "local"):
            raise tsch.ScheduleError(f"cache_read: scope {storage_scope!r} is not 'shared' or 'local'")
        return _CacheRV(params[read_buffer_index], storage_scope)

    def compute_at(self, block, loop):
        if isinstance(block, _CacheWriteRV):
            return self.reverse_compute_at(block, loop)
        if not isinstance(block, _CacheRV):
            raise tsch.ScheduleError(f"compute_at {block.name}: only a cache_read or cache_write block can be moved "
                                     "here; others are computed where their loops are")
        if block.placed:
            raise tsch.ScheduleError(f"compute_at {block.name}: already placed")
        v = self._var(loop, "compute_at")
        body, _ = self._apply(lambda b: tsch.cache_read(b, block.buffer, v, block.scope), f"compute_at {block.name}")
        self._set(body)
        block.placed = True

    def cache_write(self, block, write_buffer_index, storage_scope):
        """The block computes into a `storage_scope` buffer that a copy block writes back; returns
        that copy block, placed with reverse_compute_at (or compute_at) under a loop of the block:
        the tile that loop's body stores is computed locally, then copied out there. Unplaced, the
        block keeps writing its buffer (the same values)."""
        if isinstance(block, (_CacheRV, _CacheWriteRV)):
            raise tsch.ScheduleError(f"cache_write: {block.name} is a cache block")
        self._erase()
        written = [b for b in self.func.params if b.name == block.buffer_name and
                   any(isinstance(s, Store) and s.buffer is b for s in walk_stmts(self.func.body))]
        if write_buffer_index != 0 or not written:
            raise tsch.ScheduleError(f"cache_write: block '{block.name}' writes {len(written)} buffer(s), "
                                     f"not {write_buffer_index + 1}")
        if storage_scope != "local":
            raise tsch.ScheduleError(f"cache_write: scope {storage_scope!r} is not 'local'")
        return _CacheWriteRV(written[0], storage_scope)

    def reverse_compute_at(self, block, loop):
        if not isinstance(block, _CacheWriteRV):
            raise tsch.ScheduleError(f"reverse_compute_at {block.name}: only a cache_write block can be placed")
        if block.placed:
            raise tsch.ScheduleError(f"reverse_compute_at {block.name}: already placed")
        v = self._var(loop, "reverse_compute_at")
        body, _, _ = self._apply(lambda b: tsch.cache_write(b, block.buffer, v, block.scope),
                                 f"cache_write {block.name}")
        self._set(body)
        block.placed = True


def _children(s):
    from .stmt import Allocate, IfThenElse, Seq
    if isinstance(s, Seq):
        return s.stmts
    if isinstance(s, (Allocate, Block)):
        return [s.body]
    if isinstance(s, IfThenElse):
        return [s.then] + ([s.else_] if s.else_ is not None else [])
    return []


def _written(block):
    stores = [s.buffer.name for s in walk_stmts(block.body) if isinstance(s, Store)]
    return stores[-1] if stores else block.name


def _path_to(s, match):
    """The statements from s down to the first one matching (both included), or None."""
    if match(s):
        return [s]
    for c in stmt_children(s):
        p = _path_to(c, match)
        if p is not None:
            return [s] + p
    return None


def _walk(e):
    from .expr import walk
    return walk(e)


def _exprs(s):
    from .stmt import stmt_exprs
    return stmt_exprs(s)
