/* Cycle estimate of Cortex-M firmware under QEMU: a TCG plugin that prices every executed Thumb
 * instruction from a per-core timing table (aot/targets/cortex_m_timing.py writes it) and adds the
 * prices up between the harness's aot_profile_start and aot_profile_stop, in total and per kernel.
 *
 * Built at first use by aot/cycles.py with the host compiler against the qemu-plugin.h of the
 * installed QEMU (plugin API version 1, QEMU 7.2 on). It decodes the instruction bits itself rather
 * than QEMU's disassembly, which does not know Helium.
 *
 * What it can and cannot see, and so what the estimate is:
 *   - static per instruction: its class's cycles from the table (ALU, multiplies, DSP, divide,
 *     loads/stores and their multiple forms, VFP, Helium vector instructions);
 *   - within a translation block: load pipelining (a load right after a load/store single whose
 *     result it does not use as its base costs the pipelined price), IT folding, Helium beat
 *     overlap of consecutive vector instructions of different units, dual issue (Cortex-M7);
 *   - at run time: whether the branch that ends a block was taken (the next block does not start
 *     at its fall-through address), which then costs the pipeline refill;
 *   - flash wait states on data loads from the board's flash (where its constants live), when the
 *     table sets any (loads'
 *     addresses come from memory callbacks, registered only then); instruction fetches are taken
 *     to hit a cache or prefetch buffer;
 *   - not: register values (a divide costs the table's fixed price), conditional instructions in
 *     an IT block that do not execute (priced as executed), bus contention, interrupts' stacking.
 *
 * Arguments (-plugin file=...,arg=value):
 *   table=PATH    the timing table: "key value" lines (see cortex_m_timing.py for the keys)
 *   out=PATH      where the report goes at exit
 *   blocks=PATH   optional: every translated block's address, instructions, executions and
 *                 cycles in the window, for finding a kernel's hot loop
 *   start=0xADDR  aot_profile_start: counting starts when a block starting there executes
 *   stop=0xADDR   aot_profile_stop: counting stops there
 *   funcs=PATH    optional, "0xADDR 0xEND kind name" lines: kind k (a kernel, cycles attributed to it
 *                 from its entry on, callees included), i (a range of executor code that is the
 *                 call of a kernel, inlined or not: attributed to that kernel, callees included) or
 *                 e (executor code: attributed to "(executor)")
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* ---- the timing table ---------------------------------------------------------------------- */
enum {
  K_ALU, K_MUL, K_MLA, K_MULL, K_DSP, K_DIV, K_LDR, K_LDR_PIPE, K_STR, K_STR_REG, K_LDRD, K_STRD,
  K_LDM_BASE, K_REFILL, K_REFILL_WIDE, K_REFILL_INDIRECT, K_REFILL_LOAD, K_LE, K_LE_REFILL, K_IT, K_IT_FOLD, K_SYS, K_BARRIER,
  K_FP_ALU, K_FP_MAC, K_FP_DIV, K_FP_LD, K_FP_ST, K_FP_LDM_BASE, K_FP_MOV, K_FP_MOV64,
  K_VEC, K_VEC_OVERLAP, K_DUAL_ISSUE, K_LOAD_USE, K_AGU_STALL, K_FLASH_WS, K_FLASH_START, K_FLASH_END, K_COUNT
};
static const char *const key_names[K_COUNT] = {
  "alu", "mul", "mla", "mull", "dsp", "div", "ldr", "ldr_pipelined", "str", "str_reg", "ldrd", "strd",
  "ldm_base", "refill", "refill_wide_target", "refill_indirect", "refill_load", "le", "le_refill", "it", "it_folded", "sys", "barrier",
  "fp_alu", "fp_mac", "fp_div", "fp_load", "fp_store", "fp_ldm_base", "fp_mov", "fp_mov64",
  "vec", "vec_overlap", "dual_issue", "load_use", "agu_stall", "flash_wait_states", "flash_start", "flash_end",
};
static uint64_t T[K_COUNT];
static int have[K_COUNT];

/* ---- instruction classes ------------------------------------------------------------------- */
enum cls {
  C_ALU, C_MUL, C_MLA, C_MULL, C_DSP, C_DIV, C_LDR, C_STR, C_LDRD, C_STRD, C_LDM, C_STM,
  C_B, C_BCOND, C_BL, C_BX, C_TB, C_LDR_PC, C_POP_PC, C_IT, C_NOP, C_SYS, C_BARRIER,
  C_FP_ALU, C_FP_MAC, C_FP_DIV, C_FP_LD, C_FP_ST, C_FP_LDM, C_FP_MOV, C_FP_MOV64,
  C_VEC_LS, C_VEC_OP, C_LOOP_START, C_LOOP_END, C_WLS
};

struct insn {
  enum cls c;
  unsigned n;        /* registers moved by a multiple load/store */
  int rt, rn;        /* a load's destination and base register (-1: none) */
  int narrow;        /* a 16-bit encoding */
  int reg_offset;    /* a store with a register offset (does not take the pipelined price) */
  unsigned reads;    /* core registers read (bit r; PC left out), for the dependence stalls */
  unsigned writes;   /* core registers written */
  unsigned addr;     /* registers an address is formed from (a load's or store's base, offset) */
};

static unsigned popcount16(unsigned v) {
  unsigned n = 0;
  for (v &= 0xFFFFu; v; v &= v - 1u) {
    n++;
  }
  return n;
}

