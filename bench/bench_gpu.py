"""GPU latency, batch 1: the CUDA MLF (native kernels, and -libs=cudnn,cublas) against PyTorch
eager on the same GPU, and the outputs against onnxruntime on the CPU. Needs a machine with an
NVIDIA GPU, nvcc, PyTorch and onnxruntime (the `device` tool's machine); elsewhere it says so and
exits 0 without numbers.

  python bench/bench_gpu.py [--repeat N] [--models resnet50,vgg19,...]

PyTorch's side is torchvision's architecture of the same name (weights are random: latency does
not depend on them); the MLF's is the ONNX light model. aot's latency is the harness's mean over
--repeat calls of tvmgen_<mod>_run, the first of which also makes the device state (init): use a
large --repeat. PyTorch's is the median of --repeat CUDA-event timings after 5 warm-up runs.
cuDNN's algorithm choice (a heuristic query) is part of every aot call, as in a deployed module.
"""
import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
TORCH_NAMES = {"resnet50": "resnet50", "vgg19": "vgg19", "squeezenet": "squeezenet1_0",
               "densenet121": "densenet121", "inception_v1": "googlenet", "shufflenet": "shufflenet_v2_x1_0"}


def have_gpu():
    if shutil.which("nvidia-smi") is None:
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


def aot_latency(path, target, x, repeat):
    import aot
    from aot.host import build_host, write_inputs, read_valid_mlf
    import tempfile
    res = aot.compile(path, target=target)
    exe = build_host(res.tar, opt="-O2")
    info = read_valid_mlf(res.tar).aot
    with tempfile.TemporaryDirectory() as d:
        ins = write_inputs(info, {info["inputs"][0]["name"]: x}, d)
        outs = [os.path.join(d, f"out{k}.bin") for k in range(len(info["outputs"]))]
        r = subprocess.run([exe, *ins, *outs, str(repeat)], capture_output=True, text=True, check=True)
        lat = float(next(line.split()[1] for line in r.stdout.splitlines() if line.startswith("latency_us")))
        r = subprocess.run([exe, *ins, *outs], capture_output=True, text=True, check=True)
        t = info["outputs"][0]
        y = np.fromfile(outs[0], dtype=t["dtype"]).reshape(t["shape"])
    return lat / 1e3, y


def torch_latency(name, shape, repeat):
    import torch
    import torchvision
    model = getattr(torchvision.models, TORCH_NAMES[name])(weights=None).eval().cuda()
    x = torch.rand(*shape, device="cuda")
    times = []
    with torch.no_grad():
        for _ in range(5):
            model(x)
        for _ in range(repeat):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            model(x)
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--models", default="resnet50,vgg19")
    a = ap.parse_args()
    if not have_gpu():
        print("no NVIDIA GPU on this machine: no GPU numbers (run this where one is lent)")
        return 0
    import onnxruntime as ort
    print(f"{'model':<14}{'aot cuda ms':>12}{'aot +libs ms':>14}{'torch ms':>10}{'native/torch':>14}"
          f"{'libs/torch':>12}{'max |err| vs ort':>18}")
    for name in a.models.split(","):
        path = os.path.join(LIGHT_DIR, f"light_{name}.onnx")
        m = onnx.load(path)
        inits = {t.name for t in m.graph.initializer}      # older IRs list initializers as inputs too
        inp = next(i for i in m.graph.input if i.name not in inits)
        shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
        x = np.random.default_rng(0).uniform(0, 1, shape).astype(np.float32)
        ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {inp.name: x})[0]
        native, y1 = aot_latency(path, "cuda", x, a.repeat)
        libs, y2 = aot_latency(path, "cuda -libs=cudnn,cublas", x, a.repeat)
        torch_ms = torch_latency(name, shape, a.repeat) if name in TORCH_NAMES else float("nan")
        err = max(float(np.abs(y1 - ref).max()), float(np.abs(y2 - ref).max()))
        print(f"{name:<14}{native:>12.3f}{libs:>14.3f}{torch_ms:>10.3f}{native / torch_ms:>14.2f}"
              f"{libs / torch_ms:>12.2f}{err:>18.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
