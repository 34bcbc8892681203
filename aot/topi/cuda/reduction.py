"""topi.cuda.schedule_reduce: the injective stages before a reduction inlined into it, the
reduction spread over threads (TVM: its reduce axes fused, split by the thread count, rfactor'd
and the partial results combined across threadIdx.x; several outputs over blockIdx.x and
threadIdx.y), the injective stages after it scheduled as injective ones."""
from __future__ import annotations

from ...tir.expr import Const, all_of, lt
from .. import tag
from ..schedule_util import (current_target, first_plan, is_injective_op, is_zero, max_num_threads, outputs_of,
                             producers, thread_axis)
from ..utils import TopiError, get_const_tuple, is_output, op_tag, prod
from .injective import one_thread_per_element, schedule_injective_from_existing


def _reduce_across_threads(op, sch):
    """TVM's schedule: rfactor over a thread's slice of the reduction, combined across threads."""
    out = op.output(0)
    st = sch[out]
    red = list(st.op.reduce_axis)
    axes = list(st.op.axis)
    if axes:
        num_thread = 32
        block_x, thread_x = thread_axis("blockIdx.x"), thread_axis("threadIdx.x", num_thread)
        thread_y = thread_axis("threadIdx.y", num_thread)
    else:
        num_thread = max_num_threads(current_target())
        thread_x = thread_axis("threadIdx.x", num_thread)
    fused = st.fuse(*red) if len(red) > 1 else red[0]
    _, ki = st.split(fused, factor=num_thread)
    rf = sch.rfactor(out, ki)
    tx = sch[out].op.reduce_axis[0]
    sch[out].bind(tx, thread_x)
    sch[rf].compute_at(sch[out], tx)
    if axes:
        outer = sch[out].fuse(*sch[out].op.axis) if len(axes) > 1 else sch[out].op.axis[0]
        bx, inner = sch[out].split(outer, factor=num_thread)
        sch[out].bind(inner, thread_y)
        sch[out].bind(bx, block_x)
        size = prod(get_const_tuple(out.shape))
        bxv, tyv = getattr(bx, "var", bx), getattr(inner, "var", inner)
        sch[out].set_store_predicate(all_of([is_zero(thread_x), lt(bxv * Const(num_thread, "int32") + tyv,
                                                                    Const(size, "int32"))]))
    else:
        sch[out].set_store_predicate(is_zero(thread_x))


def _serial_per_thread(op, sch):
    """Each output element's reduction serial in its own thread (a rank-0 output: one thread); a
    reduction that is not an output is computed where its reader's thread reads it."""
    if is_output(sch, op):
        one_thread_per_element(sch, op.output(0))


def _schedule(outs, reduce_stage, injective_stage):
    def plan(sch):
        done = set()

        def before(op):
            """Injective producers of a reduction: computed where the reduction reads them."""
            if id(op) in done:
                return
            if not is_injective_op(op):
                raise TopiError(f"topi.cuda.schedule_reduce: stage {op.output(0).name} (tag {op_tag(op)!r}) feeds "
                                "a reduction and is neither injective nor a reduction")
            sch[op].compute_inline()
            done.add(id(op))
            for t in producers(op):
                before(t.op)

        def after(op):
            if id(op) in done:
                return
            t = op_tag(op)
            if t in (tag.COMM_REDUCE, tag.COMM_REDUCE_IDX) or (not t and list(getattr(op, "reduce_axis", []))):
                reduce_stage(op, sch)
                done.add(id(op))
                for p in producers(op):
                    if op_tag(p.op) == tag.COMM_REDUCE_IDX:       # argmax's extreme: a reduction of its own
                        done.add(id(p.op))
                        for q in producers(p.op):
                            before(q.op)
                    else:
                        before(p.op)
            elif is_injective_op(op):
                if is_output(sch, op):
                    injective_stage(sch, op.output(0))
                done.add(id(op))
                for p in producers(op):
                    after(p.op)
            else:
                raise TopiError(f"topi.cuda.schedule_reduce: stage {op.output(0).name} (tag {t!r}) is neither "
                                "injective nor a reduction")
        for out in outs:
            after(out.op)
    plan.__name__ = reduce_stage.__name__
    return plan


def schedule_reduce(outs):
    """The GPU schedule of reductions (topi.sum, max, min, prod, argmax, ...) and the injective
    stages around them."""
    outs = outputs_of(outs)
    return first_plan("topi.cuda.schedule_reduce", outs,
                      [_schedule(outs, _reduce_across_threads, schedule_injective_from_existing),
                       _schedule(outs, _serial_per_thread, one_thread_per_element)])

