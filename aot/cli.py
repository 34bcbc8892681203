"""Command line: aot compile | run | info | size | project | debug."""
from __future__ import annotations

import argparse
import json
import re
import sys

from .errors import AotError


def _cmd_compile(a):
    from .compiler import Options, board_target, compile_model
    from .frontend.onnx_import import parse_input_shapes
    log = (lambda m: print(m, file=sys.stderr)) if a.verbose else None
    def show_progress(m):
        if m.startswith("lower: "):
            print("\r\033[K" + m[:100], end="", file=sys.stderr, flush=True)
    progress = show_progress if not a.verbose and sys.stderr.isatty() else None
    from .target import split_targets
    from .uma.backend import load_backend_file
    for path in a.backend or ():
        load_backend_file(path)
    if a.target is not None and not a.target.strip():
        raise AotError("--target '': give a target such as 'c' or 'c -mcpu=cortex-m4' (or leave --target out)")
    target, backends = split_targets(a.target if a.target is not None else "c")
    if a.board:
        implied = board_target(a.board)
        if a.target is not None and target != implied:
            raise AotError(f"--target '{target.short_str()}' contradicts board '{a.board}', whose target is "
                           f"'{implied.short_str()}'")
        target = implied
    main_target, target = target, [b.target for b in backends] + [target]
    opts = Options(model_name=a.model_name, input_shapes=parse_input_shapes(a.input_shape), target=target,
                   bind_inputs=_load_binds(a.bind_input))
    if a.const_section:
        opts.const_section = a.const_section
    if a.workspace_section:
        opts.workspace_section = a.workspace_section
    opts.use_workspace_io = a.use_workspace_io
    opts.interface_api = a.interface_api
    opts.io_names = a.io_names
    opts.in_place = not a.no_in_place
    opts.trace = a.trace
    opts.patch = parse_patch(a.patch)
    opts.ram_budget = a.ram_budget
    opts.stack_bound = a.stack_bound
    opts.workspace_pools = parse_pools(a.workspace_pools, a.workspace_pools_size_hint_bytes)
    a.output = compile_output(a.model, a.output, a.model_name)
    res = compile_model(a.model, opts, log=log, progress=progress)
    if progress:
        print("\r\033[K", end="", file=sys.stderr)
    if backends:        # a backend's broken C source is refused here, not when the MLF is built
        from .source_check import check_backend_sources
        check_backend_sources(res.tar, main_target, backends, lambda m: print("warning: " + m, file=sys.stderr))
    for n in res.notes:
        print("note: " + n, file=sys.stderr)
    res.save(a.output)
    p = res.plan
    print(f"wrote {a.output}: {len(p.calls)} kernels, workspace {p.workspace_size} bytes, "
          f"constants {p.constants_size} bytes")
    return 0


def parse_patch(text):
    """--patch: None, "auto", "force", (layers, strips) or (layers, strips, column tiles)."""
    if text is None:
        return None
    if text in ("auto", "force"):
        return text
    m = re.fullmatch(r"(\d+):(\d+)(?:x(\d+))?", text)
    if not m:
        raise AotError(f"--patch '{text}': give 'auto', 'force', LAYERS:STRIPS or LAYERS:STRIPSxCOLUMNS, e.g. 8:12 or 8:16x2")
    if m.group(3) is None:
        return int(m.group(1)), int(m.group(2))
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def check_output(flag, output, *inputs):
    """An output path is never one of the command's input files (compared after resolving links,
    and as the same file where it exists) nor a directory: refused before anything is written.
    inputs: (flag, path) of the files the command reads."""
    import os
    if os.path.isdir(output):
        raise AotError(f"{flag} '{output}' is a directory: give a file name")
    real = os.path.realpath(output)
    for in_flag, path in inputs:
        if not path:
            continue
        try:
            same = real == os.path.realpath(path) or (os.path.exists(output) and os.path.samefile(path, output))
        except OSError:
            same = False
        if same:
            raise AotError(f"{flag} '{output}' is the {in_flag} itself: choose another output file")


