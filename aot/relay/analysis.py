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


def consumers(body):
    """(the nodes under body in post order, each once; id(node) -> the nodes that read it as an
    operand: a call's arguments, a tuple's fields, a projection's tuple), for passes that need to
    know who uses a value (fusion, scale folding)."""
    order, readers, seen = [], {}, set()

    def walk(e):
        if isinstance(e, TupleWrapper):
            e = e.astuple()
        if id(e) in seen:
            return
        seen.add(id(e))
        kids = e.args if isinstance(e, Call) else e.fields if isinstance(e, Tuple) else \
            [e.tuple_value] if isinstance(e, TupleGetItem) else []
        for k in kids:
            k = k.astuple() if isinstance(k, TupleWrapper) else k
            walk(k)
            readers.setdefault(id(k), []).append(e)
        order.append(e)
    walk(body)
    return order, readers
