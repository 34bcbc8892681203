"""ONNX -> graph IR, with full static shape inference and folding of compile-time subgraphs."""
from __future__ import annotations

import collections
import os

import numpy as np

from ..errors import AotError, OpError, UnsupportedError
from ..ir.graph import Graph, TensorType, Value
from ..ops import REGISTRY, get_op
from ..ops.custom import custom_key
from ..ops.registry import ONNX_DTYPES
from ..passes.fold_constants import compact
from . import onnx_contrib
from .builder import MAX_TENSOR_BYTES, add_node, check_tensor_size

MIN_OPSET = 7
def _load(model):
    import onnx
    if isinstance(model, onnx.ModelProto):
        return _no_external_data(model)
    try:
        if isinstance(model, (bytes, bytearray)):
            try:
                return _no_external_data(onnx.load_model_from_string(bytes(model)))
            except AotError:
                raise
            except Exception as e:  # protobuf raises DecodeError and friends
                raise AotError(f"the model bytes are not a valid ONNX model (protobuf parse failed: {type(e).__name__})")
        with open(model, "rb") as f:
            data = f.read()
    except OSError as e:
        raise AotError(f"cannot read model '{model}': {e.strerror}")
    try:
        m = onnx.load_model_from_string(data)
    except Exception as e:  # protobuf raises DecodeError and friends
        raise AotError(f"'{model}' is not a valid ONNX model (protobuf parse failed: {type(e).__name__})")
    if not m.graph.node and not m.graph.output:
        raise AotError(f"'{model}' is not a valid ONNX model (no graph)")
    _load_external_data(m, os.path.dirname(os.path.abspath(model)))
    return m


def _no_external_data(m):
    ext = _external_tensors(m)
    if ext:
        raise AotError(f"initializer '{ext[0].name}' is stored in external data, which needs the model's path "
                       f"(pass the .onnx file, not its bytes)")
    return m


def _external_tensors(m):
    from onnx import external_data_helper as ed
    return [t for t in ed._get_all_tensors(m) if ed.uses_external_data(t)]


def _load_external_data(m, base_dir):
    """Initializers stored outside the model file: only files inside the model's folder."""
    from onnx import external_data_helper as ed
    for t in _external_tensors(m):
        info = ed.ExternalDataInfo(t)
        loc = info.location or ""
        what = f"initializer '{t.name}': external data '{loc}'"
        path = os.path.realpath(os.path.join(base_dir, loc))
        if not loc or os.path.isabs(loc) or ".." in loc.replace("\\", "/").split("/") \
                or os.path.commonpath([path, os.path.realpath(base_dir)]) != os.path.realpath(base_dir):
            raise AotError(f"{what} is outside the model's folder {base_dir}")
        if not os.path.isfile(path):
            raise AotError(f"{what} is not a file (looked for {path})")
        size = os.path.getsize(path)
        offset, length = info.offset or 0, info.length or (size - (info.offset or 0))
        if offset < 0 or length < 0 or offset + length > size:
            raise AotError(f"{what}: bytes {offset}..{offset + length} are beyond its {size} bytes")
        if length > MAX_TENSOR_BYTES:
            raise AotError(f"{what} is {length:,} bytes, more than a tensor may hold ({MAX_TENSOR_BYTES:,})")
        try:
            ed.load_external_data_for_tensor(t, base_dir)
        except Exception as e:      # onnx raises ValueError, OSError and its own checker errors
            raise AotError(f"{what} cannot be read: {e}")


