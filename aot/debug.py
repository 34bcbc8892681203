"""`aot debug`: name the first kernel whose output diverges from the reference: onnxruntime for
an ONNX model, TensorFlow Lite Micro (the tflite-micro wheel) for a .tflite one.

The model is compiled once more with Options.debug, which changes nothing but the AOT main:
after each kernel it hands the kernel's output to tvmgen_<mod>_debug_record (same fusion,
memory plan and in-place decisions as the normal compile). A small hook linked in with the
harness writes every record to a file (host: stdio; Cortex-M under QEMU: semihosting). The
reference is onnxruntime run on a copy of the model with each kernel's output tensor exposed
as a graph output; a kernel whose output the importer or a pass made up has no reference. For a
TFLite model, TFLM runs a copy of the flatbuffer whose subgraph lists every operator's output as
an output (a fused activation's result is the TFLite tensor, the importer's "<name>_act").

Record file: per record, three little-endian uint32 (kernel, output, nbytes), then the bytes.

`aot.debug` (the package attribute) is the API function; import names from this module with
`from aot.debug import ...`.
"""
from __future__ import annotations

import math
import os
import struct
import tempfile
from dataclasses import dataclass, field

from .errors import AotError, BuildError

HOOK_NAME = "aot_debug_record.c"
RECORDS_ENV = "AOT_DEBUG_RECORDS"

# |recorded - reference| <= atol * max(1, max|reference|) + rtol * |reference|: a kernel's output
# carries the rounding of every kernel before it, so the floor scales with the tensor's magnitude.
TOLERANCES = {"float32": (1e-3, 1e-4), "float64": (1e-7, 1e-10), "float16": (1e-2, 1e-3)}

_HOST_HOOK = """/* aot debug record hook (host): appends each kernel output to the file named by $%(env)s. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void tvmgen_%(mod)s_debug_record(int32_t kernel, int32_t output, const void* data, size_t nbytes);

static FILE* records;

void tvmgen_%(mod)s_debug_record(int32_t kernel, int32_t output, const void* data, size_t nbytes) {
  uint32_t head[3];
  if (records == NULL) {
    const char* path = getenv("%(env)s");
    if (path == NULL || (records = fopen(path, "wb")) == NULL) {
      return;
    }
  }
  head[0] = (uint32_t)kernel;
  head[1] = (uint32_t)output;
  head[2] = (uint32_t)nbytes;
  if (fwrite(head, sizeof head, 1, records) != 1 || (nbytes > 0 && fwrite(data, 1, nbytes, records) != nbytes)) {
    return;
  }
  (void)fflush(records);   /* a later kernel that crashes must not take these records with it */
}
"""

_FIRMWARE_HOOK = """/* aot debug record hook (Cortex-M): appends each kernel output to debug.bin through semihosting. */
#include <stddef.h>
#include <stdint.h>
#include "semihost.h"

void tvmgen_%(mod)s_debug_record(int32_t kernel, int32_t output, const void* data, size_t nbytes);

static int records_fd;
static int records_open;

void tvmgen_%(mod)s_debug_record(int32_t kernel, int32_t output, const void* data, size_t nbytes) {
  uint32_t head[3];
  if (!records_open) {
    records_fd = aot_sh_open("debug.bin", 1);
    if (records_fd < 0) {
      return;
    }
    records_open = 1;
  }
  head[0] = (uint32_t)kernel;
  head[1] = (uint32_t)output;
  head[2] = (uint32_t)nbytes;
  if (aot_sh_write(records_fd, head, sizeof head) != 0) {
    return;
  }
  if (nbytes > 0) {
    (void)aot_sh_write(records_fd, data, nbytes);
  }
}
"""


