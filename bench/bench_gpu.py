"""GPU latency at batch 1, in steady state: the CUDA MLF (native kernels, and -libs=cudnn,cublas;
each replaying its CUDA graph, and built without graphs) against PyTorch eager on the same GPU,
the outputs against onnxruntime on the CPU. Needs a machine with an NVIDIA GPU, nvcc, PyTorch and
onnxruntime (the `device` tool's machine; bench/gpu_check.sh runs it there with the GPU tests);
elsewhere it says so and exits 0 without numbers (--build-only still builds every harness).

  python bench/bench_gpu.py [--models resnet50,vgg19,squeezenet,densenet121] [--precision fp32|tf32|both]
                            [--rounds 5] [--calls 20] [--warmup 10] [--onnx FILE] [--build-only]

What is timed, on both sides the same scope: one call that returns with its outputs ready in
device memory. For aot, CUDA events on the legacy default stream around tvmgen_<mod>_run_device
alone, on the module's own device buffers (no host copies; init and warm-up calls are outside);
for torch, events around model(x) and the stream's synchronisation, x resident on the GPU.
Rounds alternate: each round runs every aot harness (a process each) and then torch (kept
loaded in this process), so drift hits all alike; a figure is the median over every timed call,
the spread the range of the round medians over that median.

Precision is stated and matched: fp32 is float32 on both sides (torch with cudnn.allow_tf32 and
cuda.matmul.allow_tf32 off; aot without -tf32); tf32 lets both use TF32 tensor cores (torch's
flags on, aot's -tf32). torch runs eager with its defaults otherwise (cudnn.benchmark off).
PyTorch's side is torchvision's architecture of the same name with random weights (latency does
not depend on them); aot's is the ONNX light model of the onnx package.
"""
import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
LIGHT_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
TORCH_NAMES = {"resnet50": "resnet50", "vgg19": "vgg19", "squeezenet": "squeezenet1_0",
               "densenet121": "densenet121", "inception_v1": "googlenet", "shufflenet": "shufflenet_v2_x1_0"}
DEFAULT_MODELS = "resnet50,vgg19,squeezenet,densenet121"


def have_gpu():
    if shutil.which("nvidia-smi") is None:
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0


def variants(precision):
    """(label, target, graph) of each aot build timed at this precision."""
    tf32 = " -tf32" if precision == "tf32" else ""
    out = [("libs", f"cuda -libs=cudnn,cublas{tf32}", True), ("libs eager", f"cuda -libs=cudnn,cublas{tf32}", False)]
    if precision == "fp32":                  # the native kernels have no TF32 form
        out += [("native", "cuda", True), ("native eager", "cuda", False)]
    return out


def harness_source(info):
    import jinja2
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(os.path.dirname(os.path.abspath(__file__))),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)

    def io(kind):
        return [{"c": t["c_name"], "nbytes": int(np.prod(t["shape"], dtype=np.int64)) * np.dtype(t["dtype"]).itemsize}
                for t in info[kind]]
    return env.get_template("gpu_harness.c.j2").render(mod="default", inputs=io("inputs"), outputs=io("outputs"))


def build(path, target, graph):
    """(harness executable, the MLF's aot metadata) of one build."""
    import aot
    from aot.host import build_host, read_valid_mlf
    res = aot.compile(path, target=target)
    info = read_valid_mlf(res.tar).aot
    flags = () if graph else (f"-D{info['device']['graph']['macro']}=0",)
    return build_host(res.tar, opt="-O2", extra_cflags=flags, main=harness_source(info)), info