def check_structure(m):
    """What onnx.checker and onnxruntime refuse and the importer would otherwise take silently:
    a newer IR than onnx knows, and names defined twice (static single assignment)."""
    import onnx
    if m.ir_version > onnx.IR_VERSION:
        raise AotError(f"model ir_version {m.ir_version} is newer than this onnx ({onnx.__version__}) supports "
                       f"(at most {onnx.IR_VERSION})")
    from .graph_rules import RuleNode, check_graph
    g = m.graph
    inits = set()
    for i in g.initializer:
        if i.name in inits:
            raise AotError(f"initializer '{i.name}' is defined twice")
        inits.add(i.name)
    check_graph([vi.name for vi in g.input], sorted(inits),
                [RuleNode(f"node '{n.name or f'#{k}'}' ({n.op_type})", [i for i in n.input if i] or [],
                          [o for o in n.output if o]) for k, n in enumerate(g.node)],
                [vo.name for vo in g.output], name_of=lambda x: f"'{x}'", constant="initializer")


def check_declared_outputs(m, values):
    """A declared output element type or static dimension that contradicts inference is an
    invalid model (onnx.checker's strict shape inference refuses it too)."""
    for vo in m.graph.output:
        if not vo.type.HasField("tensor_type"):
            continue
        tt, got = vo.type.tensor_type, values[vo.name].type
        if tt.elem_type:
            want = ONNX_DTYPES.get(tt.elem_type)
            if want != got.dtype:
                raise AotError(f"graph output '{vo.name}' is declared {want or tt.elem_type} but computes {got.dtype}")
        if tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
            if len(dims) != len(got.shape) or any(d is not None and d != s for d, s in zip(dims, got.shape)):
                shown = [d if d is not None else "?" for d in dims]
                raise AotError(f"graph output '{vo.name}' is declared with shape {shown} but computes {list(got.shape)}")


def split_option(spec, flag, form):
    """'NAME=VALUE' of a command-line option -> (NAME, VALUE); the name may itself hold '='."""
    name, sep, value = spec.rpartition("=")
    if not sep or not name:
        raise AotError(f"{flag} '{spec}' must look like {form}")
    return name, value


def parse_input_shapes(specs):
    """['x=1,3,224,224', ...] -> {'x': (1, 3, 224, 224)}"""
    out = {}
    for s in specs or []:
        name, dims = split_option(s, "--input-shape", "NAME=D0,D1,...")
        try:
            out[name] = tuple(int(d) for d in dims.split(",") if d.strip() != "")
        except ValueError:
            raise AotError(f"--input-shape '{s}': dimensions must be integers")
        bad = [(k, d) for k, d in enumerate(out[name]) if d < 0]
        if bad:
            k, d = bad[0]
            raise AotError(f"--input-shape '{s}': dimension {k} of input '{name}' is {d}; "
                           f"a dimension cannot be negative")
    return out


def _elem_dtype(t, what):
    dt = ONNX_DTYPES.get(t)
    if dt is None:
        import onnx
        try:
            name = onnx.TensorProto.DataType.Name(t)
        except ValueError:
            name = str(t)
        raise AotError(f"{what}: element type {name} is not supported")
    return dt


def _opset(m):
    for imp in m.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    return 1


def _attrs(node):
    from onnx import TensorProto, helper, numpy_helper
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, TensorProto):
            v = numpy_helper.to_array(v)
        elif isinstance(v, bytes):
            v = v.decode("utf-8", "replace")
        elif isinstance(v, (list, tuple)):
            v = [x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in v]
        out[a.name] = v
    return out


def _constant_node_value(node, attrs):
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in attrs:
            v = attrs[key]
            if key == "value":
                return np.asarray(v)
            if key.startswith("value_float"):
                return np.array(v, np.float32)
            return np.array(v, np.int64)
    raise OpError(_Named(node), "Constant value kind is not supported (sparse or string)")


class _Named:
    def __init__(self, node):
        self.name, self.op = node.name or node.output[0], node.op_type


def _schema(op_type, opset):
    import onnx.defs
    try:
        return onnx.defs.get_schema(op_type, opset, "")
    except Exception:   # onnx raises SchemaError for unknown ops
        return None


def _best(versions, opset):
    ok = [v for v in versions if v <= opset]
    return max(ok) if ok else None


