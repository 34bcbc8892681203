"""UMA's api package with TVM's names: utils (PassPhase, add_llvm_to_block, uma_available)."""
from . import utils  # noqa: F401
from .utils import PassPhase  # noqa: F401
