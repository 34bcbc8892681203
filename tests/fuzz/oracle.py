"""The oracle: onnxruntime (CPUExecutionProvider, 1 thread) gives the expected outputs; where it and
the ONNX specification may disagree, onnx.reference.ReferenceEvaluator decides."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

RTOL, ATOL = 1e-3, 1e-4


def is_qdq(model):
    return any(n.op_type == "QuantizeLinear" for n in model.graph.node)


def expected_outputs(model, feeds):
    """onnxruntime's outputs {name: array}. QDQ models run without graph optimisations: optimised,
    onnxruntime fuses DQ->op->Q into integer kernels (QLinearConv, ...) whose requantisation rounds
    differently from the float DQ->op->Q the specification (and aot) computes."""
    from .gen import _quiet_ort, ort_session
    _quiet_ort()
    sess = ort_session(model, optimize=not is_qdq(model))
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


def output_step(model):
    """{output name: one quantisation step} for outputs produced by a DequantizeLinear."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    steps = {}
    for n in model.graph.node:
        if n.op_type == "DequantizeLinear" and n.input[1] in inits:
            steps[n.output[0]] = float(np.max(np.abs(inits[n.input[1]])))
    return {o.name: steps[o.name] for o in model.graph.output if o.name in steps}


def compare_one(name, ref, got, step=0.0):
    """None if `got` matches `ref`, else what differs (one line)."""
    ref, got = np.asarray(ref), np.asarray(got)
    if got.shape != ref.shape:
        return f"output '{name}': shape ort {list(ref.shape)} aot {list(got.shape)}"
    if got.dtype != ref.dtype:
        return f"output '{name}': dtype ort {ref.dtype} aot {got.dtype}"
    if ref.dtype.kind != "f":
        bad = ref != got
        if bad.any():
            return f"output '{name}' ({ref.dtype}): {int(bad.sum())}/{ref.size} elements differ"
        return None
    r64, g64 = ref.astype(np.float64), got.astype(np.float64)
    both_nan = np.isnan(r64) & np.isnan(g64)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(r64 - g64)
        # a QDQ output may be one quantisation step off: the float accumulation order of the op
        # before the QuantizeLinear can land either side of a rounding boundary
        tol = ATOL + step * 1.001 + RTOL * np.abs(r64)
        same_inf = np.isinf(r64) & (r64 == g64)
        bad = ~(both_nan | same_inf | (diff <= tol))
    if not bad.any():
        return None
    d = np.where(bad, np.nan_to_num(diff, nan=np.inf), 0)
    i = np.unravel_index(int(np.argmax(d)), ref.shape) if ref.ndim else ()
    return (f"output '{name}' {list(ref.shape)}: max abs diff {float(d[i]):.3g} at {[int(k) for k in i]} "
            f"(ort {float(r64[i]):.6g} aot {float(g64[i]):.6g}), {int(bad.sum())}/{ref.size} elements off"
            + (f", 1 step = {step:.3g}" if step else ""))


def compare(model, expected, got):
    """List of differences between onnxruntime's outputs and aot's (empty: they match)."""
    steps = output_step(model)
    problems = []
    for name, ref in expected.items():
        if name not in got:
            problems.append(f"output '{name}' missing from aot's outputs")
            continue
        p = compare_one(name, ref, got[name], steps.get(name, 0.0))
        if p:
            problems.append(p)
    return problems


def reference_outputs(model, feeds, names=None):
    from onnx.reference import ReferenceEvaluator
    try:
        ev = ReferenceEvaluator(model)
    except RuntimeError:
        # the reference implements some ops (DequantizeLinear, ...) only at newer opsets
        from onnx import version_converter
        ev = ReferenceEvaluator(version_converter.convert_version(model, 21))
    names = names or [o.name for o in model.graph.output]
    return dict(zip(names, ev.run(names, feeds)))


# ops whose reference implementation gives wrong values at the right shape (so the shape check
# below cannot catch them): ConvTranspose with groups, dilations and output_padding (fuzz seed
# 4225); BatchNormalization-9..13 uses batch statistics whenever `momentum` is set
REFERENCE_WRONG = {"ConvTranspose", "BatchNormalization"}


