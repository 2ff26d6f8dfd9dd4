// The package's API over the real component (run by tests/tests/sdk_packages.rs after the build).
import assert from "node:assert/strict";
import { test } from "node:test";
import { GateError, loadGate, memoryKeyValue } from "resume-gate";

test("a resume replays exactly the missed events; a stale cursor opens a fresh stream", async () => {
  const gate = await loadGate({ config: { maxEventsPerStream: 8 } });
  assert.equal(gate.config.maxEventsPerStream, 8);
  gate.openSession("s");
  const { stream, priming } = gate.openStream("s", { request: 1 });
  const first = gate.emit("s", stream, '{"n":1}');
  gate.emit("s", stream, '{"n":2}');
  const last = gate.terminal("s", stream, '{"r":1}');
  assert.equal(last.terminal, true);
  const resumed = gate.reconnect("s", first.id, "standalone");
  assert.equal(resumed.kind, "resume");
  assert.deepEqual(resumed.events.map((e) => e.data), ['{"n":2}', '{"r":1}']);
  assert.equal(resumed.includesTerminal, true);
  for (const [cursor, reason] of [[last.id, "completed"], ["junk", "malformed"], [new Uint8Array([0xff, 0]), "malformed"]]) {
    const d = gate.reconnect("s", cursor, "standalone");
    assert.equal(d.kind, "fresh");
    assert.equal(d.reason, reason);
    assert.equal(d.opened.priming.data, "");
  }
  assert.equal(gate.reconnect("s", priming.id, { request: 2 }).reason, "post-never-resumes");
});

test("refusals are typed GateErrors with their HTTP status", async () => {
  const gate = await loadGate();
  gate.openSession("s");
  gate.openStream("s", { request: "a" });
  assert.throws(() => gate.openStream("s", { request: "a" }), { code: "duplicate-request-id", status: 400 });
  assert.throws(() => gate.openStream("nope", "standalone"), { code: "unknown-session", status: 404 });
  assert.throws(() => gate.openSession(""), { code: "invalid-session-id", status: 400 });
  assert.throws(() => gate.openStream("s", { request: 1.5 }), { code: "invalid-request-id" });
  assert.throws(() => gate.configure({ maxSessions: 0 }), { code: "invalid-config" });
  assert.throws(() => gate.emit("s", 99n, "{}"), (e) => e instanceof GateError && e.code === "unknown-stream");
  assert.equal(gate.counters().errors >= 3, true);
});

test("two instances of the kv world share one state through the host's map", async () => {
  const keyvalue = memoryKeyValue();
  const a = await loadGate({ world: "kv", keyvalue });
  const b = await loadGate({ world: "kv", keyvalue });
  a.openSession("shared");
  const { stream, priming } = a.openStream("shared", { request: 7 });
  a.emit("shared", stream, '{"from":"a"}');
  b.emit("shared", stream, '{"from":"b"}');
  const d = b.reconnect("shared", priming.id, "standalone");
  assert.equal(d.kind, "resume");
  assert.deepEqual(d.events.map((e) => e.data), ['{"from":"a"}', '{"from":"b"}']);
  assert.equal(a.hasSession("shared"), true);
  b.endSession("shared");
  assert.equal(a.hasSession("shared"), false);
  let cursor = null;
  do ({ next: cursor } = a.collectGarbage(cursor));
  while (cursor !== null);
});
