"""Build an MLF with the host compiler and a generated harness, run it, return outputs."""
from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile

import numpy as np

from .errors import AotError, BuildError
from .targets import device_family
from .targets.cuda import device_count
from .targets.opencl import OPENCL

def cache_dir():
    d = os.environ.get("AOT_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "aot")
    os.makedirs(d, exist_ok=True)
    return d


def tar_bytes(tar):
    from mlf.reader import read_tar_file
    if isinstance(tar, (bytes, bytearray)):
        return bytes(tar)
    return read_tar_file(tar)


def mlf_problems(m):
    """Every problem of the MLF `m` (mlf.validate with the header the metadata gives): the one
    check that info, run, size, project, debug and the Python API share."""
    from codegen_c.emit import header_from_metadata
    from mlf import validate
    return validate(m, header_from_metadata)


def read_valid_mlf(data, label=None):
    """The MLF `data` (a path or bytes; label: its path when bytes are given), refused by an
    AotError naming each problem unless it passes every check of mlf.validate."""
    from mlf import read_mlf
    m = read_mlf(data)
    problems = mlf_problems(m)
    if problems:
        label = label if label is not None else data if isinstance(data, (str, os.PathLike)) else None
        where = f" '{label}'" if label is not None else ""
        raise AotError(f"invalid MLF{where}: " + "; ".join(problems))
    return m


def label_of(tar):
    return None if isinstance(tar, (bytes, bytearray)) else tar


def refuse_instrumented(m, extra_sources):
    """An instrumented MLF (aot debug) calls tvmgen_<mod>_debug_record, which only the debug
    harness (or the user's firmware) defines: refuse it by name rather than fail to link."""
    if m.aot.get("debug_records") is not None and not extra_sources:
        raise AotError(f"module '{m.module_name}' is instrumented for aot debug: run it with "
                       f"'aot debug --mlf', or link your own tvmgen_{m.module_name}_debug_record")


def refuse_device(m, board):
    """A GPU module's host C drives a CUDA or OpenCL device: no microcontroller board runs it."""
    dev = m.aot.get("device")
    if dev:
        raise AotError(f"module '{m.module_name}' runs its kernels on the {dev['api']} device: build it for the host "
                       f"(--board host), not for board '{board}'")


def harness_params(m):
    """Template parameters shared by the host, firmware and project harnesses."""
    a = m.aot
    wsio, pools, devices = a.get("use_workspace_io", False), a.get("workspace_pools") or [], a.get("devices", [])
    # TVM's call shapes: run(&pools[, &devices]) when the I/O lives in the pools, else the structs first
    run_args = ([] if wsio and pools else ["&inputs", "&outputs"]) + (["&pools"] if pools else []) + \
        (["&devices"] if devices else [])
    return dict(mod=m.module_name, MOD=m.module_name.upper(), run_args=", ".join(run_args),
                inputs=[{"c": t["c_name"]} for t in a["inputs"]],
                outputs=[{"c": t["c_name"]} for t in a["outputs"]],
                workspace_io=a.get("use_workspace_io", False),
                pools=[{"c": p["c"], "C": p["c"].upper()} for p in a.get("workspace_pools") or []],
                devices=list(a.get("devices", [])), packed=a.get("interface_api") == "packed")


def cached_build(data, out_dir, product, build):
    """Build once per cache key: extract the MLF into a scratch directory, let build(dir) fill
    it, then publish it atomically as out_dir. Concurrent builders of the same key are fine."""
    if os.path.exists(os.path.join(out_dir, product)):
        return
    tmp = tempfile.mkdtemp(prefix="build-", dir=cache_dir())
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            t.extractall(tmp, filter="data")
        build(tmp)
        os.makedirs(os.path.dirname(out_dir), exist_ok=True)
        try:
            os.replace(tmp, out_dir)
            tmp = None
        except OSError:
            if not os.path.exists(os.path.join(out_dir, product)):   # another process finished first
                raise
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def uses_openmp(tar) -> bool:
    """Whether the module's host C has parallel loops (OpenMP pragmas the C renderer guards with
    _OPENMP): the host build then compiles and links with -fopenmp."""
    with tarfile.open(fileobj=io.BytesIO(tar_bytes(tar))) as t:
        return any(m.isfile() and m.name.endswith(".c") and "/codegen/host/src/" in "/" + m.name.lstrip("./")
                   and b"#pragma omp parallel" in t.extractfile(m).read() for m in t.getmembers())


def host_cflags(data, sanitize=False, extra_cflags=(), werror=True, opt=None):
    """The host build's C flags for the MLF `data` (bytes): build_host's, and a generated
    project's Makefile's (aot.micro), so that both compile the model alike."""
    from boards import load_board
    board = load_board("host")
    # $AOT_HOST_CFLAGS: the user's own host flags (e.g. -march=native), after the board's
    flags = list(board["cflags"]) + os.environ.get("AOT_HOST_CFLAGS", "").split() + \
        (board["sanitize_cflags"] if sanitize else []) + list(extra_cflags)
    if opt:
        flags = [f for f in flags if not f.startswith("-O")] + [opt]
    if werror:
        flags += ["-Wall", "-Wextra", "-Werror", "-pedantic"]
    if uses_openmp(data):
        flags.append("-fopenmp")
    return flags


def build_host(tar, sanitize=False, cc=None, extra_cflags=(), werror=True, opt=None, extra_sources=None, mlf=None,
               main=None):
    """Path of an executable built from the MLF (cached by content and flags). extra_sources:
    {file name: C text} linked in with the harness (the `aot debug` record hook); mlf: the MLF
    already read and validated by the caller (read_valid_mlf), so that it is not read twice;
    main: C text of a harness of the caller's own in place of host_main.c (bench/bench_gpu.py's)."""
    from boards import load_board
    from codegen_c.emit import render_template

    board = load_board("host")
    data = tar_bytes(tar)
    cc = cc or os.environ.get("CC") or board["cc"]
    flags = host_cflags(data, sanitize, extra_cflags, werror, opt)
    extra_sources = dict(extra_sources or {})
    mlf = mlf or read_valid_mlf(data)
    refuse_instrumented(mlf, extra_sources)
    mod = mlf.module_name
    main_c = main if main is not None else render_template("host_main.c.j2", **harness_params(mlf))
    # keyed by everything the build reads: the MLF, the harness as rendered, compiler and flags
    parts = [cc, *flags, "main.c", main_c] + [x for n, t in sorted(extra_sources.items()) for x in (n, t)]
    key = hashlib.sha256(data + "\0".join(parts).encode()).hexdigest()[:24]
    out_dir = os.path.join(cache_dir(), "host", key)
    exe = os.path.join(out_dir, "model")
    if os.path.exists(exe):
        return exe

    def build(tmp):
        with open(os.path.join(tmp, "main.c"), "w") as f:
            f.write(main_c)
        srcs = [os.path.join(tmp, s) for s in mlf.aot["sources"]] + [os.path.join(tmp, "main.c")]
        for name, text in sorted(extra_sources.items()):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
            srcs.append(os.path.join(tmp, name))
        defines = []
        if sanitize:
            # custom sections keep ASan from guarding the workspace; keep alignment only
            defines = [f"-DTVMGEN_{mod.upper()}_WORKSPACE_ATTRIBUTE=__attribute__((aligned(16)))"]
        incs, objs, libs = device_build(mlf, tmp, flags)
        cmd = [cc, *flags, *defines, *incs, "-I", os.path.join(tmp, "codegen/host/include"),
               "-I", os.path.join(tmp, "runtime/include"), *srcs, *objs, "-o", os.path.join(tmp, "model"), "-lm", *libs]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError(f"host build of generated code failed ({cc}):\n{r.stderr[-4000:]}")

    cached_build(data, out_dir, "model", build)
    return exe


CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")


def device_build(mlf, tmp, flags):
    """(include flags, objects, link flags) that a GPU module's host build adds: the CUDA kernels
    compiled by nvcc, and the OpenCL or CUDA runtime to link."""
    dev = mlf.aot.get("device")
    if not dev:
        return [], [], []
    if not dev["sources"]:          # the runtime builds the kernels itself (OpenCL, at init)
        return [], [], list(dev["libs"])
    nvcc = shutil.which("nvcc") or os.path.join(CUDA_HOME, "bin", "nvcc")
    objs = []
    for s in dev["sources"]:
        obj = os.path.join(tmp, os.path.basename(s) + ".o")
        cmd = [nvcc, "-O2", "-Werror", "all-warnings", "-c", os.path.join(tmp, s), "-o", obj]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError(f"nvcc failed on {s}:\n{r.stderr[-4000:]}")
        objs.append(obj)
    return (["-isystem", os.path.join(CUDA_HOME, "include")], objs,   # its headers are not -pedantic clean
            ["-L", os.path.join(CUDA_HOME, "lib64"), *dev["libs"], "-lstdc++"])


def write_inputs(info, inputs, d):
    """Check `inputs` {name: array} against the MLF's inputs (aot metadata `info`) and write each
    to <d>/in<k>.bin, the files the host and firmware harnesses read; returns their paths."""
    paths = []
    for k, t in enumerate(info["inputs"]):
        if t["name"] not in inputs:
            raise AotError(f"no value given for input '{t['name']}'")
        a = np.asarray(inputs[t["name"]])
        if list(a.shape) != t["shape"]:
            raise AotError(f"input '{t['name']}' has shape {list(a.shape)}, the model expects {t['shape']}")
        if str(a.dtype) != t["dtype"]:
            raise AotError(f"input '{t['name']}' has dtype {a.dtype}, the model expects {t['dtype']}")
        paths.append(os.path.join(d, f"in{k}.bin"))
        np.ascontiguousarray(a).tofile(paths[-1])
    return paths


def cuda_device_count():
    """CUDA GPUs the driver sees (0 without a driver): nvcc builds anywhere, a kernel runs only here."""
    return device_count()


def opencl_platform_present():
    return OPENCL.present()


def check_device(info, device=None):
    """Refuse, by name, a run whose device is not the MLF's or is not on this machine."""
    api = (info.get("device") or {}).get("api")
    if device is not None and device != api:
        raise AotError(f"device '{device}': the MLF was compiled for "
                       + (f"the {api} target" if api else "a C target (it runs on the CPU; leave device unset)"))
    family = device_family(api)
    if family is not None and not family.present():
        raise AotError(family.absent)


def run_host(tar, inputs: dict, sanitize=False, repeat=1, timeout=600, opt=None, extra_sources=None, env=None,
             device=None):
    """Outputs {name: array} of the MLF run on the host with `inputs` {name: array} (env: added
    to the environment of the run; device: see aot.run)."""
    data = tar_bytes(tar)
    mlf = read_valid_mlf(data, label_of(tar))
    info = mlf.aot
    check_device(info, device)
    exe = build_host(data, sanitize=sanitize, opt=opt, extra_sources=extra_sources, mlf=mlf)
    return run_executable(exe, info, inputs, repeat=repeat, timeout=timeout, env=env)


def run_executable(exe, info, inputs: dict, repeat=1, timeout=600, env=None):
    """run_host's run: the host harness `exe` (built from the MLF whose aot metadata is `info`,
    by build_host or a generated project's Makefile) on `inputs`."""
    with tempfile.TemporaryDirectory() as d:
        args = write_inputs(info, inputs, d)
        outs = [os.path.join(d, f"out{k}.bin") for k in range(len(info["outputs"]))]
        cmd = [exe, *args, *outs] + ([str(repeat)] if repeat > 1 else [])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, **env) if env else None)
        if r.returncode != 0:
            raise BuildError(f"generated code failed at run time (exit {r.returncode}):\n{r.stderr[-4000:]}")
        result = {}
        for t, p in zip(info["outputs"], outs):
            result[t["name"]] = np.fromfile(p, dtype=t["dtype"]).reshape(t["shape"])
        latency = None
        for line in r.stdout.splitlines():
            if line.startswith("latency_us "):
                latency = float(line.split()[1])
        if repeat > 1:
            return result, latency
        return result


