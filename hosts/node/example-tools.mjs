/**
 * The example servers' tools, the same as host-example's (`append`, `journal`, `countdown`,
 * `test_simple_text`, `test_reconnection`), whichever SDK serves them: `example.mjs`
 * (`@modelcontextprotocol/sdk` 1.32) and `example-v2.mjs` (`@modelcontextprotocol/server` 2.x)
 * hand a call its SDK's abort signal, notifier and stream closer.
 */
import { appendFileSync, readFileSync } from "node:fs";

/**
 * The tools over the journal file at `journal`: `{ TOOLS, callTool(params, call,
 * invalidParams) }`, where `call` is `{ signal, notify(notification), closeSSEStream? }` and
 * `invalidParams(message)` the SDK's `-32602` error to throw.
 */
export function exampleTools(journal) {
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
      return readFileSync(journal, "utf8").split("\n").slice(0, -1);
    } catch (e) {
      if (e.code === "ENOENT") return [];
      throw e;
    }
  };
  let journalCount = journalLines().length;

  const text = (s) => ({ content: [{ type: "text", text: s }] });
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const isCount = (v, max) => Number.isSafeInteger(v) && v >= 0 && v <= max;

  async function callTool(params, call, invalidParams) {
    const a = params.arguments ?? {};
    const bad = (why) => invalidParams(`${params.name}: ${why}`);
    switch (params.name) {
      case "append": {
        if (typeof a.text !== "string") throw bad("`text` must be a string");
        if (Buffer.byteLength(a.text) > MAX_APPEND_BYTES || /[\r\n]/.test(a.text)) throw bad("`text` must be one line of at most 64 KiB");
        if (journalCount >= MAX_JOURNAL_LINES) return { isError: true, ...text(`the journal is full (${MAX_JOURNAL_LINES} lines)`) };
        appendFileSync(journal, `${a.text}\n`);
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
          if (call.signal.aborted) return { isError: true, ...text("cancelled") };
          if (token !== undefined) {
            await call.notify({ method: "notifications/progress", params: { progressToken: token, progress: i, total: a.n } });
          }
        }
        return text("done");
      }
      case "test_simple_text":
        return text("This is a simple text response for testing.");
      case "test_reconnection":
        await sleep(100);
        call.closeSSEStream?.();
        await sleep(300);
        return text("Reconnection test completed successfully");
      default:
        throw invalidParams(`unknown tool: ${params.name}`);
    }
  }

  return { TOOLS, callTool };
}
