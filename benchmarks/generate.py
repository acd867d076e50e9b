"""Seeded generator of realistic, resolved scenarios for the planner benchmark.

Three named sizes (workloads × GPU types × zones × slices of the peak day):

========  =========  =========  =====  ======
size      workloads  GPU types  zones  slices
========  =========  =========  =====  ======
small     3          3          2      24
medium    6          5          4      24
large     12         8          6      24
========  =========  =========  =====  ======

What makes them realistic, and where each figure comes from:

- **Hardware and models**: the built-in catalog (inputs/catalog/gpus.yaml, models.yaml and the
  calibrated efficiency.yaml), loaded exactly as a scenario file would load it.
- **Prices**: the median per-GPU on-demand and spot price of each GPU type over every zone of the
  built-in AWS table (inputs/catalog/prices/aws_gpu_prices.csv, imported with the scenario price
  importer at the catalog's node size). AWS sets on-demand prices per region, so each region gets
  one factor drawn from ``ON_DEMAND_REGION_SPREAD``; spot prices differ per zone and get their own
  factor from ``SPOT_ZONE_SPREAD``, capped at ``SPOT_CAP_VS_ON_DEMAND`` of on-demand. Reserved is
  on-demand × (1 − ``RESERVED_DISCOUNT``), the assumption the demo scenario makes. GPU types the
  AWS table lacks are priced as ``ASSUMED_PRICE_VS`` says (an ASSUMPTION, stated there).
- **Workloads**: the demo's traffic profiles (token percentiles of the public Azure and Mooncake
  traces, illustrative SLOs), mixed interactive and batch; an hourly shape with a day/night swing
  (a cosine between a trough and the peak, peak hour per workload, ±3 % noise) and a peak rate
  drawn around each template's nominal rate. Survivability cycles none / n_plus_1 / zone_loss over
  the interactive pools; batch pools need none.
- **Stock**: per zone, GPU type and purchase kind, whole nodes drawn from a range per GPU tier:
  plenty of small inference cards, few H100/H200/B200 nodes, as clouds sell them.

- **Scale**: real fleets are hundreds to thousands of GPUs. ``scale`` multiplies every peak rate,
  daily volume and stock of a drawn scenario (after the draws), so ×25 is the same scenario with
  25 times the traffic and the stock to carry it.

Every draw comes from one ``random.Random(seed)`` in a fixed order, so a (size, seed, scale)
always gives the same scenario. ``python benchmarks/generate.py [DIR] [--seed N] [--scale K]``
writes the three sizes as scenario files (default ``outputs/bench/``) that ``fleetplan plan``
reads.
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass
from pathlib import Path

import yaml

from inputs import catalog_dir
from models.catalog import GpuType
from models.common import Precision, Survivability, WorkloadClass
from models.errors import InputError
from models.loader import check_references, load_catalog
from models.offers import Offer, OnDemandTerms, ReservedTerms, SpotTerms, Zone
from models.policy import Policy
from models.prices import zones_from_price_table
from models.scenario import PriceTable, Scenario, ScenarioFile
from models.workload import HOURS_PER_DAY, Arrival, BatchVolume, Slo, TokenPercentiles, Workload

AWS_PRICES = catalog_dir() / "prices" / "aws_gpu_prices.csv"

#: Reserved price = on-demand × (1 − this): the demo scenario's 12-month assumption [1].
RESERVED_DISCOUNT = 0.4
#: On-demand factor drawn per region around the AWS median [1].
ON_DEMAND_REGION_SPREAD = (0.95, 1.10)
#: Spot factor drawn per zone around the AWS median spot price [1].
SPOT_ZONE_SPREAD = (0.75, 1.35)
#: Spot never costs more than this share of the zone's on-demand price [1].
SPOT_CAP_VS_ON_DEMAND = 0.8
#: Expected spot interruptions per hour (the demo's figure) [1/h].
SPOT_INTERRUPTION_RATE_PER_HOUR = 0.05

#: ASSUMPTION for GPU types the AWS table does not sell: (reference GPU, price ratio) applied to
#: the reference's median on-demand and spot prices. B200: 1.4 × H200 (Blackwell list prices
#: run 30-50 % above Hopper's); MI300X: 0.8 × H100-SXM; H100-PCIe: 0.75 × H100-SXM.
ASSUMED_PRICE_VS: dict[str, tuple[str, float]] = {
    "B200": ("H200", 1.4),
    "MI300X": ("H100-SXM", 0.8),
    "H100-PCIe": ("H100-SXM", 0.75),
}

#: GPU types in the order sizes take them: the AWS inference staples first.
GPU_ORDER = ("H100-SXM", "L40S", "A10G", "L4", "H200", "A100-80GB", "A100-40GB", "B200",
             "MI300X", "H100-PCIe")

#: Zones in the order sizes take them: (zone id, region) of real AWS zones, alternating regions
#: so that every size of two or more zones spans two regions.
ZONE_ORDER = (("use1-az1", "us-east-1"), ("usw2-az1", "us-west-2"), ("use1-az2", "us-east-1"),
              ("usw2-az2", "us-west-2"), ("use2-az1", "us-east-2"), ("use2-az2", "us-east-2"),
              ("use1-az4", "us-east-1"), ("usw2-az3", "us-west-2"))

#: Stock per zone [nodes] drawn uniformly from these ranges, per GPU tier and purchase kind.
STOCK_NODES: dict[str, dict[str, tuple[int, int]]] = {
    "scarce": {"reserved": (2, 8), "on_demand": (1, 4), "spot": (0, 2)},
    "common": {"reserved": (4, 16), "on_demand": (4, 12), "spot": (2, 8)},
}
SCARCE_GPUS = frozenset({"H100-SXM", "H200", "B200", "MI300X", "A100-80GB"})


@dataclass(frozen=True)
class SizeSpec:
    """Dimensions of a generated scenario."""

    workloads: int
    gpu_types: int
    zones: int
    slices: int = HOURS_PER_DAY
    """Slices of the peak day; the policy's default hourly blocks give 24."""


