"""``grade validate``'s proof that a stub's specification does not point at the graded mistakes.

A specification must state the conventions (which variance, which momentum, what to refuse),
but stating them is not warning about them. Three ways a specification names a mistake, each
found in the stub's prose outside its visible tests (markdown, and the comments and docstrings
of the cells the learner fills in; a visible test's failure message may say what went wrong):

1. warning words: "trap", "pitfall", "a common mistake", "a classic slip", "careful", "don't
   forget", "easy to miss" ... ("trap" inside a question's own name, "the VRAM trap", is a name);
2. one of the question's trap ids spelled out in words (``batch-of-one`` as "a batch of one",
   ``wrong-order`` as "in the wrong order");
3. one word emphasised on its own (``*biased*``, ``**first**``) that is a word of a trap id:
   the emphasis points at the mistake. A bold label that opens a line or a bullet
   (``- **Truncation**, k ...``) is a heading, not a pointer; an italic word is never one.
"""
from __future__ import annotations

import re

from backprop_traps.grader.authoring.stub_layout import is_visible_test
from backprop_traps.grader.authoring.stub_prose import prose_of_code

_WARNINGS = re.compile(
    r"\b(?:traps?|pitfalls?|gotchas?|mistakes?|(?:common|classic|typical|usual) (?:error|bug|slip)s?|"
    r"careful|watch out|beware|(?:don't|do not) forget|easy to (?:forget|miss|get wrong))\b", re.I)
_EMPHASIS = re.compile(r"(?<![*\w])(\*\*|\*|__|_)(?!\s)([^*_\n]{1,40}?)(?<!\s)\1(?![*\w])")
_SMALL = {"in", "of", "on", "at", "to", "a", "an", "the", "not", "no", "and", "or", "vs", "per", "as",
          "by", "from", "is", "it"}


def _question_names(question_ids) -> re.Pattern | None:
    """A question's own name that holds "trap" (routing_trap: "routing trap", "routing-trap")."""
    names = [q.split("_") for q in question_ids if q.endswith("_trap")]
    if not names:
        return None
    return re.compile("|".join(r"[\s-]+".join(map(re.escape, words)) for words in names), re.I)


def _warnings(prose: str, question_ids) -> list[str]:
    names = _question_names(question_ids)
    named = [(m.start(), m.end()) for m in names.finditer(prose)] if names else []
    found = []
    for m in _WARNINGS.finditer(prose):
        if any(start <= m.start() < end for start, end in named):
            continue
        found.append(f"a warning: {_context(prose, m)}")
    return found


def _spelled_ids(prose: str, trap_ids) -> list[str]:
    found = []
    for trap in trap_ids:
        words = [w for w in re.split(r"[-_]", trap) if w]
        if len(words) < 2:
            continue
        pattern = r"(?<![\w-])" + r"[\s-]+".join(map(re.escape, words)) + r"(?![\w-])"
        found += [f"the trap {trap} in words: {_context(prose, m)}" for m in re.finditer(pattern, prose, re.I)]
    return found


def _pointers(markdown: str, trap_ids) -> list[str]:
    keys = {w for t in trap_ids for w in re.split(r"[-_]", t.lower()) if len(w) > 2 and w not in _SMALL}
    found = []
    for m in _EMPHASIS.finditer(markdown):
        words = re.findall(r"[a-z0-9]+", m.group(2).lower())
        line_start = markdown.rfind("\n", 0, m.start()) + 1
        if len(words) != 1 or words[0] not in keys:
            continue
        opens = re.fullmatch(r"\s*(?:[-*+]\s+|\d+\.\s+)?", markdown[line_start:m.start()])
        if opens and len(m.group(1)) == 2:
            continue  # a bold label that opens a line or a bullet
        found.append(f"the emphasis {m.group(0)} points at a trap's word: {_context(markdown, m)}")
    return found


def _context(text: str, m: re.Match, width: int = 50) -> str:
    snippet = text[max(0, m.start() - width):m.end() + width]
    return '"...' + re.sub(r"\s+", " ", snippet).strip() + '..."'


def named_mistakes(stub: dict, trap_ids, question_ids=()) -> list[str]:
    """How the stub's specification names graded mistakes (empty when it does not)."""
    markdown, prose = [], []
    for cell in stub["cells"]:
        source = "".join(cell.get("source", ""))
        if cell.get("cell_type") == "markdown":
            markdown.append(source)
            prose.append(source)
        elif not is_visible_test(cell):
            prose.append(prose_of_code(source))
    prose_text, markdown_text = "\n".join(prose), "\n".join(markdown)
    return (_warnings(prose_text, question_ids) + _spelled_ids(prose_text, trap_ids)
            + _pointers(markdown_text, trap_ids))
