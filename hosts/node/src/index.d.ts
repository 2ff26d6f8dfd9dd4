/** A JSON-RPC request id as the client sent it. */
export type RequestId = number | string | bigint;
/** What a fresh stream for an HTTP request would be: a GET, or a POSTed request. */
export type Origin = "standalone" | { request: RequestId };

export interface Config {
  maxEventsPerStream: number;
  maxBytesPerStream: number | bigint;
  maxStreamsPerSession: number;
  maxBytesPerSession: number | bigint;
  maxSessions: number;
  maxTotalBytes: number | bigint;
  retentionMs: number | bigint;
  leaseMs: number | bigint;
  /** How long a stream may be without a connection (ms); `null`: `leaseMs`. */
  maxDetachedMs?: number | bigint | null;
  retryMs?: number;
  signingKey?: Uint8Array | number[];
}

/** One SSE event to write: `id`, then `retry` when set, then `data`. */
export interface Event {
  id: string;
  stream: bigint;
  seq: number;
  data: string;
  retryMs: number | null;
  terminal: boolean;
}

export interface Opened {
  stream: bigint;
  attachment: number;
  priming: Event;
}

export type StaleReason =
  | "malformed" | "forged" | "other-session" | "epoch-changed" | "unknown" | "post-never-resumes"
  | "completed" | "aborted" | "superseded" | "evicted";

/** `stranded`: the requests to answer with a `-32001` error each (empty: none). */
export type Decision =
  | { kind: "resume"; stream: bigint; attachment: number; cursorSeq: number; events: Event[]; includesTerminal: boolean; stranded: RequestId[] }
  | { kind: "fresh"; reason: StaleReason; opened: Opened; stranded: RequestId[] };

/** What `checkStream` found. */
export interface StreamStatus {
  /** The asking connection is still the stream's: write to it only while this holds. */
  attached: boolean;
  /** The stream still takes events: stop the call when it does not. */
  running: boolean;
  /** Requests of a batch stream the client cancelled: no response for them. */
  cancelled: RequestId[];
}

/** The WIT `gate-error` cases. */
export type GateErrorCode =
  | "invalid-config" | "invalid-session-id" | "unknown-session" | "unknown-stream" | "stream-finished"
  | "not-a-request-stream" | "duplicate-request-id" | "invalid-request-id" | "batch-too-large"
  | "too-many-sessions" | "over-budget" | "too-many-streams" | "store-failure";

/** The one table: WIT case → HTTP status and JSON-RPC code, in WIT order. Every 503 carries `Retry-After: 1`. */
export const GATE_ERRORS: Readonly<Record<GateErrorCode, Readonly<{ status: number; code: number }>>>;
/** The `Retry-After` (seconds) of every 503. */
export const RETRY_AFTER_SECONDS: 1;

export class GateError extends Error {
  constructor(code: GateErrorCode, detail?: string);
  readonly code: GateErrorCode;
  readonly detail: string | null;
  /** The HTTP status to answer with (`GATE_ERRORS`). */
  readonly status: number;
  /** The JSON-RPC error code to answer with (`GATE_ERRORS`). */
  readonly rpcCode: number;
}

/** The HTTP answer for a gate error: a JSON-RPC error naming `id` (except for `unknown-session` and `invalid-request-id`). */
export function gateErrorAnswer(e: GateError, id?: RequestId | null): { status: number; headers: Record<string, string>; body: string };
/** The message that goes with a gate error. */
export function gateErrorMessage(e: GateError): string;

export interface KeyValue {
  store: unknown;
  atomics: unknown;
}

export function loadGate(options?: { world?: "memory" | "kv"; keyvalue?: KeyValue; config?: Partial<Config> }): Promise<Gate>;
export function memoryKeyValue(options?: { label?: string }): KeyValue & { map: Map<string, Uint8Array> };
export function toRequestId(id: RequestId): unknown;

export class Gate {
  readonly componentSha256: string;
  readonly componentSource: string;
  readonly config: Config & { maxDetachedMs: number | null };
  defaultConfig(): Config;
  configure(overrides?: Partial<Config>): void;
  openSession(session: string): { epoch: bigint; reclaimed: string | null };
  hasSession(session: string): boolean;
  endSession(session: string): void;
  openStream(session: string, origin: Origin): Opened;
  /** A batch's further requests join the stream opened for its first: one flag per id (`false`: already held). */
  joinStream(session: string, stream: bigint, ids: RequestId[]): boolean[];
  checkStream(session: string, stream: bigint, attachment: number): StreamStatus;
  /** Forgets a request stream that recorded nothing, and its ids' claims (its request was refused). */
  releaseStream(session: string, stream: bigint): void;
  emit(session: string, stream: bigint, data: string): Event;
  terminal(session: string, stream: bigint, data: string): Event;
  renewLease(session: string, stream: bigint): void;
  detach(session: string, stream: bigint, attachment: number): void;
  abortStream(session: string, stream: bigint): void;
  abortRequest(session: string, id: RequestId): boolean;
  poll(session: string, stream: bigint, attachment: number, after: number): { events: Event[]; done: boolean; stranded: RequestId[] };
  reconnect(session: string, lastEventId: string | Uint8Array, origin: Origin): Decision;
  counters(): Record<string, number> & { fresh: Record<StaleReason, number> };
  collectGarbage(cursor?: string | null): { next: string | null; removed: number };
}
