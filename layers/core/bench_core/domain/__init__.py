"""Pure rules and values: models, errors, folding, stats, privacy, keys, pricing, ranking, field
limits, live channels. Imports nothing but the standard library and pydantic."""
