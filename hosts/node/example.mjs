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
import { appendFileSync, readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";
import { GATE_ERRORS, loadGate } from "resume-gate";
import { gatedTransport } from "resume-gate/sdk";

const { values: args } = parseArgs({
  options: {
    port: { type: "string", default: "9000" },
    journal: { type: "string", default: "journal.txt" },
    store: { type: "string", default: "gate" },
    "retention-ms": { type: "string" },
  },
});

const MAX_APPEND_BYTES = 64 * 1024;
const MAX_JOURNAL_LINES = 1000;
const PAGE_LINES = 100;
const PAGE_BYTES = 256 * 1024;

const integer = (max, extra = {}) => ({ type: "integer", minimum: 0, maximum: max, ...extra });
const TOOLS = [
  {
    name: "append",
    description: "Appends a line to the journal and returns the new line count (not idempotent)",
    inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
  },
  {
    name: "journal",
    description: "Returns a page of the journal's lines (at most 100 lines or 256 KiB) and where the next starts",
    inputSchema: { type: "object", properties: { from: { type: "integer", minimum: 0 }, limit: integer(PAGE_LINES, { minimum: 1 }) } },
  },
  {
    name: "countdown",
    description: 'Sends n progress notifications, one every interval_ms, then returns "done"',
    inputSchema: { type: "object", properties: { n: integer(10_000), interval_ms: integer(60_000) }, required: ["n"] },
  },
  { name: "test_simple_text", description: "Returns simple text content", inputSchema: { type: "object", properties: {} } },
  {
    name: "test_reconnection",
    description: "Closes its SSE stream mid-call; the result arrives on the client's GET resume",
    inputSchema: { type: "object", properties: {} },
  },
];

const journalLines = () => {
  try {
    return readFileSync(args.journal, "utf8").split("\n").slice(0, -1);
  } catch (e) {
    if (e.code === "ENOENT") return [];
    throw e;
  }
};
let journalCount = journalLines().length;

const text = (s) => ({ content: [{ type: "text", text: s }] });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const isCount = (v, max) => Number.isSafeInteger(v) && v >= 0 && v <= max;

async function callTool({ params }, extra) {
  const a = params.arguments ?? {};
  const bad = (why) => new McpError(ErrorCode.InvalidParams, `${params.name}: ${why}`);
  switch (params.name) {
    case "append": {
      if (typeof a.text !== "string") throw bad("`text` must be a string");
      if (Buffer.byteLength(a.text) > MAX_APPEND_BYTES || /[\r\n]/.test(a.text)) throw bad("`text` must be one line of at most 64 KiB");
      if (journalCount >= MAX_JOURNAL_LINES) return { isError: true, ...text(`the journal is full (${MAX_JOURNAL_LINES} lines)`) };
      appendFileSync(args.journal, `${a.text}\n`);
      journalCount += 1;
      return { ...text(String(journalCount)), structuredContent: { lines: journalCount } };
    }
    case "journal": {
      const from = a.from ?? 0;
      const limit = a.limit ?? PAGE_LINES;
      if (!isCount(from, Number.MAX_SAFE_INTEGER)) throw bad("`from` must be a non-negative integer");
      if (!isCount(limit, PAGE_LINES) || limit < 1) throw bad("`limit` must be an integer from 1 to 100");
      const all = journalLines();
      const page = all.slice(from, from + limit);
      let bytes = 0;
      let keep = 0;
      for (const line of page) {
        bytes += Buffer.byteLength(line);
        if (bytes > PAGE_BYTES) break;
        keep += 1;
      }
      const lines = page.slice(0, Math.min(Math.max(keep, 1), page.length));
      const end = from + lines.length;
      const next = end < all.length ? end : null;
      return { ...text(lines.join("\n")), structuredContent: { lines, from, total: all.length, next } };
    }
    case "countdown": {
      if (!isCount(a.n, 10_000)) throw bad("`n` must be an integer from 0 to 10000");
      if (a.interval_ms !== undefined && !isCount(a.interval_ms, 60_000)) throw bad("`interval_ms` must be an integer from 0 to 60000");
      const token = params._meta?.progressToken;
      for (let i = 1; i <= a.n; i++) {
        await sleep(a.interval_ms ?? 100);
        if (extra.signal.aborted) return { isError: true, ...text("cancelled") };
        if (token !== undefined) {
          await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: i, total: a.n } });
        }
      }
      return text("done");
    }
    case "test_simple_text":
      return text("This is a simple text response for testing.");
    case "test_reconnection":
      await sleep(100);
      extra.closeSSEStream?.();
      await sleep(300);
      return text("Reconnection test completed successfully");
    default:
      throw new McpError(ErrorCode.InvalidParams, `unknown tool: ${params.name}`);
  }
}

function mcpServer() {
  const server = new Server({ name: "resume-gate node example", version: "0.1.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, callTool);
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
