"""relay.analysis."""
from .expr import free_vars  # noqa: F401
