"""What a reader sees of the Markdown our labels and captions are made of: backslash
escapes resolved, code spans shown as their content (the tests compare shown text)."""

from __future__ import annotations

import re
import string

_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)
_ESCAPE = re.compile("\\\\([" + re.escape(string.punctuation) + "])")


def shown_text(markdown: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _SPAN.finditer(markdown):
        out.append(_ESCAPE.sub(r"\1", markdown[pos:m.start()]))
        body = m.group(2)
        if len(body) > 2 and body.startswith(" ") and body.endswith(" "):
            body = body[1:-1]  # CommonMark strips one padding space each side
        out.append(body)
        pos = m.end()
    out.append(_ESCAPE.sub(r"\1", markdown[pos:]))
    return "".join(out)