SIZES: dict[str, SizeSpec] = {
    "small": SizeSpec(workloads=3, gpu_types=3, zones=2),
    "medium": SizeSpec(workloads=6, gpu_types=5, zones=4),
    "large": SizeSpec(workloads=12, gpu_types=8, zones=6),
}


@dataclass(frozen=True)
class Profile:
    """Token percentiles (p50, p95, p99, mean) of one traffic kind [tokens]."""

    input_tokens: tuple[int, int, int, float | None]
    output_tokens: tuple[int, int, int, float | None]
    prefix_cache_hit_rate: float


#: The demo scenario's profiles: Azure conversation and code traces, Mooncake conversation, and
#: illustrative document summaries.
PROFILES: dict[str, Profile] = {
    "chat": Profile((1020, 4083, 4142, 1155.0), (129, 451, 601, 211.0), 0.2),
    "code": Profile((1469, 7303, 7436, 2048.0), (13, 90, 251, 28.0), 0.5),
    "agent": Profile((6909, 39550, 85400, 12035.0), (350, 698, 1119, 343.0), 0.37),
    "summary": Profile((3000, 6500, 8000, None), (250, 400, 500, None), 0.0),
}


@dataclass(frozen=True)
class Template:
    """A kind of pool: model, precision, traffic, SLO and nominal size."""

    name: str
    model: str
    precision: Precision
    workload_class: WorkloadClass
    profile: str
    ttft_p95_ms: float
    tpot_p95_ms: float
    nominal_rps: float
    """Peak rate [1/s] for arrival pools; batch volume pools use it as their in-window rate."""
    window_hours: tuple[int, ...] | None = None
    """Hours of a batch volume window; ``None`` means an arrival-shaped pool."""


