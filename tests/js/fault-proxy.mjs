// A TCP proxy in front of the MCP server that can cut a connection at a chosen byte: when a
// server→client chunk contains `pattern`, the bytes before it are forwarded and both sides
// are destroyed, as a network drop would do; or, `afterMs` after the client sent a request
// containing a pattern. It also records each request's first lines.
import net from "node:net";

export async function startProxy(upstreamUrl) {
  const upstream = new URL(upstreamUrl);
  const state = { armed: null, timed: null, cuts: 0, requests: [] };
  const sockets = new Set();
  const server = net.createServer((client) => {
    const up = net.connect(Number(upstream.port), upstream.hostname);
    sockets.add(client);
    sockets.add(up);
    let pending = "";
    client.on("data", (chunk) => {
      // Requests on a kept-alive connection follow each other: record every request head.
      pending = (pending + chunk.toString("latin1")).slice(-65536);
      for (const m of pending.matchAll(/((?:GET|POST|DELETE) \/\S* HTTP\/1\.[01]\r\n(?:[^\r\n]+\r\n)*)\r\n/g)) {
        state.requests.push(m[1]);
      }
      const last = pending.lastIndexOf("\r\n\r\n");
      if (last >= 0) pending = pending.slice(last + 4);
      up.write(chunk);
      // A network drop while the server works on a request that says nothing until it ends.
      const timed = state.timed;
      if (timed && chunk.toString("latin1").includes(timed.pattern)) {
        state.timed = null;
        setTimeout(() => {
          state.cuts += 1;
          client.destroy();
          up.destroy();
        }, timed.afterMs);
      }
    });
    up.on("data", (chunk) => {
      const text = chunk.toString("latin1");
      const at = state.armed ? text.indexOf(state.armed) : -1;
      if (at >= 0) {
        state.armed = null;
        state.cuts += 1;
        client.write(chunk.subarray(0, at), () => {
          client.destroy();
          up.destroy();
        });
        return;
      }
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      up.destroy();
    };
    client.on("error", end);
    up.on("error", end);
    client.on("close", end);
    up.on("close", end);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://localhost:${port}${upstream.pathname}`,
    state,
    cutWhenServerSends(pattern) {
      state.armed = pattern;
    },
    cutAfterClientSends(pattern, afterMs) {
      state.timed = { pattern, afterMs };
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
