"""Cortex-M rule (first micro-kernel choice) for an int8 convolution whose window rows are short: the
first layer of a model, whose input has one or three channels (KWS's 10x4 window on one channel,
VWW's and ResNet-8's 3x3 on three). A window row there is kw * cin bytes, shorter than the
vectors and words the dot micro-kernels read, so dot_s8_rows would make one short run per row
(or none at all). Instead each output pixel's window is gathered into a small local array
(kh * kw * cin elements, in the OHWI weights' order; a row copied as one run where the input
holds it as one), the taps in the padding set to what contributes nothing, so that every window
is whole and the weights are read as one run per channel:

- DSP (cortex-m4/m7/m33), 3x3 windows over three channels (nine-tap rows, VWW's) at a stride
  with word-aligned windows, padded at the bottom and right only, per-channel requantisation,
  int8's range: a ring of three input rows widened once each (ring_pairs: widen_q15w), then a
  row's pixel pairs one gconv_ring call over the ring in place (stride 2, whole blocks of four
  channels, int8's whole range) or two pixels a time ring_q15x3's copy of the windows' words
  into pw_s8's scratch and pw_s8x2 (the RingQuads weights);
- DSP otherwise, per-channel requantisation, int8's range: two pixels a pw_s8x2 call
  (scratch_pairs, gathered): each pixel's window widened into pw_s8's scratch with the input
  offset added (widen_q15x, a call a 4-byte group: straight code), each window row's whole
  groups read where they lie in the input when no tap is clipped, the rows' leftover taps
  (9-byte rows: one each) gathered into a small array and widened after them; a clipped window
  gathered as int8 first (the padding the zero point). The weights are widened at compile time
  in that tap order, padded to whole groups (PaddedQuads). Otherwise two pixels a gconv_q15
  call (aot/tir/intrin/arm_gather.py): int16 windows (widen_q15), the Q15Rows weights, every
  channel requantised inside from the table (requant_table.py);
- Helium, rows of MVE_PAIRS_BYTES or more: two pixels a gconv_s8 call over int8 windows (the
  padding the input's zero point, rows copied by copy_s8), the offset folded into the bias
  (aot/schedules/arm_fold.py's OffsetFold: a gathered window is never clipped), four channels a
  block requantised as one vector;
- otherwise (shorter Helium rows, per-tensor quantisation, a fused epilogue): one pixel at a time,
  its channels as dot_s8x4q calls (four requantised per call, then dot_s8x2 pairs and a single:
  aot/schedules/arm_pairs.py) under kernels of their own, the offset folded on Helium.

The arrays are C locals of at most MAX_WINDOW elements (the same storage the accumulators use),
so the workspace does not grow; pw_s8x2's scratch and the ring are workspace the executor plans.
Recorded as func.attrs["schedule"] = "<kernel> gather (<variant>)".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tir.expr import Bin, Call, Cast, Const, Load, Var, substitute, transform, walk
from ..tir.intrin import get_intrin
from ..tir.intrin.arm import int8_operand, step, flat_index
from ..tir.intrin.arm_gather import GATHERED
from ..tir.intrin.arm_q15 import buf_words
from ..tir.intrin.requant import find_requant
from .arm_q15 import Q15Quads, widened_weights
from ..tir.schedule import ScheduleError, tensorize
from ..tir.simplify import const_value, simplify
from ..tir.stmt import (Allocate, Buffer, Evaluate, For, IfThenElse, Seq, Store, map_exprs, own_exprs, uses_buffer,
                        walk_stmts)
from .arm_fold import OffsetFold, fold_offset
from .arm_pairs import pair_outputs
from .requant_table import requant_table
from .nests import accumulation, nests as _nests, staged_compute

DOT = "dot_s8"
WIDEN = "widen_q15"
WIDEN_X = "widen_q15x"      # a row into pw_s8's scratch layout
PAIR = "pw_s8x2"
COPY = "copy_s8"
ROW_BYTES = 16      # a window row at least this long is the row micro-kernels' (one vector, four words)
MVE_PAIRS_BYTES = 8  # Helium: rows this long or longer (up to ROW_BYTES) go two pixels a gconv_s8 call
                     # (fewer instructions than dot_s8_rows on VWW's and ResNet-8's 9-byte rows); shorter
                     # ones one pixel a dot_s8x4q call (fewer than gconv_s8 or dw_s8 on KWS's 4-byte rows)
MIN_WINDOW = 8      # a shorter window is not worth a copy and a call per channel group
MAX_WINDOW = 512    # the local array's bound: a C stack array, not planned workspace
MAX_SCRATCH_BYTES = 4096   # pw_s8x2's two windows, planned in the workspace: kh * kw * cin up to 1024


def _uses(e, var):
    return any(x is var for x in walk(e))


def _operands(func, red):
    """(input load, its offset, weight load) of the product acc = acc + x * w, the weight a
    4-D int8 constant [O, KH, KW, CI] read with one index per dimension; Nones otherwise."""
    s = red[-1].body
    none = None, None, None
    if not (isinstance(s, Store) and isinstance(s.value, Bin) and s.value.op == "+"
            and isinstance(s.value.b, Bin) and s.value.b.op == "*"):
        return none
    (xa, oa), (xb, ob) = int8_operand(s.value.b.a), int8_operand(s.value.b.b)
    if xa is None or xb is None:
        return none
    consts = {id(func.params[k]) for k in func.attrs.get("constants", ()) if k < len(func.params)}
    if id(xa.buffer) in consts and id(xb.buffer) not in consts:
        (xa, oa), (xb, ob) = (xb, ob), (xa, oa)
    if id(xb.buffer) not in consts or id(xa.buffer) in consts or ob:
        return none
    if len(xb.buffer.shape) != 4 or len(xb.indices) != 4:
        return none
    return xa, oa, xb


def _taps(red, body):
    for r in reversed(red):
        body = r.with_body(body)
    return body


def _row_runs(red, w, x, win, at, run=None):
    """The copy as one run per window row: where the loops over a row's taps and channels are
    the weights' last two indices, full-range channels, and the input reads them as one
    consecutive run (NHWC), the row's clipped taps are one run of taps x channels elements:
    run(first element of win, first input element (a load), length) copies it (default: a loop
    of int8 stores); None otherwise."""
    by_dim, fixed = {}, {}
    for r in red:
        dims = [d for d in (1, 2, 3) if _uses(w.indices[d], r.var)]
        if not dims and const_value(r.extent) == 1:
            fixed[id(r.var)] = r.min            # a loop of one iteration the weights do not read
            continue
        if len(dims) != 1 or w.indices[dims[0]] is not r.var or dims[0] in by_dim:
            return None
        by_dim[dims[0]] = r
    CI = w.buffer.shape[3]
    for d, name in ((1, "kh_one"), (2, "kw_one"), (3, "k_one")):     # a dimension of one: no loop over it
        if d not in by_dim and w.buffer.shape[d] == 1 and const_value(w.indices[d]) == 0:
            by_dim[d] = For(Var(name, "int32"), 0, 1, None)
    if len(by_dim) != 3:
        return None
    rh, rw, rc = by_dim[1], by_dim[2], by_dim[3]
    if const_value(rc.min) != 0 or const_value(rc.extent) != CI or \
            any(_uses(e, v) for e in (rh.min, rh.extent) for v in (rw.var, rc.var)) or \
            any(_uses(e, v) for e in (rw.min, rw.extent) for v in (rh.var, rc.var)):
        return None
    flat = flat_index(x)
    if (CI > 1 and step(flat, rc.var) != 1) or (const_value(rw.extent) != 1 and step(flat, rw.var) != CI):
        return None
    first = {**fixed, id(rw.var): rw.min, id(rc.var): Const(0, "int32")}
    src, dst, n = simplify(substitute(flat, first)), simplify(substitute(at, first)), simplify(rw.extent * CI)
    if run is None:
        j = Var("k_run", "int32")
        body = For(j, 0, n, Store(win, simplify(dst + j), Load(x.buffer, (simplify(src + j),))))
    else:
        body = run(Load(win, (dst,)), Load(x.buffer, (src,)), n)
    return rh.with_body(body)


def _copy_rows(dst, src, length):
    """A window row's run as bytes (copy_s8: a predicated vector on Helium)."""
    one, zero = Const(1, "int32"), Const(0, "int32")
    return Evaluate(Call(COPY, [dst, src, one, length, zero, zero], "int32"))      # one row


