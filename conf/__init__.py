# Installed as the package `neuronexp.conf` (see pyproject.toml) so Hydra finds it as pkg://neuronexp.conf.
