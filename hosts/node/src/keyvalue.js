/**
 * `wasi:keyvalue` draft2 (`store` and `atomics`, as Spin implements them) over a JavaScript
 * `Map`, for the gate's `kv` world: `loadGate({ world: "kv", keyvalue: memoryKeyValue() })`.
 * Several gate instances given the same `memoryKeyValue()` share one state, as instances per
 * request share a store at the edge.
 *
 * The component calls its imports synchronously, so a store behind a network client (Redis)
 * cannot be plugged in here without JSPI; it is the Rust hosts' job (`gate-host`).
 *
 * Semantics follow Spin's SQLite backend: compare-and-swap compares the bytes read when the
 * `Cas` was made (absent equals absent); `increment` keeps an 8-byte little-endian integer.
 */

/** How many keys one `listKeys` page holds. */
const PAGE = 64;

const fail = (tag, val) => Object.assign(new Error(`wasi:keyvalue ${tag}`), { payload: val === undefined ? { tag } : { tag, val } });

const same = (a, b) => (a === undefined || b === undefined ? a === b : a.length === b.length && a.every((x, i) => x === b[i]));

/** A `{ store, atomics }` pair over one new map; `label` is the only bucket it opens. */
export function memoryKeyValue({ label = "default" } = {}) {
  const map = new Map();

  class Bucket {
    get(key) {
      const value = map.get(key);
      return value === undefined ? undefined : value.slice();
    }
    set(key, value) {
      map.set(key, Uint8Array.from(value));
    }
    delete(key) {
      map.delete(key);
    }
    exists(key) {
      return map.has(key);
    }
    listKeys(cursor) {
      const keys = [...map.keys()].sort().filter((k) => cursor === undefined || k > cursor);
      const page = keys.slice(0, PAGE);
      return { keys: page, cursor: keys.length > PAGE ? page.at(-1) : undefined };
    }
  }

  class Cas {
    constructor(key, seen) {
      this.key = key;
      this.seen = seen;
    }
    static new(_bucket, key) {
      return new Cas(key, map.get(key)?.slice());
    }
    current() {
      return this.seen?.slice();
    }
  }

  const open = (identifier) => {
    if (identifier !== label) throw fail("no-such-store");
    return new Bucket();
  };

  const increment = (_bucket, key, delta) => {
    const old = map.get(key);
    let value = 0n;
    if (old !== undefined) {
      if (old.length !== 8) throw fail("other", `${key} does not hold an 8-byte integer`);
      value = new DataView(old.buffer, old.byteOffset, 8).getBigInt64(0, true);
    }
    value = BigInt.asIntN(64, value + BigInt(delta));
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setBigInt64(0, value, true);
    map.set(key, bytes);
    return value;
  };

  const swap = (cas, value) => {
    if (!same(map.get(cas.key), cas.seen)) throw fail("cas-failed", Cas.new(null, cas.key));
    map.set(cas.key, Uint8Array.from(value));
  };

  return { store: { Bucket, open }, atomics: { Cas, increment, swap }, map };
}
