"""topi.cuda.schedule_pool: each output element's window in its own thread, the padding inlined."""
from __future__ import annotations

from ..schedule_util import first_plan, outputs_of
from .dense import per_output_element


def schedule_pool(outs, layout="NCHW"):
    outs = outputs_of(outs)
    return first_plan("topi.cuda.schedule_pool", outs, [per_output_element(outs)])
