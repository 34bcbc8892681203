"""Per model: compile time, workspace/constant bytes, host latency of the generated C (gcc -O2,
1 thread) next to onnxruntime's 1-thread latency, measured in the same run.

  python bench/bench_models.py [--quick] [--repeat N]
"""
import argparse
import glob
import os
import sys
import time

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
MLPERF = os.path.join(ROOT, "..", "shared", "models", "mlperf_tiny")


def models(quick):
    out = []
    for rel in ("anomaly_detection/ad01_fp32.onnx", "keyword_spotting/kws_ref_model_float32.onnx",
                "keyword_spotting/kws_ref_model_fp32_savedmodel.onnx", "image_classification/pretrainedResnet.onnx",
                "visual_wake_words/vww_96_float.onnx"):
        p = os.path.join(MLPERF, rel)
        if os.path.exists(p):
            out.append((os.path.basename(rel)[:-5], p))
    if not quick:
        for p in sorted(glob.glob(os.path.join(LIGHT_DIR, "light_*.onnx"))):
            out.append((os.path.basename(p)[:-5], p))
    return out


def feeds_for(model):
    inits = {i.name for i in model.graph.initializer}
    x = [i for i in model.graph.input if i.name not in inits][0]
    shape = [d.dim_value or 1 for d in x.type.tensor_type.shape.dim]
    return {x.name: np.random.default_rng(0).uniform(0, 1, shape).astype(np.float32)}


def ort_latency_ms(path, feeds, budget_s):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    s.run(None, feeds)
    times = []
    t_end = time.perf_counter() + budget_s
    while len(times) < 3 or (time.perf_counter() < t_end and len(times) < 200):
        t = time.perf_counter()
        s.run(None, feeds)
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="MLPerf Tiny models only")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of timing per model and runtime")
    a = ap.parse_args()
    import aot
    from aot.host import run_host
    rows = []
    hdr = f"{'model':34s} {'compile s':>9s} {'kernels':>7s} {'workspace B':>12s} {'lower bd B':>11s} {'consts B':>9s} {'C ms':>9s} {'ORT ms':>9s} {'C/ORT':>6s}"
    print(hdr)
    print("-" * len(hdr))
    for name, path in models(a.quick):
        model = onnx.load(path)
        feeds = feeds_for(model)
        t = time.perf_counter()
        res = aot.compile(path)
        ct = time.perf_counter() - t
        # one untimed run estimates how many runs fit the budget
        t = time.perf_counter()
        run_host(res.tar, feeds)
        once = time.perf_counter() - t
        reps = max(1, min(1000, int(a.budget / max(once, 1e-4))))
        _, lat_us = run_host(res.tar, feeds, repeat=max(reps, 2))
        c_ms = lat_us / 1e3
        o_ms = ort_latency_ms(path, feeds, a.budget)
        p = res.plan
        rows.append((name, ct, len(p.calls), p.workspace_size, p.workspace_lower_bound, p.constants_size, c_ms, o_ms))
        print(f"{name:34s} {ct:9.2f} {len(p.calls):7d} {p.workspace_size:12d} {p.workspace_lower_bound:11d} "
              f"{p.constants_size:9d} {c_ms:9.3f} {o_ms:9.3f} {c_ms / o_ms:6.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
