"""relay.transform: the passes a user applies to a relay module by hand, each on a copy (a pass
never changes its input): InferType gives every parameter and expression its type (checked_type)
as the build infers them; FoldConstant evaluates calls of constants through the graph builder, as
the build does; EliminateCommonSubexpr merges equal calls; function_pass makes a pass of a
function. The build runs its own passes inside relay.build whatever is applied here."""
from __future__ import annotations

import warnings

import numpy as np

from .. import transform as tvm_transform
from ..errors import AotError
from .expr import (Call, Constant, FuncType, Function, IRModule, Tuple, TupleGetItem, TupleType,  # noqa: F401
                   TupleWrapper, Var, clone)
from .to_graph import to_graph


def _as_type(t):
    from .expr import TensorType
    if isinstance(t, list):
        return TupleType([_as_type(x) for x in t])
    return TensorType(t.shape, t.dtype)


class Pass(tvm_transform.Pass):
    """A relay module pass: pass(mod) -> a new module."""

    name = "Pass"

    required = ()

    def __init__(self, opt_level=0):
        super().__init__(tvm_transform.PassInfo(opt_level, self.name, list(self.required)))

    def __call__(self, mod):
        # any module holding its functions by name (TVM has one IRModule class for relay and TIR)
        if not isinstance(getattr(mod, "functions", None), dict):
            raise AotError(f"{self.name} takes an IRModule, not {type(mod).__name__} (IRModule.from_expr(f))")
        return tvm_transform.run_instrumented(self.info, mod, lambda: self.transform_module(mod))

    def transform_module(self, mod, ctx=None):
        raise NotImplementedError


class _InferType(Pass):
    name = "InferType"

    def transform_module(self, mod, ctx=None):
        out = IRModule()
        for name, func in mod.functions.items():
            if not isinstance(func, Function):       # an imported model's main, a TIR function: as they are
                out[name] = func
                continue
            memo = {}
            new = clone(func, memo)
            types = {}
            whole = IRModule(dict(mod.functions))
            whole["main"] = func                 # each function typed as if it were main (calls resolve in mod)
            to_graph(whole, expr_types=types)
            for old_id, e in memo.items():
                if old_id in types:
                    e.checked_type = _as_type(types[old_id])
            new.ret_type = getattr(new.body, "checked_type", None)
            args = [getattr(p, "checked_type", None) or p.type_annotation for p in new.params]
            new.checked_type = FuncType(args, new.ret_type) if new.ret_type is not None else None
            out[name] = new
        return out


def InferType():     # noqa: N802  (TVM's name)
    return _InferType(0)


def _rebuild(mod, fn):
    """A new module with fn(function) for each relay function (others as they are)."""
    out = IRModule()
    for name, func in mod.functions.items():
        out[name] = fn(func) if isinstance(func, Function) else func
    if hasattr(mod, "_gvars"):
        out._gvars.update(mod._gvars)
    return out


class _FoldConstant(Pass):
    """Every call whose operands are all constants becomes the constant it computes (the graph
    builder evaluates it, as the build would)."""
    name = "FoldConstant"

    def transform_module(self, mod, ctx=None):
        return _rebuild(mod, fold_constant)


def fold_constant(func):
    memo = {}

    def fold(e):
        if isinstance(e, TupleWrapper):
            e = e.astuple()
        if id(e) in memo:
            return memo[id(e)]
        if isinstance(e, Call) and isinstance(e.op, str):
            args = [fold(a) for a in e.args]
            new = Call(e.op, args, dict(e.attrs))
            if all(isinstance(a, Constant) for a in args):
                try:
                    g, _ = to_graph(Function([], new))
                except AotError:
                    g = None
                if g is not None and len(g.outputs) == 1 and g.outputs[0].is_const:
                    new = Constant(np.asarray(g.outputs[0].const))
        elif isinstance(e, Tuple):
            new = Tuple([fold(f) for f in e.fields])
        elif isinstance(e, TupleGetItem):
            t = fold(e.tuple_value)
            new = t.fields[e.index] if isinstance(t, Tuple) else TupleGetItem(t, e.index)
        elif isinstance(e, Call):
            new = Call(e.op, [fold(a) for a in e.args], dict(e.attrs))
        else:
            new = e
        memo[id(e)] = new
        return new
    return Function(func.params, fold(func.body), func.ret_type, attrs=func.attrs)


