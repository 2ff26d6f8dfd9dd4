import type { StreamableHTTPServerTransport, StreamableHTTPServerTransportOptions } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { EventStore } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Gate } from "./index.js";

export const RESULT_LOST: -32001;

/** The SDK's `EventStore` for one session's transport, recording through the gate. */
export class GateEventStore implements EventStore {
  constructor(gate: Gate);
  readonly session: string | null;
  bind(session: string): void;
  release(): void;
  storeEvent: EventStore["storeEvent"];
  replayEventsAfter: EventStore["replayEventsAfter"];
}

/** A `StreamableHTTPServerTransport` whose resumability is the gate's (options without `eventStore`). */
export function gatedTransport(gate: Gate, options: Omit<StreamableHTTPServerTransportOptions, "eventStore">): StreamableHTTPServerTransport & { gateEventStore: GateEventStore };

export function assertSupportedSdk(transport: StreamableHTTPServerTransport): unknown;
