// The bridge to bloomkit.wasm (crates/bloomkit-wasm/src/ffi.rs): a string goes into the
// module's input buffer, each call leaves a JSON reply in its output buffer. Every answer
// comes from the module; nothing here decides anything. Used by the page and by the Node.js
// test that compares the module with native code.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// Loads the module from a fetch Response (or a promise of one) or from its bytes.
export async function load(source) {
  let instance;
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) {
    ({ instance } = await WebAssembly.instantiate(source, {}));
  } else {
    const response = await source;
    if (!response.ok) {
      throw new Error(`bloomkit.wasm: ${response.status} ${response.statusText}`);
    }
    ({ instance } = await WebAssembly.instantiate(await response.arrayBuffer(), {}));
  }
  return new Bloomkit(instance.exports);
}

export class Bloomkit {
  constructor(exports) {
    this.x = exports;
  }

  // Copies `text` into the module; returns its length in bytes.
  put(text) {
    const bytes = encoder.encode(text);
    const ptr = this.x.bk_input(bytes.length);
    // A fresh view: the call above may have grown the memory, detaching older views.
    new Uint8Array(this.x.memory.buffer, ptr, bytes.length).set(bytes);
    return bytes.length;
  }

  // The last call's reply, parsed. A refusal is an object with an `error` message.
  take() {
    const ptr = this.x.bk_output_ptr();
    const len = this.x.bk_output_len();
    return JSON.parse(decoder.decode(new Uint8Array(this.x.memory.buffer, ptr, len)));
  }

  teachState() { this.x.bk_teach_state(); return this.take(); }
  teachReset() { this.x.bk_teach_reset(); return this.take(); }
  teachAdd(word) { this.x.bk_teach_add(this.put(word)); return this.take(); }
  teachQuery(word) { this.x.bk_teach_query(this.put(word)); return this.take(); }
  curve(m, n, k, maxK) { this.x.bk_curve(m, n, k, maxK); return this.take(); }
  kinds() { this.x.bk_kinds(); return this.take(); }
  labBuild(kind, keys, fpRate, absentKeys) {
    this.x.bk_lab_build(this.put(kind), keys, fpRate, absentKeys);
    return this.take();
  }
  labFill(factor, absentKeys) { this.x.bk_lab_fill(factor, absentKeys); return this.take(); }
  labAnswers(start, count, absent) {
    this.x.bk_lab_answers(start, count, absent ? 1 : 0);
    return this.take();
  }
}
