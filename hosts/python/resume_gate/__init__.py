"""resume-gate for Python: the gate component in PyPI ``wasmtime``, and an adapter for the
``mcp`` SDK's streamable HTTP server (``resume_gate.sdk``)."""

from .gate import GATE_ERRORS, RETRY_AFTER_SECONDS, Event, Fresh, Gate, GateError, Opened, Polled, Resume, StreamStatus

__all__ = [
    "GATE_ERRORS",
    "RETRY_AFTER_SECONDS",
    "Event",
    "Fresh",
    "Gate",
    "GateError",
    "Opened",
    "Polled",
    "Resume",
    "StreamStatus",
]
