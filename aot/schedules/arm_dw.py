"""Cortex-M rule (a micro-kernel choice of pipelines.py) for int8 depthwise convolutions: each output pixel's channel
loop, window and requantisation included, becomes one dw_s8 call (aot/tir/intrin/arm_dw.py):
Helium on cortex-m55/m85, the DSP extension's SIMD32 on cortex-m4/m7/m33. Tried before arm.py's
dot products, which would take only its short windows; the choice is recorded in
func.attrs["schedule"].

The weights come from TFLite as [C, KH, KW, 1]; they are packed tap-major ([.., KH, KW, .., C],
pack_layout over the whole channel dimension) so that a tap's channels are consecutive, as the
input's are in NHWC. A conv whose input has one channel (KWS's first layer) is the same call on Helium, its
input broadcast to every output channel (a_k = 0). A depth multiplier above one on more than one
input channel (output channel k reads input channel k / M), a per-tensor requantisation, or a
core with neither extension keeps the other rules.

A depthwise conv staged to write over its input (aot/schedules/inplace_conv.py, issue 16) is
staged 16 channels at a time on these cores (the Cortex-M family's staging_block, which the executor asks):
the call then covers a pixel's block of channels, computed into the scratch, before the block
is copied back. One channel at a time would leave the micro-kernel nothing to run along. One
staged by rows (stage_rows: a ring of rows copied back a row behind) has every channel per call.
"""
from __future__ import annotations

from ..tir.expr import Bin, Call, Load, Var, transform, walk
from ..tir.intrin import get_intrin
from ..tir.intrin.arm import int8_operand, step, flat_index
from ..tir.schedule import ScheduleError, pack_layout, tensorize
from ..tir.simplify import const_value, linear_form, simplify
from ..tir.stmt import Seq, Store, map_exprs, own_exprs, walk_stmts
from .nests import accumulation, map_staged_parts, nests as _nests, staged_compute
from .requant_table import fold_layouts

DW = "dw_s8"
DW_F = "dw_s8f"     # the DSP cores': the requantisation from the table (requant_table.py)


def _compute_nests(body):
    """(the accumulation nests, a function putting their replacements back) for a kernel of one
    nest, staged or not (nests.staged_compute), or staged by rows (aot/schedules/inplace_conv.py
    stage_rows: loops around [the first rows, the rows computed and copied back, the last
    copies], each part's compute tensorized); ([], None) for other shapes."""
    tops = _nests(body)
    if len(tops) != 1:
        return [], None
    nest, put_back = staged_compute(tops[0])
    if nest is not None:
        return [nest], (lambda new: Seq([put_back(new[0])]))

    def compute(p):
        inner, put = staged_compute(p)
        return (inner, put) if inner is not None and accumulation(inner) else (None, None)
    found = []

    def collect(p, loops):
        inner = compute(p)[0]
        if inner is None:
            return None
        found.append(inner)
        return p
    if map_staged_parts(tops[0], collect) is None:
        return [], None

    def rebuild(new):
        it = iter(new)
        return Seq([map_staged_parts(tops[0], lambda p, loops: compute(p)[1](next(it)) if compute(p)[0] else None)])
    return found, rebuild


def _operands(red):
    """The int8 loads of the window's product (acc = acc + x * w), or ()."""
    s = red[-1].body
    if not (isinstance(s, Store) and isinstance(s.value, Bin) and isinstance(s.value.b, Bin) and s.value.b.op == "*"):
        return ()
    return tuple(ld for ld, _ in (int8_operand(s.value.b.a), int8_operand(s.value.b.b)) if ld is not None)


def _broadcast_pays(operands, chan, variant):
    """A conv whose input every output channel reads (a_k = 0) takes the call only when that
    input has one channel and on Helium: a pointwise conv's input-channel reduction is dot_s8's,
    and on KWS's first layer the DSP body runs more instructions than the CPU rules' register
    tiles where Helium's runs fewer."""
    for ld in operands:
        if const_value(chan.extent) != 1 and step(flat_index(ld), chan.var) == 0:
            return variant == "mve" and ld.buffer.shape[-1] == 1
    return True