def FoldConstant(fold_qnn=False):     # noqa: N802
    return _FoldConstant(2)


class _EliminateCommonSubexpr(Pass):
    """Calls of the same op on the same operands with the same attributes become one."""
    name = "EliminateCommonSubexpr"

    def transform_module(self, mod, ctx=None):
        from .expr_functor import CallRewriter

        def cse(func):
            seen = {}

            def same_call(e, args):
                key = (e.op, tuple(id(a) for a in args), repr(sorted(e.attrs.items())))
                return seen.setdefault(key, Call(e.op, args, dict(e.attrs)))
            return Function(func.params, CallRewriter(same_call).visit(func.body), func.ret_type, attrs=func.attrs)
        return _rebuild(mod, cse)


def EliminateCommonSubexpr(fskip=None):     # noqa: N802
    if fskip is not None:
        raise AotError("EliminateCommonSubexpr: fskip is not supported")
    return _EliminateCommonSubexpr(3)


class _DeadCodeElimination(Pass):
    """The identity: relay here has no let-bindings, so nothing in a function is ever dead."""
    name = "DeadCodeElimination"

    def transform_module(self, mod, ctx=None):
        return _rebuild(mod, lambda f: f)


def DeadCodeElimination(inline_once=False, ignore_impurity=False):     # noqa: N802
    return _DeadCodeElimination(1)


def function_pass(pass_func=None, opt_level=None, name=None, required=None, traceable=False):
    """@function_pass(opt_level=1) over fn(func, mod, ctx) -> func, applied to each relay function
    of the module; or over a class whose transform_function(func, mod, ctx) does it."""
    if opt_level is None:
        raise AotError("function_pass: opt_level is needed")

    def create(arg):
        pname = name or arg.__name__

        def module_fn(fn):
            def run(mod, ctx):
                return _rebuild(mod, lambda f: fn(f, mod, ctx))
            return tvm_transform.ModulePass(run, tvm_transform.PassInfo(opt_level, pname, required, traceable))
        if isinstance(arg, type):
            def make(*args, **kwargs):
                inst = arg(*args, **kwargs)
                return module_fn(inst.transform_function)
            return make
        return module_fn(arg)
    return create(pass_func) if pass_func is not None else create


# -- layouts and scales --------------------------------------------------------------------------------
class _FunctionRewrite(Pass):
    """A pass applying rewrite(function) to each relay function, on the typed copy (the rewrites
    read operand types)."""

    def transform_module(self, mod, ctx=None):
        imported = [n for n, f in mod.functions.items() if type(f).__name__ == "GraphFunction"]
        if imported:
            # the model's file is what relay.build compiles, in the layouts the target's pipeline picks
            warnings.warn(f"{self.name}: {', '.join(str(n) for n in imported)} is a model a frontend imported, "
                          "which this pass leaves as it is (it rewrites relay functions built with relay's API)",
                          UserWarning, stacklevel=3)
        return _rebuild(_InferType(0).transform_module(mod), self.rewrite)


class _ConvertLayout(_FunctionRewrite):
    name = "ConvertLayout"
    required = ("InferType", "CanonicalizeOps")

    def __init__(self, desired_layouts):
        from .convert_layout import desired_layouts_of
        super().__init__(3)
        desired_layouts_of(desired_layouts)           # refused now rather than when the pass runs
        self.desired_layouts = dict(desired_layouts)

    def rewrite(self, func):
        from .convert_layout import convert_layout
        return convert_layout(func, self.desired_layouts)


