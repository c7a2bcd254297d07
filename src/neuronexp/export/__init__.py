"""Results handed to the tools users already look at: MLflow runs (tracking) and the PyTorch OSS benchmark JSON
(benchmark), both from one mapping of a cell's row (cells). Read through neuronexp's one reader; imported only by
`neuronexp-export`, never on neuronexp's default path (mlflow is an optional extra, imported inside tracking)."""
