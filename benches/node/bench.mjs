/**
 * Side-by-side benchmark, in one Node process, of two MCP resumability stores:
 *
 *  - the TypeScript MCP SDK's example `InMemoryEventStore` (what SDK users copy), and
 *  - the resume-gate component (world `gate-memory`), transpiled with jco at start-up.
 *
 * The workloads are those of the Rust criterion benches (benches/benches/gate.rs), so the numbers
 * line up: emit cost on one and on 1000 streams, the cost of a reconnect that replays k = 10
 * events with N events buffered, and (gate only) the cost of each stale-cursor verdict.
 *
 *   node benches/node/bench.mjs --out results.json [--quick] [--wasm path/to/resume_gate.wasm]
 *
 * Each case warms up, then takes samples of a batch of operations timed with
 * `process.hrtime.bigint()`; it reports the median, min and max ns per operation. Every
 * operation whose result says which path it took is checked, so a case never silently measures
 * another path.
 */
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const { values: args } = parseArgs({
  options: {
    out: { type: "string" },
    quick: { type: "boolean", default: false },
    wasm: { type: "string", default: resolve(here, "../../target/component/resume_gate.wasm") },
  },
});
const QUICK = args.quick;
const START = process.hrtime.bigint();

const TS = "ts-sdk InMemoryEventStore (Node)";
const GATE = "component via jco (Node)";

// --- sides ---------------------------------------------------------------------------------

const version = async (pkg) =>
  JSON.parse(await readFile(join(here, "node_modules", pkg, "package.json"), "utf8")).version;

console.error(`side: ${TS}, @modelcontextprotocol/sdk ${await version("@modelcontextprotocol/sdk")}`);
console.error(
  `side: ${GATE}, @bytecodealliance/jco ${await version("@bytecodealliance/jco")}, ` +
    `preview2-shim ${await version("@bytecodealliance/preview2-shim")}, component ${args.wasm}`,
);
console.error(`node ${process.version}${QUICK ? " (quick run)" : ""}`);

const { InMemoryEventStore } = await import("@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js");
const gate = await loadComponent(args.wasm);

/** Transpiles the component into gen/ and imports its `gate` interface. */
async function loadComponent(wasmPath) {
  const { transpile } = await import("@bytecodealliance/jco");
  const outDir = join(here, "gen");
  const { files } = await transpile(await readFile(wasmPath), { name: "resume_gate", noTypescript: true });
  await rm(outDir, { recursive: true, force: true });
  for (const [name, bytes] of Object.entries(files)) {
    await mkdir(dirname(join(outDir, name)), { recursive: true });
    await writeFile(join(outDir, name), bytes);
  }
  return (await import(pathToFileURL(join(outDir, "resume_gate.js")).href)).gate;
}

// --- measuring -----------------------------------------------------------------------------

const WARMUP_NS = QUICK ? 5e6 : 200e6;
const BATCH_NS = QUICK ? 1e6 : 20e6;
const SAMPLES = QUICK ? 3 : 30;
const CASE_CAP_NS = 10e9;
const results = [];

/**
 * Times `op` (awaited when `async`). `reset`, when given, runs untimed before every batch;
 * batches never exceed `maxOps` operations.
 */
