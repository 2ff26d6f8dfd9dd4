/**
 * A real MCP server on the official TypeScript SDK (`@modelcontextprotocol/sdk` 1.32) with the
 * resume-gate adapter, serving host-example's tools at http://127.0.0.1:PORT/mcp:
 * `append {text}` (one line to the journal file; not idempotent), `journal {from, limit}`,
 * `countdown {n, interval_ms}` (n progress notifications, then "done"), `test_simple_text`,
 * and `test_reconnection` (closes its SSE stream mid-call; the result arrives on the resume).
 *
 *   hosts/node/example --port 9000 [--journal journal.txt]   # installs and builds on first run
 *   hosts/node/example --port 9000 --store sdk   # the SDK's example InMemoryEventStore, no gate
 *   hosts/node/example --port 9000 --retention-ms 300   # how long a cut stream stays resumable
 *
 * `--store sdk` serves the same tools as the SDK's own example builds its server, for the
 * side-by-side comparison in the README.
 *
 * Prints `listening PORT` once it serves.
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";
import { GATE_ERRORS, loadGate } from "resume-gate";
import { exampleTools } from "./example-tools.mjs";
import { gatedTransport } from "resume-gate/sdk";

const { values: args } = parseArgs({
  options: {
    port: { type: "string", default: "9000" },
    journal: { type: "string", default: "journal.txt" },
    store: { type: "string", default: "gate" },
    "retention-ms": { type: "string" },
  },
});

const { TOOLS, callTool } = exampleTools(args.journal);
const invalidParams = (message) => new McpError(ErrorCode.InvalidParams, message);

function mcpServer() {
  const server = new Server({ name: "resume-gate node example", version: "0.1.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, ({ params }, extra) =>
    callTool(params, { signal: extra.signal, notify: (n) => extra.sendNotification(n), closeSSEStream: extra.closeSSEStream }, invalidParams),
  );
  return server;
}

// --- the server, as the SDK's own example builds it; the gate replaces the transport's constructor

if (!["gate", "sdk"].includes(args.store)) throw new Error(`--store is gate or sdk, not ${args.store}`);
const config = args["retention-ms"] ? { retentionMs: Number(args["retention-ms"]) } : undefined;
const gate = args.store === "gate" ? await loadGate({ config }) : null;
const transportFor = (options) =>
  gate
    ? gatedTransport(gate, options)
    : new StreamableHTTPServerTransport({ ...options, eventStore: new InMemoryEventStore(), retryInterval: 1000 });
const app = createMcpExpressApp();
const sessions = new Map();

const { status: NOT_FOUND, code: SESSION_NOT_FOUND } = GATE_ERRORS["unknown-session"];
const notFound = (res) => res.status(NOT_FOUND).json({ jsonrpc: "2.0", error: { code: SESSION_NOT_FOUND, message: "Session not found" }, id: null });

app.post("/mcp", async (req, res) => {
  const id = req.headers["mcp-session-id"];
  const transport = id ? sessions.get(id) : undefined;
  if (transport) return transport.handleRequest(req, res, req.body);
  if (id) return notFound(res);
  const fresh = transportFor({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (sid) => sessions.set(sid, fresh),
  });
  fresh.onclose = () => fresh.sessionId && sessions.delete(fresh.sessionId);
  await mcpServer().connect(fresh);
  await fresh.handleRequest(req, res, req.body);
});

const existing = async (req, res) => {
  const id = req.headers["mcp-session-id"];
  if (!id) return res.status(400).json({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: no Mcp-Session-Id" }, id: null });
  const transport = sessions.get(id);
  if (!transport) return notFound(res);
  await transport.handleRequest(req, res);
};
app.get("/mcp", existing);
app.delete("/mcp", existing);

const listener = app.listen(Number(args.port), "127.0.0.1", () => {
  console.log(`listening ${listener.address().port}`);
});
