"""Evaluations, in one home: the judge (model and heuristic), its budget and prompts, the eval
records both stores apply, and the EvalWorkflow steps."""
