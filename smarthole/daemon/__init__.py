"""The daemon: wiring, workers, housekeeping and signals."""

from .runner import Daemon, Runtime

__all__ = ["Daemon", "Runtime"]
