"""micro.testing.aot_test_utils with TVM's names: the AOT test runners. AOT_DEFAULT_RUNNER runs
the test program on this machine; TVM's Corstone-300 and AEM runners name reference platforms
that are not here, and compile_and_run refuses them by name."""
from __future__ import annotations

import itertools

from ...testing.aot import AOTTestRunner

AOT_DEFAULT_RUNNER = AOTTestRunner()

AOT_CORSTONE300_RUNNER = AOTTestRunner(makefile="corstone300", prologue="\n    UartStdOutInit();\n",
                                       includes=["uart_stdout.h"],
                                       pass_config={"relay.ext.cmsisnn.options": {"mcpu": "cortex-m55"}})

AOT_USMP_CORSTONE300_RUNNER = AOTTestRunner(makefile="corstone300", prologue="\n    UartStdOutInit();\n",
                                            includes=["uart_stdout.h"],
                                            pass_config={"relay.ext.cmsisnn.options": {"mcpu": "cortex-m55"},
                                                         "tir.usmp.enable": True})

AOT_APROFILE_AEM_RUNNER = AOTTestRunner(makefile="aprofile_aem", includes=[],
                                        pass_config={"tir.usmp.enable": False, "tir.disable_assert": True})


def parametrize_aot_options(test):
    """pytest parametrization over (interface_api, use_unpacked_api, test_runner): the valid
    combinations on this machine's runner (the C interface takes the unpacked API only)."""
    import pytest
    combos = [(api, unpacked, AOT_DEFAULT_RUNNER)
              for api, unpacked in itertools.product(["packed", "c"], [True, False])
              if not (api == "c" and not unpacked)]
    return pytest.mark.parametrize(["interface_api", "use_unpacked_api", "test_runner"], combos)(test)
