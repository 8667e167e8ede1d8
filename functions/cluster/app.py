"""Lambda entry point for the cluster state machine's Task states (statemachines/cluster.asl.json):
one step per invocation (`bench_core.lambdas.cluster_steps`: the cluster workflow's, and the
hourly looks at the active agents' regression monitors). The only function shipping numpy,
SciPy and scikit-learn (requirements.txt), imported when a cluster is computed, not before."""

from bench_core.lambdas.cluster_steps import STEPS
from bench_core.lambdas.workflow_steps import step_handler
from bench_core.runtime.lambda_instrumentation import instrument

handler = instrument(step_handler(STEPS))
