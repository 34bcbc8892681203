"""The pipeline, stage by stage:

  import (ONNX -> graph IR) -> graph passes -> FuseOps -> lower each group to loop IR
  -> schedule -> render C -> AOT executor plan (static memory) -> MLF tarball
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field, replace

from .errors import AotError
from .executor import PlanOptions, build_plan, debug_table
from .frontend import import_model
from .frontend.onnx_import import check_supported
from .ir.graph import print_graph
from .names import MAX_MODEL_NAME, model_c_name, tvm_c_names, unique_c_names
from .passes.fold_constants import fold_constants
from .passes.layout import channels_last
from .passes.fuse import fuse_ops, group_name
from .passes.order import order_for_memory
from .passes.patch import drop_input_views, patch, stage_cuts
from .passes.qdq import fold_qdq
from .passes.simplify import eliminate_dead_code, fold_batchnorm, materialize_outputs, remove_identities
from .target import Target, resolve
from .tir.trace import format_trace, to_json

SECTION_RE = re.compile(r"^[.A-Za-z0-9_]+$")


@dataclass
class Options:
    model_name: str = "default"
    input_shapes: dict = field(default_factory=dict)
    bind_inputs: dict = field(default_factory=dict)   # input name -> value fixed at compile time
    target: object = "c"               # a Target, its TVM-style string, or a target list whose plug-in
                                       # backends (aot.uma) come first: "vanilla_accelerator, c"
    const_section: str = ".rodata.tvm"
    workspace_section: str = ".bss.noinit.tvm"
    align: int = None                  # the workspace's byte alignment: the target's
                                       # -workspace-byte-alignment, else 16
    const_align: int = None            # each constant array's byte alignment: the target's
                                       # -constants-byte-alignment, else 16
    use_workspace_io: bool = False     # inputs and outputs live inside the workspace (TVM's option)
    in_place: bool = True              # a kernel may write its output over an input that dies there
    workspace_pools: list = None       # user pools [(name, size hint bytes or None)], TVM's option
    interface_api: str = "c"           # "c": tvmgen_<mod>_run(&inputs, &outputs...) (TVM's default for
                                       # microTVM); "packed": the packed run(TVMValue*, type codes, ...)
    io_names: str = "model"            # "model": C members named after the model's tensors; "tvm": as
                                       # TVM's ONNX frontend names them (outputs "output" / "outputN")
    debug: bool = False                # instrumented build for `aot debug`: main hands each kernel's
                                       # output to tvmgen_<mod>_debug_record right after the kernel
    external: object = None            # (group, symbol) -> ExternalKernel | None: groups handed to an
                                       # external backend (PlanOptions.external; partitioning plugs in here)
    trace: bool = False                # metadata.json records each kernel's schedule trace (schedule_traces);
                                       # off by default so that an MLF does not change with the rules' internals
    relay_text: str = None             # relay.build's module as relay prints it: src/<mod>.relay holds it,
                                       # as TVM's MLF does, and the graph aot lowered it to is src/<mod>.graph
    patch: object = None               # patch-based execution of the first stage: None (layer by layer),
                                       # "auto" (the smallest workspace), "force" (patched even where
                                       # that is larger), or (layers or cut value name, strips[, column tiles])
    ram_budget: int = None             # bytes of RAM (workspace + I/O outside it) the execution must fit
    stack_bound: bool = False          # a Cortex-M target: build the model for the emulated board of its
                                       # core and record its proven stack bound (aot.stack_bytes); off by
                                       # default as it needs the Arm toolchain and a firmware build


@dataclass
class CompileResult:
    tar: bytes
    plan: object
    graph: object
    notes: list

    def save(self, path):
        write_atomic(path, self.tar)


def board_target(board) -> Target:
    """The target a board implies (a board name or its loaded board.json): its core as -mcpu."""
    if isinstance(board, str):
        from boards import load_board
        board = load_board(board)
    return Target(f"c -mcpu={board['core']}") if board.get("core") else Target("c")


POOL_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


INTERFACE_APIS = ("c", "packed")
IO_NAMES = ("model", "tvm")


def check_interface(options):
    """--interface-api and --io-names: known values, and combinations the packed API can serve."""
    if options.interface_api not in INTERFACE_APIS:
        raise AotError(f"--interface-api '{options.interface_api}' is not one of {', '.join(INTERFACE_APIS)}")
    if options.io_names not in IO_NAMES:
        raise AotError(f"--io-names '{options.io_names}' is not one of {', '.join(IO_NAMES)}")
    if options.interface_api == "packed":
        # TVM's packed entry point takes only the I/O tensors; pools, workspace I/O and devices
        # belong to the C interface's structs
        if options.workspace_pools:
            raise AotError("--interface-api packed does not take --workspace-pools: use --interface-api c")
        if options.use_workspace_io:
            raise AotError("--interface-api packed does not take --use-workspace-io: use --interface-api c")


def tvm_output_names(graph, model):
    """TVM's ONNX frontend gives its main no output names, so the AOT executor calls a single
    output 'output' and several 'output0', 'output1', ...; its TFLite frontend keeps the tensors'."""
    from .frontend import read_tflite
    if read_tflite(model) is not None:
        return graph.output_names
    n = len(graph.output_names)
    return ["output"] if n == 1 else [f"output{k}" for k in range(n)]


