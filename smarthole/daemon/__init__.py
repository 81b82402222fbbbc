"""The daemon: wiring, workers, housekeeping and signals."""

from .runner import Daemon
from .runtime import Runtime

__all__ = ["Daemon", "Runtime"]
