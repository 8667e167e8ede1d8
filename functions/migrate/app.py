"""Lambda entry point for the `Custom::TableMigration` resource (template.yaml): migrates the
table's items to the layout the code writes, when a deployment brings new code."""

from bench_core.lambdas.table_migration import handle
from bench_core.runtime.lambda_instrumentation import instrument

handler = instrument(handle)
