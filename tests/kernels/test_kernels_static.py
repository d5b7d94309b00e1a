"""Every kernel compiled for real GPUs (sm_80, sm_90; float32 and float64) without a GPU.

benchmarks/kernels_static.py runs in a child process (the simulator this test session uses
compiles nothing), NVVM to PTX and nvJitLink to machine code, and its result is cached
under ~/.cache/backprop-traps while the kernels, the cases and the compilers are unchanged.
Skips, saying why, where NVVM, NVRTC or nvJitLink cannot be installed.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.xdist_group("test_kernels_static.py")  # one worker builds the fixture, once
REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "backprop-traps"

# Found by this compile and not fixed yet (issue 29, "What to build" 3): each entry names the
# kernels whose rows may fail, and why. A fixed kernel must leave this list (the last test).
KNOWN_OPEN = {
    "attention_backward.backward_dk_dv": "at the TINY cases' d = 8 in float64 only: the loops over d "
                                         "unroll fully and 128 registers spill 32-40 B (at d = 64, none)",
}


@pytest.fixture(scope="module")
def static():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "kernels_static.py"), "--json",
                           "--cache", str(CACHE)], capture_output=True, text=True, env=env, timeout=900)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"kernels_static.py printed no result (exit {proc.returncode}): {proc.stderr[-2000:]}"
    result = json.loads(lines[-1])
    if "skip" in result:
        pytest.skip(result["skip"])
    return result


def by_kernel(result, pick):
    found = {}
    for row in result["rows"]:
        for problem in pick(row):
            found.setdefault(row["kernel"], []).append(f"{row['dtype']} {row['target']}: {problem}")
    return found


def assert_none_new(found):
    new = {k: v for k, v in found.items() if k not in KNOWN_OPEN}
    assert not new, "\n".join(f"{k}: {'; '.join(v)}" for k, v in new.items())


def test_every_kernel_is_compiled_in_both_dtypes_for_both_targets(static):
    assert not static["uncovered"], f"no benchmark case launches {static['uncovered']}"  # issue 34: all have one
    seen = {}
    for row in static["rows"]:
        seen.setdefault(row["kernel"], set()).add((row["dtype"], row["target"]))
    # both targets for every dtype a kernel is launched in; float32 too, but for kernels whose
    # launches always hold a float64 argument (question 20's contract, float64 accumulators)
    partial = {k: sorted(v) for k, v in seen.items()
               if any((d, t) not in v for d in {d for d, _ in v} for t in ("sm_80", "sm_90"))}
    assert not partial, f"kernels missing a target: {partial}"
    in_float32 = sum(1 for v in seen.values() if any(d == "float32" for d, _ in v))
    assert in_float32 >= 0.8 * len(seen), f"only {in_float32} of {len(seen)} kernels have a float32 launch"
    assert len(seen) >= 40


def test_every_kernel_compiles(static):
    failed = [f"{r['kernel']} {r['dtype']} {r['target']}: {r['error']}" for r in static["rows"] if r["error"]]
    assert not failed, "\n".join(failed)


def test_no_local_memory_spills(static):
    assert_none_new(by_kernel(static, lambda r: [f"{r['spill_stores']}/{r['spill_loads']} B spilled"]
                              if not r["error"] and (r["spill_stores"] or r["spill_loads"]) else []))


def test_no_float64_instruction_in_a_float32_launch(static):
    assert_none_new(by_kernel(static, lambda r: [f"{r['f64']} float64 instructions"]
                              if not r["error"] and r["dtype"] == "float32" and r["f64"] else []))


def test_registers_under_the_recorded_bound(static):
    bound = static["register_bound"]
    assert bound == 128  # the bound benchmarks/results/kernels_static.md records
    assert_none_new(by_kernel(static, lambda r: [f"{r['registers']} registers"]
                              if not r["error"] and r["registers"] > bound else []))


def test_known_open_problems_are_still_open(static):
    failing = {row["kernel"] for row in static["rows"] if row["error"] is None and (
        row["spill_stores"] or row["spill_loads"] or row["registers"] > static["register_bound"]
        or (row["dtype"] == "float32" and row["f64"]))}
    fixed = sorted(set(KNOWN_OPEN) - failing)
    assert not fixed, f"fixed, so take them out of KNOWN_OPEN: {fixed}"


def test_every_block_fits_a_gpu(static):
    """What ptxas reports for a block against what one block may have: 48 KiB of static shared
    memory, 65,536 registers for its threads (the launch's own limits: kernels/runtime/launch_limits.py)."""
    too_big = [f"{r['kernel']} {r['dtype']} {r['target']}: {r['smem']} B smem, {r['registers']} x "
               f"{r['block']} threads" for r in static["rows"] if not r["error"] and (
                   r["smem"] > 48 * 1024 or r["registers"] * r["block"][0] * r["block"][1] * r["block"][2] > 65_536)]
    assert not too_big, "\n".join(too_big)


def test_the_table_reads_memory_traffic_from_the_ptx(static):
    rows = {(r["kernel"], r["dtype"], r["target"]): r for r in static["rows"] if not r["error"]}
    for row in rows.values():
        assert {"ld", "st", "ld_loop", "st_loop", "ld_bits", "vector", "div64", "div64_loop", "local"} <= set(row)
        assert row["ld"] + row["st"] + row["atom"] > 0, row["kernel"]  # every kernel touches global memory
    gather = rows[("routing_trap.maxpool2d_backward_kernel", "float32", "sm_90")]
    assert gather["div64"] > 0 and 64 in gather["ld_bits"] and 32 in gather["ld_bits"]  # int64 argmax, fp32 dout
    atomic = rows[("routing_trap.maxpool2d_backward_atomic_kernel", "float32", "sm_90")]
    assert atomic["atom"] >= 1 and atomic["st"] == 0


def test_every_kernel_has_simulated_facts_and_a_prediction(static):
    from benchmarks import speed_prediction
    facts = static["facts"]
    kernels = {r["kernel"].split(" [")[0] for r in static["rows"]}
    assert kernels <= set(facts), sorted(kernels - set(facts))
    assert facts["routing_trap.maxpool2d_backward_kernel"]["loads_per_element"] > 1  # argmax re-read per window
    assert facts["batchnorm_backward.train_forward"]["threads_large"] < 270_336  # too few to fill a GPU
    text = speed_prediction.section(static["rows"], facts)
    assert text.startswith("## Predicted speed") and "x A/L" in text
    predicted = {line.split(" | ")[0][2:]: line.split(" | ")[3] for line in text.splitlines()[1:]
                 if line.startswith("| ") and "%" in line}
    assert predicted["batchnorm_backward.train_forward"] in ("1%", "2%", "3%", "4%", "5%")
    assert int(predicted["adamw_step.adamw_update_kernel"].rstrip("%")) >= 40


def test_the_gpu_sessions_sanitizer_covers_every_shared_memory_kernel(static):
    """benchmarks/gpu_session.py runs compute-sanitizer over the questions whose kernels use shared
    memory: its list must follow the compile (a module gaining a shared array joins it; a
    version-2 module, <question>_v2.py, counts as its question's)."""
    sys.path.insert(0, str(REPO))
    from benchmarks.gpu_session import SHARED_BY, SHARED_MEMORY
    modules = {r["kernel"].split(".")[0].removesuffix("_v2") for r in static["rows"] if not r["error"] and r["smem"] > 0}
    uses = {q for m in modules for q in SHARED_BY.get(m, (m,))}
    assert uses == set(SHARED_MEMORY)


def test_ptx_memory_stats_on_a_planted_listing():
    sys.path.insert(0, str(REPO))
    from benchmarks.ptx_stats import describe, memory_stats
    ptx = """
\tld.global.nc.v4.f32 \t{%f1, %f2, %f3, %f4}, [%rd1];
$L__BB0_2:
\tld.global.u64 \t%rd5, [%rd4];
\tdiv.s64 \t%rd6, %rd5, %rd2;
\tld.local.f32 \t%f5, [%rd7];
\tst.global.f32 \t[%rd8], %f5;
\t@%p1 bra \t$L__BB0_2;
\trem.u64 \t%rd9, %rd6, %rd2;
\tatom.global.add.f32 \t%f6, [%rd8], %f5;
\tld.global.u8 \t%rs1, [%rd3];
\tret;
"""
    stats = memory_stats(ptx)
    assert (stats["ld"], stats["ld_loop"], stats["st"], stats["st_loop"], stats["atom"]) == (3, 1, 1, 1, 1)
    assert stats["ld_bits"] == [8, 64, 128] and stats["ld_bits_loop"] == [64] and stats["vector"]
    assert (stats["div64"], stats["div64_loop"], stats["local"]) == (2, 1, 1)
    assert describe(stats)["div64 (loop)"] == "2 (1)"


def test_the_prediction_rule():
    sys.path.insert(0, str(REPO))
    from benchmarks.speed_prediction import predict
    plain = {"ld": 2, "st": 1, "ld_loop": 0, "ld_bits": [32], "div64": 0, "div64_loop": 0, "local": 0}
    busy = {"threads_large": 10 ** 8, "elements_large": 10 ** 8, "loads_per_element": 2, "arrays_read": 2}
    assert predict(plain, busy)[0] == "50%"
    assert predict({**plain, "ld_bits": [128]}, busy)[0] == "90%"
    assert predict({**plain, "ld_bits": [32, 128], "ld_bits_loop": [128]}, busy)[0] == "90%"  # a scalar tail
    assert predict({**plain, "div64": 2}, busy)[0] == "25%"  # one thread per element pays both
    assert predict({**plain, "div64": 2}, {**busy, "elements_large": 10 ** 10})[0] == "50%"  # a grid-stride loop
    assert predict(plain, {**busy, "threads_large": 4096})[0] == "1%"
    assert predict({**plain, "ld_loop": 3}, {**busy, "compute": True})[0] == "compute-bound"


def test_f64_counter_sees_float64_arithmetic_and_not_float32():
    sys.path.insert(0, str(REPO))
    from benchmarks.kernels_static import f64_instructions
    ptx = "\tadd.f32 \t%f2, %f1, %f1;\n\tcvt.f64.f32 \t%fd1, %f2;\n@%p1 bra $L;\n\t@!%p2 mul.rn.f64 %fd2, %fd1, %fd1;\n"
    assert f64_instructions(ptx) == 2
