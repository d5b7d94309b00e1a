"""Markdown with LaTeX formulas, as plain text a terminal shows (`grade reveal`).

A small converter for the notation the derivations use, standard library only (it runs on the
learner's path): Greek letters and operators as their Unicode characters (≈, ∂, ∑, ⊙, ≤),
superscripts and subscripts as Unicode ones where every character has one (Wₕₕ, hₜ₋₁ᵀ, β₁ᵗ,
σ²), else as ``^(...)`` / ``_(...)``; ``\\frac{a}{b}`` as ``a/b`` (parenthesised when either
side is more than one term), ``\\sqrt{x}`` as ``√x``, accents as combining marks (v̂, x̄),
``\\text{...}`` as its text, sizing commands dropped, ``\\underbrace{a}_{why}`` as ``a (why)``,
a matrix (``\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}``) as numpy writes one,
``[[1, 2], [3, 4]]``. Display math (``$$...$$``) stands on its own indented line. Text
outside ``$...$`` is left alone, code spans included; an unknown command keeps its name
(``KNOWN`` lists every command this module renders; tests/learner/test_latex_text.py checks that the
derivations use no other).
"""
from __future__ import annotations

import re

SYMBOLS = {
    # Greek
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "vartheta": "ϑ", "iota": "ι", "kappa": "κ",
    "lambda": "λ", "mu": "μ", "nu": "ν", "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ",
    "tau": "τ", "upsilon": "υ", "phi": "φ", "varphi": "φ", "chi": "χ", "psi": "ψ", "omega": "ω",
    "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ",
    "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
    # operators and relations
    "approx": "≈", "cdot": "·", "cdots": "⋯", "dots": "…", "ldots": "…", "times": "×",
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "in": "∈",
    "notin": "∉", "odot": "⊙", "otimes": "⊗", "oplus": "⊕", "circ": "∘", "pm": "±", "mp": "∓",
    "infty": "∞", "nabla": "∇", "partial": "∂", "sim": "~", "ll": "≪", "gg": "≫",
    "leftarrow": "←", "rightarrow": "→", "to": "→", "gets": "←", "mapsto": "↦",
    "Leftarrow": "⇐", "Rightarrow": "⇒", "Longrightarrow": "⟹", "iff": "⟺", "implies": "⟹",
    "ell": "ℓ", "propto": "∝", "equiv": "≡", "forall": "∀", "exists": "∃", "mid": "|",
    "sum": "∑", "prod": "∏", "int": "∫", "sqrt": "√", "top": "ᵀ", "prime": "′",
    "langle": "⟨", "rangle": "⟩", "lVert": "‖", "rVert": "‖", "Vert": "‖", "|": "‖",
    "lvert": "|", "rvert": "|", "vert": "|", "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈",
    "rceil": "⌉", "emptyset": "∅", "cup": "∪", "cap": "∩", "subset": "⊂", "neg": "¬",
    "land": "∧", "lor": "∨", "star": "⋆", "ast": "∗", "bullet": "•",
    # spacing, and characters LaTeX escapes
    ",": " ", ";": " ", ":": " ", "!": "", " ": " ", "quad": "  ", "qquad": "    ",
    "{": "{", "}": "}", "_": "_", "%": "%", "&": "&", "$": "$", "#": "#", "\\": "\n",
}
NAMES = {"log", "exp", "max", "min", "tanh", "sinh", "cosh", "sin", "cos", "tan", "arg", "det",
         "ln", "lim", "sup", "inf", "argmax", "argmin", "dim", "ker", "Pr", "sign"}
DROPPED = {"left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr",
           "displaystyle", "textstyle", "limits", "nolimits"}
AS_TEXT = {"text", "mathrm", "operatorname", "texttt", "mathbf", "mathit", "mathsf", "textbf",
           "textit", "boldsymbol", "mathrel", "mbox", "bm"}
ACCENTS = {"hat": "\u0302", "widehat": "\u0302", "bar": "\u0304", "overline": "\u0305",
           "tilde": "\u0303", "widetilde": "\u0303", "dot": "\u0307", "ddot": "\u0308", "vec": "\u20d7"}
