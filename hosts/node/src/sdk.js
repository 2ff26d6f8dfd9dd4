/**
 * The gate inside `@modelcontextprotocol/sdk` 1.32's `StreamableHTTPServerTransport` (Node's
 * `req`/`res`): the shell around the shared adapter (`./gated.js`, which says how). It moves a
 * request's parts to the gate's hook, writes a refusal, releases a refused POST's claims when
 * the SDK writes an error status, and detaches the response's streams when it closes.
 *
 * `gatedTransport` builds the transport with the gate wired in; its `handleRequest` is the hook.
 */
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isJSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import * as gated from "./gated.js";

export { GateEventStore, RESULT_LOST } from "./gated.js";

/** The SDK internals the adapter uses exist (`@modelcontextprotocol/sdk` ~1.32). */
export function assertSupportedSdk(transport) {
  const inner = gated.assertInternals(transport._webStandardTransport, "@modelcontextprotocol/sdk (needs ~1.32)");
  if (!(inner._resumableStreams instanceof Set)) throw new Error("resume-gate: this @modelcontextprotocol/sdk is not supported (needs ~1.32)");
  return inner;
}

/**
 * A `StreamableHTTPServerTransport` whose resumability is the gate's: pass the options you
 * would give the SDK (without `eventStore`); call `handleRequest(req, res, req.body)` as usual
 * (the parsed body is required for POSTs).
 */
export function gatedTransport(gate, options = {}) {
  const store = new gated.GateEventStore(gate);
  const transport = new StreamableHTTPServerTransport(gated.gatedOptions(gate, store, options, () => transport));
  const inner = assertSupportedSdk(transport);
  gated.wireInternals(inner, store);
  const sdkHandle = transport.handleRequest.bind(transport);
  const deps = { gate, store, transport, sdkHandle, generate: options.sessionIdGenerator, isRequest: isJSONRPCRequest };
  transport.gateEventStore = store;
  transport.handleRequest = (req, res, body) => handle(deps, req, res, body);
  return transport;
}

/**
 * The request hook: asks the gate what the SDK cannot, then lets the SDK serve. If the SDK
 * refuses the POST before running anything (an HTTP error status), the claims are released
 * before the refusal is written.
 */
async function handle(deps, req, res, body) {
  const ctx = gated.newContext();
  const writeHead = res.writeHead;
  res.writeHead = function (status, ...rest) {
    if (status >= 400) gated.releaseRefused(deps, ctx);
    return writeHead.call(this, status, ...rest);
  };
  res.on("close", () => {
    if (res.statusCode >= 400) gated.releaseRefused(deps, ctx);
    gated.detachAll(deps, ctx);
  });
  const lastEventId = req.headers["last-event-id"];
  const before = await gated.beforeSdk(deps, ctx, { method: req.method, accept: req.headers.accept, lastEventId, body });
  if (before.answer) {
    if (res.headersSent) return res.end();
    const { status, headers, body: text } = before.answer;
    return res.writeHead(status, headers).end(text);
  }
  if (before.cursor) setHeader(req, "last-event-id", before.cursor);
  try {
    await gated.context.run(ctx, () => deps.sdkHandle(req, res, before.body));
  } finally {
    gated.afterSdk(deps, ctx);
  }
}

/** Replaces a request header, in both forms Node keeps (the SDK reads `rawHeaders`). */
function setHeader(req, name, value) {
  const raw = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i].toLowerCase() !== name) raw.push(req.rawHeaders[i], req.rawHeaders[i + 1]);
  }
  req.rawHeaders.splice(0, req.rawHeaders.length, ...raw, name, value);
  req.headers[name] = value;
}
