/**
 * The gate inside `@modelcontextprotocol/sdk` 1.32's `StreamableHTTPServerTransport`.
 *
 * The SDK's `EventStore` sees a stream id and a message, nothing more: no session, no JSON-RPC
 * request id, no HTTP request. So the adapter has two halves:
 *
 * - `GateEventStore`, one per transport (one session): `storeEvent` records through the gate
 *   and returns the id the gate minted; `replayEventsAfter` writes what the gate decided.
 * - A request hook, `handle`, around `transport.handleRequest`: it sees what the store
 *   cannot (the session, the request ids a POST carries, `Last-Event-ID`, the connection's
 *   end) and asks the gate *before* the SDK answers, so that errors get their own status
 *   (a duplicate request id `400`, a full store `503`), a stale cursor becomes a fresh stream
 *   (never the SDK's `400`/`500` for an id it does not know), and a stranded request gets its
 *   `-32001` error. It hands the SDK its request context through `AsyncLocalStorage`.
 *
 * `gatedTransport` builds the transport with both wired in; its `handleRequest` is the hook.
 *
 * What the SDK's interfaces cannot express is done through three of its internals, checked at
 * start-up (`assertSupportedSdk`): writing a priming event with empty data on a fresh stream
 * (`writeSSEEvent` is wrapped for the gate's priming frames), closing a resumed response
 * after its terminal event, and replacing the session's standalone GET stream instead of
 * answering `409` (both via the transport's stream map).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { GateError, toRequestId } from "./index.js";

const context = new AsyncLocalStorage();
const STANDALONE = "_GET_stream";
/** A message the wrapped `writeSSEEvent` writes as a priming frame: an id, `retry`, empty data. */
const PRIMING = Symbol("resume-gate priming");
/** JSON-RPC error for a request whose result was lost with its stream. */
export const RESULT_LOST = -32001;

/** Sessions of each gate: to close the transport of a session the gate reclaimed. */
const transportsOf = new WeakMap();

/** An `EventStore` for one session's transport, recording through `gate`. */
export class GateEventStore {
  #gate;
  #session = null;
  /** SDK stream id → `{ stream, outstanding }` for live request streams. */
  #streams = new Map();
  /** Gate stream number (as a string) → SDK stream id. */
  #sdkIds = new Map();
  #standalone = null;

  constructor(gate) {
    this.#gate = gate;
  }

  get session() {
    return this.#session;
  }

  /** Binds the store to its session (the transport's `onsessioninitialized`). */
  bind(session) {
    this.#session = session;
  }

  /** Forgets the session's streams (after DELETE or a close). */
  release() {
    this.#streams.clear();
    this.#sdkIds.clear();
    this.#standalone = null;
  }

  async storeEvent(streamId, message) {
    const session = this.#session;
    if (session == null) throw new Error("resume-gate: storeEvent before the session was bound");
    const priming = message && Object.keys(message).length === 0;
    let known = this.#streams.get(streamId);
    if (streamId === STANDALONE) {
      if (priming) return undefined;
      const data = JSON.stringify(message);
      const standalone = this.#standalone ?? this.openStandalone(null);
      // A standalone stream expired or ended meanwhile: the next one takes the event.
      return this.#record(() => this.#gate.emit(session, standalone, data)) ??
        this.#record(() => this.#gate.emit(session, this.openStandalone(null), data));
    }
    if (!known) {
      const ctx = context.getStore();
      const post = ctx?.post;
      if (!post) throw new Error(`resume-gate: an event for stream ${streamId}, which no request of this session opened`);
      if (!post.opened) {
        post.opened = this.#gate.openStream(session, { request: post.ids[0] });
        ctx.attached.push(post.opened);
      }
      known = { stream: post.opened.stream, outstanding: new Set(post.ids.map(String)) };
      this.#streams.set(streamId, known);
      this.#sdkIds.set(String(known.stream), streamId);
      if (priming) return post.opened.priming.id;
    }
    if (priming) return undefined;
    const data = JSON.stringify(message);
    const isResponse = "id" in message && ("result" in message || "error" in message);
    if (isResponse) known.outstanding.delete(String(message.id));
    const final = isResponse && known.outstanding.size === 0;
    const id = this.#record(() => (final ? this.#gate.terminal : this.#gate.emit).call(this.#gate, session, known.stream, data));
    if (final || id === undefined) this.#forget(streamId);
    return id;
  }

