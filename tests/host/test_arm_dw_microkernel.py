"""The int8 depthwise micro-kernel (aot/tir/intrin/arm_dw.py, rule aot/schedules/arm_dw.py): a
pixel's channels, window and per-channel requantisation as one call, in Helium (cortex-m55),
DSP SIMD32 (cortex-m4) and plain C.

Each model is one DEPTHWISE_CONV_2D built here (tests/tflite_build.py) on shapes that reach every
tail: channel counts 1, 3, 15, 16, 17, 33 (the Helium blocks of 8 and the DSP's words of
4), SAME padding (clipped windows at every border), stride 2, dilation 2, nonzero and extreme
input zero points, per-channel scales spread over four decades so that the shifts go both
ways (a left shift where the effective scale passes 1/2), and two cases whose shifts all go right
(the DSP cores' folded requantisation from dw_s8f's table; a table with one left shift takes
the exact form throughout). Every output is compared bit for bit
with the tflite-micro wheel, on the host (the plain body, under ASan/UBSan) and on the emulated
boards; a depth multiplier of 2 keeps the other rules.
"""
import contextlib
import io
import shutil
import subprocess
import tarfile

import numpy as np
import pytest

from tflite_build import ModelBuilder
from tflm_oracle import run_tflm, tflm_available
from conftest import is_staged

tflm = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
# the recorded choice per extension: the DSP cores take dw_s8w (dw_s8f's requantisation from the
# table, aot/schedules/requant_table.py, over weights widened at compile time) for calls of whole
# groups of four channels, dw_s8f otherwise; Helium dw_s8
DW_SCHEDULE = {"dsp": "dw_s8w (dsp)", "mve": "dw_s8 (mve)"}
DSP_SCHEDULES = ("dw_s8w (dsp)", "dw_s8f (dsp)")


def dw_schedule(variant):
    return DW_SCHEDULE.get(variant, f"dw_s8 ({variant})")


def dw_schedules(variant):
    """Those a variant's depthwise call may record (the DSP cores': dw_s8f where a call's channels
    are no whole groups of four)."""
    return DSP_SCHEDULES if variant == "dsp" else (dw_schedule(variant),)

BOARDS = {"qemu-cortex-m4": "dsp", "qemu-cortex-m55": "mve"}


