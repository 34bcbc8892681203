"""The host CPU: a "c" target that is not a Cortex-M (x86-64 and other SIMD CPUs with threads)."""
from __future__ import annotations

from .base import C_ATTRS, Family

# channels of a channels-last depthwise conv staged at a time (halved down to 2): one channel
# at a time would be a plane read 8 floats apart in scalar code, where a block's channels lie
# side by side as the lanes of each pixel
STAGE_BLOCK = 8
STAGE_PIXELS = 16     # pixels of a row staged at a time (stage_in_place's pixels): the host's lanes


# The host CPUs a target may name (TVM's "llvm -mcpu=core-avx2", "c -mcpu=cortex-a72"): the x86-64
# generations with SIMD the kernels are tuned for, and Arm application cores. aot builds with the
# host compiler's own flags, so the name is recorded, not obeyed: the list only catches names no
# CPU of ours answers to (a typo, a 1993 CPU).
X86_CPUS = ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "core2", "penryn", "nehalem", "corei7", "westmere",
            "sandybridge", "corei7-avx", "ivybridge", "core-avx-i", "haswell", "core-avx2", "broadwell", "skylake",
            "skylake-avx512", "skx", "cascadelake", "cooperlake", "cannonlake", "icelake-client", "icelake-server",
            "rocketlake", "tigerlake", "sapphirerapids", "alderlake", "raptorlake", "meteorlake", "graniterapids",
            "knl", "knm", "atom", "bonnell", "silvermont", "slm", "goldmont", "goldmont-plus", "tremont",
            "btver2", "bdver1", "bdver2", "bdver3", "bdver4", "znver1", "znver2", "znver3", "znver4", "znver5")
ARM_CPUS = ("cortex-a5", "cortex-a7", "cortex-a8", "cortex-a9", "cortex-a15", "cortex-a17", "cortex-a32",
            "cortex-a35", "cortex-a53", "cortex-a55", "cortex-a57", "cortex-a65", "cortex-a72", "cortex-a73",
            "cortex-a75", "cortex-a76", "cortex-a77", "cortex-a78", "cortex-a510", "cortex-a710", "cortex-x1",
            "cortex-x2", "cortex-r5", "cortex-r7", "cortex-r52", "neoverse-n1", "neoverse-n2", "neoverse-v1",
            "neoverse-v2", "thunderxt88", "a64fx", "apple-m1", "apple-m2")
RISCV_CPUS = ("sifive-e31", "sifive-e76", "sifive-u54", "sifive-u74")
HOST_CPUS = ("native", "generic") + X86_CPUS + ARM_CPUS + RISCV_CPUS
# -mattr features (given as +name or -name): x86 SIMD, Arm A-profile and M-profile ones
HOST_FEATURES = ("sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "sse4a", "avx", "avx2", "fma", "f16c", "bmi", "bmi2",
                 "popcnt", "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx512vnni", "avx512bf16",
                 "avx512fp16", "avxvnni", "amx-int8", "amx-bf16", "amx-tile",
                 "neon", "vfp3", "vfp4", "thumb2", "crc", "lse", "crypto", "aes", "sha2", "dotprod", "fp16",
                 "fullfp16", "fp-armv8", "i8mm", "bf16", "sve", "sve2", "sme", "sme2", "v8a", "v8.1a", "v8.2a",
                 "v8.3a", "v8.4a", "v8.5a", "v8.6a", "v8.7a", "v8.8a", "v9a", "v9.1a", "v9.2a", "v9.3a", "v9.4a",
                 "dsp", "mve", "mve.fp", "fp", "fp64", "fp.dp", "m", "a", "f", "d", "c", "v", "simd128")


class Host(Family):
    name = "host"
    mcpus = HOST_CPUS
    mattrs = HOST_FEATURES
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
