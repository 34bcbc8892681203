"""topi.nn.softmax and log_softmax in TVM's stages: the maximum along the axis
(T_softmax_maxelem), exp(x - max) (T_softmax_exp), their sum (T_softmax_expsum), and the
normalised output (T_softmax_norm, tag softmax_output, attrs axis), which is what
topi.cuda.schedule_softmax finds and schedules."""
from __future__ import annotations

from ... import te
from ...tir.expr import call, is_float
from ..utils import TopiError, compute, get_const_tuple


def _parts(x, axis, what):
    if not is_float(x.dtype):
        raise TopiError(f"topi.nn.{what}: takes a float tensor, not {x.dtype}")
    n = x.ndim
    if not -n <= axis < n:
        raise TopiError(f"topi.nn.{what}: axis {axis} is out of range for rank {n}")
    axis %= n
    shape = get_const_tuple(x.shape)
    reduced = tuple(s for d, s in enumerate(shape) if d != axis)

    def with_k(i, k):
        return list(i[:axis]) + [k] + list(i[axis:])

    def without(i):
        return [v for d, v in enumerate(i) if d != axis]

    def fmax(*i):
        k = te.reduce_axis((0, shape[axis]), name="k")
        return te.max(x(*with_k(i, k.var)), axis=k)
    return axis, shape, reduced, with_k, without, compute(reduced, fmax, "T_softmax_maxelem")


def softmax(x, axis=-1):
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    axis, shape, reduced, with_k, without, max_elem = _parts(x, axis, "softmax")
    exp = compute(shape, lambda *i: call("exp", x(*i) - max_elem(*without(i))), "T_softmax_exp")

    def fsum(*i):
        k = te.reduce_axis((0, shape[axis]), name="k")
        return te.sum(exp(*with_k(i, k.var)), axis=k)
    expsum = compute(reduced, fsum, "T_softmax_expsum")
    return compute(shape, lambda *i: exp(*i) / expsum(*without(i)), "T_softmax_norm", "softmax_output",
                   {"axis": axis})


def log_softmax(x, axis=-1):
    """x - max - log(sum(exp(x - max))) along `axis`."""
    axis, shape, reduced, with_k, without, max_elem = _parts(x, axis, "log_softmax")

    def fsum(*i):
        k = te.reduce_axis((0, shape[axis]), name="k")
        return te.sum(call("exp", x(*with_k(i, k.var)) - max_elem(*i)), axis=k)
    expsum = compute(reduced, fsum, "compute")
    return compute(shape, lambda *i: x(*i) - max_elem(*without(i)) - call("log", expsum(*without(i))),
                   "compute", "log_softmax_output", {"axis": axis})
