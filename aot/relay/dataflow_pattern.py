"""tvm.relay.dataflow_pattern's names: the pattern language of the graph IR (aot/ir/pattern.py),
which partitioning and the plug-in API use below relay."""
from ..ir.pattern import (AltPattern, AttrPattern, CallPattern, ConstantPattern, DFPattern, Match,  # noqa: F401
                          OpPattern, PatternError, TupleGetItemPattern, TypePattern, VarPattern, WildcardPattern,
                          find, is_constant, is_op, is_tuple_get_item, is_var, match, match_value, wildcard)
