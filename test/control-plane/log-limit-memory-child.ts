// Run by log-limit-memory.test.ts as `node --expose-gc`: logs `records` distinct warnings of about
// `chars` characters each through one limitRepeats, and prints, as JSON, what the heap and the array
// buffers grew by per record it remembers.
import { limitRepeats } from "../../control-plane/src/log-limit.js";
import { heldBytes } from "./heap.js";

const [records, chars] = process.argv.slice(2).map(Number) as [number, number];
let logged = 0;
const WARM = 50;
const log = limitRepeats(() => void logged++, { maxKeys: WARM + records, nowMs: () => 0 });
// A warm-up of the same shape first: compiled code and the map's first growth are not counted.
for (let i = 0; i < WARM; i++) log({ level: "warn", msg: "warm-up", error: `${i}:${"w".repeat(chars)}` });
const before = heldBytes();
// Each record's text is built afresh (as an error's message is) and dropped once logged.
for (let i = 0; i < records; i++) log({ level: "warn", msg: "scrape failed", error: `${i}:${"e".repeat(chars)}` });
const after = heldBytes();
process.stdout.write(JSON.stringify({ logged: logged - WARM, measuredPerRecord: (after - before) / records }));
