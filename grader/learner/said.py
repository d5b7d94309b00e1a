"""An answer as tokens: spelled out, with each token's place in the original text.

Symbols are spelled the way key points are written (``√`` is ``sqrt``, ``ε`` is ``eps``, ``·``
and ``×`` are ``*``, ``ᵀ``/``.T``/``^T`` are ``transpose``, ``**`` is ``^``), contractions are
opened (``doesn't`` is ``does not``), a hat joins its letter (``v̂``, ``v-hat``, ``vhat``:
``v_hat``), and punctuation is kept: parentheses, operators and the marks that end sentences
and clauses all stay tokens, so that ``sqrt(v_hat) + eps`` and ``sqrt(v_hat + eps)`` differ.
Every token keeps the span of the original text it came from (the evidence shown to the learner).
Standard library only.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_SYMBOLS = {
    "√": " sqrt ", "∑": " sum ", "Σ": " sum ", "∂": " d ", "∇": " grad ", "ε": " eps ", "ϵ": " eps ",
    "σ": " sigma ", "μ": " mu ", "τ": " tau ", "η": " lr ", "λ": " lambda ", "θ": " theta ",
    "β": " beta ", "γ": " gamma ", "α": " alpha ", "ρ": " rho ", "δ": " delta ", "Δ": " delta ",
    "π": " pi ", "ℓ": "l", "·": " * ", "×": " * ", "⋅": " * ", "∘": " * ", "⊙": " * ", "⊗": " outer ",
    "−": " - ", "–": " - ", "—": " , ", "≤": " <= ", "≥": " >= ", "≈": " ~ ", "∝": " ~ ",
    "→": " -> ", "←": " <- ", "⇒": " -> ", "≠": " != ", "≪": " < ", "≫": " > ", "∈": " in ",
    "²": "^2", "³": "^3", "¹": "^1", "⁰": "^0", "ᵗ": "^t", "ⁿ": "^n", "ᵏ": "^k", "½": " 1 / 2 ",
    "ᵀ": " transpose ", "∞": " inf ", "’": "'", "‘": "'", "“": '"', "”": '"', "…": " ",
    "⊥": " ⊥ ", "\u0302": " hat ", "•": "\n- ", "±": " +- ", "∓": " -+ ",
}
_STEPS = (
    (re.compile(r"\b(i)\.e\.|\b(e)\.g\."), r"\1\2\2"),
    (re.compile(r"\bcan't\b|\bcannot\b"), "can not"), (re.compile(r"\bwon't\b"), "will not"),
    (re.compile(r"\bshan't\b"), "shall not"), (re.compile(r"n't\b"), " not"),
    (re.compile(r"\b(it|that|there|what|here|he|she|who|this)'s\b"), r"\1 is"),
    (re.compile(r"\bi'm\b"), "i am"), (re.compile(r"'re\b"), " are"), (re.compile(r"'ve\b"), " have"), (re.compile(r"'ll\b"), " will"),
    (re.compile(r"'d\b"), " would"), (re.compile(r"'s\b|s'(?=\s)"), ""),
    (re.compile(r"\*\*"), "^"),
    (re.compile(r"\bplus equals\b"), " += "), (re.compile(r"\b(?:is equal to|equals|equal to)\b"), " = "),  # said aloud
    (re.compile(r"\[([^\[\]]*(?:[<>]|!=|==)[^\[\]]*)\]"), r"(\1)"),  # an Iverson bracket [z > 0] is (z > 0)
    (re.compile(r"(?:,\s*)?\b(?:u+m+|u+h+|e+rm+|e+r|hm+|mm+|ah+)\b(?:\s*,(?=\s))?"), " "),  # fillers: "divide them by, um, one minus"
    (re.compile(r"(?<=[a-z]{2})-(?=[a-z])|(?<=[a-z])-(?=[a-z]{2})"), " "),
    (re.compile(r"(?<=\d)-(?=(?:bit|byte|hot|way|step|layer|element|pass|dimension|d\b|norm|th\b|fold))"), " "),
    (re.compile(r"(?<=\d),(?=\d{3}\b)"), ""),
    (re.compile(r"(?:^|\n)\s*(?:[-*]|\(?\d{1,2}[.)]|\(?[a-h][.)])\s+"), " . "),  # a bullet or a number opens a line
    (re.compile(r"(?:^|(?<=\s))\((?:\d{1,2}|[a-h]|i{1,3}|iv|vi{0,3})\)(?=\s)"), " ; "),  # "(1) ... (2) ...": items
    (re.compile(r"\n\s*\n"), " . "),
)
TOKEN = re.compile(r"(?P<num>\d+(?:\.\d+)?(?:e[-+]?\d+)?)"
                   r"|(?P<word>[^\W\d][\w]*)"
                   r"|(?P<op><=|>=|!=|==|->|<-|\+=|-=|\*=|/=|:=|[-+*/=<>^~%|&@⊥])"
                   r"|(?P<open>[(\[{])|(?P<close>[)\]}])"
                   r"|(?P<stop>[.!?;:,\"])")
_WRT = re.compile(r"\bw\.r\.t\.?(?!\w)|\bwrt\b", re.IGNORECASE)
""""w.r.t." ends no sentence, and its capital ".T" is no transpose: it is read as "with respect to"."""
_TRANSPOSE = re.compile(r"(?<=[\w)\]])(?:\.T|\^T|\^\{T\}|\^\(T\))(?![\w(])")
"""A capital T after a name: ``W.T``, ``W^T`` (a small ``^t`` is a power: ``beta^t``)."""
_REDUCTION = re.compile(r"^(sum|mean|max|min|prod|avg|rowsum)_(\w+)$")
_INDEXED = frozenset({"beta", "eps", "sigma", "mu", "lambda", "theta", "alpha", "gamma"})
_HAT = re.compile(r"^([a-z])_hat$|^([xyvmpzgqkho])hat$")
_ALIASES = {"epsilon": "eps", "beta1": "beta", "beta2": "beta", "beta_1": "beta", "beta_2": "beta",
            "b1": "beta", "b2": "beta", "exponentiate": "exp", "exponentiating": "exp",
            "exponential": "exp", "exponentials": "exp"}


@dataclass
class Token:
    """One word, number, operator, bracket or mark of an answer."""
    text: str
    """Spelled out and in lower case: ``sqrt``, ``v_hat``, ``(``, ``+``, ``.``."""
    kind: str
    """``word``, ``num``, ``op``, ``open``, ``close`` or ``stop`` (``. ! ? ; : , "``)."""
    start: int
    end: int
    """Its span in the original text."""


def _spell(text: str, origin: list[int]) -> tuple[str, list[int]]:
    """``text`` with symbols spelled out and accents dropped, and for each of its characters
    the index of the original character it came from (``origin`` maps ``text``'s own)."""
    out, where = [], []
    for i, ch in zip(origin, text):
        rep = _SYMBOLS.get(ch)
        if rep is None:
            rep = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
            if not rep and unicodedata.combining(ch):
                rep = ""
        for c in rep.lower():
            out.append(c)
            where.append(i)
    return "".join(out), where


def _substitute(pattern: re.Pattern, repl: str, text: str, where: list[int]) -> tuple[str, list[int]]:
    """``pattern.sub(repl, text)``, keeping the map from characters to original indices."""
    pieces, places, last = [], [], 0
    for m in pattern.finditer(text):
        pieces.append(text[last:m.start()])
        places.extend(where[last:m.start()])
        new = m.expand(repl)
        pieces.append(new)
        places.extend([where[m.start()] if m.start() < len(where) else (where[-1] if where else 0)] * len(new))
        last = m.end()
    pieces.append(text[last:])
    places.extend(where[last:])
    return "".join(pieces), places


_SPACED_SLASH = re.compile(r"(?<!\S)(\S+) / (?=(\S+))")
"""A match starts only where a word does: from inside a long word it could only fail, after
trying every end of it (64 KB without a space took ~50 s, quadratic)."""
_WORDY = re.compile(r"[a-z]{3,}")
_NAMED = re.compile(r"[a-z]{3,}(?:_[a-z]{3,})*")


_SPACED_PIPE = re.compile(r"(?<=[\w`'\")\]]) \| (?=[\w`'\"(\[])")
_HASHTAG = re.compile(r"(?:^|(?<=\s))#(?=[^\W\d])")


def _slash_lists(text: str, where: list[int]) -> tuple[str, list[int]]:
    """"bias correction / decoupled decay / eps outside": where a stretch between sentence marks
    holds two slashes with spaces round them, each between words (not formula terms, as in
    ``loss / n``), or one between two words ("gather / each input"), its spaced slashes separate
    the items of a list, as commas do. So does a pipe with spaces round it between two terms
    ("overlap | sum"; ``| x |`` stays a bar), and a hashtag opens an item ("#eps #outside")."""
    out = list(text)
    for chunk in re.finditer(r"[^.!?;\n]+", text):
        slashes = [m for m in _SPACED_SLASH.finditer(chunk.group())]
        wordy = [m for m in slashes if _WORDY.fullmatch(m.group(1).strip("(),")) and _WORDY.match(m.group(2))]
        named = [m for m in slashes if _NAMED.fullmatch(m.group(1).strip("(),")) and _NAMED.match(m.group(2))]
        if len(slashes) >= 2 and wordy or len(slashes) == 1 and named:
            for m in slashes:
                out[chunk.start() + m.end(1) + 1] = ","
    for m in _SPACED_PIPE.finditer(text):
        out[m.start() + 1] = ","
    return "".join(out), where


_ENUMERATOR = re.compile(r"(?:^|(?<=\s))(\d{1,2})[.)](?=\s)")


def _enumerations(text: str, where: list[int]) -> tuple[str, list[int]]:
    """"1. bias correction 2. decoupled decay": numbers that count 1, 2, ... in one line, each
    with a dot or a bracket, open the items of a list (the numbers are no quantities)."""
    out = list(text)
    marks = list(_ENUMERATOR.finditer(text))
    run = [m for m in marks if int(m.group(1)) == 1][:1]
    for m in marks:
        if run and m.start() > run[-1].start() and int(m.group(1)) == len(run) + 1:
            run.append(m)
    if len(run) >= 2:
        for m in run:
            for k in range(m.start(), m.end()):
                out[k] = " "
            out[m.end() - 1] = ";"
    return "".join(out), where


def tokens(text: str) -> list[Token]:
    """The tokens of ``text``, each with its span in ``text``."""
    text = str(text)
    raw, origin = _substitute(_WRT, "with respect to", text, list(range(len(text))))
    raw, origin = _substitute(_TRANSPOSE, "\u1d40", raw, origin)
    spelled, where = _spell(raw, origin)
    spelled, where = _enumerations(spelled, where)
    for pattern, repl in _STEPS:
        spelled, where = _substitute(pattern, repl, spelled, where)
    spelled, where = _substitute(_HASHTAG, " . ", spelled, where)  # "#eps #outside": each tag a word apart
    spelled, where = _slash_lists(spelled, where)
    found: list[Token] = []
    for m in TOKEN.finditer(spelled):
        kind = m.lastgroup
        start = where[m.start()] if m.start() < len(where) else len(text)
        end = where[m.end() - 1] + 1 if m.end() - 1 < len(where) else len(text)
        word = m.group()
        if kind == "stop" and word == "." and m.end() < len(spelled) and not spelled[m.end()].isspace():
            kind = "op"  # np.packbits, e.g: a dot inside a name does not end a sentence
        if kind == "num" and found and found[-1].text in _INDEXED and found[-1].end == start:
            found[-1] = Token(found[-1].text, "word", found[-1].start, end)  # β₁ is beta
            continue
        if kind == "word":
            word = _ALIASES.get(word, word)
            if found and word == "hat" and found[-1].kind == "word" and len(found[-1].text) == 1:
                found[-1] = Token(found[-1].text + "_hat", "word", found[-1].start, end)
                continue
            indexed = _REDUCTION.match(word)
            if indexed:  # sum_t is sum _t: "sum over t"
                found.append(Token(indexed.group(1), "word", start, start + len(indexed.group(1))))
                word, start = "_" + indexed.group(2), start + len(indexed.group(1))
            hat = _HAT.match(word)
            if hat:
                word = (hat.group(1) or hat.group(2)) + "_hat"
        found.append(Token(word, kind, start, end))
    return found


def normalise(text: str) -> str:
    """``text`` as a single-spaced string of its words, numbers and operators (no marks)."""
    return " ".join(t.text for t in tokens(text) if t.kind != "stop")
