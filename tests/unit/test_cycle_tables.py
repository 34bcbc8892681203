"""The cycle model's timing tables (aot/targets/cortex_m_timing.py) against what its QEMU plugin
reads (boards/cortex_m/qemu_cycles_plugin.c), and the option checks that need no emulator."""
import os
import re

import pytest

from aot.errors import AotError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _plugin_keys():
    with open(os.path.join(ROOT, "boards", "cortex_m", "qemu_cycles_plugin.c")) as f:
        src = f.read()
    body = re.search(r"key_names\[K_COUNT\] = \{(.*?)\};", src, re.S).group(1)
    return re.findall(r'"(\w+)"', body)


def test_every_table_has_exactly_the_keys_the_plugin_reads():
    from aot.targets.cortex_m_timing import TIMINGS
    keys = _plugin_keys()
    assert len(keys) == len(set(keys)) > 30
    for core, t in TIMINGS.items():
        assert sorted(t.table) == sorted(keys), core
        assert all(isinstance(v, int) and v >= 0 for v in t.table.values()), core
        assert t.source and t.approximation


def test_the_boards_cores_have_tables():
    from aot.cycles import board_timing
    from boards import load_board
    for name in ("qemu-cortex-m3", "qemu-cortex-m4", "qemu-cortex-m7", "qemu-cortex-m33", "qemu-cortex-m55"):
        t = board_timing(load_board(name))
        assert t.core == load_board(name)["core"]
        assert t.table["flash_wait_states"] == 0 and "zero wait states" in t.memory
        assert t.table["flash_end"] > 0


def test_memory_model_options():
    from aot.cycles import board_timing
    from boards import load_board
    b = load_board("qemu-cortex-m4")
    t = board_timing(b, 2)
    assert t.table["flash_wait_states"] == 2 and "2 flash wait states" in t.memory
    assert "flash_wait_states 2\n" in t.text()
    for bad in (-1, 16, "2", True):
        with pytest.raises(AotError, match="0 to 15"):
            board_timing(b, bad)
    with pytest.raises(AotError, match="no cycle model for core 'cortex-m0'"):
        board_timing(dict(b, core="cortex-m0"))


def test_report_parsing_merges_a_kernel_given_in_pieces(tmp_path):
    from aot.cycles import format_cycles, read_report
    from aot.targets.cortex_m_timing import timing
    (tmp_path / "aot_cycles.report").write_text(
        "total 1000 800 0\nexecutor 10 8\nkernel 600 500 1 0 fused_qconv\nkernel 390 292 0 0 fused_qconv\n")
    rep = read_report(str(tmp_path), timing("cortex-m4"))
    assert rep["cycles"] == 1000 and rep["instructions_counted"] == 800
    assert rep["kernels"] == [{"name": "fused_qconv", "cycles": 990, "instructions": 792, "calls": 1}]
    text = format_cycles(rep)
    assert "1,000" in text and "fused_qconv" in text and "cortex-m4 timing model" in text


def test_a_missing_report_is_a_clear_error(tmp_path):
    from aot.cycles import read_report
    from aot.targets.cortex_m_timing import timing
    with pytest.raises(AotError, match="wrote no report"):
        read_report(str(tmp_path), timing("cortex-m4"))


def test_header_named_by_the_environment(tmp_path, monkeypatch):
    from aot.cycles import plugin_header
    monkeypatch.setenv("AOT_QEMU_PLUGIN_H", str(tmp_path))
    with pytest.raises(AotError, match="no qemu-plugin.h there"):
        plugin_header()
    (tmp_path / "qemu-plugin.h").write_text("/* */\n")
    assert plugin_header() == str(tmp_path / "qemu-plugin.h")
