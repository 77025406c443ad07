// The slice of the WebAssembly JS API the host uses, typed here because the project's TypeScript lib
// (ES2023 + @types/node 20) does not declare the WebAssembly namespace.

/** A linear memory. */
export interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

/** An import or export descriptor. */
export interface WasmDescriptor {
  module?: string;
  name: string;
  kind: "function" | "table" | "memory" | "global" | "tag";
}

/** A compiled module. */
export type WasmModule = object & { readonly __wasmModule?: never };

/** An instance. */
export interface WasmInstance {
  readonly exports: Record<string, unknown>;
}

interface WasmModuleStatic {
  imports(module: WasmModule): Array<Required<WasmDescriptor>>;
  exports(module: WasmModule): WasmDescriptor[];
}

interface WasmApi {
  compile(bytes: Uint8Array): Promise<WasmModule>;
  Module: WasmModuleStatic & (new (bytes: Uint8Array) => WasmModule);
  Instance: new (module: WasmModule, imports: Record<string, Record<string, unknown>>) => WasmInstance;
  Memory: new (desc: { initial: number; maximum?: number }) => WasmMemory;
  RuntimeError: new (message?: string) => Error;
}

/** Node's global WebAssembly object, typed. */
export const Wasm: WasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
