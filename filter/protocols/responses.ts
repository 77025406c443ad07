// The OpenAI Responses API (POST /v1/responses, also served by vLLM): which value is what.
// Shapes: openai/openai-openapi CreateResponse, Response, ResponseUsage and the streaming events
// (response.created ... response.output_text.delta ... response.completed), read at f85dbe2.
import { Field, JsonPath, Key, paramField, usageField } from "./json-path";
import { messageField } from "./openai";

export function responsesField(s: JsonPath): Field {
  const d = s.depth;
  if (d == 0 || s.array(1)) return Field.None;
  const k1 = s.key(1);
  if (s.request) {
    if (d == 1) {
      if (k1 == Key.Model) return Field.Model;
      if (k1 == Key.Stream) return Field.Stream;
      if (k1 == Key.Instructions) return Field.SystemText;
      if (k1 == Key.Input) return Field.InputText; // input as one string: a user message
      return paramField(k1); // max_output_tokens, temperature, top_p
    }
    return k1 == Key.Input ? messageField(s) : Field.None;
  }
  let base = 0;
  if (s.events) {
    // { type, delta } of response.output_text.delta (kept only for that type), or { type, response }.
    if (d == 1) return k1 == Key.Type ? Field.EventType : k1 == Key.Delta ? Field.Content : Field.None;
    if (k1 != Key.Response || s.array(2)) return Field.None;
    base = 1;
  }
  const kb = s.key(base + 1);
  if (d == base + 1) {
    if (kb == Key.Id) return Field.Id;
    if (kb == Key.Model) return Field.Model;
    return kb == Key.Status ? Field.Status : Field.None;
  }
  if (s.array(base + 2)) {
    // output[i].content[j].text of a whole response (a stream's text came in its deltas)
    if (base == 0 && kb == Key.Output && d == 5 && !s.array(3) && s.key(3) == Key.Content && s.array(4) && s.objectKey(5, Key.Text)) return Field.Content;
    return Field.None;
  }
  if (kb == Key.Usage) return usageField(s, base + 2);
  if (kb == Key.IncompleteDetails && d == base + 2 && s.key(base + 2) == Key.Reason) return Field.IncompleteReason;
  return Field.None;
}

/** The finish reason of a Responses API response, in OpenAI's vocabulary: the status, or why it is incomplete. */
export function responsesFinishReason(status: string, incompleteReason: string): string {
  if (status == "incomplete") return incompleteReason == "max_output_tokens" ? "length" : incompleteReason.length > 0 ? incompleteReason : status;
  if (status == "completed") return "stop";
  if (status == "failed") return "error";
  return status == "in_progress" || status == "queued" ? "" : status; // cut before it ended: none
}
