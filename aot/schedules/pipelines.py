"""The schedule pipelines: one ordered list of steps per target family.

A rule is a function rule(func, target) -> PrimFunc | None, None meaning "does not apply"
(the kernel passes on unchanged). A step is either a rule that always runs (`step`: a pass)
or a `first_of` group: its rules are tried in order and the first that returns a kernel
claims it, the others are not tried (one micro-kernel choice per kernel: each one's packed
weights or call layout would break another's). Every step says why it sits where it does.
func.attrs["schedule"] is only the recorded name of the choice (metadata.json's
kernel_schedules); no rule reads it to learn whether another ran.

This is the one module besides the target-family modules that reads target keys
(`pipeline_name`).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import arm, arm_add, arm_copy, arm_dw, arm_float, arm_gather, arm_q15, cpu, gpu, gpu_gemm, x86


@dataclass(frozen=True)
class Step:
    """A rule and the reason for its place: in a pipeline it always runs (a pass); in a first_of
    group it is one of the choices."""
    rule: object
    why: str


@dataclass(frozen=True)
class FirstOf:
    """Rules tried in order; the first that returns a kernel claims it."""
    steps: tuple
    why: str


def step(rule, why: str) -> Step:
    return Step(rule, why)


def first_of(*steps: Step, why: str) -> FirstOf:
    return FirstOf(tuple(steps), why)


def members(x) -> tuple:
    """The steps a pipeline entry tries: a group's in order, or the one pass."""
    return x.steps if isinstance(x, FirstOf) else (x,)


CORTEX_M = [
    first_of(
        step(arm_gather.gather_windows,
             "a first layer's window rows (cin 1 or 3) are too short for the row kernels below: "
             "gathered per pixel before they could take the conv"),
        step(arm_gather.gather_scratch,
             "DSP cores: a conv with a window over whole 4-byte channel groups, two pixels' windows widened "
             "into a scratch for pw_s8's blocks (before the dot products would take its rows one by one)"),
        step(arm_dw.depthwise_rows,
             "DSP cores: a 3x3 depthwise conv (stride 1 or 2, channels in fours) as whole rows through a "
             "ring of widened input rows, before the per-pixel calls below would take it"),
        step(arm_dw.tensorize_depthwise,
             "a depthwise conv's channels as dw_s8 calls; the dot products below would take only its "
             "short windows"),
        step(arm_add.tensorize_adds, "an int8 ADD as add_s8q calls (Helium)"),
        step(arm_q15.tensorize_pointwise,
             "a pointwise conv on DSP cores through an int16 scratch, before the dot products would take it"),
        step(arm_float.float_tiles,
             "float accumulations: Cortex-M register tiles (scalar lanes without Helium); nothing below "
             "takes a float kernel"),
        step(arm.tensorize_dots,
             "an int8 conv or dense: its contiguous runs as dot_s8 calls, output channels paired or "
             "in quads"),
        step(cpu.register_tiles,
             "no micro-kernel placed: the CPU register tiles (their packed weights would break the runs "
             "the calls read, hence only here)"),
        why="one choice per kernel: the micro-kernels, most specific first, the CPU tiles last"),
    step(cpu.flatten_indices, "layouts are settled once a kernel's choice is made: flat indices from here on"),
    step(cpu.unroll_short_loops, "short constant loops left by any choice unrolled (needs flat, simplified loops)"),
    step(arm_copy.vector_copies,
         "after the choice: a staged kernel's copy back from its scratch as copy_s8 calls (Helium)"),
    step(arm_float.fuse_multiply_adds,
         "last: every float accumulation as fma, the loops unrolled above included"),
]

HOST = [
    step(x86.host_blocks,
         "float kernels: SIMD lanes of output channels, padded windows partitioned, pixel blocks; "
         "first, on the plain nest"),
    step(cpu.register_tiles, "what host_blocks left (int8, over its budget, unpartitioned nests): register tiles"),
    step(cpu.flatten_indices, "layouts are settled: flat indices from here on"),
    step(cpu.unroll_short_loops, "short constant loops unrolled (needs flat, simplified loops)"),
]

GPU = [
    first_of(
        step(gpu_gemm.implicit_gemm,
             "an accumulation (conv, matmul) with two output axes the register tiles divide: lanes per "
             "thread, both operands staged; first, since the rules below give each output a thread, or a "
             "block when there are few outputs"),
        step(gpu.reduce_across_threads,
             "few long reductions (softmax rows, dense with a long K): a block per row, first since "
             "the tiles below would give such a kernel one thread per output"),
        step(gpu.tile_accumulation,
             "one accumulation nest: 2-D output tiles per block, inputs staged in shared memory"),
        step(gpu.bind_threads,
             "everything else: the parallel outer loops fused and bound to blocks and threads"),
        why="one launch shape per kernel"),
]

PIPELINES = {"cortex_m": CORTEX_M, "host": HOST, "gpu": GPU}

# TVM's -keys= picks schedules by key: a target given keys of its own gets the pipeline of the
# first key that names one (a Cortex-M target's are arm_cpu, cpu); otherwise its family's
_BY_KEY = {"arm_cpu": "cortex_m", "cpu": "host", "gpu": "gpu"}


def pipeline_name(target) -> str | None:
    """The pipeline of a target, or None for a target without schedule rules."""
    if target.get("keys"):
        return next((_BY_KEY[k] for k in target.keys if k in _BY_KEY), None)
    return target.family.pipeline


def pipeline_for(target) -> list:
    name = pipeline_name(target)
    return PIPELINES[name] if name else []


def rule_name(rule) -> str:
    """A rule's name in traces: module (within aot.schedules) and function."""
    return f"{rule.__module__.rsplit('.', 1)[-1]}.{rule.__name__}"


def rules_in(pipeline) -> list:
    """Every rule of a pipeline, in order (a first_of group's in its order)."""
    return [s.rule for x in pipeline for s in members(x)]


def find_rule(name: str):
    """The rule of any pipeline named `name` (rule_name), or None."""
    return next((r for p in PIPELINES.values() for r in rules_in(p) if rule_name(r) == name), None)

