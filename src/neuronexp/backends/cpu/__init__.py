"""The host CPU: always there, and where a cell whose backend could not start is placed (the table's last row)."""

from neuronexp.backends.cpu.cpu_backend import CpuBackend
from neuronexp.backends.info import BackendInfo
from neuronexp.config import format_units
from neuronexp.host.threads import host_cpus

# No clean-up after a cell: on the host, reference counting frees what a cell held, and a full collection would
# cost ~0.2 s a cell.
INFO = BackendInfo(
    name="cpu",
    unit="CPU cores",
    build=lambda cfg: CpuBackend(),
    present=lambda: True,
    count_units=lambda: [str(c) for c in host_cpus()],
    on_host=True,
    placement=lambda device: f"cpu:{format_units(host_cpus())}",
)
