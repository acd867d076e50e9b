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
