"""Lambda entry point for the `Custom::SessionSecret` resource (template.yaml): creates the SSM
session secret when the stack is deployed, if it does not exist yet."""

from bench_core.lambdas.secret_resource import handle
from bench_core.runtime.lambda_instrumentation import instrument

handler = instrument(handle)
