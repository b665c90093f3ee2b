"""The one tokenizer and stop-word set: lexical recall (BM25), the reader model, the
noise measure of counterfactuals and why-forgotten all read words the same way."""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[\w']+", re.UNICODE)
#: ``tokenize``'s pattern, for bulk indexing (tokens before quotes are stripped)
TOKEN_RE = _TOKEN

# Function words that carry no topic: without them BM25 ranks "what is the ..." turns
# by chance. Deliberately short so that content words are never dropped.
STOP_WORDS: frozenset[str] = frozenset("""
a an the and or but if then than so of to in on at by for from with about as into over
is are was were be been being am do does did done have has had having
i me my mine we us our you your yours he him his she her it its they them their
this that these those there here what which who whom whose when where why how
can could would should will shall may might must not no nor yes ok okay
just also very too only own same such some any all each few more most other
up down out off again further once s t don didn doesn isn wasn aren won let
after before much many get got go goes going make made need like want would
""".split())

#: words that flip a statement's meaning: kept when comparing answers
NEGATIONS: frozenset[str] = frozenset({"not", "no", "nor", "never"})


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens; shared by the hashing embedder and lexical recall."""
    return [t.strip("'") for t in _TOKEN.findall(text.lower()) if t.strip("'")]
