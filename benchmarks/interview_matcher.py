"""How the spoken-answer matcher (`grade interview`) judges answers generated from each
question's hired answer: mutants refused, dresses of the key terms refused, paraphrases credited
(grader/authoring/claim_proofs.py). Writes benchmarks/results/interview_matcher.md.

    python benchmarks/interview_matcher.py [--out PATH]
"""
from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from backprop_traps.grader.authoring import claim_proofs, interview
from backprop_traps.grader.loading.questions import solution_notebooks

HERE = Path(__file__).resolve().parent


def rows():
    for question, notebook in solution_notebooks().items():
        it = interview.parse(interview.read_notebook(notebook)[0])
        yield question, claim_proofs.measure(it)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE / "results" / "interview_matcher.md")
    args = parser.parse_args()
    start = time.perf_counter()
    table = list(rows())
    took = time.perf_counter() - start
    lines = ["# The interview matcher against generated answers", "",
             "Made by `python benchmarks/interview_matcher.py`. For every key point of every question,",
             "mutants of the hired answer's claim (negated, prohibited, antonym, quantity x10, condition",
             "inverted) must not hit the point they were made from, and score under a quarter of the",
             "points on average; dresses of the key terms (pipes, slashes, and-chains, hashtags, \"let's",
             "talk about\", \"the question of\", a mind-map) must not hit their point, and all the terms",
             "dressed together under a quarter; paraphrases (fillers, numbered, bullets, reordered,",
             "passive, glossary synonyms) must hit 80% or more (grader/authoring/claim_proofs.py).", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, load average "
             f"{os.getloadavg()[0]:.1f}; {took:.0f} s for all questions.", "",
             "| question | points | mutants refused | mutant mean share | dresses refused | all-terms dress max "
             "| paraphrases credited | least paraphrase | holds |",
             "|---|---|---|---|---|---|---|---|---|"]
    totals = [0] * 6
    for question, m in table:
        lines.append(f"| {question} | {m.points} | {m.mutants_refused}/{m.mutants} | {m.mutant_share:.0%} | "
                     f"{m.dresses_refused}/{m.dresses} | {m.dress_share:.0%} | {m.paraphrases_credited}/"
                     f"{m.paraphrases} | {m.paraphrase_share:.0%} | {'yes' if m.holds else 'no'} |")
        for k, v in enumerate((m.mutants_refused, m.mutants, m.dresses_refused, m.dresses,
                               m.paraphrases_credited, m.paraphrases)):
            totals[k] += v
    lines.append(f"| **all** | | {totals[0]}/{totals[1]} | | {totals[2]}/{totals[3]} | | "
                 f"{totals[4]}/{totals[5]} | | {sum(m.holds for _, m in table)}/{len(table)} |")
    misses = [(q, line) for q, m in table for line in m.misses]
    if misses:
        lines += ["", "## Judged the wrong way", ""]
        lines += [f"- {q}: {line}" for q, line in misses]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({took:.0f} s)")


if __name__ == "__main__":
    main()
