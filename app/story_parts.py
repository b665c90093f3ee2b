"""The pieces of the story page (app/app_pages/story.py): messages in plain words, what
the assistant was given, how closely older messages matched, the key message's fate,
the proof replay (stored, run again, read-only) and the fix — each in plain language,
with the ids and settings added only when the engineer details are on."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import streamlit as st

from app import services
from app.charts import token_bar
from app.components import (
    COMPARE_PAGE,
    COUNTERFACTUAL_PAGE,
    Id,
    answer_text,
    escape_md,
    fmt_score,
    link_to_run,
    literal,
    md,
    preview_text,
    ref,
    with_db,
)
from app.stories import (
    PLAIN_PARTS,
    Story,
    glossary_terms,
    left_out_because,
    percent,
    plain_answer,
    plain_plan,
    plain_summary,
)
from memory_core.analysis import views

if TYPE_CHECKING:
    from memory_core.analysis.counterfactual import CounterfactualResult
    from memory_core.analysis.fates import Explanation
    from memory_core.provenance.record import Memctx

Ref = tuple[str, int]
ROLE_AVATARS = {"user": ":material/person:", "assistant": ":material/support_agent:",
                "tool": ":material/build:", "system": ":material/settings:"}
GLOSSARY_ICON = ":material/menu_book:"  # starts every glossary note (they pair words)
_CALL_LINE = re.compile(r"^→ ([\w.-]+)\(.*\)$", re.MULTILINE)
_RESULT_LINE = re.compile(r"^([\w.-]+) → .*$", re.MULTILINE)


def _tool_words(name: str) -> str:
    return {"update_working_memory": "plan-keeping"}.get(name, name.replace("_", " "))


def plain_text(role: str, text: str, lane: str | None = None) -> str:
    """Stored text for people: tool calls and results named in words (never their JSON),
    the summary without its position tags, the plan as ``field: value`` lines."""
    if lane == "observations":
        return plain_summary(text)
    if lane == "working_memory":
        return plain_plan(text)
    if role == "tool":
        text = _RESULT_LINE.sub(lambda m: f"(the {_tool_words(m[1])} system answers)", text)
    else:
        text = _CALL_LINE.sub(lambda m: f"(asks the {_tool_words(m[1])} system)", text)
    return text.strip() or "(empty)"


# -- the glossary, where a term first appears -------------------------------------------
_GLOSSED = "story-glossed"


GLOSSARY_HEAD = "| in this story | engineers say | meaning |\n|---|---|---|\n"


def glossary_start() -> None:
    """A new page: every term is new again."""
    st.session_state[_GLOSSED] = set()


def gloss(text: str) -> None:
    """The glossary entry of each term ``text`` uses that this page has not explained
    yet, shown open right there: the plain words, the engineer's, and what they mean."""
    seen: set[str] = st.session_state.setdefault(_GLOSSED, set())
    for plain, engineer, meaning in glossary_terms(text):
        if engineer in seen:
            continue
        seen.add(engineer)
        with st.container(key=f"glossary-{len(seen)}"):
            st.caption(f"{GLOSSARY_ICON} " + escape_md(
                f"“{plain}” — engineers say “{engineer}”: {meaning}."))


def say(text: str) -> None:
    """A plain paragraph of the story, with the glossary notes of its new terms."""
    st.markdown(escape_md(text))
    gloss(text)


# -- right or wrong -------------------------------------------------------------------
def is_right(answer: str | None, story: Story) -> bool:
    """Whether an answer holds the story's fact (read from the record, never declared)."""
    return answer is not None and story.fact in answer


def answer_mark(answer: str | None, story: Story) -> str:
    """The badge under an answer: right or wrong, in words and colour."""
    if is_right(answer, story):
        return ":green-badge[:material/check_circle: Right answer]"
    return (":red-badge[:material/cancel: Wrong answer] " + escape_md(
        f"the right one would say “{story.fact}”"))


