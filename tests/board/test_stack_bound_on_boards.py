"""The proven stack bound against the stack measured under QEMU: at or above it, within 2x, on every
board; a deeper call injected into the model grows both; recursion is refused; --stack-bound's
metadata is the size report's model bound. (bench/bench_stack.py runs the MLPerf Tiny matrix.)"""
import re

import numpy as np
import pytest

from test_boards import MISSING, OTHER_BOARDS, MAIN_BOARDS, _small_models

pytestmark = [pytest.mark.board, pytest.mark.skipif(bool(MISSING), reason="Arm toolchain or QEMU missing")]


def _measure(tar, board):
    from aot.firmware import measure
    rep, _ = measure(tar, board)
    return rep["stack"]


@pytest.mark.parametrize("board", MAIN_BOARDS + OTHER_BOARDS)
def test_bound_covers_the_measured_stack(board):
    import aot
    m, _ = _small_models()["small_cnn"]
    st = _measure(aot.compile(m.SerializeToString(), target=f"c -mcpu={board[5:]}").tar, board)
    th = st["thread"]["bytes"]
    assert st["measured"] <= th <= 2 * st["measured"], st
    assert st["bytes"] > th and st["model"]["bytes"] < th


def _inject(tar, body):
    """The MLF with `body` (C) prepended to lib0 and its function called first in the run function."""
    from mlf_mutate import _reseal, members, pack
    files = members(tar)
    src = next(k for k in files if k.endswith("_lib0.c"))
    text = files[src].decode()
    text = re.sub(r"(int32_t tvmgen_default_run\([^)]*\)\s*\{)", r"\1\n  aot_test_deep(0);", text, count=1)
    assert "aot_test_deep(0);" in text
    end = text.index("\n", text.rindex("#include")) + 1
    files[src] = (text[:end] + body + text[end:]).encode()
    return pack(_reseal(files))


DEEP = """
int aot_test_deep(int k);
__attribute__((noinline)) int aot_test_deep(int k) {
  volatile unsigned char buf[1024];
  buf[k] = 1;
  return buf[0];
}
"""
RECURSIVE = """
int aot_test_deep(int k);
__attribute__((noinline)) int aot_test_deep(int k) {
  volatile int v[2];
  int r;
  v[0] = k;
  v[1] = 1;
  if (v[0] > 3) {
    return 0;
  }
  r = aot_test_deep(v[0] + 1);
  return r + v[1];   /* read after the call: the recursion cannot become a loop */
}
"""


def test_an_injected_deeper_call_grows_the_bound():
    import aot
    m, _ = _small_models()["small_cnn"]
    tar = aot.compile(m.SerializeToString(), target="c -mcpu=cortex-m4").tar
    base = _measure(tar, "qemu-cortex-m4")
    deep = _measure(_inject(tar, DEEP), "qemu-cortex-m4")
    assert deep["model"]["bytes"] >= base["model"]["bytes"] + 1024 - 64 or deep["model"]["bytes"] >= 1024
    assert "aot_test_deep" in deep["model"]["path"]
    assert deep["measured"] <= deep["thread"]["bytes"] and deep["measured"] > base["measured"]


def test_recursion_is_refused():
    import aot
    from aot.errors import AotError
    m, _ = _small_models()["small_cnn"]
    tar = aot.compile(m.SerializeToString(), target="c -mcpu=cortex-m4").tar
    with pytest.raises(AotError, match="recursion.*aot_test_deep -> aot_test_deep"):
        _measure(_inject(tar, RECURSIVE), "qemu-cortex-m4")


def test_metadata_bound_is_the_size_reports():
    import aot
    from mlf import read_mlf
    m, _ = _small_models()["small_cnn"]
    res = aot.compile(m.SerializeToString(), target="c -mcpu=cortex-m33", stack_bound=True)
    a = read_mlf(res.tar).aot
    assert a["stack_bound"]["board"] == "qemu-cortex-m33" and a["stack_bytes"] > 0
    assert a["stack_bytes"] == _measure(res.tar, "qemu-cortex-m33")["model"]["bytes"]
    assert sum(f[1] for f in a["stack_bound"]["frames"]) == a["stack_bytes"]