def check_pools(pools):
    """User workspace pools: C identifiers, distinct, hints positive. None = internal workspace."""
    if not pools:
        return None
    seen = set()
    for name, hint in pools:
        if not POOL_RE.match(name):
            raise AotError(f"workspace pool name '{name}' must be a C identifier (letters, digits, '_')")
        if name.lower() in seen:
            raise AotError(f"workspace pool '{name}' is given twice")
        seen.add(name.lower())
        if hint is not None and hint < 0:
            raise AotError(f"workspace pool '{name}': size hint {hint} is negative")
    return [(n, h) for n, h in pools]


def run_passes(graph, log):
    """Graph passes, in order; each is Graph -> (Graph, count)."""
    passes = [
        ("remove_identities", remove_identities, "Identity/Dropout nodes removed"),
        ("fold_batchnorm", fold_batchnorm, "BatchNormalization nodes folded"),
        ("fold_qdq", fold_qdq, "QuantizeLinear(op(DequantizeLinear)) chains made integer kernels"),
        ("fold_constants", fold_constants, "nodes folded to constants"),
        ("eliminate_dead_code", eliminate_dead_code, "dead nodes removed"),
        ("materialize_outputs", materialize_outputs, "output copies inserted"),
    ]
    for name, fn, what in passes:
        graph, n = fn(graph)
        log(f"pass {name}: {n} {what}; {len(graph.nodes)} nodes remain")
    return graph


def _runtime_files():
    from runtime_c import RUNTIME_DIR
    out = {}
    for root, dirs, files in os.walk(RUNTIME_DIR):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith((".py", ".pyc")):
                continue
            full = os.path.join(root, f)
            rel = os.path.relpath(full, RUNTIME_DIR).replace(os.sep, "/")
            with open(full, "rb") as fh:
                out["runtime/" + rel] = fh.read()
    return out


def _template_files():
    """templates/: a crt_config.h and a platform.c to start a firmware from (TVM's MLF has these two)."""
    import codegen_c
    d = os.path.join(os.path.dirname(codegen_c.__file__), "templates", "mlf_templates")
    out = {}
    for f in ("crt_config.h.template", "platform.c.template"):
        with open(os.path.join(d, f), "rb") as fh:
            out["templates/" + f] = fh.read()
    return out


def io_entry(plan, kind, k, tvm_names=None):
    """An input's or output's metadata entry; a quantised one has its scale and zero point. Under
    --io-names tvm an output TVM names otherwise has that name as tvm_name (the key of TVM's
    memory.functions.main[0].outputs); name stays the model's (what run and debug key data by)."""
    c, n, t = (plan.inputs if kind == "input" else plan.outputs)[k]
    entry = {"name": n, "c_name": c, "shape": list(t.shape), "dtype": t.dtype}
    if tvm_names is not None and tvm_names[k] != n:
        entry["tvm_name"] = tvm_names[k]
    if (kind, k) in plan.io_quant:
        entry["scale"], entry["zero_point"] = plan.io_quant[(kind, k)]
    return entry


