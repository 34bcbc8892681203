"""The cycle model (aot/cycles.py, boards/cortex_m/qemu_cycles_plugin.c) against the published
arithmetic: micro-benchmarks of known cost run under QEMU with the plugin, and each count is
checked against what the core's manual (or, for cores whose manual has no table, the published
measurements docs/cycles.md cites) gives for them. The expected figures are written here from
those documents, not read from aot/targets/cortex_m_timing.py.

Each benchmark is measured at N and 2N repetitions: the difference is N times the steady-state
cost, free of the harness's fixed part around it.

CI installs the toolchain and QEMU, fetches qemu-plugin.h and sets AOT_REQUIRE_BOARDS=1, so there a
missing tool is a failure, not a skip."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

TOOLS = ("arm-none-eabi-gcc", "qemu-system-arm")
MISSING = [t for t in TOOLS if shutil.which(t) is None]
if MISSING and os.environ.get("AOT_REQUIRE_BOARDS") == "1":
    raise RuntimeError(f"AOT_REQUIRE_BOARDS=1 but {', '.join(MISSING)} not found")


def _header_missing():
    if MISSING:
        return None
    from aot.cycles import plugin_header
    from aot.errors import AotError
    try:
        plugin_header()
        return None
    except AotError as e:
        return str(e)


HEADER = _header_missing()
if HEADER and os.environ.get("AOT_REQUIRE_BOARDS") == "1":
    raise RuntimeError(f"AOT_REQUIRE_BOARDS=1 but {HEADER}")
pytestmark = [pytest.mark.board,
              pytest.mark.skipif(bool(MISSING), reason=f"{', '.join(MISSING)} not installed (CI installs them)"),
              pytest.mark.skipif(bool(HEADER), reason=HEADER or "")]

N = 500


def _program(body, n, setup=""):
    body, setup = body.replace("\n", "\\n"), setup.replace("\n", "\\n")
    return f"""#include "semihost.h"