async function measure(side, workload, { op, async = false, reset, maxOps = Infinity, notes = null }) {
  const batch = async (n) => {
    reset?.(n);
    const t0 = process.hrtime.bigint();
    if (async) for (let i = 0; i < n; i++) await op();
    else for (let i = 0; i < n; i++) op();
    return Number(process.hrtime.bigint() - t0);
  };
  // Warm up, doubling the batch until it lasts long enough to time.
  let n = 1;
  let spent = 0;
  let last;
  do {
    last = await batch(n);
    spent += last;
    if (last < BATCH_NS / 2 && n < maxOps) n = Math.min(maxOps, n * 2);
  } while (spent < WARMUP_NS);
  const perOp = last / n;
  const ops = Math.max(1, Math.min(maxOps, Math.round(BATCH_NS / perOp)));
  const samples = Math.max(1, Math.min(SAMPLES, Math.floor(CASE_CAP_NS / (perOp * ops))));
  const perOpNs = [];
  for (let s = 0; s < samples; s++) perOpNs.push((await batch(ops)) / ops);
  perOpNs.sort((a, b) => a - b);
  const mid = perOpNs.length >> 1;
  const median = perOpNs.length % 2 ? perOpNs[mid] : (perOpNs[mid - 1] + perOpNs[mid]) / 2;
  if (samples < SAMPLES) notes = [notes, `${samples} samples: capped to keep the case near 10 s`].filter(Boolean).join("; ");
  const r = { side, workload, median_ns: median, min_ns: perOpNs[0], max_ns: perOpNs.at(-1), samples, ops_per_sample: ops, notes };
  results.push(r);
  const elapsed = (Number(process.hrtime.bigint() - START) / 1e9).toFixed(1);
  console.error(`  ${workload} [${side}]: ${fmt(median)} (at ${elapsed} s)`);
  return r;
}

function fmt(ns) {
  if (ns >= 1e9) return `${(ns / 1e9).toFixed(2)} s`;
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  if (ns >= 1e3) return `${(ns / 1e3).toFixed(2)} µs`;
  return `${ns.toFixed(0)} ns`;
}

function check(ok, what) {
  if (!ok) throw new Error(`benchmark measured the wrong path: ${what}`);
}

// --- shared inputs -------------------------------------------------------------------------

/** A JSON-RPC notification whose serialization is exactly `size` bytes. */
function message(size) {
  const msg = { jsonrpc: "2.0", method: "notifications/message", params: { data: "" } };
  msg.params.data = "x".repeat(size - JSON.stringify(msg).length);
  return msg;
}

const STANDALONE = { tag: "standalone" };
const request = (n) => ({ tag: "request", val: { tag: "number", val: BigInt(n) } });
const utf8 = (s) => new TextEncoder().encode(s);

function configureGate(overrides) {
  gate.configure({ ...gate.defaultConfig(), ...overrides });
}

/** Reopens `session` (dropping its streams) and opens request stream 1 on it. */
function freshStream(session) {
  gate.openSession(session);
  return gate.openStream(session, request(1));
}

const PAYLOADS = [128, 4096];
const RESUME_NS = QUICK ? [100, 10_000] : [100, 10_000, 1_000_000];
const K = 10;
const TS_RECREATE = 100_000;
const TS_EMIT_NOTE =
  "the store never evicts: it grows without bound (re-created every 100k emits, untimed); " +
  "it keeps a reference to the message object and never serializes it, so the payload size barely matters";

/** A TS store for emits, re-created (untimed, before a batch) rather than grow past 100k events. */
function tsEmitter() {
  let store;
  let stored = 0;
  return {
    reset: (batch) => {
      if (!store || stored + batch > TS_RECREATE) [store, stored] = [new InMemoryEventStore(), 0];
    },
    emit: (stream, msg) => (stored++, store.storeEvent(stream, msg)),
  };
}

// --- 1. emit on one stream -----------------------------------------------------------------

for (const p of PAYLOADS) {
  const msg = message(p);
  const data = JSON.stringify(msg);

  const ts = tsEmitter();
  await measure(TS, `emit/one-stream/${p}`, {
    async: true,
    reset: ts.reset,
    maxOps: TS_RECREATE,
    op: () => ts.emit("bench-stream", msg),
    notes: TS_EMIT_NOTE,
  });

  configureGate({ maxEventsPerStream: 1024, maxBytesPerStream: BigInt(Math.max(1024 * p, 1 << 20)) });
  const { stream } = freshStream("bench-session");
  await measure(GATE, `emit/one-stream/${p}`, {
    op: () => gate.onEmit("bench-session", stream, data),
    notes: "bounded: 1024 events per stream, the oldest evicted once full",
  });
  gate.endSession("bench-session");
}

