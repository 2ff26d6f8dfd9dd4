/**
 * An `EventStore` for the TypeScript MCP SDK's Streamable HTTP transport over Redis Streams:
 * what an SDK user would write to keep events in Redis instead of the example's in-memory map.
 * It is the benchmarks' anchor for the gate over Redis, so it is written as such a user would,
 * neither slowed down nor given the gate's checks:
 *
 * - `storeEvent`: `XADD` to the stream's key (trimmed to about `maxLen` entries) and `EXPIRE`,
 *   sent together (node-redis pipelines commands issued in one tick): two commands;
 * - `replayEventsAfter`: one `XRANGE` from just after the cursor's entry;
 * - an event id is `{entry id}@{stream id}`; a cursor this store cannot parse replays nothing,
 *   and one whose entry was trimmed away replays what is left after it.
 */
import { createClient } from "redis";

export class RedisStreamsEventStore {
  /** `url`: `redis://host:port`; `prefix`: namespaces the keys; `ttlS`: each stream's expiry. */
  static async connect(url, { prefix = "mcp:events:", maxLen = 1000, ttlS = 3600 } = {}) {
    const client = createClient({ url });
    client.on("error", (e) => console.error(`redis: ${e.message}`));
    await client.connect();
    return new RedisStreamsEventStore(client, prefix, maxLen, ttlS);
  }

  constructor(client, prefix, maxLen, ttlS) {
    Object.assign(this, { client, prefix, maxLen, ttlS });
  }

  async storeEvent(streamId, message) {
    const key = this.prefix + streamId;
    const [entry] = await Promise.all([
      this.client.sendCommand(["XADD", key, "MAXLEN", "~", String(this.maxLen), "*", "m", JSON.stringify(message)]),
      this.client.sendCommand(["EXPIRE", key, String(this.ttlS)]),
    ]);
    return `${entry}@${streamId}`;
  }

  async getStreamIdForEventId(eventId) {
    return parse(eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId, { send }) {
    const cursor = parse(lastEventId);
    if (!cursor) {
      return "";
    }
    const entries = await this.client.sendCommand(["XRANGE", this.prefix + cursor.streamId, `(${cursor.entry}`, "+"]);
    for (const [entry, fields] of entries) {
      await send(`${entry}@${cursor.streamId}`, JSON.parse(fields[1]));
    }
    return cursor.streamId;
  }

  async close() {
    await this.client.quit();
  }
}

function parse(eventId) {
  const at = eventId.indexOf("@");
  const entry = eventId.slice(0, at);
  return at > 0 && /^\d+-\d+$/.test(entry) ? { entry, streamId: eventId.slice(at + 1) } : undefined;
}
