// Entry point of the control plane. The policy API (issue 4) and the metrics pipeline (issue 5)
// are wired here as they land; until then it only reports its version.
import { readFileSync } from "node:fs";

const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
console.log(`tokentrace control plane ${manifest.version}`);
