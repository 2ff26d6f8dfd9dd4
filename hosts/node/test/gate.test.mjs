// The package's API over the real component (run by tests/tests/sdk_packages.rs after the build).
import assert from "node:assert/strict";
import { test } from "node:test";
import { GATE_ERRORS, GateError, gateErrorAnswer, loadGate, memoryKeyValue } from "resume-gate";

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

test("the error table is the WIT's, in its order, and every refusal follows it", async () => {
  assert.deepEqual(Object.entries(GATE_ERRORS).map(([k, v]) => [k, v.status, v.code]), [
    ["invalid-config", 500, -32603],
    ["invalid-session-id", 400, -32600],
    ["unknown-session", 404, -32001],
    ["unknown-stream", 500, -32603],
    ["stream-finished", 409, -32603],
    ["not-a-request-stream", 500, -32603],
    ["duplicate-request-id", 400, -32600],
    ["invalid-request-id", 400, -32600],
    ["batch-too-large", 400, -32600],
    ["too-many-sessions", 503, -32603],
    ["over-budget", 503, -32603],
    ["too-many-streams", 503, -32603],
    ["store-failure", 503, -32603],
  ]);
  for (const [code, { status, code: rpcCode }] of Object.entries(GATE_ERRORS)) {
    assert.deepEqual([new GateError(code).status, new GateError(code).rpcCode], [status, rpcCode], code);
  }
  const busy = gateErrorAnswer(new GateError("over-budget"), 7);
  assert.equal(busy.status, 503);
  assert.equal(busy.headers["Retry-After"], "1");
  assert.deepEqual(JSON.parse(busy.body).id, 7);
  const gone = gateErrorAnswer(new GateError("unknown-session"), 7);
  assert.deepEqual([gone.status, JSON.parse(gone.body).error.code, JSON.parse(gone.body).id, gone.headers["Retry-After"]], [404, -32001, null, undefined]);
  const gate = await loadGate();
  gate.openSession("s");
  const { stream } = gate.openStream("s", { request: 1 });
  assert.throws(() => gate.joinStream("s", stream, Array.from({ length: 300 }, (_, i) => i + 2)), {
    code: "batch-too-large",
    status: 400,
    rpcCode: -32600,
  });
});

test("a batch claims its ids in order on one stream, cancels request by request, and a refused one is released", async () => {
  const gate = await loadGate({ config: { maxDetachedMs: 60_000 } });
  assert.equal(gate.config.maxDetachedMs, 60_000);
  gate.openSession("s");
  gate.openStream("s", { request: 30 });
  const batch = gate.openStream("s", { request: 10 });
  // 1 and "1" are two requests; 10 (the stream's own), the second 1 and 30 are held.
  assert.deepEqual(gate.joinStream("s", batch.stream, [1, "1", 10, 1, 30, 2]), [true, true, false, false, false, true]);
  assert.deepEqual(gate.checkStream("s", batch.stream, batch.attachment), { attached: true, running: true, cancelled: [] });
  assert.equal(gate.abortRequest("s", "1"), true);
  assert.deepEqual(gate.checkStream("s", batch.stream, batch.attachment).cancelled, ["1"]);
  gate.emit("s", batch.stream, '{"jsonrpc":"2.0","id":10,"result":{}}');
  for (const id of [10, 1, 2]) assert.equal(gate.abortRequest("s", id), true, String(id));
  const ended = gate.checkStream("s", batch.stream, batch.attachment);
  assert.equal(ended.running, false, "every request cancelled: the stream ended");
  assert.deepEqual(ended.cancelled.map(String).sort(), ["1", "1", "10", "2"]);
  assert.throws(() => gate.joinStream("s", gate.openStream("s", "standalone").stream, [40]), { code: "not-a-request-stream" });

  const refused = gate.openStream("s", { request: 7 });
  assert.deepEqual(gate.joinStream("s", refused.stream, ["x"]), [true]);
  gate.releaseStream("s", refused.stream);
  const retry = gate.openStream("s", { request: "x" });
  assert.deepEqual(gate.joinStream("s", retry.stream, [7]), [true], "both ids are free again");
  gate.emit("s", retry.stream, "{}");
  assert.throws(() => gate.releaseStream("s", retry.stream), { code: "stream-finished" });
});

test("every stranded request of a batch is named, a cancelled one never", async () => {
  const gate = await loadGate({ config: { leaseMs: 50 } });
  assert.equal(gate.config.maxDetachedMs, null, "none: the lease");
  gate.openSession("s");
  const { stream, priming } = gate.openStream("s", { request: 1 });
  gate.joinStream("s", stream, ["b", 3]);
  gate.abortRequest("s", 3);
  gate.emit("s", stream, '{"n":1}');
  await new Promise((resolve) => setTimeout(resolve, 150)); // three leases: the writer is gone
  const d = gate.reconnect("s", priming.id, "standalone");
  assert.equal(d.kind, "resume");
  assert.deepEqual(d.events.map((e) => e.data), ['{"n":1}']);
  assert.deepEqual(d.stranded, [1, "b"]);
  const lone = gate.openStream("s", { request: 5 });
  await new Promise((resolve) => setTimeout(resolve, 150));
  const polled = gate.poll("s", lone.stream, lone.attachment, 0);
  assert.equal(polled.done, true);
  assert.deepEqual(polled.stranded, [5]);
});