static void decode16(unsigned hw, struct insn *d) {
  d->narrow = 1;
  if ((hw >> 11) == 0x1Cu) {                       /* B T2 */
    d->c = C_B;
  } else if ((hw >> 12) == 0xDu) {                 /* B<c> T1, UDF, SVC */
    unsigned cond = (hw >> 8) & 0xFu;
    d->c = cond >= 0xEu ? C_SYS : C_BCOND;
  } else if ((hw >> 12) == 0xBu) {                 /* miscellaneous */
    if ((hw & 0xF500u) == 0xB100u) {
      d->c = C_BCOND;                              /* CBZ, CBNZ */
    } else if ((hw & 0xFE00u) == 0xB400u) {
      d->c = C_STM;                                /* PUSH */
      d->n = popcount16(hw & 0xFFu) + ((hw >> 8) & 1u);
    } else if ((hw & 0xFE00u) == 0xBC00u) {
      d->n = popcount16(hw & 0xFFu) + ((hw >> 8) & 1u);
      d->c = (hw & 0x100u) ? C_POP_PC : C_LDM;     /* POP */
    } else if ((hw & 0xFF00u) == 0xBF00u) {
      d->c = (hw & 0xFu) ? C_IT : C_NOP;           /* IT, hints */
    } else if ((hw & 0xFF00u) == 0xBE00u) {
      d->c = C_SYS;                                /* BKPT */
    } else {
      d->c = C_ALU;                                /* SP arithmetic, extends, REV, CPS */
    }
  } else if ((hw >> 12) == 0xCu) {                 /* LDM, STM */
    d->n = popcount16(hw & 0xFFu);
    d->c = (hw & 0x800u) ? C_LDM : C_STM;
  } else if ((hw >> 13) == 3u || (hw >> 12) == 8u) {   /* LDR/STR(B) imm, LDRH/STRH imm */
    d->c = (hw & 0x800u) ? C_LDR : C_STR;
    d->rt = (int)(hw & 7u);
    d->rn = (int)((hw >> 3) & 7u);
  } else if ((hw >> 12) == 9u) {                   /* SP-relative */
    d->c = (hw & 0x800u) ? C_LDR : C_STR;
    d->rt = (int)((hw >> 8) & 7u);
    d->rn = 13;
  } else if ((hw >> 12) == 5u) {                   /* register offset */
    unsigned op = (hw >> 9) & 7u;
    d->c = op <= 2u ? C_STR : C_LDR;
    d->reg_offset = 1;
    d->rt = (int)(hw & 7u);
    d->rn = (int)((hw >> 3) & 7u);
  } else if ((hw >> 11) == 9u) {                   /* LDR literal */
    d->c = C_LDR;
    d->rt = (int)((hw >> 8) & 7u);
    d->rn = 15;
  } else if ((hw >> 10) == 0x11u) {                /* special data, BX, BLX */
    unsigned op = (hw >> 8) & 3u;
    unsigned rd = (hw & 7u) | ((hw >> 4) & 8u);
    if (op == 3u) {
      d->c = C_BX;
    } else {
      d->c = (op != 1u && rd == 15u) ? C_BX : C_ALU;   /* ADD PC / MOV PC branch */
    }
  } else if ((hw >> 10) == 0x10u) {                /* data processing */
    d->c = ((hw >> 6) & 0xFu) == 0xDu ? C_MUL : C_ALU;
  } else {
    d->c = C_ALU;                                  /* shifts, add/sub/mov/cmp imm, ADR, ADD SP */
  }
}

/* the coprocessor spaces: VFP (cp10/cp11) and Helium (the rest) */
static void decode_cp(unsigned hw1, unsigned hw2, struct insn *d) {
  unsigned coproc = (hw2 >> 8) & 0xFu;
  int vfp = coproc == 10u || coproc == 11u;
  if ((hw1 & 0xEF00u) == 0xEF00u) {                /* 111x 1111: vector data processing */
    d->c = C_VEC_OP;
  } else if ((hw1 & 0xEE00u) == 0xEC00u) {         /* 111x 110x: loads, stores, 64-bit moves */
    if (!vfp) {
      d->c = C_VEC_LS;
    } else if ((hw1 & 0xFFE0u) == 0xEC40u) {
      d->c = C_FP_MOV64;                           /* VMOV two core registers */
    } else if ((hw1 & 0xFF20u) == 0xED00u) {
      d->c = (hw1 & 0x10u) ? C_FP_LD : C_FP_ST;    /* VLDR, VSTR */
      d->rn = (int)(hw1 & 0xFu);
    } else {
      d->c = C_FP_LDM;                             /* VLDM, VSTM, VPUSH, VPOP */
      d->n = coproc == 11u ? (hw2 & 0xFEu) : (hw2 & 0xFFu);
    }
  } else {                                         /* 111x 1110: data processing, transfers */
    if (!vfp) {
      d->c = C_VEC_OP;
    } else if ((hw1 & 0xFFEFu) == 0xEEE1u && (hw2 & 0x10u)) {
      d->c = C_FP_ALU;                             /* VMRS, VMSR */
    } else if (hw2 & 0x10u) {
      d->c = C_FP_MOV;                             /* VMOV core <-> S */
    } else {
      unsigned opc1 = ((hw1 >> 4) & 0x3u) | ((hw1 >> 5) & 0x4u);
      unsigned opc2 = hw1 & 0xFu;
      unsigned opc3 = (hw2 >> 6) & 0x3u;
      switch (opc1) {
        case 0: d->c = C_FP_MAC; break;                               /* VMLA, VMLS */
        case 1: d->c = (opc3 & 1u) ? C_FP_ALU : C_FP_MAC; break;      /* VNMUL / VNMLA, VNMLS */
        case 2: case 3: d->c = C_FP_ALU; break;                       /* VMUL, VADD, VSUB */
        case 4: d->c = C_FP_DIV; break;                               /* VDIV */
        case 5: case 6: d->c = C_FP_MAC; break;                       /* VFNMA/S, VFMA/S */
        default: d->c = (opc2 == 1u && opc3 == 3u) ? C_FP_DIV : C_FP_ALU;   /* VSQRT; VMOV, VCVT, VCMP */
      }
    }
  }
}

