"""Stage 3, the sweep's orchestration: plan and validate every cell once, lock the directory, reuse complete cells,
hand the rest to the Hydra launcher (each cell then runs in a process of its own: neuronexp.cellprocess; Slurm:
neuronexp.slurm), watch them finish, and aggregate the job directories into `results/`."""