def compile_output(model, output, model_name):
    """`aot compile -o DIR` writes DIR/<model file's name>.tar (DIR/<module>.tar for a model read
    from standard input), as a directory is never the output file itself."""
    import os
    if os.path.isdir(output):
        stem = os.path.splitext(os.path.basename(str(model)))[0] or model_name
        output = os.path.join(output, f"{stem}.tar")
    check_output("-o", output, ("input model", model))
    return output


OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3", "-Os", "-Oz", "-Og")


def check_opt(opt):
    if opt is not None and opt not in OPT_LEVELS:
        raise AotError(f"--opt '{opt}' is not one of {' '.join(OPT_LEVELS)}")


NPZ_LIMIT_BYTES = 1 << 30      # an array of an .npz whose model does not give its size (expected outputs)


def npz_limit(model):
    """The most bytes one array of a model's inputs .npz may hold: its largest input, 8 bytes an
    element (a float64 or int64 given for a narrower input is refused by name later, not here)."""
    from .host import read_valid_mlf
    import numpy as np
    sizes = [int(np.prod(t["shape"], dtype=np.int64)) * 8 for t in read_valid_mlf(model).aot["inputs"]]
    return max(sizes, default=0) + 4096


def load_npz(path, what, model=None):
    """{name: array} of an .npz; with model (an MLF path or bytes), its keys must be the model's inputs.
    Read from the zip directory and each .npy header before any data: a member or an array larger
    than the model's inputs can be (or than NPZ_LIMIT_BYTES) is refused by name, and data is
    inflated at most to the size its header declares, so a zip bomb costs nothing."""
    import zipfile
    import numpy as np
    limit = npz_limit(model) if model is not None else NPZ_LIMIT_BYTES
    try:
        if not zipfile.is_zipfile(path):
            with open(path, "rb") as f:
                magic = f.read(6)
            if magic == b"\x93NUMPY":
                raise AotError(f"{what} '{path}' is a single array, not an .npz keyed by input names")
            raise AotError(f"cannot read {what} '{path}': not an .npz (zip) file")
        arrays = {}
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
                if key in arrays:          # which of two arrays of one name is meant cannot be told
                    raise AotError(f"{what} '{path}': member '{info.filename}' appears twice")
                if info.is_dir():
                    raise AotError(f"{what} '{path}': member {info.filename!r} is a directory, not an array")
                if info.file_size > limit:
                    raise AotError(f"{what} '{path}': member '{info.filename}' declares {info.file_size:,} bytes, "
                                   f"more than the {limit:,} an array of "
                                   + ("the model's inputs can hold" if model is not None else "an .npz may hold here"))
                with z.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, fortran, dtype = read_header(f)
                    if dtype.hasobject:
                        raise AotError(f"{what} '{path}': array '{key}' holds Python objects; give numbers")
                    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize if all(
                        d < (1 << 40) for d in shape) else 1 << 62
                    if nbytes > limit:
                        raise AotError(f"{what} '{path}': array '{key}' claims shape {list(shape)} {dtype} "
                                       f"({nbytes:,} bytes), more than the {limit:,} allowed")
                    data = f.read(nbytes + 1)
                if len(data) != nbytes:
                    raise AotError(f"{what} '{path}': array '{key}' holds {len(data):,} bytes of data where its "
                                   f"header says {nbytes:,}")
                arrays[key] = np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C").copy()
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as e:
        raise AotError(f"cannot read {what} '{path}': {e}")
    if model is not None:
        from .host import read_valid_mlf
        names = [t["name"] for t in read_valid_mlf(model).aot["inputs"]]
        extra = [k for k in arrays if k not in names]
        if extra:
            raise AotError(f"{what} '{path}' has key(s) {', '.join(repr(k) for k in extra)} that are not inputs "
                           f"of the model (its inputs: {', '.join(repr(n) for n in names) or 'none'})")
    return arrays