def has_function(op_type, opset):
    s = _schema(op_type, opset)
    return s is not None and (_best(s.function_opset_versions, opset) is not None
                              or _best(s.context_dependent_function_opset_versions, opset) is not None)


def _expand_function(pn, opset, values, k):
    """The nodes of pn's ONNX function body, with names made unique and attributes resolved.

    Ops that ONNX defines as functions of other ops (LayerNormalization, the losses, Gelu, ...)
    compile through their definition, exactly as the '_expanded' conformance tests spell them."""
    import onnx
    from onnx import helper
    label = pn.name or (pn.output[0] if pn.output else f"#{k}")
    s = _schema(pn.op_type, opset)
    fp = onnx.FunctionProto()
    v = _best(s.function_opset_versions, opset) if s is not None else None
    if v is not None:
        fp.ParseFromString(s.get_function_with_opset_version(v))
    else:
        v = _best(s.context_dependent_function_opset_versions, opset) if s is not None else None
        if v is None:
            raise OpError(_Named(pn), f"operator {pn.op_type} is not supported")
        types = []
        for name in pn.input:
            if name and name in values:
                t = values[name].type
                elem = next(c for c, d in ONNX_DTYPES.items() if d == t.dtype)
                types.append(helper.make_tensor_type_proto(elem, list(t.shape)).SerializeToString())
            else:
                types.append(onnx.TypeProto().SerializeToString())
        try:
            fp.ParseFromString(s.get_context_dependent_function_with_opset_version(v, pn.SerializeToString(), types))
        except Exception as e:
            raise OpError(_Named(pn), f"its ONNX function body could not be built: {e}")
    body_opset = next((o.version for o in fp.opset_import if o.domain in ("", "ai.onnx")), opset)
    prefix = f"{label}::"
    rename = {}
    for formal, actual in zip(fp.input, list(pn.input) + [""] * len(fp.input)):
        rename[formal] = actual
    for formal, actual in zip(fp.output, list(pn.output) + [""] * len(fp.output)):
        rename[formal] = actual or prefix + formal
    caller_attrs = {a.name: a for a in pn.attribute}
    defaults = {a.name: a for a in fp.attribute_proto}
    for name, attr in s.attributes.items():      # the schema's defaults, e.g. MVN's axes
        d = attr.default_value
        if name not in defaults and d is not None and d.type != 0:
            defaults[name] = d
    out = []
    for j, n in enumerate(fp.node):
        m = onnx.NodeProto()
        m.CopyFrom(n)
        m.name = f"{label}/{n.op_type}_{j}"
        del m.input[:]
        m.input.extend("" if x == "" else rename.get(x, prefix + x) for x in n.input)
        del m.output[:]
        m.output.extend("" if x == "" else rename.get(x, prefix + x) for x in n.output)
        _rename_outer_refs(m, lambda x: rename.get(x, prefix + x))
        renamed_attrs = list(m.attribute)
        del m.attribute[:]
        for a in renamed_attrs:
            if a.ref_attr_name:
                src = caller_attrs.get(a.ref_attr_name) or defaults.get(a.ref_attr_name)
                if src is None:
                    continue
                b = onnx.AttributeProto()
                b.CopyFrom(src)
                b.name = a.name
                m.attribute.append(b)
            else:
                m.attribute.append(a)
        if m.domain not in ("", "ai.onnx"):
            raise OpError(_Named(pn), f"its ONNX function body uses operator domain '{m.domain}'")
        out.append(m)
    return out, body_opset


