"""Customer support: a refund decided in an earlier thread is forgotten later — the
recall threshold keeps it out, and a recalled refund(...) call whose result was never
stored is dropped. A lower threshold, replayed, fixes it."""

from __future__ import annotations

from sample_data.scenarios import Legacy, Scenario, ThreadScript, Turn

T = Turn

SUPPORT_1 = ThreadScript("support-1", "Damaged blender, order A-1042", [
    T("Hi, my blender from order A-1042 arrived with a cracked jug. Can you help?",
      "I'm sorry about that! Let me look up order A-1042 first.",
      tool=("lookup_order", {"order_id": "A-1042"})),
    T("It's the VitaBlend 700, I paid 240 euros for it.",
      "Thanks. I can see the VitaBlend 700 on order A-1042, paid €240 on 3 March, "
      "delivered on 9 March."),
    T("The jug has a crack running down the side, it leaks when I fill it.",
      "That's a transport damage case. Could you send a photo of the crack to "
      "photos@vitastore.example so we can attach it to the ticket?"),
    T("I just emailed the photo.",
      "Got it, the photo is attached to ticket T-5531."),
    T("Would you replace it or refund it?",
      "Either is possible. A replacement jug is out of stock until May, so most customers "
      "in your situation choose a refund."),
    T("Then I'd like a refund please.",
      "Understood, I'm issuing the refund for order A-1042 now.",
      tool=("refund", {"order_id": "A-1042", "amount_eur": 240})),
    T("Great. When will I see the money?",
      "The refund of €240 for order A-1042 was approved today (ref RF-8812) and will reach "
      "your Visa card ending 4411 within 5 business days."),
    T("Do I need to send the blender back?",
      "No need to return it: for transport damage under €300 we don't ask for the item back. "
      "Please recycle the jug responsibly."),
    T("That's very kind. Will I get an email confirmation?",
      "Yes, a confirmation for RF-8812 goes to anna.berg@example.com within the hour."),
    T("Can I use the motor base with a jug from another brand?",
      "I wouldn't recommend it: the VitaBlend coupling only fits VitaBlend jugs, and another "
      "brand's jug could damage the motor."),
    T("OK. Is there a discount if I buy a new VitaBlend later?",
      "I've added a 10% loyalty voucher, code VITA10-AB, valid until the end of June."),
    T("Thanks for the quick help!",
      "You're welcome, Anna. Enjoy the rest of your day!"),
    T("Oh, one more thing: my address changed to Lindenweg 12, Hamburg.",
      "Updated: your delivery address is now Lindenweg 12, 20095 Hamburg."),
    T("Perfect, that's all.",
      "Have a lovely week!"),
])

SUPPORT_2 = ThreadScript("support-2", "Loyalty points and a second order", [
    T("Hello again, how many loyalty points do I have?",
      "You currently have 1,180 loyalty points, worth €11.80 at checkout."),
    T("Do points expire?",
      "Points expire 24 months after they were earned; your oldest 200 points expire in "
      "September."),
    T("I want to order the SteamPro kettle, order A-1187.",
      "Order A-1187 for the SteamPro kettle (€89) is placed; delivery is planned for Friday."),
    T("Can I pay part of it with points?",
      "Yes, I applied 1,000 points, so you pay €79 for order A-1187."),
    Legacy("assistant", "Starting the refund for your blender in our old ticket system.",
           tool_call=("legacy-rf-1", "refund", {"order_id": "A-1042", "amount_eur": 240})),
    T("The kettle box looks dented, but the kettle works.",
      "Thanks for letting us know. If the kettle works fine, there's nothing to do; if it "
      "starts leaking, contact us within 30 days."),
    T("How do I descale it?",
      "Use one part vinegar to two parts water, boil, let it stand for an hour and rinse "
      "three times."),
    T("Is the SteamPro dishwasher safe?",
      "The lid filter is dishwasher safe; the kettle body and base are not."),
    T("Could I get the invoice for A-1187 as a PDF?",
      "The PDF invoice for A-1187 is on its way to anna.berg@example.com."),
    T("My partner wants an account too, can we share points?",
      "Points can't be shared between accounts, but you can both order on one account."),
    T("Alright. Can I change the delivery to Saturday?",
      "Delivery for A-1187 moved to Saturday between 9:00 and 13:00."),
    T("Thanks, that's all for today.",
      "Happy to help, Anna!"),
    T("Actually, does the kettle come with a warranty?",
      "Yes, the SteamPro has a 2-year warranty from the delivery date."),
    T("Great, bye!", "Bye, and enjoy your tea!"),
])

SUPPORT_3 = ThreadScript("support-3", "Follow-up on the refund", [
    T("Hi, I have a question about my account.",
      "Of course, what would you like to know?"),
    T("I never got an email about my voucher, is it still valid?",
      "Your voucher VITA10-AB is valid until the end of June."),
    T("And when does my kettle warranty end?",
      "The SteamPro warranty runs for 2 years from delivery."),
    T("Can I change the email address on my account?",
      "Yes: I've sent a verification link to the new address; it switches once you click it."),
    T("Do you ship to Denmark?", "Yes, shipping to Denmark takes 3–4 days and costs €7.90."),
    T("Is the VitaBlend 900 quieter than the 700?",
      "Yes, the 900 runs at about 78 dB compared with 85 dB for the 700."),
    T("Do you have a student discount?", "Not at the moment, sorry."),
    T("Can I pick up orders in a store?",
      "Yes, click-and-collect is free at our Hamburg and Bremen stores."),
    T("What are the Hamburg store's opening hours?",
      "Monday to Saturday, 10:00 to 20:00."),
    T("Thanks. Now something else.", "Sure, go ahead."),
    T("What did we decide about the refund for my blender?", run_id="support-3-forgot",
      note="The refund decided in support-1 scores just under the recall threshold, and "
           "the recalled legacy refund call has no stored result, so it is dropped: the "
           "model is left with nothing about the refund."),
    T("What did we decide about the refund for my blender?", run_id="support-3-fixed",
      memory="lower-threshold",
      note="The same question under a lower recall threshold: the refund decision is "
           "recalled and the answer is right."),
    T("Which card will the refund go to?", run_id="support-3-card", memory="lower-threshold"),
    T("Where do I send the blender back?", run_id="support-3-return",
      memory="lower-threshold"),
])

SUPPORT = Scenario(
    key="support",
    resource_id="cust-anna",
    title="The assistant forgot the refund",
    summary=("Anna was promised a €240 refund in one conversation. Weeks later, in a new "
             "conversation, she asks about it and the assistant has no idea."),
    agent="support",
    instructions=("You are VitaStore's support assistant. Answer from the conversation and "
                  "from what memory provides; never invent order details."),
    threads=[SUPPORT_1, SUPPORT_2, SUPPORT_3],
    # calibrated on all-MiniLM-L6-v2: the refund decision scores 0.43 for the question,
    # just under the 0.45 bar; the legacy refund call scores 0.78 and is dropped
    memory={"recent_n": 6, "recall": {"top_k": 3, "threshold": 0.45, "scope": "resource",
                                      "message_range": 0}},
    profiles={"lower-threshold": {"recent_n": 6, "recall": {
        "top_k": 8, "threshold": 0.4, "scope": "resource", "message_range": 0}}},
    tools=["lookup_order", "refund"],
)
