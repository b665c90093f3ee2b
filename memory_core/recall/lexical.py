"""Lexical recall's words: BM25 terms (a light stemmer, stop words out), the query
rewritten to its topic words, questions that repeat the query, and bulk tokenising of a
scope's texts (Python for few texts, Arrow for many) into BM25 postings."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_core.text import STOP_WORDS, tokenize
from memory_core.text import TOKEN_RE as _TOKEN


def stem(term: str) -> str:
    """A light suffix folder, applied alike to queries and messages, so that common
    inflections meet ("tiles"/"tiling"/"tile", "switched"/"switch", "policies"/
    "policy", "yearly"/"year") without a stemming dependency. Stems need not be words."""
    if term.endswith("'s"):
        term = term[:-2]
    term = term.replace("'", "")
    if len(term) <= 3 or term.isdigit():
        return term
    if len(term) > 4 and term.endswith("ies"):
        term = term[:-3] + "y"
    elif term.endswith("sses"):
        term = term[:-2]
    elif term.endswith("s") and not term.endswith(("ss", "us", "is")):
        term = term[:-1]
    stripped = False
    if len(term) > 5 and term.endswith("ing"):
        term, stripped = term[:-3], True
    elif len(term) > 4 and term.endswith("ed") and not term.endswith("eed"):
        term, stripped = term[:-2], True
    elif len(term) > 5 and term.endswith("ly"):
        term = term[:-2]
    if stripped and len(term) > 3 and term[-1] == term[-2] and term[-1] not in "lsz":
        term = term[:-1]
    if len(term) > 3 and term.endswith("e"):
        term = term[:-1]
    return term


def lexical_terms(text: str) -> list[str]:
    """The BM25 terms of a text: ``tokenize``, stop words removed, plurals folded."""
    return [stem(t) for t in tokenize(text) if t not in STOP_WORDS]


def rewrite_query(query: str) -> str:
    """The query without function words ("what", "did", "my", ...), so that its
    embedding weighs the topic words; the query itself when nothing is left."""
    kept = [t for t in tokenize(query) if t not in STOP_WORDS]
    return " ".join(kept) if kept else query


def is_query_duplicate(text: str, query_terms: frozenset[str], overlap: float) -> bool:
    """Whether a stored text is a near-duplicate of the query: a question (it holds a
    "?") whose BM25 terms overlap the query's with Jaccard >= ``overlap``. Such a turn
    repeats the question (an earlier asking, or the input itself) and carries no answer:
    recalling it would crowd out the fact. A statement is never a duplicate, however
    many words it shares with the question: it may be the answer."""
    if "?" not in text or not query_terms:
        return False
    terms = frozenset(lexical_terms(text))
    if not terms:
        return False
    return len(terms & query_terms) / len(terms | query_terms) >= overlap


ARROW_MIN = 2048  # texts below this are tokenised in Python (Arrow's setup costs more)
INDEX_CHUNK = 131_072  # texts tokenised at once (their temporaries: ~70 bytes a token)
Tokens = tuple[np.ndarray, list[str], np.ndarray, np.ndarray]


def tokens_python(texts: Sequence[str | None]) -> Tokens:
    """Tokens of lower-cased texts as codes into a vocabulary of distinct tokens, with
    each text's token count and whether it holds a "?"."""
    k = len(texts)
    findall = _TOKEN.findall
    tokens: list[str] = []
    counts = np.zeros(k, np.int64)
    asks = np.zeros(k, bool)
    for i, text in enumerate(texts):
        low = (text or "").lower()
        asks[i] = "?" in low
        found = findall(low)
        counts[i] = len(found)
        tokens.extend(found)
    vocab: dict[str, int] = {}
    codes = np.fromiter((vocab.setdefault(t, len(vocab)) for t in tokens), np.int64,
                        len(tokens))
    return codes, list(vocab), counts, asks


def _ascii_table() -> np.ndarray:
    """Byte -> byte: a token character of ``TOKEN_RE`` on ASCII (``[0-9A-Za-z_']``)
    to itself lower-cased, every other byte to a space."""
    lut = np.full(256, ord(" "), np.uint8)
    for c in b"0123456789abcdefghijklmnopqrstuvwxyz_'":
        lut[c] = c
    for c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ":
        lut[c] = c + 32
    return lut


_ASCII_LUT = _ascii_table()


def tokens_arrow(texts: Sequence[str | None]) -> Tokens | None:
    """``tokens_python`` as array work, for all-ASCII texts (None otherwise, since
    Python's ``\\w`` is Unicode): every byte that is not a token character becomes a
    space, Arrow splits on spaces and encodes the tokens, so only the distinct ones are
    ever Python strings."""
    import pyarrow as pa
    import pyarrow.compute as pc

    k = len(texts)
    if isinstance(texts, (pa.Array, pa.ChunkedArray)):  # a scan's column, as it came
        arr = texts.cast(pa.large_string())
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks() if arr.num_chunks else pa.array([], pa.large_string())
    else:
        arr = pa.array(texts, pa.large_string())
    if arr.null_count:
        arr = arr.fill_null("")
    if not pc.all(pc.string_is_ascii(arr)).as_py():
        return None
    _, offs_buf, data_buf = arr.buffers()
    offs = np.frombuffer(offs_buf, np.int64)[arr.offset:arr.offset + k + 1]
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None and offs[-1] else \
        np.zeros(0, np.uint8)
    data = data[offs[0]:offs[-1]]
    offs = offs - offs[0]
    asks = np.zeros(k, bool)  # the text of each "?" byte asks
    asks[np.searchsorted(offs, np.flatnonzero(data == ord("?")), "right") - 1] = True
    spaced = pa.LargeStringArray.from_buffers(k, pa.py_buffer(offs),
                                              pa.py_buffer(_ASCII_LUT[data]))
    parts = pc.ascii_split_whitespace(spaced)  # (an empty piece at a leading space)
    flat = parts.flatten()
    words = pc.greater(pc.binary_length(flat), 0)
    docs = np.repeat(np.arange(k, dtype=np.int64), np.diff(parts.offsets.to_numpy()))
    enc = pc.dictionary_encode(flat.filter(words))
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    counts = np.bincount(docs[words.to_numpy(zero_copy_only=False)], minlength=k)
    return codes, enc.dictionary.to_pylist(), counts.astype(np.int64), asks


def postings(tids: np.ndarray, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                           np.ndarray]:
    """(term, row, tf) of each distinct (term, row) pair, ordered by term then row.
    ``docs`` must be ascending (it is: tokens come text by text), so a stable sort by
    term alone orders the rows too (a radix sort when the term ids fit 16 bits)."""
    if tids.size == 0:
        return tids, docs, np.zeros(0, np.int64)
    small = int(tids.max()) < 2 ** 16
    order = np.argsort(tids.astype(np.uint16) if small else tids, kind="stable")
    t, d = tids[order], docs[order]
    new = np.ones(t.size, bool)
    new[1:] = (t[1:] != t[:-1]) | (d[1:] != d[:-1])
    starts = np.flatnonzero(new)
    tf = np.diff(np.append(starts, t.size))
    return t[starts], d[starts], tf
