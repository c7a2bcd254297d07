"""The host a cell runs on: its malloc (allocator), what else it was doing while the cell ran (activity), and its
measured roofs, STREAM bandwidth and GEMM rate (probe).

allocator and activity use the standard library only, so a fresh cell process can set its allocator up before
`import torch` makes the first large allocation; probe (torch) writes its cache through results' atomic writes.
"""