def stack_entries(tar, target, log) -> dict:
    """aot.stack_bytes (the model's proven bound, the tree under tvmgen_<mod>_run, or None with
    the reason) and aot.stack_bound (how: board, flags, compiler, the deepest path's frames)."""
    from .firmware import build_firmware, board_for_core, stack_bounds, toolchain_version
    board = board_for_core(target.attrs.get("mcpu"))
    fw = build_firmware(tar, board, "-O2")
    b = stack_bounds(fw)["model"]
    log(f"stack bound: {b['bytes'] if b['bytes'] is not None else 'none proven: ' + b.get('why', '')} "
        f"(built for {board}, -O2)")
    return {"stack_bytes": b["bytes"],
            "stack_bound": {"board": board, "opt": "-O2", "cflags": list(fw.board["cflags"]),
                            "compiler": toolchain_version(fw.board["cc"]), "path": b["path"], "frames": b["frames"],
                            **({"why": b["why"]} if b.get("why") else {})}}


def compile_model(model, options: Options | None = None, log=None, progress=None) -> CompileResult:
    from codegen_c.dialects import build_fragment
    from codegen_c.emit import emit_c, render_template
    from mlf.writer import empty_param_dict, make_metadata, metadata_json, seal, source_date_epoch, write_tar

    from .uma import external_lowering, partition_for
    from .passes.partition import claim_nodes, external_functions, partition_groups, renumber_functions

    options = options or Options()
    log = log or (lambda msg: None)
    target, backends = resolve(options.target)
    # partition targets (cmsis-nn) take fused kernels of the compiler's own; plug-ins take graph regions
    kernel_backends = [b for b in backends if getattr(b, "renders_kernels", False)]
    backends = [b for b in backends if not getattr(b, "renders_kernels", False)]
    if kernel_backends and target.is_device:
        raise AotError(f"target '{kernel_backends[0].target}' partitions a C build: its module is C for a CPU, "
                       f"not a part of a '{target}' device build (use 'c' as the list's code-generation target)")
    log(f"target: {target}" + "".join(f"; backend {b.target}" for b in backends))
    mod = model_c_name(options.model_name)
    if not mod or mod == "_":
        raise AotError(f"--model-name '{options.model_name}' gives no usable C identifier")
    if len(mod) > MAX_MODEL_NAME:
        raise AotError(f"--model-name is {len(mod)} characters, at most {MAX_MODEL_NAME} are allowed: it becomes "
                       f"part of every file name (limited to 255 bytes) and C identifier of the MLF")
    for what, sec in (("constant", options.const_section), ("workspace", options.workspace_section)):
        if not SECTION_RE.match(sec):
            raise AotError(f"{what} section name '{sec}' may only contain letters, digits, '.' and '_'")

    check_interface(options)
    if options.stack_bound and target.family.name != "cortex_m":
        raise AotError(f"--stack-bound is for Cortex-M targets (c -mcpu=cortex-m*), not '{target}'")
    # the byte alignments the options leave open are the target's (TVM's target attributes), else 16
    options = replace(options, **{f: getattr(options, f) if getattr(options, f) is not None else
                                  target.attrs.get(attr, 16) for f, attr in
                                  (("align", "workspace-byte-alignment"), ("const_align", "constants-byte-alignment"))})
    pools = check_pools(options.workspace_pools)
    graph = import_model(model, options.input_shapes, name=mod, log=log, bind_inputs=options.bind_inputs)
    graph = run_passes(graph, log)
    # an instrumented build (aot debug) keeps the model's layout: its kernels' outputs are then
    # onnxruntime's tensors, each with a reference
    if not backends and not options.debug and target.family.channels_last:
        graph, n = channels_last(graph)
        log(f"pass channels_last: {n} nodes made NHWC; {len(graph.nodes)} nodes remain")
    if backends:
        graph = partition_for(backends, graph, mod, log)
    check_supported(graph)
    graph, execution = choose_execution(graph, options, target, mod, pools, backends or kernel_backends, log)
    claims = claim_nodes(graph, kernel_backends) if kernel_backends else {}
    groups = fuse_and_order(graph, options, log, claims)
    ext = {id(n) for n in external_functions(graph)}
    order = [g.nodes[0].name for g in groups if id(g.nodes[0]) in ext]
    renamed_graph, renamed = renumber_functions(graph, order, mod)
    if renamed:      # numbered in execution order, which the memory-aware order may change
        log(f"pass renumber_functions: {renamed} external function(s) renamed to follow the execution order")
        graph = renamed_graph
        claims = claim_nodes(graph, kernel_backends) if kernel_backends else {}     # the copy's nodes
        groups = fuse_and_order(graph, options, lambda m: None, claims)

    modules = partition_groups(groups, claims, mod)
    if kernel_backends:
        log(f"pass partition_groups: {len(modules)} kernel(s) taken by " + ", ".join(b.target_name for b in kernel_backends))
    kernel_targets = {b.target_name: b.kernel_target for b in kernel_backends}
    modules = {k: (name, sym, kernel_targets[name]) for k, (name, sym) in modules.items()}

    tvm_names = tvm_output_names(graph, model) if options.io_names == "tvm" else None
    if options.io_names == "tvm":       # TVM's names exactly: a clash is refused, not renamed
        in_c, out_c = tvm_c_names([v.name for v in graph.inputs], tvm_names)
        notes = []
    else:
        in_c, notes1 = unique_c_names([v.name for v in graph.inputs], reserved=("WORKSPACE",))
        out_c, notes2 = unique_c_names(graph.output_names, reserved=["WORKSPACE"] + in_c)
        notes = notes1 + notes2
    for n in notes:
        log("note: " + n)
    external = _chain(options.external, external_lowering(backends) if backends else None)
    plan = build_plan(graph, groups, mod, in_c, out_c,
                      PlanOptions(options.align, options.use_workspace_io, options.in_place, pools, target, external,
                                  log if progress is None else progress, modules))
    check_plan_fits(plan)
    plan.io_quant = dict(graph.io_quant)
    plan.const_align = options.const_align
    traces = schedule_traces(plan)
    for symbol, trace in traces.items():
        log(f"schedule: {symbol}: pipeline {trace['pipeline']}" + ("" if trace["steps"] else ", no rule applied"))
        for line in format_trace(trace, "  "):
            log(line)
    if target.is_device:
        from codegen_c.emit_gpu import emit_gpu, graph_plan
        if options.interface_api != "c":
            raise AotError(f"--interface-api {options.interface_api} is for C targets, not '{target}'")
        if options.debug:
            raise AotError(f"aot debug is for C targets, not '{target}'")
        replay = graph_plan(plan, target)
        sources = emit_gpu(plan, target, replay)
    else:
        sources = emit_c(plan, target.short_str(), options.const_section, options.workspace_section, debug=options.debug,
                         interface_api=options.interface_api)
    src_list = source_order(s for s in sources if s.endswith(".c"))
    extra = {
        "inputs": [io_entry(plan, "input", k) for k in range(len(plan.inputs))],
        "outputs": [io_entry(plan, "output", k, tvm_names) for k in range(len(plan.outputs))],
        "workspace_lower_bound_bytes": plan.workspace_lower_bound,
        "use_workspace_io": bool(options.use_workspace_io),
        "interface_api": options.interface_api,
        "io_names": options.io_names,
        "workspace_pools": plan.pools,
        "workspace_tensors": plan.tensors,
        "kernels": [c.symbol for c in plan.calls],
        # which schedule each generated kernel got: a micro-kernel and its variant, or the plain rules
        "kernel_schedules": {c.symbol: c.func.attrs.get("schedule", "loop nest")
                             for c in plan.calls if getattr(c, "func", None) is not None},
        "name_notes": notes,
        "sources": src_list,
        "target": target.export(),
        "execution": execution,
    }
    if target.is_device:     # what a build adds for the device: nvcc for the kernels, the runtime to link
        extra["device"] = {"api": target.kind,
                           "sources": sorted(s for s in sources if s.endswith(target.family.device_sources)),
                           "libs": target.family.link_libs(target)}
        if target.family.graph_replay:
            extra["device"]["graph"] = {"replay": replay["ok"], "why_not": replay["why"] or None,
                                        "macro": replay["macro"]}
    if plan.devices and not target.is_device:     # a GPU host makes its libraries' contexts itself
        from codegen_c.emit import device_member
        extra["devices"] = [device_member(d) for d in plan.devices]
    if backends:
        extra["backends"] = [b.target.export() for b in backends]
        extra["external_functions"] = external_table(graph, plan)
    if kernel_backends:
        extra["partitions"] = [{"target": b.target.export(), "kernel_target": b.kernel_target.export(),
                                "functions": [c.symbol for c in plan.calls if getattr(c, "module", None) == b.target_name]}
                               for b in kernel_backends]
    if options.debug:
        extra["debug_records"] = debug_table([g for g in groups if not g.alias], plan)
    if options.trace:
        extra["schedule_traces"] = {k: to_json(t) for k, t in traces.items()}
    epoch = source_date_epoch()
    files = dict(sources)
    # TVM's MLF lists the targets relay.build compiled for: tvmc hands a codegen's partition target
    # ("cmsis-nn", a UMA backend) to its partitioner, not to relay.build; aot.backends and
    # aot.partitions record those
    files["metadata.json"] = metadata_json(make_metadata(plan, [str(target)], epoch, extra))
    files[f"parameters/{mod}.params"] = empty_param_dict()
    if options.relay_text is not None:
        files[f"src/{mod}.relay"] = options.relay_text
        files[f"src/{mod}.graph"] = print_graph(graph)
    else:
        files[f"src/{mod}.relay"] = print_graph(graph)
    files.update(_runtime_files())
    files.update(_template_files())
    for tool in ("mk", "cmake"):
        fragment = build_fragment(target.family, tool) if target.is_device else None
        files[f"mlf.{tool}"] = render_template(f"mlf.{tool}.j2", mod=mod, MOD=mod.upper(), sources=src_list,
                                               device=extra.get("device"), fragment=fragment)
    if options.stack_bound:
        # the bound is the built code's, so it is read off a build of this very MLF: the same
        # members, sealed once more with the bound added
        extra.update(stack_entries(write_tar(seal(files), epoch), target, log))
        files["metadata.json"] = metadata_json(make_metadata(plan, [str(target)], epoch, extra))
    tar = write_tar(seal(files), epoch)
    log(f"mlf: {len(files)} members, {len(tar)} bytes")
    return CompileResult(tar, plan, graph, notes)


