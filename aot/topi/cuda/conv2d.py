"""topi.cuda.conv2d_nchw (the same compute as topi.nn.conv2d_nchw, as TVM's) and its GPU schedule:
the pad stage computed where the convolution reads it; the output tiled over a 3-D grid of
blocks (channels, rows, columns) and threads, the convolution computed per thread in a local
accumulator (TVM's direct schedule without its autotuned shared-memory staging)."""
from __future__ import annotations

from ..nn.conv2d import conv2d_nchw as _nn_conv2d_nchw
from ..schedule_util import first_plan, outputs_of, thread_axis
from ..utils import TopiError, get_const_tuple, input_tensors, is_output, op_tag, traverse_inline
from .injective import one_thread_per_element


def conv2d_nchw(data, kernel, strides, padding, dilation, out_dtype="float32"):
    """topi.nn.conv2d_nchw, as TVM's CUDA strategy declares it."""
    return _nn_conv2d_nchw(data, kernel, strides, padding, dilation, out_dtype)


def _divisor_at_most(n, cap):
    return max(d for d in range(1, min(n, cap) + 1) if n % d == 0)


def _find_conv(s, outs):
    found = []
    traverse_inline(s, outs[0].op, lambda op: found.append(op) if op_tag(op) in ("conv2d_nchw",) else None)
    if not found:
        raise TopiError("topi.cuda.schedule_conv2d_nchw: the outputs hold no conv2d_nchw stage")
    return found[0]


def _tiled(outs, at_thread=True):
    def tiled(s):
        """Output channels, rows and columns each split into blocks and threads (tiles that divide
        them); the convolution computed per thread (TVM: its local write cache at threadIdx.x)."""
        conv = _find_conv(s, outs)
        pad_data = input_tensors(conv)[0]
        if op_tag(pad_data.op).startswith("injective"):
            s[pad_data].compute_inline()
        out = outs[0]
        conv_t = conv.output(0)
        local = None
        if at_thread:
            local = s.cache_write(conv_t, "local") if is_output(s, conv) else conv_t
        n, f, y, x = s[out].op.axis
        _, F, H, W = get_const_tuple(out.shape)
        bf, tf = s[out].split(f, factor=_divisor_at_most(F, 4))
        by, ty = s[out].split(y, factor=_divisor_at_most(H, 8))
        bx, tx = s[out].split(x, factor=_divisor_at_most(W, 8))
        s[out].reorder(n, bf, by, bx, tf, ty, tx)
        bf = s[out].fuse(n, bf)
        s[out].bind(bf, thread_axis("blockIdx.z"))
        s[out].bind(by, thread_axis("blockIdx.y"))
        s[out].bind(bx, thread_axis("blockIdx.x"))
        s[out].bind(tf, thread_axis("threadIdx.z"))
        s[out].bind(ty, thread_axis("threadIdx.y"))
        s[out].bind(tx, thread_axis("threadIdx.x"))
        if local is not None:
            s[local].compute_at(s[out], tx)
    if not at_thread:
        tiled.__name__ = "tiled_inline"
        tiled.__doc__ = "The same tiles, the convolution computed where its reader reads it."
    return tiled


def _per_element(outs):
    def element_per_thread(s):
        """Each output element in its own thread, its convolution (and the padding) computed there."""
        conv = _find_conv(s, outs)
        pad_data = input_tensors(conv)[0]
        if op_tag(pad_data.op).startswith("injective"):
            s[pad_data].compute_inline()
        for out in outs:
            one_thread_per_element(s, out)
    return element_per_thread


def schedule_conv2d_nchw(outs):
    """The GPU schedule of topi.cuda.conv2d_nchw / topi.nn.conv2d_nchw and the injective stages
    after it (bias, relu)."""
    outs = outputs_of(outs)
    return first_plan("topi.cuda.schedule_conv2d_nchw", outs, [_tiled(outs), _tiled(outs, False), _per_element(outs)])