def ConvertLayout(desired_layouts):     # noqa: N802
    """Convolutions in the layouts desired_layouts gives ({"nn.conv2d": ["NHWC", "HWIO"]}, a
    kernel layout "default" being the data layout's usual one), with layout_transform ops where
    values change layout (aot/relay/convert_layout.py)."""
    return _ConvertLayout(desired_layouts)


class _BackwardFoldScaleAxis(_FunctionRewrite):
    name = "BackwardFoldScaleAxis"
    required = ("InferType",)

    def rewrite(self, func):
        from .fold_scale_axis import backward_fold
        return backward_fold(func)


class _ForwardFoldScaleAxis(_FunctionRewrite):
    name = "ForwardFoldScaleAxis"
    required = ("InferType",)

    def rewrite(self, func):
        from .fold_scale_axis import forward_fold
        return forward_fold(func)


def BackwardFoldScaleAxis():     # noqa: N802
    return _BackwardFoldScaleAxis(3)


def ForwardFoldScaleAxis():     # noqa: N802
    return _ForwardFoldScaleAxis(3)


def FoldScaleAxis():     # noqa: N802
    """Per-channel constant multiplications around convolutions moved into their weights
    (aot/relay/fold_scale_axis.py): as TVM's, the sequence BackwardFoldScaleAxis,
    ForwardFoldScaleAxis (both opt_level 3, so they run only in a context of opt_level 3), then
    FoldConstant."""
    return tvm_transform.Sequential([BackwardFoldScaleAxis(), ForwardFoldScaleAxis(), FoldConstant()],
                                    opt_level=3, name="FoldScaleAxis")


class _CanonicalizeOps(_FunctionRewrite):
    """nn.bias_add as add, the bias expanded to broadcast along its axis, as TVM's."""
    name = "CanonicalizeOps"

    def rewrite(self, func):
        from .expr_functor import rewrite_calls
        from .op import expand_dims

        def on_call(e, args):
            if e.op != "nn.bias_add":
                return None
            t = getattr(e.args[0], "checked_type", None)
            if t is None or not hasattr(t, "shape"):
                raise AotError("CanonicalizeOps: nn.bias_add's data has no known type")
            rank = len(t.shape)
            axis = e.attrs.get("axis", 1) % rank
            bias = args[1] if axis == rank - 1 else expand_dims(args[1], 1, rank - 1 - axis)
            return Call("add", [args[0], bias])
        return rewrite_calls(func, on_call)


def CanonicalizeOps():     # noqa: N802
    return _CanonicalizeOps(3)


class _SimplifyInference(_FunctionRewrite):
    """nn.batch_norm's output [0] as x * scale + shift along its axis (scale = gamma / sqrt(var +
    eps), shift = beta - mean * scale), and nn.dropout as its input, as TVM's."""
    name = "SimplifyInference"

    def rewrite(self, func):
        from .expr_functor import ExprMutator
        from .op import add, divide, expand_dims, multiply, sqrt, subtract

        def norm(e, args):
            x, gamma, beta, mean, var = args
            rank = len(e.args[0].checked_type.shape)
            axis = e.attrs["axis"] % rank
            eps = Constant(np.asarray(e.attrs["epsilon"], np.float32))
            scale = divide(gamma, sqrt(add(var, eps))) if e.attrs.get("scale", True) else \
                divide(Constant(np.float32(1)), sqrt(add(var, eps)))
            shift = subtract(beta, multiply(mean, scale)) if e.attrs.get("center", True) else \
                negative_of(multiply(mean, scale))
            if axis != rank - 1:
                scale, shift = expand_dims(scale, 1, rank - 1 - axis), expand_dims(shift, 1, rank - 1 - axis)
            return add(multiply(x, scale), shift)

        def negative_of(v):
            return Call("negative", [v])

        class Simplify(ExprMutator):
            def visit_tuple_getitem(self, t):
                bn = t.tuple_value
                if isinstance(bn, Call) and bn.op == "nn.batch_norm" and t.index == 0:
                    return norm(bn, [self.visit(a) for a in bn.args])
                return super().visit_tuple_getitem(t)

            def visit_call(self, call):
                if call.op == "nn.dropout":
                    return self.visit(call.args[0])
                return super().visit_call(call)
        return Function(func.params, Simplify().visit(func.body), func.ret_type, attrs=func.attrs)


