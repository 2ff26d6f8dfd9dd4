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

export type Decision =
  | { kind: "resume"; stream: bigint; attachment: number; cursorSeq: number; events: Event[]; includesTerminal: boolean; stranded: RequestId | null }
  | { kind: "fresh"; reason: StaleReason; opened: Opened; stranded: RequestId | null };

export class GateError extends Error {
  readonly code: string;
  readonly detail: string | null;
  /** The HTTP status to answer with. */
  readonly status: number;
}

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
  readonly config: Config;
  defaultConfig(): Config;
  configure(overrides?: Partial<Config>): void;
  openSession(session: string): { epoch: bigint; reclaimed: string | null };
  hasSession(session: string): boolean;
  endSession(session: string): void;
  openStream(session: string, origin: Origin): Opened;
  emit(session: string, stream: bigint, data: string): Event;
  terminal(session: string, stream: bigint, data: string): Event;
  renewLease(session: string, stream: bigint): void;
  detach(session: string, stream: bigint, attachment: number): void;
  abortStream(session: string, stream: bigint): void;
  abortRequest(session: string, id: RequestId): boolean;
  poll(session: string, stream: bigint, attachment: number, after: number): { events: Event[]; done: boolean; stranded: RequestId | null };
  reconnect(session: string, lastEventId: string | Uint8Array, origin: Origin): Decision;
  counters(): Record<string, number> & { fresh: Record<StaleReason, number> };
  collectGarbage(cursor?: string | null): { next: string | null; removed: number };
}
