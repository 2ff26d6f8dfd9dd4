// The official TypeScript SDK client against a resume-gate server, through a proxy that cuts the
// connection mid-stream; the client must resume by itself and see everything exactly once.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startProxy } from "./fault-proxy.mjs";
import { RECONNECTION } from "./reconnection.mjs";

const SERVER = process.env.MCP_URL;

async function connect(url) {
  const client = new Client({ name: "resume-gate-ts-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), { reconnectionOptions: RECONNECTION });
  await client.connect(transport);
  return { client, transport };
}

// The journal as the server's `journal` tool reports it, over a session of its own.
async function journal() {
  const { client } = await connect(SERVER);
  const result = await client.callTool({ name: "journal", arguments: {} });
  await client.close();
  return result.structuredContent.lines;
}
const resumes = (proxy) => proxy.state.requests.filter((r) => r.startsWith("GET") && /last-event-id:/i.test(r));

test("the client lists the tools", async () => {
  const { client } = await connect(SERVER);
  const { tools } = await client.listTools();
  for (const name of ["append", "journal", "countdown", "test_simple_text", "test_reconnection"]) {
    assert.ok(tools.some((t) => t.name === name), name);
  }
  await client.close();
});

test("a countdown cut mid-stream resumes: every progress event and the result exactly once", async () => {
  const proxy = await startProxy(SERVER);
  const { client } = await connect(proxy.url);
  const seen = [];
  proxy.cutWhenServerSends('"progress":3');
  const result = await client.callTool(
    { name: "countdown", arguments: { n: 6, interval_ms: 100 } },
    undefined,
    { onprogress: (p) => seen.push(p.progress), timeout: 20000 },
  );
  assert.equal(proxy.state.cuts, 1, "the connection was cut");
  assert.ok(resumes(proxy).length >= 1, "the client resumed with GET + Last-Event-ID");
  assert.deepEqual(seen, [1, 2, 3, 4, 5, 6]);
  assert.equal(result.content[0].text, "done");
  await client.close();
  await proxy.close();
});

test("append cut before its result runs exactly once and the result arrives on resume", async () => {
  const proxy = await startProxy(SERVER);
  const { client } = await connect(proxy.url);
  const before = (await journal()).length;
  proxy.cutWhenServerSends('"structuredContent"');
  const result = await client.callTool({ name: "append", arguments: { text: "ts-once" } }, undefined, { timeout: 20000 });
  assert.equal(proxy.state.cuts, 1, "the connection was cut before the result");
  assert.ok(resumes(proxy).length >= 1, "the result came on a GET resume");
  const after = await journal();
  assert.equal(after.length, before + 1, "append ran exactly once");
  assert.equal(after.at(-1), "ts-once");
  assert.equal(result.structuredContent.lines, before + 1);
  await client.close();
  await proxy.close();
});

test("the SEP-1699 polling tool: the server closes the stream, the client resumes by itself", async () => {
  const proxy = await startProxy(SERVER);
  const { client } = await connect(proxy.url);
  const result = await client.callTool({ name: "test_reconnection", arguments: {} }, undefined, { timeout: 20000 });
  assert.equal(result.content[0].text, "Reconnection test completed successfully");
  assert.ok(resumes(proxy).length >= 1);
  await client.close();
  await proxy.close();
});