def answer_bubble(answer: str | None, story: Story, *, engineer: bool) -> None:
    """An answer in plain words (the stored text too in engineer mode), marked right or
    wrong."""
    bubble("assistant", plain_answer(answer_text(answer)), engineer=engineer,
           raw=answer_text(answer))
    st.markdown(answer_mark(answer, story))


def answer_source(view: views.RunView, fact: str) -> str | None:
    """The part of what the assistant was given that held the fact, in plain words."""
    for lv in view.lanes:
        if lv.lane not in ("dropped", "input") and any(fact in it.text for it in lv.items):
            return PLAIN_PARTS.get(lv.lane, lv.lane)
    return None


def fate_badge(given: bool | None, right: bool) -> str:
    """The key message's badge: red only when it was kept out and the answer is wrong
    (kept out and right anyway is no failure)."""
    if given:
        return ":green-badge[:material/check_circle: Handed over]"
    if right:
        return ":blue-badge[:material/info: Not handed over itself]"
    return ":red-badge[:material/block: Not handed over]"


def bubble(role: str, text: str, *, engineer: bool, raw: str | None = None) -> None:
    """A chat message: the plain text, and the stored text too in engineer mode when the
    two differ."""
    with st.chat_message(role, avatar=ROLE_AVATARS.get(role)):
        literal(text)
        if engineer and raw is not None and raw != text:
            literal(raw)


def find_key(page: views.MessagePage, phrase: str) -> views.MessageView | None:
    """The key message: the first message of the thread containing ``phrase``."""
    return next((m for m in page.messages if phrase in m.text), None)


def message_bubble(m: views.MessageView, *, engineer: bool) -> None:
    bubble(m.role, plain_text(m.role, m.text), engineer=engineer, raw=m.text)
    if engineer:
        st.caption(md(*ref(m.thread_id, m.seq), " · written by run ",
                      Id(m.written_by_run) if m.written_by_run else "(none)"))


# -- what the assistant was given -------------------------------------------------------
COMPOSITION_TITLE = "What the assistant was given, by share of its length"


def composition_bars(lanes: list[views.LaneView]) -> None:
    """Each part's share of what the assistant was given, one bar a part in prompt order,
    in plain words (the engineer view has the token counts). Not a chart: a chart
    library costs a cold browser tab more than the rest of the page (issue 36 point 7)."""
    total = sum(lv.tokens for lv in lanes if lv.lane != "dropped") or 1
    st.markdown(f"**{COMPOSITION_TITLE}**")
    for lv in lanes:
        if lv.lane == "dropped" or lv.tokens == 0:
            continue
        share = lv.tokens / total
        st.progress(min(share, 1.0), text=escape_md(
            f"{PLAIN_PARTS.get(lv.lane, lv.lane)}: {share:.0%}"))


def given_parts(view: views.RunView, *, engineer: bool) -> None:
    """The parts that matter for a memory story, each shown in plain words: the plan,
    the summary, the older messages looked up, and what was found but left out."""
    for lane in ("working_memory", "observations", "recalled"):
        lv = view.lane(lane)
        if not lv.items:
            continue
        st.markdown(f"**{PLAIN_PARTS[lane]}**")
        gloss(PLAIN_PARTS[lane])
        for it in lv.items:
            with st.container(border=True):
                said = plain_text(it.role, it.text, lane)
                literal(said)
                if engineer and it.text != said:  # (as stored, where the words differ)
                    literal(it.text)
    dropped = view.lane("dropped")
    if dropped.items:
        st.markdown("**Left out of what the assistant was given**")
        gloss("left out of what the assistant was given")
        reasons = list(dict.fromkeys(it.reason for it in dropped.items))
        for reason in reasons:  # one reason said once for all the messages it left out
            items = [it for it in dropped.items if it.reason == reason]
            if len(items) > 1:
                st.markdown(escape_md(f"These {len(items)} messages were left out, each "
                                      f"because {left_out_because(reason)}:"))
            for it in items:
                with st.container(border=True):
                    literal(plain_text(it.role, it.text))
                    if len(items) == 1:
                        st.caption(escape_md(f"Left out because {left_out_because(reason)}"))
                    if engineer:
                        st.caption(md(*ref(it.thread_id, it.seq), f" · reason {it.reason}"))


