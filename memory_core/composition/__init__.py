"""Composing a prompt before the new input is stored: ``AgentMemory`` and its stages
(input trim, working memory, observations, recent window, recall, tool pairs,
processors), each lane recorded in the provenance record."""
