"""The scenario: everything one plan is made from.

Two shapes. :class:`ScenarioFile` is what a planner writes: it may lean on the built-in catalog,
override entries of it, and import prices from a price table. :class:`Scenario` is the resolved
form the solver reads: every GPU type, model, zone and offer spelled out, every reference checked.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from pydantic import Field, ValidationInfo, field_validator

from models.catalog import GpuType, LlmSpec
from models.common import CatalogLayout, Frozen, OmitDefaults
from models.horizon import DemandScenario, HeldNodes, Horizon, InventoryKind
from models.limits import LimitedList, Name, Real, Text, Whole, bounded
from models.measured import MeasuredCapacity
from models.offers import Offer, ReservedTerms, Zone
from models.policy import Policy
from models.runtime import RuntimeSpec, resolve_runtime
from models.workload import Workload


class ReservedPricing(Frozen):
    """How reserved prices are derived where a price table has none (public catalogs don't)."""

    discount_vs_on_demand: Real = bounded("discount_vs_on_demand", 0.4)
    """Reserved price = on-demand price × (1 − discount) [1]."""
    commitment_months: Whole = bounded("commitment_months", 12)
    lead_time_weeks: Real = bounded("lead_time_weeks", 0.0)


class PriceTable(OmitDefaults):
    """Import per-zone prices from a price catalog as published (SkyPilot's AWS, GCP or Azure
    ``vms.csv``: instance prices → per GPU) or a plain quote CSV (docs/prices.md)."""

    omit_when_default = ("layout",)
    path: Text = Field(min_length=1)
    """CSV path, relative to the scenario file; ``builtin:aws`` names the copy in inputs/catalog."""
    layout: CatalogLayout | None = None
    """The file's layout (default: detected from its header)."""
    zones: Annotated[tuple[Name, ...], LimitedList] | None = None
    """Zone ids (or AWS zone names, through ``zone_names``) to import (default: every zone)."""
    gpus: Annotated[tuple[Name, ...], LimitedList] | None = None
    """GPU types to import, by catalog name, common name or instance type (default: every GPU
    the table and the catalog share)."""
    reserved: ReservedPricing | None = ReservedPricing()
    """``None`` imports no reserved offers."""
    stock_gpus: dict[str, int] = Field(
        default_factory=lambda: {"reserved": 64, "on_demand": 64, "spot": 32}
    )
    """Assumed stock per purchase kind where the table has none [GPUs]."""
    spot_interruption_rate_per_hour: Real = bounded("spot_interruption_rate_per_hour", 0.05)
    on_demand_startup_minutes: Real = bounded("on_demand_startup_minutes", 10.0)


class CatalogSection(Frozen):
    """Which catalog a scenario uses and what it changes in it."""

    builtin: bool = True
    """Start from the built-in catalog in inputs/catalog/."""
    overlays: Annotated[tuple[Text, ...], LimitedList] = ()
    """Catalog overlay files (e.g. from ``fleetplan calibrate``), relative to the scenario file."""
    gpus: Annotated[tuple[dict[str, Any], ...], LimitedList] = ()
    """GPU entries to add, or to override field by field where the name exists."""
    models: Annotated[tuple[dict[str, Any], ...], LimitedList] = ()
    """Model entries to add, or to override field by field where the name exists."""
    runtimes: tuple[dict[str, Any], ...] = ()
    """Runtime entries to add, or to override where the name exists (costs merge per GPU)."""


class ScenarioFile(OmitDefaults):
    """A scenario as written by hand (YAML or JSON)."""

    omit_when_default = ("inventory", "horizon", "demand_scenarios", "zone_names")

    name: Name
    description: Text = ""
    catalog: CatalogSection = CatalogSection()
    price_tables: Annotated[tuple[PriceTable, ...], LimitedList] = ()
    zones: Annotated[tuple[Zone, ...], LimitedList] = ()
    """Zones given explicitly; merged with imported ones (explicit offers win per GPU)."""
    workloads: Annotated[tuple[Workload, ...], LimitedList] = Field(min_length=1)
    measured: Annotated[tuple[MeasuredCapacity, ...], LimitedList] = ()
    measured_csv: Text | None = None
    """Measured capacity rows as a CSV (configuration-matrix columns), relative to the file."""
    zone_names: Text | None = None
    """The output of ``aws ec2 describe-availability-zones --output json`` (relative to the
    file): lets zones be named as the account names them (``us-east-1a``)."""
    policy: Policy = Policy()
    inventory: Annotated[tuple[HeldNodes, ...], LimitedList] = ()
    """Nodes already owned or reserved: plans buy the cheapest addition to them."""
    horizon: Horizon | None = None
    """Planning periods (quarters); ``None`` plans one peak day."""
    demand_scenarios: Annotated[tuple[DemandScenario, ...], LimitedList] = ()
    """Paths demand may take, with probabilities (they share the orders due before the next
    re-plan); empty: one path, the workloads' own growth."""


class Scenario(OmitDefaults):
    """A resolved, consistent scenario: the only input the solver reads."""

    omit_when_default = ("inventory", "horizon", "demand_scenarios")

    name: Name
    description: Text = ""
    gpus: Annotated[tuple[GpuType, ...], LimitedList]
    models: Annotated[tuple[LlmSpec, ...], LimitedList]
    zones: Annotated[tuple[Zone, ...], LimitedList]
    workloads: Annotated[tuple[Workload, ...], LimitedList]
    measured: Annotated[tuple[MeasuredCapacity, ...], LimitedList] = ()
    policy: Policy = Policy()
    runtimes: tuple[RuntimeSpec, ...] = ()
    """Serving runtimes and their fixed costs per GPU; empty: every step uses its GPU's own
    efficiency factors whatever the workload's runtime."""
    sources: tuple[str, ...] = ()
    """Files the scenario was resolved from (scenario, catalog, overlays, price tables)."""
    inventory: tuple[HeldNodes, ...] = ()
    """Nodes already held; each names its ``gpu`` and ``gpus_per_node`` once resolved."""
    horizon: Horizon | None = None
    demand_scenarios: tuple[DemandScenario, ...] = ()

    @field_validator("inventory")
    @classmethod
    def _owned_lines_priced(cls, inventory: tuple[HeldNodes, ...],
                            info: ValidationInfo) -> tuple[HeldNodes, ...]:
        """An owned line states its running cost, or its zone's offer for its GPU has ``owned``
        terms to price it from. The loader says so of a scenario file, located
        (:func:`models.planning_checks.resolve_inventory`); a scenario built in code met a bare
        ``assert`` in the planner instead. Lines not resolved yet (named by instance type or a
        common GPU name, or in a zone the scenario lacks) are the loader's to check."""
        zones = {z.id: z for z in info.data.get("zones", ())}
        gpus = {g.name for g in info.data.get("gpus", ())}
        bad = [f"inventory[{i}] ({line.nodes} owned {line.gpu} node(s) in {line.zone})"
               for i, line in enumerate(inventory)
               if line.purchase is InventoryKind.owned and line.running_cost_per_node_month is None
               and line.gpu in gpus and line.zone in zones
               and not any(o.gpu == line.gpu and o.owned is not None
                           for o in zones[line.zone].offers)]
        if bad:
            raise ValueError(
                f"{'; '.join(bad)}: no running cost, and the zone has no `owned` terms for that "
                "GPU to price it from — give the line's running_cost_per_node_month (power and "
                "hosting), or `owned` terms in the zone's offer")
        return inventory

    @property
    def multi_period(self) -> bool:
        """Planned over a horizon of periods, or from a fleet already held (else: one peak
        day from nothing, as plans always were)."""
        return self.horizon is not None or bool(self.inventory) or bool(self.demand_scenarios)

    def gpu(self, name: str) -> GpuType:
        """GPU type by name (names were checked at load)."""
        return next(g for g in self.gpus if g.name == name)

    def model(self, name: str) -> LlmSpec:
        """Model spec by name (names were checked at load)."""
        return next(m for m in self.models if m.name == name)

    def workload(self, name: str) -> Workload:
        """Workload by name (names were checked at load)."""
        return next(w for w in self.workloads if w.name == name)

    def runtime(self, name: str) -> RuntimeSpec | None:
        """The runtime entry a workload's ``runtime`` resolves to (``None``: none, or no runtime
        catalog)."""
        return resolve_runtime(name, self.runtimes)

    def zone_label(self, zone_id: str) -> str:
        """The zone as a person reads it: its id, and the account's name for it where the
        scenario maps one (``use1-az4 (us-east-1a)``)."""
        name = next((z.name for z in self.zones if z.id == zone_id), None)
        return f"{zone_id} ({name})" if name else zone_id

    def zone(self, zone_id: str) -> Zone:
        """Zone by id (ids were checked at load)."""
        return next(z for z in self.zones if z.id == zone_id)

    def offer(self, zone_id: str, gpu: str) -> Offer | None:
        """The offer of ``gpu`` in zone ``zone_id`` (``None``: no such zone, or it sells none)."""
        return next((o for z in self.zones if z.id == zone_id for o in z.offers if o.gpu == gpu),
                    None)

    def held_running_cost(self, line: HeldNodes) -> float:
        """Owned nodes' power and hosting per node: the line's, else from its zone's ``owned``
        terms for the GPU (validation refuses an owned line with neither)
        [currency/(node·month)]. The planner's held cost and the outputs' Held tables read
        this one figure."""
        assert line.purchase is InventoryKind.owned and line.gpus_per_node is not None
        if line.running_cost_per_node_month is not None:
            return line.running_cost_per_node_month
        assert line.gpu is not None  # resolved from the instance type on loading
        offer = self.offer(line.zone, line.gpu)
        assert offer is not None and offer.owned is not None, (
            "Scenario validation refuses an owned line with no running cost and no owned terms")
        return offer.owned.running_per_node_month(line.gpus_per_node,
                                                  self.policy.hours_per_month)

    def held_cost_per_month(self, line: HeldNodes) -> float:
        """What an inventory line costs a month held: a reservation its price, owned nodes
        their power and hosting [currency/month]."""
        if line.purchase is InventoryKind.reserved:
            return line.reserved_cost_per_month(self.held_reservation_price(line),
                                                self.policy.hours_per_month)
        return self.held_running_cost(line) * line.nodes

    def held_reservation_quote(self, line: HeldNodes) -> tuple[Offer, ReservedTerms] | None:
        """The quote a held reservation whose inventory line states no price is priced at: the
        cheapest reserved quote of its zone's offer for its GPU, with that offer (``None``:
        the zone offers none; the loader refuses such a line)."""
        offer = None if line.gpu is None else self.offer(line.zone, line.gpu)
        if offer is None or not offer.reserved_quotes:
            return None
        return offer, min(offer.reserved_quotes, key=lambda q: q.price_per_gpu_hour)

    def held_reservation_price(self, line: HeldNodes) -> float:
        """A held reservation's price: its line's, else its zone's cheapest reserved quote
        (:meth:`held_reservation_quote`) [currency/(GPU·h)]."""
        if line.price_per_gpu_hour is not None:
            return line.price_per_gpu_hour
        quoted = self.held_reservation_quote(line)
        assert quoted is not None, "the loader refuses a held reservation its zone cannot price"
        return quoted[1].price_per_gpu_hour

    def gpus_sold_or_held(self) -> tuple[str, ...]:
        """GPU types some zone sells or the inventory holds, in catalog order: the only ones a
        plan can place (its capacity table needs no row of another)."""
        names = {o.gpu for z in self.zones for o in z.offers}
        names |= {line.gpu for line in self.inventory if line.gpu is not None}
        return tuple(g.name for g in self.gpus if g.name in names)

    def rows_aged_to(self, start: dt.date) -> dt.date:
        """The day a period starting on ``start`` ages its measured rows to: its start, or
        ``policy.as_of`` where later (a period under way when the plan is made is sized with
        the rows still valid that day, as ``check --contract`` ages them)."""
        as_of = dt.date.fromisoformat(self.policy.as_of) if self.policy.as_of else None
        return max(start, as_of) if as_of is not None else start

    def in_period(self, period: int, demand: DemandScenario,
                  as_of: dt.date | None = None) -> Scenario:
        """The single-period scenario of one period of a plan over periods: each workload as it
        runs then under ``demand`` (growth, events, migrations: :meth:`Workload.in_period`;
        a workload whose ``from_period`` is later is left out: it has not launched),
        measured rows aged to ``as_of`` where given (:meth:`rows_aged_to`), and no
        inventory, horizon or demand scenarios of its own. The planner's blocks and the
        contract of a plan over periods size a period through this one function."""
        policy = self.policy
        if as_of is not None:
            policy = policy.model_copy(update={"as_of": as_of.isoformat()})
        workloads = tuple(w.in_period(period, demand.multiplier(w.name, period))
                          for w in self.workloads if w.runs_in(period))
        return self.model_copy(update={"workloads": workloads, "policy": policy,
                                       "inventory": (), "horizon": None,
                                       "demand_scenarios": ()})

    def node_sizes(self, gpu: str) -> tuple[int, ...]:
        """GPUs per node of the ``gpu`` nodes the scenario sells or holds, smallest first: each
        zone offer's (else the GPU type's) and each inventory line's; empty where none.

        An offer may sell another node size than the catalog's (one GPU at a time, say), and a
        replica must fit in one node, so these, not the catalog's, bound the TP degrees."""
        catalog = self.gpu(gpu).gpus_per_node
        sizes = {o.gpus_per_node or catalog for z in self.zones for o in z.offers
                 if o.gpu == gpu}
        sizes |= {line.gpus_per_node or catalog for line in self.inventory if line.gpu == gpu}
        return tuple(sorted(sizes))