static void decode32(unsigned hw1, unsigned hw2, struct insn *d) {
  unsigned op1 = (hw1 >> 11) & 3u;
  unsigned op2 = (hw1 >> 4) & 0x7Fu;
  d->narrow = 0;
  if (op1 == 1u) {
    if ((op2 & 0x64u) == 0x00u) {                  /* LDM, STM (PUSH.W, POP.W) */
      d->n = popcount16(hw2);
      if (hw1 & 0x10u) {
        d->c = (hw2 & 0x8000u) ? C_POP_PC : C_LDM;
      } else {
        d->c = C_STM;
      }
    } else if ((op2 & 0x64u) == 0x04u) {           /* dual, exclusive, table branch */
      if ((hw1 & 0xFFF0u) == 0xE8D0u && (hw2 & 0xFFE0u) == 0xF000u) {
        d->c = C_TB;
      } else if ((hw1 & 0x120u) == 0u) {
        d->c = (hw1 & 0x10u) ? C_LDR : C_STR;      /* LDREX, STREX */
        d->rn = (int)(hw1 & 0xFu);
        d->rt = (int)(hw2 >> 12);
      } else {
        d->c = (hw1 & 0x10u) ? C_LDRD : C_STRD;
      }
    } else if ((op2 & 0x60u) == 0x20u) {
      d->c = C_ALU;                                /* data processing, shifted register */
    } else {
      decode_cp(hw1, hw2, d);
    }
  } else if (op1 == 2u) {
    if ((hw2 & 0x8000u) == 0u) {
      d->c = C_ALU;                                /* data processing, immediate */
    } else {
      unsigned b = (hw2 >> 12) & 7u;
      if ((b & 5u) == 0u) {                        /* B<c> T3, or miscellaneous control */
        if (((hw1 >> 7) & 7u) != 7u) {
          d->c = C_BCOND;
        } else if ((hw1 & 0xFFF0u) == 0xF3B0u) {
          d->c = C_BARRIER;                        /* DSB, DMB, ISB */
        } else if ((hw1 & 0xFFF0u) == 0xF3A0u) {
          d->c = C_NOP;                            /* hints */
        } else {
          d->c = C_SYS;                            /* MSR, MRS */
        }
      } else if ((b & 5u) == 1u) {
        d->c = C_B;                                /* B T4 */
      } else if ((b & 5u) == 5u) {
        d->c = C_BL;
      } else if ((hw1 & 0xFF80u) == 0xF000u) {     /* Armv8.1-M low-overhead loops, VCTP */
        if (hw2 == 0xE801u) {
          d->c = C_VEC_OP;                         /* VCTP */
        } else if (hw2 == 0xE001u) {
          d->c = C_LOOP_START;                     /* DLS, DLSTP */
        } else if ((hw1 & 0xFu) == 0xFu) {
          d->c = C_LOOP_END;                       /* LE, LETP */
        } else {
          d->c = C_WLS;                            /* WLS, WLSTP */
        }
      } else {
        d->c = C_SYS;                              /* branch future and the like */
      }
    }
  } else {
    if ((op2 & 0x71u) == 0x00u) {                  /* store single */
      d->c = C_STR;
      d->rn = (int)(hw1 & 0xFu);
      d->reg_offset = (hw2 & 0x800u) == 0u && (hw2 & 0xFC0u) == 0u;
    } else if ((op2 & 0x60u) == 0x00u) {           /* load byte, halfword, word; hints */
      unsigned rt = hw2 >> 12;
      d->rn = (int)(hw1 & 0xFu);
      d->rt = (int)rt;
      if (rt == 15u) {
        d->c = (op2 & 0x6u) == 0x4u ? C_LDR_PC : C_NOP;   /* LDR PC / PLD, PLI */
      } else {
        d->c = C_LDR;
      }
    } else if ((op2 & 0x70u) == 0x20u) {
      d->c = C_ALU;                                /* data processing, register; SIMD32 add/sub */
    } else if ((op2 & 0x78u) == 0x30u) {           /* multiply, multiply-accumulate, abs diff */
      unsigned o = (hw1 >> 4) & 7u;
      unsigned ra = hw2 >> 12;
      if (o == 0u) {
        d->c = ((hw2 >> 4) & 3u) == 0u && ra == 15u ? C_MUL : C_MLA;   /* MUL / MLA, MLS */
      } else {
        d->c = C_DSP;                              /* SMLAxy, SMLAD, SMUAD, SMMLA, USADA8, ... */
      }
    } else if ((op2 & 0x78u) == 0x38u) {           /* long multiply, divide */
      unsigned o = (hw1 >> 4) & 7u;
      d->c = ((o == 1u || o == 3u) && ((hw2 >> 4) & 0xFu) == 0xFu) ? C_DIV : C_MULL;
    } else {
      decode_cp(hw1, hw2, d);
    }
  }
}

#define R(x) (1u << ((x) & 0xFu))

