"""Moving flats: the token budget. Noor's assistant runs on a small model whose prompt
budget is tight; when the conversation grows, the token limiter removes the oldest
messages of the recent window to fit — among them the one with the building's gate
code, so the answer goes. The same question under a larger budget gets it right."""

from __future__ import annotations

from sample_data.scenarios import Scenario, ThreadScript, Turn

GATE_FACT = "The caretaker says the building's gate code is 4417."


def T(user: str, reply: str | None = None, **kw: object) -> Turn:
    return Turn(user, reply, **kw)  # type: ignore[arg-type]


MOVING_DAY = ThreadScript("moving-day", "Moving day: van and boxes", [
    T("We're moving out of the flat on Harbour Street on 14 June.",
      "14 June, noted. Shall we plan the van and the boxes?"),
    T("Yes. We have a one-bedroom flat and a lot of books.",
      "A one-bedroom with many books fits a 3.5 tonne van; books go in small boxes."),
    T("How many boxes do we need?",
      "For a one-bedroom flat plan about 40 boxes, 15 of them small ones for books."),
    T("We booked the van from CityVans for 8 in the morning.",
      "Van from CityVans at 8:00, noted. Pick it up the evening before if you can."),
    T("My brother Idris will help carry.", "Two people and a trolley will manage."),
    T("Should we wrap the mirror?", "Yes, tape an X across it and wrap it in a blanket."),
    T("The sofa doesn't fit through the kitchen door.",
      "Take the legs off; it will go through the front door on its side."),
    T("We'll label boxes by room.", "Good: colour labels per room make unloading quick."),
    T("Do we defrost the fridge?",
      "Yes, switch it off the day before and leave the door open overnight."),
    T("The landlord inspects on 15 June at noon.",
      "Landlord inspection 15 June at 12:00, noted; clean the oven before then."),
    T("What about the deposit?",
      "Photograph every room after cleaning; the deposit is easier to recover with photos."),
    T("We'll take the meter readings on the way out.",
      "Good, send them to the energy supplier on the same day."),
    T("The plants go in the car, not the van.", "Plants travel better in the car."),
    T("Idris brings his own tool box.", "Great, a drill and a screwdriver set will do."),
    T("We'll order pizza for lunch.", "Sounds like a plan."),
    T("Should we tell the post office?",
      "Yes, set up mail forwarding two weeks ahead; it takes a few days to start."),
    T("Mail forwarding is done.", "Good, one less thing."),
    T("The boxes arrive on Friday.", "Boxes on Friday, noted."),
    T("Thanks, I feel ready.", "You are well prepared. Good luck with the move!"),
    T("Bye for now.", "Bye!"),
])

NEW_FLAT = ThreadScript("new-flat", "New flat: handover and first days", [
    T("We got the keys to the new flat on Mill Road.",
      "Congratulations! Let's note what you need for the first days."),
    T("The flat is on the third floor, there's a lift.",
      "A lift makes unloading much easier; book it with the caretaker if needed."),
    T("The broadband is activated on 18 June.",
      "Broadband from 18 June, noted; use your phone's hotspot until then."),
    T("The bins go out on Tuesday evenings.", "Tuesday evenings for the bins, noted."),
    T("Recycling is collected every other Thursday.",
      "Recycling every other Thursday, noted."),
    T("The heating is a gas boiler in the hall cupboard.",
      "Ask for the boiler's service date; it should be serviced every year."),
    T("The boiler was serviced in March.", "Serviced in March, so it's due next March."),
    T("We need curtains for the bedroom.",
      "Measure the window first; allow 20 cm on each side."),
    T("The window is 140 centimetres wide.", "Then look for curtains about 180 cm wide."),
    T("The parking space is number 12 in the courtyard.",
      "Parking space 12 in the courtyard, noted."),
    T(GATE_FACT, "Gate code 4417, noted. Give it to the movers."),
    T("The caretaker is there on weekday mornings.",
      "Weekday mornings for the caretaker, noted."),
    T("The smoke alarm beeps now and then.",
      "A chirping alarm usually wants a new 9 V battery."),
    T("I changed the battery and it stopped.", "Problem solved."),
    T("The kitchen tap drips a little.",
      "A dripping tap usually needs a new washer; the landlord should fix it."),
    T("I reported the tap to the landlord.", "Good, keep the email in case it takes long."),
    T("We'll paint the living room a pale blue.",
      "Pale blue brightens a room; two coats over the old white."),
    T("What's the gate code for the building?", run_id="move-gate-small-budget",
      note="The prompt budget is small: the token limiter removed the oldest messages "
           "of the recent window to fit, the gate code among them, so the answer goes."),
    T("What's the gate code for the building?", run_id="move-gate-large-budget",
      memory="large-budget",
      note="The same question with a larger budget: nothing is removed and the gate "
           "code is in the prompt."),
    T("Sorry, I just found it on the caretaker's note.",
      "No problem, the note is the safest place for it."),
    T("The movers arrive at nine tomorrow.", "Movers at 9:00 tomorrow, noted."),
    T("Thanks!", "You're welcome, enjoy the new flat!"),
])

MOVE = Scenario(
    key="move",
    resource_id="move-noor",
    title="The budget that cut the gate code",
    summary=("Noor's assistant has a small prompt budget. When the conversation grows, the "
             "token limiter removes the oldest recent messages to fit, and with them the "
             "gate code."),
    agent="moving",
    instructions="You are a moving assistant helping Noor settle into the new flat.",
    threads=[MOVING_DAY, NEW_FLAT],
    memory={"recent_n": 18, "token_budget": 160},
    profiles={"large-budget": {"recent_n": 18, "token_budget": 1000}},
)
