"""Lambda entry point for the cluster state machine's Task states (statemachines/cluster.asl.json):
one step of `bench_core.workflows.cluster` per invocation. The only function shipping numpy,
SciPy and scikit-learn (requirements.txt), imported when a cluster is computed, not before."""

from bench_core.telemetry import instrument
from bench_core.workflows.cluster import STEPS
from bench_core.workflows.lambdas import step_handler

handler = instrument(step_handler(STEPS))
