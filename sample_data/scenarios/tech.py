"""A long technical thread: observational memory compacts the early history, and one
fact (the staging network range) does not survive the summary."""

from __future__ import annotations

from sample_data.scenarios import Scenario, ThreadScript, Turn

T = Turn

MIGRATION = ThreadScript("py311-migration", "Moving the billing service to Python 3.11", [
    T("We need to move the billing service from Python 3.9 to 3.11 before the end of Q2.",
      "Agreed. The main risks are the C extensions and the pinned dependencies; let's "
      "inventory them first."),
    T("The service uses psycopg2, lxml, cryptography and our own C extension for tax rounding.",
      "psycopg2, lxml and cryptography all ship 3.11 wheels. The tax rounding extension "
      "must be rebuilt against 3.11 headers."),
    T("The staging database only accepts connections from the 10.8.0.0/16 range, by the way.",
      "Noted."),
    T("Who owns the tax rounding extension?",
      "According to the CODEOWNERS file, the payments-core team owns it."),
    T("We decided to replace the C extension with the decimal module instead of rebuilding it.",
      "Good decision: decimal with ROUND_HALF_EVEN gives the same results and removes the "
      "build step entirely."),
    T("How do we prove the results are identical?",
      "Run both implementations over last year's 1.2 million invoices and compare every "
      "rounded amount."),
    T("The comparison found 3 invoices that differ by one cent.",
      "Those three use the legacy HALF_UP rule from 2019 contracts; keep a HALF_UP path for "
      "contracts signed before 2020."),
    T("OK, we agreed to keep HALF_UP for pre-2020 contracts.",
      "I'll note that the rounding rule depends on the contract date."),
    T("What about the Dockerfile?",
      "Switch the base image to python:3.11-slim and drop the gcc layer we no longer need."),
    T("The image got 180 MB smaller without gcc.", "Nice win for deploy times."),
    T("Tests pass locally on 3.11 now.", "Great. Next is CI."),
    T("CI fails on the mypy step with 40 new errors.",
      "Mostly from the newer typeshed; pin mypy to 1.10 first and fix the errors in a "
      "separate change."),
    T("We pinned mypy to 1.10 and opened a ticket for the errors.", "Good, that unblocks CI."),
    T("The integration tests time out on the staging database.",
      "Check that the CI runners can reach the staging network."),
    T("Which library versions did we settle on?",
      "psycopg2 2.9.9, lxml 5.2, cryptography 42."),
    T("We also need to upgrade Celery.",
      "Celery 5.3 supports 3.11; 5.2 has a known issue with 3.11's asyncio changes."),
    T("Upgraded Celery to 5.3, workers start fine.", "Good."),
    T("What's the rollout plan?",
      "Canary 5% of billing workers for two days, then 50%, then 100%, watching the error "
      "rate and p95 latency."),
    T("We agreed the canary starts on 3 June.", "Canary start on 3 June, noted."),
    T("Who approves the go-live?",
      "The billing on-call lead approves each step of the rollout."),
    T("The on-call lead that week is Priya.", "Priya approves the rollout steps then."),
    T("We saw p95 latency go from 210 ms to 190 ms in the load test.",
      "3.11's faster interpreter shows: about 10% better."),
    T("Memory usage went up by 5%.", "That's expected with 3.11 and within our limits."),
    T("Do we need to change the gunicorn settings?",
      "Keep 4 workers per pod; the memory increase still fits the 1 GiB limit."),
    T("Let's document all this in the runbook.",
      "I'll draft the runbook section: versions, rounding rule, rollout steps, approver."),
    T("The runbook draft is in the wiki.", "Great."),
    T("The CI runners got the staging network access fixed.",
      "Then the integration tests should pass now."),
    T("Integration tests are green.", "Excellent, we're ready for the canary."),
    T("Canary at 5% since this morning, no errors.", "Keep watching for two days."),
    T("Two days at 5%, error rate unchanged.", "Then move to 50% with Priya's approval."),
    T("Priya approved 50%.", "Moving to 50%."),
    T("50% looks good after a day.", "Proceed to 100% when Priya approves."),
    T("We're at 100% on 3.11.", "Congratulations, the migration is done."),
    T("What should we clean up now?",
      "Remove the 3.9 CI job, the old Dockerfile stage and the tax rounding extension code."),
    T("Cleanup is merged.", "Great work."),
    T("Let's write the retro notes.",
      "Key learnings: replacing the C extension simplified the build, and the rounding "
      "comparison caught the pre-2020 contracts."),
    T("Which IP range does the staging database accept connections from?",
      run_id="tech-staging-range",
      note="The fact was stated early, compacted into an observation, and the extractive "
           "summary dropped it: the model cannot answer."),
    T("Which rounding rule applies to contracts signed before 2020?",
      run_id="tech-rounding",
      note="This decision survived compaction: the observation still carries it."),
    T("When did the canary start?", run_id="tech-canary"),
    T("Who approved the rollout steps?", run_id="tech-approver"),
])

CI_FLAKES = ThreadScript("ci-flakes", "Flaky tests after the upgrade", [
    T("Two tests in the invoice module are flaky since the upgrade.",
      "Do they depend on dict ordering or on timestamps?"),
    T("They compare timestamps with the current time.",
      "Freeze the clock in those tests instead of reading the wall clock."),
    T("Freezing the clock fixed them.", "Great."),
    T("Should we run the suite twice in CI to catch flakes?",
      "Run it with random test order nightly instead; it finds order dependencies faster."),
    T("Nightly random order is configured.", "Perfect."),
    T("Thanks!", "Anytime."),
])

TECH = Scenario(
    key="tech",
    resource_id="dev-cara",
    title="The fact lost in a summary",
    summary=("Cara's long migration thread outgrows the window; early history is condensed "
             "into observations, and one detail does not make it into the summary."),
    agent="engineer",
    instructions="You are a senior engineer helping with a Python migration.",
    threads=[MIGRATION, CI_FLAKES],
    memory={"recent_n": 8, "observational": {"token_threshold": 700}},
)
