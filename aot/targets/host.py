"""The host CPU: a "c" target that is not a Cortex-M (x86-64 and other SIMD CPUs with threads)."""
from __future__ import annotations

from .base import C_ATTRS, Family

# channels of a channels-last depthwise conv staged at a time (halved down to 2): one channel
# at a time would be a plane read 8 floats apart in scalar code, where a block's channels lie
# side by side as the lanes of each pixel
STAGE_BLOCK = 8
STAGE_PIXELS = 16     # pixels of a row staged at a time (stage_in_place's pixels): the host's lanes


class Host(Family):
    name = "host"
    kind = "c"
    attrs = C_ATTRS
    keys = ("cpu",)
    pipeline = "host"
    device = "cpu"            # its runtime device (aot.cpu(), TVM's tvm.cpu())
    openmp = True
    # SIMD lanes along the output channels want them consecutive; an instrumented build (aot
    # debug) keeps the model's layout all the same, so that each output has a reference
    channels_last = True
    # the host's rules can keep a padded window's pieces in the nest's order
    in_order_shrink = True

    def staging_block(self, target):
        return STAGE_BLOCK, 2, STAGE_PIXELS


HOST = Host()


class Llvm(Host):
    """TVM's "llvm" target, which TVM's tutorials build for: aot has no LLVM backend, so it is the
    host's C path (the same kernels and schedules as "c"), built by the host C compiler. The
    options are TVM's llvm options; -mcpu/-mattr name the host CPU and are recorded, not obeyed."""
    name = "llvm"
    kind = "llvm"
    attrs = {**C_ATTRS, "mtriple": "str", "mabi": "str", "mfloat-abi": "str", "opt-level": "str",
             "num-cores": "str", "fast-math": "str", "system-lib": "str", "link-params": "str"}


LLVM = Llvm()
