/**
 * resume-gate for Node: the gate component (transpiled by jco into `gen/` by `npm run build`)
 * behind a small API in plain JavaScript values.
 *
 * The component decides every reconnect: a `Last-Event-ID` that is a valid continuation point
 * of a live stream of this session and epoch resumes with exactly the missed events; anything
 * else starts a fresh stream and replays nothing. It also mints every event id and keeps the
 * bounded replay buffer. See `wit/gate.wit` for the contract; this module only converts values.
 *
 * Conversions: stream numbers stay `bigint` (opaque handles); sequence numbers, epochs and
 * counters become `number`; request ids are the JSON-RPC id as the client sent it (an integer
 * or a string); `u64` configuration fields take a `number` or a `bigint`.
 */
import { readFileSync } from "node:fs";
import { clocks, random } from "@bytecodealliance/preview2-shim";

const GEN = new URL("../gen/", import.meta.url);

/**
 * The one table from a gate error to the HTTP answer (see `wit/gate.wit`'s `gate-error` docs and
 * `mcp-transport`'s `errors::TABLE`): WIT case → `{ status, code }`, the HTTP status and the
 * JSON-RPC error code, in WIT order. Every `503` carries `Retry-After: 1`.
 */
export const GATE_ERRORS = Object.freeze({
  "invalid-config": Object.freeze({ status: 500, code: -32603 }),
  "invalid-session-id": Object.freeze({ status: 400, code: -32600 }),
  "unknown-session": Object.freeze({ status: 404, code: -32001 }),
  "unknown-stream": Object.freeze({ status: 500, code: -32603 }),
  "stream-finished": Object.freeze({ status: 409, code: -32603 }),
  "not-a-request-stream": Object.freeze({ status: 500, code: -32603 }),
  "duplicate-request-id": Object.freeze({ status: 400, code: -32600 }),
  "invalid-request-id": Object.freeze({ status: 400, code: -32600 }),
  "batch-too-large": Object.freeze({ status: 400, code: -32600 }),
  "too-many-sessions": Object.freeze({ status: 503, code: -32603 }),
  "over-budget": Object.freeze({ status: 503, code: -32603 }),
  "too-many-streams": Object.freeze({ status: 503, code: -32603 }),
  "store-failure": Object.freeze({ status: 503, code: -32603 }),
});

/** The `Retry-After` (seconds) of every `503`: a bound is reached or the store failed. */
export const RETRY_AFTER_SECONDS = 1;

/** A refusal from the gate: `code` is the WIT `gate-error` case, `status` the HTTP answer. */
export class GateError extends Error {
  constructor(code, detail) {
    super(detail ? `${code}: ${detail}` : code);
    this.name = "GateError";
    this.code = code;
    this.detail = detail ?? null;
    const answer = GATE_ERRORS[code] ?? GATE_ERRORS["invalid-config"];
    /** The HTTP status to answer with. */
    this.status = answer.status;
    /** The JSON-RPC error code to answer with. */
    this.rpcCode = answer.code;
  }
}

/**
 * The HTTP answer for a gate error, from `GATE_ERRORS`: `{ status, headers, body }` with a
 * JSON-RPC error naming request `id` (never for `unknown-session` and `invalid-request-id`: a
 * session-level answer names no request, a refused id is not echoed).
 */
export function gateErrorAnswer(e, id = null) {
  const { status, code } = GATE_ERRORS[e.code] ?? GATE_ERRORS["invalid-config"];
  const echo = e.code === "unknown-session" || e.code === "invalid-request-id" ? null : (id ?? null);
  const headers = { "Content-Type": "application/json" };
  if (status === 503) headers["Retry-After"] = String(RETRY_AFTER_SECONDS);
  const body = JSON.stringify({ jsonrpc: "2.0", id: echo, error: { code, message: gateErrorMessage(e) } });
  return { status, headers, body };
}

/** The message that goes with a gate error, in the protocol's terms (as `mcp-transport`'s). */
export function gateErrorMessage(e) {
  switch (e.code) {
    case "unknown-session":
      return "Session not found";
    case "invalid-session-id":
      return "Bad Request: invalid Mcp-Session-Id";
    case "invalid-request-id":
      return "Invalid Request: a request id is an integer or a string of at most 256 bytes";
    case "duplicate-request-id":
      return "Invalid Request: this request id was already used in this session";
    case "batch-too-large":
      return "Invalid Request: too many requests in one batch";
    case "stream-finished":
      return "Conflict: the request's stream has ended";
    case "too-many-sessions":
    case "over-budget":
    case "too-many-streams":
    case "store-failure":
      return `Service Unavailable: ${e.message}`;
    default:
      return `Internal error: ${e.message}`;
  }
}

const U64_CONFIG = ["maxBytesPerStream", "maxBytesPerSession", "maxTotalBytes", "retentionMs", "leaseMs"];
/** `option<u64>` fields: `null` is none. */
const OPTIONAL_U64_CONFIG = ["maxDetachedMs"];

