// Hugging Face Text Generation Inference's own API (POST /generate, /generate_stream): which value
// is what. Shapes: huggingface/text-generation-inference router/src/lib.rs at db931fc
// (GenerateRequest, GenerateParameters, GenerateResponse, Details, StreamResponse, StreamDetails,
// Token) and router/src/server.rs (x-prompt-tokens, x-generated-tokens response headers).
import { Field, JsonPath, Key, paramField } from "./json-path";

export function tgiField(s: JsonPath): Field {
  const d = s.depth;
  if (d == 0 || s.array(1)) return Field.None;
  const k1 = s.key(1);
  if (s.request) {
    if (d == 1) return k1 == Key.Inputs ? Field.InputText : Field.None;
    // parameters: max_new_tokens, temperature, top_p, top_k, seed, frequency_penalty
    return d == 2 && k1 == Key.Parameters && !s.array(2) ? paramField(s.key(2)) : Field.None;
  }
  // A stream's last event repeats the whole text in generated_text: its tokens already carried it.
  if (d == 1) return k1 == Key.GeneratedText && !s.events ? Field.Content : Field.None;
  if (d != 2 || s.array(2)) return Field.None;
  const k2 = s.key(2);
  if (k1 == Key.Details) {
    // finish_reason, generated_tokens, and (streams) input_length
    if (k2 == Key.FinishReason) return Field.FinishReason;
    return k2 == Key.CompletionTokens ? Field.CompletionTokens : k2 == Key.PromptTokens ? Field.PromptTokens : Field.None;
  }
  if (k1 == Key.Token && s.events) return k2 == Key.Text ? Field.Content : k2 == Key.Special ? Field.TokenSpecial : Field.None;
  return Field.None;
}

/** TGI's finish_reason (length, eos_token, stop_sequence) in OpenAI's vocabulary. */
export function tgiFinishReason(raw: string): string {
  return raw == "eos_token" || raw == "stop_sequence" ? "stop" : raw;
}