def parse_pools(names, hints):
    """--workspace-pools a,b and --workspace-pools-size-hint-bytes a:N[,b:M] -> [(name, hint)]."""
    if not names:
        if hints:
            raise AotError("--workspace-pools-size-hint-bytes needs --workspace-pools")
        return None
    pools = [n.strip() for spec in names for n in spec.split(",") if n.strip()]
    given = {}
    for spec in hints or []:
        for item in spec.split(","):
            name, sep, num = item.strip().rpartition(":")
            if not sep or not name or not num.strip().isdigit():
                raise AotError(f"--workspace-pools-size-hint-bytes '{item}' must look like POOL:BYTES")
            if name not in pools:
                raise AotError(f"--workspace-pools-size-hint-bytes names pool '{name}', "
                               f"which --workspace-pools does not list ({', '.join(pools)})")
            given[name] = int(num)
    return [(n, given.get(n)) for n in pools]


def check_board_target(model, board, allow=False):
    """An MLF runs on a board only when it was compiled for the board's core: a host-built MLF on a
    Cortex-M4 misses its DSP kernels (3x the instructions) and a Cortex-M55 one may not run there at
    all. Refused naming both, or only a warning when the user passed --allow-target-mismatch."""
    from .compiler import board_target
    from .host import read_valid_mlf
    from .target import Target
    from boards import load_board
    b = load_board(board) if isinstance(board, str) else board
    core = b.get("core")
    m = read_valid_mlf(model)
    if not core or m.aot.get("device"):        # no core to match; a GPU module is refused by name later
        return
    text = (m.aot.get("target") or {}).get("str") or (m.module.get("target") or ["c"])[-1]
    try:
        mcpu = Target(text).mcpu
    except AotError:
        mcpu = None
    if mcpu == core:
        return
    # a cmsis-nn build: the host's part is plain C, the partition's kernels are for the core it names
    parts = [p.get("kernel_target") for p in m.aot.get("partitions") or [] if isinstance(p, dict)]
    part_cpus = {t.get("mcpu") for t in parts if isinstance(t, dict)}
    if mcpu is None and part_cpus == {core}:
        return
    built = f"target '{text}'" + ("" if mcpu else " (host)")
    msg = (f"the MLF was built for {built}, board {b['name']} has a {core}: compile with --board {b['name']} "
           f"or --target '{board_target(b).short_str()}'")
    if not allow:
        raise AotError(msg + " (or pass --allow-target-mismatch to run it anyway)")
    print(f"warning: {msg}; running it anyway (--allow-target-mismatch)", file=sys.stderr)


def _cmd_run(a):
    import numpy as np
    from .host import run_host
    from boards import load_board
    board = load_board(a.board)
    if a.outputs:
        check_output("--outputs", a.outputs, ("MLF", getattr(a, "mlf_path", a.model)), ("--inputs file", a.inputs))
    inputs = load_npz(a.inputs, "inputs", a.model)
    check_board_target(a.model, board, a.allow_target_mismatch)
    if board.get("kind") == "qemu":
        from .firmware import build_firmware, format_size, run_firmware, size_report
        if a.sanitize:
            raise AotError("--sanitize is for the host board")
        log = (lambda m: print(m, file=sys.stderr)) if a.verbose else None
        timing = None
        if a.profile:
            from .cycles import board_model
            timing = board_model(board, a.flash_wait_states)
        elif a.flash_wait_states is not None:
            raise AotError("--flash-wait-states is for the cycle model: add --profile")
        fw = build_firmware(a.model, a.board, a.opt or "-O2", log=log)
        outs, stats = run_firmware(a.model, inputs, a.board, a.opt or "-O2", log=log, fw=fw, cycles=timing)
        if a.profile or a.verbose:
            print(f"instructions per inference: {stats['instructions']:,} "
                  f"(SysTick under -icount; resolution {stats['resolution_instructions']:g}); "
                  f"stack used {stats['stack_bytes']:,} bytes")
        if a.profile:
            from .cycles import format_cycles
            print(format_cycles(stats["cycles"]))
        if a.verbose:
            print(format_size(size_report(fw, stats["stack_bytes"])))
    else:
        if a.profile or a.flash_wait_states is not None:
            raise AotError(f"--{'profile' if a.profile else 'flash-wait-states'} is for emulated boards (qemu-cortex-*)")
        outs = run_host(a.model, inputs, sanitize=a.sanitize, opt=a.opt)
    if a.outputs:
        from .compiler import write_atomic
        import io
        buf = io.BytesIO()
        np.savez(buf, **outs)
        write_atomic(a.outputs, buf.getvalue())
    for k, v in outs.items():
        nan = np.isnan(v) if v.dtype.kind == "f" else np.zeros(v.shape, bool)
        vals = v[~nan]
        print(f"{k}: {v.dtype}{list(v.shape)}" + (f" min {vals.min():.6g} max {vals.max():.6g}" if vals.size else "")
              + (f", {int(nan.sum())} NaN" if nan.any() else ""))
    return 0


