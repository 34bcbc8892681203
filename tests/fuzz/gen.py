"""Random valid models for differential fuzzing: make_case(seed) -> (onnx.ModelProto, feeds).

Kinds, chosen by seed (or forced with kind=...):
  float  ONNX float32 graphs of the operators MCU models use (most seeds);
  qdq    the same kind of graph quantised to int8/uint8 in QDQ form, the way onnxruntime's static
         quantizer emits it: activations through QuantizeLinear/DequantizeLinear with scales
         calibrated on the float graph, weights int8 through DequantizeLinear (per-tensor or
         per-output-channel), biases int32 with scale = input scale * weight scale.
A .tflite kind is meant to be added to KINDS once the TFLite frontend exists (it does not yet): a
generator function (rng, opset) -> Case like the two below.

Every model is checked with onnxruntime before it is returned: a model onnxruntime rejects raises
GeneratorInvalid (a generator bug, counted apart). Values are kept well-conditioned (weights scaled
by fan-in, Log/Sqrt/Pow on Abs(x)+eps, Div by values away from zero) and every intermediate tensor
is checked to stay finite and bounded; a draw that is not is redrawn from a derived seed.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper, shape_inference

FLOAT = TensorProto.FLOAT
MAX_ABS = 1e3          # intermediates beyond this make a float comparison meaningless
DRAWS = 8              # redraws before a seed counts as generator-invalid


class GeneratorInvalid(Exception):
    """The generator produced a model onnxruntime rejects (or could not condition one)."""


class Unconditioned(Exception):
    """This draw is not well-conditioned: draw again."""


@dataclasses.dataclass
class Case:
    seed: int
    kind: str
    model: onnx.ModelProto
    feeds: dict
    expected: dict = None          # onnxruntime's outputs, filled by check_valid


def ir_version_for(opset):
    return 7 if opset <= 14 else 8 if opset <= 18 else 9 if opset <= 20 else 10


@dataclasses.dataclass
class T:
    name: str
    shape: tuple
    dtype: int = FLOAT


class Builder:
    """A graph under construction with the shape of every tensor (from onnx shape inference)."""

    def __init__(self, rng, opset):
        self.rng, self.opset = rng, opset
        self.nodes, self.inits, self.inputs, self.feeds = [], [], [], {}
        self.pool: list[T] = []        # float tensors an op may consume
        self.uses: dict[str, int] = {}
        self.n = 0
        self.consts = {}

    def fresh(self, base="t"):
        self.n += 1
        r = self.rng.random()
        # odd names now and then: C identifiers are derived from them
        if r < 0.05:
            return f"{base}:{self.n}"
        if r < 0.08:
            return f"/{base}{self.n}/Op_output_0"
        if r < 0.10:
            return f"{base}.{self.n}"
        return f"{base}{self.n}"

    def const(self, arr, base="c"):
        name = self.fresh(base)
        arr = np.asarray(arr)
        self.inits.append(numpy_helper.from_array(arr, name))
        self.consts[name] = arr
        return name

    def add_input(self, shape, data=None, dtype=np.float32, pool=True):
        name = self.fresh("in")
        if data is None:
            data = self.rng.uniform(-1, 1, shape)
        data = np.asarray(data).astype(dtype)
        self.inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(data.dtype),
                                                         list(shape)))
        self.feeds[name] = data
        t = T(name, tuple(shape), helper.np_dtype_to_tensor_dtype(data.dtype))
        if pool and dtype == np.float32:
            self.pool.append(t)
        return t

    def infer(self, node, ins):
        """Output types of `node` alone, by onnx shape inference; None if it fails or any output
        has an unknown or empty dimension."""
        g_in, g_init = [], []
        for t in ins:
            if t is None or t.name == "":
                continue
            if t.name in self.consts:
                g_init.append(numpy_helper.from_array(self.consts[t.name], t.name))
            g_in.append(helper.make_tensor_value_info(t.name, t.dtype, list(t.shape)))
        g = helper.make_graph([node], "g", g_in, [], g_init)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)])
        m.ir_version = ir_version_for(self.opset)
        try:
            m = shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
        except Exception:
            return None
        vi = {v.name: v for v in m.graph.value_info}
        outs = []
        for o in node.output:
            if o not in vi:
                return None
            tt = vi[o].type.tensor_type
            dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
            if not tt.HasField("shape") or any(d <= 0 for d in dims):
                return None
            outs.append(T(o, tuple(dims), tt.elem_type))
        return outs

    def op(self, op_type, ins, n_out=1, pool=True, **attrs):
        """Add a node; returns its output tensors, or None (nothing added) if it does not infer."""
        outs = [self.fresh() for _ in range(n_out)]
        node = helper.make_node(op_type, [t.name if t is not None else "" for t in ins], outs,
                                name=f"n{len(self.nodes)}_{op_type}", **attrs)
        ts = self.infer(node, ins)
        if ts is None or any(np.prod(t.shape) > 20000 for t in ts):
            return None
        self.nodes.append(node)
        for t in ins:
            if t is not None:
                self.uses[t.name] = self.uses.get(t.name, 0) + 1
        if pool:
            self.pool.extend(t for t in ts if t.dtype == FLOAT)
        return ts

    def constant(self, arr, dtype=np.float32):
        name = self.const(np.asarray(arr, dtype))
        return T(name, tuple(np.shape(arr)), helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))

    def ints(self, values):
        return self.constant(np.asarray(values, np.int64), np.int64)

    # -- choosing operands

    def pick(self, pred=lambda t: True, recent=0.6):
        cands = [t for t in self.pool if pred(t)]
        if not cands:
            return None
        if self.rng.random() < recent:
            return cands[-1]
        return cands[self.rng.integers(len(cands))]

    def weight(self, shape, fan_in):
        return self.constant(self.rng.normal(0, 1, shape) / np.sqrt(max(fan_in, 1)))


# ---------------------------------------------------------------------------------------------
# operator generators: each takes (b, x) and returns the new tensor(s), or None if not applicable

def g_conv(b, x):
    r = b.rng
    if len(x.shape) not in (3, 4):
        return None
    n, c, *sp = x.shape
    kind = r.random()
    if kind < 0.3:
        group = c                                   # depthwise
        m = c * int(r.integers(1, 3))
    elif kind < 0.4 and c > 2:
        divs = [d for d in range(2, c) if c % d == 0] or [1]
        group = int(r.choice(divs))
        m = group * int(r.integers(1, 3))
    else:
        group, m = 1, int(r.integers(1, 9))
    nd = len(sp)
    k = [int(r.integers(1, min(5, s + 2) + 1)) for s in sp]
    attrs = dict(kernel_shape=k, group=group)
    if r.random() < 0.4:
        attrs["strides"] = [int(r.integers(1, 4)) for _ in sp]
    if r.random() < 0.3:
        attrs["dilations"] = [int(r.integers(1, 3)) for _ in sp]
    pr = r.random()
    if pr < 0.2:
        # onnxruntime refuses dilations with SAME_*
        attrs["auto_pad"] = str(r.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]
                                         if "dilations" not in attrs else ["VALID"]))
    elif pr < 0.7:
        attrs["pads"] = [int(r.integers(0, kk)) if kk > 1 else 0 for kk in k] + \
                        [int(r.integers(0, kk)) if kk > 1 else 0 for kk in k]
    if not window_fits(sp, k, attrs):
        return None
    w = b.weight((m, c // group, *k), c // group * int(np.prod(k)))
    ins = [x, w]
    if r.random() < 0.6:
        ins.append(b.constant(r.uniform(-0.5, 0.5, m)))
    return b.op("Conv", ins, **attrs)


def g_convtranspose(b, x):
    r = b.rng
    if len(x.shape) not in (3, 4):
        return None
    n, c, *sp = x.shape
    group = c if (r.random() < 0.25 and c > 1) else 1
    m = group * int(r.integers(1, 3)) if group > 1 else int(r.integers(1, 6))
    k = [int(r.integers(1, 5)) for _ in sp]
    s = [int(r.integers(1, 4)) for _ in sp]
    attrs = dict(kernel_shape=k, strides=s, group=group)
    if r.random() < 0.25:
        attrs["dilations"] = d = [int(r.integers(1, 3)) for _ in sp]
    else:
        d = [1] * len(sp)
    pr = r.random()
    if pr < 0.2:
        attrs["auto_pad"] = str(r.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
    elif pr < 0.6:
        attrs["pads"] = [int(r.integers(0, kk)) if kk > 1 else 0 for kk in k] * 2
    if r.random() < 0.3 and "auto_pad" not in attrs:
        attrs["output_padding"] = [int(r.integers(0, ss)) for ss in s]     # < stride for onnxruntime
    elif r.random() < 0.15 and "auto_pad" not in attrs and "pads" not in attrs:
        # output_shape: the padding follows from it (total = full size - requested size)
        full = [(n - 1) * ss + (kk - 1) * dd + 1 for n, ss, kk, dd in zip(sp, s, k, d)]
        attrs["output_shape"] = [int(f - r.integers(0, min(kk, f))) for f, kk in zip(full, k)]
    w = b.weight((c, m // group, *k), c // group * int(np.prod(k)) / max(int(np.prod(s)), 1))
    ins = [x, w]
    if r.random() < 0.5:
        ins.append(b.constant(r.uniform(-0.5, 0.5, m)))
    return b.op("ConvTranspose", ins, **attrs)


def g_pool(b, x):
    r = b.rng
    if len(x.shape) not in (3, 4):
        return None
    sp = x.shape[2:]
    op = "MaxPool" if r.random() < 0.5 else "AveragePool"
    k = [int(r.integers(1, min(4, s + 1) + 1)) for s in sp]
    attrs = dict(kernel_shape=k)
    if r.random() < 0.6:
        attrs["strides"] = [int(r.integers(1, 4)) for _ in sp]
    if r.random() < 0.25 and (op == "MaxPool" or b.opset >= 19):
        attrs["dilations"] = [int(r.integers(1, 3)) for _ in sp]
    pr = r.random()
    if pr < 0.2:
        # SAME_* with dilations: onnxruntime's output shape is not the spec's, avoid
        attrs["auto_pad"] = str(r.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]
                                         if "dilations" not in attrs else ["VALID"]))
    elif pr < 0.6:
        attrs["pads"] = [int(r.integers(0, kk)) if kk > 1 else 0 for kk in k] * 2
    if r.random() < 0.3 and "auto_pad" not in attrs:
        attrs["ceil_mode"] = 1      # with auto_pad onnx shape inference and onnxruntime disagree
    if op == "AveragePool" and r.random() < 0.4:
        attrs["count_include_pad"] = 1
    if not window_fits(sp, k, attrs):
        return None
    if attrs.get("ceil_mode"):
        # a last window that would start in the end padding is dropped by onnxruntime and the
        # reference but not by onnx shape inference (onnxruntime then rejects the model): avoid
        st = attrs.get("strides", [1] * len(sp))
        d = attrs.get("dilations", [1] * len(sp))
        pads = attrs.get("pads", [0] * 2 * len(sp))
        for i, n in enumerate(sp):
            span = n + pads[i] + pads[i + len(sp)] - ((k[i] - 1) * d[i] + 1)
            o = -(-span // st[i]) + 1
            if (o - 1) * st[i] >= n + pads[i]:
                return None
    return b.op(op, [x], **attrs)


def window_fits(sp, k, attrs):
    """onnxruntime refuses a window larger than the padded input (shape inference does not)."""
    d = attrs.get("dilations", [1] * len(sp))
    if attrs.get("auto_pad", "NOTSET").startswith("SAME"):
        # onnxruntime refuses the negative total padding of a window smaller than the stride
        st = attrs.get("strides", [1] * len(sp))
        return all((-(-n // ss) - 1) * ss + (kk - 1) * dd + 1 - n >= 0
                   for n, ss, kk, dd in zip(sp, st, k, d))
    pads = attrs.get("pads", [0] * 2 * len(sp))
    return all(s + pads[i] + pads[i + len(sp)] >= (kk - 1) * dd + 1
               for i, (s, kk, dd) in enumerate(zip(sp, k, d)))


def g_global_pool(b, x):
    if len(x.shape) not in (3, 4):
        return None
    return b.op(str(b.rng.choice(["GlobalAveragePool", "GlobalMaxPool"])), [x])


def g_gemm(b, x):
    r = b.rng
    if len(x.shape) != 2:
        if len(x.shape) < 2:
            return None
        f = b.op("Flatten", [x], axis=int(r.integers(1, len(x.shape))))
        if f is None:
            return None
        x = f[0]
    if x.shape[1] > 512:
        return None
    attrs = {}
    trans_a = r.random() < 0.2
    mm, kk = (x.shape[1], x.shape[0]) if trans_a else x.shape
    if trans_a:
        attrs["transA"] = 1
    nn = int(r.integers(1, 17))
    trans_b = r.random() < 0.5
    w = b.weight((nn, kk) if trans_b else (kk, nn), kk)
    if trans_b:
        attrs["transB"] = 1
    if r.random() < 0.3:
        attrs["alpha"] = float(np.float32(r.uniform(0.5, 1.5)))
    ins = [x, w]
    if r.random() < 0.7:
        cs = [(nn,), (1, nn), (mm, nn), (mm, 1), ()][int(r.integers(5))]
        ins.append(b.constant(r.uniform(-0.5, 0.5, cs)))
        if r.random() < 0.3:
            attrs["beta"] = float(np.float32(r.uniform(0.5, 1.5)))
    return b.op("Gemm", ins, **attrs)


def g_matmul(b, x):
    r = b.rng
    if len(x.shape) < 1 or len(x.shape) > 4 or x.shape[-1] > 512:
        return None
    kk = x.shape[-1]
    choice = r.random()
    if choice < 0.15 and len(x.shape) >= 2:
        # x @ x^T: both operands computed
        perm = list(range(len(x.shape)))
        perm[-1], perm[-2] = perm[-2], perm[-1]
        xt = b.op("Transpose", [x], perm=perm)
        if xt is None:
            return None
        return b.op("MatMul", [x, xt[0]])
    nn = int(r.integers(1, 13))
    if choice < 0.3:
        shape = (kk,)                              # 1-D right operand
    elif choice < 0.5 and len(x.shape) >= 3:
        shape = (x.shape[-3] if r.random() < 0.5 else 1, kk, nn)   # batched, broadcast
    else:
        shape = (kk, nn)
    w = b.weight(shape, kk)
    if r.random() < 0.15 and len(x.shape) >= 2:
        # constant on the left: W[nn, M] @ x[..., M, K]
        w = b.weight((nn, x.shape[-2]), x.shape[-2])
        return b.op("MatMul", [w, x])
    return b.op("MatMul", [x, w])


def bcast_shape(r, shape):
    """A shape broadcastable to `shape` (some dimensions 1, sometimes fewer dimensions)."""
    s = [d if r.random() < 0.5 else 1 for d in shape]
    if s and r.random() < 0.3:
        s = s[int(r.integers(0, len(s))):]
    return tuple(s)


def positive(b, x):
    """Abs(x) + eps: a positive operand for Log/Sqrt/Pow/Div."""
    a = b.op("Abs", [x], pool=False)
    return b.op("Add", [a[0], b.constant(np.float32(b.rng.uniform(0.1, 0.5)))], pool=False)[0]


def g_binary(b, x):
    r = b.rng
    op = str(r.choice(["Add", "Add", "Sub", "Mul", "Mul", "Div", "Max", "Min", "Pow"]))
    choice = r.random()
    other = None
    if choice < 0.45:
        # residual: another computed tensor of a broadcast-compatible shape
        def ok(t):
            if t.name == x.name:
                return False
            try:
                return np.broadcast_shapes(t.shape, x.shape) == x.shape
            except ValueError:
                return False
        other = b.pick(ok, recent=0.2)
        if other is None and r.random() < 0.5:
            other = x                               # x op x
    if other is None:
        if choice < 0.6 and x.shape:
            other = b.add_input(bcast_shape(r, x.shape), pool=False)
        else:
            other = b.constant(r.uniform(-1, 1, bcast_shape(r, x.shape)))
    a, c = (x, other) if r.random() < 0.8 else (other, x)
    if op == "Div":
        if c.name in b.consts:
            v = b.consts[c.name]
            v = np.where(v >= 0, v + 0.5, v - 0.5).astype(np.float32)
            c = b.constant(v)
        else:
            c = positive(b, c)
    if op == "Pow":
        a = positive(b, a)
        c = b.constant(np.float32(r.choice([2.0, 3.0, 0.5, -1.0, 1.5, -0.5])) if r.random() < 0.7
                       else r.uniform(0.5, 2.0, bcast_shape(r, x.shape)))
    return b.op(op, [a, c])


def g_unary(b, x):
    r = b.rng
    ops = ["Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "Clip", "Elu", "Selu", "Softplus",
           "PRelu", "Abs", "Neg", "Exp", "Sqrt", "Log", "Relu", "Clip"]
    if b.opset >= 14:
        ops.append("HardSwish")
    if b.opset >= 20:
        ops.append("Gelu")
    op = str(r.choice(ops))
    if op == "Selu" and r.random() < 0.7:
        op = "Elu"          # aot refuses Selu: keep it from refusing too many whole seeds
    attrs = {}
    ins = [x]
    if op == "LeakyRelu":
        attrs["alpha"] = float(np.float32(r.uniform(0.01, 0.3)))
    elif op == "HardSigmoid":
        attrs["alpha"] = float(np.float32(r.uniform(0.1, 0.5)))
        attrs["beta"] = float(np.float32(r.uniform(0.3, 0.7)))
    elif op == "Elu":
        attrs["alpha"] = float(np.float32(r.uniform(0.5, 1.5)))
    elif op == "Gelu" and r.random() < 0.5:
        attrs["approximate"] = "tanh"
    elif op == "Clip":
        lo = np.float32(r.uniform(-1, 0))
        hi = np.float32(r.uniform(0, 1.5))
        form = int(r.integers(4))
        if form == 0:
            ins += [b.constant(lo), b.constant(hi)]
        elif form == 1:
            ins += [b.constant(lo)]
        elif form == 2:
            ins += [None, b.constant(hi)]
    elif op == "PRelu":
        if len(x.shape) >= 3 and r.random() < 0.6:
            shape = (x.shape[1],) + (1,) * (len(x.shape) - 2)
        else:
            shape = bcast_shape(r, x.shape)
        ins.append(b.constant(r.uniform(-0.5, 0.5, shape)))
    elif op in ("Sqrt", "Log"):
        ins = [positive(b, x)]
    elif op == "Exp":
        ins = [b.op("Tanh", [x], pool=False)[0]] if r.random() < 0.5 else [x]
    return b.op(op, ins, **attrs)


def g_batchnorm(b, x):
    r = b.rng
    if len(x.shape) < 2:
        return None
    c = x.shape[1]
    ins = [x, b.constant(r.uniform(0.5, 1.5, c)), b.constant(r.uniform(-0.5, 0.5, c)),
           b.constant(r.uniform(-0.5, 0.5, c)), b.constant(r.uniform(0.5, 2.0, c))]
    attrs = {"epsilon": float(np.float32(r.choice([1e-5, 1e-3, 0.1])))}
    if r.random() < 0.3:
        attrs["momentum"] = 0.9
    return b.op("BatchNormalization", ins, **attrs)


def g_reshape(b, x):
    r = b.rng
    total = int(np.prod(x.shape))
    dims = []
    rem = total
    for _ in range(int(r.integers(1, 5))):
        divs = [d for d in range(1, rem + 1) if rem % d == 0]
        d = int(r.choice(divs))
        dims.append(d)
        rem //= d
    dims[-1] *= rem
    r.shuffle(dims)
    spec = list(dims)
    if r.random() < 0.4:
        spec[int(r.integers(len(spec)))] = -1
    if r.random() < 0.3:
        for i in range(min(len(spec), len(x.shape))):
            if spec[i] == x.shape[i] and r.random() < 0.5:
                spec[i] = 0
    if spec.count(-1) > 1:
        return None
    return b.op("Reshape", [x, b.ints(spec)])


def g_transpose(b, x):
    if len(x.shape) < 2:
        return None
    perm = [int(p) for p in b.rng.permutation(len(x.shape))]
    return b.op("Transpose", [x], perm=perm)


def g_concat(b, x):
    r = b.rng
    rank = len(x.shape)
    if rank == 0:
        return None
    axis = int(r.integers(rank))

    def ok(t):
        return len(t.shape) == rank and all(t.shape[i] == x.shape[i] for i in range(rank) if i != axis)
    parts = [x]
    for _ in range(int(r.integers(1, 3))):
        o = b.pick(ok, recent=0.3)
        if o is None or r.random() < 0.3:
            u = b.op(str(r.choice(["Sigmoid", "Neg", "Relu", "Tanh"])), [x])    # a branch rejoining
            o = u[0]
        parts.append(o)
    if r.random() < 0.2:
        shape = list(x.shape)
        shape[axis] = int(r.integers(1, 4))
        parts.append(b.constant(r.uniform(-1, 1, shape)))
    r.shuffle(parts)
    return b.op("Concat", parts, axis=axis - rank if r.random() < 0.3 else axis)


def g_split(b, x):
    r = b.rng
    axes = [i for i, d in enumerate(x.shape) if d >= 2]
    if not axes:
        return None
    axis = int(r.choice(axes))
    d = x.shape[axis]
    nparts = int(r.integers(2, min(d, 4) + 1))
    if b.opset >= 18 and r.random() < 0.4:
        return b.op("Split", [x], n_out=nparts, axis=axis, num_outputs=nparts)
    cuts = sorted(int(c) for c in r.choice(np.arange(1, d), nparts - 1, replace=False))
    sizes = np.diff([0] + cuts + [d])
    if r.random() < 0.3:
        return b.op("Split", [x], n_out=nparts, axis=axis) if d % nparts == 0 else None
    return b.op("Split", [x, b.ints(sizes)], n_out=nparts, axis=axis)


def g_slice(b, x):
    r = b.rng
    rank = len(x.shape)
    if rank == 0:
        return None
    axes = sorted(int(a) for a in r.choice(rank, int(r.integers(1, rank + 1)), replace=False))
    starts, ends, steps = [], [], []
    for a in axes:
        d = x.shape[a]
        step = int(r.choice([1, 1, 1, 2, 3, -1, -2]))
        if step > 0:
            s0 = int(r.integers(0, d))
            e0 = int(r.integers(s0 + 1, d + 1))
            e = e0 if r.random() < 0.7 else (2**62 if e0 == d else e0 - d)
            s = s0 if r.random() < 0.7 else s0 - d
        else:
            s0 = int(r.integers(0, d))
            e0 = int(r.integers(-1, s0))
            s = s0 if r.random() < 0.7 else (s0 - d)
            e = e0 if e0 >= 0 else -(2**62)
        starts.append(s)
        ends.append(e)
        steps.append(step)
    ins = [x, b.ints(starts), b.ints(ends)]
    sign_axes = [a - rank if r.random() < 0.3 else a for a in axes]
    if r.random() < 0.8 or any(s != 1 for s in steps):
        ins.append(b.ints(sign_axes))
        if r.random() < 0.7 or any(s != 1 for s in steps):
            ins.append(b.ints(steps))
    elif len(axes) != rank or axes != list(range(rank)):
        ins.append(b.ints(sign_axes))
    return b.op("Slice", ins)


def g_pad(b, x):
    r = b.rng
    rank = len(x.shape)
    if rank == 0:
        return None
    modes = ["constant", "constant", "reflect", "edge"] + (["wrap"] if b.opset >= 19 else [])
    mode = str(r.choice(modes))
    pads = []
    for side in range(2):
        for d in x.shape:
            lim = d - 1 if mode == "reflect" else (d if mode == "wrap" else 3)
            pads.append(int(r.integers(0, max(lim, 0) + 1)) if r.random() < 0.6 else 0)
    if mode == "constant" and r.random() < 0.2:
        i = int(r.integers(len(pads)))
        if x.shape[i % rank] > 1:
            pads[i] = -1                            # negative pads crop
    ins = [x, b.ints(pads)]
    if b.opset >= 18 and r.random() < 0.3:
        # the axes input: pads for some axes only (negative axes allowed)
        axes = sorted(int(a) for a in r.choice(rank, int(r.integers(1, rank + 1)), replace=False))
        ins = [x, b.ints([pads[a] for a in axes] + [pads[a + rank] for a in axes]),
               b.constant(np.float32(r.uniform(-1, 1))) if mode == "constant" else T("", ()),
               b.ints([a - rank if r.random() < 0.3 else a for a in axes])]
        return b.op("Pad", ins, mode=mode)
    if mode == "constant" and r.random() < 0.5:
        ins.append(b.constant(np.float32(r.uniform(-1, 1))))
    return b.op("Pad", ins, mode=mode)


def g_flatten(b, x):
    rank = len(x.shape)
    axis = int(b.rng.integers(-rank, rank + 1))
    return b.op("Flatten", [x], axis=axis)


def g_squeeze(b, x):
    r = b.rng
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    rank = len(x.shape)
    if ones and r.random() < 0.6:
        axes = sorted(int(a) for a in r.choice(ones, int(r.integers(1, len(ones) + 1)), replace=False))
        if r.random() < 0.2 and len(ones) == len(axes):
            return b.op("Squeeze", [x])
        return b.op("Squeeze", [x, b.ints([a - rank if r.random() < 0.3 else a for a in axes])])
    if rank >= 5:
        return None
    k = int(r.integers(1, 3))
    out_rank = rank + k
    axes = sorted(int(a) for a in r.choice(out_rank, k, replace=False))
    return b.op("Unsqueeze", [x, b.ints([a - out_rank if r.random() < 0.3 else a for a in axes])])


def g_reduce(b, x):
    r = b.rng
    op = str(r.choice(["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"]))
    rank = len(x.shape)
    attrs = {}
    if r.random() < 0.3:
        attrs["keepdims"] = 0
    if rank and r.random() < 0.85:
        axes = sorted(int(a) for a in r.choice(rank, int(r.integers(1, rank + 1)), replace=False))
        axes = [a - rank if r.random() < 0.3 else a for a in axes]
    else:
        axes = None
    if axes is not None:
        if op == "ReduceSum" or b.opset >= 18:
            return b.op(op, [x, b.ints(axes)], **attrs)
        attrs["axes"] = axes
    return b.op(op, [x], **attrs)


def g_softmax(b, x):
    rank = len(x.shape)
    if rank == 0:
        return None
    axis = int(b.rng.integers(-rank, rank))
    return b.op(str(b.rng.choice(["Softmax", "LogSoftmax"])), [x], axis=axis)


def g_resize(b, x):
    r = b.rng
    rank = len(x.shape)
    if rank not in (3, 4):
        return None
    # onnxruntime: cubic only for 4-D inputs with the outer two scales 1
    mode = str(r.choice(["nearest", "linear", "cubic"] if rank == 4 else ["nearest", "linear"]))
    ctms = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]
    if b.opset >= 19:
        ctms.append("half_pixel_symmetric")
    attrs = dict(mode=mode, coordinate_transformation_mode=str(r.choice(ctms)))
    if mode == "nearest":
        attrs["nearest_mode"] = str(r.choice(["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    if mode == "cubic":
        if r.random() < 0.5:
            attrs["cubic_coeff_a"] = float(r.choice([-0.5, -0.75]))
        if r.random() < 0.3:
            attrs["exclude_outside"] = 1
    roi = T("", ())
    if r.random() < 0.5:
        scales = [1.0, 1.0] + [float(r.choice([0.5, 1.0, 1.5, 2.0, 3.0, 0.75, 1.7, 2.5, 0.6])) for _ in x.shape[2:]]
        return b.op("Resize", [x, roi, b.constant(np.array(scales, np.float32))], **attrs)
    sizes = list(x.shape[:2]) + [max(1, int(r.integers(1, 2 * d + 3))) for d in x.shape[2:]]
    return b.op("Resize", [x, roi, T("", ()), b.ints(sizes)], **attrs)


def g_gather(b, x):
    r = b.rng
    rank = len(x.shape)
    if rank == 0:
        return None
    axis = int(r.integers(rank))
    d = x.shape[axis]
    if r.random() < 0.2:
        idx = np.array(int(r.integers(-d, d)), np.int64)                    # scalar: drops the axis
    else:
        idx = r.integers(-d, d, tuple(int(v) for v in r.integers(1, 4, int(r.integers(1, 3))))).astype(np.int64)
    return b.op("Gather", [x, b.constant(idx, np.int64)], axis=axis - rank if r.random() < 0.3 else axis)


def g_where(b, x):
    r = b.rng
    # the condition compares a graph input (exact values, none near the threshold) so that a
    # 1-ulp difference upstream cannot flip it
    cshape = bcast_shape(r, x.shape)
    data = r.choice([-1.0, -0.5, 0.5, 1.0], cshape)
    c_in = b.add_input(cshape, data=data, pool=False)
    cond = b.op(str(r.choice(["Greater", "Less"])), [c_in, b.constant(np.float32(0.0))], pool=False)
    if cond is None:
        return None
    other = b.pick(lambda t: t.name != x.name and _bc(t.shape, x.shape)
                   and np.broadcast_shapes(t.shape, x.shape) == x.shape, recent=0.3)
    if other is None:
        other = b.constant(r.uniform(-1, 1, bcast_shape(r, x.shape)))
    a, c = (x, other) if r.random() < 0.5 else (other, x)
    return b.op("Where", [cond[0], a, c])


def _bc(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def g_cast(b, x):
    r = b.rng
    if r.random() < 0.5:
        # float -> float16/double -> float
        to = int(r.choice([TensorProto.FLOAT16, TensorProto.DOUBLE]))
        y = b.op("Cast", [x], to=to, pool=False)
        return b.op("Cast", y, to=FLOAT) if y else None
    # float -> int32 -> float on exact half-integers (no rounding ties to disagree on)
    shape = bcast_shape(r, x.shape)
    xin = b.add_input(shape, data=r.integers(-4, 5, shape) + 0.5 * r.choice([-1, 1], shape), pool=False)
    y = b.op("Cast", [xin], to=int(r.choice([TensorProto.INT32, TensorProto.INT64, TensorProto.INT8])), pool=False)
    z = b.op("Cast", y, to=FLOAT, pool=False)
    zs = b.op("Mul", [z[0], b.constant(np.float32(0.25))], pool=False)
    return b.op("Add", [x, zs[0]])


FLOAT_OPS = [
    (g_conv, 12), (g_convtranspose, 3), (g_pool, 6), (g_global_pool, 2), (g_gemm, 3), (g_matmul, 4),
    (g_binary, 12), (g_unary, 14), (g_batchnorm, 4), (g_reshape, 3), (g_transpose, 3), (g_concat, 4),
    (g_split, 3), (g_slice, 4), (g_pad, 3), (g_flatten, 2), (g_squeeze, 2), (g_reduce, 4),
    (g_softmax, 3), (g_resize, 4), (g_gather, 2), (g_where, 2), (g_cast, 2),
]

# the subset onnxruntime's quantizer puts in QDQ form (others stay float between DQ and Q)
QDQ_OPS = [
    (g_conv, 14), (g_pool, 5), (g_global_pool, 2), (g_gemm, 3), (g_matmul, 4), (g_binary, 6),
    (g_unary, 5), (g_reshape, 2), (g_transpose, 2), (g_concat, 3), (g_flatten, 1), (g_squeeze, 1),
    (g_resize, 2), (g_split, 1), (g_slice, 2), (g_softmax, 1),
]


def random_input_shape(r):
    kind = r.random()
    if kind < 0.7:
        return (int(r.choice([1, 1, 1, 2, 3])), int(r.integers(1, 9)), int(r.integers(3, 21)),
                int(r.integers(3, 21)))
    if kind < 0.8:
        return (int(r.choice([1, 2])), int(r.integers(1, 9)), int(r.integers(3, 33)))
    if kind < 0.9:
        return (int(r.integers(1, 5)), int(r.integers(2, 33)))
    return (1, int(r.integers(1, 5)), int(r.integers(2, 9)), int(r.integers(2, 17)))


def build_graph(b: Builder, ops, n_nodes):
    r = b.rng
    for _ in range(int(r.integers(1, 3))):
        b.add_input(random_input_shape(r))
    fns = [f for f, _ in ops]
    w = np.array([wt for _, wt in ops], float)
    w /= w.sum()
    tries = 0
    while len(b.nodes) < n_nodes and tries < n_nodes * 8:
        tries += 1
        x = b.pick(recent=0.65)
        fn = fns[int(r.choice(len(fns), p=w))]
        before = (len(b.nodes), len(b.inits), len(b.inputs), len(b.pool))
        try:
            out = fn(b, x)
        except (ValueError, TypeError, IndexError):
            out = None
        if out is None:
            # roll back any helper nodes of a failed attempt
            n, i, k, p = before
            del b.nodes[n:], b.pool[p:]
            for t in b.inits[i:]:
                b.consts.pop(t.name, None)
            for t in b.inputs[k:]:
                b.feeds.pop(t.name, None)
            del b.inits[i:], b.inputs[k:]


def finish(b: Builder):
    """Choose outputs: the last tensor, some dangling ones, now and then an intermediate that is
    also consumed and a graph input that goes straight to an output."""
    r = b.rng
    produced = [t for t in b.pool if t.name not in b.feeds]
    if not produced:
        raise GeneratorInvalid("no node was generated")
    outs = [produced[-1]]
    for t in produced[:-1]:
        if b.uses.get(t.name, 0) == 0 and r.random() < 0.5 and len(outs) < 4:
            outs.append(t)
        elif b.uses.get(t.name, 0) > 0 and r.random() < 0.04 and len(outs) < 5:
            outs.append(t)
    if r.random() < 0.08:
        outs.append([t for t in b.pool if t.name in b.feeds][0])
    seen, uniq = set(), []
    for t in outs:
        if t.name not in seen:
            seen.add(t.name)
            uniq.append(t)
    used = {i for n in b.nodes for i in n.input} | {t.name for t in uniq}
    inputs = [i for i in b.inputs if i.name in used]
    feeds = {k: v for k, v in b.feeds.items() if k in used}
    inits = [i for i in b.inits if i.name in used]
    g = helper.make_graph(b.nodes, "fuzz", inputs,
                          [helper.make_tensor_value_info(t.name, t.dtype, list(t.shape)) for t in uniq], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", b.opset)], producer_name="aot-fuzz")
    m.ir_version = ir_version_for(b.opset)
    return m, feeds


def n_nodes_for(r):
    return int(r.integers(10, 41)) if r.random() < 0.85 else int(r.integers(41, 81))


def gen_float(r, opset):
    b = Builder(r, opset)
    build_graph(b, FLOAT_OPS, n_nodes_for(r))
    return finish(b)


def gen_qdq(r, opset):
    from .qdq import quantize
    b = Builder(r, opset)
    build_graph(b, QDQ_OPS, int(r.integers(6, 25)))
    m, feeds = finish(b)
    return quantize(m, feeds, r), feeds


def gen_stage(r, opset):
    """A CNN's first stage (patch-based execution's input, aot/passes/patch.py): one batch-1
    image through a chain of convolutions, pools and elementwise layers (residual adds now and
    then), then the float kind's random graph on what it made."""
    b = Builder(r, opset)
    x = b.add_input((1, int(r.integers(1, 5)), int(r.integers(6, 25)), int(r.integers(4, 17))))
    chain, made = [x], 0
    for _ in range(int(r.integers(8, 20))):
        if made >= 6:
            break
        fn = [g_conv, g_conv, g_conv, g_pool, g_unary, g_binary][int(r.integers(0, 6))]
        try:
            out = fn(b, chain[-1])
        except (ValueError, TypeError, IndexError):
            out = None
        out = out[0] if isinstance(out, list) else out
        if out is None or len(out.shape) != 4:
            continue
        made += fn in (g_conv, g_pool)
        if r.random() < 0.25 and chain[-1].shape == out.shape and fn is g_conv:
            out = b.op("Add", [out, chain[-1]])[0]
        chain.append(out)
    build_graph(b, FLOAT_OPS, int(r.integers(3, 12)))
    return finish(b)


