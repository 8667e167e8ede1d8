"""Lambda entry point for the eval state machine's Task states (statemachines/eval.asl.json):
one step of `bench_core.evals.workflow` per invocation. Imports no numpy or scikit-learn."""

from bench_core.evals.workflow import STEPS
from bench_core.lambdas.workflow_steps import step_handler
from bench_core.runtime.lambda_instrumentation import instrument

handler = instrument(step_handler(STEPS))
