"""Each kernel's speed, predicted from what the compiler and the simulator say, before a GPU
measures it: the "Predicted speed" section of benchmarks/results/kernels_static.md.

The rule, in fractions of a device-to-device copy's bandwidth (a copy moves 128-bit vectors
with every thread busy), for a bandwidth-bound kernel:
  start  90% when its narrowest data load (32 bits or more; byte masks aside) is 128 bits,
         70% at 64 bits, 50% at 32 bits (issue 34 measured the scalar fp32 elementwise
         kernels at 30-68% of copy on an H200: AdamW 45%, Gumbel-softmax 48-68%); the loads
         in loops are the ones counted where a kernel has any (a tail of P % 4 values
         loaded one at a time after a 128-bit loop does not make it a 32-bit kernel);
  / (1 + d/2)  d = 64-bit integer divisions and modulos per element: those in loops, plus
         those outside loops times threads per element (one thread per element pays all of
         its index arithmetic; a grid-stride loop pays it once). The hardware divides no
         integers: each costs about half a load's time at full bandwidth (max-pool's gather
         backward, 7 per input: measured 5%);
  x 1/2  for local-memory traffic (a local array, or ptxas spills);
  x A/L  when it reads L elements per element from A arrays with L > 2A (re-reading beyond
         what caches absorb);
  x T x l / 270,336  when fewer than 132 SMs x 2,048 loads are in flight: T threads at LARGE,
         l loads in a loop's body, at least 1 and at most 4 (Little's law; BatchNorm's column
         kernels start 4,096 threads: measured 1-2%).
Kernels launched by a case with a flop count whose loads sit in loops (conv, linear,
attention, JVP/VJP, the naive matrix product) are compute-bound: judged by GFLOP/s, not by
this rule. Not predicted: coalescing (a thread reading 8 neighbours strides its warp by 8),
bank conflicts, divergence, atomics' contention, L2 hits. The inputs are the float32 sm_90
compile's PTX (float64 where a kernel has no float32 launch) and benchmarks/simulated_facts.py;
a GPU run (benchmarks/gpu_session.py) says how far off each prediction was. The column
"H200, issue 34" holds the measurements that calibrated the rule (fp32, % of copy bandwidth,
kernels timed alone in their case); a GPU run replaces it with its own table.
"""
from __future__ import annotations

GPU_LOADS_IN_FLIGHT = 132 * 2048  # an H100 or H200 full of resident threads, one load each
MEASURED_ISSUE_34 = {  # % of copy bandwidth, H200, 2026-11-27: the cases made of one kernel
    "routing_trap.maxpool2d_forward_kernel": 27, "routing_trap.maxpool2d_forward_inference_kernel": 23,
    "routing_trap.maxpool2d_backward_kernel": 5, "routing_trap.maxpool2d_backward_atomic_kernel": 38,
    "routing_trap.avgpool2d_forward_kernel": 22, "routing_trap.avgpool2d_backward_kernel": 5,
    "softmax_ce.softmax_ce_fused": 36, "layernorm_backward.layernorm_forward_kernel": 30,
    "reparameterisation.gumbel_softmax_forward_kernel": 48, "reparameterisation.gumbel_softmax_backward_kernel": 68,
    "batchnorm_backward.train_forward": 1, "batchnorm_backward.train_backward": 2,
    "backprop_ninja.embedding_backward_kernel": 12, "backprop_ninja.tanh_dropout_forward_kernel": 30,
    "backprop_ninja.dropout_tanh_backward_kernel": 40, "gradient_clinic.dead_units_kernel": 2,
    "straight_through.fake_quant_forward_kernel": 21, "straight_through.fake_quant_backward_kernel": 40,
}


def predict(row: dict, facts: dict | None) -> tuple[str, str]:
    """(prediction, why) for one compiled kernel's row and its simulated facts."""
    facts = facts or {}
    if facts.get("compute") and row.get("ld_loop"):
        return "compute-bound", "a flop-counted loop of loads: read its GFLOP/s"
    in_loops = [w for w in row.get("ld_bits_loop") or [] if w >= 32]
    data_widths = in_loops or [w for w in row.get("ld_bits") or [] if w >= 32] or [32]
    width = min(data_widths)
    fraction = 0.9 if width >= 128 else 0.7 if width >= 64 else 0.5
    why = [f"{width}-bit loads"]
    threads, elements = facts.get("threads_large"), facts.get("elements_large")
    per_element = min(1.0, threads / elements) if threads and elements else 1.0
    divisions = row.get("div64_loop", 0) + (row.get("div64", 0) - row.get("div64_loop", 0)) * per_element
    if divisions >= 0.05:
        fraction /= 1 + divisions / 2
        why.append(f"{divisions:.2g} 64-bit div/mod per element")
    if row.get("local") or row.get("spill_stores") or row.get("spill_loads"):
        fraction *= 0.5
        why.append("local memory")
    loads, arrays = facts.get("loads_per_element"), facts.get("arrays_read")
    if loads and arrays and loads > 2 * arrays:
        fraction *= arrays / loads
        why.append(f"{loads:g} reads/element from {arrays} arrays")
    if threads:
        in_flight = threads * min(4, max(1, row.get("ld_loop", 0)))
        if in_flight < GPU_LOADS_IN_FLIGHT:
            fraction *= in_flight / GPU_LOADS_IN_FLIGHT
            why.append(f"{threads:,} threads at LARGE")
    return f"{max(fraction, 0.01):.0%}", "; ".join(why)


def section(rows: list[dict], facts: dict) -> str:
    """The markdown section: one line per kernel (float32 on sm_90, float64 where that is all)."""
    picked = {}
    for row in rows:
        if row["error"] or row["target"] != "sm_90":
            continue
        if row["kernel"] not in picked or row["dtype"] == "float32":
            picked[row["kernel"]] = row
    lines = ["| kernel | dtype | reads / writes per element (simulated) | predicted % of copy | H200, issue 34 | why |",
             "|---|---|---|---|---|---|"]
    for name, row in sorted(picked.items()):
        fact = facts.get(name.split(" [")[0])
        per = (f"{fact['loads_per_element']:g} / {fact['stores_per_element']:g}"
               if fact and "loads_per_element" in fact else "-")
        prediction, why = predict(row, fact)
        measured = f"{MEASURED_ISSUE_34[name]}%" if name in MEASURED_ISSUE_34 else ""
        lines.append(f"| {name} | {row['dtype']} | {per} | {prediction} | {measured} | {why} |")
    rule = __doc__.split("The rule, ", 1)[1].strip()
    return "## Predicted speed\n\nThe rule, " + rule + "\n\n" + "\n".join(lines) + "\n"
