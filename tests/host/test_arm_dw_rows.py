"""The DSP cores' whole-row depthwise kernel dw3_s8r (aot/tir/intrin/arm_dw3.py, rule
aot/schedules/arm_dw.py depthwise_rows): a 3x3 stride-1 conv four channels a call, every row,
through a ring of widened input rows, written over its input without staging (the kernel orders
its own reads: aot/tir/inplace.py's replay proves it from ordered_accesses).

Every output is compared bit for bit with the tflite-micro wheel: on the host the plain body
under ASan/UBSan (the ring's layout and order are the DSP body's), on the boards
(tests/board/test_arm_dw_rows_on_boards.py) the DSP body and its assembly. The shapes reach each
path: SAME and VALID, odd and even widths (the last pixel alone), maps taller than wide (the
ring runs along the columns), full-range and clamped outputs (the assembly, or C), channels
whose requantisation folds and channels whose does not (a left shift) in one conv, extreme
input zero points.
"""
import pytest

from test_arm_dw_microkernel import _check, _feeds, _schedules, dw_chain, dw_model
from test_arm_pointwise_q15 import STRICT_COMPILES, compile_strict
from test_memory import _run_with_workspace_bytes
from tflm_oracle import tflm_available

tflm = pytest.mark.skipif(not tflm_available(), reason="the tflite-micro wheel is not installed")
ROWS = "dw3_s8r (dsp)"
ROWS2 = "dw3_s8r2 (dsp)"    # its stride-2 calls'
RIGHT = dict(decades=(-3, 0.5))     # every shift to the right: each channel's folded form

# name -> (H, W, C, padding, dw_model keywords)
CASES = {
    "12x16x16_same": (12, 16, 16, "SAME", RIGHT),
    "9x17x16_same_odd_width": (9, 17, 16, "SAME", dict(x_zp=-128, **RIGHT)),
    "14x15x12_valid": (14, 15, 12, "VALID", dict(x_zp=127, **RIGHT)),
    "10x16x20_same_relu6": (10, 16, 20, "SAME", dict(act="RELU6", **RIGHT)),
    "10x16x16_same_left_shifts": (10, 16, 16, "SAME", dict(x_zp=0)),       # folded and exact channels
    "30x6x32_same_by_columns": (30, 6, 32, "SAME", RIGHT),
    "27x5x64_valid_by_columns": (27, 5, 64, "VALID", dict(x_zp=-77, **RIGHT)),
    # widths in fours: the four channels' rows in one piece of assembly, no window clipped (VALID),
    # and by columns with a zero ring row below the input
    "14x14x16_valid_rows_in_fours": (14, 14, 16, "VALID", dict(x_zp=-128, **RIGHT)),
    "28x5x64_same_by_columns_in_fours": (28, 5, 64, "SAME", dict(x_zp=5, **RIGHT)),
}
# stride 2 where its output rows are at least MIN_RING_ROW_S2 long: whole fours of outputs (the
# four channels' assembly, a zero ring row below the input), VALID, an odd width (the channels'
# own pairs and the last pixel alone), folded and exact channels, by columns
CASES2 = {
    "48x48x16_same_stride2": (48, 48, 16, "SAME", dict(x_zp=-128, **RIGHT)),
    "49x49x16_valid_stride2": (49, 49, 16, "VALID", dict(x_zp=127, **RIGHT)),
    "50x50x16_same_stride2_odd_width": (50, 50, 16, "SAME", dict(x_zp=-3, **RIGHT)),
    "48x48x16_same_stride2_left_shifts": (48, 48, 16, "SAME", dict(x_zp=0)),
    "52x9x64_same_stride2_by_columns": (52, 9, 64, "SAME", dict(x_zp=9, **RIGHT)),
}
# the rule leaves these to dw_s8f: stride 2 on rows shorter than MIN_RING_ROW_S2, rows shorter
# than MIN_RING_ROW, a ring larger than a quarter of the output, channels not in fours, a 5x5
# window, dilation
REFUSED = {
    "stride2": lambda: dw_model(16, 16, 16, 3, 2, "SAME", **RIGHT),
    "stride2_24_wide": lambda: dw_model(24, 24, 32, 3, 2, "SAME", **RIGHT),
    "short_rows": lambda: dw_model(8, 8, 32, 3, 1, "SAME", **RIGHT),
    "tall_narrow_few_channels": lambda: dw_model(20, 6, 8, 3, 1, "SAME", **RIGHT),
    "c18": lambda: dw_model(12, 16, 18, 3, 1, "SAME", **RIGHT),
    "5x5": lambda: dw_model(12, 16, 16, 5, 1, "SAME", **RIGHT),
    "dilation2": lambda: dw_model(12, 16, 16, 3, 1, "SAME", dilation=2, **RIGHT),
}


