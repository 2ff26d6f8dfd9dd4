import type {
  McpHandlerRequestOptions,
  McpServerFactory,
  WebStandardStreamableHTTPServerTransport,
  WebStandardStreamableHTTPServerTransportOptions,
} from "@modelcontextprotocol/server";
import type { Gate } from "./index.js";
import { GateEventStore, RESULT_LOST } from "./sdk.js";

export { GateEventStore, RESULT_LOST };

/** Bytes of a POST body the hook reads; more is `413`. */
export const MAX_BODY_BYTES: number;

/** A session's `WebStandardStreamableHTTPServerTransport` whose resumability is the gate's (options without `eventStore`). */
export function gatedWebTransport(
  gate: Gate,
  options: Omit<WebStandardStreamableHTTPServerTransportOptions, "eventStore">,
): WebStandardStreamableHTTPServerTransport & { gateEventStore: GateEventStore };

/**
 * The 2025-era leg of an endpoint: one gated transport per session, each connected to a fresh
 * server from `factory`; route to it the requests `isLegacyRequest` classifies as legacy.
 */
export function gatedSessions(
  gate: Gate,
  factory: McpServerFactory,
  options?: Omit<WebStandardStreamableHTTPServerTransportOptions, "eventStore">,
): (request: Request, options?: McpHandlerRequestOptions) => Promise<Response>;
