"""Flash, RAM and instructions per inference of the MLPerf Tiny float models on the emulated
Cortex-M boards (arm-none-eabi-gcc -O2, QEMU -icount), and whether each fits a part with
256 KB of RAM and 1 MB of flash. RAM is data + bss (workspace, I/O buffers, C library state) +
the stack the run used; "RAM, io in ws" is the same with --use-workspace-io. Each board's
firmware is compiled for its core (target "c -mcpu=<core>": the per-core schedules) unless
--target names one target for all.

  python bench/bench_boards.py [--boards qemu-cortex-m4,qemu-cortex-m7,qemu-cortex-m55] [--target c]
"""
import argparse
import contextlib
import io
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
MLPERF = os.path.join(ROOT, "..", "shared", "models", "mlperf_tiny")
MODELS = ["anomaly_detection/ad01_fp32.onnx", "keyword_spotting/kws_ref_model_fp32_savedmodel.onnx",
          "keyword_spotting/kws_ref_model_float32.onnx", "image_classification/pretrainedResnet.onnx",
          "visual_wake_words/vww_96_float.onnx"]
RAM_PART, FLASH_PART = 256 * 1024, 1024 * 1024


def main():
    import numpy as np
    import aot
    from aot.firmware import measure
    ap = argparse.ArgumentParser()
    ap.add_argument("--boards", default="qemu-cortex-m4,qemu-cortex-m7,qemu-cortex-m55")
    ap.add_argument("--opt", default="-O2")
    ap.add_argument("--target", default=None, help='default: "c -mcpu=<the board\'s core>"')
    a = ap.parse_args()
    print(f"{'model':32s} {'board':16s} {'flash B':>10s} {'RAM B':>9s} {'RAM, io in ws':>13s} {'stack':>6s} "
          f"{'instructions':>13s}  fits 256K RAM / 1M flash")
    for rel in MODELS:
        p = os.path.join(MLPERF, rel)
        if not os.path.exists(p):
            continue
        for board in a.boards.split(","):
            target = a.target or f"c -mcpu={board.split('-', 1)[1]}"
            with contextlib.redirect_stderr(io.StringIO()):
                res = aot.compile(p, target=target)
                res_io = aot.compile(p, target=target, use_workspace_io=True)
            rng = np.random.default_rng(0)
            feeds = {n: rng.uniform(0, 1, t.shape).astype(t.dtype) for _, n, t in res.plan.inputs}
            rep, _ = measure(res.tar, board, a.opt, inputs=feeds)
            rep_io, _ = measure(res_io.tar, board, a.opt, inputs=feeds)
            stack = next(r["ram"] for r in rep["rows"] if r["part"].startswith("stack"))
            fits = rep["flash"] <= FLASH_PART and min(rep["ram"], rep_io["ram"]) <= RAM_PART
            how = "" if not fits or rep["ram"] <= RAM_PART else " (with io in workspace)"
            print(f"{os.path.basename(rel)[:-5]:32s} {board:16s} {rep['flash']:10,d} {rep['ram']:9,d} "
                  f"{rep_io['ram']:13,d} {stack:6,d} {rep['instructions']:13,d}  {'yes' if fits else 'no'}{how}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