/* the core registers of the common encodings: data processing, multiplies, loads and stores,
 * moves to and from the FPU. Others read and write none as far as the model is concerned. */
static void regs16(unsigned hw, struct insn *d) {
  unsigned lo = hw & 7u, mid = (hw >> 3) & 7u, hi = (hw >> 6) & 7u, top = (hw >> 8) & 7u;
  if ((hw >> 13) == 0u) {                          /* shift imm, add/sub reg or imm3 */
    d->writes = R(lo);
    d->reads = R(mid) | (((hw >> 11) == 3u && !(hw & 0x400u)) ? R(hi) : 0u);
  } else if ((hw >> 13) == 1u) {                   /* MOV/CMP/ADD/SUB imm8 */
    unsigned op = (hw >> 11) & 3u;
    d->reads = op == 0u ? 0u : R(top);
    d->writes = op == 1u ? 0u : R(top);
  } else if ((hw >> 10) == 0x10u) {                /* data processing */
    unsigned op = (hw >> 6) & 0xFu;
    d->reads = R(lo) | R(mid);
    d->writes = (op == 8u || op == 0xAu || op == 0xBu) ? 0u : R(lo);   /* TST, CMP, CMN */
  } else if ((hw >> 10) == 0x11u) {                /* special data, BX */
    unsigned rdn = (hw & 7u) | ((hw >> 4) & 8u), rm = (hw >> 3) & 0xFu, op = (hw >> 8) & 3u;
    d->reads = R(rm) | ((op == 0u || op == 1u) ? R(rdn) : 0u);
    d->writes = (op == 0u || op == 2u) && rdn != 15u ? R(rdn) : 0u;
  } else if ((hw >> 11) == 9u) {                   /* LDR literal */
    d->writes = R(top);
  } else if ((hw >> 12) == 5u) {                   /* register offset */
    d->addr = R(mid) | R(hi);
    d->reads = d->addr | (d->c == C_STR ? R(lo) : 0u);
    d->writes = d->c == C_LDR ? R(lo) : 0u;
  } else if ((hw >> 13) == 3u || (hw >> 12) == 8u) {   /* imm offset */
    d->addr = R(mid);
    d->reads = d->addr | (d->c == C_STR ? R(lo) : 0u);
    d->writes = d->c == C_LDR ? R(lo) : 0u;
  } else if ((hw >> 12) == 9u) {                   /* SP-relative */
    d->addr = R(13);
    d->reads = d->addr | (d->c == C_STR ? R(top) : 0u);
    d->writes = d->c == C_LDR ? R(top) : 0u;
  } else if ((hw >> 12) == 0xAu) {                 /* ADR, ADD SP */
    d->writes = R(top);
    d->reads = (hw & 0x800u) ? R(13) : 0u;
  } else if ((hw & 0xFF00u) == 0xB200u || (hw & 0xFF00u) == 0xBA00u) {   /* extends, REV */
    d->writes = R(lo);
    d->reads = R(mid);
  } else if ((hw & 0xF500u) == 0xB100u) {          /* CBZ, CBNZ */
    d->reads = R(lo);
  } else if ((hw >> 12) == 0xCu) {                 /* LDM, STM */
    d->addr = R(top);
    d->reads = d->addr | (d->c == C_STM ? (hw & 0xFFu) : 0u);
    d->writes = d->c == C_LDM ? (hw & 0xFFu) : 0u;
  } else if ((hw & 0xFE00u) == 0xBC00u) {          /* POP */
    d->writes = hw & 0xFFu;
  }
}

static void regs32(unsigned hw1, unsigned hw2, struct insn *d) {
  unsigned op1 = (hw1 >> 11) & 3u, op2 = (hw1 >> 4) & 0x7Fu;
  unsigned rn = hw1 & 0xFu, rm = hw2 & 0xFu, rd = (hw2 >> 8) & 0xFu, rt = hw2 >> 12;
  switch (d->c) {
    case C_ALU:
      if (op1 == 2u && (op2 & 0x24u) == 0x24u) {   /* MOVW, MOVT: no register source */
        d->writes = R(rd);
        break;
      }
      d->reads = (rn != 15u ? R(rn) : 0u) | ((op1 != 2u) ? R(rm) : 0u);
      d->writes = rd != 15u ? R(rd) : 0u;
      break;
    case C_MUL: case C_MLA: case C_DSP:
      d->reads = R(rn) | R(rm) | (rt != 15u ? R(rt) : 0u);
      d->writes = R(rd);
      break;
    case C_MULL:                                   /* RdLo = hw2[15:12], RdHi = hw2[11:8] */
      d->reads = R(rn) | R(rm) | R(rt) | R(rd);
      d->writes = R(rt) | R(rd);
      break;
    case C_DIV:
      d->reads = R(rn) | R(rm);
      d->writes = R(rd);
      break;
    case C_LDR: case C_STR:
      d->addr = R(rn) | (d->reg_offset || ((hw2 & 0x800u) == 0u && (hw2 & 0xFC0u) == 0u) ? R(rm) : 0u);
      d->reads = d->addr | (d->c == C_STR ? R(rt) : 0u);
      d->writes = d->c == C_LDR && rt != 15u ? R(rt) : 0u;
      break;
    case C_LDRD: case C_STRD:
      d->addr = R(rn);
      d->reads = d->addr | (d->c == C_STRD ? R(rt) | R(rd) : 0u);
      d->writes = d->c == C_LDRD ? R(rt) | R(rd) : 0u;
      break;
    case C_LDM: case C_STM: case C_POP_PC:
      d->addr = R(rn);
      d->reads = d->addr | (d->c == C_STM ? (hw2 & 0x7FFFu) : 0u);
      d->writes = d->c != C_STM ? (hw2 & 0x7FFFu) : 0u;
      break;
    case C_FP_LD: case C_FP_ST: case C_FP_LDM: case C_VEC_LS:
      d->addr = R(rn);
      d->reads = d->addr;
      break;
    case C_FP_MOV:
      if (hw1 & 0x10u) {
        d->writes = R(rt);                         /* VMOV Rt, Sn */
      } else {
        d->reads = R(rt);
      }
      break;
    default:
      break;
  }
  d->reads &= 0x7FFFu;
  d->writes &= 0x7FFFu;
}

