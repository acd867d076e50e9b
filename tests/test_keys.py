"""Named keys of the program: rows keep the solver names they always had."""

from __future__ import annotations

from models.common import PurchaseKind
from solver.program.keys import NodeKey, ReplicaKey, RowKey, StockKey

R, S = PurchaseKind.reserved, PurchaseKind.spot


def test_row_labels_are_the_names_rows_always_had() -> None:
    assert RowKey("demand", "chat", slice="day").labels() == ("chat", "day")
    assert RowKey("demand", "batch").labels() == ("batch",)  # a volume row: no slice
    assert RowKey("n_plus_1", "chat", spot_node=True, slice="day").labels() == (
        "chat", "any", "any", "spot", "day")
    assert RowKey("n_plus_1", "chat", "az1", "H100", R, "day").labels() == (
        "chat", "az1", "H100", "reserved", "day")
    assert RowKey("zone_loss", "chat", "az1", slice="day").labels() == ("chat", "az1", "day")
    assert RowKey("stock", zone="az1", gpu="H100", purchase=R).labels() == (
        "az1", "H100", "reserved", "all")
    assert RowKey("budget").labels() == ()


def test_keys_read_by_name_and_compare_as_tuples() -> None:
    k = ReplicaKey("chat", "H100", 2, "az1", S, "day")
    assert (k.zone, k.tp, k.spot) == ("az1", 2, True)
    assert k == ("chat", "H100", 2, "az1", S, "day")
    assert k.pool == ("az1", "H100", S)
    node = NodeKey("az1", "H100", S, "day", None)
    assert node.stock == StockKey("az1", "H100", S, "day")
    assert sorted([NodeKey("b", "H100", R, None, None), node], key=NodeKey.sort_key)[0] is node
