/** Thrown (and so failing the test) when the module misuses the proxy-wasm ABI. */
export class AbiViolation extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AbiViolation";
  }
}

/** Thrown by every call into a VM that has failed (trap, proc_exit, ABI violation), as Envoy stops using it. */
export class VmFailedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "VmFailedError";
  }
}

/** Internal: unwinds the module's stack when it calls proc_exit, like Envoy's host does. */
export class ProcExit extends Error {
  constructor(readonly code: number) {
    super(`proc_exit(${code})`);
    this.name = "ProcExit";
  }
}
