"""A user's own model, written into a test's directory (outside the repository) with its own --config-dir: its
hotspot is known by construction — `hot` does ~64x the matmul work of `cheap`, and `head` is a leaf."""

MODEL = '''
import torch
from torch import nn


class Cheap(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.proj(x))


class Hot(nn.Module):
    """Eight wide projections: the hotspot."""

    def __init__(self, width, inner):
        super().__init__()
        self.up = nn.ModuleList(nn.Linear(width, inner) for _ in range(4))
        self.down = nn.ModuleList(nn.Linear(inner, width) for _ in range(4))

    def forward(self, x):
        for up, down in zip(self.up, self.down):
            x = x + down(torch.nn.functional.gelu(up(x)))
        return x


class Net(nn.Module):
    def __init__(self, width=64, inner=512):
        super().__init__()
        self.cheap = Cheap(width)
        self.hot = Hot(width, inner)
        self.head = nn.Linear(width, 8)

    def forward(self, x, scale: float = 1.0):
        return self.head(self.hot(self.cheap(x)) * scale)
'''

CONFIG = """# @package _global_
module:
  _target_: mynet.Net
  width: 64
  inner: 512
input:
  shape: [4, 64, 64]
  dtype: float32
  kwargs:
    scale: 0.5
"""


def write_user_model(root):
    """mynet.py and conf/module/mynet.yaml under `root`; returns the config directory."""
    (root / "mynet.py").write_text(MODEL)
    conf = root / "conf" / "module"
    conf.mkdir(parents=True)
    (conf / "mynet.yaml").write_text(CONFIG)
    return root / "conf"
