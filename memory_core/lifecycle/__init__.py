"""Changing what is stored after the fact: erasure (a thread, a resource, a person;
every copy redacted, runs re-sealed) and truncation of a thread's tail."""
