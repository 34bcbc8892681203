"""Static QDQ quantisation of a float model, the way onnxruntime's quantizer emits it: calibrate the
activation ranges on the given inputs, put every float activation through QuantizeLinear ->
DequantizeLinear (uint8 asymmetric or int8 per model), turn the weights of Conv/MatMul/Gemm into
int8 initializers behind a DequantizeLinear (per-tensor, or per output channel), and their biases
into int32 with scale = input scale * weight scale."""
from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

def act_params(lo, hi, dtype):
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if hi - lo < 1e-6:
        hi = lo + 1e-3
    if dtype == np.uint8:
        scale = (hi - lo) / 255.0
        zp = int(np.clip(round(-lo / scale), 0, 255))
    else:
        m = max(abs(lo), abs(hi))
        scale = m / 127.0
        zp = 0
    return np.float32(scale), np.array(zp, dtype)


def weight_q(w, axis, per_channel):
    if per_channel:
        red = tuple(i for i in range(w.ndim) if i != axis)
        scale = np.maximum(np.abs(w).max(axis=red), 1e-6) / 127.0
        sh = [1] * w.ndim
        sh[axis] = -1
        q = np.clip(np.round(w / scale.reshape(sh)), -127, 127).astype(np.int8)
    else:
        scale = np.float32(max(np.abs(w).max(), 1e-6) / 127.0)
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return q, np.asarray(scale, np.float32)


def calibrate(model, feeds):
    from .gen import ort_session, with_all_outputs
    m = with_all_outputs(model)
    sess = ort_session(m, optimize=False)
    names = [o.name for o in sess.get_outputs()]
    vals = dict(zip(names, sess.run(None, feeds)))
    vals.update(feeds)
    return vals


def quantize(model, feeds, r):
    from .gen import MAX_ABS, Unconditioned
    vals = calibrate(model, feeds)
    for v in vals.values():
        v = np.asarray(v)
        if v.dtype.kind == "f" and (not np.all(np.isfinite(v)) or (v.size and np.abs(v).max() > MAX_ABS)):
            raise Unconditioned("calibration values not finite or too large")
    g = model.graph
    adt = np.uint8 if r.random() < 0.6 else np.int8
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    new_inits, new_nodes = [], []
    act_scale = {}
    n = [0]

    def fresh(base):
        n[0] += 1
        return f"{base}_q{n[0]}"

    def add_init(arr, base):
        name = fresh(base)
        new_inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def qdq_pair(src, dst, lo, hi):
        scale, zp = act_params(lo, hi, adt)
        s, z = add_init(scale, "scale"), add_init(zp, "zp")
        q = fresh("q")
        new_nodes.append(helper.make_node("QuantizeLinear", [src, s, z], [q], name=fresh("Q")))
        new_nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [dst], name=fresh("DQ")))
        return scale

    float_acts = {k for k, v in vals.items() if np.asarray(v).dtype == np.float32 and k not in inits}
    rename = {}
    # graph inputs: X -> Q -> DQ -> X_dq, consumers read X_dq
    for i in g.input:
        if i.name in float_acts and r.random() < 0.9:
            v = vals[i.name]
            dst = fresh(i.name + "_dq")
            act_scale[dst] = qdq_pair(i.name, dst, v.min(), v.max())
            rename[i.name] = dst
    for node in g.node:
        node_ins = [rename.get(x, x) for x in node.input]
        op = node.op_type
        # weights and biases of Conv/MatMul/Gemm become int8/int32 behind a DequantizeLinear
        if op in ("Conv", "MatMul", "Gemm") and len(node_ins) > 1 and node.input[1] in inits:
            w = inits[node.input[1]].astype(np.float32)
            trans_b = any(a.name == "transB" and a.i for a in node.attribute)
            axis = 0 if op == "Conv" else (0 if trans_b else 1) if op == "Gemm" else w.ndim - 1
            per_ch = w.ndim >= 2 and r.random() < 0.6
            q, s = weight_q(w, axis, per_ch)
            wq, ws, wz = add_init(q, "w"), add_init(s, "wscale"), add_init(np.zeros(s.shape, np.int8), "wzp")
            wd = fresh("w_dq")
            attrs = [helper.make_attribute("axis", axis)] if per_ch else []
            dq = helper.make_node("DequantizeLinear", [wq, ws, wz], [wd], name=fresh("DQw"))
            dq.attribute.extend(attrs)
            new_nodes.append(dq)
            node_ins[1] = wd
            xs = act_scale.get(node_ins[0])
            if len(node_ins) > 2 and node.input[2] in inits and xs is not None and \
                    inits[node.input[2]].ndim == 1 and inits[node.input[2]].shape[0] == (s.size if per_ch else inits[node.input[2]].shape[0]):
                bias = inits[node.input[2]].astype(np.float32)
                bs = (np.float32(xs) * s).astype(np.float32)
                bq = np.round(bias / bs).astype(np.int32)
                bqn, bsn = add_init(bq, "b"), add_init(bs, "bscale")
                bzn = add_init(np.zeros(bs.shape, np.int32), "bzp")
                bd = fresh("b_dq")
                dqb = helper.make_node("DequantizeLinear", [bqn, bsn, bzn], [bd], name=fresh("DQb"))
                if per_ch:
                    dqb.attribute.extend([helper.make_attribute("axis", 0)])
                new_nodes.append(dqb)
                node_ins[2] = bd
        new = helper.make_node(op, node_ins, [], name=node.name)
        new.attribute.extend(node.attribute)
        outs = []
        after = []
        for o in node.output:
            if o in float_acts and r.random() < 0.9:
                src = fresh(o + "_f")
                v = vals[o]
                outs.append(src)
                after.append((src, o, v))
            else:
                outs.append(o)
        new.output.extend(outs)
        new_nodes.append(new)
        for src, o, v in after:
            act_scale[o] = qdq_pair(src, o, v.min(), v.max())
    # a graph input that is also an output stays as it is
    used = {x for nd in new_nodes for x in nd.input}
    keep = [i for i in g.initializer if i.name in used]
    graph = helper.make_graph(new_nodes, g.name, list(g.input), list(g.output), keep + new_inits)
    m = helper.make_model(graph, opset_imports=list(model.opset_import), producer_name="aot-fuzz-qdq")
    m.ir_version = model.ir_version
    return m