int main(void) {{
  aot_profile_start();
  __asm__ volatile("{setup}\\n.rept {n}\\n{body}\\n.endr" ::: "r0", "r1", "r2", "r3", "r4", "r5", "lr",
                   "memory", "cc");
  aot_profile_stop();
  return 0;
}}
"""


def steady(board, body, setup="", n=N):
    """Cycles and instructions of n repetitions of `body` (the 2n run less the n run)."""
    from aot.cycles import run_program
    a = run_program(board, _program(body, n, setup))
    b = run_program(board, _program(body, 2 * n, setup))
    return b["cycles"] - a["cycles"], b["instructions_counted"] - a["instructions_counted"]


# Cortex-M4 TRM r0p1, 3.3.1 table 3-1 and 3.3.2 (load/store timings); 7.2.2 table 7-1 (FPU).
# P, the refill after a taken branch, is 1 for a 16-bit target ("1 to 3 depending on the alignment
# and width of the target").
M4_CASES = [
    ("SMLAD, 1 cycle", "smlad r0, r1, r2, r0", 1, 1),
    ("SMLABB, 1", "smlabb r0, r1, r2, r0", 1, 1),
    ("MUL, 1", "mul r0, r1, r0", 1, 1),
    ("SXTB16, 1", "sxtb16 r1, r2", 1, 1),
    ("N independent LDRs take N+1: 1 each after the first", "ldr r3, [sp]", 1, 1),
    ("an LDR through the value just loaded does not pipeline (2); the next LDR pipelines behind it (1)",
     "ldr r3, [sp]\nldr r3, [r3, #0]", 3, 2),
    ("an address from the ALU result just before: 1 + (2 + 1 stall)", "mov r3, sp\nldr r2, [r3]", 4, 2),
    ("STR with an immediate offset, 1", "str r3, [sp, #-8]", 1, 1),
    ("LDM of 4 registers, 1 + N", "ldm sp, {r0, r1, r2, r3}", 5, 1),
    ("PUSH/POP of 2, 1 + N each", "push {r0, r1}\npop {r0, r1}", 6, 2),
    ("B taken to a 16-bit target, 1 + P (P = 1)", "b 1f\nnop\n1:", 2, 1),
    ("B<c> not taken, 1", "cmp r0, r0\nbne 1f\n1:", 2, 2),
    ("B<c> taken, 1 + P", "cmp r0, r0\nbeq 1f\nnop\n1:", 3, 2),
    ("B taken to a word-aligned 32-bit target: 1 + P (P = 1), then 1", "b.n 1f\nnop\n1: add.w r0, r0, #1", 3, 2),
    ("B taken to a 32-bit target at a halfword address: P = 2", "b.n 1f\nnop\nnop\n1: add.w r0, r0, #1\nnop",
     1 + 2 + 1 + 1, 3),
    ("VMLA.F32, 3", "vmla.f32 s0, s1, s2", 3, 1),
    ("VADD.F32, 1", "vadd.f32 s0, s1, s2", 1, 1),
    ("VDIV.F32, 14", "vdiv.f32 s0, s1, s2", 14, 1),
]


@pytest.mark.parametrize("what, body, cycles, insns", M4_CASES, ids=[c[0] for c in M4_CASES])
def test_cortex_m4_micro_benchmarks(what, body, cycles, insns):
    got, n_insns = steady("qemu-cortex-m4", body, setup=".balign 4")
    assert n_insns == N * insns
    assert got == N * cycles, f"{what}: {got / N:.3f} cycles per repetition"


# Cortex-M33 (no Arm table; jnk0le's and SLOTHY's RP2350 measurements): single-cycle loads with a
# 2-cycle load-use latency, a taken branch 3 cycles
M33_CASES = [
    ("SMLAD, 1", "smlad r0, r1, r2, r0", 1),
    ("LDR, 1 (throughput)", "ldr r3, [sp]", 1),
    ("LDR then a use of it: 1 + 1 stall + 1", "ldr r3, [sp]\nadds r3, #1", 3),
    ("B taken, 3", "b 1f\nnop\n1:", 3),
]


@pytest.mark.parametrize("what, body, cycles", M33_CASES, ids=[c[0] for c in M33_CASES])
def test_cortex_m33_micro_benchmarks(what, body, cycles):
    got, _ = steady("qemu-cortex-m33", body)
    assert got == N * cycles, f"{what}: {got / N:.3f} cycles per repetition"


def test_cortex_m7_dual_issue_pairs_independent_instructions_only():
    # an ALU op and an independent load issue together: 1 cycle the pair; a load feeding the next
    # instruction cannot pair with it and waits (LLVM's M7 model: load latency 2)
    got, _ = steady("qemu-cortex-m7", "add r0, r1\nldr r2, [sp]")
    assert got == N * 1
    got, _ = steady("qemu-cortex-m7", "ldr r2, [sp]\nadd r0, r2")
    assert got == N * 3
    got, _ = steady("qemu-cortex-m7", "smlad r0, r1, r2, r0\nsmlad r3, r1, r2, r3")   # one MAC unit
    assert got == N * 2


def test_cortex_m55_helium_beats_and_overlap():
    # Arm's Cortex-M55 model: each 128-bit instruction 2 cycles in its pipe; the next overlaps by
    # one when it is on another pipe (a load after a MAC), not on the same (two loads)
    setup = "mov r0, sp\nsub r0, r0, #64"
    got, _ = steady("qemu-cortex-m55", "vldrb.s8 q0, [r0]", setup)
    assert got == N * 2
    got, _ = steady("qemu-cortex-m55", "vldrb.s8 q0, [r0]\nvmladava.s8 r2, q0, q1", setup)
    assert got == N * 2          # 1 + 1: each overlaps the other's second beat


def test_cortex_m55_low_overhead_loop_end_costs_nothing_after_the_first_iteration():
    from aot.cycles import run_program

    def loop(n):
        return f"""#include "semihost.h"