def _subgraph_nodes(graph, prefix, outer_outputs, bind=None):
    """A subgraph's nodes with its own values renamed under `prefix`, its initializers as
    Constant nodes, and Identity nodes binding its outputs to `outer_outputs`; `bind` maps
    the subgraph's inputs to outer values."""
    import onnx
    from onnx import helper
    bind = bind or {}
    own = {i.name for i in graph.initializer} | {o for n in graph.node for o in n.output if o}
    own |= {i.name for i in graph.input}
    ren = lambda x: bind[x] if x in bind else (prefix + x) if x in own else x  # noqa: E731
    out = [helper.make_node("Constant", [], [ren(i.name)], value=i, name=prefix + "init_" + i.name)
           for i in graph.initializer]
    for j, n in enumerate(graph.node):
        m = onnx.NodeProto()
        m.CopyFrom(n)
        m.name = prefix + (n.name or f"{n.op_type}_{j}")
        del m.input[:]
        m.input.extend(ren(x) if x else "" for x in n.input)
        del m.output[:]
        m.output.extend(ren(x) if x else "" for x in n.output)
        _rename_outer_refs(m, ren)
        out.append(m)
    for sub_out, name in zip(graph.output, outer_outputs):
        if name:
            out.append(helper.make_node("Identity", [ren(sub_out.name)], [name], name=prefix + "out_" + name))
    return out


def _inline_if(pn, values, k):
    """If with a condition known at compile time is its taken branch; otherwise refused."""
    label = pn.name or (pn.output[0] if pn.output else f"#{k}")
    cond = values.get(pn.input[0])
    if cond is None or not cond.is_const:
        raise OpError(_Named(pn), "If needs a condition known at compile time (data-dependent control flow is not supported)")
    branch = "then_branch" if bool(np.asarray(cond.const).reshape(-1)[0]) else "else_branch"
    g = next(a.g for a in pn.attribute if a.name == branch)
    return _subgraph_nodes(g, f"{label}/{branch}/", list(pn.output))


def _inline_scan(pn, values, k, opset):
    """Scan over a static sequence length, unrolled: one copy of the body per step."""
    from onnx import helper
    label = pn.name or (pn.output[0] if pn.output else f"#{k}")
    if opset < 9:
        raise OpError(_Named(pn), "Scan before opset 9 (with a batch axis) is not supported")
    a = {x.name: x for x in pn.attribute}
    body = a["body"].g
    m = a["num_scan_inputs"].i
    n_state = len(pn.input) - m
    in_axes = list(a["scan_input_axes"].ints) if "scan_input_axes" in a else [0] * m
    in_dirs = list(a["scan_input_directions"].ints) if "scan_input_directions" in a else [0] * m
    n_out = len(body.output) - n_state
    out_axes = list(a["scan_output_axes"].ints) if "scan_output_axes" in a else [0] * n_out
    out_dirs = list(a["scan_output_directions"].ints) if "scan_output_directions" in a else [0] * n_out
    scan_in = list(pn.input[n_state:])
    lens = set()
    for j, name in enumerate(scan_in):
        t = values[name].type
        in_axes[j] %= len(t.shape)
        lens.add(t.shape[in_axes[j]])
    if len(lens) != 1:
        raise OpError(_Named(pn), "scan inputs have different sequence lengths")
    T = lens.pop()
    nodes = []

    def const(name, arr):
        nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper_from(arr, name), name=name))
        return name
    state = list(pn.input[:n_state])
    per_step = [[] for _ in range(n_out)]
    for t in range(T):
        pre = f"{label}/step{t}/"
        bind = {}
        for j, name in enumerate(scan_in):
            pos = T - 1 - t if in_dirs[j] else t
            idx = const(pre + f"pos{j}", np.array(pos, np.int64))
            sl = pre + f"slice{j}"
            nodes.append(helper.make_node("Gather", [name, idx], [sl], axis=in_axes[j], name=sl))
            bind[body.input[n_state + j].name] = sl
        for j in range(n_state):
            bind[body.input[j].name] = state[j]
        outs = [pre + f"out{j}" for j in range(len(body.output))]
        nodes += _subgraph_nodes(body, pre, outs, bind)
        state = outs[:n_state]
        for j in range(n_out):
            per_step[j].append(outs[n_state + j])
    for j in range(n_state):
        if pn.output[j]:
            nodes.append(helper.make_node("Identity", [state[j]], [pn.output[j]], name=f"{label}/final{j}"))
    for j in range(n_out):
        name = pn.output[n_state + j] if n_state + j < len(pn.output) else ""
        if not name:
            continue
        steps = per_step[j][::-1] if out_dirs[j] else per_step[j]
        ax = out_axes[j]
        parts = []
        for t, v in enumerate(steps):
            u = f"{label}/stack{j}_{t}"
            if opset >= 13:
                nodes.append(helper.make_node("Unsqueeze", [v, const(u + "_axes", np.array([ax], np.int64))], [u], name=u))
            else:
                nodes.append(helper.make_node("Unsqueeze", [v], [u], axes=[ax], name=u))
            parts.append(u)
        nodes.append(helper.make_node("Concat", parts, [name], axis=ax, name=f"{label}/concat{j}"))
    return nodes