def choose_execution(graph, options, target, mod, pools, backends, log):
    """(graph, metadata entry): the graph with its first stage patched as options.patch asks
    (None: layer by layer; "auto": the smallest workspace; (layers or cut value, strips[, column
    tiles]): that one),
    or the cheapest execution within options.ram_budget."""
    from .patch_search import Choice, choose
    if options.patch is None and options.ram_budget is None:
        return graph, {"patch": None}
    if backends:
        raise AotError("--patch and --ram-budget plan the compiler's own kernels: not with partitioned backends")
    if target.is_device and options.patch is not None:
        # a GPU's memory is not what a strip saves; --ram-budget still checks the plan
        raise AotError(f"--patch is for C targets (CPUs, microcontrollers), not '{target}'")
    if options.ram_budget is not None and options.ram_budget <= 0:
        raise AotError(f"--ram-budget {options.ram_budget}: give a positive number of bytes")
    io_bytes = 0 if options.use_workspace_io else (sum(v.type.nbytes for v in graph.inputs if not v.is_const)
                                                   + sum(v.type.nbytes for v in graph.outputs))

    def plan_of(g):
        groups = fuse_and_order(g, options, lambda m: None)
        names = [f"i{k}" for k in range(len(g.inputs))], [f"o{k}" for k in range(len(g.outputs))]
        return build_plan(g, groups, mod, *names, PlanOptions(options.align, options.use_workspace_io,
                                                              options.in_place, pools, target, None, None))
    graph, n = drop_input_views(graph)
    if n:
        log(f"pass drop_input_views: {n} reshapes/transposes of the input that leave it as it is dropped")
    if isinstance(options.patch, tuple):
        if len(options.patch) not in (2, 3):
            raise AotError(f"patch {options.patch!r}: give (layers, strips) or (layers, strips, column tiles)")
        cut, tiles, cols = (*options.patch, 1)[:3]
        if isinstance(cut, int):
            found = [c.value for c in stage_cuts(graph) if c.nodes == cut]
            if not found:
                shown = f"{cut}:{tiles}" + (f"x{cols}" if cols != 1 else "")
                raise AotError(f"--patch {shown}: no stage of {cut} layers ends where one tensor leaves it "
                               f"(stages of this model: {', '.join(str(c.nodes) for c in stage_cuts(graph)) or 'none'})")
            cut = found[0]
        graph, info = patch(graph, cut, tiles, cols)
        choice = Choice(cut, tiles, info.nodes, 0, 0, info.extra_macs, 0, cols)
        log(f"pass patch: the first {info.nodes} layers in {tiles} strips" + (f" of {cols} column tiles" if cols > 1 else "")
            + f", +{info.extra_macs:,} multiply-accumulates")
    else:
        if options.patch not in (None, "auto", "force"):
            raise AotError(f"patch {options.patch!r}: give None, 'auto', 'force', (layers, strips) or (layers, strips, column tiles)")
        graph, choice, _ = choose(graph, plan_of, io_bytes, options.use_workspace_io, options.ram_budget, log,
                                  force=options.patch == "force", cuts=not target.is_device)
        log(f"patch search: chose {choice.describe()}")
    if choice.cut is None:
        return graph, {"patch": None}
    return graph, {"patch": {"layers": choice.layers, "strips": choice.tiles, "columns": choice.cols,
                             "cut": choice.cut, "extra_macs": choice.extra_macs}}


