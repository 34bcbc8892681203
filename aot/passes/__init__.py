"""Graph passes: each is a function Graph -> (Graph, count) that never changes its input."""
from __future__ import annotations

import functools


def graph_pass(fn):
    """Run fn on its own copy of the graph, so the caller's graph is never changed (passes
    rewire inputs, fold values to constants and move producers on the copy)."""
    @functools.wraps(fn)
    def run(graph, *args, **kw):
        return fn(graph.copy(), *args, **kw)
    return run
