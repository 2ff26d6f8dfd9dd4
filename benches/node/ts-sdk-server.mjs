/**
 * The TypeScript MCP SDK's reference Streamable HTTP server, as its own example
 * (`examples/server/simpleStreamableHttp.js`, sdk 1.32.2) builds it: `createMcpExpressApp`, one
 * `StreamableHTTPServerTransport` per session with the SDK's example `InMemoryEventStore`, POST,
 * GET and DELETE on `/mcp`. It serves the tools the end-to-end benchmark calls, with the same
 * semantics as host-example: `countdown {n, interval_ms}` (n progress notifications, then
 * "done") and `test_simple_text`. The example's per-request console logging is left out.
 *
 * With `--event-store redis://host:port`, each transport keeps its events in Redis Streams
 * instead (`redis-streams-event-store.mjs`); sessions stay in the process, as in the example.
 *
 *   node benches/node/ts-sdk-server.mjs --port 0     # prints "listening PORT" once it serves
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import * as z from "zod/v4";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";

import { RedisStreamsEventStore } from "./redis-streams-event-store.mjs";

const { values: args } = parseArgs({
  options: { port: { type: "string", default: "0" }, "event-store": { type: "string", default: "memory" } },
});
const redisEvents =
  args["event-store"] === "memory" ? undefined : await RedisStreamsEventStore.connect(args["event-store"]);

function mcpServer() {
  const server = new McpServer({ name: "ts-sdk reference server", version: "1.0.0" });
  server.registerTool(
    "countdown",
    {
      description: 'Sends n progress notifications, one every interval_ms, then returns "done"',
      inputSchema: { n: z.number().int().min(0).max(10000), interval_ms: z.number().int().min(0).max(60000).optional() },
    },
    async ({ n, interval_ms }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= n; i++) {
        await new Promise((resolve) => setTimeout(resolve, interval_ms ?? 100));
        if (token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: i, total: n },
          });
        }
      }
      return { content: [{ type: "text", text: "done" }] };
    },
  );
  server.registerTool("test_simple_text", { description: "Returns simple text content" }, async () => ({
    content: [{ type: "text", text: "This is a simple text response for testing." }],
  }));
  return server;
}

const app = createMcpExpressApp();
const sessions = new Map();

const notFound = (res) =>
  res.status(404).json({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null });

app.post("/mcp", async (req, res) => {
  const id = req.headers["mcp-session-id"];
  const transport = id ? sessions.get(id) : undefined;
  if (transport) {
    return transport.handleRequest(req, res, req.body);
  }
  if (id) {
    return notFound(res);
  }
  if (!isInitializeRequest(req.body)) {
    return res
      .status(400)
      .json({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: No valid session ID provided" }, id: null });
  }
  const fresh = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    eventStore: redisEvents ?? new InMemoryEventStore(),
    onsessioninitialized: (sid) => sessions.set(sid, fresh),
  });
  fresh.onclose = () => fresh.sessionId && sessions.delete(fresh.sessionId);
  await mcpServer().connect(fresh);
  await fresh.handleRequest(req, res, req.body);
});

const existing = async (req, res) => {
  const transport = sessions.get(req.headers["mcp-session-id"]);
  if (!transport) {
    return notFound(res);
  }
  await transport.handleRequest(req, res);
};
app.get("/mcp", existing);
app.delete("/mcp", existing);

const listener = app.listen(Number(args.port), "127.0.0.1", () => {
  console.log(`listening ${listener.address().port}`);
});
