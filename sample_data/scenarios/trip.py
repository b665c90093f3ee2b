"""Trip planning: the plan lives in working memory (a pydantic schema), updated by
tool across threads; later questions are answered from it, and subtracting the
working-memory lane shows it was what carried the answer."""

from __future__ import annotations

from pydantic import BaseModel, Field

from sample_data.scenarios import Scenario, ThreadScript, Turn

T = Turn
WM = "update_working_memory"


class TripPlan(BaseModel):
    """The trip the assistant keeps track of."""

    destination: str | None = Field(None, description="Where we are going")
    start_date: str | None = Field(None, description="First day, ISO date")
    end_date: str | None = Field(None, description="Last day, ISO date")
    travellers: int | None = Field(None, description="How many people travel")
    budget_eur: int | None = Field(None, description="Total budget in euros")
    lodging: str | None = Field(None, description="Where we sleep")
    open_questions: list[str] = Field(default_factory=list, description="Still to decide")


TRIP_1 = ThreadScript("trip-1", "Where should we go in May?", [
    T("We want a city trip in May, somewhere warm but not too far from Berlin.",
      "Good options are Lisbon, Seville and Valletta: all around 24°C in May and a direct "
      "flight from Berlin."),
    T("Lisbon sounds best, my partner loves tiles and seafood.",
      "Lisbon it is. I've noted it in the plan.",
      tool=(WM, {"destination": "Lisbon", "open_questions": ["dates", "budget", "lodging"]})),
    T("We can travel from the 14th to the 19th of May.",
      "Five nights, 14 to 19 May, noted.",
      tool=(WM, {"start_date": "2027-05-14", "end_date": "2027-05-19",
                 "open_questions": ["budget", "lodging"]})),
    T("It's the two of us.", "Two travellers, noted.", tool=(WM, {"travellers": 2})),
    T("Are flights expensive then?",
      "Direct flights Berlin–Lisbon in mid May are usually €120–€180 per person return."),
    T("What's the weather like in the evenings?",
      "Evenings in May are around 15°C, so bring a light jacket."),
    T("Any neighbourhood you'd recommend?",
      "Alfama for atmosphere, Príncipe Real for quieter streets and good restaurants."),
    T("Is it walkable?",
      "Very, but hilly: good shoes matter more than a car. Tram 28 covers the steep parts."),
    T("Do we need cash?", "Cards work almost everywhere; keep €20–30 for small cafés."),
    T("What about a day trip?",
      "Sintra is 40 minutes by train and makes a great day trip."),
    T("Let's keep Sintra in mind.", "Added Sintra as an idea.",
      tool=(WM, {"open_questions": ["budget", "lodging", "Sintra day trip?"]})),
    T("Thanks, talk soon!", "Looking forward to planning the rest!"),
    T("Oh, my partner is vegetarian, is that a problem?",
      "Not at all, Lisbon has plenty of vegetarian places, especially in Príncipe Real."),
    T("Great, bye.", "Bye!"),
])

TRIP_2 = ThreadScript("trip-2", "Budget and where to stay", [
    T("Let's talk money. We want to spend at most 2,000 euros in total.",
      "A total budget of €2,000 for two is realistic for five nights in Lisbon.",
      tool=(WM, {"budget_eur": 2000, "open_questions": ["lodging", "Sintra day trip?"]})),
    T("How should we split it?",
      "Roughly €350 flights, €900 lodging, €550 food and €200 for transport and sights."),
    T("Hotel or apartment?",
      "With a kitchen an apartment saves on breakfasts; hotels are easier for short stays."),
    T("We found Casa do Azulejo in Alfama, 170 euros a night.",
      "Casa do Azulejo at €170 a night is €850 for five nights, within the lodging budget."),
    T("Let's book Casa do Azulejo.", "Booked in the plan: Casa do Azulejo, Alfama.",
      tool=(WM, {"lodging": "Casa do Azulejo, Alfama (€170/night)",
                 "open_questions": ["Sintra day trip?"]})),
    T("Does it have air conditioning?",
      "Yes, the listing mentions air conditioning and a small terrace."),
    T("Is breakfast included?", "No, but there's a bakery on the same street."),
    T("How do we get there from the airport?",
      "The metro red line to Alameda and a short taxi, or a 25-minute taxi for about €20."),
    T("Is there a tourist tax?", "Yes, €2 per person per night, paid at check-in."),
    T("OK, what's left to decide?", "Only whether to do the Sintra day trip."),
    T("We'll decide Sintra later.", "Fine, it stays open."),
    T("Thanks!", "You're welcome!"),
    T("One more: do we need travel insurance?",
      "It's optional within the EU; your EHIC card covers public healthcare."),
    T("Good to know. Bye!", "Bye!"),
])

TRIP_3 = ThreadScript("trip-3", "Final checks before Lisbon", [
    T("We're getting excited about the trip!", "So am I, it's going to be lovely."),
    T("Sintra: yes, let's do it on the 16th.", "Sintra day trip on 16 May added.",
      tool=(WM, {"open_questions": []})),
    T("Should we book the Pena Palace tickets in advance?",
      "Yes, timed tickets sell out in May; book the 10:00 slot to avoid crowds."),
    T("What should we pack?",
      "Light layers, a jacket for evenings, good walking shoes and sunscreen."),
    T("Any restaurant tips near Alfama?",
      "Try a tasca for grilled sardines, and book a fado dinner one evening."),
    T("Is fado touristy?", "Some places are; small tavernas in Mouraria feel more authentic."),
    T("Do we need adapters for plugs?", "No, Portugal uses the same plugs as Germany."),
    T("Should we learn some Portuguese?",
      "A few words help: obrigado/obrigada for thank you, bom dia for good morning."),
    T("What time do people eat dinner there?", "Usually from 20:00; many kitchens close at 23:00."),
    T("Remind me, what is our total budget?", run_id="trip-3-budget",
      note="Answered from working memory, which the update tool filled in earlier threads."),
    T("And what lodging did we book?", run_id="trip-3-lodging"),
    T("When do we fly out?", run_id="trip-3-dates"),
    T("How many of us are going?", run_id="trip-3-travellers"),
])

TRIP = Scenario(
    key="trip",
    resource_id="trav-ben",
    title="The plan the assistant keeps",
    summary=("Ben plans a Lisbon trip over three conversations; the assistant keeps the "
             "plan in working memory and answers from it."),
    agent="planner",
    instructions=("You are a travel planning assistant. Keep the trip plan up to date "
                  "with update_working_memory."),
    threads=[TRIP_1, TRIP_2, TRIP_3],
    memory={"recent_n": 4, "working_memory": {"schema": "TripPlan", "scope": "resource"}},
)
