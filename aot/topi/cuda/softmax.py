"""topi.cuda.schedule_softmax (TVM's GPU schedule for targets without warp shuffles): a block
per row; the row's sum of exponentials rfactor'd over the block's threads; the normalised row
split over the same threads."""
from __future__ import annotations

from ..schedule_util import first_plan, is_zero, outputs_of, thread_axis
from ..utils import TopiError, get_const_int, input_tensors, op_tag, traverse_inline
from .injective import one_thread_per_element

NUM_THREAD = 64


def _parts(op):
    """(exp, expsum, max_elem) of a softmax_output stage, (None, expsum, max_elem) of a log_softmax."""
    t = op_tag(op)
    ins = input_tensors(op)
    if t == "softmax_output":
        exp, expsum = ins[0], ins[1]
        max_elem = [x for x in input_tensors(exp.op) if x.op is not exp.op and not x.is_placeholder][0]
        return exp, expsum, max_elem
    if t == "log_softmax_output":
        max_elem = next(x for x in ins if x.name == "T_softmax_maxelem")
        expsum = next(x for x in ins if x is not max_elem and not x.is_placeholder)
        return None, expsum, max_elem
    raise TopiError(f"topi.cuda.schedule_softmax: {op.output(0).name} is tagged {t!r}, not softmax_output or "
                    "log_softmax_output")


def _find(outs):
    found = []

    def visit(op):
        if "softmax" in op_tag(op):
            found.append(op)
    s = _Probe()
    traverse_inline(s, outs[0].op, visit)
    if not found:
        raise TopiError("topi.cuda.schedule_softmax: the outputs hold no softmax stage (topi.nn.softmax)")
    return found[0]


class _Probe:
    """A stand-in schedule for traverse_inline that only walks (the plans schedule for real)."""
    outputs = []

    def __getitem__(self, op):
        return self

    def compute_inline(self):
        pass


def _rows_over_blocks(outs):
    def rfactor_rows(s):
        """TVM's: exp and the max one block per row, the sum rfactor'd over NUM_THREAD threads."""
        sm = _find(outs)
        axis = get_const_int(sm.attrs["axis"])
        exp, expsum, max_elem = _parts(sm)
        if len(outs[0].shape) != 2:
            raise TopiError("rank other than 2")
        block_x, thread_x = thread_axis("blockIdx.x"), thread_axis("threadIdx.x", NUM_THREAD)
        if exp is not None:
            s[exp].bind(exp.op.axis[axis ^ 1], block_x)
        s[max_elem].bind(max_elem.op.axis[0], block_x)
        _, ki = s[expsum].split(expsum.op.reduce_axis[0], factor=NUM_THREAD)
        ef = s.rfactor(expsum, ki)
        s[expsum].bind(s[expsum].op.axis[0], block_x)
        s[expsum].bind(s[expsum].op.reduce_axis[0], thread_x)
        s[ef].compute_at(s[expsum], s[expsum].op.reduce_axis[0])
        s[expsum].set_store_predicate(is_zero(thread_x))
        out = outs[0]
        tx, xi = s[out].split(out.op.axis[axis], nparts=NUM_THREAD)
        s[out].bind(out.op.axis[axis ^ 1], block_x)
        s[out].bind(tx, thread_x)
        s[out].reorder(out.op.axis[axis ^ 1], tx, xi)
        if sm is not out.op:
            s[sm].compute_at(s[out], tx)
    return rfactor_rows


def _row_per_block(outs):
    def row_per_block(s):
        """A block per row; each thread finds the row's max and sum itself, then normalises its
        share of the row (no stage but the output is scheduled)."""
        sm = _find(outs)
        axis = get_const_int(sm.attrs["axis"])
        out = outs[0]
        if len(out.shape) != 2 or sm is not out.op:
            raise TopiError("a 2-D softmax output")
        tx, _ = s[out].split(out.op.axis[axis], nparts=NUM_THREAD)
        if axis == 0:
            s[out].reorder(out.op.axis[1], tx)
        s[out].bind(out.op.axis[axis ^ 1], thread_axis("blockIdx.x"))
        s[out].bind(tx, thread_axis("threadIdx.x", NUM_THREAD))
    return row_per_block


def _element_per_thread(outs):
    def element_per_thread(s):
        """Each output element in its own thread (any rank)."""
        for out in outs:
            one_thread_per_element(s, out)
    return element_per_thread


def schedule_softmax(outs):
    """The GPU schedule of topi.nn.softmax / log_softmax (and injective stages after it)."""
    outs = outputs_of(outs)
    return first_plan("topi.cuda.schedule_softmax", outs,
                      [_rows_over_blocks(outs), _row_per_block(outs), _element_per_thread(outs)])


schedule_log_softmax = schedule_softmax
