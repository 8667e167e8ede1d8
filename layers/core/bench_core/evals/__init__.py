"""Evaluations, in one home: the judge (model and heuristic), its budget and prompts, and the
EvalWorkflow steps; the rules both stores apply to a result are in `domain/eval_records.py`."""
