// Anthropic Messages (POST /v1/messages, also Anthropic-compatible servers): which value is what.
// Shapes: anthropics/anthropic-sdk-typescript src/resources/messages/messages.ts at bfa9197
// (MessageCreateParams, Message, Usage, RawMessageStreamEvent: message_start, content_block_delta,
// message_delta with cumulative usage, message_stop).
import { Field, JsonPath, Key, paramField, usageField } from "./json-path";
import { messageField } from "./openai";

export function anthropicField(s: JsonPath): Field {
  const d = s.depth;
  if (d == 0 || s.array(1)) return Field.None;
  const k1 = s.key(1);
  if (s.request) {
    if (d == 1) {
      if (k1 == Key.Model) return Field.Model;
      if (k1 == Key.Stream) return Field.Stream;
      return k1 == Key.System ? Field.SystemText : paramField(k1); // max_tokens, temperature, top_p, top_k
    }
    if (k1 == Key.System) return d == 3 && s.array(2) && s.objectKey(3, Key.Text) ? Field.SystemText : Field.None;
    return k1 == Key.Messages ? messageField(s) : Field.None;
  }
  if (!s.events) return messageObjectField(s, 0);
  if (d == 1) return k1 == Key.Type ? Field.EventType : Field.None;
  if (s.array(2)) return Field.None;
  if (k1 == Key.Delta && d == 2) {
    // message_delta's stop_reason; content_block_delta's text_delta
    const k2 = s.key(2);
    return k2 == Key.StopReason ? Field.FinishReason : k2 == Key.Text ? Field.Content : Field.None;
  }
  if (k1 == Key.Usage) return usageField(s, 2); // message_delta: cumulative counts
  return k1 == Key.Message ? messageObjectField(s, 1) : Field.None; // message_start
}

/** A Message object at depth base + 1: the whole response, or message_start's `message`. */
function messageObjectField(s: JsonPath, base: i32): Field {
  const k = s.key(base + 1);
  if (s.depth == base + 1) {
    if (k == Key.Id) return Field.Id;
    if (k == Key.Model) return Field.Model;
    return k == Key.StopReason ? Field.FinishReason : Field.None;
  }
  if (k == Key.Usage && !s.array(base + 2)) return usageField(s, base + 2);
  // content: [ { type: "text", text } ]
  if (k == Key.Content && s.depth == base + 3 && s.array(base + 2) && s.objectKey(base + 3, Key.Text)) return Field.Content;
  return Field.None;
}

/** stop_reason in OpenAI's vocabulary where one applies (the stat labels' set), else as it came. */
export function anthropicFinishReason(raw: string): string {
  if (raw == "end_turn" || raw == "stop_sequence") return "stop";
  if (raw == "max_tokens" || raw == "model_context_window_exceeded") return "length";
  if (raw == "tool_use") return "tool_calls";
  return raw == "refusal" ? "content_filter" : raw;
}
