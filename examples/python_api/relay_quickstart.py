"""TVM's quick-start network (conv -> batch_norm -> relu), written with aot.relay exactly as TVM's
tutorial writes it with tvm.relay: only the imports differ. Built for the host C target, run
through the graph-executor-style runner, checked against numpy.

Run:  python examples/python_api/relay_quickstart.py [c|opencl|cuda]
"""
import sys

import numpy as np

import aot as tvm
from aot import relay
from aot.contrib import graph_executor
from aot.relay import testing

target = sys.argv[1] if len(sys.argv) > 1 else "c"       # the host C target: no GPU or OpenCL needed
if target.split()[0] not in ("c", "opencl", "cuda"):
    sys.exit(f"usage: python {sys.argv[0]} [c|opencl|cuda] (not {target!r})")
dev = {"c": tvm.cpu(0), "opencl": tvm.opencl(0), "cuda": tvm.cuda(0)}[target.split()[0]]
if not dev.exist:       # asked for a GPU API this machine lacks: say so, before building for it
    sys.exit(f"error: no {target.split()[0]} device on this machine"
             + (" (OpenCL on a CPU: install PoCL)" if target.startswith("opencl") else "")
             + f"; run 'python {sys.argv[0]}' for the host C target")
out_channels = 16
batch_size = 1
data = relay.var("data", relay.TensorType((batch_size, 3, 224, 224), "float32"))
weight = relay.var("weight")
bn_gamma = relay.var("bn_gamma")
bn_beta = relay.var("bn_beta")
bn_mmean = relay.var("bn_mean")
bn_mvar = relay.var("bn_var")

simple_net = relay.nn.conv2d(data=data, weight=weight, kernel_size=(3, 3), channels=out_channels, padding=(1, 1))
simple_net = relay.nn.batch_norm(simple_net, bn_gamma, bn_beta, bn_mmean, bn_mvar)[0]
simple_net = relay.nn.relu(simple_net)
simple_net = relay.Function(relay.analysis.free_vars(simple_net), simple_net)

data_shape = (batch_size, 3, 224, 224)
net, params = testing.create_workload(simple_net)

lib = relay.build(net, target, params=params)
data = np.random.uniform(-1, 1, size=data_shape).astype("float32")
module = graph_executor.GraphModule(lib["default"](dev))
module.set_input("data", data)
module.run()
out_shape = (batch_size, out_channels, 224, 224)
out = module.get_output(0, tvm.nd.empty(out_shape)).numpy()

# numpy: the conv as a sum over the 3x3 taps of the padded input, then batch norm and relu
xp = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
w = params["weight"].numpy().astype(np.float64)
ref = sum(np.einsum("nchw,oc->nohw", xp[:, :, i:i + 224, j:j + 224], w[:, :, i, j]) for i in range(3) for j in range(3))
bn = [params[k].numpy().reshape(1, -1, 1, 1) for k in ("bn_gamma", "bn_beta", "bn_mean", "bn_var")]
ref = np.maximum((ref - bn[2]) / np.sqrt(bn[3] + 1e-5) * bn[0] + bn[1], 0)
err = float(np.abs(out - ref).max())
print(f"output {out.shape}, first values {out.flatten()[:4]}, max |error| vs numpy {err:.2e}")
lib.export_library("/tmp/relay_quickstart.tar")
print("MLF written to /tmp/relay_quickstart.tar")
sys.exit(0 if err < 1e-4 else 1)