@dataclass
class DebugReport:
    rows: list                      # one dict per kernel output, in execution order
    board: str
    module: str
    failure: str = None             # the run stopped early (crash, fault): why
    notes: list = field(default_factory=list)
    reference: str = "onnxruntime"  # what the outputs were compared with

    @property
    def first_divergent(self):
        """The first row (execution order) that diverges or that the run never reached."""
        for r in self.rows:
            if r["status"] in ("DIVERGES", "not recorded"):
                return r
        return None

    @property
    def ok(self):
        return self.first_divergent is None and self.failure is None

    def summary(self) -> str:
        bad = self.first_divergent
        compared = sum(r["status"] in ("ok", "DIVERGES") for r in self.rows)
        if bad is None and self.failure is None:
            nref = sum(r["status"] == "no reference" for r in self.rows)
            if not compared:
                return f"no kernel output could be compared: none of the {nref} has a reference in {self.reference}"
            return (f"all {compared} compared kernel outputs match {self.reference}"
                    + (f" ({nref} without a reference)" if nref else ""))
        why = f" ({self.failure.splitlines()[0].rstrip(':')})" if self.failure else ""
        if bad is None:
            return "the run failed after recording every kernel" + why
        nodes = ", ".join(f"{n['name']} ({n['op']})" for n in bad["nodes"])
        if bad["status"] == "not recorded":
            return (f"first failing kernel: {bad['kernel']} {bad['function']} (nodes {nodes}): the run stopped "
                    f"before recording its output" + why)
        return (f"first divergent kernel: {bad['kernel']} {bad['function']} (nodes {nodes}; tensor "
                f"'{bad['tensor']}', max abs error {bad['max_abs']:.3g}, max rel error {bad['max_rel']:.3g})")

    def table(self) -> str:
        head = ("#", "kernel", "nodes fused", "tensor", "dtype", "max abs err", "max rel err", "status")
        lines = []
        for r in self.rows:
            k = str(r["kernel"]) + ("" if r["output"] == 0 else f".{r['output']}")
            nodes = ", ".join(f"{n['name']} ({n['op']})" for n in r["nodes"])
            lines.append((k, r["function"], _clip(nodes, 48), _clip(r["tensor"], 24), r["dtype"],
                          _num(r["max_abs"]), _num(r["max_rel"]), r["status"]))
        widths = [max(len(x[i]) for x in [head] + lines) for i in range(len(head))]
        fmt = "  ".join("{:>%d}" % w if i in (0, 5, 6) else "{:<%d}" % w for i, w in enumerate(widths))
        out = [fmt.format(*head).rstrip()] + [fmt.format(*x).rstrip() for x in lines]
        dtypes = sorted({r["dtype"] for r in self.rows})
        tol = [f"{d}: |err| <= {TOLERANCES[d][1]:g}*max(1, max|ref|) + {TOLERANCES[d][0]:g}*|ref|"
               for d in dtypes if d in TOLERANCES]
        if any(d not in TOLERANCES for d in dtypes):
            tol.append("integers and bool: exact")
        out.append("tolerance: " + "; ".join(tol) + "; max rel err = max |err| / max(|ref|, atol)")
        return "\n".join(out)

    def to_json(self) -> dict:
        return {"module": self.module, "board": self.board, "all_match": self.ok,
                "first_divergent": None if self.first_divergent is None else self.first_divergent["kernel"],
                "failure": self.failure, "summary": self.summary(), "notes": self.notes,
                "kernels": [{k: _json_num(v) for k, v in r.items()} for r in self.rows]}


def _json_num(x):
    """inf and NaN are not JSON: spell them as strings."""
    return str(x) if isinstance(x, float) and not math.isfinite(x) else x


def _clip(s, n):
    return s if len(s) <= n else s[:n - 3] + "..."


def _num(x):
    return "-" if x is None else f"{x:.3g}"


def hook_sources(mod, kind="host"):
    """{file name: C text} of the record hook ('host' or 'firmware') for module `mod`."""
    text = _HOST_HOOK if kind == "host" else _FIRMWARE_HOOK
    return {HOOK_NAME: text % {"mod": mod, "env": RECORDS_ENV}}


def instrument(model, options=None, log=None):
    """The instrumented compile (a CompileResult): `options` with debug set, nothing else changed."""
    import dataclasses

    from .compiler import Options, compile_model
    options = dataclasses.replace(options or Options(), debug=True)
    return compile_model(model, options, log=log)


def read_records(path) -> dict:
    """{(kernel, output): bytes} from a record file; a truncated last record is dropped."""
    out = {}
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return out
    at = 0
    while at + 12 <= len(data):
        k, j, n = struct.unpack_from("<III", data, at)
        if at + 12 + n > len(data):
            break
        out[(k, j)] = data[at + 12:at + 12 + n]
        at += 12 + n
    return out


