"""The proven stack bound against the stack measured under QEMU, on every emulated Cortex-M
board, for the MLPerf Tiny models (float and int8) and the ONNX light models that fit a board.

    python bench/bench_stack.py [--boards qemu-cortex-m4,...] [--models kws_int8,...]

Per model and board: the thread's measured stack (the painted stack's low-water mark over one
run), the thread's bound (reset handler's call tree), their ratio, the exception allowance and
the model's own bound (the tree under tvmgen_<mod>_run, as aot.stack_bytes records it)."""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("AOT_SHARED", os.path.join(HERE, "..", "..", "shared"))
MLPERF = {
    "kws_int8": "keyword_spotting/kws_ref_model.tflite",
    "kws_float": "keyword_spotting/kws_ref_model_float32.tflite",
    "vww_int8": "visual_wake_words/vww_96_int8.tflite",
    "vww_float": "visual_wake_words/vww_96_float.tflite",
    "ic_int8": "image_classification/pretrainedResnet_quant.tflite",
    "ic_float": "image_classification/pretrainedResnet.tflite",
    "ad_int8": "anomaly_detection/ad01_int8.tflite",
    "ad_float": "anomaly_detection/ad01_fp32.tflite",
}
BOARDS = ["qemu-cortex-m3", "qemu-cortex-m4", "qemu-cortex-m7", "qemu-cortex-m33", "qemu-cortex-m55"]


def weight_bytes(path):
    """The float32 bytes of an ONNX light model's ConstantOfShape weights (their shapes are
    constants): what its constants take in flash."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    shapes = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    shapes.update({n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in m.graph.node if n.op_type == "Constant"})
    return sum(int(np.prod(shapes[n.input[0]])) * 4 for n in m.graph.node
               if n.op_type == "ConstantOfShape" and n.input[0] in shapes)


def models(names):
    import onnx
    out = {k: os.path.join(SHARED, "models", "mlperf_tiny", v) for k, v in MLPERF.items()}
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    for f in sorted(os.listdir(light)) if os.path.isdir(light) else []:
        if f.endswith(".onnx"):
            out[f[:-5]] = os.path.join(light, f)
    return {k: v for k, v in out.items() if not names or k in names}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", default=",".join(BOARDS))
    ap.add_argument("--models", default="")
    a = ap.parse_args()
    import aot
    from aot.errors import AotError
    from aot.firmware import build_firmware, run_firmware, stack_bounds
    from boards import load_board
    names = [m for m in a.models.split(",") if m]
    print(f"{'model':18s} {'board':16s} {'measured':>9s} {'bound':>7s} {'ratio':>6s} {'+exc':>6s} {'model':>7s}  s")
    worst = 0.0
    for name, path in models(names).items():
        with open(path, "rb") as f:
            data = f.read()
        weights = weight_bytes(path) if name.startswith("light_") else 0
        for board in a.boards.split(","):
            t = time.time()
            flash = sum(int(r["bytes"]) for r in load_board(board)["memory"].values())
            if weights > flash:
                print(f"{name:18s} {board:16s} does not fit: {weights:,} B of weights, {flash:,} B of memory in all")
                continue
            try:
                res = aot.compile(data, target=f"c -mcpu={board[len('qemu-'):]}")
                fw = build_firmware(res.tar, board)
            except AotError as e:
                print(f"{name:18s} {board:16s} does not build or fit: {str(e).splitlines()[0][:70]}")
                continue
            feeds = {x["name"]: np.zeros(x["shape"], x["dtype"]) for x in fw.mlf.aot["inputs"]}
            _, stats = run_firmware(res.tar, feeds, board, fw=fw, timeout=1800)
            st = stack_bounds(fw)
            th, meas = st["thread"]["bytes"], stats["stack_bytes"]
            if th is None:
                print(f"{name:18s} {board:16s} {meas:9,d} no bound: {st['thread'].get('why')}")
                continue
            ratio = th / meas
            worst = max(worst, ratio)
            exc = st["bytes"] - th
            print(f"{name:18s} {board:16s} {meas:9,d} {th:7,d} {ratio:6.2f} {exc:6,d} {st['model']['bytes']:7,d}"
                  f"  {time.time() - t:.0f}" + ("  BOUND BELOW MEASURED" if th < meas else ""))
            sys.stdout.flush()
    print(f"worst thread bound / measured: {worst:.2f}")


if __name__ == "__main__":
    main()
