"""What the tables mean: variants and baselines (variants), op-level views (ops), A/B statistics (stats).
Plain functions over the results tables; used by the sweep, the report and compare."""
