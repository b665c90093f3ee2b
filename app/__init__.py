"""The Streamlit workbench over memory_core: an entry script, its pages and the
one services factory they share."""
