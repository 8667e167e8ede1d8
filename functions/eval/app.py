"""Lambda entry point for the eval state machine's Task states (statemachines/eval.asl.json):
one step of `bench_core.workflows.eval` per invocation. Imports no numpy or scikit-learn."""

from bench_core.telemetry import instrument
from bench_core.workflows.eval import STEPS
from bench_core.workflows.lambdas import step_handler

handler = instrument(step_handler(STEPS))