def run_instrumented(tar, inputs, board="host", sanitize=False, opt=None, log=None):
    """({(kernel, output): bytes}, failure message or None) of one run of an instrumented MLF."""
    from .host import read_valid_mlf, run_host
    m = read_valid_mlf(tar)
    hook = hook_sources(m.module_name, "host" if board == "host" else "firmware")
    with tempfile.TemporaryDirectory() as d:
        failure = None
        if board == "host":
            path = os.path.join(d, "debug.bin")
            try:
                run_host(tar, inputs, sanitize=sanitize, opt=opt, extra_sources=hook, env={RECORDS_ENV: path})
            except BuildError as e:
                failure = str(e)
        else:
            from .firmware import build_firmware, run_firmware
            if sanitize:
                raise AotError("sanitize is for the host board")
            fw = build_firmware(tar, board, opt or "-O2", log=log, extra_sources=hook)
            path = os.path.join(d, "debug.bin")
            try:
                run_firmware(tar, inputs, board, opt or "-O2", log=log, fw=fw, workdir=d)
            except BuildError as e:
                failure = str(e)
        return read_records(path), failure


def tflite_bytes(model):
    """The flatbuffer of a TFLite model (a path or bytes), or None for any other model."""
    from .frontend import read_tflite
    if isinstance(model, (bytes, bytearray, str, os.PathLike)):
        return read_tflite(model)
    return None


def _load_onnx(model):
    import onnx
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (bytes, bytearray)):
        data = bytes(model)
    else:
        try:
            with open(model, "rb") as f:
                data = f.read()
        except OSError as e:
            raise AotError(f"cannot read '{model}': {e.strerror}")
    try:
        return onnx.load_from_string(data)
    except Exception as e:   # protobuf's DecodeError and friends
        raise AotError(f"the model is not a valid ONNX model (protobuf parse failed: {type(e).__name__})")


