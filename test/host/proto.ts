// The protobuf wire encoding of the few messages Envoy hands out as properties (serializeValue's
// kMessage case serializes them): google.protobuf.Struct/Value/ListValue, envoy.config.core.v3
// Metadata, Node and Locality. Map entries are written in key order (deterministic serialization).

/** A JSON object, as a Struct carries one. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

class Writer {
  private readonly parts: Buffer[] = [];

  varint(v: number | bigint): this {
    let n = BigInt(v);
    const out: number[] = [];
    do {
      let b = Number(n & 0x7fn);
      n >>= 7n;
      if (n !== 0n) b |= 0x80;
      out.push(b);
    } while (n !== 0n);
    this.parts.push(Buffer.from(out));
    return this;
  }

  tag(field: number, wireType: number): this {
    return this.varint((field << 3) | wireType);
  }

  bytes(field: number, data: Uint8Array): this {
    this.tag(field, 2).varint(data.length);
    this.parts.push(Buffer.from(data));
    return this;
  }

  string(field: number, s: string | undefined): this {
    return s === undefined || s === "" ? this : this.bytes(field, Buffer.from(s, "utf8"));
  }

  double(field: number, v: number): this {
    const b = Buffer.alloc(8);
    b.writeDoubleLE(v);
    this.tag(field, 1);
    this.parts.push(b);
    return this;
  }

  done(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** google.protobuf.Value. */
export function encodeValue(v: JsonValue): Buffer {
  const w = new Writer();
  if (v === null) w.tag(1, 0).varint(0);
  else if (typeof v === "number") w.double(2, v);
  else if (typeof v === "string") w.bytes(3, Buffer.from(v, "utf8"));
  else if (typeof v === "boolean") w.tag(4, 0).varint(v ? 1 : 0);
  else if (Array.isArray(v)) w.bytes(6, encodeListValue(v));
  else w.bytes(5, encodeStruct(v));
  return w.done();
}

function encodeListValue(items: JsonValue[]): Buffer {
  const w = new Writer();
  for (const item of items) w.bytes(1, encodeValue(item));
  return w.done();
}

/** google.protobuf.Struct: map<string, Value> fields = 1. */
export function encodeStruct(o: JsonObject): Buffer {
  const w = new Writer();
  for (const key of Object.keys(o).sort()) {
    w.bytes(1, new Writer().string(1, key).bytes(2, encodeValue(o[key]!)).done());
  }
  return w.done();
}

/** envoy.config.core.v3.Metadata: map<string, Struct> filter_metadata = 1. */
export function encodeMetadata(byNamespace: Record<string, JsonObject>): Buffer {
  const w = new Writer();
  for (const ns of Object.keys(byNamespace).sort()) {
    w.bytes(1, new Writer().string(1, ns).bytes(2, encodeStruct(byNamespace[ns]!)).done());
  }
  return w.done();
}

/** envoy.config.core.v3.Locality: region = 1, zone = 2, sub_zone = 3. */
export function encodeLocality(l: { region?: string; zone?: string; subZone?: string }): Buffer {
  return new Writer().string(1, l.region).string(2, l.zone).string(3, l.subZone).done();
}

/** envoy.config.core.v3.Node: id = 1, cluster = 2, metadata (Struct) = 3, locality = 4. */
export function encodeNode(n: { id: string; cluster: string; metadata?: JsonObject; locality?: { region?: string; zone?: string; subZone?: string } }): Buffer {
  const w = new Writer().string(1, n.id).string(2, n.cluster);
  if (n.metadata !== undefined) w.bytes(3, encodeStruct(n.metadata));
  if (n.locality !== undefined) w.bytes(4, encodeLocality(n.locality));
  return w.done();
}
