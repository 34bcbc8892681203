"""The kernel-by-kernel oracle: the last word on a model whose outputs differ from onnxruntime's
by more than the whole-model comparison allows, when no whole-model oracle can say who is right.

Two such cases:
- QDQ models: a float op upstream of a QuantizeLinear, evaluated in another (equally correct)
  float32 order, lands on the other side of a .5 boundary, and the integer output is one step off;
  ops after it can turn that one step into several (fuzz seed 8019: Resize linear, 3 elements of
  128 within 5e-8 of .5 in exact arithmetic; onnxruntime was right on one, aot on two);
- a Resize, nearest, whose source coordinate is an exact integer that onnxruntime's float32 and
  the reference's float64 both miss by an ulp (seed 2678): the spec's formula in exact rationals
  decides.

So aot is asked for every kernel's output (the `aot debug` instrumentation) and each ONNX node is
run alone by onnxruntime (Resize nearest: by the exact formula below), on aot's own values for its
inputs where aot has them. Every recorded tensor must be what its node computes from those inputs:
within the fuzzer's float tolerance, exactly for integers, and for a QuantizeLinear the
quantisation of a float within RTIE of onnxruntime's. Every model output must follow too. The model
then passes by reference if it is a QDQ model or the exact Resize was needed; a float model whose
every kernel matches yet whose outputs differ stays wrong.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from onnx import helper, numpy_helper

# a float32 QuantizeLinear input may be this far (relative, or relative to one step where smaller)
# from onnxruntime's: 128 ulps, room for a reordered sum of a few hundred products
RTIE = 2.0 ** -16


def aot_kernel_outputs(model, feeds):
    """{ONNX tensor name: aot's value} of every kernel output of the instrumented compile."""
    from aot.debug import instrument, run_instrumented
    from aot.host import read_valid_mlf
    res = instrument(model)
    records, failure = run_instrumented(res.tar, feeds)
    if failure:
        raise RuntimeError(f"instrumented run failed: {failure.splitlines()[0]}")
    out = {}
    for t in read_valid_mlf(res.tar).aot["debug_records"]:
        rec = records.get((t["kernel"], t["output"]))
        if rec is not None:
            out[t["tensor"]] = np.frombuffer(rec, dtype=t["dtype"]).reshape(t["shape"])
    return out


def single_node_model(node, ins, model):
    """`node` alone as a model whose inputs are `ins` {name: array}."""
    from onnx import shape_inference
    g_in = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
            for k, v in ins.items()]
    one = helper.make_node(node.op_type, list(node.input), list(node.output), name=node.name)
    one.attribute.extend(node.attribute)
    g = helper.make_graph([one], "node", g_in, [helper.make_empty_tensor_value_info(o) for o in node.output if o])
    m = helper.make_model(g, opset_imports=list(model.opset_import))
    m.ir_version = model.ir_version
    return shape_inference.infer_shapes(m)


def run_node_ort(node, ins, model, single=None):
    """{output: onnxruntime's value} of `node` run alone on `ins` (`single`: its single-node model)."""
    from .gen import ort_session
    outs = [o for o in node.output if o]
    single = single or single_node_model(node, ins, model)
    return dict(zip(outs, ort_session(single, optimize=False).run(outs, ins)))


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _round_nearest(x: Fraction, mode):
    fl = math.floor(x)
    if mode == "floor":
        return fl
    if mode == "ceil":
        return math.ceil(x)
    if x - fl == Fraction(1, 2):
        return fl if mode == "round_prefer_floor" else fl + 1
    return math.floor(x + Fraction(1, 2))


def _source_coordinate(o, size_in, size_out, scale: Fraction, ctm):
    if ctm == "asymmetric":
        return o / scale
    if ctm == "align_corners":
        return Fraction(0) if size_out == 1 else Fraction(o * (size_in - 1), size_out - 1)
    if ctm == "pytorch_half_pixel" and size_out == 1:
        return Fraction(0)
    x = (o + Fraction(1, 2)) / scale - Fraction(1, 2)
    if ctm == "half_pixel_symmetric":
        adj = Fraction(size_out) / (scale * size_in)
        x += Fraction(size_in, 2) * (1 - adj)
    return x


