// What a TypeScript user writes against the package's declarations: `npm run check-types`
// (tsc) fails when `src/*.d.ts` stop describing the API the tests run.
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import {
  GATE_ERRORS,
  GateError,
  RETRY_AFTER_SECONDS,
  gateErrorAnswer,
  loadGate,
  memoryKeyValue,
  type Decision,
  type Event,
  type Gate,
} from "resume-gate";
import { GateEventStore, RESULT_LOST, gatedTransport } from "resume-gate/sdk";
import { Server, createMcpHandler, isLegacyRequest } from "@modelcontextprotocol/server";
import { gatedSessions, gatedWebTransport } from "resume-gate/server";

async function serve(): Promise<void> {
  const gate: Gate = await loadGate({ config: { maxEventsPerStream: 64 } });
  const shared = await loadGate({ world: "kv", keyvalue: memoryKeyValue({ label: "demo" }) });
  shared.openSession("s");
  const { epoch } = gate.openSession("s");
  const opened = gate.openStream("s", { request: 1 });
  const first: Event = gate.emit("s", opened.stream, "{}");
  const last: Event = gate.terminal("s", opened.stream, "{}");
  const decision: Decision = gate.reconnect("s", first.id, "standalone");
  if (decision.kind === "resume") {
    const seqs: number[] = decision.events.map((e) => e.seq);
    console.log(seqs, decision.includesTerminal, decision.stranded, epoch, last.terminal);
  } else {
    console.log(decision.reason, decision.opened.priming.id);
  }
  try {
    gate.openStream("s", { request: 1 });
  } catch (e) {
    if (e instanceof GateError) {
      const answer = gateErrorAnswer(e, 1);
      console.log(answer.status, answer.body, e.rpcCode, GATE_ERRORS[e.code].status, RETRY_AFTER_SECONDS);
    }
  }
  const transport = gatedTransport(gate, { sessionIdGenerator: () => randomUUID() });
  const store: GateEventStore = transport.gateEventStore;
  await new McpServer({ name: "typed", version: "1.0.0" }).connect(transport);
  console.log(store.session, RESULT_LOST, gate.counters().fresh.unknown, gate.collectGarbage().removed);
}

/** The SDK 2.x: one session's transport, and both eras on one endpoint. */
async function serveV2(gate: Gate): Promise<(request: Request) => Promise<Response>> {
  const factory = () => new Server({ name: "typed", version: "1.0.0" }, { capabilities: { tools: {} } });
  const transport = gatedWebTransport(gate, { sessionIdGenerator: () => randomUUID() });
  await factory().connect(transport);
  const viaStore: GateEventStore = transport.gateEventStore;
  console.log(viaStore.session);
  const sessions = gatedSessions(gate, factory);
  const modern = createMcpHandler(factory, { legacy: "reject" });
  return async (request) => ((await isLegacyRequest(request)) ? sessions(request) : modern.fetch(request));
}

void serve;
void serveV2;
