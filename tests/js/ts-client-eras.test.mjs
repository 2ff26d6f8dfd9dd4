// The newest official TypeScript client (@modelcontextprotocol/client 2.4) in its three
// version-negotiation modes against one endpoint that serves both protocol eras. A 2025-era
// client keeps its session and resumes a cut stream; a 2026-07-28 client has no session, and
// a cut stream cancels its call on the server: nothing it had not done yet is ever done.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { startProxy } from "./fault-proxy.mjs";
import { RECONNECTION } from "./reconnection.mjs";

const SERVER = process.env.MCP_URL;
const MODES = [
  { name: "legacy", mode: "legacy", era: "2025-11-25" },
  { name: "auto", mode: "auto", era: "2026-07-28" },
  { name: "pinned", mode: { pin: "2026-07-28" }, era: "2026-07-28" },
];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function connect(url, mode) {
  const client = new Client({ name: "resume-gate-eras-test", version: "1.0.0" }, { versionNegotiation: { mode } });
  const transport = new StreamableHTTPClientTransport(new URL(url), { reconnectionOptions: RECONNECTION });
  await client.connect(transport);
  return { client, transport };
}

// The journal as the server's `journal` tool reports it, read with a client of its own.
async function journal() {
  const { client } = await connect(SERVER, "legacy");
  const result = await client.callTool({ name: "journal", arguments: {} });
  await client.close();
  return result.structuredContent.lines;
}
const resumes = (proxy) => proxy.state.requests.filter((r) => r.startsWith("GET") && /last-event-id:/i.test(r));

for (const { name, mode, era } of MODES) {
  test(`${name}: speaks ${era}, lists the tools and calls one with progress`, { timeout: 30000 }, async () => {
    const { client, transport } = await connect(SERVER, mode);
    assert.equal(transport.protocolVersion, era);
    assert.equal(transport.sessionId === undefined, era === "2026-07-28", "a session in the 2025 era only");
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === "append"));
    const seen = [];
    const result = await client.callTool(
      { name: "countdown", arguments: { n: 3, interval_ms: 20 } },
      { onprogress: (p) => seen.push(p.progress), timeout: 20000 },
    );
    assert.deepEqual(seen, [1, 2, 3]);
    assert.equal(result.content[0].text, "done");
    await client.close();
  });

  test(`${name}: a countdown cut mid-stream is ${era === "2026-07-28" ? "lost, never resumed" : "resumed, every event once"}`, { timeout: 30000 }, async () => {
    const proxy = await startProxy(SERVER);
    const { client } = await connect(proxy.url, mode);
    const seen = [];
    proxy.cutWhenServerSends('"progress":3');
    const call = client.callTool(
      { name: "countdown", arguments: { n: 6, interval_ms: 100 } },
      { onprogress: (p) => seen.push(p.progress), timeout: era === "2026-07-28" ? 3000 : 20000 },
    );
    if (era === "2026-07-28") {
      await assert.rejects(call, "a cut stream loses its request");
      assert.deepEqual(seen, [1, 2]);
      assert.equal(resumes(proxy).length, 0, "nothing resumes in the new era");
    } else {
      const result = await call;
      assert.ok(resumes(proxy).length >= 1, "the client resumed with GET + Last-Event-ID");
      assert.deepEqual(seen, [1, 2, 3, 4, 5, 6]);
      assert.equal(result.content[0].text, "done");
    }
    assert.equal(proxy.state.cuts, 1, "the connection was cut");
    await client.close();
    await proxy.close();
  });

  test(`${name}: an append cut while it waits is ${era === "2026-07-28" ? "cancelled, then re-issued once" : "resumed and runs once"}`, { timeout: 30000 }, async () => {
    const proxy = await startProxy(SERVER);
    const { client } = await connect(proxy.url, mode);
    const text = `cut-${name}-${Date.now()}`;
    const count = async () => (await journal()).filter((l) => l === text).length;
    proxy.cutAfterClientSends(text, 300);
    const args = { text, delay_ms: 1500 };
    if (era === "2026-07-28") {
      await assert.rejects(client.callTool({ name: "append", arguments: args }, { timeout: 2500 }));
      await sleep(500);
      assert.equal(await count(), 0, "the server cancelled the call when its stream closed");
      // What the revision asks of a client: the lost request again, under a new id.
      const again = await client.callTool({ name: "append", arguments: { text } }, { timeout: 20000 });
      assert.equal(again.isError, undefined);
      assert.equal(await count(), 1);
    } else {
      const result = await client.callTool({ name: "append", arguments: args }, { timeout: 20000 });
      assert.ok(resumes(proxy).length >= 1, "the result came on a GET resume");
      assert.equal(result.isError, undefined);
      assert.equal(await count(), 1, "append ran exactly once");
    }
    assert.equal(proxy.state.cuts, 1);
    await client.close();
    await proxy.close();
  });
}

test("a 2025-era and a 2026-era client at once: each sees its own calls only", { timeout: 30000 }, async () => {
  const [old, modern] = await Promise.all([connect(SERVER, "legacy"), connect(SERVER, { pin: "2026-07-28" })]);
  const run = async ({ client }, n) => {
    const seen = [];
    const r = await client.callTool(
      { name: "countdown", arguments: { n, interval_ms: 30 } },
      { onprogress: (p) => seen.push(p.progress), timeout: 20000 },
    );
    return { seen, text: r.content[0].text };
  };
  const [a, b] = await Promise.all([run(old, 4), run(modern, 7)]);
  assert.deepEqual(a, { seen: [1, 2, 3, 4], text: "done" });
  assert.deepEqual(b, { seen: [1, 2, 3, 4, 5, 6, 7], text: "done" });
  await old.client.close();
  await modern.client.close();
});