int main(void) {{
  aot_profile_start();
  __asm__ volatile("mov r0, #{n}\\n dls lr, r0\\n 1: smlad r1, r2, r3, r1\\n smlad r1, r2, r3, r1\\n le lr, 1b"
                   ::: "r0", "r1", "lr", "memory", "cc");
  aot_profile_stop();
  return 0;
}}
"""
    a = run_program("qemu-cortex-m55", loop(100))
    b = run_program("qemu-cortex-m55", loop(200))
    assert b["cycles"] - a["cycles"] == 100 * 2
    assert b["instructions_counted"] - a["instructions_counted"] == 100 * 3


def _fully_connected(mb, rng, tag, x, n_in, n_out, bias_scale, out):
    """An int8 FULLY_CONNECTED of random weights (scale 0.01) and biases from x into a new tensor
    out = (name, scale, zero point) of n_out values."""
    w = mb.tensor(f"w{tag}", [n_out, n_in], "int8", data=rng.integers(-127, 128, (n_out, n_in)).astype(np.int8),
                  scale=0.01, zero_point=0)
    b = mb.tensor(f"b{tag}", [n_out], "int32", data=rng.integers(-100, 100, n_out).astype(np.int32),
                  scale=bias_scale, zero_point=0)
    name, scale, zp = out
    y = mb.tensor(name, [1, n_out], "int8", scale=scale, zero_point=zp)
    mb.op("FULLY_CONNECTED", [x, w, b], [y])
    return y


def small_int8_tflite():
    """An int8 CONV_2D (per-channel weights, ReLU) into a FULLY_CONNECTED: two kernels with DSP
    micro-kernels on the M4."""
    from tflite_build import ModelBuilder
    rng = np.random.default_rng(3)
    mb = ModelBuilder()
    ws = rng.uniform(0.01, 0.03, 8).astype(np.float32)
    x = mb.tensor("input", [1, 8, 8, 3], "int8", scale=0.05, zero_point=-3)
    w = mb.tensor("w", [8, 3, 3, 3], "int8", data=rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8),
                  scale=ws, zero_point=0, quantized_dimension=0)
    bias = mb.tensor("b", [8], "int32", data=rng.integers(-500, 500, 8).astype(np.int32), scale=0.05 * ws,
                     zero_point=0)
    y = mb.tensor("y", [1, 8, 8, 8], "int8", scale=0.08, zero_point=-128)
    mb.op("CONV_2D", [x, w, bias], [y], padding="SAME", fused_activation_function="RELU")
    z = _fully_connected(mb, rng, "f", y, 512, 4, 0.0008, ("z", 0.2, 1))
    return mb.finish(inputs=[x], outputs=[z])


@pytest.mark.parametrize("board", ["qemu-cortex-m4", "qemu-cortex-m33", "qemu-cortex-m7", "qemu-cortex-m55"])
def test_size_cycles_json_totals_and_kernels(tmp_path, board):
    import aot
    path = tmp_path / "m.tflite"
    path.write_bytes(small_int8_tflite())
    tar = tmp_path / "m.tar"
    aot.compile(str(path), str(tar), target=f"c -mcpu={board.split('-', 1)[1]}")
    r = subprocess.run([sys.executable, "-m", "aot", "size", str(tar), "--board", board, "--cycles",
                        "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    model = rep["cycle_model"]
    assert rep["cycles"] == model["cycles"] > 0
    # every cycle attributed: the kernels and the executor add up to the total
    assert sum(k["cycles"] for k in model["kernels"]) + model["executor"]["cycles"] == model["cycles"]
    # the plugin counts what QEMU's -icount counts (less the harness's few instructions around run)
    assert abs(model["instructions_counted"] - rep["instructions"]) <= rep["resolution_instructions"] + 64
    names = {k["name"] for k in model["kernels"]}
    assert any(n.startswith("fused_q") for n in names), names
    assert "zero wait states" in model["memory_model"]
    # the text report names the model and the kernels
    r = subprocess.run([sys.executable, "-m", "aot", "size", str(tar), "--board", board, "--cycles"],
                       capture_output=True, text=True)
    core = board.split("-", 1)[1]
    assert r.returncode == 0 and "estimated cycles per inference" in r.stdout and f"{core} timing model" in r.stdout


def test_flash_wait_states_add_per_load(tmp_path):
    import aot
    from aot.cycles import board_model
    from aot.firmware import measure
    from boards import load_board
    path = tmp_path / "m.tflite"
    path.write_bytes(small_int8_tflite())
    tar = aot.compile(str(path), target="c -mcpu=cortex-m4").tar
    b = load_board("qemu-cortex-m4")
    c = [measure(tar, "qemu-cortex-m4", cycles=board_model(b, ws))[0]["cycle_model"] for ws in (0, 1, 3)]
    loads = c[1]["cycles"] - c[0]["cycles"]
    assert loads > 0                                  # the constants live in flash and are loaded
    assert c[2]["cycles"] - c[0]["cycles"] == 3 * loads
    assert c[1]["wait_cycles"] == loads and "1 flash wait state" in c[1]["memory_model"]


def test_run_profile_prints_cycles_and_outputs_stay_exact(tmp_path):
    import aot
    from tflm_oracle import run_tflm
    path = tmp_path / "m.tflite"
    data = small_int8_tflite()
    path.write_bytes(data)
    tar = tmp_path / "m.tar"
    aot.compile(str(path), str(tar), target="c -mcpu=cortex-m4")
    x = np.random.default_rng(1).integers(-128, 128, (1, 8, 8, 3)).astype(np.int8)
    np.savez(tmp_path / "in.npz", input=x)
    r = subprocess.run([sys.executable, "-m", "aot", "run", str(tar), "--board", "qemu-cortex-m4", "--inputs",
                        str(tmp_path / "in.npz"), "--outputs", str(tmp_path / "out.npz"), "--profile"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "estimated cycles per inference" in r.stdout
    out = dict(np.load(tmp_path / "out.npz"))
    ref = run_tflm(data, [x])[0]
    assert np.array_equal(next(iter(out.values())), ref)


def test_cycle_options_refused_clearly(tmp_path):
    import aot
    path = tmp_path / "m.tflite"
    path.write_bytes(small_int8_tflite())
    tar = tmp_path / "m.tar"
    aot.compile(str(path), str(tar), target="c -mcpu=cortex-m4")
    for args, msg in [(["size", str(tar), "--board", "qemu-cortex-m4", "--flash-wait-states", "2"], "add --cycles"),
                      (["size", str(tar), "--board", "qemu-cortex-m4", "--cycles", "--flash-wait-states", "99"],
                       "0 to 15")]:
        r = subprocess.run([sys.executable, "-m", "aot", *args], capture_output=True, text=True)
        assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_kernels_of_a_named_module_are_attributed(tmp_path):
    """tvmgen_<mod>_ with a module name of the user's: the kernels are found by it, not by 'default'."""
    import aot
    from aot.cycles import board_model
    from aot.firmware import measure
    from boards import load_board
    path = tmp_path / "m.tflite"
    path.write_bytes(small_int8_tflite())
    tar = aot.compile(str(path), target="c -mcpu=cortex-m4", model_name="my_net").tar
    model = measure(tar, "qemu-cortex-m4", cycles=board_model(load_board("qemu-cortex-m4")))[0]["cycle_model"]
    assert model["kernels"] and model["executor"]["cycles"] < model["cycles"] / 10


