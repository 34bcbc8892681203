"""The dot micro-kernels over a gathered window (aot/schedules/arm_gather.py): the bodies of
dot_s8, dot_s8x2 and dot_s8x4q(t) (aot/tir/intrin/arm.py) under names of their own. Each is a
static inline function of its own, always inlined (GCC's attribute; not with Helium), so the call site a first
layer makes gets its constant run length and weight-row stride, and the pointwise convs' calls of
the shared kernels are compiled as before (a second call site of dot_s8x4q, or this body left to
gcc's inlining limits, made it stop inlining dot_s8x4q into KWS's pointwise convs on the M4: 9%
more instructions there)."""
from __future__ import annotations

from .arm import DotS8, DotS8x2, DotS8x4Requant, DotS8x4RequantT
from .base import register_intrin

SUFFIX = "_g"


def _c_source(self):
    """Always inlined where GCC's attribute is understood, except with Helium (there gcc's own
    choice is 7% fewer instructions on KWS's first layer): on the M4 gcc's unit-growth limit
    otherwise spends the budget on this function and stops inlining dot_s8x4q into the
    pointwise convs."""
    head, rest = super(type(self), self).c_source().split("\n", 1)
    base = self.name[:-len(SUFFIX)]
    head = head.replace(f" aot_{base}(", f" aot_{self.name}(", 1)       # (dot_s8's signature names itself)
    forced = head.replace("static inline ", "static inline __attribute__((always_inline)) ", 1)
    return "\n".join(["#if defined(__GNUC__) && !defined(__ARM_FEATURE_MVE)", forced, "#else", head, "#endif", rest])


def _named(base):
    return type(base.__name__ + "Gather", (base,), {
        "c_source": _c_source,
        "name": base.name + SUFFIX,
        "__doc__": f"{base.name} over a gathered window (a call site of its own).",
        "match": lambda self, loop, acc: (None, f"{self.name} is put in place of {base.name} calls, not a loop"),
    })


GATHERED = {b.name: register_intrin(_named(b)).name for b in (DotS8, DotS8x2, DotS8x4Requant, DotS8x4RequantT)}
