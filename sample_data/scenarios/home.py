"""Home renovation: recall across all of the owner's threads (resource scope) brings a
decision from another conversation, while a metadata filter keeps out everything not
tagged for the kitchen — including the bathroom decision asked about."""

from __future__ import annotations

from sample_data.scenarios import Scenario, ThreadScript, Turn

K = {"room": "kitchen"}
B = {"room": "bathroom"}
G = {"room": "general"}


def T(user: str, reply: str | None = None, meta: dict[str, str] | None = None,
      **kw: object) -> Turn:
    return Turn(user, reply, metadata=dict(meta or {}), **kw)  # type: ignore[arg-type]


KITCHEN = ThreadScript("kitchen-plans", "Kitchen: layout and worktops", [
    T("We're redoing the kitchen, it's 3.2 by 4 metres with one window.",
      "A 3.2 × 4 m kitchen fits an L-shape or a galley with an island.", K),
    T("We prefer the L-shape along the window wall.",
      "An L-shape along the window wall keeps the sink under the window.", K),
    T("We chose oak worktops with a matte oil finish.",
      "Oak with matte oil is warm and repairable; re-oil it twice a year.", K),
    T("The sink will be a single ceramic basin, 60 cm.",
      "A 60 cm ceramic basin suits an oak worktop; seal the cut-out edges well.", K),
    T("How much does the oak worktop cost?",
      "Solid oak runs about €220 per metre; your L-shape needs around 5.5 m.", K),
    T("We'll go with an induction hob from Bosch.",
      "Induction needs a 32 A circuit; ask the electrician to check.", K),
    T("The electrician confirmed the 32 A circuit is fine.", "Good, no rewiring then.", K),
    T("Cabinet fronts will be sage green.", "Sage green with oak looks lovely.", K),
    T("Handles in brushed brass.", "Brushed brass suits both green and oak.", K),
    T("The extractor goes above the hob, ducted outside.",
      "Ducted is far better than recirculating; plan a 150 mm duct.", K),
    T("Delivery of the cabinets is on 12 April.", "Cabinets arrive 12 April, noted.", K),
    T("Thanks for the help!", "You're welcome!", K),
    T("Should the floor go in before the cabinets?",
      "Yes, lay the floor first so the cabinets sit level and nothing is boxed in.", K),
    T("OK, floor first.", "Great.", K),
])

BATHROOM = ThreadScript("bathroom-plans", "Bathroom: tiles and shower", [
    T("Now the bathroom. It's small, 2 by 2.5 metres.",
      "In 2 × 2.5 m a walk-in shower saves space compared with a tub.", B),
    T("We'll do a walk-in shower with a glass panel.",
      "Plan a linear drain so the floor only slopes one way.", B),
    T("For the walls we picked terracotta zellige tiles.",
      "Zellige is handmade and uneven by design; order 15% extra for cuts.", B),
    T("Floor tiles will be large grey porcelain, 60 by 60.",
      "Large porcelain means fewer grout lines, easier to clean.", B),
    T("The vanity is a wall-hung oak unit.", "Wall-hung keeps the floor free, nice.", B),
    T("Do we need an extractor fan?",
      "Yes, a humidity-controlled fan; bathrooms without windows need one by code.", B),
    T("We'll add a heated towel rail.", "An electric rail needs its own fused spur.", B),
    T("The plumber starts on 3 May.", "Plumber on 3 May, noted.", B),
    T("Which grout colour for the zellige?",
      "A warm beige grout keeps the terracotta look calm.", B),
    T("Beige grout it is.", "Noted.", B),
    T("Thanks, that's the bathroom sorted.", "Great progress!", B),
    T("Should we seal the zellige?", "Yes, seal before grouting; zellige is porous.", B),
    T("OK.", "👍", B),
    T("Bye!", "Bye!", B),
])

BUDGET = ThreadScript("budget-review", "Budget review", [
    T("Let's review the whole renovation budget.", "Sure, what's the total you planned?", G),
    T("We planned 28,000 euros overall.", "€28,000 overall, noted.", G),
    T("The kitchen is about 16,000 of that.", "That leaves about €12,000 for the rest.", G),
    T("The bathroom quote came in at 9,500.", "Then there's a €2,500 buffer.", G),
    T("Is a 2,500 buffer enough?",
      "About 9% is on the low side; 10–15% is the usual advice for older houses.", G),
    T("We'll keep 3,000 as a buffer by skipping the towel rail upgrade.",
      "A €3,000 buffer is more comfortable.", G),
    T("Should we pay the builder in instalments?",
      "Yes, tie instalments to milestones and hold back 5% until everything is finished.", G),
    T("The builder agreed to three milestones.", "Good, that protects you.", G),
    T("Do we need a permit for any of this?",
      "Interior work without structural changes usually needs no permit.", G),
    T("What did we choose for the kitchen worktops?", run_id="home-worktops",
      note="Recall reaches across the owner's threads (resource scope): the kitchen thread's "
           "decision is found from the budget conversation."),
    T("Which tiles did we pick for the bathroom walls?", run_id="home-tiles",
      note="The bathroom decision is tagged room=bathroom; the kitchen assistant's filter "
           "only admits kitchen and general messages, so it never reaches the model."),
    T("When do the kitchen cabinets arrive?", run_id="home-cabinets"),
    T("Which tiles did we pick for the bathroom walls?", run_id="home-tiles-nofilter",
      memory="no-filter",
      note="Without the filter the bathroom decision is recalled."),
])

HOME = Scenario(
    key="home",
    resource_id="home-eva",
    title="The filter that hid the bathroom",
    summary=("Eva's renovation spans three conversations. Recall searches all of them, but "
             "a metadata filter admits only kitchen and general messages."),
    agent="renovation",
    instructions="You are a renovation planning assistant for Eva's kitchen project.",
    threads=[KITCHEN, BATHROOM, BUDGET],
    memory={"recent_n": 4, "recall": {"top_k": 3, "threshold": 0.3, "scope": "resource",
                                      "filter": {"room": {"$in": ["kitchen", "general"]}}}},
    profiles={"no-filter": {"recent_n": 4, "recall": {"top_k": 3, "threshold": 0.3,
                                                      "scope": "resource"}}},
)

ALL_SCENARIOS_NOTE = "support, trip, tech, home, move"
