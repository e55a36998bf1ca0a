"""How many interleaved pairs and runs per block each bench section takes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Plan"]


@dataclass(frozen=True)
class Plan:
    """How many interleaved pairs and runs per block each section takes."""

    #: Seconds each model's pair of sides runs untimed before its first round: V8
    #: recompiles the hottest wasm and JS in its optimising tier for about the first
    #: second of a hot loop (tests that check a section's shape, not its figures, set
    #: less).
    warm_up_s: float = 1.5
    bridge_models: tuple[str, ...] = ("tiny", "resnet50")
    bridge_pairs: int = 8
    tiny_k: int = 200
    resnet_k: int = 2
    #: The bridge's share of a resnet50 run is far below how widely single rounds
    #: spread on a shared machine (docs: development notes): more rounds steady the median.
    resnet_pairs: int = 16
    transfer_sizes: tuple[int, ...] = (1, 16, 64)
    transfer_pairs: int = 8
    chain_sizes: tuple[int, ...] = (1, 16)
    chain_pairs: int = 5
    chain_k: Mapping[int, int] = field(default_factory=lambda: {1: 4, 16: 2})
    threads_reps: int = 6
    threads_k: int = 2
    cold_reps: int = 4
    #: The large-model section: its model's weights, rounds, and the extra loads.
    large_mib: int = 1024
    large_reps: int = 3
    large_webgpu: bool = True
    #: The model over 2 GB of the detail rows (0: not loaded).
    large_over2g_mib: int = 2560
    #: The site section: rounds, seconds of back-to-back inference, timed tiny calls.
    #: Single rounds of its visit ratios spread widely on a shared machine (docs: development notes,
    #: Benchmarks): five steady the median.
    site_reps: int = 5
    site_seconds: float = 10.0
    site_calls: int = 200
    #: The harness section: pytest runs, trivial tests on the shared page in each, and
    #: tests with a fresh page each.
    harness_reps: int = 3
    harness_tests: int = 40
    harness_fresh: int = 5
    #: The engines section: rounds, runs a side of a round at most, the node cases each
    #: engine runs (a regular expression; None: all 1,884) and the seconds without
    #: progress after which a page counts as hung (above wonnx's own time limit,
    #: ``bridge_js/wonnx_session.js``, so that a wonnx call past it fails alone).
    engines_pairs: int = 8
    engines_k: int = 50
    engines_node_filter: str | None = None
    engines_case_timeout: float = 45.0
    #: The network section: rounds, the profiles of ``network.PROFILES`` each round
    #: visits, and the model the site and the floor load (``net_layers`` MatMul+Relu of
    #: ``[net_batch, net_width]``, as the site section's).
    net_reps: int = 4
    net_profiles: tuple[str, ...] = ("loopback", "broadband", "mobile")
    net_batch: int = 384
    net_width: int = 512
    net_layers: int = 8

    @classmethod
    def quick(cls) -> Plan:
        """Fewer rounds: a look within minutes, not figures to quote (``--quick``)."""
        return cls(bridge_pairs=5, tiny_k=100, resnet_k=2, resnet_pairs=6, transfer_pairs=4,
                   chain_pairs=3, chain_k={1: 2, 16: 1}, threads_reps=3, threads_k=2,
                   cold_reps=2, large_reps=2, large_webgpu=False, large_over2g_mib=0,
                   site_reps=2, site_seconds=5.0, harness_reps=1, harness_tests=20,
                   harness_fresh=3, engines_pairs=3, engines_k=20,
                   engines_node_filter=r"^test_(abs|relu|add|sigmoid|matmul_2d)$",
                   net_reps=2)

    def transfer_k(self, mb: int) -> int:
        """Transfers per block at ``mb`` MiB: more of the small ones, at least 2."""
        return max(2, 32 // mb)