/* the width of the Thumb instruction starting with halfword hw1. QEMU's size can be larger: at the
 * end of a page its translator peeks at the next halfword, which the plugin API counts as the
 * instruction's */
static size_t thumb_size(unsigned hw1) {
  unsigned top = hw1 >> 11;
  return (top == 0x1Du || top == 0x1Eu || top == 0x1Fu) ? 4u : 2u;
}

static void decode(const uint8_t *p, size_t size, struct insn *d) {
  unsigned hw1 = (unsigned)p[0] | ((unsigned)p[1] << 8);
  memset(d, 0, sizeof *d);
  d->rt = -1;
  d->rn = -1;
  if (size >= 4u && thumb_size(hw1) == 4u) {
    unsigned hw2 = (unsigned)p[2] | ((unsigned)p[3] << 8);
    decode32(hw1, hw2, d);
    regs32(hw1, hw2, d);
  } else {
    decode16(hw1, d);
    regs16(hw1, d);
    d->reads &= 0x7FFFu;
    d->writes &= 0x7FFFu;
  }
}

static int is_branch(enum cls c) {
  return c == C_B || c == C_BCOND || c == C_BL || c == C_BX || c == C_TB || c == C_LDR_PC || c == C_POP_PC ||
         c == C_LOOP_END || c == C_WLS;
}

/* which unit an instruction issues to, for dual issue (Cortex-M7) and Helium overlap */
enum unit { U_ALU, U_MAC, U_MEM, U_FP, U_BRANCH, U_VEC_LS, U_VEC_OP, U_OTHER };

static enum unit unit_of(enum cls c) {
  switch (c) {
    case C_ALU: return U_ALU;
    case C_MUL: case C_MLA: case C_MULL: case C_DSP: return U_MAC;
    case C_LDR: case C_STR: return U_MEM;
    case C_FP_ALU: case C_FP_MAC: case C_FP_MOV: return U_FP;
    case C_B: case C_BCOND: case C_BL: case C_BX: return U_BRANCH;
    case C_VEC_LS: return U_VEC_LS;
    case C_VEC_OP: return U_VEC_OP;
    default: return U_OTHER;
  }
}

static uint64_t base_price(const struct insn *d, const struct insn *prev);
static int pairs(const struct insn *a, const struct insn *b, uint64_t ca, uint64_t cb);

static int is_load(enum cls c) {
  return c == C_LDR || c == C_LDRD || c == C_LDM || c == C_POP_PC || c == C_FP_LD;
}

/* the static price of `d`, the instruction before it being `prev` (NULL: none): its own cycles
 * and the stalls of using what `prev` produced too early */
static uint64_t price(const struct insn *d, const struct insn *prev) {
  uint64_t c = base_price(d, prev);
  if (prev) {
    /* a loaded value used at once (a core whose loads issue in one cycle but deliver in two) */
    if (is_load(prev->c) && (d->reads & prev->writes)) {
      c += T[K_LOAD_USE];
    }
    /* an address formed from the result of the data-processing instruction just before */
    if (!is_load(prev->c) && (d->addr & prev->writes)) {
      c += T[K_AGU_STALL];
    }
  }
  return c;
}

static uint64_t base_price(const struct insn *d, const struct insn *prev) {
  switch (d->c) {
    case C_ALU: case C_NOP: return T[K_ALU];
    case C_MUL: return T[K_MUL];
    case C_MLA: return T[K_MLA];
    case C_MULL: return T[K_MULL];
    case C_DSP: return T[K_DSP];
    case C_DIV: return T[K_DIV];
    case C_LDR:
      /* a load pipelines after a load, unless its address is the value just loaded; nothing
       * pipelines after a store */
      if (prev && prev->c == C_LDR && !(prev->rt >= 0 && prev->rt == d->rn)) {
        return T[K_LDR_PIPE];
      }
      return T[K_LDR];
    case C_STR:
      return d->reg_offset ? T[K_STR_REG] : T[K_STR];
    case C_LDRD: return T[K_LDRD];
    case C_STRD: return T[K_STRD];
    case C_LDM: case C_STM: case C_POP_PC: return T[K_LDM_BASE] + d->n;   /* POP {PC}'s refill: at run time */
    case C_LDR_PC: return T[K_LDR];
    case C_B: case C_BCOND: case C_BL: case C_BX: case C_WLS: return 1;
    case C_LOOP_END: return T[K_LE];
    case C_TB: return 2;
    case C_IT:
      return (prev && prev->narrow && unit_of(prev->c) == U_ALU) ? T[K_IT_FOLD] : T[K_IT];
    case C_SYS: return T[K_SYS];
    case C_BARRIER: return T[K_BARRIER];
    case C_FP_ALU: return T[K_FP_ALU];
    case C_FP_MAC: return T[K_FP_MAC];
    case C_FP_DIV: return T[K_FP_DIV];
    case C_FP_LD:
      if (prev && (prev->c == C_LDR || prev->c == C_FP_LD)) {
        return T[K_LDR_PIPE];
      }
      return T[K_FP_LD];
    case C_FP_ST: return T[K_FP_ST];
    case C_FP_LDM: return T[K_FP_LDM_BASE] + d->n;
    case C_FP_MOV: return T[K_FP_MOV];
    case C_FP_MOV64: return T[K_FP_MOV64];
    case C_VEC_LS: case C_VEC_OP:
      /* a beat-wise core overlaps a vector instruction with the one before it on the other unit */
      if (prev && (unit_of(prev->c) == U_VEC_LS || unit_of(prev->c) == U_VEC_OP) &&
          unit_of(prev->c) != unit_of(d->c)) {
        return T[K_VEC_OVERLAP];
      }
      return T[K_VEC];
    case C_LOOP_START: return 1;
  }
  return 1;
}

