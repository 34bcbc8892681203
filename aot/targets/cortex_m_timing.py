"""Cycle timing of the Cortex-M cores, the facts the cycle model (boards/cortex_m/qemu_cycles_plugin.c,
driven by aot/cycles.py) prices each executed instruction with. One table per core; docs/cycles.md
gives each number's source and what the model leaves out.

Keys (cycles unless said):
  alu            data processing, shifts, moves, extends, SIMD32 add/sub, saturation, hints
  mul / mla      MUL / MLA, MLS             mull  SMULL, UMULL, SMLAL, UMLAL
  dsp            the 32x32/16x16 DSP multiplies and MACs (SMLAD, SMLABB, SMMLA, SMLAWB, USADA8 ...)
  div            SDIV/UDIV (their TRM range's upper end: the model cannot see the operands)
  ldr            a single load; ldr_pipelined when it follows a load whose result is not its base
  str / str_reg  a store with an immediate / register offset
  ldrd / strd    LDRD / STRD               ldm_base  LDM/STM/PUSH/POP cost ldm_base + registers
  refill         P, the pipeline refill a taken branch adds to its own cycle; refill_wide_target
                 more when the target is a 32-bit instruction at a halfword address,
                 refill_indirect more when the target comes from a register (BX, POP {PC}, LDR PC,
                 TBB); le_refill what a taken LE/LETP adds
  it / it_folded IT alone / after a 16-bit data-processing instruction it folds into
  sys, barrier   MSR/MRS/SVC/BKPT, DSB/DMB/ISB
  fp_*           VFP: alu (VADD, VMUL, VCVT, VCMP, VABS ...), mac (VMLA, VFMA ...), div (VDIV,
                 VSQRT), load/store (VLDR/VSTR), ldm_base (+ registers), mov (core<->S, VMRS),
                 mov64 (VMOV of two core registers)
  vec            a Helium vector instruction (a 128-bit vector over the core's beats);
                 vec_overlap when it follows one on the other unit (load/store vs. arithmetic)
  dual_issue     1: two adjacent single-cycle instructions of different units issue together
  flash_wait_states  added to each data load below flash_end (0: zero-wait-state memory)
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Timing:
    core: str
    source: str                   # where the numbers come from (docs/cycles.md has the detail)
    table: dict = field(default_factory=dict)
    approximation: str = ""       # what the model is known not to capture on this core

    def with_memory(self, flash_wait_states=0, flash_end=0):
        t = dict(self.table, flash_wait_states=int(flash_wait_states), flash_end=int(flash_end))
        return replace(self, table=t)

    @property
    def memory(self):
        ws = self.table.get("flash_wait_states", 0)
        if not ws:
            return "zero wait states (every fetch and load single-cycle memory)"
        return (f"{ws} flash wait state{'s' if ws != 1 else ''} on data loads below "
                f"0x{self.table['flash_end']:08x}, instruction fetches cached")

    def text(self):
        """The table as the plugin reads it: 'key value' lines."""
        return "".join(f"{k} {int(v)}\n" for k, v in sorted(self.table.items()))


# Cortex-M4 (Technical Reference Manual r0p1, 3.3 "Instruction set summary" and 7.2 "FPU instruction set";
# the load/store pipelining and IT folding rules are its notes to those tables)
_M4 = dict(
    alu=1, mul=1, mla=1, mull=1, dsp=1, div=12,
    ldr=2, ldr_pipelined=1, str=1, str_reg=2, ldrd=3, strd=3, ldm_base=1,
    refill=1, refill_wide_target=1, refill_indirect=1, refill_load=2, le=1, le_refill=1,
    it=1, it_folded=0, sys=2, barrier=4,
    fp_alu=1, fp_mac=3, fp_div=14, fp_load=2, fp_store=2, fp_ldm_base=1, fp_mov=2, fp_mov64=2,
    vec=2, vec_overlap=1, dual_issue=0, flash_wait_states=0, flash_end=0,
)

TIMINGS = {
    # Cortex-M3 TRM r2p1, table 18-1: the M4's pipeline without DSP or FPU; long multiplies take
    # 3 to 7 cycles by operands (taken at 5), MLA 2
    "cortex-m3": Timing("cortex-m3", "Cortex-M3 TRM r2p1, table 18-1", dict(_M4, mla=2, mull=5),
                        "long multiplies at 5 (the TRM gives 3 to 7 by operands); P as for the M4"),
    "cortex-m4": Timing("cortex-m4", "Cortex-M4 TRM r0p1, tables 3-1, 3-2 and 7-1", dict(_M4),
                        "P taken as 1 + 1 for a 32-bit target at a halfword address + 1 for a register "
                        "target (the TRM gives 1 to 3); a divide at 12"),
    # Arm publishes no cycle table for the M33: its 3-stage pipeline runs the Armv7-M/DSP instructions
    # as the M4's, with single-cycle MLA/MLS
    "cortex-m33": Timing("cortex-m33", "Cortex-M4 TRM figures (the M33 TRM lists no cycle counts); MLA 1",
                         dict(_M4, mla=1),
                         "the M4's table with MLA/MLS at 1 cycle; the M33's limited dual issue of "
                         "16-bit pairs is not modelled"),
    # dual issue of two single-cycle instructions of different units, loads single-cycle issue,
    # branches predicted (a taken branch adds 1)
    "cortex-m7": Timing("cortex-m7", "Cortex-M7 TRM r1p2 (pipeline description; no cycle table) and "
                        "Arm's dual-issue rules, as an approximation",
                        dict(_M4, mla=1, ldr=1, ldr_pipelined=1, str=1, str_reg=1, ldrd=2, strd=2,
                             refill=1, refill_wide_target=0, refill_indirect=1, fp_mac=1, fp_load=1,
                             dual_issue=1),
                        "dual issue without register dependences (an upper bound on pairing); load-use "
                        "stalls and branch mispredictions not modelled"),
    # the scalar pipeline as the M4's; Helium dual-beat: a 128-bit vector instruction in two cycles,
    # overlapping by one with the one before it on the other unit; LE from the loop buffer
    "cortex-m55": Timing("cortex-m55", "Cortex-M55 TRM r1p1 (dual-beat Helium) and the Armv8.1-M "
                         "beat-overlap rules; scalar part as the M4",
                         dict(_M4, mla=1, le_refill=0),
                         "every Helium instruction two beats-cycles, overlapping one cycle with a "
                         "neighbour on the other unit; scalar part priced as the M4"),
}


def timing(core: str) -> Timing:
    """The timing table of `core`, refused for a core the model has none for."""
    from ..errors import AotError
    t = TIMINGS.get(core)
    if t is None:
        raise AotError(f"no cycle model for core '{core}' (cores with one: {', '.join(sorted(TIMINGS))})")
    return t
