"""The gate inside the ``mcp`` SDK 2.x streamable HTTP server.

The SDK's ``EventStore`` sees a stream id (``str(request id)`` or ``"_GET_stream"``) and a
message, and the SDK hands *one* store to every session. So the adapter has three parts:

- ``GateEventStore``: the store, keyed by session. It learns the session of each call from a
  context variable the request hook sets (the session's message router inherits it from the
  request that opened the session), and the request a message belongs to from the context the
  message was sent in (the SDK's write stream carries it), so that its streams are keyed by the
  request id with its JSON type: ``1`` and ``"1"`` are one stream id to the SDK, two requests
  (two gate streams, two claims) here.
- A request hook around the session manager's ASGI app: it sees what the store cannot — the
  session, the typed JSON-RPC id a POST carries, ``Last-Event-ID``, the end of the connection
  — and asks the gate before the SDK answers, so a refusal gets its own status (from the one
  table, ``GATE_ERRORS``) and a stale cursor becomes a fresh stream. It claims a request's id
  before the SDK runs it; when the SDK then refuses the POST (``406``, ``415``, ``400``, …)
  the claim is released before the refusal is sent, so that the corrected retry runs.
- The one override: the session manager's ``_admit_session`` and ``_discard_session`` open and
  end the gate's session with the SDK's (a full gate answers ``503`` like the SDK's own
  session limit).

A resumed stream is followed by the store itself (``replay_events_after`` polls the gate,
woken by each new event, until the stream ends or another connection takes it over) rather
than by the SDK, whose replay path never closes the response after the final result and
keeps writing to the connection it replaced.

    gate = Gate()
    app = gated_streamable_http_app(server, gate)   # instead of server.streamable_http_app()
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from dataclasses import dataclass, field
from typing import Any

from mcp.server.streamable_http import GET_STREAM_KEY, EventCallback, EventMessage, EventStore
from mcp_types.jsonrpc import jsonrpc_message_adapter

from .gate import GATE_ERRORS, RETRY_AFTER_SECONDS, Fresh, Gate, GateError, Opened, RequestId, Resume

#: The JSON-RPC error for a request whose result was lost with its stream.
RESULT_LOST = -32001
#: The JSON-RPC error for a body that is not JSON.
PARSE_ERROR = -32700
#: POST bodies up to this size are read by the hook for their request ids; a larger one is
#: passed on unread (the SDK refuses it).
MAX_PARSED_BODY = 4 << 20

#: A request id with its JSON type: ``1`` and ``"1"`` are two requests.
_Key = tuple[bool, RequestId]


def _key(request_id: RequestId) -> _Key:
    return (isinstance(request_id, str), request_id)


@dataclass
class _Request:
    """What the hook learned about one HTTP request, for the store calls it causes."""

    session: str | None
    request_ids: list[RequestId] = field(default_factory=list)
    cancelled: list[Any] = field(default_factory=list)
    decision: Resume | Fresh | None = None
    eager: Opened | None = None
    #: The claim of ``eager`` was given back: the SDK refused the request before it ran.
    released: bool = False
    standalone: Opened | None = None
    attached: list[tuple[int, int]] = field(default_factory=list)
    last_written: str | None = None
    #: The body nests too deeply to be parsed: a parse error, whatever else it is.
    unparsable: bool = False


_current: contextvars.ContextVar[_Request | None] = contextvars.ContextVar("resume_gate_request", default=None)


@dataclass
class _Session:
    transport: Any
    #: Live request streams by typed request id (``_key``).
    streams: dict[_Key, int] = field(default_factory=dict)
    standalone: int | None = None
    wakers: dict[int, asyncio.Event] = field(default_factory=dict)

    def wake(self, stream: int) -> None:
        if (event := self.wakers.get(stream)) is not None:
            event.set()


def _lost(request_id: RequestId) -> Any:
    return jsonrpc_message_adapter.validate_python(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": RESULT_LOST, "message": "The result of this request was lost with its stream"}}
    )


class GateEventStore(EventStore):
    """The SDK's ``EventStore`` over the gate, for every session of one session manager."""

    def __init__(self, gate: Gate):
        self.gate = gate
        self._sessions: dict[str, _Session] = {}

    def _state(self) -> tuple[_Request, _Session]:
        ctx = _current.get()
        if ctx is None or ctx.session is None or ctx.session not in self._sessions:
            raise RuntimeError("resume-gate: an event store call outside a gated request (see gated_streamable_http_app)")
        return ctx, self._sessions[ctx.session]

    @staticmethod
    def _sender(ctx: _Request, state: _Session) -> _Request:
        """The request whose handler sent the message being stored: the SDK's message router runs
        in the context of the request that opened the session, but its write stream carries the
        sender's context with each message (``last_context``)."""
        reader = getattr(state.transport, "_write_stream_reader", None)
        context = getattr(reader, "last_context", None)
        sender = context.get(_current) if context is not None else None
        return sender if sender is not None and sender.session == ctx.session else ctx

    @staticmethod
    def _stream_key(sender: _Request, state: _Session, stream_id: str, message: Any) -> _Key | None:
        """The typed request id of the SDK's ``stream_id`` (``str(request id)``) for ``message``."""
        if _is_response(message):
            return _key(message.id)
        if sender.request_ids and str(sender.request_ids[0]) == stream_id:
            return _key(sender.request_ids[0])
        live = [k for k in state.streams if str(k[1]) == stream_id]
        # Two live requests of one string form and no sender to tell them apart: record neither.
        return live[0] if len(live) == 1 else None

    def _open_standalone(self, session: str, ctx: _Request | None) -> int:
        opened = self.gate.open_stream(session)
        self._sessions[session].standalone = opened.stream
        if ctx is not None:
            ctx.attached.append((opened.stream, opened.attachment))
            ctx.standalone = opened
        else:
            self.gate.detach(session, opened.stream, opened.attachment)
        return opened.stream

    def _record(self, write: Any) -> str | None:
        try:
            return write().id
        except GateError as e:
            if e.code == "stream-finished":
                return None
            raise

    async def store_event(self, stream_id: str, message: Any) -> str | None:  # type: ignore[override]
        ctx, state = self._state()
        session = ctx.session
        assert session is not None
        if message is None:
            return self._priming(ctx, state, stream_id)
        data = message.model_dump_json(by_alias=True, exclude_unset=True)
        if stream_id == GET_STREAM_KEY:
            standalone = state.standalone if state.standalone is not None else self._open_standalone(session, None)
            event_id = self._record(lambda: self.gate.emit(session, standalone, data))
            if event_id is None:
                standalone = self._open_standalone(session, None)
                event_id = self._record(lambda: self.gate.emit(session, standalone, data))
            state.wake(standalone)
            return event_id
        sender = self._sender(ctx, state)
        key = self._stream_key(sender, state, stream_id, message)
        if key is None:
            return None
        stream = state.streams.get(key)
        if stream is None:
            # Only the first message of the request its sender carries opens its stream (an
            # `initialize` from a client too old for priming); anything else for a stream the
            # gate no longer knows (finished, cancelled) is sent but not recorded.
            if not sender.request_ids or key != _key(sender.request_ids[0]) or sender.last_written is not None:
                return None
            stream = self._open_request_stream(sender, state).stream
        is_response = _is_response(message)
        if is_response:
            event_id = self._record(lambda: self.gate.terminal(session, stream, data))
        else:
            event_id = self._record(lambda: self.gate.emit(session, stream, data))
        if is_response or event_id is None:
            state.streams.pop(key, None)
        state.wake(stream)
        return event_id

    def _open_request_stream(self, ctx: _Request, state: _Session) -> Opened:
        assert ctx.session is not None
        opened = self.gate.open_stream(ctx.session, ctx.request_ids[0])
        state.streams[_key(ctx.request_ids[0])] = opened.stream
        ctx.attached.append((opened.stream, opened.attachment))
        ctx.last_written = opened.priming.id
        return opened

    def _priming(self, ctx: _Request, state: _Session, stream_id: str) -> str | None:
        if ctx.standalone is not None and stream_id == GET_STREAM_KEY:
            return ctx.standalone.priming.id
        if ctx.decision is not None:
            # The SDK primes the connection a replay leaves to it: the fresh stream's priming,
            # or (a resume) the last event this connection holds.
            if isinstance(ctx.decision, Fresh):
                return ctx.decision.opened.priming.id
            return ctx.last_written
        if not ctx.request_ids or str(ctx.request_ids[0]) != stream_id:
            return None
        if _key(ctx.request_ids[0]) in state.streams and ctx.last_written is not None:
            return ctx.last_written
        return self._open_request_stream(ctx, state).priming.id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:  # type: ignore[override]
        ctx, state = self._state()
        session = ctx.session
        assert session is not None
        if ctx.standalone is not None:
            # A GET without a cursor, sent down this path by the hook so that it starts with the
            # standalone stream's priming event (the SDK's own GET path writes none).
            state.transport.close_standalone_sse_stream()
            return GET_STREAM_KEY
        decision = ctx.decision or self.gate.reconnect(session, last_event_id)
        ctx.decision = decision
        if isinstance(decision, Fresh):
            state.standalone = decision.opened.stream
            ctx.attached.append((decision.opened.stream, decision.opened.attachment))
            # The new standalone stream replaces the SDK's current one.
            state.transport.close_standalone_sse_stream()
            for request_id in decision.stranded:
                await send_callback(EventMessage(_lost(request_id), None))
            return GET_STREAM_KEY
        ctx.attached.append((decision.stream, decision.attachment))
        # Take-over: the SDK's own connection on this stream stops here.
        for (_, request_id), stream in state.streams.items():
            if stream == decision.stream:
                state.transport.close_sse_stream(str(request_id))
        if decision.stream == state.standalone:
            state.transport.close_standalone_sse_stream()
        ctx.last_written = last_event_id
        after = decision.cursor_seq
        for event in decision.events:
            await send_callback(EventMessage(jsonrpc_message_adapter.validate_json(event.data), event.id))
            after, ctx.last_written = event.seq, event.id
        for request_id in decision.stranded:
            await send_callback(EventMessage(_lost(request_id), None))
        if decision.stranded or decision.includes_terminal:
            return None
        await self._follow(session, state, decision, after, send_callback)
        return None

    async def _follow(self, session: str, state: _Session, decision: Resume, after: int, send: EventCallback) -> None:
        """Writes the stream's next events to this connection until it ends or is taken over."""
        waker = state.wakers.setdefault(decision.stream, asyncio.Event())
        tick = max(0.05, self.gate.config["lease_ms"] / 4000)
        try:
            while True:
                waker.clear()
                polled = self.gate.poll(session, decision.stream, decision.attachment, after)
                for event in polled.events:
                    await send(EventMessage(jsonrpc_message_adapter.validate_json(event.data), event.id))
                    after = event.seq
                for request_id in polled.stranded:
                    await send(EventMessage(_lost(request_id), None))
                if polled.done:
                    return
                try:
                    await asyncio.wait_for(waker.wait(), tick)
                except TimeoutError:
                    pass
        finally:
            if state.wakers.get(decision.stream) is waker:
                del state.wakers[decision.stream]


