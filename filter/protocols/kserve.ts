// The KServe v2 / Open Inference Protocol generate extension as Triton serves it
// (POST /v2/models/{model}[/versions/{v}]/generate and /generate_stream): which value is what.
// Shapes: kserve/open-inference-protocol specification/protocol/generate_rest.yaml at d49cc23,
// triton-inference-server/server docs/protocol/extension_generate.md and src/http_server.cc
// (GenerateRequestClass::ExactMappingOutput: one-element outputs as scalars) at e1db8a6; token
// counts are the vLLM backend's optional num_input_tokens / num_output_tokens outputs
// (triton-inference-server/vllm_backend docs/additional_outputs.md: per response, so summed).
import { Field, JsonPath, Key, paramField } from "./json-path";

export function kserveField(s: JsonPath): Field {
  const d = s.depth;
  if (d == 0 || s.array(1)) return Field.None;
  const k1 = s.key(1);
  if (s.request) {
    // Parameters may also sit at the top level (Triton passes extra members on as parameters).
    if (d == 1) return k1 == Key.TextInput ? Field.InputText : k1 == Key.Stream ? Field.Stream : paramField(k1);
    if (d != 2 || k1 != Key.Parameters || s.array(2)) return Field.None;
    const k2 = s.key(2);
    return k2 == Key.Stream ? Field.Stream : paramField(k2);
  }
  if (d == 1) {
    switch (k1) {
      case Key.ModelName: return Field.Model;
      case Key.TextOutput: return Field.Content;
      case Key.NumInputTokens: return Field.PromptTokens;
      case Key.NumOutputTokens: return Field.OutputTokenDelta;
      case Key.FinishReason: return Field.FinishReason;
    }
    return Field.None;
  }
  return d == 2 && k1 == Key.Details && s.objectKey(2, Key.FinishReason) ? Field.FinishReason : Field.None;
}

/** The model a generate path names: the segment after `prefix` (e.g. "/v2/models/"), up to the next "/". */
export function kserveModelOf(path: usize, length: i32, prefixLength: i32): string {
  let end = prefixLength;
  while (end < length && load<u8>(path + end) != 0x2f && load<u8>(path + end) != 0x3f) end++;
  return String.UTF8.decodeUnsafe(path + prefixLength, end - prefixLength);
}
