/**
 * The official TypeScript MCP client (`@modelcontextprotocol/sdk` 1.32.2, its
 * `StreamableHTTPClientTransport` over Node's `fetch`, whose undici pool keeps the connection
 * alive) making sequential `tools/call`s, each timed from `callTool` to its result.
 *
 *   node benches/node/ts-client-bench.mjs --url http://127.0.0.1:PORT/mcp --calls 500 \
 *     [--warm-up 50] [--tool countdown] [--arguments '{"n":0}']
 *
 * Prints one JSON object: {calls, p50_us, p99_us, times_us} (every call's time, in the order
 * made). Fails if a call errors. Ends its session (DELETE) before it exits.
 */
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    calls: { type: "string", default: "500" },
    "warm-up": { type: "string", default: "50" },
    tool: { type: "string", default: "countdown" },
    arguments: { type: "string", default: '{"n":0}' },
  },
});

const client = new Client({ name: "resume-gate-e2e-bench", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(args.url));
await client.connect(transport);
const call = { name: args.tool, arguments: JSON.parse(args.arguments) };

const call_once = async () => {
  const start = process.hrtime.bigint();
  const result = await client.callTool(call);
  const elapsed = Number(process.hrtime.bigint() - start) / 1e3;
  if (result.isError || !Array.isArray(result.content)) {
    throw new Error(`${args.tool}: ${JSON.stringify(result)}`);
  }
  return elapsed;
};

for (let i = 0; i < Number(args["warm-up"]); i++) {
  await call_once();
}
const times = [];
for (let i = 0; i < Number(args.calls); i++) {
  times.push(await call_once());
}
const sorted = [...times].sort((a, b) => a - b);
const at = (p) => sorted[Math.round((sorted.length - 1) * p)];
console.log(JSON.stringify({ calls: times.length, p50_us: at(0.5), p99_us: at(0.99), times_us: times }));
await transport.terminateSession();
await client.close();
