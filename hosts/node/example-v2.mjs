/**
 * The same MCP server on the official TypeScript SDK 2.x (`@modelcontextprotocol/server` 2.4),
 * serving host-example's tools at http://127.0.0.1:PORT/mcp in both protocol eras, wired as
 * the SDK documents for a sessionful 2025 deployment beside its 2026-07-28 entry: a request
 * `isLegacyRequest` classifies as 2025-era goes to the gate's sessions (`gatedSessions`: one
 * `WebStandardStreamableHTTPServerTransport` per session, the gate as its event store); every
 * other request to `createMcpHandler(factory, { legacy: "reject" })`, which serves the
 * stateless era (nothing to resume there). Node's `http` serves it through `toNodeHandler`.
 *
 *   node hosts/node/example-v2.mjs --port 9000 [--journal journal.txt] [--retention-ms 300]
 *
 * Prints `listening PORT` once it serves.
 */
import { createServer } from "node:http";
import { parseArgs } from "node:util";
import { ProtocolError, Server, createMcpHandler, isLegacyRequest } from "@modelcontextprotocol/server";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { loadGate } from "resume-gate";
import { gatedSessions } from "resume-gate/server";
import { exampleTools } from "./example-tools.mjs";

const { values: args } = parseArgs({
  options: {
    port: { type: "string", default: "9000" },
    journal: { type: "string", default: "journal.txt" },
    "retention-ms": { type: "string" },
  },
});

const { TOOLS, callTool } = exampleTools(args.journal);
const INVALID_PARAMS = -32602;
const invalidParams = (message) => new ProtocolError(INVALID_PARAMS, message);

/** A server for one serving unit (a 2025 session, or one 2026-07-28 request): the same tools. */
function factory() {
  const server = new Server({ name: "resume-gate node example (SDK 2.x)", version: "0.1.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler("tools/list", () => ({ tools: TOOLS }));
  server.setRequestHandler("tools/call", (request, ctx) =>
    callTool(
      request.params,
      { signal: ctx.mcpReq.signal, notify: (n) => ctx.mcpReq.notify(n), closeSSEStream: ctx.http?.closeSSE },
      invalidParams,
    ),
  );
  return server;
}

const config = args["retention-ms"] ? { retentionMs: Number(args["retention-ms"]) } : undefined;
const gate = await loadGate({ config });
const sessions = gatedSessions(gate, factory);
const modern = createMcpHandler(factory, { legacy: "reject" });
const endpoint = {
  fetch: async (request, options) =>
    (await isLegacyRequest(request, options?.parsedBody)) ? sessions(request, options) : modern.fetch(request, options),
};
const serve = toNodeHandler(endpoint);

const listener = createServer((req, res) => {
  if (new URL(req.url ?? "/", "http://localhost").pathname !== "/mcp") return res.writeHead(404).end();
  serve(req, res);
});
listener.listen(Number(args.port), "127.0.0.1", () => {
  console.log(`listening ${listener.address().port}`);
});