# -- how closely older messages matched ----------------------------------------------
KIND_WORDS: dict[str, str] = {
    "hit": "handed over", "dropped": "found but left out",
    "beyond-top-k": "passed the minimum, not among the closest",
    "below-threshold": "under the minimum match", "filtered-out": "skipped by a label filter",
    "already-in-window": "already among the latest messages",
    "duplicate-of-query": "the question itself",
}


@dataclass(frozen=True)
class Bar:
    position: int
    score: float
    kind: str
    ref: Ref
    preview: str
    reason: str | None = None  # why a found message was left out


def match_bars(view: views.RunView, memctx: Memctx | None) -> list[Bar]:
    """Every older message whose match the record kept: what was handed over, the near
    misses, and what was found but left out (with its position, so the table starts at
    the closest match)."""
    bars = [Bar(c.rank, c.score, c.status, (c.thread_id, c.seq), c.preview)
            for c in view.candidates]
    for d in memctx.dropped if memctx else []:
        if d.rank is not None and d.score is not None and d.origin in (None, "hit"):
            bars.append(Bar(d.rank, d.score, "dropped", (d.thread_id, d.seq), d.preview,
                            d.reason))
    return sorted(bars, key=lambda b: (b.position, -b.score))


MATCH_TITLE = "How closely each older message matched the question"


_CALL_START = re.compile(r"→ ([\w.-]+)\(.*$", re.MULTILINE)


def _match_bar(score: float, cells: int = 12) -> str:
    """A match in words and as a bar of blocks as long as the score."""
    return f"{percent(score)} " + "█" * round(max(0.0, min(score, 1.0)) * cells)


def _preview(text: str) -> str:
    """A message's opening as one plain line: a tool call, cut short or not, named in
    words (never its JSON); a recorded preview cut at its length ends in "…"."""
    text = plain_text("assistant", _CALL_START.sub(
        lambda m: f"(asks the {_tool_words(m[1])} system)", preview_text(text)))
    text = " ".join(text.split())
    if len(text) > 120:  # cut at a word
        head = text[:119]
        text = (head.rsplit(" ", 1)[0] if " " in head else head).rstrip("…") + "…"
    return escape_md(text)


