"""The requantisation's constants as a table the Arm micro-kernels read (pw_s8, pw_s8x2, dw_s8f:
aot/tir/intrin/arm_q15.py, arm_dw.py), laid out at compile time: FoldedBias on the bias, FoldedShift
on the shifts, each a layout the executor applies to the constant it links (a constant of its own).
gemmlowp.folded_requant proves per channel, from the bias, multiplier, shift, zero point and the
weights' sums, that the four-operation folded form (SMMLAR of the doubled sum with c = 2^(e-1) +
zp 2^e, the sign, one shift) is TFLite's requantisation exactly; where one channel does not hold,
the table says so and the kernels take the exact form. A kernel may also take its weights and
biases doubled (pw_s8: _Fold.doubling_holds proves the doubled sums fit), so that SMMLAR takes the
sum with no shift before it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tir.intrin.arm import flat_index, step
from ..tir.intrin.gemmlowp import folded_requant
from ..tir.simplify import const_value, simplify
from ..tir.stmt import Buffer


@dataclass(frozen=True)
class _Fold:
    """What pw_s8's requantisation table is worked out from (gemmlowp.folded_requant): the
    parameters it reads besides its own (roles: 'bias', 'mult', 'shift', 'weights', in reads'
    order), the call's shape (weight row c at wbase + c * sw, cin long), its input offset and
    output zero point, and a per-tensor multiplier and shift (None where they are arrays). Each
    channel's accumulator without its bias is at most max|x + off| * sum|w[c]| (cin * 128 of
    that where the weights are not constants)."""
    roles: tuple
    reads: tuple
    cout: int
    cin: int
    sw: int
    wbase: int
    off: int
    zp: int
    mult: int = None
    shift: int = None
    fold_offset: bool = False     # the table's biases with off * (the channel's weight sum) added
    per_channel: bool = False     # each channel folded where it holds (c = 0 and its shift elsewhere):
                                  # for a kernel that tests each channel's c (dw3_s8r)
    flagged: bool = False         # the table one pair longer: (0, 1 where every channel is folded, else 0),
                                  # the test a kernel that tests each channel's c skips where it is 1
    wide: bool = False            # FoldedBias four words a channel: (bias, c, multiplier, shift as the
                                  # kernel reads it), the whole requantisation behind one pointer (dw_s8f)
    doubled: bool = False         # the wide table's biases doubled (wrapping) where it is fast: for a
                                  # kernel whose weights are doubled (dw_s8w); as they are elsewhere
    doubles: bool = False         # (flagged) the biases doubled where doubling_holds, the flag pair's first
                                  # word then 1: for a kernel whose weights are doubled with them
                                  # (pw_s8's Q15Quads doubles), so that SMMLAR takes its sum unshifted
    cols8: bool = False           # (cin 8) after the flag pair, eight words a channel: its four weight
                                  # words (int16 pairs of its values 0 and 2, 1 and 3, 4 and 6, 5 and 7,
                                  # doubled), its bias doubled, multiplier, c, e (pw_s8's aot_pw_s8_cols8);
                                  # zeros unless every channel is folded (the only case that reads them)

    def doubling_holds(self, got):
        """Whether a kernel may double its weights and biases (its sums then 2v, which SMMLAR
        takes with no shift before it: gemmlowp.mbqm_folded2_asm), from the arrays by role (bias,
        weights, and mult and shift where they are arrays): every channel with a nonzero weight
        has 2 (|bias| + max|x + off| sum |w|) < 2^31, so that each partial sum of the doubled
        products fits int32 (|2w| <= 256 an int16 lane) and halving it gives v exactly; a channel
        whose weights are all 0 sums its bias doubled as the table holds it (wrapped), which
        holds where it is folded with e >= 2 (fixed_c: its value whatever the sign of the
        wrapped sum) or its multiplier is 0 (SMMLAR gives c for any sum). The weights' layout
        (Q15Quads doubles) and the table's (FoldedBias doubles) decide by it on the same arrays."""
        n = self.cout
        bias = got["bias"].reshape(-1)[:n].astype(np.int64)
        absw = self.row_sums(got["weights"], absolute=True)
        amax = max(abs(-128 + self.off), abs(127 + self.off))
        fits = 2 * (np.abs(bias) + amax * absw) < (1 << 31)
        _, c, e = self.folded("bias", got["bias"], [got[r] for r in self.roles])
        m = got["mult"].reshape(-1)[:n] if "mult" in got else np.full(n, self.mult)
        zero = (absw == 0) & (c != 0) & ((e >= 2) | (m == 0))
        return bool(np.all(fits | zero))

    def weight_rows(self, weights):
        """Each channel's weight row (cout x cin, int64)."""
        w = weights.reshape(-1).astype(np.int64)
        return w[self.wbase + self.sw * np.arange(self.cout)[:, None] + np.arange(self.cin)[None, :]]

    def row_sums(self, weights, absolute=False):
        """Each channel's sum of its weight row (of their magnitudes)."""
        rows = self.weight_rows(weights)
        return (np.abs(rows) if absolute else rows).sum(axis=1)

    def folded(self, role, own, arrays):
        got = dict(zip(self.roles, arrays), **{role: own})
        n = self.cout
        per = {k: (got[k].reshape(-1)[:n] if k in got else np.full(n, getattr(self, k)))
               for k in ("mult", "shift")}
        amax = max(abs(-128 + self.off), abs(127 + self.off))
        if "weights" in got:
            bound = amax * self.row_sums(got["weights"], absolute=True)
        else:
            bound = np.full(n, amax * 128 * self.cin)
        bias = got["bias"].reshape(-1)[:n]
        dead = self.shift is None                 # the shifts a table: a dead channel's e is free
        fixed = None
        if dead and "weights" in got:
            # channels whose weights are all 0 (pruned, or dead in training): their value is known
            from ..ops.fixed_point import mbqm_np
            mask = (bound == 0) & (per["shift"] <= 0)
            fixed = (mask, np.clip(mbqm_np(bias, per["mult"], per["shift"]) + self.zp, -128, 127))
        return folded_requant(bias, per["mult"], per["shift"], self.zp, bound, per_channel=self.per_channel,
                              dead=dead, fixed=fixed)


