// The memory the host copies values into. Envoy answers a property or header read by calling our
// exported malloc and writing the value there (copyToPointerSize). By default that is a new managed
// ArrayBuffer, pinned until the module takes it over. A value the filter only inspects where it
// lies (a status code, a route name it looks up, a traceparent it parses) needs no object: the
// caller lends a static slot for the one host call in flight, and malloc hands that out instead.
// A request then leaves nothing for the collector, and a value larger than its slot still arrives
// (in a managed buffer, as before).

let lentBase: usize = 0;
let lentCapacity: i32 = 0;

/** Lends `capacity` bytes at `base` to the next malloc of at most that size (one host call only). */
export function lend(base: usize, capacity: i32): void {
  lentBase = base;
  lentCapacity = capacity;
}

/** Ends a loan whether or not the host used it (absent values are never allocated). */
export function endLoan(): void {
  lentBase = 0;
}

// The allocation the host made during the host call in flight: where, how large, and whether it was
// the lent slot. Its answer (pointer, size) is taken only if it is exactly this allocation.
let lastPtr: usize = 0;
let lastSize: u32 = 0;
let lastLent: bool = false;
/** More than any value Envoy hands a filter (a body chunk, 1 MiB of header pairs, a configuration): refused. */
const MAX_HOST_ALLOCATION: i32 = 16 << 20;

/**
 * Allows the host to allocate memory (Envoy: for every value it copies into the module). An absurd
 * size gets 0, which Envoy answers as InvalidMemoryAccess instead of the runtime trapping.
 */
export function malloc(size: i32): usize {
  const base = lentBase;
  lentBase = 0;
  if (base != 0 && size >= 0 && size <= lentCapacity) {
    lastPtr = base;
    lastSize = <u32>size;
    lastLent = true;
    return base;
  }
  if (size < 0 || size > MAX_HOST_ALLOCATION) {
    lastPtr = 0;
    return 0;
  }
  // Not zero-filled: the host writes every byte it asked for.
  const ptr = __pin(__new(<usize>size, idof<ArrayBuffer>()));
  lastPtr = ptr;
  lastSize = <u32>size;
  lastLent = false;
  return ptr;
}

/** Allows the host to free what it allocated and did not hand over (the SDK's own reads use it too). */
export function free(ptr: usize): void {
  if (ptr == lastPtr) lastPtr = 0;
  __unpin(ptr);
}

/** Forgets any earlier allocation: call before a host call whose answer will be taken. */
export function forgetAllocation(): void {
  lastPtr = 0;
}

/** Lets go of what the host allocated in the call in flight without handing it over (the collector reclaims it). */
export function releaseAllocation(): void {
  if (lastPtr != 0 && !lastLent) __unpin(lastPtr);
  lastPtr = 0;
}

/** The allocation was the lent slot. */
export const TAKEN_LENT: i32 = 0;
/** The allocation was a managed buffer, now the caller's to unpin. */
export const TAKEN_MANAGED: i32 = 1;
/** The answer is not what the host allocated here (a pointer elsewhere, a size beyond it): refused and released. */
export const REFUSED: i32 = -1;

/**
 * Checks the pointer and size the host answered against the allocation it made in this call: the
 * same pointer, at most the size asked for. Anything else is never read.
 */
export function takeAllocation(ptr: usize, size: u32): i32 {
  if (lastPtr == 0 || ptr != lastPtr || size > lastSize) {
    releaseAllocation();
    return REFUSED;
  }
  lastPtr = 0;
  return lastLent ? TAKEN_LENT : TAKEN_MANAGED;
}
