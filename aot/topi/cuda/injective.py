"""topi.cuda.schedule_injective: the output's axes fused, then split over blocks and threads."""
from __future__ import annotations

from ...errors import AotError
from ..schedule_util import current_target, first_plan, max_num_threads, outputs_of, thread_axis
from ..utils import auto_inline_injective, get_const_tuple, prod

MAX_BLOCK = 256


def schedule_injective_from_existing(sch, out):
    """Binds out's fused axes to blockIdx.x/threadIdx.x (a grid-stride loop over what is left
    when the output is larger than MAX_BLOCK blocks of threads). A rank-0 output is one thread."""
    axes = list(out.op.axis)
    if not axes:
        return sch
    st = sch[out]
    fused = st.fuse(*axes) if len(axes) > 1 else axes[0]
    num_thread = max_num_threads(current_target())
    shape = get_const_tuple(out.shape)
    size = prod(shape) if all(isinstance(d, int) for d in shape) else None
    if size is not None and size > MAX_BLOCK * num_thread:
        xo, xi = st.split(fused, factor=num_thread * MAX_BLOCK)
        bx, tx = st.split(xi, factor=num_thread)
        st.reorder(bx, tx, xo)
    else:
        bx, tx = st.split(fused, factor=min(num_thread, size) if size else num_thread)
    st.bind(bx, thread_axis("blockIdx.x"))
    st.bind(tx, thread_axis("threadIdx.x", num_thread))
    return sch


def one_thread_per_element(sch, out):
    """The same without the grid-stride loop: as many blocks as the output needs. Where te
    keeps a reduction between the output's loops (they do not fuse), the outermost axis alone
    is spread over the threads, the rest serial in each."""
    axes = list(out.op.axis)
    if not axes:
        return sch
    st = sch[out]
    try:
        fused = st.fuse(*axes) if len(axes) > 1 else axes[0]
    except AotError:
        fused = axes[0]
    num_thread = max_num_threads(current_target())
    bx, tx = st.split(fused, factor=num_thread)
    st.bind(bx, thread_axis("blockIdx.x"))
    st.bind(tx, thread_axis("threadIdx.x", num_thread))
    return sch


def schedule_injective(outs):
    """The GPU schedule of injective outputs: other injective stages inlined, each output's
    elements one per thread."""
    outs = outputs_of(outs)

    def grid_stride(s):
        auto_inline_injective(s, outs)
        for out in outs:
            schedule_injective_from_existing(s, out)

    def one_pass(s):
        auto_inline_injective(s, outs)
        for out in outs:
            one_thread_per_element(s, out)
    return first_plan("topi.cuda.schedule_injective", outs, [grid_stride, one_pass])


schedule_elemwise = schedule_injective
schedule_broadcast = schedule_injective
