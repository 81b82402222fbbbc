"""The agent: the model client (the only importer of anthropic), the tool loop, history,
prompts and titles."""
