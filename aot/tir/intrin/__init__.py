"""Tensor intrinsics: named micro-kernels that `tensorize` (aot/tir/schedule.py) puts in place
of an inner loop nest.

An intrinsic holds the loop pattern it replaces (match: the loop and its body -> the call's
arguments, or a reason it does not apply) and its C: one portable body, and bodies for the
Arm extensions a C compiler announces with ACLE's feature macros (__ARM_FEATURE_DSP for
Cortex-M4/M7/M33, __ARM_FEATURE_MVE for Cortex-M55/M85's Helium). The renderer prints a used
intrinsic once per file as a static inline function that picks its body with #if, so the C
is the same for every target and each compiler keeps only the body its -mcpu can run; the
portable body is the replaced loop nest itself (the fallback). An intrinsic's bodies are data:
bodies() maps each variant ('mve', 'dsp', 'plain') to its lines and `headers` each variant to
its includes; base.EXTENSIONS orders the variants and names their macros.

Families: arm.py (dot_s8, dot_s8_rows, dot_s8x2, dot_s8x4q(t)), arm_quads.py (dot_s8xq(t): a
pixel's quads requantised and stored, Helium), arm_dw.py (dw_s8: a depthwise pixel,
requantised, written through its output pointer), arm_dw3.py (dw3_s8r, dw3_s8r2 at stride 2: a
3x3 depthwise conv's four channels, all rows, through a ring of widened rows), arm_q15.py (pw_s8(t): a pointwise conv's
pixels through an int16 scratch, requantised, written the same way), arm_add.py (add_s8q: a run
of TFLite int8 ADD, written through its output pointer), arm_copy.py (copy_s8: rows of a byte
run, a staged kernel's copy back or a gathered window row), arm_gather.py (a first layer's
gathered windows: gconv_q15, gconv_s8, widen_q15). Shared by them: requant.py (TFLite's
requantisation matched in the loop IR, for the intrinsics and the Arm rules) and gemmlowp.py (the
C text of gemmlowp's rounding multiply, rounding shift and the requantise step, scalar and
Helium); base.per_tensor makes a per-channel requantising intrinsic's per-tensor sibling.
"""
from __future__ import annotations

from . import arm, arm_add, arm_copy, arm_dw, arm_dw3, arm_gather, arm_q15, arm_quads  # noqa: F401  register the Arm family
from .base import TensorIntrin, get_intrin, intrin_names, register_intrin  # noqa: F401
