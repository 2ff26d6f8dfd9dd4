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

/** A refusal from the gate: `code` is the WIT `gate-error` case, `status` the HTTP answer. */
export class GateError extends Error {
  constructor(code, detail) {
    super(detail ? `${code}: ${detail}` : code);
    this.name = "GateError";
    this.code = code;
    this.detail = detail ?? null;
    this.status = STATUS[code] ?? 500;
  }
}

const STATUS = {
  "invalid-config": 500,
  "invalid-session-id": 400,
  "unknown-session": 404,
  "unknown-stream": 500,
  "stream-finished": 409,
  "not-a-request-stream": 500,
  "duplicate-request-id": 400,
  "invalid-request-id": 400,
  "too-many-sessions": 503,
  "over-budget": 503,
  "too-many-streams": 503,
  "store-failure": 503,
};

const U64_CONFIG = ["maxBytesPerStream", "maxBytesPerSession", "maxTotalBytes", "retentionMs", "leaseMs"];

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
    return c;
  }

  /** Replaces the configuration: the defaults with `overrides` applied. */
  configure(overrides = {}) {
    const c = { ...this.#raw.defaultConfig(), ...overrides };
    for (const k of U64_CONFIG) c[k] = BigInt(c[k]);
    if (c.signingKey != null && !(c.signingKey instanceof Uint8Array)) c.signingKey = new Uint8Array(c.signingKey);
    this.#call("configure", c);
    this.config = { ...this.defaultConfig(), ...overrides };
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

  /** Cancels the stream of request `id`; `false` if no live stream carries it. */
  abortRequest(session, id) {
    return this.#call("abortRequest", session, toRequestId(id));
  }

  /** `{ events, done, stranded }` after `after` for a connection attached as `attachment`. */
  poll(session, stream, attachment, after) {
    const p = this.#call("pollStream", session, stream, attachment, BigInt(after));
    return { events: p.events.map(event), done: p.done, stranded: fromRequestId(p.stranded) };
  }

  /**
   * Decides a reconnect. `lastEventId`: the raw header (string or bytes). Returns
   * `{ kind: "resume", stream, attachment, cursorSeq, events, includesTerminal, stranded }` or
   * `{ kind: "fresh", reason, opened, stranded }`.
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
        stranded: fromRequestId(r.stranded),
      };
    }
    return { kind: "fresh", reason: d.val.reason, opened: opened(d.val.opened), stranded: fromRequestId(d.val.stranded) };
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
  throw new GateError("invalid-request-id", `a request id is an integer or a string, not ${String(id).slice(0, 32)}`);
}

function fromRequestId(id) {
  if (id == null) return null;
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
