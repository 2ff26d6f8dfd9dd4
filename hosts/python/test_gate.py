"""The package's API over the real component: ``python test_gate.py`` (run by
tests/tests/sdk_packages.rs with the venv of requirements.lock). Prints ``N passed, M failed``."""

import traceback

from resume_gate import Fresh, Gate, GateError, Resume


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


if __name__ == "__main__":
    passed = failed = 0
    for name, test in list(globals().items()):
        if name.startswith("test_"):
            try:
                test()
                passed += 1
                print(f"ok {name}")
            except Exception:
                failed += 1
                print(f"FAILED {name}")
                traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    raise SystemExit(1 if failed else 0)