def build_object(tar, path, cc=None):
    """One relocatable object (TVM's module.save("x.o")) of an MLF's host C: its sources compiled
    position-independent, linked together with `ld -r`, plus the MLF itself as the data symbol
    aot_module_mlf[aot_module_mlf_size], from which runtime.load_module of a shared library made
    from it (contrib.cc.create_shared) learns the module's interface."""
    from boards import load_board
    board = load_board("host")
    data = tar_bytes(tar)
    mlf = read_valid_mlf(data)
    if mlf.aot.get("device"):
        raise AotError(f"module '{mlf.module_name}' runs its kernels on the {mlf.aot['device']['api']} device: "
                       "save or export it as its Model Library Format (a .tar path), not as an object file")
    cc = cc or os.environ.get("CC") or board["cc"]
    flags = list(board["cflags"]) + ["-fPIC"] + (["-fopenmp"] if uses_openmp(data) else [])
    blob = "static const unsigned char mlf_bytes[] = {%s};\n" % ",".join(str(b) for b in data)
    blob += ("const unsigned char* aot_module_mlf(void);\nunsigned long aot_module_mlf_size(void);\n"
             "const unsigned char* aot_module_mlf(void) { return mlf_bytes; }\n"
             f"unsigned long aot_module_mlf_size(void) {{ return {len(data)}UL; }}\n")
    with tempfile.TemporaryDirectory(prefix="aot_obj_") as tmp:
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            t.extractall(tmp, filter="data")
        with open(os.path.join(tmp, "aot_module_mlf.c"), "w") as f:
            f.write(blob)
        objs = []
        for src in [*mlf.aot["sources"], "aot_module_mlf.c"]:
            obj = os.path.join(tmp, os.path.basename(src) + ".o")
            cmd = [cc, *flags, "-I", os.path.join(tmp, "codegen/host/include"), "-I",
                   os.path.join(tmp, "runtime/include"), "-c", os.path.join(tmp, src), "-o", obj]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                raise BuildError(f"compiling {src} for an object file failed ({cc}):\n{r.stderr[-4000:]}")
            objs.append(obj)
        out = os.path.join(tmp, "module.o")
        r = subprocess.run([cc, "-r", "-nostdlib", "-o", out, *objs], capture_output=True, text=True)
        if r.returncode:
            raise BuildError(f"linking the object file failed ({cc} -r):\n{r.stderr[-4000:]}")
        shutil.copyfile(out, path)


def build_data_object(data, symbol, path, cc=None):
    """A relocatable object holding `data` behind the functions <symbol>() and <symbol>_size()
    (a symbolic module's save("x.o"): no kernel is compiled before its sizes are known)."""
    from boards import load_board
    board = load_board("host")
    cc = cc or os.environ.get("CC") or board["cc"]
    src = ("static const unsigned char bytes[] = {%s};\n" % ",".join(str(b) for b in data) +
           f"const unsigned char* {symbol}(void);\nunsigned long {symbol}_size(void);\n"
           f"const unsigned char* {symbol}(void) {{ return bytes; }}\n"
           f"unsigned long {symbol}_size(void) {{ return {len(data)}UL; }}\n")
    with tempfile.TemporaryDirectory(prefix="aot_obj_") as tmp:
        c = os.path.join(tmp, "data.c")
        with open(c, "w") as f:
            f.write(src)
        out = os.path.join(tmp, "data.o")
        r = subprocess.run([cc, "-std=c99", "-fPIC", "-c", c, "-o", out], capture_output=True, text=True)
        if r.returncode:
            raise BuildError(f"compiling a module's data object failed ({cc}):\n{r.stderr[-4000:]}")
        shutil.copyfile(out, path)