def run_harness(exe, info, x, calls, warmup):
    """{init_ms, graph, ms: [per call], y: the first output, same: run == run_device}."""
    from aot.host import write_inputs
    with tempfile.TemporaryDirectory() as d:
        ins = write_inputs(info, {info["inputs"][0]["name"]: x}, d)
        outs = [os.path.join(d, f"out{k}.bin") for k in range(len(info["outputs"]))]
        r = subprocess.run([exe, *ins, *outs, str(calls), str(warmup)], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{exe} failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
        t = info["outputs"][0]
        y = np.fromfile(outs[0], dtype=t["dtype"]).reshape(t["shape"])
    out = {"y": y}
    for line in r.stdout.splitlines():
        key, *vals = line.split()
        if key == "ms":
            out["ms"] = [float(v) for v in vals]
        elif key in ("init_ms", "graph", "run_matches_run_device"):
            out[key] = float(vals[0])
    return out


class Torch:
    def __init__(self, name, shape, precision):
        import torch
        import torchvision
        self.torch = torch
        torch.backends.cudnn.allow_tf32 = precision == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        self.model = getattr(torchvision.models, TORCH_NAMES[name])(weights=None).eval().cuda()
        self.x = torch.rand(*shape, device="cuda")

    def times(self, calls, warmup):
        torch = self.torch
        out = []
        with torch.no_grad():
            for _ in range(warmup):
                self.model(self.x)
            torch.cuda.synchronize()
            for _ in range(calls):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                self.model(self.x)
                torch.cuda.current_stream().synchronize()      # aot's run_device returns with its outputs ready
                b.record()
                b.synchronize()
                out.append(a.elapsed_time(b))
        return out


def summary(rounds):
    """(median ms over every call, spread: the range of the round medians over that median)."""
    med = float(np.median([t for r in rounds for t in r]))
    per = [float(np.median(r)) for r in rounds]
    return med, (max(per) - min(per)) / med


def model_input(path):
    m = onnx.load(path)
    inits = {t.name for t in m.graph.initializer}      # older IRs list initializers as inputs too
    inp = next(i for i in m.graph.input if i.name not in inits)
    shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    return inp.name, shape


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--onnx", help="an ONNX file instead of the light models (torch has no twin for it)")
    ap.add_argument("--precision", choices=("fp32", "tf32", "both"), default="fp32")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20, help="timed calls a round")
    ap.add_argument("--warmup", type=int, default=10, help="untimed calls before each round's timed ones")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel builds")
    ap.add_argument("--build-only", action="store_true", help="build every harness, time nothing (CPU machines)")
    a = ap.parse_args()
    models = ([(os.path.splitext(os.path.basename(a.onnx))[0], a.onnx)] if a.onnx else
              [(n, os.path.join(LIGHT_DIR, f"light_{n}.onnx")) for n in a.models.split(",")])
    precisions = ("fp32", "tf32") if a.precision == "both" else (a.precision,)
    gpu = have_gpu()
    if not gpu and not a.build_only:
        print("no NVIDIA GPU on this machine: no GPU numbers (run this where one is lent, or use --build-only)")
        return 0
    jobs = [(name, path, p, label, target, graph) for name, path in models for p in precisions
            for label, target, graph in variants(p)]
    with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
        built = dict(zip(jobs, pool.map(lambda j: build(j[1], j[4], j[5]), jobs)))
    if a.build_only:
        for j, (exe, _) in built.items():
            print(f"built {j[0]} {j[2]} {j[3]}: {exe}")
        return 0
    import onnxruntime as ort
    print("scope: one call returning with outputs ready on the device; median of all calls, spread = range of "
          f"{a.rounds} round medians / median; batch 1")
    head = (f"{'model':<13}{'prec':<6}{'torch ms':>10}{'libs ms':>9}{'libs eager':>11}{'native':>8}"
            f"{'nat eager':>10}{'libs/torch':>11}{'nat/torch':>10}{'graph gain':>11}{'max|err|':>10}  spread (torch, libs, native)")
    print(head)
    for name, path in models:
        in_name, shape = model_input(path)
        x = np.random.default_rng(0).uniform(0, 1, shape).astype(np.float32)
        ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {in_name: x})[0]
        for p in precisions:
            vs = variants(p)
            try:
                torch_side = Torch(name, shape, p) if name in TORCH_NAMES else None
            except ImportError as e:           # the aot columns still mean something alone
                print(f"  note: no torch side ({e})")
                torch_side = None
            times = {label: [] for label, _, _ in vs}
            times["torch"] = []
            err, notes = 0.0, []
            for _ in range(a.rounds):
                for label, target, graph in vs:
                    exe, info = built[(name, path, p, label, target, graph)]
                    r = run_harness(exe, info, x, a.calls, a.warmup)
                    times[label].append(r["ms"])
                    err = max(err, float(np.abs(r["y"] - ref).max()))
                    if graph and not r.get("graph"):
                        notes.append(f"{label}: the graph was not recorded (run stayed eager)")
                    if not r.get("run_matches_run_device"):
                        notes.append(f"{label}: run and run_device outputs differ")
                if torch_side is not None:
                    times["torch"].append(torch_side.times(a.calls, a.warmup))
            s = {k: summary(v) if v else (float("nan"), float("nan")) for k, v in times.items()}
            tm = s["torch"][0]
            nat = s.get("native", (float("nan"),) * 2)
            nat_e = s.get("native eager", (float("nan"),) * 2)
            gain = s["libs eager"][0] / s["libs"][0]
            print(f"{name:<13}{p:<6}{tm:>10.3f}{s['libs'][0]:>9.3f}{s['libs eager'][0]:>11.3f}{nat[0]:>8.3f}"
                  f"{nat_e[0]:>10.3f}{s['libs'][0] / tm:>11.2f}{nat[0] / tm:>10.2f}{gain:>11.2f}{err:>10.2g}"
                  f"  {s['torch'][1]:.1%}, {s['libs'][1]:.1%}, {nat[1]:.1%}")
            for n in sorted(set(notes)):
                print(f"  note: {name} {p}: {n}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
