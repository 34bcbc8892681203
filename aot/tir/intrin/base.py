"""The tensor intrinsic interface and its registry (the package doc says what they are for)."""
from __future__ import annotations

from ..expr import TENSOR_INTRINSICS, Const

_INTRINSICS: dict = {}

# the extensions a body may be written for, in the order the C tries them, each with the ACLE
# feature macro a compiler defines when its -mcpu has it; the portable body ('plain') comes last.
# A new extension is an entry here, a new body of an intrinsic an entry of its bodies()
EXTENSIONS = (("mve", "__ARM_FEATURE_MVE"), ("dsp", "__ARM_FEATURE_DSP"))


class TensorIntrin:
    """One micro-kernel. `name` is the loop IR's Call name; `bodies` its C bodies by variant
    ('mve', 'dsp': EXTENSIONS; 'plain'), `headers` the headers each variant includes."""
    name = ""
    headers: dict = {}       # variant -> the headers its body needs
    dtype = "int32"          # the value the call returns
    written_args = ()        # positions of the pointer arguments it stores through (an Evaluate's call)
    pointer_args = ()        # positions of the arguments that are pointers (a Load: &buf[index])
    extent_arg = 0           # the argument holding how many consecutive elements each pointer spans
    # feature macros under which GCC is told to inline it at every call (always_inline): gcc's
    # unit-growth limit otherwise stops inlining a large micro-kernel once the file holds others.
    # An entry is a macro's name or a whole preprocessor condition (one naming "defined(")
    forced_inline = ()

    def last_offsets(self, args) -> list:
        """[(pointer argument position, the offset of the last element it reads)]: what the
        verifier checks besides the first element (default: one run of args[extent_arg])."""
        n = args[self.extent_arg]
        return [(k, n - Const(1, n.dtype)) for k in self.pointer_args]

    def match(self, loop, acc):
        """(args, None) when loop (a For) is an instance of the pattern accumulating into the
        scalar buffer acc, else (None, why)."""
        raise NotImplementedError

    def signature(self) -> str:
        raise NotImplementedError

    def bodies(self) -> dict:
        """{variant: C body lines}: 'plain' (portable C) and any of EXTENSIONS' variants."""
        raise NotImplementedError

    def variants(self) -> list:
        """[(feature macro or None, C body lines)]: the bodies in EXTENSIONS' order, the portable
        one last."""
        got = self.bodies()
        return [(macro, got[v]) for v, macro in EXTENSIONS if v in got] + [(None, got["plain"])]

    def includes(self) -> list:
        """[(feature macro, [header, ...])]: the headers each variant needs."""
        return [(macro, list(self.headers[v])) for v, macro in EXTENSIONS if v in self.headers]

    def variant_for(self, mcpu) -> str:
        """The variant a compiler for -mcpu=mcpu keeps (for `aot info`): 'mve', 'dsp' or 'plain'."""
        return "plain"

    def c_source(self) -> str:
        """The static inline function, every variant behind its feature macro."""
        lines = [f"static inline {self.signature()} {{"]
        if self.forced_inline:
            when = " || ".join(m if "defined(" in m else f"defined({m})" for m in self.forced_inline)
            lines = [f"#if defined(__GNUC__) && ({when})",
                     f"static inline __attribute__((always_inline)) {self.signature()} {{", "#else", *lines, "#endif"]
        vs = self.variants()
        for k, (macro, body) in enumerate(vs):
            if macro is not None:
                lines.append(f"#{'if' if k == 0 else 'elif'} defined({macro})")
            elif k:
                lines.append("#else")
            lines += ["  " + b for b in body]
        if len(vs) > 1:
            lines.append("#endif")
        lines.append("}")
        return "\n".join(lines)

    def c_includes(self) -> str:
        out = []
        for k, (macro, headers) in enumerate(self.includes()):
            out.append(f"#{'if' if k == 0 else 'elif'} defined({macro})")
            out += [f"#include <{h}>" for h in headers]
        plain = [f"#include <{h}>" for h in self.headers.get("plain", ())]   # where no feature's are
        if not out:
            return "\n".join(plain)
        return "\n".join(out + (["#else"] + plain if plain else []) + ["#endif"])


def register_intrin(cls):
    _INTRINSICS[cls.name] = cls()
    TENSOR_INTRINSICS.add(cls.name)
    return cls


def per_tensor(cls, doc):
    """The registered sibling of the per-channel requantising intrinsic cls (its multiplier and
    shift arrays at the positions cls.scale_args) that takes one multiplier and shift, int32
    values, for every channel: cls.name + 't', its bodies written with per_channel False."""
    return register_intrin(type(cls.__name__ + "T", (cls,), {
        "name": cls.name + "t", "per_channel": False, "__doc__": doc, "__module__": cls.__module__,
        "pointer_args": tuple(k for k in cls.pointer_args if k not in cls.scale_args)}))


def get_intrin(name: str) -> TensorIntrin | None:
    return _INTRINSICS.get(name)


def intrin_names() -> tuple:
    return tuple(_INTRINSICS)

