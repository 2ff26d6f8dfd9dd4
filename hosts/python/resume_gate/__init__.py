"""resume-gate for Python: the gate component in PyPI ``wasmtime``, and an adapter for the
``mcp`` SDK's streamable HTTP server (``resume_gate.sdk``)."""

from .gate import Event, Fresh, Gate, GateError, Opened, Polled, Resume

__all__ = ["Event", "Fresh", "Gate", "GateError", "Opened", "Polled", "Resume"]
