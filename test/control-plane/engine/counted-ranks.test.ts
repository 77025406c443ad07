// Which SGLang series the join reads: one writer per attention group (tensor rank 0, or a DP-attention
// group's rank 0 under its global tp_rank), pipeline rank 0, and the total of a family SGLang also
// writes per priority. Rules read from sgl-project/sglang at 016d860 (observability/metrics_collector.py
// SchedulerMetricsCollector.init_new and _log_gauge_queue_count; managers/data_parallel_controller.py
// launch_tensor_parallel_group).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { engineEntries } from "../../../control-plane/src/engine/signals.js";
import { parseText } from "../../../control-plane/src/scrape/text-parser.js";

const M = 'model_name="m"';
const read = (lines: string[]): string[] =>
  engineEntries("t", parseText(`# TYPE sglang:num_queue_reqs gauge\n${lines.map((l) => `sglang:num_queue_reqs{${M},${l}`).join("\n")}\n`).samples)
    .map((e) => e.info.identity.split("\xff")[1]!.split("\xfe").filter((x) => !x.startsWith("model_name")).join(","));

describe("the SGLang ranks and copies the join counts", () => {
  const cases: { name: string; lines: string[]; counted: string[] }[] = [
    { name: "tensor parallelism with every scheduler writing: rank 0 only", lines: ['tp_rank="0",pp_rank="0"} 5', 'tp_rank="1",pp_rank="0"} 5'], counted: ["pp_rank=0,tp_rank=0"] },
    { name: "pipeline rank 1 is never counted", lines: ['tp_rank="0",pp_rank="0"} 5', 'tp_rank="0",pp_rank="1"} 5'], counted: ["pp_rank=0,tp_rank=0"] },
    {
      name: "DP attention (tp 4, dp 2): each group's writer, with its global tp_rank",
      lines: ['dp_rank="0",tp_rank="0",pp_rank="0"} 3', 'dp_rank="1",tp_rank="2",pp_rank="0"} 9'],
      counted: ["dp_rank=0,pp_rank=0,tp_rank=0", "dp_rank=1,pp_rank=0,tp_rank=2"],
    },
    {
      name: "plain data parallelism with every scheduler writing: each replica's local rank 0",
      lines: ['dp_rank="0",tp_rank="0",pp_rank="0"} 3', 'dp_rank="0",tp_rank="1",pp_rank="0"} 3', 'dp_rank="1",tp_rank="0",pp_rank="0"} 9', 'dp_rank="1",tp_rank="1",pp_rank="0"} 9'],
      counted: ["dp_rank=0,pp_rank=0,tp_rank=0", "dp_rank=1,pp_rank=0,tp_rank=0"],
    },
    { name: "a rank other than 0 without a dp_rank is a duplicate", lines: ['tp_rank="2",pp_rank="0"} 3'], counted: [] },
    {
      name: "priority scheduling: the priority=\"\" total, not the per-priority copies",
      lines: ['tp_rank="0",pp_rank="0",priority=""} 7', 'tp_rank="0",pp_rank="0",priority="0"} 2', 'tp_rank="0",pp_rank="0",priority="1"} 5'],
      counted: ["pp_rank=0,priority=,tp_rank=0"],
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(read(c.lines), c.counted));
});
