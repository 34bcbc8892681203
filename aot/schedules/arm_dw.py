"""Cortex-M rule ("arm_cpu" key) for int8 depthwise convolutions: each output pixel's channel
loop, window and requantisation included, becomes one dw_s8 call (aot/tir/intrin/arm_dw.py):
Helium on cortex-m55/m85, the DSP extension's SIMD32 on cortex-m4/m7/m33. Runs before the rules
of arm.py, which then leave the kernel alone (its schedule is recorded in func.attrs["schedule"]).

The weights come from TFLite as [C, KH, KW, 1]; they are packed tap-major ([.., KH, KW, .., C],
pack_layout over the whole channel dimension) so that a tap's channels are consecutive, as the
input's are in NHWC. A depth multiplier above one (output channel k reads input channel k / M),
a per-tensor requantisation, or a core with neither extension keeps the other rules.
"""
from __future__ import annotations

from ..tir.expr import Bin, Var, walk
from ..tir.intrin import get_intrin
from ..tir.intrin.arm import _int8_operand, _step, flat_index
from ..tir.schedule import ScheduleError, pack_layout, tensorize
from ..tir.simplify import const_value
from ..tir.stmt import Seq, Store
from .nests import accumulation, nests as _nests
from .registry import register

DW = "dw_s8"


def _operands(red):
    """The int8 loads of the window's product (acc = acc + x * w), or ()."""
    s = red[-1].body
    if not (isinstance(s, Store) and isinstance(s.value, Bin) and isinstance(s.value.b, Bin) and s.value.b.op == "*"):
        return ()
    return tuple(ld for ld, _ in (_int8_operand(s.value.b.a), _int8_operand(s.value.b.b)) if ld is not None)


def _pack_weights(func, chan, red):
    """func with the constant operand that does not run along the channel loop stored with its
    channel dimension innermost; func itself when none needs it; None when one cannot be."""
    for ld in _operands(red):
        if _step(flat_index(ld), chan.var) in (1, None) or const_value(chan.extent) == 1:
            continue
        param = next((k for k, b in enumerate(func.params) if b is ld.buffer), None)
        dims = [d for d, i in enumerate(ld.indices) if any(isinstance(x, Var) and x is chan.var for x in walk(i))]
        if param is None or param not in func.attrs.get("constants", ()) or len(dims) != 1 \
                or ld.indices[dims[0]].key() != chan.var.key() or const_value(chan.min) != 0 \
                or ld.buffer.shape[dims[0]] != const_value(chan.extent):
            return None
        try:
            func = pack_layout(func, param, dims[0], ld.buffer.shape[dims[0]])
        except ScheduleError:
            return None
    return func


@register("arm_cpu")
def tensorize_depthwise(func, target):
    it = get_intrin(DW)
    variant = it.variant_for(target.mcpu)
    if variant == "plain" or "schedule" in func.attrs or len(_nests(func.body)) != 1:
        return func
    found = accumulation(_nests(func.body)[0])
    if not found or found[2].dtype != "int32" or not found[1] or len(_operands(found[1])) != 2:
        return func
    loops, red, _ = found
    chan = loops[-1]
    packed = _pack_weights(func, chan, red)
    if packed is None:
        return func
    nest = _nests(packed.body)[0]
    chan = accumulation(nest)[0][-1]
    try:
        body = tensorize(nest, chan.var, DW)
    except ScheduleError:
        return func
    return packed.with_body(Seq([body]), attrs=dict(packed.attrs, schedule=f"{DW} ({variant})"))


tensorize_depthwise.wants_target = True
