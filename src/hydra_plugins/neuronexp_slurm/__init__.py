"""neuronexp's Slurm launcher plugin (found by Hydra's plugin discovery in the `hydra_plugins` namespace)."""