/**
 * Loads the gate. `world: "memory"` (the default) keeps state in the instance; `world: "kv"`
 * keeps it in `keyvalue`, the host's `wasi:keyvalue` draft2 (`{ store, atomics }`, see
 * `memoryKeyValue` in `./keyvalue.js`). `config` overrides fields of the defaults.
 */
export function loadGate({ world = "memory", keyvalue, config } = {}) {
  const dir = new URL(`${world}/`, GEN);
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(new URL("component.json", dir), "utf8"));
  } catch {
    throw new Error(`resume-gate: gen/${world} is missing: run \`npm run build\` in the package first`);
  }
  const imports = {
    "wasi:clocks/wall-clock": clocks.wallClock,
    "wasi:random/random": random.random,
  };
  if (world === "kv") {
    if (!keyvalue) throw new Error("resume-gate: world \"kv\" needs a `keyvalue` ({ store, atomics })");
    imports["wasi:keyvalue/store"] = keyvalue.store;
    imports["wasi:keyvalue/atomics"] = keyvalue.atomics;
  }
  return import(new URL("gate.js", dir).href).then(({ instantiate }) => {
    const compile = (name) => new WebAssembly.Module(readFileSync(new URL(name, dir)));
    const exports = instantiate(compile, imports);
    const gate = new Gate(exports.gate ?? exports["mcp:resume-gate/gate@0.1.0"], stamp);
    if (config) gate.configure(config);
    return gate;
  });
}

/** One gate instance. Every method is synchronous. */
export class Gate {
  #raw;

  constructor(raw, stamp) {
    this.#raw = raw;
    /** SHA-256 (hex) of the component file this gate was transpiled from. */
    this.componentSha256 = stamp.sha256;
    /** That file's path when it was built. */
    this.componentSource = stamp.source;
    /** The configuration in force (plain numbers). */
    this.config = this.defaultConfig();
  }