def _is_response(message: Any) -> bool:
    return getattr(message, "id", None) is not None and (hasattr(message, "result") or hasattr(message, "error"))


_Answer = tuple[int, bytes, list[tuple[bytes, bytes]]]


def _error(status: int, code: int, message: str, request_id: RequestId | None = None) -> _Answer:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    headers = [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())] if status == 503 else []
    return status, json.dumps(body).encode(), headers


def _refusal(e: GateError, request_id: RequestId | None = None) -> _Answer:
    """The HTTP answer for a gate error, from ``GATE_ERRORS``. A session-level answer names no
    request, and an id the gate refused is not echoed."""
    status, code = GATE_ERRORS.get(e.code, GATE_ERRORS["invalid-config"])
    # Only a well-formed id is echoed: whatever else a client sent (a list nested a thousand
    # deep) is never serialized back.
    valid = isinstance(request_id, int | str) and not isinstance(request_id, bool)
    echo = None if e.code in ("unknown-session", "invalid-request-id") or not valid else request_id
    return _error(status, code, e.message, echo)


class _Hook:
    """The request hook around the session manager's ASGI app."""

    def __init__(self, inner: Any, gate: Gate, store: GateEventStore):
        self.inner = inner
        self.gate = gate
        self.store = store

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.inner(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        session = headers.get("mcp-session-id")
        known = session is not None and session in self.store._sessions
        ctx = _Request(session=session if known else None)
        token = _current.set(ctx)
        try:
            method = scope.get("method")
            if method == "POST":
                receive = await self._read_ids(ctx, receive)
                if ctx.unparsable:
                    await _respond(send, *_error(400, PARSE_ERROR, "Parse error: the JSON nests too deeply"))
                    return
            refused = self._ask_gate(ctx, method, headers) if known else None
            if refused is not None:
                await _respond(send, *refused)
                return
            if ctx.standalone is not None:
                headers_list = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"last-event-id"]
                scope = {**scope, "headers": [*headers_list, (b"last-event-id", b"resume-gate:standalone")]}

            async def sending(message: Any) -> None:
                if message["type"] == "http.response.start" and message["status"] >= 400:
                    # The SDK refused the POST before running it: give its id back before the
                    # client can read the refusal and retry.
                    self._release(ctx)
                await send(message)

            await self.inner(scope, receive, sending)
        finally:
            for stream, attachment in ctx.attached:
                if ctx.session is not None:
                    self._quietly(self.gate.detach, ctx.session, stream, attachment)
            _current.reset(token)

    def _release(self, ctx: _Request) -> None:
        """The stream opened for a refused request will never carry anything: forget it and its
        claim (or, if it recorded something after all, end it)."""
        if ctx.eager is None or ctx.session is None or ctx.released:
            return
        ctx.released = True
        if (state := self.store._sessions.get(ctx.session)) is not None:
            state.streams.pop(_key(ctx.request_ids[0]), None)
        try:
            self.gate.release_stream(ctx.session, ctx.eager.stream)
        except GateError as e:
            if e.code == "stream-finished":
                self._quietly(self.gate.abort_stream, ctx.session, ctx.eager.stream)

    @staticmethod
    def _quietly(call: Any, *args: Any) -> None:
        try:
            call(*args)
        except GateError:
            pass  # the session ended meanwhile: nothing left to release

    async def _read_ids(self, ctx: _Request, receive: Any) -> Any:
        """Reads the POST body (bounded) for its request ids; returns a `receive` that replays it."""
        chunks: list[bytes] = []
        size = 0
        more = True
        while more and size <= MAX_PARSED_BODY:
            message = await receive()
            if message["type"] != "http.request":
                return _replaying([message], receive)
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if not more:
            try:
                parsed = json.loads(body)
            except RecursionError:
                # Nested deeper than the interpreter's stack: not JSON anyone can process.
                ctx.unparsable = True
                parsed = None
            except ValueError:
                parsed = None  # the SDK answers its parse error
            # A batch (a list) is passed on unclaimed: the SDK 2.x refuses every batch (400).
            m = parsed
            if isinstance(m, dict) and isinstance(m.get("method"), str):
                if "id" in m:
                    ctx.request_ids.append(m["id"])
                elif m["method"] == "notifications/cancelled" and isinstance(m.get("params"), dict):
                    ctx.cancelled.append(m["params"].get("requestId"))
        return _replaying([{"type": "http.request", "body": body, "more_body": more}], receive)

    def _ask_gate(self, ctx: _Request, method: str | None, headers: dict[str, str]) -> _Answer | None:
        session = ctx.session
        assert session is not None
        request_id = ctx.request_ids[0] if ctx.request_ids else None
        try:
            if not self.gate.has_session(session):
                return _refusal(GateError("unknown-session"))
            state = self.store._sessions[session]
            if method == "POST":
                for cancelled in ctx.cancelled:
                    try:
                        self.gate.abort_request(session, cancelled)
                    except GateError as e:
                        if e.code != "invalid-request-id":
                            raise
                        continue  # not a request id: nothing to cancel
                    state.streams.pop(_key(cancelled), None)
                if ctx.request_ids:
                    ctx.eager = self.store._open_request_stream(ctx, state)
            elif method == "GET" and "text/event-stream" in headers.get("accept", ""):
                if last_event_id := headers.get("last-event-id"):
                    ctx.decision = self.gate.reconnect(session, last_event_id)
                else:
                    self.store._open_standalone(session, ctx)
        except GateError as e:
            return _refusal(e, request_id)
        return None


