// What the incremental JSON scanner knows about where it is: the keys and container kinds on the
// path to the current value, interned. The protocol readers (filter/protocols/) decide from it
// which measured field a value is, so one scanner serves every protocol. Pure logic: no host calls.

export const MAX_DEPTH: i32 = 64;
/** Longest key recognised ("cache_creation_input_tokens"); longer keys are Other. */
export const MAX_KEY: i32 = 27;

/** Keys the scanner recognises; any other key is Other. Synonyms across protocols share one key. */
export const enum Key {
  Other, Model, Stream, StreamOptions, IncludeUsage, Usage,
  /** prompt_tokens, input_tokens (Responses, Anthropic), input_length (TGI stream details). */
  PromptTokens,
  /** completion_tokens, output_tokens, generated_tokens (TGI). */
  CompletionTokens,
  Choices, FinishReason, Delta, Content, Text,
  Id,
  /** prompt_tokens_details, input_tokens_details. */
  PromptTokensDetails,
  /** completion_tokens_details, output_tokens_details. */
  CompletionTokensDetails,
  CachedTokens,
  /** reasoning_tokens, thinking_tokens (Anthropic). */
  ReasoningTokens,
  ResponseFormat, Type,
  // Request parameters, in the order of Param (max_tokens also stands for max_completion_tokens,
  // max_output_tokens and max_new_tokens).
  MaxTokens, Temperature, TopP, TopK, FrequencyPenalty, PresencePenalty, Seed, N, Dimensions, EncodingFormat,
  // Content and the other protocols' keys.
  Index, Role, Messages, Message, Prompt, Input, Instructions, System, Response, Status, Reason, IncompleteDetails,
  Output, StopReason, CacheReadInputTokens, CacheCreationInputTokens, Inputs, Parameters, Details, Token, Special,
  GeneratedText, TextInput, TextOutput, ModelName, NumInputTokens, NumOutputTokens,
}

/** Request parameters a span reports (OpenTelemetry GenAI gen_ai.request.*), kept as their JSON text. */
export const enum Param { MaxTokens, Temperature, TopP, TopK, FrequencyPenalty, PresencePenalty, Seed, ChoiceCount, Dimensions, EncodingFormat, OutputType, COUNT }

/** What a value is to the filter; the protocol readers map paths to these. */
export const enum Field {
  None, Model, Stream, IncludeUsage, FinishReason, Content, Id,
  // Token counts, from PromptTokens to OutputTokenDelta.
  PromptTokens, CompletionTokens, CachedTokens, ReasoningTokens, CacheCreationTokens,
  /** A count of output tokens in this event alone (KServe num_output_tokens): summed over a stream. */
  OutputTokenDelta,
  /** Prompt text (a message's content), system instructions, and a message's role: content capture only. */
  InputText, SystemText, Role,
  /** An SSE event's own type (Responses API, Anthropic), a Responses status and incomplete reason. */
  EventType, Status, IncompleteReason,
  /** choices[].index of a stream event, and TGI's token.special. */
  ChoiceIndex, TokenSpecial,
  /** ParamBase + Param: a request parameter. */
  ParamBase = 32,
}

/** The path to the current value: depth, and per level the container kind and the key in it. */
export class JsonPath {
  depth: i32 = 0;
  isArray: StaticArray<bool> = new StaticArray<bool>(MAX_DEPTH + 1);
  keyAt: StaticArray<u8> = new StaticArray<u8>(MAX_DEPTH + 1);
  /** Index of the current element of the array at depth 2 (messages[i], choices[i]); -1 before the first. */
  element2: i32 = -1;
  /** A request body (else a response). */
  request: bool = false;
  /** The document is one SSE event of a stream. */
  events: bool = false;

  // @ts-ignore: decorator
  @inline key(d: i32): Key {
    return <Key>unchecked(this.keyAt[d]);
  }

  // @ts-ignore: decorator
  @inline array(d: i32): bool {
    return unchecked(this.isArray[d]);
  }

  /** At depth `d`, inside an object (not an array) under key `k`. */
  // @ts-ignore: decorator
  @inline objectKey(d: i32, k: Key): bool {
    return !unchecked(this.isArray[d]) && <Key>unchecked(this.keyAt[d]) == k;
  }
}