#: Pools in the order sizes take them; each size's first templates mix interactive and batch.
TEMPLATES: tuple[Template, ...] = (
    Template("chat", "Llama-3.1-70B", Precision.fp8, WorkloadClass.interactive, "chat",
             1500, 60, 8.0),
    Template("code-completion", "Llama-3.1-8B", Precision.bf16, WorkloadClass.interactive,
             "code", 500, 30, 20.0),
    Template("nightly-summaries", "Llama-3.1-8B", Precision.bf16, WorkloadClass.batch,
             "summary", 30000, 150, 10.0, window_hours=(2, 3, 4, 5, 6, 7)),
    Template("support-bot", "Qwen2.5-7B", Precision.bf16, WorkloadClass.interactive, "chat",
             1000, 50, 12.0),
    Template("agent", "Llama-3.1-70B", Precision.fp8, WorkloadClass.interactive, "agent",
             6000, 80, 1.0),
    Template("eval-offline", "Llama-3.1-8B", Precision.fp8, WorkloadClass.batch, "chat",
             20000, 120, 6.0),
    Template("analyst", "Qwen2.5-72B", Precision.fp8, WorkloadClass.interactive, "chat",
             2000, 70, 3.0),
    Template("moe-chat", "Mixtral-8x7B", Precision.bf16, WorkloadClass.interactive, "chat",
             1500, 50, 5.0),
    Template("doc-extract", "Qwen2.5-72B", Precision.fp8, WorkloadClass.batch, "summary",
             60000, 200, 2.0, window_hours=(0, 1, 2, 3, 4, 5, 6, 7, 8)),
    Template("ide-chat", "Llama-3.1-8B", Precision.fp8, WorkloadClass.interactive, "chat",
             800, 40, 15.0),
    Template("rag-assistant", "Llama-3.1-8B", Precision.fp8, WorkloadClass.interactive, "agent",
             4000, 50, 3.0),
    Template("search-rerank", "Qwen2.5-7B", Precision.fp8, WorkloadClass.interactive, "code",
             600, 30, 10.0),
)

SURVIVABILITY_CYCLE = (Survivability.zone_loss, Survivability.n_plus_1, Survivability.none)


def size_spec(size: str | SizeSpec) -> SizeSpec:
    """A named size's dimensions (or the spec itself); unknown names raise ``KeyError``."""
    return size if isinstance(size, SizeSpec) else SIZES[size]


def median_prices(gpus: tuple[GpuType, ...]) -> dict[str, tuple[float, float]]:
    """Median (on-demand, spot) price per GPU-hour of each catalog GPU over the AWS table.

    GPUs the table lacks are priced by ``ASSUMED_PRICE_VS`` [USD/(GPU·h)].
    """
    table = PriceTable(path="builtin:aws", reserved=None)
    zones = zones_from_price_table(AWS_PRICES, table, gpus, str(AWS_PRICES), 0)
    on_demand: dict[str, list[float]] = {}
    spot: dict[str, list[float]] = {}
    for zone in zones:
        for offer in zone.offers:
            if offer.on_demand is not None:
                on_demand.setdefault(offer.gpu, []).append(offer.on_demand.price_per_gpu_hour)
            if offer.spot is not None:
                spot.setdefault(offer.gpu, []).append(offer.spot.price_per_gpu_hour)
    out = {g: (statistics.median(on_demand[g]), statistics.median(spot[g]))
           for g in on_demand if g in spot}
    for gpu, (ref, ratio) in ASSUMED_PRICE_VS.items():
        if gpu not in out and ref in out:
            out[gpu] = (out[ref][0] * ratio, out[ref][1] * ratio)
    return out


def hourly_shape(rng: random.Random, peak_hour: int, trough: float) -> tuple[float, ...]:
    """Peak-day shape: a cosine from ``trough`` (12 h from the peak) to 1.0, ±3 % noise, max 1.0."""
    raw = [
        (trough + (1 - trough) * 0.5 * (1 + math.cos(2 * math.pi * (h - peak_hour) / 24)))
        * rng.uniform(0.97, 1.03)
        for h in range(HOURS_PER_DAY)
    ]
    top = max(raw)
    shape = [round(v / top, 4) for v in raw]
    shape[raw.index(top)] = 1.0  # rounding must keep the peak exactly 1.0
    return tuple(shape)


def _percentiles(values: tuple[int, int, int, float | None]) -> TokenPercentiles:
    p50, p95, p99, mean = values
    return TokenPercentiles(p50=p50, p95=p95, p99=p99, mean=mean)