/* dual issue: may `b` issue in the same cycle as `a`, the instruction before it? Two single-cycle
 * instructions of different units, or two ALU operations, at most one of them a memory access; a
 * branch pairs with the one before it. Register dependences are not seen (so this is an upper
 * bound on pairing). */
static int pairs(const struct insn *a, const struct insn *b, uint64_t ca, uint64_t cb) {
  enum unit ua = unit_of(a->c), ub = unit_of(b->c);
  if (ca != 1u || cb != 1u || (b->reads & a->writes) || (b->writes & a->writes)) {
    return 0;
  }
  if (ua == U_BRANCH || ua == U_OTHER || ub == U_OTHER) {
    return 0;
  }
  if (ub == U_BRANCH) {
    return ua == U_ALU;
  }
  if (ua == U_MEM && ub == U_MEM) {
    return 0;
  }
  if (ua == U_MAC && ub == U_MAC) {
    return 0;
  }
  if (ua == U_FP && ub == U_FP) {
    return 0;
  }
  return 1;
}

/* ---- per block and per kernel accounting --------------------------------------------------- */
struct func {
  uint64_t start, end;
  char kind;             /* k: a kernel's entry, i: a kernel's code inlined into the executor, e: executor */
  char *name;
  uint64_t cycles, insns, calls, wait;
};

struct run {
  uint64_t cost;         /* the price of every instruction */
  uint64_t last_cost;    /* the last one's */
  int last_paired;       /* the last one issued with the one before it */
};

struct block {
  uint64_t vaddr, fallthrough;
  uint64_t runs, cycles;  /* executions and cycles in the window (blocks=) */
  uint64_t n;            /* instructions */
  uint64_t refill;       /* what a taken branch at its end costs before its target's own part */
  uint64_t wide_target;  /* entering it by a branch costs this more (a 32-bit first instruction
                            at a halfword address takes two fetches) */
  int branch;            /* it ends in a branch */
  int loop_end;          /* that branch is LE/LETP */
  int start, stop;       /* the counting window's edges */
  int func;              /* the kernel it is attributed to (attribute()) */
  int exec;              /* it lies in executor code */
  int entry;             /* it is a kernel's entry */
  int tail;              /* attribute() of its last instruction: a call there from a block that
                            began before the call site (in the executor's own code) still names
                            the site's kernel for the callee */
  struct insn *ins;      /* its instructions, decoded */
  struct run alone;      /* its price entered by a branch (nothing before its first instruction) */
};

static struct func *funcs;
static size_t n_funcs;
static uint64_t win_start, win_stop;
static char *out_path;
static int counting;
static int cur = -1;               /* attribution: a kernel's index, -1 the executor */
static const struct block *prev_tb;
static struct run prev_run;        /* how prev_tb was priced */
static int prev_cur = -1;
static uint64_t total_cycles, total_insns, total_wait, exec_cycles, exec_insns;

static void charge(int who, uint64_t cycles, uint64_t insns) {
  total_cycles += cycles;
  total_insns += insns;
  if (who >= 0) {
    funcs[who].cycles += cycles;
    funcs[who].insns += insns;
  } else {
    exec_cycles += cycles;
    exec_insns += insns;
  }
}

/* the static price of a run of instructions, the one before it being `before` (NULL: none) with
 * its price and pairing: each instruction's price given its predecessor, and dual issue where the
 * core has it (the second of a pair costs nothing more; a pair is never three) */
static struct run price_run(const struct insn *ins, size_t n, const struct insn *before, uint64_t before_cost,
                            int before_paired) {
  struct run r = {0, 0, 0};
  const struct insn *prev = before;
  uint64_t prev_cost = before_cost;
  int prev_paired = before_paired;
  size_t i;
  for (i = 0; i < n; i++) {
    uint64_t c = price(&ins[i], prev);
    if (T[K_DUAL_ISSUE] && prev && !prev_paired && pairs(prev, &ins[i], prev_cost, c)) {
      prev_paired = 1;
      c = 0;
    } else {
      prev_paired = 0;
    }
    r.cost += c;
    prev = &ins[i];
    prev_cost = c;
  }
  r.last_cost = prev_cost;
  r.last_paired = prev_paired;
  return r;
}

