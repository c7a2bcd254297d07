"""A STAND-IN for torch-neuronx, for tests only: never shipped, never a measurement.

`torch_neuronx/` here mimics the documented TorchNeuron profiling API closely enough for neuronexp's real
Neuron backend to run on CPU tensors; `fixture.py` puts it on sys.path; `fake_neuron_explorer.py` plays
the `neuron-explorer` CLI. Nothing here has been compared against a Trainium instance.
"""
