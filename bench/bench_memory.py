"""Workspace bytes vs the lower bound for every model (and without in-place writes), and for the MLPerf Tiny models our
workspace + input/output bytes next to TFLite Micro's arena for the same model (tflite-micro's
Python interpreter, RecordingMicroAllocator; its arena holds inputs and outputs too), layer by
layer and with the first stage patched (--patch auto: the stage and strips with the smallest
workspace, and the multiply-accumulates that costs).

  python bench/bench_memory.py          (pip install tflite-micro for the TFLM column)
"""
import contextlib
import glob
import io
import os
import re
import sys

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
MLPERF = os.path.join(ROOT, "..", "shared", "models", "mlperf_tiny")
PAIRS = [("anomaly_detection/ad01_fp32.onnx", "anomaly_detection/ad01_fp32.tflite"),
         ("keyword_spotting/kws_ref_model_fp32_savedmodel.onnx", "keyword_spotting/kws_ref_model_fp32_savedmodel.tflite"),
         ("keyword_spotting/kws_ref_model_float32.onnx", None),   # hybrid .tflite: TFLM refuses it
         ("image_classification/pretrainedResnet.onnx", "image_classification/pretrainedResnet.tflite"),
         ("visual_wake_words/vww_96_float.onnx", "visual_wake_words/vww_96_float.tflite")]
# int8: our compile of the .tflite itself, next to TFLM's arena for the same file
INT8 = ["anomaly_detection/ad01_int8.tflite", "keyword_spotting/kws_ref_model.tflite",
        "image_classification/pretrainedResnet_quant.tflite", "visual_wake_words/vww_96_int8.tflite"]


def tflm_arena(path):
    """TFLite Micro's arena total (head + tail) for a .tflite model, or a reason it has none."""
    import subprocess
    script = ("from tflite_micro.python.tflite_micro import runtime\n"
              f"it = runtime.Interpreter.from_file({path!r}, arena_size=8 * 1024 * 1024)\n"
              "it.print_allocations()\n")
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    m = re.search(r"Arena allocation total (\d+) bytes", r.stdout + r.stderr)
    if m:
        return int(m.group(1))
    return "no tflm" if "No module named" in r.stderr else "refused"


def patch_macs(res):
    """The extra multiply-accumulates of a compile's patched stage, in % ('-': layer by layer)."""
    from mlf import read_mlf
    p = read_mlf(res.tar).aot["execution"]["patch"]
    if p is None:
        return "-"
    total = sum(n.outputs[0].type.size * (n.inputs[1].type.size // n.inputs[1].type.shape[0])
                for n in res.graph.nodes if n.op in ("Conv", "QConv"))
    return f"+{100 * p['extra_macs'] / max(total - p['extra_macs'], 1):.0f}%"


def main():
    import aot
    rows = []
    print(f"{'model':34s} {'workspace':>10s} {'lower bd':>10s} {'ratio':>6s} {'no inplace':>10s} {'ws+io':>10s} "
          f"{'ws, io in':>10s} {'TFLM arena':>11s} {'ours/TFLM':>9s} {'io-in/TFLM':>10s} {'patched':>9s} "
          f"{'io-in':>7s} {'+MACs':>7s}")
    for onnx_rel, tfl_rel in PAIRS + [(r, r) for r in INT8]:
        p = os.path.join(MLPERF, onnx_rel)
        if not os.path.exists(p):
            continue
        with contextlib.redirect_stderr(io.StringIO()):
            res = aot.compile(p)
        plan = res.plan
        io_bytes = sum(t.nbytes for _, _, t in plan.inputs) + sum(t.nbytes for _, _, t in plan.outputs)
        with contextlib.redirect_stderr(io.StringIO()):
            io_in = aot.compile(p, use_workspace_io=True).plan.workspace_size
            plain = aot.compile(p, in_place=False).plan.workspace_size
            pat = aot.compile(p, patch="auto")
            pat_in = aot.compile(p, patch="auto", use_workspace_io=True)
        tflm = tflm_arena(os.path.join(MLPERF, tfl_rel)) if tfl_rel else "n/a (hybrid)"
        ratio = f"{(plan.workspace_size + io_bytes) / tflm:9.3f}" if isinstance(tflm, int) else f"{'-':>9s}"
        ratio2 = f"{io_in / tflm:10.3f}" if isinstance(tflm, int) else f"{'-':>10s}"
        extra = [patch_macs(r) for r in (pat, pat_in)]
        if isinstance(tflm, int):
            ratio2 += (f" {(pat.plan.workspace_size + io_bytes) / tflm:9.3f} {pat_in.plan.workspace_size / tflm:7.3f} "
                       + "/".join(extra))
        rows.append((os.path.basename(p), plan.workspace_size, plan.workspace_lower_bound))
        print(f"{os.path.splitext(os.path.basename(p))[0]:34s} {plan.workspace_size:10d} {plan.workspace_lower_bound:10d} "
              f"{plan.workspace_size / max(plan.workspace_lower_bound, 1):6.3f} {plain:10d} {plan.workspace_size + io_bytes:10d} "
              f"{io_in:10d} {str(tflm):>11s} {ratio} {ratio2}", flush=True)
    for p in sorted(glob.glob(os.path.join(LIGHT_DIR, "light_*.onnx"))):
        res = aot.compile(p)
        plan = res.plan
        plain = aot.compile(p, in_place=False).plan.workspace_size
        print(f"{os.path.basename(p)[:-5]:34s} {plan.workspace_size:10d} {plan.workspace_lower_bound:10d} "
              f"{plan.workspace_size / max(plan.workspace_lower_bound, 1):6.3f} {plain:10d}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