// --- 2. emit round-robin over 1000 streams of 100 sessions ---------------------------------

for (const p of PAYLOADS) {
  const msg = message(p);
  const data = JSON.stringify(msg);
  const sessions = Array.from({ length: 100 }, (_, s) => `bench-session-${s}`);

  const ids = sessions.flatMap((s) => Array.from({ length: 10 }, (_, r) => `${s}-stream-${r + 1}`));
  const ts = tsEmitter();
  let next = 0;
  await measure(TS, `emit/1000-streams-100-sessions/${p}`, {
    async: true,
    reset: ts.reset,
    maxOps: TS_RECREATE,
    op: () => ts.emit(ids[next++ % 1000], msg),
    notes: TS_EMIT_NOTE,
  });

  // 1000 streams of 1024 events of 4 KiB would not fit a 32-bit memory: bound bytes at 1 MiB.
  const maxBytes = 1 << 20;
  configureGate({ maxEventsPerStream: 1024, maxBytesPerStream: BigInt(maxBytes) });
  const streams = [];
  for (const s of sessions) {
    gate.openSession(s);
    for (let r = 1; r <= 10; r++) streams.push([s, gate.openStream(s, request(r)).stream]);
  }
  // Fill every buffer to its bound first, so the timed emits evict (the steady state).
  const perStream = Math.min(1024, Math.ceil(maxBytes / data.length));
  if (!QUICK) for (let i = 0; i < perStream; i++) for (const [s, st] of streams) gate.onEmit(s, st, data);
  next = 0;
  await measure(GATE, `emit/1000-streams-100-sessions/${p}`, {
    op: () => {
      const [s, st] = streams[next++ % 1000];
      gate.onEmit(s, st, data);
    },
    notes: QUICK
      ? "buffers not pre-filled (quick run)"
      : `bounds 1024 events and ${maxBytes} B per stream; every buffer pre-filled to its bound, so each emit evicts`,
  });
  for (const s of sessions) gate.endSession(s);
}

// --- 3. reconnect replaying k = 10 of N buffered events ------------------------------------

for (const n of RESUME_NS) {
  const msg = message(128);
  const data = JSON.stringify(msg);

  const store = new InMemoryEventStore();
  for (let i = 0; i < n; i++) await store.storeEvent("bench-stream", msg);
  // The store replays in the order of its ids sorted with localeCompare, not in the order they
  // were stored (ids of one millisecond order by a random suffix): take the cursor in its order.
  const order = [...store.events.keys()].sort((a, b) => a.localeCompare(b));
  const cursor = order[n - K - 1];
  let sent = 0;
  const send = async () => void sent++;
  await measure(TS, `resume-k10/128/${n}`, {
    async: true,
    op: async () => {
      sent = 0;
      await store.replayEventsAfter(cursor, { send });
      check(sent === K, `replayed ${sent} events, not ${K}`);
    },
    notes: "each replay copies and sorts every stored event (all streams) with localeCompare: O(N log N)",
  });

  configureGate({
    maxEventsPerStream: Math.max(n, 1024),
    maxBytesPerStream: BigInt(Math.max(n * 128 * 2, 1 << 20)),
  });
  const opened = freshStream("bench-session");
  let gateCursor;
  for (let i = 0; i < n; i++) {
    const event = gate.onEmit("bench-session", opened.stream, data);
    if (i === n - K - 1) gateCursor = utf8(event.id);
  }
  gate.onDetach("bench-session", opened.stream, opened.attachment);
  await measure(GATE, `resume-k10/128/${n}`, {
    op: () => {
      const d = gate.onReconnect("bench-session", gateCursor, STANDALONE);
      check(d.tag === "resume" && d.val.events.length === K, `got ${d.tag} with ${d.val.events?.length} events`);
    },
    notes: "detached once; every reconnect takes the stream over again",
  });
  gate.endSession("bench-session");
}