def case(name):
    if name in CASES2:
        H, W, C, pad, kw = CASES2[name]
        return dw_model(H, W, C, 3, 2, pad, **kw)
    H, W, C, pad, kw = CASES[name]
    return dw_model(H, W, C, 3, 1, pad, **kw)


def _calls(res, schedule=ROWS):
    return [c for c in res.plan.calls if c.func.attrs.get("schedule") == schedule]


def rows_of(name):
    """The schedule the rule gives case(name)."""
    return ROWS2 if name in CASES2 else ROWS


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_rule_takes_the_conv(name):
    import aot
    from aot.tir.intrin.arm_dw3 import ring_words
    H, W, C, pad, _ = CASES[name]
    model, _ = case(name)
    res = aot.compile(model, target="c -mcpu=cortex-m4", in_place=False)
    (call,) = _calls(res)
    Ho, Wo = (H, W) if pad == "SAME" else (H - 2, W - 2)
    assert call.scratch_bytes == 4 * ring_words(max(Ho, Wo) if H > W else Wo, 1)


@pytest.mark.parametrize("name", sorted(CASES2))
def test_the_rule_takes_the_stride_2_conv(name):
    import aot
    from aot.tir.intrin.arm_dw3 import ring_words
    H, W, C, pad, _ = CASES2[name]
    model, _ = case(name)
    res = aot.compile(model, target="c -mcpu=cortex-m4", in_place=False)
    (call,) = _calls(res, ROWS2)
    Ho, Wo = ((H + 1) // 2, (W + 1) // 2) if pad == "SAME" else ((H - 3) // 2 + 1, (W - 3) // 2 + 1)
    assert call.scratch_bytes == 4 * ring_words(Ho if H > W else Wo, 2)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_rule_leaves_other_convs_to_dw_s8f(name):
    import aot
    model, _ = REFUSED[name]()
    res = aot.compile(model, target="c -mcpu=cortex-m4", in_place=False)
    assert not {ROWS, ROWS2} & _schedules(res)


@pytest.mark.parametrize("mcpu", ["cortex-m55", "cortex-m0", "cortex-m3"])
def test_cores_without_the_dsp_extension_keep_their_kernels(mcpu):
    import aot
    model, _ = case("12x16x16_same")
    assert ROWS not in _schedules(aot.compile(model, target=f"c -mcpu={mcpu}", in_place=False))


@tflm
@pytest.mark.parametrize("name", sorted(CASES) + sorted(CASES2))
def test_the_plain_body_on_the_host_is_bit_exact(name):
    import aot
    model, shape = case(name)
    res = aot.compile(model, target="c -mcpu=cortex-m4", in_place=False)
    assert _calls(res, rows_of(name))
    _check(res, _feeds(shape), model, sanitize=True)


# --- written over its input

def test_written_over_its_input_without_staging():
    """The middle of three convs: its input dies there, the kernel is proven to write over it as
    scheduled (ORDERED), so the workspace is one tensor and the ring, no staging copy."""
    import aot
    from aot.executor.kernels import ORDERED
    from aot.tir.intrin.arm_dw3 import ring_words
    model, _ = dw_chain(12, 16, 16)
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    over = [c for c in res.plan.calls if c.in_place is not None and c.in_place.kind == ORDERED]
    assert [c.func.attrs.get("schedule") for c in over] == [ROWS]
    assert over[0].scratch_bytes == 4 * ring_words(16, 1)
    assert res.plan.workspace_lower_bound == 12 * 16 * 16 + 4 * ring_words(16, 1)


@tflm
def test_written_over_its_input_at_stride_2_is_exact():
    """A stride-2 conv whose input dies there (VWW's first depthwise conv): dw3_s8r2 proven to
    write its output over the first rows of its input (the ring reads two input rows an
    output row), the plain body exact under the sanitizers."""
    import aot
    model, shape = dw_chain(48, 48, 16, strides=(1, 2, 1))
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    over = [c for c in res.plan.calls if c.in_place is not None]
    assert [c.func.attrs.get("schedule") for c in over] == [ROWS2]
    _check(res, _feeds(shape, 2), model, sanitize=True)


@tflm
@pytest.mark.parametrize("rows,cols,C", [(12, 16, 16), (26, 5, 64)])
def test_written_over_its_input_is_exact_and_needs_all_its_workspace(rows, cols, C):
    """Bit-exact under ASan/UBSan, and one byte less workspace overflows (the ring is used)."""
    import aot
    model, shape = dw_chain(rows, cols, C)
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    assert any(c.in_place is not None and c.in_place.kind == "ordered" for c in res.plan.calls)
    _check(res, _feeds(shape), model, sanitize=True)
    feeds = {res.graph.inputs[0].name: _feeds(shape, 1)[0]}
    rc, err = _run_with_workspace_bytes(res.tar, feeds, res.plan.workspace_size)
    assert rc == 0, err[-2000:]
    rc, err = _run_with_workspace_bytes(res.tar, feeds, res.plan.workspace_size - 1)
    assert rc != 0 and "global-buffer-overflow" in err


def _scheduled_middle(rows, cols, C):
    from aot.compiler import Options, fuse_and_order, run_passes
    from aot.executor.lowering import scheduled
    from aot.frontend import import_model
    from aot.target import Target
    from aot.te.lower import lower_group
    model, _ = dw_chain(rows, cols, C)
    graph = run_passes(import_model(model), lambda msg: None)
    groups = [g for g in fuse_and_order(graph, Options(), lambda msg: None) if not g.alias]
    plain = lower_group(groups[1], "k")[0]
    return scheduled(plain, Target("c -mcpu=cortex-m4"), {}), plain.num_inputs


@pytest.mark.parametrize("rows,cols,C", [(12, 16, 16), (26, 5, 64)])
def test_the_replay_proves_the_ring_and_refuses_an_output_a_row_ahead(rows, cols, C):
    """Over the input exactly: proven (by rows, and by columns on a tall map). With the output one
    row (one column) further into the input, output row y lands on input row y + 1, which the
    ring has not taken yet: refused (the input given a row more, so that the output still fits)."""
    from aot.tir.inplace import writes_over_in_order
    from aot.tir.stmt import Buffer
    f, n_in = _scheduled_middle(rows, cols, C)
    assert f.attrs.get("schedule") == ROWS
    x, y = f.params[0], f.params[n_in]
    assert writes_over_in_order(f, [x], y, 0)
    ahead = C * (cols if rows <= cols else 1)
    wider = Buffer(x.name, x.dtype, (x.size + ahead,))
    g = f.with_body(_retarget(f.body, x, wider), [p if p is not x else wider for p in f.params])
    assert writes_over_in_order(g, [wider], y, 0)
    assert not writes_over_in_order(g, [wider], y, ahead)


def _retarget(body, old, new):
    """body with its loads of buffer `old` (the calls' pointers) as loads of `new`, flat."""
    from aot.tir.expr import Load, transform
    from aot.tir.intrin.arm import flat_index
    from aot.tir.stmt import map_exprs
    return map_exprs(body, lambda e: transform(e, lambda x: Load(new, (flat_index(x),)) if isinstance(x, Load)
                                               and x.buffer is old else None))


# --- the access verifier

def test_the_verifier_checks_the_ring_and_the_last_pixel():
    """A scratch one word short of the ring, an input one element short of the last pixel's
    fourth channel, or weights a byte short of the call's (Dw3Wide's 96 bytes), is refused."""
    from aot.tir.expr import Call, Const, Load
    from aot.tir.intrin.arm_dw3 import WEIGHT_BYTES, ring_words
    from aot.tir.stmt import Buffer, Evaluate, PrimFunc
    from aot.tir.verify import AccessError, verify_accesses
    H, W, C = 6, 12, 4
    b, m, s = Buffer("b", "int32", (2 * C,)), Buffer("m", "int32", (C,)), \
        Buffer("s", "int32", (C,))

    def func(x_size, ring, w_size=C // 4 * WEIGHT_BYTES):
        w = Buffer("w", "int8", (w_size,))
        x, o = Buffer("x", "int8", (x_size,)), Buffer("o", "int8", (H * W * C,))
        r = Buffer("r", "int32", (ring,))
        i = [Const(v, "int32") for v in (H, W, H, W, 1, 1, 1, 3, 5, -128, 127, W * C, C, W * C, C)]
        call = Call("dw3_s8r", [Load(o, 0), Load(x, 0), Load(w, 0), Load(b, 0), Load(m, 0), Load(s, 0), Load(r, 0),
                                *i], "int32")
        return PrimFunc("f", [x, w, b, m, s, o, r], Evaluate(call), 5)
    n = ring_words(W, 1)
    assert verify_accesses(func(H * W * C, n)).checked > 0
    with pytest.raises(AccessError):
        verify_accesses(func(H * W * C, n - 1))
    with pytest.raises(AccessError):
        verify_accesses(func(H * W * C - 1, n))
    with pytest.raises(AccessError):
        verify_accesses(func(H * W * C, n, C // 4 * WEIGHT_BYTES - 1))


# --- the C

@pytest.mark.parametrize("cc,flags", STRICT_COMPILES + [("gcc", ["-O0"])])
def test_the_kernel_compiles_warning_free(cc, flags, tmp_path):
    """Both bodies of both strides' kernels, strict C99 with -Werror (-O0 too: the assembly is
    left out there)."""
    compile_strict(cc, flags, tmp_path, [(case("9x17x16_same_odd_width")[0], "aot_dw3_s8r(&"),
                                         (case("50x50x16_same_stride2_odd_width")[0], "aot_dw3_s8r2(&")])
