"""LSTM, GRU and RNN, unrolled over their (static) sequence length into primitive ops.

Weight slices are Gathers of constants, so they fold at compile time; every time step is
a handful of MatMul/Add/activation nodes that then fuse like any other graph."""
from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from ..errors import InternalError, NeedsConstantError, OpError
from .registry import Op, register

ALPHA_BETA = {"LeakyRelu": (0.01, None), "ThresholdedRelu": (1.0, None), "Elu": (1.0, None),
              "HardSigmoid": (0.2, 0.5), "Affine": (1.0, 0.0), "ScaledTanh": (1.0, 1.0)}
DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


class _Builder:
    def __init__(self, prefix, opset, dtype):
        self.prefix, self.opset, self.dtype, self.nodes, self.n = prefix, opset, dtype, [], 0

    def name(self, hint):
        self.n += 1
        return f"{self.prefix}{hint}_{self.n}"

    def op(self, op_type, inputs, hint=None, outputs=None, **attrs):
        outs = outputs or [self.name(hint or op_type.lower())]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=outs[0], **attrs))
        return outs[0]

    def const(self, arr, hint="c"):
        name = self.name(hint)
        self.nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(arr), name),
                                           name=name))
        return name

    def scalar(self, v):
        return self.const(np.array(v, dtype=self.dtype))

    def take(self, x, idx, axis):
        return self.op("Gather", [x, self.const(np.array(idx, np.int64), "idx")], "take", axis=axis)

    def unsqueeze(self, x, axis):
        if self.opset >= 13:
            return self.op("Unsqueeze", [x, self.const(np.array([axis], np.int64), "ax")], "unsq")
        return self.op("Unsqueeze", [x], "unsq", axes=[axis])

    def act(self, x, fn, alpha, beta):
        if fn in ("Sigmoid", "Tanh", "Relu", "Softsign", "Softplus"):
            return self.op(fn, [x])
        if fn in ("LeakyRelu", "ThresholdedRelu", "Elu"):
            return self.op(fn, [x], alpha=alpha)
        if fn == "HardSigmoid":
            return self.op(fn, [x], alpha=alpha, beta=beta)
        if fn == "Affine":
            return self.op("Add", [self.op("Mul", [x, self.scalar(alpha)]), self.scalar(beta)])
        if fn == "ScaledTanh":
            return self.op("Mul", [self.op("Tanh", [self.op("Mul", [x, self.scalar(beta)])]), self.scalar(alpha)])
        raise InternalError(f"activation {fn!r} passed canon()")

    def clip(self, x, c):
        if c is None:
            return x
        if self.opset >= 11:
            return self.op("Clip", [x, self.scalar(-c), self.scalar(c)])
        return self.op("Clip", [x], min=-c, max=c)


