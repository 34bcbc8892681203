"""Cortex-M rule (a micro-kernel choice of pipelines.py; DSP cores: cortex-m4/m7/m33) for int8 pointwise (1x1) convs:
the pixel loops, the output channels, the input-channel reduction and TFLite's requantisation
become pw_s8 calls (aot/tir/intrin/arm_q15.py): each pixel's input widened once to int16 pairs in
a scratch, the weights widened at compile time (Q15Quads), then two pixels by four channels per
inner loop, where dot_s8x4q (arm_pairs.py) widens the same input word again for every four channels.

One call covers the innermost pixel loop, and the loops around it while the input and the output
move by a whole run of pixels along them (all of a stride-1 conv's pixels: one call). The scratch
(two pixels' inputs, arm_q15.pw_buf_words: a block's for 8 -> 16 channels) is the function's last parameter, recorded in
func.attrs["scratch"] (bytes) for the executor to plan in the workspace. A conv staged to write
over its input (inplace_conv.py: pixel by pixel through a stage buffer, which aot/tir/inplace.py
proved) takes the call in place of its staging, and the scratch in place of the stage buffer:
the call reads each pair of pixels whole into its scratch before writing their outputs, so each
input pixel is still read before the outputs that land on it are written, in the same pixel order.

The requantisation's constants are the call's table (requant_table.py). The bias, multiplier
and shift must be constants read from channel 0 on.

Left to the other rules: Helium and plain cores, convs with a window, a fused epilogue after the
requantisation (a residual add), an offset on the weights, and a call of one pixel (a fully
connected layer of one row, where the pair would be a copy: dot_s8x4q there).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tir.expr import Call, Const, Load, substitute
from ..tir.intrin import get_intrin
from ..tir.intrin.arm import int8_operand, step, flat_index
from ..tir.intrin.arm_q15 import cols8, pw_buf_words
from ..tir.intrin.requant import match_requant
from ..tir.simplify import const_value, simplify
from ..tir.stmt import Buffer, Evaluate, For, Seq, Store
from .nests import accumulation, nests
from .requant_table import FoldedBias, requant_table

PW = "pw_s8"
PW_T = "pw_s8t"      # one multiplier and shift for every channel
FC, FC_T = "fc_s8x4", "fc_s8x4t"     # one pixel (a fully connected layer of one row)


def _i32(v):
    return Const(int(v), "int32")


def _unstaged(nest):
    """(pixel loops, channel loop, reduce loops, accumulator, output store, stage buffer or None):
    the conv as one accumulation whose store writes the output, a staged kernel's compute half
    and copy-back put together (the copy's output index with the compute's value); None when the
    nest is neither shape."""
    found = accumulation(nest)
    if found:
        loops, red, acc = found
        store = loops[-1].body.body.stmts[2]
        return loops[:-1], loops[-1], red, acc, store, None
    outer, x = [], nest
    while isinstance(x, For):
        outer.append(x)
        x = x.body
    if not (outer and isinstance(x, Seq) and len(x.stmts) == 2):
        return None
    found, copy = accumulation(x.stmts[0]), x.stmts[1]
    if not found or len(found[0]) != 1 or not isinstance(copy, For) or not isinstance(copy.body, Store):
        return None
    (oc,), red, acc = found
    back = copy.body
    stage = oc.body.body.stmts[2]
    if not (isinstance(back.value, Load) and back.value.buffer is stage.buffer
            and const_value(simplify(substitute(back.value.indices[0], {id(copy.var): oc.var}) - stage.index)) == 0
            and const_value(copy.extent) == const_value(oc.extent) and const_value(copy.min) == 0):
        return None
    store = Store(back.buffer, substitute(back.index, {id(copy.var): oc.var}), stage.value)
    return outer, oc, red, acc, store, stage.buffer


def _pixel_run(loops, a, out):
    """(loops left around the call, its pixel vars, npix, input step, output step): the innermost
    pixel loops the input and output both move through as one run of equally spaced pixels."""
    run, npix, sa, so = [], 1, None, None
    for lp in reversed(loops):
        n = const_value(lp.extent)
        if n == 1:
            run.insert(0, lp)
            continue
        da, do = step(flat_index(a), lp.var), step(flat_index(out), lp.var)
        if da is None or do is None or da < 0 or do < 0:
            break
        if sa is None:
            sa, so = da, do
        elif da != npix * sa or do != npix * so:
            break
        run.insert(0, lp)
        npix *= n
    return loops[:len(loops) - len(run)], run, npix, sa or 0, so or 0


def pointwise_call(func):
    """func's one nest as pw_s8 calls (the scratch appended, or in place of the stage buffer), or
    None when it is not an int8 pointwise conv of that shape."""
    tops = nests(func.body)
    if len(tops) != 1:
        return None
    got = _unstaged(tops[0])
    if got is None:
        return None
    loops, oc, red, acc, store, stage = got
    if acc.dtype != "int32" or any(const_value(lp.min) != 0 or const_value(lp.extent) is None or lp.kind != "serial"
                                   for lp in loops + [oc]):
        return None
    fixed = {id(r.var): r.min for r in red if const_value(r.extent) == 1}
    long = [r for r in red if const_value(r.extent) != 1]
    if len(long) != 1 or const_value(long[0].extent) is None:
        return None
    ic = long[0]
    body = red[-1].body
    v = body.value
    if not (isinstance(body, Store) and body.buffer is acc and getattr(v, "op", None) == "+"
            and getattr(v.b, "op", None) == "*"):
        return None
    (xa, oa), (xb, ob) = int8_operand(v.b.a), int8_operand(v.b.b)
    if xa is None or xb is None:
        return None
    const_ids = {id(func.params[k]) for k in func.attrs.get("constants", ())}
    if id(xa.buffer) in const_ids or (step(flat_index(xa), oc.var) != 0 and id(xb.buffer) not in const_ids):
        (xa, oa), (xb, ob) = (xb, ob), (xa, oa)       # a: the activation, b: the weights
    one_out = const_value(oc.extent) == 1
    sw = step(flat_index(xb), oc.var) if not one_out else 0
    if ob or not -255 <= oa <= 255 or step(flat_index(xa), oc.var) != 0 or sw is None or sw < 0 \
            or (not sw and not one_out) \
            or any(step(flat_index(ld), ic.var) != 1 for ld in (xa, xb)):
        return None
    rq = match_requant(store.value, acc, oc.var)
    if rq is None:
        return None
    bias, mult, shift, zp, lo, hi = rq.parts()
    if not -128 <= lo <= hi <= 127:
        return None
    out = Load(store.buffer, (store.index,))
    if step(flat_index(out), oc.var) != 1:
        return None
    around, run, npix, sa, so = _pixel_run(loops, xa, out)
    at = {**fixed, **{id(lp.var): lp.min for lp in run}, id(oc.var): oc.min, id(ic.var): ic.min}

    def base(ld):
        return Load(ld.buffer, tuple(simplify(substitute(i, at)) for i in ld.indices))
    cin, cout = const_value(ic.extent), const_value(oc.extent)
    if npix < 2:
        return None if stage is not None else _row_call(func, around, base, out, xa, xb, oc, bias, mult, shift, cin,
                                                         cout, sw, oa, zp, lo, hi)
    # (8 -> 16 channels per channel: pw_s8's channel-major blocks read each channel's constants
    # from the table's tail: aot_pw_s8_cols8)
    # per channel the weights and the table's biases doubled where doubling_holds (pw_s8's
    # assembly then has no shift before each SMMLAR)
    per_channel = not isinstance(mult, int)
    got = requant_table(func, bias, mult, shift, xb, base, oc.var, cout, cin, sw, oa, zp, fold_each=True,
                        cols8=cols8(cin, cout, per_channel), doubles=per_channel)
    if got is None:
        return None
    table, kb, new_layouts = got
    wbase = const_value(simplify(flat_index(base(xb))))
    fold = new_layouts[kb] if per_channel else None
    quads = Q15Quads(cout, cin, sw, wbase, fold=fold, reads=(kb, *fold.reads) if per_channel else ())
    widened = widened_weights(func, xb.buffer, quads) if wbase is not None else None
    if widened is None:
        return None
    kw, quads, wq = widened
    scratch = Buffer(f"{store.buffer.name}_q15", "int32", (pw_buf_words(cin, cout, per_channel),))
    if per_channel:
        fn, scale = PW, [base(mult), base(shift)]
    else:
        fn, scale = PW_T, [_i32(mult), _i32(shift)]
    call = Call(fn, [base(out), base(xa), Load(wq, (_i32(0),)), Load(table, (_i32(0),)), *scale,
                     Load(scratch, (_i32(0),)), _i32(npix), _i32(cin), _i32(cout), _i32(sa), _i32(so),
                     _i32(quads.block_bytes), _i32(oa), _i32(zp),
                     _i32(lo), _i32(hi)], "int32")
    new = Evaluate(call)
    for lp in reversed(around):
        new = lp.with_body(new)
    params = list(func.params)
    params[kb], params[kw] = table, wq
    if stage is not None:
        if params[-1] is not stage:
            return None
        params[-1] = scratch
    else:
        params.append(scratch)
    attrs = dict(func.attrs, schedule=f"{fn} (dsp)", scratch=scratch.size * 4,
                 layouts={**func.attrs.get("layouts", {}), **new_layouts, kw: quads})
    return func.with_body(Seq([new]), params, attrs=attrs)


def widened_weights(func, w, quads):
    """(its parameter index, quads, the buffer in that layout) for weight buffer w of func, a
    constant no other layout holds, to be stored as Q15Quads `quads`; None where it is not."""
    kw = next((k for k, b in enumerate(func.params) if b is w), None)
    if kw not in func.attrs.get("constants", ()) or kw in func.attrs.get("layouts", {}):
        return None
    return kw, quads, Buffer(w.name, "int8", quads.shape(w.shape), w.scope)


@dataclass(frozen=True)
class Q15Quads:
    """int8 weights of `cout` output channels (channel c's `cin` values from element wbase + c *
    sw on) widened at compile time to int16 (little-endian, two int8 elements each) the way
    pw_s8's channel blocks read them (aot/tir/intrin/arm_q15.py), so that the inner loop is
    loads and SMLADs only: the channels in blocks of four (the last padded with zero rows),
    block_bytes (8 * cin) each; in a block, for each 4-byte group of the input channels, the four
    channels' words of its values 0 and 2 (the pairs the input's scratch has in its low word),
    then the four of its values 1 and 3; then the cin % 4 leftovers, the four channels' int16
    a value. With fold (pw_s8's table layout) each weight doubled where fold.doubling_holds
    (|2w| <= 256), as that table doubles its biases."""
    cout: int
    cin: int
    sw: int
    wbase: int = 0
    fold: FoldedBias = None       # (doubles) each weight doubled where fold.doubling_holds, as that table
    reads: tuple = ()             # doubles its biases: reads the bias, then fold's reads (its roles)

    @property
    def block_bytes(self):
        return 8 * self.cin

    def shape(self, shape):
        return (self.block_bytes * ((self.cout + 3) // 4),)

    def apply(self, w, *arrays):
        flat = w.reshape(-1).astype(np.int64)
        rows = flat[self.wbase + self.sw * np.arange(self.cout)[:, None] + np.arange(self.cin)[None, :]]
        if self.fold is not None and self.fold.doubling_holds(dict(zip(self.fold.roles, arrays[1:]), bias=arrays[0])):
            rows = 2 * rows
        nb, groups = (self.cout + 3) // 4, self.cin // 4
        full = np.zeros((4 * nb, self.cin), np.int64)
        full[:self.cout] = rows
        blocks = full.reshape(nb, 4, self.cin)
        head = blocks[:, :, :4 * groups].reshape(nb, 4, groups, 4)        # [block, channel, group, value]
        words = np.stack([head[..., [0, 2]], head[..., [1, 3]]], axis=1)   # [block, half, channel, group, pair]
        head = words.transpose(0, 3, 1, 2, 4).reshape(nb, -1)             # [block, group, half, channel, pair]
        tail = blocks[:, :, 4 * groups:].transpose(0, 2, 1).reshape(nb, -1)  # [block, leftover, channel]
        out = np.concatenate([head, tail], axis=1).astype("<i2")
        return out.view(np.int8).reshape(-1)


@dataclass(frozen=True)
class RowQuads:
    """An int8 weight matrix of `rows` rows of `cols` (row-major, any shape of that many elements;
    both multiples of 4) as fc_s8x4 reads it: for each block of four rows, each 4-byte group of
    the columns the four rows' words one after another."""
    rows: int
    cols: int

    def shape(self, shape):
        return (self.rows * self.cols,)

    def apply(self, w):
        blocks = w.reshape(self.rows // 4, 4, self.cols // 4, 4).transpose(0, 2, 1, 3)
        return np.ascontiguousarray(blocks).reshape(-1)


def _row_call(func, around, base, out, xa, xb, oc, bias, mult, shift, cin, cout, sw, off, zp, lo, hi):
    """func's nest as fc_s8x4(t) calls: one pixel (a fully connected layer of one row) whose
    input and output channels are multiples of 4, over constant weights read as whole rows
    (stored in RowQuads), the offset folded into the table; None otherwise."""
    index, consts, layouts = ({id(b): k for k, b in enumerate(func.params)}, func.attrs.get("constants", ()),
                              func.attrs.get("layouts", {}))
    kw = index.get(id(xb.buffer))
    if cin % 4 or cout % 4 or sw != cin or kw not in consts or kw in layouts or xb.buffer.size != cout * cin \
            or const_value(simplify(flat_index(base(xb)))) != 0:
        return None
    got = requant_table(func, bias, mult, shift, xb, base, oc.var, cout, cin, sw, off, zp, fold_offset=True,
                        fold_each=True)
    if got is None:
        return None
    table, kb, new_layouts = got
    quads = RowQuads(cout, cin)
    wq = Buffer(xb.buffer.name, "int8", quads.shape(xb.buffer.shape), xb.buffer.scope)
    per_channel = not isinstance(mult, int)
    fn, scale = (FC, [base(mult), base(shift)]) if per_channel else (FC_T, [_i32(mult), _i32(shift)])
    call = Call(fn, [base(out), base(xa), Load(wq, (_i32(0),)), Load(table, (_i32(0),)), *scale, _i32(cin),
                     _i32(cout), _i32(zp), _i32(lo), _i32(hi)], "int32")
    new = Evaluate(call)
    for lp in reversed(around):
        new = lp.with_body(new)
    params = [table if k == kb else wq if k == kw else b for k, b in enumerate(func.params)]
    attrs = dict(func.attrs, schedule=f"{fn} (dsp)", layouts={**layouts, **new_layouts, kw: quads})
    return func.with_body(Seq([new]), params, attrs=attrs)


def tensorize_pointwise(func, target):
    if get_intrin(PW).variant_for(target.mcpu) != "dsp":
        return None
    return pointwise_call(func)
