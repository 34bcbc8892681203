"""What topi's schedules share: the current target (TVM: Target.current()), thread axes, and
trying a schedule's plans in turn on fresh schedules, so that a te primitive refused today
(rfactor, compute_at on an intermediate stage, ...) leaves a simpler schedule that computes the
same values, and the refusals stay on record (sch.topi_refused)."""
from __future__ import annotations

from .. import te
from ..errors import AotError
from ..tir.expr import Const, eq
from .utils import TopiError, input_tensors, is_placeholder, op_tag
from . import tag as _tag


def current_target():
    """The target of the innermost `with target:` scope, or None (TVM: Target.current())."""
    from .. import target as _target
    current = getattr(_target.Target, "current", None)
    if current is None:
        return None
    try:
        return current(allow_none=True)
    except TypeError:
        return current()


def is_device(target):
    return target is not None and bool(getattr(target, "is_device", False))


def max_num_threads(target, default=256):
    """Threads per block a schedule may use: the target's max_num_threads where it tells it
    (TVM's target attribute), else `default`, which every CUDA and OpenCL device takes."""
    for src in (target, getattr(target, "family", None)):
        v = getattr(src, "max_num_threads", None)
        if isinstance(v, int) and v > 0:
            return v
    return default


def thread_axis(tag, extent=None):
    """te.thread_axis for `tag`; with its extent where te takes TVM's ((0, n), tag) form."""
    if extent is not None:
        try:
            return te.thread_axis((0, extent), tag)
        except (AotError, TypeError):
            pass
    return te.thread_axis(tag)


def is_zero(iv):
    """`thread == 0` for a thread axis (TVM: thread_x.equal(0))."""
    return eq(getattr(iv, "var", iv), Const(0, "int32"))


def outputs_of(outs):
    return [outs] if isinstance(outs, te.Tensor) else list(outs)


def first_plan(what, outs, plans):
    """The schedule of the first plan that applies, each tried on a fresh te.create_schedule of
    outs: plan(s) -> None, raising AotError where te refuses one of its primitives. What the
    earlier plans were refused stays in sch.topi_refused ([(plan name, message)])."""
    refused = []
    for plan in plans:
        s = te.create_schedule([t.op for t in outs])
        try:
            plan(s)
        except AotError as e:
            refused.append((plan.__name__.strip("_"), str(e)))
            continue
        except AttributeError as e:
            # a primitive this te does not have (yet): refused like one it has but cannot apply
            if not isinstance(getattr(e, "obj", None), (te.Schedule, te.Stage)):
                raise
            refused.append((plan.__name__.strip("_"), f"te has no {type(e.obj).__name__}.{e.name}"))
            continue
        s.topi_plan, s.topi_refused = plan.__name__.strip("_"), refused
        return s
    raise TopiError(f"{what}: no schedule applies: " + "; ".join(f"{p}: {m}" for p, m in refused))


def is_injective_op(op):
    """An injective stage: tagged so by topi, or a compute without a reduction whose tag is
    unset (te.Tensor arithmetic)."""
    t = op_tag(op)
    return _tag.is_injective(t) or (not t and not list(getattr(op, "reduce_axis", [])))


def producers(op):
    return [t for t in input_tensors(op) if not is_placeholder(t)]