class _Recurrent(Op):
    def expand_onnx(self, pn, values, opset, named):
        kind = pn.op_type
        a = {x.name: helper.get_attribute_value(x) for x in pn.attribute}
        a = {k: v.decode() if isinstance(v, bytes) else v for k, v in a.items()}
        ins = list(pn.input) + [""] * 8
        x = values[ins[0]]
        dtype = x.type.dtype
        layout = int(a.get("layout", 0))
        T, B = (x.type.shape[0], x.type.shape[1]) if layout == 0 else (x.type.shape[1], x.type.shape[0])
        H = int(a["hidden_size"])
        direction = a.get("direction", "forward")
        dirs = 2 if direction == "bidirectional" else 1
        G = GATES[kind]
        seq_lens = ins[4]
        if seq_lens:
            v = values[seq_lens]
            if not v.is_const:
                raise NeedsConstantError(named, f"input 'sequence_lens' ({seq_lens}) must be a compile-time constant", seq_lens)
            if np.any(np.asarray(v.const) != T):
                raise OpError(named, "sequences shorter than the input's length are not supported")
        acts = [s.decode() if isinstance(s, bytes) else s for s in a.get("activations", [])] or DEFAULT_ACTS[kind] * dirs
        if len(acts) == len(DEFAULT_ACTS[kind]):
            acts = acts * dirs
        alphas, betas = list(a.get("activation_alpha", [])), list(a.get("activation_beta", []))
        params = []
        for fn in acts:
            if fn not in ALPHA_BETA and fn not in ("Sigmoid", "Tanh", "Relu", "Softsign", "Softplus"):
                raise OpError(named, f"activation {fn} is not supported")
            da, db = ALPHA_BETA.get(fn, (None, None))
            al = alphas.pop(0) if fn in ALPHA_BETA and alphas else da
            be = betas.pop(0) if db is not None and betas else db
            params.append((fn, al, be))
        clip = a.get("clip")
        b = _Builder((pn.name or pn.output[0]) + "/", opset, dtype)
        per_step = [[None] * dirs for _ in range(T)]
        finals_h, finals_c = [], []
        for d in range(dirs):
            f_act = params[d * len(DEFAULT_ACTS[kind]):(d + 1) * len(DEFAULT_ACTS[kind])]
            Wd, Rd = b.take(ins[1], d, 0), b.take(ins[2], d, 0)

            def gate_w(m, g):
                return b.op("Transpose", [b.take(m, list(range(g * H, (g + 1) * H)), 0)], perm=[1, 0])
            Wt = [gate_w(Wd, g) for g in range(G)]
            Rt = [gate_w(Rd, g) for g in range(G)]
            if ins[3]:
                Bd = b.take(ins[3], d, 0)
                Wb = [b.take(Bd, list(range(g * H, (g + 1) * H)), 0) for g in range(G)]
                Rb = [b.take(Bd, list(range((G + g) * H, (G + g + 1) * H)), 0) for g in range(G)]
            else:
                zero = b.const(np.zeros(H, dtype))
                Wb, Rb = [zero] * G, [zero] * G
            init_axis = 0 if layout == 0 else 1
            h = b.take(ins[5], d, init_axis) if ins[5] else b.const(np.zeros((B, H), dtype), "h0")
            c = None
            if kind == "LSTM":
                c = b.take(ins[6], d, init_axis) if ins[6] else b.const(np.zeros((B, H), dtype), "c0")
                if ins[7]:
                    Pd = b.take(ins[7], d, 0)
                    P = [b.take(Pd, list(range(k * H, (k + 1) * H)), 0) for k in range(3)]   # i, o, f
                else:
                    P = None
            steps = range(T - 1, -1, -1) if (direction == "reverse" or d == 1) else range(T)
            for t in steps:
                xt = b.take(ins[0], t, 0 if layout == 0 else 1)

                def pre(g, hin=None):
                    s = b.op("Add", [b.op("MatMul", [xt, Wt[g]]), b.op("MatMul", [hin or h, Rt[g]])])
                    return b.op("Add", [b.op("Add", [s, Wb[g]]), Rb[g]])
                if kind == "RNN":
                    fn, al, be = f_act[0]
                    h = b.act(b.clip(pre(0), clip), fn, al, be)
                elif kind == "GRU":
                    (f1, a1, b1), (g1, a2, b2) = f_act
                    z = b.act(b.clip(pre(0), clip), f1, a1, b1)
                    r = b.act(b.clip(pre(1), clip), f1, a1, b1)
                    xh = b.op("Add", [b.op("MatMul", [xt, Wt[2]]), Wb[2]])
                    if int(a.get("linear_before_reset", 0)):
                        rh = b.op("Mul", [r, b.op("Add", [b.op("MatMul", [h, Rt[2]]), Rb[2]])])
                    else:
                        rh = b.op("Add", [b.op("MatMul", [b.op("Mul", [r, h]), Rt[2]]), Rb[2]])
                    hc = b.act(b.clip(b.op("Add", [xh, rh]), clip), g1, a2, b2)
                    one_minus_z = b.op("Sub", [b.scalar(1.0), z])
                    h = b.op("Add", [b.op("Mul", [one_minus_z, hc]), b.op("Mul", [z, h])])
                else:
                    (f1, a1, b1), (g1, a2, b2), (h1, a3, b3) = f_act
                    pi, po, pf, pc = pre(0), pre(1), pre(2), pre(3)      # gate order i, o, f, c
                    if P is not None:
                        pi = b.op("Add", [pi, b.op("Mul", [P[0], c])])
                        pf = b.op("Add", [pf, b.op("Mul", [P[2], c])])
                    i = b.act(b.clip(pi, clip), f1, a1, b1)
                    f = b.op("Sub", [b.scalar(1.0), i]) if int(a.get("input_forget", 0)) else b.act(b.clip(pf, clip), f1, a1, b1)
                    cc = b.act(b.clip(pc, clip), g1, a2, b2)
                    c = b.op("Add", [b.op("Mul", [f, c]), b.op("Mul", [i, cc])])
                    if P is not None:
                        po = b.op("Add", [po, b.op("Mul", [P[1], c])])
                    o = b.act(b.clip(po, clip), f1, a1, b1)
                    h = b.op("Mul", [o, b.act(c, h1, a3, b3)])
                per_step[t][d] = h
            finals_h.append(h)
            finals_c.append(c)
        outs = list(pn.output) + ["", "", ""]
        if outs[0]:
            rows = [b.unsqueeze(b.op("Concat", [b.unsqueeze(per_step[t][d], 0) for d in range(dirs)], axis=0), 0)
                    for t in range(T)]
            y = b.op("Concat", rows, axis=0)                               # [T, D, B, H]
            if layout:
                b.op("Transpose", [y], perm=[2, 0, 1, 3], outputs=[outs[0]])
            else:
                b.op("Identity", [y], outputs=[outs[0]])
        for k, finals in ((1, finals_h), (2, finals_c)):
            if outs[k] and finals[0] is not None:
                yh = b.op("Concat", [b.unsqueeze(v, 0) for v in finals], axis=0)   # [D, B, H]
                if layout:
                    b.op("Transpose", [yh], perm=[1, 0, 2], outputs=[outs[k]])
                else:
                    b.op("Identity", [yh], outputs=[outs[k]])
        return b.nodes


@register
class LSTM(_Recurrent):
    name = "LSTM"


@register
class GRU(_Recurrent):
    name = "GRU"


@register
class RNN(_Recurrent):
    name = "RNN"
