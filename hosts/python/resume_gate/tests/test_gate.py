"""The package's API over the real component, and its ``mcp`` SDK adapter through the example
server (``resume_gate.example``, started on a free port): ``pytest --pyargs resume_gate`` wherever
the package is installed (tests/tests/sdk_packages.rs runs it in the repository's virtualenv,
tests/tests/packages.rs in a fresh one holding only the wheel)."""

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from resume_gate import GATE_ERRORS, Fresh, Gate, GateError, Resume


def test_a_resume_replays_exactly_the_missed_events_and_a_stale_cursor_starts_fresh() -> None:
    gate = Gate(max_events_per_stream=8)
    assert gate.config["max_events_per_stream"] == 8
    gate.open_session("s")
    opened = gate.open_stream("s", 1)
    first = gate.emit("s", opened.stream, '{"n":1}')
    gate.emit("s", opened.stream, '{"n":2}')
    last = gate.terminal("s", opened.stream, '{"r":1}')
    assert last.terminal
    resumed = gate.reconnect("s", first.id)
    assert isinstance(resumed, Resume) and resumed.includes_terminal
    assert [e.data for e in resumed.events] == ['{"n":2}', '{"r":1}']
    for cursor, reason in [(last.id, "completed"), ("junk", "malformed"), (b"\xff\x00", "malformed")]:
        decision = gate.reconnect("s", cursor)
        assert isinstance(decision, Fresh) and decision.reason == reason, decision
        assert decision.opened.priming.data == ""
    assert gate.reconnect("s", opened.priming.id, 2).reason == "post-never-resumes"


def test_the_gate_leaves_wasmtime_as_it_found_it_for_everyone_else() -> None:
    import wasmtime.component as wc
    from wasmtime.component import _types as t

    before = {cls: dict(vars(cls)) for cls in (wc.Func, t.FuncType, t.RecordType, t.VariantType, t.ResultType)}
    gate = Gate()
    gate.open_session("s")
    opened = gate.open_stream("s", 1)
    gate.emit("s", opened.stream, '{"n":1}')
    after = {cls: dict(vars(cls)) for cls in before}
    assert after == before, "the gate patched a wasmtime class"
    assert all(type(f) is not wc.Func for f in gate._funcs.values()), "the gate's own functions remember their types"


def test_refusals_are_typed_gate_errors_with_their_http_status() -> None:
    gate = Gate()
    gate.open_session("s")
    gate.open_stream("s", "a")
    cases = [
        (lambda: gate.open_stream("s", "a"), "duplicate-request-id", 400),
        (lambda: gate.open_stream("nope"), "unknown-session", 404),
        (lambda: gate.open_session(""), "invalid-session-id", 400),
        (lambda: gate.open_stream("s", 2**64), "invalid-request-id", 400),
        (lambda: gate.open_stream("s", True), "invalid-request-id", 400),
        (lambda: gate.emit("s", 99, "{}"), "unknown-stream", 500),
        (lambda: gate.configure(max_sessions=0), "invalid-config", 500),
    ]
    for call, code, status in cases:
        try:
            call()
        except GateError as e:
            assert (e.code, e.status) == (code, status), (e.code, e.status)
        else:
            raise AssertionError(f"{code} expected")


def test_the_configuration_is_checked_and_kept() -> None:
    gate = Gate()
    try:
        gate.configure(no_such_field=1)
    except TypeError:
        pass
    else:
        raise AssertionError("an unknown field is refused")
    gate.configure(max_sessions=2, retry_ms=None)
    assert gate.config["max_sessions"] == 2 and gate.config["retry_ms"] is None
    gate.open_session("a")
    gate.open_session("b")
    _, reclaimed = gate.open_session("c")
    assert reclaimed in ("a", "b")
    assert gate.open_stream("c").priming.retry_ms is None


def test_counters_and_sessions_end() -> None:
    gate = Gate()
    gate.open_session("s")
    assert gate.has_session("s") and not gate.has_session("t") and not gate.has_session("")
    gate.reconnect("s", "junk")
    counters = gate.counters()
    assert counters["sessions"] == 1 and counters["fresh"]["malformed"] == 1
    gate.end_session("s")
    assert not gate.has_session("s")
    assert gate.collect_garbage() == (None, 0)


