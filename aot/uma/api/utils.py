"""UMA's api.utils with TVM's names: the phases a backend's passes run at, and helpers."""
from __future__ import annotations

from enum import Enum, auto

from ...errors import AotError


def uma_available() -> bool:
    """UMA is always here (TVM's answer depends on how it was built)."""
    return True


class PassPhase(Enum):
    """When a backend's registered pass runs (TVM's phases):

    PRE_PARTITIONING: on the relay module, before partition() cuts out the backend's regions;
    POST_PARTITIONING_0 / _1: on the partitioned relay module (not offered here: the regions are
    cut from the graph IR, see docs/uma.md);
    TIR_PHASE_0: on each region's PrimFunc as lowered from its tensor expressions (blocks and
    loops as te.create_prim_func makes them); TIR_PHASE_1..3: after it, in order (the function
    is not flattened between phases here: they differ only in order)."""

    PRE_PARTITIONING = auto()
    POST_PARTITIONING_0 = auto()
    POST_PARTITIONING_1 = auto()
    TIR_PHASE_0 = auto()
    TIR_PHASE_1 = auto()
    TIR_PHASE_2 = auto()
    TIR_PHASE_3 = auto()


TIR_PHASES = (PassPhase.TIR_PHASE_0, PassPhase.TIR_PHASE_1, PassPhase.TIR_PHASE_2, PassPhase.TIR_PHASE_3)


def add_llvm_to_block(sch, block_name, c_code_str=""):
    """TVM annotates the block's outer loop with LLVM IR compiled from c_code_str by clang; this
    compiler emits C, where the code goes in through the backend's codegen includes instead
    (_register_codegen(fmt="c", includes=...)). Refused by name; importing it is fine."""
    raise AotError(f"add_llvm_to_block('{block_name}'): there is no LLVM module to add to here (aot emits C); "
                   "give the C code to the backend's _register_codegen(fmt='c', includes=...) instead")
