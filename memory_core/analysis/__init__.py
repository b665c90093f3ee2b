"""Analysis engine: counterfactual replay, attribution, why-forgotten and run diffs.

Everything here reads the journal and the store; nothing imports Streamlit."""
