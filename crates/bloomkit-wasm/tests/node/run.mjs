// Runs requests against bloomkit.wasm through the page's own bridge (page/bloomkit.js) and
// prints each reply as one line of JSON, for tests/node.rs to compare with native code.
//
// Usage: node run.mjs MODULE.wasm < requests.json
// where requests.json is an array of [method, ...arguments], methods of the Bloomkit class.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const { load } = await import(pathToFileURL(join(here, "..", "..", "page", "bloomkit.js")));

const bloomkit = await load(readFileSync(process.argv[2]));
const requests = JSON.parse(readFileSync(0, "utf8"));
const lines = [];
for (const [method, ...args] of requests) {
  if (typeof bloomkit[method] !== "function") {
    throw new Error(`no method ${method} in the bridge`);
  }
  lines.push(JSON.stringify(bloomkit[method](...args)));
}
process.stdout.write(lines.join("\n") + "\n");
