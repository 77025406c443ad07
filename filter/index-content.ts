// Wiring only: the content module (build/filter-content.wasm) is the default module
// (filter/index.ts, the same sources and root id) with content capture, redaction and the
// pseudonym key installed. Load it only where a policy turns capture on: the default module
// carries none of that code.
export * from "./index";
import { installContentEngine } from "./capture";
import { CaptureEngine } from "./capture-engine";

installContentEngine(new CaptureEngine());
