"""The four MLPerf Tiny int8 .tflite models: workspace + input/output bytes, and the workspace with
the inputs and outputs planned into it (--use-workspace-io), next to TensorFlow Lite Micro's arena
for the same file (measured in the same run with the tflite-micro wheel's
RecordingMicroAllocator; its arena holds inputs and outputs too), and on the emulated boards
the flash, RAM and instructions per inference of our firmware (arm-none-eabi-gcc -O2, QEMU
-icount), each checked bit-exact against TFLM on the input it ran.

The board runs compile for the board's core (c -mcpu=cortex-m4 / cortex-m55: the arm_cpu
schedule, int8 dot products as DSP or Helium micro-kernels); --plain compiles them for "c" (the
plain CPU rules) instead, for a before/after. Instructions per MAC counts the multiply-accumulates
of the convolutions and fully connected layers.

Each board run also gives estimated cycles (the cycle model, docs/cycles.md, zero wait states),
printed next to the best published MLPerf Tiny closed-division result for that core (latency x
clock). --tflm DIR measures a TensorFlow Lite Micro + CMSIS-NN build of the same models in the
same run: DIR/<board>/<kws|vww|ic|ad>.elf (or DIR/m4/... by core), firmware that calls aot_profile_start/stop around
Invoke (boards/cortex_m/semihost.h); docs/cycles.md says how the calibration's was built.

  python bench/bench_int8.py [--boards qemu-cortex-m4,qemu-cortex-m33,qemu-cortex-m7,qemu-cortex-m55]
                             [--plain] [--tflm DIR] [--no-cycles]
"""
import argparse
import contextlib
import io
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
MLPERF = os.path.join(ROOT, "..", "shared", "models", "mlperf_tiny")
MODELS = ["anomaly_detection/ad01_int8.tflite", "keyword_spotting/kws_ref_model.tflite",
          "visual_wake_words/vww_96_int8.tflite", "image_classification/pretrainedResnet_quant.tflite"]
GOAL = 0.8
SHORT = {"anomaly_detection/ad01_int8.tflite": "ad", "keyword_spotting/kws_ref_model.tflite": "kws",
         "visual_wake_words/vww_96_int8.tflite": "vww", "image_classification/pretrainedResnet_quant.tflite": "ic"}
# The best published MLPerf Tiny closed-division CPU results, in millions of cycles (latency x the
# board's clock): M4 NUCLEO-L4R5ZI @120 MHz (ST X-CUBE-AI 9.0, v1.2; AD Plumerai, v1.1), M33
# NUCLEO-U575ZI-Q @160 MHz (X-CUBE-AI 10.2, v1.3; IC Plumerai; AD Bosch HALE), M7 NUCLEO-H7A3ZI-Q
# @280 MHz (X-CUBE-AI 9.0, v1.2; AD Bosch HALE). None is published for the M55 without an NPU.
LEADERS = {"cortex-m4": {"kws": 5.18, "vww": 10.67, "ic": 19.82, "ad": 0.486},
           "cortex-m33": {"kws": 4.64, "vww": 9.48, "ic": 16.69, "ad": 0.495},
           "cortex-m7": {"kws": 3.17, "vww": 6.67, "ic": 11.44, "ad": 0.303}}


def count_macs(graph):
    """Multiply-accumulates of the QConv and QDense nodes: output elements x taps x input channels
    per group (or x K)."""
    import numpy as np
    total = 0
    for n in graph.nodes:
        out = int(np.prod(n.outputs[0].type.shape))
        if n.op == "QDense":
            total += out * n.inputs[1].type.shape[1]
        elif n.op == "QConv":
            w = n.inputs[1].type.shape          # OHWI: taps x input channels per group
            total += out * int(np.prod(w[1:]))
    return total