def source_order(paths):
    """The C sources by name, a module's lib numbers compared as numbers (lib10 after lib9)."""
    return sorted(paths, key=lambda p: re.sub(r"_lib(\d+)\.c$", lambda m: f"_lib{int(m.group(1)):09d}.c", p))


def schedule_traces(plan) -> dict:
    """symbol -> the schedule trace of each generated kernel that kept its schedule (a user's kernel,
    taken as written, and a staged kernel whose schedule was not proven in place have none)."""
    return {c.symbol: c.func.attrs["trace"] for c in plan.calls
            if getattr(c, "func", None) is not None and "trace" in c.func.attrs}


def fuse_and_order(graph, options, log, claims=None):
    groups = fuse_ops(graph, (lambda n: claims.get(id(n))) if claims else None)
    kernels = [g for g in groups if not g.alias]
    log(f"pass fuse_ops: {len(graph.nodes)} nodes -> {len(kernels)} kernels "
        f"({len(groups) - len(kernels)} reshape-like aliases need no kernel)")
    for g in kernels:
        log(f"  {group_name(g)}: {', '.join(n.name for n in g.nodes)}")
    return order_for_memory(graph, groups, options.use_workspace_io, log=log)


def _chain(*hooks):
    """The first external hook that takes a group."""
    hooks = [h for h in hooks if h is not None]
    if not hooks:
        return None

    def external(group, symbol):
        for h in hooks:
            k = h(group, symbol)
            if k is not None:
                return k
        return None
    return external


