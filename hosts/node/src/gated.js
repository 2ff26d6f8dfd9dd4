/**
 * The gate inside the official TypeScript SDK's Streamable HTTP server transport, whichever
 * SDK hosts it: `@modelcontextprotocol/sdk` 1.32 (`./sdk.js`, Node's `req`/`res`) or
 * `@modelcontextprotocol/server` 2.x (`./server.js`, web `Request`/`Response`). Both SDKs
 * build on the same web-standard transport, so everything here is shared; each shell only
 * moves a request in and a response out.
 *
 * The SDK's `EventStore` sees a stream id and a message, nothing more: no session, no JSON-RPC
 * request id, no HTTP request. So the adapter has two halves:
 *
 * - `GateEventStore`, one per transport (one session): `storeEvent` records through the gate
 *   and returns the id the gate minted; `replayEventsAfter` writes what the gate decided.
 * - A request hook around the transport's `handleRequest` (`beforeSdk`, then the SDK): it sees
 *   what the store cannot (the session, the request ids a POST carries, `Last-Event-ID`, the
 *   response's end) and asks the gate *before* the SDK answers, so that errors get their own
 *   status (from the one table, `GATE_ERRORS`: a duplicate request id `400`, a full store
 *   `503`), a stale cursor becomes a fresh stream (never the SDK's `400`/`500` for an id it
 *   does not know), and every stranded request gets its own `-32001` error. It hands the SDK
 *   its request context through `AsyncLocalStorage`.
 *
 * Every request id is claimed before its handler runs, exactly once per session: a POST's
 * request opens its stream; a 2025-03-26 batch claims each request's id in the batch's order
 * (`openStream` for the first free one, `joinStream` for the rest), and a request whose id is
 * already held (earlier in the batch, or by the session) never reaches the SDK: it gets its
 * own `-32600` on the batch's stream. When the SDK refuses the POST before running anything
 * (`406`, `415`, `400`, …), the claims are released before the refusal is written, so that
 * the corrected retry runs.
 *
 * What the SDK's interfaces cannot express is done through the transport's internals, checked
 * at start-up (`assertInternals`): writing a priming event with empty data on a fresh stream
 * (`writeSSEEvent` is wrapped for the gate's priming frames), writing a batch's refused
 * requests' errors first on its stream (`writePrimingEvent` is wrapped), closing a response
 * whose requests are all answered or cancelled, or a resumed one after its terminal event,
 * and replacing the session's standalone GET stream instead of answering `409` (via the
 * transport's stream maps).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { GATE_ERRORS, GateError, gateErrorAnswer, gateErrorMessage, toRequestId } from "./index.js";

export const context = new AsyncLocalStorage();
const STANDALONE = "_GET_stream";
/** A message the wrapped `writeSSEEvent` writes as a frame with an id and empty data (and `retry`, if set). */
const PRIMING = Symbol("resume-gate priming");
/** JSON-RPC error for a request whose result was lost with its stream. */
export const RESULT_LOST = -32001;

/** Sessions of each gate: to close the transport of a session the gate reclaimed. */
const transportsOf = new WeakMap();

/** A request id with its JSON type, as a map key: `1` and `"1"` are two requests. */
const keyOf = (id) => (typeof id === "string" ? `s:${id}` : `n:${id}`);

const isResponse = (m) => m != null && "id" in m && ("result" in m || "error" in m);