def _cmd_size(a):
    from .firmware import format_size, measure
    from boards import load_board
    check_board_target(a.model, a.board, a.allow_target_mismatch)
    timing = None
    if a.cycles:
        from .cycles import board_model
        timing = board_model(load_board(a.board), a.flash_wait_states)
    elif a.flash_wait_states is not None:
        raise AotError("--flash-wait-states is for the cycle model: add --cycles")
    rep, _ = measure(a.model, a.board, a.opt, cycles=timing)
    if a.json:
        print(json.dumps(rep, indent=2))
    else:
        print(format_size(rep))
        print(f"  instructions per inference (zero input): {rep['instructions']:,}")
        if a.cycles:
            from .cycles import format_cycles
            print(format_cycles(rep["cycle_model"]))
    return 0


def _cmd_project(a):
    from .project import export_project
    check_board_target(a.model, a.board, a.allow_target_mismatch)
    inputs = load_npz(a.inputs, "inputs", a.model) if a.inputs else None
    expected = load_npz(a.expected, "expected outputs") if a.expected else None
    files = export_project(a.model, a.board, a.output, inputs=inputs, expected=expected, opt=a.opt,
                           rtol=a.rtol, atol=a.atol)
    print(f"wrote {a.output}: {len(files)} files; build with 'make -C {a.output}', run with 'make -C {a.output} run'")
    return 0


def _load_binds(specs):
    """--bind-input NAME=FILE.npy ... -> {name: array}."""
    import numpy as np
    from .frontend.onnx_import import split_option
    binds = {}
    for spec in specs or []:
        name, path = split_option(spec, "--bind-input", "NAME=FILE.npy")
        try:
            binds[name] = np.load(path)
        except (OSError, ValueError) as e:
            raise AotError(f"--bind-input '{spec}': cannot read {path}: {e}")
    return binds


def _cmd_debug(a):
    from .compiler import Options, board_target, write_atomic
    from .debug import debug, instrument
    from .frontend.onnx_import import parse_input_shapes
    from .host import tar_bytes
    from boards import load_board
    board = load_board(a.board)
    if a.mlf and (a.input_shape or a.model_name != "default"):
        raise AotError("--mlf takes the compile options from the instrumented MLF: "
                       "drop --model-name and --input-shape (keep --bind-input: the reference needs the values)")
    if a.save_mlf:
        check_output("--save-mlf", a.save_mlf, ("model", a.model), ("--inputs file", a.inputs), ("--mlf", a.mlf))
    inputs = load_npz(a.inputs, "inputs")
    opts = Options(model_name=a.model_name, input_shapes=parse_input_shapes(a.input_shape),
                   bind_inputs=_load_binds(a.bind_input))
    if board.get("core"):       # the code the board runs: its core's kernels
        opts.target = board_target(board)
    log = (lambda m: print(m, file=sys.stderr)) if a.verbose else None
    if a.mlf:
        check_board_target(a.mlf, board, a.allow_target_mismatch)
    mlf = tar_bytes(a.mlf) if a.mlf else instrument(a.model, opts, log=log).tar
    rep = debug(a.model, inputs, a.board, options=opts, mlf=mlf, sanitize=a.sanitize, opt=a.opt, log=log)
    if a.save_mlf:
        write_atomic(a.save_mlf, mlf)
    if a.json:
        print(json.dumps(rep.to_json(), indent=2))
    else:
        print(rep.table())
        for n in rep.notes:
            print("note: " + n)
        print(rep.summary())
    return 0 if rep.ok else 1


