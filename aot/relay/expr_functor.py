"""relay.ExprVisitor / ExprMutator: walk an expression (each subexpression once), with a method per
kind (visit_call, visit_var, visit_constant, visit_tuple, visit_tuple_getitem, visit_function,
visit_global_var, visit_op); a mutator's methods return the replacement, and a node whose parts
did not change is kept as it is."""
from __future__ import annotations

from .expr import Call, Constant, Function, GlobalVar, Tuple, TupleGetItem, TupleWrapper, Var


class ExprFunctor:
    def __init__(self):
        self.memo_map = {}

    def visit(self, expr):
        if isinstance(expr, TupleWrapper):
            expr = expr.astuple()
        key = ("op", expr) if isinstance(expr, str) else id(expr)
        if key in self.memo_map:
            return self.memo_map[key][1]
        if isinstance(expr, Function):
            out = self.visit_function(expr)
        elif isinstance(expr, Call):
            out = self.visit_call(expr)
        elif isinstance(expr, Var):
            out = self.visit_var(expr)
        elif isinstance(expr, Constant):
            out = self.visit_constant(expr)
        elif isinstance(expr, Tuple):
            out = self.visit_tuple(expr)
        elif isinstance(expr, TupleGetItem):
            out = self.visit_tuple_getitem(expr)
        elif isinstance(expr, GlobalVar):
            out = self.visit_global_var(expr)
        elif isinstance(expr, str):
            out = self.visit_op(expr)
        else:
            out = self.visit_other(expr)
        self.memo_map[key] = (expr, out)      # the key's object kept alive with its result
        return out

    def visit_other(self, expr):
        return expr


class ExprVisitor(ExprFunctor):
    """Visits every subexpression; override a visit_* and call the base one to go on below."""

    def visit_function(self, fn):
        for p in fn.params:
            self.visit(p)
        self.visit(fn.body)

    def visit_call(self, call):
        self.visit(call.op)
        for a in call.args:
            self.visit(a)

    def visit_tuple(self, tup):
        for f in tup.fields:
            self.visit(f)

    def visit_tuple_getitem(self, t):
        self.visit(t.tuple_value)

    def visit_var(self, var):
        pass

    def visit_constant(self, const):
        pass

    def visit_global_var(self, gv):
        pass

    def visit_op(self, op):
        pass


class ExprMutator(ExprFunctor):
    """Rebuilds the expression from what each visit_* returns."""

    def visit_function(self, fn):
        params = [self.visit(p) for p in fn.params]
        body = self.visit(fn.body)
        if all(a is b for a, b in zip(params, fn.params)) and body is fn.body:
            return fn
        return Function(params, body, fn.ret_type, attrs=fn.attrs)

    def visit_call(self, call):
        op = self.visit(call.op)
        args = [self.visit(a) for a in call.args]
        if op is call.op and all(a is b for a, b in zip(args, call.args)):
            return call
        return Call(op, args, dict(call.attrs))

    def visit_tuple(self, tup):
        fields = [self.visit(f) for f in tup.fields]
        return tup if all(a is b for a, b in zip(fields, tup.fields)) else Tuple(fields)

    def visit_tuple_getitem(self, t):
        v = self.visit(t.tuple_value)
        return t if v is t.tuple_value else TupleGetItem(v, t.index)

    def visit_var(self, var):
        return var

    def visit_constant(self, const):
        return const

    def visit_global_var(self, gv):
        return gv

    def visit_op(self, op):
        return op


class CallRewriter(ExprMutator):
    """The mutator most passes want: each call of a named op, its operands rewritten first, goes to
    on_call(call, new_args), which returns its replacement or None to keep the call (rebuilt
    over the new operands)."""

    def __init__(self, on_call):
        super().__init__()
        self.on_call = on_call

    def visit_call(self, call):
        args = [self.visit(a) for a in call.args]
        new = self.on_call(call, args) if isinstance(call.op, str) else None
        if new is not None:
            return new
        if all(a is b for a, b in zip(args, call.args)):
            return call
        return Call(call.op, args, dict(call.attrs))


def rewrite_calls(func, on_call):
    """func with CallRewriter(on_call) applied to its body (its parameters kept)."""
    return Function(func.params, CallRewriter(on_call).visit(func.body), func.ret_type, attrs=func.attrs)
