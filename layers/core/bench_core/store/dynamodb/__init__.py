"""The DynamoDB adapter of the Store port: one table, for AWS."""
