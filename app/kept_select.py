"""A selectbox that keeps every pick (the run pages' Run and Thread pickers)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st


def kept_select(box: Any, label: str, options: Sequence[Any], wanted: Any, *, key: str,
                **kwargs: Any) -> Any:
    """``box.selectbox(label, options)`` showing ``wanted`` — the page's current choice
    (the URL's, the run followed) — when that changed since the last run of the page,
    and otherwise what the user last picked. A selectbox whose ``index`` follows the
    current choice is another widget each time that index moves (Streamlit keys an
    unkeyed widget by its arguments), so it forgot every second pick: keyed, it keeps
    them, and the current choice is put in its state only when it moved elsewhere."""
    if None in options:
        # a select box shows a value of None as nothing picked ("Choose an option"): the
        # Threads page's "(no resource)" group is offered as a stand-in for it
        fmt = kwargs.pop("format_func", str)
        shown = [NONE if o is None else o for o in options]
        picked = kept_select(box, label, shown, NONE if wanted is None else wanted, key=key,
                             format_func=lambda o: fmt(None if o == NONE else o), **kwargs)
        return None if picked == NONE else picked
    seen = f"{key}:seen"
    current = st.session_state.get(key)
    if st.session_state.get(seen) != wanted or current not in options:
        current = wanted if wanted in options else options[0]
    # (set every time: a widget of another page with this key gets it too, where a
    # value its own widget left would be dropped for the default)
    st.session_state[key] = current
    value = box.selectbox(label, options, key=key, **kwargs)
    st.session_state[seen] = value  # (the page follows it: next time, the wanted one)
    return value


class _NoneOption:
    """The stand-in for an option None: every copy of it is equal (session state may
    hold a copy)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NoneOption)

    def __hash__(self) -> int:
        return hash(_NoneOption)

    def __repr__(self) -> str:
        return "NONE"


NONE = _NoneOption()