  #forget(streamId) {
    const known = this.#streams.get(streamId);
    this.#streams.delete(streamId);
    if (known) this.#sdkIds.delete(String(known.stream));
  }

  /** A cancelled request's stream takes nothing more (`notifications/cancelled`). */
  forgetRequest(requestId) {
    for (const [streamId, known] of this.#streams) {
      if (known.outstanding.delete(String(requestId)) && known.outstanding.size === 0) this.#forget(streamId);
    }
  }

  /** An event the gate no longer takes (its stream was cancelled or ended) is not recorded. */
  #record(write) {
    try {
      return write().id;
    } catch (e) {
      if (e instanceof GateError && e.code === "stream-finished") return undefined;
      throw e;
    }
  }

  /** Opens a standalone stream (a GET without a cursor, or the first server notification). */
  openStandalone(ctx) {
    const opened = this.#gate.openStream(this.#session, "standalone");
    this.#standalone = opened.stream;
    if (ctx) {
      ctx.attached.push(opened);
      ctx.standalone = opened;
    } else {
      this.#gate.detach(this.#session, opened.stream, opened.attachment);
    }
    return opened.stream;
  }

  /** Writes what the hook's decision says; the hook decided before the SDK came here. */
  async replayEventsAfter(lastEventId, { send }) {
    const ctx = context.getStore();
    if (ctx?.standalone) {
      // A GET without a cursor, sent down this path by the hook so that it starts with the
      // standalone stream's priming event (the SDK's own GET path writes none).
      await send(ctx.standalone.priming.id, { [PRIMING]: ctx.standalone.priming.retryMs });
      return STANDALONE;
    }
    const decision = ctx?.decision ?? this.#gate.reconnect(this.#session, lastEventId, "standalone");
    if (ctx) ctx.decision = null;
    if (decision.kind === "fresh") {
      const { opened } = decision;
      this.#standalone = opened.stream;
      ctx?.attached.push(opened);
      await send(opened.priming.id, { [PRIMING]: opened.priming.retryMs });
      if (decision.stranded != null) await send("", resultLost(decision.stranded));
      return STANDALONE;
    }
    ctx?.attached.push(decision);
    const sdkId =
      decision.stream === this.#standalone ? STANDALONE : (this.#sdkIds.get(String(decision.stream)) ?? `gate-${decision.stream}`);
    for (const event of decision.events) await send(event.id, JSON.parse(event.data));
    if (decision.stranded != null) await send("", resultLost(decision.stranded));
    if (decision.includesTerminal || decision.stranded != null) {
      this.onReplayEnded?.(sdkId);
      this.#streams.delete(sdkId);
      this.#sdkIds.delete(String(decision.stream));
    }
    return sdkId;
  }
}

function resultLost(id) {
  return { jsonrpc: "2.0", id, error: { code: RESULT_LOST, message: "The result of this request was lost with its stream" } };
}

/** The SDK internals the adapter uses exist (`@modelcontextprotocol/sdk` ~1.32). */
export function assertSupportedSdk(transport) {
  const inner = transport._webStandardTransport;
  const ok =
    inner && inner._streamMapping instanceof Map && typeof inner.writeSSEEvent === "function" && "_retryInterval" in inner;
  if (!ok) throw new Error("resume-gate: this @modelcontextprotocol/sdk is not supported (needs ~1.32: StreamableHTTPServerTransport internals changed)");
  return inner;
}

/**
 * A `StreamableHTTPServerTransport` whose resumability is the gate's: pass the options you
 * would give the SDK (without `eventStore`); call `handleRequest(req, res, req.body)` as usual
 * (the parsed body is required for POSTs).
 */
export function gatedTransport(gate, options = {}) {
  const store = new GateEventStore(gate);
  const generate = options.sessionIdGenerator;
  if (typeof generate !== "function") throw new Error("resume-gate: the gate needs a stateful transport (a sessionIdGenerator)");
  const transport = new StreamableHTTPServerTransport({
    ...options,
    eventStore: store,
    retryInterval: options.retryInterval ?? gate.config.retryMs ?? undefined,
    sessionIdGenerator: () => context.getStore()?.newSession ?? generate(),
    onsessioninitialized: async (session) => {
      store.bind(session);
      sessionsOf(gate).set(session, transport);
      await options.onsessioninitialized?.(session);
    },
    onsessionclosed: async (session) => {
      forget(gate, store, session);
      await options.onsessionclosed?.(session);
    },
  });
  const inner = assertSupportedSdk(transport);
  const write = inner.writeSSEEvent.bind(inner);
  inner.writeSSEEvent = (controller, encoder, message, eventId) => {
    if (!message || !(PRIMING in message)) return write(controller, encoder, message, eventId);
    const retry = message[PRIMING] == null ? "" : `retry: ${message[PRIMING]}\n`;
    try {
      controller.enqueue(encoder.encode(`id: ${eventId}\n${retry}data: \n\n`));
      return true;
    } catch {
      return false;
    }
  };
  const sdkHandle = transport.handleRequest.bind(transport);
  transport.gateEventStore = store;
  store.onReplayEnded = (sdkId) => closeAfterReplay(inner, sdkId);
  transport.handleRequest = (req, res, body) => handle({ gate, store, transport, inner, sdkHandle, generate }, req, res, body);
  return transport;
}

