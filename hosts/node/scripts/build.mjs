/**
 * Builds the gate for Node: asks cargo for the component (`cargo run -p wasm-build -- gate-memory`, the very
 * `.wasm` the Rust hosts embed; it installs the Rust target when missing), then transpiles each
 * world with jco into `gen/<world>/`, beside `gen/<world>/component.json` naming the file and
 * its SHA-256. Skips a world whose component did not change.
 *
 *   npm run build                                  # both worlds, built by cargo
 *   npm run build -- --wasm a.wasm --wasm-kv b.wasm  # prebuilt components
 *
 * `RESUME_GATE_WASM` and `RESUME_GATE_KV_WASM` name prebuilt components too (the tests pass the
 * files host-example and the key-value hosts embed).
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { transpile } from "@bytecodealliance/jco";

const here = dirname(fileURLToPath(import.meta.url));
/** Bumped when what this script makes of a component changes, so that `gen/` is made again. */
const RECIPE = 2;
const root = resolve(here, "../../..");
const { values: args } = parseArgs({ options: { wasm: { type: "string" }, "wasm-kv": { type: "string" } } });

/** The component of `world` ("memory" or "kv"), built by cargo unless a path was given. */
function componentPath(world, given) {
  if (given) return resolve(given);
  const out = execFileSync("cargo", ["run", "-q", "--locked", "-p", "wasm-build", "--", `gate-${world}`], {
    cwd: root,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  return out.trim().split("\n").at(-1);
}

async function build(world, wasmPath) {
  const bytes = await readFile(wasmPath);
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const outDir = join(here, "..", "gen", world);
  const stamp = join(outDir, "component.json");
  const previous = await readFile(stamp, "utf8").then(JSON.parse, () => null);
  if (previous?.sha256 === sha256 && previous?.recipe === RECIPE) return console.error(`resume-gate: gen/${world} is up to date (${wasmPath})`);
  const { files } = await transpile(bytes, { name: "gate", instantiation: "sync", noTypescript: true, quiet: true });
  files["gate.js"] = readDebugFlagOnce(Buffer.from(files["gate.js"]).toString("utf8"));
  await rm(outDir, { recursive: true, force: true });
  for (const [name, content] of Object.entries(files)) {
    await mkdir(dirname(join(outDir, name)), { recursive: true });
    await writeFile(join(outDir, name), content);
  }
  await writeFile(stamp, JSON.stringify({ source: wasmPath, sha256, bytes: bytes.length, recipe: RECIPE }, null, 2) + "\n");
  console.error(`resume-gate: transpiled ${wasmPath} (${bytes.length} bytes) into gen/${world}`);
}

/**
 * jco 1.35's glue logs through `_debugLog`, which reads `process.env.JCO_DEBUG` on each of the
 * dozens of internal steps of every call: about half of an `emit` (13 µs → 6.5 µs without).
 * The flag is read once, at load, instead; `JCO_DEBUG` still works when set before start.
 */
function readDebugFlagOnce(js) {
  const lookup = "if (!globalThis?.process?.env?.JCO_DEBUG) { return; }";
  if (!js.includes(lookup)) {
    console.error("resume-gate: jco's _debugLog changed; its per-call environment lookup stays");
    return js;
  }
  const flag = "const _jcoDebug = Boolean(globalThis?.process?.env?.JCO_DEBUG);\n";
  return js.replace("const _debugLog = ", `${flag}  const _debugLog = `).replace(lookup, "if (!_jcoDebug) { return; }");
}

await build("memory", componentPath("memory", args.wasm ?? process.env.RESUME_GATE_WASM));
await build("kv", componentPath("kv", args["wasm-kv"] ?? process.env.RESUME_GATE_KV_WASM));
