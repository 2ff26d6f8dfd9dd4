"""The gate component in PyPI ``wasmtime`` (its ``wasmtime.component`` API), behind plain Python
values.

``wasmtime.component`` has no bindgen: it calls exports by name with dynamic values. Two of its
rules shape this module: a ``result`` whose ok and error types differ comes back untagged (the
error is just returned, as a ``Variant`` of ``gate-error``), one whose types are alike comes back
tagged ``ok``/``err``; and every call needs ``post_return`` before the next.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import wasmtime
import wasmtime.component as wc
from wasmtime.component import Variant

from . import _typecache

GATE_INTERFACE = "mcp:resume-gate/gate@0.1.0"

#: The one table from a ``gate-error`` case to the HTTP answer, ``(status, JSON-RPC code)``, in WIT
#: order (see ``wit/gate.wit`` and ``mcp-transport``'s ``errors::TABLE``). Every ``503`` carries
#: ``Retry-After: 1``.
GATE_ERRORS: dict[str, tuple[int, int]] = {
    "invalid-config": (500, -32603),
    "invalid-session-id": (400, -32600),
    "unknown-session": (404, -32001),
    "unknown-stream": (500, -32603),
    "stream-finished": (409, -32603),
    "not-a-request-stream": (500, -32603),
    "duplicate-request-id": (400, -32600),
    "invalid-request-id": (400, -32600),
    "batch-too-large": (400, -32600),
    "too-many-sessions": (503, -32603),
    "over-budget": (503, -32603),
    "too-many-streams": (503, -32603),
    "store-failure": (503, -32603),
}

#: The ``Retry-After`` (seconds) of every ``503``: a bound is reached or the store failed.
RETRY_AFTER_SECONDS = 1

RequestId = int | str


class GateError(Exception):
    """A refusal from the gate: ``code`` is the WIT ``gate-error`` case, ``status`` the HTTP answer."""

    def __init__(self, code: str, detail: str | None = None):
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code
        self.detail = detail
        #: The HTTP status and the JSON-RPC error code to answer with (``GATE_ERRORS``).
        self.status, self.rpc_code = GATE_ERRORS.get(code, GATE_ERRORS["invalid-config"])

    @property
    def message(self) -> str:
        """What was wrong, in the protocol's terms (as ``mcp-transport``'s ``errors::message``)."""
        match self.code:
            case "unknown-session":
                return "Session not found"
            case "invalid-session-id":
                return "Bad Request: invalid Mcp-Session-Id"
            case "invalid-request-id":
                return "Invalid Request: a request id is an integer or a string of at most 256 bytes"
            case "duplicate-request-id":
                return "Invalid Request: this request id was already used in this session"
            case "batch-too-large":
                return "Invalid Request: too many requests in one batch"
            case "stream-finished":
                return "Conflict: the request's stream has ended"
            case "too-many-sessions" | "over-budget" | "too-many-streams" | "store-failure":
                return f"Service Unavailable: {self}"
        return f"Internal error: {self}"


@dataclass(frozen=True)
class Event:
    """One SSE event to write: ``id``, then ``retry`` when set, then ``data``."""

    id: str
    stream: int
    seq: int
    data: str
    retry_ms: int | None
    terminal: bool


@dataclass(frozen=True)
class Opened:
    stream: int
    attachment: int
    priming: Event


@dataclass(frozen=True)
class Resume:
    """Replay ``events`` on this connection, then continue the stream."""

    stream: int
    attachment: int
    cursor_seq: int
    events: list[Event]
    includes_terminal: bool
    #: Requests to answer with a ``-32001`` error each after ``events`` (their writer is gone).
    stranded: list[RequestId]


@dataclass(frozen=True)
class Fresh:
    """The cursor is stale (``reason``): a new stream, nothing replayed."""

    reason: str
    opened: Opened
    #: Requests whose result the client provably lacks: a ``-32001`` error each.
    stranded: list[RequestId]


@dataclass(frozen=True)
class Polled:
    events: list[Event]
    done: bool
    #: Requests to answer with a ``-32001`` error each after ``events`` (their writer is gone).
    stranded: list[RequestId]


@dataclass(frozen=True)
class StreamStatus:
    """What ``check_stream`` found."""

    #: The asking connection is still the stream's: write to it only while this holds.
    attached: bool
    #: The stream still takes events: stop the call when it does not.
    running: bool
    #: Requests of a batch stream the client cancelled: no response for them.
    cancelled: list[RequestId]


def default_wasm() -> Path:
    """``RESUME_GATE_WASM``, else the component the wheel carries, else the workspace's build
    (``target/component/resume_gate.wasm``, for a checkout)."""
    if path := os.environ.get("RESUME_GATE_WASM"):
        return Path(path)
    packaged = Path(__file__).with_name("gate.wasm")
    if packaged.is_file():
        return packaged
    return Path(__file__).resolve().parents[3] / "target" / "component" / "resume_gate.wasm"


class Gate:
    """One instance of the gate (world ``gate-memory``). Calls are serialized by a lock."""

    def __init__(self, wasm: str | os.PathLike[str] | None = None, **config: Any):
        path = Path(wasm) if wasm is not None else default_wasm()
        data = path.read_bytes()
        #: SHA-256 (hex) of the component file this gate runs, and its path.
        self.component_sha256 = hashlib.sha256(data).hexdigest()
        self.component_path = path
        engine = wasmtime.Engine()
        component = wc.Component(engine, data)
        linker = wc.Linker(engine)
        linker.add_wasip2()
        self._store = wasmtime.Store(engine)
        self._store.set_wasi(wasmtime.WasiConfig())
        instance = linker.instantiate(self._store, component)
        interface = instance.get_export_index(self._store, GATE_INTERFACE)
        if interface is None:
            raise ValueError(f"{path} does not export {GATE_INTERFACE}")
        self._funcs: dict[str, Any] = {}
        for name in (
            "default-config configure open-session has-session end-session open-stream join-stream "
            "check-stream release-stream on-emit on-terminal renew-lease on-detach abort-stream "
            "abort-request poll-stream on-reconnect read-counters collect-garbage"
        ).split():
            index = instance.get_export_index(self._store, name, interface)
            self._funcs[name] = _typecache.adopt(instance.get_func(self._store, index))
        self._lock = threading.Lock()
        self.config = self.default_config()
        if config:
            self.configure(**config)

    def _call(self, name: str, *args: Any) -> Any:
        func = self._funcs[name]
        with self._lock:
            try:
                value = func(self._store, *args)
            finally:
                func.post_return(self._store)
        if isinstance(value, Variant):
            if value.tag == "ok":
                return value.payload
            if value.tag == "err":
                value = value.payload
            if isinstance(value, Variant) and value.tag in GATE_ERRORS:
                raise GateError(value.tag, value.payload if isinstance(value.payload, str) else None)
        return value

    def default_config(self) -> dict[str, Any]:
        """The defaults, with snake_case keys."""
        return {k.replace("-", "_"): v for k, v in vars(self._call("default-config")).items()}

    def configure(self, **overrides: Any) -> None:
        """Replaces the configuration: the defaults with ``overrides`` applied."""
        config = {**self.default_config(), **overrides}
        unknown = set(config) - set(self.default_config())
        if unknown:
            raise TypeError(f"unknown configuration fields: {sorted(unknown)}")
        record = wc.Record()
        for key, value in config.items():
            setattr(record, key.replace("_", "-"), bytes(value) if key == "signing_key" and value is not None else value)
        self._call("configure", record)
        self.config = config

    def open_session(self, session: str) -> tuple[int, str | None]:
        """Opens (or re-issues) a session: its epoch, and the session reclaimed to make room."""
        info = self._call("open-session", session)
        return info.epoch, info.reclaimed

    def has_session(self, session: str) -> bool:
        return self._call("has-session", session)

    def end_session(self, session: str) -> None:
        self._call("end-session", session)

    def open_stream(self, session: str, request_id: RequestId | None = None) -> Opened:
        """A stream for a POSTed request (``request_id``), or the standalone stream (``None``)."""
        return _opened(self._call("open-stream", session, _origin(request_id)))

    def join_stream(self, session: str, stream: int, request_ids: list[RequestId]) -> list[bool]:
        """A 2025-03-26 batch answered on one stream: after ``open_stream`` with the batch's first
        request, claims the ids of its further requests, in order, before any of them runs. One
        flag per id; ``False``: the id is already held in this session (earlier in the batch, or
        by another request): answer that request with ``-32600`` and run nothing for it."""
        return list(self._call("join-stream", session, stream, [_request_id(i) for i in request_ids]))

    def check_stream(self, session: str, stream: int, attachment: int) -> StreamStatus:
        """What the writer of a stream asks before it writes to connection ``attachment``.
        Changes nothing."""
        s = self._call("check-stream", session, stream, attachment)
        return StreamStatus(s.attached, s.running, list(s.cancelled))

    def release_stream(self, session: str, stream: int) -> None:
        """The request a stream was opened for was refused before it ran (its HTTP request got an
        error): forgets the stream and its ids' claims so that a corrected retry may use them.
        Only for a request stream that recorded nothing; otherwise ``stream-finished``."""
        self._call("release-stream", session, stream)

    def emit(self, session: str, stream: int, data: str) -> Event:
        return _recorded(self._call("on-emit", session, stream, data), stream, data, False)

    def terminal(self, session: str, stream: int, data: str) -> Event:
        return _recorded(self._call("on-terminal", session, stream, data), stream, data, True)

    def renew_lease(self, session: str, stream: int) -> None:
        self._call("renew-lease", session, stream)

    def detach(self, session: str, stream: int, attachment: int) -> None:
        self._call("on-detach", session, stream, attachment)

    def abort_stream(self, session: str, stream: int) -> None:
        self._call("abort-stream", session, stream)

    def abort_request(self, session: str, request_id: RequestId) -> bool:
        """Cancels request ``request_id``: its stream, or in a batch stream that request alone (the
        stream ends once each of its requests is cancelled). ``False`` if no live stream answers it."""
        return self._call("abort-request", session, _request_id(request_id))

    def poll(self, session: str, stream: int, attachment: int, after: int) -> Polled:
        p = self._call("poll-stream", session, stream, attachment, after)
        return Polled([_event(e) for e in p.events], p.done, list(p.stranded))

    def reconnect(self, session: str, last_event_id: str | bytes, request_id: RequestId | None = None) -> Resume | Fresh:
        """Decides a reconnect carrying ``Last-Event-ID`` (a GET: ``request_id`` is ``None``)."""
        raw = last_event_id.encode("utf-8", "surrogateescape") if isinstance(last_event_id, str) else bytes(last_event_id)
        decision = self._call("on-reconnect", session, raw, _origin(request_id))
        d = decision.payload
        if decision.tag == "resume":
            events = [_event(e) for e in d.events]
            return Resume(d.stream, d.attachment, getattr(d, "cursor-seq"), events, getattr(d, "includes-terminal"), list(d.stranded))
        return Fresh(d.reason, _opened(d.opened), list(d.stranded))

    def counters(self) -> dict[str, Any]:
        c = vars(self._call("read-counters"))
        out = {k.replace("-", "_"): v for k, v in c.items() if k != "fresh"}
        out["fresh"] = {r.reason: r.count for r in c["fresh"]}
        return out

    def collect_garbage(self, cursor: str | None = None) -> tuple[str | None, int]:
        """One step of garbage collection: the next cursor and how many keys it removed."""
        swept = self._call("collect-garbage", cursor)
        return swept.next, swept.removed


def _request_id(request_id: RequestId) -> RequestId:
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        raise GateError("invalid-request-id", "a request id is an integer or a string")
    if isinstance(request_id, int) and not -(2**63) <= request_id < 2**63:
        raise GateError("invalid-request-id", "an integer request id fits in 64 bits")
    return request_id


def _origin(request_id: RequestId | None) -> RequestId | None:
    return None if request_id is None else _request_id(request_id)


def _event(e: Any) -> Event:
    return Event(e.id, e.stream, e.seq, e.data, getattr(e, "retry-ms"), e.terminal)


def _recorded(r: Any, stream: int, data: str, terminal: bool) -> Event:
    # ``on-emit`` and ``on-terminal`` return only the id and seq: the data is the caller's own.
    return Event(r.id, stream, r.seq, data, None, terminal)


def _opened(o: Any) -> Opened:
    return Opened(o.stream, o.attachment, _event(o.priming))
