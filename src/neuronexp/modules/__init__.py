"""Built-in modules: the naive and fused variants of each study (RMSNorm, LayerNorm, softmax, SwiGLU MLP,
rotary embedding, attention, a Llama-style decoder block), and an NKI kernel's module with its PyTorch reference.
Input factories for YAML are in modules.factories."""

from neuronexp.modules import factories as inputs  # noqa: F401  the factories' former name, in earlier studies
from neuronexp.modules.attention import FusedAttention, NaiveAttention
from neuronexp.modules.decoder import FusedDecoderBlock, NaiveDecoderBlock
from neuronexp.modules.layernorm import FusedLayerNorm, NaiveLayerNorm
from neuronexp.modules.mlp import FusedSwiGLU, NaiveSwiGLU
from neuronexp.modules.nki_layers import NkiKernel, TorchAdd
from neuronexp.modules.rmsnorm import FusedRMSNorm, NaiveRMSNorm
from neuronexp.modules.rotary import FusedRotary, NaiveRotary
from neuronexp.modules.softmax import FusedSoftmax, NaiveSoftmax

# Each study's pair, named <Variant><Layer> after its module options (`<layer>_naive`, `<layer>_fused`).
__all__ = [
    "FusedAttention",
    "FusedDecoderBlock",
    "FusedLayerNorm",
    "FusedRMSNorm",
    "FusedRotary",
    "FusedSoftmax",
    "FusedSwiGLU",
    "NaiveAttention",
    "NaiveDecoderBlock",
    "NaiveLayerNorm",
    "NaiveRMSNorm",
    "NaiveRotary",
    "NaiveSoftmax",
    "NaiveSwiGLU",
    "NkiKernel",
    "TorchAdd",
]