def test_the_error_table_is_the_one_of_the_wit_in_its_order() -> None:
    expected = [
        ("invalid-config", 500, -32603),
        ("invalid-session-id", 400, -32600),
        ("unknown-session", 404, -32001),
        ("unknown-stream", 500, -32603),
        ("stream-finished", 409, -32603),
        ("not-a-request-stream", 500, -32603),
        ("duplicate-request-id", 400, -32600),
        ("invalid-request-id", 400, -32600),
        ("batch-too-large", 400, -32600),
        ("too-many-sessions", 503, -32603),
        ("over-budget", 503, -32603),
        ("too-many-streams", 503, -32603),
        ("store-failure", 503, -32603),
    ]
    assert [(k, *v) for k, v in GATE_ERRORS.items()] == expected, GATE_ERRORS
    for code, status, rpc_code in expected:
        e = GateError(code)
        assert (e.status, e.rpc_code) == (status, rpc_code), code
    gate = Gate()
    gate.open_session("s")
    opened = gate.open_stream("s", 1)
    try:
        gate.join_stream("s", opened.stream, list(range(2, 300)))
    except GateError as e:
        assert (e.code, e.status, e.rpc_code) == ("batch-too-large", 400, -32600)
    else:
        raise AssertionError("a batch of 299 requests on one stream is refused")


def test_a_batch_claims_its_ids_in_order_and_cancels_request_by_request() -> None:
    gate = Gate()
    gate.open_session("s")
    gate.open_stream("s", 30)
    batch = gate.open_stream("s", 10)
    # 1 and "1" are two requests; 10 (the stream's own), the second 1 and 30 are held.
    assert gate.join_stream("s", batch.stream, [1, "1", 10, 1, 30, 2]) == [True, True, False, False, False, True]
    status = gate.check_stream("s", batch.stream, batch.attachment)
    assert (status.attached, status.running, status.cancelled) == (True, True, [])
    assert gate.abort_request("s", "1")
    assert gate.check_stream("s", batch.stream, batch.attachment).cancelled == ["1"]
    gate.emit("s", batch.stream, '{"jsonrpc":"2.0","id":10,"result":{}}')
    for request_id in (10, 1, 2):
        assert gate.abort_request("s", request_id), request_id
    status = gate.check_stream("s", batch.stream, batch.attachment)
    assert not status.running and sorted(map(str, status.cancelled)) == ["1", "1", "10", "2"], status
    try:
        gate.join_stream("s", gate.open_stream("s").stream, [40])
    except GateError as e:
        assert e.code == "not-a-request-stream"
    else:
        raise AssertionError("a standalone stream takes no batch")


def test_a_released_stream_gives_its_ids_back_until_it_recorded_something() -> None:
    gate = Gate()
    gate.open_session("s")
    refused = gate.open_stream("s", 7)
    assert gate.join_stream("s", refused.stream, ["x"]) == [True]
    gate.release_stream("s", refused.stream)
    retry = gate.open_stream("s", "x")
    assert gate.join_stream("s", retry.stream, [7]) == [True], "both ids are free again"
    gate.emit("s", retry.stream, "{}")
    try:
        gate.release_stream("s", retry.stream)
    except GateError as e:
        assert e.code == "stream-finished"
    else:
        raise AssertionError("a stream that recorded an event is not released")


def test_every_stranded_request_of_a_batch_is_named_and_a_cancelled_one_never() -> None:
    gate = Gate(lease_ms=50, max_detached_ms=None)
    assert gate.config["max_detached_ms"] is None
    gate.open_session("s")
    opened = gate.open_stream("s", 1)
    gate.join_stream("s", opened.stream, ["b", 3])
    gate.abort_request("s", 3)
    gate.emit("s", opened.stream, '{"n":1}')
    time.sleep(0.15)  # three leases: the writer is gone
    decision = gate.reconnect("s", opened.priming.id)
    assert isinstance(decision, Resume), decision
    assert [e.data for e in decision.events] == ['{"n":1}']
    assert decision.stranded == [1, "b"], decision.stranded
    lone = gate.open_stream("s", 5)
    time.sleep(0.15)
    polled = gate.poll("s", lone.stream, lone.attachment, 0)
    assert polled.done and polled.stranded == [5], polled


# --- the adapter, through the example server


class _Server:
    """``resume_gate.example`` on a free port, for the adapter's tests (started once)."""

    _instance: "_Server | None" = None

    def __init__(self) -> None:
        here = Path(__file__).resolve().parents[2]
        self.dir = tempfile.TemporaryDirectory()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(here), os.environ.get("PYTHONPATH")]))}
        journal = str(Path(self.dir.name) / "journal.txt")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "resume_gate.example", "--port", "0", "--journal", journal],
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("listening "):
            self.process.kill()
            raise RuntimeError(f"the example server did not start: {line!r}")
        self.port = int(line.split()[1])
        # The socket is bound before uvicorn listens on it: wait until it accepts.
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.process.kill()
                    raise
                time.sleep(0.05)

    @classmethod
    def get(cls) -> "_Server":
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    @classmethod
    def stop(cls) -> None:
        if cls._instance is not None:
            cls._instance.process.terminate()
            cls._instance.process.wait(10)
            cls._instance.dir.cleanup()
            cls._instance = None


ACCEPT = "application/json, text/event-stream"
VERSION = "2025-11-25"