def _rename_outer_refs(node, ren, own=frozenset()):
    """Rename, inside a node's subgraphs, the references to names of the enclosing scope."""
    for a in node.attribute:
        graphs = [a.g] if a.HasField("g") else list(a.graphs)
        for g in graphs:
            inner = set(own) | {i.name for i in g.input} | {i.name for i in g.initializer} | {o for m in g.node for o in m.output}
            for m in g.node:
                new = [x if (not x or x in inner) else ren(x) for x in m.input]
                del m.input[:]
                m.input.extend(new)
                _rename_outer_refs(m, ren, frozenset(inner))
            for o in g.output:
                if o.name not in inner:
                    o.name = ren(o.name)


def numpy_helper_from(arr, name):
    from onnx import numpy_helper
    return numpy_helper.from_array(np.asarray(arr), name)


def _implicit_inputs(n):
    """Outer-scope names a node's subgraphs read (they are not listed as its inputs)."""
    names = set()
    for a in n.attribute:
        graphs = [a.g] if a.HasField("g") else list(a.graphs)
        for g in graphs:
            own = {i.name for i in g.input} | {i.name for i in g.initializer} | {o for m in g.node for o in m.output}
            for m in g.node:
                names.update(x for x in list(m.input) + sorted(_implicit_inputs(m)) if x and x not in own)
    return names


def _toposort(nodes, known):
    """ONNX requires topological order, but exporters do not always comply."""
    avail = set(known)
    pending, out = list(nodes), []
    while pending:
        progressed, rest = False, []
        for n in pending:
            if all(i == "" or i in avail for i in list(n.input) + sorted(_implicit_inputs(n))):
                out.append(n)
                avail.update(o for o in n.output if o)
                progressed = True
            else:
                rest.append(n)
        if not progressed:
            later = {o for m in rest for o in m.output if o}
            for n in rest:
                missing = [i for i in list(n.input) + sorted(_implicit_inputs(n)) if i and i not in avail]
                if missing and missing[0] not in later:
                    raise OpError(_Named(n), f"input '{missing[0]}' is not produced by any node, initializer "
                                             f"or graph input")
            n = rest[0]
            missing = [i for i in n.input if i and i not in avail]
            raise OpError(_Named(n), f"input '{missing[0]}' is produced only downstream of this node: the nodes form a cycle")
        pending = rest
    return out