def test_a_shared_micro_kernel_called_from_an_inlined_kernel_is_that_kernels(tmp_path):
    """Two one-row fully connected layers on the M4 share one out-of-line fc_s8x4t body; the
    first kernel is inlined into the executor and its call of that body sits in a block that
    began in the executor's own code. The callee's cycles go to the call site's kernel (the
    block's last instruction names it), not to the executor."""
    import aot
    from aot.cycles import board_model
    from aot.firmware import measure
    from boards import load_board
    from tflite_build import ModelBuilder
    rng = np.random.default_rng(4)
    mb = ModelBuilder()
    x = mb.tensor("x", [1, 256], "int8", scale=0.05, zero_point=3)
    y = _fully_connected(mb, rng, "0", x, 256, 64, 0.0005, ("y", 0.3, -2))
    z = _fully_connected(mb, rng, "1", y, 64, 8, 0.003, ("z", 0.2, 1))
    res = aot.compile(mb.finish(inputs=[x], outputs=[z]), target="c -mcpu=cortex-m4")
    assert {c.func.attrs.get("schedule") for c in res.plan.calls} == {"fc_s8x4t (dsp)"}
    model = measure(res.tar, "qemu-cortex-m4", cycles=board_model(load_board("qemu-cortex-m4")))[0]["cycle_model"]
    first = next(k for k in model["kernels"] if k["name"] == "fused_qdense")
    assert model["executor"]["cycles"] < 400 and first["cycles"] > 256 * 64 // 2, model


@pytest.mark.board
def test_the_block_report_adds_up_to_the_total(tmp_path, monkeypatch):
    """AOT_CYCLES_BLOCKS=PATH: each block's address, instructions, executions and cycles in the
    window (a taken branch's refill its block's); they add up to the window's totals."""
    path = tmp_path / "blocks.txt"
    monkeypatch.setenv("AOT_CYCLES_BLOCKS", str(path))
    from aot.cycles import run_program
    r = run_program("qemu-cortex-m4", _program("smlad r0, r1, r2, r0", N))
    rows = [[int(x, 16) if k == 0 else int(x) for k, x in enumerate(line.split())]
            for line in path.read_text().splitlines()]
    assert sum(c for _, _, _, c in rows) == r["cycles"]
    assert sum(n * runs for _, n, runs, _ in rows) == r["instructions_counted"]
