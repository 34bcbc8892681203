"""TVM's operator tags: what a topi compute is (tensor.op.tag), so that a generic schedule can tell
an injective stage it may inline from a reduction it must schedule."""

ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"
COMM_REDUCE_IDX = "comm_reduce_idx"


def is_broadcast(tag):
    """An elementwise or broadcast stage (each output element reads one element per input)."""
    return tag in (ELEMWISE, BROADCAST) or tag.startswith(ELEMWISE + ",") or tag.startswith(BROADCAST + ",")


def is_injective(tag):
    """A stage without a reduction whose output elements each read inputs at computed indices
    (pad, reshape, transpose) or elementwise; safe to compute where it is read."""
    return is_broadcast(tag) or tag == INJECTIVE or tag.startswith(INJECTIVE + ",")
