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
  dual_issue     1: two adjacent independent single-cycle instructions of different units issue together
  load_use       added when an instruction reads the register the load just before it wrote
  agu_stall      added when a load's or store's address register was written by the
                 data-processing instruction just before it
  flash_wait_states  added to each data load from [flash_start, flash_end), the memory the board keeps
                 its constants in (0: zero-wait-state memory)
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Timing:
    core: str
    source: str                   # where the numbers come from (docs/cycles.md has the detail)
    table: dict = field(default_factory=dict)
    approximation: str = ""       # what the model is known not to capture on this core

    def with_memory(self, flash_wait_states=0, flash_start=0, flash_end=0):
        t = dict(self.table, flash_wait_states=int(flash_wait_states), flash_start=int(flash_start),
                 flash_end=int(flash_end))
        return replace(self, table=t)

    @property
    def memory(self):
        ws = self.table.get("flash_wait_states", 0)
        if not ws:
            return "zero wait states (every fetch and load single-cycle memory)"
        return (f"{ws} flash wait state{'s' if ws != 1 else ''} on data loads from "
                f"0x{self.table['flash_start']:08x}-0x{self.table['flash_end'] - 1:08x}, instruction fetches cached")

    def text(self):
        """The table as the plugin reads it: 'key value' lines."""
        return "".join(f"{k} {int(v)}\n" for k, v in sorted(self.table.items()))


# Cortex-M4: Technical Reference Manual r0p1, 3.3.1 "Table of processor instructions", 3.3.2 "Load/store
# timings" and 7.2.2 "FPU instruction set". P (refill) is 1 to 3 there: 1, +1 for a 32-bit target at a
# halfword address, +1 for BX (register target), +2 for a target loaded from memory (LDR PC, POP {PC},
# TBB: "2+P, at least 5/6"). Loads 2 cycles, 1 when pipelined behind a load whose result is not
# their base; STR with an immediate offset 1 (write buffer), with a register offset 2; an address
# from the ALU result just before stalls 1.
_M4 = dict(
    alu=1, mul=1, mla=1, mull=1, dsp=1, div=12,
    ldr=2, ldr_pipelined=1, str=1, str_reg=2, ldrd=3, strd=3, ldm_base=1,
    refill=1, refill_wide_target=1, refill_indirect=1, refill_load=2, le=1, le_refill=1,
    it=1, it_folded=0, sys=2, barrier=4,
    fp_alu=1, fp_mac=3, fp_div=14, fp_load=2, fp_store=2, fp_ldm_base=1, fp_mov=2, fp_mov64=2,
    vec=2, vec_overlap=1, dual_issue=0, load_use=0, agu_stall=1, flash_wait_states=0, flash_start=0, flash_end=0,
)

# Cortex-M33: Arm publishes no cycle table. Measured on the RP2350 (jnk0le's pipeline tests; the
# SLOTHY project's M33 model): single issue, loads issue in 1 cycle and deliver in 2 (to the
# address and to an ALU consumer alike), LDRD 2, LDM one cycle a register, a taken branch 3
# cycles (P = 2), MACs 1 with the accumulator forwarded.
_M33 = dict(_M4, ldr=1, ldr_pipelined=1, str=1, str_reg=1, ldrd=2, strd=2, ldm_base=0,
            refill=2, refill_wide_target=0, refill_indirect=1, refill_load=1, load_use=1, agu_stall=0,
            fp_load=1, fp_store=1, fp_mov=1)

TIMINGS = {
    "cortex-m3": Timing("cortex-m3", "Cortex-M3 TRM r2p1, table 18-1", dict(_M4, mla=2, mull=5),
                        "long multiplies at 5 (the TRM gives 3 to 7 by operands); P as for the M4"),
    "cortex-m4": Timing("cortex-m4", "Cortex-M4 TRM r0p1, tables 3-1 and 7-1, 3.3.2 load/store timings",
                        dict(_M4),
                        "P from the target's width and alignment and the branch's kind (the TRM gives "
                        "1 to 3); a divide at 12 (2 to 12 by operands); instructions an IT block skips "
                        "priced as executed"),
    "cortex-m33": Timing("cortex-m33", "no Arm cycle table: measurements on the RP2350 (jnk0le, SLOTHY)",
                         _M33,
                         "single issue (the M33 pairs a few 16-bit instructions, not modelled); load-use "
                         "latency 2; MAC result latency to a non-accumulating use not modelled"),
    # Cortex-M7: no Arm cycle table either. Dual issue of two independent single-cycle instructions on
    # different units (LLVM's Cortex-M7 model; jnk0le's measurements on the STM32H743): loads issue in
    # one cycle with a one-cycle load-use stall; branches are predicted, so a taken one adds 1 and a
    # misprediction (about 8 cycles) is not seen; LDM/STM move two registers a cycle.
    "cortex-m7": Timing("cortex-m7", "no Arm cycle table: LLVM's Cortex-M7 scheduling model and jnk0le's "
                        "STM32H743 measurements, as an approximation",
                        dict(_M4, ldr=1, ldr_pipelined=1, str=1, str_reg=1, ldrd=1, strd=1, ldm_base=0,
                             refill=1, refill_wide_target=0, refill_indirect=1, refill_load=2,
                             load_use=1, agu_stall=1, fp_mac=1, fp_load=1, fp_store=1, fp_mov=1,
                             dual_issue=1),
                        "dual issue of independent pairs only (no issue-slot or bank rules beyond the unit); "
                        "every branch predicted right; LDM/STM at one register a cycle"),
    # Cortex-M55: Helium is dual-beat: a 128-bit instruction holds its pipe (load/store, integer,
    # multiply/float) 2 cycles, and overlaps 1 cycle with the one before it on another pipe (Arm's
    # LLVM Cortex-M55 model); the model tells load/store from arithmetic only. LE/LETP after the first
    # iteration run from the loop buffer (0). The scalar pipeline is "a lot like the M4/M33" with one
    # more stage: priced as the M33's.
    "cortex-m55": Timing("cortex-m55", "Arm's LLVM Cortex-M55 scheduling model (beats, pipes, overlap); "
                         "scalar part as the M33",
                         dict(_M33, le=0, le_refill=0),
                         "Helium pipes told apart as load/store vs. the rest only (an integer op after a "
                         "multiply would overlap on the core, not in the model); VCTP/VPST priced as 2"),
}


def timing(core: str) -> Timing:
    """The timing table of `core`, refused for a core the model has none for."""
    from ..errors import AotError
    t = TIMINGS.get(core)
    if t is None:
        raise AotError(f"no cycle model for core '{core}' (cores with one: {', '.join(sorted(TIMINGS))})")
    return t
