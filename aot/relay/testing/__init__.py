"""relay.testing: create_workload (init.py: a network's parameters initialised as TVM's testing
helper does), layers that make their own parameters, and ResNet (resnet.py), for networks
written by hand with relay."""
from __future__ import annotations

from . import init, layers, mobilenet, resnet, synthetic  # noqa: F401
from .init import Constant, Initializer, Xavier, create_workload  # noqa: F401