def make_workload(rng: random.Random, template: Template, index: int,
                  survivability: Survivability, demand_scale: int = 1) -> Workload:
    """One pool from a template, its rate drawn in [0.7, 1.3] × nominal and its own shape.

    ``demand_scale`` multiplies the drawn peak rate (and so a batch pool's daily volume) after
    the draw, so every scale of one seed has the same shapes, windows and prices.
    """
    profile = PROFILES[template.profile]
    rate_rps = round(round(template.nominal_rps * rng.uniform(0.7, 1.3), 3) * demand_scale, 6)
    peak_hour = rng.randrange(HOURS_PER_DAY)
    trough = rng.uniform(0.15, 0.45)
    arrival, batch = None, None
    if template.window_hours is None:
        arrival = Arrival(peak_rps=rate_rps, hourly_shape=hourly_shape(rng, peak_hour, trough))
    else:
        daily = round(rate_rps * len(template.window_hours) * 3600)  # [1/s] × [h] × [s/h]
        batch = BatchVolume(daily_requests=daily, window_hours=template.window_hours)
    return Workload(
        name=template.name, model=template.model, precision=template.precision,
        workload_class=template.workload_class, tenant=f"tenant-{index % 4}",
        arrival=arrival, batch=batch,
        input_tokens=_percentiles(profile.input_tokens),
        output_tokens=_percentiles(profile.output_tokens),
        prefix_cache_hit_rate=profile.prefix_cache_hit_rate,
        slo=Slo(ttft_p95_ms=template.ttft_p95_ms, tpot_p95_ms=template.tpot_p95_ms),
        survivability=survivability,
    )


def make_workloads(rng: random.Random, count: int,
                   demand_scale: int = 1) -> tuple[Workload, ...]:
    """The first ``count`` templates; interactive pools cycle through the survivability kinds."""
    if not 1 <= count <= len(TEMPLATES):
        raise ValueError(f"workloads must lie in 1..{len(TEMPLATES)}, got {count}")
    out, interactive = [], 0
    for i, template in enumerate(TEMPLATES[:count]):
        surv = Survivability.none
        if template.workload_class is WorkloadClass.interactive:
            surv = SURVIVABILITY_CYCLE[interactive % len(SURVIVABILITY_CYCLE)]
            interactive += 1
        out.append(make_workload(rng, template, i, surv, demand_scale))
    return tuple(out)


def make_zones(rng: random.Random, gpus: tuple[GpuType, ...], count: int,
               prices: dict[str, tuple[float, float]],
               stock_scale: int = 1) -> tuple[Zone, ...]:
    """``count`` zones, each selling every GPU type at AWS-like prices with drawn stock.

    ``stock_scale`` multiplies each drawn node count (after the draw: the same prices and the
    same proportions of stock at every scale).
    """
    if not 1 <= count <= len(ZONE_ORDER):
        raise ValueError(f"zones must lie in 1..{len(ZONE_ORDER)}, got {count}")
    chosen = ZONE_ORDER[:count]
    regions = sorted({region for _, region in chosen})
    region_factor = {r: rng.uniform(*ON_DEMAND_REGION_SPREAD) for r in regions}
    zones = []
    for zone_id, region in chosen:
        offers = []
        for gpu in gpus:
            median_on_demand, median_spot = prices[gpu.name]
            on_demand = round(median_on_demand * region_factor[region], 4)
            spot = round(min(median_spot * rng.uniform(*SPOT_ZONE_SPREAD),
                             SPOT_CAP_VS_ON_DEMAND * on_demand), 4)
            tier = STOCK_NODES["scarce" if gpu.name in SCARCE_GPUS else "common"]
            node = gpu.gpus_per_node
            stock = {kind: rng.randint(*tier[kind]) * stock_scale * node
                     for kind in ("reserved", "on_demand", "spot")}
            offers.append(Offer(
                gpu=gpu.name, gpus_per_node=node,
                reserved=ReservedTerms(
                    price_per_gpu_hour=round(on_demand * (1 - RESERVED_DISCOUNT), 4),
                    stock_gpus=stock["reserved"]),
                on_demand=OnDemandTerms(price_per_gpu_hour=on_demand,
                                        stock_gpus=stock["on_demand"]),
                spot=SpotTerms(price_per_gpu_hour=spot, stock_gpus=stock["spot"],
                               interruption_rate_per_hour=SPOT_INTERRUPTION_RATE_PER_HOUR),
                price_source=f"benchmarks/generate.py: AWS median × region/zone factor, "
                             f"{zone_id}",
            ))
        zones.append(Zone(id=zone_id, region=region, offers=tuple(offers)))
    return tuple(zones)


