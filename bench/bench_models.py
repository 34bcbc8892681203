"""Per model: compile time, workspace/constant bytes, host latency of the generated C (the host
board's flags: gcc -O3 -ffp-contract=fast, 1 thread; --march native adds -march=native) next to
onnxruntime's 1-thread latency, measured in the same run.

Latency is CPU time per inference (the machine is shared: wall clock counts other people's
work), C and onnxruntime taking turns `--repeat` times; the medians are printed, and C/ORT is the
median of the per-turn ratios.

  python bench/bench_models.py [--quick] [--repeat N] [--march native] [--only SUBSTR]
"""
import argparse
import glob
import os
import resource
import subprocess
import sys
import tempfile
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


def ort_session(path):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_cpu_ms(sess, feeds, runs):
    """CPU milliseconds per run of `runs` runs (one thread: the caller's)."""
    t = time.process_time()
    for _ in range(runs):
        sess.run(None, feeds)
    return 1e3 * (time.process_time() - t) / runs


def _child_cpu(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def c_cpu_ms(cmd, runs):
    """CPU milliseconds per inference of the host executable: `runs` inferences less one (the
    process start and file I/O), measured as children's rusage."""
    return 1e3 * max(_child_cpu(cmd + [str(runs + 1)]) - _child_cpu(cmd + ["2"]), 0.0) / (runs - 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="MLPerf Tiny models only")
    ap.add_argument("--budget", type=float, default=0.3, help="CPU seconds per timed turn")
    ap.add_argument("--repeat", type=int, default=5, help="turns of C and onnxruntime, interleaved")
    ap.add_argument("--march", help="add -march=<this> to the host build (e.g. native)")
    ap.add_argument("--only", help="models whose name contains this")
    a = ap.parse_args()
    if a.march:
        os.environ["AOT_HOST_CFLAGS"] = (os.environ.get("AOT_HOST_CFLAGS", "") + f" -march={a.march}").strip()
    import aot
    from aot.host import build_host, write_inputs
    from boards import load_board
    print("host flags:", " ".join(load_board("host")["cflags"]), os.environ.get("AOT_HOST_CFLAGS", ""))
    hdr = f"{'model':34s} {'compile s':>9s} {'kernels':>7s} {'workspace B':>12s} {'lower bd B':>11s} {'consts B':>9s} {'C ms':>9s} {'ORT ms':>9s} {'C/ORT':>6s}"
    print(hdr)
    print("-" * len(hdr))
    for name, path in models(a.quick):
        if a.only and a.only not in name:
            continue
        model = onnx.load(path)
        feeds = feeds_for(model)
        t = time.perf_counter()
        res = aot.compile(path)
        ct = time.perf_counter() - t
        exe = build_host(res.tar)
        sess = ort_session(path)
        with tempfile.TemporaryDirectory() as d:
            ins = write_inputs(_info(res), feeds, d)
            cmd = [exe, *ins, *[os.path.join(d, f"out{k}.bin") for k in range(len(model.graph.output))]]
            # one run each sizes the turns to the budget
            once_c = max(c_cpu_ms(cmd, 3), 1e-3)
            once_o = max(ort_cpu_ms(sess, feeds, 3), 1e-3)
            nc = max(3, min(5000, int(a.budget * 1e3 / once_c)))
            no = max(3, min(5000, int(a.budget * 1e3 / once_o)))
            cs, os_, ratios = [], [], []
            for _ in range(a.repeat):
                cs.append(c_cpu_ms(cmd, nc))
                os_.append(ort_cpu_ms(sess, feeds, no))
                ratios.append(cs[-1] / os_[-1])
        c_ms, o_ms, ratio = (float(np.median(v)) for v in (cs, os_, ratios))
        p = res.plan
        print(f"{name:34s} {ct:9.2f} {len(p.calls):7d} {p.workspace_size:12d} {p.workspace_lower_bound:11d} "
              f"{p.constants_size:9d} {c_ms:9.3f} {o_ms:9.3f} {ratio:6.2f}", flush=True)
    return 0


def _info(res):
    from aot.host import read_valid_mlf
    return read_valid_mlf(res.tar).aot


if __name__ == "__main__":
    sys.exit(main())