function sessionsOf(gate) {
  let sessions = transportsOf.get(gate);
  if (!sessions) transportsOf.set(gate, (sessions = new Map()));
  return sessions;
}

function forget(gate, store, session) {
  sessionsOf(gate).delete(session);
  store.release();
  try {
    gate.endSession(session);
  } catch (e) {
    if (!(e instanceof GateError && e.code === "unknown-session")) throw e;
  }
}

function reply(res, status, code, message, id = null) {
  if (res.headersSent) return res.end();
  const body = code == null ? "" : JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id });
  res.writeHead(status, code == null ? {} : { "Content-Type": "application/json" }).end(body);
}

/** A gate refusal in HTTP and JSON-RPC terms. */
function refuse(res, e, id = null) {
  if (!(e instanceof GateError)) throw e;
  const code = { "unknown-session": -32001, "duplicate-request-id": -32600, "invalid-request-id": -32600 }[e.code] ?? -32000;
  reply(res, e.status, code, e.message, id);
}

const isRequest = (m) => m && typeof m === "object" && typeof m.method === "string" && "id" in m;

/** The request hook: asks the gate what the SDK cannot, then lets the SDK serve. */
async function handle({ gate, store, transport, inner, sdkHandle, generate }, req, res, body) {
  const ctx = { attached: [], post: null, decision: null, standalone: null, newSession: null };
  const session = transport.sessionId;
  res.on("close", () => {
    const quietly = (f) => {
      try {
        f();
      } catch {
        // The session ended meanwhile: nothing left to release.
      }
    };
    // The SDK refused the POST: the stream opened for it will never carry anything.
    if (ctx.post?.opened && res.statusCode >= 400) quietly(() => gate.abortStream(store.session, ctx.post.opened.stream));
    for (const a of ctx.attached) quietly(() => gate.detach(store.session, a.stream, a.attachment));
  });
  try {
    if (session !== undefined && req.method !== "DELETE" && !gate.hasSession(session)) {
      reply(res, 404, -32001, "Session not found");
      await transport.close();
      return;
    }
    if (req.method === "POST") {
      if (Array.isArray(body) && body.length === 0) return reply(res, 400, -32600, "Invalid Request: an empty batch");
      const messages = (Array.isArray(body) ? body : [body]).filter((m) => m && typeof m === "object");
      const requests = messages.filter(isRequest);
      for (const m of messages) {
        if (session !== undefined && m.method === "notifications/cancelled" && m.params?.requestId != null) {
          try {
            gate.abortRequest(session, m.params.requestId);
            store.forgetRequest(m.params.requestId);
          } catch (e) {
            if (!(e instanceof GateError && e.code === "invalid-request-id")) throw e;
          }
        }
      }
      if (requests.length > 0) {
        const ids = requests.map((m) => m.id);
        try {
          ids.forEach(toRequestId);
        } catch (e) {
          return refuse(res, e);
        }
        ctx.post = { ids, opened: null };
        if (session === undefined && requests.some((m) => m.method === "initialize")) {
          ctx.newSession = generate();
          const info = gate.openSession(ctx.newSession);
          if (info.reclaimed) await sessionsOf(gate).get(info.reclaimed)?.close();
        } else if (session !== undefined) {
          ctx.post.opened = gate.openStream(session, { request: ids[0] });
          ctx.attached.push(ctx.post.opened);
        }
      }
    } else if (req.method === "GET" && session !== undefined && String(req.headers.accept ?? "").includes("text/event-stream")) {
      const lastEventId = req.headers["last-event-id"];
      if (lastEventId) {
        ctx.decision = gate.reconnect(session, lastEventId, "standalone");
      } else {
        store.openStandalone(ctx);
        setHeader(req, "last-event-id", "resume-gate:standalone");
      }
    }
  } catch (e) {
    return refuse(res, e);
  }
  try {
    await context.run(ctx, () => sdkHandle(req, res, body));
  } finally {
    if (ctx.newSession != null && transport.sessionId !== ctx.newSession) {
      // The SDK refused the initialize: the gate's session has no transport.
      forget(gate, store, ctx.newSession);
    }
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

/**
 * Ends a resumed response after its terminal event (or a stranded request's error): the SDK
 * registers the response under `sdkId` once `replayEventsAfter` returns, so this looks for it
 * on the next turns of the event loop.
 */
function closeAfterReplay(inner, sdkId) {
  const tryClose = (attempts) => {
    const entry = inner._streamMapping.get(sdkId);
    if (entry) entry.cleanup();
    else if (attempts > 0) setImmediate(() => tryClose(attempts - 1));
  };
  setImmediate(() => tryClose(50));
}