/** An `EventStore` for one session's transport, recording through `gate`. */
export class GateEventStore {
  #gate;
  #session = null;
  /** SDK stream id → `{ stream, outstanding, cancelled }` (typed request-id keys) for live request streams. */
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
    if (streamId === STANDALONE) {
      if (priming) return undefined;
      const data = JSON.stringify(message);
      const standalone = this.#standalone ?? this.openStandalone(null);
      // A standalone stream expired or ended meanwhile: the next one takes the event.
      return this.#record(() => this.#gate.emit(session, standalone, data)) ??
        this.#record(() => this.#gate.emit(session, this.openStandalone(null), data));
    }
    let known = this.#streams.get(streamId);
    if (!known) {
      known = this.#register(streamId);
      if (priming) return known.primingId;
    }
    if (priming) return undefined;
    const data = JSON.stringify(message);
    const response = isResponse(message);
    if (response) {
      const key = keyOf(message.id);
      // Cancelled: MCP sends no response, and the gate records none.
      if (known.cancelled.has(key)) return undefined;
      known.outstanding.delete(key);
    }
    const final = response && known.outstanding.size === 0;
    const id = this.#record(() => (final ? this.#gate.terminal : this.#gate.emit).call(this.#gate, session, known.stream, data));
    if (final || id === undefined) this.#forget(streamId);
    // The SDK waits for a response to every request of the stream, the cancelled ones too.
    if (final && id !== undefined && known.cancelled.size > 0) this.onAnswered?.(streamId, null);
    return id;
  }

  /** The stream the request context's POST opened (opening it now for an `initialize`). */
  #register(streamId) {
    const ctx = context.getStore();
    const post = ctx?.post;
    if (!post) throw new Error(`resume-gate: an event for stream ${streamId}, which no request of this session opened`);
    if (!post.opened) {
      post.opened = this.#gate.openStream(this.#session, { request: post.ids[0] });
      ctx.attached.push(post.opened);
    }
    const known = {
      stream: post.opened.stream,
      primingId: post.opened.priming.id,
      outstanding: new Set(post.ids.map(keyOf)),
      cancelled: new Set(),
    };
    this.#streams.set(streamId, known);
    this.#sdkIds.set(String(known.stream), streamId);
    return known;
  }

  /**
   * Records `message` on the stream of the request context's POST without the SDK: the error of
   * a batch's request that was refused before it could run. Returns the event id.
   */
  recordAside(streamId, message) {
    const known = this.#streams.get(streamId) ?? this.#register(streamId);
    return this.#record(() => this.#gate.emit(this.#session, known.stream, JSON.stringify(message)));
  }

  #forget(streamId) {
    const known = this.#streams.get(streamId);
    this.#streams.delete(streamId);
    if (known) this.#sdkIds.delete(String(known.stream));
  }

  /** Forgets the gate stream `stream` (released: its request was refused). */
  forgetStream(stream) {
    const sdkId = this.#sdkIds.get(String(stream));
    if (sdkId !== undefined) this.#forget(sdkId);
  }

  /**
   * A cancelled request (`notifications/cancelled`) gets no response. When it was the last
   * one its stream waited for, the stream ends with an empty terminal event (a client ignores
   * an event without data), as `mcp-transport`'s `calls` ends it; when every request of the
   * stream was cancelled, the gate ended the stream already.
   */
  forgetRequest(requestId) {
    const key = keyOf(requestId);
    for (const [streamId, known] of this.#streams) {
      if (!known.outstanding.delete(key)) continue;
      known.cancelled.add(key);
      if (known.outstanding.size > 0) continue;
      let ended;
      try {
        ended = this.#gate.terminal(this.#session, known.stream, "");
      } catch (e) {
        if (!(e instanceof GateError)) throw e;
      }
      this.#forget(streamId);
      if (ended) this.onAnswered?.(streamId, ended);
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
      for (const id of decision.stranded) await send("", resultLost(id));
      return STANDALONE;
    }
    ctx?.attached.push(decision);
    const sdkId =
      decision.stream === this.#standalone ? STANDALONE : (this.#sdkIds.get(String(decision.stream)) ?? `gate-${decision.stream}`);
    // An event without data (the empty terminal of a stream whose last request was cancelled)
    // is written as such.
    for (const event of decision.events) await send(event.id, event.data === "" ? { [PRIMING]: null } : JSON.parse(event.data));
    for (const id of decision.stranded) await send("", resultLost(id));
    if (decision.includesTerminal || decision.stranded.length > 0) {
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

/** The `-32600` of a request whose id is already held in the session: it runs nothing. */
function duplicate(id) {
  const e = new GateError("duplicate-request-id");
  return { jsonrpc: "2.0", id, error: { code: GATE_ERRORS[e.code].code, message: gateErrorMessage(e) } };
}

/** The web-standard transport's internals the adapter uses exist (both SDKs keep them). */
export function assertInternals(inner, sdk) {
  const ok =
    inner &&
    inner._streamMapping instanceof Map &&
    inner._requestToStreamMapping instanceof Map &&
    inner._requestResponseMap instanceof Map &&
    typeof inner.writeSSEEvent === "function" &&
    typeof inner.writePrimingEvent === "function" &&
    "_retryInterval" in inner;
  if (!ok) throw new Error(`resume-gate: this ${sdk} is not supported (its Streamable HTTP transport's internals changed)`);
  return inner;
}

/**
 * The transport options that put the gate in: its event store, its retry interval, session
 * ids the hook chose, and the session's bookkeeping. `self()` is the transport being built.
 */
export function gatedOptions(gate, store, options, self) {
  const generate = options.sessionIdGenerator;
  if (typeof generate !== "function") throw new Error("resume-gate: the gate needs a stateful transport (a sessionIdGenerator)");
  return {
    ...options,
    eventStore: store,
    retryInterval: options.retryInterval ?? gate.config.retryMs ?? undefined,
    sessionIdGenerator: () => context.getStore()?.newSession ?? generate(),
    onsessioninitialized: async (session) => {
      store.bind(session);
      sessionsOf(gate).set(session, self());
      await options.onsessioninitialized?.(session);
    },
    onsessionclosed: async (session) => {
      forget(gate, store, session);
      await options.onsessionclosed?.(session);
    },
  };
}

/** Wraps the transport's writers for the gate's frames and ends streams the gate ended. */
export function wireInternals(inner, store) {
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
  // Called on every SSE response to a POST once the SDK registered its stream, before any of
  // its messages reaches a handler: a batch's refused requests get their errors first.
  const writePriming = inner.writePrimingEvent.bind(inner);
  inner.writePrimingEvent = async (controller, encoder, streamId, protocolVersion) => {
    await writePriming(controller, encoder, streamId, protocolVersion);
    const refused = context.getStore()?.post?.refused;
    for (const id of refused?.splice(0) ?? []) {
      const message = duplicate(id);
      const eventId = store.recordAside(streamId, message);
      if (inner.writeSSEEvent(controller, encoder, message, eventId) && eventId !== undefined) inner._resumableStreams?.add(streamId);
    }
  };
  store.onReplayEnded = (sdkId) => closeAfterReplay(inner, sdkId);
  store.onAnswered = (sdkId, emptyTerminal) => closeAnswered(inner, sdkId, emptyTerminal);
}

export function sessionsOf(gate) {
  let sessions = transportsOf.get(gate);
  if (!sessions) transportsOf.set(gate, (sessions = new Map()));
  return sessions;
}

export function forget(gate, store, session) {
  sessionsOf(gate).delete(session);
  store.release();
  try {
    gate.endSession(session);
  } catch (e) {
    if (!(e instanceof GateError && e.code === "unknown-session")) throw e;
  }
}

const quietly = (f) => {
  try {
    f();
  } catch {
    // The session ended meanwhile: nothing left to release.
  }
};

/**
 * Claims the ids of a POST's requests in order before any runs (as `mcp-transport`'s
 * `claim_all`): the first that is free opens the stream, the later ones join it. Sets
 * `ctx.post` to `{ ids, refused, opened }` (`ids`: the claimed ones, `refused`: the ids
 * already held) and returns the claim of each request, in order; `null` when none was free.
 * On an error after the stream was opened, the stream is released again (`ctx.post.opened`).
 */
function claimAll(gate, session, ctx, ids) {
  const claimed = [];
  ctx.post = { ids: [], refused: [], opened: null, released: false };
  for (const id of ids) {
    try {
      ctx.post.opened = gate.openStream(session, { request: id });
    } catch (e) {
      if (!(e instanceof GateError && e.code === "duplicate-request-id")) throw Object.assign(e, { requestId: id });
      claimed.push(false);
      continue;
    }
    ctx.attached.push(ctx.post.opened);
    claimed.push(true);
    break;
  }
  if (!ctx.post.opened) return null;
  const rest = ids.slice(claimed.length);
  if (rest.length > 0) claimed.push(...gate.joinStream(session, ctx.post.opened.stream, rest));
  ids.forEach((id, i) => (claimed[i] ? ctx.post.ids : ctx.post.refused).push(id));
  return claimed;
}

/** A JSON-RPC error answer, in the shells' terms. */
function answer(status, code, message, id = null) {
  const body = JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id });
  return { status, headers: { "Content-Type": "application/json" }, body };
}

