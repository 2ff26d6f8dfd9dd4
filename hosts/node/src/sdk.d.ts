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
  /** A cancelled request (`notifications/cancelled`) gets no response: its stream stops waiting for it. */
  forgetRequest(requestId: string | number): void;
  /** Forgets the gate stream `stream` (its request was refused and the stream released). */
  forgetStream(stream: bigint): void;
  /** Records `message` on the stream of the current POST without the SDK (a refused batch request's error). */
  recordAside(streamId: string, message: unknown): string | undefined;
  storeEvent: EventStore["storeEvent"];
  replayEventsAfter: EventStore["replayEventsAfter"];
}

/** A `StreamableHTTPServerTransport` whose resumability is the gate's (options without `eventStore`). */
export function gatedTransport(gate: Gate, options: Omit<StreamableHTTPServerTransportOptions, "eventStore">): StreamableHTTPServerTransport & { gateEventStore: GateEventStore };

export function assertSupportedSdk(transport: StreamableHTTPServerTransport): unknown;
