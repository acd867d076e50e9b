r"""The fleet integer program: the cheapest fleet that carries every workload through its failures.

Sets (all sorted; each could gain a quarter index ``q``: docs/program.md, "planning periods")

- :math:`W` workloads; :math:`W^I \subseteq W` interactive; :math:`W^{N1}`, :math:`W^{ZL}` those
  asking for ``n_plus_1`` / ``zone_loss``; :math:`W^V` batch workloads given as a daily volume.
- :math:`Z` zones, :math:`G` GPU types, :math:`K = \{R, D, S\}` reserved, on-demand, spot;
  :math:`O \subseteq Z\times G\times K` the offers sold.
- :math:`S` slices of the peak day (groups of the policy's time blocks), :math:`h_s` their hours.
- :math:`C_w` candidates of workload ``w``: feasible (GPU ``g_c``, TP ``t_c``) from the capacity
  table.
- Replica slots :math:`r = (w, c, z, k, s)` with :math:`(z, g_c, k) \in O`, :math:`t_c \le n_{zg}`;
  reserved slots carry no slice (:math:`s = *`) and count in every slice; :math:`r \ni s` below
  means "present in slice s".
- Node groups :math:`p = (z, g, k, s, o)`: with shared nodes (the default, ``policy.share_nodes``
  true) :math:`o` is empty and every workload's replicas of (z, g, k, s) share them; with
  dedicated pools the owner :math:`o` is the workload, a node serves one workload.

Parameters

- :math:`\rho_c` SLO-holding rate of a replica [1/s]; :math:`u_w` target utilization; :math:`\phi`
  the policy's failure utilization; :math:`a_k = 1 - \iota_{zg}` for spot (expected interruption),
  1 otherwise.
- :math:`d_{ws}` demand [1/s] (busiest hour of the slice); :math:`V_w` daily volume [requests],
  :math:`h_{ws}` hours of slice ``s`` inside the window of ``w``.
- :math:`n_{zg}` GPUs per node, :math:`\pi_{zgk}` price [currency/(GPU·h)],
  :math:`\sigma_{zgk}` stock [GPUs], :math:`H` hours per month, :math:`B` monthly budget.
- :math:`M_{wzgk} = \phi \max\{\sum_c m_c\rho_c : \sum_c m_c t_c \le n_{zg}\}` capacity of the
  fullest node of ``w`` in group (z, g, k): one node of TP ``t`` holds :math:`\lfloor n/t\rfloor`.

Variables

- :math:`x_r \in \mathbb{Z}_{\ge 0}` replicas; :math:`y_{zgk(s)} \in \mathbb{Z}_{\ge 0}` nodes
  (reserved: one per (z, g); elastic: per slice); :math:`\ell_{wzgks} \ge 0` capacity lost with the
  fullest node of a pool and :math:`b_{wzgk(s)} \in \{0, 1\}` "that node is full" (N+1 only).
- Auxiliaries that keep failure rows short: :math:`f_{ws} \le F_{ws}(\emptyset)` and
  :math:`c_{wzs} \ge` the non-spot capacity of ``w`` in zone ``z`` (at :math:`\phi`), so each
  N+1 and zone-loss row has a few terms instead of every slot of the workload.

Capacity of ``w`` in slice ``s``: :math:`U_{ws} = \sum_{r \ni s} u_w a_k \rho_c x_r` in normal
operation; after a failure only running non-spot replicas count, at :math:`\phi`:
:math:`F_{ws}(A) = \sum_{r \ni s, k_r \ne S, r \notin A} \phi \rho_c x_r` with ``A`` the lost slots.
"Meets demand" for capacity :math:`E_{ws}` means :math:`E_{ws} \ge d_{ws}` in every slice with
demand, or, for a volume workload, :math:`\sum_s 3600\, h_{ws} E_{ws} \ge V_w` (work may move
anywhere in its window).

Objective: :math:`\min \sum_{zg} \pi_{zgR} n_{zg} H y_{zgR} + \sum_{zgk \ne R,s} \pi_{zgk} n_{zg}
\frac{h_s H}{24} y_{zgks}` — reserved paid every hour, elastic for the hours of its slice.

Constraints

- C1 demand: :math:`U_{ws}` meets demand.
- C2 spot: no spot slots for :math:`w \in W^I` (never spot for interactive pools; a mask).
- C3 n_plus_1: for :math:`w \in W^{N1}`, :math:`F_{ws}(\emptyset)` meets demand (losing a spot
  node: spot never counts after a failure) and, for each non-spot pool (z, g, k) holding slots
  of ``w``, :math:`F_{ws}(\emptyset) - \ell_{wzgks}` meets demand, where the loss is
  :math:`\ell \ge \min(X_s, M)` with :math:`X_s` the pool's capacity at :math:`\phi`, linearised
  as :math:`\ell \ge X_s - (\bar X - M) b`, :math:`\ell \ge M b`, where :math:`\bar X` bounds the
  capacity an optimal pool needs (demand plus one node, see ``pool_capacity_bound``). Where
  :math:`\bar X \le M`, :math:`\ell = X_s` exactly. A reserved pool's ``b``
  is shared by all slices (:math:`X` is the same in each, so the min picks the same side). With
  several TPs on one pool, :math:`\min(X, M)` bounds the worst node's bounded knapsack from above
  (safe).
- C4 zone_loss: for :math:`w \in W^{ZL}` and each zone ``z``, :math:`F_{ws}(\text{slots in } z)`
  meets demand — only running, non-spot capacity counts. (Losing a node is implied.)
- C5 stock: :math:`\sum_o n_{zg} y_{zgk(s)o} \le \sigma_{zgk}` (less ``stock_taken``, stock
  already bought by workloads solved apart).
- C6 nodes: shared: for each TP degree ``t`` in the group,
  :math:`\sum_{r \in p,\, t_c \ge t} t_c x_r \le t \lfloor n_{zg}/t \rfloor y_p` — whole
  replicas pack into whole nodes, exactly for any node size since TP degrees are powers of two
  (:mod:`solver.capacity.node_fit`); slots with :math:`t_c > n_{zg}` do not exist.
  Dedicated: every node runs the workload's fullest packing, :math:`x_r = m_{t_c} y_p`
  (:func:`best_packing`; slots exist only for its TPs). No optimum is lost: capacity grows at
  the same node count and a node loss takes exactly :math:`M` either way.
- C7 budget: objective :math:`\le B` where a budget is set.

Symmetry cut (not a requirement): zones selling identical non-spot (or spot) offers are
interchangeable, so their non-spot (spot) costs are ordered by zone id. Node cover cuts (implied
by C1, C4 and C6): the nodes running in a slice could carry the demand on their own. Two-replicas
cut (shared nodes; implied by C3, C4 and integrality): surviving a failure takes two whole
replicas that could each carry the demand after it, or enough capacity in smaller ones; with
dedicated pools the same cut on whole nodes (two-nodes cut).

With dedicated pools only C5 and C7 couple workloads, so :mod:`solver.solve.decompose` solves one
sub-program per workload (C1–C4, C6 and its own stock rows); the sum of their proven bounds is a
valid bound of this program (any fleet restricted to one workload is feasible for its
sub-program), and their fleets put together are optimal within the summed gap whenever they
respect stock and budget (docs/program.md).

The builder only reads :class:`~solver.program.data.ProgramData`. With ``elastic=True`` each
requirement row (C1, C3, C4, C5, C7) gets a non-negative slack variable, registered in
``Variables.slacks``, for :mod:`solver.solve.diagnose`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pulp

from solver.program.cuts import add_node_cover_cuts, add_zone_symmetry
from solver.program.data import ProgramData
from solver.program.families import FAMILIES
from solver.program.variables import NameBook, Program, Variables, add_variables


def build_program(
    data: ProgramData,
    families: Iterable[str] = tuple(FAMILIES),
    elastic: bool = False,
    symmetry: bool = True,
    cuts: bool = True,
    stop: Callable[[], bool] | None = None,
    shared_two_nodes: bool = False,
) -> Program:
    """Build the program: variables, then each constraint family, then the objective.

    ``families`` selects constraint families by name (tests drop one to show it matters);
    ``elastic`` adds a slack to each requirement (for diagnosis). ``shared_two_nodes`` adds the
    two-nodes cut with shared nodes too (:func:`~solver.program.cuts.add_two_nodes_cut`; the
    joint solve asks for it, the grouped stages do not). ``stop`` is asked after the
    variables, between families and row by row: once true, the build raises
    :class:`~solver.program.variables.BuildStopped` with the variables (never stopped before
    they are made: a bound needs them).
    """
    prob = pulp.LpProblem("fleet", pulp.LpMinimize)
    chosen = set(families)
    v = Variables(names=NameBook(), elastic=elastic, spot_for_interactive="spot" not in chosen)
    add_variables(prob, data, v)
    if stop is not None:
        v.stop = stop
    for name, add in FAMILIES.items():
        if name in chosen:
            v.check()
            add(prob, data, v)
    v.check()
    if symmetry and not elastic:
        add_zone_symmetry(prob, data, v)
    v.check()
    if cuts and not elastic and {"demand", "nodes"} <= chosen:
        add_node_cover_cuts(prob, data, v, zone_loss="zone_loss" in chosen,
                            n_plus_1="n_plus_1" in chosen, shared_two_nodes=shared_two_nodes)
    v.check()
    prob += v.cost
    return Program(prob, v, data)
