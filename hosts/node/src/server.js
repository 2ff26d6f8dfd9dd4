/**
 * The gate inside `@modelcontextprotocol/server` 2.x: its `WebStandardStreamableHTTPServerTransport`
 * (web `Request` in, `Response` out) serves the 2025 era with sessions and an `EventStore`,
 * and the SDK's own `createMcpHandler` serves the stateless 2026-07-28 era, which has nothing
 * to resume. This is the shell around the shared adapter (`./gated.js`, which says how): it
 * reads a POST's body once (bounded), hands the gate's hook the request's parts, releases a
 * refused POST's claims when the SDK answers with an error status, and detaches the
 * response's streams when its body ends or the client goes away.
 *
 * - `gatedWebTransport(gate, options)`: one session's transport, the gate wired in; its
 *   `handleRequest(request, { parsedBody, authInfo })` is the hook.
 * - `gatedSessions(gate, factory, options)`: the 2025-era leg of an endpoint — every session's
 *   gated transport, by `Mcp-Session-Id`, a fresh one for each `initialize` — as the fetch-shaped
 *   handler the SDK's `isLegacyRequest` routing expects.
 */
import { randomUUID } from "node:crypto";
import { WebStandardStreamableHTTPServerTransport, isJSONRPCRequest } from "@modelcontextprotocol/server";
import { GateError, gateErrorAnswer } from "./index.js";
import * as gated from "./gated.js";

export { GateEventStore, RESULT_LOST } from "./gated.js";

/** Bytes of a POST body read (the SDK's own default bound); more is `413`, nothing parsed. */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** A session's `WebStandardStreamableHTTPServerTransport` whose resumability is the gate's. */
export function gatedWebTransport(gate, options = {}) {
  const store = new gated.GateEventStore(gate);
  const transport = new WebStandardStreamableHTTPServerTransport(gated.gatedOptions(gate, store, options, () => transport));
  gated.wireInternals(gated.assertInternals(transport, "@modelcontextprotocol/server (needs ~2.4)"), store);
  const sdkHandle = transport.handleRequest.bind(transport);
  const deps = { gate, store, transport, sdkHandle, generate: options.sessionIdGenerator, isRequest: isJSONRPCRequest };
  transport.gateEventStore = store;
  transport.handleRequest = (request, handleOptions) => handle(deps, request, handleOptions);
  return transport;
}

/** An answer (`{ status, headers, body }`) as a `Response`. */
const answered = ({ status, headers, body }) => new Response(body, { status, headers });

const json = (status, body, headers = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

/**
 * The request hook: the body read once (the SDK gets it parsed), the gate asked, then the
 * SDK; the response's body watched for its end.
 */
async function handle(deps, request, options = {}) {
  let body = options.parsedBody;
  let sdkRequest = request;
  if (request.method === "POST" && body === undefined) {
    const text = await readBounded(request);
    if (text === null) {
      const message = `Payload Too Large: the request body exceeds ${MAX_BODY_BYTES} bytes`;
      return json(413, { jsonrpc: "2.0", error: { code: -32600, message }, id: null });
    }
    try {
      body = JSON.parse(text);
    } catch {
      // The SDK answers a body that is not JSON (`-32700`): it gets the text as sent.
      sdkRequest = new Request(request.url, { method: "POST", headers: request.headers, body: text });
    }
  }
  const ctx = gated.newContext();
  const lastEventId = request.headers.get("last-event-id");
  const accept = request.headers.get("accept");
  const before = await gated.beforeSdk(deps, ctx, { method: request.method, accept, lastEventId, body });
  if (before.answer) {
    gated.detachAll(deps, ctx);
    return answered(before.answer);
  }
  if (before.cursor) {
    const headers = new Headers(request.headers);
    headers.set("last-event-id", before.cursor);
    sdkRequest = new Request(request.url, { method: request.method, headers });
  }
  const sdkOptions = body === undefined || sdkRequest !== request ? options : { ...options, parsedBody: before.body };
  let response;
  try {
    response = await gated.context.run(ctx, () => deps.sdkHandle(sdkRequest, sdkOptions));
  } finally {
    gated.afterSdk(deps, ctx);
  }
  if (response.status >= 400) gated.releaseRefused(deps, ctx);
  return whenBodyEnds(response, () => gated.detachAll(deps, ctx));
}

/** The request's body as text, or `null` past `MAX_BODY_BYTES` (read no further). */
async function readBounded(request) {
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** `response`, calling `ended` once when its body is done or cancelled (the client went away). */
function whenBodyEnds(response, ended) {
  if (!response.body) {
    ended();
    return response;
  }
  let once = false;
  const end = () => {
    if (!once) {
      once = true;
      ended();
    }
  };
  const reader = response.body.getReader();
  const body = new ReadableStream({
    async pull(controller) {
      try {
        const { value, done } = await reader.read();
        if (done) {
          end();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (e) {
        end();
        controller.error(e);
      }
    },
    cancel(reason) {
      end();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * The 2025-era leg of an endpoint: `(request, options) => Response` over one gated transport
 * per session, each connected to a fresh server from `factory` (the same factory
 * `createMcpHandler` takes). `options` are the transports' (without `eventStore`); the session
 * ids are random UUIDs unless `sessionIdGenerator` says otherwise.
 */
export function gatedSessions(gate, factory, options = {}) {
  const sessions = new Map();
  return async (request, handleOptions) => {
    const id = request.headers.get("mcp-session-id");
    const existing = id ? sessions.get(id) : undefined;
    if (existing) return existing.handleRequest(request, handleOptions);
    if (id) return answered(gateErrorAnswer(new GateError("unknown-session")));
    if (request.method !== "POST") {
      const error = { code: -32000, message: "Method not allowed: no Mcp-Session-Id" };
      return json(405, { jsonrpc: "2.0", error, id: null }, { Allow: "POST" });
    }
    const transport = gatedWebTransport(gate, {
      sessionIdGenerator: () => randomUUID(),
      ...options,
      onsessioninitialized: async (session) => {
        sessions.set(session, transport);
        await options.onsessioninitialized?.(session);
      },
    });
    transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
    await (await factory({ era: "legacy", requestInfo: request })).connect(transport);
    return transport.handleRequest(request, handleOptions);
  };
}
