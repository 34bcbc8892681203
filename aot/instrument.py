"""tvm.instrument: the same module as tvm.ir.instrument (PassInstrument, pass_instrument,
PassTimingInstrument, ...), which lives with the pass infrastructure (aot/ir/instrument.py)."""
from .ir.instrument import (HOOKS, PassInstrument, PassPrintingInstrument, PassTimingInstrument,  # noqa: F401
                            PrintAfterAll, PrintBeforeAll, pass_instrument)
