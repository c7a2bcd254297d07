"""The Neuron backend and everything only it uses: the profiling API detection (api), the capture index
(capture), warnings for the row (checks) and `neuron-explorer` post-processing (explorer).

`torch_neuronx` is imported only here, when a Neuron cell starts.
"""

from neuronexp.backends.neuron.backend import INSTALL_HINT, NeuronBackend

__all__ = ["INSTALL_HINT", "NeuronBackend"]