/** Interns a key from its bytes: the short keys of every stream event by whole-word loads, the rest by length. */
export function keyOf(p: usize, n: i32): Key {
  switch (n) {
    case 1: return load<u8>(p) == 0x6e ? Key.N : Key.Other; // "n"
    case 2: return load<u16>(p) == 0x6469 ? Key.Id : Key.Other; // "id"
    case 4: {
      const w = load<u32>(p);
      if (w == 0x74786574) return Key.Text; // "text"
      if (w == 0x65707974) return Key.Type; // "type"
      if (w == 0x656c6f72) return Key.Role; // "role"
      if (w == 0x64656573) return Key.Seed; // "seed"
      return Key.Other;
    }
    case 5: {
      const w = load<u32>(p);
      const last = load<u8>(p + 4);
      if (w == 0x65646f6d && last == 0x6c) return Key.Model; // "model"
      if (w == 0x67617375 && last == 0x65) return Key.Usage; // "usage"
      if (w == 0x746c6564 && last == 0x61) return Key.Delta; // "delta"
      if (w == 0x65646e69 && last == 0x78) return Key.Index; // "index"
      if (w == 0x75706e69 && last == 0x74) return Key.Input; // "input"
      if (w == 0x656b6f74 && last == 0x6e) return Key.Token; // "token"
      if (w == 0x5f706f74) return last == 0x70 ? Key.TopP : last == 0x6b ? Key.TopK : Key.Other; // "top_p", "top_k"
      return Key.Other;
    }
    case 6: {
      const w = load<u32>(p);
      const tail = load<u16>(p + 4);
      if (w == 0x65727473 && tail == 0x6d61) return Key.Stream; // "stream"
      if (w == 0x74617473 && tail == 0x7375) return Key.Status; // "status"
      if (w == 0x6d6f7270 && tail == 0x7470) return Key.Prompt; // "prompt"
      if (w == 0x74737973 && tail == 0x6d65) return Key.System; // "system"
      if (w == 0x75706e69 && tail == 0x7374) return Key.Inputs; // "inputs"
      if (w == 0x73616572 && tail == 0x6e6f) return Key.Reason; // "reason"
      if (w == 0x7074756f && tail == 0x7475) return Key.Output; // "output"
      return Key.Other;
    }
    case 7: {
      const w = load<u32>(p);
      const tail = load<u16>(p + 4) | (<u32>load<u8>(p + 6) << 16);
      if (w == 0x696f6863 && tail == 0x736563) return Key.Choices; // "choices"
      if (w == 0x746e6f63 && tail == 0x746e65) return Key.Content; // "content"
      if (w == 0x7373656d && tail == 0x656761) return Key.Message; // "message"
      if (w == 0x61746564 && tail == 0x736c69) return Key.Details; // "details"
      if (w == 0x63657073 && tail == 0x6c6169) return Key.Special; // "special"
      return Key.Other;
    }
  }
  return n >= 8 ? keyOfLong(p, n) : Key.Other;
}

