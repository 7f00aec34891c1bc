"""Text for a console that cannot show every character: gradlab's symbols (≡, σ, ✓, …) spelled in ASCII.

Used by the report layer (rich output) and by the command's help; imports nothing heavy.
"""


# What gradlab prints where the console cannot show it (a legacy Windows code page, an ASCII-only pipe): an ASCII
# spelling, so every word stays readable and every number intact. Anything else unprintable becomes "?".
ASCII_SPELLING = {
    "≡": "==", "≠": "!=", "≤": "<=", "≥": ">=", "≈": "~=", "×": "x", "·": ".", "−": "-", "–": "-", "—": "-",
    "→": "->", "←": "<-", "↔": "<->", "…": "...", "✓": "[ok]", "✗": "[FAIL]", "‖": "||", "√": "sqrt", "∞": "inf",
    "±": "+-", "Σ": "sum", "∑": "sum", "∂": "d", "∇": "grad", "ᵀ": "^T", "²": "^2", "³": "^3", "⁻": "^-", "¹": "^1",
    "ᵢ": "_i", "ₖ": "_k", "ᵣ": "_r", "ₙ": "_n", "\u0304": "_bar", "α": "alpha", "β": "beta", "γ": "gamma",
    "δ": "delta", "ε": "eps", "θ": "theta", "λ": "lambda", "μ": "mu", "π": "pi", "σ": "sigma", "τ": "tau",
    "∈": " in ", "ˣ": "^x", "⁺": "^+", "′": "'", "“": '"', "”": '"', "‘": "'", "’": "'", "•": "*", "ℓ": "l",
    "ḡ": "g_bar", "ĝ": "g_hat", "ŷ": "y_hat", "₀": "_0", "₁": "_1", "₂": "_2", "⁰": "^0", "∘": "o", "⊙": "*",
}


def is_unicode(encoding: str) -> bool:
    """Whether ENCODING (utf-8, UTF8, utf_16, …) holds every character."""
    return encoding.lower().replace("-", "").replace("_", "").startswith("utf")


def printable(text: str, encoding: str) -> str:
    """TEXT with every character ENCODING cannot hold replaced by its ASCII spelling (or "?")."""
    if is_unicode(encoding):
        return text
    out = []
    for ch in text:
        try:
            ch.encode(encoding)
            out.append(ch)
        except (UnicodeEncodeError, LookupError):
            out.append(ASCII_SPELLING.get(ch, "?"))
    return "".join(out)
