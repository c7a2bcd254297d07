"""The run configuration schema: plain dataclasses, one per config node. Registered as `base_config` (config.compose),
so a wrong type or enum value fails at compose time; config.validate adds the checks a type cannot express."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from omegaconf import MISSING


class DType(str, Enum):
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"
    float64 = "float64"
    int64 = "int64"
    int32 = "int32"
    bool = "bool"


class BackendName(str, Enum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"
    neuron = "neuron"


class ProbeMode(str, Enum):
    """How a CPU cell gets its host's roofs (bandwidth and FLOP/s): host.probe."""

    cached = "cached"  # measured once per host and thread count, then reused from the cache file
    refresh = "refresh"  # measured again by this run (once per sweep and thread count); the cache is updated
    off = "off"  # not measured: a CPU cell's % of peak stays empty


class AllocatorMode(str, Enum):
    """How each cell process's host malloc is set up (neuronexp.host.allocator, docs/methodology.md)."""

    stable = "stable"  # glibc's mmap and trim thresholds fixed high: freed blocks stay in the heap
    system = "system"  # as the process started
    preloaded = "preloaded"  # an LD_PRELOADed jemalloc, tcmalloc or mimalloc


class NeuronMode(str, Enum):
    """Members of `torch_neuronx.profiling.ProfileMode` (documented in the Neuron Explorer guide)."""

    DEVICE = "DEVICE"
    RUNTIME = "RUNTIME"
    CPU_UTIL = "CPU_UTIL"
    HOST_MEMORY = "HOST_MEMORY"


@dataclass
class DimsConfig:
    """Dimensions of the model a study is sized after; the shipped layers and their inputs follow them (`${dims.seq}`),
    so a preset from conf/shapes/ (`shapes=llama3_70b`) resizes any of them. The defaults are Llama-3 8B's
    (meta-llama/Meta-Llama-3-8B config.json) at 1,024 tokens: default input [1,1024,4096] is [batch, seq, hidden]."""

    batch: int = 1
    seq: int = 1024  # tokens
    hidden: int = 4096
    heads: int = 32  # query heads
    kv_heads: int = 8  # key/value heads (grouped-query attention when fewer than heads)
    head_dim: int = 128
    intermediate: int = 14336  # the MLP's inner width
    rope_theta: float = 500000.0


@dataclass
class InputConfig:
    """The inputs the module is called with: `module(first, *args, **kwargs)`.

    The first input is `shape`/`dtype` (what sweeps and `${nx.last:${input.shape}}` follow). `args` and
    `kwargs` hold value specs: a literal, a list (passed as a tuple), a tensor `{shape, dtype, fill, ...}`, a
    factory `{_target_: ..., params}` called with the built module, or `{_value_: X}` for a literal dict or
    list. config.input_specs checks them; cell.inputs builds them.
    """

    # conf/input_dims.yaml makes the composed default follow dims: [${dims.batch}, ${dims.seq}, ${dims.hidden}].
    shape: list[int] = field(default_factory=lambda: [1, 1024, 4096])
    dtype: DType = DType.bfloat16
    # The first input's fill and bounds (token ids: `dtype: int64, high: <vocab size>`), the module's dtype (null:
    # input.dtype if floating, else the module's own): docs/layers.md.
    fill: str | None = None
    low: int = 0
    high: int | None = None
    model_dtype: DType | None = None
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    extra: Any = field(default=None, metadata={"retired": True})  # renamed `args`; kept only to say so


@dataclass
class ScheduleConfig:
    """torch.profiler.schedule: wait + warmup + active steps, repeated `repeat` times (one cycle each). null:
    1/1/1 x 5 cycles where a step is cheap (CPU, CUDA), per-step figures the medians; 2/1/1/1 on Neuron."""

    wait: int | None = None
    warmup: int | None = None
    active: int | None = None
    repeat: int | None = None


@dataclass
class NeuronProfilerConfig:
    """Options of `torch_neuronx.profiling.NeuronConfig`; ignored on other backends."""

    modes: list[NeuronMode] = field(default_factory=lambda: [NeuronMode.DEVICE, NeuronMode.RUNTIME])
    capture_enabled_for_nc: str | None = None  # NeuronCores to capture: "0", "0,1", "0,1,2-5"; null: all it holds
    max_events_per_nc: int | None = None
    # Not a documented NeuronConfig parameter: null passes True where its signature takes it, false passes False.
    correlate_device_time: bool | None = None
    # NeuronConfig(neff_cache_dir=...): the NEFFs land next to the NTFFs, so Explorer can open the capture.
    copy_neffs: bool = True
    # null: $TORCH_NEURONX_NEFF_CACHE_DIR, else neuronexp's cache per user and SDK version (docs/neuron.md).
    neff_cache_dir: str | None = None
    # Post-process the capture with `neuron-explorer view` (when on PATH) into neuron_* Summary columns.
    explorer: bool = True
    explorer_timeout_s: float = 900.0


