"""Lambda entry point for the benchmark state machine's Task states
(statemachines/benchmark.asl.json): one step of `bench_core.benchmarks.workflow` per invocation
(a chunk of a run's answers graded, or the run marked failed)."""

from bench_core.benchmarks.workflow import STEPS
from bench_core.lambdas.workflow_steps import step_handler
from bench_core.runtime.lambda_instrumentation import instrument

handler = instrument(step_handler(STEPS))