static void tb_exec(unsigned int vcpu, void *udata) {
  const struct block *b = udata;
  struct run run;
  (void)vcpu;
  /* the previous block's closing branch was taken when this block is not its fall-through */
  if (counting && prev_tb && prev_tb->branch && b->vaddr != prev_tb->fallthrough) {
    /* a low-overhead loop's end refills from the loop buffer: the target's width does not matter */
    uint64_t refill = prev_tb->refill + (prev_tb->loop_end ? 0u : b->wide_target);
    charge(prev_cur, refill, 0);
    ((struct block *)prev_tb)->cycles += refill;     /* its closing branch's */
  }
  /* entered by falling through, its first instructions pipeline with (or wait for, or issue with)
   * the one before it, which its translation could not see */
  run = b->alone;
  if (prev_tb && b->n && prev_tb->n && b->vaddr == prev_tb->fallthrough) {
    run = price_run(b->ins, b->n, &prev_tb->ins[prev_tb->n - 1], prev_run.last_cost, prev_run.last_paired);
  }
  if (b->start) {
    counting = 1;
  }
  if (b->stop) {
    counting = 0;
  }
  if (b->entry && cur >= 0 && funcs[cur].kind == 'i') {
    /* entered from a call site of the executor: the site names the kernel (one body may serve
     * several kernels the compiler folded together) */
    if (counting) {
      funcs[cur].calls++;
    }
  } else if (b->func >= 0) {
    cur = b->func;
    if (counting && b->entry) {
      funcs[b->func].calls++;
    }
  } else if (b->exec) {
    cur = -1;
  } else if (prev_tb && prev_tb->tail >= 0 && funcs[prev_tb->tail].kind == 'i') {
    cur = prev_tb->tail;        /* a callee of no kernel of its own, called from a kernel's call site */
  }
  if (counting) {
    charge(cur, run.cost, b->n);
    ((struct block *)udata)->runs++;
    ((struct block *)udata)->cycles += run.cost;
  }
  prev_run = run;
  prev_tb = b;
  prev_cur = cur;
}

static void mem_load(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
  (void)vcpu;
  (void)udata;
  if (counting && !qemu_plugin_mem_is_store(info) && vaddr >= T[K_FLASH_START] && vaddr < T[K_FLASH_END]) {
    total_wait += T[K_FLASH_WS];
    charge(cur, T[K_FLASH_WS], 0);
    if (cur >= 0) {
      funcs[cur].wait += T[K_FLASH_WS];
    }
  }
}

/* who a block starting at `a` is attributed to: a kernel it is the entry of, else the kernel whose
 * code inlined into the executor holds it, else the executor (-1 with *exec set), else nobody
 * (-2: the attribution stays with whoever called it) */
static int attribute(uint64_t a, int *exec) {
  size_t i;
  int in_exec = 0, inlined = -2;
  for (i = 0; i < n_funcs; i++) {
    if (funcs[i].kind == 'k' && funcs[i].start == a) {
      *exec = 0;
      return (int)i;
    }
    if (a >= funcs[i].start && a < funcs[i].end) {
      if (funcs[i].kind == 'i') {
        inlined = (int)i;
      } else if (funcs[i].kind == 'e') {
        in_exec = 1;
      }
    }
  }
  *exec = in_exec;
  return inlined;
}

static const char *blocks_path;
static struct block **all_blocks;
static size_t n_blocks, cap_blocks;

static void keep_block(struct block *b) {
  if (blocks_path == NULL) {
    return;
  }
  if (n_blocks == cap_blocks) {
    size_t cap = cap_blocks ? 2 * cap_blocks : 1024;
    struct block **grown = realloc(all_blocks, cap * sizeof(struct block *));
    if (grown == NULL) {
      return;
    }
    all_blocks = grown;
    cap_blocks = cap;
  }
  all_blocks[n_blocks++] = b;
}