def dw_model(H, W, C, k, stride, padding, mult=1, dilation=1, x_zp=-3, act="NONE", seed=0, decades=(-4, 1.3)):
    rng = np.random.default_rng(seed)
    O = C * mult
    mb = ModelBuilder()
    x = mb.tensor("x", [1, H, W, C], "int8", scale=0.05, zero_point=x_zp)
    ws = (10.0 ** rng.uniform(*decades, O)).astype(np.float32)           # per channel, shifts both ways
    w = mb.tensor("w", [1, k, k, O], "int8", data=rng.integers(-127, 128, (1, k, k, O)).astype(np.int8),
                  scale=ws, zero_point=[0] * O, quantized_dimension=3)
    b = mb.tensor("b", [O], "int32", data=rng.integers(-5000, 5000, O).astype(np.int32), scale=0.05 * ws,
                  zero_point=[0] * O)
    ek = (k - 1) * dilation + 1
    Ho = -(-H // stride) if padding == "SAME" else (H - ek) // stride + 1
    Wo = -(-W // stride) if padding == "SAME" else (W - ek) // stride + 1
    y = mb.tensor("y", [1, Ho, Wo, O], "int8", scale=0.4, zero_point=5)
    mb.op("DEPTHWISE_CONV_2D", [x, w, b], [y], padding=padding, stride_h=stride, stride_w=stride,
          depth_multiplier=mult, dilation_h_factor=dilation, dilation_w_factor=dilation,
          fused_activation_function=act)
    return mb.finish(inputs=[x], outputs=[y]), (1, H, W, C)


def conv1_model(H, W, O, kh, kw, stride, padding, x_zp=-128, seed=1):
    """A CONV_2D whose input has one channel (KWS's first layer): every output channel reads it."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    x = mb.tensor("x", [1, H, W, 1], "int8", scale=0.05, zero_point=x_zp)
    ws = (10.0 ** rng.uniform(-4, 1, O)).astype(np.float32)
    w = mb.tensor("w", [O, kh, kw, 1], "int8", data=rng.integers(-127, 128, (O, kh, kw, 1)).astype(np.int8),
                  scale=ws, zero_point=[0] * O, quantized_dimension=0)
    b = mb.tensor("b", [O], "int32", data=rng.integers(-5000, 5000, O).astype(np.int32), scale=0.05 * ws,
                  zero_point=[0] * O)
    Ho = -(-H // stride) if padding == "SAME" else (H - kh) // stride + 1
    Wo = -(-W // stride) if padding == "SAME" else (W - kw) // stride + 1
    y = mb.tensor("y", [1, Ho, Wo, O], "int8", scale=0.4, zero_point=-7)
    mb.op("CONV_2D", [x, w, b], [y], padding=padding, stride_h=stride, stride_w=stride,
          fused_activation_function="RELU")
    return mb.finish(inputs=[x], outputs=[y]), (1, H, W, 1)


@pytest.fixture(autouse=True)
def _no_gather(monkeypatch):
    """A one-channel conv's windows are gathered first on these cores (aot/schedules/arm_gather.py,
    tested in test_microkernels.py); switched off here so that the broadcast cases test dw_s8."""
    from aot.schedules import arm_gather
    monkeypatch.setattr(arm_gather, "gather_nest", lambda *a: (None, None, None))
    monkeypatch.setattr(arm_gather, "_short_rows", lambda *a: False)      # the DSP cores' scratch path too


# name -> (model, the variants the rule gives it)
CASES = {
    # one input channel broadcast to every output channel (a_k = 0), KWS's 10x4 stride-2 window:
    # Helium only (the DSP body is run below with the rule's choice overridden)
    "conv1_o17_10x4_same_s2": (lambda: conv1_model(13, 7, 17, 10, 4, 2, "SAME"), {"mve"}),
    "conv1_o8_3x3_valid_s1": (lambda: conv1_model(6, 5, 8, 3, 3, 1, "VALID", x_zp=9), {"mve"}),
    "conv1_o3_3x3_same_s1": (lambda: conv1_model(5, 6, 3, 3, 3, 1, "SAME"), {"mve"}),
    # one channel: a plain conv with its requantisation folded to constants, left to the other rules
    "c1_same_s1": (lambda: dw_model(5, 6, 1, 3, 1, "SAME"), set()),
    "c3_same_s2": (lambda: dw_model(7, 8, 3, 3, 2, "SAME", x_zp=-128), {"mve", "dsp"}),
    "c15_valid_s1": (lambda: dw_model(6, 5, 15, 3, 1, "VALID", x_zp=127, act="RELU"), {"mve", "dsp"}),
    "c16_same_s2": (lambda: dw_model(9, 7, 16, 3, 2, "SAME", act="RELU6"), {"mve", "dsp"}),
    "c17_same_s1": (lambda: dw_model(5, 5, 17, 3, 1, "SAME", x_zp=0), {"mve", "dsp"}),
    "c33_valid_s2": (lambda: dw_model(9, 9, 33, 3, 2, "VALID", x_zp=100), {"mve", "dsp"}),
    "c33_5x5_same_s1": (lambda: dw_model(6, 7, 33, 5, 1, "SAME", x_zp=-77), {"mve", "dsp"}),
    "c17_dilation2_same": (lambda: dw_model(8, 9, 17, 3, 1, "SAME", dilation=2), {"mve", "dsp"}),
    "c8_mult2_same": (lambda: dw_model(6, 6, 8, 3, 1, "SAME", mult=2), set()),     # depth multiplier: skipped
    # every shift to the right: the DSP cores' folded requantisation (dw_s8f's table says fast)
    "c19_same_s1_right_shifts": (lambda: dw_model(6, 5, 19, 3, 1, "SAME", x_zp=-128, act="RELU6", decades=(-3, 0.5)),
                                 {"mve", "dsp"}),
    "c16_valid_s2_right_shifts": (lambda: dw_model(7, 9, 16, 3, 2, "VALID", x_zp=55, decades=(-2, 0.5)),
                                  {"mve", "dsp"}),
    # whole groups of four channels: dw_s8w's widened weights on the DSP cores, its clipped
    # windows (SAME: every border), stride 2, the generic window loop (5x5), both requantisations
    "c12_same_s2": (lambda: dw_model(11, 10, 12, 3, 2, "SAME", x_zp=-5, seed=3), {"mve", "dsp"}),
    "c8_same_s2_odd": (lambda: dw_model(6, 9, 8, 3, 2, "SAME", x_zp=-128, act="RELU", seed=4), {"mve", "dsp"}),
    "c4_valid_s1": (lambda: dw_model(5, 6, 4, 3, 1, "VALID", x_zp=127, seed=5), {"mve", "dsp"}),
    "c20_5x5_same_s1": (lambda: dw_model(7, 6, 20, 5, 1, "SAME", x_zp=33, seed=6), {"mve", "dsp"}),
    "c24_same_s1_right_shifts": (lambda: dw_model(6, 7, 24, 3, 1, "SAME", x_zp=-128, act="RELU6", decades=(-3, 0.5),
                                                  seed=7), {"mve", "dsp"}),
    "c32_same_s2_right_shifts": (lambda: dw_model(8, 8, 32, 3, 2, "SAME", x_zp=17, decades=(-2, 0.5), seed=8),
                                 {"mve", "dsp"}),
}
FOLDED = {"c19_same_s1_right_shifts", "c16_valid_s2_right_shifts", "c24_same_s1_right_shifts",
          "c32_same_s2_right_shifts"}


def _feeds(shape, n=3):
    rng = np.random.default_rng(11)
    feeds = [rng.integers(-128, 128, shape).astype(np.int8) for _ in range(n)]
    return feeds + [np.full(shape, -128, np.int8), np.full(shape, 127, np.int8)]


def _check(res, feeds, model, **run):
    import aot
    x, out = res.graph.inputs[0].name, res.graph.output_names[0]
    for k, feed in enumerate(feeds):
        ref = run_tflm(model, [feed])[0]
        got = aot.run(res, {x: feed}, **run)[out]
        np.testing.assert_array_equal(got, ref, err_msg=f"input {k}")


def _schedules(res):
    return {c.func.attrs.get("schedule") for c in res.plan.calls}


def test_dw_s8_refuses_a_nest_that_is_not_the_pattern():
    """The channel loop must read every operand consecutively: a channel stride of 2 is refused."""
    from aot.tir.expr import Cast, Const, Load, Var
    from aot.tir.schedule import ScheduleError, tensorize
    from aot.tir.stmt import Allocate, Buffer, For, Seq, Store
    x, w, o = Buffer("x", "int8", (3, 16)), Buffer("w", "int8", (3, 8)), Buffer("o", "int8", (8,))
    acc = Buffer("acc", "int32", (1,), "local")
    c, r = Var("c"), Var("r")
    prod = (Cast("int32", Load(x, (r, c * 2))) + Const(3, "int32")) * Cast("int32", Load(w, (r, c)))
    nest = For(c, 0, 8, Allocate(acc, Seq([Store(acc, 0, Const(0, "int32")),
                                           For(r, 0, 3, Store(acc, 0, Load(acc, 0) + prod)),
                                           Store(o, c, Cast("int8", Load(acc, 0)))])))
    with pytest.raises(ScheduleError, match="not TFLite's per-channel requantisation|not contiguous"):
        tensorize(nest, c, "dw_s8")


def test_the_verifier_checks_the_whole_window_a_dw_call_reads():
    """A dw_s8 call whose window rows run past the input is refused, though its first element is
    in; with a broadcast input (a_k = 0) the channels do not move along it."""
    from aot.tir.expr import Call, Const, Load
    from aot.tir.stmt import Buffer, Evaluate, PrimFunc
    from aot.tir.verify import AccessError, verify_accesses
    w, o = Buffer("w", "int8", (36,)), Buffer("o", "int8", (4,))
    bias, m, s = (Buffer(n, "int32", (4,)) for n in ("bias", "m", "s"))

    def func(rows, a_k, x_size):
        # c kh kw a_row a_col b_row b_col a_k off zp lo hi: a 3-column window of 4 channels
        x = Buffer("x", "int8", (x_size,))
        i = [Const(v, "int32") for v in (4, rows, 3, 12, 4, 12, 4, a_k, 0, 0, -128, 127)]
        call = Call("dw_s8", [Load(o, 0), Load(x, 0), Load(w, 0), Load(bias, 0), Load(m, 0), Load(s, 0), *i],
                    "int32")
        return PrimFunc("f", [x, w, bias, m, s, o], Evaluate(call), 5)
    assert verify_accesses(func(3, 1, 36)).checked > 0          # last element 2*12 + 2*4 + 3 = 35
    with pytest.raises(AccessError, match=r"x\[0..35\]|x\[.*\] is outside"):
        verify_accesses(func(3, 1, 35))
    with pytest.raises(AccessError, match=r"x\[0..35\]|x\[.*\] is outside"):
        verify_accesses(func(4, 1, 36))
    assert verify_accesses(func(3, 0, 33)).checked > 0          # broadcast: last element 2*12 + 2*4
    with pytest.raises(AccessError, match=r"x\[0..31\]|x\[.*\] is outside"):
        verify_accesses(func(3, 0, 32))


@tflm
@pytest.mark.parametrize("name", sorted(CASES))
def test_dw_plain_body_on_the_host_is_bit_exact(name):
    import aot
    build, takes = CASES[name]
    model, shape = build()
    res = aot.compile(model, target="c -mcpu=cortex-m55", in_place=False)
    assert ("dw_s8 (mve)" in _schedules(res)) == ("mve" in takes)
    _check(res, _feeds(shape), model, sanitize=True)


@tflm
@pytest.mark.parametrize("name", sorted(k for k, v in CASES.items() if "dsp" in v[1]))
def test_the_dsp_cores_call_reads_widened_weights_for_whole_groups_and_its_plain_body_is_exact(name):
    """The DSP compile takes dw_s8w (its weights DwWide: int16, every four channels' tap 0, 2, 1,
    3) exactly where a call's channels are whole groups of four, dw_s8f elsewhere; its plain
    body (the host's) against TFLM, on the layout the executor linked."""
    import aot
    from aot.schedules.arm_dw import DwWide
    model, shape = CASES[name][0]()
    res = aot.compile(model, target="c -mcpu=cortex-m4", in_place=False)
    (call,) = [c for c in res.plan.calls if c.func.attrs.get("schedule") in DSP_SCHEDULES]
    C = call.func.params[call.func.num_inputs].shape[-1]
    assert call.func.attrs["schedule"] == ("dw_s8w (dsp)" if C % 4 == 0 else "dw_s8f (dsp)")
    if C % 4 == 0:
        (layout,) = [v for v in call.func.attrs["layouts"].values() if isinstance(v, DwWide)]
        assert layout.row == C
    _check(res, _feeds(shape), model, sanitize=True)


@pytest.mark.parametrize("mcpu,variant", [("cortex-m4", "dsp"), ("cortex-m55", "mve"), ("cortex-m0", None)])
def test_each_target_gets_its_depthwise_schedule_and_info_names_it(mcpu, variant, tmp_path):
    import aot
    from aot.cli import main
    model, _ = CASES["c16_same_s2"][0]()
    res = aot.compile(model, target=f"c -mcpu={mcpu}", in_place=False)
    assert (dw_schedule(variant) in _schedules(res)) == (variant is not None)
    tar = tmp_path / "m.tar"
    tar.write_bytes(res.tar)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["info", str(tar)]) == 0
    assert (dw_schedule(variant) in buf.getvalue()) == (variant is not None)


ARM_SYSROOT = "/usr/lib/arm-none-eabi"      # newlib's headers, for clang targeting the cores
CLANG_ARM = ["--target=arm-none-eabi", "-mthumb", "-mfloat-abi=hard", f"--sysroot={ARM_SYSROOT}"]


@pytest.mark.parametrize("cc,flags", [("gcc", []), ("clang", []),
                                      ("arm-none-eabi-gcc", ["-mcpu=cortex-m4", "-mfloat-abi=hard"]),
                                      ("arm-none-eabi-gcc", ["-mcpu=cortex-m55", "-mfloat-abi=hard"]),
                                      ("clang", [*CLANG_ARM, "-mcpu=cortex-m4"]),
                                      ("clang", [*CLANG_ARM, "-mcpu=cortex-m55"])])
def test_dw_kernels_compile_warning_free(cc, flags, tmp_path):
    """Every body of the static inline function (the one the flags select, its helpers only
    where used: clang warns of an unused static function)."""
    import os
    import aot
    if shutil.which(cc) is None:
        pytest.skip(f"{cc} is not installed")
    if "--target=arm-none-eabi" in flags and not os.path.isdir(ARM_SYSROOT):
        pytest.skip("no arm-none-eabi sysroot for clang")
    mcpu = next((f.split("=")[1] for f in flags if f.startswith("-mcpu=")), "cortex-m55")
    # 33 channels: dw_s8f on the DSP cores; 12: dw_s8w
    for case, dsp in (("c33_valid_s2", "aot_dw_s8f("), ("c12_same_s2", "aot_dw_s8w(")):
        model, _ = CASES[case][0]()
        res = aot.compile(model, target=f"c -mcpu={mcpu}", in_place=False)
        with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
            t.extractall(tmp_path / case)
        src = tmp_path / case / "codegen/host/src/default_lib1.c"
        assert (dsp if mcpu == "cortex-m4" else "aot_dw_s8(") in src.read_text()
        r = subprocess.run([cc, *STRICT, "-O2", *flags, "-I", str(tmp_path / case / "codegen/host/include"),
                            "-I", str(tmp_path / case / "runtime/include"), "-c", str(src), "-o",
                            str(tmp_path / f"{case}.o")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


# --- staged in place (issue 16): a block of channels at a time, so that the call has a run of them

def dw_chain(H, W, C, layers="ddd", seed=3, strides=None):
    """SAME 3x3 depthwise convs (d) and 1x1 pointwise convs C -> C (p) in a row, all of one
    size: each but the first (it reads the model's input) and the last (it writes the output)
    has an input that dies there, as large as its output, so it is staged to write over it.
    strides: each layer's (a depthwise conv of stride 2 halves the map, its input larger than
    its output)."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    t = x = mb.tensor("x", [1, H, W, C], "int8", scale=0.05, zero_point=-3)
    shape0 = (1, H, W, C)
    for k, kind in enumerate(layers):
        shape = [1, 3, 3, C] if kind == "d" else [C, 1, 1, C]
        ws = (10.0 ** rng.uniform(-3, 0.5 if kind == "d" else -0.5, C)).astype(np.float32)
        w = mb.tensor(f"w{k}", shape, "int8", data=rng.integers(-127, 128, shape).astype(np.int8),
                      scale=ws, zero_point=[0] * C, quantized_dimension=3 if kind == "d" else 0)
        b = mb.tensor(f"b{k}", [C], "int32", data=rng.integers(-3000, 3000, C).astype(np.int32), scale=0.05 * ws,
                      zero_point=[0] * C)
        st = strides[k] if strides else 1
        H, W = -(-H // st), -(-W // st)
        y = mb.tensor(f"y{k}", [1, H, W, C], "int8", scale=0.05, zero_point=-3 + k)
        act = "RELU6" if k == 1 else "NONE"
        if kind == "d":
            mb.op("DEPTHWISE_CONV_2D", [t, w, b], [y], padding="SAME", stride_h=st, stride_w=st, depth_multiplier=1,
                  fused_activation_function=act)
        else:
            mb.op("CONV_2D", [t, w, b], [y], padding="SAME", stride_h=1, stride_w=1, fused_activation_function=act)
        t = y
    return mb.finish(inputs=[x], outputs=[t]), shape0


def _dw_func(model):
    """The plain loop nest of the model's second depthwise conv (the one staged)."""
    from aot.compiler import Options, fuse_and_order, run_passes
    from aot.frontend import import_model
    from aot.te.lower import lower_group
    graph = run_passes(import_model(model), lambda msg: None)
    groups = [g for g in fuse_and_order(graph, Options(), lambda msg: None) if not g.alias]
    return lower_group(groups[1], "k")[0]


def test_blocked_staging_is_proven_and_a_block_reading_its_neighbour_refused():
    """Staged 8 of 32 channels at a time, each block reads only its own channels: proven. A read
    one channel down reaches the block before, already written back: refused; so is a block
    loop running past its block."""
    from aot.schedules.inplace_conv import stage_in_place
    from aot.tir.expr import Const, Load, transform
    from aot.tir.inplace import writes_over_staged
    from aot.tir.stmt import For, StmtMutator, map_exprs, walk_stmts
    model, _ = dw_chain(5, 4, 32)
    func = _dw_func(model)
    out = len(func.params) - 1
    staged, n = stage_in_place(func, 0, out, block=8)
    i, o = staged.params[0], staged.params[out]
    assert n == 5 * 4 * 8
    assert writes_over_staged(staged, [i], o)
    assert stage_in_place(func, 0, out, block=5)[1] == 5 * 4          # 32 is no multiple of 5: by planes

    def down(e):
        if isinstance(e, Load) and e.buffer is i:
            return Load(i, e.indices[:-1] + (e.indices[-1] - Const(1, "int32"),))
        return None
    shifted = staged.with_body(map_exprs(staged.body, lambda e: transform(e, down)))
    assert not writes_over_staged(shifted, [i], o)
    block = next(x for x in walk_stmts(staged.body) if isinstance(x, For) and x.var.name.endswith("_i"))

    class Widen(StmtMutator):
        def visit_For(self, s):
            body = self.visit(s.body)
            if s is block:
                return For(s.var, s.min, Const(9, "int32"), body, s.kind)
            return s.with_body(body)
    assert not writes_over_staged(staged.with_body(Widen().visit(staged.body)), [i], o)


@pytest.mark.parametrize("mcpu,variant,C,block", [("cortex-m4", "dsp", 64, 16), ("cortex-m55", "mve", 64, 16),
                                                  ("cortex-m55", "mve", 48, 8), ("cortex-m55", "mve", 36, 4),
                                                  ("cortex-m55", "mve", 8, 2), ("cortex-m4", None, 8, 1),
                                                  ("cortex-m55", None, 33, 1), ("cortex-m0", None, 64, 1),
                                                  (None, None, 64, 8)])
def test_a_staged_depthwise_conv_keeps_its_micro_kernel(mcpu, variant, C, block):
    """In place, the middle conv is staged 16 channels at a time where dw_s8 runs (its scratch
    16 planes), fewer where the scratch would pass a quarter of the output or C is no multiple,
    one plane on other targets or odd C (Helium takes blocks down to 2 channels, the DSP body
    down to 4; the host, aot/schedules/x86.py: 8, its SIMD lanes); the workspace is one tensor
    and the scratch."""
    import aot
    model, _ = dw_chain(6, 5, C)
    res = aot.compile(model, target=f"c -mcpu={mcpu}" if mcpu else "c")
    staged = [c for c in res.plan.calls if is_staged(c)]
    assert [c.scratch_bytes for c in staged] == [6 * 5 * block]
    assert (staged[0].func.attrs.get("schedule") == dw_schedule(variant)) == (variant is not None)
    assert res.plan.workspace_lower_bound == 6 * 5 * C + 6 * 5 * block
    assert res.plan.workspace_size < res.plan.workspace_lower_bound + 16       # alignment


@tflm
@pytest.mark.parametrize("C", [64, 36, 8, 33])
def test_staged_depthwise_plain_body_on_the_host_is_bit_exact(C):
    """64 channels: four blocks of 16; 36: nine of 4; 8: four of 2; 33: staged by planes without the call. The
    staged pointwise conv keeps its dot_s8 call."""
    import aot
    model, shape = dw_chain(6, 5, C, layers="ddpd")
    res = aot.compile(model, target="c -mcpu=cortex-m55")
    staged = [c.func.attrs.get("schedule") for c in res.plan.calls if is_staged(c)]
    assert staged[0] == ("dw_s8 (mve)" if C % 4 == 0 else None)
    assert staged[1].startswith("dot_s8") and staged[1].endswith("(mve)") and len(staged) == 2
    _check(res, _feeds(shape), model, sanitize=True)


@pytest.mark.parametrize("name", sorted(k for k, v in CASES.items() if "dsp" in v[1]))
def test_dw_s8f_tables_take_the_folded_form_only_where_every_shift_is_right(name):
    """The DSP compile's table (FoldedBias.wide on the bias: (bias, c, multiplier, shift) a
    channel): c nonzero in every channel on the right-shift cases; elsewhere either that with
    every e at least 1, or all c zero with a shift that does not go right (the exact form's
    reason: these bounds hold). The multipliers and shifts in it are the call's own arrays
    (the shifts as FoldedShift lays them out)."""
    import aot
    model, _ = CASES[name][0]()
    res = aot.compile(model, target="c -mcpu=cortex-m4", in_place=False)
    (call,) = [c for c in res.plan.calls if c.func.attrs.get("schedule") in DSP_SCHEDULES]
    table = res.plan.constants[call.args[2].index][1]
    mults = res.plan.constants[call.args[3].index][1]
    shifts = res.plan.constants[call.args[4].index][1]
    assert table.shape == (4 * call.func.params[3].shape[0],)        # four words for each multiplier
    assert (table[2::4] == mults).all() and (table[3::4] == shifts).all()
    fast = bool(table[1::4].all())
    assert fast or name not in FOLDED
    if fast:
        assert (shifts >= 1).all()
    else:
        assert not table[1::4].any() and (shifts >= 0).any()