  #call(method, ...args) {
    try {
      return this.#raw[method](...args);
    } catch (e) {
      if (e?.payload?.tag) throw new GateError(e.payload.tag, typeof e.payload.val === "string" ? e.payload.val : undefined);
      throw e;
    }
  }

  /** The defaults, as plain numbers. */
  defaultConfig() {
    const c = this.#raw.defaultConfig();
    for (const k of U64_CONFIG) c[k] = Number(c[k]);
    for (const k of OPTIONAL_U64_CONFIG) c[k] = c[k] == null ? null : Number(c[k]);
    return c;
  }

  /** Replaces the configuration: the defaults with `overrides` applied. */
  configure(overrides = {}) {
    const c = { ...this.#raw.defaultConfig(), ...overrides };
    for (const k of U64_CONFIG) c[k] = BigInt(c[k]);
    for (const k of OPTIONAL_U64_CONFIG) c[k] = c[k] == null ? undefined : BigInt(c[k]);
    if (c.signingKey != null && !(c.signingKey instanceof Uint8Array)) c.signingKey = new Uint8Array(c.signingKey);
    this.#call("configure", c);
    this.config = { ...this.defaultConfig(), ...overrides };
    for (const k of OPTIONAL_U64_CONFIG) this.config[k] ??= null;
  }

  /** Opens (or re-issues) a session: `{ epoch (bigint), reclaimed (a session id or null) }`. */
  openSession(session) {
    const info = this.#call("openSession", session);
    return { epoch: info.epoch, reclaimed: info.reclaimed ?? null };
  }

  hasSession(session) {
    return this.#call("hasSession", session);
  }

  endSession(session) {
    this.#call("endSession", session);
  }

  /** `origin`: `"standalone"` (a GET) or `{ request: id }` (a POSTed request). */
  openStream(session, origin) {
    return opened(this.#call("openStream", session, toOrigin(origin)));
  }

  /**
   * A 2025-03-26 batch answered on one stream: after `openStream` with the batch's first
   * request, claims the ids of its further requests, in order, before any of them runs. One
   * boolean per id; `false`: the id is already held in this session (earlier in the batch, or
   * by another request): answer that request with `-32600` and run nothing for it.
   */
  joinStream(session, stream, ids) {
    return this.#call("joinStream", session, stream, ids.map(toRequestId));
  }

  /**
   * What the writer of a stream asks before it writes to connection `attachment`:
   * `{ attached, running, cancelled }` (`cancelled`: the batch's requests the client cancelled).
   * Changes nothing.
   */
  checkStream(session, stream, attachment) {
    const s = this.#call("checkStream", session, stream, attachment);
    return { attached: s.attached, running: s.running, cancelled: s.cancelled.map(fromRequestId) };
  }

  /**
   * The request a stream was opened for was refused before it ran (its HTTP request got an
   * error): forgets the stream and its ids' claims so that a corrected retry may use them. Only
   * for a request stream that recorded nothing; otherwise `stream-finished`.
   */
  releaseStream(session, stream) {
    this.#call("releaseStream", session, stream);
  }

  /** Records a message on a stream; returns the event to write. */
  emit(session, stream, data) {
    return recorded(this.#call("onEmit", session, stream, data), stream, data, false);
  }

  /** Records the stream's final response; write the event, then close the response. */
  terminal(session, stream, data) {
    return recorded(this.#call("onTerminal", session, stream, data), stream, data, true);
  }

  renewLease(session, stream) {
    this.#call("renewLease", session, stream);
  }

  detach(session, stream, attachment) {
    this.#call("onDetach", session, stream, attachment);
  }

  abortStream(session, stream) {
    this.#call("abortStream", session, stream);
  }

  /**
   * Cancels request `id` (`notifications/cancelled`): its stream, or in a batch stream that
   * request alone (`checkStream` lists it; the stream ends once each of its requests is
   * cancelled). `false` if no live stream answers it.
   */
  abortRequest(session, id) {
    return this.#call("abortRequest", session, toRequestId(id));
  }

  /**
   * `{ events, done, stranded }` after `after` for a connection attached as `attachment`;
   * `stranded`: the requests to answer with a `-32001` error each (their writer is gone).
   */
  poll(session, stream, attachment, after) {
    const p = this.#call("pollStream", session, stream, attachment, BigInt(after));
    return { events: p.events.map(event), done: p.done, stranded: p.stranded.map(fromRequestId) };
  }

  /**
   * Decides a reconnect. `lastEventId`: the raw header (string or bytes). Returns
   * `{ kind: "resume", stream, attachment, cursorSeq, events, includesTerminal, stranded }` or
   * `{ kind: "fresh", reason, opened, stranded }`; `stranded` lists the requests to answer with
   * a `-32001` error each (empty: none).
   */
  reconnect(session, lastEventId, origin) {
    const bytes = typeof lastEventId === "string" ? new TextEncoder().encode(lastEventId) : lastEventId;
    const d = this.#call("onReconnect", session, bytes, toOrigin(origin));
    if (d.tag === "resume") {
      const r = d.val;
      return {
        kind: "resume",
        stream: r.stream,
        attachment: r.attachment,
        cursorSeq: Number(r.cursorSeq),
        events: r.events.map(event),
        includesTerminal: r.includesTerminal,
        stranded: r.stranded.map(fromRequestId),
      };
    }
    return { kind: "fresh", reason: d.val.reason, opened: opened(d.val.opened), stranded: d.val.stranded.map(fromRequestId) };
  }

  /** Counters since this instance started (numbers; `fresh` by reason). */
  counters() {
    const c = this.#raw.readCounters();
    const out = {};
    for (const [k, v] of Object.entries(c)) out[k] = typeof v === "bigint" ? Number(v) : v;
    out.fresh = Object.fromEntries(c.fresh.map((r) => [r.reason, Number(r.count)]));
    return out;
  }

  /** One step of garbage collection over a shared store: `{ next, removed }`. */
  collectGarbage(cursor = null) {
    const s = this.#call("collectGarbage", cursor ?? undefined);
    return { next: s.next ?? null, removed: s.removed };
  }
}

function toOrigin(origin) {
  if (origin === "standalone") return { tag: "standalone" };
  if (origin && "request" in origin) return { tag: "request", val: toRequestId(origin.request) };
  throw new TypeError(`resume-gate: an origin is "standalone" or { request: id }, not ${JSON.stringify(origin)}`);
}

/** A JSON-RPC id: an integer that fits in 64 bits, or a string. Anything else is refused. */
export function toRequestId(id) {
  if (typeof id === "string") return { tag: "text", val: id };
  if (typeof id === "bigint") return { tag: "number", val: id };
  if (Number.isSafeInteger(id)) return { tag: "number", val: BigInt(id) };
  // Never stringify what the client sent: an array nested deep enough overflows the stack.
  const what = typeof id === "number" ? String(id) : id === null ? "null" : Array.isArray(id) ? "an array" : `a ${typeof id}`;
  throw new GateError("invalid-request-id", `a request id is an integer or a string, not ${what}`);
}

function fromRequestId(id) {
  if (id.tag === "text") return id.val;
  const n = Number(id.val);
  return Number.isSafeInteger(n) ? n : id.val;
}

function event(e) {
  return { id: e.id, stream: e.stream, seq: Number(e.seq), data: e.data, retryMs: e.retryMs ?? null, terminal: e.terminal };
}

// `on-emit` and `on-terminal` return only the id and seq: the data is the caller's own.
function recorded(r, stream, data, terminal) {
  return { id: r.id, stream, seq: Number(r.seq), data, retryMs: null, terminal };
}

function opened(o) {
  return { stream: o.stream, attachment: o.attachment, priming: event(o.priming) };
}
export { memoryKeyValue } from "./keyvalue.js";
