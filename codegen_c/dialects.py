"""Renderer dialects by name: a target family (aot/targets/) names its dialect and GPU host
template, since the core may not import the printers; a family defined outside the package
gives its renderer class and template text itself."""
from __future__ import annotations

from .c_renderer import CRenderer
from .cuda_renderer import CUDARenderer
from .emit import ENV
from .opencl_renderer import OpenCLRenderer

DIALECTS = {"c": CRenderer, "cuda": CUDARenderer, "opencl": OpenCLRenderer}


def renderer_for(family):
    """A renderer of the family's dialect."""
    return (family.renderer or DIALECTS[family.dialect])()


def host_template(family):
    """The template of a GPU family's host C; one given as text may extend _gpu_lib0.c.j2."""
    if family.host_template_text is not None:
        return ENV.from_string(family.host_template_text)
    return ENV.get_template(family.host_template)


def build_fragment(family, tool):
    """What `tool`'s build file ("mk": mlf.mk, "cmake": mlf.cmake) adds for the family's device
    code, as a template to include, or None where the family adds nothing."""
    text = getattr(family, "build_fragments_text", {}).get(tool)
    if text is not None:
        return ENV.from_string(text)
    name = getattr(family, "build_fragments", {}).get(tool)
    return ENV.get_template(name) if name else None