def exact_resize_nearest(node, ins):
    """The Resize-nearest output by the specification's formulas in exact rationals, or None for a
    variant this does not model (roi, axes, antialias, keep_aspect_ratio_policy)."""
    a = _attrs(node)
    if a.get("mode", b"nearest") != b"nearest" or a.get("axes") or a.get("antialias", 0) \
            or a.get("keep_aspect_ratio_policy", b"stretch") != b"stretch":
        return None
    ctm = a.get("coordinate_transformation_mode", b"half_pixel").decode()
    if ctm == "tf_crop_and_resize":
        return None
    nmode = a.get("nearest_mode", b"round_prefer_floor").decode()
    names = list(node.input)
    x = ins[names[0]]
    scales = sizes = None
    if len(names) == 2:                       # Resize-10: (X, scales)
        scales = ins[names[1]]
    else:
        if len(names) > 2 and names[2] and ins[names[2]].size:
            scales = ins[names[2]]
        if len(names) > 3 and names[3] and ins[names[3]].size:
            sizes = ins[names[3]]
    index = []
    for d, n in enumerate(x.shape):
        if sizes is not None:
            m = int(sizes[d])
            s = Fraction(m, n)
        else:
            s = Fraction(float(scales[d]))
            m = math.floor(n * s)
        src = [min(max(_round_nearest(_source_coordinate(o, n, m, s, ctm), nmode), 0), n - 1)
               for o in range(m)]
        index.append(np.array(src, np.int64))
    return x[np.ix_(*index)]


def quantize_allowance(node, ins, ort_q, aot_q):
    """(elements where aot's QuantizeLinear output may differ from onnxruntime's, and does;
    elements where it differs beyond that). aot's value must be the quantisation of some float
    within RTIE of onnxruntime's float input."""
    names = list(node.input)
    x = ins[names[0]].astype(np.float64)
    scale = ins[names[1]].astype(np.float64)
    zp = ins[names[2]] if len(names) > 2 and names[2] else np.zeros((), np.uint8)
    if scale.ndim == 1 and scale.size > 1:     # per-axis
        axis = _attrs(node).get("axis", 1) % x.ndim
        shape = [1] * x.ndim
        shape[axis] = scale.size
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    info = np.iinfo(ort_q.dtype)
    slack = RTIE * np.maximum(np.abs(x), np.abs(scale))

    def q(v):
        return np.clip(np.rint(v / scale) + zp.astype(np.int64), info.min, info.max)

    lo, hi = q(x - slack), q(x + slack)
    got = aot_q.astype(np.int64)
    differs = got != ort_q.astype(np.int64)
    outside = (got < lo) | (got > hi)
    return int((differs & ~outside).sum()), int(outside.sum())


def _close(ref, got):
    from .oracle import compare_one
    return compare_one("", ref, got) is None


def local_judge(model, feeds, got):
    """('pass-by-reference', why) when every kernel output aot records, and every output in `got`,
    is what its node computes from aot's own inputs and an allowance above was needed; else
    ('wrong', the first node or output that is not)."""
    aot_vals = aot_kernel_outputs(model, feeds)
    vals = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    vals.update(feeds)
    ties = exact = 0
    for node in model.graph.node:
        ins = {i: np.asarray(vals[i]) for i in node.input if i}
        ref = run_node_ort(node, ins, model)
        if node.op_type == "Resize":
            r = exact_resize_nearest(node, ins)
            if r is not None and r.shape == ref[node.output[0]].shape:
                if not np.array_equal(r, ref[node.output[0]], equal_nan=True):
                    exact += 1
                ref[node.output[0]] = r
        for o, r in ref.items():
            a = aot_vals.get(o)
            if a is None or a.size != r.size or a.dtype != r.dtype:
                vals[o] = r
                continue
            a = a.reshape(r.shape)
            where = f"node '{node.name or o}' ({node.op_type}) output '{o}'"
            if node.op_type == "QuantizeLinear":
                n_tie, n_bad = quantize_allowance(node, ins, r, a)
                if n_bad:
                    return "wrong", f"{where}: {n_bad}/{r.size} elements not a quantisation of its input"
                ties += n_tie
            elif r.dtype.kind == "f":
                if not _close(r, a):
                    return "wrong", f"{where} differs from onnxruntime on aot's inputs"
            elif not np.array_equal(r, a):
                return "wrong", f"{where}: {int((r != a).sum())}/{r.size} elements differ"
            vals[o] = a
    for name, a in got.items():
        r = vals.get(name)
        if r is not None and name not in aot_vals and not (
                _close(r, a) if r.dtype.kind == "f" else np.array_equal(r, np.asarray(a).reshape(r.shape))):
            return "wrong", f"output '{name}' differs from its nodes run on aot's values"
    if exact:
        return "pass-by-reference", f"Resize nearest exact coordinate: {exact} nodes where onnxruntime rounds an exact coordinate off"
    if any(n.op_type == "QuantizeLinear" for n in model.graph.node):
        return "pass-by-reference", (f"QuantizeLinear rounding tie: every kernel matches onnxruntime run on aot's own "
                                     f"inputs; float32 rounding upstream flips a quantisation ({ties} elements of a "
                                     f"QuantizeLinear input within {RTIE:g} of .5)")
    return "wrong", "every kernel matches on its own inputs, yet the outputs differ"