def _replaying(first: list[Any], receive: Any) -> Any:
    pending = list(first)

    async def replay() -> Any:
        return pending.pop(0) if pending else await receive()

    return replay


async def _respond(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-type", b"application/json"), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def install(manager: Any, gate: Gate, store: GateEventStore) -> None:
    """Wires the gate into a ``StreamableHTTPSessionManager`` created with ``event_store=store``:
    the request hook around its ASGI app, and the override of its session admission."""
    if manager.event_store is not store:
        raise ValueError("resume-gate: the session manager must be created with event_store=<the GateEventStore>")
    needed = ("_admit_session", "_discard_session", "_server_instances", "_session_owners", "asgi_app")
    if manager.stateless or not all(hasattr(manager, name) for name in needed):
        raise RuntimeError("resume-gate: this mcp SDK's session manager is not supported (needs mcp 2.x, stateful)")
    admit, discard = manager._admit_session, manager._discard_session

    def admit_session(requestor: Any) -> Any:
        transport = admit(requestor)
        if transport is None:
            return None
        session = transport.mcp_session_id
        try:
            _, reclaimed = gate.open_session(session)
        except GateError:
            manager._server_instances.pop(session, None)
            manager._session_owners.pop(session, None)
            return None
        store._sessions[session] = _Session(transport)
        if (ctx := _current.get()) is not None:
            ctx.session = session
        if reclaimed is not None and (old := manager._server_instances.get(reclaimed)) is not None:
            asyncio.get_running_loop().create_task(manager._discard_session(reclaimed, old))
        return transport

    async def discard_session(session: str, transport: Any) -> None:
        try:
            await discard(session, transport)
        finally:
            if store._sessions.pop(session, None) is not None:
                try:
                    gate.end_session(session)
                except GateError:
                    pass

    manager._admit_session = admit_session
    manager._discard_session = discard_session
    manager.asgi_app = _Hook(manager.asgi_app, gate, store)


def gated_streamable_http_app(server: Any, gate: Gate, **kwargs: Any) -> Any:
    """``server.streamable_http_app(**kwargs)`` (an ``MCPServer`` or a low-level ``Server``) with
    the gate as its event store, request hook and session admission."""
    store = GateEventStore(gate)
    kwargs.setdefault("retry_interval", gate.config["retry_ms"])
    app = server.streamable_http_app(event_store=store, **kwargs)
    install(server.session_manager, gate, store)
    return app
