"""CMSIS-NN, TVM's "cmsis-nn" target kind: a partition target. In a target list such as tvmc's
"cmsis-nn -mcpu=cortex-m55, c" it takes the int8 operators CMSIS-NN covers (convolutions,
depthwise included, fully connected, pooling, softmax, add, mul) into a module of their own,
one C file after the host's (lib2), as TVM's CMSIS-NN module is. Its functions are named as
TVM's partitioned functions (tvmgen_<mod>_cmsis_nn_main_<N>) and are the compiler's own int8
kernels, scheduled for the Cortex-M core its -mcpu names (the Arm micro-kernels), so that they
compute what TFLite Micro computes, bit for bit. What it does not take stays with the code-
generation target of the list (lib1).
"""
from __future__ import annotations

from .base import Family
from .cortex_m import CORTEX_M

# the graph ops CMSIS-NN's int8 kernels cover (TFLite's int8 builtins, as the importer makes them)
_OPS = {"QConv", "QDense", "QAvgPool", "MaxPool", "QSoftmax", "QAdd", "QMul"}


class CmsisNN(Family):
    name = "cmsis-nn"
    kind = "cmsis-nn"
    attrs = {"keys": "list", "mattr": "list", "mcpu": "str", "debug_last_error": "str"}
    keys = ("arm_cpu", "cpu")          # TVM's M-profile parser adds these to the kind's (none)
    partition = True
    mattrs = CORTEX_M.mattrs          # its kernels are the Cortex-M family's: the same cores and features

    def knows_mcpu(self, mcpu):
        return CORTEX_M.knows_mcpu(mcpu)

    def known_mcpus(self):
        return CORTEX_M.known_mcpus()

    def claims_node(self, node):
        # int8 in, int8 out (TFLite's int16x8 kernels are other CMSIS-NN functions, not TVM's)
        if node.op not in _OPS:
            return False
        if node.op == "QAdd" and (node.attrs.get("requant") == "float" or node.attrs.get("subtract")):
            return False                # onnxruntime's rounding, or TFLite's SUB: no CMSIS-NN kernel of TVM's
        values = [v for v in list(node.inputs[:1]) + list(node.outputs) if v is not None]
        return all(v.type.dtype == "int8" for v in values)

    def kernel_target(self, target):
        """The code-generation target its kernels are scheduled for: the Cortex-M core it names."""
        return f"c -mcpu={target.mcpu}" if target.mcpu else "c"


CMSIS_NN = CmsisNN()