/** A gate refusal in HTTP and JSON-RPC terms, from the one table (`GATE_ERRORS`). */
function refusal(e, id = null) {
  if (!(e instanceof GateError)) throw e;
  return gateErrorAnswer(e, id);
}

/** A request's context: what the hook claimed, decided and attached, for the SDK's callbacks. */
export function newContext() {
  return { attached: [], post: null, decision: null, standalone: null, newSession: null };
}

/** The SDK refused the POST before running anything: its claims go back. */
export function releaseRefused({ gate, store }, ctx) {
  const post = ctx.post;
  if (!post?.opened || post.released) return;
  post.released = true;
  store.forgetStream(post.opened.stream);
  try {
    gate.releaseStream(store.session, post.opened.stream);
  } catch (e) {
    // It recorded something after all: end it instead.
    if (e instanceof GateError && e.code === "stream-finished") quietly(() => gate.abortStream(store.session, post.opened.stream));
  }
}

/** The response ended: every stream it served is detached. */
export function detachAll({ gate, store }, ctx) {
  for (const a of ctx.attached.splice(0)) quietly(() => gate.detach(store.session, a.stream, a.attachment));
}

/**
 * What the gate says before the SDK sees a request: `{ answer }` to refuse it (`{status,
 * headers, body}`: the SDK never sees it), or `{ body, cursor }` to pass on — `body` without
 * the batch requests whose ids were held, and for a GET without a cursor the `Last-Event-ID`
 * the SDK must see (`cursor`), so that the standalone stream starts with its priming event.
 * `isRequest` is the SDK's own predicate, so that every request it will run is claimed and
 * nothing else is.
 */