FRACTIONS = {"frac", "tfrac", "dfrac", "cfrac"}
BRACES = {"underbrace", "overbrace"}  # \underbrace{a}_{why}: "a (why)"
MATRICES = {"matrix", "pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "smallmatrix", "array"}
ROWS = {"aligned", "align", "align*", "cases", "gathered", "split"}  # one formula per line
TIGHT = {"partial", "nabla", "lVert", "langle", "lfloor", "lceil", "neg"}

SUPER = dict(zip("0123456789+-=()abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVWβγδθφχ′−",
                 "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂᵝᵞᵟᶿᵠᵡ′⁻"))
SUPER["ᵀ"] = "ᵀ"
SUPER["*"] = "*"
SUB = dict(zip("0123456789+-=()aehijklmnoprstuvxβγρφχ−",
               "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓᵦᵧᵨᵩᵪ₋"))
SCRIPT = {"B": "ℬ", "E": "ℰ", "F": "ℱ", "H": "ℋ", "I": "ℐ", "L": "ℒ", "M": "ℳ", "R": "ℛ"}
DOUBLE = {"1": "𝟙", "C": "ℂ", "H": "ℍ", "N": "ℕ", "P": "ℙ", "Q": "ℚ", "R": "ℝ", "Z": "ℤ"}

KNOWN = (set(SYMBOLS) | NAMES | DROPPED | AS_TEXT | set(ACCENTS) | FRACTIONS | BRACES
         | {"sqrt", "mathcal", "mathscr", "mathbb", "substack", "begin", "end"})

_TOKEN = re.compile(r"\\([A-Za-z]+)|\\(.)|([{}^_])|(\s+)|(.)", re.S)
_MATH = re.compile(r"\$\$(.+?)\$\$|(?<![\\$])\$(?!\s)(.+?)(?<!\\)\$(?!\d)", re.S)
_CODE = re.compile(r"(`+)(.+?)\1", re.S)


def markdown_to_text(markdown: str) -> str:
    """``markdown`` with every formula written as text (see the module docstring)."""
    out, last = [], 0
    for code in _CODE.finditer(markdown):  # code spans are never formulas
        out.append(_formulas(markdown[last:code.start()]))
        out.append(code.group(0))
        last = code.end()
    out.append(_formulas(markdown[last:]))
    return "".join(out)


def _formulas(text: str) -> str:
    def one(match):
        if match.group(1) is not None:  # display math: a line of its own, indented
            body = "\n".join("    " + line.strip() for line in latex_to_text(match.group(1)).splitlines()
                             if line.strip())
            return f"\n\n{body}\n\n"
        return latex_to_text(match.group(2))
    converted = _MATH.sub(one, text)
    return re.sub(r"\n{3,}", "\n\n", converted)


def latex_to_text(latex: str) -> str:
    """One formula (the inside of ``$...$``) as text."""
    tokens = [m for m in _TOKEN.finditer(latex)]
    parser = _Parser(tokens)
    text = _norms(parser.sequence(stop=None))
    text = re.sub(r"[ \t]{2,}(?=\S)", lambda m: "    " if len(m.group(0)) >= 4 else " ", text)
    return text.strip()


class _Parser:
    """A recursive walk over the formula's tokens: commands, groups, ``^`` and ``_``."""

    def __init__(self, tokens):
        self.tokens, self.i = tokens, 0

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def sequence(self, stop: str | None) -> str:
        parts: list[str] = []
        while (token := self.peek()) is not None:
            if token.group(3) == "}" and stop == "}":
                self.i += 1
                return "".join(parts)
            if token.group(3) in ("^", "_"):
                self.i += 1
                argument = self.argument()
                parts.append(script(argument, SUPER if token.group(3) == "^" else SUB, token.group(3)))
                continue
            parts.append(self.atom())
        return "".join(parts)

    def argument(self) -> str:
        """The next group ``{...}`` or single token, as text."""
        self.skip_spaces()
        token = self.peek()
        if token is None:
            return ""
        if token.group(3) == "{":
            self.i += 1
            return self.sequence(stop="}")
        return self.atom()

    def optional(self) -> str | None:
        """``[...]`` right here (e.g. ``\\sqrt[3]{x}``), or None."""
        token = self.peek()
        if token is None or token.group(5) != "[":
            return None
        self.i += 1
        parts = []
        while (token := self.peek()) is not None and token.group(5) != "]":
            parts.append(self.atom())
        self.i += 1
        return "".join(parts)

    def atom(self) -> str:
        token = self.peek()
        self.i += 1
        name, escaped, special, space, char = token.groups()
        if space is not None:
            return " "
        if char is not None:
            return char
        if special == "{":
            return self.sequence(stop="}")
        if special == "}":
            return ""
        if escaped is not None:
            return SYMBOLS.get(escaped, escaped)
        return self.command(name)

    def command(self, name: str) -> str:
        if name in FRACTIONS:
            top, bottom = self.argument(), self.argument()
            after = self.peek()  # 2/D ∑ⱼ, not 2/D∑ⱼ
            space = " " if after is not None and (after.group(1) or (after.group(5) or "").isalnum()) else ""
            return f"{wrap(top)}/{wrap(bottom)}{space}"
        if name == "sqrt":
            index = self.optional()
            root = ("∛" if index == "3" else "∜" if index == "4" else f"{index}√" if index else "√")
            return root + wrap(self.argument())
        if name in ACCENTS:
            return accent(self.argument(), ACCENTS[name])
        if name in BRACES:
            body = self.argument().strip()
            self.skip_spaces()
            token = self.peek()
            if token is not None and token.group(3) in ("_", "^"):  # the label under the brace
                self.i += 1
                return f"{body} ({self.argument().strip()})"
            return body
        if name == "begin":
            return self.environment(self.argument().strip())
        if name == "end":  # an \end without its \begin
            self.argument()
            return ""
        if name in AS_TEXT:
            return self.argument()
        if name == "mathcal" or name == "mathscr":
            inner = self.argument()
            return "".join(SCRIPT.get(c, _offset(c, 0x1D49C)) for c in inner)
        if name == "mathbb":
            inner = self.argument()
            return "".join(DOUBLE.get(c, _offset(c, 0x1D538)) for c in inner)
        if name == "substack":
            return self.argument().replace("\n", ", ")
        if name in DROPPED:
            self.skip_spaces()
            token = self.peek()  # \left( keeps its bracket; \left. is nothing
            if token is not None and token.group(5) == "." and name in ("left", "right"):
                self.i += 1
            return ""
        if name in TIGHT:  # ∂L, ∇f: the operator binds to what follows
            self.skip_spaces()
        return SYMBOLS.get(name, name)

    def environment(self, kind: str) -> str:
        """The inside of ``\\begin{kind}`` up to its ``\\end``: a matrix as numpy writes one,
        aligned rows one per line (``&`` dropped)."""
        if kind == "array":
            self.argument()  # the column spec, {cc}
        rows, cells, parts = [], [], []
        while (token := self.peek()) is not None:
            if token.group(1) == "end":
                self.i += 1
                self.argument()
                break
            if token.group(2) == "\\" or token.group(5) == "&":
                self.i += 1
                cells.append("".join(parts).strip())
                parts = []
                if token.group(2) == "\\":
                    rows.append(cells)
                    cells = []
                continue
            parts.append(self.sequence_item())
        cells.append("".join(parts).strip())
        rows.append(cells)
        rows = [row for row in rows if any(row)]
        if kind in MATRICES:
            return "[" + ", ".join("[" + ", ".join(row) + "]" for row in rows) + "]"
        return "\n".join(" ".join(cell for cell in row if cell) for row in rows)

    def sequence_item(self) -> str:
        """One atom, or a ``^``/``_`` script attached to what came before."""
        token = self.peek()
        if token.group(3) in ("^", "_"):
            self.i += 1
            return script(self.argument(), SUPER if token.group(3) == "^" else SUB, token.group(3))
        return self.atom()

    def skip_spaces(self) -> None:
        while (token := self.peek()) is not None and token.group(4) is not None:
            self.i += 1


def _norms(text: str) -> str:
    """``‖ g ‖`` as ``‖g‖`` (and ``⟨ a, b ⟩`` as ``⟨a, b⟩``): no space inside a delimiter pair."""
    text = re.sub(r"\s+([⟩⌋⌉)])", r"\1", re.sub(r"([(⟨⌊⌈])\s+", r"\1", text))
    parts = text.split("‖")
    for i in range(1, len(parts), 2):  # the insides of the ‖...‖ pairs, left to right
        if i < len(parts) - 1:
            parts[i] = parts[i].strip()
    return "‖".join(parts)


def _offset(char: str, base: int) -> str:
    if "A" <= char <= "Z":
        return chr(base + ord(char) - ord("A"))
    return char


def wrap(text: str) -> str:
    """``text`` as one term of a fraction: parenthesised when, outside its own brackets, it
    holds a space or an operator, or is a number times something (``2N``)."""
    text = text.strip()
    if len(text) <= 1 or (text.startswith("(") and text.endswith(")") and _balanced(text[1:-1])):
        return text
    top, depth = [], 0
    for char in text:
        depth += (char in "([{") - (char in ")]}")
        top.append(char if depth == 0 else "")
    outside = "".join(top)
    if re.search(r"[\s+\-−=,/·×]", outside) or re.match(r"\d+[^\d.]", text):
        return f"({text})"
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += (char == "(") - (char == ")")
        if depth < 0:
            return False
    return depth == 0


def accent(text: str, mark: str) -> str:
    """``text`` with a combining accent: on its one character (v̂), or, for a wide accent over
    several (``\\widetilde{dy_1}``), on each letter of the base, not on its scripts (d̃ỹ₁)."""
    text = text.strip()
    if len(text) == 1:
        return text + mark
    return "".join(c + mark if c.isalpha() and c not in SUB.values() and c not in SUPER.values() else c
                   for c in text)


def script(text: str, table: dict, mark: str) -> str:
    """A superscript or subscript: in Unicode when every character has one, else ``^(...)``."""
    text = text.strip()
    if text and all(c in table for c in text):
        return "".join(table[c] for c in text)
    if len(text) == 1 or re.fullmatch(r"[\w′]+", text):
        return f"{mark}{text}"
    return f"{mark}({text})"