def _uses_load(ld, var):
    return any(_uses(i, var) for i in ld.indices)


@dataclass(frozen=True)
class Q15Rows:
    """OHWI int8 weights as each output channel's row of int16 values (little-endian, two int8
    elements each), padded with zeros to `n` values: what gconv_q15 multiplies without widening."""
    n: int

    def shape(self, shape):
        return (shape[0], 2 * self.n)

    def apply(self, w: np.ndarray) -> np.ndarray:
        rows = w.reshape(w.shape[0], -1).astype("<i2")
        out = np.zeros((w.shape[0], self.n), "<i2")
        out[:, :rows.shape[1]] = rows
        return out.view(np.int8).reshape(w.shape[0], 2 * self.n)


def _fresh_window(red, x, w, sub):
    """One pixel's window loops with variables of their own (the pixel loop's variable replaced
    as `sub` says): (loops, the input and weight loads in them, the substitution, the window's
    taps: the product of their extents)."""
    m = dict(sub)
    loops = []
    for r in red:
        v = Var(r.var.name, r.var.dtype)
        loops.append(For(v, substitute(r.min, m), substitute(r.extent, m), None))
        m[id(r.var)] = v
    taps = loops[0].extent
    for r in loops[1:]:
        taps = taps * r.extent
    return (loops, Load(x.buffer, tuple(substitute(i, m) for i in x.indices)),
            Load(w.buffer, tuple(substitute(i, m) for i in w.indices)), m, simplify(taps))


def _fresh_copy(red, x, w, at, sub, win, off, n):
    """The copy of one pixel's window (the pixel loop's variable replaced as `sub` says) into
    win, its loops with variables of their own: as int16 with the input offset added (the
    padding 0), or (an int8 win) as the bytes themselves (the padding the zero point)."""
    q15 = win.dtype == "int16"
    loops, x2, w2, m, taps = _fresh_window(red, x, w, sub)
    at2 = simplify(substitute(at, m))

    def widen(ld):
        return Cast("int16", Bin("+", Cast("int32", ld), Const(off, "int32"))) if q15 else ld

    def run(dst, src, length):           # a row's run widened four bytes a step (widen_q15)
        return Evaluate(Call(WIDEN, [dst, src, length, Const(off, "int32")], "int32"))
    copy = _row_runs(loops, w2, x2, win, at2, run if q15 else _copy_rows) or _taps(loops, Store(win, at2, widen(x2)))
    parts = [copy]
    row = int(np.prod(w.buffer.shape[1:]))
    if const_value(taps) != row:
        k = Var("k_pad", "int32")
        fill = For(k, 0, row, Store(win, k, Const(0 if q15 else -off, win.dtype)))
        if const_value(taps) is None:
            fill = IfThenElse(Bin("!=", taps, Const(row, taps.dtype)), fill)
        parts.insert(0, fill)
    if n > row:
        parts.append(Store(win, Const(row, "int32"), Const(0, "int16")))
    return Seq(parts)


