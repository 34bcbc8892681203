"""relay.analysis: free_vars, post_order_visit."""
from .expr import Call, Function, Tuple, TupleGetItem, TupleWrapper, free_vars  # noqa: F401


def post_order_visit(expr, fvisit):
    """fvisit(e) on every expression under expr, each once, its operands before it (a call's
    callee, then its arguments; a function's parameters, then its body), as TVM's visitor."""
    seen = set()

    def visit(e):
        if isinstance(e, TupleWrapper):
            e = e.astuple()
        key = e if isinstance(e, str) else id(e)
        if key in seen:
            return
        seen.add(key)
        if isinstance(e, Call):
            visit(e.op)
            for a in e.args:
                visit(a)
        elif isinstance(e, Tuple):
            for f in e.fields:
                visit(f)
        elif isinstance(e, TupleGetItem):
            visit(e.tuple_value)
        elif isinstance(e, Function):
            for p in e.params:
                visit(p)
            visit(e.body)
        fvisit(e)
    visit(expr)
