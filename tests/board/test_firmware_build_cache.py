"""The firmware build cache is keyed by what it builds (the host cache: tests/host/test_build_cache.py)."""
import os

import pytest

from test_build_cache import tar  # noqa: F401


@pytest.mark.board
def test_firmware_cache_follows_the_rendered_harness(tar, monkeypatch):
    import shutil

    import codegen_c.emit
    from aot.firmware import build_firmware
    if shutil.which("arm-none-eabi-gcc") is None and not os.environ.get("AOT_REQUIRE_BOARDS"):
        pytest.skip("arm-none-eabi-gcc not installed")
    first = build_firmware(tar, "qemu-cortex-m4", "-O2").elf
    assert build_firmware(tar, "qemu-cortex-m4", "-O2").elf == first
    real = codegen_c.emit.render_template
    monkeypatch.setattr(codegen_c.emit, "render_template",
                        lambda name, **kw: real(name, **kw) + ("\n/* harness changed */\n"
                                                               if name == "firmware_main.c.j2" else ""))
    assert build_firmware(tar, "qemu-cortex-m4", "-O2").elf != first