export async function beforeSdk({ gate, store, transport, generate, isRequest }, ctx, { method, accept, lastEventId, body }) {
  const session = transport.sessionId;
  let requestId = null;
  try {
    if (session !== undefined && method !== "DELETE" && !gate.hasSession(session)) {
      await transport.close();
      return { answer: refusal(new GateError("unknown-session")) };
    }
    if (method === "POST") {
      if (Array.isArray(body) && body.length === 0) return { answer: answer(400, -32600, "Invalid Request: an empty batch") };
      const batch = Array.isArray(body);
      const messages = (batch ? body : [body]).filter((m) => m && typeof m === "object");
      for (const m of messages) {
        if (session !== undefined && m.method === "notifications/cancelled" && m.params?.requestId != null) {
          try {
            gate.abortRequest(session, m.params.requestId);
          } catch (e) {
            if (e instanceof GateError && e.code === "invalid-request-id") continue;
            throw e;
          }
          store.forgetRequest(m.params.requestId);
        }
      }
      const requests = messages.filter((m) => isRequest(m));
      if (requests.length > 0) {
        const ids = requests.map((m) => m.id);
        requestId = batch ? null : ids[0];
        ids.forEach(toRequestId);
        if (session === undefined && requests.some((m) => m.method === "initialize")) {
          ctx.post = { ids, refused: [], opened: null, released: false };
          ctx.newSession = generate();
          const info = gate.openSession(ctx.newSession);
          if (info.reclaimed) await sessionsOf(gate).get(info.reclaimed)?.close();
        } else if (session !== undefined) {
          let claimed;
          try {
            claimed = claimAll(gate, session, ctx, ids);
          } catch (e) {
            releaseRefused({ gate, store }, ctx);
            return { answer: refusal(e, batch ? null : (e.requestId ?? null)) };
          }
          if (claimed === null && !batch) return { answer: refusal(new GateError("duplicate-request-id"), ids[0]) };
          if (claimed === null) {
            // Every request's id is held: nothing to run, nothing to stream.
            return { answer: { status: 400, headers: { "Content-Type": "application/json" }, body: JSON.stringify(ids.map(duplicate)) } };
          }
          if (ctx.post.refused.length > 0) {
            // A refused request never reaches the SDK: its error goes out on the batch's stream.
            const refusedAt = new Set(requests.filter((_, i) => !claimed[i]));
            body = body.filter((m) => !refusedAt.has(m));
          }
        }
      }
    } else if (method === "GET" && session !== undefined && String(accept ?? "").includes("text/event-stream")) {
      if (lastEventId) {
        ctx.decision = gate.reconnect(session, lastEventId, "standalone");
      } else {
        store.openStandalone(ctx);
        return { body, cursor: "resume-gate:standalone" };
      }
    }
  } catch (e) {
    return { answer: refusal(e, requestId) };
  }
  return { body };
}

/** After the SDK answered: an `initialize` it refused leaves no session in the gate. */
export function afterSdk({ gate, store, transport }, ctx) {
  if (ctx.newSession != null && transport.sessionId !== ctx.newSession) forget(gate, store, ctx.newSession);
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

/**
 * Ends a response whose requests are all answered or cancelled: the SDK waits for a response
 * to each request it mapped to the stream, and a cancelled one never gets one. `emptyTerminal`:
 * the event that ended the stream when its last request was cancelled, written first.
 */
function closeAnswered(inner, sdkId, emptyTerminal) {
  const entry = inner._streamMapping.get(sdkId);
  if (emptyTerminal && entry?.controller) inner.writeSSEEvent(entry.controller, entry.encoder, { [PRIMING]: null }, emptyTerminal.id);
  // After the SDK wrote the final response (it writes once the store returned).
  setImmediate(() => {
    for (const [id, streamId] of inner._requestToStreamMapping) {
      if (streamId !== sdkId) continue;
      inner._requestToStreamMapping.delete(id);
      inner._requestResponseMap.delete(id);
    }
    inner._resumableStreams?.delete(sdkId);
    inner._streamMapping.get(sdkId)?.cleanup();
  });
}