// Keys of 8 bytes or more, as one list (a single literal costs less module than one string each),
// ordered by length; LONG_KEY_IDS gives each one's Key, in the same order. Lines end in a backslash,
// which continues the literal (a + would concatenate at start-up).
const LONG_KEYS = "messages response max_tokens dimensions parameters text_input model_name temperature stop_reason text_output \
input_tokens input_length instructions finish_reason include_usage prompt_tokens output_tokens cached_tokens \
stream_options max_new_tokens generated_text encoding_format response_format thinking_tokens presence_penalty \
reasoning_tokens generated_tokens num_input_tokens completion_tokens frequency_penalty max_output_tokens \
num_output_tokens incomplete_details input_tokens_details max_completion_tokens prompt_tokens_details \
output_tokens_details cache_read_input_tokens completion_tokens_details cache_creation_input_tokens";
const LONG_KEY_IDS: StaticArray<u8> = [
  <u8>Key.Messages, <u8>Key.Response, <u8>Key.MaxTokens, <u8>Key.Dimensions, <u8>Key.Parameters, <u8>Key.TextInput, <u8>Key.ModelName, <u8>Key.Temperature, <u8>Key.StopReason, <u8>Key.TextOutput,
  <u8>Key.PromptTokens, <u8>Key.PromptTokens, <u8>Key.Instructions, <u8>Key.FinishReason, <u8>Key.IncludeUsage, <u8>Key.PromptTokens, <u8>Key.CompletionTokens, <u8>Key.CachedTokens,
  <u8>Key.StreamOptions, <u8>Key.MaxTokens, <u8>Key.GeneratedText, <u8>Key.EncodingFormat, <u8>Key.ResponseFormat, <u8>Key.ReasoningTokens, <u8>Key.PresencePenalty,
  <u8>Key.ReasoningTokens, <u8>Key.CompletionTokens, <u8>Key.NumInputTokens, <u8>Key.CompletionTokens, <u8>Key.FrequencyPenalty, <u8>Key.MaxTokens,
  <u8>Key.NumOutputTokens, <u8>Key.IncompleteDetails, <u8>Key.PromptTokensDetails, <u8>Key.MaxTokens, <u8>Key.PromptTokensDetails,
  <u8>Key.CompletionTokensDetails, <u8>Key.CacheReadInputTokens, <u8>Key.CompletionTokensDetails, <u8>Key.CacheCreationInputTokens,
];
/** Per long key: where it starts in LONG_KEYS (UTF-16 units) and its length. */
const LONG_KEY_AT: StaticArray<u16> = new StaticArray<u16>(LONG_KEY_IDS.length);
const LONG_KEY_LENGTH: StaticArray<u8> = new StaticArray<u8>(LONG_KEY_IDS.length);
for (let i = 0, at = 0; i < LONG_KEY_IDS.length; i++) {
  let end = LONG_KEYS.indexOf(" ", at);
  if (end < 0) end = LONG_KEYS.length;
  unchecked((LONG_KEY_AT[i] = <u16>at));
  unchecked((LONG_KEY_LENGTH[i] = <u8>(end - at)));
  at = end + 1;
}

function keyOfLong(p: usize, n: i32): Key {
  const chars = changetype<usize>(LONG_KEYS);
  for (let i = 0; i < LONG_KEY_IDS.length; i++) {
    const length = <i32>unchecked(LONG_KEY_LENGTH[i]);
    if (length < n) continue;
    if (length > n) break;
    const at = chars + (<usize>unchecked(LONG_KEY_AT[i]) << 1);
    // ASCII: compare each byte with the low byte of the UTF-16 unit.
    let k = 0;
    while (k < n && load<u8>(p + k) == load<u8>(at + (<usize>k << 1))) k++;
    if (k == n) return <Key>unchecked(LONG_KEY_IDS[i]);
  }
  return Key.Other;
}

/** The usage counts every protocol shares under `usage` (or TGI's `details`), at depth `d` below it. */
export function usageField(s: JsonPath, d: i32): Field {
  if (s.depth == d) {
    const k = s.key(d);
    if (k == Key.PromptTokens) return Field.PromptTokens;
    if (k == Key.CompletionTokens) return Field.CompletionTokens;
    if (k == Key.CacheReadInputTokens) return Field.CachedTokens;
    if (k == Key.CacheCreationInputTokens) return Field.CacheCreationTokens;
    return Field.None;
  }
  if (s.depth == d + 1 && !s.array(d + 1)) {
    // prompt_tokens_details.cached_tokens, completion_tokens_details.reasoning_tokens (and their synonyms)
    const k = s.key(d);
    const k2 = s.key(d + 1);
    if (k == Key.PromptTokensDetails && k2 == Key.CachedTokens) return Field.CachedTokens;
    if (k == Key.CompletionTokensDetails && k2 == Key.ReasoningTokens) return Field.ReasoningTokens;
  }
  return Field.None;
}

/** The request parameter a key at the top level (or under `parameters`) names, else None. */
export function paramField(k: Key): Field {
  // Key.MaxTokens..Key.EncodingFormat are in Param's order (n is ChoiceCount).
  if (k >= Key.MaxTokens && k <= Key.EncodingFormat) return Field.ParamBase + (k - Key.MaxTokens);
  return Field.None;
}