KINDS = {"float": gen_float, "qdq": gen_qdq, "stage": gen_stage}


def kind_for_seed(seed, kind="mix"):
    if kind != "mix":
        return kind
    return "qdq" if seed % 5 == 4 else "float"


def ort_session(model, optimize=True):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def with_all_outputs(model):
    """The model with every float node output also a graph output (to check conditioning)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inf = shape_inference.infer_shapes(m)
    have = {o.name for o in m.graph.output}
    for v in inf.graph.value_info:
        if v.name not in have and v.type.tensor_type.elem_type == FLOAT:
            m.graph.output.append(v)
    return m


def conditioned(model, feeds, optimize=True):
    """True if every float intermediate stays finite and within MAX_ABS."""
    sess = ort_session(with_all_outputs(model), optimize)
    for v in sess.run(None, feeds):
        v = np.asarray(v)
        if v.dtype.kind == "f" and (not np.all(np.isfinite(v)) or (v.size and np.abs(v).max() > MAX_ABS)):
            return False
    return True


def _quiet_ort():
    import onnxruntime as ort
    ort.set_default_logger_severity(4)


def generate(seed, kind="mix") -> Case:
    """A Case for `seed`; raises GeneratorInvalid if onnxruntime rejects what was generated."""
    kind = kind_for_seed(seed, kind)
    _quiet_ort()
    last = None
    for draw in range(DRAWS):
        r = np.random.default_rng([seed, draw])
        opset = int(r.integers(13, 22))
        try:
            model, feeds = KINDS[kind](r, opset)
            onnx.checker.check_model(model)
        except Unconditioned:
            continue
        except GeneratorInvalid:
            raise
        except Exception as e:
            raise GeneratorInvalid(f"seed {seed}: generator failed: {type(e).__name__}: {e}") from e
        try:
            ok = conditioned(model, feeds, optimize=(kind != "qdq"))
        except Exception as e:
            raise GeneratorInvalid(f"seed {seed}: onnxruntime rejects the model: {str(e)[:300]}") from e
        if ok:
            return Case(seed, kind, model, feeds)
        last = model
    raise GeneratorInvalid(f"seed {seed}: no well-conditioned draw in {DRAWS}"
                           + (f" ({len(last.graph.node)} nodes)" if last is not None else ""))


def make_case(seed, kind="mix"):
    c = generate(seed, kind)
    return c.model, c.feeds
