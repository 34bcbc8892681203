"""The main job on a bundled example, end to end:

  make a small CNN (conv+bn+relu, depthwise conv, pooling, dense, softmax) as ONNX
  -> `aot compile` -> MLF tarball -> `aot info` -> `aot run` (host gcc build) -> compare with onnxruntime

Run:  python examples/demo.py [OUT_DIR]
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def make_model(path):
    r = np.random.default_rng(42)
    t = lambda name, *shape, s=0.3: numpy_helper.from_array((r.standard_normal(shape) * s).astype(np.float32), name)  # noqa: E731
    inits = [t("w1", 16, 3, 3, 3), t("bn_s", 16, s=0.1), t("bn_b", 16), t("bn_m", 16),
             numpy_helper.from_array(r.uniform(0.5, 2, 16).astype(np.float32), "bn_v"),
             t("w2", 16, 1, 3, 3), t("b2", 16), t("w3", 24, 16, 1, 1), t("wf", 10, 24), t("bf", 10)]
    inits[1] = numpy_helper.from_array(r.uniform(0.5, 1.5, 16).astype(np.float32), "bn_s")
    nodes = [
        helper.make_node("Conv", ["image", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn1"], name="bn1"),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2], group=16, name="dwconv"),
        helper.make_node("Clip", ["c2", "", "six"], ["r2"], name="relu6"),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], name="pwconv"),
        helper.make_node("Relu", ["c3"], ["r3"], name="relu3"),
        helper.make_node("GlobalAveragePool", ["r3"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "wf", "bf"], ["logits"], transB=1, name="fc"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax"),
    ]
    inits.append(numpy_helper.from_array(np.float32(6.0), "six"))
    g = helper.make_graph(nodes, "demo_cnn", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def sh(*args):
    print("$ " + " ".join(args), flush=True)
    subprocess.run(args, check=True)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join("build", "demo")
    os.makedirs(out, exist_ok=True)
    model, tar = os.path.join(out, "demo_cnn.onnx"), os.path.join(out, "demo_cnn.tar")
    make_model(model)
    aot = [sys.executable, "-m", "aot"]
    sh(*aot, "compile", model, "-o", tar, "--verbose")
    sh(*aot, "info", tar)
    x = np.random.default_rng(0).uniform(0, 1, (1, 3, 32, 32)).astype(np.float32)
    np.savez(os.path.join(out, "in.npz"), image=x)
    sh(*aot, "run", tar, "--inputs", os.path.join(out, "in.npz"), "--outputs", os.path.join(out, "out.npz"))
    import onnxruntime as ort
    ref = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"image": x})[0]
    with np.load(os.path.join(out, "out.npz")) as z:
        got = z["probs"]
    diff = float(np.abs(got - ref).max())
    print("\nclass probabilities, generated C vs onnxruntime:")
    for k, (a, b) in enumerate(zip(got.ravel(), ref.ravel())):
        print(f"  class {k}: {a:.6f}  {b:.6f}")
    ok = np.allclose(got, ref, rtol=1e-5, atol=1e-6)
    print(f"max abs difference {diff:.3g}: {'MATCH' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
