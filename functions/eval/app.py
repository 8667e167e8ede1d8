"""Lambda entry point for the eval queue's deliveries: the runs each message carries judged
and recorded, by agent; the messages to try again put back with their wait. Imports no numpy
or scikit-learn."""

from bench_core.lambdas.eval_queue import EvalDeliveries
from bench_core.runtime.lambda_instrumentation import instrument

handler = instrument(EvalDeliveries())
