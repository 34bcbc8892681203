"""topi.nn.pad: the padded copy of a tensor as its own stage (TVM: PadInput; convolution's is
pad_temp), so that a schedule or a TIR pass can find, inline or drop it."""
from __future__ import annotations

from ...tir.expr import Const, Expr, all_of, ge, lt, select
from .. import tag
from ..utils import TopiError, compute, get_const_tuple


def pad(data, pad_before, pad_after=None, pad_value=0.0, name="PadInput", attrs=None):
    """data with pad_before[d] elements of pad_value before and pad_after[d] after dimension d."""
    n = data.ndim
    pad_after = pad_before if pad_after is None else pad_after
    pad_before, pad_after = [int(p) for p in pad_before], [int(p) for p in pad_after]
    if len(pad_before) != n or len(pad_after) != n:
        raise TopiError(f"topi.nn.pad: {data.name} has rank {n}; pad_before has {len(pad_before)} entries and "
                        f"pad_after {len(pad_after)}")
    if any(p < 0 for p in pad_before + pad_after):
        raise TopiError(f"topi.nn.pad: negative padding {pad_before}, {pad_after}")
    shape = get_const_tuple(data.shape)
    out_shape = tuple(s + b + a for s, b, a in zip(shape, pad_before, pad_after))
    value = pad_value if isinstance(pad_value, Expr) else Const(pad_value, data.dtype)

    def body(*i):
        idx, inside = [], []
        for d in range(n):
            if pad_before[d] == 0 and pad_after[d] == 0:
                idx.append(i[d])
                continue
            idx.append(i[d] - Const(pad_before[d], "int32"))
            if pad_before[d]:
                inside.append(ge(i[d], Const(pad_before[d], "int32")))
            if pad_after[d]:
                inside.append(lt(i[d], shape[d] + Const(pad_before[d], "int32")))
        return select(all_of(inside), data(*idx), value) if inside else data(*idx)
    return compute(out_shape, body, name, tag.INJECTIVE + ",pad", attrs)
