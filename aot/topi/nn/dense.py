"""topi.nn.dense and matmul (TVM: T_matmul_NT, tag dense) and bias_add."""
from __future__ import annotations

from ... import te
from ...tir.expr import cast
from .. import tag
from ..broadcast import add
from ..utils import TopiError, compute, dims_equal, get_const_tuple


def matmul(tensor_a, tensor_b, bias=None, out_dtype=None, transpose_a=False, transpose_b=False):
    """2-D a @ b, either operand transposed first; bias (one value per output column) added."""
    if tensor_a.ndim != 2 or tensor_b.ndim != 2:
        raise TopiError(f"topi.nn.matmul: takes 2-D tensors, not {list(tensor_a.shape)} and {list(tensor_b.shape)}")
    out_dtype = out_dtype or tensor_a.dtype
    ra, m = (tensor_a.shape[0], tensor_a.shape[1]) if transpose_a else (tensor_a.shape[1], tensor_a.shape[0])
    rb, n = (tensor_b.shape[1], tensor_b.shape[0]) if transpose_b else (tensor_b.shape[0], tensor_b.shape[1])
    if not dims_equal(ra, rb):
        raise TopiError(f"topi.nn.matmul: reduction dimensions do not match ({ra} vs {rb})")
    red = get_const_tuple([ra])[0]

    def body(i, j):
        k = te.reduce_axis((0, red), name="k")
        a = tensor_a(k.var, i) if transpose_a else tensor_a(i, k.var)
        b = tensor_b(j, k.var) if transpose_b else tensor_b(k.var, j)
        return te.sum(cast(out_dtype, a) * cast(out_dtype, b), axis=k)
    name = "T_matmul_" + ("T" if transpose_a else "N") + ("T" if transpose_b else "N")
    mat = compute((m, n), body, name, "dense" if (transpose_a, transpose_b) == (False, True) else "matmul")
    return add(mat, bias) if bias is not None else mat


def dense(data, weight, bias=None, out_dtype=None):
    """data [batch, in_dim] times weight [out_dim, in_dim] transposed, bias [out_dim] added."""
    return matmul(data, weight, bias, out_dtype, False, True)


def bias_add(data, bias, axis=1):
    """data plus bias (1-D, one value per index of `axis`), broadcast over the other axes."""
    n = data.ndim
    axis %= n
    if bias.ndim != 1 or not dims_equal(bias.shape[0], data.shape[axis]):
        raise TopiError(f"topi.nn.bias_add: bias {list(bias.shape)} must be 1-D of dimension {axis} of "
                        f"{list(data.shape)}")
    return compute(data.shape, lambda *i: data(*i) + bias(i[axis]), "T_add", tag.BROADCAST)