def _pack_weights(func, chan, red):
    """func with the constant operand that does not run along the channel loop stored with its
    channel dimension innermost; func itself when none needs it; None when one cannot be."""
    for ld in _operands(red):
        if step(flat_index(ld), chan.var) in (0, 1, None) or const_value(chan.extent) == 1:
            continue
        param = next((k for k, b in enumerate(func.params) if b is ld.buffer), None)
        dims = [d for d, i in enumerate(ld.indices) if any(isinstance(x, Var) and x is chan.var for x in walk(i))]
        n = const_value(chan.extent)
        if param is None or param not in func.attrs.get("constants", ()) or len(dims) != 1 \
                or const_value(chan.min) != 0 or ld.buffer.shape[dims[0]] % n:
            return None
        # the channel itself, or (staged a block at a time) block * n + channel
        form = linear_form(ld.indices[dims[0]])
        terms = sorted(k for _, k in form[0].values()) if form and form[1] == 0 else None
        if terms not in ([1], [1, n]) or step(ld.indices[dims[0]], chan.var) != 1:
            return None
        try:
            func = pack_layout(func, param, dims[0], n)
        except ScheduleError:
            return None
    return func


def _with_table(func, body):
    """(body with its dw_s8 calls as dw_s8f over the requantisation's table, func's params with
    the table, the layouts) where every call reads the same constant bias, multipliers and
    shifts (C elements each, no other layout) with one offset and zero point; None otherwise.
    The bound on a channel's sum is the window's taps at int8's extremes (the weights' layout is
    their own)."""
    calls = [x for st in walk_stmts(body) for e in own_exprs(st) for x in walk(e) if isinstance(x, Call) and x.fn == DW]
    if not calls:
        return None
    first = calls[0]
    bufs = [first.args[k].buffer for k in (3, 4, 5)]
    consts, layouts = func.attrs.get("constants", ()), func.attrs.get("layouts", {})
    index = {id(b): k for k, b in enumerate(func.params)}
    C = bufs[0].shape[0] if len(bufs[0].shape) == 1 else None
    keys = [index.get(id(b)) for b in bufs]
    offs = {(const_value(c.args[14]), const_value(c.args[15])) for c in calls}
    if C is None or len(offs) != 1 or None in next(iter(offs)) or any(tuple(b.shape) != (C,) for b in bufs) \
            or any(k is None or k not in consts or k in layouts for k in keys) \
            or any(c.args[k].buffer is not b for c in calls for k, b in zip((3, 4, 5), bufs)):
        return None
    (off, zp), (kb, km, ks) = next(iter(offs)), keys
    taps = first.args[2].buffer.size // C
    table, new_layouts = fold_layouts(bufs[0], kb, km, ks, None, cout=C, cin=taps, sw=1, wbase=0, off=off, zp=zp)

    def rewrite(x):
        if isinstance(x, Call) and x.fn == DW:
            (i,) = x.args[3].indices
            args = list(x.args)
            args[3] = Load(table, (simplify(i * 2),))
            return Call(DW_F, [transform(a, rewrite) for a in args], x.dtype)
        return None
    out = map_exprs(body, lambda e: transform(e, rewrite))
    return out, [table if k == kb else b for k, b in enumerate(func.params)], {**layouts, **new_layouts}


def tensorize_depthwise(func, target):
    it = get_intrin(DW)
    variant = it.variant_for(target.mcpu)
    if variant == "plain":
        return None
    computes, _ = _compute_nests(func.body)
    found = accumulation(computes[0]) if computes else None
    if not found or found[2].dtype != "int32" or not found[1] or len(_operands(found[1])) != 2:
        return None
    loops, red, _ = found
    chan = loops[-1]
    if not _broadcast_pays(_operands(red), chan, variant):
        return None
    packed = _pack_weights(func, chan, red)
    if packed is None:
        return None
    computes, rebuild = _compute_nests(packed.body)
    try:
        body = rebuild([tensorize(nest, accumulation(nest)[0][-1].var, DW) for nest in computes])
    except ScheduleError:
        return None
    if variant == "dsp":
        got = _with_table(packed, body)
        if got is not None:
            body, params, layouts = got
            return packed.with_body(body, params, attrs=dict(packed.attrs, schedule=f"{DW_F} (dsp)", layouts=layouts))
    return packed.with_body(body, attrs=dict(packed.attrs, schedule=f"{DW} ({variant})"))

