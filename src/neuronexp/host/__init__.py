"""The host a cell runs on: its malloc (allocator), its CPUs and the default thread count (threads), what else it was
doing while the cell ran (activity), its measured roofs, STREAM bandwidth and GEMM rate (probe), and how fast it
was itself, from two fixed workloads timed beside every cell (reference).

allocator and activity use the standard library only, so a fresh cell process can set its allocator up before
`import torch` makes the first large allocation; probe (torch) writes its cache through results' atomic writes.
"""
