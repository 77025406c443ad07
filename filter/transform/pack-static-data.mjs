// An asc transform (asconfig.json "transform"): packs the module's static data into one data
// segment and unpacks it first thing in `_initialize`, before any other code of the module runs.
//
// Why: AssemblyScript stores every string literal as UTF-16 behind a 20-byte object header, so the
// static data is mostly zero bytes (an ASCII character is its byte and a zero), and Binaryen splits
// it into a data segment per run of non-zero bytes, two or more per literal, each with a segment
// header of its own. Packed, build/filter.wasm's data section is less than half as large.
//
// The memory the code sees is the same image, byte for byte: the build checks that the packed
// bytes unpack to the original ones (a fresh instance's memory is zero, so only the non-zero bytes
// are written), and the packed bytes, placed above the image where the heap later starts, are
// zeroed once read. The initial memory grows by a page only when they do not fit above the image
// in the pages the module asks for (build/filter-content.wasm's do not; build/filter.wasm's do).
// The cost is one pass over the image in `_initialize`, about 25 µs once per VM; no request pays
// anything.
//
// Format, one op after another; the write position starts at the image's first byte:
//   1ccccccc   c+1 UTF-16 units below 0x100: each next byte is written as a unit's low byte, and
//              the position moves two bytes (the high byte stays zero)
//   0llzzzzz   the l (0..3) next bytes are written as they are, then the position skips z (0..31)
//              zero bytes

const WIDE = 0x80;
const MAX_WIDE = 128;
const MAX_LITERAL = 3;
const MAX_SKIP = 31;

/** `image` (a Uint8Array) packed, per the format above. */
export function pack(image) {
  const out = [];
  // How many UTF-16 units below 0x100 (a non-zero byte, then a zero) start at `i`.
  const unitsAt = (i) => {
    let n = 0;
    while (n < MAX_WIDE && i + 2 * n + 1 < image.length && image[i + 2 * n] !== 0 && image[i + 2 * n + 1] === 0) n++;
    return n;
  };
  let i = 0;
  while (i < image.length) {
    const units = unitsAt(i);
    if (units >= 2) {
      out.push(WIDE | (units - 1));
      for (let k = 0; k < units; k++) out.push(image[i + 2 * k]);
      i += 2 * units;
      continue;
    }
    let literal = 0;
    while (literal < MAX_LITERAL && i + literal < image.length && image[i + literal] !== 0 && !(literal > 0 && unitsAt(i + literal) >= 3)) literal++;
    let skip = 0;
    while (skip < MAX_SKIP && i + literal + skip < image.length && image[i + literal + skip] === 0) skip++;
    out.push((literal << 5) | skip);
    for (let k = 0; k < literal; k++) out.push(image[i + k]);
    i += literal + skip;
  }
  return Uint8Array.from(out);
}

/** The `length` bytes `packed` unpacks to: what the module's unpacker does, in JavaScript. */
export function unpack(packed, length) {
  const image = new Uint8Array(length);
  let i = 0;
  let j = 0;
  while (i < packed.length) {
    const op = packed[i++];
    if (op & WIDE) {
      for (let n = (op & 0x7f) + 1; n > 0; n--, j += 2) image[j] = packed[i++];
    } else {
      for (let n = op >> 5; n > 0; n--) image[j++] = packed[i++];
      j += op & MAX_SKIP;
    }
  }
  return image;
}

export default class PackStaticData {
  afterCompile(module) {
    const binaryen = this.binaryen;
    // An imported memory need not be zero where the image goes, and without AssemblyScript's start
    // function (~start, exported as _initialize) nothing would unpack it: such a module stays as it is.
    const memory = module.getMemoryInfo();
    const start = module.getFunction("~start");
    if (memory.module || !start) return;
    const pieces = [];
    for (let s = 0; s < module.getNumDataSegments(); s++) {
      const info = module.getDataSegmentInfo(module.getDataSegmentByIndex(s));
      if (info.passive || typeof info.offset !== "number") return; // only plain active segments
      pieces.push({ offset: info.offset, data: new Uint8Array(info.data) });
    }
    if (pieces.length === 0) return;

    const from = Math.min(...pieces.map((p) => p.offset));
    const to = Math.max(...pieces.map((p) => p.offset + p.data.length));
    const image = new Uint8Array(to - from);
    for (const p of pieces) image.set(p.data, p.offset - from);
    const packed = pack(image);
    if (!unpack(packed, image.length).every((b, k) => b === image[k])) throw new Error("pack-static-data: the packed data does not unpack to the original");
    const packedAt = (to + 15) & ~15;
    const packedEnd = packedAt + packed.length;
    const pages = Math.max(memory.initial, Math.ceil(packedEnd / 65536));
    // The memory keeps its internal name ("0"), so its export still names it.
    module.setMemory(pages, memory.max ?? -1, null, [{ name: "packed", data: packed, offset: module.i32.const(packedAt), passive: false }], memory.shared, memory.is64, "0");

    // The unpacker: i reads the packed bytes, j writes the image.
    const i32 = binaryen.i32;
    const [I, J, OP, N] = [0, 1, 2, 3];
    const get = (k) => module.local.get(k, i32);
    const set = (k, value) => module.local.set(k, value);
    const add = (k, value) => set(k, module.i32.add(get(k), value));
    const constant = (n) => module.i32.const(n);
    const body = module.block(null, [
      set(I, constant(packedAt)),
      set(J, constant(from)),
      module.block("done", [
        module.loop("op", module.block(null, [
          module.br("done", module.i32.ge_u(get(I), constant(packedEnd))),
          set(OP, module.i32.load8_u(0, 1, get(I))),
          add(I, constant(1)),
          module.if(
            module.i32.and(get(OP), constant(WIDE)),
            module.block(null, [
              set(N, module.i32.add(module.i32.and(get(OP), constant(0x7f)), constant(1))),
              module.loop("units", module.block(null, [
                module.i32.store8(0, 1, get(J), module.i32.load8_u(0, 1, get(I))),
                add(I, constant(1)),
                add(J, constant(2)),
                set(N, module.i32.sub(get(N), constant(1))),
                module.br("units", get(N)),
              ])),
            ]),
            module.block(null, [
              set(N, module.i32.shr_u(get(OP), constant(5))),
              module.memory.copy(get(J), get(I), get(N)),
              add(I, get(N)),
              add(J, module.i32.add(get(N), module.i32.and(get(OP), constant(MAX_SKIP)))),
            ]),
          ),
          module.br("op"),
        ])),
      ]),
      // Zero again where the packed bytes were, as in a module that was never packed.
      module.memory.fill(constant(packedAt), constant(0), constant(packed.length)),
    ]);
    module.addFunction("~unpack-static-data", binaryen.none, binaryen.none, [i32, i32, i32, i32], body);

    // First thing in the start function, once: a second call must not unpack again over data the
    // module has changed since (AssemblyScript's own once-only check comes after this).
    module.addGlobal("~static-data-unpacked", i32, true, constant(0));
    const unpackOnce = module.if(
      module.i32.eqz(module.global.get("~static-data-unpacked", i32)),
      module.block(null, [module.global.set("~static-data-unpacked", constant(1)), module.call("~unpack-static-data", [], binaryen.none)]),
    );
    binaryen.Function.setBody(start, module.block(null, [unpackOnce, binaryen.Function.getBody(start)]));
  }
}