@dataclass
class ProfilerConfig:
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    record_shapes: bool = False
    with_stack: bool = False
    profile_memory: bool = False
    with_flops: bool = False
    export_trace: bool = True
    modules: bool = False  # time per nn.Module path (moduletime); off by default: hooks cost per module call
    neuron: NeuronProfilerConfig = field(default_factory=NeuronProfilerConfig)


@dataclass
class TimingConfig:
    """The wall-clock pass, separate from the profiled one."""

    warmup: int = 10
    iters: int = 100  # samples in all, split evenly over the rounds, and more until min_seconds have passed
    # At most max_seconds (min_iters still taken): large shapes must not dominate; at least min_seconds (drift).
    max_seconds: float = 5.0
    min_iters: int = 5
    min_seconds: float = 0.5
    rounds: int = 20  # each a fresh placement of the inputs (relocate): latency = median of round medians
    round_gap_s: float = 0.0  # a pause before each round after the first
    relocate: bool = True  # host cells: each round, the inputs move to a fresh place in memory (methodology.md)
    # A comparison group takes rounds until every paired ratio between its cells is known within ±precision (its 95%
    # interval within a factor 1 + precision of the estimate), at least min_rounds, at most max_seconds a cell.
    # null: the fixed count above (rounds, iters, min_seconds), the same work every time. A cell alone: the fixed count.
    # 0.10: the main study's answer in the least time with its reruns within x1.10 (docs/history.md, 7 December 15:34).
    precision: float | None = 0.10
    min_rounds: int = 10


@dataclass
class RooflineConfig:
    """How far a cell is from the hardware's limits (docs/profile.md, "Roofline"): the work it needs, what it
    achieved, the peaks it is measured against. Not part of run_id: not what the cell measured."""

    # CPU cells: the host's roofs from a short STREAM-like probe (copy, triad) and a GEMM, on the cell's threads.
    probe: ProbeMode = ProbeMode.cached
    # Where the probe's results are kept; null: $NEURONEXP_CACHE_DIR, $XDG_CACHE_HOME/neuronexp, ~/.cache/neuronexp.
    cache_dir: str | None = None
    # Roofs you know better (an unlisted GPU, a MIG slice): they replace the table or the probe.
    peak_bw_gbs: float | None = None  # GB/s, 1 GB = 1e9 B
    peak_tflops: float | None = None  # dense TFLOP/s in the cell's dtype


@dataclass
class CorrectnessConfig:
    """Each cell's output checked against its baseline cell's output on the same inputs (docs/profile.md,
    "Output check")."""

    # false for layers whose output is random (dropout in training mode, sampling): nothing is saved or compared.
    enabled: bool = True
    # |variant - baseline| <= atol + rtol * |baseline| for every compared element. null: rtol by dtype, atol =
    # rtol * the baseline output's root mean square. Not part of the run_id (applied when results are gathered).
    rtol: float | None = None
    atol: float | None = None
    # A 16-bit cell also evaluates its module in float32 on the CPU (cell.output): beyond the tolerance a
    # variant still passes if no less accurate than the baseline. false saves that call. Not part of the run_id
    # either. (The key keeps its published name; in the code this is the "float32 evaluation", as "reference" is
    # the host's reference workloads.)
    float32_reference: bool = True


@dataclass
class CompileConfig:
    enabled: bool = False
    backend: str | None = None  # null: "neuron" on Trainium, "inductor" elsewhere
    mode: str | None = None
    fullgraph: bool = False
    dynamic: bool | None = False


@dataclass
class NeuronDeviceConfig:
    """NeuronCore selection (NEURON_RT_*) and compile-time debug info, exported before the runtime starts."""

    # One contiguous ascending run: "3", "3-6", "3,4,5,6" or "3-5,6" (Neuron runtime developer guide).
    visible_cores: str | None = None
    num_cores: int | None = None  # null: 1 unless visible_cores or NEURON_RT_* in the environment choose
    # Layer names in profiles: XLA_IR_DEBUG, XLA_HLO_DEBUG and NEURON_FRAMEWORK_DEBUG=1 before the first compile,
    # with a fresh NEFF cache (cached NEFFs lack the names); nki_debug_info: NKI_DEBUG_INFO (slower compiles).
    debug_info: bool = False
    nki_debug_info: bool = False


