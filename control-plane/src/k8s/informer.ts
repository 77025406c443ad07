// A list-watch informer for our WasmPlugins: list, then watch from the list's resourceVersion
// (with bookmarks so the resume point stays fresh); a watch that ends is resumed, a 410 Gone
// re-lists, and any failure waits a capped backoff (through the injected delay) before trying
// again. The cache is what the reconciler compares its desired state with.
import type { Backoff, Delay } from "./backoff.js";
import type { CustomObject, CustomObjectApi, WatchEvent } from "./client.js";
import { keyOf, type WasmPlugin } from "./wasmplugin.js";

/** Informer options. */
export interface InformerOptions<T extends CustomObject = WasmPlugin> {
  api: Pick<CustomObjectApi<T>, "list" | "watch">;
  /** The resource's name in logs and readiness ("wasmplugins"). */
  resource?: string;
  /** Namespace to watch; undefined = cluster-wide. */
  namespace: string | undefined;
  labelSelector: string;
  backoff: Backoff;
  delay: Delay;
  /** Called with the key of every object that was added, changed or removed. */
  onChange: (key: string) => void;
  /** Called after every successful (re-)list. */
  onSynced?: () => void;
  log?: (record: object) => void;
  /** Milliseconds clock; a watch that stayed open a while counts as healthy even if quiet. */
  now?: () => number;
}

/** A quiet watch that lasted at least this long ended normally (server timeout), not in a loop. */
export const healthyWatchMs = 1000;

type WatchOutcome = { kind: "ended"; progressed: boolean } | { kind: "gone" } | { kind: "failed"; message: string };

/** Keeps a cache of custom objects (namespace/name keys) in sync with the API. */
export class Informer<T extends CustomObject> {
  readonly cache = new Map<string, T>();
  /** True once a list succeeded (stays true: the cache is still the best knowledge). */
  hasSynced = false;
  /** The last failure, cleared by the next success. */
  lastError: string | undefined;
  /** Lists done (for observability and tests). */
  lists = 0;
  private resourceVersion = "";

  /** Where the next watch resumes (list resourceVersion, then the last event or bookmark). */
  get resumeResourceVersion(): string {
    return this.resourceVersion;
  }
  private readonly abort = new AbortController();
  private stopWatch: (() => void) | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly options: InformerOptions<T>) {}

  private get resource(): string {
    return this.options.resource ?? "wasmplugins";
  }

  /** Starts the list-watch loop. */
  start(): void {
    this.running ??= this.loop();
  }

  /** Stops it and waits for the loop to finish. */
  async stop(): Promise<void> {
    this.abort.abort();
    this.stopWatch?.();
    await this.running;
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      if (!(await this.list())) {
        await this.options.delay(this.options.backoff.next(), this.abort.signal);
        continue;
      }
      while (!this.stopped) {
        const outcome = await this.watchOnce();
        if (this.stopped || outcome.kind === "gone") break;
        if (outcome.kind === "failed") {
          this.lastError = `watch ${this.resource} failed: ${outcome.message}`;
          this.options.log?.({ level: "warn", msg: "watch failed", resource: this.resource, error: outcome.message });
          await this.options.delay(this.options.backoff.next(), this.abort.signal);
          break;
        }
        if (outcome.progressed) {
          this.options.backoff.reset();
        } else {
          // A watch that ends without delivering anything: do not hot-loop on the apiserver.
          await this.options.delay(this.options.backoff.next(), this.abort.signal);
        }
      }
    }
  }

  private async list(): Promise<boolean> {
    const result = await this.options.api.list(this.options.namespace, this.options.labelSelector);
    this.lists += 1;
    if (!result.ok) {
      this.lastError = `list ${this.resource} failed: ${result.code === 0 ? result.reason : `${result.code} ${result.reason}`}`;
      this.options.log?.({ level: "warn", msg: "list failed", resource: this.resource, code: result.code, reason: result.reason });
      return false;
    }
    const seen = new Set<string>();
    for (const item of result.value.items) {
      const key = keyOf(item.metadata.namespace, item.metadata.name);
      seen.add(key);
      const previous = this.cache.get(key);
      this.cache.set(key, item);
      if (previous?.metadata.resourceVersion !== item.metadata.resourceVersion) this.options.onChange(key);
    }
    for (const key of [...this.cache.keys()]) {
      if (!seen.has(key)) {
        this.cache.delete(key);
        this.options.onChange(key);
      }
    }
    this.resourceVersion = result.value.resourceVersion;
    this.hasSynced = true;
    this.lastError = undefined;
    this.options.backoff.reset();
    this.options.onSynced?.();
    return true;
  }

  private watchOnce(): Promise<WatchOutcome> {
    const now = this.options.now ?? Date.now;
    const startedMs = now();
    return new Promise((resolve) => {
      let progressed = false;
      let gone = false;
      const onEvent = (event: WatchEvent<T>) => {
        if (event.type === "ERROR") {
          // 410 Expired/Gone: our resourceVersion is older than the apiserver's history.
          if (event.object.code === 410) gone = true;
          return;
        }
        const rv = event.object.metadata?.resourceVersion;
        if (rv !== undefined) this.resourceVersion = rv;
        progressed = true;
        if (event.type === "BOOKMARK") return;
        const key = keyOf(event.object.metadata.namespace, event.object.metadata.name);
        if (event.type === "DELETED") this.cache.delete(key);
        else this.cache.set(key, event.object);
        this.options.onChange(key);
      };
      const onEnd = (error: unknown) => {
        this.stopWatch = undefined;
        if (gone) resolve({ kind: "gone" });
        else if (error && !this.stopped) resolve({ kind: "failed", message: (error as Error).message ?? String(error) });
        else resolve({ kind: "ended", progressed: progressed || now() - startedMs >= healthyWatchMs });
      };
      void this.options.api.watch(this.options.namespace, this.options.labelSelector, this.resourceVersion, onEvent, onEnd).then((started) => {
        if (!started.ok) resolve({ kind: "failed", message: `${started.code} ${started.reason}` });
        else if (this.stopped) started.value.stop();
        else this.stopWatch = started.value.stop;
      });
    });
  }
}

/** The WasmPlugin informer the reconciler compares with. */
export class WasmPluginInformer extends Informer<WasmPlugin> {}
