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

/** Allows the host to allocate memory (Envoy: for every value it copies into the module). */
export function malloc(size: i32): usize {
  const base = lentBase;
  if (base != 0) {
    lentBase = 0;
    if (size <= lentCapacity) return base;
  }
  // Not zero-filled: the host writes every byte it asked for.
  return __pin(__new(<usize>size, idof<ArrayBuffer>()));
}

/** Allows the host to free what it allocated and did not hand over (the SDK's own reads use it too). */
export function free(ptr: usize): void {
  __unpin(ptr);
}