def info_summary(m) -> dict:
    mem = m.main_memory
    return {
        "module": m.module_name,
        "target": m.module.get("target"),
        "export_datetime": m.module.get("export_datetime"),
        "inputs": m.aot.get("inputs") or [{"name": k, **v} for k, v in mem["inputs"].items()],
        "outputs": m.aot.get("outputs") or [{"name": k, **v} for k, v in mem["outputs"].items()],
        "workspace_size_bytes": mem["workspace_size_bytes"],
        "workspace_lower_bound_bytes": m.aot.get("workspace_lower_bound_bytes"),
        "constants_size_bytes": mem["constants_size_bytes"],
        "io_size_bytes": mem["io_size_bytes"],
        "kernels": [f["function_name"] for f in m.module["memory"]["functions"]["operator_functions"]],
        "kernel_schedules": m.aot.get("kernel_schedules", {}),
        "schedule_traces": m.aot.get("schedule_traces", {}),
        "external_functions": m.aot.get("external_functions", []),
    }


def _cmd_info(a):
    from mlf import read_mlf

    from .host import mlf_problems
    from .tir.trace import format_trace, from_json
    if a.memory_svg:
        check_output("--memory-svg", a.memory_svg, ("MLF", getattr(a, "mlf_path", a.model)))
    m = read_mlf(a.model)
    problems = mlf_problems(m)
    if not problems and len(m.module_names) > 1 and not (a.memory or a.memory_svg):
        # an MLF of several modules: each was checked; --module NAME gives one's details
        names = m.module_names
        if a.json:
            print(json.dumps({"valid": True, "problems": [], "modules": names}, indent=2))
        else:
            print(f"{len(names)} modules ({', '.join(names)}), MLF version 7, valid; --module NAME for one's details")
        return 0
    s = info_summary(m) if not problems else None
    if not problems and (a.memory or a.memory_svg):
        from .memory_report import svg, table
        rows, kernels = m.aot.get("workspace_tensors", []), m.aot.get("kernels", [])
        total, bound = s["workspace_size_bytes"], s["workspace_lower_bound_bytes"] or 0
        base, at = {}, 0
        for p in m.aot.get("workspace_pools") or []:     # pools drawn one below the other
            base[p["name"]], at = at, at + p["size"]
        rows = [dict(r, offset=r["offset"] + base.get(r.get("pool"), 0)) for r in rows]
        if a.memory_svg:
            from .compiler import write_atomic
            write_atomic(a.memory_svg, svg(rows, total, bound, kernels, f"memory plan of module {s['module']}",
                                           execution=m.aot.get("execution")).encode())
        if a.memory:
            print(table(rows, total, bound, kernels, m.aot.get("execution")))
            return 0
    if a.json:
        print(json.dumps({"valid": not problems, "problems": problems, "summary": s}, indent=2))
    else:
        if problems:
            for p in problems:
                print("invalid: " + p)
        else:
            print(f"module {s['module']} (target {', '.join(s['target'])}), MLF version 7, valid")
            for kind in ("inputs", "outputs"):
                for t in s[kind]:
                    shape = t.get("shape", "?")
                    print(f"  {kind[:-1]:6s} {t['name']}: {t['dtype']}{shape} -> C member '{t.get('c_name', t['name'])}'")
            print(f"  workspace {s['workspace_size_bytes']} bytes (lower bound {s['workspace_lower_bound_bytes']}), "
                  f"constants {s['constants_size_bytes']} bytes, io {s['io_size_bytes']} bytes")
            print(f"  {len(s['kernels'])} kernels: " + ", ".join(s["kernels"]))
            for k, how in s["kernel_schedules"].items():
                print(f"    {k}: {how}")
                if k in s["schedule_traces"]:
                    for line in format_trace(from_json(s["schedule_traces"][k]), "      "):
                        print(line)
            for f in s["external_functions"]:
                nodes = ", ".join(f"{n['name']} ({n['op']}" + (f" in {n['composite']})" if "composite" in n else ")")
                                  for n in f["nodes"])
                print(f"  external {f['name']} on {f['compiler']}: {nodes} -> calls {', '.join(f['calls'])}"
                      + (f", scratch {f['scratch_bytes']} bytes" if f["scratch_bytes"] else ""))
    return 2 if problems else 0


