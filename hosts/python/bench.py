"""Per-call cost of the Python package, next to the SDK examples' store, in one process:
recording a 128-byte notification (``store_event`` on the reference store, on the gate's
``GateEventStore``, and the bare ``Gate.emit``) and a resume that replays the last 10 of 100
events (the reference store's ``replay_events_after`` and the bare ``Gate.reconnect``; the
adapter's own replay follows a live stream until it ends, so it has no per-call figure).

    hosts/python/.venv/bin/python hosts/python/bench.py [--quick]   # prints a markdown table
"""

import asyncio
import statistics
import sys
import time

import mcp_types as types
from mcp.server.streamable_http import StreamableHTTPServerTransport

from resume_gate.reference_store import InMemoryEventStore
from resume_gate import Gate, Resume
from resume_gate.sdk import GateEventStore, _current, _Request, _Session

QUICK = "--quick" in sys.argv
BATCH = 200 if QUICK else 5_000
SAMPLES = 3 if QUICK else 11


async def measure(op) -> float:
    """Median ns per call of ``op`` (awaited), over SAMPLES batches after a warm-up batch."""
    for _ in range(BATCH):
        await op()
    per_call = []
    for _ in range(SAMPLES):
        t0 = time.perf_counter_ns()
        for _ in range(BATCH):
            await op()
        per_call.append((time.perf_counter_ns() - t0) / BATCH)
    return statistics.median(per_call)


async def main() -> None:
    message = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"level": "info", "data": ""})
    pad = 128 - len(message.model_dump_json(by_alias=True, exclude_unset=True))
    message = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"level": "info", "data": "x" * pad})
    data = message.model_dump_json(by_alias=True, exclude_unset=True)
    assert len(data) == 128, len(data)
    gate = Gate()
    rows = []

    reference = InMemoryEventStore()
    rows.append(("store_event, 128 B", "SDK examples' InMemoryEventStore", await measure(lambda: reference.store_event("_GET_stream", message))))

    store = GateEventStore(gate)
    gate.open_session("bench")
    store._sessions["bench"] = _Session(StreamableHTTPServerTransport(mcp_session_id="bench"))
    _current.set(_Request(session="bench"))
    rows.append(("store_event, 128 B", "resume-gate GateEventStore", await measure(lambda: store.store_event("_GET_stream", message))))
    standalone = gate.open_stream("bench").stream

    async def emit() -> None:
        gate.emit("bench", standalone, data)

    rows.append(("store_event, 128 B", "resume-gate Gate.emit (package API)", await measure(emit)))

    replay = InMemoryEventStore()
    ids = [await replay.store_event("_GET_stream", message) for _ in range(100)]
    sent = []

    async def collect(event) -> None:
        sent.append(event)

    async def sdk_resume() -> None:
        sent.clear()
        await replay.replay_events_after(ids[89], collect)
        assert len(sent) == 10

    rows.append(("resume, 10 of 100 replayed", "SDK examples' InMemoryEventStore", await measure(sdk_resume)))
    gate.open_session("bench-resume")
    stream = gate.open_stream("bench-resume").stream
    gate_ids = [gate.emit("bench-resume", stream, data).id for _ in range(100)]

    async def gate_resume() -> None:
        d = gate.reconnect("bench-resume", gate_ids[89])
        assert isinstance(d, Resume) and len(d.events) == 10

    rows.append(("resume, 10 of 100 replayed", "resume-gate Gate.reconnect (package API)", await measure(gate_resume)))

    print(f"Python {sys.version.split()[0]}, {'quick run' if QUICK else f'{SAMPLES} samples of {BATCH} calls'}, median per call\n")
    print("| operation | side | per call |\n|---|---|---:|")
    for op, side, ns in rows:
        print(f"| {op} | {side} | {ns / 1000:.2f} µs |")


asyncio.run(main())