def node_by_node_reference(model, feeds):
    """({tensor: value}, [op types where onnxruntime and the reference differ]): every node run
    alone, on the values computed so far, by the reference evaluator -- or by onnxruntime where
    the reference cannot run it or gives another shape than onnxruntime (the reference has bugs
    of its own: ConvTranspose with groups or output_shape, MaxPool with pads, ...)."""
    from .local import run_node_ort, single_node_model
    vals = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    vals.update(feeds)
    diverged = []
    for node in model.graph.node:
        ins = {i: np.asarray(vals[i]) for i in node.input if i}
        m = single_node_model(node, ins, model)
        outs = [o for o in node.output if o]
        ort_vals = run_node_ort(node, ins, model, m)
        try:
            if node.op_type in REFERENCE_WRONG:
                raise NotImplementedError(node.op_type)
            ref_vals = reference_outputs(m, ins, outs)
            if any(np.shape(ref_vals[o]) != np.shape(ort_vals[o]) for o in outs):
                ref_vals = ort_vals
        except Exception:
            ref_vals = ort_vals
        for o in outs:
            r = np.asarray(ref_vals[o]).astype(ort_vals[o].dtype)
            if ref_vals is not ort_vals and compare_one(o, ort_vals[o], r) is not None:
                diverged.append(node.op_type)
            vals[o] = r
    return vals, diverged


def judge(model, feeds, expected, got):
    """('pass' | 'pass-by-reference' | 'wrong', detail). When aot differs from onnxruntime on an
    output but agrees with the reference evaluator there, the specification sides with aot. The
    reference runs on the part of the graph that output needs only (it has bugs of its own, e.g.
    grouped ConvTranspose, that an unrelated node must not drag in)."""
    from .shrink import cleanup
    steps = output_step(model)
    problems = compare(model, expected, got)
    if not problems:
        return "pass", ""
    wrong, notes, ops = [], [], []
    for name, ref in expected.items():
        if name not in got or compare_one(name, ref, got[name], steps.get(name, 0.0)) is None:
            continue
        m = onnx.ModelProto()
        m.CopyFrom(model)
        keep = [o for o in m.graph.output if o.name == name]
        del m.graph.output[:]
        m.graph.output.extend(keep)
        m, f = cleanup(m, feeds)
        try:
            vals, diverged = node_by_node_reference(m, f)
            r = np.asarray(vals[name]).astype(ref.dtype)
            ops.extend(diverged)
        except Exception as e:          # the reference cannot run it: onnxruntime stands
            wrong.append(name)
            notes.append(f"reference failed on '{name}': {type(e).__name__}")
            continue
        if compare_one(name, r, got[name], steps.get(name, 0.0)) is not None:
            wrong.append(name)
    detail = "; ".join(problems) + (f" [{'; '.join(notes)}]" if notes else "")
    if not wrong:
        return "pass-by-reference", (ops[0] if ops else "?") + ": " + detail
    if needs_local_judge(model):
        from .local import local_judge
        try:
            cls, why = local_judge(model, feeds, got)
        except Exception as e:          # noqa: BLE001 -- the instrumented run or a node failed
            return "wrong", detail + f" [kernel-by-kernel check failed: {type(e).__name__}: {str(e)[:200]}]"
        return cls, why + ": " + detail
    return "wrong", detail


def needs_local_judge(model):
    """A QDQ model, or one with a nearest Resize: the two cases only the kernel-by-kernel oracle
    (tests/fuzz/local.py) can arbitrate."""
    if is_qdq(model):
        return True
    return any(n.op_type == "Resize" and all(a.name != "mode" or a.s == b"nearest" for a in n.attribute)
               for n in model.graph.node)


def model_ops(model):
    return sorted({n.op_type for n in model.graph.node})


def load_case(path_onnx):
    """(model, feeds) of a saved reproducer (<name>.onnx + <name>.npz)."""
    model = onnx.load(path_onnx)
    with np.load(path_onnx[:-5] + ".npz") as z:
        feeds = {k: z[k] for k in z.files}
    return model, feeds
