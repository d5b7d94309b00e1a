"""What ``grade validate`` reports: one line per finding, grouped by question."""
from __future__ import annotations

from dataclasses import dataclass, field

OK, FAIL, SKIP, FILL = "ok", "FAIL", "skip", "FILL"


@dataclass
class Finding:
    """One line of the report."""
    status: str
    """ok, FAIL, skip (not run, and why), or FILL (a scaffold placeholder left to fill in)."""
    text: str
    details: list[str] = field(default_factory=list)
    """Indented lines under it: feedback, output, where to look."""

    @property
    def failed(self) -> bool:
        return self.status in (FAIL, FILL)


@dataclass
class QuestionReport:
    """Everything ``validate`` found about one question."""
    question: str
    findings: list[Finding] = field(default_factory=list)

    def add(self, status: str, text: str, details=()) -> Finding:
        finding = Finding(status, text, [str(d) for d in details])
        self.findings.append(finding)
        return finding

    @property
    def ok(self) -> bool:
        return not any(f.failed for f in self.findings)

    def text(self, color: bool = False) -> str:
        import click
        colors = {OK: "green", FAIL: "red", FILL: "yellow", SKIP: "blue"}
        style = (lambda t, **kw: click.style(t, **kw)) if color else (lambda t, **kw: t)
        lines = [style(self.question, bold=True)]
        for f in self.findings:
            lines.append(f"  {style(f.status.ljust(4), fg=colors[f.status])}  {f.text}")
            lines.extend(f"          {d}" for detail in f.details for d in detail.splitlines())
        problems = sum(f.failed for f in self.findings)
        if any(f.status == FILL for f in self.findings):
            verdict = "fill in the lines above, then run `grade release` and `grade validate` again"
        else:
            verdict = "sound" if not problems else f"{problems} problem{'s' * (problems != 1)}"
        lines.append(style(f"  => {self.question}: {verdict}", bold=True))
        return "\n".join(lines)
