"""DFT as a reduction against compile-time twiddle tables (cos/sin [K, N])."""
from __future__ import annotations

import numpy as np

from ..te import tensor as te
from ..ir.graph import TensorType, Value
from ..tir.expr import Const, eq, select
from .registry import Op, Pattern, norm_axis, register


@register
class DFT(Op):
    name = "DFT"
    pattern = Pattern.OPAQUE
    dtypes = ("float32", "float64")

    def canon(self, ctx):
        x = ctx.inputs[0]
        rank = len(x.type.shape)
        if x.type.shape[-1] not in (1, 2):
            ctx.error("the last dimension must be 1 (real) or 2 (complex)")
        n_len = ctx.const_input(1, "dft_length")
        if ctx.opset >= 20:
            ax = ctx.const_input(2, "axis")
            axis = -2 if ax is None else int(ax.reshape(-1)[0])
        else:
            axis = int(ctx.attrs.get("axis", 1))
        axis = norm_axis(ctx, axis, rank)
        if axis == rank - 1:
            ctx.error("the transform axis cannot be the real/imaginary axis")
        n_in = x.type.shape[axis]
        N = n_in if n_len is None else int(n_len.reshape(-1)[0])
        inverse, onesided = int(ctx.attrs.get("inverse", 0)), int(ctx.attrs.get("onesided", 0))
        if inverse:
            ctx.error("the inverse DFT is not supported yet")
        K = N // 2 + 1 if onesided else N
        k = np.arange(K).reshape(-1, 1)
        n = np.arange(min(N, n_in)).reshape(1, -1)
        ang = 2 * np.pi * k * n / N
        dt = x.type.dtype
        cos, sin = np.cos(ang).astype(dt), np.sin(ang).astype(dt)
        mk = lambda nm, a: Value(f"{ctx.name}_{nm}", TensorType(a.shape, dt), a)  # noqa: E731
        ctx.inputs = [x, mk("cos", cos), mk("sin", sin)]
        ctx.attrs = {"axis": axis, "K": K, "N": N, "inverse": inverse}

    def infer(self, node):
        x = node.inputs[0].type
        a = node.attrs["axis"]
        shape = list(x.shape)
        shape[a], shape[-1] = node.attrs["K"], 2
        return [TensorType(tuple(shape), x.dtype)]

    def reference(self, node, x, cos, sin):
        a, N, inv = node.attrs["axis"], node.attrs["N"], node.attrs["inverse"]
        z = x[..., 0] + (1j * x[..., 1] if x.shape[-1] == 2 else 0)
        z = np.take(z, np.arange(min(N, z.shape[a])), axis=a)
        y = np.fft.ifft(z, n=N, axis=a) if inv else np.fft.fft(z, n=N, axis=a)
        y = np.take(y, np.arange(node.attrs["K"]), axis=a)
        return [np.stack([y.real, y.imag], axis=-1).astype(x.dtype)]

    def compute(self, node, x, cos, sin):
        a, inv, N = node.attrs["axis"], node.attrs["inverse"], node.attrs["N"]
        cplx = x.shape[-1] == 2

        def body(*o):
            r = te.reduce_axis(cos.shape[1], "n")
            src = list(o)
            src[a] = r.var
            xr = x(*src[:-1], Const(0, "int32"))
            xi = x(*src[:-1], Const(1, "int32")) if cplx else None
            c, s = cos(o[a], r.var), sin(o[a], r.var)
            sg = -1.0 if inv else 1.0
            # (xr + i xi) * (cos -/+ i sin)
            re = xr * c if xi is None else xr * c + xi * s * sg
            im = -(xr * s) * sg if xi is None else xi * c - xr * s * sg
            return te.sum(select(eq(o[-1], Const(0, "int32")), re, im), r)
        y = te.compute(node.outputs[0].type.shape, body, "dft")
        if not inv:
            return [y]
        return [te.compute(y.shape, lambda *o: y(*o) / Const(float(N), x.dtype), "idft")]
