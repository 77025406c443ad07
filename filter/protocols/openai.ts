// OpenAI-compatible chat completions, completions and embeddings (what vLLM, TGI's Messages API and
// most gateways serve): which value of a request, a response or a stream chunk is what.
// Shapes: openai/openai-openapi (CreateChatCompletionRequest/Response, ...StreamResponse).
import { Field, JsonPath, Key, Param, paramField, usageField } from "./json-path";

export function openAiField(s: JsonPath): Field {
  const d = s.depth;
  if (d == 0 || s.array(1)) return Field.None;
  const k1 = s.key(1);
  if (d == 1) {
    if (k1 == Key.Model) return Field.Model;
    if (k1 == Key.Stream) return Field.Stream;
    if (!s.request) return k1 == Key.Id ? Field.Id : Field.None;
    return k1 == Key.Prompt ? Field.InputText : paramField(k1);
  }
  if (s.request) {
    if (k1 == Key.Messages) return messageField(s);
    if (k1 == Key.Prompt) return d == 2 && s.array(2) ? Field.InputText : Field.None; // a batch of prompts
    if (d != 2 || s.array(2)) return Field.None;
    const k2 = s.key(2);
    if (k1 == Key.StreamOptions && k2 == Key.IncludeUsage) return Field.IncludeUsage;
    if (k1 == Key.ResponseFormat && k2 == Key.Type) return Field.ParamBase + Param.OutputType;
    return Field.None;
  }
  if (k1 == Key.Choices) return choiceField(s);
  if (k1 == Key.Usage && !s.array(2)) return usageField(s, 2);
  return Field.None;
}

/** messages[i] of a chat (also Anthropic's messages and the Responses API's input items): role and text. */
export function messageField(s: JsonPath): Field {
  // [ { role, content: "..." | [ { type, text } ] } ]
  if (!s.array(2) || s.array(3)) return Field.None;
  const k3 = s.key(3);
  if (s.depth == 3) return k3 == Key.Role ? Field.Role : k3 == Key.Content ? Field.InputText : Field.None;
  if (s.depth == 5 && k3 == Key.Content && s.array(4) && s.objectKey(5, Key.Text)) return Field.InputText;
  return Field.None;
}

function choiceField(s: JsonPath): Field {
  // choices: [ { index, finish_reason, text, delta: { content }, message: { content } } ]
  if (!s.array(2) || s.array(3)) return Field.None;
  const k3 = s.key(3);
  if (s.depth == 3) {
    if (k3 == Key.FinishReason) return Field.FinishReason;
    if (k3 == Key.Index) return s.events ? Field.ChoiceIndex : Field.None;
    return k3 == Key.Text ? firstChoiceContent(s) : Field.None;
  }
  if (s.depth == 4 && (k3 == Key.Delta || k3 == Key.Message) && s.objectKey(4, Key.Content)) return firstChoiceContent(s);
  return Field.None;
}

/** One output message per choice (GenAI conventions): a whole response's text is kept for its first choice. */
function firstChoiceContent(s: JsonPath): Field {
  return s.events || s.element2 <= 0 ? Field.Content : Field.None;
}
