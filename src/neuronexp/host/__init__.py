"""The host a cell runs on: its malloc (allocator) and what else it was doing while the cell ran (activity).

Standard library only and imports nothing from neuronexp, so a fresh cell process can set its allocator up
before `import torch` makes the first large allocation.
"""
