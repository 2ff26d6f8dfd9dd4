// The adapter in the official SDK's transport (`resume-gate/sdk` for 1.32, `resume-gate/server`
// for 2.x), through each example server (`example.mjs`, `example-v2.mjs`, on a free port): 2025-03-26 batches claim every request's id before
// any runs (`append` is not idempotent: the journal shows how often it ran), a cancel reaches
// one request of a batch, request ids keep their JSON type, and a POST the SDK refused gives
// its id back for the corrected retry.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL("..", import.meta.url));
const ACCEPT = "application/json, text/event-stream";
const WAIT = 5000;

let server;
let base;
let dir;
let journal;

const journalLines = () => {
  try {
    return readFileSync(journal, "utf8").split("\n").slice(0, -1);
  } catch {
    return [];
  }
};

/** Reads a response's SSE frames (`{ id, data }`, `data` parsed when not empty). */
class Sse {
  #reader;
  #buffer = "";
  #decoder = new TextDecoder();
  closed = false;

  constructor(response) {
    this.#reader = response.body.getReader();
  }

  /** The next frame, `null` once the response ended; throws after `ms` without one. */
  async next(ms = WAIT) {
    for (;;) {
      const end = this.#buffer.indexOf("\n\n");
      if (end >= 0) {
        const raw = this.#buffer.slice(0, end);
        this.#buffer = this.#buffer.slice(end + 2);
        const frame = { id: undefined, data: "" };
        for (const line of raw.split("\n")) {
          const at = line.indexOf(":");
          if (at <= 0) continue;
          const [name, value] = [line.slice(0, at), line.slice(at + 1).replace(/^ /, "")];
          if (name === "id") frame.id = value;
          if (name === "data") frame.data += value;
        }
        if (frame.id === undefined && frame.data === "") continue; // a comment (keep-alive)
        frame.json = frame.data === "" ? null : JSON.parse(frame.data);
        return frame;
      }
      if (this.closed) return null;
      let timer;
      const timeout = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no frame within ${ms} ms`)), ms)));
      const { value, done } = await Promise.race([this.#reader.read(), timeout]).finally(() => clearTimeout(timer));
      if (done) this.closed = true;
      else this.#buffer += this.#decoder.decode(value, { stream: true });
    }
  }

  /** Every frame until the server ends the response (it must, within `ms`). */
  async untilClosed(ms = WAIT) {
    const frames = [];
    for (let f; (f = await this.next(ms)) !== null; ) frames.push(f);
    return frames;
  }

  cancel() {
    return this.#reader.cancel().catch(() => {});
  }
}

const responsesOf = (frames) => frames.map((f) => f.json).filter((m) => m && ("result" in m || "error" in m));

async function initialize(version = "2025-03-26") {
  const init = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "t", version: "0" } } };
  const res = await fetch(base, { method: "POST", headers: { "content-type": "application/json", accept: ACCEPT }, body: JSON.stringify(init) });
  assert.equal(res.status, 200);
  const session = res.headers.get("mcp-session-id");
  await new Sse(res).untilClosed();
  const client = {
    session,
    post: (body, { accept = ACCEPT } = {}) =>
      fetch(base, {
        method: "POST",
        headers: { "content-type": "application/json", accept, "mcp-session-id": session, "mcp-protocol-version": version },
        body: JSON.stringify(body),
      }),
    get: (lastEventId) =>
      fetch(base, { headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": version, "last-event-id": lastEventId } }),
  };
  assert.equal((await client.post({ jsonrpc: "2.0", method: "notifications/initialized" })).status, 202);
  return client;
}

const ping = (id) => ({ jsonrpc: "2.0", id, method: "ping" });
const call = (id, name, args, token) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: args, ...(token === undefined ? {} : { _meta: { progressToken: token } }) },
});
const append = (id, text) => call(id, "append", { text });
const ran = (text) => journalLines().filter((l) => l === text).length;

/** Whether `name` is installed beside the package (a user installs the SDK they serve with). */
const installed = (name) => {
  try {
    import.meta.resolve(name);
    return true;
  } catch {
    return false;
  }
};

// The same tests through each example whose SDK is installed (both, in this repository): the
// SDK 1.32 transport (`resume-gate/sdk`) and the SDK 2.x one (`resume-gate/server`).
const examples = [
  ["example.mjs", "@modelcontextprotocol/sdk/server/index.js"],
  ["example-v2.mjs", "@modelcontextprotocol/server"],
].filter(([, sdk]) => installed(sdk));
assert.ok(examples.length > 0, "neither SDK is installed: nothing to test the adapter in");
for (const [script] of examples) describe(script, () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "resume-gate-node-"));
    journal = join(dir, "journal.txt");
    server = spawn(process.execPath, [script, "--port", "0", "--journal", journal], { cwd: here, stdio: ["ignore", "pipe", "inherit"] });
    const port = await new Promise((resolve, reject) => {
      let out = "";
      server.stdout.on("data", (chunk) => {
        out += chunk;
        const m = /listening (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      server.once("exit", (code) => reject(new Error(`the example server exited (${code}): ${out}`)));
    });
    base = `http://127.0.0.1:${port}/mcp`;
  });

