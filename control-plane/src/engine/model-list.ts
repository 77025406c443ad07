// Which base model each LoRA adapter of a vLLM server extends, from its model list: `GET /v1/models`
// answers `{"object":"list","data":[ModelCard...]}` with a card per base model (parent null) and
// one per loaded adapter whose `parent` is the base model it was loaded for, else the first served
// model (vllm-project/vllm 075e9ba vllm/entrypoints/openai/serving_models.py
// OpenAIServingModels.show_available_models). The control plane asks each vLLM target now and then,
// never on the scrape's path: a failure is counted by reason and the last good list is kept.
import type { Clock } from "../remote-write/retry.js";
import type { ScrapeTarget } from "../scrape/targets.js";
import { MAX_ADAPTERS_PER_POD, MAX_ADAPTER_NAME_LENGTH } from "./lora-info.js";

/** Bounds of one model-list request. */
export interface ModelListLimits {
  timeoutMs: number;
  /** Largest body read, bytes: a list of 64 adapters with long paths is about 40 KiB. */
  maxBodyBytes: number;
  /** How often a target's list is asked again, ms. */
  refreshMs: number;
}

/** Defaults: 2 s, 256 KiB, every minute (adapters are loaded and unloaded at run time). */
export const MODEL_LIST_LIMITS: ModelListLimits = { timeoutMs: 2000, maxBodyBytes: 256 * 1024, refreshMs: 60_000 };

/** Why a model list was not read (bounded: the reason label of the failure counter). */
export type ModelListFailure = "timeout" | "network" | `http_${number}` | "body_too_large" | "invalid_json";

/** Adapter -> base model, or why not; `dropped` counts adapters past the bounds. */
export type ModelListResult = { ok: true; parents: Map<string, string>; dropped: number } | { ok: false; reason: ModelListFailure };

/** The model list of the server behind a scrape target: same origin, `/v1/models`; none for a merged target (pilot-agent serves no model list). */
export function modelListUrl(t: ScrapeTarget): string | undefined {
  if (t.kind !== "vllm" || t.merged) return undefined;
  try {
    return new URL("/v1/models", t.url).toString();
  } catch {
    return undefined;
  }
}

/** Adapter -> parent from a model-list body; cards without a string `parent` are base models. */
export function parseModelList(body: string): ModelListResult {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch {
    return { ok: false, reason: "invalid_json" };
  }
  const data = (doc as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return { ok: false, reason: "invalid_json" };
  const parents = new Map<string, string>();
  let dropped = 0;
  for (const card of data as unknown[]) {
    const { id, parent } = (card ?? {}) as { id?: unknown; parent?: unknown };
    if (typeof id !== "string" || typeof parent !== "string" || id === "" || parent === "") continue;
    if (id.length > MAX_ADAPTER_NAME_LENGTH || parent.length > MAX_ADAPTER_NAME_LENGTH || parents.size >= MAX_ADAPTERS_PER_POD) {
      dropped++;
      continue;
    }
    parents.set(id, parent);
  }
  return { ok: true, parents, dropped };
}

/** GETs a model list within the limits. */
export async function fetchModelList(url: string, limits: ModelListLimits = MODEL_LIST_LIMITS): Promise<ModelListResult> {
  try {
    const res = await fetch(url, { headers: { Accept: "application/json", "User-Agent": "tokentrace-control-plane/0.1.0" }, signal: AbortSignal.timeout(limits.timeoutMs) });
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel();
      return { ok: false, reason: `http_${res.status}` };
    }
    const declared = Number(res.headers.get("content-length") ?? "");
    if (Number.isFinite(declared) && declared > limits.maxBodyBytes) {
      await res.body.cancel();
      return { ok: false, reason: "body_too_large" };
    }
    const chunks: Uint8Array[] = [];
    let bytes = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      bytes += chunk.byteLength;
      if (bytes > limits.maxBodyBytes) return { ok: false, reason: "body_too_large" };
      chunks.push(chunk);
    }
    return parseModelList(Buffer.concat(chunks, bytes).toString("utf8"));
  } catch (err) {
    const name = (err as { name?: string }).name;
    return { ok: false, reason: name === "TimeoutError" || name === "AbortError" ? "timeout" : "network" };
  }
}

interface Entry {
  parents?: Map<string, string>;
  askedAtMs: number;
  inFlight: boolean;
}

/** The newest model list of every vLLM target, asked at most every `refreshMs`, one request per target at a time. */
export class ModelLists {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly opts: {
      clock: Pick<Clock, "now">;
      limits?: ModelListLimits;
      onFailure?: (reason: ModelListFailure) => void;
      onDropped?: (n: number) => void;
      fetchList?: (url: string, limits: ModelListLimits) => Promise<ModelListResult>;
    },
  ) {}

  /** Asks `t` for its list when it is due; resolves once the answer (if any was asked) is in. */
  refresh(t: ScrapeTarget): Promise<void> {
    const url = modelListUrl(t);
    if (url === undefined) return Promise.resolve();
    const limits = this.opts.limits ?? MODEL_LIST_LIMITS;
    const now = this.opts.clock.now();
    let e = this.entries.get(t.id);
    if (e && (e.inFlight || now - e.askedAtMs < limits.refreshMs)) return Promise.resolve();
    if (!e) this.entries.set(t.id, (e = { askedAtMs: now, inFlight: true }));
    const entry = e;
    entry.askedAtMs = now;
    entry.inFlight = true;
    return (this.opts.fetchList ?? fetchModelList)(url, limits).then((r) => {
      entry.inFlight = false;
      if (this.entries.get(t.id) !== entry) return;
      if (r.ok) {
        entry.parents = r.parents;
        if (r.dropped > 0) this.opts.onDropped?.(r.dropped);
      } else this.opts.onFailure?.(r.reason);
    });
  }

  /** Adapter -> base model of `targetId`'s last good list, or undefined before one. */
  parentsOf(targetId: string): ReadonlyMap<string, string> | undefined {
    return this.entries.get(targetId)?.parents;
  }

  /** Forgets a target that went away. */
  forget(targetId: string): void {
    this.entries.delete(targetId);
  }
}
