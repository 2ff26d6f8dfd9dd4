/**
 * Per-call cost of the Node package, next to the TypeScript SDK's example store, in one process:
 * recording a 128-byte notification (`storeEvent`: the SDK's `InMemoryEventStore`, the gate's
 * `GateEventStore`, and the bare `gate.emit`) and a resume that replays the last 10 of 100
 * events (`replayEventsAfter` on each store, and the bare `gate.reconnect`).
 *
 *   node bench.mjs [--quick]        # after `npm run build`; prints a markdown table
 */
import { parseArgs } from "node:util";
import { InMemoryEventStore } from "@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js";
import { loadGate } from "resume-gate";
import { GateEventStore } from "resume-gate/sdk";

const { values: args } = parseArgs({ options: { quick: { type: "boolean", default: false } } });
const BATCH = args.quick ? 200 : 20_000;
const SAMPLES = args.quick ? 3 : 15;

/** Median ns per call of `op` (awaited), over SAMPLES batches of BATCH calls after a warm-up. */
async function measure(op) {
  for (let i = 0; i < BATCH; i++) await op();
  const perCall = [];
  for (let s = 0; s < SAMPLES; s++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < BATCH; i++) await op();
    perCall.push(Number(process.hrtime.bigint() - t0) / BATCH);
  }
  perCall.sort((a, b) => a - b);
  return perCall[perCall.length >> 1];
}

const message = { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "" } };
message.params.data = "x".repeat(128 - JSON.stringify(message).length);
const noop = async () => {};

const gate = await loadGate();
const rows = [];

// Recording: the standalone stream of one session (no request context needed).
const sdkStore = new InMemoryEventStore();
let sdkStored = 0;
rows.push(["storeEvent, 128 B", "SDK InMemoryEventStore", await measure(async () => {
  if (++sdkStored % 100_000 === 0) sdkStore.events?.clear?.();
  await sdkStore.storeEvent("_GET_stream", message);
})]);
gate.openSession("bench-emit");
const gateStore = new GateEventStore(gate);
gateStore.bind("bench-emit");
rows.push(["storeEvent, 128 B", "resume-gate GateEventStore", await measure(() => gateStore.storeEvent("_GET_stream", message))]);
const data = JSON.stringify(message);
const standalone = gate.openStream("bench-emit", "standalone").stream;
rows.push(["storeEvent, 128 B", "resume-gate gate.emit (package API)", await measure(() => gate.emit("bench-emit", standalone, data))]);

// A resume replaying the last 10 of 100 events.
const sdkReplay = new InMemoryEventStore();
const sdkIds = [];
for (let i = 0; i < 100; i++) sdkIds.push(await sdkReplay.storeEvent("_GET_stream", message));
rows.push(["resume, 10 of 100 replayed", "SDK InMemoryEventStore", await measure(() => sdkReplay.replayEventsAfter(sdkIds[89], { send: noop }))]);
gate.openSession("bench-resume");
const replayStore = new GateEventStore(gate);
replayStore.bind("bench-resume");
const gateIds = [];
for (let i = 0; i < 100; i++) gateIds.push(await replayStore.storeEvent("_GET_stream", message));
let replayed = 0;
const send = async () => void replayed++;
rows.push(["resume, 10 of 100 replayed", "resume-gate GateEventStore", await measure(() => replayStore.replayEventsAfter(gateIds[89], { send }))]);
if (replayed % 10 !== 0 || replayed === 0) throw new Error(`the gate replayed ${replayed} events: not whole resumes of 10`);
rows.push(["resume, 10 of 100 replayed", "resume-gate gate.reconnect (package API)", await measure(() => {
  const d = gate.reconnect("bench-resume", gateIds[89], "standalone");
  if (d.kind !== "resume" || d.events.length !== 10) throw new Error("not a resume of 10");
})]);

const fmt = (ns) => (ns >= 1000 ? `${(ns / 1000).toFixed(2)} µs` : `${ns.toFixed(0)} ns`);
console.log(`Node ${process.version}, ${args.quick ? "quick run" : `${SAMPLES} samples of ${BATCH} calls`}, median per call\n`);
console.log("| operation | side | per call |\n|---|---|---:|");
for (const [op, side, ns] of rows) console.log(`| ${op} | ${side} | ${fmt(ns)} |`);
