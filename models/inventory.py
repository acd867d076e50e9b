"""Fleets that already exist: the inventory file, and the fleet every check reads.

Two shapes, as for scenarios. :class:`InventoryFile` is what an operator writes: the nodes owned
or reserved per zone and GPU type, and optionally how replicas are laid out on them.
:class:`Fleet` is the resolved form ``check`` and ``simulate`` read — made from an inventory or
from a ``plan.json`` by :func:`solver.survivability.fleet.load_fleet` — with every replica group's
SLO-holding
rate and source filled in from the capacity table (or the plan).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from models.common import CapacitySource, Frozen, Precision, PurchaseKind, kind_as_purchase
from models.limits import LimitedList, Name, Text, Whole, bounded


class InventoryNodes(Frozen):
    """Nodes of one GPU type owned (or reserved, or running on demand) in one zone, named by
    GPU type (and node size) or by the provider's instance type."""

    zone: Name
    gpu: Name = ""
    """GPU type; empty when ``instance_type`` names the nodes (filled in when they resolve)."""
    instance_type: Name | None = None
    """Provider's node type (e.g. ``p5.48xlarge``): GPU type and node size from the scenario's
    offers, else the built-in price table."""
    purchase: PurchaseKind = PurchaseKind.reserved
    nodes: Whole = bounded("nodes")
    """At most 10^5 nodes a line, beyond any cluster built: a few zeros too many (10^9) made
    the layout allocate a list per node and never finish."""
    gpus_per_node: Whole | None = bounded("gpus_per_node", None)
    """GPUs per node; defaults to the zone offer's, else the GPU type's ``gpus_per_node``."""

    @model_validator(mode="before")
    @classmethod
    def _kind_is_purchase(cls, data: object) -> object:
        return kind_as_purchase(data)

    @model_validator(mode="after")
    def _named(self) -> InventoryNodes:
        if not self.gpu and self.instance_type is None:
            raise ValueError("name the nodes by `gpu` or by `instance_type`")
        return self


class InventoryReplicas(Frozen):
    """Replicas of one workload in one configuration and zone (a layout line)."""

    workload: Name
    zone: Name
    gpu: Name
    tp: Whole = bounded("tp")
    """Tensor-parallel degree = GPUs per replica, all in one node."""
    replicas: Whole = bounded("replicas")
    purchase: PurchaseKind | None = None
    """Nodes the replicas run on; default: fill reserved, then on-demand (then spot for batch)."""
    precision: Precision | None = None
    """Default: the workload's precision."""


class InventoryFile(Frozen):
    """An existing fleet as written by hand (YAML or JSON)."""

    name: Name = "inventory"
    description: Text = ""
    nodes: Annotated[tuple[InventoryNodes, ...], LimitedList] = Field(min_length=1)
    layout: Annotated[tuple[InventoryReplicas, ...], LimitedList] | None = None
    """How replicas sit on the nodes; ``None`` lets fleetplan lay them out (greedy, cheapest)."""


class FleetReplicaGroup(Frozen):
    """Replicas of one workload in one configuration, zone, purchase kind and slice."""

    workload: str
    zone: str
    gpu: str
    tp: int = Field(ge=1)
    precision: Precision
    purchase: PurchaseKind
    slice: str | None
    """``None``: running in every slice of the day."""
    replicas: int = Field(ge=0)
    slo_rps: float = Field(gt=0)
    """SLO-holding rate of one replica [1/s]."""
    capacity_source: CapacitySource


class FleetNodes(Frozen):
    """Whole nodes per zone, GPU type, purchase kind and slice."""

    zone: str
    gpu: str
    purchase: PurchaseKind
    slice: str | None
    """``None``: running in every slice of the day."""
    nodes: int = Field(ge=0)
    gpus: int = Field(ge=0)
    """nodes × GPUs per node [GPUs]."""


class Fleet(Frozen):
    """A fleet to check: nodes, and the replica groups laid out on them."""

    name: str
    source: str
    """File the fleet was read from (a plan.json or an inventory)."""
    replicas: tuple[FleetReplicaGroup, ...]
    nodes: tuple[FleetNodes, ...]
    laid_out_by_fleetplan: bool = False
    """True when the inventory gave no layout and ``check`` placed the replicas (greedy); false
    for a plan.json, whose replicas are the plan's own, and for an inventory's ``layout:``
    (``check --json`` adds ``replicas_laid_out_by``: ``check``, ``plan`` or ``inventory``)."""
    notes: tuple[str, ...] = ()
    """What fleetplan changed while reading (e.g. replicas dropped that no node could hold)."""

    def gpus_per_node(self, zone: str, gpu: str, purchase: PurchaseKind) -> int | None:
        """GPUs per node of one pool, from its node rows (``None`` when the pool has no nodes)."""
        for n in self.nodes:
            if (n.zone, n.gpu, n.purchase) == (zone, gpu, purchase) and n.nodes > 0:
                return n.gpus // n.nodes
        return None