@dataclass(frozen=True)
class FoldedBias(_Fold):
    """The bias of cout channels as the kernels' table: [bias[0], c[0], bias[1], c[1], ...], c the
    folded constants where the folded requantisation holds for every channel (never 0 there:
    an odd multiple of 2^(e-1)), else all 0, which tells the kernel (from any channel's pair:
    a call over a block of channels reads its own); per_channel: c where it holds for the
    channel, 0 elsewhere."""
    def shape(self, shape):
        return ((4 if self.wide else 2) * shape[0] + 2 * self.flagged + 8 * self.cout * self.cols8,)

    def apply(self, bias, *arrays):
        _, c, e = self.folded("bias", bias, arrays)
        if self.wide:
            assert not (self.fold_offset or self.flagged), "the wide table holds neither"
            got = dict(zip(self.roles, arrays))
            n = self.cout
            m = got["mult"].reshape(-1)[:n] if "mult" in got else np.full(n, self.mult)
            out = np.zeros(4 * n, np.int64)
            b = bias.reshape(-1)[:n].astype(np.int64)
            out[0::4], out[1::4], out[2::4], out[3::4] = 2 * b if self.doubled and np.all(c != 0) else b, c, m, e
            return (out & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
        b = bias.reshape(-1)[:self.cout].astype(np.int64)
        if self.fold_offset:          # (wrapping in int32 as the kernel's own sum would)
            b = b + self.off * self.row_sums(dict(zip(self.roles, arrays))["weights"])
        out = np.zeros(2 * self.cout + 2 * self.flagged, np.int64)
        out[0:2 * self.cout:2], out[1:2 * self.cout:2] = b, c
        if self.flagged:
            out[-1] = int(bool(np.all(c != 0)))
        if self.doubles and self.doubling_holds(dict(zip(self.roles, arrays), bias=bias)):
            assert self.flagged and not self.fold_offset, "the flag pair says so"
            out[0:2 * self.cout:2], out[-2] = 2 * b, 1
        if self.cols8:
            out = np.concatenate([out, self._cols8(b, c, e, arrays)])
        return (out & 0xFFFFFFFF).astype(np.uint32).view(np.int32)

    def _cols8(self, b, c, e, arrays):
        """cols8's words. Doubling holds where every channel folds: |bias| + its bound < 2^30 (so
        every partial sum of the doubled products fits int32, and |2w| <= 256 an int16 lane),
        or the channel's multiplier is 0 (any sum gives c), or its weights are 0 and fixed_c's
        e >= 2 gives its value whatever sign the wrapped doubled bias has."""
        n = self.cout
        ext = np.zeros((n, 8), np.int64)
        if not np.all(c != 0):
            return ext.reshape(-1)
        got = dict(zip(self.roles, arrays))
        m = got["mult"].reshape(-1)[:n] if "mult" in got else np.full(n, self.mult)
        w = self.weight_rows(got["weights"])
        lo = w[:, [0, 1, 4, 5]] & 0xFFFF
        hi = w[:, [2, 3, 6, 7]] & 0xFFFF
        ext[:, 0:4] = (2 * lo & 0xFFFF) | ((2 * hi & 0xFFFF) << 16)
        ext[:, 4], ext[:, 5], ext[:, 6], ext[:, 7] = 2 * b, m, c, e
        return ext.reshape(-1)


@dataclass(frozen=True)
class FoldedShift(_Fold):
    """The shifts of cout channels as the kernels read them: e = -shift where FoldedBias's table
    says fast, else the shifts as they are."""
    def shape(self, shape):
        return tuple(shape)

    def apply(self, shift, *arrays):
        return self.folded("shift", shift, arrays)[2].astype(np.int32)


def fold_layouts(bias, kb, km, ks, kw, **fold):
    """(the table's buffer for bias buffer `bias`, {parameter: layout}): FoldedBias on parameter
    kb and, where the shifts are an array (ks), FoldedShift on them, reading the multipliers (km),
    shifts and weights (kw) that are parameters (None where not); fold: _Fold's fields."""
    def reading(*roles):
        got = [(r, k) for r, k in roles if k is not None]
        return tuple(r for r, _ in got), tuple(k for _, k in got)
    out = {kb: FoldedBias(*reading(("mult", km), ("shift", ks), ("weights", kw)), **fold)}
    if ks is not None:
        out[ks] = FoldedShift(*reading(("bias", kb), ("mult", km), ("weights", kw)), **fold)
    words = (4 if fold.get("wide", False) else 2) * fold["cout"] + 2 * fold.get("flagged", False) + \
        8 * fold["cout"] * fold.get("cols8", False)
    return Buffer(bias.name, "int32", (words,), bias.scope), out


def requant_table(func, bias, mult, shift, w, base, oc, cout, cin, sw, off, zp, fold_offset=False, fold_each=False,
                  cols8=False, doubles=False):
    """(the table's buffer, the bias parameter it replaces, {parameter: layout}) for a call whose
    requantisation reads bias, mult and shift (Loads; mult and shift ints when per tensor) along
    output channel var oc and whose channel c's cin weights start at w's element c * sw (w a Load,
    or None: no bound from the weights; base the call's first element of a Load): the fold_layouts;
    fold_offset: the input offset folded into the table's biases (the call then sums the inputs
    without it); fold_each: each channel folded where it holds (_Fold.per_channel: for a kernel that
    tests each channel's c), the table flagged (_Fold.flagged); cols8: _Fold.cols8's words after the
    flag (the weights must be a constant); doubles: _Fold.doubles. None unless they are constants no
    other layout holds, read from channel 0 on, one element a channel (and with fold_offset, the
    weights a constant too)."""
    index, consts, layouts = ({id(b): k for k, b in enumerate(func.params)}, func.attrs.get("constants", ()),
                              func.attrs.get("layouts", {}))

    def table_param(ld):
        k = index.get(id(ld.buffer))
        whole = k in consts and k not in layouts and tuple(ld.buffer.shape) == (cout,)
        return k if whole and const_value(simplify(flat_index(base(ld)))) == 0 and step(flat_index(ld), oc) == 1 else None
    per_channel = not isinstance(mult, int)
    kb = table_param(bias)
    km, ks = (table_param(mult), table_param(shift)) if per_channel else (None, None)
    if kb is None or (per_channel and None in (km, ks)):
        return None
    kw, wbase = (index.get(id(w.buffer)), const_value(simplify(flat_index(base(w))))) if w is not None else (None, None)
    kw = kw if kw in consts and kw not in layouts and wbase is not None else None
    if (fold_offset or cols8 or doubles) and kw is None:
        return None
    table, out = fold_layouts(bias.buffer, kb, km, ks, kw, cout=cout, cin=cin, sw=sw, wbase=wbase or 0, off=off, zp=zp,
                              fold_offset=fold_offset, per_channel=fold_each, flagged=fold_each, cols8=cols8,
                              doubles=doubles,
                              **({} if per_channel else {"mult": mult, "shift": shift}))
    return table, kb, out