// --- 4. stale cursors ----------------------------------------------------------------------

{
  const store = new InMemoryEventStore();
  const msg = message(128);
  for (let i = 0; i < 10_000; i++) await store.storeEvent("bench-stream", msg);
  let sent = 0;
  const send = async () => void sent++;
  await measure(TS, "stale/unknown-id", {
    async: true,
    op: async () => {
      const stream = await store.replayEventsAfter("bench-stream_0_unknown", { send });
      check(stream === "" && sent === 0, "an unknown id replayed something");
    },
    notes: "10000 events stored; an id it never issued: a Map lookup, then it returns '' without sending",
  });
}

/**
 * Reopens `bench-session` with a request stream of 4 events and its terminal, and opens
 * `other-session`. Returns a cursor (the third event) and the terminal event's id, as bytes.
 */
function staleSetup() {
  const opened = freshStream("bench-session");
  const ids = [1, 2, 3, 4].map(() => gate.onEmit("bench-session", opened.stream, "x").id);
  const terminal = gate.onTerminal("bench-session", opened.stream, "done").id;
  gate.openSession("other-session");
  return { cursor: utf8(ids[2]), terminal: utf8(terminal) };
}

const fresh = (reason) => (d) => check(d.tag === "fresh" && d.val.reason === reason, `got ${d.tag} ${d.val.reason ?? ""}, not ${reason}`);

{
  // Default bounds, as in the Rust benches: every verdict opens a fresh standalone stream that
  // supersedes the previous one, so the session sits at its stream cap and each call drops its
  // oldest tombstone (the steady state of a session that keeps reconnecting).
  configureGate({});
  const cap = gate.defaultConfig().maxStreamsPerSession;
  let s = staleSetup();
  const malformed = utf8("rg1.zz");
  const isMalformed = fresh("malformed");
  await measure(GATE, "stale/malformed", {
    op: () => isMalformed(gate.onReconnect("bench-session", malformed, STANDALONE)),
    notes: `default bounds; the session at its cap of ${cap} streams`,
  });
  s = staleSetup();
  const isOther = fresh("other-session");
  await measure(GATE, "stale/other-session", {
    op: () => isOther(gate.onReconnect("other-session", s.cursor, STANDALONE)),
    notes: `default bounds; the session at its cap of ${cap} streams`,
  });

  // These two need the cursor's stream to stay listed (and `post` opens a live stream per call,
  // which is never dropped): raise the cap, and set the session up anew before every batch.
  const batchCap = 1000;
  configureGate({ maxStreamsPerSession: 1_000_000 });
  const perBatch = `max-streams-per-session 1000000; the session set up anew before each batch (at most ${batchCap} calls)`;
  const isCompleted = fresh("completed");
  await measure(GATE, "stale/completed", {
    reset: () => (s = staleSetup()),
    maxOps: batchCap,
    op: () => isCompleted(gate.onReconnect("bench-session", s.terminal, STANDALONE)),
    notes: perBatch,
  });
  const isPost = fresh("post-never-resumes");
  let id = 0;
  await measure(GATE, "stale/post-never-resumes", {
    reset: () => ((s = staleSetup()), (id = 1)),
    maxOps: batchCap,
    op: () => isPost(gate.onReconnect("bench-session", s.cursor, request(++id))),
    notes: perBatch,
  });
  gate.endSession("bench-session");
  gate.endSession("other-session");
}

// --- output --------------------------------------------------------------------------------

if (args.out) await writeFile(args.out, JSON.stringify(results, null, 2) + "\n");

const rows = results.map((r) => [r.workload, r.side, fmt(r.median_ns), fmt(r.min_ns), fmt(r.max_ns), `${r.samples}×${r.ops_per_sample}`]);
const head = ["workload", "side", "median", "min", "max", "samples×ops"];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) => cells.map((c, i) => (i >= 2 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join("  ");
console.log(line(head));
for (const r of rows) console.log(line(r));
