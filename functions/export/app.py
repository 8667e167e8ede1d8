"""Lambda entry point for exports that outlast an API answer: the API function hands a job here
(an asynchronous invoke), and this writes the whole export to the export bucket."""

from bench_core.lambdas.export import ExportJobs
from bench_core.runtime.lambda_instrumentation import instrument

handler = instrument(ExportJobs())
