"""Markdown pieces the generated pages share."""

import re


def cell(text):
    """Text that stays inside one cell of a markdown table."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(headers, rows):
    """A markdown table; every value goes through cell()."""
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def anchor(heading):
    """The link target GitHub gives a heading: lower case, punctuation
    dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