def _over_pairs(loops, pixel_pair):
    """The nest over the innermost pixel loop (loops[-2], from 0, constant extent E) two pixels
    at a time: pixel_pair(p0, p1) for each pair, an odd last pixel as pixel_pair(last, last),
    inside the outer pixel loops; None where pixel_pair is."""
    pw = loops[-2]
    E = const_value(pw.extent)
    v = Var(pw.var.name + "_pair", pw.var.dtype)
    body = [pixel_pair(v * 2, v * 2 + 1)]
    if E % 2:
        last = Const(E - 1, pw.var.dtype)
        body.append(pixel_pair(last, last))
    if None in body:
        return None
    s = Seq([For(v, 0, E // 2, body[0])] + body[1:])
    for lp in reversed(loops[:-2]):
        s = lp.with_body(s)
    return s


def _pixel_pairs(func, loops, red, acc, x, off, w, store, variant):
    """The nest as calls of two pixels along the innermost pixel loop at a time (an odd last
    one twice), every channel requantised inside: on the DSP gconv_q15, each pixel's window
    gathered as int16 with the offset added, the weights widened at compile time (Q15Rows); on
    Helium gconv_s8, int8 windows (the padding the zero point) and the offset folded into the
    bias (OffsetFold). None where the epilogue is not exactly a per-channel requantisation
    stored channel after channel, or there is no pixel loop."""
    oc = loops[-1]
    rq = find_requant(store.value, acc, oc.var)
    if rq is None or rq.node.key() != store.value.key() or not rq.per_channel or len(loops) < 2:
        return None
    if step(store.index, oc.var) != 1:
        return None
    pw = loops[-2]
    E = const_value(pw.extent)
    if E is None or const_value(pw.min) != 0 or E < 2:
        return None
    params = {id(b): k for k, b in enumerate(func.params)}
    kw = params.get(id(w.buffer))
    if kw is None or kw in func.attrs.get("layouts", {}):
        return None
    O, KH, KW, CI = w.buffer.shape
    row = KH * KW * CI
    bias, mult, shift, zp, lo, hi = rq.parts()
    q15 = variant == "dsp"
    if q15:
        n = row + row % 2
        layouts = {kw: Q15Rows(n)}
        wq = Buffer(w.buffer.name, "int8", layouts[kw].shape(w.buffer.shape), w.buffer.scope)
        wfirst = Load(wq, (Const(0, "int32"), Const(0, "int32")))
    else:
        n, wq = row, w.buffer
        kb = params.get(id(bias.buffer))
        if kb is None or kb not in func.attrs.get("constants", ()) or kb in func.attrs.get("layouts", {}) \
                or kw not in func.attrs.get("constants", ()) or len(bias.buffer.shape) != 1:
            return None
        layouts = {kb: OffsetFold((kw,), tuple(w.buffer.shape), off, False)} if off else {}
        wfirst = Load(wq, tuple(Const(0, "int32") for _ in w.buffer.shape))
    first = {id(oc.var): Const(0, oc.var.dtype)}

    def base(ld):
        return Load(ld.buffer, tuple(simplify(substitute(i, first)) for i in ld.indices))
    table = None
    if q15:          # the requantisation from the table (its bound the window's taps at int8's extremes)
        got = requant_table(func, bias, mult, shift, None, base, oc.var, O, row, row, off, zp)
        if got is None:
            return None
        table, kb, folded = got
        layouts.update(folded)
    at = simplify(w.indices[1] * (KW * CI) + w.indices[2] * CI + w.indices[3])
    wins = [Buffer(acc.name + f"_win{j}", "int16" if q15 else "int8", (n,), "local") for j in range(2)]

    def pixel_pair(p0, p1):
        subs = [{id(pw.var): p} for p in (p0, p1)]
        outs = [Load(store.buffer, (simplify(substitute(substitute(store.index, first), sb)),)) for sb in subs]
        same = p1 is p0
        copies = [_fresh_copy(red, x, w, at, subs[0], wins[0], off, n)]
        if not same:
            copies.append(_fresh_copy(red, x, w, at, subs[1], wins[1], off, n))
        a1 = Load(wins[0] if same else wins[1], (Const(0, "int32"),))
        scale = [substitute(base(ld), subs[0]) for ld in (bias, mult, shift)]
        if table is not None:
            scale[0] = Load(table, (Const(0, "int32"),))
        call = Call("gconv_q15" if q15 else "gconv_s8", [Load(wins[0], (Const(0, "int32"),)), a1, wfirst,
                                  Const(n, "int32"), Const(O, "int32"), *scale, Const(zp, "int32"), Const(lo, "int32"),
                                  Const(hi, "int32"), outs[0], outs[1] if not same else outs[0]], "int32")
        body = Seq(copies + [Evaluate(call)])
        return Allocate(wins[0], Allocate(wins[1], body) if not same else body)
    s = _over_pairs(loops, pixel_pair)
    new_params = [wq if k == kw else table if table is not None and k == kb else b for k, b in enumerate(func.params)]
    return s, new_params, layouts


def _scratch_copy(red, x, w, at, sub, scratch, p, off, K):
    """Pixel p's window (the pixel loop's variable replaced as `sub` says) into its slot of
    pw_s8's scratch: each window row's run by widen_q15x at word at + 2p (whole 4-byte groups:
    at is a multiple of 4), the slot zeroed first where the window is clipped (the padding
    contributes nothing: x + off is 0 there). None where the rows are not runs."""
    loops, x2, w2, m, taps = _fresh_window(red, x, w, sub)

    def run(dst, src, length):
        return Evaluate(Call(WIDEN_X, [Load(scratch, (simplify(dst.indices[0] + 2 * p),)), src, length,
                                       Const(off, "int32")], "int32"))
    copy = _row_runs(loops, w2, x2, scratch, simplify(substitute(at, m)), run)
    if copy is None:
        return None
    if const_value(taps) == K:
        return copy
    g = Var("g_pad", "int32")
    zero = Const(0, "int32")
    fill = For(g, 0, K // 4, Seq([Store(scratch, simplify(g * 4 + 2 * p), zero),
                                   Store(scratch, simplify(g * 4 + 2 * p + 1), zero)]))
    if const_value(taps) is None:
        fill = IfThenElse(Bin("!=", taps, Const(K, taps.dtype)), fill)
    return Seq([fill, copy])


def _window_conv(func, nest):
    """(loops, reduce loops, accumulator, input load, its offset, weight load, the output store)
    of an int8 conv nest whose weights are a 4-D constant [O, KH, KW, CI] read as row oc of the
    output channel loop (the innermost, whole), the window not moving with the pixels nor the
    input with the channels; None otherwise."""
    found = accumulation(nest)
    if not found or found[2].dtype != "int32" or not found[1]:
        return None
    loops, red, acc = found
    x, off, w = _operands(func, red)
    if x is None or not (-128 <= -off <= 127):
        return None
    oc = loops[-1]
    if w.indices[0] is not oc.var or const_value(oc.min) != 0 or const_value(oc.extent) != w.buffer.shape[0]:
        return None
    pixels = [lp.var for lp in loops]
    if any(_uses(i, v) for i in w.indices[1:] for v in pixels) or any(_uses(i, oc.var) for i in x.indices) \
            or any(_uses(e, oc.var) for r in red for e in (r.min, r.extent)):
        return None
    x_ = nest
    while isinstance(x_, For):
        x_ = x_.body
    return loops, red, acc, x, off, w, x_.body.stmts[2]


@dataclass(frozen=True)
class PaddedQuads:
    """OHWI int8 weights whose window rows (kh of them, row values a channel) are not whole 4-byte
    groups: each channel's taps in _widened_rows' order (order()), padded with zeros to cin
    values (a multiple of 4), then laid out as Q15Quads(cout, cin, cin): what pw_s8x2 reads over
    a first layer's windows (scratch_pairs, gathered)."""
    cout: int
    row: int
    cin: int
    kh: int = 1

    @property
    def block_bytes(self):
        return 8 * self.cin

    def order(self):
        """The window's taps in the order _widened_rows widens them: each of the kh rows' whole
        4-byte groups, then every row's leftover taps."""
        R = self.row // self.kh
        G = R // 4 * 4
        head = [r * R + j for r in range(self.kh) for j in range(G)]
        return head + [r * R + j for r in range(self.kh) for j in range(G, R)]

    def shape(self, shape):
        return Q15Quads(self.cout, self.cin, self.cin).shape(shape)

    def apply(self, w: np.ndarray) -> np.ndarray:
        rows = w.reshape(self.cout, -1)
        out = np.zeros((self.cout, self.cin), rows.dtype)
        out[:, :self.row] = rows[:, self.order()]
        return Q15Quads(self.cout, self.cin, self.cin).apply(out)


def _widened_rows(src, stride, KH, R, scratch, p, off, tail):
    """Pixel p's window of KH rows of R int8 taps (row r's first at element src + r * stride of
    src's buffer: a Load) widened into its slot of pw_s8's scratch in PaddedQuads' order: each
    row's whole 4-byte groups read where they lie (widen_q15x, a call a group: straight code),
    then the rows' R % 4 leftover taps gathered into tail (the zero point after them) and
    widened after them."""
    G, L = R // 4, R % 4
    base = flat_index(src)

    def widen(at, ld):
        return Evaluate(Call(WIDEN_X, [Load(scratch, (Const(2 * p + 4 * at, "int32"),)), ld, Const(4, "int32"),
                                       Const(off, "int32")], "int32"))
    parts = [widen(r * G + g, Load(src.buffer, (simplify(base + (r * stride + 4 * g)),)))
             for r in range(KH) for g in range(G)]
    if L:
        parts += [Store(tail, Const(r * L + t, "int32"), Load(src.buffer, (simplify(base + (r * stride + 4 * G + t)),)))
                  for r in range(KH) for t in range(L)]
        n = (KH * L + 3) // 4 * 4
        parts += [Store(tail, Const(t, "int32"), Const(-off, "int8")) for t in range(KH * L, n)]
        parts += [widen(KH * G + g, Load(tail, (Const(4 * g, "int32"),))) for g in range(n // 4)]
    return parts


def _gathered_copy(red, x, w, at, sub, scratch, p, off, K, win, tail):
    """Pixel p's window (rows shorter than whole 4-byte groups: a first layer's) widened into its
    slot of pw_s8's scratch (_widened_rows): a whole window (no tap clipped: every loop over its
    whole weight dimension, from 0) straight from the input where its rows are runs, otherwise
    gathered as int8 into win first (the padding the zero point)."""
    O, KH, KW, CI = w.buffer.shape
    R = KW * CI
    row = KH * R
    natural = Seq([_fresh_copy(red, x, w, at, sub, win, off, row),
                   *_widened_rows(Load(win, (Const(0, "int32"),)), R, KH, R, scratch, p, off, tail)])
    dims = [[d for d in (1, 2, 3) if w.indices[d] is r.var] for r in red]
    full = [For(r.var, Const(0, r.var.dtype), Const(w.buffer.shape[d[0]], r.var.dtype), r.body, r.kind) if d else r
            for r, d in zip(red, dims)]
    loops, x2, _, _, _ = _fresh_window(full, x, w, sub)
    flat = flat_index(x2)
    var = {d[0]: lp.var for lp, d in zip(loops, dims) if d}
    at0 = {id(lp.var): lp.min for lp in loops}
    runs = (CI == 1 or (3 in var and step(flat, var[3]) == 1)) and (KW == 1 or (2 in var and step(flat, var[2]) == CI))
    stride = step(flat, var[1]) if 1 in var else None
    if not runs or stride is None:
        return natural
    direct = Seq(_widened_rows(Load(x.buffer, (simplify(substitute(flat, at0)),)), stride, KH, R, scratch, p, off, tail))
    taps = _fresh_window(red, x, w, sub)[4]
    if const_value(taps) == row:
        return direct
    return IfThenElse(Bin("==", taps, Const(row, taps.dtype)), direct, natural)


def scratch_pairs(func, nest, gathered=False):
    """(nest as pw_s8x2 calls, func's params with the table and the scratch, the layouts, the
    scratch) for an int8 conv with a window whose rows are whole 4-byte groups (cin % 4 == 0),
    per-channel requantised and stored channel after channel: two pixels along the innermost
    pixel loop at a time (an odd last one in both slots), each window widened into pw_s8's
    scratch (widen_q15x a row), then pw_s8's channel blocks over it; None otherwise."""
    got = _window_conv(func, nest)
    if got is None or len(got[0]) < 2:
        return None
    loops, red, acc, x, off, w, store = got
    O, KH, KW, CI = w.buffer.shape
    row_k = KH * KW * CI
    oc, pw = loops[-1], loops[-2]
    if gathered != bool(CI % 4):
        return None
    K = (row_k + 3) // 4 * 4       # (gathered: the window's taps padded to whole groups)
    if 4 * buf_words(K) > MAX_SCRATCH_BYTES or (gathered and not MIN_WINDOW <= row_k <= MAX_WINDOW):
        return None
    rq = find_requant(store.value, acc, oc.var)
    if rq is None or not rq.per_channel or step(store.index, oc.var) != 1:
        return None
    # an epilogue after the requantisation (a residual add) runs on the call's int8 outputs,
    # which it writes to a local pair of rows first
    fused = rq.node.key() != store.value.key()
    if KH * KW == 1 and not fused:
        return None           # a plain pointwise conv: pw_s8 widens its pixels without a gather
    E = const_value(pw.extent)
    if E is None or const_value(pw.min) != 0 or E < 2:
        return None
    bias, mult, shift, zp, lo, hi = rq.parts()
    if not -128 <= lo <= hi <= 127:
        return None
    first = {id(oc.var): Const(0, oc.var.dtype)}

    def base(ld):
        return Load(ld.buffer, tuple(simplify(substitute(i, first)) for i in ld.indices))
    zero = Const(0, "int32")
    row = Load(w.buffer, (oc.var, zero, zero, zero))
    got = requant_table(func, bias, mult, shift, row, base, oc.var, O, row_k, row_k, off, zp, fold_each=True)
    if got is None:
        return None
    table, kb, layouts = got
    widened = widened_weights(func, w.buffer, PaddedQuads(O, row_k, K, KH) if gathered else Q15Quads(O, K, K))
    if widened is None:
        return None
    kw, quads, wq = widened
    layouts = {**layouts, kw: quads}
    scratch = Buffer(f"{store.buffer.name}_q15", "int32", (buf_words(K),))
    at = simplify(w.indices[1] * (KW * CI) + w.indices[2] * CI + w.indices[3])

    rows = Buffer(acc.name + "_rows", "int8", (2 * O,), "local") if fused else None
    win = Buffer(acc.name + "_win", "int8", (K,), "local") if gathered else None
    tail = Buffer(acc.name + "_tail", "int8", ((KH * (KW * CI % 4) + 3) // 4 * 4 or 4,), "local") if gathered else None

    def epilogue(p, sb):
        """Pixel p's stores, the requantised value read from its row of `rows`."""
        c = Var(oc.var.name, oc.var.dtype)
        at_c = {**sb, id(oc.var): c}

        def from_rows(e):
            return Load(rows, (simplify(c + p * O),)) if e is rq.node or e.key() == rq.node.key() else None
        value = substitute(transform(store.value, from_rows), at_c)
        return For(c, 0, O, Store(store.buffer, simplify(substitute(store.index, at_c)), value))

    def pixel_pair(p0, p1):
        subs = [{id(pw.var): q} for q in (p0, p1)]
        if gathered:
            copies = [_gathered_copy(red, x, w, at, sb, scratch, p, off, K, win, tail) for p, sb in enumerate(subs)]
        else:
            copies = [_scratch_copy(red, x, w, at, sb, scratch, p, off, K) for p, sb in enumerate(subs)]
        if None in copies:
            return None
        if fused:
            outs = [Load(rows, (Const(p * O, "int32"),)) for p in range(2)]
        else:
            outs = [Load(store.buffer, (simplify(substitute(substitute(store.index, first), sb)),)) for sb in subs]
        call = Call(PAIR, [outs[0], outs[1], Load(scratch, (zero,)), Load(wq, (zero,)), Load(table, (zero,)),
                           base(mult), base(shift), Const(K, "int32"), Const(O, "int32"), Const(quads.block_bytes, "int32"),
                           Const(zp, "int32"), Const(lo, "int32"), Const(hi, "int32")], "int32")
        if not fused:
            body = Seq(copies + [Evaluate(call)])
        else:
            body = Allocate(rows, Seq(copies + [Evaluate(call)] + [epilogue(p, sb) for p, sb in enumerate(subs)]))
        for buf in (tail, win) if gathered else ():      # (the ones the copies use: a whole window needs no win)
            if uses_buffer(body, buf):
                body = Allocate(buf, body)
        return body
    s = _over_pairs(loops, pixel_pair)
    if s is None:
        return None
    params = [table if k == kb else wq if k == kw else b for k, b in enumerate(func.params)] + [scratch]
    return s, params, layouts, scratch


RING = "ring_q15x3"
RING_MAC = "gconv_ring"
WIDEN_W = "widen_q15w"
MAX_RING_BYTES = 8192       # ring_pairs' scratch: pw_s8's two windows and the ring's three rows (VWW's 1,864)
RING_KH, RING_R = 3, 9      # ring_q15x3's windows: three rows of nine taps (VWW's 3x3 over RGB)


@dataclass(frozen=True)
class RingQuads:
    """OHWI int8 weights of a window of three rows of nine taps as pw_s8x2 reads them over
    ring_q15x3's scratch: seven groups, Q15Quads(cout, 28, 28) over each channel's taps in the
    order the groups' words hold them (group values 0 and 2 the low word's halves, 1 and 3 the
    high word's): row r's taps 4i, 4i + 2, 4i + 1, 4i + 3 for its two groups i, then the taps 8
    of rows 0, 2, 1 and a zero (the half of row 2's word that is the next column's)."""
    cout: int

    @property
    def block_bytes(self):
        return 8 * 28

    def order(self):
        R = RING_R
        head = [r * R + 4 * i + j for r in range(RING_KH) for i in range(2) for j in (0, 2, 1, 3)]
        return head + [8, 2 * R + 8, R + 8, None]

    def shape(self, shape):
        return Q15Quads(self.cout, 28, 28).shape(shape)

    def apply(self, w: np.ndarray) -> np.ndarray:
        rows = w.reshape(self.cout, -1)
        out = np.zeros((self.cout, 28), rows.dtype)
        for k, t in enumerate(self.order()):
            if t is not None:
                out[:, k] = rows[:, t]
        return Q15Quads(self.cout, 28, 28).apply(out)


def _clips_at_end(r, var, extent, K, N, S):
    """Whether window loop r (over K taps) runs from 0 over min(K, N - S * v) taps for each value v
    of the pixel loop var (extent values): a window clipped at the far border only, the taps past
    the input's N rows (columns) the padding."""
    for v in range(extent):
        at = {id(var): Const(v, var.dtype)}
        lo, n = (const_value(simplify(substitute(e, at))) for e in (r.min, r.extent))
        if lo != 0 or n != min(K, N - S * v):
            return False
    return True


def ring_pairs(func, nest):
    """(nest over a ring of widened input rows, func's params with the table and the scratch, the
    layouts, the scratch) for a first layer of 3x3 windows of nine taps a row (VWW's 3x3 over
    RGB), stride 1 or more down, an even number of taps across (word-aligned windows), padded at
    the bottom and right only, per-channel requantised, int8's range, stored channel after
    channel; None otherwise. Each input row is widened once (widen_q15w: int16 with the input
    offset added, natural order) into a ring of three rows of the scratch (a row past the input
    all zeros: the padding contributes nothing, x + off being 0 there; so do the columns past
    it, the rows' zeroed ends); then, at stride 2 over three channels with whole blocks of four
    output channels and int8's whole range, a row's pixel pairs are one gconv_ring call over the
    ring in place (no widening or copy per pixel: a window's rows, and the column a pair shares,
    are words already); otherwise (and for an odd last pixel) two pixels at a time ring_q15x3
    copies the windows' words into pw_s8's scratch layout and pw_s8x2 runs over them. Both read
    the weights as RingQuads."""
    got = _window_conv(func, nest)
    if got is None or len(got[0]) < 3:
        return None
    loops, red, acc, x, off, w, store = got
    O, KH, KW, CI = w.buffer.shape
    outer, (oh, pw, oc) = loops[:-3], loops[-3:]
    if any(const_value(lp.min) != 0 or const_value(lp.extent) != 1 for lp in outer):
        return None             # (a batch loop of one image: kept around the rows)
    if (KH, KW * CI) != (RING_KH, RING_R) or const_value(oh.min) != 0 or const_value(pw.min) != 0:
        return None
    EH, E = const_value(oh.extent), const_value(pw.extent)
    if EH is None or E is None or E < 2:
        return None
    by_dim = {}
    for r in red:
        dims = [d for d in (1, 2, 3) if w.indices[d] is r.var]
        if len(dims) != 1 or dims[0] in by_dim:
            return None
        by_dim[dims[0]] = r
    if sorted(by_dim) != [1, 2, 3] or any(_uses(w.indices[d], v) for d in (1, 2, 3) for v in (oh.var, pw.var)):
        return None
    rh, rw, rc = by_dim[1], by_dim[2], by_dim[3]
    flat = flat_index(x)
    RS = step(flat, rh.var)                     # the input's row: W * CI elements
    S, SR = step(flat, pw.var), step(flat, oh.var)
    if RS is None or S is None or SR is None or step(flat, rw.var) != CI or step(flat, rc.var) != 1 \
            or RS % CI or S % CI or SR % RS or S % 2 or RS % 2:
        return None
    W, SW, SH = RS // CI, S // CI, SR // RS
    size = int(np.prod(x.buffer.shape))
    if size % RS:
        return None
    H = size // RS
    vs = (oh.var, pw.var, rh.var, rw.var, rc.var)
    linear = substitute(flat, {id(lp.var): Const(0, lp.var.dtype) for lp in outer}) - \
        (oh.var * SR + pw.var * S + rh.var * RS + rw.var * CI + rc.var)
    if const_value(simplify(linear)) != 0 or not 1 <= SH <= KH:
        return None
    if const_value(rc.min) != 0 or const_value(rc.extent) != CI or \
            any(_uses(e, v) for e in (rh.min, rh.extent) for v in vs if v is not oh.var) or \
            any(_uses(e, v) for e in (rw.min, rw.extent) for v in vs if v is not pw.var):
        return None
    if not (_clips_at_end(rh, oh.var, EH, KH, H, SH) and _clips_at_end(rw, pw.var, E, KW, W, SW)):
        return None
    if SH * (EH - 1) >= H or SW * (E - 1) >= W:
        return None                             # (a window wholly in the padding: not TFLite's SAME)
    rq = find_requant(store.value, acc, oc.var)
    if rq is None or not rq.per_channel or step(store.index, oc.var) != 1 or rq.node.key() != store.value.key():
        return None
    bias, mult, shift, zp, lo, hi = rq.parts()
    if not -128 <= lo <= hi <= 127:
        return None
    row_k, K = KH * RING_R, 28
    first = {id(oc.var): Const(0, oc.var.dtype)}

    def base(ld):
        return Load(ld.buffer, tuple(simplify(substitute(i, first)) for i in ld.indices))
    zero = Const(0, "int32")
    got = requant_table(func, bias, mult, shift, Load(w.buffer, (oc.var, zero, zero, zero)), base, oc.var, O,
                        row_k, row_k, off, zp, fold_each=True)
    if got is None:
        return None
    table, kb, layouts = got
    widened = widened_weights(func, w.buffer, RingQuads(O))
    if widened is None:
        return None
    kw, quads, wq = widened
    layouts = {**layouts, kw: quads}
    P = buf_words(K)
    # a ring row: the input row's RS values, then zeros up to the last pixel's window (its half
    # after the taps included), two values a word
    RW = max(RS, S * (E - 1) + 2 * (RING_R // 2 + 1)) // 2
    scratch = Buffer(f"{store.buffer.name}_q15", "int32", (P + KH * RW,))
    if 4 * scratch.size > MAX_RING_BYTES:
        return None

    def slot(h):
        return simplify(Bin("floormod", h, Const(KH, "int32")) * RW + P)

    def widen(h):
        """Input row h into its ring slot, or (a row past the input: h a constant) the slot zeroed."""
        at = slot(h)
        row = Evaluate(Call(WIDEN_W, [Load(scratch, (at,)), Load(x.buffer, (simplify(h * RS),)), Const(RS, "int32"),
                                      Const(off, "int32")], "int32"))
        j = Var("k_ring", "int32")
        clear = For(j, 0, RW, Store(scratch, simplify(at + j), zero))
        return row if const_value(h) is None or const_value(h) < H else clear

    def pixel_pair(p0, p1):
        same = p1 is p0
        rows = [Load(scratch, (simplify(slot(oh.var * SH + k) + p0 * (S // 2)),)) for k in range(KH)]
        copy = Evaluate(Call(RING, [Load(scratch, (zero,)), *rows, Const(0 if same else S // 2, "int32")], "int32"))
        subs = [{id(pw.var): q} for q in (p0, p1)]
        outs = [Load(store.buffer, (simplify(substitute(substitute(store.index, first), sb)),)) for sb in subs]
        call = Call(PAIR, [outs[0], outs[1], Load(scratch, (zero,)), Load(wq, (zero,)), Load(table, (zero,)),
                           base(mult), base(shift), Const(K, "int32"), Const(O, "int32"),
                           Const(quads.block_bytes, "int32"), Const(zp, "int32"), Const(lo, "int32"),
                           Const(hi, "int32")], "int32")
        return Seq([copy, Evaluate(call)])

    def pairs(direct):
        v = Var(pw.var.name + "_pair", pw.var.dtype)
        if direct:          # the row's pairs one call over the ring in place (the table's flag tested inside)
            p0 = Const(0, pw.var.dtype)
            out = Load(store.buffer, (simplify(substitute(substitute(store.index, first), {id(pw.var): p0})),))
            rows = [Load(scratch, (slot(oh.var * SH + k),)) for k in range(KH)]
            body = [Evaluate(Call(RING_MAC, [out, *rows, Load(wq, (zero,)), Load(table, (zero,)), base(mult),
                                             base(shift), Const(O, "int32"), Const(E // 2, "int32"), Const(zp, "int32"),
                                             Const(lo, "int32"), Const(hi, "int32")], "int32"))]
        else:
            body = [For(v, 0, E // 2, pixel_pair(v * 2, v * 2 + 1))]
        if E % 2:
            last = Const(E - 1, pw.var.dtype)
            body.append(pixel_pair(last, last))
        return body
    direct = O % 4 == 0 and (lo, hi) == (-128, 127) and S == 6 and step(store.index, pw.var) == O
    # each oh: the rows its window has that the last one's had not (the first's others before);
    # the last rows' oh, whose windows reach past the input, each on its own (its rows constants:
    # no test in the loop, every access a proven one)
    inside = min(EH, max(0, (H - KH) // SH + 1))

    def row(at):
        sub = {id(oh.var): at}
        return Seq([widen(simplify(at * SH + k)) for k in range(KH - SH, KH)] +
                   [map_exprs(b, lambda e: simplify(substitute(e, sub))) for b in pairs(direct)])
    j = Var("k_end", "int32")
    ends = [For(j, RS // 2, RW - RS // 2, Store(scratch, simplify(P + t * RW + j), zero))
            for t in range(KH)] if RW > RS // 2 else []
    rows = [For(oh.var, 0, inside, row(oh.var))] if inside else []
    s = Seq(rows + [row(Const(v, oh.var.dtype)) for v in range(inside, EH)])
    for lp in reversed(outer):
        s = lp.with_body(s)
    s = Seq(ends + [widen(Const(k, "int32")) for k in range(KH - SH)] + [s])
    params = [table if k == kb else wq if k == kw else b for k, b in enumerate(func.params)] + [scratch]
    return s, params, layouts, scratch


def gather_scratch(func, target):
    """The DSP cores' rule for convs with a window over whole 4-byte channel groups (scratch_pairs:
    CMSIS-NN's im2col of two columns, with pw_s8's kernel over them)."""
    if get_intrin(PAIR).variant_for(target.mcpu) != "dsp":
        return None
    tops = _nests(func.body)
    if len(tops) != 1:
        return None
    got = scratch_pairs(func, tops[0])
    if got is None:
        return None
    s, params, layouts, scratch = got
    attrs = dict(func.attrs, schedule=f"{PAIR} gather (dsp)", scratch=scratch.size * 4,
                 layouts={**func.attrs.get("layouts", {}), **layouts})
    return func.with_body(Seq([s]), params, attrs=attrs)


def _own_name(e):
    """A dot call under the gathered kernels' own names (aot/tir/intrin/arm_gather.py)."""
    if isinstance(e, Call) and e.fn in GATHERED:
        return Call(GATHERED[e.fn], [transform(a, _own_name) for a in e.args], e.dtype)
    return None


def gather_nest(func, nest, variant):
    """(nest with each output pixel's window gathered and its channels on dot calls, func's
    params with the Helium fold's bias, the layouts it adds); Nones where the rule does not
    apply."""
    none = None, None, None
    got = _window_conv(func, nest)
    if got is None:
        return none
    loops, red, acc, x, off, w, store = got
    O, KH, KW, CI = w.buffer.shape
    row = KH * KW * CI
    oc = loops[-1]
    if not _short(w.buffer.shape):
        return none
    x_ = nest
    while isinstance(x_, For):
        x_ = x_.body
    init = x_.body.stmts[0]
    got = _pixel_pairs(func, loops, red, acc, x, off, w, store, variant) \
        if variant == "dsp" or KW * CI >= MVE_PAIRS_BYTES else None
    if got is not None:
        return got
    win = Buffer(acc.name + "_win", "int8", (row,), "local")
    # the copy: the original window loops (clipped at the borders), each tap to its OHWI place
    at = simplify(w.indices[1] * (KW * CI) + w.indices[2] * CI + w.indices[3])
    copy = _row_runs(red, w, x, win, at, _copy_rows) or _taps(red, Store(win, at, x))
    taps = red[0].extent
    for r in red[1:]:
        taps = taps * r.extent
    taps = simplify(taps)
    parts = [copy]
    if const_value(taps) != row:          # a clipped window: the padding's taps hold the zero point
        k = Var("k_pad", "int32")
        fill = For(k, 0, row, Store(win, k, Const(-off, "int8")))
        if const_value(taps) is None:
            fill = IfThenElse(Bin("!=", taps, Const(row, taps.dtype)), fill)
        parts.insert(0, fill)
    # the compute: the channels over the gathered run, read with the weights' own indices
    k1, k2, k3 = Var("kh", "int32"), Var("kw", "int32"), Var("kc", "int32")
    a = Cast("int32", Load(win, (simplify(k1 * (KW * CI) + k2 * CI + k3),)))
    if off:
        a = Bin("+", a, Const(off, "int32"))
    prod = Bin("*", a, Cast("int32", Load(w.buffer, (oc.var, k1, k2, k3))))
    body = Store(acc, init.index, Bin("+", Load(acc, (init.index,)), prod))
    compute = oc.with_body(Allocate(acc, Seq([init, For(k1, 0, KH, For(k2, 0, KW, For(k3, 0, CI, body))), store])))
    try:
        compute = tensorize(compute, k1, DOT)
    except ScheduleError:
        return none
    params, folds = func.params, {}
    if variant == "mve":
        params, compute, folds = fold_offset(func, compute)
    compute = pair_outputs(compute, quads=True) or compute
    compute = map_exprs(compute, lambda e: transform(e, _own_name))
    s = Allocate(win, Seq(parts + [compute]))
    for lp in reversed(loops[:-1]):
        s = lp.with_body(s)
    return s, params, folds


def _short_rows(func, nest):
    """Whether nest is a conv gather_nest takes: window rows shorter than the row kernels want
    (several rows of them)."""
    got = _window_conv(func, nest)
    if got is None:
        return False
    return _short(got[5].buffer.shape)


def _short(weight_shape):
    """An OHWI window of several rows, each shorter than the row kernels want (one window row
    is one run already: dot_s8's), within the gathered sizes."""
    _, KH, KW, CI = weight_shape
    return KH > 1 and KW * CI < ROW_BYTES and MIN_WINDOW <= KH * KW * CI <= MAX_WINDOW


def gather_windows(func, target):
    variant = get_intrin(DOT).variant_for(target.mcpu)
    if variant == "plain":
        return None
    tops = _nests(func.body)
    if len(tops) != 1:
        return None
    nest, put_back = staged_compute(tops[0])
    if nest is None:
        return None
    if variant == "dsp" and get_intrin(PAIR).variant_for(target.mcpu) == "dsp":
        short = _short_rows(func, nest)
        ring = short and ring_pairs(func, nest)
        got = ring or (short and scratch_pairs(func, nest, gathered=True))
        if got:
            s, params, layouts, scratch = got
            attrs = dict(func.attrs, schedule=f"{RING_MAC if ring else PAIR} gather (dsp)", scratch=scratch.size * 4,
                         layouts={**func.attrs.get("layouts", {}), **layouts})
            return func.with_body(Seq([put_back(s)]), params, attrs=attrs)
    got, params, folds = gather_nest(func, nest, variant)
    if got is None:
        return None
    calls = {e.fn for st in walk_stmts(got) for e in own_exprs(st) for e in walk(e) if isinstance(e, Call)}
    kernel = next((k for k in ("gconv_q15", "gconv_s8") if k in calls), DOT)
    attrs = dict(func.attrs, schedule=f"{kernel} gather ({variant})")
    if folds:
        attrs["layouts"] = {**func.attrs.get("layouts", {}), **folds}
    return func.with_body(Seq([put_back(got)]), list(params), attrs=attrs)

