"""The MLPerf Tiny int8 .tflite models on QEMU Cortex-M boards, bit for bit with TFLite Micro (the host
side: tests/models/test_tflite_models.py)."""
import numpy as np
import pytest

from test_tflite_frontend import INT8_MODELS, _int8_cases, _read, tflm  # noqa: F401


@tflm
@pytest.mark.slow
@pytest.mark.board
@pytest.mark.parametrize("board", ["qemu-cortex-m4", "qemu-cortex-m55"])
@pytest.mark.parametrize("rel", INT8_MODELS)
def test_mlperf_tiny_int8_tflite_is_bit_exact_on_cortex_m(rel, board):
    """The same 100 random inputs and real ones on the emulated boards (one firmware, one QEMU run
    per input, about 0.1 s each): 0 LSB."""
    import aot
    res = aot.compile(_read(rel), target=f"c -mcpu=cortex-{board.split('-')[-1]}")
    x = res.graph.inputs[0]
    for k, (feed, ref) in enumerate(_int8_cases(rel, x)):
        got = aot.run(res, {x.name: feed}, board=board)[res.graph.output_names[0]]
        np.testing.assert_array_equal(got, ref, err_msg=f"input {k}")


@tflm
@pytest.mark.slow
@pytest.mark.board
@pytest.mark.parametrize("board", ["qemu-cortex-m4", "qemu-cortex-m55"])
@pytest.mark.parametrize("rel", [r for r in INT8_MODELS if "anomaly" not in r])
def test_mlperf_tiny_int8_patched_is_bit_exact_on_cortex_m(rel, board):
    """Patch-based execution with the board's micro-kernels inside the strips: 0 LSB."""
    import aot
    from mlf import read_mlf
    res = aot.compile(_read(rel), target=f"c -mcpu=cortex-{board.split('-')[-1]}", patch="force")
    assert read_mlf(res.tar).aot["execution"]["patch"] is not None
    x = res.graph.inputs[0]
    for k, (feed, ref) in enumerate(_int8_cases(rel, x)[::20]):
        got = aot.run(res, {x.name: feed}, board=board)[res.graph.output_names[0]]
        np.testing.assert_array_equal(got, ref, err_msg=f"input {k}")


@tflm
@pytest.mark.slow
@pytest.mark.board
@pytest.mark.parametrize("board,opt", [("qemu-cortex-m4", "-O1"), ("qemu-cortex-m4", "-Os"), ("qemu-cortex-m4", "-O3"),
                                       ("qemu-cortex-m7", "-Os"), ("qemu-cortex-m33", "-O1")])
@pytest.mark.parametrize("rel", [r for r in INT8_MODELS if "visual_wake" in r or "keyword" in r])
def test_mlperf_tiny_int8_builds_and_is_bit_exact_at_every_optimisation(rel, board, opt):
    """The DSP micro-kernels' inline assembly leaves gcc registers enough at every -O the firmware
    may be built with (a statement that takes all fourteen fails at -O1 and -Os with "impossible
    constraints" though it builds at -O2), and gives the same bits."""
    import aot
    res = aot.compile(_read(rel), target=f"c -mcpu=cortex-{board.split('-')[-1]}")
    x = res.graph.inputs[0]
    for k, (feed, ref) in enumerate(_int8_cases(rel, x)[::25]):
        got = aot.run(res, {x.name: feed}, board=board, opt=opt)[res.graph.output_names[0]]
        np.testing.assert_array_equal(got, ref, err_msg=f"input {k}")