def reference(model, feeds, names):
    """{tensor name: array} from onnxruntime for those of `names` the ONNX graph computes."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    m = onnx.ModelProto()
    m.CopyFrom(_load_onnx(model))
    produced = {o for n in m.graph.node for o in n.output if o}
    have = {o.name for o in m.graph.output}
    for n in names:
        if n in produced and n not in have:
            m.graph.output.append(onnx.ValueInfoProto(name=n))
            have.add(n)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL   # ONNX semantics, no fusions
    so.log_severity_level = 3
    try:
        sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        wanted = {i.name for i in sess.get_inputs()}
        outs = sess.run(None, {k: v for k, v in feeds.items() if k in wanted})
    except Exception as e:   # onnxruntime raises its own exception types
        raise AotError(f"onnxruntime cannot run the model for the reference: {str(e).splitlines()[0][:300]}")
    return {o.name: np.asarray(v) for o, v in zip(sess.get_outputs(), outs)}


def _with_outputs(data, sg_pos, outputs):
    """The flatbuffer `data` with subgraph 0's output list replaced by `outputs`: the new int32
    vector is appended and the subgraph's field pointed at it (flatbuffer offsets point forward,
    so nothing before it moves)."""
    import struct as st
    buf = bytearray(data)
    field = sg_pos
    at = (len(buf) + 3) & ~3
    buf += b"\0" * (at - len(buf))
    buf += st.pack(f"<I{len(outputs)}i", len(outputs), *outputs)
    st.pack_into("<I", buf, field, at - field)
    return bytes(buf)


def tflite_reference(data, feeds, names, node_names=()):
    """{tensor name: array} from TensorFlow Lite Micro for those of `names` (the MLF's value names)
    that are a TFLite operator's output: TFLM runs the model with every operator output listed as
    a subgraph output. node_names: the MLF's node names (its debug records'), which tell where the
    importer made a fused activation a node of its own."""
    import numpy as np
    from tflite.Model import Model

    from .frontend.tflite_import import read_model
    try:
        from tflite_micro.python.tflite_micro import runtime
    except ImportError:
        raise AotError("aot debug compares a .tflite model with TensorFlow Lite Micro: install its Python wheel "
                       "(pip install tflite-micro)") from None
    inputs, outputs, tensors, ops = read_model(data)
    # the value name each TFLite tensor has in the MLF: where the importer made an op's fused
    # activation a node of its own, "<name>_act" is the TFLite tensor and "<name>" the value before
    # the activation, which TFLite has not; where it folded the activation into the op (an integer
    # kernel's clamp), "<name>" is the tensor
    nodes = set(node_names) | set(names)
    value_of = {}
    for op in ops:
        for k, t in enumerate(op.outputs):
            if t is None:
                continue
            fused = (k == 0 and hasattr(op.options, "FusedActivationFunction")
                     and op.opt("FusedActivationFunction", 0) != 0 and f"{t.name}_act" in nodes)
            value_of[t.index] = f"{t.name}_act" if fused else t.name
    wanted = [i for i, v in value_of.items() if v in set(names)]
    listed = [t.index for t in outputs] + [i for i in wanted if i not in {t.index for t in outputs}]
    model = Model.GetRootAs(data, 0)
    sg = model.Subgraphs(0)
    o = sg._tab.Offset(8)                   # SubGraph field 2: outputs
    if not o:
        raise AotError("the TFLite model's subgraph has no output list")
    patched = _with_outputs(data, sg._tab.Pos + o, listed)
    itemsize = {t.index: int(np.prod(t.shape or [1], dtype=np.int64)) * np.dtype(t.dtype).itemsize
                for t in tensors if t.dtype in ("float32", "float16", "int8", "uint8", "int16", "int32", "int64",
                                                "bool", "float64", "uint16", "uint32")}
    arena = 64 * 1024 + 2 * sum(itemsize.values())
    try:
        it = runtime.Interpreter.from_bytes(patched, arena_size=arena)
        for k, t in enumerate(inputs):
            if t.name not in feeds:
                raise AotError(f"no value given for input '{t.name}'")
            it.set_input(np.ascontiguousarray(np.asarray(feeds[t.name]).astype(t.dtype, copy=False)), k)
        it.invoke()
        got = [np.array(it.get_output(k), copy=True) for k in range(len(listed))]
    except AotError:
        raise
    except Exception as e:   # the wheel raises its own exception types
        raise AotError(f"TensorFlow Lite Micro cannot run the model for the reference: {str(e).splitlines()[0][:300]}")
    out = {}
    for index, arr in zip(listed, got):
        if index in value_of:
            out[value_of[index]] = arr
    for t, arr in zip(outputs, got):        # a graph output is its own name in the MLF
        out.setdefault(t.name, arr)
    return out


def compare(got, ref, dtype):
    """(max abs error, max rel error, within tolerance) of a recorded output against its reference."""
    import numpy as np
    if got.size == 0:
        return 0.0, 0.0, True
    if dtype in TOLERANCES:
        rtol, atol = TOLERANCES[dtype]
        a, r = got.astype(np.float64), ref.astype(np.float64)
        finite = np.abs(r[np.isfinite(r)])
        atol *= max(1.0, float(finite.max()) if finite.size else 1.0)
        with np.errstate(invalid="ignore"):
            err = np.abs(a - r)
        same = (a == r) | (np.isnan(a) & np.isnan(r))      # equal infinities, NaN where NaN is expected
        err = np.where(same, 0.0, np.where(np.isnan(err), np.inf, err))
        within = bool(np.all(err <= atol + rtol * np.abs(np.where(np.isfinite(r), r, 0.0))))
    else:
        atol = 1.0
        a, r = got.astype(np.float64), ref.astype(np.float64)
        err = np.abs(a - r)
        within = bool(np.array_equal(got, ref.astype(got.dtype)))
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = err / np.maximum(np.abs(np.where(np.isfinite(r), r, 0.0)), atol)
    return float(err.max()), float(np.nan_to_num(rel, nan=np.inf, posinf=np.inf).max()), within


def _check_table(table):
    """debug_records of an MLF from elsewhere: every field present and consistent, or refused."""
    import numpy as np
    if not isinstance(table, list):
        raise AotError("metadata.json: aot.debug_records must be a list")
    for k, t in enumerate(table):
        try:
            ok = (all(isinstance(t[f], int) and t[f] >= 0 for f in ("kernel", "output", "nbytes"))
                  and isinstance(t["function"], str) and isinstance(t["tensor"], str)
                  and all(isinstance(n["name"], str) and isinstance(n["op"], str) for n in t["nodes"])
                  and all(isinstance(d, int) and d >= 0 for d in t["shape"])
                  and t["nbytes"] == int(np.prod(t["shape"], dtype=np.int64)) * np.dtype(t["dtype"]).itemsize)
        except (KeyError, TypeError):
            ok = False
        if not ok:
            raise AotError(f"metadata.json: aot.debug_records[{k}] is malformed")


def _check_same_model(m, model, bind_inputs):
    """The MLF's inputs and outputs must be the model's: else the MLF came from another model."""
    if isinstance(model, bytes):        # a TFLite flatbuffer
        from .frontend.tflite_import import read_model
        ins, outs, _, _ = read_model(model)
        onnx_in, onnx_out = {t.name for t in ins}, {t.name for t in outs}
    else:
        inits = {i.name for i in model.graph.initializer}
        onnx_in = {i.name for i in model.graph.input if i.name not in inits}
        onnx_out = {o.name for o in model.graph.output}
    mlf_in = {t["name"] for t in m.aot["inputs"]}
    mlf_out = {t["name"] for t in m.aot["outputs"]}
    if not mlf_in <= onnx_in or not mlf_out <= onnx_out:
        raise AotError(f"the instrumented MLF (inputs {sorted(mlf_in)}, outputs {sorted(mlf_out)}) was not compiled "
                       f"from this model (inputs {sorted(onnx_in)}, outputs {sorted(onnx_out)})")
    unbound = sorted(onnx_in - mlf_in - set(bind_inputs))
    if unbound:
        raise AotError(f"input(s) {', '.join(repr(n) for n in unbound)} were fixed when the MLF was compiled: "
                       "give their values again (--bind-input NAME=FILE.npy), onnxruntime needs them")


def debug_mlf(tar, model, inputs, board="host", sanitize=False, opt=None, bind_inputs=None, log=None):
    """DebugReport of an instrumented MLF (bytes, path or CompileResult) against the reference
    running `model` (the model it was compiled from): onnxruntime for ONNX, TFLM for TFLite."""
    import numpy as np
    from .host import tar_bytes, read_valid_mlf
    if hasattr(tar, "tar"):
        tar = tar.tar
    data = tar_bytes(tar)
    m = read_valid_mlf(data)
    table = m.aot.get("debug_records")
    if table is None:
        raise AotError("the MLF is not instrumented for aot debug (compile it with Options(debug=True) "
                       "or save one with 'aot debug --save-mlf')")
    _check_table(table)
    tfl = tflite_bytes(model)
    model = tfl if tfl is not None else _load_onnx(model)
    _check_same_model(m, model, bind_inputs or {})
    records, failure = run_instrumented(data, inputs, board, sanitize=sanitize, opt=opt, log=log)
    if not records and failure is None and table:
        raise BuildError("the instrumented run finished but the debug hook recorded nothing")
    feeds = dict(inputs)
    feeds.update(bind_inputs or {})
    names = [r["tensor"] for r in table]
    refs = (tflite_reference(model, feeds, names, [n["name"] for t in table for n in t["nodes"]])
            if tfl is not None else reference(model, feeds, names))
    oracle = "TFLite Micro" if tfl is not None else "onnxruntime"
    rows, notes = [], []
    for t in table:
        row = dict(t, max_abs=None, max_rel=None)
        rec = records.get((t["kernel"], t["output"]))
        ref = refs.get(t["tensor"])
        if rec is None:
            row["status"] = "not recorded"
        elif len(rec) != t["nbytes"]:
            raise BuildError(f"kernel {t['kernel']} recorded {len(rec)} bytes for '{t['tensor']}', "
                             f"expected {t['nbytes']}")
        elif ref is None:
            row["status"] = "no reference"
        elif np.dtype(ref.dtype).name != t["dtype"] or ref.size != int(np.prod(t["shape"], dtype=np.int64)):
            row["status"] = "no reference"
            notes.append(f"kernel {t['kernel']}: tensor '{t['tensor']}' is {t['dtype']}{t['shape']} here but "
                         f"{ref.dtype}{list(ref.shape)} in {oracle}; not compared")
        else:
            got = np.frombuffer(rec, dtype=t["dtype"]).reshape(t["shape"])
            row["max_abs"], row["max_rel"], within = compare(got, ref.reshape(t["shape"]), t["dtype"])
            row["status"] = "ok" if within else "DIVERGES"
        rows.append(row)
    return DebugReport(rows, board, m.module_name, failure=failure, notes=notes, reference=oracle)


def debug(model, inputs, board="host", options=None, mlf=None, sanitize=False, opt=None, log=None):
    """Compile `model` instrumented (with `options`), run it on `board` with `inputs` {name: array},
    compare every kernel's output with the reference (onnxruntime, or TFLM for a .tflite model).
    mlf: an instrumented MLF to use instead of compiling (e.g. one saved earlier and edited by
    hand). Returns a DebugReport."""
    from .compiler import Options
    options = options or Options()
    if mlf is None:
        mlf = instrument(model, options, log=log)
    return debug_mlf(mlf, model, inputs, board, sanitize=sanitize, opt=opt, bind_inputs=options.bind_inputs, log=log)
