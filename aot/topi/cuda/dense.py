"""topi.cuda.dense and its schedule: each output element's dot product in its own thread."""
from __future__ import annotations

from ..nn.dense import dense as _nn_dense
from ..schedule_util import first_plan, outputs_of
from ..utils import auto_inline_injective
from .injective import one_thread_per_element


def dense(data, weight, bias=None, out_dtype=None):
    return _nn_dense(data, weight, bias, out_dtype)


def per_output_element(outs):
    def element_per_thread(s):
        auto_inline_injective(s, outs)
        for out in outs:
            one_thread_per_element(s, out)
    return element_per_thread


def schedule_dense(outs):
    """The GPU schedule of topi.nn.dense (and a bias add or activation after it)."""
    outs = outputs_of(outs)
    return first_plan("topi.cuda.schedule_dense", outs, [per_output_element(outs)])