def external_table(graph, plan):
    """metadata.json's record of the partitioned functions: which nodes went to which backend."""
    calls = {c.symbol: c for c in plan.calls}
    rank = {sym: k for k, sym in enumerate(calls)}
    rows = []
    for n in graph.nodes:
        if n.op != "Function" or not n.attrs.get("Compiler"):
            continue
        sym, body = n.attrs["global_symbol"], n.attrs["body"]
        c = calls[sym]
        rows.append({"name": sym, "compiler": n.attrs["Compiler"],
                     "nodes": [dict({"name": x.name, "op": x.op}, **({"composite": m.attrs["Composite"]}
                                                                        if m.op == "Function" else {}))
                               for m in body.nodes
                               for x in (m.attrs["body"].nodes if m.op == "Function" else [m])],
                     "inputs": [v.name for v in n.inputs], "outputs": [v.name for v in n.outputs],
                     "calls": [e.symbol for e in c.body], "scratch_bytes": c.scratch_bytes,
                     "device": c.device})
    rows.sort(key=lambda r: rank[r["name"]])
    return rows


def check_plan_fits(plan):
    """Static arrays beyond 2 GiB fit neither a 32-bit target nor the host's default code model."""
    from .frontend.builder import MAX_TENSOR_BYTES
    for what, n in (("workspace", plan.workspace_size), ("constants", plan.constants_size)):
        if n > MAX_TENSOR_BYTES:
            raise AotError(f"the model's {what} needs {n:,} bytes, more than a static array may hold in the "
                           f"generated code ({MAX_TENSOR_BYTES:,})")


def write_atomic(path, data: bytes):
    """Write via a temporary file beside the file a link resolves to: no partial output on
    failure, and a link stays a link. A device or FIFO (/dev/null, /dev/stdout, a pipe) is written
    into: renaming over it would put a regular file in its place."""
    import stat
    real = os.path.realpath(path)
    try:
        if os.path.exists(real) and not stat.S_ISREG(os.stat(real).st_mode):
            with open(real, "wb") as f:
                f.write(data)
            return
    except OSError as e:
        raise AotError(f"cannot write '{path}': {e.strerror}")
    d = os.path.dirname(real)
    tmp = os.path.join(d, f".{os.path.basename(real)}.tmp{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, real)
    except OSError as e:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise AotError(f"cannot write '{path}': {e.strerror}")


def stderr_log(msg):
    print(msg, file=sys.stderr)
