"""tvm.tir.stmt_functor: walking and rewriting a PrimFunc's body from a user's pass (TVM's
post_order_visit, pre_order_visit, ir_transform, substitute), over the loop IR's statements
(aot/tir/stmt.py) and the expressions they hold.

The type keys ir_transform takes are TVM's: "tir.For", "tir.SeqStmt", "tir.Block" (also
"tir.BlockRealize": a block here is both), "tir.BufferStore", "tir.Allocate", "tir.IfThenElse",
"tir.Evaluate", "tir.AttrStmt" (a barrier)."""
from __future__ import annotations

from ..errors import AotError
from .expr import Expr, children, substitute as _subst_expr
from .stmt import (Allocate, Barrier, Block, Evaluate, For, IfThenElse, Seq, Stmt, Store, map_exprs, own_exprs,
                   stmt_children)

TYPE_KEYS = {"tir.For": For, "tir.SeqStmt": Seq, "tir.Block": Block, "tir.BlockRealize": Block,
             "tir.BufferStore": Store, "tir.Allocate": Allocate, "tir.IfThenElse": IfThenElse,
             "tir.Evaluate": Evaluate, "tir.AttrStmt": Barrier}


def _expr_post(e, fvisit):
    for k in children(e):
        _expr_post(k, fvisit)
    fvisit(e)


def post_order_visit(stmt, fvisit):
    """fvisit(node) on every statement and expression under stmt, children first."""
    if isinstance(stmt, Expr):
        _expr_post(stmt, fvisit)
        return
    for e in own_exprs(stmt):
        _expr_post(e, fvisit)
    for c in stmt_children(stmt):
        post_order_visit(c, fvisit)
    fvisit(stmt)


def pre_order_visit(stmt, fvisit):
    """fvisit(node) on every statement and expression, parents first; a False return skips the
    node's children."""
    if fvisit(stmt) is False:
        return
    if isinstance(stmt, Expr):
        for k in children(stmt):
            pre_order_visit(k, fvisit)
        return
    for e in own_exprs(stmt):
        pre_order_visit(e, fvisit)
    for c in stmt_children(stmt):
        pre_order_visit(c, fvisit)


def _with_children(s, kids):
    """s with new child statements (s itself when they are the same objects)."""
    old = stmt_children(s)
    if len(old) == len(kids) and all(a is b for a, b in zip(old, kids)):
        return s
    if isinstance(s, Seq):
        return Seq(kids)
    if isinstance(s, For):
        return s.with_body(kids[0])
    if isinstance(s, Allocate):
        return Allocate(s.buffer, kids[0])
    if isinstance(s, IfThenElse):
        return IfThenElse(s.cond, kids[0], kids[1] if len(kids) > 1 else None)
    if isinstance(s, Block):
        if s.init is not None:
            return s.replace(body=kids[1], init=kids[0])
        return s.replace(body=kids[0])
    raise AotError(f"ir_transform: a {type(s).__name__} has no child statements to replace")


def ir_transform(stmt, preorder, postorder, only_enable=None):
    """TVM's ir_transform: for each statement of an enabled type, preorder(node) may return its
    replacement (its children are then not visited); else the children are transformed and
    postorder(node with new children) returns the replacement (None keeps it)."""
    kinds = None
    if only_enable is not None:
        unknown = [k for k in only_enable if k not in TYPE_KEYS]
        if unknown:
            raise AotError(f"ir_transform: unknown node types {', '.join(unknown)} "
                           f"(known: {', '.join(sorted(TYPE_KEYS))})")
        kinds = tuple({TYPE_KEYS[k] for k in only_enable})

    def enabled(s):
        return kinds is None or isinstance(s, kinds)

    def go(s):
        if preorder is not None and enabled(s):
            r = preorder(s)
            if r is not None:
                return _as_stmt(r)
        s = _with_children(s, [go(c) for c in stmt_children(s)])
        if postorder is not None and enabled(s):
            r = postorder(s)
            if r is not None:
                return _as_stmt(r)
        return s
    if not isinstance(stmt, Stmt):
        raise AotError(f"ir_transform takes a statement, not {type(stmt).__name__}")
    return go(stmt)


def _as_stmt(r):
    if isinstance(r, Expr):
        return Evaluate(r)
    if not isinstance(r, Stmt):
        raise AotError(f"ir_transform: a callback returned {type(r).__name__}, not a statement")
    return r


def substitute(node, vmap):
    """node (a statement or an expression) with variables replaced: vmap {Var: expression}."""
    mapping = {id(k): v for k, v in dict(vmap).items()}
    if isinstance(node, Expr):
        return _subst_expr(node, mapping)
    return map_exprs(node, lambda e: _subst_expr(e, mapping))