def generate_scenario(size: str | SizeSpec, seed: int = 0, scale: int = 1) -> Scenario:
    """A resolved, checked scenario of the given size; the same (size, seed, scale) gives the
    same one.

    ``scale`` multiplies every peak rate, daily volume and stock (in whole nodes) of the
    scenario the (size, seed) pair draws: the same workloads, shapes and prices at ``scale``
    times the traffic, as a fleet of hundreds of GPUs rather than a few nodes. Scenarios of
    scale 1 are those of earlier benchmarks, named ``bench-<size>-seed<seed>``; others
    ``bench-<size>-x<scale>-seed<seed>``.

    Raises
    ------
    KeyError
        For an unknown size name.
    ValueError
        For dimensions the templates cannot fill, a slice count other than 24, or a scale
        below 1.
    """
    spec = size_spec(size)
    if scale < 1:
        raise ValueError(f"scale must be a whole number of at least 1, got {scale}")
    if spec.slices != HOURS_PER_DAY:
        raise ValueError(f"generated scenarios plan 24 hourly slices, not {spec.slices}")
    catalog_gpus, models, sources = load_catalog()
    by_name = {g.name: g for g in catalog_gpus}
    if not 1 <= spec.gpu_types <= len(GPU_ORDER):
        raise ValueError(f"gpu_types must lie in 1..{len(GPU_ORDER)}, got {spec.gpu_types}")
    gpus = tuple(by_name[n] for n in GPU_ORDER[: spec.gpu_types])
    rng = random.Random(seed)
    workloads = make_workloads(rng, spec.workloads, scale)
    zones = make_zones(rng, gpus, spec.zones, median_prices(catalog_gpus), scale)
    scaled = "" if scale == 1 else f"-x{scale}"
    name = f"bench-{size if isinstance(size, str) else 'custom'}{scaled}-seed{seed}"
    scenario = Scenario(
        name=name,
        description=(f"Generated by benchmarks/generate.py (seed {seed}): {spec.workloads} "
                     f"workloads × {spec.gpu_types} GPU types × {spec.zones} zones × "
                     f"{spec.slices} slices" + (f", demand and stock × {scale}" if scale > 1
                                                else "") + "."),
        gpus=gpus, models=models, zones=zones, workloads=workloads,
        policy=Policy(as_of="2026-01-01"),
        sources=(*sources, str(AWS_PRICES)),
    )
    problems = check_references(scenario, name)
    if problems:
        raise InputError(problems)
    return scenario


def scenario_file(scenario: Scenario) -> ScenarioFile:
    """The scenario as a file ``fleetplan`` loads: built-in catalog, explicit zones and workloads.

    The loaded scenario lists every catalog GPU type, but zones sell only the generated ones, so
    it plans the same fleet.
    """
    return ScenarioFile(name=scenario.name, description=scenario.description,
                        zones=scenario.zones, workloads=scenario.workloads,
                        policy=scenario.policy)


def write_scenarios(out_dir: Path, seed: int = 0, scale: int = 1) -> list[Path]:
    """Write each named size as a scenario YAML file into ``out_dir``; returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for size in SIZES:
        scenario = generate_scenario(size, seed, scale)
        doc = scenario_file(scenario).model_dump(mode="json", by_alias=True,
                                                 exclude_defaults=True)
        path = out_dir / f"{scenario.name}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False, width=100), encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> None:
    """``python benchmarks/generate.py [DIR] [--seed N] [--scale K]``: write the three sizes."""
    import argparse

    p = argparse.ArgumentParser(description="Write the benchmark scenarios as scenario files.")
    p.add_argument("out_dir", nargs="?", type=Path, default=Path("outputs/bench"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scale", type=int, default=1,
                   help="multiply every peak rate, daily volume and stock by this")
    args = p.parse_args(argv)
    for written in write_scenarios(args.out_dir, args.seed, args.scale):
        print(written)


if __name__ == "__main__":
    main()
