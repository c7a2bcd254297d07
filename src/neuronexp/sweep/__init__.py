"""Stage 3, the sweep: plan and validate every cell, launch them (in process, on device slots of their own,
on Slurm), watch them finish, and aggregate the job directories into `results/`."""
