// LoRA on the demo (TOKENTRACE_DEMO_LORA=on): the simulated vLLM server loads two adapters of its
// model, as `vllm serve tokentrace-sim-1 --enable-lora --max-loras 2 --lora-modules sql-lora=...
// chat-de=...` would; the load sends a quarter of the chat and text completions to each; and the
// demo's Prometheus evaluates the per-adapter recording rules (group tokentrace.lora-adapters of
// istio/observability/recording-rules.yaml, which has no pipeline twin) beside the alert rules.
// sql-lora's application puts the table rows it retrieved for the question before every prompt, so
// its calls carry several times the prompt tokens of chat-de's, which no prefix cache can hold:
// docs/demo-lora.md reads which adapter is slow, and why, from the figures.
import { readFileSync } from "node:fs";
import { RECORDING_RULES_FILE, type RuleSource } from "./alert-rules.js";
import type { LoraModule } from "./llm-upstream.js";
import type { AdapterShare } from "./load.js";

/** --lora-modules: the adapters the server loads at start. */
export const DEMO_LORA_MODULES: readonly LoraModule[] = [
  { name: "sql-lora", path: "/adapters/sql-lora" },
  { name: "chat-de", path: "/adapters/chat-de" },
];

/** --max-loras: both adapters fit one batch, so vLLM's max_loras rule never holds one back (the simulated scheduler has none). */
export const DEMO_MAX_LORAS = 2;

/** A quarter of the completions to each adapter; sql-lora's prompts carry 16,000 characters (about 4,000 tokens) of retrieved rows. */
export const DEMO_LORA_LOAD: readonly AdapterShare[] = [
  { model: "sql-lora", share: 0.25, contextChars: 16_000 },
  { model: "chat-de", share: 0.25 },
];

/** The recording-rule group the LoRA walk-through queries. */
export const LORA_RULE_GROUP = "tokentrace.lora-adapters";

/** That group of recording-rules.yaml, for demoRuleFile (alert-rules.ts). */
export function loraRuleSource(): RuleSource {
  return { file: RECORDING_RULES_FILE, text: readFileSync(RECORDING_RULES_FILE, "utf8"), groups: [LORA_RULE_GROUP] };
}