  after(() => {
    server?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  test("[ping 10, append 11] claims 11: append 11 alone is refused and the append ran once", async () => {
    const c = await initialize();
    const batch = await c.post([ping(10), append(11, "case-1")]);
    assert.equal(batch.status, 200);
    assert.deepEqual(responsesOf(await new Sse(batch).untilClosed()).map((m) => [m.id, "result" in m]).sort(), [[10, true], [11, true]]);
    const again = await c.post(append(11, "case-1"));
    assert.equal(again.status, 400);
    const error = await again.json();
    assert.deepEqual([error.id, error.error.code], [11, -32600]);
    assert.equal(ran("case-1"), 1);
  });

  test("[append 20, append 20] runs once: the second gets its own -32600 on the batch's stream", async () => {
    const c = await initialize();
    const batch = await c.post([append(20, "case-2"), append(20, "case-2")]);
    assert.equal(batch.status, 200);
    const responses = responsesOf(await new Sse(batch).untilClosed());
    assert.equal(responses.length, 2, JSON.stringify(responses));
    assert.deepEqual(responses.filter((m) => m.error).map((m) => [m.id, m.error.code]), [[20, -32600]]);
    assert.equal(responses.filter((m) => m.result).length, 1);
    assert.equal(ran("case-2"), 1);
  });

  test("append 30, then [ping 31, append 30]: the batch's append is refused and runs nothing", async () => {
    const c = await initialize();
    const first = await c.post(append(30, "case-3"));
    assert.equal(first.status, 200);
    assert.deepEqual(responsesOf(await new Sse(first).untilClosed()).map((m) => m.id), [30]);
    const batch = await c.post([ping(31), append(30, "case-3")]);
    assert.equal(batch.status, 200);
    const responses = responsesOf(await new Sse(batch).untilClosed());
    assert.deepEqual(responses.map((m) => [m.id, m.error?.code ?? "ok"]).sort(), [[30, -32600], [31, "ok"]]);
    assert.equal(ran("case-3"), 1);
    // Every request held: a 400 with each one's error, nothing streamed.
    const held = await c.post([append(30, "case-3"), ping(31)]);
    assert.equal(held.status, 400);
    assert.deepEqual((await held.json()).map((m) => [m.id, m.error.code]), [[30, -32600], [31, -32600]]);
    assert.equal(ran("case-3"), 1);
  });

  test("a POST the SDK refused (406) gives its id back: the corrected retry runs", async () => {
    const c = await initialize("2025-11-25");
    const refused = await c.post(append(40, "case-4"), { accept: "application/json" });
    assert.equal(refused.status, 406);
    await refused.body?.cancel();
    const retry = await c.post(append(40, "case-4"));
    assert.equal(retry.status, 200);
    const frames = await new Sse(retry).untilClosed();
    assert.equal(frames[0].json, null, "a priming event first");
    assert.deepEqual(responsesOf(frames).map((m) => [m.id, "result" in m]), [[40, true]]);
    assert.equal(ran("case-4"), 1);
    // A refused batch gives back every id it claimed.
    const batch = await c.post([ping(41), append(42, "case-4b")], { accept: "text/event-stream" });
    assert.equal(batch.status, 406);
    await batch.body?.cancel();
    const batchRetry = await c.post([ping(41), append(42, "case-4b")]);
    assert.equal(batchRetry.status, 200);
    assert.deepEqual(responsesOf(await new Sse(batchRetry).untilClosed()).map((m) => [m.id, "result" in m]).sort(), [[41, true], [42, true]]);
    assert.equal(ran("case-4b"), 1);
  });

  test("notifications/cancelled cancels one request of a batch alone; the stream ends once the rest are answered", async () => {
    const c = await initialize();
    // The slow call is cancelled while the quick one runs on.
    const batch = await c.post([call(50, "countdown", { n: 100, interval_ms: 50 }, "slow"), call(51, "countdown", { n: 4, interval_ms: 100 }, "fast")]);
    assert.equal(batch.status, 200);
    const sse = new Sse(batch);
    const seen = [await sse.next()];
    const cancel = await c.post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 50 } });
    assert.equal(cancel.status, 202);
    const frames = [...seen, ...(await sse.untilClosed())];
    assert.deepEqual(responsesOf(frames).map((m) => [m.id, m.result?.content?.[0]?.text]), [[51, "done"]], "no response for 50");

    // The last request the stream waits for is cancelled: an empty terminal event ends it.
    const second = await c.post([ping(60), call(61, "countdown", { n: 100, interval_ms: 50 }, "slow")]);
    const sse2 = new Sse(second);
    const answered = await sse2.next();
    assert.deepEqual(answered.json, { result: {}, jsonrpc: "2.0", id: 60 });
    assert.equal((await c.post({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 61 } })).status, 202);
    const rest = (await sse2.untilClosed()).filter((f) => !f.json?.method);
    assert.equal(rest.length, 1, JSON.stringify(rest));
    assert.ok(rest[0].id && rest[0].json === null, "an empty terminal event");
    // A resume from the ping's answer replays that empty terminal, then ends.
    const resumed = await c.get(answered.id);
    assert.equal(resumed.status, 200);
    const replayed = (await new Sse(resumed).untilClosed()).filter((f) => !f.json?.method);
    assert.deepEqual(replayed.map((f) => [f.id, f.json]), [[rest[0].id, null]]);
  });

  test('ids 1 and "1" in one batch are two requests: each is answered, recorded and replayed with its own type', async () => {
    const c = await initialize("2025-11-25");
    const batch = await c.post([ping(1), ping("1")]);
    assert.equal(batch.status, 200);
    const frames = await new Sse(batch).untilClosed();
    const answered = responsesOf(frames).map((m) => m.id);
    assert.equal(answered.length, 2);
    assert.deepEqual(new Set(answered), new Set([1, "1"]));
    const resumed = await c.get(frames[0].id); // from the priming event
    assert.equal(resumed.status, 200);
    const replayed = await new Sse(resumed).untilClosed();
    assert.deepEqual(responsesOf(replayed).map((m) => m.id), answered, "both recorded, in order");
    assert.deepEqual(replayed.map((f) => f.id), frames.slice(1).map((f) => f.id));
  });
});
