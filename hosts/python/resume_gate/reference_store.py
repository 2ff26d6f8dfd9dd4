"""The event store the Python SDK's own examples use, re-stated here because the ``mcp``
package ships none: one store for every session (the SDK's session manager hands the same
object to all), events kept per stream id (``str(request id)`` or ``"_GET_stream"``) under
random ids, the newest ``max_events_per_stream`` of each, and ``replay_events_after`` replaying
every later event of the cursor's stream, whatever became of that stream since.

For the side-by-side comparison only (``example --store sdk``): it shows what the gate fixes.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore


@dataclass
class _Stored:
    event_id: str
    stream_id: str
    message: Any


class InMemoryEventStore(EventStore):
    def __init__(self, max_events_per_stream: int = 100):
        self.max_events_per_stream = max_events_per_stream
        self.streams: dict[str, deque[_Stored]] = {}
        self.by_id: dict[str, _Stored] = {}

    async def store_event(self, stream_id: str, message: Any) -> str:  # type: ignore[override]
        event = _Stored(uuid4().hex, stream_id, message)
        events = self.streams.setdefault(stream_id, deque(maxlen=self.max_events_per_stream))
        if len(events) == events.maxlen:
            self.by_id.pop(events[0].event_id, None)
        events.append(event)
        self.by_id[event.event_id] = event
        return event.event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:  # type: ignore[override]
        last = self.by_id.get(last_event_id)
        if last is None:
            return None
        found = False
        for event in self.streams.get(last.stream_id, ()):
            if found and event.message is not None:
                await send_callback(EventMessage(event.message, event.event_id))
            found = found or event.event_id == last_event_id
        return last.stream_id
