// The conformance runner imports `globSync` from `fs`, which Node 22 added; this machine has
// Node 20. The runner uses it only for commands we do not call, so this loader hook replaces
// that one import with a stub that throws if it is ever used. Nothing under test is touched.
import { register } from "node:module";

register(
  "data:text/javascript," +
    encodeURIComponent(`
export async function load(url, context, next) {
  const result = await next(url, context);
  if (url.includes("@modelcontextprotocol/conformance/dist/") && result.source) {
    let source = String(result.source);
    source = source.replace(/globSync as (\\w+),/, (_, name) => "");
    const match = String(result.source).match(/globSync as (\\w+),/);
    if (match) {
      const stub = "const " + match[1] + " = () => { throw new Error('globSync needs Node 22'); };";
      source = source.startsWith("#!") ? source.replace("\\n", "\\n" + stub + "\\n") : stub + "\\n" + source;
    }
    return { ...result, source };
  }
  return result;
}`),
);
