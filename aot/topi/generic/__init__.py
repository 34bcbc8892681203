"""topi.generic: the default schedules for host targets ("c", "llvm" and plug-in kinds), as TVM's:
injective stages that are not outputs are computed where they are read, and the first output's
axes are fused. A GPU target has its own (topi.cuda.schedule_*): asking for a generic one under
a GPU target is refused by name, as TVM refuses it."""
from __future__ import annotations

from ... import te
from ...errors import AotError
from ..schedule_util import current_target, is_device, outputs_of
from ..utils import TopiError, auto_inline_injective


def default_schedule(outs, auto_inline, what="default_schedule"):
    target = current_target()
    outs = outputs_of(outs)
    if is_device(target):
        raise TopiError(f"topi.generic.{what}: no generic schedule for the GPU target '{target}': use "
                        f"topi.cuda.{what} under it")
    s = te.create_schedule([x.op for x in outs])
    s.topi_refused = []
    if auto_inline:
        auto_inline_injective(s, outs)
        x = outs[0]
        if len(x.op.axis) > 1:
            try:
                s[x].fuse(*x.op.axis)
            except AotError as e:
                # the fused loop only shortens the nest; where te keeps a reduction between the
                # output's loops they stay apart, computing the same values
                s.topi_refused.append(("fuse", str(e)))
    return s


def _generic(name, auto_inline):
    def schedule(outs):
        return default_schedule(outs, auto_inline, name)
    schedule.__name__ = name
    schedule.__doc__ = f"topi.generic.{name}(outs): the host schedule of these outputs (a te schedule)."
    return schedule


schedule_injective = _generic("schedule_injective", True)
schedule_elemwise = _generic("schedule_elemwise", True)
schedule_broadcast = _generic("schedule_broadcast", True)
schedule_reduce = _generic("schedule_reduce", True)
schedule_softmax = _generic("schedule_softmax", False)
schedule_log_softmax = _generic("schedule_log_softmax", False)
schedule_conv2d_nchw = _generic("schedule_conv2d_nchw", False)
schedule_conv2d_nhwc = _generic("schedule_conv2d_nhwc", False)
schedule_conv2d_hwcn = _generic("schedule_conv2d_hwcn", False)
schedule_depthwise_conv2d_nchw = _generic("schedule_depthwise_conv2d_nchw", False)
schedule_group_conv2d_nchw = _generic("schedule_group_conv2d_nchw", False)
schedule_dense = _generic("schedule_dense", False)
schedule_matmul = _generic("schedule_matmul", False)
schedule_pool = _generic("schedule_pool", False)
schedule_adaptive_pool = _generic("schedule_adaptive_pool", False)
schedule_extern = _generic("schedule_extern", False)
