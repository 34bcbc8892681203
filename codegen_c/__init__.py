"""Renderers from loop IR to C (and, later, CUDA), plus the templates of the emitted files."""
from .c_renderer import CRenderer  # noqa: F401