static void write_blocks(void) {
  FILE *f = blocks_path ? fopen(blocks_path, "w") : NULL;
  size_t i;
  if (f == NULL) {
    return;
  }
  for (i = 0; i < n_blocks; i++) {
    if (all_blocks[i]->runs) {
      fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", all_blocks[i]->vaddr, all_blocks[i]->n,
              all_blocks[i]->runs, all_blocks[i]->cycles);
    }
  }
  fclose(f);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  size_t n = qemu_plugin_tb_n_insns(tb), i;
  struct block *b = calloc(1, sizeof *b);
  (void)id;
  if (b == NULL) {
    return;
  }
  b->ins = calloc(n ? n : 1u, sizeof *b->ins);
  if (b->ins == NULL) {
    free(b);
    return;
  }
  b->vaddr = qemu_plugin_tb_vaddr(tb);
  keep_block(b);
  b->func = attribute(b->vaddr, &b->exec);
  b->entry = b->func >= 0 && funcs[b->func].kind == 'k';
  b->start = b->vaddr == win_start;
  b->stop = b->vaddr == win_stop;
  b->n = n;
  b->refill = T[K_REFILL];
  for (i = 0; i < n; i++) {
    struct qemu_plugin_insn *qi = qemu_plugin_tb_get_insn(tb, i);
    size_t size = qemu_plugin_insn_size(qi);
#if QEMU_PLUGIN_VERSION >= 2
    /* QEMU 9 copies the bytes out rather than lending them */
    uint8_t bytes[8] = {0};
    (void)qemu_plugin_insn_data(qi, bytes, sizeof bytes);
#else
    const uint8_t *bytes = qemu_plugin_insn_data(qi);
#endif
    struct insn *d = &b->ins[i];
    if (size >= 2u) {
      size_t w = thumb_size((unsigned)bytes[0] | ((unsigned)bytes[1] << 8));
      size = w < size ? w : size;
    }
    decode(bytes, size, d);
    if (i == 0 && size >= 4u && (b->vaddr & 2u)) {
      b->wide_target = T[K_REFILL_WIDE];
    }
    if (d->c == C_LOOP_END) {
      b->refill = T[K_LE_REFILL];
      b->loop_end = 1;
    } else if (d->c == C_BX) {
      b->refill = T[K_REFILL] + T[K_REFILL_INDIRECT];   /* a target from a register: not fetched early */
      b->loop_end = 0;
    } else if (d->c == C_POP_PC || d->c == C_LDR_PC || d->c == C_TB) {
      b->refill = T[K_REFILL] + T[K_REFILL_LOAD];       /* a target loaded from memory, known in execute */
      b->loop_end = 0;
    } else {
      b->refill = T[K_REFILL];
      b->loop_end = 0;
    }
    if (T[K_FLASH_WS] && (d->c == C_LDR || d->c == C_LDRD || d->c == C_LDM || d->c == C_POP_PC ||
                          d->c == C_LDR_PC || d->c == C_FP_LD || d->c == C_FP_LDM || d->c == C_VEC_LS ||
                          d->c == C_TB)) {
      /* QEMU 7.2 never calls back for QEMU_PLUGIN_MEM_R alone: ask for both, keep the loads */
      qemu_plugin_register_vcpu_mem_cb(qi, mem_load, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
    }
    b->branch = is_branch(d->c);
    b->fallthrough = qemu_plugin_insn_vaddr(qi) + size;
    if (i + 1 == n) {
      int in_exec;
      b->tail = attribute(qemu_plugin_insn_vaddr(qi), &in_exec);
    }
  }
  b->alone = price_run(b->ins, n, NULL, 0, 0);
  /* b lives as long as QEMU may run the block: it is the callback's user data */
  qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void at_exit(qemu_plugin_id_t id, void *p) {
  FILE *f = out_path ? fopen(out_path, "w") : NULL;
  size_t i;
  (void)id;
  (void)p;
  if (f == NULL) {
    qemu_plugin_outs("aot cycles: cannot write the report\n");
    return;
  }
  write_blocks();
  fprintf(f, "total %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", total_cycles, total_insns, total_wait);
  fprintf(f, "executor %" PRIu64 " %" PRIu64 "\n", exec_cycles, exec_insns);
  for (i = 0; i < n_funcs; i++) {
    if (funcs[i].kind != 'e' && funcs[i].cycles) {
      fprintf(f, "kernel %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %s\n", funcs[i].cycles, funcs[i].insns,
              funcs[i].calls, funcs[i].wait, funcs[i].name);
    }
  }
  fclose(f);
}

static int read_table(const char *path) {
  FILE *f = fopen(path, "r");
  char key[64];
  unsigned long long v;
  int k;
  if (f == NULL) {
    return -1;
  }
  while (fscanf(f, "%63s %llu", key, &v) == 2) {
    for (k = 0; k < K_COUNT; k++) {
      if (strcmp(key, key_names[k]) == 0) {
        T[k] = v;
        have[k] = 1;
      }
    }
  }
  fclose(f);
  for (k = 0; k < K_COUNT; k++) {
    if (!have[k]) {
      fprintf(stderr, "aot cycles: the timing table %s has no '%s'\n", path, key_names[k]);
      return -1;
    }
  }
  return 0;
}

static int read_funcs(const char *path) {
  FILE *f = fopen(path, "r");
  unsigned long long s, e;
  char kind[8], name[256];
  if (f == NULL) {
    return -1;
  }
  while (fscanf(f, "%llx %llx %7s %255s", &s, &e, kind, name) == 4) {
    struct func *g = realloc(funcs, (n_funcs + 1) * sizeof *funcs);
    if (g == NULL) {
      fclose(f);
      return -1;
    }
    funcs = g;
    memset(&funcs[n_funcs], 0, sizeof *funcs);
    funcs[n_funcs].start = s;
    funcs[n_funcs].end = e;
    funcs[n_funcs].kind = kind[0];
    funcs[n_funcs].name = strdup(name);
    n_funcs++;
  }
  fclose(f);
  return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
  int i;
  const char *table = NULL, *fpath = NULL;
  (void)info;
  for (i = 0; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (eq == NULL) {
      fprintf(stderr, "aot cycles: argument '%s' is not key=value\n", argv[i]);
      return -1;
    }
    *eq = '\0';
    if (strcmp(argv[i], "table") == 0) {
      table = eq + 1;
    } else if (strcmp(argv[i], "out") == 0) {
      out_path = strdup(eq + 1);
    } else if (strcmp(argv[i], "start") == 0) {
      win_start = strtoull(eq + 1, NULL, 0);
    } else if (strcmp(argv[i], "stop") == 0) {
      win_stop = strtoull(eq + 1, NULL, 0);
    } else if (strcmp(argv[i], "funcs") == 0) {
      fpath = eq + 1;
    } else if (strcmp(argv[i], "blocks") == 0) {
      blocks_path = strdup(eq + 1);
    } else {
      fprintf(stderr, "aot cycles: unknown argument '%s'\n", argv[i]);
      return -1;
    }
  }
  if (table == NULL || read_table(table) != 0 || out_path == NULL || win_start == 0 || win_stop == 0) {
    fprintf(stderr, "aot cycles: needs table=, out=, start= and stop=\n");
    return -1;
  }
  if (fpath && read_funcs(fpath) != 0) {
    fprintf(stderr, "aot cycles: cannot read %s\n", fpath);
    return -1;
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
  qemu_plugin_register_atexit_cb(id, at_exit, NULL);
  return 0;
}