def SimplifyInference():     # noqa: N802
    return _SimplifyInference(0)


tvm_transform.register_pass("InferType", InferType)
tvm_transform.register_pass("CanonicalizeOps", CanonicalizeOps)
tvm_transform.register_pass("FoldConstant", FoldConstant)


# -- FuseOps ------------------------------------------------------------------------------------------
# TVM's operator pattern kinds: what a fused group may hold (an op joins its producer's group when
# the group's strongest kind can take it, and the group keeps one output)
ELEMWISE, BROADCAST, INJECTIVE, COMM_REDUCE, OUT_ELEMWISE_FUSABLE, OPAQUE = 0, 1, 2, 3, 4, 8
_UNARY = {"exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "negative", "abs", "erf", "floor", "ceil", "round", "sin",
          "cos", "nn.relu", "nn.leaky_relu", "clip", "cast", "logical_not", "zeros_like", "ones_like", "nn.dropout"}
_BINARY = {"add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "equal", "not_equal", "less",
           "greater", "less_equal", "greater_equal", "logical_and", "logical_or", "logical_xor", "where",
           "nn.bias_add", "nn.prelu"}
_INJECTIVE = {"reshape", "transpose", "squeeze", "expand_dims", "concatenate", "stack", "split", "strided_slice",
              "take", "tile", "nn.pad", "nn.batch_flatten", "nn.depth_to_space", "nn.space_to_depth", "full",
              "full_like", "nn.upsampling"}
_REDUCE = {"sum", "mean", "max", "min", "prod", "argmax", "argmin", "nn.global_avg_pool2d", "nn.global_max_pool2d"}
_ANCHOR = {"nn.conv1d", "nn.conv2d", "nn.conv2d_transpose", "nn.dense", "nn.batch_matmul", "nn.matmul",
           "nn.max_pool2d", "nn.avg_pool2d", "nn.adaptive_avg_pool2d", "nn.adaptive_max_pool2d"}


def op_pattern(name):
    """The pattern kind of a relay op, as TVM registers it (OPAQUE for those it does not fuse)."""
    if name in _UNARY:
        return ELEMWISE
    if name in _BINARY:
        return BROADCAST
    if name in _INJECTIVE:
        return INJECTIVE
    if name in _REDUCE:
        return COMM_REDUCE
    if name in _ANCHOR:
        return OUT_ELEMWISE_FUSABLE
    return OPAQUE


def _can_join(group_kind, kind):
    if kind <= BROADCAST:
        return group_kind <= OUT_ELEMWISE_FUSABLE
    if kind == INJECTIVE:
        return group_kind <= INJECTIVE
    if kind == COMM_REDUCE:
        return group_kind <= INJECTIVE
    return False


class _FuseOps(Pass):
    name = "FuseOps"

    def __init__(self, level):
        super().__init__(0)
        self.level = level

    def transform_module(self, mod, ctx=None):
        level = self.level
        if level < 0:
            ctx = tvm_transform.PassContext.current()
            level = 0 if ctx.opt_level == 0 else 2
        typed = _InferType(0).transform_module(mod)
        return _rebuild(typed, lambda f: fuse_function(f, level))