@dataclass
class LauncherConfig:
    """Device slots for sweeps run by a parallel Hydra launcher (docs/slurm.md). Not part of a cell's run_id:
    where a cell ran is recorded in its row (`placement`), not in what it measured."""

    # Parallel device slots per host; each running cell owns one. hydra/launcher=parallel runs this many workers.
    devices: int = 1
    # Units per slot (NeuronCores, GPUs or CPU cores); null: 1 NeuronCore or GPU, or the CPU cores split evenly.
    per_device: int | None = None
    # The units to split, e.g. "0-31"; null: neuron.visible_cores or 0..devices*per_device-1 (Neuron),
    # CUDA_VISIBLE_DEVICES or every GPU (CUDA), the process's CPU affinity (CPU).
    pool: str | None = None
    # null: every cell of a sweep runs in a process of its own (forked from a template, cellprocess.forkserver), on a
    # device slot under a parallel launcher; a single run runs in the neuronexp process. true: on a device slot
    # under any launcher, single runs too. false is no longer accepted (docs/slurm.md, "Migration").
    isolate: bool | None = None
    # A cell's process still running after this many seconds (compile included; a group's: this per cell) is killed:
    # the error row "timed out after N s". null: no limit. Applies to cells in a process of their own.
    cell_timeout_s: float | None = 1800.0
    # Node-local directory for the slot lock files; null: <tmp>/neuronexp-locks (shared by every sweep of the host).
    lock_dir: str | None = None


@dataclass
class NoiseConfig:
    """The `noise.*` keys: the thresholds beyond which a cell's latency is noisy, not a finding (analysis.noise.judge).
    Not part of a cell's run_id: they judge what was measured, and a sweep applies its own when it gathers results."""

    # (max - min) / median of the round medians. On the quiet 2-core VM of docs/methodology.md, a 1 ms cell's
    # rounds spread 3-12%; another process on its cores makes it 30% and more.
    round_spread: float = 0.25
    # p90 / p10 of every sample; 1.1-1.6 on a quiet host, 25-49x when two threads share cores with other work.
    p90_p10: float = 2.0
    # Cores' worth of CPU used by other processes on the cell's own CPUs, beyond those its threads leave spare.
    other_cpu: float = 0.25
    # Share of CPU time stolen by the hypervisor.
    steal: float = 0.05


class RerunMode(str, Enum):
    failed = "failed"  # rerun the failed, interrupted and missing cells; reuse a complete one of the same run_id
    all = "all"  # rerun every cell (e.g. after a change the code fingerprint, config.fingerprint, cannot see)


@dataclass
class SweepConfig:
    """The `sweep` node: how a run or sweep is carried out and treats the cells already in its directory. Not part of
    a cell's run_id (config.compose): whether to reuse a cell, or to run at all, says nothing about what it measures."""

    rerun: RerunMode = RerunMode.failed
    # true: plan and check every cell, print each one's label, run_id and whether it is cached, and an estimate of
    # the time; run nothing, write nothing (neuronexp.engine.dryrun). A single run prints its one cell.
    dry_run: bool = False


@dataclass
class RunConfig:
    module: Any = MISSING
    input: InputConfig = field(default_factory=InputConfig)
    backend: BackendName = BackendName.auto
    compile: CompileConfig = field(default_factory=CompileConfig)
    profiler: ProfilerConfig = field(default_factory=ProfilerConfig)
    timing: TimingConfig = field(default_factory=TimingConfig)
    neuron: NeuronDeviceConfig = field(default_factory=NeuronDeviceConfig)
    launcher: LauncherConfig = field(default_factory=LauncherConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    dims: DimsConfig = field(default_factory=DimsConfig)
    roofline: RooflineConfig = field(default_factory=RooflineConfig)
    correctness: CorrectnessConfig = field(default_factory=CorrectnessConfig)
    noise: NoiseConfig = field(default_factory=NoiseConfig)  # when a cell is noisy
    # The reference cell of each group of otherwise-identical cells, as key: value pairs that pick it ({module:
    # rmsnorm_naive}, {compile.enabled: false}; a bare name: {module: name}); null: no speedups.
    baseline: Any = None
    allocator: AllocatorMode = AllocatorMode.stable  # host malloc in every process that runs a cell
    # torch intra-op threads; null keeps the process's (torch's default, or the slot's cores). Sweepable: threads=1,2.
    threads: int | None = None