def import_onnx(model, input_shapes=None, name="default", log=None, bind_inputs=None) -> Graph:
    import onnx
    from onnx import numpy_helper
    m = _load(model)
    check_structure(m)
    opset = _opset(m)
    newest = onnx.defs.onnx_opset_version()
    if opset < MIN_OPSET or opset > newest:
        raise AotError(f"opset {opset} is not supported (supported: {MIN_OPSET} to {newest})")
    g = m.graph
    input_shapes = dict(input_shapes or {})

    # every op problem at once, before any inference
    problems = []
    for k, n in enumerate(g.node):
        label = f"node '{n.name or n.output[0] if n.output else k}' ({n.op_type})"
        if n.domain == onnx_contrib.DOMAIN and custom_key(n.domain, n.op_type) not in REGISTRY:
            why = onnx_contrib.unsupported_reason(n.op_type)
            if why:
                problems.append(f"{label}: {why}")
        elif n.domain not in ("", "ai.onnx"):
            if custom_key(n.domain, n.op_type) not in REGISTRY:
                problems.append(f"{label}: operator domain '{n.domain}' is not supported (custom ops: "
                                "aot.register_op)")
        elif n.op_type not in ("Constant", "If", "Scan") and (n.op_type not in REGISTRY or getattr(
                REGISTRY[n.op_type], "internal", False)) and not has_function(n.op_type, opset):
            problems.append(f"{label}: operator {n.op_type} is not supported")
    if problems:
        raise UnsupportedError(problems)

    values: dict = {}
    for init in g.initializer:
        try:
            arr = numpy_helper.to_array(init)
        except Exception as e:
            raise AotError(f"initializer '{init.name}' cannot be read: {e}")
        if str(arr.dtype) not in ONNX_DTYPES.values():
            raise AotError(f"initializer '{init.name}': element type {arr.dtype} is not supported")
        values[init.name] = Value(init.name, TensorType(arr.shape, str(arr.dtype)), compact(arr))

    for bname, arr in (bind_inputs or {}).items():
        vi = next((v for v in g.input if v.name == bname and v.name not in values), None)
        if vi is None:
            raise AotError(f"--bind-input names unknown input '{bname}'")
        arr = np.asarray(arr)
        want = _elem_dtype(vi.type.tensor_type.elem_type, f"input '{bname}'")
        if str(arr.dtype) != want:
            raise AotError(f"--bind-input '{bname}' has dtype {arr.dtype}, the model expects {want}")
        values[bname] = Value(bname, TensorType(arr.shape, want), compact(arr))
    runtime_inputs = [vi.name for vi in g.input if vi.name not in values]
    unknown = sorted(set(input_shapes) - set(runtime_inputs))
    if unknown:
        raise AotError(f"--input-shape names unknown input(s): {', '.join(unknown)} "
                       f"(the model's inputs: {', '.join(runtime_inputs)})")
    inputs = []
    for vi in g.input:
        if vi.name in values:
            continue        # an initializer listed as input (IR < 4): a constant
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            raise AotError(f"input '{vi.name}' is not a tensor")
        dtype = _elem_dtype(tt.elem_type, f"input '{vi.name}'")
        if vi.name in input_shapes:
            shape = input_shapes.pop(vi.name)
            if tt.HasField("shape") and len(tt.shape.dim) != len(shape):
                raise AotError(f"--input-shape for '{vi.name}' has rank {len(shape)}, the model says {len(tt.shape.dim)}")
            for d, (dim, given) in enumerate(zip(tt.shape.dim, shape)):
                if dim.HasField("dim_value") and dim.dim_value != given:
                    raise AotError(f"--input-shape for '{vi.name}': dimension {d} is {dim.dim_value} in the model, not {given}")
        else:
            if not tt.HasField("shape"):
                raise AotError(f"input '{vi.name}' has an unknown rank; give it with --input-shape {vi.name}=D0,D1,...")
            shape = []
            for d, dim in enumerate(tt.shape.dim):
                if dim.HasField("dim_value") and dim.dim_value < 0:
                    raise AotError(f"input '{vi.name}' dimension {d} is {dim.dim_value}: "
                                   f"a dimension cannot be negative")
                if dim.HasField("dim_value"):
                    shape.append(dim.dim_value)
                else:
                    sym = dim.dim_param or "?"
                    raise AotError(f"input '{vi.name}' dimension {d} ('{sym}') is not static; "
                                   f"give it with --input-shape {vi.name}=D0,D1,...")
        check_tensor_size(f"input '{vi.name}'", shape, dtype)
        v = Value(vi.name, TensorType(tuple(shape), dtype))
        values[vi.name] = v
        inputs.append(v)

    nodes, used_names, folded, expanded = [], set(), 0, 0
    queue = collections.deque((pn, opset) for pn in _toposort(g.node, values.keys()))
    k = -1
    while queue:
        pn, node_opset = queue.popleft()
        k += 1
        if pn.op_type in ("If", "Scan"):
            sub = _inline_if(pn, values, k) if pn.op_type == "If" else _inline_scan(pn, values, k, node_opset)
            queue.extendleft(reversed([(b, node_opset) for b in sub]))
            expanded += 1
            continue
        op_name = pn.op_type if pn.domain in ("", "ai.onnx") else custom_key(pn.domain, pn.op_type)
        op_def = REGISTRY.get(op_name)
        if pn.domain == onnx_contrib.DOMAIN and op_def is None:
            folded += _add_contrib(pn, values, nodes, used_names, node_opset, k)
            continue
        if op_def is not None and getattr(op_def, "internal", False) and op_name == pn.op_type:
            op_def = None           # the compiler's own ops (Function, Copy) are not ONNX's
        if op_def is not None and hasattr(op_def, "expand_onnx"):
            # ops defined as a composition of other ops (recurrent cells, TopK's two stages)
            sub = op_def.expand_onnx(pn, values, node_opset, _Named(pn))
            queue.extendleft(reversed([(b, node_opset) for b in sub]))
            expanded += 1
            continue
        if pn.op_type != "Constant" and op_def is None:
            body, body_opset = _expand_function(pn, node_opset, values, k)
            queue.extendleft(reversed([(b, body_opset) for b in body]))
            expanded += 1
            continue
        nname = pn.name or f"{pn.op_type}_{k}"
        while nname in used_names:
            nname += "_"
        used_names.add(nname)
        attrs = _attrs(pn)
        if pn.op_type == "Constant":
            arr = _constant_node_value(pn, attrs)
            values[pn.output[0]] = Value(pn.output[0], TensorType(arr.shape, str(arr.dtype)), compact(arr))
            continue
        ins = [values[i] if i else None for i in pn.input]
        while ins and ins[-1] is None:
            ins.pop()
        outs, was_folded = add_node(nodes, op_name, nname, attrs, ins, node_opset, list(pn.output))
        folded += was_folded
        for o in outs:
            values[o.name] = o

    outputs = []
    for vo in g.output:
        if vo.name not in values:
            raise AotError(f"graph output '{vo.name}' is not produced by any node")
        outputs.append(values[vo.name])
    check_declared_outputs(m, values)
    graph = Graph(name, inputs, outputs, nodes, opset)
    if log:
        log(f"import: opset {opset}, {len(g.node)} ONNX nodes -> {len(nodes)} graph nodes "
            f"({folded} folded to constants while inferring shapes, {expanded} function ops inlined)")
    return graph


def _add_contrib(pn, values, nodes, used_names, opset, k):
    """One com.microsoft node through onnx_contrib's converter: the nodes it makes are named
    after it. Returns how many were folded to constants."""
    base = pn.name or f"{pn.op_type}_{k}"
    folded = 0

    def add(op, inputs, attrs, out_names=None):
        nonlocal folded
        nname = base
        while nname in used_names:
            nname += "_"
        used_names.add(nname)
        outs, was_folded = add_node(nodes, op, nname, attrs, inputs, opset, out_names or [f"{nname}_out"])
        folded += was_folded
        return outs

    ins = [values[i] if i else None for i in pn.input]
    while ins and ins[-1] is None:
        ins.pop()
    out = onnx_contrib.convert(pn, ins, _attrs(pn), add)
    values[pn.output[0]] = out
    return folded


def check_supported(graph):
    """Every remaining node must be compilable; list all that are not at once."""
    problems = []
    for n in graph.nodes:
        try:
            get_op(n.op).check(n)
        except OpError as e:
            problems.append(str(e))
    if problems:
        raise UnsupportedError(problems)