def match_table(bars: list[Bar], threshold: float, top_k: int | None,
                key: Ref | None, key_name: str) -> str:
    """Older messages by how closely they matched the question, closest first, as a small
    Markdown table: the match in words and as a bar, the minimum match and the cut after
    the N closest as rows of their own, and the key message's row named in bold."""
    rows = [f"**{MATCH_TITLE}**", "",
            "| position | match | what happened | the message |", "|---:|---|---|---|"]
    cut = line = False
    for b in bars:
        if top_k is not None and not cut and b.position > top_k:
            rows.append(f"| | | *only the {top_k} closest are handed over; "
                        "the ones below were not* | |")
            cut = True
        if not line and b.score < threshold:
            rows.append(f"| | | *the minimum match, {percent(threshold)}: the ones below "
                        "match less* | |")
            line = True
        cells = [str(b.position), _match_bar(b.score),
                 escape_md(KIND_WORDS.get(b.kind, b.kind)), _preview(b.preview)]
        if b.ref == key:
            cells = [f"**{c}**" for c in cells[:3]] + [
                f"**← {escape_md(key_name)}**: {cells[3]}"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def match_caption(bars: list[Bar], threshold: float, top_k: int | None,
                  key: Ref | None, key_name: str) -> str:
    """The table's rule, true to the record: both conditions, what passed the line and
    still was not handed over, why the first rows are what they are, where the key
    message stands."""
    rule = (f"Memory hands over an older message only if it matches at least "
            f"{percent(threshold)}" + (f" and is among the {top_k} closest matches."
                                       if top_k is not None else "."))
    parts = [rule]
    if bars and bars[0].position > 1:
        parts.append(f"The table starts at position {bars[0].position}: the record does "
                     "not keep the closer ones.")
    for b in bars:
        if b.kind == "dropped":
            parts.append(f"The message at position {b.position} was found but left out of what the assistant "
                         f"was given, because {left_out_because(b.reason)}.")
    over = [b for b in bars if b.kind == "beyond-top-k"]
    if over and top_k is not None:
        parts.append(f"{len(over)} message{'s' if len(over) > 1 else ''} passed the minimum "
                     f"but came after the {top_k} closest, so "
                     f"{'they were' if len(over) > 1 else 'it was'} not handed over either.")
    key_bar = next((b for b in bars if b.ref == key), None)
    if key_bar is not None:
        parts.append(f"The row marked “{key_name}” is at position {key_bar.position}.")
    return " ".join(parts)


# -- the key message's fate -----------------------------------------------------------
def key_fate(fate: Explanation | None, key_name: str) -> tuple[bool | None, str]:
    """Whether the key message reached the assistant in this run, and why, in plain
    words: the fate ``analysis.forgotten`` decides from the run's record alone
    (``services.cached_fate``; no embedding model needed), told to a non-engineer."""
    name = key_name[:1].upper() + key_name[1:]
    if fate is None:
        return None, f"{name} is not in this database."
    ev = fate.evidence
    if fate.reached_model:
        part = PLAIN_PARTS.get("recalled" if fate.fate == "recalled" else
                               "input" if fate.fate == "input" else "recent")
        return True, f"{name} was handed over, as part of “{part}”."
    if fate.fate == "unexplained" and "near_misses" not in ev:
        return None, f"{name} was not handed over; this answer keeps no memory record."
    if fate.fate == "dropped":
        return False, (f"{name} was found by memory but left out, because "
                       f"{left_out_because(ev.get('reason'))}.")
    if fate.fate == "trimmed-by-token-limit":
        return False, (f"{name} was cut out to keep what the assistant is given under "
                       "its length limit.")
    score = ev.get("vector_score") if ev.get("vector_score") is not None else ev.get("score")
    pct = percent(score) if score is not None else "(no score recorded)"
    top_k, rank = ev.get("top_k"), ev.get("rank")
    if fate.fate == "below-threshold" and ev.get("threshold") is not None:
        said = (f"{name} matched the question {pct}, under the minimum of "
                f"{percent(ev['threshold'])}")
        # the rules analysis found, in order: a lower minimum alone may not be enough
        top = next((r for r in fate.rules if r.rule == "beyond-top-k"), None)
        if top is None or not isinstance(top.needed, int):
            return False, f"{said}. So it was not handed over."
        return False, (f"{said}; and even with a lower minimum, {top.needed - 1} messages "
                       f"matched better while only the {top_k} closest are handed over. "
                       "So it was not handed over. Only a minimum lowered to its match "
                       f"together with handing over the {top.needed} closest would have "
                       "let it in; either change alone still leaves it out.")
    if fate.fate == "beyond-top-k":
        return False, (f"{name} matched the question {pct}, enough to pass, but "
                       f"{(rank or 1) - 1} messages matched better and only the {top_k} "
                       "closest are handed over.")
    if fate.fate == "filtered-out":
        return False, (f"A label filter skipped {key_name}, although it matched "
                       f"the question {pct}.")
    if fate.fate == "compacted":
        return False, (f"{name} was in the part of the conversation that reached "
                       "the assistant only as a summary.")
    if fate.fate == "recall-off":
        return False, (f"{name} was not handed over: it is older than the latest messages, "
                       "and memory does not search older messages in this setup.")
    return False, (f"{name} was not among the closest matches memory noted for this "
                   "question, so it was not handed over.")


# -- the proof ------------------------------------------------------------------------
VERDICT_WORDS = {"changed": ("orange", "The answer changed"),
                 "unchanged": ("blue", "The answer stayed the same"),
                 "inconclusive": ("gray", "Cannot tell: the answers vary on their own")}


def stored_proof(url: str, run_id: str, put_back: list[Ref],
                 take_away: tuple[str, ...]) -> CounterfactualResult | None:
    """The latest journaled replay of exactly this change (any visitor's)."""
    matching = [c for c in services.cached_counterfactuals(url, run_id)
                if not c.variant.subtract_recalled
                and sorted(c.variant.subtract_lanes) == sorted(take_away)
                and sorted(map(tuple, c.variant.put_back)) == sorted(put_back)]
    return matching[-1] if matching else None


def change_words(story: Story) -> str:
    bits = []
    if story.proof.put_back_key:
        bits.append(f"with {story.key_name} put back")
    bits += [f"without {PLAIN_PARTS.get(lane, lane)[:1].lower()}"
             f"{PLAIN_PARTS.get(lane, lane)[1:]}" for lane in story.proof.take_away]
    return " and ".join(bits) or "unchanged"


def proof_result(result: CounterfactualResult, story: Story, *, engineer: bool) -> None:
    colour, words = VERDICT_WORDS.get(result.verdict, ("gray", result.verdict))
    st.markdown(f"#### :{colour}-badge[{words}]")
    before, after = st.columns(2)
    with before:
        st.markdown("**Before: the answer it gave**")
        literal(plain_answer(answer_text(result.original_answer)))
        st.markdown(answer_mark(result.original_answer, story))
    with after:
        st.markdown(f"**After: asked again {escape_md(change_words(story))}**")
        literal(plain_answer(result.new_answer or "(empty answer)"))
        st.markdown(answer_mark(result.new_answer, story))
    for note in result.notes:
        st.warning(escape_md(note))
    if engineer:
        st.caption(escape_md(f"counterfactual of run {result.run_id}: {result.description} · "
                             f"verdict {result.verdict} · similarity {result.similarity:.2f} · "
                             f"model {result.model.get('name', '?')} · record {result.key}"))
        st.page_link(COUNTERFACTUAL_PAGE, label=escape_md(
            f"open the counterfactual page on run {result.run_id}"),
            icon=":material/science:", query_params=with_db({"run": result.run_id}))


def run_proof(url: str, story: Story, put_back: list[Ref], *, again: bool) -> None:
    """Replay the proof (the first time, or again), showing what is loading."""
    label = "Asking the assistant again…"
    with st.status(label, expanded=True) as status:
        st.write("Loading the language model the assistant reads with (the first time "
                 "only: up to half a minute), then asking the same question again.")
        try:
            result = services.run_counterfactual(url, story.proof.run,
                                                 lanes=story.proof.take_away,
                                                 put_back=put_back, reuse=not again)
        except Exception as e:  # noqa: BLE001 - shown, never raised
            status.update(label="The replay could not run", state="error")
            st.error(escape_md(f"The replay could not run: {services.friendly_error(e)}"))
            return
        status.update(label="Asked again", state="complete", expanded=False)
    if again:
        st.session_state[f"story-again:{story.key}"] = result
    st.rerun()  # the stored result is shown with its "Run again" button


def proof_section(url: str, story: Story, key: Ref | None, *, engineer: bool) -> None:
    """The proof: the stored result with "Run again", or the button that runs it the
    first time; read-only shows what is stored and says replay is off."""
    proof = story.proof
    say(proof.intro)
    asked = services.cached_run_view(url, proof.run).query
    st.markdown("The same question, asked again:" if proof.run == story.run or asked ==
                services.cached_run_view(url, story.run).query else
                "The question asked in this replay:")
    bubble("user", asked or "(question not recorded)", engineer=False)
    put_back = [key] if proof.put_back_key and key is not None else []
    if proof.put_back_key and key is None:
        st.info(f"{escape_md(story.key_name[:1].upper() + story.key_name[1:])} is not in "
                "this database, so it cannot be put back.", icon=":material/info:")
        return
    options = services.cached_variant_options(url, proof.run)
    if put_back and key not in {(c.thread_id, c.seq) for c in options.put_back}:
        st.info(escape_md(f"In this database, memory's record for that answer does not list "
                          f"{story.key_name} among the messages it found, so it cannot be "
                          "put back here."), icon=":material/info:")
        if engineer:
            st.caption(escape_md(f"{put_back[0][0]} #{put_back[0][1]} is neither dropped "
                                 f"nor a near miss in run {proof.run}, nor summarised "
                                 "before it"))
        return
    stored = stored_proof(url, proof.run, put_back, proof.take_away)
    read_only = services.read_only()
    if read_only:
        st.info("Replays are off: this workbench was started read-only, so nothing can be "
                "asked again here." + (" The proof below was recorded earlier."
                                       if stored is not None else ""),
                icon=":material/lock:")
    if stored is None:
        if st.button(proof.button, type="primary", icon=":material/science:",
                     disabled=read_only, key=f"proof:{story.key}"):
            run_proof(url, story, put_back, again=False)
        return
    proof_result(stored, story, engineer=engineer)
    if st.button("Run again", icon=":material/replay:", disabled=read_only,
                 key=f"again:{story.key}",
                 help="Ask the assistant again now, to check the result still holds."):
        run_proof(url, story, put_back, again=True)
    fresh: CounterfactualResult | None = st.session_state.get(f"story-again:{story.key}")
    if fresh is not None:
        same = fresh.new_answer == stored.new_answer
        st.success("Asked again just now: the same answer as before." if same else
                   "Asked again just now: this time the answer was different:",
                   icon=":material/check_circle:" if same else ":material/info:")
        if not same:
            literal(plain_answer(fresh.new_answer or "(empty answer)"))
            st.markdown(answer_mark(fresh.new_answer, story))


# -- the fix --------------------------------------------------------------------------
def changed_settings(a: views.RunView, b: views.RunView) -> dict[str, tuple[object, object]]:
    return {k: (a.settings.get(k), v) for k, v in b.settings.items()
            if a.settings.get(k) != v}


def fix_section(url: str, story: Story, view: views.RunView, fixed: views.RunView,
                key: Ref | None, *, engineer: bool) -> None:
    assert story.fix is not None
    say(story.fix.intro)
    if engineer:
        changes = changed_settings(view, fixed)
        st.caption(escape_md(f"run {story.fix.run} · settings changed: " + (", ".join(
            f"{k}: {a} → {b}" for k, (a, b) in changes.items()) or "none")))
        link_to_run(story.fix.run, label=("open run ", Id(story.fix.run),
                                          " in the run inspector"))
        st.page_link(COMPARE_PAGE, label=escape_md(f"compare {story.run} with {story.fix.run}"),
                     icon=":material/compare_arrows:",
                     query_params=with_db({"a": story.run, "b": story.fix.run}))
    bubble("user", fixed.query or "(question not recorded)", engineer=False)
    answer_bubble(fixed.answer, story, engineer=engineer)
    before = {(it.thread_id, it.seq) for it in view.lane("recalled").items}
    new = [it for it in fixed.lane("recalled").items if (it.thread_id, it.seq) not in before]
    if new:
        st.markdown("**What the change let in:**")
        for it in new:
            with st.container(border=True):
                literal(plain_text(it.role, it.text))
                if (it.thread_id, it.seq) == key:
                    st.caption(escape_md(f"↑ {story.key_name}"))
                if engineer:
                    # (its rank in the fixed run: the table above ranks the run that
                    # forgot, so the same message may read "position 6" there)
                    st.caption(md(*ref(it.thread_id, it.seq), f" · rank {it.rank} in run ",
                                  Id(story.fix.run), f" · score {fmt_score(it.score)}"))


def engineer_prompt(view: views.RunView) -> None:
    """The engineer's view of what was given: tokens per lane and the settings."""
    st.plotly_chart(token_bar(view.lanes), key="story-tokens")
    st.caption(escape_md(f"run {view.run.run_id} · " + ", ".join(
        f"{k}={v}" for k, v in view.settings.items() if v is not None)))