def main():
    import numpy as np
    import aot
    from aot.firmware import measure
    from bench_memory import tflm_arena
    ap = argparse.ArgumentParser()
    ap.add_argument("--boards", default="qemu-cortex-m4,qemu-cortex-m33,qemu-cortex-m7,qemu-cortex-m55")
    ap.add_argument("--tflm", metavar="DIR", help="TFLM+CMSIS-NN firmware to measure alongside: DIR/<board>/<model>.elf")
    ap.add_argument("--no-cycles", action="store_true", help="instructions only (no cycle model)")
    ap.add_argument("--opt", default="-O2")
    ap.add_argument("--plain", action="store_true", help="board builds for target 'c' (no micro-kernels)")
    a = ap.parse_args()
    # two like-for-like totals: ws+io (the application owns separate input/output buffers) and the
    # workspace with the inputs and outputs planned into it (--use-workspace-io), which is what
    # TFLM's arena is: it holds the model's inputs and outputs and reuses the input's bytes
    print(f"{'model':28s} {'workspace':>9s} {'io':>6s} {'ws+io':>7s} {'ws, io in':>9s} {'TFLM arena':>10s} "
          f"{'ws+io/TFLM':>10s} {'io-in/TFLM':>10s} {'goal 0.8':>8s}")
    results = []
    for rel in MODELS:
        p = os.path.join(MLPERF, rel)
        with contextlib.redirect_stderr(io.StringIO()):
            res = aot.compile(p)
        plan = res.plan
        io_bytes = sum(t.nbytes for _, _, t in plan.inputs) + sum(t.nbytes for _, _, t in plan.outputs)
        with contextlib.redirect_stderr(io.StringIO()):
            io_in = aot.compile(p, use_workspace_io=True).plan.workspace_size
        arena = tflm_arena(p)
        ratio = (plan.workspace_size + io_bytes) / arena if isinstance(arena, int) else None
        ratio2 = io_in / arena if isinstance(arena, int) else None
        print(f"{os.path.basename(rel)[:-7]:28s} {plan.workspace_size:9,d} {io_bytes:6,d} "
              f"{plan.workspace_size + io_bytes:7,d} {io_in:9,d} {str(arena):>10s} "
              f"{'-' if ratio is None else f'{ratio:.3f}':>10s} {'-' if ratio2 is None else f'{ratio2:.3f}':>10s} "
              f"{('ws+io' if ratio <= GOAL else 'io-in' if ratio2 <= GOAL else 'not met') if ratio else '-':>8s}",
              flush=True)
        results.append((rel, res))
    print()
    print(f"{'model':28s} {'board':16s} {'flash B':>9s} {'RAM B':>8s} {'instructions':>13s} {'MACs':>11s} "
          f"{'instr/MAC':>9s} {'est. cycles':>12s} {'MAC/cyc':>7s} {'leader':>8s} {'ours/ldr':>8s} "
          f"{'TFLM instr':>11s} {'TFLM cyc':>11s} {'TFLM/ours':>9s}  matches TFLM")
    from tflite_micro.python.tflite_micro import runtime
    from aot.cycles import board_model, run_elf
    from boards import load_board
    for rel, res in results:
        x = res.graph.inputs[0]
        feed = np.random.default_rng(0).integers(-128, 128, x.type.shape).astype(np.int8)
        it = runtime.Interpreter.from_file(os.path.join(MLPERF, rel), arena_size=8 * 1024 * 1024)
        it.set_input(feed, 0)
        it.invoke()
        ref = it.get_output(0)
        macs = count_macs(res.graph)
        for board in a.boards.split(","):
            if not a.plain:
                with contextlib.redirect_stderr(io.StringIO()):
                    res = aot.compile(os.path.join(MLPERF, rel), target=f"c -mcpu={board.split('-', 1)[1]}")
            b = load_board(board)
            model = None if a.no_cycles else board_model(b)
            rep, outs = measure(res.tar, board, a.opt, inputs={x.name: feed}, cycles=model)
            same = outs is not None and np.array_equal(outs[res.graph.output_names[0]], ref)
            cyc = rep.get("cycles")
            leader = LEADERS.get(b["core"], {}).get(SHORT[rel])
            tflm = None
            # DIR/qemu-cortex-m4/kws.elf or DIR/m4/kws.elf
            elfs = [os.path.join(a.tflm, d, SHORT[rel] + ".elf") for d in (board, board.rsplit("-", 1)[1])] \
                if a.tflm else []
            elf = next((e for e in elfs if os.path.exists(e)), None)
            if elf:
                tflm = run_elf(board, elf, model.timing if model else None)
            cols = [f"{cyc:,d}" if cyc else "-", f"{macs / cyc:.3f}" if cyc else "-",
                    f"{leader:.3f}M" if leader else "-", f"{cyc / (leader * 1e6):.2f}" if cyc and leader else "-",
                    f"{tflm['instructions_counted']:,d}" if tflm else "-", f"{tflm['cycles']:,d}" if tflm else "-",
                    f"{tflm['cycles'] / cyc:.2f}" if tflm and cyc else "-"]
            print(f"{os.path.basename(rel)[:-7]:28s} {board:16s} {rep['flash']:9,d} {rep['ram']:8,d} "
                  f"{rep['instructions']:13,d} {macs:11,d} {rep['instructions'] / macs:9.2f} "
                  f"{cols[0]:>12s} {cols[1]:>7s} {cols[2]:>8s} {cols[3]:>8s} {cols[4]:>11s} {cols[5]:>11s} "
                  f"{cols[6]:>9s}  {'yes' if same else 'NO'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
