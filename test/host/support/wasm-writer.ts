// A tiny WebAssembly binary writer for the host's own tests: hand-built modules exercise one host
// call at a time, without the real filter and without any prebuilt binary.

export type ValType = "i32" | "i64";

/** An imported function. */
export interface ImportFn {
  module: string;
  name: string;
  params: ValType[];
  results: ValType[];
}

/** A defined (and exported, when `export` is set) function; `body` gets a resolver of function indexes. */
export interface DefinedFn {
  export?: string;
  params: ValType[];
  results: ValType[];
  locals?: ValType[];
  body: (fn: (name: string) => number) => number[];
}

/** A whole module: one memory (exported as "memory"), imports, functions and data segments. */
export interface ModuleSpec {
  imports?: ImportFn[];
  funcs: DefinedFn[];
  memoryPages?: number;
  data?: Array<{ offset: number; bytes: Uint8Array | string }>;
}

export function uleb(n: number): number[] {
  const out: number[] = [];
  let v = n >>> 0;
  do {
    let b = v & 0x7f;
    v >>>= 7;
    if (v !== 0) b |= 0x80;
    out.push(b);
  } while (v !== 0);
  return out;
}

export function sleb(n: bigint | number): number[] {
  let v = BigInt(n);
  const out: number[] = [];
  for (;;) {
    const b = Number(v & 0x7fn);
    v >>= 7n;
    const done = (v === 0n && (b & 0x40) === 0) || (v === -1n && (b & 0x40) !== 0);
    out.push(done ? b : b | 0x80);
    if (done) return out;
  }
}

const enc = new TextEncoder();
const name = (s: string): number[] => {
  const b = enc.encode(s);
  return [...uleb(b.length), ...b];
};
const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];
const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];
const valType = (t: ValType): number => (t === "i32" ? 0x7f : 0x7e);

// Instructions.
export const op = {
  i32: (n: number): number[] => [0x41, ...sleb(n)],
  i64: (n: bigint | number): number[] => [0x42, ...sleb(n)],
  get: (i: number): number[] => [0x20, ...uleb(i)],
  set: (i: number): number[] => [0x21, ...uleb(i)],
  call: (i: number): number[] => [0x10, ...uleb(i)],
  drop: [0x1a],
  add: [0x6a],
  sub: [0x6b],
  mul: [0x6c],
  eqz: [0x45],
  load: [0x28, 0x02, 0x00],
  store: [0x36, 0x02, 0x00],
  unreachable: [0x00],
};

/** Encodes the module. */
export function buildModule(spec: ModuleSpec): Uint8Array {
  const imports = spec.imports ?? [];
  const types: string[] = [];
  const typeBytes: number[][] = [];
  const typeIndex = (params: ValType[], results: ValType[]): number => {
    const key = `${params.join(",")}->${results.join(",")}`;
    let i = types.indexOf(key);
    if (i < 0) {
      i = types.length;
      types.push(key);
      typeBytes.push([0x60, ...vec(params.map((p) => [valType(p)])), ...vec(results.map((r) => [valType(r)]))]);
    }
    return i;
  };
  const names = new Map<string, number>();
  imports.forEach((imp, i) => names.set(`${imp.module}.${imp.name}`, i));
  spec.funcs.forEach((f, i) => {
    if (f.export) names.set(f.export, imports.length + i);
  });
  const resolve = (n: string): number => {
    const i = names.get(n);
    if (i === undefined) throw new Error(`wasm-writer: no function named ${n}`);
    return i;
  };

  const importSec = imports.map((imp) => [...name(imp.module), ...name(imp.name), 0x00, ...uleb(typeIndex(imp.params, imp.results))]);
  const funcSec = spec.funcs.map((f) => uleb(typeIndex(f.params, f.results)));
  const exportSec: number[][] = [[...name("memory"), 0x02, 0x00]];
  spec.funcs.forEach((f, i) => {
    if (f.export) exportSec.push([...name(f.export), 0x00, ...uleb(imports.length + i)]);
  });
  const codeSec = spec.funcs.map((f) => {
    const locals = (f.locals ?? []).map((l) => [1, valType(l)]);
    const body = [...vec(locals), ...f.body(resolve), 0x0b];
    return [...uleb(body.length), ...body];
  });
  const dataSec = (spec.data ?? []).map((d) => {
    const bytes = typeof d.bytes === "string" ? enc.encode(d.bytes) : d.bytes;
    return [0x00, ...op.i32(d.offset), 0x0b, ...uleb(bytes.length), ...bytes];
  });

  const out = [
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    ...section(1, vec(typeBytes)),
    ...(importSec.length ? section(2, vec(importSec)) : []),
    ...section(3, vec(funcSec)),
    ...section(5, vec([[0x00, ...uleb(spec.memoryPages ?? 1)]])),
    ...section(7, vec(exportSec)),
    ...section(10, vec(codeSec)),
    ...(dataSec.length ? section(11, vec(dataSec)) : []),
  ];
  return Uint8Array.from(out);
}
