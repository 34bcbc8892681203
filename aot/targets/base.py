"""Family: what aot knows of one target family, as data a stage asks for instead of testing
target strings. Each family is one module of aot/targets/; aot/target.py maps a parsed target
(its kind, and -mcpu for the families sharing kind "c") onto one.

A family never imports the printers (codegen_c, mlf): it names its renderer dialect and GPU
host template, and codegen_c keeps the table from those names to its classes and files. A
family defined outside the package may give them directly (`renderer`, `host_template_text`).
"""
from __future__ import annotations


# the options of kind "c", which the host and Cortex-M families share; the byte alignments are
# TVM's: of the workspace, and of each constant array (its C aligned() attribute)
C_ATTRS = {"keys": "list", "mcpu": "str", "march": "str", "mattr": "list", "model": "str", "libs": "list",
           "workspace-byte-alignment": "align", "constants-byte-alignment": "align"}


class Family:
    name = ""                 # for messages and `aot info`
    kind = ""                 # the target kind it serves ("c", "cuda", ...)
    attrs: dict = {}          # the options the kind takes: name -> "str" | "list" | "align" (a power of 2)
    keys: tuple = ()          # the default Target.keys (what schedule rules are looked up by)
    pipeline = None           # the schedule pipeline's name
    dialect = "c"             # the renderer dialect its kernels print in
    renderer = None           # a renderer class, for a family defined outside the package
    libraries: tuple = ()     # what its -libs= may name (aot/targets/libs/<name>.py each)
    is_device = False         # kernels run on a device that generated host C drives
    openmp = False            # 'parallel' loops as OpenMP loops (a host with threads)
    channels_last = False     # float conv/pool chains made NHWC before fusion (aot/passes/layout.py)
    in_order_shrink = False   # a padded window's pieces kept in the nest's order to write over an input
    # a partition target (TVM's "cmsis-nn"): in a target list it takes the operators claims_node
    # accepts into a module (a C file) of its own, their kernels generated for kernel_target(target)
    partition = False

    def claims(self, kind, mcpu):
        """Whether a target of `kind` with -mcpu=mcpu (None when not given) is of this family."""
        return kind == self.kind

    def c_defines(self, target) -> dict:
        """{macro: value} the generated C defines for its micro-kernels: facts of the target that
        no compiler predefines (a core's issue width, for one)."""
        return {}

    def core(self, target):
        """The core's features for an MCU family; None elsewhere."""
        return None

    def claims_node(self, node):
        """Whether a partition target takes this graph node."""
        return False

    def kernel_target(self, target):
        """The code-generation target string a partition target's kernels are scheduled for."""
        return "c"

    # the -mcpu and -mattr values a target of the family may give (aot/target.py refuses others
    # by name, so that a typo or a CPU no family knows never compiles silently as plain C);
    # empty: the family does not judge them
    mcpus: tuple = ()
    mattrs: tuple = ()

    def knows_mcpu(self, mcpu):
        """Whether -mcpu=mcpu names a CPU of this family."""
        return mcpu in self.mcpus if self.mcpus else self.claims(self.kind, mcpu)

    def known_mcpus(self):
        """The -mcpu values to list when one is refused."""
        return list(self.mcpus)

    def knows_mattr(self, feature):
        """Whether -mattr's item `feature` ('+dsp', '-neon', ...) names a feature of this family."""
        return feature.lstrip("+-") in self.mattrs if self.mattrs else True

    def writes_over_as_scheduled(self, target):
        """Whether the target's rules include kernels that write over their input as scheduled,
        their reads in an order they describe (the executor then asks the scheduled kernel
        before staging it: aot/executor/inplace/shrunk.py written_over_as_scheduled)."""
        return False

    def staging_block(self, target):
        """What the executor stages a kernel written over its input by (aot/schedules/inplace_conv.py):
        (channels at a time, the fewest worth a block[, pixels of a row at a time])."""
        return 1, 1

    def __repr__(self):
        return f"<target family {self.name}>"


class GpuFamily(Family):
    """A GPU API: generated kernels launched from host C (codegen_c/emit_gpu.py)."""
    keys = ("gpu",)
    pipeline = "gpu"
    is_device = True
    # what every CUDA device gives a block without opting in (OpenCL guarantees 32 KiB; the
    # OpenCL kernels were tuned under the same figure)
    shared_max = 48 * 1024
    host_template = None      # the host C's template, by name (codegen_c/templates/)
    host_template_text = None  # or its text, for a family defined outside the package
    external_calls = False    # the host can call library or plug-in functions between launches
    runtime_libs: tuple = ()  # what the host links for the API's runtime
    io_pointer = "DEV.io[%d]"  # how the host template's steps name I/O buffer k
    device_entry = False      # the header declares run_device and the device buffers (device-resident I/O)
    graph_replay = False      # the host records the run as one graph at init (codegen_c/emit_gpu.py: graph_plan)
    device_sources: tuple = ()  # the endings of the files a device compiler builds (nvcc's .cu)
    # what mlf.mk and mlf.cmake add to build and link the device code, by template name
    # (codegen_c/templates/), or as text for a family defined outside the package
    build_fragments: dict = {}      # {"mk": name, "cmake": name}
    build_fragments_text: dict = {}  # {"mk": text, "cmake": text}

    def link_libs(self, target):
        """The -l flags a host build of a module for target links (metadata.json's device.libs)."""
        return [f"-l{lib}" for lib in target.libs] + list(self.runtime_libs)

    def present(self):
        """Whether this machine can run the API's kernels (a build needs no device)."""
        return False

    absent = "no device for this GPU API on this machine"     # the message when present() is False