def FuseOps(fuse_opt_level=-1):     # noqa: N802
    """Groups of operators as primitive functions (attribute Primitive=1) called in their place,
    as TVM's FuseOps makes them: an anchor (conv, dense, pool) with the elementwise ops after it,
    chains of elementwise and injective ops, a reduction with what feeds it; fuse_opt_level 0 puts
    each operator in a function of its own. (relay.build fuses on the graph IR in any case.)"""
    return _FuseOps(int(fuse_opt_level))


def fuse_function(func, level):
    from .analysis import consumers as readers_of
    order, consumers = readers_of(func.body)
    calls = [e for e in order if isinstance(e, Call) and isinstance(e.op, str)]
    group = {id(c): [c] for c in calls}          # id(call) -> its group (a shared list)
    kind = {id(c): op_pattern(c.op) for c in calls}

    def gkind(g):
        return max(kind[id(c)] for c in g)

    if level > 0:
        for c in calls:
            k = kind[id(c)]
            for a in c.args:
                if not (isinstance(a, Call) and id(a) in group) or group[id(a)] is group[id(c)]:
                    continue
                ga, gc = group[id(a)], group[id(c)]
                if k == COMM_REDUCE and gkind(gc) == COMM_REDUCE and len(gc) > 1:
                    continue
                if not _can_join(gkind(ga), k if len(gc) == 1 else gkind(gc)):
                    continue
                merged = ga + [x for x in gc if all(x is not y for y in ga)]
                for x in merged:
                    group[id(x)] = merged
    # a group keeps one output: a member read outside it (other than the last) splits it up
    ids_in = {}
    for c in calls:
        ids_in.setdefault(id(group[id(c)]), group[id(c)])
    final = []
    for g in ids_in.values():
        members = {id(x) for x in g}
        outs = [x for x in g if x is func.body or any(id(u) not in members for u in consumers.get(id(x), []))]
        if len(outs) == 1:
            final.append(g)
        else:
            final.extend([x] for x in g)
    gid = {id(x): k for k, g in enumerate(final) for x in g}
    order = {id(c): n for n, c in enumerate(calls)}
    made = {}

    def rebuild(e):
        if isinstance(e, TupleWrapper):
            e = e.astuple()
        if id(e) in made:
            return made[id(e)]
        if isinstance(e, Call) and id(e) in gid:
            g = sorted(final[gid[id(e)]], key=lambda x: order[id(x)])
            out = _primitive_call(g, rebuild)
            for x in g:
                made[id(x)] = out if x is g[-1] else None
        elif isinstance(e, Tuple):
            out = Tuple([rebuild(f) for f in e.fields])
        elif isinstance(e, TupleGetItem):
            out = TupleGetItem(rebuild(e.tuple_value), e.index)
        else:
            out = e
        made[id(e)] = out
        return out
    return Function(func.params, rebuild(func.body), func.ret_type, attrs=func.attrs)


def _primitive_call(group, outer):
    """fn (%p0, ..., Primitive=1) { the group } applied to the values it reads from outside."""
    members = {id(x) for x in group}
    params, args, subst = [], [], {}

    def inner(e):
        if isinstance(e, TupleWrapper):
            e = e.astuple()
        if id(e) in subst:
            return subst[id(e)]
        if isinstance(e, Call) and id(e) in members:
            out = Call(e.op, [inner(a) for a in e.args], dict(e.attrs))
            out.checked_type = getattr(e, "checked_type", None)
        elif isinstance(e, Constant) and e.data.ndim == 0:
            out = e                               # scalars stay in the function, as in TVM
        else:
            t = getattr(e, "checked_type", None)
            out = Var(f"p{len(params)}", t if t is not None and not isinstance(t, TupleType) else None)
            params.append(out)
            args.append(outer(e))
        subst[id(e)] = out
        return out
    body = inner(group[-1])
    fn = Function(params, body, getattr(group[-1], "checked_type", None), attrs={"Primitive": 1})
    call = Call(fn, args)
    call.checked_type = getattr(group[-1], "checked_type", None)
    return call
