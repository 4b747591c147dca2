// The JSON body of a Messages API request, encoded here rather than by the SDK. The SDK JSON-encodes the whole body
// on every call, and most of a product's request is the same on every call of every job: the system prompt, the
// tool definitions and the output schema. Those parts are marked constant (`constantPart`) where they are built,
// once per process, and their bytes are encoded once and copied into each body; the rest (the conversation and the
// call's own settings) is encoded per call. The bytes are exactly what `JSON.stringify(body)` gives (the same keys in
// the same order), so the API receives the request the SDK would have sent.

/** The JSON bytes of each constant part, by identity. */
const encodedParts = new WeakMap<object, Buffer>();

/**
 * Marks `value` as never changing again: every request that carries it copies the bytes encoded now. The caller
 * keeps the promise (no part of it is modified afterwards); a shared object built once per process is the use.
 */
export function constantPart<T extends object>(value: T): T {
  if (!encodedParts.has(value)) encodedParts.set(value, Buffer.from(JSON.stringify(value)));
  return value;
}

/** Walked for constant parts: arrays and plain objects (anything else is left to JSON.stringify). */
function walkable(value: object): value is Record<string, unknown> | unknown[] {
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return false;
  if (Array.isArray(value)) return true;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** Collects a body's bytes: text until a constant part comes, then the part's bytes as they are. */
class Chunks {
  readonly #chunks: Buffer[] = [];
  #text = '';

  text(text: string): void {
    this.#text += text;
  }

  bytes(bytes: Buffer): void {
    if (this.#text !== '') this.#chunks.push(Buffer.from(this.#text));
    this.#text = '';
    this.#chunks.push(bytes);
  }

  done(): Buffer {
    if (this.#text !== '') this.#chunks.push(Buffer.from(this.#text));
    return Buffer.concat(this.#chunks);
  }
}

/**
 * Writes `prefix` and `value` as JSON.stringify would, or nothing when the value has no JSON form (undefined, a
 * function: left out of an object, null in an array); returns whether it wrote. A constant part is copied at any
 * level; arrays and objects are walked `depth` levels down to find them, and encoded whole below.
 */
function write(out: Chunks, prefix: string, value: unknown, depth: number): boolean {
  if (typeof value === 'object' && value !== null) {
    const encoded = encodedParts.get(value);
    if (encoded !== undefined) {
      out.text(prefix);
      out.bytes(encoded);
      return true;
    }
    if (depth > 0 && walkable(value)) {
      out.text(prefix);
      if (Array.isArray(value)) {
        out.text('[');
        value.forEach((element: unknown, index) => {
          const separator = index > 0 ? ',' : '';
          if (!write(out, separator, element, depth - 1)) out.text(`${separator}null`);
        });
        out.text(']');
      } else writeObject(out, value, depth - 1);
      return true;
    }
  }
  const json = JSON.stringify(value) as string | undefined;
  if (json === undefined) return false;
  out.text(prefix + json);
  return true;
}

function writeObject(out: Chunks, object: Record<string, unknown>, depth: number): void {
  out.text('{');
  let written = false;
  for (const key of Object.keys(object)) {
    if (write(out, `${written ? ',' : ''}${JSON.stringify(key)}:`, object[key], depth)) written = true;
  }
  out.text('}');
}

/**
 * The body's JSON as bytes, with its constant parts copied rather than encoded: those that are the body's own
 * values, elements of its arrays (the tools) or values of its objects (the output format in output_config).
 */
export function encodeRequestBody(body: object): Buffer {
  const out = new Chunks();
  writeObject(out, body as Record<string, unknown>, 1);
  return out.done();
}
