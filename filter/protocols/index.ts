// The LLM protocols the filter reads, each in its own file: which value of a request, a response or
// a stream event is what (the JSON and SSE scanners are shared), and how its finish reasons read.
import { Field, JsonPath } from "./json-path";
import { anthropicField, anthropicFinishReason } from "./anthropic";
import { kserveField } from "./kserve";
import { openAiField } from "./openai";
import { responsesField, responsesFinishReason } from "./responses";
import { tgiField, tgiFinishReason } from "./tgi";

/** Protocols in the order their path matchers are tried (the most specific first). */
export const enum Protocol { KServe, OpenAi, Responses, Anthropic, Tgi, COUNT }

/** The measured field a value at the scanner's path is, under `protocol`. */
export function fieldOf(protocol: Protocol, s: JsonPath): Field {
  switch (protocol) {
    case Protocol.OpenAi: return openAiField(s);
    case Protocol.Responses: return responsesField(s);
    case Protocol.Anthropic: return anthropicField(s);
    case Protocol.Tgi: return tgiField(s);
    default: return kserveField(s);
  }
}

/** The finish reason to report, in OpenAI's vocabulary where one applies (the stat labels' set). */
export function finishReasonOf(protocol: Protocol, raw: string, status: string, incompleteReason: string): string {
  switch (protocol) {
    case Protocol.Responses: return responsesFinishReason(status, incompleteReason);
    case Protocol.Anthropic: return anthropicFinishReason(raw);
    case Protocol.Tgi:
    case Protocol.KServe: return tgiFinishReason(raw); // the generate extension uses TGI's names (generate_rest.yaml)
    default: return raw;
  }
}
