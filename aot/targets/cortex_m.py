"""Cortex-M: a "c" target whose -mcpu names an Arm M-profile core. One table of cores and
their features; the int8 micro-kernels (aot/tir/intrin/arm*.py) and the Cortex-M schedule
rules ask a core for its features, never for its name.

A new core is one `Core(...)` given to `add_core` (tests/unit/test_target_families.py defines one in
a file of its own). A "cortex-m*" core not in the table is still a Cortex-M with none of the
extensions: plain C, no FPU assumed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .base import C_ATTRS, Family


@dataclass(frozen=True)
class Core:
    name: str
    dsp: bool = False     # the DSP extension: SIMD32 instructions (SMLAD, SXTB16, ...)
    mve: bool = False     # Helium (M-profile Vector Extension), integer and float
    fpu: bool = False     # a single-precision FPU
    fma: bool = False     # its FPU fuses multiply-adds (VFMA)
    dual_issue: bool = False  # it issues two instructions a cycle (no compiler macro tells it)

    @property
    def simd_bits(self):
        """The width of one SIMD step: Helium's 128-bit vectors, the DSP extension's 32-bit words."""
        return 128 if self.mve else 32 if self.dsp else 0

    @property
    def variant(self):
        """The micro-kernel body this core runs: Helium's where it has Helium (it has DSP too),
        else the DSP one, else the plain C loop."""
        return "mve" if self.mve else "dsp" if self.dsp else "plain"


CORES = {}


def add_core(core: Core):
    """Make a core known (or replace what is known of it)."""
    CORES[core.name] = core
    return core


for _core in (Core("cortex-m0"), Core("cortex-m0plus"), Core("cortex-m3"),
              Core("cortex-m4", dsp=True, fpu=True, fma=True),            # FPv4-SP
              Core("cortex-m7", dsp=True, fpu=True, fma=True, dual_issue=True),   # FPv5
              Core("cortex-m33", dsp=True, fpu=True, fma=True),
              Core("cortex-m35p", dsp=True, fpu=True, fma=True),
              Core("cortex-m55", dsp=True, mve=True, fpu=True, fma=True),
              Core("cortex-m85", dsp=True, mve=True, fpu=True, fma=True, dual_issue=True)):
    add_core(_core)


def core(mcpu):
    """The features of core `mcpu`: a core without any for a name not in the table or None."""
    return CORES.get(mcpu) or Core(mcpu or "")


# channels of a depthwise conv staged per pixel where the dw_s8 micro-kernel runs: two Helium
# steps, four DSP words (one plane at a time would leave the call nothing to run along). The
# fewest worth a block: Helium's call pays from 2 channels on, the DSP body from 4.
STAGE_BLOCK = 16


class CortexM(Family):
    name = "cortex_m"
    kind = "c"
    attrs = C_ATTRS
    keys = ("arm_cpu", "cpu")
    pipeline = "cortex_m"
    # a microcontroller has no threads: 'parallel' loops stay plain loops (no OpenMP, no heap);
    # the NCHW kernels and the staging by channel blocks fit the int8 micro-kernels
    openmp = False

    def claims(self, kind, mcpu):
        return kind == "c" and mcpu is not None and mcpu.startswith("cortex-m")

    def core(self, target):
        return core(target.mcpu)

    def c_defines(self, target):
        # a DSP micro-kernel's hand-scheduled loop that groups loads for a single-issue pipeline
        # (fc_s8x4's) leaves a dual-issue core the compiler's schedule, where that measured faster
        c = core(target.mcpu)
        return {"AOT_CORTEX_M_SINGLE_ISSUE": "1"} if c.variant == "dsp" and not c.dual_issue else {}

    # an M-profile core by its Arm name, with gcc's suffixes (cortex-m0plus, cortex-m35p, cortex-m4+nodsp):
    # one of the table's, or another Arm M-profile core, compiled with none of the extensions
    _NAME = re.compile(r"^(cortex-m[0-9]+(?:plus|p)?)(?:\+no[a-z.]+)*\+?$")
    OTHER_CORES = ("cortex-m1", "cortex-m23", "cortex-m52")
    mattrs = ("dsp", "mve", "mve.fp", "fp", "fp.dp", "fp64", "fp16", "fullfp16", "lob", "pacbti", "cdecp0",
              "thumb2", "vfp4", "vfp4sp", "vfp5", "nodsp", "nomve", "nofp")

    def knows_mcpu(self, mcpu):
        m = self._NAME.match(mcpu or "")
        return bool(m) and (m.group(1) in CORES or m.group(1) in self.OTHER_CORES)

    def known_mcpus(self):
        return sorted(set(CORES) | set(self.OTHER_CORES), key=lambda n: (len(n), n))

    def writes_over_as_scheduled(self, target):
        return core(target.mcpu).variant == "dsp"      # dw3_s8r (aot/schedules/arm_dw.py depthwise_rows)

    def staging_block(self, target):
        variant = core(target.mcpu).variant
        return (1, 1) if variant == "plain" else (STAGE_BLOCK, 2 if variant == "mve" else 4)


CORTEX_M = CortexM()
