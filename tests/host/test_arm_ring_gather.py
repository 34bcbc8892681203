"""A first layer's 3x3 windows over three channels at stride 2 (VWW's) on DSP Cortex-M cores through
the ring of widened input rows (aot/schedules/arm_gather.py ring_pairs): each input row widened once
(widen_q15w), then a row's pixel pairs one gconv_ring call over the ring in place (int8's whole
range, output channels a multiple of 4; its assembly where the table says every channel is
folded, its C otherwise), else (and for an odd last pixel) two pixels a time ring_q15x3's copy into
pw_s8's scratch and pw_s8x2.

The cases reach: the bottom and right padding (a row past the input zeroed, the columns past it
the ring rows' zeroed ends), VALID padding, an odd output width (the last pixel in both slots of
the copy), output channels not a multiple of 4, a clamp narrower than int8's range, left shifts
(the exact form: the table's flag 0, the copy at run time), input zero points at both ends. Each
is compared bit for bit with the tflite-micro wheel: the plain bodies on the host under
ASan/UBSan here, the DSP bodies on the boards in tests/board/test_arm_ring_gather_on_boards.py.
"""
import sys

import pytest

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_arm_conv_scratch import _check_all, conv_model, tflm  # noqa: E402,F401
from test_arm_dot_microkernels import _schedules  # noqa: E402
from test_arm_pointwise_q15 import STRICT_COMPILES, compile_strict  # noqa: E402

RING = "gconv_ring gather (dsp)"
CASES = {
    "o8_same": lambda: conv_model(10, 12, 3, 8, stride=2, act="NONE", seed=1),                 # gconv_ring
    "o16_same_zp127": lambda: conv_model(8, 10, 3, 16, stride=2, x_zp=127, act="NONE", seed=2),  # odd width
    "o8_valid_relu": lambda: conv_model(9, 12, 3, 8, stride=2, padding="VALID", x_zp=-128, y_zp=-128, seed=3),
    "o6_same": lambda: conv_model(6, 8, 3, 6, stride=2, seed=4),                                # the copy only
    "o8_relu6": lambda: conv_model(6, 8, 3, 8, stride=2, act="RELU6", y_zp=-128, seed=5),      # narrower clamp
    "o8_left_shifts": lambda: conv_model(6, 8, 3, 8, stride=2, y_scale=1e-3, act="NONE", seed=6),  # exact form
}


def _ring(res):
    return {k: v for k, v in _schedules(res).items() if v == RING}


@pytest.mark.parametrize("name", sorted(CASES))
def test_dsp_cores_take_the_ring(name):
    """cortex-m4/m7/m33 take the ring, its scratch pw_s8's two windows and three ring rows in the
    workspace; cortex-m55 and the portable target do not."""
    import aot
    from aot.tir.intrin.arm_q15 import buf_words
    model, (_, H, W, C) = CASES[name]()
    for mcpu in ("cortex-m4", "cortex-m7", "cortex-m33"):
        res = aot.compile(model, target=f"c -mcpu={mcpu}")
        (call,) = res.plan.calls
        assert call.func.attrs.get("schedule") == RING
        assert call.scratch_bytes >= 4 * buf_words(28) + 3 * 2 * W * C and call.args[-1].kind == "workspace"
    for target in ("c -mcpu=cortex-m55", "c"):
        assert not _ring(aot.compile(model, target=target))


def test_other_windows_keep_the_scratch_gather():
    """Stride 1 (a window at an odd half of a ring row), a padded top row (SAME over an odd
    height), an odd row of values (W * 3 odd) and 5x5 windows are not the ring's: the per-pair
    gather into pw_s8's scratch takes them."""
    import aot
    for model, _ in (conv_model(8, 8, 3, 8), conv_model(9, 8, 3, 8, stride=2), conv_model(8, 9, 3, 8, stride=2),
                     conv_model(10, 10, 3, 8, kh=5, kw=5, stride=2)):
        scheds = set(_schedules(aot.compile(model, target="c -mcpu=cortex-m4")).values())
        assert scheds == {"pw_s8x2 gather (dsp)"}, scheds


def test_the_calls_each_case_takes():
    """The in-place kernel (a row a call, the table's flag tested inside) where it applies, the
    copy for an odd last pixel only, and no in-place kernel where the channels or the clamp rule
    it out."""
    import io
    import tarfile
    import aot

    def c_text(name):
        tar = aot.compile(CASES[name]()[0], target="c -mcpu=cortex-m4").tar
        with tarfile.open(fileobj=io.BytesIO(tar)) as t:
            member = next(m for m in t.getmembers() if m.name.endswith("codegen/host/src/default_lib1.c"))
            return t.extractfile(member).read().decode()
    for name, ring, copy in (("o8_same", True, False), ("o16_same_zp127", True, True), ("o6_same", False, True),
                             ("o8_relu6", False, True)):
        text = c_text(name)
        assert ("aot_gconv_ring(&" in text) == ring, name
        assert ("aot_ring_q15x3(&" in text) == copy, name
        assert "aot_widen_q15w(&" in text


@tflm
@pytest.mark.parametrize("name", sorted(CASES))
def test_plain_bodies_on_the_host_are_bit_exact(name):
    """The Cortex-M4 compile built by the host's gcc: widen_q15w's, ring_q15x3's, gconv_ring's and
    pw_s8x2's plain bodies under ASan/UBSan, against TFLM on random inputs and int8's extremes."""
    import aot
    model, shape = CASES[name]()
    res = aot.compile(model, target="c -mcpu=cortex-m4")
    assert _ring(res)
    _check_all(res, model, shape, 3, sanitize=True)


def test_the_verifier_checks_the_ring():
    """The ring's rows (a slot chosen by the row modulo 3) are checked scratch accesses of
    widen_q15w, ring_q15x3 and gconv_ring: every one proven inside the scratch, and none of them
    with one word less (the last slot's last word is the last pair's window's)."""
    import aot
    from aot.tir.stmt import Buffer
    from aot.tir.verify import AccessError, verify_accesses
    from test_arm_pointwise_q15 import _rebind
    res = aot.compile(CASES["o8_same"]()[0], target="c -mcpu=cortex-m4")
    (call,) = res.plan.calls
    report = verify_accesses(call.func)
    assert report.checked > 0 and report.unproven == 0
    old = call.func.params[-1]
    short = Buffer(old.name, old.dtype, (old.size - 1,))
    func = call.func.with_body(call.func.body, params=call.func.params[:-1] + [short])
    try:
        assert verify_accesses(_rebind(func, old, short)).unproven > 0
    except AccessError as e:
        assert "outside its" in str(e)


@pytest.mark.parametrize("cc,flags", STRICT_COMPILES)
def test_the_ring_compiles_warning_free(cc, flags, tmp_path):
    """widen_q15w, ring_q15x3 and gconv_ring, strict C99 with -Werror (-O0 too: the asm's operands)."""
    compile_strict(cc, flags, tmp_path, [(CASES["o16_same_zp127"]()[0], "aot_gconv_ring(&")])