MODULE_HELP = "the module to use, in an MLF of several (TVM's export of a list of modules)"


def _with_module(a):
    """Runs the command on the one module --module names, of an MLF of several: the whole MLF is
    checked first, then that module's MLF (mlf.select_module) stands in for it; the MLF's own
    path stays the one that outputs must not overwrite."""
    import os
    import tempfile

    from mlf import select_module

    from .host import read_valid_mlf
    read_valid_mlf(a.model).select(a.module)
    with tempfile.TemporaryDirectory(prefix="aot_module_") as tmp:
        path = os.path.join(tmp, os.path.basename(a.model))
        with open(path, "wb") as f:
            f.write(select_module(a.model, a.module))
        a.mlf_path, a.model = a.model, path
        return a.fn(a)


MISMATCH_HELP = ("build an MLF compiled for another core than the board's (a warning instead of an error): it "
                 "runs without the core's kernels, or not at all")


def _mlf_on_board_options(p):
    """The options every command that builds an MLF for a board shares."""
    p.add_argument("--allow-target-mismatch", action="store_true", help=MISMATCH_HELP)
    p.add_argument("--module", metavar="NAME", help=MODULE_HELP)


def main(argv=None):
    from importlib.metadata import PackageNotFoundError, version
    try:
        __version__ = version("aot")
    except PackageNotFoundError:        # run from a source tree that was never installed
        __version__ = "unknown (not installed)"
    p = argparse.ArgumentParser(prog="aot", description="Ahead-of-time compiler: ONNX and TFLite models -> C99 kernels "
                                "+ a static executor in a Model Library Format tarball, for microcontrollers and GPUs")
    p.add_argument("--version", action="version", version=f"aot {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("compile", help="compile a model to a Model Library Format tarball")
    c.add_argument("model")
    c.add_argument("-o", "--output", required=True)
    c.add_argument("--model-name", "--module-name", dest="model_name", default="default",
                   help="the <mod> of tvmgen_<mod>_run (tvmc calls it --module-name)")
    c.add_argument("--input-shape", action="append", metavar="NAME=D0,D1,...", help="static shape for an input")
    c.add_argument("--bind-input", action="append", metavar="NAME=FILE.npy",
                   help="fix an input's value at compile time (e.g. a shape or axes tensor)")
    c.add_argument("--target", help="TVM-style target string, e.g. 'c -mcpu=cortex-m4' (default: 'c', or the "
                                     "board's target with --board)")
    c.add_argument("--board", help="the board the code is for: implies its target (boards/<name>/board.json)")
    c.add_argument("--backend", action="append", metavar="FILE.py",
                   help="load a plug-in backend module (aot.uma); name it in --target, e.g. 'vanilla_accelerator, c'")
    c.add_argument("--const-section", help="linker section of the constants (default .rodata.tvm)")
    c.add_argument("--workspace-section", help="linker section of the workspace (default .bss.noinit.tvm)")
    c.add_argument("--use-workspace-io", action="store_true",
                   help="place inputs and outputs inside the workspace (tvmgen_<mod>_map_inputs/_map_outputs)")
    c.add_argument("--workspace-pools", action="append", metavar="NAME[,NAME...]",
                   help="user-provided workspace pools (TVM's option): the header gets struct "
                        "tvmgen_<mod>_workspace_pools and run takes it; filled in the order given")
    c.add_argument("--workspace-pools-size-hint-bytes", action="append", metavar="NAME:BYTES[,...]",
                   help="the most bytes a pool may take; the compile is refused when the plan does not fit")
    c.add_argument("--interface-api", "--executor-aot-interface-api", dest="interface_api", default="c",
                   choices=("c", "packed"),
                   help="the entry point: 'c' (default) tvmgen_<mod>_run(&inputs, &outputs, ...) with structs, or "
                        "'packed' tvmgen_<mod>_run(TVMValue* args, int* type_codes, int num_args, ...) over DLTensors")
    c.add_argument("--io-names", default="model", choices=("model", "tvm"),
                   help="C names of inputs/outputs: 'model' (default) the model's tensor names; 'tvm' as TVM names "
                        "them (an ONNX model's single output is 'output', several are 'output0', 'output1', ...)")
    c.add_argument("--no-in-place", action="store_true",
                   help="never let a kernel write its output over a dying input")
    c.add_argument("--patch", metavar="auto|force|LAYERS:STRIPS[xCOLUMNS]",
                   help="run the first stage strip by strip of rows, and each strip tile by tile of its columns where "
                        "that is smaller (patch-based execution): 'auto' picks the stage and tiling with the smallest "
                        "workspace ('force': patched even where layer by layer is smaller); LAYERS:STRIPS or "
                        "LAYERS:STRIPSxCOLUMNS forces one (refused with the list of stages where there is none of that length)")
    c.add_argument("--stack-bound", action="store_true",
                   help="Cortex-M targets: build for the core's emulated board and record the proven stack bound "
                        "of the model's run (aot.stack_bytes in metadata.json; needs arm-none-eabi-gcc)")
    c.add_argument("--ram-budget", metavar="BYTES", type=int,
                   help="RAM the execution must fit (workspace + the caller's inputs and outputs): the compiler picks "
                        "layer by layer or the patched stage with the fewest extra multiply-accumulates that fits, "
                        "and refuses with the smallest it can reach")
    c.add_argument("--trace", action="store_true",
                   help="record each kernel's schedule trace (its rules and primitives) in metadata.json; "
                        "aot info prints them")
    c.add_argument("-v", "--verbose", action="store_true", help="explain what each pass did")
    c.set_defaults(fn=_cmd_compile)
    r = sub.add_parser("run", help="build an MLF for a board, run it, write its outputs")
    r.add_argument("model")
    r.add_argument("--inputs", required=True, help=".npz keyed by the model's input names")
    r.add_argument("--outputs", help=".npz to write, keyed by the model's output names")
    r.add_argument("--board", default="host", help="host, or qemu-cortex-m3/m4/m7/m33/m55 (see boards/)")
    r.add_argument("--opt", default=None, help="optimisation for the build: the board's by default (host: -O3 "
                   "-ffp-contract=fast, plus $AOT_HOST_CFLAGS such as -march=native; QEMU boards: -O2), Os for size, "
                   "... (or --opt=-Os)")
    r.add_argument("--profile", action="store_true", help="print instructions and estimated cycles per inference, "
                   "in total and per kernel (QEMU boards; docs/cycles.md)")
    r.add_argument("--flash-wait-states", type=int, metavar="N", default=None,
                   help="with --profile: the cycle model's flash wait states on data loads (default: the board's, 0)")
    r.add_argument("--sanitize", action="store_true", help="build with AddressSanitizer and UBSan (host)")
    r.add_argument("-v", "--verbose", action="store_true", help="print the build commands and the size report")
    _mlf_on_board_options(r)
    r.set_defaults(fn=_cmd_run)
    z = sub.add_parser("size", help="flash and RAM of the firmware for a board, by part",
                       description="Build the MLF into firmware for an emulated board, run it once on zero inputs, "
                                   "and report flash and RAM by part, the measured stack and the instructions of one "
                                   "inference.")
    z.add_argument("model", help="the MLF tarball (from aot compile --board BOARD)")
    z.add_argument("--board", required=True, help="the emulated board: qemu-cortex-m3/m4/m7/m33/m55 (see boards/)")
    z.add_argument("--opt", default="-O2", help="optimisation for the firmware build: -O0 -O1 -O2 (default) -O3 -Os "
                   "-Oz (or --opt=-Os)")
    z.add_argument("--json", action="store_true", help="print the report as JSON")
    z.add_argument("--cycles", action="store_true",
                   help="also estimate the cycles of one inference, in total (JSON key 'cycles') and per kernel, "
                        "from the core's timing model (docs/cycles.md)")
    z.add_argument("--flash-wait-states", type=int, metavar="N", default=None,
                   help="with --cycles: flash wait states on data loads (default: the board's, 0)")
    _mlf_on_board_options(z)
    z.set_defaults(fn=_cmd_size)
    j = sub.add_parser("project", help="export a standalone Makefile project for a board")
    j.add_argument("model", help="the MLF tarball (from aot compile --board BOARD)")
    j.add_argument("--board", required=True, help="the emulated board the project builds for: "
                   "qemu-cortex-m3/m4/m7/m33/m55 (see boards/)")
    j.add_argument("-o", "--output", required=True, help="directory to create")
    j.add_argument("--inputs", help=".npz test input (default: seeded random)")
    j.add_argument("--expected", help=".npz expected outputs (default: the host build's outputs for the input)")
    j.add_argument("--opt", default="-O2", help="optimisation flag of the firmware build (default -O2)")
    j.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance of the project's self-check")
    j.add_argument("--atol", type=float, default=1e-5, help="absolute tolerance of the project's self-check")
    _mlf_on_board_options(j)
    j.set_defaults(fn=_cmd_project)
    d = sub.add_parser("debug", help="name the first kernel whose output diverges from onnxruntime (TFLite Micro "
                       "for a .tflite model)",
                       description="Compile the model instrumented (same plan as 'aot compile'), run it, and compare "
                                   "every kernel's output with the reference: onnxruntime for an ONNX model, "
                                   "TensorFlow Lite Micro (the tflite-micro wheel) for a .tflite one. Exit status: 0 "
                                   "when every kernel matches, 1 when a kernel diverges or the run fails, 2 for a "
                                   "user error.")
    d.add_argument("model", help="ONNX or TFLite model")
    d.add_argument("--inputs", required=True, help=".npz keyed by the model's input names")
    d.add_argument("--board", default="host", help="host, or qemu-cortex-m3/m4/m7/m33/m55 (see boards/): the model "
                   "is compiled for the board's core")
    d.add_argument("--model-name", default="default")
    d.add_argument("--input-shape", action="append", metavar="NAME=D0,D1,...", help="static shape for an input")
    d.add_argument("--bind-input", action="append", metavar="NAME=FILE.npy",
                   help="fix an input's value at compile time, as for 'aot compile' (onnxruntime is fed it too)")
    d.add_argument("--opt", default=None, help="optimisation for the build (default: the board's)")
    d.add_argument("--sanitize", action="store_true", help="build with AddressSanitizer and UBSan (host)")
    d.add_argument("--mlf", metavar="FILE", help="use this instrumented MLF (from --save-mlf) instead of compiling")
    d.add_argument("--save-mlf", metavar="FILE", help="write the instrumented MLF")
    d.add_argument("--allow-target-mismatch", action="store_true", help="with --mlf: " + MISMATCH_HELP)
    d.add_argument("--json", action="store_true", help="print the report as JSON")
    d.add_argument("-v", "--verbose", action="store_true", help="explain the compile and print the build commands")
    d.set_defaults(fn=_cmd_debug)
    i = sub.add_parser("info", help="summarise and validate an MLF tarball")
    i.add_argument("model")
    i.add_argument("--json", action="store_true")
    i.add_argument("--memory", action="store_true", help="print the workspace plan: every tensor's bytes, lifetime, offset")
    i.add_argument("--memory-svg", metavar="FILE", help="draw the workspace plan (time x offset) as SVG")
    i.add_argument("--module", metavar="NAME", help=MODULE_HELP)
    i.set_defaults(fn=_cmd_info)
    a = p.parse_args(argv)
    if getattr(a, "opt", None) and not a.opt.startswith("-"):
        a.opt = "-" + a.opt          # --opt Os: argparse would take "-Os" for an option
    try:
        check_opt(getattr(a, "opt", None))
        if getattr(a, "module", None) is not None:
            return _with_module(a)
        return a.fn(a)
    except AotError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:         # `aot info ... | head`: the reader left; say nothing more
        import os
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 141
    except Exception as e:   # a bug in aot, not in the user's input: say so, keep the details
        from .errors import BuildError, InternalError
        if isinstance(e, (BuildError, InternalError)):
            print(f"internal error (please report): {e}", file=sys.stderr)
            return 1
        raise
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