class _Response:
    def __init__(self, conn: http.client.HTTPConnection):
        self.conn = conn
        self.raw = conn.getresponse()
        self.status = self.raw.status

    def header(self, name: str) -> str | None:
        return self.raw.getheader(name)

    def json(self) -> object:
        return json.loads(self.raw.read())

    def frame(self) -> dict[str, str] | None:
        """The next SSE frame (``id``, ``retry``, ``data``), or ``None`` once the response ended."""
        frame: dict[str, str] = {}
        while True:
            line = self.raw.readline()
            if not line:
                return frame or None
            line = line.decode().rstrip("\r\n")
            if not line:
                if frame:
                    return frame
                continue
            name, _, value = line.partition(":")
            if name:
                frame[name] = frame.get(name, "") + value.removeprefix(" ")

    def frames_until_closed(self) -> list[dict[str, str]]:
        frames = []
        while (f := self.frame()) is not None:
            frames.append(f)
        return frames

    def close(self) -> None:
        self.conn.close()


class _Client:
    def __init__(self) -> None:
        self.port = _Server.get().port
        self.session: str | None = None
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
        }
        resp = self.post(init)
        assert resp.status == 200, resp.status
        self.session = resp.header("mcp-session-id")
        assert self.session
        resp.frames_until_closed()
        resp.close()
        assert self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).status == 202

    def request(self, method: str, body: bytes | None, headers: dict[str, str]) -> _Response:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        all_headers = {"MCP-Protocol-Version": VERSION, **headers}
        if self.session:
            all_headers["Mcp-Session-Id"] = self.session
        conn.request(method, "/mcp", body=body, headers=all_headers)
        return _Response(conn)

    def post(self, message: object, accept: str = ACCEPT, raw: bytes | None = None) -> _Response:
        body = raw if raw is not None else json.dumps(message).encode()
        return self.request("POST", body, {"Content-Type": "application/json", "Accept": accept})

    def call(self, request_id: object, tool: str, arguments: dict, token: str | None = None) -> _Response:
        params: dict = {"name": tool, "arguments": arguments}
        if token is not None:
            params["_meta"] = {"progressToken": token}
        return self.post({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})

    def get(self, last_event_id: str) -> _Response:
        return self.request("GET", None, {"Accept": "text/event-stream", "Last-Event-ID": last_event_id})


def _messages(frames: list[dict[str, str]]) -> list[dict]:
    return [json.loads(f["data"]) for f in frames if f.get("data")]


def test_sdk_ids_1_and_string_1_are_two_requests_whose_events_never_mix() -> None:
    c = _Client()
    primings = {}
    for request_id, token in [(1, "int"), ("1", "str")]:
        post = c.call(request_id, "countdown", {"n": 2, "interval_ms": 150}, token)
        assert post.status == 200, (request_id, post.status)
        priming = post.frame()
        assert priming is not None and "id" in priming and not priming.get("data"), priming
        primings[token] = priming["id"]
        post.close()  # cut: both calls run on, recorded by the gate
    for request_id, token in [(1, "int"), ("1", "str")]:
        resumed = c.get(primings[token])
        assert resumed.status == 200
        got = _messages(resumed.frames_until_closed())
        resumed.close()
        tokens = [m["params"]["progressToken"] for m in got if m.get("method") == "notifications/progress"]
        assert tokens == [token, token], (token, got)
        results = [m for m in got if "result" in m or "error" in m]
        assert len(results) == 1 and results[0]["id"] == request_id, (request_id, results)
        assert type(results[0]["id"]) is type(request_id)
        assert results[0]["result"]["content"][0]["text"] == "done"


def test_sdk_pathologically_nested_json_is_a_400_parse_error() -> None:
    c = _Client()
    for body in [b"[" * 100_000, b'{"a":' * 100_000]:
        resp = c.post(None, raw=body)
        assert resp.status == 400, resp.status
        error = resp.json()
        assert error["error"]["code"] == -32700 and error["id"] is None, error
        resp.close()
    ping = c.post({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert ping.status == 200
    assert [m["id"] for m in _messages(ping.frames_until_closed())] == [2], "the session serves on"


def test_sdk_a_request_the_sdk_refused_keeps_its_id_for_the_corrected_retry() -> None:
    c = _Client()
    ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    refused = c.post(ping, accept="application/json")
    assert refused.status == 406, refused.status
    refused.close()
    retry = c.post(ping)
    assert retry.status == 200, retry.status
    assert [m["id"] for m in _messages(retry.frames_until_closed())] == [7]
    again = c.post(ping)
    assert again.status == 400, "an id that ran is held"
    error = again.json()
    assert (error["error"]["code"], error["id"]) == (GATE_ERRORS["duplicate-request-id"][1], 7), error


def teardown_module() -> None:
    _Server.stop()
