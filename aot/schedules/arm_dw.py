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
core with neither extension keeps the other rules. On the single-issue DSP cores (M4, M33) a
call of whole groups of four channels reads its weights widened at compile time (DwWide:
dw_s8w), a tap then one input word's widening instead of two words'.

A depthwise conv staged to write over its input (aot/schedules/inplace_conv.py, issue 16) is
staged 16 channels at a time on these cores (the Cortex-M family's staging_block, which the executor asks):
the call then covers a pixel's block of channels, computed into the scratch, before the block
is copied back. One channel at a time would leave the micro-kernel nothing to run along. One
staged by rows (stage_rows: a ring of rows copied back a row behind) has every channel per call.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..tir.expr import Bin, Call, Const, Load, Var, transform, walk
from ..targets.cortex_m import core
from ..tir.intrin import get_intrin
from ..tir.intrin.arm import int8_operand, step, flat_index
from ..tir.intrin.arm_dw3 import WEIGHT_BYTES, ring_words
from ..tir.schedule import PackLayout, ScheduleError, pack_layout, tensorize
from ..tir.simplify import const_value, linear_form, simplify
from ..tir.stmt import Buffer, Evaluate, For, Seq, Store, map_exprs, own_exprs, walk_stmts
from .inplace_conv import MAX_SCRATCH_SHARE
from .nests import accumulation, map_staged_parts, nests as _nests, staged_compute
from .requant_table import FoldedBias, fold_layouts

DW = "dw_s8"
DW_F = "dw_s8f"     # the DSP cores': the requantisation from the table (requant_table.py)
DW_W = "dw_s8w"     # dw_s8f over weights widened at compile time (DwWide)
DW3 = "dw3_s8r"     # the DSP cores' 3x3 convs: four channels, every row, a call
DW3_2 = "dw3_s8r2"  # its stride-2 calls' (the same kernel under its own name)
# dw3_s8r pays where its rows are long: a channel's setup on each row costs about two pixel pairs,
# and a row's widening is shared by three output rows only at stride 1. Measured on M4 (est.
# cycles, dw3_s8r / dw_s8f): 48 wide 0.59, 25 wide (KWS, by columns) 0.73, 24 wide 0.78, 12
# wide 0.96, 6 wide 1.4. At stride 2 (dw3_s8r2, its rows in fours in assembly) against dw_s8w:
# 48 wide in (24 out) 0.90 (VWW 350 -> 315 K), 24 wide in 1.08 (a row's widening serves one or
# two output rows, not three)
MIN_RING_ROW = 12
MIN_RING_ROW_S2 = 24       # output rows, at stride 2


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


def _with_table(func, body, per_channel=False, wide=False):
    """(body with its dw_s8 calls as dw_s8f over the requantisation's table, func's params with
    the table, the layouts) where every call reads the same constant bias, multipliers and
    shifts (C elements each, no other layout) with one offset and zero point; None otherwise.
    The bound on a channel's sum is the window's taps at int8's extremes (the weights' layout is
    their own). wide: the table four words a channel (FoldedBias.wide: dw_s8f's)."""
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
    table, new_layouts = fold_layouts(bufs[0], kb, km, ks, None, cout=C, cin=taps, sw=1, wbase=0, off=off, zp=zp,
                                      per_channel=per_channel, wide=wide)

    def rewrite(x):
        if isinstance(x, Call) and x.fn == DW:
            (i,) = x.args[3].indices
            args = list(x.args)
            args[3] = Load(table, (simplify(i * (4 if wide else 2)),))
            return Call(DW_F, [transform(a, rewrite) for a in args], x.dtype)
        return None
    out = map_exprs(body, lambda e: transform(e, rewrite))
    return out, [table if k == kb else b for k, b in enumerate(func.params)], {**layouts, **new_layouts}


def _i32(v):
    return Const(int(v), "int32")


@dataclass(frozen=True)
class DwWide:
    """Depthwise weights as dw_s8w reads them (aot/tir/intrin/arm_dw.py): the constant in `pack`
    (the tap-major PackLayout, or None where its channels are innermost already), then each row
    of `row` consecutive channels (a tap's) widened to little-endian int16, every four channels
    of a row stored 0, 2, 1, 3 (the words of the DSP body's even and odd lanes), each doubled
    (|2w| <= 256: the folded requantisation's doubled sum, dw_s8w). row % 4 == 0."""
    pack: PackLayout = None
    row: int = 4

    def shape(self, shape):
        return (2 * int(np.prod(shape)),)

    def apply(self, w):
        flat = (w if self.pack is None else self.pack.apply(w)).reshape(-1, self.row // 4, 4)
        return (2 * np.ascontiguousarray(flat[..., [0, 2, 1, 3]]).astype(np.int64)).astype("<i2").view(np.int8).reshape(-1)


@dataclass(frozen=True)
class Dw3Wide:
    """3x3 depthwise weights as dw3_s8r reads them (aot/tir/intrin/arm_dw3.py): the constant in
    `pack` (the tap-major PackLayout, or None where its channels are innermost already), read as
    [3, 3, C] (transposed where the ring's rows are the map's columns), then each group of four
    channels' 96 bytes: for channel q and window row r, the little-endian int16 pairs (w0, w1)
    and (w1, w2), doubled. The four channels' assembly reads them as they are (its sums the
    folded form's doubled ones, which it takes only where the form holds: |sum| < 2^30, so the
    doubled sum fits); every other path halves them (SHADD16, exact). |2w| <= 256: an int16."""
    pack: PackLayout = None
    by_columns: bool = False

    def shape(self, shape):
        return (int(np.prod(shape)) // 9 * (WEIGHT_BYTES // 4),)

    def apply(self, w):
        w = np.asarray(w if self.pack is None else self.pack.apply(w)).astype(np.int64).reshape(3, 3, -1)
        if self.by_columns:
            w = w.transpose(1, 0, 2)
        C = w.shape[2]
        out = np.empty((C // 4, 4, 3, 2, 2), np.int64)
        for q in range(4):
            for r in range(3):
                for k in range(2):
                    out[:, q, r, k, 0] = 2 * w[r, k, q::4]
                    out[:, q, r, k, 1] = 2 * w[r, k + 1, q::4]
        assert np.abs(out).max(initial=0) <= 256
        return out.astype("<i2").view(np.int8).reshape(-1)


def _widen(func, body, params, layouts):
    """(body with its dw_s8f calls as dw_s8w, params, layouts) with the weights in DwWide, where
    every call takes a whole row of the packed weights (c == row: its groups of four are the
    layout's), row % 4 == 0, one input channel each (a_k == 1), and nothing else reads the
    weights; None otherwise (dw_s8f's calls stay)."""
    calls = [x for st in walk_stmts(body) for e in own_exprs(st) for x in walk(e) if isinstance(x, Call) and x.fn == DW_F]
    if not calls:
        return None
    w = calls[0].args[2].buffer
    kw = next((k for k, b in enumerate(params) if b is w), None)
    pack = layouts.get(kw)
    if kw is None or kw not in func.attrs.get("constants", ()) or not (pack is None or isinstance(pack, PackLayout)):
        return None
    row = pack.factor if pack is not None else w.shape[-1]
    reads = [x for st in walk_stmts(body) for e in own_exprs(st) for x in walk(e) if isinstance(x, Load) and x.buffer is w]
    if row % 4 or any(c.args[2].buffer is not w or const_value(c.args[6]) != row or const_value(c.args[13]) != 1
                      for c in calls) or len(reads) != len(calls):
        return None
    wide = Buffer(w.name, "int8", (2 * w.size,), w.scope)
    two = _i32(2)

    def rewrite(x):
        if isinstance(x, Call) and x.fn == DW_F:
            args = [transform(a, rewrite) for a in x.args]
            args[2] = Load(wide, (simplify(flat_index(x.args[2]) * two),))
            args[11], args[12] = simplify(args[11] * two), simplify(args[12] * two)
            return Call(DW_W, args, x.dtype)
        return None
    out = map_exprs(body, lambda e: transform(e, rewrite))
    # the table's biases doubled with the weights (where it is fast)
    tables = {k: replace(v, doubled=True) for k, v in layouts.items() if isinstance(v, FoldedBias) and v.wide}
    if len(tables) != 1:
        return None
    return out, [wide if k == kw else b for k, b in enumerate(params)], {**layouts, **tables, kw: DwWide(pack, row)}


def _dw_calls(func, variant):
    """(func with its weights packed tap-major, its body with each pixel's channels a dw_s8 call)
    for a depthwise conv the call takes, else None."""
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
        return packed, rebuild([tensorize(nest, accumulation(nest)[0][-1].var, DW) for nest in computes])
    except ScheduleError:
        return None


def tensorize_depthwise(func, target):
    variant = get_intrin(DW).variant_for(target.mcpu)
    if variant == "plain":
        return None
    got = _dw_calls(func, variant)
    if got is None:
        return None
    packed, body = got
    if variant == "dsp":
        got = _with_table(packed, body, wide=True)
        if got is not None:
            body, params, layouts = got
            fn = DW_F
            # (single-issue cores only: on the M7 the two widenings it saves pair with the loads
            # anyway, and the load it adds does not: VWW est. cycles 8,124,847 -> 8,140,798)
            wide = None if core(target.mcpu).dual_issue else _widen(packed, body, params, layouts)
            if wide is not None:
                (body, params, layouts), fn = wide, DW_W
            return packed.with_body(body, params, attrs=dict(packed.attrs, schedule=f"{fn} (dsp)", layouts=layouts))
    return packed.with_body(body, attrs=dict(packed.attrs, schedule=f"{DW} ({variant})"))


def _pixel_call(body):
    """(the loops, the one dw_s8f call under them) of a body that is only loops around it, else None."""
    loops, s = [], body
    while True:
        if isinstance(s, Seq) and len(s.stmts) == 1:
            s = s.stmts[0]
        elif isinstance(s, For):
            loops.append(s)
            s = s.body
        else:
            break
    if not isinstance(s, Evaluate) or not isinstance(s.call, Call) or s.call.fn != DW_F:
        return None
    return loops, s.call


def _window_of(loops, call, shape_in, shape_out):
    """(stride, pad top, pad left) with which the calls under the loops compute each output pixel
    once, from its 3x3 window clipped to the input (the pointers, window rows and columns
    evaluated at every iteration, the pixel told by the output pointer), else None."""
    import numpy as np
    from ..tir.inplace import eval_index
    _, H, W, C = shape_in
    _, OH, OW, _ = shape_out
    extents = [const_value(lp.extent) for lp in loops]
    if None in extents or any(const_value(lp.min) != 0 for lp in loops) or np.prod(extents) != OH * OW:
        return None
    grid = np.meshgrid(*(np.arange(n) for n in extents), indexing="ij") if loops else []
    env = {id(lp.var): v for lp, v in zip(loops, grid)}
    got = [eval_index(e, env) for e in (flat_index(call.args[0]), flat_index(call.args[1]), flat_index(call.args[2]),
                                         call.args[7], call.args[8])]
    if any(v is None for v in got):
        return None
    o, a, b, kh, kw = (np.broadcast_to(v, tuple(extents)).ravel() for v in got)
    if np.any(o % C) or not np.array_equal(np.sort(o // C), np.arange(OH * OW)):
        return None
    y, x = o // C // OW, o // C % OW
    for stride in (1, 2):
        for pt in range(3 - stride + 1):
            for pl in range(3):
                top, left = y * stride - pt, x * stride - pl
                r0, c0 = np.maximum(0, -top), np.maximum(0, -left)
                r1, c1 = np.minimum(3, H - top), np.minimum(3, W - left)
                if np.array_equal(kh, r1 - r0) and np.array_equal(kw, c1 - c0) \
                        and np.array_equal(a, ((top + r0) * W + left + c0) * C) and np.array_equal(b, (r0 * 3 + c0) * C):
                    return stride, pt, pl
    return None


def depthwise_rows(func, target):
    """The DSP cores' rule for a 3x3 depthwise conv of stride 1 over whole groups of four
    channels, its rows at least MIN_RING_ROW long (the MobileNet and DS-CNN layers), or of
    stride 2, its output rows at least MIN_RING_ROW_S2: dw3_s8r (dw3_s8r2 at stride 2;
    aot/tir/intrin/arm_dw3.py) four channels
    a call, every row, through a ring of widened input rows in a scratch; before
    tensorize_depthwise, whose calls it is made from (their pointers and clipped windows,
    evaluated at every pixel, must be the 3x3 window's). The table is dw_s8f's. Not staged: a
    staged kernel's body is not one call a pixel, and the kernel itself is proven to write over
    its input (ordered_accesses) where the executor asks."""
    variant = get_intrin(DW).variant_for(target.mcpu)
    if variant != "dsp":
        return None
    ins = [b for k, b in enumerate(func.params[:func.num_inputs]) if k not in func.attrs.get("constants", ())]
    out = func.params[func.num_inputs] if len(func.params) == func.num_inputs + 1 else None
    if out is None or len(ins) != 1 or len(ins[0].shape) != 4 or len(out.shape) != 4 \
            or ins[0].shape[3] % 4 or out.shape[3] != ins[0].shape[3] or ins[0].shape[0] != 1:
        return None
    got = _dw_calls(func, variant)
    if got is None:
        return None
    packed, body = got
    got = _with_table(packed, body, per_channel=True)      # dw3_s8r tests each channel's c
    if got is None:
        return None
    body, params, layouts = got
    found = _pixel_call(body)
    if found is None:
        return None
    loops, call = found
    C = ins[0].shape[3]
    a_buf, o_buf, b_buf = call.args[1].buffer, call.args[0].buffer, call.args[2].buffer
    consts = [const_value(call.args[k]) for k in (6, 9, 10, 11, 12, 13, 14, 15, 16, 17)]
    if a_buf is not ins[0] or o_buf is not out or b_buf.size != 9 * C or None in consts \
            or consts[:6] != [C, ins[0].shape[2] * C, C, 3 * C, C, 1]:
        return None
    window = _window_of(loops, call, ins[0].shape, out.shape)
    if window is None:
        return None
    stride, pt, pl = window
    _, H, W, _ = ins[0].shape
    _, OH, OW, _ = out.shape
    # the ring runs along the longer side: its rows are what a channel's setup is spread over
    # (KWS's 25 x 5 maps go by columns)
    shape = [H, W, OH, OW, stride, pt, pl, W * C, C, OW * C, C]
    if H > W:
        shape = [W, H, OW, OH, stride, pl, pt, C, W * C, C, OW * C]
    if shape[3] < (MIN_RING_ROW if stride == 1 else MIN_RING_ROW_S2) or shape[5] + stride > 3:
        return None      # dw_s8f's per-pixel calls are the faster there (or the ring could be overtaken)
    words = ring_words(shape[3], stride)
    if 4 * words * MAX_SCRATCH_SHARE > out.size:
        return None      # the ring would cost more RAM than staging dw_s8f saves (a tall, narrow map)
    kb = next((k for k, b in enumerate(params) if b is b_buf), None)
    pack = layouts.get(kb)
    if kb is None or kb not in packed.attrs.get("constants", ()) or not (pack is None or isinstance(pack, PackLayout)):
        return None
    wide = Buffer(b_buf.name, "int8", (C // 4 * WEIGHT_BYTES,), b_buf.scope)
    params = [wide if k == kb else b for k, b in enumerate(params)]
    layouts = {**layouts, kb: Dw3Wide(pack, H > W)}
    scratch = Buffer(f"{out.name}_ring", "int32", (words,))
    g = Var("g", "int32")
    table, mult, shift = (call.args[k].buffer for k in (3, 4, 5))
    four = g * _i32(4)
    args = [Load(out, (four,)), Load(ins[0], (four,)), Load(wide, (g * _i32(WEIGHT_BYTES),)), Load(table, (g * _i32(8),)),
            Load(mult, (four,)), Load(shift, (four,)), Load(scratch, (_i32(0),)),
            *(_i32(v) for v in shape[:7]), *call.args[14:18], *(_i32(v) for v in shape[7:])]
    fn = DW3 if stride == 1 else DW3_2
    body = For(g, _i32(0), _i32(C // 4), Evaluate(Call(fn, args, "int32")))
    return packed.with_body(body, params + [scratch], attrs=dict(packed.attrs, schedule=f"{fn} (dsp)",
                                                                  layouts=layouts, scratch=scratch.size * 4))
