"""Named keys of the program's variables: replica slots, node groups, pools and stock rows.

Keys are named tuples, so a reader sees ``key.zone`` where the program once read ``key[3]``; they
still hash and compare as plain tuples of their fields, in field order (sorting is deterministic).
"""

from __future__ import annotations

from typing import NamedTuple

from models.common import PurchaseKind


class PoolKey(NamedTuple):
    """An offer, and the pool of nodes bought from it: (zone, GPU type, purchase kind)."""

    zone: str
    gpu: str
    purchase: PurchaseKind


class StockKey(NamedTuple):
    """A stock row: nodes of one offer running in one slice (``None``: reserved, every slice)."""

    zone: str
    gpu: str
    purchase: PurchaseKind
    slice: str | None

    @property
    def pool(self) -> PoolKey:
        return PoolKey(self.zone, self.gpu, self.purchase)


class ReplicaKey(NamedTuple):
    """A replica slot: workload, configuration (GPU, TP), zone, purchase kind and slice.

    Reserved slots carry no slice (``None``): they run, and count, in every slice.
    """

    workload: str
    gpu: str
    tp: int
    zone: str
    purchase: PurchaseKind
    slice: str | None

    @property
    def pool(self) -> PoolKey:
        return PoolKey(self.zone, self.gpu, self.purchase)

    @property
    def spot(self) -> bool:
        return self.purchase is PurchaseKind.spot


class NodeKey(NamedTuple):
    """A node group: the nodes of one offer in one slice, owned by one workload (dedicated pools)
    or shared by every workload (``owner`` ``None``)."""

    zone: str
    gpu: str
    purchase: PurchaseKind
    slice: str | None
    owner: str | None

    @property
    def pool(self) -> PoolKey:
        return PoolKey(self.zone, self.gpu, self.purchase)

    @property
    def stock(self) -> StockKey:
        return StockKey(self.zone, self.gpu, self.purchase, self.slice)

    @property
    def spot(self) -> bool:
        return self.purchase is PurchaseKind.spot

    def sort_key(self) -> tuple[str, str, str, str, str]:
        """Order of node groups: by zone, GPU, purchase kind, slice and owner (``None`` first)."""
        return (self.zone, self.gpu, self.purchase.value, self.slice or "", self.owner or "")


class RowKey(NamedTuple):
    """A requirement row of the program: its family and what it is about.

    The elastic program's slacks carry one, so the diagnosis reads ``row.zone`` instead of parsing
    a name. ``spot_node`` marks the N+1 row "losing a spot node" (only non-spot capacity counts);
    ``slice`` is ``None`` for a volume row (the whole window) and for reserved stock.
    """

    family: str
    workload: str | None = None
    zone: str | None = None
    gpu: str | None = None
    purchase: PurchaseKind | None = None
    slice: str | None = None
    spot_node: bool = False

    def labels(self) -> tuple[str, ...]:
        """The labels of the row's solver name, in the order names have always had them."""
        if self.family == "stock":
            assert self.zone and self.gpu and self.purchase
            return (self.zone, self.gpu, self.purchase.value, self.slice or "all")
        out = [] if self.workload is None else [self.workload]
        if self.spot_node:
            out += ["any", "any", PurchaseKind.spot.value]
        else:
            out += [x for x in (self.zone, self.gpu) if x is not None]
            out += [] if self.purchase is None else [self.purchase.value]
        return (*out, *(() if self.slice is None else (self.slice,)))

    def labels_sort_key(self) -> tuple[str, ...]:
        """Order of rows in a report: by family, then by their labels (as their names sort)."""
        return (self.family, *self.labels())
